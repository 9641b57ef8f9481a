/* master_status.c - how far along the run is, for people and for scripts:
 * the live progress line on stderr, the --status JSON file and the
 * --summary-json file (docs/status-json.md has both schemas).
 *
 * Progress line: at most PROGRESS_LINE_HZ times a second, one write(2) of
 * "\r... \033[K" on fd 2; log lines erase it first (log_set_erase_line), and
 * the last one is ended with a newline when the run ends, so it never sits
 * inside task output or a log line.  Task output goes to stdout (merged at
 * the end) or to files, never to the line's stream.
 *
 * Status file: rewritten through PATH.tmp + rename (fdio_replace_file())
 * every STATUS_FILE_PERIOD_S and once at the end, so a reader polling it
 * sees a whole document every time.  Its counts partition the DAG's tasks.
 *
 * Cost: nothing per task unless asked for; when asked, O(1) per finished
 * task (sched/progress.h), and per update O(nodes), plus O(tasks) for the
 * status file's slowest running tasks.
 *
 * Thread-safety: the master thread only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <jansson.h>

#include "engine/master/master_internal.h"
#include "io/fdio.h"
#include "io/grow.h"
#include "io/log.h"
#include "io/records.h"
#include "io/utf8.h"

#define PROGRESS_LINE_HZ 4
#define STATUS_FILE_PERIOD_S 2.0
#define STATUS_SLOWEST 10      /* running tasks listed, slowest first */
#define STATUS_FAILURES 100    /* latest failures listed in the status file */
#define SUMMARY_LIST_MAX 10000 /* failed / retried tasks listed in the summary */
#define STATUS_SCHEMA_VERSION 1

/* ---- figures shared by the three outputs --------------------------------- */

struct snapshot {
    uint32_t total, succeeded, done_before, failed, running, ready, waiting;
    uint32_t cpus, busy_cpus, gpus, busy_gpus;
    double elapsed, rate, eta, mean_duration;
    uint32_t critical_left;
};

static uint32_t node_busy_cpus(const struct placement_node *n)
{
    return n->committed_cpus < n->cpus ? n->committed_cpus : n->cpus;
}

static void snapshot_take(struct master *m, struct snapshot *s)
{
    memset(s, 0, sizeof *s);
    s->total = m->dag->ntasks + (uint32_t)m->dag->ninstances;
    s->succeeded = m->st.succeeded;
    s->done_before = m->rescue.ndone_before;
    s->failed = m->st.failed;
    s->running = master__inflight(m);
    s->ready = master__ready_count(m);
    uint32_t accounted = s->succeeded + s->done_before + s->failed + s->running + s->ready;
    s->waiting = s->total > accounted ? s->total - accounted : 0;
    s->cpus = m->nodes.cpus;
    s->gpus = m->nodes.gpus;
    for (int i = 0; i < m->nodes.n; i++) {
        const struct placement_node *n = master__node_load(m, i);
        s->busy_cpus += node_busy_cpus(n);
        s->busy_gpus += n->committed_gpus < n->gpus ? n->committed_gpus : n->gpus;
    }
    double now = pmc_mono_s();
    s->elapsed = m->clock.start_mono > 0 ? now - m->clock.start_mono : 0;
    progress_sample(&m->status.prog, (uint64_t)s->succeeded + s->failed, now);
    s->rate = m->status.prog.rate > 0 ? m->status.prog.rate : 0;
    s->mean_duration = m->st.finished_attempts ? m->st.runtime / m->st.finished_attempts : 0;
    s->critical_left = progress_critical_left(&m->status.prog);
    uint32_t left = s->total - s->succeeded - s->done_before - s->failed;
    s->eta = !master__dispatching(m) && master__inflight(m) == 0
                 ? 0
                 : progress_eta(&m->status.prog, left, s->mean_duration);
}

/* ---- the progress line --------------------------------------------------- */

