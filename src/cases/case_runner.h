// The one timing engine: sets up buffers on every participating device, runs the
// iterations with aligned starts, aggregates per SPEC §4 and validates.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "cases/case_spec.h"
#include "output/result.h"

namespace ds {

// Upper bounds of the count options (exit 2 above them).
constexpr int kMaxIterations = 100000000;
constexpr int kMaxDevices = 4096;
constexpr int kMaxFrags = 65536;
constexpr int kMaxStreams = 1024;

struct CopyParams {
  uint64_t block_bytes = 512ULL << 20;  // -s
  uint64_t blocks = 8;                  // -n
  int iterations = 128;                 // -i
  int devices = 8;                      // -d
  int frags = 0;                        // -f
  int streams = 4;                      // --streams
  int warmup = 2;                       // --warmup
  bool validate = false;                // --validate
};

// Memory a case needs, for the pre-flight check (SPEC §6).
struct MemoryNeeds {
  uint64_t host = 0;            // host RAM over all processes (sim: device memory too)
  uint64_t shm = 0;             // /dev/shm
  uint64_t locked_per_process = 0;
  uint64_t device_per_device = 0;
};

MemoryNeeds memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend);
// Throws RunError with the numbers and what to lower when the run would not fit.
void check_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend);

// Runs one case; throws RunError on failure (validation mismatch included).
CaseResult run_case(const CaseSpec& spec, const CopyParams& params, Backend& backend);

}  // namespace ds
