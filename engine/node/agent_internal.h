/* agent_internal.h - the node agent's state, shared by its files, each of
 * which calls only those below it (tools/check-layers.py checks it):
 *   agent.c         the thread: messages, the local queue, phase, life cycle
 *   agent_linger.c  tasks whose first process ended in their grace; orphans
 *   agent_stage.c   launches staged in the pool
 *   agent_task.c    one task: slot, launch, reap, output
 *   agent_limits.c  time limits, and the signals a task's group gets
 *   agent_outbox.c  results and notices to the master, and the held failure
 *   agent_env.c     a task's environment and CPU ids, a local task's forwards
 * Not a public header.  Everything here is owned by the agent thread.
 * Slots keep their capture files and buffers between tasks (epoll events
 * carry the slot index), so a warmed-up agent does not allocate per task.
 */
#ifndef PMC_AGENT_INTERNAL_H
#define PMC_AGENT_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "engine/host/affinity.h"
#include "engine/node/agent.h"
#include "engine/exec/forward.h"
#include "engine/exec/launcher.h"
#include "engine/exec/task_end.h"
#include "engine/transport/local_link.h"
#include "engine/exec/watchdog.h"
#include "io/clock.h"
#include "io/msg.h"
#include "io/taskio.h"
#include "sched/deadlines.h"
#include "sched/node_queue.h"
#include "sched/result_batch.h" /* RESULT_BATCH, RESULT_DELAY_*_MS */

#define MAILBOX_EVENT UINT64_MAX
/* Staged tasks per CPU when the pool has launchers to spare (one
 * otherwise), and the staged tasks per CPU left at which an exit wakes the
 * agent again (launcher_set_quiet_exits()); docs/performance.md. */
#define AGENT_STAGED_PER_CPU_SPARE 8
#define AGENT_QUIET_LOW_PER_CPU_SPARE 3

/* A received TASKS message, kept until its last queued task has started. */
struct tasks_mail {
    struct mail *msg;
    uint32_t refs;
};

/* The item of the agent's node queue (sched/node_queue.h): a decoded TASKS
 * item, whose strings point into mail's message; or, from the local link
 * (mail NULL), an item built from the DAG, whose strings point into the
 * DAG's arena and whose forwards are packed when it starts. */
struct node_task {
    struct msg_task t;
    struct tasks_mail *mail;
};

/* A slot's life; agent__slot_to() makes every move:
 *   FREE -> CLAIMED          agent__launch() took it for a task
 *   CLAIMED -> LAUNCHING     handed to the pool (submitted or staged)
 *   CLAIMED -> RUNNING       spawned on the agent thread, which watches its pidfd
 *   LAUNCHING -> RUNNING     spawned by the pool, watched by the agent (an abort's)
 *   LAUNCHING -> POOL        spawned by the pool, which watches and reaps it
 *   POOL -> RUNNING          the pool could not watch it: the agent kills and reaps it
 *   RUNNING -> LINGERING     its first process ended in its grace (agent_linger.c) ...
 *   POOL -> LINGERING_POOL   ... and the pool's job holds its output
 *   any other -> FREE        reported or given back (agent__slot_release())
 * FREE is also the slot's bit in agent.free_slots. */
enum slot_state {
    SLOT_FREE,
    SLOT_CLAIMED,
    SLOT_LAUNCHING,
    SLOT_RUNNING,
    SLOT_POOL,
    SLOT_LINGERING,
    SLOT_LINGERING_POOL,
};

/* A task's argv and environment, rebuilt at each start (agent_env.c). */
struct slot_env {
    char **argv; /* pointers into the TASKS mail, valid during spawn */
    uint32_t argv_cap;
    char **envp; /* base environment + PMC_* variables + forward VARs */
    size_t envp_cap;
    char *buf; /* the strings envp points to */
    size_t buf_cap;
};

/* A task's output files. */
struct slot_io {
    int out_fd, err_fd;     /* capture files, kept open and reused */
    off_t out_len, err_len; /* bytes in them when last measured; -1: not known */
    int task_out, task_err; /* --per-task-stdio files, -1 otherwise */
};

/* A task's CPU ids (PMC_AFFINITY; agent_stage.c for staged tasks). */
struct slot_cpuid {
    bool held;    /* set holds the ids taken from the agent's pool */
    bool bound;   /* the task is bound to them (--set-affinity) */
    bool pending; /* staged: its one id is the CPU it starts on, written into value */
    cpu_set_t set;
    char *value; /* PMC_AFFINITY's value in env.buf, AFFINITY_ID_MAX bytes */
    /* CPUs its release does not give back: the one its reaper handed to a
     * staged job, or a cancelled staged job's, which it never held */
    uint32_t lent;
};