static void format_duration(char *buf, size_t n, double s)
{
    if (s < 0) {
        snprintf(buf, n, "?");
        return;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
}

static void progress_line(struct master *m, const struct snapshot *s)
{
    char eta[32], gpu[32] = "", line[300];
    format_duration(eta, sizeof eta, s->eta);
    if (s->gpus)
        snprintf(gpu, sizeof gpu, " GPU %.0f%%", 100.0 * s->busy_gpus / s->gpus);
    int n = snprintf(line, sizeof line,
                     "\r[progress] %u/%u done, %u failed, %u on nodes, %u ready | %.1f tasks/s | "
                     "CPU %.0f%%%s | ETA %s\033[K",
                     s->succeeded + s->done_before, s->total, s->failed, s->running, s->ready,
                     s->rate, s->cpus ? 100.0 * s->busy_cpus / s->cpus : 0.0, gpu, eta);
    if (n > 0 && write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) > 0)
        m->status.line_shown = true;
}

/* ---- JSON ---------------------------------------------------------------- */

static json_t *tasks_json(const struct snapshot *s)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "total", (json_int_t)s->total,
                     "succeeded", (json_int_t)s->succeeded, "done_before",
                     (json_int_t)s->done_before, "failed", (json_int_t)s->failed, "running",
                     (json_int_t)s->running, "ready", (json_int_t)s->ready, "waiting",
                     (json_int_t)s->waiting);
}

/* s (bytes: a task name, a host, a path) as a JSON string, U+FFFD for
 * bytes that are not UTF-8 (io/utf8.h; json_string() refuses them).  NULL
 * when out of memory (json_pack() then fails, as for any allocation). */
static json_t *json_text(const char *s)
{
    char *valid = utf8_valid(s) ? NULL : utf8_lossy(s);
    json_t *j = json_string(valid ? valid : s);
    free(valid);
    return j;
}

static const char *node_state_name(const struct node *n)
{
    static const char *const names[] = {"working", "leaving", "lost", "left"};
    return names[n->state];
}

/* Joined nodes (cfg.joined): how many came and went, and the lost ones
 * with the tasks put back in the ready queue from each. */
static json_t *membership_json(const struct master *m)
{
    const struct master_nodes *ns = &m->nodes;
    json_t *lost = json_array();
    for (int i = 0; lost && i < ns->n; i++) {
        const struct node *n = &ns->at[i];
        if (n->state == NODE_LOST)
            json_array_append_new(lost, json_pack("{s:i, s:o, s:I}", "rank", n->rank, "host",
                                                  json_text(n->hostname), "tasks_requeued",
                                                  (json_int_t)n->requeued));
    }
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "nodes_joined", (json_int_t)ns->joined,
                     "nodes_working", (json_int_t)ns->working, "nodes_lost", (json_int_t)ns->lost,
                     "nodes_left", (json_int_t)ns->left, "tasks_requeued", (json_int_t)ns->requeued,
                     "lost_nodes", lost);
}

/* doc with, joined, its "membership" object (membership_json()); NULL
 * stays NULL. */
static json_t *with_membership(const struct master *m, json_t *doc)
{
    if (doc && m->cfg.joined)
        json_object_set_new(doc, "membership", membership_json(m));
    return doc;
}

static json_t *nodes_json(const struct master *m)
{
    json_t *a = json_array();
    for (int i = 0; a && i < m->nodes.n; i++) {
        const struct node *nd = &m->nodes.at[i];
        const struct placement_node *n = master__node_load(m, i);
        json_t *o;
        json_array_append_new(
            a, o = json_pack(
                   "{s:i, s:o, s:I, s:I, s:I, s:I, s:f}", "rank", nd->rank, "host",
                   json_text(nd->hostname ? nd->hostname : ""), "cpus", (json_int_t)n->cpus,
                   "busy_cpus", (json_int_t)node_busy_cpus(n), "memory_mb",
                   (json_int_t)n->memory_mb, "busy_memory_mb",
                   (json_int_t)(n->committed_mem < n->memory_mb ? n->committed_mem : n->memory_mb),
                   "utilization", n->cpus ? (double)node_busy_cpus(n) / n->cpus : 0.0));
        if (o && m->cfg.joined)
            json_object_set_new(o, "state", json_string(node_state_name(nd)));
    }
    return a;
}

