/* master_sched.c - the master's hot path: ready tasks, dispatch to nodes,
 * results; see master_internal.h for the state and its invariants.
 *
 * What goes where is decided by sched/placement.h (docs/design.md section
 * 2); this file acts on it: one TASKS message per node and round, sent,
 * and the results applied.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "engine/master/master_internal.h"
#include "io/grow.h"
#include "io/log.h"

/* ---- task arrays' instances (docs/task-arrays.md) ----------------------- */

struct live_task *master__live(const struct master *m, uint32_t t)
{
    uint32_t i = id_map_get(&m->sched.live_of, t);
    return i == ID_MAP_NONE ? NULL : &m->sched.live[i];
}

const struct dag_array *master__array_of(const struct master *m, uint32_t t)
{
    uint32_t a = 0, index;
    (void)dag_instance_of(m->dag, t, &a, &index); /* callers pass instance ids */
    return &m->dag->arrays[a];
}

const char *master__instance_name(const struct master *m, uint32_t t)
{
    struct master_sched *s = (struct master_sched *)&m->sched; /* the ring is scratch */
    char *buf = s->names[s->next_name++ % 4];
    uint32_t a, index;
    if (dag_instance_of(m->dag, t, &a, &index) < 0)
        return "?";
    (void)dag_instance_name(m->dag, a, index, buf, s->name_cap);
    return buf;
}

static int live_grow(struct master_sched *s)
{
    uint32_t old = s->live_cap, cap = old ? 2 * old : 1024;
    struct live_task *live = realloc(s->live, sizeof *live * cap);
    if (!live)
        return -1;
    s->live = live;
    uint32_t *free_slots = realloc(s->live_free, sizeof *free_slots * cap);
    if (!free_slots)
        return -1;
    s->live_free = free_slots;
    /* free slots hold the id UINT32_MAX, which no instance has: the scans
     * over the slots (master__sched_take_back(), --status) pass them */
    for (uint32_t i = old; i < cap; i++)
        s->live[i] = (struct live_task){.id = UINT32_MAX};
    for (uint32_t i = cap; i-- > old;)
        s->live_free[s->nlive_free++] = i;
    s->live_cap = cap;
    return 0;
}

/* Instance t, just handed out, gets its live state.  0, or -1 with ENOMEM. */
static int live_add(struct master_sched *s, uint32_t t)
{
    if (s->nlive_free == 0 && live_grow(s) < 0)
        return -1;
    uint32_t i = s->live_free[s->nlive_free - 1];
    if (id_map_put(&s->live_of, t, i) < 0)
        return -1;
    s->nlive_free--;
    s->live[i] = (struct live_task){.id = t, .in_window = true};
    return 0;
}

/* Instance t's last attempt ended (done, or failed for good): it keeps no
 * state but its done bit; its attempts go to the summary's histogram. */
static void live_end(struct master_sched *s, uint32_t t)
{
    uint32_t i = id_map_get(&s->live_of, t);
    if (i == ID_MAP_NONE)
        return;
    uint32_t a = s->live[i].run.attempts;
    s->inst_attempts[a < 7 ? a : 7]++;
    if (a > 1 && s->ninst_retried < INSTANCES_RETRIED_LISTED) {
        if (!s->inst_retried) /* the list is informative: without memory it stays empty */
            s->inst_retried = malloc(sizeof *s->inst_retried * INSTANCES_RETRIED_LISTED);
        if (s->inst_retried)
            s->inst_retried[s->ninst_retried++] = (struct failed_task){.task = t, .attempts = a};
    }
    (void)id_map_remove(&s->live_of, t);
    s->live[i].id = UINT32_MAX;
    s->live_free[s->nlive_free++] = i;
}

/* placement_demand.instance: an instance's demand is its array's. */
static struct placement_need master_instance_need(const void *ctx, uint32_t t)
{
    const struct dag_array *a = master__array_of(ctx, t);
    return (struct placement_need){a->cpus, a->memory_mb, a->gpus, a->time_limit_ms};
}

/* Task t's requests (CPUs, MB, GPUs, time limit): its columns, or its
 * array's record. */
static struct placement_need task_need(const struct master *m, uint32_t t)
{
    const struct dag *d = m->dag;
    if (t >= d->ntasks)
        return master_instance_need(m, t);
    return (struct placement_need){d->cpus[t], d->memory_mb[t], d->gpus[t], d->time_limit_ms[t]};
}

