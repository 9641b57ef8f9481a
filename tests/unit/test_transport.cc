// test_transport.cc - engine/transport.h's transport_init() around
// MPI_Init_thread, which this test replaces (a definition in the
// executable wins over libmpich's for the call in transport.c): MPI starts
// with HWLOC_COMPONENTS excluding hwloc's GPU components when the user set
// none, with the user's value (even "") otherwise, and the variable is as
// it was afterwards, also when MPI fails or lacks MPI_THREAD_MULTIPLE.
#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdlib>
#include <optional>
#include <string>

// transport.h's function transport_place() and its struct of that name are
// one C idiom that C++'s -Wshadow reports
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#include "engine/transport.h"
#pragma GCC diagnostic pop
#include "testutil.h"

namespace
{

std::optional<std::string> seen_by_mpi; // HWLOC_COMPONENTS inside MPI_Init_thread
int mpi_answer = MPI_SUCCESS;
int mpi_provides = MPI_THREAD_MULTIPLE;

std::optional<std::string> hwloc_components()
{
    const char *v = getenv("HWLOC_COMPONENTS");
    return v ? std::optional<std::string>(v) : std::nullopt;
}

} // namespace

extern "C" int MPI_Init_thread(int *, char ***, int, int *provided)
{
    seen_by_mpi = hwloc_components();
    *provided = mpi_provides;
    return mpi_answer;
}

namespace
{

class TransportInitTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        seen_by_mpi.reset();
        mpi_answer = MPI_SUCCESS;
        mpi_provides = MPI_THREAD_MULTIPLE;
    }
    int init()
    {
        int argc = 1;
        char name[] = "test_transport", *args[] = {name, nullptr}, **argv = args;
        pmc_error err{};
        return transport_init(&argc, &argv, &err);
    }
    testutil::SavedEnv env_{"HWLOC_COMPONENTS"};
};

TEST_F(TransportInitTest, MpiStartsWithoutHwlocsGpuComponents)
{
    EXPECT_EQ(init(), 0);
    ASSERT_TRUE(seen_by_mpi.has_value());
    for (const char *c : {"-opencl", "-cuda", "-nvml", "-rsmi", "-levelzero", "-gl"})
        EXPECT_NE(("," + *seen_by_mpi + ",").find(std::string(",") + c + ","), std::string::npos)
            << c << " not in " << *seen_by_mpi;
    EXPECT_FALSE(hwloc_components().has_value()) << *hwloc_components();
}

TEST_F(TransportInitTest, TheUsersValueWinsEvenEmpty)
{
    for (const char *v : {"-pci", ""}) {
        setenv("HWLOC_COMPONENTS", v, 1);
        EXPECT_EQ(init(), 0);
        EXPECT_EQ(seen_by_mpi, std::optional<std::string>(v));
        EXPECT_EQ(hwloc_components(), std::optional<std::string>(v));
    }
}

TEST_F(TransportInitTest, UnsetAgainWhenMpiFails)
{
    mpi_answer = MPI_ERR_OTHER;
    EXPECT_EQ(init(), -1);
    EXPECT_TRUE(seen_by_mpi.has_value());
    EXPECT_FALSE(hwloc_components().has_value());
    mpi_answer = MPI_SUCCESS;
    mpi_provides = MPI_THREAD_SERIALIZED;
    EXPECT_EQ(init(), 1);
    EXPECT_FALSE(hwloc_components().has_value());
}

} // namespace
