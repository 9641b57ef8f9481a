// test_eventlog.cc - unit tests of io/eventlog.h (COMPAT.md "Other files").
//
// jobstate.log: every event's exact line(s), checked with regexes, epoch
// timestamps with 6 decimals close to now, both termination lines sharing
// one timestamp, appending to an existing file.  dagman.out: every line
// pegasus-monitord matches, "mm/dd/yy hh:mm:ss" dates close to now, the DAG's
// base name and our pid, truncation on open.  DAGFILE.resource: the CSV line
// and appending.  Common: nothing reaches the file before a flush (and then
// only whole lines), close flushes, a full buffer is written whole lines at a
// time, an event longer than the buffer, NULL logs are no-ops, bad events,
// an unopenable path (a directory, so the test works as root) and write
// errors (/dev/full: ENOSPC) reported with the path, sticky until close; a
// log deleted or replaced before its close is an error naming it.
//
// Each test gets its own directory under $TMPDIR (or /tmp).
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include "io/eventlog.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// The lines of a file; a last line without '\n' is kept (and would fail the
// whole-line checks), so each test also checks the file ends with '\n'.
std::vector<std::string> read_lines(const std::string &path)
{
    std::vector<std::string> lines;
    std::istringstream in(read_file(path));
    std::string line;
    while (std::getline(in, line))
        lines.push_back(line);
    return lines;
}

double now_epoch()
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// Match line against re (anchored); returns the captures.
std::vector<std::string> match(const std::string &line, const std::string &re)
{
    std::smatch m;
    std::vector<std::string> caps;
    EXPECT_TRUE(std::regex_match(line, m, std::regex(re))) << "line: " << line << "\nregex: " << re;
    for (size_t i = 1; i < m.size(); i++)
        caps.push_back(m[i].str());
    return caps;
}

// A jobstate timestamp: digits, a dot, exactly 6 digits.
const std::string TS = R"((\d+\.\d{6}))";

// Split "TS REST" at the first space, checking TS's shape; for long lines
// and many lines (libstdc++'s std::regex is recursive and slow).
std::string after_ts(const std::string &line)
{
    static const std::regex ts_re(R"(\d+\.\d{6})");
    size_t sp = line.find(' ');
    if (sp == std::string::npos)
        return "<no space in: " + line + ">";
    if (!std::regex_match(line.begin(), line.begin() + static_cast<long>(sp), ts_re))
        return "<bad timestamp in: " + line.substr(0, 80) + ">";
    return line.substr(sp + 1);
}
// A dagman.out date: mm/dd/yy hh:mm:ss.
const std::string DATE = R"((\d\d/\d\d/\d\d \d\d:\d\d:\d\d))";

void expect_recent_epoch(const std::string &ts, double before, double after)
{
    double t = std::stod(ts);
    EXPECT_GE(t, std::floor(before * 1e6) / 1e6 - 1e-6) << ts;
    EXPECT_LE(t, after + 1e-6) << ts;
}

// A dagman.out date within [before - 1, after + 1] seconds, in local time.
void expect_recent_date(const std::string &date, time_t before, time_t after)
{
    struct tm tm {
    };
    ASSERT_NE(strptime(date.c_str(), "%m/%d/%y %H:%M:%S", &tm), nullptr) << date;
    tm.tm_isdst = -1;
    time_t t = mktime(&tm);
    EXPECT_GE(t, before - 1) << date;
    EXPECT_LE(t, after + 1) << date;
}

class EventlogTest : public TempDirTest
{
  protected:
    EventlogTest() : TempDirTest("pmc-eventlog-test") {}
};

// ---- jobstate.log ----------------------------------------------------------

