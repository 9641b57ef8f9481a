/* sim.c - the discrete-event simulation of sim.h, and the comm.h transport
 * that feeds it.
 *
 * State, all owned by the one simulating thread:
 *   - the event heap: (t, seq)-ordered, seq making equal times FIFO and the
 *     run deterministic apart from the measured CPU times;
 *   - per virtual node: its node_queue, free CPUs/memory, running count and
 *     the RESULTS message being built (first_result = when its oldest
 *     result was added; timer_at = when the soonest pending FLUSH event
 *     looks again, INFINITY when none);
 *   - the outbox of struct comm: mails the master sent during the current
 *     step, turned into delivery events once the step returned;
 *   - the measures: per-bin master CPU and message counts (bins of
 *     window / BINS_PER_WINDOW virtual seconds) for the sliding windows.
 * Invariant: every task the master sent is, at any instant, in exactly one
 * place: a TO_NODE event's mail, a node queue, a TASK_DONE event, a node's
 * RESULTS being built, or a TO_MASTER event's mail.  When the master waits
 * and the heap is empty, the run has stalled (reported, never hangs).
 *
 * comm_send() is called inside the timed master_step(), so it does what the
 * real one does on the master's thread (wrap the buffer in a mail, queue
 * it) and nothing more.  During master_end() there is no event loop: a
 * SHUTDOWN is answered at once with the node's BYE.
 */
#include "bench/sim/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench/sim/simdag.h"
#include "engine/transport/comm.h"
#include "engine/transport/mailbox.h"
#include "engine/master/master.h"
#include "io/clock.h"
#include "io/grow.h"
#include "io/msg.h"
#include "sched/node_queue.h"
#include "sched/result_batch.h"

#define BINS_PER_WINDOW 10 /* sliding-window resolution */
#define EPOCH_BASE 1.7e9   /* virtual time 0 as a Unix time, for RESULTS */

enum ev_kind { EV_TO_NODE, EV_TO_MASTER, EV_TASK_DONE, EV_FLUSH, EV_MASTER_WAKE };

struct ev_task {
    uint32_t id, attempt, cpus, memory_mb;
    double dur;
    bool releases; /* MSG_TASK_RELEASES: the task has children */
};

struct event {
    double t;
    uint64_t seq;
    uint32_t kind, node;
    union {
        struct mail *mail; /* EV_TO_NODE, EV_TO_MASTER */
        struct ev_task task;
    } u;
};

/* A received TASKS mail, freed when its last queued task has started. */
struct batch {
    struct mail *mail;
    uint32_t refs;
};

/* A node queue's item (sched/node_queue.h), as the real agent keeps it. */
struct node_task {
    struct msg_task t;
    struct batch *batch;
};

struct vnode {
    struct node_queue queue;
    struct msgbuf results;
    double first_result;
    uint64_t memory_free;
    uint32_t cpus_free, running;
    double timer_at; /* the soonest pending FLUSH event's time, or INFINITY */
    bool touched, shutting, draining, said_bye;
    bool results_release, low_water_sent; /* agent.c's results_release, low_water_sent */
    bool send_now;                        /* agent.c's send_now: tasks given back at a RECALL */
    bool recall_answer;                   /* agent.c's recall_answer, recall_given */
    uint32_t recall_given;
};

struct bins {
    double *cpu;
    uint32_t *to_nodes, *to_master;
    uint32_t *busy; /* most CPUs running at once in the bin */
    size_t n, cap;
};

struct sim {
    struct sim_config cfg;
    struct master *m;
    struct mailbox *box;
    struct comm *comm;
    struct event *heap;
    size_t nheap, heap_cap;
    uint64_t seq;
    struct vnode *nodes;
    uint32_t *touched;
    size_t ntouched;
    double now, master_free;
    uint64_t busy_cpus, busy_prev; /* running over all nodes: now, after the last instant */
    size_t busy_bin;               /* bin of the last instant */
    bool master_pending, wake_pending, ending, failed;
    double binw;
    struct bins bins;
    struct sim_report rep;
};

struct comm {
    struct sim *sim;
    struct mail **out;
    size_t nout, cap;
    struct comm_stats st;
};

