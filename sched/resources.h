/* resources.h - what a node offers: CPUs and memory, detected and split.
 *
 * CPUs are the processing units the process may use, counted with hwloc
 * (the topology restricted to the allowed cpuset); memory is the host's
 * physical RAM in MB.  --host-cpus/--host-memory (or PMC_HOST_CPUS /
 * PMC_HOST_MEMORY) replace the detected values for the whole host; several
 * ranks on one host (found with MPI_Comm_split_type) split the host's
 * resources between them, the remainder going to the lowest host ranks.
 *
 * Thread-safety: reentrant.
 */
#ifndef PMC_RESOURCES_H
#define PMC_RESOURCES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Detect the host's CPUs and physical memory (MB).  Returns 0, or -1 when
 * hwloc fails (then *cpus falls back to sysconf(_SC_NPROCESSORS_ONLN)). */
int resources_detect(uint32_t *cpus, uint64_t *memory_mb);

/* The share of total for host rank r of n ranks (n >= 1, 0 <= r < n):
 * total / n, plus one for the first total % n ranks. */
uint64_t resources_share(uint64_t total, int r, int n);

#ifdef __cplusplus
}
#endif
#endif