/* The oldest running attempts so far: k of STATUS_SLOWEST, oldest first. */
struct slowest {
    uint32_t task[STATUS_SLOWEST];
    float sent[STATUS_SLOWEST];
    int k;
};

/* Offer running task t, sent at `sent`: a bounded insertion sort. */
static void slowest_offer(struct slowest *s, uint32_t t, float sent)
{
    if (s->k == STATUS_SLOWEST && sent >= s->sent[s->k - 1])
        return; /* younger than every one kept */
    int i = s->k < STATUS_SLOWEST ? s->k++ : s->k - 1;
    for (; i > 0 && s->sent[i - 1] > sent; i--) {
        s->task[i] = s->task[i - 1];
        s->sent[i] = s->sent[i - 1];
    }
    s->task[i] = t;
    s->sent[i] = sent;
}

/* The STATUS_SLOWEST attempts sent longest ago and not back yet, over the
 * running plain tasks and live instances. */
static json_t *slowest_json(const struct master *m, double elapsed)
{
    struct slowest s = {.k = 0};
    const float *sent = m->status.sent_at;
    for (uint32_t t = 0; sent && t < m->dag->ntasks; t++)
        if (master__task_state(m, t) == TASK_RUNNING)
            slowest_offer(&s, t, sent[t]);
    for (uint32_t k = 0; sent && k < m->sched.live_cap; k++) {
        const struct live_task *l = &m->sched.live[k];
        if (l->id != UINT32_MAX && l->run.state == TASK_RUNNING)
            slowest_offer(&s, l->id, l->sent_at);
    }
    json_t *a = json_array();
    for (int i = 0; a && i < s.k; i++)
        json_array_append_new(a, json_pack("{s:o, s:f}", "name", json_text(task_name(m, s.task[i])),
                                           "seconds", elapsed - s.sent[i]));
    return a;
}

/* Failures first..last of the failure list as [{"name", "exit_code"}]. */
static json_t *failures_json(const struct master *m, size_t first, size_t last)
{
    json_t *a = json_array();
    for (size_t i = first; a && i < last; i++) {
        const struct failed_task *f = &m->status.failures[i];
        json_array_append_new(a,
                              json_pack("{s:o, s:i, s:i}", "name", json_text(task_name(m, f->task)),
                                        "exit_code", f->exit_code, "attempts", (int)f->attempts));
    }
    return a;
}

static const char *run_state(const struct master *m, bool end, bool ok)
{
    if (!end)
        return !master__dispatching(m) ? "stopping" : "running";
    return ok ? "succeeded" : "failed";
}

static json_t *status_json(struct master *m, const struct snapshot *s, bool end, bool ok)
{
    size_t nf = m->status.nfailures;
    json_t *eta = s->eta >= 0 ? json_real(s->eta) : json_null();
    return with_membership(
        m, json_pack("{s:s, s:i, s:f, s:s, s:o, s:f, s:o, s:f, s:o, s:I, s:f, s:{s:I, s:I, s:f}, "
                     "s:{s:I, s:I, s:f}, s:o, s:o, s:I, s:o}",
                     "schema", "pmc-hybrid-status", "version", STATUS_SCHEMA_VERSION, "time",
                     pmc_epoch_s(), "state", run_state(m, end, ok), "dag",
                     json_text(m->cfg.dag_path), "elapsed_s", s->elapsed, "tasks", tasks_json(s),
                     "rate_tasks_per_s", s->rate, "eta_s", eta, "critical_path_left",
                     (json_int_t)s->critical_left, "mean_task_s", s->mean_duration, "cpus", "total",
                     (json_int_t)s->cpus, "busy", (json_int_t)s->busy_cpus, "utilization",
                     s->cpus ? (double)s->busy_cpus / s->cpus : 0.0, "gpus", "total",
                     (json_int_t)s->gpus, "busy", (json_int_t)s->busy_gpus, "utilization",
                     s->gpus ? (double)s->busy_gpus / s->gpus : 0.0, "nodes", nodes_json(m),
                     "slowest_running", slowest_json(m, s->elapsed), "failures_total",
                     (json_int_t)nf, "failures",
                     failures_json(m, nf > STATUS_FAILURES ? nf - STATUS_FAILURES : 0, nf)));
}

