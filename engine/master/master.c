/* master.c - the master's life cycle: load, register nodes, the loop,
 * stop conditions, shutdown; see master.h and master_internal.h. */
#include "engine/master/master.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/master/master_internal.h"
#include "io/daglock.h"
#include "io/dagfile.h"
#include "io/fdio.h"
#include "io/grow.h"
#include "io/clock.h"
#include "io/log.h"
#include "io/pathset.h"
#include "io/taskio.h"

/* ---- creation: DAG, rescue log, initial state --------------------------- */

static int master_alloc_state(struct master *m)
{
    uint32_t n = m->dag->ntasks;
    m->done_before = calloc(n, 1);
    m->run = calloc(n, sizeof *m->run);              /* TASK_WAITING (0), no attempt */
    m->ready = rq_create_sized(m->dag->priority, n); /* pushes never allocate */
    /* the node of each success, for output found lost at the end
     * (master_report.c); the null executor records nothing */
    if (!m->cfg.null_executor)
        m->ran_on = malloc(sizeof *m->ran_on * n);
    bool ran_on_ok = m->ran_on || m->cfg.null_executor;
    return m->done_before && m->run && m->ready && ran_on_ok ? 0 : -1;
}

enum { CTL_ABORT, CTL_DRAIN, CTL_SHUTDOWN, CTL_KINDS };

/* The agents' ranks, and per agent the ABORT, DRAIN and SHUTDOWN mails
 * that end a run, built now: ending a run never allocates, so an agent
 * learns of the end even when memory is gone.  -1 with ENOMEM. */
static int master_ctl_init(struct master *m)
{
    int na = m->cfg.nagents, nr = m->cfg.nranks;
    static const enum msg_kind kinds[CTL_KINDS] = {MSG_ABORT, MSG_DRAIN, MSG_SHUTDOWN};
    m->agent_rank = malloc(sizeof(int) * (size_t)na);
    m->agent_of_rank = malloc(sizeof(int) * (size_t)nr);
    m->said_bye = calloc((size_t)na, sizeof(bool));
    m->ctl = calloc((size_t)na * CTL_KINDS, sizeof *m->ctl);
    if (!m->agent_rank || !m->agent_of_rank || !m->said_bye || !m->ctl)
        return -1;
    for (int r = 0; r < nr; r++)
        m->agent_of_rank[r] = -1;
    for (int k = 0; k < na; k++) {
        int rank = m->cfg.agent_ranks ? m->cfg.agent_ranks[k] : k;
        if (rank < 0 || rank >= nr)
            return -1;
        m->agent_rank[k] = rank;
        m->agent_of_rank[rank] = k;
        for (int j = 0; j < CTL_KINDS; j++)
            if (!(m->ctl[k * CTL_KINDS + j] = mail_control(rank, COMM_TO_AGENT, kinds[j])))
                return -1;
    }
    m->cfg.agent_ranks = NULL; /* the caller's array; ours is agent_rank */
    return 0;
}

static char *master_default_rescue(const char *dag_path)
{
    size_t n = strlen(dag_path);
    char *p = malloc(n + 8);
    if (p)
        snprintf(p, n + 8, "%s.rescue", dag_path);
    return p;
}

/* ---- the run's files: no two may be one (io/pathset.h) ------------------ */

/* Add path as label and, when tmp_label, PATH.tmp, which replacing path
 * writes first (the rescue log, --status, --summary-json). */
static int paths_add(struct pathset *ps, const char *path, const char *label, const char *tmp_label,
                     unsigned share, struct pmc_error *err)
{
    if (pathset_add(ps, path, label, share, err) < 0)
        return -1;
    if (!tmp_label)
        return 0;
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return 0; /* cannot be created anyway: the check of the output says so */
    return pathset_add(ps, tmp, tmp_label, 0, err);
}

/* The stdio files of every rank that runs a node agent (DAG.out.R,
 * DAG.err.R: taskio_rank_path()). */
