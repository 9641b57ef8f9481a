/* wake_bench.c - what one thread waking another costs (issue 10, "wake-ups").
 *
 *   wake_bench [ROUNDS [SECONDS [WORK_US [IDLE_MS]]]]
 *
 * Two threads ping-pong ROUNDS round trips (default 20000; a mode also stops
 * after SECONDS, default 2, of measured rounds) through one wake-up mechanism
 * at a time, for every mechanism and placement below.  WORK_US (default 0):
 * each side busy-loops this long after receiving, before answering (the
 * master's dispatch or the agent's bookkeeping between two messages).
 * IDLE_MS (default 10; 0: skip): then, a quiet engine: the waiting modes
 * (not spin, eventfd, spinpark1/10) once more, unpinned, with the pinging
 * thread sleeping IDLE_MS (nanosleep) between round trips, for up to
 * 2 x SECONDS; these lines carry idle=1 and cpu_cores is their CPU cost
 * (the sleeping thread's timer wake-ups included).
 *
 * Mechanisms (mode=):
 *   mailbox       the engine's engine/transport/mailbox.c: mailbox_push() of one mail,
 *                 consumer mailbox_pop() / mailbox_wait() (eventfd + the
 *                 `sleeping` handshake: a push writes the eventfd only when
 *                 the consumer has announced it sleeps)
 *   mailbox_spin  the same, waiting with mailbox_wait_spin(): what the master
 *                 and an idle agent do now (poll MAILBOX_SPIN_US while hot)
 *   eventfd       a bare eventfd per direction: write(), then poll() + read()
 *   futex         an atomic int per direction: FUTEX_WAIT / FUTEX_WAKE, the
 *                 waker calling FUTEX_WAKE only when the waiter said it sleeps
 *   spin          pure spinning on an atomic int (pause), never sleeping
 *   spinparkS     spin up to S µs on the atomic int, then park on the futex as
 *                 in `futex` (S = 1, 10, 50, 200)
 *
 * Placements (pin=): same (both threads pinned to one CPU), cross (pinned to
 * two different CPUs; skipped, with a line saying so, when the process may
 * use only one CPU), none (unpinned: the kernel places them).
 *
 * One line per mode and placement, key=value pairs, informational only:
 *
 *   mode=M pin=P rounds=N wall_s=W rt_per_s=X oneway_p50_us=A oneway_p90_us=B
 *     cpu_us_per_rt=C ping_cpu_us_per_rt=C1 pong_cpu_us_per_rt=C2 cpu_cores=U
 *
 * Each round trip is timed on the pinging thread with CLOCK_MONOTONIC;
 * one-way latency = round trip / 2, p50 and p90 over the measured rounds (a
 * warm-up of ROUNDS/20 rounds, at most 500 and at most SECONDS/10, is left
 * out).  CPU time is
 * CLOCK_THREAD_CPUTIME_ID of both threads over the measured rounds (the
 * kernel's wake-up and scheduling work on behalf of a thread counts to it),
 * per round trip; cpu_cores = that CPU / wall (2.0: both threads busy all the
 * time).  With WORK_US > 0 the CPU includes the work.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "engine/transport/mailbox.h"

enum kind { K_MAILBOX, K_MAILBOX_SPIN, K_EVENTFD, K_FUTEX, K_SPIN, K_SPINPARK };

struct mode {
    const char *name;
    enum kind kind;
    long spin_us; /* K_SPINPARK */
};

static const struct mode MODES[] = {
    {"mailbox", K_MAILBOX, 0},
    {"mailbox_spin", K_MAILBOX_SPIN, 0},
    {"eventfd", K_EVENTFD, 0},
    {"futex", K_FUTEX, 0},
    {"spin", K_SPIN, 0},
    {"spinpark1", K_SPINPARK, 1},
    {"spinpark10", K_SPINPARK, 10},
    {"spinpark50", K_SPINPARK, 50},
    {"spinpark200", K_SPINPARK, 200},
};

/* Futex word states (K_FUTEX, K_SPIN, K_SPINPARK). */
enum { W_EMPTY = 0, W_FULL = 1, W_SLEEPING = 2 };

/* One direction of the ping-pong. */
struct chan {
    _Alignas(64) struct mailbox mb;
    _Alignas(64) _Atomic int word;
    int efd;
    struct mailbox_spin_state sp; /* the receiver's */
};

