/* mapfile.h - all the bytes of one file, read-only, for the parsers of the
 * line formats (the DAG file, the rescue log).
 *
 * A regular file with a size is mapped (mmap(2) MAP_PRIVATE, PROT_READ, with
 * MADV_SEQUENTIAL), so a large DAG is parsed at disk speed without a copy.
 * Everything else that open(2) and read(2) accept is read to its end into
 * one malloc'ed buffer: a pipe or FIFO (`pmc-hybrid <(gen)`), a character
 * device, and a /proc or /sys file (regular, but with st_size 0 whatever it
 * holds).  A regular file that cannot be mapped (a file system without
 * mmap) is read the same way.  A directory is an error (EISDIR).
 *
 * The file may change while it is mapped; like every mmap reader this one
 * assumes it is not truncated under it (SIGBUS).
 *
 * Thread-safety: reentrant; a struct mapfile belongs to the thread that
 * loaded it.
 */
#ifndef PMC_MAPFILE_H
#define PMC_MAPFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mapfile {
    const char *data; /* size bytes, not NUL-terminated; NULL or a buffer when size is 0 */
    size_t size;      /* bytes */
    bool mapped;      /* data is a private mapping: whole pages of it may be given
                         back with madvise(MADV_DONTNEED), and are read again from the file */
};

/* Load the whole file at path into *mf.  Returns 0, or -1 with errno set
 * (ENOENT, EACCES, EISDIR, ENOMEM, an I/O error of read(2), ...) and err
 * "PATH: <strerror>"; on failure *mf is zeroed and nothing stays open or
 * allocated.  The descriptor is closed before returning (a mapping outlives
 * it).  Release with mapfile_release(). */
int mapfile_load(struct mapfile *mf, const char *path, struct pmc_error *err);

/* The same for a file the caller opened (fd, readable; path for messages
 * only).  fd stays open: the caller closes it (a mapping outlives it). */
int mapfile_load_fd(struct mapfile *mf, int fd, const char *path, struct pmc_error *err);

/* Unmap or free what mapfile_load() gave and zero *mf.  errno is kept.  A
 * zeroed struct (a failed load, or one released already) is a no-op. */
void mapfile_release(struct mapfile *mf);

#ifdef __cplusplus
}
#endif
#endif
