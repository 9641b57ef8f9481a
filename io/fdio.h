/* fdio.h - small descriptor helpers shared by the writers in io/.
 *
 * Thread-safety: reentrant.
 */
#ifndef PMC_FDIO_H
#define PMC_FDIO_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Write all of p[0, n) to fd at its current position, retrying partial
 * writes and EINTR.  Returns 0, or the errno of the failure (EIO when
 * write(2) returns 0, so a broken descriptor cannot make it spin). */
int fdio_write_all(int fd, const void *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif
