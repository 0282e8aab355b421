// What the machine's NUMA layout is, read from sysfs: the nodes and their CPUs,
// and a PCI device's node. Every path goes through a root directory (the real
// one is "", DS_SYSFS_ROOT overrides it) so tests read recorded trees instead.
#pragma once

#include <string>
#include <vector>

namespace ds {

// DS_SYSFS_ROOT when set (a directory holding sys/...), else "" (the real /sys).
std::string sysfs_root();

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}, sorted and unique; "" -> {} (a node
// without CPUs). False for anything else (the list as users type it too).
bool parse_id_list(const std::string& text, std::vector<int>* out);
// The inverse, with ranges: {0,1,2,3,8} -> "0-3,8"; {} -> "".
std::string format_id_list(const std::vector<int>& ids);

struct NumaNode {
  int id = 0;
  std::vector<int> cpus;  // may be empty: a memory-only node
};

struct HostTopology {
  std::vector<NumaNode> nodes;  // by id, ascending
  const NumaNode* node(int id) const;  // null when there is no such node
  std::vector<int> node_ids() const;
};

// <root>/sys/devices/system/node/node<N>/cpulist for every node<N>. A tree without
// node directories (no NUMA support) is one node 0 holding every online CPU.
HostTopology read_host_topology(const std::string& root = sysfs_root());

// "00000000:3B:00.0" (CUDA's form) -> "0000:3b:00.0" (sysfs's form).
std::string sysfs_pci_address(const std::string& bus_id);
// <root>/sys/bus/pci/devices/<address>/numa_node: the node; kNodeNone (-1) when
// sysfs says -1 (no affinity); kNodeUnknown (-2) when the device or file is not there.
constexpr int kNodeNone = -1;
constexpr int kNodeUnknown = -2;
int pci_numa_node(const std::string& bus_id, const std::string& root = sysfs_root());

}  // namespace ds
