/* spawn_ceiling.c - the raw process-spawn ceiling of this machine.
 *
 *   spawn_ceiling TASKS PARALLEL [PROGRAM [ARGS...]]
 *
 * Runs PROGRAM (default /bin/true) TASKS times, keeping PARALLEL children
 * alive at once: posix_spawn() (glibc: clone(CLONE_VM|CLONE_VFORK), the same
 * kind of spawn as the engine's launcher) and waitpid(-1), nothing else: no
 * scheduler, no output capture, no records.  The children inherit our stdio
 * (bench/run points it at /dev/null) and environment.  Prints one line:
 *
 *   tasks=N parallel=P wall_s=W tasks_per_s=X us_per_task=U failed=F
 *
 * wall_s runs from the first spawn to the last reap.  This is the ceiling
 * that pmc-hybrid's throughput on the same tasks is compared with (docs/design.md
 * section 8), so bench/run measures both in the same run, interleaved.
 * Exit status 1 when a spawn fails or a child does not exit 0.
 */
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

extern char **environ;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: spawn_ceiling TASKS PARALLEL [PROGRAM [ARGS...]]\n");
        return 2;
    }
    long tasks = strtol(argv[1], NULL, 10), par = strtol(argv[2], NULL, 10);
    if (tasks < 1 || par < 1) {
        fprintf(stderr, "spawn_ceiling: TASKS and PARALLEL must be >= 1\n");
        return 2;
    }
    char *dflt[] = {"/bin/true", NULL};
    char **child_argv = argc > 3 ? argv + 3 : dflt;
    long started = 0, done = 0, failed = 0, running = 0;
    double t0 = mono_s();
    while (done < tasks) {
        while (running < par && started < tasks) {
            pid_t pid;
            int rc = posix_spawn(&pid, child_argv[0], NULL, NULL, child_argv, environ);
            if (rc != 0) {
                fprintf(stderr, "spawn_ceiling: %s: %s\n", child_argv[0], strerror(rc));
                return 1;
            }
            started++;
            running++;
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            perror("spawn_ceiling: waitpid");
            return 1;
        }
        running--;
        done++;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    double wall = mono_s() - t0;
    printf("tasks=%ld parallel=%ld wall_s=%.6f tasks_per_s=%.1f us_per_task=%.2f failed=%ld\n",
           tasks, par, wall, tasks / wall, wall * 1e6 / tasks, failed);
    return failed ? 1 : 0;
}
