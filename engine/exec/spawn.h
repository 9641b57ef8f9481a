/* spawn.h - start one task process.
 *
 * Tasks are started with clone(CLONE_VM | CLONE_VFORK): the child borrows the
 * engine's memory until it calls execve, so the cost does not grow with the
 * size of the engine as fork() does (docs/design.md sections 1 and 5).
 * posix_spawn(3) is built the same way but cannot set a CPU affinity or a
 * resource limit, so spawn.c does what glibc's
 * sysdeps/unix/sysv/linux/spawni.c and musl's src/process/posix_spawn.c do,
 * with the steps pmc-hybrid needs (clone(2), "CLONE_VM" and "CLONE_VFORK").
 *
 * Everything is prepared by the caller and by spawn_task() before the child
 * exists: argv, envp, the PATH search, /dev/null for stdin, the descriptor
 * plan, the limit.  The child runs on its own small mmap'ed stack, allocates
 * nothing, takes no lock and makes only raw system calls (syscall(2)): libc
 * wrappers such as sigaction() or dup2() are interposed by the sanitizers,
 * whose bookkeeping must not run in a child that shares the parent's memory.
 * In order, the child:
 *   0. takes its own descriptor table, holding copies of the engine's
 *      descriptors below the plan's highest source or target only: it is
 *      cloned sharing the engine's table (CLONE_FILES) and calls
 *      close_range(above, ~0U, CLOSE_RANGE_UNSHARE) (Linux >= 5.9; before,
 *      unshare(CLONE_FILES), a copy of all).  A plain clone copies every
 *      descriptor (the engine holds two capture files per slot) and the
 *      child then closes them all again before execve: ~13 us of a
 *      task's CPU with 88 descriptors open on a 2-core VM, and more on a
 *      node with more slots (docs/performance-history.md section 29);
 *   1. sets every signal disposition to SIG_DFL (all signals stay blocked
 *      from before clone until step 6, so no handler of the engine ever runs
 *      on the child's stack).  Where the kernel takes clone3 with
 *      CLONE_CLEAR_SIGHAND (Linux >= 5.5, x86-64), the kernel resets every
 *      caught signal as it clones and the child resets the ignored ones
 *      that spawn_note_signals() read; elsewhere (a plain clone) the
 *      child resets all 62 itself;
 *   2. becomes the leader of its own process group (setpgid(0, 0)) and
 *      stores its pid at record_pgid, when given;
 *   3. puts /dev/null on fd 0, stdout_fd on 1, stderr_fd on 2 and
 *      forward_fds[i] on 3 + i, without clobbering a source that has a low
 *      number (all sources are first copied above every source and target
 *      when any of them sits on a target); every other descriptor the engine
 *      opened is close-on-exec, and close_range(2) closes all above the
 *      last target, so even descriptors inherited from the launcher without
 *      close-on-exec do not reach the task;
 *   4. sched_setaffinity(affinity), when given;
 *   5. RLIMIT_AS = memory_limit_bytes (soft and hard), when given;
 *   6. unblocks every signal (empty mask) and calls execve.
 * The task thus gets: argv exactly as given (no shell), the given environment,
 * its own process group, an empty signal mask and default dispositions for
 * every signal (also glibc's internal 32 and 33, which posix_spawn leaves
 * ignored), the CPU set and the memory limit.
 *
 * Memory limit: RLIMIT_AS (the whole address space), as PMC's --strict-limits
 * did, not RLIMIT_DATA.  RLIMIT_DATA counts brk and, only since Linux 4.7,
 * private writable mappings: shared and file mappings escape it, and on older
 * kernels so do glibc malloc's large blocks and thread arenas.  RLIMIT_AS
 * makes every allocation beyond the request fail, as the manual promises; its
 * cost is that it also counts reserved but untouched address space (thread
 * stacks, JVM heaps, sanitizer shadow), so such tasks need a request above
 * their resident size.  The value is in bytes, 64-bit all the way (PMC
 * computed MB * 1024 * 1024 in 32 bits and wrapped at 4096 MB).  A request
 * above the engine's own hard limit is lowered to that hard limit (an
 * unprivileged process cannot raise it).
 *
 * PATH: when argv[0] has no '/', spawn_task() searches the PATH of the task's
 * environment (envp; "/bin:/usr/bin" when it has none, an empty element being
 * the current directory) for a regular file that access(X_OK) accepts, in the
 * parent, before cloning.  As execvp(3): ENOENT when no candidate exists,
 * EACCES when candidates exist but none may be executed.  No /bin/sh fallback
 * for ENOEXEC files.
 *
 * Failures in the child (execve, or any step above) are reported like
 * glibc's posix_spawn does: the child stores errno in a variable it shares
 * with the parent through CLONE_VM and exits with 127; the parent, resumed
 * by CLONE_VFORK only after the child's execve or exit, reads it, reaps the
 * child and returns the errno.  So "could not execute" stays distinct from a
 * task that exits 1 or 127.
 *
 * Requires Linux >= 5.4 (CLONE_PIDFD, and waitid(P_PIDFD) by the callers).
 *
 * Thread-safety: spawn_task() may be called from any thread, concurrently.
 * The calling thread is suspended until the child has called execve; its
 * signal mask is restored before the call returns.
 */
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
    /* NULL-terminated; argv[0] is the path (PATH is searched if it has no '/') */
    char *const *argv;
    char *const *envp;      /* NULL-terminated, the complete environment */
    int stdout_fd;          /* becomes the child's fd 1 */
    int stderr_fd;          /* becomes the child's fd 2 */
    const int *forward_fds; /* write ends of forwarding pipes -> fds 3, 4, ... */
    int nforward;
    /* CPUs the child may run on (sched_setaffinity; the task fails with
     * its errno when the kernel refuses them); NULL: inherit the calling
     * thread's, or on a thread bound by spawn_thread_pin() the CPUs it had
     * before (see there).  Read before spawn_task() returns. */
    const cpu_set_t *affinity;
    /* RLIMIT_AS of the child in bytes, soft and hard; 0: inherit. */
    uint64_t memory_limit_bytes;
    /* When set, the child stores its pid (its process group id) here right
     * after setpgid, before any other step: the watchdog's table entry
     * (watchdog.h), so that the task is recorded before it can run.  On a
     * failed spawn the caller clears it. */
    volatile pid_t *record_pgid;
};

