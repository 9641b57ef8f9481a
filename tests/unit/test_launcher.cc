// test_launcher.cc - unit tests of engine/launcher.h's pool size without
// --launch-threads (launcher_default_threads): none below 8 CPUs, one per
// 8 CPUs above, capped at LAUNCHER_MAX_THREADS.  The pool itself is run by
// the integration tests (test_workloads.py: launchers, and every test with
// 8 or more CPUs per host).
#include <gtest/gtest.h>

#include "engine/launcher.h"

namespace
{

TEST(LauncherDefault, NoPoolBelowEightCpus)
{
    for (uint32_t cpus : {0u, 1u, 2u, 4u, 7u})
        EXPECT_EQ(launcher_default_threads(cpus), 0u) << cpus << " CPUs";
}

TEST(LauncherDefault, OnePerEightCpus)
{
    EXPECT_EQ(launcher_default_threads(8), 1u);
    EXPECT_EQ(launcher_default_threads(15), 1u);
    EXPECT_EQ(launcher_default_threads(16), 2u);
    EXPECT_EQ(launcher_default_threads(64), 8u);
    EXPECT_EQ(launcher_default_threads(128), 16u);
    EXPECT_EQ(launcher_default_threads(192), 24u);
}

TEST(LauncherDefault, CappedAtTheMostThePoolTakes)
{
    EXPECT_EQ(launcher_default_threads(LAUNCHER_MAX_THREADS * LAUNCHER_CPUS_PER_THREAD),
              (uint32_t)LAUNCHER_MAX_THREADS);
    EXPECT_EQ(launcher_default_threads(UINT32_MAX), (uint32_t)LAUNCHER_MAX_THREADS);
}

} // namespace
