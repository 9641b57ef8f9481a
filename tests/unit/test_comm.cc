// test_comm.cc - the MPI progress thread's poll interval (engine/transport/comm.h).
//
// comm__idle_cap_us() bounds how late the progress thread sees a message
// that ends a quiet spell: 100 us while traffic is recent, then 10 ms, then
// 1/50 of the quiet time up to 100 ms.  comm__sleep_us(): 100 ms whatever
// the interval when the peers ring a doorbell (rung).  The MPI side of comm.c runs in the
// integration tests (several ranks under mpiexec).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>

#include "engine/transport/comm.h"

namespace
{
constexpr uint64_t kMs = 1000000; // ns

TEST(CommIdleCap, ShortWhileTrafficIsRecent)
{
    EXPECT_EQ(comm__idle_cap_us(0), 100);
    EXPECT_EQ(comm__idle_cap_us(5 * kMs - 1), 100);
}

TEST(CommIdleCap, TenMillisecondsForTheFirstHalfSecond)
{
    EXPECT_EQ(comm__idle_cap_us(5 * kMs), 10000);
    EXPECT_EQ(comm__idle_cap_us(100 * kMs), 10000);
    EXPECT_EQ(comm__idle_cap_us(500 * kMs), 10000);
}

TEST(CommIdleCap, AFiftiethOfTheQuietTimeAfterThat)
{
    EXPECT_EQ(comm__idle_cap_us(1000 * kMs), 20000);
    EXPECT_EQ(comm__idle_cap_us(2500 * kMs), 50000);
    EXPECT_EQ(comm__idle_cap_us(5000 * kMs), 100000);
}

TEST(CommIdleCap, AtMostATenthOfASecond)
{
    EXPECT_EQ(comm__idle_cap_us(60000 * kMs), 100000);
    EXPECT_EQ(comm__idle_cap_us(UINT64_MAX), 100000);
}

TEST(CommIdleCap, NeverShrinksAndStaysWithinTwoPercentOfTheQuiet)
{
    long prev = 0;
    for (uint64_t ns = 0; ns < 20000 * kMs; ns += kMs / 4) {
        long cap = comm__idle_cap_us(ns);
        ASSERT_GE(cap, prev) << "at " << ns << " ns";
        ASSERT_LE((uint64_t)cap * 1000, std::max<uint64_t>(10 * kMs, ns / 50))
            << "at " << ns << " ns";
        prev = cap;
    }
}
TEST(CommSleep, RungPollsOnlyAsASafetyNet)
{
    // peers that ring need no polls for their answers, nor the 10 ms ones
    // of the first half second: the longest cap whatever the interval
    for (long idle : {20L, 100L, 10000L, 100000L})
        EXPECT_EQ(comm__sleep_us(true, idle), 100000) << "after " << idle << " us";
    // not rung: the poll interval, whatever it is
    for (long idle : {20L, 100L, 10000L})
        EXPECT_EQ(comm__sleep_us(false, idle), idle);
}
} // namespace
