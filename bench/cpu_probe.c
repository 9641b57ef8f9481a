/* cpu_probe.c - LD_PRELOAD probe: the CPU time of pmc-hybrid itself.
 *
 *   PMC_BENCH_PROBE_DIR=DIR LD_PRELOAD=.../libpmc_cpu_probe.so pmc-hybrid ...
 *   PMC_BENCH_PROBE_DIR=DIR LD_PRELOAD=... mpiexec -n 4 pmc-hybrid ...
 *
 * Why: wait4()/time(1) report a child's CPU *including its reaped children*,
 * i.e. the tasks pmc-hybrid ran; and with mpiexec they see hydra, not the
 * ranks.  This probe is loaded into every process of the command line (the
 * environment reaches the ranks through mpiexec and hydra_pmi_proxy) but
 * acts only in processes whose program name is pmc-hybrid (or
 * PMC_BENCH_PROBE_NAME): its constructor notes the start time and removes
 * LD_PRELOAD from the environment, so the tasks the engine spawns do not
 * load it; its destructor, which runs in exit() after main() returned (all
 * of the engine's threads are joined by then), writes
 *
 *   DIR/probe.PID:  pid=P rank=R user_s=U sys_s=S maxrss_kb=M wall_s=W
 *
 * from getrusage(RUSAGE_SELF): every thread of the process, dead or alive,
 * and none of its children, with microsecond resolution.  rank is PMI_RANK
 * (set by MPICH's hydra) or -1.  A process killed by a signal or ended by
 * _exit() writes nothing; bench/run reports that as a missing figure.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

extern char *program_invocation_short_name;

static int probe_active;
static char probe_path[4096];
static struct timespec probe_t0;

static double ts_s(struct timespec ts)
{
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

__attribute__((constructor)) static void probe_init(void)
{
    const char *dir = getenv("PMC_BENCH_PROBE_DIR");
    const char *name = getenv("PMC_BENCH_PROBE_NAME");
    if (!dir || strcmp(program_invocation_short_name, name ? name : "pmc-hybrid") != 0)
        return;
    clock_gettime(CLOCK_MONOTONIC, &probe_t0);
    int n = snprintf(probe_path, sizeof probe_path, "%s/probe.%ld", dir, (long)getpid());
    if (n <= 0 || (size_t)n >= sizeof probe_path)
        return;
    probe_active = 1;
    unsetenv("LD_PRELOAD"); /* the engine's tasks inherit environ: keep them clean */
}

__attribute__((destructor)) static void probe_fini(void)
{
    if (!probe_active)
        return;
    int saved = errno;
    struct rusage ru;
    struct timespec t1;
    getrusage(RUSAGE_SELF, &ru);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    const char *rank = getenv("PMI_RANK");
    char line[256];
    int n = snprintf(line, sizeof line,
                     "pid=%ld rank=%s user_s=%.6f sys_s=%.6f maxrss_kb=%ld wall_s=%.6f\n",
                     (long)getpid(), rank ? rank : "-1", tv_s(ru.ru_utime), tv_s(ru.ru_stime),
                     ru.ru_maxrss, ts_s(t1) - ts_s(probe_t0));
    int fd = open(probe_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (n > 0 && write(fd, line, (size_t)n) < 0)
            n = 0;
        close(fd);
    }
    errno = saved;
}
