/* daglock.c - OFD write lock on the DAG file; see daglock.h. */
#include "io/daglock.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "io/dagfile.h"

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
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0};
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return fd;
    int e = errno;
    close(fd);
    if (e == EAGAIN || e == EACCES)
        return pmc_errorf(err, "%s is locked by another pmc-hybrid run (-n skips the lock)", path);
    errno = e;
    return pmc_errorf(err, "%s: cannot lock: %m", path);
}
