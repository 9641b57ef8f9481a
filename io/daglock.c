/* daglock.c - OFD write lock on the DAG file; see daglock.h. */
#include "io/daglock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/dagfile.h"

int daglock_hold(int fd)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    return fcntl(fd, F_OFD_SETLK, &fl);
}

/* Lock the open fd of path (what: NULL or its description); the fd on
 * success, else it is closed and -1 returned with err. */
static int lock_open_file(int fd, const char *path, const char *what, struct pmc_error *err)
{
    if (daglock_hold(fd) == 0)
        return fd;
    int e = errno;
    close(fd);
    errno = e;
    if (e == EAGAIN || e == EACCES)
        return pmc_errorf(err, "%s%s%s is locked by another pmc-hybrid run (-n skips the lock)",
                          what ? what : "", what ? " " : "", path);
    return pmc_errorf(err, "%s: cannot lock: %m", path);
}

int daglock_acquire(const char *path, struct pmc_error *err)
{
    if (dagfile_check_regular(path, err) < 0)
        return -1; /* never opened for writing: a FIFO's open would wait */
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        if (errno == EACCES || errno == EROFS || errno == EPERM)
            return -2;
        return pmc_errorf(err, "%s: %m", path);
    }
    return lock_open_file(fd, path, NULL, err);
}

int daglock_acquire_output(const char *path, const char *what, bool *created, struct pmc_error *err)
{
    *created = false;
    struct stat st;
    for (int tries = 0; tries < 8; tries++) { /* a file made or removed meanwhile: again */
        if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
            return -2; /* a FIFO would block, a directory cannot be locked */
        int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0 && errno == ENOENT) {
            fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0 && errno == EEXIST)
                continue;
            *created = fd >= 0;
        }
        if (fd < 0)
            return -2;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
            close(fd);
            return -2;
        }
        int locked = lock_open_file(fd, path, what, err);
        if (locked < 0 && *created && errno != EAGAIN && errno != EACCES)
            unlink(path); /* ours and empty: no lock can be had here */
        if (locked < 0)
            *created = false; /* (a run that took it first owns it now) */
        return locked;
    }
    return -2;
}
