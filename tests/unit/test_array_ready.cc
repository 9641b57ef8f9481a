// test_array_ready.cc - sched/array_ready.h: a run of a DAG with arrays,
// simulated in random completion orders, starts every task and instance
// once and only after all its parents (io/dag.h's instance functions).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "dag_holder.h"

extern "C" {
#include "sched/array_ready.h"
}

namespace
{

Dag parse(const std::string &text)
{
    dagfile_options opts{};
    opts.arrays = 1;
    return parse_dag_text(text, "a.dag", &opts);
}

struct Sim {
    const dag *d;
    array_ready *ar = nullptr;
    std::vector<uint64_t> remaining; // plain tasks
    std::vector<uint32_t> pool;      // started, not done (plain and instances)
    std::vector<char> done;          // by id
    std::vector<uint32_t> order;     // ids in start order
    uint64_t window_peak = 0, in_window = 0;

    Sim(const dag *dd, const std::vector<char> &done_before) : d(dd), done(done_before)
    {
        std::vector<uint8_t> plain(d->ntasks);
        std::vector<uint64_t> bits((d->ninstances + 63) / 64);
        for (uint32_t t = 0; t < d->ntasks + d->ninstances; t++)
            if (done[t]) {
                if (t < d->ntasks)
                    plain[t] = 1;
                else
                    bits[(t - d->ntasks) / 64] |= 1ull << ((t - d->ntasks) % 64);
            }
        ar = ar_create(d, plain.data(), d->ninstances ? bits.data() : nullptr);
        remaining.resize(d->ntasks);
        for (uint32_t t = 0; t < d->ntasks; t++)
            remaining[t] = d->nparents[t] + ar_plain_waits(ar, t);
        for (uint32_t t = 0; t < d->ntasks; t++)
            if (done[t])
                for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
                    remaining[d->children[e]]--;
        for (uint32_t t = 0; t < d->ntasks; t++)
            if (!done[t] && remaining[t] == 0)
                start(t);
    }
    ~Sim()
    {
        ar_destroy(ar);
    }
    void start(uint32_t t)
    {
        pool.push_back(t);
        order.push_back(t);
    }
    static void satisfied(void *ctx, dag_task_t c)
    {
        Sim *s = (Sim *)ctx;
        if (--s->remaining[c] == 0)
            s->start(c);
    }
    static int take(void *ctx, dag_task_t id, int32_t)
    {
        Sim *s = (Sim *)ctx;
        s->in_window++;
        s->window_peak = std::max(s->window_peak, s->in_window);
        s->start(id);
        return 0;
    }
    void finish(uint32_t t)
    {
        done[t] = 1;
        if (t < d->ntasks)
            for (uint32_t e = d->child_first[t]; e < d->child_first[t + 1]; e++)
                if (--remaining[d->children[e]] == 0)
                    start(d->children[e]);
        ar_task_done(ar, t, satisfied, this);
    }
    // Run to the end, finishing started tasks in a random order.
    void run(std::mt19937 &rng, uint32_t window)
    {
        for (;;) {
            ar_take_ready(ar, window, take, this);
            if (pool.empty())
                break;
            size_t k = rng() % pool.size();
            uint32_t t = pool[k];
            pool[k] = pool.back();
            pool.pop_back();
            if (t >= d->ntasks) {
                ar_instance_started(ar, t);
                in_window--;
            }
            finish(t);
        }
    }
};

// The ids of every parent of id (plain edges, array edges).
std::vector<uint32_t> parents_of(const dag *d, uint32_t id)
{
    std::vector<uint32_t> out;
    std::vector<dag_instance_range> r(64);
    uint32_t n;
    if (id < d->ntasks) {
        for (uint32_t p = 0; p < d->ntasks; p++)
            for (uint32_t e = d->child_first[p]; e < d->child_first[p + 1]; e++)
                if (d->children[e] == id)
                    out.push_back(p);
        const uint32_t *ids;
        n = dag_node_in_edges(d, id, &ids);
        for (uint32_t k = 0; k < n; k++) {
            uint32_t a = DAG_NODE_ID(d->array_edges[ids[k]].parent);
            for (uint32_t i = d->arrays[a].first; i <= d->arrays[a].last; i++)
                out.push_back(dag_instance_id(d, a, i));
        }
        return out;
    }
    uint32_t a, index;
    EXPECT_EQ(0, dag_instance_of(d, id, &a, &index));
    n = dag_instance_parents(d, a, index, r.data(), (uint32_t)r.size());
    for (uint32_t k = 0; k < n; k++) {
        if (!DAG_NODE_IS_ARRAY(r[k].node)) {
            out.push_back(r[k].node);
            continue;
        }
        for (uint32_t i = r[k].first; i <= r[k].last; i++)
            out.push_back(dag_instance_id(d, DAG_NODE_ID(r[k].node), i));
    }
    return out;
}

void expect_valid_run(const dag *d, const Sim &s, const std::vector<char> &done_before)
{
    uint32_t total = d->ntasks + (uint32_t)d->ninstances;
    std::vector<int> pos(total, -1);
    for (size_t k = 0; k < s.order.size(); k++) {
        ASSERT_EQ(-1, pos[s.order[k]]) << "started twice: " << s.order[k];
        ASSERT_FALSE(done_before[s.order[k]]) << "done before, started again: " << s.order[k];
        pos[s.order[k]] = (int)k;
    }
    for (uint32_t t = 0; t < total; t++) {
        ASSERT_TRUE(done_before[t] || pos[t] >= 0) << "never started: " << t;
        if (pos[t] < 0)
            continue;
        for (uint32_t p : parents_of(d, t))
            ASSERT_TRUE(done_before[p] || (pos[p] >= 0 && pos[p] < pos[t]))
                << "task " << t << " started before its parent " << p;
    }
}

const char *kShapes = "TASK split /bin/true\n"
                      "TASK map[0-39] /bin/true %{INDEX}\n"
                      "TASK reduce[10-19] /bin/true\n"
                      "TASK sim[5-14] /bin/true\n"
                      "TASK post[100-109] /bin/true\n"
                      "TASK all[0-2] /bin/true\n"
                      "TASK merge /bin/true\n"
                      "TASK tail /bin/true\n"
                      "EDGE split map[*]\n"
                      "EDGE map[i] reduce[i/4]\n"
                      "EDGE reduce[*] merge\n"
                      "EDGE sim[i] post[i]\n"
                      "EDGE post[*] all[*]\n"
                      "EDGE reduce[*] all[*]\n"
                      "EDGE all[*] tail\n"
                      "EDGE merge tail\n";

} // namespace

