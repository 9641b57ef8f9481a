/* id_map.h - a map from 32-bit ids to 32-bit values: open addressing with
 * linear probing and backward-shift deletion (D. E. Knuth, TAOCP vol. 3,
 * 6.4, Algorithm R), for the few ids of a huge id space that are live at
 * once (the engine's ready and running array instances).
 *
 * Memory: 8 bytes per slot; the table doubles past 1/2 full and never
 * shrinks.  Keys are any id but UINT32_MAX.  Thread-safety: none.
 */
#ifndef PMC_ID_MAP_H
#define PMC_ID_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ID_MAP_NONE UINT32_MAX /* no such key (id_map_get()) */

struct id_map {
    uint64_t *slot; /* key << 32 | value; ID_MAP_EMPTY when free */
    size_t cap;     /* slots, a power of two (0 before the first put) */
    size_t n;       /* keys held */
};

/* Map key to value (replacing its value).  0, or -1 with ENOMEM (the map
 * unchanged).  Amortised O(1). */
int id_map_put(struct id_map *m, uint32_t key, uint32_t value);

/* key's value, or ID_MAP_NONE.  O(1) expected. */
uint32_t id_map_get(const struct id_map *m, uint32_t key);

/* Remove key; false when it was not there.  O(1) expected. */
bool id_map_remove(struct id_map *m, uint32_t key);

/* Free the table; the map is empty again. */
void id_map_free(struct id_map *m);

#ifdef __cplusplus
}
#endif
#endif
