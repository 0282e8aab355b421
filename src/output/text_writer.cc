#include "output/text_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/result_schema.h"

namespace ds {

namespace {

// Cells laid out in columns: each column as wide as its widest cell plus one space
// (so no two cells ever touch) and at least its width in the user guide's layout;
// the last column is not padded. Every line's cells then start at the same offsets.
std::vector<std::string> aligned(const std::vector<std::vector<std::string>>& lines,
                                 const std::vector<size_t>& min_widths) {
  std::vector<size_t> width = min_widths;
  for (const auto& cells : lines)
    for (size_t i = 0; i + 1 < cells.size() && i < width.size(); ++i) width[i] = std::max(width[i], cells[i].size() + 1);
  std::vector<std::string> out;
  for (const auto& cells : lines) {
    std::string line = "  ";
    for (size_t i = 0; i < cells.size(); ++i) {
      line += cells[i];
      if (i + 1 < cells.size()) line.append(width[i] - cells[i].size(), ' ');
    }
    out.push_back(line);
  }
  return out;
}

std::string us(double ns) { return std::to_string(std::llround(ns / 1000.0)); }

}  // namespace

std::string printable(const std::string& text) {
  std::string out;
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x20 && c != 0x7f) {
      out += ch;
      continue;
    }
    static const char hex[] = "0123456789abcdef";
    out += c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : std::string("\\x") + hex[c >> 4] + hex[c & 15];
  }
  return out;
}

std::string format_stats_us(const Stats& s) {
  return us(static_cast<double>(s.min)) + " / " + us(static_cast<double>(s.max)) + " / " +
         us(s.avg) + " / " + us(static_cast<double>(s.p50)) + " / " +
         us(static_cast<double>(s.p90));
}

std::string format_wall_line(const CaseResult& r) {
  char bw[32];
  std::snprintf(bw, sizeof bw, "%.3f", r.wall_bandwidth_gib_s());
  return "  Wall: StartSkew(us)-(Min/Max/Avg/P50/P90)=" + format_stats_us(r.stage("StartSkew")) +
         "  GroupWall(us)-(Min/Max/Avg/P50/P90)=" + format_stats_us(r.stage("Wall")) + "  WallBW(GB/s)=" + bw +
         "\n";
}

namespace {

// A column's value as its cell reads, unless the column says otherwise: a text as
// one line, a count, a statistic in whole microseconds, a bandwidth with 3 decimals.
std::string text_cell(const Column& c, const Json& v) {
  if (c.text_cell) return c.text_cell(v);
  if (c.stats) {
    std::string t;
    for (const char* k : {"min", "max", "avg", "p50", "p90"})
      t += (t.empty() ? "" : " / ") + std::to_string(std::llround(v.at(k).get<double>()));
    return t;
  }
  if (v.is_string()) return printable(v.get<std::string>());
  if (v.is_number_unsigned()) return std::to_string(v.get<uint64_t>());
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v.get<double>());
    return b;
  }
  return printable(v.dump());
}

}  // namespace

std::string format_text_block(const CaseResult& r) {
  std::string out = "[[ " + printable(r.name) + " ]] " + printable(r.brief) +
                    (r.layout.empty() ? "" : ", blocks of " + printable(r.layout)) +
                    (r.stream_start_gate ? " (gated)" : "") + "\n";
  // The header and the row: the schema's text columns, in order.
  std::vector<std::string> head, row;
  std::vector<size_t> widths;
  for (const Column& c : result_columns()) {
    if (!c.in(kInText)) continue;
    head.push_back((c.header_names_measured ? printable(r.measured) : std::string()) + c.text_header);
    row.push_back(text_cell(c, c.value(r, ShowContext{})));
    widths.push_back(c.text_width);
  }
  const std::vector<std::string> table = aligned({head, row}, widths);
  out += table[0] + "\n" + table[1] + "\n" + format_wall_line(r);
  for (const auto& e : r.extras.all()) out += e->block_lines(r);
  return out;
}

std::string format_kv_request_line(const CaseResult& r) {
  char line[384];
  const std::string what = r.kv_request + " per request" + (r.path.empty() ? "" : " (" + r.path + ")");
  const Stats& m = r.stage(r.measured);
  const Stats& wall = r.stage("Wall");
  if (!r.kv_on_cards) {  // one store: no cards to count
    std::snprintf(line, sizeof line,
                  "  KV %s: %.3f ms (%s avg; P50 %.3f ms); %.3f ms end to end (GroupWall avg; P50 %.3f ms)\n",
                  what.c_str(), m.avg / 1e6, r.measured.c_str(), m.p50 / 1e6, wall.avg / 1e6, wall.p50 / 1e6);
    return line;
  }
  std::snprintf(line, sizeof line,
                "  KV %s: %.3f ms per card, %d card%s at once (%s avg; P50 %.3f ms); %.3f ms end to end "
                "(GroupWall avg; P50 %.3f ms)\n",
                what.c_str(), m.avg / 1e6, r.devices, r.devices == 1 ? "" : "s", r.measured.c_str(), m.p50 / 1e6,
                wall.avg / 1e6, wall.p50 / 1e6);
  return line;
}

