/* forward.h - the node side of I/O forwarding (PMC manual "I/O Forwarding").
 *
 * For one running task:
 *   -f VAR=FILE  a pipe; the task gets the write end as descriptor 3, 4, ...
 *                (in the order of its -f options) and VAR holds that number;
 *                the agent, or its launcher pool, reads the read end while
 *                the task runs.
 *   -F SRC=DEST  after the task exits 0, SRC (a regular file, opened without
 *                following symlinks, at most FWD_FILE_MAX bytes) is read and
 *                deleted.
 * The data of a task that succeeded goes back to the master inside the
 * task's result (msg_pack_fwd_data blocks, indexed by the forward's position
 * in the task's -f/-F list), which appends each block whole to DEST.  Data
 * of a failed task is dropped.
 *
 * This is runtime, not a format: live pipes, descriptor numbers of the
 * spawn contract (SPAWN_FIRST_FORWARD_FD), files read and deleted; so it
 * lives in engine/ beside spawn.h.  The wire form of the data is io/msg.h's.
 *
 * Thread-safety: a struct fwd_task belongs to the agent thread, which lends
 * a task's entries to its launcher pool (launcher.h, launch_job.forwards:
 * one launcher at a time reads a pipe or, after the exit, drains the pipes
 * and reads the files) until the slot comes back.  No memory is allocated
 * for a task without forwards.
 */
#ifndef PMC_FORWARD_H
#define PMC_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/error.h"
#include "io/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FWD_FILE_MAX (1024 * 1024) /* PMC's limit for -F files */
/* The most one task may forward, its pipes and files together: 1 GiB.  Its
 * data travels in one result, so it must fit one message (MSG_MAX_BYTES, 2
 * GiB - 1) beside the results batched with it; and the node holds it in
 * memory until the task ends.  PMC sets no limit of its own (its worker
 * holds a pipe's data whole, in a string). */
#define FWD_TASK_MAX ((size_t)1 << 30)

struct fwd_entry {
    uint32_t kind; /* DAG_FORWARD_PIPE or DAG_FORWARD_FILE */
    char *src;     /* VAR (pipe) or SRC path (file), owned */
    int rfd, wfd;  /* pipe ends, -1 when closed */
    uint8_t *data; /* what was read, owned */
    size_t len, cap;
    int lost; /* a pipe read, or its watch, failed with this errno (0: none;
               * set by the reader, which then closes the pipe: fwd_finish()
               * fails the task) */
};

struct fwd_task {
    struct fwd_entry *e;
    uint32_t n, cap;
    uint32_t npipes;
    size_t held;  /* bytes of data held by all entries (at most limit) */
    size_t limit; /* the most they may hold: FWD_TASK_MAX when 0 (tests set less) */
    bool over;    /* passed it: every pipe's data is dropped, and the pipe closed */
    char *env;    /* "VAR=3\0VAR2=4\0", one per pipe */
    size_t env_cap;
};

/* Set up the forwards of task t (pipes created O_CLOEXEC, read ends
 * non-blocking).  0, or -1 with err. */
int fwd_prepare(struct fwd_task *f, const struct msg_task *t, struct pmc_error *err);

/* The write ends, in order (for spawn_request.forward_fds); npipes of them
 * are written to fds, which must have room for f->npipes. */
void fwd_child_fds(const struct fwd_task *f, int *fds);

/* Write "VAR=N" pointers for the pipes to envp[0, f->npipes) (strings kept
 * in f, valid until the next call or fwd_free()).  0, or -1 with ENOMEM:
 * then envp[0] is NULL, so the caller's list ends there and holds no stale
 * pointer (the task must not start without its variables). */
int fwd_child_env(struct fwd_task *f, char **envp);

/* Does f forward the file src (an -F SRC=... of its task, the same
 * string)?  Reads only what fwd_prepare() set, so the agent thread may ask
 * while a launcher holds f's entries. */
bool fwd_names_file(const struct fwd_task *f, const char *src);

/* The index in f->e of f's pipe number p (0 for its first -f, in the
 * order of the task's list; -F files are not counted), or f->n when f has
 * no such pipe.  O(f->n).  Reads only what fwd_prepare() set. */
uint32_t fwd_pipe_entry(const struct fwd_task *f, uint32_t p);

/* Close the write ends in the parent (after the spawn). */
void fwd_close_write_ends(struct fwd_task *f);

/* Read what pipe k (an index into e[]) has now.  Returns 1 at end of file,
 * 0 when it would block, -1 on a read error or out of memory (recorded in
 * e[k].lost: data may be lost, so fwd_finish() fails the task), or when the
 * task's data passes its limit (FWD_TASK_MAX: lost is EFBIG, the pipe's data
 * is freed at once, and closing the pipe gives the writer EPIPE or SIGPIPE,
 * as a reader that stops does).  The read end
 * stays open: the caller takes it out of its epoll set first, then calls
 * fwd_close_pipe() (closing first would let another thread's new
 * descriptor, a launcher's pidfd for one, take the number before the
 * epoll_ctl DEL). */
int fwd_read_pipe(struct fwd_task *f, uint32_t k);

/* fwd_read_pipe() that stops after at least `most` bytes (> 0), returning 0
 * then too: more may be there (the launcher pool arms the pipe's one-shot
 * event again, which fires at once while data waits), and a writer that
 * never pauses does not hold the reader for ever. */
int fwd_read_pipe_some(struct fwd_task *f, uint32_t k, size_t most);

/* Close pipe k's read end (no-op when closed). */
void fwd_close_pipe(struct fwd_task *f, uint32_t k);

/* After the task exited with status (its pipes already out of any epoll
 * set): drain and close the pipes; if status is 0, read the -F files and
 * pack every forward's data into pack (msg_pack_fwd_data blocks; one per
 * forward, none for a -F file the task did not write, as PMC's worker
 * skips it); then delete every -F file, whatever the status (PMC manual,
 * I/O forwarding caveats).  Returns 0, or -1 with err "Task NAME: PATH is
 * not a file" (or another reason) when a -F file cannot be forwarded, or
 * "Task NAME: forwarding pipe VAR: REASON" when a pipe's data may be lost
 * (e[k].lost), or "Task NAME: forwarded more than 1024 MB ..." when its
 * data passed FWD_TASK_MAX (whatever its status: its pipe was closed under
 * it): the task then counts as failed (the engine gives it status 256),
 * never as a success whose output is missing. */
int fwd_finish(struct fwd_task *f, const char *task_name, int status, struct msgbuf *pack,
               struct pmc_error *err);

/* Close everything and forget the task's forwards (storage is kept). */
void fwd_reset(struct fwd_task *f);

/* Free all storage. */
void fwd_free(struct fwd_task *f);

#ifdef __cplusplus
}
#endif
#endif
