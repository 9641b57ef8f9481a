// test_deadlines.cc - unit tests of sched/deadlines.h.
//
// The heap against a model (std::multimap of deadline -> (slot, gen)) over
// a long random sequence of set (insert or move), remove and pop with a
// fixed seed, checking the top, the size and the timeout after every step
// and the whole structure now and then; moving an entry earlier and later;
// removing the top, a middle entry and the last leaf; ties popped in slot
// order; pop_expired at, before and after a deadline; timeout rounding up
// (1 ns left -> 1 ms) and its cap; the empty heap; generations handed back;
// growth past the initial capacity; no reallocation after
// deadlines_reserve().
#include <gtest/gtest.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "sched/deadlines.h"

namespace
{

struct Popped {
    uint64_t at;
    uint32_t slot, gen;
};

class Heap
{
  public:
    Heap()
    {
        EXPECT_EQ(deadlines_init(&h_), 0);
    }
    ~Heap()
    {
        deadlines_free(&h_);
    }
    Heap(const Heap &) = delete;
    Heap &operator=(const Heap &) = delete;
    struct deadlines *get()
    {
        return &h_;
    }
    // Pop everything (as if at the end of time), in order.
    std::vector<Popped> drain()
    {
        std::vector<Popped> out;
        Popped p;
        while (deadlines_peek(&h_, &p.at, &p.slot, &p.gen)) {
            uint32_t s, g;
            EXPECT_TRUE(deadlines_pop_expired(&h_, UINT64_MAX, &s, &g));
            EXPECT_EQ(s, p.slot);
            EXPECT_EQ(g, p.gen);
            out.push_back(p);
        }
        return out;
    }

  private:
    struct deadlines h_;
};

// The heap property and the slot index, from the (private) arrays.
void expect_invariants(const struct deadlines *h)
{
    for (uint32_t i = 0; i < h->n; i++) {
        const struct deadline_entry &e = h->heap[i];
        ASSERT_LT(e.slot, h->pos_cap);
        EXPECT_EQ(h->pos[e.slot], i + 1) << "index of slot " << e.slot;
        if (i > 0) {
            const struct deadline_entry &p = h->heap[(i - 1) / 2];
            EXPECT_TRUE(p.deadline_ns < e.deadline_ns ||
                        (p.deadline_ns == e.deadline_ns && p.slot < e.slot))
                << "heap order broken at " << i;
        }
    }
    uint32_t indexed = 0;
    for (uint32_t s = 0; s < h->pos_cap; s++)
        indexed += h->pos[s] != 0;
    EXPECT_EQ(indexed, h->n);
}

TEST(Deadlines, EmptyHeap)
{
    Heap h;
    uint64_t at = 7;
    uint32_t slot = 7, gen = 7;
    EXPECT_FALSE(deadlines_peek(h.get(), &at, &slot, &gen));
    EXPECT_EQ(at, 7u); // nothing written
    EXPECT_EQ(slot, 7u);
    EXPECT_FALSE(deadlines_pop_expired(h.get(), UINT64_MAX, &slot, &gen));
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), -1);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), UINT64_MAX), -1);
    EXPECT_EQ(deadlines_count(h.get()), 0u);
    EXPECT_FALSE(deadlines_has(h.get(), 0));
    deadlines_remove(h.get(), 0); // no-op, no memory yet
    deadlines_remove(h.get(), 123456);
    EXPECT_EQ(deadlines_count(h.get()), 0u);
}

