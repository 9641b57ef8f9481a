/* daglock.h - keep two runs off one DAG (PMC manual, option -n/--nolock)
 * and off one rescue log, whatever DAG names it with -r.
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

#include <stdbool.h>

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

/* The same lock on a file the run writes and replaces (the rescue log,
 * whatever its name: two runs of two DAGs given one -r would both write
 * it), named `what` in the message: "the rescue log r.rescue is locked by
 * another pmc-hybrid run (-n skips the lock)".  A missing file is created
 * empty (O_EXCL, mode 0666 less the umask) and *created set, so that the
 * lock exists before the file's first version; the caller removes it if
 * the run ends before writing it.  Whoever replaces the file must lock
 * the new one before its rename (rescue.h does), or a run that opens the
 * new one finds it free.  Returns the descriptor, -2 when the file cannot
 * be opened for writing or is not a regular file (no lock: the caller's
 * own checks of the path report why), or -1 with err. */
int daglock_acquire_output(const char *path, const char *what, bool *created,
                           struct pmc_error *err);

/* Lock the file open at fd (for writing) as the above do, ignoring
 * failure: for a new file that replaces a locked one (rescue.c).
 * Returns 0, or -1 with errno. */
int daglock_hold(int fd);

#ifdef __cplusplus
}
#endif
#endif
