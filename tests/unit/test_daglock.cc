// test_daglock.cc - unit tests of io/daglock.h's lock of a file a run
// writes (the rescue log, issue 45: two DAGs given one -r both ran).
//
// daglock_acquire_output(): a missing file is created empty and reported
// so; a second acquire (another open file description: another run) is
// refused naming what and the path; closing the holder frees it; a file
// replaced by rename(2) stays locked when its replacement was locked
// first (daglock_hold(), as rescue.c does); a directory and a FIFO are -2
// (no lock, nothing created, no blocking), and so is a path whose
// directory is missing.  daglock_acquire() on the DAG
// still says "PATH is locked by another pmc-hybrid run".
#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/daglock.h"
#include "testutil.h"

namespace
{

class DagLockTest : public testutil::TempDirTest
{
  protected:
    DagLockTest() : TempDirTest("daglock") {}
};

TEST_F(DagLockTest, MissingFileIsCreatedAndLocked)
{
    std::string p = path("r.rescue");
    struct pmc_error err = {};
    bool created = false;
    int fd = daglock_acquire_output(p.c_str(), "the rescue log", &created, &err);
    ASSERT_GE(fd, 0) << err.text;
    EXPECT_TRUE(created);
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 0);
    bool again = true;
    EXPECT_EQ(daglock_acquire_output(p.c_str(), "the rescue log", &again, &err), -1);
    EXPECT_FALSE(again);
    EXPECT_EQ(std::string(err.text),
              "the rescue log " + p + " is locked by another pmc-hybrid run (-n skips the lock)");
    close(fd);
    int fd2 = daglock_acquire_output(p.c_str(), "the rescue log", &again, &err);
    EXPECT_GE(fd2, 0) << "free once the holder closed: " << err.text;
    EXPECT_FALSE(again) << "it existed";
    close(fd2);
}

TEST_F(DagLockTest, ReplacementLockedBeforeTheRenameStaysLocked)
{
    std::string p = file("r.rescue", "DONE a\n"), tmp = path("r.rescue.tmp");
    struct pmc_error err = {};
    bool created;
    int holder = daglock_acquire_output(p.c_str(), "the rescue log", &created, &err);
    ASSERT_GE(holder, 0) << err.text;
    int fresh = open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    ASSERT_GE(fresh, 0);
    ASSERT_EQ(daglock_hold(fresh), 0) << strerror(errno);
    ASSERT_EQ(rename(tmp.c_str(), p.c_str()), 0);
    EXPECT_EQ(daglock_acquire_output(p.c_str(), "the rescue log", &created, &err), -1)
        << "the new file at the path is locked too";
    close(holder);
    EXPECT_EQ(daglock_acquire_output(p.c_str(), "the rescue log", &created, &err), -1)
        << "the writer's lock alone keeps it";
    close(fresh);
    int fd = daglock_acquire_output(p.c_str(), "the rescue log", &created, &err);
    EXPECT_GE(fd, 0) << err.text;
    close(fd);
}

TEST_F(DagLockTest, NotARegularFileIsNoLock)
{
    std::string dir = path("d"), fifo = path("fifo");
    ASSERT_EQ(mkdir(dir.c_str(), 0755), 0);
    ASSERT_EQ(mkfifo(fifo.c_str(), 0644), 0);
    struct pmc_error err = {};
    bool created = true;
    EXPECT_EQ(daglock_acquire_output(dir.c_str(), "the rescue log", &created, &err), -2);
    EXPECT_FALSE(created);
    EXPECT_EQ(daglock_acquire_output(fifo.c_str(), "the rescue log", &created, &err), -2)
        << "and no open that waits for a writer";
    EXPECT_EQ(daglock_acquire_output(path("nodir/r").c_str(), "the rescue log", &created, &err), -2)
        << "a missing directory: the run's own check says why";
    EXPECT_FALSE(created);
}

TEST_F(DagLockTest, DagMessageUnchanged)
{
    std::string p = file("w.dag", "TASK a /bin/true\n");
    struct pmc_error err = {};
    int fd = daglock_acquire(p.c_str(), &err);
    ASSERT_GE(fd, 0) << err.text;
    EXPECT_EQ(daglock_acquire(p.c_str(), &err), -1);
    EXPECT_EQ(std::string(err.text),
              p + " is locked by another pmc-hybrid run (-n skips the lock)");
    close(fd);
}

} // namespace
