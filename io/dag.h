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
 *
 * Task arrays (docs/task-arrays.md): an array is one record
 * (struct dag_array: name, inclusive index range, the options and argv
 * template of its TASK line) standing for count = last - first + 1
 * instances named "name[i]"; an edge that involves an array is one record
 * (struct dag_array_edge: kind, endpoints, K).  Nothing is stored per
 * instance: the instance functions below compute names, argv, parents and
 * children from these records.  Plain tasks, plain edges and their arrays
 * above are exactly as without arrays.  A plain task may not be named
 * "A[...]" for an array A, nor A itself (dag_add_task(), dag_add_array()).
 */
#ifndef PMC_DAG_H
#define PMC_DAG_H

#include <stdbool.h>
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

#define DAG_ARRAY_MAX_INDEX 999999999u /* largest instance index: at most 9 digits */
#define DAG_MAX_INSTANCES 1000000000u  /* instances of all arrays together */
#define DAG_MAX_ARRAYS 0x3fffffffu     /* array records */

/* A node of the graph of records: a plain task id (< DAG_MAX_TASKS), or
 * DAG_NODE_ARRAY | array id. */
typedef uint32_t dag_node_t;
#define DAG_NODE_ARRAY 0x80000000u
#define DAG_NODE_IS_ARRAY(v) (((v)&DAG_NODE_ARRAY) != 0)
#define DAG_NODE_ID(v) ((v) & ~DAG_NODE_ARRAY)

/* The edge forms that involve an array (DAG file syntax in brackets). */
enum dag_array_edge_kind {
    DAG_EDGE_ONE_TO_ONE = 1, /* EDGE a[i] b[i]: a's j-th instance -> b's j-th; equal counts */
    DAG_EDGE_K_TO_ONE = 2, /* EDGE a[i] b[i/K]: a's j-th -> b's (j / K)-th; count(a) = K count(b) */
    DAG_EDGE_FAN_IN = 3,   /* EDGE a[*] t: every instance of a -> plain task t */
    DAG_EDGE_FAN_OUT = 4,  /* EDGE t b[*]: plain task t -> every instance of b */
    DAG_EDGE_BARRIER = 5,  /* EDGE a[*] b[*]: every instance of a -> every one of b */
};

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

    /* Task arrays (see the banner); both empty in a DAG without arrays. */
    uint32_t narrays;
    struct dag_array *arrays; /* narrays records, by array id (file order) */
    uint64_t ninstances;      /* instances of all arrays, <= DAG_MAX_INSTANCES */
    uint32_t narray_edges;
    /* After dag_finish(): sorted by (parent, child, kind, k), duplicates
     * merged, so a node's out-edges are contiguous (dag_node_out_edges()). */
    struct dag_array_edge *array_edges;
    uint32_t *array_in; /* after dag_finish(): edge indices sorted by child */
};

/* One task array: the instances name[first] .. name[last]. */
struct dag_array {
    uint32_t name;        /* arena offset of the array's name (no brackets) */
    uint32_t first, last; /* inclusive range, first <= last <= DAG_ARRAY_MAX_INDEX */
    uint32_t argv, argc;  /* the argv template, as dag->argv/argc of a task */
    uint32_t pegasus_id;  /* arena offset, DAG_NO_STRING when no #@ line */
    uint32_t cpus, memory_mb, tries, gpus, time_limit_ms; /* as the per-task arrays */
    int32_t priority;
    uint32_t line;      /* DAG file line of the TASK record */
    uint32_t fwd_first; /* the array's forwards are fwd[fwd_first .. + nfwd - 1] */
    uint32_t nfwd;
    uint32_t base; /* instances of the arrays before this one: its first instance's
                      offset in the instance id space (dag_instance_id()) */
};

/* One edge that involves an array (enum dag_array_edge_kind). */
struct dag_array_edge {
    uint32_t kind;     /* enum dag_array_edge_kind */
    dag_node_t parent; /* an array, or a plain task for DAG_EDGE_FAN_OUT */
    dag_node_t child;  /* an array, or a plain task for DAG_EDGE_FAN_IN */
    uint32_t k;        /* K of DAG_EDGE_K_TO_ONE (>= 2), else 1 */
    uint32_t line;     /* DAG file line of the (first) EDGE record */
};

/* A range of instances of one node, as the instance functions give them:
 * instances first .. last (absolute indices) of array node, or the plain
 * task node (first = last = 0). */
struct dag_instance_range {
    dag_node_t node;
    uint32_t first, last;
};

