/* agent_env.c - a task's environment (COMPAT.md "Task environment"):
 * pmc-hybrid's environment without the variables it sets itself, plus
 *   PMC_TASK, PMC_MEMORY, PMC_CPUS, PMC_RANK, PMC_HOST_RANK (PMC's),
 *   PMC_TASK_INDEX, an array instance's index (docs/task-arrays.md; a plain
 *     task has none, even one inherited),
 *   PMC_AFFINITY, the CPU ids allotted to it, each one, comma-separated
 *     ("0,1,2,3", as PMC's worker writes it), for every task, bound to
 *     them with --set-affinity only (agent_task.c, agent_slot_bind()); a
 *     staged task gets room for one id, written when it starts on a CPU
 *     (agent_stage.c),
 *   for a task with -g N: PMC_GPUS and the visibility variable the host's
 *     ids are meant for (gpus.h's gpu_ids.var: CUDA_VISIBLE_DEVICES,
 *     ROCR_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES or ZE_AFFINITY_MASK; all but
 *     HIP's when the kind is unknown), "id,id" of its GPUs; the other ones
 *     pmc-hybrid inherited are left out (HIP counts CUDA's and HIP's ids
 *     within ROCR's, so a ROCR id put there too named another GPU or
 *     none), except an inherited ROCR_VISIBLE_DEVICES when the ids are
 *     CUDA's or HIP's (they count within it); a task without GPUs keeps
 *     whatever of these was inherited;
 *   unless --no-thread-env, the thread counts of OpenMP and the usual BLAS
 *     libraries set to the task's CPUs (-c N): OMP_NUM_THREADS,
 *     OPENBLAS_NUM_THREADS, MKL_NUM_THREADS, BLIS_NUM_THREADS,
 *     VECLIB_MAXIMUM_THREADS, NUMEXPR_NUM_THREADS, and, when the task is
 *     bound (--set-affinity), OMP_PLACES ("{0},{1},...": its CPUs) and
 *     OMP_PROC_BIND=close; each only when the user's environment does not
 *     set it already (a task's own `env VAR=...` wins anyway);
 *   the -f forward variables.
 * So a -c 8 task uses its 8 CPUs and no more, the oversubscription that
 * hybrid MPI+threads or BLAS codes otherwise fall into.
 *
 * The strings live in the slot's envbuf, the pointers in its envp; both are
 * reused between tasks (no allocation once warmed up).  Agent thread only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/node/agent_internal.h"
#include "io/digits.h"
#include "io/grow.h"

extern char **environ;

static const char *const ours[] = {"PMC_TASK=",      "PMC_MEMORY=",   "PMC_CPUS=",      "PMC_RANK=",
                                   "PMC_HOST_RANK=", "PMC_AFFINITY=", "PMC_TASK_INDEX="};
static const char *const gpu_vars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                       "ZE_AFFINITY_MASK", "PMC_GPUS", "HIP_VISIBLE_DEVICES"};
#define NGPU_VARS (sizeof gpu_vars / sizeof gpu_vars[0])
#define ROCR_VAR 1 /* gpu_vars[] index */
_Static_assert(NGPU_VARS == sizeof((struct agent *)0)->env.gpu_env / sizeof(char *),
               "agent.env.gpu_env holds one entry per gpu_vars[]");
/* gpu_vars[] set for a task with GPUs, by gpus_var (bit i: gpu_vars[i]) */
static const unsigned gpu_vars_of[] = {[GPUS_VAR_ALL] = 1u | 2u | 4u | 8u,
                                       [GPUS_VAR_CUDA] = 1u | 8u,
                                       [GPUS_VAR_ROCR] = 2u | 8u,
                                       [GPUS_VAR_HIP] = 16u | 8u,
                                       [GPUS_VAR_ZE] = 4u | 8u};
static const char *const thread_vars[] = {
    "OMP_NUM_THREADS",        "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",  "OMP_PLACES",      "OMP_PROC_BIND"};
#define NTHREAD_VARS (sizeof thread_vars / sizeof thread_vars[0])
#define OMP_PLACES_VAR 6 /* thread_vars[] index: only for bound tasks */
#define OMP_PROC_BIND_VAR 7

static bool has_name(const char *kv, const char *name)
{
    size_t n = strlen(name);
    return strncmp(kv, name, n) == 0 && kv[n] == '=';
}

static bool is_ours(const char *kv)
{
    for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
        if (strncmp(kv, ours[i], strlen(ours[i])) == 0)
            return true;
    return false;
}

