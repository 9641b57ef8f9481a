/* fuzz_dagfile.c - libFuzzer harness of the DAG file parser (io/dagfile.h).
 *
 * Each input is the content of a DAG file.  It is parsed twice: from the
 * buffer (dagfile_parse(), with libFuzzer's exact-size heap copy, so a byte
 * read past the end is caught by AddressSanitizer) and from a file
 * (dagfile_load() of a memfd through /proc/self/fd/N: the mmap path).
 * Oracles, beyond "no crash, no leak, no undefined behaviour":
 *
 *   1. Both paths agree: the same error text, or equal DAGs.
 *   2. An error names the file: it starts with "PATH:" (and errno is set).
 *   3. A parsed DAG is well formed: at least one task; every name finds its
 *      own id; argc >= 1, cpus >= 1, argv and forwards inside the arena and
 *      the forward table; CSR arrays consistent (child_first monotone and
 *      ending at nedges, children in range, no self edge, no child twice
 *      under one parent, in-degrees summing to nedges); acyclic (Kahn).
 *   4. Round trip: the DAG written back as a DAG file (names raw, argv and
 *      forwards quoted or escaped as the grammar allows, numbers in a form
 *      whose rounding is exact) parses again into an equal DAG: same tasks
 *      in the same order, same argv, options, Pegasus ids, forwards and
 *      edges.  This checks quoting, option values and edge merging against
 *      the grammar in io/dagfile.h, not against the parser's own code.
 *   5. Every task can be recorded as done: a rescue log holding
 *      "DONE name\n" for every task (the writer's format) reads back with
 *      rescue_read() as all tasks done, nothing torn.  (A name with a
 *      control byte once broke this: the parser took it, the reader called
 *      its record garbage, and a restart failed with "bad record".)
 *   6. Task arrays (docs/task-arrays.md) are parsed with them accepted
 *      (struct dagfile_options); the same input with arrays refused, as the
 *      engine reads it, gives the same DAG when there is no array, else the
 *      error "task arrays are not supported by this program", and fails
 *      whenever the first parse fails.  Arrays are well formed (range,
 *      name found by dag_array_lookup(), no plain task named A or A[...],
 *      instance count, argv, forwards), array edges fit their kind and
 *      counts and are sorted, array_in is sorted by child, and the first
 *      and last instance's name, argv and parent/child ranges agree with
 *      the edges.  Oracles 1 and 4 cover arrays and array edges too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/dag.h"
#include "io/grow.h"
#include "fuzz_check.h"
#include "io/dagfile.h"
#include "io/log.h"
#include "io/rescue.h"

static int memfd = -1, rescue_fd = -1;
static char path[64], rescue_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    memfd = memfd_create("dag", MFD_CLOEXEC);
    FUZZ_CHECK(memfd >= 0, "memfd_create: errno %d", errno);
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    rescue_fd = memfd_create("rescue", MFD_CLOEXEC);
    FUZZ_CHECK(rescue_fd >= 0, "memfd_create: errno %d", errno);
    snprintf(rescue_path, sizeof rescue_path, "/proc/self/fd/%d", rescue_fd);
    log_set_level(PMC_LOG_ERROR);
    return 0;
}

/* ---- a growing text buffer ------------------------------------------------ */

struct text {
    char *p;
    size_t len, cap;
};

