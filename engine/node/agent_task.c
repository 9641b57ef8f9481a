/* agent_task.c - one task on a node: its slot, argv and environment
 * (PMC_* variables, forward descriptors, PMC_AFFINITY), CPU binding, the
 * launch, the reaping through its pidfd, its forwarded data and its output
 * block with the cluster-task record (COMPAT.md "Task stdio"). */
#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/node/agent_internal.h"
#include "engine/exec/planted.h"
#include "engine/exec/spawn.h"
#include "engine/exec/task_end.h"
#include "io/grow.h"
#include "io/log.h"

int agent__open_outputs(struct agent *a, struct pmc_error *err)
{
    char path[4096]; /* PMC's log lines for them */
    taskio_rank_path(path, sizeof path, a->cfg.dag_path, 0, a->cfg.rank);
    log_debug("Worker %d: Using task stdout file: %s", a->cfg.rank, path);
    if (taskio_file_open(&a->out, path, err) < 0)
        return -1;
    taskio_rank_path(path, sizeof path, a->cfg.dag_path, 1, a->cfg.rank);
    log_debug("Worker %d: Using task stderr file: %s", a->cfg.rank, path);
    return taskio_file_open(&a->err, path, err);
}

/* Slot s's output block (taskio.h): its capture files and its record but
 * for the status and the duration. */
static void agent_output_block(struct agent *a, const struct slot *s, struct taskio_block *b)
{
    const char *name = s->strs;
    const char *pegasus_id = name + strlen(name) + 1;
    *b = (struct taskio_block){.record = {.pegasus_id = pegasus_id,
                                          .name = name,
                                          .instance = (s->flags & MSG_TASK_INDEXED) != 0,
                                          .start = s->start,
                                          .app = pegasus_id + strlen(pegasus_id) + 1,
                                          .hostname = a->cfg.hostname,
                                          .slot = a->cfg.rank,
                                          .cpus = s->cpus,
                                          .memory_mb = s->memory_mb,
                                          .gpus = s->gpus},
                               .out_fd = s->io.out_fd,
                               .err_fd = s->io.err_fd,
                               .task_out = s->io.task_out,
                               .failed_records_only = a->cfg.task_records_failed,
                               .out = &a->out,
                               .err = &a->err};
}

/* Slot s's output, after taskio_write_block() returned rc for it (-1 with
 * errno: its output or record was lost): its --per-task-stdio files are
 * closed first (a write-back error of a network file system shows at the
 * close).  Lost output (e->output_lost) fails the task and the run (the
 * agent aborts it: a block cut short leaves zeros in the rank's file); rc
 * TASKIO_CAPTURE_FULL (its output may be cut short in a full $TMPDIR)
 * fails the task only. */
static void agent_settle_output(struct agent *a, struct slot *s, int rc, struct task_end *e)
{
    bool per_task = s->io.task_out >= 0;
    int write_errno = errno; /* the block's error, which a failed close must not hide */
    if (taskio_close_per_task(&s->io.task_out, &s->io.task_err) < 0 && rc == 0)
        rc = -1;
    else if (rc != 0)
        errno = write_errno;
    if (rc == 0)
        return;
    e->output_lost = true;
    if (rc == TASKIO_CAPTURE_FULL) { /* the task fails; the run goes on */
        log_error("Task %s failed: its output may be cut short: the file system of its capture "
                  "files ($TMPDIR, default /tmp) was full when it ended",
                  s->strs);
        return;
    }
    if (per_task || !a->out.path)
        log_error("Task %s failed: its output could not be written to its --per-task-stdio "
                  "files: %s",
                  s->strs, strerror(errno));
    else
        log_error("Task %s failed: its output could not be written to %s or %s: %s", s->strs,
                  a->out.path, a->err.path, strerror(errno));
    a->phase.failed = true;
}

/* Slot s's task is over as e says: its result (task_end_decide()) is
 * queued and the slot released. */
static void agent_report(struct agent *a, struct slot *s, const struct task_end *e, double duration)
{
    struct task_outcome o = task_end_decide(e);
    agent__add_result(a, s, o.status, o.exec_errno, duration);
    agent__slot_release(a, s);
}

