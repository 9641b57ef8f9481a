// test_node_queue.cc - unit tests of sched/node_queue.h, the node agent's
// queue and its half of PMC's deferral rule.
//
// Order: tasks start in priority order (larger first), in arrival order
// among equal priorities, when they fit: a task pushed later with a higher
// priority goes in front of the lower ones, also while the ring is wrapped.  Deferral at the agent:
// when the first task does not fit the node's free CPUs, memory (MB) or GPUs now, the first one
// that fits within NQ_DEFER_SCAN entries starts instead and the skipped ones keep their order; a
// fitting task deeper than NQ_DEFER_SCAN is not reached.  Starting the tasks of a queue against a
// free-resource budget (as agent_pump() and the simulator do) never overcommits and, once resources
// come back, starts the deferred tasks first.  nq_pop ignores fit; nq_pop_back_fit takes the last
// task that fits; a caller's condition (nq_set_condition) passes over the entries it refuses, as
// take and peek do those that do not fit, is asked only of entries that fit, and nq_pop and
// nq_pop_back_fit do not ask it; nq_push_front puts a task back ahead of its priority; the ring
// keeps its order across growth while wrapped; the batch handle travels with each task.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <vector>

#include "io/msg.h"
#include "sched/node_queue.h"

namespace
{

// The item the agent keeps (engine/node/agent_internal.h): the queue copies it
// in and out whole and knows only the needs given beside it.
struct node_task {
    struct msg_task t;
    void *batch;
};

struct Queue {
    struct node_queue q;
    Queue()
    {
        nq_init(&q, sizeof(struct node_task));
    }
    ~Queue()
    {
        nq_free(&q);
    }
};

struct msg_task task(uint32_t id, uint32_t cpus, uint32_t mem = 0, uint32_t gpus = 0,
                     int32_t prio = 0)
{
    struct msg_task t = {};
    t.id = id;
    t.priority = prio;
    t.attempt = 1;
    t.cpus = cpus;
    t.memory_mb = mem;
    t.gpus = gpus;
    return t;
}

void push(Queue &q, const struct msg_task &t, void *batch = nullptr)
{
    struct node_task nt = {t, batch};
    ASSERT_EQ(nq_push(&q.q, t.cpus, t.memory_mb, t.gpus, t.priority, &nt), 0);
}

// Ids of the tasks left, in order (drains the queue).
std::vector<uint32_t> drain(Queue &q)
{
    std::vector<uint32_t> ids;
    struct node_task nt;
    while (nq_pop(&q.q, &nt) == 1)
        ids.push_back(nt.t.id);
    return ids;
}

// Take what fits the budget, as agent_pump() does; returns the ids started.
std::vector<uint32_t> pump(Queue &q, uint32_t &cpus, uint64_t &mem, uint32_t &gpus)
{
    std::vector<uint32_t> started;
    struct node_task nt;
    while (nq_take_fit(&q.q, cpus, mem, gpus, &nt) == 1) {
        EXPECT_LE(nt.t.cpus, cpus);
        EXPECT_LE(nt.t.memory_mb, mem);
        EXPECT_LE(nt.t.gpus, gpus);
        cpus -= nt.t.cpus;
        mem -= nt.t.memory_mb;
        gpus -= nt.t.gpus;
        started.push_back(nt.t.id);
    }
    return started;
}

TEST(NodeQueue, EmptyTakesNothing)
{
    Queue q;
    struct node_task nt;
    EXPECT_EQ(nq_take_fit(&q.q, 100, 100, 100, &nt), 0);
    EXPECT_EQ(nq_pop(&q.q, &nt), 0);
    EXPECT_EQ(nq_len(&q.q), 0u);
}

TEST(NodeQueue, FittingTasksStartInArrivalOrder)
{
    Queue q;
    int batch_a = 0, batch_b = 0;
    for (uint32_t i = 0; i < 10; i++)
        push(q, task(i, 1), i < 5 ? &batch_a : &batch_b);
    struct node_task nt;
    for (uint32_t i = 0; i < 10; i++) {
        ASSERT_EQ(nq_take_fit(&q.q, 1, 0, 0, &nt), 1);
        EXPECT_EQ(nt.t.id, i);
        EXPECT_EQ(nt.batch, i < 5 ? static_cast<void *>(&batch_a) : &batch_b);
    }
    EXPECT_EQ(nq_len(&q.q), 0u);
}

TEST(NodeQueue, LaterHigherPriorityGoesInFrontOfLowerOnes)
{
    Queue q;
    push(q, task(0, 1, 0, 0, 5));
    push(q, task(1, 1, 0, 0, 1));
    push(q, task(2, 1, 0, 0, 1));
    push(q, task(3, 1, 0, 0, 5)); // behind 0 (equal), in front of 1 and 2
    push(q, task(4, 1, 0, 0, 9)); // in front of everything
    push(q, task(5, 1, 0, 0, -3));
    push(q, task(6, 1, 0, 0, 1)); // behind 1 and 2, in front of 5
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{4, 0, 3, 1, 2, 6, 5}));
}

