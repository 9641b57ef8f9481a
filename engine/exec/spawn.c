/* spawn.c - clone(CLONE_VM | CLONE_VFORK) + execve with a clean child; see
 * spawn.h for the contract and the steps.
 *
 * Shape (glibc sysdeps/unix/sysv/linux/spawni.c, musl posix_spawn.c):
 * the parent resolves the path, opens /dev/null, plans the descriptors and
 * the limit into a struct spawn_child, maps a stack, blocks every signal,
 * clones, restores its mask and unmaps the stack.  CLONE_VFORK suspends the
 * calling thread until the child has called execve or exited, so the child
 * may read the plan on the parent's stack and write its errno into it.
 *
 * Child rules: only the functions marked SPAWN_CHILD run in the child.  They
 * are not instrumented by the sanitizers (their runtime keeps per-thread
 * state that the child would share with the parent through CLONE_VM), they
 * do not allocate, take no lock, touch no memory but the plan and their own
 * stack, and reach the kernel through syscall(2) only, never through a libc
 * wrapper that a sanitizer interposes (sigaction, dup2, close, execve, ...).
 * The clone itself is called as __clone: ThreadSanitizer interposes clone
 * and runs its fork bookkeeping in the child, which under CLONE_VM would
 * reset the parent's own ThreadSanitizer state.
 */
#include "engine/exec/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef SPAWN_CLOSE_RANGE_UNSHARE
#define SPAWN_CLOSE_RANGE_UNSHARE (1U << 1) /* linux/close_range.h */
#endif

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif

#ifndef CLONE_CLEAR_SIGHAND
#define CLONE_CLEAR_SIGHAND 0x100000000ULL /* linux/sched.h, Linux >= 5.5 */
#endif

#ifdef __GLIBC__
/* glibc exports clone's implementation under this name too (since 2.2.5 on
 * x86-64); the sanitizers interpose only "clone". */
extern int __clone(int (*fn)(void *), void *stack, int flags, void *arg, ...);
#define SPAWN_CLONE __clone
#else
#define SPAWN_CLONE clone
#endif

/* Code that runs in the child: no sanitizer instrumentation at all.  Clang
 * 14 honours disable_sanitizer_instrumentation for ThreadSanitizer's function
 * entry/exit hooks (which no_sanitize("thread") keeps) but not for
 * AddressSanitizer, hence both. */
#define SPAWN_NO_SANITIZE no_sanitize("address", "thread", "undefined")
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define SPAWN_CHILD __attribute__((disable_sanitizer_instrumentation, SPAWN_NO_SANITIZE))
#endif
#endif
#ifndef SPAWN_CHILD
#define SPAWN_CHILD __attribute__((SPAWN_NO_SANITIZE))
#endif

/* The child needs well under a page; the margin covers a lazy binding of
 * syscall() or __errno_location() by the dynamic linker, which saves the
 * whole extended register state (several KB with AVX-512 and AMX). */
#define SPAWN_STACK_SIZE (64 * 1024)

/* Kernel signal sets for rt_sigprocmask/rt_sigaction: _NSIG - 1 bits. */
#define SPAWN_SIGSET_BYTES (_NSIG / 8)
typedef struct {
    unsigned long w[(_NSIG / 8 + sizeof(unsigned long) - 1) / sizeof(unsigned long)];
} spawn_ksigset;

/* The kernel's struct sigaction, all zero: SIG_DFL, no flags, empty mask.
 * Large enough for every architecture's layout. */
static const struct {
    unsigned long w[4 + sizeof(spawn_ksigset) / sizeof(unsigned long)];
} spawn_sigdfl;
static const spawn_ksigset spawn_sigempty;

