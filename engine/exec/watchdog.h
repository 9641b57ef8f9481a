/* watchdog.h - kills a node's tasks when the agent's process dies without
 * doing so (SIGKILL, the OOM killer), so a restart does not run them twice
 * beside the old ones (tests/reliability/orphans.py).
 *
 * A process ("pmc-watchdog"), forked in a session of its own, shares with
 * the agent a table of one entry per slot: the process group of the task
 * there, 0 when none.  The child stores its pgid before execve
 * (spawn_request.record_pgid); the agent clears the entry before it reaps
 * the first process.  When the agent's end of their socket closes, the
 * watchdog SIGKILLs every recorded group, appends each one's captured
 * stdout and stderr, with a line saying it was cut short, to DAG.out.R and
 * DAG.err.R (no record: the task is not DONE), and exits.  It misses
 * processes that left their group.  How and why: docs/modules.md
 * "watchdog".
 *
 * Thread-safety: watchdog_start()/watchdog_stop() once each, by the thread
 * that owns the agent; the others by the agent thread, while other
 * threads run.
 */
#ifndef PMC_WATCHDOG_H
#define PMC_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WATCHDOG_SLOTS 65536  /* table entries (4 bytes each, pages touched as used) */
#define WATCHDOG_NAME_MAX 128 /* bytes of a task's name the watchdog keeps, NUL included */
#define WATCHDOG_OUTPUTS WATCHDOG_SLOTS /* watchdog_lend()'s index of the rank's files */

struct watchdog;

/* Fork the watchdog (rank names it in its note).  NULL with err
 * (socketpair, mmap, fork): the caller warns and runs without one. */
struct watchdog *watchdog_start(int rank, struct pmc_error *err);

/* Slot i's entry, for spawn_request.record_pgid; NULL (unwatched) when
 * i >= WATCHDOG_SLOTS or w is NULL. */
volatile pid_t *watchdog_entry(struct watchdog *w, uint32_t i);

/* Forget slot i's task; call before reaping it.  NULL w: no-op. */
void watchdog_clear(struct watchdog *w, uint32_t i);

/* Send the watchdog copies (SCM_RIGHTS) of slot i's capture files, or with
 * i == WATCHDOG_OUTPUTS of DAG.out.R and DAG.err.R; the caller keeps its
 * own.  A second lend of i replaces the first.  0, or -1 with errno (that
 * output is not saved; not fatal).  NULL w or i > WATCHDOG_OUTPUTS: 0. */
int watchdog_lend(struct watchdog *w, uint32_t i, int out_fd, int err_fd);

/* Copy name, cut to WATCHDOG_NAME_MAX - 1 bytes, as slot i's task name (no
 * system call).  NULL w or i >= WATCHDOG_SLOTS: no-op. */
void watchdog_name(struct watchdog *w, uint32_t i, const char *name);

/* Close the socket and reap the watchdog, which kills the groups still
 * recorded.  NULL: no-op. */
void watchdog_stop(struct watchdog *w);

/* The watchdog's pid (tests), or 0 for NULL. */
pid_t watchdog_pid(const struct watchdog *w);

#ifdef __cplusplus
}
#endif
#endif