/* Slot s's task ended (or never ran) as e says, duration seconds after
 * its start, on the agent thread: its notes, forwards and output block
 * (task_end_write()), then its result and its slot. */
static void agent_finish(struct agent *a, struct slot *s, struct task_end *e, double duration)
{
    struct taskio_block b;
    agent_output_block(a, s, &b);
    struct pmc_error err;
    /* out_len, err_len: what agent__slot_release() resets */
    int rc = task_end_write(e, &b, s->io.task_err >= 0 ? s->io.task_err : s->io.err_fd,
                            s->time_limit_ms, &s->fwd, &a->outbox.fwd_pack, &err, duration,
                            &s->io.out_len, &s->io.err_len);
    if (e->forwards_lost)
        log_error("%s", err.text);
    agent_settle_output(a, s, rc, e);
    agent_report(a, s, e, duration);
}

static void agent_slot_init(struct slot *s)
{
    memset(s, 0, sizeof *s);
    s->pidfd = -1;
    s->io.task_out = s->io.task_err = -1;
    s->io.out_fd = s->io.err_fd = -1; /* agent_slot_open_captures(), at the slot's first use */
}

/* Slot i's two capture files, made at its first use rather than with the
 * table (the table doubles, and an O_TMPFILE is costly).  They are lent to the watchdog once, when
 * both are made: a later use of the slot costs no system call (watchdog.h).  0, or -1 with errno
 * (EMFILE, ENFILE, ENOSPC); what was opened stays and is not opened again. */
static int agent_slot_open_captures(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    if (s->io.out_fd >= 0 && s->io.err_fd >= 0)
        return 0; /* made and lent at an earlier use */
    if (s->io.out_fd < 0)
        s->io.out_fd = taskio_capture_open();
    if (s->io.err_fd < 0 && s->io.out_fd >= 0)
        s->io.err_fd = taskio_capture_open();
    if (s->io.out_fd < 0 || s->io.err_fd < 0) {
        char dir[4200];
        int e = errno;
        log_error("Rank %d: cannot make a task's capture file in %s: %s", a->cfg.rank,
                  taskio_capture_dir_name(dir, sizeof dir), strerror(e));
        errno = e;
        return -1;
    }
    /* the watchdog saves them if this process dies (watchdog.h) */
    if (watchdog_lend(a->watchdog, i, s->io.out_fd, s->io.err_fd) < 0)
        log_debug("Rank %d: slot %u's capture files not lent to the watchdog: %s", a->cfg.rank, i,
                  strerror(errno));
    return 0;
}

uint32_t agent__next_free_slot(const struct agent *a)
{
    for (uint32_t w = 0; w < (a->nslots + 63) / 64; w++)
        if (a->free_slots[w])
            return w * 64 + (uint32_t)__builtin_ctzll(a->free_slots[w]);
    return a->nslots;
}

static void agent_slot_mark(struct agent *a, uint32_t i, bool free)
{
    if (free)
        a->free_slots[i / 64] |= 1ull << (i % 64);
    else
        a->free_slots[i / 64] &= ~(1ull << (i % 64));
}

#ifndef NDEBUG
/* The states each state may move to (enum slot_state). */
#define SLOT_BIT(x) (1u << (x))
static const unsigned agent_slot_moves[] = {
    [SLOT_FREE] = SLOT_BIT(SLOT_CLAIMED),
    [SLOT_CLAIMED] = SLOT_BIT(SLOT_FREE) | SLOT_BIT(SLOT_LAUNCHING) | SLOT_BIT(SLOT_RUNNING),
    [SLOT_LAUNCHING] = SLOT_BIT(SLOT_FREE) | SLOT_BIT(SLOT_RUNNING) | SLOT_BIT(SLOT_POOL),
    [SLOT_RUNNING] = SLOT_BIT(SLOT_FREE) | SLOT_BIT(SLOT_LINGERING),
    [SLOT_POOL] = SLOT_BIT(SLOT_FREE) | SLOT_BIT(SLOT_RUNNING) | SLOT_BIT(SLOT_LINGERING_POOL),
    [SLOT_LINGERING] = SLOT_BIT(SLOT_FREE),
    [SLOT_LINGERING_POOL] = SLOT_BIT(SLOT_FREE),
};
#endif

