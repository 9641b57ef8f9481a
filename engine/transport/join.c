/* join.c - the join link over ZeroMQ: see join.h for the protocol, the
 * liveness rules and the thread-safety.
 *
 * One struct serves both sides (role).  The master owns a ROUTER (agents),
 * a REP bound at ZeroMQ's ZAP address (the handler that admits clients,
 * RFC 27/ZAP) and a PAIR reading the ROUTER's monitor events (handshake
 * failures, logged); an agent owns a DEALER, and while join_connect()
 * waits for the WELCOME a PAIR reading the DEALER's monitor (to say why
 * none came).  All of them are polled by their owner alone, with no thread
 * of ours: libzmq's I/O thread waits for the ZAP reply without blocking,
 * so one owner thread is enough.
 *
 * Peers live in a flat array indexed by their number - 1; each message's
 * header names its sender's number, checked against the ROUTER's routing
 * id, so no lookup by id is needed but at HELLO.  An agent picks a random
 * 16-byte routing id: with ZMQ_ROUTER_HANDOVER a DEALER that reconnects
 * after a broken TCP connection keeps its place (a message lost in the
 * break shows as a sequence gap).
 */
#include "engine/transport/join.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <zmq.h>

#include "io/clock.h"
#include "io/log.h"

enum { ROLE_MASTER, ROLE_AGENT };
enum { K_HELLO = 1, K_WELCOME, K_DATA, K_HEARTBEAT, K_BYE, K_EXPELLED };
enum { PEER_JOINED, PEER_LOST };

#define HDR_BYTES 16
#define LINK_VERSION 1
#define RID_MAX 255 /* a ZeroMQ routing id's longest */
#define AGENT_RID_BYTES 16
#define ZAP_ENDPOINT "inproc://zeromq.zap.01"
#define SIDE_LOOK_S 0.05 /* s: the ZAP and monitor sockets are read at least this often */

struct hdr {
    uint8_t kind;
    uint32_t peer;
    uint64_t seq;
};

struct peer {
    uint8_t rid[RID_MAX];
    uint8_t rid_len;
    uint8_t state;
    uint64_t seq_in, seq_out; /* the next seq expected from it, the next one sent to it */
    double heard, sent;       /* pmc_mono_s() of the last message from and to it */
};

struct lost {
    uint32_t peer;
    enum join_cause cause;
};

struct join {
    int role;
    void *ctx, *sock, *zap, *mon;
    struct access_file acc;
    char access_path[4096];
    uint8_t client_key[32];       /* master: the only client key the ZAP handler admits */
    double next_beat, next_check; /* pmc_mono_s() of the next heartbeat round, timeout check */
    double refusal_logged;        /* pmc_mono_s() of the last refusal logged */
    uint64_t refusals_quiet;      /* refusals not logged since */
    struct peer *peers;           /* master: npeers of them; agent: one, the master */
    uint32_t npeers, cap;
    uint32_t self;      /* agent: its number at the master */
    struct lost *lostq; /* declared lost, not yet returned */
    size_t nlost, lostcap;
    bool dead;        /* agent: its JOIN_LOST was returned */
    zmq_msg_t held;   /* the body of the last event returned */
    uint8_t *welcome; /* master: the body of every WELCOME; agent: the one received */
    size_t welcome_len;
    int wake_fd;      /* join_poll() returns when readable; -1: none */
    bool side_due;    /* master: the ZAP or monitor socket's descriptor was readable */
    double side_next; /* master: pmc_mono_s() by which serve_side() reads them anyway */
    struct join_stats st;
};

/* ---- little-endian header --------------------------------------------- */

static void put_hdr(uint8_t *b, const struct hdr *h)
{
    memset(b, 0, HDR_BYTES);
    b[0] = LINK_VERSION;
    b[1] = h->kind;
    for (int i = 0; i < 4; i++)
        b[4 + i] = (uint8_t)(h->peer >> (8 * i));
    for (int i = 0; i < 8; i++)
        b[8 + i] = (uint8_t)(h->seq >> (8 * i));
}

static bool get_hdr(const uint8_t *b, size_t len, struct hdr *h)
{
    if (len != HDR_BYTES || b[0] != LINK_VERSION || b[2] || b[3] || b[1] < K_HELLO ||
        b[1] > K_EXPELLED)
        return false;
    h->kind = b[1];
    h->peer = 0;
    h->seq = 0;
    for (int i = 0; i < 4; i++)
        h->peer |= (uint32_t)b[4 + i] << (8 * i);
    for (int i = 0; i < 8; i++)
        h->seq |= (uint64_t)b[8 + i] << (8 * i);
    return true;
}

/* ---- sending ---------------------------------------------------------- */

/* Send one link message to p, agent number on a master (its routing id
 * first), the master on an agent (the header then names the agent itself).
 * Returns 0 or -1 with errno (EHOSTUNREACH: the master's ROUTER has no
 * connection for that id any more). */
