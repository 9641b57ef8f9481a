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
 * Reaped launches (launch_job.pool_reaps; every launch but those of an
 * abort): the launcher completes the job without waking the agent (unless
 * wake_on_start: the master wants a STARTED notice, which the agent sends
 * as it takes the completion) and adds the task's -f pipes, then its
 * pidfd, to the pool's own epoll set (one-shot each; launch_job.forwards).
 * A pipe is read by whichever launcher is free while the task runs (so a
 * task writing more than a pipe holds does not wait for its end), then
 * armed again; a per-slot state
 * (JOB_READING) keeps the reaper and signals out meanwhile; -F files are
 * read by the reaper after a 0 exit.  The
 * agent keeps a task's time limit (armed as it hands the launch over and
 * looked at again when it passes: engine/node/agent_limits.c) and ends it with
 * launcher_time_out(), whose mark the reaper turns into the time-out
 * status and note.  When the
 * task exits, a launcher reaps it as the agent would (kill what it left in
 * its process group while the zombie holds the id, clear its watchdog
 * entry, waitid, close the pidfd: spawn_end_task()) and hands the slot
 * back through launcher_take_exited() with the wait status and the
 * duration, waking the agent (in the grace of a SIGTERM it reaps the first
 * process alone, and a job whose group still has members comes back
 * lingering: the agent waits for the group and finishes the job with
 * launcher_finish(); engine/node/agent_linger.c); the launcher also writes the task's output block
 * (its captured stdout, its record, its stderr: taskio_write_block(), whose place in the rank's
 * files is reserved atomically).  The agent, the one thread every task of a node passes through,
 * then only reports the result and frees the slot: per /bin/true task it no longer makes the two
 * waitid, the kill, the epoll_ctl pair, the close, the two fstat and the record's pwrite
 * (docs/performance-history.md section 14 has the measurements).  Signals to such a task (an abort)
 * go through launcher_signal(), which a per-slot state orders against the reaper, so that no signal
 * reaches a process group whose id the reaper let go.  When the pidfd or a pipe cannot be added
 * (ENOMEM, ENOSPC) the slot comes back through launcher_take_unwatched() and the agent kills and
 * reaps it through the pidfd.  The completion is pushed before the pidfd is watched, but with
 * several launchers the ring can hold a pushed completion back for a moment (another launcher is
 * between claiming an earlier cell and filling it), so an exited or
 * unwatched slot may come before its completion: the agent takes the
 * completion first.
 * Staged launches (launcher_stage()): when every CPU of the node is busy
 * and tasks wait, the agent prepares the next one and stages it in a
 * third ring instead of submitting it.  The launcher that reaps any task
 * (but one held on failure under -m, or while a held failure is
 * counted: launcher_hold()) then pops a staged job and starts it at once,
 * on the CPU the ended task gave up, before it writes the ended task's output and hands its exit
 * back (launch_job.handed tells the agent), so the agent may take the
 * staged job's completion, even its exit, before that exit (2-core AMD
 * VM, --host-cpus 2, 10,000 /bin/true: --threads 1 ran 2,585-2,761
 * tasks/s against 2,163-2,501 with the start after the hand-back); the
 * agent starts staged jobs itself when CPUs free up another
 * way (launcher_take_staged()).  A task's end then costs no round trip
 * through the agent: on a 16-core VM, 16 /bin/true at once, 8 launchers
 * ran 19.8-22.2k tasks/s with it against 18.1-19.4k without
 * (docs/performance-history.md section 17).  Staged jobs are first in, first out,
 * and every one fits in what any ended task frees; the agent stages only
 * while the node runs no more tasks than its usable CPUs
 * (engine/node/agent_stage.c).
 * Sleeping: an idle launcher spins on the submit ring for a moment, then
 * sleeps in epoll_wait on the pool's set, where exits and a work eventfd
 * wake it; launcher_submit() writes the eventfd only while a launcher
 * sleeps (a counter and a fence, the Dekker pattern).
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
 * Thread-safety: launcher_job(), launcher_submit(), the launcher_take*()
 * calls, launcher_signal() and launcher_pending() belong to the one agent
 * thread; the pool's threads are
 * internal.  launcher_create()/launcher_destroy() run on the thread that
 * owns the agent.
 */
