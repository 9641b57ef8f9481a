/* taskio.c - capture files, single-writer output files and the merge; see
 * taskio.h. */
#include "io/taskio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io/fdio.h"

#define TASKIO_FULL_MARGIN (1024.0 * 1024.0) /* bytes: taskio_fs_full() */

static const char *taskio_tmpdir(void)
{
    const char *d = getenv("TMPDIR");
    return d && d[0] ? d : "/tmp";
}

const char *taskio_capture_dir_name(char *buf, size_t n)
{
    const char *d = getenv("TMPDIR");
    if (d && d[0])
        snprintf(buf, n, "TMPDIR=%s", d);
    else
        snprintf(buf, n, "/tmp (TMPDIR unset)");
    return buf;
}

int taskio_check_capture_dir(struct pmc_error *err)
{
    int fd = taskio_capture_open();
    if (fd >= 0) {
        close(fd); /* anonymous, or unlinked already: nothing is left */
        return 0;
    }
    int e = errno;
    char dir[4200], eb[128];
    pmc_errorf(err,
               "%s: %s (the tasks' output is captured there; set TMPDIR to a writable "
               "directory)",
               taskio_capture_dir_name(dir, sizeof dir), strerror_r(e, eb, sizeof eb));
    errno = e;
    return -1;
}

int taskio_capture_open(void)
{
    const char *dir = taskio_tmpdir();
    int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC | O_APPEND, 0600);
    if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
        return fd;
    char path[4096];
    snprintf(path, sizeof path, "%s/pmc-hybrid.XXXXXX", dir);
    fd = mkostemp(path, O_CLOEXEC | O_APPEND);
    if (fd >= 0)
        unlink(path);
    return fd;
}

off_t taskio_size(int fd)
{
    struct stat st;
    return fstat(fd, &st) < 0 ? -1 : st.st_size;
}

int taskio_capture_reset(int fd, off_t len)
{
    if (len == 0)
        return 0;
    return ftruncate(fd, 0);
}

/* Copy len bytes of src (from *soff) into dst at *doff with read/pwrite. */
static int taskio_copy_slow(int dst, int src, off_t *soff, off_t *doff, off_t len)
{
    char buf[65536];
    while (len > 0) {
        ssize_t r = pread(src, buf, len < (off_t)sizeof buf ? (size_t)len : sizeof buf, *soff);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) /* the capture shrank: the block would keep a hole */
            errno = EIO;
        if (r <= 0)
            return -1;
        if (fdio_pwrite_all(dst, buf, (size_t)r, doff) != 0) /* sets errno */
            return -1;
        *soff += r;
        len -= r;
    }
    return 0;
}

/* Copy len bytes of src from offset 0 into a regular file dst at *doff. */
static int taskio_copy_to_file(int dst, int src, off_t len, off_t *doff)
{
    off_t soff = 0;
    while (len > 0) {
        ssize_t n = copy_file_range(src, &soff, dst, doff, (size_t)len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EXDEV || errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP ||
                      errno == EBADF))
            return taskio_copy_slow(dst, src, &soff, doff, len);
        if (n == 0) /* the capture shrank: the block would keep a hole */
            errno = EIO;
        if (n <= 0)
            return -1;
        len -= n;
    }
    return 0;
}

void taskio_rank_path(char *buf, size_t n, const char *dag_path, int stream, int rank)
{
    snprintf(buf, n, "%s.%s.%d", dag_path, stream ? "err" : "out", rank);
}

int taskio_file_open(struct taskio_file *f, const char *path, struct pmc_error *err)
{
    f->path = NULL;
    f->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (f->fd < 0)
        return pmc_errorf(err, "%s: %m", path);
    f->end = lseek(f->fd, 0, SEEK_END);
    char *copy = strdup(path);
    if (f->end < 0 || !copy) {
        pmc_errorf(err, "%s: %m", path);
        close(f->fd);
        f->fd = -1;
        free(copy);
        return -1;
    }
    f->path = copy;
    return 0;
}