/* A task's GPUs: indices into the host's GPU ids. */
struct slot_gpus {
    uint32_t *ids;
    uint32_t n;
    size_t cap;
};

struct slot {
    enum slot_state state;
    struct tasks_mail *mail; /* while launching: the TASKS message its argv points into */
    uint32_t gen;            /* bumped when the slot's task ends (deadline entries) */
    uint32_t time_limit_ms;  /* 0 = none */
    /* signalled: the last signal sent to its group (0: none; SIGTERM: in
     * its grace); for a task the pool reaps, the last one asked of the
     * pool, which refuses it once its reaper has the task (a refused
     * SIGKILL is sent if it comes back lingering); timed_out: its limit
     * passed, SIGTERM sent; wait_status: LINGERING's first process's */
    struct task_end end;
    uint32_t flags;    /* MSG_TASK_* of its TASKS item */
    bool hold_counted; /* its reaper counted its failure in the pool (launcher_hold()) */
    uint32_t id, attempt, cpus, memory_mb;
    uint32_t gpus; /* GPUs the task asked for (its record's gpus=) */
    pid_t pid;
    int pidfd;
    double start;       /* epoch seconds */
    struct timespec t0; /* CLOCK_MONOTONIC at spawn */
    char *strs;         /* name NUL pegasus_id NUL app NUL */
    size_t strs_cap;
    struct slot_env env;
    struct slot_io io;
    struct fwd_task fwd;        /* -f/-F of the running task */
    int fwd_fds[DAG_MAX_PIPES]; /* write ends handed to the child */
    struct slot_cpuid cpuid;
    struct slot_gpus gpu;
    /* while staged: the task as it left the queue, to queue it again when
     * one of higher priority comes (agent__requeue_staged()) */
    struct msg_task staged_task;
};

/* The environment every task starts from (agent_env.c). */
struct agent_env {
    char **base_env; /* environ without the PMC_* variables we set */
    size_t base_env_n;
    uint32_t thread_vars_set; /* bit i: the user's environment sets thread var i */
    const char *gpu_env[5];   /* inherited CUDA/ROCR/ZE/PMC_GPUS/HIP entries, or NULL */
    char *fwd_scratch;        /* a local task's forwards in wire form (msg.h) */
    size_t fwd_scratch_cap;
};

/* What goes to the master: results and notices not sent yet (agent_outbox.c). */
struct agent_outbox {
    struct msgbuf results;
    struct msgbuf starts;         /* STARTED notices, sent just before the results */
    struct msgbuf fwd_pack;       /* forwarded data of the task being reported */
    struct local_link *link;      /* rank 0's node: events go here, not in messages */
    uint32_t link_results;        /* results queued on link since the last notify */
    uint32_t link_starts;         /* start notices likewise */
    struct timespec first_result; /* the oldest unsent item's clock (agent_result_clock()) */
    bool results_release;         /* an unsent result is of a task with children */
    bool low_water_sent;          /* results went at the refill mark */
    /* a result the master waits for (a held failure, or tasks given back
     * at a RECALL) waits to be sent: the results go at once */
    bool send_now;
    /* the answer to a RECALL (how many were given back) goes after their results */
    bool recall_answer;
    uint32_t recall_given;
    uint64_t results_made;              /* results reported: ran, failed to start or cancelled */
    struct mail *abort_mail, *bye_mail; /* built by agent_create(): ending never allocates */
    struct mail *lost_mail;             /* LOST: a failed close of DAG.out.R / DAG.err.R */
    struct mail *leaving_mail;          /* LEAVING: agent_leave() */
};

/* How far the agent is from its end; agent_phase_to() (agent.c) makes
 * every move, and never back:
 *   RUN                 starts what it is sent
 *   DRAIN               DRAIN heard: the queue went back, nothing starts
 *                       (what comes goes back too); waits for SHUTDOWN
 *   SHUTDOWN            SHUTDOWN heard: the master sends nothing more; the
 *                       queue runs out, then the agent ends
 *   DRAIN_SHUTDOWN      both heard (either order), or agent_leave(): nothing
 *                       starts; ends once the running tasks have
 *   ABORT               ABORT or PEER_LOST heard, or this rank failed: the
 *                       tasks got SIGTERM, SIGKILL follows at kill_at_ns
 *   ABORT_KILLED        ... the SIGKILL was sent
 * A move to a phase below the current one keeps the current one, except
 * that DRAIN and SHUTDOWN together make DRAIN_SHUTDOWN. */
