#include "aio/aio_plot.h"

namespace ds {

std::string aio_plot_svg(const std::vector<CaseResult>& results, const std::vector<std::string>& where,
                         PlotMetric metric) {
  PlotText text;
  text.title = "Disk bandwidth by shard size, files in ";
  for (size_t i = 0; i < where.size(); ++i) text.title += (i ? ", " : "") + where[i];
  text.count_word = "";  // the lines are engines and phases, not devices
  text.x_label = "Shard size (bytes per I/O, log2 scale)";
  text.definition = bandwidth_definition(metric, "IO", "shard size x shards");
  text.iterations_word = "epochs";
  return plot_svg(results, text,
                  [metric](const CaseResult& r) { return bandwidth_figures(r, r.name + " " + r.method, metric); });
}

}  // namespace ds
