/* access.h - the access file of a run that agents join (docs/join.md).
 *
 * A master started with --listen ACCESS writes this file once it can take
 * agents; an agent started with --join ACCESS reads it to find and enter
 * the run (engine/transport/join.h), as HyperQueue's access file does.  It
 * is a short text file, one "key value" line each, '#' lines ignored:
 *
 *   pmc-hybrid-access 1                   the format and its version, first
 *   master HOST PID                       the master's host name and pid
 *   endpoint tcp://HOST:PORT              where agents connect (ZeroMQ)
 *   heartbeat SECONDS                     each side's heartbeat interval
 *   timeout SECONDS                       silence after which a side is lost
 *   server-public KEY                     the master's CURVE public key
 *   client-public KEY                     the agents' CURVE key pair: every
 *   client-secret KEY                     agent of the run shares it
 *
 * KEYs are CURVE25519 keys in Z85 (40 characters, ZeroMQ's zmq_z85_encode).
 * The secret that lets an agent in is the client key pair: the master's
 * ZAP handler admits only connections that proved (CURVE's vouch) they
 * hold the secret key of client-public.  The master's own secret key is
 * never written: it lives in the master's memory only, so a reader of the
 * file can join the run but cannot pose as its master.  Whoever can read
 * the file can join the run: it is written mode 0600 and readers warn
 * when it is readable by others or owned by another user.
 *
 * Writing is atomic: a temporary file beside it (created 0600 whatever the
 * umask), fsync, then link(2) to the name (which fails when a file is
 * there, so two masters never both win) or rename(2) over a stale one,
 * then the directory is fsynced.  An existing file is stale, and replaced,
 * only when it names this host and a pid that no longer exists; one of a
 * live master, or of another host (whose pid cannot be checked from here),
 * is refused with EEXIST: remove it by hand when that run is over.
 *
 * Thread-safety: reentrant; struct access_file belongs to the caller.
 */
#ifndef PMC_ACCESS_H
#define PMC_ACCESS_H

#include <stdbool.h>
#include <sys/types.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ACCESS_KEY_CHARS 40     /* a Z85-encoded CURVE key, without the NUL */
#define ACCESS_ENDPOINT_MAX 256 /* bytes of an endpoint, NUL included */
#define ACCESS_HOST_MAX 256     /* bytes of a host name, NUL included */
#define ACCESS_FORMAT_VERSION 1

/* What the file says.  Every field is set by access_read(); access_write()
 * writes every field. */
struct access_file {
    char master_host[ACCESS_HOST_MAX];
    pid_t master_pid;
    char endpoint[ACCESS_ENDPOINT_MAX]; /* "tcp://HOST:PORT" */
    double heartbeat_s;                 /* > 0 */
    double timeout_s;                   /* > heartbeat_s */
    char server_public[ACCESS_KEY_CHARS + 1];
    char client_public[ACCESS_KEY_CHARS + 1];
    char client_secret[ACCESS_KEY_CHARS + 1];
};

/* Is s a Z85-encoded key: exactly ACCESS_KEY_CHARS characters of Z85's
 * alphabet, then the NUL?  Pure. */
bool access_key_valid(const char *s);

/* Check a's fields as access_read() does (keys valid, endpoint starting
 * "tcp://" and fitting, no white space in endpoint or host, pid > 0,
 * 0 < heartbeat_s < timeout_s).  Returns 0, or -1 with err naming the
 * first bad field (prefixed by what, e.g. the path). */
int access_check(const struct access_file *a, const char *what, struct pmc_error *err);

/* Write a to path, atomically, mode 0600, as the banner says.  Returns 0,
 * or -1 with err ("ACCESS: held by a live run (master HOST pid PID)...",
 * "ACCESS.tmp.PID: Permission denied") and errno: EEXIST when a file is
 * there that is not stale, EINVAL when a fails access_check(), or the
 * errno of the failed call.  On failure nothing is left at path that was
 * not there before, and the temporary file is removed. */
int access_write(const char *path, const struct access_file *a, struct pmc_error *err);

/* Read path into *a.  Returns 0, or -1 with err naming the file and, for
 * a malformed file, the line ("ACCESS:4: timeout is not a number of
 * seconds"): ENOENT ("ACCESS: No such file or directory (is a master
 * running with --listen ACCESS?)"), EINVAL for a malformed file (unknown
 * or repeated key, missing key, bad value, wrong version), or the errno of
 * the failed call.  Logs a warning (io/log.h) when the file is readable or
 * writable by group or others, or owned by another user than the
 * effective one, and goes on.  *a is undefined on failure. */
int access_read(const char *path, struct access_file *a, struct pmc_error *err);

/* Remove path if it still names a's master (host, pid and endpoint): a
 * master ending its run removes its own file and leaves any other alone.
 * Returns 1 when removed, 0 when the file is absent or another's, -1 with
 * errno when it could not be read or unlinked. */
int access_remove(const char *path, const struct access_file *a);

#ifdef __cplusplus
}
#endif
#endif
