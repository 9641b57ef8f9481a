// test_pathset.cc - unit tests of io/pathset.h: the files of a run and
// whether two of them are one file (issue 45, "Never destroy what the user
// points at").
//
// Aliases found, each message naming both labels and both paths: the same
// spelling; ./x and d/../x; an absolute and a relative spelling; a symbolic
// link (to an existing file, to one not created yet, a chain of two, a
// relative target); a hard link; a file not created yet under two
// spellings.  Not aliases: different files, one name in two directories,
// two files of one share tag (-o and -e), while a third file of the same
// name with tag 0 is one; a device named twice (/dev/null).
// pathset_check_name(): accepts a last component the set lacks (even for a
// hard link: the inode check is the caller's), refuses another spelling of
// a file of the set, adds nothing.  Growth: 10,000 files beside one
// another, then one alias of the first found.  pathset_resolve(): the
// root, a trailing slash, a missing directory.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

#include "io/pathset.h"
#include "testutil.h"

namespace
{

class PathSetTest : public testutil::TempDirTest
{
  protected:
    PathSetTest() : TempDirTest("pathset"), set_(pathset_create())
    {
        EXPECT_NE(set_, nullptr);
        EXPECT_NE(getcwd(cwd_, sizeof cwd_), nullptr);
        EXPECT_EQ(chdir(dir_.c_str()), 0) << strerror(errno);
    }
    ~PathSetTest() override
    {
        pathset_destroy(set_);
        EXPECT_EQ(chdir(cwd_), 0);
    }
    int add(const std::string &path, const std::string &label, unsigned share = 0)
    {
        err_.text[0] = '\0';
        return pathset_add(set_, path.c_str(), label.c_str(), share, &err_);
    }
    std::string text() const
    {
        return err_.text;
    }

