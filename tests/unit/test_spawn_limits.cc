// test_spawn_limits.cc - unit tests of spawn_request.affinity and
// .memory_limit_bytes (engine/spawn.h), and of the clone-based child.
//
// CPU binding: the child's Cpus_allowed_list (read by the child itself from
// /proc/self/status) is each single CPU we may use, a pair, or ours when no
// set is given; a set without a usable CPU fails with EINVAL.  Memory limit:
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
#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/spawn.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PMC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PMC_TEST_SANITIZED 1
#endif
#endif

namespace
{

const int kWaitMs = 20000; // watchdog for every child
const uint64_t kMiB = 1024 * 1024;

class Vec
{
  public:
    explicit Vec(std::vector<std::string> items) : items_(std::move(items))
    {
        for (auto &s : items_)
            ptrs_.push_back(s.data());
        ptrs_.push_back(nullptr);
    }
    char *const *get()
    {
        return ptrs_.data();
    }

  private:
    std::vector<std::string> items_;
    std::vector<char *> ptrs_;
};

int make_capture(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    EXPECT_GE(fd, 0) << strerror(errno);
    return fd;
}

std::string contents(int fd)
{
    std::string s;
    char buf[4096];
    off_t off = 0;
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
        s.append(buf, static_cast<size_t>(n));
        off += n;
    }
    return s;
}

bool wait_child(pid_t pid, int pidfd, siginfo_t *si)
{
    struct pollfd p = {pidfd, POLLIN, 0};
    int r;
    do
        r = poll(&p, 1, kWaitMs);
    while (r < 0 && errno == EINTR);
    bool in_time = r == 1;
    if (!in_time)
        kill(pid, SIGKILL);
    memset(si, 0, sizeof *si);
    int w;
    do
        w = waitid(P_PIDFD, static_cast<id_t>(pidfd), si, WEXITED);
    while (w < 0 && errno == EINTR);
    EXPECT_EQ(w, 0) << "waitid(P_PIDFD): " << strerror(errno);
    close(pidfd);
    EXPECT_TRUE(in_time) << "child " << pid << " did not exit within " << kWaitMs << " ms";
    return in_time && w == 0;
}

struct Result {
    int rc = -1;
    pid_t pid = -1;
    int code = -1;
    int status = -1;
    std::string out, err;
};

struct Options {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    const cpu_set_t *affinity = nullptr;
    uint64_t limit = 0;
    std::vector<int> forwards;
    int stdout_fd = -1; // -1: a fresh capture
    int stderr_fd = -1;
};

Result run(std::vector<std::string> argv, const Options &opt = Options())
{
    Result res;
    int out = opt.stdout_fd >= 0 ? opt.stdout_fd : make_capture("out");
    int err = opt.stderr_fd >= 0 ? opt.stderr_fd : make_capture("err");
    Vec av(std::move(argv));
    Vec ev(opt.env);
    struct spawn_request req = {};
    req.argv = av.get();
    req.envp = ev.get();
    req.stdout_fd = out;
    req.stderr_fd = err;
    req.forward_fds = opt.forwards.empty() ? nullptr : opt.forwards.data();
    req.nforward = static_cast<int>(opt.forwards.size());
    req.affinity = opt.affinity;
    req.memory_limit_bytes = opt.limit;
    int pidfd = -1;
    res.rc = spawn_task(&req, &res.pid, &pidfd);
    if (res.rc == 0) {
        siginfo_t si;
        if (wait_child(res.pid, pidfd, &si)) {
            res.code = si.si_code;
            res.status = si.si_status;
        }
    }
    res.out = contents(out);
    res.err = contents(err);
    if (opt.stdout_fd < 0)
        close(out);
    if (opt.stderr_fd < 0)
        close(err);
    return res;
}

void expect_no_children()
{
    int st;
    errno = 0;
    pid_t w = waitpid(-1, &st, WNOHANG);
    EXPECT_EQ(w, -1) << "a child was left behind (pid " << w << ")";
    EXPECT_EQ(errno, ECHILD);
}

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
    Options o;
    o.affinity = affinity;
    Result r = run({"/bin/grep", "^Cpus_allowed_list", "/proc/self/status"}, o);
    if (rc)
        *rc = r.rc;
    EXPECT_EQ(r.status, 0) << r.err;
    size_t tab = r.out.find_first_of(" \t");
    if (tab == std::string::npos)
        return "?" + r.out;
    size_t start = r.out.find_first_not_of(" \t", tab);
    return r.out.substr(start, r.out.find('\n') - start);
}

class SpawnLimitsTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/pmc-spawn-limits.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override
    {
        std::string cmd = "rm -rf '" + dir_ + "'";
        EXPECT_EQ(system(cmd.c_str()), 0);
    }
    // A file under dir_ with the given mode.
    std::string file(const std::string &rel, const std::string &text, mode_t mode)
    {
        std::string p = dir_ + "/" + rel;
        size_t slash = p.rfind('/');
        std::string mk = "mkdir -p '" + p.substr(0, slash) + "'";
        EXPECT_EQ(system(mk.c_str()), 0);
        FILE *f = fopen(p.c_str(), "w");
        EXPECT_NE(f, nullptr) << p;
        if (f) {
            fputs(text.c_str(), f);
            fclose(f);
        }
        EXPECT_EQ(chmod(p.c_str(), mode), 0);
        return p;
    }
    std::string dir_;
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

