// test_placement.cc - unit tests of sched/placement.h, the master's
// dispatch policy.
//
// Nodes: the prefetch window is max(PLACEMENT_PREFETCH_MIN, cpus), a node
// with 0 CPUs never opens, registration past max_nodes is ENOSPC until
// placement_grow() makes room (nodes joining a running master), a closed
// node (lost or leaving) is never picked, opened, counted idle, asked back
// or counted capable, and releasing its tasks keeps it so.  The open
// list: its invariants (open iff listed, open nodes have room, room is the
// sum of the open nodes' room, a closed node with room is above the
// low-water mark) after every step of a random run checked against a model,
// and the hysteresis (a full node reopens only at cpus + W/2).  Accounting:
// CPUs, memory (twice over) and GPUs (twice over) bound what a node is sent,
// a task asking more than a node offers never goes there, and a release
// restores the numbers exactly.  Placement: round-robin fairness (equal
// nodes get tasks within one of each other), priorities with ties (larger
// first, FIFO among equals: the ready queue's order), PMC's deferral rule
// (a task that fits no node now keeps its place while lower ones go, and is
// placed first once room comes back), deferral of a task whose time limit
// outlasts the batch job, a task larger than every node (PMC's "No host is
// capable" error), a failing assign callback (no task lost, the assigned
// ones committed), and a round that stops once no node has room.
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "sched/placement.h"
#include "sched/ready_queue.h"

namespace
{

struct PlacementDeleter {
    void operator()(struct placement *p) const
    {
        placement_destroy(p);
    }
};
using PlacementPtr = std::unique_ptr<struct placement, PlacementDeleter>;

struct RqDeleter {
    void operator()(struct ready_queue *q) const
    {
        rq_destroy(q);
    }
};
using RqPtr = std::unique_ptr<struct ready_queue, RqDeleter>;

struct NodeSpec {
    uint32_t cpus;
    uint64_t memory_mb;
    uint32_t gpus;
};

PlacementPtr make_placement(const std::vector<NodeSpec> &nodes, int max_nodes = -1)
{
    PlacementPtr p(placement_create(max_nodes < 0 ? static_cast<int>(nodes.size()) : max_nodes));
    EXPECT_NE(p, nullptr);
    for (const NodeSpec &n : nodes)
        EXPECT_GE(placement_add_node(p.get(), n.cpus, n.memory_mb, n.gpus), 0);
    return p;
}

// What each task asks (the DAG's columns) and its priority.
struct Tasks {
    std::vector<uint32_t> cpus, memory_mb, gpus, limit_ms;
    std::vector<int32_t> prio;
    uint32_t default_limit_ms = 0;