/* Reserve n bytes at the end of f for one block: their offset. */
static off_t taskio_file_reserve(struct taskio_file *f, off_t n)
{
    return __atomic_fetch_add(&f->end, n, __ATOMIC_RELAXED);
}

/* Write a block reserved at off: len bytes of src_fd, then trailer. */
static int taskio_file_write_at(struct taskio_file *f, off_t off, int src_fd, off_t len,
                                const char *trailer, size_t trailer_len)
{
    if (src_fd >= 0 && len > 0 && taskio_copy_to_file(f->fd, src_fd, len, &off) < 0)
        return -1;
    if (trailer_len > 0)
        return fdio_pwrite_all(f->fd, trailer, trailer_len, &off) == 0 ? 0 : -1;
    return 0;
}

int taskio_file_append(struct taskio_file *f, int src_fd, off_t len, const char *trailer,
                       size_t trailer_len)
{
    off_t n = (src_fd >= 0 && len > 0 ? len : 0) + (off_t)trailer_len;
    return taskio_file_write_at(f, taskio_file_reserve(f, n), src_fd, len, trailer, trailer_len);
}

/* Can `len` more bytes still be allocated in the file system of fd, a
 * file of `size` bytes that nobody writes any more?  Probed at its end with
 * our credentials, which are the task's, then the file is cut back to
 * `size`.  1 yes, 0 no (ENOSPC, EDQUOT), -1 cannot tell (a file system
 * without fallocate). */
static int taskio_can_allocate(int fd, off_t size, off_t len)
{
    if (fallocate(fd, 0, size, len) == 0) {
        if (ftruncate(fd, size) < 0) {
            /* zeros stay past `size`: no block copies them, and the
             * capture file's reset removes them */
        }
        return 1;
    }
    return errno == ENOSPC || errno == EDQUOT ? 0 : -1;
}

/* Is the file system of capture file fd (`size` bytes) full for the task
 * that wrote it?  Free space is read first (fstatvfs); only when what
 * unprivileged users may take (f_bavail) is under a margin (1 % of the
 * file system, at most TASKIO_FULL_MARGIN bytes) is room for one more
 * write allocated as a probe (taskio_can_allocate(): a page, or a block if
 * larger: a task's write that failed left less than that, since the kernel
 * writes what fits, a page at a time, before it fails one; on ext4 with
 * 1 KiB blocks a 1-block probe still succeeded there), which counts what
 * these credentials may use: root may use ext4's root reserve, which
 * f_bavail leaves out, and a nearly full file system may still take
 * writes.  Without fallocate, f_bavail == 0 decides.  false when it
 * cannot be asked, or has no blocks (tmpfs without a size, a pipe). */
static bool taskio_fs_full(int fd, off_t size)
{
    struct statvfs st;
    if (fstatvfs(fd, &st) < 0 || st.f_blocks == 0)
        return false;
    double margin = (double)st.f_blocks * (double)st.f_frsize / 100.0;
    if (margin > TASKIO_FULL_MARGIN)
        margin = TASKIO_FULL_MARGIN;
    if (st.f_bavail > 0 && (double)st.f_bavail * (double)st.f_frsize >= margin)
        return false;
    long page = sysconf(_SC_PAGESIZE);
    off_t probe = page > 0 ? page : 4096;
    if ((off_t)st.f_frsize > probe)
        probe = (off_t)st.f_frsize;
    int can = taskio_can_allocate(fd, size, probe);
    return can == 0 || (can < 0 && st.f_bavail == 0);
}

