/* agent.c - the node agent thread; see agent.h.
 *
 * State owned by the agent thread only: the slot table (one struct slot per
 * running task, reused; epoll events carry the slot index), the result batch
 * being built, and the two output files.  Slots keep their capture files and
 * buffers between tasks, so a warmed-up agent does not allocate per task.
 */
#include "engine/agent.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/spawn.h"
#include "sched/affinity.h"
#include "sched/node_queue.h"
#include "io/log.h"
#include "io/msg.h"
#include "io/forward.h"
#include "io/records.h"
#include "io/taskio.h"

#define MAILBOX_EVENT UINT64_MAX
#define RESULT_BATCH 24   /* results that make a RESULTS message go at once */
#define RESULT_DELAY_MS 2 /* longest a result waits for companions */

/* A received TASKS message, kept until its last queued task has started. */
struct batch {
    struct mail *mail;
    uint32_t refs;
};

extern char **environ;

struct slot {
    bool in_use;
    uint32_t id, attempt, cpus, memory_mb;
    pid_t pid;
    int pidfd;
    int out_fd, err_fd; /* capture files, kept open and reused */
    double start;       /* epoch seconds */
    struct timespec t0; /* CLOCK_MONOTONIC at spawn */
    char *strs;         /* name NUL pegasus_id NUL app NUL */
    size_t strs_cap;
    char **argv; /* pointers into the TASKS mail, valid during spawn */
    uint32_t argv_cap;
    char **envp; /* base environment + PMC_* variables + forward VARs */
    size_t envp_cap;
    char *envbuf;
    size_t envbuf_cap;
    struct fwd_task fwd;    /* -f/-F of the running task */
    int fwd_fds[64];        /* write ends handed to the child */
    int task_out, task_err; /* --per-task-stdio files, -1 otherwise */
    bool bound;             /* cpuset taken from the agent's pool */
    cpu_set_t cpuset;
};

struct agent {
    struct agent_config cfg;
    struct mailbox box;
    struct comm *comm;
    pthread_t thread;
    bool started;
    int epfd;
    struct slot *slots;
    uint32_t nslots, running;
    char **base_env; /* environ without the PMC_* variables we set */
    size_t base_env_n;
    struct msgbuf results;
    struct msgbuf fwd_pack; /* forwarded data of the task being reported */
    struct taskio_file out, err;
    struct node_queue queue; /* received, not started (prefetch window) */
    uint32_t cpus_free;      /* local accounting of the rank's share */
    uint64_t memory_free;
    struct timespec first_result; /* when the oldest unsent result was added */
    bool shutting, aborting, draining, failed, sent_abort;
    struct timespec kill_deadline;
    bool killed_hard;
    struct cpuset_pool *pool; /* --set-affinity, else NULL */
    bool warned_unbound;
};

/* ---- small helpers ---------------------------------------------------- */

