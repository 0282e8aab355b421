// aio's --plot: bandwidth by shard size (--sweep), one line per phase and engine
// ("aio_dump LIBAIO", "aio_load PSYNC", ...: the block's name and its Method
// column), BW over IO and, dashed, WallBW over GroupWall as --plot-metric says.
#pragma once

#include <string>
#include <vector>

#include "output/result.h"
#include "output/svg_plot.h"

namespace ds {

// `where`: the workspaces, named in the title.
std::string aio_plot_svg(const std::vector<CaseResult>& results, const std::vector<std::string>& where,
                         PlotMetric metric);

}  // namespace ds
