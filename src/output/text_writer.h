// The user guide's text layout: a title line, a header and a row per case, with
// fixed column widths; a cell as wide as its column gets one space.
#pragma once

#include <ostream>
#include <string>

#include "output/result.h"

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
// With --model, after a result's Wall line: "  KV <kv_request> per request: <ms> ms per card,
// <d> cards at once (Copy avg); <ms> ms end to end (GroupWall avg)"; a result not on cards
// (kv_on_cards false) says "  KV <kv_request> per request: <ms> ms (<stage> avg); ...".
std::string format_kv_request_line(const CaseResult& r);

// Across ranks, one line per node, "  Node <name> (ranks a-b): <x> GiB/s <label>, <y> GiB/s <label>",
// marked "  <- below 90% of the median" when any of its figures is, then
// "  Nodes: <label> min x / median y / max z GiB/s; <label> ..." over the nodes.
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
