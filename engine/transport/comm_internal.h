/* comm_internal.h - struct comm, shared by comm.c (the outbox, local
 * delivery, statistics, the progress thread's life) and its backends:
 * comm_mpi.c (one MPI job) and comm_join.c (agents joined over the join
 * link).  Only engine/transport/ includes this header.
 *
 * Threads: comm_send() pushes to the outbox from any thread; the backend's
 * progress thread is the outbox's only consumer and owns c->backend;
 * comm__new(), comm__start() and comm_close() run on the creating thread.
 */
#ifndef PMC_COMM_INTERNAL_H
#define PMC_COMM_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "engine/transport/comm.h"

struct comm {
    int rank, size;
    struct mailbox *master_box, *agent_box;
    struct mailbox outbox; /* mails to send; peer = destination */
    pthread_t thread;
    bool has_thread;
    atomic_bool stop; /* comm_close(): send what is queued, then end the thread */
    atomic_uint_fast64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;
    atomic_uint_fast64_t wakeups, rings_sent, rings_heard;
    void *backend;                        /* the backend's state */
    void (*free_backend)(struct comm *c); /* frees backend after the thread ended; may be NULL */
};

/* A new comm with its outbox, no backend and no thread.  NULL with err
 * (out of memory, eventfd). */
struct comm *comm__new(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                       struct pmc_error *err);

/* Start the progress thread main(c) named name (top -H, gdb).  0, or -1
 * with err. */
int comm__start(struct comm *c, void *(*main)(void *), const char *name, struct pmc_error *err);

/* Put m in the inbox its tag names (COMM_TO_MASTER: master_box, else
 * agent_box); freed when this rank has no such inbox.  Any thread. */
void comm__deliver(struct comm *c, struct mail *m);

/* Free c (backend included) after its thread ended or never started.
 * NULL is a no-op. */
void comm__free(struct comm *c);

#endif
