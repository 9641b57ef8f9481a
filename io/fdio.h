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

/* Do stat(2) results a and b name one file (device and inode)? */
static inline bool fdio_same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Open /dev/null on each of fds 0, 1, 2 that is closed, so no file opened
 * later becomes stdout or stderr.  Call first in main(), before any thread.
 * A mask of the fds opened (bit k: fd k), or -1 with errno: do not go on. */
int fdio_standard_fds(void);

/* Write all n bytes of p to fd, retrying partial writes and EINTR.  0, or
 * the errno (also in errno; EIO when write returns 0); a prefix may have
 * been written.  The tree's one write-all loop. */
int fdio_write_all(int fd, const void *p, size_t n);

/* The same with pwrite(2) at offset *off, which advances by what was
 * written (also on failure); the file position is not used or moved. */
int fdio_pwrite_all(int fd, const void *p, size_t n, off_t *off);

/* True when path exists and is neither a regular file nor a directory:
 * never rename(2) over it (as root that would replace /dev/null). */
bool fdio_not_regular(const char *path);

/* Is the file open at fd still linked and the one at path?  False with
 * errno ENOENT (nothing at path: a new one may be made), EEXIST (another
 * file: leave it), or fstat/stat's errno.  Two system calls. */
bool fdio_still_at(int fd, const char *path);

/* Is fd a pipe whose readers are gone (poll(2) POLLERR), so writes fail
 * with EPIPE?  One poll(), no wait. */
bool fdio_reader_gone(int fd);

/* Could PATH.tmp be written and renamed over path (a regular file or
 * absent)?  Creates and removes PATH.tmp; changes nothing at path.  0, or
 * -1 with err "PATH: REASON".  A check, not a guarantee. */
int fdio_check_replaceable(const char *path, struct pmc_error *err);

/* The directory part of path into dir (size bytes, truncated to fit):
 * "." when path has no '/', "/" for a file at the root. */
void fdio_dir_of(const char *path, char *dir, size_t size);

/* fsync(2) the directory dir, making a rename or link in it durable.
 * EINVAL/EBADF (a file system that cannot sync a directory) count as
 * success, as PostgreSQL's fsync_fname() takes them.  0, or -1 with errno. */
int fdio_fsync_dir(const char *dir);

/* Write n bytes to PATH.tmp and rename it over path (readers never see a
 * torn file).  No fsync.  0, or -1 with err; PATH.tmp is removed. */
int fdio_replace_file(const char *path, const void *p, size_t n, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