/* Everything the child needs, prepared by the parent. */
struct spawn_child {
    const char *path; /* argv[0] or the result of the PATH search */
    char *const *argv;
    char *const *envp;
    int src[3]; /* sources of fds 0 (/dev/null), 1 and 2 */
    const int *forward;
    int nforward;
    bool two_phase;            /* a source sits on another's target: go through base */
    int base;                  /* above every source and target */
    const cpu_set_t *affinity; /* the task's own CPUs (spawn_request.affinity) */
    const cpu_set_t *unpin;    /* or a pinned thread's CPUs before its pin ... */
    int pin_cpu;               /* ... and the CPU it was pinned to */
    bool set_limit;
    /* the kernel's struct rlimit64 */
    struct {
        uint64_t cur, max;
    } limit;
    /* the signals the child sets to SIG_DFL: every one after a plain clone,
     * which leaves the engine's handlers in place; after clone3 with
     * CLONE_CLEAR_SIGHAND, which resets those, the ignored ones only */
    spawn_ksigset reset;
    pid_t parent;           /* our pid: a child whose parent is gone must not run */
    volatile pid_t *record; /* spawn_request.record_pgid */
    /* written by the child when a step fails */
    volatile int err;
};

/* ---- the child -------------------------------------------------------- */

SPAWN_CHILD static int spawn_child_src(const struct spawn_child *c, int target)
{
    return target < 3 ? c->src[target] : c->forward[target - 3];
}

/* dup2 without dup2: dup3 refuses from == to, where only close-on-exec
 * needs clearing. */
SPAWN_CHILD static long spawn_child_dup(int from, int to)
{
    if (from == to)
        return syscall(SYS_fcntl, from, F_SETFD, 0);
    return syscall(SYS_dup3, from, to, 0);
}

/* Targets 0 .. 2 + nforward.  The two-phase copies are close-on-exec, so
 * execve drops them and no close is needed. */
SPAWN_CHILD static int spawn_child_fds(const struct spawn_child *c)
{
    int n = 3 + c->nforward;
    if (c->two_phase)
        for (int t = 0; t < n; t++)
            if (syscall(SYS_dup3, spawn_child_src(c, t), c->base + t, O_CLOEXEC) < 0)
                return -1;
    for (int t = 0; t < n; t++)
        if (spawn_child_dup(c->two_phase ? c->base + t : spawn_child_src(c, t), t) < 0)
            return -1;
    return 0;
}

/* Signal sig's word and bit in a spawn_ksigset (signal 1 is bit 0). */
#define SPAWN_SIG_WORD(sig) ((size_t)((sig)-1) / (8 * sizeof(unsigned long)))
#define SPAWN_SIG_BIT(sig) (1ul << ((size_t)((sig)-1) % (8 * sizeof(unsigned long))))

SPAWN_CHILD static void spawn_child_signals_default(const struct spawn_child *c)
{
    for (int sig = 1; sig < _NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP &&
            (c->reset.w[SPAWN_SIG_WORD(sig)] & SPAWN_SIG_BIT(sig)))
            syscall(SYS_rt_sigaction, sig, &spawn_sigdfl, NULL, SPAWN_SIGSET_BYTES);
}

/* The child of a thread that spawn_thread_pin() bound: back to the
 * thread's CPUs before the pin, if the thread is still bound to exactly
 * its CPU (we inherited that).  Otherwise someone bound it anew since
 * (taskset -a -p, a cpuset that moved its CPUs away), and what we inherited
 * is what holds now; and a restore that fails (EINVAL: the old CPUs are no
 * longer the cpuset's) keeps it too, rather than failing the task. */
SPAWN_CHILD static void spawn_child_unpin(const struct spawn_child *c)
{
    /* the kernel fills the first n bytes (its CPU mask's size); compared
     * word by word here, not with CPU_COUNT() or CPU_EQUAL(), which call
     * into libc */
    unsigned long now[sizeof(cpu_set_t) / sizeof(unsigned long)];
    const size_t bits = 8 * sizeof now[0], at = (size_t)c->pin_cpu / bits;
    long n = syscall(SYS_sched_getaffinity, 0, sizeof now, now);
    if (n <= 0 || at >= (size_t)n / sizeof now[0])
        return;
    for (size_t k = 0; k < (size_t)n / sizeof now[0]; k++)
        if (now[k] != (k == at ? 1ul << ((size_t)c->pin_cpu % bits) : 0ul))
            return;
    (void)syscall(SYS_sched_setaffinity, 0, sizeof(cpu_set_t), c->unpin);
}

