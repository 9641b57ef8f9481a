// test_fdcache.cc - unit tests of io/fdcache.h (PMC manual "I/O Forwarding",
// --maxfds; COMPAT.md "Other files", I/O forwarding bullet).
//
// Appending: existing content is never truncated; blocks (1 byte to 4 MiB,
// random bytes) land whole and in order, interleaved over several files, and
// through two spellings of one path; an empty block creates the file.
// Bound and LRU: maxfds 1 with 50 destinations written round-robin keeps at
// most one descriptor open (counted in /proc/self/fd) and loses nothing; the
// least recently written file is the one closed; 800 destinations through a
// 500-file cache (table growth, entry recycling).  Counters: hits,
// misses, hit rate (1.0 before any write).  Directories: nested parents are
// created.  Errors, each "PATH: <strerror>" with errno, the cache still
// usable afterwards: a directory as destination, a path under a regular
// file, a parent that cannot be created, a failing write (/dev/full), a failed block whose cut
// fails too (ftruncate(2) replaced in this binary).
// Limits: maxfds against RLIMIT_NOFILE (the soft limit lowered with
// setrlimit and restored), PMC's automatic rule, and running out of
// descriptors below an explicit maxfds.
//
// Each test gets its own directory under $TMPDIR (or /tmp).
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "io/fdcache.h"
#include "testutil.h"

namespace fs = std::filesystem;

// ftruncate(2) for this test binary (it takes the place of libc's for the
// cache's code too): fails with ftruncate_errno when that is set.
static int ftruncate_errno = 0;

extern "C" int ftruncate(int fd, off_t length)
{
    if (ftruncate_errno) {
        errno = ftruncate_errno;
        return -1;
    }
    return static_cast<int>(syscall(SYS_ftruncate, fd, length));
}

namespace
{

using namespace testutil;

// The targets of this process's open descriptors, without the one that
// lists them.
std::multiset<std::string> open_files()
{
    std::multiset<std::string> out;
    for (int fd : open_fds()) {
        char buf[4096];
        std::string link = "/proc/self/fd/" + std::to_string(fd);
        ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
        if (n >= 0)
            out.insert(std::string(buf, static_cast<size_t>(n)));
    }
    return out;
}

size_t count_open_fds()
{
    return open_fds().size();
}

int highest_open_fd()
{
    std::vector<int> fds = open_fds();
    return fds.empty() ? 1024 : fds.back();
}

// Set the RLIMIT_NOFILE soft limit for one scope.
class SoftNofile
{
  public:
    explicit SoftNofile(rlim_t soft)
    {
        EXPECT_EQ(getrlimit(RLIMIT_NOFILE, &saved_), 0);
        struct rlimit rl = saved_;
        rl.rlim_cur = soft;
        ok_ = setrlimit(RLIMIT_NOFILE, &rl) == 0;
        EXPECT_TRUE(ok_) << "setrlimit(" << soft << "): " << strerror(errno);
    }
    ~SoftNofile()
    {
        EXPECT_EQ(setrlimit(RLIMIT_NOFILE, &saved_), 0) << strerror(errno);
    }
    bool ok() const
    {
        return ok_;
    }

