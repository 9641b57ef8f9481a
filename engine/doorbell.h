/* doorbell.h - wake-ups between the processes of one host, for the MPI
 * progress threads (engine/comm.c).
 *
 * MPI has nothing a thread can sleep on until a message comes: a receiver
 * polls (a probe for messages), and a message waits for the next poll.
 * So while messages flow the progress thread polls every 20-100 us, which
 * costs ~15 us of CPU per task on each side in PMC's launch shape (all
 * ranks on one host; docs/performance.md section 19).  Between the ranks of
 * one host a doorbell removes the guesswork: after each MPI send to a rank
 * on its own host, the sender rings that rank's doorbell, and the receiver
 * sleeps in poll() on it with its other descriptors.
 *
 * A doorbell is a UNIX datagram socket bound in Linux's abstract namespace
 * (unix(7): no file, gone when the process is) under the name
 * "pmc-hybrid.<job key in hex>.<rank>"; a ring is one empty datagram, so
 * the receiver can count rings against the messages it received.  The job
 * key is a random number rank 0 draws and every rank learns at start-up
 * (transport_place()): two jobs on one host never share a name, and a
 * name cannot be taken ahead of the job.  Rings that cannot be delivered
 * (no such doorbell: another network namespace, or the peer's doorbell
 * could not be bound; a full queue, net.unix.max_dgram_qlen rings unread)
 * are lost, and the receiver must then find its messages by polling: the
 * caller's rule (comm.c) is to sleep long only while every message it was
 * rung for has arrived and every message it received was rung for.
 *
 * Thread-safety: doorbell_ring() may be called from any thread; one
 * thread drains a doorbell.  Nothing here allocates.
 */
#ifndef PMC_DOORBELL_H
#define PMC_DOORBELL_H

#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct doorbell {
    int fd;       /* the bound socket, -1 when closed */
    uint64_t key; /* the job key of the names it rings */
};

/* Bind rank's doorbell of job key (nonblocking, close-on-exec).  Returns 0,
 * or -1 with err (d->fd = -1) when the socket cannot be made or the name is
 * taken (EADDRINUSE: another process holds it). */
int doorbell_open(struct doorbell *d, uint64_t key, int rank, struct pmc_error *err);

/* Ring rank's doorbell of d's job (one datagram).  Returns 0, or -1 with
 * errno: ECONNREFUSED when no process of this host's network namespace has
 * that doorbell open, EAGAIN when its queue is full (it has rings unread). */
int doorbell_ring(const struct doorbell *d, int rank);

/* Read every ring queued at d; returns how many (0 when none). */
long doorbell_drain(const struct doorbell *d);

/* Close d (d->fd = -1).  A closed or zeroed-then-fd=-1 doorbell is a no-op. */
void doorbell_close(struct doorbell *d);

#ifdef __cplusplus
}
#endif
#endif
