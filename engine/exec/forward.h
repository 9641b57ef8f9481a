/* forward.h - the node side of I/O forwarding (PMC manual "I/O
 * Forwarding") for one running task:
 *   -f VAR=FILE  a pipe; the task gets the write end as descriptor 3, 4, ...
 *                in the order of its -f options, and VAR holds the number.
 *   -F SRC=DEST  after the task exits 0, SRC (a regular file, no symlink,
 *                at most FWD_FILE_MAX bytes) is read and deleted.
 * The data of a task that succeeded goes to the master in its result
 * (msg_pack_fwd_data blocks, io/msg.h); a failed task's is dropped.
 *
 * Thread-safety: a struct fwd_task belongs to the agent thread, which may
 * lend its entries to one launcher at a time (launch_job.forwards) until
 * the slot comes back.  A task without forwards allocates nothing.
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
/* The most one task may forward, pipes and files together (bytes): its data
 * travels in one result (docs/modules.md "forward"). */
#define FWD_TASK_MAX ((size_t)1 << 30)

struct fwd_entry {
    uint32_t kind; /* DAG_FORWARD_PIPE or DAG_FORWARD_FILE */
    char *src;     /* VAR (pipe) or SRC path (file), owned */
    int rfd, wfd;  /* pipe ends, -1 when closed */
    uint8_t *data; /* what was read, owned */
    size_t len, cap;
    int lost; /* errno of a failed read or watch (0: none); fails the task */
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

/* Write the f->npipes write ends, in order, to fds (spawn_request). */
void fwd_child_fds(const struct fwd_task *f, int *fds);

/* Write "VAR=N" pointers to envp[0, f->npipes), owned by f until the next
 * call or fwd_free().  0, or -1 with ENOMEM and envp[0] = NULL. */
int fwd_child_env(struct fwd_task *f, char **envp);

/* Does f forward the file src (an -F SRC, the same string)?  Reads only
 * what fwd_prepare() set: safe while a launcher holds the entries. */
bool fwd_names_file(const struct fwd_task *f, const char *src);

/* Index in f->e of the p-th -f pipe (from 0), or f->n if none.  O(f->n);
 * reads only what fwd_prepare() set. */
uint32_t fwd_pipe_entry(const struct fwd_task *f, uint32_t p);

/* Close the write ends in the parent (after the spawn). */
void fwd_close_write_ends(struct fwd_task *f);

/* Read what pipe k (index into e[]) has now.  1 at end of file, 0 when it
 * would block, -1 with e[k].lost set on a read error, ENOMEM, or EFBIG
 * past the task's limit (its data is freed).  The read end stays open:
 * remove it from the epoll set first, then fwd_close_pipe(), so no other
 * thread's new descriptor takes the number before the EPOLL_CTL_DEL. */
int fwd_read_pipe(struct fwd_task *f, uint32_t k);

/* fwd_read_pipe() that returns 0 after at least `most` (> 0) bytes, so a
 * writer that never pauses cannot hold the reader; more may be waiting. */
int fwd_read_pipe_some(struct fwd_task *f, uint32_t k, size_t most);

/* Close pipe k's read end (no-op when closed). */
void fwd_close_pipe(struct fwd_task *f, uint32_t k);

/* After the task exited with status (pipes out of any epoll set): drain
 * and close the pipes; if status is 0, read the -F files and append one
 * msg_pack_fwd_data block per forward to pack (none for an absent -F file,
 * as PMC); delete every -F file whatever the status.  0, or -1 with err
 * ("Task NAME: PATH is not a file", "...: forwarding pipe VAR: REASON",
 * "...: forwarded more than 1024 MB"): the task then counts as failed. */
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
