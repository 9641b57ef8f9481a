/* node_queue.h - a node agent's queue of tasks received but not started.
 *
 * The master sends a node more tasks than it can run at once (a prefetch
 * window, docs/design.md section 2), so the node never idles waiting for a round
 * trip.  The agent keeps them here in arrival order (which is the master's
 * priority order) and starts them as its own CPU, memory and GPU accounting
 * allows, with PMC's deferral rule: when the first task does not fit, the
 * first one within the next NQ_DEFER_SCAN entries that fits starts instead,
 * and the others keep their order.
 *
 * Entries hold decoded TASKS items whose strings point into the received
 * message; `batch` is the caller's handle on that message (for reference
 * counting).  A growable power-of-two ring: no allocation once warmed up.
 *
 * Thread-safety: not thread-safe; owned by the agent thread.
 */
#ifndef PMC_NODE_QUEUE_H
#define PMC_NODE_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "io/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NQ_DEFER_SCAN 64

struct node_task {
    struct msg_task t;
    void *batch;
};

struct node_queue {
    struct node_task *ring;
    size_t mask, head, len;
};

/* Append.  0, or -1 with ENOMEM. */
int nq_push(struct node_queue *q, const struct msg_task *t, void *batch);

/* Remove and return the first task that fits cpus_free, memory_free (MB)
 * and gpus_free, looking at most NQ_DEFER_SCAN entries deep.  1 when one
 * was taken, 0 when none fits (or the queue is empty). */
int nq_take_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free, uint32_t gpus_free,
                struct node_task *out);

/* Remove the first task regardless of fit.  1, or 0 when empty. */
int nq_pop(struct node_queue *q, struct node_task *out);

static inline size_t nq_len(const struct node_queue *q)
{
    return q->len;
}

void nq_free(struct node_queue *q);

#ifdef __cplusplus
}
#endif
#endif
