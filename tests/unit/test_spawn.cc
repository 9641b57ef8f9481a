// test_spawn.cc - unit tests of engine/exec/spawn.h.
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
// spawn_task with no child left behind.  SIGCHLD of tasks that exit while
// another spawn is under way never reaches another thread when nothing
// catches it (it used to wake MPI's progress thread).
//
// Every wait is bounded: poll on the pidfd with a timeout, then SIGKILL.
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <atomic>
#include <thread>

#include <fcntl.h>
#include <linux/close_range.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// Descriptors of this process without close-on-exec above 2: inherited from
// whoever started the test (a harness, a shell) and passed on by any exec.
// The engine opens its own descriptors close-on-exec; these are not its own.
std::set<int> inherited_fds()
{
    std::set<int> fds;
    for (int fd : open_fds()) {
        int fl = fcntl(fd, F_GETFD);
        if (fd > 2 && fl != -1 && !(fl & FD_CLOEXEC))
            fds.insert(fd);
    }
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

// spawn_task of argv with an empty environment and both outputs to `out`;
// the caller waits for it.
int spawn_argv(Argv &&av, int out, pid_t *pid, int *pidfd)
{
    Argv ev{};
    struct spawn_request req = {};
    req.argv = av.get();
    req.envp = ev.get();
    req.stdout_fd = out;
    req.stderr_fd = out;
    return spawn_task(&req, pid, pidfd);
}

// spawn_argv() of /bin/true.
int spawn_true(int out, pid_t *pid, int *pidfd)
{
    return spawn_argv(Argv{"/bin/true"}, out, pid, pidfd);
}

class SpawnTest : public TempDirTest
{
  protected:
    SpawnTest() : TempDirTest("pmc-spawn-test") {}
};

TEST_F(SpawnTest, ExitStatusThroughPidfd)
{
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "exit 3"});
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_GT(r.pid, 0);
    EXPECT_EQ(r.code, CLD_EXITED);
    EXPECT_EQ(r.status, 3);
    SpawnResult ok = spawn_and_wait({"/bin/true"});
    ASSERT_EQ(ok.rc, 0);
    EXPECT_EQ(ok.code, CLD_EXITED);
    EXPECT_EQ(ok.status, 0);
    expect_no_children();
}

TEST_F(SpawnTest, PidfdIsCloexecAndBelongsToChild)
{
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    ASSERT_EQ(spawn_true(out, &pid, &pidfd), 0);
    ASSERT_GE(pidfd, 0);
    int fl = fcntl(pidfd, F_GETFD);
    EXPECT_TRUE(fl != -1 && (fl & FD_CLOEXEC));
    siginfo_t si;
    ASSERT_TRUE(wait_child(pid, pidfd, &si));
    EXPECT_EQ(si.si_pid, pid);
    EXPECT_EQ(si.si_code, CLD_EXITED);
    close(out);
}

// The spawning thread's cached pid follows a fork(): a child process that
// spawns from the same thread state must not see its tasks fail the
// "parent is still ours" check.
TEST_F(SpawnTest, SpawnsAfterForkFromTheSameThread)
{
    SpawnResult before = spawn_and_wait({"/bin/true"});
    ASSERT_EQ(before.rc, 0); // the thread's state now exists
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "exit 7"});
        _exit(r.rc == 0 && r.code == CLD_EXITED ? r.status : 100);
    }
    int ws = 0;
    ASSERT_EQ(waitpid(child, &ws, 0), child);
    ASSERT_TRUE(WIFEXITED(ws));
    EXPECT_EQ(WEXITSTATUS(ws), 7); // 100: the spawn failed on a stale pid
}

TEST_F(SpawnTest, DeathBySignal)
{
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "kill -TERM $$"});
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.code, CLD_KILLED);
    EXPECT_EQ(r.status, SIGTERM);
}

TEST_F(SpawnTest, StdoutAndStderrLandInGivenFds)
{
    SpawnResult r =
        spawn_and_wait({"/bin/sh", "-c", "echo to-out; echo to-err >&2; echo more-out"});
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
    SpawnResult r;
    {
        FdAt pipe_at0(p[0], 0);
        ASSERT_TRUE(pipe_at0.ok());
        r = spawn_and_wait({"/bin/sh", "-c", "readlink /proc/$$/fd/0; cat; echo eof"});
    }
    close(p[0]);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "/dev/null\neof\n");
}

