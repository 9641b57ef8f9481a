/* monitor.h - the logs Pegasus's monitoring reads: jobstate.log
 * (--jobstate-log), DAGFILE.dagman.out (--monitord-hack) and
 * DAGFILE.resource (unless --no-resource-log), over io/eventlog.h
 * (formats: docs/pegasus.md).
 *
 * Resource log: ranks with one hostname are one host; a host's free CPUs
 * are its CPUs less what the master committed to its ranks (capped at its
 * CPUs); one line per host whose free resources changed, at each
 * monitor_flush().
 *
 * Errors: a log that cannot be created fails monitor_open(); a later
 * write error is logged once, closes that log, and makes monitor_failed()
 * true (the run goes on but must not report success).  Every function
 * accepts a NULL monitor and then does nothing.
 *
 * Thread-safety: the master thread only.
 */
#ifndef PMC_MONITOR_H
#define PMC_MONITOR_H

#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"
#include "io/eventlog.h"

#ifdef __cplusplus
extern "C" {
#endif

struct monitor_config {
    const char *dag_path;
    bool jobstate_log; /* jobstate.log next to the DAG */
    bool dagman_log;   /* DAGFILE.dagman.out */
    bool resource_log; /* DAGFILE.resource */
};

struct monitor;

/* The event logs, by what cfg's flags name. */
enum monitor_log { MONITOR_JOBSTATE, MONITOR_DAGMAN, MONITOR_RESOURCE, MONITOR_LOGS };

/* Where log `which` of the DAG at dag_path goes: jobstate.log in the
 * DAG's directory, DAGFILE.dagman.out, DAGFILE.resource.  Malloc'ed (the
 * caller frees it); NULL with ENOMEM.  Reentrant. */
char *monitor_log_path(const char *dag_path, enum monitor_log which);

/* Open the logs asked for.  NULL with err when one cannot be created. */
struct monitor *monitor_open(const struct monitor_config *cfg, struct pmc_error *err);

/* True when task events are wanted (the caller keeps sequence numbers). */
bool monitor_wants_tasks(const struct monitor *mon);

/* A task or workflow event (eventlog.h's wf_event), stamped now. */
void monitor_event(struct monitor *mon, enum wf_event ev, const char *task, uint32_t seq,
                   int exitcode);

/* The same, stamped `when` (seconds since the epoch, e.g. a task's real
 * start; <= 0: now). */
void monitor_event_at(struct monitor *mon, enum wf_event ev, const char *task, uint32_t seq,
                      int exitcode, double when);

/* Register a node; returns its host index for monitor_node_changed().
 * Once a host has GPUs, resource lines get a sixth column, free GPUs. */
uint32_t monitor_add_node(struct monitor *mon, const char *hostname, uint32_t cpus,
                          uint64_t memory_mb, uint32_t gpus);

/* The master's commitment to a node of host h changed by dcpus / dmem (MB)
 * / dgpus. */
void monitor_node_changed(struct monitor *mon, uint32_t h, int64_t dcpus, int64_t dmem,
                          int64_t dgpus);

/* Write the resource lines of changed hosts, and flush every log. */
void monitor_flush(struct monitor *mon);

/* True once a log lost lines (a write, flush or close failed). */
bool monitor_failed(const struct monitor *mon);

/* Flush, close, free.  0, or -1 (logged) when a log lost lines during the
 * run or at this close.  NULL is a no-op returning 0. */
int monitor_close(struct monitor *mon);

#ifdef __cplusplus
}
#endif
#endif
