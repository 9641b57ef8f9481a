// test_gpus.cc - engine/host/gpus.h: the ids a host's tasks see: --host-gpus
// alone ("0".."N-1"), an inherited visibility list (its words, in order),
// the override of a list (its first N, or numbers when it is shorter),
// gpus_format()'s lists and lengths, the PCI class check that spares a
// host without a GPU-class device hwloc's I/O discovery, and what hwloc
// finds (an XML topology of two packages with a GPU each, through
// HWLOC_XMLFILE): the count and each id's CPUs, found or inherited, by
// CUDA's numbers, or by NVML's and ROCm SMI's numbers and UUIDs.
#include <gtest/gtest.h>

#include <sched.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/host/gpus.h"
#include "testutil.h"

namespace
{

class GpusTest : public ::testing::Test
{
  protected:
    void TearDown() override
    {
        gpus_free(&g_);
    }
    std::vector<std::string> ids(bool override, uint32_t n)
    {
        gpus_free(&g_);
        pmc_error err{};
        EXPECT_EQ(gpus_discover(override, n, &g_, &err), 0) << err.text;
        return std::vector<std::string>(g_.id, g_.id + g_.n);
    }
    testutil::SavedEnv lists_{"CUDA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES",
                              "ZE_AFFINITY_MASK"};
    gpu_ids g_{};
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
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("ROCR_VISIBLE_DEVICES", "1,,5", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"1", "5"})) << "empty words dropped";
}

// --host-gpus beyond the inherited list is refused: "0".."N-1" would be
// GPUs the batch system did not give (they were handed out before).
TEST_F(GpusTest, OverrideBeyondTheInheritedListIsAnError)
{
    setenv("CUDA_VISIBLE_DEVICES", "5,7", 1);
    pmc_error err{};
    EXPECT_EQ(gpus_discover(true, 4, &g_, &err), -1);
    EXPECT_STREQ(err.text,
                 "--host-gpus 4: the inherited CUDA_VISIBLE_DEVICES lists 2 GPUs (\"5,7\")");
    EXPECT_EQ(g_.n, 0u);
}

// An id listed twice is one GPU (two tasks shared it at once); "-1" and
// Slurm's "NoDevFiles" end the list (CUDA stops at an invalid index), so
// alone they mean no GPU; a list set but empty is no GPU too, and no
// detection (which would hand out the GPUs the batch system hid).
TEST_F(GpusTest, DuplicatesMarkersAndEmptyLists)
{
    setenv("CUDA_VISIBLE_DEVICES", "0,0,1", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"0", "1"}));
    setenv("CUDA_VISIBLE_DEVICES", "2,-1,3", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"2"}));
    for (const char *none : {"-1", "NoDevFiles", ""}) {
        setenv("CUDA_VISIBLE_DEVICES", none, 1);
        EXPECT_TRUE(ids(false, 0).empty()) << "'" << none << "'";
        EXPECT_STREQ(g_.source, "CUDA_VISIBLE_DEVICES") << "'" << none << "': not detected";
    }
}

// A word that is not a GPU id is an error naming the variable and the
// word: "garbage,,$$,-5" counted as 3 GPUs and handed "garbage" to a task.
// Accepted: numbers, Level Zero's device.sub-device, CUDA's and ROCm's
// GPU-<UUID> (a beginning of one too), MIG-<UUID> and the older
// MIG-GPU-<UUID>/GI/CI; any negative number ends the list as -1 does.
// --host-gpus 0 uses no visibility list: one that does not parse is only
// worth a warning there, not a reason to refuse a run that needs no GPU.
TEST_F(GpusTest, ListThatDoesNotParseIsIgnoredWithHostGpusZero)
{
    setenv("CUDA_VISIBLE_DEVICES", "0, 1", 1);
    pmc_error err{};
    EXPECT_EQ(gpus_discover(true, 0, &g_, &err), 0) << err.text;
    EXPECT_EQ(g_.n, 0u);
    unsetenv("CUDA_VISIBLE_DEVICES");
}

