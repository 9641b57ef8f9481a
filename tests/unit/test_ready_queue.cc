// test_ready_queue.cc - unit tests of sched/ready_queue.h.
//
// Order: larger priority first, FIFO among equals, negative and extreme
// priorities, many priorities created in random order stay sorted.  Deferral:
// the dispatcher pops a bucket and puts some tasks back with rq_push_front in
// reverse order; they must regain their exact places.  Rings: growth while the
// ring is wrapped (pushes and pops interleaved across many doublings, from
// both ends), and rq_size / rq_bucket_size kept consistent throughout.  A
// randomised run is checked against a simple model (one deque per priority).
// Sized queues (rq_create_sized, rq_reserve): one bucket per priority, never
// grown (ENOBUFS past the reservation), push_front up to it.  The master's
// dispatch rounds: deferred tasks and tasks returned unstarted keep the
// front.  Concurrency: several threads rq_push while one dispatcher pops,
// defers and reads sizes (no loss, no duplicate, FIFO per producer within a
// priority); run under -fsanitize=thread too (smaller counts there).  The
// first-bucket hint (rq_first_bucket): it follows pushes, pops, put-backs and
// buckets added in front of it, and with paced producers pushing through 64
// priorities a dispatcher that looks only from it still finds every task.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <climits>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "sched/ready_queue.h"
#include "testutil.h"

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

// rq_bucket_peek() sees the bucket in rq_bucket_pop()'s order, across the
// tasks put back and the ring behind them, and removes nothing.
TEST(ReadyQueue, PeekFollowsThePopOrder)
{
    RqPtr q = make_rq();
    for (uint32_t t = 10; t < 14; t++)
        ASSERT_EQ(rq_push(q.get(), t, 3), 0);
    ASSERT_EQ(rq_push(q.get(), 90, 1), 0);
    ASSERT_EQ(rq_push_front(q.get(), 2, 3), 0);
    ASSERT_EQ(rq_push_front(q.get(), 1, 3), 0);
    size_t b = static_cast<size_t>(bucket_of(q.get(), 3));
    const std::vector<uint32_t> order = {1, 2, 10, 11, 12, 13};
    for (uint32_t k = 0; k < order.size(); k++)
        EXPECT_EQ(rq_bucket_peek(q.get(), b, k), order[k]) << "k " << k;
    EXPECT_EQ(rq_bucket_peek(q.get(), b, 6), UINT32_MAX) << "past the end";
    EXPECT_EQ(rq_bucket_peek(q.get(), b, 1000), UINT32_MAX);
    EXPECT_EQ(rq_size(q.get()), 7u) << "a peek removes nothing";
    EXPECT_EQ(rq_bucket_pop(q.get(), b), 1u);
    EXPECT_EQ(rq_bucket_peek(q.get(), b, 0), 2u);
    EXPECT_EQ(rq_bucket_peek(q.get(), b, 1), 10u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{2, 10, 11, 12, 13, 90}));
    EXPECT_EQ(rq_bucket_peek(q.get(), b, 0), UINT32_MAX) << "empty";
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
    std::mt19937 rng(777), peek_rng(778);
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
        if (rq_buckets(q.get()) == 0)
            continue;
        // the look-ahead: any place of any bucket, past its end too
        size_t b = peek_rng() % rq_buckets(q.get());
        const auto &m = model[rq_bucket_priority(q.get(), b)];
        uint32_t k = peek_rng() % (m.size() + 3);
        ASSERT_EQ(rq_bucket_peek(q.get(), b, k), k < m.size() ? m[k] : UINT32_MAX)
            << "op " << op << " bucket " << b << " k " << k;
    }
    EXPECT_EQ(sum_bucket_sizes(q.get()), model_size);
    expect_buckets_sorted(q.get());
    std::vector<uint32_t> want;
    for (auto &kv : model)
        want.insert(want.end(), kv.second.begin(), kv.second.end());
    EXPECT_EQ(drain(q.get()), want);
}

// ---- sized queues ----------------------------------------------------------

RqPtr make_sized(const std::vector<int32_t> &prios)
{
    RqPtr q(rq_create_sized(prios.data(), static_cast<uint32_t>(prios.size())));
    EXPECT_NE(q, nullptr);
    return q;
}

