/* pmc-gendag.c - synthetic PMC DAG files shaped like real Pegasus workflows.
 *
 *   pmc-gendag --shape SHAPE --tasks N [--width W] [--edges-per-task K]
 *              [--seed S] [--runtime-scale F] [--runtime SECONDS]
 *              [--command sleep|true|false|echo|none]
 *              [--priorities down|up|none] [--plain] [--arrays] [-o FILE]
 *
 * Shapes (the structured ones follow the task graphs of the Pegasus workflow
 * gallery and of the WorkflowHub traces the shared workloads come from):
 *   montage      per band (--width bands, default 1): mProject fan-out over a
 *                grid of images -> mDiffFit on overlapping pairs (right, down
 *                and both diagonals) -> mConcatFit fan-in -> mBgModel ->
 *                mBackground fan-out (parents: its mProject and mBgModel) ->
 *                mImgtbl fan-in -> mAdd (all mBackground + mImgtbl) ->
 *                mViewer; with several bands a last mViewer joins the mAdds.
 *   epigenomics  per lane (--width lanes, default 4): fastqSplit -> S pipelines
 *                filterContams -> sol2sanger -> fast2bfq -> map -> mapMerge;
 *                then mapMerge of the lanes -> maqIndex -> pileup.
 *   seismology   N-1 sG1IterDecon -> one wrapper_siftSTFByMisfit.
 *   layered      ceil(N/W) layers of W tasks (default W = sqrt N); every task
 *                past the first layer has min(K, W) distinct random parents in
 *                the previous layer (K = --edges-per-task, default 1).
 *   independent  N tasks, no edges.
 *   chain        W interleaved chains (default 1): task i follows task i-W.
 *   diamond      one task -> N-2 tasks -> one task, named A, B, ..., Z, AA, ...
 *                (--tasks 4 --command echo --plain is the manual's diamond).
 *   sweep        (N-1)/2 sim[i] -> post[i] (one-to-one) -> one gather.
 *   mapreduce    K (--width, default 4) map[j] per reduce[j/K], then one
 *                merge after every reduce; (N-1)/(K+1) reduces.
 * --arrays writes sweep and mapreduce as task arrays (TASK sim[0-99] ...,
 * EDGE sim[i] post[i], EDGE map[i] reduce[i/K], EDGE post[*] gather), else
 * as plain tasks named like the instances, so both forms name the same
 * tasks; their stages use fixed runtimes so both run the same commands.
 * The structured shapes are sized to at most N tasks, as close as the shape
 * allows; the header comment gives the exact task and edge counts.
 *
 * Output (PMC manual "DAG Files", COMPAT.md): a header comment, every TASK
 * (each preceded by "#@ ID transformation IDnnnnnnn" as Pegasus writes it),
 * a blank line, every EDGE; tasks always come before the edges naming them.
 * Runtimes are drawn per stage from a lognormal distribution whose median and
 * spread resemble the real traces (seconds), multiplied by --runtime-scale
 * (default 0.001, as in the shared workloads) and written with millisecond
 * precision: "/bin/sleep 0.023".  Priorities (-p) are 20 + 10 * (levels below
 * the task) with "down" (deeper tasks lower, the default), 20 + 10 * depth with
 * "up" (what the shared workloads use), or absent.  --plain drops the "#@"
 * lines and the task options.
 *
 * Determinism: the same options give the same bytes.  Runtimes and edges come
 * from two separate xoshiro256** streams seeded by splitmix64 from --seed, so
 * changing --command or --runtime-scale does not change the graph.
 *
 * Speed and memory: nothing is stored per task or per edge; names are
 * computed from ids, edges from formulas or the edge stream, and the text is
 * formatted by hand into one 1 MiB buffer (10,000,000 tasks in a few seconds).
 * Only libc is used (no libm: exp() is computed here).
 *
 * Errors: one line "pmc-gendag: --option: what is wrong" on stderr, exit 1;
 * a partly written -o FILE is removed.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fdio.h"

#define GD_MAX_TASKS 2147483647ull /* engine limit (DAG_MAX_TASKS) */
#define GD_MAX_K 256               /* --edges-per-task upper bound */
#define GD_OUTBUF (1u << 20)       /* output buffer size */
#define GD_LINE_MAX 1024           /* longest record we ever format */

/* ---------------------------------------------------------------- options */

enum gd_shape {
    SHAPE_MONTAGE,
    SHAPE_EPIGENOMICS,
    SHAPE_SEISMOLOGY,
    SHAPE_LAYERED,
    SHAPE_INDEPENDENT,
    SHAPE_CHAIN,
    SHAPE_DIAMOND,
    SHAPE_SWEEP,
    SHAPE_MAPREDUCE,
};
static const char *const shape_names[] = {"montage",     "epigenomics", "seismology", "layered",
                                          "independent", "chain",       "diamond",    "sweep",
                                          "mapreduce",   NULL};

enum gd_command { CMD_SLEEP, CMD_TRUE, CMD_FALSE, CMD_ECHO, CMD_NONE };
static const char *const command_names[] = {"sleep", "true", "false", "echo", "none", NULL};

enum gd_prio { PRIO_DOWN, PRIO_UP, PRIO_NONE };
static const char *const prio_names[] = {"down", "up", "none", NULL};

struct gd_options {
    int shape; /* enum gd_shape, -1 until given */
    uint64_t tasks;
    uint64_t width; /* 0 = the shape's default */
    uint64_t k;     /* 0 = not given */
    uint64_t seed;
    double scale;
    double fixed; /* --runtime, < 0 when not given */
    int command;  /* enum gd_command */
    int prio;     /* enum gd_prio, -1 = default */
    int scale_given;
    int plain;
    int arrays; /* sweep, mapreduce: write task arrays */
    const char *output;
};

/* ------------------------------------------------------------ diagnostics */

static const char *gd_unlink_on_error; /* -o FILE while it is being written */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
    va_list ap;
    fputs("pmc-gendag: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (gd_unlink_on_error)
        unlink(gd_unlink_on_error);
    exit(1);
}

