/* comm_mpi.c - the MPI backend of comm.h: the progress thread that moves
 * the outbox's mails through MPI and delivers what arrives.
 *
 * Threads: the progress thread owns every MPI request, the pending table
 * and the doorbell ledger (struct comm_mpi).  comm_create() runs on the
 * main thread; the rest of struct comm is comm.c's.
 */
#include "engine/transport/comm_internal.h"

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

/* The MPI backend's state (c->backend); the progress thread's. */
struct comm_mpi {
    struct pending pending;
    atomic_uint_fast64_t recv_deferred; /* receives put off for want of memory */
    struct doorbell bell;               /* fd -1: none */
    struct doorbell_ledger ledger;      /* with bell: the counts of the peers on this host */
    bool bell_only;                     /* every peer is on this host: sleep until rung when even */
    struct timespec oom_since;          /* first receive put off since the last one received */
    bool oom;
};

static struct comm_mpi *mpi_of(const struct comm *c)
{
    return c->backend;
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
    if (mpi_of(c)->bell.fd < 0)
        return;
    doorbell_ledger_sent(&mpi_of(c)->ledger, &mpi_of(c)->bell, peer);
    atomic_store_explicit(&c->rings_sent, mpi_of(c)->ledger.rings_sent, memory_order_relaxed);
}

/* Start MPI_Isend for every mail in the outbox.  Returns how many. */
static int comm_post_sends(struct comm *c)
{
    int posted = 0;
    struct mail *m;
    while ((m = mailbox_pop(&c->outbox)) != NULL) {
        struct pending *p = &mpi_of(c)->pending;
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
    struct pending *p = &mpi_of(c)->pending;
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
    atomic_fetch_add_explicit(&mpi_of(c)->recv_deferred, 1, memory_order_relaxed);
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if (!mpi_of(c)->oom) {
        mpi_of(c)->oom = true;
        mpi_of(c)->oom_since = now;
        return;
    }
    double waited = pmc_seconds_between(&mpi_of(c)->oom_since, &now);
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
        mpi_of(c)->oom = false;
        MPI_Recv(buf, count, MPI_BYTE, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        comm__deliver(c, m);
        if (mpi_of(c)->bell.fd >= 0)
            doorbell_ledger_received(&mpi_of(c)->ledger, st.MPI_SOURCE);
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
    return mpi_of(c)->bell_only && mpi_of(c)->pending.n == 0 &&
           doorbell_ledger_even(&mpi_of(c)->ledger);
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
    int bell = mailbox_wait_fd(&c->outbox, us, mpi_of(c)->bell.fd);
    atomic_fetch_add_explicit(&c->wakeups, 1, memory_order_relaxed);
    if (!bell)
        return false;
    long heard = doorbell_ledger_hear(&mpi_of(c)->ledger, &mpi_of(c)->bell);
    atomic_store_explicit(&c->rings_heard, mpi_of(c)->ledger.rings_heard, memory_order_relaxed);
    return heard > 0;
}

static void *comm_progress_main(void *arg)
{
    struct comm *c = arg;
    long idle_us = IDLE_MIN_US;
    uint64_t last_moved = pmc_mono_ns();
    for (;;) {
        if (mpi_of(c)->ledger.nowed > 0) /* rings that found a full queue */
            doorbell_ledger_retry(&mpi_of(c)->ledger, &mpi_of(c)->bell);
        int moved = comm_post_sends(c) + comm_complete_sends(c) + comm_receive(c);
        if (moved) {
            idle_us = IDLE_MIN_US;
            last_moved = pmc_mono_ns();
            continue;
        }
        if (atomic_load_explicit(&c->stop, memory_order_acquire) && mpi_of(c)->pending.n == 0 &&
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

/* Take bells (may be NULL) into x: the doorbell and a copy of the local
 * table.  -1 when out of memory (the doorbell is then closed). */
static int comm_take_doorbells(struct comm_mpi *x, int rank, int size, struct comm_doorbells *bells)
{
    x->bell.fd = -1;
    if (!bells)
        return 0;
    x->bell = bells->bell;
    bells->bell.fd = -1;
    if (doorbell_ledger_init(&x->ledger, rank, size, bells->local) < 0) {
        doorbell_close(&x->bell);
        return -1;
    }
    /* every peer bound its doorbell before the start-up collectives that
     * came since (engine/main.c) */
    doorbell_ledger_probe(&x->ledger, &x->bell);
    x->bell_only = bells->all_local;
    return 0;
}

static void comm_mpi_free(struct comm *c)
{
    struct comm_mpi *x = mpi_of(c);
    if (!x)
        return;
    doorbell_close(&x->bell);
    doorbell_ledger_free(&x->ledger);
    free(x->pending.reqs);
    free(x->pending.mails);
    free(x->pending.done_idx);
    free(x->pending.statuses);
    free(x);
}

struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct comm_doorbells *bells, struct pmc_error *err)
{
    struct comm *c = comm__new(rank, size, master_box, agent_box, err);
    struct comm_mpi *x = c ? calloc(1, sizeof *x) : NULL;
    if (!x || comm_take_doorbells(x, rank, size, bells) < 0) {
        if (bells)
            doorbell_close(&bells->bell);
        if (c)
            pmc_errorf(err, "out of memory");
        free(x);
        comm__free(c);
        return NULL;
    }
    c->backend = x;
    c->free_backend = comm_mpi_free;
    if (size > 1 && comm__start(c, comm_progress_main, "pmc-progress", err) < 0) {
        comm__free(c);
        return NULL;
    }
    return c;
}
