// test_master_join.cc - engine/master/ with joined nodes (master_config.joined,
// issue 49 "Nodes come and go", docs/design.md "Membership"), driven
// through master_begin()/master_step()/master_end() with a fake transport
// that records what the master sends to each rank and answers SHUTDOWN and
// ABORT as a joined agent does (BYE, then its link closes: PEER_LOST).
//
// Checked: master_begin() waits for --min-hosts HELLOs and nothing else
// (no dispatch before), and a signal ends that wait; a node that joins
// mid-run is sent work at once; PEER_LOST of a node with running tasks
// sends those tasks to other nodes with the same attempt number (no try
// charged) and nothing more to the lost rank; its late RESULTS are ignored,
// so every task is DONE exactly once in the rescue log and the run
// succeeds; jobstate.log has one SUBMIT and one JOB_SUCCESS per task; a
// node that joins after the workflow is over is sent SHUTDOWN at once;
// LEAVING stops dispatch to that node, its give-backs run elsewhere and its
// end requeues nothing; losing every node fails the run after
// ALL_LOST_WAIT_TIMEOUTS x node_timeout_s with the rescue log kept, unless a
// node joins within it (a node still leaving is not lost);
// --summary-json and --status count joins, losses
// and requeued tasks and list the lost nodes.
#include <gtest/gtest.h>

#include <jansson.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/master/master.h"
#include "engine/transport/comm.h"
#include "engine/transport/mailbox.h"
#include "io/dag.h"
#include "io/log.h"
#include "io/msg.h"
#include "testutil.h"

// What the master sent, per destination rank, in order.  The master's
// thread writes it; the test reads it once that thread is joined or is
// its own.
struct comm {
    std::mutex mu;
    std::map<int, std::vector<std::vector<uint8_t>>> to;
    struct mailbox *master_box = nullptr; // where the fake agents answer
};

namespace
{
void record(struct comm *c, int dst, const uint8_t *data, size_t len)
{
    std::lock_guard<std::mutex> lock(c->mu);
    c->to[dst].emplace_back(data, data + len);
}
} // namespace

extern "C" int comm_send(struct comm *c, int dst, enum comm_box box, struct msgbuf *b)
{
    EXPECT_EQ(box, COMM_TO_AGENT);
    record(c, dst, b->data, b->len);
    msg_free(b); // comm_send() takes b's storage
    *b = msgbuf{};
    return 0;
}

// A joined agent told to end says BYE, then closes its link.
extern "C" void comm_send_mail(struct comm *c, struct mail *m)
{
    EXPECT_EQ(m->tag, COMM_TO_AGENT);
    record(c, m->peer, m->data, m->len);
    msg_reader r{};
    pmc_error err{};
    if (msg_open(&r, m->data, m->len, &err) == 0 &&
        (r.kind == MSG_SHUTDOWN || r.kind == MSG_ABORT)) {
        mailbox_push(c->master_box, mail_control(m->peer, COMM_TO_MASTER, MSG_BYE));
        mailbox_push(c->master_box, mail_control(m->peer, COMM_TO_MASTER, MSG_PEER_LOST));
    }
    mail_free(m);
}

extern "C" void comm_get_stats(const struct comm *, struct comm_stats *out)
{
    *out = comm_stats{};
}

namespace
{
using namespace testutil;

struct Item {
    uint32_t id, attempt;
};

struct JsonDeleter {
    void operator()(json_t *j) const
    {
        json_decref(j);
    }
};
using JsonPtr = std::unique_ptr<json_t, JsonDeleter>;

class MasterJoinTest : public TempDirTest
{
  protected:
    MasterJoinTest() : TempDirTest("test_master_join") {}

    ~MasterJoinTest() override
    {
        master_destroy(m_);
    }

