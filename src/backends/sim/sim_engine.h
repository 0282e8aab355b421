// A simulated copy engine: one thread that executes submitted work in FIFO order
// with memcpy and stamps events with the monotonic clock as it reaches them.
// One producer (the worker thread that owns the stream) submits.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "backend/backend.h"

namespace ds {

struct SimEventStamp {
  std::atomic<int64_t> ns{-1};
};

class SimEngine {
 public:
  SimEngine();
  ~SimEngine();
  // Submissions that can be queued before the producer waits for the engine.
  static constexpr uint32_t capacity() { return kRing; }
  SimEngine(const SimEngine&) = delete;
  SimEngine& operator=(const SimEngine&) = delete;

  void copy(const CopyDesc& desc);                     // one copy
  void copy_list(const CopyDesc* descs, size_t n);     // one submission of n copies
  void stamp(SimEventStamp* event);                    // an event marker
  // A hold: the engine, on reaching it, waits until (int32_t)(*word - value) >= 0
  // (the releaser stores the value and wakes the futex of `word`).
  void wait_gate(const std::atomic<uint32_t>* word, uint32_t value);
  void wait_idle();                                    // every submission done

 private:
  struct Op {
    SimEventStamp* event = nullptr;
    const std::atomic<uint32_t>* gate = nullptr;
    uint32_t gate_value = 0;
    CopyDesc one{};
    std::vector<CopyDesc> list;
  };
  static constexpr uint32_t kRing = 4096;

  Op& reserve();
  void publish();
  void run();

  std::vector<Op> ring_;
  // Producer-side, engine-side and shared words on their own cache lines so the
  // two threads do not bounce one line per submission.
  alignas(64) uint32_t pushed_ = 0;    // producer-only
  uint32_t done_seen_ = 0;             // producer's last look at done_
  alignas(64) std::atomic<uint32_t> tail_{0};  // ops published (futex word for the engine)
  std::atomic<uint32_t> engine_sleeping_{0};
  alignas(64) std::atomic<uint32_t> done_{0};  // ops finished (futex word for waiters)
  std::atomic<uint32_t> waiter_sleeping_{0};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace ds