enum agent_run {
    AGENT_RUN,
    AGENT_DRAIN,
    AGENT_SHUTDOWN,
    AGENT_DRAIN_SHUTDOWN,
    AGENT_ABORT,
    AGENT_ABORT_KILLED,
};

/* agent_leave()'s request, in agent_phase.leave: asked by any thread (a
 * signal handler), sent (LEAVING) by the agent thread, each once. */
enum { AGENT_LEAVE_NO, AGENT_LEAVE_ASKED, AGENT_LEAVE_SENT };

/* How far the agent is from its end (agent.c), and the facts beside it. */
struct agent_phase {
    enum agent_run run;
    bool failed;     /* this rank cannot go on: it asks the master to abort */
    bool sent_abort; /* the ABORT (or LOST) that asks it went, or is not wanted */
    /* the master's SHUTDOWN or ABORT came: nothing follows it from the
     * master (MPI keeps one sender's order), so the rank may stop
     * receiving; an agent that aborts on its own waits for it, or a TASKS
     * message the master sent meanwhile could never be received */
    bool heard_end;
    atomic_int leave;    /* AGENT_LEAVE_*: agent_leave() */
    uint64_t kill_at_ns; /* CLOCK_MONOTONIC ns of an abort's SIGKILL (time_limit_kill_at()) */
    /* failures of MSG_TASK_HOLD_ON_FAILURE tasks the master has not
     * answered (RESUME): while > 0 nothing new starts */
    uint32_t holds;
};

/* Nothing new starts: the queue went back (a drain, a leave, an abort). */
static inline bool agent__closed(const struct agent_phase *p)
{
    return p->run == AGENT_DRAIN || p->run >= AGENT_DRAIN_SHUTDOWN;
}
/* The master said, or will say, its last word: SHUTDOWN or an abort. */
static inline bool agent__shutting(const struct agent_phase *p)
{
    return p->run >= AGENT_SHUTDOWN;
}
static inline bool agent__aborting(const struct agent_phase *p)
{
    return p->run >= AGENT_ABORT;
}

/* Staged launches (agent_stage.c). */
struct agent_staging {
    uint32_t nstaged;       /* jobs staged in the pool, not known to have started */
    int32_t staged_floor;   /* the lowest priority staged since nstaged was 0 */
    uint32_t *staged_order; /* agent__requeue_staged()'s scratch: staged_cap slot indices */
    uint32_t staged_cap;    /* the most staged at once */
    bool quiet_exits;       /* launcher_set_quiet_exits() on: agent_quiet_exits_wait_ms() */
    bool requeue_due;       /* a task above staged_floor came: agent__requeue_staged() */
};

/* Lingering tasks and adopted orphans (agent_linger.c). */
struct agent_linger {
    uint32_t lingering;       /* slots whose task lingers (SLOT_LINGERING*) */
    uint64_t linger_due_ns;   /* CLOCK_MONOTONIC ns of their next look */
    uint64_t orphans_results; /* results_made at the last reap of adopted orphans */
    uint64_t orphans_due_ns;  /* CLOCK_MONOTONIC ns before which none follows it */
};

/* Local accounting of the host's resources. */
struct agent_res {
    uint32_t cpus_free;
    uint64_t memory_free;
    uint32_t gpus_free;
    bool *gpu_busy;           /* per host GPU id: held by a running task */
    struct cpuset_pool *pool; /* PMC_AFFINITY's ids (agent_create_pool()), or NULL */
    bool warned_unbound;
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
    /* bit i of word i / 64 set: slot i is free (nslots bits; the bits
     * past nslots are 0): the lowest free slot is found a word at a time */
    uint64_t *free_slots;
    struct agent_env env;
    struct agent_outbox outbox;
    struct taskio_file out, err;
    struct node_queue queue; /* received, not started (prefetch window) */
    struct agent_staging stage;
    struct agent_res res;
    struct agent_phase phase;
    struct agent_linger linger;
    atomic_int fail_next_start;     /* agent__fail_next_start() */
    struct watchdog *watchdog;      /* kills the tasks if this process dies; NULL: none */
    struct launcher *launcher;      /* launcher threads; NULL: spawn on the agent thread */
    struct mailbox_spin_state spin; /* spin-then-park (mailbox.h) before epoll_wait */
    struct deadlines deadlines;     /* time limits of the running tasks */
    struct {
        uint64_t agent_ns, launchers_ns; /* CPU of its thread and its launchers', read as it ends */
    } cpu;
};

