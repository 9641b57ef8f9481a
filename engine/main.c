/* main.c - pmc-hybrid: run a DAG of tasks on one machine or many MPI ranks.
 *
 * Only wires the subsystems together (STYLE.md): options, the transport's
 * start-up and the host split (engine/transport/transport.h: every MPI call lives
 * there), the master (rank 0), this rank's node agent, the message transport;
 * then tears them down in reverse.  This is the only file that decides the
 * process exit status: 0 when every task succeeded, 1 otherwise.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine/host/affinity.h"
#include "engine/node/agent.h"
#include "engine/host/batchend.h"
#include "engine/transport/comm.h"
#include "engine/transport/comm_join.h"
#include "engine/transport/join.h"
#include "engine/transport/doorbell.h"
#include "engine/host/gpus.h"
#include "engine/hostscript.h"
#include "engine/exec/launcher.h"
#include "engine/transport/local_link.h"
#include "engine/master/master.h"
#include "engine/options.h"
#include "engine/exec/spawn.h"
#include "engine/host/topology.h"
#include "engine/transport/transport.h"
#include "io/clock.h"
#include "io/fdio.h"
#include "io/log.h"
#include "io/taskio.h"
#include "sched/hosts.h"

struct rank_info {
    int rank, size;
    int host_rank, host_ranks; /* among the ranks of this host (same host name) */
    int *leaders;              /* size entries, until the plan is made: transport_place() */
    uint64_t job_key;          /* names the job's doorbells: transport_place() */
    uint8_t role;              /* RANK_MASTER | RANK_AGENT bits, 0 = idle */
    int host_agent;            /* the rank of this host's agent (PMC's "Worker N") */
    unsigned char *local;      /* size entries, or NULL: this rank's MPI peers on its host */
    bool all_local;            /* every peer of this rank is on its host */
    struct doorbell bell;      /* this rank's doorbell (fd -1: none), until the comm takes it */
    struct host_plan plan;
    struct gpu_ids gpus; /* this host's GPUs, found by its agent rank */
    char hostname[256];
};

#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer builds: libzmq and libsodium (the join link) are not
 * instrumented, so ZeroMQ's hand-off of a message between its I/O thread
 * and ours (a lock-free pipe) shows as a race on the memcpy it calls and
 * on our read of the message; interceptors called from them are ignored,
 * as in tests/unit/test_join.cc.  Our own code stays checked. */
const char *__tsan_default_suppressions(void);
const char *__tsan_default_suppressions(void)
{
    return "called_from_lib:libzmq.so\ncalled_from_lib:libsodium.so\n";
}
#endif

static double main_start_mono; /* when main() began: --max-wall-time counts from it */
static struct master *volatile signal_master;
static struct agent *volatile signal_agent; /* a joined agent (--join): signals make it leave */
static volatile sig_atomic_t caught_signal; /* the last stop signal (below); 0: none */
static bool hangup_ignored; /* SIGHUP was ignored when we started (nohup): it stays so */

static double wall_deadline; /* CLOCK_MONOTONIC s of --max-wall-time's end; 0: none */

/* The host script must stop: a signal came (on any rank: hydra forwards
 * mpiexec's to every rank), or the wall time is over. */
static bool host_script_must_stop(void)
{
    return caught_signal != 0 || (wall_deadline > 0 && pmc_mono_s() >= wall_deadline);
}

static const char *signal_name(int sig)
{
    return sig == SIGTERM   ? "SIGTERM"
           : sig == SIGINT  ? "SIGINT"
           : sig == SIGUSR1 ? "SIGUSR1"
           : sig == SIGHUP  ? "SIGHUP"
                            : "signal";
}

static void on_signal(int sig)
{
    int saved = errno;
    caught_signal = sig;
    struct master *m = signal_master;
    if (m)
        master_request_abort(m, signal_name(sig));
    struct agent *a = signal_agent;
    if (a)
        agent_leave(a);
    errno = saved;
}

/* A joined agent's --max-wall-time or batch job's end (SIGALRM). */
static void on_alarm(int sig)
{
    (void)sig;
    int saved = errno;
    struct agent *a = signal_agent;
    if (a)
        agent_leave(a);
    errno = saved;
}

/* Does argv ask for the join link (--listen, --join, or an abbreviation
 * getopt_long takes)?  Then MPI is never started, whatever launched us:
 * the agents of one srun step must not be one MPI job, which dies with any
 * of its ranks.  Stops at "--". */