TEST_F(SpawnTest, ArgvPassedWithoutShell)
{
    SpawnResult r =
        spawn_and_wait({"/usr/bin/printf", "[%s]\\n", "a b", "$HOME", "*", "'q'", "x;y|z"});
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "[a b]\n[$HOME]\n[*]\n['q']\n[x;y|z]\n");
}

TEST_F(SpawnTest, PathSearchedForBareName)
{
    SpawnResult r = spawn_and_wait({"sh", "-c", "echo found"});
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    EXPECT_EQ(r.out, "found\n");
}

TEST_F(SpawnTest, EnvironmentPassedExactly)
{
    SpawnOptions o;
    o.env = {"A=1", "B=two words", "EMPTY=", "PMC_TASK=ID01", "PMC_CPUS=2"};
    SpawnResult r = spawn_and_wait({"/usr/bin/env"}, o);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "A=1\nB=two words\nEMPTY=\nPMC_TASK=ID01\nPMC_CPUS=2\n");
}

TEST_F(SpawnTest, EmptyEnvironment)
{
    setenv("PMC_SPAWN_TEST_PARENT_ONLY", "leak", 1);
    SpawnOptions o;
    o.env = {};
    SpawnResult r = spawn_and_wait({"/usr/bin/env"}, o);
    unsetenv("PMC_SPAWN_TEST_PARENT_ONLY");
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.out, "");
}

// Seen from the child: its pgrp (field 5 of /proc/PID/stat) is its pid.
TEST_F(SpawnTest, OwnProcessGroup)
{
    expect_own_process_group(SpawnOptions());
}

TEST_F(SpawnTest, OwnProcessGroupSeenFromParent)
{
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    ASSERT_EQ(spawn_true(out, &pid, &pidfd), 0);
    // Not yet reaped (running or a zombie): its process group is queryable.
    EXPECT_EQ(getpgid(pid), pid);
    siginfo_t si;
    EXPECT_TRUE(wait_child(pid, pidfd, &si));
    close(out);
}

// Start argv (/bin/sh -c script) with both outputs to out and wait (at
// most 10 s) until its first process has exited, unreaped.
void start_and_await_exit(int out, const char *script, pid_t *pid, int *pidfd)
{
    ASSERT_EQ(spawn_argv(Argv{"/bin/sh", "-c", script}, out, pid, pidfd), 0);
    struct pollfd p = {*pidfd, POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1);
}

// In a task's grace its first process is reaped alone: a group member it
// left (a background sleep) is not killed, the group is seen alive, and the
// watchdog's entry stays; without one the entry is cleared.
TEST_F(SpawnTest, ReapLeaderLeavesWhatItLeftInTheGroup)
{
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    start_and_await_exit(out, "sleep 30 & exit 3", &pid, &pidfd);
    volatile pid_t entry = pid;
    bool left = false;
    EXPECT_EQ(spawn_reap_leader(pid, pidfd, &entry, &left), 3 << 8);
    EXPECT_TRUE(left);
    EXPECT_EQ(entry, pid);
    EXPECT_TRUE(spawn_group_alive(pid)); // the sleep: not killed
    EXPECT_EQ(kill(-pid, SIGKILL), 0);   // the group's id is still its own
    close(pidfd);

    start_and_await_exit(out, "exit 4", &pid, &pidfd);
    entry = pid;
    left = true;
    EXPECT_EQ(spawn_reap_leader(pid, pidfd, &entry, &left), 4 << 8);
    EXPECT_FALSE(left);
    EXPECT_EQ(entry, 0);
    EXPECT_FALSE(spawn_group_alive(pid));
    close(pidfd);
    close(out);
}

