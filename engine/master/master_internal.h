/* master_internal.h - the master's state, one sub-struct per file that owns
 * it; only engine/master/ includes this header.
 *
 *   master.c          life cycle, HELLO, the loop, shutdown   phase, nodes, agents, clock
 *   master_sched.c    ready tasks, dispatch, results          sched, st
 *   master_events.c   per-task event log sequence numbers     events
 *   master_rescue.c   the rescue log and its lock             rescue
 *   master_forward.c  forwarded data, the run's own files     fwd
 *   master_report.c   -o/-e, stdio merge, statistics, summary out
 *   master_status.c   progress line, --status, --summary-json status
 *
 * A sub-struct is written by the file that owns it, elsewhere only
 * through that file's functions below (inline ones on the hot path;
 * struct node says who writes which field); any file may read it.  Calls
 * go one way: master.c -> the others; master_sched.c and master_report.c
 * -> events, rescue, forward, status; those four call no master file.
 *
 * Invariants (master thread; other threads reach only box and abort_*):
 *   - a task is in sched.ready iff sched.run[t].state == TASK_READY;
 *   - sched.run[t].remaining == parents of t not yet TASK_DONE;
 *   - per node, its committed CPUs, memory and GPUs in sched.place ==
 *     the sum over the tasks sent to it and not reported back;
 *     sched.inflight == number of TASK_RUNNING tasks;
 *   - nodes.at[i] and placement node i are the same node;
 *   - a TASK_RUNNING task t was sent to node sched.node_of[t] (when
 *     node_of is kept); a node not NODE_WORKING is closed in sched.place,
 *     and one whose link is gone has no task there.
 */
#ifndef PMC_MASTER_INTERNAL_H
#define PMC_MASTER_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "engine/master/master.h"
#include "engine/master/monitor.h"
#include "engine/transport/local_link.h"
#include "io/clock.h"
#include "io/dag.h"
#include "io/fdcache.h"
#include "io/id_map.h"
#include "io/msg.h"
#include "io/rescue.h"
#include "sched/array_ready.h"
#include "sched/placement.h"
#include "sched/progress.h"
#include "sched/ready_queue.h"

_Static_assert(DAG_MAX_TRIES <= UINT16_MAX, "task_run.attempts counts in 16 bits");

#define HELLO_TIMEOUT_S 120.0
/* Joined nodes (cfg.joined): once every node is lost, the run waits this
 * many --node-timeout periods for one to join, then fails: long enough
 * for a replacement started by hand or by a batch system's requeue, short
 * enough that a run whose nodes all died does not hold its rescue log. */
#define ALL_LOST_WAIT_TIMEOUTS 10
#define IDLE_WAIT_US 500000
/* Retried instances the summary can name (it lists this many tasks). */
#define INSTANCES_RETRIED_LISTED 10000
/* CPUs idle this long (s) while a node queues beyond its CPUs draw a
 * RECALL; longer than a node's RESULT_DELAY_MS, so results already on
 * their way do not draw one. */
#define RECALL_AFTER_S 0.005

enum task_state { TASK_WAITING, TASK_READY, TASK_RUNNING, TASK_DONE, TASK_FAILED };

/* Per task, 8 bytes: what a result (state, attempts) and a parent's end
 * (remaining, state) read share one cache line (docs/performance.md). */
struct task_run {
    uint32_t remaining; /* parents not done yet */
    uint16_t attempts;  /* started so far, <= DAG_MAX_TRIES */
    uint8_t state;      /* enum task_state */
};

/* An instance of a task array that is ready or running: what a plain
 * task keeps in the per-task arrays (master_sched.c owns it; the fields
 * mirror sched.run, sched.node_of, events.seq/executed, status.sent_at).
 * It exists from the moment the instance is handed out to its last
 * attempt's end (docs/task-arrays.md). */
struct live_task {
    uint32_t id; /* UINT32_MAX: a free slot */
    struct task_run run;
    uint32_t node_of;
    uint32_t seq;
    float sent_at;
    uint8_t executed;
    bool in_window; /* handed out by sched.arrays and never sent yet */
};

