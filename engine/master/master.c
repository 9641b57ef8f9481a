/* master.c - the master's life cycle: load, register nodes, the loop,
 * stop conditions, shutdown; see master.h and master_internal.h. */
#include "engine/master/master.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/master/master_internal.h"
#include "io/daglock.h"
#include "io/dagfile.h"
#include "io/clock.h"
#include "io/grow.h"
#include "io/log.h"
#include "io/pathset.h"
#include "io/taskio.h"

/* ---- creation: DAG, rescue log, initial state --------------------------- */

/* Make *map (a rank -> index table of *cap entries) cover need ranks, the
 * new entries -1: 0, or -1 with ENOMEM (*map and *cap unchanged). */
static int rank_map_grow(int **map, size_t *cap, size_t need)
{
    size_t old = *cap;
    if (pmc_grow((void **)map, cap, need, sizeof **map) < 0)
        return -1;
    for (size_t r = old; r < *cap; r++)
        (*map)[r] = -1;
    return 0;
}

/* Agent a of rank `rank` with its ABORT, DRAIN and SHUTDOWN mails, built
 * now: ending a run never allocates, so an agent learns of the end even
 * when memory is gone.  -1 with ENOMEM (free it with master_agent_free()). */
static int master_agent_init(struct agent *a, int rank)
{
    static const enum msg_kind kinds[CTL_KINDS] = {MSG_ABORT, MSG_DRAIN, MSG_SHUTDOWN};
    *a = (struct agent){.rank = rank};
    for (int j = 0; j < CTL_KINDS; j++)
        if (!(a->ctl[j] = mail_control(rank, COMM_TO_AGENT, kinds[j])))
            return -1;
    return 0;
}

static void master_agent_free(struct agent *a)
{
    for (int j = 0; j < CTL_KINDS; j++)
        mail_free(a->ctl[j]);
}

/* Every agent of an MPI run (cfg.agent_ranks), registered or not.  Joined
 * agents come with their HELLO (master_add_node()).  -1 with ENOMEM. */
static int master_ctl_init(struct master *m)
{
    int na = m->cfg.nagents, nr = m->cfg.nranks;
    struct master_agents *a = &m->agents;
    if (m->cfg.joined)
        return 0;
    if (rank_map_grow(&a->of_rank, &a->rank_cap, (size_t)nr) < 0 ||
        pmc_grow((void **)&a->at, &a->cap, (size_t)na, sizeof *a->at) < 0)
        return -1;
    for (int k = 0; k < na; k++) {
        int rank = m->cfg.agent_ranks ? m->cfg.agent_ranks[k] : k;
        if (rank < 0 || rank >= nr)
            return -1;
        int rc = master_agent_init(&a->at[k], rank);
        a->n++; /* freed by master_destroy() even when incomplete */
        if (rc < 0)
            return -1;
        a->of_rank[rank] = k;
    }
    m->cfg.agent_ranks = NULL; /* the caller's array; ours is agents.at */
    return 0;
}

/* ---- the run's files: no two may be one (io/pathset.h) ------------------ */

/* Add path as label and, when tmp_label, PATH.tmp, which replacing path
 * writes first (the rescue log, --status, --summary-json). */
static int paths_add(struct pathset *ps, const char *path, const char *label, const char *tmp_label,
                     unsigned share, struct pmc_error *err)
{
    if (pathset_add(ps, path, label, share, err) < 0)
        return -1;
    if (!tmp_label)
        return 0;
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", path) >= sizeof tmp)
        return 0; /* cannot be created anyway: the check of the output says so */
    return pathset_add(ps, tmp, tmp_label, 0, err);
}

/* The stdio files of every rank that runs a node agent (DAG.out.R,
 * DAG.err.R: taskio_rank_path()). */
static int paths_add_ranks(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    for (int k = 0; k < m->cfg.nagents; k++) {
        int rank = m->cfg.agent_ranks ? m->cfg.agent_ranks[k] : k;
        for (int stream = 0; stream < 2; stream++) {
            char path[PATH_MAX], label[64];
            taskio_rank_path(path, sizeof path, m->cfg.dag_path, stream, rank);
            snprintf(label, sizeof label, "rank %d's %s file", rank, stream ? "stderr" : "stdout");
            if (pathset_add(ps, path, label, 0, err) < 0)
                return -1;
        }
    }
    return 0;
}

/* Every file the run reads or writes that the command line names: the
 * DAG, the rescue log, -o, -e (one file allowed: one descriptor), the
 * status and summary files, the event logs, the ranks' stdio files. */
