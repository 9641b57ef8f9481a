// test_comm_join.cc - comm.h over the join link (engine/transport/comm_join.h)
// in one process: a master comm and agent comms on loopback.  The master's
// WELCOME carries its run description; io/msg.h messages go both ways
// through comm_send() and arrive in the right mailbox with the sender's
// rank (an agent's join number, 0 for the master); an agent that closes is
// a PEER_LOST in the master's inbox, and a master that closes is one in
// the agent's, after which the agent's sends are dropped; the access file
// goes with the master.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>
#include <sys/stat.h>
#include <thread>
#include <vector>

#include "engine/transport/comm_join.h"
#include "engine/transport/mailbox.h"
#include "io/msg.h"
#include "testutil.h"

// ThreadSanitizer: as in test_join.cc, libzmq and libsodium are not
// instrumented; interceptors called from them are ignored.
extern "C" const char *__tsan_default_suppressions()
{
    return "called_from_lib:libzmq.so\ncalled_from_lib:libsodium.so\n";
}

namespace
{

struct Box {
    mailbox mb;
    Box()
    {
        EXPECT_EQ(mailbox_init(&mb), 0);
    }
    ~Box()
    {
        mailbox_destroy(&mb);
    }
    // The next mail within timeout_s seconds, or nullptr.
    mail *next(double timeout_s = 10)
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        for (;;) {
            if (mail *m = mailbox_pop(&mb))
                return m;
            if (std::chrono::steady_clock::now() >= until)
                return nullptr;
            mailbox_wait(&mb, 10000);
        }
    }
};

uint32_t kind_of(const mail *m)
{
    msg_reader r;
    pmc_error err;
    EXPECT_EQ(msg_open(&r, m->data, m->len, &err), 0) << err.text;
    return r.kind;
}

void send_kind(comm *c, int dst, comm_box box, msg_kind kind)
{
    msgbuf b{};
    ASSERT_EQ(msg_begin(&b, kind), 0);
    ASSERT_GT(msg_end(&b), 0u);
    ASSERT_EQ(comm_send(c, dst, box, &b), 0);
}

class CommJoin : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        access_ = dir_.path("access");
        join_options o{};
        o.bind = "tcp://127.0.0.1:*";
        o.heartbeat_s = 0.1;
        o.timeout_s = 1.0;
        pmc_error err;
        join *j = join_listen(access_.c_str(), &o, &err);
        ASSERT_NE(j, nullptr) << err.text;
        const char run[] = "dag /x/wf.dag\nnull-executor 0\nper-task-stdio 0\n";
        ASSERT_EQ(join_set_welcome(j, run, sizeof run - 1), 0);
        master_ = comm_create_joined(j, 0, &master_box_.mb, nullptr, &err);
        ASSERT_NE(master_, nullptr) << err.text;
    }
    void TearDown() override
    {
        comm_close(master_);
    }

    // A joined agent's comm; its rank in *rank.
    comm *join_agent(Box &box, int *rank)
    {
        pmc_error err;
        join *j = join_connect(access_.c_str(), nullptr, 0, &err);
        EXPECT_NE(j, nullptr) << err.text;
        if (!j)
            return nullptr;
        size_t len;
        const char *run = static_cast<const char *>(join_welcome(j, &len));
        EXPECT_EQ(std::string(run, len), "dag /x/wf.dag\nnull-executor 0\nper-task-stdio 0\n");
        *rank = static_cast<int>(join_self(j));
        comm *c = comm_create_joined(j, *rank, nullptr, &box.mb, &err);
        EXPECT_NE(c, nullptr) << err.text;
        return c;
    }

    testutil::TempDir dir_{"pmc-comm-join"};
    std::string access_;
    Box master_box_;
    comm *master_ = nullptr;
};

