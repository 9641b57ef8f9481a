/* time_limit.c - the rule of a task's hard time limit; see time_limit.h.
 *
 * A deadline is armed at the task's launch (start + limit), before a
 * launch handed to the pool has started, so it is early, never late.  When
 * it passes, a task still launching is looked at again after
 * min(limit, TIME_LIMIT_RECHECK_MS); a started one is due at its own
 * start + limit.  This spares its agent a wake-up at every start of a
 * timed task.  Once due: SIGTERM, and SIGKILL --kill-grace later if it is
 * still there.  Its end is then TASK_TIMED_OUT (task_end.h).
 */
#include "engine/exec/time_limit.h"

#define NS_PER_MS 1000000u

enum time_limit_step time_limit_next(const struct time_limit_task *t, uint64_t now_ns,
                                     uint64_t *due_ns)
{
    if (t->timed_out)
        return TIME_LIMIT_KILL;
    uint64_t limit = (uint64_t)t->limit_ms * NS_PER_MS;
    uint64_t recheck = (uint64_t)TIME_LIMIT_RECHECK_MS * NS_PER_MS;
    uint64_t due = t->started ? t->start_ns + limit : now_ns + (limit < recheck ? limit : recheck);
    if (due > now_ns) {
        *due_ns = due;
        return TIME_LIMIT_LATER;
    }
    return TIME_LIMIT_TERM;
}
