/* agent_limits.c - per-task hard time limits on a node (docs/design.md section
 * 9, issue "Beyond PMC"): no thread or timer per task, one deadline heap per
 * agent (sched/deadlines.h) whose earliest entry bounds the agent's epoll
 * timeout.
 *
 * A task with a limit (its own --time-limit, else the run's
 * --task-time-limit; the master sends the one that applies) gets a deadline
 * at start + limit, armed once, as the agent launches it (the slot's
 * claim time).  A launch handed to the pool starts later and wakes no one
 * (the agent takes a reaped launch's completion at its next wake-up), so
 * that deadline is early, never late.  When it passes, the agent looks again:
 * a launch not seen started yet (still launching: staged, or its
 * completion not taken) is looked at again after min(limit, 50 ms); a
 * started one is due at its own start + limit.  This spares the agent a
 * wake-up at every start of a timed task.  When it passes, the task's process group gets SIGTERM
 * and a second deadline at now + --kill-grace; if the task is still there
 * then, SIGKILL.  When it is reaped, its attempt fails with exit code 124
 * (timeout(1)'s code: record status=31744) and ETIMEDOUT in its result, so
 * the master logs "Task NAME exceeded its time limit of S s"; the task's
 * stderr gets the same line.  It retries like any failure.
 *
 * Slots are reused, so entries carry the slot's generation: a stale entry
 * (the task ended, the slot holds another) is dropped.  Agent thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "engine/node/agent_internal.h"
#include "engine/exec/spawn.h"
#include "io/log.h"

/* How soon a deadline of a launch not seen started is looked at again. */
#define AGENT_LIMIT_RECHECK_NS (50u * 1000000u)

/* CLOCK_MONOTONIC ns of a timespec. */
static uint64_t agent_ns(const struct timespec *t)
{
    return (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
}

int agent__limit_start(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    s->end.timed_out = false;
    if (!s->time_limit_ms)
        return 0;
    return deadlines_set(&a->deadlines, i, s->gen,
                         agent_ns(&s->t0) + (uint64_t)s->time_limit_ms * 1000000u);
}

/* Slot i's deadline passed before its task was seen to run its limit:
 * true when it was moved (not started yet, or due later). */
static bool agent_limit_not_yet(struct agent *a, uint32_t i, uint64_t now)
{
    struct slot *s = &a->slots[i];
    uint64_t limit = (uint64_t)s->time_limit_ms * 1000000u;
    uint64_t recheck = limit < AGENT_LIMIT_RECHECK_NS ? limit : AGENT_LIMIT_RECHECK_NS;
    uint64_t due = s->state == SLOT_LAUNCHING ? now + recheck : agent_ns(&s->t0) + limit;
    if (due <= now)
        return false;
    if (deadlines_set(&a->deadlines, i, s->gen, due) < 0)
        return false; /* cannot happen: the slot has its entry; end it now */
    return true;
}

void agent__limit_end(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    if (s->time_limit_ms)
        deadlines_remove(&a->deadlines, i);
    s->gen++;
}

/* The limit of slot i passed: TERM now and KILL after the grace; or the
 * grace passed: KILL. */
static void agent_limit_expired(struct agent *a, uint32_t i, uint64_t now)
{
    struct slot *s = &a->slots[i];
    if (!s->end.timed_out) {
        if (agent_limit_not_yet(a, i, now))
            return;
        /* a reaped launch: the pool marks it, unless it is being reaped */
        if (s->state == SLOT_POOL && !launcher_time_out(a->launcher, i))
            return;
        s->end.timed_out = true;
        log_debug("Task %s exceeded its time limit of %g s: SIGTERM", s->strs,
                  s->time_limit_ms / 1000.0);
        if (s->state != SLOT_POOL) {
            s->end.signalled = SIGTERM;
            kill(-s->pid, SIGTERM);
        }
        if (deadlines_set(&a->deadlines, i, s->gen,
                          now + (uint64_t)a->cfg.kill_grace_ms * 1000000u) == 0)
            return;
    }
    agent__signal(a, i, SIGKILL);
}

int agent__limit_timeout_ms(struct agent *a)
{
    uint64_t now = pmc_mono_ns();
    uint32_t i, gen;
    while (deadlines_pop_expired(&a->deadlines, now, &i, &gen)) {
        if (i < a->nslots && a->slots[i].state >= SLOT_LAUNCHING && a->slots[i].gen == gen &&
            a->slots[i].time_limit_ms)
            agent_limit_expired(a, i, now);
    }
    return deadlines_timeout_ms(&a->deadlines, now);
}

void agent__signal(struct agent *a, uint32_t i, int sig)
{
    struct slot *s = &a->slots[i];
    switch (s->state) {
    case SLOT_POOL:
        /* refused once its reaper has it: the task ended, but may come
         * back lingering, its group in a grace that a SIGKILL ends */
        s->end.signalled = sig;
        launcher_signal(a->launcher, i, sig);
        break;
    case SLOT_RUNNING:
        if (!spawn_exited(s->pidfd)) /* else it ended before: not stopped */
            s->end.signalled = sig;
        kill(-s->pid, sig);
        break;
    case SLOT_LINGERING:
    case SLOT_LINGERING_POOL: /* a lingering group holds its id */
        s->end.signalled = sig;
        kill(-s->pid, sig);
        if (sig == SIGKILL)
            a->linger.linger_due_ns = 0; /* its grace is over: finish it at the next look */
        break;
    default: /* not started yet: signalled when it starts (agent_spawned()) */
        break;
    }
}
