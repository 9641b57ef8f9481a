/* gpus.h - the GPUs of this host, named as the tasks will see them.
 *
 * A host's GPUs are a list of ids: the strings a task finds in
 * CUDA_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES, ZE_AFFINITY_MASK and PMC_GPUS.
 * Where they come from, in order:
 *   1. a visibility variable pmc-hybrid itself inherited (the batch system
 *      or the user restricted it): CUDA_VISIBLE_DEVICES, else
 *      ROCR_VISIBLE_DEVICES, else HIP_VISIBLE_DEVICES, else ZE_AFFINITY_MASK
 *      ("2,3" -> ids "2" and "3"); tasks then get a subset of those ids.
 *      Set but empty means no GPU (no detection); an id given twice counts
 *      once; "-1" (any negative number) or "NoDevFiles" (Slurm's "none")
 *      ends the list, as CUDA stops at an invalid index; empty words are
 *      skipped.  Every other word must be a GPU id: a device number ("2",
 *      Level Zero's "0.1"), "GPU-" and a UUID's hexadecimal digits and
 *      dashes (CUDA's and ROCm's UUIDs, or a unique beginning of one), or
 *      "MIG-" and a MIG instance's UUID ("MIG-GPU-<UUID>/GI/CI" too); any
 *      other word ("garbage", "$$") is an error naming the variable
 *      (with --host-gpus 0, which uses no list, a warning);
 *   2. hwloc's OS devices (CUDA "cudaN", NVML "nvmlN", ROCm SMI "rsmiN",
 *      Level Zero "zeN" where hwloc was built with those backends): the
 *      first of CUDA, ROCm SMI, Level Zero and NVML that sees a device,
 *      ids "0".."N-1"; not asked when sysfs shows no PCI device of a GPU's
 *      class (gpus__pci_may_have_gpu());
 *   3. /dev/nvidiaN device files (NVIDIA's driver without hwloc's CUDA or
 *      NVML backend): ids "0".."N-1".
 * --host-gpus N / PMC_HOST_GPUS=N overrides the count (needed on machines
 * whose GPUs cannot be seen, and for tests): the first N ids of an inherited
 * visibility list (an error when it has fewer: ids past it would be GPUs
 * the batch system did not give), else "0".."N-1".
 * Locality: near[i] is the cpuset of the closest non-I/O ancestor of the
 * hwloc OS device id i stands for, in one backend (the one step 2 picks),
 * used by --set-affinity to bind a GPU task's CPUs near its GPUs.  CUDA and
 * Level Zero number the devices a visibility list leaves visible, in the
 * list's order, so id i is "cudai" (or "zei").  NVML and ROCm SMI number
 * every device of the host, so an id is placed by what it holds: a number
 * k by "nvmlk" ("rsmik"), which is CUDA's device k where the GPUs are
 * alike or CUDA_DEVICE_ORDER=PCI_BUS_ID (NVML numbers in PCI order; CUDA's
 * default order puts the fastest first); a UUID by the device with that
 * UUID (NVML's NVIDIAUUID begins with it; ROCm SMI's AMDUUID is the same
 * hexadecimal number); anything else (a MIG instance) stays unplaced.
 * The count and the locality of step 2 come from one topology load.
 *
 * Thread-safety: gpus_discover() is not (hwloc topology load, getenv);
 * call it from the main thread before the agent starts.
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

/* The visibility variable a task's GPU ids are meant for (agent_env.c sets
 * that one and PMC_GPUS): the one the ids came from, or the detected
 * backend's (CUDA and NVML, /dev/nvidia*: CUDA; ROCm SMI: ROCR; Level Zero:
 * ZE).  ROCm's HIP counts CUDA_VISIBLE_DEVICES and HIP_VISIBLE_DEVICES
 * within the devices ROCR_VISIBLE_DEVICES leaves, so an id meant for ROCR
 * must not be put in them too.  ALL (--host-gpus alone: the kind is
 * unknown): CUDA, ROCR and ZE alike. */
enum gpus_var { GPUS_VAR_ALL, GPUS_VAR_CUDA, GPUS_VAR_ROCR, GPUS_VAR_HIP, GPUS_VAR_ZE };

struct gpu_ids {
    uint32_t n;
    char **id;         /* n NUL-terminated ids (malloc'd; gpus_free() frees) */
    cpu_set_t *near;   /* n sets: the CPUs near each GPU (hwloc's locality of the
                          backend's device i), empty when unknown; NULL when hwloc
                          knows none or memory ran out (malloc'd; gpus_free()
                          frees) */
    char source[64];   /* where they came from, for the log */
    enum gpus_var var; /* the variable the ids are meant for */
};

/* Find this host's GPUs; with override, exactly count of them (see above).
 * 0, or -1 with err: out of memory; "--host-gpus N: the inherited VAR lists
 * M GPUs (\"LIST\")"; "CUDA_VISIBLE_DEVICES='garbage,1': 'garbage' is not a
 * GPU (a device number, GPU-<UUID> or MIG-<UUID>; -1 or NoDevFiles for
 * none)" for a word of a visibility list that is not a GPU id (above;
 * logged as a warning instead with override and count 0). */
int gpus_discover(bool override, uint32_t count, struct gpu_ids *out, struct pmc_error *err);

/* "id,id,..." of the ids whose indices are idx[0..n) into buf (size bytes);
 * returns the length, or the length it would need (>= size: cut). */
size_t gpus_format(const struct gpu_ids *g, const uint32_t *idx, uint32_t n, char *buf,
                   size_t size);

void gpus_free(struct gpu_ids *g); /* g may be zeroed */

/* 0 when devices_dir (sysfs's /sys/bus/pci/devices) lists devices and
 * none is of PCI base class 0x03 (display controller: VGA, 3D, other;
 * NVIDIA, AMD and Intel GPUs) or 0x12 (processing accelerator: some AMD
 * Instinct), read from each device's "class" file; 1 otherwise (a list
 * that cannot be read or is empty, a class that cannot be read: let hwloc
 * look).  gpus.c skips hwloc's I/O discovery (step 2 above, and the
 * locality) when it is 0.  Internal, exposed for the tests. */
int gpus__pci_may_have_gpu(const char *devices_dir);

/* The devices_dir gpus_discover() checks with gpus__pci_may_have_gpu()
 * (NULL: /sys/bus/pci/devices again).  For the tests, which point hwloc
 * at an XML topology with GPUs (HWLOC_XMLFILE) on a machine without any.
 * The string is kept, not copied: it must outlive those calls.  Not
 * thread-safe; call before gpus_discover(). */
void gpus__set_pci_dir(const char *devices_dir);

#ifdef __cplusplus
}
#endif
#endif
