// test_launcher.cc - unit tests of engine/exec/launcher.h: the pool size
// without --launch-threads (launcher_default_threads: none on one usable
// CPU, one per CPU and one to spare below 8 CPUs, one per 2 CPUs from 8
// on, capped at LAUNCHER_MAX_THREADS), and the pool
// itself: a started job's pid and pidfd handed back for the caller to
// reap, a failed spawn's error, reaped launches (completed without a
// wake-up, then watched and reaped by the pool: their wait status and
// output block, their process group's leftovers killed, signals through
// launcher_signal(), reported when they cannot be watched, every
// completion waking once launcher_wake_always() was called), and many jobs
// on several threads each reported once.  The engine's use of the pool is run by the
// integration tests (integration.pool.*, workloads.launchers).
#include <gtest/gtest.h>

#include <array>
#include <cctype>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/exec/launcher.h"
#include "engine/exec/launcher_testing.h"
#include "testutil.h"

using namespace testutil;

namespace
{

// A task's -f pipes as the agent prepares them (forward.h): read ends
// non-blocking, the write ends for the task's descriptors 3, 4, ...
struct PipeForwards {
    struct fwd_task f = {};
    std::vector<int> write_ends;
    explicit PipeForwards(size_t n)
    {
        f.e = static_cast<fwd_entry *>(calloc(n, sizeof *f.e));
        for (size_t k = 0; k < n; k++) {
            int p[2] = {-1, -1};
            EXPECT_EQ(pipe2(p, O_CLOEXEC), 0);
            fcntl(p[0], F_SETFL, O_NONBLOCK);
            f.e[k] = fwd_entry{DAG_FORWARD_PIPE, strdup("V"), p[0], p[1], nullptr, 0, 0, 0};
            write_ends.push_back(p[1]);
        }
        f.n = f.cap = f.npipes = (uint32_t)n;
    }
    // n pipes after files -F entries for files that are not there (a
    // missing -F file is no error): the pipes keep their places in f.e.
    PipeForwards(size_t n, size_t files) : PipeForwards(n)
    {
        auto *e = static_cast<fwd_entry *>(calloc(files + n, sizeof *f.e));
        for (size_t k = 0; k < files; k++)
            e[k] = fwd_entry{DAG_FORWARD_FILE,
                             strdup(("/nonexistent/src" + std::to_string(k)).c_str()),
                             -1,
                             -1,
                             nullptr,
                             0,
                             0,
                             0};
        memcpy(e + files, f.e, n * sizeof *f.e);
        free(f.e);
        f.e = e;
        f.n = f.cap = (uint32_t)(files + n);
    }
    // The agent closes its write ends once the task started.
    void close_write_ends()
    {
        fwd_close_write_ends(&f);
    }
    ~PipeForwards()
    {
        fwd_free(&f);
    }
};

// A pool of nthreads for nslots slots waking a mailbox of the test's.
class LauncherPool : public TempDirTest
{
  protected:
    LauncherPool() : TempDirTest("pmc-launcher-test") {}
    void SetUp() override
    {
        TempDirTest::SetUp();
        ASSERT_EQ(mailbox_init(&box_), 0);
        struct pmc_error err;
        ASSERT_EQ(taskio_file_open(&outf_, (dir_ + "/out.0").c_str(), &err), 0) << err.text;
        ASSERT_EQ(taskio_file_open(&errf_, (dir_ + "/err.0").c_str(), &err), 0) << err.text;
    }
    void TearDown() override
    {
        launcher_destroy(pool_);
        mailbox_destroy(&box_);
        taskio_file_close(&outf_);
        taskio_file_close(&errf_);
        close(out_);
        TempDirTest::TearDown();
    }
    bool wake_on_start_ = false;   // the next submits' launch_job.wake_on_start
    bool hold_ = false;            // the next submits' launch_job.hold_on_failure
    bool wake_on_exit_ = false;    // the next submits' launch_job.wake_on_exit
    bool staged_ = false;          // submit() stages the job (launcher_stage()) instead
    std::vector<int> forward_fds_; // the next submits' descriptors 3, 4, ... (-f pipes)
    void start(uint32_t nthreads, uint32_t nslots, const cpu_set_t *pin = nullptr)
    {
        struct pmc_error err;
        pool_ = launcher_create(nthreads, nslots, &box_, pin, &err);
        ASSERT_NE(pool_, nullptr) << err.text;
    }
    // Submit argv as slot i's job (argv and env kept alive by the fixture;
    // the job's forwards, -F files the caller set, kept);
    // reaped: the pool watches and reaps it, and writes its output block
    // (task "t<i>", its stdout and stderr captured in out_ unless the
    // caller sets the job's descriptors after) to outf_ and errf_.
    void submit(uint32_t i, std::vector<std::string> argv, bool reaped = false, int stdout_fd = -1,
                int stderr_fd = -1)
    {
        argvs_[i] = std::make_unique<Argv>(std::move(argv));
        struct launch_job *j = launcher_job(pool_, i);
        ASSERT_NE(j, nullptr);
        struct fwd_task forwards = j->forwards; // the caller's, set before
        struct msgbuf pack = j->fwd_pack;       // the pool's storage
        *j = launch_job{};
        j->forwards = forwards;
        j->fwd_pack = pack;
        j->req.argv = argvs_[i]->get();
        j->req.envp = env_.get();
        j->req.stdout_fd = stdout_fd >= 0 ? stdout_fd : out_;
        j->req.stderr_fd = stderr_fd >= 0 ? stderr_fd : out_;
        for (size_t k = 0; k < forward_fds_.size(); k++)
            j->forward_fds[k] = forward_fds_[k];
        j->req.forward_fds = j->forward_fds;
        j->req.nforward = (int)forward_fds_.size();
        j->pool_reaps = reaped;
        j->wake_on_start = wake_on_start_;
        j->hold_on_failure = hold_;
        j->wake_on_exit = wake_on_exit_;
        names_[i] = "t" + std::to_string(i);
        j->output = taskio_block{};
        j->output.record.name = names_[i].c_str();
        j->output.record.pegasus_id = "";
        j->output.record.app = argvs_[i]->get()[0];
        j->output.record.hostname = "testhost";
        j->output.record.cpus = 1;
        j->output.out_fd = j->req.stdout_fd;
        j->output.err_fd = j->req.stderr_fd;
        j->output.task_out = -1;
        j->output.out = &outf_;
        j->output.err = &errf_;
        clock_gettime(CLOCK_MONOTONIC, &j->started);
        if (staged_)
            launcher_stage(pool_, i);
        else
            launcher_submit(pool_, i);
    }
    // Stage argv as slot i's reaped job (launcher_stage()).
    void stage(uint32_t i, std::vector<std::string> argv)
    {
        staged_ = true;
        submit(i, std::move(argv), true);
        staged_ = false;
    }
    // With the agent's mailbox marked asleep, submit argv as slot i
    // (reaped by the pool or not) and wait for its completion: the slot
    // handed back, or UINT32_MAX after 10 s.
    uint32_t submit_asleep(uint32_t i, std::vector<std::string> argv, bool reaped = false)
    {
        EXPECT_EQ(mailbox_prepare_sleep(&box_), 0);
        submit(i, std::move(argv), reaped);
        uint32_t got = UINT32_MAX;
        return take(&got) ? got : UINT32_MAX;
    }
    // The next unwatched reaped launch within 10 s: true with *i.
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
    // The same after waiting up to 10 s for a wake-up: the pool pushes to
    // a ring first and wakes the agent second.
    uint64_t wakes_within_10s()
    {
        struct pollfd p = {box_.efd, POLLIN, 0};
        poll(&p, 1, 10000);
        return wakes();
    }
    // The next reaped launch whose task ended, within 10 s: true with *i.
    bool take_exited(uint32_t *i)
    {
        return poll_within_10s(launcher_take_exited, i);
    }
    // The next completed slot within 10 s: true with *i.
    bool take(uint32_t *i)
    {
        return poll_within_10s(launcher_take, i);
    }
    // Submit argv as slot 0's reaped job with fw's pipes as descriptors 3,
    // 4, ..., take its completion and close the write ends (as the agent
    // does then).  Fails the test when no completion comes.
    void submit_with_a_pipe(PipeForwards &fw, std::vector<std::string> argv)
    {
        launcher_job(pool_, 0)->forwards = fw.f;
        forward_fds_ = fw.write_ends;
        submit(0, std::move(argv), true);
        forward_fds_.clear();
        uint32_t i;
        ASSERT_TRUE(take(&i));
        fw.close_write_ends();
    }
    // submit_with_a_pipe() with pipe reads held for 1 s
    // (launcher__hold_reads()), then wait for the first read to begin and
    // stop holding later reads.  Returns with that read holding the slot,
    // or fails the test.
    void submit_with_a_held_read(PipeForwards &fw, std::vector<std::string> argv)
    {
        launcher__hold_reads(pool_, 1000000);
        ASSERT_NO_FATAL_FAILURE(submit_with_a_pipe(fw, std::move(argv)));
        for (int k = 0; k < 10000 && launcher__pipe_reads(pool_) == 0; k++)
            usleep(1000);
        ASSERT_GE(launcher__pipe_reads(pool_), 1u) << "the pool never read the pipe";
        launcher__hold_reads(pool_, 0); // the read under way still holds its slot
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
    struct taskio_file outf_ = {}, errf_ = {}; // the rank's output files
    std::map<uint32_t, std::string> names_;
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

// A reaped launch is handed back without waking the agent (it sleeps,
// mailbox_prepare_sleep): the task runs until the test signals it, so
// nothing else can wake it.  Its end comes back through
// launcher_take_exited() and wakes the agent.  A loud launch wakes at once.
TEST_F(LauncherPool, ReapedLaunchWakesOnlyForItsExit)
{
    start(1, 4);
    ASSERT_EQ(submit_asleep(3, {"/bin/sleep", "30"}, true), 3u);
    ASSERT_EQ(launcher_job(pool_, 3)->err, 0) << strerror(launcher_job(pool_, 3)->err);
    usleep(100000);
    EXPECT_EQ(wakes(), 0u) << "the completion of a reaped launch woke the agent";
    EXPECT_TRUE(launcher_signal(pool_, 3, SIGKILL));
    uint32_t i = 99;
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 3u);
    EXPECT_EQ(launcher_job(pool_, 3)->status, SIGKILL);
    EXPECT_GE(wakes_within_10s(), 1u) << "the exit must wake the agent";
    EXPECT_EQ(launcher_take_unwatched(pool_, &i), 0);
    EXPECT_EQ(launcher_take_exited(pool_, &i), 0) << "one exit per launch";
    EXPECT_EQ(waitid(P_PID, (id_t)launcher_job(pool_, 3)->pid, nullptr, WEXITED | WNOHANG), -1)
        << "the pool reaped it";

    ASSERT_EQ(submit_asleep(1, {"/bin/true"}), 1u);
    EXPECT_EQ(reap(1), CLD_EXITED << 8 | 0);
    EXPECT_GE(wakes_within_10s(), 1u) << "a loud launch must wake the agent";
}

// A reaped launch whose start the master wants to hear of (a STARTED
// notice): its completion wakes the agent, and its exit once more; the pool
// still reaps it.
TEST_F(LauncherPool, ReapedLaunchWithStartNoticeWakesAtStart)
{
    start(1, 2);
    wake_on_start_ = true;
    ASSERT_EQ(submit_asleep(1, {"/bin/sleep", "30"}, true), 1u);
    ASSERT_EQ(launcher_job(pool_, 1)->err, 0) << strerror(launcher_job(pool_, 1)->err);
    EXPECT_GE(wakes_within_10s(), 1u) << "the start did not wake the agent";
    EXPECT_TRUE(launcher_signal(pool_, 1, SIGKILL)) << "not watched by the pool";
    uint32_t i = 99;
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->status, SIGKILL);
    EXPECT_GE(wakes_within_10s(), 1u) << "the exit must wake the agent";
}

// After launcher_wake_always() (an abort) a reaped launch's completion
// wakes the agent too, so that it can signal the task at once.
TEST_F(LauncherPool, WakeAlwaysMakesReapedCompletionsWake)
{
    start(1, 2);
    launcher_wake_always(pool_);
    ASSERT_EQ(submit_asleep(0, {"/bin/sleep", "30"}, true), 0u);
    EXPECT_GE(wakes_within_10s(), 1u) << "the completion did not wake the agent";
    EXPECT_TRUE(launcher_signal(pool_, 0, SIGKILL));
    uint32_t i;
    ASSERT_TRUE(take_exited(&i));
}

// The exit status, the time it ended (between the submit and the take),
// and the output block: the captured stdout then the task's record in the
// rank's .out file, its stderr in the .err file.
TEST_F(LauncherPool, ReapedLaunchGivesStatusTimesAndOutput)
{
    start(2, 2);
    int o = make_capture("o"), e = make_capture("e");
    struct timespec before, after;
    clock_gettime(CLOCK_MONOTONIC, &before);
    submit(0, {"/bin/sh", "-c", "echo hello; echo oops >&2; sleep 0.2; exit 7"}, true, o, e);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_EQ(launcher_job(pool_, 0)->err, 0);
    ASSERT_TRUE(take_exited(&i));
    clock_gettime(CLOCK_MONOTONIC, &after);
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 7 << 8);
    auto ns = [](const struct timespec &t) { return t.tv_sec * 1000000000LL + t.tv_nsec; };
    long long ended = ns(j->started) + (long long)(j->duration * 1e9); // when it was reaped
    EXPECT_GE(ended, ns(before));
    EXPECT_LE(ended, ns(after) + 1000); // the duration's rounding
    EXPECT_GE(j->duration, 0.2);
    EXPECT_LE(j->duration, (ns(after) - ns(before)) / 1e9);
    EXPECT_EQ(j->output_rc, 0) << strerror(j->output_errno);
    EXPECT_EQ(j->out_len, 6);
    EXPECT_EQ(j->err_len, 5);
    std::string out = read_file(dir_ + "/out.0");
    EXPECT_EQ(out.rfind("hello\n[cluster-task ", 0), 0u) << out;
    EXPECT_NE(out.find("name=t0,"), std::string::npos) << out;
    EXPECT_NE(out.find("status=1792,"), std::string::npos) << out;
    EXPECT_EQ(read_file(dir_ + "/err.0"), "oops\n");
    close(o);
    close(e);
}

