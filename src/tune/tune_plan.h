// What `tune` measures next within its budget (docs/tune.md "The budget"): every arm
// at every 4th size first (coarse; the last size too), then, per group, only where it
// pays: the sizes between two measured ones where the best arm changes (bisected,
// both arms, until they are one size step apart), then the best arm and those close
// to it at the sizes between, then the rest. An arm below kDominated of its group's
// best at two neighbouring measured sizes is not refined between them; one below it
// at every size it was measured at (two or more) is dropped: measured no more. A point is
// started only when what it is estimated to cost (from what that arm, else its
// group, cost nearest that size) fits in the time left. Dominance is judged once the
// coarse points are in: an arm that loses at small sizes may win at large ones. No clock here: the caller
// says how much time is left; the planner is deterministic (tests/unit/test_tune.cc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ds {

constexpr double kDominated = 0.5;    // below half the best at two neighbouring sizes: dropped
constexpr double kTieMargin = 0.05;   // a lead under 5% does not move the best (no crossover)
constexpr double kCloseToBest = 0.8;  // refined too: arms at 80% of the best or more

struct PlanPoint {
  size_t arm = 0;
  size_t size = 0;  // index into the sizes
  enum Phase { kCoarse, kCrossover, kNearBest, kFill } phase = kCoarse;
};
const char* phase_name(PlanPoint::Phase p);

// block sizes FROM..TO, powers of two (FROM and TO rounded to them by the caller).
std::vector<uint64_t> size_steps(uint64_t from, uint64_t to);

// Whether a point estimated to cost `estimate_s` (0: nothing to estimate it from)
// may start with `left_s` seconds left: only while time is left, and when it fits.
inline bool point_fits(double estimate_s, double left_s) { return left_s > 0 && estimate_s <= left_s; }

class TunePlanner {
 public:
  // arm_groups[a]: arm a's group; size_work[s]: what a point at size s moves (bytes
  // per iteration), which scales a cost measured at another size to this one.
  TunePlanner(std::vector<size_t> arm_groups, std::vector<double> size_work);

  // The next point whose estimated cost fits in `seconds_left`, or none: done.
  std::optional<PlanPoint> next(double seconds_left);
  // What the point measured: bandwidth (GiB/s; 0: it failed) and what it cost.
  void record(const PlanPoint& p, double gib_s, double seconds);
  // Measured no more (its point failed): dropped with no leader.
  void exclude(size_t arm);

  // The best arm of group `g` at size `s` among those measured there (with the tie
  // margin against `incumbent`, an arm that led before); -1 when none was.
  int best_at(size_t g, size_t s, int incumbent = -1) const;
  double bandwidth(size_t arm, size_t size) const;  // <0: not measured
  bool dropped(size_t arm) const { return dropped_[arm]; }
  // Why it was dropped ("below 50% of ms_4's ... at 4K and 64K" is the caller's
  // wording): the two sizes and the arm that led at them.
  struct Drop {
    size_t size_a = 0, size_b = 0;
    int leader = -1;
  };
  const Drop& drop(size_t arm) const { return drops_[arm]; }
  // Seconds: the cost measured nearest `size` for the arm, else for its group, else
  // for any arm, scaled up by the work (never down); 0 before anything was measured.
  double estimate(size_t arm, size_t size) const;
  // The same for a point near size `size` that moves `work` bytes per iteration (a
  // --model point: the whole per-card request): the cost per byte measured nearest
  // that size for the arm, else its group, else any arm, times max(work, that point's).
  double estimate_work(size_t arm, size_t size, double work) const;
  size_t groups() const { return groups_; }
  size_t sizes() const { return sizes_; }
  size_t arms() const { return arm_groups_.size(); }
  size_t group_of(size_t arm) const { return arm_groups_[arm]; }
  // How many coarse points were planned and how many were left unmeasured.
  size_t coarse_planned() const { return coarse_.size(); }
  size_t coarse_skipped() const { return coarse_skipped_; }

 private:
  std::vector<PlanPoint> candidates() const;
  void check_dominated(size_t group);
  double nearest_cost(size_t arm, size_t size, double work) const;  // <0: none measured
  bool below_half(size_t arm, size_t size) const;
  bool fill_wanted(size_t arm, size_t size) const;
  bool measured(size_t arm, size_t size) const { return bw_[arm * sizes_ + size] >= 0; }
  std::vector<size_t> measured_sizes(size_t g) const;  // sizes with 2+ arms of g measured

  std::vector<size_t> arm_groups_;
  size_t sizes_ = 0, groups_ = 0;
  std::vector<double> work_;
  std::vector<double> bw_, cost_;  // arm * sizes_ + size; -1: not measured
  std::vector<bool> dropped_;
  std::vector<Drop> drops_;
  std::vector<PlanPoint> coarse_;
  size_t coarse_next_ = 0, coarse_skipped_ = 0;
  bool coarse_checked_ = false;
};

}  // namespace ds
