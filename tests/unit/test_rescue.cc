// test_rescue.cc - unit tests of io/rescue.h.
//
// Reader: both record styles, blank and comment lines, torn and garbage
// tails (ignored, warned, counted), bad and unknown records before the tail
// (errors naming the line), missing and unreadable files.  Writer: the
// carried-over set rewritten through PATH.tmp, appends in order, flush and
// the time bound, a rewrite that cannot finish leaving PATH untouched, write
// errors provoked with RLIMIT_FSIZE (no test hook in the library), and a
// 1,000,000-record stress test that also crosses the ring's counter wrap and
// its backpressure; run it under ThreadSanitizer too.  The log's file
// deleted while the writer runs is written again at its path with every
// record (carried over and appended), at the next sync or flush; one
// replaced by another file leaves that file alone and says the log is
// lost (rescue_writer_path()).  The installed log is locked by its writer
// (daglock.h) until it is closed.
//
// Each test gets its own directory under $TMPDIR; log output is captured
// through a pipe so warnings can be checked and never hit a size-limited file.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/dag.h"
#include "io/log.h"
#include "io/rescue.h"
#include "log_capture.h"
#include "testutil.h"

namespace fs = std::filesystem;

namespace
{

using namespace testutil;

std::vector<std::string> numbered(const char *fmt, size_t n)
{
    std::vector<std::string> v(n);
    char buf[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(buf, sizeof buf, fmt, i);
        v[i] = buf;
    }
    return v;
}

// A string literal with its NUL bytes.
template <size_t N> std::string bytes(const char (&s)[N])
{
    return std::string(s, N - 1);
}

// RLIMIT_FSIZE lowered for the life of the object, SIGXFSZ ignored so that
// writes past the limit fail with EFBIG instead of killing the process.
class FileSizeLimit
{
  public:
    explicit FileSizeLimit(rlim_t bytes)
    {
        getrlimit(RLIMIT_FSIZE, &old_);
        old_sig_ = signal(SIGXFSZ, SIG_IGN);
        rlimit r = {bytes, old_.rlim_max};
        EXPECT_EQ(setrlimit(RLIMIT_FSIZE, &r), 0) << strerror(errno);
    }
    ~FileSizeLimit()
    {
        setrlimit(RLIMIT_FSIZE, &old_);
        signal(SIGXFSZ, old_sig_);
    }

  private:
    rlimit old_{};
    sighandler_t old_sig_;
};

struct ReadResult {
    int rc = 0;
    uint32_t ndone = 0;
    uint32_t ntorn = 0;
    std::set<std::string> names; // tasks marked done
    bool all_zero = true;
    std::string err;
};

/* Run fn (returning rc and error text) with the permissions of an ordinary
 * user, so permission checks also hold when the suite runs as root (as CI
 * does): as root, fn runs in a forked child that drops to uid/gid 65534
 * ("nobody") and reports back through a pipe; otherwise it runs here. */
struct Outcome {
    int rc = -2;
    std::string err;
};

template <typename Fn> static Outcome unprivileged(Fn fn)
{
    if (geteuid() != 0)
        return fn();
    int fds[2];
    if (pipe(fds) != 0)
        return Outcome{-3, "pipe failed"};
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        Outcome o{-4, "cannot drop privileges"};
        if (setgroups(0, nullptr) == 0 && setgid(65534) == 0 && setuid(65534) == 0)
            o = fn();
        std::string msg = std::to_string(o.rc) + "\n" + o.err;
        ssize_t w = write(fds[1], msg.data(), msg.size());
        _exit(w == (ssize_t)msg.size() ? 0 : 1);
    }
    close(fds[1]);
    std::string msg = read_to_eof(fds[0]);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    size_t nl = msg.find('\n');
    if (nl == std::string::npos)
        return Outcome{-5, "child reported nothing"};
    return Outcome{std::stoi(msg.substr(0, nl)), msg.substr(nl + 1)};
}

using Names = std::set<std::string>;

class RescueTest : public TempDirTest
{
  protected:
    RescueTest() : TempDirTest("test_rescue")
    {
        path_ = dir_ + "/wf.dag.rescue";
        dag_ = make_dag({"a", "b", "c", "d", "task1", "task10"});
    }