/* Create an empty DAG.  Returns NULL with errno ENOMEM.  The caller owns it
 * and frees it with dag_destroy(). */
struct dag *dag_create(void);

/* A topological order of the plain tasks of a finished DAG, by the plain
 * edges only (Kahn's algorithm, A. B. Kahn,
 * "Topological sorting of large networks", CACM 1962): order[] (ntasks
 * entries, the caller's) gets every task after all its parents.  0, or -1
 * with ENOMEM (one temporary array of ntasks counts).  Thread-safe on a
 * finished DAG. */
int dag_topo_order(const struct dag *dag, dag_task_t *order);

/* Free the DAG and everything it holds.  NULL is a no-op. */
void dag_destroy(struct dag *dag);

/* Add a task.  On success stores its id in *id (ids are given in order
 * 0, 1, 2, ...) and returns 0.  Returns -1 with errno EEXIST if a task of
 * that name exists (and *id gets the existing task's id) or the name is an
 * array's or "A[...]" for an array A (*id gets DAG_NODE_ARRAY | A), EINVAL for an empty
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
 * With task arrays the graph of records (plain tasks and arrays as nodes,
 * array edges as node edges) is checked the same way after the plain
 * graph: every array edge maps each parent instance to at least one child
 * instance, so a cycle of records is a cycle of instances and the other way
 * round; it is reported as "cycle: a[*] -> t -> a[*]".  O(tasks + arrays +
 * edges + E log E) for E array edges.
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

/* ---- task arrays --------------------------------------------------------- */

/* Add the array spec->name[first..last] (spec as for dag_add_task(): its
 * name has no brackets; its options and argv apply to every instance; the
 * argv is a template, see dag_instance_argv()).  Stores the array id (0, 1,
 * ... in order) in *id and returns 0.  Returns -1 with errno EEXIST when
 * the name is taken: *id gets DAG_NODE_ARRAY | the array of that name, or
 * the plain task of that name, or the first plain task named "name[...]";
 * EINVAL for what dag_add_task() refuses, a '[' or ']' in the name, first >
 * last, last > DAG_ARRAY_MAX_INDEX, or after dag_finish(); E2BIG past
 * DAG_MAX_INSTANCES instances, DAG_MAX_ARRAYS arrays or 4 GiB of strings;
 * ENOMEM.  A failed call changes nothing.  O(1) amortised.  Not
 * thread-safe. */
int dag_add_array(struct dag *dag, const struct dag_task_spec *spec, uint32_t first, uint32_t last,
                  uint32_t *id);

/* Add an edge that involves an array.  parent and child are nodes whose
 * kinds fit `kind` (arrays, except the plain task of FAN_IN's child and of
 * FAN_OUT's parent); k is K for DAG_EDGE_K_TO_ONE (>= 2) and 1 otherwise.
 * Returns -1 with errno EINVAL when a node is out of range or of the wrong
 * kind, parent == child, ONE_TO_ONE counts differ, count(parent) !=
 * k * count(child) for K_TO_ONE, or after dag_finish(); E2BIG past
 * UINT32_MAX such edges; ENOMEM.  Duplicates are merged by dag_finish().
 * O(1) amortised.  Not thread-safe. */
int dag_add_array_edge(struct dag *dag, enum dag_array_edge_kind kind, dag_node_t parent,
                       dag_node_t child, uint32_t k, uint32_t line);

/* Look up an array by name (len bytes).  0 and the id in *id, or -1 with
 * errno ENOENT.  O(1) expected.  Thread-safe after dag_finish(). */
int dag_array_lookup(const struct dag *dag, const char *name, size_t len, uint32_t *id);

/* Number of instances of array a. */
static inline uint32_t dag_array_count(const struct dag *dag, uint32_t a)
{
    return dag->arrays[a].last - dag->arrays[a].first + 1;
}

/* Task ids beyond the plain tasks: instance `index` of array a is task
 * id ntasks + arrays[a].base + (index - first), so every plain task and
 * every instance has one 32-bit id (ntasks + ninstances < 2^32 - 1; an
 * instance id is never UINT32_MAX).  Messages, the rescue log and the
 * engine's tables name instances by it.  The caller checks the range. */
static inline dag_task_t dag_instance_id(const struct dag *dag, uint32_t a, uint32_t index)
{
    return dag->ntasks + dag->arrays[a].base + (index - dag->arrays[a].first);
}

/* Is task id t an instance of an array (not a plain task)? */
static inline bool dag_is_instance(const struct dag *dag, dag_task_t t)
{
    return t >= dag->ntasks;
}

