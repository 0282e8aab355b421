#include "tune/tune_search.h"

#include <algorithm>
#include <utility>

#include "tune/tune_plan.h"

namespace ds {

KnobSearch::KnobSearch(size_t arms, std::vector<SearchAxis> axes) : arms_(arms), axes_(std::move(axes)), drop_(arms) {}

void KnobSearch::name(std::vector<std::string> arms, std::vector<std::vector<std::string>> values) {
  arm_names_ = std::move(arms);
  value_names_ = std::move(values);
}

const KnobSearch::Done* KnobSearch::find(const Knobs& k) const {
  for (const Done& d : done_)
    if (d.knobs == k) return &d;
  return nullptr;
}

double KnobSearch::score(const Knobs& k, size_t i) const {
  const Done* d = find(k);
  return d && d->scores.size() > i ? d->scores[i] : -1;
}

std::vector<Knobs> KnobSearch::coarse_cells() const {
  std::vector<Knobs> cells = {Knobs(axes_.size() + 1, 0)};
  for (size_t a = 0; a < axes_.size(); ++a) {
    std::vector<Knobs> grown;
    for (const Knobs& c : cells) {
      const size_t n = axes_[a].secondary ? 1 : axes_[a].coarse.size();
      for (size_t v = 0; v < n; ++v) {
        Knobs k = c;
        k[a + 1] = axes_[a].coarse[v];
        grown.push_back(k);
      }
    }
    cells = std::move(grown);
  }
  return cells;
}

bool KnobSearch::is_coarse(const Knobs& k) const {
  size_t off_base = 0;  // secondary axes away from their coarse[0]
  for (size_t a = 0; a < axes_.size(); ++a) {
    const std::vector<size_t>& c = axes_[a].coarse;
    if (std::find(c.begin(), c.end(), k[a + 1]) == c.end()) return false;
    if (axes_[a].secondary && k[a + 1] != c[0]) ++off_base;
  }
  return off_base <= 1;
}

size_t KnobSearch::secondary_coarse() const {
  size_t extra = 0;
  for (const SearchAxis& a : axes_)
    if (a.secondary) extra += a.coarse.size() - 1;
  return extra;
}

size_t KnobSearch::coarse_planned() const { return arms_ * (coarse_cells().size() + secondary_coarse()); }

size_t KnobSearch::coarse_skipped() const {
  // An arm the budget left without a point in the main grid never reaches its
  // secondary values (they are taken at its best cell): the budget left those too.
  size_t n = coarse_skipped_;
  for (size_t arm = 0; arm < arms_; ++arm)
    if (!dropped(arm) && !best_coarse(arm)) n += secondary_coarse();
  return n;
}

const Knobs* KnobSearch::best_coarse(size_t arm) const {
  const Knobs* best = nullptr;
  for (const Knobs& cell : coarse_cells()) {
    Knobs k = cell;
    k[0] = arm;
    const Done* d = find(k);
    if (d && !d->scores.empty() && d->scores[0] > 0 && (!best || d->scores[0] > score(*best))) best = &d->knobs;
  }
  return best;
}

int KnobSearch::best_arm_at(const Knobs& cell) const {
  int best = -1;
  double best_s = 0;
  for (size_t arm = 0; arm < arms_; ++arm) {
    Knobs k = cell;
    k[0] = arm;
    const double s = score(k);
    if (s > best_s) best_s = s, best = static_cast<int>(arm);
  }
  return best;
}

std::optional<SearchPoint> KnobSearch::next_coarse() const {
  // Cell by cell, every arm at each, so a budget cut short still compares the arms.
  const std::vector<Knobs> cells = coarse_cells();
  for (const Knobs& cell : cells)
    for (size_t arm = 0; arm < arms_; ++arm) {
      Knobs k = cell;
      k[0] = arm;
      if (!dropped(arm) && !done(k)) return SearchPoint{k, "coarse"};
    }
  // The secondary knobs' other coarse values at each arm's best coarse cell.
  for (size_t arm = 0; arm < arms_; ++arm) {
    if (dropped(arm)) continue;
    const Knobs* best = best_coarse(arm);
    if (!best) continue;
    for (size_t a = 0; a < axes_.size(); ++a) {
      if (!axes_[a].secondary) continue;
      for (size_t v = 1; v < axes_[a].coarse.size(); ++v) {
        Knobs k = *best;
        k[a + 1] = axes_[a].coarse[v];
        if (!done(k)) return SearchPoint{k, "coarse"};
      }
    }
  }
  return std::nullopt;
}

std::optional<SearchPoint> KnobSearch::next_crossover() const {
  for (const Knobs& cell : coarse_cells())
    for (size_t a = 0; a < axes_.size(); ++a) {
      if (axes_[a].secondary) continue;
      const std::vector<size_t>& c = axes_[a].coarse;
      const auto at = std::find(c.begin(), c.end(), cell[a + 1]);
      if (at + 1 >= c.end()) continue;
      Knobs other = cell;
      other[a + 1] = *(at + 1);
      const int x = best_arm_at(cell), y = best_arm_at(other);
      if (x < 0 || y < 0 || x == y || *(at + 1) - *at < 2) continue;
      for (int arm : {x, y}) {
        Knobs mid = cell;
        mid[0] = static_cast<size_t>(arm);
        mid[a + 1] = (*at + *(at + 1)) / 2;
        if (!dropped(static_cast<size_t>(arm)) && !done(mid)) return SearchPoint{mid, "crossover"};
      }
    }
  return std::nullopt;
}

std::optional<SearchPoint> KnobSearch::next_near_best() const {
  std::vector<const Done*> ranked;
  for (const Done& d : done_)
    if (!d.scores.empty() && d.scores[0] > 0 && !dropped(d.knobs[0])) ranked.push_back(&d);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Done* x, const Done* y) { return x->scores[0] > y->scores[0]; });
  for (const Done* d : ranked)
    for (size_t a = 0; a < axes_.size(); ++a)
      for (int step : {-1, 1}) {
        const size_t i = d->knobs[a + 1];
        if ((step < 0 && i == 0) || (step > 0 && i + 1 >= axes_[a].values)) continue;
        Knobs k = d->knobs;
        k[a + 1] = step < 0 ? i - 1 : i + 1;
        if (!done(k)) return SearchPoint{k, "near-best"};
      }
  return std::nullopt;
}

