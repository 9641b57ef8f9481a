/* comm.c - the MPI progress thread and local hand-offs; see comm.h.
 *
 * Threads: comm_send() runs on any thread and only pushes to the outbox
 * (lock-free).  The progress thread owns every MPI request and the pending
 * table.  comm_create()/comm_close() run on the main thread.
 */
#include "engine/transport/comm.h"

#include <errno.h>
#include <mpi.h>
#include <time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "io/clock.h"
#include "io/log.h"

#define IDLE_MIN_US 20
#define IDLE_HOT_US 100          /* the longest poll interval while traffic is recent ... */
#define HOT_WINDOW_US 5000       /* ... i.e. within this long of the last message moved */
#define IDLE_MAX_US 10000        /* the longest after that, for the first half second ... */
#define IDLE_QUIET_SHARE 50      /* ... then 1/50 of the time since the last message moved ... */
#define IDLE_QUIET_MAX_US 100000 /* ... up to this: 10 wake-ups/s after 5 s of quiet */
#define COMM_OOM_GIVEUP_S 10.0   /* a receive put off this long for want of memory ends the job */

struct pending {
    MPI_Request *reqs;
    struct mail **mails;
    int *done_idx;
    MPI_Status *statuses;
    int n, cap;
};

struct comm {
    int rank, size;
    struct mailbox *master_box, *agent_box;
    struct mailbox outbox; /* mails to send; peer = destination */
    struct pending pending;
    pthread_t thread;
    bool has_thread;
    atomic_bool stop;
    atomic_uint_fast64_t msgs_sent, bytes_sent, msgs_recv, bytes_recv;
    atomic_uint_fast64_t recv_deferred; /* receives put off for want of memory */
    atomic_uint_fast64_t wakeups, rings_sent, rings_heard;
    struct doorbell bell;          /* fd -1: none */
    struct doorbell_ledger ledger; /* with bell: the counts of the peers on this host */
    bool bell_only;                /* every peer is on this host: sleep until rung when even */
    struct timespec oom_since;     /* first receive put off since the last one received */
    bool oom;                      /* progress thread only */
};

static void comm_deliver(struct comm *c, struct mail *m)
{
    struct mailbox *box = m->tag == COMM_TO_MASTER ? c->master_box : c->agent_box;
    if (box)
        mailbox_push(box, m);
    else
        mail_free(m); /* no such inbox here: a protocol error the peer will time out on */
}

static int pending_grow(struct pending *p)
{
    int cap = p->cap ? p->cap * 2 : 64;
    MPI_Request *r = realloc(p->reqs, sizeof *r * cap);
    if (!r)
        return -1;
    p->reqs = r;
    struct mail **m = realloc(p->mails, sizeof *m * cap);
    if (!m)
        return -1;
    p->mails = m;
    int *d = realloc(p->done_idx, sizeof *d * cap);
    if (!d)
        return -1;
    p->done_idx = d;
    MPI_Status *s = realloc(p->statuses, sizeof *s * cap);
    if (!s)
        return -1;
    p->statuses = s;
    p->cap = cap;
    return 0;
}

/* A message went to peer: count it, and ring peer when it is on this host
 * (engine/transport/doorbell.h). */
static void comm_ring(struct comm *c, int peer)
{
    if (c->bell.fd < 0)
        return;
    doorbell_ledger_sent(&c->ledger, &c->bell, peer);
    atomic_store_explicit(&c->rings_sent, c->ledger.rings_sent, memory_order_relaxed);
}

/* Start MPI_Isend for every mail in the outbox.  Returns how many. */
static int comm_post_sends(struct comm *c)
{
    int posted = 0;
    struct mail *m;
    while ((m = mailbox_pop(&c->outbox)) != NULL) {
        struct pending *p = &c->pending;
        if (p->n == p->cap && pending_grow(p) < 0) {
            /* out of memory for the table: send synchronously, ringing
             * first (the peer may sleep until rung, and a large message
             * needs its receive before MPI_Send returns) */
            comm_ring(c, m->peer);
            MPI_Send(m->data, (int)m->len, MPI_BYTE, m->peer, m->tag, MPI_COMM_WORLD);
            mail_free(m);
            continue;
        }
        MPI_Isend(m->data, (int)m->len, MPI_BYTE, m->peer, m->tag, MPI_COMM_WORLD, &p->reqs[p->n]);
        comm_ring(c, m->peer);
        p->mails[p->n++] = m;
        atomic_fetch_add_explicit(&c->msgs_sent, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->bytes_sent, m->len, memory_order_relaxed);
        posted++;
    }
    return posted;
}

