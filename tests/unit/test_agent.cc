// test_agent.cc - the node agent (engine/node/agent.h) driven through its
// messages alone, with a fake transport: this file implements
// engine/transport/comm.h's comm_send() and comm_send_mail() (as bench/sim does), so
// what the agent sends to the master lands in a queue the test reads, and
// the test plays the master by pushing mails into the agent's mailbox.
//
// Checked: the agent says HELLO with its node's CPUs, memory and GPUs; a
// task that fits runs and comes back in RESULTS with its wait status, its
// record in DAG.out.0; a TASKS message with a task larger than the node
// (more CPUs, more memory, or GPUs a node without any) is refused as a bad
// message (agent_check_task): the agent logs the task and the node's size,
// sends ABORT, never starts the task, answers the master's ABORT with BYE,
// and agent_join() reports the failure.  Without the check such a task
// would wait in the node's queue for ever, and the run with it.  RECALL
// gives back the queued tasks the node would start last, at once.  A task
// of higher priority than staged ones starts before them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "engine/node/agent.h"
#include "engine/node/agent_testing.h"
#include "engine/transport/mailbox.h"
#include "io/dag.h"
#include "io/log.h"
#include "io/msg.h"
#include "fake_comm.h"
#include "testutil.h"

namespace
{

using namespace std::chrono_literals;

class AgentTest : public testutil::TempDirTest
{
  protected:
    AgentTest() : TempDirTest("pmc-agent") {}

    ~AgentTest() override
    {
        agent_destroy(agent_);
        log_set_fd(STDERR_FILENO);
        if (log_fd_ >= 0)
            close(log_fd_);
    }

