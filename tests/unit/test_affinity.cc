// test_affinity.cc - unit tests of engine/host/affinity.h.
//
// The CPU list format against hand-made sets and the kernel's own
// Cpus_allowed_list; the pool on synthetic hwloc topologies (hwloc builds
// them from strings like "pack:2 core:4 pu:2", PUs numbered in order): the
// split between host ranks, `within`, best-fit choice of core, cache and
// package, fragmentation, tasks larger than a package, give, a long
// take/give sequence checked against a model; minimality on this machine's
// topology and on several synthetic ones (the smallest object covering a
// taken set is the smallest object that has enough PUs); the reset of the
// inherited binding on every thread, and of the NUMA memory policy.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <numaif.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "engine/host/affinity.h"
#include "sched/resources.h"
#include "testutil.h"

using namespace testutil;

namespace
{

cpu_set_t set_of(std::initializer_list<int> cpus)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c : cpus)
        CPU_SET(c, &s);
    return s;
}

std::string list(const cpu_set_t &s)
{
    char buf[AFFINITY_LIST_MAX];
    size_t n = affinity_format(&s, buf, sizeof buf);
    EXPECT_LT(n, sizeof buf);
    return buf;
}

// A loaded hwloc topology, synthetic or this machine's.
class Topo
{
  public:
    explicit Topo(const char *synthetic = nullptr)
    {
        EXPECT_EQ(hwloc_topology_init(&t_), 0);
        if (synthetic) {
            EXPECT_EQ(hwloc_topology_set_synthetic(t_, synthetic), 0) << synthetic;
        }
        EXPECT_EQ(hwloc_topology_load(t_), 0);
    }
    ~Topo()
    {
        hwloc_topology_destroy(t_);
    }
    Topo(const Topo &) = delete;
    Topo &operator=(const Topo &) = delete;
    hwloc_topology_t get() const
    {
        return t_;
    }

  private:
    hwloc_topology_t t_ = nullptr;
};

struct PoolDeleter {
    void operator()(cpuset_pool *p) const
    {
        cpuset_pool_destroy(p);
    }
};
using Pool = std::unique_ptr<cpuset_pool, PoolDeleter>;

Pool make_pool(const Topo &t, int rank = 0, int ranks = 1, const cpu_set_t *within = nullptr)
{
    pmc_error err = {};
    Pool p(cpuset_pool_create(t.get(), within, rank, ranks, &err));
    EXPECT_NE(p, nullptr) << err.text;
    return p;
}

// take() that returns the list, "fragmented" or "none".
std::string take(cpuset_pool *p, unsigned n)
{
    cpu_set_t out;
    int rc = cpuset_pool_take(p, n, &out);
    if (rc != 0) {
        EXPECT_EQ(CPU_COUNT(&out), 0) << "nothing is taken on failure";
    }
    if (rc == 1)
        return "fragmented";
    if (rc < 0)
        return errno == EBUSY ? "none" : "error " + std::to_string(errno);
    EXPECT_EQ(CPU_COUNT(&out), static_cast<int>(n));
    return list(out);
}

std::string pool_list(const cpuset_pool *p)
{
    cpu_set_t all;
    cpuset_pool_all(p, &all);
    return list(all);
}

// ---- affinity_format --------------------------------------------------

TEST(AffinityFormat, ListsAndRanges)
{
    EXPECT_EQ(list(set_of({})), "");
    EXPECT_EQ(list(set_of({0})), "0");
    EXPECT_EQ(list(set_of({5})), "5");
    EXPECT_EQ(list(set_of({0, 1, 2, 3, 8, 10, 11})), "0-3,8,10-11");
    EXPECT_EQ(list(set_of({10, 11})), "10-11"); // two in a row: a range, as the kernel
    EXPECT_EQ(list(set_of({1, 3, 5})), "1,3,5");
    EXPECT_EQ(list(set_of({1023})), "1023");
    EXPECT_EQ(list(set_of({0, 1020, 1021, 1022, 1023})), "0,1020-1023");
}

TEST(AffinityFormat, TruncatesLikeSnprintf)
{
    cpu_set_t s = set_of({0, 1, 2, 3, 8, 10, 11});
    char buf[5];
    memset(buf, 'x', sizeof buf);
    EXPECT_EQ(affinity_format(&s, buf, sizeof buf), 11u);
    EXPECT_STREQ(buf, "0-3,");
    char one = 'x';
    EXPECT_EQ(affinity_format(&s, &one, 1), 11u);
    EXPECT_EQ(one, '\0');
    EXPECT_EQ(affinity_format(&s, nullptr, 0), 11u);
}

