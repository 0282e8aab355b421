// The run parameters copy, quick mode and trans share, parsed from the options as
// typed (each command has its own defaults): -s -n -f -i -d --streams --warmup
// --validate.
#pragma once

#include <string>

#include "cases/case_runner.h"

namespace ds {

struct CopyOptionText {
  std::string size, blocks, iterations, devices, warmup = "2", frags = "0", streams = "4";
  bool validate = false;
};

// UsageError (exit 2) naming the option for anything out of range.
CopyParams parse_copy_params(const CopyOptionText& t);

}  // namespace ds
