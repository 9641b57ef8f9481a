/* spawn.c - posix_spawn with a clean child environment; see spawn.h. */
#include "engine/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int spawn_pidfd_open(pid_t pid)
{
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int spawn_file_actions(posix_spawn_file_actions_t *fa, const struct spawn_request *req)
{
    int rc = posix_spawn_file_actions_addopen(fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, req->stdout_fd, 1);
    if (!rc)
        rc = posix_spawn_file_actions_adddup2(fa, req->stderr_fd, 2);
    /* Forward pipes first move above every source and target, so that dup2
     * onto 3, 4, ... cannot clobber a source that has a low number; the
     * temporary copies are closed again (dup2 clears close-on-exec). */
    int base = SPAWN_FIRST_FORWARD_FD + req->nforward;
    for (int i = 0; i < req->nforward; i++)
        if (req->forward_fds[i] >= base)
            base = req->forward_fds[i] + 1;
    for (int i = 0; !rc && i < req->nforward; i++)
        rc = posix_spawn_file_actions_adddup2(fa, req->forward_fds[i], base + i);
    for (int i = 0; !rc && i < req->nforward; i++)
        rc = posix_spawn_file_actions_adddup2(fa, base + i, SPAWN_FIRST_FORWARD_FD + i);
    for (int i = 0; !rc && i < req->nforward; i++)
        rc = posix_spawn_file_actions_addclose(fa, base + i);
    return rc;
}

static int spawn_attributes(posix_spawnattr_t *attr)
{
    sigset_t empty, all;
    sigemptyset(&empty);
    sigfillset(&all);
    int rc = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF);
    if (!rc)
        rc = posix_spawnattr_setpgroup(attr, 0);
    if (!rc)
        rc = posix_spawnattr_setsigmask(attr, &empty);
    if (!rc)
        rc = posix_spawnattr_setsigdefault(attr, &all);
    return rc;
}

int spawn_task(const struct spawn_request *req, pid_t *pid, int *pidfd)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    rc = spawn_file_actions(&fa, req);
    if (!rc)
        rc = spawn_attributes(&attr);
    if (!rc)
        rc = posix_spawnp(pid, req->argv[0], &fa, &attr, req->argv, req->envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    if (rc)
        return rc;
    *pidfd = spawn_pidfd_open(*pid);
    if (*pidfd < 0) {
        int e = errno;
        kill(-*pid, SIGKILL);
        waitpid(*pid, NULL, 0);
        return e;
    }
    return 0;
}

int spawn_exec_exit_code(int exec_errno)
{
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
}
