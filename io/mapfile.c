/* mapfile.c - see mapfile.h.  One reader for the DAG file and the rescue
 * log, which had a copy each and disagreed on /proc files and on mmap()
 * failures. */
#include "io/mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAPFILE__READ_CHUNK ((size_t)1 << 16) /* first buffer for read(); doubles */

/* Read fd to its end into mf (a malloc'ed buffer).  0, or -1 with errno;
 * nothing allocated on failure. */
static int mapfile__read(int fd, struct mapfile *mf)
{
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t ncap = cap ? 2 * cap : MAPFILE__READ_CHUNK;
            char *p = ncap > cap ? realloc(buf, ncap) : NULL;
            if (!p)
                goto fail_nomem;
            buf = p;
            cap = ncap;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        len += (size_t)n;
    }
    mf->data = buf;
    mf->size = len;
    mf->mapped = false;
    return 0;
fail_nomem:
    errno = ENOMEM;
fail:;
    int e = errno;
    free(buf);
    errno = e;
    return -1;
}

/* Map a regular file of size bytes (> 0).  0, or -1 with errno. */
static int mapfile__map(int fd, size_t size, struct mapfile *mf)
{
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    (void)madvise(p, size, MADV_SEQUENTIAL); /* a hint; failure is harmless */
    mf->data = p;
    mf->size = size;
    mf->mapped = true;
    return 0;
}

/* Map or read the open file fd.  0, or -1 with errno. */
static int mapfile__load_fd(int fd, struct mapfile *mf)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return -1;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > SIZE_MAX) {
        errno = EFBIG;
        return -1;
    }
    /* st_size 0 may be a /proc file that has bytes: read() tells */
    if (S_ISREG(st.st_mode) && st.st_size > 0 && mapfile__map(fd, (size_t)st.st_size, mf) == 0)
        return 0;
    return mapfile__read(fd, mf); /* a pipe, a device, or a file that cannot be mapped */
}

/* "PATH: <strerror(errno)>", errno kept; returns -1. */
static int mapfile__error(const char *path, struct pmc_error *err)
{
    char eb[128];
    return pmc_errorf(err, "%s: %s", path, strerror_r(errno, eb, sizeof eb)); /* GNU: reentrant */
}

int mapfile_load_fd(struct mapfile *mf, int fd, const char *path, struct pmc_error *err)
{
    memset(mf, 0, sizeof *mf);
    if (mapfile__load_fd(fd, mf) == 0)
        return 0;
    int e = errno;
    memset(mf, 0, sizeof *mf);
    errno = e;
    return mapfile__error(path, err);
}

int mapfile_load(struct mapfile *mf, const char *path, struct pmc_error *err)
{
    memset(mf, 0, sizeof *mf);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return mapfile__error(path, err);
    int rc = mapfile_load_fd(mf, fd, path, err);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

void mapfile_release(struct mapfile *mf)
{
    int e = errno;
    if (mf->mapped)
        munmap((void *)mf->data, mf->size);
    else
        free((void *)mf->data);
    memset(mf, 0, sizeof *mf);
    errno = e;
}
