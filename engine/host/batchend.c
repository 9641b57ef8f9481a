/* batchend.c - the batch allocation's end; see batchend.h.
 *
 * Three layers: run_command() runs one query under a time limit and reports
 * what happened (exit status, signal, time out, could not start) with its
 * output, deciding nothing; the parsers turn one string into a number or
 * say it is malformed, touching nothing else; and one reader per batch
 * system decides from its variables and its commands' output, in the order
 * batchend.h gives.
 *
 * The child is started with posix_spawnp(3), which glibc builds on
 * clone(CLONE_VM | CLONE_VFORK) and which returns the exec's errno (so "not
 * on PATH" is ENOENT from the call, not an exit status 127); every
 * descriptor of ours is close-on-exec.  The wait polls the output pipe and
 * a pidfd (Linux >= 5.3; without one, a 10 ms tick of waitid(WNOWAIT)), so
 * that a command that exits without closing a pipe its children still hold
 * is not waited for until the time limit.  The child is reaped only after
 * its process group was killed, so the group id cannot have been reused.
 */
#include "engine/host/batchend.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "io/clock.h"
#include "io/grow.h"

extern char **environ;

#define BATCHEND_MAX_OUTPUT (1u << 20) /* bytes of a command's stdout kept */
#define BATCHEND_TICK_MS 10            /* exit polling without a pidfd */
#define BATCHEND_MAX_EPOCH 1e11        /* year 5138: anything later is garbage */

/* ---- running a command ------------------------------------------------------ */

enum cmd_state {
    CMD_EXITED,    /* code: its exit status */
    CMD_SIGNALED,  /* code: the signal */
    CMD_TIMED_OUT, /* killed at the time limit */
    CMD_NOT_FOUND, /* not on PATH (ENOENT from posix_spawnp) */
    CMD_NO_START,  /* code: errno of posix_spawnp or of our own set-up */
};

struct cmd {
    enum cmd_state state;
    int code;
    char *out; /* stdout, NUL-terminated, at most BATCHEND_MAX_OUTPUT bytes */
    size_t len, cap;
    bool lost; /* output dropped for want of memory */
};

static void cmd_keep(struct cmd *c, const char *buf, size_t n)
{
    if (c->len + n > BATCHEND_MAX_OUTPUT)
        n = BATCHEND_MAX_OUTPUT - c->len;
    if (n == 0)
        return;
    if (pmc_grow_from((void **)&c->out, &c->cap, c->len + n + 1, 1, 4096) < 0) {
        c->lost = true;
        return;
    }
    memcpy(c->out + c->len, buf, n);
    c->len += n;
    c->out[c->len] = '\0';
}

/* One read from the (non-blocking) pipe: 1 data, 0 end of file or error,
 * -1 nothing to read now. */
static int cmd_read(struct cmd *c, int fd)
{
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n > 0) {
        cmd_keep(c, buf, (size_t)n);
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return -1;
    return 0;
}

static int open_pidfd(pid_t pid)
{
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    (void)pid;
    return -1;
#endif
}

