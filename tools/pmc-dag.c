/* pmc-dag.c - check, measure, draw and convert PMC DAG files.
 *
 *   pmc-dag check DAGFILE [--host-cpus N] [--host-memory MB] [--host-gpus N]
 *                 [--max-errors N]
 *   pmc-dag stats DAGFILE [--json]
 *   pmc-dag dot DAGFILE [--cluster-levels] [--max-tasks N] [-o FILE]
 *   pmc-dag from-wfcommons WFJSON -o DAGFILE [--scale S] [--sleep PATH]
 *
 * One program with subcommands (as git or flux do) rather than four small
 * ones: they share the loading, the level and critical-path code and the
 * error conventions, and one binary and one man page (pmc-dag(1)) are
 * installed.
 *
 * Every DAG file is read by the engine's own parser (io/dagfile.h), never by
 * a second one, so these tools accept exactly what pmc-hybrid accepts.  The
 * parser stops at the first error; `check` reports every error anyway by
 * parsing again after each one with the offending line neutralised in a copy
 * of the file: a broken TASK line is replaced by "TASK NAME /bin/true" (so
 * the EDGE lines naming it do not cascade into errors of their own), any
 * other broken line by "#"; a cycle is reported and broken by removing the
 * EDGE lines of its first edge.  Line numbers never move.
 *
 * Levels: a root is at level 0, any other task at 1 + the highest level of
 * its parents (Kahn's algorithm over the DAG's CSR arrays, O(tasks +
 * edges)); the depth is the number of levels, which is also the critical
 * path in tasks.  The critical path in seconds weighs each task with its
 * sleep time when its command is `sleep SECONDS` (any path ending in /sleep;
 * GNU suffixes s, m, h, d accepted) and 0 otherwise.
 *
 * WfCommons instances (WfFormat, https://github.com/wfcommons/WfFormat):
 * schema 1.5 and later keep the graph in workflow.specification.tasks (name,
 * id, parents and children by id) and the measurements in
 * workflow.execution.tasks (id, runtimeInSeconds, coreCount, memoryInBytes,
 * priority); 1.3 and 1.4 have one list workflow.tasks (name, id, category,
 * parents and children by name, runtimeInSeconds or 1.3's runtime, cores,
 * memoryInBytes or 1.3's memory in KB); 1.0-1.2 call the list workflow.jobs.
 * All are read with jansson.
 *
 * Errors: one line "pmc-dag: ..." on stderr naming the file and the line
 * (DAG files, JSON syntax) or the JSON field ("workflow.tasks[3].parents[0]");
 * exit 1; exit 2 for a bad command line.  A partly written output is removed.
 * Memory: the DAG model (dag.h) plus O(tasks + edges) arrays of 4-8 bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "io/dag.h"
#include "io/dagfile.h"
#include "io/error.h"
#include "io/fdio.h"
#include "io/pathset.h"
#include "io/scan.h"
#include "io/utf8.h"

#define PD_MAX_ERRORS 100     /* check: default --max-errors */
#define PD_MAX_CYCLES 20      /* check: cycles reported before giving up */
#define PD_DOT_MAX_TASKS 2000 /* dot: default --max-tasks */
#define PD_DOT_MAX_LEVELS 200 /* dot: level buckets when aggregating deep DAGs */
#define PD_SHOW_LEVELS 24     /* stats: widths printed before "..." */
#define PD_SHOW_PATH 12       /* stats: critical path tasks printed */

/* ------------------------------------------------------------ diagnostics */

static const char *pd_unlink_on_error; /* output file while it is written */

static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Print "pmc-dag: MESSAGE" and exit with code (1: failure, 2: usage); a
 * partly written output is removed first. */
static void die(int code, const char *fmt, ...)
{
    va_list ap;
    fputs("pmc-dag: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (pd_unlink_on_error)
        unlink(pd_unlink_on_error);
    exit(code);
}

/* malloc that never returns NULL (a tool may exit on ENOMEM); n * size
 * bytes, zeroed. */
static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        die(1, "out of memory");
    return p;
}

/* realloc of p to n * size bytes (contents kept, the rest uninitialised);
 * never returns NULL: exits 1 on overflow or ENOMEM. */
static void *xrealloc(void *p, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        die(1, "out of memory");
    size_t bytes = n * size;
    p = realloc(p, bytes ? bytes : 1);
    if (!p)
        die(1, "out of memory");
    return p;
}

/* A malloc'ed copy of at most n bytes of s (the caller frees it); exits 1
 * on ENOMEM. */
static char *xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        die(1, "out of memory");
    return p;
}

/* Parse a decimal unsigned integer in [min, max] for option opt; exits 2. */
static uint64_t parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno || v < min || v > max)
        die(2, "%s: '%s' is not an integer in [%" PRIu64 ", %" PRIu64 "]", opt, s, min, max);
    return v;
}

/* ------------------------------------------------------------------ files */

/* Check the bytes p[from, n) for a line longer than DAGFILE_MAX_LINE as
 * they arrive (*line_start: where the current line starts, *line: its
 * number), so that a pipe or device without newlines (/dev/zero) is not
 * read without bound.  0, or -1 with err "PATH:LINE: ...". */
static int bound_lines(const char *p, size_t from, size_t n, size_t *line_start,
                       unsigned long *line, const char *path, struct pmc_error *err)
{
    const char *nl;
    while ((nl = memchr(p + from, '\n', n - from)) != NULL &&
           (size_t)(nl - p) - *line_start <= DAGFILE_MAX_LINE) {
        from = *line_start = (size_t)(nl - p) + 1;
        (*line)++;
    }
    if (!nl && n - *line_start <= DAGFILE_MAX_LINE)
        return 0; /* every line so far fits, the last one may go on */
    errno = EFBIG;
    return pmc_errorf(err, "%s:%lu: line longer than the limit of %zu bytes (%zu MiB)", path, *line,
                      DAGFILE_MAX_LINE, DAGFILE_MAX_LINE >> 20);
}

/* Read all of path into a malloc'ed buffer (NUL-terminated, *len bytes
 * before the NUL; the caller frees it): a file, or a pipe (`pmc-dag check
 * <(gen)`), whose lines are bounded as they are read (bound_lines()).
 * Returns 0, or -1 with errno and err = "PATH: reason". */
static int read_file(const char *path, char **buf, size_t *len, struct pmc_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return pmc_errorf(err, "%s: %s", path, strerror(errno));
    size_t n = 0, cap = 1 << 16, line_start = 0;
    unsigned long line = 1;
    char *p = xcalloc(cap, 1);
    for (;;) {
        if (n + 1 >= cap)
            p = xrealloc(p, cap *= 2, 1);
        ssize_t r = read(fd, p + n, cap - n - 1);
        if (r == 0)
            break;
        if (r < 0 && errno == EINTR)
            continue;
        int e = r < 0 ? errno : 0;
        if (r > 0 && bound_lines(p, n, n + (size_t)r, &line_start, &line, path, err) < 0)
            e = errno;
        else if (r < 0)
            pmc_errorf(err, "%s: %s", path, strerror(e));
        if (e) {
            free(p);
            close(fd);
            errno = e;
            return -1;
        }
        n += (size_t)r;
    }
    close(fd);
    p[n] = '\0';
    *buf = p;
    *len = n;
    return 0;
}

/* An output file written through PATH.tmp.XXXXXX and renamed over PATH on
 * success; "-" is stdout.  The temporary file is removed if we die. */
struct output {
    const char *path;
    char *tmp; /* NULL for stdout */
    FILE *f;
};

static void output_open(struct output *o, const char *path)
{
    o->path = path;
    o->tmp = NULL;
    if (!path || strcmp(path, "-") == 0) {
        o->f = stdout;
        return;
    }
    size_t n = strlen(path);
    o->tmp = xcalloc(n + 16, 1);
    snprintf(o->tmp, n + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0)
        die(1, "%s: %s", path, strerror(errno));
    pd_unlink_on_error = o->tmp;
    (void)fchmod(fd, 0644);
    o->f = fdopen(fd, "w");
    if (!o->f)
        die(1, "%s: %s", path, strerror(errno));
}

/* Flush and close; rename the temporary file over the target.  Exits 1 on a
 * write error (the temporary file is removed). */
static void output_close(struct output *o)
{
    bool bad = ferror(o->f) != 0;
    if (o->f == stdout) {
        if (fflush(stdout) != 0 || bad)
            die(1, "stdout: write error");
        return;
    }
    if (fclose(o->f) != 0 || bad)
        die(1, "%s: write error: %s", o->path, strerror(errno));
    if (rename(o->tmp, o->path) != 0)
        die(1, "%s: %s", o->path, strerror(errno));
    pd_unlink_on_error = NULL;
    free(o->tmp);
    o->tmp = NULL;
}

/* Exit 1 when the output file out (NULL or "-": stdout) is the input
 * file in, under any name (io/pathset.h): writing it would replace the
 * input the user pointed at.  what names the input ("the DAG"). */
static void refuse_output_is_input(const char *in, const char *what, const char *out)
{
    if (!out || strcmp(out, "-") == 0)
        return;
    struct pmc_error err;
    struct pathset *ps = pathset_create();
    if (!ps)
        die(1, "out of memory");
    int rc = pathset_add(ps, in, what, 0, &err) < 0 ? -1 : pathset_add(ps, out, "-o", 0, &err);
    pathset_destroy(ps);
    if (rc < 0)
        die(1, "%s", err.text);
}

/* The tools read task arrays, which the engine refuses for now. */
static const struct dagfile_options pd_dag_options = {.arrays = 1};

/* Load a DAG with the engine's parser or exit 1 with its message. */
static struct dag *load_or_die(const char *path)
{
    struct pmc_error err;
    struct dag *dag = dagfile_load_opts(path, &pd_dag_options, &err);
    if (!dag)
        die(1, "%s", err.text);
    return dag;
}

/* --------------------------------------------------------------- analysis */

