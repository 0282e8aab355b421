// Short size labels for power-of-two sizes: "512", "4K", "16K", "1M", "2G" (a
// size that is no whole multiple keeps the smaller unit: 1536 -> "1536").
#pragma once

#include <cstdint>
#include <string>

namespace ds {

inline std::string size_label(uint64_t bytes) {
  static const char* const units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (u < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + units[u];
}

}  // namespace ds
