// test_launcher.cc - unit tests of engine/launcher.h: the pool size
// without --launch-threads (launcher_default_threads: none below 8 CPUs,
// one per 8 CPUs above, capped at LAUNCHER_MAX_THREADS), and the pool
// itself: a started job's pid and pidfd handed back for the caller to
// reap, a failed spawn's error, quiet launches (watched in the caller's
// epoll set, no wake-up; reported when they cannot be watched), and many
// jobs on several threads each reported once.  The engine's use of the pool is run by the
// integration tests (integration.pool.*, workloads.launchers).
#include <gtest/gtest.h>

#include <errno.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/launcher.h"
#include "testutil.h"

using namespace testutil;

namespace
{

// A pool of nthreads for nslots slots waking a mailbox of the test's.
class LauncherPool : public TempDirTest
{
  protected:
    LauncherPool() : TempDirTest("pmc-launcher-test") {}
    void SetUp() override
    {
        TempDirTest::SetUp();
        ASSERT_EQ(mailbox_init(&box_), 0);
    }
    void TearDown() override
    {
        launcher_destroy(pool_);
        mailbox_destroy(&box_);
        close(out_);
        close(ep_);
        TempDirTest::TearDown();
    }
    void start(uint32_t nthreads, uint32_t nslots)
    {
        struct pmc_error err;
        pool_ = launcher_create(nthreads, nslots, &box_, &err);
        ASSERT_NE(pool_, nullptr) << err.text;
    }
    // Submit argv as slot i's job (argv and env kept alive by the fixture);
    // quiet_epfd >= 0 makes it a quiet launch watched there with data i.
    void submit(uint32_t i, std::vector<std::string> argv, int quiet_epfd = -1)
    {
        argvs_[i] = std::make_unique<Argv>(std::move(argv));
        struct launch_job *j = launcher_job(pool_, i);
        ASSERT_NE(j, nullptr);
        *j = launch_job{};
        j->req.argv = argvs_[i]->get();
        j->req.envp = env_.get();
        j->req.stdout_fd = out_;
        j->req.stderr_fd = out_;
        j->quiet = quiet_epfd >= 0;
        j->watch_epfd = quiet_epfd;
        j->watch_data = i;
        launcher_submit(pool_, i);
    }
    // With the agent's mailbox marked asleep, submit argv as slot i
    // (quiet when quiet_epfd >= 0) and wait for its completion: the slot
    // handed back, or UINT32_MAX after 10 s.
    uint32_t submit_asleep(uint32_t i, std::vector<std::string> argv, int quiet_epfd = -1)
    {
        EXPECT_EQ(mailbox_prepare_sleep(&box_), 0);
        submit(i, std::move(argv), quiet_epfd);
        uint32_t got = UINT32_MAX;
        return take(&got) ? got : UINT32_MAX;
    }
    // The next unwatched quiet launch within 10 s: true with *i.
    bool take_unwatched(uint32_t *i)
    {
        return poll_within_10s(launcher_take_unwatched, i);
    }
    // The eventfd's count: how often the pool woke the agent's mailbox
    // (read and reset).
    uint64_t wakes()
    {
        uint64_t v = 0;
        return read(box_.efd, &v, sizeof v) == (ssize_t)sizeof v ? v : 0;
    }
    // The next completed slot within 10 s: true with *i.
    bool take(uint32_t *i)
    {
        return poll_within_10s(launcher_take, i);
    }
    // taker(pool_, i) every millisecond until it gives a slot (true) or
    // 10 s pass.
    bool poll_within_10s(int (*taker)(struct launcher *, uint32_t *), uint32_t *i)
    {
        for (int k = 0; k < 10000; k++) {
            if (taker(pool_, i) == 1)
                return true;
            usleep(1000);
        }
        return false;
    }
    // Wait for slot i's task through its pidfd and reap it: its waitid
    // status (si_code << 8 | si_status), or -1 when the pidfd was not its.
    int reap(uint32_t i)
    {
        struct launch_job *j = launcher_job(pool_, i);
        siginfo_t si = {};
        int rc;
        while ((rc = waitid(P_PIDFD, (id_t)j->pidfd, &si, WEXITED)) < 0 && errno == EINTR)
            ;
        close(j->pidfd);
        return rc == 0 && si.si_pid == j->pid ? si.si_code << 8 | si.si_status : -1;
    }

    struct mailbox box_ = {};
    struct launcher *pool_ = nullptr;
    std::map<uint32_t, std::unique_ptr<Argv>> argvs_;
    Argv env_{"PATH=/usr/bin:/bin"};
    int out_ = make_capture("out");
    int ep_ = epoll_create1(EPOLL_CLOEXEC); // the agent's epoll set, for quiet launches
};

TEST_F(LauncherPool, StartedJobHandsBackItsPidAndPidfd)
{
    start(1, 4);
    submit(2, {"/bin/sh", "-c", "exit 5"});
    uint32_t i = 99;
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 2u);
    struct launch_job *j = launcher_job(pool_, 2);
    ASSERT_EQ(j->err, 0) << strerror(j->err);
    EXPECT_GT(j->pid, 0);
    ASSERT_GE(j->pidfd, 0);
    EXPECT_EQ(reap(2), CLD_EXITED << 8 | 5) << "the caller reaps through the pidfd";
    EXPECT_EQ(launcher_take(pool_, &i), 0) << "one completion per submit";
}

