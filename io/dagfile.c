/* dagfile.c - PMC DAG file reader (grammar in dagfile.h and COMPAT.md).
 *
 * One pass over the bytes: lines are found with memchr(), trimmed, and
 * dispatched on their first word, which must be exactly TASK or EDGE (a
 * comment starts with '#').  The record keyword, the task name and the EDGE
 * names are split on white space only, as PMC does, so names never contain
 * white space or quotes.  The rest of a TASK line (options, executable,
 * arguments) is split with quoting, unquoted into one scratch buffer reused
 * for every line; options are read up to the first word not starting with
 * '-', and the words from there on become argv, which dag_add_task() copies
 * into the DAG's arena.  No allocation happens per line: the scratch arrays
 * only grow to the longest line.
 *
 * Quoting (PMC's split_args(), with two fixes): ' or " opens a run closed by
 * the same character, in which white space is kept; pieces join into one
 * word (a"b c"d is "ab cd"); \ makes the next character literal everywhere,
 * inside single and double quotes too (as in PMC); a \ ending the line is a
 * literal \ (as in PMC).  Fixes: an unterminated quote is an error (PMC ends
 * the line silently) and a closing quote does not end the word.  "" is an
 * empty argument.
 *
 * Choices where PMC's manual is silent: "#@" must be followed by white space
 * and a word (N); "#@" alone or "#@x" is an ordinary comment; the id sticks
 * until the next TASK, a later #@ replacing it.  Only long options take an
 * attached value (--tries=3); -t3 and -t=3 are unknown options.  Numbers:
 * -m and -c take decimal floats (no hex, inf or nan), -t an integer in
 * 1..INT32_MAX, -p an integer in INT32_MIN..INT32_MAX.  Additions to PMC's
 * grammar: -g/--request-gpus an integer in 0..65536, --time-limit a decimal
 * number of seconds > 0 (kept in ms, rounded up).  A NUL byte in a line
 * and an empty executable ("") are errors.
 *
 * Speed: lines are scanned 12 ahead of the
 * parse, their names hashed and their index lookups started with
 * dag_prefetch() in three stages; the parse itself still goes line by line,
 * so errors and their order are unchanged.  A buffer of 4 MB or more is
 * sampled first (64 windows of 16 KiB) to estimate its tasks and edges for
 * dag_reserve(), and, where the process may run on two CPUs, its lines are
 * found and their names hashed by a scanning thread that runs ahead of the
 * parse.  Option values that are plain
 * digits skip strtod/strtoll.
 *
 * Files are loaded with mapfile_load_fd() (mapped; only regular files are
 * taken, dagfile_check_regular()); pages of a mapping already parsed are given
 * back with MADV_DONTNEED every 4 MB so that a large DAG file does not stay
 * resident next to the DAG built from it.
 *
 * Thread-safety: reentrant; all state lives in a struct parser and a struct
 * scanner on the stack (the scanner's thread only reads the buffer).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "io/dagfile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "io/grow.h"
#include "io/mapfile.h"
#include "io/scan.h"
#include "io/spin.h"

#define DAGFILE__DROP_EVERY ((size_t)4 << 20)
#define DAGFILE__AHEAD 12                        /* lines scanned before they are parsed */
#define DAGFILE__RING 16                         /* >= DAGFILE__AHEAD */
#define DAGFILE__SAMPLES 64u                     /* windows read to estimate the DAG's size... */
#define DAGFILE__SAMPLE_BYTES ((size_t)16 << 10) /* ...of this many bytes... */
#define DAGFILE__SAMPLE_MIN ((size_t)4 << 20)    /* ...in files of at least this */
#define DAGFILE__SHOW 200 /* at most this many bytes of a name or value in a message */

/* A line scanned ahead of the parser (see parse_lines()): where it is, and
 * the hashes of the names its record will add (TASK) or look up (EDGE). */
struct ahead {
    const char *s, *eol, *next; /* the line is [s, eol); the next starts at next */
    uint32_t hash[2];
    int nnames;
};

struct parser {
    const char *path; /* for messages only */
    struct pmc_error *err;
    struct dag *dag;
    uint32_t line; /* current line, from 1 */

    const char *task; /* name of the TASK being parsed, for messages */
    size_t task_len;

    char *buf; /* unquoted words of the current line, NUL-separated */
    size_t buf_cap;
    const char **word;
    size_t *word_len;
    size_t nwords, word_cap;
    bool percent; /* a word of the line holds a '%' */
    struct dag_forward_spec *fwd;
    size_t fwd_cap;

    char *pegid; /* pending "#@ N" id */
    size_t pegid_len, pegid_cap;
    bool have_pegid;

    const char *map; /* the mapped file, or NULL */
    size_t dropped;  /* bytes of map already given back */

    const struct ahead *cur; /* the line being parsed, as scanned ahead */
    bool arrays;             /* task arrays accepted (struct dagfile_options) */
};

/* ---- errors ---------------------------------------------------------------- */

static int show(size_t len)
{
    return len > DAGFILE__SHOW ? DAGFILE__SHOW : (int)len;
}

/* "PATH:LINE: message", errno EINVAL; returns -1. */
__attribute__((format(printf, 2, 3))) static int syntax(struct parser *p, const char *fmt, ...)
{
    struct pmc_error msg;
    va_list ap;
    va_start(ap, fmt);
    pmc_verrorf(&msg, fmt, ap);
    va_end(ap);
    errno = EINVAL;
    return pmc_errorf(p->err, "%s:%" PRIu32 ": %s", p->path, p->line, msg.text);
}

static int out_of_memory(struct parser *p)
{
    errno = ENOMEM;
    return pmc_errorf(p->err, "%s:%" PRIu32 ": out of memory", p->path, p->line);
}

/* ---- scratch space ------------------------------------------------------- */

static int reserve_buf(struct parser *p, size_t need)
{
    return pmc_grow((void **)&p->buf, &p->buf_cap, need, 1);
}

/* word[] and word_len[] share word_cap: it changes once both hold need. */
static int reserve_words(struct parser *p, size_t need)
{
    size_t cap = p->word_cap;
    if (pmc_grow((void **)&p->word, &cap, need, sizeof *p->word) < 0)
        return -1;
    cap = p->word_cap;
    if (pmc_grow((void **)&p->word_len, &cap, need, sizeof *p->word_len) < 0)
        return -1;
    p->word_cap = cap;
    return 0;
}

