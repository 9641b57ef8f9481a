/* spsc_ring.h - bounded single-producer single-consumer FIFO of fixed-size
 * records.
 *
 * The hand-off between two threads that each own one end: Lamport's
 * wait-free ring ("Specifying concurrent program modules", ACM TOPLAS 5(2),
 * 1983) in C11 atomics, with each side caching the other side's position
 * (as in E. Rigtorp's SPSCQueue and Linux's kfifo) so that a push or pop
 * reads the shared line of the other side only when its cached view says
 * full or empty.  Records are opaque: item_size bytes copied in and out.
 * The engine uses two of them between rank 0's master and its node agent
 * (engine/transport/local_link.h): no message, no allocation, no lock per task.
 *
 * Memory orders: the producer writes the record, then publishes its
 * position with a release store; the consumer reads the position with an
 * acquire load before it reads the record, and gives the cell back with a
 * release store of its own position, which the producer loads with acquire
 * before it overwrites the cell.  Positions are free-running 32-bit counts
 * compared by unsigned difference (capacity <= SPSC_RING_MAX).
 *
 * Thread-safety: one producer thread calls spsc_ring_push(), one consumer
 * thread spsc_ring_pop(); spsc_ring_size() is a snapshot from any thread.
 * Create and destroy may not overlap any other call.
 */
#ifndef PMC_SPSC_RING_H
#define PMC_SPSC_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPSC_RING_MAX (UINT32_C(1) << 30)

struct spsc_ring;

/* A ring of at least min_capacity records of item_size bytes (1 .. 4096):
 * min_capacity rounded up to a power of two, at least 2.  The only
 * allocation the ring makes.  NULL with EINVAL (a size out of range) or
 * ENOMEM.  Free with spsc_ring_destroy() (NULL is a no-op). */
struct spsc_ring *spsc_ring_create(uint32_t min_capacity, size_t item_size);
void spsc_ring_destroy(struct spsc_ring *r);

/* Producer: append a copy of item.  false with errno ENOBUFS when the
 * ring is full (nothing changed).  Wait-free. */
bool spsc_ring_push(struct spsc_ring *r, const void *item);

/* Consumer: remove the oldest record into out.  false when empty.
 * Wait-free. */
bool spsc_ring_pop(struct spsc_ring *r, void *out);

/* Records in the ring: exact on either end's thread for what that thread
 * did, a snapshot otherwise.  Any thread. */
uint32_t spsc_ring_size(const struct spsc_ring *r);
uint32_t spsc_ring_capacity(const struct spsc_ring *r);

#ifdef __cplusplus
}
#endif
#endif
