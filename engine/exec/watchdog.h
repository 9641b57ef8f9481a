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
 * it).  It holds one end of a socket pair (SOCK_SEQPACKET) whose other
 * end only the agent's process holds (close-on-exec: tasks do not inherit it), and shares with
 * it a table with one entry per agent slot: the process group of the task
 * that runs there, 0 when none.  Each spawned child stores its own pid in
 * its entry before execve (spawn_request.record_pgid), so no task can run
 * unrecorded, and the agent clears the entry before it reaps the task's
 * first process (a zombie keeps its pid, so a recorded group id is never
 * one that was reused; a lingering group, engine/node/agent_linger.c, keeps its
 * entry while it has members, which keep its id).  When the socket reads
 * end-of-file (the agent's
 * process ended, however), the watchdog sends SIGKILL to every recorded
 * group, says so on stderr when there were any, saves their output (below)
 * and exits.  No system call
 * per task: the agent and the child only store to the table.
 *
 * It then saves what the killed tasks wrote so far, which lives only in
 * their capture files (io/taskio.h: unnamed files that vanish with their
 * last descriptor): the agent lends it each slot's two capture files once,
 * as it makes the slot, and the rank's DAG.out.R and DAG.err.R once
 * (watchdog_lend(): SCM_RIGHTS over the socket whose end-of-file is the
 * signal), and copies each task's name into a shared table as it starts
 * it (watchdog_name()).  For each recorded group, whether its kill found
 * it or not (the task's first process may have died of its
 * PR_SET_PDEATHSIG with the agent, and been reaped by whoever inherited
 * it, before the watchdog looked), the watchdog appends
 * the task's captured stdout to DAG.out.R and its captured stderr to
 * DAG.err.R, each followed by a line that names the task and says it was
 * cut short (no [cluster-task] record: the task did not end, and is not
 * DONE, so a rerun runs it again).  PMC's tasks wrote into DAG.out.R
 * directly, so their output so far survived a kill; with this, ours does
 * too, whenever the node itself survives.
 *
 * What escapes: a process that left its task's process group (setsid,
 * setpgid), as with any process-group based cleanup; a batch system's
 * cgroup catches those at the job's end.  Output of a task whose first
 * process the agent had reaped (its entry cleared) but whose block it had
 * not yet written when it died.
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

#define WATCHDOG_SLOTS 65536  /* table entries (4 bytes each, pages touched as used) */
#define WATCHDOG_NAME_MAX 128 /* bytes of a task's name the watchdog keeps, NUL included */
#define WATCHDOG_OUTPUTS WATCHDOG_SLOTS /* watchdog_lend()'s index of the rank's files */

struct watchdog;

/* Fork the watchdog of this agent; rank names it in its message.  NULL
 * with err (socketpair, mmap or fork failed): the caller then runs without one,
 * after a warning. */
struct watchdog *watchdog_start(int rank, struct pmc_error *err);

/* Slot i's table entry, for spawn_request.record_pgid; NULL when
 * i >= WATCHDOG_SLOTS (that task then runs unwatched) or w is NULL. */
volatile pid_t *watchdog_entry(struct watchdog *w, uint32_t i);

/* Forget slot i's task.  Call before reaping its first process.  NULL w
 * is a no-op. */
void watchdog_clear(struct watchdog *w, uint32_t i);

/* Lend the watchdog slot i's capture files (out_fd and err_fd: its task's
 * stdout and stderr, io/taskio.h), once, as the slot is made; or, with i ==
 * WATCHDOG_OUTPUTS, the rank's DAG.out.R and DAG.err.R (the files it saves
 * them into).  The watchdog receives descriptors of the same open files
 * (SCM_RIGHTS); the caller keeps its own.  A second lend of the same i
 * replaces the first.  0, or -1 with errno (the watchdog then cannot save
 * that slot's output: not fatal).  NULL w, or i beyond WATCHDOG_OUTPUTS:
 * 0, nothing lent.  Agent thread (one system call). */
int watchdog_lend(struct watchdog *w, uint32_t i, int out_fd, int err_fd);

/* Name slot i's task for the watchdog's note: a copy of name, cut to
 * WATCHDOG_NAME_MAX - 1 bytes, in the shared table (no system call).
 * NULL w or i >= WATCHDOG_SLOTS: no-op.  Agent thread, as it starts the
 * task. */
void watchdog_name(struct watchdog *w, uint32_t i, const char *name);

/* Close the socket and reap the watchdog (it kills the groups still
 * recorded: none after an orderly end).  NULL is a no-op. */
void watchdog_stop(struct watchdog *w);

/* The watchdog's pid (tests), or 0 for NULL. */
pid_t watchdog_pid(const struct watchdog *w);

#ifdef __cplusplus
}
#endif
#endif
