/* affinity.h - CPU binding of tasks: the inherited binding, and the pool of
 * processing units (PUs) a rank binds its tasks to.
 *
 * PMC resets the CPU affinity and the NUMA memory policy it inherited unless
 * --keep-affinity is given, "to ensure that all available CPUs and memory can
 * be used by PMC tasks on systems that are not configured properly" (PMC
 * manual); affinity_reset_inherited() does the same.
 *
 * Every task is allotted PMC_CPUS PUs of its rank, named in PMC_AFFINITY
 * (as PMC's worker does), and with --set-affinity it is also bound to them
 * (docs/compat-notes.md, "Task environment").  The rank's
 * PUs form a cpuset_pool: rank host_rank of host_ranks on a host owns a
 * contiguous block of the host's PUs in hwloc's logical order (which walks
 * the topology tree depth first, so a block keeps cores and packages
 * together), the blocks sized as resources_share() sizes CPU shares.  A task
 * gets the smallest set of free PUs that shares as much hardware as
 * possible: cpuset_pool_take() considers every object of the topology (PU,
 * core, caches, NUMA node, package, group, machine) restricted to the pool,
 * smallest first, picks the first whose free PUs are enough - among objects
 * of one size the one with the fewest free PUs, so partly used objects fill
 * up before whole ones are broken into - and takes its first free PUs in
 * logical order.  A task that would fit in one locality domain is only bound
 * inside one; when the free PUs of no single domain can hold it, the pool is
 * fragmented and the task runs unbound, with a warning (the master only
 * counts CPUs, it does not see the fragmentation).  A task larger than every
 * domain may span them.  The domains are the packages; without packages, the
 * NUMA nodes.  A NUMA node inside a package would add nothing (the package
 * holds whatever it holds), and one over several packages - hwloc puts a
 * single NUMA node over a machine that reports none - is not local.
 *
 * --host-cpus: the master schedules by the rank's CPU count (from --host-cpus
 * or detected), the pool is built from the rank's real PUs.  With
 * --host-cpus below the PU count the pool simply has PUs to spare; above it,
 * the rank runs more CPU-demand than it has PUs, cpuset_pool_take() returns
 * -1 once the free PUs are exhausted, and such tasks run unbound with the
 * warning (the caller should warn once, not per task).
 *
 * PUs whose OS index does not fit a cpu_set_t (>= CPU_SETSIZE, 1024) are left
 * out of every pool.
 *
 * Thread-safety: affinity_reset_inherited() must be called from the main
 * thread before the engine starts threads (see there).  A cpuset_pool is not
 * thread-safe: the node agent thread owns it.  affinity_format() is
 * reentrant.
 */
