/* agent.c - the node agent thread: messages from the master, the local
 * queue and accounting, adaptive result batching, abort and shutdown; see
 * agent.h and agent_internal.h. */
#include "engine/node/agent.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/node/agent_internal.h"
#include "engine/node/agent_testing.h"
#include "engine/exec/time_limit.h"
#include "io/clock.h"
#include "io/log.h"
#include "sched/result_batch.h"

/* Tasks waiting to start here: queued, or staged in the launcher pool
 * (agent_stage.c), which holds them as the queue did. */
static size_t agent_waiting(const struct agent *a)
{
    return nq_len(&a->queue) + a->stage.nstaged;
}

/* Adaptive batching (docs/design.md section 2): sched/result_batch.h's
 * rule over this node's state, with the engine's knobs
 * (result_batch_defaults()).  Milliseconds to wait before sending, rounded
 * up so that a wait the rule does not call over yet is at least 1: 0 =
 * send now, -1 = nothing waits.  The master refills a node after W/2
 * completions (W >= 64, see sched/placement.h), so RESULT_BATCH <= 32
 * keeps a busy node fed. */
static long agent_result_wait_ms(const struct agent *a)
{
    static const double ms_slack = 1e-6; /* float rounding of the seconds, ms */
    struct result_batch_params p = result_batch_defaults();
    struct result_batch_state st = {.results = agent__results_waiting(a),
                                    .notices = a->outbox.starts.count + a->outbox.link_starts,
                                    .releases = a->outbox.results_release,
                                    .waiting = agent_waiting(a),
                                    .load = a->running + nq_len(&a->queue),
                                    .cpus = a->cfg.cpus,
                                    .ending = a->phase.run != AGENT_RUN,
                                    .send_now = a->outbox.send_now,
                                    .low_water_sent = a->outbox.low_water_sent};
    if (st.results + st.notices > 0)
        st.waited = agent_elapsed(&a->outbox.first_result);
    double wait = result_batch_wait(&p, &st);
    if (wait <= 0)
        return wait < 0 ? -1 : 0;
    long ms = (long)ceil(wait * 1000.0 - ms_slack);
    return ms > 0 ? ms : 1;
}

static void agent_answer_recall(struct agent *a);

/* Send what waits once agent_result_wait_ms() says it is time: the
 * notices and results (agent__send_batch()), the answer to a recall, and
 * the local link's doorbell. */
static void agent_flush_results(struct agent *a)
{
    /* the low-water flush goes once per refill: again only after the node
     * was refilled above the mark */
    if (!agent__at_low_water(a))
        a->outbox.low_water_sent = false;
    if (agent_result_wait_ms(a) != 0)
        return;
    agent__send_batch(a);
    if (a->outbox.recall_answer)
        agent_answer_recall(a);
    if (a->outbox.link_results + a->outbox.link_starts > 0)
        local_link_notify_master(a->outbox.link);
    a->outbox.link_results = a->outbox.link_starts = 0;
}

/* Send the ABORT or BYE built at start-up (once each). */
static void agent_send_control(struct agent *a, struct mail **m)
{
    if (*m)
        comm_send_mail(a->comm, *m);
    *m = NULL;
}

/* --null-executor: the task "succeeds" at once; nothing runs or is written. */
static void agent_null_task(struct agent *a, const struct msg_task *t)
{
    struct slot s = {.id = t->id,
                     .attempt = t->attempt,
                     .start = pmc_epoch_s(),
                     .flags = t->flags & MSG_TASK_RELEASES};
    agent__add_result(a, &s, 0, 0, 0.0);
}

/* Does a task started or staged here name src as an -F file? */
static bool agent_file_in_use(const struct agent *a, const char *src)
{
    for (uint32_t i = 0; i < a->nslots; i++)
        if (agent__slot_busy(a, i) && fwd_names_file(&a->slots[i].fwd, src))
            return true;
    return false;
}

/* Must queued task nt wait because a task of this node, started or staged,
 * forwards a file that nt also names with -F (the same string)?  Both would
 * write it, and the first to end would take and delete the other's data
 * with its own (PMC manual, "I/O forwarding using files").  A local task's
 * forwards are read from the DAG, a remote one's from its TASKS message.
 * O(slots x -F files).  Tasks on other nodes of a shared file system are
 * not seen. */
