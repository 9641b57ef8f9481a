/* affinity.c - reset of the inherited binding, and the rank's PU pool; see
 * affinity.h.
 *
 * The pool is flat.  pu[] holds the OS index of each PU of the pool in hwloc
 * logical order and busy[] marks the taken ones.  box[] lists the distinct
 * ranges of pool indices covered by the topology's objects: hwloc numbers
 * PUs depth first, so the PUs of an object are consecutive (an object whose
 * pool PUs are not, which hwloc does not produce, is left out).  box[] is
 * sorted by size, then position, and each box is flagged when it lies inside
 * one locality domain (pool_is_local).  take() scans box[] once, smallest
 * first; nothing is allocated after cpuset_pool_create().
 */
#include "engine/host/affinity.h"

#include <dirent.h>
#include <errno.h>
#include <numaif.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sched/resources.h"

struct pool_box {
    unsigned lo, hi; /* pool indices [lo, hi) */
    bool local;      /* inside one locality domain */
};

struct cpuset_pool {
    unsigned npu, nfree;
    unsigned *pu; /* OS index of each PU, logical order */
    bool *busy;
    struct pool_box *box;
    unsigned nbox;
    unsigned local_max; /* PUs of the largest locality domain */
};

/* ---- the inherited binding -------------------------------------------- */

/* sched_setaffinity on every thread of the process. */
static int affinity_apply_all(const cpu_set_t *set, size_t size, struct pmc_error *err)
{
    DIR *d = opendir("/proc/self/task");
    if (!d) {
        if (sched_setaffinity(0, size, set) < 0)
            return pmc_errorf(err, "cannot reset the CPU affinity: %m");
        return 0;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        pid_t tid = (pid_t)atoi(e->d_name);
        if (sched_setaffinity(tid, size, set) < 0 && errno != ESRCH && rc == 0)
            rc = pmc_errorf(err, "cannot reset the CPU affinity of thread %d: %m", (int)tid);
    }
    closedir(d);
    return rc;
}

static int affinity_widen_cpus(struct pmc_error *err)
{
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    int ncpu = conf > CPU_SETSIZE ? (int)conf : CPU_SETSIZE;
    cpu_set_t *set = CPU_ALLOC(ncpu);
    if (!set)
        return pmc_errorf(err, "cannot reset the CPU affinity: %m");
    size_t size = CPU_ALLOC_SIZE(ncpu);
    memset(set, 0xff, size); /* the kernel keeps the online, allowed ones */
    int rc = affinity_apply_all(set, size, err);
    CPU_FREE(set);
    return rc;
}

static int affinity_reset_mempolicy(struct pmc_error *err)
{
    int mode;
    if (get_mempolicy(&mode, NULL, 0, NULL, 0) == 0 && mode == MPOL_DEFAULT)
        return 0; /* nothing to do, also where set_mempolicy is forbidden */
    if (set_mempolicy(MPOL_DEFAULT, NULL, 0) == 0 || errno == ENOSYS)
        return 0;
    return pmc_errorf(err, "cannot reset the NUMA memory policy: %m");
}

int affinity_reset_inherited(bool keep, struct pmc_error *err)
{
    if (keep)
        return 0;
    int rc = affinity_widen_cpus(err);
    if (rc == 0)
        return affinity_reset_mempolicy(err);
    affinity_reset_mempolicy(NULL);
    return rc;
}

/* ---- building the pool ------------------------------------------------ */

/* Whether hwloc PU obj belongs to the host's PUs. */
static bool pool_pu_usable(hwloc_obj_t pu, const cpu_set_t *within)
{
    return pu->os_index < CPU_SETSIZE && (!within || CPU_ISSET(pu->os_index, within));
}

