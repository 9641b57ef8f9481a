/* taskio.h - task stdio (COMPAT.md "Task stdio"): capture each task's
 * output apart, append it to the rank's file as one block followed by its
 * record, and merge the ranks' files at the end.
 *
 * A task's stdout and stderr go to two O_TMPFILE files in $TMPDIR (default
 * /tmp), which the watchdog holds too (engine/exec/watchdog.h).  The
 * thread that reaps the task copies them (copy_file_range, else sendfile,
 * else read/write) into DAGFILE.out.R, with the cluster-task line, and
 * DAGFILE.err.R, at a place reserved by an atomic add, so blocks never
 * interleave.
 *
 * Thread-safety: taskio_file_open()/close() on one thread while no other
 * uses the file; taskio_file_append() and taskio_write_block() from any
 * threads at once.  The rest is reentrant.
 */
#ifndef PMC_TASKIO_H
#define PMC_TASKIO_H

#include <stddef.h>
#include <sys/types.h>

#include "io/dag.h"
#include "io/error.h"
#include "io/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An anonymous read-write file (O_CLOEXEC | O_APPEND, so a reset needs no
 * rewind).  The fd, or -1 with errno. */
int taskio_capture_open(void);

/* Can capture files be made?  Makes one and closes it.  0, or -1 with errno
 * and err "TMPDIR=DIR: REASON (...)" or "/tmp (TMPDIR unset): ...". */
int taskio_check_capture_dir(struct pmc_error *err);

/* "TMPDIR=DIR" or "/tmp (TMPDIR unset)" into buf (n bytes); returns buf. */
const char *taskio_capture_dir_name(char *buf, size_t n);

/* Bytes in the file at fd (fstat): what a task wrote to its capture file.
 * -1 with errno. */
off_t taskio_size(int fd);

/* Empty a capture file of len bytes (-1: unknown) for the next task; no
 * system call when len is 0.  0, or -1 with errno. */
int taskio_capture_reset(int fd, off_t len);

/* An output file written in blocks at offsets reserved by atomic adds on
 * `end` (no O_APPEND, so kernel copies can target it). */
struct taskio_file {
    int fd;
    off_t end __attribute__((aligned(8))); /* 8-byte atomics even where off_t is 4-aligned */
    char *path;
};

/* PMC's per-rank file name (stream 0: DAG.out.R, 1: DAG.err.R) into buf
 * (n bytes, truncated, NUL-terminated). */
void taskio_rank_path(char *buf, size_t n, const char *dag_path, int stream, int rank);

/* Open (create if needed, never truncate) path for appending.  0, or -1 with
 * err "PATH: <strerror>". */
int taskio_file_open(struct taskio_file *f, const char *path, struct pmc_error *err);

/* Append src_fd's first len bytes (none if src_fd is -1) and trailer (may
 * be NULL/0) as one block.  Any threads at once.  0, or -1 with errno (EIO:
 * src_fd was short; the block's place holds zeros: fail the run). */
int taskio_file_append(struct taskio_file *f, int src_fd, off_t len, const char *trailer,
                       size_t trailer_len);

/* Wait status of a task that exited 0 but lost output: it fails. */
#define TASK_IO_FAILED_STATUS (1 << 8)

/* taskio_write_block(): written, but $TMPDIR was full when the task ended. */
#define TASKIO_CAPTURE_FULL 1

/* A finished task's output, as the thread that reaped it writes it. */
struct taskio_block {
    struct task_record record;     /* status and duration are set by the write */
    int out_fd, err_fd;            /* the task's capture files */
    int task_out;                  /* --per-task-stdio: its own .out file, else -1 */
    bool failed_records_only;      /* --task-records failed: no record when status is 0 */
    struct taskio_file *out, *err; /* the rank's DAGFILE.out.R and .err.R */
};

/* Write the stderr block to b->err, then stdout and the cluster-task record
 * (on a line of its own) as one block of b->out, so a record vouches for
 * both; with task_out >= 0 only the record, there.  With
 * failed_records_only a successful task (final status 0) writes no record:
 * its output alone (and a newline after output that lacks one, so that the
 * next block's record starts a line), nothing with task_out >= 0.  *out_len, *err_len:
 * the capture sizes (-1: unknown).  0; -1 with errno (output lost: fail
 * the task and the run); or TASKIO_CAPTURE_FULL: written, with status
 * TASK_IO_FAILED_STATUS if status was 0 (fail the task only).  How "full"
 * is decided: docs/modules.md "taskio". */
int taskio_write_block(const struct taskio_block *b, int status, double duration, off_t *out_len,
                       off_t *err_len);

/* True when len > 0 and the file's last byte is not '\n'. */
int taskio_needs_newline(int fd, off_t len);

/* --per-task-stdio: 0, or -1 with EINVAL and err "DAGPATH:LINE: task NAME:
 * a '/' in a task name is not allowed with --per-task-stdio (...)" for the
 * first such task.  O(tasks + name bytes). */
int taskio_check_per_task_names(const struct dag *dag, const char *dag_path, struct pmc_error *err);

/* --per-task-stdio: create DIR/NAME.out.NNN (O_RDWR) and .err.NNN
 * (O_WRONLY), O_EXCL, NNN the first free from 000 (PMC manual).  0, or -1
 * with err "PATH: REASON" (EINVAL for a '/' in name). */
int taskio_open_per_task(const char *dir, const char *name, int *out_fd, int *err_fd,
                         struct pmc_error *err);

/* --per-task-stdio: close both (-1: none) and set them to -1.  0, or -1
 * with the first close's errno (output may be lost). */
int taskio_close_per_task(int *out_fd, int *err_fd);

/* fsync-free close; frees path.  Safe on a closed/zeroed struct. */
int taskio_file_close(struct taskio_file *f);

/* Copy the file at src_path to dst_fd (at its position) and unlink it.  A
 * missing file: 0; an empty one writes nothing.  -1 with err otherwise. */
int taskio_merge(int dst_fd, const char *src_path, struct pmc_error *err);

/* Does the block of the task named name[0, len) (not NUL-terminated) stay? */
typedef bool (*taskio_keep_fn)(const char *name, size_t len, void *ctx);

/* taskio_merge() of a DAGFILE.out.R, block by block: a block is the lines
 * up to and including its record line ("[cluster-task ...", COMPAT.md
 * "Task stdio"), written to dst_fd when keep(its task's name) says so; a
 * last block without a record (its writer died) is left out.  For a node
 * lost mid-run: its blocks of tasks that run again elsewhere go.  A task
 * whose own output holds a line starting "[cluster-task " splits its
 * block there.  Then src_path is removed.  Missing file: 0; -1 with err. */
int taskio_merge_blocks(int dst_fd, const char *src_path, taskio_keep_fn keep, void *ctx,
                        struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
