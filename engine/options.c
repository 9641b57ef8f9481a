/* options.c - getopt_long over PMC's options; see options.h. */
#include "engine/options.h"

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/host/gpus.h"
#include "engine/exec/launcher.h"

/* A macro's value as a string literal, for messages (LAUNCHER_MAX_THREADS) */
#define OPTIONS_STR_(x) #x
#define OPTIONS_STR(x) OPTIONS_STR_(x)

enum {
    OPT_HOST_SCRIPT = 256,
    OPT_HOST_MEMORY,
    OPT_HOST_CPUS,
    OPT_STRICT_LIMITS,
    OPT_MAX_WALL_TIME,
    OPT_PER_TASK_STDIO,
    OPT_JOBSTATE_LOG,
    OPT_MONITORD_HACK,
    OPT_NO_RESOURCE_LOG,
    OPT_NO_SLEEP_ON_RECV,
    OPT_MAXFDS,
    OPT_KEEP_AFFINITY,
    OPT_SET_AFFINITY,
    OPT_MASTER_ONLY,
    OPT_NULL_EXECUTOR,
    OPT_RANKS_ARE_HOSTS,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_STATUS,
    OPT_SUMMARY_JSON,
    OPT_HOST_GPUS,
    OPT_TASK_TIME_LIMIT,
    OPT_KILL_GRACE,
    OPT_DRAIN_MARGIN,
    OPT_NO_THREAD_ENV,
    OPT_LAUNCH_THREADS,
    OPT_THREADS,
    OPT_LISTEN,
    OPT_LISTEN_ADDRESS,
    OPT_JOIN,
    OPT_MIN_HOSTS,
    OPT_NODE_TIMEOUT,
    OPT_TASK_RECORDS,
};

static const struct option long_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"verbose", no_argument, NULL, 'v'},
    {"quiet", no_argument, NULL, 'q'},
    {"skip-rescue", no_argument, NULL, 's'},
    {"stdout", required_argument, NULL, 'o'},
    {"stderr", required_argument, NULL, 'e'},
    {"max-failures", required_argument, NULL, 'm'},
    {"tries", required_argument, NULL, 't'},
    {"nolock", no_argument, NULL, 'n'},
    {"rescue", required_argument, NULL, 'r'},
    {"host-script", required_argument, NULL, OPT_HOST_SCRIPT},
    {"host-memory", required_argument, NULL, OPT_HOST_MEMORY},
    {"host-cpus", required_argument, NULL, OPT_HOST_CPUS},
    {"strict-limits", no_argument, NULL, OPT_STRICT_LIMITS},
    {"max-wall-time", required_argument, NULL, OPT_MAX_WALL_TIME},
    {"per-task-stdio", no_argument, NULL, OPT_PER_TASK_STDIO},
    {"jobstate-log", no_argument, NULL, OPT_JOBSTATE_LOG},
    {"monitord-hack", no_argument, NULL, OPT_MONITORD_HACK},
    {"no-resource-log", no_argument, NULL, OPT_NO_RESOURCE_LOG},
    {"no-sleep-on-recv", no_argument, NULL, OPT_NO_SLEEP_ON_RECV},
    {"maxfds", required_argument, NULL, OPT_MAXFDS},
    {"keep-affinity", no_argument, NULL, OPT_KEEP_AFFINITY},
    {"set-affinity", no_argument, NULL, OPT_SET_AFFINITY},
    {"master-only", no_argument, NULL, OPT_MASTER_ONLY},
    {"null-executor", no_argument, NULL, OPT_NULL_EXECUTOR},
    {"ranks-are-hosts", no_argument, NULL, OPT_RANKS_ARE_HOSTS},
    {"progress", no_argument, NULL, OPT_PROGRESS},
    {"no-progress", no_argument, NULL, OPT_NO_PROGRESS},
    {"status", required_argument, NULL, OPT_STATUS},
    {"summary-json", required_argument, NULL, OPT_SUMMARY_JSON},
    {"host-gpus", required_argument, NULL, OPT_HOST_GPUS},
    {"task-time-limit", required_argument, NULL, OPT_TASK_TIME_LIMIT},
    {"kill-grace", required_argument, NULL, OPT_KILL_GRACE},
    {"launch-threads", required_argument, NULL, OPT_LAUNCH_THREADS},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"drain-margin", required_argument, NULL, OPT_DRAIN_MARGIN},
    {"no-thread-env", no_argument, NULL, OPT_NO_THREAD_ENV},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"listen-address", required_argument, NULL, OPT_LISTEN_ADDRESS},
    {"join", required_argument, NULL, OPT_JOIN},
    {"min-hosts", required_argument, NULL, OPT_MIN_HOSTS},
    {"node-timeout", required_argument, NULL, OPT_NODE_TIMEOUT},
    {"task-records", required_argument, NULL, OPT_TASK_RECORDS},
    {NULL, 0, NULL, 0},
};

