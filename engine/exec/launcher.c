/* launcher.c - the launcher threads of a node agent; see launcher.h. */
#include "engine/exec/launcher.h"
#include "engine/exec/launcher_testing.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/host/affinity.h"
#include "engine/exec/planted.h"
#include "io/clock.h"
#include "io/log.h"
#include "sched/mpmc_ring.h"

#define LAUNCHER_SPIN 200                    /* looks at the submit ring before a launcher sleeps */
#define LAUNCHER_WORK_EVENT UINT64_MAX       /* epoll data of the work eventfd */
#define LAUNCHER_STOP_EVENT (UINT64_MAX - 1) /* and of the stop eventfd */
#define LAUNCHER_EVENTS 16                   /* exits and pipe events one epoll_wait takes */
#define LAUNCHER_PIPE_READ_MAX (1u << 20)    /* bytes one pipe event reads at most */

/* A slot's state: the reaper, launcher_signal() and the pipe readers meet
 * here, so that no signal goes to a process group after the reaper let its
 * id go (a reaped task's group id may be reused at once) and no pipe is
 * read once the reaper has it.  The state word holds JOB_* in its low
 * JOB_STATE_BITS and the launch's generation above them (JOB_GEN_BITS,
 * bumped at each watched launch), which a pipe's epoll data carries too:
 * an event of an earlier launch of the slot never claims a later one. */
#define JOB_STATE_BITS 2
#define JOB_GEN_BITS 24
#define JOB_GEN_MASK ((1u << JOB_GEN_BITS) - 1)
#define JOB_STATE(w) ((w) & ((1u << JOB_STATE_BITS) - 1))
#define JOB_GEN(w) (((w) >> JOB_STATE_BITS) & JOB_GEN_MASK)
#define JOB_ANY_GEN UINT32_MAX
_Static_assert(LAUNCHER_MAX_FORWARDS < 0xff, "pipe_event() keeps p + 1 in 8 bits");
enum {
    JOB_IDLE,       /* the pool does not watch it (the agent's, loud, reaped, unwatched) */
    JOB_WATCHED,    /* running, its pidfd (and pipes) in the pool's epoll set */
    JOB_SIGNALLING, /* launcher_signal() is sending a signal: the reaper waits */
    JOB_READING,    /* a launcher is reading one of its -f pipes: the reaper waits */
};

struct launcher {
    struct launch_job *jobs; /* nslots */
    _Atomic uint32_t *state; /* nslots: JOB_* and the generation (above) */
    uint32_t nslots, nthreads;
    struct mpmc_ring *submitted, *completed, *unwatched, *exited;
    struct mpmc_ring *staged; /* launcher_stage(): popped by reapers and the agent */
    int epfd;     /* the two eventfds, and the pidfds and -f pipes of reaped launches (one-shot) */
    int work_efd; /* written on a submit while a launcher sleeps; read to reset */
    int stop_efd; /* written once by launcher_destroy(), never read: wakes every launcher */
    atomic_uint sleepers;
    atomic_bool stop;
    atomic_bool wake_always;    /* launcher_wake_always() */
    atomic_int fail_watch;      /* launcher__fail_next_watch() */
    atomic_int fail_rearm;      /* launcher__fail_next_rearm() */
    atomic_uint hold_reads_us;  /* launcher__hold_reads() */
    atomic_ulong pipe_reads;    /* launcher__pipe_reads() */
    atomic_ulong staged_starts; /* launcher_staged_starts() */
    atomic_uint holds;          /* failures that hold staged starts (launcher_hold()) */
    atomic_uint own_waits_max;  /* launcher_set_own_waits() */
    atomic_uint own_waiting;    /* unbound launchers that wait for their own task now */
    atomic_ulong own_waits;     /* launcher_own_waits() */
    atomic_uint quiet_low;      /* launcher_set_quiet_exits(); QUIET_OFF: every exit wakes */
    struct mailbox *wake;
    atomic_uint started;               /* launcher threads past their start */
    int pin_cpu[LAUNCHER_MAX_THREADS]; /* launcher_create()'s pin: the k-th thread's CPU, or -1 */
    uint32_t nbound;                   /* threads with a CPU in pin_cpu: the first nbound */
    pthread_t threads[LAUNCHER_MAX_THREADS];
};

