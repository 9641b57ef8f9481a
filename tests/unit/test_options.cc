// test_options.cc - unit tests of engine/options.h (COMPAT.md "Command line").
//
// Every long and short option sets its field, in separate-value, attached
// (-t3) and --opt=value forms; defaults; the environment aliases
// PMC_HOST_CPUS/PMC_HOST_MEMORY/PMC_MAX_WALL_TIME/PMC_HOST_SCRIPT and the
// command line winning over them; fractional --max-wall-time; GNU argument
// permutation and "--".  Errors: unknown long/short option, missing value,
// bad numbers, missing DAGFILE, extra argument, each naming the culprit; and
// a parse after a failed one starts from a clean getopt state.
// --help: generated from the option table (options_table()), every long
// option of the table is in it (with its short letter as "-x, --name"),
// and it names no option the table lacks; and the environment aliases.
//
// Each parse gets a fresh argv (getopt_long permutes it); the environment
// aliases and POSIXLY_CORRECT are cleared before every test.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <getopt.h>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "engine/options.h"

namespace
{

const char *const kEnvVars[] = {"PMC_HOST_SCRIPT",   "PMC_HOST_MEMORY",     "PMC_HOST_CPUS",
                                "PMC_MAX_WALL_TIME", "PMC_RANKS_ARE_HOSTS", "POSIXLY_CORRECT"};

class OptionsTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        for (const char *v : kEnvVars)
            unsetenv(v);
        reset_getopt();
    }

    // Full getopt reset (glibc: optind = 0 reinitialises, including the
    // pointer into the previous argv), so that each test starts clean even
    // though options_parse's own reset is incomplete (see the
    // ParseDoesNotReadThePreviousArgv and ParseAfterErrorInsideCluster tests).
    static void reset_getopt()
    {
        static char prog[] = "reset";
        static char *argv[] = {prog, nullptr};
        static const struct option none[] = {{nullptr, 0, nullptr, 0}};
        opterr = 0;
        optind = 0;
        EXPECT_EQ(getopt_long(1, argv, ":", none, nullptr), -1);
    }
    void TearDown() override
    {
        for (const char *v : kEnvVars)
            unsetenv(v);
    }

    // Parse "pmc-hybrid args..." from a fresh argv array (getopt may permute
    // it).  The strings are kept for the life of the process, as a real
    // main()'s argv is: getopt remembers a pointer into the last argv it saw.
    // (ParseDoesNotReadThePreviousArgv checks that options_parse does not
    // depend on that.)
    int parse(const std::vector<const char *> &args)
    {
        static std::vector<std::unique_ptr<char[]>> arena;
        argv_.clear();
        argv_.push_back(keep(arena, "pmc-hybrid"));
        for (const char *a : args)
            argv_.push_back(keep(arena, a));
        int argc = static_cast<int>(argv_.size());
        argv_.push_back(nullptr);
        memset(&err_, 0, sizeof err_);
        memset(&o_, 0x5A, sizeof o_); // options_parse must set every field
        return options_parse(&o_, argc, argv_.data(), &err_);
    }

    static char *keep(std::vector<std::unique_ptr<char[]>> &arena, const char *s)
    {
        arena.emplace_back(new char[strlen(s) + 1]);
        return strcpy(arena.back().get(), s);
    }

    std::string err() const
    {
        return err_.text;
    }

    // The flags in one spelling each set their field (and --help and
    // --version only their own).
    void expect_flags(const char *skip_rescue, const char *nolock, const char *help,
                      const char *version)
    {
        ASSERT_EQ(parse({skip_rescue, nolock, "wf.dag"}), 0) << err();
        EXPECT_TRUE(o_.skip_rescue);
        EXPECT_TRUE(o_.nolock);
        ASSERT_EQ(parse({help}), 0) << err();
        EXPECT_TRUE(o_.help);
        EXPECT_FALSE(o_.version);
        ASSERT_EQ(parse({version}), 0) << err();
        EXPECT_TRUE(o_.version);
        EXPECT_FALSE(o_.help);
    }

    // The options that take a value, in the order of the tests' command
    // lines: -o, -e, -m, -t, -r, --host-script, --host-memory, --host-cpus,
    // --max-wall-time, --maxfds.
    struct Values {
        const char *out_path, *err_path;
        uint32_t max_failures, tries;
        const char *rescue_path, *host_script;
        uint64_t host_memory;
        uint32_t host_cpus;
        double max_wall_time;
        uint32_t maxfds;
    };
    void expect_values(const Values &v)
    {
        EXPECT_STREQ(o_.out_path, v.out_path);
        EXPECT_STREQ(o_.err_path, v.err_path);
        EXPECT_EQ(o_.max_failures, v.max_failures);
        EXPECT_EQ(o_.tries, v.tries);
        EXPECT_STREQ(o_.rescue_path, v.rescue_path);
        EXPECT_STREQ(o_.host_script, v.host_script);
        EXPECT_EQ(o_.host_memory, v.host_memory);
        EXPECT_EQ(o_.host_cpus, v.host_cpus);
        EXPECT_EQ(o_.max_wall_time, v.max_wall_time);
        EXPECT_EQ(o_.maxfds, v.maxfds);
    }

    // The environment aliases of --host-cpus, --host-memory, --max-wall-time
    // and --host-script.
    static void set_aliases(const char *cpus, const char *memory, const char *wall_time,
                            const char *script)
    {
        setenv("PMC_HOST_CPUS", cpus, 1);
        setenv("PMC_HOST_MEMORY", memory, 1);
        setenv("PMC_MAX_WALL_TIME", wall_time, 1);
        setenv("PMC_HOST_SCRIPT", script, 1);
    }

    // The fields those four set (script: NULL for none).
    void expect_host_settings(uint32_t cpus, uint64_t memory, double wall_time, const char *script)
    {
        EXPECT_EQ(o_.host_cpus, cpus);
        EXPECT_EQ(o_.host_memory, memory);
        EXPECT_EQ(o_.max_wall_time, wall_time);
        EXPECT_STREQ(o_.host_script, script);
    }

    // parse(args) fails, and its message names each of `words`.
    void expect_rejected(const std::vector<const char *> &args,
                         const std::vector<const char *> &words)
    {
        std::string command;
        for (const char *a : args)
            command += std::string(" ") + a;
        EXPECT_EQ(parse(args), -1) << "accepted:" << command;
        for (const char *w : words)
            EXPECT_NE(err().find(w), std::string::npos) << err();
    }

    struct options o_;
    struct pmc_error err_;
    std::vector<char *> argv_;
};