/* Whether pid exited, leaving it a zombie (not reaped). */
static bool child_exited(pid_t pid)
{
    siginfo_t si;
    si.si_pid = 0;
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

/* Read the child's output until it exits or the deadline passes; true if it
 * exited. */
static bool cmd_wait(struct cmd *c, pid_t pid, int fd, int64_t deadline)
{
    int pidfd = open_pidfd(pid);
    bool open = true, exited = false;
    while (!exited) {
        int64_t left = deadline - pmc_mono_ms();
        if (left <= 0)
            break;
        if (pidfd < 0 && left > BATCHEND_TICK_MS)
            left = BATCHEND_TICK_MS;
        struct pollfd p[2] = {{open ? fd : -1, POLLIN, 0}, {pidfd, POLLIN, 0}};
        if (poll(p, 2, (int)left) < 0 && errno != EINTR)
            break;
        if (open && p[0].revents)
            open = cmd_read(c, fd) != 0;
        exited = pidfd >= 0 ? (p[1].revents & POLLIN) != 0 : child_exited(pid);
    }
    /* What it wrote before it exited is in the pipe; a child it left
     * behind may still write: read until the pipe is empty, not to EOF. */
    while (exited && open && pmc_mono_ms() < deadline && cmd_read(c, fd) == 1)
        ;
    if (pidfd >= 0)
        close(pidfd);
    return exited;
}

/* A pipe whose ends are both above 2 (so that dup2 onto 1 cannot be a
 * no-op that keeps close-on-exec), close-on-exec; the read end
 * non-blocking.  0 or an errno. */
static int output_pipe(int p[2])
{
    if (pipe2(p, O_CLOEXEC) < 0)
        return errno;
    for (int i = 0; i < 2; i++) {
        if (p[i] > 2)
            continue;
        int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
        if (fd < 0) {
            int e = errno;
            close(p[0]);
            close(p[1]);
            return e;
        }
        close(p[i]);
        p[i] = fd;
    }
    if (fcntl(p[0], F_SETFL, O_NONBLOCK) < 0) {
        int e = errno;
        close(p[0]);
        close(p[1]);
        return e;
    }
    return 0;
}

/* Also close, in the child, descriptors we inherited without close-on-exec
 * (ours all have it): glibc >= 2.34. */
static int close_above_2(posix_spawn_file_actions_t *fa)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
    return posix_spawn_file_actions_addclosefrom_np(fa, 3);
#else
    (void)fa;
    return 0;
#endif
}

/* Start argv[0] (searched in our PATH) with envp: stdin and stderr
 * /dev/null, stdout the pipe's write end, its own process group, no signal
 * blocked or ignored.  0 with *pid, or an errno. */
static int cmd_spawn(char *const argv[], char *const envp[], int out_fd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc)
        return rc;
    if ((rc = posix_spawnattr_init(&attr))) {
        posix_spawn_file_actions_destroy(&fa);
        return rc;
    }
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    if (!(rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) &&
        !(rc = posix_spawn_file_actions_adddup2(&fa, out_fd, 1)) &&
        !(rc = posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0)) &&
        !(rc = close_above_2(&fa)) &&
        !(rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                   POSIX_SPAWN_SETSIGDEF)) &&
        !(rc = posix_spawnattr_setpgroup(&attr, 0)) &&
        !(rc = posix_spawnattr_setsigmask(&attr, &none)) &&
        !(rc = posix_spawnattr_setsigdefault(&attr, &all)))
        rc = posix_spawnp(pid, argv[0], &fa, &attr, argv, envp);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Run argv with envp (NULL: ours) for at most timeout_ms; c gets the
 * outcome and the output (free with cmd_free). */
static void run_command(char *const argv[], char *const envp[], int timeout_ms, struct cmd *c)
{
    memset(c, 0, sizeof *c);
    int64_t deadline = pmc_mono_ms() + timeout_ms;
    int p[2];
    int rc = output_pipe(p);
    pid_t pid = -1;
    if (rc == 0) {
        rc = cmd_spawn(argv, envp ? envp : environ, p[1], &pid);
        close(p[1]);
        if (rc)
            close(p[0]);
    }
    if (rc) {
        c->state = rc == ENOENT ? CMD_NOT_FOUND : CMD_NO_START;
        c->code = rc;
        return;
    }
    bool exited = cmd_wait(c, pid, p[0], deadline);
    close(p[0]);
    kill(-pid, SIGKILL); /* the command if it overstayed, else what it left */
    int status = 0;
    pid_t w;
    while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR)
        ;
    if (!exited) {
        c->state = CMD_TIMED_OUT;
    } else if (w < 0) {
        c->state = CMD_NO_START; /* status lost (SIGCHLD ignored?) */
        c->code = errno;
    } else if (WIFEXITED(status)) {
        c->state = CMD_EXITED;
        c->code = WEXITSTATUS(status);
    } else {
        c->state = CMD_SIGNALED;
        c->code = WTERMSIG(status);
    }
}

static void cmd_free(struct cmd *c)
{
    free(c->out);
    c->out = NULL;
}

/* Our environment with NAME=value replacing any NAME (an array of
 * pointers: free() it alone), or NULL with ENOMEM. */