void TextWriter::begin(const RunInfo& info) {
  workload_ = !info.workload_text.empty();
  backend_ = info.backend;
  if (workload_) out_ << info.workload_text << "\n";
}

void TextWriter::add(const CaseResult& result) {
  if (!first_) out_ << "\n";
  first_ = false;
  out_ << format_text_block(result);
  if (workload_) out_ << format_kv_request_line(result);
  for (const auto& e : result.extras.all()) out_ << e->trailing_lines(result);
  out_ << format_verdict_lines(result);
  ranked_.push_back(rank_entry(result));
  out_.flush();
}

void TextWriter::finish() {
  if (!failed_) {
    const std::vector<Ranking> rankings = rankings_of(ranked_);
    if (!rankings.empty()) out_ << "\n";
    for (const Ranking& g : rankings) {
      out_ << format_summary_line(g);
      Fastest f;
      if (fastest_of(g, backend_, &f)) out_ << format_fastest_line(f);
    }
  }
  out_.flush();
}

std::string format_verdict_lines(const CaseResult& r) {
  const Verdict v = verdict_of(r);
  std::string out;
  for (const VerdictNote& n : v.notes) out += "  Note: " + printable(n.text) + "\n";
  return out + "  Verdict: " + printable(v.text) + "\n";
}

std::string format_summary_line(const Ranking& g) {
  std::string out = "Summary (BW from " + printable(g.measured) + ", " + format_bytes(g.block_bytes) +
                    (g.layout.empty() ? " blocks" : " blocks of " + printable(g.layout)) +
                    (g.path.empty() ? "" : ", " + printable(g.path)) +
                    (g.cards > 1 ? ", " + std::to_string(g.cards) + " cards at once" : "") + "):";
  bool marked = false;
  for (size_t i = 0; i < g.entries.size(); ++i) {
    const RankEntry& e = g.entries[i];
    out += std::string(i ? "  " : " ") + std::to_string(i + 1) + ". " + printable(ranked_name(g, i)) +
           (e.noted ? "*" : "") + " " + gib_text(e.gib_s) + " GiB/s";
    if (i > 0) out += " (" + std::to_string(std::llround(percent_of_best(g, i))) + "%)";
    marked = marked || e.noted;
  }
  return out + (marked ? "  (* see its notes)\n" : "\n");
}

std::string format_fastest_line(const Fastest& f) {
  char times[32];
  std::snprintf(times, sizeof times, "%.2fx", f.times_next);
  return "  Fastest for this layout: " + printable(f.name) + " " + gib_text(f.gib_s) + " GiB/s, " +
         (f.times_next > 0 ? std::string(times) : std::string("ahead of")) + " " + printable(f.next) +
         (f.note.empty() ? "" : " (" + f.note + ")") + "\n";
}

std::string format_node_lines(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) {
  auto gib = [](double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.3f", v);
    return std::string(b);
  };
  auto with_label = [](const std::string& label) { return label.empty() ? std::string() : " " + label; };
  // Per figure (result index): each node's BW, and their median.
  std::vector<std::vector<double>> bw(labels.size());
  for (const NodeShare& n : nodes)
    for (size_t i = 0; i < labels.size() && i < n.results.size(); ++i) bw[i].push_back(n.results[i].bandwidth_gib_s());
  std::vector<double> median(labels.size(), 0.0);
  for (size_t i = 0; i < labels.size(); ++i) {
    std::vector<double> v = bw[i];
    std::sort(v.begin(), v.end());
    if (!v.empty()) median[i] = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  }
  std::string out;
  for (const NodeShare& n : nodes) {
    out += "  Node " + printable(n.node) + " (" + ranks_text(n.ranks) + "):";
    bool low = false;
    for (size_t i = 0; i < labels.size() && i < n.results.size(); ++i) {
      const double v = n.results[i].bandwidth_gib_s();
      out += std::string(i ? ", " : " ") + gib(v) + " GiB/s" + with_label(labels[i]);
      low = low || v < 0.9 * median[i];
    }
    out += low ? "  <- below 90% of the median\n" : "\n";
  }
  out += "  Nodes:";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (bw[i].empty()) continue;
    const auto mm = std::minmax_element(bw[i].begin(), bw[i].end());
    out += std::string(i ? ";" : "") + with_label(labels[i]) + " min " + gib(*mm.first) + " / median " + gib(median[i]) +
           " / max " + gib(*mm.second) + " GiB/s";
  }
  return out + " over " + std::to_string(nodes.size()) + (nodes.size() == 1 ? " node\n" : " nodes\n");
}

void TextWriter::nodes(const std::vector<NodeShare>& nodes, const std::vector<std::string>& labels) {
  out_ << format_node_lines(nodes, labels);
  out_.flush();
}

void TextWriter::validation(const std::string& case_name, bool pass) {
  out_ << "[validation] " << printable(case_name) << (pass ? " PASS" : " FAIL") << "\n";
  out_.flush();
}

}  // namespace ds