TEST_F(LauncherPool, FailedSpawnIsReportedOnceWithItsError)
{
    start(2, 2);
    submit(1, {"/nonexistent/program"});
    uint32_t i;
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->err, ENOENT);
    usleep(50000);
    EXPECT_EQ(launcher_take(pool_, &i), 0);
}

// A quiet launch is handed back without waking the agent (it sleeps,
// mailbox_prepare_sleep), and its pidfd is in the agent's epoll set: the
// child's exit wakes epoll_wait with the slot as data.  A loud one wakes.
TEST_F(LauncherPool, QuietLaunchIsWatchedAndDoesNotWake)
{
    ASSERT_GE(ep_, 0);
    start(1, 4);
    ASSERT_EQ(submit_asleep(3, {"/bin/sh", "-c", "exit 7"}, ep_), 3u);
    ASSERT_EQ(launcher_job(pool_, 3)->err, 0) << strerror(launcher_job(pool_, 3)->err);
    struct epoll_event ev = {};
    ASSERT_EQ(epoll_wait(ep_, &ev, 1, 10000), 1) << "the exit did not reach the epoll set";
    EXPECT_EQ(ev.data.u64, 3u);
    EXPECT_EQ(wakes(), 0u) << "a quiet launch woke the agent";
    EXPECT_EQ(reap(3), CLD_EXITED << 8 | 7);
    uint32_t i;
    EXPECT_EQ(launcher_take_unwatched(pool_, &i), 0);

    ASSERT_EQ(submit_asleep(1, {"/bin/true"}), 1u);
    EXPECT_EQ(reap(1), CLD_EXITED << 8 | 0);
    EXPECT_GE(wakes(), 1u) << "a loud launch must wake the agent";
}

// A quiet launch whose pidfd cannot be added (here: the "epoll set" is the
// capture file) comes back a second time through
// launcher_take_unwatched(), with the error, and wakes the agent; the
// caller still reaps the child.
TEST_F(LauncherPool, QuietLaunchThatCannotBeWatchedIsReported)
{
    start(1, 2);
    ASSERT_EQ(submit_asleep(0, {"/bin/true"}, out_), 0u);
    uint32_t i = 99;
    ASSERT_TRUE(take_unwatched(&i));
    EXPECT_EQ(i, 0u);
    EXPECT_EQ(launcher_job(pool_, 0)->watch_err, EINVAL);
    EXPECT_GE(wakes(), 1u);
    EXPECT_EQ(reap(0), CLD_EXITED << 8 | 0);
}

// A failed spawn is never quiet: it wakes the agent and is not watched.
TEST_F(LauncherPool, QuietLaunchThatFailsToSpawnWakes)
{
    start(1, 2);
    ASSERT_EQ(submit_asleep(1, {"/nonexistent/program"}, ep_), 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->err, ENOENT);
    EXPECT_GE(wakes(), 1u);
    struct epoll_event ev;
    EXPECT_EQ(epoll_wait(ep_, &ev, 1, 0), 0);
    uint32_t i;
    EXPECT_EQ(launcher_take_unwatched(pool_, &i), 0);
}

TEST_F(LauncherPool, ManyJobsOnSeveralThreadsEachReportedOnce)
{
    const uint32_t slots = 8, jobs = 200;
    start(4, slots);
    std::map<uint32_t, int> out; // submits not yet completed, per slot
    uint32_t submitted = 0, done = 0;
    for (uint32_t s = 0; s < slots; s++, submitted++) {
        submit(s, {"/bin/true"});
        out[s]++;
    }
    while (done < jobs) {
        uint32_t i;
        ASSERT_TRUE(take(&i)) << done << " of " << jobs << " done";
        ASSERT_LT(i, slots);
        ASSERT_EQ(out[i]--, 1) << "slot " << i << " completed twice";
        ASSERT_EQ(launcher_job(pool_, i)->err, 0);
        ASSERT_EQ(reap(i), CLD_EXITED << 8 | 0);
        done++;
        if (submitted < jobs) {
            submit(i, {"/bin/true"});
            out[i]++;
            submitted++;
        }
    }
    uint32_t i;
    EXPECT_EQ(launcher_take(pool_, &i), 0);
}

TEST(LauncherDefault, NoPoolBelowEightCpus)
{
    for (uint32_t cpus : {0u, 1u, 2u, 4u, 7u})
        EXPECT_EQ(launcher_default_threads(cpus), 0u) << cpus << " CPUs";
}

TEST(LauncherDefault, OnePerEightCpus)
{
    EXPECT_EQ(launcher_default_threads(8), 1u);
    EXPECT_EQ(launcher_default_threads(15), 1u);
    EXPECT_EQ(launcher_default_threads(16), 2u);
    EXPECT_EQ(launcher_default_threads(64), 8u);
    EXPECT_EQ(launcher_default_threads(128), 16u);
    EXPECT_EQ(launcher_default_threads(192), 24u);
}

TEST(LauncherDefault, CappedAtTheMostThePoolTakes)
{
    EXPECT_EQ(launcher_default_threads(LAUNCHER_MAX_THREADS * LAUNCHER_CPUS_PER_THREAD),
              (uint32_t)LAUNCHER_MAX_THREADS);
    EXPECT_EQ(launcher_default_threads(UINT32_MAX), (uint32_t)LAUNCHER_MAX_THREADS);
}

} // namespace
