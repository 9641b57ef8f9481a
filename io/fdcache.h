/* fdcache.h - the master's cache of open destination files for I/O
 * forwarding (PMC manual "I/O Forwarding", --maxfds; PMC's FDCache).
 *
 * Only the master appends forwarded data, so blocks of different tasks
 * never interleave; a block is written whole, back to back under O_APPEND
 * (another process appending at once could split it, as in PMC).
 * Destinations are opened O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, 0644 less
 * the umask, never truncated, parent directories made as mkdir -p.  At most
 * maxfds are open; one more closes the least recently written.  Nothing is
 * fsynced.  A destination renamed while open keeps receiving data.
 *
 * Thread-safety: none; the master's scheduler thread owns the cache.
 */
#ifndef PMC_FDCACHE_H
#define PMC_FDCACHE_H

#include <stddef.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FDCACHE_NOFILE_MAX 4096   /* the automatic maxfds is at most this */
#define FDCACHE_NOFILE_RESERVE 64 /* descriptors left for everything else */

struct fdcache;

/* An empty cache; maxfds 0: automatic (fdcache__auto_maxfds()).  NULL with
 * err "--maxfds N is more than the open files limit L" or ENOMEM. */
struct fdcache *fdcache_create(uint32_t maxfds, struct pmc_error *err);

/* Tests: maxfds for a RLIMIT_NOFILE soft limit: soft - 64 in [1, 4096]. */
uint32_t fdcache__auto_maxfds(uint64_t soft_limit);

/* Append data[0, len) to path, opening (creating) it if needed; len 0 only
 * creates.  No allocation once open.  0, or -1 with errno and err "PATH:
 * REASON" or "PATH: cannot create directory DIR: REASON".  A failed write
 * cuts a regular file back to its size before the block (read with lseek,
 * not cached) and closes it; if that fails too err says so. */
int fdcache_write(struct fdcache *c, const char *path, const void *data, size_t len,
                  struct pmc_error *err);

/* Called once per open with the file's fstat: NULL accepts, "WHAT" refuses
 * (err "PATH is WHAT: forwarded data may not go there"). */
struct stat;
typedef const char *(*fdcache_guard_fn)(void *ctx, const struct stat *st);
void fdcache_set_guard(struct fdcache *c, fdcache_guard_fn fn, void *ctx);

/* Offset where the last written block began (-1: not a regular file). */
int64_t fdcache_last_start(const struct fdcache *c);

/* Cut path back to size (fdcache_last_start()), to undo a failed task's
 * blocks; a missing or irregular file is left.  0, or -1 with err. */
int fdcache_truncate(struct fdcache *c, const char *path, int64_t size, struct pmc_error *err);

/* Close every file; the cache stays usable.  0, or -1 with err for the
 * first close(2) that failed since the last call (data may be lost: the
 * run must not succeed). */
int fdcache_close_all(struct fdcache *c, struct pmc_error *err);

/* Close (errors ignored) and free.  NULL is a no-op. */
void fdcache_destroy(struct fdcache *c);

/* Lookups that found the file open / had to open it (failures count). */
uint64_t fdcache_hits(const struct fdcache *c);
uint64_t fdcache_misses(const struct fdcache *c);

/* hits / (hits + misses), 1.0 before the first write (as PMC). */
double fdcache_hitrate(const struct fdcache *c);

uint32_t fdcache_maxfds(const struct fdcache *c); /* the effective bound */
uint32_t fdcache_open_count(const struct fdcache *c);

#ifdef __cplusplus
}
#endif
#endif