/* A GPU visibility variable: remembered aside (index), not in base_env. */
static int gpu_var(const char *kv)
{
    for (size_t i = 0; i < NGPU_VARS; i++)
        if (has_name(kv, gpu_vars[i]))
            return (int)i;
    return -1;
}

int agent__snapshot_env(struct agent *a)
{
    size_t n = 0;
    while (environ && environ[n])
        n++;
    a->env.base_env = calloc(n + 1, sizeof *a->env.base_env);
    if (!a->env.base_env)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int g = gpu_var(environ[i]);
        if (g >= 0) {
            a->env.gpu_env[g] = environ[i];
            continue;
        }
        for (size_t k = 0; k < NTHREAD_VARS; k++)
            if (has_name(environ[i], thread_vars[k]))
                a->env.thread_vars_set |= 1u << k;
        if (!is_ours(environ[i]))
            a->env.base_env[a->env.base_env_n++] = environ[i];
    }
    return 0;
}

/* Appends "NAME=value" strings to envbuf and their pointers to envp. */
struct env_out {
    char *p, **e;
};

/* "name=value".  No printf: a task's environment is built for every task,
 * and vsprintf() was ~2.5 % of a node's CPU in a /bin/true run. */
static void put(struct env_out *o, const char *name, const char *value)
{
    size_t n = strlen(name), v = strlen(value);
    memcpy(o->p, name, n);
    o->p[n] = '=';
    memcpy(o->p + n + 1, value, v + 1);
    *o->e++ = o->p;
    o->p += n + v + 2;
}

/* v in decimal, NUL-terminated, somewhere in d; returns its first byte. */
static const char *decimal(int64_t v, char d[DIGITS_MAX + 1])
{
    d[DIGITS_MAX] = '\0';
    return digits_i64(v, d + DIGITS_MAX);
}

/* "{0},{1},..." of the CPUs in set. */
static void put_places(struct env_out *o, const cpu_set_t *set)
{
    char *start = o->p;
    o->p += sprintf(o->p, "OMP_PLACES=");
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, set))
            o->p += sprintf(o->p, "%s{%d}", o->p[-1] == '=' ? "" : ",", c);
    *o->p++ = '\0';
    *o->e++ = start;
}

static void put_thread_vars(struct agent *a, struct slot *s, const struct msg_task *t,
                            struct env_out *o)
{
    if (!a->cfg.thread_env)
        return;
    char d[DIGITS_MAX + 1];
    const char *n = decimal(t->cpus ? t->cpus : 1, d);
    for (size_t k = 0; k < OMP_PLACES_VAR; k++)
        if (!(a->env.thread_vars_set & (1u << k)))
            put(o, thread_vars[k], n);
    if (!s->cpuid.bound)
        return;
    if (!(a->env.thread_vars_set & (1u << OMP_PLACES_VAR)))
        put_places(o, &s->cpuid.set);
    if (!(a->env.thread_vars_set & (1u << OMP_PROC_BIND_VAR)))
        put(o, "OMP_PROC_BIND", "close");
}

/* The first CPU of set at or after c, or -1: a word at a time (a task's
 * environment is built for every task; CPU_SETSIZE bits one by one were
 * a few us of it). */
static int next_cpu(const cpu_set_t *set, int c)
{
    const int bits = (int)(8 * sizeof set->__bits[0]);
    for (int w = c / bits; w < CPU_SETSIZE / bits; w++, c = w * bits) {
        __cpu_mask m = set->__bits[w] & (~(__cpu_mask)0 << (c % bits));
        if (m)
            return w * bits + __builtin_ctzl(m);
    }
    return -1;
}

/* "0,1,2,3": every CPU of set, NUL-terminated, at o->p (PMC_AFFINITY's
 * value, PMC's form). */
static void put_ids(struct env_out *o, const cpu_set_t *set)
{
    char d[DIGITS_MAX + 1];
    bool first = true;
    for (int c = next_cpu(set, 0); c >= 0; c = next_cpu(set, c + 1)) {
        if (!first)
            *o->p++ = ',';
        first = false;
        const char *n = decimal(c, d);
        size_t len = strlen(n);
        memcpy(o->p, n, len);
        o->p += len;
    }
    *o->p++ = '\0';
}

