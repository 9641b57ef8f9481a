// test_spawn.cc - unit tests of engine/spawn.h.
//
// The child as the header promises it: exit status and death by signal read
// with waitid(P_PIDFD) on the returned pidfd; argv passed without a shell;
// stdin from /dev/null; stdout/stderr on the given descriptors (also when a
// source descriptor is low-numbered); the environment exactly as given; its
// own process group; no descriptor of ours except 0, 1, 2 and the forwards
// (a close-on-exec descriptor stays invisible; descriptors the test process
// itself inherited without close-on-exec are tolerated); forwards at 3, 4 in
// order even when the sources are 4 and 3; an empty signal mask and default
// dispositions although the parent blocks SIGUSR1 and ignores SIGINT.  Exec
// failures: ENOENT (127), EACCES (126) and ENOEXEC (126) returned by
// spawn_task with no child left behind.
//
// Every wait is bounded: poll on the pidfd with a timeout, then SIGKILL.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/spawn.h"

namespace
{

const int kWaitMs = 20000; // watchdog for every child

// Owned strings turned into a NULL-terminated char *const[].
class Vec
{
  public:
    Vec(std::initializer_list<std::string> items) : items_(items)
    {
        build();
    }
    explicit Vec(std::vector<std::string> items) : items_(std::move(items))
    {
        build();
    }
    char *const *get()
    {
        return ptrs_.data();
    }

  private:
    void build()
    {
        for (auto &s : items_)
            ptrs_.push_back(s.data());
        ptrs_.push_back(nullptr);
    }
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

std::string read_to_eof(int fd)
{
    std::string s;
    char buf[4096];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return s;
        s.append(buf, static_cast<size_t>(n));
    }
}

// Wait for the child through its pidfd, bounded by kWaitMs; a child that
// overstays is killed and reported as a failure.
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
    int rc = -1; // spawn_task's return
    pid_t pid = -1;
    int code = -1;   // si_code: CLD_EXITED, CLD_KILLED, ...
    int status = -1; // exit code or signal
    std::string out, err;
};

struct Options {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
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

std::set<int> parse_fd_list(const std::string &s)
{
    std::set<int> fds;
    std::istringstream in(s);
    int fd;
    while (in >> fd)
        fds.insert(fd);
    return fds;
}

// Descriptors of this process without close-on-exec above 2: inherited from
// whoever started the test (a harness, a shell) and passed on by any exec.
// The engine opens its own descriptors close-on-exec; these are not its own.
std::set<int> inherited_fds()
{
    std::set<int> fds;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return fds;
    int self = dirfd(d);
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.')
            continue;
        int fd = atoi(e->d_name);
        if (fd <= 2 || fd == self)
            continue;
        int fl = fcntl(fd, F_GETFD);
        if (fl != -1 && !(fl & FD_CLOEXEC))
            fds.insert(fd);
    }
    closedir(d);
    return fds;
}

// The shell lists its own descriptors (ls runs in a child of it; the ": "
// keeps dash from exec'ing ls in place of itself).
const std::vector<std::string> kListFds = {"/bin/sh", "-c", "ls /proc/$$/fd; :"};

// A close-on-exec pipe with both ends moved to numbers >= 50, so that 3 and 4
// can be set up deliberately.
bool high_pipe(int p[2])
{
    int low[2];
    if (pipe2(low, O_CLOEXEC) != 0)
        return false;
    p[0] = fcntl(low[0], F_DUPFD_CLOEXEC, 50);
    p[1] = fcntl(low[1], F_DUPFD_CLOEXEC, 50);
    close(low[0]);
    close(low[1]);
    return p[0] >= 0 && p[1] >= 0;
}

