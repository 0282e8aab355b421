// What one device moves per iteration, as a run parameter (not part of a case,
// which is only the path: source, destination, method, topology): IO tasks, each
// made of fragments. Every fragment is one copy (one SDMA context on the direct
// path) at its own offset in the device's source and destination regions; a task
// is one submission on the direct path. All tasks have the same fragments, so a
// layout is one task's fragment sizes and a task count, and a device's fragments
// are computed, never stored: a large -n costs nothing until it is copied.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ds {

struct Fragment {
  uint64_t offset;  // in the device's region
  uint64_t bytes;
};

class Layout {
 public:
  // -s S -n N -f F: N tasks of max(1, F) fragments of S bytes, back to back; the
  // table counts fragments as blocks (Size = S, Count = N x max(1, F) per device).
  static Layout uniform(uint64_t block_bytes, uint64_t tasks, int frags);

  // `tasks` tasks of fragments of these sizes, in order. `count_fragments`: the
  // table's Size and Count are per fragment (all must be the same size) rather
  // than per task. UsageError if it is empty, holds a 0, or its bytes overflow.
  Layout(std::vector<uint64_t> task_fragments, uint64_t tasks, bool count_fragments);

  // A KV-cache block layout (--block-layout, --model): `tasks` tasks of these
  // fragments, counted per task (Size = the block, Count = tasks), each fragment
  // kind in its own region as the tensors of a real KV cache are (all K, then all
  // V, ...): fragment j of task t at j's region start + t x size j.
  static Layout block(std::vector<uint64_t> block_fragments, uint64_t tasks);
  bool per_fragment_regions() const { return regions_; }
  // One task's fragment sizes, in order.
  const std::vector<uint64_t>& task_fragments() const { return sizes_; }

  uint64_t tasks() const { return tasks_; }
  size_t fragments_per_task() const { return sizes_.size(); }
  uint64_t fragments() const { return tasks_ * sizes_.size(); }  // per device
  Fragment fragment(uint64_t i) const;
  uint64_t task_bytes() const { return task_bytes_; }
  uint64_t bytes() const { return bytes_; }  // what one device moves: every fragment once
  // The region the fragments lie in: bytes(), or a paged pool's (paged()).
  uint64_t region_bytes() const { return region_bytes_; }

  // The same fragments with the tasks placed in a paged pool (layout/block_table.h):
  // the tasks in groups of `group` (a logical block: one block file's tasks), group g
  // at slot slots[g] of a pool of `pool` groups. Every fragment keeps its index, size
  // and kind; its offset becomes the slot's: fragment j of task t at (regions: region
  // j's start + ...) (slot(t / group) x group + t % group) x size. UsageError when the
  // slots do not cover the tasks or the pool's bytes overflow.
  Layout paged(const std::vector<uint64_t>& slots, uint64_t pool, uint64_t group) const;
  bool is_paged() const { return !slots_.empty(); }
  uint64_t largest_fragment() const { return largest_; }

  // The table's Size(KB) (bytes of one counted unit) and Count (units per device).
  uint64_t unit_bytes() const { return count_fragments_ ? sizes_.front() : task_bytes_; }
  uint64_t units() const { return count_fragments_ ? fragments() : tasks_; }
  // The -f the user gave (0: every block its own task), for the report.
  int frags_option() const { return frags_option_; }

 private:
  std::vector<uint64_t> sizes_;    // one task's fragments
  std::vector<uint64_t> offsets_;  // their offsets within the task
  uint64_t tasks_ = 0;
  uint64_t task_bytes_ = 0;
  uint64_t bytes_ = 0;
  uint64_t largest_ = 0;
  bool count_fragments_ = true;
  bool regions_ = false;
  std::vector<uint64_t> region_starts_;  // per-fragment regions: where fragment j's region begins
  uint64_t region_bytes_ = 0;
  std::vector<uint64_t> slots_;  // paged: per group of tasks, its slot
  uint64_t group_ = 1;
  uint64_t place(uint64_t task) const {  // the task's position in the region
    return slots_.empty() ? task : slots_[static_cast<size_t>(task / group_)] * group_ + task % group_;
  }
  int frags_option_ = 0;
};

// Where a copy's two sides lie (copy's --block-table, --host-block-table): the host
// side's fragments and the device side's, the same fragments in order, each side
// contiguous per block or placed in a paged pool (Layout::paged). A buffer is sized
// to its side's region_bytes() and every copy goes from its fragment's offset on one
// side to the same fragment's offset on the other.
struct CopyPlacement {
  Layout host;
  Layout device;
  const Layout& side(bool device_side) const { return device_side ? device : host; }
};

// "128K,16K,32K": one task's fragments, as --block-layout takes them; over 8 that
// repeat a shorter run, the shortest run repeated: "61x[144K,16896]" (an engine
// layout's layers; K and V of one size are "128x[32K]").
std::string layout_label(const Layout& layout);

}  // namespace ds
