// testutil.h - helpers shared by the unit tests (header-only, C++17).
//
// Files and descriptors: read_file, status_field and status_mask (a
// /proc/PID/status line's value, a signal mask line as bits), cpus_allowed,
// threads_named and threads_cpus_allowed (this process's threads by name, and
// the CPUs of this process or of its threads),
// pinned_cpus and threads_cpus_allowed_once (threads bound one per CPU),
// write_file, write_all, read_to_eof,
// random_bytes, open_fds (this process's descriptors), FdAt (a descriptor
// moved to a given number for a scope).  Temporary directories: TempDir
// (RAII, under $TMPDIR or /tmp, removed with its content) and TempDirTest, a
// fixture base class that gives each test its own (dir_, path(), file()).
// Environment: SavedEnv (variables unset for a scope, then restored).
// Child processes (engine/exec/spawn.h): Argv, make_capture, contents,
// wait_child (bounded by kWaitMs), spawn_and_wait with SpawnOptions and
// SpawnResult, parse_fd_list, expect_no_children.  PMC_TEST_SANITIZED is 1
// under AddressSanitizer or ThreadSanitizer, else 0.
#ifndef PMC_TESTUTIL_H
#define PMC_TESTUTIL_H

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/exec/spawn.h"
#include "io/dag.h"
#include "io/fdio.h"

#if defined(__SANITIZE_THREAD__)
#define PMC_TEST_TSAN 1 // ThreadSanitizer: concurrency tests shrink their loops
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define PMC_TEST_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PMC_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PMC_TEST_SANITIZED 1
#endif
#endif
#ifndef PMC_TEST_SANITIZED
#define PMC_TEST_SANITIZED 0
#endif

namespace testutil
{

// Every thread calls arrive() and spins until all have: they start together
// (concurrency tests release their threads on one of these).
class StartGate
{
  public:
    explicit StartGate(int n) : n_(n) {}
    void arrive()
    {
        arrived_.fetch_add(1, std::memory_order_acq_rel);
        while (arrived_.load(std::memory_order_acquire) < n_)
            std::this_thread::yield();
    }

