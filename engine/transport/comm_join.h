/* comm_join.h - comm.h over the join link (engine/transport/join.h): the
 * master of a run started with --listen and the agents that joined it
 * exchange the same io/msg.h messages as the ranks of one MPI job, so the
 * master's and the agent's logic do not know which transport carries them
 * (docs/join.md).
 *
 * A progress thread owns the link: it sends the outbox's mails (a mail's
 * peer is the agent's join number on the master, 0 on an agent), delivers
 * each DATA message into the inbox with the sender's rank as its peer (an
 * agent's join number, or 0 for the master), and turns a link lost into
 * an io/msg.h PEER_LOST mail: on the master, one for each agent lost or
 * gone; on an agent, one when the master is lost (mails sent after that
 * are dropped).  comm_close() sends what is queued, then closes the link
 * (join_close(): BYE, and the master removes its access file).
 */
#ifndef PMC_COMM_JOIN_H
#define PMC_COMM_JOIN_H

#include "engine/transport/comm.h"
#include "engine/transport/join.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Run comm.h over j (taken, even on failure: closed then).  The master
 * (from join_listen()) passes rank 0 and its master_box; an agent (from
 * join_connect()) passes its join number as rank and its agent_box.  The
 * calling thread must own j; the progress thread owns it from here.
 * NULL with err. */
struct comm *comm_create_joined(struct join *j, int rank, struct mailbox *master_box,
                                struct mailbox *agent_box, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
