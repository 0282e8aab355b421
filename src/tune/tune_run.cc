#include "tune/tune_run.h"

#include <algorithm>
#include <set>

#include "cases/case_runner.h"
#include "cases/run_cases.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/notes.h"
#include "core/size_label.h"

namespace ds {

namespace {

// What one point's run writes: its result, kept.
class KeepWriter : public ResultWriter {
 public:
  void begin(const RunInfo&) override {}
  void add(const CaseResult& r) override { results.push_back(r); }
  void validation(const std::string&, bool pass) override {
    if (!results.empty()) results.back().validated = pass;
  }
  void fail(const std::string&, const std::string&) override {}
  void finish() override {}
  std::vector<CaseResult> results;
};

// What the runs say: each note once; the per-case reports (plan lines, "finished")
// are tune's own progress now, so they are not repeated.
class KeepNotes : public Notes {
 public:
  explicit KeepNotes(std::vector<std::string>& into) : into_(into) {}
  void note(const std::string& line) override {
    if (seen_.insert(line).second) into_.push_back(line);
  }
  void tell(const std::string&) override {}

 private:
  std::vector<std::string>& into_;
  std::set<std::string> seen_;
};

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

// One point: the arm's case with `layout`, as copy runs it.
TunePoint measure_point(SelectedBackend& selected, const TuneArm& arm, const Layout& layout,
                        const TuneCopyRequest& req, int devices, Notes& notes) {
  TunePoint pt;
  pt.blocks = layout.tasks();
  const CopyParams p = point_params(arm, layout, req, devices);
  const int64_t t0 = now_ns();
  try {
    check_against_backend({arm.spec}, p, selected, notes);
    KeepWriter w;
    run_case(arm.spec, p, selected, w, notes);
    if (w.results.empty()) throw RunError(arm.spec.name + ": no result");
    pt.result = w.results.back();
  } catch (const Interrupted&) {
    throw;
  } catch (const OutputClosed&) {
    throw;
  } catch (const std::exception& e) {
    pt.error = e.what();
  }
  pt.seconds = seconds_since(t0);
  return pt;
}

std::string point_words(const TuneCopyRun& run, const TuneArm& arm, const std::string& size) {
  return run.arms.groups[arm.group].title + ": " + arm.method + " at " + size;
}

void model_points(SelectedBackend& selected, const TuneCopyRequest& req, TuneCopyRun& run, Notes& notes,
                  double deadline_s, int64_t t0, const TuneProgress& progress) {
  if (!req.model_layout) return;
  for (size_t a = 0; a < run.arms.arms.size(); ++a) {
    check_interrupted();
    const double left = deadline_s - seconds_since(t0);
    if (left <= 0) break;
    const TuneArm& arm = run.arms.arms[a];
    if (progress) progress(point_words(run, arm, "the model's blocks"), left);
    const int devices = arm.spec.topology == Topology::kSingle ? 1 : run.devices;
    TunePoint pt = measure_point(selected, arm, *req.model_layout, req, devices, notes);
    pt.arm = a;
    pt.phase = "model";
    run.model_points.push_back(pt);
  }
}

}  // namespace

double TunePoint::spread() const {
  const Stats& s = result.stage(result.measured);
  return s.p50 > 0 ? static_cast<double>(s.p90) / static_cast<double>(s.p50) : 1.0;
}

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
    TunePoint pt = measure_point(selected, arm, Layout::uniform(size, tune_blocks(size), 0), req, devices, notes);
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
  model_points(selected, req, run, notes, req.seconds, t0, progress);
  run.seconds = seconds_since(t0);
  return run;
}

}  // namespace ds