    uint32_t add(uint32_t c, uint32_t mem = 0, uint32_t g = 0, int32_t p = 0, uint32_t lim = 0)
    {
        cpus.push_back(c);
        memory_mb.push_back(mem);
        gpus.push_back(g);
        prio.push_back(p);
        limit_ms.push_back(lim);
        return static_cast<uint32_t>(cpus.size() - 1);
    }
    struct placement_demand demand() const
    {
        return {cpus.data(), memory_mb.data(), gpus.data(), limit_ms.data(), default_limit_ms,
                nullptr,     UINT32_MAX,       nullptr,     nullptr};
    }
};

// A dispatch round's assignments, in order, from the callback.
struct Recorder {
    std::vector<std::pair<uint32_t, int>> assigned; // (task, node)
    long fail_at = -1;                              // fail the call with this index
    long calls = 0;
};

int record_assign(void *ctx, uint32_t t, int i)
{
    auto *r = static_cast<Recorder *>(ctx);
    if (r->calls++ == r->fail_at)
        return -1;
    r->assigned.emplace_back(t, i);
    return 0;
}

Recorder dispatch(struct placement *p, struct ready_queue *q, const Tasks &tasks,
                  double time_left = INFINITY, int *rc = nullptr, long fail_at = -1)
{
    Recorder r;
    r.fail_at = fail_at;
    struct placement_demand d = tasks.demand();
    int res = placement_dispatch(p, q, &d, time_left, record_assign, &r);
    if (rc)
        *rc = res;
    else
        EXPECT_EQ(res, 0);
    return r;
}

RqPtr queue_of(const Tasks &tasks, const std::vector<uint32_t> &order)
{
    RqPtr q(rq_create());
    EXPECT_NE(q, nullptr);
    for (uint32_t t : order)
        EXPECT_EQ(rq_push(q.get(), t, tasks.prio[t]), 0);
    return q;
}

RqPtr queue_all(const Tasks &tasks)
{
    std::vector<uint32_t> order;
    for (uint32_t t = 0; t < tasks.cpus.size(); t++)
        order.push_back(t);
    return queue_of(tasks, order);
}

// The ready queue's content in dispatch order (drains it).
std::vector<uint32_t> drain(struct ready_queue *q)
{
    std::vector<uint32_t> out;
    for (size_t b = 0; b < rq_buckets(q); b++)
        while (rq_bucket_size(q, b) > 0)
            out.push_back(rq_bucket_pop(q, b));
    return out;
}

uint32_t room_of(const struct placement_node *n)
{
    return placement_node_room(n);
}

// The open-list invariants of placement.h.
void check_invariants(const struct placement *p)
{
    uint64_t room = 0;
    int open = 0;
    std::vector<int> seen_pos;
    for (int i = 0; i < placement_nnodes(p); i++) {
        const struct placement_node *n = placement_node_at(p, i);
        ASSERT_EQ(n->window, n->cpus > PLACEMENT_PREFETCH_MIN ? n->cpus : PLACEMENT_PREFETCH_MIN);
        if (n->open) {
            open++;
            ASSERT_GT(room_of(n), 0u) << "node " << i << " is open without room";
            ASSERT_GE(n->open_pos, 0);
            ASSERT_LT(n->open_pos, placement_nopen(p));
            seen_pos.push_back(n->open_pos);
            room += room_of(n);
        } else if (room_of(n) > 0) {
            ASSERT_GT(n->committed_cpus, n->cpus + n->window / 2)
                << "node " << i << " is closed below its low-water mark";
        }
    }
    ASSERT_EQ(open, placement_nopen(p));
    std::sort(seen_pos.begin(), seen_pos.end());
    ASSERT_EQ(std::unique(seen_pos.begin(), seen_pos.end()), seen_pos.end())
        << "two open nodes share an open-list position";
    ASSERT_EQ(room, placement_room(p));
    // the idle list: the nodes with CPUs free, and their sum
    uint64_t idle_cpus = 0;
    std::vector<int> idle_pos;
    for (int i = 0; i < placement_nnodes(p); i++) {
        const struct placement_node *n = placement_node_at(p, i);
        ASSERT_EQ(n->idle, !n->closed && n->committed_cpus < n->cpus) << "node " << i;
        if (n->idle) {
            idle_cpus += n->cpus - n->committed_cpus;
            idle_pos.push_back(n->idle_pos);
        }
    }
    std::sort(idle_pos.begin(), idle_pos.end());
    for (size_t k = 0; k < idle_pos.size(); k++)
        ASSERT_EQ(idle_pos[k], static_cast<int>(k)) << "the idle list's positions are not 0..n-1";
    ASSERT_EQ(idle_cpus, placement_idle_cpus(p));
}

// placement_recall()'s requests, in order, from the callback.
struct Recalls {
    std::vector<std::pair<int, uint32_t>> asked; // (node, tasks)
    std::vector<placement_fit> fits;
    long fail_at = -1;
    long calls = 0;
};

int record_recall(void *ctx, int i, uint32_t tasks, const struct placement_fit *fit)
{
    auto *r = static_cast<Recalls *>(ctx);
    if (r->calls++ == r->fail_at)
        return -1;
    r->asked.emplace_back(i, tasks);
    r->fits.push_back(*fit);
    return 0;
}

Recalls recall(struct placement *p, long fail_at = -1, int want_rc = 0)
{
    Recalls r;
    r.fail_at = fail_at;
    EXPECT_EQ(placement_recall(p, record_recall, &r), want_rc);
    return r;
}

// ---- nodes ---------------------------------------------------------------

TEST(Placement, NodesGetAWindowAndOpen)
{
    PlacementPtr p = make_placement({{4, 1000, 0}, {128, 1000, 0}, {0, 1000, 0}});
    ASSERT_EQ(placement_nnodes(p.get()), 3);
    const struct placement_node *small = placement_node_at(p.get(), 0);
    const struct placement_node *big = placement_node_at(p.get(), 1);
    const struct placement_node *none = placement_node_at(p.get(), 2);
    EXPECT_EQ(small->window, static_cast<uint32_t>(PLACEMENT_PREFETCH_MIN));
    EXPECT_EQ(big->window, 128u);
    EXPECT_TRUE(small->open);
    EXPECT_TRUE(big->open);
    EXPECT_FALSE(none->open) << "a node with 0 CPUs must never open";
    EXPECT_EQ(placement_room(p.get()), 4u + PLACEMENT_PREFETCH_MIN + 128u + 128u);
    EXPECT_EQ(placement_nopen(p.get()), 2);
    check_invariants(p.get());
}

TEST(Placement, AddNodePastCapacityIsEnospc)
{
    PlacementPtr p(placement_create(1));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(placement_add_node(p.get(), 4, 100, 0), 0);
    errno = 0;
    EXPECT_EQ(placement_add_node(p.get(), 4, 100, 0), -1);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(placement_nnodes(p.get()), 1);
    placement_destroy(nullptr); // a no-op
}

TEST(Placement, GrowMakesRoomForNodesThatJoin)
{
    PlacementPtr p(placement_create(1));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(placement_add_node(p.get(), 4, 100, 0), 0);
    EXPECT_EQ(placement_grow(p.get(), 1), 0) << "no growth asked: nothing done";
    ASSERT_EQ(placement_grow(p.get(), 3), 0);
    EXPECT_EQ(placement_add_node(p.get(), 8, 100, 0), 1);
    EXPECT_EQ(placement_add_node(p.get(), 2, 100, 0), 2);
    errno = 0;
    EXPECT_EQ(placement_add_node(p.get(), 2, 100, 0), -1);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(placement_nopen(p.get()), 3);
    EXPECT_EQ(placement_idle_cpus(p.get()), 14u);
    check_invariants(p.get());
    // the first node keeps its accounting through the growth
    placement_commit(p.get(), 0, 3, 10, 0);
    ASSERT_EQ(placement_grow(p.get(), 64), 0);
    EXPECT_EQ(placement_node_at(p.get(), 0)->committed_cpus, 3u);
    check_invariants(p.get());
}

TEST(Placement, ClosedNodeIsNeverSentTasksAgain)
{
    PlacementPtr p = make_placement({{2, 1000, 0}, {16, 1000, 0}});
    Tasks tasks;
    for (int k = 0; k < 4; k++)
        tasks.add(1);
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks);
    ASSERT_EQ(r.assigned.size(), 4u);
    // node 0 queues beyond its 2 CPUs (the idle node 1 took its share first)
    placement_commit(p.get(), 0, 2, 0, 0);
    placement_commit(p.get(), 0, 1, 0, 0);
    uint32_t committed = placement_node_at(p.get(), 0)->committed_cpus;
    ASSERT_GT(committed, 2u);
    placement_close_node(p.get(), 0);
    placement_close_node(p.get(), 0); // a no-op
    const struct placement_node *gone = placement_node_at(p.get(), 0);
    EXPECT_TRUE(gone->closed);
    EXPECT_FALSE(gone->open);
    EXPECT_FALSE(gone->idle);
    EXPECT_FALSE(gone->queueing);
    EXPECT_EQ(gone->committed_cpus, committed) << "its tasks stay until released";
    check_invariants(p.get());
    EXPECT_TRUE(recall(p.get()).asked.empty()) << "a closed node is never asked back";
    for (int k = 0; k < 40; k++)
        EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), 1);
    // released to nothing, it stays off every list
    for (uint32_t c = 0; c < committed; c++) {
        placement_release(p.get(), 0, 1, 0, 0);
        check_invariants(p.get());
    }
    EXPECT_FALSE(gone->open);
    EXPECT_FALSE(gone->idle);
    EXPECT_EQ(placement_node_room(gone), 0u);
    EXPECT_EQ(placement_idle_cpus(p.get()), 16u - placement_node_at(p.get(), 1)->committed_cpus);
    // a task only the closed node could hold is no longer capable
    struct pmc_error err;
    EXPECT_EQ(placement_check_capable(p.get(), 16, 0, 0, "t", &err), 0);
    placement_close_node(p.get(), 1);
    check_invariants(p.get());
    EXPECT_EQ(placement_room(p.get()), 0u);
    EXPECT_EQ(placement_check_capable(p.get(), 1, 0, 0, "t", &err), -1);
    EXPECT_STREQ(err.text, "No host is capable of running task t (it requests 1 CPUs, 0 MB of "
                           "memory, 0 GPUs; the hosts offer none (no host))");
}

TEST(Placement, EmptyPlacementPlacesNothing)
{
    PlacementPtr p(placement_create(0));
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), -1);
    EXPECT_EQ(placement_room(p.get()), 0u);
    struct pmc_error err;
    EXPECT_EQ(placement_check_capable(p.get(), 1, 0, 0, "t", &err), -1);
    EXPECT_STREQ(err.text, "No host is capable of running task t (it requests 1 CPUs, 0 MB of "
                           "memory, 0 GPUs; the hosts offer none (no host))");
}

