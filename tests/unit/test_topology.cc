// NUMA topology from recorded sysfs trees (tests/data/sysfs), the plan from the
// options, and placement on this machine's own node 0 (every machine has one).
#include <gtest/gtest.h>
#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/error.h"
#include "memory/host_memory.h"
#include "topology/placement.h"
#include "topology/topology.h"

using namespace ds;

namespace {

const std::string kData = DS_SYSFS_DATA;

std::vector<int> ids(const std::string& text) {
  std::vector<int> out;
  EXPECT_TRUE(parse_id_list(text, &out)) << text;
  return out;
}

TEST(Topology, IdListsParseAndFormatWithRanges) {
  EXPECT_EQ(ids("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(ids("5,1,1-2\n"), (std::vector<int>{1, 2, 5}));
  EXPECT_TRUE(ids("").empty());  // a node without CPUs
  std::vector<int> out;
  for (const char* bad : {"1-", "-1", "a", "3-1", "0,,1", "0-2-4", "1 2", ",", "0x1"})
    EXPECT_FALSE(parse_id_list(bad, &out)) << bad;
  EXPECT_EQ(format_id_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(format_id_list({}), "");
}

TEST(Topology, TwoSocketsHaveTheirCpusWithSiblings) {
  const HostTopology t = read_host_topology(kData + "/two_sockets");
  ASSERT_EQ(t.node_ids(), (std::vector<int>{0, 1}));
  EXPECT_EQ(format_id_list(t.node(0)->cpus), "0-15,32-47");
  EXPECT_EQ(format_id_list(t.node(1)->cpus), "16-31,48-63");
  EXPECT_EQ(t.node(2), nullptr);
}

TEST(Topology, FourNodesWithAMemoryOnlyNodeAndNonNodeEntriesSkipped) {
  const HostTopology t = read_host_topology(kData + "/four_nodes");
  ASSERT_EQ(t.node_ids(), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(format_id_list(t.node(2)->cpus), "16-23");
  EXPECT_TRUE(t.node(3)->cpus.empty());
}

TEST(Topology, PciDeviceNodeFromSysfsInEitherSpelling) {
  EXPECT_EQ(sysfs_pci_address("00000000:AF:00.0"), "0000:af:00.0");
  EXPECT_EQ(sysfs_pci_address("0000:18:00.0"), "0000:18:00.0");
  EXPECT_EQ(pci_numa_node("00000000:AF:00.0", kData + "/two_sockets"), 1);
  EXPECT_EQ(pci_numa_node("0000:18:00.0", kData + "/two_sockets"), 0);
  EXPECT_EQ(pci_numa_node("0000:3b:00.0", kData + "/four_nodes"), 2);
  EXPECT_EQ(pci_numa_node("0000:5e:00.0", kData + "/four_nodes"), kNodeNone);     // sysfs says -1
  EXPECT_EQ(pci_numa_node("0000:99:00.0", kData + "/four_nodes"), kNodeUnknown);  // no such device
}

TEST(Topology, SysfsRootComesFromTheEnvironment) {
  setenv("DS_SYSFS_ROOT", (kData + "/four_nodes").c_str(), 1);
  EXPECT_EQ(read_host_topology().nodes.size(), 4u);
  EXPECT_EQ(pci_numa_node("0000:3b:00.0"), 2);
  unsetenv("DS_SYSFS_ROOT");
  EXPECT_EQ(sysfs_root(), "");
}

TEST(NumaPlanTest, DiscoveredNodesThenTheMapOverThem) {
  const HostTopology t = read_host_topology(kData + "/four_nodes");
  NumaRequest r;
  ASSERT_TRUE(parse_numa_map("1:3,2:0", &r.map));
  const NumaPlan p = make_numa_plan(r, t, {2, -1, 1, 7}, 4);
  EXPECT_EQ(p.node_of(0), 2);
  EXPECT_EQ(p.node_of(1), 3);   // the map
  EXPECT_EQ(p.node_of(2), 0);   // the map over discovery
  EXPECT_EQ(p.node_of(3), -1);  // a node this machine does not have: unplaced
  EXPECT_EQ(p.node_of(9), -1);
  r.mode = NumaMode::kOff;
  r.map.clear();
  EXPECT_EQ(make_numa_plan(r, t, {2, 1}, 2).node_of(0), -1);
}

TEST(NumaPlanTest, BadNodesAndDevicesAreUsageErrors) {
  const HostTopology t = read_host_topology(kData + "/two_sockets");
  NumaRequest r;
  r.map = {{0, 2}};
  EXPECT_THROW(make_numa_plan(r, t, {0}, 2), UsageError);  // node 2 does not exist
  r.map = {{2, 0}};
  EXPECT_THROW(make_numa_plan(r, t, {0}, 2), UsageError);  // device 2 is not there
  r.map.clear();
  r.shm_nodes = {0, 5};
  EXPECT_THROW(make_numa_plan(r, t, {0}, 2), UsageError);
  std::vector<std::pair<int, int>> m;
  for (const char* bad : {"0:0,0:1", "a:1", "0-1:0", "0:", ":0", "0:0,", "0=1"})
    EXPECT_FALSE(parse_numa_map(bad, &m)) << bad;
}

// On this machine: node 0 exists everywhere.
NumaPlan this_machine_plan() {
  NumaRequest r;
  return make_numa_plan(r, read_host_topology(), {0}, 1);
}

TEST(Placement, AWorkerIsPinnedAndItsMappingsBoundThenRestored) {
  const NumaPlan plan = this_machine_plan();
  ASSERT_EQ(plan.node_of(0), 0);
  {
    PlacementScope s(plan, 0);
    EXPECT_EQ(s.record().node, 0);
    EXPECT_EQ(worker_node(), 0);
    EXPECT_EQ(std::string(s.record().cpus), format_id_list(plan.topology.node(0)->cpus));
    auto m = map_anonymous(64 * 4096, true);
    EXPECT_EQ(bound_node(m->host_ptr()), 0);  // mbind'ed before it was touched
    s.record().add_buffer("buffers", m->host_ptr(), 64 * 4096);
    EXPECT_EQ(s.record().buffer[0].pages.pages, 64u);
    EXPECT_EQ(s.record().buffer[0].pages.on(0), 64u);
    EXPECT_TRUE(s.record().placed());
  }
  EXPECT_EQ(worker_node(), -1);
  auto m = map_anonymous(4096, true);
  EXPECT_EQ(bound_node(m->host_ptr()), -1);  // outside a placed worker: no policy
}

// This thread's CPUs and memory policy, as the kernel reports them.
std::vector<int> thread_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}
int thread_policy(unsigned long* node_mask) {
  int mode = -1;
  unsigned long mask[16] = {};
  EXPECT_EQ(get_mempolicy(&mode, mask, 16 * 8 * sizeof(unsigned long), nullptr, 0), 0);
  *node_mask = mask[0];
  return mode;
}

// On one node, pinning to the node's CPUs changes nothing anyone can see: here a
// made-up node 0 holding only the first CPU this process may use, so the pinning
// and the thread's memory policy (preferring node 0) must really be there while
// the scope lives, and gone after it.
TEST(Placement, AWorkerOnANodeOfOneCpuRunsOnlyThereAndPrefersTheNode) {
  const std::vector<int> before = thread_cpus();
  if (before.size() < 2) GTEST_SKIP() << "this process may use one CPU only: pinning to it changes nothing";
  HostTopology one;
  one.nodes.push_back(NumaNode{0, {before.front()}});
  const NumaPlan plan = make_numa_plan(NumaRequest{}, one, {0}, 1);
  ASSERT_EQ(plan.node_of(0), 0);
  unsigned long mask = 0;
  ASSERT_EQ(thread_policy(&mask), MPOL_DEFAULT);
  {
    PlacementScope s(plan, 0);
    EXPECT_EQ(s.record().pinned, 1);
    EXPECT_EQ(s.record().cpu_choice, CpuChoice::kNode);
    EXPECT_EQ(thread_cpus(), std::vector<int>{before.front()}) << "recorded as pinned, but the thread's CPUs are not the node's";
    EXPECT_EQ(std::string(s.record().cpus), std::to_string(before.front()));
    if (plan.access.set_mempolicy == 0) {
      EXPECT_EQ(s.record().policy_refused, 0);
      EXPECT_EQ(thread_policy(&mask), MPOL_PREFERRED) << "the thread's memory policy does not prefer the node";
      EXPECT_EQ(mask, 1UL) << "the preferred node is not node 0";
    } else {
      EXPECT_EQ(s.record().policy_refused, plan.access.set_mempolicy);
    }
  }
  EXPECT_EQ(thread_cpus(), before);
  EXPECT_EQ(thread_policy(&mask), MPOL_DEFAULT);
}

TEST(Placement, NumaOffPlacesNothingButRecordsTheCpus) {
  NumaRequest r;
  r.mode = NumaMode::kOff;
  const NumaPlan plan = make_numa_plan(r, read_host_topology(), {0}, 1);
  PlacementScope s(plan, 0);
  EXPECT_EQ(s.record().node, -1);
  EXPECT_EQ(s.record().pinned, 0);
  EXPECT_NE(std::string(s.record().cpus), "");
}

TEST(Placement, UntouchedPagesAreNotPlaced) {
  auto m = map_anonymous(8 * 4096, false);
  const BufferPlacement b = place_record("x", m->host_ptr(), 8 * 4096, 0);
  EXPECT_EQ(b.pages.absent, 8u);
  EXPECT_EQ(b.misplaced(), 8u);
  EXPECT_FALSE(b.placed());
}

TEST(Placement, SharedRegionPartsAreBoundAndChecked) {
  const size_t bytes = 16 * 4096;
  auto shm = ShmRegion::create(bytes, false);
  shm->unlink();
  bind_shared_region(shm->ptr(), bytes, {0, 0});
  touch_pages(shm->ptr(), bytes);
  const std::vector<BufferPlacement> parts = check_shared_region(shm->ptr(), bytes, {0, 0});
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].pages.pages + parts[1].pages.pages, 16u);
  EXPECT_EQ(parts[1].bound, 0);
  // Without the mbind the check goes red, even on one node: the policy is not there.
  auto unbound = ShmRegion::create(bytes, true);
  unbound->unlink();
  EXPECT_THROW(check_shared_region(unbound->ptr(), bytes, {0}), RunError);
}

}  // namespace
