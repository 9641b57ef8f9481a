/* fdcache.h - the master's cache of open destination files for I/O
 * forwarding (PMC manual "I/O Forwarding", --maxfds; COMPAT.md "Other
 * files"; PMC's FDCache in fdcache.cpp).
 *
 * Forwarded data (a task's -f pipe or -F file, sent to the master after the
 * task succeeded) is appended to its destination by the master alone, so
 * blocks from different tasks never interleave.  Destinations are opened
 * O_WRONLY|O_APPEND|O_CREAT|O_CLOEXEC, mode 0644 (minus the umask), never
 * truncated; missing parent directories are created (mode 0777 minus the
 * umask, like mkdir -p and PMC's mkdirs).  At most maxfds files are open at a
 * time; opening one more first closes the least recently written one.
 *
 * A block is written whole: write(2) is repeated over partial writes and
 * EINTR, and with O_APPEND and one writer (this cache, one thread) the
 * pieces land back to back at the end of the file, so a block is one
 * contiguous range.  Another process appending to the same file at the same
 * time could still split it; PMC has the same limit.  Nothing is fsynced.
 * A destination deleted or renamed while it is open keeps receiving data
 * through the open descriptor (as in PMC).
 *
 * Thread-safety: not thread-safe.  The cache belongs to the master's
 * scheduler thread, which creates, writes, closes and destroys it.
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

/* Create an empty cache (nothing is opened).  maxfds 0 means automatic
 * (PMC's rule, see fdcache__auto_maxfds()).  An explicit maxfds must not be
 * more than the RLIMIT_NOFILE soft limit: NULL with err "--maxfds N is more
 * than the open files limit L".  NULL with err "Out of memory" too. */
struct fdcache *fdcache_create(uint32_t maxfds, struct pmc_error *err);

/* The automatic maxfds for a RLIMIT_NOFILE soft limit (UINT64_MAX: no
 * limit): soft - 64, but at least 1 and at most 4096; 4096 without a limit.
 * Internal, exposed for the tests. */
uint32_t fdcache__auto_maxfds(uint64_t soft_limit);

/* Append data[0, len) to path, opening it if it is not open (creating the
 * file and its missing parent directories).  len 0 creates the file and
 * writes nothing.  Once path's entry exists, a write costs one hash lookup
 * and the write(2) calls; nothing is allocated.  Returns 0, or -1 with
 * errno and err "PATH: <strerror>" ("PATH: Is a directory",
 * "PATH: Not a directory", "PATH: No space left on device"; a parent that
 * cannot be created: "PATH: cannot create directory DIR: <strerror>").
 * After a failed write(2) a regular file is cut back to its size before the
 * block (ftruncate(2); no part of the block stays, as none of a failed
 * task's data may), and the file is closed so the next block reopens it;
 * when that cut fails too, err says so: "PATH: <strerror> (and the part of
 * the block written could not be cut off: <strerror>)".  The size before
 * the block is read from the file (lseek(2), one call a block), not kept
 * here: the master is the only writer of its destinations that the
 * engine knows of, but a file some task or user appends to as well would
 * make a kept size stale, and the cut would take their data. */
int fdcache_write(struct fdcache *c, const char *path, const void *data, size_t len,
                  struct pmc_error *err);

/* A check of every file the cache opens, given its fstat(2): NULL to
 * accept it, or what the file is ("the rescue log") to refuse it (the
 * write then fails with err "PATH is WHAT: forwarded data may not go
 * there").  Called on the caller's thread, at most once per open. */
struct stat;
typedef const char *(*fdcache_guard_fn)(void *ctx, const struct stat *st);
void fdcache_set_guard(struct fdcache *c, fdcache_guard_fn fn, void *ctx);

/* Where the last block that fdcache_write() wrote began in its file (its
 * size before the block), or -1 when that file is not a regular one (a
 * FIFO, a device): what fdcache_truncate() takes to undo the block. */
int64_t fdcache_last_start(const struct fdcache *c);

/* Cut path back to size bytes (from fdcache_last_start()): the undoing of
 * blocks of a task whose later block failed, so that its retry does not
 * append them twice.  A path no longer there is left so (nothing to undo);
 * one that is not a regular file is not cut.  0, or -1 with err
 * "PATH: <strerror>". */
int fdcache_truncate(struct fdcache *c, const char *path, int64_t size, struct pmc_error *err);

/* Close every open file; the cache stays usable (and keeps its counters).
 * 0, or -1 with err "PATH: <strerror>" for the first close(2) that failed
 * since the last call, this one's or an earlier one's (a file closed to make
 * room for another, or after a failed write); all are closed anyway.  A
 * failed close may mean that blocks written before were lost (a network
 * file system's write-back): the run must not report success. */
int fdcache_close_all(struct fdcache *c, struct pmc_error *err);

/* Close everything (errors ignored: call fdcache_close_all() first to see
 * them) and free.  NULL is a no-op. */
void fdcache_destroy(struct fdcache *c);

/* Lookups that found the file open / had to open it.  A write that fails
 * still counts. */
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
