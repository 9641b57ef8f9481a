/* daglock.h - keep two runs off one DAG (PMC manual, option -n/--nolock).
 *
 * An exclusive open-file-description lock (fcntl F_OFD_SETLK, F_WRLCK) on
 * the whole DAG file, held until the descriptor is closed.  OFD locks belong
 * to the open file, not the process, so threads cannot drop them by
 * accident, and they work on NFS (Linux maps them to POSIX locks there).
 * The lock needs the file open for writing; a DAG the user cannot write
 * (or on a read-only file system) is run unlocked with a warning.
 *
 * Thread-safety: reentrant.
 */
#ifndef PMC_DAGLOCK_H
#define PMC_DAGLOCK_H

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Lock path.  Returns the descriptor holding the lock (close it to unlock),
 * -2 when the file could not be opened for writing (no lock; not an error:
 * the caller warns), or -1 with err "PATH is locked by another pmc-hybrid
 * run (-n skips the lock)", "PATH: <strerror>", or, for a path that is
 * not a regular file (a pipe, a FIFO, a device), dagfile_check_regular()'s
 * message; such a path is not opened. */
int daglock_acquire(const char *path, struct pmc_error *err);

#ifdef __cplusplus
}
#endif
#endif
