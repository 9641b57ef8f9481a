/* transport.h - the MPI side of start-up and shut-down: initialise and end
 * MPI, find this rank's place in the job (its host among the ranks), the
 * three small collectives main needs to agree on a plan, and the name of the
 * MPI library.  With comm.h (the message transport) this is the only part of
 * pmc-hybrid that calls MPI (docs/design.md section 7; tools/check-layers.py
 * enforces it), so main.c only wires.
 *
 * Collectives (transport_allgather_int, transport_bcast_int,
 * transport_max_int) must be called by every rank in the same order, as MPI
 * collectives are; they block until every rank has called them, sleeping
 * between polls rather than spinning (a waiting rank costs ~1 % of a core).
 * MPI errors are fatal (MPI_ERRORS_ARE_FATAL, MPI's default): none of these
 * functions returns one.
 *
 * Thread-safety: call everything from the main thread, before comm_create()
 * or after comm_close() (the collectives) - except transport_abort(), which
 * any thread may call.
 */
#ifndef PMC_TRANSPORT_H
#define PMC_TRANSPORT_H

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where this rank runs.  host_* count the ranks that share this machine
 * (MPI's shared-memory split), whatever --ranks-are-hosts says. */
struct transport_place {
    int rank, size;            /* in the whole job, 0 <= rank < size */
    int host_rank, host_ranks; /* among the ranks on this machine */
    int leader;                /* lowest rank on this machine */
};

/* Initialise MPI with full thread support (argc/argv as main got them; MPI
 * may remove its own arguments).  Returns 0 when ready; -1 with err when MPI
 * could not be initialised (nothing to finalise: just exit); 1 with err when
 * MPI is initialised but does not provide concurrent calls from several
 * threads, which the engine needs (call transport_finalize(), then exit). */
int transport_init(int *argc, char ***argv, struct pmc_error *err);

/* Fill *p with this rank's place (a collective: the host split).  After
 * transport_init() returned 0 or 1. */
void transport_place(struct transport_place *p);

/* The first line of the MPI library's version string, in static storage
 * (valid for the life of the process; "" when MPI does not say).  Any time,
 * even before transport_init(). */
const char *transport_library_version(void);

/* Gather one int from every rank into out[0, size) (out[r] is rank r's
 * value; out must have room for the job's size).  A collective. */
void transport_allgather_int(int value, int *out);

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
_Noreturn void transport_abort(int status);

#ifdef __cplusplus
}
#endif
#endif
