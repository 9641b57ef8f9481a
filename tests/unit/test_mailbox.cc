// test_mailbox.cc - unit tests of engine/transport/mailbox.h (Vyukov MPSC queue with
// eventfd wake-ups).
//
// Order: FIFO in one thread, per-producer FIFO with 8 producers released
// together on a barrier (200,000 mails each, no loss, no duplicate, payload
// identity checked).  Wake-ups: a consumer blocked in mailbox_wait(-1) is
// woken by a push or by mailbox_wake from another thread, and a two-box
// ping-pong drives both threads through the sleep path thousands of times.
// Every blocking test runs under a watchdog: if a wake-up is lost the
// watchdog records it, keeps waking the boxes so the test ends, and the test
// fails instead of hanging.  mailbox_destroy's freeing of leftovers is
// checked by LeakSanitizer (ASan build) and by heap accounting otherwise.
// Run under ThreadSanitizer too.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <poll.h>
#include <unistd.h>

#include "engine/transport/mailbox.h"
#include "io/clock.h"
#include "testutil.h" // PMC_TEST_SANITIZED

namespace
{

using namespace std::chrono_literals;

// A mail whose 8-byte payload encodes (producer, seq); peer and tag repeat it
// so that a mix-up between header and payload is caught too.
struct mail *make_mail(uint32_t producer, uint32_t seq)
{
    auto *data = static_cast<uint8_t *>(malloc(8));
    if (!data)
        return nullptr;
    memcpy(data, &producer, 4);
    memcpy(data + 4, &seq, 4);
    return mail_new(static_cast<int>(producer), static_cast<int>(seq), data, 8);
}

void read_mail(const struct mail *m, uint32_t *producer, uint32_t *seq)
{
    memcpy(producer, m->data, 4);
    memcpy(seq, m->data + 4, 4);
}

bool efd_readable(const struct mailbox *mb)
{
    struct pollfd p = {mb->efd, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

// Bounded watchdog: if done() is not called within `limit`, it records that
// it fired and keeps calling mailbox_wake() on the given boxes (only write(2),
// safe from any thread) so that a consumer stuck on a lost wake-up returns.
class Watchdog
{
  public:
    Watchdog(std::vector<struct mailbox *> boxes, std::chrono::milliseconds limit)
        : boxes_(std::move(boxes)), thread_([this, limit] { run(limit); })
    {
    }
    ~Watchdog()
    {
        done();
        thread_.join();
    }
    void done()
    {
        std::lock_guard<std::mutex> lock(mu_);
        done_ = true;
        cv_.notify_all();
    }
    bool fired() const
    {
        return fired_.load();
    }

  private:
    void run(std::chrono::milliseconds limit)
    {
        std::unique_lock<std::mutex> lock(mu_);
        if (cv_.wait_for(lock, limit, [this] { return done_; }))
            return;
        fired_ = true;
        while (!cv_.wait_for(lock, 10ms, [this] { return done_; }))
            for (struct mailbox *mb : boxes_)
                mailbox_wake(mb);
    }

    std::vector<struct mailbox *> boxes_;
    std::mutex mu_;
    std::condition_variable cv_;
    bool done_ = false;
    std::atomic<bool> fired_{false};
    std::thread thread_;
};

// Start gate: threads arrive, spin until the last one (the releaser) opens it,
// so they all start pushing at the same moment.
class StartGate
{
  public:
    explicit StartGate(int n) : expected_(n) {}
    void arrive_and_wait()
    {
        if (arrived_.fetch_add(1) + 1 == expected_)
            open_.store(true);
        while (!open_.load())
            std::this_thread::yield();
    }

  private:
    const int expected_;
    std::atomic<int> arrived_{0};
    std::atomic<bool> open_{false};
};

class MailboxTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        ASSERT_EQ(mailbox_init(&mb_), 0) << strerror(errno);
    }
    void TearDown() override
    {
        mailbox_destroy(&mb_);
    }
    struct mailbox mb_;
};

TEST_F(MailboxTest, InitGivesNonBlockingCloexecEventfd)
{
    ASSERT_GE(mb_.efd, 0);
    int fl = fcntl(mb_.efd, F_GETFL);
    ASSERT_NE(fl, -1);
    EXPECT_TRUE(fl & O_NONBLOCK);
    int fdfl = fcntl(mb_.efd, F_GETFD);
    ASSERT_NE(fdfl, -1);
    EXPECT_TRUE(fdfl & FD_CLOEXEC);
    EXPECT_EQ(mailbox_pop(&mb_), nullptr);
    EXPECT_FALSE(efd_readable(&mb_));
}

TEST_F(MailboxTest, FifoSingleThread)
{
    const uint32_t n = 1000;
    for (uint32_t i = 0; i < n; i++)
        mailbox_push(&mb_, make_mail(7, i));
    for (uint32_t i = 0; i < n; i++) {
        struct mail *m = mailbox_pop(&mb_);
        ASSERT_NE(m, nullptr) << "mail " << i << " missing";
        uint32_t p, s;
        read_mail(m, &p, &s);
        EXPECT_EQ(p, 7u);
        EXPECT_EQ(s, i);
        EXPECT_EQ(m->peer, 7);
        EXPECT_EQ(m->tag, static_cast<int>(i));
        EXPECT_EQ(m->len, 8u);
        mail_free(m);
    }
    EXPECT_EQ(mailbox_pop(&mb_), nullptr);
}

// Emptying the box and refilling it repeatedly exercises the stub re-insertion
// path of the pop (the last node is only handed out after the stub is linked).
TEST_F(MailboxTest, FifoAcrossEmptyRefillCycles)
{
    uint32_t next_push = 0, next_pop = 0;
    for (uint32_t round = 0; round < 200; round++) {
        uint32_t k = round % 5; // 0..4 mails per round, 0 included
        for (uint32_t i = 0; i < k; i++)
            mailbox_push(&mb_, make_mail(1, next_push++));
        for (uint32_t i = 0; i < k; i++) {
            struct mail *m = mailbox_pop(&mb_);
            ASSERT_NE(m, nullptr) << "round " << round;
            EXPECT_EQ(m->tag, static_cast<int>(next_pop));
            next_pop++;
            mail_free(m);
        }
        ASSERT_EQ(mailbox_pop(&mb_), nullptr) << "round " << round;
    }
    EXPECT_EQ(next_pop, next_push);
}

TEST(MailNew, TakesOwnershipAndFreeIsNullSafe)
{
    auto *data = static_cast<uint8_t *>(malloc(3));
    ASSERT_NE(data, nullptr);
    memcpy(data, "abc", 3);
    struct mail *m = mail_new(4, 9, data, 3);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->peer, 4);
    EXPECT_EQ(m->tag, 9);
    EXPECT_EQ(m->len, 3u);
    EXPECT_EQ(m->data, data);
    EXPECT_EQ(m->next, nullptr);
    mail_free(m);
    mail_free(nullptr);
}

