// test_taskio.cc - unit tests of io/taskio.h (COMPAT.md "Task stdio").
//
// Capture files: anonymous (no name left in $TMPDIR), close-on-exec, reset to
// empty.  Output files: opening never truncates; taskio_file_append adds the
// capture's whole content plus the trailer at the end, in order over many
// appends, an 8 MB block intact, the capture file and the trailer alone, a
// capture on another file system (the copy_file_range fallback).  Merge: to a
// regular file (with and without O_APPEND, at its current position) and to a
// pipe drained by a reader thread, the source deleted; a missing source is
// fine; an unreadable source, a bad destination or an unopenable path is an
// error naming the path, and the source is kept.  A capture that shrank
// below the measured size is an error (EIO).  Task blocks
// (taskio_write_block): stdout then the record on a line of its own, stderr
// alone, the capture sizes, --per-task-stdio's record at the end of the
// task's file, and blocks written by several threads at once intact.
//
// Each test gets its own directory under $TMPDIR (or /tmp) and sets TMPDIR
// to a folder in it.
#include <gtest/gtest.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/taskio.h"
#include "testutil.h"

namespace fs = std::filesystem;

namespace
{

using namespace testutil;

std::vector<std::string> list_dir(const std::string &dir)
{
    std::vector<std::string> names;
    for (const auto &e : fs::directory_iterator(dir))
        names.push_back(e.path().filename().string());
    return names;
}

class TaskioTest : public TempDirTest
{
  protected:
    TaskioTest() : TempDirTest("pmc-taskio-test") {}
    void SetUp() override
    {
        tmpdir_ = dir_ + "/tmp";
        ASSERT_EQ(mkdir(tmpdir_.c_str(), 0700), 0);
        setenv("TMPDIR", tmpdir_.c_str(), 1);
    }
    // taskio_file_open, its error text reported on failure.
    static bool open_output(struct taskio_file *f, const std::string &p)
    {
        struct pmc_error err = {};
        int rc = taskio_file_open(f, p.c_str(), &err);
        EXPECT_EQ(rc, 0) << err.text;
        return rc == 0;
    }
    // A capture file holding data, as a task would leave it.
    int capture_with(const std::string &data)
    {
        int fd = taskio_capture_open();
        EXPECT_GE(fd, 0) << strerror(errno);
        if (fd >= 0) {
            EXPECT_TRUE(write_all(fd, data));
        }
        return fd;
    }

