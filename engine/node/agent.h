/* agent.h - the node agent: runs the tasks the master sends to this rank.
 *
 * One agent per host (docs/design.md sections 1-2), holding its CPUs,
 * memory and GPUs.  Its thread says HELLO, queues received tasks, starts
 * them as its accounting allows (engine/exec/), appends each task's output
 * and record to DAGFILE.out.R / .err.R and sends RESULTS in batches
 * (sched/result_batch.h).  SHUTDOWN: finish running tasks, reply BYE.
 * ABORT: SIGTERM every running task's group, SIGKILL after kill_grace_ms,
 * report them, reply BYE.
 *
 * Thread-safety: agent_create/agent_start/agent_join/agent_destroy on the
 * rank's main thread; everything else runs on the agent thread.
 */
#ifndef PMC_AGENT_H
#define PMC_AGENT_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/transport/comm.h"
#include "engine/host/gpus.h"
#include "engine/transport/mailbox.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct agent_config {
    int rank;
    int host_rank;  /* PMC_HOST_RANK: 0, the one agent of its host */
    int host_ranks; /* MPI ranks on this machine (reported in HELLO) */
    int pu_share;   /* --set-affinity: this agent binds tasks to share */
    int pu_shares;  /* pu_share of pu_shares of the machine's PUs (0 of 1) */
    const char *hostname;
    uint32_t cpus;              /* CPUs of the host (all of them) */
    uint64_t memory_mb;         /* memory of the host, MB */
    const char *dag_path;       /* output files are DAG_PATH.out.RANK / .err.RANK */
    bool null_executor;         /* complete every task at once without running it */
    bool per_task_stdio;        /* TASK.out.NNN / TASK.err.NNN in task_dir */
    bool task_records_failed;   /* --task-records failed: no record of a successful attempt */
    const char *task_dir;       /* the DAG file's directory */
    bool set_affinity;          /* bind each task to PMC_CPUS PUs, export PMC_AFFINITY */
    bool keep_affinity;         /* --keep-affinity: bind within the inherited CPUs */
    bool strict_limits;         /* RLIMIT_AS = the task's memory request */
    const struct gpu_ids *gpus; /* the host's GPUs (engine/host/gpus.h); must outlive
                                   the agent; NULL = none */
    bool thread_env;            /* OMP_NUM_THREADS & co. from the task's CPUs */
    uint32_t kill_grace_ms;     /* SIGTERM -> SIGKILL, time limits and aborts */
    uint32_t launch_threads;    /* launcher threads (launcher.h); 0: spawn on the agent thread */
    bool stage_launches;        /* stage launches in the pool (agent_stage.c) */
};

struct agent;

/* Allocate the agent and its mailbox (the strings of cfg are copied), and
 * open its output files DAG_PATH.out.RANK / .err.RANK (append), so that a
 * path that cannot be written fails before any task starts.  NULL with err
 * ("DAG_PATH.out.1: Permission denied"). */
struct agent *agent_create(const struct agent_config *cfg, struct pmc_error *err);

/* The inbox that comm_create() must deliver TASKS/SHUTDOWN/ABORT into. */
struct mailbox *agent_mailbox(struct agent *a);

/* CPUs this agent offers (its HELLO's). */
uint32_t agent_cpus(const struct agent *a);

struct local_link;
/* Rank 0's agent: tasks and events go through l, not messages.  Before
 * agent_start(); l outlives the agent thread. */
void agent_set_local_link(struct agent *a, struct local_link *l);

/* Start the agent thread; it sends HELLO through c first.  0, or -1 with err. */
int agent_start(struct agent *a, struct comm *c, struct pmc_error *err);

/* Leave the run (a joined agent's SIGTERM or allocation end, docs/join.md):
 * the agent sends LEAVING, gives back its queued tasks unstarted and those
 * that still come, lets the running ones finish and report, then ends as
 * after SHUTDOWN (outputs closed, BYE); agent_join() then returns 0.  Not
 * for the ranks of one MPI job (their master must say SHUTDOWN).
 * Async-signal-safe; any thread. */
void agent_leave(struct agent *a);

/* Wait for the agent thread to end (after SHUTDOWN or ABORT).  Returns 0 if
 * it ended cleanly, -1 if it had to stop on an error (already logged). */
int agent_join(struct agent *a);

/* CPU ns of the agent thread and its launchers over the run, the results
 * it reported (ran, failed to start, cancelled) and its launcher threads
 * (0: none).  Valid after agent_join(). */
struct agent_cpu {
    uint64_t agent_ns, launchers_ns, tasks;
    uint32_t launch_threads;
    uint64_t staged_starts; /* staged tasks started by a reaper (launcher_staged_starts()) */
    uint64_t own_waits;     /* tasks their launcher waited for itself (launcher_own_waits()) */
};
void agent_get_cpu(const struct agent *a, struct agent_cpu *out);

void agent_destroy(struct agent *a); /* NULL is a no-op */

#ifdef __cplusplus
}
#endif
#endif
