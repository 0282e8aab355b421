// The tune planner (src/tune/tune_plan): coarse first, refinement only at crossovers
// and near the best, dominated arms dropped, the budget's estimate obeyed; and the
// duration --budget takes.
#include <gtest/gtest.h>

#include <functional>
#include <optional>
#include <set>
#include <map>

#include "tune/tune_aio.h"
#include "tune/tune_load.h"
#include "staging/staged_stages.h"
#include "tune/tune_plan.h"
#include "tune/tune_run.h"
#include "tune/tune_report.h"
#include "tune/tune_search.h"

using namespace ds;

namespace {

// Runs the planner over a model of bandwidth bw(arm, size) and cost cost(arm, size)
// with `budget` seconds; the points it measured, in order.
std::vector<PlanPoint> drive(TunePlanner& p, const std::function<double(size_t, size_t)>& bw,
                             const std::function<double(size_t, size_t)>& cost, double budget) {
  std::vector<PlanPoint> out;
  double used = 0;
  while (auto n = p.next(budget - used)) {
    used += cost(n->arm, n->size);
    p.record(*n, bw(n->arm, n->size), cost(n->arm, n->size));
    out.push_back(*n);
    if (out.size() > 10000) break;
  }
  return out;
}

}  // namespace

TEST(TunePlan, SizeSteps) {
  EXPECT_EQ(size_steps(4096, 64ULL << 20).size(), 15u);
  EXPECT_EQ(size_steps(4096, 4096).size(), 1u);
}

TEST(TunePlan, CoarseIsEveryFourthSizeAndTheLast) {
  TunePlanner p({0, 0}, std::vector<double>(15, 1.0));
  EXPECT_EQ(p.coarse_planned(), 2u * 5u);  // sizes 0, 4, 8, 12 and 14
}

// Arm 0 leads below size 9, arm 1 from size 9: the planner bisects the coarse interval
// (8, 12) until the two are one step apart, so the crossover is found exactly.
TEST(TunePlan, BisectsTheCrossoverToOneStep) {
  TunePlanner p({0, 0, 0}, std::vector<double>(15, 1.0));
  auto bw = [](size_t a, size_t s) {
    if (a == 2) return 0.7;  // never best, never below half: kept, but not near the best
    return (a == 0) == (s < 9) ? 2.0 : 1.0;
  };
  drive(p, bw, [](size_t, size_t) { return 1.0; }, 19);  // 15 coarse, then 2 at 10 and 2 at 9: before any other
  EXPECT_GE(p.bandwidth(0, 8), 0);
  EXPECT_GE(p.bandwidth(1, 8), 0);
  EXPECT_GE(p.bandwidth(0, 9), 0) << "the crossover's upper side was not measured";
  EXPECT_GE(p.bandwidth(1, 9), 0);
  EXPECT_EQ(p.best_at(0, 8), 0);
  EXPECT_EQ(p.best_at(0, 9), 1);
}

TEST(TunePlan, DropsAnArmBelowHalfTheBestAtTwoNeighbouringSizes) {
  TunePlanner p({0, 0}, std::vector<double>(15, 1.0));
  auto bw = [](size_t a, size_t) { return a == 0 ? 10.0 : 4.0; };
  const auto pts = drive(p, bw, [](size_t, size_t) { return 1.0; }, 1000);
  EXPECT_TRUE(p.dropped(1));
  EXPECT_FALSE(p.dropped(0));
  size_t of_one = 0;
  for (const auto& q : pts) of_one += q.arm == 1;
  EXPECT_EQ(of_one, 5u) << "a dropped arm is measured no more after its coarse points";
  EXPECT_EQ(p.drop(1).leader, 0);
}