TEST_F(EventlogTest, JobstateLineFormats)
{
    std::string p = path("jobstate.log");
    pmc_error err{};
    double before = now_epoch();
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "ID01", 7, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_EXECUTE, "ID01", 7, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_SUCCESS, "ID01", 7, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "task_b", 8, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_EXECUTE, "task_b", 8, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_FAILURE, "task_b", 8, 256, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_FAILURE, "task_c", 4294967295u, -1, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_FAILURE, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_SUCCESS, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
    double after = now_epoch();

    std::string all = read_file(p);
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.back(), '\n');
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 13u) << all;
    std::vector<std::string> ts;
    auto take = [&](const std::string &line, const std::string &re) {
        auto c = match(line, "^" + TS + re + "$");
        if (!c.empty())
            ts.push_back(c[0]);
    };
    take(l[0], R"( INTERNAL \*\*\* PMC_STARTED \*\*\*)");
    take(l[1], R"( ID01 SUBMIT 7\.0 - - 7)");
    take(l[2], R"( ID01 EXECUTE 7\.0 - - 7)");
    take(l[3], R"( ID01 JOB_TERMINATED 7\.0 - - 7)");
    take(l[4], R"( ID01 JOB_SUCCESS 0 - - 7)");
    take(l[5], R"( task_b SUBMIT 8\.0 - - 8)");
    take(l[6], R"( task_b EXECUTE 8\.0 - - 8)");
    take(l[7], R"( task_b JOB_TERMINATED 8\.0 - - 8)");
    take(l[8], R"( task_b JOB_FAILURE 256 - - 8)");
    take(l[9], R"( task_c JOB_TERMINATED 4294967295\.0 - - 4294967295)");
    take(l[10], R"( task_c JOB_FAILURE -1 - - 4294967295)");
    take(l[11], R"( INTERNAL \*\*\* PMC_FINISHED 1 \*\*\*)");
    take(l[12], R"( INTERNAL \*\*\* PMC_FINISHED 0 \*\*\*)");
    ASSERT_EQ(ts.size(), 13u);
    for (size_t i = 0; i < ts.size(); i++) {
        expect_recent_epoch(ts[i], before, after);
        if (i > 0) {
            EXPECT_LE(std::stod(ts[i - 1]), std::stod(ts[i]));
        }
    }
    EXPECT_EQ(ts[3], ts[4]) << "JOB_TERMINATED and JOB_SUCCESS share a timestamp";
    EXPECT_EQ(ts[7], ts[8]);
}

TEST_F(EventlogTest, JobstateAppendsToExistingFile)
{
    std::string p = path("jobstate.log");
    write_file(p, "1.000000 INTERNAL *** PMC_STARTED ***\n");
    pmc_error err{};
    for (int run = 0; run < 2; run++) {
        jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
        ASSERT_NE(jl, nullptr) << err.text;
        EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
        EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_SUCCESS, nullptr, 0, 0, &err), 0);
        EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
    }
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 5u);
    EXPECT_EQ(l[0], "1.000000 INTERNAL *** PMC_STARTED ***");
    match(l[1], "^" + TS + R"( INTERNAL \*\*\* PMC_STARTED \*\*\*$)");
    match(l[2], "^" + TS + R"( INTERNAL \*\*\* PMC_FINISHED 0 \*\*\*$)");
    match(l[3], "^" + TS + R"( INTERNAL \*\*\* PMC_STARTED \*\*\*$)");
    match(l[4], "^" + TS + R"( INTERNAL \*\*\* PMC_FINISHED 0 \*\*\*$)");
}

TEST_F(EventlogTest, JobstateIsFileMode0644AndCreated)
{
    std::string p = path("jobstate.log");
    mode_t old = umask(022);
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    umask(old);
    ASSERT_NE(jl, nullptr) << err.text;
    struct stat st;
    ASSERT_EQ(stat(p.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    EXPECT_EQ(jobstate_log_close(jl, &err), 0);
}

TEST_F(EventlogTest, NothingWrittenBeforeFlushThenWholeLines)
{
    std::string p = path("jobstate.log");
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "a", 1, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_EXECUTE, "a", 1, 0, &err), 0);
    EXPECT_EQ(read_file(p), "") << "no write(2) per line";
    EXPECT_EQ(jobstate_log_flush(jl, &err), 0) << err.text;
    EXPECT_EQ(read_lines(p).size(), 2u);
    EXPECT_EQ(jobstate_log_flush(jl, &err), 0) << "an empty flush is fine";
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_SUCCESS, "a", 1, 0, &err), 0);
    EXPECT_EQ(read_lines(p).size(), 2u);
    EXPECT_EQ(jobstate_log_close(jl, &err), 0);
    EXPECT_EQ(read_lines(p).size(), 4u) << "close flushes";
}