static void put(struct text *t, const char *s, size_t n)
{
    int rc = pmc_grow_from((void **)&t->p, &t->cap, t->len + n + 1, 1, 4096);
    FUZZ_CHECK(rc == 0, "out of memory");
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void puts_(struct text *t, const char *s)
{
    put(t, s, strlen(s));
}

static void putf(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(struct text *t, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    put(t, "", 0); /* t->p exists */
    char *buf = malloc((size_t)n + 1);
    FUZZ_CHECK(buf != NULL, "out of memory");
    vsnprintf(buf, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    put(t, buf, (size_t)n);
    free(buf);
}

static bool blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A word of a TASK line after the name: "" when empty; a word holding white
 * space inside double quotes (with " and \ escaped); any other word with
 * each ', " and \ escaped.  (Not "\ " for a blank: a line's trailing white
 * space is removed before it is split, so "a\ " at the end of a line reads
 * as "a\"; see docs/reliability.md.) */
static void put_word(struct text *t, const char *s, size_t n)
{
    bool quote = n == 0;
    for (size_t i = 0; i < n; i++)
        quote |= blank(s[i]);
    puts_(t, quote ? " \"" : " ");
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '"' || c == '\\' || (!quote && c == '\''))
            put(t, "\\", 1);
        put(t, &c, 1);
    }
    if (quote)
        puts_(t, "\"");
}

/* ---- checks -------------------------------------------------------------- */

static void check_arena_string(const struct dag *d, uint32_t off, const char *what)
{
    FUZZ_CHECK(off < d->arena_len, "%s offset %u outside the arena (%zu)", what, off, d->arena_len);
    FUZZ_CHECK(memchr(d->arena + off, 0, d->arena_len - off) != NULL, "%s not terminated", what);
}

static void check_well_formed(const struct dag *d)
{
    FUZZ_CHECK(d->ntasks + d->narrays >= 1, "a DAG without tasks was accepted");
    FUZZ_CHECK(d->arena_len >= 1 && d->arena[0] == '\0', "arena offset 0 is not \"\"");
    for (dag_task_t t = 0; t < d->ntasks; t++) {
        check_arena_string(d, d->name[t], "name");
        const char *name = dag_task_name(d, t);
        dag_task_t id;
        FUZZ_CHECK(dag_lookup(d, name, strlen(name), &id) == 0 && id == t,
                   "task %u (%s) is not found under its name", t, name);
        FUZZ_CHECK(d->argc[t] >= 1 && d->cpus[t] >= 1, "task %s: argc %u, cpus %u", name,
                   d->argc[t], d->cpus[t]);
        check_arena_string(d, d->argv[t], "argv");
        FUZZ_CHECK(d->argv[t] + dag_task_argv_bytes(d, t) <= d->arena_len, "argv of %s", name);
        FUZZ_CHECK(dag_task_arg(d, t, 0)[0] != '\0', "task %s has an empty executable", name);
        FUZZ_CHECK(d->fwd_first[t] <= d->fwd_count && d->nfwd[t] <= d->fwd_count - d->fwd_first[t],
                   "forwards of %s", name);
        for (uint32_t i = 0; i < d->nfwd[t]; i++) {
            const struct dag_forward *f = &d->fwd[d->fwd_first[t] + i];
            FUZZ_CHECK(f->kind <= DAG_FORWARD_FILE, "forward kind %u", f->kind);
            check_arena_string(d, f->src, "forward source");
            check_arena_string(d, f->dest, "forward destination");
        }
    }
    FUZZ_CHECK(d->child_first[0] == 0 && d->child_first[d->ntasks] == d->nedges,
               "child_first spans %u..%u, nedges %u", d->child_first[0], d->child_first[d->ntasks],
               d->nedges);
    uint64_t indegree = 0;
    size_t n = d->ntasks ? d->ntasks : 1;
    uint32_t *seen = calloc(n, sizeof *seen); /* last parent + 1 that listed a child */
    uint32_t *deg = calloc(n, sizeof *deg);
    dag_task_t *queue = malloc(n * sizeof *queue);
    FUZZ_CHECK(seen && deg && queue, "out of memory");
    for (dag_task_t t = 0; t < d->ntasks; t++) {
        FUZZ_CHECK(d->child_first[t] <= d->child_first[t + 1], "child_first not monotone");
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++) {
            dag_task_t c = d->children[e];
            FUZZ_CHECK(c < d->ntasks && c != t, "edge %u -> %u", t, c);
            FUZZ_CHECK(seen[c] != t + 1, "edge %u -> %u listed twice", t, c);
            seen[c] = t + 1;
            deg[c]++;
        }
        indegree += d->nparents[t];
    }
    FUZZ_CHECK(indegree == d->nedges, "in-degrees sum to %" PRIu64 ", nedges %u", indegree,
               d->nedges);
    uint32_t head = 0, tail = 0;
    for (dag_task_t t = 0; t < d->ntasks; t++) {
        FUZZ_CHECK(deg[t] == d->nparents[t], "task %u: %u parents, nparents %u", t, deg[t],
                   d->nparents[t]);
        if (deg[t] == 0)
            queue[tail++] = t;
    }
    while (head < tail) {
        dag_task_t t = queue[head++];
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            if (--deg[d->children[e]] == 0)
                queue[tail++] = d->children[e];
    }
    FUZZ_CHECK(tail == d->ntasks, "an accepted DAG has a cycle (%u of %u tasks sorted)", tail,
               d->ntasks);
    free(seen);
    free(deg);
    free(queue);
}

/* The instance functions on instance i of array a, against the edges. */
static void check_instance(const struct dag *d, uint32_t a, uint32_t i)
{
    char name[64];
    int n = dag_instance_name(d, a, i, name, sizeof name);
    const char *an = dag_array_name(d, a);
    FUZZ_CHECK(n > (int)strlen(an) + 2, "instance name of length %d", n);
    FUZZ_CHECK((size_t)n >= sizeof name || (strncmp(name, an, strlen(an)) == 0 &&
                                            name[strlen(an)] == '[' && name[n - 1] == ']'),
               "instance name %s", name);
    size_t need = dag_instance_argv(d, a, i, NULL, 0);
    char *argv = malloc(need);
    FUZZ_CHECK(argv && dag_instance_argv(d, a, i, argv, need) == need, "instance argv");
    uint32_t argc = 0;
    for (size_t k = 0; k < need; k++)
        argc += argv[k] == '\0';
    FUZZ_CHECK(argc == d->arrays[a].argc && argv[need - 1] == '\0', "instance argv count");
    FUZZ_CHECK(argv[0] != '\0', "instance with an empty executable");
    free(argv);
    struct dag_instance_range r[8];
    uint32_t nc = dag_instance_children(d, a, i, r, 8);
    for (uint32_t k = 0; k < nc && k < 8; k++) {
        if (!DAG_NODE_IS_ARRAY(r[k].node))
            continue;
        const struct dag_array *c = &d->arrays[DAG_NODE_ID(r[k].node)];
        FUZZ_CHECK(c->first <= r[k].first && r[k].first <= r[k].last && r[k].last <= c->last,
                   "child range outside the child array");
    }
    uint64_t want = 0;
    struct dag_instance_range p[8];
    uint32_t np = dag_instance_parents(d, a, i, p, 8);
    for (uint32_t k = 0; k < np && k < 8; k++)
        want += DAG_NODE_IS_ARRAY(p[k].node) ? (uint64_t)p[k].last - p[k].first + 1 : 1;
    if (np <= 8)
        FUZZ_CHECK(dag_instance_nparents(d, a, i) == want, "nparents %" PRIu64 " != %" PRIu64,
                   dag_instance_nparents(d, a, i), want);
}

static void check_arrays(const struct dag *d)
{
    uint64_t total = 0;
    for (uint32_t a = 0; a < d->narrays; a++) {
        const struct dag_array *r = &d->arrays[a];
        check_arena_string(d, r->name, "array name");
        const char *name = dag_array_name(d, a);
        uint32_t id;
        dag_task_t t;
        FUZZ_CHECK(dag_array_lookup(d, name, strlen(name), &id) == 0 && id == a, "array %s", name);
        FUZZ_CHECK(dag_lookup(d, name, strlen(name), &t) != 0, "task and array %s", name);
        FUZZ_CHECK(!strchr(name, '[') && !strchr(name, ']') && *name, "array name %s", name);
        FUZZ_CHECK(r->first <= r->last && r->last <= DAG_ARRAY_MAX_INDEX, "range of %s", name);
        FUZZ_CHECK(r->argc >= 1 && r->cpus >= 1, "array %s argc/cpus", name);
        check_arena_string(d, r->argv, "array argv");
        FUZZ_CHECK(r->fwd_first <= d->fwd_count && r->nfwd <= d->fwd_count - r->fwd_first,
                   "forwards of %s", name);
        total += dag_array_count(d, a);
        check_instance(d, a, r->first);
        check_instance(d, a, r->last);
    }
    FUZZ_CHECK(total == d->ninstances && total <= DAG_MAX_INSTANCES, "ninstances");
    for (dag_task_t t = 0; t < d->ntasks; t++) { /* no plain A or A[...] beside an array A */
        const char *name = dag_task_name(d, t), *b = strchr(name, '[');
        uint32_t id;
        size_t n = b ? (size_t)(b - name) : strlen(name);
        FUZZ_CHECK((b && name[strlen(name) - 1] != ']') || dag_array_lookup(d, name, n, &id) != 0,
                   "task %s named like an array's instance", name);
    }
    for (uint32_t e = 0; e < d->narray_edges; e++) {
        const struct dag_array_edge *x = &d->array_edges[e];
        bool pa = DAG_NODE_IS_ARRAY(x->parent), ca = DAG_NODE_IS_ARRAY(x->child);
        FUZZ_CHECK(pa == (x->kind != DAG_EDGE_FAN_OUT) && ca == (x->kind != DAG_EDGE_FAN_IN) &&
                       x->kind >= DAG_EDGE_ONE_TO_ONE && x->kind <= DAG_EDGE_BARRIER &&
                       x->parent != x->child,
                   "array edge %u kind %u", e, x->kind);
        if (x->kind == DAG_EDGE_ONE_TO_ONE || x->kind == DAG_EDGE_K_TO_ONE)
            FUZZ_CHECK((uint64_t)dag_array_count(d, DAG_NODE_ID(x->parent)) ==
                           (uint64_t)x->k * dag_array_count(d, DAG_NODE_ID(x->child)),
                       "array edge %u counts", e);
        FUZZ_CHECK(e == 0 || d->array_edges[e - 1].parent <= x->parent, "array edges unsorted");
        FUZZ_CHECK(e == 0 || d->array_edges[d->array_in[e - 1]].child <=
                                 d->array_edges[d->array_in[e]].child,
                   "array_in unsorted");
        FUZZ_CHECK(d->array_in[e] < d->narray_edges, "array_in out of range");
    }
}

/* The first difference between two DAGs' arrays, or NULL. */
static const char *array_diff(const struct dag *a, const struct dag *b, dag_task_t *where)
{
    if (a->narrays != b->narrays)
        return "narrays";
    if (a->narray_edges != b->narray_edges)
        return "narray_edges";
    for (uint32_t i = 0; i < a->narrays; i++) {
        const struct dag_array *x = &a->arrays[i], *y = &b->arrays[i];
        *where = i;
        if (strcmp(a->arena + x->name, b->arena + y->name) != 0 || x->first != y->first ||
            x->last != y->last)
            return "array";
        if (strcmp(a->arena + x->pegasus_id, b->arena + y->pegasus_id) != 0 || x->argc != y->argc)
            return "array pegasus_id or argc";
        const char *sa = a->arena + x->argv, *sb = b->arena + y->argv;
        for (uint32_t k = 0; k < x->argc; k++, sa += strlen(sa) + 1, sb += strlen(sb) + 1)
            if (strcmp(sa, sb) != 0)
                return "array argv";
        if (x->cpus != y->cpus || x->memory_mb != y->memory_mb || x->priority != y->priority ||
            x->tries != y->tries || x->gpus != y->gpus || x->time_limit_ms != y->time_limit_ms ||
            x->nfwd != y->nfwd)
            return "array options";
        for (uint32_t k = 0; k < x->nfwd; k++) {
            const struct dag_forward *fa = &a->fwd[x->fwd_first + k];
            const struct dag_forward *fb = &b->fwd[y->fwd_first + k];
            if (fa->kind != fb->kind || strcmp(a->arena + fa->src, b->arena + fb->src) != 0 ||
                strcmp(a->arena + fa->dest, b->arena + fb->dest) != 0)
                return "array forward";
        }
    }
    for (uint32_t e = 0; e < a->narray_edges; e++) {
        const struct dag_array_edge *x = &a->array_edges[e], *y = &b->array_edges[e];
        *where = e;
        if (x->kind != y->kind || x->parent != y->parent || x->child != y->child || x->k != y->k)
            return "array edge";
    }
    return NULL;
}

/* The first difference between two DAGs, or NULL. */
static const char *dag_diff(const struct dag *a, const struct dag *b, dag_task_t *where)
{
    *where = 0;
    if (a->ntasks != b->ntasks)
        return "ntasks";
    if (a->nedges != b->nedges)
        return "nedges";
    for (dag_task_t t = 0; t < a->ntasks; t++) {
        *where = t;
        if (strcmp(dag_task_name(a, t), dag_task_name(b, t)) != 0)
            return "name";
        if (strcmp(a->arena + a->pegasus_id[t], b->arena + b->pegasus_id[t]) != 0)
            return "pegasus_id";
        if (a->argc[t] != b->argc[t])
            return "argc";
        size_t n = dag_task_argv_bytes(a, t);
        if (n != dag_task_argv_bytes(b, t) ||
            memcmp(a->arena + a->argv[t], b->arena + b->argv[t], n) != 0)
            return "argv";
        if (a->cpus[t] != b->cpus[t] || a->memory_mb[t] != b->memory_mb[t] ||
            a->priority[t] != b->priority[t] || a->tries[t] != b->tries[t] ||
            a->gpus[t] != b->gpus[t] || a->time_limit_ms[t] != b->time_limit_ms[t])
            return "options";
        if (a->nfwd[t] != b->nfwd[t])
            return "nfwd";
        for (uint32_t i = 0; i < a->nfwd[t]; i++) {
            const struct dag_forward *fa = &a->fwd[a->fwd_first[t] + i];
            const struct dag_forward *fb = &b->fwd[b->fwd_first[t] + i];
            if (fa->kind != fb->kind || strcmp(a->arena + fa->src, b->arena + fb->src) != 0 ||
                strcmp(a->arena + fa->dest, b->arena + fb->dest) != 0)
                return "forward";
        }
        if (a->child_first[t + 1] != b->child_first[t + 1] || a->nparents[t] != b->nparents[t])
            return "edges";
        for (uint32_t e = a->child_first[t]; e < a->child_first[t + 1]; e++)
            if (a->children[e] != b->children[e])
                return "children";
    }
    return array_diff(a, b, where);
}

/* ---- writing a DAG back -------------------------------------------------- */

/* The options, forwards and argv of a TASK line. */
struct task_view {
    uint32_t pegasus_id, cpus, memory_mb, tries, gpus, time_limit_ms, fwd_first, nfwd, argv, argc;
    int32_t priority;
};

static void put_record(struct text *o, const struct dag *d, const char *name,
                       const struct task_view *v)
{
    if (v->pegasus_id != DAG_NO_STRING)
        putf(o, "#@ %s transformation derivation\n", d->arena + v->pegasus_id);
    putf(o, "TASK %s -c %" PRIu32, name, v->cpus);
    if (v->memory_mb)
        putf(o, " -m %" PRIu32, v->memory_mb);
    if (v->tries)
        putf(o, " --tries=%" PRIu32, v->tries);
    if (v->priority)
        putf(o, " -p %" PRId32, v->priority);
    if (v->gpus)
        putf(o, " -g %" PRIu32, v->gpus);
    if (v->time_limit_ms) /* (ms - 0.5) / 1000: ceil(x * 1000) is ms exactly */
        putf(o, " --time-limit %" PRIu32 ".%03" PRIu32 "5", (v->time_limit_ms - 1) / 1000,
             (v->time_limit_ms - 1) % 1000);
    for (uint32_t i = 0; i < v->nfwd; i++) {
        const struct dag_forward *f = &d->fwd[v->fwd_first + i];
        const char *src = d->arena + f->src, *dest = d->arena + f->dest;
        size_t ns = strlen(src), nd = strlen(dest);
        char *both = malloc(ns + nd + 2);
        FUZZ_CHECK(both != NULL, "out of memory");
        memcpy(both, src, ns);
        both[ns] = '=';
        memcpy(both + ns + 1, dest, nd + 1);
        puts_(o, f->kind == DAG_FORWARD_PIPE ? " -f" : " --file-forward");
        put_word(o, both, ns + nd + 1);
        free(both);
    }
    const char *a = d->arena + v->argv;
    for (uint32_t i = 0; i < v->argc; i++, a += strlen(a) + 1)
        put_word(o, a, strlen(a));
    puts_(o, "\n");
}

static void put_task(struct text *o, const struct dag *d, dag_task_t t)
{
    struct task_view v = {d->pegasus_id[t], d->cpus[t],          d->memory_mb[t], d->tries[t],
                          d->gpus[t],       d->time_limit_ms[t], d->fwd_first[t], d->nfwd[t],
                          d->argv[t],       d->argc[t],          d->priority[t]};
    put_record(o, d, dag_task_name(d, t), &v);
}

static void put_array(struct text *o, const struct dag *d, uint32_t a)
{
    const struct dag_array *r = &d->arrays[a];
    struct task_view v = {r->pegasus_id, r->cpus,          r->memory_mb, r->tries,
                          r->gpus,       r->time_limit_ms, r->fwd_first, r->nfwd,
                          r->argv,       r->argc,          r->priority};
    struct text name = {0};
    putf(&name, "%s[%" PRIu32 "-%" PRIu32 "]", dag_array_name(d, a), r->first, r->last);
    put_record(o, d, name.p, &v);
    free(name.p);
}

/* An EDGE word for node v with selector sel ("i", "i/K", "*"). */
static void put_node(struct text *o, const struct dag *d, dag_node_t v, const char *sel)
{
    if (DAG_NODE_IS_ARRAY(v))
        putf(o, " %s[%s]", dag_array_name(d, DAG_NODE_ID(v)), sel);
    else
        putf(o, " %s", dag_task_name(d, v));
}

static void put_array_edge(struct text *o, const struct dag *d, const struct dag_array_edge *e)
{
    char k[24];
    snprintf(k, sizeof k, "i/%" PRIu32, e->k);
    bool all = e->kind == DAG_EDGE_FAN_IN || e->kind == DAG_EDGE_BARRIER;
    puts_(o, "EDGE");
    put_node(o, d, e->parent, all ? "*" : "i");
    put_node(o, d, e->child,
             e->kind == DAG_EDGE_K_TO_ONE     ? k
             : e->kind == DAG_EDGE_ONE_TO_ONE ? "i"
                                              : "*");
    puts_(o, "\n");
}

static void write_dag(struct text *o, const struct dag *d)
{
    puts_(o, "# written back by fuzz_dagfile\n");
    for (dag_task_t t = 0; t < d->ntasks; t++)
        put_task(o, d, t);
    for (uint32_t a = 0; a < d->narrays; a++)
        put_array(o, d, a);
    for (dag_task_t t = 0; t < d->ntasks; t++)
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            putf(o, "EDGE %s %s\n", dag_task_name(d, t), dag_task_name(d, d->children[e]));
    for (uint32_t e = 0; e < d->narray_edges; e++)
        put_array_edge(o, d, &d->array_edges[e]);
}

/* ---- the target ---------------------------------------------------------- */

static void write_file(int fd, const void *data, size_t size)
{
    FUZZ_CHECK(ftruncate(fd, 0) == 0, "ftruncate: errno %d", errno);
    size_t off = 0;
    while (off < size) {
        ssize_t n = pwrite(fd, (const char *)data + off, size - off, (off_t)off);
        FUZZ_CHECK(n > 0, "pwrite: errno %d", errno);
        off += (size_t)n;
    }
}

/* Oracle 5: a rescue log of every task reads back as every task done. */
static void check_rescue_round_trip(const struct dag *d)
{
    if (d->ntasks == 0) /* only arrays: the rescue log does not know instances yet */
        return;
    struct text o = {0};
    for (dag_task_t t = 0; t < d->ntasks; t++)
        putf(&o, "DONE %s\n", dag_task_name(d, t));
    write_file(rescue_fd, o.p, o.len);
    free(o.p);
    uint8_t *done = calloc(d->ntasks, 1);
    FUZZ_CHECK(done != NULL, "out of memory");
    uint32_t ndone = 0, ntorn = 0;
    struct pmc_error err = {{0}};
    int rc = rescue_read(rescue_path, d, done, &ndone, &ntorn, &err);
    FUZZ_CHECK(rc == 0 && ndone == d->ntasks && ntorn == 0,
               "a rescue log of all %u tasks reads as rc %d, %u done, %u torn: %s", d->ntasks, rc,
               ndone, ntorn, err.text);
    free(done);
}

static void check_error(const struct pmc_error *err)
{
    size_t n = strlen(path);
    FUZZ_CHECK(strncmp(err->text, path, n) == 0 && err->text[n] == ':',
               "error does not name the file: '%s'", err->text);
}

static const struct dagfile_options with_arrays = {.arrays = 1};

/* Oracle 6: what the engine's dagfile_load() (arrays refused) makes of an
 * input that parsed as d1 (NULL: failed) with arrays accepted. */
static void check_refused(const uint8_t *data, size_t size, const struct dag *d1)
{
    struct pmc_error e = {{0}};
    struct dag *d = dagfile_load(path, &e);
    if (!d1 || d1->narrays) {
        FUZZ_CHECK(!d, "arrays refused, yet parsed a DAG the array parse %s",
                   d1 ? "found arrays in" : "refused");
        FUZZ_CHECK(!d1 || strstr(e.text, "task arrays are not supported by this program"),
                   "arrays refused with '%s'", e.text);
        return;
    }
    FUZZ_CHECK(d != NULL, "a DAG without arrays is refused when arrays are: %s", e.text);
    dag_task_t where;
    const char *diff = dag_diff(d1, d, &where);
    FUZZ_CHECK(!diff, "arrays accepted or refused, the DAGs differ in %s at %u", diff, where);
    dag_destroy(d);
    (void)data;
    (void)size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pmc_error e1 = {{0}}, e2 = {{0}};
    errno = 0;
    struct dag *d1 = dagfile_parse_opts((const char *)data, size, path, &with_arrays, &e1);
    FUZZ_CHECK(d1 || errno != 0, "dagfile_parse failed without errno");
    write_file(memfd, data, size);
    struct dag *d2 = dagfile_load_opts(path, &with_arrays, &e2);
    FUZZ_CHECK(!d1 == !d2, "buffer and file disagree: '%s' / '%s'", e1.text, e2.text);
    check_refused(data, size, d1);
    if (!d1) {
        check_error(&e1);
        FUZZ_CHECK(strcmp(e1.text, e2.text) == 0, "buffer error '%s', file error '%s'", e1.text,
                   e2.text);
        return 0;
    }
    dag_task_t where;
    const char *diff = dag_diff(d1, d2, &where);
    FUZZ_CHECK(!diff, "buffer and file DAGs differ in %s at task %u", diff, where);
    dag_destroy(d2);
    check_well_formed(d1);
    check_arrays(d1);
    check_rescue_round_trip(d1);

    struct text o = {0};
    write_dag(&o, d1);
    struct pmc_error e3 = {{0}};
    struct dag *d3 = dagfile_parse_opts(o.p, o.len, path, &with_arrays, &e3);
    FUZZ_CHECK(d3 != NULL, "the DAG written back does not parse: %s\n--- written:\n%s", e3.text,
               o.p);
    diff = dag_diff(d1, d3, &where);
    FUZZ_CHECK(!diff, "written back and parsed again, %s differs at task %u\n--- written:\n%s",
               diff, where, o.p);
    dag_destroy(d3);
    dag_destroy(d1);
    free(o.p);
    return 0;
}
