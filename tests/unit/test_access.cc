// test_access.cc - the access file of a run that agents join
// (engine/transport/access.h): what is written is read back; the file is
// 0600 whatever the umask and no temporary is left; a live run's file (or
// one that cannot be checked) is refused, a dead master's replaced; every
// malformed file is refused naming the file and line; a file others can
// read is read with a warning; absence is a clear error.
#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <dirent.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/transport/access.h"
#include "io/log.h"
#include "testutil.h"

namespace
{

const char *const KEY_A = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
const char *const KEY_B = "JTKVSB%%)wK0E.X)V>+}o?pNmC{O&4W4b!Ni{Lh6";
const char *const KEY_C = "D:)Q[IlAW!ahhC2ac:9*A}h:p?([4%wOTJ%JR%cs";

std::string this_host()
{
    char h[ACCESS_HOST_MAX] = "";
    gethostname(h, sizeof h - 1);
    return h;
}

access_file sample(pid_t pid = getpid(), const std::string &host = this_host())
{
    access_file a{};
    snprintf(a.master_host, sizeof a.master_host, "%s", host.c_str());
    a.master_pid = pid;
    snprintf(a.endpoint, sizeof a.endpoint, "tcp://node17.example:40123");
    a.heartbeat_s = 0.25;
    a.timeout_s = 3.5;
    snprintf(a.server_public, sizeof a.server_public, "%s", KEY_A);
    snprintf(a.client_public, sizeof a.client_public, "%s", KEY_B);
    snprintf(a.client_secret, sizeof a.client_secret, "%s", KEY_C);
    return a;
}

void put(const std::string &path, const std::string &text, mode_t mode = 0600)
{
    std::ofstream(path) << text;
    ASSERT_EQ(chmod(path.c_str(), mode), 0);
}

std::string slurp(const std::string &path)
{
    std::ifstream f(path);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
}

// A pid that names no process: a child that has exited and been reaped.
pid_t dead_pid()
{
    pid_t pid = fork();
    if (pid == 0)
        _exit(0);
    int status;
    waitpid(pid, &status, 0);
    return pid;
}

// The text of a valid file, with line `replace` (1-based, 0: none) swapped
// for `with` (empty: deleted).
std::string valid_text(int replace = 0, const std::string &with = "")
{
    std::string lines[] = {
        "pmc-hybrid-access 1",
        "master " + this_host() + " 4242",
        "endpoint tcp://127.0.0.1:5555",
        "heartbeat 0.5",
        "timeout 2",
        std::string("server-public ") + KEY_A,
        std::string("client-public ") + KEY_B,
        std::string("client-secret ") + KEY_C,
    };
    std::string out = "# a comment\n";
    for (int i = 0; i < 8; i++) {
        const std::string &l = i + 1 == replace ? with : lines[i];
        if (!l.empty())
            out += l + "\n";
    }
    return out;
}

TEST(AccessKey, ValidOnlyFortyZ85Characters)
{
    EXPECT_TRUE(access_key_valid(KEY_A));
    EXPECT_FALSE(access_key_valid(""));
    EXPECT_FALSE(access_key_valid(std::string(KEY_A).substr(0, 39).c_str()));
    EXPECT_FALSE(access_key_valid((std::string(KEY_A) + "a").c_str()));
    std::string bad = KEY_A;
    bad[7] = '"'; // not in Z85's alphabet
    EXPECT_FALSE(access_key_valid(bad.c_str()));
    bad[7] = ' ';
    EXPECT_FALSE(access_key_valid(bad.c_str()));
}

TEST(Access, WriteThenReadGivesTheSameFieldsMode0600NoTemporary)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    mode_t old = umask(0); // a permissive umask must not make it readable by others
    access_file a = sample();
    pmc_error err;
    int rc = access_write(path.c_str(), &a, &err);
    umask(old);
    ASSERT_EQ(rc, 0) << err.text;
    struct stat st;
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    EXPECT_EQ(d.entries(), 1) << "a temporary file was left beside it";

    access_file b;
    ASSERT_EQ(access_read(path.c_str(), &b, &err), 0) << err.text;
    EXPECT_STREQ(b.master_host, a.master_host);
    EXPECT_EQ(b.master_pid, a.master_pid);
    EXPECT_STREQ(b.endpoint, a.endpoint);
    EXPECT_EQ(b.heartbeat_s, a.heartbeat_s);
    EXPECT_EQ(b.timeout_s, a.timeout_s);
    EXPECT_STREQ(b.server_public, KEY_A);
    EXPECT_STREQ(b.client_public, KEY_B);
    EXPECT_STREQ(b.client_secret, KEY_C);
}

TEST(Access, AbsentFileIsAClearError)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("none.access");
    access_file a;
    pmc_error err;
    errno = 0;
    EXPECT_EQ(access_read(path.c_str(), &a, &err), -1);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_NE(std::string(err.text).find(path + ": No such file or directory"), std::string::npos)
        << err.text;
    EXPECT_NE(std::string(err.text).find("--listen"), std::string::npos) << err.text;
}

