/* array_ready.c - the task arrays' readiness; see array_ready.h. */
#include "sched/array_ready.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct array_state {
    uint32_t pending;   /* whole-array prerequisites not met */
    uint32_t ndone;     /* instances done */
    uint32_t need;      /* parent completions per instance (ONE_TO_ONE, K_TO_ONE); 0: none */
    uint8_t width;      /* bytes per counter: 0 (no counters), 1, 2 or 4 */
    bool listed;        /* in ar->open */
    void *arrived;      /* width > 0: per instance, parent completions so far */
    uint64_t *ready;    /* width > 0: counters full, not done, not handed out */
    uint32_t nready;    /* width > 0: bits set in ready */
    uint32_t next;      /* the lowest offset that may be ready (cursor when width 0) */
    uint32_t window;    /* handed out, not yet started */
    uint32_t out_first; /* its array edges out: array_edges[out_first .. + nout - 1] */
    uint32_t nout;
};

struct array_ready {
    const struct dag *d;
    struct array_state *a; /* narrays */
    uint64_t *done;        /* ninstances bits */
    uint32_t *open;        /* arrays that may run and have instances to hand out, in order */
    uint32_t nopen;
};

static inline bool bit_get(const uint64_t *b, uint64_t k)
{
    return (b[k / 64] >> (k % 64)) & 1;
}

static inline void bit_set(uint64_t *b, uint64_t k)
{
    b[k / 64] |= (uint64_t)1 << (k % 64);
}

static inline void bit_clear(uint64_t *b, uint64_t k)
{
    b[k / 64] &= ~((uint64_t)1 << (k % 64));
}

/* Set bits of b in [from, to). */
static uint32_t bits_count(const uint64_t *b, uint64_t from, uint64_t to)
{
    uint32_t n = 0;
    while (from < to && from % 64)
        n += bit_get(b, from++);
    for (; from + 64 <= to; from += 64)
        n += (uint32_t)__builtin_popcountll(b[from / 64]);
    while (from < to)
        n += bit_get(b, from++);
    return n;
}

/* The first set bit of b in [from, to), or to. */
static uint64_t bits_next(const uint64_t *b, uint64_t from, uint64_t to)
{
    while (from < to) {
        uint64_t w = b[from / 64] >> (from % 64);
        if (w)
            return from + (uint64_t)__builtin_ctzll(w) < to ? from + (uint64_t)__builtin_ctzll(w)
                                                            : to;
        from = (from / 64 + 1) * 64;
    }
    return to;
}

static uint32_t count_of(const struct dag *d, uint32_t a)
{
    return dag_array_count(d, a);
}

static uint32_t counter_get(const struct array_state *s, uint32_t j)
{
    switch (s->width) {
    case 1:
        return ((const uint8_t *)s->arrived)[j];
    case 2:
        return ((const uint16_t *)s->arrived)[j];
    default:
        return ((const uint32_t *)s->arrived)[j];
    }
}

/* One more parent completion for offset j; the new count. */
static uint32_t counter_bump(struct array_state *s, uint32_t j)
{
    switch (s->width) {
    case 1:
        return ++((uint8_t *)s->arrived)[j];
    case 2:
        return ++((uint16_t *)s->arrived)[j];
    default:
        return ++((uint32_t *)s->arrived)[j];
    }
}

static bool done_at(const struct array_ready *ar, uint32_t a, uint32_t off)
{
    return bit_get(ar->done, (uint64_t)ar->d->arrays[a].base + off);
}

static bool has_ready(const struct array_ready *ar, uint32_t a)
{
    const struct array_state *s = &ar->a[a];
    return s->width ? s->nready > 0 : s->next < count_of(ar->d, a);
}

/* Array a may run and may have instances: list it once. */
static void list_if_ready(struct array_ready *ar, uint32_t a)
{
    struct array_state *s = &ar->a[a];
    if (!s->listed && s->pending == 0 && has_ready(ar, a)) {
        s->listed = true;
        ar->open[ar->nopen++] = a;
    }
}

/* Offset j of array a got a parent completion. */
static void arrive(struct array_ready *ar, uint32_t a, uint32_t j)
{
    struct array_state *s = &ar->a[a];
    if (counter_bump(s, j) != s->need || done_at(ar, a, j))
        return;
    bit_set(s->ready, j);
    s->nready++;
    if (j < s->next)
        s->next = j;
    list_if_ready(ar, a);
}

/* One whole-array prerequisite of child node v met. */
static void prerequisite_met(struct array_ready *ar, dag_node_t v)
{
    uint32_t b = DAG_NODE_ID(v);
    if (--ar->a[b].pending == 0)
        list_if_ready(ar, b);
}

