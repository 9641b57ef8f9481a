/* deadlines.h - the deadlines of a node's running tasks, earliest first.
 *
 * One per node agent (issue 11: "no thread or timer per task"): the agent's
 * loop asks deadlines_timeout_ms() how long it may sleep, and after waking
 * pops every expired entry with deadlines_pop_expired().  An entry is
 * (deadline_ns, slot, gen): slot is the agent's slot index (a small dense
 * number; a slot has at most one entry), gen a generation number the caller
 * bumps whenever it reuses a slot, handed back unchanged so that the caller
 * can recognise an entry left over from the slot's previous task.
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

/* An empty heap that owns no memory yet.  Always 0 (it allocates nothing);
 * free with deadlines_free(). */
int deadlines_init(struct deadlines *h);

/* Make room for slots 0 .. nslots-1, so that no later call with such a
 * slot allocates.  0, or -1 with ENOMEM (h is unchanged). */
int deadlines_reserve(struct deadlines *h, uint32_t nslots);

/* Give slot the entry (deadline_ns, gen): insert it, or, when the slot has
 * an entry, replace that entry's deadline and gen and move it (earlier or
 * later) to its place.  0, or -1 with ENOMEM (only when slot is beyond what
 * was reserved or seen before; h is then unchanged) or EINVAL (slot is
 * UINT32_MAX). */
int deadlines_set(struct deadlines *h, uint32_t slot, uint32_t gen, uint64_t deadline_ns);

/* Remove slot's entry; a slot with none is a no-op. */
void deadlines_remove(struct deadlines *h, uint32_t slot);

/* Whether slot has an entry. */
bool deadlines_has(const struct deadlines *h, uint32_t slot);

/* Entries in the heap. */
uint32_t deadlines_count(const struct deadlines *h);

/* The earliest entry, left in place: true and its fields (any pointer may
 * be NULL), or false when the heap is empty (nothing written). */
bool deadlines_peek(const struct deadlines *h, uint64_t *deadline_ns, uint32_t *slot,
                    uint32_t *gen);

/* When the earliest entry is due (deadline_ns <= now_ns): remove it, write
 * its slot and gen (either pointer may be NULL) and return true; else
 * false.  Call until false to collect every expired entry. */
bool deadlines_pop_expired(struct deadlines *h, uint64_t now_ns, uint32_t *slot, uint32_t *gen);

/* Milliseconds until the earliest deadline, rounded up (1 ns left gives 1),
 * for poll(2)/epoll_wait(2): -1 when the heap is empty (wait forever), 0
 * when the earliest entry is due, at most INT_MAX. */
int deadlines_timeout_ms(const struct deadlines *h, uint64_t now_ns);

/* Free the arrays and leave h empty, as after deadlines_init() (so it may
 * be reused or freed again). */
void deadlines_free(struct deadlines *h);

#ifdef __cplusplus
}
#endif
#endif
