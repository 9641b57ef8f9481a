/* mpi_survive.c - can an MPICH job outlive one of its ranks?  A probe, not
 * part of pmc-hybrid: it answers, for the installed MPICH, the question of
 * docs/reliability.md ("Rank loss"): with `mpiexec -disable-auto-cleanup`
 * and MPI_ERRORS_RETURN, does rank 0 survive the SIGKILL of another rank,
 * notice it, and carry on with the others?
 *
 *   mpicc -o mpi_survive mpi_survive.c
 *   mpiexec [-disable-auto-cleanup] -n 4 ./mpi_survive [VICTIM [DIE_MS [WATCH_MS]]]
 *
 * Every rank sends rank 0 a heartbeat (tag HEARTBEAT) every 20 ms through
 * MPI_Send, the way node agents send RESULTS; rank VICTIM (default 2) kills
 * itself with SIGKILL after DIE_MS (default 500) ms, as the OOM killer or a
 * node crash would.  Rank 0 polls with MPI_Iprobe(MPI_ANY_SOURCE) and
 * MPI_Recv under MPI_ERRORS_RETURN and prints, with a time stamp, each
 * error (class and text) and when a rank's heartbeats stop (timeout
 * HEARTBEAT_TIMEOUT_MS).  After WATCH_MS (default 3000) it tries, in order,
 * each step that a master re-queuing the dead node's tasks would need, and
 * prints what each one returns (or that it hangs: every rank arms alarm()
 * so that a hang ends as SIGALRM, visible to mpiexec):
 *
 *   1. MPI_Isend to the dead rank and MPI_Test for 1 s;
 *   2. MPIX_Comm_failure_ack + MPIX_Comm_failure_get_acked (MPICH's ULFM
 *      prototype): does the library know which rank failed?
 *   3. a STOP message to every survivor and their replies (point-to-point
 *      traffic between survivors still works?);
 *   4. MPIX_Comm_shrink (a collective over the survivors);
 *   5. MPI_Finalize (a barrier through the process manager).
 *
 * With MPI_SURVIVE_LOG=DIR each rank also appends its lines to DIR/rankN.log
 * (a rank's stdout goes through the hydra proxy, which may die first).
 * Exit status: 0 from every survivor that got through MPI_Finalize.
 */
#include <mpi.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HEARTBEAT 1
#define STOP 2
#define BYE 3
#define HEARTBEAT_MS 20
#define HEARTBEAT_TIMEOUT_MS 300

static double t0;
static int rank, size;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void say(const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    printf("[%+8.1f ms] rank %d: %s\n", now_ms() - t0, rank, buf);
    fflush(stdout);
    const char *dir = getenv("MPI_SURVIVE_LOG"); /* stdout dies with the hydra proxy */
    if (dir) {
        char path[1024];
        snprintf(path, sizeof path, "%s/rank%d.log", dir, rank);
        FILE *f = fopen(path, "a");
        if (f) {
            fprintf(f, "[%+8.1f ms] rank %d: %s\n", now_ms() - t0, rank, buf);
            fclose(f);
        }
    }
}

static const char *err_text(int rc)
{
    static char text[MPI_MAX_ERROR_STRING + 64];
    char s[MPI_MAX_ERROR_STRING];
    int len = 0, cls = 0;
    MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, s, &len);
    const char *name = cls == MPIX_ERR_PROC_FAILED           ? "MPIX_ERR_PROC_FAILED"
                       : cls == MPIX_ERR_PROC_FAILED_PENDING ? "MPIX_ERR_PROC_FAILED_PENDING"
                       : cls == MPIX_ERR_REVOKED             ? "MPIX_ERR_REVOKED"
                                                             : "";
    snprintf(text, sizeof text, "error class %d %s: %.300s", cls, name, s);
    return text;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Ranks other than 0: heartbeats until STOP, then BYE, then finalize. */
static int worker(int victim, int die_ms)
{
    int seq = 0;
    for (;;) {
        if (rank == victim && now_ms() - t0 >= die_ms) {
            say("SIGKILL to myself");
            raise(SIGKILL);
        }
        int rc = MPI_Send(&seq, 1, MPI_INT, 0, HEARTBEAT, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            say("MPI_Send of heartbeat %d: %s", seq, err_text(rc));
            break;
        }
        seq++;
        int flag = 0;
        MPI_Status st;
        rc = MPI_Iprobe(0, STOP, MPI_COMM_WORLD, &flag, &st);
        if (rc != MPI_SUCCESS) {
            say("MPI_Iprobe: %s", err_text(rc));
            break;
        }
        if (flag) {
            int x;
            MPI_Recv(&x, 1, MPI_INT, 0, STOP, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            rc = MPI_Send(&seq, 1, MPI_INT, 0, BYE, MPI_COMM_WORLD);
            say("got STOP after %d heartbeats; BYE sent (%s)", seq,
                rc == MPI_SUCCESS ? "ok" : err_text(rc));
            break;
        }
        sleep_ms(HEARTBEAT_MS);
    }
    MPI_Comm newcomm;
    int rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &newcomm);
    say("MPIX_Comm_shrink: %s", rc == MPI_SUCCESS ? "ok" : err_text(rc));
    rc = MPI_Finalize();
    say("MPI_Finalize returned %d", rc);
    return 0;
}

