/* main.c - pmc-hybrid: run a DAG of tasks on one machine or many MPI ranks.
 *
 * Only wires the subsystems together (STYLE.md): options, MPI start-up and
 * the host split, the master (rank 0), this rank's node agent, the transport;
 * then tears them down in reverse.  This is the only file that decides the
 * process exit status: 0 when every task succeeded, 1 otherwise.
 */
#include <limits.h>
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/agent.h"
#include "sched/affinity.h"
#include "engine/comm.h"
#include "engine/hostscript.h"
#include "engine/master.h"
#include "engine/options.h"
#include "io/log.h"
#include "sched/resources.h"

struct rank_info {
    int rank, size;
    int host_rank, host_ranks;
    char hostname[256];
};

static struct master *signal_master;

static void on_signal(int sig)
{
    if (signal_master)
        master_request_abort(signal_master, sig == SIGTERM   ? "SIGTERM"
                                            : sig == SIGINT  ? "SIGINT"
                                            : sig == SIGUSR1 ? "SIGUSR1"
                                                             : "signal");
}

/* Rank 0 asks the master to abort; other ranks ignore the batch system's
 * signals and wait for the master's ABORT (a dying rank would take the whole
 * MPI job, rescue log flush included, down with it). */
static void install_signal_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* a file over RLIMIT_FSIZE fails a write with EFBIG instead */
}

static void print_version(void)
{
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    printf("pmc-hybrid %s\n", PMC_VERSION);
    printf("Compiler: %s\n", __VERSION__);
    printf("MPI library: %s\n", lib);
}

static void rank_info_init(struct rank_info *ri)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &ri->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ri->size);
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, ri->rank, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &ri->host_rank);
    MPI_Comm_size(host, &ri->host_ranks);
    MPI_Comm_free(&host);
    if (gethostname(ri->hostname, sizeof ri->hostname) < 0)
        strcpy(ri->hostname, "localhost");
    ri->hostname[sizeof ri->hostname - 1] = '\0';
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

/* This rank's share of its host's CPUs and memory. */
static void rank_resources(const struct options *o, const struct rank_info *ri, uint32_t *cpus,
                           uint64_t *memory_mb)
{
    uint32_t host_cpus;
    uint64_t host_mem;
    if (resources_detect(&host_cpus, &host_mem) < 0)
        log_debug("hwloc could not load the topology; using sysconf");
    if (o->host_cpus)
        host_cpus = o->host_cpus;
    if (o->host_memory)
        host_mem = o->host_memory;
    *cpus = (uint32_t)resources_share(host_cpus, ri->host_rank, ri->host_ranks);
    *memory_mb = resources_share(host_mem, ri->host_rank, ri->host_ranks);
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
        if (rank == 0)
            o->help ? fputs(options_usage(), stdout) : print_version();
        return 1;
    }
    log_set_level(PMC_LOG_INFO + o->verbosity);
    return 0;
}

/* Rank 0 loads the DAG and rescue log; everyone learns whether it worked. */
static int setup_master(const struct options *o, const struct rank_info *ri, const char *program,
                        struct master **mp)
{
    int ok = 1;
    if (ri->rank == 0) {
        struct master_config mc = {o->dag_path,
                                   o->rescue_path,
                                   o->skip_rescue,
                                   o->out_path,
                                   o->err_path,
                                   o->max_failures,
                                   o->tries,
                                   o->max_wall_time * 60.0,
                                   program,
                                   ri->size,
                                   o->master_only,
                                   o->null_executor,
                                   o->nolock,
                                   o->maxfds,
                                   o->jobstate_log,
                                   o->monitord_hack,
                                   !o->no_resource_log};
        struct pmc_error err;
        *mp = master_create(&mc, &err);
        if (!*mp) {
            fprintf(stderr, "pmc-hybrid: %s\n", err.text);
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return ok ? 0 : -1;
}

static struct agent *setup_agent(const struct options *o, const struct rank_info *ri)
{
    if (ri->rank == 0 && o->master_only)
        return NULL;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", o->dag_path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    struct agent_config ac = {.rank = ri->rank,
                              .host_rank = ri->host_rank,
                              .host_ranks = ri->host_ranks,
                              .hostname = ri->hostname,
                              .dag_path = o->dag_path,
                              .null_executor = o->null_executor,
                              .per_task_stdio = o->per_task_stdio,
                              .task_dir = slash ? dir : ".",
                              .set_affinity = o->set_affinity,
                              .keep_affinity = o->keep_affinity,
                              .strict_limits = o->strict_limits};
    rank_resources(o, ri, &ac.cpus, &ac.memory_mb);
    struct pmc_error err;
    struct agent *a = agent_create(&ac, &err);
    if (!a)
        log_fatal("%s", err.text);
    return a;
}

/* Host rank 0 of every host runs the host script; every rank learns whether
 * all of them succeeded (a collective: no task starts anywhere before every
 * host is ready).  Returns 0 when all succeeded. */
static int setup_host_script(const struct options *o, const struct rank_info *ri, pid_t *pgid)
{
    int failed = 0;
    *pgid = 0;
    if (o->host_script && ri->host_rank == 0) {
        struct pmc_error err;
        if (hostscript_run(o->host_script, pgid, &err) < 0) {
            log_error("%s", err.text);
            failed = 1;
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return failed ? -1 : 0;
}

/* Start the transport and the agent, run, and tear down.  Returns the exit
 * status of this rank. */
static int run(const struct options *o, const struct rank_info *ri, struct master *m)
{
    struct agent *a = setup_agent(o, ri);
    if (!a && !(ri->rank == 0 && o->master_only))
        MPI_Abort(MPI_COMM_WORLD, 1);
    struct pmc_error err;
    struct comm *c = comm_create(ri->rank, ri->size, m ? master_mailbox(m) : NULL,
                                 a ? agent_mailbox(a) : NULL, &err);
    if (!c || (a && agent_start(a, c, &err) < 0)) {
        log_fatal("%s", err.text);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rc = m ? master_run(m, c) : 0;
    if (a && agent_join(a) < 0 && ri->rank != 0)
        rc = 1;
    comm_close(c);
    agent_destroy(a);
    return rc;
}

int main(int argc, char **argv)
{
    int provided = 0;
    if (MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "pmc-hybrid: MPI_Init_thread failed\n");
        return 1;
    }
    struct rank_info ri;
    rank_info_init(&ri);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (ri.rank == 0)
            fprintf(stderr, "pmc-hybrid: the MPI library does not provide MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 1;
    }
    struct options o;
    int rc = setup_options(&o, argc, argv, ri.rank);
    if (rc != 0) {
        MPI_Finalize();
        return rc < 0 ? 1 : 0;
    }
    /* after MPI_Init (which may bind us), before any thread of ours */
    struct pmc_error aerr;
    if (affinity_reset_inherited(o.keep_affinity, &aerr) < 0)
        log_warn("%s", aerr.text);
    char program[PATH_MAX];
    program_path(program, sizeof program, argv[0]);
    struct master *m = NULL;
    if (setup_master(&o, &ri, program, &m) < 0) {
        MPI_Finalize();
        return 1;
    }
    signal_master = m;
    install_signal_handlers();
    pid_t script_pgid;
    if (setup_host_script(&o, &ri, &script_pgid) < 0 && m)
        master_abort_at_start(m);
    rc = run(&o, &ri, m);
    hostscript_stop(script_pgid);
    signal_master = NULL;
    master_destroy(m);
    MPI_Finalize();
    return rc;
}
