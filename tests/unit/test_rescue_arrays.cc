// test_rescue_arrays.cc - unit tests of the rescue log with task arrays
// (io/rescue.h, docs/task-arrays.md "The rescue log").
//
// Reading: instances as "DONE sim[42]" and runs as "DONE sim[0-9]", mixed
// with plain tasks (one named "job[3]", no array job), every bad instance
// record named with its line, a torn range record, every truncation of a
// log the writer wrote.  Writing: the carried-over
// instances as one record per run of one array (split where an array ends),
// the writer coalescing a shuffled batch into runs, rescue_replace() and a
// deleted log written again with instances, a DAG without arrays written
// as before arrays, byte for byte.  Each test gets its own directory under
// $TMPDIR; the log goes through a pipe so warnings can be checked.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "dag_holder.h"
#include "io/dag.h"
#include "io/dagfile.h"
#include "io/log.h"
#include "io/rescue.h"
#include "log_capture.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// Ids 0 .. 3 are the plain tasks; then sim[0-99] (ids 4 .. 103) and
// post[10-19] (ids 104 .. 113): sim[99] and post[10] have consecutive ids.
const char kDag[] = "TASK a /bin/true\n"
                    "TASK job[3] /bin/true\n"
                    "TASK x[a-b] /bin/true\n"
                    "TASK b /bin/true\n"
                    "TASK sim[0-99] ./sim %{INDEX}\n"
                    "TASK post[10-19] ./post %{INDEX}\n"
                    "EDGE sim[*] post[*]\n";

// A done set by name: plain task names and instance names "sim[3]".
using Names = std::set<std::string>;

class RescueArraysTest : public TempDirTest
{
  protected:
    RescueArraysTest() : TempDirTest("test_rescue_arrays"), dag_(parse(kDag))
    {
        path_ = dir_ + "/wf.dag.rescue";
    }

    static DagPtr parse(const char *text)
    {
        dagfile_options o{};
        o.arrays = 1;
        Dag r = parse_dag_text(text, "wf.dag", &o);
        EXPECT_NE(r.d, nullptr) << r.error;
        DagPtr p(r.d, dag_destroy);
        r.d = nullptr;
        return p;
    }

    const dag *d() const
    {
        return dag_.get();
    }
    size_t words() const
    {
        return (d()->ninstances + 63) / 64;
    }
    dag_task_t inst(const char *array, uint32_t index) const
    {
        uint32_t a = 0;
        EXPECT_EQ(dag_array_lookup(d(), array, strlen(array), &a), 0) << array;
        return dag_instance_id(d(), a, index);
    }
    // The names of the plain tasks and instances marked in done / bits.
    Names names(const std::vector<uint8_t> &done, const std::vector<uint64_t> &bits) const
    {
        Names out;
        for (dag_task_t t = 0; t < d()->ntasks; t++)
            if (done[t])
                out.insert(dag_task_name(d(), t));
        for (uint64_t k = 0; k < d()->ninstances; k++) {
            if (!(bits[k / 64] >> (k % 64) & 1))
                continue;
            uint32_t a, i;
            EXPECT_EQ(dag_instance_of(d(), d()->ntasks + (dag_task_t)k, &a, &i), 0);
            char buf[64];
            dag_instance_name(d(), a, i, buf, sizeof buf);
            out.insert(buf);
        }
        return out;
    }
    // done[] and the bitset for these names (plain tasks or instances).
    void sets(const Names &in, std::vector<uint8_t> &done, std::vector<uint64_t> &bits) const
    {
        done.assign(d()->ntasks, 0);
        bits.assign(words(), 0);
        for (const auto &n : in) {
            dag_task_t t;
            if (dag_lookup(d(), n.data(), n.size(), &t) == 0) {
                done[t] = 1;
                continue;
            }
            size_t open = n.find('[');
            t = inst(n.substr(0, open).c_str(), (uint32_t)std::stoul(n.substr(open + 1)));
            uint64_t k = t - d()->ntasks;
            bits[k / 64] |= UINT64_C(1) << (k % 64);
        }
    }