  private:
    const int n_;
    std::atomic<int> arrived_{0};
};

// ---- files and descriptors --------------------------------------------------

inline std::string read_file(const std::string &path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// The value of the first "Name:" line of /proc/PID/status text (the
// spaces and tabs after the colon skipped), from `from` on; "?" when there
// is none.  The name must start its line ("Pid" is not "PPid" or
// "TracerPid").  *next (when given) gets where the search may go on.
inline std::string status_field(const std::string &text, const std::string &name, size_t from = 0,
                                size_t *next = nullptr)
{
    size_t k = from;
    while ((k = text.find(name + ":", k)) != std::string::npos && k > 0 && text[k - 1] != '\n')
        k += name.size();
    if (next)
        *next = k == std::string::npos ? std::string::npos : k + name.size() + 1;
    if (k == std::string::npos)
        return "?";
    size_t b = text.find_first_not_of(" \t", k + name.size() + 1);
    size_t e = text.find('\n', k);
    return b == std::string::npos || (e != std::string::npos && b > e) ? "" : text.substr(b, e - b);
}

// A signal mask line of /proc/PID/status text ("SigIgn:\t0000000000000001")
// as a number: bit n-1 is signal n.  All ones when the line is missing or
// is no hexadecimal number, so that a test expecting bits clear fails.
inline unsigned long long status_mask(const std::string &text, const std::string &name)
{
    std::string v = status_field(text, name);
    char *end = nullptr;
    unsigned long long m = strtoull(v.c_str(), &end, 16);
    return v.empty() || end == v.c_str() || *end ? ~0ull : m;
}

// Cpus_allowed_list of /proc/self/status ("0-3,8"), or of this process's
// thread tid.
inline std::string cpus_allowed(pid_t tid = 0)
{
    std::string path =
        tid ? "/proc/self/task/" + std::to_string(tid) + "/status" : "/proc/self/status";
    return status_field(read_file(path), "Cpus_allowed_list");
}

// The thread ids of this process's threads named comm (pthread_setname_np).
inline std::vector<pid_t> threads_named(const std::string &comm)
{
    std::vector<pid_t> tids;
    for (const auto &t : std::filesystem::directory_iterator("/proc/self/task"))
        if (read_file(t.path().string() + "/comm") == comm + "\n")
            tids.push_back((pid_t)std::stol(t.path().filename()));
    return tids;
}

// The Cpus_allowed_list of each of this process's threads named comm, one
// entry a thread.
inline std::multiset<std::string> threads_cpus_allowed(const std::string &comm)
{
    std::multiset<std::string> got;
    for (pid_t tid : threads_named(comm))
        got.insert(cpus_allowed(tid));
    return got;
}

// The Cpus_allowed_lists of n threads bound one per CPU of this process's
// in order, those past its CPUs unbound (launcher_create() with pin):
// "0", "1", ..., then the process's whole list.
inline std::multiset<std::string> pinned_cpus(uint32_t n)
{
    cpu_set_t mine;
    EXPECT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    std::multiset<std::string> want;
    for (int c = 0; c < CPU_SETSIZE && want.size() < n; c++)
        if (CPU_ISSET(c, &mine))
            want.insert(std::to_string(c));
    while (want.size() < n)
        want.insert(cpus_allowed());
    return want;
}

// threads_cpus_allowed(comm) once it is want (threads that bind
// themselves as they start), or as it is after 10 s.
inline std::multiset<std::string> threads_cpus_allowed_once(const std::string &comm,
                                                            const std::multiset<std::string> &want)
{
    std::multiset<std::string> got;
    for (int k = 0; k < 10000 && (got = threads_cpus_allowed(comm)) != want; k++)
        usleep(1000);
    return got;
}

// Replaces the file's content (creating it).
inline void write_file(const std::string &path, const std::string &data)
{
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << data;
    ASSERT_TRUE(out.good()) << path;
}

// write(2) until all of data is written (fdio_write_all); false on an error.
inline bool write_all(int fd, const std::string &data)
{
    return fdio_write_all(fd, data.data(), data.size()) == 0;
}

// read(2) until end of file, an error or (non-blocking fd) nothing more to read.
inline std::string read_to_eof(int fd)
{
    std::string s;
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return s;
        s.append(buf, static_cast<size_t>(n));
    }
}

inline std::string random_bytes(size_t n, unsigned seed)
{
    std::mt19937 rng(seed);
    std::string s(n, '\0');
    for (auto &c : s)
        c = static_cast<char>(rng());
    return s;
}

// This process's open descriptors, in increasing order, without the one
// that lists them.
inline std::vector<int> open_fds()
{
    std::vector<int> fds;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return fds;
    int self = dirfd(d);
    while (struct dirent *e = readdir(d)) {
        int fd = atoi(e->d_name);
        if (e->d_name[0] != '.' && fd != self)
            fds.push_back(fd);
    }
    closedir(d);
    std::sort(fds.begin(), fds.end());
    return fds;
}

// Put fd `from` at number `to` (close-on-exec) for the life of the object,
// restoring whatever was there (with its close-on-exec flag) afterwards.
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
    FdAt(const FdAt &) = delete;
    FdAt &operator=(const FdAt &) = delete;
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

// ---- temporary directories ----------------------------------------------------

// A fresh directory NAME.XXXXXX under $TMPDIR (or /tmp), removed with all
// its content (write permission restored first) when the object goes.  A
// directory that cannot be made throws, which fails the test (or the fixture
// that holds it) before anything is written.
class TempDir
{
  public:
    explicit TempDir(const std::string &name)
    {
        std::string tmpl = (std::filesystem::temp_directory_path() / (name + ".XXXXXX")).string();
        if (!mkdtemp(tmpl.data()))
            throw std::runtime_error("mkdtemp " + tmpl + ": " + strerror(errno));
        dir_ = tmpl;
    }
    ~TempDir()
    {
        chmod(dir_.c_str(), 0700);
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        EXPECT_FALSE(ec) << "removing " << dir_ << ": " << ec.message();
    }
    TempDir(const TempDir &) = delete;
    TempDir &operator=(const TempDir &) = delete;

