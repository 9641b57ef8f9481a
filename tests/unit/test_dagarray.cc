// test_dagarray.cc - unit tests of task arrays: the DAG file grammar
// (io/dagfile.h with struct dagfile_options), every bad input with its
// file:line message, the refusal without the option, and the model's
// instance functions (io/dag.h): names, argv with %{INDEX}, parents and
// children of each edge kind, and cycles through arrays.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "io/dag.h"
#include "dag_holder.h"
#include "io/dagfile.h"

namespace
{

Dag parse(const std::string &text, bool arrays = true)
{
    dagfile_options o{};
    o.arrays = arrays;
    return parse_dag_text(text, "a.dag", &o);
}

std::string parse_error(const std::string &text)
{
    Dag r = parse(text);
    EXPECT_EQ(nullptr, r.d) << "parsed but should not: " << text;
    return r.error;
}

uint32_t array_id(const Dag &r, const char *name)
{
    uint32_t id = ~0u;
    EXPECT_EQ(0, dag_array_lookup(r.d, name, strlen(name), &id)) << name;
    return id;
}

std::string instance_name(const Dag &r, uint32_t a, uint32_t i)
{
    char buf[64];
    int n = dag_instance_name(r.d, a, i, buf, sizeof buf);
    EXPECT_GT(n, 0);
    return n > 0 ? std::string(buf, (size_t)n) : "<error>";
}

std::vector<std::string> instance_argv(const Dag &r, uint32_t a, uint32_t i)
{
    size_t need = dag_instance_argv(r.d, a, i, nullptr, 0);
    std::vector<char> buf(need);
    EXPECT_EQ(need, dag_instance_argv(r.d, a, i, buf.data(), buf.size()));
    std::vector<std::string> out;
    for (size_t at = 0; at < need; at += out.back().size() + 1)
        out.emplace_back(buf.data() + at);
    return out;
}

using Ranges = std::vector<dag_instance_range>;

Ranges children(const Dag &r, uint32_t a, uint32_t i)
{
    Ranges out(dag_instance_children(r.d, a, i, nullptr, 0));
    EXPECT_EQ(out.size(), dag_instance_children(r.d, a, i, out.data(), (uint32_t)out.size()));
    return out;
}

Ranges parents(const Dag &r, uint32_t a, uint32_t i)
{
    Ranges out(dag_instance_parents(r.d, a, i, nullptr, 0));
    EXPECT_EQ(out.size(), dag_instance_parents(r.d, a, i, out.data(), (uint32_t)out.size()));
    return out;
}

void expect_range(const dag_instance_range &r, dag_node_t node, uint32_t first, uint32_t last)
{
    EXPECT_EQ(node, r.node);
    EXPECT_EQ(first, r.first);
    EXPECT_EQ(last, r.last);
}

// ---- grammar and model --------------------------------------------------

TEST(DagArray, DeclarationKeepsOneRecordAndTheTemplate)
{
    Dag r = parse("TASK sim[0-99999999] -c 2 -p 5 ./sim.sh --seed %{INDEX} out.%{INDEX}\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(0u, r->ntasks);
    ASSERT_EQ(1u, r->narrays);
    EXPECT_EQ(100000000u, r->ninstances);
    uint32_t a = array_id(r, "sim");
    EXPECT_EQ(100000000u, dag_array_count(r.d, a));
    EXPECT_STREQ("sim", dag_array_name(r.d, a));
    EXPECT_EQ(2u, r->arrays[a].cpus);
    EXPECT_EQ(5, r->arrays[a].priority);
    EXPECT_EQ(1u, r->arrays[a].line);
    EXPECT_EQ("sim[0]", instance_name(r, a, 0));
    EXPECT_EQ("sim[99999999]", instance_name(r, a, 99999999));
    std::vector<std::string> want = {"./sim.sh", "--seed", "42", "out.42"};
    EXPECT_EQ(want, instance_argv(r, a, 42));
}

TEST(DagArray, InstanceIdsFollowThePlainTasks)
{
    Dag r = parse("TASK p /bin/true\nTASK a[5-7] /bin/true\nTASK q /bin/true\n"
                  "TASK b[100-101] /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ(2u, r->ntasks);
    uint32_t a = array_id(r, "a"), b = array_id(r, "b"), arr, idx;
    EXPECT_FALSE(dag_is_instance(r.d, 1));
    EXPECT_EQ(2u, dag_instance_id(r.d, a, 5));
    EXPECT_EQ(4u, dag_instance_id(r.d, a, 7));
    EXPECT_EQ(6u, dag_instance_id(r.d, b, 101));
    for (dag_task_t t = 2; t < 7; t++) {
        ASSERT_EQ(0, dag_instance_of(r.d, t, &arr, &idx)) << t;
        EXPECT_TRUE(dag_is_instance(r.d, t));
        EXPECT_EQ(t, dag_instance_id(r.d, arr, idx));
    }
    ASSERT_EQ(0, dag_instance_of(r.d, 5, &arr, &idx));
    EXPECT_EQ(b, arr);
    EXPECT_EQ(100u, idx);
    EXPECT_EQ(-1, dag_instance_of(r.d, 1, &arr, &idx));
    EXPECT_EQ(-1, dag_instance_of(r.d, 7, &arr, &idx));
    EXPECT_EQ(EINVAL, errno);
}

TEST(DagArray, LookupTaskFindsPlainTasksThenInstances)
{
    Dag r = parse("TASK job[3] /bin/true\nTASK a[5-7] /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    dag_task_t t;
    auto find = [&](const std::string &n) {
        return dag_lookup_task(r.d, n.data(), n.size(), &t) == 0 ? (int64_t)t : -1;
    };
    EXPECT_EQ(0, find("job[3]"));
    EXPECT_EQ((int64_t)dag_instance_id(r.d, 0, 6), find("a[6]"));
    for (const char *bad : {"a[4]", "a[8]", "a[06]", "a[]", "a[x]", "b[5]", "a[5", "a"})
        EXPECT_EQ(-1, find(bad)) << bad;
}

TEST(DagArray, InstanceNameIsSnprintfLike)
{
    Dag r = parse("TASK ab[7-12] /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    char buf[4];
    EXPECT_EQ(6, dag_instance_name(r.d, 0, 12, buf, sizeof buf)); // "ab[12]" does not fit
    EXPECT_EQ(-1, dag_instance_name(r.d, 0, 6, buf, sizeof buf));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(-1, dag_instance_name(r.d, 0, 13, buf, sizeof buf));
    EXPECT_EQ(0u, dag_instance_argv(r.d, 0, 13, nullptr, 0));
}

TEST(DagArray, IndexTokenEscapesAndQuoting)
{
    Dag r = parse("TASK a[3-4] /bin/echo '%{INDEX} x' %%{INDEX} %%%{INDEX} 100% %{INDEX}%{INDEX} "
                  "%{index} %{INDEX\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    std::vector<std::string> want = {"/bin/echo", "4 x", "%{INDEX}", "%%{INDEX}",
                                     "100%",      "44",  "%{index}", "%{INDEX"};
    EXPECT_EQ(want, instance_argv(r, 0, 4));
    EXPECT_EQ(nullptr, dag_index_token("%%{INDEX} %%%{INDEX}"));
    const char *s = "x%%{INDEX}%{INDEX}";
    EXPECT_EQ(s + 10, dag_index_token(s));
}

TEST(DagArray, ArgvBufferTooSmallWritesNothing)
{
    Dag r = parse("TASK a[0-1000] /bin/echo %{INDEX}\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    char buf[16];
    memset(buf, 'z', sizeof buf);
    size_t need = dag_instance_argv(r.d, 0, 1000, buf, 5);
    EXPECT_EQ(sizeof "/bin/echo" + sizeof "1000", need);
    EXPECT_EQ('z', buf[0]);
    ASSERT_EQ(need, dag_instance_argv(r.d, 0, 1000, buf, need));
    EXPECT_EQ(0, memcmp(buf,
                        "/bin/echo\0"
                        "1000",
                        need));
}

TEST(DagArray, PlainTasksAreNotRewrittenAndKeepTheirLayout)
{
    Dag r = parse("TASK p /bin/echo %%{INDEX} 50%\nTASK q[3] /bin/true\nEDGE p q[3]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(0u, r->narrays);
    EXPECT_EQ(2u, r->ntasks);
    EXPECT_STREQ("%%{INDEX}", dag_task_arg(r.d, 0, 1));
    EXPECT_EQ(1u, r->nedges);
    EXPECT_EQ(1u, r->nparents[1]);
}

TEST(DagArray, OptionsAndForwardsApplyToTheArray)
{
    Dag r = parse("#@ 7 sim ID7\nTASK s[1-2] -m 100 -t 3 -g 1 --time-limit 2 -F a=b /x\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    const dag_array &a = r->arrays[0];
    EXPECT_EQ(100u, a.memory_mb);
    EXPECT_EQ(3u, a.tries);
    EXPECT_EQ(1u, a.gpus);
    EXPECT_EQ(2000u, a.time_limit_ms);
    EXPECT_STREQ("7", r->arena + a.pegasus_id);
    ASSERT_EQ(1u, a.nfwd);
    EXPECT_STREQ("a", r->arena + r->fwd[a.fwd_first].src);
}

TEST(DagArray, OneToOneAlignsFromEachFirstIndex)
{
    Dag r = parse("TASK a[10-19] /x\nTASK b[100-109] /y\nEDGE a[i] b[i]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    uint32_t a = array_id(r, "a"), b = array_id(r, "b");
    Ranges c = children(r, a, 13);
    ASSERT_EQ(1u, c.size());
    expect_range(c[0], DAG_NODE_ARRAY | b, 103, 103);
    Ranges p = parents(r, b, 109);
    ASSERT_EQ(1u, p.size());
    expect_range(p[0], DAG_NODE_ARRAY | a, 19, 19);
    EXPECT_EQ(1u, dag_instance_nparents(r.d, b, 100));
    EXPECT_EQ(0u, dag_instance_nparents(r.d, a, 10));
    EXPECT_TRUE(children(r, b, 100).empty());
}

TEST(DagArray, KToOneIsTheMapReduceShape)
{
    Dag r = parse("TASK map[0-11] /m\nTASK red[1-3] /r\nEDGE map[i] red[i/4]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    uint32_t m = array_id(r, "map"), d = array_id(r, "red");
    ASSERT_EQ(1u, r->narray_edges);
    EXPECT_EQ((uint32_t)DAG_EDGE_K_TO_ONE, r->array_edges[0].kind);
    EXPECT_EQ(4u, r->array_edges[0].k);
    expect_range(children(r, m, 0)[0], DAG_NODE_ARRAY | d, 1, 1);
    expect_range(children(r, m, 7)[0], DAG_NODE_ARRAY | d, 2, 2);
    expect_range(children(r, m, 11)[0], DAG_NODE_ARRAY | d, 3, 3);
    expect_range(parents(r, d, 2)[0], DAG_NODE_ARRAY | m, 4, 7);
    EXPECT_EQ(4u, dag_instance_nparents(r.d, d, 3));
}

TEST(DagArray, DivideByOneIsOneToOne)
{
    Dag r = parse("TASK a[0-3] /x\nTASK b[0-3] /y\nEDGE a[i] b[i/1]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ((uint32_t)DAG_EDGE_ONE_TO_ONE, r->array_edges[0].kind);
}

TEST(DagArray, FanInFanOutAndBarrier)
{
    Dag r = parse("TASK start /s\nTASK a[0-4] /a\nTASK b[0-2] /b\nTASK end /e\n"
                  "EDGE start a[*]\nEDGE a[*] b[*]\nEDGE b[*] end\nEDGE start end\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    uint32_t a = array_id(r, "a"), b = array_id(r, "b");
    dag_task_t start = 0, end = 1;
    ASSERT_EQ(0, dag_lookup(r.d, "end", 3, &end));
    EXPECT_EQ(3u, r->narray_edges);
    EXPECT_EQ(1u, r->nedges); // start -> end, plain
    EXPECT_EQ(1u, dag_instance_nparents(r.d, a, 2));
    EXPECT_EQ(5u, dag_instance_nparents(r.d, b, 0));
    EXPECT_EQ(3u, dag_task_array_nparents(r.d, end));
    EXPECT_EQ(1u, r->nparents[end]);
    EXPECT_EQ(0u, dag_task_array_nparents(r.d, start));
    expect_range(parents(r, a, 3)[0], start, 0, 0);
    expect_range(children(r, a, 3)[0], DAG_NODE_ARRAY | b, 0, 2);
    expect_range(parents(r, b, 1)[0], DAG_NODE_ARRAY | a, 0, 4);
    expect_range(children(r, b, 1)[0], end, 0, 0);
    uint32_t first;
    ASSERT_EQ(1u, dag_node_out_edges(r.d, start, &first));
    EXPECT_EQ((uint32_t)DAG_EDGE_FAN_OUT, r->array_edges[first].kind);
    EXPECT_EQ(5u, r->array_edges[first].line);
}

TEST(DagArray, DuplicateEdgesCountOnce)
{
    Dag r = parse("TASK a[0-3] /x\nTASK b[0-3] /y\nEDGE a[i] b[i]\nEDGE a[i] b[i]\n"
                  "EDGE a[*] b[*]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(2u, r->narray_edges);
    EXPECT_EQ(1u + 4u, dag_instance_nparents(r.d, 1, 0));
}

TEST(DagArray, PlainNamesWithBracketsStayPlain)
{
    Dag r =
        parse("TASK x[a-b] /x\nTASK y[-1] /y\nTASK z[i] /z\nEDGE x[a-b] z[i]\nEDGE y[-1] z[i]\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(3u, r->ntasks);
    EXPECT_EQ(2u, r->nedges);
}

TEST(DagArray, TheEngineRefusesArraysNamingTheLine)
{
    Dag r = parse("TASK a /x\nTASK sim[0-9] /y\n", false);
    EXPECT_EQ(nullptr, r.d);
    EXPECT_EQ("a.dag:2: task sim[0-9]: task arrays are not supported by this program", r.error);
    pmc_error err{};
    const char text[] = "TASK sim[0-9] /y\n";
    EXPECT_EQ(nullptr, dagfile_parse(text, sizeof text - 1, "e.dag", &err));
    EXPECT_STREQ("e.dag:1: task sim[0-9]: task arrays are not supported by this program",
                 err.text);
}

// ---- bad input ----------------------------------------------------------

struct Bad {
    std::string text, error;
};

TEST(DagArray, BadInputNamesFileAndLine)
{
    const std::vector<Bad> cases = {
        {"TASK a /x\nTASK s[5-4] /y\n",
         "a.dag:2: task s[5-4]: reversed array range (first > last)"},
        {"TASK s[] /y\n", "a.dag:1: task s[]: empty array range"},
        {"TASK [0-4] /y\n", "a.dag:1: task [0-4]: array with no name"},
        {"TASK s[0-1000000000] /y\n",
         "a.dag:1: task s[0-1000000000]: index 1000000000 past the maximum 999999999"},
        {"TASK s[0-99999999999999999999] /y\n",
         "a.dag:1: task s[0-99999999999999999999]: index 99999999999999999999 past the maximum "
         "999999999"},
        {"TASK s[00-4] /y\n",
         "a.dag:1: task s[00-4]: bad array range bound '00' (expected a decimal index)"},
        {"TASK s[1-x] /y\n",
         "a.dag:1: task s[1-x]: bad array range bound 'x' (expected a decimal index)"},
        {"TASK s[1-2-3] /y\n",
         "a.dag:1: task s[1-2-3]: bad array range bound '2-3' (expected a decimal index)"},
        {"TASK a]b[0-3] /y\n", "a.dag:1: task a]b[0-3]: ']' in an array name"},
        {"TASK s[0-599999999] /y\nTASK t[0-400000000] /y\n",
         "a.dag:2: task t[0-400000000]: more than 1000000000 instances in the DAG"},
        {"TASK a[0-3] /x\nTASK b[0-4] /y\nEDGE a[i] b[i]\n",
         "a.dag:3: EDGE a[i] b[i]: one-to-one needs equal ranges, but the array of line 1 has 4 "
         "instances and that of line 2 5"},
        {"TASK a[0-9] /x\nTASK b[0-2] /y\nEDGE a[i] b[i/3]\n",
         "a.dag:3: EDGE a[i] b[i/3]: K-to-one needs 3 x 3 instances in the parent (line 1), "
         "which has 10"},
        {"TASK p /bin/echo %{INDEX}\n",
         "a.dag:1: task p: %{INDEX} in a plain task (only an array task's arguments are "
         "rewritten; %%{INDEX} is a literal %{INDEX} there)"},
        {"TASK p /bin/echo 'x %{INDEX}'\n",
         "a.dag:1: task p: %{INDEX} in a plain task (only an array task's arguments are "
         "rewritten; %%{INDEX} is a literal %{INDEX} there)"},
        {"TASK s[0-3] -F %{INDEX}=out /bin/echo\n",
         "a.dag:1: task s[0-3]: %{INDEX} in an option (only an array task's arguments are "
         "rewritten; %%{INDEX} is a literal %{INDEX} there)"},
        {"TASK sim[0-9] /x\nTASK sim[3] /y\n",
         "a.dag:2: task sim[3] is named like an instance of the array sim of line 1"},
        {"TASK sim[3] /y\nTASK sim[0-9] /x\n",
         "a.dag:2: array sim: the task sim[3] of line 1 is named like one of its instances"},
        {"TASK sim[0-9] /x\nTASK sim[*] /y\n",
         "a.dag:2: task sim[*] is named like an instance of the array sim of line 1"},
        {"TASK sim[0-9] /x\nTASK sim /y\n", "a.dag:2: duplicate name sim: the array sim of line 1"},
        {"TASK sim /y\nTASK sim[0-9] /x\n", "a.dag:2: duplicate name sim: the task of line 1"},
        {"TASK sim[0-9] /x\nTASK sim[0-3] /y\n",
         "a.dag:2: duplicate name sim: the array sim of line 1"},
        {"TASK a[0-3] /x\nTASK t /y\nEDGE a[i] t\n",
         "a.dag:3: EDGE a[i] t: not an edge form (a[i] b[i], a[i] b[i/K], a[*] t, t b[*], a[*] "
         "b[*] for arrays a, b and a plain task t)"},
        {"TASK a[0-3] /x\nTASK b[0-3] /y\nEDGE a[*] b[i]\n",
         "a.dag:3: EDGE a[*] b[i]: not an edge form (a[i] b[i], a[i] b[i/K], a[*] t, t b[*], a[*] "
         "b[*] for arrays a, b and a plain task t)"},
        {"TASK a[0-7] /x\nTASK b[0-3] /y\nEDGE a[i/2] b[i]\n",
         "a.dag:3: EDGE a[i/2] b[i]: not an edge form (a[i] b[i], a[i] b[i/K], a[*] t, t b[*], "
         "a[*] b[*] for arrays a, b and a plain task t)"},
        {"TASK a[0-3] /x\nTASK b[0-3] /y\nEDGE a[j] b[i]\n",
         "a.dag:3: EDGE a[j]: bad instance selector (expected [i], [i/K] with K >= 1, or [*])"},
        {"TASK a[0-3] /x\nTASK b[0-3] /y\nEDGE a[i] b[i/0]\n",
         "a.dag:3: EDGE b[i/0]: bad instance selector (expected [i], [i/K] with K >= 1, or [*])"},
        {"TASK a[0-3] /x\nEDGE a[i] a[i]\n", "a.dag:2: EDGE from array a to itself"},
        {"TASK a[0-3] /x\nEDGE a[*] b[*]\n", "a.dag:2: EDGE names unknown task b[*]"},
        {"TASK a[0-3] /x\nTASK t /y\nEDGE a[3] t\n",
         "a.dag:3: EDGE a[3]: bad instance selector (expected [i], [i/K] with K >= 1, or [*])"},
        {"TASK t /y\nEDGE c[*] t\nTASK c[0-1] /x\n", "a.dag:2: EDGE names unknown task c[*]"},
    };
    for (const Bad &c : cases)
        EXPECT_EQ(c.error, parse_error(c.text)) << c.text;
}

// ---- cycles -------------------------------------------------------------

TEST(DagArray, CycleThroughArraysIsFoundWithoutExpanding)
{
    // 2 x 5*10^8 instances: expanding them would not fit; the check is over records.
    std::string r1 = parse_error("TASK a[0-499999999] /x\nTASK b[0-499999999] /y\n"
                                 "EDGE a[i] b[i]\nEDGE b[*] a[*]\n");
    EXPECT_EQ("a.dag: cycle: a[*] -> b[*] -> a[*]", r1);
    EXPECT_EQ("a.dag: cycle: t -> a[*] -> u -> t",
              parse_error("TASK t /x\nTASK a[0-3] /y\nTASK u /z\n"
                          "EDGE t a[*]\nEDGE a[*] u\nEDGE u t\n"));
    EXPECT_EQ("a.dag: cycle: m[*] -> r[*] -> m[*]",
              parse_error("TASK m[0-7] /x\nTASK r[0-3] /y\nEDGE m[i] r[i/2]\nEDGE r[*] m[*]\n"));
}

TEST(DagArray, PlainCyclesAreStillReportedFirst)
{
    EXPECT_EQ("a.dag: cycle: p -> q -> p",
              parse_error("TASK a[0-3] /x\nTASK p /y\nTASK q /z\nEDGE a[*] p\nEDGE p q\n"
                          "EDGE q p\n"));
}

TEST(DagArray, AcyclicChainOfArraysAndTasks)
{
    Dag r = parse("TASK t /x\nTASK a[0-3] /y\nTASK b[0-3] /z\nTASK u /w\n"
                  "EDGE t a[*]\nEDGE a[i] b[i]\nEDGE b[*] u\nEDGE t u\n");
    ASSERT_NE(nullptr, r.d) << r.error;
}

// ---- the model API directly ----------------------------------------------

TEST(DagArray, ModelRefusesWhatDoesNotFit)
{
    dag *d = dag_create();
    ASSERT_NE(nullptr, d);
    const char *argv[] = {"/x"};
    size_t argv_len[] = {2};
    dag_task_spec s{};
    s.name = "a";
    s.name_len = 1;
    s.argv = argv;
    s.argv_len = argv_len;
    s.argc = 1;
    s.cpus = 1;
    uint32_t a, b, t;
    ASSERT_EQ(0, dag_add_array(d, &s, 0, 3, &a));
    s.name = "b";
    ASSERT_EQ(0, dag_add_array(d, &s, 0, 1, &b));
    s.name = "t";
    ASSERT_EQ(0, dag_add_task(d, &s, &t));
    s.name = "c[";
    s.name_len = 2;
    EXPECT_EQ(-1, dag_add_array(d, &s, 0, 1, &b));
    EXPECT_EQ(EINVAL, errno);
    s.name = "c";
    s.name_len = 1;
    EXPECT_EQ(-1, dag_add_array(d, &s, 2, 1, &b));
    EXPECT_EQ(-1, dag_add_array(d, &s, 0, DAG_ARRAY_MAX_INDEX + 1, &b));
    dag_node_t na = DAG_NODE_ARRAY | a, nb = DAG_NODE_ARRAY | b;
    EXPECT_EQ(-1, dag_add_array_edge(d, DAG_EDGE_ONE_TO_ONE, na, nb, 1, 1));
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ(-1, dag_add_array_edge(d, DAG_EDGE_K_TO_ONE, na, nb, 3, 1));
    EXPECT_EQ(-1, dag_add_array_edge(d, DAG_EDGE_FAN_IN, na, nb, 1, 1));
    EXPECT_EQ(-1, dag_add_array_edge(d, DAG_EDGE_FAN_OUT, na, t, 1, 1));
    EXPECT_EQ(-1, dag_add_array_edge(d, DAG_EDGE_BARRIER, na, na, 1, 1));
    EXPECT_EQ(0, dag_add_array_edge(d, DAG_EDGE_K_TO_ONE, na, nb, 2, 1));
    EXPECT_EQ(0, dag_add_array_edge(d, DAG_EDGE_FAN_IN, nb, t, 1, 1));
    pmc_error err{};
    ASSERT_EQ(0, dag_finish(d, &err)) << err.text;
    EXPECT_EQ(2u, dag_task_array_nparents(d, t));
    EXPECT_EQ(-1, dag_add_array(d, &s, 0, 1, &b));
    dag_destroy(d);
}

} // namespace