    std::string tmpdir_;
    // A member, so made after the TempDirTest base (which uses the outer
    // TMPDIR) and restored before the base removes dir_.
    SavedEnv tmpdir_env_{"TMPDIR"};
};

TEST_F(TaskioTest, CaptureFileIsAnonymousAndCloexec)
{
    int fd = taskio_capture_open();
    ASSERT_GE(fd, 0) << strerror(errno);
    int fl = fcntl(fd, F_GETFD);
    ASSERT_NE(fl, -1);
    EXPECT_TRUE(fl & FD_CLOEXEC);
    int acc = fcntl(fd, F_GETFL) & O_ACCMODE;
    EXPECT_EQ(acc, O_RDWR);
    EXPECT_TRUE(list_dir(tmpdir_).empty()) << "capture file left a name in TMPDIR";
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_TRUE(S_ISREG(st.st_mode));
    EXPECT_EQ(st.st_nlink, 0u);
    EXPECT_EQ(st.st_size, 0);
    close(fd);
}

TEST_F(TaskioTest, CaptureFileLivesInTmpdir)
{
    int fd = taskio_capture_open();
    ASSERT_GE(fd, 0);
    struct stat st, dst;
    ASSERT_EQ(fstat(fd, &st), 0);
    ASSERT_EQ(stat(tmpdir_.c_str(), &dst), 0);
    EXPECT_EQ(st.st_dev, dst.st_dev);
    close(fd);
}

// Before any task, the agent checks that capture files can be made: a
// TMPDIR that is missing or not a directory is named in the error (it was
// "cannot start task a: No such file or directory").
TEST_F(TaskioTest, CheckCaptureDirNamesTmpdir)
{
    struct pmc_error err = {};
    EXPECT_EQ(taskio_check_capture_dir(&err), 0) << err.text;
    EXPECT_TRUE(list_dir(tmpdir_).empty()) << "the check left a file";
    std::string missing = dir_ + "/nonexistent";
    setenv("TMPDIR", missing.c_str(), 1);
    EXPECT_EQ(taskio_check_capture_dir(&err), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(std::string(err.text), "TMPDIR=" + missing +
                                         ": No such file or directory (the tasks' output is "
                                         "captured there; set TMPDIR to a writable directory)");
    std::string file = dir_ + "/plain";
    {
        std::ofstream(file) << "x";
    }
    setenv("TMPDIR", file.c_str(), 1);
    EXPECT_EQ(taskio_check_capture_dir(&err), -1);
    EXPECT_EQ(std::string(err.text).rfind("TMPDIR=" + file + ": Not a directory", 0), 0u)
        << err.text;
    char buf[64];
    unsetenv("TMPDIR");
    EXPECT_STREQ(taskio_capture_dir_name(buf, sizeof buf), "/tmp (TMPDIR unset)");
}

// --per-task-stdio names files after tasks: a name with a '/' is refused
// before the run, naming the DAG file, the line and the task, and
// taskio_open_per_task() refuses it too (../escape.out.000 was written
// outside the run's directory).
TEST_F(TaskioTest, PerTaskNamesWithASlashAreRefused)
{
    struct dag *d = dag_create();
    ASSERT_NE(d, nullptr);
    const char *names[] = {"ok", "..", "../escape"};
    const char *argv[] = {"/bin/true"};
    size_t argv_len[] = {9};
    for (uint32_t i = 0; i < 3; i++) {
        dag_task_spec spec = {};
        spec.name = names[i];
        spec.name_len = strlen(names[i]);
        spec.argv = argv;
        spec.argv_len = argv_len;
        spec.argc = 1;
        spec.cpus = 1;
        spec.line = 10 + i;
        dag_task_t id;
        ASSERT_EQ(dag_add_task(d, &spec, &id), 0);
    }
    struct pmc_error e;
    ASSERT_EQ(dag_finish(d, &e), 0) << e.text;
    struct pmc_error err = {};
    EXPECT_EQ(taskio_check_per_task_names(d, "run/w.dag", &err), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_STREQ(err.text, "run/w.dag:12: task ../escape: a '/' in a task name is not allowed "
                           "with --per-task-stdio (its output files, NAME.out.NNN, must stay "
                           "in the DAG's directory)");
    dag_destroy(d);
    int out = -1, errfd = -1;
    for (const char *bad : {"../escape", "/abs/x", "sub/x"}) {
        EXPECT_EQ(taskio_open_per_task(dir_.c_str(), bad, &out, &errfd, &err), -1) << bad;
        EXPECT_EQ(errno, EINVAL);
        EXPECT_EQ(std::string(err.text), std::string("task ") + bad +
                                             ": a '/' in a task name is not allowed with "
                                             "--per-task-stdio (its output files, NAME.out.NNN, "
                                             "must stay in the DAG's directory)");
    }
    EXPECT_FALSE(fs::exists(fs::path(dir_).parent_path() / "escape.out.000"));
    ASSERT_EQ(taskio_open_per_task(dir_.c_str(), "..", &out, &errfd, &err), 0) << err.text;
    EXPECT_TRUE(fs::exists(dir_ + "/...out.000")) << "'..' stays in the directory";
    EXPECT_EQ(taskio_close_per_task(&out, &errfd), 0);
}

// A capture file is O_APPEND: after a reset, the next task's output lands
// at offset 0 even though the descriptor's offset is still past it.
TEST_F(TaskioTest, CaptureResetTruncatesAndNextOutputStartsTheFile)
{
    int fd = capture_with("first task output, long enough\n");
    ASSERT_GE(fd, 0);
    EXPECT_EQ(taskio_size(fd), 31);
    ASSERT_EQ(taskio_capture_reset(fd, taskio_size(fd)), 0) << strerror(errno);
    EXPECT_EQ(taskio_size(fd), 0);
    EXPECT_EQ(fcntl(fd, F_GETFL) & O_APPEND, O_APPEND);
    ASSERT_TRUE(write_all(fd, "ab"));
    char buf[64];
    ssize_t n = pread(fd, buf, sizeof buf, 0);
    EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "ab");
    // length not known: truncated all the same
    ASSERT_EQ(taskio_capture_reset(fd, -1), 0);
    EXPECT_EQ(taskio_size(fd), 0);
    close(fd);
}

// An empty capture is left alone: no system call (a bad descriptor shows
// that none was made), while a non-empty one must be truncated.
TEST_F(TaskioTest, CaptureResetOfEmptyFileMakesNoCall)
{
    EXPECT_EQ(taskio_capture_reset(-1, 0), 0);
    errno = 0;
    EXPECT_EQ(taskio_capture_reset(-1, 5), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(taskio_capture_reset(-1, -1), -1);
    EXPECT_EQ(taskio_size(-1), -1);
}

// The record after output that does not end a line starts a new one; only
// the byte at len - 1 counts (a length measured before more was written).
TEST_F(TaskioTest, NeedsNewlineLooksAtTheLastMeasuredByte)
{
    int fd = capture_with("no newline");
    ASSERT_GE(fd, 0);
    EXPECT_EQ(taskio_needs_newline(fd, taskio_size(fd)), 1);
    ASSERT_TRUE(write_all(fd, "\n"));
    EXPECT_EQ(taskio_needs_newline(fd, taskio_size(fd)), 0);
    EXPECT_EQ(taskio_needs_newline(fd, 10), 1);
    EXPECT_EQ(taskio_needs_newline(fd, 0), 0);
    close(fd);
}

TEST_F(TaskioTest, FileOpenCreatesAndNeverTruncates)
{
    std::string p = path("wf.dag.out.0");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    EXPECT_EQ(f.end, 0);
    EXPECT_STREQ(f.path, p.c_str());
    int fl = fcntl(f.fd, F_GETFD);
    EXPECT_TRUE(fl != -1 && (fl & FD_CLOEXEC));
    EXPECT_EQ(taskio_file_close(&f), 0);
    EXPECT_TRUE(fs::exists(p));

    write_file(p, "existing content\n");
    ASSERT_TRUE(open_output(&f, p));
    EXPECT_EQ(f.end, 17);
    EXPECT_EQ(taskio_file_close(&f), 0);
    EXPECT_EQ(read_file(p), "existing content\n");
}

TEST_F(TaskioTest, FileOpenErrorNamesPath)
{
    std::string p = path("no/such/dir/out.0");
    struct taskio_file f = {};
    struct pmc_error err = {};
    EXPECT_EQ(taskio_file_open(&f, p.c_str(), &err), -1);
    EXPECT_NE(std::string(err.text).find(p), std::string::npos) << err.text;
    EXPECT_NE(std::string(err.text).find(strerror(ENOENT)), std::string::npos) << err.text;
}

TEST_F(TaskioTest, CloseIsSafeOnClosedStruct)
{
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, path("x")));
    EXPECT_EQ(taskio_file_close(&f), 0);
    EXPECT_EQ(f.fd, -1);
    EXPECT_EQ(f.path, nullptr);
    EXPECT_EQ(taskio_file_close(&f), 0);
    EXPECT_EQ(f.fd, -1);
}

// The header promises close is safe on a zeroed struct; a zeroed struct has
// fd == 0, which must not be taken for an open output file (closing the
// process's stdin would let the next open() take descriptor 0).  fd 0 is
// saved and restored around the call.
TEST_F(TaskioTest, CloseOfZeroedStructLeavesStdinOpen)
{
    if (fcntl(STDIN_FILENO, F_GETFD) == -1) {
        int n = open("/dev/null", O_RDONLY);
        ASSERT_EQ(n, STDIN_FILENO);
    }
    int saved = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 10);
    ASSERT_GE(saved, 0);
    struct taskio_file f;
    memset(&f, 0, sizeof f);
    taskio_file_close(&f);
    bool still_open = fcntl(STDIN_FILENO, F_GETFD) != -1;
    dup2(saved, STDIN_FILENO);
    close(saved);
    EXPECT_TRUE(still_open) << "taskio_file_close on a zeroed struct closed fd 0";
}