    // A DAG of 6 roots t0..t5 and c, a child of t0; a joined master over it.
    void create(uint32_t min_hosts, double node_timeout_s)
    {
        std::string text;
        for (int k = 0; k < 6; k++)
            text += "TASK t" + std::to_string(k) + " /bin/true\n";
        text += "TASK c /bin/true\nEDGE t0 c\n";
        dag_ = file("wf.dag", text);
        summary_ = path("summary.json");
        status_ = path("status.json");
        master_config cfg{};
        cfg.dag_path = dag_.c_str();
        cfg.tries = 3;
        cfg.program = "test_master_join";
        cfg.jobstate_log = true;
        cfg.summary_json_path = summary_.c_str();
        cfg.status_path = status_.c_str();
        cfg.joined = true;
        cfg.min_hosts = min_hosts;
        cfg.node_timeout_s = node_timeout_s;
        pmc_error err{};
        m_ = master_create(&cfg, &err);
        ASSERT_NE(m_, nullptr) << err.text;
        ASSERT_EQ(master_open_outputs(m_), 0);
        comm_.master_box = master_mailbox(m_);
    }

    void push(struct mail *ml)
    {
        ASSERT_NE(ml, nullptr);
        mailbox_push(master_mailbox(m_), ml);
    }

    void hello(int rank, uint32_t cpus, const char *host)
    {
        msg_hello h{0, 1, cpus, 0, 4000, host};
        msgbuf b{};
        ASSERT_EQ(msg_begin(&b, MSG_HELLO), 0);
        ASSERT_EQ(msg_add_hello(&b, &h), 0);
        msg_end(&b);
        push(mail_from_msgbuf(rank, COMM_TO_MASTER, &b));
    }

    void control(int rank, msg_kind kind)
    {
        push(mail_control(rank, COMM_TO_MASTER, kind));
    }

    // One RESULTS message from rank: each item succeeded, or was given
    // back unstarted (ECANCELED) when cancel holds its id.
    void results(int rank, const std::vector<Item> &items, const std::set<uint32_t> &cancel = {})
    {
        msgbuf b{};
        ASSERT_EQ(msg_begin(&b, MSG_RESULTS), 0);
        for (const Item &it : items) {
            msg_result r{};
            r.id = it.id;
            r.attempt = it.attempt;
            r.exec_errno = cancel.count(it.id) ? ECANCELED : 0;
            r.start = 1.7e9;
            r.duration = 0.01;
            ASSERT_EQ(msg_add_result(&b, &r), 0);
        }
        msg_end(&b);
        push(mail_from_msgbuf(rank, COMM_TO_MASTER, &b));
    }

    // The kinds of the messages sent to rank, in order.
    std::vector<msg_kind> kinds(int rank)
    {
        std::lock_guard<std::mutex> lock(comm_.mu);
        std::vector<msg_kind> out;
        for (const auto &bytes : comm_.to[rank]) {
            msg_reader r{};
            pmc_error err{};
            EXPECT_EQ(msg_open(&r, bytes.data(), bytes.size(), &err), 0) << err.text;
            out.push_back((msg_kind)r.kind);
        }
        return out;
    }

    // The tasks sent to rank since the last call for it.
    std::vector<Item> new_tasks(int rank)
    {
        std::lock_guard<std::mutex> lock(comm_.mu);
        std::vector<Item> out;
        auto &msgs = comm_.to[rank];
        for (size_t &k = seen_[rank]; k < msgs.size(); k++) {
            msg_reader r{};
            pmc_error err{};
            EXPECT_EQ(msg_open(&r, msgs[k].data(), msgs[k].size(), &err), 0) << err.text;
            if (r.kind != MSG_TASKS)
                continue;
            msg_task t{};
            while (msg_next_task(&r, &t, &err) == 1)
                out.push_back({t.id, t.attempt});
        }
        return out;
    }

    uint32_t id(const char *name)
    {
        const struct dag *d = master_dag(m_);
        for (uint32_t t = 0; t < d->ntasks; t++)
            if (std::string(dag_task_name(d, t)) == name)
                return t;
        ADD_FAILURE() << "no task " << name;
        return 0;
    }

