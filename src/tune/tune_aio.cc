#include "tune/tune_aio.h"

#include <algorithm>
#include <set>

#include "aio/aio_measure.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/size_label.h"
#include "tune/tune_keep.h"

namespace ds {

namespace {

AioParams aio_params(const TuneAioRequest& req, const std::string& ws, const TuneAioConfig& c) {
  AioParams p;
  p.workspaces = {ws};
  p.io_size = req.io_size;
  p.shards_per_file = c.shards_per_file;
  const uint64_t shards = std::max<uint64_t>(1, req.bytes / req.io_size);
  p.io_number = std::max<uint64_t>(1, shards / c.shards_per_file);
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

// The configurations of one axis around `base`.
std::vector<TuneAioConfig> axis(const TuneAioConfig& base, int which, const std::vector<AioEngineKind>& engines) {
  std::vector<TuneAioConfig> out;
  TuneAioConfig c = base;
  switch (which) {
    case 0:
      for (AioEngineKind e : engines) out.push_back((c.engine = e, c));
      break;
    case 1:
      for (unsigned d : {1u, 4u, 16u, 64u, 128u}) out.push_back((c.iodepth = d, c));
      break;
    case 2:
      for (int w : {1, 2, 4, 8}) out.push_back((c.workers = w, c));
      break;
    default:
      for (uint64_t k : {1u, 4u, 16u}) out.push_back((c.shards_per_file = k, c));
      break;
  }
  return out;
}

}  // namespace

double aio_point_estimate(const std::vector<TuneAioPoint>& points, const std::string& workspace) {
  double own = 0, any = 0;
  for (const TuneAioPoint& p : points) {
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
    auto rank = [&](double (TuneAioPoint::*bw)() const, int& best, int& next) {
      for (size_t i = 0; i < points.size(); ++i) {
        const TuneAioPoint& p = points[i];
        if (p.workspace != k.workspace || !p.error.empty()) continue;
        const double v = (p.*bw)();
        if (best < 0 || v > (points[static_cast<size_t>(best)].*bw)()) {
          next = best;
          best = static_cast<int>(i);
        } else if (next < 0 || v > (points[static_cast<size_t>(next)].*bw)()) {
          next = static_cast<int>(i);
        }
      }
    };
    rank(&TuneAioPoint::load_gib_s, k.best_load, k.next_load);
    rank(&TuneAioPoint::dump_gib_s, k.best_dump, k.next_dump);
  }
  return out;
}

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
  for (size_t w = 0; w < req.workspaces.size(); ++w) {
    const std::string& ws = req.workspaces[w];
    const double until = share * static_cast<double>(w + 1);  // this workspace's end, from the start
    TuneAioConfig best{engines.empty() ? AioEngineKind::kPsync : engines.front()};
    double best_bw = -1, last_cost = 0;
    bool told = false;  // its first point skipped: said once
    for (int which = 0; which < 4; ++which) {
      for (const TuneAioConfig& c : axis(best, which, engines)) {
        check_interrupted();
        const bool seen = std::any_of(run.points.begin(), run.points.end(),
                                      [&](const TuneAioPoint& p) { return p.workspace == ws && p.config == c; });
        const double remaining = until - (req.seconds - left());
        if (seen) continue;
        // The first point of a workspace: estimated from what one cost on the others.
        const double est = aio_point_estimate(run.points, ws);
        if (!point_fits(est * 1.1, remaining)) {
          if (last_cost == 0 && !told)
            told = true, notes.note("tune: aio on " + ws + " skipped: about " + note_seconds(est) + " s, " +
                       note_seconds(std::max(0.0, remaining)) + " s left; a larger --budget measures it");
          continue;
        }
        if (progress) progress("aio on " + ws + ": " + aio_config_text(c), left());
        TuneAioPoint pt = measure(selected, req, ws, c, notes);
        last_cost = std::max(last_cost, pt.seconds);
        if (!pt.error.empty()) notes.note("tune: aio " + aio_config_text(c) + " on " + ws + ": " + pt.error);
        if (pt.error.empty() && pt.load_gib_s() > best_bw) {
          best_bw = pt.load_gib_s();
          best = c;
        }
        run.points.push_back(pt);
      }
    }
  }
  run.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return run;
}

}  // namespace ds