TEST_F(TaskioTest, AppendAddsBlockAndTrailerAtEndOfExistingFile)
{
    std::string p = path("wf.dag.out.1");
    write_file(p, "earlier run\n");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    int cap = capture_with("hello from task\n");
    ASSERT_GE(cap, 0);
    const char trailer[] = "[cluster-task name=A]\n";
    ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), trailer, strlen(trailer)), 0)
        << strerror(errno);
    EXPECT_EQ(f.end, static_cast<off_t>(12 + 16 + strlen(trailer)));
    EXPECT_EQ(read_file(p), "earlier run\nhello from task\n[cluster-task name=A]\n");
    close(cap);
    taskio_file_close(&f);
}

// The capture's offset after the task wrote is at its end; the append copies
// from offset 0 regardless.
TEST_F(TaskioTest, AppendCopiesFromOffsetZero)
{
    std::string p = path("out");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    int cap = capture_with("0123456789");
    ASSERT_GE(cap, 0);
    EXPECT_EQ(lseek(cap, 0, SEEK_CUR), 10);
    ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), nullptr, 0), 0);
    EXPECT_EQ(read_file(p), "0123456789");
    close(cap);
    taskio_file_close(&f);
}

TEST_F(TaskioTest, ManyAppendsInOrder)
{
    std::string p = path("wf.dag.out.2");
    write_file(p, "HEAD\n");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    int cap = taskio_capture_open();
    ASSERT_GE(cap, 0);
    std::string want = "HEAD\n";
    for (int i = 0; i < 2000; i++) {
        ASSERT_EQ(taskio_capture_reset(cap, taskio_size(cap)), 0);
        std::string out = "task " + std::to_string(i) + " " + std::string(i % 97, 'x') + "\n";
        if (i % 5 == 0)
            out.clear(); // a task that printed nothing
        ASSERT_TRUE(write_all(cap, out));
        std::string rec = "[cluster-task name=T" + std::to_string(i) + "]\n";
        ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), rec.data(), rec.size()), 0) << i;
        want += out + rec;
    }
    EXPECT_EQ(f.end, static_cast<off_t>(want.size()));
    taskio_file_close(&f);
    close(cap);
    std::string got = read_file(p);
    EXPECT_EQ(got.size(), want.size());
    EXPECT_TRUE(got == want) << "content differs";
}