static char **env_with(const char *assignment)
{
    size_t name_len = strcspn(assignment, "=") + 1, n = 0;
    while (environ[n])
        n++;
    char **env = malloc(sizeof *env * (n + 2));
    if (!env)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], assignment, name_len) != 0)
            env[k++] = environ[i];
    env[k++] = (char *)assignment;
    env[k] = NULL;
    return env;
}

/* ---- parsers: one string in, a number or "malformed" out -------------------- */

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* The first non-empty line of text, trimmed (text is modified). */
static char *first_line(char *text)
{
    char *s = text + strspn(text, " \t\r\n");
    s[strcspn(s, "\r\n")] = '\0';
    return trim(s);
}

/* Up to max colon-separated unsigned decimal fields ("1:02:03"); each at
 * most 10 digits.  The number of fields, with *end after the last; 0 (and
 * *end = s) if s does not start with such fields. */
static int parse_fields(const char *s, long long *field, int max, const char **end)
{
    int n = 0;
    *end = s;
    for (;;) {
        int digits = 0;
        long long v = 0;
        while (isdigit((unsigned char)s[digits]) && digits < 11)
            v = v * 10 + (s[digits++] - '0');
        if (digits == 0 || digits > 10)
            return 0; /* *end still at the start */
        field[n++] = v;
        s += digits;
        if (n == max || s[0] != ':' || !isdigit((unsigned char)s[1]))
            break;
        s++;
    }
    *end = s;
    return n;
}

/* "[-]SECONDS" or "[-][H:]M:S" (minutes and seconds below 60 when a larger
 * field precedes them) -> seconds.  0, or -1 if s is not that. */
static int parse_duration(const char *s, long long *secs)
{
    bool neg = *s == '-';
    long long f[3];
    const char *end;
    int n = parse_fields(s + neg, f, 3, &end);
    if (n == 0 || *end != '\0')
        return -1;
    long long v = f[0];
    for (int i = 1; i < n; i++) {
        if (f[i] >= 60)
            return -1;
        v = v * 60 + f[i];
    }
    *secs = neg ? -v : v;
    return 0;
}

/* Whole seconds since the epoch, 1 .. BATCHEND_MAX_EPOCH.  0 or -1. */
static int parse_epoch(const char *s, double *t)
{
    long long f;
    const char *end;
    if (parse_fields(s, &f, 1, &end) != 1 || *end != '\0' || f < 1 || f > BATCHEND_MAX_EPOCH)
        return -1;
    *t = (double)f;
    return 0;
}

/* Exactly "YYYY-MM-DDTHH:MM:SS", local time -> seconds since the epoch.  0,
 * or -1 if s is not that or names no day (2030-02-30). */
static int parse_local_time(const char *s, double *t)
{
    static const char shape[] = "dddd-dd-ddTdd:dd:dd";
    for (size_t i = 0; i < sizeof shape - 1; i++)
        if (shape[i] == 'd' ? !isdigit((unsigned char)s[i]) : s[i] != shape[i])
            return -1;
    if (s[sizeof shape - 1] != '\0')
        return -1;
    struct tm tm = {0};
    tm.tm_year = atoi(s) - 1900;
    tm.tm_mon = atoi(s + 5) - 1;
    tm.tm_mday = atoi(s + 8);
    tm.tm_hour = atoi(s + 11);
    tm.tm_min = atoi(s + 14);
    tm.tm_sec = atoi(s + 17);
    tm.tm_isdst = -1; /* whichever applies on that day */
    int year = tm.tm_year, mon = tm.tm_mon, mday = tm.tm_mday;
    if (mon < 0 || mon > 11 || mday < 1 || tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        return -1;
    time_t v = mktime(&tm);
    if (v == (time_t)-1 || tm.tm_year != year || tm.tm_mon != mon || tm.tm_mday != mday)
        return -1;
    *t = (double)v;
    return 0;
}

/* The value of "KEY = VALUE" in qstat -f output (lines, indented), copied
 * trimmed into buf; NULL when no line has that key. */
static const char *qstat_attr(const char *text, const char *key, char *buf, size_t size)
{
    size_t klen = strlen(key);
    for (const char *line = text; *line; line += strcspn(line, "\n"), line += *line == '\n') {
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, key, klen) != 0 || (p[klen] != ' ' && p[klen] != '='))
            continue;
        p += klen + strspn(p + klen, " ");
        if (*p != '=')
            continue;
        p += 1 + strspn(p + 1, " \t");
        size_t n = strcspn(p, "\n");
        snprintf(buf, size, "%.*s", (int)n, p);
        return trim(buf);
    }
    return NULL;
}