/* Move watched slot i, of launch generation gen (JOB_ANY_GEN: whichever),
 * to state `to`, waiting out a signal being sent (one kill(2)) or a pipe
 * being read (one non-blocking drain).  The state word it held (JOB_WATCHED
 * and the generation: never 0), to store back when done; 0 when the slot
 * is not watched (JOB_IDLE: its reaper or the agent has it) or watched for
 * another launch. */
static uint32_t launcher_claim(struct launcher *l, uint32_t i, int to, uint32_t gen)
{
    uint32_t w = atomic_load_explicit(&l->state[i], memory_order_acquire);
    for (;;) {
        if (JOB_STATE(w) == JOB_IDLE || (gen != JOB_ANY_GEN && JOB_GEN(w) != gen))
            return 0;
        if (JOB_STATE(w) != JOB_WATCHED) {
            sched_yield();
            w = atomic_load_explicit(&l->state[i], memory_order_acquire);
            continue;
        }
        uint32_t next = (w & ~((1u << JOB_STATE_BITS) - 1)) | (uint32_t)to;
        if (atomic_compare_exchange_weak_explicit(&l->state[i], &w, next, memory_order_acq_rel,
                                                  memory_order_acquire))
            return w;
    }
}

/* Take watched slot i back to JOB_IDLE: no more signals or pipe reads. */
static void launcher_unwatch(struct launcher *l, uint32_t i)
{
    (void)launcher_claim(l, i, JOB_IDLE, JOB_ANY_GEN);
}

/* The epoll data of slot i's pipe number p (its p-th -f, -F files not
 * counted: fwd_pipe_entry()) for launch generation gen: p + 1 in bits
 * 32-39, gen above them.  Never a pidfd's (those have nothing above the
 * low 32 bits) nor an eventfd's (those have bits 32-39 all set, and p + 1
 * <= LAUNCHER_MAX_FORWARDS < 0xff).  A task may name any number of -F
 * files around its pipes. */
static uint64_t pipe_event(uint32_t i, uint32_t p, uint32_t gen)
{
    return i | ((uint64_t)(p + 1) << 32) | ((uint64_t)gen << 40);
}

/* The slot, pipe number and generation of pipe_event() data d. */
static void pipe_event_parts(uint64_t d, uint32_t *i, uint32_t *p, uint32_t *gen)
{
    *i = (uint32_t)d;
    *p = (uint32_t)(d >> 32 & 0xff) - 1;
    *gen = (uint32_t)(d >> 40);
}

/* Take slot i's open pipes out of the pool's epoll set (after
 * launcher_unwatch(): no reader holds them), before they are closed. */
static void launcher_unwatch_pipes(struct launcher *l, uint32_t i)
{
    const struct fwd_task *f = &l->jobs[i].forwards;
    for (uint32_t k = 0; k < f->n; k++)
        if (f->e[k].rfd >= 0)
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, f->e[k].rfd, NULL);
}

/* Watch slot i's task, launch generation gen: its open -f pipes (one-shot,
 * re-armed after each read), then its pidfd (one-shot), so that no reaper
 * runs before every pipe is in the set.  0, or the errno of the epoll_ctl
 * that failed (its pipes then out of the set again). */
static int launcher_watch(struct launcher *l, uint32_t i, uint32_t gen)
{
    struct launch_job *j = &l->jobs[i];
    int e = 0;
    for (uint32_t k = 0, p = 0; e == 0 && k < j->forwards.n; k++) {
        if (j->forwards.e[k].kind != DAG_FORWARD_PIPE)
            continue;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
                                 .data.u64 = pipe_event(i, p++, gen)};
        if (j->forwards.e[k].rfd >= 0 &&
            epoll_ctl(l->epfd, EPOLL_CTL_ADD, j->forwards.e[k].rfd, &ev) < 0)
            e = errno;
    }
    if (e == 0)
        e = planted_take(&l->fail_watch);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT, .data.u64 = i};
    if (e == 0 && epoll_ctl(l->epfd, EPOLL_CTL_ADD, j->pidfd, &ev) < 0)
        e = errno;
    if (e) {
        launcher_unwatch(l, i); /* a pipe read may be under way */
        launcher_unwatch_pipes(l, i);
    }
    return e;
}

static void push(struct mpmc_ring *r, uint32_t i)
{
    while (!mpmc_ring_try_push(r, i))
        ; /* cannot be full: each ring holds every slot once at most */
}

#define NONE_OWN UINT32_MAX

