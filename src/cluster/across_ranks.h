// A command across the ranks of a parallel job (docs/cluster.md; the rules:
// docs/measurement.md "Across ranks"): every rank measures on its own node into
// a collecting writer; rank 0 writes the cluster's aggregate of each result,
// then every node's share. A case runner adopts it with two calls: set
// LoopShape::cluster = &cluster() on its timed loops (iterations start together
// on every rank), and run its measurement through run_across_ranks().
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cluster/cluster.h"
#include "output/result.h"

namespace ds {

// What a rank's measurement writes, kept for the gather.
class CollectingWriter : public ResultWriter {
 public:
  void begin(const RunInfo& info) override {
    info_ = info;
    begun = true;
  }
  void add(const CaseResult& result) override { results.push_back(result); }
  void validation(const std::string& case_name, bool pass) override;
  void fail(const std::string&, const std::string&) override {}
  void finish() override {}
  RunInfo info_;
  bool begun = false;
  std::vector<CaseResult> results;
};

// The same result from several ranks (or nodes), combined as copy combines its
// cards: each common field by its column's rule (output/result_schema.cc: Count,
// bytes, copies and devices summed; per measured iteration each stage's longest
// over the parts, as the iterations started together, so the bandwidth is all
// parts' bytes over the slowest part's time, iteration by iteration; validated
// only when every part was; every note once), then each extra by its own
// (output/result_extra.h) under `scope` (one node: what the parts name alike is one
// thing; across nodes: the parts' node names). RunError when the parts did not
// measure the same thing (name, iterations, stages, extras).
CaseResult combine_results(const std::vector<const CaseResult*>& parts, const CombineScope& scope);
// The same, `one_node` as the scope's, without node names.
CaseResult combine_results(const std::vector<const CaseResult*>& parts, bool one_node);

// A rank's report, as sent to rank 0 (JSON text), and back.
struct RankReport {
  int rank = 0;
  std::string node;
  int code = 0;          // 0, 1 (run failure), 2 (usage error)
  bool stopped = false;  // it stopped because another rank failed
  std::string error;
  RunInfo info;
  std::vector<CaseResult> results;
};
std::string encode_report(const RankReport& r);
RankReport decode_report(const std::string& bytes);

// The nodes of the job, in the order of their first rank, each with its ranks.
std::vector<NodeShare> group_by_node(const std::vector<RankReport>& reports);

enum class NodeLines {
  kTogether,   // one line per node after all results, naming each (by `label`)
  kPerResult,  // after each result (copy: one figure per case)
};

// Runs `measure` on this rank (it calls writer.begin() and adds its results), then
// agrees with every rank and gathers. Rank 0 writes the aggregate to `out`
// (NodeLines says where the node lines go; `label` names a result on a node's
// line) and returns 0; when any rank failed, it records and rethrows the first
// real failure as "rank R (node N): reason" (UsageError stays one). Other ranks
// write nothing and return 0, or 1 when the run failed. Interrupted passes
// through without any communication.
int run_across_ranks(Cluster& c, ResultWriter& out, const std::function<void(ResultWriter&)>& measure,
                     NodeLines lines, const std::function<std::string(const CaseResult&)>& label);

}  // namespace ds
