// The --plot chart of a size sweep: bandwidth (GiB/s, linear) against block or
// shard size (log2), one line per series. Plain SVG 1.1 written here, no plotting
// library. What the lines are is the command's choice (PlotFigures): copy and
// trans one per case, aio one per phase and engine, load end to end and each
// stage alone; the drawing is this one.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/notes.h"
#include "core/size_label.h"
#include "output/result.h"

namespace ds {

// What --plot-metric draws per series: BW (bytes / the measured stage's avg,
// solid), WallBW (bytes / GroupWall avg, dashed, in the series' colour), or both.
enum class PlotMetric { kCopy, kWall, kBoth };
// "copy", "wall", "both"; UsageError naming --plot-metric otherwise.
PlotMetric parse_plot_metric(const std::string& text);

// One point a result gives one line: figures of one `line` form it (in the order
// the lines first appear); lines of one `colour_key` share a colour.
struct PlotFigure {
  std::string line;
  std::string colour_key;
  bool dashed = false;
  double gib_s = 0;
};
using PlotFigures = std::function<std::vector<PlotFigure>(const CaseResult&)>;

// `key` (BW, solid) and `key WallBW` (dashed) of `r`, as `metric` asks: the
// figures copy's and trans's cases give, and what aio and load start from.
std::vector<PlotFigure> bandwidth_figures(const CaseResult& r, const std::string& key, PlotMetric metric);

// A vertical mark at one size (tune's crossovers): a dashed line with its label.
struct PlotMark {
  uint64_t x_bytes = 0;
  std::string label;
};

// The words around the lines.
struct PlotText {
  std::string title;       // e.g. "Bandwidth by block size"; ": <backend> backend, N devices" follows
  std::string backend;
  std::string count_word = "device";  // the title's and each legend entry's count ("" for none)
  std::string x_label = "Block size (bytes, log2 scale)";
  std::string definition;  // the subtitle: what the figures are; " over N iterations" follows
  std::string iterations_word = "iterations";
  std::vector<PlotMark> marks;  // drawn over the grid, under the lines
};

// The whole document: every result's figures, x = its block_bytes.
std::string plot_svg(const std::vector<CaseResult>& results, const PlotText& text, const PlotFigures& figures);

// copy's and trans's chart: one line per case name (BW and, dashed, WallBW), the
// backend and the largest device count in the title.
std::string bandwidth_plot_svg(const std::vector<CaseResult>& results, const std::string& backend,
                               PlotMetric metric = PlotMetric::kBoth);

// The subtitle's definition of BW and WallBW for `metric`, BW over `stage` (Copy, IO).
std::string bandwidth_definition(PlotMetric metric, const std::string& stage, const std::string& bytes);

// RunError naming the path when `path` cannot be created or written, checked
// before a long sweep; leaves nothing behind.
void check_plot_path(const std::string& path);

// Writes `svg` to `path` whole (AtomicFile) and says so: "wrote the plot to PATH";
// RunError naming the path when that fails.
void write_plot_file(const std::string& path, const std::string& svg, Notes& notes);

}  // namespace ds
