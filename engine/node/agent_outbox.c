/* agent_outbox.c - what goes to the master from a node: results, start
 * notices, their batching into messages (or events on rank 0's local
 * link), and the hold of a failure that counts toward -m.  Agent thread
 * only; see agent_internal.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/node/agent_internal.h"
#include "io/clock.h"
#include "io/log.h"
#include "sched/result_batch.h"

/* Results waiting to be sent (or, on the local link, notified). */
uint32_t agent__results_waiting(const struct agent *a)
{
    return a->outbox.results.count + a->outbox.link_results;
}

/* Results and notices waiting to be sent. */
static uint32_t agent_pending(const struct agent *a)
{
    return agent__results_waiting(a) + a->outbox.starts.count + a->outbox.link_starts;
}

/* Queue ev on the local link (ownership of ev->fwd passes); the first
 * pending event starts the batching clock as a message's first item. */
static void agent_link_event(struct agent *a, struct local_event *ev)
{
    if (agent_pending(a) == 0)
        clock_gettime(CLOCK_MONOTONIC, &a->outbox.first_result);
    if (!local_link_send_event(a->outbox.link, ev)) {
        local_event_free(ev);
        log_fatal("Rank %d: the link to the master is full (%s)", a->cfg.rank, strerror(errno));
        a->phase.failed = true;
        return;
    }
    if (ev->kind == LOCAL_RESULT)
        a->outbox.link_results++;
    else
        a->outbox.link_starts++;
}

void agent__started(struct agent *a, const struct slot *s)
{
    if (!(s->flags & MSG_TASK_NOTIFY_START))
        return;
    struct msg_started st = {.id = s->id, .attempt = s->attempt, .start = s->start};
    if (a->outbox.link) {
        agent_link_event(a, &(struct local_event){.kind = LOCAL_STARTED, .started = st});
        return;
    }
    if (a->outbox.starts.count == 0) {
        if (msg_begin(&a->outbox.starts, MSG_STARTED) < 0)
            goto oom;
        if (a->outbox.results.count == 0)
            clock_gettime(CLOCK_MONOTONIC, &a->outbox.first_result);
    }
    if (msg_add_started(&a->outbox.starts, &st) == 0)
        return;
oom:
    log_fatal("Out of memory for the start notices of rank %d", a->cfg.rank);
    a->phase.failed = true;
}

/* The result on the local link: the forwarded data, if any, in a copy of
 * its own (the one allocation of this path, only for tasks with -f/-F). */
static void agent_link_result(struct agent *a, const struct msg_result *r)
{
    struct local_event ev = {.kind = LOCAL_RESULT, .result = *r};
    ev.result.fwd = NULL;
    if (r->fwd_len) {
        uint8_t *copy = malloc(r->fwd_len);
        if (!copy) {
            log_fatal("Out of memory for the forwarded data of rank %d", a->cfg.rank);
            a->phase.failed = true;
            return;
        }
        ev.result.fwd = memcpy(copy, r->fwd, r->fwd_len);
    }
    agent_link_event(a, &ev);
}

void agent__send(struct agent *a, struct msgbuf *b, const char *what)
{
    if (b->count == 0)
        return;
    msg_end(b);
    if (comm_send(a->comm, 0, COMM_TO_MASTER, b) < 0) {
        log_error("Cannot send %s: %s", what, strerror(errno));
        a->phase.failed = true;
    }
}

/* True when, counting 1 CPU per task, this node's running and queued tasks
 * are at the master's refill mark (result_batch_low_water()): its unsent
 * results are what the master waits for to refill it, so they go now,
 * while W/2 tasks' worth of work is still queued. */
bool agent__at_low_water(const struct agent *a)
{
    return result_batch_low_water(a->running + nq_len(&a->queue), a->cfg.cpus);
}

/* Send the pending notices, then the results (one destination, one
 * thread: the master gets a task's STARTED before its result), and clear
 * what agent_result_wait_ms() kept for them: the results that release
 * children, a failure to send now, and, at the refill mark, the low-water
 * flush (it goes once per refill). */
void agent__send_batch(struct agent *a)
{
    agent__send(a, &a->outbox.starts, "start notices");
    agent__send(a, &a->outbox.results, "results");
    a->outbox.results_release = false;
    a->outbox.send_now = false;
    a->outbox.low_water_sent |= agent__at_low_water(a);
}

