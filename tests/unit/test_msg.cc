/* test_msg.cc - unit tests of the message codec (io/msg.h).
 *
 * Covers: the exact wire bytes of each item kind (golden bytes), round trips
 * of every kind (STARTED and the TASKS flag MSG_TASK_NOTIFY_START included;
 * version 2's HELLO gpus and TASKS gpus and time_limit_ms, version 3's TASKS
 * priority; versions 1 and 2 refused),
 * msgbuf growth and reuse, failures that leave the buffer
 * unchanged, many items, and hostile input: every truncation, every single
 * byte value at every position, forged counts and lengths, and a seeded fuzz
 * loop.  Hostile inputs are copied into buffers of their exact size, so an
 * over-read is caught by AddressSanitizer; decode_all() also checks that every
 * decoded pointer lies inside the message.  A throughput check prints ns/item
 * and asserts nothing about time.
 */
#include <gtest/gtest.h>

#include <cerrno>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include "io/dagfile.h"
#include "io/msg.h"

namespace
{

using Bytes = std::vector<uint8_t>;

/* ---- helpers --------------------------------------------------------------- */

Bytes take(struct msgbuf *b)
{
    size_t len = msg_end(b);
    return Bytes(b->data, b->data + len);
}

void put32(Bytes &m, size_t off, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        m[off + i] = (uint8_t)(v >> (8 * i));
}

/* Fix the header's length after editing a message's size. */
void fix_length(Bytes &m)
{
    put32(m, 8, (uint32_t)m.size());
}

/* A heap copy of exactly n bytes, so ASan sees any read past the end. */
struct Exact {
    std::unique_ptr<uint8_t, decltype(&free)> buf;
    size_t len;
    Exact(const uint8_t *data, size_t n) : buf((uint8_t *)calloc(n ? n : 1, 1), &free), len(n)
    {
        if (n)
            memcpy(buf.get(), data, n);
    }
    explicit Exact(const Bytes &m) : Exact(m.data(), m.size()) {}
    const uint8_t *data() const
    {
        return buf.get();
    }
};

/* What decode_all() saw. */
struct Outcome {
    int rc = 0;            /* -1: some call failed; 0: all items read */
    size_t items = 0;      /* items read */
    bool in_bounds = true; /* every decoded pointer and length inside the message */
    std::string err;
};

struct Bounds {
    const uint8_t *lo, *hi;
    bool inside(const void *p, size_t n) const
    {
        auto q = (const uint8_t *)p;
        return q >= lo && q <= hi && n <= (size_t)(hi - q);
    }
    bool str(const char *s) const
    {
        return inside(s, 1) && inside(s, strlen(s) + 1);
    }
};

void check_hello(const Bounds &bd, const msg_hello &h, Outcome &o)
{
    o.in_bounds &= bd.str(h.hostname);
}

void check_task(const Bounds &bd, const msg_task &t, Outcome &o)
{
    o.in_bounds &= bd.str(t.name) && bd.str(t.pegasus_id);
    const char *a = t.argv;
    for (uint32_t i = 0; i < t.argc && o.in_bounds; i++) {
        o.in_bounds &= bd.str(a);
        a += strlen(a) + 1;
    }
    o.in_bounds &= bd.inside(t.fwd, t.fwd_len);
    uint32_t pos = 0, kind, n = 0;
    const char *src, *dest;
    int rc;
    while ((rc = msg_task_next_fwd(&t, &pos, &kind, &src, &dest)) == 1) {
        o.in_bounds &= kind <= 1 && bd.str(src) && bd.str(dest);
        n++;
    }
    o.in_bounds &= rc == 0 && n == t.nfwd;
}

void check_result(const Bounds &bd, const msg_result &r, Outcome &o)
{
    o.in_bounds &= bd.inside(r.fwd, r.fwd_len);
    size_t pos = 0;
    uint32_t idx, len, n = 0;
    const uint8_t *data;
    int rc;
    while ((rc = msg_result_next_fwd(&r, &pos, &idx, &data, &len)) == 1) {
        o.in_bounds &= bd.inside(data, len);
        n++;
    }
    o.in_bounds &= rc == 0 && n == r.nfwd;
}

/* Read every item of the message the way a receiver would. */
Outcome decode_all(const uint8_t *data, size_t len)
{
    Outcome o;
    msg_reader r;
    pmc_error err{};
    Bounds bd{data, data + len};
    if (msg_open(&r, data, len, &err) < 0) {
        o.rc = -1;
        o.err = err.text;
        return o;
    }
    int rc = 0;
    do {
        msg_hello h{};
        msg_task t{};
        msg_result res{};
        msg_started st{};
        msg_recall recalled{};
        switch (r.kind) {
        case MSG_HELLO:
            if ((rc = msg_next_hello(&r, &h, &err)) == 1)
                check_hello(bd, h, o);
            break;
        case MSG_TASKS:
            if ((rc = msg_next_task(&r, &t, &err)) == 1)
                check_task(bd, t, o);
            break;
        case MSG_RESULTS:
            if ((rc = msg_next_result(&r, &res, &err)) == 1)
                check_result(bd, res, o);
            break;
        case MSG_STARTED: /* plain values: nothing to bound */
            rc = msg_next_started(&r, &st, &err);
            break;
        case MSG_RECALL:
            rc = msg_next_recall(&r, &recalled, &err);
            break;
        default:
            rc = 0;
        }
        o.items += rc == 1;
    } while (rc == 1);
    o.rc = rc;
    if (rc < 0)
        o.err = err.text;
    return o;
}

Outcome decode_all(const Bytes &m)
{
    Exact e(m);
    return decode_all(e.data(), e.len);
}

/* ---- sample messages --------------------------------------------------------- */

const char kArgv[] = "/bin/echo\0hello\0world"; /* 3 strings, packed */
const char kFwd[] = "\0out.fifo\0/tmp/out\0\1res.txt\0/data/res.txt";

msg_task sample_task(uint32_t id)
{
    msg_task t{};
    t.id = id;
    t.attempt = 1;
    t.cpus = 2;
    t.memory_mb = 1024;
    t.name = "ID000001";
    t.pegasus_id = "pid-1";
    t.argc = 3;
    t.argv = kArgv;
    return t;
}

Bytes hello_msg()
{
    msgbuf b{};
    msg_hello h{3, 4, 16, 0, 64000, "node17.cluster"};
    EXPECT_EQ(0, msg_begin(&b, MSG_HELLO));
    EXPECT_EQ(0, msg_add_hello(&b, &h));
    Bytes m = take(&b);
    msg_free(&b);
    return m;
}

Bytes tasks_msg()
{
    msgbuf b{};
    EXPECT_EQ(0, msg_begin(&b, MSG_TASKS));
    msg_task t = sample_task(1);
    t.nfwd = 2;
    t.fwd = kFwd;
    EXPECT_EQ(0, msg_add_task(&b, &t));
    t = sample_task(2);
    t.pegasus_id = "";
    EXPECT_EQ(0, msg_add_task(&b, &t));
    t = sample_task(3);
    t.argc = 1; // argv[0] alone
    EXPECT_EQ(0, msg_add_task(&b, &t));
    Bytes m = take(&b);
    msg_free(&b);
    return m;
}

Bytes results_msg()
{
    msgbuf b{}, pack{};
    EXPECT_EQ(0, msg_begin(&b, MSG_RESULTS));
    EXPECT_EQ(0, msg_pack_fwd_data(&pack, 0, "abc", 3));
    EXPECT_EQ(0, msg_pack_fwd_data(&pack, 1, nullptr, 0));
    msg_result r{7, 1, 256, 0, 1700000000.25, 0.5, pack.count, pack.data, pack.len};
    EXPECT_EQ(0, msg_add_result(&b, &r));
    msg_result r2{8, 2, 0, 2, 1.0, 2.0, 0, nullptr, 0};
    EXPECT_EQ(0, msg_add_result(&b, &r2));
    Bytes m = take(&b);
    msg_free(&b);
    msg_free(&pack);
    return m;
}

/* Three STARTED items; the second's start is not a short binary fraction. */
Bytes started_msg()
{
    msgbuf b{};
    EXPECT_EQ(0, msg_begin(&b, MSG_STARTED));
    for (const msg_started &s : {msg_started{7, 1, 1700000000.25}, msg_started{8, 2, 1.0 / 3},
                                 msg_started{0xffffffffu, 0xffffffffu, 0.0}})
        EXPECT_EQ(0, msg_add_started(&b, &s));
    Bytes m = take(&b);
    msg_free(&b);
    return m;
}

Bytes recall_msg()
{
    msgbuf b{};
    EXPECT_EQ(0, msg_begin(&b, MSG_RECALL));
    msg_recall rc{17, 6, 3, 1, 0x0102030405ull};
    EXPECT_EQ(0, msg_add_recall(&b, &rc));
    Bytes m = take(&b);
    msg_free(&b);
    return m;
}

std::vector<Bytes> sample_msgs()
{
    return {hello_msg(), tasks_msg(), results_msg(), started_msg(), recall_msg()};
}

/* The bits of a double, to compare doubles exactly (NaN payloads, -0.0). */
uint64_t bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

double from_bits(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

std::vector<std::string> argv_of(const msg_task &t)
{
    std::vector<std::string> v;
    const char *a = t.argv;
    for (uint32_t i = 0; i < t.argc; i++) {
        v.emplace_back(a);
        a += strlen(a) + 1;
    }
    return v;
}

/* Open m (which must be valid) and expect the kind and count. */
void open_ok(msg_reader *r, const Bytes &m, uint32_t kind, uint32_t count)
{
    pmc_error err{};
    ASSERT_EQ(0, msg_open(r, m.data(), m.size(), &err)) << err.text;
    ASSERT_EQ(kind, r->kind);
    ASSERT_EQ(count, r->count);
}

/* Expect decoding m to fail with an error text containing want. */
void expect_bad(const Bytes &m, const std::string &want)
{
    Outcome o = decode_all(m);
    EXPECT_EQ(-1, o.rc);
    EXPECT_NE(std::string::npos, o.err.find(want)) << "error was: " << o.err;
}

/* ---- exact wire bytes -------------------------------------------------------- */

TEST(MsgWire, HelloBytes)
{
    msgbuf b{};
    msg_hello h{1, 4, 8, 2, 0x0102030405ull, "n1"};
    ASSERT_EQ(0, msg_begin(&b, MSG_HELLO));
    ASSERT_EQ(0, msg_add_hello(&b, &h));
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50,  /* magic "PMCH" */
        MSG_VERSION, MSG_HELLO, 0, 0, /* version, kind, reserved */
        43, 0, 0, 0,             /* length */
        1, 0, 0, 0,              /* count */
        1, 0, 0, 0,              /* host_rank */
        4, 0, 0, 0,              /* host_ranks */
        8, 0, 0, 0,              /* cpus */
        2, 0, 0, 0,              /* gpus */
        5, 4, 3, 2, 1, 0, 0, 0,  /* memory_mb */
        'n', '1', 0,             /* hostname */
    };
    // clang-format on
    EXPECT_EQ(want, take(&b));
    msg_free(&b);
}

TEST(MsgWire, TaskBytes)
{
    msgbuf b{};
    msg_task t{};
    t.id = 0x01020304;
    t.attempt = 2;
    t.cpus = 1;
    t.memory_mb = 100;
    t.flags = MSG_TASK_NOTIFY_START;
    t.gpus = 2;
    t.time_limit_ms = 1500;
    t.priority = -2;
    t.name = "a";
    t.pegasus_id = nullptr; /* sent as "" */
    t.argc = 2;
    t.argv = "x\0yz";
    t.nfwd = 1;
    t.fwd = "\1s\0d";
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    ASSERT_EQ(0, msg_add_task(&b, &t));
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_TASKS, 0, 0, 69, 0, 0, 0, 1, 0, 0, 0,  /* header */
        4, 3, 2, 1,              /* id */
        2, 0, 0, 0,              /* attempt */
        1, 0, 0, 0,              /* cpus */
        100, 0, 0, 0,            /* memory_mb */
        1, 0, 0, 0,              /* flags MSG_TASK_NOTIFY_START */
        2, 0, 0, 0,              /* argc */
        1, 0, 0, 0,              /* nfwd */
        2, 0, 0, 0,              /* gpus */
        0xdc, 0x05, 0, 0,        /* time_limit_ms 1500 */
        0xfe, 0xff, 0xff, 0xff,  /* priority -2 */
        'a', 0,                  /* name */
        0,                       /* pegasus_id "" */
        'x', 0, 'y', 'z', 0,     /* argv */
        1, 's', 0, 'd', 0,       /* forward: kind, src, dest */
    };
    // clang-format on
    EXPECT_EQ(want, take(&b));
    msg_free(&b);
}

