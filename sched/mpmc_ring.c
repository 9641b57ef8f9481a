/* mpmc_ring.c - Dmitry Vyukov's bounded MPMC queue; see mpmc_ring.h.
 *
 * Algorithm: D. Vyukov, "Bounded MPMC queue", 1024cores.net (2011),
 * https://www.1024cores.net/home/lock-free-algorithms/queues/bounded-mpmc-queue
 * Written here in C11 atomics in the style of Concurrency Kit's ck_ring.
 *
 * State: cells cell[0 .. mask], each {seq, value}; two free-running 32-bit
 * positions, enqueue_pos (next push) and dequeue_pos (next pop).  Position p
 * uses cell p & mask, and that cell's seq says whose turn it is:
 *
 *   seq == p            free: the push at p may claim it
 *   seq == p + 1        full: holds the value pushed at p, the pop at p may
 *                       claim it
 *   seq == p + cap      freed by the pop at p for the push at p + cap
 *
 * A push reads seq at enqueue_pos: equal -> claim the position by CAS
 * (enqueue_pos + 1), write the value, publish seq = p + 1.  seq behind p ->
 * the cell still holds last lap's value: full.  seq ahead -> another producer
 * took p: reload the position.  A pop mirrors it with seq == p + 1, then frees
 * the cell with seq = p + cap.  Each cell is owned by exactly one thread from
 * a successful CAS until its seq store, so value needs no atomics: it is
 * ordered by the seq release/acquire pair alone.  An operation loops only
 * when another thread's operation claimed the position it tried (its CAS
 * failed or the cell had moved on), so some thread always makes progress in
 * claiming; nothing waits inside an operation.
 *
 * Wrap-safe counters: positions and sequence numbers wrap at 2^32 and are only
 * compared through their signed 32-bit difference (mpmc_diff), exact while
 * the true difference is within +-2^31; the differences that occur are within
 * +-cap, cap <= 2^30.  A thread stalled between its load of a position and
 * its CAS for 2^31 operations of other threads could misread it (the same
 * bound as ck_ring's 32-bit counters); tests start the positions just below
 * 2^32 (mpmc_ring__seek) to cross the wrap.
 *
 * Layout: enqueue_pos, dequeue_pos and the read-only mask each own a cache
 * line, so producers, consumers and readers of the mask do not invalidate each
 * other's lines; the cells start on the next line.
 */
#include "sched/mpmc_ring.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>

#define MPMC_CACHE_LINE 64

struct mpmc_cell {
    _Atomic uint32_t seq;
    uint32_t value; /* owned by whoever claimed the cell; see the banner */
};

struct mpmc_ring {
    alignas(MPMC_CACHE_LINE) _Atomic uint32_t enqueue_pos; /* producers' line */
    alignas(MPMC_CACHE_LINE) _Atomic uint32_t dequeue_pos; /* consumers' line */
    alignas(MPMC_CACHE_LINE) uint32_t mask;                /* capacity - 1, read-only */
    alignas(MPMC_CACHE_LINE) struct mpmc_cell cell[];
};

/* a - b as a signed distance on the 2^32 circle (GCC and Clang define the
 * conversion of an out-of-range uint32_t to int32_t as reduction mod 2^32). */
static inline int32_t mpmc_diff(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b);
}

static uint32_t mpmc_round_up(uint32_t n)
{
    return n <= 2 ? 2 : UINT32_C(1) << (32 - __builtin_clz(n - 1));
}

struct mpmc_ring *mpmc_ring_create(uint32_t min_capacity)
{
    if (min_capacity > MPMC_RING_MAX) {
        errno = EINVAL;
        return NULL;
    }
    uint32_t cap = mpmc_round_up(min_capacity);
    size_t size = offsetof(struct mpmc_ring, cell) + (size_t)cap * sizeof(struct mpmc_cell);
    size = (size + MPMC_CACHE_LINE - 1) & ~(size_t)(MPMC_CACHE_LINE - 1);
    struct mpmc_ring *r = aligned_alloc(MPMC_CACHE_LINE, size);
    if (!r) {
        errno = ENOMEM;
        return NULL;
    }
    atomic_init(&r->enqueue_pos, 0);
    atomic_init(&r->dequeue_pos, 0);
    r->mask = cap - 1;
    for (uint32_t i = 0; i < cap; i++) {
        atomic_init(&r->cell[i].seq, i); /* free for the push at position i */
        r->cell[i].value = 0;
    }
    return r;
}

void mpmc_ring_destroy(struct mpmc_ring *r)
{
    free(r);
}

