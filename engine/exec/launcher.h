/* launcher.h - a node agent's pool of launcher threads: they spawn what
 * the agent prepared and, for a reaped launch, watch, reap and write the
 * task (docs/design.md).  Job i is the agent's until submitted or staged,
 * the pool's until handed back (the rings order the writes); no lock or
 * allocation per task.  An exit may be poppable before its completion:
 * take the completion first.  Calls belong to the agent thread unless
 * marked "any thread"; destroy after the last task was reaped.
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

/* The pool size without --launch-threads (usable_cpus >= 1): 0 on one
 * usable CPU; cpus + 1 (0 past the maximum) below LAUNCHER_MIN_CPUS; else one per
 * LAUNCHER_CPUS_PER_THREAD, at most LAUNCHER_MAX_THREADS.  Pure. */
uint32_t launcher_default_threads(uint32_t cpus, uint32_t usable_cpus);
#define LAUNCHER_MAX_FORWARDS DAG_MAX_PIPES /* forward descriptors a job can carry */

/* One slot's launch; "in": set by the agent, "out": by the pool.  What
 * req, output and forwards point to stays valid until the slot is back. */
struct launch_job {
    struct spawn_request req; /* in */
    int forward_fds[LAUNCHER_MAX_FORWARDS];
    cpu_set_t affinity;
    bool pool_reaps;            /* in: the pool watches, reaps and writes the task */
    bool wake_on_start;         /* in: its completion wakes the agent (a STARTED notice) */
    bool hold_on_failure;       /* in: -m: its reaper starts no staged job, and counts a failure */
    bool wake_on_exit;          /* in: its exit wakes the agent even when quiet exits are on */
    bool held_failure;          /* out: its failure was counted in launcher_hold() (agent clears) */
    uint32_t time_limit_ms;     /* in: for the time-out note; 0: none */
    struct task_end end;        /* in zeroed, out: what happened to it */
    bool lingers;               /* out: its group outlived its first process: launcher_finish() */
    struct taskio_block output; /* in: its output block, written by the reaper */
    struct timespec started;    /* in: CLOCK_MONOTONIC at its start */
    pid_t pid;                  /* out: the child, when err == 0 */
    int pidfd;                  /* out; a reaped launch's is the pool's (closed when reaped) */
    int err;                    /* out: spawn_task()'s errno, 0 on success */
    int watch_err;              /* out: the failed epoll_ctl's errno (launcher_take_unwatched) */
    int status;                 /* out: the status task_end_decide() gives it */
    double duration;            /* out: seconds from started to the reap */
    int output_rc;              /* out: task_end_write()'s result ... */
    int output_errno;           /* ... and its errno when not 0 */
    off_t out_len, err_len;     /* out: what the capture files held */
    uint32_t handed;            /* out: 1 + the staged slot its reaper started; 0: none */
    int first_id;               /* in: its lowest CPU id, -1: none (a chained job: its reaper's) */
    char *affinity_value;       /* in: PMC_AFFINITY's value to write first_id into, or NULL */
    bool chained; /* out: started by a reaper, which set started and the record's start */
    struct fwd_task forwards; /* in: its -f pipes and -F files (a copy; n 0: none) */
    struct msgbuf fwd_pack;   /* out: their data (msg_pack_fwd_data blocks); the pool's storage */
    struct pmc_error fwd_err; /* out: why, when end.forwards_lost */
};

struct launcher;

/* nthreads (1..LAUNCHER_MAX_THREADS) threads for slots 0..nslots-1, waking
 * `wake`; thread k binds to pin's k-th CPU (NULL: none).  NULL with err. */
struct launcher *launcher_create(uint32_t nthreads, uint32_t nslots, struct mailbox *wake,
                                 const cpu_set_t *pin, struct pmc_error *err);

/* Slot i's job; NULL when i >= nslots (launch it on the calling thread). */
struct launch_job *launcher_job(struct launcher *l, uint32_t i);

/* Hand slot i's filled job to a launcher.  Never fails; one submit per
 * slot until launcher_take() returned it. */
void launcher_submit(struct launcher *l, uint32_t i);

/* Stage slot i's filled job (one CPU, no memory, GPU or binding): the
 * next reaper starts it on its task's CPU, first in first out. */
void launcher_stage(struct launcher *l, uint32_t i);

/* The oldest staged job not started into *i: true, or false when none. */
bool launcher_take_staged(struct launcher *l, uint32_t *i);

/* Staged jobs the reapers started so far.  Any thread. */
uint64_t launcher_staged_starts(const struct launcher *l);

/* A completed slot (spawned, or err set) into *i: 1, or 0 when none. */
int launcher_take(struct launcher *l, uint32_t *i);

/* A reaped launch that could not be watched into *i (watch_err): 1 or 0. */
int launcher_take_unwatched(struct launcher *l, uint32_t *i);

/* A reaped launch whose task ended (or lingers) into *i: 1 or 0. */
int launcher_take_exited(struct launcher *l, uint32_t *i);

/* A held failure (-m): no staged starts until as many launcher_release()
 * calls as holds and held_failure reaps.  Any thread. */
void launcher_hold(struct launcher *l);

/* The master answered one counted held failure (RESUME). */
void launcher_release(struct launcher *l);

/* Finish slot i's lingering job as its reaper would have (task_end_write()). */
void launcher_finish(struct launcher *l, uint32_t i);

/* Mark slot i's reaped launch timed out and SIGTERM its group: false when
 * a launcher already reaps it. */
bool launcher_time_out(struct launcher *l, uint32_t i);

/* Signal slot i's reaped launch's group, unless a launcher reaps it (its
 * id may be reused): true when sent.  After its completion was taken. */
bool launcher_signal(struct launcher *l, uint32_t i, int sig);

/* From now on every completion wakes the agent (an abort).  Idempotent. */
void launcher_wake_always(struct launcher *l);

/* Up to n launchers (all but one at most) wait in waitid(2) for a task
 * without -f pipes they started.  0: off.  Before the first submit. */
void launcher_set_own_waits(struct launcher *l, uint32_t n);
/* Tasks a launcher waited for itself so far.  Any thread. */
uint64_t launcher_own_waits(const struct launcher *l);

/* A 0 exit that started a staged job (no wake_on_exit) does not wake the
 * agent while more than low are staged.  Before the first submit. */
void launcher_set_quiet_exits(struct launcher *l, uint32_t low);

/* Hand-backs ready or being pushed (the agent checks before sleeping). */
uint32_t launcher_pending(const struct launcher *l);

/* CPU ns of the pool's threads so far.  Any thread. */
uint64_t launcher_cpu_ns(const struct launcher *l);

/* The number of launcher threads.  Any thread. */
uint32_t launcher_threads(const struct launcher *l);

/* Stop and join the threads, free.  No job may be outstanding; NULL: no-op. */
void launcher_destroy(struct launcher *l);

#ifdef __cplusplus
}
#endif
#endif
