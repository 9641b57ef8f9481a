/* transport.c - MPI start-up, placement, collectives and shut-down; see
 * transport.h.  Every call is a thin wrapper: MPI_COMM_WORLD is the only
 * communicator the job uses.  A process that no MPI launcher started is a
 * job of one rank that never initialises MPI (transport_launched()). */
#include "engine/transport/transport.h"

#include <mpi.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>

#include "sched/hosts.h"

extern char **environ; /* transport_init() reads the process's environment */

#define QUIET_WAIT_MIN_NS 20000L    /* the first sleep between tests: 20 us ... */
#define QUIET_WAIT_MAX_NS 2000000L  /* ... doubling to 2 ms ... */
#define QUIET_WAIT_SHARE 20         /* ... then 1/20 of the time waited so far ... */
#define QUIET_WAIT_LONG_NS 10000000 /* ... up to 10 ms */

/* The sleep after one of sleep_ns, waited_ns into the wait (both ns). */
static long transport_next_sleep(long sleep_ns, long waited_ns)
{
    long next = sleep_ns * 2 > QUIET_WAIT_MAX_NS ? QUIET_WAIT_MAX_NS : sleep_ns * 2;
    long share = waited_ns / QUIET_WAIT_SHARE;
    if (share > next)
        next = share > QUIET_WAIT_LONG_NS ? QUIET_WAIT_LONG_NS : share;
    return next;
}

/* Wait for the nonblocking collective *req without spinning: MPI_Test, then
 * sleep 20 us doubling to 2 ms between tests, and once the wait is longer
 * than 40 ms, 1/20 of the time waited, up to 10 ms.  MPICH's blocking
 * collectives poll their progress engine without pause, and every rank but
 * rank 0 waits in one while rank 0 reads the DAG (seconds for a huge one)
 * or runs the host script: a whole core each, taken from
 * the parser where ranks outnumber CPUs or share a core's hardware threads.
 * Each wake-up costs CPU, so a long wait sleeps up to 10 ms between tests
 * (tests/integration/test_hosts.py start_up_wait_is_quiet checks the
 * waiting ranks' CPU).  Costs up to one sleep per step of the collective's algorithm (MPICH's
 * barrier and one-int broadcast and reduction take log2(size) steps): at
 * most 1/20 of the wait per step, and nothing more for waits under 40 ms. */
static void transport_wait_quietly(MPI_Request *req)
{
    long sleep_ns = QUIET_WAIT_MIN_NS, waited_ns = 0;
    for (;;) {
        int done = 0;
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        struct timespec ts = {0, sleep_ns};
        nanosleep(&ts, NULL);
        waited_ns += sleep_ns; /* asked for, not slept: never more than the wait */
        sleep_ns = transport_next_sleep(sleep_ns, waited_ns);
    }
}

/* hwloc's GPU discovery components, kept out of the topology MPICH loads
 * inside MPI_Init_thread (hwloc's HWLOC_COMPONENTS syntax, hwloc 2.1 and
 * later: "-name" excludes a component, the others stay; names hwloc does
 * not have are skipped).  MPICH loads the topology with its I/O devices,
 * and where hwloc's plugins are installed its OpenCL component starts every
 * OpenCL driver, NVIDIA's by initialising CUDA, which makes MPI_Init_thread
 * slow on a GPU node.  The engine sends host memory only, so MPICH needs no GPU in its topology;
 * the engine's own GPU probe (gpus.c) loads its own. */
#define TRANSPORT_HWLOC_COMPONENTS "-opencl,-cuda,-nvml,-rsmi,-levelzero,-gl"

/* Started by no MPI launcher: MPI is never initialised (transport_init()). */
static bool transport_alone;

/* What MPI launchers and process managers put in the environment of the
 * processes they start (prefixes of NAME=VALUE): MPICH's and Intel MPI's
 * hydra, Slurm's PMI-1 and PMI-2, Cray PALS and Flux (PMI_RANK, PMI_SIZE,
 * PMI_FD, PMI_PORT), PMIx launchers (Open MPI 5, srun --mpi=pmix:
 * PMIX_RANK), Open MPI's mpirun (OMPI_COMM_WORLD_SIZE), hydra's
 * MPI_LOCALNRANKS, Cray's PALS_RANKID, MVAPICH's mpirun_rsh (MPIRUN_RANK,
 * MV2_), IBM's jsrun (JSM_NAMESPACE_), flux run (FLUX_TASK_RANK), srun and
 * a Slurm batch script (SLURM_PROCID), and PMC_MPI, the user's own way to
 * ask for MPI. */
static const char *const transport_launcher_vars[] = {
    "PMI_", "PMIX_",          "OMPI_",           "MPI_LOCALNRANKS=", "PALS_",    "MPIRUN_",
    "MV2_", "JSM_NAMESPACE_", "FLUX_TASK_RANK=", "SLURM_PROCID=",    "PMC_MPI=",
};