/* ---- time and measures -------------------------------------------------- */

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* What a pair of cpu_now() calls costs by itself (the least of many). */
static double clock_cost(void)
{
    double best = 1.0;
    for (int i = 0; i < 2000; i++) {
        double a = cpu_now(), b = cpu_now();
        if (b - a < best)
            best = b - a;
    }
    return best;
}

static int bins_reach(struct bins *b, size_t i)
{
    if (i < b->cap) {
        if (i >= b->n)
            b->n = i + 1;
        return 0;
    }
    size_t cap = b->cap ? b->cap : 1024;
    while (cap <= i)
        cap *= 2;
    double *c = realloc(b->cpu, cap * sizeof *c);
    if (c)
        b->cpu = c;
    uint32_t *tn = realloc(b->to_nodes, cap * sizeof *tn);
    if (tn)
        b->to_nodes = tn;
    uint32_t *tm = realloc(b->to_master, cap * sizeof *tm);
    if (tm)
        b->to_master = tm;
    uint32_t *bu = realloc(b->busy, cap * sizeof *bu);
    if (bu)
        b->busy = bu;
    if (!c || !tn || !tm || !bu)
        return -1;
    memset(c + b->cap, 0, (cap - b->cap) * sizeof *c);
    memset(tn + b->cap, 0, (cap - b->cap) * sizeof *tn);
    memset(tm + b->cap, 0, (cap - b->cap) * sizeof *tm);
    memset(bu + b->cap, 0, (cap - b->cap) * sizeof *bu);
    b->cap = cap;
    b->n = i + 1;
    return 0;
}

static size_t sim_bin(struct sim *s, double t)
{
    size_t i = (size_t)(t / s->binw);
    if (bins_reach(&s->bins, i) < 0) {
        s->failed = true;
        return 0;
    }
    return i;
}

/* Master CPU spent over [t, t + cpu] (charged) or at t (ideal). */
static void sim_bin_cpu(struct sim *s, double t, double cpu)
{
    if (!s->cfg.charge_master) {
        s->bins.cpu[sim_bin(s, t)] += cpu;
        return;
    }
    double end = t + cpu;
    while (cpu > 0) {
        size_t i = sim_bin(s, t);
        double edge = (double)(i + 1) * s->binw;
        double part = (end < edge ? end : edge) - t;
        if (part <= 0) /* rounding at a bin edge */
            part = cpu < 1e-12 ? cpu : 1e-12;
        s->bins.cpu[i] += part;
        cpu -= part;
        t += part;
    }
}

/* The busiest window of BINS_PER_WINDOW bins: its sum, *at its start. */
static double window_max_d(const double *v, size_t n, size_t *at)
{
    double sum = 0, best = 0;
    *at = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        if (i >= BINS_PER_WINDOW)
            sum -= v[i - BINS_PER_WINDOW];
        if (sum > best) {
            best = sum;
            *at = i + 1 >= BINS_PER_WINDOW ? i + 1 - BINS_PER_WINDOW : 0;
        }
    }
    return best;
}

static double window_max_u(const uint32_t *v, size_t n)
{
    uint64_t sum = 0, best = 0;
    for (size_t i = 0; i < n; i++) {
        sum += v[i];
        if (i >= BINS_PER_WINDOW)
            sum -= v[i - BINS_PER_WINDOW];
        if (sum > best)
            best = sum;
    }
    return (double)best;
}

/* ---- the event heap ----------------------------------------------------- */

