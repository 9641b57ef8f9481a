/* mailbox.c - Vyukov's intrusive MPSC queue with an eventfd for sleeping
 * consumers; see mailbox.h for the algorithm and the wake-up argument. */
#include "engine/transport/mailbox.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "io/clock.h"

struct mail *mail_new(int peer, int tag, uint8_t *data, size_t len)
{
    struct mail *m = malloc(sizeof *m);
    if (!m) {
        free(data);
        return NULL;
    }
    atomic_init(&m->next, NULL);
    m->peer = peer;
    m->tag = tag;
    m->len = len;
    m->data = data;
    return m;
}

struct mail *mail_from_msgbuf(int peer, int tag, struct msgbuf *b)
{
    struct mail *m = mail_new(peer, tag, b->data, b->len);
    b->data = NULL;
    b->len = b->cap = 0;
    b->count = 0;
    if (!m)
        errno = ENOMEM;
    return m;
}

struct mail *mail_control(int peer, int tag, enum msg_kind kind)
{
    struct msgbuf b = {0};
    if (msg_begin(&b, kind) < 0) {
        errno = ENOMEM;
        return NULL;
    }
    msg_end(&b);
    return mail_from_msgbuf(peer, tag, &b);
}

void mail_free(struct mail *m)
{
    if (m) {
        free(m->data);
        free(m);
    }
}

int mailbox_init(struct mailbox *mb)
{
    atomic_init(&mb->stub.next, NULL);
    atomic_init(&mb->head, &mb->stub);
    mb->tail = &mb->stub;
    atomic_init(&mb->sleeping, 0);
    mb->more = NULL;
    mb->more_arg = NULL;
    mb->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    return mb->efd < 0 ? -1 : 0;
}

void mailbox_destroy(struct mailbox *mb)
{
    struct mail *m;
    while ((m = mailbox_pop(mb)) != NULL)
        mail_free(m);
    if (mb->efd >= 0)
        close(mb->efd);
    mb->efd = -1;
}

/* Link n after the current head.  The exchange (seq_cst) publishes n as the
 * new head; the release store makes n's contents visible to the consumer
 * that follows prev->next. */
static void mailbox_link(struct mailbox *mb, struct mail *n)
{
    atomic_store_explicit(&n->next, NULL, memory_order_relaxed);
    struct mail *prev = atomic_exchange_explicit(&mb->head, n, memory_order_seq_cst);
    atomic_store_explicit(&prev->next, n, memory_order_release);
}

void mailbox_wake(struct mailbox *mb)
{
    uint64_t one = 1;
    ssize_t w = write(mb->efd, &one, sizeof one);
    (void)w; /* EAGAIN only when the counter is saturated: already awake */
}

void mailbox_push(struct mailbox *mb, struct mail *m)
{
    mailbox_link(mb, m);
    if (atomic_load_explicit(&mb->sleeping, memory_order_seq_cst))
        mailbox_wake(mb);
}

struct mail *mailbox_pop(struct mailbox *mb)
{
    struct mail *tail = mb->tail;
    struct mail *next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (tail == &mb->stub) {
        if (!next)
            return NULL;
        mb->tail = next;
        tail = next;
        next = atomic_load_explicit(&next->next, memory_order_acquire);
    }
    if (next) {
        mb->tail = next;
        return tail;
    }
    /* tail is the last linked node: unless a push is in flight, re-insert
     * the stub behind it so that tail can be handed out. */
    if (tail != atomic_load_explicit(&mb->head, memory_order_acquire))
        return NULL; /* a producer is between exchange and link */
    mailbox_link(mb, &mb->stub);
    next = atomic_load_explicit(&tail->next, memory_order_acquire);
    if (next) {
        mb->tail = next;
        return tail;
    }
    return NULL;
}

/* Non-empty test for the consumer: true when a node is linked or a push is
 * in flight (head moved away from the tail). */
static int mailbox_nonempty(struct mailbox *mb)
{
    struct mail *tail = mb->tail;
    if (tail != &mb->stub) /* tail is a node not yet handed out */
        return 1;
    if (atomic_load_explicit(&tail->next, memory_order_acquire))
        return 1;
    return atomic_load_explicit(&mb->head, memory_order_seq_cst) != tail;
}

void mailbox_watch(struct mailbox *mb, bool (*more)(void *), void *arg)
{
    mb->more = more;
    mb->more_arg = arg;
}

void mailbox_notify(struct mailbox *mb)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&mb->sleeping, memory_order_relaxed))
        mailbox_wake(mb);
}