/* Rank 0: watch heartbeats, then try the steps of a recovery. */
static int master(int victim, int watch_ms)
{
    double *last = calloc((size_t)size, sizeof *last);
    int *silent = calloc((size_t)size, sizeof *silent);
    for (int r = 1; r < size; r++)
        last[r] = now_ms();
    int errors = 0;
    while (now_ms() - t0 < watch_ms) {
        int flag = 0;
        MPI_Status st;
        int rc = MPI_Iprobe(MPI_ANY_SOURCE, HEARTBEAT, MPI_COMM_WORLD, &flag, &st);
        if (rc != MPI_SUCCESS) {
            if (errors++ < 5)
                say("MPI_Iprobe(ANY_SOURCE): %s", err_text(rc));
            sleep_ms(5);
            continue;
        }
        if (flag) {
            int seq;
            rc = MPI_Recv(&seq, 1, MPI_INT, st.MPI_SOURCE, HEARTBEAT, MPI_COMM_WORLD,
                          MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS && errors++ < 5)
                say("MPI_Recv from %d: %s", st.MPI_SOURCE, err_text(rc));
            last[st.MPI_SOURCE] = now_ms();
            continue;
        }
        for (int r = 1; r < size; r++)
            if (!silent[r] && now_ms() - last[r] > HEARTBEAT_TIMEOUT_MS) {
                silent[r] = 1;
                say("no heartbeat from rank %d for %d ms: declared dead", r, HEARTBEAT_TIMEOUT_MS);
            }
        sleep_ms(1);
    }
    say("watch over: %d MPI errors seen while polling", errors);

    /* 1. send to the dead rank */
    int x = 0;
    MPI_Request req;
    int rc = MPI_Isend(&x, 1, MPI_INT, victim, STOP, MPI_COMM_WORLD, &req);
    say("step 1: MPI_Isend to dead rank %d: %s", victim, rc == MPI_SUCCESS ? "ok" : err_text(rc));
    if (rc == MPI_SUCCESS) {
        int done = 0;
        double until = now_ms() + 1000;
        while (!done && now_ms() < until) {
            rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
            if (rc != MPI_SUCCESS)
                break;
            sleep_ms(1);
        }
        say("step 1: MPI_Test: %s", rc != MPI_SUCCESS ? err_text(rc)
                                    : done            ? "completed (eager send: no delivery proof)"
                                                      : "still pending after 1 s");
    }

    /* 2. does MPICH know who failed? */
    rc = MPIX_Comm_failure_ack(MPI_COMM_WORLD);
    say("step 2: MPIX_Comm_failure_ack: %s", rc == MPI_SUCCESS ? "ok" : err_text(rc));
    MPI_Group failed;
    rc = MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &failed);
    if (rc == MPI_SUCCESS) {
        int n = 0;
        MPI_Group_size(failed, &n);
        say("step 2: MPIX_Comm_failure_get_acked: %d failed rank(s) known to MPICH", n);
    } else {
        say("step 2: MPIX_Comm_failure_get_acked: %s", err_text(rc));
    }

    /* 3. survivors still talk? */
    int byes = 0;
    for (int r = 1; r < size; r++) {
        if (r == victim)
            continue;
        rc = MPI_Send(&x, 1, MPI_INT, r, STOP, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS) {
            say("step 3: MPI_Send STOP to %d: %s", r, err_text(rc));
            continue;
        }
        int seq;
        MPI_Status st;
        for (;;) { /* drain heartbeats until the BYE */
            rc = MPI_Recv(&seq, 1, MPI_INT, r, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
            if (rc != MPI_SUCCESS || st.MPI_TAG == BYE)
                break;
        }
        if (rc == MPI_SUCCESS)
            byes++;
        else
            say("step 3: MPI_Recv from %d: %s", r, err_text(rc));
    }
    say("step 3: %d of %d survivors answered STOP with BYE", byes, size - 2);

    /* 4. shrink */
    MPI_Comm newcomm;
    rc = MPIX_Comm_shrink(MPI_COMM_WORLD, &newcomm);
    if (rc == MPI_SUCCESS) {
        int n = 0;
        MPI_Comm_size(newcomm, &n);
        say("step 4: MPIX_Comm_shrink: ok, %d ranks left", n);
    } else {
        say("step 4: MPIX_Comm_shrink: %s", err_text(rc));
    }

    /* 5. finalize */
    say("step 5: MPI_Finalize ...");
    rc = MPI_Finalize();
    say("step 5: MPI_Finalize returned %d", rc);
    free(last);
    free(silent);
    return 0;
}

int main(int argc, char **argv)
{
    int provided;
    t0 = now_ms();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int victim = argc > 1 ? atoi(argv[1]) : 2;
    int die_ms = argc > 2 ? atoi(argv[2]) : 500;
    int watch_ms = argc > 3 ? atoi(argv[3]) : 3000;
    if (size < 3 || victim <= 0 || victim >= size) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n N>=3 %s [VICTIM (1..N-1) [DIE_MS [WATCH_MS]]]\n",
                    argv[0]);
        MPI_Finalize();
        return 2;
    }
    alarm((unsigned)(watch_ms / 1000 + 20)); /* a hang ends as SIGALRM */
    if (rank == 0)
        say("%d ranks, MPI_THREAD_MULTIPLE %s, MPI_ERRORS_RETURN; rank %d dies at %d ms", size,
            provided == MPI_THREAD_MULTIPLE ? "granted" : "NOT granted", victim, die_ms);
    return rank == 0 ? master(victim, watch_ms) : worker(victim, die_ms);
}