TEST_F(GpusTest, WordsThatAreNotGpuIdsAreAnError)
{
    const char *bad[][2] = {
        {"garbage,,$$,-5", "garbage"},
        {"0,$$", "$$"},
        {"0, 1", " 1"},
        {"GPU-", "GPU-"},
        {"GPU-xyz", "GPU-xyz"},
        {"1.", "1."},
        {"0..1", "0..1"},
        {"+1", "+1"},
        {"MIG-", "MIG-"},
        {"mig-abc", "mig-abc"},
    };
    for (auto &b : bad) {
        for (bool override : {false, true}) {
            setenv("CUDA_VISIBLE_DEVICES", b[0], 1);
            pmc_error err{};
            EXPECT_EQ(gpus_discover(override, 1, &g_, &err), -1) << b[0];
            EXPECT_EQ(std::string(err.text),
                      std::string("CUDA_VISIBLE_DEVICES='") + b[0] + "': '" + b[1] +
                          "' is not a GPU (a device number, GPU-<UUID> or MIG-<UUID>; -1 or "
                          "NoDevFiles for none)")
                << b[0];
            EXPECT_EQ(g_.n, 0u);
        }
    }
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("ZE_AFFINITY_MASK", "0.1,bad", 1);
    pmc_error err{};
    EXPECT_EQ(gpus_discover(false, 0, &g_, &err), -1);
    EXPECT_NE(std::string(err.text).find("ZE_AFFINITY_MASK='0.1,bad': 'bad'"), std::string::npos)
        << err.text;
    setenv("ZE_AFFINITY_MASK", "0.1,1", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"0.1", "1"}));
    unsetenv("ZE_AFFINITY_MASK");
    const char *uuid = "GPU-8932f937-d72c-4106-c12f-20bd9faed9f6";
    const char *mig = "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0";
    const char *mig2 = "MIG-c6d4f1ef-42e4-5de3-91c7-45d71c87eb3f";
    setenv("CUDA_VISIBLE_DEVICES", (std::string(uuid) + ",12," + mig + "," + mig2).c_str(), 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{uuid, "12", mig, mig2}));
    setenv("CUDA_VISIBLE_DEVICES", "3,-5,garbage", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"3"})) << "-5 ends the list as -1 does";
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
    void device(const std::string &name, const std::string &cls)
    {
        tmp_.file(name + "/class", cls + "\n");
    }
    testutil::TempDir tmp_{"pmc-pci"};
};

TEST_F(PciDirTest, NoGpuClassMeansNoGpu)
{
    device("0000:00:00.0", "0x060000"); // host bridge
    device("0000:00:01.0", "0x020000"); // Ethernet
    device("0000:00:02.0", "0x010802"); // NVMe
    EXPECT_EQ(gpus__pci_may_have_gpu(tmp_.dir().c_str()), 0);
}

TEST_F(PciDirTest, DisplayAnd3dControllersAndAcceleratorsAreGpus)
{
    for (const char *cls : {"0x030000", "0x030200", "0x038000", "0x120000"}) {
        std::filesystem::remove_all(tmp_.path("0000:41:00.0"));
        device("0000:00:01.0", "0x020000");
        device("0000:41:00.0", cls);
        EXPECT_EQ(gpus__pci_may_have_gpu(tmp_.dir().c_str()), 1) << cls;
    }
}

TEST_F(PciDirTest, UnreadableListMeansAsk)
{
    EXPECT_EQ(gpus__pci_may_have_gpu(tmp_.path("missing").c_str()), 1);
}

TEST_F(PciDirTest, EmptyListMeansAsk)
{
    EXPECT_EQ(gpus__pci_may_have_gpu(tmp_.dir().c_str()), 1);
}

TEST_F(PciDirTest, UnreadableClassMeansAsk)
{
    device("0000:00:01.0", "0x020000");
    std::filesystem::create_directory(tmp_.path("0000:00:02.0")); // no "class" file
    EXPECT_EQ(gpus__pci_may_have_gpu(tmp_.dir().c_str()), 1);
}