TEST(AffinityFormat, WorstCaseFitsListMax)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    for (int c = 0; c < CPU_SETSIZE; c += 2)
        CPU_SET(c, &s);
    char buf[AFFINITY_LIST_MAX];
    size_t n = affinity_format(&s, buf, sizeof buf);
    EXPECT_LT(n, sizeof buf);
    EXPECT_EQ(strlen(buf), n);
    EXPECT_EQ(std::string(buf).substr(0, 8), "0,2,4,6,");
}

// The same form as the kernel's Cpus_allowed_list (this is the main thread).
TEST(AffinityFormat, MatchesKernelCpusAllowedList)
{
    cpu_set_t mine;
    ASSERT_EQ(sched_getaffinity(0, sizeof mine, &mine), 0);
    EXPECT_EQ(list(mine), status_field(read_file("/proc/self/status"), "Cpus_allowed_list"));
}

// ---- building pools ---------------------------------------------------

TEST(CpusetPool, WholeHostForOneRank)
{
    Topo t("pack:2 core:4 pu:2");
    Pool p = make_pool(t);
    EXPECT_EQ(cpuset_pool_size(p.get()), 16u);
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 16u);
    EXPECT_EQ(pool_list(p.get()), "0-15");
}

// Contiguous blocks in logical order, sized like resources_share().
TEST(CpusetPool, SplitBetweenHostRanks)
{
    Topo t("pack:2 core:4 pu:2");
    const char *want[] = {"0-5", "6-10", "11-15"};
    for (int r = 0; r < 3; r++) {
        Pool p = make_pool(t, r, 3);
        EXPECT_EQ(cpuset_pool_size(p.get()), resources_share(16, r, 3));
        EXPECT_EQ(pool_list(p.get()), want[r]) << "rank " << r;
    }
}

// --set-affinity with GPUs: the task's CPUs come from near its GPUs (here
// package 1, PUs 8-15) while that package has room, then from anywhere.
TEST(CpusetPool, TakeNearPrefersTheGivenPus)
{
    Topo t("pack:2 core:4 pu:2");
    Pool p = make_pool(t);
    cpu_set_t near = set_of({8, 9, 10, 11, 12, 13, 14, 15});
    cpu_set_t got;
    ASSERT_EQ(cpuset_pool_take_near(p.get(), 2, &near, &got), 0);
    EXPECT_EQ(list(got), "8-9") << "a whole core in package 1";
    ASSERT_EQ(cpuset_pool_take_near(p.get(), 6, &near, &got), 0);
    EXPECT_EQ(list(got), "10-15");
    ASSERT_EQ(cpuset_pool_take_near(p.get(), 2, &near, &got), 0);
    EXPECT_EQ(list(got), "0-1") << "package 1 is full: anywhere";
    cpu_set_t empty;
    CPU_ZERO(&empty);
    ASSERT_EQ(cpuset_pool_take_near(p.get(), 2, &empty, &got), 0);
    EXPECT_EQ(list(got), "2-3") << "an empty set means no preference";
}

TEST(CpusetPool, MoreRanksThanPus)
{
    Topo t("pack:1 core:1 pu:2");
    Pool last = make_pool(t, 2, 3);
    EXPECT_EQ(cpuset_pool_size(last.get()), 0u);
    EXPECT_EQ(pool_list(last.get()), "");
    EXPECT_EQ(take(last.get(), 1), "none");
    Pool second = make_pool(t, 1, 3);
    EXPECT_EQ(pool_list(second.get()), "1");
}

TEST(CpusetPool, WithinRestrictsTheHost)
{
    Topo t("pack:2 core:4 pu:2");
    cpu_set_t within = set_of({2, 3, 4, 5, 9, 200});
    Pool p = make_pool(t, 0, 1, &within);
    EXPECT_EQ(pool_list(p.get()), "2-5,9");
    Pool half = make_pool(t, 1, 2, &within);
    EXPECT_EQ(pool_list(half.get()), "5,9");
}

