// Fuzz target `job_file`: a job file's text as `dev-sandbox run JOB` reads it
// (job/job.h: parse_job_text, expand_job with the command line's own sub-commands,
// then the first points' command lines through check_cli). Properties: only
// UsageError escapes, one line naming the file; what is accepted expands to the
// product of every entry's axes, each point's argv starting with its sub-command
// and its label with its entry's name.
#include <cstdint>
#include <string>

#include "app/command.h"
#include "core/error.h"
#include "fuzz_util.h"
#include "job/job.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const ds::JobSpec job = ds::parse_job_text("fuzz.yaml", text);
    const std::vector<ds::JobPoint> points = ds::expand_job(job, *ds::cli_job_commands());
    size_t expected = 0;
    for (const ds::JobEntry& e : job.entries) {
      size_t n = 1;
      for (const ds::JobSetting& a : e.axes) n *= a.values.size();
      expected += n;
    }
    FUZZ_CHECK(points.size() == expected, text);
    for (size_t i = 0; i < points.size(); ++i) {
      const ds::JobPoint& p = points[i];
      FUZZ_CHECK(!p.args.empty() && p.args[0] == p.command, text);
      FUZZ_CHECK(p.label.rfind(p.entry, 0) == 0, text);
      if (i < 4) dsfuzz::check_one_line(ds::one_line(ds::check_cli(p.args)));
    }
  } catch (const ds::UsageError& e) {
    const std::string what = e.what();
    dsfuzz::check_one_line(ds::one_line(what));
    FUZZ_CHECK(!ds::job_files_supported() || what.rfind("fuzz.yaml", 0) == 0, what);
  }
  return 0;
}