void agent__slot_to(struct agent *a, uint32_t i, enum slot_state to)
{
    struct slot *s = &a->slots[i];
    assert(agent_slot_moves[s->state] & SLOT_BIT(to));
    if (s->state == SLOT_FREE || to == SLOT_FREE)
        agent_slot_mark(a, i, to == SLOT_FREE);
    s->state = to;
}

/* Twice the slots (8 at first), the new ones free and without capture
 * files yet.  0, or -1 (ENOMEM). */
static int agent_slots_grow(struct agent *a)
{
    uint32_t n = a->nslots ? a->nslots * 2 : 8;
    if (deadlines_reserve(&a->deadlines, n) < 0) /* no allocation when a limit is armed */
        return -1;
    uint64_t *map = realloc(a->free_slots, (n + 63) / 64 * sizeof *map);
    if (!map)
        return -1;
    a->free_slots = map;
    for (uint32_t w = (a->nslots + 63) / 64; w < (n + 63) / 64; w++)
        map[w] = 0;
    struct slot *t = realloc(a->slots, n * sizeof *t);
    if (!t)
        return -1;
    a->slots = t;
    for (; a->nslots < n; a->nslots++) {
        agent_slot_init(&t[a->nslots]); /* SLOT_FREE */
        agent_slot_mark(a, a->nslots, true);
    }
    return 0;
}

/* The lowest free slot (growing the table when all are busy), with its
 * capture files.  -1 on error (ENOMEM, EMFILE/ENFILE/ENOSPC). */
static int agent_slot_get(struct agent *a)
{
    uint32_t i = agent__next_free_slot(a);
    if (i == a->nslots && agent_slots_grow(a) < 0)
        return -1;
    if (agent_slot_open_captures(a, i) < 0)
        return -1;
    return (int)i;
}

/* Copy name, pegasus id and app into the slot's string buffer. */
static int agent_slot_strings(struct slot *s, const struct msg_task *t, const char *app)
{
    size_t ln = strlen(t->name) + 1, lp = strlen(t->pegasus_id) + 1, la = strlen(app) + 1;
    if (pmc_grow((void **)&s->strs, &s->strs_cap, ln + lp + la, 1) < 0)
        return -1;
    memcpy(s->strs, t->name, ln);
    memcpy(s->strs + ln, t->pegasus_id, lp);
    memcpy(s->strs + ln + lp, app, la);
    return 0;
}

static int agent_slot_argv(struct slot *s, const struct msg_task *t)
{
    size_t cap = s->env.argv_cap;
    if (pmc_grow((void **)&s->env.argv, &cap, t->argc + 1, sizeof(char *)) < 0)
        return -1;
    s->env.argv_cap = (uint32_t)cap;
    const char *p = t->argv;
    for (uint32_t i = 0; i < t->argc; i++) {
        s->env.argv[i] = (char *)p;
        p += strlen(p) + 1;
    }
    s->env.argv[t->argc] = NULL;
    return 0;
}

void agent__slot_release(struct agent *a, struct slot *s)
{
    taskio_capture_reset(s->io.out_fd, s->io.out_len);
    taskio_capture_reset(s->io.err_fd, s->io.err_len);
    (void)taskio_close_per_task(&s->io.task_out, &s->io.task_err); /* a task that never ran */
    fwd_reset(&s->fwd);
    if (s->cpuid.held)
        cpuset_pool_give(a->res.pool, &s->cpuid.set);
    s->cpuid.held = s->cpuid.bound = s->cpuid.pending = false;
    for (uint32_t i = 0; i < s->gpu.n; i++)
        a->res.gpu_busy[s->gpu.ids[i]] = false;
    a->res.gpus_free += s->gpu.n;
    s->gpu.n = 0;
    a->res.cpus_free += s->cpus - s->cpuid.lent;
    a->res.memory_free += s->memory_mb;
    s->cpuid.lent = 0;
    agent__slot_to(a, (uint32_t)(s - a->slots), SLOT_FREE);
}

