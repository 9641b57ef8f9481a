/* master_internal.h - the master's state, shared by its three files:
 *   master.c         life cycle: create, HELLO, the loop, stop, shutdown
 *   master_sched.c   the hot path: ready tasks, dispatch, results
 *   master_report.c  the end: stdio merge, statistics, cluster-summary
 * Not a public header: only these files include it.
 *
 * Per-task state lives in one flat array indexed by task id, run[t]
 * (struct task_run: remaining parents, attempts, state), beside the
 * read-only DAG.  Invariants:
 *   - a task is in the ready queue iff run[t].state == TASK_READY;
 *   - run[t].remaining == number of parents of t not yet TASK_DONE;
 *   - for every node, its committed CPUs in m->place (sched/placement.h)
 *     == sum(cpus of the tasks sent to it and not yet reported back:
 *     running or queued there) (same for memory and GPUs), and inflight ==
 *     number of TASK_RUNNING tasks;
 *   - nodes[i] and placement node i are the same node.
 * All of it is owned by the master thread; other threads only reach the
 * mailbox and the abort flag.
 */
#ifndef PMC_MASTER_INTERNAL_H
#define PMC_MASTER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "engine/transport/local_link.h"
#include "engine/master/master.h"
#include "engine/master/monitor.h"
#include "io/clock.h"
#include "io/dag.h"
#include "io/fdcache.h"
#include "io/msg.h"
#include "io/rescue.h"
#include "sched/placement.h"
#include "sched/progress.h"
#include "sched/ready_queue.h"

_Static_assert(DAG_MAX_TRIES <= UINT16_MAX, "task_run.attempts counts in 16 bits");

/* What the master keeps of each task while the run goes, in one 8-byte
 * entry (an array of structs, where the DAG is columns): the fields read
 * together when a result comes back (state and attempt) and when a parent
 * is done (remaining and state) share a cache line: one line to fetch
 * on a DAG far larger than the caches, not two or three (read from the
 * layout; the gain measured is docs/performance-history.md section 8's A/B). */
struct task_run {
    uint32_t remaining; /* parents not done yet */
    uint16_t attempts;  /* started so far; -t is at most DAG_MAX_TRIES */
    uint8_t state;      /* enum task_state */
};

#define HELLO_TIMEOUT_S 120.0
#define IDLE_WAIT_US 500000
/* How long CPUs stay idle, while a node queues beyond its CPUs, before the
 * master recalls tasks (s): longer than the 2 ms a node's results may wait
 * for companions while it queues less than a round (RESULT_DELAY_MS), so
 * that results on their way, which free what the master counts as queued,
 * do not draw a RECALL that finds nothing to give back. */
#define RECALL_AFTER_S 0.005

enum task_state { TASK_WAITING, TASK_READY, TASK_RUNNING, TASK_DONE, TASK_FAILED };

/* A node agent as the transport sees it; what it offers and what is
 * committed on it are in m->place, at the same index. */
struct node {
    int rank;
    uint32_t host_rank;
    uint32_t host; /* index of its host in the monitor */
    char *hostname;
    struct msgbuf batch; /* TASKS being built this round */
    bool batch_listed;   /* in master.batch_list this round */
    bool files_seen[2];  /* its DAG.out.R, DAG.err.R were there at its HELLO */
    bool output_lost;    /* its tasks' output was found lost (LOST, a deleted file) */
};

struct master_stats {
    uint32_t submitted, succeeded, failed, extra;
    uint32_t finished_attempts;     /* attempts that ran to an end (not handed back) */
    double runtime;                 /* sum of task durations, s */
    double first_start, last_end;   /* epoch s, for the makespan */
    uint64_t task_msgs, tasks_sent; /* TASKS messages and their items */
    uint64_t result_msgs, results_recv;
    uint64_t tasks_local, results_local; /* handed over in memory (local_link.h) */
    uint64_t recalls, recalled;          /* RECALLs sent; tasks their answers gave back */
};

/* A task that failed for good, for the status and summary JSON. */
struct failed_task {
    uint32_t task;
    int exit_code;
};

/* Progress line, status file and JSON summary (master_status.c); all off
 * (tracking false, NULL arrays) unless asked for. */
struct master_status {
    bool tracking;        /* progress, --status or --summary-json asked */
    struct progress prog; /* remaining critical path, rate */
    float *sent_at;       /* --status: s since start when the attempt was sent */
    struct failed_task *failures;
    size_t nfailures, failures_cap;
    double next_line, next_file; /* CLOCK_MONOTONIC s of the next update */
    bool line_shown;             /* a progress line is on the terminal */
    bool file_failed;            /* --status could not be written (said once) */
};

/* A file of the run itself (the DAG, its rescue log, -o, -e, a rank's
 * output): what it is, by identity (master_forward_guard()). */
struct own_file {
    dev_t dev;
    ino_t ino;
    const char *what;
};

/* A block of forwarded data written for the result at hand: where it went
 * (the DAG's string) and where it began (fdcache_last_start()), to undo it
 * when a later block fails (master_sched.c). */
struct fwd_written {
    const char *dest;
    int64_t start;
};

