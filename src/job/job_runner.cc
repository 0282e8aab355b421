#include "job/job_runner.h"

#include "core/interrupt.h"

namespace ds {

namespace {

const PointRecord* latest(const std::vector<PointRecord>& records, const JobPoint& p) {
  const PointRecord* found = nullptr;
  for (const PointRecord& r : records)
    if (same_point(r, p.entry, p.axes)) found = &r;
  return found;
}

PointRecord record_of(const JobPoint& p, const std::vector<std::string>& argv, const ChildOutcome& o) {
  PointRecord r;
  r.entry = p.entry;
  r.label = p.label;
  r.axes = p.axes;
  r.command_line = argv;
  r.exit_code = o.exit_code;
  r.seconds = o.seconds;
  try {
    r.result = o.out.empty() ? Json() : Json::parse(o.out);
  } catch (const std::exception&) {
    r.result = Json();  // not JSON: a command that printed something else is a failure below
  }
  r.ok = o.exit_code == 0 && r.result.is_object() && r.result.value("status", "") == "ok";
  if (!r.ok) {
    r.error = o.first_error;
    if (r.error.empty() && o.exit_code == 0) r.error = "it wrote no JSON document that says ok";
  }
  return r;
}

}  // namespace

JobRunOutcome run_job(const std::vector<JobPoint>& points, ResultsLog& log, const JobRunOptions& options,
                      Notes& notes, const PointRunner& runner) {
  JobRunOutcome out;
  std::vector<PointRecord> all = log.previous();
  for (size_t i = 0; i < points.size(); ++i) {
    const JobPoint& p = points[i];
    const PointRecord* done = latest(all, p);
    if (done && done->ok) {
      ++out.skipped;
      continue;
    }
    if (interrupted()) {
      out.interrupted = true;
      break;
    }
    std::vector<std::string> argv = {options.program_name};
    argv.insert(argv.end(), options.prefix.begin(), options.prefix.end());
    argv.insert(argv.end(), p.args.begin(), p.args.end());
    argv.push_back("--format");
    argv.push_back("json");
    std::string typed;
    for (const std::string& w : argv) typed += (typed.empty() ? "" : " ") + w;
    notes.tell("run: [" + std::to_string(i + 1) + "/" + std::to_string(points.size()) + "] " + p.label + ": " + typed);
    const ChildOutcome o = runner ? runner(options.program, argv) : run_child(options.program, argv);
    if (o.interrupted) {
      out.interrupted = true;
      break;
    }
    PointRecord r = record_of(p, argv, o);
    log.append(r);
    ++out.ran;
    all.push_back(std::move(r));
    if (!all.back().ok) {
      notes.tell("run: " + p.label + " failed (exit " + std::to_string(o.exit_code) + ")" +
                 (all.back().error.empty() ? "" : ": " + all.back().error));
      if (options.stop_on_error) {
        out.stopped = true;
        break;
      }
    }
  }
  for (const JobPoint& p : points) {
    const PointRecord* r = latest(all, p);
    if (!r) continue;
    out.records.push_back(*r);
    if (!r->ok) ++out.failed;
  }
  return out;
}

}  // namespace ds