    // master_begin() with the HELLOs already in the mailbox.
    void begin()
    {
        ASSERT_EQ(master_begin(m_, &comm_), 0);
    }

    // master_step() until the workflow is over, sleeping between steps, at
    // most 10 s; true when it ended.
    bool step_to_end()
    {
        auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
        while (!master_step(m_)) {
            if (std::chrono::steady_clock::now() > until)
                return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        return true;
    }

    // Task name -> how many DONE records the rescue log holds.
    std::map<std::string, int> rescue_done()
    {
        std::map<std::string, int> done;
        std::istringstream in(read_file(dag_ + ".rescue"));
        for (std::string l; std::getline(in, l);)
            if (l.rfind("DONE ", 0) == 0)
                done[l.substr(5)]++;
        return done;
    }

    // Task name -> how many jobstate.log lines of that state.
    std::map<std::string, int> jobstate(const std::string &state)
    {
        std::map<std::string, int> n;
        std::istringstream in(read_file(path("jobstate.log")));
        for (std::string l; std::getline(in, l);) {
            std::istringstream f(l);
            std::string ts, name, st;
            f >> ts >> name >> st;
            if (st == state)
                n[name]++;
        }
        return n;
    }

    JsonPtr json(const std::string &file)
    {
        json_error_t e;
        JsonPtr j(json_load_file(file.c_str(), 0, &e));
        EXPECT_NE(j, nullptr) << file << ": " << e.text;
        return j;
    }

    static json_int_t int_at(json_t *o, const char *key)
    {
        json_t *v = json_object_get(o, key);
        EXPECT_TRUE(json_is_integer(v)) << key;
        return json_integer_value(v);
    }

    struct comm comm_;
    struct master *m_ = nullptr;
    std::string dag_, summary_, status_;
    std::map<int, size_t> seen_;
};

std::set<uint32_t> ids(const std::vector<Item> &items)
{
    std::set<uint32_t> out;
    for (const Item &it : items)
        out.insert(it.id);
    return out;
}

// ---- joining, loss, late results, the end -------------------------------------

TEST_F(MasterJoinTest, LostNodesTasksRunElsewhereUnchargedAndDoneOnce)
{
    create(2, 5.0);
    // master_begin() waits for the second HELLO, dispatching nothing
    hello(1, 2, "hostA");
    std::atomic<int> begun{-2};
    std::thread t([&] { begun = master_begin(m_, &comm_); });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(begun.load(), -2) << "started with 1 of --min-hosts 2 nodes";
    hello(2, 2, "hostB");
    t.join();
    ASSERT_EQ(begun.load(), 0);
    EXPECT_TRUE(kinds(1).empty()) << "nothing is sent before the run starts";

    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on1 = new_tasks(1), on2 = new_tasks(2);
    ASSERT_EQ(on1.size() + on2.size(), 6u) << "the six roots go out at once";
    ASSERT_GE(on1.size(), 2u);
    ASSERT_GE(on2.size(), 2u);
    for (const Item &it : on1)
        EXPECT_EQ(it.attempt, 1u);

    // a third node joins; then rank 1 is lost with its tasks running
    hello(3, 4, "hostC");
    EXPECT_FALSE(master_step(m_));
    EXPECT_TRUE(new_tasks(3).empty()) << "nothing was ready";
    size_t to1 = kinds(1).size();
    control(1, MSG_PEER_LOST);
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> re3 = new_tasks(3), re2 = new_tasks(2), again = re3;
    EXPECT_FALSE(re3.empty()) << "the node that joined mid-run gets work at once";
    again.insert(again.end(), re2.begin(), re2.end());
    EXPECT_EQ(ids(again), ids(on1)) << "rank 1's tasks, and only those, are sent again";
    for (const Item &it : again)
        EXPECT_EQ(it.attempt, 1u) << "task " << it.id << " was charged a try for a lost node";

    // rank 1 comes back from a partition with a result: ignored
    results(1, {on1[0]});
    EXPECT_FALSE(master_step(m_));
    EXPECT_TRUE(new_tasks(2).empty() && new_tasks(3).empty());
    // the real results
    on2.insert(on2.end(), re2.begin(), re2.end());
    results(2, on2);
    results(3, re3);
    EXPECT_FALSE(master_step(m_)); // c is ready now
    std::vector<Item> c2 = new_tasks(2), c3 = new_tasks(3);
    ASSERT_EQ(c2.size() + c3.size(), 1u);
    Item c = c2.empty() ? c3[0] : c2[0];
    EXPECT_EQ(c.id, id("c"));
    results(c2.empty() ? 3 : 2, {c});
    ASSERT_TRUE(step_to_end());

    // a node that joins once the workflow is over is sent SHUTDOWN at once
    hello(4, 2, "hostD");
    EXPECT_EQ(master_end(m_), 0) << "a late result must not fail the run";
    EXPECT_EQ(kinds(1).size(), to1) << "nothing is sent to a lost node";
    EXPECT_EQ(kinds(4), std::vector<msg_kind>{MSG_SHUTDOWN});
    EXPECT_EQ(kinds(2).back(), MSG_SHUTDOWN);
    EXPECT_EQ(kinds(3).back(), MSG_SHUTDOWN);

    std::map<std::string, int> done = rescue_done();
    EXPECT_EQ(done.size(), 7u);
    for (const auto &[name, n] : done)
        EXPECT_EQ(n, 1) << name << " is DONE " << n << " times";
    std::map<std::string, int> submits = jobstate("SUBMIT"), ok = jobstate("JOB_SUCCESS");
    EXPECT_EQ(submits.size(), 7u);
    for (const auto &[name, n] : submits)
        EXPECT_EQ(n, 1) << name << ": a requeued attempt is the same job instance";
    EXPECT_EQ(ok.size(), 7u);
    EXPECT_TRUE(jobstate("JOB_FAILURE").empty());

    JsonPtr s = json(summary_);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(int_at(s.get(), "exit_status"), 0);
    EXPECT_EQ(int_at(s.get(), "submitted"), 7);
    EXPECT_EQ(int_at(s.get(), "extra"), 0);
    json_t *hist = json_object_get(json_object_get(s.get(), "attempts"), "histogram");
    EXPECT_EQ(json_object_size(hist), 1u) << "every task ran one attempt";
    EXPECT_EQ(int_at(hist, "1"), 7);
    json_t *mb = json_object_get(s.get(), "membership");
    ASSERT_TRUE(json_is_object(mb));
    EXPECT_EQ(int_at(mb, "nodes_joined"), 4);
    EXPECT_EQ(int_at(mb, "nodes_lost"), 1);
    EXPECT_EQ(int_at(mb, "nodes_left"), 0);
    EXPECT_EQ(int_at(mb, "tasks_requeued"), (json_int_t)on1.size());
    json_t *lost = json_object_get(mb, "lost_nodes");
    ASSERT_EQ(json_array_size(lost), 1u);
    EXPECT_EQ(int_at(json_array_get(lost, 0), "rank"), 1);
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(lost, 0), "host")), "hostA");
    EXPECT_EQ(int_at(json_array_get(lost, 0), "tasks_requeued"), (json_int_t)on1.size());

    JsonPtr st = json(status_);
    ASSERT_NE(st, nullptr);
    json_t *smb = json_object_get(st.get(), "membership");
    EXPECT_EQ(int_at(smb, "nodes_lost"), 1);
    EXPECT_EQ(json_array_size(json_object_get(smb, "lost_nodes")), 1u);
    json_t *nodes = json_object_get(st.get(), "nodes");
    ASSERT_EQ(json_array_size(nodes), 4u);
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(nodes, 0), "state")), "lost");
    EXPECT_STREQ(json_string_value(json_object_get(json_array_get(nodes, 1), "state")), "left");
}

