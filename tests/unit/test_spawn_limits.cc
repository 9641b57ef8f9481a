// test_spawn_limits.cc - unit tests of spawn_request.affinity and
// .memory_limit_bytes (engine/exec/spawn.h), and of the clone-based child.
//
// CPU binding: the child's Cpus_allowed_list (read by the child itself from
// /proc/self/status) is each single CPU we may use, a pair, or ours when no
// set is given, also when the spawning thread is bound by
// spawn_thread_pin(); a set without a usable CPU fails with EINVAL.  Memory limit:
// the child's `ulimit -v` (soft and hard) shows the limit in KB, 5000 MB is
// not truncated at 4 GiB, 0 inherits, a limit above our hard limit is
// lowered to it; a shell that reads 200 MB into a variable fails under 64 MB
// and reads 20 MB under 512 MB.  PATH: searched in the task's environment,
// skipping non-executable files and directories; EACCES when only
// non-executable candidates exist, ENOENT when none.  With binding and limit
// set, the rest of the contract still holds: exec failures, empty signal
// mask and default dispositions (and the parent's own mask and handlers
// untouched), process group, descriptors (also stdout and stderr given
// swapped at 2 and 1), a bad descriptor reported as EBADF.  Many threads
// spawning at once (the CLONE_VM child under ThreadSanitizer).
//
// Every wait is bounded: poll on the pidfd with a timeout, then SIGKILL.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "testutil.h"

namespace
{

using namespace testutil;

const uint64_t kMiB = 1024 * 1024;

// The kernel's list form, for comparison with Cpus_allowed_list.
std::string cpu_list(const cpu_set_t &s)
{
    std::string out;
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (!CPU_ISSET(c, &s))
            continue;
        int e = c;
        while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &s))
            e++;
        out += (out.empty() ? "" : ",") + std::to_string(c);
        if (e > c)
            out += "-" + std::to_string(e);
        c = e;
    }
    return out;
}

std::vector<int> my_cpus()
{
    cpu_set_t s;
    std::vector<int> v;
    if (sched_getaffinity(0, sizeof s, &s) == 0)
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &s))
                v.push_back(c);
    return v;
}

// The child's own Cpus_allowed_list.
std::string child_cpus(const cpu_set_t *affinity, int *rc = nullptr)
{
    SpawnOptions o;
    o.affinity = affinity;
    SpawnResult r = spawn_and_wait({"/bin/grep", "^Cpus_allowed_list", "/proc/self/status"}, o);
    if (rc)
        *rc = r.rc;
    EXPECT_EQ(r.status, 0) << r.err;
    return status_field(r.out, "Cpus_allowed_list");
}

class SpawnLimitsTest : public TempDirTest
{
  protected:
    SpawnLimitsTest() : TempDirTest("pmc-spawn-limits") {}
};

// ---- CPU binding ---------------------------------------------------------

TEST_F(SpawnLimitsTest, AffinityEachSingleCpu)
{
    std::vector<int> cpus = my_cpus();
    ASSERT_FALSE(cpus.empty());
    for (size_t i = 0; i < cpus.size() && i < 8; i++) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus[i], &one);
        EXPECT_EQ(child_cpus(&one), std::to_string(cpus[i]));
    }
}

TEST_F(SpawnLimitsTest, AffinityPair)
{
    std::vector<int> cpus = my_cpus();
    if (cpus.size() < 2)
        GTEST_SKIP() << "needs two CPUs";
    cpu_set_t two;
    CPU_ZERO(&two);
    CPU_SET(cpus.front(), &two);
    CPU_SET(cpus.back(), &two);
    EXPECT_EQ(child_cpus(&two), cpu_list(two));
}

TEST_F(SpawnLimitsTest, NoAffinityInherits)
{
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    EXPECT_EQ(child_cpus(nullptr), cpu_list(mine));
}