/* The watched channel holds something (mailbox_watch). */
static bool mailbox_more(struct mailbox *mb)
{
    return mb->more && mb->more(mb->more_arg);
}

int mailbox_prepare_sleep(struct mailbox *mb)
{
    atomic_store_explicit(&mb->sleeping, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst); /* the store before more()'s loads */
    if (mailbox_nonempty(mb) || mailbox_more(mb)) {
        atomic_store_explicit(&mb->sleeping, 0, memory_order_relaxed);
        return 1;
    }
    return 0;
}

void mailbox_awake(struct mailbox *mb)
{
    atomic_store_explicit(&mb->sleeping, 0, memory_order_relaxed);
    uint64_t v;
    /* one read drains: a (non-semaphore) eventfd hands over its whole count
     * and is zero after it; EAGAIN when nobody wrote */
    (void)!read(mb->efd, &v, sizeof v);
}

void mailbox_awake_unsignaled(struct mailbox *mb)
{
    atomic_store_explicit(&mb->sleeping, 0, memory_order_relaxed);
}

int mailbox_spin(struct mailbox *mb, long us, bool (*more)(void *), void *arg)
{
    uint64_t end = pmc_mono_ns() + (uint64_t)us * 1000u;
    for (uint32_t i = 1;; i++) {
        if (mailbox_nonempty(mb) || mailbox_more(mb) || (more && more(arg)))
            return 1;
        if ((i & 63) == 0 && pmc_mono_ns() >= end)
            return 0;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

/* True when the calling thread may run on two CPUs or more, looked up once
 * per thread (sched_getaffinity; the engine's threads keep the affinity
 * they start with).  On one CPU the peer cannot answer while we spin: every
 * hop would grow by the whole spin (bench/wake_bench, spin-then-park pinned
 * to one CPU: 2 -> 54 us). */
bool mailbox_may_spin(void)
{
    static _Thread_local int cpus; /* 0: not looked up yet */
    if (cpus == 0) {
        cpu_set_t set;
        cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
    }
    return cpus >= 2;
}

bool mailbox_spin_due(const struct mailbox_spin_state *sp, uint64_t now_ns)
{
    return sp->hot && now_ns - sp->seen_ns < MAILBOX_SPIN_GAP_US * 1000u;
}

void mailbox_spin_note(struct mailbox_spin_state *sp, uint64_t t0_ns, uint64_t t1_ns)
{
    sp->hot = t1_ns - t0_ns < 2 * MAILBOX_SPIN_US * 1000u;
    sp->seen_ns = t1_ns;
}

int mailbox_spin_if_due(struct mailbox *mb, struct mailbox_spin_state *sp, uint64_t now_ns)
{
    bool due = mailbox_spin_due(sp, now_ns) && mailbox_may_spin();
    sp->seen_ns = now_ns;
    return due && mailbox_spin(mb, MAILBOX_SPIN_US, NULL, NULL);
}

void mailbox_wait_spin(struct mailbox *mb, long timeout_us, struct mailbox_spin_state *sp)
{
    uint64_t now = pmc_mono_ns();
    if (timeout_us == 0) {
        sp->seen_ns = now;
        return;
    }
    if (mailbox_spin_if_due(mb, sp, now))
        return;
    uint64_t t0 = pmc_mono_ns(); /* after any spin that ran out */
    mailbox_wait(mb, timeout_us);
    mailbox_spin_note(sp, t0, pmc_mono_ns());
}

void mailbox_wait(struct mailbox *mb, long timeout_us)
{
    (void)mailbox_wait_fd(mb, timeout_us, -1);
}

int mailbox_wait_fd(struct mailbox *mb, long timeout_us, int fd)
{
    if (mailbox_prepare_sleep(mb))
        return 0;
    struct pollfd p[2] = {{.fd = mb->efd, .events = POLLIN}, {.fd = fd, .events = POLLIN}};
    struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (timeout_us % 1000000) * 1000};
    /* EINTR: a spurious return.  No event (a timeout): the eventfd is
     * left alone, see mailbox_awake_unsignaled(); saves a read() per idle
     * wake-up of a polling thread. */
    int n = ppoll(p, fd >= 0 ? 2 : 1, timeout_us < 0 ? NULL : &ts, NULL);
    if (n > 0 && (p[0].revents & POLLIN))
        mailbox_awake(mb);
    else
        mailbox_awake_unsignaled(mb);
    return n > 0 && fd >= 0 && (p[1].revents & POLLIN);
}
