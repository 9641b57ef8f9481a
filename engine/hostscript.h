/* hostscript.h - the host script (PMC manual "Host Scripts").
 *
 * One rank per host (host rank 0) starts the script before any task runs on
 * that host, in its own process group, with stdout and stderr on the log
 * (our stderr).  It must exit 0 within HOSTSCRIPT_TIMEOUT_S seconds (PMC's
 * 60 s; the environment variable PMC_HOST_SCRIPT_TIMEOUT, seconds, changes
 * it, so that tests need not wait a minute); after that it gets SIGALRM (as
 * in PMC), then SIGKILL if it still runs after HOSTSCRIPT_GRACE_MS.  Whatever
 * it left running (services such as memcached) stays in its process group
 * until the end of the workflow, when the group gets SIGTERM and, after
 * HOSTSCRIPT_GRACE_MS, SIGKILL.
 *
 * Thread-safety: call from the main thread (it blocks while the script
 * runs).
 */
#ifndef PMC_HOSTSCRIPT_H
#define PMC_HOSTSCRIPT_H

#include <stdbool.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HOSTSCRIPT_TIMEOUT_S 60 /* PMC's limit, the default */
#define HOSTSCRIPT_TIMEOUT_ENV "PMC_HOST_SCRIPT_TIMEOUT"
#define HOSTSCRIPT_GRACE_MS 3000

/* The time limit in seconds: PMC_HOST_SCRIPT_TIMEOUT when it holds a
 * decimal number of seconds > 0 (at most INT_MAX / 1000), else
 * HOSTSCRIPT_TIMEOUT_S (an unusable value is logged with log_warn()).
 * Reads the environment: main thread. */
double hostscript_timeout_s(void);

/* Run the script at path and wait for it; rank is the rank that runs it
 * (the host's agent), named as PMC's worker names itself in its log
 * lines: debug "Worker R: Launching host script PATH", "Worker R: Host
 * script exited with status N (W)" or "... exited on signal S (W)" (W: the
 * wait status, as PMC prints it).  Returns 0 when it exited 0, with its
 * process group id in *pgid (for hostscript_stop()).  Returns -1 with err
 * "Worker R: Host script failed with status N" (N: the exit code, or
 * 128+signal; PMC printed the wait status there), "Worker R: Host script
 * timed out after 60 seconds" (the limit, hostscript_timeout_s(), printed
 * with %g), "Worker R: Host script stopped" (stop, when not NULL, returned
 * true: asked every HOSTSCRIPT_STOP_POLL_MS while the script runs, e.g. a
 * signal came; the script's group gets SIGTERM, then SIGKILL after
 * HOSTSCRIPT_GRACE_MS), or "Worker R: Host script PATH could not be
 * started: <reason>"; *pgid is set even then, so the caller can clean up
 * what it left. */
#define HOSTSCRIPT_STOP_POLL_MS 100
int hostscript_run(const char *path, int rank, pid_t *pgid, bool (*stop)(void),
                   struct pmc_error *err);

/* SIGTERM the script's process group; SIGKILL whatever is left after
 * HOSTSCRIPT_GRACE_MS.  pgid <= 0 is a no-op.  Logs PMC's lines, naming
 * rank: debug "Worker R: Terminating host script process group with
 * SIGTERM" (when the group is still there), and a warning "Worker R: Sent
 * SIGKILL to resilient host script processes" when some outlived the
 * grace. */
void hostscript_stop(pid_t pgid, int rank);

#ifdef __cplusplus
}
#endif
#endif
