/* fuzz_msg.c - libFuzzer harness of the message codec (io/msg.h).
 *
 * Each input is one received message.  msg_open() validates the header;
 * then every item is read with the msg_next_*() reader of the message's
 * kind, and every forward with msg_task_next_fwd()/msg_result_next_fwd().
 * Beyond "no crash, no leak, no out-of-bounds read" (AddressSanitizer and
 * UndefinedBehaviorSanitizer; libFuzzer hands over an exact-size heap copy,
 * so one byte read past the message is caught) the harness checks the
 * decoder's contract:
 *
 *   - a rejected message sets errno EBADMSG and an error text;
 *   - a reader of another kind refuses the message and leaves the reader
 *     unchanged;
 *   - every pointer the decoder returns lies inside the message, and every
 *     string it returns ends (NUL) inside the message;
 *   - forwards iterate to exactly nfwd entries ending at fwd_len;
 *   - a failed msg_next_*() leaves the reader unchanged, so a second call
 *     fails the same way with the same text;
 *   - a message read to its end holds exactly `count` items, and encoding
 *     the decoded items again (msg_begin, msg_add_*, msg_end) gives back the
 *     input byte for byte: the format has exactly one encoding of each
 *     message, so the decoder neither dropped nor invented a byte.
 *
 * Build and run: tests/fuzz/CMakeLists.txt, tests/fuzz/run-fuzz.sh.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "io/msg.h"

struct bounds {
    const uint8_t *lo, *hi; /* the message: [lo, hi) */
};

static bool inside(const struct bounds *b, const void *p, size_t n)
{
    const uint8_t *q = p;
    return q >= b->lo && q <= b->hi && n <= (size_t)(b->hi - q);
}

/* s starts inside the message and its NUL does too; returns strlen(s). */
static size_t check_str(const struct bounds *b, const char *s, const char *what)
{
    FUZZ_CHECK(inside(b, s, 1), "%s starts outside the message", what);
    const char *nul = memchr(s, 0, (size_t)(b->hi - (const uint8_t *)s));
    FUZZ_CHECK(nul != NULL, "%s has no NUL inside the message", what);
    return (size_t)(nul - s);
}

static void check_task(const struct bounds *b, const struct msg_task *t)
{
    FUZZ_CHECK((t->flags & ~MSG_TASK_FLAGS_KNOWN) == 0, "flags 0x%x accepted", t->flags);
    check_str(b, t->name, "name");
    check_str(b, t->pegasus_id, "pegasus_id");
    const char *a = t->argv;
    for (uint32_t i = 0; i < t->argc; i++)
        a += check_str(b, a, "argv") + 1;
    FUZZ_CHECK(inside(b, t->fwd, t->fwd_len), "task forwards outside the message");
    FUZZ_CHECK(a == t->fwd, "argv does not end where the forwards start");
    uint32_t pos = 0, kind, n = 0;
    const char *src, *dest;
    int rc;
    while ((rc = msg_task_next_fwd(t, &pos, &kind, &src, &dest)) == 1) {
        FUZZ_CHECK(kind <= 1, "forward kind %u", kind);
        check_str(b, src, "forward source");
        check_str(b, dest, "forward destination");
        n++;
    }
    FUZZ_CHECK(rc == 0 && n == t->nfwd && pos == t->fwd_len,
               "forwards: rc %d, %u of nfwd %u, pos %u of %zu", rc, n, t->nfwd, pos, t->fwd_len);
}

static void check_result(const struct bounds *b, const struct msg_result *r)
{
    FUZZ_CHECK(inside(b, r->fwd, r->fwd_len), "result data outside the message");
    size_t pos = 0;
    uint32_t index, len, n = 0;
    const uint8_t *data;
    int rc;
    while ((rc = msg_result_next_fwd(r, &pos, &index, &data, &len)) == 1) {
        FUZZ_CHECK(inside(b, data, len), "data block outside the message");
        n++;
    }
    FUZZ_CHECK(rc == 0 && n == r->nfwd && pos == r->fwd_len,
               "data blocks: rc %d, %u of nfwd %u, pos %zu of %zu", rc, n, r->nfwd, pos,
               r->fwd_len);
}

/* Read the next item of r's kind and append it to out.  1, 0 or -1 as the
 * msg_next_*() readers; -2 for a kind without items. */
