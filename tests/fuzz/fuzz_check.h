/* fuzz_check.h - the one assertion of the libFuzzer harnesses.
 *
 * FUZZ_CHECK(cond, fmt, ...) prints "fuzz check failed: FILE:LINE: cond:
 * message" and aborts, so libFuzzer (and AddressSanitizer's abort handler)
 * saves the input as a crash artifact.  Used for the harnesses' oracles
 * (round trips, differential models): a wrong answer is a finding just like
 * a crash.
 */
#ifndef PMC_FUZZ_CHECK_H
#define PMC_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define FUZZ_CHECK(cond, ...)                                                                      \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed: %s:%d: %s: ", __FILE__, __LINE__, #cond);          \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

#endif
