/* deadlines.h - the deadlines of a node's running tasks, earliest first,
 * so the agent needs no thread or timer per task: it sleeps
 * deadlines_timeout_ms() and pops what expired.  An entry is (deadline_ns,
 * slot, gen): slot a small dense index with at most one entry, gen the
 * caller's generation of the slot, handed back to spot stale entries.
 *
 * Algorithm: an array-backed binary min-heap (J. W. J. Williams,
 * "Algorithm 232: Heapsort", CACM 7(6), 1964; Cormen, Leiserson, Rivest and
 * Stein, "Introduction to Algorithms", 3rd ed., ch. 6 "Heapsort", 6.5
 * "Priority queues"), plus an index pos[slot] of each slot's place in the
 * heap, so that moving or removing a slot's entry is O(log n) instead of a
 * search.  Order: deadline_ns, then slot (a total order, since a slot has
 * one entry, so equal deadlines pop in slot order, deterministically).
 *
 * Invariants: heap[i] <= heap[2i+1], heap[2i+2] in that order; for every
 * entry e at index i, pos[e.slot] == i + 1; pos[s] == 0 for every slot s
 * without an entry.
 *
 * Costs: set, remove and pop O(log n), peek and timeout O(1), n the number
 * of entries.  Memory: 16 bytes per heap place and 4 per slot index; both
 * arrays grow (doubling) to the largest slot number seen + 1 and never
 * shrink.  After deadlines_reserve(h, nslots), no call with slot < nslots
 * allocates: the agent reserves its slot count once and its loop never
 * calls malloc.
 *
 * Units: deadlines and now are nanoseconds on any one clock the caller
 * chooses (CLOCK_MONOTONIC is meant), timeouts milliseconds.
 *
 * Thread-safety: not thread-safe; one thread (the agent's loop) owns a
 * struct deadlines.  Distinct heaps are independent.
 */
#ifndef PMC_DEADLINES_H
#define PMC_DEADLINES_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct deadline_entry {
    uint64_t deadline_ns;
    uint32_t slot;
    uint32_t gen;
};

/* Embedded in its owner; the fields are private to deadlines.c. */
struct deadlines {
    struct deadline_entry *heap; /* [heap_cap]; heap[0..n-1] is the heap */
    uint32_t *pos;               /* [pos_cap]; index + 1 in heap, 0 = none */
    uint32_t n, heap_cap, pos_cap;
};

/* An empty heap owning no memory.  Always 0. */
int deadlines_init(struct deadlines *h);

/* Make room for slots 0 .. nslots-1, so that no later call with such a
 * slot allocates.  0, or -1 with ENOMEM (h is unchanged). */
int deadlines_reserve(struct deadlines *h, uint32_t nslots);

/* Insert or replace slot's entry.  0, or -1 with ENOMEM (slot beyond what
 * was reserved or seen; h unchanged) or EINVAL (slot is UINT32_MAX). */
int deadlines_set(struct deadlines *h, uint32_t slot, uint32_t gen, uint64_t deadline_ns);

/* Remove slot's entry; a slot with none is a no-op. */
void deadlines_remove(struct deadlines *h, uint32_t slot);

/* Whether slot has an entry. */
bool deadlines_has(const struct deadlines *h, uint32_t slot);

/* Entries in the heap. */
uint32_t deadlines_count(const struct deadlines *h);

/* The earliest entry, left in place (pointers may be NULL); false if empty. */
bool deadlines_peek(const struct deadlines *h, uint64_t *deadline_ns, uint32_t *slot,
                    uint32_t *gen);

/* Pop the earliest entry if deadline_ns <= now_ns (pointers may be NULL);
 * false otherwise.  Call until false. */
bool deadlines_pop_expired(struct deadlines *h, uint64_t now_ns, uint32_t *slot, uint32_t *gen);

/* Milliseconds to the earliest deadline, rounded up, for poll(2): -1 when
 * empty, 0 when due, at most INT_MAX. */
int deadlines_timeout_ms(const struct deadlines *h, uint64_t now_ns);

/* Free the arrays, leaving h as after deadlines_init(). */
void deadlines_free(struct deadlines *h);

#ifdef __cplusplus
}
#endif
#endif
