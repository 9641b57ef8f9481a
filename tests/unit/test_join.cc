// test_join.cc - the join link over ZeroMQ (engine/transport/join.h), on
// loopback with ephemeral ports.  Agents join and messages go both ways;
// several agents each get their own replies; a silent agent is lost
// within the timeout (the measured latency is printed), answered EXPELLED
// when it comes back, and nothing it sends afterwards is delivered; an
// agent sees its master go (silent, or closed); and no connection without
// the run's keys gets in: no CURVE, a wrong client key, a wrong server
// key, random bytes, a recorded handshake replayed, truncated handshakes.
// Each of those is refused without a crash and delivers nothing, while a
// legitimate agent keeps working beside it.
//
// The master runs on a thread of its own (MasterLoop), the link's owner;
// agents are owned by the test's thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>
#include <zmq.h>

#include "engine/transport/join.h"
#include "io/clock.h"
#include "testutil.h"

// ThreadSanitizer: libzmq and libsodium are not instrumented, so the
// hand-off of a message between ZeroMQ's I/O thread and ours (a lock-free
// pipe with atomics TSan cannot see) shows as a race on the memcpy and
// memmove they call.  Interceptors called from those two libraries are
// ignored; our own code stays checked.
extern "C" const char *__tsan_default_suppressions()
{
    return "called_from_lib:libzmq.so\ncalled_from_lib:libsodium.so\n";
}

namespace
{

// Seconds: short enough for quick tests, long enough that an agent the test
// does not poll for a while (it waits on the master) is not lost on a
// loaded machine.  Tests of loss choose their own.
const double HEARTBEAT = 0.1, TIMEOUT = 2.0;

struct Event {
    join_event_kind kind;
    uint32_t peer;
    join_cause cause;
    std::string data;
    double at; // pmc_mono_s()
};

// A master on its own thread: it polls the link, records every event, and
// runs the sends the test queues (join_send() belongs to the owner).
class MasterLoop
{
  public:
    MasterLoop(const std::string &access, double heartbeat = HEARTBEAT, double timeout = TIMEOUT)
    {
        join_options o{};
        o.bind = "tcp://127.0.0.1:*";
        o.heartbeat_s = heartbeat;
        o.timeout_s = timeout;
        pmc_error err;
        j_ = join_listen(access.c_str(), &o, &err);
        EXPECT_NE(j_, nullptr) << err.text;
        if (j_) {
            endpoint_ = join_endpoint(j_);
            thread_ = std::thread([this] { run(); });
        }
    }
    ~MasterLoop()
    {
        stop();
    }
    // Close the link (BYE to every agent) and end the thread.
    void stop()
    {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
    }
    void send(uint32_t peer, const std::string &bytes)
    {
        std::lock_guard<std::mutex> g(mu_);
        sends_.push_back({peer, bytes});
    }
    // Stop polling (a hung master) or go on.
    void pause(bool on)
    {
        paused_ = on;
    }
    // Wait until pred(events) holds, up to seconds; returns whether it did.
    bool wait(const std::function<bool(const std::vector<Event> &)> &pred, double seconds = 5)
    {
        std::unique_lock<std::mutex> g(mu_);
        return cv_.wait_for(g, std::chrono::duration<double>(seconds),
                            [&] { return pred(events_); });
    }
    std::vector<Event> events()
    {
        std::lock_guard<std::mutex> g(mu_);
        return events_;
    }
    join_stats stats()
    {
        std::lock_guard<std::mutex> g(mu_);
        return stats_;
    }
    // Wait until pred(stats) holds (the counters lag the link by one poll).
    bool wait_stats(const std::function<bool(const join_stats &)> &pred, double seconds = 5)
    {
        std::unique_lock<std::mutex> g(mu_);
        return cv_.wait_for(g, std::chrono::duration<double>(seconds),
                            [&] { return pred(stats_); });
    }
    bool ok() const
    {
        return j_ != nullptr;
    }
    const std::string &endpoint() const
    {
        return endpoint_;
    }

