// Waiting on a 32-bit word without burning a core: a short spin, then the futex.
// Works between threads and, on MAP_SHARED memory, between processes.
#pragma once

#include <atomic>
#include <cstdint>

#include "core/clock.h"

namespace ds {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// How long a waiter polls before it sleeps on a futex (the barrier, the sim
// engine's threads): long enough to catch a hand-off that is already under way,
// short enough that a waiter does not take the CPU from the threads it waits for
// when there are more threads than CPUs (a thread that polls there delays, by as
// long as it polls, the copy it waits for). Bounded by the clock, not by a count
// of pauses: a pause takes 10 cycles on some x86 parts and 140 on others.
constexpr int64_t kSpinNs = 3000;

// Polls ready() for about kSpinNs; true as soon as it holds, false after that.
// (The clock is read every 64 polls.)
template <typename Ready>
bool spin_until(Ready ready, int64_t spin_ns = kSpinNs) {
  const int64_t deadline = now_ns() + spin_ns;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    cpu_relax();
    if ((i & 63) == 63 && now_ns() > deadline) return false;
  }
}

// Sleeps while *word == expected, at most timeout_ns (< 0: no limit).
// Returns false on timeout. Spurious returns are allowed: callers re-check.
bool futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);
void futex_wake_all(std::atomic<uint32_t>* word);

static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit atomics");

}  // namespace ds
