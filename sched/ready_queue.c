/* ready_queue.c - priority buckets of lock-free FIFO rings; see ready_queue.h.
 *
 * Algorithm: each bucket's FIFO is D. Vyukov's bounded MPMC queue
 * ("Bounded MPMC queue", 1024cores.net; sched/mpmc_ring.c), used with many
 * producers (rq_push from any thread) and one consumer (the dispatcher).  The
 * buckets form a sorted index (prio[], descending, binary-searched), which
 * on a sized queue is fixed before threads share it, so rq_push reads it with
 * no synchronisation and no lock; its only shared writes are the ring's and
 * the size counter's (one relaxed fetch-and-add, on a cache line of its own
 * so that it does not evict the index every producer reads).
 *
 * Bucket b = prio[b], ring[b], held[b].  held[b] is a deque owned by the
 * dispatcher, in front of the ring: rq_push_front() prepends to it (the ring
 * cannot take a value at its front), rq_bucket_pop() drains it before the
 * ring.  So the bucket's FIFO is held[b] front to back, then ring[b] oldest
 * first, which is the order the old single ring gave.
 *
 * The first-bucket hint: first <= the first non-empty bucket, whoever
 * pushes.  A push publishes its task, then lowers first to its bucket; the
 * dispatcher raises first past a bucket it found empty, then looks at that
 * bucket again and lowers first back if a push arrived meanwhile.  The two
 * sides are a store-buffering pair, each a seq_cst write then a seq_cst read
 * (the ring's claim of a slot, then first; first, then the ring's size): in
 * the single order of seq_cst operations one of the two reads comes after the
 * other side's write and sees it, so a task is never left below first
 * unseen.  No fence: on x86 the claim is the same locked instruction either
 * way and a seq_cst load a plain load.
 *
 * Invariants: prio[] strictly descending; each ring's capacity is a power of
 * two >= 2, each held deque's 0 or a power of two; on a sized queue the
 * index, the rings and the held deques are never reallocated.
 *
 * Why rq_bucket_pop() may wait and never loses a task: the dispatcher is the
 * rings' only consumer, so dequeue_pos changes only under it.  When
 * rq_bucket_size() counted a ring task, some producer had claimed that
 * position with its CAS and will publish it with its next store; a pop that
 * finds the cell unpublished yields until then.
 */
#include "sched/ready_queue.h"

#include <errno.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "io/spin.h"
#include "sched/mpmc_ring.h"

#define RQ_CACHE_LINE 64
#define RQ_FIRST_SLOTS 64 /* unsized queue: first ring / held capacity */

/* Tasks put back at the front of a bucket; the dispatcher's alone. */
struct rq_held {
    uint32_t *slot;
    uint32_t cap;  /* 0 or a power of two */
    uint32_t head; /* index of the front task */
    uint32_t len;
};

struct ready_queue {
    /* The index, read by every thread; changed only by calls that overlap
     * no other (setup, or any call on an unsized queue). */
    int32_t *prio;           /* strictly descending */
    struct mpmc_ring **ring; /* ring[b] of prio[b] */
    struct rq_held *held;    /* held[b]: written by the dispatcher only, so
                              * kept on cache lines of its own */
    size_t n, cap;
    bool sized; /* no bucket may be added or grown by a push */
    /* Every bucket below first is empty (a lower bound of the first
     * non-empty one, so that a dispatch round skips the drained buckets of
     * higher priority, thousands on a deep DAG whose priorities fall with
     * depth).  Pushes lower it; rq_first_bucket() raises it.  Its own
     * cache line: read by every push, written only when it moves (a bucket
     * drained, or a push below it). */
    alignas(RQ_CACHE_LINE) _Atomic size_t first;
    /* Tasks queued, for an O(1) rq_size(): a push adds 1 before it
     * publishes the task (and takes it back if the push fails), a pop
     * subtracts 1 after taking one, so the count never drops below the
     * tasks a pop can deliver and never goes negative.  Relaxed: it orders
     * nothing, the rings do. */
    alignas(RQ_CACHE_LINE) _Atomic size_t total;
};

/* ---- index and growth (setup, or the unsized fallback) ------------------ */

/* Memory on whole cache lines of its own, for data one thread writes. */
static void *rq_alloc_lines(size_t size)
{
    size = (size + RQ_CACHE_LINE - 1) & ~(size_t)(RQ_CACHE_LINE - 1);
    return aligned_alloc(RQ_CACHE_LINE, size ? size : RQ_CACHE_LINE);
}

/* Where prio is in the index: true with *at its bucket, or false with *at
 * the place it would be inserted. */