  private:
    void run()
    {
        while (!stop_) {
            if (paused_) {
                std::this_thread::sleep_for(std::chrono::milliseconds(5));
                continue;
            }
            std::vector<std::pair<uint32_t, std::string>> sends;
            {
                std::lock_guard<std::mutex> g(mu_);
                sends.swap(sends_);
            }
            for (auto &s : sends)
                EXPECT_EQ(join_send(j_, s.first, s.second.data(), s.second.size()), 0)
                    << "to " << s.first << ": " << strerror(errno);
            join_event ev;
            int r = join_poll(j_, 0.005, &ev);
            EXPECT_GE(r, 0) << strerror(errno);
            std::lock_guard<std::mutex> g(mu_);
            if (r == 1)
                events_.push_back({ev.kind, ev.peer, ev.cause,
                                   std::string(static_cast<const char *>(ev.data), ev.len),
                                   pmc_mono_s()});
            join_get_stats(j_, &stats_);
            cv_.notify_all();
        }
        join_close(j_);
    }

    join *j_ = nullptr;
    std::string endpoint_;
    std::thread thread_;
    std::atomic<bool> stop_{false}, paused_{false};
    std::mutex mu_;
    std::condition_variable cv_;
    std::vector<Event> events_;
    std::vector<std::pair<uint32_t, std::string>> sends_;
    join_stats stats_{};
};

size_t count(const std::vector<Event> &ev, join_event_kind kind)
{
    size_t n = 0;
    for (const Event &e : ev)
        n += e.kind == kind;
    return n;
}

join *agent_join(const std::string &access, const std::string &hello)
{
    pmc_error err;
    join *a = join_connect(access.c_str(), hello.data(), hello.size(), &err);
    EXPECT_NE(a, nullptr) << err.text;
    return a;
}

// Poll agent a until an event comes, up to seconds; false if none came.
bool agent_event(join *a, join_event *ev, double seconds = 5)
{
    double end = pmc_mono_s() + seconds;
    for (double now = pmc_mono_s(); now < end; now = pmc_mono_s())
        if (join_poll(a, end - now, ev) == 1)
            return true;
    return false;
}

std::string bytes_of(const join_event &ev)
{
    return std::string(static_cast<const char *>(ev.data), ev.len);
}

TEST(Join, AgentJoinsAndMessagesGoBothWays)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    join *a = agent_join(access, "hello: 4 cpus");
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_JOINED) == 1; }));
    Event joined = m.events()[0];
    EXPECT_EQ(joined.kind, JOIN_JOINED);
    EXPECT_EQ(joined.peer, 1u);
    EXPECT_EQ(joined.data, "hello: 4 cpus");

    std::string big(1 << 20, 'x');
    for (size_t i = 0; i < big.size(); i += 4096)
        big[i] = static_cast<char>(i / 4096);
    ASSERT_EQ(join_send(a, JOIN_MASTER, "results 1", 9), 0);
    ASSERT_EQ(join_send(a, JOIN_MASTER, "", 0), 0);
    ASSERT_EQ(join_send(a, JOIN_MASTER, big.data(), big.size()), 0);
    ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_MESSAGE) == 3; }));
    auto ev = m.events();
    EXPECT_EQ(ev[1].data, "results 1");
    EXPECT_EQ(ev[2].data, "");
    EXPECT_EQ(ev[3].data, big);
    for (int i = 1; i <= 3; i++)
        EXPECT_EQ(ev[i].peer, 1u);

    m.send(1, "tasks 7");
    m.send(1, big);
    join_event e;
    ASSERT_TRUE(agent_event(a, &e));
    EXPECT_EQ(e.kind, JOIN_MESSAGE);
    EXPECT_EQ(e.peer, JOIN_MASTER);
    EXPECT_EQ(bytes_of(e), "tasks 7");
    ASSERT_TRUE(agent_event(a, &e));
    EXPECT_EQ(bytes_of(e), big);

    EXPECT_EQ(join_send(a, 5, "x", 1), -1);
    EXPECT_EQ(errno, ENOENT);
    join_close(a); // BYE: the master loses it at once, cause "left"
    ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_LOST) == 1; }, 2 * TIMEOUT));
    Event lost = m.events().back();
    EXPECT_EQ(lost.peer, 1u);
    EXPECT_EQ(lost.cause, JOIN_CAUSE_LEFT);
    EXPECT_LT(lost.at - ev[3].at, TIMEOUT) << "a BYE must not wait for the timeout";
}