/* Take slot s for task t: account its CPUs and memory, start its clock. */
static void agent_slot_claim(struct agent *a, struct slot *s, const struct msg_task *t)
{
    agent__slot_to(a, (uint32_t)(s - a->slots), SLOT_CLAIMED);
    watchdog_name(a->watchdog, (uint32_t)(s - a->slots), t->name);
    s->flags = t->flags;
    s->hold_counted = false;
    s->time_limit_ms = t->time_limit_ms;
    s->end = (struct task_end){0};
    s->gpus = t->gpus;
    a->res.cpus_free -= t->cpus;
    a->res.memory_free -= t->memory_mb;
    s->id = t->id;
    s->attempt = t->attempt;
    s->cpus = t->cpus;
    s->memory_mb = t->memory_mb;
    s->start = pmc_epoch_s();
    clock_gettime(CLOCK_MONOTONIC, &s->t0);
    s->io.out_len = s->io.err_len = -1; /* the task may write: not known until it ended */
}

static void agent_task_unstartable(struct agent *a, struct slot *s, const struct msg_task *t)
{
    agent_slot_claim(a, s, t);
    struct task_end e = {.start_errno = -1};
    agent_finish(a, s, &e, 0.0);
}

static void agent_exec_failed(struct agent *a, struct slot *s, int err)
{
    struct task_end e = {.start_errno = err};
    agent_finish(a, s, &e, 0.0);
}

/* Forwarding pipes and --per-task-stdio files of the task in slot s. */
static int agent_slot_io(struct agent *a, struct slot *s, const struct msg_task *t)
{
    struct pmc_error err;
    int planted = planted_take(&a->fail_next_start); /* a test's */
    if (planted) {
        log_error("Task %s: cannot create a pipe: %s", t->name, strerror(planted));
        errno = planted;
        return -1;
    }
    if (t->nfwd && fwd_prepare(&s->fwd, t, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    if (s->fwd.npipes > sizeof s->fwd_fds / sizeof s->fwd_fds[0]) { /* the DAG allows no more */
        log_error("Task %s: more than %zu -f pipes", t->name,
                  sizeof s->fwd_fds / sizeof s->fwd_fds[0]);
        return -1;
    }
    fwd_child_fds(&s->fwd, s->fwd_fds);
    if (a->cfg.per_task_stdio && taskio_open_per_task(a->cfg.task_dir, t->name, &s->io.task_out,
                                                      &s->io.task_err, &err) < 0) {
        log_error("%s", err.text);
        return -1;
    }
    return 0;
}

/* Register the read ends of the task's pipes: event data is the slot index
 * plus (forward index + 1) << 32.  0, or -1 with errno from epoll_ctl. */
static int agent_watch_pipes(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    for (uint32_t k = 0; k < s->fwd.n; k++) {
        if (s->fwd.e[k].rfd < 0)
            continue;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i | ((uint64_t)(k + 1) << 32)};
        if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, s->fwd.e[k].rfd, &ev) < 0)
            return -1;
    }
    return 0;
}

/* Slot s's pidfd and open pipes leave the epoll set (entries never added
 * just fail to delete), then the pidfd is closed: in that order, since
 * another thread's new descriptor (a launcher's pidfd) can take a freed
 * number before the DEL, and a closed pidfd that a spawning child still
 * holds would stay in the set (forward.h).  The pipes are closed by
 * fwd_finish() or the slot's release. */
static void agent_unwatch(struct agent *a, struct slot *s)
{
    epoll_ctl(a->epfd, EPOLL_CTL_DEL, s->pidfd, NULL);
    for (uint32_t k = 0; k < s->fwd.n; k++)
        if (s->fwd.e[k].rfd >= 0)
            epoll_ctl(a->epfd, EPOLL_CTL_DEL, s->fwd.e[k].rfd, NULL);
    close(s->pidfd);
    s->pidfd = -1;
}

/* The task in slot i started but cannot be watched (epoll_ctl failed, errno
 * e): unwatched, it could never be reaped or could block on a full pipe, so
 * kill its process group, reap it here and report it failed. */
