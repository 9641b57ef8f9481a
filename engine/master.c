/* master.c - rank 0's dependency engine and scheduler; see master.h.
 *
 * Per-task state lives in flat arrays indexed by task id (remaining parents,
 * state, attempts), beside the read-only DAG.  Invariants:
 *   - a task is in the ready queue iff state == TASK_READY;
 *   - remaining[t] == number of parents of t not yet TASK_DONE;
 *   - for every node, committed_cpus == sum(cpus of the tasks sent to it
 *     and not yet reported back: running or queued there) (same for
 *     memory), and inflight == number of TASK_RUNNING tasks.
 *
 * Dispatch (DESIGN.md section 2): a node may be sent tasks up to its CPUs
 * plus a prefetch window of W = max(PREFETCH_MIN, cpus) CPUs (and its memory
 * twice over), so it never idles for a round trip; the agent starts them as
 * its own accounting allows.  A node is refilled only once its commitment
 * fell to cpus + W/2 (hysteresis), so under load every TASKS message carries
 * at least W/2 CPUs' worth of tasks.
 * All of it is owned by the master thread; other threads only reach the
 * mailbox and the abort flag.
 */
#include "engine/master.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/dag.h"
#include "engine/monitor.h"
#include "io/daglock.h"
#include "io/fdcache.h"
#include "io/dagfile.h"
#include "io/log.h"
#include "io/msg.h"
#include "io/records.h"
#include "io/rescue.h"
#include "io/taskio.h"
#include "sched/ready_queue.h"

#define HELLO_TIMEOUT_S 120.0
#define PREFETCH_MIN 64 /* CPUs of prefetch window per node, at least */
#define IDLE_WAIT_US 500000

enum task_state { TASK_WAITING, TASK_READY, TASK_RUNNING, TASK_DONE, TASK_FAILED };

struct node {
    int rank;
    uint32_t host_rank;
    uint32_t host; /* index of its host in the monitor */
    uint32_t cpus;           /* CPUs the node offers */
    uint32_t window;         /* prefetch window, CPUs */
    uint32_t committed_cpus; /* of tasks sent and not reported back */
    uint64_t memory_mb, committed_mem;
    bool open;               /* may receive tasks this round */
    char *hostname;
    bool said_hello, said_bye;
    struct msgbuf batch; /* TASKS being built this round */
};

struct master_stats {
    uint32_t submitted, succeeded, failed, extra;
    double runtime;                 /* sum of task durations, s */
    double first_start, last_end;   /* epoch s, for the makespan */
    uint64_t task_msgs, tasks_sent; /* TASKS messages and their items */
    uint64_t result_msgs, results_recv;
};

struct master {
    struct master_config cfg;
    struct fdcache *fdcache; /* I/O forwarding destinations */
    struct monitor *monitor; /* jobstate.log, dagman.out, resource log */
    uint32_t *seq;           /* submit sequence number per task (monitor only) */
    uint32_t next_seq;
    char *fwd_scratch;       /* a task's forwards in wire form */
    size_t fwd_scratch_cap;
    int lock_fd; /* holds the DAG lock; -1 none, -2 could not lock */
    char *rescue_path;
    struct dag *dag;
    uint8_t *done_before; /* from the old rescue log */
    uint32_t ndone_before;
    uint32_t *remaining;
    uint8_t *state;
    uint16_t *attempts;
    struct ready_queue *ready;
    uint32_t *deferred; /* scratch for the dispatcher */
    size_t deferred_cap;
    struct node *nodes;
    int nnodes, nagents_expected;
    int *node_of_rank; /* rank -> index in nodes, -1 if none */
    int rr;            /* round-robin start of the node search */
    uint32_t cpus_total;
    uint64_t room; /* CPUs that open nodes may still be sent this round */
    uint32_t inflight;
    struct mailbox box;
    struct comm *comm;
    struct rescue_writer *rescue;
    struct master_stats st;
    double start, start_mono;
    bool stop_dispatch, max_failures_hit, aborting, fatal, abort_at_start;
    bool abort_sent, drain_sent; /* ABORT / DRAIN went to every node */
    atomic_int abort_requested;
    const char *_Atomic abort_reason;
};