/* Levels and the critical path of a finished DAG. */
struct levels {
    uint32_t *level;   /* per task: 0 for roots, 1 + max over parents */
    uint32_t *width;   /* per level: tasks at that level */
    uint32_t nlevels;  /* depth = critical path in tasks */
    uint32_t roots;    /* tasks without parents */
    uint32_t leaves;   /* tasks without children */
    double *finish;    /* per task: sleep seconds of the longest path ending there */
    uint32_t *pred;    /* per task: parent on that path, UINT32_MAX for none */
    uint32_t *deep;    /* per task: parent one level up, UINT32_MAX for none */
    double *runtime;   /* per task: sleep seconds, 0 when unknown */
    uint32_t known;    /* tasks whose runtime is known (sleep commands) */
    double work;       /* sum of the known runtimes, seconds */
    double cpu_work;   /* sum of runtime x cpus, CPU-seconds */
    double cp_seconds; /* longest path in seconds */
    uint32_t cp_end;   /* last task of that path */
    uint32_t deep_end; /* a task on the last level */
};

/* Seconds of a `sleep` argument: a decimal number with an optional GNU
 * suffix s, m, h or d.  Returns 0 and *sec, or -1 when it is not one. */
static int sleep_arg_seconds(const char *s, double *sec)
{
    char *end;
    if (!*s || *s == '-' || *s == '+')
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || !(v >= 0) || v > 1e12)
        return -1;
    double mult = 1;
    if (*end && end[1] == '\0') {
        switch (*end) {
        case 's':
            mult = 1;
            break;
        case 'm':
            mult = 60;
            break;
        case 'h':
            mult = 3600;
            break;
        case 'd':
            mult = 86400;
            break;
        default:
            return -1;
        }
    } else if (*end) {
        return -1;
    }
    if (!isfinite(v) || (end - s >= 2 && (s[0] == '0') && (s[1] == 'x' || s[1] == 'X')))
        return -1;
    *sec = v * mult;
    return 0;
}

/* The run time of task t when its command is `sleep SECONDS` (executable
 * "sleep" or any path ending in "/sleep", exactly one argument): returns 1
 * and *sec, else 0. */
static int task_sleep_seconds(const struct dag *dag, dag_task_t t, double *sec)
{
    if (dag->argc[t] != 2)
        return 0;
    const char *exe = dag->arena + dag->argv[t];
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strcmp(base, "sleep") != 0)
        return 0;
    return sleep_arg_seconds(exe + strlen(exe) + 1, sec) == 0;
}

/* Fill lv for a finished, acyclic dag (Kahn's algorithm over the CSR
 * arrays).  The arrays are owned by lv (levels_free()).  Exits on ENOMEM. */
static void levels_compute(const struct dag *dag, struct levels *lv)
{
    uint32_t n = dag->ntasks;
    memset(lv, 0, sizeof *lv);
    lv->level = xcalloc(n, sizeof *lv->level);
    lv->finish = xcalloc(n, sizeof *lv->finish);
    lv->pred = xcalloc(n, sizeof *lv->pred);
    lv->deep = xcalloc(n, sizeof *lv->deep);
    lv->runtime = xcalloc(n, sizeof *lv->runtime);
    uint32_t *indeg = xcalloc(n, sizeof *indeg);
    uint32_t *queue = xcalloc(n, sizeof *queue);
    double *start = xcalloc(n, sizeof *start);
    size_t head = 0, tail = 0;
    for (uint32_t t = 0; t < n; t++) {
        indeg[t] = dag->nparents[t];
        lv->pred[t] = lv->deep[t] = UINT32_MAX;
        if (task_sleep_seconds(dag, t, &lv->runtime[t])) {
            lv->known++;
            lv->work += lv->runtime[t];
            lv->cpu_work += lv->runtime[t] * dag->cpus[t];
        }
        if (indeg[t] == 0) {
            queue[tail++] = t;
            lv->roots++;
        }
        if (dag->child_first[t + 1] == dag->child_first[t])
            lv->leaves++;
    }
    lv->cp_end = lv->deep_end = queue[0]; /* a finished DAG has a root */
    while (head < tail) {
        uint32_t t = queue[head++];
        lv->finish[t] = start[t] + lv->runtime[t];
        if (lv->level[t] + 1 > lv->nlevels) {
            lv->nlevels = lv->level[t] + 1;
            lv->deep_end = t;
        }
        if (lv->finish[t] > lv->cp_seconds) {
            lv->cp_seconds = lv->finish[t];
            lv->cp_end = t;
        }
        for (uint32_t k = dag->child_first[t]; k < dag->child_first[t + 1]; k++) {
            uint32_t c = dag->children[k];
            if (lv->level[t] + 1 > lv->level[c] || lv->deep[c] == UINT32_MAX) {
                if (lv->level[t] + 1 > lv->level[c])
                    lv->level[c] = lv->level[t] + 1;
                lv->deep[c] = t;
            }
            if (lv->finish[t] > start[c] || lv->pred[c] == UINT32_MAX) {
                if (lv->finish[t] > start[c])
                    start[c] = lv->finish[t];
                lv->pred[c] = t;
            }
            if (--indeg[c] == 0)
                queue[tail++] = c;
        }
    }
    lv->width = xcalloc(lv->nlevels, sizeof *lv->width);
    for (uint32_t t = 0; t < n; t++)
        lv->width[lv->level[t]]++;
    free(start);
    free(queue);
    free(indeg);
}

/* Free the arrays of lv.  NULL-safe fields. */
static void levels_free(struct levels *lv)
{
    free(lv->level);
    free(lv->width);
    free(lv->finish);
    free(lv->pred);
    free(lv->deep);
    free(lv->runtime);
}

/* The path ending at task `end` by following link[] (pred or deep): fills
 * out[] (caller-owned, at least nlevels entries) from first to last and
 * returns its length. */
static uint32_t path_from(const uint32_t *link, uint32_t end, uint32_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (uint32_t t = end; t != UINT32_MAX && n < cap; t = link[t])
        out[n++] = t;
    for (uint32_t i = 0; i < n / 2; i++) {
        uint32_t x = out[i];
        out[i] = out[n - 1 - i];
        out[n - 1 - i] = x;
    }
    return n;
}

/* One bucket of a value histogram: values in [lo, hi] and how many tasks. */
struct bucket {
    uint32_t lo, hi, tasks;
};

/* qsort order of uint32_t values. */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Histogram of values[0..n-1]: one bucket per distinct value.  Returns a
 * malloc'ed array (caller frees) and its length in *nb. */
static struct bucket *histogram(const uint32_t *values, uint32_t n, size_t *nb)
{
    uint32_t *v = xcalloc(n, sizeof *v);
    memcpy(v, values, (size_t)n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_u32);
    struct bucket *b = xcalloc(n, sizeof *b);
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (k && b[k - 1].lo == v[i]) {
            b[k - 1].tasks++;
            continue;
        }
        b[k++] = (struct bucket){v[i], v[i], 1};
    }
    free(v);
    *nb = k;
    return b;
}

/* Merge exact buckets into power-of-two ranges (0, 1, 2-3, 4-7, ...) when
 * there are more than 12; returns the new count (in place). */
static size_t histogram_coarsen(struct bucket *b, size_t nb)
{
    if (nb <= 12)
        return nb;
    size_t k = 0;
    for (size_t i = 0; i < nb; i++) {
        uint32_t lo = 0, hi = 0;
        if (b[i].lo > 0) {
            lo = 1;
            while (lo <= b[i].lo / 2)
                lo *= 2;
            hi = lo > UINT32_MAX / 2 ? UINT32_MAX : lo * 2 - 1;
        }
        if (k && b[k - 1].lo == lo) {
            b[k - 1].tasks += b[i].tasks;
            continue;
        }
        b[k++] = (struct bucket){lo, hi, b[i].tasks};
    }
    return k;
}

/* ----------------------------------------------------------------- check */

/* What check did to a line of its working copy. */
enum line_state { LINE_STUBBED = 1, LINE_COMMENTED = 2 };

struct checker {
    const char *path;
    char *buf; /* working copy of the file, edited as errors are found */
    size_t len;
    uint32_t *lines; /* lines edited so far ... */
    uint8_t *state;  /* ... and what was done (enum line_state) */
    size_t nlines, cap;
    unsigned problems;
    unsigned max_errors;
};

/* Find line number `line` (from 1) in the working copy: [*start, *end), end
 * excluding the newline.  Returns -1 when the file is shorter. */
static int find_line(const struct checker *ck, uint32_t line, size_t *start, size_t *end)
{
    size_t s = 0;
    for (uint32_t l = 1; l < line; l++) {
        const char *nl = memchr(ck->buf + s, '\n', ck->len - s);
        if (!nl)
            return -1;
        s = (size_t)(nl - ck->buf) + 1;
    }
    const char *nl = memchr(ck->buf + s, '\n', ck->len - s);
    *start = s;
    *end = nl ? (size_t)(nl - ck->buf) : ck->len;
    return 0;
}

/* Replace the bytes [start, end) of the working copy with text (tlen bytes,
 * no newline), so line numbers stay. */
static void replace_bytes(struct checker *ck, size_t start, size_t end, const char *text,
                          size_t tlen)
{
    size_t len = ck->len - (end - start) + tlen;
    char *p = xcalloc(len + 1, 1);
    memcpy(p, ck->buf, start);
    memcpy(p + start, text, tlen);
    memcpy(p + start + tlen, ck->buf + end, ck->len - end);
    free(ck->buf);
    ck->buf = p;
    ck->len = len;
}

/* What was done to line (enum line_state), 0 for an untouched line.
 * Linear in the lines edited (at most 2 x --max-errors). */
static int line_state(const struct checker *ck, uint32_t line)
{
    for (size_t i = 0; i < ck->nlines; i++)
        if (ck->lines[i] == line)
            return ck->state[i];
    return 0;
}

