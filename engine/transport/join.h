/* join.h - the join link: node agents that join a master over ZeroMQ
 * (docs/join.md; issue "Nodes come and go").
 *
 * Beside the one-job MPI transport (comm.h), a master may listen for
 * agents started anywhere that can reach it.  The master binds a ROUTER
 * socket and writes the access file (engine/transport/access.h); each
 * agent reads it and connects a DEALER.  Every connection is encrypted
 * and authenticated with CURVE (RFC 26/CurveZMQ, as Flux's overlay): the
 * agent must know the master's public key, and the master's ZAP handler
 * (RFC 27/ZAP) admits only clients holding the run's client secret key.
 * A connection without CURVE, with another key, with garbage, or with a
 * replayed or truncated handshake never gets past libzmq's handshake: no
 * message of it reaches the caller, and the refusal is logged (io/log.h,
 * warn, at most a line a second, the rest counted in the next line) and
 * counted (struct join_stats).
 *
 * On top of ZeroMQ, each link message is two frames: a 16-byte header
 *   u8 version (1)  u8 kind  u16 zero  u32 peer  u64 seq   (little-endian)
 * and a body.  Kinds: HELLO (agent -> master, body: the agent's hello,
 * opaque here), WELCOME (master -> agent: peer holds the agent's number),
 * DATA (either way, body: one io/msg.h message, opaque here), HEARTBEAT,
 * BYE (the sender closes) and EXPELLED (master -> an agent it declared
 * lost).  seq counts the messages of each direction of a link from 0; a
 * gap (ZeroMQ may drop what was in flight when a TCP connection broke and
 * the DEALER reconnected) loses the link rather than letting the caller
 * miss a message silently.
 *
 * Liveness: each side sends a HEARTBEAT when it sent nothing for
 * heartbeat_s seconds, and declares the other side lost when nothing came
 * from it for timeout_s seconds.  Both values are the master's options,
 * written to the access file, so every agent uses the master's.  Checks
 * run every heartbeat_s / 2 while the owner is in join_poll(), timeouts
 * only once everything received has been read (an owner back from a
 * stall reads its peers' queued heartbeats before judging them; a flood
 * that never lets the socket empty defers the judgement): a silent peer is
 * declared lost between timeout_s and timeout_s + heartbeat_s / 2 after
 * the last message of it was read (plus the time the owner spends between
 * join_poll() calls), and timeout_s must be at least 2 * heartbeat_s so a
 * live peer's heartbeats (sent at most 1.5 * heartbeat_s apart) are never
 * late.  The master also loses an agent at once when a send to it fails
 * because its connection is gone (transport error).  A lost agent's later
 * messages are dropped and answered with EXPELLED, so an agent back from a
 * network partition learns it is out and never delivers a result late.
 *
 * Thread-safety: a struct join and its ZeroMQ sockets belong to one thread
 * at a time, its owner: every call on it from that thread (ZeroMQ sockets
 * are not thread-safe).  Handing it to another thread needs a full memory
 * barrier (a mutex, a thread start).  Heartbeats, timeouts and the ZAP
 * handler run only inside join_poll(): call it at least every heartbeat_s
 * seconds.  Distinct joins are independent (each has its own ZeroMQ
 * context), in one process or many.
 */
#ifndef PMC_JOIN_H
#define PMC_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "engine/transport/access.h"
#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define JOIN_HEARTBEAT_S_DEFAULT 1.0
#define JOIN_TIMEOUT_S_DEFAULT 5.0
#define JOIN_MASTER 0u /* the peer number of the master, on an agent's link */

struct join;

/* The master's choices; zero fields take the defaults. */
struct join_options {
    const char *bind;      /* ZeroMQ endpoint to bind; NULL: every address, a free port
                              (tcp with the wildcard host and port) */
    const char *advertise; /* host written to the access file in place of a wildcard bound
                              address (0.0.0.0, [::]); NULL: gethostname() */
    double heartbeat_s;    /* seconds; 0: JOIN_HEARTBEAT_S_DEFAULT */
    double timeout_s;      /* seconds, >= 2 * heartbeat_s; 0: JOIN_TIMEOUT_S_DEFAULT */
};

enum join_event_kind {
    JOIN_JOINED = 1,  /* master: a new agent, peer; data/len its hello */
    JOIN_MESSAGE = 2, /* a DATA message from peer; data/len its body */
    JOIN_LOST = 3,    /* peer is gone for good (cause); on an agent: the master */
};

enum join_cause {
    JOIN_CAUSE_NONE = 0,
    JOIN_CAUSE_TIMEOUT = 1,   /* nothing heard for timeout_s */
    JOIN_CAUSE_TRANSPORT = 2, /* connection gone, a message missing, or a malformed message */
    JOIN_CAUSE_LEFT = 3,      /* the peer said BYE (join_close()) */
    JOIN_CAUSE_EXPELLED = 4,  /* agent: the master had declared this agent lost */
};

