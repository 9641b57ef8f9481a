/* spawn.h - start one task process: clone(CLONE_VM | CLONE_VFORK) as
 * glibc's posix_spawn, plus CPU affinity and RLIMIT_AS (docs/modules.md
 * "spawn").  The task gets argv as given (no shell), the given environment,
 * its own process group, /dev/null on fd 0, stdout_fd on 1, stderr_fd on 2,
 * forward_fds[i] on 3 + i and no other descriptor, default dispositions and
 * an empty mask for every signal, the CPU set and the memory limit.  A
 * failure in the child comes back as an errno, never as an exit status.
 * Requires Linux >= 5.4.  Every function: any thread, concurrently, unless
 * it says otherwise. */
#ifndef PMC_SPAWN_H
#define PMC_SPAWN_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPAWN_FIRST_FORWARD_FD 3

struct spawn_request {
    /* NULL-terminated; argv[0] without '/' is searched in envp's PATH
     * ("/bin:/usr/bin" if unset) as execvp(3), with no /bin/sh fallback */
    char *const *argv;
    char *const *envp;      /* NULL-terminated, the complete environment */
    int stdout_fd;          /* becomes the child's fd 1 */
    int stderr_fd;          /* becomes the child's fd 2 */
    const int *forward_fds; /* nforward descriptors -> fds 3, 4, ... */
    int nforward;
    /* NULL: the calling thread's CPUs (those before spawn_thread_pin()) */
    const cpu_set_t *affinity;
    uint64_t memory_limit_bytes; /* RLIMIT_AS, soft and hard; 0: inherit */
    /* NULL, or where the child stores its pgid first (watchdog.h); the
     * caller clears it after a failed spawn */
    volatile pid_t *record_pgid;
};

/* Start the task; the caller waits until the child's execve.  0 with the
 * pid and a pidfd (O_CLOEXEC), or an errno and no child left: ENOENT,
 * EACCES, ENOEXEC, E2BIG, EINVAL (no argv; no usable CPU), EBADF (a bad
 * descriptor), EAGAIN, ENOMEM, EMFILE.  A memory limit above the engine's
 * hard limit is lowered to it. */
int spawn_task(const struct spawn_request *req, pid_t *pid, int *pidfd);

/* SIGKILL the task's process group, clear *record_pgid (NULL: none), reap
 * the first process.  Its waitpid(2) status; 1 << 8 if someone else
 * reaped it (outcome unknown).  The pidfd stays open. */
int spawn_end_task(pid_t pid, int pidfd, volatile pid_t *record_pgid);

/* Has the task's first process exited (waitid WNOWAIT: nothing is
 * reaped)?  False on an error. */
bool spawn_exited(int pidfd);

/* Reap the first process of a task in its SIGTERM grace, killing nothing;
 * status as spawn_end_task(), *group_left = spawn_group_alive(pid).  Clears
 * *record_pgid if the group is empty, else the caller does once it is gone
 * (why -pid stays safe meanwhile: docs/modules.md "spawn"). */
int spawn_reap_leader(pid_t pid, int pidfd, volatile pid_t *record_pgid, bool *group_left);

/* Has group pgid, whose first process was reaped, a member left (kill(-pgid,
 * 0) succeeds or fails with EPERM; a zombie counts)?  When we adopt orphans,
 * our zombies in it are reaped first, never pid pgid itself. */
bool spawn_group_alive(pid_t pgid);

/* Become a child subreaper, so a task's orphans come to us.  Call once,
 * before the first task.  0, or -1 with errno (EINVAL: unsupported). */
int spawn_adopt_orphans(void);

/* Reap adopted orphans' zombies (those that lead no group of our session
 * and are not keep, the watchdog's pid), up to the first that may be ours;
 * returns how many.
 * A child that died before its setpgid() may be reaped here, so its
 * starter ignores ECHILD.  No-op unless we are PID 1 or a subreaper. */
unsigned spawn_reap_orphans(pid_t keep);

#define TASK_TIMEOUT_STATUS (124 << 8) /* wait status of a task over its time limit */

/* Append "pmc-hybrid: task NAME exceeded its time limit of S s" to
 * stderr_fd (limit_ms in milliseconds); returns TASK_TIMEOUT_STATUS. */
int spawn_timed_out(int stderr_fd, const char *name, uint32_t limit_ms);

/* Give the calling thread an EEVDF slice of SPAWN_THREAD_SLICE_NS (Linux
 * >= 6.12), not passed to its children, so its wake-ups preempt a task
 * (docs/modules.md "spawn").  1: applied; 0: not applicable, left as it
 * was; -1 with errno (ENOSYS, EPERM, EACCES).  Callers go on either way. */
#define SPAWN_THREAD_SLICE_NS 100000 /* 100 us: Linux clamps to 0.1-100 ms */
int spawn_thread_short_slice(void);

/* Bind the calling thread to CPU `cpu`; its children get the thread's
 * earlier CPUs back before execve (docs/modules.md "spawn").  0, or EINVAL
 * (cpu not among the thread's CPUs; nothing changed). */
int spawn_thread_pin(int cpu);

/* Re-read which signals are SIG_IGN, for children to reset; spawn_task()
 * reads them once.  Call after ignoring a signal once tasks may run. */
void spawn_note_signals(void);

/* Tests only: use the plain clone fallback (plain) or clone3 (!plain). */
void spawn__use_plain_clone(bool plain);

/* Tests only: has clone3 started a child since spawn__use_plain_clone()? */
bool spawn__clears_handlers(void);

/* The shell's exit code for an exec failure: 127 when the file was not
 * found, 126 otherwise (POSIX "Command Search and Execution"). */
int spawn_exec_exit_code(int exec_errno);

#ifdef __cplusplus
}
#endif
#endif