/* An instance's index sits after the fixed fields, only with
 * MSG_TASK_INDEXED; msg_task_from_instance() formats name and argv. */
TEST(MsgWire, IndexedTaskRoundTrip)
{
    pmc_error err{};
    dagfile_options opts{};
    opts.arrays = 1;
    const char text[] = "TASK plain /bin/true\nTASK sim[7-9] -c 2 ./sim --seed %{INDEX}\n";
    dag *d = dagfile_parse_opts(text, sizeof text - 1, "a.dag", &opts, &err);
    ASSERT_NE(nullptr, d) << err.text;
    char *buf = nullptr;
    size_t cap = 0;
    msg_task t{};
    ASSERT_EQ(0, msg_task_from_instance(d, dag_instance_id(d, 0, 8), &buf, &cap, &t));
    EXPECT_EQ(-1, msg_task_from_instance(d, 0, &buf, &cap, &t)); /* a plain task */
    t.attempt = 1;
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    ASSERT_EQ(0, msg_add_task(&b, &t));
    Bytes m = take(&b);
    msg_free(&b);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 1);
    msg_task out;
    ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << err.text;
    EXPECT_EQ(MSG_TASK_INDEXED, out.flags);
    EXPECT_EQ(8u, out.index);
    EXPECT_EQ(2u, out.cpus);
    EXPECT_STREQ("sim[8]", out.name);
    ASSERT_EQ(3u, out.argc);
    EXPECT_EQ(0, memcmp("./sim\0--seed\08", out.argv, 15)); /* with the last NUL */
    free(buf);
    dag_destroy(d);
}

/* gpus, time_limit_ms and priority sit after nfwd, each in its own four
 * bytes, least significant first: distinct bytes show the order and that
 * none spills into its neighbours. */
TEST(MsgWire, TaskGpusAndTimeLimitBytes)
{
    msgbuf b{};
    msg_task t{};
    t.id = 9;
    t.attempt = 1;
    t.cpus = 4;
    t.memory_mb = 0;
    t.gpus = 0x0a0b0c0d;
    t.time_limit_ms = 0xfffffffe;
    t.priority = 0x01020304;
    t.name = "g";
    t.pegasus_id = "p";
    t.argc = 1;
    t.argv = "x";
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    ASSERT_EQ(0, msg_add_task(&b, &t));
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_TASKS, 0, 0, 62, 0, 0, 0, 1, 0, 0, 0,  /* header */
        9, 0, 0, 0,                /* id */
        1, 0, 0, 0,                /* attempt */
        4, 0, 0, 0,                /* cpus */
        0, 0, 0, 0,                /* memory_mb */
        0, 0, 0, 0,                /* flags */
        1, 0, 0, 0,                /* argc */
        0, 0, 0, 0,                /* nfwd */
        0x0d, 0x0c, 0x0b, 0x0a,    /* gpus 0x0a0b0c0d */
        0xfe, 0xff, 0xff, 0xff,    /* time_limit_ms 0xfffffffe */
        0x04, 0x03, 0x02, 0x01,    /* priority 0x01020304 */
        'g', 0,                    /* name */
        'p', 0,                    /* pegasus_id */
        'x', 0,                    /* argv[0] */
    };
    // clang-format on
    Bytes m = take(&b);
    EXPECT_EQ(want, m);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 1);
    msg_task out{};
    pmc_error err{};
    ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << err.text;
    EXPECT_EQ(0x0a0b0c0du, out.gpus);
    EXPECT_EQ(0xfffffffeu, out.time_limit_ms);
    EXPECT_EQ(0x01020304, out.priority);
    EXPECT_EQ(0u, out.nfwd);
    EXPECT_EQ(1u, out.argc);
    msg_free(&b);
}

TEST(MsgWire, ResultBytes)
{
    msgbuf b{}, pack{};
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 3, "hi", 2));
    EXPECT_EQ(1u, pack.count);
    msg_result r{7, 1, -1, 2, 1.5, 0.25, pack.count, pack.data, pack.len};
    ASSERT_EQ(0, msg_begin(&b, MSG_RESULTS));
    ASSERT_EQ(0, msg_add_result(&b, &r));
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_RESULTS, 0, 0, 62, 0, 0, 0, 1, 0, 0, 0,  /* header */
        7, 0, 0, 0,                       /* id */
        1, 0, 0, 0,                       /* attempt */
        0xff, 0xff, 0xff, 0xff,           /* status -1 */
        2, 0, 0, 0,                       /* exec_errno */
        0, 0, 0, 0, 0, 0, 0xf8, 0x3f,     /* start 1.5 */
        0, 0, 0, 0, 0, 0, 0xd0, 0x3f,     /* duration 0.25 */
        1, 0, 0, 0,                       /* nfwd */
        3, 0, 0, 0, 2, 0, 0, 0, 'h', 'i', /* block: fwd_index, len, bytes */
    };
    // clang-format on
    EXPECT_EQ(want, take(&b));
    msg_free(&b);
    msg_free(&pack);
}

TEST(MsgWire, StartedBytes)
{
    msgbuf b{};
    msg_started s{0x01020304, 2, 1.5};
    ASSERT_EQ(0, msg_begin(&b, MSG_STARTED));
    ASSERT_EQ(0, msg_add_started(&b, &s));
    EXPECT_EQ(1u, b.count);
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50, MSG_VERSION, 8, 0, 0, 32, 0, 0, 0, 1, 0, 0, 0,  /* header, kind 8 */
        4, 3, 2, 1,                       /* id */
        2, 0, 0, 0,                       /* attempt */
        0, 0, 0, 0, 0, 0, 0xf8, 0x3f,     /* start 1.5 */
    };
    // clang-format on
    EXPECT_EQ(8, MSG_STARTED);
    EXPECT_EQ(want, take(&b));
    msg_free(&b);
}