// Put fd `from` at number `to` (close-on-exec), saving whatever was there.
class FdAt
{
  public:
    FdAt(int from, int to) : to_(to)
    {
        saved_flags_ = fcntl(to, F_GETFD);
        if (saved_flags_ != -1)
            saved_ = fcntl(to, F_DUPFD_CLOEXEC, 100);
        ok_ = dup3(from, to, O_CLOEXEC) == to;
    }
    ~FdAt()
    {
        if (saved_ >= 0) {
            dup3(saved_, to_, (saved_flags_ & FD_CLOEXEC) ? O_CLOEXEC : 0);
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
    int to_;
    int saved_ = -1;
    int saved_flags_ = -1;
    bool ok_ = false;
};

class SpawnTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        char tmpl[] = "/tmp/pmc-spawn-test.XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override
    {
        std::string cmd = "rm -rf '" + dir_ + "'";
        EXPECT_EQ(system(cmd.c_str()), 0);
    }
    std::string dir_;
};

// No child of this process may be left over (reaped or still running).
void expect_no_children()
{
    int st;
    errno = 0;
    pid_t w = waitpid(-1, &st, WNOHANG);
    EXPECT_EQ(w, -1) << "a child was left behind (pid " << w << ")";
    EXPECT_EQ(errno, ECHILD);
}

TEST_F(SpawnTest, ExitStatusThroughPidfd)
{
    Result r = run({"/bin/sh", "-c", "exit 3"});
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_GT(r.pid, 0);
    EXPECT_EQ(r.code, CLD_EXITED);
    EXPECT_EQ(r.status, 3);
    Result ok = run({"/bin/true"});
    ASSERT_EQ(ok.rc, 0);
    EXPECT_EQ(ok.code, CLD_EXITED);
    EXPECT_EQ(ok.status, 0);
    expect_no_children();
}

TEST_F(SpawnTest, PidfdIsCloexecAndBelongsToChild)
{
    Vec av{"/bin/true"};
    Vec ev{};
    int out = make_capture("out");
    struct spawn_request req = {};
    req.argv = av.get();
    req.envp = ev.get();
    req.stdout_fd = out;
    req.stderr_fd = out;
    pid_t pid = -1;
    int pidfd = -1;
    ASSERT_EQ(spawn_task(&req, &pid, &pidfd), 0);
    ASSERT_GE(pidfd, 0);
    int fl = fcntl(pidfd, F_GETFD);
    EXPECT_TRUE(fl != -1 && (fl & FD_CLOEXEC));
    siginfo_t si;
    ASSERT_TRUE(wait_child(pid, pidfd, &si));
    EXPECT_EQ(si.si_pid, pid);
    EXPECT_EQ(si.si_code, CLD_EXITED);
    close(out);
}

TEST_F(SpawnTest, DeathBySignal)
{
    Result r = run({"/bin/sh", "-c", "kill -TERM $$"});
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.code, CLD_KILLED);
    EXPECT_EQ(r.status, SIGTERM);
}

TEST_F(SpawnTest, StdoutAndStderrLandInGivenFds)
{
    Result r = run({"/bin/sh", "-c", "echo to-out; echo to-err >&2; echo more-out"});
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.status, 0);
    EXPECT_EQ(r.out, "to-out\nmore-out\n");
    EXPECT_EQ(r.err, "to-err\n");
}

// Our own stdin is replaced by a pipe holding data for the test: the child
// must read /dev/null instead, not that data.
TEST_F(SpawnTest, StdinIsDevNull)
{
    int p[2];
    ASSERT_TRUE(high_pipe(p));
    ASSERT_EQ(write(p[1], "parent-stdin\n", 13), 13);
    close(p[1]);
    Result r;
    {
        FdAt pipe_at0(p[0], 0);
        ASSERT_TRUE(pipe_at0.ok());
        r = run({"/bin/sh", "-c", "readlink /proc/$$/fd/0; cat; echo eof"});
    }
    close(p[0]);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "/dev/null\neof\n");
}

TEST_F(SpawnTest, ArgvPassedWithoutShell)
{
    Result r = run({"/usr/bin/printf", "[%s]\\n", "a b", "$HOME", "*", "'q'", "x;y|z"});
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "[a b]\n[$HOME]\n[*]\n['q']\n[x;y|z]\n");
}

TEST_F(SpawnTest, PathSearchedForBareName)
{
    Result r = run({"sh", "-c", "echo found"});
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, "found\n");
}

TEST_F(SpawnTest, EnvironmentPassedExactly)
{
    Options o;
    o.env = {"A=1", "B=two words", "EMPTY=", "PMC_TASK=ID01", "PMC_CPUS=2"};
    Result r = run({"/usr/bin/env"}, o);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "A=1\nB=two words\nEMPTY=\nPMC_TASK=ID01\nPMC_CPUS=2\n");
}

TEST_F(SpawnTest, EmptyEnvironment)
{
    setenv("PMC_SPAWN_TEST_PARENT_ONLY", "leak", 1);
    Options o;
    o.env = {};
    Result r = run({"/usr/bin/env"}, o);
    unsetenv("PMC_SPAWN_TEST_PARENT_ONLY");
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "");
}

TEST_F(SpawnTest, OwnProcessGroup)
{
    // Seen from the child: its pgrp (field 5 of /proc/PID/stat) is its pid.
    Result r = run({"/bin/sh", "-c",
                    "read pid comm state ppid pgrp rest < /proc/$$/stat; "
                    "echo $pid $pgrp"});
    ASSERT_EQ(r.rc, 0);
    std::istringstream in(r.out);
    long pid = -1, pgrp = -2;
    in >> pid >> pgrp;
    EXPECT_EQ(pid, r.pid) << r.out;
    EXPECT_EQ(pgrp, r.pid) << r.out;
    EXPECT_NE(pgrp, static_cast<long>(getpgrp()));
}