static int paths_add_ranks(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    for (int k = 0; k < m->cfg.nagents; k++) {
        int rank = m->cfg.agent_ranks ? m->cfg.agent_ranks[k] : k;
        for (int stream = 0; stream < 2; stream++) {
            char path[PATH_MAX], label[64];
            taskio_rank_path(path, sizeof path, m->cfg.dag_path, stream, rank);
            snprintf(label, sizeof label, "rank %d's %s file", rank, stream ? "stderr" : "stdout");
            if (pathset_add(ps, path, label, 0, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* Every file the run reads or writes that the command line names: the
 * DAG, the rescue log, -o, -e (one file allowed: one descriptor), the
 * status and summary files, the event logs, the ranks' stdio files. */
static int paths_add_own(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    const struct master_config *c = &m->cfg;
    static const char *const logs[MONITOR_LOGS] = {"the jobstate log (--jobstate-log)",
                                                   "the dagman log (--monitord-hack)",
                                                   "the resource log"};
    bool wanted[MONITOR_LOGS] = {c->jobstate_log, c->dagman_log, c->resource_log};
    if (pathset_add(ps, c->dag_path, "the DAG", 0, err) < 0)
        return -1;
    if (!c->null_executor &&
        paths_add(ps, m->rescue_path, c->rescue_path ? "the rescue log (-r)" : "the rescue log",
                  "the rescue log's temporary file", 0, err) < 0)
        return -1;
    if ((c->out_path && paths_add(ps, c->out_path, "-o", NULL, 1, err) < 0) ||
        (c->err_path && paths_add(ps, c->err_path, "-e", NULL, 1, err) < 0) ||
        (c->status_path &&
         paths_add(ps, c->status_path, "--status", "the temporary file of --status", 0, err) < 0) ||
        (c->summary_json_path && paths_add(ps, c->summary_json_path, "--summary-json",
                                           "the temporary file of --summary-json", 0, err) < 0))
        return -1;
    for (int k = 0; k < MONITOR_LOGS; k++) {
        char *p = wanted[k] ? monitor_log_path(c->dag_path, (enum monitor_log)k) : NULL;
        int rc = wanted[k] && (!p || pathset_add(ps, p, logs[k], 0, err) < 0) ? -1 : 0;
        if (wanted[k] && !p)
            pmc_errorf(err, "out of memory");
        free(p);
        if (rc < 0)
            return -1;
    }
    return paths_add_ranks(m, ps, err);
}

/* The destinations of the DAG's forwards (-f, -F), by name
 * (pathset_check_name()): no system call for one whose last component is
 * none of the run's files', so a DAG of a million forwards costs a hash
 * lookup each.  Another name of a run's file (a hard link, a symbolic link
 * of another name) is refused when first opened (master_forward_guard()). */
static int paths_check_forwards(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    const struct dag *d = m->dag;
    for (uint32_t t = 0; t < d->ntasks; t++) {
        for (uint32_t i = d->fwd_first[t]; i < d->fwd_first[t] + d->nfwd[t]; i++) {
            const char *dest = d->arena + d->fwd[i].dest;
            if (pathset_check_name(ps, dest, "", NULL) == 0)
                continue;
            char label[PATH_MAX];
            snprintf(label, sizeof label, "%s:%u: task %s's %s destination", m->cfg.dag_path,
                     d->line[t], task_name(m, t), d->fwd[i].kind == DAG_FORWARD_PIPE ? "-f" : "-F");
            return pathset_check_name(ps, dest, label, err);
        }
    }
    return 0;
}

/* The task name in base when base is NAME.out.NNN or NAME.err.NNN with
 * NNN as taskio_open_per_task() writes it (%03u): its length, else 0. */
static size_t per_task_name_len(const char *base)
{
    const char *dot = strrchr(base, '.');
    if (!dot || dot - base < 5 || strlen(dot + 1) < 3 ||
        strspn(dot + 1, "0123456789") != strlen(dot + 1))
        return 0;
    char nnn[32];
    snprintf(nnn, sizeof nnn, "%03lu", strtoul(dot + 1, NULL, 10));
    if (strcmp(nnn, dot + 1) != 0 || (strncmp(dot - 4, ".out", 4) && strncmp(dot - 4, ".err", 4)))
        return 0;
    return (size_t)(dot - 4 - base);
}

/* --per-task-stdio writes DIR/NAME.out.NNN and DIR/NAME.err.NNN per attempt
 * of task NAME, DIR the DAG's directory (taskio_open_per_task()); a file
 * of the run so named would be taken for one, or replaced over one
 * (--status).  O(files of the run), a DAG lookup each. */
static int paths_check_per_task(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    if (!m->cfg.per_task_stdio)
        return 0;
    const char *dag = m->cfg.dag_path, *slash = strrchr(dag, '/');
    for (size_t i = 1; i < pathset_count(ps); i++) { /* 0 is the DAG: read, not written */
        const struct pathset_file *f = pathset_at(ps, i);
        const char *base = strrchr(f->resolved, '/') + 1;
        size_t len = per_task_name_len(base);
        dag_task_t t;
        if (!len || dag_lookup(m->dag, base, len, &t) < 0)
            continue;
        char task_file[PATH_MAX], *real = NULL;
        size_t dir_len;
        snprintf(task_file, sizeof task_file, "%.*s%s", slash ? (int)(slash - dag) + 1 : 0, dag,
                 base);
        if (pathset_resolve(task_file, &real, &dir_len) < 0)
            return pmc_errorf(err, "out of memory");
        bool same = strcmp(real, f->resolved) == 0;
        free(real);
        if (same)
            return pmc_errorf(err,
                              "%s %s and the --per-task-stdio files of task %s name the same "
                              "file %s",
                              f->label, f->path, task_name(m, t), task_file);
    }
    return 0;
}

/* Refuse a run two of whose files are one: before anything is
 * opened for writing, with both named.  The DAG must be loaded (its
 * forwards and task names). */
static int master_check_paths(struct master *m, struct pmc_error *err)
{
    struct pathset *ps = pathset_create();
    int rc = !ps ? pmc_errorf(err, "out of memory")
             : paths_add_own(m, ps, err) < 0 || paths_check_forwards(m, ps, err) < 0 ||
                     paths_check_per_task(m, ps, err) < 0
                 ? -1
                 : 0;
    pathset_destroy(ps);
    return rc;
}

/* Hold the lock of the rescue log this run writes, whatever its name
 * (daglock_acquire_output(): created empty when missing, and removed by
 * master_destroy() if the run never wrote it).  Not with -n, nor with the
 * null executor, which writes none. */
static int master_lock_rescue(struct master *m, struct pmc_error *err)
{
    if (m->cfg.nolock || m->cfg.null_executor)
        return 0;
    m->rescue_lock_fd =
        daglock_acquire_output(m->rescue_path, "the rescue log", &m->rescue_created, err);
    return m->rescue_lock_fd == -1 ? -1 : 0;
}

/* The empty rescue log master_lock_rescue() created, if the run never
 * replaced it (the writer's rename leaves our descriptor on an unlinked
 * file): a run that did not start leaves the rescue path as it was. */
static void master_unlock_rescue(struct master *m)
{
    struct stat ours, now;
    if (m->rescue_lock_fd >= 0 && m->rescue_created && fstat(m->rescue_lock_fd, &ours) == 0 &&
        ours.st_nlink > 0 && ours.st_size == 0 && stat(m->rescue_path, &now) == 0 &&
        fdio_same_file(&ours, &now))
        unlink(m->rescue_path);
    if (m->rescue_lock_fd >= 0)
        close(m->rescue_lock_fd);
    m->rescue_lock_fd = -1;
}

static const char *master_forward_guard(void *ctx, const struct stat *st);

struct master *master_create(const struct master_config *cfg, struct pmc_error *err)
{
    struct master *m = calloc(1, sizeof *m);
    if (!m) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->box.efd = -1;
    m->lock_fd = -1;
    m->rescue_lock_fd = -1;
    m->out_fd = 1;
    m->err_fd = 2;
    m->rescue_path =
        cfg->rescue_path ? strdup(cfg->rescue_path) : master_default_rescue(cfg->dag_path);
    if (!m->rescue_path || mailbox_init(&m->box) < 0) {
        pmc_errorf(err, "out of memory");
        goto fail;
    }
    m->lock_fd = cfg->nolock ? -1 : daglock_acquire(cfg->dag_path, err);
    if (m->lock_fd == -1 && !cfg->nolock)
        goto fail;
    if (m->lock_fd == -2)
        log_warn("Cannot open %s for writing: running without the DAG lock", cfg->dag_path);
    m->dag = dagfile_load(cfg->dag_path, err);
    if (!m->dag || master_check_paths(m, err) < 0)
        goto fail;
    if (master_alloc_state(m) < 0 || master_ctl_init(m) < 0) {
        pmc_errorf(err, "out of memory for %u tasks", m->dag->ntasks);
        goto fail;
    }
    m->fdcache = fdcache_create(cfg->maxfds, err);
    if (!m->fdcache)
        goto fail;
    fdcache_set_guard(m->fdcache, master_forward_guard, m);
    if (!cfg->skip_rescue && fdio_not_regular(m->rescue_path)) { /* a FIFO would block */
        pmc_errorf(err, "%s: not a regular file (the rescue log is replaced at start)",
                   m->rescue_path);
        goto fail;
    }
    if (master_lock_rescue(m, err) < 0)
        goto fail;
    struct stat rst;
    if (m->rescue_lock_fd == -2 && stat(m->rescue_path, &rst) == 0 && S_ISREG(rst.st_mode))
        log_warn("Cannot open %s for writing: running without the rescue log's lock",
                 m->rescue_path);
    if (!cfg->skip_rescue &&
        rescue_read(m->rescue_path, m->dag, m->done_before, &m->ndone_before, NULL, err) < 0)
        goto fail;
    return m;
fail:
    master_destroy(m);
    return NULL;
}

struct mailbox *master_mailbox(struct master *m)
{
    return &m->box;
}

const struct dag *master_dag(const struct master *m)
{
    return m->dag;
}

/* The master's mailbox watch: results of its own node wait on the link. */
static bool master_link_waiting(void *arg)
{
    const struct master *m = arg;
    return local_link_events_waiting(m->link);
}

void master_set_local_link(struct master *m, struct local_link *l)
{
    m->link = l;
    mailbox_watch(&m->box, l ? master_link_waiting : NULL, m);
}

/* ---- outputs: opened before any task runs -------------------------------- */

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

static int master_open_monitor(struct master *m)
{
    struct pmc_error err;
    struct monitor_config mc = {m->cfg.dag_path, m->cfg.jobstate_log, m->cfg.dagman_log,
                                m->cfg.resource_log};
    m->monitor = monitor_open(&mc, &err);
    if (!m->monitor) {
        log_fatal("Unable to open %s", err.text);
        return -1;
    }
    if (monitor_wants_tasks(m->monitor)) {
        m->seq = calloc(m->dag->ntasks, sizeof *m->seq);
        m->executed = calloc(m->dag->ntasks, 1);
        m->next_seq = 1;
        if (!m->seq || !m->executed) {
            log_fatal("Out of memory for the event logs of %u tasks", m->dag->ntasks);
            return -1;
        }
    }
    return 0;
}

/* Add the file of st, if any, to the run's own files as `what`. */
static void master_own_add(struct master *m, const struct stat *st, bool ok, const char *what)
{
    if (ok && pmc_grow((void **)&m->own, &m->own_cap, m->nown + 1, sizeof *m->own) == 0)
        m->own[m->nown++] = (struct own_file){st->st_dev, st->st_ino, what};
}

/* The run's own files that exist from the start: the DAG, the rescue log,
 * -o and -e (each node's output files join at its HELLO:
 * master_add_node()). */
static void master_own_list(struct master *m)
{
    struct stat st;
    master_own_add(m, &st, stat(m->cfg.dag_path, &st) == 0, "the DAG file");
    master_own_add(m, &st, stat(m->rescue_path, &st) == 0, "the rescue log");
    master_own_add(m, &st, m->out_fd > 2 && fstat(m->out_fd, &st) == 0, "the -o file");
    master_own_add(m, &st, m->err_fd > 2 && fstat(m->err_fd, &st) == 0, "the -e file");
}

/* fdcache's guard (fdcache_set_guard()): a forward's destination may not be
 * one of the run's own files.  Written there, forwarded data was lost (the
 * -o merge truncates, the next task's block overwrites a rank file's) or
 * corrupted them (a line in the rescue log or the DAG).  The first four are
 * listed at the first destination opened; a node's files, as its HELLO
 * comes, before any task runs there.  Not listed: a node's files that a
 * network file system did not show the master at its HELLO, and an
 * earlier run's leftovers of ranks this run does not have. */
static const char *master_forward_guard(void *ctx, const struct stat *st)
{
    struct master *m = ctx;
    if (!m->own_listed)
        master_own_list(m);
    m->own_listed = true;
    for (size_t k = 0; k < m->nown; k++)
        if (m->own[k].dev == st->st_dev && m->own[k].ino == st->st_ino)
            return m->own[k].what;
    return NULL;
}

/* Do descriptors a and b open the same file (-o log -e ./log)? */
static bool master_same_file(int a, int b)
{
    struct stat sa, sb;
    return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && fdio_same_file(&sa, &sb);
}

int master_open_outputs(struct master *m)
{
    const struct master_config *c = &m->cfg; /* no two are one file: master_check_paths() */
    if (master_open_dest(c->out_path, 1, &m->out_fd) < 0)
        return -1;
    if (c->err_path && c->out_path && !strcmp(c->err_path, c->out_path))
        m->err_fd = m->out_fd;
    else if (master_open_dest(c->err_path, 2, &m->err_fd) < 0)
        return -1;
    if ((m->out_fd > 2 || m->err_fd > 2) && m->err_fd != m->out_fd &&
        master_same_file(m->out_fd, m->err_fd)) {
        /* one file under two names (-o log -e ./log, or -e naming where
         * stdout goes): one descriptor, or the merge's two offsets would
         * write over each other; the one we opened goes */
        int *ours = m->err_fd > 2 ? &m->err_fd : &m->out_fd;
        close(*ours);
        *ours = ours == &m->err_fd ? m->out_fd : m->err_fd;
    }
    if (master_open_monitor(m) < 0 || master__status_init(m) < 0)
        return -1;
    struct pmc_error err;
    if (!c->null_executor && rescue_check_writable(m->rescue_path, &err) < 0) {
        log_fatal("Unable to write the rescue log %s", err.text);
        return -1;
    }
    monitor_event(m->monitor, WF_WORKFLOW_START, NULL, 0, 0);
    return 0;
}

/* ---- nodes: HELLO and capability ---------------------------------------- */

static int master_add_node(struct master *m, int rank, const struct msg_hello *h)
{
    if (!m->nodes)
        return 0; /* master_prepare() failed: the run is ending, the agent got ABORT */
    if (rank < 0 || rank >= m->cfg.nranks || m->node_of_rank[rank] >= 0) {
        log_error("Unexpected HELLO from rank %d", rank);
        return -1;
    }
    struct node *n = &m->nodes[m->nnodes];
    memset(n, 0, sizeof *n);
    n->rank = rank;
    n->host_rank = h->host_rank;
    n->hostname = strdup(h->hostname);
    n->host = monitor_add_node(m->monitor, h->hostname, h->cpus, h->memory_mb, h->gpus);
    for (int k = 0; k < 2; k++) { /* an agent makes them before its HELLO */
        char path[PATH_MAX];
        struct stat st;
        taskio_rank_path(path, sizeof path, m->cfg.dag_path, k, rank);
        n->files_seen[k] = stat(path, &st) == 0; /* master_merge_stdio() */
        master_own_add(m, &st, n->files_seen[k], "a rank's output file");
    }
    m->node_of_rank[rank] = m->nnodes++;
    (void)placement_add_node(m->place, h->cpus, h->memory_mb, h->gpus); /* room for nranks */
    m->cpus_total += h->cpus;
    m->gpus_total += h->gpus;
    log_debug("Rank %d on host %s: %u CPUs, %u GPUs, %lu MB", rank, h->hostname, h->cpus, h->gpus,
              (unsigned long)h->memory_mb);
    return n->hostname ? 0 : -1;
}

static int master_handle_hello(struct master *m, struct mail *ml, struct msg_reader *r)
{
    struct msg_hello h;
    struct pmc_error err;
    int rc = msg_next_hello(r, &h, &err);
    if (rc != 1) {
        log_error("Bad HELLO from rank %d: %s", ml->peer, rc < 0 ? err.text : "empty");
        return -1;
    }
    return master_add_node(m, ml->peer, &h);
}

static void master_handle_mail(struct master *m, struct mail *ml);

/* Wait until every agent said HELLO.  -1 on a bad message or time-out. */
static int master_wait_hellos(struct master *m)
{
    double deadline = pmc_mono_s() + HELLO_TIMEOUT_S;
    while (m->nnodes < m->cfg.nagents && !m->fatal) {
        struct mail *ml = mailbox_pop(&m->box);
        if (ml) {
            master_handle_mail(m, ml);
            mail_free(ml);
            continue;
        }
        if (pmc_mono_s() > deadline) {
            log_fatal("Only %d of %d node agents registered within %.0f seconds", m->nnodes,
                      m->cfg.nagents, HELLO_TIMEOUT_S);
            return -1;
        }
        if (atomic_load(&m->abort_requested))
            return -1;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
    return m->fatal ? -1 : 0;
}

/* PMC's check: every task not done before must fit on at least one node. */
static int master_check_capable(struct master *m)
{
    const struct dag *d = m->dag;
    struct pmc_error err;
    for (uint32_t t = 0; t < d->ntasks; t++) {
        if (!m->done_before[t] && placement_check_capable(m->place, d->cpus[t], d->memory_mb[t],
                                                          d->gpus[t], task_name(m, t), &err) < 0) {
            log_fatal("FATAL ERROR: %s", err.text);
            return -1;
        }
    }
    return 0;
}

static void master_handle_mail(struct master *m, struct mail *ml)
{
    struct msg_reader r;
    struct pmc_error err;
    int rc = -1;
    if (msg_open(&r, ml->data, ml->len, &err) < 0) {
        log_error("Bad message from rank %d: %s", ml->peer, err.text);
    } else if (r.kind == MSG_HELLO) {
        rc = master_handle_hello(m, ml, &r);
    } else if (r.kind == MSG_RESULTS) {
        rc = master__handle_results(m, ml, &r);
    } else if (r.kind == MSG_STARTED) {
        rc = master__handle_started(m, ml, &r);
    } else if (r.kind == MSG_RECALL) {
        rc = master__handle_recall(m, ml, &r);
    } else if (r.kind == MSG_BYE) {
        int k = ml->peer >= 0 && ml->peer < m->cfg.nranks ? m->agent_of_rank[ml->peer] : -1;
        if (k >= 0)
            m->said_bye[k] = true;
        rc = k >= 0 ? 0 : -1;
    } else if (r.kind == MSG_ABORT) {
        log_error("Rank %d cannot go on", ml->peer);
        rc = -1;
    } else if (r.kind == MSG_LOST) { /* an ABORT whose node's output is lost */
        int i = master__node_index(m, ml->peer, "LOST");
        log_error("Rank %d cannot go on: its task output may be lost", ml->peer);
        if (i >= 0)
            m->nodes[i].output_lost = true;
        rc = -1;
    } else {
        log_error("Unexpected message kind %u from rank %d", r.kind, ml->peer);
    }
    if (rc < 0)
        m->fatal = true;
}

/* The mailbox, then the local link: the agent queues its events before
 * the BYE that follows them (local_link.h). */
static void master_drain(struct master *m)
{
    struct mail *ml;
    while ((ml = mailbox_pop(&m->box)) != NULL) {
        master_handle_mail(m, ml);
        mail_free(ml);
    }
    master__drain_local(m);
}

/* ---- the main loop ------------------------------------------------------ */

void master_request_abort(struct master *m, const char *reason)
{
    atomic_store(&m->abort_reason, reason);
    atomic_store(&m->abort_requested, 1);
    mailbox_wake(&m->box);
}

static void master_check_stop(struct master *m)
{
    if (m->cfg.max_wall_time > 0 && pmc_mono_s() - m->wall_start >= m->cfg.max_wall_time &&
        !m->aborting) {
        log_error("Max wall time of %.3f minutes reached", m->cfg.max_wall_time / 60.0);
        m->aborting = true;
    }
    if (m->stop_mono > 0 && pmc_mono_s() >= m->stop_mono && !m->aborting) {
        log_error("Stopping before the batch job's end (%s)", m->cfg.stop_reason);
        m->aborting = true;
    }
    if (atomic_load(&m->abort_requested) && !m->aborting) {
        log_error("Caught signal: %s", atomic_load(&m->abort_reason));
        m->aborting = true;
    }
    if (m->rescue && rescue_writer_failed(m->rescue) && !m->fatal) {
        log_fatal("Rescue log failed: %s", rescue_writer_error(m->rescue));
        m->fatal = true;
    }
    if (m->fatal)
        m->aborting = true;
    if (m->aborting)
        m->stop_dispatch = true;
}

static bool master_all_bye(const struct master *m)
{
    for (int k = 0; k < m->cfg.nagents; k++)
        if (!m->said_bye[k])
            return false;
    return true;
}

/* Over when nothing runs and nothing more will be sent; or, once ABORT
 * went out, when every agent said BYE: no result can come after its BYE,
 * so tasks still counted in flight were lost with a message that could
 * not be built or sent (they are not DONE: a restart runs them). */
static bool master_finished(const struct master *m)
{
    if (m->inflight == 0 && (m->stop_dispatch || rq_size(m->ready) == 0))
        return true;
    return m->abort_sent && master_all_bye(m);
}

/* Until the next stop condition (wall time, the batch job's end) or a due
 * recall, at most IDLE_WAIT_US.  Once the run is stopping they are behind it: a stop time
 * that has passed would otherwise give 0, a busy loop for as long as the
 * stopped tasks take to end (their kill grace). */
static long master_wait_us(const struct master *m)
{
    double now = pmc_mono_s(), left = IDLE_WAIT_US / 1e6;
    if (m->aborting)
        return IDLE_WAIT_US;
    if (m->cfg.max_wall_time > 0 && m->wall_start + m->cfg.max_wall_time - now < left)
        left = m->wall_start + m->cfg.max_wall_time - now;
    if (m->stop_mono > 0 && m->stop_mono - now < left)
        left = m->stop_mono - now;
    if (m->recall_at > 0 && m->recall_at - now < left)
        left = m->recall_at - now;
    return left <= 0 ? 0 : (long)(left * 1e6) + 1;
}

/* Send ABORT, DRAIN or SHUTDOWN to every agent, registered or not (the
 * mails built by master_ctl_init(); each goes out at most once). */
static void master_broadcast(struct master *m, enum msg_kind kind)
{
    int j = kind == MSG_ABORT ? CTL_ABORT : kind == MSG_DRAIN ? CTL_DRAIN : CTL_SHUTDOWN;
    for (int k = 0; k < m->cfg.nagents; k++) {
        struct mail **ml = &m->ctl[k * CTL_KINDS + j];
        if (*ml)
            comm_send_mail(m->comm, *ml);
        *ml = NULL;
    }
}

bool master_step(struct master *m)
{
    master_drain(m);
    master_check_stop(m);
    if (m->aborting && !m->abort_sent) {
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = m->drain_sent = true;
    }
    if (m->stop_dispatch && !m->drain_sent) {
        /* -m reached: tasks queued at nodes come back unstarted */
        master_broadcast(m, MSG_DRAIN);
        m->drain_sent = true;
    }
    master__dispatch(m);
    master__recall(m);
    if (master_finished(m))
        return true;
    monitor_flush(m->monitor);
    master__status_tick(m);
    return false;
}

/* SHUTDOWN (ABORT was already sent when aborting) and wait for every BYE;
 * late results are still applied. */
static void master_shutdown_agents(struct master *m)
{
    if (!m->aborting) {
        master_broadcast(m, MSG_SHUTDOWN);
    } else if (!m->abort_sent) {
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = true;
    }
    while (!master_all_bye(m)) {
        master_drain(m);
        if (master_all_bye(m))
            break;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
}

static int master_prepare(struct master *m)
{
    m->nodes = calloc((size_t)m->cfg.nranks, sizeof *m->nodes);
    m->node_of_rank = malloc(sizeof(int) * (size_t)m->cfg.nranks);
    m->place = placement_create(m->cfg.nranks);
    m->batch_list = malloc(sizeof(int) * (size_t)m->cfg.nranks);
    if (!m->nodes || !m->node_of_rank || !m->place || !m->batch_list) {
        free(m->nodes); /* none: HELLOs that come while ending are ignored */
        free(m->node_of_rank);
        placement_destroy(m->place);
        free(m->batch_list);
        m->nodes = NULL;
        m->node_of_rank = m->batch_list = NULL;
        m->place = NULL;
        return -1;
    }
    m->demand = (struct placement_demand){.cpus = m->dag->cpus,
                                          .memory_mb = m->dag->memory_mb,
                                          .gpus = m->dag->gpus,
                                          .time_limit_ms = m->dag->time_limit_ms,
                                          /* rounded up, as the DAG's --time-limit:
                                           * 0.0004 s is 1 ms, not 0 (none) */
                                          .default_limit_ms =
                                              (uint32_t)ceil(m->cfg.task_time_limit * 1000.0),
                                          .look_ahead = master__look_ahead};
    for (int r = 0; r < m->cfg.nranks; r++)
        m->node_of_rank[r] = -1;
    return 0;
}

static int master_start_rescue(struct master *m)
{
    struct pmc_error err;
    if (m->cfg.null_executor)
        return 0; /* nothing runs, so nothing may be recorded as done */
    m->rescue = rescue_writer_open(m->rescue_path, m->dag, m->done_before, &err);
    if (!m->rescue) {
        log_fatal("%s", err.text);
        return -1;
    }
    return 0;
}

int master_begin(struct master *m, struct comm *c)
{
    m->comm = c;
    m->start = pmc_epoch_s();
    m->start_mono = pmc_mono_s();
    m->wall_start = m->cfg.wall_start_mono > 0 ? m->cfg.wall_start_mono : m->start_mono;
    if (m->cfg.stop_at > 0) /* past even the clock's zero (before boot): stop at once */
        m->stop_mono = fmax(m->start_mono + (m->cfg.stop_at - m->start), 1e-9);
    if (master_prepare(m) < 0) {
        log_fatal("Cannot start the master: out of memory");
        m->fatal = m->aborting = true;
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = true;
        return -1;
    }
    if (master_wait_hellos(m) < 0 || master_check_capable(m) < 0 || master_start_rescue(m) < 0 ||
        master__init_ready(m) < 0) {
        m->fatal = m->aborting = true;
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = true;
        return -1;
    }
    monitor_flush(m->monitor); /* the resource log's first lines: everything free */
    log_info("Starting workflow with %u tasks (%u done before) on %d hosts, %u CPUs",
             m->dag->ntasks, m->ndone_before, m->nnodes, m->cpus_total);
    return 0;
}

int master_fail_at_start(struct master *m)
{
    m->start = pmc_epoch_s();
    m->start_mono = pmc_mono_s();
    m->fatal = m->aborting = true;
    master__finish(m);
    master_unlock_rescue(m); /* as it was: none if there was none */
    return 1;
}

int master_end(struct master *m)
{
    if (m->comm)
        master_shutdown_agents(m);
    if (m->inflight > 0)
        log_error("%u tasks were in flight when the run ended (their results were lost with "
                  "a message that could not be sent); a restart runs them again",
                  m->inflight);
    return master__finish(m);
}

int master_run(struct master *m, struct comm *c)
{
    uint64_t cpu0 = pmc_thread_cpu_ns();
    if (master_begin(m, c) == 0)
        while (!master_step(m))
            mailbox_wait_spin(&m->box, master_wait_us(m), &m->spin);
    int rc = master_end(m);
    m->run_cpu_ns = pmc_thread_cpu_ns() - cpu0;
    return rc;
}

void master_get_cpu(const struct master *m, struct master_cpu *out)
{
    out->run_ns = m->run_cpu_ns;
    out->rescue_writer_ns = m->rescue_cpu_ns;
}

void master_destroy(struct master *m)
{
    if (!m)
        return;
    rescue_writer_close(m->rescue);
    master_unlock_rescue(m); /* before rescue_path is freed */
    for (int i = 0; i < m->nnodes; i++) {
        free(m->nodes[i].hostname);
        msg_free(&m->nodes[i].batch);
    }
    free(m->nodes);
    free(m->node_of_rank);
    placement_destroy(m->place);
    free(m->batch_list);
    for (int k = 0; m->ctl && k < m->cfg.nagents * CTL_KINDS; k++)
        mail_free(m->ctl[k]);
    free(m->ctl);
    free(m->said_bye);
    free(m->agent_of_rank);
    free(m->agent_rank);
    rq_destroy(m->ready);
    free(m->run);
    free(m->done_before);
    free(m->ran_on);
    dag_destroy(m->dag);
    if (m->box.efd >= 0)
        mailbox_destroy(&m->box);
    free(m->rescue_path);
    fdcache_destroy(m->fdcache);
    free(m->written);
    free(m->own);
    (void)monitor_close(m->monitor);
    free(m->seq);
    free(m->executed);
    master__status_free(m);
    free(m->fwd_scratch);
    if (m->out_fd > 2)
        close(m->out_fd);
    if (m->err_fd > 2 && m->err_fd != m->out_fd)
        close(m->err_fd);
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    free(m);
}
