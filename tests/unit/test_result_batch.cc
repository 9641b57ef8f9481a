// test_result_batch.cc - unit tests of sched/result_batch.h, the results
// batching rule shared by the node agent and the simulator.
//
// Each branch of result_batch_wait() from one busy node's state (4 CPUs, a
// full round queued, far above the refill mark, 3 leaf results waiting
// 10 ms): nothing waiting; a full batch and one short of it; nothing left to
// start and the send_below knob; ending; send_now; the refill mark (at it,
// one above it, already sent, knob off, notices alone); the delay mix (less
// than a round waiting, a full round with and without results that release
// children); the wait counting down to 0 at and past the delay; notices
// alone gathering.  The defaults against the constants, and
// result_batch_low_water() at the refill mark of small and large nodes.
#include <gtest/gtest.h>

#include "sched/placement.h"
#include "sched/result_batch.h"

namespace
{

constexpr double kEps = 1e-12;

class ResultBatch : public ::testing::Test
{
  protected:
    result_batch_params p = result_batch_defaults();
    // 4 CPUs: refill mark 4 + 64 / 2 = 36.
    result_batch_state st = {.results = 3,
                             .notices = 0,
                             .releases = false,
                             .waiting = 10,
                             .load = 100,
                             .cpus = 4,
                             .ending = false,
                             .send_now = false,
                             .low_water_sent = false,
                             .waited = 0.010};
    double wait() const
    {
        return result_batch_wait(&p, &st);
    }
};

TEST_F(ResultBatch, DefaultsAreTheEngineConstants)
{
    EXPECT_EQ(p.batch, 32u);
    EXPECT_EQ(p.batch, (uint32_t)RESULT_BATCH);
    EXPECT_NEAR(p.delay, RESULT_DELAY_MS * 1e-3, kEps);
    EXPECT_NEAR(p.delay_busy, RESULT_DELAY_BUSY_MS * 1e-3, kEps);
    EXPECT_NEAR(p.delay_leaf, RESULT_DELAY_LEAF_MS * 1e-3, kEps);
    EXPECT_NEAR(p.delay, 0.002, kEps);
    EXPECT_NEAR(p.delay_busy, 0.040, kEps);
    EXPECT_NEAR(p.delay_leaf, 0.100, kEps);
    EXPECT_EQ(p.send_below, 1u);
    EXPECT_TRUE(p.low_water);
}

TEST_F(ResultBatch, BusyLeafResultsGatherTheLeafDelay)
{
    EXPECT_NEAR(wait(), 0.100 - 0.010, kEps);
}

TEST_F(ResultBatch, NothingWaitingIsNegative)
{
    st.results = 0;
    EXPECT_LT(wait(), 0);
    st.send_now = st.ending = true; // nothing to send all the same
    st.waiting = 0;
    EXPECT_LT(wait(), 0);
}

TEST_F(ResultBatch, AFullBatchGoesAtOnce)
{
    st.results = 31;
    EXPECT_GT(wait(), 0);
    st.results = 32;
    EXPECT_EQ(wait(), 0);
    st.results = 40;
    EXPECT_EQ(wait(), 0);
    p.batch = 8; // pmc-sim --result-batch
    st.results = 8;
    EXPECT_EQ(wait(), 0);
    st.results = 7;
    EXPECT_GT(wait(), 0);
}

TEST_F(ResultBatch, NothingLeftToStartGoesAtOnce)
{
    st.waited = 0.001;
    st.waiting = 1;
    EXPECT_GT(wait(), 0);
    st.waiting = 0;
    EXPECT_EQ(wait(), 0);
    st.results = 0; // start notices alone too
    st.notices = 1;
    EXPECT_EQ(wait(), 0);
}

TEST_F(ResultBatch, SendBelowIsTheSimulatorsKnob)
{
    st.waited = 0.001;
    p.send_below = 5; // pmc-sim --flush-below 5
    st.waiting = 4;
    EXPECT_EQ(wait(), 0);
    st.waiting = 5;
    EXPECT_GT(wait(), 0);
    p.send_below = 0; // never for an empty queue
    st.waiting = 0;
    EXPECT_GT(wait(), 0);
}

TEST_F(ResultBatch, EndingGoesAtOnce)
{
    st.ending = true;
    EXPECT_EQ(wait(), 0);
}

TEST_F(ResultBatch, SendNowGoesAtOnce)
{
    st.send_now = true;
    EXPECT_EQ(wait(), 0);
}

TEST_F(ResultBatch, TheRefillMarkSendsOnce)
{
    st.load = placement_refill_mark(4) + 1; // 37
    EXPECT_GT(wait(), 0);
    st.load = placement_refill_mark(4); // 36: at the mark
    EXPECT_EQ(wait(), 0);
    st.load = 0;
    EXPECT_EQ(wait(), 0);
    st.low_water_sent = true; // went already this refill
    EXPECT_NEAR(wait(), 0.090, kEps);
    st.low_water_sent = false;
    p.low_water = false; // the knob off
    EXPECT_NEAR(wait(), 0.090, kEps);
}

TEST_F(ResultBatch, TheRefillMarkWaitsForResults)
{
    st.load = 10;
    st.results = 0;
    st.notices = 2; // notices alone do not refill the node
    EXPECT_NEAR(wait(), 0.090, kEps);
}

TEST_F(ResultBatch, LessThanARoundWaitingGathersTheShortDelay)
{
    st.waiting = 3; // < 4 CPUs
    st.waited = 0.0005;
    EXPECT_NEAR(wait(), 0.002 - 0.0005, kEps);
    st.releases = true;
    EXPECT_NEAR(wait(), 0.002 - 0.0005, kEps);
    p.delay = 0.0001; // pmc-sim --result-delay-us 100
    EXPECT_EQ(wait(), 0);
}

TEST_F(ResultBatch, AFullRoundWithChildrenGathersTheBusyDelay)
{
    st.waiting = 4; // one per CPU
    st.releases = true;
    EXPECT_NEAR(wait(), 0.040 - 0.010, kEps);
    st.releases = false;
    EXPECT_NEAR(wait(), 0.100 - 0.010, kEps);
}

TEST_F(ResultBatch, TheWaitEndsAtTheDelay)
{
    st.waited = 0.0999;
    EXPECT_NEAR(wait(), 0.0001, kEps);
    st.waited = 0.100;
    EXPECT_EQ(wait(), 0);
    st.waited = 5.0; // a result seen late counts from its task's end
    EXPECT_EQ(wait(), 0);
    st.releases = true;
    st.waited = 0.040;
    EXPECT_EQ(wait(), 0);
}

TEST_F(ResultBatch, NoticesAloneGather)
{
    st.results = 0;
    st.notices = 5;
    EXPECT_NEAR(wait(), 0.090, kEps);
    st.notices = 40; // RESULT_BATCH counts results only
    EXPECT_NEAR(wait(), 0.090, kEps);
}

TEST(ResultBatchLowWater, AtTheRefillMark)
{
    // W = max(64, cpus); mark = cpus + W / 2.
    EXPECT_TRUE(result_batch_low_water(36, 4));
    EXPECT_FALSE(result_batch_low_water(37, 4));
    EXPECT_TRUE(result_batch_low_water(96, 64));
    EXPECT_FALSE(result_batch_low_water(97, 64));
    EXPECT_TRUE(result_batch_low_water(192, 128));
    EXPECT_FALSE(result_batch_low_water(193, 128));
    EXPECT_TRUE(result_batch_low_water(0, 1));
}

} // namespace