// Below half at the small sizes, best at the large ones: kept, and not refined where
// it lost (between two sizes it was below half at).
TEST(TunePlan, KeepsAnArmThatWinsElsewhere) {
  TunePlanner p({0, 0}, std::vector<double>(15, 1.0));
  auto bw = [](size_t a, size_t s) { return a == 0 ? 10.0 : (s >= 8 ? 20.0 : 1.0); };
  drive(p, bw, [](size_t, size_t) { return 1.0; }, 1000);
  EXPECT_FALSE(p.dropped(1));
  EXPECT_LT(p.bandwidth(1, 2), 0) << "refined between 4K and 64K where it was below half at both";
  EXPECT_GE(p.bandwidth(1, 13), 0);
}

TEST(TunePlan, KeepsAnArmAboveHalf) {
  TunePlanner p({0, 0}, std::vector<double>(15, 1.0));
  drive(p, [](size_t a, size_t) { return a == 0 ? 10.0 : 6.0; }, [](size_t, size_t) { return 1.0; }, 1000);
  EXPECT_FALSE(p.dropped(1));
}

TEST(TunePlan, StartsNothingItsEstimateSaysWillNotFit) {
  TunePlanner p({0, 0}, std::vector<double>(15, 1.0));
  double used = 0;
  const double budget = 10.5;
  while (auto n = p.next(budget - used)) {
    used += 2.0;
    p.record(*n, 1.0 + static_cast<double>(n->arm), 2.0);
  }
  EXPECT_LE(used, budget);
  EXPECT_GT(p.coarse_skipped(), 0u);
}

TEST(TunePlan, EstimateScalesUpWithWorkNeverDown) {
  TunePlanner p({0}, {1.0, 2.0, 4.0});
  p.record({0, 1, PlanPoint::kCoarse}, 1.0, 3.0);
  EXPECT_DOUBLE_EQ(p.estimate(0, 2), 6.0);
  EXPECT_DOUBLE_EQ(p.estimate(0, 0), 3.0);
}

// A --model point moves the whole per-card request: its estimate is the cost per byte
// measured nearest its block size, for the arm, else its group, times its bytes.
TEST(TunePlan, EstimateWorkScalesTheCostPerByte) {
  TunePlanner p({0, 0, 1}, {1.0, 2.0, 4.0});
  p.record({0, 1, PlanPoint::kCoarse}, 1.0, 3.0);
  EXPECT_DOUBLE_EQ(p.estimate_work(0, 1, 200.0), 300.0);
  EXPECT_DOUBLE_EQ(p.estimate_work(1, 1, 200.0), 300.0) << "its group's cost per byte";
  EXPECT_DOUBLE_EQ(p.estimate_work(0, 1, 1.0), 3.0) << "never scaled down";
  p.record({0, 2, PlanPoint::kCoarse}, 1.0, 4.0);
  EXPECT_DOUBLE_EQ(p.estimate_work(0, 2, 400.0), 400.0) << "the point nearest the size";
}

TEST(TunePlan, APointStartsOnlyWhenItFitsTheTimeLeft) {
  EXPECT_TRUE(point_fits(1.0, 2.0));
  EXPECT_TRUE(point_fits(0.0, 0.5)) << "nothing to estimate from: one may start while time is left";
  EXPECT_FALSE(point_fits(3.0, 2.0));
  EXPECT_FALSE(point_fits(0.0, 0.0)) << "no time left";
  EXPECT_FALSE(point_fits(0.0, -1.0));
}

TEST(TuneModel, APointThatDoesNotFitIsSkippedWithOneNote) {
  EXPECT_EQ(model_point_skip("ms_4", 1.0, 2.0), "");
  EXPECT_EQ(model_point_skip("ms_4", 12.4, 2.0),
            "tune: --model's ms_4 point skipped: about 12 s, 2.0 s left; a larger --budget measures it");
  EXPECT_EQ(model_point_skip("ce paged", 0.0, -0.3),
            "tune: --model's ce paged point skipped: about 0.0 s, 0.0 s left; a larger --budget measures it");
}

