/* records.c - formatting of cluster-task and cluster-summary records; see
 * records.h.  The layout is PMC's (pegasus-mpi-cluster worker.cpp and
 * master.cpp, write_cluster_task / write_cluster_summary). */
#include "io/records.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

size_t records_iso_time(double t, char *buf, size_t size)
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
    char sign = off < 0 ? '-' : '+';
    if (off < 0)
        off = -off;
    int n = snprintf(buf, size, "%04d-%02d-%02dT%02d:%02d:%02d.%03d%c%02ld:%02ld",
                     tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ms, sign, off / 3600, (off % 3600) / 60);
    return n < 0 ? 0 : (size_t)n;
}

/* Copy s into out (at most size-1 bytes), replacing ']' and '"'. */
static const char *records_clean(const char *s, char *out, size_t size)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < size; i++)
        out[i] = (s[i] == ']' || s[i] == '"') ? '_' : s[i];
    out[i] = '\0';
    return out;
}

size_t records_format_task(char *buf, size_t size, const struct task_record *r)
{
    char date[40], id[128], name[1024], app[1024], host[256];
    records_iso_time(r->start, date, sizeof date);
    id[0] = '\0';
    if (r->pegasus_id && r->pegasus_id[0]) {
        char clean[100];
        snprintf(id, sizeof id, "id=%s, ", records_clean(r->pegasus_id, clean, sizeof clean));
    }
    char gpus[24] = "";
    if (r->gpus)
        snprintf(gpus, sizeof gpus, ", gpus=%u", r->gpus);
    int n = snprintf(buf, size,
                     "[cluster-task %sname=%s, start=\"%s\", duration=%.3f, status=%d, "
                     "app=\"%s\", hostname=\"%s\", slot=%d, cpus=%u, memory=%u%s]\n",
                     id, records_clean(r->name, name, sizeof name), date, r->duration, r->status,
                     records_clean(r->app, app, sizeof app),
                     records_clean(r->hostname, host, sizeof host), r->slot, r->cpus, r->memory_mb,
                     gpus);
    return n < 0 ? 0 : (size_t)n;
}

size_t records_format_summary(char *buf, size_t size, const struct summary_record *s)
{
    char date[40], app[1024];
    records_iso_time(s->start, date, sizeof date);
    char gpus[24] = "";
    if (s->gpus)
        snprintf(gpus, sizeof gpus, ", gpus=%u", s->gpus);
    int n = snprintf(buf, size,
                     "[cluster-summary stat=\"%s\", tasks=%u, submitted=%u, succeeded=%u, "
                     "failed=%u, extra=%u, start=\"%s\", duration=%.3f, pid=%d, app=\"%s\", "
                     "runtime=%.3f, slots=%u, cpus=%u%s]\n",
                     s->failed ? "failed" : "ok", s->tasks, s->submitted, s->succeeded,
                     s->failed_tasks, s->extra, date, s->duration, s->pid,
                     records_clean(s->app, app, sizeof app), s->runtime, s->slots, s->cpus, gpus);
    return n < 0 ? 0 : (size_t)n;
}
