/* topology.h - this machine's CPUs and physical memory, probed with hwloc
 * and sysconf.  How they are split between ranks is sched/resources.h's.
 * --host-cpus/--host-memory replace these values for the whole host.
 * Thread-safety: reentrant.
 */
#ifndef PMC_TOPOLOGY_H
#define PMC_TOPOLOGY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The PUs this process may use (*cpus >= 1) and physical RAM (*memory_mb,
 * MB; 0 if unknown).  0, or -1 when hwloc fails (*cpus from sysconf, or
 * 1).  Loads a whole topology: call once. */
int topology_detect(uint32_t *cpus, uint64_t *memory_mb);

/* How many CPUs the calling thread may run on (sched_getaffinity); 0 when
 * the kernel cannot tell. */
uint32_t topology_affinity_cpus(void);

#ifdef __cplusplus
}
#endif
#endif
