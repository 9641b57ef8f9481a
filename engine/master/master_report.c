/* master_report.c - -o and -e, and the end of a run: merge the ranks'
 * stdio files, the verdict, the statistics and the [cluster-summary]
 * record (COMPAT.md); see master_internal.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/master/master_internal.h"
#include "io/fdio.h"
#include "io/log.h"
#include "io/records.h"
#include "io/taskio.h"

/* ---- -o and -e: opened before any task runs ----------------------------- */

/* -o/-e PATH, truncated now and written at the end by the stdio merge. */
static int master_open_dest(const char *path, int dflt, int *fd)
{
    if (!path) {
        *fd = dflt;
        return 0;
    }
    *fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (*fd >= 0)
        return 0;
    log_fatal("Unable to open %s: %s", path, strerror(errno));
    return -1;
}

/* Do descriptors a and b open the same file (-o log -e ./log)? */
static bool master_same_file(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && fdio_same_file(&sa, &sb);
}

int master__output_open(struct master *m)
{
    const struct master_config *c = &m->cfg; /* no two are one file: master_check_paths() */
    int *fd = m->out.fd;
    if (master_open_dest(c->out_path, 1, &fd[0]) < 0)
        return -1;
    if (c->err_path && c->out_path && !strcmp(c->err_path, c->out_path))
        fd[1] = fd[0];
    else if (master_open_dest(c->err_path, 2, &fd[1]) < 0)
        return -1;
    if ((fd[0] > 2 || fd[1] > 2) && fd[1] != fd[0] && master_same_file(fd[0], fd[1])) {
        /* one file under two names (-o log -e ./log, or -e naming where
         * stdout goes): one descriptor, or the merge's two offsets would
         * write over each other; the one we opened goes */
        int ours = fd[1] > 2 ? 1 : 0;
        close(fd[ours]);
        fd[ours] = fd[!ours];
    }
    return 0;
}

void master__output_free(struct master_output *o)
{
    if (o->fd[0] > 2)
        close(o->fd[0]);
    if (o->fd[1] > 2 && o->fd[1] != o->fd[0])
        close(o->fd[1]);
    o->fd[0] = o->fd[1] = -1;
}

/* ---- the end: merge, statistics, summary -------------------------------- */

/* -o (k 0) or -e (k 1) as the user named it, or NULL (our stdout or
 * stderr). */
static const char *master_output_path(const struct master *m, int k)
{
    return k ? m->cfg.err_path : m->cfg.out_path;
}

/* Is -o (k 0) or -e (k 1) still the file at the path the user gave
 * (fdio_still_at())?  True without one.  When not (deleted, or another
 * file renamed over it, during the run), logs "The -o file PATH was
 * deleted or replaced during the run: " and then `then`, what it means
 * for the output. */
static bool master_output_kept(const struct master *m, int k, const char *then)
{
    const char *path = master_output_path(m, k);
    int fd = m->out.fd[k];
    if (!path || fd < 0 || fdio_still_at(fd, path))
        return true;
    log_error("The %s file %s was deleted or replaced during the run: %s", k ? "-e" : "-o", path,
              then);
    return false;
}

/* Merge one per-rank file (k: 0 stdout, 1 stderr) into -o / -e: 0, or -1
 * (logged; the file is kept).  Not into an -o / -e that is no longer at its
 * path (m->out.gone[k], master__finish()): the file is kept, for the
 * next run to merge. */
struct merge_keep {
    const struct dag *dag;
    const struct node *node;
};

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* A block of a node whose link went stays unless its task was requeued
 * from that node (it ran, or runs, again elsewhere); a name the DAG lacks
 * (cut or cleaned in the record) stays. */
static bool master_merge_keeps(const char *name, size_t len, void *ctx)
{
    const struct merge_keep *k = ctx;
    dag_task_t t;
    if (dag_lookup_task(k->dag, name, len, &t) < 0)
        return true;
    return !bsearch(&t, k->node->requeued_ids, k->node->requeued, sizeof t, cmp_u32);
}

/* Append the rank file at path to -o (k 0) or -e (k 1), whole, or block by
 * block as keep says (NULL: whole).  0, or -1 (logged). */