int taskio_write_block(const struct taskio_block *b, int status, double duration, off_t *out_len,
                       off_t *err_len)
{
    struct task_record r = b->record;
    r.status = status;
    r.duration = duration;
    char line[4096];
    int out_fd = b->task_out >= 0 ? b->task_out : b->out_fd;
    off_t out_size = taskio_size(out_fd);
    off_t err_size = b->task_out >= 0 ? 0 : taskio_size(b->err_fd);
    /* also when nothing was kept: every write may have failed */
    bool cut = b->task_out < 0 && out_size >= 0 && taskio_fs_full(b->out_fd, out_size);
    if (cut && status == 0)
        r.status = TASK_IO_FAILED_STATUS;
    size_t nl = taskio_needs_newline(out_fd, out_size) ? 1 : 0;
    line[0] = '\n';
    bool record = !b->failed_records_only || r.status != 0; /* --task-records failed */
    size_t len = nl + (record ? records_format_task(line + nl, sizeof line - nl, &r) : 0);
    if (len >= sizeof line)
        len = sizeof line - 1;
    *out_len = *err_len = -1; /* not measured */
    if (b->task_out >= 0)     /* the capture files were not used */
        return record && fdio_write_all(b->task_out, line, len) ? -1 : 0;
    *out_len = out_size;
    *err_len = err_size;
    /* stderr first: a record in the file vouches for both blocks */
    if (*out_len < 0 || *err_len < 0 ||
        taskio_file_append(b->err, b->err_fd, *err_len, NULL, 0) < 0 ||
        taskio_file_append(b->out, b->out_fd, *out_len, line, len) < 0)
        return -1;
    return cut ? TASKIO_CAPTURE_FULL : 0;
}

int taskio_close_per_task(int *out_fd, int *err_fd)
{
    int e = 0; /* EINTR: Linux closed it all the same */
    if (*out_fd >= 0 && close(*out_fd) < 0 && errno != EINTR)
        e = errno;
    if (*err_fd >= 0 && close(*err_fd) < 0 && errno != EINTR && e == 0)
        e = errno;
    *out_fd = *err_fd = -1;
    if (e)
        errno = e;
    return e ? -1 : 0;
}

int taskio_needs_newline(int fd, off_t len)
{
    char last;
    return len > 0 && pread(fd, &last, 1, len - 1) == 1 && last != '\n';
}

/* The message for a name with a '/' (see taskio_check_per_task_names()). */
#define TASKIO_SLASH_NAME                                                                          \
    "a '/' in a task name is not allowed with --per-task-stdio (its output files, "                \
    "NAME.out.NNN, must stay in the DAG's directory)"

int taskio_check_per_task_names(const struct dag *dag, const char *dag_path, struct pmc_error *err)
{
    for (dag_task_t t = 0; t < dag->ntasks; t++) {
        const char *name = dag_task_name(dag, t);
        if (!strchr(name, '/'))
            continue;
        errno = EINVAL;
        return pmc_errorf(err, "%s:%u: task %.200s: " TASKIO_SLASH_NAME, dag_path,
                          (unsigned)dag->line[t], name);
    }
    return 0;
}

int taskio_open_per_task(const char *dir, const char *name, int *out_fd, int *err_fd,
                         struct pmc_error *err)
{
    char out[4096], errp[4096];
    if (strchr(name, '/')) { /* never outside dir, whoever calls */
        errno = EINVAL;
        return pmc_errorf(err, "task %.200s: " TASKIO_SLASH_NAME, name);
    }
    for (unsigned n = 0; n < 1000000; n++) {
        snprintf(out, sizeof out, "%s/%s.out.%03u", dir, name, n);
        snprintf(errp, sizeof errp, "%s/%s.err.%03u", dir, name, n);
        /* read too: taskio_needs_newline() reads its last byte */
        *out_fd = open(out, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*out_fd < 0 && errno == EEXIST)
            continue;
        if (*out_fd < 0)
            return pmc_errorf(err, "%s: %m", out);
        *err_fd = open(errp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (*err_fd >= 0)
            return 0;
        int e = errno;
        close(*out_fd);
        unlink(out);
        if (e != EEXIST) {
            errno = e;
            return pmc_errorf(err, "%s: %m", errp);
        }
    }
    return pmc_errorf(err, "%s/%s: no unused .out.NNN number", dir, name);
}

int taskio_file_close(struct taskio_file *f)
{
    int rc = 0;
    if (f->path && f->fd >= 0) /* open iff it has a path: a zeroed struct has fd 0 */
        rc = close(f->fd);
    f->fd = -1;
    free(f->path);
    f->path = NULL;
    return rc;
}

/* Copy all of src to dst at dst's current position: sendfile handles files,
 * pipes and ttys; fall back to read/write. */
static int taskio_copy_stream(int dst, int src)
{
    for (;;) {
        ssize_t n = sendfile(dst, src, NULL, 1 << 30);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EINVAL || errno == ENOSYS))
            break;
        if (n <= 0)
            return (int)n;
    }
    char buf[65536];
    for (;;) {
        ssize_t r = read(src, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return (int)r;
        if (fdio_write_all(dst, buf, (size_t)r) != 0) /* sets errno */
            return -1;
    }
}