static bool argv_names_join_link(int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        size_t n = strcspn(argv[i], "=");
        if (n > 3 && (strncmp(argv[i], "--join", n) == 0 || strncmp(argv[i], "--listen", n) == 0))
            return true;
    }
    return false;
}

static int standard_fds_errno; /* open_standard_fds() could not open /dev/null */

/* Descriptors 0, 1 and 2 valid (fdio_standard_fds()) before anything opens a
 * file: run with stdout closed, the DAG's lock took descriptor 1 and the
 * tasks' output went into the DAG file.  main() reports a failure. */
static void open_standard_fds(void)
{
    if (fdio_standard_fds() < 0)
        standard_fds_errno = errno;
}

/* Was SIGHUP ignored when the process started (nohup)? */
static void read_hangup_disposition(void)
{
    struct sigaction hup;
    hangup_ignored = sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler == SIG_IGN;
}

/* From the executable's DT_PREINIT_ARRAY, which runs before any shared
 * library's constructor: UCX's (libucs) installs a SIGHUP handler of its
 * own there, whatever the disposition was, and MPI's, UCX's or hwloc's may
 * open a file (it must not become stdout). */
static void at_preinit(int argc, char **argv, char **envp)
{
    (void)argc, (void)argv, (void)envp;
    open_standard_fds();
    read_hangup_disposition();
}
typedef void (*preinit_fn)(int argc, char **argv, char **envp);
__attribute__((section(".preinit_array"), used)) static const preinit_fn preinit_first = at_preinit;

/* Catch sig with fn, restarting interrupted calls. */
static void set_handler(int sig, void (*fn)(int))
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

/* Rank 0 asks the master to abort; other ranks ignore the batch system's
 * signals and wait for the master's ABORT (a dying rank would take the whole
 * MPI job, rescue log flush included, down with it).  The stop signals:
 * SIGTERM, SIGINT, SIGUSR1, and SIGHUP (a closed terminal) unless it was
 * ignored at start (nohup: then it is ignored again).  Installed after
 * MPI's start, so they replace UCX's SIGHUP handler (UCX_DEBUG_SIGNO,
 * installed as libucs loads: the run went on past a SIGHUP). */
static void install_signal_handlers(void)
{
    set_handler(SIGTERM, on_signal);
    set_handler(SIGINT, on_signal);
    set_handler(SIGUSR1, on_signal);
    if (hangup_ignored)
        signal(SIGHUP, SIG_IGN); /* as nohup left it, before UCX's handler */
    else
        set_handler(SIGHUP, on_signal);
    signal(SIGPIPE, SIG_IGN); /* also first thing in main(), with SIGXFSZ */
    spawn_note_signals();     /* the tasks get these three back as SIG_DFL */
}

static void print_version(void)
{
    printf("pmc-hybrid %s\n", PMC_VERSION);
    printf("Compiler: %s\n", __VERSION__);
    printf("MPI library: %s\n", transport_library_version());
}

/* Where this rank runs: its host name, its place among the ranks of its
 * host, and the lowest rank of every rank's host, which the role plan
 * needs (a collective).  -1 when this rank is out of memory (the caller
 * aborts the job). */
static int rank_info_init(struct rank_info *ri)
{
    memset(ri, 0, sizeof *ri);
    if (gethostname(ri->hostname, sizeof ri->hostname) < 0)
        strcpy(ri->hostname, "localhost");
    ri->hostname[sizeof ri->hostname - 1] = '\0';
    struct transport_place p;
    int rc = transport_place(ri->hostname, &p);
    ri->rank = p.rank;
    if (rc < 0)
        return -1;
    ri->size = p.size;
    ri->host_rank = p.host_rank;
    ri->host_ranks = p.host_ranks;
    ri->leaders = p.leaders;
    ri->job_key = p.job_key;
    ri->bell.fd = -1;
    return 0;
}

/* This rank's doorbell, when it has MPI peers on its own host (PMC's one
 * rank per core, --ranks-are-hosts on one machine): bound now, before the
 * collectives that precede the first message, so a peer's first ring finds
 * it.  Without one (out of memory, a name taken) the rank polls for its
 * messages, as with peers on other hosts.  Needs ri->leaders. */