TEST(CpusetPool, BadHostRankIsRefused)
{
    Topo t("pack:1 core:2 pu:1");
    pmc_error err = {};
    errno = 0;
    EXPECT_EQ(cpuset_pool_create(t.get(), nullptr, 2, 2, &err), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_NE(std::string(err.text).find("host rank"), std::string::npos) << err.text;
    EXPECT_EQ(cpuset_pool_create(t.get(), nullptr, 0, 0, nullptr), nullptr);
    cpuset_pool_destroy(nullptr); // no-op
}

// ---- taking and giving --------------------------------------------------

// One take(): n PUs, what it must return, and (nfree >= 0) the number of
// free PUs it must leave.
struct Take {
    unsigned n;
    std::string want;
    int nfree = -1;
};

// The takes in order from a fresh pool (host rank `rank` of `ranks`) of the
// synthetic topology.  The free count must also follow them: a take that
// fails ("none", "fragmented", "error ...") takes nothing.
void expect_takes(const char *topo, const std::vector<Take> &takes, int rank = 0, int ranks = 1)
{
    Topo t(topo);
    Pool p = make_pool(t, rank, ranks);
    ASSERT_NE(p, nullptr);
    unsigned nfree = cpuset_pool_size(p.get());
    for (const Take &k : takes) {
        EXPECT_EQ(take(p.get(), k.n), k.want) << topo << ": take " << k.n;
        if (isdigit(static_cast<unsigned char>(k.want[0])))
            nfree -= k.n;
        EXPECT_EQ(cpuset_pool_nfree(p.get()), nfree) << topo << ": after take " << k.n;
        if (k.nfree >= 0) {
            EXPECT_EQ(cpuset_pool_nfree(p.get()), static_cast<unsigned>(k.nfree))
                << topo << ": after take " << k.n;
        }
    }
}

TEST(CpusetPool, PusOfOneCore)
{
    expect_takes("pack:2 core:4 pu:2", {{2, "0-1"}, {2, "2-3", 12}});
}

// A single PU goes to a partly used core before a whole core is broken
// (after PU 0, core 0 has one free PU only).
TEST(CpusetPool, PartlyUsedCoreFillsFirst)
{
    expect_takes("pack:2 core:4 pu:2", {{1, "0"}, {2, "2-3"}, {1, "1"}});
}

// After 0-1, package 0 (6 free) fills before package 1 (8 free).
TEST(CpusetPool, FullerPackageFillsFirst)
{
    expect_takes("pack:2 core:4 pu:2", {{2, "0-1"}, {3, "2-4"}, {8, "8-15"}, {3, "5-7"}});
}

// L3 = 2 cores = 4 PUs.  After 0-2, L3 #0 has one free PU: 4 PUs go to the
// next L3, 1 PU to #0, and 6 PUs take a package.
TEST(CpusetPool, SmallestCacheThatHolds)
{
    expect_takes("pack:2 l3:2 core:2 pu:2", {{3, "0-2"}, {4, "4-7"}, {1, "3"}, {6, "8-13"}});
}

// Six PUs free, three in each package: a 4-PU task fits no package, and a
// fragmented take takes nothing.
TEST(CpusetPool, FragmentedWhenNoPackageHolds)
{
    expect_takes(
        "pack:2 core:4 pu:2",
        {{5, "0-4"}, {5, "8-12"}, {4, "fragmented", 6}, {3, "5-7"}, {4, "none"}, {3, "13-15"}});
}

// Without --set-affinity (PMC_AFFINITY's ids only): where take() says
// fragmented, take_any() takes the first free PUs across packages.
TEST(CpusetPool, TakeAnyTakesTheFirstFreeWhenFragmented)
{
    Topo t("pack:2 core:4 pu:2");
    Pool p = make_pool(t);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(take(p.get(), 5), "0-4");
    EXPECT_EQ(take(p.get(), 5), "8-12");
    cpu_set_t out;
    ASSERT_EQ(cpuset_pool_take_any(p.get(), 2, &out), 0) << "a free core: the local way";
    EXPECT_EQ(list(out), "6-7");
    ASSERT_EQ(cpuset_pool_take_any(p.get(), 2, &out), 0);
    EXPECT_EQ(list(out), "14-15");
    EXPECT_EQ(take(p.get(), 2), "fragmented") << "5 and 13 free, one in each package";
    ASSERT_EQ(cpuset_pool_take_any(p.get(), 2, &out), 0);
    EXPECT_EQ(list(out), "5,13");
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 0u);
    errno = 0;
    EXPECT_EQ(cpuset_pool_take_any(p.get(), 1, &out), -1);
    EXPECT_EQ(errno, EBUSY);
    EXPECT_EQ(CPU_COUNT(&out), 0);
}

