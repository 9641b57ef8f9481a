/* spsc_ring.c - Lamport's single-producer single-consumer ring with cached
 * positions; see spsc_ring.h for the algorithm, its sources and the memory
 * orders.
 *
 * Layout: the producer's line (tail, its cached head), the consumer's line
 * (head, its cached tail) and the read-only line (mask, item size) are
 * apart, so the two threads share a line only when one of them looks at the
 * other's position.
 */
#include "sched/spsc_ring.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define SPSC_CACHE_LINE 64

struct spsc_ring {
    alignas(SPSC_CACHE_LINE) _Atomic uint32_t tail; /* next push; producer writes */
    uint32_t head_cache;                            /* producer's view of head */
    alignas(SPSC_CACHE_LINE) _Atomic uint32_t head; /* next pop; consumer writes */
    uint32_t tail_cache;                            /* consumer's view of tail */
    alignas(SPSC_CACHE_LINE) uint32_t mask;         /* capacity - 1 */
    size_t item_size;
    unsigned char *cells; /* (mask + 1) * item_size bytes */
};

struct spsc_ring *spsc_ring_create(uint32_t min_capacity, size_t item_size)
{
    if (min_capacity > SPSC_RING_MAX || item_size == 0 || item_size > 4096) {
        errno = EINVAL;
        return NULL;
    }
    uint32_t cap = 2;
    while (cap < min_capacity)
        cap <<= 1;
    struct spsc_ring *r = aligned_alloc(SPSC_CACHE_LINE, sizeof *r);
    if (!r)
        return NULL;
    memset(r, 0, sizeof *r);
    r->cells = malloc((size_t)cap * item_size);
    if (!r->cells) {
        free(r);
        return NULL;
    }
    r->mask = cap - 1;
    r->item_size = item_size;
    return r;
}

void spsc_ring_destroy(struct spsc_ring *r)
{
    if (r) {
        free(r->cells);
        free(r);
    }
}

bool spsc_ring_push(struct spsc_ring *r, const void *item)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    if (tail - r->head_cache > r->mask) {
        r->head_cache = atomic_load_explicit(&r->head, memory_order_acquire);
        if (tail - r->head_cache > r->mask) {
            errno = ENOBUFS;
            return false;
        }
    }
    memcpy(r->cells + (size_t)(tail & r->mask) * r->item_size, item, r->item_size);
    atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    return true;
}

bool spsc_ring_pop(struct spsc_ring *r, void *out)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    if (head == r->tail_cache) {
        r->tail_cache = atomic_load_explicit(&r->tail, memory_order_acquire);
        if (head == r->tail_cache)
            return false;
    }
    memcpy(out, r->cells + (size_t)(head & r->mask) * r->item_size, r->item_size);
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
    return true;
}

uint32_t spsc_ring_size(const struct spsc_ring *r)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    uint32_t n = tail - head;
    return n > r->mask + 1 ? r->mask + 1 : n; /* tail read later: may run ahead */
}

uint32_t spsc_ring_capacity(const struct spsc_ring *r)
{
    return r->mask + 1;
}