/* Complete finished sends, free their mails, compact the table. */
static int comm_complete_sends(struct comm *c)
{
    struct pending *p = &c->pending;
    if (p->n == 0)
        return 0;
    int ndone = 0;
    MPI_Testsome(p->n, p->reqs, &ndone, p->done_idx, p->statuses);
    if (ndone <= 0 || ndone == MPI_UNDEFINED)
        return 0;
    for (int i = 0; i < ndone; i++) {
        mail_free(p->mails[p->done_idx[i]]);
        p->mails[p->done_idx[i]] = NULL;
    }
    int j = 0;
    for (int i = 0; i < p->n; i++) {
        if (p->mails[i]) {
            p->reqs[j] = p->reqs[i];
            p->mails[j++] = p->mails[i];
        }
    }
    p->n = j;
    return ndone;
}

/* A message of count bytes from rank src waits in MPI for want of memory.
 * Memory that does not come back within COMM_OOM_GIVEUP_S ends the job:
 * the peer may wait for this very message (a RESULTS the master must
 * apply, the BYE that ends the run), and MPI_Abort is how a rank that
 * cannot go on ends an MPI job (hydra then kills every rank, as for a lost
 * rank; the rescue log holds what finished). */
static void comm_receive_put_off(struct comm *c, int count, int src)
{
    atomic_fetch_add_explicit(&c->recv_deferred, 1, memory_order_relaxed);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!c->oom) {
        c->oom = true;
        c->oom_since = now;
        return;
    }
    double waited = pmc_seconds_between(&c->oom_since, &now);
    if (waited < COMM_OOM_GIVEUP_S)
        return;
    log_fatal("Rank %d: out of memory for %.0f s receiving a message of %d bytes from rank %d: "
              "ending the job",
              c->rank, waited, count, src);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Receive every message that has arrived.  Returns how many.  The buffer
 * and its mail are allocated after a plain probe and before the receive:
 * when memory runs out the message stays queued in MPI and is received on a
 * later pass (a dropped RESULTS would hang the run).  Only this thread
 * receives, so the message received from (source, tag) is the one probed
 * (MPI keeps messages between a pair of ranks with one tag in order). */
static int comm_receive(struct comm *c)
{
    int got = 0;
    for (;;) {
        int flag = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
        if (!flag)
            return got;
        int count = 0;
        MPI_Get_count(&st, MPI_BYTE, &count);
        uint8_t *buf = malloc(count > 0 ? (size_t)count : 1);
        struct mail *m = buf ? mail_new(st.MPI_SOURCE, st.MPI_TAG, buf, (size_t)count) : NULL;
        if (!m) {
            comm_receive_put_off(c, count, st.MPI_SOURCE);
            return got; /* mail_new freed buf; try again after a back-off */
        }
        c->oom = false;
        MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        comm_deliver(c, m);
        if (c->bell.fd >= 0)
            doorbell_ledger_received(&c->ledger, st.MPI_SOURCE);
        atomic_fetch_add_explicit(&c->msgs_recv, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&c->bytes_recv, (uint64_t)count, memory_order_relaxed);
        got++;
    }
}

/* The longest poll interval since_moved_ns after the last message moved:
 * IDLE_HOT_US within HOT_WINDOW_US (an answer is likely, and the peer of a
 * busy exchange would otherwise wait out a long back-off); after that
 * 1/IDLE_QUIET_SHARE of the quiet time, at least IDLE_MAX_US and at most
 * IDLE_QUIET_MAX_US.  So a message that ends a quiet spell of T is seen at
 * most max(10 ms, T/50) late, and a rank whose tasks run for minutes wakes
 * 10 times a second, not 100 (each wake-up costs CPU).  Pure. */
long comm__idle_cap_us(uint64_t since_moved_ns)
{
    if (since_moved_ns < (uint64_t)HOT_WINDOW_US * 1000u)
        return IDLE_HOT_US;
    uint64_t share_us = since_moved_ns / 1000u / IDLE_QUIET_SHARE;
    if (share_us < IDLE_MAX_US)
        return IDLE_MAX_US;
    return share_us > IDLE_QUIET_MAX_US ? IDLE_QUIET_MAX_US : (long)share_us;
}

/* The next poll interval after an idle one of idle_us: doubling, up to
 * comm__idle_cap_us(). */
static long comm_next_idle_us(long idle_us, uint64_t since_moved_ns)
{
    long cap = comm__idle_cap_us(since_moved_ns);
    return idle_us * 2 > cap ? cap : idle_us * 2;
}

/* True when the progress thread may sleep until rung: every peer is on
 * this host, the ledger is even (every message announced was received,
 * every message received was announced: a peer that cannot ring keeps it
 * uneven, and this rank then polls as without doorbells; no ring of ours
 * waits to be sent again), and no send of ours waits for MPI's progress. */
static bool comm_sleep_until_rung(const struct comm *c)
{
    return c->bell_only && c->pending.n == 0 && doorbell_ledger_even(&c->ledger);
}

