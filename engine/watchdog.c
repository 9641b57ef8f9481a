/* watchdog.c - the process that kills a dead agent's tasks; see watchdog.h.
 *
 * The child of fork() in a threaded process may only make async-signal-safe
 * calls (POSIX fork(2)): it reads, kills, writes and exits, and formats its
 * one message by hand.
 */
#include "engine/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/digits.h"

struct watchdog {
    pid_t pid;
    int wfd;               /* write end: its closing is the signal */
    volatile pid_t *table; /* WATCHDOG_SLOTS entries, MAP_SHARED */
};

/* "text" + decimal n + "text2", with no allocation and no stdio. */
static size_t watchdog_format(char *buf, size_t size, const char *a, long n, const char *b)
{
    char digits[DIGITS_MAX], *end = digits + sizeof digits;
    const char *d = digits_i64(n, end);
    size_t len = 0;
    for (const char *p = a; *p && len + 1 < size; p++)
        buf[len++] = *p;
    while (d < end && len + 1 < size)
        buf[len++] = *d++;
    for (const char *p = b; *p && len + 1 < size; p++)
        buf[len++] = *p;
    return len;
}

/* The watchdog process: wait for end-of-file, kill what is recorded. */
static _Noreturn void watchdog_main(int rfd, int wfd, volatile pid_t *table, int rank)
{
    close(wfd);
    setsid();                                    /* out of the rank's process group and session */
    prctl(PR_SET_NAME, "pmc-watchdog", 0, 0, 0); /* its comm in ps and /proc */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1); /* stderr stays: the message below */
    }
    if (rfd != 3) {
        dup2(rfd, 3);
        rfd = 3;
    }
    syscall(SYS_close_range, 4, ~0U, 0); /* MPI's sockets, the task capture files */
    char buf[64];
    ssize_t r;
    while ((r = read(rfd, buf, sizeof buf)) != 0)
        if (r < 0 && errno != EINTR)
            break;
    long killed = 0;
    for (uint32_t i = 0; i < WATCHDOG_SLOTS; i++) {
        pid_t g = table[i];
        if (g > 0 && kill(-g, SIGKILL) == 0)
            killed++;
    }
    if (killed > 0) {
        char msg[160];
        size_t n = watchdog_format(msg, sizeof msg, "pmc-hybrid: the node agent of rank ", rank,
                                   " ended without stopping its tasks: the watchdog killed ");
        n += watchdog_format(msg + n, sizeof msg - n, "", killed, " task process groups\n");
        ssize_t w = write(2, msg, n);
        (void)w;
    }
    _exit(0);
}

struct watchdog *watchdog_start(int rank, struct pmc_error *err)
{
    struct watchdog *w = calloc(1, sizeof *w);
    int fds[2] = {-1, -1};
    if (!w) {
        pmc_errorf(err, "watchdog: out of memory");
        return NULL;
    }
    w->wfd = -1;
    void *p = mmap(NULL, sizeof(pid_t) * WATCHDOG_SLOTS, PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        pmc_errorf(err, "watchdog: mmap: %m");
        free(w);
        return NULL;
    }
    w->table = p;
    if (pipe2(fds, O_CLOEXEC) < 0) {
        pmc_errorf(err, "watchdog: pipe: %m");
        goto fail;
    }
    w->pid = fork();
    if (w->pid < 0) {
        pmc_errorf(err, "watchdog: fork: %m");
        goto fail;
    }
    if (w->pid == 0)
        watchdog_main(fds[0], fds[1], w->table, rank);
    close(fds[0]);
    w->wfd = fds[1];
    return w;
fail:
    if (fds[0] >= 0) {
        close(fds[0]);
        close(fds[1]);
    }
    munmap(p, sizeof(pid_t) * WATCHDOG_SLOTS);
    free(w);
    return NULL;
}

volatile pid_t *watchdog_entry(struct watchdog *w, uint32_t i)
{
    return w && i < WATCHDOG_SLOTS ? &w->table[i] : NULL;
}

void watchdog_clear(struct watchdog *w, uint32_t i)
{
    if (w && i < WATCHDOG_SLOTS)
        w->table[i] = 0;
}

pid_t watchdog_pid(const struct watchdog *w)
{
    return w ? w->pid : 0;
}

void watchdog_stop(struct watchdog *w)
{
    if (!w)
        return;
    close(w->wfd);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    munmap((void *)w->table, sizeof(pid_t) * WATCHDOG_SLOTS);
    free(w);
}
