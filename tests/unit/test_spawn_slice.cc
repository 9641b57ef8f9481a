// test_spawn_slice.cc - unit tests of spawn_thread_short_slice() (spawn.h).
//
// The spawning thread gets the short slice and the reset-on-fork flag, its
// policy and nice unchanged; a task it starts gets exactly the scheduling
// attributes the thread had before (slice, policy, nice, no reset flag); a
// thread under SCHED_IDLE is left as it was.  Each case runs in a thread of
// its own, since the attributes are per thread.  Kernels before 6.12 report
// no slice for fair-class threads (sched_runtime reads 0): there the slice
// itself is not compared, the rest is.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <thread>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/spawn.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// The kernel's struct sched_attr up to SCHED_ATTR_SIZE_VER0.
struct SchedAttr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
};
constexpr uint64_t kResetOnFork = 0x01;

bool get_attr(pid_t tid, SchedAttr *at)
{
    memset(at, 0, sizeof *at);
    return syscall(SYS_sched_getattr, tid, at, static_cast<unsigned>(sizeof *at), 0) == 0;
}

class SpawnSliceTest : public TempDirTest
{
  protected:
    SpawnSliceTest() : TempDirTest("pmc-spawn-slice-test") {}
};

TEST_F(SpawnSliceTest, SpawningThreadGetsItTasksDoNot)
{
    std::thread([] {
        SchedAttr before, after, task;
        ASSERT_TRUE(get_attr(0, &before)) << strerror(errno);
        bool eligible =
            (before.policy == SCHED_OTHER || before.policy == SCHED_BATCH) && before.nice >= 0;
        ASSERT_EQ(spawn_thread_short_slice(), eligible ? 1 : 0) << strerror(errno);
        ASSERT_TRUE(get_attr(0, &after));
        EXPECT_EQ(after.policy, before.policy);
        EXPECT_EQ(after.nice, before.nice);
        if (!eligible)
            return;
        EXPECT_TRUE(after.flags & kResetOnFork);
        if (before.runtime != 0) { // the kernel reports slices (Linux >= 6.12)
            EXPECT_EQ(after.runtime, uint64_t{SPAWN_THREAD_SLICE_NS});
        }

        Argv av{"/bin/sleep", "30"};
        Argv ev{};
        struct spawn_request req = {};
        req.argv = av.get();
        req.envp = ev.get();
        req.stdout_fd = req.stderr_fd = make_capture("out");
        pid_t pid;
        int pidfd;
        ASSERT_EQ(spawn_task(&req, &pid, &pidfd), 0);
        bool read = get_attr(pid, &task);
        int e = errno;
        kill(pid, SIGKILL);
        siginfo_t si;
        wait_child(pid, pidfd, &si);
        ASSERT_TRUE(read) << strerror(e);
        EXPECT_EQ(task.policy, before.policy);
        EXPECT_EQ(task.nice, before.nice);
        EXPECT_EQ(task.runtime, before.runtime) << "the task kept the spawning thread's slice";
        EXPECT_FALSE(task.flags & kResetOnFork);
    }).join();
}

TEST_F(SpawnSliceTest, IdlePolicyIsLeftAlone)
{
    std::thread([] {
        struct sched_param p = {};
        // any thread may lower itself to SCHED_IDLE (sched(7))
        ASSERT_EQ(sched_setscheduler(0, SCHED_IDLE, &p), 0) << strerror(errno);
        SchedAttr before, after;
        ASSERT_TRUE(get_attr(0, &before));
        EXPECT_EQ(spawn_thread_short_slice(), 0);
        ASSERT_TRUE(get_attr(0, &after));
        EXPECT_EQ(after.policy, static_cast<uint32_t>(SCHED_IDLE));
        EXPECT_EQ(after.flags, before.flags);
        EXPECT_EQ(after.runtime, before.runtime);
    }).join();
}

} // namespace
