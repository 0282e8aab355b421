#pragma once

#include <cstdint>
#include <ctime>

namespace ds {

// CLOCK_MONOTONIC in nanoseconds: the clock every process on the machine shares.
inline int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace ds