    // An agent of a node of `cpus` CPUs (2), 1000 MB and no GPUs, spawning
    // on its own thread (or with launch_threads launchers, staging), started
    // and past its HELLO.
    void start(uint32_t launch_threads = 0, uint32_t cpus = 2)
    {
        log_fd_ = open(path("log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_GE(log_fd_, 0);
        log_set_fd(log_fd_);
        dag_ = path("wf.dag");
        agent_config cfg = fake_agent_config(dag_.c_str(), dir_.c_str(), cpus, launch_threads);
        pmc_error err{};
        agent_ = agent_create(&cfg, &err);
        ASSERT_NE(agent_, nullptr) << err.text;
        ASSERT_EQ(agent_start(agent_, &comm_, &err), 0) << err.text;
        Sent hello = next();
        ASSERT_EQ(hello.kind(), MSG_HELLO);
        msg_hello h{};
        ASSERT_EQ(msg_next_hello(&hello.r, &h, &err), 1) << err.text;
        EXPECT_EQ(h.cpus, cpus);
        EXPECT_EQ(h.memory_mb, 1000u);
        EXPECT_EQ(h.gpus, 0u);
        EXPECT_STREQ(h.hostname, "node7");
    }

    // The next message the agent sends to the master (fails the test after
    // 20 s without one).
    Sent next()
    {
        return fake_comm_next(comm_);
    }

    // Send the agent a message from the master: one TASKS of `tasks`, or a
    // message of `kind` with no body.
    void send(const std::vector<msg_task> &tasks)
    {
        fake_comm_send_tasks(agent_, tasks);
    }
    // RECALL of tasks of up to want_cpus CPUs in all, each of at most `cpus`
    // CPUs (1000 MB, no GPU).
    void send_recall(uint32_t want_cpus, uint32_t cpus)
    {
        msgbuf b{};
        msg_recall rc{want_cpus, 0, cpus, 0, 1000};
        ASSERT_EQ(msg_begin(&b, MSG_RECALL), 0);
        ASSERT_EQ(msg_add_recall(&b, &rc), 0);
        msg_end(&b);
        mail *m = mail_from_msgbuf(0, COMM_TO_AGENT, &b);
        ASSERT_NE(m, nullptr);
        mailbox_push(agent_mailbox(agent_), m);
    }
    void send(msg_kind kind)
    {
        mail *m = mail_control(0, COMM_TO_AGENT, kind);
        ASSERT_NE(m, nullptr);
        mailbox_push(agent_mailbox(agent_), m);
    }

    // A task needing `cpus` CPUs, argv as sh() makes it (which must outlive
    // the task).
    static msg_task task(uint32_t id, const char *name, const std::string &argv, uint32_t cpus)
    {
        msg_task t{};
        t.id = id;
        t.attempt = 1;
        t.cpus = cpus;
        t.name = name;
        t.pegasus_id = "";
        t.argc = 3;
        t.argv = argv.c_str();
        return t;
    }

    // The tasks given back after a RECALL (their results, all ECANCELED) and
    // the answer that follows them (how many).
    std::pair<std::vector<uint32_t>, uint32_t> given_back()
    {
        std::vector<uint32_t> ids;
        for (Sent m = next(); !HasFailure(); m = next()) {
            if (m.kind() == MSG_RECALL) {
                msg_recall rc{};
                pmc_error err{};
                EXPECT_EQ(msg_next_recall(&m.r, &rc, &err), 1) << err.text;
                return {ids, rc.given};
            }
            EXPECT_EQ(m.kind(), MSG_RESULTS);
            msg_result r{};
            pmc_error err{};
            while (m.kind() == MSG_RESULTS && msg_next_result(&m.r, &r, &err) == 1) {
                EXPECT_EQ(r.exec_errno, ECANCELED) << "task " << r.id << " ended";
                ids.push_back(r.id);
            }
        }
        return {ids, 0};
    }

    // ABORT: the running tasks end (not given back), then BYE; the results
    // that came before too.  Tasks given back unstarted go to *cancelled,
    // sorted (none may come when cancelled is null).
    std::vector<uint32_t> abort_run(std::vector<uint32_t> *cancelled = nullptr)
    {
        send(MSG_ABORT);
        std::vector<uint32_t> ended;
        for (Sent m = next(); m.kind() != MSG_BYE && !HasFailure(); m = next()) {
            msg_result r{};
            pmc_error err{};
            while (m.kind() == MSG_RESULTS && msg_next_result(&m.r, &r, &err) == 1) {
                if (cancelled && r.exec_errno == ECANCELED) {
                    cancelled->push_back(r.id);
                    continue;
                }
                EXPECT_NE(r.exec_errno, ECANCELED) << "task " << r.id << " was running";
                ended.push_back(r.id);
            }
        }
        std::sort(ended.begin(), ended.end());
        if (cancelled)
            std::sort(cancelled->begin(), cancelled->end());
        return ended;
    }

    // Poll done() every 10 ms until it is true: false after 20 s.
    static bool within_20s(const std::function<bool()> &done)
    {
        for (int k = 0; k < 2000; k++, usleep(10000))
            if (done())
                return true;
        return false;
    }

    // Wait until the agent's log holds text n times (fails the test after
    // 20 s).
    void log_once(const std::string &text, size_t n = 1)
    {
        auto found = [&] {
            std::string all = log();
            size_t count = 0;
            for (size_t at = all.find(text); at != std::string::npos; at = all.find(text, at + 1))
                count++;
            return count >= n;
        };
        if (!within_20s(found))
            ADD_FAILURE() << "not " << n << " times '" << text
                          << "' in the agent's log after 20 s:\n"
                          << log();
    }

    // The lines of file `name` once it has n of them (fails the test after
    // 20 s).
    std::vector<std::string> lines_once(const std::string &name, size_t n)
    {
        std::vector<std::string> lines;
        auto enough = [&] {
            lines.clear();
            std::string text = testutil::read_file(path(name)), line;
            for (char c : text)
                if (c == '\n')
                    lines.push_back(line), line.clear();
                else
                    line += c;
            return lines.size() >= n;
        };
        if (!within_20s(enough))
            ADD_FAILURE() << name << " has " << lines.size() << " lines after 20 s, not " << n;
        return lines;
    }

    std::string log() const
    {
        return testutil::read_file(path("log"));
    }

    // SHUTDOWN, answered by BYE, and the agent's thread ends cleanly.
    void shut_down()
    {
        send(MSG_SHUTDOWN);
        EXPECT_EQ(next().kind(), MSG_BYE);
        EXPECT_EQ(agent_join(agent_), 0) << log();
    }

    // The two launchers of a started agent may run on every CPU this
    // process may (none bound to one); then the agent shuts down.
    void expect_two_launchers_unbound()
    {
        std::multiset<std::string> want = {testutil::cpus_allowed(), testutil::cpus_allowed()};
        EXPECT_EQ(testutil::threads_cpus_allowed_once("pmc-launch", want), want);
        shut_down();
    }

    comm comm_;
    agent *agent_ = nullptr;
    std::string dag_;
    int log_fd_ = -1;
};

// argv of a task: sh -c SCRIPT, NUL-separated (msg_task.argv).
std::string sh(const std::string &script)
{
    return std::string("/bin/sh\0-c\0", 11) + script;
}

TEST_F(AgentTest, RunsATaskThatFitsAndReportsItsWaitStatus)
{
    start();
    std::string exit3 = sh("exit 3");
    send({task(5, "fits", exit3, 2)});
    Sent results = next();
    ASSERT_EQ(results.kind(), MSG_RESULTS);
    msg_result r{};
    pmc_error err{};
    ASSERT_EQ(msg_next_result(&results.r, &r, &err), 1) << err.text;
    EXPECT_EQ(r.id, 5u);
    EXPECT_EQ(r.exec_errno, 0);
    ASSERT_TRUE(WIFEXITED(r.status));
    EXPECT_EQ(WEXITSTATUS(r.status), 3);
    shut_down();
    std::string out = testutil::read_file(dag_ + ".out.0");
    EXPECT_EQ(out.find("[cluster-task name=fits, start="), 0u) << out;
    EXPECT_NE(out.find(", status=768, app=\"/bin/sh\", hostname=\"node7\", slot=0, cpus=2, "
                       "memory=0]\n"),
              std::string::npos)
        << out;
}

// The CPUs this process may run on.
int usable_cpus()
{
    cpu_set_t mine;
    EXPECT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    return CPU_COUNT(&mine);
}

// A node with every CPU this process may run on and launchers to spare
// (one more than its CPUs): the agent binds them to those CPUs, one each,
// the spare one unbound (agent_create()), and the tasks they start run on
// all of them.  Each task reads its own Cpus_allowed_list; they come in
// pairs, the second 50 ms after the first, while the first launcher waits
// for its task, so two launchers start them, and one at least is bound.
TEST_F(AgentTest, LaunchersToSpareAreBoundOnePerCpuTheirTasksAreNot)
{
    uint32_t cpus = (uint32_t)std::min(usable_cpus(), 16);
    start(cpus + 1, cpus);
    std::multiset<std::string> want = testutil::pinned_cpus(cpus + 1);
    EXPECT_EQ(testutil::threads_cpus_allowed_once("pmc-launch", want), want);
    std::string cmd = sh("sleep 0.2; grep ^Cpus_allowed_list: /proc/self/status");
    for (uint32_t k = 1; k <= 4; k += 2) {
        send({task(k, "first", cmd, 1)});
        usleep(50000);
        send({task(k + 1, "second", cmd, 1)});
        for (uint32_t got = 0; got < 2 && !HasFailure();) {
            Sent m = next();
            ASSERT_EQ(m.kind(), MSG_RESULTS);
            msg_result r{};
            pmc_error err{};
            while (msg_next_result(&m.r, &r, &err) == 1)
                got++;
        }
    }
    shut_down();
    std::string out = testutil::read_file(dag_ + ".out.0"), all = testutil::cpus_allowed();
    std::vector<std::string> lists;
    for (size_t k = 0;;) {
        std::string v = testutil::status_field(out, "Cpus_allowed_list", k, &k);
        if (v == "?")
            break;
        lists.push_back(v);
    }
    EXPECT_EQ(lists, std::vector<std::string>(4, all)) << out;
}

// Without launchers to spare (as many as the node's CPUs) none is bound.
TEST_F(AgentTest, LaunchersNotToSpareStayUnbound)
{
    start(2);
    expect_two_launchers_unbound();
}

// A node of fewer CPUs than this process may run on (--host-cpus below
// them, or ranks that share a host) keeps its launchers to spare unbound:
// bound, they would pile onto the same first CPUs as other ranks'.
TEST_F(AgentTest, LaunchersOfANodeSmallerThanItsCpusStayUnbound)
{
    start(2, 1);
    expect_two_launchers_unbound();
}

// Results carrying forwarded data are not batched past MSG_SPLIT_BYTES
// (16 MB): two tasks that forward 12 MB each through a pipe and end
// together, while a full round of tasks is queued (so a result waits up to
// RESULT_DELAY_LEAF_MS for companions), come back in two RESULTS messages,
// each with its data whole.  Batched together, tasks forwarding up to 1 GiB
// each (FWD_TASK_MAX) would pass what one MPI message can carry (an int
// count), and MPI_Isend's failure would abort the whole job.
TEST_F(AgentTest, ResultsWithBigForwardedDataGoInMessagesOfTheirOwn)
{
    start();
    // the node's first result goes at once (it is at the master's refill
    // mark); later ones wait for companions
    std::string quick = sh("exit 0");
    send({task(1, "first", quick, 1)});
    ASSERT_EQ(next().kind(), MSG_RESULTS);
    const size_t kBytes = 12000000;
    std::string fwd = std::string(1, static_cast<char>(DAG_FORWARD_PIPE)) + "OUT" +
                      std::string(1, '\0') + path("dest") + std::string(1, '\0');
    auto forwarding = [&](const std::string &name) {
        return sh("head -c " + std::to_string(kBytes) + " /dev/zero >&$OUT && touch " +
                  path(name + ".ready") + " && while [ ! -e " + path("go") +
                  " ]; do sleep 0.01; done");
    };
    std::string a = forwarding("a"), b = forwarding("b"), sleeper = sh("sleep 30");
    std::vector<msg_task> tasks = {task(2, "a", a, 1), task(3, "b", b, 1)};
    for (msg_task &t : tasks) {
        t.nfwd = 1;
        t.fwd = fwd.data();
    }
    for (uint32_t id = 4; id < 8; id++)
        tasks.push_back(task(id, "queued", sleeper, 1));
    send(tasks);
    ASSERT_TRUE(within_20s([&] {
        return access(path("a.ready").c_str(), F_OK) == 0 &&
               access(path("b.ready").c_str(), F_OK) == 0;
    })) << log();
    testutil::write_file(path("go"), "");
    std::vector<std::vector<uint32_t>> messages; // the forwarding tasks' ids, by message
    for (size_t got = 0; got < 2 && !HasFailure();) {
        Sent m = next();
        ASSERT_EQ(m.kind(), MSG_RESULTS);
        messages.emplace_back();
        msg_result r{};
        pmc_error err{};
        while (msg_next_result(&m.r, &r, &err) == 1) {
            EXPECT_EQ(r.status, 0) << "task " << r.id;
            size_t pos = 0, forwarded = 0;
            uint32_t index = 0, len = 0;
            const uint8_t *data = nullptr;
            while (msg_result_next_fwd(&r, &pos, &index, &data, &len) == 1)
                forwarded += len;
            EXPECT_EQ(forwarded, kBytes) << "task " << r.id;
            messages.back().push_back(r.id);
            got++;
        }
    }
    ASSERT_EQ(messages.size(), 2u) << "the two results came in one message";
    std::vector<uint32_t> cancelled;
    abort_run(&cancelled);
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

// RECALL: the agent gives back, at once and unstarted (ECANCELED results),
// queued tasks that fit what was asked, up to the CPUs asked for, from the
// end of its queue (the lowest priority, the last come: those it would
// start last), and answers with how many after their results; running
// tasks are not touched; a RECALL nothing fits gets the answer 0.
TEST_F(AgentTest, RecallGivesBackTheQueuedTasksItWouldStartLast)
{
    start();
    std::string wait = sh("sleep 30");
    std::vector<msg_task> tasks = {task(1, "r1", wait, 1), task(2, "r2", wait, 1)};
    tasks[0].priority = tasks[1].priority = 10; // they start first
    const std::tuple<uint32_t, int32_t, uint32_t> queued[] = {
        {3, 5, 1}, {4, 0, 2}, {5, 0, 1}, {6, 9, 1}}; // id, priority, CPUs
    for (auto [id, prio, cpus] : queued) {           // queue order: 6, 3, 4, 5
        tasks.push_back(task(id, "q", wait, cpus));
        tasks.back().priority = prio;
    }
    send(tasks);
    send_recall(3, 1);
    EXPECT_EQ(given_back(), std::make_pair(std::vector<uint32_t>{5, 3, 6}, 3u));
    send_recall(5, 1); // 4 needs 2 CPUs
    EXPECT_EQ(given_back(), std::make_pair(std::vector<uint32_t>{}, 0u));
    send_recall(1, 2); // 2 CPUs would be more than the 1 asked for
    EXPECT_EQ(given_back(), std::make_pair(std::vector<uint32_t>{}, 0u));
    send_recall(5, 2);
    EXPECT_EQ(given_back(), std::make_pair(std::vector<uint32_t>{4}, 1u));
    EXPECT_EQ(abort_run(), (std::vector<uint32_t>{1, 2}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

// The messages the agent sends up to its BYE (which ends the list): their
// kinds in order, and each result's task id and exec_errno.
struct Ending {
    std::vector<msg_kind> kinds;
    std::vector<std::pair<uint32_t, int>> results;
};

// A drain and a shutdown, in either order, and a leave: nothing new starts,
// what is queued (or comes) goes back unstarted (ECANCELED), the running
// task finishes and reports, and the agent ends once it has (BYE), cleanly.
// The master's end (PEER_LOST) ends the running task at once, and the agent
// asks no ABORT of a master that is gone.
class AgentEndTest : public AgentTest
{
  protected:
    // Task 1 runs (both CPUs, about 0.3 s), task 2 waits in the queue.
    void run_one_queue_one()
    {
        start();
        send({task(1, "runs", short_, 2), task(2, "waits", short_, 2)});
    }

    Ending until_bye()
    {
        Ending e;
        for (Sent m = next(); !HasFailure(); m = next()) {
            e.kinds.push_back(m.kind());
            if (m.kind() == MSG_BYE)
                break;
            msg_result r{};
            pmc_error err{};
            while (m.kind() == MSG_RESULTS && msg_next_result(&m.r, &r, &err) == 1)
                e.results.emplace_back(r.id, r.exec_errno);
        }
        return e;
    }

    // Sorted by task id: one ran (exec_errno 0), one came back unstarted.
    static std::vector<std::pair<uint32_t, int>> by_id(std::vector<std::pair<uint32_t, int>> v)
    {
        std::sort(v.begin(), v.end());
        return v;
    }

    std::string short_ = sh("sleep 0.3");
    std::string long_ = sh("sleep 30");
};

TEST_F(AgentEndTest, DrainThenShutdownEndsOnceTheRunningTaskHas)
{
    run_one_queue_one();
    send(MSG_DRAIN);
    send(MSG_SHUTDOWN);
    Ending e = until_bye();
    EXPECT_EQ(by_id(e.results), (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, ECANCELED}}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

// DRAIN alone: the running task reports, the queue goes back, and the
// agent stays (it answers a later TASKS, giving it back) until SHUTDOWN.
TEST_F(AgentEndTest, DrainAloneWaitsForShutdown)
{
    run_one_queue_one();
    send(MSG_DRAIN);
    std::vector<std::pair<uint32_t, int>> results;
    while (results.size() < 2 && !HasFailure()) {
        Sent m = next();
        ASSERT_EQ(m.kind(), MSG_RESULTS);
        msg_result r{};
        pmc_error err{};
        while (msg_next_result(&m.r, &r, &err) == 1)
            results.emplace_back(r.id, r.exec_errno);
    }
    EXPECT_EQ(by_id(results), (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, ECANCELED}}));
    send({task(3, "late", short_, 1)});
    send(MSG_SHUTDOWN);
    Ending e = until_bye();
    EXPECT_EQ(e.results, (std::vector<std::pair<uint32_t, int>>{{3, ECANCELED}}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

TEST_F(AgentEndTest, ShutdownThenDrainEndsOnceTheRunningTaskHas)
{
    run_one_queue_one();
    send(MSG_SHUTDOWN);
    send(MSG_DRAIN);
    Ending e = until_bye();
    EXPECT_EQ(by_id(e.results), (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, ECANCELED}}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

TEST_F(AgentEndTest, ShutdownRunsWhatIsQueued)
{
    run_one_queue_one();
    send(MSG_SHUTDOWN);
    Ending e = until_bye();
    EXPECT_EQ(by_id(e.results), (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, 0}}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

TEST_F(AgentEndTest, LeaveSaysLeavingGivesBackTheQueueAndWhatComes)
{
    start();
    std::string second = sh("sleep 1"); // ends after task 3 comes
    int level = log_get_level();
    log_set_level(PMC_LOG_DEBUG);
    send({task(1, "runs", second, 2), task(2, "waits", short_, 2)});
    log_once("Running task runs"); // not left queued
    log_set_level(level);
    agent_leave(agent_);
    agent_leave(agent_); // said once
    ASSERT_EQ(next().kind(), MSG_LEAVING);
    send({task(3, "late", short_, 1)});
    Ending e = until_bye();
    EXPECT_EQ(std::count(e.kinds.begin(), e.kinds.end(), MSG_LEAVING), 0);
    EXPECT_EQ(by_id(e.results),
              (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, ECANCELED}, {3, ECANCELED}}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

TEST_F(AgentEndTest, PeerLostEndsTheRunningTaskAndAsksNoAbort)
{
    start();
    send({task(1, "runs", long_, 2), task(2, "waits", long_, 2)});
    send(MSG_PEER_LOST);
    Ending e = until_bye();
    EXPECT_EQ(std::count(e.kinds.begin(), e.kinds.end(), MSG_ABORT), 0);
    EXPECT_EQ(by_id(e.results), (std::vector<std::pair<uint32_t, int>>{{1, 0}, {2, ECANCELED}}));
    EXPECT_EQ(agent_join(agent_), -1) << log();
}

// With a launcher pool, queued tasks are staged in it (one per CPU) once
// the CPUs are busy: a RECALL gives back the queue's tasks, then the staged
// ones.
TEST_F(AgentTest, RecallGivesBackStagedTasksToo)
{
    start(1);
    std::string wait = sh("sleep 30");
    std::vector<msg_task> tasks;
    for (uint32_t id = 1; id <= 6; id++)
        tasks.push_back(task(id, "t", wait, 1)); // 1 and 2 run, 3 and 4 are staged
    int level = log_get_level();
    log_set_level(PMC_LOG_DEBUG);
    send(tasks);
    log_once("Staging task t\n", 2); // the agent thread's, after the launches
    log_set_level(level);
    send_recall(10, 1);
    EXPECT_EQ(given_back(), std::make_pair(std::vector<uint32_t>{6, 5, 3, 4}, 4u));
    EXPECT_EQ(abort_run(), (std::vector<uint32_t>{1, 2}));
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

// A task of higher priority than tasks staged in the pool goes ahead of
// them: it starts on the next CPU that frees, as PMC starts the highest
// priority on the next free slot, while staged tasks of a higher priority
// than its own keep their places; for each one that goes ahead the lowest
// staged task goes back into the queue, in its place.  Before, it waited
// a whole round behind every staged task (here the tasks staged first
// started when 1 and 2 ended).
class AgentStagedTest : public AgentTest
{
  protected:
    struct Spec {
        uint32_t id;
        int32_t priority;
        const char *sleep; // seconds
    };

    // 1 and 2 (priority 100) run for 1 s and 2 s, `staged` (two) are
    // staged, then `arriving` come in one TASKS message (the first of them
    // cannot start when fail_first).  The ids that start after 1 and 2,
    // once n of them did; the ids that ended (sorted) in *ended and those
    // given back at the abort in *back.  `moved`: staged tasks that made
    // way, from the agent's log.
    std::vector<std::string> run(const std::vector<Spec> &staged, const std::vector<Spec> &arriving,
                                 size_t n, uint32_t moved, std::vector<uint32_t> *ended,
                                 std::vector<uint32_t> *back, bool fail_first = false)
    {
        start(1);
        int level = log_get_level();
        log_set_level(PMC_LOG_DEBUG); // the requeue's line
        std::vector<Spec> first = {{1, 100, "1"}, {2, 100, "2"}};
        first.insert(first.end(), staged.begin(), staged.end());
        send(tasks(first));
        lines_once("order", 2);
        log_once("Staging task t" + std::to_string(staged.back().id)); // (debug)
        if (fail_first)
            agent__fail_next_start(agent_, EMFILE);
        send(tasks(arriving));
        std::vector<std::string> started = lines_once("order", 2 + n);
        started.erase(started.begin(), started.begin() + std::min<size_t>(2, started.size()));
        *ended = abort_run(back);
        EXPECT_EQ(agent_join(agent_), 0) << log();
        log_set_level(level);
        std::string text = log();
        EXPECT_NE(
            text.find("Node agent: " + std::to_string(moved) + " staged tasks back in the queue"),
            std::string::npos)
            << text;
        return started;
    }

    // TASKS items: each writes its id to the file "order" as it starts,
    // then sleeps.
    std::vector<msg_task> tasks(const std::vector<Spec> &specs)
    {
        std::vector<msg_task> items;
        for (const Spec &sp : specs) {
            names_.push_back("t" + std::to_string(sp.id));
            argv_.push_back(sh("echo " + std::to_string(sp.id) + " >> '" + path("order") +
                               "'; sleep " + sp.sleep));
            items.push_back(task(sp.id, names_.back().c_str(), argv_.back(), 1));
            items.back().priority = sp.priority;
        }
        return items;
    }

    std::deque<std::string> names_, argv_; // (a deque: they do not move)
};

TEST_F(AgentStagedTest, HigherPriorityGoesAheadOfStagedTasks)
{
    std::vector<uint32_t> ended, back;
    EXPECT_EQ(run({{3, 0, "30"}, {4, 0, "30"}}, {{5, 10, "30"}}, 2, 1, &ended, &back),
              (std::vector<std::string>{"5", "3"}))
        << "the higher priority did not start on the first CPU that freed";
    EXPECT_EQ(ended, (std::vector<uint32_t>{1, 2, 3, 5}));
    EXPECT_EQ(back, std::vector<uint32_t>{4});
}

TEST_F(AgentStagedTest, StagedTaskOfAHigherPriorityKeepsItsPlace)
{
    std::vector<uint32_t> ended, back;
    EXPECT_EQ(run({{3, 5, "30"}, {4, 1, "30"}}, {{5, 3, "30"}}, 2, 1, &ended, &back),
              (std::vector<std::string>{"3", "5"}));
    EXPECT_EQ(ended, (std::vector<uint32_t>{1, 2, 3, 5}));
    EXPECT_EQ(back, std::vector<uint32_t>{4});
}

// Two go ahead; the two staged tasks that made way start after them in
// their own order (3 was staged first).
TEST_F(AgentStagedTest, TasksThatMadeWayKeepTheirOrder)
{
    std::vector<uint32_t> ended, back;
    EXPECT_EQ(
        run({{3, 0, "30"}, {4, 0, "30"}}, {{5, 10, "0.5"}, {6, 10, "0.5"}}, 4, 2, &ended, &back),
        (std::vector<std::string>{"5", "6", "3", "4"}));
    EXPECT_EQ(ended, (std::vector<uint32_t>{1, 2, 3, 4, 5, 6}));
    EXPECT_TRUE(back.empty());
}

// The first task that goes ahead cannot start (reported failed): the
// next one still goes ahead of the staged task of a lower priority.
TEST_F(AgentStagedTest, ATaskThatCannotStartLetsTheNextGoAhead)
{
    std::vector<uint32_t> ended, back;
    EXPECT_EQ(run({{3, 30, "30"}, {4, 10, "30"}}, {{5, 40, "30"}, {6, 35, "30"}}, 2, 2, &ended,
                  &back, true),
              (std::vector<std::string>{"6", "3"}));
    EXPECT_EQ(ended, (std::vector<uint32_t>{1, 2, 3, 5, 6})) << "5 is reported failed";
    EXPECT_EQ(back, std::vector<uint32_t>{4});
    EXPECT_NE(log().find("Task t5: cannot create a pipe"), std::string::npos) << log();
}

// A task that goes ahead, cannot start, and holds the node's starts (-m:
// MSG_TASK_HOLD_ON_FAILURE): the staged task not yet pushed again is given
// back with its failure, as the hold gives back those in the pool; before,
// it stayed staged through the hold.
TEST_F(AgentStagedTest, AHoldDuringTheMergeGivesBackTheStagedTasks)
{
    start(1);
    int level = log_get_level();
    log_set_level(PMC_LOG_DEBUG); // "Staging task"
    send(tasks({{1, 100, "30"}, {2, 100, "30"}, {3, 30, "30"}, {4, 10, "30"}}));
    lines_once("order", 2);
    log_once("Staging task t4");
    log_set_level(level);
    agent__fail_next_start(agent_, EMFILE);
    std::vector<msg_task> bad = tasks({{5, 40, "30"}});
    bad[0].flags = MSG_TASK_HOLD_ON_FAILURE;
    send(bad);
    std::vector<uint32_t> cancelled;
    bool failed = false;
    while (!failed && !HasFailure()) {
        Sent m = next();
        msg_result r{};
        pmc_error err{};
        while (m.kind() == MSG_RESULTS && msg_next_result(&m.r, &r, &err) == 1) {
            if (r.exec_errno == ECANCELED)
                cancelled.push_back(r.id);
            failed |= r.id == 5 && r.status == 256;
        }
    }
    EXPECT_EQ(cancelled, std::vector<uint32_t>{3}) << "given back with the failure";
    std::vector<uint32_t> back;
    EXPECT_EQ(abort_run(&back), (std::vector<uint32_t>{1, 2}));
    EXPECT_EQ(back, std::vector<uint32_t>{4}) << "the task that made way, queued";
    EXPECT_EQ(agent_join(agent_), 0) << log();
}

// A task the node could never start: the agent refuses the message as a
// bad one (its master is broken), starts nothing of it from that task on,
// and has the master end the run.
class AgentRefusesTest : public AgentTest
{
  protected:
    // big's argv: any of sh()'s
    void refuse(msg_task big, const std::string &asks)
    {
        start();
        std::string marker = path("ran");
        std::string echo = sh("echo ran > '" + marker + "'");
        send({big, task(2, "small", echo, 1)});
        Sent abort = next();
        EXPECT_EQ(abort.kind(), MSG_ABORT);
        send(MSG_ABORT);
        EXPECT_EQ(next().kind(), MSG_BYE);
        EXPECT_EQ(agent_join(agent_), -1);
        EXPECT_FALSE(std::filesystem::exists(marker)) << "a task of the refused message ran";
        EXPECT_EQ(testutil::read_file(dag_ + ".out.0").find("cluster-task"), std::string::npos);
        std::string text = log();
        EXPECT_NE(text.find("Bad TASKS message from the master: task big asks " + asks +
                            " of a node of 2, 1000 MB and 0"),
                  std::string::npos)
            << text;
    }

    const std::string exit0_ = sh("exit 0");
};

TEST_F(AgentRefusesTest, ATaskWithMoreCPUsThanTheNode)
{
    refuse(task(1, "big", exit0_, 3), "3 CPUs, 0 MB and 0 GPUs");
}

TEST_F(AgentRefusesTest, ATaskWithMoreMemoryThanTheNode)
{
    msg_task big = task(1, "big", exit0_, 1);
    big.memory_mb = 1001;
    refuse(big, "1 CPUs, 1001 MB and 0 GPUs");
}

TEST_F(AgentRefusesTest, ATaskWithGPUsOnANodeWithoutAny)
{
    msg_task big = task(1, "big", exit0_, 1);
    big.gpus = 1;
    refuse(big, "1 CPUs, 0 MB and 1 GPUs");
}

} // namespace
