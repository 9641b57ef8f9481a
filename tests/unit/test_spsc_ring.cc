// test_spsc_ring.cc - unit and stress tests of sched/spsc_ring.h.
//
// Single thread: sizes refused, capacity rounding, FIFO order of whole
// records, full and empty (a failed push or pop changes nothing), a small
// ring wrapped many times against a model.  Two threads: a producer pushes
// numbered records (the number and its complement in every field, so a torn
// copy shows) through a 4-record ring, so it is full and empty over and
// over; the consumer checks every record arrives once, whole and in order.
// Run under -fsanitize=thread too (smaller counts there).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <thread>

#include "sched/spsc_ring.h"
#include "testutil.h"

namespace
{

#ifdef PMC_TEST_TSAN
constexpr uint32_t kRecords = 200000;
#else
constexpr uint32_t kRecords = 2000000;
#endif

struct Record {
    uint64_t n;
    uint64_t not_n;
    uint32_t low, high;
};

Record make(uint64_t n)
{
    return Record{n, ~n, static_cast<uint32_t>(n), static_cast<uint32_t>(n >> 32)};
}

TEST(SpscRing, RefusesBadSizes)
{
    errno = 0;
    EXPECT_EQ(spsc_ring_create(SPSC_RING_MAX + 1, 8), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(spsc_ring_create(4, 0), nullptr);
    EXPECT_EQ(errno, EINVAL);
    errno = 0;
    EXPECT_EQ(spsc_ring_create(4, 4097), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(SpscRing, RoundsCapacityUp)
{
    struct spsc_ring *r = spsc_ring_create(0, 4);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(spsc_ring_capacity(r), 2u);
    spsc_ring_destroy(r);
    r = spsc_ring_create(5, 4);
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(spsc_ring_capacity(r), 8u);
    spsc_ring_destroy(r);
}

TEST(SpscRing, FullAndEmptyChangeNothing)
{
    struct spsc_ring *r = spsc_ring_create(4, sizeof(Record));
    ASSERT_NE(r, nullptr);
    Record out = make(99);
    EXPECT_FALSE(spsc_ring_pop(r, &out));
    EXPECT_EQ(out.n, 99u);
    for (uint64_t i = 0; i < 4; i++) {
        Record in = make(i);
        EXPECT_TRUE(spsc_ring_push(r, &in));
    }
    Record extra = make(1000);
    errno = 0;
    EXPECT_FALSE(spsc_ring_push(r, &extra));
    EXPECT_EQ(errno, ENOBUFS);
    EXPECT_EQ(spsc_ring_size(r), 4u);
    for (uint64_t i = 0; i < 4; i++) {
        ASSERT_TRUE(spsc_ring_pop(r, &out));
        EXPECT_EQ(out.n, i);
        EXPECT_EQ(out.not_n, ~i);
    }
    EXPECT_FALSE(spsc_ring_pop(r, &out));
    EXPECT_EQ(spsc_ring_size(r), 0u);
    spsc_ring_destroy(r);
}

TEST(SpscRing, WrapsAgainstAModel)
{
    struct spsc_ring *r = spsc_ring_create(8, sizeof(Record));
    ASSERT_NE(r, nullptr);
    std::deque<uint64_t> model;
    uint64_t next = 0;
    uint32_t state = 12345;
    for (int step = 0; step < 1000000; step++) {
        state = state * 1103515245u + 12345u;
        if ((state >> 16) % 3 != 0) {
            Record in = make(next);
            bool ok = spsc_ring_push(r, &in);
            ASSERT_EQ(ok, model.size() < 8);
            if (ok)
                model.push_back(next++);
        } else {
            Record out;
            bool ok = spsc_ring_pop(r, &out);
            ASSERT_EQ(ok, !model.empty());
            if (ok) {
                ASSERT_EQ(out.n, model.front());
                model.pop_front();
            }
        }
        ASSERT_EQ(spsc_ring_size(r), model.size());
    }
    spsc_ring_destroy(r);
}

TEST(SpscRing, TwoThreadsDeliverEveryRecordOnceInOrder)
{
    struct spsc_ring *r = spsc_ring_create(4, sizeof(Record));
    ASSERT_NE(r, nullptr);
    std::thread producer([r] {
        for (uint64_t i = 0; i < kRecords;) {
            Record in = make(i);
            if (spsc_ring_push(r, &in))
                i++;
            else
                std::this_thread::yield();
        }
    });
    uint64_t expect = 0, torn = 0, wrong = 0;
    while (expect < kRecords) {
        Record out;
        if (!spsc_ring_pop(r, &out)) {
            std::this_thread::yield();
            continue;
        }
        if (out.not_n != ~out.n || out.low != static_cast<uint32_t>(out.n) ||
            out.high != static_cast<uint32_t>(out.n >> 32))
            torn++;
        if (out.n != expect)
            wrong++;
        expect++;
    }
    producer.join();
    EXPECT_EQ(torn, 0u);
    EXPECT_EQ(wrong, 0u);
    Record out;
    EXPECT_FALSE(spsc_ring_pop(r, &out));
    spsc_ring_destroy(r);
}

} // namespace
