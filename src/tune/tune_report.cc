// tune's text and tune/v1 JSON (docs/tune.md, docs/schemas/tune-v1.schema.json).
#include "tune/tune_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/size_label.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "layout/block_table.h"
#include "measurement/paged_figure.h"

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

// The arms of group g, and the width of a method column (text).
std::vector<size_t> arms_of(const TuneCopyRun& run, size_t g, size_t* width) {
  std::vector<size_t> arms;
  *width = 10;
  for (size_t a = 0; a < run.arms.arms.size(); ++a)
    if (run.arms.arms[a].group == g) {
      arms.push_back(a);
      *width = std::max(*width, run.arms.arms[a].method.size() + 2);
    }
  return arms;
}

void text_table(std::ostringstream& o, const ReportTable& t, const std::vector<size_t>& widths) {
  for (size_t i = 0; i < t.header.size(); ++i) o << pad(t.header[i], widths[i]);
  o << "\n";
  for (const std::vector<std::string>& row : t.rows) {
    for (size_t i = 0; i < row.size(); ++i) o << pad(row[i], widths[i]);
    o << "\n";
  }
}

std::string pick_line(const char* what, const std::string& workspace, const TuneAioRun& aio, const RankedPick& r,
                      double (TuneAioPoint::*bw)() const) {
  if (r.best < 0) return workspace + " " + what + ": no point ran";
  const TuneAioPoint& b = aio.points[static_cast<size_t>(r.best)];
  std::string o = workspace + " " + what + ": use " + aio_config_text(b.config) + ", " + fixed((b.*bw)(), 3) +
                  " GiB/s" + (b.noisy() ? " (noisy)" : "");
  if (r.next >= 0) {
    const TuneAioPoint& n = aio.points[static_cast<size_t>(r.next)];
    o += "; next " + aio_config_text(n.config) + ", " + fixed((n.*bw)(), 3) + " GiB/s (" +
         tune_lead_words((b.*bw)(), (n.*bw)(), r.tie) + ")";
  }
  if (r.noisy_faster >= 0) {
    const TuneAioPoint& n = aio.points[static_cast<size_t>(r.noisy_faster)];
    o += "; faster but noisy: " + aio_config_text(n.config) + ", " + fixed((n.*bw)(), 3) + " GiB/s~";
  }
  return o;
}

}  // namespace

