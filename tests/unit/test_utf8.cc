// test_utf8.cc - unit tests of io/utf8.h: which byte sequences are valid
// UTF-8 (RFC 3629: ASCII, 2-, 3- and 4-byte forms at their limits; overlong
// forms, surrogates, code points past U+10FFFF, stray continuation bytes and
// cut sequences refused), and utf8_lossy()'s one U+FFFD per bad byte.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "io/utf8.h"

namespace
{

std::string lossy(const std::string &s)
{
    char *c = utf8_lossy(s.c_str());
    std::string r = c ? c : "(null)";
    free(c);
    return r;
}

const std::string R = "\xef\xbf\xbd"; // U+FFFD

TEST(Utf8, ValidFormsAtTheirLimits)
{
    for (const char *s :
         {"", "plain ASCII \x7f", "\xc2\x80", "\xdf\xbf", "caf\xc3\xa9", "\xe0\xa0\x80",
          "\xe2\x82\xac", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
          "\xf0\x9d\x84\x9e", "\xf4\x8f\xbf\xbf"}) {
        EXPECT_TRUE(utf8_valid(s)) << s;
        EXPECT_EQ(lossy(s), s);
    }
}

TEST(Utf8, InvalidFormsAreRefused)
{
    for (const char *s : {"\xff", "\x80", "a\xbfz", "\xc0\x80", "\xc1\xbf", "\xe0\x80\x80",
                          "\xed\xa0\x80", "\xf0\x80\x80\x80", "\xf4\x90\x80\x80",
                          "\xf5\x80\x80\x80", "\xe2\x82", "\xf0\x9d\x84", "\xc3"}) {
        EXPECT_FALSE(utf8_valid(s)) << std::string(s).size() << " bytes";
    }
}

TEST(Utf8, LossyReplacesEachBadByte)
{
    EXPECT_EQ(lossy("u\xff"), "u" + R);
    EXPECT_EQ(lossy("\xed\xa0\x80x"), R + R + R + "x"); // a surrogate: three bad bytes
    EXPECT_EQ(lossy("a\xe2\x82"
                    "b\xe2\x82\xac"),
              "a" + R + R + "b\xe2\x82\xac");
    EXPECT_TRUE(utf8_valid(lossy("\xc0\xaf\xfe\xff\x80").c_str()));
}

} // namespace
