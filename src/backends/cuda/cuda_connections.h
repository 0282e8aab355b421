// How many hardware work queues ("connections") the CUDA driver gives a
// context, as it reads CUDA_DEVICE_MAX_CONNECTIONS from the environment when it
// makes the context: 1 to 32, 8 when unset. A context's streams are spread over
// them round-robin in the order they are made, so streams beyond that count
// share a queue, and the operations of every stream on it fill it together
// (what the stream start gate's bound counts). The driver may allocate fewer
// than asked for (MPS, hardware limits); the gate's stall watch covers that.
#pragma once

#include <cstdlib>
#include <string>

namespace ds {

constexpr int kCudaDefaultConnections = 8;
constexpr int kCudaMaxConnections = 32;

struct CudaConnections {
  int count = kCudaDefaultConnections;
  std::string setting;  // for messages: "CUDA_DEVICE_MAX_CONNECTIONS=4; it takes 1 to 32"
};

// `value`: the variable's text, or null when it is unset. A value that is not a
// whole number, or below 1, counts as 1 (the fewest queues: the tightest bound,
// whatever the driver makes of it); above 32, as 32 (the driver's most).
inline CudaConnections cuda_connections(const char* value) {
  CudaConnections c;
  const std::string name = "CUDA_DEVICE_MAX_CONNECTIONS";
  const std::string range = "; it takes 1 to " + std::to_string(kCudaMaxConnections);
  if (!value || !*value) {
    c.setting = name + " unset: the driver's default of " + std::to_string(kCudaDefaultConnections) + range;
    return c;
  }
  char* end = nullptr;
  const long v = std::strtol(value, &end, 10);  // out of range: LONG_MAX or LONG_MIN
  const bool number = end != value && *end == '\0';
  c.count = !number || v < 1 ? 1 : v > kCudaMaxConnections ? kCudaMaxConnections : static_cast<int>(v);
  c.setting = name + "=" + value;
  if (!number || v < 1 || v > kCudaMaxConnections) c.setting += ", taken as " + std::to_string(c.count);
  c.setting += range;
  return c;
}

}  // namespace ds
