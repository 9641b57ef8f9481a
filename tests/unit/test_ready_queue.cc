// test_ready_queue.cc - unit tests of sched/ready_queue.h.
//
// Order: larger priority first, FIFO among equals, negative and extreme
// priorities, many priorities created in random order stay sorted.  Deferral:
// the dispatcher pops a bucket and puts some tasks back with rq_push_front in
// reverse order; they must regain their exact places.  Rings: growth while the
// ring is wrapped (pushes and pops interleaved across many doublings, from
// both ends), and rq_size / rq_bucket_size kept consistent throughout.  A
// randomised run is checked against a simple model (one deque per priority).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

#include "sched/ready_queue.h"

namespace
{

struct RqDeleter {
    void operator()(struct ready_queue *q) const
    {
        rq_destroy(q);
    }
};
using RqPtr = std::unique_ptr<struct ready_queue, RqDeleter>;

RqPtr make_rq()
{
    RqPtr q(rq_create());
    EXPECT_NE(q, nullptr);
    return q;
}

// Index of the first (highest-priority) non-empty bucket, or -1.
long first_nonempty(const struct ready_queue *q)
{
    for (size_t b = 0; b < rq_buckets(q); b++)
        if (rq_bucket_size(q, b) > 0)
            return static_cast<long>(b);
    return -1;
}

// Pop everything in dispatch order.
std::vector<uint32_t> drain(struct ready_queue *q)
{
    std::vector<uint32_t> out;
    long b;
    while ((b = first_nonempty(q)) >= 0)
        out.push_back(rq_bucket_pop(q, static_cast<size_t>(b)));
    return out;
}

// The bucket holding priority p, or -1.
long bucket_of(const struct ready_queue *q, int32_t p)
{
    for (size_t b = 0; b < rq_buckets(q); b++)
        if (rq_bucket_priority(q, b) == p)
            return static_cast<long>(b);
    return -1;
}

void expect_buckets_sorted(const struct ready_queue *q)
{
    for (size_t b = 1; b < rq_buckets(q); b++)
        EXPECT_GT(rq_bucket_priority(q, b - 1), rq_bucket_priority(q, b))
            << "buckets " << b - 1 << " and " << b << " out of order";
}

size_t sum_bucket_sizes(const struct ready_queue *q)
{
    size_t n = 0;
    for (size_t b = 0; b < rq_buckets(q); b++)
        n += rq_bucket_size(q, b);
    return n;
}

TEST(ReadyQueue, EmptyQueue)
{
    RqPtr q = make_rq();
    EXPECT_EQ(rq_size(q.get()), 0u);
    EXPECT_EQ(rq_buckets(q.get()), 0u);
    rq_destroy(nullptr);
}

TEST(ReadyQueue, LargerPriorityFirst)
{
    RqPtr q = make_rq();
    ASSERT_EQ(rq_push(q.get(), 1, 0), 0);
    ASSERT_EQ(rq_push(q.get(), 2, 10), 0);
    ASSERT_EQ(rq_push(q.get(), 3, 5), 0);
    ASSERT_EQ(rq_push(q.get(), 4, 20), 0);
    EXPECT_EQ(rq_size(q.get()), 4u);
    ASSERT_EQ(rq_buckets(q.get()), 4u);
    EXPECT_EQ(rq_bucket_priority(q.get(), 0), 20);
    EXPECT_EQ(rq_bucket_priority(q.get(), 1), 10);
    EXPECT_EQ(rq_bucket_priority(q.get(), 2), 5);
    EXPECT_EQ(rq_bucket_priority(q.get(), 3), 0);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{4, 2, 3, 1}));
    EXPECT_EQ(rq_size(q.get()), 0u);
}

TEST(ReadyQueue, FifoAmongEqualPriorities)
{
    RqPtr q = make_rq();
    for (uint32_t t = 0; t < 10; t++)
        ASSERT_EQ(rq_push(q.get(), t, 3), 0);
    for (uint32_t t = 100; t < 105; t++)
        ASSERT_EQ(rq_push(q.get(), t, 7), 0);
    for (uint32_t t = 10; t < 20; t++)
        ASSERT_EQ(rq_push(q.get(), t, 3), 0);
    EXPECT_EQ(rq_buckets(q.get()), 2u);
    std::vector<uint32_t> want = {100, 101, 102, 103, 104};
    for (uint32_t t = 0; t < 20; t++)
        want.push_back(t);
    EXPECT_EQ(drain(q.get()), want);
}