// aio: a workspace's first point is estimated from what one cost on the others.
TEST(TuneAio, AWorkspacesFirstPointIsEstimatedFromTheOthers) {
  std::vector<TuneAioPoint> pts(3);
  pts[0].workspace = "/a", pts[0].seconds = 2.0;
  pts[1].workspace = "/a", pts[1].seconds = 3.0;
  pts[2].workspace = "/c", pts[2].seconds = 1.0;
  const TuneAioRequest req;
  const TuneAioConfig one;
  EXPECT_DOUBLE_EQ(aio_point_estimate(pts, "/a", one, req), 3.0);
  EXPECT_DOUBLE_EQ(aio_point_estimate(pts, "/c", one, req), 1.0);
  EXPECT_DOUBLE_EQ(aio_point_estimate(pts, "/b", one, req), 3.0) << "none there yet: the dearest elsewhere";
  EXPECT_DOUBLE_EQ(aio_point_estimate({}, "/b", one, req), 0.0);
}

// Every aio point moves the same bytes an epoch; a combination that cannot (16 shards
// per file x 8 workers: 128 shards, more than the epoch's 64) is left out, said why.
TEST(TuneAio, EveryPointMovesTheSameBytesOrIsLeftOut) {
  const TuneAioRequest req;
  size_t left_out = 0;
  for (unsigned depth : {1u, 4u, 64u, 128u})
    for (int workers : {1, 2, 4, 8})
      for (uint64_t shards : {1ULL, 4ULL, 16ULL}) {
        TuneAioConfig c;
        c.iodepth = depth, c.workers = workers, c.shards_per_file = shards;
        if (aio_left_out(req, c).empty())
          EXPECT_EQ(aio_epoch_bytes(req, c), req.bytes) << aio_config_text(c);
        else
          ++left_out;
      }
  EXPECT_EQ(left_out, 4u) << "only 8 workers x 16 shards per file, at each iodepth";
  TuneAioConfig big;
  big.workers = 8, big.shards_per_file = 16;
  EXPECT_EQ(aio_left_out(req, big),
            "tune: aio's 8 workers x 16 shards per file left out: at least 128 shards (128.00 MiB) an epoch, and every "
            "point moves 64.00 MiB");
}

TEST(TunePlan, ATieDoesNotMoveTheBest) {
  TunePlanner p({0, 0}, std::vector<double>(2, 1.0));
  p.record({0, 0, PlanPoint::kCoarse}, 10.0, 1);
  p.record({1, 0, PlanPoint::kCoarse}, 10.3, 1);
  EXPECT_EQ(p.best_at(0, 0), 1);
  EXPECT_EQ(p.best_at(0, 0, 0), 0) << "a lead under the tie margin keeps the incumbent";
}

namespace {

// A copy run of one group: arm a's bandwidth (GiB/s) at size s is bw[a][s], 0 for no point.
TuneCopyRun run_of(const std::vector<std::vector<double>>& bw) {
  TuneCopyRun run;
  run.arms.groups.push_back({"h2d.one", "H2D, one card", CopyDir::kH2D, false});
  for (size_t a = 0; a < bw.size(); ++a) {
    TuneArm arm{};  // every field set (CaseSpec has some without a default)
    arm.method = "m" + std::to_string(a);
    run.arms.arms.push_back(arm);
    for (size_t s = 0; s < bw[a].size(); ++s) {
      if (run.sizes.size() <= s) run.sizes.push_back(4096ULL << s);
      if (bw[a][s] <= 0) continue;
      TunePoint p;
      p.arm = a;
      p.size = s;
      p.result.bytes = 1ULL << 30;
      Stats st;
      st.avg = 1e9 / bw[a][s];
      st.p50 = st.p90 = static_cast<int64_t>(st.avg);
      p.result.stages.push_back({"Copy", st, {}});
      run.points.push_back(p);
    }
  }
  return run;
}

}  // namespace

