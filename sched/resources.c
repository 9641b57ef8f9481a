/* resources.c - the split of a host's resources; see resources.h. */
#include "sched/resources.h"

uint64_t resources_share(uint64_t total, int r, int n)
{
    if (n <= 1)
        return total;
    return total / (uint64_t)n + ((uint64_t)r < total % (uint64_t)n ? 1 : 0);
}