TEST(ReadyQueueSized, OneEmptyBucketPerPriorityOfTheTasks)
{
    const std::vector<int32_t> prios = {3, 1, 3, -2, 1, 3, INT32_MIN, INT32_MAX};
    RqPtr q = make_sized(prios);
    ASSERT_EQ(rq_buckets(q.get()), 5u);
    expect_buckets_sorted(q.get());
    EXPECT_EQ(rq_bucket_priority(q.get(), 0), INT32_MAX);
    EXPECT_EQ(rq_bucket_priority(q.get(), 4), INT32_MIN);
    EXPECT_EQ(rq_size(q.get()), 0u);
    EXPECT_EQ(sum_bucket_sizes(q.get()), 0u);
    for (uint32_t t = 0; t < prios.size(); t++)
        ASSERT_EQ(rq_push(q.get(), t, prios[t]), 0);
    EXPECT_EQ(rq_buckets(q.get()), 5u);
    EXPECT_EQ(rq_size(q.get()), prios.size());
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{7, 0, 2, 5, 1, 4, 3, 6}));
    EXPECT_EQ(rq_buckets(q.get()), 5u) << "empty buckets stay";
}

TEST(ReadyQueueSized, NoTasks)
{
    RqPtr q(rq_create_sized(nullptr, 0));
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(rq_buckets(q.get()), 0u);
    errno = 0;
    EXPECT_EQ(rq_push(q.get(), 1, 0), -1);
    EXPECT_EQ(errno, ENOBUFS);
}

// A sized queue never grows: a priority it was not sized for, or a bucket
// past its (power-of-two) reservation, is refused and nothing changes.
TEST(ReadyQueueSized, UnknownPriorityOrFullBucketIsRefused)
{
    RqPtr q = make_sized({5, 5, 5});
    uint32_t pushed = 0;
    while (pushed < 1000 && rq_push(q.get(), pushed, 5) == 0)
        pushed++;
    EXPECT_EQ(errno, ENOBUFS);
    EXPECT_GE(pushed, 3u);
    EXPECT_LT(pushed, 1000u);
    EXPECT_EQ(rq_bucket_size(q.get(), 0), pushed);
    errno = 0;
    EXPECT_EQ(rq_push(q.get(), 77, 6), -1);
    EXPECT_EQ(errno, ENOBUFS);
    errno = 0;
    EXPECT_EQ(rq_push_front(q.get(), 78, 4), -1);
    EXPECT_EQ(errno, ENOBUFS);
    EXPECT_EQ(rq_buckets(q.get()), 1u);
    std::vector<uint32_t> want;
    for (uint32_t t = 0; t < pushed; t++)
        want.push_back(t);
    EXPECT_EQ(drain(q.get()), want);
}

