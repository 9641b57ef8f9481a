/* fuzz_rescue.c - libFuzzer harness of the rescue log reader (rescue_read()
 * in io/rescue.h).
 *
 * Each input is the whole content of a rescue file.  It is written to a
 * memfd and read back through /proc/self/fd/N (rescue_read() takes a path;
 * a memfd is a regular file, so the reader takes its mmap path) against one
 * fixed DAG whose names cover the cases that matter: short names the fuzzer
 * finds quickly, real workflow names, names holding '#', bytes >= 0x80
 * (UTF-8) and a control byte.
 *
 * Oracle: besides "no crash, no leak, no out-of-bounds read", the result is
 * compared with a small model written from the contract in io/rescue.h, not
 * from rescue.c:
 *
 *   - lines end at '\n'; the bytes after the last '\n' are the unterminated
 *     last line; the file is in PMC's style when its first byte is '\n';
 *   - a line is skipped when blank or when its first non-space byte is '#'
 *     (space: ' ', \t, \r, \v, \f); it is a record when it is exactly two
 *     words, "DONE" and a name without bytes < 0x20 or 0x7f; anything else
 *     is bad;
 *   - a complete record: error when a bad line came before it, error when it
 *     names an unknown task, else the task is done;
 *   - the unterminated last line: skipped when blank/comment; counts as a
 *     record only in PMC's style and when it names a known task (error then
 *     if a bad line came before); otherwise it is torn (+1);
 *   - bad lines not followed by any record are the garbage tail (+1 once);
 *   - a file in which no task is done and some bad line (complete or not)
 *     holds no NUL and does not begin, after its spaces, like "DONE" (its
 *     first min(4, length) bytes) is not a rescue log: error;
 *   - on error: -1, done[] all zero, ndone 0.
 *
 * rescue_read() must agree on the return value, every done[] byte, ndone
 * and ntorn.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/dag.h"
#include "fuzz_check.h"
#include "io/log.h"
#include "io/rescue.h"

static const char *const names[] = {
    "A",
    "B",
    "C",
    "t1",
    "t10",
    "mProject_ID0000001",
    "individuals_ID0000001",
    "fast2bfq_fast2bfq_080603_ILMN-GA001_0003_205WWAAXX_TAQ1_s_1_sequence_1_ID0000002",
    "a#b",
    "#x",
    "DONE",
    ("\xc3\xb1"
     "ame"),        /* "ñame" */
    "\xe2\x82\xac", /* "€" */
    "ctl\x01name",  /* a control byte: never a valid record */
};
#define NNAMES (sizeof names / sizeof names[0])

static struct dag *dag;
static int memfd = -1;
static char path[64];

