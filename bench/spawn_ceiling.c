/* spawn_ceiling.c - the raw process-spawn ceiling of this machine.
 *
 *   spawn_ceiling [-s SPAWNERS | -t THREADS] TASKS PARALLEL [PROGRAM [ARGS...]]
 *
 * Runs PROGRAM (default /bin/true) TASKS times, keeping PARALLEL children
 * alive at once: posix_spawn() (glibc: clone(CLONE_VM|CLONE_VFORK), the same
 * kind of spawn as the engine's launcher) and waitpid(-1), nothing else: no
 * scheduler, no output capture, no records.  The children inherit our stdio
 * (bench/run points it at /dev/null) and environment.  With -s SPAWNERS
 * (default 1, at most PARALLEL), that many forked single-threaded processes
 * share the work, each spawning its share of TASKS with its share of
 * PARALLEL in flight: one spawning thread is held in clone() until its
 * child's exec, so on a many-core machine one spawner is no ceiling
 * (docs/performance.md, "Larger machines, on earlier code").  With -t THREADS, that many threads of
 * this one process share the work instead, as the engine's launcher pool does: each claims the next
 * task while fewer than PARALLEL run and reaps whichever child ends (waitpid(-1)).  Comparing -t N
 * with -s N tells what sharing one process (its memory map, file table and signal state) costs a
 * spawn. Prints one line:
 *
 *   tasks=N parallel=P spawners=S threads=T wall_s=W tasks_per_s=X
 *   us_per_task=U failed=F
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
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
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

/* The work that -t's threads share: tasks claimed (started), children
 * alive, tasks reaped, failures; the first spawn or wait error. */
struct shared_loop {
    long tasks, par;
    char **child_argv;
    atomic_long started, running, done, failed;
    atomic_int error;
};

/* Reserve one of par places in flight and claim a task for it.  false
 * when every place is taken or every task claimed (nothing reserved). */
static bool claim_task(struct shared_loop *w)
{
    long r = atomic_load(&w->running);
    do {
        if (r >= w->par)
            return false;
    } while (!atomic_compare_exchange_weak(&w->running, &r, r + 1));
    if (atomic_fetch_add(&w->started, 1) < w->tasks)
        return true;
    atomic_fetch_sub(&w->started, 1);
    atomic_fetch_sub(&w->running, 1);
    return false;
}

/* One -t thread: start tasks while places are free, then reap any child
 * of the process, until every task is reaped or an error is seen. */
static void *shared_loop_thread(void *arg)
{
    struct shared_loop *w = arg;
    while (atomic_load(&w->done) < w->tasks && !atomic_load(&w->error)) {
        while (claim_task(w)) {
            pid_t pid;
            int rc = posix_spawn(&pid, w->child_argv[0], NULL, NULL, w->child_argv, environ);
            if (rc != 0) {
                fprintf(stderr, "spawn_ceiling: %s: %s\n", w->child_argv[0], strerror(rc));
                atomic_store(&w->error, 1);
                atomic_fetch_sub(&w->running, 1);
                break;
            }
        }
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == ECHILD) { /* another thread reaped the last; or none started yet */
                sched_yield();
                continue;
            }
            if (errno != EINTR) {
                perror("spawn_ceiling: waitpid");
                atomic_store(&w->error, 1);
            }
            continue;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            atomic_fetch_add(&w->failed, 1);
        atomic_fetch_sub(&w->running, 1);
        atomic_fetch_add(&w->done, 1);
    }
    return NULL;
}

/* Run the tasks with nthreads threads of this process sharing them.
 * Returns the failed count, or -1 (after a message) when a thread could
 * not start or a spawn or a wait failed; children already started are
 * reaped first. */
static long run_threads(long nthreads, long tasks, long par, char **child_argv)
{
    struct shared_loop w = {.tasks = tasks, .par = par, .child_argv = child_argv};
    pthread_t th[nthreads];
    long n = 0;
    for (; n < nthreads; n++) {
        int rc = pthread_create(&th[n], NULL, shared_loop_thread, &w);
        if (rc != 0) {
            fprintf(stderr, "spawn_ceiling: pthread_create: %s\n", strerror(rc));
            atomic_store(&w.error, 1);
            break;
        }
        pthread_setname_np(th[n], "spawner"); /* what the tests count */
    }
    for (long i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    if (!atomic_load(&w.error))
        return atomic_load(&w.failed);
    while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
        ;
    return -1;
}

static int usage(void)
{
    fprintf(stderr, "usage: spawn_ceiling [-s SPAWNERS | -t THREADS] TASKS PARALLEL "
                    "[PROGRAM [ARGS...]]\n");
    return 2;
}

int main(int argc, char **argv)
{
    long spawners = 1, threads = 1;
    int c;
    while ((c = getopt(argc, argv, "+s:t:")) != -1) {
        long *into = c == 's' ? &spawners : c == 't' ? &threads : NULL;
        if (!into || (*into = strtol(optarg, NULL, 10)) < 1)
            return usage();
    }
    if (argc - optind < 2 || (spawners > 1 && threads > 1))
        return usage();
    long tasks = strtol(argv[optind], NULL, 10), par = strtol(argv[optind + 1], NULL, 10);
    if (tasks < 1 || par < 1 || spawners > par || threads > par || threads > 1024) {
        fprintf(stderr, "spawn_ceiling: TASKS and PARALLEL must be >= 1, SPAWNERS and THREADS "
                        "<= PARALLEL, THREADS <= 1024\n");
        return 2;
    }
    char *dflt[] = {"/bin/true", NULL};
    char **child_argv = argc - optind > 2 ? argv + optind + 2 : dflt;
    double t0 = mono_s();
    long failed = spawners > 1  ? run_spawners(spawners, tasks, par, child_argv)
                  : threads > 1 ? run_threads(threads, tasks, par, child_argv)
                                : spawn_loop(tasks, par, child_argv);
    if (failed < 0)
        return 1;
    double wall = mono_s() - t0;
    printf("tasks=%ld parallel=%ld spawners=%ld threads=%ld wall_s=%.6f tasks_per_s=%.1f "
           "us_per_task=%.2f failed=%ld\n",
           tasks, par, spawners, threads, wall, tasks / wall, wall * 1e6 / tasks, failed);
    return failed ? 1 : 0;
}