int taskio_merge(int dst_fd, const char *src_path, struct pmc_error *err)
{
    int src = open(src_path, O_RDONLY | O_CLOEXEC);
    if (src < 0)
        return errno == ENOENT ? 0 : pmc_errorf(err, "%s: %m", src_path);
    /* an empty file writes nothing: sendfile() to a pipe without reader
     * fails with EPIPE even then, and no output is lost (a closed stderr
     * must not fail a run whose tasks wrote nothing there) */
    int rc = taskio_size(src) == 0 ? 0 : taskio_copy_stream(dst_fd, src);
    int e = errno;
    close(src);
    if (rc < 0) {
        errno = e;
        return pmc_errorf(err, "merging %s: %m", src_path);
    }
    if (unlink(src_path) < 0)
        return pmc_errorf(err, "%s: %m", src_path);
    return 0;
}

/* The task name of a record line ("[cluster-task [id=ID, ]name=NAME, ..."):
 * *name and *len, or false for another line. */
static bool taskio_record_name(const char *line, size_t n, const char **name, size_t *len)
{
    static const char head[] = "[cluster-task ";
    if (n < sizeof head - 1 || memcmp(line, head, sizeof head - 1) != 0)
        return false;
    const char *p = memmem(line, n, "name=", 5);
    if (!p)
        return false;
    p += 5;
    const char *end = memmem(p, n - (size_t)(p - line), ", start=", 8);
    if (!end)
        return false;
    *name = p;
    *len = (size_t)(end - p);
    return true;
}

/* Write the block [b, b + n) to dst when its record passes keep. */
static int taskio_put_block(int dst_fd, const char *b, size_t n, const char *name, size_t len,
                            taskio_keep_fn keep, void *ctx)
{
    if (!keep(name, len, ctx))
        return 0;
    return fdio_write_all(dst_fd, b, n) != 0 ? -1 : 0;
}

int taskio_merge_blocks(int dst_fd, const char *src_path, taskio_keep_fn keep, void *ctx,
                        struct pmc_error *err)
{
    FILE *f = fopen(src_path, "re");
    if (!f)
        return errno == ENOENT ? 0 : pmc_errorf(err, "%s: %m", src_path);
    char *block = NULL, *line = NULL;
    size_t block_len = 0, block_cap = 0, line_cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &line_cap, f)) > 0) {
        if (block_len + (size_t)n > block_cap) {
            size_t cap = (block_len + (size_t)n) * 2;
            char *grown = realloc(block, cap);
            if (!grown) {
                rc = -1;
                break;
            }
            block = grown;
            block_cap = cap;
        }
        memcpy(block + block_len, line, (size_t)n);
        block_len += (size_t)n;
        const char *name;
        size_t len;
        if (taskio_record_name(line, (size_t)n, &name, &len)) {
            rc = taskio_put_block(dst_fd, block, block_len, name, len, keep, ctx);
            block_len = 0;
        }
    }
    int e = errno;
    bool failed = rc < 0 || ferror(f);
    fclose(f);
    free(block);
    free(line);
    if (failed) {
        errno = e ? e : EIO;
        return pmc_errorf(err, "merging %s: %m", src_path);
    }
    if (unlink(src_path) < 0)
        return pmc_errorf(err, "%s: %m", src_path);
    return 0;
}
