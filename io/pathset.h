/* pathset.h - the files a run reads and writes, and whether two of them
 * are one file: the one place the rule "never destroy what the user
 * points at" compares paths (docs/reliability.md).
 *
 * Each path added is resolved once: a symbolic link in its last component
 * is followed (up to PATHSET_MAX_LINKS links, relative targets taken from
 * the link's directory), then the file is named by its directory's
 * realpath(3) plus its last component, and, when it exists, by its device
 * and inode (stat(2)).  Two paths name the same file when either matches:
 * the inode catches hard links and any spelling of an existing file
 * (./x, d/../x, a symbolic link), the resolved name catches a file not
 * created yet (--status st.json beside -o ./st.json).  A path whose
 * directory does not exist is named by its directory as written, made
 * absolute (the run fails to create it anyway).  A device, FIFO or socket
 * (/dev/null, /dev/stdout) holds no content to lose: it may be named any
 * number of times.
 *
 * Lookups are hash tables (resolved names, inodes, last components):
 * adding n paths costs O(n) time and memory plus one realpath(3) per
 * distinct directory string in a row (the last one is remembered, so
 * the stdio files of many ranks beside one DAG cost one) and one stat(2)
 * per path.  pathset_check_name() tests a path against the set with no
 * system call at all unless its last component is one of the set's:
 * for the destinations of a DAG's forwards, which are many.
 *
 * Thread-safety: a set belongs to one thread; reentrant otherwise.
 */
#ifndef PMC_PATHSET_H
#define PMC_PATHSET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PATHSET_MAX_LINKS 40 /* symbolic links followed, as the kernel's ELOOP limit */

/* One file of the set, as pathset_at() shows it (read-only; lives as long
 * as the set). */
struct pathset_file {
    const char *path;     /* as given */
    const char *label;    /* what it is ("--status", "the rescue log (-r)") */
    const char *resolved; /* absolute: the directory's realpath + "/" + last component */
    size_t dir_len;       /* resolved[0, dir_len) is the directory ("/" for the root) */
    bool exists;          /* dev and ino are valid */
    bool special;         /* exists and is neither a regular file nor a directory */
    dev_t dev;
    ino_t ino;
    unsigned share; /* 0, or a tag: files of one tag may be one file */
};

struct pathset;

/* An empty set.  NULL with errno ENOMEM.  Free with pathset_destroy(). */
struct pathset *pathset_create(void);

/* NULL is a no-op. */
void pathset_destroy(struct pathset *s);

/* Add path (a non-empty string) as label (e.g. "--status"; both copied).
 * Files added with the same share tag other than 0 may be one file (-o
 * and -e, which then share one descriptor); every other pair may not.
 * Returns 0; -1 with err "LABEL PATH and LABEL2 name the same file PATH2"
 * (LABEL2 and PATH2 those of the earlier file), or "out of memory" (errno
 * ENOMEM); the set is unchanged after a failure. */
int pathset_add(struct pathset *s, const char *path, const char *label, unsigned share,
                struct pmc_error *err);

/* Does path name one of the set's files?  Only when its last component,
 * as written, is the last component of a file of the set (as given or as
 * resolved) is it resolved and compared as pathset_add() does; otherwise
 * it is accepted with no system call.  A path that reaches a file of the
 * set under another last component (a hard link, a symbolic link of
 * another name) is not caught here: the caller checks the inode of what
 * it opens (fdcache_set_guard()).  0, or -1 with err as pathset_add()'s,
 * label naming path; nothing is added. */
int pathset_check_name(struct pathset *s, const char *path, const char *label,
                       struct pmc_error *err);

/* The n files of the set, in the order added (i < pathset_count()). */
size_t pathset_count(const struct pathset *s);
const struct pathset_file *pathset_at(const struct pathset *s, size_t i);

/* Resolve path as pathset_add() does: *out gets a malloc'ed absolute name
 * (the caller frees it) and *dir_len the length of its directory part.
 * 0, or -1 with errno ENOMEM. */
int pathset_resolve(const char *path, char **out, size_t *dir_len);

#ifdef __cplusplus
}
#endif
#endif
