#include "tune/tune_plan.h"

#include <algorithm>
#include <cmath>

namespace ds {

const char* phase_name(PlanPoint::Phase p) {
  switch (p) {
    case PlanPoint::kCoarse: return "coarse";
    case PlanPoint::kCrossover: return "crossover";
    case PlanPoint::kNearBest: return "near-best";
    case PlanPoint::kFill: return "fill";
  }
  return "?";
}

std::vector<uint64_t> size_steps(uint64_t from, uint64_t to) {
  std::vector<uint64_t> out;
  for (uint64_t s = from; s <= to && s != 0; s *= 2) out.push_back(s);
  return out;
}

TunePlanner::TunePlanner(std::vector<size_t> arm_groups, std::vector<double> size_work)
    : arm_groups_(std::move(arm_groups)), sizes_(size_work.size()), work_(std::move(size_work)) {
  for (size_t g : arm_groups_) groups_ = std::max(groups_, g + 1);
  const size_t n = arm_groups_.size() * sizes_;
  bw_.assign(n, -1);
  cost_.assign(n, -1);
  dropped_.assign(arm_groups_.size(), false);
  drops_.assign(arm_groups_.size(), Drop{});
  // Coarse: every 4th size and the last, smallest first, every arm at each.
  for (size_t s = 0; s < sizes_; ++s) {
    if (s % 4 != 0 && s + 1 != sizes_) continue;
    for (size_t a = 0; a < arm_groups_.size(); ++a) coarse_.push_back({a, s, PlanPoint::kCoarse});
  }
}

double TunePlanner::bandwidth(size_t arm, size_t size) const { return bw_[arm * sizes_ + size]; }

double TunePlanner::nearest_cost(size_t arm, size_t size, double work) const {
  double best = -1;
  size_t best_d = sizes_ + 1;
  for (size_t s = 0; s < sizes_; ++s) {
    const double c = cost_[arm * sizes_ + s];
    if (c < 0) continue;
    const size_t d = s > size ? s - size : size - s;
    if (d >= best_d) continue;
    best_d = d;
    best = c * std::max(1.0, work_[s] > 0 ? work / work_[s] : 1.0);
  }
  return best;
}

double TunePlanner::estimate(size_t arm, size_t size) const { return estimate_work(arm, size, work_[size]); }

double TunePlanner::estimate_work(size_t arm, size_t size, double work) const {
  const double own = nearest_cost(arm, size, work);
  if (own >= 0) return own;
  double group = -1, any = -1;
  for (size_t a = 0; a < arms(); ++a) {
    const double c = nearest_cost(a, size, work);
    if (arm_groups_[a] == arm_groups_[arm]) group = std::max(group, c);
    any = std::max(any, c);
  }
  return group >= 0 ? group : std::max(any, 0.0);
}

int TunePlanner::best_at(size_t g, size_t s, int incumbent) const {
  int best = -1;
  for (size_t a = 0; a < arms(); ++a) {
    if (arm_groups_[a] != g || !measured(a, s)) continue;
    if (best < 0 || bandwidth(a, s) > bandwidth(static_cast<size_t>(best), s)) best = static_cast<int>(a);
  }
  if (best >= 0 && incumbent >= 0 && arm_groups_[static_cast<size_t>(incumbent)] == g &&
      measured(static_cast<size_t>(incumbent), s) &&
      bandwidth(static_cast<size_t>(incumbent), s) >= (1 - kTieMargin) * bandwidth(static_cast<size_t>(best), s))
    return incumbent;
  return best;
}

std::vector<size_t> TunePlanner::measured_sizes(size_t g) const {
  std::vector<size_t> out;
  for (size_t s = 0; s < sizes_; ++s) {
    int n = 0;
    for (size_t a = 0; a < arms(); ++a) n += arm_groups_[a] == g && measured(a, s);
    if (n >= 2) out.push_back(s);
  }
  return out;
}

bool TunePlanner::below_half(size_t a, size_t s) const {
  const int best = best_at(arm_groups_[a], s);
  return best >= 0 && static_cast<size_t>(best) != a &&
         bandwidth(a, s) < kDominated * bandwidth(static_cast<size_t>(best), s);
}

// Once the coarse points are in (an arm that loses at small sizes may win at large
// ones): an arm below half the best at two neighbouring sizes, and at every size it
// was measured at, is dropped. One that is below half at two neighbouring sizes only
// is not refined between them (fill_wanted).
void TunePlanner::check_dominated(size_t g) {
  if (coarse_next_ < coarse_.size()) return;
  for (size_t a = 0; a < arms(); ++a) {
    if (arm_groups_[a] != g || dropped_[a]) continue;
    std::vector<size_t> at;
    bool everywhere = true;
    for (size_t s = 0; s < sizes_; ++s)
      if (measured(a, s)) {
        at.push_back(s);
        everywhere = everywhere && below_half(a, s);
      }
    if (!everywhere || at.size() < 2) continue;
    dropped_[a] = true;
    drops_[a] = {at[0], at[1], best_at(g, at[1])};
  }
}

bool TunePlanner::fill_wanted(size_t a, size_t s) const {
  int lo = -1, hi = -1;
  for (size_t k = 0; k < sizes_; ++k) {
    if (!measured(a, k)) continue;
    if (k < s) lo = static_cast<int>(k);
    if (k > s && hi < 0) hi = static_cast<int>(k);
  }
  const bool lo_below = lo >= 0 && below_half(a, static_cast<size_t>(lo));
  const bool hi_below = hi >= 0 && below_half(a, static_cast<size_t>(hi));
  return !((lo_below || lo < 0) && (hi_below || hi < 0));
}

void TunePlanner::record(const PlanPoint& p, double gib_s, double seconds) {
  bw_[p.arm * sizes_ + p.size] = std::max(0.0, gib_s);
  cost_[p.arm * sizes_ + p.size] = std::max(0.0, seconds);
  check_dominated(arm_groups_[p.arm]);
}

void TunePlanner::exclude(size_t arm) {
  dropped_[arm] = true;
  drops_[arm] = Drop{};
}

std::vector<PlanPoint> TunePlanner::candidates() const {
  std::vector<PlanPoint> cross, near, fill;
  auto want = [&](std::vector<PlanPoint>& into, size_t a, size_t s, PlanPoint::Phase ph) {
    if (dropped_[a] || measured(a, s)) return;
    for (const PlanPoint& q : into)
      if (q.arm == a && q.size == s) return;
    into.push_back({a, s, ph});
  };
  for (size_t g = 0; g < groups_; ++g) {
    const std::vector<size_t> ms = measured_sizes(g);
    int incumbent = -1;
    for (size_t k = 0; k + 1 < ms.size(); ++k) {
      const size_t i = ms[k], j = ms[k + 1];
      const int bi = best_at(g, i, incumbent), bj = best_at(g, j, bi);
      incumbent = bi;
      if (j == i + 1 || bi < 0 || bj < 0) continue;
      const size_t m = (i + j) / 2;
      if (bi != bj) {
        want(cross, static_cast<size_t>(bi), m, PlanPoint::kCrossover);
        want(cross, static_cast<size_t>(bj), m, PlanPoint::kCrossover);
      }
      // Near the best: the arms close to it at either end, at the size between.
      for (size_t a = 0; a < arms(); ++a) {
        if (arm_groups_[a] != g) continue;
        const bool close_i = measured(a, i) && bandwidth(a, i) >= kCloseToBest * bandwidth(static_cast<size_t>(bi), i);
        const bool close_j = measured(a, j) && bandwidth(a, j) >= kCloseToBest * bandwidth(static_cast<size_t>(bj), j);
        if (close_i || close_j) want(near, a, m, PlanPoint::kNearBest);
      }
    }
    for (size_t s = 0; s < sizes_; ++s)
      for (size_t a = 0; a < arms(); ++a)
        if (arm_groups_[a] == g && fill_wanted(a, s)) want(fill, a, s, PlanPoint::kFill);
  }
  cross.insert(cross.end(), near.begin(), near.end());
  cross.insert(cross.end(), fill.begin(), fill.end());
  return cross;
}

std::optional<PlanPoint> TunePlanner::next(double seconds_left) {
  const bool any_measured = std::any_of(cost_.begin(), cost_.end(), [](double c) { return c >= 0; });
  while (coarse_next_ < coarse_.size()) {
    const PlanPoint p = coarse_[coarse_next_++];
    if (dropped_[p.arm]) continue;
    if (any_measured && estimate(p.arm, p.size) > seconds_left) {
      ++coarse_skipped_;
      continue;
    }
    return p;
  }
  if (!coarse_checked_) {  // the coarse points are all in: what is dominated now
    coarse_checked_ = true;
    for (size_t g = 0; g < groups_; ++g) check_dominated(g);
  }
  for (const PlanPoint& p : candidates())
    if (estimate(p.arm, p.size) <= seconds_left) return p;
  return std::nullopt;
}

}  // namespace ds