TEST_F(SpawnLimitsTest, AffinityWithoutUsableCpuIsEinval)
{
    cpu_set_t none;
    CPU_ZERO(&none);
    CPU_SET(CPU_SETSIZE - 1, &none); // no machine here has CPU 1023 online
    long conf = sysconf(_SC_NPROCESSORS_CONF);
    if (conf >= CPU_SETSIZE)
        GTEST_SKIP() << "CPU " << CPU_SETSIZE - 1 << " may exist here";
    Options o;
    o.affinity = &none;
    Result r = run({"/bin/true"}, o);
    EXPECT_EQ(r.rc, EINVAL) << strerror(r.rc);
    expect_no_children();
}

// ---- memory limit ----------------------------------------------------------

std::string child_ulimit(uint64_t limit)
{
    Options o;
    o.limit = limit;
    Result r = run({"/bin/sh", "-c", "ulimit -v; ulimit -H -v"}, o);
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
#ifdef PMC_TEST_SANITIZED
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
        Vec av({"/bin/sh", "-c", "ulimit -v; ulimit -H -v"});
        Vec ev({"PATH=/usr/bin:/bin"});
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
    std::string out;
    char buf[256];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof buf)) > 0)
        out.append(buf, static_cast<size_t>(n));
    close(p[0]);
    int st;
    ASSERT_EQ(waitpid(f, &st, 0), f);
    EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "status " << st;
    EXPECT_EQ(out, "8192000\n8192000\n");
#endif
}

