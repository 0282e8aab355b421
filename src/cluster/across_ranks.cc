#include "cluster/across_ranks.h"

#include <algorithm>
#include <functional>
#include <nlohmann/json.hpp>

#include "core/interrupt.h"
#include "core/stats.h"
#include "output/result_codec.h"

namespace ds {

using json = nlohmann::json;

void CollectingWriter::validation(const std::string& case_name, bool pass) {
  for (auto it = results.rbegin(); it != results.rend(); ++it)
    if (it->name == case_name) {
      it->validated = pass;
      return;
    }
}

namespace {

// `into`: per iteration the longest of the parts' `stage_of` (their iterations
// started together), and its stats.
void slowest_per_iteration(Stage& into, const std::vector<const CaseResult*>& parts,
                           const std::function<const Stage*(const CaseResult&)>& stage_of) {
  std::vector<int64_t> per_iteration = stage_of(*parts.front())->samples;
  for (const CaseResult* p : parts) {
    const std::vector<int64_t>& v = stage_of(*p)->samples;
    if (v.size() != per_iteration.size())
      throw RunError("internal: the ranks measured different iteration counts for " + p->name);
    for (size_t i = 0; i < v.size(); ++i) per_iteration[i] = std::max(per_iteration[i], v[i]);
  }
  into.samples = per_iteration;
  into.ns = compute_stats(per_iteration);
}

}  // namespace

CaseResult combine_results(const std::vector<const CaseResult*>& parts, bool one_node) {
  if (parts.empty()) throw RunError("internal: no results to combine across ranks");
  CaseResult out = *parts.front();
  out.count = out.bytes = out.copies = 0;
  out.devices = 0;
  out.device_io.clear();
  out.worker_gib_s.clear();
  out.setup_s = 0;
  for (const CaseResult* p : parts) {
    if (p->name != out.name || p->stages.size() != out.stages.size() || p->iterations != out.iterations)
      throw RunError("internal: the ranks measured different things (" + out.name + " vs " + p->name + ")");
    out.count += p->count;
    out.bytes += p->bytes;
    out.copies += p->copies;
    out.devices += p->devices;
    out.setup_s = std::max(out.setup_s, p->setup_s);
    for (const CaseResult::DeviceIo& d : p->device_io) {
      // Ranks on one node see the same disk's counters: one line per direction, its
      // expected bytes summed (the counters were read between barriers, aio_measure).
      auto same = std::find_if(out.device_io.begin(), out.device_io.end(), [&](const CaseResult::DeviceIo& x) {
        return one_node && !d.device.empty() && x.device == d.device && x.direction == d.direction;
      });
      if (same == out.device_io.end()) {
        out.device_io.push_back(d);
      } else {
        same->expected += d.expected;
        same->bytes = std::max(same->bytes, d.bytes);
      }
    }
    out.worker_gib_s.insert(out.worker_gib_s.end(), p->worker_gib_s.begin(), p->worker_gib_s.end());
    if (p != parts.front()) {  // every part's workers and shared parts, in part order
      out.numa.workers.insert(out.numa.workers.end(), p->numa.workers.begin(), p->numa.workers.end());
      out.numa.shared.insert(out.numa.shared.end(), p->numa.shared.begin(), p->numa.shared.end());
      if (out.numa.mode.empty()) out.numa.mode = p->numa.mode;
    }
    for (const std::string& n : p->notes)
      if (std::find(out.notes.begin(), out.notes.end(), n) == out.notes.end()) out.notes.push_back(n);
    if (p->validated && out.validated) out.validated = *out.validated && *p->validated;
    if (!p->validated) out.validated.reset();
  }
  for (size_t s = 0; s < out.stages.size(); ++s)
    slowest_per_iteration(out.stages[s], parts, [s](const CaseResult& p) { return &p.stages[s]; });
  if (out.load) {
    // load's stages alone: as the pipelined passes (bytes summed, each round's
    // time the slowest part's); the busy times: every card's of every part.
    CaseResult::LoadStages& st = *out.load;
    st.read_busy_samples.clear();
    st.copy_busy_samples.clear();
    for (const CaseResult* p : parts)
      if (!p->load) throw RunError("internal: the ranks measured different things (" + out.name + " stages)");
    slowest_per_iteration(st.disk_alone, parts, [](const CaseResult& q) { return &q.load->disk_alone; });
    slowest_per_iteration(st.copy_alone, parts, [](const CaseResult& q) { return &q.load->copy_alone; });
    for (const CaseResult* p : parts) {
      st.read_busy_samples.insert(st.read_busy_samples.end(), p->load->read_busy_samples.begin(),
                                  p->load->read_busy_samples.end());
      st.copy_busy_samples.insert(st.copy_busy_samples.end(), p->load->copy_busy_samples.begin(),
                                  p->load->copy_busy_samples.end());
    }
    st.read_busy = compute_stats(st.read_busy_samples);
    st.copy_busy = compute_stats(st.copy_busy_samples);
    out.set_load_figures();
  }
  return out;
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
    std::vector<CaseResult> per_node;
    for (NodeShare& n : nodes) {
      std::vector<const CaseResult*> mine_parts;
      for (int rank : n.ranks) mine_parts.push_back(&reports[static_cast<size_t>(rank)].results[i]);
      n.results.push_back(combine_results(mine_parts, true));
      per_node.push_back(n.results.back());
      if (nodes.size() > 1)
        for (CaseResult::DeviceIo& d : per_node.back().device_io)
          if (!d.device.empty()) d.device = n.node + ":" + d.device;
    }
    std::vector<const CaseResult*> node_parts;
    for (const CaseResult& r : per_node) node_parts.push_back(&r);
    CaseResult agg = combine_results(node_parts, false);
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
