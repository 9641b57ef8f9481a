/* hosts.h - which MPI rank does what: PMC's rank roles over the host rule.
 *
 * Ranks with the same host name share one host and one agent, which holds
 * all its CPUs and memory.  Rank 0 is the master; it is also its host's
 * agent when alone there (unless --master-only), else the lowest other rank
 * there is (PMC's `mpiexec -n 2` shape).  Elsewhere the lowest rank of each
 * host is its agent; every other rank is idle.  With --ranks-are-hosts each
 * rank is a host.  Why: docs/modules.md "hosts".
 *
 * Pure policy, no MPI.  Thread-safety: reentrant.
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

/* leader[r] = the lowest rank whose name equals rank r's; names holds
 * nranks names of stride bytes (compared to a NUL or stride).  O(n log n).
 * 0, or -1 with EINVAL (nranks < 0) or ENOMEM (leader untouched). */
int hosts_leaders_by_name(const char *names, size_t stride, int nranks, int *leader);

/* *host_ranks: ranks sharing rank's leader; *host_rank: those below rank. */
void hosts_rank_on_host(const int *leader, int nranks, int rank, int *host_rank, int *host_ranks);

/* Plan the roles of nranks >= 1 ranks from a leader table (leader[r] <= r,
 * leader[leader[r]] == leader[r]).  O(nranks).  0, or -1 with EINVAL or
 * ENOMEM (p empty).  A plan without an agent must be refused by the caller. */
int host_plan_make(const int *leader, int nranks, bool ranks_are_hosts, bool master_only,
                   struct host_plan *p);

void host_plan_free(struct host_plan *p); /* frees p->role; p may be zeroed */

/* For the doorbells: local[r] = 1 (p->nranks entries) when r exchanges
 * messages with rank and shares its host name (even with ranks_are_hosts).
 * *all_local: rank has peers and all are local.  Returns the local count. */
int host_local_peers(const struct host_plan *p, const int *leader, int rank, unsigned char *local,
                     bool *all_local);

#ifdef __cplusplus
}
#endif
#endif
