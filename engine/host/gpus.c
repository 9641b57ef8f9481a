/* gpus.c - this host's GPU ids; see gpus.h. */
#include "engine/host/gpus.h"

#include <ctype.h>
#include <strings.h>
#include <dirent.h>
#include <hwloc.h>
#include <hwloc/glibc-sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/log.h"

static int add_id(struct gpu_ids *g, const char *s, size_t len)
{
    if (g->n >= GPUS_MAX)
        return 0;
    char **ids = realloc(g->id, sizeof *ids * (g->n + 1));
    if (!ids)
        return -1;
    g->id = ids;
    if (!(g->id[g->n] = strndup(s, len)))
        return -1;
    g->n++;
    return 0;
}

static int add_numbers(struct gpu_ids *g, uint32_t n)
{
    char buf[16];
    for (uint32_t i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf, "%u", i);
        if (add_id(g, buf, (size_t)len) < 0)
            return -1;
    }
    return 0;
}

/* Is the id s[0, len) in g already? */
static bool has_id(const struct gpu_ids *g, const char *s, size_t len)
{
    for (uint32_t i = 0; i < g->n; i++)
        if (strlen(g->id[i]) == len && memcmp(g->id[i], s, len) == 0)
            return true;
    return false;
}

/* Is s[0, len) a negative integer ("-1", Slurm's "none", or any other: CUDA
 * stops at an invalid index) or "NoDevFiles" (Slurm's "no GPU")?  Such a
 * word ends the list. */
static bool ends_list(const char *s, size_t len)
{
    if (len == 10 && memcmp(s, "NoDevFiles", 10) == 0)
        return true;
    return len >= 2 && s[0] == '-' && strspn(s + 1, "0123456789") >= len - 1;
}

/* Do the len - skip bytes of s after its first skip all belong to set (and
 * is there at least one)? */
static bool all_in(const char *s, size_t len, size_t skip, const char *set)
{
    if (len <= skip)
        return false;
    for (size_t i = skip; i < len; i++)
        if (!strchr(set, s[i]) || s[i] == '\0')
            return false;
    return true;
}

/* Is s[0, len) a GPU id a visibility variable may hold: a device number
 * ("2"; Level Zero's "0.1" device.sub-device too), a GPU UUID as CUDA and
 * ROCm write it ("GPU-" and hexadecimal digits and dashes; a unique
 * beginning of one is enough for CUDA), or a MIG instance ("MIG-<UUID>",
 * or the older "MIG-GPU-<UUID>/GI/CI")? */
static bool is_gpu_id(const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdefABCDEF-";
    static const char mig[] = "0123456789abcdefABCDEF-GPU/";
    if (all_in(s, len, 0, "0123456789."))
        return s[0] != '.' && s[len - 1] != '.' && !memmem(s, len, "..", 2);
    if (len > 4 && memcmp(s, "GPU-", 4) == 0)
        return all_in(s, len, 4, hex);
    if (len > 4 && memcmp(s, "MIG-", 4) == 0)
        return all_in(s, len, 4, mig);
    return false;
}

/* Split an inherited visibility list ("0,2" or "GPU-uuid,..."), read from
 * variable var.  An id given twice counts once (two tasks would share the
 * GPU); a negative number and "NoDevFiles" (Slurm's "no GPU") end the
 * list, as CUDA stops at an invalid index; empty words are skipped.  0, -1
 * with err for a word that is not a GPU id (is_gpu_id(): "garbage" was
 * handed to a task as its GPU), -2 out of memory. */
static int add_list(struct gpu_ids *g, const char *var, const char *list, struct pmc_error *err)
{
    const char *all = list;
    while (*list) {
        size_t len = strcspn(list, ",");
        if (ends_list(list, len))
            break;
        if (len && !is_gpu_id(list, len))
            return pmc_errorf(err,
                              "%s='%.100s': '%.*s' is not a GPU (a device number, GPU-<UUID> or "
                              "MIG-<UUID>; -1 or NoDevFiles for none)",
                              var, all, (int)(len > 60 ? 60 : len), list);
        if (len && !has_id(g, list, len) && add_id(g, list, len) < 0)
            return -2;
        list += len + (list[len] == ',');
    }
    return 0;
}