TEST(Access, LiveRunsFileIsRefusedAndKept)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    access_file a = sample(); // this process: alive
    pmc_error err;
    ASSERT_EQ(access_write(path.c_str(), &a, &err), 0) << err.text;
    std::string before = slurp(path);
    access_file b = sample();
    snprintf(b.endpoint, sizeof b.endpoint, "tcp://other:1");
    errno = 0;
    EXPECT_EQ(access_write(path.c_str(), &b, &err), -1);
    EXPECT_EQ(errno, EEXIST);
    EXPECT_NE(std::string(err.text).find("live run"), std::string::npos) << err.text;
    EXPECT_EQ(slurp(path), before);
    EXPECT_EQ(d.entries(), 1);
}

TEST(Access, AnotherHostsFileOrAForeignFileIsRefused)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    access_file other = sample(dead_pid(), "not-" + this_host());
    pmc_error err;
    ASSERT_EQ(access_write(path.c_str(), &other, &err), 0) << err.text;
    access_file a = sample();
    errno = 0;
    EXPECT_EQ(access_write(path.c_str(), &a, &err), -1);
    EXPECT_EQ(errno, EEXIST);

    std::string foreign = d.path("notes.txt");
    put(foreign, "my notes\n");
    EXPECT_EQ(access_write(foreign.c_str(), &a, &err), -1);
    EXPECT_EQ(slurp(foreign), "my notes\n");
}

TEST(Access, DeadMastersFileOnThisHostIsReplaced)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    access_file stale = sample(dead_pid());
    pmc_error err;
    ASSERT_EQ(access_write(path.c_str(), &stale, &err), 0) << err.text;
    access_file a = sample();
    ASSERT_EQ(access_write(path.c_str(), &a, &err), 0) << err.text;
    access_file b;
    ASSERT_EQ(access_read(path.c_str(), &b, &err), 0) << err.text;
    EXPECT_EQ(b.master_pid, getpid());
    EXPECT_EQ(d.entries(), 1);
}

TEST(Access, InvalidFieldsAreNotWritten)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    access_file a = sample();
    a.timeout_s = a.heartbeat_s;
    pmc_error err;
    errno = 0;
    EXPECT_EQ(access_write(path.c_str(), &a, &err), -1);
    EXPECT_EQ(errno, EINVAL);
    a = sample();
    a.client_secret[3] = '~';
    EXPECT_EQ(access_write(path.c_str(), &a, &err), -1);
    EXPECT_NE(std::string(err.text).find("client-secret"), std::string::npos) << err.text;
    EXPECT_EQ(d.entries(), 0);
}

TEST(Access, MalformedFilesNameTheFileAndLine)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("bad.access");
    struct Case {
        int line;
        std::string with, expect;
    } cases[] = {
        {1, "pmc-hybrid-access 2", ":2: unsupported access file version"},
        {1, "", ":2: not an access file"},
        {2, "master onlyhost", ":3: master must be"},
        {2, "master h -5", ":3: master must be"},
        {3, "endpoint ipc:///tmp/x", ":4: endpoint must be"},
        {4, "heartbeat soon", ":5: not a positive number"},
        {5, "timeout -1", ":6: not a positive number"},
        {5, "timeout 0.25", ": timeout must be longer than heartbeat"},
        {6, "server-public short", ":7: not a 40-character Z85 key"},
        {7, "client-key " + std::string(KEY_B), ":8: unknown key"},
        {8, "client-secret", ":9: expected \"key value\""},
        {8, "", ": client-secret missing"},
        {8, "heartbeat 0.1", ":9: heartbeat given twice"},
    };
    for (const Case &c : cases) {
        put(path, valid_text(c.line, c.with));
        access_file a;
        pmc_error err;
        errno = 0;
        EXPECT_EQ(access_read(path.c_str(), &a, &err), -1) << c.with;
        EXPECT_EQ(errno, EINVAL) << c.with;
        EXPECT_NE(std::string(err.text).find(path + c.expect), std::string::npos)
            << "line " << c.line << " \"" << c.with << "\" gave: " << err.text;
    }
    put(path, "");
    access_file a;
    pmc_error err;
    EXPECT_EQ(access_read(path.c_str(), &a, &err), -1);
    EXPECT_NE(std::string(err.text).find("(empty file)"), std::string::npos) << err.text;
    put(path, valid_text());
    EXPECT_EQ(access_read(path.c_str(), &a, &err), 0) << err.text;
}

TEST(Access, ReadableByOthersIsReadWithAWarning)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("open.access");
    put(path, valid_text(), 0644);
    std::string logpath = d.path("log");
    int fd = open(logpath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(fd, 0);
    log_set_fd(fd);
    access_file a;
    pmc_error err;
    int rc = access_read(path.c_str(), &a, &err);
    log_set_fd(2);
    close(fd);
    ASSERT_EQ(rc, 0) << err.text;
    std::string log = slurp(logpath);
    EXPECT_NE(log.find(path + ": mode 644 lets other users read"), std::string::npos) << log;
}

TEST(Access, RemoveTakesOnlyItsOwnFile)
{
    testutil::TempDir d("pmc-access");
    std::string path = d.path("run.access");
    access_file a = sample();
    pmc_error err;
    ASSERT_EQ(access_write(path.c_str(), &a, &err), 0) << err.text;
    access_file other = a;
    other.master_pid = a.master_pid + 1;
    EXPECT_EQ(access_remove(path.c_str(), &other), 0);
    EXPECT_EQ(d.entries(), 1);
    EXPECT_EQ(access_remove(path.c_str(), &a), 1);
    EXPECT_EQ(d.entries(), 0);
    EXPECT_EQ(access_remove(path.c_str(), &a), 0);
}

} // namespace
