#include "load/load_plot.h"

#include "staging/staged_stages.h"

namespace ds {

std::string load_plot_svg(const std::vector<CaseResult>& results, const std::string& backend, PlotMetric metric) {
  PlotText text;
  text.title = "Load bandwidth by block size";
  text.backend = backend;
  text.count_word = "card";
  text.definition = bandwidth_definition(metric, "IO+Copy", "block size x Count") +
                    "; disk alone, copy alone: each stage by itself";
  text.iterations_word = "rounds";
  return plot_svg(results, text, [metric](const CaseResult& r) {
    std::vector<PlotFigure> out = bandwidth_figures(r, "load", metric);
    if (const LoadStages* st = r.extras.get<LoadStages>()) {
      out.push_back({"disk alone", "disk alone", false, st->disk_gib_s});
      out.push_back({"copy alone", "copy alone", false, st->copy_gib_s});
    }
    return out;
  });
}

}  // namespace ds
