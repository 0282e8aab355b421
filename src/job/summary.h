// What a job found, across its entries: one table (a row per result of every
// point, failures marked) and one SVG plot per swept numeric axis. `tune` and
// --report build on the same rows.
#pragma once

#include <string>
#include <vector>

#include "job/results_log.h"
#include "output/html_report.h"

namespace ds {

// One row: a point's result (a point whose command measured several cases has
// several rows), or its failure.
struct SummaryRow {
  std::string entry, point;  // point: "s=4K,iodirect=true", "-" without a matrix
  std::string name;          // the result's case name; empty for a failure
  bool ok = true;
  std::string error;         // failed: "exit N: first error line"
  double gib_s = 0;          // bandwidth_gib_s
  std::string stage;         // the measured stage (time_label): "Copy", "IO"
  double p50_us = 0, p90_us = 0;
  bool has_stats = false;
};

std::vector<SummaryRow> summary_rows(const std::vector<PointRecord>& records);

// The table, a header line first: Entry, Point, Case, BW(GiB/s), P50(us),
// P90/P50; a failure's row says FAILED and why.
std::string summary_table(const std::vector<SummaryRow>& rows);
// The same cells, for --report: the header and a row per SummaryRow.
ReportTable summary_cells(const std::vector<SummaryRow>& rows);

struct AxisPlot {
  std::string axis;
  std::string svg;
};

// One plot per axis whose values all read as sizes or counts (4K, 64M, 8) and
// that takes more than one value: BW against that axis (log2), one line per
// entry, other axes' values and case. `backend` names the backend in the title.
std::vector<AxisPlot> axis_plots(const std::vector<PointRecord>& records, const std::string& backend);

// run's --report page: the job's facts (the host's, and the backend each result
// names), the summary table, the plots, what each means.
struct JobReportInput {
  std::string job_path, results_path, backend;
  size_t points = 0, ran = 0, skipped = 0, failed = 0;
  bool interrupted = false;
};
Report job_report(const JobReportInput& in, const std::vector<PointRecord>& records);

}  // namespace ds