#ifndef PMC_LAUNCHER_H
#define PMC_LAUNCHER_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "engine/exec/forward.h"
#include "engine/transport/mailbox.h"
#include "engine/exec/spawn.h"
#include "engine/exec/task_end.h"
#include "io/dag.h"
#include "io/error.h"
#include "io/taskio.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LAUNCHER_MAX_THREADS 64
#define LAUNCHER_CPUS_PER_THREAD 2 /* CPUs per launcher thread by default */
#define LAUNCHER_MIN_CPUS 8        /* launchers to spare below this many CPUs */

/* The pool size a node gets without --launch-threads, from its CPUs (the
 * node's --host-cpus or detected count: at most that many tasks run at
 * once) and the CPUs this process may run on (usable_cpus, >= 1):
 *   - one usable CPU: none (the agent thread starts every task; launchers
 *     there only take turns on the one CPU);
 *   - fewer than LAUNCHER_MIN_CPUS of the smaller of the two: cpus + 1,
 *     launchers to spare (all but one wait for the task they started,
 *     as a spawner process waits for its child, the bound ones first:
 *     launcher_set_own_waits(); the agent binds them one per CPU:
 *     launcher_create()'s pin),
 *     or none where cpus + 1 passes LAUNCHER_MAX_THREADS;
 *   - from LAUNCHER_MIN_CPUS on: one launcher per LAUNCHER_CPUS_PER_THREAD
 *     of the smaller of the two (4 at 8-9, 8 at 16, 32 at 64), at most
 *     LAUNCHER_MAX_THREADS, none of them to spare.
 *
 * Below 8 CPUs, measured on the 2-core Intel VM (docs/performance-history.md
 * section 26; 10,000 /bin/true, tasks/s against single-threaded spawner
 * processes with one child each, as many as tasks at once, 8 for 4 at
 * once; medians of 4-6 alternating rounds):
 * 2 at once on 2 CPUs 0.900 of that ceiling with 3 launchers against
 * 0.825 with none; 4 at once on 2 CPUs 0.912 against 0.879 (5 launchers);
 * 8 at once 0.943 against 0.922 (9); seismology's 1,001 short tasks on 8
 * slots 0.875 of the makespan with none.  On 1 CPU 2 launchers (1 at once)
 * gave 0.937 against 0.929, and 9 (8 at once) 0.929 against 0.953,
 * hence none there.  Nodes of 3 to 7 CPUs were not measured.
 *
 * From 8 CPUs on, measured on a 16-core Intel VM (section 16;
 * /bin/true, 16 at once, tasks/s): 5.9k with no pool, 6.0k with 1
 * launcher, 10.1k with 2, 13.4k-16.1k with 4 (median 14.4k over three
 * measurements), 15.0k-15.9k with 8 (median 15.7k), 14.2k with 12, 14.8k
 * with 16; with 64 in flight 15.8k with 4, 18.5k with 8; 16
 * single-threaded spawner processes reach 19.3k-20.0k.  A later run (3
 * rounds each, against 23.0-23.9k for 16 spawners): 18.7k with 4, 18.4k
 * with 8.  Few runs each, so one per 2 CPUs is the pick of a noisy plateau
 * from 4 to 16 launchers, where a pool too small costs far more than one
 * too large (a launcher that waits costs nothing but its sleep).
 * Launchers to spare were not measured there.
 *
 * Why a pool: a thread that starts a task is held in clone until the
 * child's exec, mostly off its CPU, and spends CPU of its own on the
 * launch, the reap and the output block.  On the 2-core AMD VM (section
 * 15): 146-151 us in clone per spawn, 112-116 us of it off the CPU, and
 * 41-48 us of launcher CPU per task on a busy node, against a /bin/true
 * task's ~560 us of CPU.  A pool without launchers to spare adds two
 * cross-thread hand-offs per task, which on 2 CPUs cost more than they
 * save (1 and 2 launchers started 2,221 and 2,594 tasks/s against 2,905
 * without); with launchers to spare a task's exit wakes its own launcher,
 * which starts the next staged task on that CPU, and the agent only now
 * and then.
 *
 * The agent thread, which every task of a node passes through, spent
 * 10-14 us of CPU per task on the 16-core VM with 16 in flight and 4.7 us
 * with 128 (a reach of ~150 CPUs of /bin/true; "Engine CPU" at the end of
 * a run, and bench/run's "spawn: CPUs one node agent keeps busy"), ~28 us
 * on 2 cores with one launcher and 2 in flight, where each exit wakes it
 * at once (spawn_thread_short_slice()).  Past 16 cores nothing was
 * measured.  Pure. */