// ---- leaving ------------------------------------------------------------------

TEST_F(MasterJoinTest, LeavingNodeIsSentNothingMoreAndItsGiveBacksRunElsewhere)
{
    create(1, 5.0);
    hello(1, 2, "hostA");
    hello(2, 2, "hostB");
    begin();
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on1 = new_tasks(1), on2 = new_tasks(2);
    ASSERT_GE(on1.size(), 2u);
    // rank 1 leaves: its first task ran, the rest come back unstarted
    control(1, MSG_LEAVING);
    std::set<uint32_t> cancel;
    for (size_t k = 1; k < on1.size(); k++)
        cancel.insert(on1[k].id);
    results(1, on1, cancel);
    size_t to1 = kinds(1).size();
    EXPECT_FALSE(master_step(m_));
    EXPECT_EQ(kinds(1).size(), to1) << "a leaving node is sent nothing";
    std::vector<Item> back = new_tasks(2);
    std::set<uint32_t> back_ids = ids(back);
    back_ids.erase(id("c")); // released if rank 1's finished task was t0
    EXPECT_EQ(back_ids, cancel) << "the give-backs go to rank 2";
    for (const Item &it : back)
        EXPECT_EQ(it.attempt, 1u);
    control(1, MSG_PEER_LOST); // it closes its link: nothing to requeue
    EXPECT_FALSE(master_step(m_));
    EXPECT_TRUE(new_tasks(2).empty());
    on2.insert(on2.end(), back.begin(), back.end());
    results(2, on2);
    while (!master_step(m_)) { // c, if it was not sent yet
        std::vector<Item> more = new_tasks(2);
        ASSERT_LE(more.size(), 1u);
        if (!more.empty())
            results(2, more);
    }
    EXPECT_EQ(master_end(m_), 0);
    EXPECT_EQ(kinds(1).size(), to1) << "no SHUTDOWN to a node that left";
    EXPECT_EQ(kinds(2).back(), MSG_SHUTDOWN);

    std::map<std::string, int> done = rescue_done();
    EXPECT_EQ(done.size(), 7u);
    for (const auto &[name, n] : done)
        EXPECT_EQ(n, 1) << name;
    JsonPtr s = json(summary_);
    ASSERT_NE(s, nullptr);
    EXPECT_EQ(int_at(s.get(), "extra"), 0);
    json_t *mb = json_object_get(s.get(), "membership");
    EXPECT_EQ(int_at(mb, "nodes_joined"), 2);
    EXPECT_EQ(int_at(mb, "nodes_left"), 1);
    EXPECT_EQ(int_at(mb, "nodes_lost"), 0);
    EXPECT_EQ(int_at(mb, "tasks_requeued"), 0);
    EXPECT_EQ(json_array_size(json_object_get(mb, "lost_nodes")), 0u);
}

