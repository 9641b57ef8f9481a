// test_digits.cc - unit tests of io/digits.h: digits_u64 and digits_i64
// against printf's %llu, %0*llu and %lld at the limits of 64-bit integers,
// at every power of ten and its neighbours, and on pseudo-random values.
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <string>

#include "io/digits.h"

namespace
{

std::string u64(uint64_t v, int width = 1)
{
    char d[DIGITS_MAX], *end = d + sizeof d;
    char *p = digits_u64(v, width, end);
    return std::string(p, end);
}

std::string i64(int64_t v)
{
    char d[DIGITS_MAX], *end = d + sizeof d;
    char *p = digits_i64(v, end);
    return std::string(p, end);
}

std::string printed(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printed(const char *fmt, ...)
{
    char b[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    return b;
}

TEST(Digits, LimitsOf64BitIntegers)
{
    EXPECT_EQ(u64(0), "0");
    EXPECT_EQ(u64(UINT64_MAX), "18446744073709551615");
    EXPECT_EQ(i64(0), "0");
    EXPECT_EQ(i64(-1), "-1");
    EXPECT_EQ(i64(INT64_MAX), "9223372036854775807");
    EXPECT_EQ(i64(INT64_MIN), "-9223372036854775808");
}

TEST(Digits, ZeroPaddedToTheWidth)
{
    EXPECT_EQ(u64(7, 3), "007");
    EXPECT_EQ(u64(0, 2), "00");
    EXPECT_EQ(u64(1234, 2), "1234") << "a width never cuts";
    EXPECT_EQ(u64(5, 20), "00000000000000000005");
}

TEST(Digits, PowersOfTenAndNeighboursAsPrintfPrintsThem)
{
    for (uint64_t p = 1;; p *= 10) {
        for (uint64_t v : {p - 1, p, p + 1}) {
            EXPECT_EQ(u64(v), printed("%" PRIu64, v));
            EXPECT_EQ(u64(v, 4), printed("%04" PRIu64, v));
            EXPECT_EQ(i64(-(int64_t)v), printed("%" PRId64, -(int64_t)v));
        }
        if (p > UINT64_MAX / 10)
            break;
    }
}

TEST(Digits, PseudoRandomValuesAsPrintfPrintsThem)
{
    uint64_t x = 88172645463325252ull; // xorshift64
    for (int k = 0; k < 100000; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint64_t v = x >> (k % 64);
        ASSERT_EQ(u64(v), printed("%" PRIu64, v));
        ASSERT_EQ(i64((int64_t)v), printed("%" PRId64, (int64_t)v));
    }
}

} // namespace
