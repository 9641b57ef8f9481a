/* records.c - formatting of cluster-task and cluster-summary records; see
 * records.h.  The layout is PMC's (pegasus-mpi-cluster worker.cpp and
 * master.cpp, write_cluster_task / write_cluster_summary). */
#include "io/records.h"

#include "io/digits.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The task record is written once per task on the node's hot path, so it
 * is put together here with memcpy and integer digits instead of
 * snprintf(), which costs a node measurable CPU at high task rates.  An out
 * keeps counting past size, so the formatters return the length they needed
 * as snprintf() does. */
struct out {
    char *buf;
    size_t size; /* bytes of buf, the terminating NUL included */
    size_t len;  /* bytes needed so far */
};

static void out_mem(struct out *o, const char *s, size_t n)
{
    if (o->len < o->size) {
        size_t room = o->size - o->len;
        memcpy(o->buf + o->len, s, n < room ? n : room);
    }
    o->len += n;
}

static void out_str(struct out *o, const char *s)
{
    out_mem(o, s, strlen(s));
}

/* v in decimal, at least width digits (zero-padded). */
static void out_uint(struct out *o, uint64_t v, int width)
{
    char d[DIGITS_MAX], *end = d + sizeof d;
    char *p = digits_u64(v, width, end);
    out_mem(o, p, (size_t)(end - p));
}

static void out_int(struct out *o, int64_t v)
{
    char d[DIGITS_MAX], *end = d + sizeof d;
    char *p = digits_i64(v, end);
    out_mem(o, p, (size_t)(end - p));
}

/* v as printf's "%.3f" prints it: the exact binary value rounded to the
 * millisecond, an exact tie to even.  t = v * 1000 is rounded once; fma()
 * gives that rounding's exact error, which decides the ties that the
 * product made or hid.  Values past 2^52 ms (or not finite) go to snprintf. */
static void out_fixed3(struct out *o, double v)
{
    double t = v * 1000.0;
    if (!(fabs(t) < 4503599627370496.0)) {
        char b[352];
        int n = snprintf(b, sizeof b, "%.3f", v);
        out_mem(o, b, n < 0 ? 0 : (size_t)n);
        return;
    }
    double err = fma(v, 1000.0, -t); /* v * 1000 = t + err exactly */
    double r = nearbyint(t);         /* to nearest, ties to even */
    if (fabs(t - r) == 0.5 && err != 0.0)
        r = err > 0 ? ceil(t) : floor(t); /* not a tie of the exact value */
    /* below 2^52 |err| <= 0.25, so no other half-integer lies between */
    uint64_t ms = (uint64_t)fabs(r);
    if (signbit(v)) /* "%.3f" keeps the sign of -0.0001: "-0.000" */
        out_mem(o, "-", 1);
    out_uint(o, ms / 1000, 1);
    out_mem(o, ".", 1);
    out_uint(o, ms % 1000, 3);
}

/* s with ']' and '"' replaced by '_', at most max bytes of it (the limits
 * of the old fixed buffers, kept so records stay byte for byte the same). */
static void out_clean(struct out *o, const char *s, size_t max)
{
    for (size_t i = 0; s && s[i] && i < max; i++) {
        char c = (s[i] == ']' || s[i] == '"') ? '_' : s[i];
        out_mem(o, &c, 1);
    }
}

/* Local time t as records_iso_time() prints it. */
static void out_iso_time(struct out *o, double t)
{
    /* round to the millisecond first, then split (t - floor(t) of a
     * value like ...682.734 is 0.73399996...) */
    double total_ms = floor(t * 1000.0 + 0.5);
    time_t sec = (time_t)floor(total_ms / 1000.0);
    int ms = (int)(total_ms - (double)sec * 1000.0);
    /* localtime_r reads the zone once; the fields are printed here rather
     * than with strftime(), which calls tzset() and so re-reads
     * /etc/localtime on every call (7 system calls per task record) */
    struct tm tm;
    localtime_r(&sec, &tm);
    long off = tm.tm_gmtoff;
    out_int(o, tm.tm_year + 1900LL);
    out_mem(o, "-", 1);
    out_uint(o, (uint64_t)tm.tm_mon + 1, 2);
    out_mem(o, "-", 1);
    out_uint(o, (uint64_t)tm.tm_mday, 2);
    out_mem(o, "T", 1);
    out_uint(o, (uint64_t)tm.tm_hour, 2);
    out_mem(o, ":", 1);
    out_uint(o, (uint64_t)tm.tm_min, 2);
    out_mem(o, ":", 1);
    out_uint(o, (uint64_t)tm.tm_sec, 2);
    out_mem(o, ".", 1);
    out_uint(o, (uint64_t)ms, 3);
    out_mem(o, off < 0 ? "-" : "+", 1);
    if (off < 0)
        off = -off;
    out_uint(o, (uint64_t)(off / 3600), 2);
    out_mem(o, ":", 1);
    out_uint(o, (uint64_t)((off % 3600) / 60), 2);
}