// Every task of a bucket can be popped and put back at once (the dispatcher
// found room for none of them), and no more than the reservation.
TEST(ReadyQueueSized, PushFrontUpToTheReservation)
{
    RqPtr q = make_rq();
    ASSERT_EQ(rq_reserve(q.get(), 0, 6), 0);
    for (uint32_t t = 0; t < 6; t++)
        ASSERT_EQ(rq_push(q.get(), t, 0), 0);
    std::vector<uint32_t> popped;
    for (int k = 0; k < 6; k++)
        popped.push_back(rq_bucket_pop(q.get(), 0));
    for (auto it = popped.rbegin(); it != popped.rend(); ++it)
        ASSERT_EQ(rq_push_front(q.get(), *it, 0), 0);
    EXPECT_EQ(rq_bucket_size(q.get(), 0), 6u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
    uint32_t held = 0;
    while (held < 1000 && rq_push_front(q.get(), held, 0) == 0)
        held++;
    EXPECT_EQ(errno, ENOBUFS);
    EXPECT_GE(held, 6u);
    EXPECT_LT(held, 1000u);
}

// More distinct priorities than rq_create_sized's count table starts with
// (256 slots, half of them used before it doubles).
TEST(ReadyQueueSized, ManyDistinctPriorities)
{
    std::vector<int32_t> prios;
    for (uint32_t t = 0; t < 3000; t++)
        prios.push_back(static_cast<int32_t>((t * 7919u) % 1000u) - 500);
    RqPtr q = make_sized(prios);
    ASSERT_EQ(rq_buckets(q.get()), 1000u);
    expect_buckets_sorted(q.get());
    std::map<int32_t, std::vector<uint32_t>, std::greater<int32_t>> model;
    for (uint32_t t = 0; t < prios.size(); t++) {
        ASSERT_EQ(rq_push(q.get(), t, prios[t]), 0);
        model[prios[t]].push_back(t);
    }
    std::vector<uint32_t> want;
    for (auto &kv : model)
        want.insert(want.end(), kv.second.begin(), kv.second.end());
    EXPECT_EQ(drain(q.get()), want);
}

// rq_reserve on a queue that already holds tasks (ring wrapped, some put
// back at the front) keeps them in order; afterwards the queue is sized.
TEST(ReadyQueueSized, ReserveKeepsQueuedTasksInOrder)
{
    RqPtr q = make_rq();
    std::deque<uint32_t> model;
    for (uint32_t t = 0; t < 100; t++) {
        ASSERT_EQ(rq_push(q.get(), t, 1), 0);
        model.push_back(t);
    }
    for (int k = 0; k < 40; k++) {
        ASSERT_EQ(rq_bucket_pop(q.get(), 0), model.front());
        model.pop_front();
    }
    for (uint32_t t = 100; t < 130; t++) {
        ASSERT_EQ(rq_push(q.get(), t, 1), 0);
        model.push_back(t);
    }
    ASSERT_EQ(rq_push_front(q.get(), 500, 1), 0);
    model.push_front(500);
    ASSERT_EQ(rq_reserve(q.get(), 1, 1000), 0);
    ASSERT_EQ(rq_reserve(q.get(), 9, 4), 0);
    ASSERT_EQ(rq_buckets(q.get()), 2u);
    EXPECT_EQ(rq_bucket_priority(q.get(), 0), 9);
    for (uint32_t t = 600; t < 1400; t++) {
        ASSERT_EQ(rq_push(q.get(), t, 1), 0) << "reserved room";
        model.push_back(t);
    }
    errno = 0;
    EXPECT_EQ(rq_push(q.get(), 1, 3), -1);
    EXPECT_EQ(errno, ENOBUFS) << "sized: no new bucket";
    errno = 0;
    EXPECT_EQ(rq_reserve(q.get(), 1, (UINT32_C(1) << 30) + 1), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(rq_size(q.get()), model.size());
    EXPECT_EQ(drain(q.get()), std::vector<uint32_t>(model.begin(), model.end()));
}

// ---- the master's deferral -------------------------------------------------

// One dispatch round over bucket b as engine/master/master_sched.c does it: pop the
// tasks counted, keep those fits() accepts, put the others back with
// rq_push_front in reverse order.  Returns the order the tasks were popped.
std::vector<uint32_t> dispatch_round(struct ready_queue *q, size_t b,
                                     const std::function<bool(uint32_t)> &fits)
{
    std::vector<uint32_t> popped, deferred;
    size_t n = rq_bucket_size(q, b);
    int32_t prio = rq_bucket_priority(q, b);
    for (size_t k = 0; k < n; k++) {
        uint32_t t = rq_bucket_pop(q, b);
        popped.push_back(t);
        if (!fits(t))
            deferred.push_back(t);
    }
    for (auto it = deferred.rbegin(); it != deferred.rend(); ++it)
        EXPECT_EQ(rq_push_front(q, *it, prio), 0);
    return popped;
}

// Deferred tasks keep their place ahead of tasks that became ready since,
// round after round; a task a node gives back unstarted goes in front of
// them all.  On an unsized and on a sized queue.
void deferral_rounds(struct ready_queue *q)
{
    for (uint32_t t = 0; t < 20; t++)
        ASSERT_EQ(rq_push(q, t, 0), 0);
    ASSERT_EQ(rq_push(q, 100, -1), 0);
    std::vector<uint32_t> all;
    for (uint32_t t = 0; t < 20; t++)
        all.push_back(t);
    EXPECT_EQ(dispatch_round(q, 0, [](uint32_t t) { return t % 4 != 1; }), all);
    EXPECT_EQ(rq_bucket_size(q, 0), 5u);
    ASSERT_EQ(rq_push(q, 20, 0), 0); // released by a completion meanwhile
    ASSERT_EQ(rq_push(q, 21, 0), 0);
    EXPECT_EQ(dispatch_round(q, 0, [](uint32_t t) { return t != 5 && t != 13 && t != 21; }),
              (std::vector<uint32_t>{1, 5, 9, 13, 17, 20, 21}));
    ASSERT_EQ(rq_push_front(q, 2, 0), 0); // given back unstarted
    ASSERT_EQ(rq_push(q, 22, 0), 0);
    EXPECT_EQ(dispatch_round(q, 0, [](uint32_t) { return false; }),
              (std::vector<uint32_t>{2, 5, 13, 21, 22}));
    EXPECT_EQ(dispatch_round(q, 0, [](uint32_t t) { return t != 22; }),
              (std::vector<uint32_t>{2, 5, 13, 21, 22}));
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{22, 100}));
}

