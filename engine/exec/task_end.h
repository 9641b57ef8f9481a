/* task_end.h - how a task ended: the one rule from what happened to a task
 * to the status, errno and cause its record and result report, which both
 * ways of running tasks (the agent thread, the launcher pool) end through.
 */
#ifndef PMC_TASK_END_H
#define PMC_TASK_END_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/exec/forward.h"
#include "io/error.h"
#include "io/msg.h"
#include "io/taskio.h"

#ifdef __cplusplus
extern "C" {
#endif

enum task_cause {
    TASK_EXITED,       /* its first process exited (any code) */
    TASK_SIGNALLED,    /* killed by a signal, or stopped by the engine and exited 0 */
    TASK_TIMED_OUT,    /* its time limit passed */
    TASK_FAILED_START, /* it never ran: its set-up or its exec failed */
    TASK_LOST_OUTPUT,  /* its forwarded data or its output block was lost */
};

/* What happened to a task.  Zero-initialised but for what is known. */
struct task_end {
    int wait_status; /* as waitpid's; ignored when start_errno != 0 */
    /* 0: it ran; > 0: spawn_task()'s errno (exec failed); -1: it could
     * not be set up (pipes, --per-task-stdio files, GPUs, environment) */
    int start_errno;
    int signalled;      /* the last signal the engine sent its group; 0: none */
    bool timed_out;     /* its time limit passed and the engine stopped it */
    bool forwards_lost; /* its -f/-F data could not be read (fwd_finish()) */
    bool output_lost;   /* its output block or --per-task-stdio files failed */
};

/* The status (a wait status) its record and result carry, the result's
 * exec_errno, and why. */
struct task_outcome {
    int status;
    int exec_errno;
    enum task_cause cause;
};

/* The one rule, in this order:
 *   failed start: exit code 127/126 (spawn_exec_exit_code()) with its
 *     errno, or status 256 and errno 0 for a failed set-up;
 *   timed out: TASK_TIMEOUT_STATUS (124) and ETIMEDOUT;
 *   stopped by the engine (signalled) and exited 0: the signal, never done;
 *   forwards lost: TASK_IO_FAILED_STATUS (256), whatever its status;
 *   output lost: TASK_IO_FAILED_STATUS when it was 0.
 * Pure; any thread. */
struct task_outcome task_end_decide(const struct task_end *e);

/* Send sig to the process group of the task whose first process is pid,
 * on whichever thread watches it, and note it in e: e->timed_out when
 * time_out (its limit passed: task_end_decide() reads it), and
 * e->signalled = sig unless its first process had already exited by
 * itself (pidfd >= 0 and spawn_exited(): the signal stopped nothing).
 * pidfd -1: its first process was reaped in a grace (a lingering group,
 * which keeps its id while it has members): noted always. */
void task_end_signal(struct task_end *e, pid_t pid, int pidfd, int sig, bool time_out);

/* Reap the task whose first process (pid, pidfd) exited, on whichever
 * thread watches it: outside a SIGTERM's grace (e->signalled) its group's
 * leftovers are killed (spawn_end_task()); in it only the first process
 * is reaped, and *lingers says whether its group still has members
 * (spawn_reap_leader()).  Sets e->wait_status and returns it.  record_pgid
 * as in spawn.h. */
int task_end_reap(struct task_end *e, pid_t pid, int pidfd, volatile pid_t *record_pgid,
                  bool *lingers);

/* Finish a task that ended (or never ran), on whichever thread reaped it:
 * its note on stderr_fd (the time-out's, or the failed exec's, naming
 * b->record.app), then its forwards f (NULL or none: skipped) drained and
 * packed into pack (fwd_finish(); fwd_err says why when they are lost),
 * then its output block b with the decided status (taskio_write_block(),
 * *out_len and *err_len as there).  Sets e->forwards_lost and
 * e->output_lost; returns taskio_write_block()'s result, errno set when
 * -1.  The caller closes --per-task-stdio files and decides again. */
int task_end_write(struct task_end *e, const struct taskio_block *b, int stderr_fd,
                   uint32_t time_limit_ms, struct fwd_task *f, struct msgbuf *pack,
                   struct pmc_error *fwd_err, double duration, off_t *out_len, off_t *err_len);

#ifdef __cplusplus
}
#endif
#endif