// The crossovers are where one arm overtakes the one leading so far, judged only at
// sizes that measured both: m0 leads, has no point at the third size (failed or
// skipped; m1 and m2 have), and m1 overtakes it only at the fourth.
TEST(TuneFindings, ASizeWithoutTheLeadersPointMovesNoCrossover) {
  const TuneCopyRun run = run_of({{10, 10, 0, 4}, {5, 6, 7, 8}, {1, 1, 3, 1}});
  const TuneFindings f = tune_findings(run);
  ASSERT_EQ(f.groups.size(), 1u);
  const auto& c = f.groups[0].crossovers;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[1].winner, 1);
  EXPECT_EQ(c[1].loser, 0);
  EXPECT_EQ(c[1].size, 3u) << "not at the size m0 has no point at";
  EXPECT_EQ(c[1].previous, 1u);
  EXPECT_DOUBLE_EQ(c[1].lead, 1.0);
  EXPECT_EQ(crossover_text(run, c[1]), "m1 beats m0 from 32 KiB (by 100%; somewhere above 8 KiB, not refined)");
}

namespace {

// aio's axes (tune_aio.cc): iodepth 1..128 coarse 4, 64; workers 1..8 coarse 1, 4;
// shards 1, 4, 16, secondary: 16 at each engine's best.
std::vector<SearchAxis> aio_like_axes() {
  return {{"iodepth", 8, {2, 6}, false}, {"workers", 4, {0, 2}, false}, {"shards", 3, {0, 2}, true}};
}

// Drives a search to its end: every point offered scores score(knobs); returns the points in order.
std::vector<SearchPoint> drive(KnobSearch& s, const std::function<double(const Knobs&)>& score, size_t at_most = 1000) {
  std::vector<SearchPoint> out;
  while (out.size() < at_most) {
    const std::optional<SearchPoint> p = s.next();
    if (!p) break;
    out.push_back(*p);
    s.record(p->knobs, {score(p->knobs), score(p->knobs)});
  }
  return out;
}

}  // namespace

// Before any refining point, the coarse grid holds at least two values of every knob
// (the arm included), and no point is offered twice.
TEST(TuneSearch, CoarseCoversTwoValuesOfEveryKnobBeforeRefining) {
  KnobSearch s(3, aio_like_axes());
  const auto pts = drive(s, [](const Knobs& k) { return 1.0 + static_cast<double>(k[1] + k[2] + k[3]); });
  std::vector<std::set<size_t>> seen(4);
  size_t coarse = 0;
  for (const SearchPoint& p : pts) {
    if (p.phase != "coarse") break;
    ++coarse;
    for (size_t a = 0; a < 4; ++a) seen[a].insert(p.knobs[a]);
  }
  EXPECT_EQ(coarse, s.coarse_planned());
  EXPECT_EQ(coarse, 3u * 2 * 2 + 3) << "3 engines x 2 depths x 2 worker counts, then 16 shards at each engine's best";
  for (size_t a = 0; a < 4; ++a) EXPECT_GE(seen[a].size(), 2u) << "knob " << a;
  for (size_t i = coarse; i < pts.size(); ++i) EXPECT_NE(pts[i].phase, "coarse") << i;
  std::set<Knobs> unique;
  for (const SearchPoint& p : pts) EXPECT_TRUE(unique.insert(p.knobs).second) << "offered twice";
  EXPECT_GT(pts.size(), coarse) << "it refines after the coarse grid";
}

// An arm below half the best at two neighbouring coarse cells, in both scores, is
// dropped with the cells named, and offered no more.
TEST(TuneSearch, ADominatedArmIsDroppedAndMeasuredNoMore) {
  KnobSearch s(3, aio_like_axes());
  s.name({"libaio", "io_uring", "psync"}, {{"d1", "d2", "iodepth 4", "d8", "d16", "d32", "iodepth 64", "d128"},
                                          {"1 worker", "2 workers", "4 workers", "8 workers"},
                                          {"1", "4", "16"}});
  size_t after_drop = 0;
  while (const std::optional<SearchPoint> p = s.next()) {
    if (s.dropped(2) && p->knobs[0] == 2) ++after_drop;
    const double v = p->knobs[0] == 2 ? 0.4 : 1.0 + static_cast<double>(p->knobs[0]);
    s.record(p->knobs, {v, v});
  }
  EXPECT_FALSE(s.dropped(0));
  EXPECT_FALSE(s.dropped(1));
  ASSERT_TRUE(s.dropped(2));
  EXPECT_EQ(s.drop_reason(2), "below 50% of io_uring at iodepth 4, 1 worker and at iodepth 4, 4 workers");
  EXPECT_EQ(after_drop, 0u);
  // Below half in the first score only (the dump fine): kept.
  KnobSearch k(2, aio_like_axes());
  while (const std::optional<SearchPoint> p = k.next()) k.record(p->knobs, {p->knobs[0] == 1 ? 0.4 : 1.0, 1.0});
  EXPECT_FALSE(k.dropped(1));
}

