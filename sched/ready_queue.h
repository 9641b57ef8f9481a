/* ready_queue.h - tasks whose parents have all finished, in dispatch order.
 *
 * Order (PMC manual, task option -p): larger priority first, first-in
 * first-out among equal priorities.  The queue is a sorted array of
 * non-empty-or-recent priority buckets, each a growable power-of-two ring of
 * task ids, so push and pop are O(1) for a priority already seen (O(number of
 * priorities) to add a new one).  Deferral (a task that fits nowhere now
 * waits while a lower one runs) is done by the dispatcher: it pops, and puts
 * the tasks it could not place back at the front with rq_push_front() in
 * reverse order, so they keep their place.
 *
 * Thread-safety: not thread-safe; the master's scheduler thread owns it.
 * Memory: 4 bytes per queued task plus ring slack (at most 2x).
 */
#ifndef PMC_READY_QUEUE_H
#define PMC_READY_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ready_queue;

/* NULL with ENOMEM.  Free with rq_destroy() (NULL is a no-op). */
struct ready_queue *rq_create(void);
void rq_destroy(struct ready_queue *q);

/* Append task t with priority prio.  0, or -1 with ENOMEM. */
int rq_push(struct ready_queue *q, uint32_t t, int32_t prio);

/* Put t back at the front of its priority's FIFO.  0, or -1 with ENOMEM. */
int rq_push_front(struct ready_queue *q, uint32_t t, int32_t prio);

/* Tasks queued. */
size_t rq_size(const struct ready_queue *q);

/* Buckets are numbered 0 .. rq_buckets()-1 from the highest priority down;
 * the numbering is stable until the next push of a new priority. */
size_t rq_buckets(const struct ready_queue *q);
int32_t rq_bucket_priority(const struct ready_queue *q, size_t b);
size_t rq_bucket_size(const struct ready_queue *q, size_t b);

/* Pop the front task of bucket b (which must be non-empty). */
uint32_t rq_bucket_pop(struct ready_queue *q, size_t b);

#ifdef __cplusplus
}
#endif
#endif