    ReadResult read(const std::string &path, const dag *d = nullptr)
    {
        d = d ? d : dag_.get();
        ReadResult r;
        std::vector<uint8_t> done(d->ntasks, 0);
        pmc_error err{};
        r.ndone = 12345; // must be overwritten
        r.ntorn = 12345;
        r.rc = rescue_read(path.c_str(), d, done.data(), nullptr, &r.ndone, &r.ntorn, &err);
        for (dag_task_t t = 0; t < d->ntasks; t++) {
            if (done[t])
                r.names.insert(dag_task_name(d, t));
            r.all_zero = r.all_zero && done[t] == 0;
        }
        if (r.rc != 0)
            r.err = err.text;
        return r;
    }
    ReadResult read_text(const std::string &bytes)
    {
        write_file(path_, bytes);
        return read(path_);
    }
    // Reading `text` succeeds with exactly `done` marked (and counted),
    // `ntorn` torn or garbage tails, and `log` logged.
    void expect_read(const std::string &text, const Names &done, uint32_t ntorn,
                     const std::string &log)
    {
        ReadResult r = read_text(text);
        ASSERT_EQ(r.rc, 0) << r.err;
        EXPECT_EQ(r.names, done);
        EXPECT_EQ(r.ndone, done.size());
        EXPECT_EQ(r.all_zero, done.empty());
        EXPECT_EQ(r.ntorn, ntorn);
        EXPECT_EQ(log_.take(), log);
    }
    // Reading `text` fails with the error `err`, leaving done[] zeroed.
    void expect_read_error(const std::string &text, const std::string &err)
    {
        ReadResult r = read_text(text);
        EXPECT_EQ(r.rc, -1);
        EXPECT_EQ(r.err, err);
        EXPECT_TRUE(r.all_zero) << "a failed read must leave done[] zeroed";
        EXPECT_EQ(r.ndone, 0u);
    }
    // What the reader logs about line `line` of path_.
    std::string warning(int line, const std::string &what) const
    {
        return "[warn] " + path_ + ":" + std::to_string(line) + ": " + what + "\n";
    }
    std::vector<uint8_t> done_set(const std::set<std::string> &names)
    {
        std::vector<uint8_t> done(dag_->ntasks, 0);
        for (const auto &n : names) {
            dag_task_t t;
            EXPECT_EQ(dag_lookup(dag_.get(), n.data(), n.size(), &t), 0) << n;
            done[t] = 1;
        }
        return done;
    }
    rescue_writer *open_writer(const std::set<std::string> &names, pmc_error *err)
    {
        auto done = done_set(names);
        return rescue_writer_open(path_.c_str(), dag_.get(), done.data(), nullptr, err);
    }
    // A writer that has written and synced "DONE a" (a flush: so its next
    // sync is not due for RESCUE_SYNC_USEC), and its stats then; NULL on
    // failure (a test failure already).
    rescue_writer *open_after_one_flush(rescue_writer_stats *before)
    {
        pmc_error err{};
        rescue_writer *w = open_writer({}, &err);
        EXPECT_NE(w, nullptr) << err.text;
        if (!w)
            return nullptr;
        rescue_writer_append(w, id("a"));
        EXPECT_EQ(rescue_writer_flush(w), 0);
        rescue_writer_get_stats(w, before);
        EXPECT_EQ(before->unsynced, 0u) << "a flush leaves nothing unsynced";
        return w;
    }
    dag_task_t id(const char *name)
    {
        dag_task_t t = 0;
        EXPECT_EQ(dag_lookup(dag_.get(), name, strlen(name), &t), 0) << name;
        return t;
    }

    std::string path_;
    DagPtr dag_{nullptr, dag_destroy};
    LogCapture log_;
};

// ---------------------------------------------------------------- reading

TEST_F(RescueTest, ReadsOurStyle)
{
    expect_read("DONE a\nDONE c\nDONE task10\n", {"a", "c", "task10"}, 0, "");
}

TEST_F(RescueTest, ReadsPmcStyleWithUnterminatedLastRecord)
{
    expect_read("\nDONE a\nDONE task1\nDONE d", {"a", "task1", "d"}, 0, "");
}

TEST_F(RescueTest, IgnoresBlankAndCommentLinesAndToleratesWhitespace)
{
    expect_read("# written by hand\n\n   \n  DONE\ta  \n\t# DONE b\n"
                "DONE   c\r\n#\n\f\n DONE d\n",
                {"a", "c", "d"}, 0, "");
}

TEST_F(RescueTest, EmptyFileMarksNothing)
{
    expect_read("", {}, 0, "");
}

TEST_F(RescueTest, TornTailInOurStyleIsIgnoredAndWarned)
{
    // "DONE task1" may be a cut "DONE task10": never trust it.
    expect_read("DONE a\nDONE b\nDONE task1", {"a", "b"}, 1,
                warning(3, "ignoring incomplete last record"));
}

TEST_F(RescueTest, UnterminatedBlankOrCommentIsNotTorn)
{
    expect_read("DONE a\n# a comment", {"a"}, 0, "");
}

TEST_F(RescueTest, PmcStyleInvalidUnterminatedTailIsIgnoredAndWarned)
{
    for (const char *tail : {"DONE ta", "DON", "DONE nosuch"}) {
        SCOPED_TRACE(tail);
        expect_read(std::string("\nDONE a\nDONE b\n") + tail, {"a", "b"}, 1,
                    warning(4, "ignoring incomplete last record"));
    }
}

TEST_F(RescueTest, GarbageTailIsIgnoredAndWarned)
{
    expect_read("DONE a\nDONE b\nxx yy\n", {"a", "b"}, 1,
                warning(3, "ignoring garbage at the end of the file"));
}

TEST_F(RescueTest, ZeroFilledMultiLineTailIsOneGarbageTail)
{
    // What a crash can leave: the file grew, its last blocks never written.
    expect_read(bytes("DONE a\n\0\0\0\n\0\0\n\n# x\n"), {"a"}, 1,
                warning(2, "ignoring garbage at the end of the file"));
}

// A file without any record whose lines no crash of the writer leaves
// (-r naming the DAG or an output file) is no rescue log: refused with the
// first such line, so that the run does not replace it with one.
TEST_F(RescueTest, AFileWithoutRecordsAndWithTextIsNotARescueLog)
{
    const std::pair<std::string, int> cases[] = {
        {"TASK a /bin/true\nTASK b /bin/true\nEDGE a b\n", 1},
        {"# a comment\n\nhello world\n", 3},
        {"hello", 1},
        {"[cluster-task name=a, status=0]\nDONE\n", 1},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.first);
        expect_read_error(c.first, path_ + ":" + std::to_string(c.second) +
                                       ": not a rescue log (no DONE record); it is left as it is");
        EXPECT_EQ(log_.take(), "") << "no torn or garbage warning for a file that is no log";
    }
}

