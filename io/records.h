/* records.h - the provenance records that pegasus-exitcode and
 * pegasus-monitord parse from stdout (COMPAT.md "Output records"):
 *
 *   [cluster-task id=N, name=NAME, start="2012-09-25T16:41:22.734-04:00",
 *    duration=1.234, status=0, app="/bin/echo", hostname="node1", slot=3,
 *    cpus=1, memory=0]
 *   [cluster-summary stat="ok", tasks=4, submitted=4, succeeded=4, failed=0,
 *    extra=0, start="...", duration=5.000, pid=123, app="/path/pmc-hybrid",
 *    runtime=3.210, slots=2, cpus=2]
 *
 * Each is one line.  Values never contain ']' or '"' (replaced by '_'), so a
 * reader can split on them.  `id=N, ` appears only for tasks with a #@ line;
 * `, gpus=N` (a pmc-hybrid addition) ends a task record only for a task that
 * asked for GPUs, and the summary only when the hosts have GPUs, so PMC's
 * records stay byte for byte what they were.
 *
 * Thread-safety: all functions are reentrant.
 */
#ifndef PMC_RECORDS_H
#define PMC_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Local time t (seconds since the Unix epoch) as ISO 8601 with milliseconds
 * and numeric UTC offset: "2012-09-25T16:41:22.734-04:00".  buf should hold
 * 32 bytes.  Returns the length written. */
size_t records_iso_time(double t, char *buf, size_t size);

struct task_record {
    const char *pegasus_id; /* "" or NULL: no id= field */
    const char *name;       /* ']' and '"' become '_' (PMC's), but for an instance */
    bool instance;          /* a task array's instance: name "a[i]" is printed whole */
    double start;           /* seconds since the epoch */
    double duration;        /* seconds */
    int status;             /* raw wait status */
    const char *app;        /* argv[0] */
    const char *hostname;
    int slot; /* the rank that ran the task */
    uint32_t cpus;
    uint32_t memory_mb;
    uint32_t gpus; /* 0: no gpus= field */
};

/* Format the record with its trailing newline into buf.  Returns the length
 * it needed (like snprintf: when >= size the output was cut). */
size_t records_format_task(char *buf, size_t size, const struct task_record *r);

struct summary_record {
    bool failed;           /* stat="failed" instead of "ok" */
    uint32_t tasks;        /* tasks in the DAG */
    uint32_t submitted;    /* attempts dispatched in this run */
    uint32_t succeeded;    /* tasks that succeeded in this run */
    uint32_t failed_tasks; /* tasks that failed after all their tries */
    uint32_t extra;        /* attempts beyond each task's first (retries) */
    double start;          /* seconds since the epoch */
    double duration;       /* wall time, seconds */
    int pid;
    const char *app;
    double runtime; /* sum of task durations, seconds */
    uint32_t slots; /* tasks that could run at once (total CPUs) */
    uint32_t cpus;  /* CPUs of all nodes */
    uint32_t gpus;  /* GPUs of all nodes; 0: no gpus= field */
};

size_t records_format_summary(char *buf, size_t size, const struct summary_record *s);

#ifdef __cplusplus
}
#endif
#endif