const struct option *options_table(void)
{
    return long_options;
}

const char *options_usage(void)
{
    return "Usage: pmc-hybrid [options] DAGFILE\n"
           "       pmc-hybrid [options] --listen ACCESS DAGFILE   (agents join this master)\n"
           "       pmc-hybrid [agent options] --join ACCESS       (an agent of that master)\n"
           "\n"
           "  -h, --help               print this help and exit\n"
           "  -V, --version            print version information and exit\n"
           "  -v, --verbose            more logging (repeatable)\n"
           "  -q, --quiet              less logging (repeatable)\n"
           "  -s, --skip-rescue        ignore the rescue log (a new one is still written)\n"
           "  -o, --stdout PATH        file for task stdout (default: our stdout)\n"
           "  -e, --stderr PATH        file for task stderr (default: our stderr)\n"
           "  -m, --max-failures M     stop submitting after M failed tasks (0: no limit)\n"
           "  -t, --tries T            attempts per task before it fails (default 1)\n"
           "  -n, --nolock             do not lock DAGFILE\n"
           "  -r, --rescue PATH        rescue log (default DAGFILE.rescue)\n"
           "      --host-script PATH   run PATH once on each host before any task\n"
           "      --host-memory MB     memory of each host (0 or default: physical RAM)\n"
           "      --host-cpus N        CPUs of each host (0 or default: detected)\n"
           "      --host-gpus N        GPUs of each host (default: detected; 0: none)\n"
           "      --strict-limits      enforce each task's memory request\n"
           "      --max-wall-time MIN  abort the workflow after MIN minutes (default: the\n"
           "                           batch job's end less --drain-margin, if known)\n"
           "      --drain-margin SEC   stop this long before the batch job's end (180)\n"
           "      --task-time-limit SEC  default hard run-time limit of each task (none)\n"
           "      --kill-grace SEC     SIGTERM to SIGKILL grace for killed tasks (5)\n"
           "      --no-thread-env      do not set OMP_NUM_THREADS & co. from -c\n"
           "      --launch-threads N   threads per host that start tasks (default: one per\n"
           "                           CPU and one to spare below 8 CPUs, one per 2 CPUs\n"
           "                           from 8 on, none on one usable CPU; 0: the node\n"
           "                           agent's own thread; more than the CPUs: all but\n"
           "                           one wait for their task)\n"
           "      --threads N          the same as --launch-threads\n"
           "      --per-task-stdio     TASK.out.NNN / TASK.err.NNN files per attempt\n"
           "      --task-records all|failed  [cluster-task] records of every attempt (all,\n"
           "                           default) or of failed attempts only (failed)\n"
           "      --jobstate-log       write jobstate.log next to the DAG\n"
           "      --monitord-hack      write DAGFILE.dagman.out for pegasus-monitord\n"
           "      --no-resource-log    do not write DAGFILE.resource\n"
           "      --no-sleep-on-recv   accepted for PMC compatibility (never spins)\n"
           "      --maxfds N           descriptors cached for I/O forwarding\n"
           "      --keep-affinity      keep inherited CPU affinity and memory policy\n"
           "      --set-affinity       bind multicore tasks to CPUs (PMC_AFFINITY);\n"
           "                           not with --host-cpus\n"
           "      --master-only        rank 0 runs no tasks\n"
           "      --ranks-are-hosts    count every MPI rank as a host of its own (tests and\n"
           "                           benchmarks of several hosts on one machine)\n"
           "      --progress           live progress line on stderr (default: when stderr\n"
           "                           is a terminal)\n"
           "      --no-progress        no progress line\n"
           "      --status PATH        JSON status file, rewritten atomically every 2 s\n"
           "                           and at the end (docs/status-json.md)\n"
           "      --summary-json PATH  the end-of-run summary as JSON\n"
           "      --null-executor      benchmark the engine: every task completes at once\n"
           "                           without running; no output, no rescue log written\n"
           "      --listen ACCESS      take agents that join over the network (--join);\n"
           "                           write ACCESS, their key, mode 0600 (docs/join.md)\n"
           "      --listen-address E   ZeroMQ endpoint to bind (default tcp://*:*)\n"
           "      --min-hosts N        agents that must join before tasks start (1)\n"
           "      --node-timeout SEC   silence after which an agent or the master is lost (5)\n"
           "      --join ACCESS        run this host's tasks for the master of ACCESS\n"
           "\n"
           "One node agent per host runs tasks with all of the host's CPUs and memory;\n"
           "launch one MPI rank per host (mpiexec -ppn 1).  Extra ranks on a host wait idle\n"
           "(when rank 0 shares its host, the next rank there runs the tasks).\n"
           "\n"
           "Environment: PMC_HOST_SCRIPT, PMC_HOST_MEMORY, PMC_HOST_CPUS, PMC_HOST_GPUS,\n"
           "PMC_MAX_WALL_TIME,"
           " PMC_RANKS_ARE_HOSTS=1 (as --ranks-are-hosts).\n";
}

