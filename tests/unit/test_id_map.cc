// test_id_map.cc - io/id_map.h against std::unordered_map.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

extern "C" {
#include "io/id_map.h"
}

TEST(IdMap, EmptyMapHasNothing)
{
    id_map m{};
    EXPECT_EQ(ID_MAP_NONE, id_map_get(&m, 7));
    EXPECT_FALSE(id_map_remove(&m, 7));
    id_map_free(&m);
}

TEST(IdMap, PutReplacesAndRemoveForgets)
{
    id_map m{};
    ASSERT_EQ(0, id_map_put(&m, 5, 50));
    ASSERT_EQ(0, id_map_put(&m, 5, 51));
    EXPECT_EQ(1u, m.n);
    EXPECT_EQ(51u, id_map_get(&m, 5));
    EXPECT_TRUE(id_map_remove(&m, 5));
    EXPECT_EQ(ID_MAP_NONE, id_map_get(&m, 5));
    EXPECT_EQ(0u, m.n);
    id_map_free(&m);
}

// Random puts and removes over a small key range (long probe runs, removals
// in the middle of runs, wrap-around) agree with a reference map.
TEST(IdMap, AgreesWithAReferenceUnderChurn)
{
    id_map m{};
    std::unordered_map<uint32_t, uint32_t> ref;
    std::mt19937 rng(42);
    for (int step = 0; step < 200000; step++) {
        uint32_t key = rng() % 3000 + (rng() % 2 ? 0u : 0xfffff000u);
        if (rng() % 3) {
            ASSERT_EQ(0, id_map_put(&m, key, (uint32_t)step));
            ref[key] = (uint32_t)step;
        } else
            ASSERT_EQ(ref.erase(key) == 1, id_map_remove(&m, key));
        ASSERT_EQ(ref.size(), m.n);
    }
    for (auto &kv : ref)
        ASSERT_EQ(kv.second, id_map_get(&m, kv.first));
    for (uint32_t k = 0; k < 3000; k++) {
        if (!ref.count(k))
            ASSERT_EQ(ID_MAP_NONE, id_map_get(&m, k));
    }
    id_map_free(&m);
}
