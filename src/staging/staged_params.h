// What a staged measurement (load: disk -> host staging -> device; offload: device
// -> host staging -> disk) is asked for: the same options and sizing both ways.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "aio/io_engine.h"
#include "layout/block_table.h"
#include "layout/layout.h"
#include "topology/placement.h"

namespace ds {

class Cluster;

struct StagedParams {
  std::vector<std::string> workspaces;  // --workspace, repeatable: files round-robin by file
  // One card's request: tasks of fragments (-s/-n/-f, --block-layout, --model).
  Layout layout = Layout::uniform(1ULL << 20, 64, 0);
  // Tasks in one block file (one read or write): 1, or --model's layers (one file per
  // block, all its layers, as aio --model stores it).
  uint64_t tasks_per_file = 1;
  int devices = 1;     // -d: cards, one worker process each
  std::string devices_option = "-d";  // what set `devices`, for a refusal: "-d", or "-d (from --tp)"
  int iterations = 8;  // -i
  int warmup = 1;      // --warmup
  AioEngineKind engine = AioEngineKind::kLibaio;
  unsigned iodepth = 16;  // --iodepth: reads or writes in flight at most
  unsigned staging = 0;   // --staging: host staging buffers per card (0: iodepth)
  bool sdma = false;      // --sdma true: one direct-path task per block, else CE streams
  int streams = 4;        // --streams: CE streams per card (blocks round-robin)
  bool shared = false;    // --shared (MLA/DSA models): one file set for every card
  bool validate = false;  // --validate: checked after every pipelined pass
  bool buffered = false;  // --buffered: page-cache I/O where O_DIRECT is refused
  bool keep = false;      // --keep: the block files stay after a successful run
  int timeout_s = 60;     // --timeout
  NumaRequest numa_request;  // --numa, --numa-map: card c's worker and staging buffers on c's node
  // Across ranks (src/cluster): every rank moves its own node's cards' KV to or from
  // its own block files (named with its rank); each loop iteration starts on every
  // rank together. Null, or a one-rank cluster: one process, as always.
  Cluster* cluster = nullptr;

  // --block-table, --pool-blocks: where each logical block (one block file's tasks)
  // lies in the card's paged pool; no slots: the request's blocks back to back. The
  // block files and the staging buffers are the store's side: contiguous per block.
  BlockTable table;
  // --compare-contiguous (with a table): each round one more pipelined pass, the same
  // blocks at sequential slots of the same pool (the contiguous case), its own pipeline.
  bool compare_contiguous = false;

  uint64_t files() const { return layout.tasks() / tasks_per_file; }
  // The card's side: the layout, or the same placed in the pool by the block table.
  Layout device_layout() const {
    return table.slots.empty() ? layout : layout.paged(table.slots, table.pool, tasks_per_file);
  }
  // The same blocks at slots 0, 1, ... of the same pool: --compare-contiguous's side.
  Layout contiguous_layout() const;
  // One file's payload (its tasks' fragments back to back), and that rounded up to
  // 4096 bytes: one read's or write's length and a staging buffer's size.
  uint64_t file_payload() const { return tasks_per_file * layout.task_bytes(); }
  uint64_t file_bytes() const { return (file_payload() + 4095) / 4096 * 4096; }
  uint64_t fragments_per_file() const { return tasks_per_file * layout.fragments_per_task(); }
  unsigned staging_buffers() const;  // min(staging or iodepth, files())
};

}  // namespace ds
