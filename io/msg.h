/* msg.h - the binary message protocol between the master and node agents.
 *
 * Every message is one MPI message (or one in-process hand-off) holding a
 * 16-byte header and a body of `count` items (docs/design.md):
 *
 *   u32 magic 0x504d4348 ("PMCH")   u8 version (MSG_VERSION)   u8 kind
 *   u16 reserved (0)                u32 length (whole message, header
 *                                   included)                  u32 count
 *
 * so a message is at most MSG_MAX_BYTES (INT_MAX, 2 GiB - 1) bytes long: it
 * travels as one MPI message of bytes, whose count is an int (a longer one
 * would make MPI's send fail, which aborts the whole job).
 *
 * All integers are little-endian fixed width; strings are NUL-terminated and
 * their NUL lies inside the message; doubles are IEEE-754 binary64 in
 * little-endian order.  Items, by kind:
 *
 *   HELLO    (node -> master, count 1): u32 host_rank, u32 host_ranks,
 *            u32 cpus, u32 gpus, u64 memory_mb, str hostname
 *   TASKS    (master -> node): u32 id, u32 attempt, u32 cpus, u32 memory_mb,
 *            u32 flags (bit set of MSG_TASK_*; unknown bits are an error),
 *            u32 argc, u32 nfwd, u32 gpus, u32 time_limit_ms (0: none),
 *            i32 priority (-p), str name, str pegasus_id, argc x str argv
 *            (argc >= 1: a task is a command; 0 is an error),
 *            nfwd x (u8 kind (0 or 1), str src, str dest)
 *   RESULTS  (node -> master): u32 id, u32 attempt, i32 status (raw wait
 *            status), i32 exec_errno (0, or errno of a failed exec), f64 start
 *            (seconds since the Unix epoch), f64 duration (seconds), u32 nfwd,
 *            nfwd x (u32 fwd_index, u32 len, len bytes)
 *   SHUTDOWN (master -> node, count 0): finish and reply BYE
 *   BYE      (node -> master, count 0): the node's output files are closed
 *   ABORT    (either way, count 0): stop at once
 *   LOST     (node -> master, count 0): closing the node's DAG.out.R or
 *            DAG.err.R failed (a write-back error), so the output of the
 *            tasks it reported done may be lost; an ABORT in effect (the
 *            run fails) whose tasks the master takes back from the rescue
 *            log at the end (engine/master/master_report.c)
 *   PEER_LOST (the transport -> its own rank, count 0; never sent): the
 *            link to the mail's peer is gone for good (a joined agent lost
 *            or left, docs/join.md; on an agent: its master); the link
 *            delivers nothing more from that peer
 *   LEAVING  (node -> master, count 0): the node is going (SIGTERM, its
 *            allocation ends): send it nothing more; it gives back its
 *            queued tasks unstarted and reports the running ones, then
 *            leaves (a PEER_LOST follows)
 *   DRAIN    (master -> node, count 0): start nothing more; return every
 *            queued task unstarted (a RESULTS item with exec_errno
 *            ECANCELED), let running tasks finish
 *   RESUME   (master -> node, count 0): the master took a failure the node
 *            holds for (MSG_TASK_HOLD_ON_FAILURE) and goes on: one RESUME
 *            per such failure, unless a DRAIN or ABORT answers it
 *   RECALL   (either way, count 1): u32 want_cpus, u32 given, u32 cpus,
 *            u32 gpus, u64 memory_mb.  Master -> node: give back queued
 *            tasks unstarted, up to want_cpus CPUs of them, each fitting
 *            cpus, gpus and memory_mb (MB; the free resources of an idle
 *            node), from the end of the queue (the lowest priority, the
 *            last come), as DRAIN gives back all of them; the master
 *            places them again, on idle nodes first (sched/placement.h,
 *            "Recalls").  Node -> master, the answer, after the RESULTS
 *            items of the tasks given back: given = how many (the other
 *            fields 0)
 *   STARTED  (node -> master): u32 id, u32 attempt, f64 start (seconds since
 *            the Unix epoch when the task's process was started) -- sent only
 *            for tasks whose TASKS item had MSG_TASK_NOTIFY_START; lets the
 *            master write Pegasus's EXECUTE event with the task's real start
 *            time
 *
 * A received message is validated completely before use (msg_open() and the
 * msg_next_*() readers check every length against the buffer): a malformed
 * message is an error, never a crash.  Reserved fields must be 0;
 * HELLO and RECALL have count 1, SHUTDOWN/BYE/ABORT/DRAIN/RESUME/LOST/
 * PEER_LOST/LEAVING count 0
 * and no body.
 *
 * Bump MSG_VERSION when an existing item's layout or meaning changes; new
 * kinds and flag bits need none, since every rank of a run is one
 * executable.  The version turns a mixed install into a clear error.
 *
 * Thread-safety: a struct msgbuf or struct msg_reader belongs to one thread.
 */