static int send_to(struct join *j, struct peer *p, uint32_t number, int kind, const void *body,
                   size_t len)
{
    uint8_t b[HDR_BYTES];
    struct hdr h = {(uint8_t)kind, j->role == ROLE_MASTER ? number : j->self, p->seq_out};
    put_hdr(b, &h);
    if (j->role == ROLE_MASTER &&
        zmq_send(j->sock, p->rid, p->rid_len, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0)
        return -1;
    if (zmq_send(j->sock, b, HDR_BYTES, ZMQ_SNDMORE | ZMQ_DONTWAIT) < 0 ||
        zmq_send(j->sock, body, len, ZMQ_DONTWAIT) < 0)
        return -1;
    p->seq_out++;
    p->sent = pmc_mono_s();
    if (kind == K_HEARTBEAT)
        j->st.heartbeats_sent++;
    else
        j->st.sent++;
    return 0;
}

static void declare_lost(struct join *j, uint32_t number, enum join_cause cause)
{
    struct peer *p = &j->peers[number ? number - 1 : 0];
    if (p->state == PEER_LOST)
        return;
    if (j->nlost == j->lostcap) {
        size_t cap = j->lostcap ? 2 * j->lostcap : 16;
        struct lost *q = realloc(j->lostq, cap * sizeof *q);
        if (!q)
            return; /* still joined: the next tick declares it again */
        j->lostq = q;
        j->lostcap = cap;
    }
    p->state = PEER_LOST;
    j->lostq[j->nlost++] = (struct lost){number, cause};
    j->st.lost++;
}

/* ---- ticks: heartbeats and timeouts ----------------------------------- */

/* Every heartbeat_s / 2: a HEARTBEAT to each live peer we sent nothing to
 * for heartbeat_s. */
static void send_heartbeats(struct join *j, double now)
{
    if (now < j->next_beat)
        return;
    j->next_beat = now + j->acc.heartbeat_s / 2;
    for (uint32_t i = 0; i < j->npeers; i++) {
        struct peer *p = &j->peers[i];
        uint32_t number = j->role == ROLE_MASTER ? i + 1 : JOIN_MASTER;
        if (p->state == PEER_JOINED && now - p->sent >= j->acc.heartbeat_s &&
            send_to(j, p, number, K_HEARTBEAT, NULL, 0) < 0 && errno == EHOSTUNREACH)
            declare_lost(j, number, JOIN_CAUSE_TRANSPORT);
    }
}

/* Every heartbeat_s / 2, once everything received was read (so an owner
 * back from a stall reads its peers' queued heartbeats before judging
 * them): lose each live peer heard from longer than timeout_s ago. */
static void check_timeouts(struct join *j, double now)
{
    if (now < j->next_check)
        return;
    j->next_check = now + j->acc.heartbeat_s / 2;
    for (uint32_t i = 0; i < j->npeers; i++)
        if (j->peers[i].state == PEER_JOINED && now - j->peers[i].heard > j->acc.timeout_s)
            declare_lost(j, j->role == ROLE_MASTER ? i + 1 : JOIN_MASTER, JOIN_CAUSE_TIMEOUT);
}

/* Log a refused connection at most once a second, saying how many were
 * refused quietly since the last line. */
static void log_refusal(struct join *j, const char *what, const char *why)
{
    double now = pmc_mono_s();
    if (j->refusal_logged > 0 && now - j->refusal_logged < 1.0) {
        j->refusals_quiet++;
        return;
    }
    if (j->refusals_quiet)
        log_warn("join: refused a connection %s: %s (and %llu more since the last such line)", what,
                 why, (unsigned long long)j->refusals_quiet);
    else
        log_warn("join: refused a connection %s: %s", what, why);
    j->refusal_logged = now;
    j->refusals_quiet = 0;
}

/* ---- the ZAP handler (master) ----------------------------------------- */

/* Receive the rest of a multipart message into frames (at most max, each
 * at most size bytes, longer ones cut).  Returns the frame count. */
static int recv_frames(void *sock, uint8_t frames[][256], size_t *lens, int max)
{
    int n = 0, more = 1;
    size_t ms = sizeof more;
    while (more) {
        uint8_t scratch[256];
        uint8_t *dst = n < max ? frames[n] : scratch;
        int r = zmq_recv(sock, dst, 256, ZMQ_DONTWAIT);
        if (r < 0)
            return n;
        if (n < max)
            lens[n] = r > 256 ? 256 : (size_t)r;
        n++;
        if (zmq_getsockopt(sock, ZMQ_RCVMORE, &more, &ms) < 0)
            more = 0;
    }
    return n;
}

static bool same_key(const uint8_t *a, const uint8_t *b)
{
    uint8_t d = 0;
    for (int i = 0; i < 32; i++)
        d |= a[i] ^ b[i];
    return d == 0;
}

/* Answer one ZAP request (RFC 27): 200 for CURVE with the run's client
 * key, 400 for anything else.  False when none was waiting. */
static bool zap_answer(struct join *j)
{
    uint8_t f[8][256];
    size_t len[8] = {0};
    int n = recv_frames(j->zap, f, len, 8);
    if (n == 0)
        return false;
    if (n < 2) {
        zmq_send(j->zap, "", 0, 0); /* a REP must answer; libzmq never sends this */
        return true;
    }
    bool ok = n == 7 && len[0] == 3 && memcmp(f[0], "1.0", 3) == 0 && len[5] == 5 &&
              memcmp(f[5], "CURVE", 5) == 0 && len[6] == 32 && same_key(f[6], j->client_key);
    char from[300];
    snprintf(from, sizeof from, "from %.*s", n > 3 ? (int)len[3] : 1, n > 3 ? (char *)f[3] : "?");
    if (ok) {
        log_debug("join: admitted a connection %s", from);
    } else {
        j->st.refused_auth++;
        log_refusal(j, from, "not the run's client key");
    }
    const char *code = ok ? "200" : "400";
    const char *text = ok ? "OK" : "not the run's client key";
    zmq_send(j->zap, "1.0", 3, ZMQ_SNDMORE);
    zmq_send(j->zap, f[1], len[1], ZMQ_SNDMORE);
    zmq_send(j->zap, code, 3, ZMQ_SNDMORE);
    zmq_send(j->zap, text, strlen(text), ZMQ_SNDMORE);
    zmq_send(j->zap, "", 0, ZMQ_SNDMORE);
    zmq_send(j->zap, "", 0, 0);
    return true;
}

/* Read one monitor event of the ROUTER: a failed handshake is logged.
 * False when none was waiting. */
static bool monitor_event(struct join *j)
{
    uint8_t f[2][256];
    size_t len[2] = {0};
    int n = recv_frames(j->mon, f, len, 2);
    if (n < 2 || len[0] < 6)
        return n > 0;
    uint16_t event;
    uint32_t value;
    memcpy(&event, f[0], 2);
    memcpy(&value, f[0] + 2, 4);
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
        return true; /* the ZAP handler logged and counted it */
    j->st.refused_handshake++;
    char on[300], why[80];
    snprintf(on, sizeof on, "on %.*s", (int)len[1], (char *)f[1]);
    if (event == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL)
        snprintf(why, sizeof why, "handshake failed (ZMTP/CURVE protocol error 0x%x)",
                 (unsigned)value);
    else
        snprintf(why, sizeof why, "handshake failed (%s)", zmq_strerror((int)value));
    log_refusal(j, on, why);
    return true;
}

/* ---- receiving -------------------------------------------------------- */

/* Receive one multipart message: the routing id (master) into rid, the
 * header into h, the body into j->held.  Returns 1 for a well-formed link
 * message, 0 for a malformed one (consumed), -1 when none is ready. */
static int recv_link(struct join *j, uint8_t *rid, size_t *rid_len, struct hdr *h)
{
    uint8_t hb[HDR_BYTES + 1];
    int more = 0, frames = 0, r;
    size_t ms = sizeof more, hlen = 0;
    if (j->role == ROLE_MASTER) {
        r = zmq_recv(j->sock, rid, RID_MAX, ZMQ_DONTWAIT);
        if (r < 0)
            return -1;
        *rid_len = (size_t)r > RID_MAX ? RID_MAX : (size_t)r;
        frames++;
        zmq_getsockopt(j->sock, ZMQ_RCVMORE, &more, &ms);
        if (!more)
            return 0;
    }
    r = zmq_recv(j->sock, hb, sizeof hb, ZMQ_DONTWAIT);
    if (r < 0)
        return frames ? 0 : -1;
    hlen = (size_t)r;
    zmq_getsockopt(j->sock, ZMQ_RCVMORE, &more, &ms);
    if (!more)
        return 0;
    zmq_msg_close(&j->held);
    zmq_msg_init(&j->held);
    if (zmq_msg_recv(&j->held, j->sock, ZMQ_DONTWAIT) < 0)
        return 0;
    bool extra = zmq_msg_more(&j->held);
    while (zmq_msg_more(&j->held)) { /* drain surplus frames */
        zmq_msg_close(&j->held);
        zmq_msg_init(&j->held);
        if (zmq_msg_recv(&j->held, j->sock, ZMQ_DONTWAIT) < 0)
            break;
    }
    return !extra && get_hdr(hb, hlen, h) ? 1 : 0;
}

static void fill(struct join_event *ev, enum join_event_kind kind, uint32_t peer,
                 enum join_cause cause, const zmq_msg_t *body)
{
    ev->kind = kind;
    ev->peer = peer;
    ev->cause = cause;
    ev->data = body ? zmq_msg_data((zmq_msg_t *)body) : NULL;
    ev->len = body ? zmq_msg_size((zmq_msg_t *)body) : 0;
}

static struct peer *add_peer(struct join *j, const uint8_t *rid, size_t rid_len)
{
    if (j->npeers == j->cap) {
        uint32_t cap = j->cap ? 2 * j->cap : 64;
        struct peer *p = realloc(j->peers, (size_t)cap * sizeof *p);
        if (!p)
            return NULL;
        j->peers = p;
        j->cap = cap;
    }
    struct peer *p = &j->peers[j->npeers++];
    memset(p, 0, sizeof *p);
    memcpy(p->rid, rid, rid_len);
    p->rid_len = (uint8_t)rid_len;
    p->state = PEER_JOINED;
    p->seq_in = 1;
    p->heard = pmc_mono_s();
    return p;
}

static struct peer *find_rid(struct join *j, const uint8_t *rid, size_t rid_len)
{
    for (uint32_t i = 0; i < j->npeers; i++)
        if (j->peers[i].rid_len == rid_len && memcmp(j->peers[i].rid, rid, rid_len) == 0)
            return &j->peers[i];
    return NULL;
}

/* A HELLO on the master: a new agent (1, event filled), or dropped. */
static int master_hello(struct join *j, const uint8_t *rid, size_t rid_len, const struct hdr *h,
                        struct join_event *ev)
{
    struct peer *old = find_rid(j, rid, rid_len);
    if (old || h->seq != 0) {
        j->st.dropped++;
        log_warn("join: dropped a HELLO from a connection that already said it");
        return 0;
    }
    struct peer *p = add_peer(j, rid, rid_len);
    if (!p) {
        j->st.dropped++;
        log_error("join: out of memory for a new agent: its HELLO is dropped");
        return 0;
    }
    uint32_t number = j->npeers;
    if (send_to(j, p, number, K_WELCOME, j->welcome, j->welcome_len) < 0) {
        declare_lost(j, number, JOIN_CAUSE_TRANSPORT);
        return 0;
    }
    j->st.joined++;
    log_info("join: agent %u joined (%zu-byte hello)", number, zmq_msg_size(&j->held));
    fill(ev, JOIN_JOINED, number, JOIN_CAUSE_NONE, &j->held);
    return 1;
}

/* The sender of a non-HELLO message on the master, when its header's
 * number matches its routing id; NULL (dropped) otherwise. */
static struct peer *master_sender(struct join *j, const uint8_t *rid, size_t rid_len,
                                  const struct hdr *h)
{
    if (h->peer == 0 || h->peer > j->npeers)
        return NULL;
    struct peer *p = &j->peers[h->peer - 1];
    if (p->rid_len != rid_len || memcmp(p->rid, rid, rid_len) != 0)
        return NULL;
    return p;
}

/* Act on one received message from a joined peer number (p); 1 with an
 * event, 0 without. */
static int on_message(struct join *j, struct peer *p, uint32_t number, const struct hdr *h,
                      struct join_event *ev)
{
    if (h->seq != p->seq_in) {
        log_warn("join: %s %u: message %llu came, %llu expected: link lost",
                 j->role == ROLE_MASTER ? "agent" : "master", number, (unsigned long long)h->seq,
                 (unsigned long long)p->seq_in);
        declare_lost(j, number, JOIN_CAUSE_TRANSPORT);
        return 0;
    }
    p->seq_in++;
    p->heard = pmc_mono_s();
    if (h->kind == K_HEARTBEAT) {
        j->st.heartbeats_received++;
        return 0;
    }
    j->st.received++;
    if (h->kind == K_DATA) {
        fill(ev, JOIN_MESSAGE, number, JOIN_CAUSE_NONE, &j->held);
        return 1;
    }
    if (h->kind == K_BYE)
        declare_lost(j, number, JOIN_CAUSE_LEFT);
    else if (h->kind == K_EXPELLED && j->role == ROLE_AGENT)
        declare_lost(j, number, JOIN_CAUSE_EXPELLED);
    else
        declare_lost(j, number, JOIN_CAUSE_TRANSPORT); /* a kind not for this side */
    return 0;
}

static int master_recv(struct join *j, const uint8_t *rid, size_t rid_len, const struct hdr *h,
                       struct join_event *ev)
{
    if (h->kind == K_HELLO)
        return master_hello(j, rid, rid_len, h, ev);
    struct peer *p = master_sender(j, rid, rid_len, h);
    if (!p) {
        j->st.dropped++;
        log_debug("join: dropped a message from an unknown connection");
        return 0;
    }
    if (p->state == PEER_LOST) {
        j->st.dropped++;
        if (h->kind != K_BYE)
            send_to(j, p, h->peer, K_EXPELLED, NULL, 0);
        return 0;
    }
    return on_message(j, p, h->peer, h, ev);
}

static int agent_recv(struct join *j, const struct hdr *h, struct join_event *ev)
{
    struct peer *p = &j->peers[0];
    if (p->state == PEER_LOST || h->peer != j->self || h->kind == K_HELLO) {
        j->st.dropped++;
        return 0;
    }
    if (h->kind == K_WELCOME) { /* only join_connect() waits for one */
        j->st.dropped++;
        return 0;
    }
    return on_message(j, p, JOIN_MASTER, h, ev);
}

/* Read what is ready on the link socket until an event comes (1) or
 * nothing is left (0). */
static int drain(struct join *j, struct join_event *ev)
{
    for (;;) {
        uint8_t rid[RID_MAX];
        size_t rid_len = 0;
        struct hdr h;
        int r = recv_link(j, rid, &rid_len, &h);
        if (r < 0)
            return 0;
        if (r == 0) {
            j->st.dropped++;
            log_debug("join: dropped a malformed message");
            continue;
        }
        r = j->role == ROLE_MASTER ? master_recv(j, rid, rid_len, &h, ev) : agent_recv(j, &h, ev);
        if (r)
            return 1;
    }
}

static const char *cause_name(enum join_cause c)
{
    switch (c) {
    case JOIN_CAUSE_TIMEOUT:
        return "no heartbeat within the timeout";
    case JOIN_CAUSE_LEFT:
        return "it left";
    case JOIN_CAUSE_EXPELLED:
        return "the master had declared this agent lost";
    default:
        return "transport error";
    }
}

static bool pop_lost(struct join *j, struct join_event *ev)
{
    if (!j->nlost)
        return false;
    struct lost l = j->lostq[0];
    memmove(j->lostq, j->lostq + 1, --j->nlost * sizeof *j->lostq);
    fill(ev, JOIN_LOST, l.peer, l.cause, NULL);
    if (j->role == ROLE_AGENT)
        j->dead = true;
    if (l.cause == JOIN_CAUSE_LEFT) /* BYE: the end of a run, or an agent that left */
        log_debug("join: %s %u left", j->role == ROLE_AGENT ? "master" : "agent", l.peer);
    else if (j->role == ROLE_AGENT)
        log_warn("join: master at %s lost (%s)", j->acc.endpoint, cause_name(l.cause));
    else
        log_warn("join: agent %u lost (%s)", l.peer, cause_name(l.cause));
    return true;
}

/* Serve the master's ZAP and monitor sockets when due: their descriptors
 * said so at the last wait (side_due), or SIDE_LOOK_S passed since they
 * were last read.  Each is read until empty, so that its next message
 * makes its descriptor readable (see wait_link()). */
static void serve_side(struct join *j, double now)
{
    if (!j->side_due && now < j->side_next)
        return;
    j->side_due = false;
    j->side_next = now + SIDE_LOOK_S;
    while (j->zap && zap_answer(j))
        ;
    while (j->mon && monitor_event(j))
        ;
}

/* The descriptor libzmq signals s's pending commands on (ZMQ_FD); -1 on
 * error. */
static int zmq_fd_of(void *s)
{
    int fd = -1;
    size_t len = sizeof fd;
    return zmq_getsockopt(s, ZMQ_FD, &fd, &len) == 0 ? fd : -1;
}

/* Block in poll(2) up to ms milliseconds on the link socket's, the side
 * sockets' and the wake-up descriptors.  Each socket's last call was a
 * read that found it empty (drain(), serve_side()), which took in its
 * pending commands, so any message since makes its descriptor readable
 * (libzmq's edge-triggered ZMQ_FD).  Not zmq_poll(): that asks every
 * socket's ZMQ_EVENTS before and after a first zero-timeout poll, two
 * system calls each on a quiet socket, and a ZAP and a monitor socket
 * that stay quiet for the whole run made most of the link thread's
 * system calls.  1: the wake-up descriptor is readable; 0: anything else
 * (a timeout or a socket to read); -1: poll(2) failed (errno). */
static int wait_link(struct join *j, long ms)
{
    struct pollfd p[4] = {{.fd = zmq_fd_of(j->sock), .events = POLLIN}};
    int n = 1, zap = -1, mon = -1, wake = -1;
    if (j->zap)
        p[zap = n++] = (struct pollfd){.fd = zmq_fd_of(j->zap), .events = POLLIN};
    if (j->mon)
        p[mon = n++] = (struct pollfd){.fd = zmq_fd_of(j->mon), .events = POLLIN};
    if (j->wake_fd >= 0)
        p[wake = n++] = (struct pollfd){.fd = j->wake_fd, .events = POLLIN};
    if (poll(p, (nfds_t)n, (int)ms) < 0)
        return errno == EINTR ? 0 : -1;
    if ((zap >= 0 && p[zap].revents) || (mon >= 0 && p[mon].revents))
        j->side_due = true;
    return wake >= 0 && (p[wake].revents & POLLIN) ? 1 : 0;
}

int join_poll(struct join *j, double wait_s, struct join_event *ev)
{
    if (j->dead) {
        errno = EPIPE;
        return -1;
    }
    double deadline = pmc_mono_s() + (wait_s > 0 ? wait_s : 0);
    for (;;) {
        double now = pmc_mono_s();
        serve_side(j, now);
        send_heartbeats(j, now);
        if (pop_lost(j, ev) || drain(j, ev))
            return 1;
        check_timeouts(j, pmc_mono_s()); /* drain() found nothing left to read */
        if (pop_lost(j, ev))
            return 1;
        if (now >= deadline)
            return 0;
        double until = j->next_beat < j->next_check ? j->next_beat : j->next_check;
        until = until < deadline ? until : deadline;
        int w = wait_link(j, (long)((until - now) * 1000) + 1);
        if (w != 0)
            return w > 0 ? 0 : -1;
    }
}

int join_send(struct join *j, uint32_t peer, const void *data, size_t len)
{
    bool master = j->role == ROLE_MASTER;
    if (master ? peer == 0 || peer > j->npeers : peer != JOIN_MASTER) {
        errno = ENOENT;
        return -1;
    }
    struct peer *p = &j->peers[master ? peer - 1 : 0];
    if (p->state != PEER_JOINED) {
        errno = EPIPE;
        return -1;
    }
    if (send_to(j, p, peer, K_DATA, data, len) < 0) {
        int e = errno;
        if (e == EHOSTUNREACH)
            declare_lost(j, peer, JOIN_CAUSE_TRANSPORT);
        errno = e == EHOSTUNREACH ? EPIPE : e;
        return -1;
    }
    return 0;
}

/* ---- making and ending links ------------------------------------------ */

static int set_int(void *s, int opt, int v)
{
    return zmq_setsockopt(s, opt, &v, sizeof v);
}

/* Options both sides share: no queue bound, close waits for BYE at most
 * heartbeat_s, a handshake must end within timeout_s. */
static int common_options(void *s, const struct access_file *a)
{
    int64_t maxmsg = INT32_MAX; /* io/msg.h's MSG_MAX_BYTES */
    return set_int(s, ZMQ_SNDHWM, 0) | set_int(s, ZMQ_RCVHWM, 0) |
           set_int(s, ZMQ_LINGER, (int)(a->heartbeat_s * 1000)) |
           set_int(s, ZMQ_HANDSHAKE_IVL, (int)(a->timeout_s * 1000)) |
           zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof maxmsg);
}

