#include "output/result_codec.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ds {

namespace {

// Key order does not matter here (the reader looks fields up by name).
using json = nlohmann::json;

json stats_to(const Stats& s) {
  return {{"min", s.min}, {"max", s.max}, {"p50", s.p50}, {"p90", s.p90},
          {"p99", s.p99}, {"p999", s.p999}, {"avg", s.avg}, {"samples", s.samples}};
}
Stats stats_from(const json& j) {
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

json numa_to(const NumaReport& n) {
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
NumaReport numa_from(const json& j) {
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

json stage_to(const Stage& s) { return {{"name", s.name}, {"ns", stats_to(s.ns)}, {"samples", s.samples}}; }
Stage stage_from(const json& j) {
  Stage st;
  st.name = j.at("name");
  st.ns = stats_from(j.at("ns"));
  st.samples = j.at("samples").get<std::vector<int64_t>>();
  return st;
}

json load_to(const CaseResult::LoadStages& l) {
  return {{"disk_alone", stage_to(l.disk_alone)}, {"copy_alone", stage_to(l.copy_alone)},
          {"read_busy", stats_to(l.read_busy)},   {"copy_busy", stats_to(l.copy_busy)},
          {"read_busy_samples", l.read_busy_samples}, {"copy_busy_samples", l.copy_busy_samples},
          {"disk_gib_s", l.disk_gib_s},           {"copy_gib_s", l.copy_gib_s},
          {"pipelined_gib_s", l.pipelined_gib_s}, {"percent_of_slower", l.percent_of_slower},
          {"bottleneck", l.bottleneck}};
}
CaseResult::LoadStages load_from(const json& j) {
  CaseResult::LoadStages l;
  l.disk_alone = stage_from(j.at("disk_alone"));
  l.copy_alone = stage_from(j.at("copy_alone"));
  l.read_busy = stats_from(j.at("read_busy"));
  l.copy_busy = stats_from(j.at("copy_busy"));
  l.read_busy_samples = j.at("read_busy_samples").get<std::vector<int64_t>>();
  l.copy_busy_samples = j.at("copy_busy_samples").get<std::vector<int64_t>>();
  l.disk_gib_s = j.at("disk_gib_s");
  l.copy_gib_s = j.at("copy_gib_s");
  l.pipelined_gib_s = j.at("pipelined_gib_s");
  l.percent_of_slower = j.at("percent_of_slower");
  l.bottleneck = j.at("bottleneck");
  return l;
}

template <class F>
auto reading(const char* what, F f) -> decltype(f()) {
  try {
    return f();
  } catch (const json::exception& e) {
    throw RunError(std::string(what) + " could not be read: " + e.what());
  }
}

}  // namespace

std::string encode_result(const CaseResult& r) {
  json j = {{"name", r.name}, {"brief", r.brief}, {"from", r.from}, {"to", r.to}, {"method", r.method},
            {"block_bytes", r.block_bytes}, {"count", r.count}, {"bytes", r.bytes}, {"devices", r.devices},
            {"streams", r.streams}, {"submit_mode", r.submit_mode}, {"gate", r.stream_start_gate},
            {"frags", r.frags}, {"layout", r.layout}, {"copies", r.copies}, {"iterations", r.iterations},
            {"warmup", r.warmup}, {"measured", r.measured}, {"validate", r.validate}, {"setup_s", r.setup_s},
            {"notes", r.notes}, {"worker_gib_s", r.worker_gib_s}, {"numa", numa_to(r.numa)}};
  j["validated"] = r.validated ? json(*r.validated) : json(nullptr);
  j["stages"] = json::array();
  for (const Stage& s : r.stages) j["stages"].push_back(stage_to(s));
  j["load"] = r.load ? load_to(*r.load) : json(nullptr);
  j["device_io"] = json::array();
  for (const auto& d : r.device_io)
    j["device_io"].push_back({{"device", d.device}, {"why", d.why}, {"bytes", d.bytes}, {"expected", d.expected},
                              {"direction", d.direction}});
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

CaseResult decode_result(const std::string& text) {
  return reading("a result", [&] {
    const json j = json::parse(text);
    CaseResult r;
    r.name = j.at("name");
    r.brief = j.at("brief");
    r.from = j.at("from");
    r.to = j.at("to");
    r.method = j.at("method");
    r.block_bytes = j.at("block_bytes");
    r.count = j.at("count");
    r.bytes = j.at("bytes");
    r.devices = j.at("devices");
    r.streams = j.at("streams");
    r.submit_mode = j.at("submit_mode");
    r.stream_start_gate = j.at("gate");
    r.frags = j.at("frags");
    r.layout = j.at("layout");
    r.copies = j.at("copies");
    r.iterations = j.at("iterations");
    r.warmup = j.at("warmup");
    r.measured = j.at("measured");
    r.validate = j.at("validate");
    r.setup_s = j.at("setup_s");
    r.notes = j.at("notes").get<std::vector<std::string>>();
    r.worker_gib_s = j.at("worker_gib_s").get<std::vector<double>>();
    r.numa = numa_from(j.at("numa"));
    if (!j.at("validated").is_null()) r.validated = j.at("validated").get<bool>();
    for (const json& s : j.at("stages")) r.stages.push_back(stage_from(s));
    if (!j.at("load").is_null()) r.load = load_from(j.at("load"));
    for (const json& d : j.at("device_io")) {
      CaseResult::DeviceIo io;
      io.device = d.at("device");
      io.why = d.at("why");
      io.bytes = d.at("bytes");
      io.expected = d.at("expected");
      io.direction = d.at("direction");
      r.device_io.push_back(io);
    }
    return r;
  });
}

std::string encode_run_info(const RunInfo& i) {
  const json j = {{"tool_version", i.tool_version}, {"backend", i.backend},
                  {"backend_library", i.backend_library}, {"runtime_version", i.runtime_version},
                  {"devices", i.devices}, {"command_line", i.command_line},
                  {"workload_text", i.workload_text}, {"workload_json", i.workload_json}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RunInfo decode_run_info(const std::string& text) {
  return reading("a run's header", [&] {
    const json j = json::parse(text);
    RunInfo i;
    i.tool_version = j.at("tool_version");
    i.backend = j.at("backend");
    i.backend_library = j.at("backend_library");
    i.runtime_version = j.at("runtime_version");
    i.devices = j.at("devices").get<std::vector<std::string>>();
    i.command_line = j.at("command_line").get<std::vector<std::string>>();
    i.workload_text = j.at("workload_text");
    i.workload_json = j.at("workload_json");
    return i;
  });
}

}  // namespace ds