bool transport_launched(char *const *envp)
{
    for (; envp && *envp; envp++)
        for (size_t i = 0; i < sizeof transport_launcher_vars / sizeof *transport_launcher_vars;
             i++)
            if (strncmp(*envp, transport_launcher_vars[i], strlen(transport_launcher_vars[i])) == 0)
                return true;
    return false;
}

bool transport_without_mpi(void)
{
    return transport_alone;
}

int transport_init(int *argc, char ***argv, bool alone, struct pmc_error *err)
{
    transport_alone = alone || !transport_launched(environ);
    if (transport_alone)
        return 0;
    int provided = 0;
    /* only while MPI starts (no thread of ours runs yet), and never over
     * the user's own setting, even an empty one: the tasks inherit the
     * environment as it was */
    bool hide = !getenv("HWLOC_COMPONENTS") &&
                setenv("HWLOC_COMPONENTS", TRANSPORT_HWLOC_COMPONENTS, 0) == 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    if (hide)
        unsetenv("HWLOC_COMPONENTS");
    if (rc != MPI_SUCCESS)
        return pmc_errorf(err, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_MULTIPLE) {
        pmc_errorf(err, "the MPI library does not provide MPI_THREAD_MULTIPLE");
        return 1;
    }
    return 0;
}

/* Every rank's host name, TRANSPORT_HOST_NAME bytes each (truncated,
 * NUL-padded).  A quiet barrier first takes up the ranks' skew out of
 * MPI_Init; the gather itself is MPI's blocking one, which spins, but only
 * once every rank is there: MPICH's nonblocking gather is a ring of
 * size - 1 steps once size x 65 bytes reaches MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE
 * (80 KB; its long-message size, 512 KB, for a power-of-two size), each
 * step waiting for a sleeping neighbour's next test (MPICH's
 * MPIR_Iallgather_intra_sched_auto, read, not measured).  Returns the malloc'd table of size
 * names, or NULL when out of memory (before any collective: the caller
 * aborts the job, so no rank waits for this one). */
static char *transport_gather_names(const char *hostname, int size)
{
    char *all = malloc((size_t)size * TRANSPORT_HOST_NAME);
    if (!all)
        return NULL;
    char mine[TRANSPORT_HOST_NAME] = {0};
    strncpy(mine, hostname, sizeof mine - 1);
    if (transport_alone) {
        memcpy(all, mine, sizeof mine);
        return all;
    }
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    transport_wait_quietly(&req);
    MPI_Allgather(mine, TRANSPORT_HOST_NAME, MPI_CHAR, all, TRANSPORT_HOST_NAME, MPI_CHAR,
                  MPI_COMM_WORLD);
    return all;
}

/* Rank 0's random job key, on every rank (transport_place.job_key).  Called
 * right after the gather of names, when the ranks are together, so MPI's
 * blocking broadcast spins only for its own steps. */
static uint64_t transport_job_key(int rank)
{
    uint64_t key = 0;
    if (rank == 0 && getrandom(&key, sizeof key, GRND_NONBLOCK) != (ssize_t)sizeof key) {
        struct timespec ts; /* no entropy yet (early boot): unique enough per host */
        clock_gettime(CLOCK_REALTIME, &ts);
        key = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
    }
    if (!transport_alone)
        MPI_Bcast(&key, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    return key;
}

int transport_place(const char *hostname, struct transport_place *p)
{
    memset(p, 0, sizeof *p);
    p->size = 1;
    if (!transport_alone) {
        MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
        MPI_Comm_size(MPI_COMM_WORLD, &p->size);
    }
    p->leaders = malloc(sizeof *p->leaders * (size_t)p->size);
    char *names = p->leaders ? transport_gather_names(hostname, p->size) : NULL;
    if (!names || hosts_leaders_by_name(names, TRANSPORT_HOST_NAME, p->size, p->leaders) < 0) {
        free(names);
        free(p->leaders);
        p->leaders = NULL;
        return -1;
    }
    free(names);
    p->job_key = transport_job_key(p->rank);
    hosts_rank_on_host(p->leaders, p->size, p->rank, &p->host_rank, &p->host_ranks);
    return 0;
}

const char *transport_library_version(void)
{
    static char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    return lib;
}

int transport_bcast_int(int value)
{
    if (transport_alone)
        return value;
    MPI_Request req;
    MPI_Ibcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD, &req);
    transport_wait_quietly(&req);
    return value;
}

int transport_max_int(int value)
{
    if (transport_alone)
        return value;
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &req);
    transport_wait_quietly(&req);
    return value;
}

void transport_finalize(void)
{
    if (!transport_alone)
        MPI_Finalize();
}

_Noreturn void transport_abort(int status)
{
    if (transport_alone) /* the only rank: its tasks die with its threads (PR_SET_PDEATHSIG) */
        _exit(status);
    MPI_Abort(MPI_COMM_WORLD, status);
    abort(); /* MPI_Abort should not return; if it does, end this rank at least */
}
