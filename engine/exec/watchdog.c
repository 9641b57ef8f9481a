/* watchdog.c - the process that kills a dead agent's tasks; see watchdog.h.
 *
 * The child of fork() in a threaded process may only make async-signal-safe
 * calls (POSIX fork(2)): it receives, kills, copies files with
 * taskio_file_append() (copy_file_range, else pread and pwrite through a
 * stack buffer: no allocation, no lock) and exits, and formats its
 * messages by hand.
 */
#include "engine/exec/watchdog.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/digits.h"
#include "io/taskio.h"

#define WATCHDOG_FDS (2 * (WATCHDOG_SLOTS + 1)) /* out, err per slot, then the rank's */

struct watchdog {
    pid_t pid;
    int sock;                         /* the agent's end: its closing is the signal */
    volatile pid_t *table;            /* WATCHDOG_SLOTS entries, MAP_SHARED */
    char (*names)[WATCHDOG_NAME_MAX]; /* WATCHDOG_SLOTS task names, MAP_SHARED */
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

/* Append string t to buf (size bytes, n of them used, one kept for
 * nothing): the new length. */
static size_t watchdog_text(char *buf, size_t size, size_t n, const char *t)
{
    for (; *t && n + 1 < size; t++)
        buf[n++] = *t;
    return n;
}

/* Take the descriptors the agent lends (watchdog_lend()) into fds (each
 * stored + 1: 0 is none) until end-of-file.  A message that is not one
 * index and two descriptors is dropped, its descriptors closed. */
static void watchdog_receive(int sock, int *fds)
{
    for (;;) {
        uint32_t i = 0;
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(2 * sizeof(int))];
        } c;
        struct iovec iov = {.iov_base = &i, .iov_len = sizeof i};
        struct msghdr mh = {
            .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
        ssize_t r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
        if (r == 0 || (r < 0 && errno != EINTR))
            return;
        struct cmsghdr *h = r > 0 ? CMSG_FIRSTHDR(&mh) : NULL;
        if (!h || h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        int got[2] = {-1, -1};
        size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(got, CMSG_DATA(h), (n < 2 ? n : 2) * sizeof(int));
        for (int k = 0; k < 2; k++) {
            int *slot = &fds[2 * (size_t)i + (size_t)k];
            if (r != sizeof i || n != 2 || i > WATCHDOG_OUTPUTS) {
                if (got[k] >= 0)
                    close(got[k]);
                continue;
            }
            if (*slot)
                close(*slot - 1);
            *slot = got[k] + 1;
        }
    }
}

/* Append capture file src (its whole content; nothing when empty and not
 * `always`) to the rank's file dst, then the note naming the cut task:
 * one block (taskio_file_append(): a kernel copy, no allocation). */
static void watchdog_save(int src, struct taskio_file *dst, const char *name, int rank, bool always)
{
    off_t len = src >= 0 ? taskio_size(src) : -1;
    if (len < 0 || dst->fd < 0 || (len == 0 && !always))
        return;
    char note[WATCHDOG_NAME_MAX + 160];
    size_t n = taskio_needs_newline(src, len) ? 1 : 0;
    note[0] = '\n';
    n = watchdog_text(note, sizeof note, n, "pmc-hybrid: task ");
    n = watchdog_text(note, sizeof note, n, name);
    n += watchdog_format(note + n, sizeof note - n, " cut short: the node agent of rank ", rank,
                         " ended while it ran; its output so far is above (");
    n += watchdog_format(note + n, sizeof note - n, "", (long)len, " bytes)\n");
    (void)taskio_file_append(dst, src, len, note, n);
}

/* The rank's file lent at fds[k] (+ 1: 0 is none), to append at its end. */
static struct taskio_file watchdog_rank_file(const int *fds, int k)
{
    struct taskio_file f = {.fd = fds[k] - 1, .end = 0, .path = NULL};
    if (f.fd >= 0 && (f.end = taskio_size(f.fd)) < 0)
        f.fd = -1;
    return f;
}

/* The watchdog process: take the lent descriptors until end-of-file, kill
 * what is recorded, save what the killed tasks wrote. */
static _Noreturn void watchdog_main(int sock, int agent_end, volatile pid_t *table,
                                    char (*names)[WATCHDOG_NAME_MAX], int *fds, int rank)
{
    close(agent_end);
    /* the agent's handlers (main.c's stop signals) came with the fork: run
     * in here they would write to descriptors whose numbers now name lent
     * files; the watchdog must outlive its agent anyway */
    static const int stop_signals[] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2, SIGHUP};
    struct sigaction ignore;
    memset(&ignore, 0, sizeof ignore);
    ignore.sa_handler = SIG_IGN;
    for (size_t k = 0; k < sizeof stop_signals / sizeof stop_signals[0]; k++)
        sigaction(stop_signals[k], &ignore, NULL);
    setsid();                                    /* out of the rank's process group and session */
    prctl(PR_SET_NAME, "pmc-watchdog", 0, 0, 0); /* its comm in ps and /proc */
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1); /* stderr stays: the message below */
    }
    if (sock != 3) {
        dup2(sock, 3);
        sock = 3;
    }
    syscall(SYS_close_range, 4, ~0U, 0); /* MPI's sockets, the task capture files */
    watchdog_receive(sock, fds);
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
    /* every task still recorded was cut short, killed here or already by
     * its PR_SET_PDEATHSIG (spawn.c) and perhaps reaped by whoever
     * inherited it, which a failed kill does not tell apart from a group
     * gone: its output is saved all the same */
    struct taskio_file out = watchdog_rank_file(fds, 2 * WATCHDOG_OUTPUTS);
    struct taskio_file err = watchdog_rank_file(fds, 2 * WATCHDOG_OUTPUTS + 1);
    for (uint32_t i = 0; i < WATCHDOG_SLOTS; i++) {
        if (table[i] <= 0)
            continue;
        names[i][WATCHDOG_NAME_MAX - 1] = '\0';
        watchdog_save(fds[2 * i] - 1, &out, names[i], rank, false);
        watchdog_save(fds[2 * i + 1] - 1, &err, names[i], rank, true);
    }
    _exit(0);
}