/* When rung (every peer rings and the ledger is even: a message on its
 * way wakes the thread), a poll is only a safety net for a peer whose
 * rings stopped mid-run (its next message is then seen at most
 * IDLE_QUIET_MAX_US late, once: the ledger is uneven after it, and the
 * rank polls) and MPI's own housekeeping, so the sleep is
 * IDLE_QUIET_MAX_US; else the poll interval idle_us.  Pure. */
long comm__sleep_us(bool rung, long idle_us)
{
    return rung ? IDLE_QUIET_MAX_US : idle_us;
}

/* Sleep for comm__sleep_us() or until the outbox or the doorbell wakes us.
 * Returns true when rings were heard: a message is on its way. */
static bool comm_sleep(struct comm *c, long idle_us)
{
    long us = comm__sleep_us(comm_sleep_until_rung(c), idle_us);
    /* the flag only: mailbox_wait_fd() drains the eventfd when it was written */
    mailbox_awake_unsignaled(&c->outbox);
    int bell = mailbox_wait_fd(&c->outbox, us, c->bell.fd);
    atomic_fetch_add_explicit(&c->wakeups, 1, memory_order_relaxed);
    if (!bell)
        return false;
    long heard = doorbell_ledger_hear(&c->ledger, &c->bell);
    atomic_store_explicit(&c->rings_heard, c->ledger.rings_heard, memory_order_relaxed);
    return heard > 0;
}

static void *comm_progress_main(void *arg)
{
    struct comm *c = arg;
    long idle_us = IDLE_MIN_US;
    uint64_t last_moved = pmc_mono_ns();
    for (;;) {
        if (c->ledger.nowed > 0) /* rings that found a full queue */
            doorbell_ledger_retry(&c->ledger, &c->bell);
        int moved = comm_post_sends(c) + comm_complete_sends(c) + comm_receive(c);
        if (moved) {
            idle_us = IDLE_MIN_US;
            last_moved = pmc_mono_ns();
            continue;
        }
        if (atomic_load_explicit(&c->stop, memory_order_acquire) && c->pending.n == 0 &&
            !mailbox_prepare_sleep(&c->outbox))
            break;
        if (comm_sleep(c, idle_us)) {
            idle_us = IDLE_MIN_US; /* poll hot until the message rung for is in */
            last_moved = pmc_mono_ns();
            continue;
        }
        idle_us = comm_next_idle_us(idle_us, pmc_mono_ns() - last_moved);
    }
    mailbox_awake(&c->outbox);
    return NULL;
}

/* Take bells (may be NULL) into c: the doorbell and a copy of the local
 * table.  -1 when out of memory (the doorbell is then closed). */
static int comm_take_doorbells(struct comm *c, struct comm_doorbells *bells)
{
    c->bell.fd = -1;
    if (!bells)
        return 0;
    c->bell = bells->bell;
    bells->bell.fd = -1;
    if (doorbell_ledger_init(&c->ledger, c->rank, c->size, bells->local) < 0) {
        doorbell_close(&c->bell);
        return -1;
    }
    /* every peer bound its doorbell before the start-up collectives that
     * came since (engine/main.c) */
    doorbell_ledger_probe(&c->ledger, &c->bell);
    c->bell_only = bells->all_local;
    return 0;
}

static void comm_free(struct comm *c)
{
    doorbell_close(&c->bell);
    doorbell_ledger_free(&c->ledger);
    free(c->pending.reqs);
    free(c->pending.mails);
    free(c->pending.done_idx);
    free(c->pending.statuses);
    free(c);
}

struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct comm_doorbells *bells, struct pmc_error *err)
{
    struct comm *c = calloc(1, sizeof *c);
    if (!c) {
        if (bells)
            doorbell_close(&bells->bell);
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    c->rank = rank;
    c->size = size;
    c->master_box = master_box;
    c->agent_box = agent_box;
    if (comm_take_doorbells(c, bells) < 0) {
        free(c);
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    if (mailbox_init(&c->outbox) < 0) {
        pmc_errorf(err, "eventfd: %m");
        comm_free(c);
        return NULL;
    }
    if (size > 1) {
        int rc = pthread_create(&c->thread, NULL, comm_progress_main, c);
        if (rc != 0) {
            errno = rc;
            pmc_errorf(err, "cannot start the MPI progress thread: %m");
            mailbox_destroy(&c->outbox);
            comm_free(c);
            return NULL;
        }
        pthread_setname_np(c->thread, "pmc-progress"); /* top -H, perf, gdb */
        c->has_thread = true;
    }
    return c;
}

void comm_send_mail(struct comm *c, struct mail *m)
{
    if (m->peer == c->rank) {
        comm_deliver(c, m); /* peer: the sender, which is this rank */
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
    mailbox_destroy(&c->outbox);
    comm_free(c);
}
