#include "core/sysinfo.h"

#include <dirent.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

namespace ds {

std::string meminfo_field(const std::string& key) {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") == 0) {
      size_t p = key.size() + 1;
      while (p < line.size() && line[p] == ' ') ++p;
      return line.substr(p);
    }
  }
  return "";
}

uint64_t mem_available_bytes() {
  std::istringstream v(meminfo_field("MemAvailable"));
  uint64_t kb = 0;
  v >> kb;
  return kb * 1024;
}

uint64_t shm_free_bytes() {
  struct statvfs s {};
  if (statvfs("/dev/shm", &s) != 0) return 0;
  return static_cast<uint64_t>(s.f_bavail) * s.f_frsize;
}

uint64_t shm_total_bytes() {
  struct statvfs s {};
  if (statvfs("/dev/shm", &s) != 0) return 0;
  return static_cast<uint64_t>(s.f_blocks) * s.f_frsize;
}

namespace {

bool has_cap_ipc_lock() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, 7, "CapEff:") == 0) {
      const uint64_t caps = std::stoull(line.substr(7), nullptr, 16);
      return (caps >> 14) & 1;  // CAP_IPC_LOCK = 14
    }
  }
  return false;
}

}  // namespace

uint64_t memlock_limit_bytes() {
  if (has_cap_ipc_lock()) return std::numeric_limits<uint64_t>::max();
  struct rlimit rl {};
  if (getrlimit(RLIMIT_MEMLOCK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
    return std::numeric_limits<uint64_t>::max();
  return rl.rlim_cur;
}

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

int online_cpus() { return static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN)); }

int numa_nodes() {
  DIR* d = opendir("/sys/devices/system/node");
  if (!d) return 1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (std::strncmp(e->d_name, "node", 4) == 0 && e->d_name[4] >= '0' && e->d_name[4] <= '9') ++n;
  }
  closedir(d);
  return n > 0 ? n : 1;
}

std::string kernel_release() {
  const char* forced = std::getenv("DEV_SANDBOX_KERNEL_RELEASE");
  if (forced && *forced) return forced;
  utsname u;
  return uname(&u) == 0 ? std::string(u.release) : std::string();
}

int mlock_probe() {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* p = mmap(nullptr, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return errno;
  const int rc = mlock(p, page) == 0 ? 0 : errno;
  if (rc == 0) munlock(p, page);
  munmap(p, page);
  return rc;
}

std::string container_evidence() {
  if (access("/.dockerenv", F_OK) == 0) return "/.dockerenv";
  if (access("/run/.containerenv", F_OK) == 0) return "/run/.containerenv";
  if (std::getenv("KUBERNETES_SERVICE_HOST")) return "KUBERNETES_SERVICE_HOST";
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    for (const char* tag : {"kubepods", "docker", "containerd", "libpod", "lxc"})
      if (line.find(tag) != std::string::npos) return std::string("cgroup ") + tag;
  return "";
}

double cpu_max_quota(const std::string& cpu_max) {
  std::istringstream in(cpu_max);
  std::string quota;
  long long period = 0;
  if (!(in >> quota >> period) || quota == "max" || period <= 0) return 0;
  char* end = nullptr;
  const long long q = std::strtoll(quota.c_str(), &end, 10);
  if (!end || *end != '\0' || q <= 0) return 0;
  return static_cast<double>(q) / static_cast<double>(period);
}

// The quota of this process's cgroup: v2 (the cpu.max of the path /proc/self/cgroup
// names under "0::"), else v1's cpu controller at its mount.
double cgroup_cpu_quota() {
  const char* forced = std::getenv("DEV_SANDBOX_CPU_MAX");  // tests: a container's quota on any machine
  if (forced && *forced) return cpu_max_quota(forced);
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("0::", 0) == 0) {
      const double n = cpu_max_quota(read_first_line("/sys/fs/cgroup" + line.substr(3) + "/cpu.max"));
      if (n > 0) return n;
    }
  const std::string quota = read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
  const std::string period = read_first_line("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
  return quota.empty() || period.empty() ? 0 : cpu_max_quota(quota + " " + period);
}

CpuBound cpu_bound(int affinity, double quota) {
  CpuBound b;
  b.cpus = affinity > 0 ? affinity : 0;
  b.bound = "affinity";
  if (quota > 0 && (b.cpus <= 0 || quota < b.cpus)) {
    b.cpus = quota;
    b.bound = "cgroup quota";
  }
  return b;
}

CpuBound usable_cpu_bound() {
  const std::vector<int> allowed = allowed_cpus();
  return cpu_bound(allowed.empty() ? online_cpus() : static_cast<int>(allowed.size()), cgroup_cpu_quota());
}

int usable_cpus() {
  const CpuBound b = usable_cpu_bound();
  if (b.cpus <= 0) return 0;
  return std::max(1, static_cast<int>(b.cpus));  // whole CPUs: rounded down
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

}  // namespace ds
