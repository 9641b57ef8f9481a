/* comm.h - the message transport between the master and the node agents.
 *
 * A thread hands an encoded message (io/msg.h) to comm_send() and goes on;
 * it arrives in the destination rank's master or agent mailbox.  Between
 * the master and the agent of one rank it goes from mailbox to mailbox
 * without MPI.  With more than one rank a progress thread is the only
 * thread that calls MPI after start-up; it never spins a core, and rings
 * the doorbell of a receiver on its host after each message.  Messages to
 * one destination arrive in the order they were sent.  A message that
 * cannot be received for want of memory waits in MPI; after
 * COMM_OOM_GIVEUP_S of that the rank ends the job with MPI_Abort.  How the
 * progress thread polls and sleeps: docs/modules.md "comm".
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

/* This rank's doorbell and its peers on its host, for comm_create(). */
struct comm_doorbells {
    struct doorbell bell;       /* this rank's, bound; the comm takes it (closes it) */
    const unsigned char *local; /* size entries: 1 for a peer on this host, rung after each
                                   message sent to it; copied */
    bool all_local;             /* every rank that sends to this one rings: sleep until rung */
};

/* Create this rank's transport.  master_box: rank 0's master inbox (else
 * NULL); agent_box: the local agent's (NULL: no agent here).  bells: NULL,
 * or the doorbells (taken, even on failure); with bells->all_local the
 * progress thread sleeps until rung instead of polling.  Starts the
 * progress thread when size > 1; needs MPI_THREAD_MULTIPLE.  NULL with err. */
struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct comm_doorbells *bells, struct pmc_error *err);

/* Send the message built in b (msg_end() done) to (dst, box).  Takes b's
 * storage (b is left empty, ready for msg_begin()).  Any thread.  Returns 0,
 * or -1 with ENOMEM, or EPIPE after comm_close() began. */
int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b);

/* Send a mail built beforehand (mail_control()) to m->peer, box m->tag;
 * takes m.  Any thread; never allocates or fails, so the messages that end
 * a run go out when memory is gone. */
void comm_send_mail(struct comm *c, struct mail *m);

/* Bytes and messages that went through MPI (local hand-offs not counted). */
struct comm_stats {
    uint64_t msgs_sent, bytes_sent;
    uint64_t msgs_recv, bytes_recv;
    uint64_t wakeups;     /* times the progress thread went to sleep (or found work just then) */
    uint64_t rings_sent;  /* doorbells rung (at most one per message to a local peer) */
    uint64_t rings_heard; /* rings read from this rank's doorbell that announced new messages */
};
void comm_get_stats(const struct comm *c, struct comm_stats *out);

/* Finish queued sends, stop the progress thread, free.  The creating
 * thread, once no other thread sends.  NULL is a no-op. */
void comm_close(struct comm *c);

/* Tests only: the longest poll interval (us) when the last message moved
 * since_moved_ns ago: 100 within 5 ms, then max(10,000, since/50), at most
 * 100,000.  Pure. */
long comm__idle_cap_us(uint64_t since_moved_ns);

/* Tests only: the sleep (us): 100,000 when woken by rings, else idle_us.
 * Pure. */
long comm__sleep_us(bool rung, long idle_us);

#ifdef __cplusplus
}
#endif
#endif
