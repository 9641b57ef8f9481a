/* rescue.h - the rescue log: which tasks have finished successfully.
 *
 * Format (PMC manual "Rescue Files", COMPAT.md "Rescue file"): we write
 * "DONE name\n", PMC writes "\nDONE name"; both are read.  Blank lines and
 * lines starting with # are ignored.  A torn or garbage tail is ignored
 * with a warning (its tasks rerun); a bad record before good ones, or an
 * unknown task, is an error naming file and line.
 *
 * Task arrays (docs/task-arrays.md "The rescue log"): an instance is
 * "DONE sim[42]", a run of instances of one array "DONE sim[0-9999]"
 * (inclusive; decimal without a leading zero, as in the DAG).  A name is a
 * plain task's first (a plain task may be named "job[3]" when there is no
 * array job); only otherwise is "A[...]" read as instances of an array A, an
 * error "PATH:LINE: bad instance NAME: WHY" when it is no index or range of
 * A's (outside A's range, reversed, a leading zero), except in the torn tail.
 * Done instances are a bitset, `inst_done`: bit k (word k / 64, bit k % 64)
 * is instance id dag->ntasks + k (dag_instance_id()), dag->ninstances bits,
 * the caller's; NULL exactly when dag->ninstances is 0.  A DAG without
 * arrays gets the log it got before arrays, byte for byte.
 *
 * Writing: the carried-over set goes to PATH.tmp, fsync, rename over PATH,
 * so the old log is never half-written.  Then one writer thread appends
 * records with group commit, writes at least RESCUE_COMMIT_USEC and
 * fdatasyncs at least RESCUE_SYNC_USEC apart under load, at once when idle
 * or when someone waits.  So a record survives the process's death within
 * RESCUE_COMMIT_USEC plus a sync, and the node's crash within
 * RESCUE_SYNC_USEC plus two.  Details: docs/modules.md "rescue".
 */
#ifndef PMC_RESCUE_H
#define PMC_RESCUE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/dag.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RESCUE_BATCH_MAX 65536    /* ids per write()+fdatasync() (before coalescing) */
#define RESCUE_FLUSH_USEC 1000000 /* longest sleep of an idle writer (a safety net) */
#define RESCUE_COMMIT_USEC 5000   /* least time between two writes under load */
#define RESCUE_SYNC_USEC 50000    /* least time between two fdatasync() under load */

/* Set done[t] = 1 (done: dag->ntasks zeroed bytes) for each plain task and
 * the bit of each instance (inst_done: the zeroed bitset of the banner, NULL
 * without arrays) the log at path records; *ndone = distinct plain tasks and
 * instances marked.  A missing file: 0.  A torn or garbage tail is warned
 * of and counted in *ntorn (may be NULL).  -1 with err, done[] and
 * inst_done[] zeroed and *ndone 0: "PATH:LINE: bad record", "...: unknown
 * task NAME" (even at the end), "...: bad instance NAME: WHY" (likewise),
 * "...: not a rescue log (no DONE record); it is left as it is" (text no
 * crash leaves, such as the DAG), "PATH: <strerror>".  Reentrant; maps the
 * file, no allocation per line; a range record costs one word per 64
 * instances. */
int rescue_read(const char *path, const struct dag *dag, uint8_t *done, uint64_t *inst_done,
                uint32_t *ndone, uint32_t *ntorn, struct pmc_error *err);

/* Replace the log with exactly the tasks with done[t] != 0 and the
 * instances set in inst_done (NULL without arrays), as rescue_writer_open()
 * writes it, with no writer (to take records back
 * after the writer closed).  0, or -1 with err: path unchanged if it failed
 * before the rename, else holding the new log.  The caller holds the DAG
 * lock.  lock_fd (NULL: not wanted) gets a descriptor holding the file's
 * lock, for the caller to close, or -1. */
int rescue_replace(const char *path, const struct dag *dag, const uint8_t *done,
                   const uint64_t *inst_done, int *lock_fd, struct pmc_error *err);