// What a crash of the writer can leave in a log without a complete record
// (a zero-filled block, a torn first record) is still read as one: nothing
// done, the tail warned about.
TEST_F(RescueTest, WhatACrashLeavesBeforeTheFirstRecordIsNoForeignFile)
{
    expect_read(bytes("\0\0\0\n\0\0\n"), {}, 1,
                warning(1, "ignoring garbage at the end of the file"));
    expect_read("DON", {}, 1, warning(1, "ignoring incomplete last record"));
    expect_read("DONE ta", {}, 1, warning(1, "ignoring incomplete last record"));
}

TEST_F(RescueTest, GarbageThenTornLineGivesTwoWarnings)
{
    expect_read("DONE a\n#\nxx\nDONE b", {"a"}, 2,
                warning(3, "ignoring garbage at the end of the file") +
                    warning(4, "ignoring incomplete last record"));
}

TEST_F(RescueTest, BadRecordBeforeGoodOnesIsAnErrorWithItsLine)
{
    const char *bad[] = {"bogus", "DONE", "DONE a b", "done a", "DONEa", "DONE\ta\tb\t"};
    for (const char *b : bad) {
        SCOPED_TRACE(b);
        expect_read_error(std::string("DONE a\n") + b + "\n\n# c\nDONE c\n",
                          path_ + ":2: bad record");
    }
}

TEST_F(RescueTest, ControlBytesInANameMakeABadRecord)
{
    expect_read_error(bytes("DONE a\nDONE b\0x\nDONE c\n"), path_ + ":2: bad record");
}

TEST_F(RescueTest, PmcStyleBadRecordBeforeValidLastRecordIsAnError)
{
    expect_read_error("\nDONE a\nbogus\nDONE b", path_ + ":3: bad record");
}

TEST_F(RescueTest, UnknownTaskIsAnErrorWithItsLine)
{
    expect_read_error("DONE a\n\nDONE nosuch\nDONE b\n", path_ + ":3: unknown task nosuch");
}

TEST_F(RescueTest, UnknownTaskInACompleteLastRecordIsStillAnError)
{
    // Complete and well formed: a rescue file of another DAG, not a torn write.
    expect_read_error("DONE a\nDONE nosuch\n", path_ + ":2: unknown task nosuch");
}

TEST_F(RescueTest, MissingFileMarksNothing)
{
    ReadResult r = read(dir_ + "/no-such-file");
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_TRUE(r.all_zero);
    EXPECT_EQ(r.ndone, 0u);
    EXPECT_EQ(r.ntorn, 0u);
}

TEST_F(RescueTest, DirectoryIsAnError)
{
    ReadResult r = read(dir_);
    EXPECT_EQ(r.rc, -1);
    EXPECT_EQ(r.err, dir_ + ": Is a directory");
}

TEST_F(RescueTest, UnreadableFileIsAnError)
{
    write_file(path_, "DONE a\n");
    ASSERT_EQ(chmod(path_.c_str(), 0), 0);
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0); /* the file, not the folder, is unreadable */
    Outcome o = unprivileged([&] {
        ReadResult r = read(path_);
        return Outcome{r.rc, r.err};
    });
    EXPECT_EQ(o.rc, -1);
    EXPECT_EQ(o.err, path_ + ": Permission denied");
}

// The start-of-run check: creates and removes PATH.tmp, never touches PATH,
// and names the path and the reason when the log could not be written.
TEST_F(RescueTest, CheckWritableLeavesNothingBehind)
{
    write_file(path_, "\nDONE a");
    pmc_error err{};
    ASSERT_EQ(rescue_check_writable(path_.c_str(), &err), 0) << err.text;
    EXPECT_EQ(read_file(path_), "\nDONE a");
    EXPECT_FALSE(std::filesystem::exists(path_ + ".tmp"));
    write_file(path_ + ".tmp", "stale"); // a crash's leftover: the writer replaces it
    EXPECT_EQ(rescue_check_writable(path_.c_str(), &err), 0) << err.text;
}

TEST_F(RescueTest, CheckWritableRefusesDirectoriesAndMissingFolders)
{
    pmc_error err{};
    EXPECT_EQ(rescue_check_writable(dir_.c_str(), &err), -1);
    EXPECT_EQ(std::string(err.text), dir_ + ": Is a directory");
    std::filesystem::create_directory(path_ + ".tmp");
    EXPECT_EQ(rescue_check_writable(path_.c_str(), &err), -1);
    EXPECT_EQ(std::string(err.text), path_ + ".tmp: Is a directory");
    std::string missing = dir_ + "/no/such/dir/wf.dag.rescue";
    EXPECT_EQ(rescue_check_writable(missing.c_str(), &err), -1);
    EXPECT_EQ(std::string(err.text), missing + ".tmp: No such file or directory");
}