/* Task t's options: its columns, or its array's record. */
static int32_t task_priority(const struct master *m, uint32_t t)
{
    return t < m->dag->ntasks ? m->dag->priority[t] : master__array_of(m, t)->priority;
}

static uint32_t task_tries(const struct master *m, uint32_t t)
{
    uint32_t tries = t < m->dag->ntasks ? m->dag->tries[t] : master__array_of(m, t)->tries;
    return tries ? tries : m->cfg.tries;
}

/* Has task t children (plain ones, or through array edges)? */
static bool task_releases(const struct master *m, uint32_t t)
{
    const struct dag *d = m->dag;
    uint32_t first, a, index;
    if (t < d->ntasks)
        return d->child_first[t + 1] > d->child_first[t] ||
               (d->narray_edges && dag_node_out_edges(d, t, &first) > 0);
    (void)dag_instance_of(d, t, &a, &index);
    return dag_node_out_edges(d, DAG_NODE_ARRAY | a, &first) > 0;
}

/* Push t on the ready queue; an instance's bucket grows as needed (plain
 * tasks' room is reserved at the start).  0, or -1 with ENOMEM. */
static int master_push_ready(struct master *m, uint32_t t, int32_t prio, bool front)
{
    struct ready_queue *q = m->sched.ready;
    int rc = front ? rq_push_front(q, t, prio) : rq_push(q, t, prio);
    if (rc == 0 || errno != ENOBUFS || t < m->dag->ntasks)
        return rc;
    size_t want = 2 * rq_size(q) + m->sched.window;
    if (rq_reserve(q, prio, want > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)want) < 0)
        return -1;
    return front ? rq_push_front(q, t, prio) : rq_push(q, t, prio);
}

/* Put t in the ready queue.  A new attempt gets a new submit sequence number
 * and its SUBMIT event (PMC: a job instance per attempt); a task given back
 * unstarted (front: at the front of its priority) keeps both, so the event
 * logs never show an attempt that did not run as a retry.  0, or -1 with
 * ENOMEM. */
static int master_make_ready(struct master *m, uint32_t t, bool front)
{
    master__run(m, t)->state = TASK_READY;
    if (!front)
        master__events_queued(m, t);
    return master_push_ready(m, t, task_priority(m, t), front);
}

/* ar_take_ready(): instance t may run; it becomes live and ready. */
static int master_take_instance(void *ctx, dag_task_t t, int32_t prio)
{
    struct master *m = ctx;
    (void)prio;
    if (live_add(&m->sched, t) < 0 || master_make_ready(m, t, false) < 0) {
        log_fatal("Out of memory for the ready instances of task arrays");
        master__fail(m);
        return -1;
    }
    return 0;
}

/* Hand out the instances that may run, a window per array ahead of
 * dispatch: more than a round can place (every node's CPUs and its
 * prefetch window), so that the ready queue does not run dry between
 * rounds. */
static void master_take_instances(struct master *m)
{
    m->sched.window = 4096 + 4 * m->nodes.cpus;
    if (m->sched.arrays && ar_has_ready(m->sched.arrays))
        (void)ar_take_ready(m->sched.arrays, m->sched.window, master_take_instance, m);
}

/* Each task's remaining parents from the DAG and the done set; queue the
 * tasks that can run. */
int master__init_ready(struct master *m)
{
    const struct dag *d = m->dag;
    m->sched.arrays = ar_create(d, m->rescue.done_before, m->rescue.inst_done_before);
    if (!m->sched.arrays)
        return -1;
    for (uint32_t t = 0; t < d->ntasks; t++)
        m->sched.run[t].remaining = d->nparents[t] + ar_plain_waits(m->sched.arrays, t);
    for (uint32_t t = 0; t < d->ntasks; t++) {
        if (!master__done_before(m, t))
            continue;
        m->sched.run[t].state = TASK_DONE;
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            m->sched.run[d->children[e]].remaining--;
    }
    for (uint32_t t = 0; t < d->ntasks; t++)
        if (m->sched.run[t].state == TASK_WAITING && m->sched.run[t].remaining == 0 &&
            master_make_ready(m, t, false) < 0)
            return -1;
    return 0;
}

/* ---- dispatch ----------------------------------------------------------- */

/* The hard time limit of t in ms (its own, else the run's default; 0 =
 * none). */
static uint32_t task_time_limit_ms(const struct master *m, uint32_t t)
{
    uint32_t own =
        t < m->dag->ntasks ? m->dag->time_limit_ms[t] : master__array_of(m, t)->time_limit_ms;
    return own ? own : m->sched.demand.default_limit_ms;
}