struct run {
    const struct mode *mode;
    struct chan to_pong, to_ping;
    struct mail *mail;      /* the one mail circulating in the mailbox modes */
    int cpu_ping, cpu_pong; /* -1: unpinned */
    long rounds, warmup;
    double max_s;
    long work_us;
    long gap_us;           /* ping sleeps this long between round trips (idle part) */
    _Atomic int measuring; /* set by ping before its first measured round */
    _Atomic int stop;
    pthread_barrier_t start;
    /* results */
    uint64_t *rt_ns;
    long done;
    _Atomic long seq_out, seq_back; /* every reply must echo its ping */
    long bad;                       /* replies that did not */
    double wall_s, ping_cpu_s, pong_cpu_s;
    int error;
};

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static long futex(_Atomic int *w, int op, int val)
{
    return syscall(SYS_futex, (int *)w, op | FUTEX_PRIVATE_FLAG, val, NULL, NULL, 0);
}

static void busy_us(long us)
{
    if (us <= 0)
        return;
    uint64_t end = mono_ns() + (uint64_t)us * 1000u;
    while (mono_ns() < end)
        cpu_relax();
}

/* ------------------------------------------------------------ send / recv */

static void chan_send(struct run *r, struct chan *c)
{
    switch (r->mode->kind) {
    case K_MAILBOX:
    case K_MAILBOX_SPIN:
        mailbox_push(&c->mb, r->mail);
        break;
    case K_EVENTFD: {
        uint64_t one = 1;
        if (write(c->efd, &one, sizeof one) != (ssize_t)sizeof one)
            r->error = errno;
        break;
    }
    case K_SPIN:
        atomic_store_explicit(&c->word, W_FULL, memory_order_release);
        break;
    case K_FUTEX:
    case K_SPINPARK:
        if (atomic_exchange_explicit(&c->word, W_FULL, memory_order_seq_cst) == W_SLEEPING)
            futex(&c->word, FUTEX_WAKE, 1);
        break;
    }
}

/* Park on c->word until it is W_FULL, then take it (EMPTY again). */
static void word_park(struct chan *c)
{
    for (;;) {
        int v = atomic_load_explicit(&c->word, memory_order_acquire);
        if (v == W_FULL)
            break;
        if (v == W_EMPTY && !atomic_compare_exchange_strong(&c->word, &v, W_SLEEPING))
            continue;                            /* became FULL */
        futex(&c->word, FUTEX_WAIT, W_SLEEPING); /* EAGAIN / EINTR: look again */
    }
    atomic_store_explicit(&c->word, W_EMPTY, memory_order_relaxed);
}

static void chan_recv(struct run *r, struct chan *c)
{
    switch (r->mode->kind) {
    case K_MAILBOX:
    case K_MAILBOX_SPIN:
        for (;;) {
            struct mail *m = mailbox_pop(&c->mb);
            if (m)
                return;
            if (r->mode->kind == K_MAILBOX)
                mailbox_wait(&c->mb, -1);
            else
                mailbox_wait_spin(&c->mb, -1, &c->sp);
        }
    case K_EVENTFD:
        for (;;) {
            uint64_t v;
            if (read(c->efd, &v, sizeof v) == (ssize_t)sizeof v)
                return;
            struct pollfd p = {.fd = c->efd, .events = POLLIN};
            (void)poll(&p, 1, -1);
        }
    case K_SPIN:
        while (atomic_load_explicit(&c->word, memory_order_acquire) != W_FULL)
            cpu_relax();
        atomic_store_explicit(&c->word, W_EMPTY, memory_order_relaxed);
        return;
    case K_FUTEX:
        word_park(c);
        return;
    case K_SPINPARK: {
        uint64_t end = mono_ns() + (uint64_t)r->mode->spin_us * 1000u;
        for (uint32_t i = 1;; i++) {
            if (atomic_load_explicit(&c->word, memory_order_acquire) == W_FULL) {
                atomic_store_explicit(&c->word, W_EMPTY, memory_order_relaxed);
                return;
            }
            if ((i & 15) == 0 && mono_ns() >= end)
                break;
            cpu_relax();
        }
        word_park(c);
        return;
    }
    }
}

/* --------------------------------------------------------------- threads */

static int pin(int cpu)
{
    if (cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set) ? errno : 0; /* this thread */
}

