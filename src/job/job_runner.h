// Runs a job's points in order, each a child process of this program with
// --format json, and records each as it finishes (job/results_log.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "core/notes.h"
#include "job/child_run.h"
#include "job/job.h"
#include "job/results_log.h"

namespace ds {

struct JobRunOptions {
  bool stop_on_error = false;
  std::vector<std::string> prefix;  // words before each point's args: "--backend", "sim"
  std::string program;              // what runs a point (self_program())
  std::string program_name = "dev-sandbox";  // argv[0] and the command lines recorded
};

struct JobRunOutcome {
  std::vector<PointRecord> records;  // the latest record of every point that has one, in the job's order
  size_t ran = 0, skipped = 0, failed = 0;  // failed: points whose latest record failed
  bool interrupted = false;                 // a stop arrived: the point it cut is not recorded
  bool stopped = false;                     // --stop-on-error stopped it after a failure
};

// What runs one point: run_child unless a test says otherwise (empty: run_child).
using PointRunner = std::function<ChildOutcome(const std::string& program, const std::vector<std::string>& argv)>;

// Points already recorded ok in `log` (--resume) are skipped; the others run in
// order, each recorded as it ends. Progress lines go to `notes` ("[2/5] LABEL").
JobRunOutcome run_job(const std::vector<JobPoint>& points, ResultsLog& log, const JobRunOptions& options,
                      Notes& notes, const PointRunner& runner = {});

}  // namespace ds