/* ---- the batch systems ------------------------------------------------------ */

struct ctx {
    double now;
    int timeout_ms;
    struct batchend *out;
    struct pmc_error *err;
};

static void note(struct batchend *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct batchend *out, const char *fmt, ...)
{
    size_t n = strlen(out->note);
    if (n && n + 2 < sizeof out->note)
        n += (size_t)snprintf(out->note + n, sizeof out->note - n, "; ");
    if (n + 1 >= sizeof out->note)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->note + n, sizeof out->note - n, fmt, ap);
    va_end(ap);
}

static int found(struct batchend *out, double end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int found(struct batchend *out, double end, const char *fmt, ...)
{
    out->end_epoch = end;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->source, sizeof out->source, fmt, ap);
    va_end(ap);
    return 1;
}

/* Run argv; true when it exited 0 with some output (c holds it: free with
 * cmd_free), else the failure is noted and c freed. */
static bool ask(const struct ctx *x, char *const argv[], char *const envp[], const char *what,
                struct cmd *c)
{
    run_command(argv, envp, x->timeout_ms, c);
    if (c->state == CMD_EXITED && c->code == 0 && !c->lost && c->len > 0)
        return true;
    switch (c->state) {
    case CMD_EXITED:
        if (c->code)
            note(x->out, "%s: exit status %d", what, c->code);
        else
            note(x->out, c->lost ? "%s: out of memory" : "%s: printed nothing", what);
        break;
    case CMD_SIGNALED:
        note(x->out, "%s: killed by signal %d", what, c->code);
        break;
    case CMD_TIMED_OUT:
        note(x->out, "%s: no answer within %d ms, killed", what, x->timeout_ms);
        break;
    case CMD_NOT_FOUND:
        note(x->out, "%s: %s not found on PATH", what, argv[0]);
        break;
    case CMD_NO_START:
        note(x->out, "%s: %s", what, strerror(c->code));
        break;
    }
    cmd_free(c);
    return false;
}

static bool is_set(const char *v)
{
    return v && *v;
}

/* Slurm's "no end" words for %e (squeue(1), slurm_make_time_str). */
static bool slurm_no_end(const char *v)
{
    static const char *const words[] = {"N/A", "NONE", "Unknown", "UNLIMITED", "INVALID"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strcasecmp(v, words[i]) == 0)
            return true;
    return false;
}

static int slurm_squeue(const struct ctx *x, const char *id)
{
    char *env_standard = "SLURM_TIME_FORMAT=standard";
    char **envp = env_with(env_standard);
    if (!envp) {
        note(x->out, "squeue: out of memory");
        return 0;
    }
    char *argv[] = {"squeue", "-h", "-j", (char *)id, "-o", "%e", NULL};
    struct cmd c;
    bool ok = ask(x, argv, envp, "squeue", &c);
    free(envp);
    if (!ok)
        return 0;
    const char *v = first_line(c.out);
    double t = 0;
    int rc;
    if (slurm_no_end(v)) {
        note(x->out, "squeue: job %s has no end time (%s)", id, v);
        rc = 0;
    } else if (parse_local_time(v, &t) < 0) {
        rc = pmc_errorf(x->err,
                        "squeue -h -j %.80s -o %%e printed '%.80s': not an end time "
                        "(YYYY-MM-DDTHH:MM:SS)",
                        id, v);
    } else {
        rc = found(x->out, t, "squeue (end time of job %.40s)", id);
    }
    cmd_free(&c);
    return rc;
}

