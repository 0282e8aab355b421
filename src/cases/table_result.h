// What a copy case with a block table carries beyond the common columns (an extra,
// output/result_extra.h): the tables its sides were placed by (--block-table on the
// device side, --host-block-table on the host side), with their seed and pool, so a
// run can be repeated slot for slot (the "Block table:" line, JSON "block_table").
#pragma once

#include <cstdint>
#include <string>

#include "layout/block_table.h"
#include "measurement/paged_figure.h"
#include "output/result.h"

namespace ds {

// One side's table as the result names it; `label` empty: that side contiguous.
struct TableSide {
  std::string label;   // "random:7", "sequential", or the FILE's path
  uint64_t pool = 0;   // slots in the pool
  uint64_t blocks = 0; // logical blocks placed (the table's length)
  static TableSide of(const BlockTable& t) { return {t.label, t.pool, t.slots.size()}; }
};

class TableShape : public ResultExtra {
 public:
  static constexpr const char* kKey = "block_table";
  TableSide device, host;

  const char* key() const override { return kKey; }
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;  // the Block table line
  Json encode() const override;
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// "  Block table: device random:7, 64 blocks in a pool of 256 slots; host contiguous
// per block" (each side its table, or "contiguous per block").
std::string format_table_line(const TableShape& t);

// Puts a TableShape into `r` when either side has a table; nothing otherwise.
void put_tables(CaseResult& r, const BlockTable& device, const BlockTable& host);

// Registers TableShape's decoder; called at the start of the program and by tests.
void register_table_result();

// The Paged line's head for a case placed by these tables (the device side's when it
// has one, else the host side's): which option and table, its pool, whether the
// contiguous pass runs beside it; its figures are the measurement's to fill.
PagedFigure paged_figure_head(const BlockTable& device, const BlockTable& host, bool compared);

}  // namespace ds
