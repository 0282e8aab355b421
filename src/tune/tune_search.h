// A search over the product of a few knobs within a budget (docs/tune.md, "The
// store" and "The staged load"): `tune --what aio`'s engine x iodepth x workers x
// shards per file, `tune --what load`'s engine and copy path x staging buffers x
// iodepth. The first knob is the *arm* (an engine, or an engine with its copy path):
// every arm is measured at every cell of the coarse grid (the product of the other
// knobs' coarse values), then a secondary knob's other coarse values at each arm's
// best cell; then, refining, the value between two neighbouring cells whose best arm
// differs (a crossover), then one step along any knob from the best points measured,
// best first, until nothing is left or the caller stops. An arm below kDominated of
// the best at two neighbouring coarse cells, in every score, is dropped: measured no
// more. Pure bookkeeping: the caller measures and says what each point scored.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace ds {

struct SearchAxis {
  std::string name;            // "iodepth", for the drop reason
  size_t values = 1;           // its ladder's length (indices 0..values-1, ascending)
  std::vector<size_t> coarse;  // the coarse grid's indices, ascending (at least one)
  // Secondary: only coarse[0] is in the product; each other coarse value is measured
  // at each arm's best point once the product is in.
  bool secondary = false;
};

// [0] the arm, then one ladder index per axis.
using Knobs = std::vector<size_t>;

struct SearchPoint {
  Knobs knobs;
  std::string phase;  // "coarse", "crossover", "near-best"
};

class KnobSearch {
 public:
  KnobSearch(size_t arms, std::vector<SearchAxis> axes);

  // The next point to measure; nullopt when nothing is left to measure.
  std::optional<SearchPoint> next() const;
  // What a point scored (every score higher-is-better; [0] ranks the points): 0 when
  // it failed. A coarse point that failed drops its arm, unless the arm holds the
  // best point measured; a refining one is only that point failed (never offered
  // again, never stepped from).
  void record(const Knobs& k, const std::vector<double>& scores);
  // A point the caller could not fit: never offered again (counted in coarse_skipped
  // when coarse).
  void skip(const Knobs& k);
  // A point the caller leaves out of the search (it cannot be measured as the others
  // are): never offered, not counted as skipped.
  void leave_out(const Knobs& k);

  bool dropped(size_t arm) const { return !drop_[arm].empty(); }
  // "below 50% of io_uring at iodepth 4 and 64": the two cells' differing knob, in
  // words the caller gives (arm names, each axis's value names).
  const std::string& drop_reason(size_t arm) const { return drop_[arm]; }
  size_t coarse_planned() const;
  // Of the coarse points planned: those that ran (failed ones included), those of
  // arms dropped before their turn, and the rest, which the budget left unmeasured.
  size_t coarse_measured() const;
  size_t coarse_dropped() const;
  size_t coarse_skipped() const;
  // Words for the reasons: arm names, and per axis its values' names.
  void name(std::vector<std::string> arms, std::vector<std::vector<std::string>> values);

 private:
  struct Done {
    Knobs knobs;
    std::vector<double> scores;  // empty: skipped
    bool coarse = false;         // offered as a coarse point
  };
  bool offered_coarse(const Knobs& k) const;  // the coarse point next() offers now
  size_t coarse_per_arm() const;
  const Done* find(const Knobs& k) const;
  bool done(const Knobs& k) const { return find(k) != nullptr; }
  double score(const Knobs& k, size_t i = 0) const;  // -1: not measured
  std::vector<Knobs> coarse_cells() const;            // the main product, the secondaries at coarse[0]
  const Knobs* best_coarse(size_t arm) const;         // its best main-grid point measured; null: none
  std::optional<SearchPoint> next_coarse() const;
  std::optional<SearchPoint> next_crossover() const;
  std::optional<SearchPoint> next_near_best() const;
  int best_arm_at(const Knobs& cell) const;  // cell's arm ignored; -1: none measured
  void check_drop(size_t arm);

  size_t arms_;
  std::vector<SearchAxis> axes_;
  std::vector<Done> done_;
  std::vector<std::string> drop_;
  std::vector<std::string> arm_names_;
  std::vector<std::vector<std::string>> value_names_;
};

// The recommendation among measured points, as copy's (docs/tune.md): a noisy point
// (P90/P50 above kNoisySpread) ranks after every quiet one; among the quiet ones,
// those within kTieMargin of the fastest are a tie, and the tie goes to the cheapest
// (the lowest `cost`, compared in order: the caller's knobs, fewest buffers first).
struct RankCandidate {
  int index = -1;             // the caller's point
  double gib_s = 0;           // 0: it failed (never picked)
  bool noisy = false;
  std::vector<double> cost;   // lower is cheaper, compared lexicographically
};
struct RankedPick {
  int best = -1, next = -1;  // -1: none; next: the fastest other than best (quiet first)
  bool tie = false;          // next is within kTieMargin of best (either way)
  int noisy_faster = -1;     // the fastest noisy point faster than a quiet best; -1 none
};
RankedPick rank_points(const std::vector<RankCandidate>& candidates);

}  // namespace ds
