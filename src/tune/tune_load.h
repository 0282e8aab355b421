// `tune --what load`: the staged load's own knobs on each --workspace, each point the
// measurement `load` makes (load/load_measure: pipelined, disk alone and copy alone
// passes a round, the Stages verdict, --validate as load's) run in-process on one
// card. Per workspace and block shape (the --model's block, else a few sizes of
// --sizes) it searches the product (tune_search.h, docs/tune.md "The staged load"):
// every arm, an I/O engine `load --engine` takes with a copy path this backend offers
// (CE streams, or the direct path, `--sdma true`), at 2, 4 and 8 staging buffers
// reading as deep as the buffers (iodepth = K), then half as deep at each arm's best;
// an arm below half the best at two neighbouring cells dropped; then the cells
// between, then one step along any knob from the best points, best first.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aio/io_engine.h"
#include "backends/select.h"
#include "model/model.h"
#include "output/result.h"
#include "staging/staged_stages.h"
#include "tune/tune_run.h"
#include "tune/tune_search.h"

namespace ds {

// One block file's shape: what every point of it reads.
struct TuneLoadShape {
  std::vector<uint64_t> fragments;  // one task's chunks (one copy each)
  uint64_t tasks_per_file = 1;      // --model: its layers (one file per block)
  bool shared = false;              // MLA/DSA: one file set (load --shared)
  std::string label;                // "1 MiB", "Qwen3-32B's 4M" (a file's size_label)
  // The equivalent load's block options for `blocks` blocks: "-s 1M -n 32", or
  // --model's with --input-len of that many blocks (model_args + block_tokens).
  std::string model_args;
  uint64_t block_tokens = 0;
  uint64_t payload() const;  // one file's bytes (before the 4096 padding)
};

struct TuneLoadConfig {
  AioEngineKind engine = AioEngineKind::kLibaio;
  bool sdma = false;      // the direct path, else CE copies on 4 streams
  unsigned staging = 4;   // --staging K
  unsigned iodepth = 4;   // --iodepth (at most K: load reads at most K at once)
};
bool operator==(const TuneLoadConfig& a, const TuneLoadConfig& b);
// "libaio, CE copies, 8 staging buffers, iodepth 8"
std::string load_config_text(const TuneLoadConfig& c);

struct TuneLoadPoint {
  std::string workspace;
  size_t shape = 0;  // index into the shapes
  TuneLoadConfig config;
  std::string phase;  // coarse, crossover, near-best
  uint64_t blocks = 0;
  double seconds = 0;
  std::string error;
  std::string command;  // the equivalent `dev-sandbox load ...`
  CaseResult result;    // as load reports it (with its StagedStages)
  double gib_s() const { return error.empty() ? result.bandwidth_gib_s() : 0; }
  const StagedStages* stages() const { return error.empty() ? result.extras.get<StagedStages>() : nullptr; }
  std::string bottleneck() const;  // load's verdict: disk, copy, neither (overlap lost); "" without
  double spread() const;           // P90/P50 of the pipelined passes
  bool noisy() const { return error.empty() && spread() > kNoisySpread; }
};

// "disk-bound", "copy-bound", "overlap lost" (load's verdict, in tune's words).
std::string load_bound_words(const std::string& bottleneck);

struct TuneLoadRequest {
  std::vector<std::string> workspaces;
  std::vector<TuneLoadShape> shapes;  // smallest first
  int iterations = 8, warmup = 1;
  bool validate = false;
  double seconds = 60;
};

struct TuneLoadSearch {
  std::string workspace;
  size_t shape = 0;
  // As TuneAioSearch's: planned, measured, skipped for the budget; the rest of dropped arms.
  size_t coarse_planned = 0, coarse_measured = 0, coarse_skipped = 0;
  std::vector<std::pair<std::string, std::string>> dropped;  // arm ("libaio+ce"), why
  std::string unfit;  // why the shape was skipped up front (it does not fit here); "" measured
};

struct TuneLoadRun {
  std::vector<TuneLoadShape> shapes;
  int iterations = 0, warmup = 0;
  std::vector<TuneLoadPoint> points;  // in the order measured
  std::vector<TuneLoadSearch> searches;
  std::vector<std::string> notes;
  std::vector<std::string> unavailable;  // "io_uring: why", "--sdma true: why"
  double seconds = 0;
  // Per workspace and shape (as the searches): the best point by load BW and the
  // next, ranked as copy's (tune_search.h rank_points: noisy after quiet, a tie
  // within kTieMargin to fewer staging buffers, then the lower iodepth, then CE copies).
  struct Pick {
    std::string workspace;
    size_t shape = 0;
    RankedPick r;
  };
  std::vector<Pick> picks() const;
};

// --what load's block shapes, smallest first: the --model's block (`model`, all its
// layers in one file as load --model stores it; `model_words` its options as
// model_option_words gives them, quoted for the shell, without --input-len), else the
// smallest, the middle and the largest of `sizes` (each at least 4 KiB, the O_DIRECT unit).
std::vector<TuneLoadShape> tune_load_shapes(const std::vector<uint64_t>& sizes, const Workload* model,
                                            const std::string& model_words);

// The equivalent `dev-sandbox load` of a point (the workspace quoted for the shell).
std::string tune_load_command(const std::string& workspace, const TuneLoadShape& s, const TuneLoadConfig& c,
                              uint64_t blocks, const TuneLoadRequest& req);

// Blocks per point of a shape: 32 MiB of block files, 8 to 64 (staging up to 8 and more).
uint64_t tune_load_blocks(const TuneLoadShape& s);

// The next point's estimate, a point of `shape` on `workspace`: the dearest point of
// that shape there (else on any workspace); before any, a fixed-plus-per-byte fit of
// the other shapes' points there (else anywhere; tune_load.cc fit_estimate), never a
// pure per-byte scale of a small block's setup-bound point; 0 before any point.
double load_point_estimate(const std::vector<TuneLoadPoint>& points, const std::vector<TuneLoadShape>& shapes,
                           const std::string& workspace, size_t shape);

TuneLoadRun run_load_tune(const SelectedBackend& selected, const TuneLoadRequest& req, const TuneProgress& progress);

}  // namespace ds