// nq_pop_back_fit() takes the last task that fits (the lowest priority,
// the last come among equals): across the ring's wrap too, the others
// keeping their order.
TEST(NodeQueue, PopBackFitTakesWhatWouldStartLastOfWhatFits)
{
    Queue q;
    struct node_task nt;
    EXPECT_EQ(nq_pop_back_fit(&q.q, 8, 1000, 1, &nt), 0);
    for (uint32_t i = 0; i < 60; i++) // move the head near the end of 64 cells
        push(q, task(1000 + i, 1));
    for (uint32_t i = 0; i < 60; i++)
        ASSERT_EQ(nq_pop(&q.q, &nt), 1);
    push(q, task(0, 1, 0, 0, 5));
    push(q, task(1, 1, 0, 0, 1));
    push(q, task(2, 4, 0, 0, 1)); // too big for 2 CPUs
    push(q, task(3, 1, 0, 0, 5));
    push(q, task(4, 1, 500, 0, -3)); // too much memory for 100 MB
    push(q, task(5, 1, 0, 0, 9));
    std::vector<uint32_t> back;
    while (nq_pop_back_fit(&q.q, 2, 100, 0, &nt) == 1)
        back.push_back(nt.t.id);
    EXPECT_EQ(back, (std::vector<uint32_t>{1, 3, 0, 5}));
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{2, 4}));
}

// nq_push_front(): a task taken from the front goes back in front of every
// task of its priority or lower, behind higher ones, across the ring's
// start and through a growth; several go back last taken first, so that
// the queue is as before with the higher ones that came meanwhile ahead.
TEST(NodeQueue, PushFrontGoesAheadOfItsPriorityBehindHigherOnes)
{
    Queue empty; // its head at 0: each push front wraps to the ring's end
    for (uint32_t i = 0; i < 3; i++) {
        struct node_task nt = {task(i, 1, 0, 0, i < 2 ? 1 : 5), nullptr};
        ASSERT_EQ(nq_push_front(&empty.q, 1, 0, 0, nt.t.priority, &nt), 0);
    }
    EXPECT_EQ(drain(empty), (std::vector<uint32_t>{2, 1, 0}));
    Queue q;
    for (uint32_t i = 0; i < 6; i++)
        push(q, task(i, 1, 0, 0, i < 3 ? 5 : 1));
    struct node_task taken[2];
    ASSERT_EQ(nq_pop(&q.q, &taken[0]), 1); // 0 and 1, as if staged
    ASSERT_EQ(nq_pop(&q.q, &taken[1]), 1);
    push(q, task(6, 1, 0, 0, 5)); // the same priority: behind 2
    push(q, task(7, 1, 0, 0, 9)); // higher: in front of everything
    for (int k = 1; k >= 0; k--) {
        const struct msg_task &t = taken[k].t;
        ASSERT_EQ(nq_push_front(&q.q, t.cpus, t.memory_mb, t.gpus, t.priority, &taken[k]), 0);
    }
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{7, 0, 1, 2, 6, 3, 4, 5}));
    for (uint32_t i = 0; i < 64; i++) // full: the next push front grows it
        push(q, task(100 + i, 1, 0, 0, i % 2 ? 3 : 8));
    struct node_task back = {task(99, 1, 0, 0, 3), nullptr};
    ASSERT_EQ(nq_push_front(&q.q, 1, 0, 0, 3, &back), 0);
    std::vector<uint32_t> want;
    for (uint32_t i = 0; i < 64; i += 2)
        want.push_back(100 + i);
    want.push_back(99);
    for (uint32_t i = 1; i < 64; i += 2)
        want.push_back(100 + i);
    EXPECT_EQ(drain(q), want);
}