/* Record that line was edited (state: enum line_state); exits on ENOMEM. */
static void set_line_state(struct checker *ck, uint32_t line, int state)
{
    for (size_t i = 0; i < ck->nlines; i++)
        if (ck->lines[i] == line) {
            ck->state[i] = (uint8_t)state;
            return;
        }
    if (ck->nlines == ck->cap) {
        ck->cap = ck->cap ? ck->cap * 2 : 64;
        ck->lines = xrealloc(ck->lines, ck->cap, sizeof *ck->lines);
        ck->state = xrealloc(ck->state, ck->cap, 1);
    }
    ck->lines[ck->nlines] = line;
    ck->state[ck->nlines++] = (uint8_t)state;
}

/* Split [s, e) on white space into at most max words; returns the count. */
static int split_words(const char *s, const char *e, const char **w, size_t *wl, int max)
{
    int n = 0;
    while (s < e && n < max) {
        s = scan_skip_space(s, e);
        if (s == e)
            break;
        const char *b = s;
        s = scan_word_end(s, e);
        w[n] = b;
        wl[n++] = (size_t)(s - b);
    }
    return n;
}

/* The line number of a parser message "PATH:LINE: text" (and *msg = text),
 * or 0 for a message about the whole file ("PATH: cycle: ..."). */
static uint32_t message_line(const char *path, const char *text, const char **msg)
{
    size_t n = strlen(path);
    *msg = text;
    if (strncmp(text, path, n) != 0 || text[n] != ':' || text[n + 1] < '0' || text[n + 1] > '9')
        return 0;
    char *end;
    unsigned long line = strtoul(text + n + 1, &end, 10);
    if (*end != ':' || line == 0 || line > UINT32_MAX)
        return 0;
    *msg = end[1] == ' ' ? end + 2 : end + 1;
    return (uint32_t)line;
}

/* Neutralise the line of a syntax error: a TASK line with a name (and not a
 * duplicate) becomes "TASK NAME /bin/true" the first time, anything else
 * "#".  Returns 0, or -1 when the line cannot be found (stop checking). */
static int neutralise(struct checker *ck, uint32_t line, const char *msg)
{
    size_t start, end;
    if (find_line(ck, line, &start, &end))
        return -1;
    const char *w[2];
    size_t wl[2];
    int nw = split_words(ck->buf + start, ck->buf + end, w, wl, 2);
    bool task = nw == 2 && wl[0] == 4 && memcmp(w[0], "TASK", 4) == 0 &&
                !memchr(w[1], '\0', wl[1]) && strncmp(msg, "duplicate task", 14) != 0;
    if (task && line_state(ck, line) == 0) {
        size_t tlen = wl[1] + 16;
        char *stub = xcalloc(tlen, 1);
        int k = snprintf(stub, tlen, "TASK %.*s /bin/true", (int)wl[1], w[1]);
        replace_bytes(ck, start, end, stub, (size_t)k);
        free(stub);
        set_line_state(ck, line, LINE_STUBBED);
        return 0;
    }
    replace_bytes(ck, start, end, "#", 1);
    set_line_state(ck, line, LINE_COMMENTED);
    return 0;
}

/* Does EDGE word w (n bytes) name node `name` (len bytes) of a cycle
 * message?  An array is shown as "a[*]" and matches any "a[SELECTOR]";
 * with prefix, w need only begin with name. */
static bool cycle_word(const char *w, size_t n, const char *name, size_t len, bool prefix)
{
    if (len >= 3 && memcmp(name + len - 3, "[*]", 3) == 0)
        return n >= len - 1 && memcmp(w, name, len - 2) == 0 && w[n - 1] == ']';
    return (prefix ? n >= len : n == len) && memcmp(w, name, len) == 0;
}

/* Break the cycle named by a parser message "cycle: A -> B -> ...": comment
 * out every "EDGE A B" line (for an array "a[*]", every EDGE naming a[...]).  Long names do not fit
 * in the message: when B is elided ("...") or cut by the message's end (full is true), every "EDGE
 * A X" with X beginning with what is shown goes, which breaks the cycle too (A is in it).  Returns
 * 0, or -1 when none was found. */
static int break_cycle(struct checker *ck, const char *msg, bool full)
{
    const char *a = strstr(msg, "cycle: ");
    if (!a)
        return -1;
    a += 7;
    const char *arrow = strstr(a, " -> ");
    if (!arrow)
        return -1;
    const char *b = arrow + 4;
    const char *bend = strstr(b, " -> ");
    bool prefix = !bend && full;
    if (!bend)
        bend = b + strlen(b);
    size_t alen = (size_t)(arrow - a), blen = (size_t)(bend - b);
    if (blen == 3 && memcmp(b, "...", 3) == 0) {
        prefix = true;
        blen = 0;
    }
    int found = 0;
    size_t s = 0;
    while (s < ck->len) {
        const char *nl = memchr(ck->buf + s, '\n', ck->len - s);
        size_t e = nl ? (size_t)(nl - ck->buf) : ck->len;
        const char *w[4];
        size_t wl[4];
        int nw = split_words(ck->buf + s, ck->buf + e, w, wl, 4);
        if (nw == 3 && wl[0] == 4 && memcmp(w[0], "EDGE", 4) == 0 &&
            cycle_word(w[1], wl[1], a, alen, false) && cycle_word(w[2], wl[2], b, blen, prefix)) {
            replace_bytes(ck, s, e, "#", 1);
            found = 1;
            e = s + 1;
        }
        s = e + 1;
    }
    return found ? 0 : -1;
}