static bool ev_before(const struct event *a, const struct event *b)
{
    return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static struct event *sim_push(struct sim *s, double t, uint32_t kind, uint32_t node)
{
    if (pmc_grow_from((void **)&s->heap, &s->heap_cap, s->nheap + 1, sizeof *s->heap, 4096) < 0) {
        s->failed = true;
        return NULL;
    }
    struct event e = {.t = t, .seq = s->seq++, .kind = kind, .node = node};
    size_t i = s->nheap++;
    while (i > 0 && ev_before(&e, &s->heap[(i - 1) / 2])) {
        s->heap[i] = s->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    s->heap[i] = e;
    return &s->heap[i];
}

static void sim_push_mail(struct sim *s, double t, uint32_t kind, uint32_t node, struct mail *m)
{
    struct event *e = sim_push(s, t, kind, node);
    if (e)
        e->u.mail = m;
    else
        mail_free(m);
}

static struct event sim_pop(struct sim *s)
{
    struct event top = s->heap[0], last = s->heap[--s->nheap];
    size_t i = 0, n = s->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && ev_before(&s->heap[c + 1], &s->heap[c]))
            c++;
        if (!ev_before(&s->heap[c], &last))
            break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (n > 0)
        s->heap[i] = last;
    return top;
}

/* ---- messages ----------------------------------------------------------- */

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Kind and item count of an encoded message (msg.h header). */
static uint32_t mail_kind(const struct mail *m)
{
    return m->len >= MSG_HEADER_SIZE ? m->data[5] : 0;
}

static uint32_t mail_count(const struct mail *m)
{
    return m->len >= MSG_HEADER_SIZE ? get_u32(m->data + 12) : 0;
}

/* Wrap the finished message b of node i into a mail for the master. */
static struct mail *sim_node_mail(struct sim *s, uint32_t i, struct msgbuf *b)
{
    msg_end(b);
    struct mail *m = mail_new((int)i, COMM_TO_MASTER, b->data, b->len);
    b->data = NULL;
    b->len = b->cap = 0;
    b->count = 0;
    if (!m)
        s->failed = true;
    return m;
}

static void sim_node_send(struct sim *s, uint32_t i, struct msgbuf *b)
{
    struct mail *m = sim_node_mail(s, i, b);
    if (m)
        sim_push_mail(s, s->now + s->cfg.latency, EV_TO_MASTER, i, m);
}

static void sim_node_send_empty(struct sim *s, uint32_t i, enum msg_kind kind)
{
    struct msgbuf b = {0};
    if (msg_begin(&b, kind) < 0) {
        s->failed = true;
        return;
    }
    sim_node_send(s, i, &b);
}

static void sim_node_answer_recall(struct sim *s, uint32_t i)
{
    struct msgbuf b = {0};
    struct msg_recall rc = {.given = s->nodes[i].recall_given};
    if (msg_begin(&b, MSG_RECALL) < 0 || msg_add_recall(&b, &rc) < 0) {
        msg_free(&b);
        s->failed = true;
        return;
    }
    sim_node_send(s, i, &b);
    s->nodes[i].recall_answer = false;
}

/* ---- virtual nodes ------------------------------------------------------ */

static void sim_touch(struct sim *s, uint32_t i)
{
    if (!s->nodes[i].touched) {
        s->nodes[i].touched = true;
        s->touched[s->ntouched++] = i;
    }
}

static void sim_add_result(struct sim *s, uint32_t i, const struct ev_task *t, int exec_errno)
{
    struct vnode *n = &s->nodes[i];
    struct msg_result r = {.id = t->id,
                           .attempt = t->attempt,
                           .status = 0,
                           .exec_errno = exec_errno,
                           .start = EPOCH_BASE + s->now - t->dur,
                           .duration = t->dur};
    if (n->results.count == 0) {
        if (msg_begin(&n->results, MSG_RESULTS) < 0)
            goto oom;
        n->first_result = s->now;
    }
    n->results_release |= t->releases;
    if (msg_add_result(&n->results, &r) == 0)
        return;
oom:
    s->failed = true;
}

static void batch_unref(struct batch *b)
{
    if (--b->refs == 0) {
        mail_free(b->mail);
        free(b);
    }
}

static void sim_cancel(struct sim *s, uint32_t i, const struct msg_task *t)
{
    struct ev_task et = {.id = t->id, .attempt = t->attempt};
    sim_add_result(s, i, &et, ECANCELED);
}

static void sim_cancel_queued(struct sim *s, uint32_t i)
{
    struct node_task nt;
    while (nq_pop(&s->nodes[i].queue, &nt) == 1) {
        sim_cancel(s, i, &nt.t);
        batch_unref(nt.batch);
    }
}

static void sim_node_tasks(struct sim *s, uint32_t i, struct mail *m, struct msg_reader *r)
{
    struct vnode *n = &s->nodes[i];
    struct batch *b = malloc(sizeof *b);
    struct msg_task t;
    struct pmc_error err;
    int rc;
    if (!b) {
        mail_free(m);
        s->failed = true;
        return;
    }
    b->mail = m;
    b->refs = 1;
    while ((rc = msg_next_task(r, &t, &err)) == 1) {
        if (n->draining)
            sim_cancel(s, i, &t);
        else if (nq_push(&n->queue, t.cpus, t.memory_mb, t.gpus, t.priority,
                         &(struct node_task){.t = t, .batch = b}) == 0)
            b->refs++;
        else
            s->failed = true;
    }
    if (rc < 0) {
        fprintf(stderr, "pmc-sim: node %u: bad TASKS: %s\n", i, err.text);
        s->failed = true;
    }
    batch_unref(b);
}

/* RECALL: give back up to the asked number of queued tasks that fit, from
 * the end of the queue, at once, and answer with how many after their
 * results (engine/node/agent.c's agent_recall()). */
static void sim_node_recall(struct sim *s, uint32_t i, struct msg_reader *r)
{
    struct vnode *n = &s->nodes[i];
    struct msg_recall rc;
    struct pmc_error err = {{0}};
    if (msg_next_recall(r, &rc, &err) != 1) {
        fprintf(stderr, "pmc-sim: node %u: bad RECALL: %s\n", i, err.text);
        s->failed = true;
        return;
    }
    struct node_task nt;
    uint32_t given = 0, cpus = 0;
    while (cpus < rc.want_cpus && !n->draining &&
           nq_pop_back_fit(&n->queue, rc.cpus < rc.want_cpus - cpus ? rc.cpus : rc.want_cpus - cpus,
                           rc.memory_mb, rc.gpus, &nt) == 1) {
        cpus += nt.t.cpus;
        sim_cancel(s, i, &nt.t);
        batch_unref(nt.batch);
        given++;
    }
    n->recall_given = given;
    n->recall_answer = true;
    n->send_now = given > 0;
    if (given == 0)
        sim_node_answer_recall(s, i); /* at once, as the agent */
}

/* A message from the master reaches node i. */
static void sim_node_receive(struct sim *s, uint32_t i, struct mail *m)
{
    struct vnode *n = &s->nodes[i];
    struct msg_reader r;
    struct pmc_error err;
    sim_touch(s, i);
    if (msg_open(&r, m->data, m->len, &err) < 0) {
        fprintf(stderr, "pmc-sim: node %u: bad message: %s\n", i, err.text);
        s->failed = true;
    } else if (r.kind == MSG_TASKS) {
        sim_node_tasks(s, i, m, &r);
        return;
    } else if (r.kind == MSG_SHUTDOWN) {
        n->shutting = true;
    } else if (r.kind == MSG_DRAIN || r.kind == MSG_ABORT) {
        /* running tasks finish (an abort's kill is not modelled) */
        n->draining = true;
        n->shutting = n->shutting || r.kind == MSG_ABORT;
        sim_cancel_queued(s, i);
    } else if (r.kind == MSG_RECALL) {
        sim_node_recall(s, i, &r);
    } /* RESUME needs nothing: simulated tasks never fail, so no node holds */
    mail_free(m);
}

static void sim_task_done(struct sim *s, uint32_t i, const struct ev_task *t)
{
    struct vnode *n = &s->nodes[i];
    n->cpus_free += t->cpus;
    n->memory_free += t->memory_mb;
    n->running--;
    s->busy_cpus -= t->cpus;
    sim_add_result(s, i, t, 0);
    sim_touch(s, i);
}

/* Start what fits (sched/node_queue.h's deferral rule). */
static void sim_node_pump(struct sim *s, uint32_t i)
{
    struct vnode *n = &s->nodes[i];
    struct node_task nt;
    while (!n->draining &&
           nq_take_fit(&n->queue, n->cpus_free, n->memory_free, UINT32_MAX, &nt) == 1) {
        double dur = simdag_task_duration(nt.t.argv, nt.t.argc) * s->cfg.time_scale;
        struct event *e = sim_push(s, s->now + dur, EV_TASK_DONE, i);
        if (e)
            e->u.task = (struct ev_task){nt.t.id,   nt.t.attempt,
                                         nt.t.cpus, nt.t.memory_mb,
                                         dur,       (nt.t.flags & MSG_TASK_RELEASES) != 0};
        n->cpus_free -= nt.t.cpus;
        n->memory_free -= nt.t.memory_mb;
        n->running++;
        s->busy_cpus += nt.t.cpus;
        batch_unref(nt.batch);
    }
}

/* The results batching rule (sched/result_batch.h, as engine/node/agent.c's
 * agent_result_wait_ms() applies it) in virtual time: a node has no start
 * notices and no staged tasks, and adds each result at its task's end, so
 * its clock (first_result) is the oldest waiting result's task end.  A
 * FLUSH event looks again when the rule says; a sooner look replaces a
 * pending later one (the agent's epoll timeout follows the rule each
 * pass), the later one then only looks again. */
static void sim_node_flush(struct sim *s, uint32_t i)
{
    struct vnode *n = &s->nodes[i];
    uint64_t load = n->running + nq_len(&n->queue);
    bool low = result_batch_low_water(load, s->cfg.cores);
    if (!low)
        n->low_water_sent = false;
    struct result_batch_state st = {.results = n->results.count,
                                    .releases = n->results_release,
                                    .waiting = nq_len(&n->queue),
                                    .load = load,
                                    .cpus = s->cfg.cores,
                                    .ending = n->shutting || n->draining,
                                    .send_now = n->send_now,
                                    .low_water_sent = n->low_water_sent,
                                    .waited = s->now - n->first_result};
    double wait = result_batch_wait(&s->cfg.batching, &st);
    /* due when the wait would not move the clock: 1e-12 s, or the float
     * rounding of a late virtual time (now + wait == now) */
    if (wait >= 0 && s->now + wait <= s->now + 1e-12) {
        sim_node_send(s, i, &n->results);
        n->results_release = false;
        n->send_now = false;
        if (n->recall_answer)
            sim_node_answer_recall(s, i);
        n->low_water_sent |= low && s->cfg.batching.low_water;
    } else if (wait > 0 && s->now + wait < n->timer_at) {
        n->timer_at = s->now + wait;
        if (!sim_push(s, n->timer_at, EV_FLUSH, i))
            n->timer_at = INFINITY;
    }
    if (n->shutting && !n->said_bye && n->running == 0 && nq_len(&n->queue) == 0) {
        sim_node_send_empty(s, i, MSG_BYE);
        n->said_bye = true;
    }
}

static void sim_settle_nodes(struct sim *s)
{
    for (size_t k = 0; k < s->ntouched; k++) {
        uint32_t i = s->touched[k];
        s->nodes[i].touched = false;
        sim_node_pump(s, i);
        sim_node_flush(s, i);
    }
    s->ntouched = 0;
}

/* ---- the master --------------------------------------------------------- */

static void sim_deliver_to_master(struct sim *s, struct mail *m)
{
    uint32_t kind = mail_kind(m);
    s->rep.mails_to_master++;
    s->rep.bytes_to_master += m->len;
    s->comm->st.msgs_recv++;
    s->comm->st.bytes_recv += m->len;
    if (kind == MSG_RESULTS) {
        s->rep.result_msgs++;
        s->rep.results += mail_count(m);
        s->bins.to_master[sim_bin(s, s->now)]++;
    }
    mailbox_push(s->box, m);
    s->master_pending = true;
}

/* Turn what the master sent during its step into deliveries at t. */
static void sim_route_outbox(struct sim *s, double t)
{
    struct comm *c = s->comm;
    for (size_t k = 0; k < c->nout; k++) {
        struct mail *m = c->out[k];
        if (mail_kind(m) == MSG_TASKS) {
            s->rep.task_msgs++;
            s->rep.tasks_sent += mail_count(m);
            if (s->rep.steps > 1) /* the initial fill stays out of the windows */
                s->bins.to_nodes[sim_bin(s, t)]++;
        }
        s->rep.bytes_to_nodes += m->len;
        if (m->peer < 0 || m->peer >= s->cfg.nodes) {
            fprintf(stderr, "pmc-sim: the master sent to rank %d\n", m->peer);
            mail_free(m);
            s->failed = true;
            continue;
        }
        sim_push_mail(s, t + s->cfg.latency, EV_TO_NODE, (uint32_t)m->peer, m);
    }
    c->nout = 0;
}

static bool sim_master_step(struct sim *s)
{
    double a = cpu_now();
    bool done = master_step(s->m);
    double cpu = cpu_now() - a - s->rep.clock_cost;
    if (cpu < 0)
        cpu = 0;
    if (s->rep.steps++ == 0)
        s->rep.cpu_first_step = cpu;
    else
        sim_bin_cpu(s, s->now, cpu);
    s->rep.cpu_steps += cpu;
    if (cpu > s->rep.cpu_step_max)
        s->rep.cpu_step_max = cpu;
    double out = s->now + (s->cfg.charge_master ? cpu : 0);
    s->master_free = out;
    s->master_pending = false;
    sim_route_outbox(s, out);
    return done;
}

/* ---- the event loop ----------------------------------------------------- */

static void sim_apply(struct sim *s, struct event *e)
{
    switch (e->kind) {
    case EV_TO_NODE:
        sim_node_receive(s, e->node, e->u.mail);
        break;
    case EV_TO_MASTER:
        sim_deliver_to_master(s, e->u.mail);
        break;
    case EV_TASK_DONE:
        sim_task_done(s, e->node, &e->u.task);
        break;
    case EV_FLUSH:
        if (e->t >= s->nodes[e->node].timer_at)
            s->nodes[e->node].timer_at = INFINITY; /* else a later look, replaced */
        sim_touch(s, e->node);
        break;
    case EV_MASTER_WAKE:
        s->wake_pending = false;
        break;
    }
}

/* Record the CPUs running after this instant (and, unchanged, in the bins
 * since the last one). */
static void sim_note_busy(struct sim *s)
{
    size_t b = sim_bin(s, s->now);
    for (size_t i = s->busy_bin + 1; i < b; i++)
        s->bins.busy[i] = (uint32_t)s->busy_prev;
    if (s->busy_cpus > s->bins.busy[b])
        s->bins.busy[b] = (uint32_t)s->busy_cpus;
    s->busy_bin = b;
    s->busy_prev = s->busy_cpus;
}

/* Apply every event of the next instant; then the nodes, then the master
 * (when stepping).  Returns true when the master said the workflow is
 * over. */
static bool sim_instant(struct sim *s, bool stepping)
{
    s->now = s->heap[0].t;
    while (s->nheap > 0 && s->heap[0].t == s->now) {
        struct event e = sim_pop(s);
        sim_apply(s, &e);
    }
    sim_settle_nodes(s);
    sim_note_busy(s);
    if (!stepping || !s->master_pending)
        return false;
    if (s->now >= s->master_free)
        return sim_master_step(s);
    if (!s->wake_pending)
        s->wake_pending = sim_push(s, s->master_free, EV_MASTER_WAKE, 0) != NULL;
    return false;
}

static int sim_loop(struct sim *s, struct pmc_error *err)
{
    s->now = 0;
    bool done = sim_master_step(s);
    while (!done && !s->failed) {
        if (s->nheap == 0)
            return pmc_errorf(err, "stalled at %.6f s: the master waits, nothing is in flight",
                              s->now);
        done = sim_instant(s, true);
    }
    if (s->failed)
        return pmc_errorf(err, "out of memory or a bad message at %.6f s", s->now);
    s->rep.makespan = s->now;
    while (s->nheap > 0) /* e.g. BYEs after an abort; the master reads them at the end */
        sim_instant(s, false);
    return 0;
}

/* ---- comm.h, the simulator's transport ---------------------------------- */

struct comm *comm_create(int rank, int size, struct mailbox *master_box, struct mailbox *agent_box,
                         struct comm_doorbells *bells, struct pmc_error *err)
{
    if (bells) /* one process: no peer to ring; taken as comm.h says */
        doorbell_close(&bells->bell);
    struct comm *c = calloc(1, sizeof *c);
    if (!c)
        pmc_errorf(err, "out of memory");
    return c;
}

static int sim_comm_queue(struct comm *c, struct mail *m);

/* The SHUTDOWN of master_end(): the idle node answers BYE at once. */
static void sim_answer_shutdown(struct sim *s, int dst)
{
    struct vnode *n = &s->nodes[dst];
    if (n->said_bye)
        return;
    n->said_bye = true;
    struct msgbuf b = {0};
    if (msg_begin(&b, MSG_BYE) < 0) {
        s->failed = true;
        return;
    }
    struct mail *m = sim_node_mail(s, (uint32_t)dst, &b);
    if (m)
        sim_deliver_to_master(s, m);
}

int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b)
{
    struct mail *m = mail_from_msgbuf(dst, box, b);
    if (!m)
        return -1;
    return sim_comm_queue(c, m);
}