// After the coarse grid: the value between two cells whose best arm differs, for both
// arms; then one step along a knob from the best point measured.
TEST(TuneSearch, RefinesAtTheCrossoverThenNearTheBest) {
  KnobSearch s(2, {{"iodepth", 8, {2, 6}, false}});
  // Arm 0 leads at iodepth 4 (index 2), arm 1 at 64 (index 6); arm 1 at 64 is the best.
  const auto score = [](const Knobs& k) { return k[0] == 0 ? 10.0 - static_cast<double>(k[1]) : 2.0 * static_cast<double>(k[1]); };
  const auto pts = drive(s, score, 7);
  ASSERT_EQ(pts.size(), 7u);
  EXPECT_EQ(pts[4].phase, "crossover");
  EXPECT_EQ(pts[4].knobs[1], 4u) << "between indices 2 and 6";
  EXPECT_EQ(pts[5].phase, "crossover");
  EXPECT_NE(pts[4].knobs[0], pts[5].knobs[0]) << "both arms";
  EXPECT_EQ(pts[6].phase, "near-best");
  EXPECT_EQ(pts[6].knobs[0], 1u);
  EXPECT_EQ(pts[6].knobs[1], 5u) << "one step from the best, arm 1 at index 6";
}

// A point the caller could not fit is never offered again and counts when coarse.
TEST(TuneSearch, ASkippedPointIsNotOfferedAgain) {
  KnobSearch s(1, {{"iodepth", 4, {0, 3}, false}});
  const std::optional<SearchPoint> p = s.next();
  ASSERT_TRUE(p);
  s.skip(p->knobs);
  const std::optional<SearchPoint> q = s.next();
  ASSERT_TRUE(q);
  EXPECT_NE(q->knobs, p->knobs);
  s.record(q->knobs, {1.0});
  EXPECT_EQ(s.coarse_measured(), 1u);
  EXPECT_EQ(s.coarse_skipped(), 1u);
}

// Every point skipped (a workspace the budget left no time): every coarse point
// counts as skipped, the secondary values of the arms that never had a best cell
// included; one arm measured once: the rest of the coarse grid is the budget's.
TEST(TuneSearch, ACoarseGridTheBudgetLeftIsCountedWhole) {
  KnobSearch none(3, aio_like_axes());
  while (const std::optional<SearchPoint> p = none.next()) none.skip(p->knobs);
  EXPECT_EQ(none.coarse_planned(), 15u);
  EXPECT_EQ(none.coarse_skipped(), none.coarse_planned()) << "0 of 15 in the budget";
  KnobSearch one(3, aio_like_axes());
  bool measured = false;
  while (const std::optional<SearchPoint> p = one.next()) {
    if (measured) {
      one.skip(p->knobs);
      continue;
    }
    one.record(p->knobs, {1.0, 1.0});
    measured = true;
  }
  EXPECT_EQ(one.coarse_skipped(), one.coarse_planned() - 1) << "1 of 15 in the budget";
}

