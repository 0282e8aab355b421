// Where a worker runs and where its host memory lives (each device's node from its
// PCI address; the worker and its buffers on that node, the pages proven there with
// move_pages and recorded in JSON): the plan made
// once per run from the devices' nodes and the options, the one call a worker
// makes at its start (place_worker), the binding of our own mappings before their
// first touch, and the move_pages census of where pages really are.
#pragma once

#include <sched.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "topology/topology.h"

namespace ds {

enum class NumaMode { kAuto, kOff };
const char* numa_mode_name(NumaMode mode);

// What the command line asked for (--numa, --numa-map, --shm-numa-nodes), syntax checked.
struct NumaRequest {
  NumaMode mode = NumaMode::kAuto;
  std::vector<std::pair<int, int>> map;  // --numa-map: (device, node) pairs, overriding discovery
  std::vector<int> shm_nodes;            // --shm-numa-nodes
  bool asked = false;  // a NUMA option was typed: the one-node note is said (the default run stays quiet)
};
// --numa-map's text, "0:0,1:0,2:1": false when malformed or a device is named twice.
bool parse_numa_map(const std::string& text, std::vector<std::pair<int, int>>* out);

// Which placement calls this process may make, asked of the kernel (and of any
// seccomp filter in front of it) with arguments it refuses before acting, so the
// probe changes nothing. A container under Docker's default seccomp profile
// without CAP_SYS_NICE may make none of them (EPERM); a kernel without NUMA
// support answers ENOSYS. 0: allowed; else the errno of the refusal.
struct PlacementAccess {
  int set_mempolicy = 0;
  int mbind = 0;
  int get_mempolicy = 0;
  int move_pages = 0;
  // Pinning a worker to its node's CPUs: Docker's default profile allows it; a
  // stricter one may not (the workers then run on the CPUs they were given).
  int sched_setaffinity = 0;
  bool policy_allowed() const { return set_mempolicy == 0 && mbind == 0; }
  bool census_allowed() const { return move_pages == 0; }
  bool pin_allowed() const { return sched_setaffinity == 0; }
  bool all_allowed() const { return policy_allowed() && census_allowed() && get_mempolicy == 0 && pin_allowed(); }
  // "set_mempolicy, mbind, get_mempolicy, move_pages: Operation not permitted";
  // "" when every call is allowed.
  std::string refused_text() const;
};
// Probed once per process (forked workers inherit the answer with the filter).
const PlacementAccess& placement_access();
// An errno that means "this environment does not let us place" (EPERM, EACCES,
// ENOSYS), as opposed to a wrong argument.
bool placement_refused(int err);
// How to allow the placement calls: "start the container with --cap-add SYS_NICE ...".
extern const char* const kPlacementFix;

// Made in the parent before any worker exists; workers only read it.
struct NumaPlan {
  NumaMode mode = NumaMode::kOff;
  PlacementAccess access;  // what this process may do (placement_access())
  HostTopology topology;
  std::vector<int> device_node;  // per device index: its node, < 0 when unknown
  std::vector<int> shm_nodes;    // --shm-numa-nodes: the shared region's parts; empty: not split
  // The node worker `device` goes to: < 0 when off or unknown.
  int node_of(int device) const;
};

// The plan for a run: `discovered` holds each device's node as its backend found
// it (< 0 unknown), `devices` how many the backend sees. UsageError (one line)
// for a node `topology` does not have, or a --numa-map device that is not there.
NumaPlan make_numa_plan(const NumaRequest& request, const HostTopology& topology, const std::vector<int>& discovered,
                        int devices);

// Where the pages of a range are, by move_pages (query mode). Plain data: it
// travels from forked workers through shared memory.
constexpr int kCensusNodes = 8;
struct PageCensus {
  int32_t refused = 0;  // errno of a refused move_pages: where the pages are is unknown
  uint64_t pages = 0;   // pages in the range
  uint64_t absent = 0;  // not faulted in, or not queryable
  int32_t nodes = 0;    // entries used in node/count
  int32_t node[kCensusNodes] = {};
  uint64_t count[kCensusNodes] = {};
  uint64_t other = 0;  // on nodes past the first kCensusNodes seen
  uint64_t on(int node_id) const;
  bool known() const { return refused == 0; }
};
// Only a report, never a failure: when the kernel refuses the query (or the
// process may not make it), `refused` holds the errno and the nodes are unknown.
PageCensus census_pages(const void* ptr, size_t bytes);

// The node a mapping's policy binds it to (MPOL_BIND to exactly one node), else -1.
int bound_node(const void* ptr);
// mbind(MPOL_BIND) of [ptr, ptr + bytes) to `node`, before anything touches it.
// RunError naming mbind and the node when the kernel refuses.
void bind_to_node(void* ptr, size_t bytes, int node);

// The node this thread's worker was placed on, or -1: our own mappings made on
// this thread are bound there (memory/host_memory.cc).
int worker_node();

struct BufferPlacement {
  char what[24] = {};    // "source", "destination", "shared part 1", ...
  int32_t node = -1;     // where it was asked to be; -1: nowhere in particular
  int32_t bound = -1;    // bound_node() of its first page
  PageCensus pages;
  // Every page on `node` (true when no node was asked for); a page not faulted
  // in counts as misplaced. Unknown when the census was refused (known() false).
  bool known() const { return node < 0 || pages.known(); }
  bool placed() const;
  uint64_t misplaced() const;
};
BufferPlacement place_record(const char* what, const void* ptr, size_t bytes, int node);

constexpr int kPlacedBuffers = 4;
// How a worker's CPUs were chosen.
enum class CpuChoice : int32_t {
  kUnchanged = 0,  // not placed (off, unknown node) or a memory-only node: as the process had them
  kNode = 1,       // the node's CPUs
  kNodeAllowed = 2,  // the node's CPUs that this process may use (its CPU set holds only some)
  kOutside = 3,    // none of the node's CPUs are in this process's CPU set: the CPUs it may use
};

struct WorkerPlacement {
  int32_t device = -1;
  int32_t node = -1;   // the node it was placed on; -1: not placed (off, unknown node)
  int32_t pinned = 0;  // its CPUs were set to (some of) the node's
  CpuChoice cpu_choice = CpuChoice::kUnchanged;
  // errno of the refused memory-policy call (set_mempolicy) when placed: its
  // buffers are then placed by first touch from the node's CPUs, not bound.
  int32_t policy_refused = 0;
  char cpus[256] = {};  // the CPU set it ran with, "0-15,32-47"
  int32_t buffers = 0;
  BufferPlacement buffer[kPlacedBuffers];
  // Records where [ptr, ptr + bytes) is now, expected on this worker's node.
  void add_buffer(const char* what, const void* ptr, size_t bytes);
  // Every buffer's census was made (no buffers: its memory policy was not refused).
  bool known() const;
  bool placed() const;
};

// A worker's first call, on the thread that runs it (a forked child's, or its
// own thread). With --numa auto and a known node: the thread's CPUs become the
// node's, its memory policy prefers the node (runtime pinned allocations made
// later from this thread land there) and our own mappings are bound to it. Undone
// when the scope ends. Off or unknown: nothing changes; the record still says
// which CPUs the worker had. Where this process may not set a memory policy
// (plan.access, or the call refused with EPERM/ENOSYS), the worker is still pinned
// and its memory follows the CPUs by first touch: recorded, never a failure. The
// CPUs are the node's that this process may use; none of them: the process's own.
class PlacementScope {
 public:
  PlacementScope(const NumaPlan& plan, int device);
  ~PlacementScope();
  PlacementScope(const PlacementScope&) = delete;
  PlacementScope& operator=(const PlacementScope&) = delete;
  WorkerPlacement& record() { return record_; }
  const WorkerPlacement& record() const { return record_; }

 private:
  WorkerPlacement record_;
  bool restore_ = false;
  cpu_set_t saved_cpus_;
  int saved_node_ = -1;
};

// --shm-numa-nodes: [ptr, ptr + bytes) in nodes.size() equal contiguous parts
// (page-rounded; the last takes the rest), part i bound to nodes[i]. Before the fill.
void bind_shared_region(void* ptr, size_t bytes, const std::vector<int>& nodes);
// After the fill, before registration and timing: where each part's pages are.
// RunError "shared region part i on node N: K of M pages misplaced" on a mismatch.
std::vector<BufferPlacement> check_shared_region(const void* ptr, size_t bytes, const std::vector<int>& nodes);

// What a result records about placement (JSON "numa").
struct NumaReport {
  std::string mode;  // "auto", "off"; empty: not recorded
  std::vector<WorkerPlacement> workers;
  std::vector<BufferPlacement> shared;  // --shm-numa-nodes parts
  bool known() const;
  bool placed() const;
};

}  // namespace ds
