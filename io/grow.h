/* grow.h - amortised growth of a caller-owned array.
 *
 * Thread-safety: reentrant; the array belongs to the caller.
 */
#ifndef PMC_GROW_H
#define PMC_GROW_H

#include <stdlib.h>

/* Make *p (of *cap elements of elem bytes) hold at least need elements,
 * doubling from 16.  0, or -1 with ENOMEM (then *p and *cap are unchanged). */
static inline int pmc_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t c = *cap ? *cap : 16;
    while (c < need)
        c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q)
        return -1;
    *p = q;
    *cap = c;
    return 0;
}

#endif
