/* launcher_testing.h - the launcher pool's test hooks (planted.h): included
 * by tests and by launcher.c only.
 */
#ifndef PMC_LAUNCHER_TESTING_H
#define PMC_LAUNCHER_TESTING_H

#include <stdint.h>

#include "engine/exec/launcher.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The next reaped launch fails to be watched with errno err. */
void launcher__fail_next_watch(struct launcher *l, int err);

/* The next pipe read that succeeds fails to re-arm it with errno err: the
 * pipe is closed and marked lost (fwd_entry.lost). */
void launcher__fail_next_rearm(struct launcher *l, int err);

/* Every pipe read from now on keeps its slot JOB_READING for us
 * microseconds more (0: no more), so that a signal or a reap meets a read
 * under way; and the pipe reads done so far.  Any thread. */
void launcher__hold_reads(struct launcher *l, unsigned us);
uint64_t launcher__pipe_reads(const struct launcher *l);

/* Hand the pool a pipe event of slot i's pipe number p from the slot's
 * previous launch (its generation one below the current one's), as a
 * launcher that took the event from epoll before the reap would handle it
 * after the slot's next launch: it must find the slot watched for another
 * launch and do nothing (no read, no re-arm).  From the test's thread,
 * while the slot's task runs. */
void launcher__stale_pipe_event(struct launcher *l, uint32_t i, uint32_t p);

#ifdef __cplusplus
}
#endif
#endif
