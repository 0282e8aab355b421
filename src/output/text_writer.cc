#include "output/text_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "output/result_schema.h"

namespace ds {

namespace {

// Left-aligned in `width`; a cell as wide as its column or wider gets one space
// so it never runs into the next column (the one change from the user guide,
// which prints CE-MS-FORK16).
void cell(std::string& line, const std::string& text, size_t width) {
  line += text;
  line.append(text.size() >= width ? 1 : width - text.size(), ' ');
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
  std::string head = "  ", row = "  ";
  for (const Column& c : result_columns()) {
    if (!c.in(kInText)) continue;
    const std::string title = (c.header_names_measured ? printable(r.measured) : std::string()) + c.text_header;
    const std::string value = text_cell(c, c.value(r, ShowContext{}));
    if (c.text_width == 0) {  // the last cell
      head += title;
      row += value;
      continue;
    }
    cell(head, title, c.text_width);
    cell(row, value, c.text_width);
  }
  out += head + "\n" + row + "\n" + format_wall_line(r);
  for (const auto& e : r.extras.all()) out += e->block_lines(r);
  return out;
}

std::string format_kv_request_line(const CaseResult& r) {
  char line[256];
  if (!r.kv_on_cards) {  // one store: no cards to count
    std::snprintf(line, sizeof line, "  KV %s per request: %.3f ms (%s avg); %.3f ms end to end (GroupWall avg)\n",
                  r.kv_request.c_str(), r.stage(r.measured).avg / 1e6, r.measured.c_str(), r.stage("Wall").avg / 1e6);
    return line;
  }
  std::snprintf(line, sizeof line, "  KV %s per request: %.3f ms per card, %d card%s at once (%s avg); %.3f ms end to end (%s avg)\n",
                r.kv_request.c_str(), r.stage(r.measured).avg / 1e6, r.devices, r.devices == 1 ? "" : "s",
                r.measured.c_str(), r.stage("Wall").avg / 1e6, "GroupWall");
  return line;
}

void TextWriter::begin(const RunInfo& info) {
  workload_ = !info.workload_text.empty();
  if (workload_) out_ << info.workload_text << "\n";
}

void TextWriter::add(const CaseResult& result) {
  if (!first_) out_ << "\n";
  first_ = false;
  out_ << format_text_block(result);
  if (workload_) out_ << format_kv_request_line(result);
  for (const auto& e : result.extras.all()) out_ << e->trailing_lines(result);
  out_.flush();
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
