#include "output/json_writer.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

namespace ds {

namespace {

// Keys in the order a reader expects (tool, backend, ..., results); plain
// sorted keys with nlohmann_json older than 3.9, which has no ordered_json.
// (json.hpp undefines its version macros at its end, so CMake tells us.)
#if DS_JSON_HAS_ORDERED
using json = nlohmann::ordered_json;
#else
using json = nlohmann::json;
#endif

// Microseconds with nanosecond resolution: the text table rounds, JSON does not.
json stats_us(const Stats& s) {
  return json{{"min", static_cast<double>(s.min) / 1000.0},
              {"max", static_cast<double>(s.max) / 1000.0},
              {"avg", s.avg / 1000.0},
              {"p50", static_cast<double>(s.p50) / 1000.0},
              {"p90", static_cast<double>(s.p90) / 1000.0},
              {"p99", static_cast<double>(s.p99) / 1000.0},
              {"p999", static_cast<double>(s.p999) / 1000.0}};
}

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

// --numa: each worker's node and CPUs, where its buffers' pages were (move_pages),
// and the parts of a shared region spread with --shm-numa-nodes. What the
// environment refused (memory policy, the census) is said, never hidden.
json numa_json(const NumaReport& n) {
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

json result_json(const CaseResult& r, bool workload) {
  json j;
  j["name"] = r.name;
  j["brief"] = r.brief;
  j["from"] = r.from;
  j["to"] = r.to;
  j["method"] = r.method;
  j["block_bytes"] = r.block_bytes;
  j["count"] = r.count;
  j["devices"] = r.devices;
  j["streams"] = r.streams;
  j["frags"] = r.frags;
  j["layout"] = r.layout.empty() ? json(nullptr) : json(r.layout);
  j["copies_per_iteration"] = r.copies;
  j["iterations"] = r.iterations;
  j["warmup"] = r.warmup;
  j["submit_mode"] = r.submit_mode.empty() ? json(nullptr) : json(r.submit_mode);
  j["stream_start_gate"] = r.stream_start_gate;
  j["time_label"] = r.measured;
  j["submit_us"] = stats_us(r.stage("Submit"));
  j["copy_us"] = stats_us(r.stage(r.measured));
  j["wall_us"] = stats_us(r.stage("Wall"));
  j["start_skew_us"] = stats_us(r.stage("StartSkew"));
  j["bandwidth_gib_s"] = r.bandwidth_gib_s();
  j["bandwidth_gb_s"] = r.bandwidth_gb_s();
  j["wall_bandwidth_gib_s"] = r.wall_bandwidth_gib_s();
  j["validated"] = r.validated ? json(*r.validated) : json(nullptr);
  j["validate"] = r.validate.empty() ? json(nullptr) : json(r.validate);
  j["setup_s"] = r.setup_s;
  j["notes"] = r.notes;
  if (!r.device_io.empty()) {  // aio: the block device's own counters over the phase
    json devs = json::array();
    for (const CaseResult::DeviceIo& d : r.device_io) {
      const bool found = !d.device.empty();
      const double pct = found && d.expected ? 100.0 * static_cast<double>(d.bytes) / static_cast<double>(d.expected) : 0;
      devs.push_back({{"device", found ? json(d.device) : json(nullptr)},
                      {"not_found", found ? json(nullptr) : json(d.why)},
                      {"bytes", d.bytes},
                      {"expected_bytes", d.expected},
                      {"percent", found ? json(pct) : json(nullptr)},
                      {"below_95", found ? json(pct < 95.0) : json(nullptr)}});
      if (!d.direction.empty()) devs.back()["direction"] = d.direction;  // aio_mixed: written, read
    }
    j["device_io"] = devs;
  }
  if (!r.worker_gib_s.empty()) j["worker_bandwidth_gib_s"] = r.worker_gib_s;  // aio --workers > 1
  if (!r.numa.mode.empty()) j["numa"] = numa_json(r.numa);
  if (r.load)  // load: the stages alone, and the verdict of the Stages line
    j["load_stages"] = {{"disk_alone_us", stats_us(r.load->disk_alone.ns)},
                        {"disk_alone_gib_s", r.load->disk_gib_s},
                        {"copy_alone_us", stats_us(r.load->copy_alone.ns)},
                        {"copy_alone_gib_s", r.load->copy_gib_s},
                        {"pipelined_gib_s", r.load->pipelined_gib_s},
                        {"percent_of_slower", r.load->percent_of_slower},
                        {"bottleneck", r.load->bottleneck},
                        {"read_busy_us", stats_us(r.load->read_busy)},
                        {"copy_busy_us", stats_us(r.load->copy_busy)}};
  if (workload)  // one iteration moves one request's KV on every card
    j["kv_load_ms"] = {{"per_card", r.stage(r.measured).avg / 1e6},
                       {"cards", r.devices},
                       {"end_to_end", r.stage("Wall").avg / 1e6}};
  return j;
}

}  // namespace

void JsonWriter::validation(const std::string& case_name, bool pass) {
  for (auto it = results_.rbegin(); it != results_.rend(); ++it)
    if (it->name == case_name) {
      it->validated = pass;
      return;
    }
}

void JsonWriter::nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>&) {
  for (const NodeShare& n : nodes) {
    auto same = std::find_if(nodes_.begin(), nodes_.end(), [&](const NodeShare& x) { return x.node == n.node; });
    if (same == nodes_.end())
      nodes_.push_back(n);
    else
      same->results.insert(same->results.end(), n.results.begin(), n.results.end());
  }
}

void JsonWriter::fail(const std::string& case_name, const std::string& error) {
  if (failed_) return;  // the first failure is the cause; later ones are its echoes
  failed_ = true;
  fail_case_ = case_name;
  fail_error_ = error;
}

void JsonWriter::finish() {
  json doc;
  doc["tool"] = {{"name", "dev-sandbox"},
                 {"version", info_ ? info_->tool_version : std::string(DS_VERSION)}};
  if (info_ && !info_->backend.empty())
    doc["backend"] = {{"name", info_->backend},
                      {"library", info_->backend_library.empty() ? json(nullptr)
                                                                 : json(info_->backend_library)},
                      {"runtime_version", info_->runtime_version},
                      {"devices", info_->devices}};
  else
    doc["backend"] = nullptr;  // the run failed before a backend was chosen
  doc["command_line"] = info_ ? json(info_->command_line) : json::array();
  doc["status"] = failed_ ? "failed" : "ok";
  if (failed_)
    doc["error"] = {{"case", fail_case_.empty() ? json(nullptr) : json(fail_case_)},
                    {"message", fail_error_}};
  else
    doc["error"] = nullptr;
  const bool workload = info_ && !info_->workload_json.empty();
  if (workload) doc["workload"] = json::parse(info_->workload_json);
  doc["results"] = json::array();
  for (const auto& r : results_) doc["results"].push_back(result_json(r, workload));
  if (!nodes_.empty()) {  // across ranks: the results above are the cluster's aggregate
    doc["nodes"] = json::array();
    for (const NodeShare& n : nodes_) {
      json node = {{"node", n.node}, {"ranks", n.ranks}, {"results", json::array()}};
      for (const auto& r : n.results) node["results"].push_back(result_json(r, workload));
      doc["nodes"].push_back(node);
    }
  }
  // Invalid UTF-8 (e.g. a path in an error) is replaced, never a throw mid-report.
  out_ << doc.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  out_.flush();
}

}  // namespace ds
