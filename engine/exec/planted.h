/* planted.h - failures a test plants in the engine (its test hooks:
 * launcher__fail_next_watch(), agent__fail_next_start(), ...: the *_testing.h headers): an errno
 * stored in an atomic_int by the test's thread and taken, once, by the
 * engine's thread at the place it stands for.
 */
#ifndef PMC_PLANTED_H
#define PMC_PLANTED_H

#include <stdatomic.h>

/* The planted errno, taken once; 0 when none (one relaxed load and no
 * write on the path the hook sits on). */
static inline int planted_take(atomic_int *planted)
{
    return atomic_load_explicit(planted, memory_order_relaxed)
               ? atomic_exchange_explicit(planted, 0, memory_order_relaxed)
               : 0;
}

#endif