// A reaped launch with -F files (no pipes): after a 0 exit its reaper reads
// and deletes them into the job's fwd_pack before it writes the output
// block; one that cannot be forwarded (a directory) fails the task, status
// 256 in its record, as on the agent's own path.
struct FileForwards {
    struct fwd_task f = {};
    explicit FileForwards(std::vector<std::string> srcs)
    {
        f.e = static_cast<fwd_entry *>(calloc(srcs.size(), sizeof *f.e));
        for (size_t k = 0; k < srcs.size(); k++)
            f.e[k] = fwd_entry{DAG_FORWARD_FILE, strdup(srcs[k].c_str()), -1, -1, nullptr, 0, 0, 0};
        f.n = f.cap = (uint32_t)srcs.size();
    }
    ~FileForwards()
    {
        fwd_free(&f);
    }
};

TEST_F(LauncherPool, ReapedLaunchReadsItsForwardedFilesBeforeItsRecord)
{
    start(1, 2);
    std::string src = dir_ + "/src.t0";
    FileForwards fw({src});
    int o = make_capture("o"), e = make_capture("e");
    launcher_job(pool_, 0)->forwards = fw.f; // submit() keeps it
    submit(0, {"/bin/sh", "-c", "printf 'x=1' > " + src}, true, o, e);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 0);
    EXPECT_FALSE(j->end.forwards_lost) << j->fwd_err.text;
    ASSERT_EQ(j->fwd_pack.count, 1u);
    ASSERT_EQ(j->fwd_pack.len, 8u + 3u); // u32 index, u32 length, the bytes
    EXPECT_EQ(std::string((const char *)j->fwd_pack.data + 8, 3), "x=1");
    EXPECT_NE(access(src.c_str(), F_OK), 0) << "the file is deleted";
    EXPECT_NE(read_file(dir_ + "/out.0").find("status=0,"), std::string::npos);
    close(o);
    close(e);
}

