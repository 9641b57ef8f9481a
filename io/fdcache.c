/* fdcache.c - the master's LRU cache of open I/O forwarding destinations;
 * see fdcache.h.  Follows PMC's FDCache (fdcache.cpp): a map from path to
 * entry plus a most-recently-used list, evicting from the tail.
 *
 * Data structures.  Each open file has one struct fd_entry, linked into
 *   - a chained hash table keyed by the path (FNV-1a 64-bit hash, Fowler,
 *     Noll and Vo; power-of-two bucket count, doubled while the entries
 *     outnumber the buckets, so a lookup is O(1) expected), and
 *   - an intrusive circular doubly linked list through a sentinel, most
 *     recently written first, so touching and evicting are O(1).
 * Invariants: count == entries in the table == entries in the list == open
 * descriptors <= maxfds; every entry has an open fd; no two entries share a
 * path.
 *
 * Allocation.  An evicted entry is kept as the spare and reused, path buffer
 * included, for the file opened next, so in the steady state (cache full,
 * destinations rotating) nothing is allocated; a hit never allocates.
 * Parent directories are created only when open(2) says ENOENT, so an
 * existing tree costs no extra system call.
 *
 * Thread-safety: none; the master's scheduler thread owns the cache.
 */
#include "io/fdcache.h"
#include "io/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* O_NONBLOCK: a FIFO without a reader fails at once (ENXIO) instead of
 * blocking the master for ever, deaf to the stop signals; cleared after
 * the open, so that writes block as usual (open_dest()). */
#define OPEN_FLAGS (O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK)
#define FILE_MODE 0644
#define DIR_MODE 0777
#define BUCKETS_MIN 16u
#define NOFILE_UNKNOWN_MAX 64u /* getrlimit() failed: PMC's fallback */

struct lru_link {
    struct lru_link *prev, *next;
};

struct fd_entry {
    struct lru_link lru; /* first member: a link is its entry */
    struct fd_entry *hnext;
    uint64_t hash;
    size_t len, cap; /* strlen(path), size of the path buffer */
    char *path;
    int fd;
    bool regular; /* a regular file: a failed block is cut off (fdcache_write()) */
};

struct fdcache {
    uint32_t maxfds, count;
    struct lru_link lru; /* sentinel: lru.next most recent, lru.prev least */
    struct fd_entry **buckets;
    size_t nbuckets; /* a power of two */
    struct fd_entry *spare;
    uint64_t hits, misses;
    int64_t last_start;     /* fdcache_last_start() */
    fdcache_guard_fn guard; /* fdcache_set_guard() */
    void *guard_ctx;
    bool evict_failed;            /* a close(2) at an eviction failed: */
    struct pmc_error evict_error; /* its "PATH: <strerror>", for fdcache_close_all() */
};

/* ---- limits -------------------------------------------------------------- */

uint32_t fdcache__auto_maxfds(uint64_t soft_limit)
{
    if (soft_limit == UINT64_MAX)
        return FDCACHE_NOFILE_MAX;
    if (soft_limit <= FDCACHE_NOFILE_RESERVE)
        return 1;
    uint64_t n = soft_limit - FDCACHE_NOFILE_RESERVE;
    return n > FDCACHE_NOFILE_MAX ? FDCACHE_NOFILE_MAX : (uint32_t)n;
}

/* The effective bound, or 0 with err when an explicit one is too large. */
static uint32_t choose_maxfds(uint32_t maxfds, struct pmc_error *err)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
        return maxfds ? maxfds : NOFILE_UNKNOWN_MAX;
    uint64_t soft = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    if (maxfds == 0)
        return fdcache__auto_maxfds(soft);
    if (soft != UINT64_MAX && maxfds > soft) {
        pmc_errorf(err, "--maxfds %u is more than the open files limit %llu", maxfds,
                   (unsigned long long)soft);
        return 0;
    }
    return maxfds;
}

/* ---- create and destroy -------------------------------------------------- */

