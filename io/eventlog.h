/* eventlog.h - the Pegasus monitoring files: jobstate.log (PMC's
 * JobstateLog), DAGFILE.dagman.out (PMC's DAGManLog, for pegasus-monitord)
 * and DAGFILE.resource (PMC's log_resources) (COMPAT.md "Other files"; PMC
 * manual --jobstate-log, --monitord-hack, --no-resource-log).  The lines
 * each event writes: docs/modules.md "eventlog".
 *
 * Buffering: each log buffers whole lines (64 KiB) and writes them on
 * overflow, *_flush() and *_close(), so a reader never sees a torn line
 * unless the disk fills.  The master flushes once per scheduling round.
 *
 * Errors: every writing function returns 0, or -1 with err (may be NULL)
 * "PATH: <strerror>".  Errors are sticky: later calls return the same and
 * write nothing; the log must still be closed.  On a NULL log every
 * function is a no-op returning 0.  An event allocates nothing and makes
 * no system call unless the buffer is full.
 *
 * Thread-safety: none; each log belongs to the master's scheduler thread.
 */
#ifndef PMC_EVENTLOG_H
#define PMC_EVENTLOG_H

#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

enum wf_event {
    WF_TASK_QUEUED,      /* the attempt entered the ready queue (got its SEQ) */
    WF_TASK_EXECUTE,     /* the attempt's process started on a node */
    WF_TASK_SUCCESS,     /* the attempt finished with exit code 0 */
    WF_TASK_FAILURE,     /* the attempt failed (exit code, signal, I/O error) */
    WF_WORKFLOW_START,   /* first event of a run */
    WF_WORKFLOW_SUCCESS, /* last event of a run that succeeded */
    WF_WORKFLOW_FAILURE, /* last event of a run that failed or was aborted */
};

/* ---- jobstate.log -------------------------------------------------------- */

struct jobstate_log;

/* Open path for appending (created 0644, never truncated).  NULL with err. */
struct jobstate_log *jobstate_log_open(const char *path, struct pmc_error *err);

/* Buffer event ev's lines.  task_name (non-NULL) and seq: WF_TASK_* only;
 * exitcode: SUCCESS/FAILURE only.  0, or -1 with err. */
int jobstate_log_event(struct jobstate_log *jl, enum wf_event ev, const char *task_name,
                       uint32_t seq, int exitcode, struct pmc_error *err);

/* The same, stamped with `when` (seconds since the epoch; <= 0: now). */
int jobstate_log_event_at(struct jobstate_log *jl, enum wf_event ev, const char *task_name,
                          uint32_t seq, int exitcode, double when, struct pmc_error *err);

/* Write the buffered lines.  0, or -1 with err. */
int jobstate_log_flush(struct jobstate_log *jl, struct pmc_error *err);

/* Flush, close and free (also after an error).  0, or -1 with err if the
 * log had failed, the flush or close failed, or the file is no longer at
 * path ("PATH was deleted or replaced during the run: ...").  All three
 * logs' *_close() alike. */
int jobstate_log_close(struct jobstate_log *jl, struct pmc_error *err);

/* ---- DAGFILE.dagman.out -------------------------------------------------- */

struct dagman_log;

/* Create or truncate path (0644); dag_path's base name goes in the
 * "Parsing" line.  NULL with err. */
struct dagman_log *dagman_log_open(const char *path, const char *dag_path, struct pmc_error *err);

/* As jobstate_log_event(), with one-second resolution. */
int dagman_log_event(struct dagman_log *dl, enum wf_event ev, const char *task_name, uint32_t seq,
                     int exitcode, struct pmc_error *err);
/* The same, dated `when` (seconds since the epoch; <= 0: now). */
int dagman_log_event_at(struct dagman_log *dl, enum wf_event ev, const char *task_name,
                        uint32_t seq, int exitcode, double when, struct pmc_error *err);
int dagman_log_flush(struct dagman_log *dl, struct pmc_error *err);
int dagman_log_close(struct dagman_log *dl, struct pmc_error *err);

/* ---- DAGFILE.resource ---------------------------------------------------- */

struct resource_log;

/* Open path for appending (created 0644, never truncated).  NULL with err. */
struct resource_log *resource_log_open(const char *path, struct pmc_error *err);

/* Buffer "TS,SLOTS,CPUS,MEM,HOSTNAME\n" (hostname "*" for the totals).
 * timestamp is seconds since the epoch.  0, or -1 with err. */
int resource_log_write(struct resource_log *rl, double timestamp, uint32_t slots_free,
                       uint32_t cpus_free, uint64_t memory_free_mb, const char *hostname,
                       struct pmc_error *err);
/* The same with a sixth column, free GPUs (when the hosts have GPUs). */
int resource_log_write_gpus(struct resource_log *rl, double timestamp, uint32_t slots_free,
                            uint32_t cpus_free, uint64_t memory_free_mb, const char *hostname,
                            uint32_t gpus_free, struct pmc_error *err);
int resource_log_flush(struct resource_log *rl, struct pmc_error *err);
int resource_log_close(struct resource_log *rl, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
