/* taskio.h - task stdio: capture each task's output separately, append it to
 * the rank's output file as one block followed by its record, and merge the
 * ranks' files at the end (COMPAT.md "Task stdio").
 *
 * A task's stdout and stderr go to two anonymous temporary files (O_TMPFILE
 * in $TMPDIR, default /tmp; they vanish when closed; the node's watchdog
 * holds them too, and saves a running task's into the rank's files when
 * the agent's process dies: engine/exec/watchdog.h).  When the task exits,
 * its whole output is copied into DAGFILE.out.R (then the cluster-task line)
 * and DAGFILE.err.R by the thread that reaped it (the rank's agent, or a
 * launcher thread of its pool).  Each block's place is reserved first (an
 * atomic add on the file's end), so blocks of concurrent tasks never
 * interleave.  Copies are done in the kernel (copy_file_range, else
 * sendfile, else read/write).
 *
 * Thread-safety: taskio_file_open()/taskio_file_close() on one thread,
 * while no other uses the file; taskio_file_append() and
 * taskio_write_block() from any threads at once.
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

/* Open an anonymous read-write temporary file (O_CLOEXEC | O_APPEND: a task
 * writes at its end whatever the shared offset, so a reset needs no
 * rewind).  Returns the fd, or -1 with errno. */
int taskio_capture_open(void);

/* Before any task: can capture files be made where taskio_capture_open()
 * makes them ($TMPDIR, default /tmp)?  Makes one and closes it.  0, or -1
 * with errno and err naming the variable and the reason: "TMPDIR=/nonexistent:
 * No such file or directory (the tasks' output is captured there; set TMPDIR
 * to a writable directory)", or "/tmp (TMPDIR unset): ...".  Reentrant
 * (getenv). */
int taskio_check_capture_dir(struct pmc_error *err);

/* The capture files' directory, for messages: "TMPDIR=DIR", or "/tmp
 * (TMPDIR unset)", into buf (n bytes, truncated).  Returns buf. */
const char *taskio_capture_dir_name(char *buf, size_t n);

/* Bytes in the file at fd (fstat): what a task wrote to its capture file.
 * -1 with errno. */
off_t taskio_size(int fd);

/* Reset a capture file holding len bytes (taskio_size(); -1 when not
 * known) for the next task: truncated to 0, or left alone when already
 * empty (the common case costs no system call).  0 or -1 with errno. */
int taskio_capture_reset(int fd, off_t len);

/* An output file written in blocks at reserved offsets (opened without
 * O_APPEND so that kernel copies can target it; `end`, the next free
 * offset, moves by atomic adds: taskio_file_append()). */
struct taskio_file {
    int fd;
    off_t end __attribute__((aligned(8))); /* 8-byte atomics even where off_t is 4-aligned */
    char *path;
};

/* The per-rank file of rank (stream 0: stdout, DAG.out.R; 1: stderr,
 * DAG.err.R) of the DAG at dag_path, written into buf (n bytes, truncated
 * to fit, NUL-terminated; PATH_MAX is enough for any real path).  PMC's
 * names. */
void taskio_rank_path(char *buf, size_t n, const char *dag_path, int stream, int rank);

/* Open (create if needed, never truncate) path for appending.  0, or -1 with
 * err "PATH: <strerror>". */
int taskio_file_open(struct taskio_file *f, const char *path, struct pmc_error *err);

/* Append the first len bytes of src_fd (read from offset 0; its whole
 * content when len = taskio_size(src_fd); nothing when src_fd is -1 or len
 * 0), then trailer (may be NULL/0), as one block, whose place is reserved
 * first by an atomic add on f->end (GCC's __atomic builtins: the struct is
 * shared with C++ tests), so several threads may append at once.  0, or -1
 * with errno (EIO when src_fd holds fewer than len bytes; a block cut
 * short leaves zeros in its place, and the caller fails the run). */
int taskio_file_append(struct taskio_file *f, int src_fd, off_t len, const char *trailer,
                       size_t trailer_len);

/* The wait status (exit code 1) of a task that exited 0 but whose output
 * or forwarded data was lost: it fails, so it is never recorded done. */
#define TASK_IO_FAILED_STATUS (1 << 8)

/* taskio_write_block()'s result when its blocks were written but the file
 * system of the task's capture files was full when it ended. */