uint32_t launcher_default_threads(uint32_t cpus, uint32_t usable_cpus);
#define LAUNCHER_MAX_FORWARDS DAG_MAX_PIPES /* forward descriptors a job can carry */

/* One slot's launch: the request (its pointers must stay valid until the
 * job completes; forward_fds and affinity may point at the copies below),
 * and the outcome. */
struct launch_job {
    struct spawn_request req;
    int forward_fds[LAUNCHER_MAX_FORWARDS];
    cpu_set_t affinity;
    /* in: a reaped launch (see above): on success the pool watches and
     * reaps the task, writes its output block (taskio_write_block(): the
     * block's strings and files must stay valid until the slot comes back
     * from launcher_take_exited()), and hands it back */
    bool pool_reaps;
    /* in, reaped launches: wake the agent when the task has started (its
     * completion), for a STARTED notice; otherwise only its exit does */
    bool wake_on_start;
    /* in, reaped launches: its reaper starts no staged job on the CPU it
     * gave up (MSG_TASK_HOLD_ON_FAILURE: a failure, also one that its
     * forwards or its output make after its exit, holds the node's starts
     * until the master answers; the agent starts the staged job when it
     * has the result and no hold) */
    bool hold_on_failure;
    /* in, reaped launches: its exit always wakes the agent, also when
     * quiet exits are on (launcher_set_quiet_exits()): its result releases
     * children, or holds the node's starts */
    bool wake_on_exit;
    /* out: it failed so (also a 0 exit its forwards or output turned into
     * 256): its
     * reaper counted it in the pool's holds (launcher_hold()), which the
     * agent releases when the master answers (launcher_release()); the
     * agent sets false at each launch */
    bool held_failure;
    /* in, reaped launches: the task's time limit (0: none), for the note
     * that launcher_time_out() makes the reaper write to its stderr */
    uint32_t time_limit_ms;
    /* what happened to the task (the agent zeroes it at each launch): its
     * wait status, launcher_time_out()'s mark, the last signal
     * launcher_signal() or launcher_time_out() sent (after a SIGTERM its
     * reaper kills nothing: spawn_reap_leader()), its lost forwards and
     * output (task_end.h) */
    struct task_end end;
    /* out: its first process ended in its grace, leaving members in its
     * group: the job came back through launcher_take_exited() with only
     * its status set, and the agent waits for the group to end or the
     * grace to pass, then calls launcher_finish() */
    bool lingers;
    struct taskio_block output;
    struct timespec started; /* in: CLOCK_MONOTONIC at the start (the record's duration) */
    pid_t pid;               /* out: the child, when err == 0 */
    int pidfd;               /* out; a reaped launch's is the pool's (closed when reaped) */
    int err;                 /* out: spawn_task()'s errno, 0 on success */
    int watch_err;           /* out: the failed epoll_ctl's errno (launcher_take_unwatched) */
    /* out, reaped launches: */
    int status;             /* the status task_end_decide() gives it */
    double duration;        /* seconds from started to the reap */
    int output_rc;          /* taskio_write_block()'s result ... */
    int output_errno;       /* ... and its errno when not 0 */
    off_t out_len, err_len; /* what the capture files held (taskio_write_block()) */
    /* a reaped launch: slot index + 1 of the staged job its reaper started
     * on the CPU this task gave up (launcher_stage()), 0 when none */
    uint32_t handed;
    /* in: the lowest CPU id of the task (PMC_AFFINITY), -1 when none; a
     * staged job started by a reaper takes its reaper's (the CPU given up)
     * and writes it into its affinity_value (PMC_AFFINITY's value in its
     * environment, AFFINITY_ID_MAX bytes, NULL when it has none) */
    int first_id;
    char *affinity_value;
    /* out: started by the reaper of another task, which then set started
     * and output.record.start (a staged job's own start, not its staging) */
    bool chained;
    /* in, reaped launches (last: the coldest fields; fwd_err is the
     * largest): the task's -f pipes and -F files (engine/exec/forward.h), or n
     * 0.  A copy of the agent's struct: its entries (forwards.e) are the
     * agent's, lent until the slot comes back from launcher_take_exited()
     * (the agent closes its write ends when it takes the completion, a
     * field the pool never touches; nothing waits for their end of file).
     * The pool reads the pipes while the task runs; after the exit the
     * reaper drains and closes them and, after a 0 exit, reads and deletes
     * the files (fwd_finish()) before it writes the output block, whose
     * status is then 256 when one cannot be forwarded, as on the agent's
     * own path */
    struct fwd_task forwards;
    struct msgbuf fwd_pack;   /* out: their data (msg_pack_fwd_data blocks); the pool's storage */
    struct pmc_error fwd_err; /* out: why, when end.forwards_lost */
};