/* The child's own descriptor table, holding copies of the engine's
 * descriptors below c->base only (every source and target of the plan is
 * below it).  The child was cloned sharing the engine's table
 * (CLONE_FILES), so until this returns it must not change a descriptor.
 * close_range(base, ~0U, CLOSE_RANGE_UNSHARE) copies only the descriptors
 * below base (Linux >= 5.9, fs/file.c __close_range()); older kernels get
 * unshare(CLONE_FILES), which copies them all, as a plain clone would. */
SPAWN_CHILD static int spawn_child_own_fds(const struct spawn_child *c)
{
    if (syscall(SYS_close_range, (unsigned)c->base, ~0U, SPAWN_CLOSE_RANGE_UNSHARE) == 0)
        return 0;
    return (int)syscall(SYS_unshare, CLONE_FILES);
}

SPAWN_CHILD static int spawn_child_main(void *arg)
{
    struct spawn_child *c = arg;
    if (spawn_child_own_fds(c) < 0)
        goto fail;
    spawn_child_signals_default(c);
    if (syscall(SYS_setpgid, 0, 0) < 0)
        goto fail;
    if (c->record)
        *c->record = (pid_t)syscall(SYS_getpid);
    if (spawn_child_fds(c) < 0)
        goto fail;
    /* The task dies with the thread that started it: when pmc-hybrid is
     * killed (kill -9, a rank lost and MPI killing the job), its tasks do
     * not run on as orphans (an orderly end reaps them first).  A parent
     * that died before this line is caught by the getppid() check. */
    if (syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 ||
        syscall(SYS_getppid) != c->parent)
        goto fail;
    /* Descriptors inherited without close-on-exec from whoever started us
     * must not reach the task either (Linux >= 5.9; ENOSYS is ignored: then
     * only close-on-exec protects). */
    syscall(SYS_close_range, 3 + c->nforward, ~0U, 0);
    if (c->affinity && syscall(SYS_sched_setaffinity, 0, sizeof(cpu_set_t), c->affinity) < 0)
        goto fail;
    if (c->unpin)
        spawn_child_unpin(c);
    if (c->set_limit && syscall(SYS_prlimit64, 0, RLIMIT_AS, &c->limit, NULL) < 0)
        goto fail;
    if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, &spawn_sigempty, NULL, SPAWN_SIGSET_BYTES) < 0)
        goto fail;
    syscall(SYS_execve, c->path, c->argv, c->envp);
fail:
    c->err = errno ? errno : ECHILD;
    syscall(SYS_exit_group, 127);
    return 127;
}

/* ---- the parent: preparation ------------------------------------------ */

static const char *spawn_env_path(char *const *envp)
{
    for (; envp && *envp; envp++)
        if (strncmp(*envp, "PATH=", 5) == 0)
            return *envp + 5;
    return "/bin:/usr/bin";
}

/* 0 when buf names a regular file we may execute; else ENOENT or EACCES. */
static int spawn_try_candidate(const char *buf)
{
    struct stat st;
    if (stat(buf, &st) < 0)
        return errno == EACCES ? EACCES : ENOENT;
    if (!S_ISREG(st.st_mode) || access(buf, X_OK) < 0)
        return EACCES;
    return 0;
}

/* execvp's search over the task's PATH into buf; 0, ENOENT or EACCES. */
static int spawn_search_path(const char *name, char *const *envp, char *buf, size_t size)
{
    size_t nlen = strlen(name);
    int e = ENOENT;
    const char *dir = spawn_env_path(envp), *end;
    if (nlen == 0)
        return ENOENT;
    for (;; dir = end + 1) {
        end = strchrnul(dir, ':');
        size_t dlen = (size_t)(end - dir); /* 0: the current directory */
        if (dlen + 1 + nlen < size) {
            memcpy(buf, dir, dlen);
            if (dlen)
                buf[dlen++] = '/';
            memcpy(buf + dlen, name, nlen + 1);
            int r = spawn_try_candidate(buf);
            if (r == 0)
                return 0;
            if (r == EACCES)
                e = EACCES;
        }
        if (!*end)
            return e;
    }
}

