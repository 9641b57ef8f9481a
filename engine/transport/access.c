/* access.c - the access file of a run that agents join: see access.h.
 *
 * The reader is strict: every key exactly once, nothing unknown, so a file
 * from another version or a hand-edit gone wrong is reported with its
 * line rather than half-understood.  Errors name the caller's file, never
 * this one.
 */
#include "engine/transport/access.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/fdio.h"
#include "io/log.h"

static const char z85_alphabet[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   ".-:+=^!/*?&<>()[]{}@%$#";

bool access_key_valid(const char *s)
{
    size_t n = 0;
    for (; s[n]; n++)
        if (n >= ACCESS_KEY_CHARS || !strchr(z85_alphabet, s[n]))
            return false;
    return n == ACCESS_KEY_CHARS;
}

static bool has_space(const char *s)
{
    return strpbrk(s, " \t\r\n\v\f") != NULL;
}

int access_check(const struct access_file *a, const char *what, struct pmc_error *err)
{
    if (!a->master_host[0] || has_space(a->master_host))
        return pmc_errorf(err, "%s: master host name is empty or holds white space", what);
    if (a->master_pid <= 0)
        return pmc_errorf(err, "%s: master pid must be positive", what);
    if (strncmp(a->endpoint, "tcp://", 6) != 0 || !a->endpoint[6] || has_space(a->endpoint))
        return pmc_errorf(err, "%s: endpoint must be tcp://HOST:PORT", what);
    if (!(a->heartbeat_s > 0) || !(a->timeout_s > a->heartbeat_s) || !isfinite(a->timeout_s))
        return pmc_errorf(err, "%s: need 0 < heartbeat < timeout (seconds)", what);
    const char *keys[] = {a->server_public, a->client_public, a->client_secret};
    const char *names[] = {"server-public", "client-public", "client-secret"};
    for (int i = 0; i < 3; i++)
        if (!access_key_valid(keys[i]))
            return pmc_errorf(err, "%s: %s is not a %d-character Z85 key", what, names[i],
                              ACCESS_KEY_CHARS);
    return 0;
}

/* ---- writing ---------------------------------------------------------- */

static int format(const struct access_file *a, char *buf, size_t size)
{
    return snprintf(buf, size,
                    "# pmc-hybrid access file (docs/join.md): whoever reads it can join the run\n"
                    "pmc-hybrid-access %d\n"
                    "master %s %ld\n"
                    "endpoint %s\n"
                    "heartbeat %.17g\n"
                    "timeout %.17g\n"
                    "server-public %s\n"
                    "client-public %s\n"
                    "client-secret %s\n",
                    ACCESS_FORMAT_VERSION, a->master_host, (long)a->master_pid, a->endpoint,
                    a->heartbeat_s, a->timeout_s, a->server_public, a->client_public,
                    a->client_secret);
}

/* The file at path, if any, is stale: it names this host and a pid that
 * is gone.  1 stale, 0 absent, -1 live or unknown (err set, errno EEXIST). */
static int existing_state(const char *path, struct pmc_error *err)
{
    struct stat st;
    if (lstat(path, &st) < 0)
        return errno == ENOENT ? 0 : pmc_errorf(err, "%s: %s", path, strerror(errno));
    struct access_file old;
    struct pmc_error ignored;
    char host[ACCESS_HOST_MAX] = "";
    gethostname(host, sizeof host - 1);
    if (S_ISREG(st.st_mode) && access_read(path, &old, &ignored) == 0 &&
        strcmp(old.master_host, host) == 0 && kill(old.master_pid, 0) < 0 && errno == ESRCH)
        return 1;
    errno = EEXIST;
    return pmc_errorf(err,
                      "%s: exists and may belong to a live run (a master on another host, a "
                      "live pid, or not an access file); remove it if that run is over",
                      path);
}

static int write_tmp(const char *tmp, const char *text, size_t len, struct pmc_error *err)
{
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return pmc_errorf(err, "%s: %s", tmp, strerror(errno));
    if (fchmod(fd, 0600) < 0 || fdio_write_all(fd, text, len) != 0 || fsync(fd) < 0) {
        int e = errno;
        close(fd);
        unlink(tmp);
        errno = e;
        return pmc_errorf(err, "%s: %s", tmp, strerror(e));
    }
    if (close(fd) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return pmc_errorf(err, "%s: %s", tmp, strerror(e));
    }
    return 0;
}

/* Put tmp at path: link(2) when nothing is there (EEXIST if a file came
 * meanwhile), rename(2) over a stale file.  tmp is gone afterwards. */
static int install(const char *tmp, const char *path, bool stale, struct pmc_error *err)
{
    int rc = stale ? rename(tmp, path) : link(tmp, path);
    int e = errno;
    unlink(tmp); /* after rename: already gone, ENOENT */
    if (rc < 0) {
        errno = e;
        return pmc_errorf(err, "%s: %s", path,
                          e == EEXIST ? "another master wrote it at the same time" : strerror(e));
    }
    char dir[PATH_MAX];
    fdio_dir_of(path, dir, sizeof dir);
    fdio_fsync_dir(dir); /* not durable yet is no error: the file is in place */
    return 0;
}

int access_write(const char *path, const struct access_file *a, struct pmc_error *err)
{
    if (access_check(a, path, err) < 0) {
        errno = EINVAL;
        return -1;
    }
    char text[2048];
    int len = format(a, text, sizeof text);
    if (len < 0 || (size_t)len >= sizeof text) {
        errno = EINVAL;
        return pmc_errorf(err, "%s: access file too long", path);
    }
    int state = existing_state(path, err);
    if (state < 0)
        return -1;
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return pmc_errorf(err, "%s: path too long", path);
    }
    if (write_tmp(tmp, text, (size_t)len, err) < 0)
        return -1;
    return install(tmp, path, state == 1, err);
}

