/* hostscript.h - the host script (PMC manual "Host Scripts").
 *
 * Host rank 0 starts it before any task runs on the host, in its own
 * process group, stdout and stderr on our stderr.  It must exit 0 within
 * hostscript_timeout_s() seconds, else SIGALRM (as PMC), then SIGKILL after
 * HOSTSCRIPT_GRACE_MS.  What it leaves running (a memcached) stays in its
 * group until hostscript_stop() at the workflow's end.  Log lines are
 * PMC's worker's (docs/compat-notes.md; docs/modules.md "hostscript").
 *
 * Thread-safety: main thread only; hostscript_run() blocks.
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

/* The limit in seconds: PMC_HOST_SCRIPT_TIMEOUT if a number > 0 (at most
 * INT_MAX / 1000), else HOSTSCRIPT_TIMEOUT_S (a bad value is warned of). */
double hostscript_timeout_s(void);

/* Run the script at path and wait; rank names "Worker R" in the log.  0
 * when it exited 0.  -1 with err "Worker R: Host script failed with status
 * N" (exit code or 128+signal), "... timed out after S seconds", "...
 * stopped" (stop(), polled every HOSTSCRIPT_STOP_POLL_MS ms if not NULL,
 * returned true: the group gets SIGTERM, then SIGKILL), or "... PATH could
 * not be started: REASON".  *pgid is set in every case, for
 * hostscript_stop(). */
#define HOSTSCRIPT_STOP_POLL_MS 100
int hostscript_run(const char *path, int rank, pid_t *pgid, bool (*stop)(void),
                   struct pmc_error *err);

/* SIGTERM the script's group, SIGKILL what is left after
 * HOSTSCRIPT_GRACE_MS, logging PMC's lines.  pgid <= 0 is a no-op. */
void hostscript_stop(pid_t pgid, int rank);

#ifdef __cplusplus
}
#endif
#endif
