// test_dag.cc - unit tests of the DAG model (io/dag.h): task storage,
// the name index, CSR construction with duplicate edges merged, and the
// cycle report of dag_finish().  Random graphs are checked against a naive
// std::set edge list.
#include <gtest/gtest.h>

#include <algorithm>

#include <cerrno>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "io/dag.h"

namespace
{

// Owns the strings a dag_task_spec points to.
struct Spec {
    std::string name;
    std::vector<std::string> args{"/bin/true"};
    std::string pegasus_id;
    bool has_pegasus_id = false;
    uint32_t cpus = 1, memory_mb = 0, tries = 0, line = 0;
    int32_t priority = 0;
    struct Fwd {
        uint32_t kind;
        std::string src, dest;
    };
    std::vector<Fwd> fwds;

    std::vector<const char *> ptrs;
    std::vector<size_t> lens;
    std::vector<dag_task_spec::dag_forward_spec> fspecs;
    dag_task_spec spec{};

    const dag_task_spec *get()
    {
        ptrs.clear();
        lens.clear();
        for (auto &a : args) {
            ptrs.push_back(a.data());
            lens.push_back(a.size());
        }
        fspecs.clear();
        for (auto &f : fwds)
            fspecs.push_back({f.kind, f.src.data(), f.src.size(), f.dest.data(), f.dest.size()});
        spec = dag_task_spec{};
        spec.name = name.data();
        spec.name_len = name.size();
        spec.pegasus_id = has_pegasus_id ? pegasus_id.data() : nullptr;
        spec.pegasus_id_len = pegasus_id.size();
        spec.argv = ptrs.data();
        spec.argv_len = lens.data();
        spec.argc = (uint32_t)args.size();
        spec.cpus = cpus;
        spec.memory_mb = memory_mb;
        spec.priority = priority;
        spec.tries = tries;
        spec.line = line;
        spec.forwards = fspecs.data();
        spec.nforwards = (uint32_t)fspecs.size();
        return &spec;
    }
};

struct DagPtr {
    dag *d = dag_create();
    ~DagPtr()
    {
        dag_destroy(d);
    }
    dag *operator->() const
    {
        return d;
    }
    operator dag *() const
    {
        return d;
    }
};

dag_task_t add(dag *d, const std::string &name)
{
    Spec s;
    s.name = name;
    dag_task_t id = ~0u;
    EXPECT_EQ(0, dag_add_task(d, s.get(), &id)) << name;
    return id;
}

// Adds n tasks named by fmt (with %d) from 0 to n - 1; their ids must be
// 0 to n - 1.
void add_numbered(dag *d, const char *fmt, int n)
{
    char name[32];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof name, fmt, i);
        ASSERT_EQ((dag_task_t)i, add(d, name));
    }
}

std::vector<dag_task_t> children(const dag *d, dag_task_t t)
{
    return std::vector<dag_task_t>(d->children + d->child_first[t],
                                   d->children + d->child_first[t + 1]);
}

// "cycle: A -> B -> A" -> {A, B, A}
std::vector<std::string> cycle_names(const std::string &text)
{
    std::vector<std::string> out;
    const std::string prefix = "cycle: ";
    if (text.compare(0, prefix.size(), prefix) != 0)
        return out;
    std::string rest = text.substr(prefix.size());
    size_t pos;
    while ((pos = rest.find(" -> ")) != std::string::npos) {
        out.push_back(rest.substr(0, pos));
        rest = rest.substr(pos + 4);
    }
    out.push_back(rest);
    return out;
}

// Checks that text names a cycle made of edges in `edges` (by id, names
// "n<id>"); elided text ("...") is checked up to the elision.
void expect_real_cycle(const std::string &text, const std::set<std::pair<int, int>> &edges)
{
    std::vector<std::string> names = cycle_names(text);
    ASSERT_GE(names.size(), 3u) << text;
    EXPECT_EQ(names.front(), names.back()) << text;
    std::set<std::string> seen(names.begin(), names.end() - 1);
    EXPECT_EQ(seen.size(), names.size() - 1) << "a task repeats inside the cycle: " << text;
    for (size_t i = 0; i + 1 < names.size(); i++) {
        if (names[i] == "..." || names[i + 1] == "...")
            continue;
        int a = std::stoi(names[i].substr(1)), b = std::stoi(names[i + 1].substr(1));
        EXPECT_TRUE(edges.count({a, b})) << names[i] << " -> " << names[i + 1] << " in " << text;
    }
}

