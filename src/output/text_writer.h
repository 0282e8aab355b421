// The user guide's text layout: a title line, a header and a row per case, with
// fixed column widths; a cell as wide as its column gets one space.
#pragma once

#include <ostream>
#include <string>

#include "output/result.h"

namespace ds {

// "min / max / avg / p50 / p90" in whole microseconds.
std::string format_stats_us(const Stats& s);

// The line after a row, in UCM's format (its sweep scripts parse it):
// "  Wall: StartSkew(us)-(...)=a / b / c / d / e  GroupWall(us)-(...)=...  WallBW(GB/s)=x.xxx".
// It carries no From/To label, so the last field of the row naming ::device::all stays BW.
std::string format_wall_line(const CaseResult& r);
// aio --workers > 1: `  Workers: min X / max Y GiB/s per worker`; else "".
std::string format_workers_line(const CaseResult& r);
// load: "  Stages: disk alone X GiB/s, copy alone Y GiB/s, pipelined Z GiB/s = P% of the slower
// stage; bottleneck: disk|copy|neither (overlap lost)"; "" for other results.
std::string format_stages_line(const CaseResult& r);

// Title (" (gated)" after it when the streams were held at their start), header, row and
// the Wall line of one case, each line ending in '\n'.
std::string format_text_block(const CaseResult& r);
// With --model, after a result's Wall line: "  KV load per request: <ms> ms per card, <d> cards
// at once (Copy avg); <ms> ms end to end (GroupWall avg)" (aio's dump says "KV dump").
std::string format_kv_load_line(const CaseResult& r);

// Across ranks, one line per node, "  Node <name> (ranks a-b): <x> GiB/s dump, <y> GiB/s load",
// marked "  <- below 90% of the median" when any of its figures is, then
// "  Nodes: dump min x / median y / max z GiB/s; load ..." over the nodes.
std::string format_node_lines(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels);

class TextWriter : public ResultWriter {
 public:
  explicit TextWriter(std::ostream& out) : out_(out) {}
  void begin(const RunInfo& info) override;
  void add(const CaseResult& result) override;
  void validation(const std::string& case_name, bool pass) override;
  void fail(const std::string&, const std::string&) override {}  // errors go to stderr
  void nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) override;
  void finish() override { out_.flush(); }

 private:
  std::ostream& out_;
  bool first_ = true;
  bool workload_ = false;
};

}  // namespace ds