// -r /dev/null as root must not turn the device into a file: the log is
// replaced by rename at start, so anything but a regular file is refused.
TEST_F(RescueTest, NeverReplacesADevice)
{
    pmc_error err{};
    EXPECT_EQ(rescue_check_writable("/dev/null", &err), -1);
    EXPECT_NE(std::string(err.text).find("/dev/null: not a regular file"), std::string::npos)
        << err.text;
    EXPECT_EQ(rescue_writer_open("/dev/null", dag_.get(), nullptr, nullptr, &err), nullptr);
    EXPECT_NE(std::string(err.text).find("not a regular file"), std::string::npos) << err.text;
    struct stat st;
    ASSERT_EQ(stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode)) << "/dev/null is no longer a device";
}

TEST_F(RescueTest, CheckWritableRefusesAReadOnlyFolder)
{
    write_file(path_, "DONE a\n");
    ASSERT_EQ(chmod(dir_.c_str(), 0555), 0);
    Outcome o = unprivileged([&] {
        pmc_error err{};
        int rc = rescue_check_writable(path_.c_str(), &err);
        return Outcome{rc, err.text};
    });
    ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
    EXPECT_EQ(o.rc, -1);
    EXPECT_EQ(o.err, path_ + ".tmp: Permission denied");
    EXPECT_EQ(read_file(path_), "DONE a\n");
}

TEST_F(RescueTest, ReadsFromAPipe)
{
    // Not a regular file: read whole instead of mapped.
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const char text[] = "DONE b\nDONE d\n";
    ASSERT_EQ(write(fds[1], text, sizeof text - 1), (ssize_t)(sizeof text - 1));
    close(fds[1]);
    ReadResult r = read("/proc/self/fd/" + std::to_string(fds[0]));
    close(fds[0]);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.names, (Names{"b", "d"}));
}

TEST_F(RescueTest, DuplicateRecordsCountOnce)
{
    expect_read("DONE a\nDONE b\nDONE a\nDONE a\n", {"a", "b"}, 0, "");
}

TEST_F(RescueTest, NtornMayBeNull)
{
    write_file(path_, "DONE a\nDONE b");
    std::vector<uint8_t> done(dag_->ntasks, 0);
    uint32_t ndone = 0;
    pmc_error err{};
    ASSERT_EQ(rescue_read(path_.c_str(), dag_.get(), done.data(), nullptr, &ndone, nullptr, &err),
              0);
    EXPECT_EQ(ndone, 1u);
}

// ---------------------------------------------------------------- writing

TEST_F(RescueTest, OpenRewritesTheCarriedOverSetInIdOrder)
{
    write_file(path_, "DONE c\nDONE a\nDONE a\nxx\n");
    write_file(path_ + ".tmp", "stale from a crash");
    pmc_error err{};
    rescue_writer *w = open_writer({"task1", "c", "a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    EXPECT_EQ(read_file(path_), "DONE a\nDONE c\nDONE task1\n");
    EXPECT_FALSE(fs::exists(path_ + ".tmp"));
    EXPECT_FALSE(rescue_writer_failed(w));
    EXPECT_STREQ(rescue_writer_error(w), "");
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE a\nDONE c\nDONE task1\n");
}

TEST_F(RescueTest, OpenWithAnEmptySetCreatesAnEmptyLog)
{
    pmc_error err{};
    rescue_writer *w = open_writer({}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    EXPECT_TRUE(fs::exists(path_));
    EXPECT_EQ(read_file(path_), "");
    EXPECT_EQ(rescue_writer_close(w), 0);
}

// The log the writer installs is locked while it is open (another open
// file description cannot lock it: another run, io/daglock.h), though it
// replaced the file a run locked first; closed, it is free (issue 45).
// Can another open file description take the write lock of path now?
static bool lockable(const std::string &path)
{
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    EXPECT_GE(fd, 0) << strerror(errno);
    struct flock fl = {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    bool ok = fd >= 0 && fcntl(fd, F_OFD_SETLK, &fl) == 0;
    if (fd >= 0)
        close(fd);
    return ok;
}

TEST_F(RescueTest, TheInstalledLogIsLockedWhileTheWriterHasIt)
{
    write_file(path_, "DONE a\n");
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    EXPECT_FALSE(lockable(path_)) << "the new log must be locked by its writer";
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_TRUE(lockable(path_));
}

// The lock outlives the writer through the descriptor close_locked() and
// rescue_replace() hand back, until the caller closes it: a run keeps its
// log locked to its very end (its last merge, a take-back of records).
TEST_F(RescueTest, CloseLockedAndReplaceHandTheLockOver)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    int held = -2;
    EXPECT_EQ(rescue_writer_close_locked(w, &held), 0);
    ASSERT_GE(held, 0);
    EXPECT_FALSE(lockable(path_)) << "still locked through the descriptor handed back";
    close(held);
    EXPECT_TRUE(lockable(path_));
    std::vector<uint8_t> none(dag_->ntasks, 0);
    ASSERT_EQ(rescue_replace(path_.c_str(), dag_.get(), none.data(), nullptr, &held, &err), 0)
        << err.text;
    ASSERT_GE(held, 0);
    EXPECT_FALSE(lockable(path_)) << "the replaced log is locked through the descriptor";
    close(held);
    EXPECT_TRUE(lockable(path_));
    EXPECT_EQ(rescue_writer_close_locked(nullptr, &held), 0);
    EXPECT_EQ(held, -1);
}

TEST_F(RescueTest, AppendsAreWrittenInOrder)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"b"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    for (const char *n : {"task10", "a", "d", "task1"})
        rescue_writer_append(w, id(n));
    EXPECT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(read_file(path_), "DONE b\nDONE task10\nDONE a\nDONE d\nDONE task1\n");
    rescue_writer_append(w, id("c"));
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE b\nDONE task10\nDONE a\nDONE d\nDONE task1\nDONE c\n");
}

TEST_F(RescueTest, DeletedLogIsWrittenAgainWithEveryRecord)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"b"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, id("a"));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_KEPT);
    ASSERT_EQ(unlink(path_.c_str()), 0);
    rescue_writer_append(w, id("c")); // its sync finds the file gone
    ASSERT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_WRITTEN_AGAIN);
    ReadResult r = read(path_);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.names, (Names{"a", "b", "c"}));
    EXPECT_FALSE(fs::exists(path_ + ".tmp"));
    rescue_writer_append(w, id("d")); // appended to the new file
    EXPECT_EQ(rescue_writer_close(w), 0);
    r = read(path_);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.names, (Names{"a", "b", "c", "d"}));
    EXPECT_EQ(log_.take(), "[error] The rescue log " + path_ +
                               " was deleted during the run: it is written again there, with "
                               "the 3 tasks done so far\n");
}

