// test_watchdog.cc - unit tests of engine/exec/watchdog.h.
//
// An "agent" (a forked child of the test) starts a watchdog, spawns a task
// that leaves a background process in its process group, and dies of
// SIGKILL without stopping anything: the whole group must be gone within
// seconds and the watchdog must say so on stderr.  An orderly
// watchdog_stop() kills the groups still recorded and spares the cleared
// ones.  A killed agent's running tasks' captured output is saved into the
// rank's files, with a note naming each task, also a task that was already
// gone when the watchdog looked.  The test process is a child
// subreaper, so orphans come back to it and are reaped here (a container's
// init may not reap them).
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <string>

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "engine/exec/watchdog.h"
#include "io/taskio.h"
#include "testutil.h"

using namespace testutil;

namespace
{

char *const kEnv[] = {(char *)"PATH=/bin:/usr/bin", nullptr};

void reap_orphans()
{
    while (waitpid(-1, nullptr, WNOHANG) > 0)
        ;
}

// Poll (reaping orphans) until no process is left in group pgid: true when
// that happened within seconds.
bool group_gone_within(pid_t pgid, double seconds)
{
    for (int i = 0; i < seconds * 100; i++) {
        reap_orphans();
        if (kill(-pgid, 0) < 0 && errno == ESRCH)
            return true;
        usleep(10000);
    }
    return false;
}

pid_t spawn_recorded(struct watchdog *w, uint32_t slot, const char *script, int *pidfd)
{
    char *const argv[] = {(char *)"/bin/sh", (char *)"-c", (char *)script, nullptr};
    int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
    struct spawn_request req = {};
    req.argv = argv;
    req.envp = kEnv;
    req.stdout_fd = devnull;
    req.stderr_fd = devnull;
    req.record_pgid = watchdog_entry(w, slot);
    pid_t pid = -1;
    int e = spawn_task(&req, &pid, pidfd);
    close(devnull);
    return e == 0 ? pid : -1;
}

class Watchdog : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        ASSERT_TRUE(adopted_.ok());
    }
    void TearDown() override
    {
        reap_orphans(); // adopted_ ends the subreaper after this
    }

    AdoptedOrphans adopted_;
};

TEST_F(Watchdog, KilledAgentTakesItsTasksGroupsWithIt)
{
    int report[2], err[2];
    ASSERT_EQ(0, pipe(report));
    ASSERT_EQ(0, pipe(err));
    pid_t agent = fork();
    ASSERT_GE(agent, 0);
    if (agent == 0) {
        dup2(err[1], 2); // the watchdog inherits this stderr
        close(err[0]);
        close(err[1]);
        struct pmc_error e;
        struct watchdog *w = watchdog_start(7, &e);
        int pidfd = -1;
        pid_t pgid = w ? spawn_recorded(w, 3, "sleep 60 & exec sleep 61", &pidfd) : -1;
        // the child stored its pid before exec: it is recorded already
        volatile pid_t *entry = watchdog_entry(w, 3);
        pid_t recorded = entry ? *entry : -1;
        pid_t msg[2] = {pgid, recorded};
        if (write(report[1], msg, sizeof msg) != (ssize_t)sizeof msg)
            _exit(1);
        usleep(200000);          // let the shell start its background sleep
        kill(getpid(), SIGKILL); // no cleanup of any kind
        _exit(2);
    }
    close(report[1]);
    close(err[1]);
    pid_t msg[2] = {-1, -1};
    ASSERT_EQ((ssize_t)sizeof msg, read(report[0], msg, sizeof msg));
    close(report[0]);
    ASSERT_GT(msg[0], 0) << "the agent could not start the watchdog or the task";
    EXPECT_EQ(msg[0], msg[1]) << "the table entry holds the task's process group";
    int status = 0;
    ASSERT_EQ(agent, waitpid(agent, &status, 0));
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_TRUE(group_gone_within(msg[0], 5.0)) << "task group " << msg[0] << " outlived its agent";
    std::string text;
    char buf[256];
    ssize_t n;
    while ((n = read(err[0], buf, sizeof buf)) > 0)
        text.append(buf, (size_t)n);
    close(err[0]);
    EXPECT_NE(std::string::npos, text.find("node agent of rank 7 ended without stopping its tasks"))
        << text;
    EXPECT_NE(std::string::npos, text.find("killed 1 task process groups")) << text;
}