// Reopening keeps appending after what is there (a restarted run).
TEST_F(TaskioTest, ReopenContinuesAtEnd)
{
    std::string p = path("out");
    for (int round = 0; round < 3; round++) {
        struct taskio_file f = {};
        ASSERT_TRUE(open_output(&f, p));
        int cap = capture_with("r" + std::to_string(round) + "\n");
        ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), "#\n", 2), 0);
        close(cap);
        taskio_file_close(&f);
    }
    EXPECT_EQ(read_file(p), "r0\n#\nr1\n#\nr2\n#\n");
}

TEST_F(TaskioTest, LargeBlock8MB)
{
    std::string p = path("big.out");
    write_file(p, "prefix");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    std::string data = random_bytes(8u << 20, 99);
    int cap = capture_with(data);
    ASSERT_GE(cap, 0);
    ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), "END\n", 4), 0) << strerror(errno);
    EXPECT_EQ(f.end, static_cast<off_t>(6 + data.size() + 4));
    close(cap);
    taskio_file_close(&f);
    std::string got = read_file(p);
    ASSERT_EQ(got.size(), 6 + data.size() + 4);
    EXPECT_EQ(got.substr(0, 6), "prefix");
    EXPECT_TRUE(got.compare(6, data.size(), data) == 0) << "8 MB block corrupted";
    EXPECT_EQ(got.substr(6 + data.size()), "END\n");
}

TEST_F(TaskioTest, AppendTrailerOnlyAndNoSource)
{
    std::string p = path("out");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    ASSERT_EQ(taskio_file_append(&f, -1, 0, "rec1\n", 5), 0);
    int empty = taskio_capture_open();
    ASSERT_EQ(taskio_file_append(&f, empty, taskio_size(empty), "rec2\n", 5), 0);
    ASSERT_EQ(taskio_file_append(&f, empty, taskio_size(empty), nullptr, 0), 0);
    close(empty);
    taskio_file_close(&f);
    EXPECT_EQ(read_file(p), "rec1\nrec2\n");
}

// A capture on tmpfs and the output on another file system: copy_file_range
// may refuse (EXDEV); the fallback must produce the same bytes.
TEST_F(TaskioTest, AppendAcrossFileSystems)
{
    struct stat a, b;
    if (stat("/dev/shm", &a) != 0 || stat(dir_.c_str(), &b) != 0 || a.st_dev == b.st_dev)
        GTEST_SKIP() << "no second file system at /dev/shm";
    char shm[] = "/dev/shm/pmc-taskio-test.XXXXXX";
    ASSERT_NE(mkdtemp(shm), nullptr);
    setenv("TMPDIR", shm, 1);
    std::string data = random_bytes(300000, 5);
    int cap = capture_with(data);
    ASSERT_GE(cap, 0);
    std::string p = path("out");
    struct taskio_file f = {};
    ASSERT_TRUE(open_output(&f, p));
    ASSERT_EQ(taskio_file_append(&f, cap, taskio_size(cap), "T\n", 2), 0) << strerror(errno);
    close(cap);
    taskio_file_close(&f);
    rmdir(shm);
    EXPECT_TRUE(read_file(p) == data + "T\n");
}