namespace {

// A measured stage of `bytes` at `gib_s`, with P90/P50 = spread.
CaseResult result_at(double gib_s, double spread = 1.0, uint64_t bytes = 1ULL << 30) {
  CaseResult r;
  r.bytes = bytes;
  Stats st;
  st.avg = static_cast<double>(bytes) / (gib_s * (1ULL << 30)) * 1e9;
  st.p50 = static_cast<int64_t>(st.avg);
  st.p90 = static_cast<int64_t>(st.avg * spread);
  st.samples = 8;
  r.stages.push_back({r.measured, st, {}});
  return r;
}

TuneLoadPoint load_point(size_t shape, unsigned staging, double gib_s, double spread = 1.0) {
  TuneLoadPoint p;
  p.workspace = "/ws";
  p.shape = shape;
  p.config.staging = staging;
  p.config.iodepth = staging;
  p.result = result_at(gib_s, spread);
  p.blocks = 8;
  return p;
}

}  // namespace

// The load's estimate of a shape's first point: a 4 KiB shape's point (64 blocks, 256
// KiB, 0.2 s, nearly all setup) says little of a 64 MiB shape's (8 blocks, 512 MiB):
// not 2048 x 0.2 s, but its setup plus its measured passes scaled by the bytes.
TEST(TuneLoad, AShapesFirstEstimateIsNotASetupBoundPointScaledByBytes) {
  std::vector<TuneLoadShape> shapes(3);
  shapes[0].fragments = {4096};
  shapes[1].fragments = {1ULL << 20};
  shapes[2].fragments = {64ULL << 20};
  TuneLoadPoint small;
  small.workspace = "/ws";
  small.shape = 0;
  small.blocks = tune_load_blocks(shapes[0]);
  small.seconds = 0.2;
  // Its measured passes: pipelined, disk alone and copy alone, 8 rounds of 1 ms each.
  small.result = result_at(0.25, 1.0, small.blocks * 4096);
  small.result.stages[0].ns.avg = 1e6;
  auto st = std::make_shared<LoadStages>();
  st->disk_alone.ns.avg = st->copy_alone.ns.avg = 1e6;
  st->disk_alone.ns.samples = st->copy_alone.ns.samples = 8;
  small.result.extras.put(std::shared_ptr<const ResultExtra>(st));
  const double est = load_point_estimate({small}, shapes, "/ws", 2);
  EXPECT_LT(est, 60.0) << "scaled by bytes from a setup-bound point: 0.2 s x 2048 = 410 s";
  EXPECT_NEAR(est, 0.176 + 0.024 * 2048, 1e-6) << "its 0.176 s of setup, its 24 ms of passes per 256 KiB";
  // With two shapes measured: the line through them.
  TuneLoadPoint mid = small;
  mid.shape = 1;
  mid.blocks = tune_load_blocks(shapes[1]);  // 32 blocks, 32 MiB
  mid.seconds = 0.2 + 0.8 * (32.0 - 0.25) / 32.0;
  const double line = load_point_estimate({small, mid}, shapes, "/ws", 2);
  const double per_byte = (mid.seconds - 0.2) / (32.0 * (1 << 20) - 256.0 * 1024);
  EXPECT_NEAR(line, mid.seconds + per_byte * (512.0 - 32.0) * (1 << 20), 1e-6);
  // A point of the same shape: the dearest of them, not a fit.
  TuneLoadPoint same = mid;
  same.shape = 2, same.seconds = 3.0, same.blocks = tune_load_blocks(shapes[2]);
  EXPECT_DOUBLE_EQ(load_point_estimate({small, mid, same}, shapes, "/ws", 2), 3.0);
  EXPECT_DOUBLE_EQ(load_point_estimate({same}, shapes, "/other", 2), 3.0) << "the same shape on another workspace";
  EXPECT_DOUBLE_EQ(load_point_estimate({}, shapes, "/ws", 2), 0.0);
}

