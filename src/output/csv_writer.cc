#include "output/csv_writer.h"

#include <cstdio>

namespace ds {

namespace {

std::string num(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// Microseconds with nanosecond resolution, as in JSON.
void add_stats(std::vector<std::string>& row, const Stats& s) {
  for (double ns : {static_cast<double>(s.min), static_cast<double>(s.max), s.avg,
                    static_cast<double>(s.p50), static_cast<double>(s.p90), static_cast<double>(s.p99),
                    static_cast<double>(s.p999)})
    row.push_back(num(ns / 1000.0, "%.3f"));
}

void write_row(std::ostream& out, const std::vector<std::string>& cells) {
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i) out << ',';
    out << csv_field(cells[i]);
  }
  out << "\n";  // LF: what shell tools and spreadsheets both read
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string q = "\"";
  for (char c : text) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

const std::vector<std::string>& csv_columns() {
  static const std::vector<std::string> cols = [] {
    std::vector<std::string> c = {"name",   "brief",      "from",       "to",
                                  "method", "block_bytes", "count",      "devices",
                                  "streams", "frags",     "layout",     "copies_per_iteration",
                                  "iterations", "warmup",
                                  "submit_mode", "stream_start_gate", "time_label"};
    for (const char* t : {"submit_us", "copy_us", "wall_us", "start_skew_us"})
      for (const char* s : {"min", "max", "avg", "p50", "p90", "p99", "p999"})
        c.push_back(std::string(t) + "_" + s);
    for (const char* f : {"bandwidth_gib_s", "bandwidth_gb_s", "wall_bandwidth_gib_s",
                          "validated", "setup_s", "error"})
      c.push_back(f);
    return c;
  }();
  return cols;
}

void CsvWriter::header() {
  if (header_done_) return;
  header_done_ = true;
  write_row(out_, csv_columns());
}

void CsvWriter::begin(const RunInfo&) { header(); }

void CsvWriter::add(const CaseResult& r) {
  header();
  std::vector<std::string> row = {r.name,
                                  r.brief,
                                  r.from,
                                  r.to,
                                  r.method,
                                  std::to_string(r.block_bytes),
                                  std::to_string(r.count),
                                  std::to_string(r.devices),
                                  std::to_string(r.streams),
                                  std::to_string(r.frags),
                                  r.layout,  // --block-layout / --model: the fragments of a block, else empty
                                  std::to_string(r.copies),
                                  std::to_string(r.iterations),
                                  std::to_string(r.warmup),
                                  r.submit_mode,
                                  r.stream_start_gate ? "true" : "false",
                                  r.measured};
  add_stats(row, r.stage("Submit"));
  add_stats(row, r.stage(r.measured));
  add_stats(row, r.stage("Wall"));
  add_stats(row, r.stage("StartSkew"));
  row.push_back(num(r.bandwidth_gib_s(), "%.6f"));
  row.push_back(num(r.bandwidth_gb_s(), "%.6f"));
  row.push_back(num(r.wall_bandwidth_gib_s(), "%.6f"));
  row.push_back(r.validated ? (*r.validated ? "true" : "false") : "");
  row.push_back(num(r.setup_s, "%.6f"));
  row.push_back("");
  write_row(out_, row);
  out_.flush();
}

void CsvWriter::fail(const std::string& case_name, const std::string& error) {
  if (failed_) return;
  failed_ = true;
  header();
  std::vector<std::string> row(csv_columns().size());
  row.front() = case_name;
  row.back() = error;
  write_row(out_, row);
}

void CsvWriter::finish() {
  header();  // a run with no result still yields the header
  out_.flush();
}

}  // namespace ds
