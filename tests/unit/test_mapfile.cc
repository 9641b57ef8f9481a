// test_mapfile.cc - unit tests of io/mapfile.h, the one whole-file reader of
// the DAG file and the rescue log, and of the write-all loops of io/fdio.h.
//
// mapfile: a regular file is mapped and its bytes are the file's; an empty
// regular file loads as zero bytes; a pipe is read to its end (more than
// one buffer, written by a thread); a /proc file (regular with st_size 0)
// is read, not taken as empty; a FIFO is read; a missing path, a directory
// and a path under a regular file fail with errno and "PATH: <strerror>",
// leaving the struct zeroed; release keeps errno and is a no-op on a
// zeroed struct.
// fdio: fdio_write_all writes everything and a failure returns and sets the
// errno; fdio_pwrite_all writes at the offset, advances it and leaves the
// file position alone; fdio_standard_fds opens /dev/null on each closed
// standard descriptor (every combination of 0, 1 and 2, in a child);
// fdio_still_at is true while the open file is the
// one at its path, and false with ENOENT once it is deleted or renamed
// away, EEXIST once another file is renamed over it or a new one made
// there, and EBADF for a closed descriptor; fdio_reader_gone is true for
// a pipe's writing end once its reader is closed, false while it is open
// and for a file.
//
// Each test gets its own directory under $TMPDIR (or /tmp).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io/fdio.h"
#include "io/mapfile.h"
#include "testutil.h"

namespace
{

using namespace testutil;

class MapfileTest : public TempDirTest
{
  protected:
    MapfileTest() : TempDirTest("pmc-mapfile") {}

    std::string bytes(const mapfile &mf)
    {
        return std::string(mf.data ? mf.data : "", mf.size);
    }
    bool zeroed(const mapfile &mf)
    {
        return mf.data == nullptr && mf.size == 0 && !mf.mapped;
    }
};

TEST_F(MapfileTest, RegularFileIsMapped)
{
    std::string text = random_bytes(100000, 7);
    std::string p = file("a", text);
    mapfile mf;
    pmc_error err{};
    ASSERT_EQ(mapfile_load(&mf, p.c_str(), &err), 0) << err.text;
    EXPECT_TRUE(mf.mapped);
    EXPECT_EQ(bytes(mf), text);
    mapfile_release(&mf);
    EXPECT_TRUE(zeroed(mf));
}

TEST_F(MapfileTest, EmptyRegularFileHasNoBytes)
{
    std::string p = file("empty", "");
    mapfile mf;
    pmc_error err{};
    ASSERT_EQ(mapfile_load(&mf, p.c_str(), &err), 0) << err.text;
    EXPECT_EQ(mf.size, 0u);
    EXPECT_FALSE(mf.mapped);
    mapfile_release(&mf);
}

TEST_F(MapfileTest, PipeIsReadToItsEnd)
{
    int fds[2];
    ASSERT_EQ(pipe2(fds, O_CLOEXEC), 0);
    std::string text = random_bytes(300000, 3); // several read buffers
    std::thread writer([&] {
        EXPECT_TRUE(write_all(fds[1], text));
        close(fds[1]);
    });
    std::string p = "/proc/self/fd/" + std::to_string(fds[0]);
    mapfile mf;
    pmc_error err{};
    int rc = mapfile_load(&mf, p.c_str(), &err);
    writer.join();
    close(fds[0]);
    ASSERT_EQ(rc, 0) << err.text;
    EXPECT_FALSE(mf.mapped);
    EXPECT_EQ(bytes(mf), text);
    mapfile_release(&mf);
}

TEST_F(MapfileTest, FifoIsRead)
{
    std::string p = path("fifo");
    ASSERT_EQ(mkfifo(p.c_str(), 0600), 0);
    std::thread writer([&] {
        int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC); // waits for the reader
        EXPECT_GE(fd, 0);
        EXPECT_TRUE(write_all(fd, "TASK a /bin/true\n"));
        close(fd);
    });
    mapfile mf;
    pmc_error err{};
    int rc = mapfile_load(&mf, p.c_str(), &err);
    writer.join();
    ASSERT_EQ(rc, 0) << err.text;
    EXPECT_EQ(bytes(mf), "TASK a /bin/true\n");
    mapfile_release(&mf);
}

