// test_dagfile.cc - unit tests of the DAG file reader (io/dagfile.h): the
// grammar of COMPAT.md "DAG file", quoting, task options, every error message
// (file and line), files read by mmap, pipes refused, and the real
// workloads in ../shared/workloads checked against a naive reader.
#include <gtest/gtest.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dag_holder.h"
#include "io/dagfile.h"
#include "testutil.h"

namespace
{

using namespace testutil;

using Args = std::vector<std::string>;

Dag parse(const std::string &text, const char *name = "t.dag")
{
    return parse_dag_text(text, name);
}

// The error text of a DAG that must not parse.
// n -f options, V0=/f0 .. V(n-1)=/f(n-1), separated by spaces.
std::string pipes(int n)
{
    std::string s;
    for (int i = 0; i < n; i++)
        s += (i ? " -f V" : "-f V") + std::to_string(i) + "=/f" + std::to_string(i);
    return s;
}

std::string parse_error(const std::string &text)
{
    Dag r = parse(text);
    EXPECT_EQ(nullptr, r.d) << "parsed but should not: " << text;
    return r.error;
}

// A DAG text that must not parse, and the error it gives.
struct BadDag {
    std::string text, error;
};

void expect_parse_errors(const std::vector<BadDag> &cases)
{
    for (const BadDag &c : cases)
        EXPECT_EQ(c.error, parse_error(c.text)) << c.text;
}

dag_task_t id_of(const Dag &r, const std::string &name)
{
    dag_task_t id = ~0u;
    EXPECT_EQ(0, dag_lookup(r.d, name.data(), name.size(), &id)) << name;
    return id;
}

Args args_of(const Dag &r, dag_task_t t)
{
    Args a;
    for (uint32_t i = 0; i < r->argc[t]; i++)
        a.push_back(dag_task_arg(r.d, t, i));
    return a;
}

// argv of the single task of "TASK A <command>".
Args split(const std::string &command)
{
    Dag r = parse("TASK A " + command + "\n");
    EXPECT_NE(nullptr, r.d) << command << ": " << r.error;
    if (!r.d)
        return {"<error>"};
    return args_of(r, 0);
}

std::set<std::pair<std::string, std::string>> edges_of(const Dag &r)
{
    std::set<std::pair<std::string, std::string>> out;
    for (dag_task_t t = 0; t < r->ntasks; t++)
        for (uint32_t k = r->child_first[t]; k < r->child_first[t + 1]; k++)
            out.insert({dag_task_name(r.d, t), dag_task_name(r.d, r->children[k])});
    return out;
}

Dag load(const std::string &path)
{
    pmc_error err{};
    Dag r(dagfile_load(path.c_str(), &err));
    if (!r.d)
        r.error = err.text;
    return r;
}

// ---- grammar ------------------------------------------------------------

TEST(DagFile, DiamondFromTheManual)
{
    Dag r = parse("# diamond.dag\n"
                  "TASK A /bin/echo \"I am A\"\n"
                  "TASK B /bin/echo \"I am B\"\n"
                  "TASK C /bin/echo \"I am C\"\n"
                  "TASK D /bin/echo \"I am D\"\n"
                  "\n"
                  "EDGE A B\n"
                  "EDGE A C\n"
                  "EDGE B D\n"
                  "EDGE C D\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(4u, r->ntasks);
    EXPECT_EQ(4u, r->nedges);
    EXPECT_EQ((Args{"/bin/echo", "I am C"}), args_of(r, id_of(r, "C")));
    using E = std::set<std::pair<std::string, std::string>>;
    EXPECT_EQ((E{{"A", "B"}, {"A", "C"}, {"B", "D"}, {"C", "D"}}), edges_of(r));
    EXPECT_EQ(2u, r->nparents[id_of(r, "D")]);
    EXPECT_EQ(0u, r->nparents[id_of(r, "A")]);
    EXPECT_EQ(2u, r->line[id_of(r, "A")]);
    EXPECT_EQ(5u, r->line[id_of(r, "D")]);
}

TEST(DagFile, DefaultsWithoutOptions)
{
    Dag r = parse("TASK A /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(1u, r->cpus[0]);
    EXPECT_EQ(0u, r->memory_mb[0]);
    EXPECT_EQ(0u, r->tries[0]);
    EXPECT_EQ(0, r->priority[0]);
    EXPECT_EQ(0u, r->nfwd[0]);
    EXPECT_EQ(DAG_NO_STRING, r->pegasus_id[0]);
}

TEST(DagFile, KeywordMustBeAWholeWord)
{
    expect_parse_errors({
        {"TASKX A /bin/true\n", "t.dag:1: unknown record TASKX"},
        {"TASK A /bin/true\nEDGES A A\n", "t.dag:2: unknown record EDGES"},
        {"task A /bin/true\n", "t.dag:1: unknown record task"},
        {"TAS A /bin/true\n", "t.dag:1: unknown record TAS"},
        {"foo\n", "t.dag:1: unknown record foo"},
    });
}

TEST(DagFile, WhiteSpaceTrimmedAndTabsSeparate)
{
    Dag ok = parse("   TASK\tA \t -c 2\t/bin/echo\t x \t \n  TASK B /bin/true\n\t EDGE  A\tB  \n");
    ASSERT_NE(nullptr, ok.d) << ok.error;
    EXPECT_EQ((Args{"/bin/echo", "x"}), args_of(ok, 0));
    EXPECT_EQ(2u, ok->cpus[0]);
    EXPECT_EQ(1u, ok->nedges);
}

TEST(DagFile, BlankAndCommentLinesIgnoredButCounted)
{
    std::string text = "# a comment\n"
                       "\n"
                       "   \t  \n"
                       "   # an indented comment TASK X\n"
                       "#TASK Y /bin/true\n"
                       "TASK A /bin/true\n"
                       "TASK A /bin/true\n";
    EXPECT_EQ("t.dag:7: duplicate task A", parse_error(text));
}

TEST(DagFile, CrLfLineEndings)
{
    Dag r = parse("TASK A /bin/echo x\r\nTASK B /bin/echo \"y z\"\r\n\r\nEDGE A B\r\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ((Args{"/bin/echo", "x"}), args_of(r, 0));
    EXPECT_EQ((Args{"/bin/echo", "y z"}), args_of(r, 1));
    EXPECT_EQ(1u, r->nedges);
}

TEST(DagFile, LastLineWithoutNewline)
{
    Dag r = parse("TASK A /bin/true\nTASK B /bin/echo end");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ((Args{"/bin/echo", "end"}), args_of(r, 1));
}

TEST(DagFile, NamesAreSplitOnWhiteSpaceOnly)
{
    Dag r = parse("TASK a\"b /bin/true\nTASK c'd /bin/true\nEDGE a\"b c'd\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_STREQ("a\"b", dag_task_name(r.d, 0));
    EXPECT_STREQ("c'd", dag_task_name(r.d, 1));
    EXPECT_EQ(1u, r->nedges);
}

TEST(DagFile, DuplicateEdgesMerged)
{
    Dag r = parse("TASK A /bin/true\nTASK B /bin/true\nTASK C /bin/true\n"
                  "EDGE A B\nEDGE A B\nEDGE B C\nEDGE A B\nEDGE A C\nEDGE B C\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(3u, r->nedges);
    EXPECT_EQ(1u, r->nparents[id_of(r, "B")]);
    EXPECT_EQ(2u, r->nparents[id_of(r, "C")]);
}

// ---- #@ pegasus ids -------------------------------------------------------

std::string pegasus_id(const Dag &r, const std::string &task)
{
    return r->arena + r->pegasus_id[id_of(r, task)];
}

TEST(DagFile, PegasusIdGoesToTheNextTask)
{
    Dag r = parse("#@ 7 transformation ID0000007\n"
                  "TASK A /bin/true\n"
                  "TASK B /bin/true\n"
                  "#@ 12 t d\n"
                  "# a comment in between\n"
                  "\n"
                  "EDGE A B\n"
                  "TASK C /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ("7", pegasus_id(r, "A"));
    EXPECT_EQ(DAG_NO_STRING, r->pegasus_id[id_of(r, "B")]);
    EXPECT_EQ("12", pegasus_id(r, "C"));
}

TEST(DagFile, LaterPegasusIdWins)
{
    Dag r = parse("#@ 1 a b\n#@ 2 c d\nTASK A /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ("2", pegasus_id(r, "A"));
}

TEST(DagFile, PegasusIdWithOnlyN)
{
    Dag r = parse("  #@\t99  \nTASK A /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ("99", pegasus_id(r, "A"));
}

TEST(DagFile, MalformedPegasusLinesAreComments)
{
    Dag r = parse("#@\n#@5 x y\n#@@ 6 x y\nTASK A /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(DAG_NO_STRING, r->pegasus_id[0]);
}

TEST(DagFile, DanglingPegasusIdIsIgnored)
{
    Dag r = parse("TASK A /bin/true\n#@ 3 x y\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(DAG_NO_STRING, r->pegasus_id[0]);
}

// ---- options ----------------------------------------------------------------

struct OptCase {
    std::string options;
    uint32_t memory, cpus, tries;
    int32_t priority;
};

TEST(DagFile, OptionFormsAndRounding)
{
    const OptCase cases[] = {
        {"-m 10", 10, 1, 0, 0},
        {"--request-memory 10", 10, 1, 0, 0},
        {"--request-memory=10", 10, 1, 0, 0},
        {"-m 1.2", 2, 1, 0, 0},
        {"-m 0", 0, 1, 0, 0},
        {"-m 0.0001", 1, 1, 0, 0},
        {"-m 1e3", 1000, 1, 0, 0},
        {"-c 2", 0, 2, 0, 0},
        {"--request-cpus 1.5", 0, 2, 0, 0},
        {"--request-cpus=0.1", 0, 1, 0, 0},
        {"-t 3", 0, 1, 3, 0},
        {"--tries 1", 0, 1, 1, 0},
        {"--tries=10", 0, 1, 10, 0},
        {"-p 5", 0, 1, 0, 5},
        {"-p -5", 0, 1, 0, -5},
        {"--priority=-7", 0, 1, 0, -7},
        {"--priority +8", 0, 1, 0, 8},
        {"-p 2147483647", 0, 1, 0, 2147483647},
        {"-p -2147483648", 0, 1, 0, INT32_MIN},
        {"-m 5 -c 3 -t 2 -p 9", 5, 3, 2, 9},
        {"-m 5 -m 6", 6, 1, 0, 0}, // the last one wins
        // plain digits take a short path; longer ones go to strtod/strtoll
        {"-p 007 -c 02", 0, 2, 0, 7},
        {"-m 000000000000000004", 4, 1, 0, 0},
        {"-t 0000000000000000003", 0, 1, 3, 0},
        {"-m 4294967295", 4294967295u, 1, 0, 0},
    };
    for (const OptCase &c : cases) {
        Dag r = parse("TASK A " + c.options + " /bin/true x\n");
        ASSERT_NE(nullptr, r.d) << c.options << ": " << r.error;
        EXPECT_EQ(c.memory, r->memory_mb[0]) << c.options;
        EXPECT_EQ(c.cpus, r->cpus[0]) << c.options;
        EXPECT_EQ(c.tries, r->tries[0]) << c.options;
        EXPECT_EQ(c.priority, r->priority[0]) << c.options;
        EXPECT_EQ((Args{"/bin/true", "x"}), args_of(r, 0)) << c.options;
    }
}

TEST(DagFile, OptionsEndAtTheExecutable)
{
    Dag r = parse("TASK A -c 2 /bin/prog -m 5 -c 3 --tries=9 -x\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(2u, r->cpus[0]);
    EXPECT_EQ(0u, r->memory_mb[0]);
    EXPECT_EQ((Args{"/bin/prog", "-m", "5", "-c", "3", "--tries=9", "-x"}), args_of(r, 0));
}

TEST(DagFile, Forwards)
{
    Dag r = parse("TASK A -f FOO=/tmp/foo -F out.dat=/tmp/all.dat --pipe-forward BAR=/x=y "
                  "--file-forward=\"a b=c d\" /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ(4u, r->nfwd[0]);
    const dag_forward *f = r->fwd + r->fwd_first[0];
    struct {
        uint32_t kind;
        const char *src, *dest;
    } want[] = {{DAG_FORWARD_PIPE, "FOO", "/tmp/foo"},
                {DAG_FORWARD_FILE, "out.dat", "/tmp/all.dat"},
                {DAG_FORWARD_PIPE, "BAR", "/x=y"},
                {DAG_FORWARD_FILE, "a b", "c d"}};
    for (int i = 0; i < 4; i++) {
        EXPECT_EQ(want[i].kind, f[i].kind) << i;
        EXPECT_STREQ(want[i].src, r->arena + f[i].src) << i;
        EXPECT_STREQ(want[i].dest, r->arena + f[i].dest) << i;
    }
}

TEST(DagFile, ForwardsOfSeveralTasksStayApart)
{
    Dag r = parse("TASK A -f X=/a /bin/true\nTASK B /bin/true\nTASK C -F s=/d -F t=/e /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(1u, r->nfwd[0]);
    EXPECT_EQ(0u, r->nfwd[1]);
    ASSERT_EQ(2u, r->nfwd[2]);
    EXPECT_STREQ("/a", r->arena + r->fwd[r->fwd_first[0]].dest);
    EXPECT_STREQ("t", r->arena + r->fwd[r->fwd_first[2] + 1].src);
}

struct BadOpt {
    std::string options, message;
};

TEST(DagFile, BadOptionValues)
{
    const std::string m = "for -m/--request-memory (expected a number of MB from 0 to 4294967295)";
    const std::string c =
        "for -c/--request-cpus (expected a number of CPUs > 0, at most 4294967295)";
    const std::string t = "for -t/--tries (expected an integer from 1 to 65535)";
    const std::string p = "for -p/--priority (expected an integer from -2147483648 to 2147483647)";
    const std::string f =
        "for -f/--pipe-forward (expected VAR=FILE, each VAR once, at most 64 a task)";
    const std::string F = "for -F/--file-forward (expected SRC=DEST, each SRC once)";
    const BadOpt cases[] = {
        {"-m abc", "bad value 'abc' " + m},
        {"-m -1", "bad value '-1' " + m},
        {"-m 5MB", "bad value '5MB' " + m},
        {"-m nan", "bad value 'nan' " + m},
        {"-m inf", "bad value 'inf' " + m},
        {"-m 0x10", "bad value '0x10' " + m},
        {"-m 1e400", "bad value '1e400' " + m},
        {"-m 5000000000", "bad value '5000000000' " + m},
        {"-m 999999999999999999", "bad value '999999999999999999' " + m},
        {"-c 000", "bad value '000' " + c},
        {"--request-memory=", "bad value '' " + m},
        {"-m ''", "bad value '' " + m},
        {"-c 0", "bad value '0' " + c},
        {"-c -1", "bad value '-1' " + c},
        {"-c two", "bad value 'two' " + c},
        // above the range: the message states the upper limit
        {"-c 99999999999", "bad value '99999999999' " + c},
        {"-c 4294967296", "bad value '4294967296' " + c},
        {"-g 65537", "bad value '65537' for -g/--request-gpus (expected a whole number of GPUs "
                     "from 0 to 65536)"},
        {"--time-limit 1e300", "bad value '1e300' for --time-limit (expected a number of seconds "
                               "> 0, at most 4294967.295 (49.7 days))"},
        {"--time-limit 4294968", "bad value '4294968' for --time-limit (expected a number of "
                                 "seconds > 0, at most 4294967.295 (49.7 days))"},
        {"-t 0", "bad value '0' " + t},
        {"-t -2", "bad value '-2' " + t},
        {"-t 1.5", "bad value '1.5' " + t},
        {"--tries=x", "bad value 'x' " + t},
        {"-t 2147483648", "bad value '2147483648' " + t},
        // the master counts attempts in 16 bits: 65537 tries retried for ever
        {"-t 65536", "bad value '65536' " + t},
        {"-p 1.5", "bad value '1.5' " + p},
        {"-p 2147483648", "bad value '2147483648' " + p},
        {"-p -2147483649", "bad value '-2147483649' " + p},
        {"-p 99999999999999999999", "bad value '99999999999999999999' " + p},
        {"-p 1-2", "bad value '1-2' " + p},
        {"-f FOO", "bad value 'FOO' " + f},
        {"-f =/tmp/x", "bad value '=/tmp/x' " + f},
        {"-f FOO=", "bad value 'FOO=' " + f},
        {"-F src", "bad value 'src' " + F},
        {"--file-forward==", "bad value '=' " + F},
        // the first forward reads and deletes the file: a second one of the
        // same source would fail the task, or leave the first pipe empty
        {"-F s=d1 -F s=d2", "bad value 's=d2' " + F},
        {"-f V=a -f V=b", "bad value 'V=b' " + f},
        {pipes(65), "bad value 'V64=/f64' " + f},
    };
    for (const BadOpt &b : cases) {
        EXPECT_EQ("t.dag:1: task A: " + b.message,
                  parse_error("TASK A " + b.options + " /bin/true\n"))
            << b.options;
    }
}

TEST(DagFile, MissingOptionValue)
{
    expect_parse_errors({
        {"TASK A -m\n", "t.dag:1: task A: -m/--request-memory needs a value"},
        {"TASK A -c 1 --file-forward\n", "t.dag:1: task A: -F/--file-forward needs a value"},
        // The value is taken from the next word even if it looks like the program.
        {"TASK A -t /bin/true\n", "t.dag:1: task A: bad value '/bin/true' for -t/--tries (expected "
                                  "an integer from 1 to 65535)"},
    });
}

TEST(DagFile, UnknownOptions)
{
    expect_parse_errors({
        {"TASK A -x /bin/true\n", "t.dag:1: task A: unknown option -x"},
        {"TASK A --memory 5 /bin/t\n", "t.dag:1: task A: unknown option --memory"},
        {"TASK A -t3 /bin/true\n", "t.dag:1: task A: unknown option -t3"},
        {"TASK A -m=3 /bin/true\n", "t.dag:1: task A: unknown option -m=3"},
        {"TASK A --triesx=3 /bin/true\n", "t.dag:1: task A: unknown option --triesx=3"},
        {"TASK A -- /bin/true\n", "t.dag:1: task A: unknown option --"},
        {"TASK A - /bin/true\n", "t.dag:1: task A: unknown option -"},
    });
}

// ---- word splitting -------------------------------------------------------

TEST(DagFile, Quoting)
{
    const std::pair<std::string, Args> cases[] = {
        {"/bin/echo \"a b\"", {"/bin/echo", "a b"}},
        {"/bin/echo 'a b'", {"/bin/echo", "a b"}},
        {"/bin/echo a\"b c\"d", {"/bin/echo", "ab cd"}},
        {"/bin/echo 'x'\"y\"z", {"/bin/echo", "xyz"}},
        {"/bin/echo \"it's\"", {"/bin/echo", "it's"}},
        {"/bin/echo 'say \"hi\"'", {"/bin/echo", "say \"hi\""}},
        {"/bin/echo a\\ b", {"/bin/echo", "a b"}},
        {"/bin/echo \\\"", {"/bin/echo", "\""}},
        {"/bin/echo \"a\\\"b\"", {"/bin/echo", "a\"b"}},
        {"/bin/echo 'a\\'b'", {"/bin/echo", "a'b"}},
        {"/bin/echo a\\\\b", {"/bin/echo", "a\\b"}},
        {"/bin/echo a\\", {"/bin/echo", "a\\"}},
        {"/bin/echo \"\"", {"/bin/echo", ""}},
        {"/bin/echo '' x ''", {"/bin/echo", "", "x", ""}},
        {"/bin/echo 'a < b || c > d'", {"/bin/echo", "a < b || c > d"}},
        {"/bin/echo $HOME `x` ;", {"/bin/echo", "$HOME", "`x`", ";"}},
        {"/bin/echo   many     spaces  ", {"/bin/echo", "many", "spaces"}},
        {"/bin/echo \"tab\there\"", {"/bin/echo", "tab\there"}},
        {"/bin/echo \"  kept  \"", {"/bin/echo", "  kept  "}},
        {"\"/bin/my prog\" x", {"/bin/my prog", "x"}},
        {"/bin/echo #not-a-comment", {"/bin/echo", "#not-a-comment"}},
    };
    for (const auto &c : cases)
        EXPECT_EQ(c.second, split(c.first)) << c.first;
}

TEST(DagFile, QuotedOptionWordsAreOptions)
{
    Dag r = parse("TASK A \"-c\" '3' /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ(3u, r->cpus[0]);
}

TEST(DagFile, UnterminatedQuote)
{
    expect_parse_errors({
        {"TASK A /bin/echo \"abc\n", "t.dag:1: unterminated \" quote"},
        {"TASK A /bin/true\nTASK B /bin/echo 'it\n", "t.dag:2: unterminated ' quote"},
        {"TASK A /bin/echo \"abc\\\"\n", "t.dag:1: unterminated \" quote"},
        {"TASK A /bin/echo x 'y\\'\n", "t.dag:1: unterminated ' quote"},
    });
}

TEST(DagFile, LongLinesAndManyArguments)
{
    std::string big(3 << 20, 'x');
    std::string line = "TASK A /bin/echo \"" + big + "\"";
    const int nargs = 100000;
    for (int i = 0; i < nargs; i++)
        line += " a" + std::to_string(i);
    ASSERT_LE(line.size(), DAGFILE_MAX_LINE);
    Dag r = parse(line + "\nTASK B /bin/echo short\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ((uint32_t)nargs + 2, r->argc[0]);
    EXPECT_EQ(big, dag_task_arg(r.d, 0, 1));
    EXPECT_STREQ("a99999", dag_task_arg(r.d, 0, nargs + 1));
    EXPECT_EQ((Args{"/bin/echo", "short"}), args_of(r, 1));
}

// A line is at most DAGFILE_MAX_LINE (8 MiB) bytes, its newline not
// counted: one byte more is an error naming the file, the line and its
// length, whatever the line holds (a comment too), in a small buffer and
// in one large enough for the scanning thread (>= 4 MB).
TEST(DagFile, LineLongerThanTheLimitIsAnError)
{
    const size_t max = DAGFILE_MAX_LINE;
    EXPECT_EQ(max, (size_t)8 << 20);
    std::string ok = "TASK A /bin/echo " + std::string(max - 17, 'x');
    ASSERT_EQ(max, ok.size());
    Dag r = parse(ok + "\n");
    EXPECT_NE(nullptr, r.d) << "a line of exactly 8 MiB: " << r.error;
    std::string msg = "t.dag:2: line of 8388609 bytes, longer than the limit of 8388608 bytes "
                      "(8 MiB)";
    EXPECT_EQ(msg, parse_error("TASK A /bin/true\n" + ok + "y\n"));
    EXPECT_EQ(msg, parse_error("TASK A /bin/true\n#" + std::string(max, ' ') + "\nEDGE\n"));
    EXPECT_EQ(msg, parse_error("TASK A /bin/true\n" + ok + "y")) << "last line, no newline";
    std::string large;
    for (int i = 0; large.size() < (5u << 20); i++)
        large += "TASK t" + std::to_string(i) + " /bin/true\n";
    size_t lines = (size_t)std::count(large.begin(), large.end(), '\n');
    EXPECT_EQ("t.dag:" + std::to_string(lines + 1) +
                  ": line of 8388609 bytes, longer than the limit of 8388608 bytes (8 MiB)",
              parse_error(large + ok + "y\nTASK z /bin/true\n"));
}

// -F files need no descriptor in the task: any number of them, beside the
// most -f pipes a task may have (DAG_MAX_PIPES, 64; one more is refused in
// DagFile.BadOptionValues).
TEST(DagFile, ManyForwardsOnOneLine)
{
    std::string line = "TASK A " + pipes(64);
    for (int i = 0; i < 1000; i++)
        line += " -F S" + std::to_string(i) + "=/f" + std::to_string(i);
    Dag r = parse(line + " /bin/true\n");
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ(1064u, r->nfwd[0]);
    EXPECT_STREQ("V63", r->arena + r->fwd[r->fwd_first[0] + 63].src);
    EXPECT_STREQ("S999", r->arena + r->fwd[r->fwd_first[0] + 1063].src);
}

// ---- errors -------------------------------------------------------------------

TEST(DagFile, RecordErrorsNameFileAndLine)
{
    const std::string AB = "TASK A /bin/true\nTASK B /bin/true\n";
    expect_parse_errors({
        {AB + "TASK A /bin/false\n", "t.dag:3: duplicate task A"},
        {AB + "EDGE A C\n", "t.dag:3: EDGE names unknown task C"},
        {AB + "EDGE C A\n", "t.dag:3: EDGE names unknown task C"},
        {"TASK A /bin/true\nEDGE A B\nTASK B /bin/true\n", "t.dag:2: EDGE names unknown task B"},
        {AB + "EDGE A\n", "t.dag:3: EDGE needs a parent and a child"},
        {AB + "EDGE\n", "t.dag:3: EDGE needs a parent and a child"},
        {AB + "EDGE A B B\n", "t.dag:3: EDGE needs a parent and a child"},
        {AB + "EDGE A A\n", "t.dag:3: EDGE from task A to itself"},
        {AB + "TASK C\n", "t.dag:3: TASK C has no executable"},
        {AB + "TASK C -m 5 -c 2\n", "t.dag:3: TASK C has no executable"},
        {AB + "TASK C \"\" x\n", "t.dag:3: TASK C has an empty executable"},
        {AB + "TASK\n", "t.dag:3: TASK with no name"},
        {AB + "  TASK  \t \n", "t.dag:3: TASK with no name"},
        {AB + "DONE A\n", "t.dag:3: unknown record DONE"},
        {AB + std::string("TASK C /bin/echo a\0b\n", 21), "t.dag:3: NUL character in line"},
    });
}

TEST(DagFile, EmptyDag)
{
    expect_parse_errors({
        {"", "t.dag: no tasks in DAG"},
        {"\n\n   \n", "t.dag: no tasks in DAG"},
        {"# only comments\n#@ 1 a b\n", "t.dag: no tasks in DAG"},
    });
}

TEST(DagFile, CycleIsReported)
{
    expect_parse_errors({
        {"TASK A /bin/true\nTASK B /bin/true\nEDGE A B\nEDGE B A\n", "t.dag: cycle: A -> B -> A"},
        {"TASK A /bin/true\nTASK B /bin/true\nTASK C /bin/true\n"
         "TASK D /bin/true\nEDGE A B\nEDGE B C\nEDGE C D\nEDGE D B\n",
         "t.dag: cycle: B -> C -> D -> B"},
    });
}

TEST(DagFile, ErrorUsesTheGivenFileName)
{
    pmc_error err{};
    const char text[] = "TASK A /bin/true\nbogus\n";
    EXPECT_EQ(nullptr, dagfile_parse(text, sizeof text - 1, "/some/where/wf.dag", &err));
    EXPECT_STREQ("/some/where/wf.dag:2: unknown record bogus", err.text);
    errno = 0;
    EXPECT_EQ(nullptr, dagfile_parse(text, sizeof text - 1, "x", nullptr));
    EXPECT_EQ(EINVAL, errno);
}

// ---- files ---------------------------------------------------------------------

TEST(DagFile, LoadRegularFile)
{
    TempDir dir("test_dagfile");
    std::string path = dir.file("wf.dag", "#@ 1 a b\r\nTASK A /bin/echo 'hi there'\r\n"
                                          "TASK B /bin/true\r\nEDGE A B");
    Dag r = load(path);
    ASSERT_NE(nullptr, r.d) << r.error;
    EXPECT_EQ((Args{"/bin/echo", "hi there"}), args_of(r, 0));
    EXPECT_EQ("1", pegasus_id(r, "A"));
    EXPECT_EQ(1u, r->nedges);
}

TEST(DagFile, LoadErrorsNameThePath)
{
    TempDir dir("test_dagfile");
    std::string missing = dir.path("missing.dag");
    EXPECT_EQ(missing + ": No such file or directory", load(missing).error);
    EXPECT_EQ(dir.dir() + ": Is a directory", load(dir.dir()).error);
    std::string empty = dir.file("empty.dag", "");
    EXPECT_EQ(empty + ": no tasks in DAG", load(empty).error);
    std::string bad = dir.file("bad.dag", "TASK A /bin/true\n\nTASK A /bin/true\n");
    EXPECT_EQ(bad + ":3: duplicate task A", load(bad).error);
    std::string cyc = dir.file("cyc.dag", "TASK A /bin/true\nTASK B /bin/true\n"
                                          "EDGE A B\nEDGE B A\n");
    EXPECT_EQ(cyc + ": cycle: A -> B -> A", load(cyc).error);
}

// A DAG that is not a regular file is refused, not read: a FIFO with no
// writer used to block the load for ever (and the DAG lock holds a writer
// open, so a FIFO with one never reached its end), /dev/zero grew memory
// without bound.  dagfile_check_regular() says the same without opening.
TEST(DagFile, NotARegularFileIsRefused)
{
    TempDir dir("test_dagfile");
    std::string fifo = dir.path("pipe.dag");
    ASSERT_EQ(0, mkfifo(fifo.c_str(), 0600));
    const std::string tail = ", not a regular file: write the DAG to a file first (a run locks "
                             "it, keeps its rescue log next to it and reads it again to restart)";
    Dag r = load(fifo); // no writer: returns at once (O_NONBLOCK)
    EXPECT_EQ(nullptr, r.d);
    EXPECT_EQ(fifo + ": a pipe or FIFO" + tail, r.error);
    EXPECT_EQ(EINVAL, errno);
    EXPECT_EQ("/dev/zero: a character device" + tail, load("/dev/zero").error);
    int p[2];
    ASSERT_EQ(0, pipe(p));
    std::string via = "/proc/self/fd/" + std::to_string(p[0]); // as <(gen) gives
    EXPECT_EQ(via + ": a pipe or FIFO" + tail, load(via).error);
    close(p[0]);
    close(p[1]);
    pmc_error err{};
    EXPECT_EQ(-1, dagfile_check_regular(fifo.c_str(), &err));
    EXPECT_EQ(fifo + ": a pipe or FIFO" + tail, err.text);
    EXPECT_EQ(-1, dagfile_check_regular("/dev/null", &err));
    EXPECT_EQ("/dev/null: a character device" + tail, err.text);
    std::string file = dir.file("wf.dag", "TASK A /bin/true\n");
    EXPECT_EQ(0, dagfile_check_regular(file.c_str(), &err));
    EXPECT_EQ(0, dagfile_check_regular(dir.path("missing").c_str(), &err)) << "open() says why";
    EXPECT_NE(nullptr, load(file).d);
}

// A file of several times the 4 MB step at which parsed pages are given back.
TEST(DagFile, LoadLargeFile)
{
    TempDir dir("test_dagfile");
    const int n = 400000;
    std::string text;
    text.reserve((size_t)n * 50);
    for (int i = 0; i < n; i++)
        text += "TASK task_" + std::to_string(i) + " -p " + std::to_string(i % 7) +
                " /bin/echo \"arg " + std::to_string(i) + "\"\n";
    for (int i = 1; i < n; i++)
        text += "EDGE task_" + std::to_string(i / 2) + " task_" + std::to_string(i) + "\n";
    Dag r = load(dir.file("big.dag", text));
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ((uint32_t)n, r->ntasks);
    EXPECT_EQ((uint32_t)n - 1, r->nedges);
    for (int i = 0; i < n; i += 1009) {
        dag_task_t t = id_of(r, "task_" + std::to_string(i));
        EXPECT_EQ((Args{"/bin/echo", "arg " + std::to_string(i)}), args_of(r, t));
        EXPECT_EQ(i % 7, r->priority[t]);
        EXPECT_EQ(i ? 1u : 0u, r->nparents[t]);
        EXPECT_EQ((uint32_t)i + 1, r->line[t]);
    }
}

// Buffers of 4 MB and more are scanned by a second thread ahead of the
// parser (where the process may run on two CPUs, as on the CI machines):
// lines it hands over must keep their numbers, comments, blank lines,
// pegasus ids and a last line without a newline.
TEST(DagFile, LargeBufferLinesAndIdsThroughTheScanner)
{
    const int n = 150000; // ~9 MB
    std::string text;
    for (int i = 0; i < n; i++) {
        text += "# task " + std::to_string(i) + "\n\n#@ " + std::to_string(i + 1) + "\n";
        text += "TASK t" + std::to_string(i) + " -c 1 /bin/true " + std::string(20, 'x') + "\n";
    }
    text += "EDGE t0 t1"; // no newline
    ASSERT_GE(text.size(), (size_t)4 << 20);
    Dag r = parse(text);
    ASSERT_NE(nullptr, r.d) << r.error;
    ASSERT_EQ((uint32_t)n, r->ntasks);
    EXPECT_EQ(1u, r->nedges);
    for (int i = 0; i < n; i += 997) {
        dag_task_t t = id_of(r, "t" + std::to_string(i));
        EXPECT_EQ((uint32_t)(4 * i + 4), r->line[t]);
        EXPECT_EQ(std::to_string(i + 1), pegasus_id(r, "t" + std::to_string(i)));
    }
    EXPECT_EQ(1u, r->nparents[id_of(r, "t1")]);
}

// A bad line early in a large buffer, while the scanner is far ahead and
// waits for room, and one on its last line: each error names its line, and
// the parse returns (the scanner stopped and joined).
TEST(DagFile, LargeBufferErrorsNameTheirLine)
{
    const int n = 200000; // ~8 MB
    std::string head, tail;
    for (int i = 0; i < n; i++)
        (i < 100 ? head : tail) += "TASK t" + std::to_string(i) + " /bin/true abcdefghij\n";
    std::string early = head + "TASK t0 /bin/true\n" + tail;
    EXPECT_EQ("t.dag:101: duplicate task t0", parse_error(early));
    std::string late = head + tail + "EDGE t1 nowhere\n";
    EXPECT_EQ("t.dag:" + std::to_string(n + 1) + ": EDGE names unknown task nowhere",
              parse_error(late));
}

// ---- the real workloads ------------------------------------------------------

// Where ../shared/workloads is, relative to the repository root.
std::string workloads_dir()
{
    if (const char *env = getenv("PMC_WORKLOADS"))
        return env;
    std::string file = __FILE__; // .../tests/unit/test_dagfile.cc
    std::string root = file.substr(0, file.rfind('/')) + "/../..";
    return root + "/../shared/workloads";
}

// What a naive reader finds in a workload file (its lines are simple: no
// quotes, options as "-c N -m N -p N" pairs).
struct Naive {
    struct Task {
        std::string name, pegasus_id;
        uint32_t cpus = 1, memory = 0;
        int32_t priority = 0;
        Args args;
    };
    std::vector<Task> tasks;
    std::set<std::pair<std::string, std::string>> edges;
};

Naive read_naive(const std::string &path)
{
    Naive n;
    std::ifstream in(path);
    std::string line, pending;
    while (std::getline(in, line)) {
        std::istringstream ws(line);
        std::vector<std::string> w;
        for (std::string s; ws >> s;)
            w.push_back(s);
        if (w.size() >= 2 && w[0] == "#@")
            pending = w[1];
        if (w.empty() || w[0] != "TASK") {
            if (w.size() == 3 && w[0] == "EDGE")
                n.edges.insert({w[1], w[2]});
            continue;
        }
        Naive::Task t;
        t.name = w[1];
        t.pegasus_id = pending;
        pending.clear();
        size_t i = 2;
        for (; i + 1 < w.size() && w[i][0] == '-'; i += 2) {
            double v = std::stod(w[i + 1]);
            if (w[i] == "-c")
                t.cpus = (uint32_t)std::ceil(v);
            else if (w[i] == "-m")
                t.memory = (uint32_t)std::ceil(v);
            else if (w[i] == "-p")
                t.priority = (int32_t)v;
        }
        t.args.assign(w.begin() + (long)i, w.end());
        n.tasks.push_back(t);
    }
    return n;
}

TEST(DagFile, RealWorkloads)
{
    std::string dir = workloads_dir();
    struct stat st;
    if (stat(dir.c_str(), &st) != 0)
        GTEST_SKIP() << dir << " is absent";
    const char *files[] = {
        "1000genome-8ch-100k.dag", "cycles-1l-1c-9p.dag",  "epigenomics-ilmn-4seq-50k.dag",
        "montage-2mass-05d.dag",   "seismology-1000p.dag", "soykb-10fastq-10ch.dag",
        "srasearch-10a.dag"};
    for (const char *f : files) {
        std::string path = dir + "/" + f;
        Naive want = read_naive(path);
        ASSERT_GT(want.tasks.size(), 0u) << path;
        Dag r = load(path);
        ASSERT_NE(nullptr, r.d) << r.error;
        EXPECT_EQ(want.tasks.size(), r->ntasks) << f;
        EXPECT_EQ(want.edges.size(), r->nedges) << f;
        EXPECT_EQ(want.edges, edges_of(r)) << f;
        for (dag_task_t t = 0; t < r->ntasks && t < want.tasks.size(); t++) {
            const Naive::Task &w = want.tasks[t];
            ASSERT_EQ(w.name, dag_task_name(r.d, t)) << f;
            EXPECT_EQ(w.pegasus_id, std::string(r->arena + r->pegasus_id[t])) << w.name;
            EXPECT_EQ(w.cpus, r->cpus[t]) << w.name;
            EXPECT_EQ(w.memory, r->memory_mb[t]) << w.name;
            EXPECT_EQ(w.priority, r->priority[t]) << w.name;
            EXPECT_EQ(w.args, args_of(r, t)) << w.name;
        }
    }
}

} // namespace
