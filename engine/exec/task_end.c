/* task_end.c - how a task ended; see task_end.h. */
#include "engine/exec/task_end.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "engine/exec/spawn.h"

void task_end_signal(struct task_end *e, pid_t pid, int pidfd, int sig, bool time_out)
{
    if (time_out)
        e->timed_out = true;
    if (time_out || pidfd < 0 || !spawn_exited(pidfd))
        e->signalled = sig;
    kill(-pid, sig);
}

struct task_outcome task_end_decide(const struct task_end *e)
{
    struct task_outcome o = {.status = e->wait_status, .exec_errno = 0, .cause = TASK_EXITED};
    if (e->start_errno) {
        o.cause = TASK_FAILED_START;
        o.exec_errno = e->start_errno > 0 ? e->start_errno : 0;
        o.status =
            e->start_errno > 0 ? spawn_exec_exit_code(e->start_errno) << 8 : TASK_IO_FAILED_STATUS;
    } else if (e->timed_out) {
        o.cause = TASK_TIMED_OUT;
        o.status = TASK_TIMEOUT_STATUS;
        o.exec_errno = ETIMEDOUT;
    } else if (WIFSIGNALED(o.status) || (o.status == 0 && e->signalled)) {
        o.cause = TASK_SIGNALLED;
        if (o.status == 0) /* it may have cut its work short: never done */
            o.status = e->signalled;
    }
    if (e->forwards_lost) {
        o.cause = TASK_LOST_OUTPUT;
        o.status = TASK_IO_FAILED_STATUS;
    }
    if (e->output_lost && o.status == 0) {
        o.cause = TASK_LOST_OUTPUT;
        o.status = TASK_IO_FAILED_STATUS;
    }
    return o;
}

int task_end_reap(struct task_end *e, pid_t pid, int pidfd, volatile pid_t *record_pgid,
                  bool *lingers)
{
    *lingers = false;
    e->wait_status = e->signalled == SIGTERM ? spawn_reap_leader(pid, pidfd, record_pgid, lingers)
                                             : spawn_end_task(pid, pidfd, record_pgid);
    return e->wait_status;
}

int task_end_write(struct task_end *e, const struct taskio_block *b, int stderr_fd,
                   uint32_t time_limit_ms, struct fwd_task *f, struct msgbuf *pack,
                   struct pmc_error *fwd_err, double duration, off_t *out_len, off_t *err_len)
{
    const char *name = b->record.name;
    struct task_outcome o = task_end_decide(e);
    if (o.cause == TASK_TIMED_OUT)
        (void)spawn_timed_out(stderr_fd, name, time_limit_ms);
    else if (o.cause == TASK_FAILED_START && e->start_errno > 0)
        dprintf(stderr_fd, "pmc-hybrid: task %s: could not execute %s: %s\n", name, b->record.app,
                strerror(e->start_errno));
    if (f && f->n && !e->start_errno) { /* a task that never ran forwards nothing */
        pack->len = pack->count = 0;
        if (fwd_finish(f, name, o.status, pack, fwd_err) < 0) {
            pack->len = pack->count = 0;
            e->forwards_lost = true;
            o = task_end_decide(e);
        }
    }
    int rc = taskio_write_block(b, o.status, duration, out_len, err_len);
    if (rc != 0)
        e->output_lost = true;
    return rc;
}
