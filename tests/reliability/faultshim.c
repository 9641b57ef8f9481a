/* faultshim.c - an LD_PRELOAD library that injects faults into pmc-hybrid
 * for the reliability tests (tests/reliability/faults.py).  Not part of
 * pmc-hybrid; built as libpmcfault.so by tests/reliability/CMakeLists.txt.
 * Configured by environment variables, each optional:
 *
 * Writes to one file.
 *   PMC_FAULT_WRITE_PATH=SUFFIX   files whose path (readlink of
 *                                 /proc/self/fd/N, so a renamed file counts
 *                                 under its new name) ends with SUFFIX
 *   PMC_FAULT_WRITE_AFTER=BYTES   bytes those files may take in all, from
 *                                 the start of the process; the write that
 *                                 crosses the limit is cut short (as a full
 *                                 disk does), later ones fail
 *   PMC_FAULT_WRITE_ERRNO=N       errno of the failures (default ENOSPC)
 *   write, writev, pwrite, pwritev, copy_file_range and sendfile are
 *   covered (the stdio merge copies with copy_file_range).
 *
 * Syncs of one file.
 *   PMC_FAULT_SYNC_PATH=SUFFIX    fsync and fdatasync of such files fail
 *   PMC_FAULT_SYNC_AFTER=N        after N successful ones (default 0)
 *   PMC_FAULT_SYNC_ERRNO=N        with this errno (default EIO)
 *
 * Closes of one file.
 *   PMC_FAULT_CLOSE_PATH=SUFFIX   close of such files releases the
 *                                 descriptor and fails with EIO, as a
 *                                 network file system reports a failed
 *                                 write-back
 *
 * Reaps.
 *   PMC_FAULT_REAP_DELAY_MS=N     a waitid that waits (no WNOHANG: a
 *                                 reaper's, spawn_end_task() and
 *                                 spawn_reap_leader()) sleeps N ms first,
 *                                 as a reaper preempted after it took the
 *                                 task's exit
 *
 * Allocations of pmc-hybrid's own code.  Only calls whose return address
 * lies in the main executable's code are counted (pmc-hybrid links the
 * engine statically, so these are exactly the engine's allocation sites;
 * MPI, UCX and libc allocate untouched):
 *   PMC_FAULT_MALLOC_NTH=N        fail the Nth such call (1 = the first) of
 *                                 malloc, calloc, realloc, aligned_alloc,
 *                                 posix_memalign, memalign, valloc
 *   PMC_FAULT_MALLOC_MODE=once    fail that call only (default); "from":
 *                                 fail it and every later one (memory that
 *                                 never comes back)
 *   PMC_FAULT_REPORT=PATH         at exit, append one line "pid P allocs A
 *                                 failed F writes_failed W syncs_failed S"
 *                                 (also written by processes that exec
 *                                 nothing else; tasks inherit the variables
 *                                 but are not pmc-hybrid: the counters only
 *                                 count pmc-hybrid's code)
 *
 * Every injected fault is also logged to stderr once per kind
 * ("faultshim: ...", with the call stack of the first failed allocation,
 * for addr2line) so a test can tell that it fired and where.
 * Thread-safe: counters are atomics; no lock is taken.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- configuration ------------------------------------------------------- */

static const char *write_path, *sync_path, *close_path, *report_path;
static long long write_after = -1, sync_after, reap_delay_ms;
static int write_errno = ENOSPC, sync_errno = EIO;
static long long malloc_nth;
static bool malloc_from;
static uintptr_t text_lo, text_hi; /* the main executable's code */

static _Atomic long long written, syncs, allocs;
static _Atomic long long writes_failed, syncs_failed, allocs_failed;
static _Atomic int said_write, said_sync, said_close, said_malloc, said_reap;

static long long env_ll(const char *name, long long dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoll(v, NULL, 0) : dflt;
}