static int reserve_fwd(struct parser *p, size_t need)
{
    return pmc_grow((void **)&p->fwd, &p->fwd_cap, need, sizeof *p->fwd);
}

static int keep_pegid(struct parser *p, const char *s, size_t len)
{
    if (pmc_grow((void **)&p->pegid, &p->pegid_cap, len, 1) < 0)
        return -1;
    memcpy(p->pegid, s, len);
    p->pegid_len = len;
    p->have_pegid = true;
    return 0;
}

static void parser_free(struct parser *p)
{
    free(p->buf);
    free(p->word);
    free(p->word_len);
    free(p->fwd);
    free(p->pegid);
}

/* ---- splitting ----------------------------------------------------------- */

/* The tokeniser's classes; CH_SPACE is exactly scan_is_space() (scan.h).
 * CH_PERCENT is a plain character that also marks the line as holding a
 * '%', the first byte of a %{INDEX} (check_index_tokens()). */
enum { CH_PLAIN = 0, CH_SPACE, CH_QUOTE, CH_ESCAPE, CH_PERCENT };

static const unsigned char ch_class[256] = {
    [' '] = CH_SPACE,  ['\t'] = CH_SPACE, ['\r'] = CH_SPACE,  ['\v'] = CH_SPACE,  ['\f'] = CH_SPACE,
    ['\''] = CH_QUOTE, ['"'] = CH_QUOTE,  ['\\'] = CH_ESCAPE, ['%'] = CH_PERCENT,
};

/* Copy a quoted run (s just after the opening quote q) to *out; returns the
 * position after the closing quote, or NULL if the line ends first.  *pct
 * is set when the run holds a '%'. */
static const char *unquote_run(const char *s, const char *e, char q, char **out, bool *pct)
{
    char *o = *out;
    for (; s < e && *s != q; s++) {
        if (*s == '\\' && s + 1 < e)
            s++;
        *pct |= *s == '%';
        *o++ = *s;
    }
    *out = o;
    return s < e ? s + 1 : NULL;
}

/* Unquote one word starting at *ps into out; returns the end of the output,
 * or NULL on an unterminated quote (its character in *bad).  *pct is set
 * when the word holds a '%'. */
static char *unquote_word(const char **ps, const char *e, char *out, char *bad, bool *pct)
{
    const char *s = *ps;
    while (s < e) {
        char c = *s;
        switch (ch_class[(unsigned char)c]) {
        case CH_SPACE:
            *ps = s;
            return out;
        case CH_PLAIN:
            *out++ = c;
            s++;
            break;
        case CH_PERCENT:
            *pct = true;
            *out++ = c;
            s++;
            break;
        case CH_ESCAPE:
            s++;
            *pct |= s < e && *s == '%';
            *out++ = s < e ? *s++ : '\\';
            break;
        default:
            s = unquote_run(s + 1, e, c, &out, pct);
            if (!s) {
                *bad = c;
                return NULL;
            }
        }
    }
    *ps = s;
    return out;
}

/* Split [s, e) into p->word[], unquoted into p->buf (output <= input + 1);
 * p->percent tells whether a word holds a '%'. */
static int tokenise(struct parser *p, const char *s, const char *e)
{
    if (reserve_buf(p, (size_t)(e - s) + 1))
        return out_of_memory(p);
    char *out = p->buf;
    p->nwords = 0;
    p->percent = false;
    for (s = scan_skip_space(s, e); s < e; s = scan_skip_space(s, e)) {
        if (reserve_words(p, p->nwords + 1))
            return out_of_memory(p);
        char *w = out, bad = 0;
        out = unquote_word(&s, e, out, &bad, &p->percent);
        if (!out)
            return syntax(p, "unterminated %c quote", bad);
        *out++ = '\0';
        p->word[p->nwords] = w;
        p->word_len[p->nwords++] = (size_t)(out - 1 - w);
    }
    return 0;
}

/* ---- option values --------------------------------------------------------- */

/* The value of s when it is 1 to 18 decimal digits and nothing else, else
 * -1: most -c, -m and -p values, read without strtod()/strtoll(), which
 * give the same value for them. */
static long long plain_digits(const char *s)
{
    long long v = 0;
    size_t i = 0;
    for (; s[i] >= '0' && s[i] <= '9'; i++) {
        if (i == 18)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return i > 0 && s[i] == '\0' ? v : -1;
}

static bool parse_float(const char *s, double *out)
{
    long long v = plain_digits(s);
    if (v >= 0) {
        *out = (double)v; /* rounded to nearest, as strtod() rounds */
        return true;
    }
    size_t len = strlen(s);
    if (len == 0 || strspn(s, "0123456789.eE+-") != len)
        return false;
    char *end;
    double d = strtod(s, &end);
    if (*end != '\0' || !isfinite(d))
        return false;
    *out = d;
    return true;
}

static bool parse_int(const char *s, long long lo, long long hi, long long *out)
{
    long long d = plain_digits(s);
    if (d >= 0) {
        if (d < lo || d > hi)
            return false;
        *out = d;
        return true;
    }
    size_t len = strlen(s);
    if (len == 0 || strspn(s, "0123456789+-") != len)
        return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end != '\0' || errno == ERANGE || v < lo || v > hi)
        return false;
    *out = v;
    return true;
}

static bool opt_memory(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    double d;
    if (!parse_float(val, &d) || d < 0 || ceil(d) > UINT32_MAX)
        return false;
    spec->memory_mb = (uint32_t)ceil(d);
    return true;
}

static bool opt_cpus(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    double d;
    if (!parse_float(val, &d) || d <= 0 || ceil(d) > UINT32_MAX)
        return false;
    spec->cpus = (uint32_t)ceil(d);
    return true;
}

static bool opt_tries(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    long long v;
    if (!parse_int(val, 1, DAG_MAX_TRIES, &v))
        return false;
    spec->tries = (uint32_t)v;
    return true;
}

