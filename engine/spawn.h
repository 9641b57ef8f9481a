/* spawn.h - start one task process.
 *
 * Tasks are started with posix_spawn(3), which glibc implements with
 * clone(CLONE_VM | CLONE_VFORK): the cost does not grow with the size of the
 * engine's memory as fork() does (DESIGN.md section 5).  Everything the child
 * needs (argv, envp, descriptors) is prepared by the caller before the call;
 * the child only applies the file actions and attributes and calls execve.
 *
 * The child gets: argv exactly as given (no shell), the given environment,
 * stdin from /dev/null, stdout/stderr on the given descriptors, the pipe
 * forwarding descriptors dup2'ed to 3, 4, ... (in order), every other
 * descriptor closed (the engine opens everything O_CLOEXEC), its own process
 * group, an empty signal mask and default dispositions for every signal.
 *
 * glibc's posix_spawn reports an execve() failure as its return value (the
 * child writes the errno into memory shared through CLONE_VM before exiting),
 * so "could not execute" is distinct from a task that exits 1.
 *
 * Thread-safety: spawn_task() may be called from any thread.
 */
#ifndef PMC_SPAWN_H
#define PMC_SPAWN_H

#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPAWN_FIRST_FORWARD_FD 3

struct spawn_request {
    char *const *argv; /* NULL-terminated; argv[0] is the path (PATH is searched if it has no '/') */
    char *const *envp; /* NULL-terminated, the complete environment */
    int stdout_fd;     /* becomes the child's fd 1 */
    int stderr_fd;     /* becomes the child's fd 2 */
    const int *forward_fds; /* write ends of forwarding pipes -> fds 3, 4, ... */
    int nforward;
};

/* Start the task.  On success returns 0 with the child's pid in *pid and a
 * pidfd (O_CLOEXEC, readable when the child exits) in *pidfd.  When the
 * executable cannot be started returns the errno of execve (ENOENT, EACCES,
 * ENOEXEC, ...) or of the spawn itself (EAGAIN, ENOMEM) and no child is
 * left behind. */
int spawn_task(const struct spawn_request *req, pid_t *pid, int *pidfd);

/* The shell's exit code for an exec failure: 127 when the file was not
 * found, 126 otherwise (POSIX "Command Search and Execution"). */
int spawn_exec_exit_code(int exec_errno);

#ifdef __cplusplus
}
#endif
#endif