// --host-cpus above the PUs: ids 0 .. n-1 with no topology, each taken once.
TEST(CpusetPool, SlotsNumberZeroToNMinusOne)
{
    struct pmc_error err;
    Pool p(cpuset_pool_create_slots(8, &err));
    ASSERT_NE(p, nullptr) << err.text;
    EXPECT_EQ(cpuset_pool_size(p.get()), 8u);
    EXPECT_EQ(pool_list(p.get()), "0-7");
    EXPECT_EQ(take(p.get(), 1), "0");
    EXPECT_EQ(take(p.get(), 2), "1-2");
    EXPECT_EQ(take(p.get(), 4), "3-6");
    EXPECT_EQ(take(p.get(), 2), "none");
    cpu_set_t back;
    CPU_ZERO(&back);
    CPU_SET(1, &back);
    CPU_SET(2, &back);
    cpuset_pool_give(p.get(), &back);
    EXPECT_EQ(take(p.get(), 3), "1-2,7");
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 0u);
    EXPECT_EQ(cpuset_pool_create_slots(0, &err), nullptr);
    EXPECT_EQ(cpuset_pool_create_slots(CPU_SETSIZE + 1, &err), nullptr);
    EXPECT_EQ(errno, EINVAL);
}

TEST(CpusetPool, NotEnoughFreeAndZero)
{
    expect_takes("pack:1 core:2 pu:2",
                 {{5, "none"}, {0, "error " + std::to_string(EINVAL)}, {4, "0-3"}, {1, "none"}});
}

// Larger than a package: may span packages (not fragmentation).
TEST(CpusetPool, LargerThanAPackageSpans)
{
    expect_takes("pack:2 core:4 pu:2", {{12, "0-11"}, {5, "none"}, {4, "12-15"}});
}

// Rank 1 of 3 owns PUs 6-10: 2 in package 0 and 3 in package 1.  A fresh
// pool may take more than its part of any package.
TEST(CpusetPool, RankShareAcrossPackages)
{
    expect_takes("pack:2 core:4 pu:2", {{3, "8-10"}, {2, "6-7"}}, 1, 3);
    expect_takes("pack:2 core:4 pu:2", {{4, "6-9"}}, 1, 3);
}

// NUMA nodes inside a package: the package is the domain, a task may span
// its NUMA nodes.
TEST(CpusetPool, NumaNodesInsideAPackage)
{
    expect_takes("pack:1 group:2 [numa] core:4 pu:2", {{5, "0-4"}, {5, "8-12"}, {4, "5-7,13"}});
}

// No package at all: the NUMA node hwloc adds over the machine is the domain.
TEST(CpusetPool, NoPackageInTopology)
{
    expect_takes("core:4 pu:2", {{3, "0-2"}, {5, "3-7"}});
}

TEST(CpusetPool, GiveReturnsOnlyTakenPoolPus)
{
    Topo t("pack:2 core:4 pu:2");
    Pool p = make_pool(t, 0, 2); // PUs 0-7
    EXPECT_EQ(take(p.get(), 4), "0-3");
    EXPECT_EQ(take(p.get(), 2), "4-5");
    cpu_set_t back = set_of({0, 1, 2, 3, 6, 9, 100}); // 6 free, 9 and 100 not ours
    cpuset_pool_give(p.get(), &back);
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 6u);
    cpuset_pool_give(p.get(), &back); // twice: no effect
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 6u);
    EXPECT_EQ(take(p.get(), 4), "0-3");
}