static void *pong_main(void *arg)
{
    struct run *r = arg;
    int e = pin(r->cpu_pong);
    if (e)
        r->error = e;
    pthread_barrier_wait(&r->start);
    double cpu0 = thread_cpu_s();
    bool measuring = false;
    for (;;) {
        chan_recv(r, &r->to_pong);
        if (!measuring && atomic_load_explicit(&r->measuring, memory_order_acquire)) {
            measuring = true;
            cpu0 = thread_cpu_s();
        }
        if (atomic_load_explicit(&r->stop, memory_order_acquire))
            break;
        busy_us(r->work_us);
        atomic_store_explicit(&r->seq_back, atomic_load_explicit(&r->seq_out, memory_order_relaxed),
                              memory_order_relaxed);
        chan_send(r, &r->to_ping);
    }
    r->pong_cpu_s = thread_cpu_s() - cpu0;
    return NULL;
}

static void *ping_main(void *arg)
{
    struct run *r = arg;
    int e = pin(r->cpu_ping);
    if (e)
        r->error = e;
    pthread_barrier_wait(&r->start);
    /* Warm-up: r->warmup rounds, or a tenth of the time allowed. */
    uint64_t wend = mono_ns() + (uint64_t)(r->max_s * 1e8);
    for (long i = 0; i < r->warmup && mono_ns() < wend; i++) {
        chan_send(r, &r->to_pong);
        chan_recv(r, &r->to_ping);
        busy_us(r->work_us);
    }
    atomic_store_explicit(&r->measuring, 1, memory_order_release);
    double cpu0 = thread_cpu_s();
    uint64_t t0 = mono_ns(), deadline = t0 + (uint64_t)(r->max_s * 1e9), t = t0;
    long n = 0;
    while (n < r->rounds) {
        atomic_store_explicit(&r->seq_out, n + 1, memory_order_relaxed);
        chan_send(r, &r->to_pong);
        chan_recv(r, &r->to_ping);
        uint64_t t1 = mono_ns();
        if (atomic_load_explicit(&r->seq_back, memory_order_relaxed) != n + 1)
            r->bad++;
        r->rt_ns[n++] = t1 - t;
        busy_us(r->work_us);
        if (r->gap_us > 0) {
            struct timespec ts = {r->gap_us / 1000000, (r->gap_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
        t = mono_ns();
        if (t >= deadline)
            break;
    }
    r->wall_s = (double)(t - t0) / 1e9;
    r->ping_cpu_s = thread_cpu_s() - cpu0;
    r->done = n;
    atomic_store_explicit(&r->stop, 1, memory_order_release);
    chan_send(r, &r->to_pong);
    return NULL;
}

static int chan_init(struct chan *c)
{
    memset(c, 0, sizeof *c);
    atomic_init(&c->word, W_EMPTY);
    c->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (c->efd < 0 || mailbox_init(&c->mb) < 0)
        return -1;
    return 0;
}

static void chan_destroy(struct chan *c)
{
    /* The mail circulates between the two boxes: take it out of whichever
     * holds it so that mailbox_destroy() does not free it. */
    while (mailbox_pop(&c->mb))
        ;
    mailbox_destroy(&c->mb);
    close(c->efd);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int run_one(const struct mode *m, const char *pin_name, int cpu_ping, int cpu_pong,
                   long rounds, double max_s, long work_us, long gap_us, uint64_t *buf)
{
    static struct run r; /* big alignment; one run at a time */
    memset(&r, 0, sizeof r);
    r.mode = m;
    r.cpu_ping = cpu_ping;
    r.cpu_pong = cpu_pong;
    r.rounds = rounds;
    r.warmup = rounds / 20 < 500 ? rounds / 20 : 500;
    r.max_s = max_s;
    r.work_us = work_us;
    r.gap_us = gap_us;
    r.rt_ns = buf;
    atomic_init(&r.measuring, 0);
    atomic_init(&r.stop, 0);
    if (chan_init(&r.to_pong) < 0 || chan_init(&r.to_ping) < 0) {
        perror("wake_bench: eventfd");
        return -1;
    }
    r.mail = mail_new(0, 0, NULL, 0);
    if (!r.mail) {
        perror("wake_bench: mail_new");
        return -1;
    }
    pthread_barrier_init(&r.start, NULL, 2);

    /* The pinging thread is a fresh thread too, so that main's affinity
     * stays as it was for the next mode. */
    pthread_t pong;
    if (pthread_create(&pong, NULL, pong_main, &r)) {
        perror("wake_bench: pthread_create");
        return -1;
    }
    pthread_t ping;
    if (pthread_create(&ping, NULL, ping_main, &r)) {
        perror("wake_bench: pthread_create");
        return -1;
    }
    pthread_join(ping, NULL);
    pthread_join(pong, NULL);
    pthread_barrier_destroy(&r.start);
    chan_destroy(&r.to_pong);
    chan_destroy(&r.to_ping);
    mail_free(r.mail);
    if (r.bad && !r.error)
        r.error = EPROTO;
    if (r.error) {
        fprintf(stderr, "wake_bench: %s pin=%s: %s\n", m->name, pin_name, strerror(r.error));
        return -1;
    }

    long n = r.done;
    qsort(r.rt_ns, (size_t)n, sizeof *r.rt_ns, cmp_u64);
    double p50 = r.rt_ns[n / 2] / 2e3, p90 = r.rt_ns[(n * 9) / 10] / 2e3;
    double cpu = r.ping_cpu_s + r.pong_cpu_s;
    printf("mode=%s pin=%s%s rounds=%ld wall_s=%.4f rt_per_s=%.0f oneway_p50_us=%.2f "
           "oneway_p90_us=%.2f cpu_us_per_rt=%.2f ping_cpu_us_per_rt=%.2f "
           "pong_cpu_us_per_rt=%.2f cpu_cores=%.5f\n",
           m->name, pin_name, gap_us ? " idle=1" : "", n, r.wall_s, n / r.wall_s, p50, p90,
           cpu * 1e6 / n, r.ping_cpu_s * 1e6 / n, r.pong_cpu_s * 1e6 / n, cpu / r.wall_s);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    long rounds = argc > 1 ? atol(argv[1]) : 20000;
    double max_s = argc > 2 ? atof(argv[2]) : 2.0;
    long work_us = argc > 3 ? atol(argv[3]) : 0;
    long idle_ms = argc > 4 ? atol(argv[4]) : 10;
    if (rounds < 10 || max_s <= 0 || work_us < 0 || idle_ms < 0 || argc > 5) {
        fprintf(stderr, "usage: wake_bench [ROUNDS>=10 [SECONDS [WORK_US [IDLE_MS]]]]\n");
        return 2;
    }

    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed)) {
        perror("wake_bench: sched_getaffinity");
        return 1;
    }
    int cpus[2] = {-1, -1}, ncpu = 0;
    for (int c = 0; c < CPU_SETSIZE && ncpu < 2; c++)
        if (CPU_ISSET(c, &allowed))
            cpus[ncpu++] = c;
    printf("# wake_bench rounds=%ld max_s=%.2f work_us=%ld idle_ms=%ld allowed_cpus=%d cpu_a=%d "
           "cpu_b=%d\n",
           rounds, max_s, work_us, idle_ms, CPU_COUNT(&allowed), cpus[0], cpus[1]);
    if (ncpu < 2)
        printf("# only one CPU allowed: pin=cross skipped\n");

    uint64_t *buf = malloc((size_t)rounds * sizeof *buf);
    if (!buf) {
        perror("wake_bench: malloc");
        return 1;
    }
    int rc = 0;
    for (size_t i = 0; i < sizeof MODES / sizeof MODES[0]; i++) {
        const struct mode *m = &MODES[i];
        if (run_one(m, "same", cpus[0], cpus[0], rounds, max_s, work_us, 0, buf))
            rc = 1;
        if (ncpu >= 2 && run_one(m, "cross", cpus[0], cpus[1], rounds, max_s, work_us, 0, buf))
            rc = 1;
        if (run_one(m, "none", -1, -1, rounds, max_s, work_us, 0, buf))
            rc = 1;
    }
    /* A quiet engine: one round trip every IDLE_MS, unpinned, for SECONDS. */
    long idle_rounds = idle_ms ? (long)(max_s * 1000 / idle_ms) : 0;
    if (idle_rounds > rounds)
        idle_rounds = rounds;
    for (size_t i = 0; idle_rounds >= 10 && i < sizeof MODES / sizeof MODES[0]; i++) {
        const struct mode *m = &MODES[i];
        if (m->kind == K_SPIN || m->kind == K_EVENTFD || (m->kind == K_SPINPARK && m->spin_us < 50))
            continue;
        if (run_one(m, "none", -1, -1, idle_rounds, max_s * 2, work_us, idle_ms * 1000, buf))
            rc = 1;
    }
    if (idle_ms && idle_rounds < 10)
        printf("# idle part skipped: SECONDS * 1000 / IDLE_MS < 10 round trips\n");
    free(buf);
    return rc;
}
