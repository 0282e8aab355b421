// tune's text and tune/v1 JSON (docs/tune.md, docs/schemas/tune-v1.schema.json).
#include "tune/tune_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/size_label.h"
#include "core/sysinfo.h"
#include "core/units.h"

namespace ds {

namespace {

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

std::string pct(double lead) { return "+" + std::to_string(static_cast<int>(std::lround(lead * 100))) + "%"; }

const std::string& method(const TuneCopyRun& run, int arm) { return run.arms.arms[static_cast<size_t>(arm)].method; }

// One group's table: per size the best, the runner-up and every arm's BW.
void group_table(std::ostringstream& o, const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  std::vector<size_t> arms;
  size_t w = 10;
  for (size_t a = 0; a < run.arms.arms.size(); ++a)
    if (run.arms.arms[a].group == g) {
      arms.push_back(a);
      w = std::max(w, run.arms.arms[a].method.size() + 2);
    }
  o << pad("Size(KB)", 10) << pad("Best", w) << pad("BW(GiB/s)", 11) << pad("Runner-up", w) << pad("Lead", 7);
  for (size_t a : arms) o << pad(run.arms.arms[a].method, w);
  o << "\n";
  for (const TuneRow& r : f.rows) {
    o << pad(format_kib(run.sizes[r.size]), 10) << pad(method(run, r.best), w)
      << pad(fixed(r.best_gib_s, 3) + (r.noisy ? "~" : ""), 11)
      << pad(r.runner_up >= 0 ? method(run, r.runner_up) : "-", w)
      << pad(r.runner_up >= 0 && r.runner_up_gib_s > 0 ? pct(r.best_gib_s / r.runner_up_gib_s - 1) : "-", 7);
    for (size_t a : arms) {
      const TunePoint* p = run.at(a, r.size);
      o << pad(!p ? "-" : !p->error.empty() ? "failed" : fixed(p->gib_s(), 3) + (p->noisy() ? "~" : ""), w);
    }
    o << "\n";
  }
}

void group_words(std::ostringstream& o, const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  bool noisy = false;
  for (const TunePoint& p : run.points) noisy = noisy || (run.arms.arms[p.arm].group == g && p.noisy());
  if (noisy) o << "~ noisy: P90/P50 of the point's Copy above " << fixed(kNoisySpread, 2) << "\n";
  for (size_t a = 0; a < run.arms.arms.size(); ++a)
    if (run.arms.arms[a].group == g && !run.dropped[a].empty())
      o << "dropped: " << run.arms.arms[a].method << " (" << run.dropped[a] << ")\n";
  std::string cross;
  for (const TuneCrossover& c : f.crossovers) cross += (cross.empty() ? "" : "; ") + crossover_text(run, c);
  o << "crossovers: " << (cross.empty() ? "none measured" : cross) << "\n";
  std::string use;
  for (const TuneChoice& c : f.choices) {
    const TuneArm& arm = run.arms.arms[static_cast<size_t>(c.arm)];
    use += (use.empty() ? "" : "; ") + arm.method + " (" + arm.spec.name + ") for " + size_words(run.sizes[c.from]) +
           (c.to != c.from ? ".." + size_words(run.sizes[c.to]) : "") + (c.noisy ? " (rests on a noisy point)" : "");
  }
  if (!use.empty()) o << "use: " << use << "\n";
}

void model_text(std::ostringstream& o, const TuneCopyRun& run, const TuneFindings& f) {
  if (run.model_label.empty()) return;
  o << "\n[[ model ]] " << run.model_label << " (its blocks contiguous; copy takes no block table yet)\n";
  for (size_t g = 0; g < run.arms.groups.size(); ++g) {
    const int b = f.model_best_per_group[g];
    o << run.arms.groups[g].title << ": ";
    if (b < 0) {
      o << "not measured (no time left)\n";
      continue;
    }
    const TunePoint& best = run.model_points[static_cast<size_t>(b)];
    const TunePoint* next = nullptr;
    for (const TunePoint& p : run.model_points)
      if (&p != &best && p.error.empty() && run.arms.arms[p.arm].group == g && (!next || p.gib_s() > next->gib_s()))
        next = &p;
    o << "use " << run.arms.arms[best.arm].method << " (" << run.arms.arms[best.arm].spec.name << "), "
      << fixed(best.gib_s(), 3) << " GiB/s" << (best.noisy() ? " (noisy)" : "");
    if (next)
      o << "; next " << run.arms.arms[next->arm].method << " " << fixed(next->gib_s(), 3) << " GiB/s ("
        << pct(best.gib_s() / std::max(1e-12, next->gib_s()) - 1) << ")";
    o << "\n";
  }
}

void aio_text(std::ostringstream& o, const TuneAioRun& aio) {
  o << "\n[[ aio ]] " << aio.points.size() << " points, shards of " << size_words(aio.io_size) << ", "
    << format_bytes(aio.bytes) << " per epoch, " << aio.epochs << " epochs each\n";
  for (const std::string& u : aio.engines_unavailable) o << "not measured: " << u << "\n";
  for (const TuneAioRun::Pick& k : aio.picks()) {
    auto line = [&](const char* what, int best, int next, double (TuneAioPoint::*bw)() const) {
      if (best < 0) {
        o << k.workspace << " " << what << ": no point ran\n";
        return;
      }
      const TuneAioPoint& b = aio.points[static_cast<size_t>(best)];
      o << k.workspace << " " << what << ": use " << aio_config_text(b.config) << ", " << fixed((b.*bw)(), 3)
        << " GiB/s" << (b.noisy() ? " (noisy)" : "");
      if (next >= 0) {
        const TuneAioPoint& n = aio.points[static_cast<size_t>(next)];
        o << "; next " << aio_config_text(n.config) << ", " << fixed((n.*bw)(), 3) << " GiB/s ("
          << pct((b.*bw)() / std::max(1e-12, (n.*bw)()) - 1) << ")";
      }
      o << "\n";
    };
    line("load", k.best_load, k.next_load, &TuneAioPoint::load_gib_s);
    line("dump", k.best_dump, k.next_dump, &TuneAioPoint::dump_gib_s);
  }
}

}  // namespace

std::string tune_text(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                      const TuneAioRun* aio) {
  std::ostringstream o;
  o << "tune: backend " << ctx.info.backend << ", budget " << fixed(ctx.budget_s, 1) << " s, took "
    << fixed(ctx.elapsed_s, 1) << " s\n";
  if (copy && findings) {
    size_t dropped = 0;
    for (const std::string& d : copy->dropped) dropped += !d.empty();
    o << "copy: " << copy->points.size() << " points (" << copy->coarse_planned - copy->coarse_skipped << " of "
      << copy->coarse_planned << " coarse; the rest refined near crossovers and the best), " << dropped
      << " methods dropped; each point " << copy->iterations << " iterations after " << copy->warmup
      << " warm-up, 32 MiB of blocks per iteration (2 to 64 blocks)\n";
    if (copy->coarse_skipped > 0)
      o << "note: the budget left " << copy->coarse_skipped << " coarse points unmeasured; a larger --budget fills them\n";
    for (size_t g = 0; g < copy->arms.groups.size(); ++g) {
      o << "\n[[ " << copy->arms.groups[g].title << " ]]\n";
      group_table(o, *copy, findings->groups[g], g);
      group_words(o, *copy, findings->groups[g], g);
    }
    model_text(o, *copy, *findings);
  }
  if (aio) aio_text(o, *aio);
  return o.str();
}

}  // namespace ds
