/* fdio.c - see fdio.h. */
#include "io/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fdio_standard_fds(void)
{
    int opened = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
            continue;
        /* every lower descriptor is valid now: open() gives fd itself */
        int nfd = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
        if (nfd < 0)
            return -1;
        if (nfd != fd) { /* cannot happen (see above); keep the promise anyway */
            int rc = dup2(nfd, fd);
            int e = errno;
            close(nfd);
            if (rc < 0) {
                errno = e;
                return -1;
            }
        }
        opened |= 1 << fd;
    }
    return opened;
}

/* The one write-all loop: write(2) at the file position when off is NULL,
 * else pwrite(2) at *off, advancing it. */
static int fdio__write_loop(int fd, const void *p, size_t n, off_t *off)
{
    const char *c = p;
    while (n > 0) {
        ssize_t w = off ? pwrite(fd, c, n, *off) : write(fd, c, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return errno;
        if (w == 0)
            return errno = EIO; /* never spin on a descriptor that takes nothing */
        c += w;
        n -= (size_t)w;
        if (off)
            *off += w;
    }
    return 0;
}

int fdio_write_all(int fd, const void *p, size_t n)
{
    return fdio__write_loop(fd, p, n, NULL);
}

int fdio_pwrite_all(int fd, const void *p, size_t n, off_t *off)
{
    return fdio__write_loop(fd, p, n, off);
}

bool fdio_not_regular(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

bool fdio_still_at(int fd, const char *path)
{
    struct stat open_st, path_st;
    if (fstat(fd, &open_st) < 0)
        return false;
    if (stat(path, &path_st) < 0)
        return false; /* ENOENT: nothing there */
    if (open_st.st_nlink > 0 && fdio_same_file(&open_st, &path_st))
        return true;
    errno = EEXIST; /* path names another file: ours was replaced */
    return false;
}

bool fdio_reader_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* PATH.tmp into tmp; -1 with err when it does not fit. */
static int tmp_path(char tmp[PATH_MAX], const char *path, struct pmc_error *err)
{
    if (snprintf(tmp, PATH_MAX, "%s.tmp", path) < PATH_MAX)
        return 0;
    return pmc_errorf(err, "%s: %s", path, strerror(ENAMETOOLONG));
}

int fdio_check_replaceable(const char *path, struct pmc_error *err)
{
    char tmp[PATH_MAX];
    struct stat st;
    if (tmp_path(tmp, path, err) < 0)
        return -1;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return pmc_errorf(err, "%s: %s", path, strerror(EISDIR));
    if (fdio_not_regular(path))
        return pmc_errorf(err, "%s: not a regular file (it would be replaced by one)", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
        close(fd);
        unlink(tmp); /* created with O_EXCL: it is ours */
        return 0;
    }
    if (errno != EEXIST)
        return pmc_errorf(err, "%s: %s", tmp, strerror(errno));
    /* a stale PATH.tmp from a crash: the writer replaces it if it can */
    if (stat(tmp, &st) == 0 && S_ISDIR(st.st_mode))
        return pmc_errorf(err, "%s: %s", tmp, strerror(EISDIR));
    return 0;
}

void fdio_dir_of(const char *path, char *dir, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == path)
        snprintf(dir, size, "/");
    else
        snprintf(dir, size, "%.*s", (int)(slash - path), path);
}

int fdio_fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    if (rc < 0 && (errno == EINVAL || errno == EBADF))
        rc = 0;
    int saved = errno;
    close(fd);
    errno = saved;
    return rc;
}

int fdio_replace_file(const char *path, const void *p, size_t n, struct pmc_error *err)
{
    char tmp[PATH_MAX];
    if (tmp_path(tmp, path, err) < 0)
        return -1;
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return pmc_errorf(err, "%s: %s", tmp, strerror(errno));
    int e = fdio_write_all(fd, p, n);
    if (close(fd) < 0 && !e)
        e = errno;
    if (!e && fdio_not_regular(path))
        e = EEXIST; /* never replace a device, FIFO or socket (/dev/null as root) */
    if (!e && rename(tmp, path) < 0)
        e = errno;
    if (!e)
        return 0;
    unlink(tmp);
    return pmc_errorf(err, "%s: %s", tmp, strerror(e));
}