static struct join *join_new(int role)
{
    struct join *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->role = role;
    j->wake_fd = -1;
    zmq_msg_init(&j->held);
    j->ctx = zmq_ctx_new();
    if (!j->ctx) {
        free(j);
        return NULL;
    }
    zmq_ctx_set(j->ctx, ZMQ_BLOCKY, 0);
    return j;
}

static void join_free(struct join *j)
{
    void *socks[] = {j->sock, j->zap, j->mon};
    for (int i = 0; i < 3; i++)
        if (socks[i])
            zmq_close(socks[i]);
    zmq_msg_close(&j->held);
    zmq_ctx_term(j->ctx);
    free(j->welcome);
    free(j->peers);
    free(j->lostq);
    free(j);
}

static int zerr(struct pmc_error *err, const char *what, const char *where)
{
    int e = errno;
    pmc_errorf(err, "%s %s: %s", what, where, zmq_strerror(e));
    errno = e;
    return -1;
}

/* The endpoint agents use: the bound one, a wildcard address replaced by
 * the advertised host (or this host's name). */
static int public_endpoint(void *sock, const char *advertise, char *out, size_t size,
                           struct pmc_error *err)
{
    char bound[ACCESS_ENDPOINT_MAX];
    size_t len = sizeof bound;
    if (zmq_getsockopt(sock, ZMQ_LAST_ENDPOINT, bound, &len) < 0)
        return zerr(err, "cannot read the bound endpoint", "");
    const char *colon = strrchr(bound, ':');
    const char *host = bound + 6;
    bool wild = strncmp(host, "0.0.0.0:", 8) == 0 || strncmp(host, "[::]:", 5) == 0 ||
                strncmp(host, "*:", 2) == 0;
    char name[ACCESS_HOST_MAX] = "";
    if (wild && !advertise) {
        gethostname(name, sizeof name - 1);
        advertise = name;
    }
    int n = wild ? snprintf(out, size, "tcp://%s%s", advertise, colon)
                 : snprintf(out, size, "%s", bound);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return pmc_errorf(err, "endpoint too long");
    }
    return 0;
}

