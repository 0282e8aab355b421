// A barrier for threads or processes (its state may live in a SharedMapping),
// with a timeout and an abort that releases every waiter at once.
#pragma once

#include <atomic>
#include <cstdint>

namespace ds {

struct BarrierState {
  std::atomic<uint32_t> arrived{0};
  std::atomic<uint32_t> generation{0};
  std::atomic<uint32_t> aborted{0};
  uint32_t parties = 0;
};

class Barrier {
 public:
  explicit Barrier(BarrierState* state) : s_(state) {}
  void init(uint32_t parties);
  // Blocks until all parties arrived. Throws Stopped on abort, RunError after
  // timeout_ns, Interrupted on Ctrl-C.
  void wait(int64_t timeout_ns);
  // Releases every waiter with an error; later waits fail at once.
  void abort();
  bool is_aborted() const { return s_->aborted.load() != 0; }

 private:
  BarrierState* s_;
};

}  // namespace ds
