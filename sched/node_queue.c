/* node_queue.c - a node's not-yet-started tasks in priority order with
 * bounded deferral; see node_queue.h.
 *
 * An entry lives in slot i of the slab (slab + i * stride: a struct
 * nq_need, then the caller's item_size bytes) from its push to its removal.
 * The order lives in heap[]: one struct nq_key per entry, a binary min-heap
 * on (-priority, arrival).  nq_push() numbers arrivals 0, 1, 2, ... and
 * nq_push_front() -1, -2, ..., so a task put back goes in front of every
 * entry of its priority (and the last put back first), and the order is a
 * total one: the queue order.  The deferral scan walks the heap best
 * first: a small heap of candidate places, the root first, each visited
 * place adding its two children, so the k-th place visited is the k-th
 * entry in queue order.
 */
#include "sched/node_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct nq_need {
    uint32_t cpus, gpus;
    uint64_t memory_mb;
};

struct nq_key {
    int64_t seq;   /* arrival: nq_push() counts up, nq_push_front() down */
    int32_t prio;  /* larger first */
    uint32_t slot; /* the entry's slab slot */
};

void nq_init(struct node_queue *q, size_t item_size)
{
    memset(q, 0, sizeof *q);
    q->item_size = item_size;
    /* the need, then the item, each entry aligned for any scalar */
    q->stride = (sizeof(struct nq_need) + item_size + 15) & ~(size_t)15;
}

void nq_set_condition(struct node_queue *q, nq_may_start_fn may_start, void *ctx)
{
    q->may_start = may_start;
    q->may_start_ctx = ctx;
}

static unsigned char *nq_entry(const struct node_queue *q, uint32_t slot)
{
    return q->slab + (size_t)slot * q->stride;
}