/* Does a failure of task t's current attempt count toward -m (its last
 * try)?  The node holds its starts on such a failure (MSG_TASK_HOLD_ON_FAILURE). */
static bool master_holds_on_failure(const struct master *m, uint32_t t, uint32_t attempt)
{
    return m->cfg.max_failures && attempt >= task_tries(m, t);
}

/* The flags of attempt `attempt` of task t. */
static uint32_t master_task_flags(const struct master *m, uint32_t t, uint32_t attempt)
{
    return (master__events_per_task(&m->events) ? MSG_TASK_NOTIFY_START : 0) |
           (task_releases(m, t) ? MSG_TASK_RELEASES : 0) |
           (t >= m->dag->ntasks ? MSG_TASK_INDEXED : 0) |
           (master_holds_on_failure(m, t, attempt) ? MSG_TASK_HOLD_ON_FAILURE : 0);
}

/* Task t's TASKS item as the master sends it (forwards packed in m's
 * scratch buffer, valid until the next call).  0, or -1 with ENOMEM. */
static int master_task_item(struct master *m, uint32_t t, uint32_t attempt, struct msg_task *mt)
{
    const struct dag *d = m->dag;
    if (t < d->ntasks)
        msg_task_from_dag(d, t, mt);
    else if (msg_task_from_instance(d, t, &m->sched.item_scratch, &m->sched.item_scratch_cap, mt) <
             0)
        return -1;
    mt->attempt = attempt;
    mt->flags = master_task_flags(m, t, attempt);
    mt->time_limit_ms = task_time_limit_ms(m, t);
    if (mt->nfwd &&
        msg_pack_forwards(d, t, &m->sched.fwd_scratch, &m->sched.fwd_scratch_cap, &mt->fwd_len) < 0)
        return -1;
    mt->fwd = mt->nfwd ? m->sched.fwd_scratch : NULL;
    return 0;
}

/* Rank 0's own node: the task goes through the link, no message
 * (local_link.h).  -1 (ENOBUFS) only on a broken sizing invariant. */
static int master_hand_over(struct master *m, uint32_t t, uint32_t attempt)
{
    struct local_task lt = {.id = t,
                            .attempt = attempt,
                            .flags = master_task_flags(m, t, attempt),
                            .time_limit_ms = task_time_limit_ms(m, t)};
    if (!local_link_send_task(m->link, &lt))
        return -1;
    m->sched.link_sent = true;
    m->st.tasks_local++;
    return 0;
}

/* Node n's TASKS message goes now (nothing when it is empty). */
static void master_send_tasks(struct master *m, struct node *n)
{
    if (n->tasks.count == 0)
        return;
    m->st.task_msgs++;
    m->st.tasks_sent += n->tasks.count;
    msg_end(&n->tasks);
    if (comm_send(m->comm, n->rank, COMM_TO_AGENT, &n->tasks) < 0) {
        log_fatal("Cannot send tasks to rank %d: %s", n->rank, strerror(errno));
        master__fail(m);
    }
}

/* Add task t to node n's TASKS message; one of MSG_SPLIT_BYTES or more
 * goes at once, so that a message stays far below MSG_MAX_BYTES. */
static int master_add_task(struct master *m, struct node *n, uint32_t t, uint32_t attempt)
{
    /* an instance's name and argv are made here: a message (the null
     * executor's needs neither) */
    if (m->link && n->rank == 0 && (t < m->dag->ntasks || m->cfg.null_executor))
        return master_hand_over(m, t, attempt);
    struct msg_task mt;
    if (master_task_item(m, t, attempt, &mt) < 0)
        return -1;
    if (n->tasks.count == 0) {
        if (msg_begin(&n->tasks, MSG_TASKS) < 0)
            return -1;
        if (!n->listed)
            m->sched.listed[m->sched.nlisted++] = (int)(n - m->nodes.at);
        n->listed = true;
    }
    if (msg_add_task(&n->tasks, &mt) < 0)
        return -1;
    if (n->tasks.len >= MSG_SPLIT_BYTES)
        master_send_tasks(m, n);
    return 0;
}

/* Add task t to node i's TASKS message (placement_dispatch() then commits it on the
 * node's accounting): -1 (ENOMEM) leaves t as it was. */
