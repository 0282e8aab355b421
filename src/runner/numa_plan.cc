#include "runner/numa_plan.h"

#include <algorithm>
#include <cstdio>

#include "core/sysinfo.h"

namespace ds {

namespace {

// The cards whose node's CPUs are not all in this process's CPU set (a container
// pinned to one socket, taskset): "", or what their workers run on instead.
std::string cpus_outside_text(const NumaPlan& plan, const std::vector<int>& devices) {
  const std::vector<int> mine = allowed_cpus();
  if (mine.empty()) return "";
  std::string text;
  for (int d : devices) {
    const NumaNode* n = plan.topology.node(plan.device_node[static_cast<size_t>(d)]);
    if (!n || n->cpus.empty()) continue;
    std::vector<int> both;
    for (int c : n->cpus)
      if (std::binary_search(mine.begin(), mine.end(), c)) both.push_back(c);
    if (both.size() == n->cpus.size()) continue;
    text += std::string(text.empty() ? "" : "; ") + "card " + std::to_string(d) + " (node " + std::to_string(n->id) +
            ", CPUs " + format_id_list(n->cpus) + ") runs on " +
            (both.empty() ? "CPUs " + format_id_list(mine) + ", none of them its node's"
                          : "its node's CPUs " + format_id_list(both) + " only");
  }
  return text.empty() ? "" : "this process may use CPUs " + format_id_list(mine) + " only: " + text;
}

}  // namespace

std::vector<int> first_devices(int n) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(i);
  return v;
}

NumaPlan numa_plan_for(const NumaRequest& request, const SelectedBackend& selected, const std::vector<int>& used,
                       Notes& notes) {
  std::vector<int> discovered;
  for (const DeviceInfo& d : selected.probe.devices) discovered.push_back(d.numa_node);
  const HostTopology topology = read_host_topology();
  NumaPlan plan = make_numa_plan(request, topology, discovered, selected.probe.device_count);
  static bool said = false;  // once per run, however many cases and sweep steps
  if (said || plan.mode != NumaMode::kAuto) return plan;
  said = true;
  if (topology.nodes.size() == 1 && request.asked)
    notes.note("NUMA: this machine has one node (node " + std::to_string(topology.nodes[0].id) + ", CPUs " +
               format_id_list(topology.nodes[0].cpus) +
               "): every worker and buffer is on it, so --numa auto changes nothing here");
  // What the environment refuses (a container's seccomp profile, a cpuset): said
  // once, the run goes on without it.
  std::vector<int> placed;
  for (size_t d = 0; d < plan.device_node.size(); ++d)
    if (plan.device_node[d] >= 0 &&
        (used.empty() || std::find(used.begin(), used.end(), static_cast<int>(d)) != used.end()))
      placed.push_back(static_cast<int>(d));
  const PlacementAccess& a = plan.access;
  // Pinning refused too (a profile stricter than Docker's default): the workers
  // keep the CPUs they were given, and the fix names the call.
  const std::string workers = a.pin_allowed() ? "workers are pinned to their cards' nodes' CPUs"
                                              : "workers run on the CPUs they were given, not pinned to their "
                                                "cards' nodes'";
  const std::string pin_fix = a.pin_allowed() ? "" : "; a seccomp profile that allows sched_setaffinity pins them";
  if (!placed.empty() && !a.policy_allowed())
    notes.note("NUMA: placement calls refused here (" + a.refused_text() + "): " + workers +
               ", buffers placed by first touch, neither bound nor checked (JSON numa says so); " + kPlacementFix +
               pin_fix);
  else if (!placed.empty() && !a.census_allowed())
    notes.note("NUMA: where the buffers' pages are is not checked (" + a.refused_text() +
               (a.pin_allowed() ? "" : "; " + workers) + "; JSON numa says unknown); " + kPlacementFix + pin_fix);
  else if (!placed.empty() && !a.pin_allowed())
    notes.note("NUMA: placement calls refused here (" + a.refused_text() + "): " + workers +
               " (JSON numa cpus_from unchanged); their memory still bound to the nodes" + pin_fix);
  const std::string outside = cpus_outside_text(plan, placed);
  if (!outside.empty()) notes.note("NUMA: " + outside);
  std::vector<int> unknown;
  for (size_t d = 0; d < plan.device_node.size(); ++d)
    if (plan.device_node[d] < 0) unknown.push_back(static_cast<int>(d));
  if (!unknown.empty() && topology.nodes.size() > 1)
    notes.note("NUMA: the " + selected.backend->name() + " backend reports no node for device" +
               (unknown.size() == 1 ? "" : "s") + " " + format_id_list(unknown) + ": " +
               (unknown.size() == 1 ? "it runs" : "they run") + " unplaced (--numa-map DEVICE:NODE places " +
               (unknown.size() == 1 ? "it" : "them") + ")");
  return plan;
}

}  // namespace ds