static void rank_open_doorbell(struct rank_info *ri)
{
    if (ri->role == RANK_IDLE || ri->size < 2)
        return;
    ri->local = malloc((size_t)ri->size);
    if (!ri->local) {
        log_warn("rank %d: out of memory for its doorbell: polling for MPI messages instead",
                 ri->rank);
        return;
    }
    if (host_local_peers(&ri->plan, ri->leaders, ri->rank, ri->local, &ri->all_local) == 0) {
        free(ri->local);
        ri->local = NULL;
        return;
    }
    struct pmc_error err;
    if (doorbell_open(&ri->bell, ri->job_key, ri->rank, &err) < 0) {
        /* info, not a warning: messages still arrive, polled for (a
         * container may forbid UNIX sockets) */
        log_info("%s: polling for MPI messages instead", err.text);
        free(ri->local);
        ri->local = NULL;
    }
}

/* Free what rank_info_init() and rank_plan_roles() made. */
static void rank_info_free(struct rank_info *ri)
{
    host_plan_free(&ri->plan);
    free(ri->local);
    ri->local = NULL;
    doorbell_close(&ri->bell);
}

/* Every rank's role, from the leaders rank_info_init() found (every rank
 * computes the same plan).  -1 when this rank is out of memory (the caller
 * aborts the job). */
static int rank_plan_roles(struct rank_info *ri, const struct options *o)
{
    bool master_only = o->master_only || o->listen_path; /* --listen: agents join instead */
    int rc = host_plan_make(ri->leaders, ri->size, o->ranks_are_hosts, master_only, &ri->plan);
    if (rc == 0) {
        ri->role = ri->plan.role[ri->rank];
        ri->host_agent = ri->rank;
        for (int r = 0; r < ri->size && !o->ranks_are_hosts; r++)
            if (ri->leaders[r] == ri->leaders[ri->rank] && (ri->plan.role[r] & RANK_AGENT)) {
                ri->host_agent = r;
                break;
            }
        rank_open_doorbell(ri);
    }
    free(ri->leaders);
    ri->leaders = NULL;
    if (rc < 0)
        return -1;
    if (o->ranks_are_hosts && ri->size > 1) {
        size_t n = strlen(ri->hostname);
        snprintf(ri->hostname + n, sizeof ri->hostname - n, ":%d", ri->rank);
    }
    return 0;
}

/* Rank 0 says once how the launch shape maps to roles when it is not the
 * intended one rank per host, and (-v) when it runs without MPI. */
static void log_plan(const struct rank_info *ri)
{
    const struct host_plan *p = &ri->plan;
    if (transport_without_mpi())
        log_debug("Not started by an MPI launcher: one rank, MPI not initialised (PMC_MPI=1 "
                  "asks for it)");
    if (ri->rank != 0 || p->crowded_hosts == 0)
        return;
    char idle[64] = "";
    if (p->idle_ranks > 0)
        snprintf(idle, sizeof idle, ", the other %d ranks wait idle", p->idle_ranks);
    log_info("%d of %d hosts have more than one MPI rank (up to %d): one rank per host runs its "
             "tasks with all of the host's CPUs and memory (rank 0 is the master only)%s; launch "
             "one rank per host (mpiexec -ppn 1)",
             p->crowded_hosts, p->nhosts, p->max_ranks_per_host, idle);
}

static void program_path(char *buf, size_t size, const char *argv0)
{
    ssize_t n = readlink("/proc/self/exe", buf, size - 1);
    if (n > 0) {
        buf[n] = '\0';
        return;
    }
    snprintf(buf, size, "%s", argv0);
}

/* The host's CPUs and memory (MB): detected, or --host-cpus/--host-memory.
 * The host's agent offers all of it (docs/design.md section 1).
 * *usable_cpus: the CPUs this process may run on (its affinity, within the
 * detected ones), whatever the options. */
static void host_resources(const struct options *o, uint32_t *cpus, uint64_t *memory_mb,
                           uint32_t *usable_cpus)
{
    uint32_t host_cpus;
    uint64_t host_mem;
    if (topology_detect(&host_cpus, &host_mem) < 0)
        log_debug("hwloc could not load the topology; using sysconf");
    uint32_t bound = topology_affinity_cpus();
    *usable_cpus = bound && bound < host_cpus ? bound : host_cpus;
    if (o->host_cpus)
        host_cpus = o->host_cpus;
    if (o->host_memory)
        host_mem = o->host_memory;
    *cpus = host_cpus;
    *memory_mb = host_mem;
}

/* Parse options on every rank (they all see the same argv); only rank 0
 * talks.  Returns -1 to exit 1, 1 to exit 0 (help/version), 0 to run. */
