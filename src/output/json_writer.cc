#include "output/json_writer.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "output/result_schema.h"
#include "output/verdict.h"

namespace ds {

namespace {

using json = Json;

// One result's object: the schema's JSON columns in order, each extra's members
// at its place among them.
json result_json(const CaseResult& r, bool workload) {
  json j = json::object();
  const ShowContext show{workload};
  for (const Column& c : result_columns()) {
    if (c.extras_here) {
      for (const auto& e : r.extras.all())
        if (e->json_place() == c.place) e->add_json(j, r);
      continue;
    }
    if (!c.in(kInJson)) continue;
    json v = c.value(r, show);
    if (!v.is_discarded()) j[c.key] = std::move(v);
  }
  return j;
}

// Results that answered the same question, ranked (output/verdict.h): "summary", only
// when there are such.
void add_summary(json& doc, const std::vector<CaseResult>& results, const std::string& backend) {
  std::vector<RankEntry> entries;
  for (const CaseResult& r : results) entries.push_back(rank_entry(r));
  const std::vector<Ranking> rankings = rankings_of(entries);
  if (rankings.empty()) return;
  json summary = json::array();
  for (const Ranking& g : rankings) {
    json ranking = json::array();
    for (size_t i = 0; i < g.entries.size(); ++i)
      ranking.push_back({{"name", g.entries[i].name},
                         {"method", g.entries[i].method},
                         {"bandwidth_gib_s", g.entries[i].gib_s},
                         {"percent_of_best", percent_of_best(g, i)},
                         {"noted", g.entries[i].noted}});
    summary.push_back({{"by", "bandwidth_gib_s"},
                       {"time_label", g.measured},
                       {"block_bytes", g.block_bytes},
                       {"layout", g.layout.empty() ? json(nullptr) : json(g.layout)},
                       {"path", g.path.empty() ? json(nullptr) : json(g.path)},
                       {"cards", g.cards > 0 ? json(g.cards) : json(nullptr)},
                       {"ranking", ranking}});
    // A paged layout's rankings: which method to use for it.
    Fastest f;
    if (fastest_of(g, backend, &f))
      summary.back()["fastest"] = {{"name", f.name},
                                   {"method", f.method},
                                   {"bandwidth_gib_s", f.gib_s},
                                   {"next", f.next},
                                   {"next_bandwidth_gib_s", f.next_gib_s},
                                   {"times_next", f.times_next},
                                   {"note", f.note.empty() ? json(nullptr) : json(f.note)}};
  }
  doc["summary"] = summary;
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
  if (!failed_) add_summary(doc, results_, info_ ? info_->backend : std::string());
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
