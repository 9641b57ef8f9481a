// test_batchend.cc - unit tests of engine/host/batchend.h.
//
// Every batch variable the module reads is saved and unset for each test (a
// SavedEnv, with PATH and TZ, restored after it), so the host's environment cannot
// leak in; PATH holds only this test's bin/ directory of fake squeue,
// qstat, bjobs and flux scripts (/bin/sh, absolute paths inside), which
// record their arguments in ARGS files.  The clock is fixed (kNow) and TZ
// is a POSIX TZ string, so every expected end is an exact epoch.
//
// Slurm: SLURM_JOB_END_TIME valid, malformed, empty, and taking precedence;
// squeue's %e in three time zones (one in summer time), with
// SLURM_TIME_FORMAT=standard forced; "N/A"/"NONE"/"Unknown"; malformed
// output.  PBS: Torque's Walltime.Remaining, PBS Pro's limit less used (a
// look-alike key ignored), the limit alone, PBS_WALLTIME from our start
// (alone and after a qstat without walltime), malformed values.  LSF:
// "H:MM L", "H:MM E", "H:MM:SS L", "-", "X", an array element's id,
// malformed output.  Flux: execution.expiration, none or 0, the --parent
// retry, invalid JSON, a non-number.  Commands: stdin and stderr are
// /dev/null and stdout a pipe, no inherited descriptor leaks in; a command
// that hangs is killed (with what it started) within the time limit; one
// that exits and leaves a child holding the pipe is not waited for, and the
// child is killed; exit status, death by signal, not on PATH and not
// executable give 0 with a note and no error.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/host/batchend.h"
#include "testutil.h"

namespace
{

using namespace testutil;

const double kNow = 1700000000.0; // "now" for relative answers

class BatchEnd : public TempDirTest
{
  protected:
    BatchEnd() : TempDirTest("batchend") {}

    void SetUp() override
    {
        ASSERT_EQ(mkdir(path("bin").c_str(), 0755), 0) << strerror(errno);
        setenv("PATH", path("bin").c_str(), 1);
        set_tz("UTC0");
    }

    void TearDown() override
    {
        expect_no_children();
    }

    static void set_tz(const char *tz)
    {
        setenv("TZ", tz, 1);
        tzset();
    }

    // bin/NAME: a shell script that records its arguments in NAME.args,
    // then runs body.
    void fake(const std::string &name, const std::string &body, mode_t mode = 0755)
    {
        file("bin/" + name,
             "#!/bin/sh\nprintf '%s\\n' \"$@\" > '" + path(name + ".args") + "'\n" + body, mode);
    }
    // A fake that prints text (printf %s: no escapes interpreted).
    void fake_prints(const std::string &name, const std::string &text)
    {
        file(name + ".out", text);
        fake(name, "/bin/cat '" + path(name + ".out") + "'\n");
    }
    std::string args(const std::string &name)
    {
        return read_file(path(name + ".args"));
    }
    bool ran(const std::string &name)
    {
        return access(path(name + ".args").c_str(), F_OK) == 0;
    }

    int discover(int timeout_ms = BATCHEND_TIMEOUT_MS)
    {
        memset(&be_, 0x55, sizeof be_); // garbage: the call must set it all
        strcpy(err_.text, "untouched");
        return batchend_discover_timeout(kNow, timeout_ms, &be_, &err_);
    }
    std::string source() const
    {
        return be_.source;
    }
    std::string note() const
    {
        return be_.note;
    }
    std::string error() const
    {
        return err_.text;
    }
    // A "not found" answer: nothing set, no error written.
    void expect_none()
    {
        EXPECT_EQ(be_.end_epoch, 0.0);
        EXPECT_EQ(source(), "");
        EXPECT_EQ(error(), "untouched");
    }