#ifndef PMC_AFFINITY_H
#define PMC_AFFINITY_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include <hwloc.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Unless keep (--keep-affinity), widen the CPU affinity of every thread of
 * this process to every CPU (the kernel keeps those online and allowed by
 * the cgroup's cpuset) and reset the calling thread's NUMA memory policy to
 * MPOL_DEFAULT (set_mempolicy).  keep: a no-op returning 0.
 *
 * sched_setaffinity(0, ...) changes only the calling thread, so the CPU
 * affinity is applied to each thread listed in /proc/self/task (as hwloc's
 * HWLOC_CPUBIND_PROCESS does); a thread created meanwhile may be missed.  The
 * memory policy of other threads cannot be changed at all.  Hence: call it
 * from main after transport_init() (MPI may bind the process itself, e.g.
 * MVAPICH2) and before starting the engine's threads, which inherit both
 * settings and pass them on to the tasks they spawn.
 *
 * Returns 0, or -1 with a reason in err (a kernel without NUMA support is not
 * an error).  Both resets are attempted even when the first fails. */
int affinity_reset_inherited(bool keep, struct pmc_error *err);

struct cpuset_pool;

/* Build the pool of rank host_rank of host_ranks (host_ranks >= 1).  topo:
 * a loaded topology to take the PUs and their grouping from, only read
 * during the call (tests pass a synthetic one, see
 * hwloc_topology_set_synthetic); NULL loads this machine's, whose PUs are
 * those the process may use (hwloc leaves out what the cgroup forbids).
 * within: when not NULL, only the PUs in this set are the host's (e.g. the
 * binding kept with --keep-affinity, then usually host_ranks = 1).  A rank
 * may get an empty pool (more ranks than PUs).
 * Returns the pool, or NULL with a reason in err (ENOMEM, hwloc failure,
 * bad arguments).  Free with cpuset_pool_destroy() (NULL is a no-op). */
struct cpuset_pool *cpuset_pool_create(hwloc_topology_t topo, const cpu_set_t *within,
                                       int host_rank, int host_ranks, struct pmc_error *err);
void cpuset_pool_destroy(struct cpuset_pool *pool);

/* A pool of n logical CPU slots numbered 0 .. n-1 (1 <= n <= CPU_SETSIZE)
 * with no topology: what PMC_AFFINITY names when the host is given more
 * CPUs (--host-cpus) than it has PUs, as PMC numbers --host-cpus N as
 * CPUs 0 .. N-1.  Such ids are for telling concurrent tasks apart, not
 * for binding (ids past the real CPUs bind nothing).  NULL with err (EINVAL
 * for n out of range, ENOMEM). */
struct cpuset_pool *cpuset_pool_create_slots(unsigned n, struct pmc_error *err);

/* PUs in the pool, and those of them not taken. */
unsigned cpuset_pool_size(const struct cpuset_pool *pool);
unsigned cpuset_pool_nfree(const struct cpuset_pool *pool);

/* Every PU of the pool, taken or not, into *out. */
void cpuset_pool_all(const struct cpuset_pool *pool, cpu_set_t *out);

/* Take n free PUs forming a minimal set (see the banner) into *out.
 * Returns 0 when taken; 1 when the pool is fragmented: n PUs are free but
 * not inside one locality domain although n would fit in one (nothing
 * taken, *out empty: run the task unbound and warn); -1 with EBUSY when fewer
 * than n PUs are free, with EINVAL when n is 0 (nothing taken, *out empty).
 * O(PUs x topology depth), no allocation. */
int cpuset_pool_take(struct cpuset_pool *pool, unsigned n, cpu_set_t *out);

/* The same, preferring PUs near something (e.g. the task's GPUs): the best
 * box (as above) among those whose PUs all lie in *near; when none has n
 * free PUs, or near is NULL or empty, the best box anywhere. */
int cpuset_pool_take_near(struct cpuset_pool *pool, unsigned n, const cpu_set_t *near,
                          cpu_set_t *out);

/* Take n free PUs as cpuset_pool_take() does, but when the pool is
 * fragmented take the first n free ones in logical order instead: ids for
 * PMC_AFFINITY without --set-affinity, where a task is not bound and
 * locality is only a preference.  0 when taken; -1 as cpuset_pool_take(). */
int cpuset_pool_take_any(struct cpuset_pool *pool, unsigned n, cpu_set_t *out);

/* Return PUs taken with cpuset_pool_take().  CPUs of *set that are not in
 * the pool or not taken are ignored. */
void cpuset_pool_give(struct cpuset_pool *pool, const cpu_set_t *set);

/* Write *set as a Linux CPU list ("0-3,8,10-11", the form of
 * Cpus_allowed_list in /proc/PID/status and of PMC_AFFINITY; "" when empty)
 * into buf, truncated to size - 1 characters and NUL-terminated when size >
 * 0.  Returns the length of the whole list, as snprintf does;
 * AFFINITY_LIST_MAX bytes always suffice. */
#define AFFINITY_LIST_MAX 4096
/* Bytes that hold one CPU id in decimal (< CPU_SETSIZE) and its NUL. */
#define AFFINITY_ID_MAX 12
size_t affinity_format(const cpu_set_t *set, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
