// test_records.cc - unit tests of io/records.h (COMPAT.md "Output records").
//
// The exact cluster-task line with and without a Pegasus id and the exact
// cluster-summary line (whole string compared, start= checked separately with
// a pattern for ISO 8601 local time with milliseconds and a ±HH:MM offset);
// ']' and '"' replaced in every free-text value; snprintf-style length and
// truncation; records_iso_time against known epochs in fixed time zones,
// milliseconds rounded to nearest (0.734 stays .734 although the double is
// 0.73399996...) and never printed as 1000.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "io/records.h"

namespace
{

// ISO 8601 local time with milliseconds and a numeric offset, checked like a
// regex: '9' is any digit, '+' is '+' or '-', anything else is itself.
bool is_iso_time(const std::string &s)
{
    const std::string shape = "9999-99-99T99:99:99.999+99:99";
    if (s.size() != shape.size())
        return false;
    for (size_t i = 0; i < s.size(); i++) {
        char c = s[i], k = shape[i];
        bool ok = k == '9' ? (c >= '0' && c <= '9') : k == '+' ? (c == '+' || c == '-') : c == k;
        if (!ok)
            return false;
    }
    return true;
}

// Every test runs with a fixed zone; the previous TZ is restored afterwards.
class RecordsTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        const char *tz = getenv("TZ");
        had_tz_ = tz != nullptr;
        if (tz)
            old_tz_ = tz;
        set_tz("America/Los_Angeles");
    }
    void TearDown() override
    {
        if (had_tz_)
            setenv("TZ", old_tz_.c_str(), 1);
        else
            unsetenv("TZ");
        tzset();
    }
    static void set_tz(const char *tz)
    {
        setenv("TZ", tz, 1);
        tzset();
    }
    static std::string iso(double t)
    {
        char buf[64];
        memset(buf, 'X', sizeof buf);
        size_t n = records_iso_time(t, buf, sizeof buf);
        EXPECT_EQ(n, strlen(buf));
        return std::string(buf);
    }

    bool had_tz_ = false;
    std::string old_tz_;
};

// Split a record at its start="..." value: returns the line with the value
// replaced by "@", and the value itself in *start.
std::string cut_start(const std::string &line, std::string *start)
{
    const std::string key = "start=\"";
    size_t a = line.find(key);
    if (a == std::string::npos)
        return line;
    a += key.size();
    size_t b = line.find('"', a);
    if (b == std::string::npos)
        return line;
    *start = line.substr(a, b - a);
    return line.substr(0, a) + "@" + line.substr(b);
}

struct task_record sample_task()
{
    struct task_record r = {};
    r.pegasus_id = nullptr;
    r.name = "ID000001";
    r.start = 1348605682.734;
    r.duration = 1.2344;
    r.status = 256;
    r.app = "/bin/echo";
    r.hostname = "node1";
    r.slot = 3;
    r.cpus = 2;
    r.memory_mb = 512;
    return r;
}

// A record formatted by fmt (records_format_task or _summary) into a buffer
// that is large enough, checking the returned length.
template <typename Record>
std::string format_with(size_t (*fmt)(char *, size_t, const Record *), const Record &r)
{
    char buf[4096];
    size_t n = fmt(buf, sizeof buf, &r);
    EXPECT_LT(n, sizeof buf);
    EXPECT_EQ(n, strlen(buf));
    return std::string(buf);
}

std::string format_task(const struct task_record &r)
{
    return format_with(records_format_task, r);
}

std::string format_summary(const struct summary_record &s)
{
    return format_with(records_format_summary, s);
}

TEST(RecordsHelper, IsoPatternRejectsMalformed)
{
    EXPECT_TRUE(is_iso_time("2012-09-25T13:41:22.734-07:00"));
    EXPECT_TRUE(is_iso_time("2012-09-25T13:41:22.734+05:30"));
    EXPECT_FALSE(is_iso_time("2012-09-25T13:41:22.1000-07:00"));
    EXPECT_FALSE(is_iso_time("2012-09-25T13:41:22.734Z"));
    EXPECT_FALSE(is_iso_time("2012-09-25 13:41:22.734-07:00"));
    EXPECT_FALSE(is_iso_time("2012-09-25T13:41:22.734-0700"));
}

TEST_F(RecordsTest, TaskLineWithoutPegasusId)
{
    struct task_record r = sample_task();
    std::string start;
    std::string line = cut_start(format_task(r), &start);
    EXPECT_EQ(line, "[cluster-task name=ID000001, start=\"@\", duration=1.234, status=256, "
                    "app=\"/bin/echo\", hostname=\"node1\", slot=3, cpus=2, memory=512]\n");
    EXPECT_TRUE(is_iso_time(start)) << start;
    EXPECT_EQ(start.substr(0, 19), "2012-09-25T13:41:22") << start; // value: IsoTime tests
}