bool mpmc_ring_try_push(struct mpmc_ring *r, uint32_t v)
{
    struct mpmc_cell *c;
    /* relaxed: only a guess of the next free position; the CAS validates it. */
    uint32_t pos = atomic_load_explicit(&r->enqueue_pos, memory_order_relaxed);
    for (;;) {
        c = &r->cell[pos & r->mask];
        /* acquire: pairs with the release store in try_pop that freed this
         * cell for this lap, so that pop's read of the old value happens
         * before our write of the new one below. */
        uint32_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        int32_t d = mpmc_diff(seq, pos);
        if (d == 0) {
            /* The position only elects the one producer that owns the cell;
             * the value is ordered by the cell's seq, not by the position.
             * seq_cst on success all the same: a caller's later seq_cst
             * operation and a consumer's seq_cst read of the size then form
             * a store-buffering pair (ready_queue.c's first-bucket hint); on
             * x86 it is the same locked instruction.  On failure pos is
             * reloaded with the current value. */
            if (atomic_compare_exchange_weak_explicit(&r->enqueue_pos, &pos, pos + 1,
                                                      memory_order_seq_cst, memory_order_relaxed))
                break;
        } else if (d < 0) {
            return false; /* last lap's value is still there: full */
        } else {
            /* Another producer claimed pos already; relaxed as above. */
            pos = atomic_load_explicit(&r->enqueue_pos, memory_order_relaxed);
        }
    }
    c->value = v;
    /* release: publishes the value to the pop whose acquire load of seq
     * reads pos + 1. */
    atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
    return true;
}

bool mpmc_ring_try_pop(struct mpmc_ring *r, uint32_t *v)
{
    struct mpmc_cell *c;
    /* relaxed: only a guess of the next full position; the CAS validates it. */
    uint32_t pos = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
    for (;;) {
        c = &r->cell[pos & r->mask];
        /* acquire: pairs with the release store in try_push that published
         * the value, so our read of it below sees the pushed value. */
        uint32_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        int32_t d = mpmc_diff(seq, pos + 1);
        if (d == 0) {
            /* relaxed: elects the one consumer of the cell, as in push. */
            if (atomic_compare_exchange_weak_explicit(&r->dequeue_pos, &pos, pos + 1,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
        } else if (d < 0) {
            return false; /* not pushed yet (or its push not finished): empty */
        } else {
            /* Another consumer claimed pos already; relaxed as above. */
            pos = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
        }
    }
    *v = c->value;
    /* release: our read of the value happens before the next lap's push
     * (its acquire load reads pos + cap) overwrites it. */
    atomic_store_explicit(&c->seq, pos + r->mask + 1, memory_order_release);
    return true;
}

bool mpmc_ring_peek(const struct mpmc_ring *r, uint32_t k, uint32_t *v)
{
    /* relaxed: the caller is the only consumer, so the position is its own. */
    uint32_t pos = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed) + k;
    const struct mpmc_cell *c = &r->cell[pos & r->mask];
    /* acquire: pairs with the push's release of seq, as in try_pop.  Any
     * other seq (a lap behind: not pushed yet; k >= capacity: another lap)
     * is not the value at pos. */
    if (atomic_load_explicit(&c->seq, memory_order_acquire) != pos + 1)
        return false;
    *v = c->value;
    return true;
}

uint32_t mpmc_ring_size(const struct mpmc_ring *r)
{
    /* A snapshot.  dequeue_pos first: for the ring's only consumer it is
     * its own, exact value, and enqueue_pos read afterwards is at least what
     * any earlier read of it returned (read-read coherence), so the count
     * covers only claimed pushes.  With several consumers the pair can be
     * inconsistent: clamp.  enqueue_pos seq_cst, for the pair that try_push's
     * claim describes (a plain load on x86). */
    uint32_t deq = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
    uint32_t enq = atomic_load_explicit(&r->enqueue_pos, memory_order_seq_cst);
    int32_t d = mpmc_diff(enq, deq);
    if (d < 0)
        return 0;
    return (uint32_t)d > r->mask + 1 ? r->mask + 1 : (uint32_t)d;
}

uint32_t mpmc_ring_capacity(const struct mpmc_ring *r)
{
    return r->mask + 1;
}

int mpmc_ring__seek(struct mpmc_ring *r, uint32_t pos)
{
    /* relaxed throughout: the caller guarantees no other call overlaps. */
    uint32_t enq = atomic_load_explicit(&r->enqueue_pos, memory_order_relaxed);
    uint32_t deq = atomic_load_explicit(&r->dequeue_pos, memory_order_relaxed);
    if (enq != deq) {
        errno = EBUSY;
        return -1;
    }
    for (uint32_t k = 0; k <= r->mask; k++) /* cell of pos + k: free for it */
        atomic_store_explicit(&r->cell[(pos + k) & r->mask].seq, pos + k, memory_order_relaxed);
    atomic_store_explicit(&r->enqueue_pos, pos, memory_order_relaxed);
    atomic_store_explicit(&r->dequeue_pos, pos, memory_order_relaxed);
    return 0;
}
