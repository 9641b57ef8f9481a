/* comm.h - the transport between the master and the node agents.
 *
 * One small interface over MPI (docs/design.md sections 1 and 7): a thread hands
 * an encoded message (io/msg.h) to comm_send() and goes on; the message
 * arrives in the destination rank's master or agent mailbox.  Messages
 * between the master and the agent of the same rank never touch MPI: they go
 * straight from one mailbox to the other.
 *
 * With more than one rank, a progress thread is the only thread that calls
 * MPI after start-up: it drains the outbox with MPI_Isend, completes sends
 * with MPI_Testsome, and receives with MPI_Iprobe + MPI_Recv (the probe
 * sizes each buffer exactly, so batches of any size need no pre-posted
 * maximum; when no memory can be had the message waits in MPI and is
 * received on a later pass, never dropped; when memory stays out of reach
 * for COMM_OOM_GIVEUP_S the rank says so and ends the job with MPI_Abort,
 * as hydra does for a lost rank: the rescue log keeps what finished).  When nothing moves it sleeps
 * on the outbox eventfd with a timeout that backs off from 20 us to 10 ms, and past that to 1/50 of
 * the time since the last message moved (at most 100 ms): it never spins a core (a local send wakes
 * it at once; a remote message that ends a quiet spell of T waits at most max(10 ms, T/50)).
 * Between ranks of one host each message is followed by a ring of the receiver's doorbell
 * (engine/transport/doorbell.h), and a rank whose every peer rings sleeps until rung (with a 100 ms
 * safety net) instead of polling every 20-100 us while messages flow (PMC's one rank per core: ~15
 * us of CPU per task on each side, and up to a poll interval late per message,
 * docs/performance-history.md sections 19 and 20). MPI delivers messages between one pair of ranks
 * with one tag in order, and all messages of a rank to one destination go through this one thread,
 * so per-destination order is kept (a task's forwarded data travels inside its result, so no
 * cross-message ordering is needed).
 */
#ifndef PMC_COMM_H
#define PMC_COMM_H

#include <stdint.h>

#include "engine/transport/doorbell.h"
#include "engine/transport/mailbox.h"
#include "io/error.h"
#include "io/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

enum comm_box {
    COMM_TO_MASTER = 1, /* MPI tag of messages for the master (rank 0) */
    COMM_TO_AGENT = 2,  /* MPI tag of messages for a node agent */
};

struct comm;

/* This rank's doorbell and its peers on its own host (engine/transport/doorbell.h),
 * for comm_create(). */
struct comm_doorbells {
    struct doorbell bell;       /* this rank's, bound; the comm takes it (closes it) */
    const unsigned char *local; /* size entries: 1 for a peer on this host, rung after each
                                   message sent to it; copied */
    bool all_local;             /* every rank that sends to this one rings: sleep until rung */
};

/* Create the transport of this rank.  master_box is rank 0's master inbox
 * (NULL on other ranks); agent_box the local node agent's inbox (NULL when
 * this rank runs no agent, e.g. rank 0 with --master-only).  bells, when
 * not NULL, are this rank's doorbell and its peers on its host: the comm
 * rings a local peer after each message to it and, when bells->all_local,
 * sleeps between messages until rung instead of polling every 20-100 us
 * while messages flow (the comm takes bells->bell even on failure).
 * Starts the progress thread when size > 1.  MPI must be initialised with
 * MPI_THREAD_MULTIPLE.  NULL with err on failure. */
struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct comm_doorbells *bells, struct pmc_error *err);

/* Send the message built in b (msg_end() done) to (dst, box).  Takes b's
 * storage (b is left empty, ready for msg_begin()).  Any thread.  Returns 0,
 * or -1 with ENOMEM, or EPIPE after comm_close() began. */
int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b);

/* Send a mail built beforehand (mail_control()) to rank m->peer, box
 * m->tag.  Takes m.  Any thread; never allocates and never fails, so the
 * messages that end a run (ABORT, BYE, SHUTDOWN, DRAIN) go out when memory
 * is gone. */
void comm_send_mail(struct comm *c, struct mail *m);

/* Bytes and messages that went through MPI (local hand-offs not counted). */
struct comm_stats {
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_recv, bytes_recv;
    uint64_t wakeups;     /* times the progress thread went to sleep (or found work just then) */
    uint64_t rings_sent;  /* doorbells rung: one per message to a peer on this host, fewer when
                             a ring sent again announces several */
    uint64_t rings_heard; /* rings read from this rank's doorbell that announced new messages */
};
void comm_get_stats(const struct comm *c, struct comm_stats *out);

/* Finish every queued send, stop the progress thread, free.  Call from the
 * thread that created it, after every other thread stopped sending.  NULL is
 * a no-op. */
void comm_close(struct comm *c);

/* The progress thread's longest poll interval, in microseconds, when the
 * last message moved since_moved_ns nanoseconds ago: 100 within 5 ms,
 * then max(10,000, since/50 in us), at most 100,000 (comm.c has the
 * reasons).  Pure; internal, exposed for the tests. */
long comm__idle_cap_us(uint64_t since_moved_ns);

/* How long the progress thread sleeps, in microseconds: 100,000 when rung
 * (asleep until rung, the peers ring: a poll is only a safety net), else
 * idle_us, its poll interval.  Pure; internal, exposed for the tests. */
long comm__sleep_us(bool rung, long idle_us);

#ifdef __cplusplus
}
#endif
#endif