static void report(struct checker *ck, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print one problem on stderr and count it. */
static void report(struct checker *ck, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    ck->problems++;
}

/* Parse the working copy until it parses, reporting every error.  Returns
 * the DAG of the (neutralised) file, or NULL when the remaining problem
 * cannot be worked around (then resources are not checked). */
static struct dag *check_syntax(struct checker *ck)
{
    unsigned cycles = 0;
    for (;;) {
        struct pmc_error err;
        struct dag *dag = dagfile_parse_opts(ck->buf, ck->len, ck->path, &pd_dag_options, &err);
        if (dag)
            return dag;
        const char *msg;
        uint32_t line = message_line(ck->path, err.text, &msg);
        if (line == 0) { /* the whole file: a cycle, no tasks, no memory */
            report(ck, "%s", err.text);
            bool full = strlen(err.text) + 1 >= sizeof err.text; /* the end may be cut */
            if (!strstr(msg, "cycle: ") || ++cycles >= PD_MAX_CYCLES || break_cycle(ck, msg, full))
                return NULL;
            continue;
        }
        int state = line_state(ck, line);
        if (state == LINE_COMMENTED) { /* cannot happen: a "#" line parses */
            report(ck, "%s", err.text);
            return NULL;
        }
        if (state == 0)
            report(ck, "%s", err.text); /* a stub's own error is not the user's */
        if (ck->problems >= ck->max_errors) {
            fprintf(stderr, "%s: too many errors, stopping after %u\n", ck->path, ck->problems);
            return NULL;
        }
        if (neutralise(ck, line, msg)) {
            if (state)
                report(ck, "%s", err.text);
            return NULL;
        }
    }
}

/* The host shape given to check; 0 in a field: that resource is not
 * checked (gpus: -1). */
struct host_shape {
    uint32_t cpus;
    uint32_t memory_mb;
    int64_t gpus;
};

/* Report the tasks that no host of the given shape can run (CPUs, memory or
 * GPUs above it: pmc-hybrid would stop with "FATAL ERROR: No host is capable
 * of running task NAME").  Skips stubbed lines. */
static void check_resources(struct checker *ck, const struct dag *dag, const struct host_shape *h)
{
    uint32_t cpus = h->cpus, memory = h->memory_mb;
    for (uint32_t t = 0; t < dag->ntasks && ck->problems < ck->max_errors; t++) {
        if (line_state(ck, dag->line[t]))
            continue;
        if (cpus && dag->cpus[t] > cpus)
            report(ck,
                   "%s:%" PRIu32 ": task %s requests %" PRIu32 " CPUs, more than a host has "
                   "(--host-cpus %" PRIu32 "): no host is capable of running it",
                   ck->path, dag->line[t], dag_task_name(dag, t), dag->cpus[t], cpus);
        if (memory && dag->memory_mb[t] > memory)
            report(ck,
                   "%s:%" PRIu32 ": task %s requests %" PRIu32 " MB, more than a host has "
                   "(--host-memory %" PRIu32 "): no host is capable of running it",
                   ck->path, dag->line[t], dag_task_name(dag, t), dag->memory_mb[t], memory);
        if (h->gpus >= 0 && dag->gpus[t] > h->gpus)
            report(ck,
                   "%s:%" PRIu32 ": task %s requests %" PRIu32 " GPUs, more than a host has "
                   "(--host-gpus %" PRId64 "): no host is capable of running it",
                   ck->path, dag->line[t], dag_task_name(dag, t), dag->gpus[t], h->gpus);
    }
}

/* check_resources() for the arrays: one problem per array, not per
 * instance. */
static void check_array_resources(struct checker *ck, const struct dag *dag,
                                  const struct host_shape *h)
{
    for (uint32_t a = 0; a < dag->narrays && ck->problems < ck->max_errors; a++) {
        const struct dag_array *r = &dag->arrays[a];
        if (line_state(ck, r->line))
            continue;
        const char *what = NULL;
        uint32_t asked = 0;
        int64_t has = 0;
        if (h->cpus && r->cpus > h->cpus)
            what = "CPUs", asked = r->cpus, has = h->cpus;
        else if (h->memory_mb && r->memory_mb > h->memory_mb)
            what = "MB", asked = r->memory_mb, has = h->memory_mb;
        else if (h->gpus >= 0 && r->gpus > h->gpus)
            what = "GPUs", asked = r->gpus, has = h->gpus;
        if (what)
            report(ck,
                   "%s:%" PRIu32 ": array %s requests %" PRIu32 " %s per instance, more than a "
                   "host has (%" PRId64 "): no host is capable of running its instances",
                   ck->path, r->line, dag_array_name(dag, a), asked, what, has);
    }
}

static const char check_help[] =
    "usage: pmc-dag check DAGFILE [--host-cpus N] [--host-memory MB] [--host-gpus N]\n"
    "                     [--max-errors N]\n"
    "Check a DAG file without running anything: every parser error with its\n"
    "line (the engine's own parser), cycles, and with a host shape the tasks\n"
    "that no host could run (more CPUs, memory or GPUs than the host has).\n"
    "Problems go to stderr, one per line (FILE:LINE: what); on success one line\n"
    "on stdout.  Exit status: 0 no problem, 1 problems, 2 bad command line.\n"
    "\n"
    "      --host-cpus N      CPUs of a host (default: CPUs are not checked)\n"
    "      --host-memory MB   memory of a host (default: memory is not checked)\n"
    "      --host-gpus N      GPUs of a host (default: GPUs are not checked)\n"
    "      --max-errors N     stop after N problems (default 100)\n"
    "  -h, --help             show this help\n";

/* pmc-dag check: argv[0] is "check".  Returns the exit status (0 no
 * problem, 1 problems, 2 usage); exits 1 when the file cannot be read. */
static int cmd_check(int argc, char **argv)
{
    static const struct option opts[] = {{"host-cpus", required_argument, NULL, 'c'},
                                         {"host-memory", required_argument, NULL, 'm'},
                                         {"host-gpus", required_argument, NULL, 'g'},
                                         {"max-errors", required_argument, NULL, 'x'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    struct host_shape shape = {0, 0, -1};
    struct checker ck = {.max_errors = PD_MAX_ERRORS};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'c':
            shape.cpus = (uint32_t)parse_uint("--host-cpus", optarg, 1, UINT32_MAX);
            break;
        case 'm':
            shape.memory_mb = (uint32_t)parse_uint("--host-memory", optarg, 1, UINT32_MAX);
            break;
        case 'g':
            shape.gpus = (int64_t)parse_uint("--host-gpus", optarg, 0, UINT32_MAX);
            break;
        case 'x':
            ck.max_errors = (unsigned)parse_uint("--max-errors", optarg, 1, 1000000);
            break;
        case 'h':
            fputs(check_help, stdout);
            return 0;
        default:
            fputs(check_help, stderr);
            return 2;
        }
    }
    if (optind != argc - 1)
        die(2, "check: expected one DAGFILE (pmc-dag check --help)");
    ck.path = argv[optind];
    struct pmc_error err;
    if (read_file(ck.path, &ck.buf, &ck.len, &err))
        die(1, "%s", err.text);
    struct dag *dag = check_syntax(&ck);
    if (dag) {
        check_resources(&ck, dag, &shape);
        check_array_resources(&ck, dag, &shape);
    }
    if (ck.problems == 0) {
        struct levels lv;
        levels_compute(dag, &lv);
        printf("%s: ok: %" PRIu32 " tasks, %" PRIu32 " edges, %" PRIu32 " levels", ck.path,
               dag->ntasks, dag->nedges, lv.nlevels);
        if (dag->narrays)
            printf(" (plain tasks); %" PRIu32 " arrays of %" PRIu64 " instances, %" PRIu32
                   " array edges",
                   dag->narrays, dag->ninstances, dag->narray_edges);
        putchar('\n');
        levels_free(&lv);
    } else {
        fprintf(stderr, "%s: %u problem%s\n", ck.path, ck.problems, ck.problems == 1 ? "" : "s");
    }
    dag_destroy(dag);
    free(ck.buf);
    free(ck.lines);
    free(ck.state);
    return ck.problems ? 1 : 0;
}

/* ----------------------------------------------------------------- stats */

/* [{"value": V, "tasks": N}, ...] for the nb buckets of b (a new
 * reference, NULL on ENOMEM, which json_dumpf() then reports). */
static json_t *histogram_json(const struct bucket *b, size_t nb)
{
    json_t *a = json_array();
    for (size_t i = 0; i < nb; i++)
        json_array_append_new(a, json_pack("{s:I, s:I}", "value", (json_int_t)b[i].lo, "tasks",
                                           (json_int_t)b[i].tasks));
    return a;
}

/* The names of the n tasks path[] as a JSON array (a new reference). */
static json_t *path_json(const struct dag *dag, const uint32_t *path, uint32_t n)
{
    json_t *a = json_array();
    for (uint32_t i = 0; i < n; i++) { /* bad UTF-8 as U+FFFD: json_string() refuses it */
        char *name = utf8_lossy(dag_task_name(dag, path[i]));
        json_array_append_new(a, name ? json_string(name) : NULL);
        free(name);
    }
    return a;
}

/* stats as one JSON object on stdout (fields in pmc-dag(1)); exits 1 when
 * it cannot be written. */
static void stats_json(const char *path, const struct dag *dag, const struct levels *lv)
{
    json_t *o = json_object(), *width = json_object(), *widths = json_array();
    uint32_t wmax = 0, wat = 0;
    for (uint32_t l = 0; l < lv->nlevels; l++) {
        json_array_append_new(widths, json_integer(lv->width[l]));
        if (lv->width[l] > wmax) {
            wmax = lv->width[l];
            wat = l;
        }
    }
    char *file = utf8_lossy(path);
    json_object_set_new(o, "file", file ? json_string(file) : NULL);
    free(file);
    json_object_set_new(o, "tasks", json_integer(dag->ntasks));
    json_object_set_new(o, "edges", json_integer(dag->nedges));
    json_object_set_new(o, "arrays", json_integer(dag->narrays));
    json_object_set_new(o, "instances", json_integer((json_int_t)dag->ninstances));
    json_object_set_new(o, "array_edges", json_integer(dag->narray_edges));
    json_object_set_new(o, "levels", json_integer(lv->nlevels));
    json_object_set_new(o, "roots", json_integer(lv->roots));
    json_object_set_new(o, "leaves", json_integer(lv->leaves));
    json_object_set_new(width, "max", json_integer(wmax));
    json_object_set_new(width, "max_level", json_integer(wat));
    json_object_set_new(width, "per_level", widths);
    json_object_set_new(o, "width", width);

    const uint32_t *values[] = {dag->cpus, dag->memory_mb, dag->gpus};
    const char *names[] = {"cpus", "memory_mb", "gpus"};
    for (int i = 0; i < 3; i++) {
        size_t nb;
        struct bucket *h = histogram(values[i], dag->ntasks, &nb);
        json_object_set_new(o, names[i], histogram_json(h, nb));
        free(h);
    }
    json_object_set_new(o, "work_seconds", lv->known ? json_real(lv->work) : json_null());
    json_object_set_new(o, "cpu_seconds", lv->known ? json_real(lv->cpu_work) : json_null());

    /* the path in seconds when run times are known, else one longest chain */
    uint32_t *chain = xcalloc(lv->nlevels, sizeof *chain);
    uint32_t n = lv->known ? path_from(lv->pred, lv->cp_end, chain, lv->nlevels)
                           : path_from(lv->deep, lv->deep_end, chain, lv->nlevels);
    json_t *cp = json_object();
    json_object_set_new(cp, "tasks", json_integer(lv->nlevels));
    json_object_set_new(cp, "seconds", lv->known ? json_real(lv->cp_seconds) : json_null());
    json_object_set_new(cp, "runtime_known", json_integer(lv->known));
    json_object_set_new(cp, "path", path_json(dag, chain, n));
    json_object_set_new(o, "critical_path", cp);
    free(chain);

    if (json_dumpf(o, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(12)) != 0)
        die(1, "stats: cannot write JSON");
    putchar('\n');
    json_decref(o);
}

/* Print one histogram line: "1: 1700, 4: 38" or ranges "129-256: 7". */
static void print_histogram(const char *label, struct bucket *b, size_t nb, const char *zero)
{
    nb = histogram_coarsen(b, nb);
    printf("%-16s", label);
    for (size_t i = 0; i < nb; i++) {
        const char *sep = i ? ", " : "";
        if (b[i].lo == 0 && zero)
            printf("%s%s: %" PRIu32, sep, zero, b[i].tasks);
        else if (b[i].lo == b[i].hi)
            printf("%s%" PRIu32 ": %" PRIu32, sep, b[i].lo, b[i].tasks);
        else
            printf("%s%" PRIu32 "-%" PRIu32 ": %" PRIu32, sep, b[i].lo, b[i].hi, b[i].tasks);
    }
    putchar('\n');
}

/* Print the names of the n tasks path[] joined by " -> ", the middle ones
 * left out past PD_SHOW_PATH. */
static void print_path(const struct dag *dag, const uint32_t *path, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (n > PD_SHOW_PATH && i == PD_SHOW_PATH / 2) {
            printf(" -> ... (%" PRIu32 " more)", n - PD_SHOW_PATH);
            i = n - PD_SHOW_PATH / 2;
        }
        printf("%s%s", i ? " -> " : "", dag_task_name(dag, path[i]));
    }
}

