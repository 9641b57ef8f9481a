/* ready_queue.h - tasks whose parents have all finished, in dispatch order.
 *
 * Order (PMC manual, task option -p): larger priority first, first-in
 * first-out among equal priorities.  The queue is a sorted index of priority
 * buckets (descending); each bucket is a bounded lock-free MPMC ring
 * (sched/mpmc_ring.h, Vyukov's algorithm) of task ids, with a small "held"
 * deque in front of it for the tasks put back with rq_push_front().
 * Deferral (a task that fits nowhere now waits while a lower one runs) is
 * done by the dispatcher: it pops, and puts the tasks it could not place
 * back at the front with rq_push_front() in reverse order, so they keep their
 * place.  rq_bucket_pop() takes the held deque first, then the ring.
 *
 * Sizing.  A queue sized with rq_create_sized() or rq_reserve() never
 * allocates again: every push, push_front and pop is a few atomic operations
 * on preallocated memory (no malloc, no mutex).  Size each priority for the
 * most tasks of that priority that can be queued at once (the number of
 * tasks of that priority in the DAG, since a task is queued at most once at a
 * time).  A push that would need more room (a priority not reserved, or a
 * full bucket) then fails with ENOBUFS.  An unsized queue (rq_create())
 * instead creates buckets and doubles rings as needed: the allocating,
 * single-threaded fallback, not the hot path.
 *
 * Thread-safety.  Two roles:
 *  - producers: rq_push() may be called from any number of threads at once,
 *    concurrently with each other and with the dispatcher, on a sized queue
 *    (tasks released by completions may be pushed from any thread);
 *  - the dispatcher: one thread at a time calls rq_push_front(),
 *    rq_bucket_pop(), rq_size(), rq_buckets(), rq_bucket_priority() and
 *    rq_bucket_size() (the held deque and the rings' consuming side are its
 *    own).
 * rq_create*, rq_reserve and rq_destroy, and every call on an unsized queue,
 * may not overlap any other call.  The bucket index of a sized queue never
 * changes (empty buckets stay), so bucket numbers are stable and producers
 * find their bucket without a lock.
 *
 * Sizes.  rq_size() and rq_bucket_size() are exact when no push runs.  While
 * producers push they are snapshots, never negative.  rq_bucket_size() may
 * miss pushes still in progress but never counts a task that rq_bucket_pop()
 * will not deliver.  rq_size() is a counter that a push raises before it
 * publishes its task (and lowers again if the push fails), so it may count
 * pushes still in progress.
 *
 * Memory: per bucket ~300 bytes, plus a ring of 8 bytes and a held deque of 4
 * bytes per slot, slots a power of two (a sized bucket of n tasks: the next
 * power of two >= n of each, so ~200 MB for 10^7 tasks of one priority).
 * Meant for a modest number of distinct priorities.
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

/* A sized queue for ntasks tasks, task t having priority task_prio[t]: one
 * bucket per distinct priority, each with room for every task of its
 * priority.  The array is only read.  NULL with ENOMEM or EINVAL (more than
 * 2^30 tasks of one priority). */
struct ready_queue *rq_create_sized(const int32_t *task_prio, uint32_t ntasks);

/* Create the bucket of prio if needed and give it room for n queued tasks
 * (in its ring and in its held deque), keeping what it holds.  The queue is
 * sized from then on: no bucket is added or grown by a push any more.  0, or
 * -1 with ENOMEM or EINVAL (n above 2^30), the tasks queued unchanged. */
int rq_reserve(struct ready_queue *q, int32_t prio, uint32_t n);

/* Append task t with priority prio.  Producers: any thread (sized queue).
 * 0, or -1 with ENOBUFS (sized queue: prio not reserved or its bucket full)
 * or ENOMEM (unsized queue). */
int rq_push(struct ready_queue *q, uint32_t t, int32_t prio);

/* Put t back at the front of its priority's FIFO (ahead of every task
 * queued there).  Dispatcher only.  0, or -1 with ENOBUFS or ENOMEM as
 * rq_push(). */
int rq_push_front(struct ready_queue *q, uint32_t t, int32_t prio);

/* Tasks queued (a counter: O(1)).  Dispatcher only. */
size_t rq_size(const struct ready_queue *q);

/* Buckets are numbered 0 .. rq_buckets()-1 from the highest priority down;
 * the numbering is stable until a new priority is added (never, once the
 * queue is sized).  Empty buckets stay.  Dispatcher only. */
size_t rq_buckets(const struct ready_queue *q);
int32_t rq_bucket_priority(const struct ready_queue *q, size_t b);
size_t rq_bucket_size(const struct ready_queue *q, size_t b);

/* The task k places behind the front of bucket b (k = 0: the one
 * rq_bucket_pop() takes next), removing nothing; UINT32_MAX when the bucket
 * holds no k-th task, or its push is not finished.  A hint, for prefetching
 * what dispatching that task will read.  O(1).  Dispatcher only. */
uint32_t rq_bucket_peek(const struct ready_queue *q, size_t b, uint32_t k);

/* The first bucket that may hold a task: every bucket below it is empty
 * (the number of buckets when all are).  Where a dispatch round starts: the
 * drained buckets of higher priority are skipped, each looked at once after
 * it drains, not once per round.  A push that overlaps the call may go to a
 * bucket below the result; the next call sees it.  Dispatcher only; costs
 * a look at each empty bucket it moves past (each again only after a push
 * or a put-back to it lowered the hint). */
size_t rq_first_bucket(struct ready_queue *q);

/* Pop the front task of bucket b, which must be non-empty: rq_bucket_size()
 * counted more tasks than have been popped since.  When a producer has
 * claimed the front slot but not yet written it, waits for it (a few of its
 * instructions, unless it is preempted).  Dispatcher only.  On an empty
 * bucket (a caller error) returns UINT32_MAX. */
uint32_t rq_bucket_pop(struct ready_queue *q, size_t b);

#ifdef __cplusplus
}
#endif
#endif