TEST_F(CommJoin, MessagesBothWaysWithTheSendersRank)
{
    Box a1, a2;
    int r1 = 0, r2 = 0;
    comm *c1 = join_agent(a1, &r1);
    comm *c2 = join_agent(a2, &r2);
    ASSERT_TRUE(c1 && c2);
    EXPECT_EQ(r1, 1);
    EXPECT_EQ(r2, 2);
    send_kind(c2, 0, COMM_TO_MASTER, MSG_BYE);
    send_kind(c1, 0, COMM_TO_MASTER, MSG_ABORT);
    std::vector<std::pair<int, uint32_t>> got;
    for (int i = 0; i < 2; i++) {
        mail *m = master_box_.next();
        ASSERT_NE(m, nullptr) << "message " << i << " never came";
        EXPECT_EQ(m->tag, COMM_TO_MASTER);
        got.emplace_back(m->peer, kind_of(m));
        mail_free(m);
    }
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, (std::vector<std::pair<int, uint32_t>>{{1, MSG_ABORT}, {2, MSG_BYE}}));
    send_kind(master_, 2, COMM_TO_AGENT, MSG_SHUTDOWN);
    send_kind(master_, 1, COMM_TO_AGENT, MSG_DRAIN);
    mail *m1 = a1.next(), *m2 = a2.next();
    ASSERT_TRUE(m1 && m2);
    EXPECT_EQ(kind_of(m1), MSG_DRAIN);
    EXPECT_EQ(kind_of(m2), MSG_SHUTDOWN);
    EXPECT_EQ(m1->peer, 0);
    EXPECT_EQ(m1->tag, COMM_TO_AGENT);
    mail_free(m1);
    mail_free(m2);
    comm_stats st;
    comm_get_stats(master_, &st);
    EXPECT_EQ(st.msgs_sent, 2u);
    EXPECT_EQ(st.msgs_recv, 2u);
    comm_close(c1);
    comm_close(c2);
}

// Messages to one agent arrive in the order sent, many of them.
TEST_F(CommJoin, ManyMessagesKeepTheirOrder)
{
    Box a;
    int rank = 0;
    comm *c = join_agent(a, &rank);
    ASSERT_NE(c, nullptr);
    const int n = 2000;
    for (int i = 0; i < n; i++)
        send_kind(master_, rank, COMM_TO_AGENT, i % 2 ? MSG_DRAIN : MSG_RESUME);
    for (int i = 0; i < n; i++) {
        mail *m = a.next();
        ASSERT_NE(m, nullptr) << "message " << i;
        ASSERT_EQ(kind_of(m), i % 2 ? MSG_DRAIN : MSG_RESUME) << "message " << i;
        mail_free(m);
    }
    comm_close(c);
}

TEST_F(CommJoin, AgentThatClosesIsPeerLostAtTheMaster)
{
    Box a;
    int rank = 0;
    comm *c = join_agent(a, &rank);
    ASSERT_NE(c, nullptr);
    send_kind(c, 0, COMM_TO_MASTER, MSG_BYE);
    comm_close(c); // sends the BYE first, then closes the link
    mail *m = master_box_.next();
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(kind_of(m), MSG_BYE);
    mail_free(m);
    m = master_box_.next();
    ASSERT_NE(m, nullptr) << "no PEER_LOST";
    EXPECT_EQ(kind_of(m), MSG_PEER_LOST);
    EXPECT_EQ(m->peer, rank);
    mail_free(m);
    send_kind(master_, rank, COMM_TO_AGENT, MSG_SHUTDOWN); // dropped, no crash
}

TEST_F(CommJoin, MasterThatClosesIsPeerLostAtTheAgent)
{
    Box a;
    int rank = 0;
    comm *c = join_agent(a, &rank);
    ASSERT_NE(c, nullptr);
    comm_close(master_);
    master_ = nullptr;
    struct stat st;
    EXPECT_NE(stat(access_.c_str(), &st), 0) << "the master leaves its access file";
    mail *m = a.next();
    ASSERT_NE(m, nullptr) << "no PEER_LOST";
    EXPECT_EQ(kind_of(m), MSG_PEER_LOST);
    EXPECT_EQ(m->peer, 0);
    mail_free(m);
    send_kind(c, 0, COMM_TO_MASTER, MSG_BYE); // dropped: the master is gone
    comm_close(c);
}

} // namespace
