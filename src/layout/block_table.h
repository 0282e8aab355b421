// A paged KV pool's block table (--block-table, --pool-blocks): the device side of a
// request is a pool of P block slots, and logical block b of the request lives in
// slot slots[b], as a serving engine's allocator leaves it. `sequential`: slots
// 0..n-1 (the contiguous case, through the same code); `random[:SEED]`: the first n
// places of a seeded shuffle of the pool (a front-to-back Fisher-Yates over
// std::mt19937_64, whose output the standard fixes, with our own bounded draw: the same
// table on every platform), drawn without the pool (O(n) whatever --pool-blocks); FILE:
// one slot id per line, as a user dumps it from their engine.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "layout/layout.h"

namespace ds {

// What made a table: which of the three, and random's seed.
enum class TableKind { kSequential, kRandom, kFile };

struct BlockTable {
  std::vector<uint64_t> slots;  // per logical block, its slot in the pool
  uint64_t pool = 0;            // slots in the pool
  std::string label;            // "random:7", "sequential", "table.txt": how the run names it
  TableKind kind = TableKind::kSequential;
  uint64_t seed = 0;            // kRandom: its seed
};

// The default pool: enough for the request four times over.
constexpr uint64_t kPoolPerRequest = 4;
// The largest --pool-blocks taken (2^40 slots).
constexpr uint64_t kMaxPoolBlocks = uint64_t{1} << 40;

// `spec` as --block-table takes it, for `blocks` logical blocks in a pool of `pool`
// slots (0: blocks x 4). UsageError (one line, naming --block-table or the file's line)
// for an unknown word, a bad seed, a pool smaller than the request, a file that
// cannot be read, a line that is not a slot id, a slot out of the pool, a slot named
// twice, or fewer lines than blocks.
// `option`, `pool_option`: the names the lines give (copy's host side: --host-block-table,
// --host-pool-blocks).
BlockTable make_block_table(const std::string& spec, uint64_t blocks, uint64_t pool,
                            const std::string& option = "--block-table", const std::string& pool_option = "--pool-blocks");

// A table of the same kind for `blocks` blocks in a pool of `pool` slots (0: blocks x
// 4): sequential for sequential, for random:SEED random:SEED+1 (its own draw, not the
// first table's slots again). A FILE table places the blocks it lists and cannot be
// sized: none (no slots).
BlockTable sibling_table(const BlockTable& table, uint64_t blocks, uint64_t pool);

// `layout` with its tasks in groups of `group` (a logical block's tasks) placed at
// the table's slots (Layout::paged); no slots: `layout` as it is.
Layout placed_by(const Layout& layout, const BlockTable& table, uint64_t group);

// --compare-contiguous's table for the same blocks: slots 0, 1, ... of the same pool
// (labelled "sequential"); no slots: none.
BlockTable sequential_in_pool(const BlockTable& table);

// How a run names a table: "random:7 in a pool of 256" (seed and pool), or "" for none.
std::string table_text(const BlockTable& table);

}  // namespace ds