static const char *inherited_list(const char **name, enum gpus_var *var)
{
    static const char *const vars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                       "HIP_VISIBLE_DEVICES", "ZE_AFFINITY_MASK"};
    static const enum gpus_var kinds[] = {GPUS_VAR_CUDA, GPUS_VAR_ROCR, GPUS_VAR_HIP, GPUS_VAR_ZE};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v) { /* set but empty: the batch system hid every GPU */
            *name = vars[i];
            *var = kinds[i];
            return v;
        }
    }
    return NULL;
}

/* 1 when name is PREFIX<digit>..., else 0 (for counting). */
static uint32_t is_numbered(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && isdigit((unsigned char)name[n]);
}

/* hwloc's GPU backends, in the order of preference: the first that sees a
 * device gives the count and the locality.  CUDA and Level Zero number the
 * devices a visibility list leaves visible, as the ids do; NVML and ROCm
 * SMI number every device of the host (NVML in PCI order), so NVML comes
 * after CUDA. */
static const char *const backends[] = {"cuda", "rsmi", "ze", "nvml"};
static const enum gpus_var backend_var[] = {GPUS_VAR_CUDA, GPUS_VAR_ROCR, GPUS_VAR_ZE,
                                            GPUS_VAR_CUDA};
#define NBACKENDS (sizeof backends / sizeof backends[0])
#define BACKEND_RSMI 1
#define BACKEND_NVML 3

/* Does backend b number every device of the host (NVML, ROCm SMI), rather
 * than those a visibility list leaves visible (CUDA, Level Zero)? */
static bool numbers_every_device(size_t b)
{
    return b == BACKEND_RSMI || b == BACKEND_NVML;
}

/* The device number of an OS device named BACKEND<digits>, or -1. */
static long device_number(const char *name, const char *backend)
{
    if (!is_numbered(name, backend))
        return -1;
    return strtol(name + strlen(backend), NULL, 10);
}

/* A visibility list's hexadecimal UUID as a number: "GPU-0123abcd..." or
 * "0x0123abcd..." (ROCm's forms; ROCm SMI's unique id is a 64-bit number),
 * true when all of it is hexadecimal and fits in 64 bits. */
static bool hex_uuid(const char *s, uint64_t *v)
{
    if (strncmp(s, "GPU-", 4) == 0 || strncasecmp(s, "0x", 2) == 0)
        s += s[0] == '0' ? 2 : 4;
    size_t n = strspn(s, "0123456789abcdefABCDEF");
    if (n == 0 || n > 16 || s[n] != '\0')
        return false;
    *v = strtoull(s, NULL, 16);
    return true;
}

/* Does id, an entry of a visibility list, name OS device o, device dev of
 * backend b (one that numbers every device of the host: NVML, ROCm SMI)?
 * A number names the device of that number: the host's numbering that
 * CUDA and ROCm use before a list hides any, which is NVML's PCI order
 * where the GPUs are alike or CUDA_DEVICE_ORDER=PCI_BUS_ID (CUDA's own
 * order otherwise puts the fastest first).  A UUID names the device that
 * has it: NVML's "NVIDIAUUID" begins with it (CUDA accepts any unique
 * beginning of "GPU-<uuid>"), ROCm SMI's "AMDUUID" is the same number.
 * Anything else (a MIG instance, a Level Zero sub-device) names none. */
static bool names_device(const char *id, long dev, hwloc_obj_t o, size_t b)
{
    if (isdigit((unsigned char)id[0]) && id[strspn(id, "0123456789")] == '\0')
        return strtol(id, NULL, 10) == dev;
    const char *uuid = hwloc_obj_get_info_by_name(o, b == BACKEND_NVML ? "NVIDIAUUID" : "AMDUUID");
    if (!uuid || !*uuid)
        return false;
    if (b == BACKEND_NVML)
        return strncmp(id, "GPU-", 4) == 0 && strncmp(uuid, id, strlen(id)) == 0;
    uint64_t want, have;
    return hex_uuid(id, &want) && hex_uuid(uuid, &have) && want == have;
}

/* The PCI base class of a device directory's "class" file (sysfs:
 * "0x030200" -> 0x03), or -1 when it cannot be read. */
static long pci_base_class(const char *devices_dir, const char *dev)
{
    char path[4096], buf[32];
    snprintf(path, sizeof path, "%s/%s/class", devices_dir, dev);
    FILE *f = fopen(path, "re");
    long base = -1;
    if (f) {
        if (fgets(buf, sizeof buf, f))
            base = (long)(strtoul(buf, NULL, 16) >> 16);
        fclose(f);
    }
    return base;
}