// Reading 200 MB into a shell variable needs more than 64 MB.
TEST_F(SpawnLimitsTest, AllocationBeyondLimitFails)
{
    Options o;
    o.limit = 64 * kMiB;
    Result r = run({"/bin/sh", "-c", "x=$(head -c 200000000 /dev/zero | tr '\\0' a); echo ok"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out.find("ok"), std::string::npos) << r.out;
    EXPECT_FALSE(r.code == CLD_EXITED && r.status == 0) << "the allocation succeeded";
}

TEST_F(SpawnLimitsTest, AllocationWithinLimitSucceeds)
{
    Options o;
    o.limit = 512 * kMiB;
    Result r =
        run({"/bin/sh", "-c", "x=$(head -c 20000000 /dev/zero | tr '\\0' a); echo ${#x}"}, o);
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
    Options o;
    o.env = {"PATH=/nonexistent:" + dir_ + "/bin:/usr/bin:/bin"};
    Result r = run({"pmc-limits-probe"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, prog + "\n");
}

TEST_F(SpawnLimitsTest, PathSkipsNonExecutableAndDirectories)
{
    file("a/pmc-limits-probe", kProbe, 0644);
    file("b/pmc-limits-probe/x", "", 0644); // a directory of that name
    std::string good = file("c/pmc-limits-probe", kProbe, 0755);
    Options o;
    o.env = {"PATH=" + dir_ + "/a:" + dir_ + "/b:" + dir_ + "/c"};
    Result r = run({"pmc-limits-probe"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, good + "\n");
}

TEST_F(SpawnLimitsTest, PathWithOnlyNonExecutableIsEacces)
{
    file("a/pmc-limits-probe", kProbe, 0644);
    Options o;
    o.env = {"PATH=/nonexistent:" + dir_ + "/a"};
    Result r = run({"pmc-limits-probe"}, o);
    EXPECT_EQ(r.rc, EACCES) << strerror(r.rc);
    expect_no_children();
}

TEST_F(SpawnLimitsTest, PathNotFoundIsEnoent)
{
    Options o;
    o.env = {"PATH=/nonexistent:" + dir_};
    Result r = run({"sh"}, o); // in our PATH, not in the task's
    EXPECT_EQ(r.rc, ENOENT) << strerror(r.rc);
    Result empty = run({""});
    EXPECT_EQ(empty.rc, ENOENT) << strerror(empty.rc);
    expect_no_children();
}

TEST_F(SpawnLimitsTest, NoPathUsesDefault)
{
    Options o;
    o.env = {"HOME=/"};
    Result r = run({"true"}, o);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.status, 0);
}

// ---- the rest of the contract with binding and limit set ---------------------

Options bound_and_limited(cpu_set_t *one)
{
    std::vector<int> cpus = my_cpus();
    CPU_ZERO(one);
    CPU_SET(cpus.empty() ? 0 : cpus.front(), one);
    Options o;
    o.affinity = one;
    o.limit = 1024 * kMiB;
    return o;
}

TEST_F(SpawnLimitsTest, ExecFailuresWithLimits)
{
    cpu_set_t one;
    Options o = bound_and_limited(&one);
    Result missing = run({dir_ + "/no-such-program"}, o);
    EXPECT_EQ(missing.rc, ENOENT) << strerror(missing.rc);
    std::string p = file("script.sh", "#!/bin/sh\necho should not run\n", 0644);
    Result noexec = run({p}, o);
    EXPECT_EQ(noexec.rc, EACCES) << strerror(noexec.rc);
    EXPECT_EQ(noexec.out, "");
    std::string g = file("garbage", "\x01\x02\x03 not a program\n", 0755);
    Result garbage = run({g}, o);
    EXPECT_EQ(garbage.rc, ENOEXEC) << strerror(garbage.rc);
    expect_no_children();
}

// A task that exits 127 is a task, not an exec failure.
TEST_F(SpawnLimitsTest, Exit127IsNotAnExecFailure)
{
    cpu_set_t one;
    Result r = run({"/bin/sh", "-c", "exit 127"}, bound_and_limited(&one));
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

    cpu_set_t one;
    Result r = run({"/bin/cat", "/proc/self/status"}, bound_and_limited(&one));

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

    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(status_lines(r.out, {"SigBlk", "SigIgn", "SigCgt"}),
              "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n"
              "SigCgt:\t0000000000000000\n");
}

TEST_F(SpawnLimitsTest, OwnProcessGroupWithLimits)
{
    cpu_set_t one;
    Result r = run(
        {"/bin/sh", "-c", "read pid comm state ppid pgrp rest < /proc/$$/stat; echo $pid $pgrp"},
        bound_and_limited(&one));
    ASSERT_EQ(r.rc, 0);
    std::istringstream in(r.out);
    long pid = -1, pgrp = -2;
    in >> pid >> pgrp;
    EXPECT_EQ(pid, r.pid) << r.out;
    EXPECT_EQ(pgrp, r.pid) << r.out;
}

// fds 0-4 in the child: /dev/null, the captures, the forwards; nothing of
// ours beyond what the test process itself inherited without close-on-exec.
TEST_F(SpawnLimitsTest, DescriptorsWithLimits)
{
    int a[2], b[2];
    ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
    cpu_set_t one;
    Options o = bound_and_limited(&one);
    o.forwards = {b[1], a[1]};
    Result r = run({"/bin/sh", "-c",
                    "echo three >&3; echo four >&4; readlink /proc/$$/fd/0; "
                    "ls /proc/$$/fd; :"},
                   o);
    close(a[1]);
    close(b[1]);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    char buf[64] = {};
    EXPECT_GT(read(b[0], buf, sizeof buf - 1), 0);
    EXPECT_STREQ(buf, "three\n");
    memset(buf, 0, sizeof buf);
    EXPECT_GT(read(a[0], buf, sizeof buf - 1), 0);
    EXPECT_STREQ(buf, "four\n");
    EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "/dev/null");
    std::istringstream fds(r.out.substr(r.out.find('\n') + 1));
    std::set<int> seen;
    int fd;
    while (fds >> fd)
        seen.insert(fd);
    for (int want : {0, 1, 2, 3, 4})
        EXPECT_EQ(seen.count(want), 1u) << r.out;
    for (int f : seen) {
        int fl = f > 4 ? fcntl(f, F_GETFD) : 0;
        EXPECT_TRUE(fl != -1 && !(fl & FD_CLOEXEC)) << "fd " << f << " is none of the child's";
    }
    close(a[0]);
    close(b[0]);
}

// Put fd `from` at number `to` (close-on-exec) for a scope.
class FdAt
{
  public:
    FdAt(int from, int to) : to_(to)
    {
        saved_ = fcntl(to, F_DUPFD_CLOEXEC, 100);
        ok_ = dup3(from, to, O_CLOEXEC) == to;
    }
    ~FdAt()
    {
        if (saved_ >= 0) {
            dup2(saved_, to_);
            close(saved_);
        } else {
            close(to_);
        }
    }
    bool ok() const
    {
        return ok_;
    }

  private:
    int to_, saved_ = -1;
    bool ok_ = false;
};

// stdout's capture at 2 and stderr's at 1: each must land where it belongs.
TEST_F(SpawnLimitsTest, StdoutAndStderrGivenSwapped)
{
    int out = make_capture("out"), err = make_capture("err");
    Result r;
    {
        fflush(stdout);
        fflush(stderr);
        FdAt out_at2(out, 2), err_at1(err, 1);
        ASSERT_TRUE(out_at2.ok() && err_at1.ok());
        cpu_set_t one;
        Options o = bound_and_limited(&one);
        o.stdout_fd = 2;
        o.stderr_fd = 1;
        r = run({"/bin/sh", "-c", "echo to-out; echo to-err >&2"}, o);
    }
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(contents(out), "to-out\n");
    EXPECT_EQ(contents(err), "to-err\n");
    close(out);
    close(err);
}

TEST_F(SpawnLimitsTest, BadDescriptorIsEbadf)
{
    Options o;
    o.stdout_fd = 1000; // not open
    Result r = run({"/bin/true"}, o);
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
            Options o = bound_and_limited(&one);
            for (int i = 0; i < kEach; i++) {
                Result r = run(t % 2 ? std::vector<std::string>{"/bin/true"}
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