static int setup_options(struct options *o, int argc, char **argv, int rank)
{
    struct pmc_error err;
    if (options_parse(o, argc, argv, &err) < 0) {
        if (rank == 0)
            fprintf(stderr, "pmc-hybrid: %s\nTry 'pmc-hybrid --help' for more information.\n",
                    err.text);
        return -1;
    }
    if (o->help || o->version) {
        if (rank != 0)
            return 1;
        o->help ? fputs(options_usage(), stdout) : print_version();
        if (fflush(stdout) == 0 && !ferror(stdout))
            return 1;
        fprintf(stderr, "pmc-hybrid: writing to stdout failed: %s\n", strerror(errno));
        return -1; /* SIGPIPE is ignored: a closed pipe is said, not silent */
    }
    log_set_level(PMC_LOG_INFO + o->verbosity);
    return 0;
}

/* Without --max-wall-time, the batch job's end less --drain-margin (rank 0
 * only).  Sets *stop_at (epoch s; 0: none) and reason (static).  -1 on a
 * malformed batch variable (printed). */
static int batch_stop(const struct options *o, double *stop_at, const char **reason)
{
    static char text[256];
    struct batchend be;
    struct pmc_error err;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    double now = (double)ts.tv_sec + ts.tv_nsec / 1e9;
    *stop_at = 0;
    *reason = NULL;
    if (o->max_wall_time > 0)
        return 0;
    int rc = batchend_discover(now, &be, &err);
    if (rc < 0) {
        fprintf(stderr, "pmc-hybrid: %s\n", err.text);
        return -1;
    }
    if (be.ignored[0]) /* a past end: the run would stop before it began */
        log_warn("Ignoring the batch job's end: %s (give --max-wall-time to stop in time)",
                 be.ignored);
    if (be.note[0])
        log_debug("Batch job's end: %s", be.note);
    if (rc == 0)
        return 0;
    *stop_at = be.end_epoch - o->drain_margin;
    snprintf(text, sizeof text, "%s: the job ends in %.0f s, --drain-margin %.0f s", be.source,
             be.end_epoch - now, o->drain_margin);
    *reason = text;
    log_info("Stopping %.0f s from now, before the batch job's end (%s)", *stop_at - now, text);
    return 0;
}

/* Rank 0 loads the DAG and the rescue log and opens every output; everyone
 * learns whether it worked.  -1: exit 1 (the master printed why). */
static int setup_master(const struct options *o, const struct rank_info *ri, const char *program,
                        struct master **mp)
{
    int ok = 1;
    double stop_at = 0;
    const char *stop_reason = NULL;
    if (ri->rank == 0 && batch_stop(o, &stop_at, &stop_reason) < 0)
        ok = 0;
    int *agent_ranks = ri->rank == 0 && ok ? malloc(sizeof(int) * (size_t)ri->size) : NULL;
    if (ri->rank == 0 && ok && !agent_ranks) {
        fprintf(stderr, "pmc-hybrid: out of memory\n");
        ok = 0;
    }
    for (int r = 0, k = 0; agent_ranks && r < ri->size; r++)
        if (ri->plan.role[r] & RANK_AGENT)
            agent_ranks[k++] = r;
    if (ri->rank == 0 && ok) {
        struct master_config mc = {.dag_path = o->dag_path,
                                   .rescue_path = o->rescue_path,
                                   .skip_rescue = o->skip_rescue,
                                   .out_path = o->out_path,
                                   .err_path = o->err_path,
                                   .max_failures = o->max_failures,
                                   .tries = o->tries,
                                   .max_wall_time = o->max_wall_time * 60.0,
                                   .wall_start_mono = main_start_mono,
                                   .program = program,
                                   .nranks = o->listen_path ? 0 : ri->size,
                                   .nagents = o->listen_path ? 0 : ri->plan.nagents,
                                   .agent_ranks = agent_ranks,
                                   .null_executor = o->null_executor,
                                   .per_task_stdio = o->per_task_stdio,
                                   .nolock = o->nolock,
                                   .maxfds = o->maxfds,
                                   .jobstate_log = o->jobstate_log,
                                   .dagman_log = o->monitord_hack,
                                   .resource_log = !o->no_resource_log,
                                   .progress = o->progress < 0 ? isatty(2) : o->progress,
                                   .status_path = o->status_path,
                                   .summary_json_path = o->summary_json_path,
                                   .mpi_library = transport_library_version(),
                                   .task_time_limit = o->task_time_limit,
                                   .stop_at = stop_at,
                                   .stop_reason = stop_reason,
                                   .joined = o->listen_path != NULL,
                                   .min_hosts = o->min_hosts ? o->min_hosts : 1,
                                   .node_timeout_s =
                                       o->node_timeout ? o->node_timeout : JOIN_TIMEOUT_S_DEFAULT};
        struct pmc_error err;
        *mp = master_create(&mc, &err);
        if (*mp && o->per_task_stdio &&
            taskio_check_per_task_names(master_dag(*mp), o->dag_path, &err) < 0) {
            master_destroy(*mp); /* before any output is opened: nothing changed */
            *mp = NULL;
        }
        if (!*mp) {
            fprintf(stderr, "pmc-hybrid: %s\n", err.text);
            ok = 0;
        } else if (master_open_outputs(*mp) < 0) {
            master_fail_at_start(*mp);
            ok = 0;
        }
    }
    free(agent_ranks);
    return transport_bcast_int(ok) ? 0 : -1;
}

