// test_hostscript.cc - unit tests of engine/hostscript.h (PMC manual "Host
// Scripts"): the time limit and how a script ends.
//
// The limit: 60 s by default; PMC_HOST_SCRIPT_TIMEOUT (seconds) sets it;
// values that are not a number of seconds > 0 keep 60 s and warn.  A script
// that exits 0 succeeds and reports its process group; one that exits 3
// fails with "Host script failed with status 3"; one that hangs fails, with
// a 0.3 s limit, with "Host script timed out after 0.3 seconds", and
// hostscript_stop() then leaves nothing of its group; a script that cannot
// be executed says so.  No assertion reads a clock: the short limit only
// keeps the test fast.
//
// Each test gets its own directory under $TMPDIR (or /tmp).
#include <gtest/gtest.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "engine/hostscript.h"
#include "io/log.h"
#include "testutil.h"

namespace
{

using namespace testutil;

class HostscriptTest : public TempDirTest
{
  protected:
    HostscriptTest() : TempDirTest("pmc-hostscript") {}
    std::string script(const std::string &body)
    {
        return file("hs.sh", "#!/bin/sh\n" + body, 0755);
    }
    static bool group_alive(pid_t pgid)
    {
        return kill(-pgid, 0) == 0 || errno == EPERM;
    }

  private:
    SavedEnv timeout_env_{HOSTSCRIPT_TIMEOUT_ENV};
};

TEST_F(HostscriptTest, LimitIsSixtySecondsUnlessTheEnvironmentSetsIt)
{
    EXPECT_EQ(hostscript_timeout_s(), 60.0);
    setenv(HOSTSCRIPT_TIMEOUT_ENV, "2.5", 1);
    EXPECT_EQ(hostscript_timeout_s(), 2.5);
    setenv(HOSTSCRIPT_TIMEOUT_ENV, "600", 1);
    EXPECT_EQ(hostscript_timeout_s(), 600.0);
    setenv(HOSTSCRIPT_TIMEOUT_ENV, "", 1);
    EXPECT_EQ(hostscript_timeout_s(), 60.0);
}

TEST_F(HostscriptTest, UnusableLimitsKeepSixtySeconds)
{
    for (const char *v : {"0", "-1", "abc", "5s", "inf", "nan", "1e300"}) {
        setenv(HOSTSCRIPT_TIMEOUT_ENV, v, 1);
        EXPECT_EQ(hostscript_timeout_s(), 60.0) << v;
    }
}

TEST_F(HostscriptTest, ScriptThatExitsZeroSucceeds)
{
    std::string s = script("echo ran > '" + path("ran") + "'\nexit 0\n");
    pid_t pgid = -1;
    pmc_error err{};
    ASSERT_EQ(hostscript_run(s.c_str(), 1, &pgid, nullptr, &err), 0) << err.text;
    EXPECT_GT(pgid, 0);
    EXPECT_EQ(read_file(path("ran")), "ran\n");
    hostscript_stop(pgid, 1);
}

TEST_F(HostscriptTest, ScriptThatExitsThreeFails)
{
    std::string s = script("exit 3\n");
    pid_t pgid = -1;
    pmc_error err{};
    EXPECT_EQ(hostscript_run(s.c_str(), 1, &pgid, nullptr, &err), -1);
    EXPECT_STREQ(err.text, "Worker 1: Host script failed with status 3");
    hostscript_stop(pgid, 1);
}

TEST_F(HostscriptTest, HangingScriptTimesOutAfterTheLimitFromTheEnvironment)
{
    setenv(HOSTSCRIPT_TIMEOUT_ENV, "0.3", 1);
    // the shell dies of SIGALRM; its sleep stays in the group until stop()
    std::string s = script("sleep 600\n");
    pid_t pgid = -1;
    pmc_error err{};
    EXPECT_EQ(hostscript_run(s.c_str(), 1, &pgid, nullptr, &err), -1);
    EXPECT_STREQ(err.text, "Worker 1: Host script timed out after 0.3 seconds");
    ASSERT_GT(pgid, 0);
    hostscript_stop(pgid, 1);
    EXPECT_FALSE(group_alive(pgid)) << "the script's sleep survived hostscript_stop()";
}

// stop() returning true (a signal came) ends the wait well before the
// limit: the script's group gets SIGTERM (then SIGKILL) and is gone.
static int stop_calls;
static bool stop_after_three_calls()
{
    return ++stop_calls >= 3;
}

TEST_F(HostscriptTest, StopEndsTheWaitAndTheScript)
{
    std::string s = script("sleep 600 &\nsleep 600\n");
    pid_t pgid = -1;
    pmc_error err{};
    stop_calls = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    EXPECT_EQ(hostscript_run(s.c_str(), 1, &pgid, stop_after_three_calls, &err), -1);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    EXPECT_STREQ(err.text, "Worker 1: Host script stopped");
    EXPECT_EQ(stop_calls, 3);
    EXPECT_LT(t1.tv_sec - t0.tv_sec, 10) << "waited for more than the stop and the grace";
    ASSERT_GT(pgid, 0);
    for (int k = 0; k < 200 && group_alive(pgid); k++)
        usleep(10000); // the killed background sleep waits for init to reap it
    EXPECT_FALSE(group_alive(pgid)) << "the script's processes survived the stop";
}

// What a script leaves running comes to us when we are a child subreaper,
// as pmc-hybrid is (spawn_adopt_orphans()): stop() reaps its zombie rather
// than waiting for the whole grace on it (the group would then still be
// there after stop(), since SIGKILL cannot end a zombie).  Its daemon ends
// of the SIGTERM, in its trap.
TEST_F(HostscriptTest, StopReapsWhatTheScriptLeftWhenItIsOurs)
{
    AdoptedOrphans adopted;
    ASSERT_TRUE(adopted.ok());
    std::string term = path("term"), up = path("up");
    std::string s = script("(trap 'echo term > \"" + term + "\"; exit 0' TERM; echo up > \"" + up +
                           "\"; while :; do sleep 0.05; done) &\nexit 0\n");
    pid_t pgid = -1;
    pmc_error err{};
    ASSERT_EQ(hostscript_run(s.c_str(), 1, &pgid, nullptr, &err), 0) << err.text;
    for (int k = 0; k < 500 && read_file(up).empty(); k++)
        usleep(10000);
    ASSERT_EQ(read_file(up), "up\n") << "the script's daemon did not start";
    hostscript_stop(pgid, 1);
    EXPECT_FALSE(group_alive(pgid)) << "a zombie of ours kept the group for the whole grace";
    EXPECT_EQ(read_file(term), "term\n") << "the daemon did not end of the SIGTERM";
}

TEST_F(HostscriptTest, ScriptThatCannotRunSaysSo)
{
    std::string s = file("not-executable.sh", "#!/bin/sh\nexit 0\n", 0644);
    pid_t pgid = -1;
    pmc_error err{};
    EXPECT_EQ(hostscript_run(s.c_str(), 1, &pgid, nullptr, &err), -1);
    EXPECT_EQ(std::string(err.text),
              "Worker 1: Host script " + s + " could not be started: Permission denied");
}

} // namespace
