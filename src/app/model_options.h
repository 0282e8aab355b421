// --model and its companions (copy, quick mode, aio, load, offload): parsed into a Workload
// (src/model/), and how a result is said per request.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <string>

#include "model/model.h"
#include "output/result.h"

namespace ds {

struct ModelOptionText {
  std::string model, tp, input_len, block_size, kv_dtype, kv_layout;
  bool layerwise = false, dry_run = false;
  CLI::Option* tp_opt = nullptr;
  CLI::Option* input_opt = nullptr;
  CLI::Option* block_opt = nullptr;
  CLI::Option* dtype_opt = nullptr;
  CLI::Option* layout_opt = nullptr;
  CLI::Option* layerwise_opt = nullptr;
  CLI::Option* dry_opt = nullptr;
};

// Which command the options are for: each gets only those it accepts (--layerwise
// is aio's alone: the store layout; --kv-layout the device's, not aio's) and help in
// its own words.
enum class ModelOptionsFor { kCopy, kAio, kLoad, kOffload };
void add_model_options(CLI::App* app, ModelOptionText& t, ModelOptionsFor what);

// The workload --model asks for; nullopt without --model. UsageError when a
// companion option is given without --model, or for any bad value.
std::optional<Workload> parse_workload(const ModelOptionText& t);

// The model options as `copy` takes them, for an equivalent command: " --model NAME
// --tp N" and each companion that was given, as given (a word the shell would split
// or expand in single quotes). "" without --model.
std::string model_option_words(const ModelOptionText& t);

// With --model and no -d (`d_option` not given: copy, load, offload), the cards are
// the TP group's; a refusal then names the option kDevicesFromTp.
inline bool tp_sets_devices(const CLI::Option* d_option) { return !(d_option && d_option->count() > 0); }
constexpr const char* kDevicesFromTp = "-d (from --tp)";

// Puts the workload's line and JSON object into the run's header.
void attach_workload(RunInfo& info, const Workload& w);

}  // namespace ds