/* The node agent of this rank's host, when this rank is that agent.  NULL
 * when it is not, or when the agent cannot start (logged; *failed set). */
static struct agent *setup_agent(const struct options *o, struct rank_info *ri, int *failed)
{
    if (!(ri->role & RANK_AGENT))
        return NULL;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->dag_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    /* --ranks-are-hosts on one machine: keep the ranks' CPU bindings apart */
    bool split = o->ranks_are_hosts;
    struct agent_config ac = {.rank = ri->rank,
                              .host_rank = 0,
                              .host_ranks = ri->host_ranks,
                              .pu_share = split ? ri->host_rank : 0,
                              .pu_shares = split ? ri->host_ranks : 1,
                              .hostname = ri->hostname,
                              .dag_path = o->dag_path,
                              .null_executor = o->null_executor,
                              .per_task_stdio = o->per_task_stdio,
                              .task_records_failed = o->task_records_failed,
                              .task_dir = slash ? dir : ".",
                              .set_affinity = o->set_affinity,
                              .keep_affinity = o->keep_affinity,
                              .strict_limits = o->strict_limits};
    uint32_t usable_cpus;
    host_resources(o, &ac.cpus, &ac.memory_mb, &usable_cpus);
    struct pmc_error err;
    /* before any task: a TMPDIR that cannot hold the capture files failed
     * every task with a message that did not name it */
    if (!o->null_executor && taskio_check_capture_dir(&err) < 0) {
        log_fatal("Rank %d: %s", ri->rank, err.text);
        *failed = 1;
        return NULL;
    }
    if (gpus_discover(o->host_gpus_set, o->host_gpus, &ri->gpus, &err) < 0) {
        log_fatal("%s", err.text);
        *failed = 1;
        return NULL;
    }
    if (ri->gpus.n)
        log_info("%s: %u GPUs (%s)", ri->hostname, ri->gpus.n, ri->gpus.source);
    ac.gpus = &ri->gpus;
    ac.thread_env = !o->no_thread_env;
    ac.kill_grace_ms = (uint32_t)(o->kill_grace * 1000.0 + 0.5);
    /* the pool is sized from the CPUs that can run it as well as the
     * node's: --host-cpus 16 on a 2-CPU machine (tests, benchmarks) gets
     * launchers to spare, 17, not the 8 of a 16-CPU node, and a rank bound
     * to one core with --keep-affinity none (without it,
     * affinity_reset_inherited() has widened that binding to every CPU
     * already, as PMC does) */
    ac.launch_threads =
        o->launch_threads_set ? o->launch_threads : launcher_default_threads(ac.cpus, usable_cpus);
    /* with more tasks in flight than CPUs a task's turnaround through the
     * agent is hidden already, and staging only adds work */
    ac.stage_launches = ac.cpus <= usable_cpus && !o->set_affinity;
    struct agent *a = agent_create(&ac, &err);
    if (!a) {
        log_fatal("%s", err.text);
        *failed = 1;
    }
    return a;
}

/* Before any task: the agent of every host is ready (its output files are
 * open) and, with --host-script, the host's first rank ran the script.
 * Every rank learns whether all of them succeeded (a collective: no task
 * starts anywhere before every host is ready).  Returns 0 when all did. */