/* ---- reading ---------------------------------------------------------- */

enum { K_VERSION, K_MASTER, K_ENDPOINT, K_HEARTBEAT, K_TIMEOUT, K_SPUB, K_CPUB, K_CSEC, K_N };
static const char *const key_names[K_N] = {
    "pmc-hybrid-access", "master",        "endpoint",      "heartbeat",
    "timeout",           "server-public", "client-public", "client-secret",
};

static int copy_word(char *dst, size_t size, const char *v)
{
    size_t n = strlen(v);
    if (n == 0 || n >= size || has_space(v))
        return -1;
    memcpy(dst, v, n + 1);
    return 0;
}

static int parse_seconds(const char *v, double *out)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(d) || d <= 0)
        return -1;
    *out = d;
    return 0;
}

static int parse_master(const char *v, struct access_file *a)
{
    const char *sp = strchr(v, ' ');
    if (!sp || (size_t)(sp - v) >= sizeof a->master_host || sp == v)
        return -1;
    memcpy(a->master_host, v, (size_t)(sp - v));
    a->master_host[sp - v] = '\0';
    char *end;
    errno = 0;
    long pid = strtol(sp + 1, &end, 10);
    if (errno || end == sp + 1 || *end || pid <= 0 || pid > INT_MAX)
        return -1;
    a->master_pid = (pid_t)pid;
    return 0;
}

/* Apply one "key value" line; returns the key's index, or -1 with what is
 * wrong in *why. */
