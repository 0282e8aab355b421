#include "tune/tune_load.h"

#include <algorithm>
#include <functional>
#include <optional>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/size_label.h"
#include "layout/layout.h"
#include "load/load_measure.h"
#include "tune/tune_keep.h"
#include "tune/tune_search.h"

namespace ds {

namespace {

// The knobs' ladders (docs/tune.md "The staged load"): staging buffers, and the
// queue as a fraction of them (iodepth = K / d: load reads at most K at once, so a
// deeper queue is the same point).
const std::vector<unsigned> kStaging = {1, 2, 4, 8, 16, 32};
const std::vector<unsigned> kDepthDivisor = {1, 2, 4};

struct LoadArm {
  AioEngineKind engine;
  bool sdma;
};

std::string arm_name(const LoadArm& a) { return std::string(engine_option_name(a.engine)) + (a.sdma ? "+direct" : "+ce"); }

// The arms this machine and backend offer; what they do not, said once.
std::vector<LoadArm> load_arms(const SelectedBackend& selected, std::vector<std::string>& unavailable) {
  std::vector<AioEngineKind> engines;
  for (AioEngineKind e : {AioEngineKind::kLibaio, AioEngineKind::kUring}) {
    const std::string why = engine_unavailable(e);
    if (why.empty())
      engines.push_back(e);
    else
      unavailable.push_back(std::string(engine_option_name(e)) + ": " + why);
  }
  bool direct = selected.backend->has(Capability::kDirect) && selected.probe.direct_unavailable.empty();
  if (!selected.backend->has(Capability::kDirect))
    unavailable.push_back("--sdma true: the " + selected.backend->name() + " backend has no direct path");
  else if (!selected.probe.direct_unavailable.empty())
    unavailable.push_back("--sdma true: " + selected.probe.direct_unavailable);
  std::vector<LoadArm> arms;
  for (AioEngineKind e : engines) arms.push_back({e, false});
  for (AioEngineKind e : direct ? engines : std::vector<AioEngineKind>{}) arms.push_back({e, true});
  return arms;
}

size_t staging_values(uint64_t blocks) {
  size_t n = 0;
  while (n < kStaging.size() && kStaging[n] <= blocks) ++n;
  return n;
}

TuneLoadConfig config_of(const Knobs& k, const std::vector<LoadArm>& arms) {
  TuneLoadConfig c;
  c.engine = arms[k[0]].engine;
  c.sdma = arms[k[0]].sdma;
  c.staging = kStaging[k[1]];
  c.iodepth = std::max(1u, c.staging / kDepthDivisor[k[2]]);
  return c;
}

KnobSearch load_search(const std::vector<LoadArm>& arms, uint64_t blocks) {
  KnobSearch s(arms.size(), {{"staging", staging_values(blocks), {1, 2, 3}, false},  // 2, 4, 8
                             {"iodepth", kDepthDivisor.size(), {0, 1}, true}});       // K, then K/2 at each arm's best
  std::vector<std::string> names;
  for (const LoadArm& a : arms) names.push_back(arm_name(a));
  std::vector<std::vector<std::string>> v(2);
  for (unsigned k : kStaging) v[0].push_back(std::to_string(k) + (k == 1 ? " staging buffer" : " staging buffers"));
  for (unsigned d : kDepthDivisor) v[1].push_back(d == 1 ? "iodepth K" : "iodepth K/" + std::to_string(d));
  s.name(names, v);
  return s;
}

LoadParams load_params(const TuneLoadRequest& req, const std::string& ws, const TuneLoadShape& s,
                       const TuneLoadConfig& c) {
  LoadParams p;
  p.workspaces = {ws};
  p.layout = Layout::block(s.fragments, tune_load_blocks(s) * s.tasks_per_file);
  p.tasks_per_file = s.tasks_per_file;
  p.shared = s.shared;
  p.devices = 1;
  p.iterations = req.iterations;
  p.warmup = req.warmup;
  p.engine = c.engine;
  p.iodepth = c.iodepth;
  p.staging = c.staging;
  p.sdma = c.sdma;
  p.validate = req.validate;
  return p;
}

std::string load_command(const std::string& ws, const TuneLoadShape& s, const TuneLoadConfig& c, uint64_t blocks,
                         const TuneLoadRequest& req) {
  std::string o = "dev-sandbox load --workspace " + ws + " ";
  if (!s.model_args.empty())
    o += s.model_args + " --input-len " + std::to_string(blocks * s.block_tokens);
  else
    o += (s.fragments.size() == 1 ? "-s " + size_label(s.fragments[0]) : "--block-layout " + [&] {
      std::string l;
      for (uint64_t f : s.fragments) l += (l.empty() ? "" : ",") + size_label(f);
      return l;
    }()) + " -n " + std::to_string(blocks);
  o += std::string(" --engine ") + engine_option_name(c.engine) + " --iodepth " + std::to_string(c.iodepth) +
       " --staging " + std::to_string(c.staging) + " --sdma " + (c.sdma ? "true" : "false") + " -i " +
       std::to_string(req.iterations) + " --warmup " + std::to_string(req.warmup);
  return o + (req.validate ? " --validate" : "");
}

TuneLoadPoint measure(const SelectedBackend& selected, const TuneLoadRequest& req, const std::string& ws, size_t shape,
                      const TuneLoadConfig& c, Notes& notes) {
  TuneLoadPoint pt;
  pt.workspace = ws;
  pt.shape = shape;
  pt.config = c;
  pt.blocks = tune_load_blocks(req.shapes[shape]);
  pt.command = load_command(ws, req.shapes[shape], c, pt.blocks, req);
  const int64_t t0 = now_ns();
  pt.error = point_error([&] {
    KeepWriter w;
    std::string current;
    measure_load(load_params(req, ws, req.shapes[shape], c), selected, w, [] {}, current, notes);
    if (w.results.empty()) throw RunError("load: no result");
    pt.result = w.results.back();
  });
  pt.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return pt;
}

using SecondsLeft = std::function<double()>;

// One workspace's search on one shape until `until` seconds from the start.
TuneLoadSearch search_shape(const SelectedBackend& selected, const TuneLoadRequest& req, const std::string& ws,
                            size_t shape, const std::vector<LoadArm>& arms, double until, const SecondsLeft& left,
                            const TuneProgress& progress, TuneLoadRun& run, Notes& notes) {
  const TuneLoadShape& s = req.shapes[shape];
  KnobSearch search = load_search(arms, tune_load_blocks(s));
  const uint64_t bytes = tune_load_blocks(s) * s.payload();
  bool measured = false, told = false;
  while (const std::optional<SearchPoint> next = search.next()) {
    check_interrupted();
    const TuneLoadConfig c = config_of(next->knobs, arms);
    // K/2 and K/4 of K = 1 or 2 are the same queue: the point measured already.
    const auto same = std::find_if(run.points.begin(), run.points.end(), [&](const TuneLoadPoint& p) {
      return p.workspace == ws && p.shape == shape && p.config == c;
    });
    if (same != run.points.end()) {
      search.record(next->knobs, {same->gib_s()});
      continue;
    }
    const double remaining = until - (req.seconds - left());
    const double est = load_point_estimate(run.points, req.shapes, ws, bytes);
    if (!point_fits(est * 1.1, remaining)) {
      if (!measured && !told)
        told = true, notes.note(part_skip_note("load of " + s.label + " blocks on " + ws, est, remaining));
      search.skip(next->knobs);
      continue;
    }
    if (progress) progress("load of " + s.label + " blocks on " + ws + ": " + load_config_text(c), left());
    TuneLoadPoint pt = measure(selected, req, ws, shape, c, notes);
    pt.phase = next->phase;
    measured = true;
    if (!pt.error.empty()) notes.note("tune: load " + load_config_text(c) + " on " + ws + ": " + pt.error);
    search.record(next->knobs, {pt.gib_s()});
    run.points.push_back(pt);
  }
  TuneLoadSearch out;
  out.workspace = ws;
  out.shape = shape;
  out.coarse_planned = search.coarse_planned();
  out.coarse_skipped = search.coarse_skipped();
  for (size_t a = 0; a < arms.size(); ++a)
    if (search.dropped(a)) out.dropped.push_back({arm_name(arms[a]), search.drop_reason(a)});
  return out;
}

}  // namespace

uint64_t TuneLoadShape::payload() const {
  uint64_t task = 0;
  for (uint64_t f : fragments) task += f;
  return task * tasks_per_file;
}

bool operator==(const TuneLoadConfig& a, const TuneLoadConfig& b) {
  return a.engine == b.engine && a.sdma == b.sdma && a.staging == b.staging && a.iodepth == b.iodepth;
}

std::string load_config_text(const TuneLoadConfig& c) {
  return std::string(engine_option_name(c.engine)) + (c.sdma ? ", the direct path" : ", CE copies") + ", " +
         std::to_string(c.staging) + (c.staging == 1 ? " staging buffer" : " staging buffers") + ", iodepth " +
         std::to_string(c.iodepth);
}

std::string TuneLoadPoint::bottleneck() const {
  const StagedStages* s = stages();
  return s ? s->bottleneck : "";
}

double TuneLoadPoint::spread() const { return stage_spread(result); }

std::string load_bound_words(const std::string& bottleneck) {
  if (bottleneck == "disk") return "disk-bound";
  if (bottleneck == "copy") return "copy-bound";
  return bottleneck.empty() ? "-" : "overlap lost";
}

uint64_t tune_load_blocks(const TuneLoadShape& s) {
  const uint64_t want = (32ULL << 20) / std::max<uint64_t>(1, s.payload());
  return std::min<uint64_t>(64, std::max<uint64_t>(8, want));
}

double load_point_estimate(const std::vector<TuneLoadPoint>& points, const std::vector<TuneLoadShape>& shapes,
                           const std::string& workspace, uint64_t bytes) {
  double own = 0, any = 0;
  for (const TuneLoadPoint& p : points) {
    const double had = static_cast<double>(p.blocks * shapes[p.shape].payload());
    const double s = p.seconds * std::max(1.0, static_cast<double>(bytes) / std::max(1.0, had));
    any = std::max(any, s);
    if (p.workspace == workspace) own = std::max(own, s);
  }
  return own > 0 ? own : any;
}

std::vector<TuneLoadRun::Pick> TuneLoadRun::picks() const {
  std::vector<Pick> out;
  for (const TuneLoadSearch& s : searches) {
    Pick k{s.workspace, s.shape};
    for (size_t i = 0; i < points.size(); ++i) {
      const TuneLoadPoint& p = points[i];
      if (p.workspace != k.workspace || p.shape != k.shape || !p.error.empty()) continue;
      const double v = p.gib_s();
      if (k.best < 0 || v > points[static_cast<size_t>(k.best)].gib_s()) {
        k.next = k.best;
        k.best = static_cast<int>(i);
      } else if (k.next < 0 || v > points[static_cast<size_t>(k.next)].gib_s()) {
        k.next = static_cast<int>(i);
      }
    }
    out.push_back(k);
  }
  return out;
}

TuneLoadRun run_load_tune(const SelectedBackend& selected, const TuneLoadRequest& req, const TuneProgress& progress) {
  TuneLoadRun run;
  run.shapes = req.shapes;
  run.iterations = req.iterations;
  run.warmup = req.warmup;
  KeepNotes notes(run.notes);
  const std::vector<LoadArm> arms = load_arms(selected, run.unavailable);
  const int64_t t0 = now_ns();
  const SecondsLeft left = [&] { return req.seconds - static_cast<double>(now_ns() - t0) * 1e-9; };
  const size_t parts = std::max<size_t>(1, req.workspaces.size() * req.shapes.size());
  const double share = req.seconds / static_cast<double>(parts);
  size_t part = 0;
  for (const std::string& ws : arms.empty() ? std::vector<std::string>{} : req.workspaces)
    for (size_t s = 0; s < req.shapes.size(); ++s) {
      const double until = share * static_cast<double>(++part);  // this part's end, from the start
      run.searches.push_back(search_shape(selected, req, ws, s, arms, until, left, progress, run, notes));
    }
  run.seconds = static_cast<double>(now_ns() - t0) * 1e-9;
  return run;
}

}  // namespace ds
