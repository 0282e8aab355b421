#include "backends/sim/sim_copy_thread.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>

#include "core/clock.h"
#include "core/futex.h"

namespace ds {

namespace {

// Idle threads poll for kSpinNs (core/futex.h), then sleep on a futex; they do
// not yield in a loop: every sched_yield that finds another runnable thread is a
// context switch, and with eight copy threads on two CPUs (2 devices x 4 streams)
// those switches took more CPU than the copies.

bool reached(uint32_t now, uint32_t target) { return static_cast<int32_t>(now - target) >= 0; }

// Copy threads readied for a timed pass and up, by the CPU they poll or copy on:
// one tally for the process (every device's streams), read and moved without a
// lock (two that settle at once may pick the same CPU: a hint, not a placement).
std::atomic<uint32_t> g_readied[CPU_SETSIZE];

// The calling copy thread's CPU for the pass: its own, unless an allowed CPU has
// fewer readied threads (SimCopyThread::fewest_readied), where it moves. A refused
// sched_setaffinity is kept in `error` (the first) and the thread stays. Returns
// the CPU it counted itself on, -1 when it cannot tell.
int settle_readied(int primer_cpu, std::atomic<int>* error) {
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE) return -1;
  auto refused = [&] {
    int none = 0;
    error->compare_exchange_strong(none, errno, std::memory_order_release);
  };
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    uint32_t counts[CPU_SETSIZE];
    for (int c = 0; c < CPU_SETSIZE; ++c) counts[c] = g_readied[c].load(std::memory_order_relaxed);
    const int best = SimCopyThread::fewest_readied(cpu, allowed, primer_cpu, counts);
    if (best != cpu) {
      // Pinned to the chosen CPU (the kernel moves a running thread off a CPU its
      // mask no longer has before the call returns), then free again where it is.
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(best, &one);
      if (sched_setaffinity(0, sizeof one, &one) != 0) {
        refused();
      } else {
        cpu = best;
        if (sched_setaffinity(0, sizeof allowed, &allowed) != 0) refused();
      }
    }
  }
  g_readied[cpu].fetch_add(1, std::memory_order_relaxed);
  return cpu;
}

}  // namespace

SimCopyThread::SimCopyThread(Hook hook, void* hook_context)
    : ring_(kRing), lists_(kRing), hook_(hook), hook_context_(hook_context) {
  thread_ = std::thread([this] { run(); });
  // Set from here so that the constructor knows the outcome; until then the new
  // thread only waits for work.
  sched_param none{};  // priority 0, the only one SCHED_BATCH has
  batch_error_ = pthread_setschedparam(thread_.native_handle(), SCHED_BATCH, &none);
}

SimCopyThread::~SimCopyThread() {
  // Stopping is the last op: everything queued before it still runs.
  push(Kind::kStop, nullptr, nullptr, 0, 0);
  thread_.join();
}

uint32_t SimCopyThread::reserve() {
  if (pushed_ - done_seen_ >= kRing) {
    done_seen_ = done_.load(std::memory_order_acquire);
    // Full: wait until a quarter of the ring is free, so that the copy thread still
    // has three quarters queued when this thread is woken.
    if (pushed_ - done_seen_ >= kRing) {
      wait_done(pushed_ - kRing + kRing / 4);
      done_seen_ = done_.load(std::memory_order_acquire);
    }
  }
  return pushed_ % kRing;
}

void SimCopyThread::wake_copier() {
  if (copier_sleeping_.load(std::memory_order_seq_cst) && copier_sleeping_.exchange(0)) {
    copier_wake_.fetch_add(1, std::memory_order_release);
    futex_wake_all(&copier_wake_);
  }
}

void SimCopyThread::publish() {
  ++pushed_;
  tail_.store(pushed_, std::memory_order_seq_cst);
  if (hook_) hook_(hook_context_, HookPoint::kPublished);
  // One wake per sleep: clear the flag so the pushes before the copy thread runs
  // again do not each pay for a system call. The flag may belong to a sleep
  // that began after tail_ was stored (this thread was preempted here): moving
  // copier_wake_ makes that sleep's futex_wait return, and the copy thread then sees
  // the new tail_ (see wait_for_work).
  wake_copier();
}