static int parse_line(char *line, struct access_file *a, const char **why)
{
    char *sp = strchr(line, ' ');
    if (!sp) {
        *why = "expected \"key value\"";
        return -1;
    }
    *sp = '\0';
    const char *v = sp + 1;
    int k = 0;
    while (k < K_N && strcmp(line, key_names[k]) != 0)
        k++;
    int bad = 0;
    switch (k) {
    case K_VERSION:
        bad = strcmp(v, "1") != 0;
        *why = "unsupported access file version (this pmc-hybrid reads version 1)";
        return bad ? -1 : k;
    case K_MASTER:
        bad = parse_master(v, a);
        *why = "master must be \"HOST PID\"";
        break;
    case K_ENDPOINT:
        bad = copy_word(a->endpoint, sizeof a->endpoint, v) || strncmp(v, "tcp://", 6) != 0;
        *why = "endpoint must be tcp://HOST:PORT";
        break;
    case K_HEARTBEAT:
    case K_TIMEOUT:
        bad = parse_seconds(v, k == K_HEARTBEAT ? &a->heartbeat_s : &a->timeout_s);
        *why = "not a positive number of seconds";
        break;
    case K_SPUB:
    case K_CPUB:
    case K_CSEC: {
        char *dst = k == K_SPUB   ? a->server_public
                    : k == K_CPUB ? a->client_public
                                  : a->client_secret;
        bad = copy_word(dst, ACCESS_KEY_CHARS + 1, v) || !access_key_valid(dst);
        *why = "not a 40-character Z85 key";
        break;
    }
    default:
        *why = "unknown key";
        return -1;
    }
    return bad ? -1 : k;
}

static void warn_mode(const char *path, int fd)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return;
    if (st.st_mode & 077)
        log_warn("%s: mode %03o lets other users read the run's secret: chmod 600 it", path,
                 (unsigned)(st.st_mode & 0777));
    if (st.st_uid != geteuid())
        log_warn("%s: owned by uid %u, not by this user (uid %u)", path, (unsigned)st.st_uid,
                 (unsigned)geteuid());
}

static int parse_file(FILE *f, const char *path, struct access_file *a, struct pmc_error *err)
{
    char line[1024];
    bool seen[K_N] = {false};
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        n++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\n')
            line[--len] = '\0';
        else if (!feof(f))
            return pmc_errorf(err, "%s:%d: line too long", path, n);
        if (len == 0 || line[0] == '#')
            continue;
        const char *why = NULL;
        int k = parse_line(line, a, &why);
        if (k < 0)
            return pmc_errorf(err, "%s:%d: %s", path, n, why);
        if (seen[k])
            return pmc_errorf(err, "%s:%d: %s given twice", path, n, key_names[k]);
        if (k != K_VERSION && !seen[K_VERSION])
            return pmc_errorf(err, "%s:%d: not an access file (no \"pmc-hybrid-access 1\" first)",
                              path, n);
        seen[k] = true;
    }
    if (ferror(f))
        return pmc_errorf(err, "%s: %s", path, strerror(errno));
    for (int k = 0; k < K_N; k++)
        if (!seen[k])
            return pmc_errorf(err, "%s: %s missing%s", path, key_names[k],
                              n == 0 ? " (empty file)" : "");
    if (!(a->timeout_s > a->heartbeat_s))
        return pmc_errorf(err, "%s: timeout must be longer than heartbeat", path);
    return 0;
}

int access_read(const char *path, struct access_file *a, struct pmc_error *err)
{
    memset(a, 0, sizeof *a);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        pmc_errorf(err, "%s: %s%s", path, strerror(e),
                   e == ENOENT ? " (is a master running with --listen on it?)" : "");
        errno = e;
        return -1;
    }
    warn_mode(path, fd);
    FILE *f = fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        errno = e;
        return pmc_errorf(err, "%s: %s", path, strerror(e));
    }
    int rc = parse_file(f, path, a, err);
    int e = ferror(f) ? errno : EINVAL; /* a read error, or a malformed file */
    fclose(f);
    if (rc < 0)
        errno = e;
    return rc;
}

int access_remove(const char *path, const struct access_file *a)
{
    struct access_file cur;
    if (access_read(path, &cur, NULL) < 0)
        return errno == ENOENT ? 0 : -1;
    if (strcmp(cur.master_host, a->master_host) != 0 || cur.master_pid != a->master_pid ||
        strcmp(cur.endpoint, a->endpoint) != 0)
        return 0;
    if (unlink(path) < 0)
        return errno == ENOENT ? 0 : -1;
    return 1;
}
