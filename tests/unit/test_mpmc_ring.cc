// test_mpmc_ring.cc - unit and stress tests of sched/mpmc_ring.h.
//
// Single thread: capacity rounding and limits, FIFO order, full and empty
// (a failed push or pop changes nothing), a capacity-8 ring wrapped around
// 10^6 operations (push, pop, peek) against a model, and the 32-bit positions crossing 2^32
// (mpmc_ring__seek).  Many threads (ck_ring's validate style): producers and
// consumers released together from a start gate on a small ring, so it is
// full and empty over and over; each producer pushes (producer, sequence)
// pairs and each consumer records what it pops.  Checked: no value lost, none
// duplicated, none invented, and each producer's values seen in order by
// every consumer.  Run under -fsanitize=thread too (smaller counts there).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "sched/mpmc_ring.h"
#include "testutil.h"

namespace
{

#ifdef PMC_TEST_TSAN
constexpr uint32_t kPerProducer = 100000; // TSan runs several times slower
#else
constexpr uint32_t kPerProducer = 500000;
#endif

struct RingDeleter {
    void operator()(struct mpmc_ring *r) const
    {
        mpmc_ring_destroy(r);
    }
};
using RingPtr = std::unique_ptr<struct mpmc_ring, RingDeleter>;

RingPtr make_ring(uint32_t cap)
{
    RingPtr r(mpmc_ring_create(cap));
    EXPECT_NE(r, nullptr);
    return r;
}

TEST(MpmcRing, CapacityIsAPowerOfTwoAtLeastTwo)
{
    const std::pair<uint32_t, uint32_t> cases[] = {{0, 2},    {1, 2},      {2, 2},   {3, 4},
                                                   {8, 8},    {9, 16},     {63, 64}, {64, 64},
                                                   {65, 128}, {1000, 1024}};
    for (auto [want_min, cap] : cases) {
        RingPtr r = make_ring(want_min);
        ASSERT_NE(r, nullptr);
        EXPECT_EQ(mpmc_ring_capacity(r.get()), cap) << "asked " << want_min;
        EXPECT_EQ(mpmc_ring_size(r.get()), 0u);
    }
    errno = 0;
    EXPECT_EQ(mpmc_ring_create(MPMC_RING_MAX + 1), nullptr);
    EXPECT_EQ(errno, EINVAL);
    mpmc_ring_destroy(nullptr);
}

TEST(MpmcRing, SingleThreadFifoFullAndEmpty)
{
    RingPtr r = make_ring(16);
    uint32_t v = 12345;
    EXPECT_FALSE(mpmc_ring_try_pop(r.get(), &v));
    EXPECT_EQ(v, 12345u) << "a failed pop must not write";
    for (uint32_t i = 0; i < 16; i++) {
        ASSERT_TRUE(mpmc_ring_try_push(r.get(), 1000 + i));
        EXPECT_EQ(mpmc_ring_size(r.get()), i + 1);
    }
    EXPECT_FALSE(mpmc_ring_try_push(r.get(), 7)) << "full";
    EXPECT_EQ(mpmc_ring_size(r.get()), 16u);
    for (uint32_t i = 0; i < 16; i++) {
        ASSERT_TRUE(mpmc_ring_try_pop(r.get(), &v));
        EXPECT_EQ(v, 1000 + i);
    }
    EXPECT_FALSE(mpmc_ring_try_pop(r.get(), &v)) << "empty";
    EXPECT_EQ(mpmc_ring_size(r.get()), 0u);
}

TEST(MpmcRing, ValuesKeptWhole)
{
    RingPtr r = make_ring(4);
    const uint32_t vals[] = {0, UINT32_MAX, 0x80000000u, 0x7fffffffu};
    for (uint32_t x : vals)
        ASSERT_TRUE(mpmc_ring_try_push(r.get(), x));
    for (uint32_t x : vals) {
        uint32_t v = 0;
        ASSERT_TRUE(mpmc_ring_try_pop(r.get(), &v));
        EXPECT_EQ(v, x);
    }
}

// Fill to full and drain to empty many times: every lap must reuse the cells.
TEST(MpmcRing, FullAndEmptyRepeatedly)
{
    RingPtr r = make_ring(8);
    uint32_t next = 0, want = 0, v;
    for (int round = 0; round < 1000; round++) {
        for (int i = 0; i < 8; i++)
            ASSERT_TRUE(mpmc_ring_try_push(r.get(), next++)) << "round " << round;
        ASSERT_FALSE(mpmc_ring_try_push(r.get(), 999999));
        for (int i = 0; i < 8; i++) {
            ASSERT_TRUE(mpmc_ring_try_pop(r.get(), &v));
            ASSERT_EQ(v, want++);
        }
        ASSERT_FALSE(mpmc_ring_try_pop(r.get(), &v));
    }
}

// Random pushes and pops against a model keep the fill level moving over the
// whole range of a capacity-8 ring for 10^6 operations (~10^5 laps).
void random_ops_against_model(struct mpmc_ring *r, int ops, unsigned seed)
{
    std::deque<uint32_t> model;
    std::mt19937 rng(seed);
    uint32_t next = 0, cap = mpmc_ring_capacity(r);
    for (int op = 0; op < ops; op++) {
        unsigned kind = rng() % 3;
        if (kind == 0) {
            bool ok = mpmc_ring_try_push(r, next);
            ASSERT_EQ(ok, model.size() < cap) << "op " << op;
            if (ok)
                model.push_back(next++);
        } else if (kind == 1) { // peek up to two laps past the end
            uint32_t k = rng() % (2 * cap + 2), v = UINT32_MAX;
            bool ok = mpmc_ring_peek(r, k, &v);
            ASSERT_EQ(ok, k < model.size()) << "op " << op << " k " << k;
            if (ok)
                ASSERT_EQ(v, model[k]) << "op " << op << " k " << k;
            else
                ASSERT_EQ(v, UINT32_MAX) << "a failed peek must not write";
        } else {
            uint32_t v;
            bool ok = mpmc_ring_try_pop(r, &v);
            ASSERT_EQ(ok, !model.empty()) << "op " << op;
            if (ok) {
                ASSERT_EQ(v, model.front()) << "op " << op;
                model.pop_front();
            }
        }
        ASSERT_EQ(mpmc_ring_size(r), model.size()) << "op " << op;
    }
}

TEST(MpmcRing, WrapAroundManyTimes)
{
    RingPtr r = make_ring(8);
    random_ops_against_model(r.get(), 1000000, 42);
}

// The positions are 32-bit and wrap: start them just below 2^32 at several
// offsets so the wrap lands on every fill level and every cell.
TEST(MpmcRing, PositionsWrapAt2To32)
{
    for (uint32_t back = 1; back <= 24; back++) {
        RingPtr r = make_ring(8);
        ASSERT_EQ(mpmc_ring__seek(r.get(), UINT32_MAX - back + 1), 0);
        EXPECT_EQ(mpmc_ring_size(r.get()), 0u);
        random_ops_against_model(r.get(), 2000, back);
    }
    RingPtr r = make_ring(8);
    ASSERT_TRUE(mpmc_ring_try_push(r.get(), 1));
    errno = 0;
    EXPECT_EQ(mpmc_ring__seek(r.get(), 5), -1) << "not empty";
    EXPECT_EQ(errno, EBUSY);
}

// ---- many threads --------------------------------------------------------

using testutil::StartGate; // threads released together

constexpr uint32_t encode(uint32_t producer, uint32_t seq)
{
    return producer << 24 | seq;
}

struct StressResult {
    std::vector<std::vector<uint32_t>> popped; // per consumer, in pop order
    uint64_t full = 0, empty = 0;              // failed attempts seen
};

StressResult run_stress(int producers, int consumers, uint32_t per_producer, uint32_t capacity,
                        uint32_t start_pos)
{
    RingPtr r = make_ring(capacity);
    EXPECT_EQ(mpmc_ring__seek(r.get(), start_pos), 0);
    const uint64_t total = static_cast<uint64_t>(producers) * per_producer;
    // A broken ring loses values or wedges: give up after the deadline, and
    // consumers stop once every producer is done and the ring is empty, so
    // the checks report rather than the test hanging.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    std::atomic<bool> timed_out{false};
    auto expired = [&] {
        if (std::chrono::steady_clock::now() > deadline)
            timed_out.store(true);
        return timed_out.load();
    };
    std::atomic<uint64_t> taken{0}, full{0}, empty{0};
    std::atomic<int> done{0};
    StartGate gate(producers + consumers);
    StressResult res;
    res.popped.resize(consumers);
    std::vector<std::thread> threads;
    for (int p = 0; p < producers; p++)
        threads.emplace_back([&, p] {
            uint64_t fails = 0;
            gate.arrive();
            for (uint32_t i = 0; i < per_producer; i++)
                while (!mpmc_ring_try_push(r.get(), encode(p, i))) {
                    fails++;
                    if (expired())
                        goto out;
                    std::this_thread::yield();
                }
        out:
            full.fetch_add(fails, std::memory_order_relaxed);
            done.fetch_add(1, std::memory_order_release); // after our pushes
        });
    for (int c = 0; c < consumers; c++)
        threads.emplace_back([&, c] {
            std::vector<uint32_t> &out = res.popped[c];
            uint64_t fails = 0;
            out.reserve(total / consumers * 2);
            gate.arrive();
            for (;;) {
                // acquire: every push of a finished producer is visible, so
                // a pop failing after this reads "all done" means empty.
                bool finished = done.load(std::memory_order_acquire) == producers;
                uint32_t v;
                if (mpmc_ring_try_pop(r.get(), &v)) {
                    out.push_back(v);
                    taken.fetch_add(1, std::memory_order_relaxed);
                    continue;
                }
                if (finished || taken.load(std::memory_order_relaxed) >= total || expired())
                    break;
                fails++;
                std::this_thread::yield();
            }
            empty.fetch_add(fails, std::memory_order_relaxed);
        });
    for (auto &t : threads)
        t.join();
    EXPECT_FALSE(timed_out.load()) << "the ring wedged";
    res.full = full.load();
    res.empty = empty.load();
    uint32_t v;
    EXPECT_FALSE(mpmc_ring_try_pop(r.get(), &v)) << "left over after the run";
    return res;
}

// No loss, no duplicate, nothing invented, per-producer order per consumer.
void check_stress(const StressResult &res, int producers, uint32_t per_producer)
{
    std::vector<std::vector<bool>> seen(producers, std::vector<bool>(per_producer));
    uint64_t dups = 0, bogus = 0, disorder = 0, count = 0;
    for (const auto &out : res.popped) {
        std::vector<int64_t> last(producers, -1);
        for (uint32_t v : out) {
            uint32_t p = v >> 24, i = v & 0xffffff;
            if (p >= static_cast<uint32_t>(producers) || i >= per_producer) {
                bogus++;
                continue;
            }
            count++;
            if (seen[p][i])
                dups++;
            seen[p][i] = true;
            if (static_cast<int64_t>(i) <= last[p])
                disorder++;
            last[p] = i;
        }
    }
    uint64_t missing = 0;
    for (const auto &s : seen)
        for (bool b : s)
            missing += !b;
    EXPECT_EQ(bogus, 0u) << "values never pushed";
    EXPECT_EQ(dups, 0u) << "values popped twice";
    EXPECT_EQ(missing, 0u) << "values lost";
    EXPECT_EQ(disorder, 0u) << "a consumer saw a producer's values out of order";
    EXPECT_EQ(count, static_cast<uint64_t>(producers) * per_producer);
    testing::Test::RecordProperty("full_retries", std::to_string(res.full));
    testing::Test::RecordProperty("empty_retries", std::to_string(res.empty));
}

TEST(MpmcRingStress, FourProducersFourConsumers)
{
    StressResult res = run_stress(4, 4, kPerProducer, 64, 0);
    check_stress(res, 4, kPerProducer);
}

// A tiny ring: nearly every operation meets a full or an empty ring.
TEST(MpmcRingStress, FourByFourOnCapacityTwo)
{
    StressResult res = run_stress(4, 4, kPerProducer / 10, 2, 0);
    check_stress(res, 4, kPerProducer / 10);
}

// The same across the 2^32 wrap of the positions (and of the sequences).
TEST(MpmcRingStress, FourByFourAcrossPositionWrap)
{
    StressResult res = run_stress(4, 4, kPerProducer / 4, 16, UINT32_MAX - 1000);
    check_stress(res, 4, kPerProducer / 4);
}

// The ready queue's shape: many producers, one consumer.
TEST(MpmcRingStress, SixProducersOneConsumer)
{
    StressResult res = run_stress(6, 1, kPerProducer / 2, 256, 0);
    check_stress(res, 6, kPerProducer / 2);
}

// The dispatcher's look-ahead: producers push while the one consumer peeks
// k places ahead and pops; every value a peek returned must be the one the
// k-th pop after it takes (a published value stays until its pop).
TEST(MpmcRingStress, PeeksOfTheOnlyConsumerComeTrue)
{
    constexpr int kProducers = 3;
    const uint32_t per = kPerProducer / 4;
    RingPtr r = make_ring(64);
    StartGate gate(kProducers + 1);
    std::atomic<bool> stop{false}; // the consumer gave up: a full ring must not wedge the join
    std::vector<std::thread> producers;
    for (int p = 0; p < kProducers; p++)
        producers.emplace_back([&, p] {
            gate.arrive();
            for (uint32_t i = 0; i < per; i++)
                while (!mpmc_ring_try_push(r.get(), encode(p, i)) && !stop.load())
                    std::this_thread::yield();
        });
    gate.arrive();
    const uint64_t total = uint64_t{kProducers} * per;
    std::deque<int64_t> predicted; // predicted[j]: the value of pop (popped + j), or -1
    std::mt19937 rng(7);
    uint64_t popped = 0, peeks = 0, wrong = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (popped < total && std::chrono::steady_clock::now() < deadline) {
        uint32_t k = rng() % 20, v;
        if (mpmc_ring_peek(r.get(), k, &v)) {
            peeks++;
            while (predicted.size() <= k)
                predicted.push_back(-1);
            if (predicted[k] >= 0 && predicted[k] != v)
                wrong++; // two peeks of one position disagree
            predicted[k] = v;
        }
        if (!mpmc_ring_try_pop(r.get(), &v))
            continue;
        if (!predicted.empty()) {
            if (predicted.front() >= 0 && predicted.front() != v)
                wrong++;
            predicted.pop_front();
        }
        popped++;
    }
    stop.store(true);
    for (auto &t : producers)
        t.join();
    EXPECT_EQ(popped, total) << "timed out";
    EXPECT_EQ(wrong, 0u);
    EXPECT_GT(peeks, total / 100) << "the peeks should find values often";
}

TEST(MpmcRingStress, OneProducerSixConsumers)
{
    StressResult res = run_stress(1, 6, kPerProducer, 32, 0);
    check_stress(res, 1, kPerProducer);
}

} // namespace