static int parse_u64(const char *s, uint64_t min, uint64_t *out)
{
    char *end;
    errno = 0;
    if (!s || !isdigit((unsigned char)*s)) /* strtoull would skip spaces and negate "-1" */
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v < min)
        return -1;
    *out = v;
    return 0;
}

/* A whole number from min to max; 0, or -1 (*out unchanged). */
static int parse_u32_range(const char *s, uint32_t min, uint32_t max, uint32_t *out)
{
    uint64_t v;
    if (parse_u64(s, min, &v) < 0 || v > max)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

static int parse_u32(const char *s, uint32_t min, uint32_t *out)
{
    return parse_u32_range(s, min, UINT32_MAX, out);
}

/* A host's CPUs (--host-cpus, PMC_HOST_CPUS) are at most HOST_CPUS_MAX, so
 * that a node's CPUs and prefetch window, and the hosts' sum, stay far
 * inside 32 bits (2^31 wrapped the node's room to 0: a run that never
 * started a task); its GPUs at most GPUS_MAX, the ids a host keeps (more
 * were dropped silently). */
#define HOST_CPUS_MAX 65536u
#define HOST_CPUS_EXPECTED "must be a whole number up to 65536 (0: detect)"
#define HOST_GPUS_EXPECTED "must be a whole number up to 1024 (0: none)"
#define HOST_MEMORY_EXPECTED "must be a whole number of MB up to 18446744073709551615 (0: detect)"
_Static_assert(GPUS_MAX == 1024, "HOST_GPUS_EXPECTED names GPUS_MAX");
_Static_assert(DAG_MAX_TRIES == 65535, "the -t/--tries message names DAG_MAX_TRIES");

/* A finite decimal number >= 0 (minutes or seconds). */
static int parse_nonneg(const char *s, double *out)
{
    char *end;
    errno = 0;
    if (!s || !*s)
        return -1;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v) || v < 0)
        return -1;
    *out = v;
    return 0;
}

static int bad_value(struct pmc_error *err, const char *opt, const char *val, const char *why)
{
    return pmc_errorf(err, "invalid value for %s: '%s' (%s)", opt, val ? val : "", why);
}

/* Defaults from the environment aliases (PMC manual "Environment Variables"). */
static int options_from_env(struct options *o, struct pmc_error *err)
{
    const char *v;
    if ((v = getenv("PMC_HOST_SCRIPT")) && *v)
        o->host_script = v;
    if ((v = getenv("PMC_HOST_MEMORY")) && *v && parse_u64(v, 0, &o->host_memory) < 0)
        return bad_value(err, "PMC_HOST_MEMORY", v, HOST_MEMORY_EXPECTED);
    if ((v = getenv("PMC_HOST_CPUS")) && *v &&
        parse_u32_range(v, 0, HOST_CPUS_MAX, &o->host_cpus) < 0)
        return bad_value(err, "PMC_HOST_CPUS", v, HOST_CPUS_EXPECTED);
    if ((v = getenv("PMC_HOST_GPUS")) && *v) {
        if (parse_u32_range(v, 0, GPUS_MAX, &o->host_gpus) < 0)
            return bad_value(err, "PMC_HOST_GPUS", v, HOST_GPUS_EXPECTED);
        o->host_gpus_set = true;
    }
    if ((v = getenv("PMC_RANKS_ARE_HOSTS")) && *v && strcmp(v, "0") != 0)
        o->ranks_are_hosts = true;
    if ((v = getenv("PMC_MAX_WALL_TIME")) && *v && parse_nonneg(v, &o->max_wall_time) < 0)
        return bad_value(err, "PMC_MAX_WALL_TIME", v, "must be a number of minutes >= 0");
    return 0;
}