TEST(Deadlines, OrderAndGenerations)
{
    Heap h;
    ASSERT_EQ(deadlines_set(h.get(), 3, 30, 300), 0);
    ASSERT_EQ(deadlines_set(h.get(), 1, 10, 100), 0);
    ASSERT_EQ(deadlines_set(h.get(), 2, 20, 200), 0);
    ASSERT_EQ(deadlines_set(h.get(), 0, 0xFFFFFFFFu, 400), 0);
    EXPECT_EQ(deadlines_count(h.get()), 4u);
    uint64_t at;
    uint32_t slot, gen;
    ASSERT_TRUE(deadlines_peek(h.get(), &at, &slot, &gen));
    EXPECT_EQ(at, 100u);
    EXPECT_EQ(slot, 1u);
    EXPECT_EQ(gen, 10u);
    ASSERT_TRUE(deadlines_peek(h.get(), nullptr, nullptr, nullptr));
    std::vector<Popped> got = h.drain();
    ASSERT_EQ(got.size(), 4u);
    EXPECT_EQ(got[0].slot, 1u);
    EXPECT_EQ(got[1].slot, 2u);
    EXPECT_EQ(got[1].gen, 20u);
    EXPECT_EQ(got[2].slot, 3u);
    EXPECT_EQ(got[2].at, 300u);
    EXPECT_EQ(got[3].slot, 0u);
    EXPECT_EQ(got[3].gen, 0xFFFFFFFFu);
    EXPECT_FALSE(deadlines_has(h.get(), 1));
}

TEST(Deadlines, TiesPopInSlotOrder)
{
    Heap h;
    for (uint32_t s : {5u, 2u, 9u, 0u, 7u})
        ASSERT_EQ(deadlines_set(h.get(), s, s + 100, 1000), 0);
    std::vector<Popped> got = h.drain();
    ASSERT_EQ(got.size(), 5u);
    uint32_t want[] = {0, 2, 5, 7, 9};
    for (size_t i = 0; i < got.size(); i++) {
        EXPECT_EQ(got[i].slot, want[i]);
        EXPECT_EQ(got[i].gen, want[i] + 100);
    }
}

TEST(Deadlines, MoveEarlierAndLater)
{
    Heap h;
    for (uint32_t s = 0; s < 10; s++)
        ASSERT_EQ(deadlines_set(h.get(), s, s, 1000 + 100 * s), 0);
    // Slot 8 (1800) moves to the front, with a new generation.
    ASSERT_EQ(deadlines_set(h.get(), 8, 80, 50), 0);
    expect_invariants(h.get());
    uint64_t at;
    uint32_t slot, gen;
    ASSERT_TRUE(deadlines_peek(h.get(), &at, &slot, &gen));
    EXPECT_EQ(at, 50u);
    EXPECT_EQ(slot, 8u);
    EXPECT_EQ(gen, 80u);
    // Slot 0 (1000) moves to the back; the count stays 10 (one per slot).
    ASSERT_EQ(deadlines_set(h.get(), 0, 1, 99999), 0);
    expect_invariants(h.get());
    EXPECT_EQ(deadlines_count(h.get()), 10u);
    std::vector<Popped> got = h.drain();
    ASSERT_EQ(got.size(), 10u);
    EXPECT_EQ(got[0].slot, 8u);
    EXPECT_EQ(got[1].slot, 1u);
    EXPECT_EQ(got[1].at, 1100u);
    EXPECT_EQ(got[8].slot, 9u);
    EXPECT_EQ(got[9].slot, 0u);
    EXPECT_EQ(got[9].at, 99999u);
    EXPECT_EQ(got[9].gen, 1u);
    // Moving to the same deadline keeps the entry and takes the new gen.
    ASSERT_EQ(deadlines_set(h.get(), 4, 1, 10), 0);
    ASSERT_EQ(deadlines_set(h.get(), 4, 2, 10), 0);
    ASSERT_TRUE(deadlines_peek(h.get(), &at, &slot, &gen));
    EXPECT_EQ(gen, 2u);
    EXPECT_EQ(deadlines_count(h.get()), 1u);
}

