/* transport.h - the MPI side of start-up and shut-down: initialise and end
 * MPI, this rank's place (its host among the ranks), two small collectives
 * and the MPI library's name.  With comm.h the only code that calls MPI
 * (tools/check-layers.py enforces it).
 *
 * Collectives (transport_place, transport_bcast_int, transport_max_int)
 * must be called by every rank in the same order; they block, sleeping
 * between polls.  MPI errors are fatal (MPI_ERRORS_ARE_FATAL): no function
 * returns one.
 *
 * Thread-safety: main thread only, the collectives before comm_create() or
 * after comm_close(); transport_abort() from any thread.
 */
#ifndef PMC_TRANSPORT_H
#define PMC_TRANSPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TRANSPORT_HOST_NAME 65 /* bytes of a host name compared: Linux's HOST_NAME_MAX + 1 */

/* Where this rank runs.  host_* count the ranks of this host (the same
 * host name), whatever --ranks-are-hosts says. */
struct transport_place {
    int rank, size;            /* in the whole job, 0 <= rank < size */
    int host_rank, host_ranks; /* among the ranks on this host */
    int *leaders;              /* size entries: the lowest rank on rank r's host; malloc'd */
    uint64_t job_key;          /* rank 0's random number, on every rank: names the doorbells */
};

/* Initialise MPI with MPI_THREAD_MULTIPLE (MPI may remove its arguments),
 * unless alone (a master or agent of the join link, whatever launched it:
 * --listen, --join) or transport_launched() is false (then 0, no MPI).  0: ready; -1 with
 * err: MPI failed (just exit); 1 with err: no MPI_THREAD_MULTIPLE (call
 * transport_finalize(), then exit).  Sets HWLOC_COMPONENTS during the call
 * unless the user did (docs/modules.md "transport"); call before any other
 * thread starts. */
int transport_init(int *argc, char ***argv, bool alone, struct pmc_error *err);

/* True when envp (as environ) holds a variable an MPI launcher sets
 * (transport.c lists them: PMI_*, PMIX_*, OMPI_*, SLURM_PROCID, ...) or
 * PMC_MPI.  Without one the process is a job of one rank without MPI: the
 * collectives need none and transport_abort() calls _exit().  Pure; any
 * thread. */
bool transport_launched(char *const *envp);

/* True after transport_init() found no MPI launcher (transport_launched())
 * and left MPI uninitialised.  Main thread. */
bool transport_without_mpi(void);

/* A collective: fill *p, grouping ranks into hosts by the first
 * TRANSPORT_HOST_NAME - 1 bytes of hostname, as PMC does, with a gather
 * rather than MPI_Comm_split_type (docs/modules.md "transport"); rank 0
 * draws p->job_key.  The caller frees p->leaders.  After transport_init()
 * gave 0 or 1.  0, or -1 for ENOMEM (p->leaders NULL, p->rank set): abort
 * the job, since the other ranks may wait for this one. */
int transport_place(const char *hostname, struct transport_place *p);

/* The first line of the MPI library's version string, in static storage
 * (valid for the life of the process; "" when MPI does not say).  Any time,
 * even before transport_init(). */
const char *transport_library_version(void);

/* Rank 0's value, returned on every rank (value is ignored elsewhere).  A
 * collective. */
int transport_bcast_int(int value);

/* The largest value any rank passed, returned on every rank.  A collective. */
int transport_max_int(int value);

/* End MPI; on idle ranks this waits in the process manager's barrier until
 * every rank got here.  No transport call may follow. */
void transport_finalize(void);

/* Ask MPI to kill every rank of the job with exit status status, at once.
 * Any thread; does not return. */
#ifdef __cplusplus
[[noreturn]]
#else
_Noreturn
#endif
void transport_abort(int status);

#ifdef __cplusplus
}
#endif
#endif
