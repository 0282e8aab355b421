#include "tune/tune_load.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "backend/backend.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/shell_word.h"
#include "core/size_label.h"
#include "core/units.h"
#include "layout/layout.h"
#include "load/load_measure.h"
#include "runner/preflight.h"
#include "staging/staged_side.h"
#include "tune/tune_keep.h"
#include "tune/tune_report.h"
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

TuneLoadPoint measure(const SelectedBackend& selected, const TuneLoadRequest& req, const std::string& ws, size_t shape,
                      const TuneLoadConfig& c, Notes& notes) {
  TuneLoadPoint pt;
  pt.workspace = ws;
  pt.shape = shape;
  pt.config = c;
  pt.blocks = tune_load_blocks(req.shapes[shape]);
  pt.command = tune_load_command(ws, req.shapes[shape], c, pt.blocks, req);
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

// Why a point of `shape` with `c` would not fit this machine, as load's own
// pre-flight would refuse it ("" when it fits): its block files against the
// workspace's free space, its staging (and sim's regions) against MemAvailable, its
// locked staging against RLIMIT_MEMLOCK.
std::string load_unfit(const SelectedBackend& selected, const TuneLoadRequest& req, const std::string& ws,
                       size_t shape, const TuneLoadConfig& c) {
  const LoadParams p = load_params(req, ws, req.shapes[shape], c);
  const MemoryNeeds n = staged_needs(p, *selected.backend);
  struct statvfs sv {};
  if (statvfs(ws.c_str(), &sv) == 0) {
    const uint64_t free = static_cast<uint64_t>(sv.f_bavail) * static_cast<uint64_t>(sv.f_frsize);
    if (n.disk > free)
      return "its block files need " + format_bytes(n.disk) + " but " + ws + " has " + format_bytes(free) + " free";
  }
  try {
    check_host_needs(n, {"its staging", "host memory",
                         format_bytes(p.file_bytes()) + " x " + std::to_string(p.staging_buffers()) + " staging buffers" +
                             (selected.backend->device_memory_is_host() ? " and the card's KV region" : ""),
                         ""});
  } catch (const RunError& e) {
    return e.what();
  }
  return "";
}

// The most staging buffers of a shape's coarse grid (8, or its blocks).
TuneLoadConfig largest_coarse(const TuneLoadShape& s) {
  TuneLoadConfig c;
  c.staging = std::min<unsigned>(8, static_cast<unsigned>(tune_load_blocks(s)));
  c.iodepth = c.staging;
  return c;
}

// One workspace's search on one shape until `until` seconds from the start.
TuneLoadSearch search_shape(const SelectedBackend& selected, const TuneLoadRequest& req, const std::string& ws,
                            size_t shape, const std::vector<LoadArm>& arms, double until, const SecondsLeft& left,
                            const TuneProgress& progress, TuneLoadRun& run, Notes& notes) {
  const TuneLoadShape& s = req.shapes[shape];
  KnobSearch search = load_search(arms, tune_load_blocks(s));
  TuneLoadSearch out;
  out.workspace = ws;
  out.shape = shape;
  const std::string place = "tune: load of " + s.label + " blocks on " + ws;
  // A shape whose coarse grid does not fit: skipped whole, with one note.
  const std::string unfit = load_unfit(selected, req, ws, shape, largest_coarse(s));
  if (!unfit.empty()) {
    notes.note(place + " skipped: " + unfit);
    out.coarse_planned = search.coarse_planned();
    out.unfit = unfit;
    return out;
  }
  bool measured = false, told = false;
  while (const std::optional<SearchPoint> next = search.next()) {
    check_interrupted();
    const TuneLoadConfig c = config_of(next->knobs, arms);
    // Refining to more staging than the coarse grid's: left out where it does not fit.
    if (c.staging > largest_coarse(s).staging) {
      const std::string why = load_unfit(selected, req, ws, shape, c);
      if (!why.empty()) {
        notes.note(place + " at " + std::to_string(c.staging) + " staging buffers left out: " + why);
        search.leave_out(next->knobs);
        continue;
      }
    }
    // K/2 and K/4 of K = 1 or 2 are the same queue: the point measured already.
    const auto same = std::find_if(run.points.begin(), run.points.end(), [&](const TuneLoadPoint& p) {
      return p.workspace == ws && p.shape == shape && p.config == c;
    });
    if (same != run.points.end()) {
      search.record(next->knobs, {same->gib_s()});
      continue;
    }
    const double remaining = until - (req.seconds - left());
    const double est = load_point_estimate(run.points, req.shapes, ws, shape);
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
  out.coarse_planned = search.coarse_planned();
  out.coarse_measured = search.coarse_measured();
  out.coarse_skipped = search.coarse_skipped();
  for (size_t a = 0; a < arms.size(); ++a)
    if (search.dropped(a)) out.dropped.push_back({arm_name(arms[a]), search.drop_reason(a)});
  return out;
}

}  // namespace

std::string tune_load_command(const std::string& ws, const TuneLoadShape& s, const TuneLoadConfig& c, uint64_t blocks,
                              const TuneLoadRequest& req) {
  std::string o = "dev-sandbox load --workspace " + shell_word(ws) + " ";
  if (!s.model_args.empty())
    o += s.model_args + " --input-len " + std::to_string(blocks * s.block_tokens);
  else
    o += (s.fragments.size() == 1 ? "-s " + size_label(s.fragments[0]) : "--block-layout " + [&] {
      std::string l;
      for (uint64_t f : s.fragments) l += (l.empty() ? "" : ",") + size_label(f);
      return l;
    }()) + " -n " + std::to_string(blocks);
  // One card, as tune measured it (with --model, load's -d would be --tp's).
  o += std::string(" -d 1 --engine ") + engine_option_name(c.engine) + " --iodepth " + std::to_string(c.iodepth) +
       " --staging " + std::to_string(c.staging) + " --sdma " + (c.sdma ? "true" : "false") + " -i " +
       std::to_string(req.iterations) + " --warmup " + std::to_string(req.warmup);
  return o + (req.validate ? " --validate" : "");
}

std::vector<TuneLoadShape> tune_load_shapes(const std::vector<uint64_t>& sizes, const Workload* model,
                                            const std::string& model_words) {
  std::vector<TuneLoadShape> out;
  if (model) {
    TuneLoadShape s;
    s.fragments = model->task_fragments;
    s.tasks_per_file = model->tasks_per_block;
    s.shared = model->model.arch != KvArch::kGqa;
    s.label = model->model.name + "'s " + size_label(s.payload());
    s.model_args = model_words.substr(model_words.find_first_not_of(' ') == std::string::npos
                                          ? model_words.size()
                                          : model_words.find_first_not_of(' '));
    s.block_tokens = model->req.block_tokens;
    out.push_back(s);
    return out;
  }
  std::vector<uint64_t> at_least;
  for (uint64_t v : sizes)
    if (v >= 4096) at_least.push_back(v);
  if (at_least.empty()) at_least.push_back(4096);
  std::vector<uint64_t> pick = {at_least.front(), at_least[at_least.size() / 2], at_least.back()};
  pick.erase(std::unique(pick.begin(), pick.end()), pick.end());
  for (uint64_t v : pick) {
    TuneLoadShape s;
    s.fragments = {v};
    s.label = size_words(v);
    out.push_back(s);
  }
  return out;
}

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

namespace {

double point_bytes(const TuneLoadPoint& p, const std::vector<TuneLoadShape>& shapes) {
  return static_cast<double>(p.blocks * shapes[p.shape].payload());
}

// The seconds a point spent in its measured passes (pipelined, disk alone, copy
// alone: what moves its bytes); the rest of its seconds is setup (files, buffers,
// fork) and teardown. A point without its stages: all of them.
double timed_seconds(const TuneLoadPoint& p) {
  const StagedStages* st = p.stages();
  if (!st) return p.seconds;
  const Stats& pipe = p.result.stage(p.result.measured);
  const auto total = [](const Stats& s) { return s.avg * static_cast<double>(s.samples) * 1e-9; };
  return std::min(p.seconds, total(pipe) + total(st->disk_alone.ns) + total(st->copy_alone.ns));
}

// From points of other shapes: seconds = fixed + per byte x bytes. Two byte counts
// or more: the line through the dearest point at each of the two nearest `bytes`
// (log scale); one: that point's measured passes per byte, the rest of its seconds
// fixed. Never below a point that moved fewer bytes.
double fit_estimate(const std::vector<const TuneLoadPoint*>& pool, const std::vector<TuneLoadShape>& shapes,
                    double bytes) {
  std::vector<std::pair<double, double>> at;  // bytes, the dearest seconds there
  double floor = 0;
  for (const TuneLoadPoint* p : pool) {
    const double b = point_bytes(*p, shapes);
    if (b <= bytes) floor = std::max(floor, p->seconds);
    auto it = std::find_if(at.begin(), at.end(), [&](const std::pair<double, double>& x) { return x.first == b; });
    if (it == at.end()) at.push_back({b, p->seconds});
    else it->second = std::max(it->second, p->seconds);
  }
  if (at.empty()) return 0;
  const auto far = [&](const std::pair<double, double>& x) { return std::fabs(std::log(std::max(1.0, x.first) / bytes)); };
  std::stable_sort(at.begin(), at.end(), [&](const auto& x, const auto& y) { return far(x) < far(y); });
  double fixed = 0, per_byte = 0;
  if (at.size() >= 2) {
    per_byte = std::max(0.0, (at[1].second - at[0].second) / (at[1].first - at[0].first));
    fixed = std::max(0.0, at[0].second - per_byte * at[0].first);
  } else {
    const TuneLoadPoint* one = nullptr;  // the dearest at that byte count
    for (const TuneLoadPoint* p : pool)
      if (!one || p->seconds > one->seconds) one = p;
    const double timed = timed_seconds(*one);
    fixed = std::max(0.0, one->seconds - timed);
    per_byte = (one->seconds - fixed) / std::max(1.0, at[0].first);
  }
  return std::max(floor, fixed + per_byte * bytes);
}

}  // namespace

double load_point_estimate(const std::vector<TuneLoadPoint>& points, const std::vector<TuneLoadShape>& shapes,
                           const std::string& workspace, size_t shape) {
  const double bytes = static_cast<double>(tune_load_blocks(shapes[shape]) * shapes[shape].payload());
  // The points to go by, in order: this shape here, this shape anywhere, any shape
  // here, any shape anywhere (the points that ran, else every one).
  const auto pool_of = [&](bool same_shape, bool here) {
    std::vector<const TuneLoadPoint*> ran, all;
    for (const TuneLoadPoint& p : points)
      if ((!same_shape || p.shape == shape) && (!here || p.workspace == workspace)) {
        all.push_back(&p);
        if (p.error.empty()) ran.push_back(&p);
      }
    return ran.empty() ? all : ran;
  };
  for (bool here : {true, false}) {
    double dearest = 0;  // the same shape moves the same bytes: its dearest point
    for (const TuneLoadPoint* p : pool_of(true, here)) dearest = std::max(dearest, p->seconds);
    if (dearest > 0) return dearest;
  }
  for (bool here : {true, false})
    if (const double e = fit_estimate(pool_of(false, here), shapes, bytes); e > 0) return e;
  return 0;
}

std::vector<TuneLoadRun::Pick> TuneLoadRun::picks() const {
  std::vector<Pick> out;
  for (const TuneLoadSearch& s : searches) {
    Pick k{s.workspace, s.shape, {}};
    std::vector<RankCandidate> c;
    for (size_t i = 0; i < points.size(); ++i) {
      const TuneLoadPoint& p = points[i];
      if (p.workspace != k.workspace || p.shape != k.shape || !p.error.empty()) continue;
      // Cheapest first: fewer staging buffers, a lower iodepth, CE copies before the direct path.
      c.push_back({static_cast<int>(i), p.gib_s(), p.noisy(),
                   {static_cast<double>(p.config.staging), static_cast<double>(p.config.iodepth),
                    p.config.sdma ? 1.0 : 0.0}});
    }
    k.r = rank_points(c);
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
