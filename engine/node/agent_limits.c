/* agent_limits.c - per-task hard time limits on a node (docs/design.md section
 * 9, issue "Beyond PMC"): no thread or timer per task, one deadline heap per
 * agent (sched/deadlines.h) whose earliest entry bounds the agent's epoll
 * timeout.
 *
 * A task with a limit (its own --time-limit, else the run's
 * --task-time-limit; the master sends the one that applies) gets a deadline
 * at start + limit, armed once, as the agent launches it (the slot's
 * claim time).  What happens when it passes is engine/exec/time_limit.h's
 * rule: look again later, SIGTERM, then SIGKILL after --kill-grace.  When
 * it is reaped, its attempt fails with exit code 124 (timeout(1)'s code:
 * record status=31744) and ETIMEDOUT in its result, so the master logs
 * "Task NAME exceeded its time limit of S s"; the task's stderr gets the
 * same line.  It retries like any failure.  The signals a task's group
 * gets are sent here too (agent__signal()).
 *
 * Slots are reused, so entries carry the slot's generation: a stale entry
 * (the task ended, the slot holds another) is dropped.  Agent thread only.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>

#include "engine/node/agent_internal.h"
#include "engine/exec/time_limit.h"
#include "io/log.h"

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

void agent__limit_end(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    if (s->time_limit_ms)
        deadlines_remove(&a->deadlines, i);
    s->gen++;
}

/* The deadline of slot i passed: the rule (time_limit_next()) says to
 * look again later, to send SIGTERM and look again at the grace's end, or
 * to send SIGKILL. */
static void agent_limit_expired(struct agent *a, uint32_t i, uint64_t now)
{
    struct slot *s = &a->slots[i];
    struct time_limit_task t = {.limit_ms = s->time_limit_ms,
                                .started = s->state != SLOT_LAUNCHING,
                                .start_ns = agent_ns(&s->t0),
                                .timed_out = s->end.timed_out};
    uint64_t due;
    enum time_limit_step step = time_limit_next(&t, now, &due);
    if (step == TIME_LIMIT_LATER && deadlines_set(&a->deadlines, i, s->gen, due) == 0)
        return; /* (a failure cannot happen: the slot has its entry; it ends now) */
    if (step != TIME_LIMIT_KILL) {
        /* a reaped launch: the pool marks it, unless it is being reaped */
        if (s->state == SLOT_POOL && !launcher_time_out(a->launcher, i))
            return;
        log_debug("Task %s exceeded its time limit of %g s: SIGTERM", s->strs,
                  s->time_limit_ms / 1000.0);
        if (s->state == SLOT_POOL) /* the pool sent it */
            s->end.timed_out = true;
        else
            task_end_signal(&s->end, s->pid, s->pidfd, SIGTERM, true);
        if (deadlines_set(&a->deadlines, i, s->gen,
                          time_limit_kill_at(now, a->cfg.kill_grace_ms)) == 0)
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
        task_end_signal(&s->end, s->pid, s->pidfd, sig, false);
        break;
    case SLOT_LINGERING:
    case SLOT_LINGERING_POOL: /* a lingering group holds its id */
        task_end_signal(&s->end, s->pid, -1, sig, false);
        if (sig == SIGKILL)
            a->linger.linger_due_ns = 0; /* its grace is over: finish it at the next look */
        break;
    default: /* not started yet: signalled when it starts (agent_spawned()) */
        break;
    }
}