/* How far the run is toward its end; only rises (master__raise()). */
enum master_phase {
    PHASE_RUN,        /* dispatching */
    PHASE_STOP,       /* no more dispatch (-m reached): DRAIN due */
    PHASE_STOP_SENT,  /* DRAIN went to every agent */
    PHASE_ABORT,      /* aborting (signal, wall time, batch job's end, error): ABORT due */
    PHASE_ABORT_SENT, /* ABORT went to every agent */
};

/* Where a node stands (joined nodes come and go; an MPI rank's node stays
 * NODE_WORKING).  Only rises. */
enum node_state {
    NODE_WORKING, /* may be sent tasks */
    NODE_LEAVING, /* said LEAVING: sent nothing more, its link still up */
    NODE_LOST,    /* its link is gone without a BYE or LEAVING: lost */
    NODE_LEFT,    /* its link is gone after its BYE or LEAVING */
};

/* A node agent that said HELLO; its resources are in sched.place at the
 * same index.  tasks/listed/requeued*: master_sched.c; files_seen, state:
 * master.c; output_lost: master.c and master_report.c. */
struct node {
    int rank;
    uint32_t host_rank;
    uint32_t host; /* its host in the monitor */
    char *hostname;
    struct msgbuf tasks;    /* the TASKS message being built this round */
    bool listed;            /* in sched.listed this round */
    bool files_seen[2];     /* its DAG.out.R, DAG.err.R were there at its HELLO */
    bool output_lost;       /* its tasks' output was found lost (LOST, a deleted file) */
    uint8_t state;          /* enum node_state */
    uint32_t requeued;      /* its tasks put back in the ready queue: when its link went, or
                               failed while it left (its allocation's end killed them) */
    uint32_t *requeued_ids; /* those tasks, in no order (their blocks are left out of the
                               merge), requeued_cap slots */
    uint32_t requeued_cap;
    bool requeued_unknown; /* requeued_ids lacks some, for want of memory */
};

/* master.c: the registered nodes; NULL until master_begin().  With
 * cfg.joined the tables grow as nodes join (ranks are join numbers, never
 * reused); else they are sized for cfg.nranks at master_begin(). */
struct master_nodes {
    struct node *at; /* cap slots, n used, in HELLO order; never removed */
    int n;
    size_t cap;
    int *of_rank;        /* rank_cap entries: rank -> index in at, -1 if none */
    size_t rank_cap;     /* ranks of_rank covers (cfg.nranks without joined) */
    uint32_t cpus, gpus; /* totals over the NODE_WORKING nodes */
    int working;         /* NODE_WORKING nodes (a node gone after its BYE stays one) */
    int leaving;         /* NODE_LEAVING nodes */
    double none_since;   /* CLOCK_MONOTONIC s the last working or leaving node went; 0: one is */
    uint32_t joined;     /* joined: nodes that said HELLO */
    uint32_t lost, left; /* joined: nodes that reached NODE_LOST / left by LEAVING */
    uint32_t requeued;   /* tasks put back in the ready queue from a gone node */
};

enum { CTL_ABORT, CTL_DRAIN, CTL_SHUTDOWN, CTL_KINDS };

/* An agent: its rank, its BYE, and the ABORT, DRAIN and SHUTDOWN mails
 * that end a run, built beforehand so that ending never allocates. */
struct agent {
    int rank;
    bool said_bye;
    struct mail *ctl[CTL_KINDS]; /* NULL once sent */
};

/* master.c: every agent, registered or not (MPI: every cfg.agent_ranks
 * rank, from master_create(); joined: every node, from its HELLO). */
struct master_agents {
    struct agent *at; /* n used of cap */
    int n;
    size_t cap;
    int *of_rank;    /* rank_cap entries: rank -> index in at, -1 if it runs none */
    size_t rank_cap; /* ranks of_rank covers */
    unsigned sent;   /* bit CTL_*: that kind went to every agent (late joiners get it) */
};

/* master.c: times of the run. */
struct master_clock {
    double start;        /* epoch s of master_begin() */
    double start_mono;   /* CLOCK_MONOTONIC s of the same instant */
    double wall_start;   /* CLOCK_MONOTONIC s --max-wall-time counts from */
    double stop_mono;    /* CLOCK_MONOTONIC s of cfg.stop_at; 0 = none */
    uint64_t run_cpu_ns; /* master_run()'s thread CPU, set as it returns */
};