// 20,000 events without a flush overflow the 64 KiB buffer several times;
// whatever is in the file at any moment is whole lines, and in the end all
// lines are there in order.
TEST_F(EventlogTest, FullBufferIsWrittenAsWholeLines)
{
    std::string p = path("jobstate.log");
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    const uint32_t n = 20000;
    bool saw_partial_flush = false;
    for (uint32_t i = 1; i <= n; i++) {
        std::string name = "task_" + std::to_string(i);
        ASSERT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, name.c_str(), i, 0, &err), 0);
        if (i % 997 == 0) {
            std::string now = read_file(p);
            if (!now.empty()) {
                saw_partial_flush = true;
                EXPECT_EQ(now.back(), '\n') << "a torn line is visible after event " << i;
            }
        }
    }
    EXPECT_TRUE(saw_partial_flush) << "the buffer should have overflowed";
    EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), n);
    for (uint32_t i = 1; i <= n; i++) {
        std::string s = std::to_string(i);
        ASSERT_EQ(after_ts(l[i - 1]), "task_" + s + " SUBMIT " + s + ".0 - - " + s);
    }
}

// A task name longer than the whole buffer still makes whole lines, in order.
TEST_F(EventlogTest, EventLongerThanTheBuffer)
{
    std::string p = path("jobstate.log");
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    std::string big(100000, 'x');
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "before", 1, 0, &err), 0);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_SUCCESS, big.c_str(), 2, 0, &err), 0) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "after", 3, 0, &err), 0);
    EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 4u);
    EXPECT_EQ(after_ts(l[0]), "before SUBMIT 1.0 - - 1");
    EXPECT_TRUE(after_ts(l[1]) == big + " JOB_TERMINATED 2.0 - - 2") << l[1].substr(0, 80);
    EXPECT_TRUE(after_ts(l[2]) == big + " JOB_SUCCESS 0 - - 2") << l[2].substr(0, 80);
    EXPECT_EQ(after_ts(l[3]), "after SUBMIT 3.0 - - 3");
}

// ---- DAGFILE.dagman.out ----------------------------------------------------

TEST_F(EventlogTest, DagmanLineFormats)
{
    std::string p = path("wf.dag.dagman.out");
    pmc_error err{};
    time_t before = time(nullptr);
    dagman_log *dl = dagman_log_open(p.c_str(), "/some/where/wf.dag", &err);
    ASSERT_NE(dl, nullptr) << err.text;
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0) << err.text;
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_QUEUED, "ID01", 1, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_EXECUTE, "ID01", 1, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_SUCCESS, "ID01", 1, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_FAILURE, "ID02", 2, 1, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_SUCCESS, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_FAILURE, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_close(dl, &err), 0) << err.text;
    time_t after = time(nullptr);

    std::string all = read_file(p);
    ASSERT_FALSE(all.empty());
    EXPECT_EQ(all.back(), '\n');
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 13u) << all;
    std::string pid = std::to_string(getpid());
    std::vector<std::string> res = {
        R"( This is a fake DAGMan log file generated by PMC for the purpose of tricking monitord)",
        R"( \*\* condor_scheduniv_exec\.0\.0 \(CONDOR_DAGMAN\) STARTING UP)",
        R"( \*\* PID = )" + pid,
        R"( Parsing wf\.dag \.\.\.)",
        R"( Submitting Condor Node ID01 job\(s\)\.\.\.)",
        R"( Event: ULOG_SUBMIT for Condor Node ID01 \(1\.0\))",
        R"( Event: ULOG_EXECUTE for Condor Node ID01 \(1\.0\))",
        R"( Event: ULOG_JOB_TERMINATED for Condor Node ID01 \(1\.0\))",
        R"( Node ID01 job proc \(1\.0\) completed successfully\.)",
        R"( Event: ULOG_JOB_TERMINATED for Condor Node ID02 \(2\.0\))",
        R"( Node ID02 job proc \(2\.0\) failed with status 1\.)",
        R"( \*\*\*\* condor_scheduniv_exec\.0\.0 \(condor_DAGMAN\) pid )" + pid +
            R"( EXITING WITH STATUS 0)",
        R"( \*\*\*\* condor_scheduniv_exec\.0\.0 \(condor_DAGMAN\) pid )" + pid +
            R"( EXITING WITH STATUS 1)",
    };
    for (size_t i = 0; i < res.size(); i++) {
        auto c = match(l[i], "^" + DATE + res[i] + "$");
        if (!c.empty())
            expect_recent_date(c[0], before, after);
    }
}

