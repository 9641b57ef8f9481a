// test_spawn_slice.cc - unit tests of spawn_thread_short_slice() (spawn.h).
//
// A SCHED_OTHER thread on a kernel with custom slices gets the short slice
// and the reset-on-fork flag, its policy and nice unchanged, and a task it
// starts afterwards gets exactly the scheduling attributes (slice, policy,
// nice, flags, utilization clamps) of a task it started before the call.
// Where the call does not apply (a kernel before 6.12, whose sched_runtime
// reads 0 for such threads; SCHED_BATCH; SCHED_IDLE) it returns 0 and
// changes nothing; where it is forbidden (a seccomp filter, a security
// module) it fails with EPERM, EACCES or ENOSYS and changes nothing.  Each
// case runs in a thread of its own, since the attributes are per thread.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <thread>

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// The kernel's struct sched_attr up to SCHED_ATTR_SIZE_VER1.
struct SchedAttr {
    uint32_t size;
    uint32_t policy;
    uint64_t flags;
    int32_t nice;
    uint32_t priority;
    uint64_t runtime, deadline, period;
    uint32_t util_min, util_max;
};
constexpr uint64_t kResetOnFork = 0x01;

bool get_attr(pid_t tid, SchedAttr *at)
{
    memset(at, 0, sizeof *at);
    return syscall(SYS_sched_getattr, tid, at, static_cast<unsigned>(sizeof *at), 0) == 0;
}

bool forbidden(int e)
{
    return e == EPERM || e == EACCES || e == ENOSYS;
}

// The attributes of a /bin/sleep task started from this thread.
bool task_attr(SchedAttr *at)
{
    Argv av{"/bin/sleep", "30"};
    Argv ev{};
    int out = make_capture("out");
    struct spawn_request req = {};
    req.argv = av.get();
    req.envp = ev.get();
    req.stdout_fd = req.stderr_fd = out;
    pid_t pid;
    int pidfd;
    int rc = spawn_task(&req, &pid, &pidfd);
    close(out);
    EXPECT_EQ(rc, 0) << strerror(rc);
    if (rc != 0)
        return false;
    bool read = get_attr(pid, at);
    int e = errno;
    kill(pid, SIGKILL);
    siginfo_t si;
    wait_child(pid, pidfd, &si);
    EXPECT_TRUE(read) << strerror(e);
    return read;
}

// Under `policy` (SCHED_OTHER: as the thread was), the call applies exactly
// when the kernel reports slices and nothing else rules it out; it changes
// the thread's slice and flag only, and tasks started afterwards look like
// one started before.
void check_thread(int policy)
{
    if (policy != SCHED_OTHER) {
        struct sched_param p = {};
        // any thread may move itself to SCHED_BATCH or SCHED_IDLE (sched(7))
        ASSERT_EQ(sched_setscheduler(0, policy, &p), 0) << strerror(errno);
    }
    SchedAttr before, after, task_before, task_after;
    if (!get_attr(0, &before)) { // forbidden here: the call must fail cleanly
        int e = errno;
        EXPECT_TRUE(forbidden(e)) << strerror(e);
        EXPECT_EQ(spawn_thread_short_slice(), -1);
        EXPECT_TRUE(forbidden(errno)) << strerror(errno);
        return;
    }
    ASSERT_TRUE(task_attr(&task_before));
    bool applies = before.policy == SCHED_OTHER && before.runtime != 0 && before.nice >= 0 &&
                   before.util_min == 0 && (before.util_max == 0 || before.util_max == 1024);
    int rc = spawn_thread_short_slice();
    int e = errno;
    ASSERT_TRUE(get_attr(0, &after));
    EXPECT_EQ(after.policy, before.policy);
    EXPECT_EQ(after.nice, before.nice);
    EXPECT_EQ(after.util_min, before.util_min);
    EXPECT_EQ(after.util_max, before.util_max);
    if (rc < 0) {
        EXPECT_TRUE(forbidden(e)) << strerror(e);
    } else {
        EXPECT_EQ(rc, applies ? 1 : 0);
    }
    if (rc == 1) {
        EXPECT_TRUE(after.flags & kResetOnFork);
        EXPECT_EQ(after.runtime, uint64_t{SPAWN_THREAD_SLICE_NS});
    } else {
        EXPECT_EQ(after.flags, before.flags);
        EXPECT_EQ(after.runtime, before.runtime);
    }
    ASSERT_TRUE(task_attr(&task_after));
    EXPECT_EQ(task_after.policy, task_before.policy);
    EXPECT_EQ(task_after.nice, task_before.nice);
    EXPECT_EQ(task_after.runtime, task_before.runtime) << "the task kept the thread's slice";
    EXPECT_EQ(task_after.flags, task_before.flags);
    EXPECT_EQ(task_after.util_min, task_before.util_min);
    EXPECT_EQ(task_after.util_max, task_before.util_max);
}

class SpawnSliceTest : public TempDirTest
{
  protected:
    SpawnSliceTest() : TempDirTest("pmc-spawn-slice-test") {}
};

TEST_F(SpawnSliceTest, SpawningThreadGetsItTasksDoNot)
{
    std::thread([] { check_thread(SCHED_OTHER); }).join();
}

TEST_F(SpawnSliceTest, BatchPolicyIsLeftAlone)
{
    std::thread([] { check_thread(SCHED_BATCH); }).join();
}

TEST_F(SpawnSliceTest, IdlePolicyIsLeftAlone)
{
    std::thread([] { check_thread(SCHED_IDLE); }).join();
}

} // namespace