#ifndef PMC_MSG_H
#define PMC_MSG_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "io/error.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MSG_MAGIC 0x504d4348u
#define MSG_VERSION 3
#define MSG_HEADER_SIZE 16
#define MSG_MAX_BYTES ((size_t)INT_MAX) /* the longest message: one MPI count */
/* Bytes at which a TASKS or RESULTS batch goes at once; a message holds at
 * most this plus one item (forwarded data <= FWD_TASK_MAX), far below
 * MSG_MAX_BYTES. */
#define MSG_SPLIT_BYTES ((size_t)16 << 20)

enum msg_kind {
    MSG_HELLO = 1,
    MSG_TASKS = 2,
    MSG_RESULTS = 3,
    MSG_SHUTDOWN = 4,
    MSG_BYE = 5,
    MSG_ABORT = 6,
    MSG_DRAIN = 7,
    MSG_STARTED = 8,
    MSG_RESUME = 9,
    MSG_RECALL = 10,
    MSG_LOST = 11,
    MSG_PEER_LOST = 12,
    MSG_LEAVING = 13,
};

/* Bits of msg_task.flags.  NOTIFY_START: send a STARTED item when the task
 * starts.  RELEASES: the task has children; report its result without the
 * long batching delay.  HOLD_ON_FAILURE: its failure may reach -m's limit;
 * on failure report at once and start nothing until RESUME, DRAIN or ABORT
 * (PMC manual, -m).  msg_next_task() rejects bits outside FLAGS_KNOWN. */
#define MSG_TASK_NOTIFY_START 1u
#define MSG_TASK_RELEASES 2u
#define MSG_TASK_HOLD_ON_FAILURE 4u
#define MSG_TASK_INDEXED 8u /* an array's instance: msg_task.index is its index */
#define MSG_TASK_FLAGS_KNOWN                                                                       \
    (MSG_TASK_NOTIFY_START | MSG_TASK_RELEASES | MSG_TASK_HOLD_ON_FAILURE | MSG_TASK_INDEXED)

struct msg_hello {
    uint32_t host_rank;  /* this rank's index among the ranks on its host */
    uint32_t host_ranks; /* number of ranks on the host */
    uint32_t cpus;       /* CPUs this rank offers */
    uint32_t gpus;       /* GPUs this rank offers */
    uint64_t memory_mb;  /* memory this rank offers, MB */
    const char *hostname;
};

/* One task of a TASKS message.  When decoded, the pointers point into the
 * message buffer and live as long as it does. */
struct msg_task {
    uint32_t id;
    uint32_t attempt; /* 1 for the first try */
    uint32_t cpus;
    uint32_t memory_mb;
    uint32_t flags;         /* bit set of MSG_TASK_*; unknown bits are an error */
    uint32_t gpus;          /* GPUs requested */
    uint32_t time_limit_ms; /* hard run-time limit, ms; 0 = none */
    int32_t priority;       /* -p: larger first (sched/node_queue.h) */
    uint32_t index;         /* with MSG_TASK_INDEXED: the instance's index (PMC_TASK_INDEX),
                               on the wire after the fixed fields; else 0, not sent */
    const char *name;
    const char *pegasus_id; /* "" when the task has none */
    uint32_t argc;          /* >= 1 in a decoded task */
    const char *argv;       /* argc consecutive NUL-terminated strings */
    uint32_t nfwd;
    const char *fwd; /* nfwd x (u8 kind, src NUL, dest NUL), packed */
    size_t fwd_len;  /* bytes at fwd: set by msg_next_task(); msg_add_task()
                        ignores it (it measures the nfwd forwards itself) */
};

