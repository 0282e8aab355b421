// A load with offloads beside it (`load --offload-ratio R`): on every card one
// request's KV loaded (disk -> host staging -> device, staging/pipeline.h) while R
// times its blocks are offloaded (device -> host staging -> disk), both pipelines at
// once over the same cards, disks and CPUs, as a serving engine loads prefix hits
// while it offloads what it just computed. Per card a forked worker holds two sides
// (staging/staged_side.h): the load side (its KV region, staging buffers, engine and
// block files, on the worker's thread) and the offload side (a region, staging
// buffers, engine and block files of its own, on a device handle of its own, run by
// a thread of the worker made at setup). Each round three passes with the same
// sides: both together (the two threads started together), load alone, offload
// alone; the result says each direction's bandwidth alone and together and which
// shared resource fell short (staging/mix_stages.h).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "backends/select.h"
#include "core/notes.h"
#include "output/result.h"
#include "staging/staged_params.h"

namespace ds {

// --offload-ratio R: offloaded blocks per loaded block, above 0 and at most this.
constexpr double kMaxOffloadRatio = 64.0;

// The offload side's parameters: the load's, with the same blocks (the same files'
// shape, fragments and copies) and max(1, round(R x the load's blocks)) of them,
// every card its own files (never --shared). `note` (when not null) gets the line
// said when R x blocks is not a whole number of blocks; UsageError when R is
// outside (0, 64].
StagedParams mix_offload_params(const StagedParams& load, double ratio, std::string* note);

// What one card holds in device memory for both sides: each side's KV region on the
// card (Layout::region_bytes(): with --block-table the whole paged pool), added.
uint64_t mix_device_bytes(const StagedParams& load, const StagedParams& offload);

// As measure_staged (staging/staged_measure.h), for both directions at once.
void measure_mix(const StagedParams& load, double ratio, const SelectedBackend& selected, ResultWriter& writer,
                 const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
