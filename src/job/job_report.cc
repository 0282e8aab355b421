// run's --report page (docs/run.md "The report"): the summary table and the axis
// plots of a job's results, the machine's facts, what each figure means.
#include <set>

#include "core/sysinfo.h"
#include "core/units.h"
#include "job/summary.h"

namespace ds {

namespace {

const char* kSummaryProse =
    "One row per result of every point, in the job's order: Entry is the job's entry, Point its matrix values "
    "('-' without a matrix), Case the case the command measured. BW is that command's BW (bytes / the measured "
    "stage's average, GiB/s); P50 is the measured stage's median per iteration, P90/P50 its spread (above 1.5 the "
    "point was noisy). A failed point says FAILED and the first error line its command printed.";

const char* kPlotProse =
    "One plot per matrix axis whose values are sizes or counts: BW against that axis (log2), one line per entry, "
    "the other axes' values and case.";

// The backend facts the results carry (each command's JSON "backend" object), once each.
void backend_facts(const std::vector<PointRecord>& records, std::vector<std::pair<std::string, std::string>>& out) {
  std::set<std::string> seen;
  for (const PointRecord& r : records) {
    if (!r.result.is_object() || !r.result.contains("backend") || !r.result["backend"].is_object()) continue;
    const Json& b = r.result["backend"];
    const std::string key = b.dump();
    if (!seen.insert(key).second) continue;
    for (auto it = b.begin(); it != b.end(); ++it)
      out.push_back({"backend." + it.key(), it.value().is_string() ? it.value().get<std::string>() : it.value().dump()});
  }
}

}  // namespace

Report job_report(const JobReportInput& in, const std::vector<PointRecord>& records) {
  Report r;
  r.title = "dev-sandbox run: " + in.job_path;
  r.intro = std::to_string(in.points) + " points, " + std::to_string(in.ran) + " run, " + std::to_string(in.skipped) +
            " already recorded, " + std::to_string(in.failed) + " failed" +
            (in.interrupted ? " (interrupted: dev-sandbox run --resume runs the rest)" : "") + "; results in " +
            in.results_path + ".";
  r.facts = {{"host.cpus_online", std::to_string(online_cpus())},
             {"host.numa_nodes", std::to_string(numa_nodes())},
             {"host.memory_available", format_bytes(mem_available_bytes())},
             {"host.kernel", kernel_release()},
             {"host.container", container_evidence().empty() ? "-" : container_evidence()}};
  backend_facts(records, r.facts);
  ReportSection summary;
  summary.heading = "Summary";
  summary.prose = kSummaryProse;
  summary.tables.push_back(summary_cells(summary_rows(records)));
  r.sections.push_back(std::move(summary));
  const std::vector<AxisPlot> plots = axis_plots(records, in.backend);
  if (!plots.empty()) {
    ReportSection s;
    s.heading = "Plots";
    s.prose = kPlotProse;
    for (const AxisPlot& p : plots) s.svgs.push_back(p.svg);
    r.sections.push_back(std::move(s));
  }
  return r;
}

}  // namespace ds
