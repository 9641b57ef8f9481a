/* launcher.c - the launcher threads of a node agent; see launcher.h. */
#include "engine/launcher.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/epoll.h>

#include "io/clock.h"
#include "sched/mpmc_ring.h"

#define LAUNCHER_SPIN 200 /* sem_trywait rounds before a launcher parks */

struct launcher {
    struct launch_job *jobs; /* nslots */
    uint32_t nslots, nthreads;
    struct mpmc_ring *submitted, *completed, *unwatched;
    sem_t work; /* one post per submitted job, and one per thread to stop */
    atomic_bool stop;
    struct mailbox *wake;
    pthread_t threads[LAUNCHER_MAX_THREADS];
};

static void launcher_wait_work(struct launcher *l)
{
    for (int i = 0; i < LAUNCHER_SPIN; i++)
        if (sem_trywait(&l->work) == 0)
            return;
    while (sem_wait(&l->work) < 0 && errno == EINTR)
        ;
}

static void *launcher_main(void *arg)
{
    struct launcher *l = arg;
    for (;;) {
        launcher_wait_work(l);
        uint32_t i;
        if (!mpmc_ring_try_pop(l->submitted, &i)) {
            if (atomic_load_explicit(&l->stop, memory_order_acquire))
                return NULL;
            continue; /* a post whose push another launcher took */
        }
        struct launch_job *j = &l->jobs[i];
        j->err = spawn_task(&j->req, &j->pid, &j->pidfd);
        /* read before the push: the job is the agent's after it */
        bool quiet = j->quiet && j->err == 0;
        int epfd = j->watch_epfd, pidfd = j->pidfd;
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = j->watch_data};
        while (!mpmc_ring_try_push(l->completed, i))
            ; /* cannot be full: it holds every slot */
        if (!quiet) {
            mailbox_notify(l->wake);
        } else if (epoll_ctl(epfd, EPOLL_CTL_ADD, pidfd, &ev) < 0) {
            /* no exit event can come, so the slot is not reused meanwhile */
            j->watch_err = errno;
            while (!mpmc_ring_try_push(l->unwatched, i))
                ; /* one per slot at most */
            mailbox_notify(l->wake);
        }
    }
}

struct launcher *launcher_create(uint32_t nthreads, uint32_t nslots, struct mailbox *wake,
                                 struct pmc_error *err)
{
    if (nthreads < 1 || nthreads > LAUNCHER_MAX_THREADS || nslots < 1) {
        errno = EINVAL;
        pmc_errorf(err, "launcher: %u threads for %u slots", nthreads, nslots);
        return NULL;
    }
    struct launcher *l = calloc(1, sizeof *l);
    if (!l || !(l->jobs = calloc(nslots, sizeof *l->jobs)) ||
        !(l->submitted = mpmc_ring_create(nslots)) || !(l->completed = mpmc_ring_create(nslots)) ||
        !(l->unwatched = mpmc_ring_create(nslots)) || sem_init(&l->work, 0, 0) < 0) {
        pmc_errorf(err, "launcher: out of memory");
        if (l) {
            mpmc_ring_destroy(l->submitted);
            mpmc_ring_destroy(l->completed);
            mpmc_ring_destroy(l->unwatched);
            free(l->jobs);
            free(l);
        }
        return NULL;
    }
    l->nslots = nslots;
    l->wake = wake;
    for (; l->nthreads < nthreads; l->nthreads++) {
        int rc = pthread_create(&l->threads[l->nthreads], NULL, launcher_main, l);
        if (rc != 0) {
            errno = rc;
            pmc_errorf(err, "launcher: cannot start a thread: %m");
            launcher_destroy(l);
            return NULL;
        }
        pthread_setname_np(l->threads[l->nthreads], "pmc-launch"); /* top -H, perf, gdb */
    }
    return l;
}

struct launch_job *launcher_job(struct launcher *l, uint32_t i)
{
    return i < l->nslots ? &l->jobs[i] : NULL;
}

void launcher_submit(struct launcher *l, uint32_t i)
{
    while (!mpmc_ring_try_push(l->submitted, i))
        ; /* cannot be full: one submit per slot at most */
    sem_post(&l->work);
}

int launcher_take(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->completed, i) ? 1 : 0;
}

uint32_t launcher_default_threads(uint32_t cpus)
{
    uint32_t n = cpus / LAUNCHER_CPUS_PER_THREAD;
    return n < LAUNCHER_MAX_THREADS ? n : LAUNCHER_MAX_THREADS;
}

int launcher_take_unwatched(struct launcher *l, uint32_t *i)
{
    return mpmc_ring_try_pop(l->unwatched, i) ? 1 : 0;
}

uint32_t launcher_pending(const struct launcher *l)
{
    return mpmc_ring_size(l->completed) + mpmc_ring_size(l->unwatched);
}

uint64_t launcher_cpu_ns(const struct launcher *l)
{
    uint64_t ns = 0;
    for (uint32_t i = 0; l && i < l->nthreads; i++)
        ns += pmc_thread_cpu_ns_of(l->threads[i]);
    return ns;
}

void launcher_destroy(struct launcher *l)
{
    if (!l)
        return;
    atomic_store_explicit(&l->stop, true, memory_order_release);
    for (uint32_t t = 0; t < l->nthreads; t++)
        sem_post(&l->work);
    for (uint32_t t = 0; t < l->nthreads; t++)
        pthread_join(l->threads[t], NULL);
    sem_destroy(&l->work);
    mpmc_ring_destroy(l->submitted);
    mpmc_ring_destroy(l->completed);
    mpmc_ring_destroy(l->unwatched);
    free(l->jobs);
    free(l);
}