static int setup_hosts(const struct options *o, struct rank_info *ri, struct agent **ap,
                       pid_t *pgid)
{
    int failed = 0;
    *pgid = 0;
    *ap = setup_agent(o, ri, &failed);
    if (!failed && o->host_script && ri->host_rank == 0 && !o->listen_path) {
        struct pmc_error err;
        wall_deadline = o->max_wall_time > 0 ? main_start_mono + o->max_wall_time * 60.0 : 0;
        if (hostscript_run(o->host_script, ri->host_agent, pgid, host_script_must_stop, &err) < 0) {
            if (caught_signal)
                log_error("Caught signal: %s", signal_name(caught_signal));
            else if (host_script_must_stop())
                log_error("Max wall time of %.3f minutes reached", o->max_wall_time);
            log_error("%s", err.text);
            failed = 1;
        }
    }
    return transport_max_int(failed) ? -1 : 0;
}

/* What the engine's own threads cost, for users sizing a node and for
 * bench/run: the master's run (start-up and parse excluded), the rescue
 * writer, the node agent with its CPU per task (the agent is the one
 * thread every task passes through: its CPU per task bounds what one node
 * can start), and the launchers.  INFO on rank 0, DEBUG on the others. */
static void report_engine_cpu(const struct master *m, const struct agent *a, int rank)
{
    struct agent_cpu ac = {0};
    if (a)
        agent_get_cpu(a, &ac);
    char agent_part[256] = "no node agent";
    if (a)
        snprintf(
            agent_part, sizeof agent_part,
            "node agent %.3f ms (%.1f us per task, %lu tasks), launchers %.3f ms (%u threads), "
            "%lu staged starts, %lu waited for by their launcher",
            ac.agent_ns / 1e6, ac.tasks ? ac.agent_ns / 1e3 / ac.tasks : 0.0,
            (unsigned long)ac.tasks, ac.launchers_ns / 1e6, ac.launch_threads,
            (unsigned long)ac.staged_starts, (unsigned long)ac.own_waits);
    if (m) {
        struct master_cpu mc;
        master_get_cpu(m, &mc);
        log_info("Engine CPU: master %.3f ms, rescue writer %.3f ms, %s", mc.run_ns / 1e6,
                 mc.rescue_writer_ns / 1e6, agent_part);
    } else {
        log_debug("Rank %d engine CPU: %s", rank, agent_part);
    }
}

/* --listen: bind the join link, write the access file, and run comm.h
 * over it for m (docs/join.md).  NULL with err. */
