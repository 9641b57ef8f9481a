/* msg.c - encoder and validating, zero-copy decoder of the master/node
 * message protocol.  The wire format is in the banner of io/msg.h.
 *
 * Byte order: every field is stored with memcpy + htole*() and loaded with
 * memcpy + le*toh(), never by casting a struct onto the buffer, so the code
 * holds for any alignment and either host byte order.
 *
 * Encoding: msg_add_*() measures its item, reserves room for all of it at
 * once (the buffer grows geometrically with realloc and msg_begin() keeps the
 * storage, so a warm buffer never allocates), then writes it.  A failure
 * happens before the first write, so it leaves the buffer as it was.
 *
 * Decoding never trusts the sender.  Invariants of a struct msg_reader:
 * header validated, p <= end, and every item before p validated.  Each read
 * is checked against end - p; a count (argc, nfwd) is first checked against
 * the bytes left (each element takes at least one byte), so no loop runs on a
 * forged count and no length sum can overflow.  An item is decoded into a
 * local copy and committed (reader advanced, *out written) only when whole.
 *
 * Thread-safety: none needed; every object belongs to its caller's thread.
 */
#include "io/msg.h"

#include <assert.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/dag.h"
#include "io/grow.h"

_Static_assert(sizeof(double) == sizeof(uint64_t), "doubles must be IEEE-754 binary64");

#define INITIAL_CAP 512
#define HELLO_FIXED 24 /* host_rank, host_ranks, cpus, gpus, memory_mb */
#define TASK_FIXED                                                                                 \
    40                  /* id, attempt, cpus, memory_mb, flags, argc, nfwd, gpus, time_limit_ms,   \
                         * priority */
#define RESULT_FIXED 36 /* id, attempt, status, exec_errno, start, duration, nfwd */
#define STARTED_SIZE 16 /* id, attempt, start: the whole item */
#define RECALL_SIZE 24  /* want_cpus, given, cpus, gpus, memory_mb: the whole item */
#define BLOCK_HEAD 8    /* fwd_index, len of a forwarded data block */
#define FWD_MIN 3       /* a task forward: kind byte and two empty strings */

/* Header offsets. */
#define H_MAGIC 0
#define H_VERSION 4
#define H_KIND 5
#define H_RESERVED 6
#define H_LENGTH 8
#define H_COUNT 12

/* ---- little-endian fields ---------------------------------------------- */

static inline void put_u32(uint8_t *p, uint32_t v)
{
    v = htole32(v);
    memcpy(p, &v, sizeof v);
}

static inline void put_u64(uint8_t *p, uint64_t v)
{
    v = htole64(v);
    memcpy(p, &v, sizeof v);
}

static inline void put_i32(uint8_t *p, int32_t v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    put_u32(p, u);
}

static inline void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof u);
    put_u64(p, u);
}

static inline uint16_t get_u16(const uint8_t *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return le16toh(v);
}

static inline uint32_t get_u32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return le32toh(v);
}

static inline uint64_t get_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return le64toh(v);
}

static inline int32_t get_i32(const uint8_t *p)
{
    uint32_t u = get_u32(p);
    int32_t v;
    memcpy(&v, &u, sizeof v);
    return v;
}