TEST(Join, SeveralAgentsEachGetTheirOwnReplies)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    const int N = 5;
    std::vector<join *> agents;
    for (int i = 0; i < N; i++)
        agents.push_back(agent_join(access, "agent " + std::to_string(i)));
    ASSERT_TRUE(m.wait([&](auto &evs) { return count(evs, JOIN_JOINED) == N; }));
    // Peer numbers are 1..N, each hello is the one its agent sent.
    std::vector<uint32_t> peer_of(N);
    for (const Event &e : m.events()) {
        int i = std::stoi(e.data.substr(6));
        peer_of[i] = e.peer;
    }
    for (int i = 0; i < N; i++) {
        EXPECT_GE(peer_of[i], 1u);
        EXPECT_LE(peer_of[i], static_cast<uint32_t>(N));
        for (int k = 0; k < i; k++)
            EXPECT_NE(peer_of[i], peer_of[k]);
        std::string msg = "from " + std::to_string(i);
        ASSERT_EQ(join_send(agents[i], JOIN_MASTER, msg.data(), msg.size()), 0);
    }
    ASSERT_TRUE(m.wait([&](auto &evs) { return count(evs, JOIN_MESSAGE) == N; }));
    for (const Event &e : m.events())
        if (e.kind == JOIN_MESSAGE) {
            int i = std::stoi(e.data.substr(5));
            EXPECT_EQ(e.peer, peer_of[i]) << "message of agent " << i;
            m.send(e.peer, "reply to " + std::to_string(i));
        }
    for (int i = 0; i < N; i++) {
        join_event e;
        ASSERT_TRUE(agent_event(agents[i], &e));
        EXPECT_EQ(bytes_of(e), "reply to " + std::to_string(i));
    }
    for (join *a : agents)
        join_close(a);
    ASSERT_TRUE(m.wait([&](auto &evs) { return count(evs, JOIN_LOST) == N; }));
}

TEST(Join, SilentAgentIsLostWithinTheTimeoutAndExpelledWhenBack)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    const double hb = 0.1, timeout = 1.0;
    MasterLoop m(access, hb, timeout);
    ASSERT_TRUE(m.ok());
    join *a = agent_join(access, "h");
    ASSERT_NE(a, nullptr);
    // While both poll, heartbeats keep the idle link up for several timeouts.
    join_event e;
    EXPECT_FALSE(agent_event(a, &e, 3 * timeout));
    EXPECT_EQ(count(m.events(), JOIN_LOST), 0u);
    join_stats s;
    join_get_stats(a, &s);
    EXPECT_GE(s.heartbeats_received, 10u);

    // The agent stops (a hung node): its socket stays open, nothing is sent.
    double t0 = pmc_mono_s();
    ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_LOST) == 1; }, 3 * timeout));
    Event lost = m.events().back();
    double latency = lost.at - t0;
    printf("[ measure  ] silent agent declared lost %.3f s after it stopped "
           "(heartbeat %.2f s, timeout %.2f s)\n",
           latency, hb, timeout);
    EXPECT_EQ(lost.cause, JOIN_CAUSE_TIMEOUT);
    EXPECT_GE(latency, timeout - 1.5 * hb - 0.01);
    EXPECT_LE(latency, timeout + hb / 2 + 0.5); // slack for a loaded machine

    // Back from its partition, the agent's results are not delivered, and
    // the master's answer expels it.
    ASSERT_EQ(join_send(a, JOIN_MASTER, "late result", 11), 0);
    ASSERT_TRUE(agent_event(a, &e, 2 * timeout));
    EXPECT_EQ(e.kind, JOIN_LOST);
    EXPECT_EQ(e.cause, JOIN_CAUSE_EXPELLED);
    EXPECT_EQ(join_poll(a, 0, &e), -1);
    EXPECT_EQ(errno, EPIPE);
    EXPECT_EQ(join_send(a, JOIN_MASTER, "x", 1), -1);
    EXPECT_EQ(errno, EPIPE);
    EXPECT_TRUE(m.wait_stats([](const join_stats &st) { return st.dropped >= 1; }));
    EXPECT_EQ(count(m.events(), JOIN_MESSAGE), 0u);
    join_close(a);
}

