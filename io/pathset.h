/* pathset.h - the files a run reads and writes, and whether two of them
 * are one file: the one place the rule "never destroy what the user points
 * at" compares paths (docs/reliability.md).
 *
 * Each path is resolved once: a symbolic link in its last component is
 * followed, then the file is named by its directory's realpath(3) plus its
 * last component and, if it exists, by device and inode.  Two paths name
 * one file when either matches.  Devices, FIFOs and sockets may be named
 * any number of times.  Adding n paths is O(n) with one stat(2) each;
 * pathset_check_name() makes no system call unless the last component is
 * one of the set's.  docs/modules.md "pathset".
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

/* Add path (non-empty) as label (both copied).  Only files of one share
 * tag != 0 may be one file.  0, or -1 with err "LABEL PATH and LABEL2 name
 * the same file PATH2" or ENOMEM; the set is unchanged on failure. */
int pathset_add(struct pathset *s, const char *path, const char *label, unsigned share,
                struct pmc_error *err);

/* Does path name one of the set's files?  Resolved only when its last
 * component matches one of the set's; a link under another name is not
 * caught (check the inode on open: fdcache_set_guard()).  0, or -1 with err
 * as pathset_add(); nothing is added. */
int pathset_check_name(struct pathset *s, const char *path, const char *label,
                       struct pmc_error *err);

/* The n files of the set, in the order added (i < pathset_count()). */
size_t pathset_count(const struct pathset *s);
const struct pathset_file *pathset_at(const struct pathset *s, size_t i);

/* Resolve path as pathset_add() does into a malloc'd *out (caller frees)
 * and *dir_len.  0, or -1 with ENOMEM. */
int pathset_resolve(const char *path, char **out, size_t *dir_len);

#ifdef __cplusplus
}
#endif
#endif
