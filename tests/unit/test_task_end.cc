// test_task_end.cc - how a task ended (engine/exec/task_end.h), the one
// rule both ways of running a task report by.
//
// Checked: task_end_decide() over every cause; task_end_signal() stops a
// running task and notes it, notes no stop of a task that had ended by
// itself (but always a lingering group's, and a time-out); and a node
// agent that starts its tasks on its own thread (--threads 0) and one
// whose launcher pool starts, watches and reaps them give the same results
// and the same records for a task that exits 0, exits 1, is killed by a
// signal, passes its time limit, cannot be executed, and loses its
// forwarded data.  The test plays the master through a fake transport (as
// test_agent.cc does).
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "engine/exec/task_end.h"
#include "engine/node/agent.h"
#include "engine/transport/mailbox.h"
#include "io/dag.h"
#include "io/log.h"
#include "io/msg.h"
#include "io/taskio.h"
#include "fake_comm.h"
#include "testutil.h"

namespace
{

using namespace std::chrono_literals;

// ---- the rule itself ----------------------------------------------------------

struct Case {
    const char *what;
    task_end in;
    int status, exec_errno;
    task_cause cause;
};

TEST(TaskEndDecide, OneRuleForEveryCause)
{
    const Case cases[] = {
        {"exit 0", {0, 0, 0, false, false, false}, 0, 0, TASK_EXITED},
        {"exit 1", {1 << 8, 0, 0, false, false, false}, 1 << 8, 0, TASK_EXITED},
        {"killed", {SIGKILL, 0, 0, false, false, false}, SIGKILL, 0, TASK_SIGNALLED},
        {"stopped, exited 0", {0, 0, SIGTERM, false, false, false}, SIGTERM, 0, TASK_SIGNALLED},
        {"stopped, exited 3", {3 << 8, 0, SIGTERM, false, false, false}, 3 << 8, 0, TASK_EXITED},
        {"timed out",
         {SIGTERM, 0, SIGTERM, true, false, false},
         TASK_TIMEOUT_STATUS,
         ETIMEDOUT,
         TASK_TIMED_OUT},
        {"timed out, exited 0",
         {0, 0, SIGTERM, true, false, false},
         TASK_TIMEOUT_STATUS,
         ETIMEDOUT,
         TASK_TIMED_OUT},
        {"not found", {0, ENOENT, 0, false, false, false}, 127 << 8, ENOENT, TASK_FAILED_START},
        {"not executable",
         {0, EACCES, 0, false, false, false},
         126 << 8,
         EACCES,
         TASK_FAILED_START},
        {"not set up",
         {0, -1, 0, false, false, false},
         TASK_IO_FAILED_STATUS,
         0,
         TASK_FAILED_START},
        {"forwards lost",
         {0, 0, 0, false, true, false},
         TASK_IO_FAILED_STATUS,
         0,
         TASK_LOST_OUTPUT},
        {"forwards lost, exit 5",
         {5 << 8, 0, 0, false, true, false},
         TASK_IO_FAILED_STATUS,
         0,
         TASK_LOST_OUTPUT},
        {"output lost", {0, 0, 0, false, false, true}, TASK_IO_FAILED_STATUS, 0, TASK_LOST_OUTPUT},
        {"output lost, exit 5", {5 << 8, 0, 0, false, false, true}, 5 << 8, 0, TASK_EXITED},
    };
    for (const Case &c : cases) {
        task_outcome o = task_end_decide(&c.in);
        EXPECT_EQ(o.status, c.status) << c.what;
        EXPECT_EQ(o.exec_errno, c.exec_errno) << c.what;
        EXPECT_EQ(o.cause, c.cause) << c.what;
    }
}

// ---- the group signal ------------------------------------------------------------

// A child in a process group of its own running `sleep 30`, or exiting at
// once when quick (left a zombie: nothing reaps it until the test does),
// with its pidfd.
struct Child {
    pid_t pid = -1;
    int pidfd = -1;
    explicit Child(bool quick)
    {
        pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            if (!quick)
                execl("/bin/sleep", "sleep", "30", (char *)nullptr);
            _exit(0);
        }
        setpgid(pid, pid); // either side may win: the group exists before we signal it
        pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    }
    // Its wait status once it has ended.
    int reap()
    {
        int status = -1;
        EXPECT_EQ(waitpid(pid, &status, 0), pid);
        close(pidfd);
        return status;
    }
};

