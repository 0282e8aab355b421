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
// every card its own files (never --shared), with a --block-table its own table
// (mix_offload_table). `note` (when not null) gets the line
// said when R x blocks is not a whole number of blocks; UsageError when R is
// outside (0, 64].
StagedParams mix_offload_params(const StagedParams& load, double ratio, std::string* note);

// With --block-table the offload side gets a table of its own, of the same kind
// (layout/block_table.h sibling_table: sequential, or random:SEED+1) for its own
// blocks, in a pool scaled as its blocks are: ceil(pool x offload blocks / load
// blocks), at least its blocks (the default pool, 4 x the load's blocks, becomes 4 x
// the offload's). UsageError for a FILE table (it lists the load's blocks' slots only).
uint64_t mix_offload_pool(uint64_t load_pool, uint64_t load_blocks, uint64_t offload_blocks);
BlockTable mix_offload_table(const BlockTable& load, uint64_t load_blocks, uint64_t offload_blocks);

// "--offload-ratio with --block-table <label>: the load's <n> blocks at their slots of
// <table_text>, the offload's <m> at their slots of a table of their own, <table_text>"
// (the run's note, and the dry run's line).
std::string mix_tables_note(const StagedParams& load, const StagedParams& offload);

// What one card holds in device memory for both sides: each side's KV region on the
// card (Layout::region_bytes(): with --block-table the whole paged pool), added.
uint64_t mix_device_bytes(const StagedParams& load, const StagedParams& offload);

// As measure_staged (staging/staged_measure.h), for both directions at once.
void measure_mix(const StagedParams& load, double ratio, const SelectedBackend& selected, ResultWriter& writer,
                 const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
