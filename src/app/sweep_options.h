// --sweep FROM:TO, --plot FILE.svg and --plot-metric, as copy, quick mode, trans,
// aio and load offer them (measurement/sweep runs the steps, output/svg_plot and
// the measurements' *_plot draw them).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "measurement/sweep.h"
#include "output/svg_plot.h"

namespace ds {

struct SweepOptionText {
  std::string sweep, plot, plot_metric = "both";
  CLI::Option* sweep_option = nullptr;
  CLI::Option* plot_metric_option = nullptr;
};

// How the command's help says it: "block size" / "shard size (--io-size)", the count
// the sweep lowers ("-n", "--io-number"), the stage BW is over ("Copy", "IO"), and
// --plot-metric's default ("both": copy and trans, whose BW and WallBW part; "copy":
// aio and load, where one worker's IO and its GroupWall are nearly the same line).
struct SweepHelp {
  std::string size, count, stage, metric = "both";
};
void add_sweep_options(CLI::App* app, SweepOptionText& t, const SweepHelp& help);

// The steps (none without --sweep), `blocks` the count at the first size. UsageError:
// a bad range, --plot without --sweep, --plot-metric without --plot or with a bad value.
std::vector<SweepStep> parse_sweep_options(const SweepOptionText& t, uint64_t blocks);

}  // namespace ds
