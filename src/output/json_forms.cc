#include "output/json_forms.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"

namespace ds {

namespace {

using json = Json;

json placement_json(const BufferPlacement& b) {
  const bool known = b.pages.known();
  json nodes = json::object();
  for (int i = 0; i < b.pages.nodes; ++i) nodes[std::to_string(b.pages.node[i])] = b.pages.count[i];
  return json{{"what", b.what},
              {"node", b.node < 0 ? json(nullptr) : json(b.node)},
              {"bound_to", b.bound < 0 ? json(nullptr) : json(b.bound)},
              {"pages", b.pages.pages},
              // move_pages refused (a container's seccomp profile): where the pages are is unknown
              {"census", known ? "made" : "refused: move_pages: " + std::string(std::strerror(b.pages.refused))},
              {"pages_by_node", known ? nodes : json(nullptr)},
              {"pages_absent", known ? json(b.pages.absent) : json(nullptr)},
              {"pages_misplaced", known ? json(b.misplaced()) : json(nullptr)},
              {"placed", b.node < 0 || !known ? json(nullptr) : json(b.placed())}};
}

const char* cpu_choice_name(CpuChoice c) {
  switch (c) {
    case CpuChoice::kNode: return "node";
    case CpuChoice::kNodeAllowed: return "node_cpus_allowed";  // the node's CPUs in this process's CPU set
    case CpuChoice::kOutside: return "outside_node";           // none of them allowed: the process's CPUs
    case CpuChoice::kUnchanged: break;
  }
  return "unchanged";
}

}  // namespace

// --numa: each worker's node and CPUs, where its buffers' pages were (move_pages),
// and the parts of a shared region spread with --shm-numa-nodes. What the
// environment refused (memory policy, the census) is said, never hidden.
json numa_shown(const NumaReport& n) {
  json workers = json::array();
  bool any_node = false;
  for (const WorkerPlacement& w : n.workers) {
    json bufs = json::array();
    for (int i = 0; i < w.buffers; ++i) bufs.push_back(placement_json(w.buffer[i]));
    any_node = any_node || w.node >= 0;
    json policy = nullptr;
    if (w.node >= 0)
      policy = w.policy_refused ? "refused: set_mempolicy: " + std::string(std::strerror(w.policy_refused))
                                : std::string("preferred");
    workers.push_back({{"device", w.device},
                       {"node", w.node < 0 ? json(nullptr) : json(w.node)},
                       {"cpus", w.cpus},
                       {"cpus_pinned", w.pinned != 0},
                       {"cpus_from", cpu_choice_name(w.cpu_choice)},
                       {"memory_policy", policy},
                       {"placed", w.node < 0 || !w.known() ? json(nullptr) : json(w.placed())},
                       {"buffers", bufs}});
  }
  json shared = json::array();
  for (const BufferPlacement& b : n.shared) shared.push_back(placement_json(b));
  return json{{"mode", n.mode},
              {"placed", (any_node || !n.shared.empty()) && n.known() ? json(n.placed()) : json(nullptr)},
              {"workers", workers},
              {"shared_region", shared}};
}

json stats_us(const Stats& s) {
  return json{{"min", static_cast<double>(s.min) / 1000.0},
              {"max", static_cast<double>(s.max) / 1000.0},
              {"avg", s.avg / 1000.0},
              {"p50", static_cast<double>(s.p50) / 1000.0},
              {"p90", static_cast<double>(s.p90) / 1000.0},
              {"p99", static_cast<double>(s.p99) / 1000.0},
              {"p999", static_cast<double>(s.p999) / 1000.0}};
}

const std::vector<const char*>& stats_us_keys() {
  static const std::vector<const char*> keys = {"min", "max", "avg", "p50", "p90", "p99", "p999"};
  return keys;
}

json stats_wire(const Stats& s) {
  return {{"min", s.min}, {"max", s.max}, {"p50", s.p50}, {"p90", s.p90},
          {"p99", s.p99}, {"p999", s.p999}, {"avg", s.avg}, {"samples", s.samples}};
}
Stats stats_from_wire(const json& j) {
  Stats s;
  s.min = j.at("min");
  s.max = j.at("max");
  s.p50 = j.at("p50");
  s.p90 = j.at("p90");
  s.p99 = j.at("p99");
  s.p999 = j.at("p999");
  s.avg = j.at("avg");
  s.samples = j.at("samples");
  return s;
}

namespace {

// A fixed char array's text, and back (truncated to fit, always terminated).
template <size_t N>
std::string chars_to(const char (&a)[N]) {
  return std::string(a, strnlen(a, N));
}
template <size_t N>
void chars_from(const json& j, char (&a)[N]) {
  const std::string s = j.get<std::string>();
  std::memset(a, 0, N);
  std::memcpy(a, s.data(), std::min(s.size(), N - 1));
}

json census_to(const PageCensus& c) {
  const int n = std::max(0, std::min<int>(c.nodes, kCensusNodes));
  return {{"refused", c.refused}, {"pages", c.pages}, {"absent", c.absent}, {"other", c.other},
          {"node", std::vector<int32_t>(c.node, c.node + n)},
          {"count", std::vector<uint64_t>(c.count, c.count + n)}};
}
PageCensus census_from(const json& j) {
  PageCensus c;
  c.refused = j.at("refused");
  c.pages = j.at("pages");
  c.absent = j.at("absent");
  c.other = j.at("other");
  const auto node = j.at("node").get<std::vector<int32_t>>();
  const auto count = j.at("count").get<std::vector<uint64_t>>();
  if (node.size() != count.size() || node.size() > static_cast<size_t>(kCensusNodes))
    throw RunError("a page census with " + std::to_string(node.size()) + " nodes and " +
                   std::to_string(count.size()) + " counts");
  c.nodes = static_cast<int32_t>(node.size());
  std::copy(node.begin(), node.end(), c.node);
  std::copy(count.begin(), count.end(), c.count);
  return c;
}

json buffer_to(const BufferPlacement& b) {
  return {{"what", chars_to(b.what)}, {"node", b.node}, {"bound", b.bound}, {"pages", census_to(b.pages)}};
}
BufferPlacement buffer_from(const json& j) {
  BufferPlacement b;
  chars_from(j.at("what"), b.what);
  b.node = j.at("node");
  b.bound = j.at("bound");
  b.pages = census_from(j.at("pages"));
  return b;
}

}  // namespace

json numa_wire(const NumaReport& n) {
  json workers = json::array();
  for (const WorkerPlacement& w : n.workers) {
    json bufs = json::array();
    for (int i = 0; i < std::max(0, std::min(w.buffers, kPlacedBuffers)); ++i) bufs.push_back(buffer_to(w.buffer[i]));
    workers.push_back({{"device", w.device}, {"node", w.node}, {"pinned", w.pinned},
                       {"cpu_choice", static_cast<int32_t>(w.cpu_choice)}, {"policy_refused", w.policy_refused},
                       {"cpus", chars_to(w.cpus)},
                       {"buffers", bufs}});
  }
  json shared = json::array();
  for (const BufferPlacement& b : n.shared) shared.push_back(buffer_to(b));
  return {{"mode", n.mode}, {"workers", workers}, {"shared", shared}};
}
NumaReport numa_from_wire(const json& j) {
  NumaReport n;
  n.mode = j.at("mode");
  for (const json& w : j.at("workers")) {
    WorkerPlacement p;
    p.device = w.at("device");
    p.node = w.at("node");
    p.pinned = w.at("pinned");
    const int32_t choice = w.at("cpu_choice");
    if (choice < 0 || choice > static_cast<int32_t>(CpuChoice::kOutside))
      throw RunError("a worker placement with CPU choice " + std::to_string(choice));
    p.cpu_choice = static_cast<CpuChoice>(choice);
    p.policy_refused = w.at("policy_refused");
    chars_from(w.at("cpus"), p.cpus);
    const json& bufs = w.at("buffers");
    if (bufs.size() > static_cast<size_t>(kPlacedBuffers))
      throw RunError("a worker placement with " + std::to_string(bufs.size()) + " buffers");
    for (const json& b : bufs) p.buffer[p.buffers++] = buffer_from(b);
    n.workers.push_back(p);
  }
  for (const json& b : j.at("shared")) n.shared.push_back(buffer_from(b));
  return n;
}

json stage_wire(const Stage& s) { return {{"name", s.name}, {"ns", stats_wire(s.ns)}, {"samples", s.samples}}; }
Stage stage_from_wire(const json& j) {
  Stage st;
  st.name = j.at("name");
  st.ns = stats_from_wire(j.at("ns"));
  st.samples = j.at("samples").get<std::vector<int64_t>>();
  return st;
}

}  // namespace ds