#define TASKIO_CAPTURE_FULL 1

/* A finished task's output, as the thread that reaped it writes it. */
struct taskio_block {
    struct task_record record;     /* status and duration are set by the write */
    int out_fd, err_fd;            /* the task's capture files */
    int task_out;                  /* --per-task-stdio: its own .out file, else -1 */
    struct taskio_file *out, *err; /* the rank's DAGFILE.out.R and .err.R */
};

/* Write b's task output (COMPAT.md "Task stdio"): its stderr as one block
 * of b->err, then its captured stdout and its cluster-task record
 * (records_format_task(), on a line of its own even after output without
 * a final newline) as one block of b->out, so that a record in the file
 * vouches for both; with task_out >= 0, only the record, at the end of
 * that file.  *out_len and *err_len get what the capture files held (-1:
 * not measured), for taskio_capture_reset().  0, or -1 with errno when
 * the output or the record could not be written (output was lost: the
 * caller fails the task and the run), or TASKIO_CAPTURE_FULL when the file
 * system of its capture files ($TMPDIR) was full for the task when it
 * ended: its writes may have failed there (all of them, when it kept
 * nothing), and a task that ignores such errors (many do) would otherwise
 * be recorded done with its output cut short or lost.  Full: fstatvfs
 * shows less available to unprivileged users than 1 % of the file system
 * (at most 1 MiB), and a fallocate() of a page (or a block, if larger)
 * at the capture file's end, with the task's credentials, fails with
 * ENOSPC or EDQUOT (or, without
 * fallocate, nothing is available).  The block is written all the same
 * (what was kept), its record with status TASK_IO_FAILED_STATUS when
 * `status` is 0, and the caller fails the task (not the run: space may
 * come back for its next try).  One fstatvfs per task; the probe only on
 * a nearly full file system. */
int taskio_write_block(const struct taskio_block *b, int status, double duration, off_t *out_len,
                       off_t *err_len);

/* True when the file at fd holds len > 0 bytes (taskio_size()) and its
 * last byte is not '\n' (the record that follows must still start a
 * line). */
int taskio_needs_newline(int fd, off_t len);

/* --per-task-stdio names files after tasks (NAME.out.NNN, NAME.err.NNN in
 * the DAG's directory): a task name with a '/' (../x, /abs/x, sub/x) would
 * put them elsewhere, or fail to, after the task ran.  Checks every task
 * of dag before the run: 0, or -1 with errno EINVAL and err
 * "DAGPATH:LINE: task NAME: a '/' in a task name is not allowed with
 * --per-task-stdio (its output files, NAME.out.NNN, must stay in the DAG's
 * directory)" for the first such task.  O(tasks + name bytes). */
int taskio_check_per_task_names(const struct dag *dag, const char *dag_path, struct pmc_error *err);

/* --per-task-stdio: create DIR/NAME.out.NNN and DIR/NAME.err.NNN for one
 * attempt, NNN the first number from 000 for which neither exists (PMC
 * manual, --per-task-stdio).  Both are opened O_CREAT|O_EXCL|O_CLOEXEC,
 * the .out file O_RDWR (the record that follows the task's output reads
 * its last byte: taskio_needs_newline()), the .err file O_WRONLY.  0, or
 * -1 with err "PATH: <strerror>", or EINVAL for a name with a '/'
 * (taskio_check_per_task_names() refuses those before a run). */
int taskio_open_per_task(const char *dir, const char *name, int *out_fd, int *err_fd,
                         struct pmc_error *err);

/* --per-task-stdio: close a task's .out and .err files (either may be -1)
 * and set both to -1.  0, or -1 with the errno of the first close that
 * failed (a network file system reports a failed write-back there: the
 * task's output may be lost). */
int taskio_close_per_task(int *out_fd, int *err_fd);

/* fsync-free close; frees path.  Safe on a closed/zeroed struct. */
int taskio_file_close(struct taskio_file *f);

/* Copy the whole file at src_path to dst_fd (a file, pipe or tty, written
 * at its current position) and unlink src_path.  A missing src_path is not
 * an error (returns 0: that rank ran no task); an empty one writes
 * nothing to dst_fd (a pipe without reader gives no EPIPE for it).  -1
 * with err otherwise. */
int taskio_merge(int dst_fd, const char *src_path, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
