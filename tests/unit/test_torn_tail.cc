// test_torn_tail.cc - the rescue log reader against torn tails (io/rescue.h,
// docs/design.md section 6, COMPAT.md "Rescue log").
//
// A crash can cut the rescue log anywhere, or leave garbage after the last
// record (a zero-filled block, a half-written record).  The promise: the
// reader accepts exactly the complete records and reports the rest, so a
// restart reruns only the tasks whose record was lost.  The cases:
//
//   - every truncation offset of a log of real-looking records written by
//     the real writer (rescue_writer_open/append/close), names taken from
//     the shapes of the shared workflows plus UTF-8 names, one listed twice;
//     for each: the tasks marked are exactly those whose "DONE name\n" lies
//     wholly inside the prefix, ndone counts them, and ntorn is 1 exactly
//     when the cut falls inside a record (0 at a record boundary);
//   - the same for PMC's leading-newline style ("\nDONE name" records, no
//     newline at the end), where a last record without newline counts when
//     it names a known task: so cutting "DONE t10" to "DONE t1" marks t1
//     (PMC's format cannot tell them apart; pinned down here, see
//     docs/reliability.md);
//   - garbage tails after complete records: NUL runs (with and without
//     newlines), every prefix of "DONE name", random bytes, a half-written
//     UTF-8 name, a record naming an unknown task (torn: ignored; complete:
//     an error naming the line, as the contract says), CRLF records, spaces;
//   - after a torn read, rescue_writer_open() rewrites the log to exactly
//     the accepted records, and reading it again reports nothing torn;
//   - every task name the DAG parser accepts can be recorded: for each byte
//     value inside a name, either dagfile_parse() refuses the name or a
//     "DONE name\n" record of it reads back as done (a name with a control
//     byte was accepted once and made every restart fail with "bad record").
//
// Each case checks the return value, every done[] byte, ndone and ntorn;
// a failure names the case and the offset.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "io/dag.h"
#include "io/dagfile.h"
#include "io/log.h"
#include "io/rescue.h"
#include "testutil.h"

namespace
{

using namespace testutil;

// Names shaped like the shared workflows' (Montage, Epigenomics, 1000genome,
// Seismology, SoyKB), with prefixes of one another (t1/t10/t100), and UTF-8.
std::vector<std::string> task_names()
{
    std::vector<std::string> v = {
        "mProject_ID0000001",
        "mProject_ID0000002",
        "mDiffFit_ID0000103",
        "mConcatFit_ID0000611",
        "mBgModel_ID0000612",
        "individuals_ID0000001",
        "individuals_merge_ID0000011",
        "sifting_ID0000012",
        "frequency_ID0000100",
        "fast2bfq_fast2bfq_080603_ILMN-GA001_0003_205WWAAXX_TAQ1_s_1_sequence_1_ID0000002",
        "filterContams_chr21_ID0000004",
        "sG1IterDecon_ID0000001",
        "wrapper_siftSTFByMisfit_ID0001001",
        "alignment_to_reference_ID0000001",
        "sort_sam_ID0000002",
        "t1",
        "t10",
        "t100",
        "\xcf\x83\xcf\x84\xce\xac\xce\xb4\xce\xb9\xce\xbf_1", // σtάδιο_1 (Greek)
        "\xe5\xb7\xa5\xe4\xbd\x9c_\xe2\x82\xac_2",            // 工作_€_2
        "na\xc3\xafve-\xc3\xb1"
        "ame", // naïve-ñame
        "a#b",
        "DONE",
    };
    for (int i = 0; i < 16; i++) {
        char buf[48];
        snprintf(buf, sizeof buf, "seismology_%05d_ID%07d", i * 37, 2000 + i);
        v.push_back(buf);
    }
    return v;
}

struct Read {
    int rc = 0;
    uint32_t ndone = 0, ntorn = 0;
    std::vector<uint8_t> done;
    std::string error;
};

struct Expect {
    int rc = 0;
    std::set<std::string> done;
    uint32_t ntorn = 0;
    std::string error; // substring of the error text when rc == -1
};

class TornTailTest : public TempDirTest
{
  protected:
    TornTailTest() : TempDirTest("pmc-torn"), names_(task_names()), dag_(make_dag(names_))
    {
        for (size_t i = 0; i < names_.size(); i++)
            id_[names_[i]] = i;
    }