/* Map n bytes of anonymous memory, shared with the watchdog or not;
 * NULL on failure. */
static void *watchdog_map(size_t n, bool shared)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE,
                   (shared ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void watchdog_unmap(struct watchdog *w)
{
    if (w->table)
        munmap((void *)w->table, sizeof(pid_t) * WATCHDOG_SLOTS);
    if (w->names)
        munmap(w->names, sizeof *w->names * WATCHDOG_SLOTS);
}

struct watchdog *watchdog_start(int rank, struct pmc_error *err)
{
    struct watchdog *w = calloc(1, sizeof *w);
    int fds[2] = {-1, -1};
    int *lent = NULL; /* the watchdog's copy (private): the descriptors lent to it */
    if (!w) {
        pmc_errorf(err, "watchdog: out of memory");
        return NULL;
    }
    w->sock = -1;
    w->table = watchdog_map(sizeof(pid_t) * WATCHDOG_SLOTS, true);
    w->names = watchdog_map(sizeof *w->names * WATCHDOG_SLOTS, true);
    lent = watchdog_map(sizeof(int) * WATCHDOG_FDS, false);
    if (!w->table || !w->names || !lent) {
        pmc_errorf(err, "watchdog: mmap: %m");
        goto fail;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) < 0) {
        pmc_errorf(err, "watchdog: socketpair: %m");
        goto fail;
    }
    w->pid = fork();
    if (w->pid < 0) {
        pmc_errorf(err, "watchdog: fork: %m");
        goto fail;
    }
    if (w->pid == 0)
        watchdog_main(fds[0], fds[1], w->table, w->names, lent, rank);
    close(fds[0]);
    munmap(lent, sizeof(int) * WATCHDOG_FDS);
    w->sock = fds[1];
    return w;
fail:
    if (fds[0] >= 0) {
        close(fds[0]);
        close(fds[1]);
    }
    if (lent)
        munmap(lent, sizeof(int) * WATCHDOG_FDS);
    watchdog_unmap(w);
    free(w);
    return NULL;
}

int watchdog_lend(struct watchdog *w, uint32_t i, int out_fd, int err_fd)
{
    if (!w || i > WATCHDOG_OUTPUTS)
        return 0;
    int fds[2] = {out_fd, err_fd};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof fds)];
    } c;
    memset(&c, 0, sizeof c);
    struct iovec iov = {.iov_base = &i, .iov_len = sizeof i};
    struct msghdr mh = {
        .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf, .msg_controllen = sizeof c.buf};
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(h), fds, sizeof fds);
    ssize_t r;
    while ((r = sendmsg(w->sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    return r < 0 ? -1 : 0;
}

void watchdog_name(struct watchdog *w, uint32_t i, const char *name)
{
    if (!w || i >= WATCHDOG_SLOTS)
        return;
    size_t n = strnlen(name, WATCHDOG_NAME_MAX - 1);
    memcpy(w->names[i], name, n);
    w->names[i][n] = '\0';
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
    close(w->sock);
    while (waitpid(w->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    watchdog_unmap(w);
    free(w);
}
