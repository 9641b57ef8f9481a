/* pathset.c - the files a run reads and writes, compared by what they
 * resolve to; see pathset.h. */
#include "io/pathset.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/grow.h"

/* What a slot of the table is keyed by. */
enum key_kind {
    KEY_NAME,      /* the resolved name */
    KEY_INODE,     /* device and inode */
    KEY_BASE,      /* the last component as given */
    KEY_BASE_REAL, /* the last component of the resolved name */
};

struct slot {
    uint64_t hash;
    uint32_t entry; /* index + 1; 0: empty */
    uint32_t kind;  /* enum key_kind */
};

struct pathset {
    struct pathset_file *files;
    size_t n, cap;
    struct slot *slots; /* open addressing, linear probing; a power of two */
    size_t nslots, used;
    char *dir_given, *dir_real; /* the last directory resolved, as a cache */
};

/* ---- resolving ------------------------------------------------------------ */

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static uint64_t hash_inode(dev_t dev, ino_t ino)
{
    uint64_t h = (uint64_t)dev * 0x9e3779b97f4a7c15ull ^ (uint64_t)ino;
    return (h ^ (h >> 29)) * 0xbf58476d1ce4e5b9ull;
}

/* The last component of path (after its last '/'). */
static const char *last_component(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static char *concat3(const char *a, size_t na, const char *b, const char *c)
{
    size_t nb = strlen(b), nc = strlen(c);
    char *p = malloc(na + nb + nc + 1);
    if (!p)
        return NULL;
    memcpy(p, a, na);
    memcpy(p + na, b, nb);
    memcpy(p + na + nb, c, nc + 1);
    return p;
}

/* path with every symbolic link of its last component followed (malloc'ed;
 * what it names may not exist).  NULL with ENOMEM. */
static char *follow_links(const char *path)
{
    char *cur = strdup(path);
    for (int i = 0; cur && i < PATHSET_MAX_LINKS; i++) {
        struct stat st;
        char target[PATH_MAX];
        if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
            break;
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n <= 0)
            break;
        target[n] = '\0';
        size_t dir = target[0] == '/' ? 0 : (size_t)(last_component(cur) - cur);
        char *next = concat3(cur, dir, target, "");
        free(cur);
        cur = next;
    }
    return cur;
}

/* Append the components of rest to the absolute name in out (PATH_MAX
 * bytes) as the kernel would walk them once the missing directories exist
 * (fdcache creates them): "." and empty ones skipped, ".." drops one. */
static void append_lexically(char *out, const char *rest)
{
    while (*rest) {
        size_t n = strcspn(rest, "/");
        if (n == 2 && rest[0] == '.' && rest[1] == '.') {
            char *slash = strrchr(out, '/');
            slash[slash == out] = '\0'; /* "/a" -> "/", "/" stays */
        } else if (n && !(n == 1 && rest[0] == '.')) {
            size_t len = strlen(out);
            if (len + n + 2 <= PATH_MAX)
                snprintf(out + len, PATH_MAX - len, "%s%.*s", len > 1 ? "/" : "", (int)n, rest);
        }
        rest += n + (rest[n] == '/');
    }
}

/* The absolute name of directory dir: its realpath(3), or, for a
 * directory not there yet, the realpath of its longest existing prefix
 * followed by the rest, walked lexically.  Malloc'ed; NULL with ENOMEM. */
static char *real_dir(const char *dir)
{
    char *r = realpath(dir, NULL);
    if (r || errno == ENOMEM)
        return r;
    char abs[PATH_MAX], cwd[PATH_MAX], out[PATH_MAX];
    if (dir[0] == '/' || !getcwd(cwd, sizeof cwd))
        cwd[0] = '\0';
    if ((size_t)snprintf(abs, sizeof abs, "%s%s%s", cwd, cwd[0] ? "/" : "", dir) >= sizeof abs)
        return strdup(dir); /* beyond PATH_MAX: as written */
    size_t cut = strlen(abs);
    out[0] = '\0';
    while (cut > 0 && !out[0]) { /* the longest prefix that resolves */
        while (cut > 0 && abs[cut - 1] != '/')
            cut--;
        if (cut == 0)
            break;
        char keep = abs[cut - 1 ? cut - 1 : cut];
        abs[cut - 1 ? cut - 1 : cut] = '\0';
        if (!realpath(abs, out))
            out[0] = '\0';
        abs[cut - 1 ? cut - 1 : cut] = keep;
        if (!out[0])
            cut--;
    }
    if (!out[0])
        snprintf(out, sizeof out, "/");
    append_lexically(out, abs + cut);
    return strdup(out);
}