/* Fill p->pu with block host_rank of host_ranks of the usable PUs. */
static int pool_take_share(struct cpuset_pool *p, hwloc_topology_t topo, const cpu_set_t *within,
                           int host_rank, int host_ranks)
{
    int all = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
    unsigned usable = 0, first = 0;
    for (int i = 0; i < all; i++)
        usable += pool_pu_usable(hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i), within);
    for (int r = 0; r < host_rank; r++)
        first += (unsigned)resources_share(usable, r, host_ranks);
    p->npu = p->nfree = (unsigned)resources_share(usable, host_rank, host_ranks);
    p->pu = calloc(p->npu + 1, sizeof *p->pu);
    p->busy = calloc(p->npu + 1, sizeof *p->busy);
    if (!p->pu || !p->busy)
        return -1;
    unsigned k = 0, n = 0;
    for (int i = 0; i < all && n < p->npu; i++) {
        hwloc_obj_t pu = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PU, (unsigned)i);
        if (pool_pu_usable(pu, within) && k++ >= first)
            p->pu[n++] = pu->os_index;
    }
    return 0;
}

/* The pool indices [lo, hi) of the PUs in set; false when there are none or
 * they are not consecutive. */
static bool pool_range(const struct cpuset_pool *p, hwloc_const_cpuset_t set, struct pool_box *b)
{
    unsigned count = 0;
    for (unsigned i = 0; i < p->npu; i++)
        if (hwloc_bitmap_isset(set, p->pu[i])) {
            if (count++ == 0)
                b->lo = i;
            b->hi = i + 1;
        }
    b->local = false;
    return count > 0 && count == b->hi - b->lo;
}

/* The locality domains met while collecting the boxes: the packages or,
 * when the pool has none, the NUMA nodes.  A NUMA node inside a package adds
 * nothing, and one over several packages is not local (hwloc puts a single
 * NUMA node over a whole machine that reports none). */
struct pool_domains {
    struct pool_box *pack, *numa;
    unsigned npack, nnuma;
};

static void pool_add_obj(struct cpuset_pool *p, hwloc_obj_t obj, struct pool_domains *dom)
{
    struct pool_box b;
    if (!obj->cpuset || !pool_range(p, obj->cpuset, &b))
        return;
    p->box[p->nbox++] = b;
    if (obj->type == HWLOC_OBJ_PACKAGE)
        dom->pack[dom->npack++] = b;
    else if (obj->type == HWLOC_OBJ_NUMANODE)
        dom->numa[dom->nnuma++] = b;
}

/* Whether b lies inside one domain; without any, the whole pool is one. */
static bool pool_is_local(const struct pool_box *b, const struct pool_domains *dom)
{
    const struct pool_box *d = dom->npack ? dom->pack : dom->numa;
    unsigned nd = dom->npack ? dom->npack : dom->nnuma;
    for (unsigned k = 0; k < nd; k++)
        if (d[k].lo <= b->lo && b->hi <= d[k].hi)
            return true;
    return nd == 0;
}

static int pool_box_cmp(const void *a, const void *b)
{
    const struct pool_box *x = a, *y = b;
    unsigned sx = x->hi - x->lo, sy = y->hi - y->lo;
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Sort, drop duplicates (a core and its caches), flag the local boxes; the
 * largest local box is the largest domain. */
static void pool_finish_boxes(struct cpuset_pool *p, const struct pool_domains *dom)
{
    qsort(p->box, p->nbox, sizeof *p->box, pool_box_cmp);
    unsigned n = 0;
    for (unsigned k = 0; k < p->nbox; k++)
        if (n == 0 || pool_box_cmp(&p->box[n - 1], &p->box[k]) != 0)
            p->box[n++] = p->box[k];
    p->nbox = n;
    p->local_max = 0;
    for (unsigned k = 0; k < p->nbox; k++) {
        struct pool_box *b = &p->box[k];
        b->local = pool_is_local(b, dom);
        if (b->local && b->hi - b->lo > p->local_max)
            p->local_max = b->hi - b->lo;
    }
}

static int pool_collect_boxes(struct cpuset_pool *p, hwloc_topology_t topo)
{
    int depth = hwloc_topology_get_depth(topo);
    int nnuma = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
    unsigned nobj = nnuma > 0 ? (unsigned)nnuma : 0;
    for (int d = 0; d < depth; d++)
        nobj += hwloc_get_nbobjs_by_depth(topo, d);
    struct pool_domains dom = {calloc(nobj + 1, sizeof *dom.pack),
                               calloc(nobj + 1, sizeof *dom.numa), 0, 0};
    p->box = calloc(nobj + 1, sizeof *p->box);
    int rc = -1;
    if (p->box && dom.pack && dom.numa) {
        for (int d = 0; d < depth; d++)
            for (unsigned i = 0; i < hwloc_get_nbobjs_by_depth(topo, d); i++)
                pool_add_obj(p, hwloc_get_obj_by_depth(topo, d, i), &dom);
        for (int i = 0; i < nnuma; i++)
            pool_add_obj(p, hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i), &dom);
        pool_finish_boxes(p, &dom);
        rc = 0;
    }
    free(dom.pack);
    free(dom.numa);
    return rc;
}

