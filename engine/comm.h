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
 * it at once; a remote message that ends a quiet spell of T waits at most max(10 ms, T/50)). MPI
 * delivers messages between one pair of ranks with one tag in order, and all messages of a rank to
 * one destination go through this one thread, so per-destination order is kept (a task's forwarded
 * data travels inside its result, so no cross-message ordering is needed).
 */
#ifndef PMC_COMM_H
#define PMC_COMM_H

#include <stdint.h>

#include "engine/mailbox.h"
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

/* Create the transport of this rank.  master_box is rank 0's master inbox
 * (NULL on other ranks); agent_box the local node agent's inbox (NULL when
 * this rank runs no agent, e.g. rank 0 with --master-only).  Starts the
 * progress thread when size > 1.  MPI must be initialised with
 * MPI_THREAD_MULTIPLE.  NULL with err on failure. */
struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct pmc_error *err);

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
};
void comm_get_stats(const struct comm *c, struct comm_stats *out);

/* Finish every queued send, stop the progress thread, free.  Call from the
 * thread that created it, after every other thread stopped sending.  NULL is
 * a no-op. */
void comm_close(struct comm *c);

/* The progress thread's longest poll interval, in microseconds, when the
 * last message moved since_moved_ns nanoseconds ago: 100 within 5 ms, then
 * max(10,000, since/50 in us), at most 100,000 (comm.c has the reasons).
 * Pure; internal, exposed for the tests. */
long comm__idle_cap_us(uint64_t since_moved_ns);

#ifdef __cplusplus
}
#endif
#endif
