/* rescue.c - the rescue log: its reader and its group-commit writer.
 *
 * Reader.  The file is loaded with mapfile_load() (mapped, or read into one
 * buffer when it is a pipe, a device or a /proc file) and scanned once with
 * memchr(); names are looked up in
 * place, nothing is allocated per line.  A bad record is not an error at
 * once: it is held as "pending" and becomes "PATH:LINE: bad record" only
 * when a later line holds a record; if none follows, it and everything after
 * it are the garbage tail, reported once and ignored.  An unterminated last
 * line is a torn record (ignored with a warning), except in PMC's style
 * ("\nDONE name", first byte '\n'), where every record ends at end of file
 * or at the next record's newline, so a valid last record counts.  A name
 * that is no plain task's and reads "A[I]" or "A[F-L]" for an array A
 * (resolve(); the last array found is cached) sets its bits in the
 * caller's bitset a word at a time, so a range costs one word per 64
 * instances.
 *
 * Writer.  Two threads share the struct: the producer (the one thread that
 * calls append/flush/close, the master's scheduler) and the writer thread,
 * which owns the file descriptor and the format buffer once started.  They
 * meet in a bounded single-producer single-consumer ring of task ids
 * (Lamport, "Specifying concurrent program modules", TOPLAS 1983; the
 * producer caches the consumer's index as in FastForward, Giacomoni et al.
 * PPoPP 2008, and Concurrency Kit's ck_ring).  Counters run free over
 * uint32_t and are compared by difference; they start 1024 below the wrap
 * (like Linux's INITIAL_JIFFIES) so every run longer than 1024 records
 * crosses it.
 *
 * Group commit (DeWitt et al., SIGMOD 1984): the writer takes every id queued
 * so far (at most RESCUE_BATCH_MAX), formats them into one buffer (the
 * plain tasks in order, then the batch's instances sorted, one record per
 * run of one array: writer_format()), issues one write() loop and, when it is due, one fdatasync(),
 * and publishes how far the file is durable.  It does not wait to fill a batch: while one batch
 * syncs, the next accumulates, so batches are large under load and latency
 * is one sync when quiet.  Under load a write waits until the previous one
 * began RESCUE_COMMIT_USEC ago (writer_pace()), and a sync until the
 * previous one began RESCUE_SYNC_USEC ago (writer_sync_due(); the written
 * records wait for it in writer_sync_wait() or ride with a later batch):
 * the time bounds of the design's "bounded by count and time", one for the
 * process's death (what write() put in the page cache survives it) and one
 * for the node's.  A full ring makes the producer wait for the writer (backpressure):
 * no record is ever dropped while the log is healthy.  After the first write
 * or sync error the writer records the error, sets `failed`, and keeps
 * draining the ring without writing, so nobody ever waits forever.
 *
 * Invariants (counters modulo 2^32): synced <= deq <= enq <= deq + RING_SIZE;
 * ring slots [deq, enq) belong to the writer, the others to the producer;
 * on a healthy log the file holds the carried-over set followed by the
 * records below synced, batch by batch in append order (instances sorted
 * within their batch), durable, and between batches by exactly those below
 * deq (unsynced: written since the last sync).  The writer also keeps what
 * the file holds, a byte per plain task and a bit per instance (done,
 * inst_done), to write it again (writer_recreate()).
 * Opening writes the carried-over
 * set to PATH.tmp, fsyncs it, renames it over PATH and fsyncs the directory,
 * so PATH is always either the old log or the complete new one.
 *
 * Sleeping and waking.  Neither side spins.  The writer sleeps on writer_cv
 * and the producer (ring full, or flush) on producer_cv, both under `lock`;
 * the side that makes progress takes the lock only when the other announces
 * it sleeps.  The lost-wakeup argument is in writer_sleep().
 */
#include "io/rescue.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "io/clock.h"
#include "io/daglock.h"
#include "io/digits.h"
#include "io/fdio.h"
#include "io/grow.h"
#include "io/log.h"
#include "io/mapfile.h"
#include "io/scan.h"

#define RING_SIZE (1u << 16) /* ids; a power of two, >= RESCUE_BATCH_MAX */
#define RING_MASK (RING_SIZE - 1)
#define SEQ_START (UINT32_MAX - 1023u) /* counters wrap after 1024 records */
#define BUF_INITIAL (1u << 20)         /* format buffer; grows to fit a batch */
#define REWRITE_CHUNK (1u << 20)       /* rewrite: write() every MiB */
#define RECORD_OVERHEAD 6              /* "DONE " + '\n' */

static const char *errstr(int e, char *buf, size_t len)
{
    return strerror_r(e, buf, len); /* GNU variant: thread-safe, returns the text */
}

/* ------------------------------------------------------------------------ */
/* Instance bitsets: bit k of word k / 64 is instance id dag->ntasks + k      */
/* ------------------------------------------------------------------------ */

static size_t bits_words(uint64_t nbits)
{
    return (size_t)((nbits + 63) / 64);
}

/* Set bits [lo, hi] (inclusive); returns how many were clear before. */
static uint32_t bits_set_range(uint64_t *b, uint64_t lo, uint64_t hi)
{
    uint32_t added = 0;
    for (uint64_t i = lo / 64; i <= hi / 64; i++) {
        uint64_t m = ~UINT64_C(0);
        if (i == lo / 64)
            m &= ~UINT64_C(0) << (lo % 64);
        if (i == hi / 64)
            m &= ~UINT64_C(0) >> (63 - hi % 64);
        added += (uint32_t)__builtin_popcountll(m & ~b[i]);
        b[i] |= m;
    }
    return added;
}

/* The first bit at or after p and before end that is set (set) or clear
 * (!set), or end.  One word at a time. */
static uint64_t bits_next(const uint64_t *b, uint64_t p, uint64_t end, bool set)
{
    while (p < end) {
        uint64_t word = (set ? b[p / 64] : ~b[p / 64]) & (~UINT64_C(0) << (p % 64));
        if (word) {
            p = p / 64 * 64 + (uint64_t)__builtin_ctzll(word);
            return p < end ? p : end;
        }
        p = (p / 64 + 1) * 64;
    }
    return end;
}

/* The bits set among bits [0, nbits) (those past nbits in the last word
 * are not counted). */