struct rescue_writer;

/* Could rescue_writer_open() create PATH.tmp and replace path?  Creates
 * and removes PATH.tmp, changes nothing at path.  0, or -1 with err
 * ("PATH: REASON").  A check, not a guarantee. */
int rescue_check_writable(const char *path, struct pmc_error *err);

/* Write the log with exactly the tasks with done[t] != 0 (id order) and
 * the instances set in inst_done (NULL without arrays; one record per
 * maximal run of one array, id order) (PATH.tmp, fsync, rename, directory
 * fsync; a stale PATH.tmp is replaced), then start the writer thread.  done
 * and inst_done are copied (the writer keeps a byte per plain task and a
 * bit per instance, to write the log again: rescue_writer_path()), the
 * caller keeps them.  dag must outlive the writer.  NULL with err
 * ("PATH.tmp: write failed: REASON"): path unchanged, unless the directory
 * sync after the rename failed. */
struct rescue_writer *rescue_writer_open(const char *path, const struct dag *dag,
                                         const uint8_t *done, const uint64_t *inst_done,
                                         struct pmc_error *err);

/* Queue "DONE name\n" for task t, a plain task or an instance id
 * (dag_instance_id()): no lock, no allocation, a wake-up only when the
 * writer sleeps.  Waits while RESCUE_BATCH_MAX records are queued; drops
 * nothing unless the log failed.  The writer writes the instances of each
 * batch sorted, a run of consecutive ones of one array as one record.
 * Single producer thread. */
void rescue_writer_append(struct rescue_writer *w, dag_task_t t);

/* True once a write() or fdatasync() failed: stop dispatching, fail the
 * run.  rescue_writer_error(): the first error's text (logged), or "".
 * Any thread. */
bool rescue_writer_failed(const struct rescue_writer *w);
const char *rescue_writer_error(const struct rescue_writer *w);

/* What the writer did since open, for tests and benchmarks.  Any thread;
 * exact after rescue_writer_flush(). */
struct rescue_writer_stats {
    uint64_t syncs;        /* batches made durable, one fdatasync() each */
    uint64_t writes;       /* batches written (>= syncs) */
    uint32_t unsynced;     /* records taken but not durable (0 after failure) */
    uint64_t late_wakeups; /* waits ended by timeout though their event came:
                              lost wake-ups, 0 on a correct protocol */
    uint64_t cpu_ns;       /* the writer thread's CPU time, ns; 0 if unknown */
};
void rescue_writer_get_stats(const struct rescue_writer *w, struct rescue_writer_stats *st);

/* Wait until every queued record is synced (or dropped after a failure),
 * then check the path (rescue_writer_path()).  0, or -1 if the log failed.
 * The append() thread. */
int rescue_writer_flush(struct rescue_writer *w);

/* Is the log's file still at the path (checked at each sync and flush)?
 * KEPT: yes.  WRITTEN_AGAIN: it was deleted and written again there with
 * every task done so far (link(2), never replacing a newcomer).  LOST:
 * replaced, or could not be rewritten; final.  Each change is logged once;
 * the last two must fail the run.  Any thread; exact after a flush. */
enum rescue_path { RESCUE_PATH_KEPT, RESCUE_PATH_WRITTEN_AGAIN, RESCUE_PATH_LOST };
enum rescue_path rescue_writer_path(const struct rescue_writer *w);

/* Flush, stop the thread, close the file, free.  Returns what the last flush
 * returned (0 or -1).  NULL is a no-op returning 0. */
int rescue_writer_close(struct rescue_writer *w);

/* rescue_writer_close(), and *lock_fd gets a descriptor keeping the file's
 * lock, for the caller to close; -1 when w is NULL or dup fails. */
int rescue_writer_close_locked(struct rescue_writer *w, int *lock_fd);

#ifdef __cplusplus
}
#endif
#endif
