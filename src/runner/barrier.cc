#include "runner/barrier.h"

#include <limits>

#include "core/clock.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/interrupt.h"

namespace ds {

void Barrier::init(uint32_t parties) {
  s_->arrived.store(0);
  s_->generation.store(0);
  s_->aborted.store(0);
  s_->parties = parties;
}

void Barrier::abort() {
  s_->aborted.store(1, std::memory_order_seq_cst);
  s_->generation.fetch_add(1, std::memory_order_seq_cst);
  futex_wake_all(&s_->generation);
}

void Barrier::wait(int64_t timeout_ns) {
  if (is_aborted()) throw Stopped("stopped: another worker failed");
  const uint32_t gen = s_->generation.load(std::memory_order_acquire);
  if (s_->arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == s_->parties) {
    s_->arrived.store(0, std::memory_order_relaxed);
    s_->generation.fetch_add(1, std::memory_order_seq_cst);
    futex_wake_all(&s_->generation);
    return;
  }
  // --timeout 0 waits without limit (INT64_MAX): saturate rather than overflow.
  const int64_t start = now_ns();
  const int64_t deadline = timeout_ns > std::numeric_limits<int64_t>::max() - start ? std::numeric_limits<int64_t>::max()
                                                                                   : start + timeout_ns;
  int spins = 0;
  while (s_->generation.load(std::memory_order_acquire) == gen) {
    if (spins < 2000) {
      ++spins;
      cpu_relax();
      continue;
    }
    const int64_t left = deadline - now_ns();
    if (left <= 0)
      throw RunError("barrier: timed out after " + std::to_string(timeout_ns / 1000000000) +
                     " s waiting for the other workers");
    check_interrupted();
    futex_wait(&s_->generation, gen, left < 100000000 ? left : 100000000);
  }
  if (is_aborted()) throw Stopped("stopped: another worker failed");
}

}  // namespace ds