TEST_F(OptionsTest, Defaults)
{
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_STREQ(o_.dag_path, "wf.dag");
    EXPECT_EQ(o_.rescue_path, nullptr);
    EXPECT_EQ(o_.out_path, nullptr);
    EXPECT_EQ(o_.err_path, nullptr);
    EXPECT_EQ(o_.host_script, nullptr);
    EXPECT_EQ(o_.verbosity, 0);
    EXPECT_FALSE(o_.help);
    EXPECT_FALSE(o_.version);
    EXPECT_FALSE(o_.skip_rescue);
    EXPECT_FALSE(o_.nolock);
    EXPECT_EQ(o_.max_failures, 0u);
    EXPECT_EQ(o_.tries, 1u);
    EXPECT_EQ(o_.host_cpus, 0u);
    EXPECT_EQ(o_.host_memory, 0u);
    EXPECT_EQ(o_.max_wall_time, 0.0);
    EXPECT_EQ(o_.maxfds, 0u);
    EXPECT_FALSE(o_.strict_limits);
    EXPECT_FALSE(o_.per_task_stdio);
    EXPECT_FALSE(o_.jobstate_log);
    EXPECT_FALSE(o_.monitord_hack);
    EXPECT_FALSE(o_.no_resource_log);
    EXPECT_FALSE(o_.no_sleep_on_recv);
    EXPECT_FALSE(o_.keep_affinity);
    EXPECT_FALSE(o_.set_affinity);
    EXPECT_FALSE(o_.master_only);
    EXPECT_FALSE(o_.launch_threads_set) << "default: from the host's CPUs";
}