// -m: the reaper of a task held on failure (its last try) starts no staged
// job on the CPU it gave up, whether it failed, has forwards that may still
// fail it, or exited 0 (its output block may still fail it: a full disk or
// $TMPDIR); the staged job waits for the agent, which has the result.
TEST_F(LauncherPool, HeldTaskStartsNoStagedJob)
{
    std::string adir = dir_ + "/adir"; // a -F source that is a folder: the forward fails
    ASSERT_EQ(mkdir(adir.c_str(), 0700), 0);
    struct Case {
        const char *what, *program;
        bool forwards;
        bool fails;
    } cases[] = {{"exit 1", "/bin/false", false, true},
                 {"a forward that fails", "/bin/true", true, true},
                 {"exit 0, no forwards", "/bin/true", false, false}};
    for (const Case &c : cases) {
        SCOPED_TRACE(c.what);
        launcher_destroy(pool_);
        start(1, 4);
        stage(1, {"/bin/true"});
        FileForwards fw({adir});
        launcher_job(pool_, 0)->forwards = c.forwards ? fw.f : fwd_task{};
        hold_ = true;
        submit(0, {c.program}, true);
        hold_ = false;
        uint32_t i;
        ASSERT_TRUE(take(&i));
        ASSERT_TRUE(take_exited(&i));
        ASSERT_EQ(i, 0u);
        const struct launch_job *j = launcher_job(pool_, 0);
        EXPECT_EQ(j->status != 0, c.fails) << j->status;
        EXPECT_EQ(j->held_failure, c.fails);
        EXPECT_EQ(j->handed, 0u);
        EXPECT_TRUE(launcher_take_staged(pool_, &i)) << "the staged job waits";
        if (c.fails)
            launcher_release(pool_);
        launcher_job(pool_, 0)->forwards = fwd_task{};
    }
}

// -m: from a held task's failure on, no reaper of another slot starts a
// staged job either (before, one could until the agent had taken the
// failure and the staged jobs back), until the agent releases the hold.
TEST_F(LauncherPool, HeldFailureStopsOtherSlotsFromStartingStagedJobs)
{
    start(2, 4);
    stage(2, {"/bin/true"});
    submit(1, {"/bin/sh", "-c", "sleep 0.3"}, true);
    hold_ = true;
    submit(0, {"/bin/false"}, true);
    hold_ = false;
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
    ASSERT_EQ(i, 0u) << "/bin/false ends first";
    EXPECT_TRUE(launcher_job(pool_, 0)->held_failure);
    ASSERT_TRUE(take_exited(&i));
    ASSERT_EQ(i, 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->handed, 0u) << "slot 1's reaper started the staged job";
    EXPECT_FALSE(launcher_job(pool_, 1)->held_failure);
    ASSERT_TRUE(launcher_take_staged(pool_, &i)) << "the staged job waits";
    ASSERT_EQ(i, 2u);
    // released: the next reaper starts a staged job again
    launcher_release(pool_);
    stage(2, {"/bin/true"});
    submit(1, {"/bin/true"}, true);
    ASSERT_TRUE(take(&i));
    ASSERT_EQ(i, 1u);
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 1)->handed, 3u);
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
}

TEST_F(LauncherPool, ReapedLaunchWhoseFileCannotBeForwardedFails)
{
    start(1, 2);
    std::string src = dir_ + "/adir";
    ASSERT_EQ(mkdir(src.c_str(), 0700), 0);
    FileForwards fw({src});
    int o = make_capture("o"), e = make_capture("e");
    launcher_job(pool_, 0)->forwards = fw.f;
    submit(0, {"/bin/true"}, true, o, e);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 256);
    EXPECT_TRUE(j->end.forwards_lost);
    EXPECT_NE(std::string(j->fwd_err.text).find("is not a file"), std::string::npos)
        << j->fwd_err.text;
    EXPECT_EQ(j->fwd_pack.len, 0u);
    EXPECT_NE(read_file(dir_ + "/out.0").find("status=256,"), std::string::npos)
        << read_file(dir_ + "/out.0");
    close(o);
    close(e);
}

// The blocks of a fwd_pack: forward index -> data.
static std::map<uint32_t, std::string> pack_blocks(const struct msgbuf *b)
{
    std::map<uint32_t, std::string> blocks;
    for (size_t pos = 0; pos + 8 <= b->len;) {
        uint32_t idx, len;
        memcpy(&idx, b->data + pos, 4);
        memcpy(&len, b->data + pos + 4, 4);
        blocks[idx] = std::string((const char *)b->data + pos + 8, len);
        pos += 8 + len;
    }
    return blocks;
}

// A reaped launch's -f pipes (engine/exec/forward.h): the task gets the write
// ends as descriptors 3, 4, ...; the pool reads the read ends while it
// runs, so that a task writing more than a pipe holds (64 KiB) does not
// block, and after a 0 exit its reaper packs what each pipe gave into the
// job's fwd_pack, as the agent does for the tasks it reaps.
TEST_F(LauncherPool, ReapedLaunchReadsItsPipesWhileItRuns)
{
    const uint32_t jobs = 4;
    start(2, jobs);
    std::vector<std::unique_ptr<PipeForwards>> fw;
    for (uint32_t s = 0; s < jobs; s++) {
        fw.push_back(std::make_unique<PipeForwards>(2));
        launcher_job(pool_, s)->forwards = fw[s]->f;
        forward_fds_ = fw[s]->write_ends;
        // 300,000 + 200,000 bytes, far more than the two pipes hold
        submit(s,
               {"/bin/sh", "-c",
                "head -c 300000 /dev/zero >&3; head -c 200000 /dev/zero >&4; "
                "echo end" +
                    std::to_string(s) + " >&3"},
               true);
    }
    forward_fds_.clear();
    uint32_t i;
    for (uint32_t n = 0; n < jobs; n++) {
        ASSERT_TRUE(take(&i));
        fw[i]->close_write_ends();
    }
    for (uint32_t n = 0; n < jobs; n++) {
        ASSERT_TRUE(take_exited(&i)) << "a task blocked on a full pipe";
        const struct launch_job *j = launcher_job(pool_, i);
        EXPECT_EQ(j->status, 0);
        EXPECT_FALSE(j->end.forwards_lost) << j->fwd_err.text;
        ASSERT_EQ(j->fwd_pack.count, 2u);
        auto blocks = pack_blocks(&j->fwd_pack);
        EXPECT_EQ(blocks[0], std::string(300000, '\0') + "end" + std::to_string(i) + "\n");
        EXPECT_EQ(blocks[1], std::string(200000, '\0'));
        EXPECT_LT(fw[i]->f.e[0].rfd, 0) << "the reaper closes the read ends";
        EXPECT_LT(fw[i]->f.e[1].rfd, 0);
    }
}

// A pipe after 300 -F files (which need no descriptor: a task may name
// any number) is read by the pool while its task runs, as any other: the
// pool's pipe events number a task's pipes, not its forwards, in their 8
// bits (before, such a task ran on the agent's path: its forward's index,
// 300, did not fit them).
TEST_F(LauncherPool, PipeAfterManyFileForwardsIsReadByThePool)
{
    start(1, 1);
    PipeForwards fw(1, 300);
    launcher_job(pool_, 0)->forwards = fw.f;
    forward_fds_ = fw.write_ends;
    submit(0, {"/bin/sh", "-c", "head -c 300000 /dev/zero >&3"}, true);
    forward_fds_.clear();
    uint32_t i;
    ASSERT_TRUE(take(&i));
    fw.close_write_ends();
    ASSERT_TRUE(take_exited(&i)) << "the task blocked on a full pipe";
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 0);
    EXPECT_FALSE(j->end.forwards_lost) << j->fwd_err.text;
    EXPECT_GT(launcher__pipe_reads(pool_), 0u) << "nobody read the pipe while the task ran";
    auto blocks = pack_blocks(&j->fwd_pack);
    EXPECT_EQ(blocks[300], std::string(300000, '\0')) << "the pipe's data under its own index";
}

