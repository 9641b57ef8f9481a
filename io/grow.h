/* grow.h - amortised growth of a caller-owned array: the one growth helper
 * of pmc-hybrid (arrays that need more than a realloc - the DAG's mapped
 * arrays, rings that are unwrapped, tables rebuilt as they grow - keep
 * their own).
 *
 * Capacity doubles, so n appends cost O(n) copying in all.  An array
 * starts at `first` elements (16 for pmc_grow()).  Growth stops doubling
 * where doubling would overflow and asks for exactly what is needed.
 *
 * Thread-safety: reentrant; the array belongs to the caller.
 */
#ifndef PMC_GROW_H
#define PMC_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/* Make *p (an array of *cap elements of elem bytes, elem > 0; *p may be
 * NULL when *cap is 0) hold at least need elements: when need > *cap, the
 * capacity becomes the first doubling of *cap (or of first, first > 0, when
 * *cap is 0) that is >= need, and *p is realloc()ed to it; the first *cap
 * elements are kept, the new ones are uninitialised.  Returns 0 (nothing
 * done when need <= *cap), or -1 with errno ENOMEM - out of memory, or need
 * elements would not fit in a size_t - and then *p and *cap are unchanged
 * (*p still owned by the caller). */
static inline int pmc_grow_from(void **p, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap)
        return 0;
    size_t max = SIZE_MAX / elem;
    if (need > max) {
        errno = ENOMEM;
        return -1;
    }
    size_t c = *cap ? *cap : first;
    while (c < need)
        c = c > max / 2 ? need : c * 2;
    void *q = realloc(*p, c * elem);
    if (!q) {
        errno = ENOMEM;
        return -1;
    }
    *p = q;
    *cap = c;
    return 0;
}

/* pmc_grow_from() starting at 16 elements. */
static inline int pmc_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    return pmc_grow_from(p, cap, need, elem, 16);
}

#endif
