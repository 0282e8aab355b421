// Built without yaml-cpp: `run` says so (exit 2); everything else is unchanged.
#include "core/error.h"
#include "job/job.h"

namespace ds {

namespace {
const char kNone[] =
    "run: this dev-sandbox was built without job-file support (yaml-cpp was not found at build time; "
    "install libyaml-cpp-dev or yaml-cpp-devel, or run ./ucm-toolkit build, and rebuild)";
}

bool job_files_supported() { return false; }
JobSpec parse_job_text(const std::string&, const std::string&) { throw UsageError(kNone); }
JobSpec read_job_file(const std::string&) { throw UsageError(kNone); }

}  // namespace ds