// ---- every node lost ------------------------------------------------------------

// The log of a scope, in a file (log_set_fd()).
class CapturedLog
{
  public:
    explicit CapturedLog(const std::string &path) : path_(path)
    {
        fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        EXPECT_GE(fd_, 0);
        log_set_fd(fd_);
    }
    ~CapturedLog()
    {
        log_set_fd(2);
        close(fd_);
    }
    std::string text() const
    {
        return read_file(path_);
    }

  private:
    std::string path_;
    int fd_;
};

TEST_F(MasterJoinTest, EveryNodeLostFailsAfterTheWaitKeepingTheRescueLog)
{
    const double timeout = 0.02; // the wait: ALL_LOST_WAIT_TIMEOUTS x 0.02 s
    create(1, timeout);
    CapturedLog log(path("log"));
    hello(1, 2, "hostA");
    begin();
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on1 = new_tasks(1);
    ASSERT_EQ(on1.size(), 6u);
    results(1, {on1[1]});
    control(1, MSG_PEER_LOST);
    auto t0 = std::chrono::steady_clock::now();
    ASSERT_TRUE(step_to_end());
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(waited, 10 * timeout * 0.99);
    EXPECT_EQ(master_end(m_), 1);
    EXPECT_NE(log.text().find("Rank 1 on host hostA was lost: 5 tasks requeued"), std::string::npos)
        << log.text();
    EXPECT_NE(log.text().find("Every node was lost and none joined within 0.2 s"),
              std::string::npos)
        << log.text();
    std::map<std::string, int> done = rescue_done();
    EXPECT_EQ(done, (std::map<std::string, int>{{dag_task_name(master_dag(m_), on1[1].id), 1}}));
    JsonPtr s = json(summary_);
    ASSERT_NE(s, nullptr);
    EXPECT_STREQ(json_string_value(json_object_get(s.get(), "stat")), "failed");
    json_t *mb = json_object_get(s.get(), "membership");
    EXPECT_EQ(int_at(mb, "nodes_lost"), 1);
    EXPECT_EQ(int_at(mb, "tasks_requeued"), 5);
}