static int pool_load_topology(hwloc_topology_t *topo, struct pmc_error *err)
{
    if (hwloc_topology_init(topo) < 0)
        return pmc_errorf(err, "cannot read the CPU topology: hwloc_topology_init: %m");
    if (hwloc_topology_load(*topo) < 0) {
        int e = errno;
        hwloc_topology_destroy(*topo);
        errno = e;
        return pmc_errorf(err, "cannot read the CPU topology: hwloc_topology_load: %m");
    }
    return 0;
}

struct cpuset_pool *cpuset_pool_create(hwloc_topology_t topo, const cpu_set_t *within,
                                       int host_rank, int host_ranks, struct pmc_error *err)
{
    if (host_ranks < 1 || host_rank < 0 || host_rank >= host_ranks) {
        errno = EINVAL;
        pmc_errorf(err, "bad host rank %d of %d for the CPU pool", host_rank, host_ranks);
        return NULL;
    }
    hwloc_topology_t own = NULL;
    if (!topo && pool_load_topology(&own, err) < 0)
        return NULL;
    struct cpuset_pool *p = calloc(1, sizeof *p);
    if (!p || pool_take_share(p, topo ? topo : own, within, host_rank, host_ranks) < 0 ||
        pool_collect_boxes(p, topo ? topo : own) < 0) {
        pmc_errorf(err, "cannot build the CPU pool: %m");
        cpuset_pool_destroy(p);
        p = NULL;
    }
    if (own)
        hwloc_topology_destroy(own);
    return p;
}

struct cpuset_pool *cpuset_pool_create_slots(unsigned n, struct pmc_error *err)
{
    if (n == 0 || n > CPU_SETSIZE) {
        errno = EINVAL;
        pmc_errorf(err, "cannot number %u CPU slots (1 to %d)", n, CPU_SETSIZE);
        return NULL;
    }
    struct cpuset_pool *p = calloc(1, sizeof *p);
    if (p) {
        p->pu = calloc(n, sizeof *p->pu);
        p->busy = calloc(n, sizeof *p->busy);
        p->box = calloc(1, sizeof *p->box);
    }
    if (!p || !p->pu || !p->busy || !p->box) {
        pmc_errorf(err, "cannot build the CPU pool: %m");
        cpuset_pool_destroy(p);
        return NULL;
    }
    for (unsigned i = 0; i < n; i++)
        p->pu[i] = i;
    p->npu = p->nfree = p->local_max = n;
    p->box[0] = (struct pool_box){0, n, true};
    p->nbox = 1;
    return p;
}

void cpuset_pool_destroy(struct cpuset_pool *pool)
{
    if (!pool)
        return;
    free(pool->pu);
    free(pool->busy);
    free(pool->box);
    free(pool);
}

/* ---- using the pool --------------------------------------------------- */

unsigned cpuset_pool_size(const struct cpuset_pool *pool)
{
    return pool->npu;
}

unsigned cpuset_pool_nfree(const struct cpuset_pool *pool)
{
    return pool->nfree;
}

void cpuset_pool_all(const struct cpuset_pool *pool, cpu_set_t *out)
{
    CPU_ZERO(out);
    for (unsigned i = 0; i < pool->npu; i++)
        CPU_SET(pool->pu[i], out);
}