/* Two phases are needed when a source sits on a target other than its own
 * (dup'ing onto that target first would destroy it). */
static void spawn_plan_fds(struct spawn_child *c)
{
    int n = 3 + c->nforward, top = n - 1;
    c->two_phase = false;
    for (int t = 0; t < n; t++) {
        int s = t < 3 ? c->src[t] : c->forward[t - 3];
        if (s < n && s != t)
            c->two_phase = true;
        if (s > top)
            top = s;
    }
    c->base = top + 1;
}

/* RLIMIT_AS soft = hard = bytes, lowered to our hard limit. */
static void spawn_plan_limit(struct spawn_child *c, uint64_t bytes)
{
    struct rlimit cur;
    c->set_limit = true;
    if (getrlimit(RLIMIT_AS, &cur) == 0 && cur.rlim_max != RLIM_INFINITY &&
        (uint64_t)cur.rlim_max < bytes)
        bytes = (uint64_t)cur.rlim_max;
    c->limit.cur = c->limit.max = bytes;
}

/* ---- the parent: clone ------------------------------------------------- */

static void spawn_reap(pid_t pid)
{
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* True when nothing catches SIGCHLD (SIG_DFL or SIG_IGN): then it may stay
 * open while the child borrows our memory, since no handler of ours can run
 * in the child. */
static bool spawn_sigchld_uncaught(void)
{
    struct sigaction sa;
    if (sigaction(SIGCHLD, NULL, &sa) < 0 || (sa.sa_flags & SA_SIGINFO))
        return false;
    return sa.sa_handler == SIG_DFL || sa.sa_handler == SIG_IGN;
}

/* ---- the parent: clone3 and the signals the child resets --------------- */

/* struct clone_args of linux/sched.h, its first version (64 bytes). */
struct spawn_clone_args {
    uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls;
};

#if defined(__x86_64__) && defined(SYS_clone3)
#define SPAWN_STR_(x) #x
#define SPAWN_STR(x) SPAWN_STR_(x)
#ifdef __CET__
#define SPAWN_ENDBR "\tendbr64\n"
#else
#define SPAWN_ENDBR ""
#endif
/* clone3(args, size) whose child calls fn(arg) on the stack that args
 * names and exits with what fn returns; the parent gets the child's pid or
 * -errno.  In assembly because the child starts inside the syscall
 * instruction on its new stack, with no C frame to return into (as glibc's
 * sysdeps/unix/sysv/linux/x86_64/clone3.S, which glibc does not export). */
long pmc_spawn_clone3(struct spawn_clone_args *args, size_t size, int (*fn)(void *), void *arg)
    __attribute__((visibility("hidden")));
// clang-format off
__asm__(".text\n"
        ".globl pmc_spawn_clone3\n"
        ".hidden pmc_spawn_clone3\n"
        ".type pmc_spawn_clone3, @function\n"
        ".p2align 4\n"
        "pmc_spawn_clone3:\n"
        "\t.cfi_startproc\n"
        SPAWN_ENDBR
        "\tmov %rdx, %r9\n"            /* fn and arg: the kernel keeps r8, r9 */
        "\tmov %rcx, %r8\n"
        "\tmov $" SPAWN_STR(SYS_clone3) ", %eax\n"
        "\tsyscall\n"
        "\ttest %rax, %rax\n"
        "\tjz 1f\n"
        "\tret\n"                      /* the parent: pid or -errno */
        "1:\n"                          /* the child, on its own stack */
        "\t.cfi_undefined rip\n"
        "\txor %ebp, %ebp\n"
        "\tand $-16, %rsp\n"
        "\tmov %r8, %rdi\n"
        "\tcall *%r9\n"
        "\tmov %eax, %edi\n"
        "\tmov $" SPAWN_STR(SYS_exit) ", %eax\n"
        "\tsyscall\n"
        "\thlt\n"
        "\t.cfi_endproc\n"
        ".size pmc_spawn_clone3, .-pmc_spawn_clone3\n");
// clang-format on
#define SPAWN_HAVE_CLONE3 1
#else
#define SPAWN_HAVE_CLONE3 0
#endif

/* clone3 with CLONE_CLEAR_SIGHAND: 1 works, -1 refused once (a kernel
 * before 5.5, a seccomp filter that answers ENOSYS or EPERM, another
 * architecture), 0 not tried yet (spawn__use_plain_clone() sets it). */
static atomic_int spawn_clone3_state = SPAWN_HAVE_CLONE3 ? 0 : -1;

/* The signals this process ignores (SIG_IGN), as spawn_note_signals() last
 * read them; the child of a clone3 sets these to SIG_DFL. */
static _Atomic unsigned long spawn_ignored[sizeof(spawn_ksigset) / sizeof(unsigned long)];
static atomic_bool spawn_ignored_read;

void spawn_note_signals(void)
{
    unsigned long set[sizeof spawn_ignored / sizeof spawn_ignored[0]] = {0};
    for (int sig = 1; sig < _NSIG; sig++) {
        /* the kernel's struct sigaction, whose first word is the handler on
         * x86-64; raw, so glibc's internal 32 and 33 are read too */
        unsigned long old[sizeof spawn_sigdfl / sizeof(unsigned long)];
        if (syscall(SYS_rt_sigaction, sig, NULL, old, SPAWN_SIGSET_BYTES) == 0 &&
            old[0] == (unsigned long)(uintptr_t)SIG_IGN)
            set[SPAWN_SIG_WORD(sig)] |= SPAWN_SIG_BIT(sig);
    }
    for (size_t k = 0; k < sizeof set / sizeof set[0]; k++)
        atomic_store_explicit(&spawn_ignored[k], set[k], memory_order_relaxed);
    atomic_store_explicit(&spawn_ignored_read, true, memory_order_release);
}

void spawn__use_plain_clone(bool plain)
{
    atomic_store(&spawn_clone3_state, plain || !SPAWN_HAVE_CLONE3 ? -1 : 0);
}

bool spawn__clears_handlers(void)
{
    return atomic_load(&spawn_clone3_state) > 0;
}

/* The plan's signals for a child of clone3: what spawn_note_signals() read
 * (read now if it never was). */
static void spawn_plan_signals(struct spawn_child *c)
{
    if (!atomic_load_explicit(&spawn_ignored_read, memory_order_acquire))
        spawn_note_signals();
    for (size_t k = 0; k < sizeof c->reset.w / sizeof c->reset.w[0]; k++)
        c->reset.w[k] = atomic_load_explicit(&spawn_ignored[k], memory_order_relaxed);
}

/* The clone itself: clone3 with CLONE_CLEAR_SIGHAND where it works (the
 * kernel resets every caught signal in the child, which then resets only
 * the ignored ones: a few system calls instead of 62), else clone with
 * every signal reset by the child.  The child's pid or -1 with errno. */
static pid_t spawn_clone_call(struct spawn_child *c, void *stack, int *pidfd)
{
#if SPAWN_HAVE_CLONE3
    if (atomic_load_explicit(&spawn_clone3_state, memory_order_relaxed) >= 0) {
        spawn_plan_signals(c);
        struct spawn_clone_args a = {.flags = CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_PIDFD |
                                              CLONE_CLEAR_SIGHAND,
                                     .pidfd = (uint64_t)(uintptr_t)pidfd,
                                     .exit_signal = SIGCHLD,
                                     .stack = (uint64_t)(uintptr_t)stack,
                                     .stack_size = SPAWN_STACK_SIZE};
        long r = pmc_spawn_clone3(&a, sizeof a, spawn_child_main, c);
        if (r >= 0) {
            atomic_store_explicit(&spawn_clone3_state, 1, memory_order_relaxed);
            return (pid_t)r;
        }
        if ((r != -ENOSYS && r != -EINVAL && r != -EPERM) ||
            atomic_load_explicit(&spawn_clone3_state, memory_order_relaxed) > 0) {
            errno = (int)-r;
            return -1;
        }
        atomic_store_explicit(&spawn_clone3_state, -1, memory_order_relaxed);
    }
#endif
    memset(&c->reset, 0xff, sizeof c->reset);
    return SPAWN_CLONE(spawn_child_main, (char *)stack + SPAWN_STACK_SIZE,
                       CLONE_VM | CLONE_VFORK | CLONE_FILES | CLONE_PIDFD | SIGCHLD, c, pidfd);
}

/* Clone the child with every signal blocked but an uncaught SIGCHLD; 0 or
 * an errno.  Why SIGCHLD stays open: another task that exits while this
 * thread blocks everything sends SIGCHLD to this thread, and a blocked
 * signal is never discarded, so the kernel queues it for the process and
 * wakes some other thread for nothing (such as MPI's UCX progress thread,
 * once per task); open and uncaught, it is dropped where it is sent. */
static int spawn_clone(struct spawn_child *c, void *stack, pid_t *pid, int *pidfd)
{
    spawn_ksigset all, old;
    memset(&all, 0xff, sizeof all);
    if (spawn_sigchld_uncaught())
        all.w[SPAWN_SIG_WORD(SIGCHLD)] &= ~SPAWN_SIG_BIT(SIGCHLD);
    /* Raw call: pthread_sigmask would leave glibc's internal signals open. */
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, SPAWN_SIGSET_BYTES);
    errno = 0; /* binds __errno_location now, not lazily in the child */
    int fd = -1;
    /* CLONE_FILES: the child copies only the descriptors it needs
     * (spawn_child_own_fds()), not the whole table */
    pid_t p = spawn_clone_call(c, stack, &fd);
    int e = p < 0 ? errno : 0;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, SPAWN_SIGSET_BYTES);
    if (p < 0)
        return e;
    if (c->err) {
        e = c->err;
        spawn_reap(p);
        if (fd >= 0)
            close(fd);
        return e;
    }
    if (fd < 0) /* a kernel before 5.2 ignores CLONE_PIDFD */
        fd = (int)syscall(SYS_pidfd_open, p, 0);
    if (fd < 0) {
        e = errno;
        kill(p, SIGKILL);
        spawn_reap(p);
        return e;
    }
    *pid = p;
    *pidfd = fd;
    return 0;
}