/* A task that failed for good (status.failures) or an instance that was
 * retried (sched.inst_retried). */
struct failed_task {
    uint32_t task;
    int exit_code;
    uint32_t attempts;
};

/* master_sched.c: the scheduling state. */
struct master_sched {
    struct task_run *run;           /* per task */
    struct ready_queue *ready;      /* sized for every task: pushes never allocate */
    struct placement *place;        /* per node accounting (sched/placement.h) */
    struct placement_demand demand; /* the DAG's requests, for place */
    uint32_t *node_of;              /* per task: the node its latest attempt went to (that of
                                       its success once DONE); NULL: the null executor, not
                                       joined */
    uint32_t inflight;              /* TASK_RUNNING tasks */
    int *listed;                    /* nodes with a TASKS message being built */
    int nlisted;
    size_t listed_cap;
    bool link_sent;    /* tasks went through the local link this round */
    double recall_at;  /* CLOCK_MONOTONIC s a due RECALL goes out; 0 = none due */
    char *fwd_scratch; /* a task's forwards in wire form */
    size_t fwd_scratch_cap;
    /* Task arrays (all empty without): readiness, and the live instances */
    struct array_ready *arrays;
    struct id_map live_of;  /* instance id -> index in live */
    struct live_task *live; /* live_cap slots; free ones listed in live_free */
    uint32_t live_cap;
    uint32_t *live_free;
    uint32_t nlive_free;
    uint32_t window;    /* instances handed out per array ahead of dispatch */
    char *item_scratch; /* an instance's name and argv (msg_task_from_instance()) */
    size_t item_scratch_cap;
    char *names[4]; /* task_name() of instances: a ring of buffers of name_cap */
    size_t name_cap;
    unsigned next_name;
    uint64_t inst_attempts[8];        /* instances ended (done, failed) by attempts, 7 = 7+ */
    struct failed_task *inst_retried; /* the first INSTANCES_RETRIED_LISTED of them retried
                                         (exit_code unused) */
    size_t ninst_retried;
};

/* master_sched.c writes, the end-of-run files read. */
struct master_stats {
    uint32_t submitted, succeeded, failed, extra;
    uint32_t finished_attempts;     /* attempts that ran to an end (not handed back) */
    double runtime;                 /* sum of task durations, s */
    double first_start, last_end;   /* epoch s, for the makespan */
    uint64_t task_msgs, tasks_sent; /* TASKS messages and their items */
    uint64_t result_msgs, results_recv;
    uint64_t tasks_local, results_local; /* through the local link */
    uint64_t recalls, recalled;          /* RECALLs sent; tasks given back */
};

/* master_events.c: task events for the event logs. */
struct master_events {
    struct monitor *monitor; /* NULL before master_open_outputs() and after the end */
    uint32_t *seq;           /* per task submit sequence number; NULL: no task events */
    uint8_t *executed;       /* per task: EXECUTE written for the current attempt */
    uint32_t next_seq;
};

/* master_rescue.c: the rescue log. */
struct master_rescue {
    char *path;
    struct rescue_writer *writer; /* from master_begin() to the end; NULL: none */
    int lock_fd;                  /* its lock; -1 none, -2 could not lock */
    bool created;                 /* created empty for its lock */
    uint8_t *done_before;         /* per task, from the old log */
    uint64_t *inst_done_before;   /* a bit per instance, from the old log; NULL: no arrays */
    uint32_t ndone_before;
    uint64_t writer_cpu_ns; /* read as the run ends */
};

/* A file of the run (DAG, rescue log, -o, -e, a rank's output), by identity. */
struct own_file {
    dev_t dev;
    ino_t ino;
    const char *what;
};

/* A block written for the result at hand: its destination and offset. */
struct fwd_written {
    const char *dest;
    int64_t start;
};

/* master_forward.c: forwarded data (-f, -F). */
struct master_forward {
    struct fdcache *cache;
    struct fwd_written *written; /* blocks of the result being written */
    size_t written_cap;
    struct own_file *own; /* files forwards may not write */
    size_t nown, own_cap;
    bool own_listed;
};

/* master_report.c: -o (0) and -e (1). */
struct master_output {
    int fd[2];    /* 1 / 2 without; may be one descriptor; -1 once closed */
    bool gone[2]; /* no longer at its path as the merge began */
};