static bool agent_forward_source_busy(const struct agent *a, const struct node_task *nt)
{
    if (!nt->mail) {
        const struct dag *d = local_link_dag(a->outbox.link);
        const struct dag_forward *f = d->fwd + d->fwd_first[nt->t.id];
        for (uint32_t j = 0; j < d->nfwd[nt->t.id]; j++)
            if (f[j].kind == DAG_FORWARD_FILE && agent_file_in_use(a, d->arena + f[j].src))
                return true;
        return false;
    }
    uint32_t pos = 0, kind;
    const char *src, *dest;
    while (msg_task_next_fwd(&nt->t, &pos, &kind, &src, &dest) == 1)
        if (kind == DAG_FORWARD_FILE && agent_file_in_use(a, src))
            return true;
    return false;
}

/* The queue's condition (nq_set_condition()): a task whose -F file a task
 * here writes is passed over, as one that does not fit is, until that one
 * has ended; the tasks behind it go ahead. */
static bool agent_queued_may_start(const void *item, void *ctx)
{
    const struct node_task *nt = item;
    return nt->t.nfwd == 0 || !agent_forward_source_busy(ctx, nt);
}

/* Start staged and queued tasks while this rank's CPUs and memory allow
 * (the staged ones first: they left the queue first), then stage what
 * still waits (agent_stage.c).  A task whose -F file another task here
 * writes waits in the queue (agent_queued_may_start()). */
static void agent_start_waiting(struct agent *a)
{
    if (a->stage.requeue_due)
        agent__requeue_staged(a);
    agent__start_staged(a);
    struct node_task nt;
    /* holds: a launch that fails at once (a missing program) holds too */
    while (!a->phase.failed && a->phase.holds == 0 &&
           nq_take_fit(&a->queue, a->res.cpus_free, a->res.memory_free, a->res.gpus_free, &nt) ==
               1) {
        if (!nt.mail && nt.t.nfwd && agent__pack_local_forwards(a, &nt.t) < 0) {
            log_fatal("Out of memory for the forwards of task %s", nt.t.name);
            a->phase.failed = true;
            break;
        }
        if (!agent__launch(a, &nt.t, nt.mail, false))
            agent__tasks_mail_unref(nt.mail);
    }
    agent__stage(a);
}

/* agent_start_waiting() unless a failure is held; see there. */
static void agent_pump(struct agent *a)
{
    if (a->phase.holds == 0)
        agent_start_waiting(a);
    /* a failure the master has not answered (-m), held here or in a
     * launch just now: the staged tasks go back (agent_hold()) */
    if (a->phase.holds > 0 && a->stage.nstaged > 0)
        agent__unstage_all(a);
}

static void agent_cancel_queued(struct agent *a)
{
    agent__unstage_all(a);
    struct node_task nt;
    while (nq_pop(&a->queue, &nt) == 1) {
        agent__cancel_task(a, &nt.t);
        agent__tasks_mail_unref(nt.mail);
    }
}

/* Queue task t (of TASKS message b, or from the local link when b is NULL), or
 * settle it at once: null executor, or too late to start anything. */
static void agent_queue_task(struct agent *a, const struct msg_task *t, struct tasks_mail *b)
{
    if (a->cfg.null_executor)
        agent_null_task(a, t);
    else if (agent__closed(&a->phase))
        agent__cancel_task(a, t);
    else if (nq_push(&a->queue, t->cpus, t->memory_mb, t->gpus, t->priority,
                     &(struct node_task){.t = *t, .mail = b}) < 0)
        a->phase.failed = true;
    else {
        if (b)
            b->refs++;
        /* it would start after staged tasks of lower priority: they go
         * back into the queue at the next pump (agent_stage.c) */
        a->stage.requeue_due |= a->stage.nstaged > 0 && t->priority > a->stage.staged_floor;
    }
}

/* The tasks the master handed over on the local link (local_link.h): the
 * same items a TASKS message would carry, built from the DAG. */
static void agent_take_local(struct agent *a)
{
    struct local_task lt;
    bool any = false;
    while (a->outbox.link && local_link_take_task(a->outbox.link, &lt)) {
        struct msg_task t = {.id = lt.id};
        const struct dag *d = local_link_dag(a->outbox.link);
        if (!dag_is_instance(d, lt.id)) /* an instance comes only to the null executor */
            msg_task_from_dag(d, lt.id, &t);
        t.attempt = lt.attempt;
        t.flags = lt.flags;
        t.time_limit_ms = lt.time_limit_ms;
        agent_queue_task(a, &t, NULL);
        any = true;
    }
    if (any)
        agent_pump(a);
}

/* A task this node could never start (more CPUs, memory or GPUs than it
 * has) would wait in its queue for ever, and the run with it: the master
 * never sends one (it checks every task against the nodes' HELLOs), so it
 * is a bad message.  0, or -1 with err. */
