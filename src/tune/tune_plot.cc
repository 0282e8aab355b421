// tune's plot: one panel per group (output/svg_plot's chart), stacked in one SVG.
#include <cstdlib>

#include "output/svg_plot.h"
#include "tune/tune_report.h"

namespace ds {

namespace {

// One group's chart: a line per arm, a mark per crossover.
std::string group_svg(const TuneContext& ctx, const TuneCopyRun& run, const TuneGroupFindings& f, size_t g) {
  std::vector<CaseResult> results;
  for (const TunePoint& p : run.points) {
    if (run.arms.arms[p.arm].group != g || !p.error.empty()) continue;
    CaseResult r = p.result;
    r.name = run.arms.arms[p.arm].method;
    r.block_bytes = run.sizes[p.size];
    results.push_back(r);
  }
  PlotText text;
  text.title = "tune, " + run.arms.groups[g].title;
  text.backend = ctx.info.backend;
  text.count_word = "";
  text.definition = "BW = bytes / Copy avg per method; dashed marks: crossovers";
  for (const TuneCrossover& c : f.crossovers)
    if (c.loser >= 0)
      text.marks.push_back({run.sizes[c.size], run.arms.arms[static_cast<size_t>(c.winner)].method + " from " +
                                                   size_words(run.sizes[c.size])});
  return plot_svg(results, text, [](const CaseResult& r) {
    return std::vector<PlotFigure>{{r.name, r.name, false, r.bandwidth_gib_s()}};
  });
}

}  // namespace

std::string tune_plot_svg(const TuneContext& ctx, const TuneCopyRun& copy, const TuneFindings& findings) {
  std::string body;
  double y = 0, width = 960;
  for (size_t g = 0; g < copy.arms.groups.size(); ++g) {
    std::string one = group_svg(ctx, copy, findings.groups[g], g);
    one.erase(0, one.find('\n') + 1);  // the XML declaration: once, for the whole document
    const size_t h = one.find("height=\"");
    const double height = h == std::string::npos ? 600 : std::atof(one.c_str() + h + 8);
    one.replace(0, 4, "<svg x=\"0\" y=\"" + std::to_string(static_cast<int>(y)) + "\"");
    body += one;
    y += height;
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" +
         std::to_string(static_cast<int>(width)) + "\" height=\"" + std::to_string(static_cast<int>(y)) +
         "\" viewBox=\"0 0 " + std::to_string(static_cast<int>(width)) + " " + std::to_string(static_cast<int>(y)) +
         "\">\n" + body + "</svg>\n";
}

}  // namespace ds