// A capture file (io/taskio.h) holding text.
int capture_holding(const char *text)
{
    int fd = taskio_capture_open();
    if (fd >= 0 && write(fd, text, strlen(text)) != (ssize_t)strlen(text)) {
        close(fd);
        return -1;
    }
    return fd;
}

// An agent whose task-a runs in slot 2 dies of SIGKILL: the watchdog must
// append what task-a wrote so far (only in its capture files) to the
// rank's out and err files, each with a note naming it, and leave nothing
// for slot 5's task-b, not running.  task_gone: task-a was killed and
// reaped before the agent died but is still recorded, as when its
// PR_SET_PDEATHSIG killed it at the agent's death and whoever inherited it
// reaped it before the watchdog looked (its kill then finds no group).
void expect_output_saved(bool task_gone)
{
    char dir[] = "/tmp/pmc-watchdog-test.XXXXXX";
    ASSERT_NE(nullptr, mkdtemp(dir));
    std::string out_path = std::string(dir) + "/wf.dag.out.7";
    std::string err_path = std::string(dir) + "/wf.dag.err.7";
    int report[2];
    ASSERT_EQ(0, pipe(report));
    pid_t agent = fork();
    ASSERT_GE(agent, 0);
    if (agent == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, 2); // the watchdog's message
        struct pmc_error e;
        struct watchdog *w = watchdog_start(7, &e);
        int out = open(out_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        int a_out = capture_holding("partial-out"), a_err = capture_holding("partial-err\n");
        int b_out = capture_holding("idle-out\n"), b_err = capture_holding("idle-err\n");
        int lent = watchdog_lend(w, WATCHDOG_OUTPUTS, out, err) |
                   watchdog_lend(w, 2, a_out, a_err) | watchdog_lend(w, 5, b_out, b_err);
        watchdog_name(w, 2, "task-a");
        watchdog_name(w, 5, "task-b");
        int pidfd = -1;
        pid_t pgid = w && lent == 0 ? spawn_recorded(w, 2, "exec sleep 60", &pidfd) : -1;
        if (task_gone && pgid > 0 &&
            (kill(-pgid, SIGKILL) < 0 || waitpid(pgid, nullptr, 0) != pgid))
            pgid = -1; // (its watchdog entry stays)
        if (write(report[1], &pgid, sizeof pgid) != (ssize_t)sizeof pgid)
            _exit(1);
        kill(getpid(), SIGKILL);
        _exit(2);
    }
    close(report[1]);
    pid_t pgid = -1;
    ASSERT_EQ((ssize_t)sizeof pgid, read(report[0], &pgid, sizeof pgid));
    close(report[0]);
    ASSERT_GT(pgid, 0) << "the agent could not start the watchdog, lend its files or spawn";
    ASSERT_EQ(agent, waitpid(agent, nullptr, 0));
    EXPECT_TRUE(group_gone_within(pgid, 5.0));
    const std::string note = "pmc-hybrid: task task-a cut short: the node agent of rank 7 ended "
                             "while it ran; its output so far is above (";
    for (int i = 0; i < 500 && read_file(err_path).find(note) == std::string::npos; i++)
        usleep(10000); // the watchdog writes the err file last
    EXPECT_EQ("partial-out\n" + note + "11 bytes)\n", read_file(out_path));
    EXPECT_EQ("partial-err\n" + note + "12 bytes)\n", read_file(err_path));
    unlink(out_path.c_str());
    unlink(err_path.c_str());
    rmdir(dir);
}

TEST_F(Watchdog, KilledAgentLeavesItsTasksOutputInTheRankFiles)
{
    expect_output_saved(false);
}

// Before, the watchdog saved nothing when its own kill found no group:
// under ThreadSanitizer the test reaped task-a first in 16 of 30 runs of
// the test above, and nothing was saved.
TEST_F(Watchdog, TaskAlreadyGoneWhenTheWatchdogLooksHasItsOutputSaved)
{
    expect_output_saved(true);
}