// The calling thread's own binding is what "inherit" means.
TEST_F(SpawnLimitsTest, NoAffinityInheritsCallingThread)
{
    std::vector<int> cpus = my_cpus();
    std::string got;
    std::thread t([&] {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus.back(), &one);
        sched_setaffinity(0, sizeof one, &one);
        got = child_cpus(nullptr);
    });
    t.join();
    EXPECT_EQ(got, std::to_string(cpus.back()));
}

// spawn_thread_pin(): the thread is bound to one CPU, and its children get
// back the CPUs it had before (also after a second pin), unless their
// request names CPUs of its own.
TEST_F(SpawnLimitsTest, PinnedThreadsChildrenGetItsCpusBack)
{
    std::vector<int> cpus = my_cpus();
    if (cpus.size() < 2) // on one CPU the pin is the thread's whole set
        GTEST_SKIP() << "needs 2 CPUs; this process may run on " << cpus.size();
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    int rc = -1, again_rc = -1;
    std::string self, child, own, again;
    std::thread t([&] {
        rc = spawn_thread_pin(cpus.back());
        cpu_set_t now;
        sched_getaffinity(0, sizeof now, &now);
        self = cpu_list(now);
        child = child_cpus(nullptr);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpus.front(), &one);
        own = child_cpus(&one);
        again_rc = spawn_thread_pin(cpus.front());
        again = child_cpus(nullptr);
    });
    t.join();
    ASSERT_EQ(rc, 0) << strerror(rc);
    EXPECT_EQ(self, std::to_string(cpus.back()));
    EXPECT_EQ(child, cpu_list(mine));
    EXPECT_EQ(own, std::to_string(cpus.front()));
    EXPECT_EQ(again_rc, 0);
    EXPECT_EQ(again, cpu_list(mine)) << "a second pin gave its first binding to the children";
    expect_no_children();
}

// A pinned thread bound anew by someone else (taskset -a -p on the running
// process) is no longer on exactly its CPU: its children inherit the new
// binding, not the CPUs it had before its pin.
TEST_F(SpawnLimitsTest, PinnedThreadBoundAnewGivesItsChildrenTheNewCpus)
{
    std::vector<int> cpus = my_cpus();
    if (cpus.size() < 2) // the new binding must differ from the old set
        GTEST_SKIP() << "needs 2 CPUs; this process may run on " << cpus.size();
    int rc = -1;
    std::string child;
    std::thread t([&] {
        rc = spawn_thread_pin(cpus.front());
        cpu_set_t other;
        CPU_ZERO(&other);
        CPU_SET(cpus.back(), &other);
        if (rc == 0 && sched_setaffinity(0, sizeof other, &other) != 0)
            rc = errno;
        child = child_cpus(nullptr);
    });
    t.join();
    ASSERT_EQ(rc, 0) << strerror(rc);
    EXPECT_EQ(child, std::to_string(cpus.back())) << "the pin's old CPUs came back";
    expect_no_children();
}

// A CPU the thread may not run on, or no CPU at all, is EINVAL, and the
// thread and its children keep their CPUs.
TEST_F(SpawnLimitsTest, PinToACpuNotOursIsEinvalAndChangesNothing)
{
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    int missing = -1;
    for (int c = CPU_SETSIZE - 1; c >= 0 && missing < 0; c--)
        if (!CPU_ISSET(c, &mine))
            missing = c;
    ASSERT_GE(missing, 0) << "every CPU of the set is ours";
    std::vector<int> rcs;
    std::string self, child;
    std::thread t([&] {
        for (int cpu : {-1, CPU_SETSIZE, missing})
            rcs.push_back(spawn_thread_pin(cpu));
        cpu_set_t now;
        sched_getaffinity(0, sizeof now, &now);
        self = cpu_list(now);
        child = child_cpus(nullptr);
    });
    t.join();
    EXPECT_EQ(rcs, (std::vector<int>{EINVAL, EINVAL, EINVAL}));
    EXPECT_EQ(self, cpu_list(mine));
    EXPECT_EQ(child, cpu_list(mine));
}