static void agent_abandon_task(struct agent *a, uint32_t i, int e)
{
    struct slot *s = &a->slots[i];
    log_error("Task %s: cannot watch it (epoll_ctl: %s): killed", s->strs, strerror(e));
    spawn_end_task(s->pid, s->pidfd, watchdog_entry(a->watchdog, i)); /* running: killed */
    double duration = agent_elapsed(&s->t0);
    agent_unwatch(a, s);
    agent__limit_end(a, i);
    struct task_end end = {.wait_status = SIGKILL};
    agent_finish(a, s, &end, duration);
}

/* The task's CPU ids (PMC_AFFINITY): t->cpus of the host's pool.  Without
 * --set-affinity any free ones, the most local first; a staged task gets
 * its one id when it starts (id_pending: the CPU it starts on).  With
 * --set-affinity the task is bound to them, taken near its GPUs first (its
 * GPUs are taken before); when they cannot be had, it runs unbound with a
 * warning.  Always 0. */
static int agent_slot_bind(struct agent *a, struct slot *s, const struct msg_task *t, bool staged)
{
    s->cpuid.held = s->cpuid.bound = s->cpuid.pending = false;
    if (!a->res.pool)
        return 0;
    if (!a->cfg.set_affinity) {
        if (staged)
            s->cpuid.pending = true;
        else
            s->cpuid.held =
                cpuset_pool_take_any(a->res.pool, t->cpus ? t->cpus : 1, &s->cpuid.set) == 0;
        return 0;
    }
    cpu_set_t near; /* the CPUs near the task's GPUs, when hwloc knows */
    CPU_ZERO(&near);
    for (uint32_t k = 0; a->cfg.gpus && a->cfg.gpus->near && k < s->gpu.n; k++)
        CPU_OR(&near, &near, &a->cfg.gpus->near[s->gpu.ids[k]]);
    int rc = cpuset_pool_take_near(a->res.pool, t->cpus ? t->cpus : 1, &near, &s->cpuid.set);
    if (rc == 0) {
        s->cpuid.held = s->cpuid.bound = true;
    } else if (rc == 1) {
        log_warn("Task %s: the free CPUs of rank %d are fragmented, running it unbound", t->name,
                 a->cfg.rank);
    } else if (!a->res.warned_unbound) {
        a->res.warned_unbound = true;
        log_warn("Rank %d runs more CPUs than it has free PUs (--host-cpus above the PU "
                 "count?): tasks that find no free PUs run unbound",
                 a->cfg.rank);
    }
    return 0;
}

/* The task's GPUs: the first t->gpus free ids of the host (the node queue
 * only starts a task when that many are free).  0, or -1 (out of memory,
 * or fewer free than asked: the task then fails to start). */
static int agent_slot_gpus(struct agent *a, struct slot *s, const struct msg_task *t)
{
    s->gpu.n = 0;
    if (t->gpus == 0)
        return 0;
    if (t->gpus > a->res.gpus_free ||
        pmc_grow((void **)&s->gpu.ids, &s->gpu.cap, t->gpus, sizeof *s->gpu.ids) < 0) {
        log_error("Task %s: %u GPUs asked, %u free", t->name, t->gpus, a->res.gpus_free);
        return -1;
    }
    for (uint32_t i = 0; s->gpu.n < t->gpus && i < a->cfg.gpus->n; i++) {
        if (a->res.gpu_busy[i])
            continue;
        a->res.gpu_busy[i] = true;
        s->gpu.ids[s->gpu.n++] = i;
    }
    a->res.gpus_free -= s->gpu.n;
    return 0;
}

/* The spawn of slot i's task ended with error e (0: started).  From the
 * agent thread, after spawn_task() returned here or on a launcher.  A
 * reaped launch (pool, launcher.h) is watched by the pool, which adds its
 * -f pipes and its pidfd to its own epoll set as it hands this completion
 * back (a failure comes back through launcher_take_unwatched()). */