TEST(DagModel, EmptyDagFinishes)
{
    DagPtr d;
    ASSERT_NE(nullptr, d.d);
    EXPECT_EQ(0u, d->ntasks);
    EXPECT_STREQ("", d->arena + DAG_NO_STRING);
    pmc_error err{};
    EXPECT_EQ(0, dag_finish(d, &err));
    EXPECT_EQ(0u, d->nedges);
    ASSERT_NE(nullptr, d->child_first);
    EXPECT_EQ(0u, d->child_first[0]);
}

TEST(DagModel, DestroyNullIsNoop)
{
    dag_destroy(nullptr);
}

TEST(DagModel, StoresEveryField)
{
    DagPtr d;
    Spec a;
    a.name = "alpha";
    a.args = {"/bin/echo", "hello world", "", "x"};
    a.pegasus_id = "42";
    a.has_pegasus_id = true;
    a.cpus = 3;
    a.memory_mb = 512;
    a.priority = -7;
    a.tries = 5;
    a.line = 12;
    a.fwds = {{DAG_FORWARD_PIPE, "FOO", "/tmp/foo"}, {DAG_FORWARD_FILE, "out.txt", "/tmp/all"}};
    dag_task_t id = 99;
    ASSERT_EQ(0, dag_add_task(d, a.get(), &id));
    EXPECT_EQ(0u, id);

    Spec b;
    b.name = "beta";
    ASSERT_EQ(0, dag_add_task(d, b.get(), &id));
    EXPECT_EQ(1u, id);
    ASSERT_EQ(2u, d->ntasks);

    EXPECT_STREQ("alpha", dag_task_name(d, 0));
    EXPECT_STREQ("42", d->arena + d->pegasus_id[0]);
    ASSERT_EQ(4u, d->argc[0]);
    EXPECT_STREQ("/bin/echo", dag_task_arg(d, 0, 0));
    EXPECT_STREQ("hello world", dag_task_arg(d, 0, 1));
    EXPECT_STREQ("", dag_task_arg(d, 0, 2));
    EXPECT_STREQ("x", dag_task_arg(d, 0, 3));
    EXPECT_EQ(strlen("/bin/echo") + strlen("hello world") + 0 + 1 + 4, dag_task_argv_bytes(d, 0));
    EXPECT_EQ(3u, d->cpus[0]);
    EXPECT_EQ(512u, d->memory_mb[0]);
    EXPECT_EQ(-7, d->priority[0]);
    EXPECT_EQ(5u, d->tries[0]);
    EXPECT_EQ(12u, d->line[0]);
    ASSERT_EQ(2u, d->nfwd[0]);
    const dag_forward *f = d->fwd + d->fwd_first[0];
    EXPECT_EQ((uint32_t)DAG_FORWARD_PIPE, f[0].kind);
    EXPECT_STREQ("FOO", d->arena + f[0].src);
    EXPECT_STREQ("/tmp/foo", d->arena + f[0].dest);
    EXPECT_EQ((uint32_t)DAG_FORWARD_FILE, f[1].kind);
    EXPECT_STREQ("out.txt", d->arena + f[1].src);
    EXPECT_STREQ("/tmp/all", d->arena + f[1].dest);

    EXPECT_STREQ("beta", dag_task_name(d, 1));
    EXPECT_EQ(DAG_NO_STRING, d->pegasus_id[1]);
    EXPECT_EQ(0u, d->nfwd[1]);
    EXPECT_EQ(1u, d->argc[1]);
    EXPECT_STREQ("/bin/true", dag_task_arg(d, 1, 0));

    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    // Still readable after dag_finish() shrank the arrays.
    EXPECT_STREQ("hello world", dag_task_arg(d, 0, 1));
    EXPECT_STREQ("/tmp/all", d->arena + d->fwd[d->fwd_first[0] + 1].dest);
    EXPECT_EQ(-7, d->priority[0]);
}