/* stats as aligned text on stdout. */
static void stats_text(const char *path, const struct dag *dag, const struct levels *lv)
{
    printf("%-16s%s\n", "file", path);
    printf("%-16s%" PRIu32 "\n", "tasks", dag->ntasks);
    printf("%-16s%" PRIu32 "\n", "edges", dag->nedges);
    if (dag->narrays) {
        printf("%-16s%" PRIu32 "\n", "arrays", dag->narrays);
        printf("%-16s%" PRIu64 " (%" PRIu64 " tasks with the plain ones)\n", "instances",
               dag->ninstances, dag->ninstances + dag->ntasks);
        printf("%-16s%" PRIu32 "\n", "array edges", dag->narray_edges);
        printf("%-16s%s\n", "note", "levels, widths and paths below cover the plain tasks only");
    }
    printf("%-16s%" PRIu32 "\n", "levels", lv->nlevels);
    printf("%-16s%" PRIu32 "\n", "roots", lv->roots);
    printf("%-16s%" PRIu32 "\n", "leaves", lv->leaves);
    uint32_t wmax = 0, wat = 0;
    printf("%-16s", "width per level");
    for (uint32_t l = 0; l < lv->nlevels; l++) {
        if (lv->width[l] > wmax) {
            wmax = lv->width[l];
            wat = l;
        }
        if (l < PD_SHOW_LEVELS)
            printf("%s%" PRIu32, l ? " " : "", lv->width[l]);
    }
    if (lv->nlevels > PD_SHOW_LEVELS)
        printf(" ... (%" PRIu32 " more levels)", lv->nlevels - PD_SHOW_LEVELS);
    printf("\n%-16s%" PRIu32 " (level %" PRIu32 ")\n", "max width", wmax, wat);
    size_t nb;
    struct bucket *h = histogram(dag->cpus, dag->ntasks, &nb);
    print_histogram("cpus (-c)", h, nb, NULL);
    free(h);
    h = histogram(dag->memory_mb, dag->ntasks, &nb);
    print_histogram("memory MB (-m)", h, nb, "not given");
    free(h);
    h = histogram(dag->gpus, dag->ntasks, &nb);
    if (nb > 1 || h[0].lo > 0) /* only when some task asks for GPUs */
        print_histogram("gpus (-g)", h, nb, NULL);
    free(h);
    uint32_t *p = xcalloc(lv->nlevels, sizeof *p);
    printf("%-16s%" PRIu32 " tasks: ", "critical path", lv->nlevels);
    print_path(dag, p, path_from(lv->deep, lv->deep_end, p, lv->nlevels));
    putchar('\n');
    if (lv->known) {
        printf("%-16s%" PRIu32 " of %" PRIu32 " tasks run sleep: %.3f s of work, %.3f "
               "CPU-seconds\n",
               "runtimes", lv->known, dag->ntasks, lv->work, lv->cpu_work);
        printf("%-16s%.3f s (other tasks count 0 s): ", "critical path", lv->cp_seconds);
        print_path(dag, p, path_from(lv->pred, lv->cp_end, p, lv->nlevels));
        putchar('\n');
        if (lv->cp_seconds > 0)
            printf("%-16s%.1f (work / critical path: the most CPUs the run can keep busy on "
                   "average)\n",
                   "parallelism", lv->work / lv->cp_seconds);
    } else {
        printf("%-16sunknown (no task runs `sleep SECONDS`)\n", "runtimes");
    }
    free(p);
}

static const char stats_help[] =
    "usage: pmc-dag stats DAGFILE [--json]\n"
    "Measure a DAG: tasks, edges, levels (depth) and width per level, roots and\n"
    "leaves, histograms of -c, -m and -g, and the critical path in tasks and, for\n"
    "tasks whose command is `sleep SECONDS` (/bin/sleep, sleep, .../sleep), in\n"
    "seconds (other tasks count 0 s), with the work and average parallelism.\n"
    "\n"
    "      --json   one JSON object instead of text (fields in pmc-dag(1))\n"
    "  -h, --help   show this help\n";

/* pmc-dag stats: argv[0] is "stats".  Returns the exit status; exits 1 on
 * a DAG the parser rejects (its message) or a write error. */
static int cmd_stats(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'}, {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    bool json = false;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            json = true;
            break;
        case 'h':
            fputs(stats_help, stdout);
            return 0;
        default:
            fputs(stats_help, stderr);
            return 2;
        }
    }
    if (optind != argc - 1)
        die(2, "stats: expected one DAGFILE (pmc-dag stats --help)");
    const char *path = argv[optind];
    struct dag *dag = load_or_die(path);
    struct levels lv;
    levels_compute(dag, &lv);
    if (json)
        stats_json(path, dag, &lv);
    else
        stats_text(path, dag, &lv);
    if (fflush(stdout) != 0 || ferror(stdout))
        die(1, "stdout: write error");
    levels_free(&lv);
    dag_destroy(dag);
    return 0;
}

/* ------------------------------------------------------------------- dot */

/* Length of the transformation part of a Pegasus task name "TR_ID0000001"
 * (the name without its _ID<digits> suffix), or the whole name. */
static size_t transformation_len(const char *name)
{
    const char *id = NULL;
    for (const char *p = strstr(name, "_ID"); p; p = strstr(p + 1, "_ID"))
        id = p;
    if (!id || id == name || !id[3])
        return strlen(name);
    for (const char *d = id + 3; *d; d++)
        if (*d < '0' || *d > '9')
            return strlen(name);
    return (size_t)(id - name);
}

/* Write s as a quoted DOT ID (", \ escaped). */
static void dot_quote(FILE *f, const char *s, size_t n)
{
    putc('"', f);
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\')
            putc('\\', f);
        putc(s[i], f);
    }
    putc('"', f);
}

static const char *const dot_palette[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f",
                                          "#cab2d6", "#ffff99", "#1f78b4", "#33a02c",
                                          "#e31a1c", "#ff7f00", "#6a3d9a", "#b15928"};
#define DOT_NCOLOURS (sizeof dot_palette / sizeof dot_palette[0])

/* A colour per transformation: a hash of its name into the palette. */
static const char *dot_colour(const char *s, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)s[i]) * 16777619u;
    return dot_palette[h % DOT_NCOLOURS];
}

/* The DOT node of plain task t: its name, or its group g<N> when group is
 * not NULL. */
static void dot_plain_node(FILE *f, const struct dag *dag, dag_task_t t, const uint32_t *group)
{
    if (group) {
        fprintf(f, "g%" PRIu32, group[t]);
        return;
    }
    const char *name = dag_task_name(dag, t);
    dot_quote(f, name, strlen(name));
}

static void dot_node(FILE *f, const struct dag *dag, dag_node_t v, const uint32_t *group)
{
    if (!DAG_NODE_IS_ARRAY(v)) {
        dot_plain_node(f, dag, v, group);
        return;
    }
    /* "a[*]": no plain task has that name (the parser refuses it) */
    const char *name = dag_array_name(dag, DAG_NODE_ID(v));
    size_t n = strlen(name);
    char *id = xcalloc(n + 4, 1);
    memcpy(id, name, n);
    memcpy(id + n, "[*]", 3);
    dot_quote(f, id, n + 3);
    free(id);
}

/* One node per task array, labelled with its name, range and count, and
 * one edge per array edge, labelled with its form. */
static void dot_arrays(FILE *f, const struct dag *dag, const uint32_t *group)
{
    for (uint32_t a = 0; a < dag->narrays; a++) {
        const struct dag_array *r = &dag->arrays[a];
        const char *name = dag_array_name(dag, a);
        char label[64];
        int n = snprintf(label, sizeof label, "[%" PRIu32 "-%" PRIu32 "]\\n%" PRIu32 " instances",
                         r->first, r->last, dag_array_count(dag, a));
        fputs("  ", f);
        dot_node(f, dag, DAG_NODE_ARRAY | a, NULL);
        fputs(" [shape=box3d, label=", f);
        putc('"', f);
        for (const char *c = name; *c; c++) {
            if (*c == '"' || *c == '\\')
                putc('\\', f);
            putc(*c, f);
        }
        fprintf(f, "%.*s\", fillcolor=\"%s\"];\n", n, label, dot_colour(name, strlen(name)));
    }
    for (uint32_t e = 0; e < dag->narray_edges; e++) {
        const struct dag_array_edge *r = &dag->array_edges[e];
        fputs("  ", f);
        dot_node(f, dag, r->parent, group);
        fputs(" -> ", f);
        dot_node(f, dag, r->child, group);
        if (r->kind == DAG_EDGE_K_TO_ONE)
            fprintf(f, " [label=\"%" PRIu32 ":1\"];\n", r->k);
        else
            fprintf(f, " [label=\"%s\"];\n",
                    r->kind == DAG_EDGE_ONE_TO_ONE ? "1:1"
                    : r->kind == DAG_EDGE_BARRIER  ? "all:all"
                                                   : "all");
    }
}

/* One node per task; with clusters, one dashed cluster per level. */
static void dot_tasks(FILE *f, const struct dag *dag, const struct levels *lv, bool clusters)
{
    uint32_t n = dag->ntasks;
    uint32_t *by_level = NULL;
    if (clusters) { /* task ids sorted by level (counting sort) */
        uint32_t *first = xcalloc(lv->nlevels + 1, sizeof *first);
        for (uint32_t l = 0; l < lv->nlevels; l++)
            first[l + 1] = first[l] + lv->width[l];
        by_level = xcalloc(n, sizeof *by_level);
        for (uint32_t t = 0; t < n; t++)
            by_level[first[lv->level[t]]++] = t;
        free(first);
    }
    uint32_t level = UINT32_MAX;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t t = by_level ? by_level[i] : i;
        if (by_level && lv->level[t] != level) {
            if (level != UINT32_MAX)
                fputs("  }\n", f);
            level = lv->level[t];
            fprintf(f,
                    "  subgraph cluster_level_%" PRIu32 " {\n    label=\"level %" PRIu32
                    "\"; style=dashed; color=\"#999999\";\n",
                    level, level);
        }
        const char *name = dag_task_name(dag, t);
        fputs(by_level ? "    " : "  ", f);
        dot_quote(f, name, strlen(name));
        fprintf(f, " [fillcolor=\"%s\"];\n", dot_colour(name, transformation_len(name)));
    }
    if (by_level && level != UINT32_MAX)
        fputs("  }\n", f);
    for (uint32_t t = 0; t < n; t++)
        for (uint32_t k = dag->child_first[t]; k < dag->child_first[t + 1]; k++) {
            const char *a = dag_task_name(dag, t), *b = dag_task_name(dag, dag->children[k]);
            fputs("  ", f);
            dot_quote(f, a, strlen(a));
            fputs(" -> ", f);
            dot_quote(f, b, strlen(b));
            fputs(";\n", f);
        }
    free(by_level);
    dot_arrays(f, dag, NULL);
}

/* Grouping of tasks for the aggregated DOT graph. */
struct grouping {
    const struct dag *dag;
    const struct levels *lv;
    uint32_t bucket; /* levels per group (1 unless the DAG is very deep) */
    bool by_tr;      /* also by transformation */
    uint32_t *group; /* per task: its group */
    uint32_t *rep;   /* per group: one of its tasks */
    uint32_t *size;  /* per group: tasks */
    uint32_t ngroups;
};

