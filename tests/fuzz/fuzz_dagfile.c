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
    FUZZ_CHECK(d->ntasks >= 1, "a DAG without tasks was accepted");
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
    uint32_t *seen = calloc(d->ntasks, sizeof *seen); /* last parent + 1 that listed a child */
    uint32_t *deg = calloc(d->ntasks, sizeof *deg);
    dag_task_t *queue = malloc(d->ntasks * sizeof *queue);
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
    return NULL;
}

/* ---- writing a DAG back -------------------------------------------------- */

static void put_task(struct text *o, const struct dag *d, dag_task_t t)
{
    if (d->pegasus_id[t] != DAG_NO_STRING)
        putf(o, "#@ %s transformation derivation\n", d->arena + d->pegasus_id[t]);
    putf(o, "TASK %s -c %" PRIu32, dag_task_name(d, t), d->cpus[t]);
    if (d->memory_mb[t])
        putf(o, " -m %" PRIu32, d->memory_mb[t]);
    if (d->tries[t])
        putf(o, " --tries=%" PRIu32, d->tries[t]);
    if (d->priority[t])
        putf(o, " -p %" PRId32, d->priority[t]);
    if (d->gpus[t])
        putf(o, " -g %" PRIu32, d->gpus[t]);
    if (d->time_limit_ms[t]) /* (ms - 0.5) / 1000: ceil(x * 1000) is ms exactly */
        putf(o, " --time-limit %" PRIu32 ".%03" PRIu32 "5", (d->time_limit_ms[t] - 1) / 1000,
             (d->time_limit_ms[t] - 1) % 1000);
    for (uint32_t i = 0; i < d->nfwd[t]; i++) {
        const struct dag_forward *f = &d->fwd[d->fwd_first[t] + i];
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
    for (uint32_t i = 0; i < d->argc[t]; i++) {
        const char *a = dag_task_arg(d, t, i);
        put_word(o, a, strlen(a));
    }
    puts_(o, "\n");
}

static void write_dag(struct text *o, const struct dag *d)
{
    puts_(o, "# written back by fuzz_dagfile\n");
    for (dag_task_t t = 0; t < d->ntasks; t++)
        put_task(o, d, t);
    for (dag_task_t t = 0; t < d->ntasks; t++)
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            putf(o, "EDGE %s %s\n", dag_task_name(d, t), dag_task_name(d, d->children[e]));
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct pmc_error e1 = {{0}}, e2 = {{0}};
    errno = 0;
    struct dag *d1 = dagfile_parse((const char *)data, size, path, &e1);
    FUZZ_CHECK(d1 || errno != 0, "dagfile_parse failed without errno");
    write_file(memfd, data, size);
    struct dag *d2 = dagfile_load(path, &e2);
    FUZZ_CHECK(!d1 == !d2, "buffer and file disagree: '%s' / '%s'", e1.text, e2.text);
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
    check_rescue_round_trip(d1);

    struct text o = {0};
    write_dag(&o, d1);
    struct pmc_error e3 = {{0}};
    struct dag *d3 = dagfile_parse(o.p, o.len, path, &e3);
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
