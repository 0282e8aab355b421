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
  // Tests only: wait() calls hook(context) after its first look for an abort and
  // before it reads the generation it may sleep on (tests/unit/test_barrier.cc).
  using Hook = void (*)(void* context);
  Barrier(BarrierState* state, Hook hook, void* context) : s_(state), hook_(hook), hook_context_(context) {}
  void init(uint32_t parties);
  // Blocks until all parties arrived. Throws Stopped on abort, RunError after
  // timeout_ns, Interrupted on Ctrl-C.
  void wait(int64_t timeout_ns);
  // Releases every waiter with an error; later waits fail at once.
  void abort();
  bool is_aborted() const { return s_->aborted.load() != 0; }

 private:
  BarrierState* s_;
  Hook hook_ = nullptr;
  void* hook_context_ = nullptr;
};

}  // namespace ds
