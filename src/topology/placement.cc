#include "topology/placement.h"

#include <numaif.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"

namespace ds {

namespace {

thread_local int t_worker_node = -1;

constexpr unsigned long kMaskBits = 1024;  // nodes a policy mask can name here
constexpr size_t kMaskWords = kMaskBits / (8 * sizeof(unsigned long));

struct NodeMask {
  unsigned long words[kMaskWords] = {};
  explicit NodeMask(int node) {
    words[static_cast<size_t>(node) / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
  }
};

size_t page_size() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

void check_node_id(int node, const char* what) {
  if (node < 0 || static_cast<unsigned long>(node) >= kMaskBits)
    throw RunError(std::string(what) + ": NUMA node " + std::to_string(node) + " is out of range");
}

std::string this_thread_cpus() { return format_id_list(allowed_cpus()); }

}  // namespace

const char* numa_mode_name(NumaMode mode) { return mode == NumaMode::kAuto ? "auto" : "off"; }

const char* const kPlacementFix =
    "to allow them in a container: --cap-add SYS_NICE (set_mempolicy, mbind, get_mempolicy) and, for "
    "move_pages, a seccomp profile that allows it (Docker's default does not list it)";

bool placement_refused(int err) { return err == EPERM || err == EACCES || err == ENOSYS; }

namespace {

// Each call made with an argument the kernel rejects (EINVAL) before it acts: the
// answer tells whether the call may be made at all, and nothing changes. A
// seccomp filter answers before the kernel looks at the arguments.
int probe_call(long rc) { return rc == 0 || !placement_refused(errno) ? 0 : errno; }

PlacementAccess probe_placement_access() {
  PlacementAccess a;
  constexpr int kBadMode = 1000;  // above every MPOL_* mode, below the mode flags
  a.set_mempolicy = probe_call(set_mempolicy(kBadMode, nullptr, 0));
  a.mbind = probe_call(mbind(nullptr, 0, kBadMode, nullptr, 0, 0));
  int mode = 0;
  a.get_mempolicy = probe_call(get_mempolicy(&mode, nullptr, 0, nullptr, 1U << 20));  // no such flag
  a.move_pages = probe_call(move_pages(0, 0, nullptr, nullptr, nullptr, 0));  // no pages: a no-op
  cpu_set_t none;
  CPU_ZERO(&none);
  a.sched_setaffinity = probe_call(sched_setaffinity(0, sizeof none, &none));  // no CPUs: EINVAL
  return a;
}

}  // namespace

const PlacementAccess& placement_access() {
  static const PlacementAccess access = probe_placement_access();
  return access;
}

std::string PlacementAccess::refused_text() const {
  std::string calls;
  int err = 0;
  const std::pair<const char*, int> each[] = {
      {"set_mempolicy", set_mempolicy}, {"mbind", mbind},
      {"get_mempolicy", get_mempolicy}, {"move_pages", move_pages},
      {"sched_setaffinity", sched_setaffinity}};
  for (const auto& c : each)
    if (c.second) {
      calls += (calls.empty() ? "" : ", ") + std::string(c.first);
      err = c.second;
    }
  return calls.empty() ? "" : calls + ": " + std::strerror(err);
}

bool parse_numa_map(const std::string& text, std::vector<std::pair<int, int>>* out) {
  std::vector<std::pair<int, int>> pairs;
  for (const std::string& item : split_commas(text)) {
    const size_t colon = item.find(':');
    std::vector<int> dev, node;
    if (colon == std::string::npos || !parse_id_list(item.substr(0, colon), &dev) || dev.size() != 1 ||
        item.substr(0, colon).find('-') != std::string::npos || !parse_id_list(item.substr(colon + 1), &node) ||
        node.size() != 1 || item.substr(colon + 1).find('-') != std::string::npos)
      return false;
    for (const auto& p : pairs)
      if (p.first == dev[0]) return false;
    pairs.emplace_back(dev[0], node[0]);
  }
  *out = std::move(pairs);
  return true;
}

NumaPlan make_numa_plan(const NumaRequest& request, const HostTopology& topology, const std::vector<int>& discovered,
                        int devices) {
  const std::string nodes = format_id_list(topology.node_ids());
  auto check_node = [&](int node, const std::string& option) {
    if (!topology.node(node))
      throw UsageError("option " + option + " names NUMA node " + std::to_string(node) +
                       ", which this machine does not have (nodes: " + nodes + ")");
  };
  NumaPlan plan;
  plan.mode = request.mode;
  plan.topology = topology;
  plan.device_node.assign(static_cast<size_t>(std::max(devices, 0)), -1);
  for (size_t d = 0; d < plan.device_node.size() && d < discovered.size(); ++d)
    plan.device_node[d] = discovered[d] >= 0 && topology.node(discovered[d]) ? discovered[d] : -1;
  for (const auto& m : request.map) {
    if (m.first >= devices)
      throw UsageError("option --numa-map names device " + std::to_string(m.first) + ", but the backend sees " +
                       std::to_string(devices) + " device" + (devices == 1 ? "" : "s"));
    check_node(m.second, "--numa-map");
    plan.device_node[static_cast<size_t>(m.first)] = m.second;
  }
  for (int n : request.shm_nodes) check_node(n, "--shm-numa-nodes");
  plan.shm_nodes = request.shm_nodes;
  // What was asked for explicitly is refused when this process may not do it.
  plan.access = placement_access();
  const PlacementAccess& a = plan.access;
  // The fix for pinning is the profile's alone: no capability lets a seccomp
  // filter's refusal through.
  // `also`: what else the same option needs that is refused too, said with it.
  auto refuse = [](const std::string& option, const std::string& does, const char* call, int err,
                   const std::string& also = "") {
    const bool pin = std::strcmp(call, "sched_setaffinity") == 0;
    throw RunError("option " + option + " " + does + " with " + call + ", which this process may not make (" + call +
                   ": " + std::strerror(err) + "); " +
                   (pin ? std::string("a seccomp profile that allows sched_setaffinity lets it") : kPlacementFix) +
                   also);
  };
  if (!request.map.empty() && request.mode == NumaMode::kAuto) {
    // Pinning refused as well: said with the first refusal, so one fix is not followed
    // by another refusal.
    const std::string pin_too = a.sched_setaffinity ? "; sched_setaffinity, which pins the workers, is refused "
                                                      "too: a seccomp profile that allows it"
                                                    : "";
    if (a.set_mempolicy)
      refuse("--numa-map", "places each worker's memory", "set_mempolicy", a.set_mempolicy, pin_too);
    if (a.mbind) refuse("--numa-map", "binds each worker's buffers", "mbind", a.mbind, pin_too);
    if (a.sched_setaffinity)
      refuse("--numa-map", "pins each worker to its node's CPUs", "sched_setaffinity", a.sched_setaffinity);
  }
  if (!request.shm_nodes.empty()) {
    if (a.mbind) refuse("--shm-numa-nodes", "binds the shared region's parts to their nodes", "mbind", a.mbind);
    if (a.move_pages)
      refuse("--shm-numa-nodes", "proves where the shared region's pages are", "move_pages", a.move_pages);
  }
  return plan;
}

int NumaPlan::node_of(int device) const {
  if (mode != NumaMode::kAuto || device < 0 || static_cast<size_t>(device) >= device_node.size()) return -1;
  return device_node[static_cast<size_t>(device)] < 0 ? -1 : device_node[static_cast<size_t>(device)];
}

uint64_t PageCensus::on(int node_id) const {
  for (int i = 0; i < nodes; ++i)
    if (node[i] == node_id) return count[i];
  return 0;
}

PageCensus census_pages(const void* ptr, size_t bytes) {
  const size_t page = page_size();
  const auto start = reinterpret_cast<uintptr_t>(ptr) & ~(page - 1);
  const auto end = reinterpret_cast<uintptr_t>(ptr) + bytes;
  // A report, never a failure: refused, the pages' nodes are unknown.
  auto unknown = [&](int err) {
    PageCensus u;
    u.refused = err != 0 ? err : EIO;
    u.pages = (end - start + page - 1) / page;
    return u;
  };
  if (!placement_access().census_allowed()) return unknown(placement_access().move_pages);
  PageCensus c;
  constexpr size_t kChunk = 4096;
  std::vector<void*> pages;
  std::vector<int> status;
  for (uintptr_t a = start; a < end;) {
    pages.clear();
    for (; a < end && pages.size() < kChunk; a += page) pages.push_back(reinterpret_cast<void*>(a));
    status.assign(pages.size(), 0);
    if (move_pages(0, pages.size(), pages.data(), nullptr, status.data(), 0) != 0) return unknown(errno);
    for (int s : status) {
      ++c.pages;
      if (s < 0) {
        ++c.absent;
        continue;
      }
      int i = 0;
      while (i < c.nodes && c.node[i] != s) ++i;
      if (i == c.nodes) {
        if (c.nodes == kCensusNodes) {
          ++c.other;
          continue;
        }
        c.node[c.nodes++] = s;
      }
      ++c.count[i];
    }
  }
  return c;
}

int bound_node(const void* ptr) {
  int mode = 0;
  NodeMask mask(0);
  mask.words[0] = 0;
  if (get_mempolicy(&mode, mask.words, kMaskBits, const_cast<void*>(ptr), MPOL_F_ADDR) != 0) return -1;
  constexpr int kModeFlags = (1 << 15) | (1 << 14) | (1 << 13);  // the kernel's MPOL_MODE_FLAGS
  if ((mode & ~kModeFlags) != MPOL_BIND) return -1;
  int found = -1;
  for (size_t w = 0; w < kMaskWords; ++w)
    for (unsigned b = 0; b < 8 * sizeof(unsigned long); ++b)
      if (mask.words[w] & (1UL << b)) {
        if (found >= 0) return -1;  // more than one node
        found = static_cast<int>(w * 8 * sizeof(unsigned long) + b);
      }
  return found;
}

void bind_to_node(void* ptr, size_t bytes, int node) {
  check_node_id(node, "mbind");
  NodeMask mask(node);
  if (mbind(ptr, bytes, MPOL_BIND, mask.words, kMaskBits, 0) != 0)
    throw sys_error("mbind(MPOL_BIND, NUMA node " + std::to_string(node) + ")", errno);
}

int worker_node() { return t_worker_node; }

bool BufferPlacement::placed() const { return node < 0 || (pages.known() && misplaced() == 0); }

// A page not faulted in is not proven to be anywhere: it counts as misplaced.
uint64_t BufferPlacement::misplaced() const { return node < 0 ? 0 : pages.pages - pages.on(node); }

BufferPlacement place_record(const char* what, const void* ptr, size_t bytes, int node) {
  BufferPlacement b;
  std::snprintf(b.what, sizeof b.what, "%s", what);
  b.node = node;
  b.bound = bound_node(ptr);
  b.pages = census_pages(ptr, bytes);
  return b;
}

void WorkerPlacement::add_buffer(const char* what, const void* ptr, size_t bytes) {
  if (!ptr || bytes == 0 || buffers >= kPlacedBuffers) return;
  buffer[buffers++] = place_record(what, ptr, bytes, node);
}

bool WorkerPlacement::known() const {
  if (buffers == 0) return policy_refused == 0;  // nothing to prove it by but the policy that was refused
  for (int i = 0; i < buffers; ++i)
    if (!buffer[i].known()) return false;
  return true;
}

bool WorkerPlacement::placed() const {
  for (int i = 0; i < buffers; ++i)
    if (!buffer[i].placed()) return false;
  return true;
}

PlacementScope::PlacementScope(const NumaPlan& plan, int device) {
  record_.device = device;
  const int node = plan.node_of(device);
  const NumaNode* n = node >= 0 ? plan.topology.node(node) : nullptr;
  if (n) {
    CPU_ZERO(&saved_cpus_);
    if (sched_getaffinity(0, sizeof saved_cpus_, &saved_cpus_) != 0) throw sys_error("sched_getaffinity", errno);
    saved_node_ = t_worker_node;
    restore_ = true;
    if (!n->cpus.empty()) {  // a memory-only node: the CPUs stay as they were
      // Only the node's CPUs this process may use (a container's cpuset, taskset):
      // none of them, and the worker keeps the CPUs it may use.
      cpu_set_t set;
      CPU_ZERO(&set);
      int allowed = 0;
      for (int c : n->cpus)
        if (c < CPU_SETSIZE && CPU_ISSET(c, &saved_cpus_)) {
          CPU_SET(c, &set);
          ++allowed;
        }
      if (allowed == 0) {
        record_.cpu_choice = CpuChoice::kOutside;
      } else if (!plan.access.pin_allowed()) {
        // Refused here (a seccomp profile stricter than Docker's default): the
        // worker keeps the CPUs it was given, said once (numa_plan_for).
        record_.cpu_choice = CpuChoice::kUnchanged;
      } else {
        if (sched_setaffinity(0, sizeof set, &set) != 0)
          throw sys_error("sched_setaffinity(NUMA node " + std::to_string(node) + " CPUs " +
                              format_id_list(n->cpus) + ") for device " + std::to_string(device),
                          errno);
        record_.pinned = 1;
        record_.cpu_choice = allowed == static_cast<int>(n->cpus.size()) ? CpuChoice::kNode : CpuChoice::kNodeAllowed;
      }
    }
    // The memory policy, where this process may set one; refused, its memory
    // lands where the (pinned) thread first touches it.
    int refused = plan.access.set_mempolicy;
    if (refused == 0) {
      NodeMask mask(node);
      if (set_mempolicy(MPOL_PREFERRED, mask.words, kMaskBits) != 0) {
        if (!placement_refused(errno))
          throw sys_error("set_mempolicy(MPOL_PREFERRED, NUMA node " + std::to_string(node) + ")", errno);
        refused = errno;
      }
    }
    record_.policy_refused = refused;
    // Our own mappings are bound (mbind) only where this process may bind.
    t_worker_node = refused == 0 && plan.access.mbind == 0 ? node : -1;
    record_.node = node;
  }
  std::snprintf(record_.cpus, sizeof record_.cpus, "%s", this_thread_cpus().c_str());
}

PlacementScope::~PlacementScope() {
  if (!restore_) return;
  t_worker_node = saved_node_;
  if (record_.policy_refused == 0) (void)set_mempolicy(MPOL_DEFAULT, nullptr, 0);
  (void)sched_setaffinity(0, sizeof saved_cpus_, &saved_cpus_);
}

namespace {

// Part i of a region split over `parts`: page-rounded, the last takes the rest.
void part_of(size_t bytes, size_t parts, size_t i, size_t* off, size_t* len) {
  const size_t page = page_size();
  const size_t each = (bytes / parts + page - 1) / page * page;
  *off = std::min(bytes, each * i);
  *len = i + 1 == parts ? bytes - *off : std::min(each, bytes - *off);
}

}  // namespace

void bind_shared_region(void* ptr, size_t bytes, const std::vector<int>& nodes) {
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t off = 0, len = 0;
    part_of(bytes, nodes.size(), i, &off, &len);
    if (len > 0) bind_to_node(static_cast<char*>(ptr) + off, len, nodes[i]);
  }
}

std::vector<BufferPlacement> check_shared_region(const void* ptr, size_t bytes, const std::vector<int>& nodes) {
  std::vector<BufferPlacement> parts;
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t off = 0, len = 0;
    part_of(bytes, nodes.size(), i, &off, &len);
    if (len == 0) continue;
    const std::string what = "shared part " + std::to_string(i);
    parts.push_back(place_record(what.c_str(), static_cast<const char*>(ptr) + off, len, nodes[i]));
    const BufferPlacement& b = parts.back();
    if (!b.known())
      throw RunError("--shm-numa-nodes: where the shared region's pages are cannot be proven: move_pages: " +
                     std::string(std::strerror(b.pages.refused)) + "; " + kPlacementFix);
    if (b.bound != nodes[i] || !b.placed())
      throw RunError("--shm-numa-nodes: shared region part " + std::to_string(i) + " on NUMA node " +
                     std::to_string(nodes[i]) + ": " + std::to_string(b.misplaced()) + " of " +
                     std::to_string(b.pages.pages) + " pages misplaced" +
                     (b.bound != nodes[i] ? " (its memory policy does not bind it to that node)" : ""));
  }
  return parts;
}

bool NumaReport::known() const {
  for (const WorkerPlacement& w : workers)
    if (!w.known()) return false;
  for (const BufferPlacement& b : shared)
    if (!b.known()) return false;
  return true;
}

bool NumaReport::placed() const {
  for (const WorkerPlacement& w : workers)
    if (!w.placed()) return false;
  for (const BufferPlacement& b : shared)
    if (!b.placed()) return false;
  return true;
}

}  // namespace ds