// Many hosts of a few kinds: each kind of offer once, at most three, then
// "and more" (the message stays short on a large cluster).
TEST(Placement, NotCapableListsDistinctOffers)
{
    PlacementPtr p = make_placement({{8, 1000, 0}, {8, 1000, 0}, {8, 1000, 0}, {4, 2000, 1}});
    struct pmc_error err;
    EXPECT_EQ(placement_check_capable(p.get(), 1, 1000000000, 0, "a", &err), -1);
    EXPECT_STREQ(err.text, "No host is capable of running task a (it requests 1 CPUs, 1000000000 "
                           "MB of memory, 0 GPUs; the hosts offer 8 CPUs, 1000 MB, 0 GPUs; 4 "
                           "CPUs, 2000 MB, 1 GPUs)");
    PlacementPtr q =
        make_placement({{1, 1, 0}, {2, 1, 0}, {3, 1, 0}, {4, 1, 0}, {1, 1, 0}, {5, 1, 0}});
    EXPECT_EQ(placement_check_capable(q.get(), 9, 0, 0, "b", &err), -1);
    EXPECT_STREQ(err.text, "No host is capable of running task b (it requests 9 CPUs, 0 MB of "
                           "memory, 0 GPUs; the hosts offer 1 CPUs, 1 MB, 0 GPUs; 2 CPUs, 1 MB, 0 "
                           "GPUs; 3 CPUs, 1 MB, 0 GPUs; and more)");
}

// ---- the open list and its hysteresis -------------------------------------

TEST(Placement, FullNodeReopensOnlyAtTheLowWaterMark)
{
    PlacementPtr p = make_placement({{4, 0, 0}});
    const struct placement_node *n = placement_node_at(p.get(), 0);
    const uint32_t cap = 4 + PLACEMENT_PREFETCH_MIN, low = 4 + PLACEMENT_PREFETCH_MIN / 2;
    for (uint32_t k = 0; k < cap; k++) {
        ASSERT_EQ(placement_pick(p.get(), 1, 0, 0), 0) << "task " << k;
        placement_commit(p.get(), 0, 1, 0, 0);
        check_invariants(p.get());
    }
    EXPECT_FALSE(n->open);
    EXPECT_EQ(placement_room(p.get()), 0u);
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), -1);
    // releases above the low-water mark leave it closed: no refill by dribs
    while (n->committed_cpus > low + 1) {
        placement_release(p.get(), 0, 1, 0, 0);
        check_invariants(p.get());
        ASSERT_FALSE(n->open) << "reopened at " << n->committed_cpus << " CPUs committed";
        ASSERT_EQ(placement_pick(p.get(), 1, 0, 0), -1);
    }
    placement_release(p.get(), 0, 1, 0, 0); // down to cpus + W/2
    EXPECT_EQ(n->committed_cpus, low);
    EXPECT_TRUE(n->open);
    EXPECT_EQ(placement_room(p.get()), cap - low);
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), 0);
    check_invariants(p.get());
}

TEST(Placement, RandomRunKeepsTheInvariants)
{
    std::mt19937 rng(12345);
    std::vector<NodeSpec> spec;
    for (int i = 0; i < 12; i++)
        spec.push_back({static_cast<uint32_t>(rng() % 96), 1000 + rng() % 4000,
                        static_cast<uint32_t>(rng() % 3)});
    PlacementPtr p = make_placement(spec);
    struct Sent {
        int node;
        uint32_t cpus, mem, gpus;
    };
    std::vector<Sent> sent;
    std::vector<NodeSpec> model(spec.size(), {0, 0, 0}); // committed per node
    std::vector<uint32_t> asked(spec.size(), 0);         // recalled, not answered
    std::vector<bool> futile(spec.size(), false);        // gave nothing since its queue began
    std::vector<placement_fit> fit_of(spec.size());      // what its last recall asked for
    placement_fit futile_fit{0, 0, 0}; // the largest fit a node that gave nothing was asked for
    bool any_futile = false;           // some node gave nothing since the last growth
    for (int step = 0; step < 20000; step++) {
        unsigned op = rng() % 100;
        if (op < 8) { // a recall round: never asks a node twice, nor past its excess
            uint64_t idle = placement_idle_cpus(p.get()), before = 0, now = 0;
            for (uint32_t a : asked)
                before += a;
            Recalls r = recall(p.get());
            for (size_t k = 0; k < r.asked.size(); k++) {
                auto [i, tasks] = r.asked[k];
                fit_of[i] = r.fits[k];
                const struct placement_node *n = placement_node_at(p.get(), i);
                ASSERT_EQ(asked[i], 0u) << "node " << i << " asked twice";
                ASSERT_FALSE(futile[i]) << "node " << i << " gave nothing, its queue the same";
                ASSERT_GT(tasks, 0u);
                ASSERT_LE(n->cpus + tasks, n->committed_cpus) << "asked past the excess";
                ASSERT_EQ(n->recall_asked, tasks);
                asked[i] = tasks;
                now += tasks;
            }
            ASSERT_LE(before + now, std::max(before, idle)) << "asked more than idle CPUs start";
            check_invariants(p.get());
            continue;
        }
        if (op < 12) { // an answer
            int i = static_cast<int>(rng() % spec.size());
            uint32_t given = rng() % 3;
            if (asked[i]) {
                futile[i] = given == 0;
                if (given == 0) {
                    any_futile = true;
                    futile_fit.cpus = std::max(futile_fit.cpus, fit_of[i].cpus);
                    futile_fit.memory_mb = std::max(futile_fit.memory_mb, fit_of[i].memory_mb);
                    futile_fit.gpus = std::max(futile_fit.gpus, fit_of[i].gpus);
                }
            }
            placement_recall_answered(p.get(), i, given);
            asked[i] = 0;
            ASSERT_EQ(placement_node_at(p.get(), i)->recall_asked, 0u);
            continue;
        }
        bool place = sent.empty() || op < 12 + 50;
        if (place) {
            uint32_t c = 1 + rng() % 16, m = rng() % 3 == 0 ? 0 : rng() % 3000,
                     g = rng() % 4 == 0 ? rng() % 3 : 0;
            bool can_start_now = false; // on some idle node's free resources
            for (int j = 0; j < placement_nnodes(p.get()); j++) {
                const struct placement_node *n = placement_node_at(p.get(), j);
                can_start_now |= n->committed_cpus + c <= n->cpus &&
                                 n->committed_mem + m <= n->memory_mb &&
                                 n->committed_gpus + g <= n->gpus;
            }
            int i = placement_pick(p.get(), c, m, g);
            if (can_start_now) { // 12 nodes: within PLACEMENT_IDLE_SCAN
                ASSERT_GE(i, 0);
            }
            if (i >= 0) {
                const struct placement_node *n = placement_node_at(p.get(), i);
                if (can_start_now) {
                    ASSERT_LE(n->committed_cpus + c, n->cpus) << "queued while a node was idle";
                }
                ASSERT_TRUE(n->open);
                ASSERT_LE(c, n->cpus);
                ASSERT_LE(m, n->memory_mb);
                ASSERT_LE(g, n->gpus);
                ASSERT_LE(n->committed_cpus + c, n->cpus + n->window);
                ASSERT_LE(n->committed_mem + m, 2 * n->memory_mb);
                ASSERT_LE(n->committed_gpus + g, 2 * n->gpus);
                placement_commit(p.get(), i, c, m, g);
                sent.push_back({i, c, m, g});
                model[i].cpus += c;
                model[i].memory_mb += m;
                model[i].gpus += g;
            }
        } else {
            size_t k = rng() % sent.size();
            Sent s = sent[k];
            sent[k] = sent.back();
            sent.pop_back();
            placement_release(p.get(), s.node, s.cpus, s.mem, s.gpus);
            model[s.node].cpus -= s.cpus;
            model[s.node].memory_mb -= s.mem;
            model[s.node].gpus -= s.gpus;
            // an idle node with more free than the nodes that gave nothing
            // were asked for: they may be asked again
            const NodeSpec &o = spec[s.node], &c = model[s.node];
            if (any_futile && c.cpus < o.cpus &&
                (o.cpus - c.cpus > futile_fit.cpus ||
                 (c.memory_mb < o.memory_mb ? o.memory_mb - c.memory_mb : 0) >
                     futile_fit.memory_mb ||
                 (c.gpus < o.gpus ? o.gpus - c.gpus : 0) > futile_fit.gpus)) {
                std::fill(futile.begin(), futile.end(), false);
                futile_fit = {0, 0, 0};
                any_futile = false;
            }
        }
        check_invariants(p.get());
        for (size_t i = 0; i < model.size(); i++) {
            const struct placement_node *n = placement_node_at(p.get(), static_cast<int>(i));
            if (!n->queueing)
                futile[i] = false; /* a queue that emptied */
            ASSERT_EQ(n->committed_cpus, model[i].cpus);
            ASSERT_EQ(n->committed_mem, model[i].memory_mb);
            ASSERT_EQ(n->committed_gpus, model[i].gpus);
        }
        if (HasFatalFailure())
            return;
    }
}

