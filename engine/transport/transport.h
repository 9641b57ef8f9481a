/* transport.h - the MPI side of start-up and shut-down: initialise and end
 * MPI, find this rank's place in the job (its host among the ranks), the
 * two small collectives main needs to agree on a plan, and the name of the
 * MPI library.  With comm.h (the message transport) this is the only part of
 * pmc-hybrid that calls MPI (docs/design.md section 7; tools/check-layers.py
 * enforces it), so main.c only wires.
 *
 * Collectives (transport_place, transport_bcast_int, transport_max_int)
 * must be called by every rank in the same order, as MPI collectives are;
 * they block until every rank has called them, sleeping between polls
 * rather than spinning (a waiting rank costs ~1 % of a core).
 * MPI errors are fatal (MPI_ERRORS_ARE_FATAL, MPI's default): none of these
 * functions returns one (transport_place() fails only for want of memory).
 *
 * Thread-safety: call everything from the main thread, before comm_create()
 * or after comm_close() (the collectives) - except transport_abort(), which
 * any thread may call.
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
    uint64_t job_key;          /* rank 0's random number, the same on every rank: names the
                                  job's doorbells (engine/transport/doorbell.h) */
};

/* Initialise MPI with full thread support (argc/argv as main got them; MPI
 * may remove its own arguments), unless no MPI launcher started this
 * process (transport_launched(): then nothing is initialised and this
 * returns 0).  Returns 0 when ready; -1 with err when MPI
 * could not be initialised (nothing to finalise: just exit); 1 with err when
 * MPI is initialised but does not provide concurrent calls from several
 * threads, which the engine needs (call transport_finalize(), then exit).
 * While MPI_Init_thread runs, the process environment holds
 * HWLOC_COMPONENTS excluding hwloc's GPU components (transport.c says
 * why), unless the user set HWLOC_COMPONENTS, even to ""; it is unset
 * again before this returns, whatever MPI answered.  Call it from the
 * main thread before any other thread starts (setenv, unsetenv). */
int transport_init(int *argc, char ***argv, struct pmc_error *err);

/* True when envp (NULL-terminated NAME=VALUE strings, as environ) holds a
 * variable that an MPI launcher or process manager sets in the processes it
 * starts (transport.c lists them: PMI_*, PMIX_*, OMPI_*, SLURM_PROCID, ...),
 * or PMC_MPI (any value), the user's way to ask for MPI all the same.
 * transport_init() asks it of the process's environment: without such a
 * variable (`pmc-hybrid wf.dag` typed at a shell) the process is a job of
 * one rank and MPI is never initialised (MPICH 4.0.2's singleton
 * MPI_Init_thread took 20 ms of wall and MPI_Finalize 2 ms on the 2-core
 * Intel VM of docs/performance-history.md, section 26); placement, the
 * collectives and transport_finalize() then need no MPI, and
 * transport_abort() ends the process with _exit().  Only a launcher that
 * sets none of these and yet makes MPI see several ranks could start
 * several masters: set PMC_MPI there.  Pure; any thread. */
bool transport_launched(char *const *envp);

/* True after transport_init() found no MPI launcher (transport_launched())
 * and left MPI uninitialised.  Main thread. */
bool transport_without_mpi(void);

/* Fill *p with this rank's place, hostname being this rank's host name (a
 * collective: every rank's name is gathered; ranks are grouped into hosts
 * by name, the first TRANSPORT_HOST_NAME - 1 bytes, as PMC does, with
 * sched/hosts.h's hosts_leaders_by_name()).  MPICH's
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) finds the same groups under
 * hydra but builds a shared-memory communicator: ~30 ms of CPU a rank with
 * 4 ranks on the 2-core VM of docs/performance-history.md, where the gather takes
 * ~2 ms (bare MPI programs run by hand, section 19 there; bench/run's
 * "idle 4 ranks: CPU over the whole run" row shows the sum).  Then rank 0 draws the job key
 * (getrandom) and broadcasts it: p->job_key.  The caller frees p->leaders.  After
 * transport_init() returned 0 or 1.  Returns 0, or -1 when out of memory (p->leaders NULL, p->rank
 * set; abort the job: the other ranks may be waiting for this one). */
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
