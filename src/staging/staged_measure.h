// The staged measurements, one request's KV cache between the POSIX store and every
// card through host staging buffers, overlapped:
//   load    (StagedDir::kLoad): disk -> host staging -> device. Per card a forked
//           worker reads the card's block files through the aio engine into K host
//           staging buffers and, as each read lands, submits the copies of its
//           fragments to the card (CE streams, or one direct-path task); a staging
//           buffer is read into again only once its copies are complete.
//   offload (StagedDir::kOffload): device -> host staging -> disk, the reverse: each
//           block's fragments copied D2H into a free staging buffer, the buffer
//           written to the block's file as soon as its copies are complete, and
//           copied into again once the write is complete.
// Each round also runs the two stages alone (disk alone: the same reads or writes,
// no copies; copy alone: the same copies to or from the staging buffers, no file
// I/O), so the result says which stage bounds the pipeline, or that the overlap is
// lost.
#pragma once

#include <functional>
#include <string>

#include "backends/select.h"
#include "core/notes.h"
#include "output/result.h"
#include "staging/pipeline.h"
#include "staging/staged_params.h"

namespace ds {

// Checks the devices and memory, sets up the workspaces and lays out the block files
// (untimed), calls begin(), runs the rounds and hands the result (and the
// validation verdict) to `writer`. Files and created directories are removed at the
// end, on failure and on Ctrl-C (unless --keep, after a successful run).
void measure_staged(StagedDir dir, const StagedParams& p, const SelectedBackend& selected, ResultWriter& writer,
                    const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
