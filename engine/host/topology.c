/* topology.c - host CPUs (hwloc) and memory; see topology.h. */
#include "engine/host/topology.h"

#include <hwloc.h>
#include <sched.h>
#include <unistd.h>

uint32_t topology_affinity_cpus(void)
{
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 0;
}

static uint64_t topology_memory_mb(void)
{
    long pages = sysconf(_SC_PHYS_PAGES);
    long size = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || size <= 0)
        return 0;
    uint64_t mb = (uint64_t)pages * (uint64_t)size / (1024 * 1024);
    return mb ? mb : 1;
}

int topology_detect(uint32_t *cpus, uint64_t *memory_mb)
{
    *memory_mb = topology_memory_mb();
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    *cpus = online > 0 ? (uint32_t)online : 1;
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) < 0)
        return -1;
    int rc = -1;
    if (hwloc_topology_load(topo) == 0) {
        int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
        if (n > 0) {
            *cpus = (uint32_t)n;
            rc = 0;
        }
    }
    hwloc_topology_destroy(topo);
    return rc;
}