/* The array (*a) and index (*index) of instance id t; -1 with errno
 * EINVAL when t is not an instance id of the DAG.  O(log narrays) (binary
 * search over the bases).  Thread-safe after dag_finish(). */
int dag_instance_of(const struct dag *dag, dag_task_t t, uint32_t *a, uint32_t *index);

/* Look up a task by name (len bytes): a plain task's name, else an
 * instance's "a[i]" (i decimal, no leading zero, in a's range).  0 and the
 * task id in *t, or -1 with errno ENOENT.  O(1) expected.  Thread-safe
 * after dag_finish(). */
int dag_lookup_task(const struct dag *dag, const char *name, size_t len, dag_task_t *t);

/* The forwards (-f, -F) of task t, a plain task or an instance id (its
 * array's): dag->fwd[*first .. *first + n - 1]; returns n.  O(1) for a
 * plain task, O(log narrays) for an instance.  Thread-safe after
 * dag_finish(). */
uint32_t dag_task_forwards(const struct dag *dag, dag_task_t t, uint32_t *first);

/* The name of array a (no brackets), owned by the DAG. */
static inline const char *dag_array_name(const struct dag *dag, uint32_t a)
{
    return dag->arena + dag->arrays[a].name;
}

/* Write "name[index]" and a NUL into buf (cap bytes) when it fits, like
 * snprintf(): returns the name's length (without the NUL; at most the
 * array name's length + 11), or -1 with errno EINVAL when index is not in
 * the array's range.  O(name length).  Thread-safe after dag_finish(). */
int dag_instance_name(const struct dag *dag, uint32_t a, uint32_t index, char *buf, size_t cap);

/* The argv of instance index of array a, packed as dag->argv packs a
 * task's (argc NUL-terminated strings, one after the other), into buf (cap
 * bytes) when it fits: each "%{INDEX}" in the template is replaced by the
 * index in decimal and each "%%{INDEX}" by a literal "%{INDEX}", scanning
 * each string left to right.  Returns the bytes needed (> 0; nothing is
 * written when it is > cap), or 0 with errno EINVAL when index is not in
 * the range.  O(template length).  Thread-safe after dag_finish(). */
size_t dag_instance_argv(const struct dag *dag, uint32_t a, uint32_t index, char *buf, size_t cap);

/* The first "%{INDEX}" of s (NUL-terminated) that dag_instance_argv()
 * would replace, scanning as it does ("%%{INDEX}" is skipped), or NULL.
 * Pure. */
const char *dag_index_token(const char *s);

/* Parents of instance index of array a through array edges, counted as
 * the engine will count down its completions: 1 for ONE_TO_ONE and
 * FAN_OUT, K for K_TO_ONE, count(parent) for BARRIER.  (Arrays have no
 * plain edges.)  0 for an index out of range.  O(log E + d), E array
 * edges, d of them into a.  Thread-safe after dag_finish(). */
uint64_t dag_instance_nparents(const struct dag *dag, uint32_t a, uint32_t index);

/* Parents of plain task t through array edges: the sum of count(a) over
 * its FAN_IN edges (its plain parents are nparents[t]).  O(log E + d).
 * Thread-safe after dag_finish(). */
uint64_t dag_task_array_nparents(const struct dag *dag, dag_task_t t);

/* The children (parents) of instance index of array a, one range per
 * array edge out of (into) a, in edge order: writes min(n, cap) ranges to
 * out and returns n (0 for an index out of range).  ONE_TO_ONE and
 * K_TO_ONE give one instance of the other array (K_TO_ONE parents: the K
 * instances that map to index), BARRIER all of it, FAN_IN / FAN_OUT the
 * plain task.  O(log E + n).  Thread-safe after dag_finish(). */
uint32_t dag_instance_children(const struct dag *dag, uint32_t a, uint32_t index,
                               struct dag_instance_range *out, uint32_t cap);
uint32_t dag_instance_parents(const struct dag *dag, uint32_t a, uint32_t index,
                              struct dag_instance_range *out, uint32_t cap);

/* The array edges out of node v are array_edges[*first .. *first + n - 1];
 * returns n.  O(log E).  Thread-safe after dag_finish(). */
uint32_t dag_node_out_edges(const struct dag *dag, dag_node_t v, uint32_t *first);

/* The array edges into node v are array_edges[(*ids)[0 .. n - 1]]; returns
 * n.  O(log E).  Thread-safe after dag_finish(). */
uint32_t dag_node_in_edges(const struct dag *dag, dag_node_t v, const uint32_t **ids);

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
