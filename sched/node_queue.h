/* node_queue.h - a node agent's queue of tasks received but not started.
 *
 * The master sends a node more tasks than it can run at once (a prefetch
 * window, docs/design.md section 2), so the node never idles waiting for a round
 * trip.  The agent keeps them here in priority order (larger first, the
 * order of arrival among equal priorities: the master's ready-queue order,
 * PMC manual -p; a task that arrives later with a higher priority than
 * tasks already queued goes in front of them, since the master sent those
 * before the new one was ready) and starts them as its own CPU, memory and
 * GPU accounting allows, with PMC's deferral rule: when the first task does not fit, the
 * first one within the next NQ_DEFER_SCAN entries that fits starts instead,
 * and the others keep their order.  The caller may add a condition of its
 * own that an entry must meet to start (nq_set_condition()).
 *
 * Items are opaque to the queue: the caller gives each one's needs (CPUs,
 * memory in MB, GPUs) and item_size bytes that are copied in and out (the
 * agent keeps a decoded TASKS item and its message's handle there).  A
 * binary heap ordered by (priority, arrival): push, pop and the removal of
 * a task found by the deferral scan are O(log n); the scan visits the
 * first entries in queue order (a best-first walk of the heap, O(k log k)
 * for the k <= NQ_DEFER_SCAN entries it looks at, 1 when the first fits).
 * Entries stay in place in a slab while the heap moves 16-byte keys; both
 * grow by doubling: no allocation once warmed up.  nq_pop_back_fit() (a
 * recall, rare) looks at every entry: O(n).
 *
 * Thread-safety: not thread-safe; owned by the agent thread.
 */
#ifndef PMC_NODE_QUEUE_H
#define PMC_NODE_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NQ_DEFER_SCAN 64

/* A caller's condition on a queued item beyond its needs: true when the
 * item may start now (engine/node/agent.c: no task started here writes the
 * same -F file).  Called with the item in place, for entries whose needs
 * fit, in queue order; it must not change the queue. */
typedef bool (*nq_may_start_fn)(const void *item, void *ctx);

struct nq_key; /* a heap element: an entry's order and its place (node_queue.c) */

struct node_queue {
    unsigned char *slab;  /* cap entries of stride bytes: the needs, then the item */
    struct nq_key *heap;  /* len keys, a binary heap: the first in queue order first */
    uint32_t *free_slots; /* slab entries not in use, nfree of them */
    size_t item_size, stride;
    size_t cap, len, nfree;
    int64_t next_back, next_front; /* arrival numbers of nq_push(), nq_push_front() */
    nq_may_start_fn may_start;     /* NULL: every entry that fits may start */
    void *may_start_ctx;
};

/* An empty queue of items of item_size bytes (> 0), without a condition.
 * No allocation. */
void nq_init(struct node_queue *q, size_t item_size);

/* Make nq_take_fit() and nq_peek_fit() pass over an entry whose needs fit
 * but for which may_start(item, ctx) is false, as they pass over one that
 * does not fit (PMC's deferral rule: refused entries count towards the
 * NQ_DEFER_SCAN looked at); NULL removes the condition.  nq_pop() and
 * nq_pop_back_fit() (tasks leaving the node) do not ask it.  ctx is the
 * caller's, kept while the queue lives. */
void nq_set_condition(struct node_queue *q, nq_may_start_fn may_start, void *ctx);

/* Queue a copy of item (item_size bytes), a task needing cpus, memory_mb
 * (MB) and gpus, of priority prio: behind every entry of priority >= prio,
 * in front of the others.  0, or -1 with ENOMEM. */
int nq_push(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus, int32_t prio,
            const void *item);

/* Queue a copy of item as nq_push() does, but in front of every entry of
 * priority <= prio, behind the others: a task that left the queue's front
 * and comes back (a staged launch taken back, engine/node/agent_stage.c) takes
 * its place again ahead of tasks of its priority that came after it.
 * Several such tasks go back in reverse order, the last taken first.  0,
 * or -1 with ENOMEM.  O(log n). */
int nq_push_front(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                  int32_t prio, const void *item);

/* Remove the first task that fits cpus_free, memory_free (MB) and
 * gpus_free and meets the queue's condition, if any, looking at most
 * NQ_DEFER_SCAN entries deep, and copy its item to out.  1 when one was
 * taken, 0 when none fits (or the queue is empty). */
int nq_take_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free, uint32_t gpus_free,
                void *out);

/* The task nq_take_fit() with the same arguments would take, left in
 * place: a pointer to its item (valid until the queue changes), its needs
 * in *cpus, *memory_mb (MB) and *gpus, and its position in *pos (for
 * nq_take_at()).  NULL when none fits. */
const void *nq_peek_fit(const struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                        uint32_t gpus_free, uint32_t *cpus, uint64_t *memory_mb, uint32_t *gpus,
                        size_t *pos);

/* Remove the task at position pos (from nq_peek_fit(), the queue unchanged
 * since; a place in the heap, not a rank in the order) and copy its item
 * to out; the others keep their order. */
void nq_take_at(struct node_queue *q, size_t pos, void *out);

/* Remove the first task regardless of fit, its item into out.  1, or 0
 * when empty. */
int nq_pop(struct node_queue *q, void *out);

/* Remove the last task that fits cpus_free, memory_free (MB) and gpus_free
 * (the lowest priority, the last come: of those, the one this node would
 * start last), its item into out; the others keep their order.  1, or 0
 * when none fits.  O(queue length). */
int nq_pop_back_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                    uint32_t gpus_free, void *out);

static inline size_t nq_len(const struct node_queue *q)
{
    return q->len;
}

void nq_free(struct node_queue *q);

#ifdef __cplusplus
}
#endif
#endif