/* Write doc (reference taken) to path atomically.  The first failure in a
 * row is logged (*failed remembers it); the run goes on: the file is
 * informative. */
static void write_json(const char *path, json_t *doc, bool *failed)
{
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    struct pmc_error err;
    int rc = text ? fdio_replace_file(path, text, strlen(text), &err)
                  : pmc_errorf(&err, "%s: out of memory", path);
    free(text);
    if (rc < 0 && !*failed)
        log_error("Cannot write %s", err.text);
    *failed = rc < 0;
}

/* ---- the summary --------------------------------------------------------- */

static json_t *attempts_json(const struct master *m)
{
    const struct master_sched *sc = &m->sched;
    uint64_t hist[8] = {0}; /* 0..6 attempts, 7 = 7 or more */
    json_t *retried = json_array();
    uint64_t nretried = 0, ended = 0;
    for (int a = 1; a < 8; a++) { /* instances that ended; the others never started */
        hist[a] += sc->inst_attempts[a];
        ended += sc->inst_attempts[a];
        nretried += a > 1 ? sc->inst_attempts[a] : 0;
    }
    hist[0] += m->dag->ninstances - ended;
    for (size_t k = 0; k < sc->ninst_retried && k < SUMMARY_LIST_MAX; k++)
        json_array_append_new(retried, json_pack("{s:o, s:i}", "name",
                                                 json_text(task_name(m, sc->inst_retried[k].task)),
                                                 "attempts", (int)sc->inst_retried[k].attempts));
    for (uint32_t t = 0; t < m->dag->ntasks; t++) {
        uint32_t a = master__task_attempts(m, t);
        hist[a < 7 ? a : 7]++;
        if (a > 1 && nretried++ < SUMMARY_LIST_MAX)
            json_array_append_new(
                retried,
                json_pack("{s:o, s:i}", "name", json_text(task_name(m, t)), "attempts", (int)a));
    }
    json_t *h = json_object();
    for (int a = 0; a < 8; a++) {
        if (!hist[a])
            continue;
        char key[8];
        snprintf(key, sizeof key, a < 7 ? "%d" : "%d+", a);
        json_object_set_new(h, key, json_integer((json_int_t)hist[a]));
    }
    return json_pack("{s:o, s:I, s:o}", "histogram", h, "retried_total", (json_int_t)nretried,
                     "retried", retried);
}

static json_t *messages_json(const struct master *m)
{
    struct comm_stats cs = {0};
    if (m->comm)
        comm_get_stats(m->comm, &cs);
    return json_pack(
        "{s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I}, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I}}",
        "to_nodes", "tasks_messages", (json_int_t)m->st.task_msgs, "tasks",
        (json_int_t)m->st.tasks_sent, "from_nodes", "results_messages",
        (json_int_t)m->st.result_msgs, "results", (json_int_t)m->st.results_recv, "local_node",
        "tasks", (json_int_t)m->st.tasks_local, "results", (json_int_t)m->st.results_local, "mpi",
        "messages_sent", (json_int_t)cs.msgs_sent, "bytes_sent", (json_int_t)cs.bytes_sent,
        "messages_received", (json_int_t)cs.msgs_recv, "bytes_received", (json_int_t)cs.bytes_recv,
        "progress_wakeups", (json_int_t)cs.wakeups, "doorbells_rung", (json_int_t)cs.rings_sent,
        "doorbells_heard", (json_int_t)cs.rings_heard);
}