// ---- accounting --------------------------------------------------------

TEST(Placement, ReleaseRestoresRoomExactly)
{
    PlacementPtr p = make_placement({{8, 4000, 2}, {16, 8000, 4}});
    std::vector<struct placement_node> before;
    for (int i = 0; i < 2; i++)
        before.push_back(*placement_node_at(p.get(), i));
    uint64_t room_before = placement_room(p.get());
    struct Req {
        uint32_t c;
        uint64_t m;
        uint32_t g;
    };
    std::vector<std::pair<int, Req>> done;
    for (Req r : {Req{1, 100, 0}, Req{4, 3000, 1}, Req{2, 0, 2}, Req{8, 7000, 0}, Req{3, 10, 1}}) {
        int i = placement_pick(p.get(), r.c, r.m, r.g);
        ASSERT_GE(i, 0);
        placement_commit(p.get(), i, r.c, r.m, r.g);
        done.emplace_back(i, r);
    }
    EXPECT_LT(placement_room(p.get()), room_before);
    for (auto it = done.rbegin(); it != done.rend(); ++it) // any order would do
        placement_release(p.get(), it->first, it->second.c, it->second.m, it->second.g);
    EXPECT_EQ(placement_room(p.get()), room_before);
    for (int i = 0; i < 2; i++) {
        const struct placement_node *n = placement_node_at(p.get(), i);
        EXPECT_EQ(n->committed_cpus, 0u);
        EXPECT_EQ(n->committed_mem, 0u);
        EXPECT_EQ(n->committed_gpus, 0u);
        EXPECT_EQ(n->tasks, 0u);
        EXPECT_EQ(n->open, before[i].open);
        EXPECT_EQ(room_of(n), room_of(&before[i]));
    }
    check_invariants(p.get());
}

TEST(Placement, MemoryIsBoundTwiceOverAndPerTask)
{
    PlacementPtr p = make_placement({{64, 1000, 0}});
    for (int k = 0; k < 3; k++) { // 3 x 600 MB = 1800 <= 2 x 1000
        ASSERT_EQ(placement_pick(p.get(), 1, 600, 0), 0);
        placement_commit(p.get(), 0, 1, 600, 0);
    }
    EXPECT_EQ(placement_pick(p.get(), 1, 600, 0), -1) << "2400 MB would pass twice the node's";
    EXPECT_EQ(placement_pick(p.get(), 1, 200, 0), 0) << "2000 MB is exactly twice the node's";
    EXPECT_EQ(placement_node_at(p.get(), 0)->committed_mem, 1800u);
    placement_release(p.get(), 0, 1, 600, 0);
    placement_release(p.get(), 0, 1, 600, 0);
    placement_release(p.get(), 0, 1, 600, 0);
    EXPECT_EQ(placement_pick(p.get(), 1, 1001, 0), -1) << "more than the node offers";
    EXPECT_EQ(placement_pick(p.get(), 1, 1000, 0), 0);
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), 0) << "0 MB: memory not considered";
}

TEST(Placement, GpusAreBoundTwiceOverAndPerTask)
{
    PlacementPtr p = make_placement({{64, 0, 2}, {64, 0, 0}, {64, 0, 4}});
    // a 3-GPU task only ever goes to the 4-GPU node
    for (int k = 0; k < 2; k++) {
        int i = placement_pick(p.get(), 1, 0, 3);
        ASSERT_EQ(i, 2);
        placement_commit(p.get(), i, 1, 0, 3);
    }
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 3), -1) << "6 + 3 GPUs would pass twice 4";
    // 1-GPU tasks: 4 fit the 2-GPU node, 2 more the 4-GPU node, none the GPU-less one
    std::map<int, int> got;
    for (int k = 0; k < 6; k++) {
        int i = placement_pick(p.get(), 1, 0, 1);
        ASSERT_GE(i, 0) << "task " << k;
        ASSERT_NE(i, 1) << "a GPU task went to the node without GPUs";
        placement_commit(p.get(), i, 1, 0, 1);
        got[i]++;
    }
    EXPECT_EQ(got[0], 4);
    EXPECT_EQ(got[2], 2);
    EXPECT_EQ(placement_pick(p.get(), 1, 0, 1), -1);
    EXPECT_EQ(placement_node_at(p.get(), 0)->committed_gpus, 4u);
    EXPECT_EQ(placement_node_at(p.get(), 2)->committed_gpus, 8u);
    EXPECT_GE(placement_pick(p.get(), 1, 0, 0), 0) << "a CPU-only task still fits";
}

TEST(Placement, CpusBeyondAnOfferNeverGoThere)
{
    PlacementPtr p = make_placement({{4, 0, 0}, {16, 0, 0}});
    for (int k = 0; k < 5; k++) {
        int i = placement_pick(p.get(), 8, 0, 0);
        ASSERT_EQ(i, 1) << "an 8-CPU task went to the 4-CPU node";
        placement_commit(p.get(), i, 8, 0, 0);
    }
}

// ---- never fits ------------------------------------------------------------

