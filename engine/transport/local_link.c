/* local_link.c - the master's and its own agent's rings; see local_link.h. */
#include "engine/transport/local_link.h"

#include <stdlib.h>

#include "sched/placement.h"
#include "sched/spsc_ring.h"

struct local_link {
    const struct dag *dag;
    struct spsc_ring *tasks;  /* master -> agent */
    struct spsc_ring *events; /* agent -> master */
    struct mailbox *master_box, *agent_box;
};

struct local_link *local_link_create(const struct dag *d, uint32_t cpus, struct mailbox *master_box,
                                     struct mailbox *agent_box, struct pmc_error *err)
{
    /* the most tasks committed to the node at once, the overflow lane
     * included (a ring of cpus + W overflowed when the lane was full) */
    uint64_t most = placement_most_committed(cpus);
    struct local_link *l = calloc(1, sizeof *l);
    if (l && most <= SPSC_RING_MAX / 2) {
        l->tasks = spsc_ring_create((uint32_t)most, sizeof(struct local_task));
        l->events = spsc_ring_create((uint32_t)(2 * most), sizeof(struct local_event));
    }
    if (!l || !l->tasks || !l->events) {
        local_link_destroy(l);
        pmc_errorf(err, "cannot create the master's link to its node: out of memory");
        return NULL;
    }
    l->dag = d;
    l->master_box = master_box;
    l->agent_box = agent_box;
    return l;
}

void local_link_destroy(struct local_link *l)
{
    if (!l)
        return;
    struct local_event ev;
    while (l->events && spsc_ring_pop(l->events, &ev))
        local_event_free(&ev);
    spsc_ring_destroy(l->tasks);
    spsc_ring_destroy(l->events);
    free(l);
}

const struct dag *local_link_dag(const struct local_link *l)
{
    return l->dag;
}

bool local_link_tasks_waiting(const struct local_link *l)
{
    return spsc_ring_size(l->tasks) > 0;
}

bool local_link_events_waiting(const struct local_link *l)
{
    return spsc_ring_size(l->events) > 0;
}

bool local_link_send_task(struct local_link *l, const struct local_task *t)
{
    return spsc_ring_push(l->tasks, t);
}

void local_link_notify_agent(struct local_link *l)
{
    mailbox_notify(l->agent_box);
}

bool local_link_take_task(struct local_link *l, struct local_task *t)
{
    return spsc_ring_pop(l->tasks, t);
}

bool local_link_send_event(struct local_link *l, const struct local_event *ev)
{
    return spsc_ring_push(l->events, ev);
}

void local_link_notify_master(struct local_link *l)
{
    mailbox_notify(l->master_box);
}

bool local_link_take_event(struct local_link *l, struct local_event *ev)
{
    return spsc_ring_pop(l->events, ev);
}

void local_event_free(struct local_event *ev)
{
    if (ev->kind == LOCAL_RESULT)
        free((void *)ev->result.fwd);
}
