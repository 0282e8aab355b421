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
// The CPUs a cgroup's cpu.max ("QUOTA PERIOD" or "max PERIOD", cgroup v2) lets run at
// once, rounded up; 0 when it sets no limit or cannot be read.
int cpu_max_cpus(const std::string& cpu_max);
// The CPUs this process may keep busy at once: its affinity (allowed_cpus, else the
// online CPUs), capped by its cgroup's CPU quota (cgroup v2 cpu.max, v1 cfs_quota_us).
int usable_cpus();

}  // namespace ds
