/* agent_stage.c - staged launches: queued tasks prepared ahead and staged
 * in the launcher pool, where the thread that reaps any task starts the
 * oldest at once on the CPU that task gave up (launcher.h; the contract
 * in agent_internal.h).
 *
 * Why: without it the end of a task on a full node goes launcher -> agent
 * (the exit) -> agent picks the next task -> launcher (the spawn), two
 * cross-thread hand-offs on the path of every task.  A ring shared by
 * every reaper holds no task hostage behind a long one: whichever task
 * ends first gives its CPU to the oldest staged task.
 *
 * When: only while the node runs no more tasks than the CPUs it may use
 * (agent_config.stage_launches): with more in flight, each CPU's next
 * task is already there when one ends, and staging only costs the agent
 * more.
 *
 * What fits: a staged task needs one CPU, no memory and no GPU, so that
 * whatever task ends frees enough for it (every task holds one CPU at
 * least: dag.c refuses -c 0), and it is never bound (no staging with
 * --set-affinity).  Its one CPU id (PMC_AFFINITY) is that CPU's: the
 * reaper writes the lowest id of the task that ended into the staged
 * task's environment before it starts it (launch_job.first_id), the agent
 * moves that id from the ended task to the staged one when it takes
 * either (agent__adopt_id(); the ended task's release keeps it back),
 * and a staged task the agent starts itself takes a free id.  Only the
 * task the pump would start next is staged, so staging keeps the queue's priority order and PMC's
 * deferral rule; when that task needs more, staging stops and it waits for the pump. Up to one task
 * per CPU is committed ahead (8 with launchers to spare: AGENT_STAGED_PER_CPU_SPARE); a task of
 * higher priority than some of them that arrives meanwhile is staged ahead of those, and the lowest
 * staged task goes back into the queue, in its place (agent__requeue_staged()), so that it starts
 * on the next CPU that frees, as PMC starts the highest priority on the next free slot. Without
 * that, it waited a whole round behind them: on a node of 1-hour tasks, an hour.  The cost is one
 * staging undone and one made per task that goes ahead (Pegasus gives deeper levels higher
 * priorities, so each batch of children may do so); the others are only pushed again.  Not with
 * --per-task-stdio: a staged task has its files made, and one cancelled at a drain or an abort
 * would leave them empty behind.
 *
 * Accounting: a staged task is claimed at once (its slot, its CPU in
 * slot.cpus) against a CPU lent ahead: cpus_free is raised by one before
 * the claim lowers it, and nstaged counts the loans.  A loan is settled
 * when the agent takes the exit of the task whose reaper started it (that
 * task's release keeps the CPU back: lent_cpus), when the agent starts the
 * task itself on a CPU that freed another way, or when it cancels it (its
 * release gives back nothing).
 */
#include "engine/node/agent_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "io/clock.h"
#include "io/log.h"

/* Does the slot agent__launch() takes next have a launcher job? */
static bool agent_next_slot_has_job(struct agent *a)
{
    return launcher_job(a->launcher, agent__next_free_slot(a)) != NULL;
}

/* The task the pump would start on the next CPU that frees (the queue's
 * order and PMC's deferral rule: nq_take_fit() with one CPU and the free
 * memory and GPUs), if it needs one CPU, no memory and no GPU: its place
 * in *pos.  NULL when there is none, or it is another (it waits in the
 * queue for the pump). */
static const struct node_task *agent_stageable_next(const struct agent *a, size_t *pos)
{
    uint32_t cpus, gpus;
    uint64_t memory_mb;
    const struct node_task *next = nq_peek_fit(&a->queue, 1, a->res.memory_free, a->res.gpus_free,
                                               &cpus, &memory_mb, &gpus, pos);
    if (!next || cpus != 1 || memory_mb || gpus)
        return NULL;
    return next;
}

/* Stage agent_stageable_next()'s task.  false when there is none (nothing
 * more is staged in this round), or it could not start (reported failed). */
static bool agent_stage_one(struct agent *a)
{
    size_t pos;
    if (!agent_stageable_next(a, &pos))
        return false;
    struct node_task nt;
    nq_take_at(&a->queue, pos, &nt);
    if (!nt.mail && nt.t.nfwd && agent__pack_local_forwards(a, &nt.t) < 0) {
        log_fatal("Out of memory for the forwards of task %s", nt.t.name);
        a->phase.failed = true;
        return false;
    }
    a->res.cpus_free++; /* the loan: agent__launch() claims it */
    uint32_t i = agent__next_free_slot(a);
    if (agent__launch(a, &nt.t, nt.mail, true)) {
        a->slots[i].staged_task = nt.t;
        if (a->stage.nstaged++ == 0 || nt.t.priority < a->stage.staged_floor)
            a->stage.staged_floor = nt.t.priority;
        return true;
    }
    /* it could not start: reported failed, its slot (if any) released */
    agent__tasks_mail_unref(nt.mail);
    a->res.cpus_free--;
    return false;
}

void agent__stage(struct agent *a)
{
    if (!a->launcher || !a->cfg.stage_launches || a->cfg.set_affinity || a->cfg.per_task_stdio ||
        agent__closed(&a->phase) || a->phase.failed || a->phase.holds > 0)
        return;
    uint32_t most = a->stage.staged_cap; /* one per CPU of the node, or 8 (agent_create()) */
    while (a->res.cpus_free == 0 && a->stage.nstaged < most && nq_len(&a->queue) > 0 &&
           agent_next_slot_has_job(a) && agent_stage_one(a))
        ;
}

