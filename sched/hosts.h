/* hosts.h - which MPI rank does what: PMC's rank roles over the host rule.
 *
 * The host is the unit of resource accounting (docs/design.md section 1): ranks
 * that share a host (the same host name, as PMC groups them) do not split it.
 * One node agent per host holds all of its CPUs and memory:
 *   - rank 0 is always the master;
 *   - when rank 0 shares its host with other ranks, it is the master only and
 *     the lowest other rank on that host is the host's agent (PMC's shape:
 *     `mpiexec -n 2` runs tasks on rank 1);
 *   - when rank 0 is alone on its host (one rank per node, or no mpiexec), it
 *     is master and agent, unless --master-only;
 *   - on every other host the lowest rank is the agent;
 *   - every other rank is idle: it runs no tasks and only waits for the end.
 * With ranks_are_hosts (--ranks-are-hosts, for tests and benchmarks of
 * several hosts on one machine) every rank counts as a host of its own: every
 * rank is an agent, rank 0 too unless --master-only.
 *
 * Pure policy: no MPI; host_plan_make() allocates only the role table and
 * is O(nranks), hosts_leaders_by_name() sorts an index, O(nranks log nranks).
 * Thread-safety: reentrant.
 */
#ifndef PMC_HOSTS_H
#define PMC_HOSTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum rank_role {
    RANK_IDLE = 0,   /* waits for the end */
    RANK_MASTER = 1, /* rank 0: the DAG, the scheduler, the rescue log */
    RANK_AGENT = 2,  /* runs its host's tasks */
};

struct host_plan {
    int nranks;
    uint8_t *role;          /* nranks entries: RANK_MASTER | RANK_AGENT bits, 0 idle */
    int nagents;            /* ranks with RANK_AGENT */
    int nhosts;             /* distinct hosts (every rank with ranks_are_hosts) */
    int crowded_hosts;      /* hosts with more than one rank (0 with ranks_are_hosts) */
    int max_ranks_per_host; /* 1 with ranks_are_hosts */
    int idle_ranks;         /* ranks with no role */
};

/* The leader table host_plan_make() takes, from the ranks' host names:
 * leader[r] = the lowest rank whose name equals rank r's.  names holds
 * nranks names of stride bytes each, rank r's at names + r * stride, each
 * compared up to its first NUL or its stride bytes.  leader must have room
 * for nranks entries.  Returns 0, or -1 with errno EINVAL (nranks < 0) or
 * ENOMEM (leader untouched).  PMC too counts ranks with the same host name
 * as one host. */
int hosts_leaders_by_name(const char *names, size_t stride, int nranks, int *leader);

/* Rank's place on its host, from a leader table as hosts_leaders_by_name()
 * makes (nranks entries): *host_ranks = how many ranks share rank's leader,
 * *host_rank = how many of them are lower than rank (0 for the leader). */
void hosts_rank_on_host(const int *leader, int nranks, int rank, int *host_rank, int *host_ranks);

/* Plan the roles of nranks ranks (nranks >= 1).  leader[r] is the lowest
 * rank on rank r's host (so leader[r] <= r and leader[leader[r]] ==
 * leader[r]).  Fills p (p->role is malloc'd: free with host_plan_free()).
 * Returns 0, or -1 with errno EINVAL (a leader table that breaks the rule
 * above) or ENOMEM; p is then empty.  A plan may have no agent at all
 * (--master-only on one rank): the caller must refuse to run it. */
int host_plan_make(const int *leader, int nranks, bool ranks_are_hosts, bool master_only,
                   struct host_plan *p);

void host_plan_free(struct host_plan *p); /* frees p->role; p may be zeroed */

/* Which of rank's MPI peers under plan p share its host, for the
 * transport's doorbells (engine/transport/doorbell.h): local[r] = 1 when rank r and
 * rank exchange messages (the master and an agent: the protocol has no
 * other pairs) and leader[r] == leader[rank] (the same host name, whatever
 * ranks_are_hosts said: a doorbell needs the same machine, not the same
 * resource host), else 0.  local must have room for p->nranks entries.
 * *all_local is true when rank has peers and all of them are local.
 * Returns how many peers are local. */
int host_local_peers(const struct host_plan *p, const int *leader, int rank, unsigned char *local,
                     bool *all_local);

#ifdef __cplusplus
}
#endif
#endif