TEST_F(RescueTest, LogRenamedAwayWhileIdleIsWrittenAgainAtTheFlush)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, id("b"));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    std::string away = dir_ + "/moved";
    ASSERT_EQ(rename(path_.c_str(), away.c_str()), 0);
    ASSERT_EQ(rescue_writer_flush(w), 0); // nothing queued: the flush checks
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_WRITTEN_AGAIN);
    EXPECT_EQ(read_file(path_), "DONE a\nDONE b\n");
    EXPECT_EQ(read_file(away), "DONE a\nDONE b\n") << "the moved file is left as it was";
    EXPECT_EQ(rescue_writer_close(w), 0);
    log_.take();
}

TEST_F(RescueTest, ReplacedLogIsLeftAloneAndLost)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    std::string other = dir_ + "/other";
    write_file(other, "# the user's\n");
    ASSERT_EQ(rename(other.c_str(), path_.c_str()), 0);
    rescue_writer_append(w, id("b"));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_LOST);
    rescue_writer_append(w, id("c"));
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "# the user's\n");
    EXPECT_EQ(log_.take(), "[error] The rescue log " + path_ +
                               " was deleted or replaced during the run: progress since then is "
                               "not recorded there (another file is there now, left as it is)\n")
        << "said once";
}

// A log that cannot be written again (here PATH.tmp is a directory that
// rewrite() cannot unlink) is lost, but the writer keeps its own file: the
// records go on into it, none fails (the failed rewrite once closed the
// log's descriptor: "write failed: Bad file descriptor").
TEST_F(RescueTest, LogThatCannotBeWrittenAgainKeepsItsFile)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    int held = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(held, 0);
    ASSERT_EQ(unlink(path_.c_str()), 0);
    ASSERT_EQ(mkdir((path_ + ".tmp").c_str(), 0755), 0);
    write_file(path_ + ".tmp/x", "");
    rescue_writer_append(w, id("b"));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_LOST);
    rescue_writer_append(w, id("c"));
    EXPECT_EQ(rescue_writer_close(w), 0) << "its records still go into its file";
    std::string kept(64, '\0');
    ssize_t n = pread(held, &kept[0], kept.size(), 0);
    close(held);
    ASSERT_GE(n, 0);
    kept.resize((size_t)n);
    EXPECT_EQ(kept, "DONE a\nDONE b\nDONE c\n");
    EXPECT_TRUE(fs::exists(path_ + ".tmp/x")) << "a PATH.tmp not ours is left alone";
    EXPECT_NE(log_.take().find("was deleted or replaced during the run"), std::string::npos);
}

TEST_F(RescueTest, FlushMakesRecordsVisibleToAFreshRead)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, id("c"));
    rescue_writer_append(w, id("task10"));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    ReadResult r = read(path_);
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.names, (Names{"a", "c", "task10"}));
    EXPECT_EQ(r.ntorn, 0u);
    EXPECT_EQ(rescue_writer_close(w), 0);
}

TEST_F(RescueTest, FlushWithNothingQueuedReturnsAtOnce)
{
    pmc_error err{};
    rescue_writer *w = open_writer({}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    EXPECT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_close(w), 0);
}

TEST_F(RescueTest, RecordsBecomeDurableWithoutFlush)
{
    pmc_error err{};
    rescue_writer *w = open_writer({}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, id("d"));
    // A record for a quiet writer is written at once and, the first sync
    // being due, synced at once; allow a slow disk.  The file's content
    // alone would show the write, not the sync (the page cache).
    rescue_writer_stats st{};
    auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    do {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        rescue_writer_get_stats(w, &st);
    } while ((st.syncs == 0 || st.unsynced != 0) && std::chrono::steady_clock::now() < until);
    EXPECT_EQ(st.syncs, 1u);
    EXPECT_EQ(st.unsynced, 0u);
    EXPECT_EQ(read_file(path_), "DONE d\n");
    EXPECT_EQ(rescue_writer_close(w), 0);
}