TEST(ReadyQueue, NegativeAndExtremePriorities)
{
    RqPtr q = make_rq();
    ASSERT_EQ(rq_push(q.get(), 1, -1), 0);
    ASSERT_EQ(rq_push(q.get(), 2, INT32_MIN), 0);
    ASSERT_EQ(rq_push(q.get(), 3, 0), 0);
    ASSERT_EQ(rq_push(q.get(), 4, INT32_MAX), 0);
    ASSERT_EQ(rq_push(q.get(), 5, -100), 0);
    ASSERT_EQ(rq_push(q.get(), 6, 1), 0);
    ASSERT_EQ(rq_push(q.get(), 7, -1), 0);
    expect_buckets_sorted(q.get());
    EXPECT_EQ(rq_bucket_priority(q.get(), 0), INT32_MAX);
    EXPECT_EQ(rq_bucket_priority(q.get(), rq_buckets(q.get()) - 1), INT32_MIN);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{4, 6, 3, 1, 7, 5, 2}));
}

TEST(ReadyQueue, TaskIdsKeptWhole)
{
    RqPtr q = make_rq();
    ASSERT_EQ(rq_push(q.get(), UINT32_MAX, 0), 0);
    ASSERT_EQ(rq_push(q.get(), 0, 0), 0);
    ASSERT_EQ(rq_push(q.get(), 0x80000000u, 0), 0);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{UINT32_MAX, 0, 0x80000000u}));
}

// The dispatcher's deferral: pop all of a bucket, fail to place some of the
// tasks, put those back with rq_push_front in reverse order.  They must come
// out again first and in their original relative order, ahead of tasks pushed
// later.
TEST(ReadyQueue, PushFrontRestoresFrontPosition)
{
    RqPtr q = make_rq();
    for (uint32_t t = 0; t < 10; t++)
        ASSERT_EQ(rq_push(q.get(), t, 5), 0);
    ASSERT_EQ(rq_push(q.get(), 50, 1), 0);
    long b = bucket_of(q.get(), 5);
    ASSERT_EQ(b, 0);

    std::vector<uint32_t> popped;
    while (rq_bucket_size(q.get(), 0) > 0)
        popped.push_back(rq_bucket_pop(q.get(), 0));
    ASSERT_EQ(popped.size(), 10u);
    EXPECT_EQ(rq_size(q.get()), 1u);

    // Tasks 1, 4, 5, 8 "fit nowhere": defer them.
    std::vector<uint32_t> deferred = {1, 4, 5, 8};
    for (auto it = deferred.rbegin(); it != deferred.rend(); ++it)
        ASSERT_EQ(rq_push_front(q.get(), *it, 5), 0);
    EXPECT_EQ(rq_size(q.get()), 5u);
    ASSERT_EQ(rq_push(q.get(), 99, 5), 0); // arrives after the deferral
    EXPECT_EQ(rq_bucket_size(q.get(), static_cast<size_t>(bucket_of(q.get(), 5))), 5u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{1, 4, 5, 8, 99, 50}));
}

// Deferral of a partially popped bucket: the remaining tasks stay behind the
// ones put back.
TEST(ReadyQueue, PushFrontInFrontOfRemainingTasks)
{
    RqPtr q = make_rq();
    for (uint32_t t = 0; t < 6; t++)
        ASSERT_EQ(rq_push(q.get(), t, 0), 0);
    uint32_t a = rq_bucket_pop(q.get(), 0);
    uint32_t b = rq_bucket_pop(q.get(), 0);
    uint32_t c = rq_bucket_pop(q.get(), 0);
    ASSERT_EQ(a, 0u);
    ASSERT_EQ(b, 1u);
    ASSERT_EQ(c, 2u);
    ASSERT_EQ(rq_push_front(q.get(), c, 0), 0);
    ASSERT_EQ(rq_push_front(q.get(), a, 0), 0);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{0, 2, 3, 4, 5}));
}

TEST(ReadyQueue, PushFrontCreatesBucketInOrder)
{
    RqPtr q = make_rq();
    ASSERT_EQ(rq_push(q.get(), 1, 10), 0);
    ASSERT_EQ(rq_push(q.get(), 2, -10), 0);
    ASSERT_EQ(rq_push_front(q.get(), 3, 0), 0); // a new priority via push_front
    ASSERT_EQ(rq_push_front(q.get(), 4, 0), 0);
    expect_buckets_sorted(q.get());
    EXPECT_EQ(rq_size(q.get()), 4u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{1, 4, 3, 2}));
}