/* The master's ABORT, DRAIN and SHUTDOWN, built at start-up.  The
 * simulator's outbox may need to grow: when it cannot, the run is marked
 * failed (a real comm never fails here). */
void comm_send_mail(struct comm *c, struct mail *m)
{
    if (sim_comm_queue(c, m) < 0)
        c->sim->failed = true;
}

/* Queue m (taken) for the event loop, as comm_send() does.  0, or -1 with
 * ENOMEM. */
static int sim_comm_queue(struct comm *c, struct mail *m)
{
    int dst = m->peer;
    c->st.msgs_sent++;
    c->st.bytes_sent += m->len;
    struct sim *s = c->sim;
    if (s->ending) {
        if (mail_kind(m) == MSG_SHUTDOWN && dst >= 0 && dst < s->cfg.nodes)
            sim_answer_shutdown(s, dst);
        mail_free(m);
        return 0;
    }
    if (pmc_grow_from((void **)&c->out, &c->cap, c->nout + 1, sizeof *c->out, 1024) < 0) {
        mail_free(m);
        return -1; /* errno ENOMEM */
    }
    c->out[c->nout++] = m;
    return 0;
}

void comm_get_stats(const struct comm *c, struct comm_stats *out)
{
    *out = c->st;
}

void comm_close(struct comm *c)
{
    if (!c)
        return;
    for (size_t k = 0; k < c->nout; k++)
        mail_free(c->out[k]);
    free(c->out);
    free(c);
}