/* a before b in queue order */
static bool nq_before(const struct nq_key *a, const struct nq_key *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

/* Double the room (64 entries at first).  0, or -1 with ENOMEM (nothing
 * changed). */
static int nq_grow(struct node_queue *q)
{
    size_t cap = q->cap ? q->cap * 2 : 64;
    if (cap > UINT32_MAX) {
        errno = ENOMEM;
        return -1;
    }
    unsigned char *slab = realloc(q->slab, cap * q->stride);
    if (!slab)
        return -1;
    q->slab = slab;
    struct nq_key *heap = realloc(q->heap, cap * sizeof *heap);
    if (!heap)
        return -1;
    q->heap = heap;
    uint32_t *free_slots = realloc(q->free_slots, cap * sizeof *free_slots);
    if (!free_slots)
        return -1;
    q->free_slots = free_slots;
    for (size_t i = cap; i-- > q->cap;) /* the lowest new slot on top */
        q->free_slots[q->nfree++] = (uint32_t)i;
    q->cap = cap;
    return 0;
}

/* Move the key at place i up to where it belongs. */
static void nq_sift_up(struct node_queue *q, size_t i)
{
    struct nq_key k = q->heap[i];
    while (i > 0 && nq_before(&k, &q->heap[(i - 1) / 2])) {
        q->heap[i] = q->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->heap[i] = k;
}

/* Move the key at place i down to where it belongs. */
static void nq_sift_down(struct node_queue *q, size_t i)
{
    struct nq_key k = q->heap[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->len)
            break;
        if (c + 1 < q->len && nq_before(&q->heap[c + 1], &q->heap[c]))
            c++;
        if (!nq_before(&q->heap[c], &k))
            break;
        q->heap[i] = q->heap[c];
        i = c;
    }
    q->heap[i] = k;
}

static int nq_insert(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                     int32_t prio, int64_t seq, const void *item)
{
    if (q->nfree == 0 && nq_grow(q) < 0) {
        errno = ENOMEM;
        return -1;
    }
    uint32_t slot = q->free_slots[--q->nfree];
    unsigned char *e = nq_entry(q, slot);
    struct nq_need need = {.cpus = cpus, .gpus = gpus, .memory_mb = memory_mb};
    memcpy(e, &need, sizeof need);
    memcpy(e + sizeof need, item, q->item_size);
    q->heap[q->len] = (struct nq_key){.seq = seq, .prio = prio, .slot = slot};
    nq_sift_up(q, q->len++);
    return 0;
}

int nq_push(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus, int32_t prio,
            const void *item)
{
    if (nq_insert(q, cpus, memory_mb, gpus, prio, q->next_back, item) < 0)
        return -1;
    q->next_back++;
    return 0;
}

int nq_push_front(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                  int32_t prio, const void *item)
{
    if (nq_insert(q, cpus, memory_mb, gpus, prio, q->next_front - 1, item) < 0)
        return -1;
    q->next_front--;
    return 0;
}

static int nq_fits(const unsigned char *e, uint32_t cpus_free, uint64_t memory_free,
                   uint32_t gpus_free)
{
    struct nq_need n;
    memcpy(&n, e, sizeof n);
    return n.gpus <= gpus_free && n.cpus <= cpus_free && n.memory_mb <= memory_free;
}

/* Copy the item of the entry at heap place i out and drop the entry: the
 * last key takes its place and moves to where it belongs. */
static void nq_remove(struct node_queue *q, size_t i, void *out)
{
    uint32_t slot = q->heap[i].slot;
    memcpy(out, nq_entry(q, slot) + sizeof(struct nq_need), q->item_size);
    q->free_slots[q->nfree++] = slot;
    q->heap[i] = q->heap[--q->len];
    if (i < q->len) {
        nq_sift_down(q, i);
        nq_sift_up(q, i);
    }
}

/* The scan's candidates: heap places, a small min-heap in queue order.
 * Each visit takes one and adds at most two: 2 * NQ_DEFER_SCAN + 1 hold
 * them all. */
struct nq_walk {
    size_t place[2 * NQ_DEFER_SCAN + 1];
    size_t n;
};

static void nq_walk_add(const struct node_queue *q, struct nq_walk *w, size_t place)
{
    if (place >= q->len)
        return;
    size_t i = w->n++;
    while (i > 0 && nq_before(&q->heap[place], &q->heap[w->place[(i - 1) / 2]])) {
        w->place[i] = w->place[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->place[i] = place;
}

static size_t nq_walk_next(const struct node_queue *q, struct nq_walk *w)
{
    size_t top = w->place[0], last = w->place[--w->n], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= w->n)
            break;
        if (c + 1 < w->n && nq_before(&q->heap[w->place[c + 1]], &q->heap[w->place[c]]))
            c++;
        if (!nq_before(&q->heap[w->place[c]], &q->heap[last]))
            break;
        w->place[i] = w->place[c];
        i = c;
    }
    if (w->n > 0)
        w->place[i] = last;
    return top;
}

/* The heap place of the first task in queue order within NQ_DEFER_SCAN
 * entries that fits and meets the queue's condition, or -1. */
static long nq_find_fit(const struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                        uint32_t gpus_free)
{
    if (q->len == 0)
        return -1;
    const unsigned char *first = nq_entry(q, q->heap[0].slot); /* most often it fits */
    if (nq_fits(first, cpus_free, memory_free, gpus_free) &&
        (!q->may_start || q->may_start(first + sizeof(struct nq_need), q->may_start_ctx)))
        return 0;
    struct nq_walk w; /* place[] is filled as it grows */
    w.n = 0;
    nq_walk_add(q, &w, 1); /* the first's children: the root is looked at */
    nq_walk_add(q, &w, 2);
    for (size_t k = 1; k < NQ_DEFER_SCAN && w.n > 0; k++) {
        size_t place = nq_walk_next(q, &w);
        const unsigned char *e = nq_entry(q, q->heap[place].slot);
        if (nq_fits(e, cpus_free, memory_free, gpus_free) &&
            (!q->may_start || q->may_start(e + sizeof(struct nq_need), q->may_start_ctx)))
            return (long)place;
        nq_walk_add(q, &w, 2 * place + 1);
        nq_walk_add(q, &w, 2 * place + 2);
    }
    return -1;
}

int nq_take_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free, uint32_t gpus_free,
                void *out)
{
    long k = nq_find_fit(q, cpus_free, memory_free, gpus_free);
    if (k < 0)
        return 0;
    nq_remove(q, (size_t)k, out);
    return 1;
}

const void *nq_peek_fit(const struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                        uint32_t gpus_free, uint32_t *cpus, uint64_t *memory_mb, uint32_t *gpus,
                        size_t *pos)
{
    long k = nq_find_fit(q, cpus_free, memory_free, gpus_free);
    if (k < 0)
        return NULL;
    *pos = (size_t)k;
    const unsigned char *e = nq_entry(q, q->heap[k].slot);
    struct nq_need n;
    memcpy(&n, e, sizeof n);
    *cpus = n.cpus;
    *memory_mb = n.memory_mb;
    *gpus = n.gpus;
    return e + sizeof n;
}

void nq_take_at(struct node_queue *q, size_t pos, void *out)
{
    nq_remove(q, pos, out);
}

int nq_pop(struct node_queue *q, void *out)
{
    if (q->len == 0)
        return 0;
    nq_remove(q, 0, out);
    return 1;
}

int nq_pop_back_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                    uint32_t gpus_free, void *out)
{
    long last = -1; /* the fitting entry last in queue order */
    for (size_t i = 0; i < q->len; i++)
        if (nq_fits(nq_entry(q, q->heap[i].slot), cpus_free, memory_free, gpus_free) &&
            (last < 0 || nq_before(&q->heap[last], &q->heap[i])))
            last = (long)i;
    if (last < 0)
        return 0;
    nq_remove(q, (size_t)last, out);
    return 1;
}

void nq_free(struct node_queue *q)
{
    free(q->slab);
    free(q->heap);
    free(q->free_slots);
    q->slab = NULL;
    q->heap = NULL;
    q->free_slots = NULL;
    q->cap = q->len = q->nfree = 0;
}
