#include "output/result_codec.h"

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "output/result_schema.h"

namespace ds {

namespace {

// Key order does not matter here (the reader looks fields up by name).
using json = Json;

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
  json j = json::object();
  for (const Column& c : result_columns())
    if (c.in(kInCodec)) j[c.key] = c.wire ? c.wire(r) : c.value(r, ShowContext{});
  // Each extra as its measurement encodes it, under its key, in order.
  json extras = json::array();
  for (const auto& e : r.extras.all()) extras.push_back({{"key", e->key()}, {"value", e->encode()}});
  j[kExtrasKey] = extras;
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

CaseResult decode_result(const std::string& text) {
  return reading("a result", [&] {
    const json j = json::parse(text);
    CaseResult r;
    for (const Column& c : result_columns())
      if (c.in(kInCodec)) c.read_back(j.at(c.key), r);
    for (const json& e : j.at(kExtrasKey)) r.extras.put(decode_extra(e.at("key").get<std::string>(), e.at("value")));
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