TEST_F(SpawnTest, OwnProcessGroupSeenFromParent)
{
    Vec av{"/bin/true"};
    Vec ev{};
    int out = make_capture("out");
    struct spawn_request req = {};
    req.argv = av.get();
    req.envp = ev.get();
    req.stdout_fd = out;
    req.stderr_fd = out;
    pid_t pid = -1;
    int pidfd = -1;
    ASSERT_EQ(spawn_task(&req, &pid, &pidfd), 0);
    // Not yet reaped (running or a zombie): its process group is queryable.
    EXPECT_EQ(getpgid(pid), pid);
    siginfo_t si;
    EXPECT_TRUE(wait_child(pid, pidfd, &si));
    close(out);
}

TEST_F(SpawnTest, CloexecDescriptorNotInherited)
{
    int secret = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(secret, 0);
    std::set<int> allowed = inherited_fds();
    Result r = run(kListFds);
    ASSERT_EQ(r.rc, 0);
    std::set<int> fds = parse_fd_list(r.out);
    EXPECT_EQ(fds.count(secret), 0u) << "close-on-exec fd " << secret << " visible: " << r.out;
    EXPECT_TRUE(fds.count(0) && fds.count(1) && fds.count(2)) << r.out;
    for (int fd : fds)
        EXPECT_TRUE(fd <= 2 || allowed.count(fd)) << "unexpected fd " << fd << " in child";
    close(secret);
}

TEST_F(SpawnTest, ForwardFdsAppearAt3And4InOrder)
{
    int a[2], b[2];
    ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
    std::set<int> allowed = inherited_fds();
    Options o;
    o.forwards = {a[1], b[1]};
    Result r = run({"/bin/sh", "-c", "echo first >&3; echo second >&4; ls /proc/$$/fd; :"}, o);
    close(a[1]);
    close(b[1]);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(read_to_eof(a[0]), "first\n");
    EXPECT_EQ(read_to_eof(b[0]), "second\n");
    std::set<int> fds = parse_fd_list(r.out);
    for (int want : {0, 1, 2, 3, 4})
        EXPECT_EQ(fds.count(want), 1u) << "fd " << want << " missing: " << r.out;
    for (int fd : fds)
        EXPECT_TRUE(fd <= 4 || allowed.count(fd))
            << "unexpected fd " << fd << " in child (a temporary copy left open?)";
    close(a[0]);
    close(b[0]);
}

// Sources at 4 and 3, targets 3 and 4: a naive dup2(4, 3); dup2(3, 4) would
// send both streams into the same pipe.
TEST_F(SpawnTest, ForwardFdsFromSwappedLowNumbers)
{
    int a[2], b[2];
    ASSERT_TRUE(high_pipe(a));
    ASSERT_TRUE(high_pipe(b));
    {
        FdAt a_at4(a[1], 4), b_at3(b[1], 3);
        ASSERT_TRUE(a_at4.ok() && b_at3.ok());
        close(a[1]);
        close(b[1]);
        Options o;
        o.forwards = {4, 3}; // pipe a -> child fd 3, pipe b -> child fd 4
        Result r = run({"/bin/sh", "-c", "echo to-three >&3; echo to-four >&4"}, o);
        ASSERT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0) << r.err;
    } // the parent's copies at 3 and 4 are closed here
    EXPECT_EQ(read_to_eof(a[0]), "to-three\n");
    EXPECT_EQ(read_to_eof(b[0]), "to-four\n");
    close(a[0]);
    close(b[0]);
}

// Sources already at their targets (3 -> 3, 4 -> 4).
TEST_F(SpawnTest, ForwardFdsAlreadyInPlace)
{
    int a[2], b[2];
    ASSERT_TRUE(high_pipe(a));
    ASSERT_TRUE(high_pipe(b));
    {
        FdAt a_at3(a[1], 3), b_at4(b[1], 4);
        ASSERT_TRUE(a_at3.ok() && b_at4.ok());
        close(a[1]);
        close(b[1]);
        Options o;
        o.forwards = {3, 4};
        Result r = run({"/bin/sh", "-c", "echo A >&3; echo B >&4"}, o);
        ASSERT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0) << r.err;
    }
    EXPECT_EQ(read_to_eof(a[0]), "A\n");
    EXPECT_EQ(read_to_eof(b[0]), "B\n");
    close(a[0]);
    close(b[0]);
}

// A task's stdout capture can be descriptor 0 when the engine was started
// with stdin closed: the child's stdin (/dev/null) must not replace it.
TEST_F(SpawnTest, StdoutSourceAtDescriptorZero)
{
    int cap = make_capture("out0");
    int err = make_capture("err");
    std::string out;
    {
        FdAt cap_at0(cap, 0);
        ASSERT_TRUE(cap_at0.ok());
        Options o;
        o.stdout_fd = 0;
        o.stderr_fd = err;
        Result r = run({"/bin/sh", "-c", "echo hello"}, o);
        ASSERT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0) << r.err;
    }
    EXPECT_EQ(contents(cap), "hello\n") << "task stdout lost when its capture is fd 0";
    close(cap);
    close(err);
}