TEST(DagModel, DuplicateNameIsEexistWithExistingId)
{
    DagPtr d;
    add(d, "a");
    add(d, "b");
    Spec s;
    s.name = "b";
    s.args = {"/bin/false"};
    dag_task_t id = 99;
    errno = 0;
    EXPECT_EQ(-1, dag_add_task(d, s.get(), &id));
    EXPECT_EQ(EEXIST, errno);
    EXPECT_EQ(1u, id);
    EXPECT_EQ(2u, d->ntasks);
    EXPECT_STREQ("/bin/true", dag_task_arg(d, 1, 0));
}

TEST(DagModel, RejectsInvalidSpecs)
{
    DagPtr d;
    add(d, "ok");
    size_t arena_before = d->arena_len;
    std::vector<Spec> bad(6);
    bad[0].name = "";
    bad[1].name = "noargs";
    bad[1].args.clear();
    bad[2].name = "nocpus";
    bad[2].cpus = 0;
    bad[3].name = std::string("nul\0name", 8);
    bad[4].name = "nularg";
    bad[4].args = {std::string("a\0b", 3)};
    bad[5].name = "badkind";
    bad[5].fwds = {{7, "a", "b"}};
    for (auto &s : bad) {
        dag_task_t id;
        errno = 0;
        EXPECT_EQ(-1, dag_add_task(d, s.get(), &id)) << s.name;
        EXPECT_EQ(EINVAL, errno) << s.name;
    }
    EXPECT_EQ(1u, d->ntasks);
    EXPECT_EQ(arena_before, d->arena_len);
}

TEST(DagModel, EdgeValidation)
{
    DagPtr d;
    add(d, "a");
    add(d, "b");
    errno = 0;
    EXPECT_EQ(-1, dag_add_edge(d, 0, 0));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(-1, dag_add_edge(d, 0, 2));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(-1, dag_add_edge(d, 5, 1));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(0, dag_add_edge(d, 0, 1));
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err));
    EXPECT_EQ(1u, d->nedges);
}

TEST(DagModel, FinishTwiceAndChangesAfterFinishAreEinval)
{
    DagPtr d;
    add(d, "a");
    add(d, "b");
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err));
    errno = 0;
    EXPECT_EQ(-1, dag_finish(d, &err));
    EXPECT_EQ(EINVAL, errno);
    errno = 0;
    EXPECT_EQ(-1, dag_add_edge(d, 0, 1));
    EXPECT_EQ(EINVAL, errno);
    Spec s;
    s.name = "c";
    dag_task_t id;
    errno = 0;
    EXPECT_EQ(-1, dag_add_task(d, s.get(), &id));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(2u, d->ntasks);
}

TEST(DagModel, LookupExactNamesOnly)
{
    DagPtr d;
    add(d, "task1");
    add(d, "task12");
    add(d, "a-rather-long-task-name-of-more-than-sixteen-bytes");
    dag_task_t id = 99;
    const char buf[] = "task12";
    ASSERT_EQ(0, dag_lookup(d, buf, 5, &id)); // "task1", not NUL-terminated
    EXPECT_EQ(0u, id);
    ASSERT_EQ(0, dag_lookup(d, buf, 6, &id));
    EXPECT_EQ(1u, id);
    ASSERT_EQ(0, dag_lookup(d, "a-rather-long-task-name-of-more-than-sixteen-bytes", 50, &id));
    EXPECT_EQ(2u, id);
    errno = 0;
    EXPECT_EQ(-1, dag_lookup(d, "task", 4, &id));
    EXPECT_EQ(ENOENT, errno);
    errno = 0;
    EXPECT_EQ(-1, dag_lookup(d, "task123", 7, &id));
    EXPECT_EQ(ENOENT, errno);
    EXPECT_EQ(-1, dag_lookup(d, "", 0, &id));
}

// 300,000 tasks take every array far past the size at which it moves into
// its own mapping (and then through mremap() growth), and the index through
// many rehashes.
TEST(DagModel, LookupFindsEveryTaskAcrossGrowth)
{
    DagPtr d;
    const int n = 300000;
    ASSERT_NO_FATAL_FAILURE(add_numbered(d, "job_%d", n));
    for (int i = 1; i < n; i++)
        ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)(i - 1), (dag_task_t)i));
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    char name[32];
    for (int i = 0; i < n; i++) {
        int len = snprintf(name, sizeof name, "job_%d", i);
        dag_task_t id;
        ASSERT_EQ(0, dag_lookup(d, name, (size_t)len, &id)) << name;
        ASSERT_EQ((dag_task_t)i, id);
        ASSERT_STREQ(name, dag_task_name(d, id));
        ASSERT_STREQ("/bin/true", dag_task_arg(d, id, 0));
        ASSERT_EQ(i ? 1u : 0u, d->nparents[i]);
    }
    EXPECT_EQ((uint32_t)(n - 1), d->nedges);
    dag_task_t id;
    EXPECT_EQ(-1, dag_lookup(d, "job_300000", 10, &id));
}

