/* eventlog.c - jobstate.log, DAGFILE.dagman.out and DAGFILE.resource; see
 * eventlog.h for the formats (COMPAT.md "Other files", modelled on PMC's
 * JobstateLog, DAGManLog and Master::log_resources in master.cpp).
 *
 * The three logs share one writer, struct linebuf: a file descriptor and a
 * fixed 64 KiB buffer that only ever holds whole lines.  An event is
 * formatted straight into the free end of the buffer with one snprintf; if
 * it does not fit, the buffer is written out and the event formatted again
 * at its start; an event longer than the whole buffer (a task name of tens of
 * KiB) is formatted into a heap block and written on its own.  Invariant:
 * buf[0, len) is a sequence of complete lines not yet written, so every
 * write(2) covers whole lines.
 *
 * Errors are sticky (`failed`, with the text kept in `error`): once a write
 * has failed the log may hold a partial line, and writing more after it would
 * only interleave garbage, so the log stops.
 *
 * Thread-safety: none; the master's scheduler thread owns every log.
 */
#include "io/eventlog.h"
#include "io/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LINEBUF_SIZE (64u << 10) /* bytes; whole lines only */
#define TS_LEN 32                /* "1712345678.123456" and its NUL, with room */

struct linebuf {
    int fd;
    bool failed;
    size_t len; /* buf[0, len): complete lines not yet written */
    char *path;
    struct pmc_error error; /* the first error, once failed */
    char buf[LINEBUF_SIZE];
};

/* Each log starts with its linebuf: lb_open() allocates the whole log and
 * lb_close() frees it through that first member. */
struct jobstate_log {
    struct linebuf lb;
};

struct dagman_log {
    struct linebuf lb;
    char *dagname; /* base name of the DAG file */
    int pid;
    time_t date_sec; /* the second date[] was formatted for */
    char date[TS_LEN];
};

struct resource_log {
    struct linebuf lb;
};

/* ---- the line buffer ----------------------------------------------------- */

/* The log failed with errno e: keep "PATH: <strerror>", copy it to err,
 * return -1 with errno e. */
static int lb_fail(struct linebuf *lb, int e, struct pmc_error *err)
{
    if (!lb->failed) {
        pmc_errorf(&lb->error, "%s: %s", lb->path, strerror(e));
        lb->failed = true;
        lb->len = 0;
    }
    errno = e;
    return pmc_errorf(err, "%s", lb->error.text);
}

/* Allocate a log of size bytes whose first member is the linebuf, and open
 * path.  A NULL return leaves nothing open and nothing allocated. */