static bool rq_find(const struct ready_queue *q, int32_t prio, size_t *at)
{
    size_t lo = 0, hi = q->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (q->prio[mid] == prio) {
            *at = mid;
            return true;
        }
        if (q->prio[mid] > prio)
            lo = mid + 1;
        else
            hi = mid;
    }
    *at = lo;
    return false;
}

/* Double the index arrays.  On failure they may be larger, never changed. */
static int rq_index_grow(struct ready_queue *q)
{
    size_t cap = q->cap ? q->cap * 2 : 8;
    int32_t *p = realloc(q->prio, cap * sizeof *p);
    if (!p)
        return -1;
    q->prio = p;
    struct mpmc_ring **r = realloc(q->ring, cap * sizeof *r);
    if (!r)
        return -1;
    q->ring = r;
    struct rq_held *h = rq_alloc_lines(cap * sizeof *h);
    if (!h)
        return -1;
    if (q->n)
        memcpy(h, q->held, q->n * sizeof *h);
    free(q->held);
    q->held = h;
    q->cap = cap;
    return 0;
}

static uint32_t rq_pow2(uint32_t n)
{
    return n <= 1 ? 1 : UINT32_C(1) << (32 - __builtin_clz(n - 1));
}

/* Give h room for n tasks, keeping its order. */
static int rq_held_fit(struct rq_held *h, uint32_t n)
{
    if (n <= h->cap)
        return 0;
    uint32_t cap = rq_pow2(n);
    uint32_t *s = malloc((size_t)cap * sizeof *s);
    if (!s)
        return -1;
    for (uint32_t i = 0; i < h->len; i++)
        s[i] = h->slot[(h->head + i) & (h->cap - 1)];
    free(h->slot);
    h->slot = s;
    h->cap = cap;
    h->head = 0;
    return 0;
}

/* Give *rp room for n tasks: move its contents, oldest first, to a larger
 * ring.  Exclusive access only. */
static int rq_ring_fit(struct mpmc_ring **rp, uint32_t n)
{
    if (n <= mpmc_ring_capacity(*rp))
        return 0;
    struct mpmc_ring *r = mpmc_ring_create(n);
    if (!r)
        return -1;
    uint32_t t;
    while (mpmc_ring_try_pop(*rp, &t))
        (void)mpmc_ring_try_push(r, t); /* cannot fail: r is larger */
    mpmc_ring_destroy(*rp);
    *rp = r;
    return 0;
}

/* Add the bucket of prio at index position at, its ring and held deque
 * already sized; nothing changes on failure. */
static int rq_insert(struct ready_queue *q, size_t at, int32_t prio, uint32_t ring_slots,
                     uint32_t held_slots)
{
    struct rq_held h = {0};
    struct mpmc_ring *r = mpmc_ring_create(ring_slots);
    if (!r || (held_slots && rq_held_fit(&h, held_slots) < 0) ||
        (q->n == q->cap && rq_index_grow(q) < 0)) {
        mpmc_ring_destroy(r);
        free(h.slot);
        return -1;
    }
    memmove(&q->prio[at + 1], &q->prio[at], (q->n - at) * sizeof *q->prio);
    memmove(&q->ring[at + 1], &q->ring[at], (q->n - at) * sizeof *q->ring);
    memmove(&q->held[at + 1], &q->held[at], (q->n - at) * sizeof *q->held);
    q->prio[at] = prio;
    q->ring[at] = r;
    q->held[at] = h;
    q->n++;
    return 0;
}

/* The unsized fallback of rq_push (front false) and rq_push_front: the
 * bucket of prio, created or grown so that it has room at that end.  Index
 * or -1 with ENOBUFS (sized queue) or ENOMEM. */
static long rq_make_room(struct ready_queue *q, int32_t prio, bool front)
{
    if (q->sized) {
        errno = ENOBUFS;
        return -1;
    }
    size_t b;
    if (!rq_find(q, prio, &b) &&
        rq_insert(q, b, prio, RQ_FIRST_SLOTS, front ? RQ_FIRST_SLOTS : 0) < 0)
        goto nomem;
    struct rq_held *h = &q->held[b];
    uint32_t rcap = mpmc_ring_capacity(q->ring[b]);
    if (front ? h->len == h->cap && rq_held_fit(h, h->cap ? h->cap * 2 : RQ_FIRST_SLOTS) < 0
              : mpmc_ring_size(q->ring[b]) == rcap && rq_ring_fit(&q->ring[b], rcap * 2) < 0)
        goto nomem;
    return (long)b;
nomem:
    errno = ENOMEM;
    return -1;
}

