/* comm_join.c - the join link's backend of comm.h; see comm_join.h. */
#include "engine/transport/comm_join.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/transport/comm_internal.h"
#include "io/log.h"

#define POLL_WAIT_S 1.0 /* join_poll()'s longest wait; it wakes for the outbox and heartbeats */

struct comm_joined {
    struct join *link;
    int tag;           /* the inbox of received messages: COMM_TO_MASTER or COMM_TO_AGENT */
    bool master_gone;  /* agent: the master's link was lost; sends are dropped */
    struct mail *lost; /* agent: the PEER_LOST mail for the master, built up front */
};

static struct comm_joined *joined_of(struct comm *c)
{
    return c->backend;
}

/* Send every mail of the outbox; those to a peer that is gone are dropped
 * (its PEER_LOST is, or will be, in the inbox). */
static void send_outbox(struct comm *c)
{
    struct comm_joined *x = joined_of(c);
    struct mail *m;
    while ((m = mailbox_pop(&c->outbox)) != NULL) {
        if (!x->master_gone && m->peer >= 0) {
            if (join_send(x->link, (uint32_t)m->peer, m->data, m->len) == 0) {
                atomic_fetch_add_explicit(&c->msgs_sent, 1, memory_order_relaxed);
                atomic_fetch_add_explicit(&c->bytes_sent, m->len, memory_order_relaxed);
            } else if (errno != EPIPE && errno != ENOENT) {
                log_warn("join: a message of %zu bytes to peer %d could not be sent: %s", m->len,
                         m->peer, strerror(errno));
            }
        }
        mail_free(m);
    }
}

/* A DATA message: into the inbox.  Out of memory here would lose a message
 * the run waits for (a RESULTS, a BYE), so it ends the process loudly; the
 * watchdogs of an agent's tasks end them (engine/exec/watchdog.h). */
static void deliver_data(struct comm *c, const struct join_event *ev)
{
    uint8_t *buf = malloc(ev->len ? ev->len : 1);
    struct mail *m = buf ? mail_new((int)ev->peer, joined_of(c)->tag, buf, ev->len) : NULL;
    if (!m) {
        log_fatal("join: out of memory for a message of %zu bytes from peer %u", ev->len, ev->peer);
        abort();
    }
    memcpy(buf, ev->data, ev->len);
    atomic_fetch_add_explicit(&c->msgs_recv, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&c->bytes_recv, ev->len, memory_order_relaxed);
    comm__deliver(c, m);
}

/* A link lost (join.c logged why): PEER_LOST into the inbox. */
static void deliver_lost(struct comm *c, const struct join_event *ev)
{
    struct comm_joined *x = joined_of(c);
    struct mail *m;
    if (x->tag == COMM_TO_AGENT) {
        x->master_gone = true;
        m = x->lost;
        x->lost = NULL;
    } else {
        m = mail_control((int)ev->peer, x->tag, MSG_PEER_LOST);
    }
    if (!m) {
        log_fatal("join: out of memory to report agent %u lost", ev->peer);
        abort();
    }
    comm__deliver(c, m);
}

static void on_event(struct comm *c, const struct join_event *ev)
{
    if (ev->kind == JOIN_MESSAGE)
        deliver_data(c, ev);
    else if (ev->kind == JOIN_LOST)
        deliver_lost(c, ev);
    /* JOIN_JOINED: the agent's HELLO message follows as DATA */
}

/* Wait for the link or the outbox, up to POLL_WAIT_S, and handle one
 * event.  Once the master is gone, only the outbox is waited for. */
static void poll_once(struct comm *c)
{
    struct comm_joined *x = joined_of(c);
    atomic_fetch_add_explicit(&c->wakeups, 1, memory_order_relaxed);
    if (x->master_gone) {
        mailbox_wait(&c->outbox, (long)(POLL_WAIT_S * 1e6));
        return;
    }
    bool sleeping = !mailbox_prepare_sleep(&c->outbox);
    struct join_event ev;
    int rc = join_poll(x->link, sleeping ? POLL_WAIT_S : 0, &ev);
    int e = errno;
    /* the eventfd is read only after a wait that returned no event: the
     * wake-up or the timeout.  One written while the link had an event
     * stays readable, so the next wait returns at once and reads it. */
    if (sleeping && rc == 0)
        mailbox_awake(&c->outbox);
    else if (sleeping)
        mailbox_awake_unsignaled(&c->outbox);
    if (rc == 1)
        on_event(c, &ev);
    else if (rc < 0 && e == EPIPE)
        x->master_gone = true;
    else if (rc < 0)
        log_warn("join: polling the link failed: %s", strerror(e));
}

static void *comm_join_main(void *arg)
{
    struct comm *c = arg;
    struct comm_joined *x = joined_of(c);
    join_set_wake_fd(x->link, c->outbox.efd);
    for (;;) {
        send_outbox(c);
        if (atomic_load_explicit(&c->stop, memory_order_acquire) &&
            mailbox_prepare_sleep(&c->outbox) == 0) {
            mailbox_awake_unsignaled(&c->outbox);
            break;
        }
        poll_once(c);
    }
    join_set_wake_fd(x->link, -1);
    join_close(x->link); /* BYE to the live peers, after what was queued */
    x->link = NULL;
    return NULL;
}

static void comm_joined_free(struct comm *c)
{
    struct comm_joined *x = joined_of(c);
    if (!x)
        return;
    join_close(x->link); /* the thread never started: still ours */
    mail_free(x->lost);
    free(x);
}

struct comm *comm_create_joined(struct join *j, int rank, struct mailbox *master_box,
                                struct mailbox *agent_box, struct pmc_error *err)
{
    struct comm *c = comm__new(rank, 0, master_box, agent_box, err);
    struct comm_joined *x = c ? calloc(1, sizeof *x) : NULL;
    if (x) {
        x->link = j;
        x->tag = master_box ? COMM_TO_MASTER : COMM_TO_AGENT;
        x->lost = master_box ? NULL : mail_control(0, COMM_TO_AGENT, MSG_PEER_LOST);
    }
    if (!x || (!master_box && !x->lost)) {
        if (c)
            pmc_errorf(err, "out of memory");
        if (x)
            x->link = NULL;
        free(x);
        comm__free(c);
        join_close(j);
        return NULL;
    }
    c->backend = x;
    c->free_backend = comm_joined_free;
    if (comm__start(c, comm_join_main, "pmc-join", err) < 0) {
        comm__free(c);
        return NULL;
    }
    return c;
}
