// `doctor`: what was built, what each backend finds, and the host facts that
// decide results (CPUs, NUMA, memory, /dev/shm, RLIMIT_MEMLOCK, huge pages).
#include <cstdio>
#include <iostream>

#include "app/command.h"
#include "backend/select.h"
#include "core/sysinfo.h"
#include "core/units.h"

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

int run_doctor() {
  std::cout << "dev-sandbox " << DS_VERSION << " (" << DS_BUILD_TYPE << " build)\n";
  std::cout << "features: libaio " << (DS_HAVE_LIBAIO ? "yes" : "no") << ", io_uring "
            << (DS_HAVE_URING ? "yes" : "no") << "\n";
  bool sim_ok = false;
  for (const auto& name : backend_names()) {
    auto b = make_backend(name);
    const BackendProbe p = probe_in_child(*b);
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
    for (const auto& f : p.facts) std::cout << "  " << f.first << ": " << f.second << "\n";
    std::cout << "  memory locking: " << memlock_use_text(*b) << "\n";
    std::cout << "  direct path: "
              << (p.direct_unavailable.empty() ? b->direct_method() : "not available: " + p.direct_unavailable)
              << "\n";
  }
  std::cout << "host: " << online_cpus() << " CPUs, " << numa_nodes() << " NUMA node"
            << (numa_nodes() == 1 ? "" : "s") << ", MemAvailable " << format_bytes(mem_available_bytes())
            << ", /dev/shm " << format_bytes(shm_free_bytes()) << " free of "
            << format_bytes(shm_total_bytes()) << ", RLIMIT_MEMLOCK " << memlock_text() << "\n";
  std::cout << "host: transparent hugepages "
            << read_first_line("/sys/kernel/mm/transparent_hugepage/enabled") << ", HugePages_Total "
            << meminfo_field("HugePages_Total") << ", Hugepagesize " << meminfo_field("Hugepagesize")
            << "\n";
  return sim_ok ? 0 : 1;
}

}  // namespace

Command add_doctor_command(CLI::App& root, GlobalOptions&) {
  CLI::App* c = root.add_subcommand("doctor", "what was built and what this machine offers");
  return {c, [] { return run_doctor(); }};
}

}  // namespace ds