TEST_F(MailboxTest, PrepareSleepReturnsOneWhenNonEmpty)
{
    mailbox_push(&mb_, make_mail(0, 0));
    EXPECT_EQ(mailbox_prepare_sleep(&mb_), 1);
    EXPECT_EQ(mb_.sleeping.load(), 0) << "consumer left marked sleeping";
    mailbox_awake(&mb_);

    // Still non-empty after one of two mails is popped (the remaining node is
    // the tail, not yet handed out).
    mailbox_push(&mb_, make_mail(0, 1));
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->tag, 0);
    mail_free(m);
    EXPECT_EQ(mailbox_prepare_sleep(&mb_), 1);
    mailbox_awake(&mb_);

    m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->tag, 1);
    mail_free(m);
    EXPECT_EQ(mailbox_prepare_sleep(&mb_), 0) << "empty box reported non-empty";
    mailbox_awake(&mb_);
}

TEST_F(MailboxTest, PrepareSleepThenPushWritesEventfd)
{
    ASSERT_EQ(mailbox_prepare_sleep(&mb_), 0);
    EXPECT_EQ(mb_.sleeping.load(), 1);
    EXPECT_FALSE(efd_readable(&mb_));
    mailbox_push(&mb_, make_mail(2, 5));
    EXPECT_TRUE(efd_readable(&mb_)) << "push to a sleeping consumer did not signal";
    mailbox_awake(&mb_);
    EXPECT_EQ(mb_.sleeping.load(), 0);
    EXPECT_FALSE(efd_readable(&mb_)) << "mailbox_awake did not drain the eventfd";
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->tag, 5);
    mail_free(m);
}