struct fdcache *fdcache_create(uint32_t maxfds, struct pmc_error *err)
{
    uint32_t bound = choose_maxfds(maxfds, err);
    if (bound == 0) {
        errno = EINVAL;
        return NULL;
    }
    struct fdcache *c = calloc(1, sizeof *c);
    struct fd_entry **b = calloc(BUCKETS_MIN, sizeof *b);
    if (!c || !b) {
        free(c);
        free(b);
        pmc_errorf(err, "Out of memory");
        return NULL;
    }
    c->maxfds = bound;
    c->lru.prev = c->lru.next = &c->lru;
    c->buckets = b;
    c->nbuckets = BUCKETS_MIN;
    return c;
}

static void entry_free(struct fd_entry *e)
{
    if (e) {
        free(e->path);
        free(e);
    }
}

int fdcache_close_all(struct fdcache *c, struct pmc_error *err)
{
    int rc = 0;
    if (c->evict_failed) {
        if (err)
            *err = c->evict_error;
        c->evict_failed = false;
        rc = -1;
    }
    struct lru_link *l = c->lru.next;
    while (l != &c->lru) {
        struct fd_entry *e = (struct fd_entry *)l;
        l = l->next;
        if (close(e->fd) < 0 && errno != EINTR && rc == 0)
            rc = pmc_errorf(err, "%s: %s", e->path, strerror(errno));
        entry_free(e);
    }
    c->lru.prev = c->lru.next = &c->lru;
    memset(c->buckets, 0, c->nbuckets * sizeof *c->buckets);
    c->count = 0;
    return rc;
}

void fdcache_destroy(struct fdcache *c)
{
    if (!c)
        return;
    fdcache_close_all(c, NULL);
    entry_free(c->spare);
    free(c->buckets);
    free(c);
}

/* ---- the hash table ------------------------------------------------------ */