TEST(ArrayReady, EveryShapeRunsOnceAfterItsParents)
{
    Dag r = parse(kShapes);
    ASSERT_NE(nullptr, r.d) << r.error;
    std::vector<char> none(r->ntasks + r->ninstances, 0);
    for (uint32_t seed = 1; seed <= 20; seed++) {
        std::mt19937 rng(seed);
        Sim s(r.d, none);
        ASSERT_NE(nullptr, s.ar);
        s.run(rng, 1 + seed % 5);
        EXPECT_LE(s.window_peak, 5u * 5u); // at most `window` per array, 5 arrays
        expect_valid_run(r.d, s, none);
        EXPECT_FALSE(ar_has_ready(s.ar));
    }
}

TEST(ArrayReady, ARestartRunsOnlyWhatWasNotDone)
{
    Dag r = parse(kShapes);
    ASSERT_NE(nullptr, r.d) << r.error;
    uint32_t total = r->ntasks + (uint32_t)r->ninstances;
    for (uint32_t seed = 1; seed <= 20; seed++) {
        // a first run stopped after a random number of completions
        std::mt19937 rng(seed);
        std::vector<char> none(total, 0);
        Sim first(r.d, none);
        uint32_t stop = rng() % total;
        for (uint32_t k = 0; k < stop; k++) {
            ar_take_ready(first.ar, 3, Sim::take, &first);
            ASSERT_FALSE(first.pool.empty());
            size_t i = rng() % first.pool.size();
            uint32_t t = first.pool[i];
            first.pool.erase(first.pool.begin() + (long)i);
            if (t >= r->ntasks)
                ar_instance_started(first.ar, t);
            first.finish(t);
        }
        Sim again(r.d, first.done);
        again.run(rng, 4);
        expect_valid_run(r.d, again, first.done);
        for (uint32_t t = r->ntasks; t < total; t++)
            EXPECT_TRUE(ar_instance_done(again.ar, t));
    }
}

TEST(ArrayReady, WindowBoundsWhatIsHandedOut)
{
    Dag r = parse("TASK a[0-999999] /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    std::vector<char> none(r->ntasks + r->ninstances, 0);
    Sim s(r.d, none);
    EXPECT_EQ(64u, ar_take_ready(s.ar, 64, Sim::take, &s));
    EXPECT_EQ(0u, ar_take_ready(s.ar, 64, Sim::take, &s));
    ar_instance_started(s.ar, s.order[0]);
    EXPECT_EQ(1u, ar_take_ready(s.ar, 64, Sim::take, &s));
    EXPECT_EQ(dag_instance_id(r.d, 0, 64), s.order.back()); // index order
}

TEST(ArrayReady, PlainTasksWaitForTheirFanInArrays)
{
    Dag r = parse("TASK a[0-2] /bin/true\nTASK b[0-1] /bin/true\nTASK t /bin/true\n"
                  "EDGE a[*] t\nEDGE b[*] t\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    std::vector<uint8_t> plain(1, 0);
    uint64_t bits = 0b00111; // a done, b not
    array_ready *ar = ar_create(r.d, plain.data(), &bits);
    ASSERT_NE(nullptr, ar);
    EXPECT_EQ(1u, ar_plain_waits(ar, 0));
    std::vector<dag_task_t> sat;
    auto cb = [](void *ctx, dag_task_t c) { ((std::vector<dag_task_t> *)ctx)->push_back(c); };
    ar_task_done(ar, dag_instance_id(r.d, 1, 0), cb, &sat);
    EXPECT_TRUE(sat.empty());
    ar_task_done(ar, dag_instance_id(r.d, 1, 1), cb, &sat);
    EXPECT_EQ(std::vector<dag_task_t>{0}, sat);
    ar_destroy(ar);
}