static int agent_check_task(const struct agent *a, const struct msg_task *t, struct pmc_error *err)
{
    uint32_t gpus = a->cfg.gpus ? a->cfg.gpus->n : 0;
    if (t->cpus <= a->cfg.cpus && t->memory_mb <= a->cfg.memory_mb && t->gpus <= gpus)
        return 0;
    return pmc_errorf(
        err, "task %s asks %u CPUs, %u MB and %u GPUs of a node of %u, %llu MB and %u", t->name,
        t->cpus, t->memory_mb, t->gpus, a->cfg.cpus, (unsigned long long)a->cfg.memory_mb, gpus);
}

/* Queue the tasks of m; returns true when m is now owned by the queue. */
static bool agent_handle_tasks(struct agent *a, struct mail *m, struct msg_reader *r)
{
    struct tasks_mail *b = calloc(1, sizeof *b);
    struct msg_task t;
    struct pmc_error err;
    int rc;
    if (!b) {
        a->phase.failed = true;
        return false;
    }
    b->msg = m;
    b->refs = 1; /* held while this loop runs */
    while ((rc = msg_next_task(r, &t, &err)) == 1 && (rc = agent_check_task(a, &t, &err)) == 0)
        agent_queue_task(a, &t, b);
    if (rc < 0) {
        log_error("Bad TASKS message from the master: %s", err.text);
        a->phase.failed = true;
    }
    agent_pump(a);
    agent__tasks_mail_unref(b);
    return true;
}

/* The one place the phase moves (enum agent_run's table): never back, and
 * DRAIN with SHUTDOWN, in either order, is DRAIN_SHUTDOWN. */
static void agent_phase_to(struct agent_phase *p, enum agent_run to)
{
    bool both = (p->run == AGENT_DRAIN && to == AGENT_SHUTDOWN) ||
                (p->run == AGENT_SHUTDOWN && to == AGENT_DRAIN);
    if (both)
        p->run = AGENT_DRAIN_SHUTDOWN;
    else if (to > p->run)
        p->run = to;
}

static void agent_kill_all(struct agent *a, int sig)
{
    for (uint32_t i = 0; i < a->nslots; i++)
        agent__signal(a, i, sig); /* a launch is signalled when it started */
}

static void agent_begin_abort(struct agent *a)
{
    if (agent__aborting(&a->phase))
        return;
    agent_phase_to(&a->phase, AGENT_ABORT);
    if (a->launcher) /* a launch under way is signalled as soon as it completes */
        launcher_wake_always(a->launcher);
    agent_cancel_queued(a);
    agent_kill_all(a, SIGTERM);
    a->phase.kill_at_ns = time_limit_kill_at(pmc_mono_ns(), a->cfg.kill_grace_ms);
}

/* Send the answer to a RECALL: how many tasks were given back (their
 * results went before it, or on the local link). */
static void agent_answer_recall(struct agent *a)
{
    struct msgbuf b = {0};
    struct msg_recall rc = {.given = a->outbox.recall_given};
    if (msg_begin(&b, MSG_RECALL) < 0 || msg_add_recall(&b, &rc) < 0) {
        log_error("Cannot answer a RECALL: out of memory");
        a->phase.failed = true;
    } else {
        agent__send(a, &b, "the answer to a RECALL");
    }
    msg_free(&b);
    a->outbox.recall_answer = false;
}

/* RECALL (sched/placement.h, "Recalls"): give back, at once, queued tasks
 * that fit what the master's idle node has free, up to the CPUs asked
 * for, from the end of the queue (those this node would start last), then
 * staged ones (one CPU each, agent_stage.c; the oldest first, which the
 * pool hands out); answer with how many, after their results.  Nothing to
 * give while draining or aborting: every queued task goes back then. */
static void agent_recall(struct agent *a, struct msg_reader *r)
{
    struct msg_recall rc;
    struct pmc_error err = {{0}};
    if (msg_next_recall(r, &rc, &err) != 1) {
        log_error("Bad RECALL message from the master: %s", err.text);
        a->phase.failed = true;
        return;
    }
    struct node_task nt;
    uint32_t given = 0, cpus = 0, i;
    bool open = !agent__closed(&a->phase);
    while (open && cpus < rc.want_cpus &&
           nq_pop_back_fit(&a->queue, rc.cpus < rc.want_cpus - cpus ? rc.cpus : rc.want_cpus - cpus,
                           rc.memory_mb, rc.gpus, &nt) == 1) {
        cpus += nt.t.cpus;
        agent__cancel_task(a, &nt.t);
        agent__tasks_mail_unref(nt.mail);
        given++;
    }
    while (open && cpus < rc.want_cpus && rc.cpus > 0 && a->launcher && a->stage.nstaged > 0 &&
           launcher_take_staged(a->launcher, &i)) {
        agent__cancel_staged(a, i);
        cpus++;
        given++;
    }
    log_debug("Node agent: the master recalled %u CPUs of tasks, %u tasks given back", rc.want_cpus,
              given);
    a->outbox.recall_given = given;
    a->outbox.recall_answer = true;
    a->outbox.send_now |= given > 0;
    if (given == 0)
        agent_answer_recall(a);
}