static int master_merge_one(struct master *m, int k, const char *path,
                            const struct merge_keep *keep)
{
    const char *to = k ? (m->cfg.err_path ? m->cfg.err_path : "stderr")
                       : (m->cfg.out_path ? m->cfg.out_path : "stdout");
    int fd = m->out.fd[k];
    struct pmc_error e;
    struct stat dst, src;
    if (m->out.gone[k])
        return -1; /* said once by master_output_kept() */
    if (fd >= 0 && fstat(fd, &dst) == 0 && stat(path, &src) == 0 && fdio_same_file(&dst, &src))
        return 0; /* -o names this very file (-o DAG.out.7): it holds its blocks already */
    if (fd < 0)
        return 0;
    if (keep ? taskio_merge_blocks(fd, path, master_merge_keeps, (void *)keep, &e) == 0
             : taskio_merge(fd, path, &e) == 0)
        return 0;
    log_error("Task output not merged into %s (%s is kept): %s", to, path, e.text);
    return -1;
}

/* The rank and stream (0 out, 1 err) of a per-rank file named name in the
 * DAG's folder (base: the DAG file's name): BASE.out.R or BASE.err.R, R a
 * decimal rank as taskio_rank_path() writes it, without leading zeros; -1
 * for any other name, such as the --per-task-stdio files NAME.out.000,
 * NAME.out.001, ... of a task named like the DAG file. */
static long master_stdio_rank(const char *name, const char *base, int *k)
{
    size_t n = strlen(base);
    if (strncmp(name, base, n) != 0 || name[n] != '.')
        return -1;
    name += n + 1;
    if (strncmp(name, "out.", 4) != 0 && strncmp(name, "err.", 4) != 0)
        return -1;
    *k = name[0] == 'e';
    name += 4;
    if (!isdigit((unsigned char)name[0]) || name[strspn(name, "0123456789")] != '\0' ||
        (name[0] == '0' && name[1] != '\0'))
        return -1;
    return strtol(name, NULL, 10);
}

/* Does this run have rank r's node: an MPI rank, or a joined node that
 * registered (master_merge_stdio() merges its files)? */
static bool master_has_rank(const struct master *m, long r)
{
    if (!m->cfg.joined)
        return r < m->cfg.nranks;
    return r <= INT32_MAX && master__node_of_rank(m, (int)r) >= 0;
}

/* Per-rank files of ranks this run does not have: an earlier run with more
 * ranks (or joined nodes) was killed before its merge (PMC's launch shape
 * rerun with fewer ranks); their tasks are done, so their output goes to
 * -o/-e now. */
static int master_merge_leftovers(struct master *m)
{
    const char *slash = strrchr(m->cfg.dag_path, '/');
    const char *base = slash ? slash + 1 : m->cfg.dag_path;
    char dir[4096], path[4096];
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - m->cfg.dag_path) + 1 : 2,
             slash ? m->cfg.dag_path : "./");
    DIR *d = opendir(dir);
    int rc = 0, k;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
        long r = master_stdio_rank(e->d_name, base, &k);
        int len = r >= 0 && !master_has_rank(m, r)
                      ? snprintf(path, sizeof path, "%s%s", dir, e->d_name)
                      : -1;
        if (len > 0 && (size_t)len < sizeof path)
            rc |= master_merge_one(m, k, path, NULL);
    }
    if (d)
        closedir(d);
    return rc;
}

/* Merge one rank file (k: 0 stdout, 1 stderr) of node i (-1: none): the
 * stdout of a node whose link went with tasks requeued block by block,
 * without those tasks' blocks (their stderr cannot be told apart, and
 * is merged whole); else whole.  0, or -1 (logged). */
static int master_merge_node_file(struct master *m, int i, int k, const char *path)
{
    struct node *n = i >= 0 ? &m->nodes.at[i] : NULL;
    if (k != 0 || !n || !n->requeued)
        return master_merge_one(m, k, path, NULL);
    if (n->requeued_unknown) {
        log_warn("%s: merged whole (no memory to leave out its %u requeued tasks)", path,
                 n->requeued);
        return master_merge_one(m, k, path, NULL);
    }
    qsort(n->requeued_ids, n->requeued, sizeof *n->requeued_ids, cmp_u32);
    struct merge_keep keep = {m->dag, n};
    return master_merge_one(m, k, path, &keep);
}