TEST_F(SpawnLimitsTest, AffinityWithoutUsableCpuIsEinval)
{
    cpu_set_t none;
    CPU_ZERO(&none);
    CPU_SET(CPU_SETSIZE - 1, &none); // no machine here has CPU 1023 online
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    if (conf >= CPU_SETSIZE)
        GTEST_SKIP() << "CPU " << CPU_SETSIZE - 1 << " may exist here";
    SpawnOptions o;
    o.affinity = &none;
    SpawnResult r = spawn_and_wait({"/bin/true"}, o);
    EXPECT_EQ(r.rc, EINVAL) << strerror(r.rc);
    expect_no_children();
}

// ---- memory limit ----------------------------------------------------------

std::string child_ulimit(uint64_t limit)
{
    SpawnOptions o;
    o.limit = limit;
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "ulimit -v; ulimit -H -v"}, o);
    EXPECT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
}

rlim_t my_hard_as()
{
    struct rlimit rl;
    getrlimit(RLIMIT_AS, &rl);
    return rl.rlim_max;
}

std::string kb(rlim_t bytes)
{
    return bytes == RLIM_INFINITY ? "unlimited" : std::to_string(bytes / 1024);
}

TEST_F(SpawnLimitsTest, MemoryLimitSoftAndHard)
{
    if (my_hard_as() < 64 * kMiB)
        GTEST_SKIP() << "our own hard RLIMIT_AS is below 64 MB";
    EXPECT_EQ(child_ulimit(64 * kMiB), "65536\n65536\n");
}

// PMC computed MB * 1024 * 1024 in 32 bits: 5000 MB became 904 MB.
TEST_F(SpawnLimitsTest, MemoryLimitAbove4GiBNotTruncated)
{
    if (my_hard_as() < 5000 * kMiB)
        GTEST_SKIP() << "our own hard RLIMIT_AS is below 5000 MB";
    EXPECT_EQ(child_ulimit(5000 * kMiB), "5120000\n5120000\n");
    if (my_hard_as() >= 100000 * kMiB) {
        EXPECT_EQ(child_ulimit(100000 * kMiB), "102400000\n102400000\n");
    }
}

TEST_F(SpawnLimitsTest, NoMemoryLimitInherits)
{
    struct rlimit rl;
    ASSERT_EQ(getrlimit(RLIMIT_AS, &rl), 0);
    EXPECT_EQ(child_ulimit(0), kb(rl.rlim_cur) + "\n" + kb(rl.rlim_max) + "\n");
}

// An unprivileged process cannot raise its hard limit: the request is
// lowered to ours.  Done in a forked child with a lowered hard limit (not
// under ASan/TSan, whose reserved address space exceeds any such limit).
TEST_F(SpawnLimitsTest, MemoryLimitAboveOurHardLimitIsLowered)
{
#if PMC_TEST_SANITIZED
    GTEST_SKIP() << "a lowered RLIMIT_AS breaks the sanitizer's own mappings";
#else
    if (my_hard_as() != RLIM_INFINITY && my_hard_as() < 9000 * kMiB)
        GTEST_SKIP() << "our own hard RLIMIT_AS is already low";
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t f = fork();
    ASSERT_GE(f, 0);
    if (f == 0) {
        close(p[0]);
        struct rlimit rl = {8000 * kMiB, 8000 * kMiB};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            _exit(2);
        Argv av{"/bin/sh", "-c", "ulimit -v; ulimit -H -v"};
        Argv ev{"PATH=/usr/bin:/bin"};
        struct spawn_request req = {};
        req.argv = av.get();
        req.envp = ev.get();
        req.stdout_fd = p[1];
        req.stderr_fd = 2;
        req.memory_limit_bytes = 16000 * kMiB;
        pid_t pid;
        int pidfd;
        if (spawn_task(&req, &pid, &pidfd) != 0)
            _exit(3);
        int st;
        waitpid(pid, &st, 0);
        _exit(WIFEXITED(st) ? WEXITSTATUS(st) : 4);
    }
    close(p[1]);
    std::string out = read_to_eof(p[0]);
    close(p[0]);
    int st;
    ASSERT_EQ(waitpid(f, &st, 0), f);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
    EXPECT_EQ(out, "8192000\n8192000\n");
#endif
}