static int master_assign(struct master *m, uint32_t t, int i)
{
    struct node *n = &m->nodes.at[i];
    struct task_run *run = master__run(m, t);
    run->attempts++;
    if (master_add_task(m, n, t, run->attempts) < 0) {
        run->attempts--;
        return -1;
    }
    if (run->attempts > 1)
        m->st.extra++;
    run->state = TASK_RUNNING;
    float sent_at = master__status_sent(m, t);
    if (t >= m->dag->ntasks) {
        struct live_task *l = master__live(m, t);
        l->node_of = (uint32_t)i;
        l->sent_at = sent_at;
        if (l->in_window)
            ar_instance_started(m->sched.arrays, t);
        l->in_window = false;
    } else if (m->sched.node_of)
        m->sched.node_of[t] = (uint32_t)i;
    struct placement_need need = task_need(m, t);
    monitor_node_changed(m->events.monitor, n->host, need.cpus, need.memory_mb, need.gpus);
    m->sched.inflight++;
    m->st.submitted++;
    log_trace("Scheduling task %s", task_name(m, t));
    return 0;
}

static int master_assign_cb(void *ctx, uint32_t t, int i)
{
    return master_assign(ctx, t, i);
}

/* placement_demand.look_ahead: start the cache misses of what
 * master_assign() reads and writes for task t (its task_run entry, its DAG
 * entries, and its strings for a TASKS message), a few tasks before it is
 * placed.  placement prefetches the demand columns itself.  The strings'
 * offsets are loaded here, a miss that only feeds the prefetch. */
static void master_look_ahead(void *ctx, uint32_t t)
{
    const struct master *m = ctx;
    const struct dag *d = m->dag;
    if (t >= d->ntasks)
        return; /* an instance: its state is in the live table */
    __builtin_prefetch(&m->sched.run[t], 1);
    __builtin_prefetch(&d->child_first[t]);
    if (m->link && m->nodes.n == 1)
        return; /* the hand-over reads no more (master_hand_over) */
    __builtin_prefetch(&d->priority[t]);
    __builtin_prefetch(&d->argc[t]);
    __builtin_prefetch(&d->nfwd[t]);
    __builtin_prefetch(&d->name[t]);
    __builtin_prefetch(&d->argv[t]);
    __builtin_prefetch(&d->pegasus_id[t]);
    __builtin_prefetch(d->arena + d->name[t]);
    __builtin_prefetch(d->arena + d->argv[t]);
}

static void master_send_all(struct master *m)
{
    for (int k = 0; k < m->sched.nlisted; k++) {
        struct node *n = &m->nodes.at[m->sched.listed[k]];
        master_send_tasks(m, n);
        n->listed = false;
    }
    m->sched.nlisted = 0;
    if (m->sched.link_sent)
        local_link_notify_agent(m->link);
    m->sched.link_sent = false;
}

void master__dispatch(struct master *m)
{
    if (!master__dispatching(m))
        return;
    master_take_instances(m);
    if (rq_size(m->sched.ready) == 0)
        return;
    double left = m->clock.stop_mono > 0 ? m->clock.stop_mono - pmc_mono_s() : INFINITY;
    if (placement_dispatch(m->sched.place, m->sched.ready, &m->sched.demand, left, master_assign_cb,
                           m) < 0) {
        log_fatal("Cannot dispatch tasks: %s", strerror(errno));
        master__fail(m);
    }
    master_send_all(m);
}

static int master_recall_cb(void *ctx, int i, uint32_t cpus, const struct placement_fit *fit)
{
    struct master *m = ctx;
    struct node *n = &m->nodes.at[i];
    struct msgbuf b = {0};
    struct msg_recall rc = {
        .want_cpus = cpus, .cpus = fit->cpus, .gpus = fit->gpus, .memory_mb = fit->memory_mb};
    if (msg_begin(&b, MSG_RECALL) < 0 || msg_add_recall(&b, &rc) < 0) {
        msg_free(&b);
        return -1;
    }
    msg_end(&b);
    if (comm_send(m->comm, n->rank, COMM_TO_AGENT, &b) < 0) {
        msg_free(&b);
        return -1;
    }
    m->st.recalls++;
    log_debug("Recalling up to %u CPUs of queued tasks of at most %u CPUs, %llu MB and %u GPUs "
              "from rank %d for idle CPUs elsewhere",
              cpus, fit->cpus, (unsigned long long)fit->memory_mb, fit->gpus, n->rank);
    return 0;
}

