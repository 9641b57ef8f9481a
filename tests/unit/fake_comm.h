// fake_comm.h - the transport of a node agent under test: what the agent
// sends to rank 0 is queued here, and the test plays the master by reading
// it (fake_comm_next()) and pushing mail into the agent's mailbox
// (fake_comm_send_tasks()).  Implements engine/transport/comm.h's
// comm_send() and comm_send_mail(), so a test including it links no MPI.
// Include it in one translation unit only.
#ifndef PMC_TEST_FAKE_COMM_H
#define PMC_TEST_FAKE_COMM_H

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <vector>

#include "engine/node/agent.h"
#include "engine/transport/comm.h"
#include "engine/transport/mailbox.h"
#include "io/msg.h"

// What the agent sent to rank 0, in order.
struct comm {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::vector<uint8_t>> to_master;
};

inline void fake_comm_push(struct comm *c, std::vector<uint8_t> bytes)
{
    std::lock_guard<std::mutex> lock(c->mu);
    c->to_master.push_back(std::move(bytes));
    c->cv.notify_all();
}

extern "C" int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b)
{
    EXPECT_EQ(dst, 0);
    EXPECT_EQ(box, COMM_TO_MASTER);
    std::vector<uint8_t> bytes(b->data, b->data + b->len);
    msg_free(b); // comm_send() takes b's storage
    *b = msgbuf{};
    fake_comm_push(c, std::move(bytes));
    return 0;
}

extern "C" void comm_send_mail(struct comm *c, struct mail *m)
{
    EXPECT_EQ(m->peer, 0);
    EXPECT_EQ(m->tag, COMM_TO_MASTER);
    std::vector<uint8_t> bytes(m->data, m->data + m->len);
    mail_free(m);
    fake_comm_push(c, std::move(bytes));
}

// The configuration of a test node "node7": cpus CPUs, 1000 MB, no GPUs,
// one rank, kill grace 1 s; launch_threads launchers (0: the agent thread
// starts tasks), staging with a pool.  dag and dir must outlive the agent.
inline agent_config fake_agent_config(const char *dag, const char *dir, uint32_t cpus,
                                      uint32_t launch_threads)
{
    agent_config cfg{};
    cfg.host_ranks = 1;
    cfg.pu_shares = 1;
    cfg.hostname = "node7";
    cfg.cpus = cpus;
    cfg.memory_mb = 1000;
    cfg.dag_path = dag;
    cfg.task_dir = dir;
    cfg.kill_grace_ms = 1000;
    cfg.launch_threads = launch_threads;
    cfg.stage_launches = launch_threads > 0;
    return cfg;
}

// A message the agent sent, decoded: its kind and its reader.
struct Sent {
    std::vector<uint8_t> bytes;
    msg_reader r{};
    msg_kind kind() const
    {
        return (msg_kind)r.kind;
    }
};

// The next message the agent sends to the master; an empty one, and a
// test failure, after 20 s without one.
inline Sent fake_comm_next(struct comm &c)
{
    std::unique_lock<std::mutex> lock(c.mu);
    Sent s;
    if (!c.cv.wait_for(lock, std::chrono::seconds(20), [&] { return !c.to_master.empty(); })) {
        ADD_FAILURE() << "the agent sent nothing in 20 s";
        return s;
    }
    s.bytes = std::move(c.to_master.front());
    c.to_master.pop_front();
    pmc_error err{};
    EXPECT_EQ(msg_open(&s.r, s.bytes.data(), s.bytes.size(), &err), 0) << err.text;
    return s;
}

// Send agent a one TASKS message of tasks, as the master would.
inline void fake_comm_send_tasks(struct agent *a, const std::vector<msg_task> &tasks)
{
    msgbuf b{};
    ASSERT_EQ(msg_begin(&b, MSG_TASKS), 0);
    for (const msg_task &t : tasks)
        ASSERT_EQ(msg_add_task(&b, &t), 0);
    msg_end(&b);
    mail *m = mail_from_msgbuf(0, COMM_TO_AGENT, &b);
    ASSERT_NE(m, nullptr);
    mailbox_push(agent_mailbox(a), m);
}

#endif
