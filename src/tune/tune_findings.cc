// The reading of a tune run's points: best, runner-up, crossovers, choices.
#include <algorithm>
#include <cmath>

#include "core/size_label.h"
#include "tune/tune_report.h"

namespace ds {

namespace {

double bw_of(const TuneCopyRun& run, size_t arm, size_t size) {
  const TunePoint* p = run.at(arm, size);
  return p && p->error.empty() ? p->gib_s() : -1;
}

bool noisy_at(const TuneCopyRun& run, int arm, size_t size) {
  if (arm < 0) return false;
  const TunePoint* p = run.at(static_cast<size_t>(arm), size);
  return p && p->noisy();
}

// The arms of group g by bandwidth at `size`, best first (only those measured there).
std::vector<size_t> ranked(const TuneCopyRun& run, size_t g, size_t size) {
  std::vector<size_t> out;
  for (size_t a = 0; a < run.arms.arms.size(); ++a)
    if (run.arms.arms[a].group == g && bw_of(run, a, size) >= 0) out.push_back(a);
  std::stable_sort(out.begin(), out.end(),
                   [&](size_t x, size_t y) { return bw_of(run, x, size) > bw_of(run, y, size); });
  return out;
}

TuneGroupFindings group_findings(const TuneCopyRun& run, size_t g) {
  TuneGroupFindings f;
  int incumbent = -1;
  size_t previous = 0;
  for (size_t s = 0; s < run.sizes.size(); ++s) {
    const std::vector<size_t> r = ranked(run, g, s);
    if (r.empty()) continue;
    TuneRow row;
    row.size = s;
    row.best = static_cast<int>(r[0]);
    row.best_gib_s = bw_of(run, r[0], s);
    if (r.size() > 1) {
      row.runner_up = static_cast<int>(r[1]);
      row.runner_up_gib_s = bw_of(run, r[1], s);
    }
    row.noisy = noisy_at(run, row.best, s);
    f.rows.push_back(row);
    if (r.size() < 2) continue;  // a size with one arm says nothing about where they cross
    // The leader changes only by more than the tie margin, and only where the one
    // leading so far was measured too: a size it has no point at (failed, or skipped
    // for the budget) compares nothing with it, so it moves no crossover.
    int leader = row.best;
    const double inc_bw = incumbent >= 0 ? bw_of(run, static_cast<size_t>(incumbent), s) : -1;
    if (incumbent >= 0 && inc_bw <= 0) continue;
    if (incumbent >= 0 && inc_bw >= (1 - kTieMargin) * row.best_gib_s) leader = incumbent;
    if (incumbent < 0) {
      f.crossovers.push_back({leader, row.runner_up, s, s, row.best_gib_s / std::max(1e-12, row.runner_up_gib_s) - 1,
                              row.noisy || noisy_at(run, row.runner_up, s)});
      f.choices.push_back({leader, s, s, row.noisy});
    } else if (leader != incumbent) {
      const double lose = std::max(1e-12, inc_bw);
      f.crossovers.push_back({leader, incumbent, s, previous, bw_of(run, static_cast<size_t>(leader), s) / lose - 1,
                              noisy_at(run, leader, s) || noisy_at(run, incumbent, s)});
      f.choices.push_back({leader, s, s, noisy_at(run, leader, s)});
    }
    f.choices.back().to = s;
    f.choices.back().noisy = f.choices.back().noisy || noisy_at(run, leader, s);
    incumbent = leader;
    previous = s;
  }
  return f;
}

}  // namespace

std::string size_words(uint64_t bytes) {
  std::string l = size_label(bytes);
  const char u = l.empty() ? ' ' : l.back();
  if (u == 'K' || u == 'M' || u == 'G' || u == 'T') return l.substr(0, l.size() - 1) + " " + u + "iB";
  return l + " B";
}

TuneFindings tune_findings(const TuneCopyRun& run) {
  TuneFindings f;
  for (size_t g = 0; g < run.arms.groups.size(); ++g) f.groups.push_back(group_findings(run, g));
  f.model_best_per_group.assign(run.arms.groups.size(), -1);
  f.model_paged_best_per_group.assign(run.arms.groups.size(), -1);
  for (size_t i = 0; i < run.model_points.size(); ++i) {
    const TunePoint& p = run.model_points[i];
    if (!p.error.empty()) continue;
    int& best = (p.paged ? f.model_paged_best_per_group : f.model_best_per_group)[run.arms.arms[p.arm].group];
    if (best < 0 || p.gib_s() > run.model_points[static_cast<size_t>(best)].gib_s()) best = static_cast<int>(i);
  }
  return f;
}

std::string crossover_text(const TuneCopyRun& run, const TuneCrossover& c) {
  const auto name = [&](int a) { return run.arms.arms[static_cast<size_t>(a)].method; };
  std::string t = name(c.winner);
  if (c.loser < 0) return t + " is the only method measured from " + size_words(run.sizes[c.size]);
  t += " beats " + name(c.loser) + " from " + size_words(run.sizes[c.size]) + " (by " +
       std::to_string(std::lround(std::min(c.lead * 100, 1e9))) + "%";
  if (c.previous != c.size && c.previous + 1 != c.size)
    t += "; somewhere above " + size_words(run.sizes[c.previous]) + ", not refined";
  if (c.noisy) t += "; noisy";
  return t + ")";
}

}  // namespace ds
