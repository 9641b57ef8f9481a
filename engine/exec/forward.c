/* forward.c - pipes and files of I/O forwarding on the node; see forward.h.
 *
 * Invariant: for every entry, rfd/wfd are open descriptors or -1; data/len
 * hold everything read so far.  fwd_reset() returns the struct to "no
 * forwards" while keeping the arrays for the next task.
 */
#include "engine/exec/forward.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "io/dag.h"
#include "io/grow.h"
#include "io/log.h"

static int fwd_add(struct fwd_task *f, uint32_t kind, const char *src)
{
    size_t cap = f->cap;
    if (pmc_grow((void **)&f->e, &cap, f->n + 1, sizeof *f->e) < 0)
        return -1;
    f->cap = (uint32_t)cap;
    struct fwd_entry *e = &f->e[f->n];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    e->rfd = e->wfd = -1;
    e->src = strdup(src);
    if (!e->src)
        return -1;
    f->n++;
    return 0;
}

static int fwd_open_pipe(struct fwd_entry *e)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    e->rfd = p[0];
    e->wfd = p[1];
    return fcntl(e->rfd, F_SETFL, O_NONBLOCK);
}

int fwd_prepare(struct fwd_task *f, const struct msg_task *t, struct pmc_error *err)
{
    uint32_t pos = 0, kind;
    const char *src, *dest;
    int rc;
    while ((rc = msg_task_next_fwd(t, &pos, &kind, &src, &dest)) == 1) {
        if (fwd_add(f, kind, src) < 0)
            return pmc_errorf(err, "Task %s: out of memory for forwards", t->name);
        if (kind == DAG_FORWARD_PIPE) {
            if (fwd_open_pipe(&f->e[f->n - 1]) < 0)
                return pmc_errorf(err, "Task %s: cannot create a pipe: %m", t->name);
            f->npipes++;
        }
    }
    return rc < 0 ? pmc_errorf(err, "Task %s: malformed forwards", t->name) : 0;
}

bool fwd_names_file(const struct fwd_task *f, const char *src)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->e[i].kind == DAG_FORWARD_FILE && strcmp(f->e[i].src, src) == 0)
            return true;
    return false;
}

uint32_t fwd_pipe_entry(const struct fwd_task *f, uint32_t p)
{
    for (uint32_t k = 0; k < f->n; k++)
        if (f->e[k].kind == DAG_FORWARD_PIPE && p-- == 0)
            return k;
    return f->n;
}

void fwd_child_fds(const struct fwd_task *f, int *fds)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < f->n; i++)
        if (f->e[i].kind == DAG_FORWARD_PIPE)
            fds[k++] = f->e[i].wfd;
}

int fwd_child_env(struct fwd_task *f, char **envp)
{
    size_t need = 0;
    for (uint32_t i = 0; i < f->n; i++)
        need += strlen(f->e[i].src) + 16;
    if (need && pmc_grow((void **)&f->env, &f->env_cap, need, 1) < 0) {
        envp[0] = NULL;
        return -1;
    }
    char *p = f->env;
    uint32_t k = 0;
    for (uint32_t i = 0; i < f->n; i++) {
        if (f->e[i].kind != DAG_FORWARD_PIPE)
            continue;
        envp[k] = p;
        p += sprintf(p, "%s=%u", f->e[i].src, SPAWN_FIRST_FORWARD_FD + k) + 1;
        k++;
    }
    return 0;
}

void fwd_close_write_ends(struct fwd_task *f)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->e[i].wfd >= 0) {
            close(f->e[i].wfd);
            f->e[i].wfd = -1;
        }
}

int fwd_read_pipe(struct fwd_task *f, uint32_t k)
{
    return fwd_read_pipe_some(f, k, SIZE_MAX);
}

/* The most task f may forward (FWD_TASK_MAX unless a test set less). */
static size_t fwd_limit(const struct fwd_task *f)
{
    return f->limit ? f->limit : FWD_TASK_MAX;
}

/* Entry e's data is dropped: freed now, not held until the task ends. */
static void fwd_drop_data(struct fwd_task *f, struct fwd_entry *e)
{
    f->held -= e->len;
    free(e->data);
    e->data = NULL;
    e->len = e->cap = 0;
}

int fwd_read_pipe_some(struct fwd_task *f, uint32_t k, size_t most)
{
    struct fwd_entry *e = &f->e[k];
    if (f->over) { /* another pipe passed the limit: the task fails anyway */
        fwd_drop_data(f, e);
        e->lost = EFBIG;
        return -1;
    }
    for (size_t got = 0; got < most;) {
        /* held <= the limit; at it, one byte more read into probe shows
         * the task passed it (the buffer never grows past the limit) */
        size_t left = fwd_limit(f) - f->held, room = 1;
        uint8_t probe, *to = &probe;
        if (left > 0) {
            if (pmc_grow((void **)&e->data, &e->cap, e->len + (left < 65536 ? left : 65536), 1) <
                0) {
                e->lost = ENOMEM;
                return -1;
            }
            to = e->data + e->len;
            room = e->cap - e->len < left ? e->cap - e->len : left;
        }
        ssize_t r = read(e->rfd, to, room);
        if (r > 0 && left == 0) {
            fwd_drop_data(f, e);
            e->lost = EFBIG;
            f->over = true;
            return -1;
        }
        if (r > 0) {
            e->len += (size_t)r;
            f->held += (size_t)r;
            got += (size_t)r;
            continue;
        }
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0 && errno == EAGAIN)
            return 0;
        if (r == 0)
            return 1;
        e->lost = errno;
        return -1;
    }
    return 0;
}