    struct pathset *set_;
    struct pmc_error err_ = {};
    char cwd_[4096] = "";
};

TEST_F(PathSetTest, SameSpellingIsRefusedNamingBoth)
{
    file("st.json", "{}\n");
    ASSERT_EQ(add("w.dag", "the DAG"), 0) << text();
    ASSERT_EQ(add("st.json", "the rescue log (-r)"), 0) << text();
    EXPECT_EQ(add("st.json", "--status"), -1);
    EXPECT_EQ(text(), "--status st.json and the rescue log (-r) name the same file st.json");
    EXPECT_EQ(pathset_count(set_), 2u);
}

TEST_F(PathSetTest, OtherSpellingsOfOneExistingFile)
{
    file("d/x", "data\n");
    ASSERT_EQ(add("d/x", "-o"), 0);
    for (const char *other : {"./d/x", "d/../d/x", "d//x", "d/./x"}) {
        EXPECT_EQ(add(other, "--status"), -1) << other;
        EXPECT_EQ(text(), std::string("--status ") + other + " and -o name the same file d/x");
    }
    EXPECT_EQ(add(path("d/x"), "--summary-json"), -1) << "absolute spelling";
    EXPECT_EQ(pathset_count(set_), 1u);
}

TEST_F(PathSetTest, FileNotCreatedYetUnderTwoSpellings)
{
    mkdir(path("d").c_str(), 0755);
    ASSERT_EQ(add("d/new.json", "--status"), 0);
    EXPECT_EQ(add("./d/../d/new.json", "--summary-json"), -1);
    EXPECT_EQ(text(),
              "--summary-json ./d/../d/new.json and --status name the same file d/new.json");
    EXPECT_EQ(add(path("d/new.json"), "-e"), -1) << "absolute spelling";
    EXPECT_EQ(add("d/other.json", "-e"), 0) << text();
}

TEST_F(PathSetTest, SymbolicLinks)
{
    file("real", "r\n");
    ASSERT_EQ(symlink("real", path("link").c_str()), 0);
    ASSERT_EQ(symlink("link", path("link2").c_str()), 0);
    ASSERT_EQ(symlink("later", path("dangling").c_str()), 0); // target not created yet
    mkdir(path("sub").c_str(), 0755);
    ASSERT_EQ(symlink("../real", path("sub/up").c_str()), 0); // relative to the link's dir
    ASSERT_EQ(add("real", "the rescue log"), 0);
    EXPECT_EQ(add("link", "--status"), -1);
    EXPECT_EQ(text(), "--status link and the rescue log name the same file real");
    EXPECT_EQ(add("link2", "--status"), -1) << "a chain of two links";
    EXPECT_EQ(add("sub/up", "--status"), -1) << "a relative target";
    ASSERT_EQ(add("dangling", "-o"), 0) << text();
    EXPECT_EQ(add("later", "--summary-json"), -1) << "the target of a dangling link";
    EXPECT_EQ(text(), "--summary-json later and -o name the same file dangling");
}

TEST_F(PathSetTest, HardLink)
{
    file("a", "a\n");
    ASSERT_EQ(link(path("a").c_str(), path("b").c_str()), 0);
    ASSERT_EQ(add("a", "the DAG"), 0);
    EXPECT_EQ(add("b", "-o"), -1);
    EXPECT_EQ(text(), "-o b and the DAG name the same file a");
}

TEST_F(PathSetTest, DifferentFilesAreAccepted)
{
    file("x", "1\n");
    file("d/x", "2\n");
    ASSERT_EQ(add("x", "-o"), 0);
    EXPECT_EQ(add("d/x", "-e"), 0) << "one name in two directories";
    EXPECT_EQ(add("y", "--status"), 0) << "not created yet";
    EXPECT_EQ(add("y.tmp", "the temporary file of --status"), 0);
    EXPECT_EQ(pathset_count(set_), 4u);
    const struct pathset_file *f = pathset_at(set_, 2);
    ASSERT_NE(f, nullptr);
    EXPECT_STREQ(f->path, "y");
    EXPECT_STREQ(f->label, "--status");
    EXPECT_FALSE(f->exists);
    char real[4096];
    ASSERT_NE(realpath(dir_.c_str(), real), nullptr);
    EXPECT_EQ(std::string(f->resolved), std::string(real) + "/y");
    EXPECT_EQ(f->dir_len, strlen(real));
    EXPECT_TRUE(pathset_at(set_, 0)->exists);
    EXPECT_EQ(pathset_at(set_, 4), nullptr);
}

TEST_F(PathSetTest, OneShareTagMayBeOneFile)
{
    ASSERT_EQ(add("log", "-o", 1), 0);
    EXPECT_EQ(add("./log", "-e", 1), 0) << text();
    EXPECT_EQ(add("log", "--status", 0), -1);
    EXPECT_EQ(text(), "--status log and -o name the same file log");
    EXPECT_EQ(add("log", "--summary-json", 2), -1) << "another tag";
}

TEST_F(PathSetTest, DevicesMayBeNamedTwice)
{
    // no content to lose: -o /dev/null, --status /dev/null, a forward there
    ASSERT_EQ(add("/dev/null", "-o"), 0) << text();
    EXPECT_EQ(add("/dev/../dev/null", "--summary-json"), 0) << text();
    EXPECT_EQ(pathset_check_name(set_, "/dev/null", "a forward", &err_), 0);
    EXPECT_TRUE(pathset_at(set_, 0)->special);
}

TEST_F(PathSetTest, CheckNameByLastComponent)
{
    file("hard", "h\n");
    ASSERT_EQ(link(path("hard").c_str(), path("other").c_str()), 0);
    ASSERT_EQ(add("st.json", "--status"), 0);
    ASSERT_EQ(add("hard", "the DAG"), 0);
    EXPECT_EQ(pathset_check_name(set_, "out/x.txt", "a forward", &err_), 0);
    EXPECT_EQ(pathset_check_name(set_, "d/../st.json", "w.dag:3: task a's -f destination", &err_),
              -1);
    EXPECT_STREQ(err_.text,
                 "w.dag:3: task a's -f destination d/../st.json and --status name the same "
                 "file st.json");
    EXPECT_EQ(pathset_check_name(set_, "sub/st.json", "a forward", &err_), 0)
        << "same name, another directory";
    // another last component: left to the inode check of what is opened
    EXPECT_EQ(pathset_check_name(set_, "other", "a forward", &err_), 0);
    EXPECT_EQ(pathset_count(set_), 2u);
}

TEST_F(PathSetTest, CheckNameFollowsALinkSpelledAsAFileOfTheSet)
{
    file("target.json", "t\n");
    mkdir(path("d").c_str(), 0755);
    ASSERT_EQ(symlink("../target.json", path("d/st.json").c_str()), 0);
    ASSERT_EQ(add("target.json", "--status"), 0);
    // last component "st.json" is not the set's: accepted without a look
    EXPECT_EQ(pathset_check_name(set_, "d/st.json", "a forward", &err_), 0);
    ASSERT_EQ(add("d/x", "-o"), 0);
    // "x" is the set's: d/x through its own name is found
    EXPECT_EQ(pathset_check_name(set_, "./d/x", "a forward", &err_), -1);
}

TEST_F(PathSetTest, ManyFilesThenOneAlias)
{
    for (int i = 0; i < 10000; i++)
        ASSERT_EQ(add("f." + std::to_string(i), "rank " + std::to_string(i) + "'s file"), 0)
            << text();
    EXPECT_EQ(pathset_count(set_), 10000u);
    EXPECT_EQ(add("./f.0", "--status"), -1);
    EXPECT_EQ(text(), "--status ./f.0 and rank 0's file name the same file f.0");
    EXPECT_EQ(add("./f.9999", "--status"), -1);
    EXPECT_EQ(add("f.10000", "--status"), 0);
}

TEST(PathSetResolve, RootAndDirectoryNames)
{
    char *out = nullptr;
    size_t dir_len = 0;
    ASSERT_EQ(pathset_resolve("/etc", &out, &dir_len), 0);
    EXPECT_STREQ(out, "/etc");
    EXPECT_EQ(dir_len, 1u);
    free(out);
    ASSERT_EQ(pathset_resolve("/tmp/", &out, &dir_len), 0);
    char real[4096];
    ASSERT_NE(realpath("/tmp", real), nullptr);
    EXPECT_STREQ(out, real) << "a trailing slash names the directory";
    free(out);
    ASSERT_EQ(pathset_resolve("/no-such-dir-pathset/x", &out, &dir_len), 0);
    EXPECT_STREQ(out, "/no-such-dir-pathset/x") << "a missing directory, as written";
    free(out);
}

} // namespace
