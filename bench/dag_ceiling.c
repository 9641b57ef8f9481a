/* dag_ceiling.c - the raw DAG ceiling: a workflow run with nothing but
 * posix_spawn and waitpid.
 *
 *   dag_ceiling DAG SLOTS
 *
 * Loads DAG with the engine's own parser (io/dagfile.h) and runs every task's
 * command on one host of SLOTS CPUs: posix_spawnp() of the task's argv (glibc:
 * clone(CLONE_VM|CLONE_VFORK), the same kind of spawn as the engine's
 * launcher; PATH searched as the engine does), environment and stdio
 * inherited (bench/run points stdout at a file the tasks do not write, as for
 * spawn_ceiling), no shell; children reaped with waitpid(-1).  The schedule
 * is the policy of bench/greedy.py (after the PMC manual, -p), so its
 * makespan is what that zero-overhead schedule becomes when starting a
 * process costs what it costs on this machine:
 *
 * - list scheduling: whenever CPUs are free (at the start and after each
 *   batch of reaps) the ready tasks are looked at in dispatch order and
 *   each one that fits the free CPUs starts;
 * - dispatch order: larger priority first, then the order the tasks became
 *   ready; tasks ready at the same moment (the roots; the children released
 *   by one batch of reaps: the first waitpid and every child already exited
 *   behind it) in DAG order (TASK line order, the dense ids);
 * - PMC's deferral rule (sched/placement.h): a task that does not fit the
 *   free CPUs keeps its place while later ones that fit start;
 * - -c is capped at SLOTS (such a task runs alone).
 *
 * Left out: memory, GPUs, retries (-t), time limits, forwarding (-f, -F),
 * output capture, task records, the rescue log, messages.  A task that
 * fails (or cannot be spawned) is named on stderr and its descendants never
 * run, as in PMC.  Prints one line:
 *
 *   tasks=N slots=S makespan_s=X tasks_per_s=Y failed=F
 *
 * makespan_s runs from the first spawn to the last reap (CLOCK_MONOTONIC);
 * tasks_per_s is N / makespan_s.  Why it exists: on a small machine
 * starting a process is not free (a /bin/sleep costs ~1 ms of CPU in ld.so
 * on the 2-core VM), so a DAG of many short tasks cannot come close to the
 * zero-overhead greedy schedule with any engine; this is the fair reference
 * for pmc-hybrid's makespan on the same DAG and slots (docs/design.md section
 * 8; bench/run measures both in the same run, interleaved).
 *
 * Exit status 0; 1 when a task fails or a spawn fails; 2 on a usage error or
 * a DAG the parser rejects (its message names the file and line).
 *
 * Cost per task: O(log n) heap work, O(SLOTS) to find the reaped pid among
 * the running tasks, O(argc) to point at its argv; nothing is allocated
 * after the start.
 */
#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "io/clock.h"
#include "io/dag.h"
#include "io/dagfile.h"

extern char **environ;

/* A ready task and its dispatch key: larger prio first, then smaller seq. */
struct ready {
    int32_t prio;
    uint32_t seq;
    dag_task_t task;
};

/* A started task: its pid and id. */
struct running {
    pid_t pid;
    dag_task_t task;
};

/* The whole run; every array is sized once from the DAG. */
struct ceiling {
    const struct dag *dag;
    uint32_t slots, free, maxneed; /* maxneed: the largest capped -c */
    uint32_t *need;                /* per task: min(cpus, slots) */
    uint32_t *parents_left;        /* per task: parents not yet succeeded */
    struct ready *heap;            /* ready tasks, binary min-heap on the key */
    uint32_t nheap, seq;
    struct ready *deferred; /* popped during a dispatch, did not fit */
    uint32_t *cnt;          /* cnt[k]: ready tasks needing k CPUs, k <= maxneed */
    struct running *run;    /* at most min(slots, ntasks) */
    uint32_t nrun;
    dag_task_t *released; /* children released by one batch of reaps */
    uint32_t nreleased;
    char **argv; /* the argv of the task being spawned, max argc + 1 */
    uint32_t started, done, failed;
    double t_first, t_last; /* first spawn, last reap */
};

/* True when a goes before b in dispatch order. */
static int ready_before(const struct ready *a, const struct ready *b)
{
    return a->prio != b->prio ? a->prio > b->prio : a->seq < b->seq;
}