static void agent_spawned(struct agent *a, uint32_t i, int e, bool pool)
{
    struct slot *s = &a->slots[i];
    fwd_close_write_ends(&s->fwd);
    if (e) {
        watchdog_clear(a->watchdog, i);
        agent__limit_end(a, i); /* armed at the launch (agent__launch()) */
        agent_exec_failed(a, s, e);
        return;
    }
    agent__slot_to(a, i, pool ? SLOT_POOL : SLOT_RUNNING);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)i};
    if (!pool &&
        (epoll_ctl(a->epfd, EPOLL_CTL_ADD, s->pidfd, &ev) < 0 || agent_watch_pipes(a, i) < 0)) {
        agent_abandon_task(a, i, errno);
        return;
    }
    if (agent__aborting(&a->phase)) /* began while it was being launched */
        agent__signal(a, i, a->phase.run == AGENT_ABORT_KILLED ? SIGKILL : SIGTERM);
    agent__started(a, s);
    a->running++;
}

/* Copy req into slot i's launcher job (its descriptor list and CPU set too:
 * the slot array may move while the job runs) and submit it.  false when
 * slot i has no job (launch it here). */
static bool agent_submit_launch(struct agent *a, uint32_t i, const struct spawn_request *req,
                                struct tasks_mail *mail, bool staged)
{
    struct launch_job *j = a->launcher ? launcher_job(a->launcher, i) : NULL;
    /* j->forward_fds' bound, which a parsed DAG never passes (DAG_MAX_PIPES) */
    if (!j || req->nforward > LAUNCHER_MAX_FORWARDS)
        return false;
    j->req = *req;
    for (int k = 0; k < req->nforward; k++)
        j->forward_fds[k] = req->forward_fds[k];
    j->req.forward_fds = j->forward_fds;
    if (req->affinity) {
        j->affinity = *req->affinity;
        j->req.affinity = &j->affinity;
    }
    struct slot *s = &a->slots[i];
    /* reaped by the pool (launcher.h) unless an abort is under way, its
     * -f pipes read by the pool while it runs and its -F files by its
     * reaper; its start wakes the agent (wake_on_start) when the master
     * wants a STARTED notice; its time limit, armed at the launch (early:
     * the task starts later) and looked at again when it passes
     * (agent_limits.c), is enforced through launcher_time_out() */
    j->pool_reaps = !agent__aborting(&a->phase);
    j->forwards = s->fwd;
    j->wake_on_start = (s->flags & MSG_TASK_NOTIFY_START) != 0;
    j->hold_on_failure = (s->flags & MSG_TASK_HOLD_ON_FAILURE) != 0;
    j->wake_on_exit = (s->flags & (MSG_TASK_RELEASES | MSG_TASK_HOLD_ON_FAILURE)) != 0;
    j->held_failure = false;
    j->time_limit_ms = s->time_limit_ms;
    j->end = (struct task_end){0};
    if (j->pool_reaps) {
        agent_output_block(a, s, &j->output);
        j->started = s->t0;
    }
    agent__slot_to(a, i, SLOT_LAUNCHING);
    s->mail = mail;
    a->running++; /* the agent does not end while a launch is out */
    j->chained = false;
    j->handed = 0;
    j->first_id = s->cpuid.held ? agent__first_id(&s->cpuid.set) : -1;
    j->affinity_value = s->cpuid.pending ? s->cpuid.value : NULL;
    if (staged)
        launcher_stage(a->launcher, i);
    else
        launcher_submit(a->launcher, i);
    return true;
}

/* A staged task its reaper started in the place of another: the loan of
 * that CPU is settled (agent_stage.c). */
static void agent_took_handed(struct agent *a, struct slot *s)
{
    s->cpuid.lent = 1; /* the CPU its reaper gave a staged task settles the loan */
    a->stage.nstaged--;
}

/* Slot i's task lingers from now (agent_linger.c), status its first
 * process's wait status; pool: the pool's job holds its output
 * (launcher_finish()). */
static void agent_linger_begin(struct agent *a, uint32_t i, int status, bool pool)
{
    struct slot *s = &a->slots[i];
    agent__slot_to(a, i, pool ? SLOT_LINGERING_POOL : SLOT_LINGERING);
    s->end.wait_status = status;
    if (a->linger.lingering++ == 0)
        a->linger.linger_due_ns = pmc_mono_ns() + AGENT_LINGER_POLL_NS;
    /* its grace ended while the pool reaped it (the pool refused the
     * SIGKILL: a SIGKILL it sent ends a task without lingering), or the
     * abort's did: its group's members still hold the id */
    if (s->end.signalled == SIGKILL || a->phase.run == AGENT_ABORT_KILLED)
        agent__signal(a, i, SIGKILL);
    log_debug("Task %s: its first process ended in its grace; waiting for the rest of its "
              "process group",
              s->strs);
}

