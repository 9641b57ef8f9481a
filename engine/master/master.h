/* master.h - rank 0's workflow engine: the DAG's dependencies, dispatch to
 * the node agents (policy: sched/placement.h), the rescue log and the
 * end-of-run report (docs/design.md sections 1-2).
 *
 * Thread-safety: master_* functions run on one thread; only the mailbox
 * and master_request_abort() may be used from other threads.
 */
#ifndef PMC_MASTER_H
#define PMC_MASTER_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/comm.h"
#include "engine/transport/mailbox.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct master_config {
    const char *dag_path;
    const char *rescue_path;       /* default DAG_PATH.rescue */
    bool skip_rescue;              /* -s: do not read the old rescue log */
    const char *out_path;          /* -o, NULL = our stdout */
    const char *err_path;          /* -e, NULL = our stderr */
    uint32_t max_failures;         /* -m, 0 = unlimited */
    uint32_t tries;                /* -t, >= 1 */
    double max_wall_time;          /* seconds, 0 = unlimited */
    double wall_start_mono;        /* CLOCK_MONOTONIC s it counts from; 0: master_begin() */
    const char *program;           /* app= of the summary */
    int nranks;                    /* MPI ranks */
    int nagents;                   /* ranks that run a node agent (sched/hosts.h), >= 1 */
    const int *agent_ranks;        /* those nagents ranks (copied); NULL: ranks 0..nagents-1 */
    bool null_executor;            /* benchmark: no rescue log is written */
    bool per_task_stdio;           /* --per-task-stdio: TASK.out.NNN beside the DAG */
    bool nolock;                   /* -n: do not lock the DAG file */
    uint32_t maxfds;               /* --maxfds, 0 = from RLIMIT_NOFILE */
    bool jobstate_log;             /* --jobstate-log */
    bool dagman_log;               /* --monitord-hack */
    bool resource_log;             /* not --no-resource-log */
    bool progress;                 /* progress line on stderr (--progress, or a terminal) */
    const char *status_path;       /* --status: JSON status file, NULL = none */
    const char *summary_json_path; /* --summary-json, NULL = none */
    const char *mpi_library;       /* the MPI library (transport_library_version()), or NULL */
    double task_time_limit;        /* s, default hard limit of a task; 0 = none */
    double stop_at;                /* CLOCK_REALTIME s to stop at; 0 = never */
    const char *stop_reason;       /* where stop_at came from, for the log */
    /* --listen (docs/join.md): agents join over the join link, at any time
     * and in any number; their ranks are join numbers (1, 2, ... never
     * reused), nranks/nagents/agent_ranks are unused, rank 0 runs no agent. */
    bool joined;
    uint32_t min_hosts;    /* --min-hosts: nodes that must say HELLO before dispatch, >= 1 */
    double node_timeout_s; /* --node-timeout: s without a heartbeat before a node is lost */
};

struct master;

/* Load the DAG and the old rescue log, refuse a run two of whose files
 * are one, take the locks.  Nothing is written.  NULL with err ("wf.dag:12:
 * ...") on bad input or ENOMEM. */
struct master *master_create(const struct master_config *cfg, struct pmc_error *err);

/* Open every output before any task starts (-o, -e truncated; the event
 * logs) and check that the rescue log can be written.  0, or -1 after
 * logging the path and the reason; then call master_fail_at_start(). */
int master_open_outputs(struct master *m);

/* End a run that could not start: the rescue log is left as it was, the
 * statistics and [cluster-summary stat="failed"] are printed.  Call
 * instead of master_run(); returns 1, the exit status. */
int master_fail_at_start(struct master *m);

/* The inbox that comm_create() delivers HELLO/RESULTS/BYE/ABORT into. */
struct mailbox *master_mailbox(struct master *m);

/* The loaded DAG (read-only; lives until master_destroy()).  Any thread. */
const struct dag *master_dag(const struct master *m);

struct local_link;
/* Exchange tasks and results with rank 0's own node agent through l
 * (engine/transport/local_link.h) instead of messages.  Before
 * master_begin(); l outlives the run. */
void master_set_local_link(struct master *m, struct local_link *l);

/* master_begin(), master_step() until true (waiting on the mailbox in
 * between), master_end().  The exit status: 0 when every task succeeded,
 * else 1. */
int master_run(struct master *m, struct comm *c);

/* The same in steps, for drivers that own time (the simulator):
 * master_begin() waits for every HELLO (at most 120 s), checks
 * that each task fits a node, starts the rescue log: 0, or -1 when the run
 * failed (call master_end()).  master_step() applies the mails present and
 * dispatches one round without blocking; true when the workflow is over.
 * master_end() waits for every BYE, merges stdio, reports; the exit
 * status. */
int master_begin(struct master *m, struct comm *c);
bool master_step(struct master *m);
int master_end(struct master *m);

/* Ask the running master to abort (signals, from a handler: async-signal-
 * safe).  reason is a static string. */
void master_request_abort(struct master *m, const char *reason);

/* CPU ns of master_run()'s thread (master_begin() to master_end()) and of
 * the rescue log's writer.  After master_run(). */
struct master_cpu {
    uint64_t run_ns, rescue_writer_ns;
};
void master_get_cpu(const struct master *m, struct master_cpu *out);

void master_destroy(struct master *m); /* NULL is a no-op */

#ifdef __cplusplus
}
#endif
#endif