static json_t *machine_json(const struct master *m)
{
    struct utsname u;
    char host[256] = "";
    if (uname(&u) < 0)
        memset(&u, 0, sizeof u);
    gethostname(host, sizeof host - 1);
    json_t *nodes = json_array();
    for (int i = 0; nodes && i < m->nodes.n; i++)
        json_array_append_new(
            nodes, json_pack("{s:i, s:o, s:I, s:I}", "rank", m->nodes.at[i].rank, "host",
                             json_text(m->nodes.at[i].hostname ? m->nodes.at[i].hostname : ""),
                             "cpus", (json_int_t)master__node_load(m, i)->cpus, "memory_mb",
                             (json_int_t)master__node_load(m, i)->memory_mb));
    return json_pack("{s:o, s:o, s:o, s:s, s:o, s:i, s:i, s:o}", "master_host", json_text(host),
                     "os", json_text(u.sysname), "kernel", json_text(u.release), "version",
                     PMC_VERSION, "mpi_library",
                     json_text(m->cfg.mpi_library ? m->cfg.mpi_library : ""), "ranks",
                     m->cfg.nranks, "node_agents", m->nodes.n, "nodes", nodes);
}

static json_t *summary_json(struct master *m, const struct snapshot *s, bool ok, double wall)
{
    char start[64];
    records_iso_time(m->clock.start, start, sizeof start);
    double makespan = m->st.last_end > m->st.first_start ? m->st.last_end - m->st.first_start : 0;
    size_t nf = m->status.nfailures;
    double rt = m->st.runtime, cpus = m->nodes.cpus;
    json_t *util = json_pack("{s:f, s:f}", "with_master", wall > 0 ? rt / (wall * (cpus + 1)) : 0.0,
                             "without_master", wall > 0 && cpus > 0 ? rt / (wall * cpus) : 0.0);
    json_t *doc = json_pack(
        "{s:s, s:i, s:s, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:s, s:f, s:f, s:i, s:o, s:f, "
        "s:I, s:I, s:f, s:f, s:b, s:b, s:o, s:I, s:o, s:o, s:o, s:o}",
        "schema", "pmc-hybrid-summary", "version", STATUS_SCHEMA_VERSION, "stat",
        ok ? "ok" : "failed", "exit_status", ok ? 0 : 1, "tasks", (json_int_t)s->total, "submitted",
        (json_int_t)m->st.submitted, "succeeded", (json_int_t)m->st.succeeded, "failed",
        (json_int_t)m->st.failed, "extra", (json_int_t)m->st.extra, "done_before",
        (json_int_t)m->rescue.ndone_before, "start", start, "start_epoch", m->clock.start,
        "duration_s", wall, "pid", (int)getpid(), "app",
        json_text(m->cfg.program ? m->cfg.program : ""), "runtime_s", m->st.runtime, "slots",
        (json_int_t)m->nodes.cpus, "cpus", (json_int_t)m->nodes.cpus, "makespan_s", makespan,
        "throughput_tasks_per_s", wall > 0 ? m->st.succeeded / wall : 0.0, "aborted",
        master__aborting(m), "max_failures_reached", master__max_failures_hit(m), "final_tasks",
        tasks_json(s), "failed_total", (json_int_t)nf, "failed_tasks",
        failures_json(m, 0, nf < SUMMARY_LIST_MAX ? nf : SUMMARY_LIST_MAX), "attempts",
        attempts_json(m), "messages", messages_json(m), "machine", machine_json(m));
    if (doc) { /* as the end-of-run log lines */
        json_object_set_new(doc, "gpus", json_integer((json_int_t)m->nodes.gpus));
        json_object_set_new(doc, "utilization", util);
    } else {
        json_decref(util);
    }
    return with_membership(m, doc);
}

/* ---- the hooks ----------------------------------------------------------- */

