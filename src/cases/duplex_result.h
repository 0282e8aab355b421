// What a duplex copy result carries beyond the common columns (an extra,
// output/result_extra.h): each direction's Copy in the pass where both ran
// together, and alone, measured in the same run with the same buffers, streams
// and cards; their bandwidths, and what running both costs (the "H2D:", "D2H:"
// and "Duplex:" lines, JSON "duplex").
#pragma once

#include <cstdint>
#include <string>

#include "output/result.h"

namespace ds {

class DuplexStages : public ResultExtra {
 public:
  static constexpr const char* kKey = "duplex";
  // Per measured iteration, over the cards (the slowest card's): each direction's
  // Copy together and alone.
  Stage h2d_together, d2h_together, h2d_alone, d2h_alone;
  uint64_t h2d_bytes = 0, d2h_bytes = 0;  // per iteration, every card's
  // Each direction's block (-s; floor(-s x ratio)) and its blocks per iteration,
  // every card's: block x count is the direction's bytes.
  uint64_t h2d_block = 0, d2h_block = 0, h2d_count = 0, d2h_count = 0;
  double ratio = 1;                       // --duplex-ratio: D2H bytes per H2D byte
  // The Duplex line: a, b (alone), c, d (together), e (both directions' bytes over
  // the together pass's Copy, the result's BW) and p = e / (a + b) x 100; the
  // perfect overlap f (both directions' bytes over the longer of the two alone
  // Copies: what together would give if each direction kept its alone speed; with
  // --duplex-ratio R != 1 the directions' alone times differ and f < a + b) and
  // q = e / f x 100 (100 when together takes as long as the longer direction alone).
  double h2d_alone_gib_s = 0, d2h_alone_gib_s = 0, h2d_gib_s = 0, d2h_gib_s = 0, together_gib_s = 0;
  double percent_of_alone = 0;
  double perfect_overlap_gib_s = 0, percent_of_perfect_overlap = 0;

  // The figures from the bytes and the stages' averages; `together_gib_s` is the
  // result's BW (its bytes, both directions', over its Copy).
  void set_figures(const CaseResult& r);

  const char* key() const override { return kKey; }
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;  // H2D, D2H and Duplex lines
  // CSV: a row per direction together and alone (<name>:h2d, :d2h, :h2d_alone,
  // :d2h_alone), each its own from/to, block, count, Copy and BW.
  std::vector<Json> csv_rows(const CaseResult& r) const override;
  Json encode() const override;
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// "  H2D: Size(KB)=<block> Count=<n>  Copy(us)-(Min/Max/Avg/P50/P90)=<stats>  BW(GB/s)=<x>"
// (the together pass).
std::string format_direction_line(const std::string& dir, uint64_t block, uint64_t count, const Stage& copy,
                                  double gib_s);
// "  Duplex: H2D alone <a> GiB/s, D2H alone <b>, together H2D <c> + D2H <d> = <e> GiB/s
// (<p>% of alone H2D + D2H; <q>% of perfect overlap)".
std::string format_duplex_line(const DuplexStages& s);

// Registers DuplexStages' decoder; called at the start of the program and by tests.
void register_duplex_result();

}  // namespace ds