static struct comm *listen_for_agents(const struct options *o, struct master *m,
                                      struct pmc_error *err)
{
    char dag_abs[PATH_MAX], run[PATH_MAX + 64];
    if (!realpath(o->dag_path, dag_abs)) {
        pmc_errorf(err, "%s: %s", o->dag_path, strerror(errno));
        return NULL;
    }
    int len = options_describe_run(o, dag_abs, run, sizeof run);
    struct join_options jo = {.bind = o->listen_address,
                              .timeout_s = o->node_timeout,
                              .heartbeat_s = o->node_timeout / 5};
    struct join *j = len < 0 ? NULL : join_listen(o->listen_path, &jo, err);
    if (len < 0)
        pmc_errorf(err, "%s: the DAG's path is too long for agents", dag_abs);
    if (!j)
        return NULL;
    if (join_set_welcome(j, run, (size_t)len) < 0) {
        join_close(j);
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    log_info("Listening for agents at %s: start them with pmc-hybrid --join %s", join_endpoint(j),
             o->listen_path);
    return comm_create_joined(j, 0, master_mailbox(m), NULL, err);
}

/* Start the transport and the agent, run, and tear down.  Idle ranks have
 * neither and go straight to transport_finalize(), which waits in MPICH's
 * process manager barrier (a blocking socket read: no CPU).  Returns the
 * exit status of this rank. */
static int run(const struct options *o, struct rank_info *ri, struct master *m, struct agent *a)
{
    if (!m && !a)
        return 0;
    struct pmc_error err;
    if (o->listen_path) {
        struct comm *c = listen_for_agents(o, m, &err);
        if (!c) {
            log_fatal("--listen %s: %s", o->listen_path, err.text);
            return master_fail_at_start(m);
        }
        int rc = master_run(m, c);
        report_engine_cpu(m, NULL, 0);
        comm_close(c);
        return rc;
    }
    struct local_link *link = NULL;
    if (m && a) { /* rank 0's own node: no messages (issue 10) */
        link = local_link_create(master_dag(m), agent_cpus(a), master_mailbox(m), agent_mailbox(a),
                                 &err);
        if (!link) {
            log_fatal("%s", err.text);
            transport_abort(1);
        }
        master_set_local_link(m, link);
        agent_set_local_link(a, link);
    }
    struct comm_doorbells bells = {
        .bell = ri->bell, .local = ri->local, .all_local = ri->all_local};
    ri->bell.fd = -1; /* the comm's now */
    struct comm *c = comm_create(ri->rank, ri->size, m ? master_mailbox(m) : NULL,
                                 a ? agent_mailbox(a) : NULL, ri->local ? &bells : NULL, &err);
    if (!c || (a && agent_start(a, c, &err) < 0)) {
        log_fatal("%s", err.text);
        transport_abort(1);
    }
    int rc = m ? master_run(m, c) : 0;
    if (a && agent_join(a) < 0 && ri->rank != 0)
        rc = 1;
    report_engine_cpu(m, a, ri->rank);
    comm_close(c);
    local_link_destroy(link);
    return rc;
}

/* A joined agent leaves at its --max-wall-time or before its batch job's
 * end less --drain-margin (SIGALRM). */
static void join_arm_stop(const struct options *o)
{
    double stop_at = 0, now = pmc_epoch_s();
    const char *reason;
    if (o->max_wall_time > 0)
        stop_at = now + o->max_wall_time * 60.0;
    else if (batch_stop(o, &stop_at, &reason) < 0 || stop_at <= 0)
        return;
    set_handler(SIGALRM, on_alarm);
    double left = stop_at - now;
    alarm(left < 1 ? 1 : (unsigned)(left > 1e9 ? 1e9 : left));
}

/* The agent of a joined node, from its link j (taken) on: adopt the
 * master's run (its WELCOME), start, run until SHUTDOWN, the master's loss
 * or leaving.  The exit status. */
static int join_run_agent(struct options *o, struct rank_info *ri, struct join *j)
{
    static char dag[PATH_MAX];
    struct pmc_error err;
    size_t len;
    const void *run = join_welcome(j, &len);
    if (options_adopt_run(o, run, len, dag, sizeof dag, &err) < 0) {
        log_fatal("--join %s: %s", o->join_path, err.text);
        join_close(j);
        return 1;
    }
    ri->rank = ri->host_agent = (int)join_self(j);
    ri->role = RANK_AGENT;
    int failed = 0;
    struct agent *a = setup_agent(o, ri, &failed);
    signal_agent = a; /* a signal from here on makes it leave, even before it starts */
    struct comm *c = a ? comm_create_joined(j, ri->rank, NULL, agent_mailbox(a), &err) : NULL;
    if (!a)
        join_close(j);
    if (a && (!c || agent_start(a, c, &err) < 0))
        log_fatal("%s", err.text);
    int rc = 1;
    if (a && c) {
        join_arm_stop(o);
        rc = agent_join(a) < 0 ? 1 : 0;
        alarm(0);
        report_engine_cpu(NULL, a, ri->rank);
    }
    signal_agent = NULL;
    comm_close(c);
    agent_destroy(a);
    return rc;
}

/* What tasks leave running when their first process ends is ours to reap
 * (spawn.h), the host script's too. */
static void adopt_orphans(void)
{
    if (spawn_adopt_orphans() < 0)
        log_debug("Orphans of tasks go to PID 1: prctl(PR_SET_CHILD_SUBREAPER): %s",
                  strerror(errno));
}

/* --join ACCESS: this process is one node agent of the master that wrote
 * ACCESS (docs/join.md); no MPI.  The host script runs first, then the
 * agent joins, so the master's heartbeats never wait for it.  The exit
 * status: 0 after the master's SHUTDOWN or a clean leave (a signal, the
 * batch job's end), 1 when the master was lost or the agent failed. */
static int join_main(struct options *o, struct rank_info *ri)
{
    struct pmc_error err;
    install_signal_handlers();
    adopt_orphans();
    pid_t script_pgid = 0;
    if (o->host_script &&
        hostscript_run(o->host_script, 0, &script_pgid, host_script_must_stop, &err) < 0) {
        log_error("%s", err.text);
        return 1;
    }
    int rc = 1;
    struct join *j = caught_signal ? NULL : join_connect(o->join_path, NULL, 0, &err);
    if (!j && !caught_signal)
        fprintf(stderr, "pmc-hybrid: --join: %s\n", err.text);
    if (j)
        rc = join_run_agent(o, ri, j);
    hostscript_stop(script_pgid, 0);
    return rc;
}

/* Refuse a plan in which no rank runs tasks (every rank sees the same plan,
 * so they all return -1 together). */
static int check_plan(const struct rank_info *ri, const struct options *o)
{
    if (ri->plan.nagents > 0 || o->listen_path)
        return 0;
    if (ri->rank == 0)
        fprintf(stderr, "pmc-hybrid: --master-only: no rank is left to run tasks (rank 0 is "
                        "the only rank; run under mpiexec with more ranks)\n");
    return -1;
}

int main(int argc, char **argv)
{
    /* first (again, where no preinit array ran): 0, 1 and 2 are valid, or
     * the first file opened would become stdout or stderr */
    if (!standard_fds_errno)
        open_standard_fds();
    if (standard_fds_errno) {
        fprintf(stderr,
                "pmc-hybrid: /dev/null: %s (stdin, stdout or stderr is closed and must "
                "be opened on it)\n",
                strerror(standard_fds_errno));
        return 1;
    }
    /* before the transport starts (MPI's shared-memory set-up writes several
     * MB): a file over RLIMIT_FSIZE fails a write with EFBIG instead of
     * killing us; and a log line to a closed pipe (`2>&1 | head -1`) fails
     * with EPIPE instead of killing us silently before the handlers are
     * in (install_signal_handlers() ignores it again after MPI's start) */
    signal(SIGXFSZ, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    main_start_mono = pmc_mono_s();
    struct pmc_error terr;
    int started = transport_init(&argc, &argv, argv_names_join_link(argc, argv), &terr);
    if (started < 0) {
        fprintf(stderr, "pmc-hybrid: %s\n", terr.text);
        return 1;
    }
    struct rank_info ri;
    if (rank_info_init(&ri) < 0) {
        fprintf(stderr, "pmc-hybrid: rank %d: out of memory\n", ri.rank);
        transport_abort(1);
    }
    if (started > 0) {
        if (ri.rank == 0)
            fprintf(stderr, "pmc-hybrid: %s\n", terr.text);
        free(ri.leaders);
        transport_finalize();
        return 1;
    }
    struct options o;
    int rc = setup_options(&o, argc, argv, ri.rank);
    if (rc != 0) {
        free(ri.leaders);
        transport_finalize();
        return rc < 0 ? 1 : 0;
    }
    if (o.join_path) {
        rc = join_main(&o, &ri);
        free(ri.leaders);
        gpus_free(&ri.gpus);
        transport_finalize();
        return rc;
    }
    if (rank_plan_roles(&ri, &o) < 0) {
        fprintf(stderr, "pmc-hybrid: rank %d: out of memory\n", ri.rank);
        transport_abort(1);
    }
    if (check_plan(&ri, &o) < 0) {
        rank_info_free(&ri);
        transport_finalize();
        return 1;
    }
    log_plan(&ri);
    /* after transport_init() (MPI may bind us), before any thread of ours */
    struct pmc_error aerr;
    if (affinity_reset_inherited(o.keep_affinity, &aerr) < 0)
        log_warn("%s", aerr.text);
    char program[PATH_MAX];
    program_path(program, sizeof program, argv[0]);
    struct master *m = NULL;
    if (setup_master(&o, &ri, program, &m) < 0) {
        rank_info_free(&ri);
        transport_finalize();
        return 1;
    }
    signal_master = m;
    install_signal_handlers();
    adopt_orphans();
    struct agent *a;
    pid_t script_pgid;
    if (setup_hosts(&o, &ri, &a, &script_pgid) < 0)
        rc = m ? master_fail_at_start(m) : 1;
    else
        rc = run(&o, &ri, m, a);
    agent_destroy(a);
    hostscript_stop(script_pgid, ri.host_agent);
    signal_master = NULL;
    master_destroy(m);
    rank_info_free(&ri);
    gpus_free(&ri.gpus);
    transport_finalize();
    /* a rank that caught a stop signal, idle ranks too (they wait in the
     * finalize), took part in a stopped run: not 0, or mpiexec, which may
     * hear from such a rank before rank 0 (hydra), could call the stopped
     * run a success (it did 6 times in 8; 3 in 14 since: docs/batch.md) */
    if (rc == 0 && caught_signal && ri.rank != 0)
        rc = 1;
    return rc;
}
