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

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

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

// A plain name's ']' and '"' become '_' (PMC's records); an instance's
// "[i]" stays whole, its array's name cleaned as a plain one.
TEST_F(RecordsTest, InstanceNameKeepsItsBrackets)
{
    struct task_record r = sample_task();
    r.name = "job[3]";
    EXPECT_EQ(format_task(r).rfind("[cluster-task name=job[3_, start=", 0), 0u);
    r.instance = true;
    r.name = "sim[42]";
    EXPECT_EQ(format_task(r).rfind("[cluster-task name=sim[42], start=", 0), 0u);
    r.name = "s\"m[7]";
    EXPECT_EQ(format_task(r).rfind("[cluster-task name=s_m[7], start=", 0), 0u);
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

// The task record as snprintf() printed it before the record was put
// together by hand (io/records.c): the reference the hand-made one must equal
// byte for byte, limits of the old fixed buffers included.
std::string clean_ref(const char *s, size_t max)
{
    std::string out;
    for (size_t i = 0; s && s[i] && i < max; i++)
        out += (s[i] == ']' || s[i] == '"') ? '_' : s[i];
    return out;
}

std::string task_ref(const struct task_record &r)
{
    char date[40];
    records_iso_time(r.start, date, sizeof date);
    std::string id;
    if (r.pegasus_id && r.pegasus_id[0])
        id = "id=" + clean_ref(r.pegasus_id, 99) + ", ";
    char gpus[24] = "";
    if (r.gpus)
        snprintf(gpus, sizeof gpus, ", gpus=%u", r.gpus);
    std::string name = clean_ref(r.name, 1023), app = clean_ref(r.app, 1023),
                host = clean_ref(r.hostname, 255);
    std::vector<char> buf(4096);
    int n = snprintf(buf.data(), buf.size(),
                     "[cluster-task %sname=%s, start=\"%s\", duration=%.3f, status=%d, "
                     "app=\"%s\", hostname=\"%s\", slot=%d, cpus=%u, memory=%u%s]\n",
                     id.c_str(), name.c_str(), date, r.duration, r.status, app.c_str(),
                     host.c_str(), r.slot, r.cpus, r.memory_mb, gpus);
    return std::string(buf.data(), (size_t)n);
}

// Durations the printf rounding is easy to get wrong on: exact binary ties
// (k/16 s: 0.0625 prints 0.062, 0.1875 prints 0.188), doubles just beside a
// tie (the nearest double to 0.0005 is above it: 0.001), -0.0, negatives,
// values near 2^52 ms, and a million random ones over many magnitudes.
TEST_F(RecordsTest, TaskLineEqualsTheSnprintfRecordForEveryDuration)
{
    struct task_record r = sample_task();
    std::vector<double> ds = {
        0.0,    -0.0,   0.0625,  0.1875,   1.0625,   2.5625, 0.0005,
        0.0015, 0.0025, -0.0005, -0.0001,  1e-300,   4.5e12, 4.503599627370495e12,
        4.6e12, 1e20,   -1e20,   123.4565, 999.9995, 0.9995};
    for (int k = 0; k < 1024; k++)
        ds.push_back(k / 16.0 + 1.0 / 2048 * (k % 3));
    unsigned seed = 12345;
    for (int i = 0; i < 1000000; i++) {
        seed = seed * 1103515245u + 12345u;
        double m = (double)(seed >> 8) / (double)(1u << 24); // [0, 1)
        seed = seed * 1103515245u + 12345u;
        int e = (int)(seed >> 16) % 16 - 6; // 1e-6 .. 1e9
        ds.push_back(m * pow(10.0, e) * ((seed & 1) ? -1 : 1));
    }
    size_t bad = 0;
    for (double d : ds) {
        r.duration = d;
        std::string got = format_task(r), want = task_ref(r);
        if (got != want && bad++ < 5)
            ADD_FAILURE() << "duration " << std::hexfloat << d << ": " << got << " vs " << want;
    }
    EXPECT_EQ(bad, 0u);
}

// Every other field: negative status and slot, every optional field, values
// at and past the old buffers' limits (id 99, name and app 1023, host 255).
TEST_F(RecordsTest, TaskLineEqualsTheSnprintfRecordForEveryField)
{
    std::string long_id(150, 'i'), long_name(1500, 'n'), long_app(1100, 'a'), long_host(300, 'h');
    long_name[1022] = ']';
    long_host[254] = '"';
    struct task_record r = sample_task();
    const char *ids[] = {nullptr, "", "ID000001", long_id.c_str()};
    const char *names[] = {"a", long_name.c_str()};
    const char *apps[] = {"", long_app.c_str()};
    const char *hosts[] = {"h", long_host.c_str()};
    int ints[] = {0, 1, -1, 256, 2147483647, -2147483647 - 1};
    uint32_t uints[] = {0, 1, 4294967295u};
    for (const char *id : ids)
        for (const char *name : names)
            for (const char *app : apps)
                for (const char *host : hosts)
                    for (int v : ints)
                        for (uint32_t u : uints) {
                            r.pegasus_id = id, r.name = name, r.app = app, r.hostname = host;
                            r.status = v, r.slot = -(v / 2), r.cpus = u, r.memory_mb = u / 3;
                            r.gpus = u / 7;
                            ASSERT_EQ(format_task(r), task_ref(r));
                        }
}

} // namespace