// Two packages of two CPUs, each with a GPU behind its own host bridge,
// seen by CUDA and by NVML: "cuda1" and "nvml0" sit near CPUs 0-1, "cuda0"
// and "nvml1" near CPUs 2-3 (CUDA's order is not the PCI order NVML
// uses), so the ids follow one backend's device numbers, not the order
// hwloc lists the devices in, and never mix the two numberings.
// info, when given, is an info element (name, value) of the second OS
// device ("NVIDIAUUID", "GPU-...").
std::string package_xml(int i, int bus, const char *dev, const char *nvml,
                        std::pair<const char *, const char *> info = {})
{
    std::string info_xml = info.first ? std::string("<info name=\"") + info.first + "\" value=\"" +
                                            info.second + "\"/>\n"
                                      : "";
    char buf[2048];
    unsigned cs = 3u << (2 * i), ns = 1u << i, g = 10u * (unsigned)(i + 1);
    snprintf(buf, sizeof buf,
             "<object type=\"Package\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
             "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%u\">\n"
             "<object type=\"NUMANode\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
             "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%u\" "
             "local_memory=\"1073741824\"/>\n"
             "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
             "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%u\"/>\n"
             "<object type=\"PU\" os_index=\"%d\" cpuset=\"0x%x\" complete_cpuset=\"0x%x\" "
             "nodeset=\"0x%x\" complete_nodeset=\"0x%x\" gp_index=\"%u\"/>\n"
             "<object type=\"Bridge\" gp_index=\"%u\" bridge_type=\"0-1\" depth=\"0\" "
             "bridge_pci=\"0000:[%02x-%02x]\">\n"
             "<object type=\"PCIDev\" gp_index=\"%u\" pci_busid=\"0000:%02x:00.0\" "
             "pci_type=\"0302 [10de:2330] [10de:16c1] a1\" pci_link_speed=\"0.000000\">\n"
             "<object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" subtype=\"CUDA\" "
             "osdev_type=\"5\"/>\n"
             "<object type=\"OSDev\" gp_index=\"%u\" name=\"%s\" osdev_type=\"1\">\n%s"
             "</object>\n</object>\n</object>\n</object>\n",
             i, cs, cs, ns, ns, g, i, cs, cs, ns, ns, g + 1, 2 * i, 1u << (2 * i), 1u << (2 * i),
             ns, ns, g + 2, 2 * i + 1, 2u << (2 * i), 2u << (2 * i), ns, ns, g + 3, g + 4, bus, bus,
             g + 5, bus, g + 6, dev, g + 7, nvml, info_xml.c_str());
    return buf;
}

class DetectedGpusTest : public GpusTest
{
  protected:
    void SetUp() override
    {
        ASSERT_NO_FATAL_FAILURE(
            write_xml(package_xml(0, 1, "cuda1", "nvml0") + package_xml(1, 2, "cuda0", "nvml1")));
        setenv("HWLOC_XMLFILE", tmp_.path("topology.xml").c_str(), 1);
        gpus__set_pci_dir(missing_.c_str()); // unreadable: ask hwloc
    }
    void TearDown() override
    {
        gpus__set_pci_dir(nullptr);
        GpusTest::TearDown();
    }
    // The topology hwloc loads: a machine of CPUs 0-3 holding packages.
    void write_xml(const std::string &packages)
    {
        std::string xml =
            tmp_.file("topology.xml", "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                                      "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
                                      "<topology version=\"2.0\">\n"
                                      "<object type=\"Machine\" os_index=\"0\" cpuset=\"0xf\" "
                                      "complete_cpuset=\"0xf\" allowed_cpuset=\"0xf\" "
                                      "nodeset=\"0x3\" complete_nodeset=\"0x3\" "
                                      "allowed_nodeset=\"0x3\" gp_index=\"1\">\n" +
                                          packages + "</object>\n</topology>\n");
        ASSERT_GT(std::filesystem::file_size(xml), 0u) << xml;
    }
    std::vector<int> near(uint32_t i)
    {
        std::vector<int> cpus;
        for (int c = 0; g_.near && i < g_.n && c < CPU_SETSIZE; c++)
            if (CPU_ISSET(c, &g_.near[i]))
                cpus.push_back(c);
        return cpus;
    }
    // hwloc prefers some of these to the XML file
    testutil::SavedEnv hwloc_env_{"HWLOC_XMLFILE", "HWLOC_SYNTHETIC", "HWLOC_FSROOT",
                                  "HWLOC_CPUID_PATH", "HWLOC_COMPONENTS"};
    testutil::TempDir tmp_{"pmc-gpus"};
    const std::string missing_ = tmp_.path("no-pci");
};

TEST_F(DetectedGpusTest, HwlocCountsThemAndPlacesEach)
{
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"0", "1"}));
    EXPECT_STREQ(g_.source, "hwloc");
    ASSERT_NE(g_.near, nullptr);
    EXPECT_EQ(near(0), (std::vector<int>{2, 3})); // cuda0
    EXPECT_EQ(near(1), (std::vector<int>{0, 1})); // cuda1
}

TEST_F(DetectedGpusTest, AnInheritedListIsPlacedByCudasNumbers)
{
    setenv("CUDA_VISIBLE_DEVICES", "7,5", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"7", "5"}));
    EXPECT_EQ(near(0), (std::vector<int>{2, 3})); // the first visible device: cuda0
    EXPECT_EQ(near(1), (std::vector<int>{0, 1}));
}

