// test_doorbell.cc - wake-ups between the ranks of one host
// (engine/transport/doorbell.h).  The socket: a ring reaches the doorbell of that job
// and rank only, says who sent it (a forged sender is dropped), wakes a
// thread asleep in mailbox_wait_fd(), and the failures the ledger relies on
// (a name taken, no such doorbell, a full queue) come back as doorbell.h
// says.  The ledger: even (sleep until rung) only while every message
// announced was received and every message received was announced; a ring
// that found a full queue is sent again; a peer that cannot be rung is not
// tried again, and one found by the probe at start keeps the ledger uneven.
// Several tests here were added by mutation testing of engine/transport/doorbell.c:
// each fails with one small fault (a bound off by one, a check dropped).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "engine/transport/doorbell.h"
#include "engine/transport/mailbox.h"

namespace
{

// A job key of this test run's own, so that parallel runs never meet.
uint64_t fresh_key()
{
    static std::mt19937_64 gen(std::random_device{}());
    return gen();
}

struct Bell {
    doorbell d{-1, 0};
    Bell(uint64_t key, int rank)
    {
        pmc_error err;
        EXPECT_EQ(doorbell_open(&d, key, rank, &err), 0) << err.text;
    }
    ~Bell()
    {
        doorbell_close(&d);
    }
};

doorbell_ring ring_of(uint32_t from, uint64_t count)
{
    doorbell_ring r{};
    r.from = from;
    r.count = count;
    return r;
}

// The abstract address of rank's doorbell of job key (doorbell.h's naming,
// written out here so that a change to it shows): its length.
socklen_t bell_address(uint64_t key, int rank, sockaddr_un *to)
{
    *to = sockaddr_un{};
    to->sun_family = AF_UNIX;
    int n = snprintf(to->sun_path + 1, sizeof to->sun_path - 1, "pmc-hybrid.%016llx.%d",
                     (unsigned long long)key, rank);
    return (socklen_t)(offsetof(sockaddr_un, sun_path) + 1 + n);
}

// Send r to rank's doorbell of job key from an unbound socket (a process
// that is no rank of the job).  Returns whether the datagram went out.
bool send_anonymously(uint64_t key, int rank, const doorbell_ring &r)
{
    int fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    if (fd < 0)
        return false;
    sockaddr_un to;
    socklen_t len = bell_address(key, rank, &to);
    bool ok = sendto(fd, &r, sizeof r, 0, (sockaddr *)&to, len) == (ssize_t)sizeof r;
    close(fd);
    return ok;
}

TEST(Doorbell, ARingReachesThatRankOnlyAndSaysWhoSentIt)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    doorbell_ring r = ring_of(0, 7);
    ASSERT_EQ(doorbell_send(&r0.d, 1, &r), 0);
    doorbell_ring got{};
    EXPECT_EQ(doorbell_recv(&r0.d, 4, &got), -1) << "rank 0 was not rung";
    ASSERT_EQ(doorbell_recv(&r1.d, 4, &got), 1);
    EXPECT_EQ(got.from, 0u);
    EXPECT_EQ(got.count, 7u);
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), -1) << "a ring is read once";
}

TEST(Doorbell, JobsDoNotShareNames)
{
    uint64_t key = fresh_key();
    Bell a(key, 1), b(key + 1, 1), from(key, 0);
    doorbell_ring r = ring_of(0, 1), got{};
    ASSERT_EQ(doorbell_send(&from.d, 1, &r), 0);
    EXPECT_EQ(doorbell_recv(&b.d, 4, &got), -1);
    EXPECT_EQ(doorbell_recv(&a.d, 4, &got), 1);
}

TEST(Doorbell, ATakenNameIsRefused)
{
    uint64_t key = fresh_key();
    Bell first(key, 3);
    doorbell second{-1, 0};
    pmc_error err;
    EXPECT_EQ(doorbell_open(&second, key, 3, &err), -1);
    EXPECT_EQ(errno, EADDRINUSE);
    EXPECT_EQ(second.fd, -1);
    EXPECT_NE(std::string(err.text).find("rank 3: doorbell @pmc-hybrid."), std::string::npos)
        << err.text;
}