struct master {
    struct master_config cfg;
    uint64_t run_cpu_ns;         /* master_run()'s thread CPU, set as it returns */
    uint64_t rescue_cpu_ns;      /* the rescue writer's CPU, read as it ends */
    struct fdcache *fdcache;     /* I/O forwarding destinations */
    struct fwd_written *written; /* the blocks of the result being written */
    struct own_file *own;        /* the run's own files, forwards may not write (master.c) */
    size_t nown, own_cap;
    bool own_listed;
    size_t written_cap;
    struct monitor *monitor; /* jobstate.log, dagman.out, resource log */
    uint32_t *seq;           /* submit sequence number per task (monitor only) */
    uint8_t *executed;       /* EXECUTE written for the current attempt (monitor only) */
    int out_fd, err_fd;      /* -o / -e (1 / 2 without), opened at start */
    bool output_gone[2];     /* -o / -e was no longer at its path as the merge began */
    uint32_t next_seq;
    char *fwd_scratch; /* a task's forwards in wire form */
    size_t fwd_scratch_cap;
    int lock_fd;         /* holds the DAG lock; -1 none, -2 could not lock */
    int rescue_lock_fd;  /* holds the rescue log's lock; -1 none, -2 could not lock */
    bool rescue_created; /* the rescue log was created empty for its lock (master.c) */
    char *rescue_path;
    struct dag *dag;
    uint8_t *done_before; /* from the old rescue log */
    uint32_t *ran_on;     /* per task: the node whose attempt succeeded (NULL: null executor) */
    uint32_t ndone_before;
    struct task_run *run; /* per task */
    struct ready_queue *ready;
    struct node *nodes;
    int nnodes;
    int *node_of_rank;              /* rank -> index in nodes, -1 if none */
    struct placement *place;        /* per-node accounting, open list, deferral */
    struct placement_demand demand; /* the DAG's requests, for place */
    uint32_t cpus_total, gpus_total;
    int *batch_list; /* nodes with a TASKS batch being built this round */
    int nbatch;
    uint32_t inflight;
    struct mailbox box;
    struct mailbox_spin_state spin; /* spin-then-park state of the main loop's waits */
    struct comm *comm;
    struct local_link *link; /* rank 0's own node, or NULL (local_link.h) */
    bool link_sent;          /* tasks went through link this round: notify */
    struct rescue_writer *rescue;
    struct master_stats st;
    struct master_status status;
    double start, start_mono;
    double stop_mono;  /* CLOCK_MONOTONIC s of cfg.stop_at; 0 = none */
    double recall_at;  /* CLOCK_MONOTONIC s when a due recall goes out (master__recall()); 0 = none
                          due */
    double wall_start; /* CLOCK_MONOTONIC s --max-wall-time counts from */
    bool stop_dispatch, max_failures_hit, aborting, fatal;
    bool abort_sent, drain_sent; /* ABORT / DRAIN went to every node */
    /* The agents, registered or not, and the messages that end a run, built
     * by master_create() so that ending never allocates (master.c). */
    int *agent_rank;    /* cfg.nagents ranks */
    int *agent_of_rank; /* rank -> index in agent_rank, -1 if it runs none */
    bool *said_bye;     /* per agent: its BYE came (no more messages from it) */
    struct mail **ctl;  /* per agent, CTL_KINDS mails (ABORT, DRAIN, SHUTDOWN); NULL once sent */
    atomic_int abort_requested;
    const char *_Atomic abort_reason;
};

static inline const char *task_name(const struct master *m, uint32_t t)
{
    return dag_task_name(m->dag, t);
}

/* master_sched.c */
int master__init_ready(struct master *m);
void master__dispatch(struct master *m);

/* placement_demand.look_ahead for m (ctx): starts the cache misses of what
 * placing task t will touch; changes nothing.  Master thread. */
void master__look_ahead(void *ctx, uint32_t t);

/* While dispatching: once CPUs have been idle for RECALL_AFTER_S while
 * nodes hold tasks beyond their CPUs, ask those nodes to give some back
 * (RECALL; sched/placement.h, "Recalls").  A RECALL that cannot be sent
 * only leaves the balance as it is (a warning). */
void master__recall(struct master *m);
int master__handle_results(struct master *m, struct mail *ml, struct msg_reader *r);
int master__handle_started(struct master *m, struct mail *ml, struct msg_reader *r);
/* A node's answer to a RECALL: how many tasks it gave back (their results
 * come before it, or on the local link).  -1 on a bad message. */
int master__handle_recall(struct master *m, struct mail *ml, struct msg_reader *r);
/* The index in m->nodes of rank's node; -1 (logged: "WHAT from rank R,
 * which has no node agent") when it has none. */
int master__node_index(const struct master *m, int rank, const char *what);
/* Apply every event the local agent queued on m->link (none without one). */
void master__drain_local(struct master *m);

/* master_report.c */
int master__finish(struct master *m);

/* master_status.c: progress line, --status, --summary-json */
int master__status_init(struct master *m); /* 0, or -1 (logged) */
void master__status_sent(struct master *m, uint32_t t);
void master__status_finished(struct master *m, uint32_t t, bool failed, int exit_code);
void master__status_tick(struct master *m); /* each scheduling round */
/* At the end: the last progress line, status file and summary; -1 when
 * --status or --summary-json could not be written (logged): the run fails. */
int master__status_end(struct master *m, bool ok, double wall);
void master__status_free(struct master *m);

#endif