// The patterns pegasus-monitord (Pegasus 5, bin/pegasus-monitord) applies
// to each dagman.out line with re.search, copied verbatim, accept our lines
// and extract the right fields.
TEST_F(EventlogTest, DagmanLinesMatchMonitordPatterns)
{
    std::string p = path("x.dagman.out");
    pmc_error err{};
    dagman_log *dl = dagman_log_open(p.c_str(), "dir/x.dag", &err);
    ASSERT_NE(dl, nullptr) << err.text;
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_QUEUED, "merge_a", 12, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_EXECUTE, "merge_a", 12, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_FAILURE, "merge_a", 12, 2, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_SUCCESS, "merge_b", 13, 0, &err), 0);
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_FAILURE, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_close(dl, &err), 0);
    std::regex dag_name(R"(Parsing (.+) ...$)");
    std::regex timestamp(R"(\s*(\d{1,2})\/(\d{1,2})(\/(\d{1,2}))?\s+(\d{1,2}):(\d{2}):(\d{2}))");
    std::regex event(
        R"(Event:\s+ULOG_(\S+) for (?:HT|)Condor (?:Job|Node) (\S+)\s+\((-?[0-9]+\.[0-9]+)(\.[0-9]+)?\).*)");
    std::regex job_submit(R"(Submitting (?:HT|)Condor Node (.+) job)");
    std::regex job_failed(
        R"(\d{2}\s(?:\(D_\w*\)\s)?Node (\S+) job proc \(([0-9\.]+)\) failed with (status|signal)\s+(-?\d+)\.$)");
    std::regex job_successful(
        R"(\d{2}\s(?:\(D_\w*\)\s)?Node (\S+) job proc \(([0-9\.]+)\) completed successfully\.$)");
    std::regex dagman_finished(R"(\(condor_DAGMAN\)[\w\s]+EXITING WITH STATUS (\d+)$)");
    std::regex dagman_pid(R"(\*\* PID = (\d+)$)");

    std::vector<std::string> events, submits, fails, oks, names, pids, exits;
    auto lines = read_lines(p);
    ASSERT_EQ(lines.size(), 12u);
    for (const auto &line : lines) {
        std::smatch m;
        EXPECT_TRUE(std::regex_search(line, m, timestamp) && m.position(0) == 0) << line;
        if (std::regex_search(line, m, event))
            events.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str());
        if (std::regex_search(line, m, job_submit))
            submits.push_back(m[1].str());
        if (std::regex_search(line, m, job_failed))
            fails.push_back(m[1].str() + " " + m[2].str() + " " + m[3].str() + " " + m[4].str());
        if (std::regex_search(line, m, job_successful))
            oks.push_back(m[1].str() + " " + m[2].str());
        if (std::regex_search(line, m, dag_name))
            names.push_back(m[1].str());
        if (std::regex_search(line, m, dagman_pid))
            pids.push_back(m[1].str());
        if (std::regex_search(line, m, dagman_finished))
            exits.push_back(m[1].str());
    }
    using V = std::vector<std::string>;
    EXPECT_EQ(events, (V{"SUBMIT merge_a 12.0", "EXECUTE merge_a 12.0",
                         "JOB_TERMINATED merge_a 12.0", "JOB_TERMINATED merge_b 13.0"}));
    EXPECT_EQ(submits, V{"merge_a"});
    EXPECT_EQ(fails, V{"merge_a 12.0 status 2"});
    EXPECT_EQ(oks, V{"merge_b 13.0"});
    EXPECT_EQ(names, V{"x.dag"});
    EXPECT_EQ(pids, V{std::to_string(getpid())});
    EXPECT_EQ(exits, V{"1"});
}

TEST_F(EventlogTest, DagmanTruncatesOnOpen)
{
    std::string p = path("wf.dag.dagman.out");
    write_file(p, std::string(100000, 'o') + "\nold run\n");
    pmc_error err{};
    dagman_log *dl = dagman_log_open(p.c_str(), "wf.dag", &err);
    ASSERT_NE(dl, nullptr) << err.text;
    EXPECT_EQ(read_file(p), "") << "truncated at open, like PMC's fopen(\"w\")";
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_SUCCESS, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_flush(dl, &err), 0);
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 1u);
    match(l[0], "^" + DATE + R"( \*\*\*\* condor_scheduniv_exec\.0\.0 .* EXITING WITH STATUS 0$)");
    EXPECT_EQ(dagman_log_close(dl, &err), 0);
}

TEST_F(EventlogTest, DagmanDagNameWithoutDirectory)
{
    std::string p = path("d.dagman.out");
    pmc_error err{};
    dagman_log *dl = dagman_log_open(p.c_str(), "plain.dag", &err);
    ASSERT_NE(dl, nullptr) << err.text;
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_close(dl, &err), 0);
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 4u);
    match(l[3], "^" + DATE + R"( Parsing plain\.dag \.\.\.$)");
}

// ---- DAGFILE.resource ------------------------------------------------------

