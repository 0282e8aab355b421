// The user guide's text layout: a title line, a header and a row per case, in
// columns at least as wide as the guide's and as wide as their widest cell plus one
// space; after each block what its figures answer, and at the end how the results
// of one run rank.
#pragma once

#include <ostream>
#include <string>

#include "output/result.h"
#include "output/verdict.h"

namespace ds {

// A label as one line: control characters (a newline in a name or label) are written
// as \n, \r, \t or \xHH, so a row never breaks across lines.
std::string printable(const std::string& text);

// "min / max / avg / p50 / p90" in whole microseconds.
std::string format_stats_us(const Stats& s);

// The line after a row, in UCM's format (its sweep scripts parse it):
// "  Wall: StartSkew(us)-(...)=a / b / c / d / e  GroupWall(us)-(...)=...  WallBW(GB/s)=x.xxx".
// It carries no From/To label, so the last field of the row naming ::device::all stays BW.
std::string format_wall_line(const CaseResult& r);

// Title (" (gated)" after it when the streams were held at their start), header and row
// (the schema's text columns, output/result_schema.h), the Wall line, then each
// extra's block lines, each line ending in '\n'. TextWriter::add prints it, the
// --model line, then each extra's trailing lines.
std::string format_text_block(const CaseResult& r);
// With --model, after a result's Wall line: "  KV <kv_request> per request (<path>): <ms> ms
// per card, <d> cards at once (Copy avg; P50 <ms> ms); <ms> ms end to end (GroupWall avg; P50
// <ms> ms)" (the P50s: what a typical iteration took, the figure the spread notes say to
// compare); a result not on cards (kv_on_cards false) says "  KV <kv_request> per request
// (<path>): <ms> ms (<stage> avg; P50 <ms> ms); ...".
// No parentheses when path is empty.
std::string format_kv_request_line(const CaseResult& r);

// Across ranks, one line per node, "  Node <name> (ranks a-b): <x> GiB/s <label>, <y> GiB/s <label>",
// marked "  <- below 90% of the median" when any of its figures is, then
// "  Nodes: <label> min x / median y / max z GiB/s; <label> ..." over the nodes.
std::string format_node_lines(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels);

// After a result's lines: "  Note: <text>" per note of its verdict, then
// "  Verdict: <text>" (output/verdict.h). Neither names a From/To label.
std::string format_verdict_lines(const CaseResult& r);

// "Summary (BW from Copy, 4.00 KiB blocks, host memory -> device): 1. a 54.8 GiB/s  2. b 41.2
// GiB/s (-25%)" (the path where the ranking has one, output/verdict.h), with
// "*" after a result whose notes say its figure may not hold, and then
// "  (* see its notes)".
std::string format_summary_line(const Ranking& ranking);
// After a ranking of paged results (fastest_of): "  Fastest for this layout:
// host_to_device_batch_ce 41.2 GiB/s, 1.31x host_to_device_ce_multi_stream", then the
// note in parentheses (on sim).
std::string format_fastest_line(const Fastest& f);

class TextWriter : public ResultWriter {
 public:
  explicit TextWriter(std::ostream& out) : out_(out) {}
  void begin(const RunInfo& info) override;
  void add(const CaseResult& result) override;
  void validation(const std::string& case_name, bool pass) override;
  // Errors go to stderr; a failed run gets no summary.
  void fail(const std::string&, const std::string&) override { failed_ = true; }
  void nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) override;
  // The summary lines, when results answered the same question.
  void finish() override;

 private:
  std::ostream& out_;
  bool first_ = true;
  bool workload_ = false;
  bool failed_ = false;
  std::string backend_;  // RunInfo's, for the fastest line's note
  std::vector<RankEntry> ranked_;
};

}  // namespace ds
