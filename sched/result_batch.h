/* result_batch.h - when a node agent sends the results (and start notices)
 * it has gathered: adaptive result batching (docs/design.md)
 * ("results batching").  The one copy of the rule: engine/node/agent.c applies
 * it in real time (agent_result_wait_ms()), bench/sim/sim.c in virtual time
 * (sim_node_flush()), the simulator with its what-if knobs in
 * struct result_batch_params.
 *
 * The rule: send at once when RESULT_BATCH results wait, when the node has
 * nothing left to start (the master must refill it, or waits for these
 * results to release children), when ending (shutting down or draining),
 * when asked to (a failure that holds the node, tasks given back at a
 * recall), or once per refill when the node's running and queued tasks fall
 * to the master's refill mark (placement_refill_mark(): the master reopens
 * the node on these results).  Otherwise let them gather for RESULT_DELAY_MS
 * after the oldest waiting item's clock; RESULT_DELAY_BUSY_MS while a full
 * round of tasks (one per CPU) waits to start here, and RESULT_DELAY_LEAF_MS
 * when moreover no waiting result is of a task with children: such results
 * only free resources, and the master does not need them while the node is
 * fed (bigger messages).  The clock of a result starts at its task's end,
 * so time the agent took to see the exit
 * counts toward its delay.
 *
 * Pure policy: no clock, no I/O, no state of its own; thread-safe.
 */
#ifndef PMC_SCHED_RESULT_BATCH_H
#define PMC_SCHED_RESULT_BATCH_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RESULT_BATCH 32          /* results that make a RESULTS message go at once */
#define RESULT_DELAY_MS 2        /* longest a result waits for companions, ms ... */
#define RESULT_DELAY_BUSY_MS 40  /* ... unless a full round of tasks is queued, ms */
#define RESULT_DELAY_LEAF_MS 100 /* ... or only results of tasks without children wait, ms */

/* The rule's knobs.  result_batch_defaults() gives the engine's; the
 * simulator (pmc-sim --result-batch, --result-delay-us, --flush-below)
 * changes them for what-ifs.  Delays in seconds. */
struct result_batch_params {
    uint32_t batch;      /* results that go at once: RESULT_BATCH */
    double delay;        /* s: RESULT_DELAY_MS */
    double delay_busy;   /* s, while >= cpus tasks wait to start: RESULT_DELAY_BUSY_MS */
    double delay_leaf;   /* s, the same when no waiting result releases children:
                            RESULT_DELAY_LEAF_MS */
    uint32_t send_below; /* send at once while fewer tasks wait to start: 1 */
    bool low_water;      /* send once at the refill mark: true */
};

/* What a node knows when it decides.  Counts are of items, not bytes. */
struct result_batch_state {
    uint32_t results;    /* results waiting to be sent */
    uint32_t notices;    /* start notices waiting to be sent */
    bool releases;       /* a waiting result is of a task with children */
    uint64_t waiting;    /* tasks waiting to start here (queued or staged) */
    uint64_t load;       /* running + queued tasks, 1 CPU a task (result_batch_low_water()) */
    uint32_t cpus;       /* the node's CPUs (the master's view) */
    bool ending;         /* shutting down or draining */
    bool send_now;       /* asked to send at the next look */
    bool low_water_sent; /* the refill mark's send went since load last passed the mark */
    double waited;       /* s since the oldest waiting item's clock (>= 0) */
};

/* The engine's knobs (the constants above). */
struct result_batch_params result_batch_defaults(void);

/* True when a node of `cpus` CPUs with `load` running and queued tasks is at
 * the master's refill mark (load <= placement_refill_mark(cpus)): its
 * unsent results are what the master waits for to refill it.  The caller
 * clears its low_water_sent while this is false and sets it when it sent
 * while this was true (the refill mark's send goes once per refill). */
bool result_batch_low_water(uint64_t load, uint32_t cpus);

/* How long to wait before sending, in seconds: 0 = send now, > 0 = look
 * again after that long (the state unchanged, it is then 0), < 0 = nothing
 * waits (no result and no notice).  p and st are read only. */
double result_batch_wait(const struct result_batch_params *p, const struct result_batch_state *st);

#ifdef __cplusplus
}
#endif
#endif
