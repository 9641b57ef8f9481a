/* rq_bench.c - throughput of the ready queue and of its MPMC ring.
 *
 *   rq_bench [OPS]
 *
 * OPS (default 2000000) operations per thread and case.  Prints one line per
 * case, key=value pairs, informational only (never a pass/fail verdict):
 *
 *   case=NAME threads=T ops=N ns_per_op=X mops_per_s=Y
 *
 * ns_per_op is wall time / ops over all threads (an aggregate figure: with
 * T threads running at once, T times the per-thread latency), best of 3 runs.
 *
 *   ring_pair   T threads, each pushing then popping one value, over and over,
 *               on one sched/mpmc_ring (capacity 1024); op = push + pop
 *   mutex_pair  the same on a plain ring under a pthread mutex (the baseline
 *               the lock-free ring replaces)
 *   rq_pair     one thread: rq_push then rq_bucket_pop on a sized ready queue
 *               of 3 priorities (the dispatcher's pattern); op = push + pop
 *   rq_mpsc     T-1 producer threads rq_push (tasks released by completions)
 *               while one dispatcher sweeps the buckets and pops; op = one task
 *               pushed and popped
 *
 * Threads start together on a barrier; the clock runs from the barrier to the
 * last thread's end.  With more threads than CPUs the figures measure
 * preemption as much as the queue.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/clock.h"
#include "sched/mpmc_ring.h"
#include "sched/ready_queue.h"

#define RUNS 3
#define RING_CAP 1024

/* ---- the mutex baseline ------------------------------------------------- */

struct locked_ring {
    pthread_mutex_t lock;
    uint32_t slot[RING_CAP];
    uint32_t head, len;
};