// Orphans of a reaped leader's group that come to us (a child subreaper
// here, PID 1 in a container) are reaped by spawn_group_alive(): their
// zombies do not keep the group alive.
TEST_F(SpawnTest, GroupAliveReapsTheGroupsOrphansThatAreOurs)
{
    AdoptedOrphans adopted;
    ASSERT_TRUE(adopted.ok());
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    start_and_await_exit(out, "sleep 0.2 & exit 0", &pid, &pidfd);
    bool left = false;
    EXPECT_EQ(spawn_reap_leader(pid, pidfd, nullptr, &left), 0);
    EXPECT_TRUE(left);
    bool gone = false;
    for (int i = 0; i < 500 && !gone; i++) { // the sleep ends after 0.2 s, a zombie of ours
        usleep(10000);
        gone = !spawn_group_alive(pid);
    }
    EXPECT_TRUE(gone) << "the group's zombie, our child, was not reaped";
    close(pidfd);
    close(out);
}

// Has our child pid ended (a zombie, not reaped)?  Waits up to 5 s.
bool await_zombie(pid_t pid)
{
    for (int i = 0; i < 500; i++) {
        siginfo_t si{};
        if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
            return true;
        usleep(10000);
    }
    return false;
}

// A child of ours that ends at once, after setsid() (its own session) or
// without leaving our group.
pid_t fork_and_exit(bool own_session)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (own_session)
            setsid();
        _exit(0);
    }
    return pid;
}

// Is our child pid still there to be reaped (by its owner)?
bool still_ours(pid_t pid)
{
    siginfo_t si{};
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid;
}

// What a task left running when its first process ended normally comes to
// us (spawn_adopt_orphans()); its zombie is reaped by spawn_reap_orphans(),
// not left for the rest of the run.
TEST_F(SpawnTest, ReapOrphansTakesWhatATaskLeftBehind)
{
    AdoptedOrphans adopted;
    ASSERT_TRUE(adopted.ok());
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    start_and_await_exit(out, "sleep 0.1 & echo $!; exit 0", &pid, &pidfd);
    EXPECT_EQ(spawn_end_task(pid, pidfd, nullptr), 0); // kills the group: the sleep ends now
    pid_t orphan = (pid_t)std::atoi(contents(out).c_str());
    ASSERT_GT(orphan, 0);
    EXPECT_TRUE(await_zombie(orphan)) << "the task's sleep did not come to us";
    EXPECT_EQ(spawn_reap_orphans(0), 1u);
    EXPECT_FALSE(still_ours(orphan));
    EXPECT_EQ(spawn_reap_orphans(0), 0u);
    close(pidfd);
    close(out);
}

// Our own children are left to their owners: a task's first process (the
// leader of its group, in our session) and keep (the watchdog, in a session
// of its own); a child in a session of its own that is not keep is taken for
// a daemon's orphan.
TEST_F(SpawnTest, ReapOrphansLeavesOurOwnChildren)
{
    AdoptedOrphans adopted;
    ASSERT_TRUE(adopted.ok());
    int out = make_capture("out");
    pid_t pid = -1;
    int pidfd = -1;
    start_and_await_exit(out, "exit 5", &pid, &pidfd);
    pid_t keep = fork_and_exit(true);
    ASSERT_GT(keep, 0);
    ASSERT_TRUE(await_zombie(keep));
    EXPECT_EQ(spawn_reap_orphans(keep), 0u);
    EXPECT_TRUE(still_ours(keep));
    bool left = true;
    EXPECT_EQ(spawn_reap_leader(pid, pidfd, nullptr, &left), 5 << 8); // not lost
    EXPECT_FALSE(left);
    EXPECT_EQ(spawn_reap_orphans(0), 1u); // keep no longer kept
    EXPECT_FALSE(still_ours(keep));
    close(pidfd);
    close(out);
}

// Where orphans do not come to us (no subreaper, not PID 1) nothing is
// reaped, not even a child that leads no group.
TEST_F(SpawnTest, ReapOrphansIsANoOpUnlessOrphansComeToUs)
{
    pid_t child = fork_and_exit(false);
    ASSERT_GT(child, 0);
    ASSERT_TRUE(await_zombie(child));
    EXPECT_EQ(spawn_reap_orphans(0), getpid() == 1 ? 1u : 0u);
    if (getpid() != 1) {
        EXPECT_EQ(waitpid(child, nullptr, 0), child);
    }
}