/* Per spawning thread: the child's stack and /dev/null, made once and kept
 * for the thread's life (a 64 KiB mapping and one descriptor per thread;
 * mapping and unmapping a stack per task is costly, UCX's mmap hooks
 * included).  Reuse is safe: CLONE_VFORK suspends this thread
 * until the child has exec'd or exited, so one stack serves one child at a
 * time. */
static _Thread_local struct {
    void *stack;
    int devnull;
    pid_t pid;          /* ours, for the child's getppid() check; renewed in a fork()ed child */
    bool pinned;        /* spawn_thread_pin(): children get unpinned back */
    int pin_cpu;        /* the CPU it bound the thread to */
    cpu_set_t unpinned; /* the thread's CPUs before spawn_thread_pin() */
} spawn_thread_state;

/* pthread_atfork child handler: the forking thread's state lives on in the
 * child, whose pid differs (getpid() is a system call since glibc 2.25,
 * so the pid is cached here instead of asked for per task). */
static void spawn_thread_state_forked(void)
{
    spawn_thread_state.pid = getpid();
}

static pthread_once_t spawn_atfork_once = PTHREAD_ONCE_INIT;

static void spawn_atfork_register(void)
{
    (void)pthread_atfork(NULL, NULL, spawn_thread_state_forked);
}