    struct Read {
        int rc = -2;
        uint32_t ndone = 0, ntorn = 0;
        Names done;
        bool zero = true;
        std::string err;
    };
    Read read() const
    {
        Read r;
        std::vector<uint8_t> done(d()->ntasks, 0);
        std::vector<uint64_t> bits(words(), 0);
        pmc_error err{};
        r.ndone = r.ntorn = 12345;
        r.rc = rescue_read(path_.c_str(), d(), done.data(), bits.data(), &r.ndone, &r.ntorn, &err);
        r.done = names(done, bits);
        r.zero = r.done.empty();
        if (r.rc)
            r.err = err.text;
        return r;
    }
    // Reading text gives exactly `done` (counted), ntorn tails and log.
    void expect_read(const std::string &text, const Names &done, uint32_t ntorn,
                     const std::string &log = "")
    {
        write_file(path_, text);
        Read r = read();
        ASSERT_EQ(r.rc, 0) << r.err;
        EXPECT_EQ(r.done, done);
        EXPECT_EQ(r.ndone, done.size());
        EXPECT_EQ(r.ntorn, ntorn);
        EXPECT_EQ(log_.take(), log);
    }
    void expect_read_error(const std::string &text, const std::string &err)
    {
        write_file(path_, text);
        Read r = read();
        EXPECT_EQ(r.rc, -1);
        EXPECT_EQ(r.err, err);
        EXPECT_TRUE(r.zero) << "a failed read leaves both sets zeroed";
        EXPECT_EQ(r.ndone, 0u);
    }
    std::string warning(int line, const std::string &what) const
    {
        return "[warn] " + path_ + ":" + std::to_string(line) + ": " + what + "\n";
    }
    rescue_writer *open(const Names &carried, const std::string &path = "")
    {
        std::vector<uint8_t> done;
        std::vector<uint64_t> bits;
        sets(carried, done, bits);
        pmc_error err{};
        rescue_writer *w = rescue_writer_open((path.empty() ? path_ : path).c_str(), d(),
                                              done.data(), bits.data(), &err);
        EXPECT_NE(w, nullptr) << err.text;
        return w;
    }
    // The log's records, one string per line.
    std::vector<std::string> lines(const std::string &path = "") const
    {
        std::vector<std::string> out;
        std::istringstream in(read_file(path.empty() ? path_ : path));
        for (std::string l; std::getline(in, l);)
            out.push_back(l);
        return out;
    }

    DagPtr dag_;
    std::string path_;
    LogCapture log_;
};

#ifdef PMC_TEST_TSAN
constexpr uint32_t kCoalesced = 2000; // instances appended at once; TSan's appends are slower
#else
constexpr uint32_t kCoalesced = 10000;
#endif

Names range(const char *array, uint32_t first, uint32_t last)
{
    Names out;
    for (uint32_t i = first; i <= last; i++)
        out.insert(std::string(array) + "[" + std::to_string(i) + "]");
    return out;
}

Names operator+(Names a, const Names &b)
{
    a.insert(b.begin(), b.end());
    return a;
}

// ---------------------------------------------------------------- reading

TEST_F(RescueArraysTest, ReadsInstancesRangesAndPlainTasks)
{
    expect_read("DONE sim[42]\nDONE a\nDONE sim[0-9]\nDONE post[10-19]\nDONE job[3]\n"
                "DONE x[a-b]\nDONE sim[5]\nDONE sim[99-99]\n",
                Names{"a", "job[3]", "x[a-b]", "sim[42]", "sim[99]"} + range("sim", 0, 9) +
                    range("post", 10, 19),
                0);
}

TEST_F(RescueArraysTest, OverlappingRangesCountEachInstanceOnce)
{
    expect_read("DONE sim[0-70]\nDONE sim[3]\nDONE sim[60-99]\nDONE sim[0-99]\n",
                range("sim", 0, 99), 0);
}