struct launcher;

/* Start nthreads (1..LAUNCHER_MAX_THREADS) launcher threads for slots
 * 0..nslots-1; completions wake `wake` (the agent's mailbox).  pin (read
 * before the call returns; NULL: none bound): the k-th thread binds itself
 * to the k-th CPU of pin (spawn_thread_pin(), whose children get their CPUs
 * back), threads past pin's CPUs stay unbound; the agent pins its
 * launchers to spare when its node has every CPU the process may run on
 * (docs/performance-history.md section 27).  A thread that
 * cannot bind runs unbound (a -v line says so).  NULL with err (EINVAL,
 * ENOMEM, or pthread_create's error). */
struct launcher *launcher_create(uint32_t nthreads, uint32_t nslots, struct mailbox *wake,
                                 const cpu_set_t *pin, struct pmc_error *err);

/* The job of slot i, to fill before launcher_submit(i); NULL when i >=
 * nslots (launch that one on the calling thread). */
struct launch_job *launcher_job(struct launcher *l, uint32_t i);

/* Hand slot i's job to a launcher.  Never fails (the rings hold every
 * slot); at most one submit per slot until launcher_take() returned it. */
void launcher_submit(struct launcher *l, uint32_t i);

/* Stage slot i's filled job: the next launcher to reap a task starts it
 * on that task's CPU (first in, first out; see above).  Every staged job
 * must fit in what any reaped launch frees: one CPU, no memory or GPU, no
 * CPU binding.  Never fails; at most one submit or stage per slot until
 * launcher_take() returned it, or launcher_take_staged() handed it back
 * (then it may be staged again).  Agent thread. */
void launcher_stage(struct launcher *l, uint32_t i);

/* The oldest staged job not yet started into *i (the caller submits it,
 * cancels it, or stages it again: engine/node/agent_stage.c reorders them so):
 * true, or false when none.  Agent thread. */
bool launcher_take_staged(struct launcher *l, uint32_t *i);

/* Staged jobs the pool's reapers started so far.  Any thread. */
uint64_t launcher_staged_starts(const struct launcher *l);