/* ---- set-up and tear-down ----------------------------------------------- */

static int sim_hellos(struct sim *s)
{
    for (int r = 0; r < s->cfg.nodes; r++) {
        char host[32];
        snprintf(host, sizeof host, "vnode%05d", r);
        struct msg_hello h = {.host_rank = 0,
                              .host_ranks = 1,
                              .cpus = s->cfg.cores,
                              .memory_mb = s->cfg.memory_mb,
                              .hostname = host};
        struct msgbuf b = {0};
        if (msg_begin(&b, MSG_HELLO) < 0 || msg_add_hello(&b, &h) < 0) {
            msg_free(&b);
            return -1;
        }
        struct mail *m = sim_node_mail(s, (uint32_t)r, &b);
        if (!m)
            return -1;
        mailbox_push(s->box, m);
        s->rep.mails_to_master++;
    }
    return 0;
}

static int sim_setup(struct sim *s, const struct sim_config *cfg, struct pmc_error *err)
{
    s->cfg = *cfg;
    s->binw = cfg->window / BINS_PER_WINDOW;
    s->nodes = calloc((size_t)cfg->nodes, sizeof *s->nodes);
    s->touched = malloc(sizeof *s->touched * (size_t)cfg->nodes);
    if (!s->nodes || !s->touched || bins_reach(&s->bins, 0) < 0)
        return pmc_errorf(err, "out of memory for %d nodes", cfg->nodes);
    for (int i = 0; i < cfg->nodes; i++) {
        nq_init(&s->nodes[i].queue, sizeof(struct node_task));
        s->nodes[i].cpus_free = cfg->cores;
        s->nodes[i].memory_free = cfg->memory_mb;
        s->nodes[i].timer_at = INFINITY;
    }
    struct master_config mc = {.dag_path = cfg->dag_path,
                               .skip_rescue = true,
                               .tries = 1,
                               .program = "pmc-sim",
                               .nranks = cfg->nodes,
                               .nagents = cfg->nodes,
                               .null_executor = !cfg->rescue,
                               .nolock = true};
    s->m = master_create(&mc, err);
    if (!s->m)
        return -1;
    s->box = master_mailbox(s->m);
    s->comm = comm_create(0, cfg->nodes, s->box, NULL, NULL, err);
    if (!s->comm)
        return -1;
    s->comm->sim = s;
    if (sim_hellos(s) < 0)
        return pmc_errorf(err, "out of memory for the HELLOs");
    return 0;
}