void SimCopyThread::push(Kind kind, void* a, const void* b, size_t n, uint32_t value) {
  ring_[reserve()] = Op{a, b, n, kind, value};
  publish();
}

void SimCopyThread::copy(const CopyDesc& desc) { push(Kind::kCopy, desc.dst, desc.src, desc.bytes, 0); }

void SimCopyThread::copy_each(const CopyDesc* descs, size_t n) {
  // One op, read in place: the submitting thread writes 32 bytes for the run, not
  // 32 per copy, and the copy thread reads the descriptors from lines nobody writes
  // (a ring slot per copy was a cache line moved between the two threads for every
  // two copies: about 5% of a load of 4 KiB chunks).
  if (n > 0) push(Kind::kEach, nullptr, descs, n, 0);
}

void SimCopyThread::copy_list(const CopyDesc* descs, size_t n) {
  const uint32_t slot = reserve();
  lists_[slot].assign(descs, descs + n);  // the slot is free: the copy thread is done with it
  ring_[slot] = Op{nullptr, nullptr, n, Kind::kList, 0};
  publish();
}

void SimCopyThread::stamp(SimEventStamp* event) { push(Kind::kStamp, event, nullptr, 0, 0); }

void SimCopyThread::wait_gate(const std::atomic<uint32_t>* word, uint32_t value) {
  push(Kind::kGate, const_cast<std::atomic<uint32_t>*>(word), nullptr, 0, value);
}

void SimCopyThread::wait_idle() { wait_done(pushed_); }

void SimCopyThread::ready(int64_t poll_until_ns, int primer_cpu) {
  up_.store(0, std::memory_order_relaxed);
  primer_cpu_.store(primer_cpu, std::memory_order_relaxed);
  // As publish(): the deadline and the copy thread's sleep flag are a store-load
  // pair on each side, so either the copy thread sees the deadline before it
  // sleeps, or this sees the flag and wakes it (moving copier_wake_).
  ready_until_.store(poll_until_ns, std::memory_order_seq_cst);
  wake_copier();
}

int SimCopyThread::fewest_readied(int cpu, const cpu_set_t& allowed, int primer_cpu, const uint32_t* counts) {
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &allowed)) return cpu;
  auto count = [&](int c) { return counts[c] + (c == primer_cpu ? 1u : 0u); };
  int best = cpu;
  uint32_t fewest = count(cpu);
  for (int c = 0; c < CPU_SETSIZE && fewest > 0; ++c) {
    if (c == cpu || !CPU_ISSET(c, &allowed)) continue;
    if (count(c) < fewest) {
      best = c;
      fewest = count(c);
    }
  }
  return best;
}

uint32_t SimCopyThread::readied_on(int cpu) {
  return cpu >= 0 && cpu < CPU_SETSIZE ? g_readied[cpu].load(std::memory_order_relaxed) : 0;
}

void SimCopyThread::kick() {
  copier_wake_.fetch_add(1, std::memory_order_release);
  futex_wake_all(&copier_wake_);
  futex_wake_all(&tail_);  // nobody sleeps on it now; a test of a regression still ends
  waiter_wake_.fetch_add(1, std::memory_order_release);
  futex_wake_all(&waiter_wake_);
}