static void *lb_open(size_t size, const char *path, int flags, struct pmc_error *err)
{
    struct linebuf *lb = calloc(1, size);
    if (!lb) {
        pmc_errorf(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    lb->path = strdup(path);
    if (!lb->path) {
        pmc_errorf(err, "%s: %s", path, strerror(errno));
        free(lb);
        return NULL;
    }
    lb->fd = open(path, flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (lb->fd < 0) {
        pmc_errorf(err, "%s: %s", path, strerror(errno));
        free(lb->path);
        free(lb);
        return NULL;
    }
    return lb;
}

static int lb_flush(struct linebuf *lb, struct pmc_error *err)
{
    if (lb->failed)
        return pmc_errorf(err, "%s", lb->error.text);
    int e = fdio_write_all(lb->fd, lb->buf, lb->len);
    if (e)
        return lb_fail(lb, e, err);
    lb->len = 0;
    return 0;
}

/* An event longer than the whole buffer: format it on the heap, write it. */
static int lb_write_long(struct linebuf *lb, size_t n, struct pmc_error *err, const char *fmt,
                         va_list ap)
{
    char *p = malloc(n + 1);
    if (!p)
        return lb_fail(lb, errno, err);
    vsnprintf(p, n + 1, fmt, ap);
    int e = fdio_write_all(lb->fd, p, n);
    free(p);
    return e ? lb_fail(lb, e, err) : 0;
}

/* Append one event (whole lines) to the buffer, writing the buffer out
 * first when the event does not fit. */
static int lb_printf(struct linebuf *lb, struct pmc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int lb_printf(struct linebuf *lb, struct pmc_error *err, const char *fmt, ...)
{
    if (lb->failed)
        return pmc_errorf(err, "%s", lb->error.text);
    va_list ap, again;
    va_start(ap, fmt);
    va_copy(again, ap);
    size_t room = LINEBUF_SIZE - lb->len;
    int n = vsnprintf(lb->buf + lb->len, room, fmt, ap);
    va_end(ap);
    int rc = 0;
    if (n < 0) {
        rc = lb_fail(lb, errno ? errno : EINVAL, err);
    } else if ((size_t)n < room) {
        lb->len += (size_t)n; /* the common case: it fit */
    } else if (lb_flush(lb, err) < 0) {
        rc = -1;
    } else if ((size_t)n < LINEBUF_SIZE) {
        lb->len = (size_t)vsnprintf(lb->buf, LINEBUF_SIZE, fmt, again);
    } else {
        rc = lb_write_long(lb, (size_t)n, err, fmt, again);
    }
    va_end(again);
    return rc;
}

/* Flush, close, free; the first error wins.  A log no longer at its path
 * (deleted, or another file renamed over it, while the run went:
 * fdio_still_at()) is an error too: its lines are not where they are
 * looked for. */
static int lb_close(struct linebuf *lb, struct pmc_error *err)
{
    if (!lb->failed)
        lb_flush(lb, NULL);
    if (!lb->failed && !fdio_still_at(lb->fd, lb->path)) {
        pmc_errorf(&lb->error,
                   "%s was deleted or replaced during the run: its lines since then "
                   "are lost",
                   lb->path);
        lb->failed = true;
    }
    if (close(lb->fd) < 0 && errno != EINTR)
        lb_fail(lb, errno, NULL);
    int rc = lb->failed ? pmc_errorf(err, "%s", lb->error.text) : 0;
    free(lb->path);
    free(lb);
    return rc;
}

static int bad_event(const struct linebuf *lb, enum wf_event ev, struct pmc_error *err)
{
    errno = EINVAL;
    return pmc_errorf(err, "%s: invalid event %d or missing task name", lb->path, (int)ev);
}

static bool is_task_event(enum wf_event ev)
{
    return ev == WF_TASK_QUEUED || ev == WF_TASK_EXECUTE || ev == WF_TASK_SUCCESS ||
           ev == WF_TASK_FAILURE;
}

/* ---- jobstate.log -------------------------------------------------------- */

/* Seconds since the epoch with 6 decimals, as PMC's "%0.6lf" of
 * gettimeofday(), but from integers for the current time (no rounding of a
 * 16-digit double); a given time (when > 0) is printed to the microsecond. */
static void epoch_stamp(char ts[TS_LEN], double when)
{
    if (when > 0) {
        long long us = (long long)(when * 1e6 + 0.5);
        snprintf(ts, TS_LEN, "%lld.%06lld", us / 1000000, us % 1000000);
        return;
    }
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    snprintf(ts, TS_LEN, "%lld.%06ld", (long long)now.tv_sec, now.tv_nsec / 1000);
}

struct jobstate_log *jobstate_log_open(const char *path, struct pmc_error *err)
{
    return lb_open(sizeof(struct jobstate_log), path, O_APPEND, err);
}

static int jobstate_task(struct linebuf *lb, const char *ts, const char *state, const char *name,
                         uint32_t seq, struct pmc_error *err)
{
    return lb_printf(lb, err, "%s %s %s %" PRIu32 ".0 - - %" PRIu32 "\n", ts, name, state, seq,
                     seq);
}

static int jobstate_end(struct linebuf *lb, const char *ts, const char *result, const char *name,
                        uint32_t seq, int exitcode, struct pmc_error *err)
{
    return lb_printf(lb, err,
                     "%s %s JOB_TERMINATED %" PRIu32 ".0 - - %" PRIu32 "\n"
                     "%s %s %s %d - - %" PRIu32 "\n",
                     ts, name, seq, seq, ts, name, result, exitcode, seq);
}

int jobstate_log_event(struct jobstate_log *jl, enum wf_event ev, const char *task_name,
                       uint32_t seq, int exitcode, struct pmc_error *err)
{
    return jobstate_log_event_at(jl, ev, task_name, seq, exitcode, 0, err);
}

int jobstate_log_event_at(struct jobstate_log *jl, enum wf_event ev, const char *task_name,
                          uint32_t seq, int exitcode, double when, struct pmc_error *err)
{
    if (!jl)
        return 0;
    if (is_task_event(ev) && !task_name)
        return bad_event(&jl->lb, ev, err);
    char ts[TS_LEN];
    epoch_stamp(ts, when);
    struct linebuf *lb = &jl->lb;
    switch (ev) {
    case WF_TASK_QUEUED:
        return jobstate_task(lb, ts, "SUBMIT", task_name, seq, err);
    case WF_TASK_EXECUTE:
        return jobstate_task(lb, ts, "EXECUTE", task_name, seq, err);
    case WF_TASK_SUCCESS:
        return jobstate_end(lb, ts, "JOB_SUCCESS", task_name, seq, exitcode, err);
    case WF_TASK_FAILURE:
        return jobstate_end(lb, ts, "JOB_FAILURE", task_name, seq, exitcode, err);
    case WF_WORKFLOW_START:
        return lb_printf(lb, err, "%s INTERNAL *** PMC_STARTED ***\n", ts);
    case WF_WORKFLOW_SUCCESS:
        return lb_printf(lb, err, "%s INTERNAL *** PMC_FINISHED 0 ***\n", ts);
    case WF_WORKFLOW_FAILURE:
        return lb_printf(lb, err, "%s INTERNAL *** PMC_FINISHED 1 ***\n", ts);
    }
    return bad_event(lb, ev, err);
}

int jobstate_log_flush(struct jobstate_log *jl, struct pmc_error *err)
{
    return jl ? lb_flush(&jl->lb, err) : 0;
}

int jobstate_log_close(struct jobstate_log *jl, struct pmc_error *err)
{
    return jl ? lb_close(&jl->lb, err) : 0;
}

/* ---- DAGFILE.dagman.out -------------------------------------------------- */

struct dagman_log *dagman_log_open(const char *path, const char *dag_path, struct pmc_error *err)
{
    const char *slash = strrchr(dag_path, '/');
    char *dagname = strdup(slash ? slash + 1 : dag_path);
    if (!dagname) {
        pmc_errorf(err, "%s: %s", path, strerror(errno));
        return NULL;
    }
    struct dagman_log *dl = lb_open(sizeof(struct dagman_log), path, O_TRUNC, err);
    if (!dl) {
        free(dagname);
        return NULL;
    }
    dl->dagname = dagname;
    dl->pid = (int)getpid();
    dl->date_sec = (time_t)-1;
    return dl;
}

/* "mm/dd/yy hh:mm:ss" in local time of `when` (<= 0: now), formatted once
 * per second.  The two-digit year is DAGMan's format (and PMC's), not an
 * oversight. */
static const char *dagman_date(struct dagman_log *dl, double when)
{
    time_t now = when > 0 ? (time_t)when : time(NULL);
    if (now != dl->date_sec) {
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(dl->date, sizeof dl->date, "%m/%d/%y %H:%M:%S", &tm);
        dl->date_sec = now;
    }
    return dl->date;
}

static int dagman_start(struct dagman_log *dl, const char *d, struct pmc_error *err)
{
    return lb_printf(&dl->lb, err,
                     "%s This is a fake DAGMan log file generated by PMC for the purpose of "
                     "tricking monitord\n"
                     "%s ** condor_scheduniv_exec.0.0 (CONDOR_DAGMAN) STARTING UP\n"
                     "%s ** PID = %d\n"
                     "%s Parsing %s ...\n",
                     d, d, d, dl->pid, d, dl->dagname);
}

static int dagman_exit(struct dagman_log *dl, const char *d, int status, struct pmc_error *err)
{
    return lb_printf(&dl->lb, err,
                     "%s **** condor_scheduniv_exec.0.0 (condor_DAGMAN) pid %d "
                     "EXITING WITH STATUS %d\n",
                     d, dl->pid, status);
}

static int dagman_task(struct dagman_log *dl, const char *d, enum wf_event ev, const char *name,
                       uint32_t seq, int exitcode, struct pmc_error *err)
{
    struct linebuf *lb = &dl->lb;
    switch (ev) {
    case WF_TASK_QUEUED:
        return lb_printf(lb, err,
                         "%s Submitting Condor Node %s job(s)...\n"
                         "%s Event: ULOG_SUBMIT for Condor Node %s (%" PRIu32 ".0)\n",
                         d, name, d, name, seq);
    case WF_TASK_EXECUTE:
        return lb_printf(lb, err, "%s Event: ULOG_EXECUTE for Condor Node %s (%" PRIu32 ".0)\n", d,
                         name, seq);
    case WF_TASK_SUCCESS:
        return lb_printf(lb, err,
                         "%s Event: ULOG_JOB_TERMINATED for Condor Node %s (%" PRIu32 ".0)\n"
                         "%s Node %s job proc (%" PRIu32 ".0) completed successfully.\n",
                         d, name, seq, d, name, seq);
    default: /* WF_TASK_FAILURE */
        return lb_printf(lb, err,
                         "%s Event: ULOG_JOB_TERMINATED for Condor Node %s (%" PRIu32 ".0)\n"
                         "%s Node %s job proc (%" PRIu32 ".0) failed with status %d.\n",
                         d, name, seq, d, name, seq, exitcode);
    }
}

int dagman_log_event(struct dagman_log *dl, enum wf_event ev, const char *task_name, uint32_t seq,
                     int exitcode, struct pmc_error *err)
{
    return dagman_log_event_at(dl, ev, task_name, seq, exitcode, 0, err);
}

int dagman_log_event_at(struct dagman_log *dl, enum wf_event ev, const char *task_name,
                        uint32_t seq, int exitcode, double when, struct pmc_error *err)
{
    if (!dl)
        return 0;
    if (is_task_event(ev) && !task_name)
        return bad_event(&dl->lb, ev, err);
    const char *d = dagman_date(dl, when);
    switch (ev) {
    case WF_TASK_QUEUED:
    case WF_TASK_EXECUTE:
    case WF_TASK_SUCCESS:
    case WF_TASK_FAILURE:
        return dagman_task(dl, d, ev, task_name, seq, exitcode, err);
    case WF_WORKFLOW_START:
        return dagman_start(dl, d, err);
    case WF_WORKFLOW_SUCCESS:
        return dagman_exit(dl, d, 0, err);
    case WF_WORKFLOW_FAILURE:
        return dagman_exit(dl, d, 1, err);
    }
    return bad_event(&dl->lb, ev, err);
}

int dagman_log_flush(struct dagman_log *dl, struct pmc_error *err)
{
    return dl ? lb_flush(&dl->lb, err) : 0;
}

int dagman_log_close(struct dagman_log *dl, struct pmc_error *err)
{
    if (!dl)
        return 0;
    free(dl->dagname);
    return lb_close(&dl->lb, err);
}

/* ---- DAGFILE.resource ---------------------------------------------------- */

struct resource_log *resource_log_open(const char *path, struct pmc_error *err)
{
    return lb_open(sizeof(struct resource_log), path, O_APPEND, err);
}

int resource_log_write(struct resource_log *rl, double timestamp, uint32_t slots_free,
                       uint32_t cpus_free, uint64_t memory_free_mb, const char *hostname,
                       struct pmc_error *err)
{
    if (!rl)
        return 0;
    if (!hostname) {
        errno = EINVAL;
        return pmc_errorf(err, "%s: missing host name", rl->lb.path);
    }
    return lb_printf(&rl->lb, err, "%f,%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%s\n", timestamp,
                     slots_free, cpus_free, memory_free_mb, hostname);
}

int resource_log_write_gpus(struct resource_log *rl, double timestamp, uint32_t slots_free,
                            uint32_t cpus_free, uint64_t memory_free_mb, const char *hostname,
                            uint32_t gpus_free, struct pmc_error *err)
{
    if (!rl)
        return 0;
    if (!hostname) {
        errno = EINVAL;
        return pmc_errorf(err, "%s: missing host name", rl->lb.path);
    }
    return lb_printf(&rl->lb, err, "%f,%" PRIu32 ",%" PRIu32 ",%" PRIu64 ",%s,%" PRIu32 "\n",
                     timestamp, slots_free, cpus_free, memory_free_mb, hostname, gpus_free);
}

int resource_log_flush(struct resource_log *rl, struct pmc_error *err)
{
    return rl ? lb_flush(&rl->lb, err) : 0;
}

int resource_log_close(struct resource_log *rl, struct pmc_error *err)
{
    return rl ? lb_close(&rl->lb, err) : 0;
}