TEST_F(MasterJoinTest, NodeJoiningWithinTheWaitCarriesTheRunOn)
{
    create(1, 0.5); // a wait of 5 s: the test ends long before
    hello(1, 2, "hostA");
    begin();
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on1 = new_tasks(1);
    control(1, MSG_PEER_LOST);
    EXPECT_FALSE(master_step(m_));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(master_step(m_)) << "no node: the run waits";
    hello(2, 2, "hostB");
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on2 = new_tasks(2);
    EXPECT_EQ(ids(on2), ids(on1));
    results(2, on2);
    EXPECT_FALSE(master_step(m_));
    results(2, new_tasks(2));
    ASSERT_TRUE(step_to_end());
    EXPECT_EQ(master_end(m_), 0);
    EXPECT_EQ(rescue_done().size(), 7u);
}

TEST_F(MasterJoinTest, LeavingNodeIsNotLostWhileItFinishes)
{
    create(1, 0.01); // a wait of 0.1 s once no node is left
    hello(1, 2, "hostA");
    begin();
    EXPECT_FALSE(master_step(m_));
    std::vector<Item> on1 = new_tasks(1);
    ASSERT_EQ(on1.size(), 6u);
    control(1, MSG_LEAVING);
    EXPECT_FALSE(master_step(m_));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_FALSE(master_step(m_)) << "the leaving node still runs its tasks";
    std::set<uint32_t> cancel = ids(on1);
    cancel.erase(on1[0].id);
    results(1, on1, cancel);
    control(1, MSG_PEER_LOST);
    EXPECT_FALSE(master_step(m_)) << "no node: the wait begins now";
    hello(2, 2, "hostB");
    while (!master_step(m_)) {
        std::vector<Item> more = new_tasks(2);
        if (!more.empty())
            results(2, more);
    }
    EXPECT_EQ(master_end(m_), 0);
    EXPECT_EQ(rescue_done().size(), 7u);
}

// ---- the wait for --min-hosts ----------------------------------------------------

TEST_F(MasterJoinTest, SignalEndsTheWaitForNodes)
{
    create(3, 5.0);
    hello(1, 2, "hostA");
    std::atomic<int> begun{-2};
    std::thread t([&] { begun = master_begin(m_, &comm_); });
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(begun.load(), -2);
    master_request_abort(m_, "SIGTERM");
    t.join();
    EXPECT_EQ(begun.load(), -1);
    EXPECT_EQ(master_end(m_), 1);
    EXPECT_EQ(kinds(1), std::vector<msg_kind>{MSG_ABORT}) << "the node that came is told";
}

} // namespace