/* One launcher thread's own state, which its calls pass down. */
struct launcher_thread {
    uint32_t own; /* the task it waits for itself (launcher_take_own()), or NONE_OWN */
    int bound;    /* its place among the bound threads (launcher_create()'s pin), or -1 */
};

/* May the launcher `self`, which started slot i's reaped launch and has
 * no task of its own (NONE_OWN), wait for that task itself
 * (launcher_set_own_waits())?  Then self->own is i.  Of the n own waits,
 * the k-th bound thread (k < n) always has one: a bound thread is woken on
 * its CPU, where that task's exit freed the CPU, while an unbound one may
 * be woken on the other, busy CPU and leave the freed one idle.  The unbound
 * share the rest, counted in own_waiting.  Not a task with -f pipes: those
 * are read through the pool's epoll set. */
static bool launcher_take_own(struct launcher *l, uint32_t i, struct launcher_thread *self)
{
    if (!self || self->own != NONE_OWN || l->jobs[i].forwards.npipes > 0)
        return false;
    unsigned most = atomic_load_explicit(&l->own_waits_max, memory_order_relaxed);
    if (self->bound >= 0) {
        if ((unsigned)self->bound >= most)
            return false;
        self->own = i;
        return true;
    }
    unsigned unbound = most > l->nbound ? most - l->nbound : 0;
    unsigned n = atomic_load_explicit(&l->own_waiting, memory_order_relaxed);
    do {
        if (n >= unbound)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&l->own_waiting, &n, n + 1,
                                                    memory_order_relaxed, memory_order_relaxed));
    self->own = i;
    return true;
}

/* Slot i's task could not be watched (error e): no exit event can come,
 * so the slot is not reused meanwhile; the agent kills and reaps it
 * through its pidfd (launcher_take_unwatched()). */
static void launcher_unwatched(struct launcher *l, uint32_t i, int e)
{
    l->jobs[i].watch_err = e;
    push(l->unwatched, i);
    mailbox_notify(l->wake);
}

/* Start slot i's job and hand it back: completed, then (a reaped launch)
 * watched, by the pool's epoll set or, through self (launcher_take_own()),
 * by this launcher itself. */
static void launcher_launch(struct launcher *l, uint32_t i, struct launcher_thread *self)
{
    struct launch_job *j = &l->jobs[i];
    j->err = spawn_task(&j->req, &j->pid, &j->pidfd);
    /* read before the push: the job's inputs are the agent's after it */
    bool reaps = j->pool_reaps && j->err == 0, wake = j->wake_on_start;
    uint32_t gen = 0;
    if (reaps) { /* before the push: launcher_signal() may come right after */
        gen = (JOB_GEN(atomic_load_explicit(&l->state[i], memory_order_relaxed)) + 1) &
              JOB_GEN_MASK; /* a new launch: earlier pipe events are stale */
        atomic_store_explicit(&l->state[i], JOB_WATCHED | gen << JOB_STATE_BITS,
                              memory_order_relaxed);
    }
    push(l->completed, i);
    if (!reaps) {
        mailbox_notify(l->wake);
        return;
    }
    int e = launcher_take_own(l, i, self) ? 0 : launcher_watch(l, i, gen);
    if (e == 0) {
        /* the push, then the flag: launcher_wake_always() stores the flag,
         * then the agent looks at the rings before it sleeps */
        atomic_thread_fence(memory_order_seq_cst);
        if (wake || atomic_load_explicit(&l->wake_always, memory_order_relaxed))
            mailbox_notify(l->wake);
        return;
    }
    launcher_unwatched(l, i, e);
}

/* Slot i's pipe number p (fwd_pipe_entry()), of launch generation gen, is
 * readable (or at its end):
 * read what it holds while the task runs (at most LAUNCHER_PIPE_READ_MAX
 * bytes, so that a writer that never pauses does not keep the reaper and
 * signals waiting: the event fires again), so that the writer does not
 * wait for its task's end, then arm it again; at its end or on an error
 * it leaves the set and is closed (forward.h; after an error the task
 * fails: fwd_finish()).  A stale event (the slot was reaped, perhaps
 * launched again: another generation) finds the slot unwatched, or
 * watched for another launch, and does nothing. */
