/* agent.h - the node agent: runs the tasks the master sends to this rank.
 *
 * One agent per host (docs/design.md sections 1-2, sched/hosts.h), holding all of
 * the host's CPUs and memory.  Its thread registers with the master (HELLO:
 * hostname, ranks on the machine, CPUs, memory), then
 * loops on one epoll set holding its mailbox's eventfd, a pidfd per
 * running task and its forwarding pipes.  Received tasks wait in a local
 * queue (the master sends a prefetch window beyond the node's CPUs) and start
 * with spawn_task() as the rank's own CPU and memory accounting allows; exited
 * tasks are reaped through their pidfds, each task's captured stdout +
 * cluster-task record is appended to DAGFILE.out.R and its stderr to
 * DAGFILE.err.R, and results go back in adaptive RESULTS batches (at once
 * when nothing is queued, else 24 results or a short delay).  No thread per
 * task, no busy wait.
 *
 * SHUTDOWN: finish running tasks, close the files, reply BYE, end.
 * ABORT: SIGTERM every running task's process group, SIGKILL after
 * kill_grace_ms, report them, close the files, reply BYE, end.
 *
 * Thread-safety: agent_create/agent_start/agent_join/agent_destroy are
 * called by the rank's main thread; everything else runs on the agent
 * thread.
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
    const char *task_dir;       /* the DAG file's directory */
    bool set_affinity;          /* bind each task to PMC_CPUS PUs, export PMC_AFFINITY */
    bool keep_affinity;         /* --keep-affinity: bind within the inherited CPUs */
    bool strict_limits;         /* RLIMIT_AS = the task's memory request */
    const struct gpu_ids *gpus; /* the host's GPUs (engine/host/gpus.h); must outlive
                                   the agent; NULL = none */
    bool thread_env;            /* OMP_NUM_THREADS & co. from the task's CPUs */
    uint32_t kill_grace_ms;     /* SIGTERM -> SIGKILL, time limits and aborts */
    uint32_t launch_threads;    /* launcher threads (launcher.h); 0: spawn on the agent thread */
    /* stage launches in the pool (engine/node/agent_stage.c): worth it while the
     * node runs no more tasks than it has CPUs to run them on */
    bool stage_launches;
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
/* Take tasks from l and give events back through it instead of TASKS and
 * RESULTS/STARTED messages: the agent of the master's own rank
 * (engine/transport/local_link.h).  Call before agent_start(); l must outlive the
 * agent thread. */
void agent_set_local_link(struct agent *a, struct local_link *l);

/* Start the agent thread; it sends HELLO through c first.  0, or -1 with err. */
int agent_start(struct agent *a, struct comm *c, struct pmc_error *err);

/* Wait for the agent thread to end (after SHUTDOWN or ABORT).  Returns 0 if
 * it ended cleanly, -1 if it had to stop on an error (already logged). */
int agent_join(struct agent *a);

/* CPU time of the agent thread and of its launcher threads over the run,
 * nanoseconds (read by the agent thread as it ends), the results it
 * reported: tasks that ran, and those that failed to start or were
 * cancelled unstarted (with --null-executor, every task), and the number
 * of launcher threads it ran (0: the agent thread started every task).
 * Valid after agent_join(). */
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