static void sim_teardown(struct sim *s)
{
    master_destroy(s->m);
    comm_close(s->comm);
    for (size_t k = 0; k < s->nheap; k++)
        if (s->heap[k].kind == EV_TO_NODE || s->heap[k].kind == EV_TO_MASTER)
            mail_free(s->heap[k].u.mail);
    free(s->heap);
    for (int i = 0; s->nodes && i < s->cfg.nodes; i++) {
        struct node_task nt;
        while (nq_pop(&s->nodes[i].queue, &nt) == 1)
            batch_unref(nt.batch);
        nq_free(&s->nodes[i].queue);
        msg_free(&s->nodes[i].results);
    }
    free(s->nodes);
    free(s->touched);
    free(s->bins.cpu);
    free(s->bins.to_nodes);
    free(s->bins.to_master);
    free(s->bins.busy);
}

/* master_end() prints the usual report on stdout: keep it off ours. */
static int sim_end(struct sim *s)
{
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (saved >= 0 && null >= 0)
        dup2(null, 1);
    s->ending = true;
    double a = cpu_now();
    int status = master_end(s->m);
    s->rep.cpu_end = cpu_now() - a;
    if (saved >= 0) {
        dup2(saved, 1);
        close(saved);
    }
    if (null >= 0)
        close(null);
    return status;
}