TEST(TaskEndSignal, ARunningTaskIsStoppedAndNoted)
{
    Child c(false);
    task_end e{};
    task_end_signal(&e, c.pid, c.pidfd, SIGTERM, false);
    EXPECT_EQ(e.signalled, SIGTERM);
    EXPECT_FALSE(e.timed_out);
    int status = c.reap();
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
}

TEST(TaskEndSignal, ATaskThatEndedByItselfWasNotStopped)
{
    Child c(true);
    siginfo_t si{};
    ASSERT_EQ(waitid(P_PID, (id_t)c.pid, &si, WEXITED | WNOWAIT), 0); // a zombie now
    task_end e{};
    task_end_signal(&e, c.pid, c.pidfd, SIGTERM, false);
    EXPECT_EQ(e.signalled, 0);
    task_end_signal(&e, c.pid, -1, SIGKILL, false); // reaped in a grace: noted always
    EXPECT_EQ(e.signalled, SIGKILL);
    EXPECT_EQ(c.reap(), 0);
}

TEST(TaskEndSignal, ATimeOutIsNotedEvenAfterTheEnd)
{
    Child c(true);
    siginfo_t si{};
    ASSERT_EQ(waitid(P_PID, (id_t)c.pid, &si, WEXITED | WNOWAIT), 0);
    task_end e{};
    task_end_signal(&e, c.pid, c.pidfd, SIGTERM, true);
    EXPECT_TRUE(e.timed_out);
    EXPECT_EQ(e.signalled, SIGTERM);
    EXPECT_EQ(task_end_decide(&e).cause, TASK_TIMED_OUT);
    c.reap();
}

// ---- both backends through the agent -------------------------------------------

// One task's end as the master and the rank's files see it.
struct Ended {
    int status = -1, exec_errno = -1; // its result
    std::string record_status;        // status= of its record in DAG.out.0
    bool note = false;                // its stderr block has a pmc-hybrid note
    bool operator==(const Ended &o) const
    {
        return std::tie(status, exec_errno, record_status, note) ==
               std::tie(o.status, o.exec_errno, o.record_status, o.note);
    }
};

std::ostream &operator<<(std::ostream &os, const Ended &e)
{
    return os << "{status " << e.status << ", errno " << e.exec_errno << ", record status "
              << e.record_status << ", note " << e.note << "}";
}

// argv of a task: sh -c SCRIPT, NUL-separated (msg_task.argv).
std::string sh(const std::string &script)
{
    return std::string("/bin/sh\0-c\0", 11) + script;
}

class TaskEndTest : public testutil::TempDirTest
{
  protected:
    TaskEndTest() : TempDirTest("pmc-task-end") {}