/* qsort_r order of task ids by group key: level / bucket, then (by_tr)
 * the transformation's bytes; arg is the struct grouping. */
static int cmp_group_key(const void *pa, const void *pb, void *arg)
{
    const struct grouping *g = arg;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    uint32_t la = g->lv->level[a] / g->bucket, lb = g->lv->level[b] / g->bucket;
    if (la != lb)
        return la < lb ? -1 : 1;
    if (!g->by_tr)
        return 0;
    const char *na = dag_task_name(g->dag, a), *nb = dag_task_name(g->dag, b);
    size_t ka = transformation_len(na), kb = transformation_len(nb);
    int c = memcmp(na, nb, ka < kb ? ka : kb);
    return c ? c : (ka > kb) - (ka < kb);
}

/* Group the tasks by (level / bucket, transformation if by_tr); fills g's
 * arrays (freed by the caller) and returns the number of groups. */
static uint32_t group_tasks(struct grouping *g)
{
    uint32_t n = g->dag->ntasks;
    uint32_t *ids = xcalloc(n, sizeof *ids);
    for (uint32_t t = 0; t < n; t++)
        ids[t] = t;
    qsort_r(ids, n, sizeof *ids, cmp_group_key, g);
    free(g->group);
    free(g->rep);
    free(g->size);
    g->group = xcalloc(n, sizeof *g->group);
    g->rep = xcalloc(n, sizeof *g->rep);
    g->size = xcalloc(n, sizeof *g->size);
    g->ngroups = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i == 0 || cmp_group_key(&ids[i - 1], &ids[i], g) != 0)
            g->rep[g->ngroups++] = ids[i];
        g->group[ids[i]] = g->ngroups - 1;
        g->size[g->ngroups - 1]++;
    }
    free(ids);
    return g->ngroups;
}

/* qsort order of uint64_t values (edges packed as parent << 32 | child). */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* One node per group (level and transformation, or coarser when there are
 * more than max groups), one edge per pair of linked groups labelled with
 * the number of task edges, groups of a level in one cluster. */
static void dot_groups(FILE *f, const struct dag *dag, const struct levels *lv, uint32_t max)
{
    struct grouping g = {.dag = dag, .lv = lv, .bucket = 1, .by_tr = true};
    if (group_tasks(&g) > max) {
        g.by_tr = false;
        if (lv->nlevels > PD_DOT_MAX_LEVELS)
            g.bucket = (lv->nlevels + PD_DOT_MAX_LEVELS - 1) / PD_DOT_MAX_LEVELS;
        group_tasks(&g);
    }
    uint32_t cluster = UINT32_MAX;
    for (uint32_t k = 0; k < g.ngroups; k++) {
        uint32_t t = g.rep[k], l0 = lv->level[t] / g.bucket * g.bucket;
        if (l0 != cluster) {
            if (cluster != UINT32_MAX)
                fputs("  }\n", f);
            cluster = l0;
            if (g.bucket == 1)
                fprintf(f,
                        "  subgraph cluster_level_%" PRIu32 " {\n    label=\"level %" PRIu32
                        "\"; style=dashed; color=\"#999999\";\n",
                        l0, l0);
            else
                fprintf(f,
                        "  subgraph cluster_level_%" PRIu32 " {\n    label=\"levels %" PRIu32
                        "-%" PRIu32 "\"; style=dashed; color=\"#999999\";\n",
                        l0, l0, l0 + g.bucket - 1);
        }
        const char *name = dag_task_name(dag, t);
        size_t tl = transformation_len(name);
        fprintf(f, "    g%" PRIu32 " [label=\"", k);
        if (g.by_tr) {
            for (size_t i = 0; i < tl; i++) {
                if (name[i] == '"' || name[i] == '\\')
                    putc('\\', f);
                putc(name[i], f);
            }
            fprintf(f, "\\n%" PRIu32 " task%s\", fillcolor=\"%s\"];\n", g.size[k],
                    g.size[k] == 1 ? "" : "s", dot_colour(name, tl));
        } else {
            fprintf(f, "%" PRIu32 " task%s\"];\n", g.size[k], g.size[k] == 1 ? "" : "s");
        }
    }
    if (cluster != UINT32_MAX)
        fputs("  }\n", f);
    uint64_t *pairs = xcalloc(dag->nedges, sizeof *pairs);
    size_t np = 0;
    for (uint32_t t = 0; t < dag->ntasks; t++)
        for (uint32_t k = dag->child_first[t]; k < dag->child_first[t + 1]; k++)
            pairs[np++] = (uint64_t)g.group[t] << 32 | g.group[dag->children[k]];
    qsort(pairs, np, sizeof *pairs, cmp_u64);
    for (size_t i = 0; i < np;) {
        size_t j = i;
        while (j < np && pairs[j] == pairs[i])
            j++;
        uint32_t a = (uint32_t)(pairs[i] >> 32), b = (uint32_t)pairs[i];
        if (a != b)
            fprintf(f, "  g%" PRIu32 " -> g%" PRIu32 " [label=\"%zu\", penwidth=%.1f];\n", a, b,
                    j - i, 1.0 + log10((double)(j - i)));
        i = j;
    }
    free(pairs);
    dot_arrays(f, dag, g.group);
    free(g.group);
    free(g.rep);
    free(g.size);
}

static const char dot_help[] =
    "usage: pmc-dag dot DAGFILE [--cluster-levels] [--max-tasks N] [-o FILE]\n"
    "Write the DAG as a Graphviz graph (render with: dot -Tsvg FILE -o wf.svg).\n"
    "\n"
    "Up to --max-tasks tasks (default 2000) every task is a node, coloured by its\n"
    "transformation (the name without its _IDnnnnnnn suffix).  Bigger DAGs are\n"
    "aggregated so the picture stays readable: one node per (level,\n"
    "transformation) labelled with its task count, one edge per linked pair of\n"
    "nodes labelled with the number of task edges it stands for, and one cluster\n"
    "per level; if that still gives more than --max-tasks nodes, one node per\n"
    "level (per range of levels past 200 levels).\n"
    "\n"
    "      --cluster-levels   put the tasks of each level in a cluster\n"
    "      --max-tasks N      aggregate above N tasks (0: never)\n"
    "  -o, --output FILE      write to FILE instead of stdout\n"
    "  -h, --help             show this help\n";

/* pmc-dag dot: argv[0] is "dot".  Returns the exit status; exits 1 on a
 * DAG the parser rejects or a write error (the output is then removed). */
static int cmd_dot(int argc, char **argv)
{
    static const struct option opts[] = {{"cluster-levels", no_argument, NULL, 'l'},
                                         {"max-tasks", required_argument, NULL, 'x'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    bool clusters = false;
    uint32_t max = PD_DOT_MAX_TASKS;
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'l':
            clusters = true;
            break;
        case 'x':
            max = (uint32_t)parse_uint("--max-tasks", optarg, 0, UINT32_MAX);
            break;
        case 'o':
            out = optarg;
            break;
        case 'h':
            fputs(dot_help, stdout);
            return 0;
        default:
            fputs(dot_help, stderr);
            return 2;
        }
    }
    if (optind != argc - 1)
        die(2, "dot: expected one DAGFILE (pmc-dag dot --help)");
    const char *path = argv[optind];
    refuse_output_is_input(path, "the DAG", out);
    struct dag *dag = load_or_die(path);
    struct levels lv;
    levels_compute(dag, &lv);
    struct output o;
    output_open(&o, out);
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    fputs("digraph ", o.f);
    dot_quote(o.f, base, strlen(base));
    fprintf(o.f, " {\n  // pmc-dag dot: %" PRIu32 " tasks, %" PRIu32 " edges, %" PRIu32 " levels",
            dag->ntasks, dag->nedges, lv.nlevels);
    if (dag->narrays)
        fprintf(o.f, ", %" PRIu32 " arrays of %" PRIu64 " instances", dag->narrays,
                dag->ninstances);
    fputs("\n  graph [rankdir=TB, fontsize=10, fontname=\"Helvetica\"];\n"
          "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#e0e0e0\", fontsize=9, "
          "fontname=\"Helvetica\"];\n  edge [color=\"#555555\", fontsize=8, "
          "arrowsize=0.6];\n",
          o.f);
    if (max && dag->ntasks > max)
        dot_groups(o.f, dag, &lv, max);
    else
        dot_tasks(o.f, dag, &lv, clusters);
    fputs("}\n", o.f);
    output_close(&o);
    levels_free(&lv);
    dag_destroy(dag);
    return 0;
}

/* --------------------------------------------------------- from-wfcommons */

/* One task of a WfCommons instance, as read. */
struct wf_task {
    const char *name;  /* "name" (owned by the JSON tree) */
    const char *id;    /* "id" or NULL */
    char *dag_name;    /* the TASK name we write (owned) */
    char *tr;          /* transformation for the #@ line (owned) */
    json_t *spec;      /* the task object with parents/children */
    json_t *exec;      /* the object with the measurements (may be spec) */
    size_t exec_index; /* its index, for messages */
    double runtime;    /* seconds, -1 when absent */
    double cores;      /* 0 when absent */
    double mem_bytes;  /* 0 when absent */
    bool has_prio;
    json_int_t prio;
};

/* Where the tasks are, for messages: "workflow.tasks" etc. */
struct wf_layout {
    const char *spec_field; /* JSON path of the task list with the graph */
    const char *exec_field; /* JSON path of the measurements (may equal spec) */
    json_t *spec;           /* arrays */
    json_t *exec;
};

/* An open-addressing map from strings (owned elsewhere) to task indices. */
struct strmap {
    const char **key;
    uint32_t *val;
    size_t cap; /* power of two */
};

/* FNV-1a over the NUL-terminated s. */
static uint64_t str_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