static inline double agent_elapsed(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return pmc_seconds_between(t0, &t1);
}

/* agent_env.c */
int agent__snapshot_env(struct agent *a);
/* s->env.envp for task t in slot s (its CPUs, GPUs and forwards already
 * taken).  0, or -1 with ENOMEM. */
int agent__slot_env(struct agent *a, struct slot *s, const struct msg_task *t);

/* A task from the local link with -f/-F: its forwards in wire form, in the
 * agent's scratch buffer (agent__launch() copies what it keeps).  0, or -1
 * with ENOMEM. */
int agent__pack_local_forwards(struct agent *a, struct msg_task *t);

/* agent_stage.c: staged launches (launcher.h).  While no CPU is free and
 * tasks wait, agent__stage() prepares queued tasks of one CPU, no memory
 * and no GPU and stages them in the pool, at most one per CPU of the node:
 * the launcher that reaps any task starts the oldest on the CPU that task
 * gave up.  Each is claimed when staged, against a CPU lent ahead (cpus_free
 * is not lowered for it); the agent settles the loan when it takes the exit
 * whose reaper started it (agent_took_handed(), agent_task.c), or when it starts one
 * itself on a CPU that freed another way (agent__start_staged(), first in
 * agent_pump()).  agent__unstage_all() cancels those not started (a drain,
 * an abort); agent__cancel_staged() gives one back unstarted (ECANCELED),
 * slot i as launcher_take_staged() handed it (a RECALL).
 * agent__requeue_staged(), once a task of higher priority than one of
 * them came (requeue_due), stages the queue's higher tasks ahead of those
 * not started, each displacing the lowest back into the queue in its
 * place, so that the reapers start them first, as PMC would start them on
 * the next free slot.  Agent thread. */
void agent__stage(struct agent *a);
void agent__start_staged(struct agent *a);

/* PMC_AFFINITY of staged tasks (agent_env.c).  The lowest CPU id in set,
 * -1 when empty. */
int agent__first_id(const cpu_set_t *set);
/* A staged task (s->cpuid.pending) started on the CPU whose id is id (>= 0;
 * -1: none known): its ids become {id}, already taken from the pool by the
 * task that gave it up, or by agent__start_staged(). */
void agent__adopt_id(struct slot *s, int id);
void agent__unstage_all(struct agent *a);
void agent__cancel_staged(struct agent *a, uint32_t i);
void agent__requeue_staged(struct agent *a);

/* agent_task.c */
/* Open DAG_PATH.out.RANK / .err.RANK for appending.  0, or -1 with err. */
int agent__open_outputs(struct agent *a, struct pmc_error *err);
/* Start t (its strings point into mail's message).  Returns true when the
 * slot kept its reference on mail until the launch completes (a launcher
 * thread spawns it); false when the caller keeps it (done or failed here).
 * staged: stage the job (launcher_stage()) instead of submitting it; the
 * caller has checked that the slot it takes has a launcher job and that
 * its forwards fit one (agent_stage.c). */
bool agent__launch(struct agent *a, const struct msg_task *t, struct tasks_mail *mail, bool staged);
/* The slot agent__launch() takes next: the lowest free one, or nslots when
 * every slot is busy (the table then grows).  O(nslots / 64). */
uint32_t agent__next_free_slot(const struct agent *a);
/* Move slot i to state `to` (the moves enum slot_state lists). */
void agent__slot_to(struct agent *a, uint32_t i, enum slot_state to);
/* Does slot i (< nslots) hold a task (not SLOT_FREE)? */
static inline bool agent__slot_busy(const struct agent *a, uint32_t i)
{
    return !((a->free_slots[i / 64] >> (i % 64)) & 1);
}
/* Release slot s: its capture files reset, its descriptors closed, its
 * CPUs (but lent_cpus), memory and GPUs back to the free pool. */
void agent__slot_release(struct agent *a, struct slot *s);
/* Take every completed launch and finish it (watch, or report failed). */
void agent__take_launches(struct agent *a);
void agent__reap(struct agent *a, uint32_t i);
void agent__pipe_readable(struct agent *a, uint32_t i, uint32_t k);
void agent__slot_free(struct slot *s);

/* Slot i's task ended: its time-out note, forwarded data, output, result
 * and slot (status: its wait status, duration: seconds since its start). */