TEST_F(RescueArraysTest, PmcStyleReadsAnUnterminatedValidRange)
{
    expect_read("\nDONE a\nDONE sim[10-20]", Names{"a"} + range("sim", 10, 20), 0);
}

TEST_F(RescueArraysTest, TornRangeRecordIsIgnoredAndWarned)
{
    // Our style: an unterminated last line never counts, even when valid.
    for (const char *tail : {"DONE sim[10-99", "DONE sim[10-9", "DONE sim[10-99]", "DONE sim["}) {
        SCOPED_TRACE(tail);
        expect_read(std::string("DONE sim[0-9]\n") + tail, range("sim", 0, 9), 1,
                    warning(2, "ignoring incomplete last record"));
    }
    // PMC's style: it counts only when it is a valid record.
    expect_read("\nDONE sim[0-9]\nDONE sim[10-99", range("sim", 0, 9), 1,
                warning(3, "ignoring incomplete last record"));
    expect_read("\nDONE sim[0-9]\nDONE sim[10-100]", range("sim", 0, 9), 1,
                warning(3, "ignoring incomplete last record"));
}

TEST_F(RescueArraysTest, TheTornRangeIsGoneAfterTheRewrite)
{
    write_file(path_, "DONE sim[0-9]\nDONE sim[10-9");
    Read r = read();
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.ntorn, 1u);
    rescue_writer *w = open(r.done);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE sim[0-9]\n");
    log_.take();
}

TEST_F(RescueArraysTest, EachBadInstanceRecordIsAnErrorWithItsLine)
{
    const std::string syntax = ": not an index or a range A-B (decimal, no leading zero)";
    const std::pair<std::string, std::string> cases[] = {
        {"sim[100]", ": index outside the array's range 0-99"},
        {"sim[4294967296]", ": index outside the array's range 0-99"},
        {"sim[99999999999999999999]", ": index outside the array's range 0-99"},
        {"post[9]", ": index outside the array's range 10-19"},
        {"sim[90-100]", ": range outside the array's range 0-99"},
        {"post[9-12]", ": range outside the array's range 10-19"},
        {"sim[5-2]", ": reversed range (first > last)"},
        {"sim[05]", syntax},
        {"sim[00]", syntax},
        {"sim[0-099]", syntax},
        {"sim[]", syntax},
        {"sim[x]", syntax},
        {"sim[*]", syntax},
        {"sim[-1]", syntax},
        {"sim[1-]", syntax},
        {"sim[1--2]", syntax},
        {"sim[1-2-3]", syntax},
        {"sim[+1]", syntax},
        {"sim[1]x", syntax},
        {"sim[1][2]", syntax},
        {"sim[0-99", syntax},
    };
    for (const auto &c : cases) {
        SCOPED_TRACE(c.first);
        // Before good records, and as the complete last record.
        expect_read_error("DONE a\n\nDONE " + c.first + "\nDONE b\n",
                          path_ + ":3: bad instance " + c.first + c.second);
        expect_read_error("DONE a\nDONE " + c.first + "\n",
                          path_ + ":2: bad instance " + c.first + c.second);
    }
}

TEST_F(RescueArraysTest, UnknownArrayIsAnUnknownTask)
{
    for (const char *name : {"nosuch[3]", "nosuch[0-9]", "job[4]", "job", "Sim[3]", "[3]"}) {
        SCOPED_TRACE(name);
        expect_read_error(std::string("DONE sim[1]\nDONE ") + name + "\n",
                          path_ + ":2: unknown task " + name);
    }
}

TEST_F(RescueArraysTest, BadInstancesInTheTornTailAreNoError)
{
    expect_read("DONE a\nDONE sim[100]", {"a"}, 1, warning(2, "ignoring incomplete last record"));
    expect_read("\nDONE a\nDONE sim[5-2]", {"a"}, 1, warning(3, "ignoring incomplete last record"));
}

