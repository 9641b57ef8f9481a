/* mpmc_ring.h - bounded multi-producer multi-consumer FIFO ring of uint32_t.
 *
 * Dmitry Vyukov's "Bounded MPMC queue" (1024cores.net, 2011): an array of
 * cells, each a sequence number and a value, and two positions (enqueue,
 * dequeue) that producers and consumers claim with compare-and-swap.  The
 * capacity is a power of two fixed at creation; push and pop never allocate
 * and take no lock.  See mpmc_ring.c for the algorithm and its memory orders.
 *
 * Progress: a push or a pop that claims a slot finishes in a bounded number
 * of its own steps, but it is not lock-free in the strict sense (Vyukov says
 * so too): while a thread sits between claiming a slot and publishing it,
 * pops of that slot report "empty" (and, one lap later, pushes "full") even
 * though other elements may be behind it.
 *
 * Thread-safety: mpmc_ring_try_push, mpmc_ring_try_pop, mpmc_ring_size and
 * mpmc_ring_capacity may be called from any number of threads at once.
 * mpmc_ring_create, mpmc_ring_destroy and mpmc_ring__seek may not overlap
 * any other call on the same ring.
 */
#ifndef PMC_MPMC_RING_H
#define PMC_MPMC_RING_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest capacity: positions are 32-bit and compared by signed difference,
 * which needs every difference that can occur (up to +-capacity) below 2^31. */
#define MPMC_RING_MAX (UINT32_C(1) << 30)

struct mpmc_ring;

/* A ring holding at least min_capacity values: min_capacity rounded up to a
 * power of two, and at least 2 (the algorithm needs two cells).  The only
 * allocation the ring makes.  NULL with EINVAL (min_capacity above
 * MPMC_RING_MAX) or ENOMEM.  Free with mpmc_ring_destroy (NULL is a no-op). */
struct mpmc_ring *mpmc_ring_create(uint32_t min_capacity);
void mpmc_ring_destroy(struct mpmc_ring *r);

/* Append v.  false when the ring is full (nothing changed). */
bool mpmc_ring_try_push(struct mpmc_ring *r, uint32_t v);

/* Remove the oldest value into *v.  false when the ring is empty (*v not
 * written). */
bool mpmc_ring_try_pop(struct mpmc_ring *r, uint32_t *v);

/* The value k places behind the oldest (k = 0: the one try_pop would take
 * next) into *v, removing nothing; false when that position holds no
 * published value yet (*v not written).  Only for a ring with one consumer,
 * called by that consumer: no pop may run meanwhile (a published value then
 * stays until this thread pops it).  A hint for prefetching; O(1). */
bool mpmc_ring_peek(const struct mpmc_ring *r, uint32_t k, uint32_t *v);

/* Values in the ring, between 0 and the capacity.  Exact when no push or pop
 * is running.  Concurrently it is a snapshot that may be stale, and it counts
 * pushes that claimed a slot but have not finished; for the ring's only
 * consumer it never counts a value that pop will not eventually deliver. */
uint32_t mpmc_ring_size(const struct mpmc_ring *r);

uint32_t mpmc_ring_capacity(const struct mpmc_ring *r);

/* Internal, for tests: move an empty ring's positions to pos, e.g. just
 * below 2^32 to exercise the wrap of the 32-bit positions.  Returns -1 with
 * EBUSY, doing nothing, when the ring is not empty. */
int mpmc_ring__seek(struct mpmc_ring *r, uint32_t pos);

#ifdef __cplusplus
}
#endif
#endif
