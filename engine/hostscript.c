/* hostscript.c - start, time out and stop the host script; see
 * hostscript.h.  Uses the task launcher (spawn.h), so the script gets the
 * same clean process state as a task. */
#include "engine/hostscript.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "io/clock.h"
#include "io/log.h"

extern char **environ;

/* Wait up to ms for the pidfd to become readable; 1 exited, 0 not yet. */
static int hostscript_wait(int pidfd, int ms)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN};
    int r;
    do {
        r = poll(&p, 1, ms);
    } while (r < 0 && errno == EINTR);
    return r > 0;
}

/* Reap the script: its exit code (128+signal for a signal, -1 when it
 * cannot be reaped); *raw, when not NULL, its wait status as waitpid's
 * (what PMC's "(N)" shows) and *sig its signal or 0. */
static int hostscript_status_of(int pidfd, int *raw, int *sig)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED) < 0)
        return -1;
    bool exited = si.si_code == CLD_EXITED;
    if (raw)
        *raw = exited ? (si.si_status & 0xff) << 8 : si.si_status;
    if (sig)
        *sig = exited ? 0 : si.si_status;
    return exited ? si.si_status : 128 + si.si_status;
}

static int hostscript_status(int pidfd)
{
    return hostscript_status_of(pidfd, NULL, NULL);
}

double hostscript_timeout_s(void)
{
    const char *v = getenv(HOSTSCRIPT_TIMEOUT_ENV);
    if (!v || !*v)
        return HOSTSCRIPT_TIMEOUT_S;
    char *end;
    errno = 0;
    double s = strtod(v, &end);
    if (errno || *end || !isfinite(s) || s <= 0 || s * 1000 > INT_MAX) {
        log_warn("%s=%s is not a number of seconds in (0, %d]: using %d", HOSTSCRIPT_TIMEOUT_ENV, v,
                 INT_MAX / 1000, HOSTSCRIPT_TIMEOUT_S);
        return HOSTSCRIPT_TIMEOUT_S;
    }
    return s;
}

/* Wait up to limit_s for the script to exit, asking stop (may be NULL)
 * every HOSTSCRIPT_STOP_POLL_MS: 1 exited, 0 timed out, -1 stopped. */
static int hostscript_wait_stoppable(int pidfd, double limit_s, bool (*stop)(void))
{
    double end = pmc_mono_s() + limit_s;
    for (;;) {
        double left_ms = (end - pmc_mono_s()) * 1000;
        if (left_ms <= 0)
            return 0;
        int ms = stop && left_ms > HOSTSCRIPT_STOP_POLL_MS ? HOSTSCRIPT_STOP_POLL_MS
                                                           : (int)ceil(left_ms);
        if (hostscript_wait(pidfd, ms))
            return 1;
        if (stop && stop())
            return -1;
    }
}

int hostscript_run(const char *path, int rank, pid_t *pgid, bool (*stop)(void),
                   struct pmc_error *err)
{
    double limit_s = hostscript_timeout_s();
    char *argv[] = {(char *)path, NULL};
    struct spawn_request req = {.argv = argv, .envp = environ, .stdout_fd = 2, .stderr_fd = 2};
    pid_t pid;
    int pidfd;
    *pgid = 0;
    log_debug("Worker %d: Launching host script %s", rank, path);
    int e = spawn_task(&req, &pid, &pidfd);
    if (e) {
        errno = e;
        return pmc_errorf(err, "Worker %d: Host script %s could not be started: %m", rank, path);
    }
    *pgid = pid;
    int waited = hostscript_wait_stoppable(pidfd, limit_s, stop);
    if (waited < 0) { /* its group: SIGTERM, its end or the grace, SIGKILL */
        kill(-pid, SIGTERM);
        hostscript_wait(pidfd, HOSTSCRIPT_GRACE_MS);
        kill(-pid, SIGKILL);
        hostscript_status(pidfd);
        close(pidfd);
        return pmc_errorf(err, "Worker %d: Host script stopped", rank);
    }
    if (waited == 0) {
        kill(pid, SIGALRM);
        if (!hostscript_wait(pidfd, HOSTSCRIPT_GRACE_MS))
            kill(-pid, SIGKILL);
        hostscript_status(pidfd);
        close(pidfd);
        return pmc_errorf(err, "Worker %d: Host script timed out after %g seconds", rank, limit_s);
    }
    int raw = 0, sig = 0;
    int status = hostscript_status_of(pidfd, &raw, &sig);
    close(pidfd);
    if (sig)
        log_debug("Worker %d: Host script exited on signal %d (%d)", rank, sig, raw);
    else
        log_debug("Worker %d: Host script exited with status %d (%d)", rank, status, raw);
    if (status != 0)
        return pmc_errorf(err, "Worker %d: Host script failed with status %d", rank, status);
    return 0;
}

void hostscript_stop(pid_t pgid, int rank)
{
    if (pgid <= 0 || !spawn_group_alive(pgid))
        return;
    log_debug("Worker %d: Terminating host script process group with SIGTERM", rank);
    kill(-pgid, SIGTERM);
    struct timespec step = {0, 50 * 1000 * 1000};
    for (int waited = 0; waited < HOSTSCRIPT_GRACE_MS; waited += 50) {
        if (!spawn_group_alive(pgid))
            return;
        nanosleep(&step, NULL);
    }
    kill(-pgid, SIGKILL);
    log_warn("Worker %d: Sent SIGKILL to resilient host script processes", rank);
}
