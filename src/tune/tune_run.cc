#include "tune/tune_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "cases/case_runner.h"
#include "cases/run_cases.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/notes.h"
#include "core/size_label.h"
#include "tune/tune_keep.h"
#include "layout/block_table.h"

namespace ds {

namespace {

double seconds_since(int64_t t0) { return static_cast<double>(now_ns() - t0) * 1e-9; }

CopyParams point_params(const TuneArm& arm, const Layout& layout, const TuneCopyRequest& req, int devices) {
  CopyParams p;
  p.layout = layout;
  p.iterations = req.iterations;
  p.warmup = req.warmup;
  p.devices = devices;
  p.streams = arm.streams;
  p.submit_mode = arm.submit_mode;
  p.validate = req.validate;
  p.validate_each = req.validate && req.validate_each;
  return p;
}

// One point: the arm's case with these parameters, as copy runs it.
TunePoint measure_point(SelectedBackend& selected, const TuneArm& arm, const CopyParams& p, Notes& notes) {
  TunePoint pt;
  pt.blocks = p.layout.tasks();
  const int64_t t0 = now_ns();
  pt.error = point_error([&] {
    check_against_backend({arm.spec}, p, selected, notes);
    KeepWriter w;
    run_case(arm.spec, p, selected, w, notes);
    if (w.results.empty()) throw RunError(arm.spec.name + ": no result");
    pt.result = w.results.back();
  });
  pt.seconds = seconds_since(t0);
  return pt;
}

std::string point_words(const TuneCopyRun& run, const TuneArm& arm, const std::string& size) {
  return run.arms.groups[arm.group].title + ": " + arm.method + " at " + size;
}

// The size step nearest the model's block (by powers of two): whose costs its estimate scales.
size_t nearest_step(const std::vector<uint64_t>& sizes, uint64_t bytes) {
  size_t best = 0;
  double best_d = -1;
  for (size_t s = 0; s < sizes.size(); ++s) {
    const double d = std::fabs(std::log2(static_cast<double>(sizes[s])) - std::log2(static_cast<double>(std::max<uint64_t>(1, bytes))));
    if (best_d < 0 || d < best_d) best_d = d, best = s;
  }
  return best;
}

// One --model point of arm `a`, `layout` contiguous or paged: started only when its estimate fits.
void model_point(SelectedBackend& selected, const TuneCopyRequest& req, TuneCopyRun& run, Notes& notes, size_t a,
                 const Layout& layout, bool paged, double estimate_s, double left, const TuneProgress& progress) {
  const TuneArm& arm = run.arms.arms[a];
  const std::string skip = model_point_skip(arm.method + (paged ? " paged" : ""), estimate_s, left);
  if (!skip.empty()) {
    notes.note(skip);
    return;
  }
  if (progress) progress(point_words(run, arm, paged ? "the model's paged blocks" : "the model's blocks"), left);
  const int devices = arm.spec.topology == Topology::kSingle ? 1 : run.devices;
  CopyParams p = point_params(arm, layout, req, devices);
  if (paged) {
    p.tasks_per_block = std::max<uint64_t>(1, req.model_tasks_per_block);
    p.device_table = make_block_table("random:" + std::to_string(kTuneTableSeed), layout.tasks() / p.tasks_per_block, 0);
    p.compare_contiguous = true;  // the contiguous pass in the same run, taking turns with the paged one
  }
  TunePoint pt = measure_point(selected, arm, p, notes);
  pt.arm = a;
  pt.phase = "model";
  pt.paged = paged;
  pt.table = p.device_table.label;
  pt.pool_blocks = p.device_table.pool;
  run.model_points.push_back(pt);
}

// --model: every arm on the model's layout, contiguous then paged (a seeded random
// table in a pool of 4x the request, copy's default), each estimated from the
// sweep's cost per byte near the model's block size (the paged one also from its
// contiguous point), started only when that fits in the time left.
void model_points(SelectedBackend& selected, const TuneCopyRequest& req, TuneCopyRun& run, Notes& notes,
                  const TunePlanner& plan, double deadline_s, int64_t t0, const TuneProgress& progress) {
  if (!req.model_layout) return;
  const Layout& layout = *req.model_layout;
  const size_t near = nearest_step(req.sizes, layout.task_bytes());
  for (size_t a = 0; a < run.arms.arms.size(); ++a) {
    check_interrupted();
    const double est = plan.estimate_work(a, near, static_cast<double>(layout.bytes()));
    const size_t before = run.model_points.size();
    model_point(selected, req, run, notes, a, layout, false, est, deadline_s - seconds_since(t0), progress);
    const double measured = run.model_points.size() > before ? run.model_points.back().seconds : est;
    check_interrupted();
    // The paged point times both passes (the paged and, taking turns, the contiguous).
    model_point(selected, req, run, notes, a, layout, true, 2 * std::max(est, measured), deadline_s - seconds_since(t0),
                progress);
  }
}

}  // namespace

std::string model_point_skip(const std::string& arm, double estimate_s, double left_s) {
  if (point_fits(estimate_s, left_s)) return "";
  return "tune: --model's " + arm + " point skipped: about " + note_seconds(estimate_s) + " s, " +
         note_seconds(std::max(0.0, left_s)) + " s left; a larger --budget measures it";
}

std::string part_skip_note(const std::string& part, double estimate_s, double left_s) {
  const std::string tail = " left; a larger --budget measures it";
  if (!(estimate_s > 0)) return "tune: " + part + " skipped: no time" + tail;
  return "tune: " + part + " skipped: about " + note_seconds(estimate_s) + " s, " + note_seconds(std::max(0.0, left_s)) +
         " s" + tail;
}

std::string note_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f" : "%.0f", s);
  return buf;
}

