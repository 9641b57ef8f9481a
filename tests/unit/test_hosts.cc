// test_hosts.cc - PMC's rank roles over the host rule (sched/hosts.h):
// which rank is the master, which rank is each host's agent, which ranks
// wait idle, for the launch shapes users have (one rank, one rank per node,
// PMC's one rank per core, mixed hosts) and for --ranks-are-hosts; and the
// leader table built from the ranks' host names.
#include <gtest/gtest.h>

#include <cerrno>
#include <string>
#include <utility>
#include <vector>

#include "sched/hosts.h"

namespace
{

struct PlanCase {
    const char *name;
    std::vector<int> leader; // lowest rank of each rank's host
    bool ranks_are_hosts, master_only;
    std::string roles; // per rank: M master, A agent, B both, . idle
    int nhosts, crowded, max_per_host;
};

char role_char(uint8_t r)
{
    if (r == (RANK_MASTER | RANK_AGENT))
        return 'B';
    return r == RANK_MASTER ? 'M' : r == RANK_AGENT ? 'A' : '.';
}

class HostPlanTest : public ::testing::TestWithParam<PlanCase>
{
};

TEST_P(HostPlanTest, RolesFollowTheHostRule)
{
    const PlanCase &c = GetParam();
    host_plan p;
    ASSERT_EQ(
        host_plan_make(c.leader.data(), (int)c.leader.size(), c.ranks_are_hosts, c.master_only, &p),
        0);
    std::string got;
    int agents = 0, idle = 0;
    for (int r = 0; r < p.nranks; r++) {
        got += role_char(p.role[r]);
        agents += (p.role[r] & RANK_AGENT) != 0;
        idle += p.role[r] == RANK_IDLE;
    }
    EXPECT_EQ(got, c.roles);
    EXPECT_EQ(p.nagents, agents);
    EXPECT_EQ(p.idle_ranks, idle);
    EXPECT_EQ(p.nhosts, c.nhosts);
    EXPECT_EQ(p.crowded_hosts, c.crowded);
    EXPECT_EQ(p.max_ranks_per_host, c.max_per_host);
    host_plan_free(&p);
    EXPECT_EQ(p.role, nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, HostPlanTest,
    ::testing::ValuesIn(std::vector<PlanCase>{
        // no mpiexec: rank 0 does everything
        {"OneRank", {0}, false, false, "B", 1, 0, 1},
        // PMC's shape: mpiexec -n 2 on one host runs tasks on rank 1
        {"TwoRanksOneHost", {0, 0}, false, false, "MA", 1, 1, 2},
        {"FourRanksOneHost", {0, 0, 0, 0}, false, false, "MA..", 1, 1, 4},
        // --master-only changes nothing when rank 0 shares its host
        {"FourRanksOneHostMasterOnly", {0, 0, 0, 0}, false, true, "MA..", 1, 1, 4},
        // one rank per node: rank 0 is master and agent of its node
        {"OnePerNode", {0, 1, 2}, false, false, "BAA", 3, 0, 1},
        {"OnePerNodeMasterOnly", {0, 1, 2}, false, true, "MAA", 3, 0, 1},
        // one rank per core on two hosts of 3 cores (block placement)
        {"PerCoreTwoHosts", {0, 0, 0, 3, 3, 3}, false, false, "MA.A..", 2, 2, 3},
        // round-robin placement over two hosts: host of 0 is {0,2,4}
        {"RoundRobinTwoHosts", {0, 1, 0, 1, 0}, false, false, "MAA..", 2, 2, 3},
        // rank 0 alone, the other host crowded
        {"MixedHosts", {0, 1, 1, 1}, false, false, "BA..", 2, 1, 3},
        // --ranks-are-hosts: every rank is a host of its own
        {"RanksAreHosts", {0, 0, 0, 0}, true, false, "BAAA", 4, 0, 1},
        {"RanksAreHostsMasterOnly", {0, 0, 0}, true, true, "MAA", 3, 0, 1},
        // --master-only on one rank leaves nobody to run tasks
        {"OneRankMasterOnly", {0}, false, true, "M", 1, 0, 1},
    }),
    [](const ::testing::TestParamInfo<PlanCase> &p) { return std::string(p.param.name); });

TEST(HostPlan, NoAgentWhenMasterOnlyAlone)
{
    int leader[] = {0};
    host_plan p;
    ASSERT_EQ(host_plan_make(leader, 1, false, true, &p), 0);
    EXPECT_EQ(p.nagents, 0);
    host_plan_free(&p);
}

TEST(HostPlan, RejectsBadLeaderTables)
{
    const std::vector<std::vector<int>> bad = {
        {1, 1},    // rank 0's leader above it
        {0, 2, 2}, // rank 1's leader above it
        {0, -1},   // negative
        {0, 0, 1}, // rank 2 led by rank 1, which is led by 0
    };
    for (const auto &l : bad) {
        host_plan p;
        errno = 0;
        EXPECT_EQ(host_plan_make(l.data(), (int)l.size(), false, false, &p), -1);
        EXPECT_EQ(errno, EINVAL);
        EXPECT_EQ(p.role, nullptr);
    }
    host_plan p;
    EXPECT_EQ(host_plan_make(nullptr, 0, false, false, &p), -1);
}

// names: one host name per rank, packed at stride bytes (NUL-padded, a
// name of exactly stride bytes unterminated) as transport_place() gathers them
std::vector<int> leaders_of(const std::vector<std::string> &names, size_t stride)
{
    std::vector<char> table(names.size() * stride, '\0');
    for (size_t r = 0; r < names.size(); r++)
        names[r].copy(&table[r * stride], stride);
    std::vector<int> leader(names.size(), -7);
    EXPECT_EQ(hosts_leaders_by_name(table.data(), stride, (int)names.size(), leader.data()), 0);
    return leader;
}

TEST(HostLeaders, LowestRankOfEachNameLeadsIt)
{
    // hosts interleaved, as a round-robin launch places ranks
    EXPECT_EQ(leaders_of({"n2", "n1", "n2", "n1", "n3", "n1"}, 8),
              (std::vector<int>{0, 1, 0, 1, 4, 1}));
    EXPECT_EQ(leaders_of({"a"}, 8), (std::vector<int>{0}));
    EXPECT_EQ(leaders_of({"a", "a", "a", "a"}, 8), (std::vector<int>{0, 0, 0, 0}));
    EXPECT_EQ(leaders_of({"c", "b", "a"}, 8), (std::vector<int>{0, 1, 2}));
    EXPECT_EQ(leaders_of({}, 8), (std::vector<int>{}));
    int leader = -7;
    errno = 0;
    EXPECT_EQ(hosts_leaders_by_name("a", 8, -1, &leader), -1);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_EQ(leader, -7);
}

TEST(HostLeaders, NamesCompareWholeNotByPrefix)
{
    EXPECT_EQ(leaders_of({"node1", "node10", "node1", "node", "node10"}, 16),
              (std::vector<int>{0, 1, 0, 3, 1}));
    // a name that fills its stride has no NUL: compared up to the stride only
    EXPECT_EQ(leaders_of({"abcd", "abcd", "abce"}, 4), (std::vector<int>{0, 0, 2}));
}

TEST(HostLeaders, TheTableIsWhatHostPlanTakes)
{
    auto leader = leaders_of({"x", "y", "x", "y", "x"}, 8);
    host_plan p;
    ASSERT_EQ(host_plan_make(leader.data(), (int)leader.size(), false, false, &p), 0);
    EXPECT_EQ(p.nhosts, 2);
    EXPECT_EQ(p.crowded_hosts, 2);
    EXPECT_EQ(p.max_ranks_per_host, 3);
    // rank 0 shares host x: master only, rank 2 is x's agent, rank 1 y's
    std::string roles;
    for (int r = 0; r < p.nranks; r++)
        roles += role_char(p.role[r]);
    EXPECT_EQ(roles, "MAA..");
    host_plan_free(&p);
}

TEST(HostLeaders, RankOnHostCountsTheRanksOfItsLeader)
{
    // hosts x = {0, 2, 4}, y = {1, 3}
    std::vector<int> leader{0, 1, 0, 1, 0};
    std::vector<std::pair<int, int>> want{{0, 3}, {0, 2}, {1, 3}, {1, 2}, {2, 3}};
    for (int r = 0; r < (int)leader.size(); r++) {
        int host_rank = -1, host_ranks = -1;
        hosts_rank_on_host(leader.data(), (int)leader.size(), r, &host_rank, &host_ranks);
        EXPECT_EQ(std::make_pair(host_rank, host_ranks), want[r]) << "rank " << r;
    }
}

// host_local_peers(): which peers of a rank share its host, as a string
// (1 local peer, . not), and whether all of its peers do.
struct LocalPeers {
    std::string local;
    bool all_local;
    int n;
};

LocalPeers local_peers(const std::vector<int> &leader, bool ranks_are_hosts, int rank)
{
    host_plan p;
    EXPECT_EQ(host_plan_make(leader.data(), (int)leader.size(), ranks_are_hosts, false, &p), 0);
    std::vector<unsigned char> local(leader.size(), 7);
    bool all = false;
    int n = host_local_peers(&p, leader.data(), rank, local.data(), &all);
    host_plan_free(&p);
    std::string s;
    for (unsigned char c : local)
        s += c ? '1' : '.';
    return {s, all, n};
}

TEST(HostLocalPeers, PmcShapeOneHost)
{
    // 4 ranks on one host: master 0, agent 1, ranks 2 and 3 idle
    std::vector<int> one_host{0, 0, 0, 0};
    LocalPeers m = local_peers(one_host, false, 0), a = local_peers(one_host, false, 1);
    EXPECT_EQ(m.local, ".1..");
    EXPECT_TRUE(m.all_local);
    EXPECT_EQ(m.n, 1);
    EXPECT_EQ(a.local, "1...");
    EXPECT_TRUE(a.all_local);
    // an idle rank has no peers
    LocalPeers idle = local_peers(one_host, false, 2);
    EXPECT_EQ(idle.local, "....");
    EXPECT_FALSE(idle.all_local);
    EXPECT_EQ(idle.n, 0);
}

TEST(HostLocalPeers, RanksAreHostsOnOneMachine)
{
    // every rank an agent, rank 0 the master too: the master's peers are
    // all the others, each agent's is the master
    std::vector<int> one_host{0, 0, 0};
    LocalPeers m = local_peers(one_host, true, 0);
    EXPECT_EQ(m.local, ".11");
    EXPECT_TRUE(m.all_local);
    EXPECT_EQ(local_peers(one_host, true, 2).local, "1..");
}

TEST(HostLocalPeers, MixedHostsRingOnlyTheLocalOnes)
{
    // hosts x = {0, 2}, y = {1, 3}: master 0, agents 2 (x) and 1 (y)
    std::vector<int> leader{0, 1, 0, 1};
    LocalPeers m = local_peers(leader, false, 0);
    EXPECT_EQ(m.local, "..1.");
    EXPECT_FALSE(m.all_local) << "rank 1 on host y sends to the master without a ring";
    LocalPeers x = local_peers(leader, false, 2);
    EXPECT_EQ(x.local, "1...");
    EXPECT_TRUE(x.all_local) << "the master, its only peer, shares its host";
    LocalPeers y = local_peers(leader, false, 1);
    EXPECT_EQ(y.local, "....");
    EXPECT_FALSE(y.all_local);
    EXPECT_EQ(y.n, 0);
}

} // namespace
