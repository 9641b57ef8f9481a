/* dag.c - the compact DAG model of dag.h: struct-of-arrays tasks, one string
 * arena, a name index, CSR children and Kahn's cycle check.
 *
 * Invariants (before dag_finish()):
 *   - every per-task array has room for priv->task_cap >= ntasks entries;
 *   - arena[0] == '\0' (offset 0 is the empty string) and every string in
 *     the arena is NUL-terminated; arena_len <= UINT32_MAX, so offsets fit;
 *   - the name index is an open-addressing table of any size, linear
 *     probing from a multiply-shift home slot, load <= 2/3; a slot is 0
 *     (empty) or (hash32 << 32 | (id + 1));
 *   - edges are kept as raw (parent, child) pairs, duplicates included.
 * dag_finish() turns the pairs into CSR arrays in O(V + E): a counting sort by
 * parent (stable, so children keep file order), then duplicates are dropped
 * per parent segment with a "last parent seen" stamp per child, then the
 * in-degrees are counted.  Acyclicity is checked with Kahn's algorithm
 * (A. B. Kahn, "Topological sorting of large networks", CACM 5(11), 1962).
 * If Kahn's algorithm leaves tasks unprocessed, every one of them still has an
 * unprocessed parent, so walking from any of them to such a parent must
 * revisit a task: that walk, reversed, is the cycle that is reported.
 *
 * The name hash mixes 8-byte blocks with the block mix of MurmurHash3 x64 and
 * ends with its fmix64 finaliser (A. Appleby, SMHasher, 2011).
 *
 * Memory: every array's allocated size is recorded in priv->bytes.  Arrays of
 * 64 KiB or more live in their own anonymous mappings, so they grow with
 * mremap() (no copy, no heap holes) and are given back by munmap() at once,
 * whatever malloc the program is linked with (glibc would keep heap holes
 * and jemalloc dirty pages otherwise).  dag_finish()
 * frees the raw pairs before it allocates nparents and Kahn's queue, runs Kahn's algorithm
 * on nparents itself (recounting it afterwards) and shrinks every array to
 * its final size, to keep the peak low.  The name index, from 2 MiB, asks
 * for transparent huge pages (MADV_HUGEPAGE): every edge's two lookups read
 * it at random, and with 4 KiB pages each also missed the TLB.  The other
 * arrays do not ask: where the kernel compacts memory for such a region on
 * its first touch (THP defrag "madvise", the kernel's default), a large
 * DAG's arrays cost more system time than with 4 KiB pages, and its load
 * time varied the most.
 * dag_reserve() sizes the index once from an estimate (the doubling rehashed
 * every name and held both tables at once), and dag_prefetch() lets a reader
 * start a lookup's three dependent misses (slot, name offset, name) early.
 *
 * Thread-safety: one thread builds; after a successful dag_finish() the DAG is
 * immutable and any number of threads may read it (dag_lookup() included).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap() */
#endif
#include "io/dag.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "io/grow.h"

#define DAG__MAP_MIN ((size_t)1 << 16)  /* arrays this big get their own mapping */
#define DAG__HUGE_MIN ((size_t)2 << 20) /* and from this size huge pages (THP) */
#define DAG__MIN_TASKS 1024u
#define DAG__MIN_ARENA 65536u
#define DAG__MIN_EDGES 1024u
#define DAG__MIN_SLOTS 2048u
#define DAG__LOAD_NUM 2u /* the index grows past this load (2/3)... */
#define DAG__LOAD_DEN 3u
#define DAG__RESERVE_SLOTS(n) ((n) / 4 * 7) /* ...and dag_reserve() sizes it at 4/7 */
#define DAG__CYCLE_TEXT 400                 /* bytes of cycle text, leaving room for a path */

struct dag__edge {
    dag_task_t parent;
    dag_task_t child;
};

/* Every array of struct dag, each listed once for allocation and freeing. */
/* clang-format off */
#define DAG__TASK_ARRAYS(X) \
    X(name) X(pegasus_id) X(argv) X(argc) X(cpus) X(memory_mb) X(priority) X(tries) X(line) \
    X(fwd_first) X(nfwd) X(gpus) X(time_limit_ms)
#define DAG__OTHER_ARRAYS(X) X(arena) X(fwd) X(child_first) X(children) X(nparents)
/* clang-format on */

/* The allocated size in bytes of each array (0 when NULL). */
struct dag__bytes {
#define DAG__X(f) size_t f;
    DAG__TASK_ARRAYS(DAG__X)
    DAG__OTHER_ARRAYS(DAG__X)
#undef DAG__X
    size_t edges;
    size_t slots;
};

struct dag_private {
    struct dag__bytes bytes;
    uint32_t task_cap; /* every per-task array holds at least this many */

    struct dag__edge *edges; /* raw pairs until dag_finish() */
    size_t nedges_raw;

    uint64_t *slots; /* name index, see the banner */
    size_t slot_cap; /* slots in the index, not necessarily a power of two */

    /* The array names (entry: hash32 << 32 | (id + 1)) and the prefixes A
     * of plain tasks named "A[..." (entry: hash32 << 32 | DAG_NODE_ARRAY |
     * the first such task), linear probing in a power-of-two table at load
     * <= 1/2; empty (NULL) until the first of either is added. */
    uint64_t *aslots;
    size_t aslot_cap, aslot_used;
    size_t array_cap, array_edge_cap;

    bool finished;
};

/* ---- memory ---------------------------------------------------------------- */

static bool is_mapped(size_t bytes)
{
    return bytes >= DAG__MAP_MIN;
}

/* Ask for transparent huge pages on a mapping of at least one huge page (the
 * name index: see the banner).  A hint: without THP (or with it set to
 * "never") nothing changes. */