static int new_keys(struct join *j, char *server_secret, struct pmc_error *err)
{
    if (!zmq_has("curve")) {
        errno = ENOTSUP;
        return pmc_errorf(err, "this libzmq has no CURVE security (built without libsodium)");
    }
    if (zmq_curve_keypair(j->acc.server_public, server_secret) < 0 ||
        zmq_curve_keypair(j->acc.client_public, j->acc.client_secret) < 0 ||
        !zmq_z85_decode(j->client_key, j->acc.client_public))
        return zerr(err, "cannot make CURVE keys", "");
    return 0;
}

/* Bind the ZAP handler, the ROUTER (CURVE server) and its monitor. */
static int master_sockets(struct join *j, const char *server_secret, const char *bind,
                          struct pmc_error *err)
{
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://join-monitor-%p", (void *)j);
    j->zap = zmq_socket(j->ctx, ZMQ_REP);
    if (!j->zap || zmq_bind(j->zap, ZAP_ENDPOINT) < 0)
        return zerr(err, "cannot bind", ZAP_ENDPOINT);
    j->sock = zmq_socket(j->ctx, ZMQ_ROUTER);
    if (!j->sock || common_options(j->sock, &j->acc) < 0 ||
        set_int(j->sock, ZMQ_CURVE_SERVER, 1) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_CURVE_SECRETKEY, server_secret, ACCESS_KEY_CHARS) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_ZAP_DOMAIN, "pmc-hybrid", 10) < 0 ||
        set_int(j->sock, ZMQ_ROUTER_MANDATORY, 1) < 0 ||
        set_int(j->sock, ZMQ_ROUTER_HANDOVER, 1) < 0)
        return zerr(err, "cannot set up the", "ROUTER socket");
    int events = ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(j->sock, mon, events) < 0)
        return zerr(err, "cannot monitor", "the ROUTER socket");
    j->mon = zmq_socket(j->ctx, ZMQ_PAIR);
    if (!j->mon || zmq_connect(j->mon, mon) < 0)
        return zerr(err, "cannot connect", mon);
    if (zmq_bind(j->sock, bind) < 0)
        return zerr(err, "cannot bind", bind);
    return 0;
}