static void build_dag(void)
{
    static const char *const argv[] = {"/bin/true"};
    static const size_t argv_len[] = {9};
    dag = dag_create();
    FUZZ_CHECK(dag != NULL, "dag_create");
    for (size_t i = 0; i < NNAMES; i++) {
        struct dag_task_spec s = {.name = names[i],
                                  .name_len = strlen(names[i]),
                                  .argv = argv,
                                  .argv_len = argv_len,
                                  .argc = 1,
                                  .cpus = 1,
                                  .line = (uint32_t)i + 1};
        dag_task_t id;
        FUZZ_CHECK(dag_add_task(dag, &s, &id) == 0 && id == i, "dag_add_task %s", names[i]);
    }
    struct pmc_error err;
    FUZZ_CHECK(dag_finish(dag, &err) == 0, "dag_finish: %s", err.text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    log_set_level(PMC_LOG_ERROR); /* the torn-tail warnings are expected */
    build_dag();
    memfd = memfd_create("rescue", MFD_CLOEXEC);
    FUZZ_CHECK(memfd >= 0, "memfd_create: errno %d", errno);
    snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
    return 0;
}

/* ---- the model ----------------------------------------------------------- */

enum kind { SKIP, DONE, BAD };

static bool model_space(uint8_t c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* Classify line [p, p + n); for DONE, *name and *len get the name. */
static enum kind model_classify(const uint8_t *p, size_t n, const uint8_t **name, size_t *len)
{
    size_t i = 0, start[2], end[2];
    int words = 0;
    while (i < n) {
        while (i < n && model_space(p[i]))
            i++;
        if (i == n)
            break;
        if (words == 0 && p[i] == '#')
            return SKIP;
        if (words == 2)
            return BAD; /* a third word */
        start[words] = i;
        while (i < n && !model_space(p[i]))
            i++;
        end[words++] = i;
    }
    if (words == 0)
        return SKIP;
    if (words != 2 || end[0] - start[0] != 4 || memcmp(p + start[0], "DONE", 4) != 0)
        return BAD;
    for (size_t k = start[1]; k < end[1]; k++)
        if (p[k] < 0x20 || p[k] == 0x7f)
            return BAD;
    *name = p + start[1];
    *len = end[1] - start[1];
    return DONE;
}

static int model_known(const uint8_t *name, size_t len)
{
    for (size_t i = 0; i < NNAMES; i++)
        if (strlen(names[i]) == len && memcmp(names[i], name, len) == 0)
            return (int)i;
    return -1;
}

struct model {
    int rc;
    uint8_t done[NNAMES];
    uint32_t ntorn;
};

/* A bad line that no crash of the writer leaves (see the contract above). */
static bool model_foreign(const uint8_t *p, size_t n)
{
    if (memchr(p, 0, n))
        return false;
    size_t i = 0;
    while (i < n && model_space(p[i]))
        i++;
    size_t k = n - i < 4 ? n - i : 4;
    return memcmp(p + i, "DONE", k) != 0;
}

static void model_run(const uint8_t *data, size_t size, struct model *m)
{
    memset(m, 0, sizeof *m);
    bool pmc = size > 0 && data[0] == '\n', pending_bad = false, foreign = false, any = false;
    size_t pos = 0;
    while (pos < size) {
        const uint8_t *nl = memchr(data + pos, '\n', size - pos);
        size_t n = nl ? (size_t)(nl - (data + pos)) : size - pos;
        const uint8_t *name = NULL;
        size_t len = 0;
        enum kind k = model_classify(data + pos, n, &name, &len);
        int t = k == DONE ? model_known(name, len) : -1;
        foreign |= k == BAD && model_foreign(data + pos, n);
        if (nl && k == BAD)
            pending_bad = true;
        if (nl && k == DONE) {
            if (pending_bad || t < 0)
                goto error;
            m->done[t] = 1;
            any = true;
        }
        if (!nl && k != SKIP) {
            if (pmc && k == DONE && t >= 0) {
                if (pending_bad)
                    goto error;
                m->done[t] = 1;
                any = true;
            } else {
                m->ntorn += 1 + pending_bad; /* the garbage before it, then the torn line */
                pending_bad = false;
            }
        }
        pos += n + (nl != NULL);
    }
    m->ntorn += pending_bad;
    if (!any && foreign)
        goto error;
    return;
error:
    memset(m, 0, sizeof *m);
    m->rc = -1;
}

/* ---- the target ---------------------------------------------------------- */

static void write_file(const uint8_t *data, size_t size)
{
    FUZZ_CHECK(ftruncate(memfd, 0) == 0, "ftruncate: errno %d", errno);
    size_t off = 0;
    while (off < size) {
        ssize_t n = pwrite(memfd, data + off, size - off, (off_t)off);
        FUZZ_CHECK(n > 0, "pwrite: errno %d", errno);
        off += (size_t)n;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    write_file(data, size);
    uint8_t done[NNAMES];
    memset(done, 0, sizeof done);
    uint32_t ndone = 12345, ntorn = 12345;
    struct pmc_error err = {{0}};
    int rc = rescue_read(path, dag, done, NULL, &ndone, &ntorn, &err);

    struct model m;
    model_run(data, size, &m);
    FUZZ_CHECK(rc == m.rc, "rescue_read returned %d, the model %d (error: %s)", rc, m.rc, err.text);
    uint32_t want = 0;
    for (size_t i = 0; i < NNAMES; i++) {
        FUZZ_CHECK(done[i] == m.done[i], "task %s: done %u, the model %u", names[i], done[i],
                   m.done[i]);
        want += m.done[i];
    }
    FUZZ_CHECK(ndone == want, "ndone %u, the model %u", ndone, want);
    if (rc == 0)
        FUZZ_CHECK(ntorn == m.ntorn, "ntorn %u, the model %u", ntorn, m.ntorn);
    else
        FUZZ_CHECK(err.text[0] != '\0' && strstr(err.text, path) == err.text,
                   "error text '%s' does not start with the path", err.text);
    return 0;
}