/* One result of a RESULTS message; data pointers as in struct msg_task. */
struct msg_result {
    uint32_t id;
    uint32_t attempt;
    int32_t status;     /* raw wait status, as waitpid() gives it */
    int32_t exec_errno; /* nonzero: the executable could not be started */
    double start;       /* seconds since the Unix epoch */
    double duration;    /* seconds */
    uint32_t nfwd;      /* forwarded data blocks */
    const uint8_t *fwd; /* nfwd x (u32 fwd_index, u32 len, bytes), packed */
    size_t fwd_len;     /* bytes at fwd */
};

/* One item of a STARTED message: the process of attempt `attempt` of task
 * `id` was started at `start`.  Plain values, no pointers. */
struct msg_started {
    uint32_t id;
    uint32_t attempt;
    double start; /* seconds since the Unix epoch */
};

/* A growable message being built.  Zero-initialise, then msg_begin(). */
struct msgbuf {
    uint8_t *data;
    size_t len;
    size_t cap;
    uint32_t count;
};

/* Start a message of the given kind in b (reusing its storage).
 * Returns 0, or -1 with ENOMEM. */
int msg_begin(struct msgbuf *b, enum msg_kind kind);

/* Append one item to b, which must have been begun with the matching kind
 * (asserted).  The item is copied: the caller keeps ownership of *h, *t, *r,
 * *s and what they point to.  Returns 0, or -1 with ENOMEM, or EMSGSIZE when
 * the message would pass MSG_MAX_BYTES (b is then unchanged).  Strings are
 * copied up to their NUL; a NULL pegasus_id is sent as "". */
int msg_add_hello(struct msgbuf *b, const struct msg_hello *h);
/* t->flags may hold only MSG_TASK_FLAGS_KNOWN bits (asserted). */
int msg_add_task(struct msgbuf *b, const struct msg_task *t);
/* fwd/fwd_len of r must already be in the packed form described above; see
 * msg_pack_fwd_data() to build it. */
int msg_add_result(struct msgbuf *b, const struct msg_result *r);
/* A STARTED item is 16 bytes (u32 id, u32 attempt, f64 start in seconds
 * since the Unix epoch, stored bit-exact). */
int msg_add_started(struct msgbuf *b, const struct msg_started *s);
/* RECALL's one item (see the top of this file). */
struct msg_recall {
    uint32_t want_cpus; /* master -> node: CPUs of tasks to give back, at most */
    uint32_t given;     /* node -> master: tasks given back */
    uint32_t cpus;      /* master -> node: what a task may need, at most, to be given back */
    uint32_t gpus;
    uint64_t memory_mb; /* MB */
};

/* Append RECALL's one item (b begun as MSG_RECALL).  0, or -1 with ENOMEM. */
int msg_add_recall(struct msgbuf *b, const struct msg_recall *rc);

/* Append one forwarded data block (u32 index, u32 len, bytes) to a packing
 * buffer that becomes msg_result.fwd.  out is a plain byte buffer without a
 * header: start from a zeroed struct (or set len = count = 0 to reuse it),
 * never msg_begin().  out->count counts the blocks, so msg_result.fwd/fwd_len/
 * nfwd = out->data/len/count.  Returns 0, or -1 with ENOMEM or EMSGSIZE (out
 * is then unchanged). */
int msg_pack_fwd_data(struct msgbuf *out, uint32_t fwd_index, const void *data, uint32_t len);

/* Patch the header's length and count.  After this b->data/b->len is the
 * complete message.  Returns the length. */
size_t msg_end(struct msgbuf *b);

/* Free the storage; the struct may be reused after msg_begin(). */
void msg_free(struct msgbuf *b);

/* A cursor over a received message. */
struct msg_reader {
    const uint8_t *p;
    const uint8_t *end;
    uint32_t kind;
    uint32_t count;     /* items announced by the header */
    uint32_t remaining; /* items not yet read */
};

