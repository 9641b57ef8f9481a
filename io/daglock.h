/* daglock.h - keep two runs off one DAG (PMC option -n/--nolock) and off
 * one rescue log.  An exclusive OFD lock (F_OFD_SETLK, F_WRLCK) on the
 * whole file until its descriptor is closed: it belongs to the open file,
 * not a thread, and works on NFS.  It needs the file open for writing; an
 * unwritable DAG runs unlocked with a warning.
 *
 * Thread-safety: reentrant.
 */
#ifndef PMC_DAGLOCK_H
#define PMC_DAGLOCK_H

#include <stdbool.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lock path.  The descriptor holding the lock (close to unlock); -2 when it
 * cannot be opened for writing (the caller warns); -1 with err "PATH is
 * locked by another pmc-hybrid run (-n skips the lock)", "PATH: REASON", or
 * dagfile_check_regular()'s (not opened). */
int daglock_acquire(const char *path, struct pmc_error *err);

/* The same on a file the run replaces (the rescue log), named `what` in
 * err.  A missing file is created empty (O_EXCL, 0666 & ~umask) with
 * *created set; the caller removes it if never written.  Who replaces the
 * file locks the new one before its rename.  The descriptor, -2 (not
 * writable or not regular: no lock), or -1 with err. */
int daglock_acquire_output(const char *path, const char *what, bool *created,
                           struct pmc_error *err);

/* Lock the file open for writing at fd (a replacement of a locked file).
 * 0, or -1 with errno. */
int daglock_hold(int fd);

#ifdef __cplusplus
}
#endif
#endif