int master__status_init(struct master *m)
{
    struct master_status *st = &m->status;
    st->tracking = m->cfg.progress || m->cfg.status_path || m->cfg.summary_json_path;
    if (!st->tracking)
        return 0;
    struct pmc_error err;
    const char *paths[] = {m->cfg.status_path, m->cfg.summary_json_path};
    for (int i = 0; i < 2; i++)
        if (paths[i] && fdio_check_replaceable(paths[i], &err) < 0) {
            log_fatal("Unable to open %s", err.text);
            st->tracking = false; /* the run ends now: write no JSON at its end */
            return -1;
        }
    if (progress_init(&st->prog, m->dag, m->rescue.done_before) < 0 ||
        (m->cfg.status_path &&
         !(st->sent_at = calloc(m->dag->ntasks ? m->dag->ntasks : 1, sizeof *st->sent_at)))) {
        log_fatal("Out of memory for the progress of %u tasks", m->dag->ntasks);
        return -1;
    }
    if (m->cfg.progress)
        log_set_erase_line(true);
    return 0;
}

void master__status_sent(struct master *m, uint32_t t)
{
    if (!m->status.sent_at)
        return;
    float at = (float)(pmc_mono_s() - m->clock.start_mono);
    if (t < m->dag->ntasks)
        m->status.sent_at[t] = at;
    else
        master__live(m, t)->sent_at = at;
}

void master__status_finished(struct master *m, uint32_t t, bool failed, int exit_code)
{
    struct master_status *st = &m->status;
    if (!st->tracking)
        return;
    if (t < m->dag->ntasks) /* the critical path counts plain tasks */
        progress_finished(&st->prog, t);
    if (!failed)
        return;
    if (pmc_grow((void **)&st->failures, &st->failures_cap, st->nfailures + 1,
                 sizeof *st->failures) < 0)
        return; /* the lists are informative; the counts stay right */
    st->failures[st->nfailures++] = (struct failed_task){t, exit_code, master__task_attempts(m, t)};
}

void master__status_tick(struct master *m)
{
    struct master_status *st = &m->status;
    if (!st->tracking || (!m->cfg.progress && !m->cfg.status_path))
        return;
    double now = pmc_mono_s();
    if (now < st->next_line && now < st->next_file)
        return;
    struct snapshot s;
    snapshot_take(m, &s);
    if (m->cfg.progress && now >= st->next_line) {
        progress_line(m, &s);
        st->next_line = now + 1.0 / PROGRESS_LINE_HZ;
    }
    if (m->cfg.status_path && now >= st->next_file) {
        write_json(m->cfg.status_path, status_json(m, &s, false, false), &st->file_failed);
        st->next_file = now + STATUS_FILE_PERIOD_S;
    }
}

int master__status_end(struct master *m, bool ok, double wall)
{
    struct master_status *st = &m->status;
    if (!st->tracking)
        return 0;
    struct snapshot s;
    snapshot_take(m, &s);
    if (m->cfg.progress) {
        progress_line(m, &s);
        if (st->line_shown && write(2, "\n", 1) < 0)
            st->line_shown = false;
        log_set_erase_line(false);
    }
    /* a file asked for and not written fails the run (the files were
     * checked at start: a full disk, a directory removed); the summary
     * then says so */
    bool status_failed = false, summary_failed = false;
    if (m->cfg.status_path) {
        st->file_failed = false; /* the last word is logged whatever came before */
        write_json(m->cfg.status_path, status_json(m, &s, true, ok), &st->file_failed);
        status_failed = st->file_failed;
    }
    if (m->cfg.summary_json_path)
        write_json(m->cfg.summary_json_path, summary_json(m, &s, ok && !status_failed, wall),
                   &summary_failed);
    return status_failed || summary_failed ? -1 : 0;
}

void master__status_free(struct master *m)
{
    progress_free(&m->status.prog);
    free(m->status.sent_at);
    free(m->status.failures);
    memset(&m->status, 0, sizeof m->status);
}