static int find_text(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    if (info->dlpi_name && info->dlpi_name[0]) /* the first entry, "", is the executable */
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
            text_lo = info->dlpi_addr + ph->p_vaddr;
            text_hi = text_lo + ph->p_memsz;
        }
    }
    return 1;
}

/* Faults apply only inside pmc-hybrid itself: tasks and mpiexec inherit
 * LD_PRELOAD and the variables, and must run untouched.  PMC_FAULT_EXE
 * names the executable (default "pmc-hybrid", the end of /proc/self/exe). */
static bool is_target(void)
{
    const char *want = getenv("PMC_FAULT_EXE");
    if (!want || !*want)
        want = "pmc-hybrid";
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return false;
    exe[n] = '\0';
    size_t lw = strlen(want);
    return (size_t)n >= lw && strcmp(exe + n - lw, want) == 0;
}

__attribute__((constructor)) static void shim_init(void)
{
    if (!is_target())
        return; /* every fault stays off */
    write_path = getenv("PMC_FAULT_WRITE_PATH");
    write_after = env_ll("PMC_FAULT_WRITE_AFTER", write_path ? 0 : -1);
    write_errno = (int)env_ll("PMC_FAULT_WRITE_ERRNO", ENOSPC);
    sync_path = getenv("PMC_FAULT_SYNC_PATH");
    close_path = getenv("PMC_FAULT_CLOSE_PATH");
    sync_after = env_ll("PMC_FAULT_SYNC_AFTER", 0);
    sync_errno = (int)env_ll("PMC_FAULT_SYNC_ERRNO", EIO);
    reap_delay_ms = env_ll("PMC_FAULT_REAP_DELAY_MS", 0);
    malloc_nth = env_ll("PMC_FAULT_MALLOC_NTH", 0);
    const char *mode = getenv("PMC_FAULT_MALLOC_MODE");
    malloc_from = mode && strcmp(mode, "from") == 0;
    report_path = getenv("PMC_FAULT_REPORT");
    dl_iterate_phdr(find_text, NULL);
    if (malloc_nth > 0) {
        void *frame;
        backtrace(&frame, 1); /* loads libgcc's unwinder now, not inside malloc */
    }
}

__attribute__((destructor)) static void shim_report(void)
{
    if (!report_path || !is_target())
        return;
    char line[200];
    int n = snprintf(line, sizeof line,
                     "pid %d allocs %lld failed %lld writes_failed %lld "
                     "syncs_failed %lld\n",
                     (int)getpid(), (long long)allocs, (long long)allocs_failed,
                     (long long)writes_failed, (long long)syncs_failed);
    int fd = open(report_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, line, (size_t)n);
        (void)w;
        close(fd);
    }
}

static void say_once(_Atomic int *flag, const char *text)
{
    if (atomic_exchange(flag, 1) == 0) {
        ssize_t w = write(2, text, strlen(text));
        (void)w;
    }
}

/* ---- the next definitions ------------------------------------------------ */

