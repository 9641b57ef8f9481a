/* dagfile.h - reader of PMC DAG files into the compact model of dag.h.
 *
 * Grammar: PMC manual "DAG Files", COMPAT.md "DAG file" (TASK, EDGE, "#@"
 * Pegasus ids, comments; task options -m, -c, -t, -p, -f, -F, and ours -g,
 * --time-limit).  Words split on white space, ' and " quote, \ escapes.
 * One mmap, no malloc per line.  Errors name file and line ("wf.dag:12:
 * duplicate task A").  A line is at most DAGFILE_MAX_LINE bytes.  The DAG
 * must be a regular file: a run locks it, keeps its rescue log beside it
 * and reads it again to restart.  Task arrays ("TASK sim[0-99] ...
 * %{INDEX}", "EDGE a[i] b[i/K]", docs/task-arrays.md) are read only when
 * asked for (struct dagfile_options).
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

/* 0 when path is a regular file or cannot be stat(2)ed; -1 with err ("PATH:
 * a pipe or FIFO, not a regular file: ...") otherwise.  Opens nothing.
 * Reentrant. */
int dagfile_check_regular(const char *path, struct pmc_error *err);

/* How to read a DAG file; NULL means all fields 0. */
struct dagfile_options {
    /* Accept task arrays (docs/task-arrays.md).  0 refuses their TASK
     * line with "PATH:LINE: task NAME[..]: task arrays are not supported
     * by this program", for readers that handle plain tasks only
     * (dagfile_load(): the DAG simulator's). */
    int arrays;
};

/* Parse the file into a finished DAG (dag_finish(), cycles rejected),
 * owned by the caller.  NULL with err "PATH:LINE: ..." or "PATH: ..." (I/O,
 * cycles, no TASK, not a regular file).  Reentrant; may start and join a
 * scanning thread within the call for a large file.  Task arrays are
 * refused (struct dagfile_options); pmc-hybrid reads them. */
struct dag *dagfile_load(const char *path, struct pmc_error *err);

/* dagfile_load() with options (opts may be NULL). */
struct dag *dagfile_load_opts(const char *path, const struct dagfile_options *opts,
                              struct pmc_error *err);

/* The same over a buffer in memory; filename is used only in messages. */
struct dag *dagfile_parse(const char *buf, size_t len, const char *filename, struct pmc_error *err);

/* dagfile_parse() with options (opts may be NULL). */
struct dag *dagfile_parse_opts(const char *buf, size_t len, const char *filename,
                               const struct dagfile_options *opts, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