/* ------------------------------------------------------------------ random */

struct gd_rng {
    uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static void rng_seed(struct gd_rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
 * generators", 2018). */
static inline uint64_t rng_next(struct gd_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

static inline double rng_unit(struct gd_rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* Uniform in [0, n), n >= 1; the modulo bias is below 2^-40 for our n. */
static inline uint64_t rng_below(struct gd_rng *r, uint64_t n)
{
    return rng_next(r) % n;
}

/* Standard normal, approximated by the Irwin-Hall sum of 12 uniforms. */
static double rng_normal(struct gd_rng *r)
{
    double sum = 0;
    for (int i = 0; i < 12; i++)
        sum += rng_unit(r);
    return sum - 6.0;
}

/* exp(x) for |x| < 700 without libm: x = k ln2 + r, |r| <= ln2 / 2,
 * Taylor series for e^r (error < 1e-15), then scale by 2^k. */
static double gd_exp(double x)
{
    const double ln2 = 0.69314718055994530942;
    if (x > 700)
        x = 700;
    if (x < -700)
        return 0;
    long k = (long)(x / ln2 + (x >= 0 ? 0.5 : -0.5));
    double rem = x - (double)k * ln2, term = 1, sum = 1;
    for (int i = 1; i < 16; i++) {
        term *= rem / i;
        sum += term;
    }
    for (; k > 0; k--)
        sum *= 2;
    for (; k < 0; k++)
        sum *= 0.5;
    return sum;
}

/* ------------------------------------------------------------------ stages */

/* One kind of task.  Runtimes are lognormal (median * e^(sigma Z)) clamped to
 * [min, max] seconds; the medians and ranges come from the Chameleon traces of
 * the WorkflowHub Montage, Epigenomics and Seismology workflows. */
struct gd_stage {
    const char *tr; /* transformation name, also the task name prefix */
    double median, sigma, min, max;
    unsigned cpus;
};

static const struct gd_stage st_mproject = {"mProject", 26.0, 0.25, 10.0, 60.0, 1};
static const struct gd_stage st_mdifffit = {"mDiffFit", 0.3, 1.2, 0.0, 30.0, 1};
static const struct gd_stage st_mconcatfit = {"mConcatFit", 3.0, 0.2, 1.0, 10.0, 1};
static const struct gd_stage st_mbgmodel = {"mBgModel", 20.0, 0.1, 10.0, 40.0, 1};
static const struct gd_stage st_mbackground = {"mBackground", 6.0, 0.5, 0.0, 20.0, 1};
static const struct gd_stage st_mimgtbl = {"mImgtbl", 0.3, 0.5, 0.0, 2.0, 1};
static const struct gd_stage st_madd = {"mAdd", 1.0, 0.3, 0.5, 5.0, 1};
static const struct gd_stage st_mviewer = {"mViewer", 2.5, 0.3, 1.0, 6.0, 1};

static const struct gd_stage st_fastqsplit = {"fastqSplit", 32.5, 0.05, 25.0, 40.0, 1};
static const struct gd_stage st_filtercontams = {"filterContams", 17.0, 0.4, 0.5, 35.0, 1};
static const struct gd_stage st_sol2sanger = {"sol2sanger", 13.0, 0.4, 0.5, 30.0, 1};
static const struct gd_stage st_fast2bfq = {"fast2bfq", 2.8, 0.4, 1.0, 10.0, 1};
static const struct gd_stage st_map = {"map", 40.0, 0.2, 25.0, 60.0, 2};
static const struct gd_stage st_mapmerge = {"mapMerge", 6.5, 0.5, 3.0, 20.0, 1};
static const struct gd_stage st_maqindex = {"maqIndex", 25.0, 0.05, 20.0, 30.0, 1};
static const struct gd_stage st_pileup = {"pileup", 27.0, 0.05, 20.0, 35.0, 2};

static const struct gd_stage st_decon = {"sG1IterDecon", 0.3, 1.0, 0.0, 5.0, 1};
static const struct gd_stage st_sift = {"wrapper_siftSTFByMisfit", 0.2, 0.3, 0.0, 1.0, 1};

static const struct gd_stage st_task = {"task", 10.0, 0.6, 1.0, 60.0, 1};
static const struct gd_stage st_step = {"step", 10.0, 0.6, 1.0, 60.0, 1};
static const struct gd_stage st_diamond = {"diamond", 10.0, 0.3, 1.0, 30.0, 1};
static const struct gd_stage st_sim = {"sim", 10.0, 0.0, 10.0, 10.0, 1};
static const struct gd_stage st_post = {"post", 1.0, 0.0, 1.0, 1.0, 1};
static const struct gd_stage st_gather = {"gather", 5.0, 0.0, 5.0, 5.0, 1};
static const struct gd_stage st_mapper = {"map", 10.0, 0.0, 10.0, 10.0, 1};
static const struct gd_stage st_reduce = {"reduce", 5.0, 0.0, 5.0, 5.0, 1};
static const struct gd_stage st_merge = {"merge", 2.0, 0.0, 2.0, 2.0, 1};

/* ------------------------------------------------------------------ output */

struct gd_out {
    FILE *f;
    const char *path; /* for messages */
    char *buf;
    size_t len;
};

static void out_flush(struct gd_out *o)
{
    if (o->len && fwrite(o->buf, 1, o->len, o->f) != o->len)
        die("%s: %s", o->path, strerror(errno));
    o->len = 0;
}

/* Make room for one record of at most GD_LINE_MAX bytes. */
static inline void out_reserve(struct gd_out *o)
{
    if (o->len > GD_OUTBUF - GD_LINE_MAX)
        out_flush(o);
}

static inline void out_mem(struct gd_out *o, const char *s, size_t n)
{
    memcpy(o->buf + o->len, s, n);
    o->len += n;
}

static inline void out_str(struct gd_out *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

static inline void out_ch(struct gd_out *o, char c)
{
    o->buf[o->len++] = c;
}

/* Decimal, at least `width` digits (zero padded). */
static inline void out_uint(struct gd_out *o, uint64_t v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width)
        tmp[n++] = '0';
    while (n)
        out_ch(o, tmp[--n]);
}

static inline void out_int(struct gd_out *o, int64_t v)
{
    if (v < 0) {
        out_ch(o, '-');
        out_uint(o, (uint64_t)0 - (uint64_t)v, 1);
    } else {
        out_uint(o, (uint64_t)v, 1);
    }
}

/* Milliseconds as seconds with three decimals: 23 -> "0.023". */
static inline void out_msec(struct gd_out *o, uint64_t ms)
{
    out_uint(o, ms / 1000, 1);
    out_ch(o, '.');
    out_uint(o, ms % 1000, 3);
}

/* -------------------------------------------------------------- generator */

struct gd {
    const struct gd_options *opt;
    struct gd_out out;
    struct gd_rng task_rng, edge_rng;
    uint64_t depth_max;      /* deepest level, for priorities */
    int letters;             /* names are A..Z, AA.. instead of TR_IDnnnnnnn */
    uint64_t ntasks, nedges; /* emitted so far */
};

/* Spreadsheet-column name of the 1-based id: 1 -> A, 26 -> Z, 27 -> AA. */
static void out_letters(struct gd_out *o, uint64_t id)
{
    char tmp[16];
    int n = 0;
    while (id) {
        id--;
        tmp[n++] = (char)('A' + id % 26);
        id /= 26;
    }
    while (n)
        out_ch(o, tmp[--n]);
}

static void out_name(struct gd *g, const struct gd_stage *st, uint64_t id)
{
    if (g->letters) {
        out_letters(&g->out, id);
        return;
    }
    out_str(&g->out, st->tr);
    out_str(&g->out, "_ID");
    out_uint(&g->out, id, 7);
}

static uint64_t draw_msec(struct gd *g, const struct gd_stage *st)
{
    const struct gd_options *opt = g->opt;
    double sec;
    if (opt->fixed >= 0) {
        sec = opt->fixed;
    } else {
        sec = st->median * gd_exp(st->sigma * rng_normal(&g->task_rng));
        if (sec < st->min)
            sec = st->min;
        if (sec > st->max)
            sec = st->max;
        sec *= opt->scale;
    }
    return (uint64_t)(sec * 1000.0 + 0.5);
}

static void out_command(struct gd *g, const struct gd_stage *st, uint64_t id)
{
    struct gd_out *o = &g->out;
    switch (g->opt->command) {
    case CMD_SLEEP:
        out_str(o, "/bin/sleep ");
        out_msec(o, draw_msec(g, st));
        break;
    case CMD_TRUE:
        out_str(o, "/bin/true");
        break;
    case CMD_FALSE:
        out_str(o, "/bin/false");
        break;
    case CMD_ECHO:
        out_str(o, "/bin/echo \"I am ");
        out_name(g, st, id);
        out_ch(o, '"');
        break;
    default:
        out_str(o, "/dev/null"); /* a placeholder, not runnable */
        break;
    }
}

/* One task record: the Pegasus "#@" line, then TASK with its options. */
static void emit_task(struct gd *g, const struct gd_stage *st, uint64_t id, uint64_t depth)
{
    struct gd_out *o = &g->out;
    out_reserve(o);
    if (!g->opt->plain) {
        out_str(o, "#@ ");
        out_uint(o, id, 1);
        out_ch(o, ' ');
        out_str(o, st->tr);
        out_str(o, " ID");
        out_uint(o, id, 7);
        out_ch(o, '\n');
    }
    out_str(o, "TASK ");
    out_name(g, st, id);
    if (!g->opt->plain) {
        out_str(o, " -c ");
        out_uint(o, st->cpus, 1);
    }
    if (g->opt->prio != PRIO_NONE) {
        uint64_t level = g->opt->prio == PRIO_UP ? depth : g->depth_max - depth;
        out_str(o, " -p ");
        int64_t prio = 20 + 10 * (int64_t)level; /* a chain of 300M: past -p's int32 */
        out_int(o, prio < INT32_MAX ? prio : INT32_MAX);
    }
    out_ch(o, ' ');
    out_command(g, st, id);
    out_ch(o, '\n');
    g->ntasks++;
}

/* A run of count tasks of one stage with ids first, first+1, ... */
static void emit_tasks(struct gd *g, const struct gd_stage *st, uint64_t first, uint64_t count,
                       uint64_t depth)
{
    for (uint64_t i = 0; i < count; i++)
        emit_task(g, st, first + i, depth);
}

static void emit_edge(struct gd *g, const struct gd_stage *pst, uint64_t parent,
                      const struct gd_stage *cst, uint64_t child)
{
    struct gd_out *o = &g->out;
    out_reserve(o);
    out_str(o, "EDGE ");
    out_name(g, pst, parent);
    out_ch(o, ' ');
    out_name(g, cst, child);
    out_ch(o, '\n');
    g->nedges++;
}

/* Every task of one run is a parent of child. */
static void emit_fan_in(struct gd *g, const struct gd_stage *pst, uint64_t first, uint64_t count,
                        const struct gd_stage *cst, uint64_t child)
{
    for (uint64_t i = 0; i < count; i++)
        emit_edge(g, pst, first + i, cst, child);
}

/* ------------------------------------------------------------------ shapes
 *
 * Each shape has a plan (sizes from the options, exact task and edge counts,
 * deepest level) and an emitter.  Ids are 1-based, in emission order. */

struct gd_plan {
    uint64_t tasks, edges, depth_max;
    uint64_t a, b; /* shape parameters (see each shape) */
};

/* Montage: a = bands, b = images (mProject tasks) per band, laid out on a
 * grid of ceil(sqrt(b)) columns.  Image i overlaps its right, lower-left,
 * lower and lower-right neighbours. */
static uint64_t grid_columns(uint64_t images)
{
    uint64_t c = 1;
    while (c * c < images)
        c++;
    return c;
}

static int overlap(uint64_t images, uint64_t cols, uint64_t i, int n, uint64_t *j)
{
    uint64_t col = i % cols;
    switch (n) {
    case 0:
        *j = i + 1;
        return col + 1 < cols && *j < images;
    case 1:
        *j = i + cols - 1;
        return col > 0 && *j < images;
    case 2:
        *j = i + cols;
        return *j < images;
    default:
        *j = i + cols + 1;
        return col + 1 < cols && *j < images;
    }
}

static uint64_t montage_pairs(uint64_t images)
{
    uint64_t cols = grid_columns(images), pairs = 0, j;
    for (uint64_t i = 0; i < images; i++)
        for (int n = 0; n < 4; n++)
            pairs += (uint64_t)overlap(images, cols, i, n, &j);
    return pairs;
}

static uint64_t montage_band_tasks(uint64_t images)
{
    return 2 * images + montage_pairs(images) + 5;
}

static uint64_t montage_total(uint64_t bands, uint64_t images)
{
    return bands * montage_band_tasks(images) + (bands > 1);
}

static void plan_montage(const struct gd_options *opt, struct gd_plan *p)
{
    uint64_t bands = opt->width ? opt->width : 1;
    if (bands > GD_MAX_TASKS / 7 || montage_total(bands, 1) > opt->tasks)
        die("--tasks: montage with %llu band(s) needs at least %llu tasks",
            (unsigned long long)bands, (unsigned long long)(bands * 7 + (bands > 1)));
    uint64_t lo = 1, hi = opt->tasks / 6 + 2; /* total(lo) <= N < total(hi) */
    while (montage_total(bands, hi) <= opt->tasks)
        hi *= 2;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (montage_total(bands, mid) <= opt->tasks)
            lo = mid;
        else
            hi = mid;
    }
    uint64_t pairs = montage_pairs(lo);
    p->a = bands;
    p->b = lo;
    p->tasks = montage_total(bands, lo);
    /* 2 per pair, pairs into mConcatFit, mBgModel, 2 per mBackground, images
     * into mImgtbl, images + 1 into mAdd, mAdd into mViewer; plus the join */
    p->edges = bands * (3 * pairs + 4 * lo + 3) + (bands > 1 ? bands : 0);
    p->depth_max = bands > 1 ? 8 : 7;
}

static void emit_montage_band(struct gd *g, uint64_t base, uint64_t images, int pass)
{
    uint64_t pairs = montage_pairs(images), cols = grid_columns(images);
    uint64_t proj = base, diff = proj + images, concat = diff + pairs, bgmodel = concat + 1;
    uint64_t backg = bgmodel + 1, imgtbl = backg + images, add = imgtbl + 1, viewer = add + 1;
    if (pass == 0) {
        emit_tasks(g, &st_mproject, proj, images, 0);
        emit_tasks(g, &st_mdifffit, diff, pairs, 1);
        emit_task(g, &st_mconcatfit, concat, 2);
        emit_task(g, &st_mbgmodel, bgmodel, 3);
        emit_tasks(g, &st_mbackground, backg, images, 4);
        emit_task(g, &st_mimgtbl, imgtbl, 5);
        emit_task(g, &st_madd, add, 6);
        emit_task(g, &st_mviewer, viewer, 7);
        return;
    }
    uint64_t k = 0, j;
    for (uint64_t i = 0; i < images; i++)
        for (int n = 0; n < 4; n++)
            if (overlap(images, cols, i, n, &j)) {
                emit_edge(g, &st_mproject, proj + i, &st_mdifffit, diff + k);
                emit_edge(g, &st_mproject, proj + j, &st_mdifffit, diff + k);
                k++;
            }
    emit_fan_in(g, &st_mdifffit, diff, pairs, &st_mconcatfit, concat);
    emit_edge(g, &st_mconcatfit, concat, &st_mbgmodel, bgmodel);
    for (uint64_t i = 0; i < images; i++) {
        emit_edge(g, &st_mproject, proj + i, &st_mbackground, backg + i);
        emit_edge(g, &st_mbgmodel, bgmodel, &st_mbackground, backg + i);
    }
    emit_fan_in(g, &st_mbackground, backg, images, &st_mimgtbl, imgtbl);
    emit_fan_in(g, &st_mbackground, backg, images, &st_madd, add);
    emit_edge(g, &st_mimgtbl, imgtbl, &st_madd, add);
    emit_edge(g, &st_madd, add, &st_mviewer, viewer);
}

static void emit_montage(struct gd *g, const struct gd_plan *p, int pass)
{
    uint64_t band_tasks = montage_band_tasks(p->b), last = p->a * band_tasks + 1;
    for (uint64_t b = 0; b < p->a; b++)
        emit_montage_band(g, 1 + b * band_tasks, p->b, pass);
    if (p->a < 2)
        return;
    if (pass == 0) {
        emit_task(g, &st_mviewer, last, 8);
        return;
    }
    for (uint64_t b = 0; b < p->a; b++) /* each band's mAdd is its 2nd-to-last task */
        emit_edge(g, &st_madd, (b + 1) * band_tasks - 1, &st_mviewer, last);
}

/* Epigenomics: a = lanes, b = pipelines over all lanes (lane l gets
 * b / a pipelines, one more when l < b % a). */
static void plan_epigenomics(const struct gd_options *opt, struct gd_plan *p)
{
    uint64_t lanes = opt->width;
    if (!lanes) {
        lanes = opt->tasks >= 9 ? (opt->tasks - 3) / 6 : 1;
        if (lanes > 4)
            lanes = 4;
    }
    if (lanes > (GD_MAX_TASKS - 3) / 6 || 3 + 6 * lanes > opt->tasks)
        die("--tasks: epigenomics with %llu lane(s) needs at least %llu tasks",
            (unsigned long long)lanes, (unsigned long long)(3 + 6 * lanes));
    uint64_t pipes = (opt->tasks - 3 - 2 * lanes) / 4;
    p->a = lanes;
    p->b = pipes;
    p->tasks = 3 + 2 * lanes + 4 * pipes;
    p->edges = 5 * pipes + lanes + 2;
    p->depth_max = 8;
}

static void emit_epigenomics(struct gd *g, const struct gd_plan *p, int pass)
{
    uint64_t base = 1, lanes = p->a;
    uint64_t merge = p->tasks - 2, index = merge + 1, pileup = index + 1;
    for (uint64_t l = 0; l < lanes; l++) {
        uint64_t s = p->b / lanes + (l < p->b % lanes);
        uint64_t split = base, filt = split + 1, sol = filt + s, bfq = sol + s, map = bfq + s;
        uint64_t lmerge = map + s;
        if (pass == 0) {
            emit_task(g, &st_fastqsplit, split, 0);
            emit_tasks(g, &st_filtercontams, filt, s, 1);
            emit_tasks(g, &st_sol2sanger, sol, s, 2);
            emit_tasks(g, &st_fast2bfq, bfq, s, 3);
            emit_tasks(g, &st_map, map, s, 4);
            emit_task(g, &st_mapmerge, lmerge, 5);
        } else {
            for (uint64_t i = 0; i < s; i++) {
                emit_edge(g, &st_fastqsplit, split, &st_filtercontams, filt + i);
                emit_edge(g, &st_filtercontams, filt + i, &st_sol2sanger, sol + i);
                emit_edge(g, &st_sol2sanger, sol + i, &st_fast2bfq, bfq + i);
                emit_edge(g, &st_fast2bfq, bfq + i, &st_map, map + i);
                emit_edge(g, &st_map, map + i, &st_mapmerge, lmerge);
            }
            emit_edge(g, &st_mapmerge, lmerge, &st_mapmerge, merge);
        }
        base = lmerge + 1;
    }
    if (pass == 0) {
        emit_task(g, &st_mapmerge, merge, 6);
        emit_task(g, &st_maqindex, index, 7);
        emit_task(g, &st_pileup, pileup, 8);
    } else {
        emit_edge(g, &st_mapmerge, merge, &st_maqindex, index);
        emit_edge(g, &st_maqindex, index, &st_pileup, pileup);
    }
}

static void plan_seismology(const struct gd_options *opt, struct gd_plan *p)
{
    if (opt->tasks < 2)
        die("--tasks: seismology needs at least 2 tasks");
    p->tasks = opt->tasks;
    p->edges = opt->tasks - 1;
    p->depth_max = 1;
}

static void emit_seismology(struct gd *g, const struct gd_plan *p, int pass)
{
    if (pass == 0) {
        emit_tasks(g, &st_decon, 1, p->tasks - 1, 0);
        emit_task(g, &st_sift, p->tasks, 1);
    } else {
        emit_fan_in(g, &st_decon, 1, p->tasks - 1, &st_sift, p->tasks);
    }
}

/* Layered and chain: a = width, b = parents per task (chain: 1, same column). */
static uint64_t isqrt_round(uint64_t n)
{
    uint64_t r = grid_columns(n); /* smallest r with r * r >= n */
    return (r > 1 && (r - 1) * r >= n) ? r - 1 : r;
}

static void plan_layered(const struct gd_options *opt, struct gd_plan *p)
{
    uint64_t w = opt->width ? opt->width : isqrt_round(opt->tasks);
    uint64_t k = opt->k ? opt->k : 1;
    if (w > opt->tasks)
        w = opt->tasks;
    if (k > w)
        k = w;
    p->a = w;
    p->b = k;
    p->tasks = opt->tasks;
    p->edges = (opt->tasks - w) * k;
    p->depth_max = (opt->tasks + w - 1) / w - 1;
}

/* Floyd's sampling of k distinct values in [0, n) ("Programming Pearls",
 * column 12): for j = n-k .. n-1 take a random t <= j, or j if t was taken. */
static void emit_layered_parents(struct gd *g, const struct gd_stage *st, uint64_t child,
                                 uint64_t prev_first, uint64_t n, uint64_t k)
{
    uint64_t chosen[GD_MAX_K];
    for (uint64_t j = n - k, c = 0; j < n; j++, c++) {
        uint64_t t = rng_below(&g->edge_rng, j + 1);
        for (uint64_t i = 0; i < c; i++)
            if (chosen[i] == t) {
                t = j;
                break;
            }
        chosen[c] = t;
        emit_edge(g, st, prev_first + t, st, child);
    }
}

static void emit_layered(struct gd *g, const struct gd_plan *p, int pass)
{
    uint64_t w = p->a;
    const struct gd_stage *st = &st_task;
    for (uint64_t i = 0; i < p->tasks; i++) {
        uint64_t layer = i / w;
        if (pass == 0)
            emit_task(g, st, i + 1, layer);
        else if (layer > 0)
            emit_layered_parents(g, st, i + 1, (layer - 1) * w + 1, w, p->b);
    }
}

static void plan_chain(const struct gd_options *opt, struct gd_plan *p)
{
    uint64_t w = opt->width ? opt->width : 1;
    if (w > opt->tasks)
        w = opt->tasks;
    p->a = w;
    p->tasks = opt->tasks;
    p->edges = opt->tasks - w;
    p->depth_max = (opt->tasks + w - 1) / w - 1;
}

static void emit_chain(struct gd *g, const struct gd_plan *p, int pass)
{
    for (uint64_t i = 0; i < p->tasks; i++) {
        if (pass == 0)
            emit_task(g, &st_step, i + 1, i / p->a);
        else if (i >= p->a)
            emit_edge(g, &st_step, i + 1 - p->a, &st_step, i + 1);
    }
}

static void plan_independent(const struct gd_options *opt, struct gd_plan *p)
{
    p->tasks = opt->tasks;
    p->edges = 0;
    p->depth_max = 0;
}

static void emit_independent(struct gd *g, const struct gd_plan *p, int pass)
{
    if (pass == 0)
        emit_tasks(g, &st_task, 1, p->tasks, 0);
}

static void plan_diamond(const struct gd_options *opt, struct gd_plan *p)
{
    if (opt->tasks < 3)
        die("--tasks: diamond needs at least 3 tasks");
    p->tasks = opt->tasks;
    p->edges = 2 * (opt->tasks - 2);
    p->depth_max = 2;
}

static void emit_diamond(struct gd *g, const struct gd_plan *p, int pass)
{
    const struct gd_stage *st = &st_diamond;
    uint64_t last = p->tasks;
    if (pass == 0) {
        emit_task(g, st, 1, 0);
        emit_tasks(g, st, 2, last - 2, 1);
        emit_task(g, st, last, 2);
        return;
    }
    for (uint64_t i = 2; i < last; i++)
        emit_edge(g, st, 1, st, i);
    for (uint64_t i = 2; i < last; i++)
        emit_edge(g, st, i, st, last);
}

/* Sweep and mapreduce write the same workflow as plain tasks named like
 * instances ("sim[3]") or, with --arrays, as task arrays: every task of a
 * stage has the stage's median runtime (sigma 0), no "#@" line, and an
 * echo prints its own name, so both forms run the same commands. */
enum gd_ix { IX_NONE, IX_ONE, IX_RANGE, IX_TOKEN };

/* TR, TR[i], TR[0-(n-1)] or TR[%{INDEX}]. */
static void out_ix(struct gd_out *o, const struct gd_stage *st, enum gd_ix ix, uint64_t i)
{
    out_str(o, st->tr);
    if (ix == IX_NONE)
        return;
    out_ch(o, '[');
    if (ix == IX_TOKEN)
        out_str(o, "%{INDEX}");
    else if (ix == IX_RANGE) {
        out_str(o, "0-");
        out_uint(o, i - 1, 1);
    } else
        out_uint(o, i, 1);
    out_ch(o, ']');
}

/* "TASK NAME [-c C] [-p P] COMMAND": one task (ix IX_NONE or IX_ONE) or
 * the array of n instances (IX_RANGE, i = n). */
static void emit_ix_task(struct gd *g, const struct gd_stage *st, enum gd_ix ix, uint64_t i,
                         uint64_t depth)
{
    struct gd_out *o = &g->out;
    out_reserve(o);
    out_str(o, "TASK ");
    out_ix(o, st, ix, i);
    if (!g->opt->plain) {
        out_str(o, " -c ");
        out_uint(o, st->cpus, 1);
    }
    if (g->opt->prio != PRIO_NONE) {
        out_str(o, " -p ");
        out_uint(o, 20 + 10 * (g->opt->prio == PRIO_UP ? depth : g->depth_max - depth), 1);
    }
    if (g->opt->command == CMD_ECHO) {
        out_str(o, " /bin/echo \"I am ");
        out_ix(o, st, ix == IX_RANGE ? IX_TOKEN : ix, i);
        out_str(o, "\"\n");
    } else {
        out_ch(o, ' ');
        out_command(g, st, 0);
        out_ch(o, '\n');
    }
    g->ntasks += ix == IX_RANGE ? i : 1;
}

/* A stage of n tasks: one array, or n tasks. */
static void emit_stage(struct gd *g, const struct gd_stage *st, uint64_t n, uint64_t depth)
{
    if (g->opt->arrays) {
        emit_ix_task(g, st, IX_RANGE, n, depth);
        return;
    }
    for (uint64_t i = 0; i < n; i++)
        emit_ix_task(g, st, IX_ONE, i, depth);
}

/* "EDGE A B" with both sides given as text ("sim[i]", "post[*]"); count:
 * the task edges it stands for. */
static void emit_text_edge(struct gd *g, const char *a, const char *b, uint64_t count)
{
    out_reserve(&g->out);
    out_str(&g->out, "EDGE ");
    out_str(&g->out, a);
    out_ch(&g->out, ' ');
    out_str(&g->out, b);
    out_ch(&g->out, '\n');
    g->nedges += count;
}

static void emit_ix_edge(struct gd *g, const struct gd_stage *ps, enum gd_ix pix, uint64_t p,
                         const struct gd_stage *cs, enum gd_ix cix, uint64_t c)
{
    struct gd_out *o = &g->out;
    out_reserve(o);
    out_str(o, "EDGE ");
    out_ix(o, ps, pix, p);
    out_ch(o, ' ');
    out_ix(o, cs, cix, c);
    out_ch(o, '\n');
    g->nedges++;
}

/* Sweep: a = sim instances = post instances; sim[i] -> post[i] -> gather. */
static void plan_sweep(const struct gd_options *opt, struct gd_plan *p)
{
    if (opt->tasks < 3)
        die("--tasks: sweep needs at least 3 tasks");
    p->a = (opt->tasks - 1) / 2;
    p->tasks = 2 * p->a + 1;
    p->edges = 2 * p->a;
    p->depth_max = 2;
}

static void emit_sweep(struct gd *g, const struct gd_plan *p, int pass)
{
    if (pass == 0) {
        emit_stage(g, &st_sim, p->a, 0);
        emit_stage(g, &st_post, p->a, 1);
        emit_ix_task(g, &st_gather, IX_NONE, 0, 2);
    } else if (g->opt->arrays) {
        emit_text_edge(g, "sim[i]", "post[i]", p->a);
        emit_text_edge(g, "post[*]", "gather", p->a);
    } else {
        for (uint64_t i = 0; i < p->a; i++)
            emit_ix_edge(g, &st_sim, IX_ONE, i, &st_post, IX_ONE, i);
        for (uint64_t i = 0; i < p->a; i++)
            emit_ix_edge(g, &st_post, IX_ONE, i, &st_gather, IX_NONE, 0);
    }
}

/* Mapreduce: a = K (--width, maps per reduce), b = reduces; map[j] ->
 * reduce[j/K] -> merge. */
static void plan_mapreduce(const struct gd_options *opt, struct gd_plan *p)
{
    p->a = opt->width ? opt->width : 4;
    if (opt->tasks < p->a + 2)
        die("--tasks: mapreduce needs at least --width + 2 tasks");
    p->b = (opt->tasks - 1) / (p->a + 1);
    p->tasks = p->a * p->b + p->b + 1;
    p->edges = p->a * p->b + p->b;
    p->depth_max = 2;
}

static void emit_mapreduce(struct gd *g, const struct gd_plan *p, int pass)
{
    uint64_t maps = p->a * p->b;
    if (pass == 0) {
        emit_stage(g, &st_mapper, maps, 0);
        emit_stage(g, &st_reduce, p->b, 1);
        emit_ix_task(g, &st_merge, IX_NONE, 0, 2);
    } else if (g->opt->arrays) {
        char k[32];
        snprintf(k, sizeof k, "reduce[i/%llu]", (unsigned long long)p->a);
        emit_text_edge(g, "map[i]", p->a == 1 ? "reduce[i]" : k, maps);
        emit_text_edge(g, "reduce[*]", "merge", p->b);
    } else {
        for (uint64_t j = 0; j < maps; j++)
            emit_ix_edge(g, &st_mapper, IX_ONE, j, &st_reduce, IX_ONE, j / p->a);
        for (uint64_t r = 0; r < p->b; r++)
            emit_ix_edge(g, &st_reduce, IX_ONE, r, &st_merge, IX_NONE, 0);
    }
}

struct gd_shape_ops {
    void (*plan)(const struct gd_options *opt, struct gd_plan *p);
    void (*emit)(struct gd *g, const struct gd_plan *p, int pass); /* 0 tasks, 1 edges */
    int uses_width;
};

static const struct gd_shape_ops shape_ops[] = {
    [SHAPE_MONTAGE] = {plan_montage, emit_montage, 1},
    [SHAPE_EPIGENOMICS] = {plan_epigenomics, emit_epigenomics, 1},
    [SHAPE_SEISMOLOGY] = {plan_seismology, emit_seismology, 0},
    [SHAPE_LAYERED] = {plan_layered, emit_layered, 1},
    [SHAPE_INDEPENDENT] = {plan_independent, emit_independent, 0},
    [SHAPE_CHAIN] = {plan_chain, emit_chain, 1},
    [SHAPE_DIAMOND] = {plan_diamond, emit_diamond, 0},
    [SHAPE_SWEEP] = {plan_sweep, emit_sweep, 0},
    [SHAPE_MAPREDUCE] = {plan_mapreduce, emit_mapreduce, 1},
};

/* -------------------------------------------------------- option parsing */

static void usage(FILE *f)
{
    fputs("usage: pmc-gendag --shape SHAPE --tasks N [options]\n"
          "Write a synthetic pegasus-mpi-cluster DAG file.\n"
          "\n"
          "  -s, --shape SHAPE        montage, epigenomics, seismology, layered,\n"
          "                           independent, chain, diamond, sweep or mapreduce\n"
          "  -n, --tasks N            number of tasks (structured shapes: at most N)\n"
          "  -w, --width W            montage: bands (1); epigenomics: lanes (4);\n"
          "                           layered: tasks per layer (sqrt N); chain: chains (1);\n"
          "                           mapreduce: maps per reduce (4)\n"
          "  -k, --edges-per-task K   layered: random parents per task (1, at most W)\n"
          "  -S, --seed S             random seed (1)\n"
          "  -r, --runtime-scale F    multiply the realistic runtimes by F (0.001)\n"
          "  -R, --runtime SECONDS    every task sleeps exactly SECONDS instead\n"
          "  -c, --command CMD        sleep (/bin/sleep RUNTIME), true, false,\n"
          "                           echo (/bin/echo \"I am NAME\") or none (/dev/null,\n"
          "                           a placeholder for parse-only benchmarks)\n"
          "  -p, --priorities P       down (deeper tasks get lower -p), up, or none\n"
          "      --plain              no \"#@\" lines and no task options\n"
          "      --arrays             sweep, mapreduce: write task arrays\n"
          "                           (docs/task-arrays.md)\n"
          "  -o, --output FILE        write to FILE instead of stdout\n"
          "  -h, --help               show this help\n",
          f);
}

static uint64_t parse_uint(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *s == '-' || *s == '+' || *end != '\0' || errno || v < min || v > max)
        die("%s: '%s' is not an integer in [%llu, %llu]", opt, s, (unsigned long long)min,
            (unsigned long long)max);
    return v;
}

static double parse_real(const char *opt, const char *s, double min, double max)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    /* v == v rejects NaN; the range check rejects infinities */
    if (*s == '\0' || *end != '\0' || errno || !(v == v) || v < min || v > max)
        die("%s: '%s' is not a number in [%g, %g]", opt, s, min, max);
    return v;
}

static int parse_keyword(const char *opt, const char *s, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0)
            return i;
    char list[256] = "";
    for (int i = 0; names[i]; i++) {
        strcat(list, i ? ", " : "");
        strcat(list, names[i]);
    }
    die("%s: unknown value '%s' (one of: %s)", opt, s, list);
}