/* Append rank r's DAG.out.R / DAG.err.R to -o / -e: 0, or -1 (logged). */
static int master_merge_rank(struct master *m, int r)
{
    char path[4096];
    int rc = 0;
    for (int k = 0; k < 2; k++) {
        taskio_rank_path(path, sizeof path, m->cfg.dag_path, k, r);
        /* a node's file that was there at its HELLO and is gone now:
         * something deleted it (a task's rm), and its tasks' output
         * with it; a file never seen is "no output" (a rank without an
         * agent, the simulator's nodes) */
        int i = master__node_of_rank(m, r);
        if (i >= 0 && m->nodes.at[i].files_seen[k] && access(path, F_OK) < 0 && errno == ENOENT) {
            log_error("Task output lost: %s was deleted during the run", path);
            m->nodes.at[i].output_lost = true;
            rc = -1;
            continue;
        }
        rc |= master_merge_node_file(m, i, k, path);
    }
    return rc;
}

/* Append the ranks' DAG.out.R / DAG.err.R (every MPI rank, or every joined
 * node, in join order; and those an earlier run left:
 * master_merge_leftovers()) to -o / -e (opened at start by
 * master_open_outputs(); closed by master_close_outputs()).  -1 when
 * some output could not be merged (a full disk under -o): the run must not
 * report success; the per-rank file that failed is kept (taskio_merge()). */
static int master_merge_stdio(struct master *m)
{
    int rc = 0;
    if (m->cfg.joined)
        for (int i = 0; i < m->nodes.n; i++)
            rc |= master_merge_rank(m, m->nodes.at[i].rank);
    else
        for (int r = 0; r < m->cfg.nranks; r++)
            rc |= master_merge_rank(m, r);
    return rc | master_merge_leftovers(m);
}

static void master_print_stats(const struct master *m, double wall)
{
    double rt = m->st.runtime;
    double with = wall > 0 ? rt / (wall * (m->nodes.cpus + 1)) : 0;
    double without = wall > 0 && m->nodes.cpus ? rt / (wall * m->nodes.cpus) : 0;
    double makespan = m->st.last_end > m->st.first_start ? m->st.last_end - m->st.first_start : 0;
    log_info("Resource utilization (with master): %lf", with);
    log_info("Resource utilization (without master): %lf", without);
    log_info("Total runtime of tasks: %lf seconds (%lf minutes)", rt, rt / 60.0);
    log_info("Wall time: %lf seconds (%lf minutes)", wall, wall / 60.0);
    log_info("Makespan: %lf seconds", makespan);
    log_info("Throughput: %lf tasks/second", wall > 0 ? m->st.succeeded / wall : 0.0);
    log_info("Messages to nodes: %lu TASKS carrying %lu tasks (%.2f tasks per message)",
             (unsigned long)m->st.task_msgs, (unsigned long)m->st.tasks_sent,
             m->st.task_msgs ? (double)m->st.tasks_sent / m->st.task_msgs : 0.0);
    log_info("Messages from nodes: %lu RESULTS carrying %lu results (%.2f results per message)",
             (unsigned long)m->st.result_msgs, (unsigned long)m->st.results_recv,
             m->st.result_msgs ? (double)m->st.results_recv / m->st.result_msgs : 0.0);
    log_info("Rank 0's own node, no messages: %lu tasks handed over, %lu results taken back",
             (unsigned long)m->st.tasks_local, (unsigned long)m->st.results_local);
    if (m->st.recalls)
        log_info("Tasks moved to idle nodes: %lu RECALLs, %lu queued tasks given back",
                 (unsigned long)m->st.recalls, (unsigned long)m->st.recalled);
    if (m->cfg.joined)
        log_info("Nodes: %u joined, %u lost, %u left early; %u tasks requeued from nodes that "
                 "went",
                 m->nodes.joined, m->nodes.lost, m->nodes.left, m->nodes.requeued);
}

