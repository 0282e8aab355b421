// `run` in a build without yaml-cpp (src/job/job_file_none.cc): one line, exit 2.
#include <gtest/gtest.h>

#include "core/error.h"
#include "job/job.h"

TEST(JobWithoutYaml, RunSaysItWasBuiltWithoutJobFileSupport) {
  EXPECT_FALSE(ds::job_files_supported());
  try {
    ds::read_job_file("job.yaml");
    FAIL() << "accepted";
  } catch (const ds::UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "run: this dev-sandbox was built without job-file support (yaml-cpp was not found at build time; "
              "install libyaml-cpp-dev or yaml-cpp-devel, or run ./ucm-toolkit build, and rebuild)");
  }
}
