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
 * takes every record queued so far (at most RESCUE_BATCH_MAX), issues one
 * write() and one fdatasync(), and repeats; a record is durable at most
 * RESCUE_FLUSH_USEC after it was queued, or sooner under load.
 */
#ifndef PMC_RESCUE_H
#define PMC_RESCUE_H

#include <stdbool.h>
#include <stdint.h>

#include "engine/dag.h"
#include "engine/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RESCUE_BATCH_MAX 65536  /* records per write()+fdatasync() */
#define RESCUE_FLUSH_USEC 50000 /* longest wait before a queued record is written */

/* Read the rescue log at path and set done[t] = 1 for every task t recorded
 * as done (done has dag->ntasks bytes, zeroed by the caller).  A missing file
 * is not an error (returns 0, nothing marked).  *ndone gets the number of
 * distinct tasks marked.  Warnings about an ignored torn tail are printed
 * through log_warn() and counted in *ntorn (may be NULL).  Returns -1 with err
 * "PATH:LINE: ..." for an unknown task or a bad record before the tail, or
 * "PATH: ..." when the file cannot be read. */
int rescue_read(const char *path, const struct dag *dag, uint8_t *done, uint32_t *ndone,
                uint32_t *ntorn, struct pmc_error *err);

struct rescue_writer;

/* Create the log at path holding exactly the tasks with done[t] != 0 (written
 * in id order through PATH.tmp + fsync + rename), then start the writer
 * thread.  The writer keeps a pointer to dag (it must outlive the writer).
 * Returns NULL with err set when the file cannot be created; nothing at path
 * is changed in that case. */
struct rescue_writer *rescue_writer_open(const char *path, const struct dag *dag,
                                         const uint8_t *done, struct pmc_error *err);

/* Queue "DONE name\n" for task t.  Never blocks on I/O and never allocates
 * after the queue has grown to its working size.  Single producer: call from
 * one thread only (the master's scheduler thread). */
void rescue_writer_append(struct rescue_writer *w, dag_task_t t);

/* True once a write() or fdatasync() has failed: the caller must stop
 * dispatching and fail the run.  The first error's text is kept; see
 * rescue_writer_error().  Any thread. */
bool rescue_writer_failed(const struct rescue_writer *w);
const char *rescue_writer_error(const struct rescue_writer *w);

/* Write and sync every queued record, waiting for the writer thread.
 * Returns 0, or -1 if the log has failed.  Same thread as append(). */
int rescue_writer_flush(struct rescue_writer *w);

/* Flush, stop the thread, close the file, free.  Returns what the last flush
 * returned (0 or -1).  NULL is a no-op returning 0. */
int rescue_writer_close(struct rescue_writer *w);

#ifdef __cplusplus
}
#endif
#endif