TEST_F(SpawnTest, CloexecDescriptorNotInherited)
{
    int secret = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(secret, 0);
    std::set<int> allowed = inherited_fds();
    SpawnResult r = spawn_and_wait(kListFds);
    ASSERT_EQ(r.rc, 0);
    std::set<int> fds = parse_fd_list(r.out);
    EXPECT_EQ(fds.count(secret), 0u) << "close-on-exec fd " << secret << " visible: " << r.out;
    EXPECT_TRUE(fds.count(0) && fds.count(1) && fds.count(2)) << r.out;
    for (int fd : fds)
        EXPECT_TRUE(fd <= 2 || allowed.count(fd)) << "unexpected fd " << fd << " in child";
    close(secret);
}

// The child shares our descriptor table until it has its own
// (CLONE_FILES): what it puts on 0, 1, 2 and 3 and what it closes must not
// reach this process.  A descriptor without close-on-exec above the plan
// stays open here, and ours on 0, 1, 2 and 3 are what they were.
TEST_F(SpawnTest, ChildsDescriptorChangesStayInTheChild)
{
    int a[2];
    ASSERT_TRUE(high_pipe(a));
    int kept = fcntl(a[0], F_DUPFD, 100); // no close-on-exec: the child closes its copy
    ASSERT_GE(kept, 100);
    struct stat before[4];
    bool open_before[4];
    for (int fd = 0; fd < 4; fd++)
        open_before[fd] = fstat(fd, &before[fd]) == 0;
    SpawnOptions o;
    o.forwards = {a[1]};
    SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "echo through-three >&3"}, o);
    ASSERT_EQ(r.rc, 0);
    EXPECT_EQ(r.status, 0) << r.err;
    for (int fd = 0; fd < 4; fd++) {
        struct stat now;
        bool open_now = fstat(fd, &now) == 0;
        EXPECT_EQ(open_now, open_before[fd]) << "our fd " << fd << " opened or closed by the child";
        if (open_now && open_before[fd]) {
            EXPECT_TRUE(now.st_dev == before[fd].st_dev && now.st_ino == before[fd].st_ino)
                << "our fd " << fd << " replaced by the child's";
        }
    }
    EXPECT_NE(fcntl(kept, F_GETFD), -1) << "our fd " << kept << " closed by the child";
    close(a[1]);
    EXPECT_EQ(read_to_eof(kept), "through-three\n");
    close(kept);
    close(a[0]);
}

// Does this kernel copy only the descriptors below the first one that
// close_range(CLOSE_RANGE_UNSHARE) closes (Linux >= 5.9)?  Asked in a
// fork()ed child, whose table is its own.
bool kernel_has_close_range_unshare()
{
    pid_t p = fork();
    if (p == 0)
        _exit(syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_UNSHARE) == 0 ? 0 : 1);
    int st = 0;
    return p > 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// The child copies only the descriptors below its plan's highest one: with a
// descriptor of ours at 300, its table keeps the kernel's first size (64
// entries, "FDSize" in /proc/PID/status), where a whole copy needs 512.
TEST_F(SpawnTest, ChildCopiesOnlyTheDescriptorsBelowItsPlan)
{
    struct rlimit nofile;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &nofile), 0);
    ASSERT_GT(nofile.rlim_cur, 300u) << "RLIMIT_NOFILE too low for this test";
    int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
    ASSERT_GE(devnull, 0);
    int high = fcntl(devnull, F_DUPFD_CLOEXEC, 300);
    ASSERT_GE(high, 300);
    SpawnResult r = spawn_and_wait({"/bin/grep", "^FDSize:", "/proc/self/status"});
    close(high);
    close(devnull);
    ASSERT_EQ(r.rc, 0);
    ASSERT_EQ(r.status, 0) << r.err;
    unsigned size = 0;
    ASSERT_EQ(sscanf(r.out.c_str(), "FDSize: %u", &size), 1) << r.out;
    if (kernel_has_close_range_unshare())
        EXPECT_EQ(size, 64u) << "the child copied our whole table: " << r.out;
    else
        EXPECT_GE(size, 512u) << "unshare(CLONE_FILES) copies the whole table: " << r.out;
}

