/* monitor.c - Pegasus monitoring logs for the master; see monitor.h. */
#include "engine/master/monitor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/clock.h"
#include "io/log.h"

struct host {
    char *name;
    uint32_t cpus, gpus;
    uint64_t memory_mb;
    int64_t committed_cpus, committed_mem, committed_gpus;
    bool dirty;
};

struct monitor {
    struct jobstate_log *jobstate;
    struct dagman_log *dagman;
    struct resource_log *resource;
    struct host *hosts;
    uint32_t nhosts, cap;
    uint32_t *index; /* open addressing: hostname -> host + 1, 0 = empty */
    uint32_t index_mask;
    bool dirty;
    bool gpus;   /* some host has GPUs: the resource log gets their column */
    bool failed; /* a log lost lines (monitor_failed()) */
};

/* FNV-1a, 32 bits (Fowler, Noll, Vo). */
static uint32_t monitor_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

/* Rebuild the index at twice the host capacity (load <= 1/2). */
static int monitor_reindex(struct monitor *mon, uint32_t cap)
{
    uint32_t size = 16;
    while (size < 2 * cap)
        size *= 2;
    uint32_t *idx = calloc(size, sizeof *idx);
    if (!idx)
        return -1;
    for (uint32_t h = 0; h < mon->nhosts; h++) {
        uint32_t i = monitor_hash(mon->hosts[h].name) & (size - 1);
        while (idx[i])
            i = (i + 1) & (size - 1);
        idx[i] = h + 1;
    }
    free(mon->index);
    mon->index = idx;
    mon->index_mask = size - 1;
    return 0;
}

/* The slot of hostname in the index: its host or the empty slot for it. */
static uint32_t *monitor_slot(struct monitor *mon, const char *hostname)
{
    uint32_t i = monitor_hash(hostname) & mon->index_mask;
    while (mon->index[i] && strcmp(mon->hosts[mon->index[i] - 1].name, hostname) != 0)
        i = (i + 1) & mon->index_mask;
    return &mon->index[i];
}

static char *monitor_path(const char *dag_path, const char *suffix, bool beside)
{
    char *p = malloc(strlen(dag_path) + strlen(suffix) + 2);
    if (!p)
        return NULL;
    if (!beside) {
        sprintf(p, "%s%s", dag_path, suffix);
        return p;
    }
    const char *slash = strrchr(dag_path, '/');
    int dir_len = slash ? (int)(slash - dag_path) + 1 : 0;
    sprintf(p, "%.*s%s", dir_len, dag_path, suffix);
    return p;
}

char *monitor_log_path(const char *dag_path, enum monitor_log which)
{
    static const char *const suffix[MONITOR_LOGS] = {"jobstate.log", ".dagman.out", ".resource"};
    return monitor_path(dag_path, suffix[which], which == MONITOR_JOBSTATE);
}

static int monitor_open_logs(struct monitor *mon, const struct monitor_config *cfg,
                             struct pmc_error *err)
{
    char *p;
    if (cfg->jobstate_log) {
        p = monitor_log_path(cfg->dag_path, MONITOR_JOBSTATE);
        mon->jobstate = p ? jobstate_log_open(p, err) : NULL;
        free(p);
        if (!mon->jobstate)
            return -1;
    }
    if (cfg->dagman_log) {
        p = monitor_log_path(cfg->dag_path, MONITOR_DAGMAN);
        mon->dagman = p ? dagman_log_open(p, cfg->dag_path, err) : NULL;
        free(p);
        if (!mon->dagman)
            return -1;
    }
    if (cfg->resource_log) {
        p = monitor_log_path(cfg->dag_path, MONITOR_RESOURCE);
        mon->resource = p ? resource_log_open(p, err) : NULL;
        free(p);
        if (!mon->resource)
            return -1;
    }
    return 0;
}

struct monitor *monitor_open(const struct monitor_config *cfg, struct pmc_error *err)
{
    struct monitor *mon = calloc(1, sizeof *mon);
    if (!mon) {
        pmc_errorf(err, "out of memory");
        return NULL;
    }
    if (monitor_open_logs(mon, cfg, err) < 0) {
        monitor_close(mon);
        return NULL;
    }
    return mon;
}

bool monitor_wants_tasks(const struct monitor *mon)
{
    return mon && (mon->jobstate || mon->dagman);
}

void monitor_event(struct monitor *mon, enum wf_event ev, const char *task, uint32_t seq,
                   int exitcode)
{
    monitor_event_at(mon, ev, task, seq, exitcode, 0);
}

void monitor_event_at(struct monitor *mon, enum wf_event ev, const char *task, uint32_t seq,
                      int exitcode, double when)
{
    struct pmc_error err;
    if (!mon)
        return;
    if (mon->jobstate &&
        jobstate_log_event_at(mon->jobstate, ev, task, seq, exitcode, when, &err) < 0) {
        log_error("jobstate.log: %s", err.text);
        jobstate_log_close(mon->jobstate, NULL);
        mon->jobstate = NULL;
        mon->failed = true;
    }
    if (mon->dagman && dagman_log_event_at(mon->dagman, ev, task, seq, exitcode, when, &err) < 0) {
        log_error("dagman.out: %s", err.text);
        dagman_log_close(mon->dagman, NULL);
        mon->dagman = NULL;
        mon->failed = true;
    }
}