/* The master answered one held failure (RESUME), which the pool counted
 * (agent_hold()): when none is left unanswered, starts go on. */
static void agent_resume(struct agent *a)
{
    if (a->phase.holds == 0)
        return;
    if (a->launcher)
        launcher_release(a->launcher);
    if (--a->phase.holds == 0)
        agent_pump(a);
}

/* Handle one message; returns true when the mail was kept (TASKS). */
static bool agent_handle_mail(struct agent *a, struct mail *m)
{
    struct msg_reader r;
    struct pmc_error err;
    if (msg_open(&r, m->data, m->len, &err) < 0) {
        log_error("Bad message from rank %d: %s", m->peer, err.text);
        a->phase.failed = true;
        return false;
    }
    switch (r.kind) {
    case MSG_TASKS:
        return agent_handle_tasks(a, m, &r);
    case MSG_SHUTDOWN:
        agent_phase_to(&a->phase, AGENT_SHUTDOWN);
        a->phase.heard_end = true;
        break;
    case MSG_DRAIN:
        agent_phase_to(&a->phase, AGENT_DRAIN);
        agent_cancel_queued(a);
        break;
    case MSG_ABORT:
        a->phase.heard_end = true;
        agent_begin_abort(a);
        break;
    case MSG_RESUME:
        agent_resume(a);
        break;
    case MSG_RECALL:
        agent_recall(a, &r);
        break;
    case MSG_PEER_LOST: /* a joined agent's master is gone: nothing can be reported */
        log_error("Rank %d: the master is gone: ending every task", a->cfg.rank);
        a->phase.heard_end = a->phase.failed = a->phase.sent_abort = true;
        agent_begin_abort(a);
        break;
    default:
        log_warn("Unexpected message kind %u from rank %d", r.kind, m->peer);
    }
    return false;
}

/* agent_leave() was called: say LEAVING once, give back what is queued
 * (and what comes), and end when the running tasks have (as after
 * SHUTDOWN: outputs closed, BYE). */
static void agent_begin_leave(struct agent *a)
{
    int asked = AGENT_LEAVE_ASKED;
    if (!atomic_compare_exchange_strong_explicit(&a->phase.leave, &asked, AGENT_LEAVE_SENT,
                                                 memory_order_acquire, memory_order_relaxed))
        return;
    log_info("Rank %d: leaving the run: queued tasks go back to the master, running ones finish",
             a->cfg.rank);
    agent_send_control(a, &a->outbox.leaving_mail);
    agent_phase_to(&a->phase, AGENT_DRAIN_SHUTDOWN);
    a->phase.heard_end = true;
    agent_cancel_queued(a);
}

/* The mailbox, then the local link: the master hands tasks over before
 * the DRAIN or ABORT that must cancel them (local_link.h). */
static void agent_drain_mailbox(struct agent *a)
{
    agent_begin_leave(a);
    struct mail *m;
    while ((m = mailbox_pop(&a->box)) != NULL)
        if (!agent_handle_mail(a, m))
            mail_free(m);
    agent_take_local(a);
}

/* ms until the kill deadline during an abort, else -1 (no timeout). */
static int agent_kill_timeout(struct agent *a)
{
    if (a->phase.run != AGENT_ABORT)
        return -1;
    long ms = (long)((int64_t)(a->phase.kill_at_ns - pmc_mono_ns()) / 1000000);
    if (ms <= 0) {
        agent_kill_all(a, SIGKILL);
        agent_phase_to(&a->phase, AGENT_ABORT_KILLED);
        return -1;
    }
    return (int)ms;
}

static int sooner(long a, long b)
{
    if (a < 0)
        return (int)b;
    return b < 0 || a < b ? (int)a : (int)b;
}

/* Quiet exits (launcher_set_quiet_exits()) come back without waking the
 * agent, which takes them with the next exit that does: on their own that
 * is tasks later, so a finished task would reach the master (the rescue
 * log, --status) a task length or more late, the longer the tasks and the
 * more of them a node stages, and a kill would lose it.  So while a
 * staged job may have started in a quiet exit's place (nstaged > 0), the
 * agent looks at the pool at least every RESULT_DELAY_LEAF_MS, and
 * agent_result_clock() counts that wait in the result's delay.  -1: no
 * such exit can wait.  Short tasks wake the agent far more often than
 * this anyway; long ones cost 10 wake-ups a second of the agent. */