/* master_status.c; all off (tracking false, NULL arrays) unless asked for. */
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

struct master {
    struct master_config cfg;
    struct dag *dag;
    int lock_fd; /* the DAG's lock; -1 none, -2 could not lock */
    struct mailbox box;
    struct mailbox_spin_state spin; /* the main loop's waits */
    struct comm *comm;
    struct local_link *link; /* rank 0's own node, or NULL */
    enum master_phase phase;
    bool fatal; /* an error: the run aborts and fails */
    atomic_int abort_requested;
    const char *_Atomic abort_reason;
    struct master_clock clock;
    struct master_nodes nodes;
    struct master_agents agents;
    struct master_sched sched;
    struct master_stats st;
    struct master_events events;
    struct master_rescue rescue;
    struct master_forward fwd;
    struct master_output out;
    struct master_status status;
};

/* ---- shared readers and the phase (any master file) --------------------- */

/* Instance t's name "a[i]" in one of a ring of buffers: valid until
 * three more calls.  Master thread. */
const char *master__instance_name(const struct master *m, uint32_t t);

/* Task t's name (plain or instance); an instance's as master__instance_name(). */
static inline const char *task_name(const struct master *m, uint32_t t)
{
    return t < m->dag->ntasks ? dag_task_name(m->dag, t) : master__instance_name(m, t);
}

/* Live instance t's state, or NULL when it is not ready or running. */
struct live_task *master__live(const struct master *m, uint32_t t);

/* The array record of instance t. */
const struct dag_array *master__array_of(const struct master *m, uint32_t t);

/* Task t's task_run: the per-task entry, or a live instance's; NULL for an
 * instance neither ready nor running. */
static inline struct task_run *master__run(const struct master *m, uint32_t t)
{
    if (t < m->dag->ntasks)
        return &m->sched.run[t];
    struct live_task *l = master__live(m, t);
    return l ? &l->run : NULL;
}

static inline bool master__dispatching(const struct master *m)
{
    return m->phase == PHASE_RUN;
}

static inline bool master__aborting(const struct master *m)
{
    return m->phase >= PHASE_ABORT;
}

static inline void master__raise(struct master *m, enum master_phase p)
{
    if (m->phase < p)
        m->phase = p;
}

/* The run fails; master_step() turns it into an abort. */
static inline void master__fail(struct master *m)
{
    m->fatal = true;
}

static inline bool master__max_failures_hit(const struct master *m)
{
    return m->cfg.max_failures && m->st.failed >= m->cfg.max_failures;
}

/* Was plain task t done by an earlier run (the old rescue log)? */
static inline bool master__done_before(const struct master *m, uint32_t t)
{
    return m->rescue.done_before[t];
}

/* Task t's state; an instance neither ready nor running is TASK_DONE or
 * TASK_WAITING (a failed one too: its failure is in status.failures). */
static inline enum task_state master__task_state(const struct master *m, uint32_t t)
{
    const struct task_run *r = master__run(m, t);
    if (r)
        return (enum task_state)r->state;
    return ar_instance_done(m->sched.arrays, t) ? TASK_DONE : TASK_WAITING;
}

/* Attempts of task t so far (0 for an instance neither ready nor running). */
static inline uint32_t master__task_attempts(const struct master *m, uint32_t t)
{
    const struct task_run *r = master__run(m, t);
    return r ? r->attempts : 0;
}

/* ---- master_sched.c ------------------------------------------------------ */

/* Per-task state for m->dag: 0, or -1 with ENOMEM (master_create()). */
int master__sched_create(struct master *m);
/* Placement and the per-round lists for cfg.nranks nodes: 0, or -1 with
 * ENOMEM, nothing kept (master_begin()). */
int master__sched_prepare(struct master *m);
/* Room for `nodes` nodes in all (a node joins): 0, or -1 with ENOMEM (what
 * grew stays grown). */
int master__sched_reserve(struct master *m, int nodes);
/* Node i is gone or going: it is sent nothing more (sched/placement.h's
 * placement_close_node()). */
void master__sched_close_node(struct master *m, int i);
/* Node i's link is gone: every task sent to it and not reported back goes
 * back to the ready queue, its attempt not charged (as a task given back
 * unstarted).  The number taken back.  O(tasks). */