TEST(Deadlines, RemoveTopMiddleAndLast)
{
    Heap h;
    for (uint32_t s = 0; s < 15; s++)
        ASSERT_EQ(deadlines_set(h.get(), s, 0, 10 * (s + 1)), 0);
    deadlines_remove(h.get(), 0); // the top (10)
    expect_invariants(h.get());
    deadlines_remove(h.get(), 6); // a middle entry (70)
    expect_invariants(h.get());
    // The last leaf, whichever slot it holds.
    uint32_t last = h.get()->heap[h.get()->n - 1].slot;
    deadlines_remove(h.get(), last);
    expect_invariants(h.get());
    deadlines_remove(h.get(), 6); // again: a no-op
    EXPECT_EQ(deadlines_count(h.get()), 12u);
    EXPECT_FALSE(deadlines_has(h.get(), 0));
    EXPECT_FALSE(deadlines_has(h.get(), 6));
    EXPECT_TRUE(deadlines_has(h.get(), 1));
    std::vector<Popped> got = h.drain();
    std::vector<uint32_t> want;
    for (uint32_t s = 1; s < 15; s++)
        if (s != 6 && s != last)
            want.push_back(s);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); i++) {
        EXPECT_EQ(got[i].slot, want[i]);
        EXPECT_EQ(got[i].at, 10u * (want[i] + 1));
    }
}

TEST(Deadlines, PopExpiredOnlyWhenDue)
{
    Heap h;
    ASSERT_EQ(deadlines_set(h.get(), 1, 11, 1000), 0);
    ASSERT_EQ(deadlines_set(h.get(), 2, 22, 2000), 0);
    uint32_t slot = 0, gen = 0;
    EXPECT_FALSE(deadlines_pop_expired(h.get(), 999, &slot, &gen));
    EXPECT_EQ(slot, 0u);                                            // untouched
    ASSERT_TRUE(deadlines_pop_expired(h.get(), 1000, &slot, &gen)); // due at its deadline
    EXPECT_EQ(slot, 1u);
    EXPECT_EQ(gen, 11u);
    EXPECT_FALSE(deadlines_pop_expired(h.get(), 1999, &slot, &gen));
    ASSERT_TRUE(deadlines_pop_expired(h.get(), 5000, nullptr, &gen));
    EXPECT_EQ(gen, 22u);
    EXPECT_FALSE(deadlines_pop_expired(h.get(), UINT64_MAX, &slot, &gen));
}

TEST(Deadlines, TimeoutRoundsUp)
{
    Heap h;
    const uint64_t base = 5000000000ull;
    ASSERT_EQ(deadlines_set(h.get(), 0, 0, base), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base - 1), 1);       // 1 ns left
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base - 1000000), 1); // exactly 1 ms
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base - 1000001), 2);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base - 1999999), 2);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base - 2500000000ull), 2500);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base), 0);     // due
    EXPECT_EQ(deadlines_timeout_ms(h.get(), base + 7), 0); // overdue
    // Far away: capped at INT_MAX ms (about 24.8 days).
    ASSERT_EQ(deadlines_set(h.get(), 0, 0, UINT64_MAX), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), INT_MAX);
    ASSERT_EQ(deadlines_set(h.get(), 0, 0, (uint64_t)INT_MAX * 1000000u + 1), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), INT_MAX); // INT_MAX + 1 ms, capped
    ASSERT_EQ(deadlines_set(h.get(), 0, 0, (uint64_t)INT_MAX * 1000000u - 1), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), INT_MAX);
    ASSERT_EQ(deadlines_set(h.get(), 0, 0, (uint64_t)(INT_MAX - 1) * 1000000u), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), INT_MAX - 1);
    // The earliest entry decides.
    ASSERT_EQ(deadlines_set(h.get(), 1, 0, 3000000), 0);
    EXPECT_EQ(deadlines_timeout_ms(h.get(), 0), 3);
}

TEST(Deadlines, GrowsPastInitialCapacity)
{
    Heap h;
    const uint32_t n = 1000; // well past the first 16 places
    for (uint32_t i = 0; i < n; i++) {
        uint32_t slot = (i * 7919u) % n; // every slot once, scrambled
        ASSERT_EQ(deadlines_set(h.get(), slot, slot ^ 0x5a5a5a5au, 1000000 - slot), 0);
    }
    expect_invariants(h.get());
    EXPECT_EQ(deadlines_count(h.get()), n);
    EXPECT_GE(h.get()->heap_cap, n);
    EXPECT_GE(h.get()->pos_cap, n);
    // A sparse slot far beyond: the index grows to hold it.
    ASSERT_EQ(deadlines_set(h.get(), 100000, 1, 5), 0);
    EXPECT_TRUE(deadlines_has(h.get(), 100000));
    std::vector<Popped> got = h.drain();
    ASSERT_EQ(got.size(), n + 1);
    EXPECT_EQ(got[0].slot, 100000u);
    for (uint32_t i = 1; i <= n; i++) {
        uint32_t slot = n - i; // latest slot = earliest deadline
        EXPECT_EQ(got[i].slot, slot);
        EXPECT_EQ(got[i].gen, slot ^ 0x5a5a5a5au);
        EXPECT_EQ(got[i].at, 1000000u - slot);
    }
}