// A sweep of 10^8 instances as range records: one word per 64 instances.
TEST_F(RescueArraysTest, ReadsAHundredMillionInstancesAsRanges)
{
    dag_ = parse("TASK sim[0-99999999] ./sim %{INDEX}\n");
    std::string text;
    for (uint32_t i = 0; i < 100000000; i += 1000000)
        text += "DONE sim[" + std::to_string(i) + "-" + std::to_string(i + 999999) + "]\n";
    write_file(path_, text);
    std::vector<uint64_t> bits(words(), 0);
    uint32_t ndone = 0;
    pmc_error err{};
    ASSERT_EQ(rescue_read(path_.c_str(), d(), nullptr, bits.data(), &ndone, nullptr, &err), 0)
        << err.text;
    EXPECT_EQ(ndone, 100000000u);
    static_assert(100000000 % 64 == 0, "every word full");
    EXPECT_TRUE(std::all_of(bits.begin(), bits.end(), [](uint64_t w) { return w == ~0ull; }));
}

// What the complete record `line` ("DONE NAME", our writer's format) names.
Names record_names(const std::string &line)
{
    std::string name = line.substr(5);
    size_t open = name.find('['), dash = name.find('-', open);
    if (name.back() != ']' || (name.compare(0, 3, "sim") && name.compare(0, 4, "post")))
        return {name}; // a plain task: a, job[3], x[a-b], b
    uint32_t first = (uint32_t)std::stoul(name.substr(open + 1));
    uint32_t last = dash == std::string::npos ? first : (uint32_t)std::stoul(name.substr(dash + 1));
    return range(name.substr(0, open).c_str(), first, last);
}

// A crash may cut the log anywhere: every prefix of one the writer wrote
// (ranges, single instances, plain tasks) reads as exactly its complete
// records, with one torn record when the cut falls inside one.
TEST_F(RescueArraysTest, EveryTruncationOfARangeLogKeepsItsCompleteRecords)
{
    rescue_writer *w =
        open(Names{"job[3]", "sim[42]"} + range("sim", 0, 19) + range("post", 10, 19));
    ASSERT_NE(w, nullptr);
    rescue_writer_append(w, inst("sim", 77));
    ASSERT_EQ(rescue_writer_flush(w), 0); // a batch of its own: the order is known
    rescue_writer_append(w, 3);           // b
    ASSERT_EQ(rescue_writer_close(w), 0);
    const std::string full = read_file(path_);
    ASSERT_EQ(full, "DONE job[3]\nDONE sim[0-19]\nDONE sim[42]\nDONE post[10-19]\nDONE sim[77]\n"
                    "DONE b\n");
    for (size_t cut = 0; cut <= full.size(); cut++) {
        SCOPED_TRACE("cut at " + std::to_string(cut));
        std::string prefix = full.substr(0, cut);
        size_t complete = prefix.rfind('\n') == std::string::npos ? 0 : prefix.rfind('\n') + 1;
        Names want;
        std::istringstream in(prefix.substr(0, complete));
        for (std::string l; std::getline(in, l);)
            want = want + record_names(l);
        bool torn = complete < cut;
        expect_read(prefix, want, torn ? 1 : 0,
                    torn ? warning((int)std::count(prefix.begin(), prefix.end(), '\n') + 1,
                                   "ignoring incomplete last record")
                         : "");
    }
}

// ---------------------------------------------------------------- writing

TEST_F(RescueArraysTest, OpenWritesCarriedInstancesAsRunsSplitAtArrayEnds)
{
    rescue_writer *w = open(Names{"b", "job[3]", "sim[42]", "sim[99]", "sim[44]"} +
                            range("sim", 0, 9) + range("post", 10, 19));
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE job[3]\nDONE b\nDONE sim[0-9]\nDONE sim[42]\nDONE sim[44]\n"
                                "DONE sim[99]\nDONE post[10-19]\n");
    Read r = read();
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.ndone, 25u);
}

