// --format and --output, shared by every command that reports results
// (copy, quick mode, trans, aio): add the options, then make the writer.
#pragma once

#include <CLI/CLI.hpp>
#include <iosfwd>
#include <memory>
#include <string>

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

// Throws UsageError unless `format` is text, json or csv.
void check_format(const std::string& format);

}  // namespace ds
