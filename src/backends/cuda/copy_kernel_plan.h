// How ds_copy_kernel (copy_kernel.cu) splits one copy, decided on the host and
// passed as its `head` and `width` parameters: bytes [0, head) one at a time,
// then whole `width`-byte units from dst + head and src + head, both of which
// are `width`-aligned, then the tail one at a time.
#pragma once

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

}  // namespace ds