static long agent_quiet_exits_wait_ms(const struct agent *a)
{
    return a->stage.quiet_exits && a->stage.nstaged > 0 ? RESULT_DELAY_LEAF_MS : -1;
}

/* The epoll timeout: the soonest of the abort's kill deadline, the result
 * delay, the next look at quiet exits, the next task time limit and the
 * next look at lingering tasks (last: the first two may end a grace). */
static int agent_wait_timeout(struct agent *a)
{
    int kill_ms = agent_kill_timeout(a);
    int limit_ms = agent__limit_timeout_ms(a);
    int ms = sooner(sooner(kill_ms, agent_result_wait_ms(a)), limit_ms);
    ms = sooner(ms, agent_quiet_exits_wait_ms(a));
    return sooner(ms, agent__linger_timeout_ms(a));
}

/* The agent's mailbox watch (mailbox_watch): tasks handed over on the
 * local link, or launches completed, count as mail, so the agent neither
 * sleeps nor stops spinning past them. */
static bool agent_more_waiting(void *arg)
{
    const struct agent *a = arg;
    return (a->outbox.link && local_link_tasks_waiting(a->outbox.link)) ||
           (a->launcher && launcher_pending(a->launcher) > 0);
}

static void agent_wait_events(struct agent *a)
{
    struct epoll_event ev[64];
    int timeout = agent_wait_timeout(a);
    /* spin only for the master's next TASKS: with tasks running, exits come
     * through epoll and a spin would take CPU from the tasks */
    uint64_t now = pmc_mono_ns();
    if (timeout != 0 && a->running == 0 && mailbox_spin_if_due(&a->box, &a->spin, now))
        timeout = 0;
    if (mailbox_prepare_sleep(&a->box))
        timeout = 0;
    uint64_t t0 = timeout != 0 ? pmc_mono_ns() : 0;
    int n = epoll_wait(a->epfd, ev, 64, timeout);
    bool signaled = false;
    for (int i = 0; i < n && !signaled; i++)
        signaled = ev[i].data.u64 == MAILBOX_EVENT;
    if (signaled)
        mailbox_awake(&a->box);
    else
        mailbox_awake_unsignaled(&a->box);
    if (timeout != 0) /* answered fast: spin before the next wait */
        mailbox_spin_note(&a->spin, t0, pmc_mono_ns());
    else
        a->spin.seen_ns = now; /* looked without waiting */
    if (a->launcher)
        agent__take_launches(a);
    for (int i = 0; i < n; i++) {
        uint64_t d = ev[i].data.u64;
        if (d == MAILBOX_EVENT)
            continue;
        if (d >> 32)
            agent__pipe_readable(a, (uint32_t)d, (uint32_t)(d >> 32) - 1);
        else
            agent__reap(a, (uint32_t)d);
    }
    agent__linger_check(a);
    agent__orphans_check(a);
    if (!agent__closed(&a->phase))
        agent_pump(a);
}

static void agent_send_hello(struct agent *a)
{
    struct msgbuf b = {0};
    struct msg_hello h = {.host_rank = (uint32_t)a->cfg.host_rank,
                          .host_ranks = (uint32_t)a->cfg.host_ranks,
                          .cpus = a->cfg.cpus,
                          .gpus = a->cfg.gpus ? a->cfg.gpus->n : 0,
                          .memory_mb = a->cfg.memory_mb,
                          .hostname = a->cfg.hostname};
    if (msg_begin(&b, MSG_HELLO) < 0 || msg_add_hello(&b, &h) < 0) {
        a->phase.failed = true;
        msg_free(&b);
        return;
    }
    msg_end(&b);
    if (comm_send(a->comm, 0, COMM_TO_MASTER, &b) < 0)
        a->phase.failed = true; /* the master learns it from the ABORT */
    msg_free(&b);
}

/* Woken by exits, the agent asks to run at once (spawn.h); a debug line
 * says whether it could. */
static void agent_ask_short_slice(void)
{
    int rc = spawn_thread_short_slice();
    if (rc < 0)
        log_debug("Node agent: no short time slice (sched_getattr/sched_setattr: %s)",
                  strerror(errno));
    else
        log_debug("Node agent: %s", rc ? "short time slice"
                                       : "time slice left as it was (kernel before 6.12, "
                                         "policy, nice or utilization clamps)");
}

/* Close the rank's DAG.out.R and DAG.err.R after its last task.  A close
 * that fails (a network file system reports a failed write-back there) may
 * have cut task output short: the master hears of it (a LOST before the
 * BYE, even after an ABORT), the run fails, and the tasks this node
 * reported done run again next time (their records taken back from the
 * rescue log). */