struct join_event {
    enum join_event_kind kind;
    uint32_t peer;         /* master: the agent's number (1, 2, ... never reused);
                              agent: JOIN_MASTER */
    enum join_cause cause; /* JOIN_LOST only */
    const void *data;      /* JOINED, MESSAGE: the bytes, owned by the link and valid until
                              the next join_poll() or join_close(); else NULL */
    size_t len;
};

/* Counters since the link was made (link messages, not bytes). */
struct join_stats {
    uint64_t joined, lost;   /* master: agents */
    uint64_t sent, received; /* HELLO, WELCOME, DATA, BYE, EXPELLED; heartbeats apart */
    uint64_t heartbeats_sent, heartbeats_received;
    uint64_t refused_auth;      /* master: connections the ZAP handler refused */
    uint64_t refused_handshake; /* master: connections that failed the ZMTP/CURVE handshake */
    uint64_t dropped;           /* messages dropped: malformed, unknown or expelled sender */
};

/* Master: generate the CURVE keys (the server's pair in memory, the
 * agents' pair for the file), bind o->bind, and write access_path
 * (access_write(): 0600, atomic, EEXIST for a live run's file).  Returns
 * the link, or NULL with err and errno (EINVAL for bad options, EADDRINUSE
 * and the like from the bind, ENOTSUP when libzmq lacks CURVE, what
 * access_write() says).  Nothing is left bound or written on failure. */
struct join *join_listen(const char *access_path, const struct join_options *o,
                         struct pmc_error *err);

/* Master: the endpoint written to the access file ("tcp://HOST:PORT"), and
 * the access file's content; owned by j. */
const char *join_endpoint(const struct join *j);
const struct access_file *join_access(const struct join *j);

/* Agent: read access_path, connect, send HELLO with body hello[0, len)
 * (copied), and wait for the master's WELCOME, up to the file's timeout_s.
 * Blocks; the master must be in join_poll() meanwhile.  Returns the link,
 * or NULL with err and errno: what access_read() says; EACCES at once
 * when the master's ZAP handler refused the file's client key; ETIMEDOUT
 * when no WELCOME came in time, err saying what the connection showed
 * (nothing accepting connections, a handshake the master closed: wrong
 * server key or client secret, connected but no answer). */
struct join *join_connect(const char *access_path, const void *hello, size_t len,
                          struct pmc_error *err);

/* Run the link for up to wait_s seconds (0: only what is ready now):
 * answer ZAP requests, send heartbeats, check timeouts, read messages.
 * Returns 1 with *ev set as soon as there is an event, 0 when wait_s
 * passed without one, or -1 with errno: EPIPE on an agent's link once its
 * JOIN_LOST was returned, or a ZeroMQ errno.  ev->data stays valid until
 * the next call.  Owner thread. */
int join_poll(struct join *j, double wait_s, struct join_event *ev);

/* Send data[0, len) (copied) to peer: on a master an agent that joined
 * and is not lost, on an agent JOIN_MASTER.  Never blocks (queues have no
 * bound: what the caller sends is the caller's to limit).  Returns 0, or
 * -1 with errno: ENOENT for no such peer, EPIPE for a lost one (on a
 * master, a connection found gone here is reported by the next
 * join_poll() as JOIN_LOST with JOIN_CAUSE_TRANSPORT), or a ZeroMQ errno.
 * Owner thread. */
int join_send(struct join *j, uint32_t peer, const void *data, size_t len);

/* Master: the body every WELCOME carries from now on (copied; the
 * caller's run description, opaque here).  0, or -1 with ENOMEM (the old
 * body stays).  Owner thread. */
int join_set_welcome(struct join *j, const void *body, size_t len);

/* Agent: the body of the master's WELCOME, len bytes (may be 0), owned by
 * j and valid until join_close().  Owner thread. */
const void *join_welcome(const struct join *j, size_t *len);

/* Agent: its number at the master (>= 1), which is its rank in the run.
 * Owner thread. */
uint32_t join_self(const struct join *j);

/* Make join_poll() return 0 as soon as fd is readable (fd is not read:
 * an eventfd the owner drains, e.g. its outbox's); -1: none.  fd must
 * outlive its use here.  Owner thread. */
void join_set_wake_fd(struct join *j, int fd);

/* Copy the counters into *out.  Owner thread. */
void join_get_stats(const struct join *j, struct join_stats *out);

/* Say BYE to every live peer (waiting up to heartbeat_s for it and what
 * was queued before it to leave), close the sockets and free.  A master
 * removes its access file when it still names it (access_remove()).
 * NULL is a no-op.  Owner thread. */
void join_close(struct join *j);

#ifdef __cplusplus
}
#endif
#endif