static int spawn_thread_state_init(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno;
    void *stack = mmap(NULL, SPAWN_STACK_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
    if (stack == MAP_FAILED) {
        int e = errno;
        close(fd);
        return e;
    }
    spawn_thread_state.devnull = fd;
    spawn_thread_state.stack = stack;
    spawn_thread_state.pid = getpid();
    pthread_once(&spawn_atfork_once, spawn_atfork_register);
    return 0;
}

int spawn_task(const struct spawn_request *req, pid_t *pid, int *pidfd)
{
    if (!req->argv || !req->argv[0] || req->nforward < 0 || (req->nforward && !req->forward_fds))
        return EINVAL;
    char path[PATH_MAX];
    struct spawn_child c = {
        .path = req->argv[0],
        .argv = req->argv,
        .envp = req->envp,
        .src = {-1, req->stdout_fd, req->stderr_fd},
        .forward = req->forward_fds,
        .nforward = req->nforward,
        .affinity = req->affinity,
        .unpin = !req->affinity && spawn_thread_state.pinned ? &spawn_thread_state.unpinned : NULL,
        .pin_cpu = spawn_thread_state.pin_cpu,
        .record = req->record_pgid};
    if (!strchr(c.path, '/')) {
        int e = spawn_search_path(c.path, req->envp, path, sizeof path);
        if (e)
            return e;
        c.path = path;
    }
    if (req->memory_limit_bytes)
        spawn_plan_limit(&c, req->memory_limit_bytes);
    c.src[0] = spawn_thread_state.devnull;
    void *stack = spawn_thread_state.stack;
    if (!stack) {
        int e = spawn_thread_state_init();
        if (e)
            return e;
        c.src[0] = spawn_thread_state.devnull;
        stack = spawn_thread_state.stack;
    }
    c.parent = spawn_thread_state.pid;
    spawn_plan_fds(&c);
    return spawn_clone(&c, stack, pid, pidfd);
}

int spawn_timed_out(int stderr_fd, const char *name, uint32_t limit_ms)
{
    dprintf(stderr_fd, "pmc-hybrid: task %s exceeded its time limit of %g s\n", name,
            limit_ms / 1000.0);
    return TASK_TIMEOUT_STATUS;
}

/* Reap the process of pidfd, waiting for it if needed: its wait status
 * (spawn_end_task()). */
static int spawn_wait_status(int pidfd)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    int rc;
    while ((rc = waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED)) < 0 && errno == EINTR)
        ;
    if (rc < 0)
        return 1 << 8;
    if (si.si_code == CLD_EXITED)
        return (si.si_status & 0xff) << 8;
    return (si.si_status & 0x7f) | (si.si_code == CLD_DUMPED ? 0x80 : 0);
}