TEST(Placement, TaskLargerThanEveryNodeIsNotCapable)
{
    PlacementPtr p = make_placement({{8, 1000, 0}, {4, 4000, 1}});
    struct pmc_error err;
    err.text[0] = '\0';
    EXPECT_EQ(placement_check_capable(p.get(), 16, 0, 0, "big", &err), -1);
    // PMC's message (the engine prints "FATAL ERROR: " before it), then
    // the request and what the hosts offer
    const std::string offers =
        "; the hosts offer 8 CPUs, 1000 MB, 0 GPUs; 4 CPUs, 4000 MB, 1 GPUs)";
    EXPECT_EQ(std::string(err.text), "No host is capable of running task big (it requests 16 "
                                     "CPUs, 0 MB of memory, 0 GPUs" +
                                         offers);
    EXPECT_EQ(placement_check_capable(p.get(), 1, 5000, 0, "fat", &err), -1);
    EXPECT_EQ(std::string(err.text), "No host is capable of running task fat (it requests 1 "
                                     "CPUs, 5000 MB of memory, 0 GPUs" +
                                         offers);
    EXPECT_EQ(placement_check_capable(p.get(), 1, 0, 2, "gpu2", &err), -1);
    // each dimension alone fits some node, all three together none
    EXPECT_EQ(placement_check_capable(p.get(), 8, 4000, 0, "mix", &err), -1);
    EXPECT_EQ(std::string(err.text), "No host is capable of running task mix (it requests 8 "
                                     "CPUs, 4000 MB of memory, 0 GPUs" +
                                         offers);
    EXPECT_EQ(placement_check_capable(p.get(), 8, 1000, 0, "a", &err), 0);
    EXPECT_EQ(placement_check_capable(p.get(), 4, 4000, 1, "b", &err), 0);
    // capability ignores what is committed now
    for (int k = 0; k < 9; k++)
        placement_commit(p.get(), 0, 8, 0, 0);
    EXPECT_EQ(placement_check_capable(p.get(), 8, 1000, 0, "a", &err), 0);
}

TEST(Placement, NeverFittingTaskStaysReadyWhileOthersRun)
{
    PlacementPtr p = make_placement({{8, 1000, 0}});
    Tasks tasks;
    uint32_t big = tasks.add(16, 0, 0, 5);
    uint32_t a = tasks.add(1, 0, 0, 5), b = tasks.add(1, 0, 0, 0);
    RqPtr q = queue_all(tasks);
    for (int round = 0; round < 3; round++) {
        Recorder r = dispatch(p.get(), q.get(), tasks);
        if (round == 0) {
            ASSERT_EQ(r.assigned.size(), 2u);
            EXPECT_EQ(r.assigned[0].first, a);
            EXPECT_EQ(r.assigned[1].first, b);
        } else {
            EXPECT_TRUE(r.assigned.empty());
        }
        EXPECT_EQ(rq_size(q.get()), 1u);
    }
    EXPECT_EQ(drain(q.get()), std::vector<uint32_t>{big});
}

// ---- round-robin ------------------------------------------------------------

// A task goes to a node that can start it now before it queues behind the
// running tasks of another, whatever the round-robin cursor says; a task no
// idle node can start now (too many CPUs for what is free) queues on an
// open node as before.
TEST(Placement, IdleNodeTakesATaskBeforeABusyNodeQueuesIt)
{
    PlacementPtr p = make_placement({{2, 1000, 0}, {2, 1000, 0}, {2, 1000, 0}});
    placement_commit(p.get(), 0, 2, 0, 0); // node 0 runs 2
    placement_commit(p.get(), 1, 4, 0, 0); // node 1 runs 2, queues 2
    placement_commit(p.get(), 2, 1, 0, 0); // node 2 has 1 CPU free
    for (int round = 0; round < 3; round++)
        EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), 2) << "round " << round;
    int i = placement_pick(p.get(), 2, 0, 0);
    EXPECT_GE(i, 0) << "no node queues a task of 2 CPUs";
    placement_commit(p.get(), 2, 1, 0, 0); // node 2 full too
    std::map<int, int> picks;
    for (int k = 0; k < 6; k++)
        picks[placement_pick(p.get(), 1, 0, 0)]++;
    EXPECT_EQ(picks.size(), 3u) << "with none idle, round robin over the open nodes";
    EXPECT_FALSE(placement_node_at(p.get(), 2)->idle);
    EXPECT_EQ(placement_idle_cpus(p.get()), 0u);
}

// Recalls: with idle CPUs and a node holding tasks beyond its CPUs, the
// node is asked for as many as the idle CPUs can start (at most its
// excess), once until it answers; then again for what is still idle.
TEST(Placement, RecallAsksForWhatIdleCpusCanStartOnceUntilAnswered)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {1, 1000, 0}, {3, 1000, 0}});
    placement_commit(p.get(), 0, 1 + 5, 0, 0); // 1 running, 5 queued
    placement_commit(p.get(), 1, 1 + 2, 0, 0); // 1 running, 2 queued
    placement_commit(p.get(), 2, 3, 0, 0);     // 3 running
    EXPECT_TRUE(recall(p.get()).asked.empty()) << "asked with no CPU idle";
    // node 2's 3 tasks finish: asks node 0 for 3 (round robin from node 0)
    placement_release(p.get(), 2, 3, 0, 0);
    EXPECT_EQ(placement_idle_cpus(p.get()), 3u);
    auto asked = recall(p.get()).asked;
    EXPECT_EQ(asked, (std::vector<std::pair<int, uint32_t>>{{0, 3}}));
    EXPECT_TRUE(recall(p.get()).asked.empty()) << "asked again before an answer";
    // node 0 gives back 3 (each released), which go to node 2
    for (int k = 0; k < 3; k++) {
        placement_release(p.get(), 0, 1, 0, 0);
        placement_recall_answered(p.get(), 0, 3);
        EXPECT_EQ(placement_pick(p.get(), 1, 0, 0), 2);
        placement_commit(p.get(), 2, 1, 0, 0);
    }
    EXPECT_EQ(placement_idle_cpus(p.get()), 0u);
    EXPECT_TRUE(recall(p.get()).asked.empty()) << "asked with no CPU idle";
    // node 2 idles again, 2 CPUs: node 1 (next in round robin) gives its 2
    placement_release(p.get(), 2, 2, 0, 0);
    asked = recall(p.get()).asked;
    EXPECT_EQ(asked, (std::vector<std::pair<int, uint32_t>>{{1, 2}}));
}

// Several idle CPUs and several nodes with little queued: each is asked
// for its excess until the idle CPUs are covered; nothing is asked of a
// node with nothing queued beyond its CPUs.
TEST(Placement, RecallSpreadsOverNodesUpToTheIdleCpus)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {1, 1000, 0}, {1, 1000, 0}, {8, 1000, 0}});
    placement_commit(p.get(), 0, 1 + 2, 0, 0);
    placement_commit(p.get(), 1, 1, 0, 0); // nothing queued
    placement_commit(p.get(), 2, 1 + 3, 0, 0);
    placement_commit(p.get(), 3, 4, 0, 0); // 4 CPUs idle
    auto asked = recall(p.get()).asked;
    EXPECT_EQ(asked, (std::vector<std::pair<int, uint32_t>>{{0, 2}, {2, 2}}));
}