static int next_item(struct msg_reader *r, const struct bounds *b, struct msgbuf *out,
                     struct pmc_error *err)
{
    int rc, added = 0;
    switch (r->kind) {
    case MSG_HELLO: {
        struct msg_hello h;
        if ((rc = msg_next_hello(r, &h, err)) == 1) {
            check_str(b, h.hostname, "hostname");
            added = msg_add_hello(out, &h);
        }
        break;
    }
    case MSG_TASKS: {
        struct msg_task t;
        if ((rc = msg_next_task(r, &t, err)) == 1) {
            check_task(b, &t);
            added = msg_add_task(out, &t);
        }
        break;
    }
    case MSG_RESULTS: {
        struct msg_result res;
        if ((rc = msg_next_result(r, &res, err)) == 1) {
            check_result(b, &res);
            added = msg_add_result(out, &res);
        }
        break;
    }
    case MSG_STARTED: {
        struct msg_started s;
        if ((rc = msg_next_started(r, &s, err)) == 1)
            added = msg_add_started(out, &s);
        break;
    }
    case MSG_RECALL: {
        struct msg_recall rc_item;
        if ((rc = msg_next_recall(r, &rc_item, err)) == 1)
            added = msg_add_recall(out, &rc_item);
        break;
    }
    default:
        return -2;
    }
    FUZZ_CHECK(added == 0, "re-encoding a decoded item failed: errno %d", errno);
    return rc;
}

/* A reader of another kind refuses r and leaves it unchanged. */
static void check_wrong_kind(struct msg_reader *r)
{
    struct msg_reader saved = *r;
    struct pmc_error err = {{0}};
    int rc;
    if (r->kind == MSG_TASKS) {
        struct msg_hello h;
        rc = msg_next_hello(r, &h, &err);
    } else {
        struct msg_task t;
        rc = msg_next_task(r, &t, &err);
    }
    FUZZ_CHECK(rc == -1 && errno == EBADMSG && err.text[0], "a reader of another kind gave %d", rc);
    FUZZ_CHECK(memcmp(&saved, r, sizeof saved) == 0, "a refused reader moved");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct msg_reader r;
    struct pmc_error err = {{0}};
    if (msg_open(&r, data, size, &err) < 0) {
        FUZZ_CHECK(errno == EBADMSG && err.text[0], "msg_open failed without EBADMSG and text");
        return 0;
    }
    FUZZ_CHECK(size >= MSG_HEADER_SIZE && r.p == data + MSG_HEADER_SIZE && r.end == data + size,
               "reader does not span the message");
    check_wrong_kind(&r);
    struct bounds b = {data, data + size};
    struct msgbuf out = {0};
    FUZZ_CHECK(msg_begin(&out, (enum msg_kind)r.kind) == 0, "msg_begin failed");
    uint32_t items = 0;
    int rc;
    while ((rc = next_item(&r, &b, &out, &err)) == 1)
        items++;
    if (rc == -2) { /* SHUTDOWN, BYE, ABORT, DRAIN: a bare header */
        FUZZ_CHECK(size == MSG_HEADER_SIZE && r.count == 0, "%zu-byte message of kind %u", size,
                   r.kind);
    } else if (rc == 0) {
        FUZZ_CHECK(items == r.count && r.remaining == 0, "%u items read, count %u", items, r.count);
    } else {
        FUZZ_CHECK(rc == -1 && errno == EBADMSG && err.text[0], "reader failed without text");
        struct msg_reader saved = r;
        struct pmc_error again = {{0}};
        FUZZ_CHECK(next_item(&r, &b, &out, &again) == -1, "a failed reader recovered");
        FUZZ_CHECK(memcmp(&saved, &r, sizeof r) == 0, "a failed reader moved");
        FUZZ_CHECK(strcmp(err.text, again.text) == 0, "second failure differs: '%s' then '%s'",
                   err.text, again.text);
    }
    if (rc == 0 || rc == -2) {
        size_t len = msg_end(&out);
        FUZZ_CHECK(len == size && memcmp(out.data, data, size) == 0,
                   "re-encoding gives %zu bytes for %zu (or other bytes)", len, size);
    }
    msg_free(&out);
    return 0;
}