#define NEXT(type, name, args)                                                                     \
    static type(*next_##name) args;                                                                \
    if (!next_##name)                                                                              \
        next_##name = (type(*) args)dlsym(RTLD_NEXT, #name);

/* ---- writes ---------------------------------------------------------------- */

static bool path_matches(int fd, const char *suffix)
{
    if (!suffix)
        return false;
    char link[64], target[4096];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, target, sizeof target - 1);
    if (n <= 0)
        return false;
    target[n] = '\0';
    size_t ls = strlen(suffix);
    return (size_t)n >= ls && strcmp(target + n - ls, suffix) == 0;
}

/* How many of len bytes to fd may go through: len, fewer (a short write),
 * or -1 with errno set (the write fails). */
static ssize_t write_budget(int fd, size_t len)
{
    if (write_after < 0 || len == 0 || !path_matches(fd, write_path))
        return (ssize_t)len;
    long long before = atomic_fetch_add(&written, (long long)len);
    if (before + (long long)len <= write_after)
        return (ssize_t)len;
    long long room = write_after - before;
    if (room > 0) {
        atomic_fetch_sub(&written, (long long)len - room);
        return (ssize_t)room;
    }
    atomic_fetch_sub(&written, (long long)len);
    atomic_fetch_add(&writes_failed, 1);
    say_once(&said_write, "faultshim: failing writes\n");
    errno = write_errno;
    return -1;
}

ssize_t write(int fd, const void *buf, size_t len)
{
    NEXT(ssize_t, write, (int, const void *, size_t));
    ssize_t ok = write_budget(fd, len);
    return ok < 0 ? -1 : next_write(fd, buf, (size_t)ok);
}

ssize_t pwrite(int fd, const void *buf, size_t len, off_t off)
{
    NEXT(ssize_t, pwrite, (int, const void *, size_t, off_t));
    ssize_t ok = write_budget(fd, len);
    return ok < 0 ? -1 : next_pwrite(fd, buf, (size_t)ok, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t len, off_t off)
{
    return pwrite(fd, buf, len, off);
}

static size_t iov_len(const struct iovec *iov, int n)
{
    size_t len = 0;
    for (int i = 0; i < n; i++)
        len += iov[i].iov_len;
    return len;
}

/* A short writev: only the first ok bytes of iov. */
static ssize_t writev_short(int fd, const struct iovec *iov, int n, size_t ok)
{
    NEXT(ssize_t, write, (int, const void *, size_t));
    for (int i = 0; i < n; i++) {
        if (iov[i].iov_len > 0 && ok > 0) {
            size_t take = iov[i].iov_len < ok ? iov[i].iov_len : ok;
            return next_write(fd, iov[i].iov_base, take); /* one piece: still short */
        }
    }
    return 0;
}

ssize_t writev(int fd, const struct iovec *iov, int n)
{
    NEXT(ssize_t, writev, (int, const struct iovec *, int));
    size_t len = iov_len(iov, n);
    ssize_t ok = write_budget(fd, len);
    if (ok < 0)
        return -1;
    return (size_t)ok == len ? next_writev(fd, iov, n) : writev_short(fd, iov, n, (size_t)ok);
}

ssize_t pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
    NEXT(ssize_t, pwritev, (int, const struct iovec *, int, off_t));
    size_t len = iov_len(iov, n);
    ssize_t ok = write_budget(fd, len);
    if (ok < 0)
        return -1;
    if ((size_t)ok != len) {
        errno = write_errno; /* not worth a short pwritev */
        return -1;
    }
    return next_pwritev(fd, iov, n, off);
}

ssize_t copy_file_range(int in, loff_t *in_off, int out, loff_t *out_off, size_t len,
                        unsigned flags)
{
    NEXT(ssize_t, copy_file_range, (int, loff_t *, int, loff_t *, size_t, unsigned));
    ssize_t ok = write_budget(out, len);
    return ok < 0 ? -1 : next_copy_file_range(in, in_off, out, out_off, (size_t)ok, flags);
}

ssize_t sendfile(int out, int in, off_t *off, size_t len)
{
    NEXT(ssize_t, sendfile, (int, int, off_t *, size_t));
    ssize_t ok = write_budget(out, len);
    return ok < 0 ? -1 : next_sendfile(out, in, off, (size_t)ok);
}

ssize_t sendfile64(int out, int in, off_t *off, size_t len)
{
    return sendfile(out, in, off, len);
}

/* ---- syncs ----------------------------------------------------------------- */

static bool sync_fails(int fd)
{
    if (!path_matches(fd, sync_path))
        return false;
    if (atomic_fetch_add(&syncs, 1) < sync_after)
        return false;
    atomic_fetch_add(&syncs_failed, 1);
    say_once(&said_sync, "faultshim: failing syncs\n");
    errno = sync_errno;
    return true;
}

int fsync(int fd)
{
    NEXT(int, fsync, (int));
    return sync_fails(fd) ? -1 : next_fsync(fd);
}

int fdatasync(int fd)
{
    NEXT(int, fdatasync, (int));
    return sync_fails(fd) ? -1 : next_fdatasync(fd);
}

/* ---- closes ---------------------------------------------------------------- */

int close(int fd)
{
    NEXT(int, close, (int));
    bool fails = path_matches(fd, close_path);
    int rc = next_close(fd);
    if (rc < 0 || !fails)
        return rc;
    say_once(&said_close, "faultshim: failing closes\n");
    errno = EIO;
    return -1;
}

/* ---- reaps ------------------------------------------------------------------ */

int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
    NEXT(int, waitid, (idtype_t, id_t, siginfo_t *, int));
    if (reap_delay_ms > 0 && !(options & WNOHANG)) {
        say_once(&said_reap, "faultshim: delaying reaps\n");
        struct timespec t = {reap_delay_ms / 1000, (reap_delay_ms % 1000) * 1000000L};
        while (nanosleep(&t, &t) < 0 && errno == EINTR)
            ;
    }
    return next_waitid(idtype, id, info, options);
}

