#include "output/text_writer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/units.h"

namespace ds {

namespace {

constexpr size_t kFromW = 18, kToW = 18, kMethodW = 10, kSizeW = 10, kCountW = 8, kSubmitW = 40,
                 kCopyW = 44;

// Left-aligned in `width`; a cell as wide as its column or wider gets one space
// so it never runs into the next column (the one change from the user guide,
// which prints CE-MS-FORK16).
void cell(std::string& line, const std::string& text, size_t width) {
  line += text;
  line.append(text.size() >= width ? 1 : width - text.size(), ' ');
}

// A label as one line: control characters (a newline in a name or label) are written
// as \n, \r, \t or \xHH, so a row never breaks across lines.
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

std::string us(double ns) { return std::to_string(std::llround(ns / 1000.0)); }

}  // namespace

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

std::string format_workers_line(const CaseResult& r) {
  if (r.worker_gib_s.empty()) return "";
  const auto mm = std::minmax_element(r.worker_gib_s.begin(), r.worker_gib_s.end());
  char line[128];
  std::snprintf(line, sizeof line, "  Workers: min %.3f / max %.3f GiB/s per worker\n", *mm.first, *mm.second);
  return line;
}

std::string format_stages_line(const CaseResult& r) {
  if (!r.load) return "";
  const CaseResult::LoadStages& s = *r.load;
  char line[512];
  std::snprintf(line, sizeof line,
                "  Stages: disk alone %.3f GiB/s, copy alone %.3f GiB/s, pipelined %.3f GiB/s = %.1f%% of the slower "
                "stage; bottleneck: %s\n",
                s.disk_gib_s, s.copy_gib_s, s.pipelined_gib_s, s.percent_of_slower, printable(s.bottleneck).c_str());
  return line;
}

std::string format_text_block(const CaseResult& r) {
  std::string out = "[[ " + printable(r.name) + " ]] " + printable(r.brief) +
                    (r.layout.empty() ? "" : ", blocks of " + printable(r.layout)) +
                    (r.stream_start_gate ? " (gated)" : "") + "\n";
  std::string head = "  ";
  cell(head, "From", kFromW);
  cell(head, "To", kToW);
  cell(head, "Method", kMethodW);
  cell(head, "Size(KB)", kSizeW);
  cell(head, "Count", kCountW);
  cell(head, "Submit(us)-(Min/Max/Avg/P50/P90)", kSubmitW);
  cell(head, printable(r.measured) + "(us)-(Min/Max/Avg/P50/P90)", kCopyW);
  head += "BW(GB/s)\n";
  std::string row = "  ";
  cell(row, printable(r.from), kFromW);
  cell(row, printable(r.to), kToW);
  cell(row, printable(r.method), kMethodW);
  cell(row, format_kib(r.block_bytes), kSizeW);
  cell(row, std::to_string(r.count), kCountW);
  cell(row, format_stats_us(r.stage("Submit")), kSubmitW);
  cell(row, format_stats_us(r.stage(r.measured)), kCopyW);
  char bw[32];
  std::snprintf(bw, sizeof bw, "%.3f", r.bandwidth_gib_s());
  row += bw;
  row += "\n";
  return out + head + row + format_wall_line(r) + format_workers_line(r) + format_stages_line(r);
}

std::string format_kv_load_line(const CaseResult& r) {
  char line[256];
  if (r.name.rfind("aio_", 0) == 0) {  // one worker, one store: no cards to count
    std::snprintf(line, sizeof line, "  KV %s per request: %.3f ms (%s avg); %.3f ms end to end (GroupWall avg)\n",
                  r.name == "aio_dump" ? "dump" : r.name == "aio_mixed" ? "mixed epoch" : "load",
                  r.stage(r.measured).avg / 1e6, r.measured.c_str(),
                  r.stage("Wall").avg / 1e6);
    return line;
  }
  std::snprintf(line, sizeof line, "  KV %s per request: %.3f ms per card, %d card%s at once (%s avg); %.3f ms end to end (%s avg)\n",
                r.name == "aio_dump" ? "dump" : "load", r.stage(r.measured).avg / 1e6, r.devices,
                r.devices == 1 ? "" : "s", r.measured.c_str(), r.stage("Wall").avg / 1e6, "GroupWall");
  return line;
}

namespace {

// aio: `  Device vda: written 4.00 GiB of 4.00 GiB (100.0%)`, one per device (and
// per direction where a result moves both ways: aio_mixed).
std::string format_device_lines(const CaseResult& r) {
  std::string out;
  for (const CaseResult::DeviceIo& d : r.device_io) {
    const std::string verb = !d.direction.empty() ? d.direction : r.name == "aio_dump" ? "written" : "read";
    if (d.device.empty()) {
      out += std::string("  Device: not found (") + d.why + "): cannot show that the disk was " + verb + "\n";
      continue;
    }
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f", d.expected ? 100.0 * static_cast<double>(d.bytes) / static_cast<double>(d.expected) : 0.0);
    out += "  Device " + d.device + ": " + verb + " " + format_bytes(d.bytes) + " of " + format_bytes(d.expected) +
           " (" + pct + "%)\n";
  }
  return out;
}

}  // namespace

void TextWriter::begin(const RunInfo& info) {
  workload_ = !info.workload_text.empty();
  if (workload_) out_ << info.workload_text << "\n";
}

void TextWriter::add(const CaseResult& result) {
  if (!first_) out_ << "\n";
  first_ = false;
  out_ << format_text_block(result);
  if (workload_) out_ << format_kv_load_line(result);
  out_ << format_device_lines(result);
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
