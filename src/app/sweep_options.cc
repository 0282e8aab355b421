#include "app/sweep_options.h"

#include "core/error.h"

namespace ds {

void add_sweep_options(CLI::App* app, SweepOptionText& t, const SweepHelp& help) {
  t.plot_metric = help.metric;
  t.sweep_option = app->add_option("--sweep", t.sweep,
                                   "FROM:TO: run at every power-of-two " + help.size +
                                       " in the range (e.g. 4K:64M); " + help.count +
                                       " shrinks as they grow to keep the bytes per iteration of the first size "
                                       "(a note says where)")
                       ->type_name("FROM:TO");
  app->add_option("--plot", t.plot, "with --sweep: write an SVG chart of bandwidth by " + help.size)
      ->type_name("FILE.svg");
  t.plot_metric_option = app->add_option("--plot-metric", t.plot_metric,
                                         "with --plot: copy (BW, from " + help.stage +
                                             "), wall (WallBW, from GroupWall, dashed) or both (default " + help.metric + ")")
                             ->type_name("copy|wall|both");
}

std::vector<SweepStep> parse_sweep_options(const SweepOptionText& t, uint64_t blocks) {
  std::vector<SweepStep> steps;
  if (!t.sweep.empty() || (t.sweep_option && t.sweep_option->count() > 0))
    steps = sweep_steps(t.sweep, blocks);
  else if (!t.plot.empty())
    throw UsageError("option --plot needs --sweep FROM:TO: it draws bandwidth against block size");
  parse_plot_metric(t.plot_metric);
  if (t.plot_metric_option && t.plot_metric_option->count() > 0 && t.plot.empty())
    throw UsageError("option --plot-metric needs --plot FILE.svg");
  return steps;
}

}  // namespace ds
