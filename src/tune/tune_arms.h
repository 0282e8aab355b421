// The arms `tune` compares: every copy case of the catalog (cases/catalog) that moves
// one direction between pinned host memory and device memory, on one card or on
// every card, as this backend and machine offer it; a multi-stream case once per
// stream count and submit mode. Arms of one direction and card scope form a group:
// what is compared (best, runner-up, crossovers) is within a group (docs/tune.md).
#pragma once

#include <string>
#include <vector>

#include "backends/select.h"
#include "cases/case_spec.h"
#include "copy_methods/initiator.h"

namespace ds {

struct TuneArm {
  std::string method;  // "ce", "batch_ce", "ms_4", "ms_4_rr", "sm", "sm_gather", "direct"
  CaseSpec spec;       // the catalog case, as `copy -t` runs it
  int streams = 1;
  SubmitMode submit_mode = SubmitMode::kStreamMajor;
  size_t group = 0;    // index into TuneArms::groups
};

struct TuneGroup {
  std::string key;     // "h2d.one", "h2d.all", "d2h.one", "d2h.all"
  std::string title;   // "H2D, one card", "H2D, all 8 cards"
  CopyDir dir = CopyDir::kH2D;
  bool all_cards = false;
};

struct TuneArms {
  std::vector<TuneGroup> groups;
  std::vector<TuneArm> arms;
  // Cases the catalog has that this backend or machine cannot run, with why (a note each).
  std::vector<std::string> skipped;
};

struct ArmChoice {
  std::vector<int> streams{2, 4, 8};  // --streams: S for the multi-stream arms (stream-major)
  bool round_robin = true;            // also S = the middle count round-robin
  bool h2d = true, d2h = true;        // --direction
  bool one_card = true, all_cards = true;  // --cards
  int devices = 1;                    // cards of the all-card arms
};

// The arms for `selected` (its probe says what the machine offers).
TuneArms tune_arms(const SelectedBackend& selected, const ArmChoice& choice);

// "ms_4" for a multi-stream arm with 4 streams stream-major, "ms_4_rr" round-robin.
std::string arm_method_name(CopyMethod m, int streams, SubmitMode mode);

// The copy command that measures one point of `arm` the same way (for the JSON).
std::string arm_command(const TuneArm& arm, uint64_t block_bytes, uint64_t blocks, int devices, int iterations,
                        int warmup, const std::string& backend);

// The copy command that measures a --model point of `arm` the same way: the model's
// options as given (" --model Qwen3-32B --tp 8 --input-len 512": its block layout,
// so no -s/-n) and, for a paged point, its table options (" --block-table random:7
// --pool-blocks 16 --compare-contiguous").
std::string model_arm_command(const TuneArm& arm, const std::string& model_options, const std::string& table_options,
                              int devices, int iterations, int warmup, const std::string& backend);

}  // namespace ds