TEST_F(EventlogTest, ResourceCsv)
{
    std::string p = path("wf.dag.resource");
    write_file(p, "1.000000,1,1,1,old\n");
    pmc_error err{};
    resource_log *rl = resource_log_open(p.c_str(), &err);
    ASSERT_NE(rl, nullptr) << err.text;
    EXPECT_EQ(resource_log_write(rl, 1712345678.25, 3, 2, 1024, "node1", &err), 0);
    EXPECT_EQ(resource_log_write(rl, 1712345678.5, 7, 14, 65536, "*", &err), 0);
    EXPECT_EQ(resource_log_write(rl, 0.0, 0, 0, 18446744073709551615ull, "n-2.example.org", &err),
              0);
    double t = now_epoch();
    EXPECT_EQ(resource_log_write(rl, t, 1, 1, 1, "*", &err), 0);
    EXPECT_EQ(read_lines(p).size(), 1u) << "buffered until flush";
    EXPECT_EQ(resource_log_flush(rl, &err), 0) << err.text;
    EXPECT_EQ(read_lines(p).size(), 5u);
    EXPECT_EQ(resource_log_close(rl, &err), 0) << err.text;
    auto l = read_lines(p);
    ASSERT_EQ(l.size(), 5u);
    EXPECT_EQ(l[0], "1.000000,1,1,1,old");
    EXPECT_EQ(l[1], "1712345678.250000,3,2,1024,node1");
    EXPECT_EQ(l[2], "1712345678.500000,7,14,65536,*");
    EXPECT_EQ(l[3], "0.000000,0,0,18446744073709551615,n-2.example.org");
    auto c = match(l[4], R"(^(\d+\.\d{6}),1,1,1,\*$)");
    if (!c.empty()) {
        EXPECT_NEAR(std::stod(c[0]), t, 1e-6);
    }
}

// ---- errors and no-ops -----------------------------------------------------

TEST_F(EventlogTest, UnopenablePathIsAnErrorNamingIt)
{
    std::string d = path("adir");
    ASSERT_EQ(mkdir(d.c_str(), 0755), 0);
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(jobstate_log_open(d.c_str(), &err), nullptr);
    EXPECT_EQ(errno, EISDIR);
    EXPECT_EQ(std::string(err.text), d + ": Is a directory");
    err = {};
    EXPECT_EQ(dagman_log_open(d.c_str(), "wf.dag", &err), nullptr);
    EXPECT_EQ(std::string(err.text), d + ": Is a directory");
    err = {};
    EXPECT_EQ(resource_log_open(d.c_str(), &err), nullptr);
    EXPECT_EQ(std::string(err.text), d + ": Is a directory");
    err = {};
    std::string missing = path("no/such/dir/jobstate.log");
    EXPECT_EQ(jobstate_log_open(missing.c_str(), &err), nullptr);
    EXPECT_EQ(std::string(err.text), missing + ": No such file or directory");
    EXPECT_EQ(jobstate_log_open(d.c_str(), nullptr), nullptr) << "err may be NULL";
}

// /dev/full opens fine and fails every write with ENOSPC: the error shows
// at the flush, names the path, and sticks until close.
TEST_F(EventlogTest, LogDeletedOrReplacedBeforeCloseIsAnError)
{
    std::string p = path("jobstate.log");
    const std::string want = p + " was deleted or replaced during the run: its lines since then "
                                 "are lost";
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
    ASSERT_EQ(unlink(p.c_str()), 0);
    EXPECT_EQ(jobstate_log_close(jl, &err), -1);
    EXPECT_EQ(std::string(err.text), want);

    std::string r = path("wf.dag.resource"), other = path("other");
    resource_log *rl = resource_log_open(r.c_str(), &err);
    ASSERT_NE(rl, nullptr) << err.text;
    write_file(other, "mine\n");
    ASSERT_EQ(rename(other.c_str(), r.c_str()), 0);
    err = {};
    EXPECT_EQ(resource_log_close(rl, &err), -1);
    EXPECT_EQ(std::string(err.text),
              r + " was deleted or replaced during the run: its lines since then are lost");
    EXPECT_EQ(read_file(r), "mine\n") << "the file there is left alone";

    jl = jobstate_log_open(p.c_str(), &err); // in place: no error
    ASSERT_NE(jl, nullptr) << err.text;
    EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
}