static int master_access(struct join *j, const struct join_options *o, struct pmc_error *err)
{
    j->acc.heartbeat_s = o && o->heartbeat_s > 0 ? o->heartbeat_s : JOIN_HEARTBEAT_S_DEFAULT;
    j->acc.timeout_s = o && o->timeout_s > 0 ? o->timeout_s : JOIN_TIMEOUT_S_DEFAULT;
    if (!(j->acc.timeout_s >= 2 * j->acc.heartbeat_s)) {
        errno = EINVAL;
        return pmc_errorf(err,
                          "join: the timeout (%g s) must be at least twice the heartbeat "
                          "interval (%g s)",
                          j->acc.timeout_s, j->acc.heartbeat_s);
    }
    gethostname(j->acc.master_host, sizeof j->acc.master_host - 1);
    j->acc.master_pid = getpid();
    return 0;
}

struct join *join_listen(const char *access_path, const struct join_options *o,
                         struct pmc_error *err)
{
    if (strlen(access_path) >= sizeof((struct join *)0)->access_path) {
        errno = ENAMETOOLONG;
        pmc_errorf(err, "%s: path too long", access_path);
        return NULL;
    }
    struct join *j = join_new(ROLE_MASTER);
    if (!j) {
        pmc_errorf(err, "join: cannot make a ZeroMQ context: %s", strerror(errno));
        return NULL;
    }
    char server_secret[ACCESS_KEY_CHARS + 1];
    const char *bind = o && o->bind ? o->bind : "tcp://*:*";
    if (master_access(j, o, err) < 0 || new_keys(j, server_secret, err) < 0 ||
        master_sockets(j, server_secret, bind, err) < 0 ||
        public_endpoint(j->sock, o ? o->advertise : NULL, j->acc.endpoint, sizeof j->acc.endpoint,
                        err) < 0 ||
        access_write(access_path, &j->acc, err) < 0) {
        int e = errno;
        join_free(j);
        errno = e;
        return NULL;
    }
    memset(server_secret, 0, sizeof server_secret);
    snprintf(j->access_path, sizeof j->access_path, "%s", access_path);
    j->next_beat = j->next_check = pmc_mono_s();
    log_info("join: listening on %s (access file %s)", j->acc.endpoint, access_path);
    return j;
}

