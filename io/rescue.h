/* rescue.h - the rescue log: which tasks have finished successfully.
 *
 * Format (PMC manual "Rescue Files", COMPAT.md "Rescue file"): records
 * "DONE name".  pmc-hybrid writes "DONE name\n"; PMC writes "\nDONE name"
 * (newline first); both are read.  Blank lines and lines starting with # are
 * ignored.
 *
 * Reading: only complete records that name known tasks count.  A torn tail (a
 * last line without a newline in a file of our style, or a last line that is
 * not a valid record) is reported as a warning, ignored, and is gone after the
 * rewrite; the task reruns.  In a PMC-style file (first byte '\n') a last
 * record without newline is complete when it is a valid record naming a known
 * task.  A bad record followed by good ones, or a DONE naming a task the DAG
 * does not have, is an error naming file and line.
 *
 * Writing: rescue_writer_open() writes the carried-over done set to PATH.tmp,
 * fsyncs it, and renames it over PATH, so the old log is never half-written.
 * Then one writer thread appends "DONE name\n" records with group commit: it
 * takes every record queued so far (at most RESCUE_BATCH_MAX) and issues one
 * write(), and repeats; every write() it follows with one fdatasync()
 * unless the last one began less than RESCUE_SYNC_USEC ago, when the sync
 * waits for the end of that interval or a later batch.  Batches are bounded
 * by count and time (docs/design.md section 6): an idle writer starts on a
 * record at once, and syncs it at once after a quiet interval; under load,
 * writes begin at least RESCUE_COMMIT_USEC apart and syncs RESCUE_SYNC_USEC
 * apart, unless half the ring is queued or someone waits (flush, close, a
 * full ring: then the sync is made at once).  So a record is in the file
 * (safe from the process's death: kill -9, a crash, MPI aborting the job)
 * within RESCUE_COMMIT_USEC plus one fdatasync time, and on disk (safe from
 * the node's crash) within RESCUE_SYNC_USEC plus two; a master taking
 * results without pause pays at most one write per 5 ms and one sync per
 * 50 ms (a 2-core 10,000-task /bin/true run, the master appending in
 * batches: ~400 write+fdatasync pairs and 33-34 ms of the writer's CPU with
 * one interval for both; 369-410 writes, 76-77 syncs and 18-21 ms with
 * two, docs/performance-history.md section 27).  The idle writer also wakes every
 * RESCUE_FLUSH_USEC, once a second (a safety net; the wake-up protocol does not need it, and
 * late_wakeups counts what it catches; at 50 ms it was 87 % of an idle 1-rank run's CPU).
 * After each fdatasync, and at each flush, the writer checks that its file
 * is still the one at the path (deleted or replaced: rescue_writer_path()).
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

#define RESCUE_BATCH_MAX 65536    /* records per write()+fdatasync() */
#define RESCUE_FLUSH_USEC 1000000 /* longest sleep of an idle writer (a safety net) */
#define RESCUE_COMMIT_USEC 5000   /* least time between two writes under load */
#define RESCUE_SYNC_USEC 50000    /* least time between two fdatasync() under load */

/* Read the rescue log at path and set done[t] = 1 for every task t recorded
 * as done (done has dag->ntasks bytes, zeroed by the caller).  A missing file
 * is not an error (returns 0, nothing marked).  *ndone gets the number of
 * distinct tasks marked (a task listed twice counts once).
 *
 * The tail: an unterminated last line (torn), and the bad lines after the
 * last record (garbage, e.g. a zero-filled block after a crash), are ignored;
 * each is reported once through log_warn() ("PATH:LINE: ignoring incomplete
 * last record", "PATH:LINE: ignoring garbage at the end of the file") and
 * counted in *ntorn (may be NULL).  A complete, well-formed record naming an
 * unknown task is an error even at the end (a rescue file of another DAG).
 *
 * Returns -1 with err "PATH:LINE: bad record" (a bad line followed by a
 * record), "PATH:LINE: unknown task NAME", "PATH:LINE: not a rescue log
 * (no DONE record); it is left as it is" (no record at all, and a line no
 * crash of the writer leaves: text without NULs that does not begin like a
 * DONE record, e.g. -r naming the DAG: it must not be replaced by a log),
 * or "PATH: <strerror>" when the
 * file cannot be read (EACCES, EISDIR, ...); done[] is zeroed again and
 * *ndone is 0.  Reentrant; the file is mapped, nothing is allocated per
 * line. */
int rescue_read(const char *path, const struct dag *dag, uint8_t *done, uint32_t *ndone,
                uint32_t *ntorn, struct pmc_error *err);

/* Replace the log at path with one holding exactly the tasks with
 * done[t] != 0 (done: dag->ntasks bytes), as rescue_writer_open() writes
 * its first version: PATH.tmp in task id order, fsync, rename over path,
 * fsync of the directory; no writer thread.  For taking records back once
 * the writer is closed: tasks whose output was found lost at the end of a
 * run must run again (engine/master/master_report.c).  0, or -1 with err
 * ("PATH.tmp: write failed: No space left on device"); before the rename
 * PATH.tmp is removed and path is left as it was, after it (a failed
 * directory sync or close) path holds the new log.  Nothing else may
 * write path meanwhile (the DAG lock); reentrant otherwise.  lock_fd (NULL:
 * not wanted) gets a descriptor of the installed file that holds its lock
 * (the caller closes it), or -1. */
int rescue_replace(const char *path, const struct dag *dag, const uint8_t *done, int *lock_fd,
                   struct pmc_error *err);

struct rescue_writer;

