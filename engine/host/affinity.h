/* affinity.h - CPU binding of tasks: the inherited binding, and the pool of
 * processing units (PUs) a rank binds its tasks to (PMC_CPUS/PMC_AFFINITY,
 * --set-affinity; docs/compat-notes.md "Task environment").
 *
 * Rank host_rank of host_ranks owns a contiguous block of the host's PUs in
 * hwloc's logical order, sized as resources_share() sizes CPU shares.  A
 * task gets the smallest topology object (core, cache, NUMA node, package)
 * whose free PUs suffice, preferring partly used ones, and never spans two
 * packages (else NUMA nodes) unless it is larger than one.  The algorithm
 * and the handling of --host-cpus: docs/modules.md "affinity".  PUs whose
 * OS index is >= CPU_SETSIZE are left out of every pool.
 *
 * Thread-safety: affinity_reset_inherited() from the main thread before
 * the engine starts threads.  A cpuset_pool is not thread-safe: the agent
 * thread owns it.  affinity_format() is reentrant.
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

/* As PMC unless keep (--keep-affinity): widen every thread's CPU affinity
 * to all allowed CPUs and reset the calling thread's NUMA policy to
 * MPOL_DEFAULT.  Only the caller's memory policy can change, so call it
 * after transport_init() (MPI may bind) and before starting threads.  0, or
 * -1 with err (no NUMA support is not an error); both resets are tried. */
int affinity_reset_inherited(bool keep, struct pmc_error *err);

struct cpuset_pool;

/* Pool of rank host_rank of host_ranks (>= 1).  topo: a loaded topology,
 * only read during the call; NULL loads this machine's allowed PUs.
 * within: NULL, or the only PUs that count (--keep-affinity).  The pool may
 * be empty.  NULL with err (ENOMEM, hwloc, bad arguments).
 * cpuset_pool_destroy(NULL) is a no-op. */
struct cpuset_pool *cpuset_pool_create(hwloc_topology_t topo, const cpu_set_t *within,
                                       int host_rank, int host_ranks, struct pmc_error *err);
void cpuset_pool_destroy(struct cpuset_pool *pool);

/* A pool of n ids 0 .. n-1 (1 <= n <= CPU_SETSIZE), no topology: for
 * PMC_AFFINITY when --host-cpus exceeds the PUs, as PMC numbers them; not
 * for binding.  NULL with err (EINVAL, ENOMEM). */
struct cpuset_pool *cpuset_pool_create_slots(unsigned n, struct pmc_error *err);

/* PUs in the pool, and those of them not taken. */
unsigned cpuset_pool_size(const struct cpuset_pool *pool);
unsigned cpuset_pool_nfree(const struct cpuset_pool *pool);

/* Every PU of the pool, taken or not, into *out. */
void cpuset_pool_all(const struct cpuset_pool *pool, cpu_set_t *out);

/* Take n free PUs forming a minimal set into *out.  0: taken; 1: n are
 * free but not in one domain though n would fit one (run unbound, warn);
 * -1 with EBUSY (fewer than n free) or EINVAL (n == 0).  Unless 0, nothing
 * is taken and *out is empty.  O(PUs x topology depth), no allocation. */
int cpuset_pool_take(struct cpuset_pool *pool, unsigned n, cpu_set_t *out);

/* The same, preferring an object inside *near (the task's GPUs' CPUs);
 * anywhere when none fits or near is NULL or empty. */
int cpuset_pool_take_near(struct cpuset_pool *pool, unsigned n, const cpu_set_t *near,
                          cpu_set_t *out);

/* As cpuset_pool_take(), but when fragmented take the first n free PUs
 * (PMC_AFFINITY ids without --set-affinity).  0, or -1 as there. */
int cpuset_pool_take_any(struct cpuset_pool *pool, unsigned n, cpu_set_t *out);

/* Return taken PUs; CPUs of *set not taken from the pool are ignored. */
void cpuset_pool_give(struct cpuset_pool *pool, const cpu_set_t *set);

/* Write *set as a Linux CPU list ("0-3,8", as Cpus_allowed_list; "" when
 * empty) into buf as snprintf does, returning the whole length;
 * AFFINITY_LIST_MAX bytes always suffice. */
#define AFFINITY_LIST_MAX 4096
/* Bytes that hold one CPU id in decimal (< CPU_SETSIZE) and its NUL. */
#define AFFINITY_ID_MAX 12
size_t affinity_format(const cpu_set_t *set, char *buf, size_t size);

#ifdef __cplusplus
}
#endif
#endif