// The agent process of KilledAgentIsLostAtTheNextHeartbeat: this test
// binary run again with PMC_TEST_JOIN_AGENT naming the access file (a
// fresh process: no thread may start after a fork of a threaded one).
// It joins and polls until killed, before gtest's main runs.
const int child_agent = [] {
    const char *access = getenv("PMC_TEST_JOIN_AGENT");
    if (!access)
        return 0;
    for (int i = 0; i < 500 && ::access(access, F_OK) != 0; i++)
        usleep(10000);
    join *a = join_connect(access, "child", 5, nullptr);
    join_event e;
    for (double end = pmc_mono_s() + 30; a && pmc_mono_s() < end;)
        if (join_poll(a, 0.1, &e) < 0)
            break;
    _exit(1);
}();

// An agent process killed (SIGKILL: its kernel closes the connection) is
// lost at the master's next heartbeat to it, before the timeout.
TEST(Join, KilledAgentIsLostAtTheNextHeartbeat)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    const double hb = 0.1, timeout = 2.0;
    pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        setenv("PMC_TEST_JOIN_AGENT", access.c_str(), 1);
        execl("/proc/self/exe", "test_join", static_cast<char *>(nullptr));
        _exit(127);
    }
    MasterLoop m(access, hb, timeout);
    ASSERT_TRUE(m.ok());
    bool joined = m.wait([](auto &evs) { return count(evs, JOIN_JOINED) == 1; });
    double t0 = pmc_mono_s();
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    ASSERT_TRUE(joined);
    ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_LOST) == 1; }, 2 * timeout));
    Event lost = m.events().back();
    printf("[ measure  ] killed agent declared lost %.3f s after SIGKILL "
           "(heartbeat %.2f s, timeout %.2f s)\n",
           lost.at - t0, hb, timeout);
    EXPECT_EQ(lost.cause, JOIN_CAUSE_TRANSPORT);
    EXPECT_LT(lost.at - t0, timeout / 2);
}

TEST(Join, AgentSeesItsMasterGo)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    const double hb = 0.1, timeout = 1.0;
    {
        MasterLoop m(access, hb, timeout);
        ASSERT_TRUE(m.ok());
        join *a = agent_join(access, "h");
        ASSERT_NE(a, nullptr);
        join_event e;
        EXPECT_FALSE(agent_event(a, &e, timeout)); // alive
        m.pause(true);                             // the master hangs
        double t0 = pmc_mono_s();
        ASSERT_TRUE(agent_event(a, &e, 3 * timeout));
        double latency = pmc_mono_s() - t0;
        printf("[ measure  ] agent declared its silent master lost after %.3f s "
               "(heartbeat %.2f s, timeout %.2f s)\n",
               latency, hb, timeout);
        EXPECT_EQ(e.kind, JOIN_LOST);
        EXPECT_EQ(e.cause, JOIN_CAUSE_TIMEOUT);
        EXPECT_GE(latency, timeout - 1.5 * hb - 0.01);
        EXPECT_LE(latency, timeout + hb / 2 + 0.5); // slack for a loaded machine
        join_close(a);
        m.pause(false);
    }
    {
        MasterLoop m(access, hb, timeout); // the first master removed its file
        ASSERT_TRUE(m.ok());
        join *a = agent_join(access, "h");
        ASSERT_NE(a, nullptr);
        double t0 = pmc_mono_s();
        m.stop(); // closes: BYE
        join_event e;
        ASSERT_TRUE(agent_event(a, &e, 3 * timeout));
        EXPECT_EQ(e.kind, JOIN_LOST);
        EXPECT_EQ(e.cause, JOIN_CAUSE_LEFT);
        EXPECT_LT(pmc_mono_s() - t0, timeout);
        join_close(a);
        EXPECT_NE(::access(access.c_str(), F_OK), 0) << "the master left its access file";
    }
}

