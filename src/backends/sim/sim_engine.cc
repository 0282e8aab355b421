#include "backends/sim/sim_engine.h"

#include <sched.h>

#include <cstring>

#include "core/clock.h"
#include "core/futex.h"

namespace ds {

namespace {

// How long a thread polls before it sleeps on the futex: long enough to cover the
// gap between two submissions, short enough that an idle engine does not take
// CPU from busy ones when there are more engine threads than cores.
constexpr int64_t kSpinNs = 3000;
constexpr int64_t kYieldNs = 2000000;

template <typename Ready>
bool spin_until(Ready ready) {
  const int64_t deadline = now_ns() + kSpinNs;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && now_ns() > deadline) return false;
  }
}

// An idle engine stays runnable a while, giving its core to anyone who needs it:
// engines that sleep between iterations are woken onto the submitter's core and
// share it until the scheduler spreads them again.
template <typename Ready>
bool yield_until(Ready ready) {
  const int64_t deadline = now_ns() + kYieldNs;
  while (!ready()) {
    if (now_ns() > deadline) return false;
    sched_yield();
  }
  return true;
}

}  // namespace

SimEngine::SimEngine() : ring_(kRing) { thread_ = std::thread([this] { run(); }); }

SimEngine::~SimEngine() {
  stop_.store(true, std::memory_order_seq_cst);
  tail_.fetch_add(0, std::memory_order_seq_cst);
  futex_wake_all(&tail_);
  thread_.join();
}

SimEngine::Op& SimEngine::reserve() {
  // Ring full (by our last look): wait for the engine to retire the oldest op.
  while (pushed_ - done_seen_ >= kRing) {
    done_seen_ = done_.load(std::memory_order_acquire);
    if (pushed_ - done_seen_ < kRing) break;
    if (!spin_until([&] { return pushed_ - done_.load(std::memory_order_acquire) < kRing; }))
      sched_yield();
  }
  Op& op = ring_[pushed_ % kRing];
  op.event = nullptr;
  op.gate = nullptr;
  op.list.clear();
  return op;
}

void SimEngine::publish() {
  ++pushed_;
  tail_.store(pushed_, std::memory_order_seq_cst);
  // One wake per sleep: clear the flag so the pushes before the engine runs
  // again do not each pay for a system call.
  if (engine_sleeping_.load(std::memory_order_seq_cst) && engine_sleeping_.exchange(0))
    futex_wake_all(&tail_);
}

void SimEngine::copy(const CopyDesc& desc) {
  Op& op = reserve();
  op.one = desc;
  publish();
}

void SimEngine::copy_list(const CopyDesc* descs, size_t n) {
  Op& op = reserve();
  op.one = CopyDesc{nullptr, nullptr, 0};
  op.list.assign(descs, descs + n);
  publish();
}

void SimEngine::stamp(SimEventStamp* event) {
  Op& op = reserve();
  op.one = CopyDesc{nullptr, nullptr, 0};
  op.event = event;
  publish();
}

void SimEngine::wait_gate(const std::atomic<uint32_t>* word, uint32_t value) {
  Op& op = reserve();
  op.one = CopyDesc{nullptr, nullptr, 0};
  op.gate = word;
  op.gate_value = value;
  publish();
}

void SimEngine::wait_idle() {
  const uint32_t target = pushed_;
  auto finished = [&] { return done_.load(std::memory_order_acquire) == target; };
  while (!finished()) {
    if (spin_until(finished)) return;
    waiter_sleeping_.store(1, std::memory_order_seq_cst);
    const uint32_t seen = done_.load(std::memory_order_seq_cst);
    if (seen != target) futex_wait(&done_, seen, 1000000);
    waiter_sleeping_.store(0, std::memory_order_relaxed);
  }
}

void SimEngine::run() {
  uint32_t head = 0;
  for (;;) {
    auto has_work = [&] { return tail_.load(std::memory_order_acquire) != head; };
    if (!has_work()) {
      if (stop_.load(std::memory_order_acquire)) return;
      auto ready = [&] { return has_work() || stop_.load(std::memory_order_acquire); };
      if (!spin_until(ready) && !yield_until(ready)) {
        engine_sleeping_.store(1, std::memory_order_seq_cst);
        if (tail_.load(std::memory_order_seq_cst) == head && !stop_.load())
          futex_wait(&tail_, head, 1000000);
        engine_sleeping_.store(0, std::memory_order_relaxed);
      }
      continue;
    }
    Op& op = ring_[head % kRing];
    if (op.gate) {
      auto* word = const_cast<std::atomic<uint32_t>*>(op.gate);
      auto open = [&] { return static_cast<int32_t>(word->load(std::memory_order_acquire) - op.gate_value) >= 0; };
      while (!open()) {
        if (spin_until(open)) break;
        const uint32_t seen = word->load(std::memory_order_acquire);
        if (static_cast<int32_t>(seen - op.gate_value) < 0) futex_wait(word, seen, 1000000);
      }
    } else if (op.event) {
      op.event->ns.store(now_ns(), std::memory_order_release);
    } else if (!op.list.empty()) {
      for (const CopyDesc& d : op.list) std::memcpy(d.dst, d.src, d.bytes);
    } else if (op.one.bytes) {
      std::memcpy(op.one.dst, op.one.src, op.one.bytes);
    }
    ++head;
    done_.store(head, std::memory_order_release);
    // The only waiter is the producer waiting for everything it pushed, so it can
    // only be satisfied once the ring is empty: pay for the full fence then, not
    // after every copy.
    if (tail_.load(std::memory_order_acquire) == head) {
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (waiter_sleeping_.load(std::memory_order_relaxed)) futex_wake_all(&done_);
    }
  }
}

}  // namespace ds