int gpus__pci_may_have_gpu(const char *devices_dir)
{
    DIR *d = opendir(devices_dir);
    if (!d)
        return 1;
    int found = 0, devices = 0;
    for (struct dirent *e; !found && (e = readdir(d)) != NULL;) {
        if (e->d_name[0] == '.')
            continue;
        devices++;
        long base = pci_base_class(devices_dir, e->d_name);
        found = base < 0 || base == 0x03 || base == 0x12;
    }
    closedir(d);
    return found || devices == 0;
}

static const char *pci_devices_dir = "/sys/bus/pci/devices"; /* gpus__set_pci_dir() */

void gpus__set_pci_dir(const char *devices_dir)
{
    pci_devices_dir = devices_dir ? devices_dir : "/sys/bus/pci/devices";
}

/* The first of backends[] (its index) with an OS device in t, 0 when none
 * has one; count[] gets each backend's count. */
static size_t preferred_backend(hwloc_topology_t t, uint32_t count[NBACKENDS])
{
    for (hwloc_obj_t o = NULL; (o = hwloc_get_next_osdev(t, o)) != NULL;)
        for (size_t b = 0; o->name && b < NBACKENDS; b++)
            count[b] += device_number(o->name, backends[b]) >= 0;
    for (size_t b = 0; b < NBACKENDS; b++)
        if (count[b])
            return b;
    return 0;
}

/* Put in near[] (m sets) the CPUs of t's non-I/O ancestor of OS device o,
 * device dev of backend b, for each id it stands for: ids (m of them, an
 * inherited list or --host-gpus's) where b numbers every device of the
 * host (names_device()), else the id of index dev (ids NULL: the detected
 * "0".."m-1"; CUDA and Level Zero number the visible devices in the order
 * of the list). */
static void place_device(hwloc_topology_t t, hwloc_obj_t o, long dev, size_t b,
                         const struct gpu_ids *ids, cpu_set_t *near, uint32_t m)
{
    hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(t, o);
    if (!anc || !anc->cpuset)
        return;
    if (!(ids && numbers_every_device(b))) {
        if (dev < (long)m)
            hwloc_cpuset_to_glibc_sched_affinity(t, anc->cpuset, &near[dev], sizeof near[dev]);
        return;
    }
    for (uint32_t i = 0; i < m; i++)
        if (names_device(ids->id[i], dev, o, b))
            hwloc_cpuset_to_glibc_sched_affinity(t, anc->cpuset, &near[i], sizeof near[i]);
}

/* The GPUs hwloc's I/O discovery sees, all from one backend
 * (preferred_backend()), so that ids never mix numberings (NVML numbers
 * every GPU in PCI order, CUDA the visible ones in its own).  *near gets
 * the locality of m ids, m = ids->n or, when ids is NULL, the count found
 * (at most GPUS_MAX): near[i] the CPUs of the closest non-I/O ancestor of
 * the device id i stands for (place_device()), empty when unknown;
 * malloc'd, NULL when there is nothing to place or memory ran out.  One
 * topology load, skipped
 * (0, *near NULL) when sysfs lists PCI devices and none has a GPU's class
 * (gpus__pci_may_have_gpu()): that discovery reads every PCI device's
 * configuration space, a cost worth skipping on a machine without GPUs. */