// An ask that fails (the master could not build or send the RECALL)
// leaves that node unasked and reports -1; the nodes asked before stay
// asked.
TEST(Placement, FailedRecallLeavesThatNodeUnasked)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {1, 1000, 0}, {4, 1000, 0}});
    placement_commit(p.get(), 0, 1 + 1, 0, 0);
    placement_commit(p.get(), 1, 1 + 1, 0, 0);
    auto r = recall(p.get(), 1, -1);
    EXPECT_EQ(r.asked, (std::vector<std::pair<int, uint32_t>>{{0, 1}}));
    EXPECT_EQ(placement_node_at(p.get(), 0)->recall_asked, 1u);
    EXPECT_EQ(placement_node_at(p.get(), 1)->recall_asked, 0u);
    EXPECT_EQ(recall(p.get()).asked, (std::vector<std::pair<int, uint32_t>>{{1, 1}}));
}

// A task of a higher priority than those queued at a full node goes past
// its window, into an overflow lane of one more round of its CPUs; one of
// the same priority as the queued ones waits for room; once the node's
// queue may be empty again (committed back at its CPUs) its floor resets.
TEST(Placement, HigherPriorityGoesPastTheWindowOfANodeQueueingLowerOnes)
{
    PlacementPtr p = make_placement({{2, 1000, 0}});
    Tasks tasks;
    std::vector<uint32_t> low;
    for (int k = 0; k < 2 + 64; k++)
        low.push_back(tasks.add(1));
    RqPtr q = queue_of(tasks, low);
    EXPECT_EQ(dispatch(p.get(), q.get(), tasks).assigned.size(), 66u);
    EXPECT_EQ(placement_room(p.get()), 0u);
    uint32_t same = tasks.add(1, 0, 0, 0);
    std::vector<uint32_t> high = {tasks.add(1, 0, 0, 5), tasks.add(1, 0, 0, 5),
                                  tasks.add(1, 0, 0, 5)};
    q = queue_of(tasks, {same, high[0], high[1], high[2]});
    Recorder r = dispatch(p.get(), q.get(), tasks);
    EXPECT_EQ(r.assigned, (std::vector<std::pair<uint32_t, int>>{{high[0], 0}, {high[1], 0}}))
        << "the lane holds one more round of the node's 2 CPUs";
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{high[2], same}));
    EXPECT_EQ(placement_node_at(p.get(), 0)->queue_floor, 0);
    // everything ends: the node's queue is empty, its floor resets; tasks
    // of priority 5 alone then fill the window and none overflows
    for (int k = 0; k < 68; k++)
        placement_release(p.get(), 0, 1, 0, 0);
    EXPECT_EQ(placement_node_at(p.get(), 0)->queue_floor, INT32_MAX);
    std::vector<uint32_t> fives;
    for (int k = 0; k < 2 + 64 + 1; k++)
        fives.push_back(tasks.add(1, 0, 0, 5));
    q = queue_of(tasks, fives);
    EXPECT_EQ(dispatch(p.get(), q.get(), tasks).assigned.size(), 66u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{fives.back()}));
}

// Overflow picks only a node whose queue may hold a lower priority: node 0
// queues priority 3 tasks and node 1 priority 1 tasks, both full; a
// priority 3 task overflows onto node 1 only, a priority 1 task nowhere.
TEST(Placement, OverflowGoesOnlyWhereLowerPrioritiesQueue)
{
    PlacementPtr p = make_placement({{1, 1000, 0}}, 2);
    Tasks tasks;
    std::vector<uint32_t> threes, ones;
    for (int k = 0; k < 1 + 64; k++)
        threes.push_back(tasks.add(1, 0, 0, 3));
    RqPtr q = queue_of(tasks, threes);
    ASSERT_EQ(dispatch(p.get(), q.get(), tasks).assigned.size(), 65u);
    ASSERT_EQ(placement_add_node(p.get(), 1, 1000, 0), 1);
    for (int k = 0; k < 1 + 64; k++)
        ones.push_back(tasks.add(1, 0, 0, 1));
    q = queue_of(tasks, ones);
    ASSERT_EQ(dispatch(p.get(), q.get(), tasks).assigned.size(), 65u);
    EXPECT_EQ(placement_node_at(p.get(), 0)->queue_floor, 3);
    EXPECT_EQ(placement_node_at(p.get(), 1)->queue_floor, 1);
    uint32_t three = tasks.add(1, 0, 0, 3), one = tasks.add(1, 0, 0, 1);
    q = queue_of(tasks, {three, one});
    Recorder r = dispatch(p.get(), q.get(), tasks);
    EXPECT_EQ(r.assigned, (std::vector<std::pair<uint32_t, int>>{{three, 1}}));
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{one}));
}

// A recall asks only for what an idle node can start: the free CPUs,
// memory and GPUs of the idle node with the most CPUs free.
TEST(Placement, RecallAsksForTasksThatFitAnIdleNode)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {4, 800, 1}, {2, 500, 2}});
    placement_commit(p.get(), 0, 1 + 6, 0, 0);
    placement_commit(p.get(), 1, 1, 300, 1); // 3 CPUs, 500 MB and no GPU free
    placement_commit(p.get(), 2, 1, 0, 0);   // 1 CPU, 500 MB and 2 GPUs free
    Recalls r = recall(p.get());
    ASSERT_EQ(r.asked, (std::vector<std::pair<int, uint32_t>>{{0, 4}}));
    EXPECT_EQ(r.fits[0].cpus, 3u);
    EXPECT_EQ(r.fits[0].memory_mb, 500u);
    EXPECT_EQ(r.fits[0].gpus, 0u);
}

// A node whose answer gave nothing back (what it queues does not fit, or
// already starts) is not asked again while its queue is the same one; once
// its committed CPUs were back at its own, it may be.
TEST(Placement, NodeThatGaveNothingIsNotAskedAgainUntilItsQueueIsNew)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {2, 1000, 0}});
    placement_commit(p.get(), 0, 1 + 3, 0, 0);
    EXPECT_EQ(recall(p.get()).asked, (std::vector<std::pair<int, uint32_t>>{{0, 2}}));
    placement_recall_answered(p.get(), 0, 0);
    EXPECT_FALSE(placement_recall_due(p.get()));
    EXPECT_TRUE(recall(p.get()).asked.empty());
    placement_release(p.get(), 0, 1, 0, 0); // still queueing: the same queue
    EXPECT_TRUE(recall(p.get()).asked.empty());
    placement_release(p.get(), 0, 2, 0, 0); // back at its CPU
    placement_commit(p.get(), 0, 2, 0, 0);  // a new queue
    EXPECT_EQ(recall(p.get()).asked, (std::vector<std::pair<int, uint32_t>>{{0, 2}}));
    placement_recall_answered(p.get(), 0, 1); // gave some: may be asked again
    EXPECT_TRUE(placement_recall_due(p.get()));
}

// A node that gave nothing for a fit of 1 CPU is asked again once an idle
// node has 2 CPUs free: what it queues may fit now.
TEST(Placement, NodeThatGaveNothingIsAskedAgainWhenIdleResourcesGrow)
{
    PlacementPtr p = make_placement({{1, 1000, 0}, {4, 1000, 0}});
    placement_commit(p.get(), 0, 1 + 4, 0, 0);
    placement_commit(p.get(), 1, 3, 0, 0); // 1 CPU free
    Recalls r = recall(p.get());
    ASSERT_EQ(r.asked, (std::vector<std::pair<int, uint32_t>>{{0, 1}}));
    EXPECT_EQ(r.fits[0].cpus, 1u);
    placement_recall_answered(p.get(), 0, 0); // its tasks need 2 CPUs
    EXPECT_FALSE(placement_recall_due(p.get()));
    placement_release(p.get(), 1, 1, 0, 0); // 2 CPUs free
    r = recall(p.get());
    ASSERT_EQ(r.asked, (std::vector<std::pair<int, uint32_t>>{{0, 2}}));
    EXPECT_EQ(r.fits[0].cpus, 2u);
}