// CUDA_VISIBLE_DEVICES=1 on a host of two GPUs: CUDA's backend sees one
// device ("cuda0", the visible one, near CPUs 2-3), NVML sees both.  The
// id is placed by CUDA's device, not by "nvml0" (near CPUs 0-1), although
// NVML sees more.
TEST_F(DetectedGpusTest, AVisibleSubsetIsPlacedByCudaNotNvml)
{
    ASSERT_NO_FATAL_FAILURE(
        write_xml(package_xml(0, 1, "hidden", "nvml0") + package_xml(1, 2, "cuda0", "nvml1")));
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"1"}));
    EXPECT_EQ(near(0), (std::vector<int>{2, 3}));
}

// Without CUDA's backend, NVML places an inherited list: NVML numbers
// every GPU of the host, so id "1" is "nvml1" (near CPUs 2-3), wherever it
// stands in the list, not the list's first device "nvml0".
TEST_F(DetectedGpusTest, NvmlPlacesAListByTheNumbersItHolds)
{
    ASSERT_NO_FATAL_FAILURE(
        write_xml(package_xml(0, 1, "gpu0", "nvml0") + package_xml(1, 2, "gpu1", "nvml1")));
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"1"}));
    EXPECT_EQ(near(0), (std::vector<int>{2, 3}));
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"1", "0"}));
    EXPECT_EQ(near(0), (std::vector<int>{2, 3}));
    EXPECT_EQ(near(1), (std::vector<int>{0, 1}));
}

// A list of UUIDs is placed by NVML's UUIDs, a unique beginning of one
// too (as CUDA accepts); a MIG instance's UUID, which NVML's GPU devices
// do not carry, stays unplaced.
TEST_F(DetectedGpusTest, NvmlPlacesUuidsByTheirDevice)
{
    ASSERT_NO_FATAL_FAILURE(
        write_xml(package_xml(0, 1, "gpu0", "nvml0", {"NVIDIAUUID", "GPU-aaaa-1111"}) +
                  package_xml(1, 2, "gpu1", "nvml1", {"NVIDIAUUID", "GPU-bbbb-2222"})));
    setenv("CUDA_VISIBLE_DEVICES", "GPU-bbbb,GPU-aaaa-1111,MIG-aaaa-1111", 1);
    ids(false, 0);
    ASSERT_EQ(g_.n, 3u);
    EXPECT_EQ(near(0), (std::vector<int>{2, 3}));
    EXPECT_EQ(near(1), (std::vector<int>{0, 1}));
    EXPECT_EQ(near(2), (std::vector<int>{}));
}

// ROCm SMI numbers every GPU too: ROCR_VISIBLE_DEVICES's numbers name its
// devices, and its "GPU-<hex>" UUIDs the device whose unique id is that
// number, however hwloc writes it.
TEST_F(DetectedGpusTest, RocmSmiPlacesNumbersAndUuids)
{
    ASSERT_NO_FATAL_FAILURE(
        write_xml(package_xml(0, 1, "gpu0", "rsmi0", {"AMDUUID", "a1b2c3d4e5f60718"}) +
                  package_xml(1, 2, "gpu1", "rsmi1", {"AMDUUID", "0x1234"})));
    setenv("ROCR_VISIBLE_DEVICES", "GPU-0000000000001234,0", 1);
    EXPECT_EQ(ids(false, 0), (std::vector<std::string>{"GPU-0000000000001234", "0"}));
    EXPECT_EQ(near(0), (std::vector<int>{2, 3}));
    EXPECT_EQ(near(1), (std::vector<int>{0, 1}));
    setenv("ROCR_VISIBLE_DEVICES", "GPU-A1B2C3D4E5F60718", 1);
    ids(false, 0);
    EXPECT_EQ(near(0), (std::vector<int>{0, 1}));
}

TEST_F(DetectedGpusTest, NoGpuClassOnThePciBusSkipsHwloc)
{
    tmp_.file("pci/0000:00:01.0/class", "0x020000\n"); // Ethernet only
    const std::string dir = tmp_.path("pci");
    gpus__set_pci_dir(dir.c_str());
    ids(false, 0);
    // the XML's two GPUs went uncounted: none, or /dev/nvidia*'s on a GPU machine
    EXPECT_TRUE(g_.n == 0 || std::string(g_.source) == "/dev/nvidia*") << g_.source;
    EXPECT_EQ(g_.near, nullptr);
}

} // namespace