TEST(NodeQueue, PriorityOrderHoldsWhileTheRingIsWrapped)
{
    Queue q;
    struct node_task nt;
    for (uint32_t i = 0; i < 60; i++) // move the head near the end of 64 cells
        push(q, task(1000 + i, 1));
    for (uint32_t i = 0; i < 60; i++)
        ASSERT_EQ(nq_pop(&q.q, &nt), 1);
    for (uint32_t i = 0; i < 10; i++)
        push(q, task(i, 1, 0, 0, 0));
    push(q, task(10, 1, 0, 0, 1)); // moves the ten back across the wrap
    std::vector<uint32_t> want = {10};
    for (uint32_t i = 0; i < 10; i++)
        want.push_back(i);
    EXPECT_EQ(drain(q), want);
}

TEST(NodeQueue, DeferralSkipsToLowerPriorityThatFits)
{
    Queue q;
    push(q, task(0, 1, 0, 0, 0));
    push(q, task(1, 4, 0, 0, 7)); // highest, but needs 4 CPUs
    struct node_task nt;
    ASSERT_EQ(nq_take_fit(&q.q, 2, 0, 0, &nt), 1);
    EXPECT_EQ(nt.t.id, 0u);
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{1}));
}

TEST(NodeQueue, TaskThatDoesNotFitNowIsDeferred)
{
    Queue q;
    push(q, task(0, 8));         // 8 CPUs: not now
    push(q, task(1, 1, 5000));   // memory: not now
    push(q, task(2, 1, 0, 2));   // GPUs: not now
    push(q, task(3, 2, 100, 1)); // fits
    push(q, task(4, 1));
    uint32_t cpus = 4, gpus = 1;
    uint64_t mem = 1000;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{3, 4}));
    EXPECT_EQ(cpus, 1u);
    EXPECT_EQ(mem, 900u);
    EXPECT_EQ(gpus, 0u);
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{0, 1, 2})) << "deferred tasks keep their order";
}

// nq_peek_fit names the task nq_take_fit would take, with its needs, and
// leaves the queue as it was; NULL when nothing fits.
TEST(NodeQueue, PeekFitNamesWhatTakeFitTakes)
{
    Queue q;
    push(q, task(0, 8));           // does not fit 2 CPUs
    push(q, task(1, 1, 300, 1));   // fits 2 CPUs, 500 MB, 1 GPU
    push(q, task(2, 1, 0, 0, -1)); // lower priority, fits too
    uint32_t cpus = 0, gpus = 0;
    uint64_t mem = 0;
    size_t pos = 99;
    auto *p = static_cast<const struct node_task *>(
        nq_peek_fit(&q.q, 2, 500, 1, &cpus, &mem, &gpus, &pos));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->t.id, 1u);
    EXPECT_EQ(cpus, 1u);
    EXPECT_EQ(mem, 300u);
    EXPECT_EQ(gpus, 1u);
    EXPECT_EQ(pos, 1u);
    EXPECT_EQ(nq_len(&q.q), 3u) << "a peek takes nothing";
    p = static_cast<const struct node_task *>(nq_peek_fit(&q.q, 2, 0, 0, &cpus, &mem, &gpus, &pos));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->t.id, 2u) << "without memory and GPUs, the deferral pick";
    EXPECT_EQ(pos, 2u);
    EXPECT_EQ(nq_peek_fit(&q.q, 0, 0, 0, &cpus, &mem, &gpus, &pos), nullptr);
    struct node_task nt;
    ASSERT_EQ(nq_take_fit(&q.q, 2, 500, 1, &nt), 1);
    EXPECT_EQ(nt.t.id, 1u);
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{0, 2}));
}

// nq_take_at() takes the task a peek named, and only it.
TEST(NodeQueue, TakeAtTakesThePeekedTask)
{
    Queue q;
    push(q, task(0, 8));
    push(q, task(1, 1));
    push(q, task(2, 1));
    uint32_t cpus = 0, gpus = 0;
    uint64_t mem = 0;
    size_t pos = 99;
    ASSERT_NE(nq_peek_fit(&q.q, 2, 0, 0, &cpus, &mem, &gpus, &pos), nullptr);
    struct node_task nt;
    nq_take_at(&q.q, pos, &nt);
    EXPECT_EQ(nt.t.id, 1u);
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{0, 2}));
}

// The condition the agent gives its queue (no task running here writes the
// same -F file), modelled as a set of refused ids; it records what it was
// asked.
struct Refuse {
    std::vector<uint32_t> ids, asked;
};

