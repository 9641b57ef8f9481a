/* doorbell.c - abstract UNIX datagram sockets as wake-ups between the
 * ranks of one host; see doorbell.h. */
#include "engine/doorbell.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The abstract address of rank's doorbell of job key: sun_path[0] = '\0',
 * then the name without a terminating NUL (unix(7)).  Returns its length. */
static socklen_t doorbell_address(uint64_t key, int rank, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    int n = snprintf(a->sun_path + 1, sizeof a->sun_path - 1, "pmc-hybrid.%016llx.%d",
                     (unsigned long long)key, rank);
    return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

int doorbell_open(struct doorbell *d, uint64_t key, int rank, struct pmc_error *err)
{
    d->key = key;
    d->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (d->fd < 0)
        return pmc_errorf(err, "rank %d: doorbell socket: %m", rank);
    struct sockaddr_un a;
    socklen_t len = doorbell_address(key, rank, &a);
    if (bind(d->fd, (struct sockaddr *)&a, len) < 0) {
        int e = errno;
        close(d->fd);
        d->fd = -1;
        errno = e;
        return pmc_errorf(err, "rank %d: doorbell @%s: %m", rank, a.sun_path + 1);
    }
    return 0;
}

int doorbell_ring(const struct doorbell *d, int rank)
{
    struct sockaddr_un a;
    socklen_t len = doorbell_address(d->key, rank, &a);
    return sendto(d->fd, "", 0, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len) < 0 ? -1
                                                                                             : 0;
}

long doorbell_drain(const struct doorbell *d)
{
    long n = 0;
    char b;
    while (recv(d->fd, &b, sizeof b, MSG_DONTWAIT) >= 0)
        n++;
    return n;
}

void doorbell_close(struct doorbell *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}
