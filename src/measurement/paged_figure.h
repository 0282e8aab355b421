// What a result whose device side is a paged pool (--block-table) carries beyond the
// common columns (an extra, output/result_extra.h): how its chunks lie (the table,
// the pool), and with --compare-contiguous the same bytes measured in the same run
// with the blocks contiguous (sequential slots of the same pool, the same engine,
// staging, streams and cards), as a pass of its own. The chunk count and their mean
// size come from the result's own copies per iteration and bytes. The "Paged:" line,
// JSON "paged", a CSV row "<name>:contiguous". load and offload report it; a copy
// case with a block table can report the same; a duplex case also each direction's
// (a line, JSON paged.h2d / paged.d2h, CSV rows "<name>:h2d_contiguous", ...).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// One direction of a duplex result (H2D, D2H): its own chunks and bytes per
// iteration (every card's), its Copy in the paged pass of both directions together,
// and with --compare-contiguous in the contiguous pass (the same, blocks at
// sequential slots). Its line: "  Paged H2D: <n> chunks of <mean> B, <bw> GiB/s =
// <p>% of contiguous".
struct PagedDirection {
  std::string name;  // "H2D", "D2H"
  uint64_t copies = 0, bytes = 0;
  Stage paged, contiguous;
  double gib_s() const;
  double contiguous_gib_s() const;
  double percent_of_contiguous() const;  // 0 when the contiguous pass has no time
};

class PagedFigure : public ResultExtra {
 public:
  static constexpr const char* kKey = "paged";
  std::string table;  // the --block-table label: "random:7", "sequential", a file
  std::string option = "--block-table";  // the option that gave it (copy: --host-block-table for a host side alone)
  uint64_t pool_blocks = 0;
  bool compared = false;  // --compare-contiguous: `contiguous` was measured
  Stage contiguous;       // per measured iteration (the slowest card's), "Contiguous"
  // A duplex result with --compare-contiguous: each direction's own (the result's
  // own figures, and `contiguous`, are both directions' together).
  std::vector<PagedDirection> directions;

  // The contiguous pass's bandwidth (the result's bytes over its avg) and the
  // result's as a percentage of it; 0 when not compared.
  double contiguous_gib_s(const CaseResult& r) const;
  double percent_of_contiguous(const CaseResult& r) const;

  const char* key() const override { return kKey; }
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;  // the Paged line
  // With --compare-contiguous: a row "<name>:contiguous", time_label Contiguous.
  std::vector<Json> csv_rows(const CaseResult& r) const override;
  Json encode() const override;
  // The contiguous pass per iteration the slowest part's, as the result's own.
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// A mean chunk size in bytes as the result lines print it: one decimal, none when
// it is a whole number ("4096", "2730.7").
std::string format_chunk_bytes(double bytes);

// "  Paged: <n> chunks of <mean> B, <bw> GiB/s = <p>% of contiguous" (n: the
// result's copies per iteration, mean: its bytes over them, bw: its bandwidth, p:
// that over the contiguous pass's x 100); not compared: "  Paged: <n> chunks of
// <mean> B, <bw> GiB/s (<option> <table>, a <P>-block pool)".
std::string format_paged_line(const PagedFigure& f, const CaseResult& r);
// A duplex direction's: "  Paged H2D: <n> chunks of <mean> B, <bw> GiB/s = <p>% of contiguous".
std::string format_paged_direction_line(const PagedDirection& d);

// Registers PagedFigure's decoder; called at the start of the program and by tests.
void register_paged_result();

}  // namespace ds