TEST_F(TaskioTest, MergeToRegularFileDeletesSource)
{
    std::string src = path("wf.dag.out.1");
    std::string dst = path("final.out");
    write_file(src, "rank 1 output\n");
    write_file(dst, "rank 0 output\n");
    int fd = open(dst.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct pmc_error err = {};
    ASSERT_EQ(taskio_merge(fd, src.c_str(), &err), 0) << err.text;
    close(fd);
    EXPECT_EQ(read_file(dst), "rank 0 output\nrank 1 output\n");
    EXPECT_FALSE(fs::exists(src)) << "source not deleted";
}

// A lost node's file, block by block: the blocks of tasks that run again
// elsewhere go, the others stay whole (with an id= before the name, and
// output of several lines), and a last block without its record (the
// writer died) goes too; the source is removed.
TEST_F(TaskioTest, MergeBlocksLeavesOutRefusedTasks)
{
    std::string src = path("wf.dag.out.3");
    std::string dst = path("final.out");
    const std::string a = "a line 1\na line 2\n[cluster-task name=a, start=\"x\", status=0]\n";
    const std::string b = "b output\n[cluster-task id=ID7, name=b, start=\"x\", status=0]\n";
    const std::string c = "[cluster-task name=c, start=\"x\", status=15]\n";
    write_file(src, a + b + c + "torn output of d\nno record");
    int fd = open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    struct pmc_error err = {};
    std::vector<std::string> asked;
    auto keep = [](const char *name, size_t len, void *ctx) {
        auto *seen = static_cast<std::vector<std::string> *>(ctx);
        seen->emplace_back(name, len);
        return seen->back() != "c";
    };
    ASSERT_EQ(taskio_merge_blocks(fd, src.c_str(), keep, &asked, &err), 0) << err.text;
    close(fd);
    EXPECT_EQ(read_file(dst), a + b);
    EXPECT_EQ(asked, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_FALSE(fs::exists(src)) << "source not deleted";
    EXPECT_EQ(taskio_merge_blocks(1, src.c_str(), keep, &asked, &err), 0) << "missing: nothing";
}

// Without O_APPEND the copy lands at the descriptor's current position, which
// then moves past it, so merges of several ranks follow one another.
TEST_F(TaskioTest, MergeSeveralRanksAtCurrentPosition)
{
    std::string dst = path("final.out");
    int fd = open(dst.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(write_all(fd, "start\n"));
    std::string want = "start\n";
    struct pmc_error err = {};
    for (int r = 0; r < 4; r++) {
        std::string src = path("wf.dag.out." + std::to_string(r));
        std::string data = random_bytes(1000 + r * 70000, static_cast<unsigned>(r));
        write_file(src, data);
        want += data;
        ASSERT_EQ(taskio_merge(fd, src.c_str(), &err), 0) << err.text;
        EXPECT_FALSE(fs::exists(src));
    }
    ASSERT_TRUE(write_all(fd, "end\n"));
    want += "end\n";
    EXPECT_EQ(lseek(fd, 0, SEEK_CUR), static_cast<off_t>(want.size()));
    close(fd);
    EXPECT_TRUE(read_file(dst) == want);
}

TEST_F(TaskioTest, MergeToPipe)
{
    std::string src = path("wf.dag.err.3");
    std::string data = random_bytes(1u << 20, 3); // far more than a pipe buffer
    write_file(src, data);
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    std::string got;
    std::thread reader([&] { got = read_to_eof(p[0]); });
    struct pmc_error err = {};
    int rc = taskio_merge(p[1], src.c_str(), &err);
    close(p[1]);
    reader.join();
    close(p[0]);
    EXPECT_EQ(rc, 0) << err.text;
    EXPECT_EQ(got.size(), data.size());
    EXPECT_TRUE(got == data) << "pipe content differs";
    EXPECT_FALSE(fs::exists(src));
}

TEST_F(TaskioTest, MergeEmptySource)
{
    std::string src = path("empty");
    write_file(src, "");
    std::string dst = path("dst");
    write_file(dst, "x");
    int fd = open(dst.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    struct pmc_error err = {};
    EXPECT_EQ(taskio_merge(fd, src.c_str(), &err), 0) << err.text;
    close(fd);
    EXPECT_EQ(read_file(dst), "x");
    EXPECT_FALSE(fs::exists(src));
}

TEST_F(TaskioTest, MergeMissingSourceIsOk)
{
    std::string dst = path("dst");
    write_file(dst, "unchanged");
    int fd = open(dst.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct pmc_error err = {};
    strcpy(err.text, "untouched");
    EXPECT_EQ(taskio_merge(fd, path("wf.dag.out.7").c_str(), &err), 0);
    close(fd);
    EXPECT_EQ(read_file(dst), "unchanged");
}

// A directory opens read-only even for root but cannot be read: the merge
// fails, names the path, and does not delete it.
TEST_F(TaskioTest, MergeUnreadableSourceErrors)
{
    std::string src = path("wf.dag.out.4");
    ASSERT_EQ(mkdir(src.c_str(), 0755), 0);
    std::string dst = path("dst");
    write_file(dst, "");
    int fd = open(dst.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct pmc_error err = {};
    EXPECT_EQ(taskio_merge(fd, src.c_str(), &err), -1);
    close(fd);
    EXPECT_NE(std::string(err.text).find(src), std::string::npos) << err.text;
    EXPECT_TRUE(fs::exists(src)) << "unreadable source was deleted";
}

TEST_F(TaskioTest, MergeSourcePathNotADirectoryErrors)
{
    std::string file = path("plain");
    write_file(file, "x");
    std::string src = file + "/wf.dag.out.0"; // ENOTDIR, not ENOENT
    struct pmc_error err = {};
    EXPECT_EQ(taskio_merge(STDOUT_FILENO, src.c_str(), &err), -1);
    EXPECT_NE(std::string(err.text).find(src), std::string::npos) << err.text;
}

// A destination that cannot be written (read-only descriptor): error, and
// the rank's output is kept for inspection.
TEST_F(TaskioTest, MergeToBadDestinationKeepsSource)
{
    std::string src = path("wf.dag.out.6");
    write_file(src, "precious output\n");
    std::string dst = path("ro");
    write_file(dst, "");
    int fd = open(dst.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    struct pmc_error err = {};
    EXPECT_EQ(taskio_merge(fd, src.c_str(), &err), -1);
    close(fd);
    EXPECT_NE(std::string(err.text).find(src), std::string::npos) << err.text;
    EXPECT_TRUE(fs::exists(src));
    EXPECT_EQ(read_file(src), "precious output\n");
}

// A capture holding fewer bytes than the caller measured (it shrank) is
// an error, EIO, not a block with a hole reported as written.
TEST_F(TaskioTest, AppendOfAShrunkCaptureIsAnError)
{
    struct taskio_file f;
    ASSERT_TRUE(open_output(&f, dir_ + "/o"));
    int cap = capture_with("short\n");
    errno = 0;
    EXPECT_EQ(taskio_file_append(&f, cap, 100, "rec\n", 4), -1);
    EXPECT_EQ(errno, EIO);
    taskio_file_close(&f);
    close(cap);
}

// A task block for name with its capture files o and e, to outf/errf.
static struct taskio_block block_for(const char *name, int o, int e, struct taskio_file *outf,
                                     struct taskio_file *errf)
{
    struct taskio_block b = {};
    b.record.name = name;
    b.record.pegasus_id = "";
    b.record.app = "/bin/app";
    b.record.hostname = "h";
    b.record.cpus = 1;
    b.out_fd = o;
    b.err_fd = e;
    b.task_out = -1;
    b.out = outf;
    b.err = errf;
    return b;
}

TEST_F(TaskioTest, WriteBlockPutsStdoutThenRecordAndStderr)
{
    struct taskio_file outf, errf;
    ASSERT_TRUE(open_output(&outf, dir_ + "/o"));
    ASSERT_TRUE(open_output(&errf, dir_ + "/e"));
    int o = capture_with("no newline"), e = capture_with("err text\n");
    struct taskio_block b = block_for("t1", o, e, &outf, &errf);
    off_t out_len = 0, err_len = 0;
    ASSERT_EQ(taskio_write_block(&b, 3 << 8, 1.5, &out_len, &err_len), 0) << strerror(errno);
    EXPECT_EQ(out_len, 10);
    EXPECT_EQ(err_len, 9);
    std::string out = read_file(dir_ + "/o");
    EXPECT_EQ(out.rfind("no newline\n[cluster-task ", 0), 0u) << out;
    EXPECT_NE(out.find("name=t1,"), std::string::npos) << out;
    EXPECT_NE(out.find("status=768,"), std::string::npos) << out;
    EXPECT_NE(out.find("duration=1.500,"), std::string::npos) << out;
    EXPECT_EQ(out.back(), '\n');
    EXPECT_EQ(read_file(dir_ + "/e"), "err text\n");
    EXPECT_EQ(taskio_file_close(&outf), 0);
    EXPECT_EQ(taskio_file_close(&errf), 0);
    close(o);
    close(e);
}

// The stderr block goes first: when it cannot be written (here the rank's
// .err file is open read-only: EBADF), no record in the .out file vouches
// for the task, and the caller learns it.
TEST_F(TaskioTest, WriteBlockWritesNoRecordWhenStderrIsLost)
{
    struct taskio_file outf, errf;
    ASSERT_TRUE(open_output(&outf, dir_ + "/o"));
    ASSERT_TRUE(open_output(&errf, dir_ + "/e"));
    close(errf.fd);
    errf.fd = open((dir_ + "/e").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(errf.fd, 0);
    int o = capture_with("out text\n"), e = capture_with("err text\n");
    struct taskio_block b = block_for("t1", o, e, &outf, &errf);
    off_t out_len = 0, err_len = 0;
    EXPECT_EQ(taskio_write_block(&b, 0, 1.0, &out_len, &err_len), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(read_file(dir_ + "/o").find("[cluster-task "), std::string::npos);
    taskio_file_close(&outf);
    taskio_file_close(&errf);
    close(o);
    close(e);
}

// A --per-task-stdio record that cannot be written (the .out file open
// read-only) is an error, not a note: the task's output is incomplete.
TEST_F(TaskioTest, WriteBlockPerTaskStdioFailsWhenTheRecordIsLost)
{
    int task_out = -1, task_err = -1;
    struct pmc_error err = {};
    ASSERT_EQ(taskio_open_per_task(dir_.c_str(), "t", &task_out, &task_err, &err), 0) << err.text;
    int ro = open((dir_ + "/t.out.000").c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(ro, 0);
    struct taskio_block b = block_for("t2", -1, -1, nullptr, nullptr);
    b.task_out = ro;
    off_t out_len = 0, err_len = 0;
    EXPECT_EQ(taskio_write_block(&b, 0, 0.25, &out_len, &err_len), -1);
    EXPECT_EQ(errno, EBADF);
    close(ro);
    EXPECT_EQ(taskio_close_per_task(&task_out, &task_err), 0);
    EXPECT_EQ(task_out, -1);
    EXPECT_EQ(task_err, -1);
}

// taskio_close_per_task() closes both, sets both to -1 and reports the
// first failure (here a descriptor that is not open: EBADF).
TEST_F(TaskioTest, ClosePerTaskReportsAFailedClose)
{
    int task_out = -1, task_err = -1;
    struct pmc_error err = {};
    ASSERT_EQ(taskio_open_per_task(dir_.c_str(), "t", &task_out, &task_err, &err), 0) << err.text;
    int err_fd = task_err;
    close(task_out); // the close below fails
    EXPECT_EQ(taskio_close_per_task(&task_out, &task_err), -1);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(task_out, -1);
    EXPECT_EQ(task_err, -1);
    EXPECT_EQ(fcntl(err_fd, F_GETFD), -1) << "the .err file was left open";
    int none = -1;
    EXPECT_EQ(taskio_close_per_task(&none, &none), 0);
}

TEST_F(TaskioTest, WriteBlockPerTaskStdioAppendsTheRecordOnly)
{
    struct taskio_file outf, errf;
    ASSERT_TRUE(open_output(&outf, dir_ + "/o"));
    ASSERT_TRUE(open_output(&errf, dir_ + "/e"));
    int task_out = -1, task_err = -1;
    struct pmc_error err = {};
    ASSERT_EQ(taskio_open_per_task(dir_.c_str(), "t", &task_out, &task_err, &err), 0) << err.text;
    ASSERT_TRUE(write_all(task_out, "own output")); /* no final newline */
    struct taskio_block b = block_for("t2", -1, -1, &outf, &errf);
    b.task_out = task_out;
    off_t out_len = 0, err_len = 0;
    ASSERT_EQ(taskio_write_block(&b, 0, 0.25, &out_len, &err_len), 0);
    EXPECT_EQ(out_len, -1) << "the capture files were not used";
    EXPECT_EQ(err_len, -1);
    std::string own = read_file(dir_ + "/t.out.000");
    EXPECT_EQ(own.rfind("own output\n[cluster-task ", 0), 0u) << own;
    EXPECT_EQ(read_file(dir_ + "/o"), "");
    close(task_out);
    close(task_err);
    taskio_file_close(&outf);
    taskio_file_close(&errf);
}

// --task-records failed (failed_records_only): a success writes its
// output and stderr without a record, ending its output's last line so
// that the next block's record starts one; a failure keeps its record.
TEST_F(TaskioTest, WriteBlockFailedRecordsOnlyLeavesOutSuccesses)
{
    struct taskio_file outf, errf;
    ASSERT_TRUE(open_output(&outf, dir_ + "/o"));
    ASSERT_TRUE(open_output(&errf, dir_ + "/e"));
    int o1 = capture_with("ok out"), e1 = capture_with("ok err\n");
    int o2 = capture_with(""), e2 = capture_with("");
    struct taskio_block ok = block_for("good", o1, e1, &outf, &errf);
    struct taskio_block bad = block_for("bad", o2, e2, &outf, &errf);
    ok.failed_records_only = bad.failed_records_only = true;
    off_t out_len = 0, err_len = 0;
    ASSERT_EQ(taskio_write_block(&ok, 0, 1.0, &out_len, &err_len), 0) << strerror(errno);
    EXPECT_EQ(read_file(dir_ + "/o"), "ok out\n");
    EXPECT_EQ(read_file(dir_ + "/e"), "ok err\n");
    ASSERT_EQ(taskio_write_block(&bad, 1 << 8, 1.0, &out_len, &err_len), 0) << strerror(errno);
    std::string out = read_file(dir_ + "/o");
    EXPECT_EQ(out.rfind("ok out\n[cluster-task name=bad,", 0), 0u) << out;
    EXPECT_EQ(out.find("name=good"), std::string::npos) << out;
    taskio_file_close(&outf);
    taskio_file_close(&errf);
    for (int fd : {o1, e1, o2, e2})
        close(fd);
}

// With --per-task-stdio too, a success leaves its own .out file as the
// task wrote it.
TEST_F(TaskioTest, WriteBlockFailedRecordsOnlyPerTaskStdio)
{
    int task_out = -1, task_err = -1;
    struct pmc_error err = {};
    ASSERT_EQ(taskio_open_per_task(dir_.c_str(), "t", &task_out, &task_err, &err), 0) << err.text;
    ASSERT_TRUE(write_all(task_out, "own output"));
    struct taskio_block b = block_for("t", -1, -1, nullptr, nullptr);
    b.task_out = task_out;
    b.failed_records_only = true;
    off_t out_len = 0, err_len = 0;
    ASSERT_EQ(taskio_write_block(&b, 0, 0.25, &out_len, &err_len), 0);
    EXPECT_EQ(read_file(dir_ + "/t.out.000"), "own output");
    EXPECT_EQ(taskio_close_per_task(&task_out, &task_err), 0);
}

// Four threads, started together, write 200 blocks each to the same
// files: each block (a task's 3 lines of stdout and its record) comes out
// whole, none lost, and the file's end is the bytes written.
TEST_F(TaskioTest, WriteBlockFromSeveralThreadsKeepsBlocksWhole)
{
    struct taskio_file outf, errf;
    ASSERT_TRUE(open_output(&outf, dir_ + "/o"));
    ASSERT_TRUE(open_output(&errf, dir_ + "/e"));
    const int threads = 4, blocks = 200;
    std::vector<std::thread> ts;
    std::vector<int> failures(threads, 0);
    std::atomic<int> ready{0};
    for (int t = 0; t < threads; t++)
        ts.emplace_back([&, t] {
            ready++;
            while (ready.load() < threads)
                ; /* start together */
            std::string tag = "T" + std::to_string(t);
            int o = capture_with(tag + "a\n" + tag + "b\n" + tag + "c\n");
            int e = capture_with(tag + "\n");
            struct taskio_block b = block_for(tag.c_str(), o, e, &outf, &errf);
            for (int k = 0; k < blocks; k++) {
                off_t ol, el;
                failures[t] += taskio_write_block(&b, 0, 0.0, &ol, &el) != 0;
            }
            close(o);
            close(e);
        });
    for (auto &t : ts)
        t.join();
    for (int t = 0; t < threads; t++)
        EXPECT_EQ(failures[t], 0) << "thread " << t;
    std::istringstream in(read_file(dir_ + "/o"));
    std::string line;
    std::vector<int> records(threads, 0);
    while (std::getline(in, line)) {
        ASSERT_EQ(line.size(), 3u) << "a block was cut: " << line;
        int t = line[1] - '0';
        ASSERT_EQ(line, "T" + std::to_string(t) + "a");
        std::string b, c, rec;
        ASSERT_TRUE(std::getline(in, b) && std::getline(in, c) && std::getline(in, rec));
        EXPECT_EQ(b, "T" + std::to_string(t) + "b");
        EXPECT_EQ(c, "T" + std::to_string(t) + "c");
        EXPECT_NE(rec.find("name=T" + std::to_string(t) + ","), std::string::npos) << rec;
        records[t]++;
    }
    for (int t = 0; t < threads; t++)
        EXPECT_EQ(records[t], blocks) << "thread " << t;
    EXPECT_EQ(read_file(dir_ + "/e").size(), (size_t)(threads * blocks * 3));
    EXPECT_EQ(outf.end, (off_t)read_file(dir_ + "/o").size());
    EXPECT_EQ(errf.end, (off_t)(threads * blocks * 3));
    taskio_file_close(&outf);
    taskio_file_close(&errf);
}

} // namespace
