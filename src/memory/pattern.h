// The validation pattern (docs/measurement.md): every 8-byte word depends on (owner, block,
// word index), so a block copied to the wrong place or a torn copy is caught.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds {

uint64_t pattern_key(int owner, uint64_t block);
void pattern_fill(void* dst, size_t bytes, uint64_t key);
// Offset of the first byte that differs from the pattern, or -1 when all match.
int64_t pattern_check(const void* src, size_t bytes, uint64_t key);

}  // namespace ds