// A shell, under a memory limit, reads `bytes` bytes into a variable x and
// then runs `then`.
SpawnResult shell_reads(uint64_t limit, const std::string &bytes, const std::string &then)
{
    SpawnOptions o;
    o.limit = limit;
    return spawn_and_wait(
        {"/bin/sh", "-c", "x=$(head -c " + bytes + " /dev/zero | tr '\\0' a); " + then}, o);
}

// Reading 200 MB into a shell variable needs more than 64 MB.
TEST_F(SpawnLimitsTest, AllocationBeyondLimitFails)
{
    SpawnResult r = shell_reads(64 * kMiB, "200000000", "echo ok");
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out.find("ok"), std::string::npos) << r.out;
    EXPECT_FALSE(r.code == CLD_EXITED && r.status == 0) << "the allocation succeeded";
}

TEST_F(SpawnLimitsTest, AllocationWithinLimitSucceeds)
{
    SpawnResult r = shell_reads(512 * kMiB, "20000000", "echo ${#x}");
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.code, CLD_EXITED);
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, "20000000\n");
}

// ---- PATH search -------------------------------------------------------------

const char kProbe[] = "#!/bin/sh\necho \"$0\"\n";

TEST_F(SpawnLimitsTest, PathOfTheTaskEnvironmentIsSearched)
{
    std::string prog = file("bin/pmc-limits-probe", kProbe, 0755);
    SpawnOptions o;
    o.env = {"PATH=/nonexistent:" + dir_ + "/bin:/usr/bin:/bin"};
    SpawnResult r = spawn_and_wait({"pmc-limits-probe"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, prog + "\n");
}

TEST_F(SpawnLimitsTest, PathSkipsNonExecutableAndDirectories)
{
    file("a/pmc-limits-probe", kProbe, 0644);
    file("b/pmc-limits-probe/x", "", 0644); // a directory of that name
    std::string good = file("c/pmc-limits-probe", kProbe, 0755);
    SpawnOptions o;
    o.env = {"PATH=" + dir_ + "/a:" + dir_ + "/b:" + dir_ + "/c"};
    SpawnResult r = spawn_and_wait({"pmc-limits-probe"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, good + "\n");
}

TEST_F(SpawnLimitsTest, PathWithOnlyNonExecutableIsEacces)
{
    file("a/pmc-limits-probe", kProbe, 0644);
    SpawnOptions o;
    o.env = {"PATH=/nonexistent:" + dir_ + "/a"};
    SpawnResult r = spawn_and_wait({"pmc-limits-probe"}, o);
    EXPECT_EQ(r.rc, EACCES) << strerror(r.rc);
    expect_no_children();
}

TEST_F(SpawnLimitsTest, PathNotFoundIsEnoent)
{
    SpawnOptions o;
    o.env = {"PATH=/nonexistent:" + dir_};
    SpawnResult r = spawn_and_wait({"sh"}, o); // in our PATH, not in the task's
    EXPECT_EQ(r.rc, ENOENT) << strerror(r.rc);
    SpawnResult empty = spawn_and_wait({""});
    EXPECT_EQ(empty.rc, ENOENT) << strerror(empty.rc);
    expect_no_children();
}

TEST_F(SpawnLimitsTest, NoPathUsesDefault)
{
    SpawnOptions o;
    o.env = {"HOME=/"};
    SpawnResult r = spawn_and_wait({"true"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.status, 0);
}

// ---- the rest of the contract with binding and limit set ---------------------

SpawnOptions bound_and_limited(cpu_set_t *one)
{
    std::vector<int> cpus = my_cpus();
    CPU_ZERO(one);
    CPU_SET(cpus.empty() ? 0 : cpus.front(), one);
    SpawnOptions o;
    o.affinity = one;
    o.limit = 1024 * kMiB;
    return o;
}

TEST_F(SpawnLimitsTest, ExecFailuresWithLimits)
{
    cpu_set_t one;
    SpawnOptions o = bound_and_limited(&one);
    SpawnResult missing = spawn_and_wait({dir_ + "/no-such-program"}, o);
    EXPECT_EQ(missing.rc, ENOENT) << strerror(missing.rc);
    std::string p = file("script.sh", "#!/bin/sh\necho should not run\n", 0644);
    SpawnResult noexec = spawn_and_wait({p}, o);
    EXPECT_EQ(noexec.rc, EACCES) << strerror(noexec.rc);
    EXPECT_EQ(noexec.out, "");
    std::string g = file("garbage", "\x01\x02\x03 not a program\n", 0755);
    SpawnResult garbage = spawn_and_wait({g}, o);
    EXPECT_EQ(garbage.rc, ENOEXEC) << strerror(garbage.rc);
    expect_no_children();
}

// A task that exits 127 is a task, not an exec failure.
TEST_F(SpawnLimitsTest, Exit127IsNotAnExecFailure)
{
    cpu_set_t one;
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "exit 127"}, bound_and_limited(&one));
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(r.code, CLD_EXITED);
    EXPECT_EQ(r.status, 127);
}

std::string status_lines(const std::string &all, const std::vector<std::string> &names)
{
    std::istringstream in(all);
    std::string line, out;
    while (std::getline(in, line))
        for (const auto &n : names)
            if (line.compare(0, n.size() + 1, n + ":") == 0)
                out += line + "\n";
    return out;
}

void on_sigterm(int) {}

// The parent blocks SIGUSR1, ignores SIGINT and a real-time signal, and
// catches SIGTERM: the child starts with nothing blocked, ignored or caught,
// and the parent keeps all.
TEST_F(SpawnLimitsTest, SignalsResetInChildKeptInParent)
{
    sigset_t block, old_mask, after;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
    struct sigaction ign = {}, catch_term = {}, old_int = {}, old_rt = {}, old_term = {}, now = {};
    ign.sa_handler = SIG_IGN;
    catch_term.sa_handler = on_sigterm;
    ASSERT_EQ(sigaction(SIGINT, &ign, &old_int), 0);
    ASSERT_EQ(sigaction(SIGRTMIN + 2, &ign, &old_rt), 0);
    ASSERT_EQ(sigaction(SIGTERM, &catch_term, &old_term), 0);
    spawn_note_signals(); // the two ignored ones; SIGTERM's handler needs no note

    cpu_set_t one;
    SpawnResult r = spawn_and_wait({"/bin/cat", "/proc/self/status"}, bound_and_limited(&one));

    pthread_sigmask(SIG_SETMASK, nullptr, &after);
    EXPECT_TRUE(sigismember(&after, SIGUSR1)) << "the parent's mask changed";
    sigaction(SIGTERM, nullptr, &now);
    EXPECT_EQ(now.sa_handler, on_sigterm) << "the parent's handler changed";
    sigaction(SIGINT, nullptr, &now);
    EXPECT_EQ(now.sa_handler, SIG_IGN);
    sigaction(SIGINT, &old_int, nullptr);
    sigaction(SIGRTMIN + 2, &old_rt, nullptr);
    sigaction(SIGTERM, &old_term, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    spawn_note_signals();

    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(status_lines(r.out, {"SigBlk", "SigIgn", "SigCgt"}),
              "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
              "SigCgt:\t0000000000000000\n");
}

TEST_F(SpawnLimitsTest, OwnProcessGroupWithLimits)
{
    cpu_set_t one;
    expect_own_process_group(bound_and_limited(&one));
}

// fds 0-4 in the child: /dev/null, the captures, the forwards; nothing of
// ours beyond what the test process itself inherited without close-on-exec.
TEST_F(SpawnLimitsTest, DescriptorsWithLimits)
{
    int a[2], b[2];
    ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
    cpu_set_t one;
    SpawnOptions o = bound_and_limited(&one);
    o.forwards = {b[1], a[1]};
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c",
                                    "echo three >&3; echo four >&4; readlink /proc/$$/fd/0; "
                                    "ls /proc/$$/fd; :"},
                                   o);
    close(a[1]);
    close(b[1]);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(read_to_eof(b[0]), "three\n");
    EXPECT_EQ(read_to_eof(a[0]), "four\n");
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "/dev/null");
    std::set<int> seen = parse_fd_list(r.out.substr(r.out.find('\n') + 1));
    for (int want : {0, 1, 2, 3, 4})
        EXPECT_EQ(seen.count(want), 1u) << r.out;
    for (int f : seen) {
        int fl = f > 4 ? fcntl(f, F_GETFD) : 0;
        EXPECT_TRUE(fl != -1 && !(fl & FD_CLOEXEC)) << "fd " << f << " is none of the child's";
    }
    close(a[0]);
    close(b[0]);
}