static uint32_t hwloc_gpus(const struct gpu_ids *ids, cpu_set_t **near, enum gpus_var *var)
{
    *near = NULL;
    hwloc_topology_t t;
    if (!gpus__pci_may_have_gpu(pci_devices_dir) || hwloc_topology_init(&t) < 0)
        return 0;
    uint32_t count[NBACKENDS] = {0}, found = 0;
    hwloc_topology_set_io_types_filter(t, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
    /* OpenCL and GL devices are not counted, and hwloc's OpenCL component
     * starts every OpenCL driver (NVIDIA's by initialising CUDA), which is
     * slow.  -1 (ENOENT) where the plugin is not installed: nothing to do. */
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
    hwloc_topology_set_components(t, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
    if (hwloc_topology_load(t) == 0) {
        size_t b = preferred_backend(t, count);
        found = count[b];
        *var = backend_var[b];
        uint32_t m = ids ? ids->n : found < GPUS_MAX ? found : GPUS_MAX;
        cpu_set_t *v = m ? calloc(m, sizeof *v) : NULL;
        for (hwloc_obj_t o = NULL; v && (o = hwloc_get_next_osdev(t, o)) != NULL;) {
            long dev = o->name ? device_number(o->name, backends[b]) : -1;
            if (dev >= 0)
                place_device(t, o, dev, b, ids, v, m);
        }
        *near = v;
    }
    hwloc_topology_destroy(t);
    return found;
}

/* Keep near (g->n sets, malloc'd or NULL; taken over) as g->near, which
 * must be NULL, when hwloc knew the locality of any of g's ids, else free
 * it. */
static void keep_near(struct gpu_ids *g, cpu_set_t *near)
{
    bool known = false;
    for (uint32_t i = 0; near && i < g->n && !known; i++)
        known = CPU_COUNT(&near[i]) > 0;
    if (known)
        g->near = near;
    else
        free(near);
}

/* near[i] for each id, from hwloc; NULL (not an error) when it knows none. */
static void find_locality(struct gpu_ids *g)
{
    if (g->n == 0)
        return;
    cpu_set_t *near;
    enum gpus_var unused;
    hwloc_gpus(g, &near, &unused);
    keep_near(g, near);
}

/* /dev/nvidia0, /dev/nvidia1, ... (not nvidiactl, nvidia-uvm). */
static uint32_t dev_nvidia(void)
{
    DIR *d = opendir("/dev");
    uint32_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += is_numbered(e->d_name, "nvidia");
    if (d)
        closedir(d);
    return n;
}

/* Steps 2 and 3 of gpus.h, with the locality of step 2's devices from the
 * same hwloc load (one topology load, not two).  0, or -1 when out of
 * memory. */
static int discover_detected(struct gpu_ids *g)
{
    cpu_set_t *near;
    uint32_t n = hwloc_gpus(NULL, &near, &g->var);
    const char *how = "hwloc";
    if (n == 0 && (n = dev_nvidia()) > 0) {
        how = "/dev/nvidia*";
        g->var = GPUS_VAR_CUDA;
    }
    snprintf(g->source, sizeof g->source, "%s", how);
    int rc = add_numbers(g, n);
    keep_near(g, near);
    return rc;
}

int gpus_discover(bool override, uint32_t count, struct gpu_ids *out, struct pmc_error *err)
{
    memset(out, 0, sizeof *out);
    enum gpus_var kind = GPUS_VAR_ALL;
    const char *var = NULL, *list = inherited_list(&var, &kind);
    int rc = 0;
    if (list)
        rc = add_list(out, var, list, err);
    if (rc == -1 && override && count == 0) { /* --host-gpus 0: the list is not used */
        log_warn("%s (ignored: --host-gpus 0)", err->text);
        gpus_free(out);
        rc = 0;
    } else if (rc == -1) {
        gpus_free(out);
        return -1;
    }
    if (rc == 0 && override && list && out->n < count) {
        uint32_t n = out->n;
        gpus_free(out);
        return pmc_errorf(err, "--host-gpus %u: the inherited %s lists %u GPUs (\"%s\")", count,
                          var, n, list);
    } else if (rc == 0 && override && list) {
        while (out->n > count)
            free(out->id[--out->n]);
        snprintf(out->source, sizeof out->source, "--host-gpus of %s", var);
    } else if (rc == 0 && override) {
        gpus_free(out);
        rc = add_numbers(out, count);
        snprintf(out->source, sizeof out->source, "--host-gpus");
    } else if (rc == 0 && list) {
        snprintf(out->source, sizeof out->source, "%s", var);
    } else if (rc == 0) {
        rc = discover_detected(out);
    }
    if (list)
        out->var = kind; /* also for --host-gpus N of the list */
    if (rc == 0 && (list || override))
        find_locality(out);
    if (rc < 0) {
        gpus_free(out);
        return pmc_errorf(err, "out of memory for the GPU ids");
    }
    return 0;
}

size_t gpus_format(const struct gpu_ids *g, const uint32_t *idx, uint32_t n, char *buf, size_t size)
{
    size_t len = 0;
    if (buf && size)
        buf[0] = '\0';
    for (uint32_t i = 0; i < n; i++) {
        const char *id = idx[i] < g->n ? g->id[idx[i]] : "?";
        bool room = buf && len < size;
        int w = snprintf(room ? buf + len : NULL, room ? size - len : 0, "%s%s", i ? "," : "", id);
        len += (size_t)(w > 0 ? w : 0);
    }
    return len;
}

void gpus_free(struct gpu_ids *g)
{
    for (uint32_t i = 0; i < g->n; i++)
        free(g->id[i]);
    free(g->id);
    free(g->near);
    g->id = NULL;
    g->near = NULL;
    g->n = 0;
}