uint32_t master__sched_take_back(struct master *m, int i);
void master__sched_free(struct master *m);
/* Account a node that said HELLO (index m->nodes.n before it is added). */
void master__sched_add_node(struct master *m, const struct msg_hello *h);
/* PMC's check: every task not done before fits some node; -1 logged. */
int master__check_capable(struct master *m);
int master__init_ready(struct master *m);
void master__dispatch(struct master *m);
/* Once CPUs idled RECALL_AFTER_S while nodes queue beyond theirs, RECALL
 * (sched/placement.h "Recalls"); a failed send is a warning. */
void master__recall(struct master *m);
/* CLOCK_MONOTONIC s a due RECALL goes out; 0 = none due. */
double master__recall_at(const struct master *m);
/* Handlers of one mail each: 0, or -1 (logged) on a bad message. */
int master__handle_results(struct master *m, struct mail *ml, struct msg_reader *r);
int master__handle_started(struct master *m, struct mail *ml, struct msg_reader *r);
int master__handle_recall(struct master *m, struct mail *ml, struct msg_reader *r);
/* Apply every event the local agent queued on m->link. */
void master__drain_local(struct master *m);
/* The index in m->nodes.at of rank's node; -1 (logged "WHAT from rank R,
 * which has no node agent") when none. */
int master__node_index(const struct master *m, int rank, const char *what);

/* The index in m->nodes.at of rank's node, -1 when none; quiet. */
static inline int master__node_of_rank(const struct master *m, int rank)
{
    return m->nodes.of_rank && rank >= 0 && (size_t)rank < m->nodes.rank_cap
               ? m->nodes.of_rank[rank]
               : -1;
}

/* Is node i's link gone (NODE_LOST, NODE_LEFT)?  What it sent after is
 * ignored. */
static inline bool master__node_gone(const struct master *m, int i)
{
    return m->nodes.at[i].state >= NODE_LOST;
}

static inline uint32_t master__inflight(const struct master *m)
{
    return m->sched.inflight;
}

static inline uint32_t master__ready_count(const struct master *m)
{
    return m->sched.ready ? (uint32_t)rq_size(m->sched.ready) : 0;
}

/* Node i's accounting (sched/placement.h), for reports. */
static inline const struct placement_node *master__node_load(const struct master *m, int i)
{
    return placement_node_at(m->sched.place, i);
}

/* ---- master_events.c ------------------------------------------------------ */

/* Open the logs cfg asks for, and per-task numbers if they want task
 * events: 0, or -1 (logged). */
int master__events_open(struct master_events *ev, const struct master_config *cfg, uint32_t ntasks);
/* The workflow's start event (every output opened). */
void master__events_start(struct master_events *ev);
/* The workflow's end: SUCCESS when ok and no log lost lines, else
 * FAILURE; then close.  ok, false when a log lost lines (logged). */
bool master__events_end(struct master_events *ev, bool ok);
void master__events_free(struct master_events *ev);

static inline bool master__events_per_task(const struct master_events *ev)
{
    return ev->seq != NULL;
}

/* Task t's submit sequence number and EXECUTE flag (events on): the
 * per-task entries, or a live instance's. */
static inline uint32_t *master__seq_of(const struct master *m, uint32_t t)
{
    return t < m->dag->ntasks ? &m->events.seq[t] : &master__live(m, t)->seq;
}

static inline uint8_t *master__executed_of(const struct master *m, uint32_t t)
{
    return t < m->dag->ntasks ? &m->events.executed[t] : &master__live(m, t)->executed;
}

/* t's attempt was taken back from a node that is gone: the same attempt
 * (sequence number, SUBMIT) runs again elsewhere and writes EXECUTE again
 * when it starts, as a job Condor evicted and ran again. */
static inline void master__events_requeued(struct master *m, uint32_t t)
{
    if (m->events.seq)
        *master__executed_of(m, t) = 0;
}

/* A new attempt of t was queued: new sequence number, SUBMIT. */
static inline void master__events_queued(struct master *m, uint32_t t)
{
    struct master_events *ev = &m->events;
    if (!ev->seq)
        return;
    uint32_t *seq = master__seq_of(m, t);
    *seq = ev->next_seq++;
    *master__executed_of(m, t) = 0;
    monitor_event(ev->monitor, WF_TASK_QUEUED, task_name(m, t), *seq, 0);
}