static int locked_push(struct locked_ring *r, uint32_t v)
{
    int ok = 0;
    pthread_mutex_lock(&r->lock);
    if (r->len < RING_CAP) {
        r->slot[(r->head + r->len++) % RING_CAP] = v;
        ok = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

static int locked_pop(struct locked_ring *r, uint32_t *v)
{
    int ok = 0;
    pthread_mutex_lock(&r->lock);
    if (r->len > 0) {
        *v = r->slot[r->head];
        r->head = (r->head + 1) % RING_CAP;
        r->len--;
        ok = 1;
    }
    pthread_mutex_unlock(&r->lock);
    return ok;
}

/* ---- one case ----------------------------------------------------------- */

struct bench {
    const char *name;
    int threads;
    uint32_t ops; /* per thread */
    pthread_barrier_t start;
    struct mpmc_ring *ring;
    struct locked_ring *locked;
    struct ready_queue *rq;
    uint64_t sink; /* keeps the pops alive */
};

struct worker {
    struct bench *b;
    int id;
    double end;
    uint64_t sum;
};

static void *ring_pair(void *arg)
{
    struct worker *w = arg;
    uint32_t v;
    pthread_barrier_wait(&w->b->start);
    for (uint32_t i = 0; i < w->b->ops; i++) {
        while (!mpmc_ring_try_push(w->b->ring, i))
            sched_yield(); /* rare: another thread's op is mid-way */
        while (!mpmc_ring_try_pop(w->b->ring, &v))
            sched_yield(); /* rare: another thread's op is mid-way */
        w->sum += v;
    }
    w->end = pmc_mono_s();
    return NULL;
}

static void *mutex_pair(void *arg)
{
    struct worker *w = arg;
    uint32_t v;
    pthread_barrier_wait(&w->b->start);
    for (uint32_t i = 0; i < w->b->ops; i++) {
        while (!locked_push(w->b->locked, i))
            sched_yield(); /* rare: another thread's op is mid-way */
        while (!locked_pop(w->b->locked, &v))
            sched_yield(); /* rare: another thread's op is mid-way */
        w->sum += v;
    }
    w->end = pmc_mono_s();
    return NULL;
}

static const int32_t bench_prio[3] = {10, 0, -10};

static void *rq_pair(void *arg)
{
    struct worker *w = arg;
    pthread_barrier_wait(&w->b->start);
    for (uint32_t i = 0; i < w->b->ops; i++) {
        if (rq_push(w->b->rq, i, bench_prio[i % 3]) < 0)
            abort();
        w->sum += rq_bucket_pop(w->b->rq, i % 3);
    }
    w->end = pmc_mono_s();
    return NULL;
}

/* Producers (id > 0) push ops tasks each; the dispatcher (id 0) pops them
 * all, sweeping the buckets from the highest priority down. */
static void *rq_mpsc(void *arg)
{
    struct worker *w = arg;
    struct ready_queue *q = w->b->rq;
    uint64_t total = (uint64_t)w->b->ops * (uint64_t)(w->b->threads - 1), popped = 0;
    pthread_barrier_wait(&w->b->start);
    if (w->id > 0) {
        uint32_t base = (uint32_t)w->id << 24;
        for (uint32_t i = 0; i < w->b->ops; i++)
            if (rq_push(q, base | i, bench_prio[i % 3]) < 0)
                abort();
    } else {
        while (popped < total)
            for (size_t b = 0; b < rq_buckets(q); b++)
                for (size_t n = rq_bucket_size(q, b); n > 0; n--, popped++)
                    w->sum += rq_bucket_pop(q, b);
    }
    w->end = pmc_mono_s();
    return NULL;
}

/* Wall seconds of one run of fn on b->threads threads. */
static double run_once(struct bench *b, void *(*fn)(void *))
{
    pthread_t tid[16];
    struct worker w[16];
    pthread_barrier_init(&b->start, NULL, (unsigned)b->threads + 1);
    for (int i = 0; i < b->threads; i++) {
        w[i] = (struct worker){.b = b, .id = i};
        if (pthread_create(&tid[i], NULL, fn, &w[i]) != 0) {
            perror("pthread_create");
            exit(1);
        }
    }
    pthread_barrier_wait(&b->start);
    double t0 = pmc_mono_s(), end = t0;
    for (int i = 0; i < b->threads; i++) {
        pthread_join(tid[i], NULL);
        end = w[i].end > end ? w[i].end : end;
        b->sink += w[i].sum;
    }
    pthread_barrier_destroy(&b->start);
    return end - t0;
}

/* The ready queue for one run: sized for every task a run pushes. */
static struct ready_queue *bench_rq(uint32_t ntasks)
{
    int32_t *prio = malloc((size_t)ntasks * sizeof *prio);
    if (!prio)
        return NULL;
    for (uint32_t t = 0; t < ntasks; t++)
        prio[t] = bench_prio[t % 3];
    struct ready_queue *q = rq_create_sized(prio, ntasks);
    free(prio);
    return q;
}

static void report(struct bench *b, void *(*fn)(void *), uint64_t ops_per_run)
{
    double best = 0;
    for (int r = 0; r < RUNS; r++) {
        if (fn == rq_pair || fn == rq_mpsc) {
            b->rq = bench_rq(fn == rq_pair ? 3 : b->ops * (uint32_t)(b->threads - 1));
            if (!b->rq) {
                fprintf(stderr, "rq_bench: %s\n", strerror(errno));
                exit(1);
            }
        }
        double s = run_once(b, fn);
        rq_destroy(b->rq);
        b->rq = NULL;
        if (r == 0 || s < best)
            best = s;
    }
    printf("case=%s threads=%d ops=%llu ns_per_op=%.1f mops_per_s=%.2f\n", b->name, b->threads,
           (unsigned long long)ops_per_run, best * 1e9 / (double)ops_per_run,
           (double)ops_per_run / best / 1e6);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    uint32_t ops = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 10) : 2000000;
    if (ops == 0 || ops >= (UINT32_C(1) << 24)) {
        fprintf(stderr, "usage: rq_bench [OPS]  (0 < OPS < 2^24)\n");
        return 2;
    }
    struct locked_ring *locked = calloc(1, sizeof *locked);
    struct bench b = {.ops = ops, .ring = mpmc_ring_create(RING_CAP), .locked = locked};
    if (!b.ring || !locked) {
        fprintf(stderr, "rq_bench: out of memory\n");
        return 1;
    }
    pthread_mutex_init(&locked->lock, NULL);
    static const int nthreads[] = {1, 2, 4};
    for (size_t i = 0; i < 3; i++) {
        b.threads = nthreads[i];
        b.name = "ring_pair";
        report(&b, ring_pair, (uint64_t)ops * (uint64_t)b.threads);
        b.name = "mutex_pair";
        report(&b, mutex_pair, (uint64_t)ops * (uint64_t)b.threads);
    }
    b.threads = 1;
    b.name = "rq_pair";
    report(&b, rq_pair, ops);
    for (int t = 2; t <= 4; t += 2) {
        b.threads = t;
        b.name = "rq_mpsc";
        report(&b, rq_mpsc, (uint64_t)ops * (uint64_t)(t - 1));
    }
    pthread_mutex_destroy(&locked->lock);
    free(locked);
    mpmc_ring_destroy(b.ring);
    return b.sink == 42 ? 3 : 0; /* never: only keeps the sums alive */
}
