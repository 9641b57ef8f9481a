/* digits.h - integers in decimal without stdio.
 *
 * For the per-task hot paths (the task record, the task environment) where
 * snprintf() cost a few per cent of a node's CPU, and for the watchdog
 * process, which must not allocate or take stdio's locks.  The digits are
 * written backwards so that they end just before `end`, the caller's
 * buffer needing DIGITS_MAX bytes before it; the first byte is returned, so
 * a number is [returned pointer, end).
 *
 * Thread-safety: pure functions.
 */
#ifndef PMC_DIGITS_H
#define PMC_DIGITS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DIGITS_MAX 21 /* '-' and the 20 digits of the largest 64-bit value */

/* v in decimal, at least width digits (zero-padded; width <= 20). */
static inline char *digits_u64(uint64_t v, int width, char *end)
{
    char *p = end;
    do {
        *--p = (char)('0' + v % 10);
        v /= 10;
    } while (v || end - p < width);
    return p;
}

/* v in decimal, '-' first when negative (INT64_MIN included). */
static inline char *digits_i64(int64_t v, char *end)
{
    char *p = digits_u64(v < 0 ? 0 - (uint64_t)v : (uint64_t)v, 1, end);
    if (v < 0)
        *--p = '-';
    return p;
}

#ifdef __cplusplus
}
#endif
#endif
