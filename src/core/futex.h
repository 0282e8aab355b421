// Waiting on a 32-bit word without burning a core: a short spin, then the futex.
// Works between threads and, on MAP_SHARED memory, between processes.
#pragma once

#include <atomic>
#include <cstdint>

namespace ds {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

// Sleeps while *word == expected, at most timeout_ns (< 0: no limit).
// Returns false on timeout. Spurious returns are allowed: callers re-check.
bool futex_wait(std::atomic<uint32_t>* word, uint32_t expected, int64_t timeout_ns);
void futex_wake_all(std::atomic<uint32_t>* word);

static_assert(sizeof(std::atomic<uint32_t>) == 4 && std::atomic<uint32_t>::is_always_lock_free,
              "futex words must be plain 32-bit atomics");

}  // namespace ds