// fwd_read_pipe_some() stops after the bytes asked for (more is there: 0),
// the next call goes on from there, and the end of file says 1.
TEST(Forward, ReadPipeSomeStopsAfterWhatWasAskedFor)
{
    PipeForwards fw(1);
    ASSERT_GE(fcntl(fw.write_ends[0], F_SETPIPE_SZ, 1 << 20), 300000);
    std::string data(300000, 'x');
    data += "end";
    ASSERT_EQ(write(fw.write_ends[0], data.data(), data.size()), (ssize_t)data.size());
    EXPECT_EQ(fwd_read_pipe_some(&fw.f, 0, 65536), 0);
    EXPECT_GE(fw.f.e[0].len, 65536u);
    EXPECT_LT(fw.f.e[0].len, data.size()) << "read past what was asked for";
    EXPECT_EQ(fwd_read_pipe_some(&fw.f, 0, SIZE_MAX), 0) << "all read, the writer still open";
    fw.close_write_ends();
    EXPECT_EQ(fwd_read_pipe(&fw.f, 0), 1);
    EXPECT_EQ(std::string((const char *)fw.f.e[0].data, fw.f.e[0].len), data);
}

// A signal sent while a launcher reads the task's pipe (held there 1 s by
// the test hook) waits for the read to end, then reaches the task: the
// slot is still the task's (JOB_READING is not JOB_IDLE).
TEST_F(LauncherPool, SignalDuringAPipeReadWaitsForItAndArrives)
{
    start(1, 2);
    PipeForwards fw(1);
    ASSERT_NO_FATAL_FAILURE(
        submit_with_a_held_read(fw, {"/bin/sh", "-c", "echo x >&3; exec sleep 30"}));
    uint32_t i;
    EXPECT_TRUE(launcher_signal(pool_, 0, SIGKILL)) << "a task being read is still running";
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 0)->status, SIGKILL);
}

// A task that exits while a launcher reads its pipe (held there 1 s) is
// reaped by the other launcher only once the read is over: its data is
// forwarded whole, nothing is lost, and the slot ends unwatched (no
// signal reaches it after).
TEST_F(LauncherPool, ReapDuringAPipeReadWaitsForIt)
{
    start(2, 2);
    PipeForwards fw(1);
    ASSERT_NO_FATAL_FAILURE(submit_with_a_held_read(fw, {"/bin/sh", "-c", "echo x >&3"}));
    uint32_t i;
    ASSERT_TRUE(take_exited(&i));
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 0);
    EXPECT_FALSE(j->end.forwards_lost) << j->fwd_err.text;
    EXPECT_EQ(pack_blocks(&j->fwd_pack)[0], "x\n");
    usleep(1200000); // a read that outlived the reap would be over by now
    EXPECT_EQ(fw.f.e[0].lost, 0) << "a read went on after the reap";
    EXPECT_FALSE(launcher_signal(pool_, 0, SIGTERM)) << "the reaped slot is watched again";
}

// A pipe read that fails (here a directory given as the read end: EISDIR)
// is recorded, and fwd_finish() then fails a task that exited 0 (its
// output may be lost: the engine gives it status 256) and says why; a task
// that failed anyway keeps its own status.
TEST(Forward, AFailedPipeReadFailsATaskThatSucceeded)
{
    TempDir dir("pmc-forward-test");
    PipeForwards fw(1);
    close(fw.f.e[0].rfd);
    fw.f.e[0].rfd = open(dir.dir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    ASSERT_GE(fw.f.e[0].rfd, 0);
    EXPECT_EQ(fwd_read_pipe(&fw.f, 0), -1);
    EXPECT_EQ(fw.f.e[0].lost, EISDIR);
    struct msgbuf pack = {};
    struct pmc_error err;
    EXPECT_EQ(fwd_finish(&fw.f, "t0", 1 << 8, &pack, &err), 0) << "a failed task's data is dropped";
    EXPECT_EQ(fwd_finish(&fw.f, "t0", 0, &pack, &err), -1);
    EXPECT_NE(std::string(err.text).find("Task t0: forwarding pipe V: "), std::string::npos)
        << err.text;
    EXPECT_EQ(pack.len, 0u);
    msg_free(&pack);
}

// A failed task's -F files are deleted, their data dropped (PMC manual, I/O
// forwarding caveats: "the output file is removed when the task exits").
TEST(Forward, AFailedTasksFilesAreDeleted)
{
    TempDir dir("pmc-forward-test");
    std::string a = dir.file("a", "data a\n"), b = dir.file("b", "data b\n");
    FileForwards fw({a, b});
    struct msgbuf pack = {};
    struct pmc_error err;
    EXPECT_EQ(fwd_finish(&fw.f, "t0", 1 << 8, &pack, &err), 0);
    EXPECT_EQ(pack.count, 0u);
    EXPECT_FALSE(std::filesystem::exists(a));
    EXPECT_FALSE(std::filesystem::exists(b));
    msg_free(&pack);
}

// A -F file the task did not write forwards nothing and fails nothing
// (PMC's worker skips it); the others are forwarded, each in its own block
// numbered by its forward, and deleted.
TEST(Forward, AFileTheTaskDidNotWriteIsSkipped)
{
    TempDir dir("pmc-forward-test");
    std::string b = dir.file("b", "data b\n");
    FileForwards fw({dir.path("never-written"), b});
    struct msgbuf pack = {};
    struct pmc_error err;
    ASSERT_EQ(fwd_finish(&fw.f, "t0", 0, &pack, &err), 0) << err.text;
    ASSERT_EQ(pack.count, 1u);
    auto blocks = pack_blocks(&pack);
    EXPECT_EQ(blocks, (std::map<uint32_t, std::string>{{1, "data b\n"}}));
    EXPECT_FALSE(std::filesystem::exists(b));
    msg_free(&pack);
}

// One -F source that cannot be forwarded (a directory) fails the task, and
// the task's other -F files are deleted all the same.
TEST(Forward, AFileThatCannotBeForwardedFailsTheTaskAndTheOthersAreDeleted)
{
    TempDir dir("pmc-forward-test");
    std::string adir = dir.path("adir");
    ASSERT_EQ(mkdir(adir.c_str(), 0755), 0);
    std::string b = dir.file("b", "data b\n");
    FileForwards fw({adir, b});
    struct msgbuf pack = {};
    struct pmc_error err;
    EXPECT_EQ(fwd_finish(&fw.f, "t0", 0, &pack, &err), -1);
    EXPECT_EQ(std::string(err.text), "Task t0: " + adir + " is not a file");
    EXPECT_TRUE(std::filesystem::is_directory(adir)) << "a directory is no file to delete";
    EXPECT_FALSE(std::filesystem::exists(b));
    msg_free(&pack);
}

// A -F file that cannot be forwarded because it is too large (over the 1 MB
// limit) is deleted too, as PMC's worker deletes every -F file whatever
// happens; the file read before it was forwarded.
TEST(Forward, AFileTooLargeToForwardIsDeletedToo)
{
    TempDir dir("pmc-forward-test");
    std::string a = dir.file("a", "data a\n"),
                big = dir.file("big", std::string((1 << 20) + 1, 'x'));
    FileForwards fw({a, big});
    struct msgbuf pack = {};
    struct pmc_error err;
    EXPECT_EQ(fwd_finish(&fw.f, "t0", 0, &pack, &err), -1);
    EXPECT_EQ(std::string(err.text),
              "Task t0: " + big + " is larger than the 1 MB forwarding limit");
    EXPECT_FALSE(std::filesystem::exists(a));
    EXPECT_FALSE(std::filesystem::exists(big));
    msg_free(&pack);
}

// What a failed task wrote to its pipes is read while it runs (it would
// block otherwise) and dropped (PMC manual, I/O forwarding).
TEST_F(LauncherPool, ReapedLaunchThatFailsDropsWhatItsPipeGave)
{
    start(1, 2);
    PipeForwards fw(1);
    ASSERT_NO_FATAL_FAILURE(
        submit_with_a_pipe(fw, {"/bin/sh", "-c", "head -c 200000 /dev/zero >&3; exit 3"}));
    uint32_t i;
    ASSERT_TRUE(take_exited(&i)) << "the task blocked on a full pipe";
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 3 << 8);
    EXPECT_EQ(j->fwd_pack.len, 0u);
    EXPECT_LT(fw.f.e[0].rfd, 0);
}

