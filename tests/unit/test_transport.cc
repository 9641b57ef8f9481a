// test_transport.cc - engine/transport/transport.h's transport_init() around
// MPI_Init_thread and MPI_Finalize, which this test replaces (a definition
// in the executable wins over libmpich's for the call in transport.c): MPI
// starts with HWLOC_COMPONENTS excluding hwloc's GPU components when the
// user set none, with the user's value (even "") otherwise, and the
// variable is as it was afterwards, also when MPI fails or lacks
// MPI_THREAD_MULTIPLE; which environments are an MPI launcher's
// (transport_launched()), and a process that none started: MPI is neither
// initialised nor finalised, and placement and the collectives answer for
// one rank.
#include <gtest/gtest.h>

#include <mpi.h>

#include <cstdlib>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

// transport.h's function transport_place() and its struct of that name are
// one C idiom that C++'s -Wshadow reports
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
#include "engine/transport/transport.h"
#pragma GCC diagnostic pop
#include "testutil.h"

namespace
{

std::optional<std::string> seen_by_mpi; // HWLOC_COMPONENTS inside MPI_Init_thread
int mpi_inits, mpi_finalizes;           // calls of the two
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
    mpi_inits++;
    seen_by_mpi = hwloc_components();
    *provided = mpi_provides;
    return mpi_answer;
}

extern "C" int MPI_Finalize(void)
{
    mpi_finalizes++;
    return MPI_SUCCESS;
}

namespace
{

class TransportInitTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        seen_by_mpi.reset();
        mpi_inits = mpi_finalizes = 0;
        mpi_answer = MPI_SUCCESS;
        mpi_provides = MPI_THREAD_MULTIPLE;
        setenv("PMC_MPI", "1", 1); // as if a launcher had started us
    }
    int init()
    {
        int argc = 1;
        char name[] = "test_transport", *args[] = {name, nullptr}, **argv = args;
        pmc_error err{};
        return transport_init(&argc, &argv, false, &err);
    }
    testutil::SavedEnv env_{"HWLOC_COMPONENTS", "PMC_MPI"};
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

bool launched(std::initializer_list<const char *> vars)
{
    std::vector<char *> env;
    for (const char *v : vars)
        env.push_back(const_cast<char *>(v));
    env.push_back(nullptr);
    return transport_launched(env.data());
}

TEST(TransportLaunched, EachLaunchersVariableSaysMpi)
{
    for (const char *v : {"PMI_RANK=0", "PMI_SIZE=4", "PMI_FD=5", "PMIX_RANK=1", "PMIX_NAMESPACE=x",
                          "OMPI_COMM_WORLD_SIZE=2", "MPI_LOCALNRANKS=2", "PALS_RANKID=0",
                          "MPIRUN_RANK=0", "MV2_COMM_WORLD_RANK=0", "JSM_NAMESPACE_SIZE=2",
                          "FLUX_TASK_RANK=0", "SLURM_PROCID=0", "PMC_MPI=1", "PMC_MPI="})
        EXPECT_TRUE(launched({"HOME=/root", v, "PATH=/bin"})) << v;
}

TEST(TransportLaunched, AShellsEnvironmentDoesNot)
{
    EXPECT_FALSE(launched({}));
    EXPECT_FALSE(transport_launched(nullptr));
    EXPECT_FALSE(launched({"HOME=/root", "PATH=/bin:/usr/bin", "SLURM_JOB_ID=7", "I_MPI_DEBUG=5",
                           "MPICH_ASYNC_PROGRESS=1", "XPMI_RANK=0", "PMI=1", "MPI_LOCALNRANKSX=1",
                           "FLUX_TASK_RANKS=0", "SLURM_PROCIDS=0", "PMC_MPIX=1", "PMC_DEBUG=1"}))
        << "prefixes and whole names only";
}

TEST_F(TransportInitTest, WithoutALauncherMpiIsNeverStarted)
{
    char path[] = "PATH=/bin", home[] = "HOME=/root";
    char *shell[] = {path, home, nullptr};
    char **saved = environ;
    environ = shell;
    int rc = init();
    environ = saved;
    EXPECT_EQ(rc, 0);
    EXPECT_EQ(mpi_inits, 0);
    EXPECT_TRUE(transport_without_mpi());
    struct transport_place p {
    };
    ASSERT_EQ(transport_place("node-a", &p), 0);
    EXPECT_EQ(p.rank, 0);
    EXPECT_EQ(p.size, 1);
    EXPECT_EQ(p.host_rank, 0);
    EXPECT_EQ(p.host_ranks, 1);
    ASSERT_NE(p.leaders, nullptr);
    EXPECT_EQ(p.leaders[0], 0);
    free(p.leaders);
    EXPECT_EQ(transport_bcast_int(7), 7);
    EXPECT_EQ(transport_max_int(-3), -3);
    transport_finalize();
    EXPECT_EQ(mpi_finalizes, 0);
    // and with a launcher's variable, MPI is started and ended as before
    EXPECT_EQ(init(), 0);
    EXPECT_EQ(mpi_inits, 1);
    EXPECT_FALSE(transport_without_mpi());
    transport_finalize();
    EXPECT_EQ(mpi_finalizes, 1);
}

} // namespace