// dag_reserve() sizes the DAG up front; a low estimate still grows, a high one
// is given back; a lookup's hash and prefetch hints change no result.
TEST(DagModel, ReserveLowAndHighEstimates)
{
    for (uint32_t guess : {0u, 1000u, 50000u, 400000u}) {
        DagPtr d;
        ASSERT_EQ(0, dag_reserve(d, guess, guess));
        const int n = 50000;
        ASSERT_NO_FATAL_FAILURE(add_numbered(d, "t%d", n));
        for (int i = 1; i < n; i++)
            ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)(i / 2), (dag_task_t)i));
        pmc_error err{};
        ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
        EXPECT_EQ(-1, dag_reserve(d, 10, 10));
        EXPECT_EQ(EINVAL, errno);
        char name[32];
        for (int i = 0; i < n; i++) {
            int len = snprintf(name, sizeof name, "t%d", i);
            uint32_t h = dag_name_hash(name, (size_t)len);
            for (int stage = 0; stage < 3; stage++)
                dag_prefetch(d, h, stage);
            dag_task_t id;
            ASSERT_EQ(0, dag_lookup_hash(d, name, (size_t)len, h, &id)) << name;
            ASSERT_EQ((dag_task_t)i, id);
        }
        dag_prefetch(d, dag_name_hash("nope", 4), 2);
        dag_task_t id;
        EXPECT_EQ(-1, dag_lookup(d, "nope", 4, &id));
        EXPECT_EQ((uint32_t)(n - 1), d->nedges);
    }
}

// A task whose argv is exactly the previous task's shares its strings; any
// difference (a prefix, a split, another argc) gets its own.
TEST(DagModel, RepeatedArgvIsSharedOnlyWhenEqual)
{
    DagPtr d;
    const std::vector<std::vector<std::string>> argvs = {
        {"/bin/true"}, {"/bin/true"}, {"/bin/tru"}, {"/bin/true", ""}, {"/bin/true", ""},
        {"a", "bc"},   {"ab", "c"},   {"ab", "c"},  {"ab", "cd"},      {"/bin/true"}};
    for (size_t i = 0; i < argvs.size(); i++) {
        Spec s;
        s.name = "t" + std::to_string(i);
        s.args = argvs[i];
        dag_task_t id;
        ASSERT_EQ(0, dag_add_task(d, s.get(), &id));
    }
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    for (size_t i = 0; i < argvs.size(); i++) {
        ASSERT_EQ(argvs[i].size(), d->argc[i]);
        for (size_t k = 0; k < argvs[i].size(); k++)
            EXPECT_STREQ(argvs[i][k].c_str(), dag_task_arg(d, (dag_task_t)i, (uint32_t)k));
    }
    EXPECT_EQ(d->argv[0], d->argv[1]);
    EXPECT_NE(d->argv[1], d->argv[2]);
    EXPECT_EQ(d->argv[3], d->argv[4]);
    EXPECT_NE(d->argv[5], d->argv[6]);
    EXPECT_EQ(d->argv[6], d->argv[7]);
    EXPECT_NE(d->argv[7], d->argv[8]);
}

// Per-task arrays of 16384 entries (64 KiB) are mapped; shrunk to 16380 they
// move back from a mapping to the heap in dag_finish().
TEST(DagModel, ShrinkAcrossMappingThreshold)
{
    DagPtr d;
    const int n = 16380;
    ASSERT_NO_FATAL_FAILURE(add_numbered(d, "%d", n));
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err));
    char name[32];
    for (int i = 0; i < n; i += 97) {
        snprintf(name, sizeof name, "%d", i);
        EXPECT_STREQ(name, dag_task_name(d, (dag_task_t)i));
        EXPECT_EQ(1u, d->cpus[i]);
    }
}