std::optional<SearchPoint> KnobSearch::next() const {
  if (auto c = next_coarse()) return c;
  if (auto c = next_crossover()) return c;
  return next_near_best();
}

void KnobSearch::skip(const Knobs& k) {
  if (done(k)) return;
  done_.push_back({k, {}});
  if (is_coarse(k)) ++coarse_skipped_;
}

void KnobSearch::record(const Knobs& k, const std::vector<double>& scores) {
  done_.push_back({k, scores});
  if (scores.empty() || !(scores[0] > 0)) {
    if (!dropped(k[0])) drop_[k[0]] = "its point failed";
    return;
  }
  for (size_t arm = 0; arm < arms_; ++arm) check_drop(arm);
}

namespace {

std::string word(const std::vector<std::string>& names, size_t i) {
  return i < names.size() ? names[i] : "#" + std::to_string(i);
}

}  // namespace

// Below kDominated of the best arm, in every score, at two neighbouring coarse cells.
void KnobSearch::check_drop(size_t arm) {
  if (dropped(arm)) return;
  const std::vector<Knobs> cells = coarse_cells();
  auto dominated = [&](const Knobs& cell, int* leader) {
    Knobs k = cell;
    k[0] = arm;
    const Done* mine = find(k);
    if (!mine || mine->scores.empty()) return false;
    for (size_t i = 0; i < mine->scores.size(); ++i) {
      double best = 0;
      int who = -1;
      for (size_t o = 0; o < arms_; ++o) {
        k[0] = o;
        if (o != arm && score(k, i) > best) best = score(k, i), who = static_cast<int>(o);
      }
      if (who < 0 || !(mine->scores[i] < kDominated * best)) return false;
      if (i == 0) *leader = who;
    }
    return true;
  };
  for (const Knobs& cell : cells) {
    int leader = -1, unused = -1;
    if (!dominated(cell, &leader)) continue;
    for (size_t a = 0; a < axes_.size(); ++a) {
      if (axes_[a].secondary) continue;
      const std::vector<size_t>& c = axes_[a].coarse;
      const auto at = std::find(c.begin(), c.end(), cell[a + 1]);
      if (at + 1 >= c.end()) continue;
      Knobs other = cell;
      other[a + 1] = *(at + 1);
      if (!dominated(other, &unused)) continue;
      auto cell_words = [&](const Knobs& k) {
        std::string s;
        for (size_t b = 0; b < axes_.size(); ++b)
          if (!axes_[b].secondary)
            s += (s.empty() ? "" : ", ") + (b < value_names_.size() ? word(value_names_[b], k[b + 1]) : "#");
        return s;
      };
      drop_[arm] = "below " + std::to_string(static_cast<int>(kDominated * 100)) + "% of " +
                   word(arm_names_, static_cast<size_t>(leader)) + " at " + cell_words(cell) + " and at " +
                   cell_words(other);
      return;
    }
  }
}

}  // namespace ds
