/* spawn_ceiling.c - the raw process-spawn ceiling of this machine.
 *
 *   spawn_ceiling [-s SPAWNERS] TASKS PARALLEL [PROGRAM [ARGS...]]
 *
 * Runs PROGRAM (default /bin/true) TASKS times, keeping PARALLEL children
 * alive at once: posix_spawn() (glibc: clone(CLONE_VM|CLONE_VFORK), the same
 * kind of spawn as the engine's launcher) and waitpid(-1), nothing else: no
 * scheduler, no output capture, no records.  The children inherit our stdio
 * (bench/run points it at /dev/null) and environment.  With -s SPAWNERS
 * (default 1, at most PARALLEL), that many forked single-threaded processes
 * share the work, each spawning its share of TASKS with its share of
 * PARALLEL in flight: one spawning thread is held in clone() until its
 * child's exec, so on a many-core machine one spawner is no ceiling (16
 * cores: 8.3k tasks/s with 1 spawner, 19.3k with 16; docs/performance.md
 * section 16).  Prints one line:
 *
 *   tasks=N parallel=P spawners=S wall_s=W tasks_per_s=X us_per_task=U failed=F
 *
 * wall_s runs from the first spawn (the first fork with -s) to the last
 * reap.  This is the ceiling
 * that pmc-hybrid's throughput on the same tasks is compared with (docs/design.md
 * section 8), so bench/run measures both in the same run, interleaved.
 * Exit status 1 when a spawn fails (nothing printed) or a child does not
 * exit 0 (failed=F counts them; with -s each spawner's count is capped at
 * 125).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Spawn child_argv tasks times, par children alive at once.  Returns the
 * number of children that did not exit 0, or -1 (after a message) when a
 * spawn or a wait fails. */
static long spawn_loop(long tasks, long par, char **child_argv)
{
    long started = 0, done = 0, failed = 0, running = 0;
    while (done < tasks) {
        while (running < par && started < tasks) {
            pid_t pid;
            int rc = posix_spawn(&pid, child_argv[0], NULL, NULL, child_argv, environ);
            if (rc != 0) {
                fprintf(stderr, "spawn_ceiling: %s: %s\n", child_argv[0], strerror(rc));
                return -1;
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
            return -1;
        }
        running--;
        done++;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed++;
    }
    return failed;
}

#define SPAWNER_SPAWN_ERROR 126 /* a spawner's exit status when a spawn or wait failed */

/* Wait for the n spawners in pid[] and sum the failed tasks they report
 * in their exit statuses (0..125, capped).  -1 when one could not spawn
 * or wait, or was killed. */
static long wait_spawners(const pid_t *pid, long n)
{
    long failed = 0;
    bool broken = false;
    for (long i = 0; i < n; i++) {
        int status;
        while (waitpid(pid[i], &status, 0) < 0)
            if (errno != EINTR) {
                perror("spawn_ceiling: waitpid");
                return -1;
            }
        if (!WIFEXITED(status) || WEXITSTATUS(status) == SPAWNER_SPAWN_ERROR)
            broken = true;
        else
            failed += WEXITSTATUS(status);
    }
    return broken ? -1 : failed;
}

/* Fork spawners processes, spawner i running its share of tasks and of par
 * (the first ones take the remainders), and wait for them.  Returns the
 * number of tasks that did not exit 0 (each spawner's count capped at
 * 125), or -1 (after a message) when a fork, a spawn or a wait failed;
 * spawners already started are then killed and collected. */
static long run_spawners(long spawners, long tasks, long par, char **child_argv)
{
    pid_t *pid = calloc((size_t)spawners, sizeof *pid);
    if (!pid) {
        perror("spawn_ceiling");
        return -1;
    }
    long n = 0;
    for (; n < spawners; n++) {
        long my_tasks = tasks / spawners + (n < tasks % spawners);
        long my_par = par / spawners + (n < par % spawners);
        if ((pid[n] = fork()) < 0) {
            perror("spawn_ceiling: fork");
            for (long i = 0; i < n; i++)
                kill(pid[i], SIGKILL);
            wait_spawners(pid, n);
            free(pid);
            return -1;
        }
        if (pid[n] == 0) {
            long f = my_tasks ? spawn_loop(my_tasks, my_par, child_argv) : 0;
            _exit(f < 0 ? SPAWNER_SPAWN_ERROR : f > 125 ? 125 : (int)f);
        }
    }
    long failed = wait_spawners(pid, n);
    free(pid);
    return failed;
}

static int usage(void)
{
    fprintf(stderr, "usage: spawn_ceiling [-s SPAWNERS] TASKS PARALLEL [PROGRAM [ARGS...]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long spawners = 1;
    int c;
    while ((c = getopt(argc, argv, "+s:")) != -1) {
        if (c != 's' || (spawners = strtol(optarg, NULL, 10)) < 1)
            return usage();
    }
    if (argc - optind < 2)
        return usage();
    long tasks = strtol(argv[optind], NULL, 10), par = strtol(argv[optind + 1], NULL, 10);
    if (tasks < 1 || par < 1 || spawners > par) {
        fprintf(stderr, "spawn_ceiling: TASKS and PARALLEL must be >= 1, SPAWNERS <= PARALLEL\n");
        return 2;
    }
    char *dflt[] = {"/bin/true", NULL};
    char **child_argv = argc - optind > 2 ? argv + optind + 2 : dflt;
    double t0 = mono_s();
    long failed = spawners == 1 ? spawn_loop(tasks, par, child_argv)
                                : run_spawners(spawners, tasks, par, child_argv);
    if (failed < 0)
        return 1;
    double wall = mono_s() - t0;
    printf("tasks=%ld parallel=%ld spawners=%ld wall_s=%.6f tasks_per_s=%.1f us_per_task=%.2f "
           "failed=%ld\n",
           tasks, par, spawners, wall, tasks / wall, wall * 1e6 / tasks, failed);
    return failed ? 1 : 0;
}
