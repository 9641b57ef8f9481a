/* fdio.h - small descriptor helpers shared by the writers in io/.
 *
 * Thread-safety: reentrant (the descriptor's own rules apply: two threads
 * writing one descriptor interleave their writes).
 */
#ifndef PMC_FDIO_H
#define PMC_FDIO_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Do the stat(2) results a and b name one file (device and inode): -o and
 * -e given as two names of it, an output naming the DAG, -o naming a
 * per-rank file? */
static inline bool fdio_same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Make descriptors 0, 1 and 2 valid, as daemons do: each one that is
 * closed (EBADF) is opened on /dev/null (0 for reading, 1 and 2 for
 * writing), so that no file opened later (the DAG's lock, a log, MPI's own
 * files) takes the number of stdout or stderr and gets their writes: run
 * with stdout closed (`<&- >&-`, cron, some launchers) the DAG file was
 * overwritten with task output.  Call it first thing in main(), before
 * anything opens a file.  A closed stdout on /dev/null sends task output
 * nowhere, which is what closing it asked for.  Returns a bit mask of the
 * descriptors it opened (bit k: descriptor k), or -1 with errno when
 * /dev/null cannot be opened (the caller must not go on: a file it opens
 * could become stdout).  Not thread-safe: call it before any thread. */
int fdio_standard_fds(void);

/* Write all of p[0, n) (bytes) to fd at its current position, retrying
 * partial writes and EINTR.  Returns 0, or the errno of the failure, which
 * is also left in errno (EIO when write(2) returns 0, so a broken
 * descriptor cannot make it spin).  On failure a prefix of p may have been
 * written.  The one write-all loop of the tree: use it, do not copy it. */
int fdio_write_all(int fd, const void *p, size_t n);

/* The same with pwrite(2) at offset *off, which advances by what was
 * written (also on failure); the file position is not used or moved. */
int fdio_pwrite_all(int fd, const void *p, size_t n, off_t *off);

/* True when path exists and is neither a regular file nor a directory (a
 * device such as /dev/null, a FIFO, a socket): such a path must never be
 * replaced by rename(2), which as root would swap /dev/null for a file. */
bool fdio_not_regular(const char *path);

/* Is the file open at fd still the one at path: linked (fstat's st_nlink
 * > 0: not deleted) and named by path (stat(2) gives its device and
 * inode)?  An output of the run that was deleted, renamed away, or had
 * another file renamed over it while the run went is no longer where the
 * user looks for it.  False then, with errno ENOENT when nothing is at path
 * (a deleted or renamed-away file: a new one may be made there), EEXIST
 * when another file is (replaced: it must be left alone), or the errno of
 * a failed fstat(2) or stat(2) (EACCES, EBADF, ...).  Two system calls;
 * changes nothing. */
bool fdio_still_at(int fd, const char *path);

/* Is fd the writing end of a pipe (or FIFO) whose readers are all gone
 * (poll(2) reports POLLERR: `cmd | head -1` once head has exited)?  What
 * is written there now fails with EPIPE.  False for files, terminals and
 * pipes still read; one poll(), no wait, nothing written. */
bool fdio_reader_gone(int fd);

/* Before a run: could a file be written at PATH.tmp and renamed over path
 * (the atomic-replace pattern of the rescue log and the JSON files)?  Not
 * when path is a directory or not a regular file (fdio_not_regular()).
 * Creates and removes PATH.tmp when none exists; changes nothing at path.
 * 0, or -1 with err naming the path and the reason ("out/x.tmp: Permission
 * denied", "x: Is a directory").  A check that the first write would not
 * fail, not a guarantee (the disk may fill later). */
int fdio_check_replaceable(const char *path, struct pmc_error *err);

/* Write n bytes of p to PATH.tmp, then rename it over path, so a reader
 * sees the old file or the new one, never a torn one.  No fsync (for
 * status files, not for durable state).  0, or -1 with err ("PATH.tmp:
 * No space left on device"); PATH.tmp is removed on failure. */
int fdio_replace_file(const char *path, const void *p, size_t n, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
