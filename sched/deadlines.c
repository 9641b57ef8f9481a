/* deadlines.c - binary min-heap of deadlines with a slot index; see
 * deadlines.h.
 *
 * Williams' heap (CLRS ch. 6): sift_up moves an entry towards the root
 * while it precedes its parent, sift_down towards the leaves while a child
 * precedes it.  Every write of an entry goes through place(), which keeps
 * pos[] in step, so the index never disagrees with the heap between calls.
 * A moved or removed entry is re-placed with one sift in the direction its
 * key changed (the other direction would be a no-op).
 */
#include "sched/deadlines.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define DEADLINES_FIRST_CAP 16

/* The heap order: earlier deadline first, then lower slot. */
static bool precedes(const struct deadline_entry *a, const struct deadline_entry *b)
{
    if (a->deadline_ns != b->deadline_ns)
        return a->deadline_ns < b->deadline_ns;
    return a->slot < b->slot;
}

static void place(struct deadlines *h, uint32_t i, struct deadline_entry e)
{
    h->heap[i] = e;
    h->pos[e.slot] = i + 1;
}

static void sift_up(struct deadlines *h, uint32_t i)
{
    struct deadline_entry e = h->heap[i];
    while (i > 0) {
        uint32_t parent = (i - 1) / 2;
        if (!precedes(&e, &h->heap[parent]))
            break;
        place(h, i, h->heap[parent]);
        i = parent;
    }
    place(h, i, e);
}

static void sift_down(struct deadlines *h, uint32_t i)
{
    struct deadline_entry e = h->heap[i];
    for (;;) {
        uint32_t c = 2 * i + 1; /* i < n <= UINT32_MAX / 2: no overflow */
        if (c >= h->n)
            break;
        if (c + 1 < h->n && precedes(&h->heap[c + 1], &h->heap[c]))
            c++;
        if (!precedes(&h->heap[c], &e))
            break;
        place(h, i, h->heap[c]);
        i = c;
    }
    place(h, i, e);
}

/* Re-establish the order around index i, whose entry changed. */
static void fix(struct deadlines *h, uint32_t i)
{
    if (i > 0 && precedes(&h->heap[i], &h->heap[(i - 1) / 2]))
        sift_up(h, i);
    else
        sift_down(h, i);
}

/* The doubling of cap (from DEADLINES_FIRST_CAP) that holds need, or 0 if
 * none fits in 32 bits. */
static uint32_t grown(uint32_t cap, uint32_t need)
{
    uint64_t c = cap ? cap : DEADLINES_FIRST_CAP;
    while (c < need)
        c *= 2;
    return c > UINT32_MAX ? 0 : (uint32_t)c;
}

/* Room for slots 0 .. nslots-1 in pos[] and for nslots entries in heap[]
 * (a slot has at most one entry).  0, or -1 with ENOMEM, h unchanged
 * except for capacity. */
static int reserve(struct deadlines *h, uint32_t nslots)
{
    if (nslots > h->pos_cap) {
        uint32_t cap = grown(h->pos_cap, nslots);
        uint32_t *pos = cap ? realloc(h->pos, sizeof *pos * cap) : NULL;
        if (!pos) {
            errno = ENOMEM;
            return -1;
        }
        memset(pos + h->pos_cap, 0, sizeof *pos * (cap - h->pos_cap));
        h->pos = pos;
        h->pos_cap = cap;
    }
    if (nslots > h->heap_cap) {
        uint32_t cap = grown(h->heap_cap, nslots);
        struct deadline_entry *heap = cap ? realloc(h->heap, sizeof *heap * cap) : NULL;
        if (!heap) {
            errno = ENOMEM;
            return -1;
        }
        h->heap = heap;
        h->heap_cap = cap;
    }
    return 0;
}

int deadlines_init(struct deadlines *h)
{
    memset(h, 0, sizeof *h);
    return 0;
}

int deadlines_reserve(struct deadlines *h, uint32_t nslots)
{
    return reserve(h, nslots);
}

int deadlines_set(struct deadlines *h, uint32_t slot, uint32_t gen, uint64_t deadline_ns)
{
    if (slot == UINT32_MAX) {
        errno = EINVAL;
        return -1;
    }
    struct deadline_entry e = {deadline_ns, slot, gen};
    if (slot < h->pos_cap && h->pos[slot]) {
        uint32_t i = h->pos[slot] - 1;
        place(h, i, e);
        fix(h, i);
        return 0;
    }
    /* A new entry: heap room for n + 1, index room for slot + 1. */
    uint32_t need = slot + 1 > h->n + 1 ? slot + 1 : h->n + 1;
    if (reserve(h, need) < 0)
        return -1;
    place(h, h->n++, e);
    sift_up(h, h->n - 1);
    return 0;
}

void deadlines_remove(struct deadlines *h, uint32_t slot)
{
    if (slot >= h->pos_cap || h->pos[slot] == 0)
        return;
    uint32_t i = h->pos[slot] - 1;
    h->pos[slot] = 0;
    h->n--;
    if (i == h->n)
        return; /* it was the last leaf */
    place(h, i, h->heap[h->n]);
    fix(h, i);
}

bool deadlines_has(const struct deadlines *h, uint32_t slot)
{
    return slot < h->pos_cap && h->pos[slot] != 0;
}

uint32_t deadlines_count(const struct deadlines *h)
{
    return h->n;
}

bool deadlines_peek(const struct deadlines *h, uint64_t *deadline_ns, uint32_t *slot, uint32_t *gen)
{
    if (h->n == 0)
        return false;
    if (deadline_ns)
        *deadline_ns = h->heap[0].deadline_ns;
    if (slot)
        *slot = h->heap[0].slot;
    if (gen)
        *gen = h->heap[0].gen;
    return true;
}

bool deadlines_pop_expired(struct deadlines *h, uint64_t now_ns, uint32_t *slot, uint32_t *gen)
{
    if (h->n == 0 || h->heap[0].deadline_ns > now_ns)
        return false;
    struct deadline_entry top = h->heap[0];
    deadlines_remove(h, top.slot);
    if (slot)
        *slot = top.slot;
    if (gen)
        *gen = top.gen;
    return true;
}

int deadlines_timeout_ms(const struct deadlines *h, uint64_t now_ns)
{
    if (h->n == 0)
        return -1;
    uint64_t at = h->heap[0].deadline_ns;
    if (at <= now_ns)
        return 0;
    uint64_t left = at - now_ns;
    uint64_t ms = left / 1000000u + (left % 1000000u != 0); /* rounded up */
    return ms > INT_MAX ? INT_MAX : (int)ms;
}

void deadlines_free(struct deadlines *h)
{
    free(h->heap);
    free(h->pos);
    memset(h, 0, sizeof *h);
}