/* Push r onto the ready heap (sift up). */
static void heap_push(struct ceiling *c, struct ready r)
{
    uint32_t i = c->nheap++;
    while (i > 0 && ready_before(&r, &c->heap[(i - 1) / 2])) {
        c->heap[i] = c->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    c->heap[i] = r;
}

/* Remove and return the first ready task (sift down); the heap is not empty. */
static struct ready heap_pop(struct ceiling *c)
{
    struct ready top = c->heap[0], last = c->heap[--c->nheap];
    uint32_t i = 0, n = c->nheap;
    for (;;) {
        uint32_t k = 2 * i + 1;
        if (k >= n)
            break;
        if (k + 1 < n && ready_before(&c->heap[k + 1], &c->heap[k]))
            k++;
        if (!ready_before(&c->heap[k], &last))
            break;
        c->heap[i] = c->heap[k];
        i = k;
    }
    if (n > 0)
        c->heap[i] = last;
    return top;
}

/* qsort order of task ids: DAG order. */
static int cmp_task(const void *a, const void *b)
{
    dag_task_t x = *(const dag_task_t *)a, y = *(const dag_task_t *)b;
    return (x > y) - (x < y);
}

/* Make tasks[0..k-1], ready at the same moment, ready in DAG order. */
static void release(struct ceiling *c, dag_task_t *tasks, uint32_t k)
{
    qsort(tasks, k, sizeof *tasks, cmp_task);
    for (uint32_t i = 0; i < k; i++) {
        dag_task_t t = tasks[i];
        c->cnt[c->need[t]]++;
        heap_push(c, (struct ready){c->dag->priority[t], c->seq++, t});
    }
}

/* Point c->argv at task t's packed argv strings (dag.h: argc consecutive
 * NUL-terminated strings in the arena). */
static void task_argv(struct ceiling *c, dag_task_t t)
{
    const char *s = dag_task_arg(c->dag, t, 0);
    uint32_t argc = c->dag->argc[t];
    for (uint32_t i = 0; i < argc; i++) {
        c->argv[i] = (char *)s;
        s += strlen(s) + 1;
    }
    c->argv[argc] = NULL;
}

/* Spawn task t.  0, or -1 when the spawn failed (named on stderr and
 * counted as a failed task, whose CPUs were never taken). */
static int start_task(struct ceiling *c, dag_task_t t)
{
    pid_t pid;
    task_argv(c, t);
    if (c->started == 0) /* until a spawn succeeds */
        c->t_first = pmc_mono_s();
    int rc = posix_spawnp(&pid, c->argv[0], NULL, NULL, c->argv, environ);
    if (rc != 0) {
        fprintf(stderr, "dag_ceiling: task %s (line %u): cannot spawn %s: %s\n",
                dag_task_name(c->dag, t), c->dag->line[t], c->argv[0], strerror(rc));
        c->failed++;
        c->done++;
        return -1;
    }
    c->run[c->nrun++] = (struct running){pid, t};
    c->started++;
    return 0;
}

/* Ready tasks needing k CPUs for lo < k <= hi (k capped at maxneed). */
static uint32_t count_needs(const struct ceiling *c, uint32_t lo, uint32_t hi)
{
    uint32_t n = 0;
    for (uint32_t k = lo + 1; k <= hi && k <= c->maxneed; k++)
        n += c->cnt[k];
    return n;
}

/* Start every ready task that fits the free CPUs, in dispatch order, the
 * others keeping their places.  The walk stops once no ready task fits
 * (fit counts them), so a full host costs nothing. */
static void dispatch(struct ceiling *c)
{
    uint32_t ndef = 0;
    uint32_t fit = c->free >= c->maxneed ? c->nheap : count_needs(c, 0, c->free);
    while (fit > 0 && c->nheap > 0) {
        struct ready r = heap_pop(c);
        uint32_t need = c->need[r.task];
        if (need > c->free) {
            c->deferred[ndef++] = r;
            continue;
        }
        c->cnt[need]--;
        fit--;
        if (start_task(c, r.task) == 0) {
            uint32_t old = c->free;
            c->free -= need;
            fit -= count_needs(c, c->free, old);
        }
    }
    for (uint32_t i = 0; i < ndef; i++)
        heap_push(c, c->deferred[i]);
}

/* Say on stderr how task t ended when it failed; 1 when it failed. */
static int task_failed(const struct ceiling *c, dag_task_t t, int status)
{
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status))
        fprintf(stderr, "dag_ceiling: task %s (line %u) exited %d\n", dag_task_name(c->dag, t),
                c->dag->line[t], WEXITSTATUS(status));
    else
        fprintf(stderr, "dag_ceiling: task %s (line %u) killed by signal %d\n",
                dag_task_name(c->dag, t), c->dag->line[t], WTERMSIG(status));
    return 1;
}

/* Account for the child pid that ended with status: give its CPUs back and,
 * when it succeeded, queue the children it leaves with no parent to wait for.
 * 0, or -1 when pid is not one of ours. */