static int slurm(const struct ctx *x)
{
    const char *v = getenv("SLURM_JOB_END_TIME");
    double t;
    if (is_set(v)) {
        if (parse_epoch(v, &t) < 0)
            return pmc_errorf(x->err,
                              "SLURM_JOB_END_TIME='%.80s': not a time in seconds since "
                              "the epoch",
                              v);
        return found(x->out, t, "SLURM_JOB_END_TIME");
    }
    const char *id = getenv("SLURM_JOB_ID");
    return is_set(id) ? slurm_squeue(x, id) : 0;
}

/* qstat -f: Walltime.Remaining (Torque), else the limit less the time used
 * (PBS Pro); 0 when it names neither. */
static int pbs_qstat(const struct ctx *x, const char *id, const char *text)
{
    char rem[64], lim[64], used[64];
    long long r, l, u = 0;
    if (qstat_attr(text, "Walltime.Remaining", rem, sizeof rem)) {
        if (parse_duration(rem, &r) < 0)
            return pmc_errorf(x->err,
                              "qstat -f %.80s: Walltime.Remaining = '%s': not a number of "
                              "seconds",
                              id, rem);
        return found(x->out, x->now + (double)(r > 0 ? r : 0), "qstat -f (Walltime.Remaining)");
    }
    if (!qstat_attr(text, "Resource_List.walltime", lim, sizeof lim))
        return 0;
    if (parse_duration(lim, &l) < 0 || l < 0)
        return pmc_errorf(x->err, "qstat -f %.80s: Resource_List.walltime = '%s': not HH:MM:SS", id,
                          lim);
    if (l == 0)
        return 0; /* no limit */
    bool has_used = qstat_attr(text, "resources_used.walltime", used, sizeof used) != NULL;
    if (has_used && (parse_duration(used, &u) < 0 || u < 0))
        return pmc_errorf(x->err, "qstat -f %.80s: resources_used.walltime = '%s': not HH:MM:SS",
                          id, used);
    return found(x->out, x->now + (double)(l > u ? l - u : 0),
                 has_used ? "qstat -f (Resource_List.walltime - resources_used.walltime)"
                          : "qstat -f (Resource_List.walltime, none used yet)");
}

static int pbs(const struct ctx *x)
{
    const char *id = getenv("PBS_JOBID");
    if (is_set(id)) {
        char *argv[] = {"qstat", "-f", (char *)id, NULL};
        struct cmd c;
        if (ask(x, argv, NULL, "qstat", &c)) {
            int rc = pbs_qstat(x, id, c.out);
            cmd_free(&c);
            if (rc)
                return rc;
        }
    }
    const char *w = getenv("PBS_WALLTIME");
    long long s;
    if (!is_set(w))
        return 0;
    if (parse_duration(w, &s) < 0 || s < 0)
        return pmc_errorf(x->err, "PBS_WALLTIME='%.80s': not a time limit in seconds", w);
    if (s == 0)
        return 0; /* no limit */
    return found(x->out, x->now + (double)s,
                 "PBS_WALLTIME from our start: later than the real end by the job's set-up time");
}

/* bjobs time_left: "H:MM S" or "H:MM:SS S", S one of L, E, X (or none). */
static int lsf_time_left(const struct ctx *x, const char *job, char *v)
{
    long long f[3];
    const char *end;
    if (strcmp(v, "-") == 0) {
        note(x->out, "bjobs: job %s has no run limit", job);
        return 0;
    }
    int n = parse_fields(v, f, 3, &end);
    end += strspn(end, " ");
    char kind = *end ? *end++ : 'L';
    bool ok = n >= 2 && f[1] < 60 && (n == 2 || f[2] < 60) && *end == '\0' &&
              (kind == 'L' || kind == 'E' || kind == 'X');
    if (!ok)
        return pmc_errorf(x->err,
                          "bjobs -noheader -o time_left %.80s printed '%.80s': not H:MM "
                          "followed by L, E or X",
                          job, v);
    if (kind == 'X') {
        note(x->out, "bjobs: job %s ran past its estimated run time (%s)", job, v);
        return 0;
    }
    long long secs = n == 2 ? (f[0] * 60 + f[1]) * 60 : (f[0] * 60 + f[1]) * 60 + f[2];
    return found(x->out, x->now + (double)secs, "LSF (bjobs time_left, %s)",
                 kind == 'L' ? "run limit" : "estimated run time, not enforced");
}