static double agent_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double agent_elapsed(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static bool agent_env_is_ours(const char *kv)
{
    static const char *const ours[] = {
        "PMC_TASK=", "PMC_MEMORY=", "PMC_CPUS=", "PMC_RANK=", "PMC_HOST_RANK=", "PMC_AFFINITY="};
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        if (strncmp(kv, ours[i], strlen(ours[i])) == 0)
            return true;
    return false;
}

static int agent_snapshot_env(struct agent *a)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    a->base_env = calloc(n + 1, sizeof *a->base_env);
    if (!a->base_env)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (!agent_env_is_ours(environ[i]))
            a->base_env[a->base_env_n++] = environ[i];
    return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

/* ---- output ----------------------------------------------------------- */

static int agent_open_outputs(struct agent *a)
{
    if (a->out.fd >= 0)
        return 0;
    char path[4096];
    struct pmc_error err;
    snprintf(path, sizeof path, "%s.out.%d", a->cfg.dag_path, a->cfg.rank);
    if (taskio_file_open(&a->out, path, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    snprintf(path, sizeof path, "%s.err.%d", a->cfg.dag_path, a->cfg.rank);
    if (taskio_file_open(&a->err, path, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    return 0;
}

/* Append the task's stdout + record and its stderr to the rank's files
 * (or, with --per-task-stdio, the record to the task's own .out file). */
static void agent_write_output(struct agent *a, struct slot *s, int status, double duration)
{
    if (s->task_out < 0 && agent_open_outputs(a) < 0) {
        a->failed = true;
        return;
    }
    const char *name = s->strs;
    const char *pegasus_id = name + strlen(name) + 1;
    const char *app = pegasus_id + strlen(pegasus_id) + 1;
    struct task_record r = {pegasus_id,      name,        s->start, duration,    status, app,
                            a->cfg.hostname, a->cfg.rank, s->cpus,  s->memory_mb};
    /* the record starts a line even after output without a final newline */
    char line[4096];
    int out_fd = s->task_out >= 0 ? s->task_out : s->out_fd;
    size_t nl = taskio_needs_newline(out_fd) ? 1 : 0;
    line[0] = '\n';
    size_t len = nl + records_format_task(line + nl, sizeof line - nl, &r);
    if (len >= sizeof line)
        len = sizeof line - 1;
    if (s->task_out >= 0) {
        if (write(s->task_out, line, len) != (ssize_t)len)
            log_error("Cannot write the record of task %s: %s", name, strerror(errno));
        return;
    }
    if (taskio_file_append(&a->out, s->out_fd, line, len) < 0 ||
        taskio_file_append(&a->err, s->err_fd, NULL, 0) < 0) {
        log_error("Cannot write task output to %s: %s", a->out.path, strerror(errno));
        a->failed = true;
    }
}

static void agent_add_result(struct agent *a, const struct slot *s, int status, int exec_errno,
                             double duration)
{
    struct msg_result r = {.id = s->id,
                           .attempt = s->attempt,
                           .status = status,
                           .exec_errno = exec_errno,
                           .start = s->start,
                           .duration = duration,
                           .nfwd = a->fwd_pack.count,
                           .fwd = a->fwd_pack.data,
                           .fwd_len = a->fwd_pack.len};
    if (a->results.count == 0) {
        if (msg_begin(&a->results, MSG_RESULTS) < 0)
            goto oom;
        clock_gettime(CLOCK_MONOTONIC, &a->first_result);
    }
    int rc = msg_add_result(&a->results, &r);
    a->fwd_pack.len = a->fwd_pack.count = 0;
    if (rc == 0)
        return;
oom:
    log_fatal("Out of memory for the results of rank %d", a->cfg.rank);
    a->failed = true;
}

/* Adaptive batching (DESIGN.md section 2): send at once when this node is
 * about to run dry (fewer queued tasks than CPUs: the master must refill it),
 * when ending, or when RESULT_BATCH results wait; otherwise let results
 * gather for at most RESULT_DELAY_MS.  A quiet system therefore sees every
 * result immediately and a loaded one sends big batches. */
static long agent_result_wait_ms(const struct agent *a)
{
    if (a->results.count == 0)
        return -1;
    if (a->results.count >= RESULT_BATCH || nq_len(&a->queue) < a->cfg.cpus || a->shutting ||
        a->draining)
        return 0;
    long waited = (long)(agent_elapsed(&a->first_result) * 1000.0);
    return waited >= RESULT_DELAY_MS ? 0 : RESULT_DELAY_MS - waited;
}

static void agent_flush_results(struct agent *a)
{
    if (agent_result_wait_ms(a) != 0)
        return;
    msg_end(&a->results);
    if (comm_send(a->comm, 0, COMM_TO_MASTER, &a->results) < 0) {
        log_error("Cannot send results: %s", strerror(errno));
        a->failed = true;
    }
}

static void agent_send_empty(struct agent *a, enum msg_kind kind)
{
    struct msgbuf b = {0};
    if (msg_begin(&b, kind) < 0) {
        a->failed = true;
        return;
    }
    msg_end(&b);
    comm_send(a->comm, 0, COMM_TO_MASTER, &b);
    msg_free(&b);
}

/* ---- slots ------------------------------------------------------------ */

static int agent_slot_init(struct slot *s)
{
    memset(s, 0, sizeof *s);
    s->pidfd = -1;
    s->task_out = s->task_err = -1;
    s->out_fd = taskio_capture_open();
    s->err_fd = taskio_capture_open();
    return s->out_fd < 0 || s->err_fd < 0 ? -1 : 0;
}

/* Find a free slot (growing the table when all are busy).  -1 on error. */
static int agent_slot_get(struct agent *a)
{
    for (uint32_t i = 0; i < a->nslots; i++)
        if (!a->slots[i].in_use)
            return (int)i;
    uint32_t n = a->nslots ? a->nslots * 2 : 8;
    struct slot *t = realloc(a->slots, n * sizeof *t);
    if (!t)
        return -1;
    a->slots = t;
    for (uint32_t i = a->nslots; i < n; i++)
        if (agent_slot_init(&t[i]) < 0) {
            a->nslots = i;
            return -1;
        }
    uint32_t first = a->nslots;
    a->nslots = n;
    return (int)first;
}

/* Copy name, pegasus id and app into the slot's string buffer. */
static int agent_slot_strings(struct slot *s, const struct msg_task *t, const char *app)
{
    size_t ln = strlen(t->name) + 1, lp = strlen(t->pegasus_id) + 1, la = strlen(app) + 1;
    if (grow((void **)&s->strs, &s->strs_cap, ln + lp + la, 1) < 0)
        return -1;
    memcpy(s->strs, t->name, ln);
    memcpy(s->strs + ln, t->pegasus_id, lp);
    memcpy(s->strs + ln + lp, app, la);
    return 0;
}

static int agent_slot_argv(struct slot *s, const struct msg_task *t)
{
    size_t cap = s->argv_cap;
    if (grow((void **)&s->argv, &cap, t->argc + 1, sizeof(char *)) < 0)
        return -1;
    s->argv_cap = (uint32_t)cap;
    const char *p = t->argv;
    for (uint32_t i = 0; i < t->argc; i++) {
        s->argv[i] = (char *)p;
        p += strlen(p) + 1;
    }
    s->argv[t->argc] = NULL;
    return 0;
}

/* envp = base environment + PMC_TASK, PMC_MEMORY, PMC_CPUS, PMC_RANK,
 * PMC_HOST_RANK (COMPAT.md "Task environment"). */
static int agent_slot_env(struct agent *a, struct slot *s, const struct msg_task *t)
{
    size_t need = strlen(t->name) + 160 + (s->bound ? AFFINITY_LIST_MAX + 16 : 0);
    if (grow((void **)&s->envbuf, &s->envbuf_cap, need, 1) < 0)
        return -1;
    if (grow((void **)&s->envp, &s->envp_cap, a->base_env_n + 7 + s->fwd.npipes, sizeof(char *)) <
        0)
        return -1;
    memcpy(s->envp, a->base_env, a->base_env_n * sizeof(char *));
    char *p = s->envbuf, **e = s->envp + a->base_env_n;
    int n;
    *e++ = p, n = sprintf(p, "PMC_TASK=%s", t->name), p += n + 1;
    *e++ = p, n = sprintf(p, "PMC_MEMORY=%u", t->memory_mb), p += n + 1;
    *e++ = p, n = sprintf(p, "PMC_CPUS=%u", t->cpus), p += n + 1;
    *e++ = p, n = sprintf(p, "PMC_RANK=%d", a->cfg.rank), p += n + 1;
    *e++ = p, n = sprintf(p, "PMC_HOST_RANK=%d", a->cfg.host_rank), p += n + 1;
    if (s->bound) {
        *e++ = p, n = sprintf(p, "PMC_AFFINITY=");
        affinity_format(&s->cpuset, p + n, AFFINITY_LIST_MAX);
        p += strlen(p) + 1;
    }
    fwd_child_env(&s->fwd, e);
    e[s->fwd.npipes] = NULL;
    return 0;
}

/* ---- launching and reaping -------------------------------------------- */

static void agent_slot_release(struct agent *a, struct slot *s)
{
    taskio_capture_reset(s->out_fd);
    taskio_capture_reset(s->err_fd);
    if (s->task_out >= 0)
        close(s->task_out);
    if (s->task_err >= 0)
        close(s->task_err);
    s->task_out = s->task_err = -1;
    fwd_reset(&s->fwd);
    if (s->bound)
        cpuset_pool_give(a->pool, &s->cpuset);
    s->bound = false;
    a->cpus_free += s->cpus;
    a->memory_free += s->memory_mb;
    s->in_use = false;
}

static void agent_task_unstartable(struct agent *a, struct slot *s, const struct msg_task *t)
{
    s->in_use = true;
    a->cpus_free -= t->cpus;
    a->memory_free -= t->memory_mb;
    s->id = t->id;
    s->attempt = t->attempt;
    s->cpus = t->cpus;
    s->memory_mb = t->memory_mb;
    s->start = agent_now();
    agent_write_output(a, s, 256, 0.0);
    agent_add_result(a, s, 256, 0, 0.0);
    agent_slot_release(a, s);
}

static void agent_exec_failed(struct agent *a, struct slot *s, int e)
{
    const char *app = s->argv[0];
    dprintf(s->task_err >= 0 ? s->task_err : s->err_fd,
            "pmc-hybrid: task %s: could not execute %s: %s\n", s->strs, app, strerror(e));
    int status = spawn_exec_exit_code(e) << 8;
    agent_write_output(a, s, status, 0.0);
    agent_add_result(a, s, status, e, 0.0);
    agent_slot_release(a, s);
}

static void agent_batch_unref(struct batch *b)
{
    if (b && --b->refs == 0) {
        mail_free(b->mail);
        free(b);
    }
}

/* Forwarding pipes and --per-task-stdio files of the task in slot s. */
static int agent_slot_io(struct agent *a, struct slot *s, const struct msg_task *t)
{
    struct pmc_error err;
    if (t->nfwd > sizeof s->fwd_fds / sizeof s->fwd_fds[0]) {
        log_error("Task %s: more than %zu forwards", t->name,
                  sizeof s->fwd_fds / sizeof s->fwd_fds[0]);
        return -1;
    }
    if (t->nfwd && fwd_prepare(&s->fwd, t, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    fwd_child_fds(&s->fwd, s->fwd_fds);
    if (a->cfg.per_task_stdio &&
        taskio_open_per_task(a->cfg.task_dir, t->name, &s->task_out, &s->task_err, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    return 0;
}

/* Register the read ends of the task's pipes: event data is the slot index
 * plus (forward index + 1) << 32. */
static void agent_watch_pipes(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    for (uint32_t k = 0; k < s->fwd.n; k++) {
        if (s->fwd.e[k].rfd < 0)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i | ((uint64_t)(k + 1) << 32)};
        epoll_ctl(a->epfd, EPOLL_CTL_ADD, s->fwd.e[k].rfd, &ev);
    }
}

/* --set-affinity: take t->cpus PUs of the rank's pool; when they cannot be
 * had, the task runs unbound with a warning.  Always 0. */
static int agent_slot_bind(struct agent *a, struct slot *s, const struct msg_task *t)
{
    s->bound = false;
    if (!a->pool)
        return 0;
    int rc = cpuset_pool_take(a->pool, t->cpus ? t->cpus : 1, &s->cpuset);
    if (rc == 0) {
        s->bound = true;
    } else if (rc == 1) {
        log_warn("Task %s: the free CPUs of rank %d are fragmented, running it unbound", t->name,
                 a->cfg.rank);
    } else if (!a->warned_unbound) {
        a->warned_unbound = true;
        log_warn("Rank %d runs more CPUs than it has free PUs (--host-cpus above the PU "
                 "count?): tasks that find no free PUs run unbound",
                 a->cfg.rank);
    }
    return 0;
}

static void agent_launch(struct agent *a, const struct msg_task *t)
{
    int i = agent_slot_get(a);
    const char *app = t->argv;
    struct slot *s = i >= 0 ? &a->slots[i] : NULL;
    if (!s || agent_slot_strings(s, t, app) < 0 || agent_slot_argv(s, t) < 0) {
        log_fatal("Out of memory or descriptors starting task %s", t->name);
        a->failed = true;
        return;
    }
    if (agent_slot_io(a, s, t) < 0 || agent_slot_bind(a, s, t) < 0 || agent_slot_env(a, s, t) < 0) {
        /* the task cannot start: report it as failed (status 256, as PMC
         * does when stdio cannot be opened) */
        agent_task_unstartable(a, s, t);
        return;
    }
    s->in_use = true;
    a->cpus_free -= t->cpus;
    a->memory_free -= t->memory_mb;
    s->id = t->id;
    s->attempt = t->attempt;
    s->cpus = t->cpus;
    s->memory_mb = t->memory_mb;
    s->start = agent_now();
    clock_gettime(CLOCK_MONOTONIC, &s->t0);
    log_debug("Running task %s", t->name);
    struct spawn_request req = {
        .argv = s->argv,
        .envp = s->envp,
        .stdout_fd = s->task_out >= 0 ? s->task_out : s->out_fd,
        .stderr_fd = s->task_err >= 0 ? s->task_err : s->err_fd,
        .forward_fds = s->fwd_fds,
        .nforward = (int)s->fwd.npipes,
        .affinity = s->bound ? &s->cpuset : NULL,
        .memory_limit_bytes = a->cfg.strict_limits ? (uint64_t)t->memory_mb * 1024 * 1024 : 0};
    int e = spawn_task(&req, &s->pid, &s->pidfd);
    fwd_close_write_ends(&s->fwd);
    if (e) {
        agent_exec_failed(a, s, e);
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, s->pidfd, &ev);
    agent_watch_pipes(a, (uint32_t)i);
    a->running++;
}

static void agent_reap(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | WNOHANG) < 0 || si.si_pid == 0)
        return; /* not exited yet (spurious wake-up) */
    double duration = agent_elapsed(&s->t0);
    int status = si.si_code == CLD_EXITED
                     ? (si.si_status & 0xff) << 8
                     : (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
    epoll_ctl(a->epfd, EPOLL_CTL_DEL, s->pidfd, NULL);
    close(s->pidfd);
    s->pidfd = -1;
    struct pmc_error err;
    if (s->fwd.n && fwd_finish(&s->fwd, s->strs, status, &a->fwd_pack, &err) < 0) {
        log_error("%s", err.text);
        a->fwd_pack.len = a->fwd_pack.count = 0;
        status = 256; /* the task failed: its forwarded data could not be read */
    }
    agent_write_output(a, s, status, duration);
    agent_add_result(a, s, status, 0, duration);
    agent_slot_release(a, s);
    a->running--;
}

static void agent_pipe_readable(struct agent *a, uint32_t i, uint32_t k)
{
    struct slot *s = &a->slots[i];
    if (!s->in_use || k >= s->fwd.n || s->fwd.e[k].rfd < 0)
        return; /* stale event for a pipe already closed */
    int fd = s->fwd.e[k].rfd;
    if (fwd_read_pipe(&s->fwd, k) != 0)
        epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL); /* closed by fwd_read_pipe */
}

/* ---- messages --------------------------------------------------------- */

/* --null-executor: the task "succeeds" at once; nothing runs or is written. */
static void agent_null_task(struct agent *a, const struct msg_task *t)
{
    struct slot s = {.id = t->id, .attempt = t->attempt, .start = agent_now()};
    agent_add_result(a, &s, 0, 0, 0.0);
}

/* Give a task back to the master unstarted (after DRAIN or ABORT). */
static void agent_cancel_task(struct agent *a, const struct msg_task *t)
{
    struct slot s = {.id = t->id, .attempt = t->attempt, .start = agent_now()};
    agent_add_result(a, &s, 0, ECANCELED, 0.0);
}

/* Start queued tasks while this rank's CPUs and memory allow. */
static void agent_pump(struct agent *a)
{
    struct node_task nt;
    while (!a->failed && nq_take_fit(&a->queue, a->cpus_free, a->memory_free, &nt) == 1) {
        agent_launch(a, &nt.t);
        agent_batch_unref(nt.batch);
    }
}

static void agent_cancel_queued(struct agent *a)
{
    struct node_task nt;
    while (nq_pop(&a->queue, &nt) == 1) {
        agent_cancel_task(a, &nt.t);
        agent_batch_unref(nt.batch);
    }
}

/* Queue the tasks of m; returns true when m is now owned by the queue. */
static bool agent_handle_tasks(struct agent *a, struct mail *m, struct msg_reader *r)
{
    struct batch *b = calloc(1, sizeof *b);
    struct msg_task t;
    struct pmc_error err;
    int rc;
    if (!b) {
        a->failed = true;
        return false;
    }
    b->mail = m;
    b->refs = 1; /* held while this loop runs */
    while ((rc = msg_next_task(r, &t, &err)) == 1) {
        if (a->cfg.null_executor)
            agent_null_task(a, &t);
        else if (a->aborting || a->draining)
            agent_cancel_task(a, &t); /* too late to start anything */
        else if (nq_push(&a->queue, &t, b) == 0)
            b->refs++;
        else
            a->failed = true;
    }
    if (rc < 0) {
        log_error("Bad TASKS message from the master: %s", err.text);
        a->failed = true;
    }
    agent_pump(a);
    agent_batch_unref(b);
    return true;
}

static void agent_kill_all(struct agent *a, int sig)
{
    for (uint32_t i = 0; i < a->nslots; i++)
        if (a->slots[i].in_use && a->slots[i].pidfd >= 0)
            kill(-a->slots[i].pid, sig);
}

static void agent_begin_abort(struct agent *a)
{
    if (a->aborting)
        return;
    a->aborting = true;
    a->shutting = true;
    agent_cancel_queued(a);
    agent_kill_all(a, SIGTERM);
    clock_gettime(CLOCK_MONOTONIC, &a->kill_deadline);
    a->kill_deadline.tv_sec += AGENT_KILL_GRACE_MS / 1000;
}

/* Handle one message; returns true when the mail was kept (TASKS). */
static bool agent_handle_mail(struct agent *a, struct mail *m)
{
    struct msg_reader r;
    struct pmc_error err;
    if (msg_open(&r, m->data, m->len, &err) < 0) {
        log_error("Bad message from rank %d: %s", m->peer, err.text);
        a->failed = true;
        return false;
    }
    switch (r.kind) {
    case MSG_TASKS:
        return agent_handle_tasks(a, m, &r);
    case MSG_SHUTDOWN:
        a->shutting = true;
        break;
    case MSG_DRAIN:
        a->draining = true;
        agent_cancel_queued(a);
        break;
    case MSG_ABORT:
        agent_begin_abort(a);
        break;
    default:
        log_warn("Unexpected message kind %u from rank %d", r.kind, m->peer);
    }
    return false;
}

static void agent_drain_mailbox(struct agent *a)
{
    struct mail *m;
    while ((m = mailbox_pop(&a->box)) != NULL)
        if (!agent_handle_mail(a, m))
            mail_free(m);
}

/* ms until the kill deadline during an abort, else -1 (no timeout). */
static int agent_kill_timeout(struct agent *a)
{
    if (!a->aborting || a->killed_hard)
        return -1;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (a->kill_deadline.tv_sec - now.tv_sec) * 1000 +
              (a->kill_deadline.tv_nsec - now.tv_nsec) / 1000000;
    if (ms <= 0) {
        agent_kill_all(a, SIGKILL);
        a->killed_hard = true;
        return -1;
    }
    return (int)ms;
}

/* The epoll timeout: the sooner of the kill deadline and the result delay. */
static int agent_wait_timeout(struct agent *a)
{
    int kill_ms = agent_kill_timeout(a);
    long result_ms = agent_result_wait_ms(a);
    if (result_ms < 0)
        return kill_ms;
    return kill_ms < 0 || result_ms < kill_ms ? (int)result_ms : kill_ms;
}

static void agent_wait_events(struct agent *a)
{
    struct epoll_event ev[64];
    int timeout = agent_wait_timeout(a);
    if (mailbox_prepare_sleep(&a->box))
        timeout = 0;
    int n = epoll_wait(a->epfd, ev, 64, timeout);
    mailbox_awake(&a->box);
    for (int i = 0; i < n; i++) {
        uint64_t d = ev[i].data.u64;
        if (d == MAILBOX_EVENT)
            continue;
        if (d >> 32)
            agent_pipe_readable(a, (uint32_t)d, (uint32_t)(d >> 32) - 1);
        else
            agent_reap(a, (uint32_t)d);
    }
    if (!a->aborting && !a->draining)
        agent_pump(a);
}

static void agent_send_hello(struct agent *a)
{
    struct msgbuf b = {0};
    struct msg_hello h = {(uint32_t)a->cfg.host_rank, (uint32_t)a->cfg.host_ranks, a->cfg.cpus,
                          a->cfg.memory_mb, a->cfg.hostname};
    if (msg_begin(&b, MSG_HELLO) < 0 || msg_add_hello(&b, &h) < 0) {
        a->failed = true;
        msg_free(&b);
        return;
    }
    msg_end(&b);
    comm_send(a->comm, 0, COMM_TO_MASTER, &b);
    msg_free(&b);
}

static void *agent_main(void *arg)
{
    struct agent *a = arg;
    agent_send_hello(a);
    while (!(a->shutting && a->running == 0 && nq_len(&a->queue) == 0)) {
        agent_drain_mailbox(a);
        agent_flush_results(a);
        if (a->failed && !a->sent_abort) {
            /* this rank cannot go on: have the master end the run */
            agent_send_empty(a, MSG_ABORT);
            a->sent_abort = true;
            agent_begin_abort(a);
        }
        if (a->shutting && a->running == 0 && nq_len(&a->queue) == 0)
            break;
        agent_wait_events(a);
        agent_flush_results(a);
    }
    a->shutting = true; /* makes the last flush unconditional */
    agent_flush_results(a);
    if (taskio_file_close(&a->out) < 0 || taskio_file_close(&a->err) < 0)
        a->failed = true;
    agent_send_empty(a, MSG_BYE);
    return NULL;
}

/* ---- life cycle ------------------------------------------------------- */

/* The PUs of this rank: its block of the host's PUs, or, with
 * --keep-affinity, the CPUs it inherited (a launcher's binding is already
 * per rank).  Without a topology tasks run unbound.  -1 only without memory. */
static int agent_create_pool(struct agent *a)
{
    cpu_set_t inherited;
    bool keep = a->cfg.keep_affinity && sched_getaffinity(0, sizeof inherited, &inherited) == 0;
    struct pmc_error perr;
    a->pool = cpuset_pool_create(NULL, keep ? &inherited : NULL, keep ? 0 : a->cfg.host_rank,
                                 keep ? 1 : a->cfg.host_ranks, &perr);
    if (!a->pool && errno == ENOMEM)
        return -1;
    if (!a->pool)
        log_warn("--set-affinity: %s; tasks run unbound", perr.text);
    else if (cpuset_pool_size(a->pool) < a->cfg.cpus)
        log_debug("Rank %d offers %u CPUs on %u PUs", a->cfg.rank, a->cfg.cpus,
                  cpuset_pool_size(a->pool));
    return 0;
}

struct agent *agent_create(const struct agent_config *cfg, struct pmc_error *err)
{
    struct agent *a = calloc(1, sizeof *a);
    if (!a) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    a->cfg = *cfg;
    a->cpus_free = cfg->cpus;
    a->memory_free = cfg->memory_mb;
    a->cfg.hostname = strdup(cfg->hostname);
    a->cfg.dag_path = strdup(cfg->dag_path);
    a->cfg.task_dir = strdup(cfg->task_dir ? cfg->task_dir : ".");
    a->out.fd = a->err.fd = -1;
    a->box.efd = -1;
    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (!a->cfg.hostname || !a->cfg.dag_path || !a->cfg.task_dir || a->epfd < 0 ||
        mailbox_init(&a->box) < 0 || agent_snapshot_env(a) < 0) {
        pmc_errorf(err, "cannot create the node agent: %m");
        agent_destroy(a);
        return NULL;
    }
    if (cfg->set_affinity && agent_create_pool(a) < 0) {
        pmc_errorf(err, "cannot create the node agent: out of memory");
        agent_destroy(a);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = MAILBOX_EVENT};
    epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->box.efd, &ev);
    return a;
}

struct mailbox *agent_mailbox(struct agent *a)
{
    return &a->box;
}

int agent_start(struct agent *a, struct comm *c, struct pmc_error *err)
{
    a->comm = c;
    int rc = pthread_create(&a->thread, NULL, agent_main, a);
    if (rc != 0) {
        errno = rc;
        return pmc_errorf(err, "cannot start the node agent thread: %m");
    }
    a->started = true;
    return 0;
}

int agent_join(struct agent *a)
{
    if (a->started) {
        pthread_join(a->thread, NULL);
        a->started = false;
    }
    return a->failed ? -1 : 0;
}

static void agent_slot_free(struct slot *s)
{
    if (s->out_fd >= 0)
        close(s->out_fd);
    if (s->err_fd >= 0)
        close(s->err_fd);
    free(s->strs);
    free(s->argv);
    free(s->envp);
    free(s->envbuf);
    fwd_free(&s->fwd);
}

void agent_destroy(struct agent *a)
{
    if (!a)
        return;
    agent_join(a);
    for (uint32_t i = 0; i < a->nslots; i++)
        agent_slot_free(&a->slots[i]);
    cpuset_pool_destroy(a->pool);
    free(a->slots);
    free(a->base_env);
    struct node_task nt;
    while (nq_pop(&a->queue, &nt) == 1)
        agent_batch_unref(nt.batch);
    nq_free(&a->queue);
    msg_free(&a->results);
    msg_free(&a->fwd_pack);
    taskio_file_close(&a->out);
    taskio_file_close(&a->err);
    if (a->box.efd >= 0)
        mailbox_destroy(&a->box);
    if (a->epfd >= 0)
        close(a->epfd);
    free((char *)a->cfg.hostname);
    free((char *)a->cfg.dag_path);
    free((char *)a->cfg.task_dir);
    free(a);
}