static bool opt_priority(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    long long v;
    if (!parse_int(val, INT32_MIN, INT32_MAX, &v))
        return false;
    spec->priority = (int32_t)v;
    return true;
}

static bool opt_gpus(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    long long v;
    if (!parse_int(val, 0, 1 << 16, &v))
        return false;
    spec->gpus = (uint32_t)v;
    return true;
}

/* Seconds, fractions allowed, stored in ms (rounded up; at most ~49 days). */
static bool opt_time_limit(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    (void)p;
    double d;
    if (!parse_float(val, &d) || d <= 0 || ceil(d * 1000.0) > UINT32_MAX)
        return false;
    spec->time_limit_ms = (uint32_t)ceil(d * 1000.0);
    return true;
}

/* Appends to p->fwd (== spec->forwards), which has room for one forward per
 * two words of the line.  A source (-F SRC, -f VAR) given twice is refused:
 * the first forward reads and deletes the file, so the second would fail
 * the task (-F), or the first pipe would stay empty (-f). */
static bool add_forward(struct parser *p, struct dag_task_spec *spec, uint32_t kind,
                        const char *val)
{
    const char *eq = strchr(val, '=');
    if (!eq || eq == val || eq[1] == '\0')
        return false;
    uint32_t pipes = 0;
    for (uint32_t k = 0; k < spec->nforwards; k++) {
        pipes += p->fwd[k].kind == DAG_FORWARD_PIPE;
        if (p->fwd[k].kind == kind && p->fwd[k].src_len == (size_t)(eq - val) &&
            memcmp(p->fwd[k].src, val, p->fwd[k].src_len) == 0)
            return false;
    }
    if (kind == DAG_FORWARD_PIPE && pipes == DAG_MAX_PIPES)
        return false;
    p->fwd[spec->nforwards++] =
        (struct dag_forward_spec){kind, val, (size_t)(eq - val), eq + 1, strlen(eq + 1)};
    return true;
}

static bool opt_pipe(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    return add_forward(p, spec, DAG_FORWARD_PIPE, val);
}

static bool opt_file(struct parser *p, struct dag_task_spec *spec, const char *val)
{
    return add_forward(p, spec, DAG_FORWARD_FILE, val);
}

struct task_option {
    char short_name;
    const char *long_name;
    bool (*apply)(struct parser *p, struct dag_task_spec *spec, const char *val);
    const char *expects;
};

/* Each "expects" states the whole range, upper limits included: "> 0" for
 * -c 99999999999 read as if the value were too small. */
static const struct task_option task_options[] = {
    {'m', "request-memory", opt_memory, "a number of MB from 0 to 4294967295"},
    {'c', "request-cpus", opt_cpus, "a number of CPUs > 0, at most 4294967295"},
    {'t', "tries", opt_tries, "an integer from 1 to 65535"},
    {'p', "priority", opt_priority, "an integer from -2147483648 to 2147483647"},
    {'f', "pipe-forward", opt_pipe, "VAR=FILE, each VAR once, at most 64 a task"},
    {'F', "file-forward", opt_file, "SRC=DEST, each SRC once"},
    {'g', "request-gpus", opt_gpus, "a whole number of GPUs from 0 to 65536"},
    {0, "time-limit", opt_time_limit, "a number of seconds > 0, at most 4294967.295 (49.7 days)"},
};
_Static_assert(DAG_MAX_TRIES == 65535, "the -t/--tries message names DAG_MAX_TRIES");

/* "-c/--request-cpus", or "--time-limit" for an option without a letter. */
static const char *option_name(const struct task_option *o, char *buf, size_t n)
{
    if (o->short_name)
        snprintf(buf, n, "-%c/--%s", o->short_name, o->long_name);
    else
        snprintf(buf, n, "--%s", o->long_name);
    return buf;
}

/* Which option word w is; *val gets an attached value (--opt=value). */
static const struct task_option *match_option(const char *w, const char **val)
{
    size_t n = sizeof task_options / sizeof task_options[0];
    *val = NULL;
    for (size_t i = 0; i < n; i++) {
        const struct task_option *o = &task_options[i];
        size_t len = strlen(o->long_name);
        if (o->short_name && w[1] == o->short_name && w[2] == '\0')
            return o;
        if (w[1] == '-' && strncmp(w + 2, o->long_name, len) == 0) {
            if (w[2 + len] == '=')
                *val = w + 3 + len;
            if (w[2 + len] == '=' || w[2 + len] == '\0')
                return o;
        }
    }
    return NULL;
}

/* Apply the options among p->word[]; *next gets the executable's index. */
static int parse_options(struct parser *p, struct dag_task_spec *spec, size_t *next)
{
    size_t i = 0;
    while (i < p->nwords && p->word[i][0] == '-') {
        const char *w = p->word[i++], *val;
        const struct task_option *o = match_option(w, &val);
        if (!o)
            return syntax(p, "task %.*s: unknown option %.*s", show(p->task_len), p->task,
                          show(p->word_len[i - 1]), w);
        char name[64];
        if (!val && i == p->nwords)
            return syntax(p, "task %.*s: %s needs a value", show(p->task_len), p->task,
                          option_name(o, name, sizeof name));
        if (!val)
            val = p->word[i++];
        if (!o->apply(p, spec, val))
            return syntax(p, "task %.*s: bad value '%.*s' for %s (expected %s)", show(p->task_len),
                          p->task, show(strlen(val)), val, option_name(o, name, sizeof name),
                          o->expects);
    }
    *next = i;
    return 0;
}

/* ---- records --------------------------------------------------------------- */

/* The message for a name taken by an array, or by a plain task named like
 * an array's instances (EEXIST from dag_add_task() or dag_add_array() with
 * *id = other): what the record at this line clashes with, and where. */
