#include "output/csv_writer.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "output/json_forms.h"
#include "output/result_schema.h"

namespace ds {

namespace {

std::string num(double v, const char* fmt) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// A column's value as CSV cells: a statistic over its seven, microseconds with
// three decimals (as JSON, which has them unrounded); a number with six; null empty.
void add_cells(std::vector<std::string>& row, const Column& c, const Json& v) {
  if (c.stats) {
    for (const char* k : stats_us_keys()) row.push_back(num(v.at(k).get<double>(), "%.3f"));
    return;
  }
  if (v.is_null())
    row.push_back("");
  else if (v.is_string())
    row.push_back(v.get<std::string>());
  else if (v.is_boolean())
    row.push_back(v.get<bool>() ? "true" : "false");
  else if (v.is_number_unsigned())
    row.push_back(std::to_string(v.get<uint64_t>()));
  else if (v.is_number_integer())
    row.push_back(std::to_string(v.get<int64_t>()));
  else if (v.is_number_float())
    row.push_back(num(v.get<double>(), "%.6f"));
  else
    row.push_back(v.dump());
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
    std::vector<std::string> c;
    for (const Column& col : result_columns()) {
      if (!col.in(kInCsv)) continue;
      if (!col.stats) {
        c.push_back(col.key);
        continue;
      }
      for (const char* s : stats_us_keys()) c.push_back(std::string(col.key) + "_" + s);
    }
    c.push_back("error");  // a failed run's last line: the case and the reason
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
  std::vector<std::string> row;
  for (const Column& c : result_columns())
    if (c.in(kInCsv)) add_cells(row, c, c.value(r, ShowContext{}));
  row.push_back("");  // error: none
  write_row(out_, row);
  // The rows an extra adds (a duplex result's directions): the columns they hold.
  for (const auto& extra : r.extras.all())
    for (const Json& sub : extra->csv_rows(r)) {
      std::vector<std::string> cells;
      for (const Column& c : result_columns()) {
        if (!c.in(kInCsv)) continue;
        if (sub.contains(c.key))
          add_cells(cells, c, sub.at(c.key));
        else
          cells.insert(cells.end(), c.stats ? stats_us_keys().size() : 1, std::string());
      }
      cells.push_back("");  // error: none
      write_row(out_, cells);
    }
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
