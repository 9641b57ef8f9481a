/* master_rescue.c - the rescue log: its path, its lock, the old log's done
 * set and the writer of the new one; see master_internal.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/master/master_internal.h"
#include "io/daglock.h"
#include "io/fdio.h"
#include "io/log.h"

int master__rescue_init(struct master_rescue *r, const struct master_config *cfg)
{
    r->lock_fd = -1;
    if (cfg->rescue_path) {
        r->path = strdup(cfg->rescue_path);
    } else {
        size_t n = strlen(cfg->dag_path);
        r->path = malloc(n + 8);
        if (r->path)
            snprintf(r->path, n + 8, "%s.rescue", cfg->dag_path);
    }
    return r->path ? 0 : -1;
}

int master__rescue_alloc(struct master_rescue *r, uint32_t ntasks, uint64_t ninstances)
{
    r->done_before = calloc(ntasks ? ntasks : 1, 1);
    if (ninstances)
        r->inst_done_before = calloc((ninstances + 63) / 64, sizeof *r->inst_done_before);
    return r->done_before && (r->inst_done_before || !ninstances) ? 0 : -1;
}

/* Hold the lock of the rescue log this run writes, whatever its name
 * (daglock_acquire_output(): created empty when missing). */
static int rescue_lock(struct master_rescue *r, const struct master_config *cfg,
                       struct pmc_error *err)
{
    if (cfg->nolock || cfg->null_executor)
        return 0;
    r->lock_fd = daglock_acquire_output(r->path, "the rescue log", &r->created, err);
    return r->lock_fd == -1 ? -1 : 0;
}

int master__rescue_load(struct master_rescue *r, const struct master_config *cfg,
                        const struct dag *d, struct pmc_error *err)
{
    if (!cfg->skip_rescue && fdio_not_regular(r->path)) /* a FIFO would block */
        return pmc_errorf(err, "%s: not a regular file (the rescue log is replaced at start)",
                          r->path);
    if (rescue_lock(r, cfg, err) < 0)
        return -1;
    struct stat st;
    if (r->lock_fd == -2 && stat(r->path, &st) == 0 && S_ISREG(st.st_mode))
        log_warn("Cannot open %s for writing: running without the rescue log's lock", r->path);
    if (!cfg->skip_rescue && rescue_read(r->path, d, r->done_before, r->inst_done_before,
                                         &r->ndone_before, NULL, err) < 0)
        return -1;
    return 0;
}

int master__rescue_start(struct master_rescue *r, const struct master_config *cfg,
                         const struct dag *d)
{
    struct pmc_error err;
    if (cfg->null_executor)
        return 0; /* nothing runs, so nothing may be recorded as done */
    r->writer = rescue_writer_open(r->path, d, r->done_before, r->inst_done_before, &err);
    if (!r->writer) {
        log_fatal("%s", err.text);
        return -1;
    }
    return 0;
}

const char *master__rescue_error(const struct master_rescue *r)
{
    return r->writer && rescue_writer_failed(r->writer) ? rescue_writer_error(r->writer) : NULL;
}

/* Keep the lock on the log now at the path through fd (from the writer or
 * rescue_replace()): the lock taken at start is on a file the writer's
 * rename unlinked.  fd -1 or a run without the lock: nothing kept. */
static void rescue_keep_lock(struct master_rescue *r, int fd)
{
    if (fd < 0)
        return;
    if (r->lock_fd < 0) {
        close(fd);
        return;
    }
    close(r->lock_fd);
    r->lock_fd = fd;
    r->created = false; /* the writer's file, not the empty one made to lock */
}

int master__rescue_end(struct master_rescue *r, bool *kept, bool *lost)
{
    *kept = true;
    *lost = false;
    if (!r->writer)
        return 0;
    struct rescue_writer_stats st;
    (void)rescue_writer_flush(r->writer); /* a failure stays: close() reports it */
    enum rescue_path where = rescue_writer_path(r->writer);
    *lost = where == RESCUE_PATH_LOST;
    *kept = where == RESCUE_PATH_KEPT;
    rescue_writer_get_stats(r->writer, &st); /* its work done, before it ends */
    r->writer_cpu_ns = st.cpu_ns;
    log_debug("Rescue log %s: %llu writes, %llu fdatasync calls", r->path,
              (unsigned long long)st.writes, (unsigned long long)st.syncs);
    int lock_fd = -1;
    int rc = rescue_writer_close_locked(r->writer, &lock_fd);
    rescue_keep_lock(r, lock_fd);
    r->writer = NULL;
    return rc < 0 ? -1 : 0;
}

int master__rescue_replace(struct master_rescue *r, const struct dag *d, const uint8_t *keep,
                           const uint64_t *inst_keep, struct pmc_error *err)
{
    int lock_fd = -1;
    int rc = rescue_replace(r->path, d, keep, inst_keep, &lock_fd, err);
    rescue_keep_lock(r, lock_fd);
    return rc;
}

/* A run that did not start leaves the rescue path as it was: the empty
 * log made for the lock goes unless the writer replaced it. */
void master__rescue_unlock(struct master_rescue *r)
{
    struct stat ours, now;
    if (r->lock_fd >= 0 && r->created && fstat(r->lock_fd, &ours) == 0 && ours.st_nlink > 0 &&
        ours.st_size == 0 && stat(r->path, &now) == 0 && fdio_same_file(&ours, &now))
        unlink(r->path);
    if (r->lock_fd >= 0)
        close(r->lock_fd);
    r->lock_fd = -1;
}

void master__rescue_free(struct master_rescue *r)
{
    rescue_writer_close(r->writer);
    r->writer = NULL;
    master__rescue_unlock(r); /* before the path is freed */
    free(r->path);
    free(r->done_before);
    free(r->inst_done_before);
    r->inst_done_before = NULL;
    r->path = NULL;
    r->done_before = NULL;
}
