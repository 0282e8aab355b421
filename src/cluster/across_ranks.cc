#include "cluster/across_ranks.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/interrupt.h"
#include "output/result_codec.h"
#include "output/result_schema.h"

namespace ds {

using json = nlohmann::json;

void CollectingWriter::validation(const std::string& case_name, bool pass) {
  for (auto it = results.rbegin(); it != results.rend(); ++it)
    if (it->name == case_name) {
      it->validated = pass;
      return;
    }
}

CaseResult combine_results(const std::vector<const CaseResult*>& parts, const CombineScope& scope) {
  if (parts.empty()) throw RunError("internal: no results to combine across ranks");
  CaseResult out = *parts.front();
  for (const CaseResult* p : parts)
    if (p->name != out.name || p->stages.size() != out.stages.size() || p->iterations != out.iterations ||
        p->extras.all().size() != out.extras.all().size())
      throw RunError("internal: the ranks measured different things (" + out.name + " vs " + p->name + ")");
  // The common fields, each by its column's rule (output/result_schema.cc).
  for (const Column& c : result_columns())
    if (c.combine) c.combine(out, parts);
  // Then each extra by its own, given the combined common fields.
  out.extras.clear();
  for (const auto& mine : parts.front()->extras.all()) {
    std::vector<const ResultExtra*> same;
    for (const CaseResult* p : parts) {
      const ResultExtra* e = p->extras.find(mine->key());
      if (!e) throw RunError("internal: the ranks measured different things (" + out.name + " " + mine->key() + ")");
      same.push_back(e);
    }
    out.extras.put(mine->combine(same, scope, out));
  }
  return out;
}

CaseResult combine_results(const std::vector<const CaseResult*>& parts, bool one_node) {
  CombineScope scope;
  scope.one_node = one_node;
  return combine_results(parts, scope);
}

std::string encode_report(const RankReport& r) {
  json j = {{"rank", r.rank}, {"node", r.node}, {"code", r.code}, {"stopped", r.stopped}, {"error", r.error}};
  // The header and each result as the codec writes them (src/output/result_codec).
  j["info"] = encode_run_info(r.info);
  j["results"] = json::array();
  for (const CaseResult& c : r.results) j["results"].push_back(encode_result(c));
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

RankReport decode_report(const std::string& bytes) {
  try {
    const json j = json::parse(bytes);
    RankReport r;
    r.rank = j.at("rank");
    r.node = j.at("node");
    r.code = j.at("code");
    r.stopped = j.at("stopped");
    r.error = j.at("error");
    r.info = decode_run_info(j.at("info").get<std::string>());
    for (const json& c : j.at("results")) r.results.push_back(decode_result(c.get<std::string>()));
    return r;
  } catch (const json::exception& e) {
    throw RunError(std::string("a rank's report could not be read: ") + e.what());
  }
}

std::vector<NodeShare> group_by_node(const std::vector<RankReport>& reports) {
  std::vector<NodeShare> nodes;
  for (const RankReport& r : reports) {
    auto it = std::find_if(nodes.begin(), nodes.end(), [&](const NodeShare& n) { return n.node == r.node; });
    if (it == nodes.end()) {
      nodes.push_back(NodeShare{r.node, {}, {}});
      it = nodes.end() - 1;
    }
    it->ranks.push_back(r.rank);
  }
  return nodes;
}

int run_across_ranks(Cluster& c, ResultWriter& out, const std::function<void(ResultWriter&)>& measure,
                     NodeLines lines, const std::function<std::string(const CaseResult&)>& label) {
  CollectingWriter mine;
  RankReport me;
  me.rank = c.rank();
  me.node = c.node();
  try {
    measure(mine);
  } catch (const Interrupted&) {
    throw;
  } catch (const ClusterTimeout&) {
    throw;  // out of step: no gather (main() aborts the job)
  } catch (const RankStopped& e) {
    me.code = 1;
    me.stopped = true;
    me.error = e.what();
  } catch (const UsageError& e) {
    me.code = 2;
    me.error = e.what();
  } catch (const std::exception& e) {
    me.code = 1;
    me.error = e.what();
  }
  const int64_t timeout = cluster_final_timeout_ns();
  if (!c.failed()) c.agree(me.code == 0, timeout, "the end of the run");
  me.info = mine.info_;
  me.results = mine.results;
  const std::vector<std::string> parts = c.gather(encode_report(me), timeout);
  if (c.rank() != 0) return me.code != 0 ? me.code : (c.failed() ? 1 : 0);

  std::vector<RankReport> reports;
  for (const std::string& p : parts) reports.push_back(decode_report(p));
  const RunInfo& info = reports.front().info;
  // The first real failure (not a rank that stopped because of it), lowest rank first.
  const RankReport* failed = nullptr;
  for (const RankReport& r : reports)
    if (r.code != 0 && (!failed || (failed->stopped && !r.stopped))) failed = &r;
  if (failed) {
    const std::string msg = "rank " + std::to_string(failed->rank) + " (node " + failed->node + "): " + failed->error;
    RunInfo head = info;
    if (!reports.front().info.tool_version.empty()) head = reports.front().info;
    if (head.tool_version.empty()) head.tool_version = DS_VERSION;
    out.begin(head);
    out.fail("", msg);
    out.finish();
    if (failed->code == 2) throw UsageError(msg);
    throw RunError(msg);
  }
  std::vector<NodeShare> nodes = group_by_node(reports);
  const size_t nresults = reports.front().results.size();
  for (const RankReport& r : reports)
    if (r.results.size() != nresults) throw RunError("internal: the ranks returned different numbers of results");
  out.begin(info);
  std::vector<std::string> labels;
  for (size_t i = 0; i < nresults; ++i) {
    std::vector<const CaseResult*> all;
    for (const RankReport& r : reports) all.push_back(&r.results[i]);
    // The cluster's: each node's first (a node's disks once), then over the nodes.
    CombineScope over_nodes;  // names that differ by node carry it, with more than one
    std::vector<const CaseResult*> node_parts;
    for (NodeShare& n : nodes) {
      std::vector<const CaseResult*> mine_parts;
      for (int rank : n.ranks) mine_parts.push_back(&reports[static_cast<size_t>(rank)].results[i]);
      CombineScope one_node;
      one_node.one_node = true;
      n.results.push_back(combine_results(mine_parts, one_node));
      if (nodes.size() > 1) over_nodes.nodes.push_back(n.node);
    }
    for (const NodeShare& n : nodes) node_parts.push_back(&n.results.back());
    CaseResult agg = combine_results(node_parts, over_nodes);
    agg.brief += "; across " + std::to_string(reports.size()) + " ranks on " + std::to_string(nodes.size()) +
                 (nodes.size() == 1 ? " node" : " nodes") + " (bytes: all ranks'; each iteration's time: the slowest rank's)";
    const std::optional<bool> validated = agg.validated;
    out.add(agg);
    if (validated) out.validation(agg.name, *validated);
    labels.push_back(label(agg));
    if (lines == NodeLines::kPerResult) {
      std::vector<NodeShare> one = nodes;
      for (NodeShare& n : one) n.results = {n.results.back()};
      out.nodes(one, {labels.back()});
    }
  }
  if (lines == NodeLines::kTogether) out.nodes(nodes, labels);
  out.finish();
  return 0;
}

}  // namespace ds