TEST(Doorbell, RingingNoDoorbellFailsWithConnectionRefused)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0);
    doorbell_ring r = ring_of(0, 1);
    errno = 0;
    EXPECT_EQ(doorbell_send(&r0.d, 5, &r), -1);
    EXPECT_EQ(errno, ECONNREFUSED);
    {
        Bell gone(key, 6);
    }
    EXPECT_EQ(doorbell_send(&r0.d, 6, &r), -1) << "a closed doorbell's name is free again";
    EXPECT_EQ(errno, ECONNREFUSED);
}

TEST(Doorbell, AForgedOrMalformedRingIsDropped)
{
    uint64_t key = fresh_key();
    Bell r1(key, 1), r2(key, 2);
    // an unbound socket claiming to be rank 0, and rank 2 claiming the same
    int anon = socket(AF_UNIX, SOCK_DGRAM, 0);
    ASSERT_GE(anon, 0);
    sockaddr_un to;
    socklen_t len = bell_address(key, 1, &to);
    doorbell_ring claim = ring_of(0, 1);
    ASSERT_EQ(sendto(anon, &claim, sizeof claim, 0, (sockaddr *)&to, len), (ssize_t)sizeof claim);
    ASSERT_EQ(doorbell_send(&r2.d, 1, &claim), 0);
    // a short datagram from a true rank, and a rank out of range
    ASSERT_EQ(sendto(r2.d.fd, "x", 1, 0, (sockaddr *)&to, len), 1);
    doorbell_ring far = ring_of(9, 1);
    ASSERT_EQ(doorbell_send(&r2.d, 1, &far), 0);
    doorbell_ring got{};
    for (int i = 0; i < 4; i++)
        EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 0) << "datagram " << i;
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), -1);
    close(anon);
}

TEST(Doorbell, ARingTooLongOrWithPaddingSetIsDropped)
{
    uint64_t key = fresh_key();
    Bell r1(key, 1), r2(key, 2); // true doorbells of the job
    sockaddr_un to;
    socklen_t len = bell_address(key, 1, &to);
    unsigned char longer[sizeof(doorbell_ring) + 1] = {};
    doorbell_ring ring = ring_of(2, 1);
    memcpy(longer, &ring, sizeof ring); // a true ring with one byte more
    ASSERT_EQ(sendto(r2.d.fd, longer, sizeof longer, 0, (sockaddr *)&to, len),
              (ssize_t)sizeof longer);
    doorbell_ring padded = ring_of(2, 1);
    padded.zero = 7;
    ASSERT_EQ(doorbell_send(&r2.d, 1, &padded), 0);
    ASSERT_EQ(doorbell_send(&r2.d, 1, &ring), 0);
    doorbell_ring got{};
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 0) << "one byte too long";
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 0) << "padding set";
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 1) << "the true ring";
    EXPECT_EQ(got.from, 2u);
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), -1);
}

TEST(Doorbell, ARingFromTheRankJustPastTheLastIsDropped)
{
    uint64_t key = fresh_key();
    Bell r1(key, 1), r4(key, 4); // a true doorbell of the job, but 4 ranks
    doorbell_ring r = ring_of(4, 1), got{};
    ASSERT_EQ(doorbell_send(&r4.d, 1, &r), 0);
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 0) << "rank 4 of ranks 0-3";
    ASSERT_EQ(doorbell_send(&r4.d, 1, &r), 0);
    EXPECT_EQ(doorbell_recv(&r1.d, 5, &got), 1) << "rank 4 of ranks 0-4";
}

TEST(Doorbell, ARankWhoseNameStartsWithTheClaimedNameCannotClaimIt)
{
    uint64_t key = fresh_key();
    // "pmc-hybrid.<key>.12" starts with "pmc-hybrid.<key>.1"
    Bell r0(key, 0), r12(key, 12);
    doorbell_ring claim = ring_of(1, 1), own = ring_of(12, 1), got{};
    ASSERT_EQ(doorbell_send(&r12.d, 0, &claim), 0);
    EXPECT_EQ(doorbell_recv(&r0.d, 16, &got), 0) << "rank 12 claiming rank 1";
    ASSERT_EQ(doorbell_send(&r12.d, 0, &own), 0);
    EXPECT_EQ(doorbell_recv(&r0.d, 16, &got), 1);
    EXPECT_EQ(got.from, 12u);
}

