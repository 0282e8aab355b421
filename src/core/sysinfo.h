// Host facts that decide whether a run fits and what it measures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ds {

uint64_t mem_available_bytes();   // /proc/meminfo MemAvailable
uint64_t shm_free_bytes();        // statvfs("/dev/shm")
uint64_t shm_total_bytes();
// RLIMIT_MEMLOCK soft limit; UINT64_MAX when unlimited or when this process may
// lock without limit (CAP_IPC_LOCK, e.g. root).
uint64_t memlock_limit_bytes();
std::string meminfo_field(const std::string& key);  // raw value text, "" if absent
std::string read_first_line(const std::string& path);
int online_cpus();
int numa_nodes();
// The running kernel's release (uname -r), or DEV_SANDBOX_KERNEL_RELEASE when set:
// behaviour that depends on the kernel can then be tested on any kernel.
std::string kernel_release();

// Whether this process can lock memory at all: mlock() of one fresh page, 0 or
// the errno (probed, not read off the limit).
int mlock_probe();
// Signs that this process runs in a container ("/.dockerenv", "/run/.containerenv",
// "cgroup kubepods", ...), "" when none is seen.
std::string container_evidence();
// The CPUs this thread may use (its affinity: a container's cpuset, taskset),
// ascending; empty when the kernel does not say.
std::vector<int> allowed_cpus();

}  // namespace ds
