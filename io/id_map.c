/* id_map.c - see id_map.h. */
#include "io/id_map.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ID_MAP_EMPTY UINT64_MAX

static inline size_t home(const struct id_map *m, uint32_t key)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 32) & (m->cap - 1);
}

static inline uint32_t key_of(uint64_t s)
{
    return (uint32_t)(s >> 32);
}

/* The slot holding key, or the free slot where it would go. */
static size_t find(const struct id_map *m, uint32_t key)
{
    size_t i = home(m, key);
    while (m->slot[i] != ID_MAP_EMPTY && key_of(m->slot[i]) != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow(struct id_map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *slot = malloc(sizeof *slot * cap);
    if (!slot) {
        errno = ENOMEM;
        return -1;
    }
    memset(slot, 0xff, sizeof *slot * cap);
    struct id_map bigger = {.slot = slot, .cap = cap, .n = m->n};
    for (size_t i = 0; i < m->cap; i++)
        if (m->slot[i] != ID_MAP_EMPTY)
            slot[find(&bigger, key_of(m->slot[i]))] = m->slot[i];
    free(m->slot);
    *m = bigger;
    return 0;
}

int id_map_put(struct id_map *m, uint32_t key, uint32_t value)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t i = find(m, key);
    m->n += m->slot[i] == ID_MAP_EMPTY;
    m->slot[i] = (uint64_t)key << 32 | value;
    return 0;
}

uint32_t id_map_get(const struct id_map *m, uint32_t key)
{
    if (m->n == 0)
        return ID_MAP_NONE;
    uint64_t s = m->slot[find(m, key)];
    return s == ID_MAP_EMPTY ? ID_MAP_NONE : (uint32_t)s;
}

bool id_map_remove(struct id_map *m, uint32_t key)
{
    if (m->n == 0)
        return false;
    size_t i = find(m, key), mask = m->cap - 1;
    if (m->slot[i] == ID_MAP_EMPTY)
        return false;
    /* shift back the entries of the run after i that may move to i */
    for (size_t j = (i + 1) & mask; m->slot[j] != ID_MAP_EMPTY; j = (j + 1) & mask) {
        size_t h = home(m, key_of(m->slot[j]));
        /* j's entry stays when its home lies cyclically in (i, j] */
        if (i <= j ? (i < h && h <= j) : (i < h || h <= j))
            continue;
        m->slot[i] = m->slot[j];
        i = j;
    }
    m->slot[i] = ID_MAP_EMPTY;
    m->n--;
    return true;
}

void id_map_free(struct id_map *m)
{
    free(m->slot);
    *m = (struct id_map){0};
}
