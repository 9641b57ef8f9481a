/* master_forward.c - forwarded data (-f, -F): the destinations' descriptor
 * cache, the blocks of the result at hand, and the run's own files, which
 * no forward may write; see master_internal.h. */
#include <stdlib.h>
#include <sys/stat.h>

#include "engine/master/master_internal.h"
#include "io/grow.h"
#include "io/log.h"

void master__forward_own(struct master_forward *f, const struct stat *st, bool ok, const char *what)
{
    if (ok && pmc_grow((void **)&f->own, &f->own_cap, f->nown + 1, sizeof *f->own) == 0)
        f->own[f->nown++] = (struct own_file){st->st_dev, st->st_ino, what};
}

/* The run's own files that exist from the start: the DAG, the rescue log,
 * -o and -e (a node's output files join at its HELLO). */
static void forward_own_list(struct master *m)
{
    struct master_forward *f = &m->fwd;
    struct stat st;
    master__forward_own(f, &st, stat(m->cfg.dag_path, &st) == 0, "the DAG file");
    master__forward_own(f, &st, stat(m->rescue.path, &st) == 0, "the rescue log");
    master__forward_own(f, &st, m->out.fd[0] > 2 && fstat(m->out.fd[0], &st) == 0, "the -o file");
    master__forward_own(f, &st, m->out.fd[1] > 2 && fstat(m->out.fd[1], &st) == 0, "the -e file");
}

/* fdcache's guard (fdcache_set_guard()): a destination may not be one of
 * the run's own files (written there, forwarded data is lost or corrupts
 * them).  The first four are listed at the first destination opened, when
 * the rescue log is the writer's.  Not listed: a node's files a network
 * file system did not show at its HELLO, and leftovers of ranks this run
 * does not have. */
static const char *forward_guard(void *ctx, const struct stat *st)
{
    struct master *m = ctx;
    struct master_forward *f = &m->fwd;
    if (!f->own_listed)
        forward_own_list(m);
    f->own_listed = true;
    for (size_t k = 0; k < f->nown; k++)
        if (f->own[k].dev == st->st_dev && f->own[k].ino == st->st_ino)
            return f->own[k].what;
    return NULL;
}

int master__forward_init(struct master *m, struct pmc_error *err)
{
    m->fwd.cache = fdcache_create(m->cfg.maxfds, err);
    if (!m->fwd.cache)
        return -1;
    fdcache_set_guard(m->fwd.cache, forward_guard, m);
    return 0;
}

/* Cut the n blocks written of task t's result off their files again, the
 * last first (two may share a file), so that a retry does not append its
 * data twice. */
static void forward_undo(struct master *m, uint32_t t, size_t n)
{
    while (n-- > 0) {
        struct pmc_error err;
        const struct fwd_written *w = &m->fwd.written[n];
        if (w->start >= 0 && fdcache_truncate(m->fwd.cache, w->dest, w->start, &err) < 0)
            log_error("Task %s: its forwarded data stays in %s: %s", task_name(m, t), w->dest,
                      err.text);
    }
}

/* Each block whole, through the cache; a block that cannot be written
 * fails the task (PMC manual, I/O forwarding caveats). */
int master__forward_write(struct master *m, uint32_t t, const struct msg_result *r)
{
    const struct dag *d = m->dag;
    struct master_forward *f = &m->fwd;
    size_t pos = 0, n = 0;
    uint32_t idx, len;
    const uint8_t *data;
    int more;
    uint32_t first, nfwd = dag_task_forwards(d, t, &first);
    while ((more = msg_result_next_fwd(r, &pos, &idx, &data, &len)) == 1) {
        struct pmc_error err;
        if (idx >= nfwd) {
            log_error("Task %s: forwarded data for forward %u of %u", task_name(m, t), idx, nfwd);
            break;
        }
        const char *dest = d->arena + d->fwd[first + idx].dest;
        if (pmc_grow((void **)&f->written, &f->written_cap, n + 1, sizeof *f->written) < 0) {
            log_error("Task %s: out of memory for its forwarded data", task_name(m, t));
            break;
        }
        if (fdcache_write(f->cache, dest, data, len, &err) < 0) {
            log_error("%s", err.text);
            break;
        }
        f->written[n++] = (struct fwd_written){dest, fdcache_last_start(f->cache)};
    }
    if (more == 0)
        return 0;
    forward_undo(m, t, n);
    return -1;
}

int master__forward_close(struct master_forward *f)
{
    struct pmc_error err;
    if (fdcache_close_all(f->cache, &err) == 0)
        return 0;
    log_error("Forwarded output may be lost: %s", err.text);
    return -1;
}

void master__forward_free(struct master_forward *f)
{
    fdcache_destroy(f->cache);
    free(f->written);
    free(f->own);
    *f = (struct master_forward){0};
}
