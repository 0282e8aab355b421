#include "layout/layout.h"

#include <algorithm>

#include "core/error.h"
#include "core/size_label.h"
#include "core/units.h"

namespace ds {

Layout Layout::uniform(uint64_t block_bytes, uint64_t tasks, int frags) {
  Layout l(std::vector<uint64_t>(static_cast<size_t>(std::max(1, frags)), block_bytes), tasks, true);
  l.frags_option_ = frags;
  return l;
}

Layout::Layout(std::vector<uint64_t> task_fragments, uint64_t tasks, bool count_fragments)
    : sizes_(std::move(task_fragments)), tasks_(tasks), count_fragments_(count_fragments) {
  if (sizes_.empty() || tasks_ == 0) throw UsageError("a layout needs at least one fragment and one task");
  for (uint64_t s : sizes_) {
    if (s == 0) throw UsageError("a layout fragment of 0 bytes");
    if (count_fragments_ && s != sizes_.front())
      throw UsageError("a layout counted by fragments needs fragments of one size");
    offsets_.push_back(task_bytes_);
    if (task_bytes_ + s < task_bytes_) throw UsageError("the layout's bytes overflow 64 bits");
    task_bytes_ += s;
    largest_ = std::max(largest_, s);
  }
  bytes_ = checked_mul(task_bytes_, tasks_, "-s x -n x -f");
  region_bytes_ = bytes_;
  frags_option_ = static_cast<int>(sizes_.size());
}

Layout Layout::block(std::vector<uint64_t> block_fragments, uint64_t tasks) {
  Layout l(std::move(block_fragments), tasks, false);
  l.regions_ = true;
  uint64_t start = 0;
  for (uint64_t s : l.sizes_) {
    l.region_starts_.push_back(start);
    start += s * l.tasks_;  // within bytes_, which was checked
  }
  return l;
}

Fragment Layout::fragment(uint64_t i) const {
  const uint64_t k = sizes_.size();
  const uint64_t task = i / k, at = i % k;
  const uint64_t pos = place(task);
  if (regions_) return {region_starts_[at] + pos * sizes_[at], sizes_[at]};
  return {pos * task_bytes_ + offsets_[at], sizes_[at]};
}

Layout Layout::paged(const std::vector<uint64_t>& slots, uint64_t pool, uint64_t group) const {
  if (group == 0 || tasks_ % group != 0 || slots.size() != tasks_ / group)
    throw UsageError("a block table of " + std::to_string(slots.size()) + " blocks for " + std::to_string(tasks_) +
                     " tasks in groups of " + std::to_string(group));
  Layout l = *this;
  l.slots_ = slots;
  l.group_ = group;
  const uint64_t pool_tasks = checked_mul(pool, group, "the pool's tasks");
  l.region_bytes_ = checked_mul(task_bytes_, pool_tasks, "the pool's bytes");
  if (l.regions_) {
    uint64_t start = 0;
    for (size_t j = 0; j < l.sizes_.size(); ++j) {
      l.region_starts_[j] = start;
      start += l.sizes_[j] * pool_tasks;  // within region_bytes_, which was checked
    }
  }
  return l;
}

std::string layout_label(const Layout& layout) {
  const std::vector<uint64_t>& f = layout.task_fragments();
  // Over 8 fragments that repeat a shorter run (an engine layout's layers): "61x[144K,16896]".
  size_t period = f.size();
  if (f.size() > 8)
    for (size_t p = 1; p < f.size() && period == f.size(); ++p)
      if (f.size() % p == 0 && std::equal(f.begin() + static_cast<std::ptrdiff_t>(p), f.end(), f.begin())) period = p;
  std::string s;
  for (size_t i = 0; i < period; ++i) s += (s.empty() ? "" : ",") + size_label(f[i]);
  if (period < f.size()) s = std::to_string(f.size() / period) + "x[" + s + "]";
  return s;
}

}  // namespace ds