TEST_F(MapfileTest, ProcFileWithSizeZeroIsReadNotEmpty)
{
    struct stat st;
    ASSERT_EQ(stat("/proc/self/status", &st), 0);
    ASSERT_TRUE(S_ISREG(st.st_mode));
    ASSERT_EQ(st.st_size, 0) << "the case this test is about";
    mapfile mf;
    pmc_error err{};
    ASSERT_EQ(mapfile_load(&mf, "/proc/self/status", &err), 0) << err.text;
    EXPECT_FALSE(mf.mapped);
    EXPECT_EQ(bytes(mf).rfind("Name:", 0), 0u) << bytes(mf).substr(0, 80);
    mapfile_release(&mf);
}

TEST_F(MapfileTest, MissingFileFailsWithErrnoAndPath)
{
    std::string p = path("nope");
    mapfile mf;
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(mapfile_load(&mf, p.c_str(), &err), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(std::string(err.text), p + ": No such file or directory");
    EXPECT_TRUE(zeroed(mf));
    mapfile_release(&mf); // a no-op on a failed load
    EXPECT_TRUE(zeroed(mf));
}

TEST_F(MapfileTest, DirectoryFailsWithEisdir)
{
    mapfile mf;
    pmc_error err{};
    EXPECT_EQ(mapfile_load(&mf, dir_.c_str(), &err), -1);
    EXPECT_EQ(errno, EISDIR);
    EXPECT_EQ(std::string(err.text), dir_ + ": Is a directory");
    EXPECT_TRUE(zeroed(mf));
}

TEST_F(MapfileTest, PathUnderAFileFailsWithEnotdir)
{
    std::string p = file("f", "x") + "/below";
    mapfile mf;
    EXPECT_EQ(mapfile_load(&mf, p.c_str(), nullptr), -1); // err may be NULL
    EXPECT_EQ(errno, ENOTDIR);
}

TEST_F(MapfileTest, ReleaseKeepsErrno)
{
    std::string p = file("a", "abc");
    mapfile mf;
    ASSERT_EQ(mapfile_load(&mf, p.c_str(), nullptr), 0);
    errno = EINVAL;
    mapfile_release(&mf);
    EXPECT_EQ(errno, EINVAL);
}

TEST_F(MapfileTest, LoadClosesItsDescriptor)
{
    std::string p = file("a", "abc");
    auto before = open_fds();
    mapfile mf;
    ASSERT_EQ(mapfile_load(&mf, p.c_str(), nullptr), 0);
    EXPECT_EQ(open_fds(), before);
    mapfile_release(&mf);
}

// In a child, close the standard descriptors of mask (bit k: descriptor
// k), call fdio_standard_fds() and exit 0 when it returned mask, each
// descriptor it opened is /dev/null open for the right direction, the
// others are what they were, and the next open() gets 3 or more; else
// exit with the number of the check that failed.
int standard_fds_child(int mask)
{
    struct stat null_st;
    if (stat("/dev/null", &null_st) < 0)
        return 10;
    struct stat before[3];
    for (int fd = 0; fd < 3; fd++)
        if (fstat(fd, &before[fd]) < 0 && !(mask & (1 << fd)))
            return 11;
    for (int fd = 0; fd < 3; fd++)
        if (mask & (1 << fd))
            close(fd);
    if (fdio_standard_fds() != mask)
        return 1;
    for (int fd = 0; fd < 3; fd++) {
        struct stat st;
        if (fstat(fd, &st) < 0)
            return 2;
        bool is_null = S_ISCHR(st.st_mode) && st.st_rdev == null_st.st_rdev;
        if ((mask & (1 << fd)) && !is_null)
            return 3;
        if (!(mask & (1 << fd)) && !fdio_same_file(&st, &before[fd]))
            return 4;
        int acc = fcntl(fd, F_GETFL) & O_ACCMODE;
        if ((mask & (1 << fd)) && acc != (fd == 0 ? O_RDONLY : O_WRONLY))
            return 5;
    }
    int next = open("/dev/null", O_RDONLY);
    if (next < 3)
        return 6;
    return fdio_standard_fds() == 0 ? 0 : 7; /* nothing left to open */
}

TEST(FdioStandardFds, OpensDevNullOnEachClosedOne)
{
    for (int mask = 0; mask < 8; mask++) {
        fflush(nullptr);
        pid_t pid = fork();
        ASSERT_GE(pid, 0);
        if (pid == 0)
            _exit(standard_fds_child(mask));
        int status = 0;
        ASSERT_EQ(waitpid(pid, &status, 0), pid);
        ASSERT_TRUE(WIFEXITED(status));
        EXPECT_EQ(WEXITSTATUS(status), 0) << "closed mask " << mask;
    }
}

TEST_F(MapfileTest, WriteAllWritesEverythingAndReportsErrno)
{
    std::string p = path("w");
    int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
    ASSERT_GE(fd, 0);
    std::string text = random_bytes(200000, 5);
    EXPECT_EQ(fdio_write_all(fd, text.data(), text.size()), 0);
    close(fd);
    EXPECT_EQ(read_file(p), text);
    errno = 0;
    EXPECT_EQ(fdio_write_all(fd, "x", 1), EBADF); // closed descriptor
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(fdio_write_all(-1, "", 0), 0) << "nothing to write is no error";
}

TEST_F(MapfileTest, PwriteAllWritesAtTheOffsetAndAdvancesIt)
{
    std::string p = file("pw", "0123456789");
    int fd = open(p.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    off_t off = 4;
    EXPECT_EQ(fdio_pwrite_all(fd, "ab", 2, &off), 0);
    EXPECT_EQ(off, 6);
    EXPECT_EQ(fdio_pwrite_all(fd, "XYZ", 3, &off), 0);
    EXPECT_EQ(off, 9);
    EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0) << "the file position is not moved";
    close(fd);
    EXPECT_EQ(read_file(p), "0123abXYZ9");
    errno = 0;
    EXPECT_EQ(fdio_pwrite_all(fd, "x", 1, &off), EBADF);
    EXPECT_EQ(errno, EBADF);
    EXPECT_EQ(off, 9);
}

TEST_F(MapfileTest, StillAtTellsDeletedAndReplacedFiles)
{
    std::string p = file("out", "kept");
    int fd = open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_TRUE(fdio_still_at(fd, p.c_str()));
    std::string other = path("other");
    ASSERT_EQ(link(p.c_str(), other.c_str()), 0);
    EXPECT_TRUE(fdio_still_at(fd, p.c_str())) << "a second name changes nothing";
    EXPECT_TRUE(fdio_still_at(fd, other.c_str())) << "and at its other name";

    ASSERT_EQ(unlink(p.c_str()), 0); // deleted at path, still linked as other
    errno = 0;
    EXPECT_FALSE(fdio_still_at(fd, p.c_str()));
    EXPECT_EQ(errno, ENOENT);
    EXPECT_TRUE(fdio_still_at(fd, other.c_str())) << "renamed away: found at its new name";

    file("out", "new"); // a new file made at the path
    errno = 0;
    EXPECT_FALSE(fdio_still_at(fd, p.c_str()));
    EXPECT_EQ(errno, EEXIST);

    ASSERT_EQ(rename(p.c_str(), other.c_str()), 0); // another file renamed over ours
    errno = 0;
    EXPECT_FALSE(fdio_still_at(fd, other.c_str())) << "unlinked: st_nlink is 0";
    EXPECT_EQ(errno, EEXIST);
    struct stat st;
    ASSERT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(st.st_nlink, 0u);
    ASSERT_EQ(unlink(other.c_str()), 0);
    errno = 0;
    EXPECT_FALSE(fdio_still_at(fd, other.c_str()));
    EXPECT_EQ(errno, ENOENT);
    close(fd);

    errno = 0;
    EXPECT_FALSE(fdio_still_at(fd, other.c_str())) << "a closed descriptor";
    EXPECT_EQ(errno, EBADF);
}

TEST_F(MapfileTest, ReaderGoneOnlyForAPipeWithoutReader)
{
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    EXPECT_FALSE(fdio_reader_gone(p[1])) << "the reader is there";
    ASSERT_EQ(write(p[1], "x", 1), 1);
    EXPECT_FALSE(fdio_reader_gone(p[1])) << "unread data is no error";
    close(p[0]);
    EXPECT_TRUE(fdio_reader_gone(p[1]));
    close(p[1]);
    std::string f = file("plain", "");
    int fd = open(f.c_str(), O_WRONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    EXPECT_FALSE(fdio_reader_gone(fd));
    close(fd);
}

} // namespace

TEST(FdioDirOf, NamesTheDirectoryToSync)
{
    char dir[16];
    fdio_dir_of("wf.rescue", dir, sizeof dir);
    EXPECT_STREQ(dir, ".");
    fdio_dir_of("/wf.rescue", dir, sizeof dir);
    EXPECT_STREQ(dir, "/");
    fdio_dir_of("runs/a/wf.rescue", dir, sizeof dir);
    EXPECT_STREQ(dir, "runs/a");
    fdio_dir_of("a-very-long-directory/x", dir, sizeof dir);
    EXPECT_STREQ(dir, "a-very-long-dir"); // truncated to fit, NUL-terminated
    EXPECT_EQ(fdio_fsync_dir("."), 0);
    EXPECT_EQ(fdio_fsync_dir("/nonexistent-pmc-dir"), -1);
    EXPECT_EQ(errno, ENOENT);
}