TEST_F(EventlogTest, WriteErrorIsReportedAndSticky)
{
    if (access("/dev/full", W_OK) != 0)
        GTEST_SKIP() << "no /dev/full";
    const std::string want = "/dev/full: No space left on device";
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open("/dev/full", &err);
    ASSERT_NE(jl, nullptr) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
    errno = 0;
    EXPECT_EQ(jobstate_log_flush(jl, &err), -1);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(std::string(err.text), want);
    err = {};
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "a", 1, 0, &err), -1) << "sticky";
    EXPECT_EQ(std::string(err.text), want);
    err = {};
    EXPECT_EQ(jobstate_log_close(jl, &err), -1);
    EXPECT_EQ(std::string(err.text), want);

    err = {};
    dagman_log *dl = dagman_log_open("/dev/full", "wf.dag", &err);
    ASSERT_NE(dl, nullptr) << err.text;
    EXPECT_EQ(dagman_log_event(dl, WF_WORKFLOW_START, nullptr, 0, 0, &err), 0);
    EXPECT_EQ(dagman_log_close(dl, &err), -1) << "close flushes and reports";
    EXPECT_EQ(std::string(err.text), want);

    err = {};
    resource_log *rl = resource_log_open("/dev/full", &err);
    ASSERT_NE(rl, nullptr) << err.text;
    // Overflow the buffer: the event that does not fit triggers the write.
    int rc = 0;
    for (int i = 0; i < 10000 && rc == 0; i++)
        rc = resource_log_write(rl, 1.0, 1, 1, 1, "a-rather-long-host-name.example.org", &err);
    EXPECT_EQ(rc, -1);
    EXPECT_EQ(std::string(err.text), want);
    EXPECT_EQ(resource_log_flush(rl, &err), -1);
    EXPECT_EQ(resource_log_close(rl, nullptr), -1);
}

TEST_F(EventlogTest, NullLogsAreNoOps)
{
    pmc_error err{};
    EXPECT_EQ(jobstate_log_event(nullptr, WF_TASK_QUEUED, "a", 1, 0, &err), 0);
    EXPECT_EQ(jobstate_log_flush(nullptr, &err), 0);
    EXPECT_EQ(jobstate_log_close(nullptr, &err), 0);
    EXPECT_EQ(dagman_log_event(nullptr, WF_TASK_QUEUED, "a", 1, 0, &err), 0);
    EXPECT_EQ(dagman_log_flush(nullptr, &err), 0);
    EXPECT_EQ(dagman_log_close(nullptr, &err), 0);
    EXPECT_EQ(resource_log_write(nullptr, 1.0, 1, 1, 1, "h", &err), 0);
    EXPECT_EQ(resource_log_flush(nullptr, &err), 0);
    EXPECT_EQ(resource_log_close(nullptr, &err), 0);
}

// Misuse is an error (EINVAL) but does not break the log.
TEST_F(EventlogTest, BadEventsAreRejectedWithoutBreakingTheLog)
{
    std::string p = path("jobstate.log");
    pmc_error err{};
    jobstate_log *jl = jobstate_log_open(p.c_str(), &err);
    ASSERT_NE(jl, nullptr) << err.text;
    errno = 0;
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, nullptr, 1, 0, &err), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_NE(std::string(err.text).find(p), std::string::npos) << err.text;
    EXPECT_EQ(jobstate_log_event(jl, static_cast<wf_event>(99), "a", 1, 0, &err), -1);
    EXPECT_EQ(jobstate_log_event(jl, WF_TASK_QUEUED, "a", 1, 0, &err), 0);
    EXPECT_EQ(jobstate_log_close(jl, &err), 0) << err.text;
    EXPECT_EQ(read_lines(p).size(), 1u);

    std::string q = path("r.resource");
    resource_log *rl = resource_log_open(q.c_str(), &err);
    ASSERT_NE(rl, nullptr);
    EXPECT_EQ(resource_log_write(rl, 1.0, 1, 1, 1, nullptr, &err), -1);
    EXPECT_EQ(resource_log_close(rl, &err), 0);

    std::string d = path("d.dagman.out");
    dagman_log *dl = dagman_log_open(d.c_str(), "wf.dag", &err);
    ASSERT_NE(dl, nullptr);
    EXPECT_EQ(dagman_log_event(dl, WF_TASK_SUCCESS, nullptr, 1, 0, &err), -1);
    EXPECT_EQ(dagman_log_event(dl, static_cast<wf_event>(-5), "a", 1, 0, &err), -1);
    EXPECT_EQ(dagman_log_close(dl, &err), 0);
    EXPECT_EQ(read_file(d), "");
}

} // namespace
