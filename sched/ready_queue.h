/* ready_queue.h - tasks whose parents have all finished, in dispatch order:
 * larger priority first, FIFO among equals (PMC manual, task option -p).
 *
 * A sorted index of priority buckets, each a bounded lock-free MPMC ring
 * (sched/mpmc_ring.h) with a "held" deque in front for rq_push_front(), so
 * a dispatcher can put back the tasks it could not place, in reverse order,
 * and they keep their place.  A queue sized with rq_create_sized() or
 * rq_reserve() (each priority for the most tasks of it queued at once)
 * never allocates again; a push beyond that fails with ENOBUFS.  An unsized
 * queue (rq_create()) grows as needed, single-threaded.  Memory: 8 + 4
 * bytes per slot, slots a power of two per bucket (docs/modules.md
 * "ready_queue").
 *
 * Thread-safety: on a sized queue rq_push() from any number of threads, at
 * once and with the dispatcher; every other call from one dispatcher
 * thread at a time.  rq_create*, rq_reserve, rq_destroy and every call on
 * an unsized queue overlap no other call.  Bucket numbers of a sized queue
 * never change.  While producers push, sizes are snapshots: rq_bucket_size()
 * never counts a task rq_bucket_pop() will not deliver; rq_size() may count
 * pushes in progress.
 */
#ifndef PMC_READY_QUEUE_H
#define PMC_READY_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ready_queue;

/* An unsized (growing, single-threaded) queue.  NULL with ENOMEM.  Free with
 * rq_destroy() (NULL is a no-op). */
struct ready_queue *rq_create(void);
void rq_destroy(struct ready_queue *q);

/* A sized queue for ntasks tasks of priority task_prio[t] (only read).
 * NULL with ENOMEM or EINVAL (more than 2^30 tasks of one priority). */
struct ready_queue *rq_create_sized(const int32_t *task_prio, uint32_t ntasks);

/* Give prio's bucket room for n tasks, keeping what it holds; the queue is
 * sized from then on.  0, or -1 with ENOMEM or EINVAL (n > 2^30), nothing
 * changed. */
int rq_reserve(struct ready_queue *q, int32_t prio, uint32_t n);

/* Append task t with priority prio.  Producers: any thread (sized queue).
 * 0, or -1 with ENOBUFS (sized queue: prio not reserved or its bucket full)
 * or ENOMEM (unsized queue). */
int rq_push(struct ready_queue *q, uint32_t t, int32_t prio);

/* Put t back at the front of its priority's FIFO.  0, or -1 as rq_push(). */
int rq_push_front(struct ready_queue *q, uint32_t t, int32_t prio);

/* Tasks queued, O(1). */
size_t rq_size(const struct ready_queue *q);

/* Buckets 0 .. rq_buckets()-1, highest priority first; empty ones stay. */
size_t rq_buckets(const struct ready_queue *q);
int32_t rq_bucket_priority(const struct ready_queue *q, size_t b);
size_t rq_bucket_size(const struct ready_queue *q, size_t b);

/* The task k places behind bucket b's front (0: the next pop), removing
 * nothing; UINT32_MAX when none or not yet published.  A prefetch hint. */
uint32_t rq_bucket_peek(const struct ready_queue *q, size_t b, uint32_t k);

/* The first bucket that may hold a task (rq_buckets() when all are empty);
 * a concurrent push to an earlier one is seen by the next call.  Amortised
 * O(1): each drained bucket is passed once until a push refills it. */
size_t rq_first_bucket(struct ready_queue *q);

/* Pop bucket b's front task; b must be non-empty per rq_bucket_size().  May
 * wait for a producer finishing that slot.  UINT32_MAX on an empty bucket. */
uint32_t rq_bucket_pop(struct ready_queue *q, size_t b);

#ifdef __cplusplus
}
#endif
#endif