static void advise_huge(void *p, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    if (bytes >= DAG__HUGE_MIN)
        (void)madvise(p, bytes, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

static void *map_zeroed(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void mem_free(void *p, size_t bytes)
{
    if (is_mapped(bytes))
        munmap(p, bytes);
    else
        free(p);
}

static void *mem_zalloc(size_t bytes)
{
    return is_mapped(bytes) ? map_zeroed(bytes) : calloc(1, bytes ? bytes : 1);
}

/* Resize p from old to new bytes, keeping the common prefix; NULL on failure
 * with p untouched.  Buffers of DAG__MAP_MIN bytes or more live in their own
 * anonymous mapping: growing is an mremap() (no copy, no heap holes) and
 * freeing returns the pages at once, whatever malloc the program uses. */
static void *mem_resize(void *p, size_t old_bytes, size_t new_bytes)
{
    bool old_mapped = is_mapped(old_bytes), new_mapped = is_mapped(new_bytes);
    if (!old_mapped && !new_mapped) {
        char *q = realloc(p, new_bytes ? new_bytes : 1);
        if (q && new_bytes > old_bytes) /* grown tails read as 0, as mappings do */
            memset(q + old_bytes, 0, new_bytes - old_bytes);
        return q;
    }
    if (old_mapped && new_mapped) {
        void *q = mremap(p, old_bytes, new_bytes, MREMAP_MAYMOVE);
        if (q == MAP_FAILED)
            return NULL;
        return q;
    }
    void *q = new_mapped ? map_zeroed(new_bytes) : malloc(new_bytes ? new_bytes : 1);
    if (!q)
        return NULL;
    if (p)
        memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
    mem_free(p, old_bytes);
    return q;
}

/* Resize array ptr, whose size in bytes is the lvalue size, to n elements;
 * on failure return -1 from the caller with both untouched. */
#define DAG__RESIZE(ptr, size, n)                                                                  \
    do {                                                                                           \
        size_t b_ = (size_t)(n) * sizeof *(ptr);                                                   \
        void *q_ = mem_resize((ptr), (size), b_);                                                  \
        if (!q_)                                                                                   \
            return -1;                                                                             \
        (ptr) = q_;                                                                                \
        (size) = b_;                                                                               \
    } while (0)

/* ---- hashing and the name index ---------------------------------------- */

static inline uint64_t rotl64(uint64_t x, int r)
{
    return (x << r) | (x >> (64 - r));
}

static uint64_t fmix64(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ULL;
    k ^= k >> 33;
    return k;
}

static inline uint64_t mix_block(uint64_t h, uint64_t k)
{
    k *= 0x87c37b91114253d5ULL;
    k = rotl64(k, 31);
    k *= 0x4cf5ad432745937fULL;
    h ^= k;
    return rotl64(h, 27) * 5 + 0x52dce729;
}

static uint32_t hash_name(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ len;
    uint64_t k;
    for (; len >= 8; s += 8, len -= 8) {
        memcpy(&k, s, 8);
        h = mix_block(h, k);
    }
    k = 0;
    memcpy(&k, s, len);
    h = mix_block(h, k);
    h = fmix64(h);
    return (uint32_t)(h ^ (h >> 32));
}

static bool name_equals(const struct dag *dag, dag_task_t t, const char *name, size_t len)
{
    const char *s = dag->arena + dag->name[t];
    return memcmp(s, name, len) == 0 && s[len] == '\0';
}

/* The first slot to probe for hash h: Lemire's multiply-shift range
 * reduction ("Fast random integer generation in an interval", ACM TOMACS
 * 2019), so that the table can be sized to the DAG rather than to a power of
 * two. */
static inline size_t index_home(uint32_t h, size_t cap)
{
    return (size_t)(((uint64_t)h * cap) >> 32);
}

/* The slot holding name, or the empty slot where it would go. */
static size_t index_find(const struct dag *dag, const char *name, size_t len, uint32_t h)
{
    const struct dag_private *p = dag->priv;
    size_t i = index_home(h, p->slot_cap);
    for (;; i = i + 1 == p->slot_cap ? 0 : i + 1) {
        uint64_t s = p->slots[i];
        if (s == 0)
            return i;
        if ((uint32_t)(s >> 32) == h && name_equals(dag, (dag_task_t)s - 1, name, len))
            return i;
    }
}

static void index_put(uint64_t *slots, size_t cap, uint64_t entry)
{
    size_t i = index_home((uint32_t)(entry >> 32), cap);
    while (slots[i] != 0)
        i = i + 1 == cap ? 0 : i + 1;
    slots[i] = entry;
}

/* Rebuild the index with cap slots (cap > the names it holds). */
static int index_rebuild(struct dag_private *p, size_t cap)
{
    uint64_t *slots = mem_zalloc(cap * sizeof *slots);
    if (!slots)
        return -1;
    advise_huge(slots, cap * sizeof *slots);
    for (size_t i = 0; i < p->slot_cap; i++) {
        if (p->slots[i])
            index_put(slots, cap, p->slots[i]);
    }
    mem_free(p->slots, p->bytes.slots);
    p->slots = slots;
    p->bytes.slots = cap * sizeof *slots;
    p->slot_cap = cap;
    return 0;
}

/* Make room for one more name at load <= DAG__LOAD_NUM / DAG__LOAD_DEN. */
static int index_reserve(struct dag *dag)
{
    struct dag_private *p = dag->priv;
    if (((size_t)dag->ntasks + 1) * DAG__LOAD_DEN <= p->slot_cap * DAG__LOAD_NUM)
        return 0;
    return index_rebuild(p, p->slot_cap * 2);
}

/* ---- amortised growth ---------------------------------------------------- */

/* Each array is resized on its own and its size recorded; task_cap changes
 * only when all have been, so a failure half-way is harmless. */
static int tasks_resize(struct dag *dag, size_t cap)
{
    struct dag__bytes *b = &dag->priv->bytes;
#define DAG__X(f) DAG__RESIZE(dag->f, b->f, cap);
    DAG__TASK_ARRAYS(DAG__X)
#undef DAG__X
    dag->priv->task_cap = (uint32_t)cap;
    return 0;
}

static int tasks_reserve(struct dag *dag)
{
    uint32_t cap = dag->priv->task_cap;
    if (dag->ntasks < cap)
        return 0;
    return tasks_resize(dag,
                        cap ? (cap > DAG_MAX_TASKS / 2 ? DAG_MAX_TASKS : cap * 2) : DAG__MIN_TASKS);
}

static inline int arena_reserve(struct dag *dag, size_t more)
{
    size_t cap = dag->priv->bytes.arena;
    if (more > UINT32_MAX - dag->arena_len) {
        errno = E2BIG;
        return -1;
    }
    size_t need = dag->arena_len + more;
    if (need <= cap)
        return 0;
    while (cap < need)
        cap *= 2;
    DAG__RESIZE(dag->arena, dag->priv->bytes.arena, cap);
    return 0;
}

static inline int fwd_reserve(struct dag *dag, uint32_t more)
{
    size_t cap = dag->priv->bytes.fwd / sizeof *dag->fwd;
    if (more > UINT32_MAX - dag->fwd_count) {
        errno = E2BIG;
        return -1;
    }
    size_t need = (size_t)dag->fwd_count + more;
    if (need <= cap)
        return 0;
    cap = cap ? cap : 64;
    while (cap < need)
        cap *= 2;
    DAG__RESIZE(dag->fwd, dag->priv->bytes.fwd, cap);
    return 0;
}

static int edges_grow(struct dag_private *p)
{
    size_t cap = p->bytes.edges / sizeof *p->edges;
    DAG__RESIZE(p->edges, p->bytes.edges, cap ? cap * 2 : DAG__MIN_EDGES);
    return 0;
}

/* ---- create / destroy ---------------------------------------------------- */

struct dag *dag_create(void)
{
    struct dag *dag = calloc(1, sizeof *dag);
    if (!dag)
        return NULL;
    struct dag_private *p = dag->priv = calloc(1, sizeof *dag->priv);
    if (!p)
        goto fail;
    dag->arena = mem_zalloc(DAG__MIN_ARENA);
    p->slots = mem_zalloc(DAG__MIN_SLOTS * sizeof *p->slots);
    if (!dag->arena || !p->slots)
        goto fail;
    p->bytes.arena = DAG__MIN_ARENA;
    p->bytes.slots = DAG__MIN_SLOTS * sizeof *p->slots;
    p->slot_cap = DAG__MIN_SLOTS;
    dag->arena_len = 1; /* arena[0] == '\0' */
    return dag;
fail:
    if (p) {
        mem_free(dag->arena, dag->arena ? DAG__MIN_ARENA : 0);
        mem_free(p->slots, p->slots ? DAG__MIN_SLOTS * sizeof *p->slots : 0);
        free(p);
    }
    free(dag);
    errno = ENOMEM;
    return NULL;
}

void dag_destroy(struct dag *dag)
{
    if (!dag)
        return;
    struct dag_private *p = dag->priv;
#define DAG__X(f) mem_free(dag->f, p->bytes.f);
    DAG__TASK_ARRAYS(DAG__X)
    DAG__OTHER_ARRAYS(DAG__X)
#undef DAG__X
    mem_free(p->edges, p->bytes.edges);
    mem_free(p->slots, p->bytes.slots);
    free(p->aslots);
    free(dag->arrays);
    free(dag->array_edges);
    free(dag->array_in);
    free(p);
    free(dag);
}

/* ---- adding tasks -------------------------------------------------------- */

static bool has_nul(const char *s, size_t len)
{
    return len && memchr(s, '\0', len) != NULL;
}

/* Checks the spec and returns the arena bytes it needs, or -1 (EINVAL).
 * Inlined into both callers: called from two, the compiler would no
 * longer inline it into dag_add_task(), which runs once per task (the
 * other small helpers it shares with dag_add_array() are `inline` for the
 * same reason). */
__attribute__((always_inline)) static inline int spec_check(const struct dag_task_spec *spec,
                                                            size_t *bytes)
{
    if (!spec->name || spec->name_len == 0 || spec->argc == 0 || spec->cpus == 0 ||
        has_nul(spec->name, spec->name_len))
        return -1;
    size_t n = spec->name_len + 1;
    if (spec->pegasus_id && spec->pegasus_id_len) {
        if (has_nul(spec->pegasus_id, spec->pegasus_id_len))
            return -1;
        n += spec->pegasus_id_len + 1;
    }
    for (uint32_t i = 0; i < spec->argc; i++) {
        if (has_nul(spec->argv[i], spec->argv_len[i]))
            return -1;
        n += spec->argv_len[i] + 1;
    }
    for (uint32_t i = 0; i < spec->nforwards; i++) {
        const struct dag_forward_spec *f = &spec->forwards[i];
        if (f->kind > DAG_FORWARD_FILE || has_nul(f->src, f->src_len) ||
            has_nul(f->dest, f->dest_len))
            return -1;
        n += f->src_len + f->dest_len + 2;
    }
    *bytes = n;
    return 0;
}

/* Copy len bytes and a NUL to the arena (space already reserved). */
static uint32_t arena_put(struct dag *dag, const char *s, size_t len)
{
    uint32_t off = (uint32_t)dag->arena_len;
    if (len)
        memcpy(dag->arena + off, s, len);
    dag->arena[off + len] = '\0';
    dag->arena_len += len + 1;
    return off;
}

/* Append spec's forwards to fwd[] (room reserved); returns the index of
 * the first. */
static inline uint32_t put_forwards(struct dag *dag, const struct dag_task_spec *spec)
{
    uint32_t first = dag->fwd_count;
    for (uint32_t i = 0; i < spec->nforwards; i++) {
        const struct dag_forward_spec *f = &spec->forwards[i];
        struct dag_forward *out = &dag->fwd[dag->fwd_count++];
        out->kind = f->kind;
        out->src = arena_put(dag, f->src, f->src_len);
        out->dest = arena_put(dag, f->dest, f->dest_len);
    }
    return first;
}

/* Append spec's argv strings to the arena (room reserved); returns the
 * offset of the first. */
static inline uint32_t put_argv(struct dag *dag, const struct dag_task_spec *spec)
{
    uint32_t first = (uint32_t)dag->arena_len;
    for (uint32_t i = 0; i < spec->argc; i++)
        arena_put(dag, spec->argv[i], spec->argv_len[i]);
    return first;
}

/* Whether task t's argv is exactly spec's: then the new task shares t's
 * packed strings (generated and bulk DAGs repeat one command line; at 10M
 * tasks of /bin/true that is 100 MB). */
static bool same_argv_as(const struct dag *dag, dag_task_t t, const struct dag_task_spec *spec)
{
    if (dag->argc[t] != spec->argc)
        return false;
    const char *s = dag->arena + dag->argv[t];
    for (uint32_t i = 0; i < spec->argc; i++) {
        size_t n = spec->argv_len[i];
        if ((n && memcmp(s, spec->argv[i], n) != 0) || s[n] != '\0')
            return false;
        s += n + 1;
    }
    return true;
}

static void store_task(struct dag *dag, const struct dag_task_spec *spec)
{
    dag_task_t t = dag->ntasks;
    dag->name[t] = arena_put(dag, spec->name, spec->name_len);
    dag->pegasus_id[t] = DAG_NO_STRING;
    if (spec->pegasus_id && spec->pegasus_id_len)
        dag->pegasus_id[t] = arena_put(dag, spec->pegasus_id, spec->pegasus_id_len);
    dag->argv[t] = t > 0 && same_argv_as(dag, t - 1, spec) ? dag->argv[t - 1] : put_argv(dag, spec);
    dag->argc[t] = spec->argc;
    dag->cpus[t] = spec->cpus;
    dag->memory_mb[t] = spec->memory_mb;
    dag->priority[t] = spec->priority;
    dag->tries[t] = spec->tries;
    dag->line[t] = spec->line;
    if (spec->gpus) /* rare: untouched zero pages cost no memory */
        dag->gpus[t] = spec->gpus;
    if (spec->time_limit_ms)
        dag->time_limit_ms[t] = spec->time_limit_ms;
    dag->fwd_first[t] = put_forwards(dag, spec);
    dag->nfwd[t] = spec->nforwards;
    dag->ntasks++;
}

/* Every allocation a new task needs, done before anything is stored. */
static int reserve_task(struct dag *dag, const struct dag_task_spec *spec, size_t bytes)
{
    if (dag->ntasks >= DAG_MAX_TASKS) {
        errno = E2BIG;
        return -1;
    }
    errno = ENOMEM;
    if (tasks_reserve(dag) || fwd_reserve(dag, spec->nforwards) || arena_reserve(dag, bytes))
        return -1;
    return 0;
}

/* ---- the array name table ----------------------------------------------- */

/* Whether entry e of the array table is for name (len bytes). */
static bool aslot_matches(const struct dag *dag, uint64_t e, const char *name, size_t len)
{
    uint32_t v = (uint32_t)e;
    if (!DAG_NODE_IS_ARRAY(v)) {
        const char *s = dag->arena + dag->arrays[v - 1].name;
        return memcmp(s, name, len) == 0 && s[len] == '\0';
    }
    const char *s = dag->arena + dag->name[DAG_NODE_ID(v)];
    return memcmp(s, name, len) == 0 && s[len] == '[';
}

/* The entry for name, or 0. */
static uint64_t aslot_get(const struct dag *dag, const char *name, size_t len, uint32_t h)
{
    const struct dag_private *p = dag->priv;
    if (!p->aslots)
        return 0;
    for (size_t i = h & (p->aslot_cap - 1);; i = (i + 1) & (p->aslot_cap - 1)) {
        uint64_t e = p->aslots[i];
        if (e == 0 || ((uint32_t)(e >> 32) == h && aslot_matches(dag, e, name, len)))
            return e;
    }
}

/* Room for one more entry (load <= 1/2); -1 with ENOMEM. */
static int aslot_reserve(struct dag_private *p)
{
    if ((p->aslot_used + 1) * 2 <= p->aslot_cap)
        return 0;
    size_t cap = p->aslot_cap ? p->aslot_cap * 2 : 64;
    uint64_t *t = calloc(cap, sizeof *t);
    if (!t) {
        errno = ENOMEM;
        return -1;
    }
    for (size_t i = 0; i < p->aslot_cap; i++) {
        uint64_t e = p->aslots[i];
        size_t j = (uint32_t)(e >> 32) & (cap - 1);
        while (e && t[j])
            j = (j + 1) & (cap - 1);
        if (e)
            t[j] = e;
    }
    free(p->aslots);
    p->aslots = t;
    p->aslot_cap = cap;
    return 0;
}

/* Insert entry e (its key absent, room reserved). */
static void aslot_put(struct dag_private *p, uint64_t e)
{
    size_t j = (uint32_t)(e >> 32) & (p->aslot_cap - 1);
    while (p->aslots[j])
        j = (j + 1) & (p->aslot_cap - 1);
    p->aslots[j] = e;
    p->aslot_used++;
}

/* The length of the A of a name "A[...]", or 0 when there is none. */
static size_t bracket_prefix(const char *name, size_t len)
{
    const char *b = memchr(name, '[', len);
    return b ? (size_t)(b - name) : 0;
}

/* May plain task spec (name hash h) be added next to the arrays?  (Not
 * inlined: a rare path that would keep dag_add_task() from inlining its
 * common ones.)  Returns
 * -1 with errno EEXIST and *id = DAG_NODE_ARRAY | A when its name is A or
 * "A[...]" for an array A, -1 with ENOMEM when a bracketed name's entry
 * cannot be reserved; 0 otherwise. */
__attribute__((noinline)) static int array_name_clash(struct dag *dag,
                                                      const struct dag_task_spec *spec,
                                                      bool bracketed, uint32_t h, dag_task_t *id)
{
    size_t n = bracketed ? bracket_prefix(spec->name, spec->name_len) : spec->name_len;
    if (bracketed && n == 0)
        return 0;
    uint32_t hp = bracketed ? hash_name(spec->name, n) : h;
    uint64_t e = aslot_get(dag, spec->name, n, hp);
    if (e && !DAG_NODE_IS_ARRAY((uint32_t)e)) {
        *id = DAG_NODE_ARRAY | ((uint32_t)e - 1);
        errno = EEXIST;
        return -1;
    }
    if (bracketed && !e && aslot_reserve(dag->priv))
        return -1;
    return 0;
}

/* Remember task t, named "A[...]", as the first of its prefix A (room was
 * reserved by array_name_clash()). */
__attribute__((noinline)) static void note_bracketed(struct dag *dag, const char *name, size_t len,
                                                     dag_task_t t)
{
    size_t n = bracket_prefix(name, len);
    uint32_t h = hash_name(name, n);
    if (n && !aslot_get(dag, name, n, h))
        aslot_put(dag->priv, (uint64_t)h << 32 | DAG_NODE_ARRAY | t);
}

int dag_add_task(struct dag *dag, const struct dag_task_spec *spec, dag_task_t *id)
{
    size_t bytes;
    if (dag->priv->finished || spec_check(spec, &bytes)) {
        errno = EINVAL;
        return -1;
    }
    if (index_reserve(dag)) {
        errno = ENOMEM;
        return -1;
    }
    uint32_t h = spec->name_hash ? *spec->name_hash : hash_name(spec->name, spec->name_len);
    size_t slot = index_find(dag, spec->name, spec->name_len, h);
    if (dag->priv->slots[slot]) {
        *id = (dag_task_t)dag->priv->slots[slot] - 1;
        errno = EEXIST;
        return -1;
    }
    /* Only a name ending in ']' (rare) or a DAG with arrays looks further. */
    bool bracketed = spec->name[spec->name_len - 1] == ']';
    if ((bracketed || dag->narrays) && array_name_clash(dag, spec, bracketed, h, id))
        return -1;
    if (reserve_task(dag, spec, bytes))
        return -1;
    *id = dag->ntasks;
    dag->priv->slots[slot] = (uint64_t)h << 32 | ((uint64_t)dag->ntasks + 1);
    if (bracketed)
        note_bracketed(dag, spec->name, spec->name_len, *id);
    store_task(dag, spec);
    return 0;
}

int dag_lookup(const struct dag *dag, const char *name, size_t len, dag_task_t *id)
{
    return dag_lookup_hash(dag, name, len, hash_name(name, len), id);
}

int dag_lookup_hash(const struct dag *dag, const char *name, size_t len, uint32_t hash,
                    dag_task_t *id)
{
    uint64_t s = dag->priv->slots[index_find(dag, name, len, hash)];
    if (s == 0) {
        errno = ENOENT;
        return -1;
    }
    *id = (dag_task_t)s - 1;
    return 0;
}

uint32_t dag_name_hash(const char *name, size_t len)
{
    return hash_name(name, len);
}

void dag_prefetch(const struct dag *dag, uint32_t hash, int stage)
{
    const struct dag_private *p = dag->priv;
    const uint64_t *slot = &p->slots[index_home(hash, p->slot_cap)];
    if (stage == 0) {
        __builtin_prefetch(slot);
        return;
    }
    uint64_t s = *slot;
    if (s == 0 || (uint32_t)(s >> 32) != hash)
        return;
    const uint32_t *name = &dag->name[(dag_task_t)s - 1];
    if (stage == 1)
        __builtin_prefetch(name);
    else
        __builtin_prefetch(dag->arena + *name);
}

/* ---- reserving ----------------------------------------------------------- */

int dag_reserve(struct dag *dag, uint32_t ntasks, size_t nedges)
{
    struct dag_private *p = dag->priv;
    if (p->finished) {
        errno = EINVAL;
        return -1;
    }
    ntasks = ntasks > DAG_MAX_TASKS ? DAG_MAX_TASKS : ntasks;
    nedges = nedges > UINT32_MAX ? UINT32_MAX : nedges;
    errno = ENOMEM;
    size_t slots = DAG__RESERVE_SLOTS((size_t)ntasks);
    if (slots > p->slot_cap && index_rebuild(p, slots))
        return -1;
    if (ntasks > p->task_cap && tasks_resize(dag, ntasks))
        return -1;
    if (nedges > p->bytes.edges / sizeof *p->edges)
        DAG__RESIZE(p->edges, p->bytes.edges, nedges);
    return 0;
}

/* ---- adding edges -------------------------------------------------------- */

int dag_add_edge(struct dag *dag, dag_task_t parent, dag_task_t child)
{
    struct dag_private *p = dag->priv;
    if (p->finished || parent == child || parent >= dag->ntasks || child >= dag->ntasks) {
        errno = EINVAL;
        return -1;
    }
    if (p->nedges_raw >= UINT32_MAX) {
        errno = E2BIG;
        return -1;
    }
    if (p->nedges_raw == p->bytes.edges / sizeof *p->edges && edges_grow(p)) {
        errno = ENOMEM;
        return -1;
    }
    p->edges[p->nedges_raw++] = (struct dag__edge){parent, child};
    return 0;
}

/* ---- dag_finish: CSR ----------------------------------------------------- */

/* Counting sort of the raw pairs by parent into children[]; stable, so each
 * parent's children stay in the order their EDGE lines came. */
static void csr_fill(struct dag *dag)
{
    const struct dag_private *p = dag->priv;
    uint32_t n = dag->ntasks;
    uint32_t *first = dag->child_first;
    memset(first, 0, ((size_t)n + 1) * sizeof *first);
    for (size_t i = 0; i < p->nedges_raw; i++)
        first[p->edges[i].parent + 1]++;
    for (uint32_t t = 0; t < n; t++)
        first[t + 1] += first[t];
    for (size_t i = 0; i < p->nedges_raw; i++)
        dag->children[first[p->edges[i].parent]++] = p->edges[i].child;
    /* first[t] now holds the end of t's segment, i.e. the start of t+1's. */
    for (uint32_t t = n; t > 0; t--)
        first[t] = first[t - 1];
    first[0] = 0;
}

/* Drop repeated children inside each parent's segment, compacting in place.
 * stamp[c] == t + 1 means t already has child c; stamp is ntasks zeros. */
static void csr_dedupe(struct dag *dag, uint32_t *stamp)
{
    uint32_t n = dag->ntasks, w = 0, start = 0;
    for (uint32_t t = 0; t < n; t++) {
        uint32_t end = dag->child_first[t + 1];
        dag->child_first[t] = w;
        for (uint32_t k = start; k < end; k++) {
            dag_task_t c = dag->children[k];
            if (stamp[c] != t + 1) {
                stamp[c] = t + 1;
                dag->children[w++] = c;
            }
        }
        start = end;
    }
    dag->child_first[n] = w;
    dag->nedges = w;
}

static void count_parents(struct dag *dag)
{
    memset(dag->nparents, 0, (size_t)dag->ntasks * sizeof *dag->nparents);
    for (uint32_t k = 0; k < dag->nedges; k++)
        dag->nparents[dag->children[k]]++;
}

/* ---- dag_finish: Kahn's algorithm and the cycle report ------------------- */

/* Kahn 1962.  indeg starts as the in-degrees and is decremented; on return
 * indeg[t] > 0 exactly for the tasks never freed (on or after a cycle).
 * queue has ntasks entries.  Returns the number of tasks processed. */
static uint32_t kahn(const struct dag *dag, uint32_t *indeg, uint32_t *queue)
{
    uint32_t head = 0, tail = 0;
    for (uint32_t t = 0; t < dag->ntasks; t++) {
        if (indeg[t] == 0)
            queue[tail++] = t;
    }
    while (head < tail) {
        dag_task_t t = queue[head++];
        for (uint32_t k = dag->child_first[t]; k < dag->child_first[t + 1]; k++) {
            if (--indeg[dag->children[k]] == 0)
                queue[tail++] = dag->children[k];
        }
    }
    return tail;
}

/* For every unprocessed task, one unprocessed parent (exists by Kahn). */
static void pick_parents(const struct dag *dag, const uint32_t *indeg, uint32_t *pick)
{
    for (uint32_t t = 0; t < dag->ntasks; t++) {
        if (indeg[t] == 0)
            continue;
        for (uint32_t k = dag->child_first[t]; k < dag->child_first[t + 1]; k++) {
            if (indeg[dag->children[k]] > 0)
                pick[dag->children[k]] = t;
        }
    }
}

/* Walk parent links from an unprocessed task until one repeats; store the
 * cycle in ring[0..k-1] with ring[i+1] -> ring[i] an edge; return k. */
static uint32_t walk_cycle(uint32_t *indeg, const uint32_t *pick, uint32_t *ring)
{
    dag_task_t v = 0;
    while (indeg[v] == 0)
        v++;
    while (indeg[v] != 0) { /* indeg 0 now marks "visited" */
        indeg[v] = 0;
        v = pick[v];
    }
    uint32_t k = 0;
    dag_task_t u = v;
    do {
        ring[k++] = u;
        u = pick[u];
    } while (u != v);
    return k;
}

/* The name of node i of a cycle (see cycle_text()), in buf if needed. */
typedef const char *cycle_name_fn(const void *ctx, uint32_t i, char *buf, size_t cap);

static const char *plain_cycle_name(const void *ctx, uint32_t i, char *buf, size_t cap)
{
    (void)buf;
    (void)cap;
    return dag_task_name(ctx, i);
}

/* "cycle: A -> B -> A", starting at the cycle's earliest node (the lowest
 * number); when the names do not fit in DAG__CYCLE_TEXT bytes the rest of
 * the cycle up to the closing name is shown as "...": "cycle: A -> B -> ...
 * -> A". */
static void cycle_text(cycle_name_fn *name_of, const void *ctx, const uint32_t *ring, uint32_t k,
                       struct pmc_error *err)
{
    uint32_t j = 0;
    for (uint32_t i = 1; i < k; i++) {
        if (ring[i] < ring[j])
            j = i;
    }
    char first_buf[DAG__CYCLE_TEXT], name_buf[DAG__CYCLE_TEXT];
    const char *first = name_of(ctx, ring[j], first_buf, sizeof first_buf);
    char text[DAG__CYCLE_TEXT];
    const size_t reserve = sizeof " -> ...";
    int len = snprintf(text, sizeof text, "cycle: %s", first);
    for (uint32_t s = 1; s < k && len >= 0 && (size_t)len < sizeof text; s++) {
        const char *name = name_of(ctx, ring[(j + k - s) % k], name_buf, sizeof name_buf);
        if ((size_t)len + strlen(name) + 4 + reserve >= sizeof text) {
            len += snprintf(text + len, sizeof text - (size_t)len, " -> ...");
            break;
        }
        len += snprintf(text + len, sizeof text - (size_t)len, " -> %s", name);
    }
    pmc_errorf(err, "%s -> %s", text, first);
}

static void report_cycle(const struct dag *dag, uint32_t *indeg, uint32_t *queue,
                         struct pmc_error *err)
{
    pick_parents(dag, indeg, queue);
    uint32_t k = walk_cycle(indeg, queue, indeg);
    /* walk_cycle() wrote ring over indeg after it was done with it. */
    cycle_text(plain_cycle_name, dag, indeg, k, err);
}

/* Give back the unused tail of the growable arrays (shrinking resizes; a
 * failure leaves an array larger than needed, which is harmless). */
static int shrink(struct dag *dag)
{
    struct dag__bytes *b = &dag->priv->bytes;
    DAG__RESIZE(dag->arena, b->arena, dag->arena_len);
    if (dag->nedges)
        DAG__RESIZE(dag->children, b->children, dag->nedges);
    if (dag->fwd_count)
        DAG__RESIZE(dag->fwd, b->fwd, dag->fwd_count);
    return dag->ntasks ? tasks_resize(dag, dag->ntasks) : 0;
}

static int csr_alloc_arrays(struct dag *dag)
{
    size_t n = dag->ntasks, e = dag->priv->nedges_raw;
    struct dag__bytes *b = &dag->priv->bytes;
    DAG__RESIZE(dag->child_first, b->child_first, n + 1);
    DAG__RESIZE(dag->children, b->children, e ? e : 1);
    return 0;
}

/* The CSR arrays; on failure nothing is changed. */
static int csr_alloc(struct dag *dag)
{
    if (csr_alloc_arrays(dag) == 0)
        return 0;
    struct dag__bytes *b = &dag->priv->bytes;
    mem_free(dag->child_first, b->child_first);
    mem_free(dag->children, b->children);
    dag->child_first = dag->children = NULL;
    b->child_first = b->children = 0;
    errno = ENOMEM;
    return -1;
}

/* Kahn's algorithm over nparents (used as the in-degree counters and
 * recounted afterwards), with the queue allocated only now that the raw
 * pairs are gone, to keep the peak memory down. */
static int check_acyclic(struct dag *dag, struct pmc_error *err)
{
    size_t bytes = (dag->ntasks ? dag->ntasks : 1) * sizeof(uint32_t);
    uint32_t *queue = mem_zalloc(bytes);
    if (!queue) {
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory checking the DAG for cycles");
    }
    bool acyclic = kahn(dag, dag->nparents, queue) == dag->ntasks;
    if (!acyclic)
        report_cycle(dag, dag->nparents, queue, err);
    mem_free(queue, bytes);
    count_parents(dag);
    if (acyclic)
        return 0;
    errno = ELOOP;
    return -1;
}

static int finish_arrays(struct dag *dag, struct pmc_error *err);

int dag_finish(struct dag *dag, struct pmc_error *err)
{
    struct dag_private *p = dag->priv;
    if (p->finished) {
        errno = EINVAL;
        return pmc_errorf(err, "dag_finish called twice");
    }
    if (csr_alloc(dag))
        return pmc_errorf(err, "out of memory building the DAG");
    p->finished = true;
    csr_fill(dag);
    mem_free(p->edges, p->bytes.edges);
    p->edges = NULL;
    p->nedges_raw = p->bytes.edges = 0;
    /* nparents only now that the raw pairs are gone, to keep the peak low */
    size_t nb = (dag->ntasks ? dag->ntasks : 1) * sizeof *dag->nparents;
    dag->nparents = mem_zalloc(nb);
    if (!dag->nparents) {
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory building the DAG");
    }
    p->bytes.nparents = nb;
    csr_dedupe(dag, dag->nparents); /* nparents is all zeros: a free stamp */
    count_parents(dag);
    (void)shrink(dag);
    if (check_acyclic(dag, err))
        return -1;
    return finish_arrays(dag, err);
}

/* ---- argv access --------------------------------------------------------- */

const char *dag_task_arg(const struct dag *dag, dag_task_t t, uint32_t i)
{
    const char *s = dag->arena + dag->argv[t];
    while (i-- > 0)
        s += strlen(s) + 1;
    return s;
}

size_t dag_task_argv_bytes(const struct dag *dag, dag_task_t t)
{
    const char *start = dag->arena + dag->argv[t];
    const char *s = start;
    for (uint32_t i = 0; i < dag->argc[t]; i++)
        s += strlen(s) + 1;
    return (size_t)(s - start);
}

int dag_topo_order(const struct dag *dag, dag_task_t *order)
{
    uint32_t n = dag->ntasks, head = 0, tail = 0;
    uint32_t *indeg = malloc(sizeof *indeg * (n ? n : 1));
    if (!indeg)
        return -1;
    memcpy(indeg, dag->nparents, sizeof *indeg * n);
    for (dag_task_t t = 0; t < n; t++)
        if (indeg[t] == 0)
            order[tail++] = t;
    while (head < tail) {
        dag_task_t t = order[head++];
        for (uint32_t e = dag->child_first[t]; e < dag->child_first[t + 1]; e++)
            if (--indeg[dag->children[e]] == 0)
                order[tail++] = dag->children[e];
    }
    free(indeg);
    return 0; /* dag_finish() rejected cycles: tail == n */
}

/* ---- task arrays: building ------------------------------------------------ */

int dag_array_lookup(const struct dag *dag, const char *name, size_t len, uint32_t *id)
{
    uint64_t e = aslot_get(dag, name, len, hash_name(name, len));
    if (e == 0 || DAG_NODE_IS_ARRAY((uint32_t)e)) {
        errno = ENOENT;
        return -1;
    }
    *id = (uint32_t)e - 1;
    return 0;
}

/* EEXIST with *id when spec's name is taken (see dag_add_array()). */
static int array_name_taken(const struct dag *dag, const struct dag_task_spec *spec, uint32_t h,
                            uint32_t *id)
{
    dag_task_t t;
    uint64_t e = aslot_get(dag, spec->name, spec->name_len, h);
    if (e)
        *id = DAG_NODE_IS_ARRAY((uint32_t)e) ? DAG_NODE_ID((uint32_t)e)
                                             : DAG_NODE_ARRAY | ((uint32_t)e - 1);
    else if (dag_lookup_hash(dag, spec->name, spec->name_len, h, &t) == 0)
        *id = t;
    else
        return 0;
    errno = EEXIST;
    return -1;
}

static void store_array(struct dag *dag, const struct dag_task_spec *spec, uint32_t first,
                        uint32_t last)
{
    struct dag_array *a = &dag->arrays[dag->narrays];
    *a = (struct dag_array){.first = first,
                            .last = last,
                            .argc = spec->argc,
                            .cpus = spec->cpus,
                            .memory_mb = spec->memory_mb,
                            .tries = spec->tries,
                            .gpus = spec->gpus,
                            .time_limit_ms = spec->time_limit_ms,
                            .priority = spec->priority,
                            .line = spec->line,
                            .nfwd = spec->nforwards};
    a->name = arena_put(dag, spec->name, spec->name_len);
    if (spec->pegasus_id && spec->pegasus_id_len)
        a->pegasus_id = arena_put(dag, spec->pegasus_id, spec->pegasus_id_len);
    a->argv = put_argv(dag, spec);
    a->fwd_first = put_forwards(dag, spec);
    a->base = (uint32_t)dag->ninstances;
    dag->ninstances += (uint64_t)last - first + 1;
    dag->narrays++;
}

static int array_spec_check(const struct dag *dag, const struct dag_task_spec *spec, uint32_t first,
                            uint32_t last, size_t *bytes)
{
    if (dag->priv->finished || spec_check(spec, bytes) || first > last ||
        last > DAG_ARRAY_MAX_INDEX || memchr(spec->name, '[', spec->name_len) ||
        memchr(spec->name, ']', spec->name_len)) {
        errno = EINVAL;
        return -1;
    }
    if (dag->narrays >= DAG_MAX_ARRAYS ||
        dag->ninstances + ((uint64_t)last - first + 1) > DAG_MAX_INSTANCES) {
        errno = E2BIG;
        return -1;
    }
    return 0;
}

int dag_add_array(struct dag *dag, const struct dag_task_spec *spec, uint32_t first, uint32_t last,
                  uint32_t *id)
{
    struct dag_private *p = dag->priv;
    size_t bytes;
    if (array_spec_check(dag, spec, first, last, &bytes))
        return -1;
    uint32_t h = hash_name(spec->name, spec->name_len);
    if (array_name_taken(dag, spec, h, id))
        return -1;
    errno = ENOMEM;
    if (aslot_reserve(p) || fwd_reserve(dag, spec->nforwards) || arena_reserve(dag, bytes) ||
        pmc_grow((void **)&dag->arrays, &p->array_cap, (size_t)dag->narrays + 1,
                 sizeof *dag->arrays))
        return -1;
    *id = dag->narrays;
    aslot_put(p, (uint64_t)h << 32 | (dag->narrays + 1));
    store_array(dag, spec, first, last);
    return 0;
}

static bool node_valid(const struct dag *dag, dag_node_t v, bool array)
{
    if (DAG_NODE_IS_ARRAY(v) != array)
        return false;
    return array ? DAG_NODE_ID(v) < dag->narrays : v < dag->ntasks;
}

static uint32_t node_count(const struct dag *dag, dag_node_t v)
{
    return dag_array_count(dag, DAG_NODE_ID(v));
}

/* Do the endpoints and K fit the kind (see dag_add_array_edge())? */
static bool array_edge_fits(const struct dag *dag, enum dag_array_edge_kind kind, dag_node_t parent,
                            dag_node_t child, uint32_t k)
{
    bool pa = kind != DAG_EDGE_FAN_OUT, ca = kind != DAG_EDGE_FAN_IN;
    if (kind < DAG_EDGE_ONE_TO_ONE || kind > DAG_EDGE_BARRIER || parent == child ||
        !node_valid(dag, parent, pa) || !node_valid(dag, child, ca))
        return false;
    if (kind == DAG_EDGE_ONE_TO_ONE)
        return k == 1 && node_count(dag, parent) == node_count(dag, child);
    if (kind == DAG_EDGE_K_TO_ONE)
        return k >= 2 && (uint64_t)k * node_count(dag, child) == node_count(dag, parent);
    return k == 1;
}

int dag_add_array_edge(struct dag *dag, enum dag_array_edge_kind kind, dag_node_t parent,
                       dag_node_t child, uint32_t k, uint32_t line)
{
    struct dag_private *p = dag->priv;
    if (p->finished || !array_edge_fits(dag, kind, parent, child, k)) {
        errno = EINVAL;
        return -1;
    }
    if (dag->narray_edges == UINT32_MAX) {
        errno = E2BIG;
        return -1;
    }
    if (pmc_grow((void **)&dag->array_edges, &p->array_edge_cap, (size_t)dag->narray_edges + 1,
                 sizeof *dag->array_edges))
        return -1;
    dag->array_edges[dag->narray_edges++] = (struct dag_array_edge){kind, parent, child, k, line};
    return 0;
}

/* ---- task arrays: dag_finish() ------------------------------------------- */

static int cmp_array_edge(const void *pa, const void *pb)
{
    const struct dag_array_edge *a = pa, *b = pb;
    if (a->parent != b->parent)
        return a->parent < b->parent ? -1 : 1;
    if (a->child != b->child)
        return a->child < b->child ? -1 : 1;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->k != b->k)
        return a->k < b->k ? -1 : 1;
    return a->line < b->line ? -1 : a->line > b->line;
}

static int cmp_u64(const void *pa, const void *pb)
{
    uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
    return a < b ? -1 : a > b;
}

/* Sort the array edges by parent, merge duplicates (keeping the first
 * line), and index them by child.  -1 with ENOMEM. */
static int array_edges_index(struct dag *dag)
{
    uint32_t n = dag->narray_edges, w = 0;
    if (n) /* array_edges is NULL without array edges */
        qsort(dag->array_edges, n, sizeof *dag->array_edges, cmp_array_edge);
    for (uint32_t i = 0; i < n; i++) {
        const struct dag_array_edge *e = &dag->array_edges[i];
        const struct dag_array_edge *last = w ? &dag->array_edges[w - 1] : NULL;
        if (!last || e->parent != last->parent || e->child != last->child ||
            e->kind != last->kind || e->k != last->k)
            dag->array_edges[w++] = *e;
    }
    dag->narray_edges = w;
    dag->array_in = malloc((w ? w : 1) * sizeof *dag->array_in);
    uint64_t *key = malloc((w ? w : 1) * sizeof *key); /* child << 32 | edge */
    if (!dag->array_in || !key) {
        free(key);
        errno = ENOMEM;
        return -1;
    }
    for (uint32_t i = 0; i < w; i++)
        key[i] = (uint64_t)dag->array_edges[i].child << 32 | i;
    qsort(key, w, sizeof *key, cmp_u64);
    for (uint32_t i = 0; i < w; i++)
        dag->array_in[i] = (uint32_t)key[i];
    free(key);
    return 0;
}

/* The graph of records checked for cycles: nodes 0 .. base-1 are the plain
 * tasks (only when some FAN_IN or FAN_OUT edge joins them to the arrays:
 * else plain tasks are on no cycle through an array and base is 0), nodes
 * base .. n-1 the arrays. */
struct rgraph {
    const struct dag *dag;
    uint32_t base, n;
};

static uint32_t rg_index(const struct rgraph *g, dag_node_t v)
{
    return DAG_NODE_IS_ARRAY(v) ? g->base + DAG_NODE_ID(v) : v;
}

static dag_node_t rg_node(const struct rgraph *g, uint32_t i)
{
    return i >= g->base ? DAG_NODE_ARRAY | (i - g->base) : i;
}

/* The children of node i: *plain gets its CSR children (none for an
 * array) and the return value its array out-edges (from *first). */
static uint32_t rg_children(const struct rgraph *g, uint32_t i, const dag_task_t **plain,
                            uint32_t *nplain, uint32_t *first)
{
    const struct dag *dag = g->dag;
    *nplain = 0;
    if (i < g->base) {
        *plain = dag->children + dag->child_first[i];
        *nplain = dag->child_first[i + 1] - dag->child_first[i];
    }
    return dag_node_out_edges(dag, rg_node(g, i), first);
}

/* Kahn over the records: indeg (n, in-degrees on entry) is counted down
 * and queue (n) filled; returns the nodes processed. */
static uint32_t rg_kahn(const struct rgraph *g, uint32_t *indeg, uint32_t *queue)
{
    uint32_t head = 0, tail = 0;
    for (uint32_t i = 0; i < g->n; i++)
        if (indeg[i] == 0)
            queue[tail++] = i;
    while (head < tail) {
        const dag_task_t *pc;
        uint32_t np, first, i = queue[head++];
        uint32_t na = rg_children(g, i, &pc, &np, &first);
        for (uint32_t k = 0; k < np; k++)
            if (--indeg[pc[k]] == 0)
                queue[tail++] = pc[k];
        for (uint32_t k = 0; k < na; k++) {
            uint32_t c = rg_index(g, g->dag->array_edges[first + k].child);
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    return tail;
}

/* pick[c] = one unprocessed parent of each unprocessed node c. */
static void rg_pick_parents(const struct rgraph *g, const uint32_t *indeg, uint32_t *pick)
{
    for (uint32_t i = 0; i < g->n; i++) {
        if (indeg[i] == 0)
            continue;
        const dag_task_t *pc;
        uint32_t np, first;
        uint32_t na = rg_children(g, i, &pc, &np, &first);
        for (uint32_t k = 0; k < np; k++)
            if (indeg[pc[k]] > 0)
                pick[pc[k]] = i;
        for (uint32_t k = 0; k < na; k++) {
            uint32_t c = rg_index(g, g->dag->array_edges[first + k].child);
            if (indeg[c] > 0)
                pick[c] = i;
        }
    }
}

static const char *rg_cycle_name(const void *ctx, uint32_t i, char *buf, size_t cap)
{
    const struct rgraph *g = ctx;
    if (i < g->base)
        return dag_task_name(g->dag, i);
    snprintf(buf, cap, "%s[*]", dag_array_name(g->dag, i - g->base));
    return buf;
}

/* The cycle check of dag_finish() over the graph of records, after the
 * plain graph passed it. */
static int check_records_acyclic(struct dag *dag, struct pmc_error *err)
{
    struct rgraph g = {.dag = dag};
    for (uint32_t e = 0; e < dag->narray_edges; e++) {
        uint32_t kind = dag->array_edges[e].kind;
        if (kind == DAG_EDGE_FAN_IN || kind == DAG_EDGE_FAN_OUT)
            g.base = dag->ntasks;
    }
    g.n = g.base + dag->narrays;
    uint32_t *indeg = calloc((size_t)g.n + 1, sizeof *indeg);
    uint32_t *queue = malloc(((size_t)g.n + 1) * sizeof *queue);
    if (!indeg || !queue) {
        free(indeg);
        free(queue);
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory checking the DAG for cycles");
    }
    if (g.base)
        memcpy(indeg, dag->nparents, (size_t)g.base * sizeof *indeg);
    for (uint32_t e = 0; e < dag->narray_edges; e++)
        indeg[rg_index(&g, dag->array_edges[e].child)]++;
    bool acyclic = rg_kahn(&g, indeg, queue) == g.n;
    if (!acyclic) {
        rg_pick_parents(&g, indeg, queue);
        uint32_t k = walk_cycle(indeg, queue, indeg);
        cycle_text(rg_cycle_name, &g, indeg, k, err);
        errno = ELOOP;
    }
    free(indeg);
    free(queue);
    return acyclic ? 0 : -1;
}

/* dag_finish()'s part for the arrays, after the plain graph's. */
static int finish_arrays(struct dag *dag, struct pmc_error *err)
{
    if (array_edges_index(dag)) {
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory building the DAG");
    }
    return dag->narray_edges ? check_records_acyclic(dag, err) : 0;
}

/* ---- task arrays: instances ---------------------------------------------- */

uint32_t dag_node_out_edges(const struct dag *dag, dag_node_t v, uint32_t *first)
{
    uint32_t lo = 0, hi = dag->narray_edges;
    while (lo < hi) { /* the first edge whose parent >= v */
        uint32_t mid = lo + (hi - lo) / 2;
        if (dag->array_edges[mid].parent < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t end = lo;
    while (end < dag->narray_edges && dag->array_edges[end].parent == v)
        end++;
    *first = lo;
    return end - lo;
}

uint32_t dag_node_in_edges(const struct dag *dag, dag_node_t v, const uint32_t **ids)
{
    uint32_t lo = 0, hi = dag->narray_edges;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (dag->array_edges[dag->array_in[mid]].child < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t end = lo;
    while (end < dag->narray_edges && dag->array_edges[dag->array_in[end]].child == v)
        end++;
    *ids = dag->array_in + lo;
    return end - lo;
}

static bool in_range(const struct dag *dag, uint32_t a, uint32_t index)
{
    return a < dag->narrays && index >= dag->arrays[a].first && index <= dag->arrays[a].last;
}

int dag_instance_name(const struct dag *dag, uint32_t a, uint32_t index, char *buf, size_t cap)
{
    if (!in_range(dag, a, index)) {
        errno = EINVAL;
        return -1;
    }
    return snprintf(buf, cap, "%s[%" PRIu32 "]", dag_array_name(dag, a), index);
}

#define DAG__TOKEN "%{INDEX}"
#define DAG__TOKEN_LEN (sizeof DAG__TOKEN - 1)

/* Expand one template string s into out (when out is not NULL); returns
 * the bytes of the result, NUL included. */
static size_t expand(const char *s, const char *digits, size_t ndigits, char *out)
{
    size_t n = 0;
    while (*s) {
        const char *piece = s;
        size_t len = 1, adv = 1;
        if (s[0] == '%' && s[1] == '%' && strncmp(s + 1, DAG__TOKEN, DAG__TOKEN_LEN) == 0) {
            piece = s + 1; /* "%%{INDEX}" is a literal "%{INDEX}" */
            len = DAG__TOKEN_LEN;
            adv = DAG__TOKEN_LEN + 1;
        } else if (s[0] == '%' && strncmp(s, DAG__TOKEN, DAG__TOKEN_LEN) == 0) {
            piece = digits;
            len = ndigits;
            adv = DAG__TOKEN_LEN;
        }
        if (out)
            memcpy(out + n, piece, len);
        n += len;
        s += adv;
    }
    if (out)
        out[n] = '\0';
    return n + 1;
}

const char *dag_index_token(const char *s)
{
    for (s = strchr(s, '%'); s; s = strchr(s + 1, '%')) {
        if (s[1] == '%' && strncmp(s + 1, DAG__TOKEN, DAG__TOKEN_LEN) == 0)
            s += DAG__TOKEN_LEN;
        else if (strncmp(s, DAG__TOKEN, DAG__TOKEN_LEN) == 0)
            return s;
    }
    return NULL;
}

size_t dag_instance_argv(const struct dag *dag, uint32_t a, uint32_t index, char *buf, size_t cap)
{
    if (!in_range(dag, a, index)) {
        errno = EINVAL;
        return 0;
    }
    const struct dag_array *r = &dag->arrays[a];
    char digits[16];
    size_t nd = (size_t)snprintf(digits, sizeof digits, "%" PRIu32, index), need = 0;
    const char *s = dag->arena + r->argv;
    for (uint32_t i = 0; i < r->argc; i++, s += strlen(s) + 1)
        need += expand(s, digits, nd, NULL);
    if (need > cap)
        return need;
    s = dag->arena + r->argv;
    char *at = buf;
    for (uint32_t i = 0; i < r->argc; i++, s += strlen(s) + 1)
        at += expand(s, digits, nd, at);
    return need;
}

uint64_t dag_instance_nparents(const struct dag *dag, uint32_t a, uint32_t index)
{
    if (!in_range(dag, a, index))
        return 0;
    const uint32_t *ids;
    uint32_t n = dag_node_in_edges(dag, DAG_NODE_ARRAY | a, &ids);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct dag_array_edge *e = &dag->array_edges[ids[i]];
        sum += e->kind == DAG_EDGE_BARRIER ? node_count(dag, e->parent) : e->k;
    }
    return sum;
}

uint64_t dag_task_array_nparents(const struct dag *dag, dag_task_t t)
{
    const uint32_t *ids;
    uint32_t n = dag_node_in_edges(dag, t, &ids);
    uint64_t sum = 0;
    for (uint32_t i = 0; i < n; i++)
        sum += node_count(dag, dag->array_edges[ids[i]].parent); /* all FAN_IN */
    return sum;
}

/* The instances of node `other` joined by edge e to instance offset j
 * (index - first) of the array at e's other end; toward the child when
 * down, else toward the parent. */
static struct dag_instance_range edge_range(const struct dag *dag, const struct dag_array_edge *e,
                                            uint32_t j, bool down)
{
    dag_node_t other = down ? e->child : e->parent;
    struct dag_instance_range r = {other, 0, 0};
    if (!DAG_NODE_IS_ARRAY(other))
        return r;
    const struct dag_array *o = &dag->arrays[DAG_NODE_ID(other)];
    if (e->kind == DAG_EDGE_BARRIER || e->kind == DAG_EDGE_FAN_OUT) {
        r.first = o->first;
        r.last = o->last;
    } else if (down) { /* ONE_TO_ONE (k = 1) or K_TO_ONE */
        r.first = r.last = o->first + j / e->k;
    } else {
        r.first = o->first + j * e->k;
        r.last = r.first + e->k - 1;
    }
    return r;
}

uint32_t dag_instance_children(const struct dag *dag, uint32_t a, uint32_t index,
                               struct dag_instance_range *out, uint32_t cap)
{
    if (!in_range(dag, a, index))
        return 0;
    uint32_t first, n = dag_node_out_edges(dag, DAG_NODE_ARRAY | a, &first);
    for (uint32_t i = 0; i < n && i < cap; i++)
        out[i] = edge_range(dag, &dag->array_edges[first + i], index - dag->arrays[a].first, true);
    return n;
}

uint32_t dag_instance_parents(const struct dag *dag, uint32_t a, uint32_t index,
                              struct dag_instance_range *out, uint32_t cap)
{
    if (!in_range(dag, a, index))
        return 0;
    const uint32_t *ids;
    uint32_t n = dag_node_in_edges(dag, DAG_NODE_ARRAY | a, &ids);
    for (uint32_t i = 0; i < n && i < cap; i++)
        out[i] = edge_range(dag, &dag->array_edges[ids[i]], index - dag->arrays[a].first, false);
    return n;
}

int dag_instance_of(const struct dag *dag, dag_task_t t, uint32_t *a, uint32_t *index)
{
    if (t < dag->ntasks || t - dag->ntasks >= dag->ninstances) {
        errno = EINVAL;
        return -1;
    }
    uint32_t off = t - dag->ntasks, lo = 0, hi = dag->narrays - 1;
    while (lo < hi) { /* the last array whose base <= off */
        uint32_t mid = lo + (hi - lo + 1) / 2;
        if (dag->arrays[mid].base <= off)
            lo = mid;
        else
            hi = mid - 1;
    }
    *a = lo;
    *index = dag->arrays[lo].first + (off - dag->arrays[lo].base);
    return 0;
}

uint32_t dag_task_forwards(const struct dag *dag, dag_task_t t, uint32_t *first)
{
    uint32_t a, index;
    if (t < dag->ntasks) {
        *first = dag->fwd_first[t];
        return dag->nfwd[t];
    }
    if (dag_instance_of(dag, t, &a, &index) < 0) {
        *first = 0;
        return 0;
    }
    *first = dag->arrays[a].fwd_first;
    return dag->arrays[a].nfwd;
}

int dag_lookup_task(const struct dag *dag, const char *name, size_t len, dag_task_t *t)
{
    if (dag_lookup(dag, name, len, t) == 0)
        return 0;
    const char *open = len > 2 && name[len - 1] == ']' ? memrchr(name, '[', len) : NULL;
    size_t digits = open ? len - (size_t)(open - name) - 2 : 0;
    uint32_t a, index = 0;
    if (!open || digits == 0 || digits > 9 || (digits > 1 && open[1] == '0'))
        goto none;
    for (size_t k = 1; k <= digits; k++) {
        if (open[k] < '0' || open[k] > '9')
            goto none;
        index = index * 10 + (uint32_t)(open[k] - '0');
    }
    if (dag_array_lookup(dag, name, (size_t)(open - name), &a) < 0 ||
        index < dag->arrays[a].first || index > dag->arrays[a].last)
        goto none;
    *t = dag_instance_id(dag, a, index);
    return 0;
none:
    errno = ENOENT;
    return -1;
}