/* NUL-terminate (cut when needed) and return the length needed. */
static size_t out_end(struct out *o)
{
    if (o->size)
        o->buf[o->len < o->size ? o->len : o->size - 1] = '\0';
    return o->len;
}

size_t records_iso_time(double t, char *buf, size_t size)
{
    struct out o = {buf, size, 0};
    out_iso_time(&o, t);
    return out_end(&o);
}

size_t records_format_task(char *buf, size_t size, const struct task_record *r)
{
    struct out o = {buf, size, 0};
    out_str(&o, "[cluster-task ");
    if (r->pegasus_id && r->pegasus_id[0]) {
        out_str(&o, "id=");
        out_clean(&o, r->pegasus_id, 99);
        out_str(&o, ", ");
    }
    out_str(&o, "name=");
    const char *bracket = r->instance ? strrchr(r->name, '[') : NULL;
    if (bracket) { /* "a[i]": the array's name cleaned, "[i]" whole */
        size_t len = (size_t)(bracket - r->name);
        out_clean(&o, r->name, len < 1010 ? len : 1010);
        out_str(&o, bracket);
    } else
        out_clean(&o, r->name, 1023);
    out_str(&o, ", start=\"");
    out_iso_time(&o, r->start);
    out_str(&o, "\", duration=");
    out_fixed3(&o, r->duration);
    out_str(&o, ", status=");
    out_int(&o, r->status);
    out_str(&o, ", app=\"");
    out_clean(&o, r->app, 1023);
    out_str(&o, "\", hostname=\"");
    out_clean(&o, r->hostname, 255);
    out_str(&o, "\", slot=");
    out_int(&o, r->slot);
    out_str(&o, ", cpus=");
    out_uint(&o, r->cpus, 1);
    out_str(&o, ", memory=");
    out_uint(&o, r->memory_mb, 1);
    if (r->gpus) {
        out_str(&o, ", gpus=");
        out_uint(&o, r->gpus, 1);
    }
    out_str(&o, "]\n");
    return out_end(&o);
}

size_t records_format_summary(char *buf, size_t size, const struct summary_record *s)
{
    struct out o = {buf, size, 0};
    out_str(&o, "[cluster-summary stat=\"");
    out_str(&o, s->failed ? "failed" : "ok");
    out_str(&o, "\", tasks=");
    out_uint(&o, s->tasks, 1);
    out_str(&o, ", submitted=");
    out_uint(&o, s->submitted, 1);
    out_str(&o, ", succeeded=");
    out_uint(&o, s->succeeded, 1);
    out_str(&o, ", failed=");
    out_uint(&o, s->failed_tasks, 1);
    out_str(&o, ", extra=");
    out_uint(&o, s->extra, 1);
    out_str(&o, ", start=\"");
    out_iso_time(&o, s->start);
    out_str(&o, "\", duration=");
    out_fixed3(&o, s->duration);
    out_str(&o, ", pid=");
    out_int(&o, s->pid);
    out_str(&o, ", app=\"");
    out_clean(&o, s->app, 1023);
    out_str(&o, "\", runtime=");
    out_fixed3(&o, s->runtime);
    out_str(&o, ", slots=");
    out_uint(&o, s->slots, 1);
    out_str(&o, ", cpus=");
    out_uint(&o, s->cpus, 1);
    if (s->gpus) {
        out_str(&o, ", gpus=");
        out_uint(&o, s->gpus, 1);
    }
    out_str(&o, "]\n");
    return out_end(&o);
}