double TunePoint::spread() const { return stage_spread(result); }

const TunePoint* TuneCopyRun::at(size_t arm, size_t size) const {
  for (const TunePoint& p : points)
    if (p.arm == arm && p.size == size) return &p;
  return nullptr;
}

uint64_t tune_blocks(uint64_t block_bytes) {
  const uint64_t want = (32ULL << 20) / std::max<uint64_t>(1, block_bytes);
  return std::min<uint64_t>(64, std::max<uint64_t>(2, want));
}

TuneCopyRun run_copy_tune(SelectedBackend& selected, const TuneCopyRequest& req, const TuneProgress& progress) {
  TuneCopyRun run;
  run.arms = tune_arms(selected, req.choice);
  run.sizes = req.sizes;
  run.iterations = req.iterations;
  run.warmup = req.warmup;
  run.devices = req.choice.devices;
  run.model_label = req.model_label;
  run.model_options = req.model_options;
  if (run.arms.arms.empty())
    throw UsageError("tune: no copy method of the " + selected.backend->name() +
                     " backend can run with these options (--direction, --cards, -d)");
  KeepNotes notes(run.notes);
  for (const std::string& s : run.arms.skipped) notes.note("tune: not measured: " + s);
  std::vector<size_t> groups;
  for (const TuneArm& a : run.arms.arms) groups.push_back(a.group);
  std::vector<double> work;
  for (uint64_t s : req.sizes) work.push_back(static_cast<double>(s * tune_blocks(s)));
  TunePlanner plan(groups, work);
  const int64_t t0 = now_ns();
  // --model's points come after the sweep, out of a share kept for them.
  const double sweep_s = req.model_layout ? req.seconds * 0.8 : req.seconds;
  while (true) {
    check_interrupted();
    const double left = sweep_s - seconds_since(t0);
    const std::optional<PlanPoint> next = plan.next(left);
    if (!next) break;
    const TuneArm& arm = run.arms.arms[next->arm];
    const uint64_t size = req.sizes[next->size];
    if (progress) progress(point_words(run, arm, size_label(size)), left);
    const int devices = arm.spec.topology == Topology::kSingle ? 1 : run.devices;
    TunePoint pt =
        measure_point(selected, arm, point_params(arm, Layout::uniform(size, tune_blocks(size), 0), req, devices), notes);
    pt.arm = next->arm;
    pt.size = next->size;
    pt.phase = phase_name(next->phase);
    if (!pt.error.empty()) notes.note("tune: " + arm.spec.name + " (" + arm.method + ") at " + size_label(size) + ": " + pt.error);
    plan.record(*next, pt.gib_s(), pt.seconds);
    if (!pt.error.empty()) plan.exclude(next->arm);
    run.points.push_back(pt);
  }
  run.dropped.assign(run.arms.arms.size(), "");
  for (size_t a = 0; a < run.arms.arms.size(); ++a) {
    if (!plan.dropped(a)) continue;
    const TunePlanner::Drop& d = plan.drop(a);
    if (d.leader < 0) {
      run.dropped[a] = "its point failed";
      continue;
    }
    run.dropped[a] = "below " + std::to_string(static_cast<int>(kDominated * 100)) + "% of " +
                     (d.leader >= 0 ? run.arms.arms[static_cast<size_t>(d.leader)].method : std::string("the best")) +
                     " at " + size_label(req.sizes[d.size_a]) + " and " + size_label(req.sizes[d.size_b]);
  }
  run.coarse_planned = plan.coarse_planned();
  run.coarse_skipped = plan.coarse_skipped();
  model_points(selected, req, run, notes, plan, req.seconds, t0, progress);
  run.seconds = seconds_since(t0);
  return run;
}

}  // namespace ds
