/* master_events.c - the event logs' per-task state; see master_internal.h. */
#include <stdlib.h>

#include "engine/master/master_internal.h"
#include "io/log.h"

int master__events_open(struct master_events *ev, const struct master_config *cfg, uint32_t ntasks)
{
    struct pmc_error err;
    struct monitor_config mc = {cfg->dag_path, cfg->jobstate_log, cfg->dagman_log,
                                cfg->resource_log};
    ev->monitor = monitor_open(&mc, &err);
    if (!ev->monitor) {
        log_fatal("Unable to open %s", err.text);
        return -1;
    }
    if (monitor_wants_tasks(ev->monitor)) {
        ev->seq = calloc(ntasks, sizeof *ev->seq);
        ev->executed = calloc(ntasks, 1);
        ev->next_seq = 1;
        if (!ev->seq || !ev->executed) {
            log_fatal("Out of memory for the event logs of %u tasks", ntasks);
            return -1;
        }
    }
    return 0;
}

void master__events_start(struct master_events *ev)
{
    monitor_event(ev->monitor, WF_WORKFLOW_START, NULL, 0, 0);
}

bool master__events_end(struct master_events *ev, bool ok)
{
    ok = ok && !monitor_failed(ev->monitor);
    monitor_event(ev->monitor, ok ? WF_WORKFLOW_SUCCESS : WF_WORKFLOW_FAILURE, NULL, 0, 0);
    if (monitor_close(ev->monitor) < 0)
        ok = false; /* its last lines were lost */
    ev->monitor = NULL;
    return ok;
}

void master__events_free(struct master_events *ev)
{
    (void)monitor_close(ev->monitor);
    free(ev->seq);
    free(ev->executed);
    ev->monitor = NULL;
    ev->seq = NULL;
    ev->executed = NULL;
}
