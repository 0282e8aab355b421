// Fuzz target `writers`: the text, CSV and JSON writers fed hostile case names,
// labels, notes, errors and command lines. Input: NUL-separated fields (name, brief,
// from, to, method, submit mode, time label, validate, note, failing case, error,
// backend, device, command-line words...); numbers come from the input's bytes.
// Properties: JSON parses and keeps every valid UTF-8 string; CSV has the header's
// column count in every record after parsing quotes, and keeps every cell; text has
// exactly its lines (title, header, row, Wall; validation; blank), none with a
// control character.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/result.h"
#include "output/text_writer.h"

namespace {

std::string field(const std::vector<std::string>& f, size_t i) { return i < f.size() ? f[i] : std::string(); }

// RFC 4180 records; false when the text is not well-formed CSV.
bool parse_csv(const std::string& text, std::vector<std::vector<std::string>>* records) {
  std::vector<std::string> rec(1);
  size_t i = 0;
  while (i < text.size()) {
    if (text[i] == '"' && rec.back().empty()) {  // a quoted field
      ++i;
      for (;;) {
        if (i >= text.size()) return false;
        if (text[i] == '"') {
          if (i + 1 < text.size() && text[i + 1] == '"') {
            rec.back() += '"';
            i += 2;
            continue;
          }
          ++i;
          break;
        }
        rec.back() += text[i++];
      }
      if (i < text.size() && text[i] != ',' && text[i] != '\n') return false;
      continue;
    }
    const char c = text[i++];
    if (c == ',') {
      rec.emplace_back();
    } else if (c == '\n') {
      records->push_back(rec);
      rec.assign(1, std::string());
    } else if (c == '"' || c == '\r') {
      return false;  // unquoted
    } else {
      rec.back() += c;
    }
  }
  return rec.size() == 1 && rec[0].empty();  // the text ends with a newline
}

bool valid_utf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

ds::Stats stats_from(const uint8_t* data, size_t size, size_t salt) {
  ds::Stats s;
  uint64_t h = 1469598103934665603ULL ^ salt;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ULL;
  s.min = static_cast<int64_t>(h % 1000000);
  s.p50 = s.min + static_cast<int64_t>((h >> 20) % 1000);
  s.p90 = s.p50 + static_cast<int64_t>((h >> 30) % 1000);
  s.p99 = s.p90 + 1;
  s.p999 = s.p99 + 1;
  s.max = s.p999 + static_cast<int64_t>((h >> 40) % 100000);
  s.avg = static_cast<double>(s.min + s.max) / 2.0;
  s.samples = 16;
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<std::string> f = dsfuzz::split_nul(data, size);
  ds::CaseResult r;
  r.name = field(f, 0);
  r.brief = field(f, 1);
  r.from = field(f, 2);
  r.to = field(f, 3);
  r.method = field(f, 4);
  r.submit_mode = field(f, 5);
  r.measured = f.size() > 6 ? f[6] : "Copy";
  r.validate = field(f, 7);
  if (f.size() > 8) r.notes.push_back(f[8]);
  r.block_bytes = size * 4096 + 1;
  r.count = f.size();
  r.bytes = r.block_bytes * r.count;
  r.stream_start_gate = size % 2;
  r.stages = {{"Submit", stats_from(data, size, 1)}, {r.measured, stats_from(data, size, 2)},
              {"Wall", stats_from(data, size, 3)}, {"StartSkew", stats_from(data, size, 4)}};
  ds::CaseResult r2 = r;
  r2.name = field(f, 9);
  r2.brief = field(f, 10);
  const std::string fail_case = field(f, 9), error = field(f, 10);
  ds::RunInfo info;
  info.tool_version = "0";
  info.backend = field(f, 11);
  info.devices.push_back(field(f, 12));
  for (size_t i = 13; i < f.size(); ++i) info.command_line.push_back(f[i]);

  auto feed = [&](ds::ResultWriter& w) {
    w.begin(info);
    w.add(r);
    w.validation(r.name, true);
    w.add(r2);
    w.fail(fail_case, error);
    w.finish();
  };

  {  // text: title, header, row, Wall, any notes, the verdict; the validation line; a blank
     // line; the next block (no summary: the run failed)
    std::ostringstream out;
    ds::TextWriter w(out);
    feed(w);
    std::vector<std::string> lines(1);
    for (char c : out.str()) {
      if (c == '\n')
        lines.emplace_back();
      else
        lines.back() += c;
    }
    FUZZ_CHECK(lines.back().empty(), "text does not end in a newline:\n" + out.str());
    lines.pop_back();
    for (const std::string& l : lines) dsfuzz::check_one_line(l);
    size_t at = 0;
    auto block = [&] {  // one result's lines, from its title to its verdict
      FUZZ_CHECK(at + 5 <= lines.size() && lines[at].rfind("[[ ", 0) == 0, out.str());
      for (size_t i = at + 1; i < at + 4; ++i) FUZZ_CHECK(lines[i].rfind("  ", 0) == 0, out.str());
      FUZZ_CHECK(lines[at + 3].rfind("  Wall: ", 0) == 0, out.str());
      at += 4;
      for (int notes = 0; at < lines.size() && lines[at].rfind("  Note: ", 0) == 0; ++notes, ++at)
        FUZZ_CHECK(notes < 4, "more notes than there are kinds:\n" + out.str());
      FUZZ_CHECK(at < lines.size() && lines[at].rfind("  Verdict: ", 0) == 0, out.str());
      ++at;
    };
    block();
    FUZZ_CHECK(at + 2 < lines.size() && lines[at].rfind("[validation] ", 0) == 0 && lines[at + 1].empty(), out.str());
    at += 2;
    block();
    FUZZ_CHECK(at == lines.size(), "text has lines after the last block:\n" + out.str());
  }
  {  // CSV: the header, two rows, the failure
    std::ostringstream out;
    ds::CsvWriter w(out);
    feed(w);
    std::vector<std::vector<std::string>> records;
    FUZZ_CHECK(parse_csv(out.str(), &records), "CSV does not parse:\n" + out.str());
    FUZZ_CHECK(records.size() == 4, out.str());
    const size_t n = ds::csv_columns().size();
    for (const auto& rec : records) FUZZ_CHECK(rec.size() == n, out.str());
    FUZZ_CHECK(records[0] == ds::csv_columns(), out.str());
    auto cell = [&](size_t row, const std::string& column) {  // by name: columns get added
      for (size_t c = 0; c < n; ++c)
        if (ds::csv_columns()[c] == column) return records[row][c];
      FUZZ_CHECK(false, "no CSV column " + column);
      return std::string();
    };
    FUZZ_CHECK(cell(1, "name") == r.name && cell(1, "brief") == r.brief && cell(1, "from") == r.from &&
                   cell(1, "to") == r.to && cell(1, "method") == r.method &&
                   cell(1, "submit_mode") == r.submit_mode && cell(1, "time_label") == r.measured,
               out.str());
    FUZZ_CHECK(records[2][0] == r2.name, out.str());
    FUZZ_CHECK(records[3][0] == fail_case && records[3][n - 1] == error, out.str());
  }
  {  // JSON: one document that parses, with every valid UTF-8 string kept
    std::ostringstream out;
    ds::JsonWriter w(out);
    feed(w);
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(out.str());
    } catch (const nlohmann::json::exception& e) {
      FUZZ_CHECK(false, std::string("JSON does not parse: ") + e.what() + "\n" + out.str());
    }
    FUZZ_CHECK(doc["status"] == "failed" && doc["results"].size() == 2, out.str());
    if (valid_utf8(r.name)) FUZZ_CHECK(doc["results"][0]["name"] == r.name, out.str());
    if (valid_utf8(r.brief)) FUZZ_CHECK(doc["results"][0]["brief"] == r.brief, out.str());
    if (valid_utf8(error)) FUZZ_CHECK(doc["error"]["message"] == error, out.str());
    if (!info.backend.empty() && valid_utf8(info.backend)) FUZZ_CHECK(doc["backend"]["name"] == info.backend, out.str());
    for (size_t i = 0; i < info.command_line.size(); ++i)
      if (valid_utf8(info.command_line[i])) FUZZ_CHECK(doc["command_line"][i] == info.command_line[i], out.str());
  }
  return 0;
}