/* Start the task.  On success returns 0 with the child's pid in *pid and a
 * pidfd (O_CLOEXEC, readable when the child exits) in *pidfd.  Otherwise
 * returns an errno and no child is left behind: from the PATH search (ENOENT,
 * EACCES), from execve (ENOENT, EACCES, ENOEXEC, E2BIG, ...), from a step of
 * the child (EINVAL for an affinity without a usable CPU, EBADF for a bad
 * stdio or forward descriptor), or from the parent (EINVAL for a request
 * without argv, EAGAIN, ENOMEM, EMFILE). */
int spawn_task(const struct spawn_request *req, pid_t *pid, int *pidfd);

/* End the task whose first process is pid (pidfd from spawn_task()):
 * SIGKILL to its process group, which takes what it left running
 * (background jobs, daemons that did not setsid), as a batch system does
 * at a step's end, and the first process too when it still runs; the
 * first process, alive or a zombie, still holds the id, so it cannot have
 * been reused.  Then clear *record_pgid (the watchdog's entry,
 * spawn_request.record_pgid; NULL: none) and reap the first process,
 * waiting for it if needed.  Returns its wait status as
 * waitpid(2) gives it (exit code << 8, or the signal number with 0x80 when
 * it dumped core); a failed waitid (the child reaped by someone else, as
 * when SIGCHLD is ignored) gives exit code 1: how it ended is not known,
 * so it is not a success.  The pidfd stays open.  Any thread of the
 * process (waitid waits for other threads' children too). */
int spawn_end_task(pid_t pid, int pidfd, volatile pid_t *record_pgid);

/* Has the first process of a task (its pidfd from spawn_task()) exited,
 * not yet reaped?  waitid(WNOWAIT): nothing is reaped.  False on an error.
 * A stop signal sent to a task that had ended already does not make its
 * exit 0 a stopped task's (agent__signal(), launcher.c).  Any thread. */
bool spawn_exited(int pidfd);

/* Reap the first process (pid, pidfd from spawn_task()) of a task whose
 * group got SIGTERM and is in its grace (--kill-grace), killing nothing:
 * what it left running in its group (a wrapper shell's program, which the
 * same SIGTERM asked to stop) keeps the rest of its grace.  Returns the
 * wait status as spawn_end_task() does; *group_left tells whether the
 * group still has members (spawn_group_alive()).  When it has none,
 * *record_pgid is cleared (NULL: none); when it has, the caller clears it
 * once the group is gone or killed.  The group's id stays reserved while
 * it has members ("A process group ID shall not be reused by the system
 * until the process group lifetime ends": POSIX.1-2017, Base Definitions
 * 4.14), so signals to -pid reach only them; once it is empty, Linux hands
 * the number out again only after its PID counter wraps around
 * (alloc_pid() allocates cyclically), so a caller that looks again every
 * few milliseconds cannot signal another group.  Any thread. */