static int options_flag(struct options *o, int c)
{
    switch (c) {
    case 'h':
        o->help = true;
        break;
    case 'V':
        o->version = true;
        break;
    case 'v':
        o->verbosity++;
        break;
    case 'q':
        o->verbosity--;
        break;
    case 's':
        o->skip_rescue = true;
        break;
    case 'n':
        o->nolock = true;
        break;
    case OPT_STRICT_LIMITS:
        o->strict_limits = true;
        break;
    case OPT_PER_TASK_STDIO:
        o->per_task_stdio = true;
        break;
    case OPT_JOBSTATE_LOG:
        o->jobstate_log = true;
        break;
    case OPT_MONITORD_HACK:
        o->monitord_hack = o->per_task_stdio = true;
        break;
    case OPT_NO_RESOURCE_LOG:
        o->no_resource_log = true;
        break;
    case OPT_NO_SLEEP_ON_RECV:
        o->no_sleep_on_recv = true;
        break;
    case OPT_KEEP_AFFINITY:
        o->keep_affinity = true;
        break;
    case OPT_SET_AFFINITY:
        o->set_affinity = true;
        break;
    case OPT_MASTER_ONLY:
        o->master_only = true;
        break;
    case OPT_NULL_EXECUTOR:
        o->null_executor = true;
        break;
    case OPT_RANKS_ARE_HOSTS:
        o->ranks_are_hosts = true;
        break;
    case OPT_PROGRESS:
        o->progress = 1;
        break;
    case OPT_NO_PROGRESS:
        o->progress = 0;
        break;
    case OPT_NO_THREAD_ENV:
        o->no_thread_env = true;
        break;
    default:
        return 0;
    }
    return 1;
}

/* The options whose value is a path, by their names in messages. */
static const char *path_option_name(int c)
{
    switch (c) {
    case 'o':
        return "-o/--stdout";
    case 'e':
        return "-e/--stderr";
    case 'r':
        return "-r/--rescue";
    case OPT_HOST_SCRIPT:
        return "--host-script";
    case OPT_STATUS:
        return "--status";
    case OPT_SUMMARY_JSON:
        return "--summary-json";
    case OPT_LISTEN:
        return "--listen";
    case OPT_LISTEN_ADDRESS:
        return "--listen-address";
    case OPT_JOIN:
        return "--join";
    default:
        return NULL;
    }
}