    struct batchend be_;
    struct pmc_error err_;
    // Declared before saved_, so destroyed after it: the restored TZ is read.
    struct TzReset {
        ~TzReset()
        {
            tzset();
        }
    } tz_reset_;
    // Every variable batchend reads, and those the tests change.
    SavedEnv saved_{
        "PATH",      "TZ",           "SLURM_JOB_END_TIME", "SLURM_JOB_ID", "SLURM_TIME_FORMAT",
        "PBS_JOBID", "PBS_WALLTIME", "LSB_JOBID",          "LSB_JOBINDEX", "FLUX_JOB_ID"};
};

// ---- nothing --------------------------------------------------------------------

TEST_F(BatchEnd, NotInABatchJob)
{
    fake_prints("squeue", "2030-01-02T03:04:05\n"); // never asked
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "");
    EXPECT_FALSE(ran("squeue"));
}

TEST_F(BatchEnd, DefaultTimeoutEntryPoint)
{
    setenv("SLURM_JOB_END_TIME", "1893553445", 1);
    struct batchend be;
    struct pmc_error err;
    ASSERT_EQ(batchend_discover(kNow, &be, &err), 1);
    EXPECT_EQ(be.end_epoch, 1893553445.0);
}

// ---- Slurm ----------------------------------------------------------------------

TEST_F(BatchEnd, SlurmEndTimeVariable)
{
    setenv("SLURM_JOB_END_TIME", "1893553445", 1);
    setenv("SLURM_JOB_ID", "77", 1);
    fake_prints("squeue", "2031-01-01T00:00:00\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1893553445.0);
    EXPECT_EQ(source(), "SLURM_JOB_END_TIME");
    EXPECT_EQ(note(), "");
    EXPECT_FALSE(ran("squeue")); // the variable is enough
}

// An end already past is not used: a batch system that enforced it would
// have ended the job, so it is stale (issue 45: it was taken, and a run
// stopped at once or, before the epoch's first drain margin, went on
// silently).  out->ignored names the source, the end and how long ago.
TEST_F(BatchEnd, PastEndIsIgnoredAndSaysSo)
{
    setenv("SLURM_JOB_END_TIME", "1699999990", 1); // kNow - 10
    EXPECT_EQ(discover(), 0) << error();
    expect_none();
    EXPECT_EQ(std::string(be_.ignored),
              "SLURM_JOB_END_TIME: the job's end, 2023-11-14 22:13:10 UTC, is 10 s past");
    setenv("SLURM_JOB_END_TIME", "1", 1);
    EXPECT_EQ(discover(), 0) << error();
    expect_none();
    EXPECT_EQ(std::string(be_.ignored),
              "SLURM_JOB_END_TIME: the job's end, 1970-01-01 00:00:01 UTC, is 1699999999 s past");
    unsetenv("SLURM_JOB_END_TIME");
    setenv("SLURM_JOB_ID", "77", 1);
    setenv("TZ", "UTC", 1);
    tzset();
    fake_prints("squeue", "2023-11-14T22:00:00\n");
    EXPECT_EQ(discover(), 0) << error();
    expect_none();
    EXPECT_EQ(std::string(be_.ignored), "squeue (end time of job 77): the job's end, 2023-11-14 "
                                        "22:00:00 UTC, is 800 s past");
    // now itself is not past: the caller stops at once
    unsetenv("SLURM_JOB_ID");
    setenv("SLURM_JOB_END_TIME", "1700000000", 1);
    EXPECT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow);
    EXPECT_EQ(std::string(be_.ignored), "");
}

TEST_F(BatchEnd, SlurmEndTimeVariableMalformed)
{
    for (const char *bad :
         {"1893553445x", "tomorrow", "-5", "0", "12.5", " 12", "99999999999999"}) {
        setenv("SLURM_JOB_END_TIME", bad, 1);
        EXPECT_EQ(discover(), -1) << bad;
        EXPECT_NE(error().find("SLURM_JOB_END_TIME"), std::string::npos) << error();
        EXPECT_NE(error().find(bad), std::string::npos) << error();
        EXPECT_EQ(be_.end_epoch, 0.0);
        EXPECT_EQ(source(), "");
    }
}

