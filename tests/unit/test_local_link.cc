// test_local_link.cc - unit tests of engine/transport/local_link.h (rank 0's master
// and its own agent without messages) and of the DAG-side item builders it
// relies on (io/msg.h: msg_task_from_dag, msg_pack_forwards).
//
// Checked: a task built from the DAG equals the item a TASKS message
// carries after encoding and decoding (forwards included); the rings hold
// the most a node can have committed (CPUs + prefetch window tasks, twice
// as many events) in order and refuse one more with ENOBUFS; the rings are
// watched channels of the mailboxes (a consumer does not go to sleep on a
// non-empty ring); a consumer parked in mailbox_wait(-1) is woken by
// local_link_notify_*() and two threads ping-pong 20,000 tasks and events
// through the sleep path without a lost wake-up (a watchdog fails the test
// instead of hanging); events never taken are freed with the link
// (LeakSanitizer).  Run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include <errno.h>

#include "engine/transport/local_link.h"
#include "io/msg.h"
#include "sched/placement.h"
#include "testutil.h"

namespace
{

using namespace std::chrono_literals;

#ifdef PMC_TEST_TSAN
constexpr uint32_t kRounds = 2000;
#else
constexpr uint32_t kRounds = 20000;
#endif

// One task "fwd" with a pipe forward and a file forward, and a #@ id.
testutil::DagPtr forward_dag()
{
    testutil::DagPtr d(dag_create(), dag_destroy);
    EXPECT_NE(d, nullptr);
    static const char *const argv[] = {"/bin/echo", "a b", ""};
    static const size_t argv_len[] = {9, 3, 0};
    const dag_task_spec::dag_forward_spec fwd[] = {
        {DAG_FORWARD_PIPE, "OUT", 3, "out.txt", 7},
        {DAG_FORWARD_FILE, "src.dat", 7, "dest.dat", 8},
    };
    dag_task_spec s{};
    s.name = "fwd";
    s.name_len = 3;
    s.pegasus_id = "ID7";
    s.pegasus_id_len = 3;
    s.argv = argv;
    s.argv_len = argv_len;
    s.argc = 3;
    s.cpus = 2;
    s.memory_mb = 300;
    s.gpus = 1;
    s.priority = -4;
    s.line = 1;
    s.forwards = fwd;
    s.nforwards = 2;
    dag_task_t id;
    EXPECT_EQ(dag_add_task(d.get(), &s, &id), 0);
    pmc_error err{};
    EXPECT_EQ(dag_finish(d.get(), &err), 0) << err.text;
    return d;
}

std::string argv_bytes(const msg_task &t)
{
    size_t n = 0;
    for (uint32_t i = 0; i < t.argc; i++)
        n += strlen(t.argv + n) + 1;
    return std::string(t.argv, n);
}

TEST(LocalLinkItem, TaskFromDagEqualsTheDecodedMessageItem)
{
    testutil::DagPtr d = forward_dag();
    msg_task built;
    msg_task_from_dag(d.get(), 0, &built);
    char *buf = nullptr;
    size_t cap = 0;
    ASSERT_EQ(msg_pack_forwards(d.get(), 0, &buf, &cap, &built.fwd_len), 0);
    built.fwd = buf;
    built.attempt = 3;
    built.flags = MSG_TASK_NOTIFY_START;
    built.time_limit_ms = 1500;

    msgbuf b{};
    ASSERT_EQ(msg_begin(&b, MSG_TASKS), 0);
    ASSERT_EQ(msg_add_task(&b, &built), 0);
    msg_end(&b);
    msg_reader r;
    pmc_error err{};
    ASSERT_EQ(msg_open(&r, b.data, b.len, &err), 0) << err.text;
    msg_task got;
    ASSERT_EQ(msg_next_task(&r, &got, &err), 1) << err.text;

    EXPECT_EQ(got.id, 0u);
    EXPECT_EQ(got.cpus, 2u);
    EXPECT_EQ(got.memory_mb, 300u);
    EXPECT_EQ(got.gpus, 1u);
    EXPECT_EQ(got.priority, -4);
    EXPECT_STREQ(got.name, "fwd");
    EXPECT_STREQ(got.pegasus_id, "ID7");
    EXPECT_EQ(got.argc, 3u);
    EXPECT_EQ(argv_bytes(got), argv_bytes(built));
    EXPECT_EQ(argv_bytes(got), std::string("/bin/echo\0a b\0\0", 15));
    EXPECT_EQ(got.nfwd, 2u);
    ASSERT_EQ(got.fwd_len, built.fwd_len);
    EXPECT_EQ(memcmp(got.fwd, built.fwd, got.fwd_len), 0);
    uint32_t pos = 0, kind;
    const char *src, *dest;
    ASSERT_EQ(msg_task_next_fwd(&built, &pos, &kind, &src, &dest), 1);
    EXPECT_EQ(kind, static_cast<uint32_t>(DAG_FORWARD_PIPE));
    EXPECT_STREQ(src, "OUT");
    EXPECT_STREQ(dest, "out.txt");
    ASSERT_EQ(msg_task_next_fwd(&built, &pos, &kind, &src, &dest), 1);
    EXPECT_EQ(kind, static_cast<uint32_t>(DAG_FORWARD_FILE));
    EXPECT_STREQ(src, "src.dat");
    EXPECT_STREQ(dest, "dest.dat");
    EXPECT_EQ(msg_task_next_fwd(&built, &pos, &kind, &src, &dest), 0);
    msg_free(&b);
    free(buf);
}

// A link between two mailboxes, wired as the engine wires it: each
// consumer watches its own ring (master_set_local_link, agent_start).
class LinkTest : public ::testing::Test
{
  protected:
    void make(uint32_t cpus)
    {
        ASSERT_EQ(mailbox_init(&master_), 0);
        ASSERT_EQ(mailbox_init(&agent_), 0);
        boxes_ = true;
        pmc_error err{};
        link_ = local_link_create(dag_.get(), cpus, &master_, &agent_, &err);
        ASSERT_NE(link_, nullptr) << err.text;
        mailbox_watch(&master_, events_waiting, link_);
        mailbox_watch(&agent_, tasks_waiting, link_);
    }
    void TearDown() override
    {
        local_link_destroy(link_);
        if (boxes_) {
            mailbox_destroy(&master_);
            mailbox_destroy(&agent_);
        }
    }
    static bool tasks_waiting(void *l)
    {
        return local_link_tasks_waiting(static_cast<local_link *>(l));
    }
    static bool events_waiting(void *l)
    {
        return local_link_events_waiting(static_cast<local_link *>(l));
    }