static void launcher_read_pipe(struct launcher *l, uint32_t i, uint32_t p, uint32_t gen)
{
    uint32_t w = i < l->nslots ? launcher_claim(l, i, JOB_READING, gen) : 0;
    if (w == 0)
        return;
    struct fwd_task *f = &l->jobs[i].forwards;
    uint32_t k = fwd_pipe_entry(f, p);
    if (k < f->n && f->e[k].rfd >= 0) {
        int fd = f->e[k].rfd;
        struct epoll_event ev = {.events = EPOLLIN | EPOLLONESHOT,
                                 .data.u64 = pipe_event(i, p, gen)};
        int rc = fwd_read_pipe_some(f, k, LAUNCHER_PIPE_READ_MAX);
        atomic_fetch_add_explicit(&l->pipe_reads, 1, memory_order_relaxed);
        unsigned hold = atomic_load_explicit(&l->hold_reads_us, memory_order_relaxed);
        if (hold) /* a test's: the slot stays JOB_READING meanwhile */
            usleep(hold);
        int planted = rc == 0 ? planted_take(&l->fail_rearm) : 0;
        if (rc == 0 && (planted || epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)) {
            /* unwatched, the task would block on it: it fails */
            f->e[k].lost = planted ? planted : errno;
            rc = -1;
        }
        if (rc != 0) {
            epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
            fwd_close_pipe(f, k);
        }
    }
    atomic_store_explicit(&l->state[i], w, memory_order_release);
}

/* id in decimal into value (AFFINITY_ID_MAX bytes): a staged job's
 * PMC_AFFINITY, the CPU id its reaper's task gave up.  No printf: the
 * reaper is on the path of the start. */
static void launcher_put_id(char *value, int id)
{
    char d[AFFINITY_ID_MAX];
    int n = 0;
    do
        d[n++] = (char)('0' + id % 10);
    while ((id /= 10) > 0 && n < AFFINITY_ID_MAX - 1);
    for (int i = 0; i < n; i++)
        value[i] = d[n - 1 - i];
    value[n] = '\0';
}

/* Start staged job k on the CPU a task just gave up: its clock and its
 * record's start are its own start's. */
static void launcher_start_staged(struct launcher *l, uint32_t k, struct launcher_thread *self)
{
    struct launch_job *j = &l->jobs[k];
    clock_gettime(CLOCK_MONOTONIC, &j->started);
    j->output.record.start = pmc_epoch_s();
    j->chained = true;
    atomic_fetch_add_explicit(&l->staged_starts, 1, memory_order_relaxed);
    launcher_launch(l, k, self);
}

/* Job j's task ended with the wait status in j->end: its status as
 * decided so far (task_end_decide()) and its duration (to now). */
static void launcher_settle(struct launch_job *j)
{
    j->status = task_end_decide(&j->end).status;
    struct timespec ended;
    clock_gettime(CLOCK_MONOTONIC, &ended);
    j->duration = pmc_seconds_between(&j->started, &ended);
}

/* Job j's task failed with MSG_TASK_HOLD_ON_FAILURE (-m): no reaper starts
 * a staged job from now until the agent releases it (launcher_release()),
 * counted once per job (held_failure). */
static void launcher_count_hold(struct launcher *l, struct launch_job *j)
{
    if (j->hold_on_failure && j->status != 0 && !j->held_failure) {
        j->held_failure = true;
        launcher_hold(l);
    }
}

/* Job j's notes, -f/-F data and output block, after its task ended
 * (task_end_write()); a failure they make holds like any other. */
static void launcher_write(struct launcher *l, struct launch_job *j)
{
    j->output_rc =
        task_end_write(&j->end, &j->output, j->req.stderr_fd, j->time_limit_ms, &j->forwards,
                       &j->fwd_pack, &j->fwd_err, j->duration, &j->out_len, &j->err_len);
    j->output_errno = j->output_rc ? errno : 0;
    j->status = task_end_decide(&j->end).status;
    launcher_count_hold(l, j);
}

/* quiet_low without launcher_set_quiet_exits(): no ring holds as many */
#define QUIET_OFF UINT32_MAX

/* May the exit of job j, whose reaper started staged job handed - 1 (0:
 * none), leave the agent asleep (launcher_set_quiet_exits())? */
static bool launcher_exit_is_quiet(struct launcher *l, const struct launch_job *j, uint32_t handed)
{
    return handed && j->status == 0 && !j->wake_on_exit && !j->lingers &&
           !atomic_load_explicit(&l->wake_always, memory_order_relaxed) &&
           mpmc_ring_size(l->staged) > atomic_load_explicit(&l->quiet_low, memory_order_relaxed);
}

