/* utf8.h - text that JSON can carry.  Task names, host names and paths are
 * bytes, but JSON (and jansson's json_string()) needs UTF-8.  utf8_lossy()
 * replaces each byte that starts no valid sequence with U+FFFD, as WHATWG's
 * decoder and Python's errors="replace" do.  Valid: RFC 3629 (no overlong
 * forms, no surrogates, nothing past U+10FFFF).
 *
 * Thread-safety: pure functions.
 */
#ifndef PMC_UTF8_H
#define PMC_UTF8_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The length in bytes of the valid UTF-8 sequence at s[0, n), 0 when the
 * bytes there start none (n >= 1). */
size_t utf8_sequence(const unsigned char *s, size_t n);

/* Is the NUL-terminated s valid UTF-8? */
bool utf8_valid(const char *s);

/* A malloc'd copy of the NUL-terminated s with every byte that starts no
 * valid sequence replaced by U+FFFD (EF BF BD); the caller frees it.  NULL
 * when out of memory. */
char *utf8_lossy(const char *s);

#ifdef __cplusplus
}
#endif
#endif