int spawn_reap_leader(pid_t pid, int pidfd, volatile pid_t *record_pgid, bool *group_left);

/* Has process group pgid any member left (kill(-pgid, 0) succeeds, or
 * fails with EPERM: a member that changed its user id)?  A zombie member
 * counts until its parent reaps it; when orphans come to us (we are PID
 * 1, a container's only process, or a child subreaper) the zombies among
 * our children in the group are reaped first, since nobody else would,
 * but never one whose pid is pgid (the leader of a group that reuses the
 * number: a task of ours, reaped through its pidfd).  Only for a group
 * whose first process was reaped (spawn_reap_leader()).  Once the group
 * is empty its number may be handed out again, after a whole wrap of the
 * PID counter: a caller that looks every few milliseconds sees that only
 * if the wrap ends in that window (pid_max allocations: 32,768 or
 * 4,194,304).  Any thread. */
bool spawn_group_alive(pid_t pgid);

/* Make this process a child subreaper (prctl(2) PR_SET_CHILD_SUBREAPER,
 * Linux >= 3.4): a task's processes whose parent ends (a wrapper's program
 * after the wrapper died of SIGTERM; `app &` left running by a task that
 * ended) become ours instead of PID 1's, so spawn_group_alive() can reap
 * their zombies and a lingering group is empty as soon as its last member
 * ends, not when PID 1 gets to it (every 2 s on the CI VM, and once 8 s
 * late under load, which kept an aborted run for its whole grace).  The
 * other zombies we adopt are reaped by spawn_reap_orphans().  Process-wide
 * and inherited by no child; call once, before the first task.  0, or -1
 * with errno (EINVAL: a kernel without it; orphans then go to PID 1 as
 * before). */
int spawn_adopt_orphans(void);

/* Reap the zombies of adopted orphans among our children, as far as the
 * first zombie that may be one of ours (waitid(2) with WNOWAIT shows one
 * at a time; a later call gets past it once its owner has reaped it).  An
 * adopted orphan is told apart by its ids, read from the zombie: every
 * child we start leads its own process group (a task, the host script, a
 * batch-end command) or is keep (the watchdog, in its own session), so a
 * zombie that leads no group, or leads one in another session than ours
 * and is not keep, is an orphan (a task's background child; a daemon that
 * called setsid()).  Left to PID 1 when we exit: an orphan that made itself
 * a group leader in our session (setpgid(0, 0), as a shell with job
 * control does for its jobs).  A task whose first process moves itself
 * into another group and ends would be taken for one (its owner then
 * reports exit status 1).  No-op unless we adopt orphans (PID 1, or
 * spawn_adopt_orphans()).  A child of ours that ends before its
 * setpgid() or setsid() (a start that failed in the child) may be reaped
 * here too; its starter's own waitpid() then fails with ECHILD, which it
 * ignores, having the error from the child already.  Returns how many were
 * reaped.  Any thread; 3 system calls when there is none, 3-5 more per
 * orphan. */
unsigned spawn_reap_orphans(pid_t keep);

#define TASK_TIMEOUT_STATUS (124 << 8) /* wait status of a task over its time limit */

/* A task ended by its time limit (limit_ms, milliseconds): append
 * "pmc-hybrid: task NAME exceeded its time limit of S s" to its stderr
 * (stderr_fd: its capture file or --per-task-stdio file) and return
 * TASK_TIMEOUT_STATUS, the wait status its record and result report (124,
 * as timeout(1) exits).  Whichever thread reaped it: the agent
 * (agent__limit_note()) or a launcher. */
int spawn_timed_out(int stderr_fd, const char *name, uint32_t limit_ms);