TEST_F(OptionsTest, LaunchThreads)
{
    ASSERT_EQ(parse({"--launch-threads", "3", "wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.launch_threads_set);
    EXPECT_EQ(o_.launch_threads, 3u);
    ASSERT_EQ(parse({"--launch-threads=0", "wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.launch_threads_set) << "0 is a choice: the agent thread starts the tasks";
    EXPECT_EQ(o_.launch_threads, 0u);
    expect_rejected({"--launch-threads", "65", "wf.dag"}, {"--launch-threads", "65", "0..64"});
    expect_rejected({"--launch-threads", "-1", "wf.dag"}, {"--launch-threads"});
    ASSERT_EQ(parse({"--threads", "5", "wf.dag"}), 0) << err(); // issue 10's name
    EXPECT_EQ(o_.launch_threads, 5u);
    expect_rejected({"--threads", "65", "wf.dag"}, {"--threads", "65", "0..64"});
}

TEST_F(OptionsTest, ShortFlags)
{
    expect_flags("-s", "-n", "-h", "-V");
}

TEST_F(OptionsTest, LongFlags)
{
    expect_flags("--skip-rescue", "--nolock", "--help", "--version");
}

TEST_F(OptionsTest, HelpAndVersionNeedNoDagfile)
{
    ASSERT_EQ(parse({"--help"}), 0) << err();
    EXPECT_EQ(o_.dag_path, nullptr);
    ASSERT_EQ(parse({"-V"}), 0) << err();
    EXPECT_EQ(o_.dag_path, nullptr);
}

TEST_F(OptionsTest, VerboseAndQuietCount)
{
    ASSERT_EQ(parse({"-v", "-v", "--verbose", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.verbosity, 3);
    ASSERT_EQ(parse({"-vvv", "-q", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.verbosity, 2);
    ASSERT_EQ(parse({"--quiet", "-qq", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.verbosity, -3);
}

TEST_F(OptionsTest, ShortOptionsWithValues)
{
    ASSERT_EQ(parse({"-o", "out.txt", "-e", "err.txt", "-m", "5", "-t", "3", "-r", "my.rescue",
                     "wf.dag"}),
              0)
        << err();
    EXPECT_STREQ(o_.out_path, "out.txt");
    EXPECT_STREQ(o_.err_path, "err.txt");
    EXPECT_EQ(o_.max_failures, 5u);
    EXPECT_EQ(o_.tries, 3u);
    EXPECT_STREQ(o_.rescue_path, "my.rescue");
    EXPECT_STREQ(o_.dag_path, "wf.dag");
}

TEST_F(OptionsTest, ShortOptionsWithAttachedValues)
{
    ASSERT_EQ(parse({"-oout.txt", "-eerr.txt", "-m7", "-t4", "-rr.log", "-vst2", "wf.dag"}), 0)
        << err();
    EXPECT_STREQ(o_.out_path, "out.txt");
    EXPECT_STREQ(o_.err_path, "err.txt");
    EXPECT_EQ(o_.max_failures, 7u);
    EXPECT_STREQ(o_.rescue_path, "r.log");
    EXPECT_EQ(o_.verbosity, 1);
    EXPECT_TRUE(o_.skip_rescue);
    EXPECT_EQ(o_.tries, 2u) << "-vst2: the last -t wins";
}

TEST_F(OptionsTest, LongOptionsWithValues)
{
    ASSERT_EQ(parse({"--stdout",        "out.txt",  "--stderr",      "err.txt",
                     "--max-failures",  "6",        "--tries",       "9",
                     "--rescue",        "x.rescue", "--host-script", "/opt/setup.sh",
                     "--host-memory",   "2048",     "--host-cpus",   "12",
                     "--max-wall-time", "90",       "--maxfds",      "64",
                     "wf.dag"}),
              0)
        << err();
    expect_values({"out.txt", "err.txt", 6, 9, "x.rescue", "/opt/setup.sh", 2048, 12, 90.0, 64});
    EXPECT_STREQ(o_.dag_path, "wf.dag");
}

TEST_F(OptionsTest, LongOptionsWithEqualsForm)
{
    ASSERT_EQ(parse({"--stdout=o.txt", "--stderr=e.txt", "--max-failures=2", "--tries=8",
                     "--rescue=r.txt", "--host-script=/h.sh", "--host-memory=4096", "--host-cpus=3",
                     "--max-wall-time=1.5", "--maxfds=10", "wf.dag"}),
              0)
        << err();
    expect_values({"o.txt", "e.txt", 2, 8, "r.txt", "/h.sh", 4096, 3, 1.5, 10});
}

TEST_F(OptionsTest, EachLongOnlyFlag)
{
    struct {
        const char *opt;
        bool options::*field;
    } flags[] = {
        {"--strict-limits", &options::strict_limits},
        {"--per-task-stdio", &options::per_task_stdio},
        {"--jobstate-log", &options::jobstate_log},
        {"--monitord-hack", &options::monitord_hack},
        {"--no-resource-log", &options::no_resource_log},
        {"--no-sleep-on-recv", &options::no_sleep_on_recv},
        {"--keep-affinity", &options::keep_affinity},
        {"--set-affinity", &options::set_affinity},
        {"--master-only", &options::master_only},
    };
    for (const auto &f : flags) {
        ASSERT_EQ(parse({f.opt, "wf.dag"}), 0) << f.opt << ": " << err();
        EXPECT_TRUE(o_.*(f.field)) << f.opt;
        // Only that flag (and, for --monitord-hack, --per-task-stdio) is set.
        for (const auto &g : flags) {
            if (g.field == f.field)
                continue;
            bool implied =
                f.field == &options::monitord_hack && g.field == &options::per_task_stdio;
            EXPECT_EQ(o_.*(g.field), implied) << f.opt << " also set " << g.opt;
        }
    }
}

TEST_F(OptionsTest, MonitordHackImpliesPerTaskStdio)
{
    ASSERT_EQ(parse({"--monitord-hack", "wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.monitord_hack);
    EXPECT_TRUE(o_.per_task_stdio);
}

TEST_F(OptionsTest, FractionalMaxWallTime)
{
    ASSERT_EQ(parse({"--max-wall-time", "0.05", "wf.dag"}), 0) << err();
    EXPECT_DOUBLE_EQ(o_.max_wall_time, 0.05);
    ASSERT_EQ(parse({"--max-wall-time=0", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.max_wall_time, 0.0);
}

TEST_F(OptionsTest, MaxFailuresZeroMeansUnlimited)
{
    ASSERT_EQ(parse({"-m", "0", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.max_failures, 0u);
}

TEST_F(OptionsTest, OptionsAfterDagfileArePermuted)
{
    ASSERT_EQ(parse({"wf.dag", "-t", "5", "--nolock"}), 0) << err();
    EXPECT_STREQ(o_.dag_path, "wf.dag");
    EXPECT_EQ(o_.tries, 5u);
    EXPECT_TRUE(o_.nolock);
}

TEST_F(OptionsTest, DoubleDashEndsOptions)
{
    ASSERT_EQ(parse({"-v", "--", "-odd.dag"}), 0) << err();
    EXPECT_STREQ(o_.dag_path, "-odd.dag");
    EXPECT_EQ(o_.verbosity, 1);
    EXPECT_EQ(o_.out_path, nullptr);
}

TEST_F(OptionsTest, ValuesMayStartWithDash)
{
    ASSERT_EQ(parse({"-o", "-", "--stderr", "-x", "wf.dag"}), 0) << err();
    EXPECT_STREQ(o_.out_path, "-");
    EXPECT_STREQ(o_.err_path, "-x");
}

TEST_F(OptionsTest, EnvironmentAliases)
{
    set_aliases("6", "1024", "0.5", "/env/script.sh");
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    expect_host_settings(6, 1024, 0.5, "/env/script.sh");
}

TEST_F(OptionsTest, CommandLineWinsOverEnvironment)
{
    set_aliases("6", "1024", "0.5", "/env/script.sh");
    ASSERT_EQ(parse({"--host-cpus", "2", "--host-memory=512", "--max-wall-time", "3",
                     "--host-script", "/cli/script.sh", "wf.dag"}),
              0)
        << err();
    expect_host_settings(2, 512, 3.0, "/cli/script.sh");
}

TEST_F(OptionsTest, EmptyEnvironmentValuesAreIgnored)
{
    set_aliases("", "", "", "");
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    expect_host_settings(0, 0, 0.0, nullptr);
}

TEST_F(OptionsTest, BadEnvironmentValueNamesTheVariable)
{
    setenv("PMC_HOST_CPUS", "many", 1);
    expect_rejected({"wf.dag"}, {"PMC_HOST_CPUS", "many"});
    setenv("PMC_HOST_CPUS", "2147483648", 1);
    expect_rejected({"wf.dag"}, {"PMC_HOST_CPUS", "up to 65536"});
    setenv("PMC_HOST_CPUS", "65536", 1);
    EXPECT_EQ(parse({"wf.dag"}), 0) << err();
    unsetenv("PMC_HOST_CPUS");
    setenv("PMC_HOST_GPUS", "5000", 1);
    expect_rejected({"wf.dag"}, {"PMC_HOST_GPUS", "up to 1024"});
    unsetenv("PMC_HOST_GPUS");
    unsetenv("PMC_HOST_CPUS");
    setenv("PMC_MAX_WALL_TIME", "-2", 1);
    expect_rejected({"wf.dag"}, {"PMC_MAX_WALL_TIME"});
    unsetenv("PMC_MAX_WALL_TIME");
    setenv("PMC_HOST_MEMORY", "-1", 1);
    expect_rejected({"wf.dag"}, {"PMC_HOST_MEMORY"});
}

// --- errors --------------------------------------------------------------

// A command line that must be rejected (named like the test it is) and the
// words its error message must contain.
struct Rejected {
    const char *name;
    std::vector<const char *> args;
    std::vector<const char *> words;
};

void PrintTo(const Rejected &r, std::ostream *os)
{
    *os << r.name;
}

class OptionsRejectTest : public OptionsTest, public ::testing::WithParamInterface<Rejected>
{
};

TEST_P(OptionsRejectTest, ErrorNamesTheCulprit)
{
    expect_rejected(GetParam().args, GetParam().words);
}

INSTANTIATE_TEST_SUITE_P(
    OptionsErrors, OptionsRejectTest,
    ::testing::ValuesIn(std::vector<Rejected>{
        {"UnknownLongOption", {"--bogus", "wf.dag"}, {"--bogus", "unknown option"}},
        {"UnknownShortOption", {"-x", "wf.dag"}, {"-x", "unknown option"}},
        {"UnknownShortOptionInsideCluster", {"-vZ", "wf.dag"}, {"-Z"}},
        {"MissingValueShort", {"wf.dag", "-t"}, {"-t", "needs a value"}},
        {"MissingValueLong", {"wf.dag", "--host-cpus"}, {"--host-cpus", "needs a value"}},
        {"TriesZero", {"-t", "0", "wf.dag"}, {"--tries", "'0'"}},
        {"HostCpusNegative", {"--host-cpus", "-2", "wf.dag"}, {"--host-cpus", "'-2'"}},
        // past 65536, a node's CPUs plus its window could wrap in 32 bits
        // (2^31 made a run that never started a task)
        {"HostCpusPastTheMost",
         {"--host-cpus", "65537", "wf.dag"},
         {"--host-cpus", "'65537'", "up to 65536"}},
        // a host keeps at most 1024 GPU ids (GPUS_MAX); more were dropped
        {"HostGpusPastTheMost",
         {"--host-gpus", "1025", "wf.dag"},
         {"--host-gpus", "'1025'", "up to 1024"}},
        // the master counts attempts in 16 bits: 65537 retried for ever
        {"TriesPastTheMost", {"-t", "65536", "wf.dag"}, {"--tries", "'65536'", "1 to 65535"}},
        // values past the top of their range: the message gives the top
        // (">= 0" alone read as if the value were too small)
        {"MaxFailuresPastTheMost",
         {"-m", "99999999999", "wf.dag"},
         {"-m/--max-failures", "'99999999999'", "from 0 to 4294967295"}},
        {"MaxfdsPastTheMost",
         {"--maxfds", "4294967296", "wf.dag"},
         {"--maxfds", "'4294967296'", "from 1 to 4294967295"}},
        {"HostMemoryPastTheMost",
         {"--host-memory", "18446744073709551616", "wf.dag"},
         {"--host-memory", "up to 18446744073709551615"}},
        {"SetAffinityWithHostCpus",
         {"--set-affinity", "--host-cpus", "4", "wf.dag"},
         {"--set-affinity", "--host-cpus"}},
        {"MaxWallTimeNegative", {"--max-wall-time", "-1", "wf.dag"}, {"--max-wall-time", "'-1'"}},
        {"ExtraArgument", {"wf.dag", "other.dag"}, {"other.dag"}},
        // an empty path was found out only when written, after every task
        // (--status ''), or opened as nothing (issue 45)
        {"EmptyStatus", {"--status", "", "wf.dag"}, {"--status", "''", "must name a file"}},
        {"EmptySummaryJson", {"--summary-json=", "wf.dag"}, {"--summary-json", "''"}},
        {"EmptyStdout", {"-o", "", "wf.dag"}, {"-o/--stdout", "''"}},
        {"EmptyStderr", {"--stderr", "", "wf.dag"}, {"-e/--stderr", "''"}},
        {"EmptyRescue", {"-r", "", "wf.dag"}, {"-r/--rescue", "''"}},
        {"EmptyHostScript", {"--host-script", "", "wf.dag"}, {"--host-script", "''"}},
        {"EmptyDagfile", {""}, {"DAGFILE", "''"}},
    }),
    [](const ::testing::TestParamInfo<Rejected> &p) { return std::string(p.param.name); });

// glibc reports "--flag=value" for a flag as '?' with optopt set to the
// option's val: the message must still name the long option as written, not
// a short letter ('n') or a raw byte (the long-only options' val is >= 256).
TEST_F(OptionsTest, FlagGivenAValueIsAnError)
{
    expect_rejected({"--nolock=yes", "wf.dag"}, {"--nolock"});
    expect_rejected({"--strict-limits=1", "wf.dag"}, {"--strict-limits"});
    for (char ch : err())
        EXPECT_TRUE(ch >= 0x20 && ch < 0x7f) << "control byte in: " << err();
}

TEST_F(OptionsTest, TriesNotANumber)
{
    expect_rejected({"-t", "abc", "wf.dag"}, {"-t/--tries", "'abc'"});
    expect_rejected({"--tries=3x", "wf.dag"}, {"'3x'"});
    expect_rejected({"--tries", "", "wf.dag"}, {"--tries"});
    EXPECT_EQ(parse({"--tries", "-1", "wf.dag"}), -1);
    EXPECT_EQ(parse({"--tries", "4294967296", "wf.dag"}), -1) << "2^32 does not fit";
}

// PMC: 0 CPUs or 0 MB of host memory means "detect" (the default).
TEST_F(OptionsTest, HostResourcesZeroMeansDetect)
{
    ASSERT_EQ(parse({"--host-cpus", "7", "--host-cpus", "0", "--host-memory", "0", "wf.dag"}), 0)
        << err();
    EXPECT_EQ(o_.host_cpus, 0u);
    EXPECT_EQ(o_.host_memory, 0u);
    setenv("PMC_HOST_CPUS", "0", 1);
    setenv("PMC_HOST_MEMORY", "0", 1);
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_EQ(o_.host_cpus, 0u);
    EXPECT_EQ(o_.host_memory, 0u);
    unsetenv("PMC_HOST_CPUS");
    unsetenv("PMC_HOST_MEMORY");
}

// --set-affinity binds tasks to the host's real PUs: a made-up CPU count
// cannot be bound, so PMC refuses the pair, from the environment too.
TEST_F(OptionsTest, SetAffinityRefusesHostCpusFromEnvironment)
{
    setenv("PMC_HOST_CPUS", "3", 1);
    expect_rejected({"--set-affinity", "wf.dag"}, {"--set-affinity", "PMC_HOST_CPUS"});
    unsetenv("PMC_HOST_CPUS");
    ASSERT_EQ(parse({"--set-affinity", "wf.dag"}), 0) << err();
}

TEST_F(OptionsTest, RanksAreHosts)
{
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_FALSE(o_.ranks_are_hosts);
    ASSERT_EQ(parse({"--ranks-are-hosts", "wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.ranks_are_hosts);
    setenv("PMC_RANKS_ARE_HOSTS", "1", 1);
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.ranks_are_hosts);
    setenv("PMC_RANKS_ARE_HOSTS", "0", 1);
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_FALSE(o_.ranks_are_hosts);
    unsetenv("PMC_RANKS_ARE_HOSTS");
}

TEST_F(OptionsTest, ProgressAndJsonOutputs)
{
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_EQ(o_.progress, -1) << "default: decided by whether stderr is a terminal";
    EXPECT_EQ(o_.status_path, nullptr);
    EXPECT_EQ(o_.summary_json_path, nullptr);
    ASSERT_EQ(parse({"--progress", "--status", "s.json", "--summary-json=o.json", "wf.dag"}), 0)
        << err();
    EXPECT_EQ(o_.progress, 1);
    EXPECT_STREQ(o_.status_path, "s.json");
    EXPECT_STREQ(o_.summary_json_path, "o.json");
    ASSERT_EQ(parse({"--progress", "--no-progress", "wf.dag"}), 0) << err();
    EXPECT_EQ(o_.progress, 0) << "the last one wins";
    expect_rejected({"wf.dag", "--status"}, {"--status", "needs a value"});
}

// --listen/--join (docs/join.md): the master's and the agent's options,
// each refused where it does not belong.
TEST_F(OptionsTest, JoinLinkOptions)
{
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_EQ(o_.listen_path, nullptr);
    EXPECT_EQ(o_.join_path, nullptr);
    EXPECT_EQ(o_.min_hosts, 0u) << "0: the default, 1";
    EXPECT_EQ(o_.node_timeout, 0.0) << "0: the join link's default";
    ASSERT_EQ(parse({"--listen", "acc", "--min-hosts", "3", "--node-timeout=2.5",
                     "--listen-address", "tcp://10.0.0.1:7000", "wf.dag"}),
              0)
        << err();
    EXPECT_STREQ(o_.listen_path, "acc");
    EXPECT_EQ(o_.min_hosts, 3u);
    EXPECT_EQ(o_.node_timeout, 2.5);
    EXPECT_STREQ(o_.listen_address, "tcp://10.0.0.1:7000");
    EXPECT_STREQ(o_.dag_path, "wf.dag");
    ASSERT_EQ(parse({"--join", "acc", "--host-cpus", "4", "--kill-grace", "1"}), 0) << err();
    EXPECT_STREQ(o_.join_path, "acc");
    EXPECT_EQ(o_.dag_path, nullptr) << "an agent learns the DAG from its master";
    EXPECT_EQ(o_.host_cpus, 4u);
    expect_rejected({"--join", "acc", "wf.dag"}, {"wf.dag", "--join", "no DAGFILE"});
    expect_rejected({"--join", "acc", "--listen", "b"}, {"--join", "--listen"});
    expect_rejected({"--join", "acc", "-o", "out"}, {"--join", "-o", "master's options"});
    expect_rejected({"--join", "acc", "--min-hosts", "2"}, {"--min-hosts"});
    expect_rejected({"--join", "acc", "--task-records", "failed"},
                    {"--join", "--task-records", "master's options"});
    expect_rejected({"--min-hosts", "2", "wf.dag"}, {"--min-hosts", "need --listen"});
    expect_rejected({"--listen", "a", "--min-hosts", "0", "wf.dag"}, {"--min-hosts"});
    expect_rejected({"--listen", "a", "--node-timeout", "0.05", "wf.dag"}, {"--node-timeout"});
    expect_rejected({"--listen", "", "wf.dag"}, {"--listen", "must name a file"});
    expect_rejected({"--listen", "a"}, {"DAGFILE"});
}

// The run's description a master gives its joined agents, and back.
TEST_F(OptionsTest, RunDescriptionRoundTrip)
{
    ASSERT_EQ(parse({"--listen", "acc", "--per-task-stdio", "wf.dag"}), 0) << err();
    char text[256];
    int n = options_describe_run(&o_, "/data/run/wf.dag", text, sizeof text);
    ASSERT_GT(n, 0);
    EXPECT_STREQ(text, "dag /data/run/wf.dag\nnull-executor 0\nper-task-stdio 1\n"
                       "task-records-failed 0\n");
    EXPECT_EQ(options_describe_run(&o_, "/data/run/wf.dag", text, 20), -1) << "does not fit";
    ASSERT_EQ(parse({"--join", "acc"}), 0) << err();
    char dag[64];
    n = options_describe_run(&o_, "/data/run/wf.dag", text, sizeof text);
    text[n - 2] = '1'; /* task-records-failed 1 */
    ASSERT_EQ(options_adopt_run(&o_, text, (size_t)n, dag, sizeof dag, &err_), 0) << err();
    EXPECT_STREQ(o_.dag_path, "/data/run/wf.dag");
    EXPECT_TRUE(o_.task_records_failed);
    EXPECT_FALSE(o_.per_task_stdio);
    EXPECT_FALSE(o_.null_executor);
    for (const char *bad :
         {"", "dag wf.dag\nnull-executor 0\nper-task-stdio 0\ntask-records-failed 0\n",
          "dag /a\nnull-executor 2\nper-task-stdio 0\ntask-records-failed 0\n",
          "dag /a\nnull-executor 0\nper-task-stdio 0\n",
          "dag /a\nnull-executor 0\nper-task-stdio 0\ntask-records-failed 0\nx"}) {
        EXPECT_EQ(options_adopt_run(&o_, bad, strlen(bad), dag, sizeof dag, &err_), -1) << bad;
        EXPECT_NE(err().find("master's description"), std::string::npos) << err();
    }
    std::string long_path = "dag /" + std::string(100, 'x') +
                            "\nnull-executor 0\nper-task-stdio 0\ntask-records-failed 0\n";
    EXPECT_EQ(options_adopt_run(&o_, long_path.data(), long_path.size(), dag, sizeof dag, &err_),
              -1)
        << "a path longer than the buffer";
}

// --task-records all|failed: default all; anything else is refused.
TEST_F(OptionsTest, TaskRecords)
{
    ASSERT_EQ(parse({"wf.dag"}), 0) << err();
    EXPECT_FALSE(o_.task_records_failed);
    ASSERT_EQ(parse({"--task-records", "failed", "wf.dag"}), 0) << err();
    EXPECT_TRUE(o_.task_records_failed);
    ASSERT_EQ(parse({"--task-records=all", "wf.dag"}), 0) << err();
    EXPECT_FALSE(o_.task_records_failed);
    expect_rejected({"--task-records", "none", "wf.dag"}, {"--task-records", "all or failed"});
    expect_rejected({"--task-records", "", "wf.dag"}, {"--task-records"});
}

TEST_F(OptionsTest, HostMemoryBad)
{
    expect_rejected({"--host-memory", "1.5", "wf.dag"}, {"--host-memory"});
}

// strtoull skips leading white space and then accepts a minus sign, negating
// the value: " -1" must not become 18446744073709551615 MB.
TEST_F(OptionsTest, HostMemoryNegativeWithLeadingSpace)
{
    EXPECT_EQ(parse({"--host-memory", " -1", "wf.dag"}), -1)
        << "accepted, host_memory = " << o_.host_memory;
    EXPECT_NE(err().find("--host-memory"), std::string::npos) << err();
}

TEST_F(OptionsTest, MaxWallTimeNotFinite)
{
    expect_rejected({"--max-wall-time", "inf", "wf.dag"}, {"--max-wall-time"});
    EXPECT_EQ(parse({"--max-wall-time", "nan", "wf.dag"}), -1);
    EXPECT_EQ(parse({"--max-wall-time", "5m", "wf.dag"}), -1);
}

TEST_F(OptionsTest, MaxFailuresAndMaxfdsBad)
{
    expect_rejected({"-m", "x", "wf.dag"}, {"--max-failures"});
    expect_rejected({"--maxfds", "0", "wf.dag"}, {"--maxfds"});
}

TEST_F(OptionsTest, MissingDagfile)
{
    expect_rejected({}, {"DAGFILE"});
    expect_rejected({"-v", "-t", "2"}, {"DAGFILE"});
}

TEST_F(OptionsTest, ErrorMessageIsOneLine)
{
    EXPECT_EQ(parse({"-t", "0", "wf.dag"}), -1);
    EXPECT_FALSE(err().empty());
    EXPECT_EQ(err().find('\n'), std::string::npos) << err();
}

TEST_F(OptionsTest, NullErrorIsAccepted)
{
    char a0[] = "pmc-hybrid", a1[] = "--bogus", a2[] = "wf.dag";
    char *argv[] = {a0, a1, a2, nullptr};
    EXPECT_EQ(options_parse(&o_, 3, argv, nullptr), -1);
}

// After a complete parse getopt still holds a pointer to the end of the last
// option word it read.  A caller may free or reuse that argv; the next
// options_parse must not read it.  Here the old word's terminating NUL is
// overwritten, as reused heap memory would be: a parser that follows the stale
// pointer counts a "-v" that is not on the new command line.
TEST_F(OptionsTest, ParseDoesNotReadThePreviousArgv)
{
    char a0[] = "pmc-hybrid", a1[8] = "-s", a2[] = "first.dag";
    char *argv1[] = {a0, a1, a2, nullptr};
    ASSERT_EQ(options_parse(&o_, 3, argv1, &err_), 0) << err();
    a1[2] = 'v'; // the NUL after "-s" is reused: the bytes now read "-sv"
    char b0[] = "pmc-hybrid", b1[] = "second.dag";
    char *argv2[] = {b0, b1, nullptr};
    ASSERT_EQ(options_parse(&o_, 2, argv2, &err_), 0) << err();
    EXPECT_STREQ(o_.dag_path, "second.dag");
    EXPECT_EQ(o_.verbosity, 0);
}

// getopt keeps its position inside a cluster of short options ("-xv") in a
// hidden pointer that only optind = 0 resets.  After an error at 'x' that
// pointer still aims at the old "v"; a following parse must not continue from
// it (it would count a -v that is not there, skip the DAG file, and read
// freed memory).
TEST_F(OptionsTest, ParseAfterErrorInsideClusterStartsClean)
{
    EXPECT_EQ(parse({"-xv", "first.dag"}), -1);
    ASSERT_EQ(parse({"second.dag"}), 0) << err();
    EXPECT_STREQ(o_.dag_path, "second.dag");
    EXPECT_EQ(o_.verbosity, 0);
}

TEST_F(OptionsTest, RepeatedParsesAreIndependent)
{
    ASSERT_EQ(parse({"-t", "4", "-v", "a.dag"}), 0) << err();
    EXPECT_EQ(o_.tries, 4u);
    ASSERT_EQ(parse({"b.dag"}), 0) << err();
    EXPECT_EQ(o_.tries, 1u);
    EXPECT_EQ(o_.verbosity, 0);
    EXPECT_STREQ(o_.dag_path, "b.dag");
    EXPECT_EQ(parse({"--tries"}), -1);
    ASSERT_EQ(parse({"c.dag", "-n"}), 0) << err();
    EXPECT_STREQ(o_.dag_path, "c.dag");
    EXPECT_TRUE(o_.nolock);
}

// The options --help names: every "--word" in it.
std::set<std::string> usage_long_options()
{
    std::string u = options_usage();
    std::set<std::string> found;
    std::regex opt("(^|[^\\w-])--([a-z][a-z0-9-]*)");
    for (auto it = std::sregex_iterator(u.begin(), u.end(), opt); it != std::sregex_iterator();
         ++it)
        found.insert((*it)[2]);
    return found;
}

TEST(OptionsUsage, NamesEveryLongOptionOfTheTable)
{
    // Generated from the table getopt_long() parses, so an option added to
    // options.c without a line in --help fails here.
    std::set<std::string> in_usage = usage_long_options();
    std::string u = options_usage();
    size_t n = 0;
    for (const option *o = options_table(); o->name; o++, n++) {
        EXPECT_TRUE(in_usage.count(o->name)) << "--" << o->name << " is not in --help";
        if (o->val > 0 && o->val < 256 && isalpha(o->val)) {
            std::string both = std::string("-") + (char)o->val + ", --" + o->name;
            EXPECT_NE(u.find(both), std::string::npos) << both << " is not in --help";
        }
    }
    EXPECT_GE(n, 30u) << "the table looks truncated";
}

TEST(OptionsUsage, NamesNoOptionOutsideTheTable)
{
    std::set<std::string> table;
    for (const option *o = options_table(); o->name; o++)
        table.insert(o->name);
    for (const std::string &name : usage_long_options())
        EXPECT_TRUE(table.count(name)) << "--help names --" << name << ", which is not an option";
}

TEST(OptionsUsage, NamesTheEnvironmentAliases)
{
    std::string u = options_usage();
    for (const char *var : {"PMC_HOST_SCRIPT", "PMC_HOST_MEMORY", "PMC_HOST_CPUS", "PMC_HOST_GPUS",
                            "PMC_MAX_WALL_TIME", "PMC_RANKS_ARE_HOSTS"})
        EXPECT_NE(u.find(var), std::string::npos) << var;
}

} // namespace