TEST_F(RecordsTest, TaskLineEmptyIdMeansNoIdField)
{
    struct task_record r = sample_task();
    r.pegasus_id = "";
    std::string start;
    std::string line = cut_start(format_task(r), &start);
    EXPECT_EQ(line.rfind("[cluster-task name=ID000001, start=", 0), 0u) << line;
    EXPECT_EQ(line.find("id="), std::string::npos) << line;
}

TEST_F(RecordsTest, TaskLineWithPegasusId)
{
    struct task_record r = sample_task();
    r.pegasus_id = "17";
    r.status = 0;
    r.duration = 5.0;
    r.slot = 0;
    r.cpus = 1;
    r.memory_mb = 0;
    std::string start;
    std::string line = cut_start(format_task(r), &start);
    EXPECT_EQ(line, "[cluster-task id=17, name=ID000001, start=\"@\", duration=5.000, status=0, "
                    "app=\"/bin/echo\", hostname=\"node1\", slot=0, cpus=1, memory=0]\n");
    EXPECT_TRUE(is_iso_time(start)) << start;
}

TEST_F(RecordsTest, TaskLineIsOneLineStartingAtColumnZero)
{
    std::string line = format_task(sample_task());
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.front(), '[');
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1);
    EXPECT_EQ(line[line.size() - 2], ']');
}

// The summary line of s, its start= value cut out and compared alone.
void expect_summary(const struct summary_record &s, const std::string &want_line,
                    const std::string &want_start)
{
    std::string start;
    std::string line = cut_start(format_summary(s), &start);
    EXPECT_EQ(line, want_line);
    EXPECT_TRUE(is_iso_time(start)) << start;
    EXPECT_EQ(start, want_start);
}

// The fields in the order of the line: failed, tasks, submitted, succeeded,
// failed_tasks, extra, start, duration, pid, app, runtime, slots, cpus.
TEST_F(RecordsTest, SummaryLineOk)
{
    expect_summary(
        {false, 4, 5, 4, 0, 1, 1348605682.0, 5.0, 123, "/path/pmc-hybrid", 3.2104, 2, 8, 0},
        "[cluster-summary stat=\"ok\", tasks=4, submitted=5, succeeded=4, failed=0, "
        "extra=1, start=\"@\", duration=5.000, pid=123, app=\"/path/pmc-hybrid\", "
        "runtime=3.210, slots=2, cpus=8]\n",
        "2012-09-25T13:41:22.000-07:00");
}

TEST_F(RecordsTest, SummaryLineFailed)
{
    expect_summary({true, 10, 7, 3, 2, 0, 1348605682.5, 61.25, 4242, "pmc-hybrid", 0.0, 1, 1, 0},
                   "[cluster-summary stat=\"failed\", tasks=10, submitted=7, succeeded=3, "
                   "failed=2, extra=0, start=\"@\", duration=61.250, pid=4242, "
                   "app=\"pmc-hybrid\", runtime=0.000, slots=1, cpus=1]\n",
                   "2012-09-25T13:41:22.500-07:00");
}

TEST_F(RecordsTest, BracketAndQuoteReplacedInTaskValues)
{
    struct task_record r = sample_task();
    r.pegasus_id = "1]\"2";
    r.name = "bad]name\"x";
    r.app = "/opt/a]b\"c";
    r.hostname = "h\"o]st";
    std::string line = format_task(r);
    std::string start;
    std::string cut = cut_start(line, &start);
    EXPECT_EQ(cut, "[cluster-task id=1__2, name=bad_name_x, start=\"@\", duration=1.234, "
                   "status=256, app=\"/opt/a_b_c\", hostname=\"h_o_st\", slot=3, cpus=2, "
                   "memory=512]\n");
    // A reader splitting on ']' sees exactly one record end.
    EXPECT_EQ(line.find(']'), line.size() - 2) << line;
}

// gpus= is a pmc-hybrid addition: only tasks that asked for GPUs and runs
// whose hosts have GPUs carry it, last, so PMC's records stay as they were.
TEST_F(RecordsTest, GpusFieldOnlyWhenThereAreGpus)
{
    struct task_record r = sample_task();
    EXPECT_EQ(format_task(r).find("gpus="), std::string::npos);
    r.gpus = 2;
    std::string line = format_task(r);
    EXPECT_NE(line.find(", memory=512, gpus=2]\n"), std::string::npos) << line;
    struct summary_record s = {};
    s.cpus = s.slots = 8;
    EXPECT_EQ(format_summary(s).find("gpus="), std::string::npos);
    s.gpus = 4;
    line = format_summary(s);
    EXPECT_NE(line.find(", slots=8, cpus=8, gpus=4]\n"), std::string::npos) << line;
}