static int options_value(struct options *o, int c, const char *v, struct pmc_error *err)
{
    const char *path_opt = path_option_name(c);
    if (path_opt && !*v) /* "" would be found out only when written: after the run */
        return bad_value(err, path_opt, v, "must name a file");
    switch (c) {
    case 'o':
        o->out_path = v;
        return 0;
    case 'e':
        o->err_path = v;
        return 0;
    case 'r':
        o->rescue_path = v;
        return 0;
    case OPT_HOST_SCRIPT:
        o->host_script = v;
        return 0;
    case OPT_STATUS:
        o->status_path = v;
        return 0;
    case OPT_SUMMARY_JSON:
        o->summary_json_path = v;
        return 0;
    case OPT_LISTEN:
        o->listen_path = v;
        return 0;
    case OPT_LISTEN_ADDRESS:
        o->listen_address = v;
        return 0;
    case OPT_JOIN:
        o->join_path = v;
        return 0;
    case OPT_TASK_RECORDS:
        if (strcmp(v, "all") != 0 && strcmp(v, "failed") != 0)
            return bad_value(err, "--task-records", v, "must be all or failed");
        o->task_records_failed = v[0] == 'f';
        return 0;
    case OPT_MIN_HOSTS:
        return parse_u32_range(v, 1, 1u << 20, &o->min_hosts) < 0
                   ? bad_value(err, "--min-hosts", v, "must be a whole number from 1 to 1048576")
                   : 0;
    case OPT_NODE_TIMEOUT:
        return parse_nonneg(v, &o->node_timeout) < 0 || o->node_timeout < 0.1 ||
                       o->node_timeout > 86400
                   ? bad_value(err, "--node-timeout", v,
                               "must be a number of seconds from 0.1 to 86400")
                   : 0;
    case 'm':
        return parse_u32(v, 0, &o->max_failures) < 0
                   ? bad_value(err, "-m/--max-failures", v,
                               "must be a whole number from 0 to 4294967295")
                   : 0;
    case 't':
        return parse_u32_range(v, 1, DAG_MAX_TRIES, &o->tries) < 0
                   ? bad_value(err, "-t/--tries", v, "must be a whole number from 1 to 65535")
                   : 0;
    case OPT_HOST_CPUS:
        return parse_u32_range(v, 0, HOST_CPUS_MAX, &o->host_cpus) < 0
                   ? bad_value(err, "--host-cpus", v, HOST_CPUS_EXPECTED)
                   : 0;
    case OPT_HOST_MEMORY:
        return parse_u64(v, 0, &o->host_memory) < 0
                   ? bad_value(err, "--host-memory", v, HOST_MEMORY_EXPECTED)
                   : 0;
    case OPT_MAX_WALL_TIME:
        return parse_nonneg(v, &o->max_wall_time) < 0
                   ? bad_value(err, "--max-wall-time", v, "must be a number of minutes >= 0")
                   : 0;
    case OPT_HOST_GPUS:
        o->host_gpus_set = true;
        return parse_u32_range(v, 0, GPUS_MAX, &o->host_gpus) < 0
                   ? bad_value(err, "--host-gpus", v, HOST_GPUS_EXPECTED)
                   : 0;
    case OPT_TASK_TIME_LIMIT:
        return parse_nonneg(v, &o->task_time_limit) < 0 || o->task_time_limit > 4e6
                   ? bad_value(err, "--task-time-limit", v,
                               "must be a number of seconds >= 0, at most 4e6 (0: none)")
                   : 0;
    case OPT_KILL_GRACE:
        return parse_nonneg(v, &o->kill_grace) < 0 || o->kill_grace > 3600
                   ? bad_value(err, "--kill-grace", v, "must be a number of seconds in 0..3600")
                   : 0;
    case OPT_DRAIN_MARGIN:
        return parse_nonneg(v, &o->drain_margin) < 0
                   ? bad_value(err, "--drain-margin", v, "must be a number of seconds >= 0")
                   : 0;
    case OPT_LAUNCH_THREADS:
    case OPT_THREADS:
        o->launch_threads_set = true;
        return parse_u32(v, 0, &o->launch_threads) < 0 || o->launch_threads > LAUNCHER_MAX_THREADS
                   ? bad_value(err, c == OPT_THREADS ? "--threads" : "--launch-threads", v,
                               "must be a whole number in 0.." OPTIONS_STR(LAUNCHER_MAX_THREADS))
                   : 0;
    case OPT_MAXFDS:
        return parse_u32(v, 1, &o->maxfds) < 0
                   ? bad_value(err, "--maxfds", v, "must be a whole number from 1 to 4294967295")
                   : 0;
    }
    return pmc_errorf(err, "unknown option");
}

#define SHORT_OPTIONS ":hVvqso:e:m:t:nr:"

/* Name an unknown option as the user wrote it: glibc sets optopt to the
 * character of an unknown short option, but to the option's own value (a
 * short letter or an OPT_* number) for a long option given a value it does
 * not take (--nolock=yes). */
static int options_unknown(char **argv, int opt, struct pmc_error *err)
{
    const char *arg = argv[optind - 1];
    bool is_short_unknown = opt > 0 && opt < 256 && !strchr(SHORT_OPTIONS, opt);
    if (is_short_unknown && arg[0] == '-' && arg[1] != '-')
        return pmc_errorf(err, "unknown option '-%c'", opt);
    if (arg[0] == '-' && arg[1] == '-' && strchr(arg, '='))
        return pmc_errorf(err, "option '%.*s' takes no value", (int)(strchr(arg, '=') - arg), arg);
    return pmc_errorf(err, "unknown option '%s'", arg);
}

/* --join: an agent, which takes no DAGFILE (the master's run says it)
 * and none of the master's options. */
static int options_check_join(const struct options *o, int argc, char **argv, struct pmc_error *err)
{
    if (optind < argc)
        return pmc_errorf(err, "unexpected argument '%s': an agent (--join) takes no DAGFILE",
                          argv[optind]);
    if (o->listen_path || o->min_hosts || o->node_timeout || o->listen_address)
        return pmc_errorf(err, "--join cannot be used with --listen, --listen-address, "
                               "--min-hosts or --node-timeout (the master's options)");
    if (o->out_path || o->err_path || o->rescue_path || o->status_path || o->summary_json_path ||
        o->max_failures || o->tries != 1 || o->null_executor || o->per_task_stdio ||
        o->jobstate_log || o->monitord_hack || o->task_time_limit || o->task_records_failed)
        return pmc_errorf(err, "--join: -o, -e, -r, -m, -t, --status, --summary-json, "
                               "--null-executor, --per-task-stdio, --task-records, "
                               "--jobstate-log, --monitord-hack and --task-time-limit are the "
                               "master's options (give them to pmc-hybrid --listen)");
    if (o->set_affinity && o->host_cpus)
        return pmc_errorf(err, "--set-affinity cannot be used with --host-cpus or PMC_HOST_CPUS "
                               "(tasks are bound to the host's real CPUs)");
    return 0;
}