// A pipe the pool cannot arm again after a read (epoll_ctl MOD failed) is
// closed: what the task writes next meets a closed pipe, and a task that
// then exits 0 anyway (a shell whose last command succeeds) fails with
// status 256 and the pipe named, its data dropped.  The task pauses after
// its first bytes, so that the first read ends on an empty pipe (and is
// re-armed) rather than draining everything to the end of file, as a
// reader that keeps up with one unbroken write could (seen under TSan).
TEST_F(LauncherPool, ReapedLaunchWhosePipeCannotBeArmedAgainFails)
{
    start(1, 2);
    PipeForwards fw(1);
    launcher__fail_next_rearm(pool_, EIO);
    ASSERT_NO_FATAL_FAILURE(submit_with_a_pipe(fw, {"/bin/sh", "-c",
                                                    "head -c 1000 /dev/zero >&3; sleep 0.5; "
                                                    "head -c 300000 /dev/zero >&3; exit 0"}));
    uint32_t i;
    ASSERT_TRUE(take_exited(&i)) << "the task blocked on an unwatched pipe";
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_GE(launcher__pipe_reads(pool_), 1u);
    EXPECT_EQ(j->status, 256);
    EXPECT_TRUE(j->end.forwards_lost);
    EXPECT_NE(std::string(j->fwd_err.text).find("forwarding pipe V: "), std::string::npos)
        << j->fwd_err.text;
    EXPECT_EQ(j->fwd_pack.len, 0u);
    EXPECT_LT(fw.f.e[0].rfd, 0);
}

// A pipe event of a slot's earlier launch, handled after the slot was
// reaped and launched again (a launcher took it from epoll before the
// reap), claims nothing: no read and no re-arm of the new launch's pipe,
// which could be not yet in the set (the re-arm would fail and the task
// with it) or re-armed with the old generation.  The new task writes only
// after 1 s, so no real read can come between the two counts; the new
// launch then forwards its data whole.
TEST_F(LauncherPool, PipeEventOfAnEarlierLaunchIsIgnored)
{
    start(1, 1);
    uint32_t i;
    PipeForwards first(1);
    ASSERT_NO_FATAL_FAILURE(submit_with_a_pipe(first, {"/bin/sh", "-c", "echo a >&3"}));
    ASSERT_TRUE(take_exited(&i));
    PipeForwards second(1);
    ASSERT_NO_FATAL_FAILURE(submit_with_a_pipe(second, {"/bin/sh", "-c", "sleep 1; echo b >&3"}));
    uint64_t reads = launcher__pipe_reads(pool_);
    launcher__stale_pipe_event(pool_, 0, 0);
    EXPECT_EQ(launcher__pipe_reads(pool_), reads) << "an earlier launch's event read the pipe";
    ASSERT_TRUE(take_exited(&i)) << "the task blocked on its pipe";
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_EQ(j->status, 0);
    EXPECT_FALSE(j->end.forwards_lost) << j->fwd_err.text;
    EXPECT_EQ(pack_blocks(&j->fwd_pack)[0], "b\n");
}

// Does any epoll set of this process watch descriptor fd?  (Its
// /proc/self/fdinfo lists a "tfd:" line per watched descriptor.)
static bool epoll_watches(int fd)
{
    for (int e = 0; e < 1024; e++) {
        char link[64], target[64] = {};
        snprintf(link, sizeof link, "/proc/self/fd/%d", e);
        if (readlink(link, target, sizeof target - 1) < 0 ||
            strcmp(target, "anon_inode:[eventpoll]") != 0)
            continue;
        std::string info = read_file("/proc/self/fdinfo/" + std::to_string(e));
        for (size_t at = info.find("tfd:"); at != std::string::npos;
             at = info.find("tfd:", at + 4)) {
            int watched = -1;
            if (sscanf(info.c_str() + at, "tfd: %d", &watched) == 1 && watched == fd)
                return true;
        }
    }
    return false;
}

// A reaped launch whose pidfd cannot be watched takes its pipes out of the
// pool's set again: what the task writes later stays in the pipe for the
// caller, who kills and reaps it.
TEST_F(LauncherPool, UnwatchedLaunchLeavesItsPipesToTheCaller)
{
    start(2, 2);
    PipeForwards fw(1);
    launcher__fail_next_watch(pool_, ENOSPC);
    ASSERT_NO_FATAL_FAILURE(
        submit_with_a_pipe(fw, {"/bin/sh", "-c", "sleep 0.3; printf late >&3"}));
    uint32_t i;
    ASSERT_TRUE(take_unwatched(&i));
    EXPECT_EQ(launcher_job(pool_, 0)->watch_err, ENOSPC);
    EXPECT_FALSE(epoll_watches(fw.f.e[0].rfd)) << "the pipe is still in the pool's set";
    EXPECT_EQ(reap(0), CLD_EXITED << 8 | 0);
    usleep(100000); // a launcher that still watched the pipe would read it now
    EXPECT_EQ(fw.f.e[0].len, 0u) << "the pool read a pipe it no longer watches";
    char buf[16] = {};
    EXPECT_EQ(read(fw.f.e[0].rfd, buf, sizeof buf), 4);
    EXPECT_STREQ(buf, "late");
}

// A staged job waits until a reaped launch ends; that one's reaper starts
// it at once (handed names it), with its own start time, and counts it.
// With two launchers the staged job may end, and the other launcher hand
// its exit back, before its starter hands back the exit that started it:
// the exits are taken in either order.
TEST_F(LauncherPool, StagedJobStartsWhenAReapedTaskEnds)
{
    start(2, 4);
    stage(1, {"/bin/sh", "-c", "echo staged"});
    usleep(100000);
    uint32_t i;
    EXPECT_EQ(launcher_take(pool_, &i), 0) << "a staged job waits for a task to end";
    submit(0, {"/bin/sh", "-c", "sleep 0.2"}, true);
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 0u);
    ASSERT_TRUE(take(&i)) << "the staged job starts when slot 0's task ends";
    ASSERT_EQ(i, 1u);
    const struct launch_job *first = launcher_job(pool_, 0), *next = launcher_job(pool_, 1);
    EXPECT_EQ(next->err, 0);
    EXPECT_TRUE(next->chained);
    auto ns = [](const struct timespec &t) { return t.tv_sec * 1000000000LL + t.tv_nsec; };
    EXPECT_GE(ns(next->started), ns(first->started) + 200000000LL) << "started at the exit";
    uint32_t a, b;
    ASSERT_TRUE(take_exited(&a));
    ASSERT_TRUE(take_exited(&b));
    EXPECT_EQ(a + b, 1u) << "slots 0 and 1, in either order";
    EXPECT_EQ(a * b, 0u);
    EXPECT_EQ(first->handed, 2u) << "slot 1 + 1";
    EXPECT_EQ(next->status, 0);
    EXPECT_EQ(next->handed, 0u) << "nothing else was staged";
    EXPECT_EQ(launcher_staged_starts(pool_), 1u);
}