TEST(Placement, RoundRobinIsFairAcrossEqualNodes)
{
    for (int nnodes : {1, 2, 3, 7, 16}) {
        for (uint32_t ntasks : {1u, 5u, 17u, 100u, 300u}) {
            std::vector<NodeSpec> spec(static_cast<size_t>(nnodes), {4, 1000, 0});
            PlacementPtr p = make_placement(spec);
            Tasks tasks;
            for (uint32_t t = 0; t < ntasks; t++)
                tasks.add(1);
            RqPtr q = queue_all(tasks);
            Recorder r = dispatch(p.get(), q.get(), tasks);
            uint32_t cap = static_cast<uint32_t>(nnodes) * (4 + PLACEMENT_PREFETCH_MIN);
            ASSERT_EQ(r.assigned.size(), std::min(ntasks, cap));
            std::vector<uint32_t> per(static_cast<size_t>(nnodes), 0);
            for (auto &[t, i] : r.assigned)
                per[static_cast<size_t>(i)]++;
            uint32_t lo = *std::min_element(per.begin(), per.end());
            uint32_t hi = *std::max_element(per.begin(), per.end());
            EXPECT_LE(hi - lo, 1u) << nnodes << " nodes, " << ntasks << " tasks";
            for (int i = 0; i < nnodes; i++)
                EXPECT_EQ(placement_node_at(p.get(), i)->tasks, per[static_cast<size_t>(i)]);
            check_invariants(p.get());
        }
    }
}

TEST(Placement, RoundRobinStaysFairAcrossRounds)
{
    const int nnodes = 5;
    std::vector<NodeSpec> spec(nnodes, {4, 0, 0});
    PlacementPtr p = make_placement(spec);
    std::vector<uint32_t> per(nnodes, 0);
    for (int round = 0; round < 40; round++) { // 3 tasks a round: the cursor carries on
        for (int k = 0; k < 3; k++) {
            int i = placement_pick(p.get(), 1, 0, 0);
            ASSERT_GE(i, 0);
            placement_commit(p.get(), i, 1, 0, 0);
            per[static_cast<size_t>(i)]++;
        }
        uint32_t lo = *std::min_element(per.begin(), per.end());
        uint32_t hi = *std::max_element(per.begin(), per.end());
        ASSERT_LE(hi - lo, 1u) << "round " << round;
    }
}

// ---- priorities and PMC's deferral rule ------------------------------------

TEST(Placement, PrioritiesLargerFirstTiesInReadyOrder)
{
    // PMC's manual (-p): larger first; it says nothing of ties, the ready
    // queue keeps them first-in first-out (DAG order for tasks ready at once)
    PlacementPtr p = make_placement({{64, 0, 0}});
    Tasks tasks;
    const int32_t prios[] = {0, 5, -3, 5, 0, 10, 5, -3, 0, 10};
    for (int32_t pr : prios)
        tasks.add(1, 0, 0, pr);
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks);
    std::vector<uint32_t> got;
    for (auto &[t, i] : r.assigned)
        got.push_back(t);
    EXPECT_EQ(got, (std::vector<uint32_t>{5, 9, 1, 3, 6, 0, 4, 8, 2, 7}));
}

TEST(Placement, TaskThatFitsNowhereNowIsDeferredAndKeepsItsPlace)
{
    // one node, 1000 MB (2000 committable); 1500 MB already committed
    PlacementPtr p = make_placement({{4, 1000, 0}});
    placement_commit(p.get(), 0, 1, 1500, 0);
    Tasks tasks;
    uint32_t heavy = tasks.add(1, 800, 0, 10); // fits the node, not now
    uint32_t light = tasks.add(1, 100, 0, 10);
    uint32_t heavy2 = tasks.add(1, 900, 0, 10);
    uint32_t low = tasks.add(1, 100, 0, 1);
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks);
    ASSERT_EQ(r.assigned.size(), 2u);
    EXPECT_EQ(r.assigned[0].first, light) << "the lighter task of its priority goes ahead";
    EXPECT_EQ(r.assigned[1].first, low) << "a lower-priority task that fits goes ahead";
    EXPECT_EQ(placement_node_at(p.get(), 0)->committed_mem, 1700u);
    // the deferred ones are still first, in their order
    std::vector<uint32_t> left = drain(q.get());
    EXPECT_EQ(left, (std::vector<uint32_t>{heavy, heavy2}));
    for (uint32_t t : left)
        ASSERT_EQ(rq_push(q.get(), t, tasks.prio[t]), 0);
    // room comes back: the deferred task is placed before anything newer
    placement_release(p.get(), 0, 1, 1500, 0);
    uint32_t late = tasks.add(1, 0, 0, 10);
    ASSERT_EQ(rq_push(q.get(), late, 10), 0);
    r = dispatch(p.get(), q.get(), tasks);
    std::vector<uint32_t> got;
    for (auto &[t, i] : r.assigned)
        got.push_back(t);
    EXPECT_EQ(got, (std::vector<uint32_t>{heavy, heavy2, late}));
}

TEST(Placement, DeferredTasksRegainTheirExactOrder)
{
    // two nodes of 4 CPUs; the 4-CPU tasks fit them but not once they are
    // nearly full, while 1-CPU tasks still do
    PlacementPtr p = make_placement({{4, 0, 0}, {4, 0, 0}});
    for (int i = 0; i < 2; i++)
        placement_commit(p.get(), i, 4 + PLACEMENT_PREFETCH_MIN - 3, 0, 0); // room 3 each
    Tasks tasks;
    std::vector<uint32_t> big, small;
    for (int k = 0; k < 10; k++) {
        big.push_back(tasks.add(4, 0, 0, 0));
        if (k % 2 == 0)
            small.push_back(tasks.add(1, 0, 0, 0));
    }
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks);
    std::vector<uint32_t> got;
    for (auto &[t, i] : r.assigned)
        got.push_back(t);
    EXPECT_EQ(got, small);
    EXPECT_EQ(drain(q.get()), big);
}