TEST_F(RescueTest, AppendFlushPingPong)
{
    // Every flush finds the writer asleep: exercises the wake-up protocol.
    pmc_error err{};
    rescue_writer *w = open_writer({}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    std::string expect;
    for (int i = 0; i < 300; i++) {
        const char *n = i % 2 ? "task1" : "b";
        rescue_writer_append(w, id(n));
        ASSERT_EQ(rescue_writer_flush(w), 0);
        expect += std::string("DONE ") + n + "\n";
        ASSERT_EQ(fs::file_size(path_), expect.size()) << "after record " << i;
    }
    rescue_writer_stats st{};
    rescue_writer_get_stats(w, &st);
    EXPECT_EQ(st.syncs, 300u) << "a flush of one record is one batch";
    EXPECT_EQ(st.late_wakeups, 0u);
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), expect);
}

TEST_F(RescueTest, FlushWakesTheWriterInsteadOfWaitingForTheTimeout)
{
    // A lost wake-up would be hidden by the writer's timeouts: the flush
    // would still succeed, one timeout later.  The writer counts the waits
    // that a timeout ended although what they waited for had come
    // (late_wakeups), so no clock is read here and a loaded machine cannot
    // fail the test.  Every round is one batch (one sync), flushed while the
    // writer waits in one of its three waits:
    // - asleep: the round begins after the writer fell idle;
    // - for the commit interval: the flush comes 300 us after the append,
    //   rounds ~1 ms apart, so the record waits for RESCUE_COMMIT_USEC;
    // - for a due sync: rounds 6 ms apart, so the record is written at once
    //   and waits for RESCUE_SYNC_USEC when the flush comes.
    struct Pattern {
        int rounds;
        std::chrono::microseconds before_append, before_flush;
    };
    const Pattern patterns[] = {
        {41, std::chrono::microseconds(500), std::chrono::microseconds(0)},
        {41, std::chrono::microseconds(0), std::chrono::microseconds(300)},
        {21, std::chrono::microseconds(6000), std::chrono::microseconds(300)}};
    pmc_error err{};
    rescue_writer *w = open_writer({}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    uint64_t rounds = 0;
    for (const Pattern &p : patterns)
        for (int i = 0; i < p.rounds; i++, rounds++) {
            std::this_thread::sleep_for(p.before_append);
            rescue_writer_append(w, id("a"));
            std::this_thread::sleep_for(p.before_flush);
            ASSERT_EQ(rescue_writer_flush(w), 0);
        }
    rescue_writer_stats st{};
    rescue_writer_get_stats(w, &st);
    EXPECT_EQ(st.late_wakeups, 0u) << "a flush waited for a timeout";
    EXPECT_EQ(st.syncs, rounds) << "one write+fdatasync per flushed record";
    EXPECT_EQ(rescue_writer_close(w), 0);
}

TEST_F(RescueTest, UnderLoadWritesAndSyncsAreAtLeastTheirIntervalsApart)
{
    // A record every 200 us for ~120 ms: without the intervals the writer
    // would write and sync as soon as the previous sync returned (one sync
    // per record or two on this disk); with them, writes begin at least
    // RESCUE_COMMIT_USEC apart and syncs RESCUE_SYNC_USEC apart, so at most
    // elapsed / interval + 2 of each (the first record after the flush is
    // written at once).  A slower machine only makes fewer, so the bounds
    // cannot fail for load (nor is a lower one asserted: one sync of a
    // loaded disk can outlast the whole loop).
    rescue_writer_stats before{};
    rescue_writer *w = open_after_one_flush(&before);
    ASSERT_NE(w, nullptr);
    auto t0 = std::chrono::steady_clock::now();
    int appended = 0;
    while (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(120)) {
        rescue_writer_append(w, id(appended % 2 ? "b" : "d"));
        appended++;
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    rescue_writer_stats st{};
    rescue_writer_get_stats(w, &st);
    uint64_t writes = st.writes - before.writes, syncs = st.syncs - before.syncs;
    printf("[ stats    ] %d records in %.1f ms: %llu writes, %llu syncs\n", appended, ms,
           (unsigned long long)writes, (unsigned long long)syncs);
    EXPECT_LE(writes, (uint64_t)(ms * 1000.0 / RESCUE_COMMIT_USEC) + 2);
    EXPECT_LE(syncs, (uint64_t)(ms * 1000.0 / RESCUE_SYNC_USEC) + 2);
    EXPECT_LE(syncs, writes) << "a sync follows a write";
    ASSERT_EQ(rescue_writer_close(w), 0); // close flushes: every record is there
    std::string text = read_file(path_);
    EXPECT_EQ((int)std::count(text.begin(), text.end(), '\n'), appended + 1);
}

TEST_F(RescueTest, WrittenRecordsAreSyncedWithoutAFlush)
{
    // Records written while a sync is not yet due (RESCUE_SYNC_USEC after
    // the flush's) must reach the disk by themselves once it is: the writer
    // waits for the end of the interval, not for a flush, more records or
    // its RESCUE_FLUSH_USEC safety net.  So the last one is synced within
    // ~RESCUE_SYNC_USEC of the flush, plus two fdatasync times: asserted
    // below 600 ms, the best of three tries (a loaded disk may stall one),
    // far below the safety net's 1 s.
    double best_ms = 1e9;
    for (int attempt = 0; attempt < 3 && best_ms >= 600; attempt++) {
        fs::remove(path_); // each try begins with an empty log
        rescue_writer_stats before{};
        rescue_writer *w = open_after_one_flush(&before);
        ASSERT_NE(w, nullptr);
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < 20; i++) {
            rescue_writer_append(w, id(i % 2 ? "b" : "d"));
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        rescue_writer_stats st{};
        auto until = t0 + std::chrono::seconds(10);
        do {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            rescue_writer_get_stats(w, &st);
        } while ((st.unsynced != 0 || fs::file_size(path_) != 7 + 20 * 7) &&
                 std::chrono::steady_clock::now() < until);
        double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                        .count();
        best_ms = std::min(best_ms, ms);
        EXPECT_EQ(st.unsynced, 0u) << "written records waited for a flush to be synced";
        EXPECT_EQ(fs::file_size(path_), 7u + 20 * 7) << "DONE a, then 20 of DONE b / DONE d";
        EXPECT_GT(st.syncs, before.syncs);
        EXPECT_EQ(st.late_wakeups, 0u);
        EXPECT_EQ(rescue_writer_close(w), 0);
    }
    EXPECT_LT(best_ms, 600.0) << "synced by the safety net, not at the end of the interval";
}

TEST_F(RescueTest, OpenFailsWhenTmpCannotBeCreatedAndLeavesPathAlone)
{
    write_file(path_, "DONE a\nDONE b\n");
    ASSERT_EQ(mkdir((path_ + ".tmp").c_str(), 0700), 0); // works even as root
    pmc_error err{};
    rescue_writer *w = open_writer({"c"}, &err);
    EXPECT_EQ(w, nullptr);
    EXPECT_EQ(std::string(err.text), path_ + ".tmp: Is a directory");
    EXPECT_EQ(read_file(path_), "DONE a\nDONE b\n");
    EXPECT_TRUE(fs::is_directory(path_ + ".tmp")) << "not ours: must not be removed";
}

TEST_F(RescueTest, OpenFailsInAReadOnlyDirectory)
{
    write_file(path_, "DONE a\n");
    ASSERT_EQ(chmod(path_.c_str(), 0666), 0);
    ASSERT_EQ(chmod(dir_.c_str(), 0555), 0); /* readable, not writable, by anyone */
    Outcome o = unprivileged([&] {
        pmc_error err{};
        rescue_writer *w = open_writer({"c"}, &err);
        Outcome r{w ? 0 : -1, err.text};
        rescue_writer_close(w);
        return r;
    });
    EXPECT_EQ(o.rc, -1);
    EXPECT_EQ(o.err, path_ + ".tmp: Permission denied");
    EXPECT_EQ(read_file(path_), "DONE a\n");
}

// rescue_replace(): the records a finished run takes back (tasks whose
// output was found lost at its end) are gone, the others stay, in id order.
TEST_F(RescueTest, ReplaceWritesExactlyTheGivenSet)
{
    pmc_error err{};
    rescue_writer *w = open_writer({"a"}, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, id("task1"));
    rescue_writer_append(w, id("c"));
    ASSERT_EQ(rescue_writer_close(w), 0);
    ASSERT_EQ(read_file(path_), "DONE a\nDONE task1\nDONE c\n");
    write_file(path_ + ".tmp", "stale from a crash");
    auto keep = done_set({"c", "a"});
    ASSERT_EQ(rescue_replace(path_.c_str(), dag_.get(), keep.data(), nullptr, nullptr, &err), 0)
        << err.text;
    EXPECT_EQ(read_file(path_), "DONE a\nDONE c\n");
    EXPECT_FALSE(fs::exists(path_ + ".tmp"));
    auto none = done_set({});
    ASSERT_EQ(rescue_replace(path_.c_str(), dag_.get(), none.data(), nullptr, nullptr, &err), 0)
        << err.text;
    EXPECT_TRUE(fs::exists(path_));
    EXPECT_EQ(read_file(path_), "");
}

// A new log that cannot be written whole (a file size limit), at open or
// at a replace, leaves the old one as it was and no PATH.tmp behind.
TEST_F(RescueTest, ARewriteThatCannotFinishLeavesPathAlone)
{
    auto names = numbered("task-%05zu", 1000); // 16,000 bytes of records
    DagPtr big = make_dag(names);
    std::vector<uint8_t> done(big->ntasks, 1);
    for (bool replace : {false, true}) {
        SCOPED_TRACE(replace ? "rescue_replace" : "rescue_writer_open");
        write_file(path_, "DONE task-00007\n");
        pmc_error err{};
        int rc;
        {
            FileSizeLimit limit(4096);
            if (replace) {
                rc = rescue_replace(path_.c_str(), big.get(), done.data(), nullptr, nullptr, &err);
            } else {
                rescue_writer *w =
                    rescue_writer_open(path_.c_str(), big.get(), done.data(), nullptr, &err);
                rc = w ? 0 : -1;
                rescue_writer_close(w);
            }
        }
        EXPECT_EQ(rc, -1);
        EXPECT_EQ(std::string(err.text), path_ + ".tmp: write failed: File too large");
        EXPECT_EQ(read_file(path_), "DONE task-00007\n");
        EXPECT_FALSE(fs::exists(path_ + ".tmp"));
    }
    pmc_error err{};
    EXPECT_EQ(rescue_replace("/dev/null", big.get(), done.data(), nullptr, nullptr, &err), -1);
    EXPECT_STREQ(err.text, "/dev/null: not a regular file (the rescue log is replaced)");
}

TEST_F(RescueTest, WriteErrorSetsFailedAndDropsLaterRecords)
{
    auto names = numbered("t%04zu", 300); // "DONE tNNNN\n" is 11 bytes
    DagPtr big = make_dag(names);
    std::vector<uint8_t> none(big->ntasks, 0);
    pmc_error err{};
    rescue_writer *w = rescue_writer_open(path_.c_str(), big.get(), none.data(), nullptr, &err);
    ASSERT_NE(w, nullptr) << err.text;
    std::string expect;
    int flushed;
    {
        FileSizeLimit limit(100); // nothing but the writer writes files in here
        for (dag_task_t t = 0; t < 20; t++) {
            rescue_writer_append(w, t);
            expect += "DONE " + names[t] + "\n";
        }
        flushed = rescue_writer_flush(w);
    }
    EXPECT_EQ(flushed, -1);
    EXPECT_TRUE(rescue_writer_failed(w));
    const std::string msg = path_ + ": write failed: File too large";
    EXPECT_EQ(std::string(rescue_writer_error(w)), msg);
    EXPECT_EQ(log_.take(), "[error] " + msg + "\n");
    // More than the ring holds: dropped, never blocking, never written.
    for (uint32_t i = 0; i < 200000; i++)
        rescue_writer_append(w, i % big->ntasks);
    EXPECT_EQ(rescue_writer_flush(w), -1);
    EXPECT_EQ(rescue_writer_close(w), -1);
    EXPECT_EQ(read_file(path_), expect.substr(0, 100)) << "the limit cuts the tenth record";
    std::vector<uint8_t> done(big->ntasks, 0);
    uint32_t ndone = 0, ntorn = 0;
    ASSERT_EQ(rescue_read(path_.c_str(), big.get(), done.data(), nullptr, &ndone, &ntorn, &err), 0)
        << err.text;
    EXPECT_EQ(ndone, 9u);
    EXPECT_EQ(ntorn, 1u);
}

TEST_F(RescueTest, CloseOfNullIsANoOp)
{
    EXPECT_EQ(rescue_writer_close(nullptr), 0);
}

TEST_F(RescueTest, StressMillionAppendsInOrder)
{
    constexpr uint32_t kTasks = 100000;
    constexpr uint32_t kAppends = 1000000;
    constexpr uint32_t kStride = 7919; // prime, so each run of kTasks is a permutation
    auto names = numbered("task%06zu", kTasks);
    DagPtr big = make_dag(names);
    std::vector<uint8_t> none(kTasks, 0);
    pmc_error err{};
    rescue_writer *w = rescue_writer_open(path_.c_str(), big.get(), none.data(), nullptr, &err);
    ASSERT_NE(w, nullptr) << err.text;

    // A third thread polls the "any thread" calls while the writer works.
    std::atomic<bool> stop{false};
    std::thread watcher([&] {
        while (!stop.load(std::memory_order_relaxed)) {
            if (rescue_writer_failed(w))
                ADD_FAILURE() << rescue_writer_error(w);
            std::this_thread::yield();
        }
    });
    auto t0 = std::chrono::steady_clock::now();
    for (uint32_t i = 0; i < kAppends; i++) {
        rescue_writer_append(w, (dag_task_t)((uint64_t)i * kStride % kTasks));
        if (i == kAppends / 2) {
            EXPECT_EQ(rescue_writer_flush(w), 0);
        }
    }
    stop = true;
    watcher.join();
    ASSERT_EQ(rescue_writer_flush(w), 0);
    rescue_writer_stats st{};
    rescue_writer_get_stats(w, &st);
    ASSERT_EQ(rescue_writer_close(w), 0);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    printf("[ stats    ] %u records appended and synced in %.3f s: %.0f records/s\n", kAppends,
           secs, kAppends / secs);
    RecordProperty("records_per_second", std::to_string((long)(kAppends / secs)));
    // Group commit: batches form while one syncs.  The producer appends in
    // nanoseconds and a sync takes microseconds at least, so a batch holds
    // hundreds of records; 4 per sync on average is a bound no scheduler
    // delay reaches (the writer would have to keep pace with the producer).
    printf("[ stats    ] %llu syncs: %.0f records per write+fdatasync\n",
           (unsigned long long)st.syncs, (double)kAppends / (double)st.syncs);
    EXPECT_GE(st.syncs, 1u);
    EXPECT_LT(st.syncs, (uint64_t)kAppends / 4) << "no group commit";

    std::ifstream f(path_, std::ios::binary);
    std::string line;
    uint32_t n = 0;
    while (std::getline(f, line)) {
        const std::string &want = names[(uint64_t)n * kStride % kTasks];
        if (line != "DONE " + want) {
            ADD_FAILURE() << "line " << n + 1 << ": got \"" << line << "\", want DONE " << want;
            break;
        }
        n++;
    }
    EXPECT_EQ(n, kAppends);
    std::vector<uint8_t> done(kTasks, 0);
    uint32_t ndone = 0, ntorn = 0;
    ASSERT_EQ(rescue_read(path_.c_str(), big.get(), done.data(), nullptr, &ndone, &ntorn, &err), 0)
        << err.text;
    EXPECT_EQ(ndone, kTasks);
    EXPECT_EQ(ntorn, 0u);
}

} // namespace