/* FNV-1a, 64-bit (http://www.isthe.com/chongo/tech/comp/fnv/). */
static uint64_t hash_path(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static struct fd_entry **bucket_of(const struct fdcache *c, uint64_t hash)
{
    return &c->buckets[hash & (c->nbuckets - 1)];
}

static struct fd_entry *table_find(const struct fdcache *c, const char *path, size_t len,
                                   uint64_t hash)
{
    for (struct fd_entry *e = *bucket_of(c, hash); e; e = e->hnext)
        if (e->hash == hash && e->len == len && memcmp(e->path, path, len) == 0)
            return e;
    return NULL;
}

/* Double the buckets when the entries outnumber them.  Out of memory is not
 * an error: the chains just get longer. */
static void table_grow(struct fdcache *c)
{
    if (c->count < c->nbuckets)
        return;
    size_t n = c->nbuckets * 2;
    struct fd_entry **b = calloc(n, sizeof *b);
    if (!b)
        return;
    for (size_t i = 0; i < c->nbuckets; i++) {
        struct fd_entry *e = c->buckets[i];
        while (e) {
            struct fd_entry *next = e->hnext;
            e->hnext = b[e->hash & (n - 1)];
            b[e->hash & (n - 1)] = e;
            e = next;
        }
    }
    free(c->buckets);
    c->buckets = b;
    c->nbuckets = n;
}

static void table_insert(struct fdcache *c, struct fd_entry *e)
{
    struct fd_entry **b = bucket_of(c, e->hash);
    e->hnext = *b;
    *b = e;
}

static void table_remove(struct fdcache *c, struct fd_entry *e)
{
    struct fd_entry **p = bucket_of(c, e->hash);
    while (*p != e)
        p = &(*p)->hnext;
    *p = e->hnext;
}

/* ---- the LRU list -------------------------------------------------------- */

static void lru_unlink(struct lru_link *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
}

static void lru_push_front(struct fdcache *c, struct lru_link *l)
{
    l->prev = &c->lru;
    l->next = c->lru.next;
    c->lru.next->prev = l;
    c->lru.next = l;
}

static void lru_touch(struct fdcache *c, struct fd_entry *e)
{
    if (c->lru.next != &e->lru) {
        lru_unlink(&e->lru);
        lru_push_front(c, &e->lru);
    }
}

/* ---- entries ------------------------------------------------------------- */

/* Close e's file and take it out of the cache; its struct becomes the spare
 * (or is freed if there already is one).  errno is preserved.  The first
 * close that fails is kept for fdcache_close_all() (a network file system
 * reports a failed write-back there: blocks written before may be lost). */
static void entry_drop(struct fdcache *c, struct fd_entry *e)
{
    int saved = errno;
    if (close(e->fd) < 0 && errno != EINTR && !c->evict_failed) {
        pmc_errorf(&c->evict_error, "%s: %s", e->path, strerror(errno));
        c->evict_failed = true;
    }
    e->fd = -1;
    table_remove(c, e);
    lru_unlink(&e->lru);
    c->count--;
    if (c->spare)
        entry_free(e);
    else
        c->spare = e;
    errno = saved;
}

static void evict_lru(struct fdcache *c)
{
    entry_drop(c, (struct fd_entry *)c->lru.prev);
}

/* An entry holding a copy of path: the spare if there is one. */
static struct fd_entry *entry_get(struct fdcache *c, const char *path, size_t len)
{
    struct fd_entry *e = c->spare;
    c->spare = NULL;
    if (!e && !(e = calloc(1, sizeof *e)))
        return NULL;
    if (e->cap < len + 1) {
        size_t cap = (len + 64) & ~(size_t)63;
        char *p = realloc(e->path, cap);
        if (!p) {
            c->spare = e;
            return NULL;
        }
        e->path = p;
        e->cap = cap;
    }
    memcpy(e->path, path, len + 1);
    e->len = len;
    return e;
}

/* ---- opening ------------------------------------------------------------- */

/* mkdir -p dir (modified in place while working, restored).  On failure err
 * names path and the directory that could not be made. */
static int make_dirs(char *dir, const char *path, struct pmc_error *err)
{
    if (mkdir(dir, DIR_MODE) == 0 || errno == EEXIST)
        return 0;
    char *slash = strrchr(dir, '/');
    if (errno == ENOENT && slash && slash != dir) {
        *slash = '\0';
        int rc = make_dirs(dir, path, err);
        *slash = '/';
        if (rc < 0)
            return -1;
        if (mkdir(dir, DIR_MODE) == 0 || errno == EEXIST)
            return 0;
    }
    return pmc_errorf(err, "%s: cannot create directory %s: %s", path, dir, strerror(errno));
}

/* Create the directories above path.  0 when there are none to make (open
 * then reports the error). */
static int make_parents(const char *path, struct pmc_error *err)
{
    const char *slash = strrchr(path, '/');
    if (!slash || slash == path)
        return 0;
    char *dir = strndup(path, (size_t)(slash - path));
    if (!dir)
        return pmc_errorf(err, "%s: %s", path, strerror(errno));
    int rc = make_dirs(dir, path, err);
    free(dir);
    return rc;
}

/* open(2) path, creating missing parents; when the process runs out of
 * descriptors (an explicit maxfds close to the limit), close cached files
 * and try again.  The fd, or -1 with err. */
static int open_dest(struct fdcache *c, const char *path, struct pmc_error *err)
{
    bool made = false;
    for (;;) {
        int fd = open(path, OPEN_FLAGS, FILE_MODE);
        if (fd >= 0 && fcntl(fd, F_SETFL, O_APPEND) < 0) {
            pmc_errorf(err, "%s: %s", path, strerror(errno));
            close(fd);
            return -1;
        }
        if (fd >= 0)
            return fd;
        struct stat st;
        if (errno == ENXIO && stat(path, &st) == 0 && S_ISFIFO(st.st_mode))
            return pmc_errorf(err, "%s: a FIFO with no reader", path);
        if (errno == ENOENT && !made) {
            made = true;
            if (make_parents(path, err) < 0)
                return -1;
        } else if ((errno == EMFILE || errno == ENFILE) && c->count > 0) {
            evict_lru(c);
        } else if (errno != EINTR) {
            return pmc_errorf(err, "%s: %s", path, strerror(errno));
        }
    }
}

/* Entry e (from entry_get(), never inserted) is not needed: kept as the
 * spare, or freed. */
static void entry_unused(struct fdcache *c, struct fd_entry *e)
{
    if (c->spare)
        entry_free(e);
    else
        c->spare = e;
}

/* Open path into a new most-recent entry, first closing the least recently
 * used file if the cache is full.  NULL with err. */
static struct fd_entry *entry_open(struct fdcache *c, const char *path, size_t len, uint64_t hash,
                                   struct pmc_error *err)
{
    if (c->count >= c->maxfds)
        evict_lru(c);
    struct fd_entry *e = entry_get(c, path, len);
    if (!e) {
        pmc_errorf(err, "%s: %s", path, strerror(ENOMEM));
        errno = ENOMEM;
        return NULL;
    }
    e->fd = open_dest(c, path, err);
    if (e->fd < 0) {
        entry_unused(c, e);
        return NULL;
    }
    struct stat st;
    bool known = fstat(e->fd, &st) == 0;
    const char *what = known && c->guard ? c->guard(c->guard_ctx, &st) : NULL;
    if (what) {
        pmc_errorf(err, "%s is %s: forwarded data may not go there", path, what);
        close(e->fd);
        entry_unused(c, e);
        errno = EPERM;
        return NULL;
    }
    e->regular = known && S_ISREG(st.st_mode);
    e->hash = hash;
    table_insert(c, e);
    lru_push_front(c, &e->lru);
    c->count++;
    table_grow(c);
    return e;
}

/* ---- writing ------------------------------------------------------------- */

/* path's entry, opened if it is not open; NULL with err. */
static struct fd_entry *entry_for_path(struct fdcache *c, const char *path, struct pmc_error *err)
{
    size_t plen = strlen(path);
    uint64_t hash = hash_path(path, plen);
    struct fd_entry *e = table_find(c, path, plen, hash);
    if (e) {
        c->hits++;
        lru_touch(c, e);
        return e;
    }
    c->misses++;
    return entry_open(c, path, plen, hash, err);
}

int fdcache_write(struct fdcache *c, const char *path, const void *data, size_t len,
                  struct pmc_error *err)
{
    struct fd_entry *e = entry_for_path(c, path, err);
    if (!e)
        return -1;
    c->last_start = e->regular ? (int64_t)lseek(e->fd, 0, SEEK_END) : -1;
    int rc = fdio_write_all(e->fd, data, len);
    if (rc == 0)
        return 0;
    int cut = c->last_start >= 0 && ftruncate(e->fd, (off_t)c->last_start) < 0 ? errno : 0;
    entry_drop(c, e);
    if (cut)
        pmc_errorf(err, "%s: %s (and the part of the block written could not be cut off: %s)", path,
                   strerror(rc), strerror(cut));
    else
        pmc_errorf(err, "%s: %s", path, strerror(rc));
    errno = rc;
    return -1;
}

void fdcache_set_guard(struct fdcache *c, fdcache_guard_fn fn, void *ctx)
{
    c->guard = fn;
    c->guard_ctx = ctx;
}

int64_t fdcache_last_start(const struct fdcache *c)
{
    return c->last_start;
}

int fdcache_truncate(struct fdcache *c, const char *path, int64_t size, struct pmc_error *err)
{
    size_t plen = strlen(path);
    struct fd_entry *e = table_find(c, path, plen, hash_path(path, plen));
    /* closed since (a small cache): opened again, never made (O_CREAT would
     * make a file of size zeros where someone deleted it) */
    int fd = e ? e->fd : open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    struct stat st;
    int rc = 0;
    if (fd < 0 && errno != ENOENT)
        rc = pmc_errorf(err, "%s: %s", path, strerror(errno));
    else if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
             ftruncate(fd, (off_t)size) < 0)
        rc = pmc_errorf(err, "%s: %s", path, strerror(errno));
    if (!e && fd >= 0)
        close(fd);
    return rc;
}

/* ---- statistics ---------------------------------------------------------- */

uint64_t fdcache_hits(const struct fdcache *c)
{
    return c->hits;
}

uint64_t fdcache_misses(const struct fdcache *c)
{
    return c->misses;
}

double fdcache_hitrate(const struct fdcache *c)
{
    uint64_t total = c->hits + c->misses;
    return total ? (double)c->hits / (double)total : 1.0;
}

uint32_t fdcache_maxfds(const struct fdcache *c)
{
    return c->maxfds;
}

uint32_t fdcache_open_count(const struct fdcache *c)
{
    return c->count;
}
