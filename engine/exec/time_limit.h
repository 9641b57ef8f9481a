/* time_limit.h - a task's hard time limit (--time-limit, --task-time-limit):
 * the one rule for what happens when its deadline passes.  The caller
 * keeps the deadlines (sched/deadlines.h) and sends the signals; the rule
 * is here so that it reads in one place (docs/modules.md, "time_limit").
 */
#ifndef PMC_TIME_LIMIT_H
#define PMC_TIME_LIMIT_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* How soon a deadline of a launch not seen started is looked at again
 * (at most the limit itself). */
#define TIME_LIMIT_RECHECK_MS 50u

/* A timed task as its deadline passes. */
struct time_limit_task {
    uint32_t limit_ms; /* > 0 */
    bool started;      /* its launch was seen to complete; false: still launching */
    uint64_t start_ns; /* CLOCK_MONOTONIC ns of its start (when started) */
    bool timed_out;    /* SIGTERM was sent: its grace runs */
};

enum time_limit_step {
    TIME_LIMIT_LATER, /* not over yet: look again at *due_ns */
    TIME_LIMIT_TERM,  /* over: SIGTERM its group; its grace ends at time_limit_kill_at() */
    TIME_LIMIT_KILL,  /* the grace passed: SIGKILL its group */
};

/* The next step for task t at now_ns (CLOCK_MONOTONIC ns); *due_ns is set
 * for LATER.  Pure; any thread. */
enum time_limit_step time_limit_next(const struct time_limit_task *t, uint64_t now_ns,
                                     uint64_t *due_ns);

/* When a task sent SIGTERM at now_ns gets SIGKILL: grace_ms (--kill-grace)
 * later.  Pure. */
static inline uint64_t time_limit_kill_at(uint64_t now_ns, uint32_t grace_ms)
{
    return now_ns + (uint64_t)grace_ms * 1000000u;
}

#ifdef __cplusplus
}
#endif
#endif