TEST_F(SpawnTest, ForwardFdsAppearAt3And4InOrder)
{
    int a[2], b[2];
    ASSERT_EQ(pipe2(a, O_CLOEXEC), 0);
    ASSERT_EQ(pipe2(b, O_CLOEXEC), 0);
    std::set<int> allowed = inherited_fds();
    SpawnOptions o;
    o.forwards = {a[1], b[1]};
    SpawnResult r =
        spawn_and_wait({"/bin/sh", "-c", "echo first >&3; echo second >&4; ls /proc/$$/fd; :"}, o);
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

// Pipe a's write end put at a_at and b's at b_at, forwarded as {a_at, b_at}:
// what the child writes to its fd 3 must reach a, to its fd 4 b.
void expect_forwards_from(int a_at, int b_at)
{
    int a[2], b[2];
    ASSERT_TRUE(high_pipe(a));
    ASSERT_TRUE(high_pipe(b));
    {
        FdAt a_there(a[1], a_at), b_there(b[1], b_at);
        ASSERT_TRUE(a_there.ok() && b_there.ok());
        close(a[1]);
        close(b[1]);
        SpawnOptions o;
        o.forwards = {a_at, b_at}; // pipe a -> child fd 3, pipe b -> child fd 4
        SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "echo to-three >&3; echo to-four >&4"}, o);
        ASSERT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0) << r.err;
    } // the parent's copies at a_at and b_at are closed here
    EXPECT_EQ(read_to_eof(a[0]), "to-three\n");
    EXPECT_EQ(read_to_eof(b[0]), "to-four\n");
    close(a[0]);
    close(b[0]);
}

// Sources at 4 and 3, targets 3 and 4: a naive dup2(4, 3); dup2(3, 4) would
// send both streams into the same pipe.
TEST_F(SpawnTest, ForwardFdsFromSwappedLowNumbers)
{
    expect_forwards_from(4, 3);
}

// Sources already at their targets (3 -> 3, 4 -> 4).
TEST_F(SpawnTest, ForwardFdsAlreadyInPlace)
{
    expect_forwards_from(3, 4);
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
        SpawnOptions o;
        o.stdout_fd = 0;
        o.stderr_fd = err;
        SpawnResult r = spawn_and_wait({"/bin/sh", "-c", "echo hello"}, o);
        ASSERT_EQ(r.rc, 0);
        EXPECT_EQ(r.status, 0) << r.err;
    }
    EXPECT_EQ(contents(cap), "hello\n") << "task stdout lost when its capture is fd 0";
    close(cap);
    close(err);
}

