// The measurement of `load`: one request's KV cache coming back from the POSIX
// store to every card, disk -> host staging -> device, overlapped. Per card a
// forked worker reads the card's shard files (one per block) through the aio
// engine into K registered host staging buffers, and as each read lands submits
// the copies of its fragments to the card (CE streams, or one direct-path task);
// a staging buffer is read into again only once its copies are complete. Each
// iteration also runs the two stages alone (disk alone: the same reads, no copies;
// copy alone: the same copies from the staging buffers, no reads), so the result
// says which stage bounds the pipeline, or that the overlap is lost.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backends/select.h"
#include "core/notes.h"
#include "output/result.h"
#include "staging/staged_params.h"

namespace ds {

// load's options: those of every staged measurement (staging/staged_params.h).
struct LoadParams : StagedParams {};

// Checks the devices and memory, sets up the workspaces and writes the shard
// files (untimed), calls begin(), runs the iterations and hands the result (and
// the validation verdict) to `writer`. Files and created directories are removed
// at the end, on failure and on Ctrl-C.
void measure_load(const LoadParams& p, const SelectedBackend& selected, ResultWriter& writer,
                  const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