static uint64_t bits_count(const uint64_t *b, uint64_t nbits)
{
    uint64_t n = 0;
    for (size_t i = 0; i < nbits / 64; i++)
        n += (uint64_t)__builtin_popcountll(b[i]);
    if (nbits % 64)
        n += (uint64_t)__builtin_popcountll(b[nbits / 64] & ~(~UINT64_C(0) << (nbits % 64)));
    return n;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                    */
/* ------------------------------------------------------------------------ */

enum record_kind {
    RECORD_SKIP, /* blank or comment */
    RECORD_DONE, /* "DONE name" */
    RECORD_BAD,  /* anything else */
};

struct scan {
    const char *path;
    const struct dag *dag;
    uint8_t *done;
    uint64_t *inst_done; /* dag->ninstances bits, NULL without arrays */
    uint32_t ndone;
    uint32_t ntorn;
    size_t bad_line;        /* first bad line not yet followed by a record, 0 = none */
    size_t foreign;         /* first bad line that no crash of ours writes (foreign()), 0 = none */
    bool pmc_style;         /* first byte '\n': records end at the next newline or EOF */
    const char *array_name; /* the array of the last instance record (a cache) */
    size_t array_len;
    uint32_t array;
    char why[96]; /* what is wrong with a bad instance record (RESOLVE_BAD) */
    struct pmc_error *err;
};

static bool is_name(const char *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
            return false; /* NULs and control bytes: a torn or zero-filled block */
    return true;
}

/* Classify the line [p, end) (newline excluded); for a DONE record, point
 * name/len at the task name. */
static enum record_kind parse_line(const char *p, const char *end, const char **name, size_t *len)
{
    p = scan_skip_space(p, end);
    if (p == end || *p == '#')
        return RECORD_SKIP;
    const char *kw = p;
    p = scan_word_end(p, end);
    if (p - kw != 4 || memcmp(kw, "DONE", 4) != 0)
        return RECORD_BAD;
    *name = scan_skip_space(p, end);
    p = scan_word_end(*name, end);
    *len = (size_t)(p - *name);
    if (*len == 0 || !is_name(*name, *len) || scan_skip_space(p, end) != end)
        return RECORD_BAD;
    return RECORD_DONE;
}

/* A bad line [p, end) that no crash of the writer leaves: text without a
 * NUL (a zero-filled block has them) that is not the beginning of a DONE
 * record (a torn one).  Such lines in a file without any record mean it
 * is not a rescue log at all (-r naming the DAG or an output file). */
static bool foreign(const char *p, const char *end)
{
    if (memchr(p, '\0', (size_t)(end - p)))
        return false;
    p = scan_skip_space(p, end);
    size_t n = (size_t)(end - p) < 4 ? (size_t)(end - p) : 4;
    return memcmp(p, "DONE", n) != 0;
}

static void mark_done(struct scan *s, dag_task_t t)
{
    if (!s->done[t]) {
        s->done[t] = 1;
        s->ndone++;
    }
}

/* The tasks a DONE record names: the plain task lo (== hi), or the
 * instances of ids lo .. hi, all of one array. */
struct record_ids {
    dag_task_t lo, hi;
};

static void mark_ids(struct scan *s, const struct record_ids *r)
{
    if (r->lo < s->dag->ntasks)
        mark_done(s, r->lo);
    else
        s->ndone += bits_set_range(s->inst_done, r->lo - s->dag->ntasks, r->hi - s->dag->ntasks);
}

enum resolve {
    RESOLVE_OK,      /* *r set */
    RESOLVE_UNKNOWN, /* no task and no array's instance */
    RESOLVE_BAD,     /* "A[...]" for an array A, but no index or range of it: s->why */
};

/* Is name "A[..." for an array A (array names hold no '[')?  *a and
 * *open (the '[') then.  The last array found is cached: a log names the
 * instances of few arrays, in long runs. */
static bool instance_array(struct scan *s, const char *name, size_t len, uint32_t *a,
                           const char **open)
{
    if (s->dag->narrays == 0)
        return false;
    const char *b = memchr(name, '[', len);
    if (!b)
        return false;
    size_t n = (size_t)(b - name);
    if (!s->array_name || n != s->array_len || memcmp(name, s->array_name, n) != 0) {
        if (dag_array_lookup(s->dag, name, n, &s->array) < 0)
            return false;
        s->array_name = name; /* in the file's buffer, alive for the whole scan */
        s->array_len = n;
    }
    *a = s->array;
    *open = b;
    return true;
}

/* A decimal index without a leading zero at *p (moved past its digits);
 * its value saturates above UINT32_MAX.  False when there is none. */
static bool read_index(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    for (; *p < end && **p >= '0' && **p <= '9'; (*p)++)
        x = x > UINT32_MAX ? x : x * 10 + (uint64_t)(**p - '0');
    *v = x;
    return *p > s && !(*p - s > 1 && *s == '0');
}

/* [p, end) after the '[' of an instance record of array a: "I]" or
 * "A-B]". */
static enum resolve read_instances(struct scan *s, uint32_t a, const char *p, const char *end,
                                   struct record_ids *r)
{
    const struct dag_array *ar = &s->dag->arrays[a];
    uint64_t lo, hi;
    bool ok = read_index(&p, end, &lo);
    hi = lo;
    if (ok && p < end && *p == '-') {
        p++;
        ok = read_index(&p, end, &hi);
    }
    if (!ok || p + 1 != end || *p != ']') {
        snprintf(s->why, sizeof s->why, "not an index or a range A-B (decimal, no leading zero)");
        return RESOLVE_BAD;
    }
    if (lo > hi) {
        snprintf(s->why, sizeof s->why, "reversed range (first > last)");
        return RESOLVE_BAD;
    }
    if (lo < ar->first || hi > ar->last) {
        snprintf(s->why, sizeof s->why, "%s outside the array's range %u-%u",
                 lo == hi ? "index" : "range", ar->first, ar->last);
        return RESOLVE_BAD;
    }
    r->lo = dag_instance_id(s->dag, a, (uint32_t)lo);
    r->hi = dag_instance_id(s->dag, a, (uint32_t)hi);
    return RESOLVE_OK;
}

/* What the name of a DONE record stands for.  A plain task first; only
 * otherwise "A[I]" or "A[F-L]" for an array A.  (A name "A[...]" ending in
 * ']' for an array A is never a plain task's, dag_add_task() refuses it, so
 * that lookup is skipped.) */
static enum resolve resolve(struct scan *s, const char *name, size_t len, struct record_ids *r)
{
    uint32_t a;
    const char *open;
    bool inst = name[len - 1] == ']' && instance_array(s, name, len, &a, &open);
    if (!inst && dag_lookup(s->dag, name, len, &r->lo) == 0) {
        r->hi = r->lo;
        return RESOLVE_OK;
    }
    if (!inst && !instance_array(s, name, len, &a, &open))
        return RESOLVE_UNKNOWN;
    return read_instances(s, a, open + 1, name + len, r);
}

/* A file without records and with a foreign line: no warnings, the
 * caller refuses it (rescue_read()). */
static bool not_a_log(const struct scan *s)
{
    return s->ndone == 0 && s->foreign;
}

/* Report the pending garbage tail, if any. */
static void warn_garbage(struct scan *s)
{
    if (s->bad_line && !not_a_log(s)) {
        log_warn("%s:%zu: ignoring garbage at the end of the file", s->path, s->bad_line);
        s->ntorn++;
        s->bad_line = 0;
    }
}

/* The last line has no newline: count it only when the file is in PMC's
 * style and it is a valid record of a known task or instances. */
static int scan_unterminated(struct scan *s, size_t line, enum record_kind kind, const char *name,
                             size_t len)
{
    struct record_ids r;
    if (s->pmc_style && kind == RECORD_DONE && resolve(s, name, len, &r) == RESOLVE_OK) {
        if (s->bad_line)
            return pmc_errorf(s->err, "%s:%zu: bad record", s->path, s->bad_line);
        mark_ids(s, &r);
        return 0;
    }
    warn_garbage(s);
    if (!not_a_log(s))
        log_warn("%s:%zu: ignoring incomplete last record", s->path, line);
    s->ntorn++;
    return 0;
}

static int scan_line(struct scan *s, const char *p, const char *end, size_t line, bool complete)
{
    const char *name = NULL;
    size_t len = 0;
    enum record_kind kind = parse_line(p, end, &name, &len);
    if (kind == RECORD_SKIP)
        return 0;
    if (kind == RECORD_BAD && !s->foreign && foreign(p, end))
        s->foreign = line;
    if (!complete)
        return scan_unterminated(s, line, kind, name, len);
    if (kind == RECORD_BAD) {
        if (!s->bad_line)
            s->bad_line = line;
        return 0;
    }
    if (s->bad_line) /* a record follows: the bad line was no tail */
        return pmc_errorf(s->err, "%s:%zu: bad record", s->path, s->bad_line);
    struct record_ids r;
    switch (resolve(s, name, len, &r)) {
    case RESOLVE_UNKNOWN:
        return pmc_errorf(s->err, "%s:%zu: unknown task %.*s", s->path, line, (int)len, name);
    case RESOLVE_BAD:
        return pmc_errorf(s->err, "%s:%zu: bad instance %.*s: %s", s->path, line, (int)len, name,
                          s->why);
    case RESOLVE_OK:
        break;
    }
    mark_ids(s, &r);
    return 0;
}

static int scan_buffer(struct scan *s, const char *buf, size_t size)
{
    if (size == 0)
        return 0;
    const char *p = buf, *end = buf + size;
    s->pmc_style = size > 0 && buf[0] == '\n';
    for (size_t line = 1; p < end; line++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (scan_line(s, p, nl ? nl : end, line, nl != NULL) < 0)
            return -1;
        p = nl ? nl + 1 : end;
    }
    warn_garbage(s);
    return 0;
}

int rescue_read(const char *path, const struct dag *dag, uint8_t *done, uint64_t *inst_done,
                uint32_t *ndone, uint32_t *ntorn, struct pmc_error *err)
{
    *ndone = 0;
    if (ntorn)
        *ntorn = 0;
    struct mapfile mf;
    struct pmc_error e;
    if (mapfile_load(&mf, path, &e) < 0) {
        if (errno == ENOENT)
            return 0; /* no log yet: nothing is done */
        return pmc_errorf(err, "%s", e.text);
    }
    struct scan s = {.path = path, .dag = dag, .done = done, .inst_done = inst_done, .err = err};
    int rc = scan_buffer(&s, mf.data, mf.size);
    mapfile_release(&mf);
    if (rc == 0 && not_a_log(&s))
        rc = pmc_errorf(err, "%s:%zu: not a rescue log (no DONE record); it is left as it is", path,
                        s.foreign);
    if (rc < 0) {
        if (dag->ntasks > 0)
            memset(done, 0, dag->ntasks); /* no side effect on failure */
        if (inst_done)
            memset(inst_done, 0, bits_words(dag->ninstances) * sizeof *inst_done);
        return -1;
    }
    *ndone = s.ndone;
    if (ntorn)
        *ntorn = s.ntorn;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                    */
/* ------------------------------------------------------------------------ */

struct rescue_writer {
    /* Producer's cache line: written only by the producer. */
    alignas(64) _Atomic uint32_t enq; /* ids queued so far (free-running) */
    uint32_t deq_cache;               /* the producer's last view of deq */
    _Atomic int producer_waiting;     /* producer sleeps on producer_cv */
    _Atomic bool stop;                /* set by close(), under lock */

    /* Writer's cache line: written only by the writer thread. */
    alignas(64) _Atomic uint32_t deq; /* ids taken off the ring */
    _Atomic uint32_t synced;          /* ids written and synced, or dropped */
    _Atomic int writer_sleeping;      /* writer sleeps on writer_cv, idle */
    _Atomic int writer_pacing;        /* writer sleeps on writer_cv, records queued */
    uint64_t commit_ns;               /* CLOCK_MONOTONIC when the last write began */
    uint64_t sync_ns;                 /* CLOCK_MONOTONIC when the last fdatasync began */
    _Atomic uint64_t writes;          /* batches written (write() loops that succeeded) */
    _Atomic bool failed;              /* errtext is set (release/acquire) */
    _Atomic uint64_t syncs;           /* fdatasync() calls that succeeded */
    _Atomic uint64_t late_wakeups;    /* sleeps ended by the timeout with records queued */

    /* Set by open(), read-only while the thread runs. */
    alignas(64) dag_task_t *ring; /* RING_SIZE slots */
    const struct dag *dag;
    int fd;
    char *path; /* path, path.tmp and the directory, one allocation */
    char *tmp;
    char *dir;
    pthread_t thread;
    bool sync_ready;      /* lock and condition variables initialised */
    pthread_mutex_t lock; /* only for sleeping and waking */
    pthread_cond_t writer_cv;
    pthread_cond_t producer_cv;

    /* Owned by whoever writes the file: open(), then the writer thread
     * (and a flush while it idles: writer_check_path()). */
    char *buf;
    size_t bufcap;
    uint8_t *done;       /* dag->ntasks bytes: every task the log holds, to write it again */
    uint64_t *inst_done; /* dag->ninstances bits: every instance it holds; NULL without */
    uint32_t *batch;     /* RESCUE_BATCH_MAX instance offsets of a batch, and room to */
    uint32_t *batch_tmp; /* sort them (writer_format()); NULL without instances */
    char errtext[512];
    _Atomic int path_state; /* enum rescue_path; set by the owner, read by any thread */
};

/* a is at or after b, for free-running counters less than 2^31 apart */
static bool seq_reached(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) >= 0;
}

static int datasync(int fd)
{
    int rc;
    do
        rc = fdatasync(fd); /* retried only on EINTR: an I/O error is final */
    while (rc < 0 && errno == EINTR);
    return rc;
}

/* Append "DONE name\n" for task t at buf[*len], growing the buffer. */
static int buf_put(struct rescue_writer *w, size_t *len, dag_task_t t)
{
    const char *name = dag_task_name(w->dag, t);
    size_t n = strlen(name);
    if (pmc_grow((void **)&w->buf, &w->bufcap, *len + n + RECORD_OVERHEAD, 1) < 0)
        return -1;
    char *p = w->buf + *len;
    memcpy(p, "DONE ", 5);
    memcpy(p + 5, name, n);
    p[5 + n] = '\n';
    *len += n + RECORD_OVERHEAD;
    return 0;
}

/* Record the first failure (writer thread only) and publish it. */
static void writer_fail(struct rescue_writer *w, const char *what)
{
    char eb[128];
    snprintf(w->errtext, sizeof w->errtext, "%s: %s failed: %s", w->path, what,
             errstr(errno, eb, sizeof eb));
    /* release: a reader that sees failed (acquire) sees errtext */
    atomic_store_explicit(&w->failed, true, memory_order_release);
    log_error("%s", w->errtext);
}

/* Append "DONE a[i]\n", or "DONE a[i-j]\n" when i < j, for instances i .. j
 * of array a, at buf[*len], growing the buffer. */
static int buf_put_instances(struct rescue_writer *w, size_t *len, uint32_t a, uint32_t i,
                             uint32_t j)
{
    const char *name = dag_array_name(w->dag, a);
    size_t n = strlen(name);
    char num[2 * DIGITS_MAX + 2], *end = num + sizeof num - 1, *p;
    *end = ']';
    p = digits_u64(j, 1, end);
    if (i < j) {
        *--p = '-';
        p = digits_u64(i, 1, p);
    }
    size_t m = (size_t)(end + 1 - p);
    if (pmc_grow((void **)&w->buf, &w->bufcap, *len + n + m + RECORD_OVERHEAD + 1, 1) < 0)
        return -1;
    char *o = w->buf + *len;
    memcpy(o, "DONE ", 5);
    memcpy(o + 5, name, n);
    o[5 + n] = '[';
    memcpy(o + 6 + n, p, m);
    o[6 + n + m] = '\n';
    *len += n + m + RECORD_OVERHEAD + 1;
    return 0;
}

/* Append the records of instance offsets lo .. hi (ids dag->ntasks + lo
 * ...), one line per array they span.  0, or -1 with ENOMEM. */
static int buf_put_run(struct rescue_writer *w, size_t *len, uint64_t lo, uint64_t hi)
{
    const struct dag *dag = w->dag;
    while (lo <= hi) {
        uint32_t a, i;
        (void)dag_instance_of(dag, dag->ntasks + (dag_task_t)lo, &a, &i); /* lo is in range */
        uint64_t last = dag->arrays[a].base + (uint64_t)dag_array_count(dag, a) - 1;
        uint64_t to = hi < last ? hi : last;
        if (buf_put_instances(w, len, a, i, i + (uint32_t)(to - lo)) < 0)
            return -1;
        lo = to + 1;
    }
    return 0;
}

/* Sort v[0, n) into ascending order with tmp (n entries) as scratch; returns
 * the buffer that holds the result.  LSD radix sort, 8 bits a pass (Knuth,
 * TAOCP vol. 3, 5.2.5), a pass skipped where every key has the same digit;
 * nothing done for a sorted batch (completions in dispatch order). */
static uint32_t *sort_offsets(uint32_t *v, uint32_t *tmp, uint32_t n)
{
    uint32_t i = 1;
    while (i < n && v[i - 1] <= v[i])
        i++;
    for (unsigned shift = 0; i < n && shift < 32; shift += 8) {
        uint32_t count[257] = {0};
        for (uint32_t k = 0; k < n; k++)
            count[((v[k] >> shift) & 255) + 1]++;
        if (count[((v[0] >> shift) & 255) + 1] == n)
            continue;
        for (unsigned b = 1; b < 257; b++)
            count[b] += count[b - 1];
        for (uint32_t k = 0; k < n; k++)
            tmp[count[(v[k] >> shift) & 255]++] = v[k];
        uint32_t *t = v;
        v = tmp;
        tmp = t;
    }
    return v;
}

/* Format the n instance offsets of a batch (w->batch) into buf after *len:
 * sorted, each maximal run of consecutive offsets of one array one record;
 * mark them in w->inst_done.  0, or -1 with ENOMEM. */
static int writer_format_instances(struct rescue_writer *w, uint32_t n, size_t *len)
{
    const uint32_t *v = sort_offsets(w->batch, w->batch_tmp, n);
    uint32_t lo = v[0], hi = v[0];
    for (uint32_t k = 1; k <= n; k++) {
        if (k < n && v[k] <= hi + 1) { /* a repeat, or the next one */
            hi = v[k];
            continue;
        }
        if (buf_put_run(w, len, lo, hi) < 0)
            return -1;
        bits_set_range(w->inst_done, lo, hi);
        if (k < n)
            lo = hi = v[k];
    }
    return 0;
}

/* Format ids [d, d + n) of the ring into buf: the plain tasks' records in
 * the order queued, then the instances' (writer_format_instances()).
 * Returns the length or -1. */
static int writer_format(struct rescue_writer *w, uint32_t d, uint32_t n, size_t *len)
{
    uint32_t ninst = 0;
    *len = 0;
    for (uint32_t i = 0; i < n; i++) {
        dag_task_t t = w->ring[(d + i) & RING_MASK];
        if (t >= w->dag->ntasks) {
            w->batch[ninst++] = t - w->dag->ntasks;
            continue;
        }
        if (buf_put(w, len, t) < 0)
            return -1;
        w->done[t] = 1;
    }
    return ninst ? writer_format_instances(w, ninst, len) : 0;
}

/* Write a formatted batch: in the file from now on, so a killed process
 * loses none of it, but not yet durable (writer_sync()). */
static void writer_write(struct rescue_writer *w, size_t len)
{
    w->commit_ns = pmc_mono_ns();
    if (fdio_write_all(w->fd, w->buf, len) != 0) /* sets errno */
        writer_fail(w, "write");
    else /* relaxed: a statistic; readers need no order with the file */
        atomic_fetch_add_explicit(&w->writes, 1, memory_order_relaxed);
}

static void writer_check_path(struct rescue_writer *w);

/* Make everything written so far durable: one fdatasync(); then see that
 * the file is still the one at the log's path (writer_check_path()). */
static void writer_sync(struct rescue_writer *w)
{
    w->sync_ns = pmc_mono_ns();
    if (datasync(w->fd) < 0) {
        writer_fail(w, "fdatasync");
        return;
    }
    atomic_fetch_add_explicit(&w->syncs, 1, memory_order_relaxed);
    writer_check_path(w);
}

/* Wake the producer if it announced that it sleeps.  Called by the writer
 * right after a seq_cst store to deq or synced: the store-load pair mirrors
 * the one in producer_wait(), see writer_sleep(). */
static void wake_producer(struct rescue_writer *w)
{
    if (atomic_load_explicit(&w->producer_waiting, memory_order_seq_cst)) {
        pthread_mutex_lock(&w->lock);
        pthread_cond_signal(&w->producer_cv);
        pthread_mutex_unlock(&w->lock);
    }
}

static void wake_writer(struct rescue_writer *w)
{
    pthread_mutex_lock(&w->lock);
    pthread_cond_signal(&w->writer_cv);
    pthread_mutex_unlock(&w->lock);
}

/* Are the records from d on needed on disk now rather than at the end of
 * the commit interval?  Yes when the producer waits (flush, full ring), when
 * close() asks to stop, or when half the ring is queued.  Writer only, under
 * lock or not: every load is seq_cst, see writer_pace(). */
static bool writer_urgent(struct rescue_writer *w, uint32_t d)
{
    return atomic_load_explicit(&w->producer_waiting, memory_order_seq_cst) ||
           atomic_load_explicit(&w->stop, memory_order_seq_cst) ||
           atomic_load_explicit(&w->enq, memory_order_seq_cst) - d >= RING_SIZE / 2;
}

/* A wait of the writer's ended by its timeout: `missed` when what it waits
 * for had come all the same (records queued, a producer waiting), that is
 * a wake-up the protocol lost (or, rarely, the timeout raced the signal by
 * a few instructions): late_wakeups. */
static void writer_count_late(struct rescue_writer *w, bool missed)
{
    if (missed)
        atomic_fetch_add_explicit(&w->late_wakeups, 1, memory_order_relaxed);
}

/* Sleep until the ring holds more than d ids or `us` microseconds pass;
 * an idle writer (idle: RESCUE_FLUSH_USEC, a safety net; the protocol needs
 * no timeout) wakes for close() too, one that waits for a due sync
 * (writer_sync_wait()) for anything urgent (writer_urgent(): close(), a
 * flush, a full ring).  Idle, a producer that waits needs nothing from us
 * (all it took is synced) and clears producer_waiting only once it has the
 * lock: waking for it would spin on the lock it needs.
 *
 * Why no wakeup is lost.  The writer stores writer_sleeping = 1 and then
 * loads enq; the producer stores enq and then loads writer_sleeping; all four
 * are seq_cst, so they are in one total order (the store-buffering pattern of
 * Dekker's algorithm): either the writer's load sees the new enq and it does
 * not sleep, or the producer's load sees writer_sleeping = 1 and it signals.
 * The signal is sent under lock, and the writer checks enq under lock before
 * pthread_cond_timedwait() releases it atomically, so a signal cannot fall
 * between the check and the wait.  The producer's waits (producer_wait) use
 * the same argument with producer_waiting against deq and synced. */
static void writer_sleep(struct rescue_writer *w, uint32_t d, long us, bool idle)
{
    struct timespec deadline = pmc_mono_after_us(us);
    pthread_mutex_lock(&w->lock);
    atomic_store_explicit(&w->writer_sleeping, 1, memory_order_seq_cst);
    while (atomic_load_explicit(&w->enq, memory_order_seq_cst) == d &&
           !(idle ? atomic_load_explicit(&w->stop, memory_order_seq_cst) : writer_urgent(w, d)))
        if (pthread_cond_timedwait(&w->writer_cv, &w->lock, &deadline) == ETIMEDOUT) {
            writer_count_late(w, idle ? atomic_load_explicit(&w->enq, memory_order_seq_cst) != d
                                      : writer_urgent(w, d));
            break;
        }
    atomic_store_explicit(&w->writer_sleeping, 0, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
}

/* Everything below d is durable (or dropped: the log failed): tell a
 * producer that waits for it. */
static void writer_publish(struct rescue_writer *w, uint32_t d)
{
    /* seq_cst: release makes failed/errtext visible with synced; the order
     * against wake_producer()'s load is the lost-wakeup pair. */
    atomic_store_explicit(&w->synced, d, memory_order_seq_cst);
    wake_producer(w);
}

/* When the next fdatasync may begin (CLOCK_MONOTONIC, ns):
 * RESCUE_SYNC_USEC after the last one began; 0 before the first. */
static uint64_t writer_sync_at(const struct rescue_writer *w)
{
    return w->sync_ns ? w->sync_ns + (uint64_t)RESCUE_SYNC_USEC * 1000u : 0;
}

/* Is the fdatasync of what is written due (writer_sync_at()), or urgent
 * (writer_urgent())? */
static bool writer_sync_due(struct rescue_writer *w, uint32_t d)
{
    return pmc_mono_ns() >= writer_sync_at(w) || writer_urgent(w, d);
}

/* Everything below d is written: publish it once it is durable, after one
 * fdatasync when that is due (writer_sync_due()), or at once when the log
 * has failed (dropped); otherwise it waits for writer_sync_wait() or a
 * later batch.  So records below d are written but not durable exactly
 * while synced != d. */
static void writer_settle(struct rescue_writer *w, uint32_t d)
{
    bool failed = atomic_load_explicit(&w->failed, memory_order_relaxed); /* own flag */
    if (!failed && !writer_sync_due(w, d))
        return;
    if (!failed)
        writer_sync(w);
    writer_publish(w, d);
}

/* Take up to RESCUE_BATCH_MAX ids starting at d, write them (unless the log
 * has failed) and settle them (writer_settle()).  Returns the new d. */
static uint32_t writer_batch(struct rescue_writer *w, uint32_t d, uint32_t n)
{
    size_t len = 0;
    bool healthy = !atomic_load_explicit(&w->failed, memory_order_relaxed); /* own flag */
    if (healthy && writer_format(w, d, n, &len) < 0) {
        errno = ENOMEM;
        writer_fail(w, "format");
        healthy = false;
    }
    d += n;
    /* seq_cst: release hands slots [d - n, d) back to the producer after we
     * read them; seq_cst orders it before the load in wake_producer(). */
    atomic_store_explicit(&w->deq, d, memory_order_seq_cst);
    wake_producer(w);
    if (healthy)
        writer_write(w, len);
    writer_settle(w, d);
    return d;
}

/* Group commit bounded by time: when the last write began less than
 * RESCUE_COMMIT_USEC ago, let records gather until it is that old, unless
 * they are urgent (writer_urgent()).  Under load this turns one write per
 * few records into one per interval (and writer_sync_due() one fdatasync
 * per RESCUE_SYNC_USEC); a record that waits for a quiet writer is written
 * at once.  Why no wake-up is lost: the writer stores
 * writer_pacing = 1 and then loads producer_waiting and enq; the producer
 * stores those and then loads writer_pacing (append) or signals under lock
 * (producer_wait); all seq_cst, the pattern of writer_sleep(). */
static void writer_pace(struct rescue_writer *w, uint32_t d)
{
    uint64_t due = w->commit_ns + (uint64_t)RESCUE_COMMIT_USEC * 1000u;
    uint64_t now = pmc_mono_ns();
    if (w->commit_ns == 0 || now >= due || writer_urgent(w, d))
        return;
    struct timespec deadline = pmc_mono_after_us((long)((due - now) / 1000u) + 1);
    pthread_mutex_lock(&w->lock);
    atomic_store_explicit(&w->writer_pacing, 1, memory_order_seq_cst);
    while (!writer_urgent(w, d))
        if (pthread_cond_timedwait(&w->writer_cv, &w->lock, &deadline) == ETIMEDOUT) {
            /* the interval's end, or a flush whose signal was lost */
            writer_count_late(w, atomic_load_explicit(&w->producer_waiting, memory_order_seq_cst));
            break;
        }
    atomic_store_explicit(&w->writer_pacing, 0, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
}

/* Records below d are written but not synced (writer_settle()): sleep
 * until their fdatasync is due, something is urgent, or more records come
 * (writer_sleep()), then settle them. */
static void writer_sync_wait(struct rescue_writer *w, uint32_t d)
{
    uint64_t now = pmc_mono_ns(), at = writer_sync_at(w);
    if (now < at && !writer_urgent(w, d))
        writer_sleep(w, d, (long)((at - now) / 1000u) + 1, false);
    writer_settle(w, d);
}

static void *writer_main(void *arg)
{
    struct rescue_writer *w = arg;
    uint32_t d = atomic_load_explicit(&w->deq, memory_order_relaxed); /* own counter */
    for (;;) {
        /* acquire: pairs with the producer's release of enq, so the ring
         * slots below enq are written before we read them */
        uint32_t e = atomic_load_explicit(&w->enq, memory_order_acquire);
        if (e != d) {
            writer_pace(w, d);
            e = atomic_load_explicit(&w->enq, memory_order_acquire);
            uint32_t n = e - d < RESCUE_BATCH_MAX ? e - d : RESCUE_BATCH_MAX;
            d = writer_batch(w, d, n);
        } else if (atomic_load_explicit(&w->synced, memory_order_relaxed) != d) { /* own */
            writer_sync_wait(w, d);
        } else if (atomic_load_explicit(&w->stop, memory_order_acquire)) {
            break; /* close() flushed first, so nothing is left */
        } else {
            writer_sleep(w, d, RESCUE_FLUSH_USEC, true);
        }
    }
    return NULL;
}

/* Sleep until the writer has taken (ring full) or synced (flush) up to
 * target.  Producer only. */
static uint32_t producer_wait(struct rescue_writer *w, _Atomic uint32_t *counter, uint32_t target)
{
    /* acquire: what the writer did before advancing counter (reading ring
     * slots, writing the file, setting failed) happens before what we do
     * next */
    uint32_t v = atomic_load_explicit(counter, memory_order_acquire);
    if (seq_reached(v, target))
        return v;
    pthread_mutex_lock(&w->lock);
    atomic_store_explicit(&w->producer_waiting, 1, memory_order_seq_cst);
    pthread_cond_signal(&w->writer_cv); /* a pacing writer commits now */
    while (!seq_reached(v = atomic_load_explicit(counter, memory_order_seq_cst), target))
        pthread_cond_wait(&w->producer_cv, &w->lock);
    atomic_store_explicit(&w->producer_waiting, 0, memory_order_relaxed);
    pthread_mutex_unlock(&w->lock);
    return v;
}

void rescue_writer_append(struct rescue_writer *w, dag_task_t t)
{
    uint32_t e = atomic_load_explicit(&w->enq, memory_order_relaxed); /* own counter */
    if (e - w->deq_cache == RING_SIZE) /* full as far as we know: look, then wait */
        w->deq_cache = producer_wait(w, &w->deq, e - RING_SIZE + 1);
    w->ring[e & RING_MASK] = t;
    /* seq_cst: release publishes ring[e] to the writer's acquire of enq;
     * seq_cst keeps the load of writer_sleeping below after this store (the
     * lost-wakeup pair, see writer_sleep()). */
    atomic_store_explicit(&w->enq, e + 1, memory_order_seq_cst);
    if (atomic_load_explicit(&w->writer_sleeping, memory_order_seq_cst))
        wake_writer(w);
    else if (e + 1 - w->deq_cache >= RING_SIZE / 2 &&
             e + 1 - (w->deq_cache = atomic_load_explicit(&w->deq, memory_order_acquire)) >=
                 RING_SIZE / 2 &&
             atomic_load_explicit(&w->writer_pacing, memory_order_seq_cst))
        wake_writer(w); /* half the ring waits: commit before it fills */
}

void rescue_writer_get_stats(const struct rescue_writer *w, struct rescue_writer_stats *st)
{
    /* relaxed: counters; each is exact once the writer is idle (after a
     * flush), and monotonic while it works */
    st->syncs = atomic_load_explicit(&w->syncs, memory_order_relaxed);
    st->writes = atomic_load_explicit(&w->writes, memory_order_relaxed);
    uint32_t synced = atomic_load_explicit(&w->synced, memory_order_acquire); /* before deq */
    st->unsynced = atomic_load_explicit(&w->deq, memory_order_acquire) - synced;
    st->late_wakeups = atomic_load_explicit(&w->late_wakeups, memory_order_relaxed);
    st->cpu_ns = pmc_thread_cpu_ns_of(w->thread);
}

bool rescue_writer_failed(const struct rescue_writer *w)
{
    return atomic_load_explicit(&w->failed, memory_order_acquire);
}

const char *rescue_writer_error(const struct rescue_writer *w)
{
    return rescue_writer_failed(w) ? w->errtext : "";
}

int rescue_writer_flush(struct rescue_writer *w)
{
    uint32_t target = atomic_load_explicit(&w->enq, memory_order_relaxed); /* own counter */
    producer_wait(w, &w->synced, target);
    /* everything queued is synced: the writer idles until the next append
     * (ours), so the file is ours to check (the acquire of synced orders
     * its last use of fd, buf and done before this) */
    if (rescue_writer_failed(w))
        return -1;
    writer_check_path(w);
    return 0;
}

enum rescue_path rescue_writer_path(const struct rescue_writer *w)
{
    return (enum rescue_path)atomic_load_explicit(&w->path_state, memory_order_acquire);
}

/* Ask the thread to stop once the ring is empty, and join it. */
static void writer_stop(struct rescue_writer *w)
{
    pthread_mutex_lock(&w->lock);
    atomic_store_explicit(&w->stop, true, memory_order_release);
    pthread_cond_signal(&w->writer_cv);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
}

static void writer_free(struct rescue_writer *w)
{
    if (w->sync_ready) {
        pthread_cond_destroy(&w->producer_cv);
        pthread_cond_destroy(&w->writer_cv);
        pthread_mutex_destroy(&w->lock);
    }
    free(w->buf);
    free(w->ring);
    free(w->done);
    free(w->inst_done);
    free(w->batch);
    free(w->batch_tmp);
    free(w->path);
    free(w);
}

/* A descriptor of w's file (close-on-exec) for *lock_fd, when lock_fd is
 * not NULL: it keeps the file's lock (an OFD lock lives while any
 * descriptor of its open file does).  -1 there when dup fails. */
static void writer_keep_lock(const struct rescue_writer *w, int *lock_fd)
{
    if (lock_fd)
        *lock_fd = w->fd >= 0 ? fcntl(w->fd, F_DUPFD_CLOEXEC, 0) : -1;
}

int rescue_writer_close(struct rescue_writer *w)
{
    return rescue_writer_close_locked(w, NULL);
}

int rescue_writer_close_locked(struct rescue_writer *w, int *lock_fd)
{
    if (lock_fd)
        *lock_fd = -1;
    if (!w)
        return 0;
    char eb[128];
    int rc = rescue_writer_flush(w);
    writer_stop(w);
    writer_keep_lock(w, lock_fd);
    if (close(w->fd) < 0 && rc == 0) {
        log_error("%s: close failed: %s", w->path, errstr(errno, eb, sizeof eb));
        rc = -1;
    }
    writer_free(w);
    return rc;
}

int rescue_check_writable(const char *path, struct pmc_error *err)
{
    return fdio_check_replaceable(path, err);
}

/* path, path.tmp and the directory holding path, in one allocation. */
static int writer_paths(struct rescue_writer *w, const char *path)
{
    size_t n = strlen(path);
    w->path = malloc(3 * n + 8);
    if (!w->path)
        return -1;
    memcpy(w->path, path, n + 1);
    w->tmp = w->path + n + 1;
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp", 5);
    w->dir = w->tmp + n + 5;
    fdio_dir_of(path, w->dir, n + 2);
    return 0;
}

static int cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    int rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

/* The mutex and the two condition variables, all or none. */
static int sync_init(struct rescue_writer *w)
{
    if (pthread_mutex_init(&w->lock, NULL) != 0)
        return -1;
    if (cond_init_monotonic(&w->writer_cv) < 0)
        goto fail_lock;
    if (cond_init_monotonic(&w->producer_cv) < 0)
        goto fail_cv;
    w->sync_ready = true;
    return 0;
fail_cv:
    pthread_cond_destroy(&w->writer_cv);
fail_lock:
    pthread_mutex_destroy(&w->lock);
    return -1;
}

/* A writer for path, its format buffer allocated; with_thread: also the
 * ring and the locks its thread uses (rescue_replace() needs neither).
 * NULL with ENOMEM. */
static struct rescue_writer *writer_alloc(const char *path, const struct dag *dag, bool with_thread)
{
    struct rescue_writer *w = aligned_alloc(64, sizeof *w);
    if (!w)
        return NULL;
    memset(w, 0, sizeof *w);
    atomic_init(&w->enq, SEQ_START);
    atomic_init(&w->deq, SEQ_START);
    atomic_init(&w->synced, SEQ_START);
    w->deq_cache = SEQ_START;
    w->dag = dag;
    w->fd = -1;
    w->bufcap = BUF_INITIAL;
    w->buf = malloc(w->bufcap);
    if (with_thread) {
        w->ring = malloc(RING_SIZE * sizeof *w->ring);
        w->done = calloc(dag->ntasks ? dag->ntasks : 1, 1);
    }
    if (with_thread && dag->ninstances > 0) {
        w->inst_done = calloc(bits_words(dag->ninstances), sizeof *w->inst_done);
        w->batch = malloc(RESCUE_BATCH_MAX * sizeof *w->batch);
        w->batch_tmp = malloc(RESCUE_BATCH_MAX * sizeof *w->batch_tmp);
    }
    bool no_inst = dag->ninstances > 0 && (!w->inst_done || !w->batch || !w->batch_tmp);
    if ((with_thread && (!w->ring || !w->done || no_inst || sync_init(w) < 0)) || !w->buf ||
        writer_paths(w, path) < 0) {
        writer_free(w);
        errno = ENOMEM;
        return NULL;
    }
    return w;
}

/* Write buf[0, *len) to w->fd when it holds at least `least` bytes (0:
 * whatever it holds), and empty it.  0, or -1 with errno. */
static int rewrite_spill(struct rescue_writer *w, size_t *len, size_t least)
{
    if (*len < least || *len == 0)
        return 0;
    if (fdio_write_all(w->fd, w->buf, *len) != 0)
        return -1;
    *len = 0;
    return 0;
}

/* The records of a carried-over set into w->fd, through buf: the plain
 * tasks in id order, then each maximal run of instances of one array as
 * one record, in id order.  0, or -1 with errno (ENOMEM or write's). */
static int rewrite_records(struct rescue_writer *w, const uint8_t *done, const uint64_t *inst_done)
{
    size_t len = 0;
    for (dag_task_t t = 0; t < w->dag->ntasks; t++)
        if (done[t] && (buf_put(w, &len, t) < 0 || rewrite_spill(w, &len, REWRITE_CHUNK) < 0))
            return -1;
    uint64_t end = inst_done ? w->dag->ninstances : 0;
    for (uint64_t lo = bits_next(inst_done, 0, end, true); lo < end;
         lo = bits_next(inst_done, lo, end, true)) {
        uint64_t hi = bits_next(inst_done, lo, end, false);
        if (buf_put_run(w, &len, lo, hi - 1) < 0 || rewrite_spill(w, &len, REWRITE_CHUNK) < 0)
            return -1;
        lo = hi;
    }
    return rewrite_spill(w, &len, 0);
}

/* Write the carried-over set into a fresh path.tmp and sync it; w->fd stays
 * open on it (O_APPEND) and becomes the log's descriptor after the rename. */
static int rewrite(struct rescue_writer *w, const uint8_t *done, const uint64_t *inst_done,
                   struct pmc_error *err)
{
    char eb[128];
    if (unlink(w->tmp) < 0 && errno != ENOENT) /* a stale one from a crash */
        return pmc_errorf(err, "%s: %s", w->tmp, errstr(errno, eb, sizeof eb));
    w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
    if (w->fd < 0)
        return pmc_errorf(err, "%s: %s", w->tmp, errstr(errno, eb, sizeof eb));
    /* the run's lock of the log moves with it: once renamed over the old
     * one, a run that opens path finds it locked (daglock.h) */
    (void)daglock_hold(w->fd);
    if (rewrite_records(w, done, inst_done) < 0)
        return pmc_errorf(err, "%s: write failed: %s", w->tmp, errstr(errno, eb, sizeof eb));
    if (fsync(w->fd) < 0)
        return pmc_errorf(err, "%s: fsync failed: %s", w->tmp, errstr(errno, eb, sizeof eb));
    return 0;
}

/* Start the writer thread with every signal blocked: signals are for the
 * threads that handle them. */
static int writer_start(struct rescue_writer *w)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&w->thread, NULL, writer_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return -1;
    }
    pthread_setname_np(w->thread, "pmc-rescue"); /* for top -H and gdb only */
    return 0;
}

/* Undo a failed open: stop the thread (if started), drop path.tmp (if it is
 * still ours), close, free. */
static void writer_abort(struct rescue_writer *w, bool started, bool renamed)
{
    if (started)
        writer_stop(w);
    if (w->fd >= 0 && !renamed)
        unlink(w->tmp); /* created with O_EXCL: it is ours */
    if (w->fd >= 0)
        close(w->fd);
    writer_free(w);
}

/* Rename w->tmp over w->path and make the rename durable: 0, or -1 with
 * err (after a failed directory sync path already holds the new log). */
static int writer_install(struct rescue_writer *w, const char *path, struct pmc_error *err,
                          bool *renamed)
{
    char eb[128];
    *renamed = false;
    if (rename(w->tmp, w->path) < 0)
        return pmc_errorf(err, "%s: cannot rename to %s: %s", w->tmp, w->path,
                          errstr(errno, eb, sizeof eb));
    *renamed = true;
    if (fdio_fsync_dir(w->dir) < 0) /* too late to restore path: the caller fails the run */
        return pmc_errorf(err, "%s: cannot sync directory %s: %s", path, w->dir,
                          errstr(errno, eb, sizeof eb));
    return 0;
}

/* The first half of open and replace: a writer for path whose PATH.tmp
 * holds exactly the tasks of done, synced, no thread started (with_thread:
 * ready for one, writer_alloc()).  NULL with err (PATH.tmp removed, path
 * left alone); when names the moment in the message for a path that is not
 * a regular file (" at start", ""). */
static struct rescue_writer *writer_prepare(const char *path, const struct dag *dag,
                                            const uint8_t *done, const uint64_t *inst_done,
                                            bool with_thread, const char *when,
                                            struct pmc_error *err)
{
    char eb[128];
    if (fdio_not_regular(path)) {
        pmc_errorf(err, "%s: not a regular file (the rescue log is replaced%s)", path, when);
        return NULL;
    }
    struct rescue_writer *w = writer_alloc(path, dag, with_thread);
    if (!w) {
        pmc_errorf(err, "%s: %s", path, errstr(errno, eb, sizeof eb));
        return NULL;
    }
    if (rewrite(w, done, inst_done, err) < 0) {
        writer_abort(w, false, false);
        return NULL;
    }
    return w;
}

/* The log's file was deleted (or renamed away) and nothing is at its path:
 * write every task it holds (w->done) into a fresh PATH.tmp, synced, and
 * link it at the path (link(2), not rename(2): a file someone put there
 * meanwhile is never replaced); it becomes the log's file, the old
 * descriptor is closed.  Owner of the file only.  The number of tasks
 * written, or -1 with err (the old file stays the log's, PATH.tmp is
 * removed). */
static long writer_recreate(struct rescue_writer *w, struct pmc_error *err)
{
    char eb[128];
    int old = w->fd;
    w->fd = -1; /* rewrite() sets it once it has opened PATH.tmp */
    if (rewrite(w, w->done, w->inst_done, err) < 0) {
        if (w->fd >= 0) {
            unlink(w->tmp); /* created with O_EXCL: it is ours */
            close(w->fd);
        }
        w->fd = old;
        return -1;
    }
    int rc = link(w->tmp, w->path);
    int e = errno;
    unlink(w->tmp);
    if (rc < 0) {
        close(w->fd);
        w->fd = old;
        return pmc_errorf(err, "%s: cannot write it again: %s", w->path, errstr(e, eb, sizeof eb));
    }
    if (fdio_fsync_dir(w->dir) < 0)
        log_warn("%s: cannot sync directory %s: %s", w->path, w->dir, errstr(errno, eb, sizeof eb));
    close(old);
    long n = w->inst_done ? (long)bits_count(w->inst_done, w->dag->ninstances) : 0;
    for (dag_task_t t = 0; t < w->dag->ntasks; t++)
        n += w->done[t];
    return n;
}

/* Is the log's file still the one at its path (fdio_still_at())?  A file
 * deleted or renamed away while the run goes is written again there
 * (writer_recreate()): RESCUE_PATH_WRITTEN_AGAIN; one replaced (another
 * file renamed over it), or one that cannot be written again, is left as it
 * is: RESCUE_PATH_LOST, final (the records go on into the file we hold,
 * which is no longer where the next run looks).  Each is logged once, as
 * it is found.  Owner of the file only (the writer thread at each sync, a
 * flush while it idles). */
static void writer_check_path(struct rescue_writer *w)
{
    char eb[128];
    if (atomic_load_explicit(&w->path_state, memory_order_relaxed) == RESCUE_PATH_LOST ||
        fdio_still_at(w->fd, w->path))
        return;
    int e = errno;
    struct pmc_error err;
    long n = e == ENOENT ? writer_recreate(w, &err) : -1;
    if (n >= 0) {
        log_error("The rescue log %s was deleted during the run: it is written again there, with "
                  "the %ld tasks done so far",
                  w->path, n);
        atomic_store_explicit(&w->path_state, RESCUE_PATH_WRITTEN_AGAIN, memory_order_release);
        return;
    }
    char why[640] = "";
    if (e == ENOENT)
        snprintf(why, sizeof why, " (%s)", err.text);
    else if (e == EEXIST)
        snprintf(why, sizeof why, " (another file is there now, left as it is)");
    else
        snprintf(why, sizeof why, " (%s)", errstr(e, eb, sizeof eb));
    log_error("The rescue log %s was deleted or replaced during the run: progress since then is "
              "not recorded there%s",
              w->path, why);
    atomic_store_explicit(&w->path_state, RESCUE_PATH_LOST, memory_order_release);
}

int rescue_replace(const char *path, const struct dag *dag, const uint8_t *done,
                   const uint64_t *inst_done, int *lock_fd, struct pmc_error *err)
{
    char eb[128];
    if (lock_fd)
        *lock_fd = -1;
    struct rescue_writer *w = writer_prepare(path, dag, done, inst_done, false, "", err);
    if (!w)
        return -1;
    bool renamed;
    int rc = writer_install(w, path, err, &renamed);
    if (rc == 0) { /* synced already: a close error is a late write-back error */
        writer_keep_lock(w, lock_fd);
        int closed = close(w->fd);
        w->fd = -1;
        if (closed < 0)
            rc = pmc_errorf(err, "%s: close failed: %s", path, errstr(errno, eb, sizeof eb));
    }
    writer_abort(w, false, renamed);
    return rc;
}

struct rescue_writer *rescue_writer_open(const char *path, const struct dag *dag,
                                         const uint8_t *done, const uint64_t *inst_done,
                                         struct pmc_error *err)
{
    char eb[128];
    struct rescue_writer *w = writer_prepare(path, dag, done, inst_done, true, " at start", err);
    if (!w)
        return NULL;
    if (dag->ntasks > 0) /* what the log holds: writer_recreate() */
        memcpy(w->done, done, dag->ntasks);
    if (inst_done)
        memcpy(w->inst_done, inst_done, bits_words(dag->ninstances) * sizeof *inst_done);
    if (writer_start(w) < 0) {
        pmc_errorf(err, "%s: cannot start the writer thread: %s", path,
                   errstr(errno, eb, sizeof eb));
        writer_abort(w, false, false);
        return NULL;
    }
    bool renamed;
    if (writer_install(w, path, err, &renamed) < 0) {
        writer_abort(w, true, renamed);
        return NULL;
    }
    return w;
}
