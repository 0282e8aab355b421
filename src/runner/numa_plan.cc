#include "runner/numa_plan.h"

#include <cstdio>

namespace ds {

NumaPlan numa_plan_for(const NumaRequest& request, const SelectedBackend& selected) {
  std::vector<int> discovered;
  for (const DeviceInfo& d : selected.probe.devices) discovered.push_back(d.numa_node);
  const HostTopology topology = read_host_topology();
  NumaPlan plan = make_numa_plan(request, topology, discovered, selected.probe.device_count);
  static bool said = false;  // once per run, however many cases and sweep steps
  if (said || plan.mode != NumaMode::kAuto) return plan;
  said = true;
  if (topology.nodes.size() == 1 && request.asked)
    std::fprintf(stderr,
                 "dev-sandbox: note: NUMA: this machine has one node (node %d, CPUs %s): every worker and "
                 "buffer is on it, so --numa auto changes nothing here\n",
                 topology.nodes[0].id, format_id_list(topology.nodes[0].cpus).c_str());
  std::vector<int> unknown;
  for (size_t d = 0; d < plan.device_node.size(); ++d)
    if (plan.device_node[d] < 0) unknown.push_back(static_cast<int>(d));
  if (!unknown.empty() && topology.nodes.size() > 1)
    std::fprintf(stderr,
                 "dev-sandbox: note: NUMA: the %s backend reports no node for device%s %s: %s run%s unplaced "
                 "(--numa-map DEVICE:NODE places %s)\n",
                 selected.backend->name().c_str(), unknown.size() == 1 ? "" : "s", format_id_list(unknown).c_str(),
                 unknown.size() == 1 ? "it" : "they", unknown.size() == 1 ? "s" : "",
                 unknown.size() == 1 ? "it" : "them");
  return plan;
}

}  // namespace ds