// Rings grow while wrapped: keep the live window moving forward through the
// ring (pops at the front, pushes at the back) and let it grow by one more
// element per step, so every doubling happens with head != 0.
TEST(ReadyQueue, RingGrowthWithWrapAround)
{
    RqPtr q = make_rq();
    std::deque<uint32_t> model;
    uint32_t next = 0;
    for (int step = 0; step < 20000; step++) {
        for (int i = 0; i < 3; i++) {
            ASSERT_EQ(rq_push(q.get(), next, 42), 0);
            model.push_back(next++);
        }
        for (int i = 0; i < 2; i++) {
            ASSERT_EQ(rq_bucket_pop(q.get(), 0), model.front()) << "step " << step;
            model.pop_front();
        }
        ASSERT_EQ(rq_size(q.get()), model.size());
        ASSERT_EQ(rq_bucket_size(q.get(), 0), model.size());
    }
    EXPECT_EQ(model.size(), 20000u); // grew through 64 .. 32768 slots
    std::vector<uint32_t> rest(model.begin(), model.end());
    EXPECT_EQ(drain(q.get()), rest);
}

// The same from the other end: push_front makes the head run backwards
// through index 0 (wrapping to the top of the ring) across growths.
TEST(ReadyQueue, RingGrowthWithPushFrontWrap)
{
    RqPtr q = make_rq();
    std::deque<uint32_t> model;
    uint32_t next = 0;
    for (int step = 0; step < 10000; step++) {
        ASSERT_EQ(rq_push_front(q.get(), next, -3), 0);
        model.push_front(next++);
        ASSERT_EQ(rq_push(q.get(), next, -3), 0);
        model.push_back(next++);
        if (step % 3 == 0) {
            ASSERT_EQ(rq_bucket_pop(q.get(), 0), model.front()) << "step " << step;
            model.pop_front();
        }
        ASSERT_EQ(rq_size(q.get()), model.size());
    }
    std::vector<uint32_t> rest(model.begin(), model.end());
    EXPECT_EQ(drain(q.get()), rest);
}

TEST(ReadyQueue, ManyPrioritiesInRandomOrderStaySorted)
{
    RqPtr q = make_rq();
    std::vector<int32_t> prios;
    for (int32_t p = -500; p < 500; p++)
        prios.push_back(p * 7);
    std::mt19937 rng(12345);
    std::shuffle(prios.begin(), prios.end(), rng);
    std::map<int32_t, std::vector<uint32_t>, std::greater<int32_t>> model;
    uint32_t t = 0;
    for (int rep = 0; rep < 3; rep++)
        for (int32_t p : prios) {
            ASSERT_EQ(rq_push(q.get(), t, p), 0);
            model[p].push_back(t++);
        }
    ASSERT_EQ(rq_buckets(q.get()), prios.size());
    expect_buckets_sorted(q.get());
    EXPECT_EQ(rq_size(q.get()), 3 * prios.size());
    EXPECT_EQ(sum_bucket_sizes(q.get()), rq_size(q.get()));
    std::vector<uint32_t> want;
    for (auto &kv : model)
        want.insert(want.end(), kv.second.begin(), kv.second.end());
    EXPECT_EQ(drain(q.get()), want);
}

// Random pushes, push_fronts and pops over a few priorities against a model:
// one deque per priority, highest non-empty first.
TEST(ReadyQueue, RandomOperationsMatchModel)
{
    RqPtr q = make_rq();
    std::map<int32_t, std::deque<uint32_t>, std::greater<int32_t>> model;
    size_t model_size = 0;
    std::mt19937 rng(777);
    uint32_t next = 0;
    for (int op = 0; op < 200000; op++) {
        int32_t p = static_cast<int32_t>(rng() % 9) - 4;
        unsigned r = rng() % 10;
        if (r < 5) {
            ASSERT_EQ(rq_push(q.get(), next, p), 0);
            model[p].push_back(next++);
            model_size++;
        } else if (r < 6) {
            ASSERT_EQ(rq_push_front(q.get(), next, p), 0);
            model[p].push_front(next++);
            model_size++;
        } else if (model_size > 0) {
            auto it = std::find_if(model.begin(), model.end(),
                                   [](const auto &kv) { return !kv.second.empty(); });
            long b = first_nonempty(q.get());
            ASSERT_GE(b, 0);
            ASSERT_EQ(rq_bucket_priority(q.get(), static_cast<size_t>(b)), it->first);
            ASSERT_EQ(rq_bucket_pop(q.get(), static_cast<size_t>(b)), it->second.front())
                << "op " << op;
            it->second.pop_front();
            model_size--;
        }
        ASSERT_EQ(rq_size(q.get()), model_size);
    }
    EXPECT_EQ(sum_bucket_sizes(q.get()), model_size);
    expect_buckets_sorted(q.get());
    std::vector<uint32_t> want;
    for (auto &kv : model)
        want.insert(want.end(), kv.second.begin(), kv.second.end());
    EXPECT_EQ(drain(q.get()), want);
}

} // namespace