void agent__task_ended(struct agent *a, uint32_t i, int status, double duration);
/* Slot i's job came back from the pool with its task ended and its output
 * written (launcher_take_exited(), or launcher_finish()): report it and
 * free the slot. */
void agent__take_exited(struct agent *a, uint32_t i);

/* agent_linger.c: the grace of what a task's first process leaves in its
 * group.  At a time-out or an abort a task's group gets SIGTERM, and
 * SIGKILL --kill-grace later.  When its first process (often a wrapper
 * shell, which dies of the SIGTERM at once) ends in that grace while its
 * group still has members, the task lingers: reaped, its slot and CPUs
 * held, not reported; agent__linger_check() looks at its group every
 * AGENT_LINGER_POLL_MS and finishes it once the group is empty, or once
 * it got SIGKILL (the grace's end: agent_limits.c, or the abort's kill
 * deadline: agent.c), without waiting for the killed processes to go.
 * Agent thread. */
#define AGENT_LINGER_POLL_MS 10
#define AGENT_LINGER_POLL_NS ((uint64_t)AGENT_LINGER_POLL_MS * 1000000u)
/* A task begins to linger in agent_task.c (agent_linger_begin()). */
/* Finish the lingering tasks whose group ended or was killed, when a look
 * is due (at once after a SIGKILL to one: agent__signal()). */
void agent__linger_check(struct agent *a);
/* ms until the next look, -1 when nothing lingers. */
int agent__linger_timeout_ms(const struct agent *a);
/* Reap the zombies of the orphans this process adopted (spawn_reap_orphans():
 * what tasks left running when their first process ended), once at least
 * one result was made since the last time, and at most every
 * AGENT_ORPHANS_EVERY_MS: one comparison per loop otherwise.  An orphan
 * that ends while no task ends waits as a zombie for the next task's end,
 * or for our exit (PID 1 reaps it then).  Agent thread. */
#define AGENT_ORPHANS_EVERY_MS 100
void agent__orphans_check(struct agent *a);

/* agent_limits.c */
/* Arm slot i's time limit at its start (slot.t0) + limit, once, as the
 * task is launched (spawned by the agent, or handed to the pool: early,
 * since it starts later; a staged task's t0 moves to its own start, which
 * the deadline's second look reads).  0, or -1 with ENOMEM (not when the
 * slot's entry is reserved, as agent_slots_grow() does). */
int agent__limit_start(struct agent *a, uint32_t i);
/* Slot i's task ended (reaped or abandoned): disarm, bump the generation. */
void agent__limit_end(struct agent *a, uint32_t i);
/* Act on passed deadlines (TERM, then KILL after the grace); returns the ms
 * until the next one, -1 if none. */
int agent__limit_timeout_ms(struct agent *a);
/* Send sig to the process group of slot i's running task (through the
 * pool when it reaps the task: launcher_signal()). */
void agent__signal(struct agent *a, uint32_t i, int sig);

/* agent_outbox.c */
/* Results waiting to be sent (or, on the local link, notified). */
uint32_t agent__results_waiting(const struct agent *a);
/* Send b (its count items) to the master, if it holds any; a failure
 * (logged, what names b) fails the agent. */
void agent__send(struct agent *a, struct msgbuf *b, const char *what);
/* Send the start notices, then the results (agent_outbox.c has the rule). */
void agent__send_batch(struct agent *a);
/* Are the running and queued tasks at the master's refill mark? */
bool agent__at_low_water(const struct agent *a);
void agent__tasks_mail_unref(struct tasks_mail *b);
/* Queue the result of the task in s: its wait status, exec_errno (0: it
 * ran) and duration (seconds; 0: it did not run).  A failure of a
 * MSG_TASK_HOLD_ON_FAILURE task holds the node (phase.holds): nothing
 * starts, and agent_pump() gives the staged tasks back. */
void agent__add_result(struct agent *a, const struct slot *s, int status, int exec_errno,
                       double duration);
/* The task in s goes back to the master unstarted (ECANCELED, at a drain
 * or an abort): its start becomes now, the result is queued. */
void agent__add_cancelled(struct agent *a, struct slot *s);
/* Give task t back to the master unstarted (a DRAIN, an ABORT, a RECALL,
 * or a queue that cannot take it back): its ECANCELED result. */
void agent__cancel_task(struct agent *a, const struct msg_task *t);
/* The task in s started: queue its STARTED notice if the master asked. */
void agent__started(struct agent *a, const struct slot *s);

#endif