const char *join_endpoint(const struct join *j)
{
    return j->acc.endpoint;
}

const struct access_file *join_access(const struct join *j)
{
    return &j->acc;
}

static int agent_monitor(struct join *j, struct pmc_error *err);

/* The DEALER, its CURVE keys from the access file, a random routing id,
 * watched by a monitor (agent_monitor()) from before it connects. */
static int agent_socket(struct join *j, struct pmc_error *err)
{
    uint8_t rid[AGENT_RID_BYTES];
    if (getrandom(rid, sizeof rid, 0) != (ssize_t)sizeof rid)
        return pmc_errorf(err, "join: cannot draw a routing id: %s", strerror(errno));
    j->sock = zmq_socket(j->ctx, ZMQ_DEALER);
    if (!j->sock || common_options(j->sock, &j->acc) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_ROUTING_ID, rid, sizeof rid) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_CURVE_SERVERKEY, j->acc.server_public, ACCESS_KEY_CHARS) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_CURVE_PUBLICKEY, j->acc.client_public, ACCESS_KEY_CHARS) < 0 ||
        zmq_setsockopt(j->sock, ZMQ_CURVE_SECRETKEY, j->acc.client_secret, ACCESS_KEY_CHARS) < 0)
        return zerr(err, "cannot set up the", "DEALER socket");
    if (agent_monitor(j, err) < 0)
        return -1;
    if (zmq_connect(j->sock, j->acc.endpoint) < 0)
        return zerr(err, "cannot connect to", j->acc.endpoint);
    return 0;
}