    const std::string &dir() const
    {
        return dir_;
    }
    std::string path(const std::string &name) const
    {
        return dir_ + "/" + name;
    }
    // A file at `rel` (its directories created) holding text, with the given
    // mode; returns its path.
    std::string file(const std::string &rel, const std::string &text, mode_t mode = 0644) const
    {
        std::string p = path(rel);
        std::error_code ec;
        std::filesystem::create_directories(p.substr(0, p.rfind('/')), ec);
        EXPECT_FALSE(ec) << p << ": " << ec.message();
        write_file(p, text);
        EXPECT_EQ(chmod(p.c_str(), mode), 0) << p << ": " << strerror(errno);
        return p;
    }
    // How many entries the directory holds ("." and ".." not counted).
    int entries() const
    {
        int n = 0;
        for (auto it = std::filesystem::directory_iterator(dir_);
             it != std::filesystem::directory_iterator(); ++it)
            n++;
        return n;
    }

  private:
    std::string dir_;
};

// The named environment variables saved and unset for the object's life (a
// fixture's member: one test), then put back as they were, set or unset.
class SavedEnv
{
  public:
    explicit SavedEnv(std::initializer_list<const char *> names)
    {
        for (const char *name : names) {
            const char *value = getenv(name);
            saved_.emplace_back(name, value ? std::optional<std::string>(value) : std::nullopt);
            unsetenv(name);
        }
    }
    ~SavedEnv()
    {
        for (const auto &[name, value] : saved_)
            value ? setenv(name.c_str(), value->c_str(), 1) : unsetenv(name.c_str());
    }
    SavedEnv(const SavedEnv &) = delete;
    SavedEnv &operator=(const SavedEnv &) = delete;

  private:
    std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

// This process a child subreaper (spawn_adopt_orphans()) for the object's
// life, then not, even when an assertion ends the test early: orphans of
// later tests go to PID 1 again.
class AdoptedOrphans
{
  public:
    AdoptedOrphans() : ok_(spawn_adopt_orphans() == 0) {}
    ~AdoptedOrphans()
    {
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    }
    AdoptedOrphans(const AdoptedOrphans &) = delete;
    AdoptedOrphans &operator=(const AdoptedOrphans &) = delete;
    bool ok() const
    {
        return ok_;
    }

  private:
    bool ok_;
};

// Fixture base: each test gets its own TempDir, dir_, named after `name`.
class TempDirTest : public ::testing::Test
{
  protected:
    explicit TempDirTest(const std::string &name) : tmp_(name), dir_(tmp_.dir()) {}
    std::string path(const std::string &name) const
    {
        return tmp_.path(name);
    }
    std::string file(const std::string &rel, const std::string &text, mode_t mode = 0644) const
    {
        return tmp_.file(rel, text, mode);
    }

    TempDir tmp_;
    const std::string dir_;
};

// ---- child processes ------------------------------------------------------------

const int kWaitMs = 20000; // watchdog for every child

// Owned strings as a NULL-terminated char *const[] (argv, envp).
class Argv
{
  public:
    Argv(std::initializer_list<std::string> items) : Argv(std::vector<std::string>(items)) {}
    explicit Argv(std::vector<std::string> items) : items_(std::move(items))
    {
        for (auto &s : items_)
            ptrs_.push_back(s.data());
        ptrs_.push_back(nullptr);
    }
    Argv(const Argv &) = delete;
    Argv &operator=(const Argv &) = delete;
    char *const *get()
    {
        return ptrs_.data();
    }

