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

size_t KnobSearch::coarse_per_arm() const {
  size_t extra = 0;
  for (const SearchAxis& a : axes_)
    if (a.secondary) extra += a.coarse.size() - 1;
  return coarse_cells().size() + extra;
}

size_t KnobSearch::coarse_planned() const { return arms_ * coarse_per_arm(); }

bool KnobSearch::offered_coarse(const Knobs& k) const {
  const std::optional<SearchPoint> c = next_coarse();
  return c && c->knobs == k;
}

size_t KnobSearch::coarse_measured() const {
  size_t n = 0;
  for (const Done& d : done_) n += d.coarse && !d.scores.empty();
  return n;
}

size_t KnobSearch::coarse_dropped() const {
  size_t n = 0;
  for (size_t arm = 0; arm < arms_; ++arm) {
    if (!dropped(arm)) continue;
    size_t ran = 0;
    for (const Done& d : done_) ran += d.coarse && !d.scores.empty() && d.knobs[0] == arm;
    n += coarse_per_arm() - std::min(ran, coarse_per_arm());
  }
  return n;
}

size_t KnobSearch::coarse_skipped() const {
  const size_t ran = coarse_measured() + coarse_dropped();
  return coarse_planned() > ran ? coarse_planned() - ran : 0;
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
  if (!done(k)) done_.push_back({k, {}, false});
}

void KnobSearch::leave_out(const Knobs& k) {
  if (!done(k)) done_.push_back({k, {}, false});
}

void KnobSearch::record(const Knobs& k, const std::vector<double>& scores) {
  const bool coarse = offered_coarse(k);
  if (scores.empty() || !(scores[0] > 0)) {
    // A failed coarse point leaves its arm uncompared: dropped, unless it holds the
    // best point so far. A refining one fails alone: only that point.
    const Done* best = nullptr;
    for (const Done& d : done_)
      if (!d.scores.empty() && d.scores[0] > 0 && (!best || d.scores[0] > best->scores[0])) best = &d;
    const bool holds_best = best && best->knobs[0] == k[0];
    if (coarse && !dropped(k[0]) && !holds_best) drop_[k[0]] = "its coarse point failed";
    done_.push_back({k, scores.empty() ? std::vector<double>{0} : scores, coarse});
    return;
  }
  done_.push_back({k, scores, coarse});
  for (size_t arm = 0; arm < arms_; ++arm) check_drop(arm);
}

RankedPick rank_points(const std::vector<RankCandidate>& c) {
  RankedPick r;
  std::vector<const RankCandidate*> ran, quiet;
  for (const RankCandidate& x : c)
    if (x.gib_s > 0) {
      ran.push_back(&x);
      if (!x.noisy) quiet.push_back(&x);
    }
  if (ran.empty()) return r;
  const std::vector<const RankCandidate*>& pool = quiet.empty() ? ran : quiet;
  const RankCandidate* top = pool[0];
  for (const RankCandidate* x : pool)
    if (x->gib_s > top->gib_s) top = x;
  // Within the tie margin of the fastest, the cheapest (then the faster of equal cost).
  const RankCandidate* best = top;
  for (const RankCandidate* x : pool)
    if (x->gib_s >= (1 - kTieMargin) * top->gib_s &&
        (x->cost < best->cost || (x->cost == best->cost && x->gib_s > best->gib_s)))
      best = x;
  r.best = best->index;
  const RankCandidate* next = nullptr;
  const std::vector<const RankCandidate*>* const froms[] = {&pool, &ran};
  for (const std::vector<const RankCandidate*>* from : froms) {
    for (const RankCandidate* x : *from)
      if (x != best && (!next || x->gib_s > next->gib_s)) next = x;
    if (next) break;
  }
  if (next) {
    r.next = next->index;
    r.tie = std::min(next->gib_s, best->gib_s) >= (1 - kTieMargin) * std::max(next->gib_s, best->gib_s);
  }
  if (!best->noisy) {
    const RankCandidate* loud = nullptr;
    for (const RankCandidate* x : ran)
      if (x->noisy && x->gib_s > best->gib_s && (!loud || x->gib_s > loud->gib_s)) loud = x;
    r.noisy_faster = loud ? loud->index : -1;
  }
  return r;
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