static int paths_add_own(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    const struct master_config *c = &m->cfg;
    static const char *const logs[MONITOR_LOGS] = {"the jobstate log (--jobstate-log)",
                                                   "the dagman log (--monitord-hack)",
                                                   "the resource log"};
    bool wanted[MONITOR_LOGS] = {c->jobstate_log, c->dagman_log, c->resource_log};
    if (pathset_add(ps, c->dag_path, "the DAG", 0, err) < 0)
        return -1;
    if (!c->null_executor &&
        paths_add(ps, m->rescue.path, c->rescue_path ? "the rescue log (-r)" : "the rescue log",
                  "the rescue log's temporary file", 0, err) < 0)
        return -1;
    if ((c->out_path && paths_add(ps, c->out_path, "-o", NULL, 1, err) < 0) ||
        (c->err_path && paths_add(ps, c->err_path, "-e", NULL, 1, err) < 0) ||
        (c->status_path &&
         paths_add(ps, c->status_path, "--status", "the temporary file of --status", 0, err) < 0) ||
        (c->summary_json_path && paths_add(ps, c->summary_json_path, "--summary-json",
                                           "the temporary file of --summary-json", 0, err) < 0))
        return -1;
    for (int k = 0; k < MONITOR_LOGS; k++) {
        char *p = wanted[k] ? monitor_log_path(c->dag_path, (enum monitor_log)k) : NULL;
        int rc = wanted[k] && (!p || pathset_add(ps, p, logs[k], 0, err) < 0) ? -1 : 0;
        if (wanted[k] && !p)
            pmc_errorf(err, "out of memory");
        free(p);
        if (rc < 0)
            return -1;
    }
    return paths_add_ranks(m, ps, err);
}

/* The destinations of the DAG's forwards (-f, -F), by name
 * (pathset_check_name()): no system call for one whose last component is
 * none of the run's files', so a DAG of a million forwards costs a hash
 * lookup each.  Another name of a run's file (a hard link, a symbolic link
 * of another name) is refused when first opened (master_forward_guard()). */
/* The forwards fwd[first .. first + n - 1] of the task (or array) `name`
 * of DAG line `line`: 0, or -1 with err as paths_check_forwards(). */
static int check_forward_range(struct master *m, struct pathset *ps, uint32_t first, uint32_t n,
                               uint32_t line, const char *name, struct pmc_error *err)
{
    const struct dag *d = m->dag;
    for (uint32_t i = first; i < first + n; i++) {
        const char *dest = d->arena + d->fwd[i].dest;
        if (pathset_check_name(ps, dest, "", NULL) == 0)
            continue;
        char label[PATH_MAX];
        snprintf(label, sizeof label, "%s:%u: task %s's %s destination", m->cfg.dag_path, line,
                 name, d->fwd[i].kind == DAG_FORWARD_PIPE ? "-f" : "-F");
        return pathset_check_name(ps, dest, label, err);
    }
    return 0;
}

static int paths_check_forwards(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    const struct dag *d = m->dag;
    for (uint32_t t = 0; t < d->ntasks; t++)
        if (check_forward_range(m, ps, d->fwd_first[t], d->nfwd[t], d->line[t], task_name(m, t),
                                err) < 0)
            return -1;
    for (uint32_t a = 0; a < d->narrays; a++) {
        const struct dag_array *ar = &d->arrays[a];
        if (check_forward_range(m, ps, ar->fwd_first, ar->nfwd, ar->line, dag_array_name(d, a),
                                err) < 0)
            return -1;
    }
    return 0;
}

/* The task name in base when base is NAME.out.NNN or NAME.err.NNN with
 * NNN as taskio_open_per_task() writes it (%03u): its length, else 0. */
static size_t per_task_name_len(const char *base)
{
    const char *dot = strrchr(base, '.');
    if (!dot || dot - base < 5 || strlen(dot + 1) < 3 ||
        strspn(dot + 1, "0123456789") != strlen(dot + 1))
        return 0;
    char nnn[32];
    snprintf(nnn, sizeof nnn, "%03lu", strtoul(dot + 1, NULL, 10));
    if (strcmp(nnn, dot + 1) != 0 || (strncmp(dot - 4, ".out", 4) && strncmp(dot - 4, ".err", 4)))
        return 0;
    return (size_t)(dot - 4 - base);
}

/* --per-task-stdio writes DIR/NAME.out.NNN and DIR/NAME.err.NNN per attempt
 * of task NAME, DIR the DAG's directory (taskio_open_per_task()); a file
 * of the run so named would be taken for one, or replaced over one
 * (--status).  O(files of the run), a DAG lookup each. */