// stdout's capture at 2 and stderr's at 1: each must land where it belongs.
TEST_F(SpawnLimitsTest, StdoutAndStderrGivenSwapped)
{
    int out = make_capture("out"), err = make_capture("err");
    SpawnResult r;
    {
        fflush(stdout);
        fflush(stderr);
        FdAt out_at2(out, 2), err_at1(err, 1);
        ASSERT_TRUE(out_at2.ok() && err_at1.ok());
        cpu_set_t one;
        SpawnOptions o = bound_and_limited(&one);
        o.stdout_fd = 2;
        o.stderr_fd = 1;
        r = spawn_and_wait({"/bin/sh", "-c", "echo to-out; echo to-err >&2"}, o);
    }
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(contents(out), "to-out\n");
    EXPECT_EQ(contents(err), "to-err\n");
    close(out);
    close(err);
}

TEST_F(SpawnLimitsTest, BadDescriptorIsEbadf)
{
    SpawnOptions o;
    o.stdout_fd = 1000; // not open
    SpawnResult r = spawn_and_wait({"/bin/true"}, o);
    EXPECT_EQ(r.rc, EBADF) << strerror(r.rc);
    expect_no_children();
}

TEST_F(SpawnLimitsTest, MissingArgvIsEinval)
{
    struct spawn_request req = {};
    char *empty[] = {nullptr};
    req.argv = empty;
    req.envp = empty;
    req.stdout_fd = req.stderr_fd = 2;
    pid_t pid;
    int pidfd;
    EXPECT_EQ(spawn_task(&req, &pid, &pidfd), EINVAL);
    req.argv = nullptr;
    EXPECT_EQ(spawn_task(&req, &pid, &pidfd), EINVAL);
}

