// The run parameters copy, quick mode and trans share, parsed from the options as
// typed (each command has its own defaults): -s -n -f -i -d --streams/-S --warmup
// --validate --submit-mode --stream-start-gate.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "cases/case_runner.h"

namespace ds {

struct CopyOptionText {
  std::string size, blocks, iterations, devices, warmup = "2", frags = "0", streams = "4";
  std::string submit_mode = "stream-major", gate = "off";
  bool validate = false;
};

// UsageError (exit 2) naming the option for anything out of range.
CopyParams parse_copy_params(const CopyOptionText& t);

// --submit-mode and --stream-start-gate, for the commands that offer them.
void add_stream_options(CLI::App* app, CopyOptionText& t);

}  // namespace ds
