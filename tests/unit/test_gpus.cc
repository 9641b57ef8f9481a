// test_gpus.cc - engine/gpus.h: the ids a host's tasks see: --host-gpus
// alone ("0".."N-1"), an inherited visibility list (its words, in order),
// the override of a list (its first N, or numbers when it is shorter),
// gpus_format()'s lists and lengths, and the PCI class check that spares a
// host without a GPU-class device hwloc's I/O discovery.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/gpus.h"

namespace
{

const char *const kVars[] = {"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                             "ZE_AFFINITY_MASK"};

class GpusTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        for (const char *v : kVars) {
            const char *old = getenv(v);
            saved_.push_back(old ? old : "");
            had_.push_back(old != nullptr);
            unsetenv(v);
        }
    }
    void TearDown() override
    {
        gpus_free(&g_);
        for (size_t i = 0; i < sizeof kVars / sizeof kVars[0]; i++)
            had_[i] ? setenv(kVars[i], saved_[i].c_str(), 1) : unsetenv(kVars[i]);
    }
    std::vector<std::string> ids(bool override, uint32_t n)
    {
        gpus_free(&g_);
        pmc_error err{};
        EXPECT_EQ(gpus_discover(override, n, &g_, &err), 0) << err.text;
        return std::vector<std::string>(g_.id, g_.id + g_.n);
    }
    gpu_ids g_{};
    std::vector<std::string> saved_;
    std::vector<bool> had_;
};

TEST_F(GpusTest, OverrideNumbersThem)
{
    EXPECT_EQ(ids(true, 3), (std::vector<std::string>{"0", "1", "2"}));
    EXPECT_STREQ(g_.source, "--host-gpus");
    EXPECT_TRUE(ids(true, 0).empty()) << "--host-gpus 0: none";
}

TEST_F(GpusTest, InheritedListGivesTheIds)
{
    setenv("CUDA_VISIBLE_DEVICES", "2,3,GPU-abc", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"2", "3", "GPU-abc"}));
    EXPECT_STREQ(g_.source, "CUDA_VISIBLE_DEVICES");
    EXPECT_EQ(ids(true, 2), (std::vector<std::string>{"2", "3"})) << "the first N of the list";
    EXPECT_EQ(ids(true, 4), (std::vector<std::string>{"0", "1", "2", "3"}))
        << "a list shorter than N: numbers";
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("ROCR_VISIBLE_DEVICES", "1,,5", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"1", "5"})) << "empty words dropped";
}

TEST_F(GpusTest, FormatListsAndMeasures)
{
    ids(true, 4);
    uint32_t idx[] = {3, 0, 2};
    char buf[16];
    EXPECT_EQ(gpus_format(&g_, idx, 3, buf, sizeof buf), 5u);
    EXPECT_STREQ(buf, "3,0,2");
    EXPECT_EQ(gpus_format(&g_, idx, 3, nullptr, 0), 5u) << "the length alone";
    char small[4];
    EXPECT_EQ(gpus_format(&g_, idx, 3, small, sizeof small), 5u) << "cut, like snprintf";
    EXPECT_STREQ(small, "3,0");
    EXPECT_EQ(gpus_format(&g_, idx, 0, buf, sizeof buf), 0u);
    EXPECT_STREQ(buf, "");
}

// A fake /sys/bus/pci/devices: one directory per device with its "class".
class PciDirTest : public ::testing::Test
{
  protected:
    void SetUp() override
    {
        const char *tmp = getenv("TMPDIR");
        char tmpl[4096];
        snprintf(tmpl, sizeof tmpl, "%s/pmc-pci-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override
    {
        std::filesystem::remove_all(dir_);
    }
    void device(const std::string &name, const std::string &cls)
    {
        std::filesystem::create_directory(dir_ + "/" + name);
        std::ofstream(dir_ + "/" + name + "/class") << cls << "\n";
    }
    std::string dir_;
};

TEST_F(PciDirTest, NoGpuClassMeansNoGpu)
{
    device("0000:00:00.0", "0x060000"); // host bridge
    device("0000:00:01.0", "0x020000"); // Ethernet
    device("0000:00:02.0", "0x010802"); // NVMe
    EXPECT_EQ(gpus__pci_may_have_gpu(dir_.c_str()), 0);
}

TEST_F(PciDirTest, DisplayAnd3dControllersAndAcceleratorsAreGpus)
{
    for (const char *cls : {"0x030000", "0x030200", "0x038000", "0x120000"}) {
        std::filesystem::remove_all(dir_ + "/0000:41:00.0");
        device("0000:00:01.0", "0x020000");
        device("0000:41:00.0", cls);
        EXPECT_EQ(gpus__pci_may_have_gpu(dir_.c_str()), 1) << cls;
    }
}

TEST_F(PciDirTest, UnreadableListMeansAsk)
{
    EXPECT_EQ(gpus__pci_may_have_gpu((dir_ + "/missing").c_str()), 1);
}

TEST_F(PciDirTest, EmptyListMeansAsk)
{
    EXPECT_EQ(gpus__pci_may_have_gpu(dir_.c_str()), 1);
}

TEST_F(PciDirTest, UnreadableClassMeansAsk)
{
    device("0000:00:01.0", "0x020000");
    std::filesystem::create_directory(dir_ + "/0000:00:02.0"); // no "class" file
    EXPECT_EQ(gpus__pci_may_have_gpu(dir_.c_str()), 1);
}

} // namespace
