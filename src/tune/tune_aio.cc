#include "tune/tune_aio.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "aio/aio_measure.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/size_label.h"
#include "core/units.h"
#include "tune/tune_keep.h"
#include "tune/tune_search.h"

namespace ds {

namespace {

AioParams aio_params(const TuneAioRequest& req, const std::string& ws, const TuneAioConfig& c) {
  AioParams p;
  p.workspaces = {ws};
  p.io_size = req.io_size;
  p.shards_per_file = c.shards_per_file;
  // The epoch's bytes over every worker: each worker its share of the files.
  const uint64_t shards = std::max<uint64_t>(1, req.bytes / req.io_size);
  p.io_number = std::max<uint64_t>(1, shards / (c.shards_per_file * static_cast<uint64_t>(std::max(1, c.workers))));
  p.workers = c.workers;
  p.epochs = req.epochs;
  p.engine = c.engine;
  p.iodepth = c.iodepth;
  p.validate = req.validate;
  p.total = p.io_size * p.io_number * p.shards_per_file;
  p.buffers = std::min<uint64_t>(p.iodepth, p.shards());
  return p;
}

TuneAioPoint measure(const SelectedBackend& selected, const TuneAioRequest& req, const std::string& ws,
                     const TuneAioConfig& c, Notes& notes) {
  TuneAioPoint pt;
  pt.workspace = ws;
  pt.config = c;
  const int64_t t0 = now_ns();
  pt.error = point_error([&] {
    KeepWriter w;
    std::string current;
    measure_aio(aio_params(req, ws, c), selected, w, [] {}, current, notes);
    for (const CaseResult& r : w.results) (r.name == "aio_dump" ? pt.dump : pt.load) = r;
  });
  pt.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return pt;
}

// The knobs' ladders: the search's axes (docs/tune.md "The store").
const std::vector<unsigned> kDepths = {1, 2, 4, 8, 16, 32, 64, 128};
const std::vector<int> kWorkers = {1, 2, 4, 8};
const std::vector<uint64_t> kShards = {1, 4, 16};

std::vector<SearchAxis> aio_axes() {
  return {{"iodepth", kDepths.size(), {2, 6}, false},   // 4, 64
          {"workers", kWorkers.size(), {0, 2}, false},  // 1, 4
          {"shards per file", kShards.size(), {0, 2}, true}};  // 1, then 16 at each engine's best
}

TuneAioConfig config_of(const Knobs& k, const std::vector<AioEngineKind>& engines) {
  TuneAioConfig c;
  c.engine = engines[k[0]];
  c.iodepth = kDepths[k[1]];
  c.workers = kWorkers[k[2]];
  c.shards_per_file = kShards[k[3]];
  return c;
}

void name_axes(KnobSearch& s, const std::vector<AioEngineKind>& engines) {
  std::vector<std::string> arms;
  for (AioEngineKind e : engines) arms.push_back(engine_option_name(e));
  std::vector<std::vector<std::string>> v(3);
  for (unsigned d : kDepths) v[0].push_back("iodepth " + std::to_string(d));
  for (int w : kWorkers) v[1].push_back(std::to_string(w) + (w == 1 ? " worker" : " workers"));
  for (uint64_t k : kShards) v[2].push_back(std::to_string(k) + (k == 1 ? " shard per file" : " shards per file"));
  s.name(arms, v);
}

}  // namespace

uint64_t aio_epoch_bytes(const TuneAioRequest& req, const TuneAioConfig& c) {
  const AioParams p = aio_params(req, "", c);
  return p.io_size * p.shards() * static_cast<uint64_t>(std::max(1, p.workers));
}

std::string aio_left_out(const TuneAioRequest& req, const TuneAioConfig& c) {
  const uint64_t had = aio_epoch_bytes(req, c);
  if (had == req.bytes) return "";
  const uint64_t shards = c.shards_per_file * static_cast<uint64_t>(std::max(1, c.workers));
  return "tune: aio's " + std::to_string(c.workers) + " workers x " + std::to_string(c.shards_per_file) +
         " shards per file left out: at least " + std::to_string(shards) + " shards (" + format_bytes(had) +
         ") an epoch, and every point moves " + format_bytes(req.bytes);
}

double aio_point_estimate(const std::vector<TuneAioPoint>& points, const std::string& workspace,
                          const TuneAioConfig&, const TuneAioRequest&) {
  double own = 0, any = 0;
  for (const TuneAioPoint& p : points) {  // every point moves the same bytes (aio_left_out)
    any = std::max(any, p.seconds);
    if (p.workspace == workspace) own = std::max(own, p.seconds);
  }
  return own > 0 ? own : any;
}

bool operator==(const TuneAioConfig& a, const TuneAioConfig& b) {
  return a.engine == b.engine && a.iodepth == b.iodepth && a.workers == b.workers &&
         a.shards_per_file == b.shards_per_file;
}

std::string aio_config_text(const TuneAioConfig& c) {
  return std::string(engine_option_name(c.engine)) + ", iodepth " + std::to_string(c.iodepth) + ", " +
         std::to_string(c.workers) + (c.workers == 1 ? " worker, " : " workers, ") +
         std::to_string(c.shards_per_file) + (c.shards_per_file == 1 ? " shard per file" : " shards per file");
}

bool TuneAioPoint::noisy() const {
  return error.empty() && (stage_spread(load) > kNoisySpread || stage_spread(dump) > kNoisySpread);
}

std::vector<TuneAioRun::Pick> TuneAioRun::picks() const {
  std::vector<Pick> out;
  for (const TuneAioPoint& p : points) {
    auto it = std::find_if(out.begin(), out.end(), [&](const Pick& k) { return k.workspace == p.workspace; });
    if (it == out.end()) it = out.insert(out.end(), Pick{p.workspace});
  }
  for (Pick& k : out) {
    auto rank = [&](double (TuneAioPoint::*bw)() const, const CaseResult TuneAioPoint::*phase) {
      std::vector<RankCandidate> c;
      for (size_t i = 0; i < points.size(); ++i) {
        const TuneAioPoint& p = points[i];
        if (p.workspace != k.workspace || !p.error.empty()) continue;
        // Cheapest first: fewer workers, a lower iodepth, fewer shards per file.
        c.push_back({static_cast<int>(i), (p.*bw)(), stage_spread(p.*phase) > kNoisySpread,
                     {static_cast<double>(p.config.workers), static_cast<double>(p.config.iodepth),
                      static_cast<double>(p.config.shards_per_file)}});
      }
      return rank_points(c);
    };
    k.load = rank(&TuneAioPoint::load_gib_s, &TuneAioPoint::load);
    k.dump = rank(&TuneAioPoint::dump_gib_s, &TuneAioPoint::dump);
  }
  return out;
}

namespace {

// One workspace's search (tune_search.h) until `until` seconds from the start.
TuneAioSearch search_workspace(const SelectedBackend& selected, const TuneAioRequest& req, const std::string& ws,
                               const std::vector<AioEngineKind>& engines, double until,
                               const std::function<double()>& left, const TuneProgress& progress, TuneAioRun& run,
                               Notes& notes) {
  KnobSearch search(engines.size(), aio_axes());
  name_axes(search, engines);
  bool measured = false, told = false;  // its first point skipped: said once
  while (const std::optional<SearchPoint> next = search.next()) {
    check_interrupted();
    const TuneAioConfig c = config_of(next->knobs, engines);
    const std::string out = aio_left_out(req, c);
    if (!out.empty()) {
      notes.note(out);
      search.leave_out(next->knobs);
      continue;
    }
    const double remaining = until - (req.seconds - left());
    // The first point of a workspace: estimated from what one cost on the others.
    const double est = aio_point_estimate(run.points, ws, c, req);
    if (!point_fits(est * 1.1, remaining)) {
      if (!measured && !told) told = true, notes.note(part_skip_note("aio on " + ws, est, remaining));
      search.skip(next->knobs);
      continue;
    }
    if (progress) progress("aio on " + ws + ": " + aio_config_text(c), left());
    TuneAioPoint pt = measure(selected, req, ws, c, notes);
    pt.phase = next->phase;
    measured = true;
    if (!pt.error.empty()) notes.note("tune: aio " + aio_config_text(c) + " on " + ws + ": " + pt.error);
    search.record(next->knobs, {pt.load_gib_s(), pt.dump_gib_s()});
    run.points.push_back(pt);
  }
  TuneAioSearch out;
  out.workspace = ws;
  out.coarse_planned = search.coarse_planned();
  out.coarse_measured = search.coarse_measured();
  out.coarse_skipped = search.coarse_skipped();
  for (size_t e = 0; e < engines.size(); ++e)
    if (search.dropped(e)) out.dropped.push_back({engine_option_name(engines[e]), search.drop_reason(e)});
  return out;
}

}  // namespace

TuneAioRun run_aio_tune(const SelectedBackend& selected, const TuneAioRequest& req, const TuneProgress& progress) {
  TuneAioRun run;
  run.io_size = req.io_size;
  run.bytes = req.bytes;
  run.epochs = req.epochs;
  KeepNotes notes(run.notes);
  std::vector<AioEngineKind> engines;
  for (AioEngineKind e : {AioEngineKind::kLibaio, AioEngineKind::kUring, AioEngineKind::kPsync}) {
    const std::string why = engine_unavailable(e);
    if (why.empty())
      engines.push_back(e);
    else
      run.engines_unavailable.push_back(std::string(engine_option_name(e)) + ": " + why);
  }
  const int64_t t0 = now_ns();
  auto left = [&] { return req.seconds - static_cast<double>(now_ns() - t0) * 1e-9; };
  const double share = req.seconds / static_cast<double>(std::max<size_t>(1, req.workspaces.size()));
  for (size_t w = 0; w < req.workspaces.size() && !engines.empty(); ++w) {
    const double until = share * static_cast<double>(w + 1);  // this workspace's end, from the start
    run.searches.push_back(search_workspace(selected, req, req.workspaces[w], engines, until, left, progress, run, notes));
  }
  run.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return run;
}

}  // namespace ds
