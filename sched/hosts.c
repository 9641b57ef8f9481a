/* hosts.c - PMC's rank roles over the host rule; see hosts.h. */
#include "sched/hosts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct name_table {
    const char *names;
    size_t stride;
};

/* Rank indices by (name, rank). */
static int name_rank_cmp(const void *a, const void *b, void *arg)
{
    const struct name_table *t = arg;
    int ra = *(const int *)a, rb = *(const int *)b;
    int c =
        strncmp(t->names + (size_t)ra * t->stride, t->names + (size_t)rb * t->stride, t->stride);
    return c ? c : (ra > rb) - (ra < rb);
}

int hosts_leaders_by_name(const char *names, size_t stride, int nranks, int *leader)
{
    if (nranks < 0) {
        errno = EINVAL;
        return -1;
    }
    int *order = malloc(sizeof *order * (size_t)(nranks > 0 ? nranks : 1));
    if (!order)
        return -1;
    for (int r = 0; r < nranks; r++)
        order[r] = r;
    struct name_table t = {names, stride};
    qsort_r(order, (size_t)nranks, sizeof *order, name_rank_cmp, &t);
    int first = 0; /* the lowest rank of the current name: the first of its run */
    for (int i = 0; i < nranks; i++) {
        if (i == 0 || strncmp(names + (size_t)order[i] * stride,
                              names + (size_t)order[i - 1] * stride, stride) != 0)
            first = order[i];
        leader[order[i]] = first;
    }
    free(order);
    return 0;
}

static int leaders_valid(const int *leader, int nranks)
{
    for (int r = 0; r < nranks; r++)
        if (leader[r] < 0 || leader[r] > r || leader[leader[r]] != leader[r])
            return 0;
    return 1;
}

/* The agent of the host led by rank l, given the host's rank count n and
 * the second-lowest rank of rank 0's host (-1 if none); -1 for no agent. */
static int host_agent(int l, int n, int second_of_0, bool master_only)
{
    if (l != 0)
        return l;
    if (n > 1)
        return second_of_0; /* rank 0 is the master only */
    return master_only ? -1 : 0;
}

static void plan_ranks_are_hosts(struct host_plan *p, bool master_only)
{
    for (int r = 0; r < p->nranks; r++)
        p->role[r] = r == 0 && master_only ? RANK_IDLE : RANK_AGENT;
    p->nhosts = p->nranks;
    p->max_ranks_per_host = 1;
}

static int plan_by_host(struct host_plan *p, const int *leader, bool master_only)
{
    int n = p->nranks, second_of_0 = -1;
    int *count = calloc((size_t)n, sizeof *count);
    if (!count)
        return -1;
    for (int r = 0; r < n; r++) {
        count[leader[r]]++;
        if (leader[r] == 0 && r > 0 && second_of_0 < 0)
            second_of_0 = r;
    }
    for (int r = 0; r < n; r++) {
        int l = leader[r];
        p->role[r] = host_agent(l, count[l], second_of_0, master_only) == r ? RANK_AGENT : 0;
        if (r != l)
            continue;
        p->nhosts++;
        p->crowded_hosts += count[l] > 1;
        if (count[l] > p->max_ranks_per_host)
            p->max_ranks_per_host = count[l];
    }
    free(count);
    return 0;
}

void hosts_rank_on_host(const int *leader, int nranks, int rank, int *host_rank, int *host_ranks)
{
    *host_rank = *host_ranks = 0;
    for (int r = 0; r < nranks; r++) {
        if (leader[r] != leader[rank])
            continue;
        ++*host_ranks;
        *host_rank += r < rank;
    }
}

int host_plan_make(const int *leader, int nranks, bool ranks_are_hosts, bool master_only,
                   struct host_plan *p)
{
    memset(p, 0, sizeof *p);
    if (nranks < 1 || !leaders_valid(leader, nranks)) {
        errno = EINVAL;
        return -1;
    }
    p->nranks = nranks;
    p->role = calloc((size_t)nranks, 1);
    if (!p->role)
        return -1;
    if (ranks_are_hosts) {
        plan_ranks_are_hosts(p, master_only);
    } else if (plan_by_host(p, leader, master_only) < 0) {
        host_plan_free(p);
        return -1;
    }
    p->role[0] |= RANK_MASTER;
    for (int r = 0; r < nranks; r++) {
        p->nagents += (p->role[r] & RANK_AGENT) != 0;
        p->idle_ranks += p->role[r] == RANK_IDLE;
    }
    return 0;
}

void host_plan_free(struct host_plan *p)
{
    free(p->role);
    memset(p, 0, sizeof *p);
}

/* Ranks a and b exchange messages under plan p: the master and an agent
 * (the protocol has no other pairs). */
static bool plan_peers(const struct host_plan *p, int a, int b)
{
    return a != b && (((p->role[a] & RANK_MASTER) && (p->role[b] & RANK_AGENT)) ||
                      ((p->role[b] & RANK_MASTER) && (p->role[a] & RANK_AGENT)));
}

int host_local_peers(const struct host_plan *p, const int *leader, int rank, unsigned char *local,
                     bool *all_local)
{
    int n = 0, remote = 0;
    for (int r = 0; r < p->nranks; r++) {
        bool peer = plan_peers(p, rank, r);
        local[r] = peer && leader[r] == leader[rank];
        n += local[r];
        remote += peer && !local[r];
    }
    *all_local = n > 0 && remote == 0;
    return n;
}
