/* launcher.h - a node agent's pool of launcher threads.
 *
 * Starting a task is the one slow step of the agent's loop: spawn_task()
 * keeps its calling thread suspended until the child has called execve
 * (clone(CLONE_VM | CLONE_VFORK), spawn.h), tens of microseconds in which
 * one agent thread can do nothing else.  With a pool, the agent thread
 * prepares a task (its slot, argv, environment, descriptors, CPU set),
 * copies the spawn request into the pool's job of that slot and submits the
 * slot; a launcher thread takes it, calls spawn_task() and hands the outcome
 * back.  The agent goes on receiving, reaping and reporting while the
 * launchers spawn, and several launchers spawn at once on a many-core node.
 *
 * Queues: the submit queue and the completion queue are bounded lock-free
 * MPMC rings of slot indices (sched/mpmc_ring.h, Vyukov's algorithm); the
 * jobs are a fixed array indexed by slot, written by the agent before the
 * submit and by a launcher before the completion (the rings' release and
 * acquire order those writes).  No lock and no allocation per task.
 *
 * Quiet launches (launch_job.quiet), for tasks that need nothing from the
 * agent as they start: the launcher completes the job without waking the
 * agent, then adds the child's pidfd to the agent's epoll set itself.  The
 * agent takes the completion at its next wake-up, at the latest for the
 * child's exit, which comes after the completion was pushed (push, then
 * epoll_ctl).  With several launchers the ring can hold a pushed
 * completion back for a moment, while another launcher is between claiming
 * an earlier cell and filling it; the agent then meets the exit first and
 * looks again at its next pass (the event is level-triggered): a short
 * busy wait, not a lost task.
 * The agent, the one thread every task of a node passes through, skips a
 * wake-up (and its eventfd read) per task, and the epoll_ctl moves to the
 * launcher: 28-29 us of its CPU per /bin/true task instead of 36-38 with
 * one launcher on 2 CPUs (docs/performance.md section 13).  When that epoll_ctl fails (ENOMEM,
 * ENOSPC) the slot comes back through launcher_take_unwatched() and the agent is woken.
 *
 * Sleeping: idle launchers wait on a POSIX semaphore (a futex: sem_post
 * makes a system call only when a launcher sleeps), after a short spin.
 * The agent sleeps in epoll_wait on its mailbox's eventfd; a launcher that
 * completed a job wakes it only when its `sleeping` flag is set, with the
 * mailbox's Dekker-style handshake: the launcher pushes, then
 * mailbox_notify(); the agent makes launcher_pending() part of its
 * mailbox's watched channel (mailbox_watch), so mailbox_prepare_sleep()
 * checks it after the fence.
 *
 * Tasks die with the thread that spawned them (PR_SET_PDEATHSIG, spawn.c),
 * so the pool lives until every task it started has been reaped:
 * launcher_destroy() comes after the agent's last task.
 *
 * Thread-safety: launcher_job(), launcher_submit(), launcher_take() and
 * launcher_pending() belong to the one agent thread; the pool's threads are
 * internal.  launcher_create()/launcher_destroy() run on the thread that
 * owns the agent.
 */
#ifndef PMC_LAUNCHER_H
#define PMC_LAUNCHER_H

#include <sched.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/mailbox.h"
#include "engine/spawn.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAUNCHER_MAX_THREADS 64
#define LAUNCHER_CPUS_PER_THREAD 8 /* CPUs one task-starting thread keeps busy */