static int name_clash(struct parser *p, const char *name, size_t len, dag_node_t other)
{
    const struct dag *d = p->dag;
    if (DAG_NODE_IS_ARRAY(other)) {
        const struct dag_array *a = &d->arrays[DAG_NODE_ID(other)];
        const char *an = d->arena + a->name;
        if (strlen(an) == len && memcmp(an, name, len) == 0)
            return syntax(p, "duplicate name %.*s: the array %s of line %" PRIu32, show(len), name,
                          an, a->line);
        return syntax(p, "task %.*s is named like an instance of the array %s of line %" PRIu32,
                      show(len), name, an, a->line);
    }
    const char *tn = dag_task_name(d, other);
    if (strlen(tn) == len && memcmp(tn, name, len) == 0)
        return syntax(p, "duplicate name %.*s: the task of line %" PRIu32, show(len), name,
                      d->line[other]);
    return syntax(p,
                  "array %.*s: the task %s of line %" PRIu32 " is named like one of its instances",
                  show(len), name, tn, d->line[other]);
}

static int add_task(struct parser *p, const struct dag_task_spec *spec)
{
    dag_task_t id;
    if (dag_add_task(p->dag, spec, &id) == 0) {
        p->have_pegid = false;
        return 0;
    }
    if (errno == EEXIST && DAG_NODE_IS_ARRAY(id))
        return name_clash(p, p->task, p->task_len, id);
    if (errno == EEXIST)
        return syntax(p, "duplicate task %.*s", show(p->task_len), p->task);
    if (errno == E2BIG)
        return syntax(p, "DAG too large at task %.*s", show(p->task_len), p->task);
    if (errno == EINVAL)
        return syntax(p, "invalid task %.*s", show(p->task_len), p->task);
    return out_of_memory(p);
}

/* An array declaration: the name part of "NAME[FIRST-LAST]". */
struct range {
    size_t name_len;
    uint32_t first, last;
};

/* A range bound [s, e): decimal digits without a leading 0, at most
 * DAG_ARRAY_MAX_INDEX; -1 (with the message) otherwise. */
static int range_bound(struct parser *p, const char *s, const char *e, uint32_t *out)
{
    size_t n = (size_t)(e - s);
    if (n == 0 || strspn(s, "0123456789") < n || (n > 1 && *s == '0'))
        return syntax(p, "task %.*s: bad array range bound '%.*s' (expected a decimal index)",
                      show(p->task_len), p->task, show(n), s);
    uint64_t v = 0;
    for (size_t i = 0; i < n && v <= DAG_ARRAY_MAX_INDEX; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > DAG_ARRAY_MAX_INDEX)
        return syntax(p, "task %.*s: index %.*s past the maximum %u", show(p->task_len), p->task,
                      show(n), s, DAG_ARRAY_MAX_INDEX);
    *out = (uint32_t)v;
    return 0;
}

/* Is the current TASK's name an array declaration NAME[FIRST-LAST]?  1
 * (and *r), 0 for a plain name, -1 for a malformed one.  A name ending in
 * "[]", or in "[D...-...]" (a digit, then a '-'), is meant as an array. */
static int array_range(struct parser *p, struct range *r)
{
    const char *n = p->task, *end = n + p->task_len - 1; /* end: the last byte */
    if (*end != ']')
        return 0;
    const char *open = memchr(n, '[', p->task_len);
    if (!open)
        return 0;
    if (open + 1 == end)
        return syntax(p, "task %.*s: empty array range", show(p->task_len), n);
    const char *dash = memchr(open + 1, '-', (size_t)(end - open - 1));
    if (!dash || !(open[1] >= '0' && open[1] <= '9'))
        return 0;
    if (open == n)
        return syntax(p, "task %.*s: array with no name", show(p->task_len), n);
    if (memchr(n, ']', (size_t)(open - n)))
        return syntax(p, "task %.*s: ']' in an array name", show(p->task_len), n);
    if (range_bound(p, open + 1, dash, &r->first) || range_bound(p, dash + 1, end, &r->last))
        return -1;
    if (r->first > r->last)
        return syntax(p, "task %.*s: reversed array range (first > last)", show(p->task_len), n);
    if (!p->arrays)
        return syntax(p, "task %.*s: task arrays are not supported by this program",
                      show(p->task_len), n);
    r->name_len = (size_t)(open - n);
    return 1;
}

/* %{INDEX} is rewritten in an array task's arguments only: refuse it in a
 * plain task's words and in an array task's options (words before exe). */
static int check_index_tokens(struct parser *p, size_t exe, bool array)
{
    if (!p->percent)
        return 0;
    for (size_t i = 0; i < (array ? exe : p->nwords); i++)
        if (dag_index_token(p->word[i]))
            return syntax(p,
                          "task %.*s: %%{INDEX} in %s (only an array task's arguments are "
                          "rewritten; %%%%{INDEX} is a literal %%{INDEX} there)",
                          show(p->task_len), p->task, array ? "an option" : "a plain task");
    return 0;
}

static int add_array(struct parser *p, struct dag_task_spec *spec, const struct range *r)
{
    spec->name_len = r->name_len;
    spec->name_hash = NULL; /* the hash scanned ahead is the whole word's */
    uint32_t id;
    uint64_t count = (uint64_t)r->last - r->first + 1;
    if (dag_add_array(p->dag, spec, r->first, r->last, &id) == 0) {
        p->have_pegid = false;
        return 0;
    }
    if (errno == EEXIST)
        return name_clash(p, spec->name, spec->name_len, id);
    if (errno == E2BIG && p->dag->ninstances + count > DAG_MAX_INSTANCES)
        return syntax(p, "task %.*s: more than %u instances in the DAG", show(p->task_len), p->task,
                      DAG_MAX_INSTANCES);
    if (errno == E2BIG)
        return syntax(p, "DAG too large at task %.*s", show(p->task_len), p->task);
    if (errno == EINVAL)
        return syntax(p, "invalid task %.*s", show(p->task_len), p->task);
    return out_of_memory(p);
}

