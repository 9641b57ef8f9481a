// test_time_limit.cc - the rule of a task's hard time limit
// (engine/exec/time_limit.h).
//
// Checked: a task still launching is looked at again after the recheck
// interval, or after its limit when that is shorter; a started one is due
// at its own start + limit, and is told SIGTERM once that has passed; a
// task in its grace is told SIGKILL; SIGKILL comes --kill-grace after the
// SIGTERM.
#include <gtest/gtest.h>

#include <cstdint>

#include "engine/exec/time_limit.h"

namespace
{

const uint64_t ms = 1000000u;

TEST(TimeLimit, ALaunchNotSeenStartedIsLookedAtAgainSoon)
{
    time_limit_task t{1000, false, 0, false};
    uint64_t due = 0;
    EXPECT_EQ(time_limit_next(&t, 5000 * ms, &due), TIME_LIMIT_LATER);
    EXPECT_EQ(due, 5000 * ms + TIME_LIMIT_RECHECK_MS * ms);
    t.limit_ms = 20; // shorter than the recheck
    EXPECT_EQ(time_limit_next(&t, 5000 * ms, &due), TIME_LIMIT_LATER);
    EXPECT_EQ(due, 5020 * ms);
}

TEST(TimeLimit, AStartedTaskIsDueAtItsOwnStartPlusItsLimit)
{
    time_limit_task t{1000, true, 300 * ms, false};
    uint64_t due = 0;
    EXPECT_EQ(time_limit_next(&t, 1000 * ms, &due), TIME_LIMIT_LATER);
    EXPECT_EQ(due, 1300 * ms);
    EXPECT_EQ(time_limit_next(&t, 1300 * ms, &due), TIME_LIMIT_TERM);
    EXPECT_EQ(time_limit_next(&t, 9000 * ms, &due), TIME_LIMIT_TERM);
}

TEST(TimeLimit, ATaskInItsGraceIsKilledGraceAfterItsTerm)
{
    time_limit_task t{1000, true, 0, true};
    uint64_t due = 0;
    EXPECT_EQ(time_limit_next(&t, 1 * ms, &due), TIME_LIMIT_KILL);
    t.started = false;
    EXPECT_EQ(time_limit_next(&t, 1 * ms, &due), TIME_LIMIT_KILL);
    EXPECT_EQ(time_limit_kill_at(2000 * ms, 1500), 3500 * ms);
}

} // namespace
