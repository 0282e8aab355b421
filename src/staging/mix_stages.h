// What a load with offloads beside it (`load --offload-ratio R`) carries beyond the
// common columns (an extra, output/result_extra.h): each direction's pipelined pass
// in the pass where both ran together and alone, measured in the same run with the
// same sides (regions, staging buffers, engines, files) on the same cards; their
// busy times; the worker's CPU time in the together pass; what running both costs
// and which shared resource fell short (the "Load:", "Offload:", "Busy:" and "Mix:"
// lines, with --block-table the "Tables:" line; JSON "mix", CSV a row per direction
// together and alone).
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
  // Every card's of every measured round: its busy times in the together pass up to
  // the first direction's end (the overlap, both running; to within one look).
  Stage io_busy_overlap, copy_busy_overlap;
  double gib_s = 0, alone_gib_s = 0;  // bytes over together's, resp. alone's, avg
  // Over the overlap O (MixStages::overlap), from the passes' averages, the part of
  // its together pass after O (the other direction done) taken at its alone speed:
  // its speed as a fraction of its alone speed, kept = 1 - (together - alone) / O
  // (>= 0; the direction that ended first: alone / together), and the fraction of its
  // work done in O, work = 1 - (together - O) / alone (0..1; the first: 1).
  double kept = 0, work_in_overlap = 0;
  // With --block-table: where its blocks lie in its card's paged pool, its own table
  // (the load's as given, the offload's of the same kind for its own blocks) and pool.
  std::string table;  // the label: "random:7", "sequential"; empty: contiguous
  uint64_t pool_blocks = 0;
};

// The verdict's thresholds (docs/load.md "Load and offload together"), all over the
// overlap (both directions running): each direction kept at >= 90% of its alone
// speed: nothing fell short; else the host's CPUs when the workers' CPU time in the
// overlap, their transfer loops' own left out, fills >= 90% of the CPU time the loops
// left (mix_cpu_share); else the disk or
// the copy, whichever's busy time in the overlap grew more from its time alone for
// the same work.
constexpr double kMixKeptFraction = 0.90;
constexpr double kMixCpuFraction = 0.90;

// The share of the CPU time that the transfer loops' threads left which the rest of
// the workers' threads used: (cpu - loops) / (span x cpus - loops), all CPU times
// over `span` ns on `cpus` CPUs. A loop thread on a card spins looking for its copies'
// completions (aio/io_loop.h look_nap_rule): its CPU is the tool's polling, not what
// the copies, the I/O threads and the kernel's work for them need; the CPUs those get
// are what is left. 0 when nothing else ran; 1 when the loops left no CPU time and
// something else ran.
double mix_cpu_share(double cpu_ns, double loop_cpu_ns, double span_ns, double cpus);

// CPU times read at one instant in a card's worker: its process's, and its two
// transfer loops' threads' (CLOCK_THREAD_CPUTIME_ID) summed.
struct MixCpuMark {
  int64_t process_ns = 0, loops_ns = 0;
};
// One direction's pipelined pass in a round's pass, as the worker saw it.
struct MixSideRun {
  bool ran = false;
  int64_t start_ns = 0;      // its first submission (monotonic)
  bool ended_first = false;  // its end was the first direction's
  MixCpuMark at_start;       // read at its loop's start
  MixCpuMark at_first_end;   // read at its end, when it ended first
};
struct MixOverlapCpu {
  int64_t overlap_ns = 0, cpu_ns = 0, loop_cpu_ns = 0;
};
// The overlap (from the later side's first submission to `first_end_ns`) and the CPU
// times over it: from the later side's marks at its start to the first-ended side's
// at its end. One side alone: its pass.
MixOverlapCpu mix_overlap_cpu(const MixSideRun& load, const MixSideRun& offload, int64_t first_end_ns);

struct MixVerdictInput {
  double load_kept, offload_kept;  // MixDirection::kept
  double cpu_share;     // mix_cpu_share over the overlap, 0..(about) 1
  double disk_stretch;  // (load + offload io busy in the overlap) / (the same alone x work_in_overlap)
  double copy_stretch;  // (load + offload copy busy in the overlap) / (the same alone x work_in_overlap)
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
  // user and system) over the together pass, and its two transfer loops' threads'
  // (in it); the CPUs those workers may run on: their affinities' union, capped by
  // the cgroup's CPU quota (exact: 1.5), and which bound applied ("affinity", "cgroup quota").
  Stage cpu, loop_cpu;
  double cpus = 1;
  std::string cpus_bound = "affinity";
  // Per measured round, the slowest card's overlap in the together pass: from the
  // later of the two directions' first submissions to the first direction's end;
  // every card's CPU time over it (from the later side's loop start to that end), and
  // its loops' threads', summed.
  Stage overlap, cpu_overlap, loop_cpu_overlap;
  // The Mix line: a, b (alone), c, d (together), e (both directions' bytes over the
  // together pass, the result's BW); the perfect overlap f (both directions' bytes
  // over the longer of the two alone passes: what together would give if each kept
  // its alone speed) and q = e / f x 100; p = e / (a + b) x 100 (JSON only: below
  // 100 even at a perfect overlap when the directions' alone passes differ).
  double together_gib_s = 0, percent_of_alone = 0;
  double perfect_overlap_gib_s = 0, percent_of_perfect_overlap = 0;
  // Over the whole together pass (JSON): mix_cpu_share over the pass and the
  // directions' busy times summed, together over alone.
  double cpu_share = 0, disk_stretch = 0, copy_stretch = 0;
  // Over the overlap (the Busy line's and the verdict's): MixVerdictInput's.
  double overlap_cpu_share = 0, overlap_disk_stretch = 0, overlap_copy_stretch = 0;
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
  // Across ranks: each direction's passes and the overlap per round the slowest
  // part's, busy times every part's, bytes and counts summed; the CPU shares the
  // highest part's (each rank its own host's CPUs); the figures and the verdict again.
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// With --block-table: "  Tables: load --block-table <label> in a pool of <P> slots,
// offload its own <label> in a pool of <Q> slots"; else "".
std::string format_mix_tables_line(const MixStages& s);

// "  Mix: load alone <a> GiB/s, offload alone <b>, together load <c> + offload <d> =
// <e> GiB/s (<q>% of perfect overlap); short: <disk|copy|host CPUs|none>".
std::string format_mix_line(const MixStages& s);

// Registers MixStages' decoder (called by register_staged_results()).
void register_mix_result();

}  // namespace ds
