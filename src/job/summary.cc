#include "job/summary.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include "core/error.h"
#include "core/units.h"
#include "output/svg_plot.h"

namespace ds {

namespace {

std::string point_text(const PointRecord& r) {
  std::string out;
  for (const auto& a : r.axes) out += (out.empty() ? "" : ",") + a.first + "=" + a.second;
  return out.empty() ? "-" : out;
}

double number(const Json& j, const char* key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

// The measured stage's statistics: "copy_us" holds them whatever the stage
// (time_label names it: "Copy", "IO"; docs/results.md).
void add_stats(SummaryRow& row, const Json& r) {
  const auto label = r.find("time_label");
  row.stage = label != r.end() && label->is_string() ? label->get<std::string>() : "Copy";
  const auto stats = r.find("copy_us");
  if (stats == r.end() || !stats->is_object()) return;
  row.p50_us = number(*stats, "p50");
  row.p90_us = number(*stats, "p90");
  row.has_stats = true;
}

const Json* results_of(const PointRecord& rec) {
  if (!rec.result.is_object()) return nullptr;
  const auto it = rec.result.find("results");
  return it != rec.result.end() && it->is_array() ? &*it : nullptr;
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

}  // namespace

std::vector<SummaryRow> summary_rows(const std::vector<PointRecord>& records) {
  std::vector<SummaryRow> rows;
  for (const PointRecord& rec : records) {
    SummaryRow base;
    base.entry = rec.entry;
    base.point = point_text(rec);
    const Json* results = results_of(rec);
    if (!rec.ok) {
      base.ok = false;
      base.error = "exit " + std::to_string(rec.exit_code) + (rec.error.empty() ? "" : ": " + rec.error);
      rows.push_back(base);
      continue;
    }
    if (!results || results->empty()) {
      base.name = "(no results)";
      rows.push_back(base);
      continue;
    }
    for (const Json& r : *results) {
      SummaryRow row = base;
      row.name = r.value("name", std::string("?"));
      row.gib_s = number(r, "bandwidth_gib_s");
      add_stats(row, r);
      rows.push_back(row);
    }
  }
  return rows;
}

ReportTable summary_cells(const std::vector<SummaryRow>& rows) {
  ReportTable t;
  t.header = {"Entry", "Point", "Case", "BW(GiB/s)", "P50(us)", "P90/P50"};
  for (const SummaryRow& r : rows) {
    if (!r.ok) {
      t.rows.push_back({r.entry, r.point, "FAILED (" + r.error + ")", "", "", ""});
      continue;
    }
    const bool stats = r.has_stats && r.p50_us > 0;
    t.rows.push_back({r.entry, r.point, r.name, fixed(r.gib_s, 3), stats ? fixed(r.p50_us, 1) : "-",
                      stats ? fixed(r.p90_us / r.p50_us, 2) : "-"});
  }
  return t;
}

std::string summary_table(const std::vector<SummaryRow>& rows) {
  const ReportTable t = summary_cells(rows);
  std::vector<std::vector<std::string>> cells = {t.header};
  cells.insert(cells.end(), t.rows.begin(), t.rows.end());
  std::vector<size_t> width(cells[0].size(), 0);
  for (const auto& row : cells)
    for (size_t i = 0; i < row.size(); ++i)
      if (!(i == 2 && row[2].rfind("FAILED", 0) == 0)) width[i] = std::max(width[i], row[i].size());
  std::ostringstream o;
  for (const auto& row : cells) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      const bool right = i >= 3;
      const std::string pad(width[i] > row[i].size() ? width[i] - row[i].size() : 0, ' ');
      line += (i ? "  " : "") + (right ? pad + row[i] : row[i] + (i + 1 < row.size() ? pad : ""));
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    o << line << "\n";
  }
  return o.str();
}

namespace {

// The axis's values as numbers, when every one reads as a size or count.
bool numeric_axis(const std::vector<PointRecord>& records, const std::string& axis, std::set<uint64_t>& values) {
  for (const PointRecord& rec : records)
    for (const auto& a : rec.axes) {
      if (a.first != axis) continue;
      try {
        values.insert(parse_size(axis, a.second));
      } catch (const UsageError&) {
        return false;
      }
    }
  return values.size() > 1;
}

std::string one_plot(const std::vector<PointRecord>& records, const std::string& axis, const std::string& backend) {
  std::vector<CaseResult> points;
  std::vector<PlotFigure> figures;
  for (const PointRecord& rec : records) {
    const Json* results = results_of(rec);
    if (!rec.ok || !results) continue;
    std::string x_text, others;
    for (const auto& a : rec.axes) {
      if (a.first == axis) x_text = a.second;
      else others += (others.empty() ? "" : ",") + a.first + "=" + a.second;
    }
    if (x_text.empty()) continue;
    for (const Json& r : *results) {
      CaseResult c;
      c.block_bytes = parse_size(axis, x_text);
      c.devices = static_cast<int>(number(r, "devices"));
      c.iterations = static_cast<int>(number(r, "iterations"));
      const std::string line = rec.entry + (others.empty() ? "" : "[" + others + "]") + " " + r.value("name", "");
      points.push_back(c);
      figures.push_back({line, line, false, number(r, "bandwidth_gib_s")});
    }
  }
  PlotText text;
  text.title = "Bandwidth by " + axis;
  text.backend = backend;
  text.x_label = axis + " (log2 scale)";
  text.definition = "BW = each point's bandwidth_gib_s (bytes / the measured stage's average)";
  const CaseResult* first = points.empty() ? nullptr : &points[0];
  return plot_svg(points, text, [&](const CaseResult& r) {
    return std::vector<PlotFigure>{figures[static_cast<size_t>(&r - first)]};
  });
}

}  // namespace

std::vector<AxisPlot> axis_plots(const std::vector<PointRecord>& records, const std::string& backend) {
  std::vector<std::string> axes;
  for (const PointRecord& rec : records)
    for (const auto& a : rec.axes)
      if (std::find(axes.begin(), axes.end(), a.first) == axes.end()) axes.push_back(a.first);
  std::vector<AxisPlot> out;
  for (const std::string& axis : axes) {
    std::set<uint64_t> values;
    if (numeric_axis(records, axis, values)) out.push_back({axis, one_plot(records, axis, backend)});
  }
  return out;
}

}  // namespace ds
