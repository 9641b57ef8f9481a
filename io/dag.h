/* dag.h - the compact in-memory model of a workflow DAG.
 *
 * Built for DAGs of millions of tasks (docs/design.md): tasks are dense
 * ids 0..ntasks-1 and every per-task attribute is a flat array indexed by id
 * (struct of arrays); every string (names, argv, forward paths) lives in one
 * arena and is referred to by a 32-bit offset (a task whose argv is exactly
 * the previous task's shares its strings); children are in CSR form
 * (child_first/children) built once by dag_finish(); a private open-addressing
 * hash table maps names to ids.  Nothing is allocated per task or per edge
 * apart from amortised growth of these arrays.
 *
 * Life cycle: dag_create(), then dag_add_task()/dag_add_edge() in any order
 * allowed by the DAG file grammar (an edge names tasks already added), then
 * dag_finish(), which builds the CSR arrays and rejects cycles.  After
 * dag_finish() the struct is read-only and may be read by any number of
 * threads without locks; before it, only one thread may touch it.
 *
 * Memory: 52 bytes per task in the arrays plus 12-24 in the name index (14
 * when sized by dag_reserve()), 4 bytes per edge once built (8 more while
 * parsing), plus the strings; measured peaks: docs/performance.md "Parse".
 */
#ifndef PMC_DAG_H
#define PMC_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint32_t dag_task_t; /* dense task id, 0 .. ntasks-1 */

#define DAG_NO_STRING 0u /* arena offset 0 is always the empty string */
#define DAG_MAX_TASKS 0x7fffffffu
#define DAG_MAX_TRIES 65535u /* -t: the master counts a task's attempts in 16 bits */
#define DAG_MAX_PIPES 64     /* -f of one task: descriptors 3 .. 66 in the task */

enum dag_forward_kind {
    DAG_FORWARD_PIPE = 0, /* -f VAR=FILE: a pipe whose fd number goes in $VAR */
    DAG_FORWARD_FILE = 1, /* -F SRC=DEST: SRC read after the task exits */
};

/* One I/O forwarding request of a task (DAG option -f or -F). */
struct dag_forward {
    uint32_t kind; /* enum dag_forward_kind */
    uint32_t src;  /* arena offset: VAR (pipe) or SRC path (file) */
    uint32_t dest; /* arena offset: destination path on the master */
};

/* What the DAG file says about one task, as handed to dag_add_task().
 * Strings are (pointer, length) and are copied into the arena. */
struct dag_task_spec {
    const char *name;
    size_t name_len;
    const char *pegasus_id; /* the N of a preceding "#@ N ..." line, or NULL */
    size_t pegasus_id_len;
    const char *const *argv; /* argc strings, argv[0] is the executable */
    const size_t *argv_len;
    uint32_t argc;          /* >= 1 */
    uint32_t cpus;          /* CPUs requested, >= 1 */
    uint32_t memory_mb;     /* MB requested, 0 = memory not considered */
    int32_t priority;       /* larger runs first; default 0 */
    uint32_t tries;         /* attempts allowed, 0 = the command line's -t */
    uint32_t gpus;          /* GPUs requested (-g), 0 = none */
    uint32_t time_limit_ms; /* --time-limit, ms; 0 = the command line's default */
    uint32_t line;          /* line of the TASK record, for messages */
    const struct dag_forward_spec {
        uint32_t kind;
        const char *src;
        size_t src_len;
        const char *dest;
        size_t dest_len;
    } * forwards;
    uint32_t nforwards;
    const uint32_t *name_hash; /* dag_name_hash() of the name, or NULL */
};

/* The model.  Read-only after dag_finish(); fields are public so the hot
 * paths can index the arrays directly. */
struct dag {
    uint32_t ntasks;
    uint32_t nedges;

    char *arena; /* all strings, NUL-terminated; offset 0 holds "" */
    size_t arena_len;

    /* per task, indexed by dag_task_t */
    uint32_t *name;          /* arena offset of the task name */
    uint32_t *pegasus_id;    /* arena offset, DAG_NO_STRING when no #@ line */
    uint32_t *argv;          /* arena offset of argc consecutive strings */
    uint32_t *argc;          /* number of argv strings (>= 1) */
    uint32_t *cpus;          /* CPUs requested (>= 1) */
    uint32_t *memory_mb;     /* MB requested (0 = not considered) */
    int32_t *priority;       /* larger first */
    uint32_t *tries;         /* 0 = use the command-line default */
    uint32_t *line;          /* DAG file line of the TASK record */
    uint32_t *fwd_first;     /* index into fwd[] of the task's first forward */
    uint32_t *nfwd;          /* number of forwards of the task */
    uint32_t *gpus;          /* GPUs requested (0 for most tasks: those pages stay
                                untouched zero pages, so they cost no memory) */
    uint32_t *time_limit_ms; /* hard run-time limit, ms; 0 = the run's default */

    struct dag_forward *fwd; /* all forwards, grouped by task */
    uint32_t fwd_count;

