// `doctor`: what was built, what each backend finds, and the host facts that
// decide results (CPUs, NUMA, memory, /dev/shm, RLIMIT_MEMLOCK, huge pages).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "aio/io_engine.h"
#include "app/command.h"
#include "job/job.h"
#include "backends/select.h"
#include "cluster/cluster.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "topology/placement.h"
#include "topology/topology.h"

namespace ds {

namespace {

std::string memlock_text() {
  const uint64_t l = memlock_limit_bytes();
  return l == UINT64_MAX ? "unlimited (or CAP_IPC_LOCK)" : format_bytes(l);
}

// Which of this backend's host buffers our own code locks with mlock(), and so
// count against RLIMIT_MEMLOCK.
std::string memlock_use_text(const Backend& b) {
  const bool pinned = b.mlocks(HostLock::kPinnedAlloc), reg = b.mlocks(HostLock::kRegistration);
  if (pinned && reg) return "pinned and registered buffers are locked with mlock (RLIMIT_MEMLOCK applies)";
  if (reg)
    return "registered buffers (odirect, shm) are locked with mlock before registration (RLIMIT_MEMLOCK "
           "applies to them); pinned ones are pinned by the driver";
  if (pinned) return "pinned buffers are locked with mlock (RLIMIT_MEMLOCK applies)";
  return "the driver pins host buffers itself (RLIMIT_MEMLOCK does not apply)";
}

// "card 0 -> node 1 -> CPUs 16-31,48-63": where --numa auto places each device's worker.
std::string numa_map_line(const DeviceInfo& d, const HostTopology& topo) {
  std::string line = "NUMA: card " + std::to_string(d.index) + " -> ";
  const NumaNode* n = d.numa_node >= 0 ? topo.node(d.numa_node) : nullptr;
  if (n) return line + "node " + std::to_string(n->id) + " -> CPUs " + (n->cpus.empty() ? "none (memory-only node)" : format_id_list(n->cpus));
  if (d.numa_node == -1) return line + "no node (its PCI device reports -1): not placed; --numa-map places it";
  if (d.pci_bus_id.empty())
    return line + "node unknown (the backend found no PCI address for it): not placed; --numa-map places it";
  return line + "node unknown (no sysfs numa_node for its PCI address): not placed; --numa-map places it";
}

std::string yes_or(int err) { return err == 0 ? "yes" : std::string("no (") + std::strerror(err) + ")"; }

// What this process may do here, each probed (a container's seccomp profile and
// cpuset, /dev/shm's size, memory locking): the one line that says why a run in
// this environment degrades, and a second with the fixes when something is refused.
void print_environment() {
  const PlacementAccess& a = placement_access();
  const std::string uring = engine_unavailable(AioEngineKind::kUring);
  std::string shm = "yes";
  try {
    ShmRegion::create(4096);
  } catch (const std::exception& e) {
    shm = std::string("no (") + e.what() + ")";
  }
  const int lock = mlock_probe();
  const std::string container = container_evidence();
  std::cout << "environment: placement calls "
            << (a.all_allowed() ? "all allowed (set_mempolicy, mbind, get_mempolicy, move_pages, sched_setaffinity)"
                                : "refused: " + a.refused_text())
            << "; io_uring " << (uring.empty() ? "yes" : "no (" + uring.substr(0, uring.find(';')) + ")")
            << "; /dev/shm " << format_bytes(shm_free_bytes()) << " free of " << format_bytes(shm_total_bytes())
            << ", shm_open " << shm << "; mlock " << yes_or(lock) << ", RLIMIT_MEMLOCK " << memlock_text()
            << "; CPUs allowed " << format_id_list(allowed_cpus()) << " of " << online_cpus() << " online; container "
            << (container.empty() ? "none seen" : container) << "\n";
  std::string fixes;
  if (!a.all_allowed()) {
    const bool memory = a.policy_allowed() && a.census_allowed() && a.get_mempolicy == 0;
    if (!memory) fixes += std::string("--numa auto runs unbound and the page census is unknown; ") + kPlacementFix;
    if (!a.pin_allowed())
      fixes += std::string(memory ? "" : "; ") +
               "--numa auto leaves workers on the CPUs they were given; a seccomp profile that allows "
               "sched_setaffinity pins them";
  }
  if (!uring.empty()) fixes += std::string(fixes.empty() ? "" : "; ") + "aio/load --engine libaio or psync work";
  if (!fixes.empty()) std::cout << "environment: note: " << fixes << "\n";
}

// "auto: picks sim (no ascend or cuda runtime found) -- CPU memcpy numbers, ...":
// what a run without --backend measures, and what overrides it.
std::string auto_line(const Backend& b, const BackendProbe& p, const std::vector<std::pair<std::string, BackendProbe>>& before) {
  const std::string passed = auto_passed_over(before);
  std::string line = "auto: picks " + b.name() + " (" + (passed.empty() ? "the first in auto's order" : passed) + ", " +
                     std::to_string(p.device_count) + " device" + (p.device_count == 1 ? "" : "s") + ")";
  if (b.device_memory_is_host()) line += " -- CPU memcpy numbers, not an accelerator's";
  const char* env = std::getenv("DEV_SANDBOX_BACKEND");
  if (env && *env) return line + "; DEV_SANDBOX_BACKEND=" + env + " overrides it for runs without --backend";
  return line + "; --backend or DEV_SANDBOX_BACKEND chooses another";
}

int run_doctor() {
  const HostTopology topo = read_host_topology();
  std::cout << "dev-sandbox " << DS_VERSION << " (" << DS_BUILD_TYPE << " build)\n";
  std::cout << "features: libaio " << (DS_HAVE_LIBAIO ? "yes" : "no") << ", io_uring "
            << (DS_HAVE_URING ? "yes" : "no") << ", job files (run, yaml-cpp) " << (job_files_supported() ? "yes" : "no")
            << "\n";
  std::cout << cluster_doctor_line() << "\n";
  bool sim_ok = false;
  std::vector<std::pair<std::string, BackendProbe>> before;  // what auto passed over
  std::string picks;
  for (const auto& name : backend_names()) {
    auto b = make_backend(name);
    const BackendProbe p = probe_in_child(*b);
    if (picks.empty() && p.loaded && p.device_count >= 1) picks = auto_line(*b, p, before);
    before.emplace_back(name, p);
    std::cout << "backend " << name << ": ";
    if (!p.loaded) {
      std::cout << "not available: " << p.error << "\n";
      continue;
    }
    if (name == "sim") sim_ok = true;
    std::cout << "loaded" << (p.library_path.empty() ? "" : " from " + p.library_path)
              << ", version " << p.runtime_version << ", " << p.device_count << " device"
              << (p.device_count == 1 ? "" : "s") << "\n";
    for (const auto& d : p.devices) std::cout << "  " << device_line(d) << "\n";
    for (const auto& d : p.devices) std::cout << "  " << numa_map_line(d, topo) << "\n";
    for (const auto& f : p.facts) std::cout << "  " << f.first << ": " << f.second << "\n";
    std::cout << "  memory locking: " << memlock_use_text(*b) << "\n";
    std::cout << "  direct path: "
              << (p.direct_unavailable.empty() ? b->direct_method() : "not available: " + p.direct_unavailable)
              << "\n";
  }
  std::cout << (picks.empty() ? "auto: picks nothing (no backend loads and sees a device)" : picks) << "\n";
  std::cout << "first command: dev-sandbox copy -t host_to_device_ce -s 64M -n 4 -i 16 (one card, 256 MiB; "
               "`dev-sandbox copy --list` shows every case)\n";
  std::cout << "host: " << online_cpus() << " CPUs, " << numa_nodes() << " NUMA node"
            << (numa_nodes() == 1 ? "" : "s") << ", MemAvailable " << format_bytes(mem_available_bytes())
            << ", /dev/shm " << format_bytes(shm_free_bytes()) << " free of "
            << format_bytes(shm_total_bytes()) << ", RLIMIT_MEMLOCK " << memlock_text() << "\n";
  print_environment();
  for (const NumaNode& n : topo.nodes)
    std::cout << "host: NUMA node " << n.id << ": CPUs " << (n.cpus.empty() ? "none" : format_id_list(n.cpus)) << "\n";
  std::cout << "host: transparent hugepages "
            << read_first_line("/sys/kernel/mm/transparent_hugepage/enabled") << ", HugePages_Total "
            << meminfo_field("HugePages_Total") << ", Hugepagesize " << meminfo_field("Hugepagesize")
            << "\n";
  return sim_ok ? 0 : 1;
}

}  // namespace

Command add_doctor_command(CLI::App& root, GlobalOptions&) {
  CLI::App* c = root.add_subcommand("doctor", "what was built and what this machine offers");
  return {c, [] { return run_doctor(); }, {}, {"dev-sandbox doctor", "dev-sandbox doctor --backend cuda"}};
}

}  // namespace ds
