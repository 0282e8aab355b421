// The run parameters copy, quick mode and trans share, parsed from the options as
// typed (each command has its own defaults): -s -n -f -i -d --streams/-S --warmup
// --validate --submit-mode --stream-start-gate.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cases/case_runner.h"

namespace ds {

// --numa, --numa-map, --shm-numa-nodes as typed ("": not given; --numa is auto then).
struct NumaOptionText {
  std::string mode, map, shm_nodes;
};

struct CopyOptionText {
  std::string size, blocks, iterations, devices, warmup = "2", frags = "0", streams = "4";
  std::string submit_mode = "stream-major", gate = "off", timeout = "60";
  bool validate = false;
  bool validate_each = false;  // --validate each
  std::string block_layout;    // --block-layout SIZE[,SIZE...] (copy, quick mode); empty: -s/-f
  bool size_given = false;     // -s was typed (it cannot go with --block-layout)
  std::string duplex_ratio = "1";  // --duplex-ratio R (the duplex cases)
  NumaOptionText numa;
};

// --block-layout's value: the fragment sizes, in order. UsageError naming the option.
std::vector<uint64_t> parse_block_layout(const std::string& text);

// Adds --validate [each] to `app` (also --validate=each): sets `validate` when it
// is given, `each` as well for `each`. A bare --validate, or --validate=end, checks
// once after the run. Any other value, or an empty `--validate=` among `words` (the
// command line as typed), is a parse error: exit 2, one line naming the option and
// the values it accepts.
CLI::Option* add_validate_option(CLI::App* app, bool& validate, bool& each, const std::vector<std::string>& words,
                                 const std::string& help);

// UsageError (exit 2) naming the option for anything out of range.
CopyParams parse_copy_params(const CopyOptionText& t);

// --submit-mode and --stream-start-gate, for the commands that offer them.
void add_stream_options(CLI::App* app, CopyOptionText& t);

// --numa auto|off and --numa-map (copy, quick mode, trans, aio, load); with
// `shared_region` also --shm-numa-nodes (copy's shared-source cases).
void add_numa_options(CLI::App* app, NumaOptionText& t, bool shared_region);
// UsageError (exit 2, one line naming the option) for a malformed value.
NumaRequest parse_numa_options(const NumaOptionText& t);

// --timeout SECONDS (copy, quick mode, trans, aio): the watchdog; 0 = never.
void add_timeout_option(CLI::App* app, std::string& text);
int parse_timeout(const std::string& text);  // UsageError naming --timeout

}  // namespace ds