static int parse_task(struct parser *p, const char *s, const char *e)
{
    s = scan_skip_space(s, e);
    if (s == e)
        return syntax(p, "TASK with no name");
    p->task = s;
    s = scan_word_end(s, e);
    p->task_len = (size_t)(s - p->task);
    /* The rescue log reads a name with a control byte as garbage (it marks
     * zero-filled blocks), so such a task could never be recorded as done:
     * refuse it here rather than fail the restart (docs/reliability.md). */
    for (size_t i = 0; i < p->task_len; i++)
        if ((unsigned char)p->task[i] < 0x20 || p->task[i] == 0x7f)
            return syntax(p, "task %.*s: control character 0x%02x in the name", show(p->task_len),
                          p->task, (unsigned char)p->task[i]);
    struct range range;
    int array = array_range(p, &range);
    if (array < 0)
        return -1;
    if (tokenise(p, s, e))
        return -1;
    if (reserve_fwd(p, p->nwords / 2 + 1))
        return out_of_memory(p);
    struct dag_task_spec spec = {
        .name = p->task, .name_len = p->task_len, .cpus = 1, .line = p->line, .forwards = p->fwd};
    if (p->cur->nnames == 1) /* split as the scan ahead split it */
        spec.name_hash = &p->cur->hash[0];
    size_t exe = 0;
    if (parse_options(p, &spec, &exe))
        return -1;
    if (exe == p->nwords)
        return syntax(p, "TASK %.*s has no executable", show(p->task_len), p->task);
    if (p->word_len[exe] == 0)
        return syntax(p, "TASK %.*s has an empty executable", show(p->task_len), p->task);
    if (check_index_tokens(p, exe, array))
        return -1;
    spec.argv = p->word + exe;
    spec.argv_len = p->word_len + exe;
    spec.argc = (uint32_t)(p->nwords - exe);
    if (p->have_pegid) {
        spec.pegasus_id = p->pegid;
        spec.pegasus_id_len = p->pegid_len;
    }
    return array ? add_array(p, &spec, &range) : add_task(p, &spec);
}

/* One side of an EDGE line: a plain task, or an array with its selector
 * ([i], [i/K], [*]). */
enum ref_kind { REF_TASK, REF_ONE, REF_DIV, REF_ALL };
struct ref {
    enum ref_kind kind;
    dag_node_t node;
    uint32_t k; /* K of [i/K], else 1 */
    const char *w;
    size_t n;
};