// The parent blocks SIGUSR1 and ignores SIGINT while spawning (telling
// spawn_note_signals() when note is set); returns the child's "SigBlk:" and
// "SigIgn:" lines from /proc/self/status.
std::string child_signal_state(bool note = true)
{
    sigset_t block, old_mask;
    sigemptyset(&block);
    sigaddset(&block, SIGUSR1);
    EXPECT_EQ(pthread_sigmask(SIG_BLOCK, &block, &old_mask), 0);
    struct sigaction ign = {}, old_int = {};
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    EXPECT_EQ(sigaction(SIGINT, &ign, &old_int), 0);
    if (note)
        spawn_note_signals();

    SpawnResult r = spawn_and_wait({"/bin/grep", "-E", "^(SigBlk|SigIgn)", "/proc/self/status"});

    sigaction(SIGINT, &old_int, nullptr);
    pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
    if (note)
        spawn_note_signals();
    EXPECT_EQ(r.rc, 0);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
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

// On this kernel (x86-64, Linux >= 5.5) the child comes from clone3 with
// CLONE_CLEAR_SIGHAND: the kernel resets the caught signals, and the child
// only the ignored ones (SIGINT here, as the tests above check).
TEST_F(SpawnTest, ChildComesFromClone3ThatClearsHandlers)
{
    spawn__use_plain_clone(false);
    std::string st = child_signal_state();
    EXPECT_TRUE(spawn__clears_handlers()) << "clone3 with CLONE_CLEAR_SIGHAND refused";
    EXPECT_EQ(st, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

// Where clone3 is refused, the child of the plain clone resets every
// signal itself, so a signal ignored without spawn_note_signals() is
// default in the task all the same.
TEST_F(SpawnTest, PlainCloneChildResetsEverySignal)
{
    spawn__use_plain_clone(true);
    std::string st = child_signal_state(false);
    EXPECT_FALSE(spawn__clears_handlers());
    spawn__use_plain_clone(false);
    EXPECT_EQ(st, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
}

// Tasks exit while the next ones are being spawned: with SIGCHLD uncaught
// (SIG_DFL) the kernel drops their exit signal at the spawning thread, so a
// second thread that blocks SIGCHLD and waits for it (as an MPI progress
// thread stands in for) gets none.  Before the fix spawn_task blocked every
// signal during the clone, and such a SIGCHLD was queued for the process.
TEST_F(SpawnTest, ExitSignalsDoNotReachOtherThreads)
{
    struct sigaction dfl = {}, old;
    dfl.sa_handler = SIG_DFL;
    ASSERT_EQ(sigaction(SIGCHLD, &dfl, &old), 0);
    std::atomic<bool> stop{false};
    std::atomic<int> received{0};
    std::thread waiter([&] {
        sigset_t chld;
        sigemptyset(&chld);
        sigaddset(&chld, SIGCHLD);
        pthread_sigmask(SIG_BLOCK, &chld, nullptr);
        struct timespec ts = {0, 20 * 1000 * 1000};
        while (!stop.load())
            if (sigtimedwait(&chld, nullptr, &ts) == SIGCHLD)
                received++;
    });
    int out = open("/dev/null", O_WRONLY | O_CLOEXEC);
    ASSERT_GE(out, 0);
    std::vector<std::pair<pid_t, int>> kids;
    for (int i = 0; i < 200; i++) {
        pid_t pid;
        int pidfd;
        ASSERT_EQ(spawn_true(out, &pid, &pidfd), 0);
        kids.emplace_back(pid, pidfd);
    }
    for (auto &k : kids) {
        siginfo_t si;
        wait_child(k.first, k.second, &si);
    }
    struct timespec settle = {0, 50 * 1000 * 1000};
    nanosleep(&settle, nullptr);
    stop = true;
    waiter.join();
    close(out);
    sigaction(SIGCHLD, &old, nullptr);
    EXPECT_EQ(received.load(), 0) << "SIGCHLD queued for the process while spawning";
    expect_no_children();
}

// spawn_task fails with `err` (the shell's exit code: `code`): no output,
// no child left behind.
void expect_exec_failure(const std::vector<std::string> &argv, int err, int code)
{
    SpawnResult r = spawn_and_wait(argv);
    EXPECT_EQ(r.rc, err) << strerror(r.rc);
    EXPECT_EQ(spawn_exec_exit_code(r.rc), code);
    EXPECT_EQ(r.out, "");
    expect_no_children();
}

TEST_F(SpawnTest, MissingExecutableIsEnoent)
{
    expect_exec_failure({dir_ + "/no-such-program"}, ENOENT, 127);
}

TEST_F(SpawnTest, MissingProgramOnPathIsEnoent)
{
    expect_exec_failure({"pmc-hybrid-test-no-such-program"}, ENOENT, 127);
}

TEST_F(SpawnTest, NonExecutableFileIsEacces)
{
    // No x bit: EACCES even for root.
    std::string p = file("script.sh", "#!/bin/sh\necho should not run\n", 0644);
    expect_exec_failure({p}, EACCES, 126);
}

TEST_F(SpawnTest, DirectoryIsEacces)
{
    expect_exec_failure({dir_}, EACCES, 126);
}

// Executable but not a recognised format and no "#!": no shell fallback.
TEST_F(SpawnTest, UnknownFormatIsEnoexec)
{
    expect_exec_failure({file("garbage", "\x01\x02\x03 not a program\n", 0755)}, ENOEXEC, 126);
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