TEST_F(Watchdog, OrderlyStopKillsRecordedGroupsAndSparesClearedOnes)
{
    struct pmc_error e;
    struct watchdog *w = watchdog_start(0, &e);
    ASSERT_NE(nullptr, w) << e.text;
    ASSERT_GT(watchdog_pid(w), 0);
    std::string comm;
    for (int i = 0; i < 200 && comm != "pmc-watchdog\n"; i++) { // it names itself after fork
        usleep(5000);
        char path[64], buf[32] = {};
        snprintf(path, sizeof path, "/proc/%d/comm", (int)watchdog_pid(w));
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
        if (fd >= 0)
            close(fd);
        comm = n > 0 ? std::string(buf, (size_t)n) : "";
    }
    EXPECT_EQ("pmc-watchdog\n", comm) << "bench/run tells it from the engine by this name";
    int fd_kept = -1, fd_cleared = -1;
    pid_t kept = spawn_recorded(w, 0, "exec sleep 60", &fd_kept);
    pid_t cleared = spawn_recorded(w, 1, "exec sleep 60", &fd_cleared);
    ASSERT_GT(kept, 0);
    ASSERT_GT(cleared, 0);
    EXPECT_EQ(kept, *watchdog_entry(w, 0));
    watchdog_clear(w, 1);
    EXPECT_EQ(0, *watchdog_entry(w, 1));
    watchdog_stop(w);
    struct pollfd p = {fd_kept, POLLIN, 0};
    EXPECT_EQ(1, poll(&p, 1, 5000)) << "the recorded task survived watchdog_stop";
    siginfo_t si = {};
    ASSERT_EQ(0, waitid(P_PIDFD, (id_t)fd_kept, &si, WEXITED));
    EXPECT_EQ(CLD_KILLED, si.si_code);
    EXPECT_EQ(SIGKILL, si.si_status);
    EXPECT_EQ(0, kill(cleared, 0)) << "a cleared task was killed";
    kill(cleared, SIGKILL);
    ASSERT_EQ(0, waitid(P_PIDFD, (id_t)fd_cleared, &si, WEXITED));
    close(fd_kept);
    close(fd_cleared);
}

void no_op_handler(int) {}

// The agent's process has handlers for the stop signals (main.c); the
// watchdog, forked from it, must not run them (they would write into
// descriptors whose numbers now name lent files) and must outlive them.
TEST_F(Watchdog, IgnoresTheStopSignalsItsAgentHandles)
{
    const int sigs[] = {SIGTERM, SIGINT, SIGUSR1, SIGHUP};
    struct sigaction handler = {}, saved[4];
    handler.sa_handler = no_op_handler;
    for (int k = 0; k < 4; k++)
        ASSERT_EQ(0, sigaction(sigs[k], &handler, &saved[k]));
    struct pmc_error e;
    struct watchdog *w = watchdog_start(0, &e);
    for (int k = 0; k < 4; k++)
        sigaction(sigs[k], &saved[k], nullptr);
    ASSERT_NE(nullptr, w) << e.text;
    pid_t pid = watchdog_pid(w);
    std::string comm;
    for (int i = 0; i < 200 && comm != "pmc-watchdog\n"; i++) { // named after the sigactions
        usleep(5000);
        comm = read_file("/proc/" + std::to_string(pid) + "/comm");
    }
    ASSERT_EQ("pmc-watchdog\n", comm);
    std::string st = read_file("/proc/" + std::to_string(pid) + "/status");
    unsigned long long ign = status_mask(st, "SigIgn"), cgt = status_mask(st, "SigCgt");
    for (int sig : sigs) {
        EXPECT_TRUE(ign >> (sig - 1) & 1) << "signal " << sig << " not ignored";
        EXPECT_FALSE(cgt >> (sig - 1) & 1) << "signal " << sig << " runs the agent's handler";
    }
    EXPECT_EQ(0, kill(pid, SIGTERM));
    usleep(50000);
    EXPECT_EQ(0, kill(pid, 0)) << "a SIGTERM ended the watchdog";
    watchdog_stop(w);
}

TEST_F(Watchdog, EntriesOutsideTheTableAndNullAreRefused)
{
    struct pmc_error e;
    struct watchdog *w = watchdog_start(0, &e);
    ASSERT_NE(nullptr, w) << e.text;
    EXPECT_EQ(nullptr, watchdog_entry(w, WATCHDOG_SLOTS));
    EXPECT_NE(nullptr, watchdog_entry(w, WATCHDOG_SLOTS - 1));
    EXPECT_EQ(nullptr, watchdog_entry(nullptr, 0));
    watchdog_clear(nullptr, 0);
    watchdog_clear(w, WATCHDOG_SLOTS); // out of range: no-op
    EXPECT_EQ(0, watchdog_pid(nullptr));
    watchdog_stop(w);
    watchdog_stop(nullptr);
}

} // namespace