TEST(DagModel, DuplicateEdgesMerged)
{
    DagPtr d;
    dag_task_t a = add(d, "A"), b = add(d, "B"), c = add(d, "C");
    ASSERT_EQ(0, dag_add_edge(d, a, c));
    ASSERT_EQ(0, dag_add_edge(d, a, b));
    ASSERT_EQ(0, dag_add_edge(d, a, c));
    ASSERT_EQ(0, dag_add_edge(d, b, c));
    ASSERT_EQ(0, dag_add_edge(d, b, c));
    ASSERT_EQ(0, dag_add_edge(d, a, b));
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    EXPECT_EQ(3u, d->nedges);
    EXPECT_EQ((std::vector<dag_task_t>{c, b}), children(d, a)); // first-seen order
    EXPECT_EQ((std::vector<dag_task_t>{c}), children(d, b));
    EXPECT_TRUE(children(d, c).empty());
    EXPECT_EQ(0u, d->nparents[a]);
    EXPECT_EQ(1u, d->nparents[b]);
    EXPECT_EQ(2u, d->nparents[c]);
    EXPECT_EQ(3u, d->child_first[3]);
}

// A random layered DAG (edges only go to later layers, many repeated) against
// a naive edge list: children in first-seen order, in-degrees, edge count.
TEST(DagModel, CsrMatchesNaiveOnRandomLayeredDag)
{
    std::mt19937 rng(12345);
    for (int round = 0; round < 5; round++) {
        DagPtr d;
        const int layers = 20, width = 500;
        const int n = layers * width;
        for (int i = 0; i < n; i++)
            add(d, "n" + std::to_string(i));
        std::vector<std::vector<int>> expect(n);
        std::set<std::pair<int, int>> seen;
        std::vector<uint32_t> indeg(n, 0);
        const int edges = 40000 + round * 10000;
        for (int e = 0; e < edges; e++) {
            int la = (int)(rng() % (layers - 1));
            int lb = la + 1 + (int)(rng() % (layers - 1 - la));
            int pa = la * width + (int)(rng() % width), pb = lb * width + (int)(rng() % 50);
            ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)pa, (dag_task_t)pb));
            if (seen.insert({pa, pb}).second) {
                expect[pa].push_back(pb);
                indeg[pb]++;
            }
        }
        pmc_error err{};
        ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
        ASSERT_EQ(seen.size(), d->nedges);
        ASSERT_LT(seen.size(), (size_t)edges) << "the test should create duplicates";
        EXPECT_EQ(0u, d->child_first[0]);
        EXPECT_EQ(d->nedges, d->child_first[n]);
        for (int t = 0; t < n; t++) {
            std::vector<dag_task_t> got = children(d, (dag_task_t)t);
            ASSERT_EQ(expect[t], std::vector<int>(got.begin(), got.end())) << "task " << t;
            ASSERT_EQ(indeg[t], d->nparents[t]) << "task " << t;
        }
    }
}

// dag_topo_order: a permutation of the tasks with every parent before its
// children, on a random DAG whose ids do not follow the edges.
TEST(DagModel, TopoOrderPutsParentsFirst)
{
    std::mt19937 rng(7);
    DagPtr d;
    const int n = 3000;
    std::vector<int> rank(n); // a hidden order the edges follow
    for (int i = 0; i < n; i++) {
        add(d, "t" + std::to_string(i));
        rank[i] = i;
    }
    std::shuffle(rank.begin(), rank.end(), rng);
    std::vector<std::pair<int, int>> edges;
    for (int e = 0; e < 20000; e++) {
        int a = (int)(rng() % n), b = (int)(rng() % n);
        if (rank[a] == rank[b])
            continue;
        if (rank[a] > rank[b])
            std::swap(a, b);
        ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)a, (dag_task_t)b));
        edges.push_back({a, b});
    }
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    std::vector<dag_task_t> order(n);
    ASSERT_EQ(0, dag_topo_order(d, order.data()));
    std::vector<int> pos(n, -1);
    for (int k = 0; k < n; k++) {
        ASSERT_LT(order[k], (dag_task_t)n);
        ASSERT_EQ(pos[order[k]], -1) << "task " << order[k] << " twice";
        pos[order[k]] = k;
    }
    for (auto [a, b] : edges)
        ASSERT_LT(pos[a], pos[b]) << a << " -> " << b;
}

