#include "memory/pattern.h"

#include <cstring>

namespace ds {

namespace {

uint64_t mix(uint64_t x) {  // splitmix64 finaliser
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Word i of a block: a bijection of i (odd multiplier) offset by the block's key.
inline uint64_t word(uint64_t seed, uint64_t i) { return seed ^ (i * 0xD6E8FEB86659FD93ULL); }

}  // namespace

uint64_t pattern_key(int owner, uint64_t block) {
  return mix((static_cast<uint64_t>(owner) << 40) ^ block);
}

void pattern_fill(void* dst, size_t bytes, uint64_t key) {
  auto* p = static_cast<unsigned char*>(dst);
  const size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t v = word(key, i);
    std::memcpy(p + i * 8, &v, 8);
  }
  const uint64_t last = word(key, words);
  std::memcpy(p + words * 8, &last, bytes - words * 8);
}

int64_t pattern_check(const void* src, size_t bytes, uint64_t key) {
  const auto* p = static_cast<const unsigned char*>(src);
  const size_t words = bytes / 8;
  for (size_t i = 0; i < words; ++i) {
    const uint64_t v = word(key, i);
    if (std::memcmp(p + i * 8, &v, 8) != 0) {
      unsigned char e[8];
      std::memcpy(e, &v, 8);
      for (size_t b = 0; b < 8; ++b)
        if (p[i * 8 + b] != e[b]) return static_cast<int64_t>(i * 8 + b);
    }
  }
  const uint64_t last = word(key, words);
  unsigned char e[8];
  std::memcpy(e, &last, 8);
  for (size_t b = 0; b < bytes - words * 8; ++b)
    if (p[words * 8 + b] != e[b]) return static_cast<int64_t>(words * 8 + b);
  return -1;
}

}  // namespace ds