static void agent_close_outputs(struct agent *a)
{
    struct taskio_file *files[2] = {&a->out, &a->err};
    bool lost = false;
    for (int k = 0; k < 2; k++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", files[k]->path ? files[k]->path : "");
        if (taskio_file_close(files[k]) < 0 && errno != EINTR) {
            log_error("Task output may be lost: closing %s failed: %s", path, strerror(errno));
            a->phase.failed = lost = true;
        }
    }
    if (lost) {
        agent_send_control(a, &a->outbox.lost_mail);
        a->phase.sent_abort = true;
    }
    if (a->phase.failed && !a->phase.sent_abort) {
        agent_send_control(a, &a->outbox.abort_mail);
        a->phase.sent_abort = true;
    }
}

/* Nothing runs or waits, and the master said its last word (heard_end). */
static bool agent_done(const struct agent *a)
{
    return agent__shutting(&a->phase) && a->phase.heard_end && a->running == 0 &&
           nq_len(&a->queue) == 0;
}

static void *agent_main(void *arg)
{
    struct agent *a = arg;
    log_debug("Worker %d: Starting...", a->cfg.rank); /* PMC's wording */
    if (!a->cfg.null_executor)
        agent_ask_short_slice();
    agent_send_hello(a);
    while (!agent_done(a)) {
        agent_drain_mailbox(a);
        agent_flush_results(a);
        if (a->phase.failed && !a->phase.sent_abort) {
            /* this rank cannot go on: have the master end the run */
            agent_send_control(a, &a->outbox.abort_mail);
            a->phase.sent_abort = true;
            agent_begin_abort(a);
        }
        if (agent_done(a))
            break;
        agent_wait_events(a);
        agent_flush_results(a);
    }
    agent_flush_results(a); /* unconditional: the phase is past SHUTDOWN */
    agent_close_outputs(a);
    agent_send_control(a, &a->outbox.bye_mail);
    a->cpu.launchers_ns = launcher_cpu_ns(a->launcher);
    a->cpu.agent_ns = pmc_thread_cpu_ns();
    return NULL;
}

/* The CPU ids of this agent's tasks (PMC_AFFINITY; with --set-affinity
 * they are bound to them): the host's PUs (its share of them when
 * --ranks-are-hosts puts several agents on one machine), or, with
 * --keep-affinity, the CPUs it inherited (a launcher's binding is already
 * per rank).  Without --set-affinity, when the agent offers more CPUs than
 * those PUs (--host-cpus above them) or hwloc cannot tell, the ids are the
 * logical slots 0 .. CPUs-1, as PMC numbers --host-cpus N (no task is
 * bound then, and ids past the real CPUs name none).  With --set-affinity
 * and no topology tasks run unbound.  -1 only without memory. */
static int agent_create_pool(struct agent *a)
{
    cpu_set_t inherited;
    bool keep = a->cfg.keep_affinity && sched_getaffinity(0, sizeof inherited, &inherited) == 0;
    struct pmc_error perr;
    a->res.pool = cpuset_pool_create(NULL, keep ? &inherited : NULL, keep ? 0 : a->cfg.pu_share,
                                     keep ? 1 : a->cfg.pu_shares, &perr);
    if (!a->res.pool && errno == ENOMEM)
        return -1;
    if (!a->cfg.set_affinity && (!a->res.pool || cpuset_pool_size(a->res.pool) < a->cfg.cpus)) {
        cpuset_pool_destroy(a->res.pool);
        a->res.pool = cpuset_pool_create_slots(a->cfg.cpus ? a->cfg.cpus : 1, &perr);
        if (!a->res.pool && errno == ENOMEM)
            return -1;
        if (!a->res.pool)
            log_warn("%s: tasks get no PMC_AFFINITY", perr.text);
        else
            log_debug("Rank %d: PMC_AFFINITY names CPU slots 0-%u (%u CPUs, more than its PUs)",
                      a->cfg.rank, a->cfg.cpus ? a->cfg.cpus - 1 : 0, a->cfg.cpus);
        return 0;
    }
    if (!a->res.pool)
        log_warn("--set-affinity: %s; tasks run unbound", perr.text);
    else if (cpuset_pool_size(a->res.pool) < a->cfg.cpus)
        log_debug("Rank %d offers %u CPUs on %u PUs", a->cfg.rank, a->cfg.cpus,
                  cpuset_pool_size(a->res.pool));
    return 0;
}