TEST_F(RecordsTest, BracketAndQuoteReplacedInSummaryApp)
{
    struct summary_record s = {};
    s.app = "/x/\"pmc]\"";
    std::string line = format_summary(s);
    EXPECT_NE(line.find("app=\"/x/_pmc__\","), std::string::npos) << line;
    EXPECT_EQ(line.find(']'), line.size() - 2) << line;
}

TEST_F(RecordsTest, FormatReturnsNeededLengthWhenCut)
{
    struct task_record r = sample_task();
    std::string full = format_task(r);
    char small[32];
    memset(small, 'X', sizeof small);
    size_t n = records_format_task(small, sizeof small, &r);
    EXPECT_EQ(n, full.size());
    EXPECT_EQ(std::string(small), full.substr(0, sizeof small - 1));

    struct summary_record s = {};
    s.app = "a";
    std::string sfull = format_summary(s);
    n = records_format_summary(small, sizeof small, &s);
    EXPECT_EQ(n, sfull.size());
    EXPECT_EQ(std::string(small), sfull.substr(0, sizeof small - 1));
}

TEST_F(RecordsTest, IsoTimeKnownEpochLosAngeles)
{
    EXPECT_EQ(iso(1348605682.734), "2012-09-25T13:41:22.734-07:00"); // PDT
    EXPECT_EQ(iso(1348605682.0), "2012-09-25T13:41:22.000-07:00");
    EXPECT_EQ(iso(1356048000.25), "2012-12-20T16:00:00.250-08:00"); // PST
}

TEST_F(RecordsTest, IsoTimeOtherZones)
{
    set_tz("UTC");
    EXPECT_EQ(iso(1348605682.734), "2012-09-25T20:41:22.734+00:00");
    set_tz("America/New_York");
    EXPECT_EQ(iso(1348605682.734), "2012-09-25T16:41:22.734-04:00"); // the manual's example
    set_tz("Asia/Kolkata");
    EXPECT_EQ(iso(1348605682.0), "2012-09-26T02:11:22.000+05:30");
    set_tz("America/St_Johns");
    EXPECT_EQ(iso(1348605682.0), "2012-09-25T18:11:22.000-02:30");
}

// Every whole millisecond of a second prints as itself, although most of
// them are not exact in binary (x.734 is stored as x.73399996...).
TEST_F(RecordsTest, IsoTimeEveryMillisecondExact)
{
    const double base = 1348605682.0;
    int wrong = 0;
    for (int ms = 0; ms < 1000; ms++) {
        char want[8];
        snprintf(want, sizeof want, ".%03d-", ms);
        std::string got = iso(base + ms / 1000.0);
        if (got.find(want) != 19) {
            if (++wrong <= 5)
                ADD_FAILURE() << "ms " << ms << " printed as " << got;
        }
    }
    EXPECT_EQ(wrong, 0) << "milliseconds printed wrong for " << wrong << " of 1000 values";
}

// Just below a whole second: never ".1000"; rounding either carries into the
// next second (23.000) or stays at .999, and the result is well-formed.
TEST_F(RecordsTest, IsoTimeNeverPrintsThousandMilliseconds)
{
    for (double frac : {0.9995, 0.9999, 0.99999999}) {
        std::string got = iso(1348605682.0 + frac);
        EXPECT_TRUE(is_iso_time(got)) << got;
        EXPECT_EQ(got.find("1000"), std::string::npos) << got;
        EXPECT_TRUE(got == "2012-09-25T13:41:22.999-07:00" ||
                    got == "2012-09-25T13:41:23.000-07:00")
            << frac << " -> " << got;
    }
}

// Rounding up across a minute, hour and day boundary keeps the fields
// consistent (no "13:41:60" or "24:00").
TEST_F(RecordsTest, IsoTimeCarryAcrossDay)
{
    set_tz("UTC");
    std::string got = iso(1348617599.9999); // 2012-09-25T23:59:59.9999Z
    EXPECT_TRUE(got == "2012-09-25T23:59:59.999+00:00" || got == "2012-09-26T00:00:00.000+00:00")
        << got;
}

TEST_F(RecordsTest, IsoTimeFitsDocumentedBuffer)
{
    char buf[32];
    size_t n = records_iso_time(1348605682.734, buf, sizeof buf);
    EXPECT_LT(n, sizeof buf);
    EXPECT_EQ(n, strlen(buf));
    EXPECT_TRUE(is_iso_time(buf)) << buf;
}

} // namespace
