// test_progress.cc - sched/progress.h: heights and the remaining critical
// path on hand-made DAGs (chain, diamond, fan-out, forest, tasks done
// before), the rate's moving average and the ETA formula.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "io/dag.h"
#include "sched/progress.h"

namespace
{

using Edges = std::vector<std::pair<int, int>>;

// A DAG of n tasks t0..t{n-1} with the given edges (parent, child).
struct dag *make(int n, const Edges &edges)
{
    struct dag *d = dag_create();
    const char *argv[] = {"/bin/true"};
    size_t argv_len[] = {9};
    for (int i = 0; i < n; i++) {
        std::string name = "t" + std::to_string(i);
        struct dag_task_spec s = {};
        s.name = name.c_str();
        s.name_len = name.size();
        s.argv = argv;
        s.argv_len = argv_len;
        s.argc = 1;
        s.cpus = 1;
        s.line = (uint32_t)i + 1;
        uint32_t id;
        EXPECT_EQ(dag_add_task(d, &s, &id), 0);
    }
    for (auto [p, c] : edges)
        EXPECT_EQ(dag_add_edge(d, (uint32_t)p, (uint32_t)c), 0);
    struct pmc_error err;
    EXPECT_EQ(dag_finish(d, &err), 0) << err.text;
    return d;
}

TEST(Progress, ChainShrinksFromTheTop)
{
    struct dag *d = make(4, {{0, 1}, {1, 2}, {2, 3}});
    struct progress p;
    ASSERT_EQ(progress_init(&p, d, nullptr), 0);
    EXPECT_EQ(p.height[0], 4u);
    EXPECT_EQ(p.height[3], 1u);
    EXPECT_EQ(progress_critical_left(&p), 4u);
    for (uint32_t t = 0; t < 4; t++) {
        progress_finished(&p, t);
        EXPECT_EQ(progress_critical_left(&p), 3 - t);
    }
    progress_free(&p);
    dag_destroy(d);
}

TEST(Progress, DiamondAndSideBranch)
{
    // 0 -> {1, 2} -> 3 -> 4, and 5 alone: heights 4,3,3,2,1,1
    struct dag *d = make(6, {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}});
    struct progress p;
    ASSERT_EQ(progress_init(&p, d, nullptr), 0);
    std::vector<uint32_t> want = {4, 3, 3, 2, 1, 1};
    for (uint32_t t = 0; t < 6; t++)
        EXPECT_EQ(p.height[t], want[t]) << "t" << t;
    progress_finished(&p, 0);
    EXPECT_EQ(progress_critical_left(&p), 3u);
    progress_finished(&p, 1);
    EXPECT_EQ(progress_critical_left(&p), 3u) << "t2 is still at height 3";
    progress_finished(&p, 2);
    EXPECT_EQ(progress_critical_left(&p), 2u);
    progress_finished(&p, 5); // the side branch does not move the top
    EXPECT_EQ(progress_critical_left(&p), 2u);
    progress_finished(&p, 3);
    progress_finished(&p, 4);
    EXPECT_EQ(progress_critical_left(&p), 0u);
    progress_free(&p);
    dag_destroy(d);
}

TEST(Progress, TasksDoneBeforeAreNotCounted)
{
    struct dag *d = make(3, {{0, 1}, {1, 2}});
    std::vector<uint8_t> done = {1, 1, 0};
    struct progress p;
    ASSERT_EQ(progress_init(&p, d, done.data()), 0);
    EXPECT_EQ(progress_critical_left(&p), 1u);
    progress_finished(&p, 2);
    EXPECT_EQ(progress_critical_left(&p), 0u);
    progress_free(&p);
    dag_destroy(d);
}

TEST(Progress, RateFollowsTheSamples)
{
    struct progress p = {};
    p.rate = -1;
    progress_sample(&p, 0, 100.0);
    EXPECT_LT(p.rate, 0) << "one sample gives no rate";
    progress_sample(&p, 50, 101.0);
    EXPECT_DOUBLE_EQ(p.rate, 50.0) << "the first rate is taken as it is";
    for (int i = 2; i < 200; i++)
        progress_sample(&p, 50 + (uint64_t)(i - 1) * 10, 100.0 + i);
    EXPECT_NEAR(p.rate, 10.0, 0.01) << "converges to the new rate";
    progress_sample(&p, 5000, 299.0005); // < 1 ms later: ignored
    EXPECT_NEAR(p.rate, 10.0, 0.01);
}

TEST(Progress, EtaIsTheLargerBound)
{
    struct progress p = {};
    p.rate = -1;
    EXPECT_EQ(progress_eta(&p, 0, 0), 0.0) << "nothing left";
    EXPECT_LT(progress_eta(&p, 10, 0), 0.0) << "unknown before anything finished";
    p.top = 5;
    EXPECT_DOUBLE_EQ(progress_eta(&p, 10, 2.0), 10.0) << "path only: 5 x 2 s";
    p.rate = 100;
    EXPECT_DOUBLE_EQ(progress_eta(&p, 10000, 2.0), 100.0) << "throughput bound";
    EXPECT_DOUBLE_EQ(progress_eta(&p, 100, 2.0), 10.0) << "critical path bound";
}

} // namespace