TEST_F(MailboxTest, WakeWritesEventfd)
{
    mailbox_wake(&mb_);
    EXPECT_TRUE(efd_readable(&mb_));
    mailbox_awake(&mb_);
    EXPECT_FALSE(efd_readable(&mb_));
}

TEST_F(MailboxTest, OneAwakeDrainsSeveralSignals)
{
    // Two pushes to a sleeping consumer and a wake: the eventfd's count is 2
    // or more, and mailbox_awake's single read() takes all of it.
    ASSERT_EQ(mailbox_prepare_sleep(&mb_), 0);
    mailbox_push(&mb_, make_mail(0, 1));
    mailbox_wake(&mb_);
    mailbox_push(&mb_, make_mail(0, 2));
    mailbox_awake(&mb_);
    EXPECT_FALSE(efd_readable(&mb_)) << "one read left the eventfd readable";
    for (int tag = 1; tag <= 2; tag++) {
        struct mail *m = mailbox_pop(&mb_);
        ASSERT_NE(m, nullptr);
        EXPECT_EQ(m->tag, tag);
        mail_free(m);
    }
}

TEST_F(MailboxTest, AwakeUnsignaledLeavesALateSignalForTheNextPoll)
{
    // The consumer's poll returned for something else; a producer pushed
    // after the poll: the mark is cleared, the signal stays (the next poll
    // returns at once) and the mail is in the box.
    ASSERT_EQ(mailbox_prepare_sleep(&mb_), 0);
    mailbox_push(&mb_, make_mail(3, 7));
    mailbox_awake_unsignaled(&mb_);
    EXPECT_EQ(mb_.sleeping.load(), 0);
    EXPECT_TRUE(efd_readable(&mb_)) << "the late signal was lost";
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->tag, 7);
    mail_free(m);
    ASSERT_EQ(mailbox_prepare_sleep(&mb_), 0);
    mailbox_awake(&mb_);
    EXPECT_FALSE(efd_readable(&mb_));
}

TEST_F(MailboxTest, WaitReturnsImmediatelyWhenNonEmpty)
{
    mailbox_push(&mb_, make_mail(0, 3));
    Watchdog dog({&mb_}, 10s);
    mailbox_wait(&mb_, -1);
    dog.done();
    EXPECT_FALSE(dog.fired()) << "mailbox_wait(-1) blocked on a non-empty box";
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    mail_free(m);
}

TEST_F(MailboxTest, WaitTimesOutOnEmptyBox)
{
    Watchdog dog({&mb_}, 10s);
    auto t0 = std::chrono::steady_clock::now();
    mailbox_wait(&mb_, 20000);
    auto dt = std::chrono::steady_clock::now() - t0;
    dog.done();
    EXPECT_FALSE(dog.fired()) << "mailbox_wait(20 ms) did not time out";
    EXPECT_LT(dt, 5s);
    EXPECT_EQ(mb_.sleeping.load(), 0);
}