/* A staged task the agent starts itself, on a CPU freed another way: its
 * one CPU id (PMC_AFFINITY) from the pool, written into its environment,
 * and passed on to the staged task its reaper starts. */
static void agent_stage_take_id(struct agent *a, struct slot *s, struct launch_job *j)
{
    cpu_set_t one;
    if (!s->cpuid.pending || cpuset_pool_take_any(a->res.pool, 1, &one) != 0)
        return;
    int id = agent__first_id(&one);
    char d[AFFINITY_ID_MAX];
    snprintf(d, sizeof d, "%d", id);
    memcpy(s->cpuid.value, d, strlen(d) + 1);
    agent__adopt_id(s, id);
    j->first_id = id;
}

void agent__start_staged(struct agent *a)
{
    uint32_t i;
    while (a->stage.nstaged && a->res.cpus_free && launcher_take_staged(a->launcher, &i)) {
        a->res.cpus_free--; /* the loan, settled with a free CPU */
        a->stage.nstaged--;
        struct slot *s = &a->slots[i]; /* its clock starts now, not when staged */
        struct launch_job *j = launcher_job(a->launcher, i);
        agent_stage_take_id(a, s, j);
        clock_gettime(CLOCK_MONOTONIC, &s->t0);
        s->start = pmc_epoch_s();
        j->started = s->t0;
        j->output.record.start = s->start;
        launcher_submit(a->launcher, i);
    }
}

/* Staged slot i, as launcher_take_staged() handed it, not started: free
 * it and end its loan.  Its TASKS message, whose reference passes to the
 * caller. */
static struct tasks_mail *agent_unstage(struct agent *a, uint32_t i)
{
    struct slot *s = &a->slots[i];
    s->cpuid.lent = 1; /* it never had the CPU: the loan ends with it */
    a->stage.nstaged--;
    agent__limit_end(a, i); /* its limit was armed when it was staged */
    struct tasks_mail *b = s->mail;
    s->mail = NULL;
    a->running--;
    fwd_close_write_ends(&s->fwd);
    agent__slot_release(a, s);
    return b;
}

void agent__cancel_staged(struct agent *a, uint32_t i)
{
    agent__add_cancelled(a, &a->slots[i]);
    agent__tasks_mail_unref(agent_unstage(a, i));
}

/* Staged slot i back into the queue, in its place: ahead of the tasks of
 * its priority that came after it (nq_push_front()). */
static void agent_requeue_one(struct agent *a, uint32_t i)
{
    struct node_task nt = {.t = a->slots[i].staged_task};
    nt.mail = agent_unstage(a, i);
    if (!nt.mail) { /* a local task's forwards are packed again when it starts */
        nt.t.fwd = NULL;
        nt.t.fwd_len = 0;
    }
    if (nq_push_front(&a->queue, nt.t.cpus, nt.t.memory_mb, nt.t.gpus, nt.t.priority, &nt) < 0) {
        log_error("Out of memory for the node's queue: task %s goes back to the master",
                  nt.t.name); /* it runs elsewhere, or here again */
        agent__cancel_task(a, &nt.t);
        agent__tasks_mail_unref(nt.mail);
    }
}

void agent__requeue_staged(struct agent *a)
{
    a->stage.requeue_due = false;
    if (!a->launcher || a->phase.failed)
        return;
    /* the staged jobs not started, oldest (highest priority) first */
    uint32_t n = 0, i;
    while (n < a->stage.staged_cap && launcher_take_staged(a->launcher, &i))
        a->stage.staged_order[n++] = i;
    /* staged again in one order, merged by priority with the queue's
     * stageable tasks of a higher one: each of those displaces the lowest
     * job left, which goes back into the queue (first, so that the slot it
     * frees is there for the new one).  Jobs merely pushed again cost an
     * atomic push each; a job is made or undone only per displacement,
     * whose nq_push_front() costs O(log n) (a heap: node_queue.h). */
    uint32_t lo = 0, hi = n, moved = 0;
    int32_t floor = INT32_MAX; /* the lowest priority staged again */
    size_t pos;
    while (lo < hi && !a->phase.failed && a->phase.holds == 0) {
        int32_t next = a->slots[a->stage.staged_order[lo]].staged_task.priority;
        const struct node_task *q = agent_stageable_next(a, &pos);
        int32_t prio = q ? q->t.priority : INT32_MIN; /* q moves with the queue */
        if (prio > next && agent_next_slot_has_job(a)) {
            agent_requeue_one(a, a->stage.staged_order[--hi]);
            moved++;
            /* a task that cannot start is reported failed, and the next
             * one is looked at */
            if (agent_stage_one(a))
                floor = prio < floor ? prio : floor;
        } else {
            launcher_stage(a->launcher, a->stage.staged_order[lo++]);
            floor = next < floor ? next : floor;
        }
    }
    /* a failure that holds the node's starts (-m) took back what was
     * staged (agent_hold()): these too */
    while (lo < hi)
        agent__cancel_staged(a, a->stage.staged_order[lo++]);
    if (floor != INT32_MAX)
        a->stage.staged_floor = floor;
    log_debug("Node agent: %u staged tasks back in the queue, behind a higher priority", moved);
}

void agent__unstage_all(struct agent *a)
{
    uint32_t i;
    while (a->launcher && launcher_take_staged(a->launcher, &i))
        agent__cancel_staged(a, i);
}