int options_parse(struct options *o, int argc, char **argv, struct pmc_error *err)
{
    memset(o, 0, sizeof *o);
    o->tries = 1;
    o->progress = -1;
    o->kill_grace = 5.0;
    o->drain_margin = 180.0;
    if (options_from_env(o, err) < 0)
        return -1;
    opterr = 0;
    optind = 0; /* glibc: 0 is the full reset (1 keeps a pointer into the last argv) */
    int c;
    while ((c = getopt_long(argc, argv, SHORT_OPTIONS, long_options, NULL)) != -1) {
        if (c == '?')
            return options_unknown(argv, optopt, err);
        if (c == ':')
            return pmc_errorf(err, "option '%s' needs a value", argv[optind - 1]);
        if (!options_flag(o, c) && options_value(o, c, optarg, err) < 0)
            return -1;
    }
    if (o->help || o->version)
        return 0;
    if (o->join_path)
        return options_check_join(o, argc, argv, err);
    if (!o->listen_path && (o->min_hosts || o->node_timeout || o->listen_address))
        return pmc_errorf(err, "--min-hosts, --node-timeout and --listen-address need --listen");
    if (optind >= argc)
        return pmc_errorf(err, "missing DAGFILE");
    if (optind + 1 < argc)
        return pmc_errorf(err, "unexpected argument '%s' after DAGFILE", argv[optind + 1]);
    o->dag_path = argv[optind];
    if (!*o->dag_path)
        return pmc_errorf(err, "invalid DAGFILE: '' (must name a file)");
    if (o->set_affinity && o->host_cpus)
        return pmc_errorf(err, "--set-affinity cannot be used with --host-cpus or PMC_HOST_CPUS "
                               "(tasks are bound to the host's real CPUs)");
    return 0;
}

int options_describe_run(const struct options *o, const char *dag_abs, char *buf, size_t size)
{
    int n =
        snprintf(buf, size, "dag %s\nnull-executor %d\nper-task-stdio %d\ntask-records-failed %d\n",
                 dag_abs, o->null_executor, o->per_task_stdio, o->task_records_failed);
    return n < 0 || (size_t)n >= size ? -1 : n;
}

/* "KEY 0|1" at *p (one line): 0 and the flag, or -1. */
static int adopt_flag(const char **p, const char *end, const char *key, bool *out)
{
    size_t k = strlen(key);
    if ((size_t)(end - *p) < k + 3 || memcmp(*p, key, k) != 0 || (*p)[k] != ' ' ||
        ((*p)[k + 1] != '0' && (*p)[k + 1] != '1') || (*p)[k + 2] != '\n')
        return -1;
    *out = (*p)[k + 1] == '1';
    *p += k + 3;
    return 0;
}

int options_adopt_run(struct options *o, const char *text, size_t len, char *dag_buf,
                      size_t dag_size, struct pmc_error *err)
{
    const char *p = text, *end = text + len;
    const char *nl = memchr(p, '\n', len);
    size_t path_len = nl ? (size_t)(nl - p) - 4 : 0;
    if (!nl || nl - p < 5 || memcmp(p, "dag /", 5) != 0 || path_len >= dag_size ||
        memchr(p, '\0', (size_t)(nl - p)))
        return pmc_errorf(err, "the master's description of the run has no absolute DAG path "
                               "(a master of another version?)");
    memcpy(dag_buf, p + 4, path_len);
    dag_buf[path_len] = '\0';
    p = nl + 1;
    if (adopt_flag(&p, end, "null-executor", &o->null_executor) < 0 ||
        adopt_flag(&p, end, "per-task-stdio", &o->per_task_stdio) < 0 ||
        adopt_flag(&p, end, "task-records-failed", &o->task_records_failed) < 0 || p != end)
        return pmc_errorf(err, "the master's description of the run is malformed (a master of "
                               "another version?)");
    o->dag_path = dag_buf;
    return 0;
}
