/* master.h - rank 0's workflow engine: the DAG, the dependency engine, the
 * global scheduler, the rescue log and the end-of-run report.
 *
 * The master runs on rank 0's main thread (docs/design.md sections 1-2).  It
 * waits for every node agent's HELLO, checks that each task fits some node
 * (else "FATAL ERROR: No host is capable of running task NAME"), rewrites
 * the rescue log, then loops: apply RESULTS batches (release children whose
 * last parent finished, retry or fail the task), dispatch ready tasks in
 * priority order with PMC's deferral rule to the nodes with room (per-node
 * CPU, memory and GPU accounting, round-robin across nodes: the policy is
 * sched/placement.h), one TASKS batch per node per round.  It ends with
 * SHUTDOWN (or ABORT) to every agent, waits for their BYE, merges the
 * ranks' stdio files, and prints the statistics and the [cluster-summary]
 * record.
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
    double wall_start_mono;        /* CLOCK_MONOTONIC s the wall time counts from (the
                                      process's start: host scripts and start-up count);
                                      0: from master_begin() */
    const char *program;           /* app= of the summary */
    int nranks;                    /* MPI ranks */
    int nagents;                   /* ranks that run a node agent (sched/hosts.h), >= 1 */
    const int *agent_ranks;        /* those nagents ranks (copied); NULL: ranks 0..nagents-1 */
    bool null_executor;            /* benchmark: no rescue log is written */
    bool per_task_stdio;           /* --per-task-stdio: the agents write TASK.out.NNN
                                      beside the DAG (checked against the run's files) */
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
    double stop_at;                /* CLOCK_REALTIME s: stop then (the batch job's end
                                      less the drain margin); 0 = no such end */
    const char *stop_reason;       /* where stop_at came from, for the log */
};

struct master;

/* Load the DAG and the old rescue log.  Nothing is written.  NULL with err
 * ("wf.dag:12: ..." ) on bad input. */
struct master *master_create(const struct master_config *cfg, struct pmc_error *err);

/* Open every output of the run before any task starts: -o and -e
 * (truncated), jobstate.log, DAG.dagman.out, DAG.resource, and check that
 * the rescue log can be written (its file is not touched).  0, or -1 after
 * logging one message naming the path and the reason; then call
 * master_fail_at_start(). */
int master_open_outputs(struct master *m);

/* End a run that could not start (an output cannot be opened, a host
 * failed its script or could not start its agent): nothing ran, the rescue
 * log is left as it was, the statistics and [cluster-summary stat="failed"]
 * are printed.  Call instead of master_run(); returns 1, the exit status. */
int master_fail_at_start(struct master *m);

/* The inbox that comm_create() delivers HELLO/RESULTS/BYE/ABORT into. */
struct mailbox *master_mailbox(struct master *m);

/* The loaded DAG (read-only; lives until master_destroy()).  Any thread. */
const struct dag *master_dag(const struct master *m);

struct local_link;
/* Give the tasks of this rank's own node agent (rank 0's node) through l
 * instead of TASKS messages, and take its results from l
 * (engine/transport/local_link.h).  Call before master_run()/master_begin(); l must
 * outlive the run.  Without it the master messages every node. */
void master_set_local_link(struct master *m, struct local_link *l);

/* Run the workflow to its end: master_begin(), master_step() until it
 * returns true (sleeping on the mailbox in between), master_end().  Returns
 * the process exit status: 0 when every task succeeded, 1 otherwise. */
int master_run(struct master *m, struct comm *c);

/* The same in steps, for drivers that own time (the simulator, tests):
 * master_begin() waits for every node's HELLO (push them into
 * master_mailbox() first to avoid waiting), checks capability and starts
 * the rescue log: 0, or -1 when the run already failed (then call
 * master_end()).  master_step() applies every mail present and dispatches
 * one round, without blocking; true when the workflow is over.
 * master_end() shuts the agents down (waits for their BYE), merges stdio,
 * prints the report and returns the exit status. */
int master_begin(struct master *m, struct comm *c);
bool master_step(struct master *m);
int master_end(struct master *m);

/* Ask the running master to abort (signals, from a handler: async-signal-
 * safe).  reason is a static string. */
void master_request_abort(struct master *m, const char *reason);

/* CPU time, nanoseconds: of master_run()'s thread from master_begin() to
 * the end of master_end() (the run, not the start-up and DAG parse before
 * it), and of the rescue log's writer thread (read as the run ends).  After
 * master_run(), before master_destroy(). */
struct master_cpu {
    uint64_t run_ns, rescue_writer_ns;
};
void master_get_cpu(const struct master *m, struct master_cpu *out);

void master_destroy(struct master *m); /* NULL is a no-op */

#ifdef __cplusplus
}
#endif
#endif
