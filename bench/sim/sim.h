/* sim.h - a discrete-event simulation of one pmc-hybrid job: the real master
 * (engine/master*.c as built into pmccore, unmodified, with its dispatch
 * policy sched/placement.h) driving thousands of virtual node agents.
 *
 * The model (docs/design.md sections 2 and 8):
 *   - ranks 0..N-1 are virtual nodes of `cores` CPUs and `memory_mb` MB;
 *     every one says HELLO before master_begin();
 *   - the transport is sim.c's own comm.h implementation (the real
 *     engine/transport/comm.c and comm_mpi.c are not linked): a message the master sends
 *     reaches its node `latency` virtual seconds later, and a node's message
 *     reaches the master's mailbox `latency` later;
 *   - a node queues received tasks in the real sched/node_queue.h and starts
 *     them as its own CPU and memory accounting allows (PMC's deferral rule);
 *     a task runs for its DAG duration (simdag.h) times `time_scale`;
 *   - a node batches RESULTS by the engine's rule, sched/result_batch.h
 *     (cfg.batching, result_batch_defaults(): at once at 32 results, when
 *     no task waits to start or when shutting down, once when its running
 *     and queued tasks fall to the master's refill mark, else 2 ms, 40 ms
 *     while a full round of tasks is queued, 100 ms when moreover no
 *     waiting result is of a task with children, of virtual time after its
 *     oldest result's task ended);
 *   - master_step() runs whenever messages were delivered to it.  Its real
 *     CPU time (CLOCK_THREAD_CPUTIME_ID around the call, minus the clock's
 *     own cost) is what the simulation measures.  By default the master is
 *     ideal: a step takes no virtual time, so the CPU it needs per virtual
 *     second (its utilisation) may exceed 1, which is where a real master
 *     could no longer keep up.  With charge_master the master is a serial
 *     server: a step's measured CPU time passes in virtual time before its
 *     TASKS leave, mail arriving meanwhile waits for the next step (so
 *     steps batch more under load, as in master_run()), and utilisation
 *     cannot pass 1; the makespan shows the cost instead.
 * Simplifications: node agents cost nothing and start tasks instantly (no
 * spawn cost, no output, no rescue-log fsync unless cfg.rescue); tasks never
 * fail; latency is one constant (no bandwidth, no contention); the master's
 * CPU is this machine's.
 *
 * Events are (time, sequence) ordered in one binary min-heap; events of the
 * same instant are applied together (as one pass of an agent's epoll loop),
 * then every node they touched starts tasks and decides on its results,
 * then the master steps once.
 *
 * Thread-safety: one simulation at a time, on one thread (the comm.h
 * functions find the running simulation through their struct comm).
 */
#ifndef PMC_SIM_H
#define PMC_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"
#include "sched/result_batch.h"

#ifdef __cplusplus
extern "C" {
#endif

struct sim_config {
    const char *dag_path; /* the DAG the master loads (e.g. simdag_write()'s) */
    int nodes;            /* virtual nodes = MPI ranks */
    uint32_t cores;       /* CPUs per node */
    uint64_t memory_mb;   /* memory per node */
    double latency;       /* one-way message latency, virtual seconds */
    double time_scale;    /* task duration = DAG duration * time_scale */
    double window;        /* utilisation window, virtual seconds (> 0) */
    bool charge_master;   /* see the banner */
    bool rescue;          /* keep the master's rescue log (next to dag_path) */
    const char *timeline; /* CSV per window/10 of virtual time, or NULL */
    /* the nodes' results batching knobs: result_batch_defaults() = the engine's */
    struct result_batch_params batching;
};

struct sim_report {
    uint64_t tasks;                 /* tasks that completed */
    double makespan;                /* virtual s, start to the last step */
    double cpu_begin, cpu_end;      /* master_begin() / master_end(), s */
    double cpu_steps;               /* all master_step() calls, s */
    double cpu_first_step;          /* the first step (initial fill), s */
    double cpu_step_max;            /* the longest single step, s */
    uint64_t steps;                 /* master_step() calls */
    uint64_t mails_to_master;       /* every message that reached the master */
    uint64_t task_msgs, tasks_sent; /* TASKS messages and their tasks */
    uint64_t result_msgs, results;  /* RESULTS messages and their results */
    uint64_t bytes_to_nodes, bytes_to_master;
    double util_avg;           /* cpu_steps / makespan */
    double util_peak;          /* busiest window, first step excluded */
    double util_peak_at;       /* virtual time the busiest window starts */
    double peak_msgs_to_nodes; /* busiest window, messages per second (fill excluded) */
    double peak_msgs_to_master;
    double busy_max;     /* most CPUs running at once / all CPUs */
    double busy_at_peak; /* the same within the busiest window */
    double clock_cost;   /* subtracted from each timed call, s */
    double wall;         /* real seconds the simulation took */
    int exit_status;     /* master_end()'s */
};

/* Run one simulation.  Returns 0 with *out filled (out->exit_status tells
 * whether the workflow succeeded), or -1 with err when it could not run
 * (bad DAG, out of memory, a stall: the master waits while nothing is in
 * flight). */
int sim_run(const struct sim_config *cfg, struct sim_report *out, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