struct agent *agent_create(const struct agent_config *cfg, struct pmc_error *err)
{
    struct agent *a = calloc(1, sizeof *a);
    if (!a) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    a->cfg = *cfg;
    a->res.cpus_free = cfg->cpus;
    a->res.memory_free = cfg->memory_mb;
    a->res.gpus_free = cfg->gpus ? cfg->gpus->n : 0;
    a->cfg.hostname = strdup(cfg->hostname);
    a->cfg.dag_path = strdup(cfg->dag_path);
    a->cfg.task_dir = strdup(cfg->task_dir ? cfg->task_dir : ".");
    a->out.fd = a->err.fd = -1;
    nq_init(&a->queue, sizeof(struct node_task));
    nq_set_condition(&a->queue, agent_queued_may_start, a);
    a->box.efd = -1;
    a->epfd = epoll_create1(EPOLL_CLOEXEC);
    a->res.gpu_busy = calloc(a->res.gpus_free ? a->res.gpus_free : 1, sizeof *a->res.gpu_busy);
    a->outbox.abort_mail = mail_control(0, COMM_TO_MASTER, MSG_ABORT);
    a->outbox.bye_mail = mail_control(0, COMM_TO_MASTER, MSG_BYE);
    a->outbox.lost_mail = mail_control(0, COMM_TO_MASTER, MSG_LOST);
    a->outbox.leaving_mail = mail_control(0, COMM_TO_MASTER, MSG_LEAVING);
    if (!a->outbox.abort_mail || !a->outbox.bye_mail || !a->outbox.lost_mail ||
        !a->outbox.leaving_mail || !a->cfg.hostname || !a->cfg.dag_path || !a->cfg.task_dir ||
        a->epfd < 0 || !a->res.gpu_busy || mailbox_init(&a->box) < 0 ||
        agent__snapshot_env(a) < 0) {
        pmc_errorf(err, "cannot create the node agent: %m");
        agent_destroy(a);
        return NULL;
    }
    if (deadlines_init(&a->deadlines) < 0) {
        pmc_errorf(err, "cannot create the node agent: out of memory");
        agent_destroy(a);
        return NULL;
    }
    if (!cfg->null_executor && agent_create_pool(a) < 0) {
        pmc_errorf(err, "cannot create the node agent: out of memory");
        agent_destroy(a);
        return NULL;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = MAILBOX_EVENT};
    if (epoll_ctl(a->epfd, EPOLL_CTL_ADD, a->box.efd, &ev) < 0) {
        pmc_errorf(err, "cannot create the node agent: epoll_ctl: %m");
        agent_destroy(a);
        return NULL;
    }
    if (!cfg->null_executor && !(a->watchdog = watchdog_start(cfg->rank, err)))
        log_warn("%s: if this process is killed, its tasks run on", err->text);
    /* launchers to spare beyond one per CPU: all but one wait for their own
     * task, as spawner processes do, the bound ones first
     * (launcher_set_own_waits()), and the
     * exits they reap wake the agent less often, over more staged tasks
     * (launcher_set_quiet_exits()) */
    uint32_t cpus = cfg->cpus ? cfg->cpus : 1;
    bool spare = !cfg->null_executor && cfg->launch_threads > cpus;
    a->stage.staged_cap = spare ? AGENT_STAGED_PER_CPU_SPARE * cpus : cpus; /* agent__stage() */
    /* every task takes >= 1 CPU (dagfile.c), so at most cpus run at once,
     * beside staged_cap staged ones, and a launch takes the lowest free
     * slot (agent__next_free_slot()): no index reaches cpus + staged_cap,
     * and 8 more leave room for lingering groups */
    /* launchers to spare: one bound to each CPU this process may run on,
     * the rest unbound (launcher_create()), when the node has all of them;
     * a rank that shares its CPUs with others (--host-cpus below them,
     * --ranks-are-hosts) would bind its launchers to the same first CPUs as
     * the other ranks', so there they stay unbound */
    cpu_set_t pin;
    bool pinned =
        spare && sched_getaffinity(0, sizeof pin, &pin) == 0 && (uint32_t)CPU_COUNT(&pin) <= cpus;
    if (!cfg->null_executor && cfg->launch_threads > 0 &&
        !(a->launcher = launcher_create(cfg->launch_threads, cpus + a->stage.staged_cap + 8,
                                        &a->box, pinned ? &pin : NULL, err))) {
        agent_destroy(a);
        return NULL;
    }
    if (spare) {
        launcher_set_own_waits(a->launcher, cfg->launch_threads - 1);
        launcher_set_quiet_exits(a->launcher, AGENT_QUIET_LOW_PER_CPU_SPARE * cpus);
        a->stage.quiet_exits = true;
    }
    if (a->launcher &&
        !(a->stage.staged_order = calloc(a->stage.staged_cap, sizeof *a->stage.staged_order))) {
        pmc_errorf(err, "cannot create the node agent: out of memory");
        agent_destroy(a);
        return NULL;
    }
    if (!cfg->null_executor)
        log_debug("Rank %d: %u CPUs, %u launch threads%s", cfg->rank, cfg->cpus,
                  a->launcher ? cfg->launch_threads : 0,
                  a->launcher ? "" : " (the agent thread starts the tasks)");
    if (agent__open_outputs(a, err) < 0) {
        char text[sizeof err->text];
        snprintf(text, sizeof text, "%s", err->text);
        pmc_errorf(err, "Unable to open %s", text);
        agent_destroy(a);
        return NULL;
    }
    /* where the watchdog saves what killed tasks wrote (watchdog.h) */
    if (watchdog_lend(a->watchdog, WATCHDOG_OUTPUTS, a->out.fd, a->err.fd) < 0)
        log_warn("Rank %d: cannot lend its output files to its watchdog (%s): if this process "
                 "is killed, its running tasks' output is lost",
                 cfg->rank, strerror(errno));
    return a;
}

