/* doorbell.h - wake-ups between the processes of one host, for the MPI
 * progress threads (engine/transport/comm.c).
 *
 * MPI has nothing a thread can sleep on until a message comes: a receiver
 * polls (a probe for messages), and a message waits for the next poll.
 * So while messages flow the progress thread polls every 20-100 us, which
 * costs ~15 us of CPU per task on each side in PMC's launch shape (all
 * ranks on one host; docs/performance-history.md section 19).  Between the ranks of
 * one host a doorbell removes the guesswork: after each MPI send to a rank
 * on its own host, the sender rings that rank's doorbell, and the receiver
 * sleeps in poll() on it with its other descriptors.
 *
 * A doorbell is a UNIX datagram socket bound in Linux's abstract namespace
 * (unix(7): no file, gone when the process is) under the name
 * "pmc-hybrid.<job key in hex>.<rank>".  The job key is a random number
 * rank 0 draws and every rank learns at start-up (transport_place()): two
 * jobs on one host never share a name, and a name cannot be taken ahead
 * of the job.  A ring is a datagram carrying the sender's rank and how
 * many messages it has sent to the receiver so far; the receiver checks
 * the sender's bound name against the rank it claims, so only the job's
 * own ranks can ring it (the names are visible to every local user in
 * /proc/net/unix, but only the job holds them).
 *
 * The ledger (struct doorbell_ledger) keeps, per peer on this host, the
 * messages sent, received and announced (the highest count rung), and
 * says when the progress thread may sleep until rung: every message
 * announced has been received, every message received was announced, and
 * no ring of ours waits to be sent again.  Counts rather than one ring
 * per message, so a ring that could not be sent (EAGAIN: the receiver's
 * queue, net.unix.max_dgram_qlen datagrams, or our socket's send buffer,
 * shared by all the rings we have out, is full) is made good by the next
 * one, which the sender tries on each pass of its loop until it goes
 * through.  A peer that can never ring (another network namespace: the
 * name is not found there, ECONNREFUSED; or its doorbell could not be
 * bound) is found by a probe at start (doorbell_ledger_probe(): a ring
 * announcing nothing, refused both ways alike), and the receiver then
 * polls for its messages as it would without doorbells.
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

/* Bind rank's doorbell of job key (nonblocking, close-on-exec).  Returns 0,
 * or -1 with err (d->fd = -1) when the socket cannot be made or the name is
 * taken (EADDRINUSE: another process holds it). */
int doorbell_open(struct doorbell *d, uint64_t key, int rank, struct pmc_error *err);

/* Ring rank's doorbell of d's job with r (one datagram).  Returns 0, or -1
 * with errno: ECONNREFUSED when no process of this network namespace has
 * that doorbell open, EAGAIN when the receiver's queue or d's send buffer
 * is full (try again once the receiver read some). */
int doorbell_send(const struct doorbell *d, int rank, const struct doorbell_ring *r);

/* Read the next ring queued at d into *r, checking that it is one (its
 * size exactly, zero 0), that it came from the doorbell of rank r->from of
 * d's job and that r->from < nranks.  Returns 1 for such a ring, 0 for a
 * datagram that is not one (dropped), -1 when none is left (EAGAIN). */
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

/* A ledger for rank self among nranks ranks, whose peers on this host are
 * the ranks r with local[r] != 0 (r != self).  Returns 0, or -1 with
 * ENOMEM (l then empty: doorbell_ledger_free() is a no-op on it). */
int doorbell_ledger_init(struct doorbell_ledger *l, int self, int nranks,
                         const unsigned char *local);
void doorbell_ledger_free(struct doorbell_ledger *l);

/* A message was sent to rank peer (after MPI took it): count it and ring
 * peer's doorbell when peer is on this host. */
void doorbell_ledger_sent(struct doorbell_ledger *l, const struct doorbell *d, int peer);

/* Ring every peer once, announcing nothing (count 0: old news to it), to
 * find those that cannot be rung: ECONNREFUSED means another network
 * namespace or no doorbell, and such a peer cannot ring us either, so the
 * ledger is never even (its messages are polled for, from the first).
 * Call once, after every peer bound its doorbell (a collective later). */
void doorbell_ledger_probe(struct doorbell_ledger *l, const struct doorbell *d);

/* Send again the rings that failed with EAGAIN (cheap when none did). */
void doorbell_ledger_retry(struct doorbell_ledger *l, const struct doorbell *d);

/* A message from rank peer was received: count it. */
void doorbell_ledger_received(struct doorbell_ledger *l, int peer);

/* Read every ring queued at d into the ledger.  Returns how many rings
 * announced new messages. */
long doorbell_ledger_hear(struct doorbell_ledger *l, const struct doorbell *d);

/* True when every message announced was received, every message received
 * was announced, no ring of ours waits to be sent again and every peer can
 * ring: nothing is on its way that a ring would not wake us for. */
bool doorbell_ledger_even(const struct doorbell_ledger *l);

#ifdef __cplusplus
}
#endif
#endif