void agent__task_ended(struct agent *a, uint32_t i, int status, double duration)
{
    struct slot *s = &a->slots[i];
    agent__limit_end(a, i);
    struct task_end e = s->end;
    e.wait_status = status;
    agent_finish(a, s, &e, duration);
    a->running--;
}

/* The -F data that j's reaper read (launcher_forward()) becomes the next
 * result's: the two packs trade storage, so neither is copied. */
static void agent_take_forwards(struct agent *a, struct launch_job *j)
{
    if (j->forwards.n == 0)
        return;
    if (j->end.forwards_lost)
        log_error("%s", j->fwd_err.text);
    struct msgbuf mine = a->outbox.fwd_pack;
    a->outbox.fwd_pack = j->fwd_pack;
    j->fwd_pack = mine;
    j->fwd_pack.len = j->fwd_pack.count = 0;
}

static void agent_take_completions(struct agent *a)
{
    uint32_t i;
    while (launcher_take(a->launcher, &i) == 1) {
        struct launch_job *j = launcher_job(a->launcher, i);
        struct slot *s = &a->slots[i];
        struct tasks_mail *b = s->mail;
        s->mail = NULL;
        if (j->chained) { /* staged: its reaper-started clock (launcher_stage()) */
            s->t0 = j->started;
            s->start = j->output.record.start;
            agent__adopt_id(s, j->first_id); /* the CPU id its reaper gave up */
        }
        s->pid = j->pid;
        bool pool = j->pool_reaps && !j->err;
        s->pidfd = j->err || pool ? -1 : j->pidfd; /* a reaped launch's is the pool's */
        a->running--;
        agent_spawned(a, i, j->err, pool);
        agent__tasks_mail_unref(b);
    }
}

/* Slot i came back from the pool (exited or unwatched) before its
 * completion was taken?  With several launchers the completion ring can
 * hold it back for a moment (another launcher between claiming an earlier
 * cell and filling it): take it before acting on the slot. */
static void agent_await_completion(struct agent *a, uint32_t i)
{
    while (a->slots[i].state == SLOT_LAUNCHING) {
        agent_take_completions(a);
        if (a->slots[i].state == SLOT_LAUNCHING)
            sched_yield();
    }
}

void agent__take_launches(struct agent *a)
{
    agent_take_completions(a);
    uint32_t i;
    while (launcher_take_unwatched(a->launcher, &i) == 1) {
        agent_await_completion(a, i);
        agent__slot_to(a, i, SLOT_RUNNING); /* the agent kills and reaps it */
        a->slots[i].pidfd = launcher_job(a->launcher, i)->pidfd;
        a->running--;
        agent_abandon_task(a, i, launcher_job(a->launcher, i)->watch_err);
    }
    while (launcher_take_exited(a->launcher, &i) == 1) {
        agent_await_completion(a, i);
        struct launch_job *j = launcher_job(a->launcher, i);
        if (j->lingers)
            agent_linger_begin(a, i, j->status, true);
        else
            agent__take_exited(a, i);
    }
}

void agent__take_exited(struct agent *a, uint32_t i)
{
    struct launch_job *j = launcher_job(a->launcher, i);
    struct slot *s = &a->slots[i];
    if (j->handed) {
        agent_took_handed(a, s);
        if (s->cpuid.held && j->first_id >= 0) /* the staged task it started holds it */
            CPU_CLR(j->first_id, &s->cpuid.set);
    }
    s->hold_counted = j->held_failure;
    s->io.out_len = j->out_len; /* what agent__slot_release() resets */
    s->io.err_len = j->err_len;
    agent_take_forwards(a, j);
    struct task_end e = j->end; /* as its reaper left it (task_end_write()) */
    errno = j->output_errno;
    agent_settle_output(a, s, j->output_rc, &e);
    agent__limit_end(a, i); /* disarms its limit, bumps the generation */
    agent_report(a, s, &e, j->duration);
    a->running--;
}