  private:
    std::vector<std::string> items_;
    std::vector<char *> ptrs_;
};

// An anonymous close-on-exec file to capture a child's output in.
inline int make_capture(const char *name)
{
    int fd = memfd_create(name, MFD_CLOEXEC);
    EXPECT_GE(fd, 0) << strerror(errno);
    return fd;
}

// The whole content of a file, whatever its offset.
inline std::string contents(int fd)
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

// Wait for the child through its pidfd (closed here), bounded by kWaitMs; a
// child that overstays is killed and reported as a failure.
inline bool wait_child(pid_t pid, int pidfd, siginfo_t *si)
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

struct SpawnResult {
    int rc = -1; // spawn_task's return
    pid_t pid = -1;
    int code = -1;   // si_code: CLD_EXITED, CLD_KILLED, ...
    int status = -1; // exit code or signal
    std::string out, err;
};

struct SpawnOptions {
    std::vector<std::string> env = {"PATH=/usr/bin:/bin"};
    const cpu_set_t *affinity = nullptr;
    uint64_t limit = 0; // memory_limit_bytes
    std::vector<int> forwards;
    int stdout_fd = -1; // -1: a fresh capture
    int stderr_fd = -1;
};

// spawn_task, then wait for the child (bounded) and collect its output.
inline SpawnResult spawn_and_wait(std::vector<std::string> argv,
                                  const SpawnOptions &opt = SpawnOptions())
{
    SpawnResult res;
    int out = opt.stdout_fd >= 0 ? opt.stdout_fd : make_capture("out");
    int err = opt.stderr_fd >= 0 ? opt.stderr_fd : make_capture("err");
    Argv av(std::move(argv));
    Argv ev(opt.env);
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

// The numbers in a list such as `ls /proc/PID/fd` prints.
inline std::set<int> parse_fd_list(const std::string &s)
{
    std::set<int> fds;
    std::istringstream in(s);
    int fd;
    while (in >> fd)
        fds.insert(fd);
    return fds;
}

// No child of this process may be left over (reaped or still running).
inline void expect_no_children()
{
    int st;
    errno = 0;
    pid_t w = waitpid(-1, &st, WNOHANG);
    EXPECT_EQ(w, -1) << "a child was left behind (pid " << w << ")";
    EXPECT_EQ(errno, ECHILD);
}

// The child's pid and process group as it sees them (fields 1 and 5 of
// /proc/PID/stat): both are the pid spawn_task returned, not our group.
inline void expect_own_process_group(const SpawnOptions &opt)
{
    SpawnResult r = spawn_and_wait(
        {"/bin/sh", "-c", "read pid comm state ppid pgrp rest < /proc/$$/stat; echo $pid $pgrp"},
        opt);
    ASSERT_EQ(r.rc, 0) << strerror(r.rc);
    std::istringstream in(r.out);
    long pid = -1, pgrp = -2;
    in >> pid >> pgrp;
    EXPECT_EQ(pid, r.pid) << r.out;
    EXPECT_EQ(pgrp, r.pid) << r.out;
    EXPECT_NE(pgrp, static_cast<long>(getpgrp()));
}

/* ---- DAGs ---------------------------------------------------------------- */

using DagPtr = std::unique_ptr<dag, decltype(&dag_destroy)>;

/* A finished DAG of /bin/true tasks with these names (ids 0, 1, ... in
 * order) and no edges; failures are test failures. */
inline DagPtr make_dag(const std::vector<std::string> &names)
{
    DagPtr d(dag_create(), dag_destroy);
    EXPECT_NE(d, nullptr);
    static const char *const argv[] = {"/bin/true"};
    static const size_t argv_len[] = {9};
    for (size_t i = 0; i < names.size(); i++) {
        dag_task_spec s{};
        s.name = names[i].data();
        s.name_len = names[i].size();
        s.argv = argv;
        s.argv_len = argv_len;
        s.argc = 1;
        s.cpus = 1;
        s.line = static_cast<uint32_t>(i + 1);
        dag_task_t id;
        EXPECT_EQ(dag_add_task(d.get(), &s, &id), 0) << names[i];
        EXPECT_EQ(id, i);
    }
    pmc_error err{};
    EXPECT_EQ(dag_finish(d.get(), &err), 0) << err.text;
    return d;
}

} // namespace testutil

#endif