static int paths_check_per_task(struct master *m, struct pathset *ps, struct pmc_error *err)
{
    if (!m->cfg.per_task_stdio)
        return 0;
    const char *dag = m->cfg.dag_path, *slash = strrchr(dag, '/');
    for (size_t i = 1; i < pathset_count(ps); i++) { /* 0 is the DAG: read, not written */
        const struct pathset_file *f = pathset_at(ps, i);
        const char *base = strrchr(f->resolved, '/') + 1;
        size_t len = per_task_name_len(base);
        dag_task_t t;
        if (!len || dag_lookup(m->dag, base, len, &t) < 0)
            continue;
        char task_file[PATH_MAX], *real = NULL;
        size_t dir_len;
        snprintf(task_file, sizeof task_file, "%.*s%s", slash ? (int)(slash - dag) + 1 : 0, dag,
                 base);
        if (pathset_resolve(task_file, &real, &dir_len) < 0)
            return pmc_errorf(err, "out of memory");
        bool same = strcmp(real, f->resolved) == 0;
        free(real);
        if (same)
            return pmc_errorf(err,
                              "%s %s and the --per-task-stdio files of task %s name the same "
                              "file %s",
                              f->label, f->path, task_name(m, t), task_file);
    }
    return 0;
}

/* Refuse a run two of whose files are one: before anything is
 * opened for writing, with both named.  The DAG must be loaded (its
 * forwards and task names). */