ReportTable tune_group_table(const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  size_t w = 0;
  const std::vector<size_t> arms = arms_of(run, g, &w);
  ReportTable t;
  t.caption = run.arms.groups[g].title;
  t.header = {"Size(KB)", "Best", "BW(GiB/s)", "Runner-up", "Lead"};
  for (size_t a : arms) t.header.push_back(run.arms.arms[a].method);
  for (const TuneRow& r : f.rows) {
    std::vector<std::string> row = {
        format_kib(run.sizes[r.size]), method(run, r.best), fixed(r.best_gib_s, 3) + (r.noisy ? "~" : ""),
        r.runner_up >= 0 ? method(run, r.runner_up) : "-",
        r.runner_up >= 0 && r.runner_up_gib_s > 0 ? pct(r.best_gib_s / r.runner_up_gib_s - 1) : "-"};
    for (size_t a : arms) {
      const TunePoint* p = run.at(a, r.size);
      row.push_back(!p ? "-" : !p->error.empty() ? "failed" : fixed(p->gib_s(), 3) + (p->noisy() ? "~" : ""));
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::vector<std::string> tune_group_lines(const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  std::vector<std::string> o;
  bool noisy = false;
  for (const TunePoint& p : run.points) noisy = noisy || (run.arms.arms[p.arm].group == g && p.noisy());
  if (noisy) o.push_back("~ noisy: P90/P50 of the point's Copy above " + fixed(kNoisySpread, 2));
  for (size_t a = 0; a < run.arms.arms.size(); ++a)
    if (run.arms.arms[a].group == g && !run.dropped[a].empty())
      o.push_back("dropped: " + run.arms.arms[a].method + " (" + run.dropped[a] + ")");
  std::string cross;
  for (const TuneCrossover& c : f.crossovers) cross += (cross.empty() ? "" : "; ") + crossover_text(run, c);
  o.push_back("crossovers: " + (cross.empty() ? std::string("none measured") : cross));
  std::string use;
  for (const TuneChoice& c : f.choices) {
    const TuneArm& arm = run.arms.arms[static_cast<size_t>(c.arm)];
    use += (use.empty() ? "" : "; ") + arm.method + " (" + arm.spec.name + ") for " + size_words(run.sizes[c.from]) +
           (c.to != c.from ? ".." + size_words(run.sizes[c.to]) : "") + (c.noisy ? " (rests on a noisy point)" : "");
  }
  if (!use.empty()) o.push_back("use: " + use);
  return o;
}

std::string tune_lead_words(double best, double next, bool tie) {
  const long n = std::lround((best / std::max(1e-12, next) - 1) * 100);
  return (n < 0 ? "" : "+") + std::to_string(n) + "%" +
         (tie ? ", a tie within " + fixed(100 * kTieMargin, 0) + "%: the cheaper one" : "");
}

std::string tune_coarse_words(size_t planned, size_t measured, size_t skipped, const std::string& arms) {
  std::string o = std::to_string(measured) + " of " + std::to_string(planned) + " coarse points measured";
  if (skipped > 0) o += ", " + std::to_string(skipped) + " over the budget";
  const size_t dropped = planned > measured + skipped ? planned - measured - skipped : 0;
  if (dropped > 0) o += ", " + std::to_string(dropped) + " of dropped " + arms;
  return o;
}

double model_of_contiguous(const TunePoint& paged) {
  const PagedFigure* f = paged.error.empty() ? paged.result.extras.get<PagedFigure>() : nullptr;
  return f && f->compared ? f->percent_of_contiguous(paged.result) / 100 : 0;
}

namespace {

// One group's line for the model's contiguous or paged layout: the best arm, the next.
std::string model_line(const TuneCopyRun& run, size_t g, int b, bool paged) {
  std::string line = run.arms.groups[g].title + (paged ? ", paged: " : ": ");
  if (b < 0) return line + "not measured (no time left)";
  const TunePoint& best = run.model_points[static_cast<size_t>(b)];
  const TunePoint* next = nullptr;
  for (const TunePoint& p : run.model_points)
    if (&p != &best && p.paged == paged && p.error.empty() && run.arms.arms[p.arm].group == g &&
        (!next || p.gib_s() > next->gib_s()))
      next = &p;
  line += "use " + run.arms.arms[best.arm].method + " (" + run.arms.arms[best.arm].spec.name + "), " +
          fixed(best.gib_s(), 3) + " GiB/s" + (best.noisy() ? " (noisy)" : "");
  if (paged) {
    const double of = model_of_contiguous(best);
    if (of > 0) line += ", " + fixed(100 * of, 0) + "% of its contiguous";
  }
  if (next)
    line += "; next " + run.arms.arms[next->arm].method + " " + fixed(next->gib_s(), 3) + " GiB/s (" +
            pct(best.gib_s() / std::max(1e-12, next->gib_s()) - 1) + ")";
  return line;
}

}  // namespace

std::vector<std::string> tune_model_lines(const TuneCopyRun& run, const TuneFindings& f) {
  std::vector<std::string> o;
  for (size_t g = 0; g < run.arms.groups.size(); ++g) {
    o.push_back(model_line(run, g, f.model_best_per_group[g], false));
    o.push_back(model_line(run, g, f.model_paged_best_per_group[g], true));
  }
  return o;
}

std::string tune_model_heading(const TuneCopyRun& run) {
  return run.model_label + " (its blocks contiguous, and paged: a random:" + std::to_string(kTuneTableSeed) +
         " block table in a pool of " + std::to_string(kPoolPerRequest) + "x the request)";
}

std::string tune_aio_heading(const TuneAioRun& aio) {
  return std::to_string(aio.points.size()) + " points, shards of " + size_words(aio.io_size) + ", " +
         format_bytes(aio.bytes) + " per epoch, " + std::to_string(aio.epochs) + " epochs each";
}

std::vector<std::string> tune_aio_lines(const TuneAioRun& aio) {
  std::vector<std::string> o;
  for (const std::string& u : aio.engines_unavailable) o.push_back("not measured: " + u);
  for (const TuneAioSearch& s : aio.searches) {
    o.push_back(s.workspace + ": " + tune_coarse_words(s.coarse_planned, s.coarse_measured, s.coarse_skipped, "engines"));
    for (const auto& d : s.dropped) o.push_back(s.workspace + " dropped: " + d.first + " (" + d.second + ")");
    for (const TuneAioPoint& p : aio.points)
      if (p.workspace == s.workspace && !p.error.empty())
        o.push_back(s.workspace + " failed: " + aio_config_text(p.config) + " (" + p.phase + "): " + p.error);
  }
  for (const TuneAioRun::Pick& k : aio.picks()) {
    o.push_back(pick_line("load", k.workspace, aio, k.load, &TuneAioPoint::load_gib_s));
    o.push_back(pick_line("dump", k.workspace, aio, k.dump, &TuneAioPoint::dump_gib_s));
  }
  return o;
}

TuneFailures tune_failures(const TuneCopyRun* copy, const TuneAioRun* aio, const TuneLoadRun* load) {
  size_t fatal = 0, refining = 0;
  for (const TunePoint& p : copy ? copy->points : std::vector<TunePoint>{}) fatal += !p.error.empty();
  const auto count = [&](const std::string& error, const std::string& phase) {
    if (!error.empty()) ++(phase == "coarse" ? fatal : refining);
  };
  for (const TuneAioPoint& p : aio ? aio->points : std::vector<TuneAioPoint>{}) count(p.error, p.phase);
  for (const TuneLoadPoint& p : load ? load->points : std::vector<TuneLoadPoint>{}) count(p.error, p.phase);
  TuneFailures f;
  if (fatal > 0) f.error = "tune: some points failed (each named above); the rest are in the output";
  if (fatal == 0 && refining > 0)
    f.note = "tune: " + std::to_string(refining) + (refining == 1 ? " refining point" : " refining points") +
             " failed (each named above, marked failed in the output); the coarse comparison is whole and the "
             "recommendations rest on the points that ran";
  return f;
}

std::string tune_copy_summary(const TuneCopyRun& copy) {
  size_t dropped = 0;
  for (const std::string& d : copy.dropped) dropped += !d.empty();
  return "copy: " + std::to_string(copy.points.size()) + " points (" +
         std::to_string(copy.coarse_planned - copy.coarse_skipped) + " of " + std::to_string(copy.coarse_planned) +
         " coarse; the rest refined near crossovers and the best), " + std::to_string(dropped) +
         " methods dropped; each point " + std::to_string(copy.iterations) + " iterations after " +
         std::to_string(copy.warmup) + " warm-up, 32 MiB of blocks per iteration (2 to 64 blocks)";
}

std::string tune_text(const TuneContext& ctx, const TuneCopyRun* copy, const TuneFindings* findings,
                      const TuneAioRun* aio, const TuneLoadRun* load) {
  std::ostringstream o;
  o << "tune: backend " << ctx.info.backend << ", budget " << fixed(ctx.budget_s, 1) << " s, took "
    << fixed(ctx.elapsed_s, 1) << " s\n";
  if (copy && findings) {
    o << tune_copy_summary(*copy) << "\n";
    if (copy->coarse_skipped > 0)
      o << "note: the budget left " << copy->coarse_skipped << " coarse points unmeasured; a larger --budget fills them\n";
    for (size_t g = 0; g < copy->arms.groups.size(); ++g) {
      o << "\n[[ " << copy->arms.groups[g].title << " ]]\n";
      size_t w = 0;
      const size_t arms = arms_of(*copy, g, &w).size();
      std::vector<size_t> widths = {10, w, 11, w, 7};
      widths.insert(widths.end(), arms, w);
      text_table(o, tune_group_table(*copy, findings->groups[g], g), widths);
      for (const std::string& l : tune_group_lines(*copy, findings->groups[g], g)) o << l << "\n";
    }
    if (!copy->model_label.empty()) {
      o << "\n[[ model ]] " << tune_model_heading(*copy) << "\n";
      for (const std::string& l : tune_model_lines(*copy, *findings)) o << l << "\n";
    }
  }
  if (aio) {
    o << "\n[[ aio ]] " << tune_aio_heading(*aio) << "\n";
    for (const std::string& l : tune_aio_lines(*aio)) o << l << "\n";
  }
  if (load) o << tune_load_text(*load);
  return o.str();
}

}  // namespace ds
