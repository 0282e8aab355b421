// Runs of dev-sandbox with --format json, read as a document: what the end-to-end
// tests check about results (From, To, Method, Size, Count, validation) without
// counting the columns of the text table. Targets that include this link
// nlohmann_json::nlohmann_json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"

namespace dstest {

using nlohmann::json;

// What the tool printed, and stdout as a JSON document (null when it is not one).
struct JsonRun : RunResult {
  json doc;

  // The first result named `name`; an empty object, and a failed expectation,
  // when there is none (so that a test reads null fields rather than crashing).
  json result(const std::string& name) const {
    if (doc.is_object() && doc.contains("results"))
      for (const json& r : doc["results"])
        if (r.value("name", "") == name) return r;
    ADD_FAILURE() << "no result named " << name << " in:\n" << out << err;
    return json::object();
  }

  // Every result's name, in order.
  std::vector<std::string> names() const {
    std::vector<std::string> v;
    if (doc.is_object() && doc.contains("results"))
      for (const json& r : doc["results"]) v.push_back(r.value("name", ""));
    return v;
  }
};

// Runs the tool with `args` and --format json; parses what it printed.
inline JsonRun run_json(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.end(), {"--format", "json"});
  JsonRun r;
  static_cast<RunResult&>(r) = run_tool(args, env);
  r.doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
  if (r.doc.is_discarded()) r.doc = nullptr;
  return r;
}

// The result named `name` validated (--validate passed) and shows these From, To,
// Method, block size (the table's Size) and Count; returned for further checks.
inline json expect_validated_result(const JsonRun& run, const std::string& name, const std::string& from,
                                    const std::string& to, const std::string& method, uint64_t block_bytes,
                                    uint64_t count) {
  json res = run.result(name);
  EXPECT_EQ(res["validated"], true) << name;
  EXPECT_EQ(res["from"], from) << name;
  EXPECT_EQ(res["to"], to) << name;
  EXPECT_EQ(res["method"], method) << name;
  EXPECT_EQ(res["block_bytes"], block_bytes) << name;
  EXPECT_EQ(res["count"], count) << name;
  return res;
}

// What a row of the text table shows besides its labels: Submit and the measured
// stage, each as min/max/avg/p50/p90, and a bandwidth above 0.
inline void expect_full_row(const json& result) {
  for (const char* stage : {"submit_us", "copy_us"})
    for (const char* stat : {"min", "max", "avg", "p50", "p90"})
      EXPECT_TRUE(result.contains(stage) && result[stage].contains(stat) && result[stage][stat].is_number())
          << stage << "." << stat << " in " << result.dump();
  EXPECT_TRUE(result.contains("bandwidth_gib_s") && result["bandwidth_gib_s"].is_number() &&
              result["bandwidth_gib_s"].get<double>() > 0.0)
      << result.dump();
}

}  // namespace dstest
