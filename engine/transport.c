/* transport.c - MPI start-up, placement, collectives and shut-down; see
 * transport.h.  Every call is a thin wrapper: MPI_COMM_WORLD is the only
 * communicator the job uses, besides the short-lived shared-memory split in
 * transport_place(). */
#include "engine/transport.h"

#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int transport_init(int *argc, char ***argv, struct pmc_error *err)
{
    int provided = 0;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided) != MPI_SUCCESS)
        return pmc_errorf(err, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_MULTIPLE) {
        pmc_errorf(err, "the MPI library does not provide MPI_THREAD_MULTIPLE");
        return 1;
    }
    return 0;
}

void transport_place(struct transport_place *p)
{
    memset(p, 0, sizeof *p);
    MPI_Comm_rank(MPI_COMM_WORLD, &p->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p->size);
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, p->rank, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &p->host_rank);
    MPI_Comm_size(host, &p->host_ranks);
    p->leader = p->rank;
    MPI_Allreduce(MPI_IN_PLACE, &p->leader, 1, MPI_INT, MPI_MIN, host);
    MPI_Comm_free(&host);
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

void transport_allgather_int(int value, int *out)
{
    MPI_Allgather(&value, 1, MPI_INT, out, 1, MPI_INT, MPI_COMM_WORLD);
}

int transport_bcast_int(int value)
{
    MPI_Bcast(&value, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return value;
}

int transport_max_int(int value)
{
    MPI_Allreduce(MPI_IN_PLACE, &value, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    return value;
}

void transport_finalize(void)
{
    MPI_Finalize();
}

_Noreturn void transport_abort(int status)
{
    MPI_Abort(MPI_COMM_WORLD, status);
    abort(); /* MPI_Abort should not return; if it does, end this rank at least */
}
