/* scan.h - the white space of the line formats, and words split on it.
 *
 * The DAG file (record keywords, task names, EDGE names), the rescue log
 * ("DONE name") and the DAG tools split words on the same white space as
 * PMC: space, \t, \v, \f and \r (a CRLF file reads as an LF one).  The
 * newline is not white space here: it ends the line, and the callers find
 * it with memchr() before they scan.  No locale, no quoting (the DAG file's
 * quoting of arguments is in dagfile.c, on the same set).
 *
 * Every scan works on a byte range [s, e) that need not be NUL-terminated
 * and returns a pointer in [s, e].  Inline: these run once per byte of a
 * DAG file.
 *
 * Thread-safety: pure functions.
 */
#ifndef PMC_SCAN_H
#define PMC_SCAN_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

/* True for ' ', '\t', '\v', '\f', '\r'; false for '\n', '\0' and the rest. */
static inline bool scan_is_space(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r' && c != '\n');
}

/* The first byte of [s, e) that is not white space, or e. */
static inline const char *scan_skip_space(const char *s, const char *e)
{
    while (s < e && scan_is_space(*s))
        s++;
    return s;
}

/* The end of the word starting at s: the first white-space byte of [s, e),
 * or e. */
static inline const char *scan_word_end(const char *s, const char *e)
{
    while (s < e && !scan_is_space(*s))
        s++;
    return s;
}

/* e moved back over the white space that ends [s, e) (>= s). */
static inline const char *scan_trim_end(const char *s, const char *e)
{
    while (e > s && scan_is_space(e[-1]))
        e--;
    return e;
}

#ifdef __cplusplus
}
#endif
#endif