/* A completed slot into *i: 1, or 0 when none is ready. */
int launcher_take(struct launcher *l, uint32_t *i);

/* A reaped launch whose pidfd or pipes could not be watched into *i (its job's
 * watch_err says why; the caller kills and reaps it through the pidfd): 1,
 * or 0 when none.  Its completion was pushed before, but may not be
 * poppable yet (see above): the caller takes it first. */
int launcher_take_unwatched(struct launcher *l, uint32_t *i);

/* A reaped launch whose task ended into *i (its job's status, duration,
 * output_rc and capture sizes say how; its pidfd is closed): 1, or 0 when none.  As with
 * launcher_take_unwatched(), its completion may not be poppable yet. */
int launcher_take_exited(struct launcher *l, uint32_t *i);

/* A failure that holds this node's starts (-m, MSG_TASK_HOLD_ON_FAILURE)
 * happened: from now on no reaper starts a staged job, on any slot, until
 * as many launcher_release() calls as launcher_hold() calls and held
 * reaps (launch_job.held_failure) have come.  A reaper counts its own
 * task's failure as soon as it knows it, before it decides on a staged
 * start, so another slot's reaper that looks after that starts nothing
 * (before, it could start one until the agent had taken the failure and
 * taken the staged jobs back).  launcher_hold(): the agent, for a held
 * failure it found itself (a launch that could not exec); any thread. */
void launcher_hold(struct launcher *l);

/* The master answered one counted held failure (RESUME): reapers may
 * start staged jobs again once no hold is counted.  Agent thread. */
void launcher_release(struct launcher *l);

/* Finish slot i's job that came back lingering (launch_job.lingers): its
 * group has ended, or was killed at the end of its grace.  Does what its
 * reaper would have done: the time-out status and note, the duration (to
 * now), the -f/-F data, the output block (output_rc, output_errno,
 * out_len, err_len); lingers becomes false.  Agent thread. */
void launcher_finish(struct launcher *l, uint32_t i);

/* Slot i's reaped launch passed its time limit: mark it timed out and
 * send SIGTERM to its process group, unless a launcher has begun to reap
 * it (it ended on its own: false, nothing marked).  The reaper of a
 * timed-out task writes "pmc-hybrid: task NAME exceeded its time limit of
 * S s" to its stderr and reports TASK_TIMEOUT_STATUS with timed_out set,
 * the record included (spawn_timed_out()).  Agent thread. */
bool launcher_time_out(struct launcher *l, uint32_t i);

/* Send sig to the process group of slot i's reaped launch, unless a
 * launcher has begun to reap it (then what the group left was killed
 * with SIGKILL, and its id may already be reused): true when sent.
 * Only after the slot's completion was taken. */
bool launcher_signal(struct launcher *l, uint32_t i, int sig);

/* From now on every completion wakes the agent, reaped launches' too: an
 * abort, when a task that starts must be signalled at once (its grace
 * period runs from the abort).  Idempotent. */
void launcher_wake_always(struct launcher *l);

/* Tests: the next reaped launch fails to be watched with errno err, as if
 * its pidfd could not be added (its -f pipes, added before, are taken out
 * of the set again). */
void launcher__fail_next_watch(struct launcher *l, int err);

/* Tests: the next pipe read that succeeds fails to arm the pipe again with
 * errno err, as if epoll_ctl(EPOLL_CTL_MOD) had failed: the pipe is closed
 * and marked lost (fwd_entry.lost), so its task fails unless it failed
 * already. */
void launcher__fail_next_rearm(struct launcher *l, int err);

/* Tests: every pipe read from now on keeps its slot JOB_READING for us
 * microseconds more (0: no more), so that a signal or a reap meets a read
 * under way; and the pipe reads done so far.  Any thread. */
void launcher__hold_reads(struct launcher *l, unsigned us);
uint64_t launcher__pipe_reads(const struct launcher *l);

