/* dagfile.h - reader of PMC DAG files into the compact model of dag.h.
 *
 * Grammar (PMC manual "DAG Files" and COMPAT.md "DAG file"):
 *   TASK name [options] executable [args...]
 *   EDGE parent child
 *   #@ N transformation derivation   (gives the next TASK the Pegasus id N)
 *   # comment, blank lines
 * Task options before the executable: -m/--request-memory MB (float, rounded
 * up), -c/--request-cpus N (float, rounded up, default 1), -t/--tries T (>=1),
 * -p/--priority P (integer, may be negative), -f/--pipe-forward VAR=FILE,
 * -F/--file-forward SRC=DEST (both repeatable), and, beyond PMC,
 * -g/--request-gpus N (integer >= 0) and --time-limit SECONDS (> 0, decimal);
 * an option's value may also be attached as --opt=value.  Words are split on white space; ' or "
 * opens a quoted run closed by the same character, \ makes the next character literal.
 *
 * The file is read with one mmap, never a malloc per line.  Every error
 * names the file and line: "wf.dag:12: duplicate task A".
 *
 * Limits: a line (its bytes before the newline) is at most
 * DAGFILE_MAX_LINE bytes, 8 MiB (above what execve(2) takes: at most 6 MiB
 * of arguments and environment); a longer one is an error naming the file,
 * the line and its length.  A DAG file must be a regular file: a pipe
 * (`pmc-hybrid <(gen)`), a FIFO or a device is refused with a message that
 * asks for a file, because a run locks its DAG, keeps its rescue log next
 * to it (DAGFILE.rescue, /dev/fd/63.rescue for a pipe) and must be able to
 * read it again to restart; reading one would also hang on a FIFO with no
 * writer and grow without bound on /dev/zero.
 */
#ifndef PMC_DAGFILE_H
#define PMC_DAGFILE_H

#include <stddef.h>

#include "io/dag.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DAGFILE_MAX_LINE ((size_t)8 << 20) /* bytes in a line, its newline not counted */

/* 0 when path is a regular file, or cannot be stat(2)ed (the open that
 * follows reports why); -1 with err "PATH: a pipe or FIFO, not a regular
 * file: write the DAG to a file first" (or "a character device", ...) when
 * it is something else.  Opens nothing (a FIFO's open would block).  For
 * the DAG lock, which is taken before the DAG is read.  Reentrant. */
int dagfile_check_regular(const char *path, struct pmc_error *err);

/* Parse the DAG file at path and return the finished DAG (dag_finish() done,
 * cycles rejected).  The caller owns the result (dag_destroy()).  On error
 * returns NULL and fills err with "PATH:LINE: what is wrong" (or "PATH: ..."
 * for I/O errors and cycles).  An empty DAG (no TASK) is an error, and so
 * is a path that is not a regular file (dagfile_check_regular(); checked
 * on the open file, which is opened without blocking).
 * Reentrant: no global state.  A buffer of 4 MB or more is scanned ahead
 * of the parse by a second thread, started and joined within the call,
 * where the process may run on two CPUs or more (dagfile.c). */
struct dag *dagfile_load(const char *path, struct pmc_error *err);

/* The same over a buffer in memory; filename is used only in messages. */
struct dag *dagfile_parse(const char *buf, size_t len, const char *filename, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