/* ---- allocations ----------------------------------------------------------- */

/* dlsym() may allocate before the next malloc is known: serve it from here. */
static char boot[65536];
static _Atomic size_t boot_used;
static _Thread_local int in_dlsym;

static void *boot_alloc(size_t n)
{
    n = (n + 15) & ~(size_t)15;
    size_t at = atomic_fetch_add(&boot_used, n);
    return at + n <= sizeof boot ? boot + at : NULL;
}

static bool from_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

/* Count a call from pmc-hybrid's code; true when it must fail. */
static bool alloc_fails(void *ret)
{
    uintptr_t a = (uintptr_t)ret;
    if (malloc_nth <= 0 || a < text_lo || a >= text_hi)
        return false;
    long long n = atomic_fetch_add(&allocs, 1) + 1;
    if (n == malloc_nth || (malloc_from && n > malloc_nth)) {
        atomic_fetch_add(&allocs_failed, 1);
        if (atomic_exchange(&said_malloc, 1) == 0) {
            static const char text[] = "faultshim: failing an allocation, called from:\n";
            ssize_t w = write(2, text, sizeof text - 1);
            (void)w;
            void *frames[12];
            int nf = backtrace(frames, 12); /* preloaded in shim_init: no allocation */
            backtrace_symbols_fd(frames, nf, 2);
        }
        errno = ENOMEM;
        return true;
    }
    return false;
}

#define RESOLVE(type, name, args)                                                                  \
    static type(*next_##name) args;                                                                \
    if (!next_##name) {                                                                            \
        in_dlsym++;                                                                                \
        next_##name = (type(*) args)dlsym(RTLD_NEXT, #name);                                       \
        in_dlsym--;                                                                                \
    }

void *malloc(size_t n)
{
    if (in_dlsym)
        return boot_alloc(n);
    RESOLVE(void *, malloc, (size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    if (in_dlsym)
        return boot_alloc(n * m); /* boot is zero and never reused */
    RESOLVE(void *, calloc, (size_t, size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    RESOLVE(void *, realloc, (void *, size_t));
    if (from_boot(p)) { /* never freed; copy out */
        RESOLVE(void *, malloc, (size_t));
        void *q = next_malloc(n);
        if (q)
            memcpy(q, p, n);
        return q;
    }
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_realloc(p, n);
}

void free(void *p)
{
    RESOLVE(void, free, (void *));
    if (p && !from_boot(p))
        next_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    RESOLVE(void *, aligned_alloc, (size_t, size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_aligned_alloc(align, n);
}

int posix_memalign(void **out, size_t align, size_t n)
{
    RESOLVE(int, posix_memalign, (void **, size_t, size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return ENOMEM;
    return next_posix_memalign(out, align, n);
}

void *memalign(size_t align, size_t n)
{
    RESOLVE(void *, memalign, (size_t, size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_memalign(align, n);
}

void *valloc(size_t n)
{
    RESOLVE(void *, valloc, (size_t));
    if (alloc_fails(__builtin_return_address(0)))
        return NULL;
    return next_valloc(n);
}
