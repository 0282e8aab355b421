// tune --what load's text: per workspace and block shape a table of every point (its
// knobs, load BW, each stage alone, load's verdict), the arms dropped, and the
// recommendation with the next best (docs/tune.md "The staged load").
#include <cmath>
#include <cstdio>

#include "tune/tune_report.h"

namespace ds {

namespace {

std::string fixed3(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.3f", v);
  return b;
}

std::string part_words(const TuneLoadRun& run, const std::string& ws, size_t shape) {
  return ws + ", " + run.shapes[shape].label + " blocks";
}

}  // namespace

std::string tune_load_heading(const TuneLoadRun& run) {
  return std::to_string(run.points.size()) + " points on 1 card, each " + std::to_string(run.iterations) +
         " rounds after " + std::to_string(run.warmup) + " warm-up (pipelined, disk alone, copy alone, as load runs them)";
}

ReportTable tune_load_table(const TuneLoadRun& run, const TuneLoadSearch& s) {
  ReportTable t;
  t.caption = part_words(run, s.workspace, s.shape) + ": " +
              (s.unfit.empty() ? tune_coarse_words(s.coarse_planned, s.coarse_measured, s.coarse_skipped, "arms")
                               : "skipped, it does not fit here: " + s.unfit);
  t.header = {"Engine", "Copy", "Staging", "Iodepth", "BW(GiB/s)", "Disk(GiB/s)", "Copy(GiB/s)", "Of slower",
              "Bottleneck", "Phase"};
  for (const TuneLoadPoint& p : run.points) {
    if (p.workspace != s.workspace || p.shape != s.shape) continue;
    std::vector<std::string> row = {engine_option_name(p.config.engine), p.config.sdma ? "direct" : "ce",
                                    std::to_string(p.config.staging), std::to_string(p.config.iodepth)};
    const StagedStages* st = p.stages();
    if (!p.error.empty()) {
      row.insert(row.end(), {"failed", "-", "-", "-", "-"});
    } else {
      row.push_back(fixed3(p.gib_s()) + (p.noisy() ? "~" : ""));
      row.push_back(st ? fixed3(st->disk_gib_s) : "-");
      row.push_back(st ? fixed3(st->copy_gib_s) : "-");
      char pc[32];
      std::snprintf(pc, sizeof pc, "%.1f%%", st ? st->percent_of_slower : 0.0);
      row.push_back(st ? pc : "-");
      row.push_back(load_bound_words(p.bottleneck()));
    }
    row.push_back(p.phase);
    t.rows.push_back(std::move(row));
  }
  return t;
}

std::vector<std::string> tune_load_part_lines(const TuneLoadRun& run, const TuneLoadSearch& s) {
  std::vector<std::string> o;
  bool noisy = false;
  for (const TuneLoadPoint& p : run.points) noisy = noisy || (p.workspace == s.workspace && p.shape == s.shape && p.noisy());
  if (noisy) o.push_back("~ noisy: P90/P50 of the point's IO+Copy above 1.50");
  for (const auto& d : s.dropped) o.push_back("dropped: " + d.first + " (" + d.second + ")");
  for (const TuneLoadRun::Pick& k : run.picks()) {
    if (k.workspace != s.workspace || k.shape != s.shape) continue;
    const std::string head = part_words(run, k.workspace, k.shape) + ": ";
    if (k.r.best < 0) {
      o.push_back(head + "no point ran");
      continue;
    }
    const TuneLoadPoint& b = run.points[static_cast<size_t>(k.r.best)];
    const StagedStages* st = b.stages();
    std::string line = head + "use " + load_config_text(b.config) + ", " + fixed3(b.gib_s()) + " GiB/s" +
                       (b.noisy() ? " (noisy)" : "") + ", " + load_bound_words(b.bottleneck());
    if (st) line += " (disk alone " + fixed3(st->disk_gib_s) + ", copy alone " + fixed3(st->copy_gib_s) + " GiB/s)";
    if (k.r.next >= 0) {
      const TuneLoadPoint& n = run.points[static_cast<size_t>(k.r.next)];
      line += "; next " + load_config_text(n.config) + ", " + fixed3(n.gib_s()) + " GiB/s (" +
              tune_lead_words(b.gib_s(), n.gib_s(), k.r.tie) + ")";
    }
    if (k.r.noisy_faster >= 0) {
      const TuneLoadPoint& n = run.points[static_cast<size_t>(k.r.noisy_faster)];
      line += "; faster but noisy: " + load_config_text(n.config) + ", " + fixed3(n.gib_s()) + " GiB/s~";
    }
    o.push_back(line);
    o.push_back("  as: " + b.command);
  }
  return o;
}

std::vector<std::string> tune_load_lines(const TuneLoadRun& run) {
  std::vector<std::string> o;
  for (const std::string& u : run.unavailable) o.push_back("not measured: " + u);
  return o;
}

std::string tune_load_text(const TuneLoadRun& run) {
  std::string o = "\n[[ load ]] " + tune_load_heading(run) + "\n";
  for (const std::string& l : tune_load_lines(run)) o += l + "\n";
  for (const TuneLoadSearch& s : run.searches) {
    const ReportTable t = tune_load_table(run, s);
    o += "-- " + t.caption + "\n";
    std::vector<size_t> w(t.header.size(), 0);
    for (size_t i = 0; i < t.header.size(); ++i) w[i] = t.header[i].size() + 2;
    for (const auto& r : t.rows)
      for (size_t i = 0; i < r.size() && i < w.size(); ++i) w[i] = std::max(w[i], r[i].size() + 2);
    auto line = [&](const std::vector<std::string>& cells) {
      std::string l;
      for (size_t i = 0; i < cells.size(); ++i) l += cells[i] + std::string(w[i] > cells[i].size() ? w[i] - cells[i].size() : 1, ' ');
      while (!l.empty() && l.back() == ' ') l.pop_back();
      return l + "\n";
    };
    o += line(t.header);
    for (const auto& r : t.rows) o += line(r);
    for (const std::string& l : tune_load_part_lines(run, s)) o += l + "\n";
  }
  return o;
}

}  // namespace ds