// The parent blocks SIGUSR1 and ignores SIGINT while spawning; returns the
// child's "SigBlk:" and "SigIgn:" lines from /proc/self/status.
std::string child_signal_state()
{
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    EXPECT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
    struct sigaction ign = {}, old_int = {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    EXPECT_EQ(sigaction(SIGINT, &ign, &old_int), 0);

    Result r = run({"/bin/grep", "-E", "^(SigBlk|SigIgn)", "/proc/self/status"});

    sigaction(SIGINT, &old_int, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
}

// The mask read as a number from a "Name:\tHEX" line of /proc/PID/status.
unsigned long long status_mask(const std::string &lines, const std::string &name)
{
    size_t at = lines.find(name + ":\t");
    if (at == std::string::npos)
        return ~0ull;
    return std::stoull(lines.substr(at + name.size() + 2, 16), nullptr, 16);
}

TEST_F(SpawnTest, SignalMaskEmpty)
{
    std::string st = child_signal_state();
    EXPECT_EQ(status_mask(st, "SigBlk"), 0u) << st;
}

// Signals 1..31 and glibc's real-time range (SIGRTMIN..SIGRTMAX): SIGINT,
// ignored by the parent, is back to default.
TEST_F(SpawnTest, SignalDispositionsDefault)
{
    std::string st = child_signal_state();
    unsigned long long ign = status_mask(st, "SigIgn");
    unsigned long long glibc_internal = (1ull << (32 - 1)) | (1ull << (33 - 1));
    EXPECT_EQ(ign & ~glibc_internal, 0u) << st;
    EXPECT_FALSE(ign & (1ull << (SIGINT - 1))) << "SIGINT still ignored: " << st;
}

// The header promises default dispositions for every signal, and the task
// should see exactly what a fork+exec (PMC) gives it.  glibc's posix_spawn
// sets its internal signals 32 (SIGCANCEL) and 33 (SIGSETXID) to SIG_IGN in
// the child, and they stay ignored across execve (SigIgn 0000000180000000).
TEST_F(SpawnTest, NoSignalIgnoredAtAll)
{
    std::string st = child_signal_state();
    EXPECT_EQ(st, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

TEST_F(SpawnTest, MissingExecutableIsEnoent)
{
    Result r = run({dir_ + "/no-such-program"});
    EXPECT_EQ(r.rc, ENOENT) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), 127);
    EXPECT_EQ(r.out, "");
    expect_no_children();
}

TEST_F(SpawnTest, MissingProgramOnPathIsEnoent)
{
    Result r = run({"pmc-hybrid-test-no-such-program"});
    EXPECT_EQ(r.rc, ENOENT) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), 127);
    expect_no_children();
}

TEST_F(SpawnTest, NonExecutableFileIsEacces)
{
    std::string p = dir_ + "/script.sh";
    FILE *f = fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("#!/bin/sh\necho should not run\n", f);
    fclose(f);
    ASSERT_EQ(chmod(p.c_str(), 0644), 0); // no x bit: EACCES even for root
    Result r = run({p});
    EXPECT_EQ(r.rc, EACCES) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), 126);
    EXPECT_EQ(r.out, "");
    expect_no_children();
}

TEST_F(SpawnTest, DirectoryIsEacces)
{
    Result r = run({dir_});
    EXPECT_EQ(r.rc, EACCES) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), 126);
    expect_no_children();
}

// Executable but not a recognised format and no "#!": no shell fallback.
TEST_F(SpawnTest, UnknownFormatIsEnoexec)
{
    std::string p = dir_ + "/garbage";
    FILE *f = fopen(p.c_str(), "w");
    ASSERT_NE(f, nullptr);
    fputs("\x01\x02\x03 not a program\n", f);
    fclose(f);
    ASSERT_EQ(chmod(p.c_str(), 0755), 0);
    Result r = run({p});
    EXPECT_EQ(r.rc, ENOEXEC) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), 126);
    expect_no_children();
}

TEST(SpawnExecExitCode, ShellConventions)
{
    EXPECT_EQ(spawn_exec_exit_code(ENOENT), 127);
    EXPECT_EQ(spawn_exec_exit_code(ENOTDIR), 127);
    EXPECT_EQ(spawn_exec_exit_code(EACCES), 126);
    EXPECT_EQ(spawn_exec_exit_code(ENOEXEC), 126);
    EXPECT_EQ(spawn_exec_exit_code(EPERM), 126);
}

} // namespace