uint32_t monitor_add_node(struct monitor *mon, const char *hostname, uint32_t cpus,
                          uint64_t memory_mb, uint32_t gpus)
{
    if (!mon)
        return 0;
    uint32_t *slot = mon->index ? monitor_slot(mon, hostname) : NULL;
    if (slot && *slot) {
        struct host *h = &mon->hosts[*slot - 1];
        h->cpus += cpus;
        h->gpus += gpus;
        h->memory_mb += memory_mb;
        h->dirty = mon->dirty = true;
        mon->gpus |= gpus > 0;
        return *slot - 1;
    }
    if (mon->nhosts == mon->cap) {
        uint32_t cap = mon->cap ? mon->cap * 2 : 8;
        struct host *nh = realloc(mon->hosts, cap * sizeof *nh);
        if (nh)
            mon->hosts = nh;
        if (!nh || monitor_reindex(mon, cap) < 0)
            return 0; /* account it to host 0: the log is only informative */
        mon->cap = cap;
    }
    struct host *h = &mon->hosts[mon->nhosts];
    memset(h, 0, sizeof *h);
    h->name = strdup(hostname);
    if (!h->name)
        return 0; /* as above */
    h->cpus = cpus;
    h->gpus = gpus;
    h->memory_mb = memory_mb;
    h->dirty = mon->dirty = true;
    mon->gpus |= gpus > 0;
    *monitor_slot(mon, hostname) = mon->nhosts + 1;
    return mon->nhosts++;
}

void monitor_node_changed(struct monitor *mon, uint32_t h, int64_t dcpus, int64_t dmem,
                          int64_t dgpus)
{
    if (!mon || !mon->resource || h >= mon->nhosts)
        return;
    mon->hosts[h].committed_cpus += dcpus;
    mon->hosts[h].committed_mem += dmem;
    mon->hosts[h].committed_gpus += dgpus;
    mon->hosts[h].dirty = mon->dirty = true;
}

static uint64_t free_of(uint64_t total, int64_t committed)
{
    return committed <= 0 ? total : (uint64_t)committed >= total ? 0 : total - (uint64_t)committed;
}

/* One line: PMC's five columns, and the free GPUs when the hosts have any. */
static int monitor_line(struct monitor *mon, double now, uint64_t cpus, uint64_t mem, uint64_t gpus,
                        const char *name, struct pmc_error *err)
{
    if (mon->gpus)
        return resource_log_write_gpus(mon->resource, now, (uint32_t)cpus, (uint32_t)cpus, mem,
                                       name, (uint32_t)gpus, err);
    return resource_log_write(mon->resource, now, (uint32_t)cpus, (uint32_t)cpus, mem, name, err);
}

static void monitor_write_resources(struct monitor *mon)
{
    double now = pmc_epoch_s();
    int rc = 0;
    struct pmc_error err;
    for (uint32_t i = 0; i < mon->nhosts && rc == 0; i++) {
        struct host *h = &mon->hosts[i];
        uint64_t cpus = free_of(h->cpus, h->committed_cpus);
        uint64_t mem = free_of(h->memory_mb, h->committed_mem);
        uint64_t gpus = free_of(h->gpus, h->committed_gpus);
        if (h->dirty)
            rc = monitor_line(mon, now, cpus, mem, gpus, h->name, &err);
        h->dirty = false;
    }
    if (rc < 0) {
        log_error("resource log: %s", err.text);
        resource_log_close(mon->resource, NULL);
        mon->resource = NULL;
        mon->failed = true;
    }
    mon->dirty = false;
}

void monitor_flush(struct monitor *mon)
{
    if (!mon)
        return;
    if (mon->resource && mon->dirty)
        monitor_write_resources(mon);
    /* an error is sticky: monitor_close() reports it */
    if (jobstate_log_flush(mon->jobstate, NULL) < 0 || dagman_log_flush(mon->dagman, NULL) < 0 ||
        resource_log_flush(mon->resource, NULL) < 0)
        mon->failed = true;
}

bool monitor_failed(const struct monitor *mon)
{
    return mon && mon->failed;
}

int monitor_close(struct monitor *mon)
{
    if (!mon)
        return 0;
    monitor_flush(mon);
    struct pmc_error err;
    int rc = mon->failed ? -1 : 0;
    if (jobstate_log_close(mon->jobstate, &err) < 0) {
        log_error("jobstate.log: %s", err.text);
        rc = -1;
    }
    if (dagman_log_close(mon->dagman, &err) < 0) {
        log_error("dagman.out: %s", err.text);
        rc = -1;
    }
    if (resource_log_close(mon->resource, &err) < 0) {
        log_error("resource log: %s", err.text);
        rc = -1;
    }
    for (uint32_t i = 0; i < mon->nhosts; i++)
        free(mon->hosts[i].name);
    free(mon->hosts);
    free(mon->index);
    free(mon);
    return rc;
}