/* Watch the DEALER's connection while join_connect() waits, to say why
 * no WELCOME came. */
static int agent_monitor(struct join *j, struct pmc_error *err)
{
    char mon[64];
    snprintf(mon, sizeof mon, "inproc://join-monitor-%p", (void *)j);
    int events = ZMQ_EVENT_CONNECTED | ZMQ_EVENT_CONNECT_RETRIED | ZMQ_EVENT_DISCONNECTED |
                 ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                 ZMQ_EVENT_HANDSHAKE_FAILED_AUTH;
    if (zmq_socket_monitor(j->sock, mon, events) < 0)
        return zerr(err, "cannot monitor", "the DEALER socket");
    j->mon = zmq_socket(j->ctx, ZMQ_PAIR);
    if (!j->mon || zmq_connect(j->mon, mon) < 0)
        return zerr(err, "cannot connect", mon);
    return 0;
}

/* Add the events the monitor saw to *seen (a mask of ZMQ_EVENT_*). */
static void agent_watch(struct join *j, int *seen)
{
    uint8_t f[2][256];
    size_t len[2] = {0};
    for (int n; (n = recv_frames(j->mon, f, len, 2)) > 0;) {
        uint16_t event;
        if (n == 2 && len[0] >= 6) {
            memcpy(&event, f[0], 2);
            *seen |= event;
        }
    }
}

/* The error of a join_connect() that got no WELCOME, by what the monitor
 * saw, the most telling first. */