/* The pool size a node of cpus CPUs gets without --launch-threads (the
 * engine passes the smaller of its --host-cpus and the CPUs it may run on,
 * since launchers need real CPUs): one
 * launcher per LAUNCHER_CPUS_PER_THREAD CPUs, so 0 (the agent thread starts
 * every task) below 8 CPUs, 1 at 8-15, 8 at 64, at most
 * LAUNCHER_MAX_THREADS.  Why 8, measured on the 2-core Intel VM of
 * docs/performance.md with /bin/true, the shortest task: a thread that
 * starts a task is held ~51 us in clone until the child's exec, and the
 * agent thread spends ~52 us of CPU per task in all (the clone's share
 * included), so it is busy ~90 us per task, while the task holds a CPU
 * ~680 us: one thread keeps ~8 CPUs busy.  Below that a pool only adds two
 * cross-thread wake-ups per task (on 2 CPUs, 1 and 2 launchers start 1.9k
 * and 2.2k tasks/s against 2.6k without).  With one launcher the agent
 * thread keeps ~28 us of CPU per task (reaping, capture, records, results;
 * "Engine CPU" at the end of a run; 28-29 us with quiet launches against
 * 36-38 us without on the 2-core AMD VM), so past ~20 CPUs of tasks that
 * short (570-650 us of CPU each) it is the limit, whatever the pool;
 * bench/run prints that reach ("spawn: CPUs one node agent keeps busy").  A model,
 * not a many-core measurement: none of our sessions had more than 2 cores.
 * Pure. */
uint32_t launcher_default_threads(uint32_t cpus);
#define LAUNCHER_MAX_FORWARDS 64 /* forward descriptors a job can carry */

/* One slot's launch: the request (its pointers must stay valid until the
 * job completes; forward_fds and affinity may point at the copies below),
 * and the outcome. */
struct launch_job {
    struct spawn_request req;
    int forward_fds[LAUNCHER_MAX_FORWARDS];
    cpu_set_t affinity;
    /* in: a quiet launch (see above): on success the launcher adds the
     * pidfd to watch_epfd (EPOLLIN, data watch_data) right after the
     * completion and does not wake `wake`; when that epoll_ctl fails it
     * reports the slot through launcher_take_unwatched() and wakes it. */
    bool quiet;
    int watch_epfd;
    uint64_t watch_data;
    pid_t pid;     /* out: the child, when err == 0 */
    int pidfd;     /* out */
    int err;       /* out: spawn_task()'s errno, 0 on success */
    int watch_err; /* out: the failed epoll_ctl's errno (launcher_take_unwatched) */
};

struct launcher;

/* Start nthreads (1..LAUNCHER_MAX_THREADS) launcher threads for slots
 * 0..nslots-1; completions wake `wake` (the agent's mailbox).  NULL with
 * err (EINVAL, ENOMEM, or pthread_create's error). */
struct launcher *launcher_create(uint32_t nthreads, uint32_t nslots, struct mailbox *wake,
                                 struct pmc_error *err);

/* The job of slot i, to fill before launcher_submit(i); NULL when i >=
 * nslots (launch that one on the calling thread). */
struct launch_job *launcher_job(struct launcher *l, uint32_t i);

/* Hand slot i's job to a launcher.  Never fails (the rings hold every
 * slot); at most one submit per slot until launcher_take() returned it. */
void launcher_submit(struct launcher *l, uint32_t i);

/* A completed slot into *i: 1, or 0 when none is ready. */
int launcher_take(struct launcher *l, uint32_t *i);

/* A quiet launch whose pidfd could not be watched into *i (its job's
 * watch_err says why): 1, or 0 when none.  Its completion was pushed
 * before, but may not be poppable yet (see above): the caller takes it
 * first. */
int launcher_take_unwatched(struct launcher *l, uint32_t *i);

/* Completions ready or being pushed (the agent checks before sleeping). */
uint32_t launcher_pending(const struct launcher *l);

/* CPU time the pool's threads have used so far, nanoseconds, summed
 * (pthread_getcpuclockid; a thread that cannot be asked counts 0).  Call
 * before launcher_destroy(); any thread. */
uint64_t launcher_cpu_ns(const struct launcher *l);

/* Stop and join the threads, free.  No job may be outstanding.  NULL is a
 * no-op. */
void launcher_destroy(struct launcher *l);

#ifdef __cplusplus
}
#endif
#endif