    // Run the six tasks on an agent of 8 CPUs with launch_threads
    // launchers (0: the agent thread starts them), in directory sub: what
    // each task's end was, by name.
    std::map<std::string, Ended> run(uint32_t launch_threads, const std::string &sub)
    {
        std::map<std::string, Ended> ended;
        std::string dir = path(sub);
        EXPECT_EQ(mkdir(dir.c_str(), 0755), 0);
        std::string dag = dir + "/wf.dag";
        int log_fd = open((dir + "/log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        EXPECT_GE(log_fd, 0);
        log_set_fd(log_fd);
        agent_config cfg = fake_agent_config(dag.c_str(), dir.c_str(), 8, launch_threads);
        comm c;
        pmc_error err{};
        agent *a = agent_create(&cfg, &err);
        EXPECT_NE(a, nullptr) << err.text;
        if (!a)
            return ended;
        EXPECT_EQ(agent_start(a, &c, &err), 0) << err.text;
        EXPECT_EQ(fake_comm_next(c).r.kind, MSG_HELLO);

        std::string exit0 = sh("exit 0"), exit1 = sh("exit 1"), killed = sh("kill -KILL $$"),
                    sleeper = sh("exec sleep 30"), lost = sh("mkdir " + dir + "/notafile"),
                    missing = std::string("/nonexistent/pmc-no-such-program");
        std::string fwd = std::string(1, static_cast<char>(DAG_FORWARD_FILE)) + dir + "/notafile" +
                          std::string(1, '\0') + dir + "/dest" + std::string(1, '\0');
        std::vector<msg_task> tasks = {
            task(1, "exit0", exit0, 3),    task(2, "exit1", exit1, 3),
            task(3, "signal", killed, 3),  task(4, "timeout", sleeper, 3),
            task(5, "noexec", missing, 1), task(6, "lost", lost, 3)};
        tasks[3].time_limit_ms = 300;
        tasks[5].nfwd = 1;
        tasks[5].fwd = fwd.data();
        fake_comm_send_tasks(a, tasks);

        std::map<uint32_t, std::string> names;
        for (const msg_task &t : tasks)
            names[t.id] = t.name;
        while (ended.size() < tasks.size() && !testing::Test::HasFailure()) {
            Sent m = fake_comm_next(c);
            EXPECT_EQ(m.r.kind, MSG_RESULTS);
            msg_result r{};
            while (m.r.kind == MSG_RESULTS && msg_next_result(&m.r, &r, &err) == 1) {
                Ended &e = ended[names[r.id]];
                e.status = r.status;
                e.exec_errno = r.exec_errno;
            }
        }
        mail *bye = mail_control(0, COMM_TO_AGENT, MSG_SHUTDOWN);
        mailbox_push(agent_mailbox(a), bye);
        EXPECT_EQ(fake_comm_next(c).r.kind, MSG_BYE);
        EXPECT_EQ(agent_join(a), 0) << testutil::read_file(dir + "/log");
        agent_destroy(a);
        log_set_fd(STDERR_FILENO);
        close(log_fd);

        std::string out = testutil::read_file(dag + ".out.0");
        std::string errs = testutil::read_file(dag + ".err.0");
        for (auto &[name, e] : ended) {
            size_t at = out.find("[cluster-task name=" + name + ",");
            EXPECT_NE(at, std::string::npos) << name << " has no record:\n" << out;
            if (at == std::string::npos)
                continue;
            size_t st = out.find("status=", at) + 7;
            e.record_status = out.substr(st, out.find(',', st) - st);
            e.note = errs.find("pmc-hybrid: task " + name + " ") != std::string::npos ||
                     errs.find("pmc-hybrid: task " + name + ":") != std::string::npos;
        }
        return ended;
    }

    // A task of one CPU; argv holds argc NUL-separated strings.
    static msg_task task(uint32_t id, const char *name, const std::string &argv, uint32_t argc)
    {
        msg_task t{};
        t.id = id;
        t.attempt = 1;
        t.cpus = 1;
        t.name = name;
        t.pegasus_id = "";
        t.argc = argc;
        t.argv = argv.c_str();
        return t;
    }
};

// The same six tasks, started and reaped on the agent thread, then by the
// launcher pool: the same results and records, each the one the rule gives.
TEST_F(TaskEndTest, BothBackendsReportTheSameEnds)
{
    std::map<std::string, Ended> inline_ends = run(0, "inline");
    ASSERT_FALSE(HasFailure());
    std::map<std::string, Ended> pool_ends = run(2, "pool");
    ASSERT_FALSE(HasFailure());
    const std::map<std::string, Ended> want = {
        {"exit0", {0, 0, "0", false}},
        {"exit1", {1 << 8, 0, "256", false}},
        {"signal", {SIGKILL, 0, "9", false}},
        {"timeout", {TASK_TIMEOUT_STATUS, ETIMEDOUT, "31744", true}},
        {"noexec", {127 << 8, ENOENT, "32512", true}},
        {"lost", {TASK_IO_FAILED_STATUS, 0, "256", false}},
    };
    EXPECT_EQ(inline_ends, want);
    EXPECT_EQ(pool_ends, want);
    EXPECT_EQ(inline_ends, pool_ends);
}

} // namespace