TEST(Doorbell, AFullQueueSaysEagainAndKeepsWhatItHolds)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    long rung = 0;
    int rc = 0;
    doorbell_ring r = ring_of(0, 1);
    while (rung < 1000000 && (rc = doorbell_send(&r0.d, 1, &r)) == 0)
        rung++;
    ASSERT_EQ(rc, -1) << "the queue never filled";
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_GT(rung, 0);
    doorbell_ring got{};
    long read = 0;
    while (doorbell_recv(&r1.d, 4, &got) == 1)
        read++;
    EXPECT_EQ(read, rung);
    EXPECT_EQ(doorbell_send(&r0.d, 1, &r), 0) << "drained, it takes rings again";
}

TEST(Doorbell, ARingWakesMailboxWaitFd)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    mailbox mb;
    ASSERT_EQ(mailbox_init(&mb), 0);
    // nothing rung: the wait times out and says so
    EXPECT_EQ(mailbox_wait_fd(&mb, 1000, r1.d.fd), 0);
    doorbell_ring r = ring_of(0, 1), got{};
    ASSERT_EQ(doorbell_send(&r0.d, 1, &r), 0);
    // rung: it returns at once (a 60 s timeout would hang the test), saying
    // the doorbell is readable; the ring stays for doorbell_recv()
    EXPECT_EQ(mailbox_wait_fd(&mb, 60 * 1000000L, r1.d.fd), 1);
    EXPECT_EQ(doorbell_recv(&r1.d, 4, &got), 1);
    // a wake of the mailbox itself is not a ring
    mailbox_wake(&mb);
    EXPECT_EQ(mailbox_wait_fd(&mb, 60 * 1000000L, r1.d.fd), 0);
    mailbox_destroy(&mb);
}

// Ranks 0 (the master) and 1 (an agent) on this host, rank 2 elsewhere.
struct Pair {
    uint64_t key = fresh_key();
    Bell b0{key, 0}, b1{key, 1};
    doorbell_ledger l0{}, l1{};
    Pair()
    {
        const unsigned char local0[3] = {0, 1, 0}, local1[3] = {1, 0, 0};
        EXPECT_EQ(doorbell_ledger_init(&l0, 0, 3, local0), 0);
        EXPECT_EQ(doorbell_ledger_init(&l1, 1, 3, local1), 0);
    }
    ~Pair()
    {
        doorbell_ledger_free(&l0);
        doorbell_ledger_free(&l1);
    }
};

// Rank 0 sends to rank 1, which reads no ring, until rank 1's queue is full
// and a ring is owed (at most a million messages).  The messages sent.
static uint64_t send_until_owed(Pair &p)
{
    uint64_t sent = 0;
    while (p.l0.nowed == 0 && sent < 1000000) {
        doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
        sent++;
    }
    return sent;
}

TEST(DoorbellLedger, EvenUntilAMessageIsAnnouncedAndAgainWhenItIsIn)
{
    Pair p;
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
    doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
    EXPECT_EQ(p.l0.rings_sent, 1u);
    EXPECT_TRUE(doorbell_ledger_even(&p.l0)) << "the sender owes nothing";
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1);
    EXPECT_FALSE(doorbell_ledger_even(&p.l1)) << "announced, not received: poll for it";
    doorbell_ledger_received(&p.l1, 0);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
    EXPECT_EQ(p.l1.rings_heard, 1u);
}

TEST(DoorbellLedger, AMessageBeforeItsRingIsUnevenUntilTheRing)
{
    Pair p;
    doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
    doorbell_ledger_received(&p.l1, 0); // MPI was faster than the ring
    EXPECT_FALSE(doorbell_ledger_even(&p.l1));
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
}

TEST(DoorbellLedger, AFullQueueIsMadeGoodByTheRingSentAgain)
{
    Pair p;
    uint64_t sent = send_until_owed(p);
    ASSERT_EQ(p.l0.nowed, 1) << "the queue never filled";
    EXPECT_FALSE(doorbell_ledger_even(&p.l0)) << "a ring is owed: do not sleep until rung";
    // the receiver reads what got through: the last message is unannounced
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), (long)sent - 1);
    for (uint64_t i = 0; i < sent; i++)
        doorbell_ledger_received(&p.l1, 0);
    EXPECT_FALSE(doorbell_ledger_even(&p.l1)) << "the last message came unannounced";
    doorbell_ledger_retry(&p.l0, &p.b0.d);
    EXPECT_EQ(p.l0.nowed, 0);
    EXPECT_TRUE(doorbell_ledger_even(&p.l0));
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
}

