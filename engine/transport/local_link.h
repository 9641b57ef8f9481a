/* local_link.h - rank 0's master and its own node agent, without messages.
 *
 * Two single-producer single-consumer rings of fixed-size records
 * (sched/spsc_ring.h): `tasks` (master -> agent, struct local_task) and
 * `events` (agent -> master, struct local_event, in the agent's order).
 * The agent reads all else from the DAG.  No allocation, lock or encoding
 * per task.  Control messages keep the mailboxes; a side pushes its ring
 * records before the control mail that follows them and reads its ring
 * after its mailbox.  Each consumer watches its ring through its mailbox
 * (mailbox_watch), so it never sleeps while records wait.  The rings are
 * sized from placement_most_committed(), so a full ring is a broken
 * invariant, never waited on.  Why: docs/modules.md "local_link".
 *
 * Thread-safety: the *_task functions have one producer (the master) and
 * one consumer (the agent); the *_event functions the reverse.
 */
#ifndef PMC_LOCAL_LINK_H
#define PMC_LOCAL_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/transport/mailbox.h"
#include "io/dag.h"
#include "io/error.h"
#include "io/msg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A task for the agent: the per-attempt fields of its TASKS item (the rest
 * comes from the DAG: msg_task_from_dag()). */
struct local_task {
    uint32_t id;
    uint32_t attempt;       /* 1 for the first try */
    uint32_t flags;         /* MSG_TASK_* */
    uint32_t time_limit_ms; /* 0 = none */
};

enum local_event_kind {
    LOCAL_STARTED = 1, /* the task's process started (fields: id, attempt, start) */
    LOCAL_RESULT = 2,  /* the attempt ended, or was given back (exec_errno ECANCELED) */
};

/* One event for the master: the STARTED or RESULTS item a message would
 * carry.  result.fwd, when not NULL, is a malloc'd copy of the forwarded
 * data that the event owns (local_event_free()). */
struct local_event {
    uint32_t kind; /* enum local_event_kind */
    union {
        struct msg_started started; /* LOCAL_STARTED */
        struct msg_result result;   /* LOCAL_RESULT */
    };
};

/* Free what ev owns (a result's forwarded data). */
void local_event_free(struct local_event *ev);

struct local_link;

/* A link for a node of `cpus` CPUs whose tasks come from d, waking the
 * given mailboxes.  NULL with err (ENOMEM). */
struct local_link *local_link_create(const struct dag *d, uint32_t cpus, struct mailbox *master_box,
                                     struct mailbox *agent_box, struct pmc_error *err);

/* Free the link and events never taken, once no thread uses it.  NULL is a
 * no-op. */
void local_link_destroy(struct local_link *l);

/* The DAG the tasks refer to (read-only, shared). */
const struct dag *local_link_dag(const struct local_link *l);

/* Records waiting in the tasks ring (the agent's) or the events ring (the
 * master's): for the consumer's mailbox_watch() callback. */
bool local_link_tasks_waiting(const struct local_link *l);
bool local_link_events_waiting(const struct local_link *l);

/* Master: queue a task for the agent.  false (ENOBUFS) only when the ring
 * is full, which the sizing rules out. */
bool local_link_send_task(struct local_link *l, const struct local_task *t);
/* Master, after a round of local_link_send_task(): wake the agent if it
 * sleeps. */
void local_link_notify_agent(struct local_link *l);
/* Agent: the oldest task into *t; false when none. */
bool local_link_take_task(struct local_link *l, struct local_task *t);

/* Agent: queue an event for the master (ownership of ev->fwd passes with
 * it).  false (ENOBUFS, ev->fwd still the caller's) only when the ring is
 * full, which the sizing rules out. */
bool local_link_send_event(struct local_link *l, const struct local_event *ev);
/* Agent: wake the master if it sleeps. */
void local_link_notify_master(struct local_link *l);
/* Master: the oldest event into *ev (ev->fwd then the caller's); false when
 * none. */
bool local_link_take_event(struct local_link *l, struct local_event *ev);

#ifdef __cplusplus
}
#endif
#endif