/* Queue r in the RESULTS message being built, after sending that message
 * (its tasks' start notices first: agent__send_batch()) when r's forwarded
 * data would take it past MSG_SPLIT_BYTES: only forwarded data (-f/-F, up
 * to FWD_TASK_MAX a task) makes results this big, and several such batched
 * together would pass MSG_MAX_BYTES, which one MPI message cannot carry.
 * 0, or -1 (out of memory). */
static int agent_batch_result(struct agent *a, const struct msg_result *r)
{
    if (a->outbox.results.count > 0 && a->outbox.results.len + r->fwd_len > MSG_SPLIT_BYTES)
        agent__send_batch(a);
    if (a->outbox.results.count == 0) {
        if (msg_begin(&a->outbox.results, MSG_RESULTS) < 0)
            return -1;
        if (a->outbox.starts.count == 0)
            clock_gettime(CLOCK_MONOTONIC, &a->outbox.first_result);
    }
    return msg_add_result(&a->outbox.results, r);
}

/* The task of slot s, whose failure counts toward -m, failed: start
 * nothing (no staged job either: the pool's reapers are held from the
 * failure on, launcher_hold()) until the master answers, and send the
 * result now. */
static void agent_hold(struct agent *a, const struct slot *s)
{
    if (a->launcher && !s->hold_counted) /* its reaper counted it, or it failed here */
        launcher_hold(a->launcher);
    a->phase.holds++; /* agent_pump() gives the staged tasks back */
    a->outbox.send_now = true;
}

/* The batching clock (first_result: when the oldest unsent result or
 * notice was added) of a result whose task ran for `duration` seconds from
 * t0 (CLOCK_MONOTONIC) starts at the task's end if that is earlier, not
 * when the agent took it: an exit the pool handed back quietly was seen up
 * to RESULT_DELAY_LEAF_MS late (agent_quiet_exits_wait_ms()), and that
 * counts toward the result's delay, so no result is held longer than
 * RESULT_DELAY_LEAF_MS after its task ended.  Call after queueing it. */
static void agent_result_clock(struct agent *a, const struct timespec *t0, double duration)
{
    long ns = t0->tv_nsec + (long)((duration - (double)(long)duration) * 1e9);
    struct timespec end = {.tv_sec = t0->tv_sec + (time_t)duration + ns / 1000000000,
                           .tv_nsec = ns % 1000000000};
    if (pmc_seconds_between(&a->outbox.first_result, &end) < 0)
        a->outbox.first_result = end;
}

void agent__add_result(struct agent *a, const struct slot *s, int status, int exec_errno,
                       double duration)
{
    struct msg_result r = {.id = s->id,
                           .attempt = s->attempt,
                           .status = status,
                           .exec_errno = exec_errno,
                           .start = s->start,
                           .duration = duration,
                           .nfwd = a->outbox.fwd_pack.count,
                           .fwd = a->outbox.fwd_pack.data,
                           .fwd_len = a->outbox.fwd_pack.len};
    int rc = 0;
    a->outbox.results_made++;
    if (a->outbox.link)
        agent_link_result(a, &r);
    else
        rc = agent_batch_result(a, &r);
    if (duration > 0) /* it ran (null, cancelled, failed starts: 0) */
        agent_result_clock(a, &s->t0, duration);
    a->outbox.fwd_pack.len = a->outbox.fwd_pack.count = 0;
    a->outbox.results_release |= (s->flags & MSG_TASK_RELEASES) != 0;
    if ((s->flags & MSG_TASK_HOLD_ON_FAILURE) && (status != 0 || exec_errno != 0) &&
        exec_errno != ECANCELED)
        agent_hold(a, s);
    if (rc < 0) {
        log_fatal("Out of memory for the results of rank %d", a->cfg.rank);
        a->phase.failed = true;
    }
}

void agent__tasks_mail_unref(struct tasks_mail *b)
{
    if (b && --b->refs == 0) {
        mail_free(b->msg);
        free(b);
    }
}

void agent__add_cancelled(struct agent *a, struct slot *s)
{
    s->start = pmc_epoch_s();
    agent__add_result(a, s, 0, ECANCELED, 0.0);
}

void agent__cancel_task(struct agent *a, const struct msg_task *t)
{
    agent__add_cancelled(a, &(struct slot){.id = t->id, .attempt = t->attempt});
}