TEST(DoorbellLedger, APeerRefusedByTheProbeIsOwedNothing)
{
    Pair p;
    send_until_owed(p);
    ASSERT_EQ(p.l0.nowed, 1) << "the queue never filled";
    doorbell_close(&p.b1.d); // rank 1's doorbell is gone: refused from now on
    doorbell_ledger_probe(&p.l0, &p.b0.d);
    EXPECT_EQ(p.l0.nsilent, 1);
    EXPECT_EQ(p.l0.nowed, 0) << "a peer never rung again is owed no ring";
    uint64_t rung = p.l0.rings_sent;
    doorbell_ledger_retry(&p.l0, &p.b0.d);
    EXPECT_EQ(p.l0.rings_sent, rung);
    EXPECT_FALSE(doorbell_ledger_even(&p.l0)) << "a silent peer: poll";
}

TEST(DoorbellLedger, OldNewsAndStrangersDoNotCount)
{
    Pair p;
    doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
    doorbell_ring again = ring_of(0, 1);
    ASSERT_EQ(doorbell_send(&p.b0.d, 1, &again), 0);
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1) << "the same count twice is one ring";
    doorbell_ledger_received(&p.l1, 0);
    // rank 2 is no peer on this host: its messages are not counted, and
    // nothing is rung for a message to it
    doorbell_ledger_received(&p.l1, 2);
    doorbell_ledger_sent(&p.l1, &p.b1.d, 2);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
    EXPECT_EQ(p.l1.rings_sent, 0u);
}

TEST(DoorbellLedger, APeerThatCannotBeRungIsNotTriedAgain)
{
    uint64_t key = fresh_key();
    Bell b0(key, 0); // rank 1 has no doorbell (another network namespace)
    doorbell_ledger l{};
    const unsigned char local[2] = {0, 1};
    ASSERT_EQ(doorbell_ledger_init(&l, 0, 2, local), 0);
    doorbell_ledger_sent(&l, &b0.d, 1);
    EXPECT_EQ(l.rings_sent, 0u);
    EXPECT_EQ(l.nowed, 0) << "refused is not owed: retrying would never end";
    EXPECT_FALSE(l.peer[0].ringing);
    EXPECT_TRUE(doorbell_ledger_even(&l));
    doorbell_ledger_free(&l);
}

TEST(DoorbellLedger, TheProbeFindsAPeerThatCannotRing)
{
    uint64_t key = fresh_key();
    Bell b0(key, 0), b1(key, 1); // rank 2 has no doorbell
    doorbell_ledger l0{}, l1{};
    const unsigned char local0[3] = {0, 1, 1}, local1[3] = {1, 0, 0};
    ASSERT_EQ(doorbell_ledger_init(&l0, 0, 3, local0), 0);
    ASSERT_EQ(doorbell_ledger_init(&l1, 1, 3, local1), 0);
    doorbell_ledger_probe(&l0, &b0.d);
    EXPECT_EQ(l0.nsilent, 1);
    EXPECT_FALSE(doorbell_ledger_even(&l0)) << "rank 2's messages come unannounced: poll";
    // the probe announces nothing to the peer that has a doorbell
    EXPECT_EQ(doorbell_ledger_hear(&l1, &b1.d), 0);
    EXPECT_TRUE(doorbell_ledger_even(&l1));
    doorbell_ledger_probe(&l1, &b1.d);
    EXPECT_EQ(l1.nsilent, 0);
    EXPECT_TRUE(doorbell_ledger_even(&l1));
    doorbell_ledger_free(&l0);
    doorbell_ledger_free(&l1);
}

TEST(DoorbellLedger, AForgedRingAnnouncesNothing)
{
    Pair p;
    // not a rank of the job, claiming to be rank 0 with a message for rank 1
    ASSERT_TRUE(send_anonymously(p.key, 1, ring_of(0, 1)));
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 0);
    EXPECT_EQ(p.l1.peer[0].announced, 0u);
    EXPECT_EQ(p.l1.rings_heard, 0u);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1)) << "no message is on its way";
}