/* Tests: hand the pool a pipe event of slot i's pipe number p from the slot's
 * previous launch (its generation one below the current one's), as a
 * launcher that took the event from epoll before the reap would handle it
 * after the slot's next launch: it must find the slot watched for another
 * launch and do nothing (no read, no re-arm).  From the test's thread,
 * while the slot's task runs. */
void launcher__stale_pipe_event(struct launcher *l, uint32_t i, uint32_t p);

/* Let up to n launchers (at most all but one) each wait for a reaped
 * launch they started, without -f pipes, themselves: in waitid(2), as a
 * spawner process waits in waitpid() (a bound launcher is woken on its
 * task's CPU: launcher_create()'s pin), then reap it and start a staged
 * job, which may become
 * theirs in turn.  Bound launchers come first: the first n bound ones may
 * always wait so, and the unbound share what is left of n (none when n is
 * the bound count), since an unbound waiter may be woken on a busy CPU
 * while the one its task freed idles (docs/performance-history.md section
 * 33).  The others serve submissions, pipes and the exits of
 * the tasks in the epoll set.  A launcher that waits so is held until its
 * task ends, so the agent asks for this only when the pool has launchers
 * to spare beyond one per CPU (--launch-threads above the node's CPUs:
 * then n = threads - 1).  0 (the default) turns it off.  On the 2-core
 * Intel VM, 10,000 /bin/true 2 at once, 3 launchers with 2 waiting ran
 * a median 0.877 of two spawner processes (8 rounds) against 0.860 with
 * no pool, and 0.909 against 0.846 with quiet exits as well
 * (launcher_set_quiet_exits(); docs/performance-history.md section 25).  Call
 * before the first submit. */
void launcher_set_own_waits(struct launcher *l, uint32_t n);
/* Tasks a launcher waited for itself so far (launcher_set_own_waits()). */
uint64_t launcher_own_waits(const struct launcher *l);

/* Quiet exits: an exit whose reaper started a staged job on the CPU it
 * freed, of a task that exited 0 and whose job does not ask for the agent
 * (wake_on_exit), is handed back without waking the agent while more
 * than low staged jobs are left; the agent takes it with the next exit
 * that wakes it, or at its next look at the pool (at most
 * RESULT_DELAY_LEAF_MS later: agent.c, agent_quiet_exits_wait_ms(), so
 * that no result waits for later exits).  Every other exit wakes it, so
 * the last ones always do, and results that release children or report a
 * failure are not held.
 * Off until called.  The agent turns this on with own waits and stages
 * more tasks ahead (8 per CPU, low = 3 per CPU: AGENT_STAGED_PER_CPU_SPARE),
 * so that a node of short, independent tasks wakes it at one exit in about
 * 10 on 2 CPUs (16 staged, quiet while more than 6 are left; counted: 991
 * and 1,014 launcher eventfd writes in two runs of 10,000 /bin/true)
 * instead of at every exit; with 4 per CPU and low = its CPUs, 1,592
 * wake-ups over 9,300 tasks were counted (docs/performance-history.md sections 25
 * and 26).  Call before the first submit. */
void launcher_set_quiet_exits(struct launcher *l, uint32_t low);

/* Completions ready or being pushed (the agent checks before sleeping). */
uint32_t launcher_pending(const struct launcher *l);

/* CPU time the pool's threads have used so far, nanoseconds, summed
 * (pthread_getcpuclockid; a thread that cannot be asked counts 0).  Call
 * before launcher_destroy(); any thread. */
uint64_t launcher_cpu_ns(const struct launcher *l);

/* The number of launcher threads l runs (1..LAUNCHER_MAX_THREADS).  Any
 * thread. */
uint32_t launcher_threads(const struct launcher *l);

/* Stop and join the threads, free.  No job may be outstanding.  NULL is a
 * no-op. */
void launcher_destroy(struct launcher *l);

#ifdef __cplusplus
}
#endif
#endif