/* list_len: the length of the task's "id,id" list (gpus_format()). */
static void put_gpu_vars(struct agent *a, struct slot *s, struct env_out *o, size_t list_len)
{
    if (s->gpu.n == 0) {
        for (size_t i = 0; i < NGPU_VARS; i++)
            if (a->env.gpu_env[i])
                *o->e++ = (char *)a->env.gpu_env[i];
        return;
    }
    enum gpus_var var = a->cfg.gpus->var;
    unsigned set = gpu_vars_of[var];
    for (size_t i = 0; i < NGPU_VARS; i++) {
        if (i == ROCR_VAR && (var == GPUS_VAR_CUDA || var == GPUS_VAR_HIP) && a->env.gpu_env[i]) {
            *o->e++ = (char *)a->env.gpu_env[i]; /* CUDA's and HIP's ids count within it */
            continue;
        }
        if (!(set & (1u << i)))
            continue;
        char *start = o->p;
        o->p += sprintf(o->p, "%s=", gpu_vars[i]);
        o->p += gpus_format(a->cfg.gpus, s->gpu.ids, s->gpu.n, o->p, list_len + 1);
        *o->p++ = '\0';
        *o->e++ = start;
    }
}

/* Bytes of envbuf the task needs, at most. */
static size_t env_bytes(struct agent *a, struct slot *s, const struct msg_task *t, size_t gpus)
{
    size_t need =
        strlen(t->name) + 160 + (s->cpuid.held || s->cpuid.pending ? AFFINITY_ID_MAX + 16 : 0);
    need += s->cpuid.held ? (size_t)CPU_COUNT(&s->cpuid.set) * AFFINITY_ID_MAX : 0;
    need += NTHREAD_VARS * 40 + (s->cpuid.bound ? (size_t)CPU_COUNT(&s->cpuid.set) * 10 + 16 : 0);
    return need + (NGPU_VARS + 1) * (gpus + 32) + 64;
}

int agent__slot_env(struct agent *a, struct slot *s, const struct msg_task *t)
{
    size_t gpus = s->gpu.n ? gpus_format(a->cfg.gpus, s->gpu.ids, s->gpu.n, NULL, 0) : 0;
    if (pmc_grow((void **)&s->env.buf, &s->env.buf_cap, env_bytes(a, s, t, gpus), 1) < 0)
        return -1;
    size_t nvars = a->env.base_env_n + 7 + NGPU_VARS + NTHREAD_VARS + s->fwd.npipes + 1;
    if (pmc_grow((void **)&s->env.envp, &s->env.envp_cap, nvars, sizeof(char *)) < 0)
        return -1;
    memcpy(s->env.envp, a->env.base_env, a->env.base_env_n * sizeof(char *));
    struct env_out o = {s->env.buf, s->env.envp + a->env.base_env_n};
    char n[DIGITS_MAX + 1];
    put(&o, "PMC_TASK", t->name);
    put(&o, "PMC_MEMORY", decimal(t->memory_mb, n));
    put(&o, "PMC_CPUS", decimal(t->cpus, n));
    put(&o, "PMC_RANK", decimal(a->cfg.rank, n));
    put(&o, "PMC_HOST_RANK", decimal(a->cfg.host_rank, n));
    if (t->flags & MSG_TASK_INDEXED)
        put(&o, "PMC_TASK_INDEX", decimal(t->index, n));
    if (s->cpuid.held || s->cpuid.pending) {
        char *start = o.p;
        memcpy(o.p, "PMC_AFFINITY=", 13);
        o.p += 13;
        s->cpuid.value = o.p;
        if (s->cpuid.held) {
            put_ids(&o, &s->cpuid.set);
        } else { /* written at its start: agent_stage.c */
            memset(o.p, 0, AFFINITY_ID_MAX);
            o.p += AFFINITY_ID_MAX;
        }
        *o.e++ = start;
    }
    put_gpu_vars(a, s, &o, gpus);
    put_thread_vars(a, s, t, &o);
    if (fwd_child_env(&s->fwd, o.e) < 0)
        return -1;
    o.e[s->fwd.npipes] = NULL;
    return 0;
}

int agent__first_id(const cpu_set_t *set)
{
    return next_cpu(set, 0);
}

void agent__adopt_id(struct slot *s, int id)
{
    if (!s->cpuid.pending || id < 0)
        return;
    CPU_ZERO(&s->cpuid.set);
    CPU_SET(id, &s->cpuid.set);
    s->cpuid.held = true;
    s->cpuid.pending = false;
}

int agent__pack_local_forwards(struct agent *a, struct msg_task *t)
{
    if (msg_pack_forwards(local_link_dag(a->outbox.link), t->id, &a->env.fwd_scratch,
                          &a->env.fwd_scratch_cap, &t->fwd_len) < 0)
        return -1;
    t->fwd = a->env.fwd_scratch;
    return 0;
}