/* EXECUTE of t's current attempt, stamped start (epoch s), once. */
static inline void master__events_executed(struct master *m, uint32_t t, double start)
{
    struct master_events *ev = &m->events;
    if (!ev->seq || *master__executed_of(m, t))
        return;
    *master__executed_of(m, t) = 1;
    monitor_event_at(ev->monitor, WF_TASK_EXECUTE, task_name(m, t), *master__seq_of(m, t), 0,
                     start);
}

/* SUCCESS or FAILURE (e) of t's current attempt with its exit code. */
static inline void master__events_ended(struct master *m, uint32_t t, enum wf_event e, int code)
{
    if (m->events.seq)
        monitor_event(m->events.monitor, e, task_name(m, t), *master__seq_of(m, t), code);
}

/* ---- master_rescue.c ------------------------------------------------------ */

/* The path (cfg's, or DAG.rescue) and per-task done set for ntasks: 0, or
 * -1 with ENOMEM. */
int master__rescue_init(struct master_rescue *r, const struct master_config *cfg);
int master__rescue_alloc(struct master_rescue *r, uint32_t ntasks, uint64_t ninstances);
/* Check the path, take its lock (not with -n or the null executor), read
 * the old log (not with -s): 0, or -1 with err. */
int master__rescue_load(struct master_rescue *r, const struct master_config *cfg,
                        const struct dag *d, struct pmc_error *err);
/* Start the writer (rewrites the log); 0, or -1 logged. */
int master__rescue_start(struct master_rescue *r, const struct master_config *cfg,
                         const struct dag *d);
/* The writer's error text once it failed, else NULL. */
const char *master__rescue_error(const struct master_rescue *r);
/* Flush and close the writer, keep the lock on the file now at the path:
 * 0, or -1 when the log failed.  *kept: the file at the path is the log
 * and always was; *lost: it is another file (leave it alone). */
int master__rescue_end(struct master_rescue *r, bool *kept, bool *lost);
/* Rewrite the log with the plain tasks keep[t] says and the instances
 * whose bits inst_keep has (NULL: none): 0, or -1 with err. */
int master__rescue_replace(struct master_rescue *r, const struct dag *d, const uint8_t *keep,
                           const uint64_t *inst_keep, struct pmc_error *err);
/* Drop the lock; remove the empty log made for it if the run never wrote it. */
void master__rescue_unlock(struct master_rescue *r);
void master__rescue_free(struct master_rescue *r);

static inline void master__rescue_done(struct master_rescue *r, uint32_t t)
{
    if (r->writer)
        rescue_writer_append(r->writer, t);
}

/* ---- master_forward.c ------------------------------------------------------ */

/* The destination cache (cfg.maxfds) guarded against m's own files:
 * 0, or -1 with err. */
int master__forward_init(struct master *m, struct pmc_error *err);
/* Add the file of st (when ok) to the run's own files as `what`. */
void master__forward_own(struct master_forward *f, const struct stat *st, bool ok,
                         const char *what);
/* Append task t's forwarded data in r to its destinations: 0, or -1
 * (logged) with every block of r cut off again. */
int master__forward_write(struct master *m, uint32_t t, const struct msg_result *r);
/* Close every destination: 0, or -1 (logged) when a close failed. */
int master__forward_close(struct master_forward *f);
void master__forward_free(struct master_forward *f);

/* ---- master_report.c -------------------------------------------------------- */

/* Open -o and -e (truncated): 0, or -1 logged. */
int master__output_open(struct master *m);
void master__output_free(struct master_output *o);
/* The end: merge stdio, close, verdict, statistics, summary; the exit status. */
int master__finish(struct master *m);

/* ---- master_status.c --------------------------------------------------------- */

int master__status_init(struct master *m); /* 0, or -1 (logged) */
void master__status_sent(struct master *m, uint32_t t);
void master__status_finished(struct master *m, uint32_t t, bool failed, int exit_code);
void master__status_tick(struct master *m); /* each scheduling round */
/* The last line, status file and summary: -1 (logged) when a file could
 * not be written (the run fails). */
int master__status_end(struct master *m, bool ok, double wall);
void master__status_free(struct master *m);

#endif
