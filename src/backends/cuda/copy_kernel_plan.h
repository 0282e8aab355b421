// How ds_copy_kernel (copy_kernel.cu) splits one copy, decided on the host and
// passed as its `head` and `width` parameters: bytes [0, head) one at a time,
// then whole `width`-byte units from dst + head and src + head, both of which
// are `width`-aligned, then the tail one at a time. ds_gather_kernel's table
// holds the same plan per descriptor, and its grid is planned here too.
#pragma once

#include <algorithm>
#include <cstdint>

namespace ds {

struct KernelCopyPlan {
  uint64_t head;   // bytes copied singly first: < width
  uint64_t width;  // 16, 8, 4, 2 or 1
};

// The widest unit both ends can reach at the same offset: when dst and src are
// equally misaligned modulo 16 (always so for our blocks: their buffers are
// aligned and both are at the same offset), a head of at most 15 bytes brings
// both to 16-byte alignment; otherwise the widest of 8, 4, 2 where their
// misalignments agree; else single bytes.
inline KernelCopyPlan plan_kernel_copy(uint64_t dst, uint64_t src) {
  for (uint64_t width = 16; width > 1; width /= 2)
    if (dst % width == src % width) return {(width - dst % width) % width, width};
  return {0, 1};
}

// One descriptor of ds_gather_kernel's table, as it lies in device memory: five
// 64-bit words, copy_kernel.cu's GatherDesc.
struct GatherDescriptor {
  uint64_t dst, src, bytes, head, width;
};
static_assert(sizeof(GatherDescriptor) == 40, "ds_gather_kernel reads 40-byte descriptors");

inline GatherDescriptor plan_gather_descriptor(uint64_t dst, uint64_t src, uint64_t bytes) {
  const KernelCopyPlan p = plan_kernel_copy(dst, src);
  return {dst, src, bytes, p.head, p.width};
}

// Whole units of a descriptor (after its head).
inline uint64_t gather_units(const GatherDescriptor& d) {
  return (d.bytes - std::min(d.head, d.bytes)) / d.width;
}

// ds_gather_kernel's grid: x columns striding over the `count` descriptors, y
// blocks per column sharing one descriptor's units (enough for the largest,
// `threads` units a block per pass), at most `max_blocks` blocks in all and
// never fewer than one each way.
struct GatherGrid {
  unsigned x, y;
};
inline GatherGrid plan_gather_grid(uint64_t count, uint64_t largest_units, unsigned threads, unsigned max_blocks) {
  const uint64_t cap = std::max(1u, max_blocks);
  const uint64_t x = std::max<uint64_t>(1, std::min<uint64_t>(count, cap));
  const uint64_t want = (std::max<uint64_t>(1, largest_units) + threads - 1) / threads;
  const uint64_t y = std::max<uint64_t>(1, std::min<uint64_t>({want, cap / x, 65535}));
  return {static_cast<unsigned>(x), static_cast<unsigned>(y)};
}

}  // namespace ds