static int lsf(const struct ctx *x)
{
    const char *id = getenv("LSB_JOBID"), *index = getenv("LSB_JOBINDEX");
    if (!is_set(id))
        return 0;
    char job[128]; /* an element of a job array is ID[INDEX] */
    if (is_set(index) && strcmp(index, "0") != 0)
        snprintf(job, sizeof job, "%s[%s]", id, index);
    else
        snprintf(job, sizeof job, "%s", id);
    char *argv[] = {"bjobs", "-noheader", "-o", "time_left", job, NULL};
    struct cmd c;
    if (!ask(x, argv, NULL, "bjobs", &c))
        return 0;
    int rc = lsf_time_left(x, job, first_line(c.out));
    cmd_free(&c);
    return rc;
}

/* R (Flux RFC 20): execution.expiration, seconds since the epoch. */
static int flux_R(const struct ctx *x, const char *id, const char *text, const char *how)
{
    json_error_t jerr;
    json_t *r = json_loads(text, 0, &jerr);
    if (!r)
        return pmc_errorf(x->err, "%s %.80s R: not JSON (line %d: %s)", how, id, jerr.line,
                          jerr.text);
    json_t *exec = json_object_get(r, "execution");
    json_t *exp = json_object_get(exec, "expiration");
    double t = exp ? json_number_value(exp) : 0;
    int rc;
    if (!json_is_object(exec) || (exp && !json_is_number(exp)) || t < 0 || t > BATCHEND_MAX_EPOCH) {
        char *dump = json_dumps(exec ? exec : r, JSON_COMPACT);
        rc = pmc_errorf(x->err, "%s %.80s R: no valid execution.expiration in '%.80s'", how, id,
                        dump ? dump : "?");
        free(dump);
    } else if (t == 0) {
        note(x->out, "flux: job %s has no expiration", id);
        rc = 0;
    } else {
        rc = found(x->out, t, "%s (execution.expiration)", how);
    }
    json_decref(r);
    return rc;
}

static int flux(const struct ctx *x)
{
    const char *id = getenv("FLUX_JOB_ID");
    if (!is_set(id))
        return 0;
    char *argv[] = {"flux", "job", "info", (char *)id, "R", NULL};
    char *parent[] = {"flux", "--parent", "job", "info", (char *)id, "R", NULL};
    struct cmd c;
    const char *how = "flux job info";
    bool ok = ask(x, argv, NULL, how, &c);
    if (!ok && c.state != CMD_NOT_FOUND) {
        how = "flux --parent job info";
        ok = ask(x, parent, NULL, how, &c);
    }
    if (!ok)
        return 0;
    int rc = flux_R(x, id, c.out, how);
    cmd_free(&c);
    return rc;
}

/* The end found is before now: not used (batchend.h), out->ignored says
 * why.  Returns 0. */
static int ignore_past(struct batchend *out, double now)
{
    time_t end = (time_t)out->end_epoch;
    struct tm tm;
    char when[32] = "?";
    if (gmtime_r(&end, &tm))
        strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", &tm);
    snprintf(out->ignored, sizeof out->ignored, "%s: the job's end, %s, is %.0f s past",
             out->source, when, now - out->end_epoch);
    out->end_epoch = 0;
    out->source[0] = '\0';
    return 0;
}

int batchend_discover_timeout(double now_epoch, int timeout_ms, struct batchend *out,
                              struct pmc_error *err)
{
    static int (*const systems[])(const struct ctx *) = {slurm, pbs, lsf, flux};
    struct ctx x = {now_epoch, timeout_ms > 0 ? timeout_ms : BATCHEND_TIMEOUT_MS, out, err};
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof systems / sizeof *systems; i++) {
        int rc = systems[i](&x);
        if (rc < 0) {
            out->end_epoch = 0;
            out->source[0] = '\0';
        }
        if (rc > 0 && out->end_epoch < now_epoch)
            return ignore_past(out, now_epoch);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int batchend_discover(double now_epoch, struct batchend *out, struct pmc_error *err)
{
    return batchend_discover_timeout(now_epoch, BATCHEND_TIMEOUT_MS, out, err);
}