static void sim_finish_report(struct sim *s)
{
    struct sim_report *r = &s->rep;
    size_t at;
    double w = s->cfg.window;
    r->tasks = r->results;
    r->util_avg = r->makespan > 0 ? r->cpu_steps / r->makespan : 0;
    r->util_peak = window_max_d(s->bins.cpu, s->bins.n, &at) / w;
    r->util_peak_at = (double)at * s->binw;
    r->peak_msgs_to_nodes = window_max_u(s->bins.to_nodes, s->bins.n) / w;
    r->peak_msgs_to_master = window_max_u(s->bins.to_master, s->bins.n) / w;
    double cores = (double)s->cfg.nodes * s->cfg.cores;
    for (size_t i = 0; i < s->bins.n; i++) {
        double f = s->bins.busy[i] / cores;
        if (f > r->busy_max)
            r->busy_max = f;
        if (i >= at && i < at + BINS_PER_WINDOW && f > r->busy_at_peak)
            r->busy_at_peak = f;
    }
}

/* One line per bin: what the master and the nodes did in it. */
static int sim_write_timeline(const struct sim *s, struct pmc_error *err)
{
    FILE *f = fopen(s->cfg.timeline, "w");
    if (!f)
        return pmc_errorf(err, "%s: %s", s->cfg.timeline, strerror(errno));
    fprintf(f, "t_s,master_cpu_s,tasks_msgs,results_msgs,busy_cpus\n");
    for (size_t i = 0; i < s->bins.n; i++)
        fprintf(f, "%.4f,%.9f,%u,%u,%u\n", (double)i * s->binw, s->bins.cpu[i], s->bins.to_nodes[i],
                s->bins.to_master[i], s->bins.busy[i]);
    if (fclose(f) != 0)
        return pmc_errorf(err, "%s: %s", s->cfg.timeline, strerror(errno));
    return 0;
}

int sim_run(const struct sim_config *cfg, struct sim_report *out, struct pmc_error *err)
{
    struct sim s = {0};
    double t0 = pmc_mono_s();
    int rc = -1;
    memset(out, 0, sizeof *out);
    s.rep.clock_cost = clock_cost();
    if (sim_setup(&s, cfg, err) < 0)
        goto out;
    double a = cpu_now();
    int begun = master_begin(s.m, s.comm);
    s.rep.cpu_begin = cpu_now() - a;
    if (begun == 0) {
        rc = sim_loop(&s, err);
    } else { /* deliver the ABORTs: the nodes answer BYE, master_end() reads them */
        rc = pmc_errorf(err, "master_begin() failed");
        sim_route_outbox(&s, 0);
        while (s.nheap > 0 && !s.failed)
            sim_instant(&s, false);
    }
    int status = sim_end(&s);
    if (rc == 0) {
        sim_finish_report(&s);
        if (cfg->timeline && sim_write_timeline(&s, err) < 0)
            rc = -1;
        s.rep.exit_status = status;
        s.rep.wall = pmc_mono_s() - t0;
        *out = s.rep;
    }
out:
    sim_teardown(&s);
    return rc;
}
