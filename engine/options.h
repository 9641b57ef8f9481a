/* options.h - pmc-hybrid's command line (PMC manual "Options", COMPAT.md
 * "Command line"), parsed with getopt_long.
 *
 * Environment aliases PMC_HOST_SCRIPT, PMC_HOST_MEMORY, PMC_HOST_CPUS,
 * PMC_MAX_WALL_TIME and PMC_RANKS_ARE_HOSTS give defaults; the command line
 * wins.  --host-cpus 0 / --host-memory 0 mean "detect", as in PMC.
 *
 * Thread-safety: not thread-safe (getopt_long keeps global state); call
 * once from main.
 */
#ifndef PMC_OPTIONS_H
#define PMC_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

struct options {
    const char *dag_path;
    const char *rescue_path; /* -r, NULL = DAG.rescue */
    const char *out_path;    /* -o, NULL = stdout */
    const char *err_path;    /* -e, NULL = stderr */
    const char *host_script; /* --host-script */
    int verbosity;           /* +1 per -v, -1 per -q */
    bool help, version;
    bool skip_rescue, nolock;
    uint32_t max_failures; /* -m, 0 = unlimited */
    uint32_t tries;        /* -t, >= 1 */
    uint32_t host_cpus;    /* 0 = detect */
    uint64_t host_memory;  /* MB, 0 = detect */
    double max_wall_time;  /* minutes, 0 = unlimited */
    uint32_t maxfds;       /* 0 = from RLIMIT_NOFILE */
    bool strict_limits, per_task_stdio, jobstate_log, monitord_hack;
    bool no_resource_log, no_sleep_on_recv, keep_affinity, set_affinity;
    bool master_only;
    bool ranks_are_hosts;    /* every rank is a host of its own (tests, benchmarks) */
    int progress;            /* --progress 1, --no-progress 0, default -1 (auto) */
    uint32_t host_gpus;      /* --host-gpus / PMC_HOST_GPUS, when host_gpus_set */
    bool host_gpus_set;      /* else detect */
    double task_time_limit;  /* s, 0 = none */
    double kill_grace;       /* s between SIGTERM and SIGKILL, default 5 */
    uint32_t launch_threads; /* --launch-threads: task-starting threads per host, when
                                launch_threads_set; else launcher_default_threads() of
                                the host's CPUs */
    bool launch_threads_set;
    double drain_margin;           /* s before the batch job's end, default 180 */
    bool no_thread_env;            /* do not set OMP_NUM_THREADS & co. */
    const char *status_path;       /* --status, NULL = none */
    const char *summary_json_path; /* --summary-json, NULL = none */
    bool null_executor;            /* benchmark mode: tasks complete at once, nothing runs */
    const char *listen_path;       /* --listen ACCESS: agents join this master (docs/join.md) */
    const char *listen_address;    /* --listen-address: ZeroMQ endpoint to bind, NULL = any */
    const char *join_path;         /* --join ACCESS: this process is an agent of that master */
    uint32_t min_hosts;            /* --min-hosts: agents before dispatch starts, default 1 */
    double node_timeout;           /* --node-timeout: s of silence before a node is lost */
    bool task_records_failed;      /* --task-records failed: no record of a successful attempt */
};

/* Parse argv into o.  Returns 0, or -1 with err naming the option and the
 * bad value ("invalid value for -t/--tries: '0' (must be at least 1)"). */
int options_parse(struct options *o, int argc, char **argv, struct pmc_error *err);

/* The master's options a joined agent adopts (docs/join.md), as text for
 * the join link's WELCOME: "dag PATH\nnull-executor 0|1\nper-task-stdio
 * 0|1\ntask-records-failed 0|1\n", PATH the DAG's absolute path dag_abs (agents write their
 * DAG.out.N beside it).  Writes buf (size bytes, NUL-terminated); the
 * length, or -1 when it does not fit.  Pure. */
int options_describe_run(const struct options *o, const char *dag_abs, char *buf, size_t size);

/* An agent adopts the description text[0, len) (not NUL-terminated):
 * sets o->dag_path (copied into dag_buf, dag_size bytes), null_executor,
 * per_task_stdio and task_records_failed.  0, or -1 with err when it is malformed.  Pure. */
int options_adopt_run(struct options *o, const char *text, size_t len, char *dag_buf,
                      size_t dag_size, struct pmc_error *err);

/* The --help text (static storage). */
const char *options_usage(void);

/* The long options as given to getopt_long(3) (<getopt.h>): an array in
 * static storage ending with an all-zero entry; val is the short option's
 * letter when there is one.  For tests that derive their expectations from
 * it (every long option appears in --help). */
struct option;
const struct option *options_table(void);

#ifdef __cplusplus
}
#endif
#endif
