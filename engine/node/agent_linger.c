/* agent_linger.c - the grace of what a task's first process leaves in its
 * process group (agent_internal.h has the contract).
 *
 * A task is its process group: when its first process ends, what it left
 * there is killed at once (spawn_end_task()).  Within the grace of a
 * SIGTERM (a time-out, an abort) that would cut the grace short for the
 * real program of a wrapper that dies of the SIGTERM at once (`sh -c "app;
 * ..."`): the program, asked by the same SIGTERM to stop, would get SIGKILL
 * a moment later instead of --kill-grace seconds.  So its first process is
 * reaped alone (spawn_reap_leader()) and the task lingers until its group
 * is empty or the grace ends, as a batch system waits KillWait for every
 * process of a step.  Its output block is written then, after what the
 * group's last processes wrote.
 *
 * A look is one kill(-pgid, 0) per lingering task, every
 * AGENT_LINGER_POLL_MS; lingering is rare (a task in its grace whose first
 * process ended first), so the agent's loop pays one comparison for it.
 * The zombies of what tasks leave behind outside a grace, adopted since
 * this process is a child subreaper (spawn_adopt_orphans()), are reaped
 * here too (agent__orphans_check()).
 * Agent thread only.
 */
#include <signal.h>

#include "engine/node/agent_internal.h"
#include "engine/exec/spawn.h"
#include "io/clock.h"
#include "io/log.h"

/* Slot i's lingering task: its group ended or was killed.  Its watchdog
 * entry goes first: the group's id may be handed out again. */
static void agent_linger_end(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    volatile pid_t *entry = watchdog_entry(a->watchdog, i);
    if (entry)
        *entry = 0;
    a->linger.lingering--;
    if (s->state == SLOT_LINGERING_POOL) {
        launcher_finish(a->launcher, i);
        agent__take_exited(a, i);
    } else {
        agent__task_ended(a, i, s->end.wait_status, agent_elapsed(&s->t0));
    }
}

void agent__linger_check(struct agent *a)
{
    if (a->linger.lingering == 0)
        return;
    uint64_t now = pmc_mono_ns();
    if (now < a->linger.linger_due_ns)
        return;
    for (uint32_t i = 0; i < a->nslots && a->linger.lingering > 0; i++) {
        const struct slot *s = &a->slots[i];
        if ((s->state == SLOT_LINGERING || s->state == SLOT_LINGERING_POOL) &&
            (s->end.signalled == SIGKILL || !spawn_group_alive(s->pid)))
            agent_linger_end(a, i);
    }
    a->linger.linger_due_ns = now + AGENT_LINGER_POLL_NS;
}

int agent__linger_timeout_ms(const struct agent *a)
{
    if (a->linger.lingering == 0)
        return -1;
    uint64_t now = pmc_mono_ns();
    return a->linger.linger_due_ns <= now
               ? 0
               : (int)((a->linger.linger_due_ns - now + 999999u) / 1000000u);
}

void agent__orphans_check(struct agent *a)
{
    if (a->linger.orphans_results == a->outbox.results_made || a->cfg.null_executor)
        return;
    uint64_t now = pmc_mono_ns();
    if (now < a->linger.orphans_due_ns)
        return;
    a->linger.orphans_results = a->outbox.results_made;
    a->linger.orphans_due_ns = now + (uint64_t)AGENT_ORPHANS_EVERY_MS * 1000000u;
    unsigned n = spawn_reap_orphans(watchdog_pid(a->watchdog));
    if (n)
        log_debug("Node agent: reaped %u orphans of tasks", n);
}