// Several threads spawn at once, with binding and limits, while signals
// arrive; every child runs and exits 0, the caught signals reach the parent.
std::atomic<int> g_usr2{0};
void on_sigusr2(int)
{
    g_usr2++;
}

TEST_F(SpawnLimitsTest, ConcurrentSpawnsFromThreads)
{
    struct sigaction sa = {}, old = {};
    sa.sa_handler = on_sigusr2;
    ASSERT_EQ(sigaction(SIGUSR2, &sa, &old), 0);
    std::atomic<int> failures{0}, done{0};
    std::atomic<bool> stop{false};
    const int kThreads = 4, kEach = 60;
    std::thread pinger([&] {
        while (!stop) {
            kill(getpid(), SIGUSR2);
            usleep(200);
        }
    });
    std::vector<std::thread> ts;
    for (int t = 0; t < kThreads; t++)
        ts.emplace_back([&, t] {
            cpu_set_t one;
            SpawnOptions o = bound_and_limited(&one);
            for (int i = 0; i < kEach; i++) {
                SpawnResult r = spawn_and_wait(t % 2 ? std::vector<std::string>{"/bin/true"}
                                                     : std::vector<std::string>{"true"},
                                               o);
                if (r.rc != 0 || r.code != CLD_EXITED || r.status != 0)
                    failures++;
                done++;
            }
        });
    for (auto &t : ts)
        t.join();
    stop = true;
    pinger.join();
    sigaction(SIGUSR2, &old, nullptr);
    EXPECT_EQ(failures, 0);
    EXPECT_EQ(done, kThreads * kEach);
    EXPECT_GT(g_usr2, 0);
    expect_no_children();
}

} // namespace