/* K of "i/K": decimal, no leading 0, 1 .. DAG_MAX_INSTANCES; 0 if not. */
static uint32_t selector_k(const char *s, size_t n)
{
    if (n < 3 || s[0] != 'i' || s[1] != '/' || s[2] == '0' || n > 12 ||
        strspn(s + 2, "0123456789") < n - 2)
        return 0;
    uint64_t v = 0;
    for (size_t i = 2; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    return v <= DAG_MAX_INSTANCES ? (uint32_t)v : 0;
}

/* r->w names no task: is it ARRAY[SELECTOR]? */
static int array_ref(struct parser *p, struct ref *r)
{
    const char *open = memchr(r->w, '[', r->n);
    uint32_t a;
    if (!open || dag_array_lookup(p->dag, r->w, (size_t)(open - r->w), &a))
        return syntax(p, "EDGE names unknown task %.*s", show(r->n), r->w);
    const char *sel = open + 1;
    size_t sn = (size_t)(r->w + r->n - 1 - sel);
    r->node = DAG_NODE_ARRAY | a;
    r->k = 1;
    if (sn == 1 && *sel == 'i')
        r->kind = REF_ONE;
    else if (sn == 1 && *sel == '*')
        r->kind = REF_ALL;
    else if ((r->k = selector_k(sel, sn)) != 0)
        r->kind = r->k == 1 ? REF_ONE : REF_DIV;
    else
        return syntax(p,
                      "EDGE %.*s: bad instance selector (expected [i], [i/K] with K >= 1, or [*])",
                      show(r->n), r->w);
    return 0;
}

/* The task named by the k-th name of the current EDGE line (split exactly
 * as the scan ahead split it, so its hash is known): 0, or -1 (no message)
 * when no task has that name. */
static int lookup(struct parser *p, int k, const char *name, size_t len, dag_task_t *id)
{
    uint32_t h = k < p->cur->nnames ? p->cur->hash[k] : dag_name_hash(name, len);
    return dag_lookup_hash(p->dag, name, len, h, id);
}

/* The k-th name of the current EDGE line: a plain task first, as without
 * arrays, else an array with its selector; -1 with the message. */
static int resolve(struct parser *p, int k, const char *name, size_t len, struct ref *r)
{
    *r = (struct ref){.kind = REF_TASK, .w = name, .n = len, .k = 1};
    if (lookup(p, k, name, len, &r->node) == 0)
        return 0;
    if (p->dag->narrays && name[len - 1] == ']')
        return array_ref(p, r);
    return syntax(p, "EDGE names unknown task %.*s", show(len), name);
}

/* Which array edge "EDGE a b" is, or 0 when the pair is no edge form. */
static enum dag_array_edge_kind edge_kind(const struct ref *a, const struct ref *b)
{
    if (a->kind == REF_ONE && b->kind == REF_ONE)
        return DAG_EDGE_ONE_TO_ONE;
    if (a->kind == REF_ONE && b->kind == REF_DIV)
        return DAG_EDGE_K_TO_ONE;
    if (a->kind == REF_ALL && b->kind == REF_TASK)
        return DAG_EDGE_FAN_IN;
    if (a->kind == REF_TASK && b->kind == REF_ALL)
        return DAG_EDGE_FAN_OUT;
    if (a->kind == REF_ALL && b->kind == REF_ALL)
        return DAG_EDGE_BARRIER;
    return 0;
}

/* Do the instance counts of a one-to-one or K-to-one edge fit? */
static int check_counts(struct parser *p, const struct ref *a, const struct ref *b)
{
    const struct dag_array *pa = &p->dag->arrays[DAG_NODE_ID(a->node)];
    const struct dag_array *pb = &p->dag->arrays[DAG_NODE_ID(b->node)];
    uint64_t na = (uint64_t)pa->last - pa->first + 1, nb = (uint64_t)pb->last - pb->first + 1;
    if (b->kind == REF_ONE && na != nb)
        return syntax(p,
                      "EDGE %.*s %.*s: one-to-one needs equal ranges, but the array of line "
                      "%" PRIu32 " has %" PRIu64 " instances and that of line %" PRIu32 " %" PRIu64,
                      show(a->n), a->w, show(b->n), b->w, pa->line, na, pb->line, nb);
    if (b->kind == REF_DIV && na != nb * b->k)
        return syntax(p,
                      "EDGE %.*s %.*s: K-to-one needs %" PRIu32 " x %" PRIu64
                      " instances in the parent (line %" PRIu32 "), which has %" PRIu64,
                      show(a->n), a->w, show(b->n), b->w, b->k, nb, pa->line, na);
    return 0;
}

static int add_array_edge(struct parser *p, const struct ref *a, const struct ref *b)
{
    enum dag_array_edge_kind kind = edge_kind(a, b);
    if (!kind)
        return syntax(p,
                      "EDGE %.*s %.*s: not an edge form (a[i] b[i], a[i] b[i/K], a[*] t, t b[*], "
                      "a[*] b[*] for arrays a, b and a plain task t)",
                      show(a->n), a->w, show(b->n), b->w);
    if (a->node == b->node)
        return syntax(p, "EDGE from array %s to itself",
                      dag_array_name(p->dag, DAG_NODE_ID(a->node)));
    if ((kind == DAG_EDGE_ONE_TO_ONE || kind == DAG_EDGE_K_TO_ONE) && check_counts(p, a, b))
        return -1;
    if (dag_add_array_edge(p->dag, kind, a->node, b->node, b->k, p->line) == 0)
        return 0;
    return errno == E2BIG ? syntax(p, "too many edges") : out_of_memory(p);
}

/* An EDGE line that is not two plain task names (the slow path of
 * parse_edge(), which found one of the names unknown as a task). */
static int parse_array_edge(struct parser *p, const char *const w[2], const size_t n[2])
{
    struct ref parent, child;
    if (resolve(p, 0, w[0], n[0], &parent) || resolve(p, 1, w[1], n[1], &child))
        return -1;
    return add_array_edge(p, &parent, &child);
}

static int parse_edge(struct parser *p, const char *s, const char *e)
{
    const char *w[3];
    size_t n[3];
    int k;
    for (k = 0, s = scan_skip_space(s, e); k < 3 && s < e; k++, s = scan_skip_space(s, e)) {
        w[k] = s;
        s = scan_word_end(s, e);
        n[k] = (size_t)(s - w[k]);
    }
    if (k != 2)
        return syntax(p, "EDGE needs a parent and a child");
    dag_task_t parent, child;
    if (lookup(p, 0, w[0], n[0], &parent) || lookup(p, 1, w[1], n[1], &child))
        return parse_array_edge(p, w, n);
    if (parent == child)
        return syntax(p, "EDGE from task %.*s to itself", show(n[0]), w[0]);
    if (dag_add_edge(p->dag, parent, child) == 0)
        return 0;
    return errno == E2BIG ? syntax(p, "too many edges") : out_of_memory(p);
}

/* "#@ N transformation derivation" keeps N for the next TASK; any other
 * comment is ignored. */
static int parse_comment(struct parser *p, const char *s, const char *e)
{
    if (e - s < 3 || s[1] != '@' || !scan_is_space(s[2]))
        return 0;
    s = scan_skip_space(s + 2, e);
    const char *id = s;
    s = scan_word_end(s, e);
    if (s > id && keep_pegid(p, id, (size_t)(s - id)))
        return out_of_memory(p);
    return 0;
}

static int parse_line(struct parser *p, const char *s, const char *e)
{
    s = scan_skip_space(s, e);
    e = scan_trim_end(s, e);
    if (s == e)
        return 0;
    if (memchr(s, '\0', (size_t)(e - s)))
        return syntax(p, "NUL character in line");
    if (*s == '#')
        return parse_comment(p, s, e);
    const char *kw = s;
    s = scan_word_end(s, e);
    if (s - kw == 4 && memcmp(kw, "TASK", 4) == 0)
        return parse_task(p, s, e);
    if (s - kw == 4 && memcmp(kw, "EDGE", 4) == 0)
        return parse_edge(p, s, e);
    return syntax(p, "unknown record %.*s", show((size_t)(s - kw)), kw);
}

/* ---- the file -------------------------------------------------------------- */

/* Give back the mapped pages before s (whole pages, every 4 MB). */
static void drop_parsed(struct parser *p, const char *s)
{
    size_t done = (size_t)(s - p->map);
    if (!p->map || done - p->dropped < DAGFILE__DROP_EVERY)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    done &= ~(page - 1);
    (void)madvise((void *)(p->map + p->dropped), done - p->dropped, MADV_DONTNEED);
    p->dropped = done;
}

/* The names a TASK (1) or EDGE (2) line [s, e) adds or looks up, split as
 * parse_task() and parse_edge() split them; their hashes go to a->hash.
 * Anything else, or a malformed line, yields fewer names: only a hint. */
static void scan_names(const char *s, const char *e, struct ahead *a)
{
    s = scan_skip_space(s, e);
    const char *kw = s;
    s = scan_word_end(s, e);
    int want = 0;
    if (s - kw == 4 && memcmp(kw, "EDGE", 4) == 0)
        want = 2;
    else if (s - kw == 4 && memcmp(kw, "TASK", 4) == 0)
        want = 1;
    for (a->nnames = 0; a->nnames < want; a->nnames++) {
        s = scan_skip_space(s, e);
        const char *w = s;
        s = scan_word_end(s, e);
        if (s == w)
            break;
        a->hash[a->nnames] = dag_name_hash(w, (size_t)(s - w));
    }
}

/* Find the line at s (s < end) and hash its names. */
static void scan_line(const char *s, const char *end, struct ahead *a)
{
    const char *nl = memchr(s, '\n', (size_t)(end - s));
    a->s = s;
    a->eol = nl ? nl : end;
    a->next = nl ? nl + 1 : end;
    scan_names(a->s, a->eol, a);
}

static void prefetch_stage(struct parser *p, const struct ahead *a, int stage)
{
    for (int k = 0; k < a->nnames; k++)
        dag_prefetch(p->dag, a->hash[k], stage);
}

/* ---- the scanning thread --------------------------------------------------- */

/* A buffer this large gets a scanning thread when the process may run on
 * two CPUs or more: it finds the lines and hashes their names (scan_line())
 * ahead of the parser, which takes them from a ring.  That takes the
 * file's first reads (memchr, the names' bytes, the mapping's page faults)
 * and the hashing off the parser's thread.  Each side publishes its
 * position every DAGFILE__SCAN_BATCH lines (release/acquire), so the ring's
 * entries are handed over without a lock and without an atomic per line.
 * A parser that finds no line waits with pmc_spin_wait(); a scanner that
 * finds no room naps (scanner_room()). */
#define DAGFILE__SCAN_MIN ((size_t)4 << 20)
#define DAGFILE__SCAN_LINES 32768u /* ring entries: 1.3 MB, a power of two */
#define DAGFILE__SCAN_BATCH 64u    /* divides DAGFILE__SCAN_LINES */
#define DAGFILE__SCAN_NAP_US 100L

struct scanner {
    const char *buf, *end;
    struct ahead *ring;
    pthread_t thread;
    alignas(64) atomic_size_t produced; /* lines scanned (the thread) */
    atomic_bool finished;               /* produced is every line of the buffer */
    alignas(64) atomic_size_t consumed; /* lines taken (the parser) */
    atomic_bool quit;                   /* the parser stops early (an error) */
    alignas(64) size_t taken;           /* the parser's own count */
    size_t seen;                        /* the last produced it read */
};

/* The ring is full at n lines scanned: sleep until the parser has taken
 * half of it (a sleep of DAGFILE__SCAN_NAP_US at a time, short beside the
 * time half the ring takes to parse; a scanner that polled would keep the
 * other CPU in sched_yield()), and return the new limit; 0 when the parser
 * quit. */
static size_t scanner_room(struct scanner *sc, size_t n)
{
    const struct timespec nap = {0, DAGFILE__SCAN_NAP_US * 1000L};
    for (;;) {
        size_t c = atomic_load_explicit(&sc->consumed, memory_order_acquire);
        if (c + DAGFILE__SCAN_LINES / 2 >= n)
            return c + DAGFILE__SCAN_LINES;
        if (atomic_load_explicit(&sc->quit, memory_order_relaxed))
            return 0;
        nanosleep(&nap, NULL);
    }
}

static void *scanner_main(void *arg)
{
    struct scanner *sc = arg;
    size_t n = 0, room = DAGFILE__SCAN_LINES; /* lines scanned; may scan while n < room */
    for (const char *s = sc->buf; s < sc->end; n++) {
        if (n == room && !(room = scanner_room(sc, n)))
            return NULL;
        struct ahead *a = &sc->ring[n % DAGFILE__SCAN_LINES];
        scan_line(s, sc->end, a);
        s = a->next;
        if ((n + 1) % DAGFILE__SCAN_BATCH == 0)
            atomic_store_explicit(&sc->produced, n + 1, memory_order_release);
    }
    atomic_store_explicit(&sc->produced, n, memory_order_release);
    atomic_store_explicit(&sc->finished, true, memory_order_release);
    return NULL;
}

/* May this process run on two CPUs or more?  Else a scanner would only
 * take turns with the parser. */
static bool scanner_worth_it(size_t len)
{
    cpu_set_t set;
    return len >= DAGFILE__SCAN_MIN && sched_getaffinity(0, sizeof set, &set) == 0 &&
           CPU_COUNT(&set) >= 2;
}

/* Start a scanner over [buf, buf + len); false (and nothing to stop) when
 * not worth it or it cannot be started: the parser scans itself. */
static bool scanner_start(struct scanner *sc, const char *buf, size_t len)
{
    if (!scanner_worth_it(len))
        return false;
    memset(sc, 0, sizeof *sc);
    sc->buf = buf;
    sc->end = buf + len;
    if (!(sc->ring = malloc(DAGFILE__SCAN_LINES * sizeof *sc->ring)))
        return false;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* signals stay the caller's */
    int e = pthread_create(&sc->thread, NULL, scanner_main, sc);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e != 0) {
        free(sc->ring);
        return false;
    }
    return true;
}