void SimCopyThread::wait_done(uint32_t target) {
  auto finished = [&] { return reached(done_.load(std::memory_order_acquire), target); };
  if (finished()) return;
  // Waiting for everything queued, with the copy thread not running the queue
  // (asleep, or still waking up): run it here rather than wait for the copy thread
  // to wake up and then be woken by it (two wake-ups across CPUs, 5 to 20 us each
  // on a VM). Only for everything: nothing can be queued while this thread runs
  // the queue, so it leaves none behind for the copy thread.
  uint32_t free = kFree;
  if (target == pushed_ && owner_.load(std::memory_order_relaxed) == kFree &&
      owner_.compare_exchange_strong(free, kWaiter, std::memory_order_acq_rel)) {
    if (hook_) hook_(hook_context_, HookPoint::kWaiterRuns);
    uint32_t head = head_;
    while (head != target) {
      execute(head);
      ++head;
    }
    head_ = head;
    done_.store(head, std::memory_order_release);  // only the queue's holder moves done_
    owner_.store(kFree, std::memory_order_release);
    return;
  }
  // A poll only when the copy thread is at most a batch away from the target (done_
  // moves every kBatch ops): further away, what is left takes longer than the
  // poll (512 queued copies of 16 KiB take half a millisecond), and the poll
  // would only take the CPU from the copy thread it waits for.
  const bool near = target - done_.load(std::memory_order_acquire) <= kBatch;
  if (near && spin_until(finished)) return;
  // Sleep until the copy thread, having seen the flag, moves waiter_wake_. The flag
  // and the copy thread's done_ are a store-fence-load pair on each side: either the
  // copy thread sees the flag, or this thread sees done_ reach the target. seq is
  // read before the flag is raised, so a wake that lands before futex_wait (or
  // that clears a flag this thread has raised again since) still changes the
  // word from seq: futex_wait returns at once and the loop looks again.
  waiter_target_.store(target, std::memory_order_relaxed);
  for (;;) {
    const uint32_t seq = waiter_wake_.load(std::memory_order_acquire);
    waiter_sleeping_.store(1, std::memory_order_seq_cst);
    if (reached(done_.load(std::memory_order_seq_cst), target)) break;
    if (hook_) hook_(hook_context_, HookPoint::kWaiterSleeping);
    futex_wait(&waiter_wake_, seq, -1);
  }
  waiter_sleeping_.store(0, std::memory_order_relaxed);
}

bool SimCopyThread::report_done(uint32_t head) {
  done_.store(head, std::memory_order_release);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (waiter_sleeping_.load(std::memory_order_acquire) &&
      reached(head, waiter_target_.load(std::memory_order_relaxed))) {
    waiter_sleeping_.store(0, std::memory_order_relaxed);
    waiter_wake_.fetch_add(1, std::memory_order_release);
    futex_wake_all(&waiter_wake_);
    if (hook_) hook_(hook_context_, HookPoint::kWokeWaiter);
    return true;
  }
  return false;
}

bool SimCopyThread::poll_readied(uint32_t head) {
  if (ready_until_.load(std::memory_order_seq_cst) - now_ns() <= 0) return false;
  // Work already there (the pass began before this thread was up): run it where
  // it is rather than settle while the pass is timed.
  if (tail_.load(std::memory_order_acquire) != head) return true;
  if (tally_cpu_ < 0) tally_cpu_ = settle_readied(primer_cpu_.load(std::memory_order_relaxed), &move_error_);
  for (int i = 0;; ++i) {
    if (tail_.load(std::memory_order_acquire) != head) return true;
    if ((i & 63) == 0) {
      // Said again while it polls: a ready() for the next pass clears it.
      up_.store(1, std::memory_order_release);
      if (ready_until_.load(std::memory_order_acquire) - now_ns() <= 0) return false;
    }
    cpu_relax();
  }
}

void SimCopyThread::leave_tally() {
  if (tally_cpu_ < 0) return;
  g_readied[tally_cpu_].fetch_sub(1, std::memory_order_relaxed);
  tally_cpu_ = -1;
}

uint32_t SimCopyThread::wait_for_work(uint32_t head, bool poll) {
  auto ready = [&] { return tail_.load(std::memory_order_acquire) != head; };
  if (poll && spin_until(ready)) return tail_.load(std::memory_order_acquire);
  // As wait_done(): the flag and tail_ are a store-load pair on each side (either
  // publish() sees the flag, or this thread sees the new tail_), and the sleep is
  // on copier_wake_, read before the flag is raised, which every wake moves. A
  // publish that clears the flag of this sleep after storing tail_ before it
  // (the lost wake-up of sleeping on tail_ itself) moves copier_wake_ too.
  // Readied for a pass (ready()), it polls until the deadline instead; the flag
  // and the deadline are a store-load pair like the flag and tail_.
  for (;;) {
    if (poll_readied(head)) return tail_.load(std::memory_order_acquire);
    const uint32_t seq = copier_wake_.load(std::memory_order_acquire);
    copier_sleeping_.store(1, std::memory_order_seq_cst);
    const uint32_t tail = tail_.load(std::memory_order_seq_cst);
    if (tail != head) {
      copier_sleeping_.store(0, std::memory_order_relaxed);
      return tail;
    }
    if (ready_until_.load(std::memory_order_seq_cst) - now_ns() > 0) {
      copier_sleeping_.store(0, std::memory_order_relaxed);
      continue;
    }
    leave_tally();
    if (hook_) hook_(hook_context_, HookPoint::kCopierSleeping);
    futex_wait(&copier_wake_, seq, -1);
  }
}