/* Ask the scheduler to let the calling thread, one that starts and reaps
 * tasks (the node agent, a launcher), run as soon as it is woken: its time
 * slice becomes SPAWN_THREAD_SLICE_NS (sched_setattr(2)'s sched_runtime
 * for a SCHED_OTHER thread, Linux >= 6.12, EEVDF's custom slice), and
 * EEVDF lets a woken thread with a shorter slice preempt the running one.
 * Without it, an exit's wake-up that lands on a CPU busy with a task waits
 * behind that task for up to its slice (~1.4 ms on 2 CPUs) while the
 * ended task's CPU idles: on the 2-core AMD VM the engine's CPUs sat idle
 * ~81 us per /bin/true task against the raw spawn loop's ~37 us
 * (docs/performance-history.md section 15).
 * SCHED_FLAG_RESET_ON_FORK comes with it, so that the tasks the thread
 * starts get the default slice back.  That flag also resets, in children,
 * a negative nice, a real-time policy and utilization clamps (uclampset),
 * so the call changes nothing when the thread has any of those, nor under
 * SCHED_BATCH or SCHED_IDLE (which never preempt on wake-up), nor on a
 * kernel without custom slices (sched_runtime reads 0 there): tasks then
 * inherit exactly what they did before.  One case it cannot see: a
 * thread that already had a custom slice (chrt -T) passes the kernel's
 * base slice to its tasks rather than its own.  Policy and nice are kept.
 * Returns 1 when applied, 0 when left as it was (the cases above), or -1
 * with errno (ENOSYS: no sched_getattr/sched_setattr; EPERM or EACCES: a
 * seccomp filter or a security module); the callers go on either way,
 * since this only changes how soon the thread runs.  Calling thread
 * only; thread-safe. */
#define SPAWN_THREAD_SLICE_NS 100000 /* 100 us: Linux clamps to 0.1-100 ms */
int spawn_thread_short_slice(void);

/* Bind the calling thread, one that starts and reaps tasks (a launcher),
 * to CPU `cpu` (sched_setaffinity(2)), and keep the CPUs it could run on
 * until then: the children it starts get those back before their execve
 * (one sched_setaffinity in the child) unless their request names CPUs of
 * its own (spawn_request.affinity), so a task is never confined by it.
 * Why: a child starts where its parent's binding lets it, on this CPU, and
 * a parent bound there is woken there by its exit, as a spawner process
 * whose child ran on its own CPU is.  Unbound, the thread was woken where
 * it last ran (traced on the 2-core VM; Linux's select_task_rq_fair()
 * treats no wake-up by an exiting task, PF_EXITING, as a sync one), often
 * the other CPU, while its child's CPU idled until the next child was
 * sent back to it: bound, 1.023 of the unbound throughput of /bin/true
 * tasks in 20 alternating pairs (docs/performance-history.md section 27).  Pinned again, the thread
 * may take any of the CPUs it had before the first pin, which stay its
 * children's.  Bound anew by someone else since (taskset -a -p on the
 * running process, a cgroup cpuset that took its CPU away), the thread is
 * no longer on exactly its CPU, and its children inherit what it has now;
 * a child whose old CPUs the kernel refuses (EINVAL: a cpuset that moved
 * to other CPUs) keeps its inherited ones rather than failing.  The child
 * checks that with one sched_getaffinity.  One change it cannot see: a
 * cpuset that grows while the thread's CPU stays in it (its children keep
 * the old CPUs).  0, or an errno (EINVAL: cpu is not one of those CPUs); the
 * thread is left as it was on an error.  Calling thread only;
 * thread-safe. */
int spawn_thread_pin(int cpu);

/* Read which signals this process ignores (SIG_IGN), for the children of
 * spawn_task() to set to SIG_DFL.  The kernel resets the caught ones in the
 * child (CLONE_CLEAR_SIGHAND), so only the ignored ones cost the child a
 * system call each, and spawn_task() does not read them anew per task (62
 * queries; the 62 resets they replace cost ~10 us of CPU per task on a
 * 2-core VM, docs/performance-history.md section 30): it reads them at its first call and
 * uses that reading until this is called again.  So call it after setting
 * a signal to SIG_IGN once tasks may have been spawned (main() does after
 * its handlers; a library that ignores a signal later, unseen, leaves it
 * ignored in the tasks, never a handler).  Where clone3 is refused (the
 * plain clone fallback) the child resets every signal and this reading is
 * not used.  62 system calls; any thread, thread-safe: a spawn that runs
 * meanwhile uses the old or the new reading, signal by signal. */
void spawn_note_signals(void);

/* Tests only: spawn with the plain clone from now on (plain), as where
 * clone3 or CLONE_CLEAR_SIGHAND is refused (the child resets all 62
 * signals), or try clone3 again (!plain).  Thread-safe. */
void spawn__use_plain_clone(bool plain);

/* Tests only: has a clone3 with CLONE_CLEAR_SIGHAND started a child since
 * the start or the last spawn__use_plain_clone()?  Thread-safe. */
bool spawn__clears_handlers(void);

/* The shell's exit code for an exec failure: 127 when the file was not
 * found, 126 otherwise (POSIX "Command Search and Execution"). */
int spawn_exec_exit_code(int exec_errno);

#ifdef __cplusplus
}
#endif
#endif