TEST(MsgWire, RecallBytes)
{
    // clang-format off
    Bytes want = {
        0x48, 0x43, 0x4d, 0x50, MSG_VERSION, 10, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0,  /* header, kind 10 */
        17, 0, 0, 0,                      /* want_cpus */
        6, 0, 0, 0,                       /* given */
        3, 0, 0, 0,                       /* cpus */
        1, 0, 0, 0,                       /* gpus */
        5, 4, 3, 2, 1, 0, 0, 0,           /* memory_mb */
    };
    // clang-format on
    EXPECT_EQ(10, MSG_RECALL);
    EXPECT_EQ(want, recall_msg());
    msg_reader r;
    Bytes m = recall_msg();
    open_ok(&r, m, MSG_RECALL, 1);
    msg_recall rc{};
    pmc_error err{};
    EXPECT_EQ(1, msg_next_recall(&r, &rc, &err)) << err.text;
    EXPECT_EQ(17u, rc.want_cpus);
    EXPECT_EQ(6u, rc.given);
    EXPECT_EQ(3u, rc.cpus);
    EXPECT_EQ(1u, rc.gpus);
    EXPECT_EQ(0x0102030405ull, rc.memory_mb);
    EXPECT_EQ(0, msg_next_recall(&r, &rc, &err));
}

TEST(MsgMalformed, RecallHasExactlyOneItem)
{
    Bytes x = recall_msg();
    put32(x, 12, 0);
    expect_bad(x, "RECALL count is 0 but 24 bytes follow the header");
    put32(x, 12, 2);
    expect_bad(x, "RECALL count is 2, expected 1");
    x = recall_msg();
    x.push_back(0);
    fix_length(x);
    expect_bad(x, "RECALL item 1: 1 trailing bytes after the last item");
}

TEST(MsgWire, EmptyKindsAreBareHeaders)
{
    for (msg_kind k : {MSG_SHUTDOWN, MSG_BYE, MSG_ABORT, MSG_DRAIN, MSG_RESUME, MSG_LOST,
                       MSG_PEER_LOST, MSG_LEAVING}) {
        msgbuf b{};
        ASSERT_EQ(0, msg_begin(&b, k));
        Bytes m = take(&b);
        Bytes want = {0x48, 0x43, 0x4d, 0x50, MSG_VERSION, (uint8_t)k, 0, 0,
                      16,   0,    0,    0,    0,           0,          0, 0};
        EXPECT_EQ(want, m);
        msg_reader r;
        open_ok(&r, m, k, 0);
        msg_task t;
        pmc_error err{};
        EXPECT_EQ(-1, msg_next_task(&r, &t, &err)); /* no reader for these kinds */
        msg_free(&b);
    }
}

/* ---- round trips ------------------------------------------------------------- */

TEST(MsgRoundTrip, Hello)
{
    Bytes m = hello_msg();
    msg_reader r;
    open_ok(&r, m, MSG_HELLO, 1);
    msg_hello h;
    pmc_error err{};
    ASSERT_EQ(1, msg_next_hello(&r, &h, &err)) << err.text;
    EXPECT_EQ(3u, h.host_rank);
    EXPECT_EQ(4u, h.host_ranks);
    EXPECT_EQ(16u, h.cpus);
    EXPECT_EQ(0u, h.gpus);
    EXPECT_EQ(64000u, h.memory_mb);
    EXPECT_STREQ("node17.cluster", h.hostname);
    EXPECT_EQ(0, msg_next_hello(&r, &h, &err));
    EXPECT_EQ(0, msg_next_hello(&r, &h, &err)); /* stays at the end */
}

TEST(MsgRoundTrip, TasksWithForwardsAndEmptyPegasusId)
{
    Bytes m = tasks_msg();
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 3);
    pmc_error err{};
    msg_task t;
    std::vector<std::string> argv3 = {"/bin/echo", "hello", "world"};

    ASSERT_EQ(1, msg_next_task(&r, &t, &err)) << err.text;
    EXPECT_EQ(1u, t.id);
    EXPECT_EQ(1u, t.attempt);
    EXPECT_EQ(2u, t.cpus);
    EXPECT_EQ(1024u, t.memory_mb);
    EXPECT_EQ(0u, t.flags);
    EXPECT_EQ(0u, t.gpus);
    EXPECT_EQ(0u, t.time_limit_ms);
    EXPECT_STREQ("ID000001", t.name);
    EXPECT_STREQ("pid-1", t.pegasus_id);
    EXPECT_EQ(argv3, argv_of(t));
    EXPECT_EQ(sizeof kFwd, t.fwd_len);
    EXPECT_TRUE(t.name >= (const char *)m.data() && t.name < (const char *)m.data() + m.size())
        << "decoding must be zero-copy";
    uint32_t pos = 0, kind = 9;
    const char *src, *dest;
    ASSERT_EQ(1, msg_task_next_fwd(&t, &pos, &kind, &src, &dest));
    EXPECT_EQ(0u, kind);
    EXPECT_STREQ("out.fifo", src);
    EXPECT_STREQ("/tmp/out", dest);
    ASSERT_EQ(1, msg_task_next_fwd(&t, &pos, &kind, &src, &dest));
    EXPECT_EQ(1u, kind);
    EXPECT_STREQ("res.txt", src);
    EXPECT_STREQ("/data/res.txt", dest);
    EXPECT_EQ(0, msg_task_next_fwd(&t, &pos, &kind, &src, &dest));

    ASSERT_EQ(1, msg_next_task(&r, &t, &err)) << err.text;
    EXPECT_EQ(2u, t.id);
    EXPECT_STREQ("", t.pegasus_id);
    EXPECT_EQ(argv3, argv_of(t));
    EXPECT_EQ(0u, t.nfwd);
    EXPECT_EQ(0u, t.fwd_len);
    pos = 0;
    EXPECT_EQ(0, msg_task_next_fwd(&t, &pos, &kind, &src, &dest));

    ASSERT_EQ(1, msg_next_task(&r, &t, &err)) << err.text;
    EXPECT_EQ(3u, t.id);
    EXPECT_EQ(std::vector<std::string>{"/bin/echo"}, argv_of(t));
    EXPECT_EQ(0, msg_next_task(&r, &t, &err));
}

TEST(MsgRoundTrip, ResultsWithDataBlocks)
{
    std::vector<uint8_t> big(1 << 20);
    std::mt19937 rng(7);
    for (auto &c : big)
        c = (uint8_t)rng();
    msgbuf b{}, pack{};
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 0, "stdout text\n", 12));
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 1, nullptr, 0)); /* zero-length block */
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 2, big.data(), (uint32_t)big.size()));
    ASSERT_EQ(3u, pack.count);
    msg_result in{42, 3, 0x0100, 0, 1700000123.456789, 12.5, pack.count, pack.data, pack.len};
    msg_result in2{43, 1, 0, 2 /* ENOENT */, -0.0, NAN, 0, nullptr, 0};
    ASSERT_EQ(0, msg_begin(&b, MSG_RESULTS));
    ASSERT_EQ(0, msg_add_result(&b, &in));
    ASSERT_EQ(0, msg_add_result(&b, &in2));
    Bytes m = take(&b);

    msg_reader r;
    open_ok(&r, m, MSG_RESULTS, 2);
    pmc_error err{};
    msg_result out;
    ASSERT_EQ(1, msg_next_result(&r, &out, &err)) << err.text;
    EXPECT_EQ(42u, out.id);
    EXPECT_EQ(3u, out.attempt);
    EXPECT_EQ(0x0100, out.status);
    EXPECT_EQ(0, out.exec_errno);
    EXPECT_EQ(1700000123.456789, out.start); /* bit-exact, not approximately */
    EXPECT_EQ(12.5, out.duration);
    EXPECT_EQ(3u, out.nfwd);
    EXPECT_EQ(pack.len, out.fwd_len);
    size_t pos = 0;
    uint32_t idx, len;
    const uint8_t *data;
    ASSERT_EQ(1, msg_result_next_fwd(&out, &pos, &idx, &data, &len));
    EXPECT_EQ(0u, idx);
    EXPECT_EQ(std::string("stdout text\n"), std::string((const char *)data, len));
    ASSERT_EQ(1, msg_result_next_fwd(&out, &pos, &idx, &data, &len));
    EXPECT_EQ(1u, idx);
    EXPECT_EQ(0u, len);
    ASSERT_EQ(1, msg_result_next_fwd(&out, &pos, &idx, &data, &len));
    EXPECT_EQ(2u, idx);
    ASSERT_EQ(big.size(), len);
    EXPECT_EQ(0, memcmp(big.data(), data, len));
    EXPECT_EQ(0, msg_result_next_fwd(&out, &pos, &idx, &data, &len));

    ASSERT_EQ(1, msg_next_result(&r, &out, &err)) << err.text;
    EXPECT_EQ(43u, out.id);
    EXPECT_EQ(2, out.exec_errno);
    EXPECT_TRUE(std::signbit(out.start) && out.start == 0.0);
    EXPECT_TRUE(std::isnan(out.duration));
    EXPECT_EQ(0u, out.nfwd);
    EXPECT_EQ(0, msg_next_result(&r, &out, &err));
    msg_free(&b);
    msg_free(&pack);
}

