/* topology.h - what this machine offers: its CPUs and physical memory, as
 * discovered by probing it (hwloc, sysconf).  Discovery belongs to the
 * runtime; how the host's resources are split between its ranks is policy
 * (sched/resources.h).
 *
 * CPUs are the processing units the process may use, counted with hwloc
 * (the topology restricted to the allowed cpuset); memory is the host's
 * physical RAM in MB.  --host-cpus/--host-memory (or PMC_HOST_CPUS /
 * PMC_HOST_MEMORY) replace the detected values for the whole host.
 *
 * Thread-safety: reentrant.
 */
#ifndef PMC_TOPOLOGY_H
#define PMC_TOPOLOGY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Detect the host's CPUs (*cpus, >= 1) and physical memory (*memory_mb, in
 * MB; 0 when sysconf cannot tell).  Returns 0, or -1 when hwloc fails: then
 * *cpus falls back to sysconf(_SC_NPROCESSORS_ONLN) (1 when that fails too)
 * and *memory_mb is still set.  Loads and frees a whole hwloc topology:
 * milliseconds, call it once. */
int topology_detect(uint32_t *cpus, uint64_t *memory_mb);

/* The CPUs the calling thread may run on (sched_getaffinity: a batch
 * system's or mpiexec's binding, taskset), which threads it starts inherit;
 * at most what topology_detect() counts for the host, fewer when the rank
 * is bound.  0 when the kernel cannot tell.  One system call. */
uint32_t topology_affinity_cpus(void);

#ifdef __cplusplus
}
#endif
#endif
