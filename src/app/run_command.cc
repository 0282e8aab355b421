// `run JOB`: a job file's entries and their matrices (src/job, docs/run.md), each
// point a child process of this program; the results as JSON lines, then one
// summary table and a plot per swept numeric axis.
#include <algorithm>
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/output_options.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "job/job.h"
#include "job/job_runner.h"
#include "job/summary.h"
#include "output/html_report.h"
#include "output/svg_plot.h"

namespace ds {

namespace {

struct RunArgs {
  std::string job;
  std::string out;  // default: beside the job file, its name with .jsonl
  std::string report;
  bool resume = false;
  bool stop_on_error = false;
  bool dry_run = false;
};

// "dir/name.yaml" -> "dir/name" (the results and plots are named after it).
std::string stem_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  const size_t dot = path.rfind('.');
  return dot != std::string::npos && (slash == std::string::npos || dot > slash + 1) ? path.substr(0, dot) : path;
}

std::string words(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& w : argv) out += (out.empty() ? "" : " ") + w;
  return out;
}

// Every point checked as the command line would check it, before anything runs.
void check_points(const JobSpec& job, const std::vector<JobPoint>& points) {
  for (const JobPoint& p : points) {
    const std::string refused = check_cli(p.args);
    if (refused.empty()) continue;
    std::string at;
    for (const auto& a : p.axes) at += (at.empty() ? "" : ",") + a.first + "=" + a.second;
    throw UsageError(job_error(job.path, p.place, p.entry, "", (at.empty() ? "" : "at " + at + ": ") + refused));
  }
}

void write_plots(const std::vector<PointRecord>& records, const std::string& stem, const std::string& backend) {
  for (const AxisPlot& plot : axis_plots(records, backend))
    write_plot_file(stem + "." + plot.axis + ".svg", plot.svg, stderr_notes());
}

// The backend the points name (for the plot's title): --backend, else the first result's.
std::string backend_of(const std::vector<PointRecord>& records, const std::string& requested) {
  for (const PointRecord& r : records)
    if (r.result.is_object() && r.result.contains("backend") && r.result["backend"].is_object())
      return r.result["backend"].value("name", requested);
  return requested;
}

int run_job_file(const RunArgs& a, const GlobalOptions& global) {
  const JobSpec job = read_job_file(a.job);
  const std::unique_ptr<JobCommands> commands = cli_job_commands();
  std::vector<JobPoint> points = expand_job(job, *commands);
  // --backend for every point, except one whose entry names its own.
  for (JobPoint& p : points)
    if (!global.backend.empty() && std::find(p.args.begin(), p.args.end(), "--backend") == p.args.end())
      p.args.insert(p.args.begin(), {"--backend", global.backend});
  check_points(job, points);
  if (a.dry_run) {
    for (const JobPoint& p : points) {
      std::vector<std::string> argv = {"dev-sandbox"};
      argv.insert(argv.end(), p.args.begin(), p.args.end());
      std::cout << p.label << ": " << words(argv) << "\n";
    }
    std::cout << points.size() << (points.size() == 1 ? " point in " : " points in ") << job.entries.size()
              << (job.entries.size() == 1 ? " entry\n" : " entries\n");
    return 0;
  }
  const std::string out = a.out.empty() ? stem_of(a.job) + ".jsonl" : a.out;
  if (!a.report.empty()) check_report_path(a.report);
  ResultsLog log(out, a.resume);
  if (log.dropped_partial_line())
    stderr_notes().note("run: " + out + "'s last line was cut short (an interrupted write): dropped, that point runs again");
  JobRunOptions options;
  options.stop_on_error = a.stop_on_error;
  options.program = self_program();
  const JobRunOutcome done = run_job(points, log, options, stderr_notes());
  std::cout << "Job " << job.path << ": " << points.size() << " points, " << done.ran << " run, " << done.skipped
            << " already recorded, " << done.failed << " failed; results in " << out << "\n"
            << summary_table(summary_rows(done.records));
  std::cout.flush();
  write_plots(done.records, stem_of(out), backend_of(done.records, global.backend));
  if (!a.report.empty()) {
    const JobReportInput in{job.path, out, backend_of(done.records, global.backend), points.size(), done.ran,
                            done.skipped, done.failed, done.interrupted};
    write_report_file(a.report, job_report(in, done.records), stderr_notes());
  }
  if (done.interrupted) {
    print_error("run: interrupted; " + std::to_string(done.records.size()) + " of " + std::to_string(points.size()) +
                " points are recorded in " + out + "; `dev-sandbox run " + a.job + " --resume` runs the rest");
    return 130;
  }
  if (done.stopped) stderr_notes().tell("run: stopped after the first failure (--stop-on-error)");
  return done.failed ? 1 : 0;
}

}  // namespace

Command add_run_command(CLI::App& root, GlobalOptions& global) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* c = root.add_subcommand("run", "run a job file: named entries, each a sub-command with matrix axes");
  c->add_option("JOB", a->job, "the job file (YAML; docs/run.md)")->required()->type_name("JOB");
  c->add_option("--out", a->out,
                "the results, one JSON line per point (default: beside the job file, JOB's name with .jsonl)")
      ->type_name("FILE.jsonl");
  c->add_option("--report", a->report,
                "also write one self-contained HTML page: the summary table, the plots, the machine facts")
      ->type_name("FILE.html");
  c->add_flag("--resume", a->resume, "continue the results file: points already recorded ok are not run again");
  c->add_flag("--stop-on-error", a->stop_on_error, "stop at the first point that fails (default: record it, go on)");
  c->add_flag("--dry-run", a->dry_run, "check the job and print every point's command line; run nothing");
  return {c, [a, &global] { return run_job_file(*a, global); },
          [a] {
            if (!job_files_supported()) read_job_file(a->job);
          },
          {"dev-sandbox run docs/jobs/ucm-matrix.yaml --backend sim --dry-run",
           "dev-sandbox run job.yaml --out results.jsonl", "dev-sandbox run job.yaml --resume"}};
}

}  // namespace ds