struct mailbox *agent_mailbox(struct agent *a)
{
    return &a->box;
}

uint32_t agent_cpus(const struct agent *a)
{
    return a->cfg.cpus;
}

void agent_set_local_link(struct agent *a, struct local_link *l)
{
    a->outbox.link = l;
}

void agent__fail_next_start(struct agent *a, int err)
{
    atomic_store_explicit(&a->fail_next_start, err, memory_order_relaxed);
}

int agent_start(struct agent *a, struct comm *c, struct pmc_error *err)
{
    a->comm = c;
    mailbox_watch(&a->box, agent_more_waiting, a);
    int rc = pthread_create(&a->thread, NULL, agent_main, a);
    if (rc != 0) {
        errno = rc;
        return pmc_errorf(err, "cannot start the node agent thread: %m");
    }
    pthread_setname_np(a->thread, "pmc-agent"); /* top -H, perf, gdb */
    a->started = true;
    return 0;
}

void agent_get_cpu(const struct agent *a, struct agent_cpu *out)
{
    out->agent_ns = a->cpu.agent_ns;
    out->launchers_ns = a->cpu.launchers_ns;
    out->tasks = a->outbox.results_made;
    out->launch_threads = a->launcher ? launcher_threads(a->launcher) : 0;
    out->staged_starts = a->launcher ? launcher_staged_starts(a->launcher) : 0;
    out->own_waits = a->launcher ? launcher_own_waits(a->launcher) : 0;
}

void agent_leave(struct agent *a)
{
    int no = AGENT_LEAVE_NO;
    atomic_compare_exchange_strong_explicit(&a->phase.leave, &no, AGENT_LEAVE_ASKED,
                                            memory_order_release, memory_order_relaxed);
    mailbox_wake(&a->box);
}

int agent_join(struct agent *a)
{
    if (a->started) {
        pthread_join(a->thread, NULL);
        a->started = false;
    }
    return a->phase.failed ? -1 : 0;
}

void agent_destroy(struct agent *a)
{
    if (!a)
        return;
    agent_join(a);
    launcher_destroy(a->launcher); /* after the last task: PR_SET_PDEATHSIG is per thread */
    watchdog_stop(a->watchdog);
    for (uint32_t i = 0; i < a->nslots; i++)
        agent__slot_free(&a->slots[i]);
    cpuset_pool_destroy(a->res.pool);
    free(a->slots);
    free(a->free_slots);
    free(a->env.base_env);
    free(a->res.gpu_busy);
    free(a->stage.staged_order);
    deadlines_free(&a->deadlines);
    struct node_task nt;
    while (nq_pop(&a->queue, &nt) == 1)
        agent__tasks_mail_unref(nt.mail);
    nq_free(&a->queue);
    mail_free(a->outbox.abort_mail);
    mail_free(a->outbox.bye_mail);
    mail_free(a->outbox.lost_mail);
    mail_free(a->outbox.leaving_mail);
    msg_free(&a->outbox.results);
    msg_free(&a->outbox.starts);
    free(a->env.fwd_scratch);
    msg_free(&a->outbox.fwd_pack);
    taskio_file_close(&a->out);
    taskio_file_close(&a->err);
    if (a->box.efd >= 0)
        mailbox_destroy(&a->box);
    if (a->epfd >= 0)
        close(a->epfd);
    free((char *)a->cfg.hostname);
    free((char *)a->cfg.dag_path);
    free((char *)a->cfg.task_dir);
    free(a);
}
