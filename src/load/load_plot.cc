#include "load/load_plot.h"

#include "staging/staged_stages.h"

namespace ds {

std::string staged_plot_svg(StagedDir dir, const std::vector<CaseResult>& results, const std::string& backend,
                            PlotMetric metric) {
  const bool load = dir == StagedDir::kLoad;
  const std::string name = load ? "load" : "offload";
  PlotText text;
  text.title = load ? "Load bandwidth by block size" : "Offload bandwidth by block size";
  text.backend = backend;
  text.count_word = "card";
  text.definition = bandwidth_definition(metric, load ? "IO+Copy" : "Copy+IO", "block size x Count") +
                    "; disk alone, copy alone: each stage by itself";
  text.iterations_word = "rounds";
  return plot_svg(results, text, [metric, name](const CaseResult& r) {
    std::vector<PlotFigure> out = bandwidth_figures(r, name, metric);
    if (const StagedStages* st = r.extras.get<StagedStages>()) {
      out.push_back({"disk alone", "disk alone", false, st->disk_gib_s});
      out.push_back({"copy alone", "copy alone", false, st->copy_gib_s});
    }
    return out;
  });
}

std::string load_plot_svg(const std::vector<CaseResult>& results, const std::string& backend, PlotMetric metric) {
  return staged_plot_svg(StagedDir::kLoad, results, backend, metric);
}

}  // namespace ds