/* An empty map sized for n keys (load <= 1/4); exits on ENOMEM. */
static void strmap_init(struct strmap *m, size_t n)
{
    m->cap = 16;
    while (m->cap < 4 * n)
        m->cap *= 2;
    m->key = xcalloc(m->cap, sizeof *m->key);
    m->val = xcalloc(m->cap, sizeof *m->val);
}

/* Insert key -> v unless key is present; returns the value stored. */
static uint32_t strmap_put(struct strmap *m, const char *key, uint32_t v)
{
    size_t i = str_hash(key) & (m->cap - 1);
    while (m->key[i]) {
        if (strcmp(m->key[i], key) == 0)
            return m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    m->key[i] = key;
    m->val[i] = v;
    return v;
}

/* The value of key, or UINT32_MAX. */
static uint32_t strmap_get(const struct strmap *m, const char *key)
{
    size_t i = str_hash(key) & (m->cap - 1);
    while (m->key[i]) {
        if (strcmp(m->key[i], key) == 0)
            return m->val[i];
        i = (i + 1) & (m->cap - 1);
    }
    return UINT32_MAX;
}

/* Free the map's arrays (not the keys, owned elsewhere). */
static void strmap_free(struct strmap *m)
{
    free(m->key);
    free(m->val);
}

/* Find the task lists of the instance (see the banner for the versions);
 * exits 1 when there is none.  The arrays are borrowed from root. */
static void wf_layout(const char *path, json_t *root, struct wf_layout *ly)
{
    json_t *wf = json_object_get(root, "workflow");
    if (!json_is_object(wf))
        die(1, "%s: workflow: missing or not an object (not a WfCommons instance)", path);
    json_t *spec = json_object_get(wf, "specification");
    if (spec) {
        ly->spec_field = "workflow.specification.tasks";
        ly->spec = json_object_get(spec, "tasks");
        json_t *exec = json_object_get(wf, "execution");
        ly->exec_field = "workflow.execution.tasks";
        ly->exec = exec ? json_object_get(exec, "tasks") : NULL;
        if (exec && !json_is_array(ly->exec))
            die(1, "%s: %s: missing or not an array", path, ly->exec_field);
    } else {
        ly->spec_field = json_object_get(wf, "tasks") ? "workflow.tasks" : "workflow.jobs";
        ly->spec = json_object_get(wf, ly->spec_field + 9);
        ly->exec_field = ly->spec_field;
        ly->exec = ly->spec;
    }
    if (!json_is_array(ly->spec) || json_array_size(ly->spec) == 0)
        die(1, "%s: %s: missing, empty or not an array", path, ly->spec_field);
}

/* A number field of obj (first of names[] present): returns 1 and *v, 0
 * when none is present; exits when one is not a non-negative number. */
static int wf_number(const char *path, const char *where, size_t i, json_t *obj,
                     const char *const *names, double *v)
{
    for (; *names; names++) {
        json_t *x = json_object_get(obj, *names);
        if (!x || json_is_null(x))
            continue;
        if (!json_is_number(x) || json_number_value(x) < 0 || !isfinite(json_number_value(x)))
            die(1, "%s: %s[%zu].%s: not a non-negative number", path, where, i, *names);
        *v = json_number_value(x);
        return 1;
    }
    return 0;
}

/* A copy of s with white space (not allowed in DAG task names and #@ words)
 * replaced by '_'. */
static char *dag_word(const char *s, size_t n)
{
    char *w = xstrndup(s, n);
    for (char *p = w; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\v' || *p == '\f')
            *p = '_';
    return w;
}

/* Read name, id and DAG name of every task and index them in *refs by id
 * and name (keys owned by the JSON tree).  Returns a calloc'ed array of
 * *ntasks tasks; the caller frees it and each dag_name and tr.  Exits 1
 * naming the field on a missing, empty or duplicate name or id. */
static struct wf_task *wf_read_tasks(const char *path, const struct wf_layout *ly, size_t *ntasks,
                                     struct strmap *refs)
{
    size_t n = json_array_size(ly->spec);
    if (n > DAG_MAX_TASKS)
        die(1, "%s: %s: %zu tasks, more than pmc-hybrid takes", path, ly->spec_field, n);
    struct wf_task *t = xcalloc(n, sizeof *t);
    strmap_init(refs, 2 * n);
    struct strmap names;
    strmap_init(&names, n);
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(ly->spec, i);
        if (!json_is_object(o))
            die(1, "%s: %s[%zu]: not an object", path, ly->spec_field, i);
        t[i].spec = o;
        t[i].name = json_string_value(json_object_get(o, "name"));
        t[i].id = json_string_value(json_object_get(o, "id"));
        if (!t[i].name && !t[i].id)
            die(1, "%s: %s[%zu]: neither name nor id", path, ly->spec_field, i);
        if (!t[i].name)
            t[i].name = t[i].id;
        if ((t[i].name && !*t[i].name) || (t[i].id && !*t[i].id))
            die(1, "%s: %s[%zu]: empty name or id", path, ly->spec_field, i);
        /* name "mProject_ID0000001" with id "ID0000001" stays; 1.5's name
         * "split" with id "ID0000001" becomes "split_ID0000001" */
        if (!t[i].id || strstr(t[i].name, t[i].id)) {
            t[i].dag_name = dag_word(t[i].name, strlen(t[i].name));
        } else {
            size_t len = strlen(t[i].name) + strlen(t[i].id) + 2;
            char *s = xcalloc(len, 1);
            snprintf(s, len, "%s_%s", t[i].name, t[i].id);
            t[i].dag_name = dag_word(s, len - 1);
            free(s);
        }
        uint32_t other = strmap_put(&names, t[i].dag_name, (uint32_t)i);
        if (other != i)
            die(1, "%s: %s[%zu]: task name %s already used by %s[%" PRIu32 "]", path,
                ly->spec_field, i, t[i].dag_name, ly->spec_field, other);
        const char *cat = json_string_value(json_object_get(o, "category"));
        const char *tr = cat && *cat ? cat : t[i].name;
        t[i].tr = dag_word(tr, cat && *cat ? strlen(tr) : transformation_len(tr));
        t[i].runtime = -1;
    }
    /* ids first, so a reference that is one task's id and another's name
     * means the id */
    for (size_t i = 0; i < n; i++)
        if (t[i].id && strmap_put(refs, t[i].id, (uint32_t)i) != i)
            die(1, "%s: %s[%zu].id: %s is not unique", path, ly->spec_field, i, t[i].id);
    for (size_t i = 0; i < n; i++)
        strmap_put(refs, t[i].name, (uint32_t)i);
    strmap_free(&names);
    *ntasks = n;
    return t;
}

/* Attach each task's measurements (runtime in s, cores, memory in bytes,
 * priority) from the execution list (or the task itself before 1.5);
 * exits 1 naming the field of a bad value or an unknown id. */
static void wf_read_measurements(const char *path, const struct wf_layout *ly, struct wf_task *t,
                                 size_t n, const struct strmap *refs)
{
    static const char *const runtime[] = {"runtimeInSeconds", "runtime", NULL};
    static const char *const cores[] = {"coreCount", "cores", NULL};
    static const char *const mem[] = {"memoryInBytes", NULL};
    static const char *const mem_kb[] = {"memory", NULL};
    size_t nexec = ly->exec ? json_array_size(ly->exec) : 0;
    for (size_t i = 0; i < nexec; i++) {
        json_t *o = json_array_get(ly->exec, i);
        uint32_t k = (uint32_t)i;
        if (!json_is_object(o))
            die(1, "%s: %s[%zu]: not an object", path, ly->exec_field, i);
        if (ly->exec != ly->spec) {
            const char *id = json_string_value(json_object_get(o, "id"));
            if (!id)
                die(1, "%s: %s[%zu].id: missing or not a string", path, ly->exec_field, i);
            k = strmap_get(refs, id);
            if (k == UINT32_MAX)
                die(1, "%s: %s[%zu].id: %s is not a task of %s", path, ly->exec_field, i, id,
                    ly->spec_field);
        }
        t[k].exec = o;
        t[k].exec_index = i;
        wf_number(path, ly->exec_field, i, o, runtime, &t[k].runtime);
        wf_number(path, ly->exec_field, i, o, cores, &t[k].cores);
        if (!wf_number(path, ly->exec_field, i, o, mem, &t[k].mem_bytes) &&
            wf_number(path, ly->exec_field, i, o, mem_kb, &t[k].mem_bytes))
            t[k].mem_bytes *= 1000;        /* schema 1.3: KB */
        if (ceil(t[k].cores) > UINT32_MAX) /* what -c takes (io/dagfile.c) */
            die(1, "%s: %s[%zu]: %g cores: more than -c takes (%u)", path, ly->exec_field, i,
                t[k].cores, UINT32_MAX);
        if (ceil(t[k].mem_bytes / 1048576.0) > UINT32_MAX)
            die(1, "%s: %s[%zu]: %g bytes of memory: more than -m takes (%u MiB)", path,
                ly->exec_field, i, t[k].mem_bytes, UINT32_MAX);
        json_t *p = json_object_get(o, "priority");
        if (p && !json_is_null(p)) {
            if (!json_is_integer(p) || json_integer_value(p) < INT32_MIN ||
                json_integer_value(p) > INT32_MAX)
                die(1, "%s: %s[%zu].priority: not a 32-bit integer", path, ly->exec_field, i);
            t[k].has_prio = true;
            t[k].prio = json_integer_value(p);
        }
    }
}

/* Append the edges of list field (parents or children) of task i to
 * *edges (pairs parent << 32 | child; *ne used of *cap, grown as needed).
 * Exits 1 naming the field of an unknown or self reference. */
static void wf_edges_of(const char *path, const struct wf_layout *ly, const struct wf_task *t,
                        size_t i, const struct strmap *refs, bool parents, uint64_t **edges,
                        size_t *ne, size_t *cap)
{
    const char *field = parents ? "parents" : "children";
    json_t *list = json_object_get(t[i].spec, field);
    if (!list || json_is_null(list))
        return;
    if (!json_is_array(list))
        die(1, "%s: %s[%zu].%s: not an array", path, ly->spec_field, i, field);
    for (size_t j = 0; j < json_array_size(list); j++) {
        const char *ref = json_string_value(json_array_get(list, j));
        if (!ref)
            die(1, "%s: %s[%zu].%s[%zu]: not a string", path, ly->spec_field, i, field, j);
        uint32_t k = strmap_get(refs, ref);
        if (k == UINT32_MAX)
            die(1, "%s: %s[%zu].%s[%zu]: unknown task %s", path, ly->spec_field, i, field, j, ref);
        if (k == i)
            die(1, "%s: %s[%zu].%s[%zu]: task %s depends on itself", path, ly->spec_field, i, field,
                j, ref);
        if (*ne == *cap) {
            *cap = *cap ? *cap * 2 : 1024;
            *edges = xrealloc(*edges, *cap, sizeof **edges);
        }
        uint64_t a = parents ? k : i, b = parents ? i : k;
        (*edges)[(*ne)++] = a << 32 | b;
    }
}

/* Write the DAG file to f: header, "#@ N TR ID" + TASK per task, then the
 * ne EDGEs (sorted, unique).  Seconds = runtime x scale, 3 decimals;
 * memory in MiB rounded up. */
static void wf_write(FILE *f, const char *path, const char *version, const struct wf_task *t,
                     size_t n, const uint64_t *edges, size_t ne, double scale, const char *sleep,
                     size_t no_runtime)
{
    const char *base = strrchr(path, '/');
    fprintf(f,
            "# converted by pmc-dag from-wfcommons from %s (schema %s): %zu tasks, %zu edges, "
            "runtime scale %g\n",
            base ? base + 1 : path, version, n, ne, scale);
    if (no_runtime)
        fprintf(f, "# %zu tasks had no runtime and sleep 0 s\n", no_runtime);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "#@ %zu %s %s\n", i + 1, t[i].tr, t[i].id ? t[i].id : t[i].dag_name);
        fprintf(f, "TASK %s", t[i].dag_name);
        double cores = ceil(t[i].cores);
        if (cores > 1) /* both at most UINT32_MAX (wf_read_measurements()) */
            fprintf(f, " -c %.0f", cores);
        double mb = ceil(t[i].mem_bytes / 1048576.0);
        if (mb > 0)
            fprintf(f, " -m %.0f", mb);
        if (t[i].has_prio)
            fprintf(f, " -p %" JSON_INTEGER_FORMAT, t[i].prio);
        double secs = t[i].runtime > 0 ? t[i].runtime * scale : 0;
        fprintf(f, " %s %.3f\n", sleep, secs);
    }
    fputc('\n', f);
    for (size_t e = 0; e < ne; e++)
        fprintf(f, "EDGE %s %s\n", t[edges[e] >> 32].dag_name, t[(uint32_t)edges[e]].dag_name);
}

