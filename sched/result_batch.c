/* result_batch.c - the adaptive result batching rule of result_batch.h. */
#include "sched/result_batch.h"

#include "sched/placement.h"

struct result_batch_params result_batch_defaults(void)
{
    return (struct result_batch_params){.batch = RESULT_BATCH,
                                        .delay = RESULT_DELAY_MS * 1e-3,
                                        .delay_busy = RESULT_DELAY_BUSY_MS * 1e-3,
                                        .delay_leaf = RESULT_DELAY_LEAF_MS * 1e-3,
                                        .send_below = 1,
                                        .low_water = true};
}

bool result_batch_low_water(uint64_t load, uint32_t cpus)
{
    return load <= placement_refill_mark(cpus);
}

/* The longest the waiting items may gather, s: a node with a full round of
 * work waiting does not need the master soon, so its results gather longer
 * (fewer, bigger messages), and longest when none of them can make a task
 * ready (no children). */
static double result_batch_delay(const struct result_batch_params *p,
                                 const struct result_batch_state *st)
{
    if (st->waiting < st->cpus)
        return p->delay;
    return st->releases ? p->delay_busy : p->delay_leaf;
}

double result_batch_wait(const struct result_batch_params *p, const struct result_batch_state *st)
{
    if (st->results == 0 && st->notices == 0)
        return -1;
    if (st->results >= p->batch || st->waiting < p->send_below || st->ending || st->send_now)
        return 0;
    if (p->low_water && st->results > 0 && !st->low_water_sent &&
        result_batch_low_water(st->load, st->cpus))
        return 0; /* the master reopens this node on these results */
    double delay = result_batch_delay(p, st);
    return st->waited >= delay ? 0 : delay - st->waited;
}