void master__recall(struct master *m)
{
    if (!master__dispatching(m) || !m->sched.place || !placement_recall_due(m->sched.place)) {
        m->sched.recall_at = 0;
        return;
    }
    double now = pmc_mono_s();
    if (m->sched.recall_at == 0)
        m->sched.recall_at = now + RECALL_AFTER_S;
    if (now < m->sched.recall_at)
        return; /* master_wait_us() wakes the master then */
    m->sched.recall_at = 0;
    if (placement_recall(m->sched.place, master_recall_cb, m) < 0)
        log_warn("Cannot recall tasks from a node (%s): its queue stays there", strerror(errno));
}

/* ---- results ------------------------------------------------------------ */

/* Plain task c lost a parent (a plain task, or a FAN_IN edge's array). */
static void master_parent_done(struct master *m, uint32_t c)
{
    if (--m->sched.run[c].remaining == 0 && m->sched.run[c].state == TASK_WAITING &&
        master_make_ready(m, c, false) < 0) {
        log_fatal("Out of memory for the ready queue");
        master__fail(m);
    }
}

static void master_fan_in_done(void *ctx, dag_task_t c)
{
    master_parent_done(ctx, c);
}

/* Task t is done: its plain children lose a parent, and the arrays'
 * counters move (their instances are handed out at the next dispatch). */
static void master_release_children(struct master *m, uint32_t t)
{
    const struct dag *d = m->dag;
    if (t < d->ntasks)
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            master_parent_done(m, d->children[e]);
    ar_task_done(m->sched.arrays, t, master_fan_in_done, m);
}

static int exit_code_of(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : status;
}

static void master_task_failed(struct master *m, uint32_t t, const struct msg_result *r,
                               bool io_failed)
{
    const struct dag *d = m->dag;
    if (r->exec_errno == ETIMEDOUT)
        log_error("Task %s exceeded its time limit of %g s", task_name(m, t),
                  task_time_limit_ms(m, t) / 1000.0);
    else if (r->exec_errno)
        log_error("Task %s could not be started: %s: %s", task_name(m, t),
                  d->arena + (t < d->ntasks ? d->argv[t] : master__array_of(m, t)->argv),
                  strerror(r->exec_errno));
    int code = io_failed ? 1 : exit_code_of(r->status);
    if (io_failed)
        log_error("Task %s failed due to collective I/O errors", task_name(m, t));
    else
        log_error("Task %s failed with exitcode %d", task_name(m, t), code);
    master__events_ended(m, t, WF_TASK_FAILURE, code);
    uint32_t tries = task_tries(m, t);
    struct task_run *run = master__run(m, t);
    if (run->attempts < tries && master__dispatching(m)) {
        log_info("Retrying task %s (attempt %u of %u)", task_name(m, t), run->attempts + 1, tries);
        if (master_make_ready(m, t, false) < 0) {
            log_fatal("Out of memory for the ready queue");
            master__fail(m);
        }
        return;
    }
    run->state = TASK_FAILED;
    m->st.failed++;
    master__status_finished(m, t, true, code);
    live_end(&m->sched, t);
    if (master__max_failures_hit(m))
        master__raise(m, PHASE_STOP);
}

/* A task the node gave back unstarted (DRAIN/ABORT/RECALL/LEAVING), or
 * taken back from a node that is gone: it is ready again, at the front of
 * its priority, and this attempt does not count. */
static void master_task_returned(struct master *m, uint32_t t)
{
    struct task_run *run = master__run(m, t);
    run->attempts--;
    if (run->attempts >= 1)
        m->st.extra--;
    m->st.submitted--;
    if (master_make_ready(m, t, true) < 0) {
        log_fatal("Out of memory for the ready queue");
        master__fail(m);
    }
}

static void master_task_succeeded(struct master *m, uint32_t t)
{
    log_debug("Task %s finished", task_name(m, t));
    master__events_ended(m, t, WF_TASK_SUCCESS, 0);
    master__run(m, t)->state = TASK_DONE;
    m->st.succeeded++;
    master__status_finished(m, t, false, 0);
    master__rescue_done(&m->rescue, t);
    live_end(&m->sched, t);
    master_release_children(m, t);
}

/* Node n held its starts on a failure that counts toward -m, which was
 * not reached: send it RESUME (mail_control() allocates: without memory
 * the node would wait for ever, so the run ends). */
static void master_resume_node(struct master *m, const struct node *n)
{
    if (n->state != NODE_WORKING)
        return; /* leaving or gone: it is sent nothing more */
    struct mail *ml = mail_control(n->rank, COMM_TO_AGENT, MSG_RESUME);
    if (!ml) {
        log_fatal("Out of memory for a RESUME to rank %d", n->rank);
        master__fail(m);
        return;
    }
    comm_send_mail(m->comm, ml);
}