// A launcher that may wait for its own task (launcher_set_own_waits())
// waits for it in waitid, reaps it as the pool's epoll set would (status,
// output block), starts the staged job on the freed CPU and waits for that
// one too; the other launcher stays free: a job submitted meanwhile starts
// and ends while the waited task still runs.
TEST_F(LauncherPool, LauncherWaitsForItsOwnTaskAndTheNextStaged)
{
    start(2, 4);
    launcher_set_own_waits(pool_, 5); // at most all but one: 1
    stage(1, {"/bin/sh", "-c", "echo staged; sleep 0.5"});
    submit(0, {"/bin/sh", "-c", "echo first; sleep 0.2"}, true);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 0u);
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 0u);
    EXPECT_EQ(launcher_job(pool_, 0)->status, 0);
    EXPECT_EQ(launcher_job(pool_, 0)->handed, 2u) << "the staged job started at the exit";
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 1u);
    submit(2, {"/bin/sh", "-c", "echo beside"}, true); // slot 1's task sleeps 0.5 s
    ASSERT_TRUE(take(&i));
    EXPECT_EQ(i, 2u);
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 2u) << "the free launcher reaped it while slot 1's task ran";
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->status, 0);
    EXPECT_EQ(launcher_own_waits(pool_), 2u) << "slots 0 and 1 waited for by their launcher";
    std::string out = read_file(dir_ + "/out.0");
    for (const char *want : {"first\n", "staged\n", "beside\n", "name=t0", "name=t1", "name=t2"})
        EXPECT_NE(out.find(want), std::string::npos) << want << " missing from " << out;
}

// launcher_create() with pin and one launcher per CPU: each binds itself to
// its CPU, and the tasks they start (whichever takes them) run on every CPU
// the process may use (spawn_thread_pin()).
TEST_F(LauncherPool, PinnedLaunchersOnePerCpuTheirTasksUnbound)
{
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    uint32_t n = std::min((uint32_t)CPU_COUNT(&mine), (uint32_t)LAUNCHER_MAX_THREADS);
    std::multiset<std::string> want = pinned_cpus(n);
    start(n, 4, &mine);
    EXPECT_EQ(threads_cpus_allowed_once("pmc-launch", want), want);
    for (uint32_t s = 0; s < 4; s++) {
        int o = make_capture(("o" + std::to_string(s)).c_str());
        int e = make_capture(("e" + std::to_string(s)).c_str());
        submit(s, {"/bin/grep", "^Cpus_allowed_list", "/proc/self/status"}, true, o, e);
        uint32_t i;
        ASSERT_TRUE(take(&i));
        ASSERT_TRUE(take_exited(&i));
        EXPECT_EQ(launcher_job(pool_, s)->status, 0);
        close(o);
        close(e);
    }
    std::string out = read_file(dir_ + "/out.0"), all = cpus_allowed();
    size_t lines = 0;
    for (size_t k = 0; (k = out.find("Cpus_allowed_list:", k)) != std::string::npos; lines++)
        EXPECT_EQ(status_field(out, "Cpus_allowed_list", k, &k), all);
    EXPECT_EQ(lines, 4u) << out;
}

// Launchers past the CPUs of pin (the one to spare) stay unbound.
TEST_F(LauncherPool, LaunchersPastThePinnedCpusStayUnbound)
{
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    uint32_t n = (uint32_t)CPU_COUNT(&mine) + 1;
    if (n > LAUNCHER_MAX_THREADS)
        GTEST_SKIP() << "no launcher past " << n - 1 << " CPUs (at most " << LAUNCHER_MAX_THREADS
                     << ")";
    std::multiset<std::string> want = pinned_cpus(n);
    start(n, 4, &mine);
    EXPECT_EQ(threads_cpus_allowed_once("pmc-launch", want), want);
}

// This process's threads named pmc-launch that sit in waitid(2) now
// (/proc/self/task/TID/syscall starts with the number of the system call a
// blocked thread is in), by their Cpus_allowed_list.
static std::multiset<std::string> launchers_in_waitid()
{
    std::multiset<std::string> got;
    for (pid_t tid : threads_named("pmc-launch")) {
        std::string call = read_file("/proc/self/task/" + std::to_string(tid) + "/syscall");
        if (call.compare(0, call.find(' '), std::to_string(SYS_waitid)) == 0)
            got.insert(cpus_allowed(tid));
    }
    return got;
}

// Bound launchers come first for the own waits (launcher_set_own_waits()):
// with one launcher bound and one to spare, and one own wait, only the
// bound one waits for its task in waitid; the unbound one, which its
// task's exit could wake on a busy CPU, leaves its tasks to the pool's
// epoll set.  Ten tasks one at a time, each taken by whichever launcher is
// free (about half by each: before, the unbound one then waited in
// waitid), and the one in waitid, if any, is looked at while the task
// sleeps.
TEST_F(LauncherPool, OnlyBoundLaunchersWaitForTheirOwnTasks)
{
    cpu_set_t mine, one;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    if (CPU_COUNT(&mine) < 2)
        GTEST_SKIP() << "on one CPU a bound launcher and an unbound one look alike";
    int c = 0;
    while (!CPU_ISSET(c, &mine))
        c++;
    CPU_ZERO(&one);
    CPU_SET(c, &one);
    std::string bound = std::to_string(c), unbound = cpus_allowed();
    std::string own_call = read_file("/proc/thread-self/syscall");
    ASSERT_TRUE(!own_call.empty() && isdigit((unsigned char)own_call[0]))
        << "launchers_in_waitid() cannot see system calls here: '" << own_call << "'";
    start(2, 4, &one);
    std::multiset<std::string> want = {bound, unbound};
    ASSERT_EQ(threads_cpus_allowed_once("pmc-launch", want), want);
    launcher_set_own_waits(pool_, 1);
    size_t bound_waits = 0;
    for (uint32_t round = 0; round < 10; round++) {
        uint32_t s = round % 4, i;
        submit(s, {"/bin/sleep", "0.3"}, true);
        ASSERT_TRUE(take(&i));
        EXPECT_EQ(i, s);
        usleep(100000);
        std::multiset<std::string> waiting = launchers_in_waitid();
        EXPECT_EQ(waiting.count(unbound), 0u) << "round " << round;
        bound_waits += waiting.count(bound);
        ASSERT_TRUE(take_exited(&i));
        EXPECT_EQ(i, s);
        EXPECT_EQ(launcher_job(pool_, s)->status, 0);
    }
    EXPECT_GE(launcher_own_waits(pool_), bound_waits);
}

// A task its launcher waits for is signalled as any watched one
// (launcher_signal(): the per-slot state orders it against the reap), and
// a task with -f pipes is never waited for so: its pipes must be read
// while it runs, by the pool's epoll set.
TEST_F(LauncherPool, OwnWaitedTaskTakesSignalsAndPipesStayWithThePool)
{
    start(2, 4);
    launcher_set_own_waits(pool_, 1);
    submit(0, {"/bin/sleep", "30"}, true);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    usleep(100000);
    EXPECT_TRUE(launcher_signal(pool_, 0, SIGKILL));
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 0)->status, SIGKILL);
    EXPECT_EQ(launcher_own_waits(pool_), 1u);
    PipeForwards fw(1);
    launcher_job(pool_, 1)->forwards = fw.f;
    forward_fds_ = fw.write_ends;
    submit(1, {"/bin/sh", "-c", "head -c 300000 /dev/zero >&3"}, true);
    forward_fds_.clear();
    ASSERT_TRUE(take(&i));
    fw.close_write_ends();
    ASSERT_TRUE(take_exited(&i)) << "the task blocked on a full pipe";
    EXPECT_EQ(launcher_job(pool_, 1)->status, 0);
    EXPECT_EQ(launcher_own_waits(pool_), 1u) << "a task with pipes was waited for in waitid";
    EXPECT_GT(launcher__pipe_reads(pool_), 0u);
}