bool refuse_listed(const void *item, void *ctx)
{
    auto *r = static_cast<Refuse *>(ctx);
    uint32_t id = static_cast<const struct node_task *>(item)->t.id;
    r->asked.push_back(id);
    return std::find(r->ids.begin(), r->ids.end(), id) == r->ids.end();
}

TEST(NodeQueue, ConditionPassesOverRefusedTasksAndTheNextGoAhead)
{
    Queue q;
    Refuse r;
    r.ids = {0, 1};
    nq_set_condition(&q.q, refuse_listed, &r);
    push(q, task(0, 1));
    push(q, task(1, 1));
    push(q, task(2, 8)); // does not fit: the condition is not asked
    push(q, task(3, 1));
    push(q, task(4, 1));
    uint32_t cpus = 0, gpus = 0;
    uint64_t mem = 0;
    size_t pos = 99;
    auto *p =
        static_cast<const struct node_task *>(nq_peek_fit(&q.q, 4, 0, 0, &cpus, &mem, &gpus, &pos));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->t.id, 3u) << "a peek passes over refused entries too";
    EXPECT_EQ(pos, 3u);
    EXPECT_EQ(r.asked, (std::vector<uint32_t>{0, 1, 3})) << "asked only of entries that fit";
    cpus = 4;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{3, 4}));
    r.ids = {1}; // the task that held task 0 back has ended
    cpus = 4;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{0}));
    r.ids.clear();
    cpus = 4;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{1}))
        << "a refused task keeps its place ahead of those behind it";
    EXPECT_EQ(drain(q), (std::vector<uint32_t>{2}));
}

TEST(NodeQueue, TasksLeavingTheNodeAreNotAskedTheCondition)
{
    Queue q;
    Refuse r;
    r.ids = {0, 1, 2};
    nq_set_condition(&q.q, refuse_listed, &r);
    for (uint32_t i = 0; i < 3; i++)
        push(q, task(i, 1));
    struct node_task nt;
    EXPECT_EQ(nq_take_fit(&q.q, 4, 0, 0, &nt), 0) << "every entry refused";
    r.asked.clear();
    ASSERT_EQ(nq_pop_back_fit(&q.q, 4, 0, 0, &nt), 1);
    EXPECT_EQ(nt.t.id, 2u);
    ASSERT_EQ(nq_pop(&q.q, &nt), 1);
    EXPECT_EQ(nt.t.id, 0u);
    EXPECT_TRUE(r.asked.empty());
    nq_set_condition(&q.q, nullptr, nullptr);
    ASSERT_EQ(nq_take_fit(&q.q, 4, 0, 0, &nt), 1) << "without a condition, what fits";
    EXPECT_EQ(nt.t.id, 1u);
}

TEST(NodeQueue, DeferredTaskStartsFirstOnceResourcesReturn)
{
    Queue q;
    push(q, task(0, 4));
    for (uint32_t i = 1; i <= 6; i++)
        push(q, task(i, 1));
    uint32_t cpus = 3, gpus = 0;
    uint64_t mem = 0;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{1, 2, 3}));
    cpus += 3; // the three 1-CPU tasks end; 3 free is still short of 4
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{4, 5, 6}));
    cpus += 4;
    EXPECT_EQ(pump(q, cpus, mem, gpus), (std::vector<uint32_t>{0}));
    EXPECT_EQ(nq_len(&q.q), 0u);
}

TEST(NodeQueue, DeferralLooksAtMostNqDeferScanDeep)
{
    Queue q;
    for (uint32_t i = 0; i < NQ_DEFER_SCAN; i++)
        push(q, task(i, 8)); // none fits 4 CPUs
    push(q, task(NQ_DEFER_SCAN, 1));
    struct node_task nt;
    EXPECT_EQ(nq_take_fit(&q.q, 4, 0, 0, &nt), 0) << "a fit past the scan depth was taken";
    EXPECT_EQ(nq_len(&q.q), static_cast<size_t>(NQ_DEFER_SCAN) + 1);
    ASSERT_EQ(nq_take_fit(&q.q, 8, 0, 0, &nt), 1);
    EXPECT_EQ(nt.t.id, 0u);
    // one entry shorter: now the 1-CPU task is within reach
    ASSERT_EQ(nq_take_fit(&q.q, 4, 0, 0, &nt), 1);
    EXPECT_EQ(nt.t.id, static_cast<uint32_t>(NQ_DEFER_SCAN));
}

