/* resources.h - how a host's resources are split between its ranks.
 *
 * The host's CPUs and memory are discovered by the runtime
 * (engine/host/topology.h) or given with --host-cpus/--host-memory (or
 * PMC_HOST_CPUS / PMC_HOST_MEMORY); several ranks on one host (the same
 * host name, engine/transport/transport.h) split them between them, the remainder
 * going to the lowest host ranks.
 *
 * Pure policy: no probing, no allocation.  Thread-safety: reentrant.
 */
#ifndef PMC_RESOURCES_H
#define PMC_RESOURCES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The share of total for host rank r of n ranks (n >= 1, 0 <= r < n):
 * total / n, plus one for the first total % n ranks. */
uint64_t resources_share(uint64_t total, int r, int n);

#ifdef __cplusplus
}
#endif
#endif
