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
// The CPU time a cgroup's cpu.max ("QUOTA PERIOD" or "max PERIOD", cgroup v2) allows
// per unit of wall time, as CPUs, exactly ("150000 100000": 1.5); 0 when it sets no
// limit or cannot be read.
double cpu_max_quota(const std::string& cpu_max);
// This process's cgroup CPU quota (cgroup v2 cpu.max, v1 cfs_quota_us), as
// cpu_max_quota; 0 when none. DEV_SANDBOX_CPU_MAX, when set, is read instead of the
// cgroup's cpu.max (a quota can then be tested on any machine).
double cgroup_cpu_quota();

// The CPUs' worth of time a process may use at once: `affinity` CPUs (the CPUs it may
// run on), capped by a cgroup `quota` (0: none), and which of the two bound it.
struct CpuBound {
  double cpus = 0;    // 1.5 under a quota of 1.5; 0 when neither is known
  std::string bound;  // "affinity" or "cgroup quota"
};
CpuBound cpu_bound(int affinity, double quota);
// This process's: its affinity (allowed_cpus, else the online CPUs) and its cgroup's quota.
CpuBound usable_cpu_bound();
// The threads this process may keep running at once: usable_cpu_bound() rounded down,
// at least 1 (under a quota of 1.5, two busy threads are throttled: they do not
// both run); 0 when not known. For look_nap_rule's count of threads against CPUs;
// a share of CPU time (load --offload-ratio's) takes the exact bound.
int usable_cpus();

}  // namespace ds
