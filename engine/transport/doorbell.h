/* doorbell.h - wake-ups between the processes of one host, for the MPI
 * progress threads (comm.c): after each MPI send to a rank on its host the
 * sender rings that rank's doorbell, so the receiver can sleep in poll()
 * rather than poll MPI.  A doorbell is a UNIX datagram socket in the
 * abstract namespace named "pmc-hybrid.<job key hex>.<rank>"; a receiver
 * accepts only rings from its job's own ranks.  A ring carries a count of
 * messages sent, so a ring that failed is made good by a later one; the
 * ledger says when every message announced was received and the thread
 * may sleep until rung.  Details: docs/modules.md "doorbell".
 *
 * Thread-safety: a doorbell and its ledger belong to one thread (the
 * progress thread).  Nothing here allocates but doorbell_ledger_init().
 */
#ifndef PMC_DOORBELL_H
#define PMC_DOORBELL_H

#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doorbell {
    int fd;       /* the bound socket, -1 when closed */
    uint64_t key; /* the job key of the names it rings */
};

/* What a ring says: the sender, and the messages it sent to the receiver
 * so far (1 after the first).  One datagram of exactly this size. */
struct doorbell_ring {
    uint32_t from;
    uint32_t zero; /* 0: a ring with anything else here is dropped */
    uint64_t count;
};

/* Bind rank's doorbell of job key (nonblocking, close-on-exec).  0, or -1
 * with err and d->fd = -1 (EADDRINUSE: another process holds the name). */
int doorbell_open(struct doorbell *d, uint64_t key, int rank, struct pmc_error *err);

/* Ring rank's doorbell with r.  0, or -1 with errno: ECONNREFUSED (not open
 * in this network namespace), EAGAIN (a queue is full: try again later). */
int doorbell_send(const struct doorbell *d, int rank, const struct doorbell_ring *r);

/* Read the next ring into *r.  1: a valid ring from rank r->from < nranks
 * of d's job; 0: another datagram (dropped); -1: none left (EAGAIN). */
int doorbell_recv(const struct doorbell *d, int nranks, struct doorbell_ring *r);

/* Close d (d->fd = -1).  A closed doorbell is a no-op. */
void doorbell_close(struct doorbell *d);

/* One peer's counts in a ledger. */
struct doorbell_peer {
    int rank;           /* the peer */
    bool ringing;       /* false once it proved unreachable */
    bool owed;          /* the last ring failed: send again */
    uint64_t sent;      /* messages sent to it */
    uint64_t received;  /* messages received from it */
    uint64_t announced; /* the highest count it rang */
};

/* Per-peer counts of one rank's messages with its peers on its host. */
struct doorbell_ledger {
    int self, nranks;
    int npeers;                 /* peers on this host */
    struct doorbell_peer *peer; /* npeers of them, in rank order */
    int *index;                 /* nranks entries: the peer's index, -1 when not one */
    int nowed;                  /* peers with owed set */
    int nsilent;                /* peers found unreachable by doorbell_ledger_probe() */
    int nuneven;                /* peers with received != announced */
    uint64_t rings_sent, rings_heard;
};

/* A ledger for rank self of nranks; peers are the r != self with local[r].
 * 0, or -1 with ENOMEM (l left empty; freeing it is a no-op). */
int doorbell_ledger_init(struct doorbell_ledger *l, int self, int nranks,
                         const unsigned char *local);
void doorbell_ledger_free(struct doorbell_ledger *l);

/* Count a message MPI took for peer, and ring peer if it is local. */
void doorbell_ledger_sent(struct doorbell_ledger *l, const struct doorbell *d, int peer);

/* Ring every peer with count 0 to find those that cannot be rung (their
 * messages are then polled for).  Call once, after every peer bound its
 * doorbell. */
void doorbell_ledger_probe(struct doorbell_ledger *l, const struct doorbell *d);

/* Send again the rings that failed with EAGAIN (cheap when none did). */
void doorbell_ledger_retry(struct doorbell_ledger *l, const struct doorbell *d);

/* A message from rank peer was received: count it. */
void doorbell_ledger_received(struct doorbell_ledger *l, int peer);

/* Read every ring queued at d into the ledger.  Returns how many rings
 * announced new messages. */
long doorbell_ledger_hear(struct doorbell_ledger *l, const struct doorbell *d);

/* True when nothing can arrive that a ring would not wake us for: announced
 * == received for every peer, no ring owed, every peer can ring. */
bool doorbell_ledger_even(const struct doorbell_ledger *l);

#ifdef __cplusplus
}
#endif
#endif