bool spawn_exited(int pidfd)
{
    siginfo_t si;
    memset(&si, 0, sizeof si);
    return waitid(P_PIDFD, (id_t)pidfd, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid != 0;
}

int spawn_end_task(pid_t pid, int pidfd, volatile pid_t *record_pgid)
{
    kill(-pid, SIGKILL);
    if (record_pgid)
        *record_pgid = 0;
    return spawn_wait_status(pidfd);
}

/* Do orphans come to this process: is it PID 1, or a child subreaper? */
static bool spawn_adopts_orphans(void)
{
    int sub = 0;
    return getpid() == 1 || (prctl(PR_GET_CHILD_SUBREAPER, &sub, 0, 0, 0) == 0 && sub);
}

/* Is zombie z, a child of ours, an adopted orphan (spawn_reap_orphans())?
 * keep: a child of ours in a session of its own, or 0. */
static bool spawn_is_adopted(pid_t z, pid_t keep)
{
    pid_t pgid = getpgid(z);
    if (pgid < 0)
        return false;
    if (pgid != z)
        return true;
    pid_t sid = getsid(z);
    return z != keep && sid >= 0 && sid != getsid(0);
}

/* Reap the zombies among our children that waitid(type, id) shows, one at
 * a time (WNOWAIT), while each is an adopted orphan; the first that is not
 * (a task of ours, reaped through its pidfd) ends it.  How many. */
static unsigned spawn_reap_adopted(idtype_t type, id_t id, pid_t keep)
{
    unsigned n = 0;
    for (;;) {
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(type, id, &si, WEXITED | WNOHANG | WNOWAIT) < 0 || si.si_pid == 0 ||
            !spawn_is_adopted(si.si_pid, keep))
            return n;
        pid_t orphan = si.si_pid;
        memset(&si, 0, sizeof si);
        if (waitid(P_PID, (id_t)orphan, &si, WEXITED | WNOHANG) < 0)
            return n;
        n++;
    }
}

