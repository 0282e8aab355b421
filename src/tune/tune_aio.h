// `tune --what aio`: the store's side on each --workspace: aio engine x iodepth x
// workers x shards per file, each point the measurement `aio` makes (aio/aio_measure,
// a dump epoch then a load epoch, with --validate as aio's) run in-process. Within
// its time it searches the product (tune_search.h, docs/tune.md "The store"): every
// engine this machine offers at iodepth 4 and 64 x 1 and 4 workers, 16 shards per
// file at each engine's best, an engine below half the best at two neighbouring
// cells dropped; then the value between cells whose best engine differs, then one
// step along any knob from the best points, best first.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "aio/io_engine.h"
#include "backends/select.h"
#include "output/result.h"
#include "tune/tune_run.h"
#include "tune/tune_search.h"

namespace ds {

struct TuneAioConfig {
  AioEngineKind engine = AioEngineKind::kLibaio;
  unsigned iodepth = 32;
  int workers = 1;
  uint64_t shards_per_file = 1;
};
bool operator==(const TuneAioConfig& a, const TuneAioConfig& b);
std::string aio_config_text(const TuneAioConfig& c);  // "libaio, iodepth 32, 1 worker, 1 shard per file"

struct TuneAioPoint {
  std::string workspace;
  TuneAioConfig config;
  std::string phase;  // coarse, crossover, near-best
  double seconds = 0;
  std::string error;
  CaseResult dump, load;
  double load_gib_s() const { return error.empty() ? load.bandwidth_gib_s() : 0; }
  double dump_gib_s() const { return error.empty() ? dump.bandwidth_gib_s() : 0; }
  bool noisy() const;  // either phase's P90/P50 above kNoisySpread
};

struct TuneAioRequest {
  std::vector<std::string> workspaces;
  uint64_t io_size = 1ULL << 20;  // one shard
  uint64_t bytes = 64ULL << 20;   // per epoch, over every worker
  int epochs = 3;
  bool validate = false;
  double seconds = 60;
};

// One workspace's search: its coarse grid and the engines it dropped.
struct TuneAioSearch {
  std::string workspace;
  // Planned; measured (ran, failed ones included); skipped for the budget; the rest
  // (planned - measured - skipped) were of engines dropped before their turn.
  size_t coarse_planned = 0, coarse_measured = 0, coarse_skipped = 0;
  std::vector<std::pair<std::string, std::string>> dropped;  // engine, why
};

struct TuneAioRun {
  uint64_t io_size = 0, bytes = 0;
  int epochs = 0;
  std::vector<TuneAioPoint> points;  // in the order measured
  std::vector<std::string> notes;
  std::vector<std::string> engines_unavailable;  // "io_uring: why"
  std::vector<TuneAioSearch> searches;            // per workspace
  double seconds = 0;
  // Per workspace: the best point by load, then by dump, each ranked as copy's
  // (tune_search.h rank_points: noisy after quiet, a tie within kTieMargin to the
  // fewer workers, then the lower iodepth, then fewer shards per file).
  struct Pick {
    std::string workspace;
    RankedPick load, dump;
  };
  std::vector<Pick> picks() const;
};

// The bytes one epoch of a point with `c` moves over every worker: req.bytes, or
// more where the workers x shards per file hold more shards than an epoch has.
uint64_t aio_epoch_bytes(const TuneAioRequest& req, const TuneAioConfig& c);
// Why `c` is left out of the search ("" when it is not): every point moves the same
// bytes, and `c` cannot (aio_epoch_bytes above req.bytes).
std::string aio_left_out(const TuneAioRequest& req, const TuneAioConfig& c);

// What the next aio point, `next` on `workspace`, is estimated to cost: the dearest
// point measured there, else on any workspace (every point moves the same bytes);
// 0 before any was measured.
double aio_point_estimate(const std::vector<TuneAioPoint>& points, const std::string& workspace,
                          const TuneAioConfig& next, const TuneAioRequest& req);

TuneAioRun run_aio_tune(const SelectedBackend& selected, const TuneAioRequest& req, const TuneProgress& progress);

}  // namespace ds
