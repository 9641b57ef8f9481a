/* agent_testing.h - the node agent's test hooks (engine/exec/planted.h):
 * included by tests and by agent.c only.
 */
#ifndef PMC_AGENT_TESTING_H
#define PMC_AGENT_TESTING_H

#include "engine/node/agent.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The next task the agent prepares to start fails to, with errno err, as
 * if its -f pipes could not be made (reported failed, status 256).  Any
 * thread; taken once. */
void agent__fail_next_start(struct agent *a, int err);

#ifdef __cplusplus
}
#endif
#endif