/* Is task t's attempt `attempt` running on node i?  The node is known
 * only where node_of is kept (not the null executor of an MPI run). */
static bool master_running_on(const struct master *m, uint32_t t, uint32_t attempt, int i)
{
    if (t >= m->dag->ntasks) {
        const struct live_task *l = master__live(m, t);
        return l && l->run.state == TASK_RUNNING && attempt == l->run.attempts &&
               l->node_of == (uint32_t)i;
    }
    return m->sched.run[t].state == TASK_RUNNING && attempt == m->sched.run[t].attempts &&
           (!m->sched.node_of || m->sched.node_of[t] == (uint32_t)i);
}

/* Task t's attempt on node i ended (a result, or the node is gone): its
 * resources leave the node's accounting. */
static void master_task_off_node(struct master *m, int i, uint32_t t)
{
    struct placement_need need = task_need(m, t);
    placement_release(m->sched.place, i, need.cpus, need.memory_mb, need.gpus);
    monitor_node_changed(m->events.monitor, m->nodes.at[i].host, -(int64_t)need.cpus,
                         -(int64_t)need.memory_mb, -(int64_t)need.gpus);
    m->sched.inflight--;
}

/* Task t's attempt on node i (off the node already) goes back to the
 * ready queue uncharged, counted and remembered as node i's requeued
 * task (its block in the node's stdout is then left out of the merge). */
static void master_requeue_from(struct master *m, int i, uint32_t t)
{
    struct node *n = &m->nodes.at[i];
    master_task_returned(m, t);
    master__events_requeued(m, t);
    log_debug("Task %s requeued from rank %d (attempt %u not charged)", task_name(m, t), n->rank,
              master__run(m, t)->attempts + 1);
    if (n->requeued == n->requeued_cap) {
        uint32_t cap = n->requeued_cap ? 2 * n->requeued_cap : 16;
        uint32_t *ids = realloc(n->requeued_ids, sizeof *ids * cap);
        if (ids) {
            n->requeued_ids = ids;
            n->requeued_cap = cap;
        }
    }
    if (n->requeued < n->requeued_cap)
        n->requeued_ids[n->requeued] = t;
    else
        n->requeued_unknown = true;
    n->requeued++;
    m->nodes.requeued++;
}

/* Apply one result from node n; -1 if it does not match a task running
 * there. */
static int master_apply_result(struct master *m, struct node *n, const struct msg_result *r)
{
    uint32_t t = r->id;
    int i = (int)(n - m->nodes.at);
    if (!master_running_on(m, t, r->attempt, i)) {
        log_error("Rank %d sent a result for task id %u attempt %u that is not running there",
                  n->rank, t, r->attempt);
        return -1;
    }
    master_task_off_node(m, i, t);
    if (r->exec_errno == ECANCELED) {
        master_task_returned(m, t);
        return 0;
    }
    bool failed = r->status != 0 || r->exec_errno != 0;
    if (failed && n->state == NODE_LEAVING) { /* killed by its allocation's end, likely */
        log_warn("Task %s failed on rank %d, which is leaving: it runs again elsewhere",
                 task_name(m, t), n->rank);
        master_requeue_from(m, i, t);
        return 0;
    }
    master__events_executed(m, t, r->start);
    m->st.finished_attempts++;
    m->st.runtime += r->duration;
    if (m->st.first_start == 0 || r->start < m->st.first_start)
        m->st.first_start = r->start;
    if (r->start + r->duration > m->st.last_end)
        m->st.last_end = r->start + r->duration;
    if (failed) {
        master_task_failed(m, t, r, false);
        if (master_holds_on_failure(m, t, r->attempt) && master__dispatching(m))
            master_resume_node(m, n); /* below -m: it may start tasks again */
    } else if (r->fwd_len > 0 && master__forward_write(m, t, r) < 0)
        master_task_failed(m, t, r, true);
    else
        master_task_succeeded(m, t);
    return 0;
}

int master__node_index(const struct master *m, int rank, const char *what)
{
    int idx = master__node_of_rank(m, rank);
    if (idx < 0)
        log_error("%s from rank %d, which has no node agent", what, rank);
    return idx;
}

/* A STARTED notice (asked for with MSG_TASK_NOTIFY_START when the event
 * logs want tasks) from node i: EXECUTE with the task's real start time.
 * -1 when the task is not running there. */
