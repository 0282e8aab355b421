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
  if (hook_) hook_(hook_context_);
  const uint32_t gen = s_->generation.load(std::memory_order_acquire);
  // An abort between the look above and this load has already moved the
  // generation: gen is the new one, nothing would move it again and the wait below
  // would last until the timeout (for ever with --timeout 0). abort() stores
  // `aborted` before it moves the generation, so a look now that gen is read sees
  // any abort that gen does not wait for.
  if (is_aborted()) throw Stopped("stopped: another worker failed");
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
  // No lost wake-up: the sleep is on `generation` with the value read before this
  // thread arrived (and before its last look for an abort), and whoever releases
  // (the last to arrive, abort()) moves `generation` before it wakes, so a release
  // that lands before futex_wait makes it return at once. (Each sleep is also at
  // most 100 ms, for Ctrl-C and the timeout.)
  // First a poll of kSpinNs (core/futex.h), as the sim engine's threads poll. It
  // was 2000 pauses, about 19 us where a pause is 140 cycles, spent every
  // iteration by the first worker to arrive, on a CPU that the engine still
  // copying for the last one may have needed.
  const auto released = [&] { return s_->generation.load(std::memory_order_acquire) != gen; };
  spin_until(released);
  while (!released()) {
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