TEST(DoorbellLedger, ADroppedDatagramDoesNotHideTheRingsBehindIt)
{
    Pair p;
    ASSERT_TRUE(send_anonymously(p.key, 1, ring_of(0, 5)));
    doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1) << "one call reads every ring queued";
    EXPECT_EQ(p.l1.peer[0].announced, 1u);
    doorbell_ring got{};
    EXPECT_EQ(doorbell_recv(&p.b1.d, 3, &got), -1);
    doorbell_ledger_received(&p.l1, 0);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
}

TEST(DoorbellLedger, ARankOutOfRangeIsNoPeer)
{
    Pair p; // 3 ranks
    doorbell_ledger_received(&p.l1, 3);
    doorbell_ledger_received(&p.l1, -1);
    doorbell_ledger_sent(&p.l1, &p.b1.d, 3);
    doorbell_ledger_sent(&p.l1, &p.b1.d, -1);
    EXPECT_EQ(p.l1.peer[0].received, 0u);
    EXPECT_EQ(p.l1.peer[0].sent, 0u);
    EXPECT_EQ(p.l1.rings_sent, 0u);
    EXPECT_TRUE(doorbell_ledger_even(&p.l1));
}

TEST(DoorbellLedger, ARankIsNotItsOwnPeer)
{
    uint64_t key = fresh_key();
    Bell b0(key, 0), b1(key, 1);
    doorbell_ledger l{};
    const unsigned char local[3] = {1, 1, 0}; // local[self] set
    ASSERT_EQ(doorbell_ledger_init(&l, 0, 3, local), 0);
    EXPECT_EQ(l.npeers, 1);
    EXPECT_EQ(l.index[0], -1);
    doorbell_ledger_probe(&l, &b0.d);
    doorbell_ring got{};
    EXPECT_EQ(doorbell_recv(&b0.d, 3, &got), -1) << "the probe rang rank 0 itself";
    EXPECT_EQ(doorbell_recv(&b1.d, 3, &got), 1);
    EXPECT_TRUE(doorbell_ledger_even(&l));
    doorbell_ledger_free(&l);
}

TEST(DoorbellLedger, ARefusedPeerIsNotRungAgainEvenOnceItHasADoorbell)
{
    uint64_t key = fresh_key();
    Bell b0(key, 0);
    doorbell_ledger l{};
    const unsigned char local[2] = {0, 1};
    ASSERT_EQ(doorbell_ledger_init(&l, 0, 2, local), 0);
    doorbell_ledger_sent(&l, &b0.d, 1); // refused: rank 1 polls for our messages
    ASSERT_FALSE(l.peer[0].ringing);
    Bell b1(key, 1);
    doorbell_ledger_sent(&l, &b0.d, 1);
    doorbell_ledger_retry(&l, &b0.d);
    EXPECT_EQ(l.rings_sent, 0u);
    doorbell_ring got{};
    EXPECT_EQ(doorbell_recv(&b1.d, 2, &got), -1) << "the refused peer was rung again";
    doorbell_ledger_free(&l);
}

TEST(DoorbellLedger, TheProbeCountsAPeerWithAFullQueueAsReachable)
{
    Pair p;
    doorbell_ring old = ring_of(0, 0); // announces nothing
    long rung = 0;
    while (rung < 1000000 && doorbell_send(&p.b0.d, 1, &old) == 0)
        rung++;
    ASSERT_EQ(errno, EAGAIN) << "the queue never filled";
    doorbell_ledger_probe(&p.l0, &p.b0.d); // EAGAIN: rank 1 is there, only busy
    EXPECT_EQ(p.l0.nsilent, 0);
    EXPECT_TRUE(p.l0.peer[0].ringing);
    EXPECT_TRUE(doorbell_ledger_even(&p.l0)) << "rank 1 rings us for its messages";
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 0);
    doorbell_ledger_sent(&p.l0, &p.b0.d, 1);
    EXPECT_EQ(p.l0.rings_sent, 1u) << "rank 1 is still rung";
    EXPECT_EQ(doorbell_ledger_hear(&p.l1, &p.b1.d), 1);
}

} // namespace
