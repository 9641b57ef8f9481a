// test_scan.cc - unit tests of io/scan.h, the white space of the line
// formats, and of io/clock.h.
//
// scan: exactly ' ', \t, \v, \f and \r are white space (all 256 byte values
// checked; '\n' and NUL are not); skip, word end and trim stop at the range
// ends without reading past them (ranges cut out of a longer buffer); an
// empty range.
// clock: the monotonic clocks agree with each other and do not go back;
// pmc_mono_after_us() is normalised (tv_nsec < 10^9) and lies usec ahead,
// also across a second boundary and for whole seconds; pmc_epoch_s() is
// time(2).
#include <gtest/gtest.h>

#include <cmath>
#include <ctime>
#include <string>

#include "io/clock.h"
#include "io/scan.h"

namespace
{

TEST(Scan, WhiteSpaceIsExactlyTheFiveBytes)
{
    for (int c = 0; c < 256; c++) {
        bool want = c == ' ' || c == '\t' || c == '\v' || c == '\f' || c == '\r';
        EXPECT_EQ(scan_is_space((char)c), want) << "byte " << c;
    }
}

TEST(Scan, SkipAndWordEndStayInTheRange)
{
    std::string line = " \t DONE\vname \r\nNEXT";
    const char *s = line.data(), *e = s + line.find('\n');
    const char *kw = scan_skip_space(s, e);
    EXPECT_EQ(kw - s, 3);
    const char *kw_end = scan_word_end(kw, e);
    EXPECT_EQ(std::string(kw, kw_end), "DONE");
    const char *name = scan_skip_space(kw_end, e);
    const char *name_end = scan_word_end(name, e);
    EXPECT_EQ(std::string(name, name_end), "name");
    EXPECT_EQ(scan_skip_space(name_end, e), e) << "\\n is not white space: the range ends first";
    // a word running to the end of the range stops there, not at the buffer's
    EXPECT_EQ(scan_word_end(s + line.find("NEXT"), s + line.find("NEXT") + 2) - s,
              (long)line.find("NEXT") + 2);
}

TEST(Scan, TrimEndAndEmptyRanges)
{
    std::string line = "  TASK a  \t\r";
    const char *s = line.data(), *e = s + line.size();
    EXPECT_EQ(std::string(s, scan_trim_end(s, e)), "  TASK a");
    std::string blank = " \t ";
    EXPECT_EQ(scan_trim_end(blank.data(), blank.data() + blank.size()), blank.data());
    EXPECT_EQ(scan_skip_space(blank.data(), blank.data() + blank.size()),
              blank.data() + blank.size());
    EXPECT_EQ(scan_skip_space(s, s), s);
    EXPECT_EQ(scan_word_end(s, s), s);
    EXPECT_EQ(scan_trim_end(s, s), s);
}

TEST(Clock, MonotonicClocksAgreeAndDoNotGoBack)
{
    uint64_t ns0 = pmc_mono_ns();
    double s0 = pmc_mono_s();
    int64_t ms0 = pmc_mono_ms();
    uint64_t ns1 = pmc_mono_ns();
    EXPECT_LE(ns0, ns1);
    EXPECT_GE(s0 * 1e9, (double)ns0 - 1e3); // double rounding: a microsecond
    EXPECT_LE(s0 * 1e9, (double)ns1 + 1e3);
    EXPECT_GE(ms0, (int64_t)(ns0 / 1000000));
    EXPECT_LE(ms0, (int64_t)(ns1 / 1000000));
}

TEST(Clock, MonoAfterIsNormalisedAndAhead)
{
    for (long usec : {0L, 1L, 999999L, 1000000L, 1500000L, 50000L, 3600L * 1000000L}) {
        uint64_t before = pmc_mono_ns();
        struct timespec ts = pmc_mono_after_us(usec);
        uint64_t after = pmc_mono_ns();
        EXPECT_GE(ts.tv_nsec, 0) << usec;
        EXPECT_LT(ts.tv_nsec, 1000000000L) << usec;
        uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
        EXPECT_GE(at, before + (uint64_t)usec * 1000u) << usec;
        EXPECT_LE(at, after + (uint64_t)usec * 1000u) << usec;
    }
}

TEST(Clock, EpochIsTheSystemTime)
{
    time_t t0 = time(nullptr);
    double now = pmc_epoch_s();
    time_t t1 = time(nullptr);
    EXPECT_GE(now, (double)t0);
    EXPECT_LT(now, (double)t1 + 2); // time(2) may read a coarse clock, a tick behind
}

} // namespace