static int reaped(struct ceiling *c, pid_t pid, int status)
{
    uint32_t i = 0;
    while (i < c->nrun && c->run[i].pid != pid)
        i++;
    if (i == c->nrun)
        return -1;
    dag_task_t t = c->run[i].task;
    c->run[i] = c->run[--c->nrun];
    c->free += c->need[t];
    c->done++;
    if (task_failed(c, t, status)) {
        c->failed++;
        return 0;
    }
    const struct dag *d = c->dag;
    for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
        if (--c->parents_left[d->children[e]] == 0)
            c->released[c->nreleased++] = d->children[e];
    return 0;
}

/* Wait for one child, reap every other one that has already exited, then
 * release the children they freed, in DAG order.  0, or -1 (on stderr). */
static int reap_batch(struct ceiling *c)
{
    int status, flags = 0;
    pid_t pid;
    c->nreleased = 0;
    while ((pid = waitpid(-1, &status, flags)) != 0) {
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0 && flags == WNOHANG && errno == ECHILD)
            break;
        if (pid < 0 || reaped(c, pid, status) < 0) {
            fprintf(stderr, "dag_ceiling: waitpid: %s\n", pid < 0 ? strerror(errno) : "not ours");
            return -1;
        }
        flags = WNOHANG;
    }
    c->t_last = pmc_mono_s();
    release(c, c->released, c->nreleased);
    return 0;
}

/* Size every array of c from d for slots CPUs and make the roots ready.
 * 0, or -1 with errno ENOMEM. */
static int ceiling_init(struct ceiling *c, const struct dag *d, uint32_t slots)
{
    uint32_t n = d->ntasks, maxargc = 0;
    *c = (struct ceiling){.dag = d, .slots = slots, .free = slots};
    c->need = calloc(n, sizeof *c->need);
    c->parents_left = calloc(n, sizeof *c->parents_left);
    c->heap = calloc(n, sizeof *c->heap);
    c->deferred = calloc(n, sizeof *c->deferred);
    c->run = calloc(n < slots ? n : slots, sizeof *c->run);
    c->released = calloc(n, sizeof *c->released);
    if (!c->need || !c->parents_left || !c->heap || !c->deferred || !c->run || !c->released)
        return -1;
    for (dag_task_t t = 0; t < n; t++) {
        c->need[t] = d->cpus[t] < slots ? d->cpus[t] : slots;
        c->maxneed = c->need[t] > c->maxneed ? c->need[t] : c->maxneed;
        c->parents_left[t] = d->nparents[t];
        maxargc = d->argc[t] > maxargc ? d->argc[t] : maxargc;
        if (d->nparents[t] == 0)
            c->released[c->nreleased++] = t;
    }
    c->cnt = calloc(c->maxneed + 1, sizeof *c->cnt);
    c->argv = calloc(maxargc + 1, sizeof *c->argv);
    if (!c->cnt || !c->argv)
        return -1;
    release(c, c->released, c->nreleased);
    return 0;
}

/* Free every array of c (each may be NULL); c->dag stays the caller's. */
static void ceiling_free(struct ceiling *c)
{
    free(c->need);
    free(c->parents_left);
    free(c->heap);
    free(c->deferred);
    free(c->run);
    free(c->released);
    free(c->cnt);
    free(c->argv);
}

/* Run the DAG of c to the end: 0, or -1 after a message when waitpid
 * failed. */
static int ceiling_run(struct ceiling *c)
{
    for (;;) {
        dispatch(c);
        if (c->nrun == 0)
            return 0;
        if (reap_batch(c) < 0)
            return -1;
    }
}

/* SLOTS from text: a decimal in 1 .. 2^31 - 1, or 0 when it is not one. */
static uint32_t parse_slots(const char *s)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 1 || v > INT32_MAX)
        return 0;
    return (uint32_t)v;
}

int main(int argc, char **argv)
{
    uint32_t slots = argc == 3 ? parse_slots(argv[2]) : 0;
    if (slots == 0) {
        fprintf(stderr, "usage: dag_ceiling DAG SLOTS   (SLOTS >= 1)\n");
        return 2;
    }
    struct pmc_error err;
    struct dag *d = dagfile_load(argv[1], &err);
    if (!d) {
        fprintf(stderr, "dag_ceiling: %s\n", err.text);
        return 2;
    }
    struct ceiling c;
    int rc = 1;
    if (ceiling_init(&c, d, slots) < 0) {
        perror("dag_ceiling");
    } else if (ceiling_run(&c) == 0) {
        double mk = c.started ? c.t_last - c.t_first : 0.0;
        printf("tasks=%u slots=%u makespan_s=%.6f tasks_per_s=%.1f failed=%u\n", d->ntasks, slots,
               mk, mk > 0 ? d->ntasks / mk : 0.0, c.failed);
        if (c.done < d->ntasks)
            fprintf(stderr, "dag_ceiling: %u of %u tasks never ran (a parent failed)\n",
                    d->ntasks - c.done, d->ntasks);
        rc = c.failed ? 1 : 0;
    }
    ceiling_free(&c);
    dag_destroy(d);
    return rc;
}