static double now_epoch(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *task_name(const struct master *m, uint32_t t)
{
    return dag_task_name(m->dag, t);
}

/* ---- creation: DAG, rescue log, initial state --------------------------- */

static int master_alloc_state(struct master *m)
{
    uint32_t n = m->dag->ntasks;
    m->done_before = calloc(n, 1);
    m->remaining = malloc(sizeof *m->remaining * n);
    m->state = calloc(n, 1);
    m->attempts = calloc(n, sizeof *m->attempts);
    m->ready = rq_create();
    return m->done_before && m->remaining && m->state && m->attempts && m->ready ? 0 : -1;
}

static char *master_default_rescue(const char *dag_path)
{
    size_t n = strlen(dag_path);
    char *p = malloc(n + 8);
    if (p)
        snprintf(p, n + 8, "%s.rescue", dag_path);
    return p;
}

struct master *master_create(const struct master_config *cfg, struct pmc_error *err)
{
    struct master *m = calloc(1, sizeof *m);
    if (!m) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    m->cfg = *cfg;
    m->box.efd = -1;
    m->lock_fd = -1;
    m->rescue_path = cfg->rescue_path ? strdup(cfg->rescue_path)
                                      : master_default_rescue(cfg->dag_path);
    if (!m->rescue_path || mailbox_init(&m->box) < 0) {
        pmc_errorf(err, "out of memory");
        goto fail;
    }
    m->lock_fd = cfg->nolock ? -1 : daglock_acquire(cfg->dag_path, err);
    if (m->lock_fd == -1 && !cfg->nolock)
        goto fail;
    if (m->lock_fd == -2)
        log_warn("Cannot open %s for writing: running without the DAG lock", cfg->dag_path);
    m->dag = dagfile_load(cfg->dag_path, err);
    if (!m->dag)
        goto fail;
    if (master_alloc_state(m) < 0) {
        pmc_errorf(err, "out of memory for %u tasks", m->dag->ntasks);
        goto fail;
    }
    m->fdcache = fdcache_create(cfg->maxfds, err);
    if (!m->fdcache)
        goto fail;
    if (!cfg->skip_rescue && rescue_read(m->rescue_path, m->dag, m->done_before,
                                         &m->ndone_before, NULL, err) < 0)
        goto fail;
    return m;
fail:
    master_destroy(m);
    return NULL;
}

struct mailbox *master_mailbox(struct master *m)
{
    return &m->box;
}

/* Put t in the ready queue (at the front of its priority when front, for a
 * task given back unstarted) with a new submit sequence number.  0, or -1
 * with ENOMEM. */
static int master_make_ready(struct master *m, uint32_t t, bool front)
{
    int32_t prio = m->dag->priority[t];
    m->state[t] = TASK_READY;
    if (m->seq) {
        m->seq[t] = m->next_seq++;
        monitor_event(m->monitor, WF_TASK_QUEUED, task_name(m, t), m->seq[t], 0);
    }
    return front ? rq_push_front(m->ready, t, prio) : rq_push(m->ready, t, prio);
}

/* remaining[] from the DAG and the done set; queue the tasks that can run. */
static int master_init_ready(struct master *m)
{
    const struct dag *d = m->dag;
    memcpy(m->remaining, d->nparents, sizeof *m->remaining * d->ntasks);
    for (uint32_t t = 0; t < d->ntasks; t++) {
        if (!m->done_before[t])
            continue;
        m->state[t] = TASK_DONE;
        for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
            m->remaining[d->children[e]]--;
    }
    for (uint32_t t = 0; t < d->ntasks; t++)
        if (m->state[t] == TASK_WAITING && m->remaining[t] == 0 && master_make_ready(m, t, false) < 0)
            return -1;
    return 0;
}

/* ---- nodes: HELLO and capability ---------------------------------------- */

static int master_add_node(struct master *m, int rank, const struct msg_hello *h)
{
    if (rank < 0 || rank >= m->cfg.nranks || m->node_of_rank[rank] >= 0) {
        log_error("Unexpected HELLO from rank %d", rank);
        return -1;
    }
    struct node *n = &m->nodes[m->nnodes];
    memset(n, 0, sizeof *n);
    n->rank = rank;
    n->host_rank = h->host_rank;
    n->cpus = h->cpus;
    n->window = h->cpus > PREFETCH_MIN ? h->cpus : PREFETCH_MIN;
    n->memory_mb = h->memory_mb;
    n->hostname = strdup(h->hostname);
    n->said_hello = true;
    n->host = monitor_add_node(m->monitor, h->hostname, h->cpus, h->memory_mb);
    m->node_of_rank[rank] = m->nnodes++;
    m->cpus_total += h->cpus;
    log_debug("Rank %d on host %s (host rank %u): %u CPUs, %lu MB", rank, h->hostname,
              h->host_rank, h->cpus, (unsigned long)h->memory_mb);
    return n->hostname ? 0 : -1;
}

static int master_handle_hello(struct master *m, struct mail *ml, struct msg_reader *r)
{
    struct msg_hello h;
    struct pmc_error err;
    int rc = msg_next_hello(r, &h, &err);
    if (rc != 1) {
        log_error("Bad HELLO from rank %d: %s", ml->peer, rc < 0 ? err.text : "empty");
        return -1;
    }
    return master_add_node(m, ml->peer, &h);
}

static void master_handle_mail(struct master *m, struct mail *ml);

/* Wait until every agent said HELLO.  -1 on a bad message or time-out. */
static int master_wait_hellos(struct master *m)
{
    double deadline = now_mono() + HELLO_TIMEOUT_S;
    while (m->nnodes < m->nagents_expected && !m->fatal) {
        struct mail *ml = mailbox_pop(&m->box);
        if (ml) {
            master_handle_mail(m, ml);
            mail_free(ml);
            continue;
        }
        if (now_mono() > deadline) {
            log_fatal("Only %d of %d ranks registered within %.0f seconds", m->nnodes,
                      m->nagents_expected, HELLO_TIMEOUT_S);
            return -1;
        }
        if (atomic_load(&m->abort_requested))
            return -1;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
    return m->fatal ? -1 : 0;
}

/* PMC's check: every task must fit on at least one node. */
static int master_check_capable(struct master *m)
{
    for (uint32_t t = 0; t < m->dag->ntasks; t++) {
        bool fits = false;
        for (int i = 0; i < m->nnodes && !fits; i++)
            fits = m->dag->cpus[t] <= m->nodes[i].cpus &&
                   m->dag->memory_mb[t] <= m->nodes[i].memory_mb;
        if (!fits && !m->done_before[t]) {
            log_fatal("FATAL ERROR: No host is capable of running task %s", task_name(m, t));
            return -1;
        }
    }
    return 0;
}

/* ---- dispatch ----------------------------------------------------------- */

/* Can node n take a task of cpus/mem now (within its window)? */
static bool node_has_room(const struct node *n, uint32_t cpus, uint64_t mem)
{
    return n->open && cpus <= n->cpus && mem <= n->memory_mb &&
           n->committed_cpus + cpus <= n->cpus + n->window &&
           n->committed_mem + mem <= 2 * n->memory_mb;
}

static uint32_t node_room(const struct node *n)
{
    uint32_t cap = n->cpus + n->window;
    return n->committed_cpus < cap ? cap - n->committed_cpus : 0;
}

/* Open the nodes whose commitment fell to the low-water mark; sum their
 * room.  O(nodes) per round. */
static void master_open_nodes(struct master *m)
{
    m->room = 0;
    for (int i = 0; i < m->nnodes; i++) {
        struct node *n = &m->nodes[i];
        n->open = n->committed_cpus <= n->cpus + n->window / 2;
        if (n->open)
            m->room += node_room(n);
    }
}

static int master_find_node(struct master *m, uint32_t t)
{
    uint32_t cpus = m->dag->cpus[t];
    uint64_t mem = m->dag->memory_mb[t];
    for (int k = 0; k < m->nnodes; k++) {
        int i = (m->rr + k) % m->nnodes;
        if (node_has_room(&m->nodes[i], cpus, mem))
            return i;
    }
    return -1;
}

/* The task's -f/-F list in the TASKS wire form: (u8 kind, src NUL, dest
 * NUL) per forward, in m's scratch buffer (valid until the next call). */
static const char *master_pack_forwards(struct master *m, uint32_t t)
{
    const struct dag *d = m->dag;
    size_t need = 0;
    for (uint32_t j = d->fwd_first[t]; j < d->fwd_first[t] + d->nfwd[t]; j++)
        need += 3 + strlen(d->arena + d->fwd[j].src) + strlen(d->arena + d->fwd[j].dest);
    if (need > m->fwd_scratch_cap) {
        char *p = realloc(m->fwd_scratch, need);
        if (!p)
            return NULL;
        m->fwd_scratch = p;
        m->fwd_scratch_cap = need;
    }
    char *p = m->fwd_scratch;
    for (uint32_t j = d->fwd_first[t]; j < d->fwd_first[t] + d->nfwd[t]; j++) {
        *p++ = (char)d->fwd[j].kind;
        p = stpcpy(p, d->arena + d->fwd[j].src) + 1;
        p = stpcpy(p, d->arena + d->fwd[j].dest) + 1;
    }
    return m->fwd_scratch;
}

static int master_batch_task(struct master *m, struct node *n, uint32_t t)
{
    const struct dag *d = m->dag;
    struct msg_task mt = {.id = t,
                          .attempt = m->attempts[t],
                          .cpus = d->cpus[t],
                          .memory_mb = d->memory_mb[t],
                          .flags = 0,
                          .name = dag_task_name(d, t),
                          .pegasus_id = d->arena + d->pegasus_id[t],
                          .argc = d->argc[t],
                          .argv = d->arena + d->argv[t],
                          .nfwd = d->nfwd[t],
                          .fwd = d->nfwd[t] ? master_pack_forwards(m, t) : NULL};
    if (mt.nfwd && !mt.fwd)
        return -1;
    if (n->batch.count == 0 && msg_begin(&n->batch, MSG_TASKS) < 0)
        return -1;
    return msg_add_task(&n->batch, &mt);
}

/* Account and batch task t for node i. */
static int master_assign(struct master *m, uint32_t t, int i)
{
    struct node *n = &m->nodes[i];
    m->attempts[t]++;
    if (m->attempts[t] > 1)
        m->st.extra++;
    m->state[t] = TASK_RUNNING;
    n->committed_cpus += m->dag->cpus[t];
    n->committed_mem += m->dag->memory_mb[t];
    monitor_node_changed(m->monitor, n->host, m->dag->cpus[t], m->dag->memory_mb[t]);
    if (m->seq)
        monitor_event(m->monitor, WF_TASK_SUBMIT, task_name(m, t), m->seq[t], 0);
    m->room = m->room > m->dag->cpus[t] ? m->room - m->dag->cpus[t] : 0;
    m->inflight++;
    m->st.submitted++;
    m->rr = (i + 1) % m->nnodes;
    log_trace("Scheduling task %s", task_name(m, t));
    return master_batch_task(m, n, t);
}

static int master_defer(struct master *m, size_t k, uint32_t t)
{
    if (k >= m->deferred_cap) {
        size_t cap = m->deferred_cap ? m->deferred_cap * 2 : 1024;
        uint32_t *p = realloc(m->deferred, cap * sizeof *p);
        if (!p)
            return -1;
        m->deferred = p;
        m->deferred_cap = cap;
    }
    m->deferred[k] = t;
    return 0;
}

/* Dispatch from one priority bucket; tasks that fit nowhere keep their
 * place at the front.  -1 on ENOMEM. */
static int master_dispatch_bucket(struct master *m, size_t b)
{
    size_t n = rq_bucket_size(m->ready, b), ndef = 0;
    int32_t prio = rq_bucket_priority(m->ready, b);
    for (size_t k = 0; k < n && m->room > 0; k++) {
        uint32_t t = rq_bucket_pop(m->ready, b);
        int i = master_find_node(m, t);
        if (i < 0 ? master_defer(m, ndef++, t) < 0 : master_assign(m, t, i) < 0)
            return -1;
    }
    while (ndef > 0)
        if (rq_push_front(m->ready, m->deferred[--ndef], prio) < 0)
            return -1;
    return 0;
}

static void master_send_batches(struct master *m)
{
    for (int i = 0; i < m->nnodes; i++) {
        struct node *n = &m->nodes[i];
        if (n->batch.count == 0)
            continue;
        m->st.task_msgs++;
        m->st.tasks_sent += n->batch.count;
        msg_end(&n->batch);
        if (comm_send(m->comm, n->rank, COMM_TO_AGENT, &n->batch) < 0) {
            log_fatal("Cannot send tasks to rank %d: %s", n->rank, strerror(errno));
            m->fatal = true;
        }
    }
}

static void master_dispatch(struct master *m)
{
    if (m->stop_dispatch || rq_size(m->ready) == 0)
        return;
    master_open_nodes(m);
    for (size_t b = 0; b < rq_buckets(m->ready) && m->room > 0; b++) {
        if (rq_bucket_size(m->ready, b) && master_dispatch_bucket(m, b) < 0) {
            log_fatal("Out of memory while scheduling");
            m->fatal = true;
            break;
        }
    }
    master_send_batches(m);
}

/* ---- results ------------------------------------------------------------ */

static void master_release_children(struct master *m, uint32_t t)
{
    const struct dag *d = m->dag;
    for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++) {
        uint32_t c = d->children[e];
        if (--m->remaining[c] == 0 && m->state[c] == TASK_WAITING) {
            if (master_make_ready(m, c, false) < 0) {
                log_fatal("Out of memory for the ready queue");
                m->fatal = true;
            }
        }
    }
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
    if (r->exec_errno)
        log_error("Task %s could not be started: %s: %s", task_name(m, t),
                  d->arena + d->argv[t], strerror(r->exec_errno));
    int code = io_failed ? 1 : exit_code_of(r->status);
    if (io_failed)
        log_error("Task %s failed due to collective I/O errors", task_name(m, t));
    else
        log_error("Task %s failed with exitcode %d", task_name(m, t), code);
    if (m->seq)
        monitor_event(m->monitor, WF_TASK_FAILURE, task_name(m, t), m->seq[t], code);
    uint32_t tries = d->tries[t] ? d->tries[t] : m->cfg.tries;
    if (m->attempts[t] < tries && !m->stop_dispatch) {
        log_info("Retrying task %s (attempt %u of %u)", task_name(m, t), m->attempts[t] + 1,
                 tries);
        if (master_make_ready(m, t, false) < 0) {
            log_fatal("Out of memory for the ready queue");
            m->fatal = true;
        }
        return;
    }
    m->state[t] = TASK_FAILED;
    m->st.failed++;
    if (m->cfg.max_failures && m->st.failed >= m->cfg.max_failures && !m->max_failures_hit) {
        m->max_failures_hit = true;
        m->stop_dispatch = true;
    }
}

/* A task the node gave back unstarted (DRAIN/ABORT): it is ready again and
 * this attempt does not count. */
static void master_task_returned(struct master *m, uint32_t t)
{
    m->attempts[t]--;
    if (m->attempts[t] >= 1)
        m->st.extra--;
    m->st.submitted--;
    if (master_make_ready(m, t, true) < 0) {
        log_fatal("Out of memory for the ready queue");
        m->fatal = true;
    }
}

static void master_task_succeeded(struct master *m, uint32_t t)
{
    log_debug("Task %s finished", task_name(m, t));
    if (m->seq)
        monitor_event(m->monitor, WF_TASK_SUCCESS, task_name(m, t), m->seq[t], 0);
    m->state[t] = TASK_DONE;
    m->st.succeeded++;
    if (m->rescue)
        rescue_writer_append(m->rescue, t);
    master_release_children(m, t);
}

/* Append the forwarded data of a successful task to its destinations (each
 * block whole, through the descriptor cache).  -1 when a block could not be
 * written: the task then fails (PMC manual, I/O forwarding caveats). */
static int master_write_forwards(struct master *m, uint32_t t, const struct msg_result *r)
{
    const struct dag *d = m->dag;
    size_t pos = 0;
    uint32_t idx, len;
    const uint8_t *data;
    int rc = 0, more;
    while ((more = msg_result_next_fwd(r, &pos, &idx, &data, &len)) == 1) {
        if (idx >= d->nfwd[t]) {
            log_error("Task %s: forwarded data for forward %u of %u", task_name(m, t), idx,
                      d->nfwd[t]);
            return -1;
        }
        struct pmc_error err;
        const char *dest = d->arena + d->fwd[d->fwd_first[t] + idx].dest;
        if (fdcache_write(m->fdcache, dest, data, len, &err) < 0) {
            log_error("%s", err.text);
            rc = -1;
        }
    }
    return more < 0 ? -1 : rc;
}

/* Apply one result from node n; -1 if it does not match a running task. */
static int master_apply_result(struct master *m, struct node *n, const struct msg_result *r)
{
    uint32_t t = r->id;
    if (t >= m->dag->ntasks || m->state[t] != TASK_RUNNING || r->attempt != m->attempts[t]) {
        log_error("Rank %d sent a result for task id %u attempt %u that is not running", n->rank,
                  t, r->attempt);
        return -1;
    }
    n->committed_cpus -= m->dag->cpus[t];
    n->committed_mem -= m->dag->memory_mb[t];
    monitor_node_changed(m->monitor, n->host, -(int64_t)m->dag->cpus[t],
                         -(int64_t)m->dag->memory_mb[t]);
    m->inflight--;
    if (r->exec_errno == ECANCELED) {
        master_task_returned(m, t);
        return 0;
    }
    m->st.runtime += r->duration;
    if (m->st.first_start == 0 || r->start < m->st.first_start)
        m->st.first_start = r->start;
    if (r->start + r->duration > m->st.last_end)
        m->st.last_end = r->start + r->duration;
    if (r->status != 0 || r->exec_errno != 0)
        master_task_failed(m, t, r, false);
    else if (master_write_forwards(m, t, r) < 0)
        master_task_failed(m, t, r, true);
    else
        master_task_succeeded(m, t);
    return 0;
}

static int master_handle_results(struct master *m, struct mail *ml, struct msg_reader *r)
{
    int idx = ml->peer >= 0 && ml->peer < m->cfg.nranks ? m->node_of_rank[ml->peer] : -1;
    if (idx < 0) {
        log_error("RESULTS from rank %d, which has no node agent", ml->peer);
        return -1;
    }
    m->st.result_msgs++;
    struct msg_result res;
    struct pmc_error err;
    int rc;
    while ((rc = msg_next_result(r, &res, &err)) == 1) {
        m->st.results_recv++;
        if (master_apply_result(m, &m->nodes[idx], &res) < 0)
            return -1;
    }
    if (rc < 0)
        log_error("Bad RESULTS from rank %d: %s", ml->peer, err.text);
    return rc;
}

static void master_handle_mail(struct master *m, struct mail *ml)
{
    struct msg_reader r;
    struct pmc_error err;
    int rc = -1;
    if (msg_open(&r, ml->data, ml->len, &err) < 0) {
        log_error("Bad message from rank %d: %s", ml->peer, err.text);
    } else if (r.kind == MSG_HELLO) {
        rc = master_handle_hello(m, ml, &r);
    } else if (r.kind == MSG_RESULTS) {
        rc = master_handle_results(m, ml, &r);
    } else if (r.kind == MSG_BYE) {
        int idx = ml->peer < m->cfg.nranks ? m->node_of_rank[ml->peer] : -1;
        if (idx >= 0)
            m->nodes[idx].said_bye = true;
        rc = idx >= 0 ? 0 : -1;
    } else if (r.kind == MSG_ABORT) {
        log_error("Rank %d cannot go on", ml->peer);
        rc = -1;
    } else {
        log_error("Unexpected message kind %u from rank %d", r.kind, ml->peer);
    }
    if (rc < 0)
        m->fatal = true;
}

static void master_drain(struct master *m)
{
    struct mail *ml;
    while ((ml = mailbox_pop(&m->box)) != NULL) {
        master_handle_mail(m, ml);
        mail_free(ml);
    }
}

/* ---- the main loop ------------------------------------------------------ */

void master_abort_at_start(struct master *m)
{
    m->abort_at_start = true;
}

void master_request_abort(struct master *m, const char *reason)
{
    atomic_store(&m->abort_reason, reason);
    atomic_store(&m->abort_requested, 1);
    mailbox_wake(&m->box);
}

static void master_check_stop(struct master *m)
{
    if (m->cfg.max_wall_time > 0 && now_mono() - m->start_mono >= m->cfg.max_wall_time &&
        !m->aborting) {
        log_error("Max wall time of %.3f minutes reached", m->cfg.max_wall_time / 60.0);
        m->aborting = true;
    }
    if (atomic_load(&m->abort_requested) && !m->aborting) {
        log_error("Caught signal: %s", atomic_load(&m->abort_reason));
        m->aborting = true;
    }
    if (m->rescue && rescue_writer_failed(m->rescue) && !m->fatal) {
        log_fatal("Rescue log failed: %s", rescue_writer_error(m->rescue));
        m->fatal = true;
    }
    if (m->fatal)
        m->aborting = true;
    if (m->aborting)
        m->stop_dispatch = true;
}

static bool master_finished(const struct master *m)
{
    return m->inflight == 0 && (m->stop_dispatch || rq_size(m->ready) == 0);
}

static long master_wait_us(const struct master *m)
{
    if (m->cfg.max_wall_time <= 0)
        return IDLE_WAIT_US;
    double left = m->cfg.max_wall_time - (now_mono() - m->start_mono);
    if (left <= 0)
        return 0;
    return left * 1e6 < IDLE_WAIT_US ? (long)(left * 1e6) + 1 : IDLE_WAIT_US;
}

static void master_broadcast(struct master *m, enum msg_kind kind)
{
    for (int i = 0; i < m->nnodes; i++) {
        struct msgbuf b = {0};
        if (msg_begin(&b, kind) == 0) {
            msg_end(&b);
            comm_send(m->comm, m->nodes[i].rank, COMM_TO_AGENT, &b);
        }
        msg_free(&b);
    }
}

bool master_step(struct master *m)
{
    master_drain(m);
    master_check_stop(m);
    if (m->aborting && !m->abort_sent) {
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = m->drain_sent = true;
    }
    if (m->stop_dispatch && !m->drain_sent) {
        /* -m reached: tasks queued at nodes come back unstarted */
        master_broadcast(m, MSG_DRAIN);
        m->drain_sent = true;
    }
    master_dispatch(m);
    if (master_finished(m))
        return true;
    monitor_flush(m->monitor);
    return false;
}

static bool master_all_bye(const struct master *m)
{
    for (int i = 0; i < m->nnodes; i++)
        if (!m->nodes[i].said_bye)
            return false;
    return true;
}

/* SHUTDOWN (ABORT was already sent when aborting) and wait for every BYE;
 * late results are still applied. */
static void master_shutdown_agents(struct master *m)
{
    if (!m->aborting)
        master_broadcast(m, MSG_SHUTDOWN);
    while (!master_all_bye(m)) {
        master_drain(m);
        if (master_all_bye(m))
            break;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
}

/* ---- the end: merge, statistics, summary -------------------------------- */

static int master_open_dest(const char *path, int dflt)
{
    if (!path)
        return dflt;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        log_error("Unable to open %s: %s", path, strerror(errno));
    return fd;
}

static void master_merge_stdio(struct master *m)
{
    int out = master_open_dest(m->cfg.out_path, 1);
    int err = m->cfg.err_path && m->cfg.out_path && !strcmp(m->cfg.err_path, m->cfg.out_path)
                  ? out
                  : master_open_dest(m->cfg.err_path, 2);
    char path[4096];
    struct pmc_error e;
    for (int r = 0; r < m->cfg.nranks; r++) {
        snprintf(path, sizeof path, "%s.out.%d", m->cfg.dag_path, r);
        if (out >= 0 && taskio_merge(out, path, &e) < 0)
            log_error("%s", e.text);
        snprintf(path, sizeof path, "%s.err.%d", m->cfg.dag_path, r);
        if (err >= 0 && taskio_merge(err, path, &e) < 0)
            log_error("%s", e.text);
    }
    if (out > 2)
        close(out);
    if (err > 2 && err != out)
        close(err);
}

static void master_print_stats(const struct master *m, double wall)
{
    double rt = m->st.runtime;
    double with = wall > 0 ? rt / (wall * (m->cpus_total + 1)) : 0;
    double without = wall > 0 && m->cpus_total ? rt / (wall * m->cpus_total) : 0;
    double makespan = m->st.last_end > m->st.first_start ? m->st.last_end - m->st.first_start : 0;
    log_info("Resource utilization (with master): %lf", with);
    log_info("Resource utilization (without master): %lf", without);
    log_info("Total runtime of tasks: %lf seconds (%lf minutes)", rt, rt / 60.0);
    log_info("Wall time: %lf seconds (%lf minutes)", wall, wall / 60.0);
    log_info("Makespan: %lf seconds", makespan);
    log_info("Throughput: %lf tasks/second", wall > 0 ? m->st.succeeded / wall : 0.0);
    log_info("Messages to nodes: %lu TASKS carrying %lu tasks (%.2f tasks per message)",
             (unsigned long)m->st.task_msgs, (unsigned long)m->st.tasks_sent,
             m->st.task_msgs ? (double)m->st.tasks_sent / m->st.task_msgs : 0.0);
    log_info("Messages from nodes: %lu RESULTS carrying %lu results (%.2f results per message)",
             (unsigned long)m->st.result_msgs, (unsigned long)m->st.results_recv,
             m->st.result_msgs ? (double)m->st.results_recv / m->st.result_msgs : 0.0);
}

static void master_print_summary(const struct master *m, bool failed, double wall)
{
    struct summary_record s = {.failed = failed,
                               .tasks = m->dag->ntasks,
                               .submitted = m->st.submitted,
                               .succeeded = m->st.succeeded,
                               .failed_tasks = m->st.failed,
                               .extra = m->st.extra,
                               .start = m->start,
                               .duration = wall,
                               .pid = (int)getpid(),
                               .app = m->cfg.program,
                               .runtime = m->st.runtime,
                               .slots = m->cpus_total,
                               .cpus = m->cpus_total};
    char line[2048];
    size_t n = records_format_summary(line, sizeof line, &s);
    if (n >= sizeof line)
        n = sizeof line - 1;
    fflush(stdout);
    if (write(1, line, n) != (ssize_t)n)
        log_error("Error writing cluster-summary: %s", strerror(errno));
}

static bool master_workflow_ok(const struct master *m)
{
    return !m->aborting && !m->fatal && m->st.succeeded + m->ndone_before == m->dag->ntasks;
}

static int master_finish(struct master *m)
{
    if (m->rescue && rescue_writer_close(m->rescue) < 0 && !m->fatal) {
        log_fatal("Rescue log failed");
        m->fatal = true;
    }
    m->rescue = NULL;
    double wall = now_mono() - m->start_mono;
    if (m->aborting)
        log_error("Aborting workflow");
    if (m->max_failures_hit)
        log_error("Max failures reached: DAG prematurely aborted");
    master_merge_stdio(m);
    master_print_stats(m, wall);
    bool ok = master_workflow_ok(m);
    monitor_event(m->monitor, ok ? WF_WORKFLOW_SUCCESS : WF_WORKFLOW_FAILURE, NULL, 0, 0);
    monitor_close(m->monitor);
    m->monitor = NULL;
    struct pmc_error err;
    if (fdcache_close_all(m->fdcache, &err) < 0)
        log_error("%s", err.text);
    master_print_summary(m, !ok, wall);
    if (ok)
        log_info("Workflow succeeded");
    else
        log_error("Workflow failed");
    return ok ? 0 : 1;
}

static int master_prepare(struct master *m)
{
    m->nodes = calloc((size_t)m->cfg.nranks, sizeof *m->nodes);
    m->node_of_rank = malloc(sizeof(int) * (size_t)m->cfg.nranks);
    if (!m->nodes || !m->node_of_rank)
        return -1;
    for (int r = 0; r < m->cfg.nranks; r++)
        m->node_of_rank[r] = -1;
    m->nagents_expected = m->cfg.nranks - (m->cfg.master_only ? 1 : 0);
    struct pmc_error err;
    struct monitor_config mc = {m->cfg.dag_path, m->cfg.jobstate_log, m->cfg.dagman_log,
                                m->cfg.resource_log};
    m->monitor = monitor_open(&mc, &err);
    if (!m->monitor) {
        log_fatal("%s", err.text);
        return -1;
    }
    if (monitor_wants_tasks(m->monitor)) {
        m->seq = calloc(m->dag->ntasks, sizeof *m->seq);
        m->next_seq = 1;
        if (!m->seq)
            return -1;
    }
    monitor_event(m->monitor, WF_WORKFLOW_START, NULL, 0, 0);
    return 0;
}

static int master_start_rescue(struct master *m)
{
    struct pmc_error err;
    if (m->cfg.null_executor)
        return 0; /* nothing runs, so nothing may be recorded as done */
    m->rescue = rescue_writer_open(m->rescue_path, m->dag, m->done_before, &err);
    if (!m->rescue) {
        log_fatal("%s", err.text);
        return -1;
    }
    return 0;
}

int master_begin(struct master *m, struct comm *c)
{
    m->comm = c;
    m->start = now_epoch();
    m->start_mono = now_mono();
    if (master_prepare(m) < 0) {
        log_fatal("Cannot start the master");
        m->fatal = m->aborting = true;
        return -1;
    }
    if (master_wait_hellos(m) < 0 || m->abort_at_start || master_check_capable(m) < 0 ||
        master_start_rescue(m) < 0 || master_init_ready(m) < 0) {
        m->fatal = m->aborting = true;
        master_broadcast(m, MSG_ABORT);
        m->abort_sent = true;
        return -1;
    }
    monitor_flush(m->monitor); /* the resource log's first lines: everything free */
    log_info("Starting workflow with %u tasks (%u done before) on %d ranks, %u CPUs",
             m->dag->ntasks, m->ndone_before, m->nnodes, m->cpus_total);
    return 0;
}

int master_end(struct master *m)
{
    if (m->nodes)
        master_shutdown_agents(m);
    return master_finish(m);
}

int master_run(struct master *m, struct comm *c)
{
    if (master_begin(m, c) == 0)
        while (!master_step(m))
            mailbox_wait(&m->box, master_wait_us(m));
    return master_end(m);
}

void master_destroy(struct master *m)
{
    if (!m)
        return;
    rescue_writer_close(m->rescue);
    for (int i = 0; i < m->nnodes; i++) {
        free(m->nodes[i].hostname);
        msg_free(&m->nodes[i].batch);
    }
    free(m->nodes);
    free(m->node_of_rank);
    free(m->deferred);
    rq_destroy(m->ready);
    free(m->attempts);
    free(m->state);
    free(m->remaining);
    free(m->done_before);
    dag_destroy(m->dag);
    if (m->box.efd >= 0)
        mailbox_destroy(&m->box);
    free(m->rescue_path);
    fdcache_destroy(m->fdcache);
    monitor_close(m->monitor);
    free(m->seq);
    free(m->fwd_scratch);
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    free(m);
}