// The consumer announces itself asleep; the producer pushes only once it sees
// `sleeping` set, so the push lands while the consumer is in (or about to
// enter) ppoll.  A lost wake-up shows up as the watchdog firing.
TEST_F(MailboxTest, BlockedWaitIsWokenByPushFromAnotherThread)
{
    for (int round = 0; round < 50; round++) {
        Watchdog dog({&mb_}, 10s);
        std::atomic<int> got{-1};
        std::thread consumer([&] {
            struct mail *m;
            while ((m = mailbox_pop(&mb_)) == nullptr)
                mailbox_wait(&mb_, -1);
            got = m->tag;
            mail_free(m);
        });
        // Bounded spin until the consumer has marked itself sleeping.
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (!mb_.sleeping.load() && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        mailbox_push(&mb_, make_mail(3, static_cast<uint32_t>(round)));
        consumer.join();
        dog.done();
        ASSERT_FALSE(dog.fired()) << "lost wake-up in round " << round;
        ASSERT_EQ(got.load(), round);
    }
}

TEST_F(MailboxTest, BlockedWaitIsWokenByWake)
{
    Watchdog dog({&mb_}, 10s);
    std::thread consumer([&] { mailbox_wait(&mb_, -1); });
    auto deadline = std::chrono::steady_clock::now() + 10s;
    while (!mb_.sleeping.load() && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    mailbox_wake(&mb_);
    consumer.join();
    dog.done();
    EXPECT_FALSE(dog.fired()) << "mailbox_wake did not wake mailbox_wait(-1)";
    EXPECT_FALSE(efd_readable(&mb_)) << "the wait left the signal that woke it";
    EXPECT_EQ(mb_.sleeping.load(), 0);
}

TEST_F(MailboxTest, TimedOutWaitLeavesTheEventfdToTheNextWait)
{
    // A wait that times out leaves no mark, and a signal that comes after
    // it is not lost: it ends the next wait at once, which drains it (the
    // timed-out wait no longer reads the eventfd: mailbox_wait()).
    mailbox_wait(&mb_, 1000);
    EXPECT_EQ(mb_.sleeping.load(), 0);
    mailbox_wake(&mb_);
    Watchdog dog({&mb_}, 10s);
    mailbox_wait(&mb_, -1);
    dog.done();
    EXPECT_FALSE(dog.fired()) << "a pending signal did not end the next wait";
    EXPECT_FALSE(efd_readable(&mb_));
}

// Ping-pong through two boxes, each side blocking in mailbox_wait(-1) between
// messages: every round crosses the sleep/wake protocol in both directions
// under varying interleavings.
// The spin rule (mailbox.h): spin before a wait only after a short wait
// that ended a moment ago.  Times are pmc_mono_ns() values, made up here.
TEST(MailboxSpinRule, NeverSpinsBeforeTheFirstWait)
{
    struct mailbox_spin_state sp = {};
    EXPECT_FALSE(mailbox_spin_due(&sp, 5'000'000'000ull));
}

TEST(MailboxSpinRule, SpinsRightAfterAShortWait)
{
    struct mailbox_spin_state sp = {};
    const uint64_t t0 = 5'000'000'000ull, t1 = t0 + 30'000; // answered in 30 us
    mailbox_spin_note(&sp, t0, t1);
    EXPECT_TRUE(sp.hot);
    EXPECT_EQ(sp.seen_ns, t1);
    EXPECT_TRUE(mailbox_spin_due(&sp, t1 + 10'000));
    EXPECT_TRUE(mailbox_spin_due(&sp, t1 + MAILBOX_SPIN_GAP_US * 1000ull - 1));
}

TEST(MailboxSpinRule, ParksAfterALongWait)
{
    struct mailbox_spin_state sp = {};
    const uint64_t t0 = 5'000'000'000ull, t1 = t0 + 2 * MAILBOX_SPIN_US * 1000ull;
    mailbox_spin_note(&sp, t0, t1);
    EXPECT_FALSE(sp.hot);
    EXPECT_FALSE(mailbox_spin_due(&sp, t1 + 1'000));
}

// The quiet ping-pong: a short wait for a reply, then 10 ms asleep
// elsewhere; the next wait must park at once.
TEST(MailboxSpinRule, ParksWhenBackFromElsewhere)
{
    struct mailbox_spin_state sp = {};
    const uint64_t t0 = 5'000'000'000ull, t1 = t0 + 20'000;
    mailbox_spin_note(&sp, t0, t1);
    EXPECT_FALSE(mailbox_spin_due(&sp, t1 + 10'000'000));
    EXPECT_FALSE(mailbox_spin_due(&sp, t1 + MAILBOX_SPIN_GAP_US * 1000ull));
}

// A call with no time to wait records the look, so a consumer that keeps
// coming back (a busy loop) stays due to spin at its next real wait.
TEST_F(MailboxTest, WaitSpinWithoutTimeRecordsTheLook)
{
    struct mailbox_spin_state sp = {};
    sp.hot = true;
    uint64_t before = pmc_mono_ns();
    mailbox_wait_spin(&mb_, 0, &sp);
    EXPECT_GE(sp.seen_ns, before);
    EXPECT_LE(sp.seen_ns, pmc_mono_ns());
    EXPECT_TRUE(sp.hot);
}

// Not due (cold): no spin, 0 at once even with mail waiting, and the look
// recorded.  Due with mail waiting: 1 where the thread may spin.
TEST_F(MailboxTest, SpinIfDueSpinsOnlyWhenDue)
{
    struct mailbox_spin_state sp = {};
    mailbox_push(&mb_, make_mail(0, 3));
    uint64_t now = pmc_mono_ns();
    EXPECT_EQ(mailbox_spin_if_due(&mb_, &sp, now), 0);
    EXPECT_EQ(sp.seen_ns, now);
    mailbox_spin_note(&sp, now, now + 10'000);
    EXPECT_EQ(mailbox_spin_if_due(&mb_, &sp, now + 20'000), mailbox_may_spin() ? 1 : 0);
    EXPECT_EQ(sp.seen_ns, now + 20'000);
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    mail_free(m);
}

// A wait answered at once (the mail was there) is short: hot after it, and
// seen when it ended.
TEST_F(MailboxTest, WaitSpinAnsweredAtOnceIsHot)
{
    struct mailbox_spin_state sp = {};
    mailbox_push(&mb_, make_mail(0, 3));
    Watchdog dog({&mb_}, 10s);
    uint64_t before = pmc_mono_ns();
    mailbox_wait_spin(&mb_, -1, &sp);
    dog.done();
    EXPECT_FALSE(dog.fired());
    EXPECT_TRUE(sp.hot);
    EXPECT_GE(sp.seen_ns, before);
    struct mail *m = mailbox_pop(&mb_);
    ASSERT_NE(m, nullptr);
    mail_free(m);
}

TEST(MailboxPingPong, NoLostWakeups)
{
    const int rounds = 20000;
    struct mailbox to_b, to_a;
    ASSERT_EQ(mailbox_init(&to_b), 0);
    ASSERT_EQ(mailbox_init(&to_a), 0);
    std::atomic<bool> order_ok{true};
    {
        Watchdog dog({&to_a, &to_b}, 30s);
        // Receive mail number i on mb: false once the watchdog has fired.
        auto receive = [&](struct mailbox *mb, int i) {
            struct mail *m;
            while ((m = mailbox_pop(mb)) == nullptr && !dog.fired())
                mailbox_wait(mb, -1);
            if (!m)
                return false;
            if (m->tag != i)
                order_ok = false;
            mail_free(m);
            return true;
        };
        std::thread b([&] {
            for (int i = 0; i < rounds && !dog.fired(); i++) {
                if (!receive(&to_b, i))
                    break;
                mailbox_push(&to_a, make_mail(1, static_cast<uint32_t>(i)));
            }
        });
        for (int i = 0; i < rounds && !dog.fired(); i++) {
            mailbox_push(&to_b, make_mail(0, static_cast<uint32_t>(i)));
            if (!receive(&to_a, i))
                break;
        }
        b.join();
        dog.done();
        EXPECT_FALSE(dog.fired()) << "a wake-up was lost (ping-pong stalled)";
    }
    EXPECT_TRUE(order_ok.load());
    mailbox_destroy(&to_b);
    mailbox_destroy(&to_a);
}

// 8 producers released together on a barrier, one consumer that sleeps in
// mailbox_wait(-1) whenever the box looks empty.  Every mail must arrive
// exactly once and each producer's mails in the order it pushed them.
TEST_F(MailboxTest, ManyProducersOneConsumer)
{
    const uint32_t producers = 8;
    const uint32_t per_producer = 200000;
    StartGate start(static_cast<int>(producers + 1));
    std::vector<std::thread> threads;
    for (uint32_t p = 0; p < producers; p++)
        threads.emplace_back([&, p] {
            start.arrive_and_wait();
            for (uint32_t s = 0; s < per_producer; s++)
                mailbox_push(&mb_, make_mail(p, s));
        });

    std::vector<uint32_t> next(producers, 0);
    uint64_t received = 0, bad_order = 0, bad_identity = 0;
    const uint64_t total = static_cast<uint64_t>(producers) * per_producer;
    Watchdog dog({&mb_}, 60s);
    start.arrive_and_wait();
    while (received < total && !dog.fired()) {
        struct mail *m = mailbox_pop(&mb_);
        if (!m) {
            mailbox_wait(&mb_, -1);
            continue;
        }
        uint32_t p, s;
        read_mail(m, &p, &s);
        if (p >= producers || m->peer != static_cast<int>(p) || m->tag != static_cast<int>(s) ||
            m->len != 8) {
            bad_identity++;
        } else {
            if (s != next[p])
                bad_order++;
            next[p] = s + 1;
        }
        received++;
        mail_free(m);
    }
    for (auto &t : threads)
        t.join();
    dog.done();
    EXPECT_FALSE(dog.fired()) << "consumer stalled after " << received << " of " << total;
    EXPECT_EQ(received, total);
    EXPECT_EQ(bad_identity, 0u);
    EXPECT_EQ(bad_order, 0u) << "per-producer order broken (or duplicates/loss)";
    for (uint32_t p = 0; p < producers; p++)
        EXPECT_EQ(next[p], per_producer) << "producer " << p;
    EXPECT_EQ(mailbox_pop(&mb_), nullptr) << "extra mail after all were received";
}

// Leftovers are freed by mailbox_destroy: LeakSanitizer reports them in the
// ASan build; without a sanitizer the heap in use must come back to its level
// before the mails were allocated.  mallinfo2 counts chunks parked in the
// thread cache as in use, so one warm-up cycle fills that cache first and a
// small slack is allowed; 1000 leaked mails would be about 80 KB.
void fill_destroy_cycle(size_t *before, size_t *after, int *efd)
{
    struct mailbox mb;
    ASSERT_EQ(mailbox_init(&mb), 0);
    *before = mallinfo2().uordblks;
    for (uint32_t i = 0; i < 1000; i++)
        mailbox_push(&mb, make_mail(0, i));
    struct mail *m = mailbox_pop(&mb); // the tail is now a real node, not the stub
    ASSERT_NE(m, nullptr);
    mail_free(m);
    *efd = mb.efd;
    mailbox_destroy(&mb);
    *after = mallinfo2().uordblks;
    EXPECT_EQ(mb.efd, -1);
}

TEST(MailboxDestroy, FreesLeftoversAndClosesEventfd)
{
    size_t before, after;
    int efd;
    fill_destroy_cycle(&before, &after, &efd); // warm-up
    fill_destroy_cycle(&before, &after, &efd);
    errno = 0;
    EXPECT_EQ(fcntl(efd, F_GETFD), -1) << "eventfd left open";
    EXPECT_EQ(errno, EBADF);
    if (!PMC_TEST_SANITIZED) {
        EXPECT_LE(after, before + 4096)
            << "mailbox_destroy leaked " << (after - before) << " bytes";
    }
}

TEST(MailboxDestroy, EmptyBox)
{
    struct mailbox mb;
    ASSERT_EQ(mailbox_init(&mb), 0);
    int efd = mb.efd;
    mailbox_destroy(&mb);
    EXPECT_EQ(mb.efd, -1);
    errno = 0;
    EXPECT_EQ(fcntl(efd, F_GETFD), -1);
    EXPECT_EQ(errno, EBADF);
}

} // namespace