  private:
    struct rlimit saved_ {
    };
    bool ok_ = false;
};

using CachePtr = std::unique_ptr<fdcache, decltype(&fdcache_destroy)>;

CachePtr make_cache(uint32_t maxfds)
{
    pmc_error err{};
    CachePtr c(fdcache_create(maxfds, &err), fdcache_destroy);
    EXPECT_NE(c, nullptr) << err.text;
    return c;
}

class FdcacheTest : public TempDirTest
{
  protected:
    FdcacheTest() : TempDirTest("pmc-fdcache-test") {}
    // Write and expect success.
    void put(fdcache *c, const std::string &p, const std::string &data)
    {
        pmc_error err{};
        ASSERT_EQ(fdcache_write(c, p.c_str(), data.data(), data.size(), &err), 0) << err.text;
    }
};

// ---- appending ---------------------------------------------------------------

TEST_F(FdcacheTest, AppendsNeverTruncate)
{
    std::string p = path("out.txt");
    write_file(p, "old line\n");
    {
        auto c = make_cache(4);
        put(c.get(), p, "first ");
        put(c.get(), p, "second\n");
    }
    EXPECT_EQ(read_file(p), "old line\nfirst second\n");
    {
        auto c = make_cache(4); // a new run appends again
        put(c.get(), p, "third\n");
    }
    EXPECT_EQ(read_file(p), "old line\nfirst second\nthird\n");
}

// A FIFO with no reader fails at once with a clear error (its open would
// block the master for ever, and the stop signals with it); with a reader,
// a block larger than the pipe holds arrives whole: the descriptor blocks
// as a file's does (O_NONBLOCK only for the open).
TEST_F(FdcacheTest, FifoWithoutAReaderFailsAndWithOneGetsEveryByte)
{
    std::string p = path("fifo");
    ASSERT_EQ(mkfifo(p.c_str(), 0644), 0) << strerror(errno);
    auto c = make_cache(4);
    pmc_error err{};
    EXPECT_EQ(fdcache_write(c.get(), p.c_str(), "x", 1, &err), -1);
    EXPECT_EQ(std::string(err.text), p + ": a FIFO with no reader");
    std::string got;
    std::thread reader([&] { got = read_file(p); });
    std::string block(1 << 20, 'f'); // 16 times a pipe's 64 KiB
    pmc_error err2{};
    int rc = -1;
    for (int k = 0; k < 20000 && rc < 0; k++, usleep(1000)) // until the reader opened it
        rc = fdcache_write(c.get(), p.c_str(), block.data(), block.size(), &err2);
    EXPECT_EQ(rc, 0) << err2.text;
    if (rc != 0) // the reader waits in its open(): let it go
        close(open(p.c_str(), O_RDWR | O_CLOEXEC));
    ASSERT_EQ(fdcache_close_all(c.get(), &err2), 0) << err2.text;
    reader.join();
    EXPECT_EQ(got.size(), block.size());
}

// Write a 10,000-byte block to p under a file size limit of 4096 bytes
// (RLIMIT_FSIZE, SIGXFSZ ignored: the write fails with EFBIG part way);
// fdcache_write()'s result.
int write_past_size_limit(struct fdcache *c, const std::string &p, pmc_error *err)
{
    struct rlimit saved {
    };
    if (getrlimit(RLIMIT_FSIZE, &saved) != 0)
        return -2;
    struct rlimit small = saved;
    small.rlim_cur = 4096;
    auto old = signal(SIGXFSZ, SIG_IGN);
    if (setrlimit(RLIMIT_FSIZE, &small) != 0)
        return -2;
    std::string block(10000, 'b');
    int rc = fdcache_write(c, p.c_str(), block.data(), block.size(), err);
    setrlimit(RLIMIT_FSIZE, &saved);
    signal(SIGXFSZ, old);
    return rc;
}

// A block that cannot be written whole (here the file size limit,
// RLIMIT_FSIZE, cuts it) leaves nothing of itself: the file is cut back to
// its size before the block, and fdcache_last_start() of the block before
// it undoes that one too (fdcache_truncate()).
TEST_F(FdcacheTest, FailedBlockLeavesNothingAndABlockCanBeUndone)
{
    std::string p = path("out.txt");
    auto c = make_cache(4);
    put(c.get(), p, "before\n");
    put(c.get(), p, "undone\n");
    EXPECT_EQ(fdcache_last_start(c.get()), 7);
    pmc_error err{};
    EXPECT_EQ(write_past_size_limit(c.get(), p, &err), -1);
    EXPECT_EQ(std::string(err.text), p + ": File too large");
    EXPECT_EQ(read_file(p), "before\nundone\n") << "part of the failed block stayed";
    ASSERT_EQ(fdcache_truncate(c.get(), p.c_str(), 7, &err), 0) << err.text;
    put(c.get(), p, "after\n");
    EXPECT_EQ(read_file(p), "before\nafter\n");
}

// When the cut of a failed block fails too, the error says so: the file
// keeps part of the block, and the caller must not think it clean.
TEST_F(FdcacheTest, FailedBlockWhoseCutFailsSaysSo)
{
    std::string p = path("out.txt");
    auto c = make_cache(4);
    put(c.get(), p, "before\n");
    pmc_error err{};
    ftruncate_errno = EIO;
    int rc = write_past_size_limit(c.get(), p, &err);
    ftruncate_errno = 0;
    EXPECT_EQ(rc, -1);
    EXPECT_EQ(errno, EFBIG) << "errno is the write's";
    EXPECT_EQ(std::string(err.text), p + ": File too large (and the part of the block written "
                                         "could not be cut off: Input/output error)");
    EXPECT_EQ(read_file(p).size(), 4096u) << "the part the limit let through stays";
}

TEST_F(FdcacheTest, NewFileIsMode0644)
{
    std::string p = path("new.txt");
    mode_t old = umask(022);
    auto c = make_cache(4);
    put(c.get(), p, "x");
    umask(old);
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
}

// Random blocks of 1 byte to 4 MiB to three files, interleaved, with a
// small cache so files are closed and reopened between blocks.
TEST_F(FdcacheTest, BlocksAreWholeAndInOrder)
{
    auto c = make_cache(2);
    std::vector<std::string> paths = {path("a"), path("b"), path("c")};
    std::map<std::string, std::string> want;
    std::mt19937 rng(42);
    std::vector<size_t> sizes = {1, 7, 4096, 65537, 1 << 20, 4 << 20, 3, 100000};
    for (int i = 0; i < 60; i++) {
        const std::string &p = paths[rng() % paths.size()];
        std::string block = random_bytes(sizes[rng() % sizes.size()], static_cast<unsigned>(i));
        put(c.get(), p, block);
        want[p] += block;
    }
    ASSERT_EQ(fdcache_close_all(c.get(), nullptr), 0);
    for (const auto &p : paths)
        EXPECT_TRUE(read_file(p) == want[p])
            << p << ": " << read_file(p).size() << " bytes, want " << want[p].size();
}

// "dir/x" and "dir/./x" are two cache entries but one file; O_APPEND keeps
// every block at the end, so the order is still the write order.
TEST_F(FdcacheTest, TwoSpellingsOfOnePathStillAppendInOrder)
{
    auto c = make_cache(8);
    std::string p1 = path("x"), p2 = dir_ + "/./x";
    std::string want;
    for (int i = 0; i < 10; i++) {
        std::string block = "block " + std::to_string(i) + "\n";
        put(c.get(), i % 2 ? p1 : p2, block);
        want += block;
    }
    EXPECT_EQ(fdcache_open_count(c.get()), 2u);
    EXPECT_EQ(read_file(p1), want);
}

TEST_F(FdcacheTest, EmptyBlockCreatesTheFile)
{
    auto c = make_cache(4);
    std::string p = path("empty");
    pmc_error err{};
    EXPECT_EQ(fdcache_write(c.get(), p.c_str(), "", 0, &err), 0) << err.text;
    EXPECT_TRUE(fs::exists(p));
    EXPECT_EQ(fs::file_size(p), 0u);
}

// ---- the bound and the LRU order ---------------------------------------------

TEST_F(FdcacheTest, MaxfdsOneWithFiftyDestinationsRoundRobin)
{
    size_t before = count_open_fds();
    auto c = make_cache(1);
    EXPECT_EQ(fdcache_maxfds(c.get()), 1u);
    const int files = 50, rounds = 20;
    size_t most = 0;
    for (int r = 0; r < rounds; r++) {
        for (int f = 0; f < files; f++) {
            std::string line = "file " + std::to_string(f) + " round " + std::to_string(r) + "\n";
            put(c.get(), path("dest." + std::to_string(f)), line);
            most = std::max(most, count_open_fds());
            ASSERT_LE(fdcache_open_count(c.get()), 1u);
        }
    }
    EXPECT_EQ(most, before + 1) << "never more than one destination open";
    EXPECT_EQ(fdcache_misses(c.get()), static_cast<uint64_t>(files * rounds));
    EXPECT_EQ(fdcache_hits(c.get()), 0u);
    EXPECT_DOUBLE_EQ(fdcache_hitrate(c.get()), 0.0);
    c.reset();
    EXPECT_EQ(count_open_fds(), before) << "destroy closes everything";
    for (int f = 0; f < files; f++) {
        std::string want;
        for (int r = 0; r < rounds; r++)
            want += "file " + std::to_string(f) + " round " + std::to_string(r) + "\n";
        EXPECT_EQ(read_file(path("dest." + std::to_string(f))), want) << f;
    }
}

TEST_F(FdcacheTest, LeastRecentlyUsedClosesFirst)
{
    auto c = make_cache(3);
    std::string a = path("A"), b = path("B"), cc = path("C"), d = path("D");
    auto is_open = [](const std::string &p) { return open_files().count(p) == 1; };
    put(c.get(), a, "1");  // MRU first: A
    put(c.get(), b, "1");  // B A
    put(c.get(), cc, "1"); // C B A
    put(c.get(), a, "2");  // A C B (a hit moves A to the front)
    put(c.get(), d, "1");  // D A C, B closed
    EXPECT_TRUE(is_open(a));
    EXPECT_FALSE(is_open(b));
    EXPECT_TRUE(is_open(cc));
    EXPECT_TRUE(is_open(d));
    put(c.get(), b, "2"); // B D A, C closed
    EXPECT_TRUE(is_open(a));
    EXPECT_TRUE(is_open(b));
    EXPECT_FALSE(is_open(cc));
    EXPECT_TRUE(is_open(d));
    put(c.get(), d, "2");  // D B A (hit)
    put(c.get(), cc, "2"); // C D B, A closed
    EXPECT_FALSE(is_open(a));
    EXPECT_TRUE(is_open(b) && is_open(cc) && is_open(d));
    EXPECT_EQ(fdcache_hits(c.get()), 2u);
    EXPECT_EQ(fdcache_misses(c.get()), 6u);
    EXPECT_EQ(fdcache_open_count(c.get()), 3u);
    EXPECT_EQ(read_file(a), "12");
    EXPECT_EQ(read_file(b), "12");
    EXPECT_EQ(read_file(cc), "12");
    EXPECT_EQ(read_file(d), "12");
}

// Many destinations through a big cache: the hash table grows, evicted
// entries are recycled, nothing is lost or misdirected.
TEST_F(FdcacheTest, ManyDestinations)
{
    size_t before = count_open_fds();
    auto c = make_cache(500); // fits a default soft limit of 1024
    const int files = 800;
    for (int r = 0; r < 2; r++)
        for (int f = 0; f < files; f++)
            put(c.get(), path("many/d" + std::to_string(f % 7) + "/f" + std::to_string(f)),
                std::to_string(f) + ":" + std::to_string(r) + "\n");
    EXPECT_EQ(fdcache_open_count(c.get()), 500u);
    EXPECT_EQ(count_open_fds(), before + 500);
    // The last 500 files of round 1 are open: writing them again hits.
    uint64_t hits = fdcache_hits(c.get());
    for (int f = files - 500; f < files; f++)
        put(c.get(), path("many/d" + std::to_string(f % 7) + "/f" + std::to_string(f)), "");
    EXPECT_EQ(fdcache_hits(c.get()), hits + 500);
    EXPECT_EQ(fdcache_close_all(c.get(), nullptr), 0);
    EXPECT_EQ(count_open_fds(), before);
    for (int f = 0; f < files; f++) {
        std::string s = std::to_string(f);
        EXPECT_EQ(read_file(path("many/d" + std::to_string(f % 7) + "/f" + s)),
                  s + ":0\n" + s + ":1\n");
    }
}

TEST_F(FdcacheTest, HitRate)
{
    auto c = make_cache(4);
    EXPECT_DOUBLE_EQ(fdcache_hitrate(c.get()), 1.0) << "PMC's value before any write";
    for (int i = 0; i < 4; i++)
        put(c.get(), path("same"), "x");
    EXPECT_EQ(fdcache_hits(c.get()), 3u);
    EXPECT_EQ(fdcache_misses(c.get()), 1u);
    EXPECT_DOUBLE_EQ(fdcache_hitrate(c.get()), 0.75);
}

TEST_F(FdcacheTest, CloseAllKeepsTheCacheUsable)
{
    size_t before = count_open_fds();
    auto c = make_cache(8);
    put(c.get(), path("p"), "a");
    put(c.get(), path("q"), "a");
    EXPECT_EQ(count_open_fds(), before + 2);
    pmc_error err{};
    EXPECT_EQ(fdcache_close_all(c.get(), &err), 0) << err.text;
    EXPECT_EQ(count_open_fds(), before);
    EXPECT_EQ(fdcache_open_count(c.get()), 0u);
    put(c.get(), path("p"), "b");
    EXPECT_EQ(fdcache_misses(c.get()), 3u) << "counters survive close_all";
    EXPECT_EQ(read_file(path("p")), "ab");
}

TEST_F(FdcacheTest, DescriptorsAreCloseOnExec)
{
    auto c = make_cache(2);
    std::string p = path("cloexec");
    put(c.get(), p, "x");
    bool found = false;
    for (int fd = 0; fd <= highest_open_fd(); fd++) {
        char buf[4096];
        std::string link = "/proc/self/fd/" + std::to_string(fd);
        ssize_t n = readlink(link.c_str(), buf, sizeof buf - 1);
        if (n > 0 && std::string(buf, static_cast<size_t>(n)) == p) {
            found = true;
            EXPECT_TRUE(fcntl(fd, F_GETFD) & FD_CLOEXEC);
            EXPECT_TRUE(fcntl(fd, F_GETFL) & O_APPEND);
        }
    }
    EXPECT_TRUE(found);
}

// ---- directories ---------------------------------------------------------------

TEST_F(FdcacheTest, CreatesNestedDirectories)
{
    auto c = make_cache(4);
    std::string p = path("a/b/c/d/out.dat");
    put(c.get(), p, "deep\n");
    put(c.get(), path("a/b/other"), "shallow\n"); // parents exist now
    put(c.get(), path("a//b/x/y"), "double slash\n");
    EXPECT_EQ(read_file(p), "deep\n");
    EXPECT_EQ(read_file(path("a/b/other")), "shallow\n");
    EXPECT_EQ(read_file(path("a/b/x/y")), "double slash\n");
    EXPECT_TRUE(fs::is_directory(path("a/b/c/d")));
}

TEST_F(FdcacheTest, RelativePathsWork)
{
    char cwd[4096];
    ASSERT_NE(getcwd(cwd, sizeof cwd), nullptr);
    ASSERT_EQ(chdir(dir_.c_str()), 0);
    {
        auto c = make_cache(4);
        pmc_error err{};
        EXPECT_EQ(fdcache_write(c.get(), "rel.txt", "r", 1, &err), 0) << err.text;
        EXPECT_EQ(fdcache_write(c.get(), "sub/dir/rel.txt", "s", 1, &err), 0) << err.text;
    }
    ASSERT_EQ(chdir(cwd), 0);
    EXPECT_EQ(read_file(path("rel.txt")), "r");
    EXPECT_EQ(read_file(path("sub/dir/rel.txt")), "s");
}

// ---- errors ----------------------------------------------------------------------

TEST_F(FdcacheTest, DirectoryAsDestinationIsAnError)
{
    auto c = make_cache(4);
    std::string d = path("adir");
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(fdcache_write(c.get(), d.c_str(), "x", 1, &err), -1);
    EXPECT_EQ(errno, EISDIR);
    EXPECT_EQ(std::string(err.text), d + ": Is a directory");
    EXPECT_EQ(fdcache_open_count(c.get()), 0u);
    put(c.get(), path("fine"), "ok"); // the cache still works
    EXPECT_EQ(read_file(path("fine")), "ok");
}

TEST_F(FdcacheTest, PathUnderARegularFileIsAnError)
{
    auto c = make_cache(4);
    std::string f = path("regular");
    write_file(f, "keep");
    pmc_error err{};
    std::string p = f + "/x";
    errno = 0;
    EXPECT_EQ(fdcache_write(c.get(), p.c_str(), "x", 1, &err), -1);
    EXPECT_EQ(errno, ENOTDIR);
    EXPECT_EQ(std::string(err.text), p + ": Not a directory");
    std::string q = f + "/x/y/z";
    EXPECT_EQ(fdcache_write(c.get(), q.c_str(), "x", 1, &err), -1);
    EXPECT_EQ(std::string(err.text), q + ": Not a directory");
    EXPECT_EQ(read_file(f), "keep");
}

// A parent that cannot be created (without relying on permissions, so it
// works as root): "link" is a dangling symlink into a missing directory, so
// open says ENOENT, mkdir("link") says EEXIST and mkdir("link/deeper") ENOENT.
TEST_F(FdcacheTest, ParentThatCannotBeCreatedIsAnError)
{
    auto c = make_cache(4);
    std::string link = path("link");
    ASSERT_EQ(symlink(path("missing/target").c_str(), link.c_str()), 0);
    std::string p = link + "/deeper/out";
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(fdcache_write(c.get(), p.c_str(), "x", 1, &err), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_EQ(std::string(err.text),
              p + ": cannot create directory " + link + "/deeper: No such file or directory");
    EXPECT_FALSE(fs::exists(path("missing")));
    EXPECT_EQ(fdcache_open_count(c.get()), 0u);
}

TEST_F(FdcacheTest, WriteErrorDropsTheFile)
{
    if (access("/dev/full", W_OK) != 0)
        GTEST_SKIP() << "no /dev/full";
    auto c = make_cache(4);
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(fdcache_write(c.get(), "/dev/full", "data", 4, &err), -1);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(std::string(err.text), "/dev/full: No space left on device");
    EXPECT_EQ(fdcache_open_count(c.get()), 0u) << "closed after a failed write";
    EXPECT_EQ(fdcache_write(c.get(), "/dev/full", "", 0, &err), 0) << "nothing to write";
    EXPECT_EQ(fdcache_open_count(c.get()), 1u);
}

// ---- limits ----------------------------------------------------------------------

TEST(FdcacheLimits, AutomaticRule)
{
    EXPECT_EQ(fdcache__auto_maxfds(UINT64_MAX), 4096u) << "no limit";
    EXPECT_EQ(fdcache__auto_maxfds(0), 1u);
    EXPECT_EQ(fdcache__auto_maxfds(64), 1u);
    EXPECT_EQ(fdcache__auto_maxfds(65), 1u);
    EXPECT_EQ(fdcache__auto_maxfds(66), 2u);
    EXPECT_EQ(fdcache__auto_maxfds(1024), 960u);
    EXPECT_EQ(fdcache__auto_maxfds(4160), 4096u);
    EXPECT_EQ(fdcache__auto_maxfds(4161), 4096u);
    EXPECT_EQ(fdcache__auto_maxfds(1u << 20), 4096u);
}

TEST(FdcacheLimits, MaxfdsAgainstTheSoftLimit)
{
    struct rlimit rl;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 5000)
        GTEST_SKIP() << "hard limit " << rl.rlim_max << " too low for this test";
    {
        SoftNofile lim(100);
        ASSERT_TRUE(lim.ok());
        pmc_error err{};
        errno = 0;
        EXPECT_EQ(fdcache_create(101, &err), nullptr);
        EXPECT_EQ(errno, EINVAL);
        EXPECT_STREQ(err.text, "--maxfds 101 is more than the open files limit 100");
        EXPECT_EQ(fdcache_create(4000000000u, nullptr), nullptr);
        CachePtr c(fdcache_create(100, &err), fdcache_destroy);
        ASSERT_NE(c, nullptr) << err.text;
        EXPECT_EQ(fdcache_maxfds(c.get()), 100u);
        CachePtr one(fdcache_create(1, &err), fdcache_destroy);
        ASSERT_NE(one, nullptr);
        EXPECT_EQ(fdcache_maxfds(one.get()), 1u);
        CachePtr aut(fdcache_create(0, &err), fdcache_destroy);
        ASSERT_NE(aut, nullptr);
        EXPECT_EQ(fdcache_maxfds(aut.get()), 36u) << "100 - 64 reserved";
    }
    {
        SoftNofile lim(50);
        ASSERT_TRUE(lim.ok());
        CachePtr aut(fdcache_create(0, nullptr), fdcache_destroy);
        ASSERT_NE(aut, nullptr);
        EXPECT_EQ(fdcache_maxfds(aut.get()), 1u) << "at least 1";
    }
    {
        SoftNofile lim(5000);
        ASSERT_TRUE(lim.ok());
        CachePtr aut(fdcache_create(0, nullptr), fdcache_destroy);
        ASSERT_NE(aut, nullptr);
        EXPECT_EQ(fdcache_maxfds(aut.get()), 4096u) << "at most 4096";
        CachePtr big(fdcache_create(5000, nullptr), fdcache_destroy);
        EXPECT_NE(big, nullptr) << "explicit: up to the limit";
    }
    struct rlimit now;
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &now), 0);
    EXPECT_EQ(now.rlim_cur, rl.rlim_cur) << "limit restored";
}