static int master_apply_started(struct master *m, int i, const struct msg_started *st)
{
    uint32_t t = st->id;
    if (!master_running_on(m, t, st->attempt, i)) {
        log_error("Rank %d says task id %u attempt %u started, but it is not running there",
                  m->nodes.at[i].rank, t, st->attempt);
        return -1;
    }
    master__events_executed(m, t, st->start);
    return 0;
}

/* The node of a mail's sender: its index, -1 (logged) when it has none,
 * -2 when its link is gone (what it sent since is ignored: its tasks went
 * back to the ready queue). */
static int master_sender(const struct master *m, const struct mail *ml, const char *what)
{
    int idx = master__node_index(m, ml->peer, what);
    if (idx >= 0 && master__node_gone(m, idx)) {
        log_debug("Ignoring %s from rank %d, whose link is gone", what, ml->peer);
        return -2;
    }
    return idx;
}

int master__handle_recall(struct master *m, struct mail *ml, struct msg_reader *r)
{
    int idx = master_sender(m, ml, "RECALL");
    if (idx < 0)
        return idx == -2 ? 0 : -1;
    struct msg_recall rc;
    struct pmc_error err = {{0}};
    if (msg_next_recall(r, &rc, &err) != 1) {
        log_error("Bad RECALL from rank %d: %s", ml->peer, err.text);
        return -1;
    }
    placement_recall_answered(m->sched.place, idx, rc.given);
    m->st.recalled += rc.given;
    return 0;
}

int master__handle_started(struct master *m, struct mail *ml, struct msg_reader *r)
{
    int idx = master_sender(m, ml, "STARTED");
    if (idx < 0)
        return idx == -2 ? 0 : -1;
    struct msg_started st;
    struct pmc_error err;
    int rc;
    while ((rc = msg_next_started(r, &st, &err)) == 1)
        if (master_apply_started(m, idx, &st) < 0)
            return -1;
    if (rc < 0)
        log_error("Bad STARTED from rank %d: %s", ml->peer, err.text);
    return rc;
}

int master__handle_results(struct master *m, struct mail *ml, struct msg_reader *r)
{
    int idx = master_sender(m, ml, "RESULTS");
    if (idx < 0)
        return idx == -2 ? 0 : -1;
    m->st.result_msgs++;
    struct msg_result res;
    struct pmc_error err;
    int rc;
    while ((rc = msg_next_result(r, &res, &err)) == 1) {
        m->st.results_recv++;
        if (master_apply_result(m, &m->nodes.at[idx], &res) < 0)
            return -1;
    }
    if (rc < 0)
        log_error("Bad RESULTS from rank %d: %s", ml->peer, err.text);
    return rc;
}

/* One event of the local agent (local_link.h), as its STARTED or RESULTS
 * item would be applied.  -1 when it does not match a running task. */
static int master_apply_event(struct master *m, int idx, const struct local_event *ev)
{
    if (ev->kind == LOCAL_STARTED)
        return master_apply_started(m, idx, &ev->started);
    m->st.results_local++;
    return master_apply_result(m, &m->nodes.at[idx], &ev->result);
}

void master__drain_local(struct master *m)
{
    if (!m->link || !m->nodes.at)
        return;
    struct local_event ev;
    while (local_link_take_event(m->link, &ev)) {
        int idx = master__node_index(m, 0, "An event on the local link");
        if (idx < 0 || master_apply_event(m, idx, &ev) < 0)
            master__fail(m);
        local_event_free(&ev);
    }
}

/* ---- life cycle ------------------------------------------------------------ */

int master__sched_create(struct master *m)
{
    struct master_sched *s = &m->sched;
    const struct dag *d = m->dag;
    uint32_t n = d->ntasks;
    s->run = calloc(n ? n : 1, sizeof *s->run); /* TASK_WAITING (0), no attempt */
    s->ready = rq_create_sized(d->priority, n); /* pushes of plain tasks never allocate */
    size_t name_max = 0;
    for (uint32_t a = 0; a < d->narrays; a++) {
        size_t len = strlen(dag_array_name(d, a)) + 12; /* "[" 9 digits "]" NUL */
        name_max = len > name_max ? len : name_max;
    }
    s->name_cap = name_max;
    for (int k = 0; k < 4 && name_max; k++)
        if (!(s->names[k] = malloc(name_max)))
            return -1;
    /* the node of each attempt, for its result, for output found lost at
     * the end, and for a joined node's loss; the null executor of an MPI
     * run records nothing */
    bool keep = !m->cfg.null_executor || m->cfg.joined;
    if (keep)
        s->node_of = malloc(sizeof *s->node_of * (n ? n : 1));
    return s->run && s->ready && (s->node_of || !keep) ? 0 : -1;
}