TEST(Placement, TaskOutlastingTheBatchJobIsDeferred)
{
    PlacementPtr p = make_placement({{8, 0, 0}});
    Tasks tasks;
    tasks.default_limit_ms = 5000;
    uint32_t longer = tasks.add(1, 0, 0, 0, 20000); // its own limit: 20 s
    uint32_t dflt = tasks.add(1, 0, 0, 0, 0);       // the default: 5 s
    uint32_t shorter = tasks.add(1, 0, 0, 0, 1000);
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks, 10.0);
    ASSERT_EQ(r.assigned.size(), 2u);
    EXPECT_EQ(r.assigned[0].first, dflt);
    EXPECT_EQ(r.assigned[1].first, shorter);
    r = dispatch(p.get(), q.get(), tasks, 4.0); // now not even the default fits
    EXPECT_TRUE(r.assigned.empty());
    r = dispatch(p.get(), q.get(), tasks); // no batch-job end: anything goes
    ASSERT_EQ(r.assigned.size(), 1u);
    EXPECT_EQ(r.assigned[0].first, longer);
    // no per-task column: every task has the default
    Tasks plain;
    plain.default_limit_ms = 0;
    plain.add(1);
    RqPtr q2 = queue_all(plain);
    struct placement_demand d = plain.demand();
    d.time_limit_ms = nullptr;
    Recorder r2;
    EXPECT_EQ(placement_dispatch(p.get(), q2.get(), &d, 0.0, record_assign, &r2), 0);
    EXPECT_EQ(r2.assigned.size(), 1u) << "no limit at all: runs even at the end";
}

// The look-ahead hook sees, before each task is placed, the task
// PLACEMENT_LOOK_AHEAD places behind it in its bucket, while there is one,
// and changes nothing: the round places what it places without the hook.
struct LookAhead {
    Recorder rec;
    std::vector<std::pair<uint32_t, size_t>> seen; // (task, tasks assigned before)
};

void record_look_ahead(void *ctx, uint32_t t)
{
    auto *la = static_cast<LookAhead *>(ctx);
    la->seen.emplace_back(t, la->rec.assigned.size());
}

int look_ahead_assign(void *ctx, uint32_t t, int i)
{
    return record_assign(&static_cast<LookAhead *>(ctx)->rec, t, i);
}

TEST(Placement, LookAheadSeesTheTaskBehindAndChangesNothing)
{
    const uint32_t kAhead = PLACEMENT_LOOK_AHEAD;
    Tasks tasks;
    for (int k = 0; k < 40; k++)
        tasks.add(1, 0, 0, k < 30 ? 5 : 1); // two buckets: 30 tasks, then 10
    std::vector<uint32_t> order;
    for (uint32_t t = 0; t < 40; t++)
        order.push_back((t * 7) % 40); // not the id order
    PlacementPtr plain = make_placement({{4, 0, 0}, {8, 0, 0}});
    RqPtr q1 = queue_of(tasks, order);
    Recorder without = dispatch(plain.get(), q1.get(), tasks);

    PlacementPtr p = make_placement({{4, 0, 0}, {8, 0, 0}});
    RqPtr q = queue_of(tasks, order);
    struct placement_demand d = tasks.demand();
    d.look_ahead = record_look_ahead;
    LookAhead la;
    ASSERT_EQ(placement_dispatch(p.get(), q.get(), &d, INFINITY, look_ahead_assign, &la), 0);
    ASSERT_EQ(la.rec.assigned, without.assigned);
    ASSERT_EQ(drain(q.get()), drain(q1.get()));
    ASSERT_EQ(la.rec.assigned.size(), 40u) << "the two nodes' windows take all 40";
    // pop order: the priority-5 bucket, then the priority-1 one, each FIFO
    std::vector<uint32_t> hi, lo;
    for (uint32_t t : order)
        (tasks.prio[t] == 5 ? hi : lo).push_back(t);
    std::vector<std::pair<uint32_t, size_t>> want;
    for (size_t k = 0; k + kAhead < hi.size(); k++)
        want.emplace_back(hi[k + kAhead], k);
    for (size_t k = 0; k + kAhead < lo.size(); k++)
        want.emplace_back(lo[k + kAhead], hi.size() + k);
    EXPECT_EQ(la.seen, want);
}

TEST(Placement, RoundStopsWhenNoNodeHasRoom)
{
    PlacementPtr p = make_placement({{4, 0, 0}});
    Tasks tasks;
    for (int k = 0; k < 100; k++)
        tasks.add(1);
    RqPtr q = queue_all(tasks);
    Recorder r = dispatch(p.get(), q.get(), tasks);
    EXPECT_EQ(r.assigned.size(), 4u + PLACEMENT_PREFETCH_MIN);
    EXPECT_EQ(placement_room(p.get()), 0u);
    EXPECT_EQ(rq_size(q.get()), 100u - 4 - PLACEMENT_PREFETCH_MIN);
    r = dispatch(p.get(), q.get(), tasks);
    EXPECT_EQ(r.calls, 0) << "a full cluster is not searched";
    std::vector<uint32_t> left = drain(q.get());
    ASSERT_FALSE(left.empty());
    EXPECT_EQ(left.front(), 4u + PLACEMENT_PREFETCH_MIN) << "the queue kept its order";
}

TEST(Placement, FailedAssignLosesNoTask)
{
    PlacementPtr p = make_placement({{4, 1000, 0}});
    placement_commit(p.get(), 0, 1, 1900, 0);
    Tasks tasks;
    uint32_t d1 = tasks.add(1, 500, 0, 0); // deferred (memory)
    uint32_t a1 = tasks.add(1, 0, 0, 0);
    uint32_t d2 = tasks.add(1, 500, 0, 0); // deferred
    uint32_t f = tasks.add(1, 0, 0, 0);    // its assign fails
    uint32_t rest = tasks.add(1, 0, 0, 0);
    RqPtr q = queue_all(tasks);
    int rc = 0;
    Recorder r = dispatch(p.get(), q.get(), tasks, INFINITY, &rc, 1);
    EXPECT_EQ(rc, -1);
    ASSERT_EQ(r.assigned.size(), 1u);
    EXPECT_EQ(r.assigned[0].first, a1);
    const struct placement_node *n = placement_node_at(p.get(), 0);
    EXPECT_EQ(n->committed_cpus, 2u) << "the assigned task stays committed, the failed one not";
    EXPECT_EQ(n->tasks, 2u);
    EXPECT_EQ(drain(q.get()), (std::vector<uint32_t>{d1, d2, f, rest}));
}

// Tasks past the columns (task arrays' instances) take their demand from
// the instance callback: here 3 CPUs each on a 4-CPU node, so one fits.
struct placement_need three_cpus(const void *, uint32_t)
{
    return {3, 0, 0, 0};
}

TEST(Placement, InstancesPastTheColumnsUseTheirCallback)
{
    PlacementPtr p = make_placement({{4, 1000, 0}});
    Tasks tasks;
    tasks.add(1, 0, 0, 0); // column task 0
    struct placement_demand d = tasks.demand();
    d.ncolumns = 1;
    d.instance = three_cpus;
    RqPtr q(rq_create());
    ASSERT_EQ(0, rq_push(q.get(), 7, 0));
    ASSERT_EQ(0, rq_push(q.get(), 8, 0));
    Recorder r;
    ASSERT_EQ(0, placement_dispatch(p.get(), q.get(), &d, INFINITY, record_assign, &r));
    ASSERT_EQ(r.assigned.size(), 2u) << "the second is over the window, queued there";
    EXPECT_EQ(placement_node_at(p.get(), 0)->committed_cpus, 6u);
}

} // namespace