/* ---- life cycle and sizing ---------------------------------------------- */

struct ready_queue *rq_create(void)
{
    struct ready_queue *q = aligned_alloc(RQ_CACHE_LINE, sizeof *q); /* for total */
    if (!q)
        return NULL;
    memset(q, 0, sizeof *q);
    atomic_init(&q->total, 0);
    atomic_init(&q->first, 0);
    return q;
}

void rq_destroy(struct ready_queue *q)
{
    if (!q)
        return;
    for (size_t b = 0; b < q->n; b++) {
        mpmc_ring_destroy(q->ring[b]);
        free(q->held[b].slot);
    }
    free(q->prio);
    free(q->ring);
    free(q->held);
    free(q);
}

int rq_reserve(struct ready_queue *q, int32_t prio, uint32_t n)
{
    if (n > MPMC_RING_MAX) {
        errno = EINVAL;
        return -1;
    }
    size_t b;
    if (!rq_find(q, prio, &b) && rq_insert(q, b, prio, n, n) < 0)
        goto nomem;
    if (rq_ring_fit(&q->ring[b], n) < 0 || rq_held_fit(&q->held[b], n) < 0)
        goto nomem;
    q->sized = true;
    return 0;
nomem:
    errno = ENOMEM;
    return -1;
}

/* A priority and the number of tasks that have it. */
struct rq_count {
    int32_t prio;
    uint32_t n; /* 0: a free slot of the count table */
};

/* The slot of prio in a count table of c slots (a power of two): its own,
 * or the free one where it goes.  Linear probing from a Fibonacci-hashed
 * home slot (Knuth, TAOCP vol. 3, 6.4). */