// A long deterministic sequence against a model: sets held are disjoint,
// inside the pool, and the free count always matches.
TEST(CpusetPool, TakeGiveSequenceKeepsAccounts)
{
    Topo t("pack:2 l3:2 core:2 pu:2");
    Pool p = make_pool(t, 0, 1);
    std::vector<cpu_set_t> held;
    unsigned seed = 12345, used = 0, frag = 0;
    for (int step = 0; step < 5000; step++) {
        seed = seed * 1103515245u + 12345u;
        unsigned r = (seed >> 16) & 0x7fff;
        if (!held.empty() && r % 3 == 0) {
            size_t i = r % held.size();
            cpuset_pool_give(p.get(), &held[i]);
            used -= static_cast<unsigned>(CPU_COUNT(&held[i]));
            held.erase(held.begin() + static_cast<long>(i));
        } else {
            unsigned n = 1 + r % 6;
            cpu_set_t out;
            int rc = cpuset_pool_take(p.get(), n, &out);
            if (rc == 0) {
                for (const cpu_set_t &h : held) {
                    cpu_set_t both;
                    CPU_AND(&both, &h, &out);
                    ASSERT_EQ(CPU_COUNT(&both), 0) << "step " << step << ": PU handed out twice";
                }
                held.push_back(out);
                used += n;
            } else if (rc == 1) {
                frag++;
                ASSERT_GE(16 - used, n);
            } else {
                ASSERT_LT(16 - used, n);
            }
        }
        ASSERT_EQ(cpuset_pool_nfree(p.get()), 16 - used) << "step " << step;
    }
    for (const cpu_set_t &h : held)
        cpuset_pool_give(p.get(), &h);
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 16u);
    EXPECT_GT(frag, 0u) << "the sequence should meet fragmentation";
}

// ---- minimality -------------------------------------------------------------

// The weight of the smallest object of the topology with n PUs or more.
int smallest_holding(hwloc_topology_t topo, unsigned n)
{
    int best = -1;
    for (int d = 0; d < hwloc_topology_get_depth(topo); d++)
        for (unsigned i = 0; i < hwloc_get_nbobjs_by_depth(topo, d); i++) {
            int w = hwloc_bitmap_weight(hwloc_get_obj_by_depth(topo, d, i)->cpuset);
            if (w >= static_cast<int>(n) && (best < 0 || w < best))
                best = w;
        }
    return best;
}

// On a fresh pool of the whole host, every n binds (never fragmented) and
// the smallest object covering the set is the smallest that has n PUs.
void expect_minimal_sets(hwloc_topology_t topo, const std::string &what)
{
    pmc_error err = {};
    Pool probe(cpuset_pool_create(topo, nullptr, 0, 1, &err));
    ASSERT_NE(probe, nullptr) << err.text;
    unsigned size = cpuset_pool_size(probe.get());
    ASSERT_GT(size, 0u);
    for (unsigned n = 1; n <= size; n++) {
        Pool p(cpuset_pool_create(topo, nullptr, 0, 1, &err));
        cpu_set_t out;
        ASSERT_EQ(cpuset_pool_take(p.get(), n, &out), 0) << what << " n=" << n;
        ASSERT_EQ(CPU_COUNT(&out), static_cast<int>(n));
        hwloc_bitmap_t bm = hwloc_bitmap_alloc();
        for (int c = 0; c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &out))
                hwloc_bitmap_set(bm, static_cast<unsigned>(c));
        hwloc_obj_t cover = hwloc_get_obj_covering_cpuset(topo, bm);
        ASSERT_NE(cover, nullptr);
        EXPECT_EQ(hwloc_bitmap_weight(cover->cpuset), smallest_holding(topo, n))
            << what << ": n=" << n << " got " << list(out) << " under "
            << hwloc_obj_type_string(cover->type);
        hwloc_bitmap_free(bm);
    }
}

TEST(CpusetPoolMinimal, SyntheticTopologies)
{
    for (const char *s : {"pack:2 core:4 pu:2", "pack:2 l3:2 core:2 pu:2", "pack:4 core:3 pu:1",
                          "pack:1 group:2 [numa] core:4 pu:2", "numa:2 pack:1 core:2 pu:2",
                          "core:6 pu:4", "pack:2 l3:3 l2:2 core:1 pu:2"}) {
        Topo t(s);
        expect_minimal_sets(t.get(), s);
    }
}

TEST(CpusetPoolMinimal, ThisMachine)
{
    Topo t;
    expect_minimal_sets(t.get(), "this machine");
}

// ---- this machine -------------------------------------------------------------