/* The next line into *a; false after the last. */
static bool scanner_next(struct scanner *sc, struct ahead *a)
{
    unsigned spins = 0;
    while (sc->taken == sc->seen) {
        bool done = atomic_load_explicit(&sc->finished, memory_order_acquire);
        sc->seen = atomic_load_explicit(&sc->produced, memory_order_acquire);
        if (sc->taken < sc->seen)
            break;
        if (done)
            return false;
        pmc_spin_wait(&spins);
    }
    *a = sc->ring[sc->taken % DAGFILE__SCAN_LINES];
    if (++sc->taken % DAGFILE__SCAN_BATCH == 0)
        atomic_store_explicit(&sc->consumed, sc->taken, memory_order_release);
    return true;
}

static void scanner_stop(struct scanner *sc)
{
    atomic_store_explicit(&sc->quit, true, memory_order_relaxed);
    pthread_join(sc->thread, NULL);
    free(sc->ring);
}

/* The next line into *a: from the scanner when there is one, else found
 * at *la here; false after the last. */
static bool next_line(struct scanner *sc, const char **la, const char *end, struct ahead *a)
{
    if (sc)
        return scanner_next(sc, a);
    if (*la == end)
        return false;
    scan_line(*la, end, a);
    *la = a->next;
    return true;
}

/* The lines are scanned DAGFILE__AHEAD lines before they are parsed, and
 * each name's lookup is started in three stages (dag_prefetch()) at 12, 8
 * and 4 lines before its line: the name index is far larger than the caches
 * and each lookup is three dependent misses, which the profile showed were
 * half of the parse.  The scan ahead only reads; the parse itself is
 * unchanged, line by line. */