/* Hand slot i back to the agent, which the push wakes (but a quiet exit:
 * launcher_exit_is_quiet()). */
static void launcher_hand_back(struct launcher *l, uint32_t i, uint32_t handed)
{
    struct launch_job *j = &l->jobs[i];
    bool quiet = launcher_exit_is_quiet(l, j, handed); /* j is the agent's after the push */
    /* one-shot: the entry fired and is disabled; the close removes it (or
     * a spawning child's copy of the descriptor does, at its execve) */
    close(j->pidfd);    /* j->pidfd keeps the number: the agent may still read it */
    j->handed = handed; /* before the push: the agent reads it */
    push(l->exited, i);
    if (!quiet)
        mailbox_notify(l->wake);
}

/* Slot i's task exited (its pidfd is readable): end it as the agent does
 * (spawn_end_task(): its group's leftovers killed, its watchdog entry
 * cleared, reaped), write its output block, and hand it back through the
 * exited ring.  In its grace (a SIGTERM sent) only its first process is
 * reaped, and when its group has members left it goes back lingering, to
 * be finished by the agent (launcher_finish()).  A staged job it starts
 * may become the caller's own to wait for (launcher_launch()). */
static void launcher_reap(struct launcher *l, uint32_t i, struct launcher_thread *self)
{
    struct launch_job *j = &l->jobs[i];
    launcher_unwatch(l, i);
    launcher_unwatch_pipes(l, i); /* fwd_finish() drains and closes them */
    j->status = task_end_reap(&j->end, j->pid, j->pidfd, j->req.record_pgid, &j->lingers);
    if (j->lingers) {
        launcher_hand_back(l, i, 0);
        return;
    }
    launcher_settle(j);
    launcher_count_hold(l, j); /* its exit failed: before any staged start, on any slot */
    /* the CPU is free: the oldest staged job starts on it before this
     * task's output is written and the agent is woken, so that neither
     * delays it (the agent may take k's completion, even its exit, before
     * this exit: the loan is settled by handed whenever it comes) */
    uint32_t k;
    /* a held task (-m) may still fail after this start, on its forwards
     * (launcher_forward()) or its output (a full disk or $TMPDIR:
     * launcher_write()): its reaper starts nothing, the agent starts the
     * staged job once it has the result */
    bool hold = j->hold_on_failure;
    bool hand = !hold && atomic_load_explicit(&l->holds, memory_order_acquire) == 0 &&
                mpmc_ring_try_pop(l->staged, &k);
    if (hand) {
        struct launch_job *next = &l->jobs[k]; /* its CPU id is the one given up */
        next->first_id = j->first_id;
        if (next->affinity_value && j->first_id >= 0)
            launcher_put_id(next->affinity_value, j->first_id);
        launcher_start_staged(l, k, self);
    }
    launcher_write(l, j);
    launcher_hand_back(l, i, hand ? k + 1 : 0);
}

void launcher_finish(struct launcher *l, uint32_t i)
{
    struct launch_job *j = &l->jobs[i];
    launcher_settle(j);
    launcher_write(l, j);
    j->lingers = false;
}

void launcher_hold(struct launcher *l)
{
    atomic_fetch_add_explicit(&l->holds, 1, memory_order_acq_rel);
}

void launcher_release(struct launcher *l)
{
    atomic_fetch_sub_explicit(&l->holds, 1, memory_order_acq_rel);
}

/* Wait for work or exits: spin on the submit ring, then sleep in
 * epoll_wait.  The number of events in ev, 0 when work came during the
 * spin.  The sleepers count and the submitter's fence are the Dekker pair
 * of launcher_submit(). */
static int launcher_wait(struct launcher *l, struct epoll_event *ev)
{
    for (int k = 0; k < LAUNCHER_SPIN; k++)
        if (mpmc_ring_size(l->submitted) > 0)
            return 0;
    atomic_fetch_add_explicit(&l->sleepers, 1, memory_order_seq_cst);
    int n = 0;
    if (mpmc_ring_size(l->submitted) == 0 && !atomic_load_explicit(&l->stop, memory_order_seq_cst))
        n = epoll_wait(l->epfd, ev, LAUNCHER_EVENTS, -1);
    atomic_fetch_sub_explicit(&l->sleepers, 1, memory_order_relaxed);
    return n < 0 ? 0 : n; /* EINTR: look again */
}