TEST(CpusetPoolHost, LoadsThisMachine)
{
    pmc_error err = {};
    Pool p(cpuset_pool_create(nullptr, nullptr, 0, 1, &err));
    ASSERT_NE(p, nullptr) << err.text;
    Topo t;
    int pus = hwloc_get_nbobjs_by_type(t.get(), HWLOC_OBJ_PU);
    EXPECT_EQ(cpuset_pool_size(p.get()), static_cast<unsigned>(pus));
    cpu_set_t all;
    cpuset_pool_all(p.get(), &all);
    EXPECT_EQ(CPU_COUNT(&all), pus);
    long online = sysconf(_SC_NPROCESSORS_CONF);
    for (int c = 0; c < CPU_SETSIZE; c++) {
        if (CPU_ISSET(c, &all)) {
            EXPECT_LT(c, online);
        }
    }
    std::vector<cpu_set_t> held(static_cast<size_t>(pus));
    for (auto &h : held)
        ASSERT_EQ(cpuset_pool_take(p.get(), 1, &h), 0);
    EXPECT_EQ(cpuset_pool_nfree(p.get()), 0u);
    EXPECT_EQ(take(p.get(), 1), "none");
    for (auto &h : held)
        cpuset_pool_give(p.get(), &h);
    EXPECT_EQ(cpuset_pool_nfree(p.get()), static_cast<unsigned>(pus));
}

// ---- affinity_reset_inherited ------------------------------------------------

pid_t my_tid()
{
    return static_cast<pid_t>(syscall(SYS_gettid));
}

int first_cpu(const cpu_set_t &s)
{
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &s))
            return c;
    return -1;
}

bool is_subset(const cpu_set_t &a, const cpu_set_t &b)
{
    cpu_set_t both;
    CPU_AND(&both, &a, &b);
    return CPU_EQUAL(&both, &a);
}

TEST(AffinityReset, KeepChangesNothing)
{
    cpu_set_t saved, one, now;
    ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
    CPU_ZERO(&one);
    CPU_SET(first_cpu(saved), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
    pmc_error err = {};
    EXPECT_EQ(affinity_reset_inherited(true, &err), 0) << err.text;
    ASSERT_EQ(sched_getaffinity(0, sizeof now, &now), 0);
    EXPECT_TRUE(CPU_EQUAL(&now, &one));
    ASSERT_EQ(sched_setaffinity(0, sizeof saved, &saved), 0);
}

// Both this thread and another one, each narrowed to one CPU, get every CPU
// they had before (and possibly more) back.
TEST(AffinityReset, WidensEveryThread)
{
    cpu_set_t saved, one;
    ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
    CPU_ZERO(&one);
    CPU_SET(first_cpu(saved), &one);

    std::atomic<pid_t> other_tid{0};
    std::atomic<bool> done{false};
    std::thread other([&] {
        sched_setaffinity(0, sizeof one, &one);
        other_tid = my_tid();
        while (!done)
            usleep(1000);
    });
    while (other_tid == 0)
        usleep(1000);
    ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);

    pmc_error err = {};
    int rc = affinity_reset_inherited(false, &err);
    cpu_set_t mine, theirs;
    sched_getaffinity(0, sizeof mine, &mine);
    sched_getaffinity(other_tid, sizeof theirs, &theirs);
    done = true;
    other.join();
    sched_setaffinity(0, sizeof saved, &saved);

    EXPECT_EQ(rc, 0) << err.text;
    EXPECT_TRUE(is_subset(saved, mine)) << list(mine) << " lacks some of " << list(saved);
    EXPECT_TRUE(is_subset(saved, theirs)) << "other thread: " << list(theirs);
}

TEST(AffinityReset, MemoryPolicyBackToDefault)
{
    unsigned long node0 = 1;
    if (set_mempolicy(MPOL_PREFERRED, &node0, sizeof node0 * 8) != 0)
        GTEST_SKIP() << "set_mempolicy not available here: " << strerror(errno);
    int mode = -1;
    ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, nullptr, 0), 0);
    ASSERT_EQ(mode, MPOL_PREFERRED);
    cpu_set_t saved;
    ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
    pmc_error err = {};
    EXPECT_EQ(affinity_reset_inherited(false, &err), 0) << err.text;
    sched_setaffinity(0, sizeof saved, &saved);
    ASSERT_EQ(get_mempolicy(&mode, nullptr, 0, nullptr, 0), 0);
    EXPECT_EQ(mode, MPOL_DEFAULT);
}

} // namespace