static bool array_complete(const struct array_ready *ar, uint32_t a)
{
    return ar->a[a].ndone == count_of(ar->d, a);
}

/* ---- creation ----------------------------------------------------------- */

static int alloc_counters(struct array_state *s, uint32_t count)
{
    s->width = s->need <= UINT8_MAX ? 1 : s->need <= UINT16_MAX ? 2 : 4;
    s->arrived = calloc(count, s->width);
    s->ready = calloc((count + 63) / 64, sizeof *s->ready);
    return s->arrived && s->ready ? 0 : -1;
}

/* need, pending and the counters' memory of array b, from its in-edges. */
static int init_array(struct array_ready *ar, const uint8_t *done, uint32_t b)
{
    const struct dag *d = ar->d;
    struct array_state *s = &ar->a[b];
    const uint32_t *ids;
    uint32_t n = dag_node_in_edges(d, DAG_NODE_ARRAY | b, &ids);
    uint64_t need = 0;
    for (uint32_t k = 0; k < n; k++) {
        const struct dag_array_edge *e = &d->array_edges[ids[k]];
        if (e->kind == DAG_EDGE_ONE_TO_ONE || e->kind == DAG_EDGE_K_TO_ONE)
            need += e->k;
        else if (e->kind == DAG_EDGE_FAN_OUT)
            s->pending += !done[e->parent];
        else /* BARRIER */
            s->pending += !array_complete(ar, DAG_NODE_ID(e->parent));
    }
    s->need = need > UINT32_MAX ? UINT32_MAX : (uint32_t)need;
    s->nout = dag_node_out_edges(d, DAG_NODE_ARRAY | b, &s->out_first);
    return s->need ? alloc_counters(s, count_of(d, b)) : 0;
}

/* Count the done parents of each counted instance, then mark those whose
 * counters are full and that are not done themselves. */
static void fill_counters(struct array_ready *ar)
{
    const struct dag *d = ar->d;
    for (uint32_t e = 0; e < d->narray_edges; e++) {
        const struct dag_array_edge *ed = &d->array_edges[e];
        if (ed->kind != DAG_EDGE_ONE_TO_ONE && ed->kind != DAG_EDGE_K_TO_ONE)
            continue;
        uint32_t p = DAG_NODE_ID(ed->parent), c = DAG_NODE_ID(ed->child);
        uint64_t base = d->arrays[p].base, end = base + count_of(d, p);
        for (uint64_t k = bits_next(ar->done, base, end); k < end;
             k = bits_next(ar->done, k + 1, end))
            (void)counter_bump(&ar->a[c], (uint32_t)((k - base) / ed->k));
    }
    for (uint32_t b = 0; b < d->narrays; b++) {
        struct array_state *s = &ar->a[b];
        for (uint32_t j = 0; s->need && j < count_of(d, b); j++)
            if (counter_get(s, j) == s->need && !done_at(ar, b, j)) {
                bit_set(s->ready, j);
                s->nready++;
            }
        if (!s->need) /* the cursor starts past what is done */
            while (s->next < count_of(d, b) && done_at(ar, b, s->next))
                s->next++;
    }
}

struct array_ready *ar_create(const struct dag *d, const uint8_t *done, const uint64_t *inst_done)
{
    struct array_ready *ar = calloc(1, sizeof *ar);
    if (!ar)
        return NULL;
    ar->d = d;
    if (d->narrays == 0)
        return ar;
    size_t words = (d->ninstances + 63) / 64;
    ar->a = calloc(d->narrays, sizeof *ar->a);
    ar->done = calloc(words, sizeof *ar->done);
    ar->open = malloc(sizeof *ar->open * d->narrays);
    if (!ar->a || !ar->done || !ar->open)
        goto fail;
    if (inst_done)
        memcpy(ar->done, inst_done, words * sizeof *ar->done);
    for (uint32_t a = 0; a < d->narrays; a++)
        ar->a[a].ndone =
            bits_count(ar->done, d->arrays[a].base, (uint64_t)d->arrays[a].base + count_of(d, a));
    for (uint32_t b = 0; b < d->narrays; b++)
        if (init_array(ar, done, b) < 0)
            goto fail;
    fill_counters(ar);
    for (uint32_t b = 0; b < d->narrays; b++)
        list_if_ready(ar, b);
    return ar;
fail:
    ar_destroy(ar);
    errno = ENOMEM;
    return NULL;
}

void ar_destroy(struct array_ready *ar)
{
    if (!ar)
        return;
    for (uint32_t a = 0; ar->a && a < ar->d->narrays; a++) {
        free(ar->a[a].arrived);
        free(ar->a[a].ready);
    }
    free(ar->a);
    free(ar->done);
    free(ar->open);
    free(ar);
}

