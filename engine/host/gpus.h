/* gpus.h - the GPUs of this host, as the ids a task finds in
 * CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK and
 * PMC_GPUS.  From, in order: an inherited visibility variable (CUDA_, ROCR_,
 * HIP_VISIBLE_DEVICES, ZE_AFFINITY_MASK; set but empty: none); hwloc's OS
 * devices (CUDA, ROCm SMI, Level Zero, NVML; ids 0..N-1), skipped when
 * sysfs shows no GPU-class PCI device; /dev/nvidiaN.  --host-gpus N takes
 * the first N ids of an inherited list (an error when it has fewer), else
 * 0..N-1.  near[i] is the cpuset closest to GPU i, for --set-affinity.
 * Accepted id forms and how ids are placed: docs/modules.md "gpus".
 *
 * Thread-safety: gpus_discover() is not (hwloc, getenv): call it from the
 * main thread before the agent starts.  The others are reentrant.
 */
#ifndef PMC_GPUS_H
#define PMC_GPUS_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define GPUS_MAX 1024 /* ids kept per host */

/* The visibility variable the ids are for (agent_env.c sets it and
 * PMC_GPUS): the inherited one or the backend's.  ALL (--host-gpus alone):
 * CUDA, ROCR and ZE.  Only one is set, since HIP counts within ROCR's. */
enum gpus_var { GPUS_VAR_ALL, GPUS_VAR_CUDA, GPUS_VAR_ROCR, GPUS_VAR_HIP, GPUS_VAR_ZE };

struct gpu_ids {
    uint32_t n;
    char **id;         /* n NUL-terminated ids (malloc'd; gpus_free() frees) */
    cpu_set_t *near;   /* n sets of CPUs near each GPU, empty when unknown;
                          NULL when none is known (malloc'd; gpus_free() frees) */
    char source[64];   /* where they came from, for the log */
    enum gpus_var var; /* the variable the ids are meant for */
};

/* Find this host's GPUs; with override, exactly count.  0, or -1 with err:
 * ENOMEM; an inherited list shorter than count; a word of a visibility
 * list that is not a GPU id (a warning instead with override and 0). */
int gpus_discover(bool override, uint32_t count, struct gpu_ids *out, struct pmc_error *err);

/* "id,id,..." of the ids whose indices are idx[0..n) into buf (size bytes);
 * returns the length, or the length it would need (>= size: cut). */
size_t gpus_format(const struct gpu_ids *g, const uint32_t *idx, uint32_t n, char *buf,
                   size_t size);

void gpus_free(struct gpu_ids *g); /* g may be zeroed */

/* Tests only: 0 when devices_dir (/sys/bus/pci/devices) lists devices and
 * none has PCI base class 0x03 (display) or 0x12 (accelerator); 1 when it
 * may (unreadable or empty too).  0 skips hwloc's I/O discovery. */
int gpus__pci_may_have_gpu(const char *devices_dir);

/* Tests only: the devices_dir gpus_discover() checks (NULL: the default).
 * Kept, not copied.  Not thread-safe; call before gpus_discover(). */
void gpus__set_pci_dir(const char *devices_dir);

#ifdef __cplusplus
}
#endif
#endif
