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

#include "aio/io_engine.h"
#include "backends/select.h"
#include "core/notes.h"
#include "layout/layout.h"
#include "output/result.h"
#include "topology/placement.h"

namespace ds {

class Cluster;

struct LoadParams {
  std::vector<std::string> workspaces;  // --workspace, repeatable: files round-robin by file
  // One card's request: tasks of fragments (-s/-n/-f, --block-layout, --model).
  Layout layout = Layout::uniform(1ULL << 20, 64, 0);
  // Tasks in one block file (one read): 1, or --model's layers (one file per block,
  // all its layers, as aio --model stores it).
  uint64_t tasks_per_file = 1;
  int devices = 1;     // -d: cards, one worker process each
  int iterations = 8;  // -i
  int warmup = 1;      // --warmup
  AioEngineKind engine = AioEngineKind::kLibaio;
  unsigned iodepth = 16;  // --iodepth: reads in flight at most
  unsigned staging = 0;   // --staging: host staging buffers per card (0: iodepth)
  bool sdma = false;      // --sdma true: one direct-path task per block, else CE streams
  int streams = 4;        // --streams: CE streams per card (blocks round-robin)
  bool shared = false;    // --shared (MLA/DSA models): one file set that every card reads
  bool validate = false;  // --validate: every card's region checked after every iteration
  bool buffered = false;  // --buffered: page-cache I/O where O_DIRECT is refused
  int timeout_s = 60;     // --timeout
  NumaRequest numa_request;  // --numa, --numa-map: card c's worker and staging buffers on c's node
  // Across ranks (src/cluster): every rank loads to its own node's cards from its
  // own block files (named with its rank); each loop iteration starts on every
  // rank together. Null, or a one-rank cluster: one process, as always.
  Cluster* cluster = nullptr;

  uint64_t files() const { return layout.tasks() / tasks_per_file; }
  // One file's payload (its tasks' fragments back to back), and that rounded up to
  // 4096 bytes: the read's length and a staging buffer's size.
  uint64_t file_payload() const { return tasks_per_file * layout.task_bytes(); }
  uint64_t file_bytes() const { return (file_payload() + 4095) / 4096 * 4096; }
  unsigned staging_buffers() const;  // min(staging or iodepth, files())
};

// Checks the devices and memory, sets up the workspaces and writes the shard
// files (untimed), calls begin(), runs the iterations and hands the result (and
// the validation verdict) to `writer`. Files and created directories are removed
// at the end, on failure and on Ctrl-C.
void measure_load(const LoadParams& p, const SelectedBackend& selected, ResultWriter& writer,
                  const std::function<void()>& begin, std::string& current, Notes& notes);

}  // namespace ds