TEST(MsgRoundTrip, NegativeWaitStatusAndZeroCountBatch)
{
    msgbuf b{};
    msg_result in{1, 1, INT32_MIN, INT32_MAX, 0, 0, 0, nullptr, 0};
    ASSERT_EQ(0, msg_begin(&b, MSG_RESULTS));
    ASSERT_EQ(0, msg_add_result(&b, &in));
    Bytes m = take(&b);
    msg_reader r;
    open_ok(&r, m, MSG_RESULTS, 1);
    msg_result out;
    pmc_error err{};
    ASSERT_EQ(1, msg_next_result(&r, &out, &err));
    EXPECT_EQ(INT32_MIN, out.status);
    EXPECT_EQ(INT32_MAX, out.exec_errno);

    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS)); /* an empty batch is valid */
    m = take(&b);
    open_ok(&r, m, MSG_TASKS, 0);
    msg_task t;
    EXPECT_EQ(0, msg_next_task(&r, &t, &err));
    msg_free(&b);
}

TEST(MsgRoundTrip, StartedBitExact)
{
    /* Doubles that a lossy encoding (text, float, scaling) would change. */
    const double starts[] = {1700000123.456789,
                             1.0 / 3,
                             -0.0,
                             DBL_MIN / 4, /* subnormal */
                             DBL_MAX,
                             -INFINITY,
                             from_bits(0x7ff8000000000123ull), /* NaN with a payload */
                             0.0};
    const size_t n = sizeof starts / sizeof starts[0];
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_STARTED));
    for (size_t i = 0; i < n; i++) {
        msg_started s{(uint32_t)i * 1000 + 1, (uint32_t)i % 3 + 1, starts[i]};
        ASSERT_EQ(0, msg_add_started(&b, &s));
    }
    Bytes m = take(&b);
    EXPECT_EQ(16 + 16 * n, m.size());

    msg_reader r;
    open_ok(&r, m, MSG_STARTED, (uint32_t)n);
    pmc_error err{};
    msg_started out;
    for (size_t i = 0; i < n; i++) {
        ASSERT_EQ(1, msg_next_started(&r, &out, &err)) << "item " << i << ": " << err.text;
        EXPECT_EQ((uint32_t)i * 1000 + 1, out.id);
        EXPECT_EQ((uint32_t)i % 3 + 1, out.attempt);
        EXPECT_EQ(bits(starts[i]), bits(out.start)) << "item " << i;
    }
    EXPECT_EQ(0, msg_next_started(&r, &out, &err));
    EXPECT_EQ(0, msg_next_started(&r, &out, &err)); /* stays at the end */

    ASSERT_EQ(0, msg_begin(&b, MSG_STARTED)); /* an empty batch is valid */
    m = take(&b);
    open_ok(&r, m, MSG_STARTED, 0);
    EXPECT_EQ(0, msg_next_started(&r, &out, &err));
    msg_free(&b);
}

TEST(MsgRoundTrip, TaskNotifyStartFlag)
{
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    msg_task t = sample_task(1);
    t.flags = MSG_TASK_NOTIFY_START;
    ASSERT_EQ(0, msg_add_task(&b, &t));
    t = sample_task(2); /* flags 0 */
    ASSERT_EQ(0, msg_add_task(&b, &t));
    Bytes m = take(&b);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 2);
    pmc_error err{};
    msg_task out;
    ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << err.text;
    EXPECT_EQ(1u, out.id);
    EXPECT_EQ(MSG_TASK_NOTIFY_START, out.flags);
    ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << err.text;
    EXPECT_EQ(2u, out.id);
    EXPECT_EQ(0u, out.flags);
    EXPECT_EQ(0, msg_next_task(&r, &out, &err));
    msg_free(&b);
}

/* Codec version 2: HELLO's former pad is gpus, any value of it is sent and
 * read back (version 1 required 0 there). */
TEST(MsgRoundTrip, HelloGpus)
{
    for (uint32_t gpus : {0u, 4u, 0xffffffffu}) {
        msgbuf b{};
        msg_hello h{2, 3, 8, gpus, 0x0102030405ull, "h"};
        ASSERT_EQ(0, msg_begin(&b, MSG_HELLO));
        ASSERT_EQ(0, msg_add_hello(&b, &h));
        Bytes m = take(&b);
        msg_free(&b);
        msg_reader r;
        open_ok(&r, m, MSG_HELLO, 1);
        msg_hello out{};
        pmc_error err{};
        ASSERT_EQ(1, msg_next_hello(&r, &out, &err)) << "gpus " << gpus << ": " << err.text;
        EXPECT_EQ(gpus, out.gpus);
        EXPECT_EQ(2u, out.host_rank); /* the neighbours are untouched */
        EXPECT_EQ(3u, out.host_ranks);
        EXPECT_EQ(8u, out.cpus);
        EXPECT_EQ(0x0102030405ull, out.memory_mb);
        EXPECT_STREQ("h", out.hostname);
        EXPECT_EQ(0, msg_next_hello(&r, &out, &err));
    }
}

/* Codec version 2: each TASKS item carries gpus and time_limit_ms (0: no
 * limit); items of one batch keep their own values. */
TEST(MsgRoundTrip, TaskGpusAndTimeLimit)
{
    struct Case {
        uint32_t gpus, time_limit_ms;
    };
    const Case cases[] = {{0, 0}, {1, 1},    {3, 86400000},
                          {8, 0}, {0, 1500}, {0xffffffffu, 0xffffffffu}};
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    uint32_t id = 0;
    for (const Case &c : cases) {
        msg_task t = sample_task(++id);
        t.flags = id % 2 ? MSG_TASK_NOTIFY_START : 0;
        t.gpus = c.gpus;
        t.time_limit_ms = c.time_limit_ms;
        t.priority = static_cast<int32_t>(id * 1000) - 3000 - (id == 6 ? INT32_MAX - 3000 : 0);
        if (id == 3) {
            t.nfwd = 2;
            t.fwd = kFwd;
        }
        ASSERT_EQ(0, msg_add_task(&b, &t));
    }
    Bytes m = take(&b);
    msg_free(&b);
    const uint32_t n = (uint32_t)(sizeof cases / sizeof cases[0]);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, n);
    pmc_error err{};
    std::vector<std::string> argv3 = {"/bin/echo", "hello", "world"};
    for (uint32_t i = 0; i < n; i++) {
        msg_task out{};
        ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << "item " << i << ": " << err.text;
        EXPECT_EQ(i + 1, out.id);
        EXPECT_EQ(cases[i].gpus, out.gpus) << "item " << i;
        EXPECT_EQ(cases[i].time_limit_ms, out.time_limit_ms) << "item " << i;
        EXPECT_EQ(static_cast<int32_t>((i + 1) * 1000) - 3000 - (i + 1 == 6 ? INT32_MAX - 3000 : 0),
                  out.priority)
            << "item " << i;
        EXPECT_EQ((i + 1) % 2 ? MSG_TASK_NOTIFY_START : 0u, out.flags);
        EXPECT_EQ(2u, out.cpus);
        EXPECT_EQ(1024u, out.memory_mb);
        EXPECT_STREQ("ID000001", out.name);
        EXPECT_STREQ("pid-1", out.pegasus_id);
        EXPECT_EQ(argv3, argv_of(out));
        EXPECT_EQ(i + 1 == 3 ? 2u : 0u, out.nfwd);
        EXPECT_EQ(i + 1 == 3 ? sizeof kFwd : 0u, out.fwd_len);
    }
    msg_task out{};
    EXPECT_EQ(0, msg_next_task(&r, &out, &err));
}

TEST(MsgRoundTrip, ManyItems)
{
    const uint32_t n = 100000;
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    std::vector<std::string> names(n);
    for (uint32_t i = 0; i < n; i++) {
        names[i] = "task" + std::to_string(i);
        msg_task t = sample_task(i);
        t.name = names[i].c_str();
        t.attempt = i % 5 + 1;
        ASSERT_EQ(0, msg_add_task(&b, &t));
    }
    Bytes m = take(&b);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, n);
    pmc_error err{};
    msg_task t;
    uint32_t seen = 0, bad = 0;
    while (msg_next_task(&r, &t, &err) == 1) {
        bad += t.id != seen || t.attempt != seen % 5 + 1 || names[seen] != t.name ||
               argv_of(t).size() != 3;
        seen++;
    }
    EXPECT_EQ(n, seen) << err.text;
    EXPECT_EQ(0u, bad);
    msg_free(&b);
}

/* ---- msgbuf ------------------------------------------------------------------ */

TEST(MsgBuf, ReuseDoesNotReallocate)
{
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    for (uint32_t i = 0; i < 64; i++) {
        msg_task t = sample_task(i);
        ASSERT_EQ(0, msg_add_task(&b, &t));
    }
    msg_end(&b);
    uint8_t *data = b.data;
    size_t cap = b.cap;
    for (int round = 0; round < 100; round++) {
        uint32_t items = (uint32_t)(round % 64) + 1;
        ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
        for (uint32_t i = 0; i < items; i++) {
            msg_task t = sample_task(1000 * (uint32_t)round + i);
            ASSERT_EQ(0, msg_add_task(&b, &t));
        }
        Bytes m = take(&b);
        ASSERT_EQ(data, b.data) << "round " << round;
        ASSERT_EQ(cap, b.cap);
        Outcome o = decode_all(m); /* a shorter message has no stale tail */
        ASSERT_EQ(0, o.rc) << o.err;
        ASSERT_EQ(items, o.items);
    }
    msg_free(&b);
    EXPECT_EQ(nullptr, b.data);
    EXPECT_EQ(0u, b.cap);
    ASSERT_EQ(0, msg_begin(&b, MSG_BYE)); /* usable again after msg_free */
    EXPECT_EQ(16u, msg_end(&b));
    msg_free(&b);
}