TEST_F(RescueArraysTest, OpenWithEveryInstanceWritesOneRecordPerArray)
{
    rescue_writer *w = open(range("sim", 0, 99) + range("post", 10, 19));
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE sim[0-99]\nDONE post[10-19]\n");
}

// The instances of one batch, appended in any order, become one record per
// run of one array.  A batch is what the writer takes at once: what is
// appended right after a write waits for it at least until that write is
// RESCUE_COMMIT_USEC old (and for its fdatasync), unless the machine stalls
// this thread that long, so the test tries again with a fresh log when the
// appends took more than one write (and appends fewer under ThreadSanitizer,
// which makes each append slower).
TEST_F(RescueArraysTest, TheWriterCoalescesAShuffledBatchIntoRuns)
{
    const uint32_t n = kCoalesced;
    dag_ = parse("TASK a /bin/true\nTASK sim[0-9999] ./sim\nTASK post[0-9] ./post\n");
    std::vector<dag_task_t> ids;
    for (uint32_t i = 0; i < n; i++)
        ids.push_back(inst("sim", i));
    for (uint32_t i : {0u, 1u, 2u, 5u})
        ids.push_back(inst("post", i));
    ids.push_back(inst("sim", 17)); // a repeat
    std::mt19937 rng(50);
    bool one_batch = false;
    int attempt = 0;
    for (; attempt < 20 && !one_batch; attempt++) {
        std::string p = dir_ + "/try" + std::to_string(attempt) + ".rescue";
        rescue_writer *w = open({}, p);
        ASSERT_NE(w, nullptr);
        std::shuffle(ids.begin(), ids.end(), rng);
        rescue_writer_stats st{};
        rescue_writer_append(w, 0); // "a": once it is written, the next write waits
        for (auto t0 = std::chrono::steady_clock::now();
             st.writes == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10);)
            rescue_writer_get_stats(w, &st);
        for (dag_task_t t : ids)
            rescue_writer_append(w, t);
        ASSERT_EQ(rescue_writer_flush(w), 0);
        rescue_writer_get_stats(w, &st);
        ASSERT_EQ(rescue_writer_close(w), 0);
        std::vector<uint8_t> done(d()->ntasks, 0);
        std::vector<uint64_t> bits(words(), 0);
        uint32_t ndone = 0;
        pmc_error err{};
        ASSERT_EQ(rescue_read(p.c_str(), d(), done.data(), bits.data(), &ndone, nullptr, &err), 0)
            << err.text;
        EXPECT_EQ(ndone, 1 + n + 4) << "read back: every record, whatever the batches";
        one_batch = st.writes == 2;
        if (one_batch) {
            std::string sim = "DONE sim[0-" + std::to_string(n - 1) + "]";
            EXPECT_EQ(lines(p),
                      (std::vector<std::string>{"DONE a", sim, "DONE post[0-2]", "DONE post[5]"}));
        }
    }
    printf("[ stats    ] %d attempt(s) to write %u appends in one batch\n", attempt, n + 5);
    EXPECT_TRUE(one_batch) << "no attempt wrote the appends in one batch";
}

// Plain tasks keep the order they were appended in; the instances of the
// batch follow, sorted.
TEST_F(RescueArraysTest, ABatchMixesPlainRecordsAndInstanceRuns)
{
    rescue_writer *w = open({});
    ASSERT_NE(w, nullptr);
    rescue_writer_append(w, inst("post", 10));
    rescue_writer_append(w, 3); // b
    rescue_writer_append(w, inst("sim", 99));
    rescue_writer_append(w, 0); // a
    ASSERT_EQ(rescue_writer_close(w), 0);
    Read r = read();
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.done, (Names{"a", "b", "sim[99]", "post[10]"}));
    // Whatever the batches, sim[99] and post[10] (consecutive ids) are two
    // records, and b comes before a.
    std::string text = read_file(path_);
    EXPECT_EQ(text.find("sim[99-"), std::string::npos) << text;
    EXPECT_LT(text.find("DONE b\n"), text.find("DONE a\n")) << text;
}

