// The common columns of a result, defined once: each field's one key, which
// outputs show it, how it is read from a CaseResult (and read back by the
// cross-rank codec), how its parts combine across ranks, and its cell in the text
// table. The JSON writer, the CSV writer (header and rows), the text table's row
// and the codec all walk this table, so they cannot disagree; what is not common
// to every measurement is an extra (output/result_extra.h). How to add a column:
// docs/results.md.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// Which outputs show a column.
enum ColumnOutput : unsigned {
  kInText = 1u << 0,   // a cell of the text table's row, under its header
  kInCsv = 1u << 1,    // a CSV column (a statistic: key_min ... key_p999)
  kInJson = 1u << 2,   // a key of each JSON result
  kInCodec = 1u << 3,  // carried from rank to rank and read back there
};

// What a value is shown for: JSON's per-request figures only with --model.
struct ShowContext {
  bool workload = false;
};

using ResultParts = std::vector<const CaseResult*>;

struct Column {
  const char* key = "";
  unsigned outputs = 0;
  // Its value is a statistic in microseconds (json_forms.h stats_us): CSV spreads
  // it over key_min ... key_p999, the table shows "min / max / avg / p50 / p90".
  bool stats = false;
  // What JSON, CSV and the text row show. A discarded value leaves the JSON key out.
  Json (*value)(const CaseResult& r, const ShowContext& show) = nullptr;
  // The codec: what travels (null: `value`) and how it is read back into a result.
  // A column without read_back is derived (a bandwidth, a stage's statistics):
  // computed from the others on the far side, never carried.
  Json (*wire)(const CaseResult& r) = nullptr;
  void (*read_back)(const Json& value, CaseResult& r) = nullptr;
  // Across ranks and nodes (src/cluster): `into` starts as the first part; this
  // sets the column from every part. Null: the first part's value stands.
  void (*combine)(CaseResult& into, const ResultParts& parts) = nullptr;
  // The text row: the header cell (after the measured stage's name when
  // header_names_measured), its width (0: the last cell, unpadded) and the cell
  // (null: the value as text, a number with 3 decimals).
  const char* text_header = nullptr;
  bool header_names_measured = false;
  size_t text_width = 0;
  std::string (*text_cell)(const Json& value) = nullptr;
  // Not a field: where the extras placed here add their JSON members.
  bool extras_here = false;
  JsonPlace place = JsonPlace::kAfterNotes;

  bool in(ColumnOutput o) const { return (outputs & o) != 0; }
  // Builders for the table.
  Column in_text(const char* header, size_t width, std::string (*cell)(const Json&) = nullptr) const;
  Column combined_by(void (*rule)(CaseResult&, const ResultParts&)) const;
};

// Every column, in the order JSON and CSV write them (the text row's cells too).
const std::vector<Column>& result_columns();

// A row an extra adds to CSV (ResultExtra::csv_rows) for a stage of its own (duplex:
// a direction; load, offload: a stage alone): the result's CSV cells that hold for it
// too (the case, method, cards, streams, iterations, ...), named "<name>:<suffix>",
// `stage` as its Copy column and BW the `bytes` over its avg; the result's own
// passes' cells (copies per iteration and their mean size, Submit, Wall, StartSkew, WallBW, setup,
// retries) left out, so empty. The caller changes what else differs.
Json csv_stage_row(const CaseResult& r, const std::string& suffix, const Stage& stage, uint64_t bytes);

}  // namespace ds
