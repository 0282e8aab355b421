// load's and offload's --plot: bandwidth by block size (--sweep). Three lines: the
// command end to end ("load" or "offload": the pipelined passes, BW over IO+Copy
// resp. Copy+IO and, dashed, WallBW over GroupWall, as --plot-metric says), and
// "disk alone" and "copy alone", each stage measured alone in the same rounds (the
// Stages line's figures): where the end-to-end line meets one of them, that stage
// is the bottleneck at that size.
#pragma once

#include <string>
#include <vector>

#include "output/result.h"
#include "output/svg_plot.h"
#include "staging/pipeline.h"

namespace ds {

std::string staged_plot_svg(StagedDir dir, const std::vector<CaseResult>& results, const std::string& backend,
                            PlotMetric metric);
// staged_plot_svg(StagedDir::kLoad, ...).
std::string load_plot_svg(const std::vector<CaseResult>& results, const std::string& backend, PlotMetric metric);

}  // namespace ds