static unsigned pool_free_in(const struct cpuset_pool *p, const struct pool_box *b)
{
    unsigned f = 0;
    for (unsigned i = b->lo; i < b->hi; i++)
        f += !p->busy[i];
    return f;
}

/* Are all PUs of box b in near? */
static bool box_within(const struct cpuset_pool *p, const struct pool_box *b, const cpu_set_t *near)
{
    for (unsigned i = b->lo; i < b->hi; i++)
        if (!CPU_ISSET(p->pu[i], near))
            return false;
    return true;
}

/* The smallest eligible box with n free PUs, the fullest among equals;
 * with near, only boxes whose PUs all lie in near. */
static const struct pool_box *pool_best_box(const struct cpuset_pool *p, unsigned n,
                                            const cpu_set_t *near)
{
    const struct pool_box *best = NULL;
    unsigned best_free = 0;
    bool any = n > p->local_max; /* too big for one package: any box */
    for (unsigned k = 0; k < p->nbox; k++) {
        const struct pool_box *b = &p->box[k];
        if (b->hi - b->lo < n || !(b->local || any) || (near && !box_within(p, b, near)))
            continue;
        if (best && b->hi - b->lo > best->hi - best->lo)
            break;
        unsigned f = pool_free_in(p, b);
        if (f >= n && (!best || f < best_free)) {
            best = b;
            best_free = f;
            if (f == n)
                break; /* cannot fit better */
        }
    }
    return best;
}

/* Mark the first n free PUs from index `from` on busy and add them to out
 * (the caller knows that many are free there). */
static void pool_take_from(struct cpuset_pool *pool, unsigned from, unsigned n, cpu_set_t *out)
{
    for (unsigned i = from, got = 0; got < n; i++)
        if (!pool->busy[i]) {
            pool->busy[i] = true;
            CPU_SET(pool->pu[i], out);
            got++;
        }
    pool->nfree -= n;
}

int cpuset_pool_take_near(struct cpuset_pool *pool, unsigned n, const cpu_set_t *near,
                          cpu_set_t *out)
{
    CPU_ZERO(out);
    if (n == 0 || n > pool->nfree) {
        errno = n == 0 ? EINVAL : EBUSY;
        return -1;
    }
    const struct pool_box *b = near && CPU_COUNT(near) ? pool_best_box(pool, n, near) : NULL;
    if (!b)
        b = pool_best_box(pool, n, NULL);
    if (!b)
        return 1;
    pool_take_from(pool, b->lo, n, out);
    return 0;
}

int cpuset_pool_take(struct cpuset_pool *pool, unsigned n, cpu_set_t *out)
{
    return cpuset_pool_take_near(pool, n, NULL, out);
}

int cpuset_pool_take_any(struct cpuset_pool *pool, unsigned n, cpu_set_t *out)
{
    int rc = cpuset_pool_take_near(pool, n, NULL, out);
    if (rc != 1)
        return rc;
    pool_take_from(pool, 0, n, out); /* fragmented: the first free */
    return 0;
}

void cpuset_pool_give(struct cpuset_pool *pool, const cpu_set_t *set)
{
    for (unsigned i = 0; i < pool->npu; i++)
        if (pool->busy[i] && CPU_ISSET(pool->pu[i], set)) {
            pool->busy[i] = false;
            pool->nfree++;
        }
}

/* ---- formatting ------------------------------------------------------- */

size_t affinity_format(const cpu_set_t *set, char *buf, size_t size)
{
    size_t len = 0;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, set))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
            e++;
        char item[32];
        int k = e == c ? snprintf(item, sizeof item, "%s%d", len ? "," : "", c)
                       : snprintf(item, sizeof item, "%s%d-%d", len ? "," : "", c, e);
        for (int i = 0; i < k; i++, len++)
            if (len + 1 < size)
                buf[len] = item[i];
        c = e;
    }
    if (size)
        buf[len < size ? len : size - 1] = '\0';
    return len;
}
