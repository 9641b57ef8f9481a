/* node_queue.c - ring of not-yet-started tasks with bounded deferral; see
 * node_queue.h. */
#include "sched/node_queue.h"

#include <errno.h>
#include <stdlib.h>

static int nq_grow(struct node_queue *q)
{
    size_t cap = q->ring ? (q->mask + 1) * 2 : 64;
    struct node_task *r = malloc(cap * sizeof *r);
    if (!r)
        return -1;
    for (size_t i = 0; i < q->len; i++)
        r[i] = q->ring[(q->head + i) & q->mask];
    free(q->ring);
    q->ring = r;
    q->mask = cap - 1;
    q->head = 0;
    return 0;
}

int nq_push(struct node_queue *q, const struct msg_task *t, void *batch)
{
    if ((!q->ring || q->len == q->mask + 1) && nq_grow(q) < 0) {
        errno = ENOMEM;
        return -1;
    }
    struct node_task *e = &q->ring[(q->head + q->len) & q->mask];
    e->t = *t;
    e->batch = batch;
    q->len++;
    return 0;
}

static int nq_fits(const struct node_task *e, uint32_t cpus_free, uint64_t memory_free,
                   uint32_t gpus_free)
{
    return e->t.gpus <= gpus_free && e->t.cpus <= cpus_free && e->t.memory_mb <= memory_free;
}

int nq_take_fit(struct node_queue *q, uint32_t cpus_free, uint64_t memory_free, uint32_t gpus_free,
                struct node_task *out)
{
    size_t depth = q->len < NQ_DEFER_SCAN ? q->len : NQ_DEFER_SCAN;
    size_t k = 0;
    while (k < depth &&
           !nq_fits(&q->ring[(q->head + k) & q->mask], cpus_free, memory_free, gpus_free))
        k++;
    if (k == depth)
        return 0;
    *out = q->ring[(q->head + k) & q->mask];
    /* close the gap: the k deferred entries in front move back one place */
    for (; k > 0; k--)
        q->ring[(q->head + k) & q->mask] = q->ring[(q->head + k - 1) & q->mask];
    q->head = (q->head + 1) & q->mask;
    q->len--;
    return 1;
}

int nq_pop(struct node_queue *q, struct node_task *out)
{
    if (q->len == 0)
        return 0;
    *out = q->ring[q->head];
    q->head = (q->head + 1) & q->mask;
    q->len--;
    return 1;
}

void nq_free(struct node_queue *q)
{
    free(q->ring);
    q->ring = NULL;
    q->mask = q->head = q->len = 0;
}