void fwd_close_pipe(struct fwd_task *f, uint32_t k)
{
    if (f->e[k].rfd >= 0)
        close(f->e[k].rfd);
    f->e[k].rfd = -1;
}

/* The error of a task whose forwarded data passed its limit. */
static int fwd_too_much(const struct fwd_task *f, const char *task_name, struct pmc_error *err)
{
    return pmc_errorf(err,
                      "Task %s: forwarded more than %zu MB, the most one task may forward "
                      "(-f and -F together): its data is dropped and it fails",
                      task_name, fwd_limit(f) >> 20);
}

/* Read a -F source: a regular file (no symlink followed) of at most
 * FWD_FILE_MAX bytes, then delete it.  A file the task never wrote is no
 * error and forwards nothing (*missing; PMC's worker: "we assume that the
 * user wants to have some tasks exit successfully without producing any
 * output data"). */
static int fwd_read_file(struct fwd_task *f, struct fwd_entry *e, const char *task_name,
                         bool *missing, struct pmc_error *err)
{
    *missing = false;
    int fd = open(e->src, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
        *missing = true;
        return 0;
    }
    if (fd < 0)
        return errno == ELOOP ? pmc_errorf(err, "Task %s: %s is not a file", task_name, e->src)
                              : pmc_errorf(err, "Task %s: %s: %m", task_name, e->src);
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
        rc = pmc_errorf(err, "Task %s: %s is not a file", task_name, e->src);
    else if (st.st_size > FWD_FILE_MAX)
        rc = pmc_errorf(err, "Task %s: %s is larger than the 1 MB forwarding limit", task_name,
                        e->src);
    else if ((size_t)st.st_size > fwd_limit(f) - f->held)
        rc = fwd_too_much(f, task_name, err);
    else if (pmc_grow((void **)&e->data, &e->cap, (size_t)st.st_size + 1, 1) < 0)
        rc = pmc_errorf(err, "Task %s: out of memory reading %s", task_name, e->src);
    for (ssize_t r; rc == 0 && e->len < (size_t)st.st_size; e->len += (size_t)r) {
        r = read(fd, e->data + e->len, (size_t)st.st_size - e->len);
        if (r <= 0 && !(r < 0 && errno == EINTR))
            rc = pmc_errorf(err, "Task %s: reading %s: %m", task_name, e->src);
        if (r < 0)
            r = 0;
    }
    close(fd);
    f->held += e->len;
    if (rc == 0 && unlink(e->src) < 0)
        rc = pmc_errorf(err, "Task %s: cannot delete %s: %m", task_name, e->src);
    return rc;
}

/* Delete the -F sources from entry first on (a failed task's, or from the
 * one that could not be forwarded on; those read before were deleted as
 * they were read): PMC's worker deletes them "regardless of what
 * happens" (PMC manual, I/O forwarding caveats: the file is removed when
 * the task exits).  What cannot be deleted is logged at debug level, as
 * PMC does. */
static void fwd_delete_files(const struct fwd_task *f, uint32_t first, const char *task_name)
{
    for (uint32_t i = first; i < f->n; i++)
        if (f->e[i].kind == DAG_FORWARD_FILE && unlink(f->e[i].src) < 0 && errno != ENOENT)
            log_debug("Task %s: cannot delete the forwarded file %s: %s", task_name, f->e[i].src,
                      strerror(errno));
}

int fwd_finish(struct fwd_task *f, const char *task_name, int status, struct msgbuf *pack,
               struct pmc_error *err)
{
    for (uint32_t i = 0; i < f->n; i++)
        if (f->e[i].rfd >= 0) {
            fwd_read_pipe(f, i); /* what is there now; a lingering writer is not waited for */
            fwd_close_pipe(f, i);
        }
    int rc = 0;
    for (uint32_t i = 0; i < f->n && rc == 0; i++)
        if (f->e[i].lost == EFBIG) /* whatever the status: the pipe was closed under it */
            rc = fwd_too_much(f, task_name, err);
        else if (f->e[i].lost && status == 0)
            rc = pmc_errorf(err, "Task %s: forwarding pipe %s: %s", task_name, f->e[i].src,
                            strerror(f->e[i].lost));
    uint32_t i = 0; /* the -F files before i were read and deleted */
    for (; i < f->n && status == 0 && rc == 0; i++) {
        bool missing = false;
        if (f->e[i].kind == DAG_FORWARD_FILE)
            rc = fwd_read_file(f, &f->e[i], task_name, &missing, err);
        if (rc == 0 && !missing &&
            (f->e[i].len > UINT32_MAX ||
             msg_pack_fwd_data(pack, i, f->e[i].data, (uint32_t)f->e[i].len) < 0))
            rc = pmc_errorf(err, "Task %s: forwarded data too large", task_name);
        if (rc != 0)
            break; /* i: the one that could not be forwarded */
    }
    if (status != 0 || rc != 0) /* a failed task's data is dropped */
        fwd_delete_files(f, i, task_name);
    return rc;
}

void fwd_reset(struct fwd_task *f)
{
    for (uint32_t i = 0; i < f->n; i++) {
        struct fwd_entry *e = &f->e[i];
        if (e->rfd >= 0)
            close(e->rfd);
        if (e->wfd >= 0)
            close(e->wfd);
        free(e->src);
        free(e->data);
    }
    f->n = 0;
    f->npipes = 0;
    f->held = 0;
    f->over = false;
}

void fwd_free(struct fwd_task *f)
{
    fwd_reset(f);
    free(f->e);
    free(f->env);
    memset(f, 0, sizeof *f);
}
