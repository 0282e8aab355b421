// --format and --output, shared by every command that reports results
// (copy, quick mode, trans, aio): add the options, then make the writer.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <functional>
#include <string>
#include <vector>

#include "backend/select.h"
#include "output/result.h"

namespace ds {

struct OutputOptions {
  std::string format = "text";  // text|json|csv
  std::string output;           // empty: stdout
};

void add_output_options(CLI::App* app, OutputOptions& o);

// The writer for `o`: UsageError (exit 2) for an unknown --format, RunError
// (exit 1) naming the path when --output cannot be opened. Results go to
// --output, else to `out`. The writer owns the file; a file it created is
// removed again when the writer is dropped without finish() (a usage error after
// it was made), so a wrong command line leaves nothing behind.
std::unique_ptr<ResultWriter> make_writer(const OutputOptions& o, std::ostream& out);

// Runs `measure`, which writes a run's results into `writer` (calling begin()
// itself and setting `begun`). A usage error passes through untouched (no
// document: the command line was wrong). Any other failure still leaves a whole
// document saying what failed: a header if `measure` had not begun one, then
// the error under the name in `current` (which `measure` keeps up to date).
void write_or_record_failure(ResultWriter& writer, const std::vector<std::string>& command_line,
                             const std::function<void(bool& begun, std::string& current)>& measure);

// The header of a run's document: tool, backend, its devices, the command line.
RunInfo run_info(const SelectedBackend& selected, const std::vector<std::string>& command_line);

// Throws UsageError unless `format` is text, json or csv.
void check_format(const std::string& format);

}  // namespace ds