    testutil::DagPtr dag_ = testutil::make_dag({"a"});
    mailbox master_{}, agent_{};
    bool boxes_ = false;
    local_link *link_ = nullptr;
};

TEST_F(LinkTest, RingsHoldWhatANodeCanHaveCommittedInOrder)
{
    const uint32_t cpus = 4;
    const uint32_t most = cpus + placement_window(cpus);
    make(cpus);
    EXPECT_EQ(local_link_dag(link_), dag_.get());
    for (uint32_t i = 0; i < most; i++) {
        local_task t{i, 1, 0, i};
        ASSERT_TRUE(local_link_send_task(link_, &t)) << i;
    }
    for (uint32_t i = 0; i < 2 * most; i++) {
        local_event ev{};
        ev.kind = i % 2 ? LOCAL_RESULT : LOCAL_STARTED;
        if (ev.kind == LOCAL_RESULT)
            ev.result.id = i;
        else
            ev.started.id = i;
        ASSERT_TRUE(local_link_send_event(link_, &ev)) << i;
    }
    // the capacity is a power of two: fill it, then one more is refused
    local_task extra{};
    while (local_link_send_task(link_, &extra))
        extra.id++;
    EXPECT_EQ(errno, ENOBUFS);
    local_task t;
    for (uint32_t i = 0; i < most; i++) {
        ASSERT_TRUE(local_link_take_task(link_, &t));
        EXPECT_EQ(t.id, i);
        EXPECT_EQ(t.time_limit_ms, i);
    }
    local_event ev;
    for (uint32_t i = 0; i < 2 * most; i++) {
        ASSERT_TRUE(local_link_take_event(link_, &ev));
        EXPECT_EQ(ev.kind, i % 2 ? LOCAL_RESULT : LOCAL_STARTED);
        EXPECT_EQ(ev.kind == LOCAL_RESULT ? ev.result.id : ev.started.id, i);
    }
    EXPECT_FALSE(local_link_take_event(link_, &ev));
}

TEST_F(LinkTest, ConsumersDoNotSleepOnAFullRing)
{
    make(1);
    EXPECT_FALSE(local_link_tasks_waiting(link_));
    EXPECT_EQ(mailbox_prepare_sleep(&agent_), 0);
    mailbox_awake(&agent_);
    local_task t{7, 1, 0, 0};
    ASSERT_TRUE(local_link_send_task(link_, &t));
    EXPECT_TRUE(local_link_tasks_waiting(link_));
    EXPECT_EQ(mailbox_prepare_sleep(&agent_), 1); // the ring counts as mail
    EXPECT_EQ(mailbox_spin(&agent_, 10, nullptr, nullptr), 1);
    EXPECT_EQ(mailbox_prepare_sleep(&master_), 0); // the tasks are not its ring
    mailbox_awake(&master_);
    local_event ev{};
    ev.kind = LOCAL_RESULT;
    ASSERT_TRUE(local_link_send_event(link_, &ev));
    EXPECT_TRUE(local_link_events_waiting(link_));
    EXPECT_EQ(mailbox_prepare_sleep(&master_), 1);
}

TEST_F(LinkTest, EventsNeverTakenAreFreedWithTheLink)
{
    make(2);
    local_event ev{};
    ev.kind = LOCAL_RESULT;
    ev.result.fwd = static_cast<uint8_t *>(malloc(64));
    ev.result.fwd_len = 64;
    ASSERT_TRUE(local_link_send_event(link_, &ev));
    // TearDown destroys the link: LeakSanitizer reports the 64 bytes if
    // they are not freed with it
}

// The agent thread takes each task and answers with an event; the master
// waits for it.  Both park in mailbox_wait(-1) whenever their ring is empty,
// so every round crosses the sleep path; a lost wake-up hangs one of them
// and the watchdog ends the test as a failure.
TEST_F(LinkTest, PingPongThroughTheSleepPathLosesNoWakeUp)
{
    make(1);
    local_link *l = link_;
    std::atomic<bool> done{false}, stuck{false};
    std::thread watchdog([&] {
        auto end = std::chrono::steady_clock::now() + 60s;
        while (!done.load()) {
            if (std::chrono::steady_clock::now() > end) {
                stuck = true;
                mailbox_wake(&master_);
                mailbox_wake(&agent_);
            }
            std::this_thread::sleep_for(10ms);
        }
    });
    std::thread agent([&] {
        for (uint32_t i = 0; i < kRounds && !stuck.load();) {
            local_task t;
            if (!local_link_take_task(l, &t)) {
                mailbox_wait(&agent_, -1);
                continue;
            }
            EXPECT_EQ(t.id, i);
            local_event ev{};
            ev.kind = LOCAL_RESULT;
            ev.result.id = t.id;
            EXPECT_TRUE(local_link_send_event(l, &ev));
            local_link_notify_master(l);
            i++;
        }
    });
    uint32_t answered = 0;
    for (uint32_t i = 0; i < kRounds && !stuck.load(); i++) {
        local_task t{i, 1, 0, 0};
        ASSERT_TRUE(local_link_send_task(l, &t));
        local_link_notify_agent(l);
        local_event ev;
        while (!local_link_take_event(l, &ev) && !stuck.load())
            mailbox_wait(&master_, -1);
        if (stuck.load())
            break;
        EXPECT_EQ(ev.result.id, i);
        answered++;
    }
    agent.join();
    done = true;
    watchdog.join();
    EXPECT_FALSE(stuck.load()) << "a wake-up was lost after " << answered << " rounds";
    EXPECT_EQ(answered, kRounds);
}

} // namespace