static int parse_lines(struct parser *p, const char *buf, size_t len, struct scanner *sc)
{
    struct ahead ring[DAGFILE__RING];
    const char *la = buf, *end = buf + len;
    size_t scanned = 0, done = 0;
    for (;;) {
        while (scanned - done < DAGFILE__AHEAD) {
            struct ahead *a = &ring[scanned % DAGFILE__RING];
            if (!next_line(sc, &la, end, a))
                break;
            prefetch_stage(p, a, 0);
            if (scanned - done >= DAGFILE__AHEAD / 3)
                prefetch_stage(p, &ring[(scanned - DAGFILE__AHEAD / 3) % DAGFILE__RING], 1);
            if (scanned - done >= DAGFILE__AHEAD * 2 / 3)
                prefetch_stage(p, &ring[(scanned - DAGFILE__AHEAD * 2 / 3) % DAGFILE__RING], 2);
            scanned++;
        }
        if (done == scanned)
            return 0;
        p->cur = &ring[done++ % DAGFILE__RING];
        p->line++;
        if ((size_t)(p->cur->eol - p->cur->s) > DAGFILE_MAX_LINE)
            return syntax(p, "line of %zu bytes, longer than the limit of %zu bytes (%zu MiB)",
                          (size_t)(p->cur->eol - p->cur->s), DAGFILE_MAX_LINE,
                          DAGFILE_MAX_LINE >> 20);
        if (parse_line(p, p->cur->s, p->cur->eol))
            return -1;
        drop_parsed(p, p->cur->next);
    }
}

static int finish(struct parser *p)
{
    struct pmc_error e;
    if (p->dag->ntasks == 0 && p->dag->narrays == 0) {
        errno = EINVAL;
        return pmc_errorf(p->err, "%s: no tasks in DAG", p->path);
    }
    if (dag_finish(p->dag, &e))
        return pmc_errorf(p->err, "%s: %s", p->path, e.text);
    return 0;
}

/* Estimate the TASK and EDGE lines of a large buffer from the complete
 * lines in DAGFILE__SAMPLES windows spread evenly over it, and size the DAG
 * for them (dag_reserve(): the name index then never doubles).  A guess
 * either way is harmless: a low one leaves the rest to the usual growth, a
 * high one leaves untouched (unmapped) capacity. */
static void reserve_estimate(struct dag *dag, const char *buf, size_t len)
{
    if (len < DAGFILE__SAMPLE_MIN)
        return;
    size_t bytes = 0, tasks = 0, edges = 0;
    for (size_t i = 0; i < DAGFILE__SAMPLES; i++) {
        const char *s = buf + len / DAGFILE__SAMPLES * i, *e = s + DAGFILE__SAMPLE_BYTES;
        const char *nl = i ? memchr(s, '\n', (size_t)(e - s)) : s - 1;
        for (s = nl ? nl + 1 : e; s < e; s = nl + 1) {
            nl = memchr(s, '\n', (size_t)(e - s));
            if (!nl)
                break;
            struct ahead a;
            scan_names(s, nl, &a);
            tasks += a.nnames == 1;
            edges += a.nnames == 2;
            bytes += (size_t)(nl + 1 - s);
        }
    }
    if (bytes == 0)
        return;
    double scale = (double)len / (double)bytes;
    double nt = (double)tasks * scale, ne = (double)edges * scale;
    (void)dag_reserve(dag, nt < DAG_MAX_TASKS ? (uint32_t)nt : DAG_MAX_TASKS,
                      ne < (double)UINT32_MAX ? (size_t)ne : UINT32_MAX);
}

static struct dag *parse_buffer(const char *buf, size_t len, const char *path,
                                const struct dagfile_options *opts, struct pmc_error *err,
                                bool mapped)
{
    struct parser p = {
        .path = path, .err = err, .map = mapped ? buf : NULL, .arrays = opts && opts->arrays};
    p.dag = dag_create();
    if (!p.dag) {
        pmc_errorf(err, "%s: out of memory", path);
        return NULL;
    }
    reserve_estimate(p.dag, buf, len);
    struct scanner sc;
    bool scanning = scanner_start(&sc, buf, len);
    int rc = parse_lines(&p, buf, len, scanning ? &sc : NULL);
    if (scanning)
        scanner_stop(&sc);
    if (rc == 0)
        rc = finish(&p);
    parser_free(&p);
    if (rc == 0)
        return p.dag;
    int saved = errno;
    dag_destroy(p.dag);
    errno = saved;
    return NULL;
}

struct dag *dagfile_parse(const char *buf, size_t len, const char *filename, struct pmc_error *err)
{
    return parse_buffer(buf, len, filename, NULL, err, false);
}

struct dag *dagfile_parse_opts(const char *buf, size_t len, const char *filename,
                               const struct dagfile_options *opts, struct pmc_error *err)
{
    return parse_buffer(buf, len, filename, opts, err, false);
}

/* What a file of mode m is, when it is not a regular file. */
static const char *file_kind(mode_t m)
{
    return S_ISFIFO(m)   ? "a pipe or FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "a special file";
}

/* The one message for a DAG that is not a regular file; errno EINVAL
 * ("PATH: Is a directory", EISDIR, for a directory). */
static int not_regular(const char *path, mode_t m, struct pmc_error *err)
{
    errno = S_ISDIR(m) ? EISDIR : EINVAL;
    if (S_ISDIR(m))
        return pmc_errorf(err, "%s: %m", path);
    return pmc_errorf(err,
                      "%s: %s, not a regular file: write the DAG to a file first (a run "
                      "locks it, keeps its rescue log next to it and reads it again to restart)",
                      path, file_kind(m));
}

int dagfile_check_regular(const char *path, struct pmc_error *err)
{
    struct stat st;
    if (stat(path, &st) < 0 || S_ISREG(st.st_mode))
        return 0;
    return not_regular(path, st.st_mode, err);
}

struct dag *dagfile_load(const char *path, struct pmc_error *err)
{
    return dagfile_load_opts(path, NULL, err);
}

struct dag *dagfile_load_opts(const char *path, const struct dagfile_options *opts,
                              struct pmc_error *err)
{
    /* O_NONBLOCK: a FIFO with no writer is refused below, not waited for */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        pmc_errorf(err, "%s: %m", path);
        return NULL;
    }
    struct stat st;
    struct mapfile mf;
    int rc = fstat(fd, &st);
    if (rc < 0)
        pmc_errorf(err, "%s: %m", path);
    else if (!S_ISREG(st.st_mode))
        rc = not_regular(path, st.st_mode, err);
    else
        rc = mapfile_load_fd(&mf, fd, path, err);
    int e = errno;
    close(fd);
    errno = e;
    if (rc < 0)
        return NULL;
    struct dag *dag = parse_buffer(mf.data, mf.size, path, opts, err, mf.mapped);
    mapfile_release(&mf); /* keeps errno */
    return dag;
}