/* Wait for slot i's task, this launcher's own (launcher_take_own()), in
 * waitid(2), as a spawner process's waitpid() does, and reap it (its exit
 * wakes the waiter on the CPU it last ran on: the task's own where the
 * launcher is bound, spawn_thread_pin()).
 * When waitid fails (not EINTR) the pool's epoll set watches it instead,
 * or the agent does (launcher_launch()'s failed watch). */
static void launcher_wait_own(struct launcher *l, struct launcher_thread *self)
{
    uint32_t i = self->own;
    struct launch_job *j = &l->jobs[i];
    siginfo_t si;
    int rc;
    do {
        memset(&si, 0, sizeof si);
        rc = waitid(P_PIDFD, (id_t)j->pidfd, &si, WEXITED | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    self->own = NONE_OWN;
    if (self->bound < 0)
        atomic_fetch_sub_explicit(&l->own_waiting, 1, memory_order_relaxed);
    if (rc == 0) {
        atomic_fetch_add_explicit(&l->own_waits, 1, memory_order_relaxed);
        launcher_reap(l, i, self);
        return;
    }
    uint32_t w = atomic_load_explicit(&l->state[i], memory_order_relaxed);
    int e = launcher_watch(l, i, JOB_GEN(w));
    if (e)
        launcher_unwatched(l, i, e);
}

static void *launcher_main(void *arg)
{
    struct launcher *l = arg;
    struct epoll_event ev[LAUNCHER_EVENTS];
    (void)spawn_thread_short_slice(); /* woken by exits: run at once (spawn.h) */
    uint32_t t = atomic_fetch_add_explicit(&l->started, 1, memory_order_relaxed);
    int cpu = l->pin_cpu[t], e;
    /* a thread that cannot bind runs as an unbound one, and its share of
     * the own waits (launcher_take_own()) goes unused */
    struct launcher_thread self = {.own = NONE_OWN, .bound = cpu >= 0 ? (int)t : -1};
    if (cpu >= 0 && (e = spawn_thread_pin(cpu)) != 0) {
        log_debug("launcher: cannot bind to CPU %d (%s); it runs unbound", cpu, strerror(e));
        self.bound = -1;
    }
    for (;;) {
        uint32_t i;
        /* submissions first: this launcher may have taken the work
         * eventfd's wake-up meant for them before it waits for its own */
        if (mpmc_ring_try_pop(l->submitted, &i)) {
            launcher_launch(l, i, &self);
            continue;
        }
        if (self.own != NONE_OWN) {
            launcher_wait_own(l, &self);
            continue;
        }
        if (atomic_load_explicit(&l->stop, memory_order_acquire))
            return NULL; /* launcher_destroy(): nothing is out */
        int n = launcher_wait(l, ev);
        for (int k = 0; k < n; k++) {
            uint64_t d = ev[k].data.u64, v;
            if (d == LAUNCHER_WORK_EVENT) { /* reset it; another launcher may have */
                if (read(l->work_efd, &v, sizeof v) < 0 && errno != EAGAIN)
                    continue;
            } else if (d == LAUNCHER_STOP_EVENT) {
                continue;
            } else if (d >> 32) {
                uint32_t slot, pipe, gen;
                pipe_event_parts(d, &slot, &pipe, &gen);
                launcher_read_pipe(l, slot, pipe, gen);
            } else {
                launcher_reap(l, (uint32_t)d, &self);
            }
        }
    }
}

static void launcher_free(struct launcher *l)
{
    if (l->epfd >= 0)
        close(l->epfd);
    if (l->work_efd >= 0)
        close(l->work_efd);
    if (l->stop_efd >= 0)
        close(l->stop_efd);
    mpmc_ring_destroy(l->submitted);
    mpmc_ring_destroy(l->completed);
    mpmc_ring_destroy(l->unwatched);
    mpmc_ring_destroy(l->exited);
    mpmc_ring_destroy(l->staged);
    for (uint32_t i = 0; l->jobs && i < l->nslots; i++)
        msg_free(&l->jobs[i].fwd_pack);
    free(l->state);
    free(l->jobs);
    free(l);
}

/* The rings, the state array and the pool's epoll set with its work
 * eventfd.  0, or -1 with err. */
static int launcher_init(struct launcher *l, uint32_t nslots, struct pmc_error *err)
{
    l->epfd = l->work_efd = l->stop_efd = -1;
    if (!(l->jobs = calloc(nslots, sizeof *l->jobs)) ||
        !(l->state = calloc(nslots, sizeof *l->state)) ||
        !(l->submitted = mpmc_ring_create(nslots)) || !(l->completed = mpmc_ring_create(nslots)) ||
        !(l->unwatched = mpmc_ring_create(nslots)) || !(l->exited = mpmc_ring_create(nslots)) ||
        !(l->staged = mpmc_ring_create(nslots))) {
        pmc_errorf(err, "launcher: out of memory");
        return -1;
    }
    struct epoll_event work = {.events = EPOLLIN, .data.u64 = LAUNCHER_WORK_EVENT};
    struct epoll_event stop = {.events = EPOLLIN, .data.u64 = LAUNCHER_STOP_EVENT};
    if ((l->epfd = epoll_create1(EPOLL_CLOEXEC)) < 0 ||
        (l->work_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        (l->stop_efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->work_efd, &work) < 0 ||
        epoll_ctl(l->epfd, EPOLL_CTL_ADD, l->stop_efd, &stop) < 0) {
        pmc_errorf(err, "launcher: cannot create its epoll set: %m");
        return -1;
    }
    l->nslots = nslots;
    return 0;
}

/* The k-th thread's CPU: the k-th of pin's CPUs, -1 past them or without pin. */
static void launcher_plan_pins(struct launcher *l, uint32_t nthreads, const cpu_set_t *pin)
{
    uint32_t k = 0;
    for (int cpu = 0; pin && cpu < CPU_SETSIZE && k < nthreads; cpu++)
        if (CPU_ISSET(cpu, pin))
            l->pin_cpu[k++] = cpu;
    l->nbound = k;
    for (; k < LAUNCHER_MAX_THREADS; k++)
        l->pin_cpu[k] = -1;
}

struct launcher *launcher_create(uint32_t nthreads, uint32_t nslots, struct mailbox *wake,
                                 const cpu_set_t *pin, struct pmc_error *err)
{
    if (nthreads < 1 || nthreads > LAUNCHER_MAX_THREADS || nslots < 1) {
        errno = EINVAL;
        pmc_errorf(err, "launcher: %u threads for %u slots", nthreads, nslots);
        return NULL;
    }
    struct launcher *l = calloc(1, sizeof *l);
    if (!l) {
        pmc_errorf(err, "launcher: out of memory");
        return NULL;
    }
    atomic_init(&l->quiet_low, QUIET_OFF);
    if (launcher_init(l, nslots, err) < 0) {
        launcher_free(l);
        return NULL;
    }
    l->wake = wake;
    launcher_plan_pins(l, nthreads, pin);
    for (; l->nthreads < nthreads; l->nthreads++) {
        int rc = pthread_create(&l->threads[l->nthreads], NULL, launcher_main, l);
        if (rc != 0) {
            errno = rc;
            pmc_errorf(err, "launcher: cannot start a thread: %m");
            launcher_destroy(l);
            return NULL;
        }
        pthread_setname_np(l->threads[l->nthreads], "pmc-launch"); /* top -H, perf, gdb */
    }
    return l;
}

struct launch_job *launcher_job(struct launcher *l, uint32_t i)
{
    return i < l->nslots ? &l->jobs[i] : NULL;
}

void launcher_submit(struct launcher *l, uint32_t i)
{
    push(l->submitted, i); /* its state is JOB_IDLE: nobody watches a job the agent holds */
    /* the push, then the sleepers: launcher_wait() counts itself, then
     * looks at the ring */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&l->sleepers, memory_order_relaxed) > 0) {
        uint64_t one = 1;
        if (write(l->work_efd, &one, sizeof one) < 0) {
            /* EAGAIN only (the count is at its maximum): already readable */
        }
    }
}

void launcher_stage(struct launcher *l, uint32_t i)
{
    push(l->staged, i);
}

bool launcher_take_staged(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->staged, i);
}

