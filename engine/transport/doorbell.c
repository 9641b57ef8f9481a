/* doorbell.c - abstract UNIX datagram sockets as wake-ups between the
 * ranks of one host; see doorbell.h. */
#include "engine/transport/doorbell.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
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

int doorbell_send(const struct doorbell *d, int rank, const struct doorbell_ring *r)
{
    struct sockaddr_un a;
    socklen_t len = doorbell_address(d->key, rank, &a);
    ssize_t n =
        sendto(d->fd, r, sizeof *r, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&a, len);
    return n < 0 ? -1 : 0;
}

int doorbell_recv(const struct doorbell *d, int nranks, struct doorbell_ring *r)
{
    struct sockaddr_un from;
    socklen_t flen = sizeof from;
    /* MSG_TRUNC: n is the datagram's true length, so a longer one is seen */
    ssize_t n =
        recvfrom(d->fd, r, sizeof *r, MSG_DONTWAIT | MSG_TRUNC, (struct sockaddr *)&from, &flen);
    if (n < 0)
        return -1;
    if (n != (ssize_t)sizeof *r || r->zero != 0 || r->from >= (uint32_t)nranks)
        return 0;
    struct sockaddr_un want;
    socklen_t wlen = doorbell_address(d->key, (int)r->from, &want);
    return flen == wlen && memcmp(&from, &want, wlen) == 0;
}

void doorbell_close(struct doorbell *d)
{
    if (d->fd >= 0)
        close(d->fd);
    d->fd = -1;
}

int doorbell_ledger_init(struct doorbell_ledger *l, int self, int nranks,
                         const unsigned char *local)
{
    memset(l, 0, sizeof *l);
    l->self = self;
    l->nranks = nranks;
    l->index = malloc(sizeof *l->index * (size_t)nranks);
    if (!l->index)
        return -1;
    int n = 0;
    for (int r = 0; r < nranks; r++)
        l->index[r] = local[r] && r != self ? n++ : -1;
    l->npeers = n;
    l->peer = calloc(n ? (size_t)n : 1, sizeof *l->peer); /* never a 0-byte allocation */
    if (!l->peer) {
        doorbell_ledger_free(l);
        errno = ENOMEM;
        return -1;
    }
    for (int r = 0; r < nranks; r++)
        if (l->index[r] >= 0)
            l->peer[l->index[r]] = (struct doorbell_peer){.rank = r, .ringing = true};
    return 0;
}

void doorbell_ledger_free(struct doorbell_ledger *l)
{
    free(l->index);
    free(l->peer);
    memset(l, 0, sizeof *l);
}

/* Rank peer's index among l's peers, -1 when it is none (or out of range). */
static int ledger_index(const struct doorbell_ledger *l, int peer)
{
    return peer >= 0 && peer < l->nranks && l->index ? l->index[peer] : -1;
}

/* Peer i's received or announced count is about to change to value: keep
 * nuneven right. */
static void ledger_set(struct doorbell_ledger *l, int i, uint64_t *field, uint64_t value)
{
    struct doorbell_peer *p = &l->peer[i];
    bool was = p->received == p->announced;
    *field = value;
    bool is = p->received == p->announced;
    l->nuneven += was && !is ? 1 : !was && is ? -1 : 0;
}

static void ledger_owe(struct doorbell_ledger *l, int i, bool owed)
{
    l->nowed += owed && !l->peer[i].owed ? 1 : !owed && l->peer[i].owed ? -1 : 0;
    l->peer[i].owed = owed;
}

/* Send peer i a ring announcing count: 0 when it went, 1 when a queue or
 * buffer was full (EAGAIN, ENOBUFS: try again later), -1 when the peer
 * cannot be rung (ECONNREFUSED and the like). */
static int ledger_send(const struct doorbell_ledger *l, const struct doorbell *d, int i,
                       uint64_t count)
{
    struct doorbell_ring r = {.from = (uint32_t)l->self, .count = count};
    if (doorbell_send(d, l->peer[i].rank, &r) == 0)
        return 0;
    return errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ? 1 : -1;
}

/* Ring peer i with its current count.  A full queue leaves the ring owed
 * (doorbell_ledger_retry()); a refusal stops ringing the peer. */
static void ledger_ring(struct doorbell_ledger *l, const struct doorbell *d, int i)
{
    if (!l->peer[i].ringing)
        return;
    int rc = ledger_send(l, d, i, l->peer[i].sent);
    if (rc == 0)
        l->rings_sent++;
    else if (rc < 0)
        l->peer[i].ringing = false; /* it polls for our messages */
    ledger_owe(l, i, rc > 0);
}

void doorbell_ledger_sent(struct doorbell_ledger *l, const struct doorbell *d, int peer)
{
    int i = ledger_index(l, peer);
    if (i < 0)
        return;
    l->peer[i].sent++;
    ledger_ring(l, d, i);
}

void doorbell_ledger_probe(struct doorbell_ledger *l, const struct doorbell *d)
{
    for (int i = 0; i < l->npeers; i++) {
        if (ledger_send(l, d, i, 0) < 0) {
            l->peer[i].ringing = false;
            ledger_owe(l, i, false); /* nothing is owed to a peer never rung again */
            l->nsilent++;
        }
    }
}

void doorbell_ledger_retry(struct doorbell_ledger *l, const struct doorbell *d)
{
    for (int i = 0; l->nowed > 0 && i < l->npeers; i++)
        if (l->peer[i].owed)
            ledger_ring(l, d, i);
}

void doorbell_ledger_received(struct doorbell_ledger *l, int peer)
{
    int i = ledger_index(l, peer);
    if (i >= 0)
        ledger_set(l, i, &l->peer[i].received, l->peer[i].received + 1);
}

long doorbell_ledger_hear(struct doorbell_ledger *l, const struct doorbell *d)
{
    long news = 0;
    struct doorbell_ring r;
    int got;
    while ((got = doorbell_recv(d, l->nranks, &r)) >= 0) {
        int i = got ? l->index[r.from] : -1;
        if (i < 0 || r.count <= l->peer[i].announced)
            continue; /* not a peer's, or old news (a ring sent again) */
        ledger_set(l, i, &l->peer[i].announced, r.count);
        l->rings_heard++;
        news++;
    }
    return news;
}

bool doorbell_ledger_even(const struct doorbell_ledger *l)
{
    return l->nuneven == 0 && l->nowed == 0 && l->nsilent == 0;
}
