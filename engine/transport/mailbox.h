/* mailbox.h - a thread's inbox of messages: many producers, one consumer.
 *
 * Producers (the MPI progress thread, a local node agent, the master) push
 * received messages without a lock; the one consuming thread pops them and
 * sleeps on an eventfd when the box is empty.  The queue is Dmitry Vyukov's
 * intrusive non-blocking MPSC queue ("Intrusive MPSC node-based queue",
 * 1024cores.net, 2010): push is one atomic exchange plus one store, pop is
 * wait-free except for the short window in which a producer has exchanged the
 * head but not yet linked its node (pop then reports "empty, retry").
 *
 * Wake-ups: the consumer announces that it is about to sleep (sleeping = 1,
 * seq_cst), re-checks the queue, and only then blocks on the eventfd; a
 * producer pushes (seq_cst exchange) and then reads `sleeping`.  In the single
 * total order of seq_cst operations either the consumer's re-check sees the
 * push or the producer sees sleeping == 1 and writes the eventfd, so no
 * wake-up is lost; an extra wake-up is harmless.
 */
#ifndef PMC_MAILBOX_H
#define PMC_MAILBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/msg.h"

/* C11 atomics that C++ tests can include: std::atomic<T> has _Atomic(T)'s
 * size, alignment and representation on GCC and Clang. */
#ifdef __cplusplus
#include <atomic>
#define PMC_ATOMIC(T) std::atomic<T>
extern "C" {
#else
#include <stdatomic.h>
#define PMC_ATOMIC(T) _Atomic(T)
#endif

/* One message.  data/len own a malloc'd buffer (freed by mail_free()). */
struct mail {
    PMC_ATOMIC(struct mail *) next;
    int peer;      /* sending rank (received) or destination rank (outgoing) */
    int tag;       /* which inbox: COMM_TO_MASTER or COMM_TO_AGENT (comm.h) */
    size_t len;    /* bytes at data */
    uint8_t *data; /* the encoded message (io/msg.h) */
};

/* Wrap data (malloc'd, taken) in a new mail.  NULL with ENOMEM, data freed. */
struct mail *mail_new(int peer, int tag, uint8_t *data, size_t len);
void mail_free(struct mail *m); /* NULL is a no-op */

/* A bodiless message of `kind` (SHUTDOWN, BYE, ABORT, DRAIN) for (peer,
 * tag), built at start-up so ending a run needs no memory.  NULL, ENOMEM. */
struct mail *mail_control(int peer, int tag, enum msg_kind kind);

/* Wrap b's finished message, taking its storage (b is left empty either
 * way).  NULL with ENOMEM. */
struct mail *mail_from_msgbuf(int peer, int tag, struct msgbuf *b);

struct mailbox {
    PMC_ATOMIC(struct mail *) head; /* producers exchange here */
    struct mail *tail;              /* consumer only */
    struct mail stub;
    PMC_ATOMIC(int) sleeping; /* consumer is about to block on efd */
    int efd;                  /* eventfd, EFD_NONBLOCK | EFD_CLOEXEC */
    bool (*more)(void *);     /* a second channel (mailbox_watch), or NULL */
    void *more_arg;
};

/* Initialise.  Returns 0, or -1 with errno from eventfd(). */
int mailbox_init(struct mailbox *mb);

/* Free the remaining mails and close the eventfd. */
void mailbox_destroy(struct mailbox *mb);

/* Push m (ownership passes to the box).  Any thread; lock-free. */
void mailbox_push(struct mailbox *mb, struct mail *m);

/* Pop the oldest mail or NULL if none is ready.  Consumer thread only. */
struct mail *mailbox_pop(struct mailbox *mb);

/* Block until a mail may be ready, mailbox_wake(), or timeout_us
 * microseconds (-1: none).  Consumer only; may return spuriously. */
void mailbox_wait(struct mailbox *mb, long timeout_us);

/* mailbox_wait() that also wakes when fd (-1: none) is readable; 1 when it
 * was.  Consumer only. */
int mailbox_wait_fd(struct mailbox *mb, long timeout_us, int fd);

/* Spin-then-park: a consumer polls MAILBOX_SPIN_US (us) before sleeping,
 * only while its last wait was short and it looked at its box less than
 * MAILBOX_SPIN_GAP_US (us) ago.  Why: docs/modules.md "mailbox". */
#define MAILBOX_SPIN_US 50
#define MAILBOX_SPIN_GAP_US 1000

struct mailbox_spin_state {
    bool hot;         /* the last wait was short: spin before the next one */
    uint64_t seen_ns; /* pmc_mono_ns() when it last looked at its box; 0: never */
};

/* Should a wait starting at now_ns (pmc_mono_ns()) spin first: sp->hot and
 * sp->seen_ns within MAILBOX_SPIN_GAP_US?  Ignores CPUs.  Pure. */
bool mailbox_spin_due(const struct mailbox_spin_state *sp, uint64_t now_ns);

/* Record a wait from t0_ns to t1_ns: hot when under 2 * MAILBOX_SPIN_US,
 * seen at t1_ns.  No system call; consumer thread. */
void mailbox_spin_note(struct mailbox_spin_state *sp, uint64_t t0_ns, uint64_t t1_ns);

/* Poll mb up to us microseconds or until more(arg) (if given): 1 when
 * something is ready, 0 when time ran out.  Consumer only; no system call. */
int mailbox_spin(struct mailbox *mb, long us, bool (*more)(void *), void *arg);

/* True when the calling thread may run on two CPUs or more (else spinning
 * is useless).  Looked up once per thread; any thread. */
bool mailbox_may_spin(void);

/* mailbox_spin() for MAILBOX_SPIN_US when due and allowed; sets
 * sp->seen_ns = now_ns.  1: mail came; 0: none (park, then
 * mailbox_spin_note()).  Consumer thread. */
int mailbox_spin_if_due(struct mailbox *mb, struct mailbox_spin_state *sp, uint64_t now_ns);

/* mailbox_wait() after a spin when due and allowed; updates sp (timeout 0
 * only records the look).  Consumer thread. */
void mailbox_wait_spin(struct mailbox *mb, long timeout_us, struct mailbox_spin_state *sp);

/* Before blocking on mb->efd in your own poll set: 1 if the box is not
 * empty (do not block), else 0 with the consumer marked sleeping; then
 * mailbox_awake() after the blocking call. */
int mailbox_prepare_sleep(struct mailbox *mb);
void mailbox_awake(struct mailbox *mb);

/* mailbox_awake() when the poll said mb->efd was not readable: clears the
 * mark without reading the eventfd (a later write is drained next time). */
void mailbox_awake_unsignaled(struct mailbox *mb);

/* Watch a second channel (a lock-free ring) as if it were mail: more(arg)
 * says it holds something, so the consumer never sleeps on it.  more runs
 * on the consumer after a seq_cst fence that follows the `sleeping` store.
 * Call before the box is shared. */
void mailbox_watch(struct mailbox *mb, bool (*more)(void *), void *arg);

/* After publishing to a watched channel: a seq_cst fence, then wake the
 * consumer if `sleeping` (mailbox_push()'s handshake).  Any thread; a
 * system call only when the consumer sleeps. */
void mailbox_notify(struct mailbox *mb);

/* Wake the consumer (e.g. from a signal handler: only write(2) is used). */
void mailbox_wake(struct mailbox *mb);

#ifdef __cplusplus
}
#endif
#endif
