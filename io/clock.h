/* clock.h - "now" in the units the engine uses, from one place.
 *
 * Two clocks, never mixed: CLOCK_MONOTONIC for every interval, timeout and
 * deadline inside one run (it does not jump when the system time is set),
 * and CLOCK_REALTIME only for timestamps that leave the process (records,
 * logs, the status JSON) or meet the outside world's time (the batch job's
 * end).  The _s forms return seconds as a double (sub-microsecond
 * resolution for centuries); pmc_mono_ms() truncates to the millisecond.
 *
 * Thread-safety: reentrant (clock_gettime(2) is; these do not fail on Linux
 * for these clocks, so errors are not reported).
 */
#ifndef PMC_CLOCK_H
#define PMC_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

/* CLOCK_MONOTONIC in seconds (an arbitrary origin: compare, do not print). */
static inline double pmc_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* CLOCK_MONOTONIC in whole milliseconds. */
static inline int64_t pmc_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* CLOCK_MONOTONIC in nanoseconds. */
static inline uint64_t pmc_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Seconds from t0 to t1 (timespecs of one clock; negative when t1 is
 * earlier). */
static inline double pmc_seconds_between(const struct timespec *t0, const struct timespec *t1)
{
    return (double)(t1->tv_sec - t0->tv_sec) + (double)(t1->tv_nsec - t0->tv_nsec) / 1e9;
}

/* CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID: user and
 * system), in nanoseconds. */
static inline uint64_t pmc_thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of thread t so far (pthread_getcpuclockid), in nanoseconds; 0
 * when it cannot be read.  t must not have been joined. */
static inline uint64_t pmc_thread_cpu_ns_of(pthread_t t)
{
    clockid_t id;
    struct timespec ts;
    if (pthread_getcpuclockid(t, &id) != 0 || clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC usec (>= 0) microseconds from now, as an absolute
 * timespec for pthread_cond_timedwait() on a condition variable whose
 * clock is CLOCK_MONOTONIC (pthread_condattr_setclock). */
static inline struct timespec pmc_mono_after_us(long usec)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += usec / 1000000;
    ts.tv_nsec += (usec % 1000000) * 1000;
    ts.tv_sec += ts.tv_nsec / 1000000000;
    ts.tv_nsec %= 1000000000;
    return ts;
}

/* CLOCK_REALTIME in seconds since the Epoch (for records and logs). */
static inline double pmc_epoch_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#ifdef __cplusplus
}
#endif
#endif
