// test_doorbell.cc - wake-ups between the ranks of one host
// (engine/doorbell.h): a ring reaches the doorbell of that job and rank
// only, wakes a thread asleep in mailbox_wait_fd(), and is counted once;
// the failures the transport relies on (a name taken, no such doorbell, a
// full queue) come back as the errno doorbell.h names.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdint>
#include <random>

#include "engine/doorbell.h"
#include "engine/mailbox.h"

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

TEST(Doorbell, ARingIsHeardOnceByThatRankOnly)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    ASSERT_EQ(doorbell_ring(&r0.d, 1), 0);
    ASSERT_EQ(doorbell_ring(&r0.d, 1), 0);
    EXPECT_EQ(doorbell_drain(&r0.d), 0);
    EXPECT_EQ(doorbell_drain(&r1.d), 2);
    EXPECT_EQ(doorbell_drain(&r1.d), 0) << "a ring is read once";
}

TEST(Doorbell, JobsDoNotShareNames)
{
    uint64_t key = fresh_key();
    Bell a(key, 1), b(key + 1, 1);
    ASSERT_EQ(doorbell_ring(&a.d, 1), 0);
    EXPECT_EQ(doorbell_drain(&b.d), 0);
    EXPECT_EQ(doorbell_drain(&a.d), 1);
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
    errno = 0;
    EXPECT_EQ(doorbell_ring(&r0.d, 5), -1);
    EXPECT_EQ(errno, ECONNREFUSED);
    {
        Bell gone(key, 6);
    }
    EXPECT_EQ(doorbell_ring(&r0.d, 6), -1) << "a closed doorbell's name is free again";
    EXPECT_EQ(errno, ECONNREFUSED);
}

TEST(Doorbell, AFullQueueSaysEagainAndKeepsWhatItHolds)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    long rung = 0;
    int rc = 0;
    while (rung < 1000000 && (rc = doorbell_ring(&r0.d, 1)) == 0)
        rung++;
    ASSERT_EQ(rc, -1) << "the queue never filled";
    EXPECT_EQ(errno, EAGAIN);
    EXPECT_GT(rung, 0);
    EXPECT_EQ(doorbell_drain(&r1.d), rung);
    EXPECT_EQ(doorbell_ring(&r0.d, 1), 0) << "drained, it takes rings again";
}

TEST(Doorbell, ARingWakesMailboxWaitFd)
{
    uint64_t key = fresh_key();
    Bell r0(key, 0), r1(key, 1);
    mailbox mb;
    ASSERT_EQ(mailbox_init(&mb), 0);
    // nothing rung: the wait times out and says so
    EXPECT_EQ(mailbox_wait_fd(&mb, 1000, r1.d.fd), 0);
    ASSERT_EQ(doorbell_ring(&r0.d, 1), 0);
    // rung: it returns at once (a 60 s timeout would hang the test), saying
    // the doorbell is readable; the ring stays for doorbell_drain()
    EXPECT_EQ(mailbox_wait_fd(&mb, 60 * 1000000L, r1.d.fd), 1);
    EXPECT_EQ(doorbell_drain(&r1.d), 1);
    // a wake of the mailbox itself is not a ring
    mailbox_wake(&mb);
    EXPECT_EQ(mailbox_wait_fd(&mb, 60 * 1000000L, r1.d.fd), 0);
    mailbox_destroy(&mb);
}

} // namespace