static void parse_options(int argc, char **argv, struct gd_options *opt)
{
    static const struct option longopts[] = {
        {"shape", required_argument, NULL, 's'},
        {"tasks", required_argument, NULL, 'n'},
        {"width", required_argument, NULL, 'w'},
        {"edges-per-task", required_argument, NULL, 'k'},
        {"seed", required_argument, NULL, 'S'},
        {"runtime-scale", required_argument, NULL, 'r'},
        {"runtime", required_argument, NULL, 'R'},
        {"command", required_argument, NULL, 'c'},
        {"priorities", required_argument, NULL, 'p'},
        {"plain", no_argument, NULL, 'P'},
        {"arrays", no_argument, NULL, 'A'},
        {"output", required_argument, NULL, 'o'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    *opt = (struct gd_options){.shape = -1, .seed = 1, .scale = 0.001, .fixed = -1, .prio = -1};
    int have_tasks = 0, c;
    opterr = 0; /* we word the errors ourselves */
    while ((c = getopt_long(argc, argv, ":s:n:w:k:S:r:R:c:p:o:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            opt->shape = parse_keyword("--shape", optarg, shape_names);
            break;
        case 'n':
            opt->tasks = parse_uint("--tasks", optarg, 1, GD_MAX_TASKS);
            have_tasks = 1;
            break;
        case 'w':
            opt->width = parse_uint("--width", optarg, 1, GD_MAX_TASKS);
            break;
        case 'k':
            opt->k = parse_uint("--edges-per-task", optarg, 1, GD_MAX_K);
            break;
        case 'S':
            opt->seed = parse_uint("--seed", optarg, 0, UINT64_MAX);
            break;
        case 'r':
            opt->scale = parse_real("--runtime-scale", optarg, 0, 1e6);
            opt->scale_given = 1;
            break;
        case 'R':
            opt->fixed = parse_real("--runtime", optarg, 0, 1e9);
            break;
        case 'c':
            opt->command = parse_keyword("--command", optarg, command_names);
            break;
        case 'p':
            opt->prio = parse_keyword("--priorities", optarg, prio_names);
            break;
        case 'P':
            opt->plain = 1;
            break;
        case 'A':
            opt->arrays = 1;
            break;
        case 'o':
            if (!*optarg)
                die("--output: empty file name");
            opt->output = optarg;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        case ':':
            die("%s: missing value (see --help)", argv[optind - 1]);
        default:
            if (optopt)
                die("-%c: unknown option (see --help)", optopt);
            die("%s: unknown option (see --help)", argv[optind - 1]);
        }
    }
    if (optind < argc)
        die("%s: unexpected argument (see --help)", argv[optind]);
    if (opt->shape < 0)
        die("--shape: missing (see --help)");
    if (!have_tasks)
        die("--tasks: missing (see --help)");
    if (opt->width && !shape_ops[opt->shape].uses_width)
        die("--width: does not apply to --shape %s", shape_names[opt->shape]);
    if (opt->arrays && opt->shape != SHAPE_SWEEP && opt->shape != SHAPE_MAPREDUCE)
        die("--arrays: only applies to --shape sweep and mapreduce");
    if (opt->k && opt->shape != SHAPE_LAYERED)
        die("--edges-per-task: only applies to --shape layered");
    if ((opt->fixed >= 0 || opt->scale_given) && opt->command != CMD_SLEEP)
        die("%s: only applies to --command sleep",
            opt->fixed >= 0 ? "--runtime" : "--runtime-scale");
    if (opt->prio < 0)
        opt->prio = opt->plain ? PRIO_NONE : PRIO_DOWN;
}

/* ------------------------------------------------------------------- main */

/* The shortest %g form that reads back as v, so the header reproduces it. */
static void format_real(char *buf, size_t n, double v)
{
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

static void emit_header(struct gd *g, const struct gd_plan *p)
{
    const struct gd_options *opt = g->opt;
    char line[GD_LINE_MAX], real[32];
    int n = snprintf(line, sizeof line, "# pmc-gendag --shape %s --tasks %llu",
                     shape_names[opt->shape], (unsigned long long)opt->tasks);
    if (opt->width)
        n += snprintf(line + n, sizeof line - n, " --width %llu", (unsigned long long)opt->width);
    if (opt->k)
        n += snprintf(line + n, sizeof line - n, " --edges-per-task %llu",
                      (unsigned long long)opt->k);
    n += snprintf(line + n, sizeof line - n, " --seed %llu", (unsigned long long)opt->seed);
    if (opt->command == CMD_SLEEP) {
        format_real(real, sizeof real, opt->fixed >= 0 ? opt->fixed : opt->scale);
        n += snprintf(line + n, sizeof line - n, " --%s %s",
                      opt->fixed >= 0 ? "runtime" : "runtime-scale", real);
    }
    n += snprintf(line + n, sizeof line - n, " --command %s --priorities %s%s%s\n",
                  command_names[opt->command], prio_names[opt->prio], opt->plain ? " --plain" : "",
                  opt->arrays ? " --arrays" : "");
    n += snprintf(line + n, sizeof line - n, "# %llu tasks, %llu edges\n",
                  (unsigned long long)p->tasks, (unsigned long long)p->edges);
    out_reserve(&g->out);
    out_mem(&g->out, line, (size_t)n);
}

int main(int argc, char **argv)
{
    /* 0, 1 and 2 valid first: with stdout closed, the file opened for -o
     * would become descriptor 1 */
    if (fdio_standard_fds() < 0) {
        fprintf(stderr, "pmc-gendag: /dev/null: %s\n", strerror(errno));
        return 1;
    }
    struct gd_options opt;
    parse_options(argc, argv, &opt);

    const struct gd_shape_ops *ops = &shape_ops[opt.shape];
    struct gd_plan plan = {0};
    ops->plan(&opt, &plan);

    static char buf[GD_OUTBUF];
    struct gd g = {.opt = &opt, .depth_max = plan.depth_max};
    g.letters = opt.shape == SHAPE_DIAMOND;
    g.out = (struct gd_out){.f = stdout, .path = "stdout", .buf = buf};
    uint64_t seed = opt.seed;
    rng_seed(&g.task_rng, splitmix64(&seed));
    rng_seed(&g.edge_rng, splitmix64(&seed));

    if (opt.output) {
        g.out.f = fopen(opt.output, "w");
        if (!g.out.f)
            die("--output: %s: %s", opt.output, strerror(errno));
        g.out.path = opt.output;
        struct stat st;
        if (fstat(fileno(g.out.f), &st) == 0 && S_ISREG(st.st_mode))
            gd_unlink_on_error = opt.output; /* never unlink /dev/null and the like */
    }

    emit_header(&g, &plan);
    ops->emit(&g, &plan, 0);
    if (plan.edges) {
        out_reserve(&g.out);
        out_ch(&g.out, '\n');
    }
    ops->emit(&g, &plan, 1);
    out_flush(&g.out);
    if (fflush(g.out.f) != 0 || ferror(g.out.f))
        die("%s: %s", g.out.path, strerror(errno));
    if (g.out.f != stdout && fclose(g.out.f) != 0)
        die("%s: %s", g.out.path, strerror(errno));
    if (g.ntasks != plan.tasks || g.nedges != plan.edges) /* a bug in a plan */
        die("internal error: planned %llu tasks and %llu edges, wrote %llu and %llu",
            (unsigned long long)plan.tasks, (unsigned long long)plan.edges,
            (unsigned long long)g.ntasks, (unsigned long long)g.nedges);
    return 0;
}