TEST(Deadlines, ReserveThenNoReallocation)
{
    Heap h;
    ASSERT_EQ(deadlines_reserve(h.get(), 100), 0);
    const struct deadline_entry *heap = h.get()->heap;
    const uint32_t *pos = h.get()->pos;
    ASSERT_NE(heap, nullptr);
    std::mt19937 rng(7);
    for (int i = 0; i < 10000; i++) {
        uint32_t slot = rng() % 100;
        if (rng() % 3 == 0)
            deadlines_remove(h.get(), slot);
        else
            ASSERT_EQ(deadlines_set(h.get(), slot, i, rng() % 1000), 0);
        uint32_t s, g;
        if (rng() % 5 == 0)
            deadlines_pop_expired(h.get(), rng() % 1000, &s, &g);
    }
    EXPECT_EQ(h.get()->heap, heap); // the same arrays: nothing reallocated
    EXPECT_EQ(h.get()->pos, pos);
    expect_invariants(h.get());
}

TEST(Deadlines, InvalidSlot)
{
    Heap h;
    errno = 0;
    EXPECT_EQ(deadlines_set(h.get(), UINT32_MAX, 0, 1), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(deadlines_count(h.get()), 0u);
    EXPECT_FALSE(deadlines_has(h.get(), UINT32_MAX));
}

TEST(Deadlines, FreeThenReuse)
{
    struct deadlines h;
    ASSERT_EQ(deadlines_init(&h), 0);
    ASSERT_EQ(deadlines_set(&h, 40, 1, 10), 0);
    deadlines_free(&h);
    EXPECT_EQ(deadlines_count(&h), 0u);
    EXPECT_FALSE(deadlines_has(&h, 40));
    ASSERT_EQ(deadlines_set(&h, 3, 2, 20), 0);
    uint32_t slot, gen;
    ASSERT_TRUE(deadlines_pop_expired(&h, 20, &slot, &gen));
    EXPECT_EQ(slot, 3u);
    deadlines_free(&h);
    deadlines_free(&h); // twice: still safe
}

// The model: deadline -> (slot, gen); plus slot -> its deadline, so that a
// move or remove finds the model entry.  The heap must agree with it after
// every step, and pop in (deadline, slot) order.
class Model
{
  public:
    void set(uint32_t slot, uint32_t gen, uint64_t at)
    {
        remove(slot);
        by_time_.emplace(at, std::make_pair(slot, gen));
        at_[slot] = at;
    }
    void remove(uint32_t slot)
    {
        auto it = at_.find(slot);
        if (it == at_.end())
            return;
        auto range = by_time_.equal_range(it->second);
        for (auto e = range.first; e != range.second; ++e)
            if (e->second.first == slot) {
                by_time_.erase(e);
                break;
            }
        at_.erase(it);
    }
    // The earliest entry (lowest slot among equal deadlines).
    bool top(uint64_t *at, uint32_t *slot, uint32_t *gen) const
    {
        if (by_time_.empty())
            return false;
        auto range = by_time_.equal_range(by_time_.begin()->first);
        auto best = range.first;
        for (auto e = range.first; e != range.second; ++e)
            if (e->second.first < best->second.first)
                best = e;
        *at = best->first;
        *slot = best->second.first;
        *gen = best->second.second;
        return true;
    }
    size_t size() const
    {
        return by_time_.size();
    }
    bool has(uint32_t slot) const
    {
        return at_.count(slot) != 0;
    }
    // Is (slot, gen, at) an entry of the model?
    bool holds(uint32_t slot, uint32_t gen, uint64_t at) const
    {
        auto range = by_time_.equal_range(at);
        for (auto e = range.first; e != range.second; ++e)
            if (e->second.first == slot && e->second.second == gen)
                return true;
        return false;
    }

  private:
    std::multimap<uint64_t, std::pair<uint32_t, uint32_t>> by_time_;
    std::map<uint32_t, uint64_t> at_;
};

TEST(Deadlines, RandomAgainstModel)
{
    Heap h;
    Model m;
    std::mt19937_64 rng(20261124); // fixed seed: a reproducible sequence
    const uint32_t kSlots = 300;   // enough to grow several times past 16
    uint64_t now = 0;
    uint32_t next_gen = 1;
    const int kSteps = 200000;
    for (int step = 0; step < kSteps; step++) {
        uint32_t slot = static_cast<uint32_t>(rng() % kSlots);
        unsigned op = static_cast<unsigned>(rng() % 10);
        if (op < 5) { // set: an insert, or a move (earlier or later)
            // Deadlines from a small range so that ties happen often.
            uint64_t at = now + rng() % 5000;
            uint32_t gen = next_gen++;
            ASSERT_EQ(deadlines_set(h.get(), slot, gen, at), 0);
            m.set(slot, gen, at);
        } else if (op < 7) { // remove (often of a slot with none)
            deadlines_remove(h.get(), slot);
            m.remove(slot);
        } else { // time passes; pop what expired, in order
            now += rng() % 400;
            uint32_t s, g;
            uint64_t want_at;
            uint32_t want_slot, want_gen;
            while (deadlines_pop_expired(h.get(), now, &s, &g)) {
                ASSERT_TRUE(m.top(&want_at, &want_slot, &want_gen)) << "step " << step;
                ASSERT_LE(want_at, now);
                ASSERT_EQ(s, want_slot) << "step " << step;
                ASSERT_EQ(g, want_gen) << "step " << step;
                m.remove(s);
            }
            // Whatever is left is not due yet.
            if (m.top(&want_at, &want_slot, &want_gen)) {
                ASSERT_GT(want_at, now) << "step " << step;
            }
        }
        // Same size, same top, same membership for this slot.
        ASSERT_EQ(deadlines_count(h.get()), m.size()) << "step " << step;
        ASSERT_EQ(deadlines_has(h.get(), slot), m.has(slot)) << "step " << step;
        uint64_t at = 0, want_at = 0;
        uint32_t s = 0, g = 0, want_slot = 0, want_gen = 0;
        bool any = deadlines_peek(h.get(), &at, &s, &g);
        ASSERT_EQ(any, m.top(&want_at, &want_slot, &want_gen)) << "step " << step;
        if (any) {
            ASSERT_EQ(at, want_at) << "step " << step;
            ASSERT_EQ(s, want_slot) << "step " << step;
            ASSERT_EQ(g, want_gen) << "step " << step;
            int want_ms = at <= now ? 0 : static_cast<int>((at - now + 999999) / 1000000);
            ASSERT_EQ(deadlines_timeout_ms(h.get(), now), want_ms);
        } else {
            ASSERT_EQ(deadlines_timeout_ms(h.get(), now), -1);
        }
        if (step % 997 == 0) { // the full structure, now and then
            expect_invariants(h.get());
            for (uint32_t i = 0; i < h.get()->n; i++) {
                const struct deadline_entry &e = h.get()->heap[i];
                ASSERT_TRUE(m.holds(e.slot, e.gen, e.deadline_ns)) << "step " << step;
            }
        }
    }
    // Finally pop everything and compare the whole order.
    std::vector<Popped> got = h.drain();
    ASSERT_EQ(got.size(), m.size());
    for (const Popped &p : got) {
        uint64_t want_at;
        uint32_t want_slot, want_gen;
        ASSERT_TRUE(m.top(&want_at, &want_slot, &want_gen));
        EXPECT_EQ(p.at, want_at);
        EXPECT_EQ(p.slot, want_slot);
        EXPECT_EQ(p.gen, want_gen);
        m.remove(want_slot);
    }
    EXPECT_EQ(m.size(), 0u);
}

} // namespace
