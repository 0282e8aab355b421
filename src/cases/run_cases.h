// What copy and trans share after parsing: check the request against the chosen
// backend, run the cases in order and hand results to the writer.
#pragma once

#include <string>
#include <vector>

#include "backends/select.h"
#include "cases/case_runner.h"
#include "cases/case_spec.h"
#include "output/result.h"

namespace ds {

// Empty when this machine (as the backend's probe found it) can run the case,
// else why not: no direct path, or no way to register host memory.
std::string machine_unsupported_reason(const CaseSpec& spec, const BackendProbe& probe);

// UsageError when -d exceeds the devices the backend sees (naming both);
// RunError when a case cannot run on this machine (machine_unsupported_reason).
void check_against_backend(const std::vector<CaseSpec>& cases, const CopyParams& params,
                           const SelectedBackend& selected, Notes& notes);

// One case with the parameters it runs with.
struct CaseRun {
  CaseSpec spec;
  CopyParams params;
};

// Runs every case in order; results go to `writer` as each finishes, and the
// writer is finished at the end; what they say goes to `notes`. Throws on failure after telling the writer.
void run_cases(const std::vector<CaseRun>& runs, SelectedBackend& selected, ResultWriter& writer, Notes& notes);
// The same cases all with `params`.
void run_cases(const std::vector<CaseSpec>& cases, const CopyParams& params,
               SelectedBackend& selected, ResultWriter& writer, Notes& notes);

}  // namespace ds
