// test_monitor.cc - engine/master/monitor.h: hosts of the resource log (nodes with
// one hostname are one host, also past the index's growth), one line per
// changed host per flush and no other (PMC's lines: no "*" totals), and the task/workflow events
// reaching jobstate.log.
#include <gtest/gtest.h>

#include <ctime>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "engine/master/monitor.h"
#include "testutil.h"

namespace
{
using namespace testutil;
namespace fs = std::filesystem;

class MonitorTest : public TempDirTest
{
  protected:
    MonitorTest() : TempDirTest("test_monitor") {}

    struct monitor *open(bool jobstate, bool resource)
    {
        dag_ = path("wf.dag");
        struct monitor_config cfg = {dag_.c_str(), jobstate, false, resource};
        struct pmc_error err = {};
        struct monitor *mon = monitor_open(&cfg, &err);
        EXPECT_NE(mon, nullptr) << err.text;
        return mon;
    }

    std::vector<std::string> lines(const std::string &file)
    {
        std::vector<std::string> out;
        std::istringstream in(read_file(file));
        for (std::string l; std::getline(in, l);)
            out.push_back(l);
        return out;
    }

    std::string dag_;
};

TEST_F(MonitorTest, SameHostnameIsOneHostPastIndexGrowth)
{
    struct monitor *mon = open(false, true);
    ASSERT_NE(mon, nullptr);
    std::vector<uint32_t> first(300);
    for (int i = 0; i < 300; i++)
        first[i] = monitor_add_node(mon, ("node" + std::to_string(i)).c_str(), 4, 100, 0);
    for (int i = 0; i < 300; i++) {
        EXPECT_EQ(first[i], (uint32_t)i) << "hosts are numbered in order of first sight";
        uint32_t again = monitor_add_node(mon, ("node" + std::to_string(i)).c_str(), 4, 100, 0);
        EXPECT_EQ(again, first[i]) << "a second rank on node" << i;
    }
    monitor_close(mon);
}

TEST_F(MonitorTest, OneLinePerChangedHostAndNoTotals)
{
    struct monitor *mon = open(false, true);
    ASSERT_NE(mon, nullptr);
    uint32_t a = monitor_add_node(mon, "a", 4, 1000, 0);
    uint32_t b = monitor_add_node(mon, "b", 2, 500, 0);
    monitor_flush(mon); // everything free: a, b
    monitor_node_changed(mon, a, 3, 600, 0);
    monitor_node_changed(mon, a, 2, 100, 0); // over-committed: free is 0, not negative
    monitor_flush(mon);                      // only a changed: a
    monitor_flush(mon);                      // nothing changed: no line
    monitor_close(mon);
    std::vector<std::string> l = lines(dag_ + ".resource");
    ASSERT_EQ(l.size(), 3u);
    auto tail = [](const std::string &s) { return s.substr(s.find(',') + 1); };
    EXPECT_EQ(tail(l[0]), "4,4,1000,a");
    EXPECT_EQ(tail(l[1]), "2,2,500,b");
    EXPECT_EQ(tail(l[2]), "0,0,300,a");
    (void)b;
}

// A host with GPUs gives every line a sixth column, its free GPUs.
TEST_F(MonitorTest, GpusColumnOnceAHostHasGpus)
{
    struct monitor *mon = open(false, true);
    ASSERT_NE(mon, nullptr);
    uint32_t a = monitor_add_node(mon, "a", 4, 1000, 2);
    monitor_add_node(mon, "b", 2, 500, 0);
    monitor_flush(mon);
    monitor_node_changed(mon, a, 1, 0, 1);
    monitor_flush(mon);
    monitor_close(mon);
    std::vector<std::string> l = lines(dag_ + ".resource");
    ASSERT_EQ(l.size(), 3u);
    auto tail = [](const std::string &s) { return s.substr(s.find(',') + 1); };
    EXPECT_EQ(tail(l[0]), "4,4,1000,a,2");
    EXPECT_EQ(tail(l[1]), "2,2,500,b,0");
    EXPECT_EQ(tail(l[2]), "3,3,1000,a,1");
}

TEST_F(MonitorTest, TaskEventsReachJobstate)
{
    struct monitor *mon = open(true, false);
    ASSERT_NE(mon, nullptr);
    EXPECT_TRUE(monitor_wants_tasks(mon));
    monitor_event(mon, WF_WORKFLOW_START, nullptr, 0, 0);
    monitor_event(mon, WF_TASK_QUEUED, "t1", 1, 0);
    monitor_event(mon, WF_TASK_FAILURE, "t1", 1, 3);
    monitor_event(mon, WF_WORKFLOW_FAILURE, nullptr, 0, 0);
    monitor_close(mon);
    std::vector<std::string> l = lines(path("jobstate.log"));
    ASSERT_EQ(l.size(), 5u);
    EXPECT_NE(l[0].find("INTERNAL *** PMC_STARTED ***"), std::string::npos);
    EXPECT_NE(l[1].find(" t1 SUBMIT 1.0 - - 1"), std::string::npos);
    EXPECT_NE(l[3].find(" t1 JOB_FAILURE 3 - - 1"), std::string::npos);
    EXPECT_NE(l[4].find("*** PMC_FINISHED 1 ***"), std::string::npos);
}

TEST_F(MonitorTest, NothingAskedWritesNothing)
{
    struct monitor *mon = open(false, false);
    ASSERT_NE(mon, nullptr);
    EXPECT_FALSE(monitor_wants_tasks(mon));
    monitor_add_node(mon, "a", 1, 1, 0);
    monitor_flush(mon);
    monitor_close(mon);
    EXPECT_FALSE(fs::exists(dag_ + ".resource"));
    EXPECT_FALSE(fs::exists(path("jobstate.log")));
}

// EXECUTE is written when the master learns of a task's start, later than
// the start: its stamp is the start given, to the microsecond; the dagman
// date is the start's second.
TEST_F(MonitorTest, EventAtCarriesTheGivenTime)
{
    dag_ = path("wf.dag");
    struct monitor_config cfg = {dag_.c_str(), true, true, false};
    struct pmc_error err = {};
    struct monitor *mon = monitor_open(&cfg, &err);
    ASSERT_NE(mon, nullptr) << err.text;
    const double start = 1700000000.123456; // 2023-11-14 22:13:20 UTC
    monitor_event_at(mon, WF_TASK_EXECUTE, "t1", 7, 0, start);
    monitor_close(mon);
    std::vector<std::string> l = lines(path("jobstate.log"));
    ASSERT_EQ(l.size(), 1u);
    EXPECT_EQ(l[0], "1700000000.123456 t1 EXECUTE 7.0 - - 7");
    time_t sec = (time_t)start;
    struct tm tm;
    localtime_r(&sec, &tm);
    char date[32];
    strftime(date, sizeof date, "%m/%d/%y %H:%M:%S", &tm);
    std::vector<std::string> d = lines(dag_ + ".dagman.out");
    ASSERT_EQ(d.size(), 1u);
    EXPECT_EQ(d[0], std::string(date) + " Event: ULOG_EXECUTE for Condor Node t1 (7.0)");
}

// A monitor that failed to open is NULL: every call is a no-op, never a
// crash (the master's end-of-run path writes events whatever happened).
TEST(MonitorNull, EveryCallAcceptsNull)
{
    EXPECT_FALSE(monitor_wants_tasks(nullptr));
    monitor_event(nullptr, WF_WORKFLOW_FAILURE, nullptr, 0, 0);
    monitor_event_at(nullptr, WF_TASK_EXECUTE, "t", 1, 0, 1.0);
    EXPECT_EQ(monitor_add_node(nullptr, "h", 1, 1, 0), 0u);
    monitor_node_changed(nullptr, 0, 1, 1, 1);
    monitor_flush(nullptr);
    monitor_close(nullptr);
}

// A log path that is a directory fails the open, naming the path.
TEST_F(MonitorTest, OpenFailsOnADirectory)
{
    dag_ = path("wf.dag");
    fs::create_directory(dag_ + ".resource");
    struct monitor_config cfg = {dag_.c_str(), false, false, true};
    struct pmc_error err = {};
    EXPECT_EQ(monitor_open(&cfg, &err), nullptr);
    EXPECT_NE(std::string(err.text).find("wf.dag.resource"), std::string::npos) << err.text;
    EXPECT_NE(std::string(err.text).find("Is a directory"), std::string::npos) << err.text;
}

} // namespace