bool agent__launch(struct agent *a, const struct msg_task *t, struct tasks_mail *mail, bool staged)
{
    int i = agent_slot_get(a);
    const char *app = t->argv;
    struct slot *s = i >= 0 ? &a->slots[i] : NULL;
    if (!s || agent_slot_strings(s, t, app) < 0 || agent_slot_argv(s, t) < 0) {
        /* ENOMEM, or EMFILE/ENFILE for a new slot's capture files: this
         * rank cannot go on, and the master ends the run */
        log_fatal("Rank %d cannot start task %s: %s", a->cfg.rank, t->name, strerror(errno));
        a->phase.failed = true;
        return false;
    }
    if (agent_slot_io(a, s, t) < 0 || agent_slot_gpus(a, s, t) < 0 ||
        agent_slot_bind(a, s, t, staged) < 0 || agent__slot_env(a, s, t) < 0) {
        /* the task cannot start: report it as failed (status 256, as PMC
         * does when stdio cannot be opened) */
        agent_task_unstartable(a, s, t);
        return false;
    }
    agent_slot_claim(a, s, t);
    (void)agent__limit_start(a, (uint32_t)i); /* its entry is reserved (agent_slots_grow()) */
    log_debug(staged ? "Staging task %s" : "Running task %s", t->name);
    struct spawn_request req = {.argv = s->env.argv,
                                .envp = s->env.envp,
                                .stdout_fd = s->io.task_out >= 0 ? s->io.task_out : s->io.out_fd,
                                .stderr_fd = s->io.task_err >= 0 ? s->io.task_err : s->io.err_fd,
                                .forward_fds = s->fwd_fds,
                                .nforward = (int)s->fwd.npipes,
                                .affinity = s->cpuid.bound ? &s->cpuid.set : NULL,
                                .memory_limit_bytes =
                                    a->cfg.strict_limits ? (uint64_t)t->memory_mb * 1024 * 1024 : 0,
                                .record_pgid = watchdog_entry(a->watchdog, (uint32_t)i)};
    if (agent_submit_launch(a, (uint32_t)i, &req, mail, staged))
        return true;
    agent_spawned(a, (uint32_t)i, spawn_task(&req, &s->pid, &s->pidfd), false);
    return false;
}

void agent__reap(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    if (s->state != SLOT_RUNNING) /* a stale event: the slot was reused */
        return;
    if (!spawn_exited(s->pidfd))
        return; /* not exited yet (spurious wake-up) */
    /* the task is over when its first process is, unless that process
     * ended in its grace and left members in its group (agent_linger.c) */
    bool lingers;
    int status = task_end_reap(&s->end, s->pid, s->pidfd, watchdog_entry(a->watchdog, i), &lingers);
    agent_unwatch(a, s); /* the pipes too, before fwd_finish() closes them */
    if (lingers)
        agent_linger_begin(a, i, status, false);
    else
        agent__task_ended(a, i, status, agent_elapsed(&s->t0));
}

void agent__pipe_readable(struct agent *a, uint32_t i, uint32_t k)
{
    struct slot *s = &a->slots[i];
    if (!agent__slot_busy(a, i) || k >= s->fwd.n || s->fwd.e[k].rfd < 0)
        return; /* stale event for a pipe already closed */
    int fd = s->fwd.e[k].rfd;
    if (fwd_read_pipe(&s->fwd, k) != 0) { /* out of the set, then closed: forward.h */
        epoll_ctl(a->epfd, EPOLL_CTL_DEL, fd, NULL);
        fwd_close_pipe(&s->fwd, k);
    }
}

void agent__slot_free(struct slot *s)
{
    if (s->io.out_fd >= 0)
        close(s->io.out_fd);
    if (s->io.err_fd >= 0)
        close(s->io.err_fd);
    free(s->strs);
    free(s->env.argv);
    free(s->env.envp);
    free(s->env.buf);
    free(s->gpu.ids);
    fwd_free(&s->fwd);
}
