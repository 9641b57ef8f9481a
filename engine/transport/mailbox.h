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

/* C11 atomics, spelled so that C++ code (the unit tests) can include this
 * header: std::atomic<T> has the size, alignment and lock-free
 * representation of _Atomic(T) on GCC and Clang. */
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

/* Wrap data (malloc'd, ownership taken) in a new mail.  NULL with ENOMEM
 * (data is then freed). */
struct mail *mail_new(int peer, int tag, uint8_t *data, size_t len);
void mail_free(struct mail *m); /* NULL is a no-op */

/* A mail holding a whole message of `kind` with no body (MSG_SHUTDOWN,
 * MSG_BYE, MSG_ABORT, MSG_DRAIN) for (peer, tag).  The master and the
 * agents build these at start-up, so that ending a run never needs memory
 * (issue 13: an ABORT that could not be allocated left the other side
 * waiting).  NULL with errno ENOMEM. */
struct mail *mail_control(int peer, int tag, enum msg_kind kind);

/* Wrap the message finished in b (msg_end() done) in a new mail, taking b's
 * storage: b is left empty either way, ready for msg_begin().  NULL with
 * errno ENOMEM. */
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

/* Block until a mail may be ready, the eventfd is written by
 * mailbox_wake(), or timeout_us microseconds pass (-1: no timeout).
 * Consumer only.  Spurious returns are allowed. */
void mailbox_wait(struct mailbox *mb, long timeout_us);

/* mailbox_wait() that also wakes when descriptor fd (>= 0; -1 for none)
 * becomes readable, e.g. a doorbell (engine/transport/doorbell.h).  Returns 1 when
 * fd was seen readable, else 0.  Consumer only. */
int mailbox_wait_fd(struct mailbox *mb, long timeout_us, int fd);

/* Spin-then-park (issue 10): a consumer whose peer answers within
 * microseconds (the master and the agent of one rank under a null or
 * very short workload) loses most of a round trip to the eventfd wake-up
 * of a sleeping thread (a cross-CPU wake-up costs 100+ us on some VMs).
 * MAILBOX_SPIN_US: how long mailbox_spin() polls.  A consumer spins only
 * while `hot` (struct mailbox_spin_state): its last wait ended within
 * 2 * MAILBOX_SPIN_US, so that a thread waiting for tasks that run
 * milliseconds, or an idle engine, never spins; and only when it last
 * looked at its mailbox less than MAILBOX_SPIN_GAP_US ago
 * (mailbox_spin_due()), so that a thread back from other work or from a
 * sleep elsewhere parks at once: its peer's answer is no nearer for its
 * last wait having been short (bench/wake_bench's quiet rows, whose pinging
 * thread sleeps 10 ms in between, spun ~20 us per round trip before). */
#define MAILBOX_SPIN_US 50
#define MAILBOX_SPIN_GAP_US 1000

struct mailbox_spin_state {
    bool hot;         /* the last wait was short: spin before the next one */
    uint64_t seen_ns; /* pmc_mono_ns() when the consumer last looked at its
                         mailbox (a wait, a spin, or a call with timeout 0);
                         0: never */
};

/* Whether a consumer with state sp should spin before the wait it starts at
 * now_ns (pmc_mono_ns()): sp->hot, and sp->seen_ns less than
 * MAILBOX_SPIN_GAP_US before now_ns.  Says nothing of the CPUs
 * (mailbox_may_spin()).  Pure; any thread. */
bool mailbox_spin_due(const struct mailbox_spin_state *sp, uint64_t now_ns);

/* Record in sp a wait that began at t0_ns and ended at t1_ns
 * (pmc_mono_ns()): hot when it took less than 2 * MAILBOX_SPIN_US, seen at
 * t1_ns.  No clock read, no system call; the consumer's thread. */
void mailbox_spin_note(struct mailbox_spin_state *sp, uint64_t t0_ns, uint64_t t1_ns);

/* Poll mb (consumer only) for up to us microseconds, or until more(arg)
 * returns true when more is given: 1 when a mail (or more) is ready, 0
 * after the time ran out.  No system call but the clock's (vDSO). */
int mailbox_spin(struct mailbox *mb, long us, bool (*more)(void *), void *arg);

/* True when the calling thread may run on two CPUs or more: spinning is
 * useless on one, where the peer cannot answer during the spin.  Looked up
 * on a thread's first call (a thread pinned later keeps the first answer);
 * any thread. */
bool mailbox_may_spin(void);

/* Spin before a wait that starts at now_ns (pmc_mono_ns()) when
 * mailbox_spin_due() and mailbox_may_spin(): mailbox_spin() for
 * MAILBOX_SPIN_US, without a `more` test.  Records the look in sp
 * (seen_ns = now_ns).  1 when mail came during the spin, 0 when it did not
 * spin or the time ran out (then park: mailbox_wait() or the caller's own
 * poll, and mailbox_spin_note()).  The consumer's thread. */
int mailbox_spin_if_due(struct mailbox *mb, struct mailbox_spin_state *sp, uint64_t now_ns);

/* mailbox_wait(), after spinning first when mailbox_spin_due() and
 * mailbox_may_spin(); updates sp (a call with timeout_us 0 waits for
 * nothing and only records that the consumer looked). */
void mailbox_wait_spin(struct mailbox *mb, long timeout_us, struct mailbox_spin_state *sp);

/* Call before blocking on mb->efd in your own poll/epoll set: returns 1 if
 * the box is non-empty (do not block), 0 after marking the consumer as
 * sleeping.  Call mailbox_awake() after the blocking call returns. */
int mailbox_prepare_sleep(struct mailbox *mb);
void mailbox_awake(struct mailbox *mb);

/* mailbox_awake() for a consumer whose poll/epoll said mb->efd was not
 * readable: clears the sleeping mark and leaves the eventfd alone (saves a
 * read() that would fail with EAGAIN, one per task on a busy node).  A
 * notifier that wrote after the poll returned leaves the eventfd readable,
 * so the next poll returns at once and mailbox_awake() drains it; the mail
 * itself is never missed, since consumers look at the box, not the
 * eventfd. */
void mailbox_awake_unsignaled(struct mailbox *mb);

/* A second channel the consumer reads besides the box: lock-free rings
 * that other threads fill without mails (the master's events on
 * engine/transport/local_link.h; the agent's tasks there and its launcher's
 * completions, engine/exec/launcher.h).  more(arg)
 * says whether it holds something; mailbox_prepare_sleep(), mailbox_wait()
 * and mailbox_spin() then treat it as mail, so the consumer never sleeps on
 * a full channel.  more runs on the consumer thread, after a seq_cst fence
 * that follows the `sleeping` store.  Call before the box is shared. */
void mailbox_watch(struct mailbox *mb, bool (*more)(void *), void *arg);

/* For the producer of a watched channel, after it published something:
 * wake the consumer if it is asleep or about to sleep (a seq_cst fence,
 * then `sleeping`: with the fence before more() this is the same
 * handshake as mailbox_push()'s).  Any thread; a system call only when the
 * consumer sleeps. */
void mailbox_notify(struct mailbox *mb);

/* Wake the consumer (e.g. from a signal handler: only write(2) is used). */
void mailbox_wake(struct mailbox *mb);

#ifdef __cplusplus
}
#endif
#endif