/* ---- events ------------------------------------------------------------- */

uint32_t ar_plain_waits(const struct array_ready *ar, dag_task_t t)
{
    const struct dag *d = ar->d;
    if (d->narray_edges == 0)
        return 0;
    const uint32_t *ids;
    uint32_t n = dag_node_in_edges(d, t, &ids), waits = 0;
    for (uint32_t k = 0; k < n; k++)
        waits += !array_complete(ar, DAG_NODE_ID(d->array_edges[ids[k]].parent));
    return waits;
}

/* Instance offset off of array a is done: its per-instance children, and
 * its array's [*] edges once the array is complete. */
static void instance_done(struct array_ready *ar, uint32_t a, uint32_t off,
                          void (*satisfied)(void *, dag_task_t), void *ctx)
{
    const struct dag *d = ar->d;
    struct array_state *s = &ar->a[a];
    s->ndone++;
    bool complete = s->ndone == count_of(d, a);
    for (uint32_t e = s->out_first; e < s->out_first + s->nout; e++) {
        const struct dag_array_edge *ed = &d->array_edges[e];
        if (ed->kind == DAG_EDGE_ONE_TO_ONE || ed->kind == DAG_EDGE_K_TO_ONE)
            arrive(ar, DAG_NODE_ID(ed->child), off / ed->k);
        else if (complete && ed->kind == DAG_EDGE_FAN_IN)
            satisfied(ctx, ed->child);
        else if (complete) /* BARRIER */
            prerequisite_met(ar, ed->child);
    }
}

void ar_task_done(struct array_ready *ar, dag_task_t t,
                  void (*satisfied)(void *ctx, dag_task_t child), void *ctx)
{
    const struct dag *d = ar->d;
    if (d->narray_edges == 0 && !dag_is_instance(d, t))
        return;
    uint32_t a, index;
    if (dag_instance_of(d, t, &a, &index) == 0) {
        uint64_t k = t - d->ntasks;
        if (!bit_get(ar->done, k)) {
            bit_set(ar->done, k);
            instance_done(ar, a, index - d->arrays[a].first, satisfied, ctx);
        }
        return;
    }
    uint32_t first, n = dag_node_out_edges(d, t, &first);
    for (uint32_t e = first; e < first + n; e++) /* FAN_OUT, the only kind out of a task */
        prerequisite_met(ar, d->array_edges[e].child);
}

bool ar_instance_done(const struct array_ready *ar, dag_task_t t)
{
    return dag_is_instance(ar->d, t) && t - ar->d->ntasks < ar->d->ninstances &&
           bit_get(ar->done, t - ar->d->ntasks);
}

/* ---- handing out -------------------------------------------------------- */

/* The next instance offset of array a to hand out, taken; false when none. */
static bool take_one(struct array_ready *ar, uint32_t a, uint32_t *off)
{
    struct array_state *s = &ar->a[a];
    uint32_t count = count_of(ar->d, a);
    if (s->width) {
        if (s->nready == 0)
            return false;
        uint32_t j = (uint32_t)bits_next(s->ready, s->next, count);
        bit_clear(s->ready, j);
        s->nready--;
        s->next = j + 1;
        *off = j;
        return true;
    }
    while (s->next < count && done_at(ar, a, s->next))
        s->next++;
    if (s->next >= count)
        return false;
    *off = s->next++;
    return true;
}

uint64_t ar_take_ready(struct array_ready *ar, uint32_t window,
                       int (*take)(void *ctx, dag_task_t id, int32_t priority), void *ctx)
{
    const struct dag *d = ar->d;
    uint64_t taken = 0;
    uint32_t kept = 0;
    bool stop = false;
    for (uint32_t k = 0; k < ar->nopen; k++) {
        uint32_t a = ar->open[k], off;
        struct array_state *s = &ar->a[a];
        while (!stop && s->window < window && take_one(ar, a, &off)) {
            s->window++;
            taken++;
            stop = take(ctx, d->ntasks + d->arrays[a].base + off, d->arrays[a].priority) < 0;
        }
        if (has_ready(ar, a))
            ar->open[kept++] = a; /* order kept */
        else
            s->listed = false;
    }
    ar->nopen = kept;
    return taken;
}

void ar_instance_started(struct array_ready *ar, dag_task_t t)
{
    uint32_t a, index;
    if (dag_instance_of(ar->d, t, &a, &index) == 0 && ar->a[a].window > 0)
        ar->a[a].window--;
}

bool ar_has_ready(const struct array_ready *ar)
{
    return ar->nopen > 0;
}

const uint64_t *ar_done_bits(const struct array_ready *ar)
{
    return ar->done;
}