TEST(MsgBuf, GrowsGeometrically)
{
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    size_t cap = b.cap;
    int grows = 0;
    for (uint32_t i = 0; i < 200000; i++) {
        msg_task t = sample_task(i);
        ASSERT_EQ(0, msg_add_task(&b, &t));
        grows += b.cap != cap;
        cap = b.cap;
    }
    EXPECT_LE(grows, 20); /* 200000 x 73 bytes from 512: ~15 doublings */
    EXPECT_LE(b.cap, 2 * b.len);
    msg_free(&b);
}

TEST(MsgBuf, PackBufferReuse)
{
    msgbuf pack{};
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 5, "xyz", 3));
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 6, "q", 1));
    EXPECT_EQ(2u, pack.count);
    EXPECT_EQ(8u + 3 + 8 + 1, pack.len);
    uint8_t *data = pack.data;
    pack.len = pack.count = 0;
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 7, "ab", 2));
    EXPECT_EQ(data, pack.data);
    EXPECT_EQ(1u, pack.count);
    EXPECT_EQ(10u, pack.len);
    msg_result r{};
    r.nfwd = pack.count;
    r.fwd = pack.data;
    r.fwd_len = pack.len;
    size_t pos = 0;
    uint32_t idx, len;
    const uint8_t *d;
    ASSERT_EQ(1, msg_result_next_fwd(&r, &pos, &idx, &d, &len));
    EXPECT_EQ(7u, idx);
    EXPECT_EQ(0, memcmp("ab", d, 2));
    EXPECT_EQ(0, msg_result_next_fwd(&r, &pos, &idx, &d, &len));
    msg_free(&pack);
}

/* Snapshot of a msgbuf, to check that a failed call changed nothing. */
struct Snap {
    uint8_t *data;
    size_t len, cap;
    uint32_t count;
    Bytes bytes;
    explicit Snap(const msgbuf &b)
        : data(b.data), len(b.len), cap(b.cap), count(b.count), bytes(b.data, b.data + b.len)
    {
    }
    bool same(const msgbuf &b) const
    {
        return data == b.data && len == b.len && cap == b.cap && count == b.count &&
               Bytes(b.data, b.data + b.len) == bytes;
    }
};

TEST(MsgBuf, TooLargeLeavesBufferUnchanged)
{
    if (sizeof(size_t) < 8)
        GTEST_SKIP() << "needs 64-bit size_t";
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_RESULTS));
    msg_result small{1, 1, 0, 0, 0, 0, 0, nullptr, 0};
    ASSERT_EQ(0, msg_add_result(&b, &small));
    Snap before(b);
    /* fwd is never read: the size check comes first. */
    msg_result huge{2, 1, 0, 0, 0, 0, 1, (const uint8_t *)"", (size_t)1 << 32};
    errno = 0;
    EXPECT_EQ(-1, msg_add_result(&b, &huge));
    EXPECT_EQ(EMSGSIZE, errno);
    huge.fwd_len = SIZE_MAX - 10; /* the length sum would overflow */
    EXPECT_EQ(-1, msg_add_result(&b, &huge));
    ASSERT_TRUE(before.same(b));
    Outcome o = decode_all(take(&b));
    EXPECT_EQ(0, o.rc);
    EXPECT_EQ(1u, o.items);
    msg_free(&b);
}

/* A STARTED item that would pass 4 GiB - 1: b->len is forged (the size check
 * comes before any access to the storage), so no 4 GiB buffer is needed. */
TEST(MsgBuf, StartedTooLargeLeavesBufferUnchanged)
{
    if (sizeof(size_t) < 8)
        GTEST_SKIP() << "needs 64-bit size_t";
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_STARTED));
    msg_started s{1, 1, 2.5};
    ASSERT_EQ(0, msg_add_started(&b, &s));
    Snap before(b);
    size_t real_len = b.len;
    b.len = (size_t)UINT32_MAX - 15; /* 15 bytes left, the item needs 16 */
    errno = 0;
    EXPECT_EQ(-1, msg_add_started(&b, &s));
    EXPECT_EQ(EMSGSIZE, errno);
    EXPECT_EQ((size_t)UINT32_MAX - 15, b.len);
    b.len = real_len;
    ASSERT_TRUE(before.same(b));
    Outcome o = decode_all(take(&b));
    EXPECT_EQ(0, o.rc) << o.err;
    EXPECT_EQ(1u, o.items);
    msg_free(&b);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define PMC_SANITIZER_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define PMC_SANITIZER_ALLOCATOR 1
#endif
#endif

/* Make realloc fail for real: cap the address space just above its current
 * size and ask for 1 GiB more (source: a reserved, never-touched mapping). */
TEST(MsgBuf, OutOfMemoryLeavesBufferUnchanged)
{
#ifdef PMC_SANITIZER_ALLOCATOR
    GTEST_SKIP() << "the sanitizer allocator aborts instead of returning NULL";
#else
    const size_t gib = (size_t)1 << 30;
    void *src = mmap(nullptr, gib, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (src == MAP_FAILED)
        GTEST_SKIP() << "cannot reserve 1 GiB of address space";
    msgbuf b{}, pack{};
    ASSERT_EQ(0, msg_begin(&b, MSG_RESULTS));
    msg_result small{1, 1, 0, 0, 0, 0, 0, nullptr, 0};
    ASSERT_EQ(0, msg_add_result(&b, &small));
    ASSERT_EQ(0, msg_pack_fwd_data(&pack, 0, "a", 1));
    Snap before(b), pack_before(pack);

    unsigned long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    ASSERT_NE(nullptr, f);
    ASSERT_EQ(1, fscanf(f, "%lu", &pages));
    fclose(f);
    struct rlimit old, lim;
    ASSERT_EQ(0, getrlimit(RLIMIT_AS, &old));
    lim = old;
    lim.rlim_cur = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (64u << 20);
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < lim.rlim_cur)
        lim.rlim_cur = old.rlim_cur;
    if (setrlimit(RLIMIT_AS, &lim) != 0)
        GTEST_SKIP() << "cannot lower RLIMIT_AS";
    msg_result huge{2, 1, 0, 0, 0, 0, 1, (const uint8_t *)src, gib};
    errno = 0;
    int rc = msg_add_result(&b, &huge);
    int rc_errno = errno;
    errno = 0;
    int rc_pack = msg_pack_fwd_data(&pack, 1, src, (uint32_t)gib);
    int pack_errno = errno;
    ASSERT_EQ(0, setrlimit(RLIMIT_AS, &old));
    munmap(src, gib);

    EXPECT_EQ(-1, rc);
    EXPECT_EQ(ENOMEM, rc_errno);
    EXPECT_EQ(-1, rc_pack);
    EXPECT_EQ(ENOMEM, pack_errno);
    ASSERT_TRUE(before.same(b));
    ASSERT_TRUE(pack_before.same(pack));
    Outcome o = decode_all(take(&b));
    EXPECT_EQ(0, o.rc) << o.err;
    EXPECT_EQ(1u, o.items);
    msg_free(&b);
    msg_free(&pack);
#endif
}

/* ---- the reader -------------------------------------------------------------- */