bool spawn_group_alive(pid_t pgid)
{
    /* its members that lead no group: never the leader of a group that
     * reuses the number (a task of ours) */
    if (spawn_adopts_orphans())
        spawn_reap_adopted(P_PGID, (id_t)pgid, 0);
    return kill(-pgid, 0) == 0 || errno == EPERM;
}

int spawn_adopt_orphans(void)
{
    return prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
}

unsigned spawn_reap_orphans(pid_t keep)
{
    return spawn_adopts_orphans() ? spawn_reap_adopted(P_ALL, 0, keep) : 0;
}

int spawn_reap_leader(pid_t pid, int pidfd, volatile pid_t *record_pgid, bool *group_left)
{
    int status = spawn_wait_status(pidfd);
    *group_left = spawn_group_alive(pid);
    if (!*group_left && record_pgid)
        *record_pgid = 0;
    return status;
}

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h) up to
 * SCHED_ATTR_SIZE_VER1 (56 bytes): read whole, written only up to VER0 (48
 * bytes), so the utilization clamps are never set.  glibc wraps
 * sched_getattr/sched_setattr only since 2.41. */
struct spawn_sched_attr {
    uint32_t size; /* bytes */
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime, sched_deadline, sched_period; /* ns; runtime: the slice */
    uint32_t sched_util_min, sched_util_max;              /* 0..1024; both 0 without uclamp */
};
#define SPAWN_SCHED_ATTR_SIZE_VER0 48
#define SPAWN_SCHED_FLAG_RESET_ON_FORK 0x01
#define SPAWN_UCLAMP_DEFAULT_MAX 1024 /* SCHED_CAPACITY_SCALE */

/* Would SCHED_FLAG_RESET_ON_FORK change what a child of this SCHED_OTHER
 * thread gets?  It resets a negative nice, the utilization clamps
 * (uclamp_fork()) and a custom slice (and a real-time policy, which the
 * caller has ruled out).  Nice and clamps are read here; a custom slice
 * cannot be told from the default one (spawn.h). */
static bool spawn_reset_changes_children(const struct spawn_sched_attr *at)
{
    return at->sched_nice < 0 || at->sched_util_min != 0 ||
           (at->sched_util_max != 0 && at->sched_util_max != SPAWN_UCLAMP_DEFAULT_MAX);
}

int spawn_thread_short_slice(void)
{
    struct spawn_sched_attr at;
    memset(&at, 0, sizeof at);
    if (syscall(SYS_sched_getattr, 0, &at, (unsigned)sizeof at, 0) < 0)
        return -1;
    /* SCHED_BATCH never preempts on wake-up (check_preempt_wakeup_fair), so
     * a short slice would only cut its turns; sched_runtime reads 0 for a
     * fair-class thread on kernels without custom slices (before 6.12) */
    if (at.sched_policy != SCHED_OTHER || at.sched_runtime == 0 ||
        spawn_reset_changes_children(&at))
        return 0;
    at.size = SPAWN_SCHED_ATTR_SIZE_VER0;
    at.sched_flags = SPAWN_SCHED_FLAG_RESET_ON_FORK;
    at.sched_runtime = SPAWN_THREAD_SLICE_NS;
    at.sched_deadline = at.sched_period = 0;
    return syscall(SYS_sched_setattr, 0, &at, 0) < 0 ? -1 : 1;
}

int spawn_thread_pin(int cpu)
{
    cpu_set_t before, one;
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return EINVAL;
    if (sched_getaffinity(0, sizeof before, &before) < 0)
        return errno;
    if (spawn_thread_state.pinned) /* pinned again: within the first CPUs */
        before = spawn_thread_state.unpinned;
    if (!CPU_ISSET(cpu, &before))
        return EINVAL;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) < 0)
        return errno;
    spawn_thread_state.unpinned = before;
    spawn_thread_state.pin_cpu = cpu;
    spawn_thread_state.pinned = true;
    return 0;
}

int spawn_exec_exit_code(int exec_errno)
{
    return exec_errno == ENOENT || exec_errno == ENOTDIR ? 127 : 126;
}