static const char wfc_help[] =
    "usage: pmc-dag from-wfcommons WFJSON -o DAGFILE [--scale S] [--sleep PATH]\n"
    "Convert a WfCommons workflow instance (JSON, the format of the published\n"
    "Pegasus traces; schema 1.0-1.6) to a PMC DAG whose tasks sleep the recorded\n"
    "runtime times S, with -c from the cores, -m from the memory (MiB, rounded\n"
    "up), -p from the priority, a \"#@ N TRANSFORMATION ID\" line before each\n"
    "TASK and one EDGE per dependency (from parents and children).  The result\n"
    "is read back with pmc-hybrid's parser before it is written (a cycle is an\n"
    "error).\n"
    "\n"
    "  -o, --output DAGFILE   the DAG file to write (\"-\": stdout)\n"
    "      --scale S          runtime multiplier (default 0.001)\n"
    "      --sleep PATH       the sleep program (default /bin/sleep)\n"
    "  -h, --help             show this help\n";

/* pmc-dag from-wfcommons: argv[0] is "from-wfcommons".  Returns the exit
 * status; exits 1 with the file and line or field on any error, leaving no
 * output. */
static int cmd_from_wfcommons(int argc, char **argv)
{
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"scale", required_argument, NULL, 's'},
                                         {"sleep", required_argument, NULL, 'S'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *out = NULL, *sleep = "/bin/sleep";
    double scale = 0.001;
    int c;
    while ((c = getopt_long(argc, argv, "o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 's': {
            char *end;
            errno = 0;
            scale = strtod(optarg, &end);
            if (*optarg == '\0' || *end || errno || !(scale >= 0) || !isfinite(scale))
                die(2, "--scale: '%s' is not a number >= 0", optarg);
            break;
        }
        case 'S':
            if (!*optarg || strpbrk(optarg, " \t\"'\\"))
                die(2, "--sleep: '%s' must be a path without spaces or quotes", optarg);
            sleep = optarg;
            break;
        case 'h':
            fputs(wfc_help, stdout);
            return 0;
        default:
            fputs(wfc_help, stderr);
            return 2;
        }
    }
    if (optind != argc - 1)
        die(2, "from-wfcommons: expected one WFJSON (pmc-dag from-wfcommons --help)");
    if (!out)
        die(2, "from-wfcommons: -o DAGFILE is required");
    const char *path = argv[optind];
    refuse_output_is_input(path, "the WfCommons instance", out);
    json_error_t jerr;
    json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        if (jerr.line > 0)
            die(1, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        die(1, "%s: %s", path, jerr.text);
    }
    if (!json_is_object(root))
        die(1, "%s: not a JSON object", path);
    const char *version = json_string_value(json_object_get(root, "schemaVersion"));
    struct wf_layout ly;
    wf_layout(path, root, &ly);
    struct strmap refs;
    size_t n;
    struct wf_task *t = wf_read_tasks(path, &ly, &n, &refs);
    wf_read_measurements(path, &ly, t, n, &refs);
    uint64_t *edges = NULL;
    size_t ne = 0, cap = 0, no_runtime = 0;
    for (size_t i = 0; i < n; i++) {
        wf_edges_of(path, &ly, t, i, &refs, true, &edges, &ne, &cap);
        wf_edges_of(path, &ly, t, i, &refs, false, &edges, &ne, &cap);
        no_runtime += t[i].runtime < 0;
    }
    /* each dependency is usually listed twice (parent's children and
     * child's parents): sort by (parent, child) and keep one of each */
    qsort(edges, ne, sizeof *edges, cmp_u64);
    size_t k = 0;
    for (size_t e = 0; e < ne; e++)
        if (k == 0 || edges[k - 1] != edges[e])
            edges[k++] = edges[e];
    ne = k;
    /* write into memory, read it back with the engine's parser (a cycle in
     * the instance fails here), and only then into the output */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem)
        die(1, "out of memory");
    wf_write(mem, path, version ? version : "unknown", t, n, edges, ne, scale, sleep, no_runtime);
    if (fclose(mem) != 0)
        die(1, "out of memory");
    struct pmc_error err;
    struct dag *dag = dagfile_parse(text, len, out, &err);
    if (!dag) {
        const char *msg = strstr(err.text, ": ");
        die(1, "%s: the converted DAG is not valid%s", path, msg ? msg : "");
    }
    dag_destroy(dag);
    struct output o;
    output_open(&o, out);
    fwrite(text, 1, len, o.f);
    output_close(&o);
    free(text);
    if (no_runtime)
        fprintf(stderr, "pmc-dag: %s: %zu of %zu tasks have no runtime; they sleep 0 s\n", path,
                no_runtime, n);
    for (size_t i = 0; i < n; i++) {
        free(t[i].dag_name);
        free(t[i].tr);
    }
    free(t);
    free(edges);
    strmap_free(&refs);
    json_decref(root);
    return 0;
}

/* ------------------------------------------------------------------- main */

static const char main_help[] =
    "usage: pmc-dag COMMAND [options] FILE\n"
    "Inspect and convert pegasus-mpi-cluster DAG files (read with pmc-hybrid's\n"
    "own parser).\n"
    "\n"
    "  check DAGFILE           every parser error (FILE:LINE), cycles, and tasks\n"
    "                          too big for --host-cpus/--host-memory; runs nothing\n"
    "  stats DAGFILE           tasks, edges, levels, width, resources, critical\n"
    "                          path (tasks and sleep seconds); --json\n"
    "  dot DAGFILE             Graphviz DOT, aggregated by level above 2000 tasks\n"
    "  from-wfcommons WFJSON   WfCommons instance (Pegasus traces) -> DAG file\n"
    "\n"
    "`pmc-dag COMMAND --help` describes each; pmc-dag(1) has the details.\n"
    "Exit status: 0 success, 1 failure or problems found, 2 bad command line.\n";

/* Dispatch to the command named by argv[1]. */
int main(int argc, char **argv)
{
    /* 0, 1 and 2 valid first: with stdout closed, the file opened for -o
     * would become descriptor 1 */
    if (fdio_standard_fds() < 0) {
        fprintf(stderr, "pmc-dag: /dev/null: %s\n", strerror(errno));
        return 1;
    }
    if (argc < 2) {
        fputs(main_help, stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        fputs(main_help, stdout);
        return 0;
    }
    if (strcmp(cmd, "-V") == 0 || strcmp(cmd, "--version") == 0) {
        printf("pmc-dag %s\n", PMC_VERSION);
        return 0;
    }
    static const struct {
        const char *name;
        int (*run)(int, char **);
    } cmds[] = {{"check", cmd_check},
                {"stats", cmd_stats},
                {"dot", cmd_dot},
                {"from-wfcommons", cmd_from_wfcommons}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (strcmp(cmd, cmds[i].name) != 0)
            continue;
        /* getopt_long's own messages then start "pmc-dag stats: ..." */
        char name[64];
        snprintf(name, sizeof name, "pmc-dag %s", cmd);
        argv[1] = name;
        return cmds[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "pmc-dag: unknown command '%s'\n", cmd);
    fputs(main_help, stderr);
    return 2;
}