TEST(ReadyQueue, DeferralAcrossDispatchRounds)
{
    RqPtr q = make_rq();
    deferral_rounds(q.get());
}

TEST(ReadyQueueSized, DeferralAcrossDispatchRounds)
{
    std::vector<int32_t> prios(30, 0);
    prios.push_back(-1);
    RqPtr q = make_sized(prios);
    deferral_rounds(q.get());
}

// ---- the first-bucket hint -------------------------------------------------

// rq_first_bucket(): every bucket below it is empty, and with no push
// overlapping the call it is the first non-empty one.
TEST(ReadyQueueSized, FirstBucketFollowsPushesAndPops)
{
    std::vector<int32_t> prios;
    for (int32_t p = 9; p >= 0; p--)
        prios.push_back(p); // bucket b holds priority 9 - b
    RqPtr q = make_sized(prios);
    struct ready_queue *r = q.get();
    EXPECT_EQ(rq_first_bucket(r), 10u) << "all empty: the number of buckets";
    ASSERT_EQ(rq_push(r, 5, 4), 0);
    EXPECT_EQ(rq_first_bucket(r), 5u);
    ASSERT_EQ(rq_push(r, 7, 2), 0);
    EXPECT_EQ(rq_first_bucket(r), 5u);
    EXPECT_EQ(rq_bucket_pop(r, 5), 5u);
    EXPECT_EQ(rq_first_bucket(r), 7u) << "past the drained bucket";
    ASSERT_EQ(rq_push(r, 2, 7), 0);
    EXPECT_EQ(rq_first_bucket(r), 2u) << "a push above it lowers it";
    EXPECT_EQ(rq_bucket_pop(r, 2), 2u);
    EXPECT_EQ(rq_bucket_pop(r, 7), 7u);
    EXPECT_EQ(rq_first_bucket(r), 10u);
    ASSERT_EQ(rq_push_front(r, 1, 8), 0);
    EXPECT_EQ(rq_first_bucket(r), 1u) << "so does a task put back at the front";
    EXPECT_EQ(drain(r), (std::vector<uint32_t>{1}));
}

// On an unsized queue a push may insert a bucket before the hint (shifting
// the others): the hint follows.
TEST(ReadyQueue, FirstBucketWhenBucketsAreAdded)
{
    RqPtr q = make_rq();
    struct ready_queue *r = q.get();
    EXPECT_EQ(rq_first_bucket(r), 0u);
    ASSERT_EQ(rq_push(r, 1, 5), 0);
    EXPECT_EQ(rq_bucket_pop(r, 0), 1u);
    EXPECT_EQ(rq_first_bucket(r), 1u);
    ASSERT_EQ(rq_push(r, 2, 1), 0); // a new last bucket
    EXPECT_EQ(rq_first_bucket(r), 1u);
    EXPECT_EQ(rq_bucket_pop(r, 1), 2u);
    EXPECT_EQ(rq_first_bucket(r), 2u);
    ASSERT_EQ(rq_push(r, 3, 9), 0); // a new first bucket: 9, 5, 1
    ASSERT_EQ(rq_push(r, 4, 3), 0); // and one in between: 9, 5, 3, 1
    EXPECT_EQ(rq_first_bucket(r), 0u);
    EXPECT_EQ(rq_bucket_pop(r, 0), 3u);
    EXPECT_EQ(rq_first_bucket(r), 2u);
    EXPECT_EQ(rq_bucket_priority(r, 2), 3);
}

// ---- many threads ----------------------------------------------------------

#ifdef PMC_TEST_TSAN
constexpr uint32_t kPerProducer = 25000; // TSan runs several times slower
#else
constexpr uint32_t kPerProducer = 100000;
#endif

using testutil::StartGate;

constexpr int32_t kConcPrio[3] = {7, 0, -3};

int32_t conc_prio(uint32_t i)
{
    return kConcPrio[(i + i / 5) % 3];
}