TEST_F(BatchEnd, SlurmEndTimeVariableEmptyIsUnset)
{
    setenv("SLURM_JOB_END_TIME", "", 1);
    EXPECT_EQ(discover(), 0);
    expect_none();
}

TEST_F(BatchEnd, PrecedenceSlurmBeforePbs)
{
    setenv("SLURM_JOB_END_TIME", "1893553445", 1);
    setenv("PBS_WALLTIME", "60", 1);
    ASSERT_EQ(discover(), 1);
    EXPECT_EQ(be_.end_epoch, 1893553445.0);
}

TEST_F(BatchEnd, SqueueEndTimeUtc)
{
    setenv("SLURM_JOB_ID", "4242", 1);
    fake_prints("squeue", "2030-01-02T03:04:05\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1893553445.0); // 2030-01-02 03:04:05 UTC
    EXPECT_EQ(args("squeue"), "-h\n-j\n4242\n-o\n%e\n");
    EXPECT_NE(source().find("squeue"), std::string::npos) << source();
    EXPECT_NE(source().find("4242"), std::string::npos) << source();
}

TEST_F(BatchEnd, SqueueEndTimeIsLocalTime)
{
    setenv("SLURM_JOB_ID", "4242", 1);
    fake_prints("squeue", "2030-01-02T03:04:05\n");
    set_tz("EST5"); // UTC-5, no summer time
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1893571445.0); // 08:04:05 UTC
    // Central European summer time in July: UTC+2.
    set_tz("CET-1CEST,M3.5.0,M10.5.0/3");
    fake_prints("squeue", "2030-07-02T03:04:05\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1909184645.0); // 2030-07-02 01:04:05 UTC
}

TEST_F(BatchEnd, SqueueGetsStandardTimeFormat)
{
    setenv("SLURM_JOB_ID", "9", 1);
    setenv("SLURM_TIME_FORMAT", "relative", 1); // the user's taste
    fake("squeue", "if [ \"$SLURM_TIME_FORMAT\" = standard ]; then echo 2030-01-02T03:04:05; "
                   "else echo 'Wed 03:04'; fi\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1893553445.0);
    EXPECT_STREQ(getenv("SLURM_TIME_FORMAT"), "relative"); // ours unchanged
}

TEST_F(BatchEnd, SqueueNoEndTime)
{
    setenv("SLURM_JOB_ID", "4242", 1);
    for (const char *word : {"N/A", "NONE", "Unknown"}) {
        fake_prints("squeue", std::string(word) + "\n");
        EXPECT_EQ(discover(), 0) << word;
        expect_none();
        EXPECT_NE(note().find(word), std::string::npos) << note();
    }
}

TEST_F(BatchEnd, SqueueMalformed)
{
    setenv("SLURM_JOB_ID", "4242", 1);
    for (const char *bad : {"banana", "2030-01-02 03:04:05", "2030-13-02T03:04:05",
                            "2030-02-30T03:04:05", "2030-01-02T03:04:05Z"}) {
        fake_prints("squeue", std::string(bad) + "\n");
        EXPECT_EQ(discover(), -1) << bad;
        EXPECT_NE(error().find("squeue"), std::string::npos) << error();
        EXPECT_NE(error().find(bad), std::string::npos) << error();
        EXPECT_EQ(be_.end_epoch, 0.0);
    }
}

// ---- how commands are run ---------------------------------------------------------

TEST_F(BatchEnd, CommandSeesDevNullAndAPipe)
{
    setenv("SLURM_JOB_ID", "1", 1);
    // An inherited descriptor without close-on-exec, as from a launcher.
    int leak = open("/dev/null", O_RDONLY);
    ASSERT_GE(leak, 0);
    ASSERT_EQ(dup2(leak, 57), 57);
    close(leak);
    // Read the shell's own descriptors before any redirection changes them.
    fake("squeue", "for fd in 0 1 2; do l=$(/bin/readlink /proc/$$/fd/$fd); "
                   "printf '%s\\n' \"$l\" > '" +
                       path("fd") +
                       "'$fd; done\n"
                       "if [ -e /proc/$$/fd/57 ]; then echo leaked > '" +
                       path("fd57") +
                       "'; fi\n"
                       "echo 2030-01-02T03:04:05\n");
    ASSERT_EQ(discover(), 1) << error();
    close(57);
    EXPECT_EQ(read_file(path("fd0")), "/dev/null\n");
    EXPECT_EQ(read_file(path("fd1")).rfind("pipe:", 0), 0u) << read_file(path("fd1"));
    EXPECT_EQ(read_file(path("fd2")), "/dev/null\n");
    EXPECT_FALSE(std::ifstream(path("fd57")).good()) << "an inherited descriptor reached the child";
}

// Whether pid is gone (or a zombie nobody reaped yet), waiting up to 5 s.
bool gone(pid_t pid)
{
    for (int i = 0; i < 250; i++) {
        std::string stat = read_file("/proc/" + std::to_string(pid) + "/stat");
        size_t paren = stat.rfind(')');
        if (stat.empty() || (paren != std::string::npos && stat.compare(paren + 2, 1, "Z") == 0))
            return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
}

TEST_F(BatchEnd, HungCommandIsKilledInTime)
{
    setenv("SLURM_JOB_ID", "1", 1);
    fake("squeue", "/bin/sleep 60 &\necho $! > '" + path("sleep.pid") + "'\nwait\n");
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(discover(300), 0);
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_GE(ms, 290);
    EXPECT_LT(ms, 2000) << "not killed at the time limit";
    expect_none();
    EXPECT_NE(note().find("squeue: no answer within 300 ms, killed"), std::string::npos) << note();
    pid_t sleeper = atoi(read_file(path("sleep.pid")).c_str());
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(gone(sleeper)) << "the command's own child was left running";
}

TEST_F(BatchEnd, ExitedCommandIsNotWaitedForAndItsLeftoversDie)
{
    setenv("SLURM_JOB_ID", "1", 1);
    // The background sleep keeps the output pipe open after sh exits.
    fake("squeue", "/bin/sleep 60 &\necho $! > '" + path("sleep.pid") +
                       "'\necho 2030-01-02T03:04:05\nexit 0\n");
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_EQ(discover(5000), 1) << error();
    auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
            .count();
    EXPECT_LT(ms, 2500) << "waited for the pipe's end of file, not the command's exit";
    EXPECT_EQ(be_.end_epoch, 1893553445.0);
    pid_t sleeper = atoi(read_file(path("sleep.pid")).c_str());
    ASSERT_GT(sleeper, 0);
    EXPECT_TRUE(gone(sleeper)) << "the command's leftover child was left running";
}

TEST_F(BatchEnd, FailingCommandsSayNothing)
{
    setenv("SLURM_JOB_ID", "1", 1);
    fake("squeue", "echo 'slurm_load_jobs error: Invalid job id specified' >&2\n"
                   "echo 2030-01-02T03:04:05\nexit 1\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "squeue: exit status 1");

    fake("squeue", "kill -9 $$\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "squeue: killed by signal 9");

    fake("squeue", "exit 0\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "squeue: printed nothing");

    fake("squeue", "echo 2030-01-02T03:04:05\n", 0644); // not executable
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), std::string("squeue: ") + strerror(EACCES));

    unlink(path("bin/squeue").c_str());
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "squeue: squeue not found on PATH");
}

// ---- PBS / Torque -----------------------------------------------------------------

TEST_F(BatchEnd, TorqueWalltimeRemaining)
{
    setenv("PBS_JOBID", "123.server", 1);
    setenv("PBS_WALLTIME", "3600", 1); // qstat answers first
    fake_prints("qstat", "Job Id: 123.server\n"
                         "    Job_Name = wf\n"
                         "    resources_used.walltime = 00:00:12\n"
                         "    Resource_List.walltime = 01:00:00\n"
                         "    start_time = Tue Feb 19 12:47:56 2019\n"
                         "    Walltime.Remaining = 8598\n"
                         "    start_count = 1\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 8598);
    EXPECT_EQ(source(), "qstat -f (Walltime.Remaining)");
    EXPECT_EQ(args("qstat"), "-f\n123.server\n");
}

TEST_F(BatchEnd, PbsProLimitLessUsed)
{
    setenv("PBS_JOBID", "55.pbs", 1);
    fake_prints("qstat", "Job Id: 55.pbs\n"
                         "    Resource_List.walltime_min = 00:00:01\n" // a look-alike key
                         "    resources_used.walltime = 00:10:05\n"
                         "    Resource_List.walltime = 02:00:00\n"
                         "    stime = Tue Jan  2 10:00:00 2024\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 7200 - 605);
    EXPECT_EQ(source(), "qstat -f (Resource_List.walltime - resources_used.walltime)");
}

TEST_F(BatchEnd, PbsProLimitNothingUsedYet)
{
    setenv("PBS_JOBID", "55.pbs", 1);
    fake_prints("qstat", "Job Id: 55.pbs\n    Resource_List.walltime = 1:30:00\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 5400);
    EXPECT_EQ(source(), "qstat -f (Resource_List.walltime, none used yet)");
}

TEST_F(BatchEnd, PbsWalltimeFromOurStart)
{
    setenv("PBS_WALLTIME", "3600", 1);
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 3600);
    EXPECT_EQ(source(),
              "PBS_WALLTIME from our start: later than the real end by the job's set-up time");
    // After a qstat that names no walltime.
    setenv("PBS_JOBID", "7.s", 1);
    fake_prints("qstat", "Job Id: 7.s\n    Job_Name = x\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 3600);
    EXPECT_EQ(source().rfind("PBS_WALLTIME", 0), 0u);
    EXPECT_TRUE(ran("qstat"));
}

TEST_F(BatchEnd, PbsMalformed)
{
    setenv("PBS_WALLTIME", "1h", 1);
    EXPECT_EQ(discover(), -1);
    EXPECT_NE(error().find("PBS_WALLTIME='1h'"), std::string::npos) << error();

    unsetenv("PBS_WALLTIME");
    setenv("PBS_JOBID", "9.s", 1);
    fake_prints("qstat", "Job Id: 9.s\n    Walltime.Remaining = soon\n");
    EXPECT_EQ(discover(), -1);
    EXPECT_NE(error().find("qstat -f 9.s"), std::string::npos) << error();
    EXPECT_NE(error().find("Walltime.Remaining = 'soon'"), std::string::npos) << error();

    fake_prints("qstat", "Job Id: 9.s\n    Resource_List.walltime = 01:75:00\n");
    EXPECT_EQ(discover(), -1);
    EXPECT_NE(error().find("'01:75:00'"), std::string::npos) << error();
}

TEST_F(BatchEnd, QstatFailsWithoutWalltimeVariable)
{
    setenv("PBS_JOBID", "9.s", 1);
    fake("qstat", "echo 'qstat: Unknown Job Id 9.s' >&2\nexit 153\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    EXPECT_EQ(note(), "qstat: exit status 153");
}

// ---- LSF --------------------------------------------------------------------------

TEST_F(BatchEnd, LsfRunLimit)
{
    setenv("LSB_JOBID", "4242", 1);
    fake_prints("bjobs", "1:30 L\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 5400);
    EXPECT_EQ(source(), "LSF (bjobs time_left, run limit)");
    EXPECT_EQ(args("bjobs"), "-noheader\n-o\ntime_left\n4242\n");
}

TEST_F(BatchEnd, LsfEstimateAndSeconds)
{
    setenv("LSB_JOBID", "4242", 1);
    fake_prints("bjobs", "0:12 E\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 720);
    EXPECT_EQ(source(), "LSF (bjobs time_left, estimated run time, not enforced)");

    fake_prints("bjobs", "12:34:56 L\n"); // LSB_HMS_TIME_FORMAT=Y
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 45296);
}

TEST_F(BatchEnd, LsfNoLimit)
{
    setenv("LSB_JOBID", "4242", 1);
    fake_prints("bjobs", "-\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    fake_prints("bjobs", "0:00 X\n"); // past its estimate: no end known
    EXPECT_EQ(discover(), 0);
    expect_none();
}

TEST_F(BatchEnd, LsfArrayElement)
{
    setenv("LSB_JOBID", "4242", 1);
    setenv("LSB_JOBINDEX", "7", 1);
    fake_prints("bjobs", "2:00 L\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, kNow + 7200);
    EXPECT_EQ(args("bjobs"), "-noheader\n-o\ntime_left\n4242[7]\n");
}

TEST_F(BatchEnd, LsfMalformed)
{
    setenv("LSB_JOBID", "4242", 1);
    for (const char *bad : {"soon", "1:30 Q", "1:75 L", "90 L"}) {
        fake_prints("bjobs", std::string(bad) + "\n");
        EXPECT_EQ(discover(), -1) << bad;
        EXPECT_NE(error().find("bjobs"), std::string::npos) << error();
        EXPECT_NE(error().find(bad), std::string::npos) << error();
    }
}

// ---- Flux -------------------------------------------------------------------------

const char kR[] = R"({"version":1,"execution":{"R_lite":[{"rank":"0","children":{"core":"0-3"}}],)"
                  R"("starttime":1700000000.0,"expiration":1900000000.5}})";

TEST_F(BatchEnd, FluxExpiration)
{
    setenv("FLUX_JOB_ID", "f2aB9c", 1);
    fake_prints("flux", std::string(kR) + "\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1900000000.5);
    EXPECT_EQ(source(), "flux job info (execution.expiration)");
    EXPECT_EQ(args("flux"), "job\ninfo\nf2aB9c\nR\n");
}

TEST_F(BatchEnd, FluxParentInstance)
{
    setenv("FLUX_JOB_ID", "f2aB9c", 1);
    file("R.json", std::string(kR) + "\n");
    fake("flux",
         "if [ \"$1\" = --parent ]; then /bin/cat '" + path("R.json") + "'; else exit 1; fi\n");
    ASSERT_EQ(discover(), 1) << error();
    EXPECT_EQ(be_.end_epoch, 1900000000.5);
    EXPECT_EQ(source(), "flux --parent job info (execution.expiration)");
    EXPECT_EQ(args("flux"), "--parent\njob\ninfo\nf2aB9c\nR\n");
}

TEST_F(BatchEnd, FluxNoExpiration)
{
    setenv("FLUX_JOB_ID", "f2aB9c", 1);
    fake_prints("flux", R"({"version":1,"execution":{"R_lite":[],"expiration":0}})"
                        "\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
    fake_prints("flux", R"({"version":1,"execution":{"R_lite":[]}})"
                        "\n");
    EXPECT_EQ(discover(), 0);
    expect_none();
}

TEST_F(BatchEnd, FluxMalformed)
{
    setenv("FLUX_JOB_ID", "f2aB9c", 1);
    fake_prints("flux", "{not json\n");
    EXPECT_EQ(discover(), -1);
    EXPECT_NE(error().find("flux job info f2aB9c R: not JSON"), std::string::npos) << error();

    fake_prints("flux", R"({"version":1,"execution":{"expiration":"soon"}})"
                        "\n");
    EXPECT_EQ(discover(), -1);
    EXPECT_NE(error().find("expiration"), std::string::npos) << error();
    EXPECT_NE(error().find("soon"), std::string::npos) << error();
}

} // namespace