void SimCopyThread::pass_gate(const Op& op) {
  // Safe as it is: the sleep is on the word the releaser stores to, with the value
  // just seen closed; a release changes that word (its rounds only go forward)
  // before it wakes, so a release before futex_wait makes futex_wait return.
  auto* word = static_cast<std::atomic<uint32_t>*>(op.a);
  auto open = [&] { return reached(word->load(std::memory_order_acquire), op.value); };
  if (spin_until(open)) return;
  for (;;) {
    const uint32_t seen = word->load(std::memory_order_acquire);
    if (reached(seen, op.value)) return;
    futex_wait(word, seen, -1);
  }
}

// Runs op `index`; false for the stop op.
bool SimCopyThread::execute(uint32_t index) {
  const Op& op = ring_[index % kRing];
  __builtin_prefetch(&ring_[(index + 2) % kRing]);
  switch (op.kind) {
    case Kind::kCopy:
      if (op.n) std::memcpy(op.a, op.b, op.n);
      break;
    case Kind::kList:
      for (const CopyDesc& d : lists_[index % kRing]) std::memcpy(d.dst, d.src, d.bytes);
      break;
    case Kind::kEach: {
      const CopyDesc* d = static_cast<const CopyDesc*>(op.b);
      for (size_t i = 0; i < op.n; ++i) std::memcpy(d[i].dst, d[i].src, d[i].bytes);
      break;
    }
    case Kind::kStamp:
      static_cast<SimEventStamp*>(op.a)->ns.store(now_ns(), std::memory_order_release);
      break;
    case Kind::kGate:
      report_done(index);  // what came before the gate is done, whatever it waits for
      pass_gate(op);
      break;
    case Kind::kStop:
      return false;
  }
  return true;
}

void SimCopyThread::run() {
  uint32_t seen = 0;   // everything before it has been run (by this thread or a waiter)
  bool poll = true;
  for (;;) {
    uint32_t tail = tail_.load(std::memory_order_acquire);
    if (tail == seen) tail = wait_for_work(seen, poll);
    // The queue is run by one thread at a time. A producer that found it free
    // when it waited for everything it queued runs it itself (wait_done): all
    // there is up to `tail` is then run by it (nothing is queued while it waits),
    // and this thread waits for later work.
    uint32_t free = kFree;
    if (!owner_.compare_exchange_strong(free, kCopier, std::memory_order_acq_rel)) {
      seen = tail;
      poll = false;
      continue;
    }
    uint32_t head = head_;  // where the last holder of the queue stopped
    uint32_t limit = head;
    bool woke = false;
    for (;;) {
      if (head == limit) {
        // Between batches: tell the producer how far we are, and see what it has
        // published since. done_ is moved before the queue is let go, so that it
        // never moves back after a producer's run of the queue.
        if (report_done(head)) woke = true;
        tail = tail_.load(std::memory_order_acquire);
        if (tail == head) break;
        limit = tail - head > kBatch ? head + kBatch : tail;
      }
      if (!execute(head)) {
        leave_tally();
        report_done(head + 1);
        return;
      }
      ++head;
    }
    head_ = head;
    owner_.store(kFree, std::memory_order_release);
    seen = head;
    // A producer this has just woken was asleep waiting for it: it publishes
    // nothing more before it has run again, so no poll for its next work.
    poll = !woke;
  }
}

}  // namespace ds