TEST(Join, SecondMasterOnALiveRunsFileIsRefused)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    join_options o{};
    o.bind = "tcp://127.0.0.1:*";
    pmc_error err;
    errno = 0;
    EXPECT_EQ(join_listen(access.c_str(), &o, &err), nullptr);
    EXPECT_EQ(errno, EEXIST);
    o.heartbeat_s = 1;
    o.timeout_s = 1.5;
    EXPECT_EQ(join_listen(d.path("other").c_str(), &o, &err), nullptr);
    EXPECT_EQ(errno, EINVAL);
    EXPECT_NE(std::string(err.text).find("at least twice"), std::string::npos) << err.text;
}

TEST(Join, ConnectWithoutAccessFileIsAClearError)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("none.access");
    pmc_error err;
    errno = 0;
    EXPECT_EQ(join_connect(access.c_str(), "h", 1, &err), nullptr);
    EXPECT_EQ(errno, ENOENT);
    EXPECT_NE(std::string(err.text).find(access + ": No such file"), std::string::npos) << err.text;
}

TEST(Join, ConnectToAGoneMasterSaysSo)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    std::string copy = d.path("copy.access");
    {
        MasterLoop m(access);
        ASSERT_TRUE(m.ok());
        access_file a;
        pmc_error err;
        ASSERT_EQ(access_read(access.c_str(), &a, &err), 0) << err.text;
        a.master_pid = getpid() + 1000000;
        ASSERT_EQ(access_write(copy.c_str(), &a, &err), 0) << err.text;
    }
    pmc_error err;
    errno = 0;
    EXPECT_EQ(join_connect(copy.c_str(), "h", 1, &err), nullptr);
    EXPECT_EQ(errno, ETIMEDOUT);
    EXPECT_NE(std::string(err.text).find("nothing accepts connections there"), std::string::npos)
        << err.text;
}

// ---- security --------------------------------------------------------------

// The port of a "tcp://HOST:PORT" endpoint.
int port_of(const std::string &endpoint)
{
    return std::stoi(endpoint.substr(endpoint.rfind(':') + 1));
}

int tcp_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<uint16_t>(port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0) << strerror(errno);
    return fd;
}

// Read and drop what fd receives for seconds (or until it closes).
void drain_fd(int fd, double seconds)
{
    double end = pmc_mono_s() + seconds;
    char buf[4096];
    for (double now = pmc_mono_s(); now < end; now = pmc_mono_s()) {
        pollfd p{fd, POLLIN, 0};
        if (poll(&p, 1, static_cast<int>((end - now) * 1000) + 1) > 0 &&
            read(fd, buf, sizeof buf) <= 0)
            return;
    }
}

