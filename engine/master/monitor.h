/* monitor.h - what the master tells Pegasus's monitoring tools: jobstate.log
 * (--jobstate-log), DAGFILE.dagman.out (--monitord-hack) and
 * DAGFILE.resource (unless --no-resource-log), over io/eventlog.h.
 *
 * Hosts: nodes (ranks) with the same hostname are one host in the resource
 * log.  A host's free CPUs are its CPUs minus what the master committed to
 * its ranks (running or queued there, capped at its CPUs); a line is
 * written for each host whose free resources changed since the last
 * monitor_flush(), PMC's lines only (no totals line: the totals are in
 * --status and --summary-json), so the log has one line per change at the
 * granularity of a scheduling round, as PMC's one line per host at the
 * start and at every task start and end.
 *
 * Opening is checked before any task runs (a log that cannot be created
 * fails the run at start); later write errors are logged once and that log
 * is closed; the run goes on, as in PMC, but may not report success
 * (monitor_failed(), monitor_close(): PMC went on and exited 0 with the
 * log cut short, which Pegasus's monitoring then misreads).  Every function accepts a NULL
 * monitor (no logs) and then does nothing.
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
 * caller frees it); NULL with ENOMEM.  For the master's check that no two
 * files of the run are one (io/pathset.h).  Reentrant. */
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

/* Register a node; returns its host index for monitor_node_changed().  Once
 * a host has GPUs, every resource line gets a sixth column, the free GPUs. */
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