static inline double get_f64(const uint8_t *p)
{
    uint64_t u = get_u64(p);
    double v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/* ---- kinds --------------------------------------------------------------- */

struct kind_info {
    const char *name;
    size_t min_item; /* smallest encoded item; 0: the kind has no items */
};

static const struct kind_info kinds[] = {
    [MSG_HELLO] = {"HELLO", HELLO_FIXED + 1},
    [MSG_TASKS] = {"TASKS", TASK_FIXED + 2},
    [MSG_RESULTS] = {"RESULTS", RESULT_FIXED},
    [MSG_SHUTDOWN] = {"SHUTDOWN", 0},
    [MSG_BYE] = {"BYE", 0},
    [MSG_ABORT] = {"ABORT", 0},
    [MSG_DRAIN] = {"DRAIN", 0},
    [MSG_STARTED] = {"STARTED", STARTED_SIZE},
    [MSG_RESUME] = {"RESUME", 0},
    [MSG_RECALL] = {"RECALL", RECALL_SIZE},
    [MSG_LOST] = {"LOST", 0},
    [MSG_PEER_LOST] = {"PEER_LOST", 0},
    [MSG_LEAVING] = {"LEAVING", 0},
};

static int kind_valid(uint32_t kind)
{
    return kind >= MSG_HELLO && kind <= MSG_LEAVING;
}

static const char *kind_name(uint32_t kind)
{
    return kind_valid(kind) ? kinds[kind].name : "unknown";
}

/* ---- encoding ------------------------------------------------------------ */

/* a + b, or SIZE_MAX when that overflows (which reserve() then refuses). */
static size_t sat_add(size_t a, size_t b)
{
    return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Room for need more bytes at b->data + b->len, or NULL with errno. */
static uint8_t *reserve(struct msgbuf *b, size_t need)
{
    if (b->len > MSG_MAX_BYTES || need > MSG_MAX_BYTES - b->len) {
        errno = EMSGSIZE;
        return NULL;
    }
    if (pmc_grow_from((void **)&b->data, &b->cap, b->len + need, 1, INITIAL_CAP) < 0)
        return NULL;
    return b->data + b->len;
}

static int commit(struct msgbuf *b, size_t n)
{
    b->len += n;
    b->count++;
    return 0;
}

/* Bytes of n consecutive NUL-terminated strings at s. */
static size_t strs_len(const char *s, uint32_t n)
{
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++)
        len += strlen(s + len) + 1;
    return len;
}

/* Bytes of n packed task forwards (kind byte, src, dest) at f. */
static size_t fwds_len(const char *f, uint32_t n)
{
    size_t len = 0;
    for (uint32_t i = 0; i < n; i++) {
        len += 1;
        len += strs_len(f + len, 2);
    }
    return len;
}

int msg_begin(struct msgbuf *b, enum msg_kind kind)
{
    assert(kind_valid(kind));
    if (pmc_grow_from((void **)&b->data, &b->cap, MSG_HEADER_SIZE, 1, INITIAL_CAP) < 0)
        return -1;
    uint8_t *p = b->data;
    put_u32(p + H_MAGIC, MSG_MAGIC);
    p[H_VERSION] = MSG_VERSION;
    p[H_KIND] = (uint8_t)kind;
    p[H_RESERVED] = p[H_RESERVED + 1] = 0;
    put_u32(p + H_LENGTH, MSG_HEADER_SIZE);
    put_u32(p + H_COUNT, 0);
    b->len = MSG_HEADER_SIZE;
    b->count = 0;
    return 0;
}

int msg_add_hello(struct msgbuf *b, const struct msg_hello *h)
{
    assert(b->len >= MSG_HEADER_SIZE && b->data[H_KIND] == MSG_HELLO);
    size_t name_len = strlen(h->hostname) + 1;
    size_t need = sat_add(HELLO_FIXED, name_len);
    uint8_t *p = reserve(b, need);
    if (!p)
        return -1;
    put_u32(p, h->host_rank);
    put_u32(p + 4, h->host_ranks);
    put_u32(p + 8, h->cpus);
    put_u32(p + 12, h->gpus);
    put_u64(p + 16, h->memory_mb);
    memcpy(p + HELLO_FIXED, h->hostname, name_len);
    return commit(b, need);
}

int msg_add_task(struct msgbuf *b, const struct msg_task *t)
{
    assert(b->len >= MSG_HEADER_SIZE && b->data[H_KIND] == MSG_TASKS);
    assert((t->flags & ~MSG_TASK_FLAGS_KNOWN) == 0);
    const char *pegasus_id = t->pegasus_id ? t->pegasus_id : "";
    size_t name_len = strlen(t->name) + 1;
    size_t pid_len = strlen(pegasus_id) + 1;
    size_t argv_len = strs_len(t->argv, t->argc);
    size_t fwd_len = fwds_len(t->fwd, t->nfwd);
    size_t index_len = t->flags & MSG_TASK_INDEXED ? 4 : 0;
    size_t need =
        sat_add(sat_add(TASK_FIXED + index_len + name_len, pid_len), sat_add(argv_len, fwd_len));
    uint8_t *p = reserve(b, need);
    if (!p)
        return -1;
    put_u32(p, t->id);
    put_u32(p + 4, t->attempt);
    put_u32(p + 8, t->cpus);
    put_u32(p + 12, t->memory_mb);
    put_u32(p + 16, t->flags);
    put_u32(p + 20, t->argc);
    put_u32(p + 24, t->nfwd);
    put_u32(p + 28, t->gpus);
    put_u32(p + 32, t->time_limit_ms);
    put_i32(p + 36, t->priority);
    p += TASK_FIXED;
    if (index_len)
        put_u32(p, t->index);
    p += index_len;
    memcpy(p, t->name, name_len);
    p += name_len;
    memcpy(p, pegasus_id, pid_len);
    p += pid_len;
    if (argv_len)
        memcpy(p, t->argv, argv_len);
    if (fwd_len)
        memcpy(p + argv_len, t->fwd, fwd_len);
    return commit(b, need);
}

int msg_add_result(struct msgbuf *b, const struct msg_result *r)
{
    assert(b->len >= MSG_HEADER_SIZE && b->data[H_KIND] == MSG_RESULTS);
    size_t need = sat_add(RESULT_FIXED, r->fwd_len);
    uint8_t *p = reserve(b, need);
    if (!p)
        return -1;
    put_u32(p, r->id);
    put_u32(p + 4, r->attempt);
    put_i32(p + 8, r->status);
    put_i32(p + 12, r->exec_errno);
    put_f64(p + 16, r->start);
    put_f64(p + 24, r->duration);
    put_u32(p + 32, r->nfwd);
    if (r->fwd_len)
        memcpy(p + RESULT_FIXED, r->fwd, r->fwd_len);
    return commit(b, need);
}

int msg_add_started(struct msgbuf *b, const struct msg_started *s)
{
    assert(b->len >= MSG_HEADER_SIZE && b->data[H_KIND] == MSG_STARTED);
    uint8_t *p = reserve(b, STARTED_SIZE);
    if (!p)
        return -1;
    put_u32(p, s->id);
    put_u32(p + 4, s->attempt);
    put_f64(p + 8, s->start);
    return commit(b, STARTED_SIZE);
}

int msg_add_recall(struct msgbuf *b, const struct msg_recall *rc)
{
    assert(b->len >= MSG_HEADER_SIZE && b->data[H_KIND] == MSG_RECALL);
    uint8_t *p = reserve(b, RECALL_SIZE);
    if (!p)
        return -1;
    put_u32(p, rc->want_cpus);
    put_u32(p + 4, rc->given);
    put_u32(p + 8, rc->cpus);
    put_u32(p + 12, rc->gpus);
    put_u64(p + 16, rc->memory_mb);
    return commit(b, RECALL_SIZE);
}

int msg_pack_fwd_data(struct msgbuf *out, uint32_t fwd_index, const void *data, uint32_t len)
{
    size_t need = sat_add(BLOCK_HEAD, len);
    uint8_t *p = reserve(out, need);
    if (!p)
        return -1;
    put_u32(p, fwd_index);
    put_u32(p + 4, len);
    if (len)
        memcpy(p + BLOCK_HEAD, data, len);
    return commit(out, need);
}

size_t msg_end(struct msgbuf *b)
{
    assert(b->len >= MSG_HEADER_SIZE && b->len <= MSG_MAX_BYTES);
    put_u32(b->data + H_LENGTH, (uint32_t)b->len);
    put_u32(b->data + H_COUNT, b->count);
    return b->len;
}

void msg_free(struct msgbuf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
    b->count = 0;
}

/* ---- decoding: the header ------------------------------------------------ */

static int bad(struct pmc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fail with EBADMSG and err text. */
static int bad(struct pmc_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pmc_verrorf(err, fmt, ap);
    va_end(ap);
    errno = EBADMSG;
    return -1;
}

/* Check count against what the kind allows and the body bytes can hold. */
static int check_count(uint32_t kind, uint32_t count, size_t body, struct pmc_error *err)
{
    const char *name = kinds[kind].name;
    size_t min_item = kinds[kind].min_item;
    if (count == 0 && body != 0)
        return bad(err, "%s count is 0 but %zu bytes follow the header", name, body);
    if (min_item == 0 && count != 0)
        return bad(err, "%s count is %u, expected 0", name, count);
    if ((kind == MSG_HELLO || kind == MSG_RECALL) && count != 1)
        return bad(err, "%s count is %u, expected 1", name, count);
    if (min_item && count > body / min_item)
        return bad(err, "%s count %u cannot fit in the %zu bytes after the header", name, count,
                   body);
    return 0;
}

int msg_open(struct msg_reader *r, const void *data, size_t len, struct pmc_error *err)
{
    const uint8_t *p = data;
    if (len < MSG_HEADER_SIZE)
        return bad(err, "message of %zu bytes is shorter than the %d-byte header", len,
                   MSG_HEADER_SIZE);
    uint32_t magic = get_u32(p + H_MAGIC);
    if (magic != MSG_MAGIC)
        return bad(err, "bad magic 0x%08x", magic);
    if (p[H_VERSION] != MSG_VERSION)
        return bad(err, "version %u not supported", p[H_VERSION]);
    if (!kind_valid(p[H_KIND]))
        return bad(err, "unknown kind %u", p[H_KIND]);
    uint16_t reserved = get_u16(p + H_RESERVED);
    if (reserved != 0)
        return bad(err, "reserved header field is 0x%04x, expected 0", reserved);
    uint32_t length = get_u32(p + H_LENGTH);
    if (length != len)
        return bad(err, "length %u does not match %zu received", length, len);
    uint32_t count = get_u32(p + H_COUNT);
    if (check_count(p[H_KIND], count, len - MSG_HEADER_SIZE, err) < 0)
        return -1;
    r->p = p + MSG_HEADER_SIZE;
    r->end = p + len;
    r->kind = p[H_KIND];
    r->count = r->remaining = count;
    return 0;
}

/* ---- decoding: items ----------------------------------------------------- */

static int item_bad(const struct msg_reader *r, struct pmc_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Fail with "KIND item N: " and the formatted text. */
static int item_bad(const struct msg_reader *r, struct pmc_error *err, const char *fmt, ...)
{
    if (!err) {
        errno = EBADMSG;
        return -1;
    }
    struct pmc_error what;
    va_list ap;
    va_start(ap, fmt);
    pmc_verrorf(&what, fmt, ap);
    va_end(ap);
    return bad(err, "%s item %u: %s", kind_name(r->kind), r->count - r->remaining + 1, what.text);
}

static size_t left(const uint8_t *p, const uint8_t *end)
{
    return (size_t)(end - p);
}

/* Whether r holds another item of kind: 1 yes, 0 all read, -1 error. */
static int next_begin(const struct msg_reader *r, uint32_t kind, struct pmc_error *err)
{
    if (r->kind != kind)
        return bad(err, "expected a %s message, got %s", kind_name(kind), kind_name(r->kind));
    if (r->remaining == 0) /* msg_open() and next_end() make this p == end */
        return r->p == r->end ? 0 : bad(err, "%s: bytes after the last item", kind_name(kind));
    if (r->p == r->end)
        return item_bad(r, err, "message ends before the item (count says %u)", r->count);
    return 1;
}

/* Commit an item that ends at p; the last item must end the message. */
static int next_end(struct msg_reader *r, const uint8_t *p, struct pmc_error *err)
{
    if (r->remaining == 1 && p != r->end)
        return item_bad(r, err, "%zu trailing bytes after the last item", left(p, r->end));
    r->p = p;
    r->remaining--;
    return 1;
}

/* The string at p: returns the byte after its NUL, or NULL if none in bounds. */
static const uint8_t *take_str(const uint8_t *p, const uint8_t *end, const char **s)
{
    const uint8_t *nul = memchr(p, 0, left(p, end));
    if (!nul)
        return NULL;
    *s = (const char *)p;
    return nul + 1;
}

/* Skip n strings; NULL with *bad_i the string that runs past end. */
static const uint8_t *skip_strs(const uint8_t *p, const uint8_t *end, uint32_t n, uint32_t *bad_i)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *nul = memchr(p, 0, left(p, end));
        if (!nul) {
            *bad_i = i;
            return NULL;
        }
        p = nul + 1;
    }
    return p;
}

enum fwd_status { FWD_OK, FWD_END, FWD_KIND, FWD_SRC, FWD_DEST };

/* Parse the task forward at *pp and advance *pp past it. */
static enum fwd_status parse_fwd(const uint8_t **pp, const uint8_t *end, uint32_t *kind,
                                 const char **src, const char **dest)
{
    const uint8_t *p = *pp;
    if (p == end)
        return FWD_END;
    *kind = *p++;
    if (*kind > 1)
        return FWD_KIND;
    if (!(p = take_str(p, end, src)))
        return FWD_SRC;
    if (!(p = take_str(p, end, dest)))
        return FWD_DEST;
    *pp = p;
    return FWD_OK;
}

static int fwd_bad(const struct msg_reader *r, enum fwd_status st, uint32_t i, uint32_t kind,
                   struct pmc_error *err)
{
    switch (st) {
    case FWD_KIND:
        return item_bad(r, err, "forward %u has kind %u, expected 0 or 1", i + 1, kind);
    case FWD_SRC:
        return item_bad(r, err, "forward %u: source runs past the end of the message", i + 1);
    case FWD_DEST:
        return item_bad(r, err, "forward %u: destination runs past the end of the message", i + 1);
    default:
        return item_bad(r, err, "forward %u runs past the end of the message", i + 1);
    }
}

/* Skip n task forwards at *pp. */
static int skip_fwds(const struct msg_reader *r, const uint8_t **pp, uint32_t n,
                     struct pmc_error *err)
{
    if (n > left(*pp, r->end) / FWD_MIN)
        return item_bad(r, err, "nfwd %u exceeds the %zu bytes left", n, left(*pp, r->end));
    for (uint32_t i = 0; i < n; i++) {
        uint32_t kind = 0;
        const char *src, *dest;
        enum fwd_status st = parse_fwd(pp, r->end, &kind, &src, &dest);
        if (st != FWD_OK)
            return fwd_bad(r, st, i, kind, err);
    }
    return 0;
}

/* Skip n result data blocks at *pp. */
static int skip_blocks(const struct msg_reader *r, const uint8_t **pp, uint32_t n,
                       struct pmc_error *err)
{
    const uint8_t *p = *pp;
    if (n > left(p, r->end) / BLOCK_HEAD)
        return item_bad(r, err, "nfwd %u exceeds the %zu bytes left", n, left(p, r->end));
    for (uint32_t i = 0; i < n; i++) {
        if (left(p, r->end) < BLOCK_HEAD)
            return item_bad(r, err, "data block %u runs past the end of the message", i + 1);
        uint32_t len = get_u32(p + 4);
        p += BLOCK_HEAD;
        if (len > left(p, r->end))
            return item_bad(r, err, "data block %u (%u bytes) runs past the end of the message",
                            i + 1, len);
        p += len;
    }
    *pp = p;
    return 0;
}

static int decode_hello(const struct msg_reader *r, const uint8_t **pp, struct msg_hello *h,
                        struct pmc_error *err)
{
    const uint8_t *p = *pp;
    if (left(p, r->end) < HELLO_FIXED)
        return item_bad(r, err, "fields run past the end of the message");
    h->host_rank = get_u32(p);
    h->host_ranks = get_u32(p + 4);
    h->cpus = get_u32(p + 8);
    h->gpus = get_u32(p + 12);
    h->memory_mb = get_u64(p + 16);
    if (!(p = take_str(p + HELLO_FIXED, r->end, &h->hostname)))
        return item_bad(r, err, "hostname runs past the end of the message");
    *pp = p;
    return 0;
}

/* The strings of a task after its fixed fields: name, pegasus_id, argv. */
static int decode_task_strs(const struct msg_reader *r, const uint8_t **pp, struct msg_task *t,
                            struct pmc_error *err)
{
    const uint8_t *p = *pp;
    uint32_t bad_i = 0;
    if (!(p = take_str(p, r->end, &t->name)))
        return item_bad(r, err, "name runs past the end of the message");
    if (!(p = take_str(p, r->end, &t->pegasus_id)))
        return item_bad(r, err, "pegasus_id runs past the end of the message");
    if (t->argc == 0) /* a task is a command: the agent reads argv[0] */
        return item_bad(r, err, "argc is 0");
    if (t->argc > left(p, r->end))
        return item_bad(r, err, "argc %u exceeds the %zu bytes left", t->argc, left(p, r->end));
    t->argv = (const char *)p;
    if (!(p = skip_strs(p, r->end, t->argc, &bad_i)))
        return item_bad(r, err, "argv[%u] runs past the end of the message", bad_i);
    *pp = p;
    return 0;
}

static int decode_task(const struct msg_reader *r, const uint8_t **pp, struct msg_task *t,
                       struct pmc_error *err)
{
    const uint8_t *p = *pp;
    if (left(p, r->end) < TASK_FIXED)
        return item_bad(r, err, "fixed fields run past the end of the message");
    t->id = get_u32(p);
    t->attempt = get_u32(p + 4);
    t->cpus = get_u32(p + 8);
    t->memory_mb = get_u32(p + 12);
    t->flags = get_u32(p + 16);
    if (t->flags & ~MSG_TASK_FLAGS_KNOWN)
        return item_bad(r, err, "flags 0x%x have unknown bits 0x%x", t->flags,
                        t->flags & ~MSG_TASK_FLAGS_KNOWN);
    t->argc = get_u32(p + 20);
    t->nfwd = get_u32(p + 24);
    t->gpus = get_u32(p + 28);
    t->time_limit_ms = get_u32(p + 32);
    t->priority = get_i32(p + 36);
    p += TASK_FIXED;
    t->index = 0;
    if (t->flags & MSG_TASK_INDEXED) {
        if (left(p, r->end) < 4)
            return item_bad(r, err, "index runs past the end of the message");
        t->index = get_u32(p);
        p += 4;
    }
    if (decode_task_strs(r, &p, t, err) < 0)
        return -1;
    t->fwd = (const char *)p;
    if (skip_fwds(r, &p, t->nfwd, err) < 0)
        return -1;
    t->fwd_len = left((const uint8_t *)t->fwd, p);
    *pp = p;
    return 0;
}

static int decode_result(const struct msg_reader *r, const uint8_t **pp, struct msg_result *res,
                         struct pmc_error *err)
{
    const uint8_t *p = *pp;
    if (left(p, r->end) < RESULT_FIXED)
        return item_bad(r, err, "fixed fields run past the end of the message");
    res->id = get_u32(p);
    res->attempt = get_u32(p + 4);
    res->status = get_i32(p + 8);
    res->exec_errno = get_i32(p + 12);
    res->start = get_f64(p + 16);
    res->duration = get_f64(p + 24);
    res->nfwd = get_u32(p + 32);
    p += RESULT_FIXED;
    res->fwd = p;
    if (skip_blocks(r, &p, res->nfwd, err) < 0)
        return -1;
    res->fwd_len = left(res->fwd, p);
    *pp = p;
    return 0;
}

static int decode_started(const struct msg_reader *r, const uint8_t **pp, struct msg_started *s,
                          struct pmc_error *err)
{
    const uint8_t *p = *pp;
    if (left(p, r->end) < STARTED_SIZE) /* msg_open()'s count check rules this out */
        return item_bad(r, err, "fields run past the end of the message");
    s->id = get_u32(p);
    s->attempt = get_u32(p + 4);
    s->start = get_f64(p + 8);
    *pp = p + STARTED_SIZE;
    return 0;
}

int msg_next_hello(struct msg_reader *r, struct msg_hello *out, struct pmc_error *err)
{
    int more = next_begin(r, MSG_HELLO, err);
    if (more <= 0)
        return more;
    struct msg_hello h;
    const uint8_t *p = r->p;
    if (decode_hello(r, &p, &h, err) < 0 || next_end(r, p, err) < 0)
        return -1;
    *out = h;
    return 1;
}

int msg_next_task(struct msg_reader *r, struct msg_task *out, struct pmc_error *err)
{
    int more = next_begin(r, MSG_TASKS, err);
    if (more <= 0)
        return more;
    struct msg_task t;
    const uint8_t *p = r->p;
    if (decode_task(r, &p, &t, err) < 0 || next_end(r, p, err) < 0)
        return -1;
    *out = t;
    return 1;
}

int msg_next_result(struct msg_reader *r, struct msg_result *out, struct pmc_error *err)
{
    int more = next_begin(r, MSG_RESULTS, err);
    if (more <= 0)
        return more;
    struct msg_result res;
    const uint8_t *p = r->p;
    if (decode_result(r, &p, &res, err) < 0 || next_end(r, p, err) < 0)
        return -1;
    *out = res;
    return 1;
}

int msg_next_started(struct msg_reader *r, struct msg_started *out, struct pmc_error *err)
{
    int more = next_begin(r, MSG_STARTED, err);
    if (more <= 0)
        return more;
    struct msg_started s;
    const uint8_t *p = r->p;
    if (decode_started(r, &p, &s, err) < 0 || next_end(r, p, err) < 0)
        return -1;
    *out = s;
    return 1;
}

int msg_next_recall(struct msg_reader *r, struct msg_recall *out, struct pmc_error *err)
{
    int more = next_begin(r, MSG_RECALL, err);
    if (more <= 0)
        return more;
    const uint8_t *p = r->p;
    if (left(p, r->end) < RECALL_SIZE) /* msg_open()'s count check rules this out */
        return item_bad(r, err, "fields run past the end of the message");
    struct msg_recall rc = {.want_cpus = get_u32(p),
                            .given = get_u32(p + 4),
                            .cpus = get_u32(p + 8),
                            .gpus = get_u32(p + 12),
                            .memory_mb = get_u64(p + 16)};
    if (next_end(r, p + RECALL_SIZE, err) < 0)
        return -1;
    *out = rc;
    return 1;
}

/* ---- iterating the packed forwards of an item ---------------------------- */

int msg_result_next_fwd(const struct msg_result *r, size_t *pos, uint32_t *fwd_index,
                        const uint8_t **data, uint32_t *len)
{
    if (*pos == r->fwd_len)
        return 0;
    if (*pos > r->fwd_len || r->fwd_len - *pos < BLOCK_HEAD)
        return -1;
    const uint8_t *p = r->fwd + *pos;
    uint32_t n = get_u32(p + 4);
    if (n > r->fwd_len - *pos - BLOCK_HEAD)
        return -1;
    *fwd_index = get_u32(p);
    *len = n;
    *data = p + BLOCK_HEAD;
    *pos += BLOCK_HEAD + (size_t)n;
    return 1;
}

int msg_task_next_fwd(const struct msg_task *t, uint32_t *pos, uint32_t *kind, const char **src,
                      const char **dest)
{
    if (*pos == t->fwd_len)
        return 0;
    if (*pos > t->fwd_len)
        return -1;
    const uint8_t *base = (const uint8_t *)t->fwd;
    const uint8_t *p = base + *pos;
    uint32_t k = 0;
    const char *s, *d;
    if (parse_fwd(&p, base + t->fwd_len, &k, &s, &d) != FWD_OK)
        return -1;
    *kind = k;
    *src = s;
    *dest = d;
    *pos = (uint32_t)(p - base);
    return 1;
}

/* ---- items from the DAG ------------------------------------------------- */

void msg_task_from_dag(const struct dag *d, uint32_t t, struct msg_task *out)
{
    *out = (struct msg_task){.id = t,
                             .cpus = d->cpus[t],
                             .memory_mb = d->memory_mb[t],
                             .gpus = d->gpus[t],
                             .priority = d->priority[t],
                             .name = dag_task_name(d, t),
                             .pegasus_id = d->arena + d->pegasus_id[t],
                             .argc = d->argc[t],
                             .argv = d->arena + d->argv[t],
                             .nfwd = d->nfwd[t]};
}

int msg_pack_forwards(const struct dag *d, uint32_t t, char **buf, size_t *cap, size_t *len)
{
    uint32_t first, n = dag_task_forwards(d, t, &first);
    const struct dag_forward *f = d->fwd + first;
    size_t need = 0;
    for (uint32_t j = 0; j < n; j++)
        need += 3 + strlen(d->arena + f[j].src) + strlen(d->arena + f[j].dest);
    if (need > *cap) {
        char *p = realloc(*buf, need);
        if (!p)
            return -1;
        *buf = p;
        *cap = need;
    }
    char *p = *buf;
    for (uint32_t j = 0; j < n; j++) {
        *p++ = (char)f[j].kind;
        p = stpcpy(p, d->arena + f[j].src) + 1;
        p = stpcpy(p, d->arena + f[j].dest) + 1;
    }
    *len = need;
    return 0;
}

int msg_task_from_instance(const struct dag *d, uint32_t t, char **buf, size_t *cap,
                           struct msg_task *out)
{
    uint32_t a, index;
    if (dag_instance_of(d, t, &a, &index) < 0)
        return -1;
    const struct dag_array *ar = &d->arrays[a];
    size_t name_cap = strlen(dag_array_name(d, a)) + 12; /* "[" 9 digits "]" NUL */
    size_t argv_len = dag_instance_argv(d, a, index, NULL, 0);
    if (pmc_grow((void **)buf, cap, name_cap + argv_len, 1) < 0)
        return -1;
    (void)dag_instance_name(d, a, index, *buf, name_cap);
    (void)dag_instance_argv(d, a, index, *buf + name_cap, argv_len);
    *out = (struct msg_task){.id = t,
                             .cpus = ar->cpus,
                             .memory_mb = ar->memory_mb,
                             .gpus = ar->gpus,
                             .priority = ar->priority,
                             .flags = MSG_TASK_INDEXED,
                             .index = index,
                             .name = *buf,
                             .pegasus_id = d->arena + ar->pegasus_id,
                             .argc = ar->argc,
                             .argv = *buf + name_cap,
                             .nfwd = ar->nfwd};
    return 0;
}