int master__sched_reserve(struct master *m, int nodes)
{
    struct master_sched *s = &m->sched;
    return placement_grow(s->place, nodes) < 0 || pmc_grow((void **)&s->listed, &s->listed_cap,
                                                           (size_t)nodes, sizeof *s->listed) < 0
               ? -1
               : 0;
}

int master__sched_prepare(struct master *m)
{
    struct master_sched *s = &m->sched;
    s->place = placement_create(m->cfg.nranks);
    if (!s->place || master__sched_reserve(m, m->cfg.nranks) < 0) {
        placement_destroy(s->place);
        free(s->listed);
        s->place = NULL;
        s->listed = NULL;
        s->listed_cap = 0;
        return -1;
    }
    s->demand = (struct placement_demand){.cpus = m->dag->cpus,
                                          .memory_mb = m->dag->memory_mb,
                                          .gpus = m->dag->gpus,
                                          .time_limit_ms = m->dag->time_limit_ms,
                                          /* rounded up, as the DAG's --time-limit:
                                           * 0.0004 s is 1 ms, not 0 (none) */
                                          .default_limit_ms =
                                              (uint32_t)ceil(m->cfg.task_time_limit * 1000.0),
                                          .look_ahead = master_look_ahead,
                                          .ncolumns = m->dag->ntasks,
                                          .instance = master_instance_need,
                                          .instance_ctx = m};
    return 0;
}

void master__sched_add_node(struct master *m, const struct msg_hello *h)
{
    /* room made: cfg.nranks, or master__sched_reserve() for a joined node */
    (void)placement_add_node(m->sched.place, h->cpus, h->memory_mb, h->gpus);
}

void master__sched_close_node(struct master *m, int i)
{
    placement_close_node(m->sched.place, i);
}

uint32_t master__sched_take_back(struct master *m, int i)
{
    uint32_t n = 0;
    if (!m->sched.node_of)
        return 0; /* not kept: an MPI run's null executor, whose nodes never go */
    /* from the end, each pushed to the front: the lowest id ends first */
    for (uint32_t t = m->dag->ntasks; t-- > 0 && placement_node_at(m->sched.place, i)->tasks > 0;) {
        if (!master_running_on(m, t, m->sched.run[t].attempts, i))
            continue;
        master_task_off_node(m, i, t);
        master_requeue_from(m, i, t);
        n++;
    }
    /* then the live instances there (requeueing moves none of them) */
    for (uint32_t k = 0; k < m->sched.live_cap; k++) {
        const struct live_task *l = &m->sched.live[k];
        if (l->id == UINT32_MAX || !master_running_on(m, l->id, l->run.attempts, i))
            continue;
        master_task_off_node(m, i, l->id);
        master_requeue_from(m, i, l->id);
        n++;
    }
    return n;
}

int master__check_capable(struct master *m)
{
    const struct dag *d = m->dag;
    struct pmc_error err;
    for (uint32_t t = 0; t < d->ntasks; t++) {
        if (!master__done_before(m, t) &&
            placement_check_capable(m->sched.place, d->cpus[t], d->memory_mb[t], d->gpus[t],
                                    task_name(m, t), &err) < 0) {
            log_fatal("FATAL ERROR: %s", err.text);
            return -1;
        }
    }
    for (uint32_t a = 0; a < d->narrays; a++) {
        const struct dag_array *ar = &d->arrays[a];
        char name[64];
        snprintf(name, sizeof name, "%.40s[*]", dag_array_name(d, a));
        if (placement_check_capable(m->sched.place, ar->cpus, ar->memory_mb, ar->gpus, name, &err) <
            0) {
            log_fatal("FATAL ERROR: %s", err.text);
            return -1;
        }
    }
    return 0;
}

double master__recall_at(const struct master *m)
{
    return m->sched.recall_at;
}

void master__sched_free(struct master *m)
{
    struct master_sched *s = &m->sched;
    placement_destroy(s->place);
    free(s->listed);
    rq_destroy(s->ready);
    free(s->run);
    free(s->node_of);
    free(s->fwd_scratch);
    ar_destroy(s->arrays);
    id_map_free(&s->live_of);
    free(s->live);
    free(s->live_free);
    free(s->item_scratch);
    free(s->inst_retried);
    for (int k = 0; k < 4; k++)
        free(s->names[k]);
    *s = (struct master_sched){0};
}
