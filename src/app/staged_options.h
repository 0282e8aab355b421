// The options of the staged commands, `load` (disk -> host staging -> device) and
// `offload` (device -> host staging -> disk): the same options, sizing, refusals and
// runs (one size, --sweep, across ranks) both ways, in each direction's words. The
// commands' own files (load_command.cc, offload_command.cc) add only their name,
// description and examples.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

#include "app/command.h"
#include "app/copy_params.h"
#include "app/model_options.h"
#include "app/output_options.h"
#include "app/sweep_options.h"
#include "model/model.h"
#include "staging/pipeline.h"
#include "staging/staged_params.h"

namespace ds {

struct StagedArgs {
  StagedDir dir = StagedDir::kLoad;
  std::vector<std::string> workspaces;
  CopyOptionText params;
  std::string engine = "libaio", iodepth = "16", staging = "0", sdma = "false";
  bool shared = false, buffered = false, create_workspace = false, keep = false;
  ModelOptionText model;
  OutputOptions out;
  SweepOptionText sweep;
  CLI::Option* size_option = nullptr;
  CLI::Option* blocks_option = nullptr;
  CLI::Option* frags_option = nullptr;
  CLI::Option* layout_option = nullptr;
  CLI::Option* devices_option = nullptr;  // -d: not given, --model's --tp sets it
  std::string block_table, pool_blocks = "0";  // --block-table (empty: none), --pool-blocks
  std::string host_block_table;  // --host-block-table: refused (the host side is the staging buffers)
  bool compare_contiguous = false;             // --compare-contiguous
  CLI::Option* table_option = nullptr;
  std::string offload_ratio;  // load --offload-ratio (not given: load alone)
  CLI::Option* offload_option = nullptr;
};

// The defaults (-s 1M -n 64 -i 8 -d 1 --warmup 1) for `dir`; with --model, -d is --tp's.
StagedArgs staged_defaults(StagedDir dir);

// Every staged option onto `c`, its help in a.dir's words.
void add_staged_options(CLI::App* c, StagedArgs& a);

struct StagedRequest {
  StagedParams p;
  std::optional<Workload> workload;
  std::vector<SweepStep> steps;  // --sweep: -s of each run, and its -n
  // --sweep with --block-table: each run's table, placed for its -n (empty: no table).
  std::vector<BlockTable> step_tables;
  double offload_ratio = 0;      // load --offload-ratio R: offloads beside the load (staging/mix_measure.h); 0: none
};

// The run the options ask for; UsageError (exit 2, one line naming the option).
StagedRequest parse_staged(const StagedArgs& a);

// `dev-sandbox load|offload ...`: --model list, --dry-run, one run, a --sweep (with
// --plot), or across ranks; returns the exit code.
int run_staged(const StagedArgs& a, const GlobalOptions& g);

// The sub-command `dir` names ("load", "offload") on `root` with every staged option:
// run_staged, parse_staged as its check, `description` and `examples` its help's.
Command add_staged_command(CLI::App& root, GlobalOptions& global, StagedDir dir, const std::string& description,
                           std::vector<std::string> examples);

}  // namespace ds