// Quiet exits (launcher_set_quiet_exits()): an exit whose reaper started
// a staged job leaves the agent asleep while more than the low mark's
// staged jobs are left.  Staged 1, 2, 3 after slot 0, low mark 1: slot 0's
// exit starts 1 with 2 left (quiet), 1's starts 2 with 1 left and 2's
// starts 3 with none left (each wakes), 3's starts nothing (wakes): 3
// wake-ups for 4 exits, each exit handed back all the same.
TEST_F(LauncherPool, QuietExitsLeaveTheAgentAsleepAboveTheLowMark)
{
    start(2, 8);
    launcher_set_own_waits(pool_, 1);
    launcher_set_quiet_exits(pool_, 1);
    ASSERT_EQ(mailbox_prepare_sleep(&box_), 0);
    for (uint32_t s = 1; s <= 3; s++)
        stage(s, {"/bin/true"});
    submit(0, {"/bin/sh", "-c", "sleep 0.2"}, true);
    std::set<uint32_t> exited;
    uint32_t i;
    for (int n = 0; n < 4; n++) {
        ASSERT_TRUE(take_exited(&i));
        exited.insert(i);
        EXPECT_EQ(launcher_job(pool_, i)->status, 0);
    }
    EXPECT_EQ(exited, (std::set<uint32_t>{0, 1, 2, 3}));
    usleep(100000); // the last exit's wake-up follows its push
    EXPECT_EQ(wakes(), 3u);
}

// Without launcher_set_quiet_exits() every exit wakes the agent: the same
// four exits, 4 wake-ups.
TEST_F(LauncherPool, QuietExitsAreOffUntilAsked)
{
    start(2, 8);
    launcher_set_own_waits(pool_, 1);
    ASSERT_EQ(mailbox_prepare_sleep(&box_), 0);
    for (uint32_t s = 1; s <= 3; s++)
        stage(s, {"/bin/true"});
    submit(0, {"/bin/sh", "-c", "sleep 0.2"}, true);
    uint32_t i;
    for (int n = 0; n < 4; n++)
        ASSERT_TRUE(take_exited(&i));
    usleep(100000); // the last exit's wake-up follows its push
    EXPECT_EQ(wakes(), 4u);
}

// What cannot wait wakes the agent whatever is staged: a failure (its
// retry, a -m hold) and a job that asks for it (wake_on_exit: its result
// releases children).  Low mark 0: slot 0 fails and starts 1 (2 left),
// 1 asks and starts 2 (1 left), 2's start of 3 leaves none, 3 starts
// nothing: 4 wake-ups for 4 exits.
TEST_F(LauncherPool, QuietExitsStillWakeForFailuresAndTasksWithChildren)
{
    start(2, 8);
    launcher_set_own_waits(pool_, 1);
    launcher_set_quiet_exits(pool_, 0);
    ASSERT_EQ(mailbox_prepare_sleep(&box_), 0);
    wake_on_exit_ = true;
    stage(1, {"/bin/true"});
    wake_on_exit_ = false;
    stage(2, {"/bin/true"});
    stage(3, {"/bin/true"});
    submit(0, {"/bin/sh", "-c", "sleep 0.2; exit 3"}, true);
    uint32_t i;
    for (int n = 0; n < 4; n++)
        ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 0)->status, 3 << 8);
    usleep(100000);
    EXPECT_EQ(wakes(), 4u);
}

// The reaper starts the staged job before it hands the exit back (and
// before it writes that task's output): when the exit can be taken, the
// staged job's start is already there.  The exit is taken the moment it
// appears (a tight poll), so a reaper that started the staged job after
// the hand-back is seen.
TEST_F(LauncherPool, StagedJobStartsBeforeTheExitIsHandedBack)
{
    start(1, 4);
    stage(1, {"/bin/true"});
    submit(0, {"/bin/sh", "-c", "sleep 0.2"}, true);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_EQ(i, 0u);
    bool exited = false;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        exited = launcher_take_exited(pool_, &i) == 1;
        if (!exited)
            sched_yield();
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (!exited && now.tv_sec - t0.tv_sec < 10);
    ASSERT_TRUE(exited) << "no exit within 10 s";
    ASSERT_EQ(i, 0u);
    EXPECT_EQ(launcher_job(pool_, 0)->handed, 2u);
    ASSERT_EQ(launcher_take(pool_, &i), 1) << "the staged job's start comes first";
    EXPECT_EQ(i, 1u);
    EXPECT_TRUE(launcher_job(pool_, 1)->chained);
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(i, 1u);
}

// launcher_take_staged() gives staged jobs back oldest first, unstarted.
TEST_F(LauncherPool, TakeStagedGivesBackTheOldestFirst)
{
    start(1, 4);
    staged_ = true;
    submit(3, {"/bin/true"}, true);
    submit(2, {"/bin/true"}, true);
    uint32_t i = UINT32_MAX;
    ASSERT_TRUE(launcher_take_staged(pool_, &i));
    EXPECT_EQ(i, 3u);
    ASSERT_TRUE(launcher_take_staged(pool_, &i));
    EXPECT_EQ(i, 2u);
    EXPECT_FALSE(launcher_take_staged(pool_, &i));
    EXPECT_EQ(launcher_take(pool_, &i), 0);
    EXPECT_EQ(launcher_staged_starts(pool_), 0u);
}

// A reaped launch over its time limit: launcher_time_out() marks it and
// sends SIGTERM; its reaper writes the note to its stderr and reports the
// time-out status, in the record too.  A task that ended on its own is not
// marked afterwards.
TEST_F(LauncherPool, TimedOutReapedLaunchGetsTheTimeoutStatus)
{
    start(1, 2);
    int o = make_capture("o"), e = make_capture("e");
    submit(0, {"/bin/sh", "-c", "echo before >&2; exec sleep 30"}, true, o, e);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_EQ(launcher_job(pool_, 0)->err, 0);
    launcher_job(pool_, 0)->time_limit_ms = 1500;
    usleep(200000); // the shell wrote its line and exec'd sleep
    EXPECT_TRUE(launcher_time_out(pool_, 0));
    ASSERT_TRUE(take_exited(&i));
    const struct launch_job *j = launcher_job(pool_, 0);
    EXPECT_TRUE(j->end.timed_out);
    EXPECT_EQ(j->status, TASK_TIMEOUT_STATUS);
    EXPECT_EQ(read_file(dir_ + "/err.0"),
              "before\npmc-hybrid: task t0 exceeded its time limit of 1.5 s\n");
    std::string out = read_file(dir_ + "/out.0");
    EXPECT_NE(out.find("status=31744,"), std::string::npos) << out;

    submit(1, {"/bin/true"}, true);
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
    EXPECT_FALSE(launcher_time_out(pool_, 1)) << "it was reaped: nothing to time out";
    EXPECT_FALSE(launcher_job(pool_, 1)->end.timed_out);
    EXPECT_EQ(launcher_job(pool_, 1)->status, 0);
    close(o);
    close(e);
}

// What a reaped task leaves running in its process group is killed when
// it ends, as the agent does for the tasks it reaps: the background job
// waits for a file the test makes only after the reap, then writes its
// own.
TEST_F(LauncherPool, ReapedLaunchLeftoversAreKilled)
{
    start(1, 2);
    std::string go = dir_ + "/go", late = dir_ + "/late";
    submit(1,
           {"/bin/sh", "-c",
            "(while [ ! -e " + go + " ]; do sleep 0.05; done; echo late > " + late + ") & exit 3"},
           true);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 1)->status, 3 << 8);
    write_file(go, "");
    usleep(1000000);
    EXPECT_NE(access(late.c_str(), F_OK), 0) << "the background job outlived its task";
}