// Write bytes to the master's port on a fresh connection, read its answer
// for a while, close.
void send_raw(int port, const std::string &bytes, double hold = 0.2)
{
    int fd = tcp_connect(port);
    if (!bytes.empty()) {
        EXPECT_EQ(write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    }
    drain_fd(fd, hold);
    close(fd);
}

// A copy of the run's access file with some of it changed.
std::string altered_access(const testutil::TempDir &d, const std::string &access, const char *name,
                           const std::function<void(access_file &)> &change)
{
    access_file a;
    pmc_error err;
    EXPECT_EQ(access_read(access.c_str(), &a, &err), 0) << err.text;
    change(a);
    a.master_pid = getpid() + 1000000; // not this process: the file is another "run"
    std::string path = d.path(name);
    EXPECT_EQ(access_write(path.c_str(), &a, &err), 0) << err.text;
    return path;
}

// A legitimate agent joins, and works after every attack.
void still_works(MasterLoop &m, const std::string &access, size_t joined_before)
{
    join *a = agent_join(access, "legit");
    ASSERT_NE(a, nullptr);
    ASSERT_TRUE(m.wait([&](auto &evs) { return count(evs, JOIN_JOINED) == joined_before + 1; }));
    uint32_t peer = m.events().back().peer;
    ASSERT_EQ(join_send(a, JOIN_MASTER, "ok", 2), 0);
    ASSERT_TRUE(m.wait([&](auto &evs) { return count(evs, JOIN_MESSAGE) == joined_before + 1; }));
    m.send(peer, "ack");
    join_event e;
    ASSERT_TRUE(agent_event(a, &e));
    EXPECT_EQ(bytes_of(e), "ack");
    join_close(a);
}

TEST(JoinSecurity, WrongKeysNeverGetIn)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    pmc_error err;

    // Another client key pair: CURVE completes, the ZAP handler says no.
    std::string wrong_client = altered_access(d, access, "client", [](access_file &a) {
        ASSERT_EQ(zmq_curve_keypair(a.client_public, a.client_secret), 0);
    });
    errno = 0;
    double t0 = pmc_mono_s();
    EXPECT_EQ(join_connect(wrong_client.c_str(), "evil", 4, &err), nullptr);
    EXPECT_EQ(errno, EACCES);
    EXPECT_LT(pmc_mono_s() - t0, TIMEOUT) << "a refused key need not wait for the timeout";
    EXPECT_NE(std::string(err.text).find("refused this file's client key"), std::string::npos)
        << err.text;
    EXPECT_TRUE(m.wait_stats([](const join_stats &st) { return st.refused_auth >= 1; }));

    // The right client keys but another server key: the master cannot
    // open the client's HELLO box.
    std::string wrong_server = altered_access(d, access, "server", [](access_file &a) {
        char secret[41];
        ASSERT_EQ(zmq_curve_keypair(a.server_public, secret), 0);
    });
    errno = 0;
    EXPECT_EQ(join_connect(wrong_server.c_str(), "evil", 4, &err), nullptr);
    EXPECT_EQ(errno, ETIMEDOUT);
    EXPECT_NE(std::string(err.text).find("the master closed the handshake"), std::string::npos)
        << err.text;
    EXPECT_TRUE(m.wait_stats([](const join_stats &st) { return st.refused_handshake >= 1; }));

    // The client's public key with another secret key: no vouch.
    std::string wrong_secret = altered_access(d, access, "secret", [](access_file &a) {
        char pub[41];
        ASSERT_EQ(zmq_curve_keypair(pub, a.client_secret), 0);
    });
    EXPECT_EQ(join_connect(wrong_secret.c_str(), "evil", 4, &err), nullptr);

    EXPECT_EQ(count(m.events(), JOIN_JOINED), 0u);
    EXPECT_EQ(count(m.events(), JOIN_MESSAGE), 0u);
    still_works(m, access, 0);
}

TEST(JoinSecurity, NoCurveIsRefused)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    // A plain DEALER (NULL security) sends what looks like a HELLO.
    void *ctx = zmq_ctx_new();
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    ASSERT_EQ(zmq_connect(s, m.endpoint().c_str()), 0);
    unsigned char hdr[16] = {1, 1};
    for (int i = 0; i < 5; i++) {
        zmq_send(s, hdr, sizeof hdr, ZMQ_SNDMORE | ZMQ_DONTWAIT);
        zmq_send(s, "evil", 4, ZMQ_DONTWAIT);
    }
    EXPECT_TRUE(m.wait_stats([](const join_stats &st) { return st.refused_handshake >= 1; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(200)); // anything it might deliver
    zmq_close(s);
    zmq_ctx_term(ctx);
    EXPECT_EQ(count(m.events(), JOIN_JOINED), 0u);
    still_works(m, access, 0);
}

TEST(JoinSecurity, RandomBytesAreRefusedWithoutACrash)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    std::mt19937 gen(12345);
    int port = port_of(m.endpoint());
    for (int round = 0; round < 20; round++) {
        std::string junk(round < 10 ? 1 + gen() % 64 : 65536, '\0');
        for (char &c : junk)
            c = static_cast<char>(gen());
        if (round % 2)
            junk[0] = static_cast<char>(0xff); // looks like a ZMTP 3 signature's start
        send_raw(port, junk, 0.02);
    }
    send_raw(port, ""); // connect and close at once
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(count(m.events(), JOIN_JOINED), 0u);
    EXPECT_EQ(count(m.events(), JOIN_MESSAGE), 0u);
    printf("[ measure  ] random bytes: %llu handshake failures logged\n",
           static_cast<unsigned long long>(m.stats().refused_handshake));
    still_works(m, access, 0);
}

