// The options `aio` and `load` share about their disk side: --workspace
// (repeatable), --engine and --iodepth, parsed the same way with the same messages.
#pragma once

#include <string>
#include <vector>

#include "aio/io_engine.h"

namespace ds {

// --workspace as typed: each directory once (trailing slashes ignored), none empty,
// at least one. UsageError naming the option.
std::vector<std::string> parse_workspaces(const std::vector<std::string>& typed);

// --engine libaio|io_uring (and psync where `psync` is offered). UsageError naming
// the option and the values it accepts.
AioEngineKind parse_engine(const std::string& text, bool psync);

// A queue depth (--iodepth, --staging): from `min` to kMaxIoDepth. UsageError naming `option`.
unsigned parse_depth(const std::string& option, const std::string& text, uint64_t min);

}  // namespace ds