/* real_dir() through s's one-entry cache (s may be NULL). */
static char *real_dir_cached(struct pathset *s, const char *dir)
{
    if (s && s->dir_given && strcmp(s->dir_given, dir) == 0)
        return strdup(s->dir_real);
    char *r = real_dir(dir);
    if (s && r) {
        char *given = strdup(dir), *real = strdup(r);
        if (given && real) {
            free(s->dir_given);
            free(s->dir_real);
            s->dir_given = given;
            s->dir_real = real;
        } else {
            free(given);
            free(real);
        }
    }
    return r;
}

static int resolve(struct pathset *s, const char *path, char **out, size_t *dir_len)
{
    char *f = follow_links(path);
    if (!f)
        return -1;
    const char *base = last_component(f);
    bool names_dir = !*base || !strcmp(base, ".") || !strcmp(base, "..");
    char *dir;
    if (names_dir)
        dir = strdup(f);
    else if (base == f)
        dir = strdup(".");
    else if (base - f == 1)
        dir = strdup("/");
    else
        dir = strndup(f, (size_t)(base - f - 1));
    char *real = dir ? real_dir_cached(s, dir) : NULL;
    free(dir);
    if (!real) {
        free(f);
        return -1;
    }
    size_t n = strlen(real);
    bool slash = n > 0 && real[n - 1] == '/';
    *out = names_dir ? strdup(real) : concat3(real, n, slash ? "" : "/", base);
    *dir_len = n;
    free(real);
    free(f);
    return *out ? 0 : -1;
}

int pathset_resolve(const char *path, char **out, size_t *dir_len)
{
    return resolve(NULL, path, out, dir_len);
}

/* ---- the table ------------------------------------------------------------ */

static const char *key_text(const struct pathset_file *f, enum key_kind kind)
{
    switch (kind) {
    case KEY_NAME:
        return f->resolved;
    case KEY_BASE:
        return last_component(f->path);
    case KEY_BASE_REAL:
        return last_component(f->resolved);
    default:
        return NULL;
    }
}

static uint64_t key_hash(const struct pathset_file *f, enum key_kind kind)
{
    const char *t = key_text(f, kind);
    uint64_t h = t ? hash_bytes(t, strlen(t)) : hash_inode(f->dev, f->ino);
    return h ^ (uint64_t)kind;
}

static bool key_equal(const struct pathset_file *a, const struct pathset_file *b,
                      enum key_kind kind)
{
    if (kind == KEY_INODE)
        return a->dev == b->dev && a->ino == b->ino;
    if (kind == KEY_NAME)
        return strcmp(a->resolved, b->resolved) == 0;
    /* a last component matches either of the other's (pathset_check_name()) */
    const char *t = key_text(a, kind);
    return !strcmp(t, last_component(b->path)) || !strcmp(t, last_component(b->resolved));
}

static void slot_put(struct slot *slots, size_t nslots, uint64_t hash, uint32_t entry,
                     uint32_t kind)
{
    size_t i = hash & (nslots - 1);
    while (slots[i].entry)
        i = (i + 1) & (nslots - 1);
    slots[i] = (struct slot){hash, entry, kind};
}

/* Room for `more` keys more at a load of at most one half. */
static int table_reserve(struct pathset *s, size_t more)
{
    if ((s->used + more) * 2 <= s->nslots)
        return 0;
    size_t n = s->nslots ? s->nslots : 64;
    while ((s->used + more) * 2 > n)
        n *= 2;
    struct slot *slots = calloc(n, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i].entry)
            slot_put(slots, n, s->slots[i].hash, s->slots[i].entry, s->slots[i].kind);
    free(s->slots);
    s->slots = slots;
    s->nslots = n;
    return 0;
}

/* The first file of the set that f aliases by key kind, with another share
 * tag (or tag 0); NULL when none. */
