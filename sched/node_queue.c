/* node_queue.c - ring of not-yet-started tasks with bounded deferral; see
 * node_queue.h.  Entry k lives at ring + ((head + k) & mask) * stride: a
 * struct nq_need, then the caller's item_size bytes. */
#include "sched/node_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct nq_need {
    uint32_t cpus, gpus;
    uint64_t memory_mb;
    int32_t prio;
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

static unsigned char *nq_at(const struct node_queue *q, size_t k)
{
    return q->ring + ((q->head + k) & q->mask) * q->stride;
}

static int nq_grow(struct node_queue *q)
{
    size_t cap = q->ring ? (q->mask + 1) * 2 : 64;
    unsigned char *r = malloc(cap * q->stride);
    if (!r)
        return -1;
    for (size_t i = 0; i < q->len; i++)
        memcpy(r + i * q->stride, nq_at(q, i), q->stride);
    free(q->ring);
    q->ring = r;
    q->mask = cap - 1;
    q->head = 0;
    return 0;
}

static int32_t nq_prio(const unsigned char *e)
{
    struct nq_need n;
    memcpy(&n, e, sizeof n);
    return n.prio;
}

/* Room for one more entry: 0, or -1 with ENOMEM. */
static int nq_reserve(struct node_queue *q)
{
    if ((!q->ring || q->len == q->mask + 1) && nq_grow(q) < 0) {
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Fill entry k, whose place the caller made. */
static void nq_put(struct node_queue *q, size_t k, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                   int32_t prio, const void *item)
{
    unsigned char *e = nq_at(q, k);
    struct nq_need need = {.cpus = cpus, .gpus = gpus, .memory_mb = memory_mb, .prio = prio};
    memcpy(e, &need, sizeof need);
    memcpy(e + sizeof need, item, q->item_size);
}

int nq_push(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus, int32_t prio,
            const void *item)
{
    if (nq_reserve(q) < 0)
        return -1;
    size_t k = q->len; /* entries of lower priority move back one place */
    for (; k > 0 && nq_prio(nq_at(q, k - 1)) < prio; k--)
        memcpy(nq_at(q, k), nq_at(q, k - 1), q->stride);
    nq_put(q, k, cpus, memory_mb, gpus, prio, item);
    q->len++;
    return 0;
}

int nq_push_front(struct node_queue *q, uint32_t cpus, uint64_t memory_mb, uint32_t gpus,
                  int32_t prio, const void *item)
{
    if (nq_reserve(q) < 0)
        return -1;
    q->head = (q->head - 1) & q->mask; /* a place in front; entries of */
    q->len++;                          /* higher priority move up one */
    size_t k = 0;
    for (; k + 1 < q->len && nq_prio(nq_at(q, k + 1)) > prio; k++)
        memcpy(nq_at(q, k), nq_at(q, k + 1), q->stride);
    nq_put(q, k, cpus, memory_mb, gpus, prio, item);
    return 0;
}

static int nq_fits(const unsigned char *e, uint32_t cpus_free, uint64_t memory_free,
                   uint32_t gpus_free)
{
    struct nq_need n;
    memcpy(&n, e, sizeof n);
    return n.gpus <= gpus_free && n.cpus <= cpus_free && n.memory_mb <= memory_free;
}

/* Copy entry k's item out and drop the entry: the k entries in front of
 * it move back one place, so the others keep their order. */
static void nq_remove(struct node_queue *q, size_t k, void *out)
{
    memcpy(out, nq_at(q, k) + sizeof(struct nq_need), q->item_size);
    for (; k > 0; k--)
        memcpy(nq_at(q, k), nq_at(q, k - 1), q->stride);
    q->head = (q->head + 1) & q->mask;
    q->len--;
}

/* The position of the first task within NQ_DEFER_SCAN entries that fits
 * and meets the queue's condition, or -1. */
static long nq_find_fit(const struct node_queue *q, uint32_t cpus_free, uint64_t memory_free,
                        uint32_t gpus_free)
{
    size_t depth = q->len < NQ_DEFER_SCAN ? q->len : NQ_DEFER_SCAN;
    for (size_t k = 0; k < depth; k++) {
        const unsigned char *e = nq_at(q, k);
        if (nq_fits(e, cpus_free, memory_free, gpus_free) &&
            (!q->may_start || q->may_start(e + sizeof(struct nq_need), q->may_start_ctx)))
            return (long)k;
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
    const unsigned char *e = nq_at(q, (size_t)k);
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
    for (size_t k = q->len; k-- > 0;) {
        if (!nq_fits(nq_at(q, k), cpus_free, memory_free, gpus_free))
            continue;
        memcpy(out, nq_at(q, k) + sizeof(struct nq_need), q->item_size);
        for (; k + 1 < q->len; k++)
            memcpy(nq_at(q, k), nq_at(q, k + 1), q->stride);
        q->len--;
        return 1;
    }
    return 0;
}

void nq_free(struct node_queue *q)
{
    free(q->ring);
    q->ring = NULL;
    q->mask = q->head = q->len = 0;
}