TEST_F(RescueArraysTest, ReplaceWritesExactlyTheGivenInstances)
{
    rescue_writer *w = open(range("sim", 0, 99));
    ASSERT_NE(w, nullptr);
    ASSERT_EQ(rescue_writer_close(w), 0);
    std::vector<uint8_t> done;
    std::vector<uint64_t> bits;
    sets(Names{"b", "post[19]"} + range("sim", 3, 5) + range("sim", 97, 99), done, bits);
    pmc_error err{};
    int lock_fd = -1;
    ASSERT_EQ(rescue_replace(path_.c_str(), d(), done.data(), bits.data(), &lock_fd, &err), 0)
        << err.text;
    EXPECT_GE(lock_fd, 0);
    close(lock_fd);
    EXPECT_EQ(read_file(path_), "DONE b\nDONE sim[3-5]\nDONE sim[97-99]\nDONE post[19]\n");
    Read r = read();
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.ndone, 8u);
}

// A log deleted during the run is written again from the writer's own
// record of it: a byte per plain task, a bit per instance.
TEST_F(RescueArraysTest, DeletedLogIsWrittenAgainWithItsInstances)
{
    rescue_writer *w = open(Names{"a"} + range("sim", 0, 9));
    ASSERT_NE(w, nullptr);
    rescue_writer_append(w, inst("sim", 50));
    rescue_writer_append(w, inst("post", 12));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    ASSERT_EQ(unlink(path_.c_str()), 0);
    rescue_writer_append(w, inst("sim", 51));
    ASSERT_EQ(rescue_writer_flush(w), 0);
    EXPECT_EQ(rescue_writer_path(w), RESCUE_PATH_WRITTEN_AGAIN);
    EXPECT_EQ(read_file(path_), "DONE a\nDONE sim[0-9]\nDONE sim[50-51]\nDONE post[12]\n");
    rescue_writer_append(w, inst("sim", 52)); // appended to the new file
    ASSERT_EQ(rescue_writer_close(w), 0);
    Read r = read();
    ASSERT_EQ(r.rc, 0) << r.err;
    EXPECT_EQ(r.done, Names{"a"} + range("sim", 0, 9) + range("sim", 50, 52) + Names{"post[12]"});
    EXPECT_NE(log_.take().find("written again there, with the 14 tasks done so far"),
              std::string::npos);
}

// Without arrays nothing changes: a name like "job[3]" or "x[0-5]" is a
// plain task's, written and read as before, and no bitset is needed.
TEST_F(RescueArraysTest, ADagWithoutArraysWritesTheLogAsBefore)
{
    DagPtr plain = make_dag({"a", "job[3]", "x[0-5]", "b"});
    std::vector<uint8_t> done = {0, 1, 1, 0};
    pmc_error err{};
    rescue_writer *w = rescue_writer_open(path_.c_str(), plain.get(), done.data(), nullptr, &err);
    ASSERT_NE(w, nullptr) << err.text;
    rescue_writer_append(w, 3);
    rescue_writer_append(w, 0);
    ASSERT_EQ(rescue_writer_close(w), 0);
    EXPECT_EQ(read_file(path_), "DONE job[3]\nDONE x[0-5]\nDONE b\nDONE a\n");
    std::vector<uint8_t> back(4, 0);
    uint32_t ndone = 0;
    ASSERT_EQ(rescue_read(path_.c_str(), plain.get(), back.data(), nullptr, &ndone, nullptr, &err),
              0)
        << err.text;
    EXPECT_EQ(ndone, 4u);
    write_file(path_, "DONE a\nDONE sim[3]\n");
    ASSERT_EQ(rescue_read(path_.c_str(), plain.get(), back.data(), nullptr, &ndone, nullptr, &err),
              -1);
    EXPECT_EQ(std::string(err.text), path_ + ":2: unknown task sim[3]");
}

} // namespace