// Producers push (producer << 24 | i) with priority conc_prio(i) from their
// own threads, released together; this thread is the dispatcher: it sweeps
// the buckets, pops what rq_bucket_size counts, and now and then pops a few
// tasks (or a whole bucket) and puts them back at the front, which must give
// them back first and in the same order.
TEST(ReadyQueueConcurrent, PushersAndOneDispatcher)
{
    constexpr int kProducers = 4;
    constexpr size_t kBatch = 64;
    const uint32_t total = kProducers * kPerProducer;
    std::vector<int32_t> prios;
    for (int p = 0; p < kProducers; p++)
        for (uint32_t i = 0; i < kPerProducer; i++)
            prios.push_back(conc_prio(i));
    RqPtr q = make_sized(prios);
    ASSERT_EQ(rq_buckets(q.get()), 3u);

    StartGate gate(kProducers + 1);
    std::atomic<uint32_t> push_failures{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++)
        producers.emplace_back([&, p] {
            gate.arrive();
            for (uint32_t i = 0; i < kPerProducer; i++)
                if (rq_push(q.get(), static_cast<uint32_t>(p) << 24 | i, conc_prio(i)) != 0)
                    push_failures.fetch_add(1, std::memory_order_relaxed);
        });

    gate.arrive();
    std::map<int32_t, std::vector<uint32_t>> got;
    uint32_t popped = 0, visits = 0, refronts = 0, empty_pops = 0, oversize = 0;
    uint32_t mismatched_refront = 0;
    // Lost tasks would keep the loop waiting: stop at a deadline and report.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool timed_out = false;
    while (popped + push_failures.load(std::memory_order_relaxed) < total &&
           !(timed_out = std::chrono::steady_clock::now() > deadline)) {
        size_t queued = rq_size(q.get());
        if (queued > total - popped)
            oversize++;
        for (size_t b = 0; b < rq_buckets(q.get()); b++) {
            // At most kBatch per visit, like the master's room for tasks.
            size_t n = std::min<size_t>(rq_bucket_size(q.get(), b), kBatch);
            if (n == 0)
                continue;
            int32_t prio = rq_bucket_priority(q.get(), b);
            std::vector<uint32_t> again;
            visits++;
            if (visits % 5 == 0 || visits % 7 == 0) { // defer a few, or all
                size_t k = visits % 7 == 0 ? n : std::min<size_t>(n, 3);
                for (size_t j = 0; j < k; j++)
                    again.push_back(rq_bucket_pop(q.get(), b));
                for (auto it = again.rbegin(); it != again.rend(); ++it)
                    if (rq_push_front(q.get(), *it, prio) != 0)
                        mismatched_refront++;
                refronts++;
            }
            for (size_t k = 0; k < n; k++) {
                uint32_t t = rq_bucket_pop(q.get(), b);
                if (t == UINT32_MAX) {
                    empty_pops++;
                    break;
                }
                if (k < again.size() && again[k] != t)
                    mismatched_refront++;
                got[prio].push_back(t);
                popped++;
            }
        }
        if (popped < total)
            std::this_thread::yield();
    }
    for (auto &t : producers)
        t.join();

    EXPECT_FALSE(timed_out) << "tasks never arrived";
    EXPECT_EQ(push_failures.load(), 0u) << "a sized queue refused a push";
    EXPECT_EQ(empty_pops, 0u) << "rq_bucket_size counted a task pop could not deliver";
    EXPECT_EQ(oversize, 0u) << "rq_size counted more tasks than were left";
    EXPECT_EQ(mismatched_refront, 0u) << "tasks put back at the front came out differently";
    EXPECT_EQ(rq_size(q.get()), 0u);
    EXPECT_GT(refronts, 0u);
    RecordProperty("visits", static_cast<int>(visits));
    RecordProperty("refronts", static_cast<int>(refronts));

    std::vector<std::vector<bool>> seen(kProducers, std::vector<bool>(kPerProducer));
    uint32_t dups = 0, bogus = 0, wrong_bucket = 0, disorder = 0, count = 0;
    for (auto &[prio, order] : got) {
        std::vector<int64_t> last(kProducers, -1);
        for (uint32_t t : order) {
            uint32_t p = t >> 24, i = t & 0xffffff;
            if (p >= kProducers || i >= kPerProducer) {
                bogus++;
                continue;
            }
            count++;
            dups += seen[p][i];
            seen[p][i] = true;
            wrong_bucket += conc_prio(i) != prio;
            disorder += static_cast<int64_t>(i) <= last[p];
            last[p] = i;
        }
    }
    uint32_t missing = 0;
    for (auto &s : seen)
        missing += static_cast<uint32_t>(std::count(s.begin(), s.end(), false));
    EXPECT_EQ(bogus, 0u) << "tasks never pushed";
    EXPECT_EQ(dups, 0u) << "tasks popped twice";
    EXPECT_EQ(missing, 0u) << "tasks lost";
    EXPECT_EQ(wrong_bucket, 0u) << "tasks in another priority's bucket";
    EXPECT_EQ(disorder, 0u) << "a producer's tasks out of FIFO order within a priority";
    EXPECT_EQ(count, total);
}