// A TCP relay between one agent and the master that records what the
// agent sent: a real handshake, to replay and cut.
class Relay
{
  public:
    explicit Relay(int master_port) : master_port_(master_port)
    {
        lfd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        sockaddr_in sa{};
        sa.sin_family = AF_INET;
        sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        EXPECT_EQ(bind(lfd_, reinterpret_cast<sockaddr *>(&sa), sizeof sa), 0);
        EXPECT_EQ(listen(lfd_, 1), 0);
        socklen_t len = sizeof sa;
        getsockname(lfd_, reinterpret_cast<sockaddr *>(&sa), &len);
        port_ = ntohs(sa.sin_port);
        thread_ = std::thread([this] { run(); });
    }
    ~Relay()
    {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
        close(lfd_);
    }
    int port() const
    {
        return port_;
    }
    // What the agent sent, once the relay ended.
    std::string recorded()
    {
        stop_ = true;
        if (thread_.joinable())
            thread_.join();
        return from_agent_;
    }

  private:
    void run()
    {
        pollfd lp{lfd_, POLLIN, 0};
        while (!stop_ && poll(&lp, 1, 10) == 0) {
        }
        if (stop_)
            return;
        int a = accept4(lfd_, nullptr, nullptr, SOCK_CLOEXEC);
        int m = tcp_connect(master_port_);
        char buf[65536];
        while (!stop_) {
            pollfd p[2] = {{a, POLLIN, 0}, {m, POLLIN, 0}};
            if (poll(p, 2, 10) <= 0)
                continue;
            if (p[0].revents) {
                ssize_t n = read(a, buf, sizeof buf);
                if (n <= 0)
                    break;
                from_agent_.append(buf, static_cast<size_t>(n));
                EXPECT_EQ(write(m, buf, static_cast<size_t>(n)), n);
            }
            if (p[1].revents) {
                ssize_t n = read(m, buf, sizeof buf);
                if (n <= 0)
                    break;
                EXPECT_EQ(write(a, buf, static_cast<size_t>(n)), n);
            }
        }
        close(a);
        close(m);
    }

    int master_port_, lfd_, port_ = 0;
    std::thread thread_;
    std::atomic<bool> stop_{false};
    std::string from_agent_;
};

TEST(JoinSecurity, ReplayedAndTruncatedHandshakesDeliverNothing)
{
    testutil::TempDir d("pmc-join");
    std::string access = d.path("run.access");
    MasterLoop m(access);
    ASSERT_TRUE(m.ok());
    int port = port_of(m.endpoint());
    std::string recorded;
    {
        Relay r(port);
        std::string via = altered_access(d, access, "via", [&](access_file &a) {
            snprintf(a.endpoint, sizeof a.endpoint, "tcp://127.0.0.1:%d", r.port());
        });
        join *a = agent_join(via, "recorded");
        ASSERT_NE(a, nullptr);
        ASSERT_EQ(join_send(a, JOIN_MASTER, "recorded result", 15), 0);
        ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_MESSAGE) == 1; }));
        join_close(a);
        ASSERT_TRUE(m.wait([](auto &evs) { return count(evs, JOIN_LOST) == 1; }));
        recorded = r.recorded();
    }
    ASSERT_GT(recorded.size(), 64u);
    uint64_t failures = m.stats().refused_handshake;

    send_raw(port, recorded, 0.3); // the whole conversation again
    std::vector<size_t> cuts = {
        1, 10, 11, 64, 65, 128, 200, recorded.size() / 2, recorded.size() - 1};
    for (size_t cut : cuts)
        send_raw(port, recorded.substr(0, cut), 0.05);
    send_raw(port, recorded.substr(0, 64), 2 * TIMEOUT); // held open past the handshake limit
    std::this_thread::sleep_for(std::chrono::milliseconds(200));

    EXPECT_EQ(count(m.events(), JOIN_JOINED), 1u) << "only the recorded agent joined";
    EXPECT_EQ(count(m.events(), JOIN_MESSAGE), 1u) << "only its one message came";
    EXPECT_TRUE(m.wait_stats([&](const join_stats &st) { return st.refused_handshake > failures; }))
        << "the replay was not refused";
    printf("[ measure  ] replay and %zu truncations: %llu handshake failures logged\n",
           cuts.size() + 1,
           static_cast<unsigned long long>(m.stats().refused_handshake - failures));
    still_works(m, access, 1);
}

} // namespace