static const struct pathset_file *table_find(const struct pathset *s, const struct pathset_file *f,
                                             enum key_kind kind)
{
    if (!s->nslots)
        return NULL;
    uint64_t h = key_hash(f, kind);
    const struct pathset_file *best = NULL;
    for (size_t i = h & (s->nslots - 1); s->slots[i].entry; i = (i + 1) & (s->nslots - 1)) {
        const struct slot *sl = &s->slots[i];
        const struct pathset_file *g = &s->files[sl->entry - 1];
        if (sl->hash != h || sl->kind != (uint32_t)kind || !key_equal(f, g, kind))
            continue;
        if (kind == KEY_BASE || kind == KEY_BASE_REAL || !f->share || f->share != g->share)
            if (!best || g < best)
                best = g; /* the earliest, whatever the probe order */
    }
    return best;
}

/* ---- the set -------------------------------------------------------------- */

struct pathset *pathset_create(void)
{
    struct pathset *s = calloc(1, sizeof *s);
    if (!s)
        errno = ENOMEM;
    return s;
}

static void file_free(struct pathset_file *f)
{
    free((char *)f->path);
    free((char *)f->label);
    free((char *)f->resolved);
}

void pathset_destroy(struct pathset *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        file_free(&s->files[i]);
    free(s->files);
    free(s->slots);
    free(s->dir_given);
    free(s->dir_real);
    free(s);
}

/* Resolve path into *f (strings owned by f).  -1 with ENOMEM. */
static int file_make(struct pathset *s, const char *path, const char *label, unsigned share,
                     struct pathset_file *f)
{
    memset(f, 0, sizeof *f);
    char *resolved = NULL;
    if (resolve(s, path, &resolved, &f->dir_len) < 0)
        return -1;
    f->resolved = resolved;
    f->path = strdup(path);
    f->label = strdup(label);
    f->share = share;
    struct stat st;
    if (stat(path, &st) == 0) {
        f->exists = true;
        f->special = !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
        f->dev = st.st_dev;
        f->ino = st.st_ino;
    }
    if (f->path && f->label)
        return 0;
    file_free(f);
    return -1;
}

/* The earlier file f names, by inode or by resolved name; NULL if none. */
static const struct pathset_file *alias_of(const struct pathset *s, const struct pathset_file *f)
{
    const struct pathset_file *a = f->exists ? table_find(s, f, KEY_INODE) : NULL;
    const struct pathset_file *b = table_find(s, f, KEY_NAME);
    return a && (!b || a < b) ? a : b;
}

static int alias_error(const struct pathset_file *f, const struct pathset_file *g,
                       struct pmc_error *err)
{
    return pmc_errorf(err, "%s %s and %s name the same file %s", f->label, f->path, g->label,
                      g->path);
}

int pathset_add(struct pathset *s, const char *path, const char *label, unsigned share,
                struct pmc_error *err)
{
    struct pathset_file f;
    if (pmc_grow((void **)&s->files, &s->cap, s->n + 1, sizeof *s->files) < 0 ||
        table_reserve(s, 4) < 0 || file_make(s, path, label, share, &f) < 0) {
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory");
    }
    const struct pathset_file *g = f.special ? NULL : alias_of(s, &f);
    if (g) {
        alias_error(&f, g, err);
        file_free(&f);
        return -1;
    }
    s->files[s->n++] = f;
    uint32_t e = (uint32_t)s->n;
    const struct pathset_file *p = &s->files[e - 1];
    for (uint32_t k = KEY_NAME; k <= KEY_BASE_REAL && !p->special; k++)
        if (k != KEY_INODE || p->exists) {
            slot_put(s->slots, s->nslots, key_hash(p, k), e, k);
            s->used++;
        }
    return 0;
}

int pathset_check_name(struct pathset *s, const char *path, const char *label,
                       struct pmc_error *err)
{
    /* the cheap test first: the last component as written, no system call */
    struct pathset_file probe = {.path = path, .resolved = path};
    if (!table_find(s, &probe, KEY_BASE) && !table_find(s, &probe, KEY_BASE_REAL))
        return 0;
    struct pathset_file f;
    if (file_make(s, path, label, 0, &f) < 0) {
        errno = ENOMEM;
        return pmc_errorf(err, "out of memory");
    }
    const struct pathset_file *g = f.special ? NULL : alias_of(s, &f);
    int rc = g ? alias_error(&f, g, err) : 0;
    file_free(&f);
    return rc;
}

size_t pathset_count(const struct pathset *s)
{
    return s->n;
}

const struct pathset_file *pathset_at(const struct pathset *s, size_t i)
{
    return i < s->n ? &s->files[i] : NULL;
}