// An explicit maxfds equal to the limit cannot really be reached (the
// process has other descriptors): running out (EMFILE) closes cached files
// instead of failing the write.
TEST_F(FdcacheTest, RunningOutOfDescriptorsEvictsInsteadOfFailing)
{
    // Free descriptor numbers below the soft limit: the holes below the
    // highest open fd, plus 3.
    rlim_t soft = static_cast<rlim_t>(highest_open_fd() + 1 + 3);
    size_t room = soft - count_open_fds();
    int files = static_cast<int>(room) + 5;
    std::vector<std::string> want(static_cast<size_t>(files));
    {
        SoftNofile lim(soft);
        ASSERT_TRUE(lim.ok());
        auto c = make_cache(static_cast<uint32_t>(soft));
        for (int r = 0; r < 3; r++) {
            for (int f = 0; f < files; f++) {
                std::string line = std::to_string(f) + "/" + std::to_string(r) + "\n";
                put(c.get(), path("emfile." + std::to_string(f)), line);
                want[static_cast<size_t>(f)] += line;
            }
        }
        EXPECT_LE(fdcache_open_count(c.get()), room);
        EXPECT_GE(fdcache_open_count(c.get()), 1u);
    }
    for (int f = 0; f < files; f++)
        EXPECT_EQ(read_file(path("emfile." + std::to_string(f))), want[static_cast<size_t>(f)]);
}

TEST(FdcacheLimits, DestroyNullIsANoOp)
{
    fdcache_destroy(nullptr);
}

} // namespace