// The recommendation, as copy's: a noisy point ranks after the quiet ones (and is
// named, faster but noisy); within the tie margin the cheaper configuration is picked
// and the pick says it is a tie.
TEST(TuneLoad, APickPrefersQuietThenTheCheaperWithinTheTieMargin) {
  TuneLoadRun run;
  run.shapes.resize(1);
  run.searches.push_back({"/ws", 0, 0, 0, 0, {}, ""});
  run.points = {load_point(0, 8, 1.01), load_point(0, 2, 1.00), load_point(0, 4, 0.70), load_point(0, 16, 2.0, 3.0)};
  const auto picks = run.picks();
  ASSERT_EQ(picks.size(), 1u);
  EXPECT_EQ(picks[0].r.best, 1) << "2 staging buffers within 1% of 8: the cheaper";
  EXPECT_EQ(picks[0].r.next, 0);
  EXPECT_TRUE(picks[0].r.tie);
  EXPECT_EQ(picks[0].r.noisy_faster, 3) << "the noisy 2.0 GiB/s point is named, not picked";
  const std::vector<std::string> lines = tune_load_part_lines(run, run.searches[0]);
  bool said = false;
  for (const std::string& l : lines)
    said = said || l.find("(-1%, a tie within 5%: the cheaper one); faster but noisy: libaio, CE copies, 16 staging "
                          "buffers, iodepth 16, 2.000 GiB/s~") != std::string::npos;
  EXPECT_TRUE(said) << ::testing::PrintToString(lines);
  // Beyond the margin the faster wins; with only noisy points, the fastest of them.
  run.points = {load_point(0, 8, 1.10), load_point(0, 2, 1.00)};
  EXPECT_EQ(run.picks()[0].r.best, 0);
  EXPECT_FALSE(run.picks()[0].r.tie);
  run.points = {load_point(0, 8, 1.10, 2.0), load_point(0, 2, 1.00, 2.0)};
  EXPECT_EQ(run.picks()[0].r.best, 0);
  EXPECT_EQ(run.picks()[0].r.noisy_faster, -1);
}

TEST(TuneAio, APickPrefersQuietThenFewerWorkersWithinTheTieMargin) {
  TuneAioRun run;
  const auto point = [](int workers, unsigned depth, double gib_s, double spread) {
    TuneAioPoint p;
    p.workspace = "/ws";
    p.config.workers = workers, p.config.iodepth = depth;
    p.load = result_at(gib_s, spread);
    p.dump = result_at(gib_s, spread);
    return p;
  };
  run.points = {point(4, 64, 2.02, 1.0), point(1, 64, 2.00, 1.0), point(1, 4, 1.99, 1.0), point(8, 64, 3.0, 2.0)};
  const auto picks = run.picks();
  ASSERT_EQ(picks.size(), 1u);
  EXPECT_EQ(picks[0].load.best, 2) << "1 worker at iodepth 4, within 5% of 4 workers: the cheapest";
  EXPECT_TRUE(picks[0].load.tie);
  EXPECT_EQ(picks[0].load.noisy_faster, 3);
  EXPECT_EQ(picks[0].dump.best, 2);
}

// A failed coarse point drops its arm (unless it holds the best); a failed refining
// point is only that point: its arm, the best, goes on being refined.
TEST(TuneSearch, AFailedRefiningPointDoesNotDropItsArm) {
  KnobSearch s(2, aio_like_axes());
  bool failed_one = false;
  size_t after = 0;
  while (const std::optional<SearchPoint> p = s.next()) {
    const double v = p->knobs[0] == 1 ? 4.0 : 1.0;  // arm 1 is the best
    if (p->phase != "coarse" && p->knobs[0] == 1 && !failed_one) {
      failed_one = true;
      s.record(p->knobs, {0, 0});
      continue;
    }
    after += failed_one && p->knobs[0] == 1;
    s.record(p->knobs, {v, v});
  }
  ASSERT_TRUE(failed_one);
  EXPECT_FALSE(s.dropped(1)) << s.drop_reason(1);
  EXPECT_GT(after, 0u) << "refined on after its point failed";
  KnobSearch c(2, aio_like_axes());
  const std::optional<SearchPoint> first = c.next();
  ASSERT_TRUE(first);
  c.record(first->knobs, {0, 0});
  EXPECT_TRUE(c.dropped(first->knobs[0]));
  EXPECT_EQ(c.drop_reason(first->knobs[0]), "its coarse point failed");
}