// Producers push through 64 priorities from the highest down, like the
// layers of a deep DAG whose priorities fall with depth; the dispatcher looks
// only from rq_first_bucket() on.  Once every producer is done (and before
// the dispatcher drains the rest) every queued task must lie at or after the
// hint; then rounds from the hint must drain the queue: a task left below it
// by a push that raced with its advance would never be popped.
TEST(ReadyQueueConcurrent, PushersAndADispatcherFromTheFirstBucket)
{
    constexpr int kProducers = 4;
    constexpr uint32_t kLayers = 64;
    const uint32_t total = kProducers * kPerProducer;
    auto layer_prio = [](uint32_t i) {
        return static_cast<int32_t>(kLayers - 1 - i / (kPerProducer / kLayers + 1));
    };
    std::vector<int32_t> prios;
    for (int p = 0; p < kProducers; p++)
        for (uint32_t i = 0; i < kPerProducer; i++)
            prios.push_back(layer_prio(i));
    RqPtr q = make_sized(prios);
    struct ready_queue *r = q.get();
    ASSERT_EQ(rq_buckets(r), kLayers);

    StartGate gate(kProducers + 1);
    std::atomic<uint32_t> push_failures{0};
    std::atomic<int> done{0};
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++)
        producers.emplace_back([&, p] {
            gate.arrive();
            for (uint32_t i = 0; i < kPerProducer; i++) {
                // Producers at different paces, so that the dispatcher drains
                // a layer and moves past it while a slower one still adds to it.
                if (i % 512 == 0)
                    std::this_thread::sleep_for(std::chrono::microseconds(20 * (p + 1)));
                if (rq_push(r, static_cast<uint32_t>(p) << 24 | i, layer_prio(i)) != 0)
                    push_failures.fetch_add(1, std::memory_order_relaxed);
            }
            done.fetch_add(1, std::memory_order_release);
        });

    gate.arrive();
    std::vector<uint32_t> count(kProducers * kPerProducer, 0);
    uint32_t popped = 0, bogus = 0;
    auto round = [&] { // one dispatch round from the hint; tasks popped
        uint32_t before = popped;
        for (size_t b = rq_first_bucket(r); b < rq_buckets(r); b++)
            for (size_t n = std::min<size_t>(rq_bucket_size(r, b), 64); n > 0; n--) {
                uint32_t t = rq_bucket_pop(r, b);
                uint32_t p = t >> 24, i = t & 0xffffff;
                if (p >= kProducers || i >= kPerProducer) {
                    bogus++;
                    continue;
                }
                count[p * kPerProducer + i]++;
                popped++;
            }
        return popped - before;
    };
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    bool timed_out = false;
    while (done.load(std::memory_order_acquire) < kProducers &&
           !(timed_out = std::chrono::steady_clock::now() > deadline))
        round();
    for (auto &t : producers)
        t.join();

    size_t from_first = 0;
    for (size_t b = rq_first_bucket(r); b < rq_buckets(r); b++)
        from_first += rq_bucket_size(r, b);
    size_t unseen_after_join = rq_size(r) - from_first;
    bool stuck = false; // a round found nothing while tasks were queued
    while (rq_size(r) > 0 && !stuck)
        stuck = round() == 0;

    EXPECT_FALSE(timed_out) << "the producers never finished";
    EXPECT_EQ(push_failures.load(), 0u);
    EXPECT_EQ(unseen_after_join, 0u) << "queued tasks below rq_first_bucket()";
    EXPECT_FALSE(stuck) << "tasks left below the first bucket were never popped";
    EXPECT_EQ(rq_size(r), 0u);
    EXPECT_EQ(bogus, 0u);
    EXPECT_EQ(std::count(count.begin(), count.end(), 1u), static_cast<long>(total))
        << "every task popped exactly once";
    EXPECT_EQ(rq_first_bucket(r), rq_buckets(r));
}

} // namespace