static int master_check_paths(struct master *m, struct pmc_error *err)
{
    struct pathset *ps = pathset_create();
    int rc = !ps ? pmc_errorf(err, "out of memory")
             : paths_add_own(m, ps, err) < 0 || paths_check_forwards(m, ps, err) < 0 ||
                     paths_check_per_task(m, ps, err) < 0
                 ? -1
                 : 0;
    pathset_destroy(ps);
    return rc;
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
    m->out.fd[0] = 1;
    m->out.fd[1] = 2;
    if (master__rescue_init(&m->rescue, cfg) < 0 || mailbox_init(&m->box) < 0) {
        pmc_errorf(err, "out of memory");
        goto fail;
    }
    m->lock_fd = cfg->nolock ? -1 : daglock_acquire(cfg->dag_path, err);
    if (m->lock_fd == -1 && !cfg->nolock)
        goto fail;
    if (m->lock_fd == -2)
        log_warn("Cannot open %s for writing: running without the DAG lock", cfg->dag_path);
    m->dag = dagfile_load_opts(cfg->dag_path, &(struct dagfile_options){.arrays = 1}, err);
    if (!m->dag || master_check_paths(m, err) < 0)
        goto fail;
    if (master__rescue_alloc(&m->rescue, m->dag->ntasks, m->dag->ninstances) < 0 ||
        master__sched_create(m) < 0 || master_ctl_init(m) < 0) {
        pmc_errorf(err, "out of memory for %u tasks", m->dag->ntasks);
        goto fail;
    }
    if (master__forward_init(m, err) < 0 || master__rescue_load(&m->rescue, cfg, m->dag, err) < 0)
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

const struct dag *master_dag(const struct master *m)
{
    return m->dag;
}

/* The master's mailbox watch: results of its own node wait on the link. */
static bool master_link_waiting(void *arg)
{
    const struct master *m = arg;
    return local_link_events_waiting(m->link);
}

void master_set_local_link(struct master *m, struct local_link *l)
{
    m->link = l;
    mailbox_watch(&m->box, l ? master_link_waiting : NULL, m);
}

/* ---- outputs: opened before any task runs -------------------------------- */

int master_open_outputs(struct master *m)
{
    if (master__output_open(m) < 0 ||
        master__events_open(&m->events, &m->cfg, m->dag->ntasks) < 0 || master__status_init(m) < 0)
        return -1;
    struct pmc_error err;
    if (!m->cfg.null_executor && rescue_check_writable(m->rescue.path, &err) < 0) {
        log_fatal("Unable to write the rescue log %s", err.text);
        return -1;
    }
    master__events_start(&m->events);
    return 0;
}

/* ---- nodes: HELLO, leaving, loss and capability ------------------------- */

/* Agent k is sent control kind j (CTL_*), once. */
static void master_agent_send(struct master *m, int k, int j)
{
    struct mail **ml = &m->agents.at[k].ctl[j];
    if (*ml)
        comm_send_mail(m->comm, *ml);
    *ml = NULL;
}

/* A joined node that registers after ABORT, SHUTDOWN or DRAIN went to
 * every agent gets the last of those at once (the workflow is over, or
 * no more is dispatched). */
static void master_agent_catch_up(struct master *m, int k)
{
    unsigned sent = m->agents.sent;
    int j = sent & (1u << CTL_ABORT)      ? CTL_ABORT
            : sent & (1u << CTL_SHUTDOWN) ? CTL_SHUTDOWN
            : sent & (1u << CTL_DRAIN)    ? CTL_DRAIN
                                          : -1;
    if (j >= 0)
        master_agent_send(m, k, j);
}

/* Room for one more node, of rank `rank`, in every table: joined, they
 * grow; else master_prepare() sized them for cfg.nranks.  0, or -1 with
 * ENOMEM (what grew stays grown). */
static int master_reserve_node(struct master *m, int rank)
{
    struct master_nodes *ns = &m->nodes;
    struct master_agents *a = &m->agents;
    size_t need = (size_t)ns->n + 1;
    if (!m->cfg.joined)
        return 0;
    return rank_map_grow(&ns->of_rank, &ns->rank_cap, (size_t)rank + 1) < 0 ||
                   rank_map_grow(&a->of_rank, &a->rank_cap, (size_t)rank + 1) < 0 ||
                   pmc_grow((void **)&ns->at, &ns->cap, need, sizeof *ns->at) < 0 ||
                   pmc_grow((void **)&a->at, &a->cap, (size_t)a->n + 1, sizeof *a->at) < 0 ||
                   master__sched_reserve(m, (int)need) < 0
               ? -1
               : 0;
}

/* A joined node that cannot be registered (no memory): logged, sent
 * SHUTDOWN when a mail can still be built; the run goes on without it
 * (its BYE and the end of its link are then ignored). */
static void master_refuse_node(struct master *m, int rank, const char *hostname)
{
    log_error("Cannot take rank %d on host %s: out of memory; the run goes on without it", rank,
              hostname);
    struct mail *ml = mail_control(rank, COMM_TO_AGENT, MSG_SHUTDOWN);
    if (ml)
        comm_send_mail(m->comm, ml);
}

/* Joined: the node of rank `rank` joins the agents (its control mails in
 * a, built by the caller), and is told at once if the run is ending. */
static void master_join_agent(struct master *m, int rank, const struct agent *a)
{
    struct master_agents *as = &m->agents;
    as->at[as->n] = *a;
    as->of_rank[rank] = as->n++;
    m->nodes.joined++;
    master_agent_catch_up(m, as->n - 1);
}

static int master_add_node(struct master *m, int rank, const struct msg_hello *h)
{
    struct master_nodes *ns = &m->nodes;
    bool joined = m->cfg.joined;
    if (!m->sched.place)
        return 0; /* master_prepare() failed: the run is ending, the agent got ABORT */
    if (rank < 0 || (!joined && rank >= m->cfg.nranks) || master__node_of_rank(m, rank) >= 0) {
        log_error("Unexpected HELLO from rank %d", rank);
        return -1;
    }
    struct agent a = {0};
    char *hostname = strdup(h->hostname);
    if (!hostname || master_reserve_node(m, rank) < 0 ||
        (joined && master_agent_init(&a, rank) < 0)) {
        free(hostname);
        master_agent_free(&a);
        if (!joined)
            return -1;
        master_refuse_node(m, rank, h->hostname);
        return 0;
    }
    struct node *n = &ns->at[ns->n];
    memset(n, 0, sizeof *n);
    n->rank = rank;
    n->host_rank = h->host_rank;
    n->hostname = hostname;
    n->state = NODE_WORKING;
    n->host = monitor_add_node(m->events.monitor, h->hostname, h->cpus, h->memory_mb, h->gpus);
    for (int k = 0; k < 2; k++) { /* an agent makes them before its HELLO */
        char path[PATH_MAX];
        struct stat st;
        taskio_rank_path(path, sizeof path, m->cfg.dag_path, k, rank);
        n->files_seen[k] = stat(path, &st) == 0; /* master_merge_stdio() */
        master__forward_own(&m->fwd, &st, n->files_seen[k], "a rank's output file");
    }
    master__sched_add_node(m, h);
    ns->of_rank[rank] = ns->n++;
    ns->cpus += h->cpus;
    ns->gpus += h->gpus;
    ns->working++;
    ns->none_since = 0;
    log_msg(joined ? PMC_LOG_INFO : PMC_LOG_DEBUG, "Rank %d on host %s%s: %u CPUs, %u GPUs, %lu MB",
            rank, h->hostname, joined ? " joined" : "", h->cpus, h->gpus,
            (unsigned long)h->memory_mb);
    if (joined)
        master_join_agent(m, rank, &a);
    return 0;
}

/* The working and leaving counts changed: with none of either left, the
 * wait for a new node starts (master_check_stop()). */
static void master_nodes_counted(struct master *m)
{
    struct master_nodes *ns = &m->nodes;
    if (ns->working == 0 && ns->leaving == 0 && ns->none_since == 0)
        ns->none_since = pmc_mono_s();
}

/* Node i takes no more work (LEAVING, or its link went without a BYE):
 * closed in placement, out of the totals. */
static void master_node_stops(struct master *m, int i)
{
    struct master_nodes *ns = &m->nodes;
    const struct placement_node *p = master__node_load(m, i);
    ns->cpus -= p->cpus;
    ns->gpus -= p->gpus;
    master__sched_close_node(m, i);
    ns->working--;
}

/* LEAVING from rank: it is sent nothing more; its queued tasks come back
 * unstarted (ECANCELED results), its running ones report, then its link
 * goes (PEER_LOST). */
static int master_handle_leaving(struct master *m, int rank)
{
    int i = master__node_index(m, rank, "LEAVING");
    if (i < 0)
        return -1;
    struct node *n = &m->nodes.at[i];
    if (n->state != NODE_WORKING)
        return 0;
    master_node_stops(m, i);
    n->state = NODE_LEAVING;
    m->nodes.left++;
    m->nodes.leaving++;
    log_info("Rank %d on host %s is leaving: it is sent nothing more", rank, n->hostname);
    return 0;
}

/* The link to rank is gone for good (PEER_LOST): after its BYE or LEAVING
 * it left, else it is lost.  Either way every task sent to it and not
 * reported back goes back to the ready queue without charging a try, and
 * nothing it sent later is applied. */
static int master_handle_peer_lost(struct master *m, int rank)
{
    int i = master__node_of_rank(m, rank);
    int k = rank >= 0 && (size_t)rank < m->agents.rank_cap ? m->agents.of_rank[rank] : -1;
    if (i < 0 || master__node_gone(m, i)) {
        log_debug("The link to rank %d is gone (it has no node, or its link went before)", rank);
        return 0;
    }
    struct node *n = &m->nodes.at[i];
    bool bye = k >= 0 && m->agents.at[k].said_bye, leaving = n->state == NODE_LEAVING;
    if (n->state == NODE_WORKING && !bye)
        master_node_stops(m, i);
    master__sched_close_node(m, i); /* after its BYE it stays in the totals */
    m->nodes.leaving -= leaving;
    n->state = bye || leaving ? NODE_LEFT : NODE_LOST;
    master_nodes_counted(m);
    uint32_t took = master__sched_take_back(m, i);
    if (n->state == NODE_LOST) {
        m->nodes.lost++;
        log_warn("Rank %d on host %s was lost: %u tasks requeued", rank, n->hostname, took);
    } else if (took > 0 || leaving) {
        log_msg(took ? PMC_LOG_WARN : PMC_LOG_INFO, "Rank %d on host %s left: %u tasks requeued",
                rank, n->hostname, took);
    }
    return 0;
}

/* BYE from rank: its agent is done.  Joined, a BYE of a node that was
 * refused is ignored. */
static int master_handle_bye(struct master *m, int rank)
{
    int k = rank >= 0 && (size_t)rank < m->agents.rank_cap ? m->agents.of_rank[rank] : -1;
    if (k >= 0)
        m->agents.at[k].said_bye = true;
    return k >= 0 || m->cfg.joined ? 0 : -1;
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

/* Can the run start: every agent said HELLO, or (joined) cfg.min_hosts
 * nodes are working? */
static bool master_hellos_done(const struct master *m)
{
    if (!m->cfg.joined)
        return m->nodes.n >= m->cfg.nagents;
    return (uint32_t)m->nodes.working >= (m->cfg.min_hosts ? m->cfg.min_hosts : 1);
}

/* Wait until every agent said HELLO (at most HELLO_TIMEOUT_S), or, joined,
 * until cfg.min_hosts nodes work, however long (a signal still ends the
 * wait).  Mails past the last HELLO needed stay in the mailbox.  -1 on a
 * bad message, a time-out or a signal. */
static int master_wait_hellos(struct master *m)
{
    double deadline = pmc_mono_s() + HELLO_TIMEOUT_S;
    if (m->cfg.joined && !master_hellos_done(m))
        log_info("Waiting for %u nodes to join", m->cfg.min_hosts ? m->cfg.min_hosts : 1);
    while (!master_hellos_done(m) && !m->fatal) {
        struct mail *ml = mailbox_pop(&m->box);
        if (ml) {
            master_handle_mail(m, ml);
            mail_free(ml);
            continue;
        }
        if (!m->cfg.joined && pmc_mono_s() > deadline) {
            log_fatal("Only %d of %d node agents registered within %.0f seconds", m->nodes.n,
                      m->cfg.nagents, HELLO_TIMEOUT_S);
            return -1;
        }
        if (atomic_load(&m->abort_requested))
            return -1;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
    return m->fatal ? -1 : 0;
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
        rc = master__handle_results(m, ml, &r);
    } else if (r.kind == MSG_STARTED) {
        rc = master__handle_started(m, ml, &r);
    } else if (r.kind == MSG_RECALL) {
        rc = master__handle_recall(m, ml, &r);
    } else if (r.kind == MSG_BYE) {
        rc = master_handle_bye(m, ml->peer);
    } else if (r.kind == MSG_PEER_LOST) {
        rc = master_handle_peer_lost(m, ml->peer);
    } else if (r.kind == MSG_LEAVING) {
        rc = master_handle_leaving(m, ml->peer);
    } else if (r.kind == MSG_ABORT) {
        log_error("Rank %d cannot go on", ml->peer);
        rc = -1;
    } else if (r.kind == MSG_LOST) { /* an ABORT whose node's output is lost */
        int i = master__node_index(m, ml->peer, "LOST");
        log_error("Rank %d cannot go on: its task output may be lost", ml->peer);
        if (i >= 0)
            m->nodes.at[i].output_lost = true;
        rc = -1;
    } else {
        log_error("Unexpected message kind %u from rank %d", r.kind, ml->peer);
    }
    if (rc < 0)
        master__fail(m);
}

/* The mailbox, then the local link: the agent queues its events before
 * the BYE that follows them (local_link.h). */
static void master_drain(struct master *m)
{
    struct mail *ml;
    while ((ml = mailbox_pop(&m->box)) != NULL) {
        master_handle_mail(m, ml);
        mail_free(ml);
    }
    master__drain_local(m);
}

/* ---- the main loop ------------------------------------------------------ */

void master_request_abort(struct master *m, const char *reason)
{
    atomic_store(&m->abort_reason, reason);
    atomic_store(&m->abort_requested, 1);
    mailbox_wake(&m->box);
}

/* Joined: how long (s) the run waits for a node once every one is lost. */
static double master_all_lost_wait(const struct master *m)
{
    return ALL_LOST_WAIT_TIMEOUTS * fmax(m->cfg.node_timeout_s, 0);
}

/* CLOCK_MONOTONIC s the wait for a new node ends; 0: no wait (a node
 * works or is still leaving, or not joined). */
static double master_all_lost_at(const struct master *m)
{
    if (!m->cfg.joined || m->nodes.none_since == 0)
        return 0;
    return m->nodes.none_since + master_all_lost_wait(m);
}

/* Joined: every node is gone and none joined in time. */
static bool master_all_lost(const struct master *m)
{
    double at = master_all_lost_at(m);
    return at > 0 && pmc_mono_s() >= at;
}

static void master_check_stop(struct master *m)
{
    const struct master_clock *c = &m->clock;
    if (m->cfg.max_wall_time > 0 && pmc_mono_s() - c->wall_start >= m->cfg.max_wall_time &&
        !master__aborting(m)) {
        log_error("Max wall time of %.3f minutes reached", m->cfg.max_wall_time / 60.0);
        master__raise(m, PHASE_ABORT);
    }
    if (c->stop_mono > 0 && pmc_mono_s() >= c->stop_mono && !master__aborting(m)) {
        log_error("Stopping before the batch job's end (%s)", m->cfg.stop_reason);
        master__raise(m, PHASE_ABORT);
    }
    if (master_all_lost(m) && !master__aborting(m)) {
        log_fatal("Every node was lost and none joined within %g s (%d x --node-timeout): the "
                  "run ends",
                  master_all_lost_wait(m), ALL_LOST_WAIT_TIMEOUTS);
        master__fail(m);
    }
    if (atomic_load(&m->abort_requested) && !master__aborting(m)) {
        log_error("Caught signal: %s", atomic_load(&m->abort_reason));
        master__raise(m, PHASE_ABORT);
    }
    const char *rescue_error = master__rescue_error(&m->rescue);
    if (rescue_error && !m->fatal) {
        log_fatal("Rescue log failed: %s", rescue_error);
        master__fail(m);
    }
    if (m->fatal)
        master__raise(m, PHASE_ABORT);
}

/* Agent k's node, or -1 when it has none (an MPI agent that never said
 * HELLO). */
static int master_agent_node(const struct master *m, int k)
{
    return master__node_of_rank(m, m->agents.at[k].rank);
}

/* Every agent said BYE, or its link is gone (a joined node lost or left). */
static bool master_all_bye(const struct master *m)
{
    for (int k = 0; k < m->agents.n; k++) {
        int i = master_agent_node(m, k);
        if (!m->agents.at[k].said_bye && (i < 0 || !master__node_gone(m, i)))
            return false;
    }
    return true;
}

/* Over when nothing runs and nothing more will be sent; or, once ABORT
 * went out, when every agent said BYE: no result can come after its BYE,
 * so tasks still counted in flight were lost with a message that could
 * not be built or sent (they are not DONE: a restart runs them). */
static bool master_finished(const struct master *m)
{
    if (master__inflight(m) == 0 && (!master__dispatching(m) || master__ready_count(m) == 0))
        return true;
    return m->phase == PHASE_ABORT_SENT && master_all_bye(m);
}

/* Until the next stop condition (wall time, the batch job's end) or a due
 * recall, at most IDLE_WAIT_US.  Once the run is stopping they are behind it: a stop time
 * that has passed would otherwise give 0, a busy loop for as long as the
 * stopped tasks take to end (their kill grace). */
static long master_wait_us(const struct master *m)
{
    const struct master_clock *c = &m->clock;
    double now = pmc_mono_s(), left = IDLE_WAIT_US / 1e6, recall_at = master__recall_at(m);
    if (master__aborting(m))
        return IDLE_WAIT_US;
    if (m->cfg.max_wall_time > 0 && c->wall_start + m->cfg.max_wall_time - now < left)
        left = c->wall_start + m->cfg.max_wall_time - now;
    if (c->stop_mono > 0 && c->stop_mono - now < left)
        left = c->stop_mono - now;
    if (recall_at > 0 && recall_at - now < left)
        left = recall_at - now;
    double lost_at = master_all_lost_at(m);
    if (lost_at > 0 && lost_at - now < left)
        left = lost_at - now;
    return left <= 0 ? 0 : (long)(left * 1e6) + 1;
}

/* Send ABORT, DRAIN or SHUTDOWN to every agent, registered or not, but
 * those whose node is leaving or gone (the mails built beforehand; each
 * goes out at most once).  Joined nodes that register later get it at
 * once (master_agent_catch_up()). */
static void master_broadcast(struct master *m, enum msg_kind kind)
{
    int j = kind == MSG_ABORT ? CTL_ABORT : kind == MSG_DRAIN ? CTL_DRAIN : CTL_SHUTDOWN;
    m->agents.sent |= 1u << j;
    for (int k = 0; k < m->agents.n; k++) {
        int i = master_agent_node(m, k);
        if (i < 0 || m->nodes.at[i].state == NODE_WORKING)
            master_agent_send(m, k, j);
    }
}

bool master_step(struct master *m)
{
    master_drain(m);
    master_check_stop(m);
    if (m->phase == PHASE_ABORT) {
        master_broadcast(m, MSG_ABORT);
        m->phase = PHASE_ABORT_SENT;
    }
    if (m->phase == PHASE_STOP) {
        /* -m reached: tasks queued at nodes come back unstarted */
        master_broadcast(m, MSG_DRAIN);
        m->phase = PHASE_STOP_SENT;
    }
    master__dispatch(m);
    master__recall(m);
    if (master_finished(m))
        return true;
    monitor_flush(m->events.monitor);
    master__status_tick(m);
    return false;
}

/* SHUTDOWN (ABORT was already sent when aborting) and wait for every BYE
 * (a joined node whose link goes meanwhile counts as gone; one that joins
 * meanwhile is sent SHUTDOWN and waited for); late results are still
 * applied. */
static void master_shutdown_agents(struct master *m)
{
    if (!master__aborting(m)) {
        master_broadcast(m, MSG_SHUTDOWN);
    } else if (m->phase == PHASE_ABORT) {
        master_broadcast(m, MSG_ABORT);
        m->phase = PHASE_ABORT_SENT;
    }
    while (!master_all_bye(m)) {
        master_drain(m);
        if (master_all_bye(m))
            break;
        mailbox_wait(&m->box, IDLE_WAIT_US);
    }
}

/* The node table and the scheduler's per-node state, for cfg.nranks nodes
 * (joined: none yet, they grow): -1 with ENOMEM, none kept (HELLOs that
 * come while ending are then ignored). */
static int master_prepare(struct master *m)
{
    struct master_nodes *ns = &m->nodes;
    size_t nr = (size_t)m->cfg.nranks;
    if (rank_map_grow(&ns->of_rank, &ns->rank_cap, nr) < 0 ||
        pmc_grow((void **)&ns->at, &ns->cap, nr, sizeof *ns->at) < 0 ||
        master__sched_prepare(m) < 0) {
        free(ns->at);
        free(ns->of_rank);
        ns->at = NULL;
        ns->of_rank = NULL;
        ns->cap = ns->rank_cap = 0;
        return -1;
    }
    return 0;
}

/* The run cannot start: ABORT every agent. */
static int master_abort_start(struct master *m)
{
    master__fail(m);
    master_broadcast(m, MSG_ABORT);
    m->phase = PHASE_ABORT_SENT;
    return -1;
}

int master_begin(struct master *m, struct comm *c)
{
    struct master_clock *t = &m->clock;
    m->comm = c;
    t->start = pmc_epoch_s();
    t->start_mono = pmc_mono_s();
    t->wall_start = m->cfg.wall_start_mono > 0 ? m->cfg.wall_start_mono : t->start_mono;
    if (m->cfg.stop_at > 0) /* past even the clock's zero (before boot): stop at once */
        t->stop_mono = fmax(t->start_mono + (m->cfg.stop_at - t->start), 1e-9);
    if (master_prepare(m) < 0) {
        log_fatal("Cannot start the master: out of memory");
        return master_abort_start(m);
    }
    if (master_wait_hellos(m) < 0 || master__check_capable(m) < 0 ||
        master__rescue_start(&m->rescue, &m->cfg, m->dag) < 0 || master__init_ready(m) < 0)
        return master_abort_start(m);
    monitor_flush(m->events.monitor); /* the resource log's first lines: everything free */
    log_info("Starting workflow with %u tasks (%u done before) on %d hosts, %u CPUs",
             m->dag->ntasks, m->rescue.ndone_before, m->nodes.working, m->nodes.cpus);
    return 0;
}

int master_fail_at_start(struct master *m)
{
    m->clock.start = pmc_epoch_s();
    m->clock.start_mono = pmc_mono_s();
    master__fail(m);
    master__raise(m, PHASE_ABORT);
    master__finish(m);
    master__rescue_unlock(&m->rescue); /* as it was: none if there was none */
    return 1;
}

int master_end(struct master *m)
{
    if (m->comm)
        master_shutdown_agents(m);
    if (master__inflight(m) > 0)
        log_error("%u tasks were in flight when the run ended (their results were lost with "
                  "a message that could not be sent); a restart runs them again",
                  master__inflight(m));
    return master__finish(m);
}

int master_run(struct master *m, struct comm *c)
{
    uint64_t cpu0 = pmc_thread_cpu_ns();
    if (master_begin(m, c) == 0)
        while (!master_step(m))
            mailbox_wait_spin(&m->box, master_wait_us(m), &m->spin);
    int rc = master_end(m);
    m->clock.run_cpu_ns = pmc_thread_cpu_ns() - cpu0;
    return rc;
}

void master_get_cpu(const struct master *m, struct master_cpu *out)
{
    out->run_ns = m->clock.run_cpu_ns;
    out->rescue_writer_ns = m->rescue.writer_cpu_ns;
}

void master_destroy(struct master *m)
{
    if (!m)
        return;
    master__rescue_free(&m->rescue); /* the writer first */
    for (int i = 0; i < m->nodes.n; i++) {
        free(m->nodes.at[i].hostname);
        free(m->nodes.at[i].requeued_ids);
        msg_free(&m->nodes.at[i].tasks);
    }
    free(m->nodes.at);
    free(m->nodes.of_rank);
    master__sched_free(m);
    for (int k = 0; k < m->agents.n; k++)
        master_agent_free(&m->agents.at[k]);
    free(m->agents.at);
    free(m->agents.of_rank);
    dag_destroy(m->dag);
    if (m->box.efd >= 0)
        mailbox_destroy(&m->box);
    master__forward_free(&m->fwd);
    master__events_free(&m->events);
    master__status_free(m);
    master__output_free(&m->out);
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    free(m);
}