/* Before a run: can rescue_writer_open(path, ...) create PATH.tmp beside
 * path and replace path?  Creates and removes PATH.tmp (when none exists);
 * changes nothing at path.  0, or -1 with err naming the path and the
 * reason ("out/wf.dag.rescue.tmp: Permission denied", "wf.dag.rescue: Is a
 * directory").  Not a guarantee (the disk may fill later), a check that the
 * run would not fail at its first record. */
int rescue_check_writable(const char *path, struct pmc_error *err);

/* Create the log at path holding exactly the tasks with done[t] != 0 (written
 * in id order through PATH.tmp + fsync + rename + fsync of the directory),
 * then start the writer thread.  A stale PATH.tmp left by a crash is
 * replaced (a directory there is an error).  The descriptor of PATH.tmp (O_WRONLY|O_APPEND|
 * O_CLOEXEC) becomes the log's, so nothing can fail between the rename and
 * the first append.  The writer keeps a pointer to dag (it must outlive the
 * writer).  Returns NULL with err set when the file cannot be created
 * ("PATH.tmp: write failed: No space left on device"); PATH.tmp is removed
 * and nothing at path is changed, except when syncing the directory fails
 * after the rename (path then holds the new log; the run must fail anyway). */
struct rescue_writer *rescue_writer_open(const char *path, const struct dag *dag,
                                         const uint8_t *done, struct pmc_error *err);

/* Queue "DONE name\n" for task t.  No lock and no allocation in the common
 * case: a store into a fixed ring of 65536 ids, plus a wake-up of the writer
 * only when it sleeps.  Backpressure: when 65536 records are already waiting (the writer
 * is stuck in a slow fdatasync), append waits until the writer takes a batch;
 * no record is ever dropped while the log is healthy.  After a failure the
 * records are dropped (see rescue_writer_failed()).  Single producer: call
 * from one thread only (the master's scheduler thread). */
void rescue_writer_append(struct rescue_writer *w, dag_task_t t);

/* True once a write() or fdatasync() has failed: the caller must stop
 * dispatching and fail the run.  The first error's text is kept
 * ("PATH: write failed: No space left on device", also logged with
 * log_error()); rescue_writer_error() returns it, or "" while the log is
 * healthy.  Any thread. */
bool rescue_writer_failed(const struct rescue_writer *w);
const char *rescue_writer_error(const struct rescue_writer *w);

/* What the writer did since open, for tests and benchmarks (the hooks
 * that let them check group commit and the wake-up protocol without timing
 * anything).  syncs: batches written and made durable, one fdatasync()
 * each (the carried-over set written by open() not counted); under load
 * far fewer than the records appended.  writes: batches written, one
 * write() loop each (as many as syncs, or more under load: RESCUE_SYNC_USEC).
 * unsynced: records taken off the ring that are not yet durable (0 once the
 * writer has synced all it took, and 0 too once the log has failed, when
 * it drops them: rescue_writer_failed() tells).  late_wakeups: the
 * writer's waits that their timeout ended although what they wait for had
 * come: an idle sleep (the RESCUE_FLUSH_USEC safety net) with records
 * queued, or a wait for the commit interval or a due sync with a flush
 * waiting; that is wake-ups the protocol lost; 0 on a correct protocol (a
 * timeout racing the signal by a few instructions is the one benign
 * cause).  cpu_ns: the writer thread's CPU time so far, nanoseconds
 * (pthread_getcpuclockid; 0 when it cannot be read).  Any thread; exact
 * after rescue_writer_flush() returns. */
struct rescue_writer_stats {
    uint64_t syncs;
    uint64_t writes;
    uint32_t unsynced;
    uint64_t late_wakeups;
    uint64_t cpu_ns;
};
void rescue_writer_get_stats(const struct rescue_writer *w, struct rescue_writer_stats *st);

/* Wait until every record queued so far is written and synced (or dropped
 * because the log failed), then check that the file is still at the path
 * (rescue_writer_path()).  Returns 0, or -1 if the log has failed.  Same
 * thread as append(). */
int rescue_writer_flush(struct rescue_writer *w);

/* Where the log's file stands (checked at each fdatasync of a batch and
 * at each rescue_writer_flush(), with fdio_still_at()):
 *   RESCUE_PATH_KEPT          the file at the path is the log;
 *   RESCUE_PATH_WRITTEN_AGAIN it was deleted (or renamed away) during the
 *       run and was written again at the path, with every task done so
 *       far (through PATH.tmp and link(2), which never replaces a file
 *       that appeared there meanwhile); it is the log again;
 *   RESCUE_PATH_LOST          another file was renamed over it (left as it
 *       is), or it could not be written again: progress since then is not
 *       at the path; final.
 * Each change is logged once as it is found ("The rescue log PATH was
 * deleted during the run: it is written again there, with the N tasks
 * done so far", "The rescue log PATH was deleted or replaced during the
 * run: progress since then is not recorded there (...)").  Either of the
 * last two must fail the run.  Any thread; exact after a flush. */
enum rescue_path { RESCUE_PATH_KEPT, RESCUE_PATH_WRITTEN_AGAIN, RESCUE_PATH_LOST };
enum rescue_path rescue_writer_path(const struct rescue_writer *w);

/* Flush, stop the thread, close the file, free.  Returns what the last flush
 * returned (0 or -1).  NULL is a no-op returning 0. */
int rescue_writer_close(struct rescue_writer *w);

/* rescue_writer_close(), and *lock_fd (not NULL) gets a descriptor of the
 * log's file that keeps the lock the writer took on it, for the caller to
 * close when it no longer writes the path; -1 when w is NULL or dup fails. */
int rescue_writer_close_locked(struct rescue_writer *w, int *lock_fd);

#ifdef __cplusplus
}
#endif
#endif