static int no_welcome(struct join *j, const char *path, int seen, struct pmc_error *err)
{
    const int closed = ZMQ_EVENT_DISCONNECTED | ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL |
                       ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL;
    const char *why = "no connection made: is the host reachable?";
    if (seen & ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
        errno = EACCES;
        return pmc_errorf(err,
                          "%s: the master at %s refused this file's client key (not the "
                          "running master's access file?)",
                          path, j->acc.endpoint);
    }
    if ((seen & ZMQ_EVENT_CONNECTED) && (seen & closed))
        why = "the master closed the handshake: are this file's keys the running master's?";
    else if (seen & ZMQ_EVENT_CONNECTED)
        why = "connected, but the master did not answer: is it busy or hung?";
    else if (seen & ZMQ_EVENT_CONNECT_RETRIED)
        why = "nothing accepts connections there: master gone?";
    errno = ETIMEDOUT;
    return pmc_errorf(err, "%s: no answer from the master at %s within %g s (%s)", path,
                      j->acc.endpoint, j->acc.timeout_s, why);
}

/* Copy the WELCOME's body (in j->held) into j->welcome: 0, or -1 ENOMEM. */
static int keep_welcome(struct join *j)
{
    size_t len = zmq_msg_size(&j->held);
    j->welcome = malloc(len ? len : 1);
    if (!j->welcome)
        return -1;
    memcpy(j->welcome, zmq_msg_data(&j->held), len);
    j->welcome_len = len;
    return 0;
}

/* Wait for the WELCOME to our HELLO, up to the timeout; a refused client
 * key ends the wait at once (EACCES). */
static int await_welcome(struct join *j, const char *path, struct pmc_error *err)
{
    double deadline = pmc_mono_s() + j->acc.timeout_s;
    int seen = 0;
    for (double now = pmc_mono_s(); now < deadline; now = pmc_mono_s()) {
        zmq_pollitem_t items[2] = {{j->sock, 0, ZMQ_POLLIN, 0}, {j->mon, 0, ZMQ_POLLIN, 0}};
        if (zmq_poll(items, 2, (long)((deadline - now) * 1000) + 1) < 0 && errno != EINTR)
            return zerr(err, "cannot wait for the master at", j->acc.endpoint);
        agent_watch(j, &seen);
        if (seen & ZMQ_EVENT_HANDSHAKE_FAILED_AUTH)
            break;
        struct hdr h;
        int r = recv_link(j, NULL, NULL, &h);
        if (r == 1 && h.kind == K_WELCOME && h.seq == 0 && h.peer != 0) {
            if (keep_welcome(j) < 0)
                return pmc_errorf(err, "join: out of memory");
            j->self = h.peer;
            j->peers[0].seq_in = 1;
            j->peers[0].heard = pmc_mono_s();
            return 0;
        }
    }
    return no_welcome(j, path, seen, err);
}

/* The monitor is for join_connect() only: stop it. */
static void agent_unmonitor(struct join *j)
{
    zmq_socket_monitor(j->sock, NULL, 0);
    zmq_close(j->mon);
    j->mon = NULL;
}

struct join *join_connect(const char *access_path, const void *hello, size_t len,
                          struct pmc_error *err)
{
    struct join *j = join_new(ROLE_AGENT);
    if (!j) {
        pmc_errorf(err, "join: cannot make a ZeroMQ context: %s", strerror(errno));
        return NULL;
    }
    j->peers = calloc(1, sizeof *j->peers);
    j->npeers = j->cap = 1;
    if (!j->peers || access_read(access_path, &j->acc, err) < 0 || agent_socket(j, err) < 0 ||
        send_to(j, &j->peers[0], 0, K_HELLO, hello, len) < 0 ||
        await_welcome(j, access_path, err) < 0) {
        int e = j->peers ? errno : ENOMEM;
        if (!j->peers)
            pmc_errorf(err, "join: out of memory");
        join_free(j);
        errno = e;
        return NULL;
    }
    agent_unmonitor(j);
    j->peers[0].state = PEER_JOINED;
    j->next_beat = j->next_check = pmc_mono_s();
    log_info("join: joined the master at %s as agent %u", j->acc.endpoint, j->self);
    return j;
}

int join_set_welcome(struct join *j, const void *body, size_t len)
{
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    if (len)
        memcpy(copy, body, len);
    free(j->welcome);
    j->welcome = copy;
    j->welcome_len = len;
    return 0;
}

const void *join_welcome(const struct join *j, size_t *len)
{
    *len = j->welcome_len;
    return j->welcome;
}

uint32_t join_self(const struct join *j)
{
    return j->self;
}

void join_set_wake_fd(struct join *j, int fd)
{
    j->wake_fd = fd;
}

void join_get_stats(const struct join *j, struct join_stats *out)
{
    *out = j->st;
}

void join_close(struct join *j)
{
    if (!j)
        return;
    bool master = j->role == ROLE_MASTER;
    for (uint32_t n = 1; n <= j->npeers; n++) {
        struct peer *p = &j->peers[n - 1];
        if (p->state == PEER_JOINED)
            send_to(j, p, n, K_BYE, NULL, 0);
    }
    if (master && j->access_path[0])
        access_remove(j->access_path, &j->acc);
    join_free(j);
}
