/* error.h - the one error convention of pmc-hybrid.
 *
 * Functions that can fail return 0 on success and -1 on failure, and, when
 * the caller passes a struct pmc_error, fill it with one line of text meant
 * for the user ("wf.dag:12: EDGE names unknown task B").  A failed call has
 * no other side effect.  Libraries never exit(); only engine/main.c does.
 *
 * Thread-safety: a struct pmc_error belongs to the caller; the functions
 * here are reentrant.
 */
#ifndef PMC_ERROR_H
#define PMC_ERROR_H

#include <stdarg.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One user-facing message, NUL-terminated, without a trailing newline. */
struct pmc_error {
    char text[512];
};

/* Format a message into err (which may be NULL: then nothing is written).
 * Always returns -1, so callers can write `return pmc_errorf(err, ...)`.
 * errno is preserved. */
int pmc_errorf(struct pmc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The same with a va_list, for helpers that add their own context (the
 * file and line, the message item): err may be NULL; the text is truncated
 * to sizeof err->text - 1 bytes; ap is consumed as by vsnprintf (va_end is
 * the caller's).  Always returns -1; errno is preserved. */
int pmc_verrorf(struct pmc_error *err, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

#ifdef __cplusplus
}
#endif
#endif