/* Validate the header of a received message of len bytes and set up r.
 * Returns 0, or -1 with errno EBADMSG and err text ("bad magic 0x...",
 * "version 7 not supported", "length 40 does not match 36 received",
 * "unknown kind 9"); r is then untouched. */
int msg_open(struct msg_reader *r, const void *data, size_t len, struct pmc_error *err);

/* Read the next item.  Return 1 with *out filled, 0 when all `count` items
 * were read (and no bytes remain), -1 with errno EBADMSG and err ("TASKS item
 * 3: argv[1] runs past the end of the message", "TASKS item 1: flags 0x3 have
 * unknown bits 0x2") on a malformed item, a kind mismatch, or trailing bytes
 * (reported with the last item); err may be NULL.  The item is validated
 * whole before *out is written; after -1, r and *out are unchanged, so the
 * next call fails the same way.  Pointers in *out point into the message
 * (see the structs above); the reader owns nothing. */
int msg_next_hello(struct msg_reader *r, struct msg_hello *out, struct pmc_error *err);
int msg_next_task(struct msg_reader *r, struct msg_task *out, struct pmc_error *err);
int msg_next_result(struct msg_reader *r, struct msg_result *out, struct pmc_error *err);
/* A STARTED item is fixed-size, so *out holds plain values (no pointers into
 * the message); errors read "STARTED item 2: 3 trailing bytes after the last
 * item", "expected a STARTED message, got RESULTS". */
int msg_next_started(struct msg_reader *r, struct msg_started *out, struct pmc_error *err);
/* RECALL's item, as msg_next_*(): 1 with *out, 0 once read, -1 on a
 * malformed message. */
int msg_next_recall(struct msg_reader *r, struct msg_recall *out, struct pmc_error *err);

/* Iterate forwarded data blocks of a decoded result: *pos starts at 0.
 * Returns 1 with the block, 0 at the end, -1 if malformed. */
int msg_result_next_fwd(const struct msg_result *r, size_t *pos, uint32_t *fwd_index,
                        const uint8_t **data, uint32_t *len);

struct dag;

/* Task t of d as a TASKS item: every field that comes from the DAG (id,
 * cpus, memory_mb, gpus, priority, name, pegasus_id, argc, argv, nfwd; the strings
 * point into d's arena and live as long as d).  attempt, flags and
 * time_limit_ms are left 0 for the caller, fwd NULL and fwd_len 0
 * (msg_pack_forwards() fills them when nfwd > 0).  Any thread; d is only
 * read. */
void msg_task_from_dag(const struct dag *d, uint32_t t, struct msg_task *out);

/* The same for instance id t (dag_is_instance()): the array's options,
 * MSG_TASK_INDEXED with the index, the name "a[i]" and the argv with
 * %{INDEX} replaced (dag_instance_name(), dag_instance_argv()) formatted
 * into *buf (*cap bytes, grown with realloc; the caller's, reused from
 * call to call: out's strings point into it until the next call).  0, or
 * -1 with ENOMEM or EINVAL (t is no instance).  O(template length). */
int msg_task_from_instance(const struct dag *d, uint32_t t, char **buf, size_t *cap,
                           struct msg_task *out);

/* Task t's -f/-F list (dag_task_forwards(); t may be an instance) in the wire form of
 * msg_task.fwd, written to *buf (cap bytes; grown with realloc as needed,
 * owned by the caller, reused across calls); *len gets the bytes used.
 * 0, or -1 with ENOMEM (*buf and *cap unchanged). */
int msg_pack_forwards(const struct dag *d, uint32_t t, char **buf, size_t *cap, size_t *len);

/* Iterate the forwards of a decoded task (bounded by t->fwd_len) the same
 * way: *pos starts at 0.  Returns 1 with kind/src/dest, 0 at the end, -1 if
 * malformed. */
int msg_task_next_fwd(const struct msg_task *t, uint32_t *pos, uint32_t *kind, const char **src,
                      const char **dest);

#ifdef __cplusplus
}
#endif
#endif
