/* comm.c - what every transport backend shares (comm_internal.h): the
 * outbox comm_send() fills, delivery to this rank's own inboxes, the
 * statistics and the progress thread's start and end.  No MPI, no
 * ZeroMQ: those are comm_mpi.c's and comm_join.c's. */
#include "engine/transport/comm_internal.h"

#include <errno.h>
#include <stdlib.h>

struct comm *comm__new(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                       struct pmc_error *err)
{
    struct comm *c = calloc(1, sizeof *c);
    if (!c) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    c->rank = rank;
    c->size = size;
    c->master_box = master_box;
    c->agent_box = agent_box;
    if (mailbox_init(&c->outbox) < 0) {
        pmc_errorf(err, "eventfd: %m");
        free(c);
        return NULL;
    }
    return c;
}

int comm__start(struct comm *c, void *(*main)(void *), const char *name, struct pmc_error *err)
{
    int rc = pthread_create(&c->thread, NULL, main, c);
    if (rc != 0) {
        errno = rc;
        return pmc_errorf(err, "cannot start the %s thread: %m", name);
    }
    pthread_setname_np(c->thread, name);
    c->has_thread = true;
    return 0;
}

void comm__deliver(struct comm *c, struct mail *m)
{
    struct mailbox *box = m->tag == COMM_TO_MASTER ? c->master_box : c->agent_box;
    if (box)
        mailbox_push(box, m);
    else
        mail_free(m); /* no such inbox here: a protocol error the peer will time out on */
}

void comm__free(struct comm *c)
{
    if (!c)
        return;
    if (c->free_backend)
        c->free_backend(c);
    mailbox_destroy(&c->outbox);
    free(c);
}

void comm_send_mail(struct comm *c, struct mail *m)
{
    if (m->peer == c->rank) {
        comm__deliver(c, m); /* peer: the sender, which is this rank */
        return;
    }
    mailbox_push(&c->outbox, m);
}

int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b)
{
    struct mail *m = mail_from_msgbuf(dst, box, b);
    if (!m)
        return -1;
    comm_send_mail(c, m);
    return 0;
}

void comm_get_stats(const struct comm *c, struct comm_stats *out)
{
    out->msgs_sent = atomic_load(&c->msgs_sent);
    out->bytes_sent = atomic_load(&c->bytes_sent);
    out->msgs_recv = atomic_load(&c->msgs_recv);
    out->bytes_recv = atomic_load(&c->bytes_recv);
    out->wakeups = atomic_load(&c->wakeups);
    out->rings_sent = atomic_load(&c->rings_sent);
    out->rings_heard = atomic_load(&c->rings_heard);
}

void comm_close(struct comm *c)
{
    if (!c)
        return;
    if (c->has_thread) {
        atomic_store_explicit(&c->stop, true, memory_order_release);
        mailbox_wake(&c->outbox);
        pthread_join(c->thread, NULL);
    }
    comm__free(c);
}