    void SetUp() override
    {
        log_path_ = path("log");
        log_fd_ = open(log_path_.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ASSERT_GE(log_fd_, 0);
        log_set_fd(log_fd_);
    }

    void TearDown() override
    {
        log_set_fd(2);
        close(log_fd_);
    }

    // Everything logged since the last call.
    std::string take_log()
    {
        std::string s = read_file(log_path_);
        EXPECT_EQ(ftruncate(log_fd_, 0), 0);
        lseek(log_fd_, 0, SEEK_SET);
        return s;
    }

    Read read(const std::string &content)
    {
        std::string p = path("wf.dag.rescue");
        write_file(p, content);
        Read r;
        r.done.assign(dag_->ntasks, 0);
        r.ndone = r.ntorn = 12345; // must be overwritten
        pmc_error err{};
        r.rc = rescue_read(p.c_str(), dag_.get(), r.done.data(), nullptr, &r.ndone, &r.ntorn, &err);
        r.error = err.text;
        return r;
    }

    // Check content against e; returns the number of failures (for sweeps
    // that report once per offset instead of stopping).
    int check(const std::string &content, const Expect &e, const std::string &what)
    {
        Read r = read(content);
        int failures = 0;
        auto fail = [&](const std::string &msg) {
            failures++;
            ADD_FAILURE() << what << ": " << msg << "\n  content (" << content.size()
                          << " bytes): " << printable(content);
        };
        if (r.rc != e.rc) {
            fail("rc " + std::to_string(r.rc) + ", expected " + std::to_string(e.rc) +
                 " (error: " + r.error + ")");
            return failures;
        }
        uint32_t want_ndone = e.rc == 0 ? static_cast<uint32_t>(e.done.size()) : 0;
        if (r.ndone != want_ndone)
            fail("ndone " + std::to_string(r.ndone) + ", expected " + std::to_string(want_ndone));
        for (size_t i = 0; i < names_.size(); i++) {
            bool want = e.rc == 0 && e.done.count(names_[i]) > 0;
            if (r.done[i] != (want ? 1 : 0))
                fail("task " + names_[i] + " done=" + std::to_string(r.done[i]) + ", expected " +
                     std::to_string(want));
        }
        if (e.rc == 0 && r.ntorn != e.ntorn)
            fail("ntorn " + std::to_string(r.ntorn) + ", expected " + std::to_string(e.ntorn));
        if (e.rc != 0 && r.error.find(e.error) == std::string::npos)
            fail("error '" + r.error + "' does not contain '" + e.error + "'");
        return failures;
    }

    static std::string printable(const std::string &s)
    {
        std::string out;
        size_t from = s.size() > 120 ? s.size() - 120 : 0;
        if (from)
            out = "...";
        for (size_t i = from; i < s.size(); i++) {
            unsigned char c = static_cast<unsigned char>(s[i]);
            char buf[8];
            if (c == '\n')
                out += "\\n";
            else if (c < 0x20 || c >= 0x7f) {
                snprintf(buf, sizeof buf, "\\x%02x", c);
                out += buf;
            } else
                out += static_cast<char>(c);
        }
        return out;
    }

    // The records "DONE name\n" of the real writer for `order` (ids).
    std::string write_real_log(const std::vector<dag_task_t> &order)
    {
        std::string p = path("writer.rescue");
        std::vector<uint8_t> none(dag_->ntasks, 0);
        pmc_error err{};
        rescue_writer *w = rescue_writer_open(p.c_str(), dag_.get(), none.data(), nullptr, &err);
        EXPECT_NE(w, nullptr) << err.text;
        if (!w)
            return "";
        for (dag_task_t t : order)
            rescue_writer_append(w, t);
        EXPECT_EQ(rescue_writer_close(w), 0);
        return read_file(p);
    }

    // Every complete record in our style, in the order written.
    std::vector<dag_task_t> record_order()
    {
        std::vector<dag_task_t> order;
        for (size_t i = 0; i < names_.size(); i++)
            order.push_back(static_cast<dag_task_t>((i * 7) % names_.size())); // a permutation
        order.push_back(id_["t10"]); // listed twice: counts once
        return order;
    }

    std::vector<std::string> names_;
    DagPtr dag_;
    std::map<std::string, size_t> id_;
    std::string log_path_;
    int log_fd_ = -1;
};

// Every truncation offset of a log written by the real writer.
TEST_F(TornTailTest, EveryTruncationOffsetOurStyle)
{
    log_set_level(PMC_LOG_ERROR); // thousands of expected warnings
    std::vector<dag_task_t> order = record_order();
    std::string log = write_real_log(order);
    // The writer's format, checked independently: exactly these records.
    std::string want;
    for (dag_task_t t : order)
        want += "DONE " + names_[t] + "\n";
    ASSERT_EQ(log, want);

    int failures = 0;
    for (size_t cut = 0; cut <= log.size() && failures < 20; cut++) {
        Expect e;
        size_t pos = 0;
        for (dag_task_t t : order) {
            size_t len = 5 + names_[t].size() + 1;
            if (pos + len <= cut)
                e.done.insert(names_[t]);
            pos += len;
        }
        e.ntorn = (cut == 0 || log[cut - 1] == '\n') ? 0 : 1;
        failures += check(log.substr(0, cut), e, "cut at " + std::to_string(cut));
    }
    log_set_level(PMC_LOG_INFO);
    EXPECT_EQ(failures, 0);
}

// PMC's style: "\nDONE name" per record, the last one unterminated.
TEST_F(TornTailTest, EveryTruncationOffsetPmcStyle)
{
    log_set_level(PMC_LOG_ERROR);
    std::vector<dag_task_t> order = record_order();
    std::string log;
    std::vector<size_t> ends; // offset just past each record's name
    for (dag_task_t t : order) {
        log += "\nDONE " + names_[t];
        ends.push_back(log.size());
    }
    int failures = 0;
    for (size_t cut = 0; cut <= log.size() && failures < 20; cut++) {
        std::string prefix = log.substr(0, cut);
        Expect e;
        size_t start = 0; // start (its '\n') of record i
        for (size_t i = 0; i < order.size(); start = ends[i], i++) {
            if (ends[i] < cut) { // followed by the next record's newline: complete
                e.done.insert(names_[order[i]]);
                continue;
            }
            if (start < cut) { // the last, unterminated piece, after its '\n'
                std::string piece = log.substr(start + 1, cut - start - 1);
                if (piece.rfind("DONE ", 0) == 0 && id_.count(piece.substr(5)))
                    e.done.insert(piece.substr(5)); // a known name: counts (PMC's rule)
                else if (!piece.empty())
                    e.ntorn = 1;
            }
            break;
        }
        failures += check(prefix, e, "PMC style, cut at " + std::to_string(cut));
    }
    log_set_level(PMC_LOG_INFO);
    EXPECT_EQ(failures, 0);
}

// The ambiguity of PMC's style, pinned down: a cut that leaves a shorter
// known name marks that task.  Our style never has it (the newline ends a
// record).
TEST_F(TornTailTest, PmcStyleCutToAShorterKnownName)
{
    Expect e;
    e.done = {"mProject_ID0000001", "t1"};
    EXPECT_EQ(check("\nDONE mProject_ID0000001\nDONE t1", e, "PMC style, t10 cut to t1"), 0);
    Expect ours;
    ours.done = {"mProject_ID0000001"};
    ours.ntorn = 1;
    EXPECT_EQ(check("DONE mProject_ID0000001\nDONE t1", ours, "our style, t10 cut to t1"), 0);
}

// Garbage after complete records, in both styles.
TEST_F(TornTailTest, GarbageTails)
{
    log_set_level(PMC_LOG_ERROR);
    const std::string body = "DONE mProject_ID0000001\nDONE t100\nDONE " + names_[18] + "\n";
    const std::set<std::string> body_done = {"mProject_ID0000001", "t100", names_[18]};
    const std::string pmc_body = "\nDONE mProject_ID0000001\nDONE t100\nDONE " + names_[18];
    struct Tail {
        std::string name, bytes;
        uint32_t ntorn; // after body (our style)
    };
    std::mt19937 rng(20240613);
    auto random_line = [&](size_t n) { // random bytes without '\n', not blank, not a comment
        std::string s(n, 'x');
        for (auto &c : s) {
            do
                c = static_cast<char>(rng());
            while (c == '\n');
        }
        s[0] = 'x';
        return s;
    };
    std::vector<Tail> tails = {
        {"one NUL", std::string(1, '\0'), 1},
        {"NUL run", std::string(7, '\0'), 1},
        {"zero-filled block", std::string(4096, '\0'), 1},
        {"NUL run ending in a newline", std::string(9, '\0') + "\n", 1},
        {"NULs around newlines", std::string(5, '\0') + "\n" + std::string(5, '\0'), 2},
        {"NUL lines", std::string("\0\n\0\n\0\n", 6), 1},
        {"D", "D", 1},
        {"DO", "DO", 1},
        {"DON", "DON", 1},
        {"DONE", "DONE", 1},
        {"DONE and space", "DONE ", 1},
        {"DONE and a prefix of a name", "DONE mProj", 1},
        {"DONE and a whole known name, no newline", "DONE t1", 1},
        {"half-written UTF-8 name", "DONE \xcf\x83\xcf\x84\xce", 1},
        {"half-written UTF-8 name, 1 byte", "DONE \xe5", 1},
        {"unknown task, torn", "DONE no_such_task", 1},
        {"random bytes", random_line(1), 1},
        {"random bytes (64)", random_line(64), 1},
        {"random bytes (4000)", random_line(4000), 1},
        {"random line then more", random_line(30) + "\n" + random_line(30), 2},
        {"random complete lines", random_line(20) + "\n" + random_line(20) + "\n", 1},
        {"bad word then NULs", "DONE a b\n" + std::string(3, '\0'), 2},
        {"NUL inside a name", std::string("DONE t1\0\0\n", 10), 1},
        {"blank lines", "\n\n   \n\t\n", 0},
        {"a comment, torn", "# a comment", 0},
        {"spaces, torn", "   ", 0},
    };
    int failures = 0;
    for (const Tail &t : tails) {
        Expect e;
        e.done = body_done;
        e.ntorn = t.ntorn;
        failures += check(body + t.bytes, e, "our style + " + t.name);
        // PMC style: the body's last record is ended by a newline before the
        // tail; the tail is then read the same way, but for a last record
        // naming a known task.
        Expect p;
        p.done = body_done;
        p.ntorn = t.ntorn;
        std::string pmc = pmc_body + "\n" + t.bytes;
        if (t.name == "DONE and a whole known name, no newline") {
            p.done.insert("t1"); // PMC style: a last record naming a known task counts
            p.ntorn = 0;
        }
        failures += check(pmc, p, "PMC style + " + t.name);
    }
    log_set_level(PMC_LOG_INFO);
    EXPECT_EQ(failures, 0);
}

// Complete lines that are not garbage: the contract's errors and non-errors.
TEST_F(TornTailTest, CompleteTailRecords)
{
    const std::string body = "DONE t1\nDONE t10\n";
    Expect unknown;
    unknown.rc = -1;
    unknown.error = "wf.dag.rescue:3: unknown task no_such_task";
    EXPECT_EQ(check(body + "DONE no_such_task\n", unknown, "complete unknown record at the end"),
              0);
    Expect utf8;
    utf8.rc = -1;
    utf8.error = ":3: unknown task";
    EXPECT_EQ(check(body + "DONE \xcf\x83\xcf\x84\xce\n", utf8, "complete half UTF-8 name"), 0);
    Expect bad_then_record;
    bad_then_record.rc = -1;
    bad_then_record.error = "wf.dag.rescue:3: bad record";
    EXPECT_EQ(check(body + std::string(4, '\0') + "\nDONE t100\n", bad_then_record,
                    "zeros followed by a record"),
              0);
    Expect crlf;
    crlf.done = {"t1", "t10", "t100"};
    EXPECT_EQ(check("DONE t1\r\nDONE t10\r\n  DONE\tt100 \r\n", crlf, "CRLF and spaces"), 0);
    Expect dup;
    dup.done = {"t1", "t10"};
    EXPECT_EQ(check(body + body + "# comment\n", dup, "duplicates and a comment"), 0);
}

// The warnings name the file and line, once per torn piece.
TEST_F(TornTailTest, WarningsNameTheLine)
{
    take_log();
    Expect e;
    e.done = {"t1"};
    e.ntorn = 2;
    EXPECT_EQ(check(std::string("DONE t1\n\0\0\0\n\nDONE t1", 20), e, "garbage and torn"), 0);
    std::string log = take_log();
    std::string p = path("wf.dag.rescue");
    EXPECT_NE(log.find("[warn] " + p + ":2: ignoring garbage at the end of the file"),
              std::string::npos)
        << log;
    EXPECT_NE(log.find("[warn] " + p + ":4: ignoring incomplete last record"), std::string::npos)
        << log;
}

// After a torn read, the writer's rewrite leaves exactly the accepted
// records, and reading that reports nothing torn.
TEST_F(TornTailTest, RewriteAfterTornTailKeepsExactlyTheCompleteRecords)
{
    log_set_level(PMC_LOG_ERROR);
    std::vector<dag_task_t> order = record_order();
    std::string log = write_real_log(order);
    std::string p = path("wf.dag.rescue");
    int failures = 0;
    for (size_t cut = 0; cut <= log.size(); cut++) {
        std::string prefix = log.substr(0, cut) + (cut % 2 ? std::string(512, '\0') : "");
        Read r = read(prefix);
        ASSERT_EQ(r.rc, 0) << "cut " << cut;
        pmc_error err{};
        rescue_writer *w = rescue_writer_open(p.c_str(), dag_.get(), r.done.data(), nullptr, &err);
        ASSERT_NE(w, nullptr) << err.text;
        ASSERT_EQ(rescue_writer_close(w), 0);
        std::string want;
        for (size_t t = 0; t < names_.size(); t++)
            if (r.done[t])
                want += "DONE " + names_[t] + "\n";
        std::string got = read_file(p);
        if (got != want) {
            failures++;
            ADD_FAILURE() << "cut " << cut << ": rewritten log differs";
        }
        Read again = read(got);
        if (again.rc != 0 || again.ntorn != 0 || again.done != r.done) {
            failures++;
            ADD_FAILURE() << "cut " << cut << ": the rewritten log reads differently";
        }
    }
    log_set_level(PMC_LOG_INFO);
    EXPECT_EQ(failures, 0);
}

// Every byte value inside a task name: the parser refuses the name, or the
// rescue log can record it (the record reads back as done, nothing torn,
// even with another record after it).
TEST(TaskNameBytes, EveryAcceptedNameCanBeRecordedDone)
{
    TempDir tmp("pmc-names");
    std::string rescue = tmp.path("wf.rescue");
    int refused = 0, recorded = 0, failures = 0;
    for (int b = 1; b < 256; b++) {
        if (b == '\n')
            continue;
        std::string name = std::string("x") + static_cast<char>(b) + "y";
        std::string text = "TASK " + name + " /bin/true\nTASK other /bin/true\n";
        pmc_error err{};
        DagPtr d(dagfile_parse(text.data(), text.size(), "names.dag", &err), dag_destroy);
        if (!d) {
            refused++;
            if (b >= 0x20 && b != 0x7f) {
                failures++;
                ADD_FAILURE() << "printable byte " << b << " refused: " << err.text;
            }
            continue;
        }
        std::string records;
        for (dag_task_t t = 0; t < d->ntasks; t++)
            records += std::string("DONE ") + dag_task_name(d.get(), t) + "\n";
        write_file(rescue, records);
        std::vector<uint8_t> done(d->ntasks, 0);
        uint32_t ndone = 0, ntorn = 0;
        int rc = rescue_read(rescue.c_str(), d.get(), done.data(), nullptr, &ndone, &ntorn, &err);
        if (rc != 0 || ndone != d->ntasks || ntorn != 0) {
            failures++;
            char what[16];
            snprintf(what, sizeof what, "byte 0x%02x", b);
            ADD_FAILURE() << what
                          << ": the DAG parser accepted the name but its record reads as rc " << rc
                          << ", " << ndone << " done, " << ntorn << " torn: " << err.text;
        } else {
            recorded++;
        }
    }
    EXPECT_EQ(failures, 0);
    // 0x01-0x1f but \n (not tried) and the spaces \t \v \f \r (they split the
    // name), and 0x7f: 26 + 1 refused; the rest recorded.
    EXPECT_EQ(refused, 27);
    EXPECT_EQ(recorded, 254 - refused);
}

} // namespace