void launcher_set_own_waits(struct launcher *l, uint32_t n)
{
    atomic_store_explicit(&l->own_waits_max, n < l->nthreads ? n : l->nthreads - 1,
                          memory_order_relaxed);
}

void launcher_set_quiet_exits(struct launcher *l, uint32_t low)
{
    atomic_store_explicit(&l->quiet_low, low < QUIET_OFF ? low : QUIET_OFF - 1,
                          memory_order_relaxed);
}

uint64_t launcher_own_waits(const struct launcher *l)
{
    return atomic_load_explicit(&l->own_waits, memory_order_relaxed);
}

uint64_t launcher_staged_starts(const struct launcher *l)
{
    return atomic_load_explicit(&l->staged_starts, memory_order_relaxed);
}

int launcher_take(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->completed, i) ? 1 : 0;
}

int launcher_take_unwatched(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->unwatched, i) ? 1 : 0;
}

int launcher_take_exited(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->exited, i) ? 1 : 0;
}

/* Signal slot i's watched task, marking it timed out first when asked
 * (the reaper reads the mark after launcher_unwatch()). */
static bool launcher_signal_job(struct launcher *l, uint32_t i, int sig, bool time_out)
{
    uint32_t w = i < l->nslots ? launcher_claim(l, i, JOB_SIGNALLING, JOB_ANY_GEN) : 0;
    if (w == 0)
        return false;
    task_end_signal(&l->jobs[i].end, l->jobs[i].pid, l->jobs[i].pidfd, sig, time_out);
    atomic_store_explicit(&l->state[i], w, memory_order_release);
    return true;
}

