// --format and --output, shared by every command that reports results
// (copy, quick mode, trans, aio): add the options, then make the writer.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <functional>
#include <string>
#include <vector>

#include "backends/select.h"
#include "cluster/across_ranks.h"
#include "measurement/measurement.h"
#include "output/result.h"

namespace ds {

struct OutputOptions {
  std::string format = "text";  // text|json|csv
  std::string output;           // empty: stdout
};

void add_output_options(CLI::App* app, OutputOptions& o);

// The writer for `o`: UsageError (exit 2) for an unknown --format, RunError
// (exit 1) naming the path when --output cannot be written. Results go to
// --output, else to `out`. The --output file appears whole when finish() is done
// (output/atomic_file.h), never half-written; dropped without finish() (a usage
// error, a crash) it never appears and a previous file stays as it was. Results
// to `out` that cannot be written because the reader went away (a closed pipe)
// throw OutputClosed.
std::unique_ptr<ResultWriter> make_writer(const OutputOptions& o, std::ostream& out);

// Across ranks (docs/cluster.md): rank 0 writes to stdout or --output
// as `o` says, the other ranks nothing; every rank runs `measure` into its own
// collecting writer (run_across_ranks). Returns the exit code.
int run_ranks_writing(Cluster& ranks, const OutputOptions& o, const std::function<void(ResultWriter&)>& measure,
                      NodeLines lines, const std::function<std::string(const CaseResult&)>& label);

// Runs `measure`, which writes a run's results into `writer` (calling begin()
// itself and setting `begun`). A usage error passes through untouched (no
// document: the command line was wrong). Any other failure still leaves a whole
// document saying what failed: a header if `measure` had not begun one, then
// the error under the name in `current` (which `measure` keeps up to date).
void write_or_record_failure(ResultWriter& writer, const std::vector<std::string>& command_line,
                             const std::function<void(bool& begun, std::string& current)>& measure);

// The header of a run's document: tool, backend, its devices, the command line.
RunInfo run_info(const SelectedBackend& selected, const std::vector<std::string>& command_line);

// What a run says, on stderr as "dev-sandbox: note: <line>".
Notes& stderr_notes();

// What sim's numbers are in each command, for the backend line.
constexpr const char kSimCopies[] = "CPU memcpy numbers, not an accelerator's";
constexpr const char kSimLoad[] = "its copies are CPU memcpy, not an accelerator's; the disk reads are real";
constexpr const char kSimOffload[] = "its copies are CPU memcpy, not an accelerator's; the disk writes are real";
constexpr const char kSimAio[] = "the disk I/O is real; the host buffers are plain memory";

// select_backend(`requested`), and the run's backend line for stderr, from rank 0
// only ("dev-sandbox: backend sim (auto: ...) -- <sim_tail>"; backend_line()): said
// before the first note or line of the run (the harness says what it will allocate
// before any setup), so a request refused after the selection stays one line.
SelectedBackend select_and_say(const std::string& requested, const std::string& sim_tail);

// Throws UsageError unless `format` is text, json or csv.
void check_format(const std::string& format);

}  // namespace ds