/* Print the [cluster-summary] record on stdout: 0, or -1 (logged) when it
 * could not be written (a closed pipe: EPIPE, SIGPIPE being ignored; a
 * full disk): output was lost, the run fails. */
static int master_print_summary(const struct master *m, bool failed, double wall)
{
    struct summary_record s = {.failed = failed,
                               .tasks = m->dag->ntasks + (uint32_t)m->dag->ninstances,
                               .submitted = m->st.submitted,
                               .succeeded = m->st.succeeded,
                               .failed_tasks = m->st.failed,
                               .extra = m->st.extra,
                               .start = m->clock.start,
                               .duration = wall,
                               .pid = (int)getpid(),
                               .app = m->cfg.program,
                               .runtime = m->st.runtime,
                               .slots = m->nodes.cpus,
                               .cpus = m->nodes.cpus,
                               .gpus = m->nodes.gpus};
    char line[2048];
    size_t n = records_format_summary(line, sizeof line, &s);
    if (n >= sizeof line)
        n = sizeof line - 1;
    fflush(stdout);
    if (fdio_write_all(1, line, n) == 0)
        return 0;
    log_error("Output lost: writing the [cluster-summary] record to stdout failed: %s",
              strerror(errno));
    return -1;
}

/* Before the verdict: is stdout, where the [cluster-summary] record (and,
 * without -o, the task output) goes, a pipe whose reader is gone
 * (`pmc-hybrid wf.dag | head -1` once head has exited)?  Then that output
 * is lost: false, logged. */
static bool master_stdout_read(const struct master *m)
{
    if (!fdio_reader_gone(1))
        return true;
    log_error("Output lost: stdout is a pipe whose reader is gone: the [cluster-summary] "
              "record%s cannot be written",
              m->cfg.out_path ? "" : " and task output merged there");
    return false;
}

static bool master_workflow_ok(const struct master *m)
{
    return !master__aborting(m) && !m->fatal &&
           m->st.succeeded + m->rescue.ndone_before == m->dag->ntasks + m->dag->ninstances;
}

/* Close -o and -e (not the inherited stdout and stderr) once the merge is
 * done: a network file system reports a failed write-back at the close.
 * -1 (logged) when one failed, or when one was deleted or replaced during
 * the merge (master_output_kept()): the merged output may be cut short or
 * is not at its path. */
static int master_close_outputs(struct master *m)
{
    int rc = 0;
    const char *path[2] = {m->cfg.out_path, m->cfg.err_path};
    int *fd = m->out.fd;
    for (int k = 0; k < 2; k++) /* before any close: -o and -e may share one descriptor */
        if (!m->out.gone[k] && !master_output_kept(m, k, "the task output merged into it is lost"))
            rc = -1; /* gone during the merge: what it wrote is not where the user looks */
    for (int k = 0; k < 2; k++) {
        if (fd[k] > 2 && (k == 0 || fd[1] != fd[0]) && close(fd[k]) < 0 && errno != EINTR) {
            log_error("Task output may be lost: closing %s failed: %s", path[k], strerror(errno));
            rc = -1;
        }
    }
    fd[0] = fd[1] = -1;
    return rc;
}

/* Whether task t was done in this run and lost its output: on its node (a
 * LOST, a deleted rank file), in -o / -e (all: one failed to close) or in
 * a forwarding destination (forwards: one failed to close; which one is
 * not told, so every task that forwards).  Only with m->sched.node_of. */
static bool master_lost_now(const struct master *m, uint32_t t, bool all, bool forwards)
{
    if (master__task_state(m, t) != TASK_DONE || master__done_before(m, t))
        return false;
    return all || (forwards && m->dag->nfwd[t] > 0) || m->nodes.at[m->sched.node_of[t]].output_lost;
}

/* Whether the instances done in this run may have lost their output: as
 * master_lost_now(), but a done instance keeps no node, so one node's loss
 * counts against all of them. */
static bool master_instances_lost_now(const struct master *m, bool all, bool forwards)
{
    const struct dag *d = m->dag;
    if (d->ninstances == 0)
        return false;
    bool lost = all;
    for (uint32_t a = 0; !lost && forwards && a < d->narrays; a++)
        lost = d->arrays[a].nfwd > 0;
    for (int i = 0; !lost && i < m->nodes.n; i++)
        lost = m->nodes.at[i].output_lost;
    return lost;
}