bool launcher_signal(struct launcher *l, uint32_t i, int sig)
{
    return launcher_signal_job(l, i, sig, false);
}

bool launcher_time_out(struct launcher *l, uint32_t i)
{
    return launcher_signal_job(l, i, SIGTERM, true);
}

void launcher_wake_always(struct launcher *l)
{
    atomic_store_explicit(&l->wake_always, true, memory_order_seq_cst);
}

void launcher__fail_next_watch(struct launcher *l, int err)
{
    atomic_store_explicit(&l->fail_watch, err, memory_order_relaxed);
}

void launcher__fail_next_rearm(struct launcher *l, int err)
{
    atomic_store_explicit(&l->fail_rearm, err, memory_order_relaxed);
}

void launcher__hold_reads(struct launcher *l, unsigned us)
{
    atomic_store_explicit(&l->hold_reads_us, us, memory_order_relaxed);
}

void launcher__stale_pipe_event(struct launcher *l, uint32_t i, uint32_t p)
{
    if (i >= l->nslots)
        return;
    uint32_t w = atomic_load_explicit(&l->state[i], memory_order_acquire);
    launcher_read_pipe(l, i, p, (JOB_GEN(w) - 1) & JOB_GEN_MASK);
}

uint64_t launcher__pipe_reads(const struct launcher *l)
{
    return atomic_load_explicit(&l->pipe_reads, memory_order_relaxed);
}

uint32_t launcher_default_threads(uint32_t cpus, uint32_t usable_cpus)
{
    if (usable_cpus <= 1)
        return 0;
    uint32_t n = cpus < usable_cpus ? cpus : usable_cpus;
    if (n < LAUNCHER_MIN_CPUS)
        return cpus < LAUNCHER_MAX_THREADS ? cpus + 1 : 0;
    n /= LAUNCHER_CPUS_PER_THREAD;
    return n < LAUNCHER_MAX_THREADS ? n : LAUNCHER_MAX_THREADS;
}

uint32_t launcher_threads(const struct launcher *l)
{
    return l->nthreads;
}

uint32_t launcher_pending(const struct launcher *l)
{
    return mpmc_ring_size(l->completed) + mpmc_ring_size(l->unwatched) + mpmc_ring_size(l->exited);
}

uint64_t launcher_cpu_ns(const struct launcher *l)
{
    uint64_t ns = 0;
    for (uint32_t i = 0; l && i < l->nthreads; i++)
        ns += pmc_thread_cpu_ns_of(l->threads[i]);
    return ns;
}

void launcher_destroy(struct launcher *l)
{
    if (!l)
        return;
    atomic_store_explicit(&l->stop, true, memory_order_seq_cst);
    uint64_t one = 1; /* level-triggered and never read: every launcher sees it */
    if (l->nthreads > 0 && write(l->stop_efd, &one, sizeof one) < 0) {
        /* cannot fail: a fresh eventfd written once */
    }
    for (uint32_t t = 0; t < l->nthreads; t++)
        pthread_join(l->threads[t], NULL);
    launcher_free(l);
}
