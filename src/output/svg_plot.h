// The --plot chart of a size sweep: bandwidth (GiB/s, linear) against block size
// (log2), one line per case. Plain SVG 1.1 written here, no plotting library.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/result.h"
#include "core/size_label.h"

namespace ds {

// What --plot-metric draws per case: BW (bytes / Copy avg, solid), WallBW (bytes /
// GroupWall avg, dashed, in the case's colour), or both.
enum class PlotMetric { kCopy, kWall, kBoth };
// "copy", "wall", "both"; UsageError naming --plot-metric otherwise.
PlotMetric parse_plot_metric(const std::string& text);

// The whole document. Results of one case name form one line per metric, in the
// order the names first appear; `backend` and the largest device count go in the title.
std::string bandwidth_plot_svg(const std::vector<CaseResult>& results, const std::string& backend,
                               PlotMetric metric = PlotMetric::kBoth);

}  // namespace ds