TEST(NodeQueue, RandomRunMatchesAModelAcrossGrowth)
{
    std::mt19937 rng(7);
    Queue q;
    // the model: higher priority first, first in first out within one
    // priority, a task put back (nq_push_front()) ahead of its priority;
    // a map, so the model costs log n per step.  20,000 steps (the queue
    // was a ring whose pushes moved the lower-priority entries: 50,000
    // took 92 s under ThreadSanitizer) grow the queue from 64 entries past
    // 1,000; takes alternate between nq_take_fit() and nq_peek_fit() +
    // nq_take_at().
    // key: (-priority, arrival); nq_push_front() arrivals count down from -1
    std::map<std::pair<int32_t, int64_t>, struct msg_task> model;
    uint32_t next = 0;
    int64_t front = 0;
    size_t peak = 0;
    for (int step = 0; step < 20000; step++) {
        unsigned op = rng() % 100;
        if (op < 50) {
            struct msg_task t = task(next++, 1 + rng() % 8, rng() % 2000, rng() % 3,
                                     static_cast<int32_t>(rng() % 4));
            push(q, t);
            model.emplace(std::make_pair(-t.priority, static_cast<int64_t>(t.id)), t);
        } else if (op < 55) { // a staged task back: ahead of its priority
            struct msg_task t = task(next++, 1 + rng() % 8, rng() % 2000, rng() % 3,
                                     static_cast<int32_t>(rng() % 4));
            struct node_task nt = {t, nullptr};
            ASSERT_EQ(nq_push_front(&q.q, t.cpus, t.memory_mb, t.gpus, t.priority, &nt), 0);
            model.emplace(std::make_pair(-t.priority, --front), t);
        } else if (op < 62) { // a recall: the task that would start last
            struct node_task nt;
            uint32_t cpus = 1 + rng() % 8, gpus = rng() % 3;
            uint64_t mem = rng() % 3000;
            auto it = model.end(); // the last that fits
            for (auto r = model.rbegin(); r != model.rend(); ++r)
                if (r->second.cpus <= cpus && r->second.memory_mb <= mem &&
                    r->second.gpus <= gpus) {
                    it = std::prev(r.base());
                    break;
                }
            ASSERT_EQ(nq_pop_back_fit(&q.q, cpus, mem, gpus, &nt), it == model.end() ? 0 : 1);
            if (it != model.end()) {
                ASSERT_EQ(nt.t.id, it->second.id);
                model.erase(it);
            }
        } else {
            uint32_t cpus = rng() % 10, gpus = rng() % 3;
            uint64_t mem = rng() % 3000;
            auto it = model.begin(); // the first fit within the scan depth
            size_t k = 0;
            for (; it != model.end() && k < NQ_DEFER_SCAN; ++it, ++k) {
                const struct msg_task &m = it->second;
                if (m.cpus <= cpus && m.memory_mb <= mem && m.gpus <= gpus)
                    break;
            }
            bool fits = it != model.end() && k < NQ_DEFER_SCAN;
            struct node_task nt;
            int got;
            if (op % 2) { // peek, then take what it named (agent_stage.c)
                uint32_t c, g;
                uint64_t m;
                size_t pos;
                const void *seen = nq_peek_fit(&q.q, cpus, mem, gpus, &c, &m, &g, &pos);
                got = seen != nullptr;
                if (seen) {
                    struct node_task peeked;
                    memcpy(&peeked, seen, sizeof peeked);
                    nq_take_at(&q.q, pos, &nt);
                    ASSERT_EQ(peeked.t.id, nt.t.id);
                    ASSERT_EQ(c, nt.t.cpus);
                }
            } else {
                got = nq_take_fit(&q.q, cpus, mem, gpus, &nt);
            }
            ASSERT_EQ(got, fits ? 1 : 0);
            if (got) {
                ASSERT_EQ(nt.t.id, it->second.id);
                model.erase(it);
            }
        }
        ASSERT_EQ(nq_len(&q.q), model.size());
        peak = std::max(peak, model.size());
    }
    EXPECT_GT(peak, 1000u) << "the queue did not grow as far as meant";
    std::vector<uint32_t> want;
    for (const auto &kv : model)
        want.push_back(kv.second.id);
    EXPECT_EQ(drain(q), want);
}

} // namespace