TEST(DagModel, CycleReportIsExact)
{
    DagPtr d;
    dag_task_t a = add(d, "A"), b = add(d, "B"), c = add(d, "C"), x = add(d, "X"), y = add(d, "Y");
    ASSERT_EQ(0, dag_add_edge(d, x, a)); // a tail into the cycle
    ASSERT_EQ(0, dag_add_edge(d, b, c));
    ASSERT_EQ(0, dag_add_edge(d, c, a));
    ASSERT_EQ(0, dag_add_edge(d, a, b));
    ASSERT_EQ(0, dag_add_edge(d, c, y)); // downstream of the cycle
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(-1, dag_finish(d, &err));
    EXPECT_EQ(ELOOP, errno);
    EXPECT_STREQ("cycle: A -> B -> C -> A", err.text);
    // The in-degrees are still right after the failed check.
    EXPECT_EQ(2u, d->nparents[a]);
    EXPECT_EQ(1u, d->nparents[y]);
}

TEST(DagModel, TwoTaskCycle)
{
    DagPtr d;
    add(d, "first");
    dag_task_t p = add(d, "P"), q = add(d, "Q");
    ASSERT_EQ(0, dag_add_edge(d, q, p));
    ASSERT_EQ(0, dag_add_edge(d, p, q));
    pmc_error err{};
    EXPECT_EQ(-1, dag_finish(d, &err));
    EXPECT_STREQ("cycle: P -> Q -> P", err.text);
}

TEST(DagModel, NullErrorIsAllowed)
{
    DagPtr d;
    dag_task_t p = add(d, "P"), q = add(d, "Q");
    ASSERT_EQ(0, dag_add_edge(d, q, p));
    ASSERT_EQ(0, dag_add_edge(d, p, q));
    errno = 0;
    EXPECT_EQ(-1, dag_finish(d, nullptr));
    EXPECT_EQ(ELOOP, errno);
}

// Random DAGs with one back edge planted: the report must be a real cycle.
TEST(DagModel, PlantedCycleReportIsARealCycle)
{
    std::mt19937 rng(777);
    for (int round = 0; round < 30; round++) {
        DagPtr d;
        const int n = 50 + (int)(rng() % 400);
        for (int i = 0; i < n; i++)
            add(d, "n" + std::to_string(i));
        std::set<std::pair<int, int>> edges;
        for (int e = 0; e < n * 3; e++) {
            int a = (int)(rng() % (n - 1));
            int b = a + 1 + (int)(rng() % (n - 1 - a));
            edges.insert({a, b});
            ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)a, (dag_task_t)b));
        }
        // Close a cycle along an existing path a -> ... -> b with b -> a.
        int a = (int)(rng() % (n / 2)), b = a;
        for (auto it = edges.lower_bound({a, 0}); it != edges.end() && it->first == b;
             it = edges.lower_bound({b, 0}))
            b = it->second;
        if (b == a) {
            b = a + 1;
            edges.insert({a, b});
            ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)a, (dag_task_t)b));
        }
        edges.insert({b, a});
        ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)b, (dag_task_t)a));
        pmc_error err{};
        ASSERT_EQ(-1, dag_finish(d, &err));
        expect_real_cycle(err.text, edges);
    }
}

TEST(DagModel, LongCycleIsElided)
{
    DagPtr d;
    const int n = 1000;
    std::set<std::pair<int, int>> edges;
    for (int i = 0; i < n; i++)
        add(d, "n" + std::to_string(i));
    for (int i = 0; i < n; i++) {
        ASSERT_EQ(0, dag_add_edge(d, (dag_task_t)i, (dag_task_t)((i + 1) % n)));
        edges.insert({i, (i + 1) % n});
    }
    pmc_error err{};
    ASSERT_EQ(-1, dag_finish(d, &err));
    std::string text = err.text;
    EXPECT_EQ(0u, text.find("cycle: n0 -> n1 -> n2 -> ")) << text;
    EXPECT_NE(std::string::npos, text.find(" -> ... -> n0")) << text;
    EXPECT_LT(text.size(), 420u);
    expect_real_cycle(text, edges);
}

} // namespace