    /* CSR adjacency, valid after dag_finish(): the children of t are
     * children[child_first[t] .. child_first[t+1]-1]; nparents[t] is t's
     * in-degree.  A repeated EDGE line counts once. */
    uint32_t *child_first; /* ntasks + 1 entries */
    dag_task_t *children;  /* nedges entries */
    uint32_t *nparents;

    struct dag_private *priv; /* builder state and the name index */
};

/* Create an empty DAG.  Returns NULL with errno ENOMEM.  The caller owns it
 * and frees it with dag_destroy(). */
struct dag *dag_create(void);

/* A topological order of a finished DAG (Kahn's algorithm, A. B. Kahn,
 * "Topological sorting of large networks", CACM 1962): order[] (ntasks
 * entries, the caller's) gets every task after all its parents.  0, or -1
 * with ENOMEM (one temporary array of ntasks counts).  Thread-safe on a
 * finished DAG. */
int dag_topo_order(const struct dag *dag, dag_task_t *order);

/* Free the DAG and everything it holds.  NULL is a no-op. */
void dag_destroy(struct dag *dag);

/* Add a task.  On success stores its id in *id (ids are given in order
 * 0, 1, 2, ...) and returns 0.  Returns -1 with errno EEXIST if a task of
 * that name exists (and *id gets the existing task's id), EINVAL for an empty
 * name, argc 0, cpus 0, a forward kind that is not a dag_forward_kind, a NUL
 * byte inside any string, or after dag_finish(), E2BIG if the DAG would
 * exceed DAG_MAX_TASKS tasks or 4 GiB of strings, ENOMEM.  A failed call
 * changes nothing.  Not thread-safe. */
int dag_add_task(struct dag *dag, const struct dag_task_spec *spec, dag_task_t *id);

/* Add the edge parent -> child (the child runs after the parent).  Returns -1
 * with errno EINVAL when parent == child, an id is out of range or after
 * dag_finish(), E2BIG past UINT32_MAX edges (duplicates counted), ENOMEM.
 * Duplicate edges are accepted and merged by dag_finish(). */
int dag_add_edge(struct dag *dag, dag_task_t parent, dag_task_t child);

/* Build the CSR arrays and in-degrees, merge duplicate edges, and check that
 * the graph is acyclic (Kahn's algorithm, O(tasks + edges)).  On a cycle
 * returns -1 with errno ELOOP and err naming the tasks of one cycle in order,
 * starting at the one added first ("cycle: A -> B -> C -> A"; a long cycle is
 * shortened to "cycle: A -> B -> ... -> A"); the CSR arrays and nparents are
 * still valid then, for tools that inspect the graph.  -1 with ENOMEM.
 * Call once (EINVAL after that); dag_add_task()/dag_add_edge() then fail
 * with EINVAL. */
int dag_finish(struct dag *dag, struct pmc_error *err);

/* Look up a task by name (len bytes, not necessarily NUL-terminated).
 * Returns 0 and the id in *id, or -1 with errno ENOENT.  Thread-safe after
 * dag_finish() (read-only). */
int dag_lookup(const struct dag *dag, const char *name, size_t len, dag_task_t *id);

/* dag_lookup() with the name's dag_name_hash() already computed. */
int dag_lookup_hash(const struct dag *dag, const char *name, size_t len, uint32_t hash,
                    dag_task_t *id);

/* The hash the name index uses for a name (len bytes).  Pure. */
uint32_t dag_name_hash(const char *name, size_t len);

/* A hint for a reader that knows the names it will look up or add a few
 * lines ahead: each lookup is up to three dependent cache misses (the index
 * slot, the task's name offset, the name's bytes), and calling stage 0, 1
 * and 2 for a name's hash some work apart starts each one before it is
 * needed.  Stage 0 prefetches the slot; stage 1 reads it and prefetches the
 * name offset of the task it holds; stage 2 also reads that and prefetches
 * the name.  Reads only: any stage at any time is harmless and changes no
 * result.  Same thread rules as dag_lookup() (the builder's thread before
 * dag_finish()). */
void dag_prefetch(const struct dag *dag, uint32_t hash, int stage);

/* Size the DAG for ntasks tasks and nedges edges (estimates: more may be
 * added, fewer leave unused capacity that dag_finish() gives back), so that
 * the name index is built once at the size it ends at instead of doubling
 * (each doubling rehashes every name and holds both tables at once).
 * Returns 0, or -1 with errno EINVAL after dag_finish(), ENOMEM (the DAG
 * stays usable at its old capacity).  Not thread-safe. */
int dag_reserve(struct dag *dag, uint32_t ntasks, size_t nedges);

/* The task's name, a NUL-terminated string owned by the DAG. */
static inline const char *dag_task_name(const struct dag *dag, dag_task_t t)
{
    return dag->arena + dag->name[t];
}

/* The i-th argv string of task t (0 <= i < argc[t]): walks the packed
 * strings, O(total argv length); meant for building messages, not for
 * per-byte hot loops. */
const char *dag_task_arg(const struct dag *dag, dag_task_t t, uint32_t i);

/* Total bytes of the task's packed argv strings, NULs included. */
size_t dag_task_argv_bytes(const struct dag *dag, dag_task_t t);

#ifdef __cplusplus
}
#endif
#endif
