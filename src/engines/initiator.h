// The engine axis: how one device's blocks are issued in one iteration. One
// timing loop (cases/case_runner) drives every initiator the same way:
//   submit()  — issue every block, return when the last submission returned
//   wait()    — until every copy is complete
//   engine_ns() — the device-side copy duration of that iteration (SPEC §4.2)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ds {

enum class EngineKind {
  kCe,             // one stream, one submission per block          CE
  kCeBatch,        // one stream, all blocks in one batched call     CE-BATCH
  kCeMultiStream,  // blocks round-robin over S streams              CE-MS
  kDirect,         // one direct task per IO task of F fragments     SDMA / BATCH / FFTS-SDMA
  kKernel,         // a copy kernel per block                        SM
  kMemcpy,         // CPU memcpy on the worker thread                MEMCPY
};

// Base Method name of an engine (the fork suffix and the direct-path name are
// added by the case, which knows topology and backend).
std::string engine_method(EngineKind kind, const Backend& backend);

struct CopyPlan {
  std::vector<CopyDesc> blocks;  // every block of one iteration, in order
  CopyDir dir = CopyDir::kH2D;
  size_t frags = 1;              // blocks per direct task
  int streams = 1;               // for kCeMultiStream
};

class Initiator {
 public:
  virtual ~Initiator() = default;
  virtual void submit() = 0;
  virtual void wait() = 0;
  virtual int64_t engine_ns() = 0;
};

std::unique_ptr<Initiator> make_initiator(EngineKind kind, Device& device, CopyPlan plan);

}  // namespace ds