static size_t rq_count_slot(const struct rq_count *tab, size_t c, int32_t prio)
{
    size_t i = (size_t)(((uint32_t)prio * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (c - 1);
    while (tab[i].n && tab[i].prio != prio)
        i = (i + 1) & (c - 1);
    return i;
}

/* The table of c slots moved into one of 2c; old is freed.  NULL (old freed
 * too) with ENOMEM. */
static struct rq_count *rq_count_grow(struct rq_count *old, size_t c)
{
    struct rq_count *tab = calloc(2 * c, sizeof *tab);
    for (size_t k = 0; tab && k < c; k++)
        if (old[k].n)
            tab[rq_count_slot(tab, 2 * c, old[k].prio)] = old[k];
    free(old);
    return tab;
}

/* The counts of the distinct priorities of tp[0 .. n-1], in a table of *cap
 * slots (a power of two, load <= 1/2; free slots have n == 0): O(n) with a
 * table the size of the distinct priorities, rather than sorting all n
 * with qsort(), which is slow at the start of a huge DAG.  NULL with ENOMEM. */
static struct rq_count *rq_count_priorities(const int32_t *tp, uint32_t n, size_t *cap)
{
    size_t c = 256, used = 0;
    struct rq_count *tab = calloc(c, sizeof *tab);
    for (uint32_t t = 0; tab && t < n; t++) {
        if (used == c / 2 && (tab = rq_count_grow(tab, c)) != NULL)
            c *= 2;
        if (!tab)
            break;
        size_t i = rq_count_slot(tab, c, tp[t]);
        used += tab[i].n == 0;
        tab[i].prio = tp[t];
        tab[i].n++;
    }
    *cap = c;
    return tab;
}

static int rq_count_cmp(const void *a, const void *b)
{
    int32_t x = ((const struct rq_count *)a)->prio, y = ((const struct rq_count *)b)->prio;
    return (x < y) - (x > y); /* descending */
}

/* Reserve the distinct priorities of tp[0 .. n-1], each with room for its
 * tasks, in descending order (so each new bucket is appended).  0 or -1
 * with errno. */
static int rq_reserve_priorities(struct ready_queue *q, const int32_t *tp, uint32_t n)
{
    size_t cap, m = 0;
    struct rq_count *tab = rq_count_priorities(tp, n, &cap);
    if (!tab) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t k = 0; k < cap; k++) /* the used slots, packed at the front */
        if (tab[k].n)
            tab[m++] = tab[k];
    qsort(tab, m, sizeof *tab, rq_count_cmp);
    int rc = 0;
    for (size_t k = 0; k < m && rc == 0; k++)
        rc = rq_reserve(q, tab[k].prio, tab[k].n);
    free(tab);
    return rc;
}

struct ready_queue *rq_create_sized(const int32_t *task_prio, uint32_t ntasks)
{
    struct ready_queue *q = rq_create();
    if (!q) {
        errno = ENOMEM;
        return NULL;
    }
    q->sized = true;
    if (rq_reserve_priorities(q, task_prio, ntasks) < 0) {
        int e = errno;
        rq_destroy(q);
        errno = e;
        return NULL;
    }
    return q;
}

/* ---- producers ---------------------------------------------------------- */

/* Lower the first-bucket hint to b after a task was queued in bucket b.
 * seq_cst, like the ring's claim of the slot before it: see the banner. */
static void rq_lower_first(struct ready_queue *q, size_t b)
{
    size_t f = atomic_load_explicit(&q->first, memory_order_seq_cst);
    while (b < f && !atomic_compare_exchange_weak_explicit(&q->first, &f, b, memory_order_seq_cst,
                                                           memory_order_seq_cst))
        ;
}

int rq_push(struct ready_queue *q, uint32_t t, int32_t prio)
{
    size_t b;
    atomic_fetch_add_explicit(&q->total, 1, memory_order_relaxed);
    if (rq_find(q, prio, &b) && mpmc_ring_try_push(q->ring[b], t)) {
        rq_lower_first(q, b); /* the hot path: no allocation, no lock */
        return 0;
    }
    long i = rq_make_room(q, prio, false);
    if (i < 0) {
        atomic_fetch_sub_explicit(&q->total, 1, memory_order_relaxed);
        return -1;
    }
    (void)mpmc_ring_try_push(q->ring[i], t); /* unsized: exclusive, has room */
    rq_lower_first(q, (size_t)i);
    return 0;
}

/* ---- the dispatcher ----------------------------------------------------- */

int rq_push_front(struct ready_queue *q, uint32_t t, int32_t prio)
{
    size_t b;
    if (!rq_find(q, prio, &b) || q->held[b].len == q->held[b].cap) {
        long i = rq_make_room(q, prio, true);
        if (i < 0)
            return -1;
        b = (size_t)i;
    }
    struct rq_held *h = &q->held[b];
    h->head = (h->head - 1) & (h->cap - 1);
    h->slot[h->head] = t;
    h->len++;
    atomic_fetch_add_explicit(&q->total, 1, memory_order_relaxed);
    rq_lower_first(q, b);
    return 0;
}

size_t rq_first_bucket(struct ready_queue *q)
{
    size_t f = atomic_load_explicit(&q->first, memory_order_seq_cst);
    while (f < q->n && rq_bucket_size(q, f) == 0) {
        if (!atomic_compare_exchange_weak_explicit(&q->first, &f, f + 1, memory_order_seq_cst,
                                                   memory_order_seq_cst))
            continue;                    /* a push lowered it (f reloaded), or a spurious failure */
        if (rq_bucket_size(q, f) != 0) { /* a push came in between: see the banner */
            rq_lower_first(q, f);
            break;
        }
        f++;
    }
    return f;
}

size_t rq_size(const struct ready_queue *q)
{
    return atomic_load_explicit(&q->total, memory_order_relaxed);
}

size_t rq_buckets(const struct ready_queue *q)
{
    return q->n;
}

int32_t rq_bucket_priority(const struct ready_queue *q, size_t b)
{
    return q->prio[b];
}

size_t rq_bucket_size(const struct ready_queue *q, size_t b)
{
    return (size_t)q->held[b].len + mpmc_ring_size(q->ring[b]);
}

uint32_t rq_bucket_peek(const struct ready_queue *q, size_t b, uint32_t k)
{
    const struct rq_held *h = &q->held[b];
    if (k < h->len)
        return h->slot[(h->head + k) & (h->cap - 1)];
    uint32_t t;
    return mpmc_ring_peek(q->ring[b], k - h->len, &t) ? t : UINT32_MAX;
}

uint32_t rq_bucket_pop(struct ready_queue *q, size_t b)
{
    struct rq_held *h = &q->held[b];
    if (h->len > 0) {
        uint32_t t = h->slot[h->head];
        h->head = (h->head + 1) & (h->cap - 1);
        h->len--;
        atomic_fetch_sub_explicit(&q->total, 1, memory_order_relaxed);
        return t;
    }
    uint32_t t;
    unsigned spins = 0;
    while (!mpmc_ring_try_pop(q->ring[b], &t)) {
        if (mpmc_ring_size(q->ring[b]) == 0)
            return UINT32_MAX; /* nothing claimed either: the caller's error */
        pmc_spin_wait(&spins); /* a producer between its claim and its publication */
    }
    atomic_fetch_sub_explicit(&q->total, 1, memory_order_relaxed);
    return t;
}
