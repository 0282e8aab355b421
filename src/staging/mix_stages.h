// What a load with offloads beside it (`load --offload-ratio R`) carries beyond the
// common columns (an extra, output/result_extra.h): each direction's pipelined pass
// in the pass where both ran together and alone, measured in the same run with the
// same sides (regions, staging buffers, engines, files) on the same cards; their
// busy times; the worker's CPU time in the together pass; what running both costs
// and which shared resource fell short (the "Load:", "Offload:", "Busy:" and "Mix:"
// lines, JSON "mix", CSV a row per direction together and alone).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

// One direction of the mix (load, or offload).
struct MixDirection {
  uint64_t bytes = 0;        // per round, every card's
  uint64_t block_bytes = 0;  // one counted unit, as the row's Size (a block; with -f or --model a fragment or task)
  uint64_t count = 0;        // units per round, every card's: the row's Count is load's + offload's
  // Its own pipelined pass, first submission to last completion, per measured
  // round the slowest card's: in the together pass, and alone.
  Stage together, alone;
  // Every card's of every measured round: time with >= 1 read or write, resp.
  // copy, in flight, together and alone.
  Stage io_busy_together, io_busy_alone, copy_busy_together, copy_busy_alone;
  double gib_s = 0, alone_gib_s = 0;  // bytes over together's, resp. alone's, avg
};

// The verdict's thresholds (docs/load.md "Load and offload together"): together
// keeps each direction at >= 90% of its alone bandwidth: nothing fell short; else
// the host's CPUs when the workers' CPU time in the together pass fills >= 90% of
// (its wall x the CPUs they may run on); else the disk or the copy, whichever's
// busy time grew more from alone to together.
constexpr double kMixKeptFraction = 0.90;
constexpr double kMixCpuFraction = 0.90;

struct MixVerdictInput {
  double load_alone_gib_s, offload_alone_gib_s, load_gib_s, offload_gib_s;
  double cpu_share;     // CPU time / (together wall x CPUs), 0..(about) 1
  double disk_stretch;  // (load + offload io busy together) / (the same alone)
  double copy_stretch;  // (load + offload copy busy together) / (the same alone)
};
// "none", "host CPUs", "disk" or "copy" (a tie: disk).
std::string mix_verdict(const MixVerdictInput& in);

class MixStages : public ResultExtra {
 public:
  static constexpr const char* kKey = "mix";
  MixDirection load, offload;
  double ratio_asked = 0;  // --offload-ratio
  double ratio = 0;        // offload bytes / load bytes, as run (whole blocks)
  // Per measured round: every card's CPU time (its worker process, every thread,
  // user and system) over the together pass; the CPUs those workers may run on.
  Stage cpu;
  int cpus = 1;
  // The Mix line: a, b (alone), c, d (together), e (both directions' bytes over the
  // together pass, the result's BW), p = e / (a + b) x 100; the Busy line; the verdict.
  double together_gib_s = 0, percent_of_alone = 0;
  double cpu_share = 0, disk_stretch = 0, copy_stretch = 0;
  std::string short_of;

  // The figures from the bytes and the stages' averages; `together_gib_s` is the
  // result's BW; cpu_share over the result's measured (together) avg.
  void set_figures(const CaseResult& r);
  void set_verdict();

  const char* key() const override { return kKey; }
  JsonPlace json_place() const override { return JsonPlace::kAfterNuma; }
  void add_json(Json& result, const CaseResult& r) const override;
  std::string block_lines(const CaseResult& r) const override;
  // CSV: a row per direction together and alone (<name>:load, :offload,
  // :load_alone, :offload_alone), each its own from/to, block, count, IO+Copy, BW.
  std::vector<Json> csv_rows(const CaseResult& r) const override;
  Json encode() const override;
  // Across ranks: each direction's passes per round the slowest part's, busy times
  // every part's, bytes and counts summed; the CPU share the highest part's (each
  // rank its own host's CPUs); the figures and the verdict again.
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// "  Mix: load alone <a> GiB/s, offload alone <b>, together load <c> + offload <d> =
// <e> GiB/s (<p>% of a + b); short: <disk|copy|host CPUs|none>".
std::string format_mix_line(const MixStages& s);

// Registers MixStages' decoder (called by register_staged_results()).
void register_mix_result();

}  // namespace ds
