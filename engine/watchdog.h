/* watchdog.h - kills a node's tasks when the node agent's process dies
 * without doing so.
 *
 * Every task runs in a process group of its own (spawn.h), so when the
 * agent ends in order it signals those groups itself.  When its process
 * dies at once (SIGKILL from a user or the OOM killer, or hydra killing
 * every rank after a rank loss), nobody does: the tasks and their children
 * are re-parented to init and run on, and a restart then runs the same
 * tasks a second time beside them (issue 13, tests/reliability/orphans.py).
 * PR_SET_PDEATHSIG reaches only a task's first process.
 *
 * The watchdog is a small process ("pmc-watchdog" in ps) forked when the
 * agent is created, in a session of its own (so that a kill of the rank's process group spares
 * it).  It holds the read end of a pipe whose write end only the agent's
 * process holds (close-on-exec: tasks do not inherit it), and shares with
 * it a table with one entry per agent slot: the process group of the task
 * that runs there, 0 when none.  Each spawned child stores its own pid in
 * its entry before execve (spawn_request.record_pgid), so no task can run
 * unrecorded, and the agent clears the entry before it reaps the task's
 * first process (a zombie keeps its pid, so a recorded group id is never
 * one that was reused).  When the pipe reads end-of-file (the agent's
 * process ended, however), the watchdog sends SIGKILL to every recorded
 * group, says so on stderr when there were any, and exits.  No system call
 * per task: the agent and the child only store to the table.
 *
 * What escapes: a process that left its task's process group (setsid,
 * setpgid), as with any process-group based cleanup; a batch system's
 * cgroup catches those at the job's end.
 *
 * Thread-safety: watchdog_entry()/watchdog_clear() may be called by the
 * agent thread while other threads run; watchdog_start()/watchdog_stop()
 * once each, by the thread that owns the agent.
 */
#ifndef PMC_WATCHDOG_H
#define PMC_WATCHDOG_H

#include <stdint.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define WATCHDOG_SLOTS 65536 /* table entries (4 bytes each, pages touched as used) */

struct watchdog;

/* Fork the watchdog of this agent; rank names it in its message.  NULL
 * with err (pipe, mmap or fork failed): the caller then runs without one,
 * after a warning. */
struct watchdog *watchdog_start(int rank, struct pmc_error *err);

/* Slot i's table entry, for spawn_request.record_pgid; NULL when
 * i >= WATCHDOG_SLOTS (that task then runs unwatched) or w is NULL. */
volatile pid_t *watchdog_entry(struct watchdog *w, uint32_t i);

/* Forget slot i's task.  Call before reaping its first process.  NULL w
 * is a no-op. */
void watchdog_clear(struct watchdog *w, uint32_t i);

/* Close the pipe and reap the watchdog (it kills the groups still
 * recorded: none after an orderly end).  NULL is a no-op. */
void watchdog_stop(struct watchdog *w);

/* The watchdog's pid (tests), or 0 for NULL. */
pid_t watchdog_pid(const struct watchdog *w);

#ifdef __cplusplus
}
#endif
#endif
