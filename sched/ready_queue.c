/* ready_queue.c - priority buckets of FIFO rings; see ready_queue.h. */
#include "sched/ready_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct bucket {
    int32_t prio;
    uint32_t *ring; /* capacity mask+1, a power of two */
    uint32_t mask;
    uint32_t head; /* index of the front element (mod capacity) */
    uint32_t len;
};

struct ready_queue {
    struct bucket *b; /* sorted by prio, descending */
    size_t n, cap;
    size_t size;
};

struct ready_queue *rq_create(void)
{
    return calloc(1, sizeof(struct ready_queue));
}

void rq_destroy(struct ready_queue *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->n; i++)
        free(q->b[i].ring);
    free(q->b);
    free(q);
}

/* Index of the bucket of prio, creating it in order if needed; -1 on ENOMEM. */
static long rq_bucket_for(struct ready_queue *q, int32_t prio)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (q->b[mid].prio == prio)
            return (long)mid;
        if (q->b[mid].prio > prio)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (q->n == q->cap) {
        size_t cap = q->cap ? q->cap * 2 : 8;
        struct bucket *nb = realloc(q->b, cap * sizeof *nb);
        if (!nb)
            return -1;
        q->b = nb;
        q->cap = cap;
    }
    memmove(&q->b[lo + 1], &q->b[lo], (q->n - lo) * sizeof *q->b);
    memset(&q->b[lo], 0, sizeof *q->b);
    q->b[lo].prio = prio;
    q->n++;
    return (long)lo;
}

/* Double the ring, unrolling it so the front is at index 0. */
static int rq_grow(struct bucket *b)
{
    uint32_t cap = b->ring ? (b->mask + 1) * 2 : 64;
    uint32_t *r = malloc((size_t)cap * sizeof *r);
    if (!r)
        return -1;
    for (uint32_t i = 0; i < b->len; i++)
        r[i] = b->ring[(b->head + i) & b->mask];
    free(b->ring);
    b->ring = r;
    b->mask = cap - 1;
    b->head = 0;
    return 0;
}

static struct bucket *rq_bucket_with_room(struct ready_queue *q, int32_t prio)
{
    long i = rq_bucket_for(q, prio);
    if (i < 0)
        return NULL;
    struct bucket *b = &q->b[i];
    if ((!b->ring || b->len == b->mask + 1) && rq_grow(b) < 0)
        return NULL;
    return b;
}

int rq_push(struct ready_queue *q, uint32_t t, int32_t prio)
{
    struct bucket *b = rq_bucket_with_room(q, prio);
    if (!b) {
        errno = ENOMEM;
        return -1;
    }
    b->ring[(b->head + b->len) & b->mask] = t;
    b->len++;
    q->size++;
    return 0;
}

int rq_push_front(struct ready_queue *q, uint32_t t, int32_t prio)
{
    struct bucket *b = rq_bucket_with_room(q, prio);
    if (!b) {
        errno = ENOMEM;
        return -1;
    }
    b->head = (b->head - 1) & b->mask;
    b->ring[b->head] = t;
    b->len++;
    q->size++;
    return 0;
}

size_t rq_size(const struct ready_queue *q)
{
    return q->size;
}

size_t rq_buckets(const struct ready_queue *q)
{
    return q->n;
}

int32_t rq_bucket_priority(const struct ready_queue *q, size_t b)
{
    return q->b[b].prio;
}

size_t rq_bucket_size(const struct ready_queue *q, size_t b)
{
    return q->b[b].len;
}

uint32_t rq_bucket_pop(struct ready_queue *q, size_t b)
{
    struct bucket *bk = &q->b[b];
    uint32_t t = bk->ring[bk->head];
    bk->head = (bk->head + 1) & bk->mask;
    bk->len--;
    q->size--;
    return t;
}