// launcher_signal() reaches a running reaped task's group, and nothing
// once the pool reaped it.
TEST_F(LauncherPool, SignalReachesARunningReapedTaskOnly)
{
    start(1, 2);
    submit(0, {"/bin/sleep", "30"}, true);
    uint32_t i;
    ASSERT_TRUE(take(&i));
    ASSERT_EQ(launcher_job(pool_, 0)->err, 0);
    EXPECT_TRUE(launcher_signal(pool_, 0, SIGTERM));
    ASSERT_TRUE(take_exited(&i));
    EXPECT_EQ(launcher_job(pool_, 0)->status, SIGTERM);
    EXPECT_FALSE(launcher_signal(pool_, 0, SIGTERM)) << "signalled a reaped task";
    EXPECT_FALSE(launcher_signal(pool_, 1, SIGTERM)) << "signalled a slot never launched";
}

// A reaped launch whose pidfd cannot be added to the pool's set comes back
// through launcher_take_unwatched(), with the error, and wakes the agent;
// the caller reaps the child through its pidfd.
TEST_F(LauncherPool, ReapedLaunchThatCannotBeWatchedIsReported)
{
    start(1, 2);
    launcher__fail_next_watch(pool_, ENOSPC);
    ASSERT_EQ(submit_asleep(0, {"/bin/true"}, true), 0u);
    uint32_t i = 99;
    ASSERT_TRUE(take_unwatched(&i));
    EXPECT_EQ(i, 0u);
    EXPECT_EQ(launcher_job(pool_, 0)->watch_err, ENOSPC);
    EXPECT_GE(wakes_within_10s(), 1u);
    EXPECT_FALSE(launcher_signal(pool_, 0, SIGKILL)) << "an unwatched task is the caller's";
    EXPECT_EQ(reap(0), CLD_EXITED << 8 | 0);
    EXPECT_EQ(launcher_take_exited(pool_, &i), 0);
}

// A failed spawn is never reaped by the pool: it wakes the agent.
TEST_F(LauncherPool, ReapedLaunchThatFailsToSpawnWakes)
{
    start(1, 2);
    ASSERT_EQ(submit_asleep(1, {"/nonexistent/program"}, true), 1u);
    EXPECT_EQ(launcher_job(pool_, 1)->err, ENOENT);
    EXPECT_GE(wakes_within_10s(), 1u);
    usleep(50000);
    uint32_t i;
    EXPECT_EQ(launcher_take_unwatched(pool_, &i), 0);
    EXPECT_EQ(launcher_take_exited(pool_, &i), 0);
}

// Pools of 1 to 4 threads are created, given work and destroyed many times
// over: every launcher stops (launcher_destroy() returns).  A smoke test:
// the race a review found in the stop protocol (a launcher's read of the
// work eventfd taking the stop's write) needed a delay put into one
// launcher to show, and the stop eventfd, which no launcher reads, rules
// it out by construction.
TEST_F(LauncherPool, DestroyStopsEveryLauncher)
{
    for (int round = 0; round < 50; round++) {
        start(1 + round % 4, 4);
        submit(0, {"/bin/true"});
        uint32_t i;
        ASSERT_TRUE(take(&i));
        ASSERT_EQ(reap(0), CLD_EXITED << 8 | 0);
        launcher_destroy(pool_);
        pool_ = nullptr;
    }
}

// Loud and reaped launches alternate on 4 threads: each completes once,
// each reaped one exits once (possibly before its completion can be
// popped, as the agent allows for), and none is lost.
TEST_F(LauncherPool, ManyJobsOnSeveralThreadsEachReportedOnce)
{
    const uint32_t slots = 8, jobs = 400;
    start(4, slots);
    enum { FREE, SUBMITTED, RUNNING } stage[slots] = {};
    bool reaped[slots] = {}, early_exit[slots] = {};
    uint32_t submitted = 0, done = 0;
    auto next = [&](uint32_t s) {
        reaped[s] = submitted % 2 == 0;
        stage[s] = SUBMITTED;
        submit(s, {"/bin/true"}, reaped[s]);
        submitted++;
    };
    auto finish = [&](uint32_t s) {
        if (reaped[s]) {
            EXPECT_EQ(launcher_job(pool_, s)->status, 0) << "slot " << s;
        }
        stage[s] = FREE;
        early_exit[s] = false;
        done++;
        if (submitted < jobs)
            next(s);
    };
    for (uint32_t s = 0; s < slots; s++)
        next(s);
    for (int idle = 0; done < jobs && idle < 20000;) {
        bool any = false;
        uint32_t i;
        while (launcher_take(pool_, &i) == 1) {
            any = true;
            ASSERT_LT(i, slots);
            ASSERT_EQ(stage[i], SUBMITTED) << "slot " << i << " completed twice";
            ASSERT_EQ(launcher_job(pool_, i)->err, 0);
            stage[i] = RUNNING;
            if (!reaped[i]) {
                ASSERT_EQ(reap(i), CLD_EXITED << 8 | 0);
                finish(i);
            } else if (early_exit[i]) {
                finish(i);
            }
        }
        while (launcher_take_exited(pool_, &i) == 1) {
            any = true;
            ASSERT_LT(i, slots);
            ASSERT_TRUE(reaped[i]) << "slot " << i << ": a loud launch came back as reaped";
            ASSERT_FALSE(early_exit[i]) << "slot " << i << " exited twice";
            if (stage[i] == RUNNING)
                finish(i);
            else
                early_exit[i] = true; /* its completion is still on its way */
        }
        if (!any) {
            usleep(500);
            idle++;
        }
    }
    EXPECT_EQ(done, jobs);
    uint32_t i;
    EXPECT_EQ(launcher_take(pool_, &i), 0);
    EXPECT_EQ(launcher_take_exited(pool_, &i), 0);
    EXPECT_EQ(launcher_take_unwatched(pool_, &i), 0);
}

TEST(LauncherDefault, NoneOnOneUsableCpu)
{
    for (uint32_t cpus : {1u, 2u, 8u, 64u})
        EXPECT_EQ(launcher_default_threads(cpus, 1), 0u) << cpus << " CPUs";
    EXPECT_EQ(launcher_default_threads(4, 0), 0u) << "no usable CPU counts as one";
}

// {node CPUs, usable CPUs, the default pool} rows
void expect_defaults(std::initializer_list<std::array<uint32_t, 3>> rows)
{
    for (const auto &[cpus, usable, want] : rows)
        EXPECT_EQ(launcher_default_threads(cpus, usable), want)
            << cpus << " CPUs, " << usable << " usable";
}

TEST(LauncherDefault, OneToSpareBelowEightCpus)
{
    expect_defaults({// one launcher per task that can run at once, and one more
                     {1, 16, 2},
                     {2, 16, 3},
                     {4, 16, 5},
                     {7, 16, 8},
                     {2, 2, 3},
                     {7, 7, 8},
                     // more CPUs than this process may use: counted by the node's
                     {8, 2, 9},
                     {16, 7, 17},
                     {63, 2, 64},
                     // where cpus + 1 would pass the pool's most, none
                     {64, 2, 0},
                     {UINT32_MAX, 4, 0}});
}

TEST(LauncherDefault, OnePerTwoCpusFromEight)
{
    expect_defaults({{8, 8, 4},
                     {9, 9, 4},
                     {11, 11, 5},
                     {16, 16, 8},
                     {64, 64, 32},
                     {127, 127, 63},
                     {128, 128, 64},
                     {192, 192, 64},
                     // from the smaller of the two
                     {8, 1000, 4},
                     {16, 1000, 8},
                     {64, 1000, 32},
                     {24, 16, 8},
                     {16, 24, 8},
                     {64, 8, 4}});
}

TEST(LauncherDefault, CappedAtTheMostThePoolTakes)
{
    const uint32_t most = LAUNCHER_MAX_THREADS * LAUNCHER_CPUS_PER_THREAD;
    EXPECT_EQ(launcher_default_threads(most, most), (uint32_t)LAUNCHER_MAX_THREADS);
    EXPECT_EQ(launcher_default_threads(UINT32_MAX, UINT32_MAX), (uint32_t)LAUNCHER_MAX_THREADS);
}

} // namespace