TEST(MsgReader, WrongReaderForKindChangesNothing)
{
    Bytes m = tasks_msg();
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 3);
    msg_reader saved = r;
    pmc_error err{};
    msg_result res;
    msg_hello h;
    errno = 0;
    EXPECT_EQ(-1, msg_next_result(&r, &res, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("expected a RESULTS message, got TASKS", err.text);
    EXPECT_EQ(-1, msg_next_hello(&r, &h, &err));
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(0, decode_all(m).rc);
    msg_task t;
    EXPECT_EQ(1, msg_next_task(&r, &t, &err));
    EXPECT_EQ(1u, t.id);
}

TEST(MsgReader, StartedKindMismatch)
{
    pmc_error err{};
    /* STARTED read from a RESULTS message. */
    Bytes res_m = results_msg();
    msg_reader r;
    open_ok(&r, res_m, MSG_RESULTS, 2);
    msg_reader saved = r;
    msg_started st{99, 99, 9.5};
    errno = 0;
    EXPECT_EQ(-1, msg_next_started(&r, &st, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("expected a STARTED message, got RESULTS", err.text);
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(99u, st.id);
    EXPECT_EQ(9.5, st.start);
    msg_result res;
    EXPECT_EQ(1, msg_next_result(&r, &res, &err)); /* the right reader still works */
    EXPECT_EQ(7u, res.id);

    /* RESULTS (and TASKS, HELLO) read from a STARTED message. */
    Bytes st_m = started_msg();
    open_ok(&r, st_m, MSG_STARTED, 3);
    saved = r;
    errno = 0;
    EXPECT_EQ(-1, msg_next_result(&r, &res, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("expected a RESULTS message, got STARTED", err.text);
    msg_task t;
    EXPECT_EQ(-1, msg_next_task(&r, &t, &err));
    EXPECT_STREQ("expected a TASKS message, got STARTED", err.text);
    msg_hello h;
    EXPECT_EQ(-1, msg_next_hello(&r, &h, &err));
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(1, msg_next_started(&r, &st, &err));
    EXPECT_EQ(7u, st.id);
    EXPECT_EQ(1700000000.25, st.start);
    EXPECT_EQ(0, decode_all(st_m).rc);
}

TEST(MsgReader, FailedItemLeavesReaderAndOutputUnchanged)
{
    Bytes m = tasks_msg();
    m.push_back(0); /* a trailing byte: the last item fails */
    fix_length(m);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 3);
    pmc_error err{};
    msg_task t;
    ASSERT_EQ(1, msg_next_task(&r, &t, &err));
    ASSERT_EQ(1, msg_next_task(&r, &t, &err));
    msg_reader saved = r;
    msg_task t_saved = t;
    EXPECT_EQ(-1, msg_next_task(&r, &t, &err));
    EXPECT_STREQ("TASKS item 3: 1 trailing bytes after the last item", err.text);
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(0, memcmp(&t_saved, &t, sizeof t));
    EXPECT_EQ(-1, msg_next_task(&r, &t, &err)); /* fails the same way again */
}

TEST(MsgReader, NullErrIsAllowed)
{
    Bytes m = tasks_msg();
    msg_reader r;
    errno = 0;
    EXPECT_EQ(-1, msg_open(&r, m.data(), m.size() - 1, nullptr));
    EXPECT_EQ(EBADMSG, errno);
    m.pop_back();
    fix_length(m);
    ASSERT_EQ(0, msg_open(&r, m.data(), m.size(), nullptr));
    msg_task t;
    int rc;
    while ((rc = msg_next_task(&r, &t, nullptr)) == 1) {
    }
    EXPECT_EQ(-1, rc);
}

/* ---- hostile input: headers ---------------------------------------------------- */

TEST(MsgMalformed, Header)
{
    msg_reader r;
    pmc_error err{};
    EXPECT_EQ(-1, msg_open(&r, nullptr, 0, &err));
    EXPECT_STREQ("message of 0 bytes is shorter than the 16-byte header", err.text);

    Bytes m = hello_msg();
    Bytes x = m;
    x[0] ^= 1;
    expect_bad(x, "bad magic 0x504d4349");
    x = m;
    x[4] = 7;
    expect_bad(x, "version 7 not supported");
    for (uint8_t k : {0, 14, 15, 255}) {
        x = m;
        x[5] = k;
        expect_bad(x, "unknown kind " + std::to_string(k));
    }
    x = m;
    x[7] = 1;
    expect_bad(x, "reserved header field is 0x0100, expected 0");
    std::string got = " does not match " + std::to_string(m.size()) + " received";
    x = m;
    put32(x, 8, (uint32_t)m.size() + 4);
    expect_bad(x, "length " + std::to_string(m.size() + 4) + got);
    x = m;
    put32(x, 8, 12);
    expect_bad(x, "length 12" + got);
    x.resize(15);
    expect_bad(x, "message of 15 bytes is shorter than the 16-byte header");
}

/* A peer still speaking version 1 is refused by name, whatever the kind,
 * before anything of the body is looked at; r is left untouched. */
TEST(MsgMalformed, Version1IsRefused)
{
    static_assert(MSG_VERSION == 3, "update this test with the protocol");
    /* A version 1 HELLO as an old node sent it: u32 pad 0 where gpus is now. */
    // clang-format off
    const Bytes hello_v1 = {
        0x48, 0x43, 0x4d, 0x50, 1, MSG_HELLO, 0, 0, 43, 0, 0, 0, 1, 0, 0, 0,
        1, 0, 0, 0,  4, 0, 0, 0,  8, 0, 0, 0,  0, 0, 0, 0,  /* host_rank, host_ranks, cpus, pad */
        5, 4, 3, 2, 1, 0, 0, 0,  'n', '1', 0,               /* memory_mb, hostname */
    };
    // clang-format on
    msg_reader r{}, zero{};
    pmc_error err{};
    Exact e(hello_v1);
    errno = 0;
    EXPECT_EQ(-1, msg_open(&r, e.data(), e.len, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("version 1 not supported", err.text);
    EXPECT_EQ(0, memcmp(&zero, &r, sizeof r));

    /* A version 1 TASKS item had a 28-byte fixed part (no gpus, no time
     * limit): a whole, well-formed v1 item is still refused. */
    using namespace std::string_literals;
    Bytes tasks_v1 = {0x48, 0x43, 0x4d, 0x50, 1, MSG_TASKS, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    Bytes fixed(28, 0);
    put32(fixed, 0, 1);  /* id */
    put32(fixed, 4, 1);  /* attempt */
    put32(fixed, 20, 1); /* argc */
    tasks_v1.insert(tasks_v1.end(), fixed.begin(), fixed.end());
    const std::string strs = "n\0\0/bin/true\0"s;
    tasks_v1.insert(tasks_v1.end(), strs.begin(), strs.end());
    fix_length(tasks_v1);
    expect_bad(tasks_v1, "version 1 not supported");

    /* Every message we send, relabelled as version 1. */
    for (const Bytes &m : sample_msgs()) {
        ASSERT_EQ(MSG_VERSION, m[4]);
        Bytes x = m;
        x[4] = 1;
        Outcome o = decode_all(x);
        EXPECT_EQ(-1, o.rc);
        EXPECT_EQ(0u, o.items);
        EXPECT_EQ("version 1 not supported", o.err) << "kind " << (int)m[5];
    }
    for (msg_kind k : {MSG_SHUTDOWN, MSG_BYE, MSG_ABORT, MSG_DRAIN, MSG_RESUME, MSG_LOST,
                       MSG_PEER_LOST, MSG_LEAVING}) {
        msgbuf b{};
        ASSERT_EQ(0, msg_begin(&b, k));
        Bytes x = take(&b);
        msg_free(&b);
        x[4] = 1;
        expect_bad(x, "version 1 not supported");
    }
    /* Neither an older nor a newer version passes. */
    for (int v : {0, 2, MSG_VERSION + 1, 255}) {
        Bytes x = hello_msg();
        x[4] = (uint8_t)v;
        expect_bad(x, "version " + std::to_string(v) + " not supported");
    }
}

TEST(MsgMalformed, CountRules)
{
    Bytes x = hello_msg();
    put32(x, 12, 2);
    expect_bad(x, "HELLO count is 2, expected 1");
    put32(x, 12, 0);
    expect_bad(x, "HELLO count is 0 but " + std::to_string(x.size() - 16) +
                      " bytes follow the header");

    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_SHUTDOWN));
    Bytes s = take(&b);
    put32(s, 12, 1);
    expect_bad(s, "SHUTDOWN count is 1, expected 0");
    put32(s, 12, 0);
    s.insert(s.end(), {0, 0, 0, 0});
    fix_length(s);
    expect_bad(s, "SHUTDOWN count is 0 but 4 bytes follow the header");

    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    Bytes t = take(&b);
    t.push_back('x');
    fix_length(t);
    expect_bad(t, "TASKS count is 0 but 1 bytes follow the header");
    msg_free(&b);
}

TEST(MsgMalformed, CountLargerThanItems)
{
    Bytes x = tasks_msg();
    put32(x, 12, 4); /* one more than there are */
    Outcome o = decode_all(x);
    EXPECT_EQ(-1, o.rc);
    EXPECT_EQ(3u, o.items);
    EXPECT_EQ("TASKS item 4: message ends before the item (count says 4)", o.err);

    put32(x, 12, 1000000); /* cannot fit: refused before any item is read */
    o = decode_all(x);
    EXPECT_EQ(-1, o.rc);
    EXPECT_EQ(0u, o.items);
    EXPECT_NE(std::string::npos, o.err.find("TASKS count 1000000 cannot fit")) << o.err;

    Bytes y = results_msg(); /* 2 results; a third cannot fit in what is left */
    put32(y, 12, 3);
    o = decode_all(y);
    EXPECT_EQ(-1, o.rc);
    EXPECT_EQ(0u, o.items);
    EXPECT_EQ("RESULTS count 3 cannot fit in the " + std::to_string(y.size() - 16) +
                  " bytes after the header",
              o.err);
}

TEST(MsgMalformed, CountSmallerThanItemsIsTrailingBytes)
{
    Bytes x = tasks_msg();
    put32(x, 12, 2);
    Outcome o = decode_all(x);
    EXPECT_EQ(-1, o.rc);
    EXPECT_EQ(1u, o.items); /* the second, last announced item fails */
    EXPECT_NE(std::string::npos, o.err.find("TASKS item 2:")) << o.err;
    EXPECT_NE(std::string::npos, o.err.find("trailing bytes after the last item")) << o.err;
}

TEST(MsgMalformed, TrailingBytes)
{
    for (const Bytes &m : sample_msgs()) {
        Bytes x = m;
        x.insert(x.end(), {1, 2, 3});
        fix_length(x);
        Outcome o = decode_all(x);
        EXPECT_EQ(-1, o.rc);
        EXPECT_NE(std::string::npos, o.err.find("3 trailing bytes after the last item")) << o.err;
    }
}

/* ---- hostile input: items, built byte by byte ----------------------------------- */

/* A TASKS message with one item whose fixed fields are given and whose
 * strings follow as raw bytes. */
Bytes raw_task(uint32_t argc, uint32_t nfwd, const std::string &tail)
{
    Bytes m = {0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_TASKS, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    Bytes fixed(40, 0);
    put32(fixed, 20, argc);
    put32(fixed, 24, nfwd);
    m.insert(m.end(), fixed.begin(), fixed.end());
    m.insert(m.end(), tail.begin(), tail.end());
    fix_length(m);
    return m;
}

Bytes raw_result(uint32_t nfwd, const Bytes &tail)
{
    Bytes m = {0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_RESULTS, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0};
    Bytes fixed(36, 0);
    put32(fixed, 32, nfwd);
    m.insert(m.end(), fixed.begin(), fixed.end());
    m.insert(m.end(), tail.begin(), tail.end());
    fix_length(m);
    return m;
}

TEST(MsgMalformed, RawTaskBaselineIsValid)
{
    using namespace std::string_literals;
    Outcome o = decode_all(raw_task(2, 1, "n\0p\0a\0b\0\1s\0d\0"s));
    EXPECT_EQ(0, o.rc) << o.err;
    EXPECT_EQ(1u, o.items);
    EXPECT_TRUE(o.in_bounds);

    /* gpus (offset 28), time_limit_ms (offset 32) and priority (offset 36)
     * take any value. */
    Bytes m = raw_task(1, 0, "n\0\0a\0"s);
    put32(m, 16 + 28, 0xffffffffu);
    put32(m, 16 + 32, 0x01020304u);
    put32(m, 16 + 36, 0x80000000u);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 1);
    msg_task t{};
    pmc_error err{};
    ASSERT_EQ(1, msg_next_task(&r, &t, &err)) << err.text;
    EXPECT_EQ(0xffffffffu, t.gpus);
    EXPECT_EQ(0x01020304u, t.time_limit_ms);
    EXPECT_EQ(INT32_MIN, t.priority);
    EXPECT_EQ(1u, t.argc);
    EXPECT_EQ(0u, t.nfwd);
    EXPECT_STREQ("n", t.name);
}

TEST(MsgMalformed, TaskFields)
{
    using namespace std::string_literals;
    expect_bad(raw_task(0, 0, "name-without-nul"s), "TASKS item 1: name runs past the end");
    expect_bad(raw_task(0, 0, "n\0pid"s), "TASKS item 1: pegasus_id runs past the end");
    expect_bad(raw_task(3, 0, "n\0\0a\0b\0c"s), "TASKS item 1: argv[2] runs past the end");
    expect_bad(raw_task(4, 0, "n\0\0a\0b\0c\0"s), "TASKS item 1: argv[3] runs past the end");
    expect_bad(raw_task(7, 0, "n\0\0a\0b\0c\0"s), "TASKS item 1: argc 7 exceeds the 6 bytes left");
    expect_bad(raw_task(0xffffffffu, 0, "n\0\0a\0b\0c\0"s),
               "TASKS item 1: argc 4294967295 exceeds the 6 bytes left");
    expect_bad(raw_task(1, 0xffffffffu, "n\0\0a\0\0s\0d\0"s),
               "TASKS item 1: nfwd 4294967295 exceeds the 5 bytes left");
    expect_bad(raw_task(1, 2, "n\0\0a\0\0s\0d\0\0\0"s),
               "TASKS item 1: forward 2: destination runs past the end");
    expect_bad(raw_task(1, 1, "n\0\0a\0\2s\0d\0"s),
               "TASKS item 1: forward 1 has kind 2, expected 0 or 1");
    expect_bad(raw_task(1, 1, "n\0\0a\0\1src"s),
               "TASKS item 1: forward 1: source runs past the end");
    expect_bad(raw_task(1, 0, "n\0\0a\0junk"s),
               "TASKS item 1: 4 trailing bytes after the last item");
    /* a task without a command: the agent would read argv[0] past the end */
    expect_bad(raw_task(0, 0, "n\0\0"s), "TASKS item 1: argc is 0");

    Bytes short_fixed = {0x48, 0x43, 0x4d, 0x50, MSG_VERSION, MSG_TASKS, 0, 0,
                         0,    0,    0,    0,    1,           0,         0, 0};
    short_fixed.resize(16 + 42, 0xff); /* enough for the count check, no NUL anywhere */
    put32(short_fixed, 16 + 16, 0);    /* but known flags, so the name is reached */
    fix_length(short_fixed);
    expect_bad(short_fixed, "TASKS item 1: name runs past the end");
    put32(short_fixed, 16 + 16, 0xffffffffu); /* flags are checked first */
    expect_bad(short_fixed, "TASKS item 1: flags 0xffffffff have unknown bits 0xfffffff0");
    put32(short_fixed, 16 + 16, MSG_TASK_NOTIFY_START);
    expect_bad(short_fixed, "TASKS item 1: name runs past the end");
}

TEST(MsgMalformed, ResultFields)
{
    Bytes block = {9, 0, 0, 0, 3, 0, 0, 0, 'a', 'b', 'c'};
    Outcome o = decode_all(raw_result(1, block));
    EXPECT_EQ(0, o.rc) << o.err; /* the baseline is valid */

    Bytes longer = block;
    longer[4] = 4;
    expect_bad(raw_result(1, longer), "RESULTS item 1: data block 1 (4 bytes) runs past the end");
    Bytes huge = block;
    put32(huge, 4, 0xffffffffu); /* len + 8 would wrap a 32-bit sum */
    expect_bad(raw_result(1, huge),
               "RESULTS item 1: data block 1 (4294967295 bytes) runs past the end");
    expect_bad(raw_result(0xffffffffu, block), "RESULTS item 1: nfwd 4294967295 exceeds the 11");
    Bytes two = block;
    two.insert(two.end(), {1, 0, 0, 0, 0, 0, 0}); /* second block header cut short */
    expect_bad(raw_result(2, two), "RESULTS item 1: data block 2 runs past the end");
    expect_bad(raw_result(2, block), "RESULTS item 1: nfwd 2 exceeds the 11 bytes left");
}

TEST(MsgMalformed, HelloFields)
{
    Bytes m = hello_msg();
    /* Bytes 12..15 of the item were version 1's pad, which had to be 0; as
     * gpus they take any value, and only gpus changes. */
    for (uint32_t gpus : {1u, 2u, 0x80u, 0x100u, 0x01020304u, 0x80000000u, 0xffffffffu}) {
        Bytes x = m;
        put32(x, 16 + 12, gpus);
        msg_reader r;
        open_ok(&r, x, MSG_HELLO, 1);
        msg_hello h{};
        pmc_error err{};
        ASSERT_EQ(1, msg_next_hello(&r, &h, &err)) << "gpus " << gpus << ": " << err.text;
        EXPECT_EQ(gpus, h.gpus);
        EXPECT_EQ(16u, h.cpus);
        EXPECT_EQ(64000u, h.memory_mb);
        EXPECT_STREQ("node17.cluster", h.hostname);
    }
    Bytes x = m;
    x.back() = 'x'; /* hostname loses its NUL */
    expect_bad(x, "HELLO item 1: hostname runs past the end");
}

TEST(MsgMalformed, TaskUnknownFlags)
{
    using namespace std::string_literals;
    Bytes ok = raw_task(1, 0, "n\0\0a\0"s);
    put32(ok, 16 + 16, MSG_TASK_NOTIFY_START);
    Outcome o = decode_all(ok);
    EXPECT_EQ(0, o.rc) << o.err; /* the known bits are accepted */
    EXPECT_EQ(1u, o.items);
    Bytes both = ok;
    put32(both, 16 + 16, MSG_TASK_NOTIFY_START | MSG_TASK_RELEASES | MSG_TASK_HOLD_ON_FAILURE);
    o = decode_all(both);
    EXPECT_EQ(0, o.rc) << o.err;

    Bytes x = ok;
    put32(x, 16 + 16, 0x10);
    expect_bad(x, "TASKS item 1: flags 0x10 have unknown bits 0x10");
    put32(x, 16 + 16, 0x80000001u);
    expect_bad(x, "TASKS item 1: flags 0x80000001 have unknown bits 0x80000000");
    for (int bit = 3; bit < 32; bit++) {
        put32(x, 16 + 16, 1u << bit);
        o = decode_all(x);
        EXPECT_EQ(-1, o.rc) << "bit " << bit;
        EXPECT_EQ(0u, o.items);
    }

    /* A bad item after a good one: the reader stops there, unchanged. */
    msgbuf b{};
    ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
    msg_task t = sample_task(1);
    ASSERT_EQ(0, msg_add_task(&b, &t));
    t = sample_task(2);
    ASSERT_EQ(0, msg_add_task(&b, &t));
    Bytes m = take(&b);
    size_t second = 16 + (m.size() - 16) / 2; /* both items have the same size */
    put32(m, second + 16, 0x10);
    msg_reader r;
    open_ok(&r, m, MSG_TASKS, 2);
    pmc_error err{};
    msg_task out;
    ASSERT_EQ(1, msg_next_task(&r, &out, &err)) << err.text;
    msg_reader saved = r;
    errno = 0;
    EXPECT_EQ(-1, msg_next_task(&r, &out, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("TASKS item 2: flags 0x10 have unknown bits 0x10", err.text);
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(1u, out.id);
    msg_free(&b);
}

/* msg_open()'s count check keeps a short STARTED item from reaching the
 * reader; a reader set up by hand checks it again on its own. */
TEST(MsgMalformed, StartedItemShorterThan16Bytes)
{
    Bytes body(15, 0);
    Exact e(body);
    msg_reader r{e.data(), e.data() + e.len, MSG_STARTED, 1, 1};
    msg_reader saved = r;
    msg_started st{5, 5, 5.0};
    pmc_error err{};
    errno = 0;
    EXPECT_EQ(-1, msg_next_started(&r, &st, &err));
    EXPECT_EQ(EBADMSG, errno);
    EXPECT_STREQ("STARTED item 1: fields run past the end of the message", err.text);
    EXPECT_EQ(0, memcmp(&saved, &r, sizeof r));
    EXPECT_EQ(5u, st.id);
    EXPECT_EQ(-1, msg_next_started(&r, &st, nullptr)); /* fails the same way again */
}

TEST(MsgMalformed, StartedTrailingBytes)
{
    Bytes m = started_msg();
    for (size_t extra : {1, 3, 15, 16, 17}) {
        Bytes x = m;
        x.insert(x.end(), extra, 0);
        fix_length(x);
        Outcome o = decode_all(x);
        EXPECT_EQ(-1, o.rc);
        EXPECT_EQ(2u, o.items); /* the last announced item fails */
        EXPECT_EQ("STARTED item 3: " + std::to_string(extra) +
                      " trailing bytes after the last item",
                  o.err);
    }
    /* Count 0 with a body, and count 2 of 3 items. */
    Bytes x = m;
    put32(x, 12, 0);
    expect_bad(x, "STARTED count is 0 but 48 bytes follow the header");
    put32(x, 12, 2);
    expect_bad(x, "STARTED item 2: 16 trailing bytes after the last item");
}

TEST(MsgMalformed, IteratorsRefuseBadPackedData)
{
    Bytes blocks = {1, 0, 0, 0, 5, 0, 0, 0, 'a', 'b'};
    msg_result r{};
    r.nfwd = 1;
    r.fwd = blocks.data();
    r.fwd_len = blocks.size();
    size_t pos = 0;
    uint32_t idx, len;
    const uint8_t *d;
    EXPECT_EQ(-1, msg_result_next_fwd(&r, &pos, &idx, &d, &len));
    r.fwd_len = 7; /* block header cut short */
    EXPECT_EQ(-1, msg_result_next_fwd(&r, &pos, &idx, &d, &len));
    pos = 11; /* past the end */
    r.fwd_len = blocks.size();
    EXPECT_EQ(-1, msg_result_next_fwd(&r, &pos, &idx, &d, &len));

    const char fwd[] = {2, 's', 0, 'd', 0};
    msg_task t{};
    t.nfwd = 1;
    t.fwd = fwd;
    t.fwd_len = sizeof fwd;
    uint32_t tpos = 0, kind;
    const char *src, *dest;
    EXPECT_EQ(-1, msg_task_next_fwd(&t, &tpos, &kind, &src, &dest)); /* kind 2 */
    const char fwd2[] = {1, 's', 0, 'd'};
    t.fwd = fwd2;
    t.fwd_len = sizeof fwd2;
    EXPECT_EQ(-1, msg_task_next_fwd(&t, &tpos, &kind, &src, &dest)); /* dest has no NUL */
    tpos = 9;
    EXPECT_EQ(-1, msg_task_next_fwd(&t, &tpos, &kind, &src, &dest));
}

/* ---- hostile input: exhaustive and random -------------------------------------- */

TEST(MsgMalformed, TruncatedAtEveryLength)
{
    for (const Bytes &m : sample_msgs()) {
        for (size_t n = 0; n < m.size(); n++) {
            Exact e(m.data(), n);
            msg_reader r;
            pmc_error err{};
            ASSERT_EQ(-1, msg_open(&r, e.data(), n, &err)) << "length " << n;
            if (n < 16)
                continue;
            /* Make the header agree, so the item readers meet the cut. */
            Bytes cut(m.begin(), m.begin() + (long)n);
            fix_length(cut);
            Outcome o = decode_all(cut);
            ASSERT_EQ(-1, o.rc) << "kind " << (int)m[5] << ", cut at " << n;
            ASSERT_TRUE(o.in_bounds);
        }
    }
}

TEST(MsgMalformed, EveryByteEveryValue)
{
    for (const Bytes &m : sample_msgs()) {
        size_t accepted = 0;
        for (size_t i = 0; i < m.size(); i++) {
            for (int v = 0; v < 256; v++) {
                if (v == m[i])
                    continue;
                Bytes x = m;
                x[i] = (uint8_t)v;
                Outcome o = decode_all(x);
                ASSERT_TRUE(o.in_bounds) << "byte " << i << " = " << v;
                /* Magic, version, reserved, length and count are checked exactly. */
                if (i < 16 && i != 5) {
                    ASSERT_EQ(-1, o.rc) << "header byte " << i << " = " << v;
                }
                accepted += o.rc == 0;
            }
        }
        printf("[ info     ] kind %d, %zu bytes: %zu of %zu one-byte changes still valid\n",
               (int)m[5], m.size(), accepted, m.size() * 255);
    }
}

/* A random buffer; half of them get a plausible header so that the item
 * readers, not msg_open(), have to refuse them. */
Bytes random_msg(std::mt19937 &rng)
{
    std::uniform_int_distribution<int> len_d(0, 200), byte_d(0, 255), small_d(0, 7);
    Bytes m((size_t)len_d(rng));
    for (auto &c : m)
        c = (uint8_t)(small_d(rng) < 3 ? small_d(rng) : byte_d(rng)); /* many small values */
    if (m.size() >= 16 && rng() % 2) {
        const uint8_t kinds[] = {MSG_HELLO, MSG_TASKS, MSG_RESULTS, MSG_STARTED};
        Bytes h = {0x48, 0x43, 0x4d, 0x50, MSG_VERSION, kinds[rng() % 4], 0, 0};
        std::copy(h.begin(), h.end(), m.begin());
        fix_length(m);
        put32(m, 12, rng() % 4);
    }
    return m;
}

TEST(MsgFuzz, RandomBytes)
{
    std::mt19937 rng(12345);
    size_t opened = 0, accepted = 0;
    for (int i = 0; i < 200000; i++) {
        Bytes m = random_msg(rng);
        Outcome o = decode_all(m);
        ASSERT_TRUE(o.in_bounds) << "iteration " << i;
        opened += o.rc == 0 || o.items > 0 || o.err.find("item") != std::string::npos;
        accepted += o.rc == 0 && o.items > 0;
    }
    EXPECT_GT(opened, 1000u) << "the fuzzer must get past msg_open() often";
    printf("[ info     ] 200000 random buffers: %zu reached the item readers, %zu valid\n", opened,
           accepted);
}

TEST(MsgFuzz, MutatedValidMessages)
{
    std::mt19937 rng(777);
    std::vector<Bytes> base = sample_msgs();
    size_t accepted = 0;
    for (int i = 0; i < 100000; i++) {
        Bytes m = base[(size_t)i % base.size()];
        int edits = (int)(rng() % 4) + 1;
        for (int e = 0; e < edits; e++) {
            size_t at = 16 + rng() % (m.size() - 16);
            switch (rng() % 3) {
            case 0:
                m[at] = (uint8_t)rng();
                break;
            case 1:
                m.erase(m.begin() + (long)at);
                break;
            default:
                m.insert(m.begin() + (long)at, (uint8_t)(rng() % 3));
            }
        }
        fix_length(m);
        Outcome o = decode_all(m);
        ASSERT_TRUE(o.in_bounds) << "iteration " << i;
        accepted += o.rc == 0;
    }
    printf("[ info     ] 100000 mutated messages: %zu still valid\n", accepted);
}

/* ---- throughput (informational) ------------------------------------------------ */

TEST(MsgPerf, TaskEncodeDecodeThroughput)
{
    const uint32_t batch = 64, rounds = 20000;
    msgbuf b{};
    msg_task t = sample_task(0);
    uint64_t sink = 0;
    double enc_ns = 0, dec_ns = 0;
    for (uint32_t round = 0; round < rounds; round++) {
        auto t0 = std::chrono::steady_clock::now();
        ASSERT_EQ(0, msg_begin(&b, MSG_TASKS));
        for (uint32_t i = 0; i < batch; i++) {
            t.id = i;
            msg_add_task(&b, &t);
        }
        size_t len = msg_end(&b);
        auto t1 = std::chrono::steady_clock::now();
        msg_reader r;
        msg_task out;
        ASSERT_EQ(0, msg_open(&r, b.data, len, nullptr));
        while (msg_next_task(&r, &out, nullptr) == 1)
            sink += out.id + (uint8_t)out.argv[0];
        auto t2 = std::chrono::steady_clock::now();
        enc_ns += std::chrono::duration<double, std::nano>(t1 - t0).count();
        dec_ns += std::chrono::duration<double, std::nano>(t2 - t1).count();
    }
    double items = (double)batch * rounds;
    EXPECT_EQ((uint64_t)rounds * (batch * (batch - 1) / 2 + batch * (uint8_t)'/'), sink);
    printf("[ info     ] TASKS item, 3-word argv: encode %.1f ns/item, decode %.1f ns/item, "
           "total %.1f ns/item\n",
           enc_ns / items, dec_ns / items, (enc_ns + dec_ns) / items);
    msg_free(&b);
}

} // namespace