/* Output found lost at the end must not stay vouched for: the DONE records
 * of this run's tasks whose output was lost are taken out of the rescue
 * log (rescue_replace(): the log is always the old one or the new one), so
 * that the next run runs them again instead of succeeding without their
 * output.  The run fails anyway; this only logs.  Tasks done in earlier
 * runs keep their records (a rank file they left, merged now, is not
 * told apart). */
static void master_take_back_lost(struct master *m, bool all, bool forwards, bool rescue_lost)
{
    const struct dag *d = m->dag;
    if (!m->sched.node_of || m->cfg.null_executor)
        return; /* the null executor writes no output and no rescue log */
    uint32_t n = 0, first = 0;
    /* counted first (memory only for a loss), from the end: first is the lowest id */
    for (uint32_t t = d->ntasks; t-- > 0;)
        if (master_lost_now(m, t, all, forwards)) {
            first = t;
            n++;
        }
    bool instances = master_instances_lost_now(m, all, forwards);
    if (instances) { /* those done in this run go: the old log's stay */
        log_error("Task output lost: the instances of task arrays done in this run will run "
                  "again");
        first = n ? first : d->ntasks;
        n += 1;
    }
    if (n == 0)
        return;
    if (rescue_lost) { /* the file at its path is another one: never replaced */
        log_error("Task output lost: %u tasks (%s%s) are not taken out of the rescue log, which "
                  "is not at %s",
                  n, task_name(m, first), n > 1 ? ", ..." : "", m->rescue.path);
        return;
    }
    struct pmc_error err;
    uint8_t *keep = malloc(d->ntasks);
    for (uint32_t t = 0; keep && t < d->ntasks; t++)
        keep[t] = master__task_state(m, t) == TASK_DONE && !master_lost_now(m, t, all, forwards);
    if (!keep)
        log_error("Out of memory: %s still lists %u tasks whose output was lost", m->rescue.path,
                  n);
    else if (master__rescue_replace(
                 &m->rescue, d, keep,
                 instances ? m->rescue.inst_done_before : ar_done_bits(m->sched.arrays), &err) < 0)
        log_error("%s still lists %u tasks whose output was lost: %s", m->rescue.path, n, err.text);
    else
        log_error("Task output lost: %u tasks (%s%s) will run again, their records taken out "
                  "of %s",
                  n, task_name(m, first), n > 1 ? ", ..." : "", m->rescue.path);
    free(keep);
}

int master__finish(struct master *m)
{
    bool rescue_lost, rescue_kept;
    if (master__rescue_end(&m->rescue, &rescue_kept, &rescue_lost) < 0 && !m->fatal) {
        log_fatal("Rescue log failed");
        master__fail(m);
    }
    double wall = pmc_mono_s() - m->clock.start_mono;
    for (int k = 0; k < 2; k++) /* gone before the merge: the ranks' files keep the output */
        m->out.gone[k] = !master_output_kept(
            m, k,
            "the task output is not merged into it; the ranks' files keep it for the next run");
    bool merged = master_merge_stdio(m) == 0;
    bool closed = master_close_outputs(m) == 0;
    bool forwarded = master__forward_close(&m->fwd) == 0;
    master_take_back_lost(m, !closed, !forwarded, rescue_lost);
    bool read = master_stdout_read(m);
    bool ok = master__events_end(&m->events, master_workflow_ok(m) && merged && closed &&
                                                 forwarded && rescue_kept && read);
    if (master__status_end(m, ok, wall) < 0)
        ok = false;
    if (master__aborting(m))
        log_error("Aborting workflow");
    if (master__max_failures_hit(m))
        log_error("Max failures reached: DAG prematurely aborted");
    master_print_stats(m, wall);
    if (master_print_summary(m, !ok, wall) < 0)
        ok = false; /* the verdict above said ok: the record itself was lost */
    if (ok)
        log_info("Workflow succeeded");
    else
        log_error("Workflow failed");
    return ok ? 0 : 1;
}