// The coarse counts: what ran, what the budget left, what dropped arms never got.
TEST(TuneSearch, CoarseCountsSayWhatWasMeasured) {
  KnobSearch s(3, aio_like_axes());
  size_t n = 0;
  while (const std::optional<SearchPoint> p = s.next()) {
    if (p->phase == "coarse" && ++n > 8) {  // the budget takes 8 coarse points; refining ones fit again
      s.skip(p->knobs);
      continue;
    }
    const double v = p->knobs[0] == 2 ? 0.1 : 1.0;
    s.record(p->knobs, {v, v});
  }
  ASSERT_TRUE(s.dropped(2));
  EXPECT_EQ(s.coarse_planned(), 15u);
  EXPECT_EQ(s.coarse_measured(), 8u);
  EXPECT_EQ(s.coarse_dropped(), 5u - 2u) << "psync's 5 coarse points, 2 of them measured before its drop";
  EXPECT_EQ(s.coarse_skipped(), 15u - 8u - 3u);
  EXPECT_EQ(tune_coarse_words(15, 8, 4, "engines"),
            "8 of 15 coarse points measured, 4 over the budget, 3 of dropped engines");
}

// A failed refining point leaves the run standing with a note; a failed coarse one fails it.
TEST(TuneFailures, OnlyACoarseFailureFailsTheRun) {
  TuneAioRun aio;
  aio.points.resize(2);
  aio.points[0].phase = "coarse";
  aio.points[1].phase = "near-best";
  aio.points[1].error = "io_uring_queue_init: Cannot allocate memory";
  TuneFailures f = tune_failures(nullptr, &aio, nullptr);
  EXPECT_EQ(f.error, "");
  EXPECT_EQ(f.note, "tune: 1 refining point failed (each named above, marked failed in the output); the coarse "
                    "comparison is whole and the recommendations rest on the points that ran");
  aio.points[0].error = "x";
  f = tune_failures(nullptr, &aio, nullptr);
  EXPECT_EQ(f.error, "tune: some points failed (each named above); the rest are in the output");
}

// The load's equivalent command quotes the workspace and keeps the --model words as given.
TEST(TuneLoad, TheEquivalentCommandQuotesTheWorkspace) {
  TuneLoadShape s;
  s.fragments = {1ULL << 20};
  TuneLoadRequest req;
  req.iterations = 2;
  const TuneLoadConfig c;
  EXPECT_EQ(tune_load_command("/data/my kv", s, c, 32, req),
            "dev-sandbox load --workspace '/data/my kv' -s 1M -n 32 -d 1 --engine libaio --iodepth 4 --staging 4 --sdma "
            "false -i 2 --warmup 1");
  s.model_args = "--model '/models/my model' --tp 8 --block-size 128";
  s.block_tokens = 128;
  EXPECT_EQ(tune_load_command("/kv", s, c, 8, req),
            "dev-sandbox load --workspace /kv --model '/models/my model' --tp 8 --block-size 128 --input-len 1024 "
            "-d 1 --engine libaio --iodepth 4 --staging 4 --sdma false -i 2 --warmup 1");
}

// The load's shapes: the smallest, middle and largest of --sizes, at least 4 KiB.
TEST(TuneLoad, ShapesAreTheEndsAndMiddleOfTheSizesFromFourKiB) {
  const auto shapes = tune_load_shapes(size_steps(1024, 1ULL << 20), nullptr, "");
  ASSERT_EQ(shapes.size(), 3u);
  EXPECT_EQ(shapes[0].fragments[0], 4096u);
  EXPECT_EQ(shapes[1].fragments[0], 64u << 10);
  EXPECT_EQ(shapes[2].fragments[0], 1u << 20);
  EXPECT_EQ(tune_load_shapes(size_steps(1024, 2048), nullptr, "").at(0).fragments[0], 4096u);
}
