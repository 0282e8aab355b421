// A simulated copy engine: one thread that executes submitted work in FIFO order
// with memcpy and stamps events with the monotonic clock as it reaches them.
// One producer (the worker thread that owns the stream) submits and waits. The
// queue is run by one thread at a time: the copy thread, or the producer when it
// waits for everything it queued and finds the copy thread not running the queue
// (asleep, or not yet awake from the wake-up its first submission sent): then the
// producer runs the ops itself, in the same order, with the same memcpy and clock,
// rather than wait for the copy thread to wake up and then be woken by it.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include "backend/backend.h"

namespace ds {

struct SimEventStamp {
  std::atomic<int64_t> ns{-1};
};

class SimCopyThread {
 public:
  // Where a test can stop a thread to force an interleaving of the hand-offs
  // between the producer and the copy thread (tests/unit/test_sim_copy_thread.cc).
  enum class HookPoint {
    kPublished,       // producer, publish(): tail_ stored, the copy thread's sleep flag not yet read
    kCopierSleeping,  // copy thread, waiting for work: flag raised, nothing new seen, futex_wait next
    kWaiterSleeping,  // producer, waiting for completion: flag raised, not done, futex_wait next
    kWokeWaiter,      // copy thread, report_done(): it has just woken the sleeping producer
    kWaiterRuns,      // producer, wait_done(): it has taken the queue to run it, nothing run yet
  };
  // Tests only: called on the thread that reaches each HookPoint. Every copy thread the
  // sim backend makes has none: a test of a member that is always null.
  using Hook = void (*)(void* context, HookPoint point);

  // The thread runs as SCHED_BATCH: woken by a submission, it does not preempt the
  // thread that submitted, which goes on queueing rather than hand its CPU back and
  // forth with the copy thread one op at a time (where the scheduler puts the woken
  // thread on the submitter's CPU). Where that is refused, batch_policy_error() says why.
  explicit SimCopyThread(Hook hook = nullptr, void* hook_context = nullptr);
  // Waits for everything queued, then stops the thread. A gate queued with
  // wait_gate() must have been released (or be released by another thread).
  ~SimCopyThread();
  SimCopyThread(const SimCopyThread&) = delete;
  SimCopyThread& operator=(const SimCopyThread&) = delete;

  void copy(const CopyDesc& desc);                     // one copy
  // n copies in order, each its own memcpy, handed over as one op whose
  // descriptors are read in place when it is run: descs must stay valid and
  // unchanged until then (wait_idle(), or a stamp queued after them reached).
  void copy_each(const CopyDesc* descs, size_t n);
  void copy_list(const CopyDesc* descs, size_t n);     // one submission of n copies (descs copied)
  void stamp(SimEventStamp* event);                    // an event marker: the clock when the queue reaches it
  // A gate: when the queue reaches it (in FIFO order), its runner waits until
  // (int32_t)(word->load(acquire) - value) >= 0, spinning briefly, then sleeping
  // on word's futex. The releaser stores the value, then futex_wake_all(word).
  // Work queued after the gate starts only once it is open. `word` must outlive
  // the wait; a process-shared word works between processes.
  void wait_gate(const std::atomic<uint32_t>* word, uint32_t value);
  // Every submission done. The producer's thread only: it may run the queue
  // itself up to what it has queued, which no other thread can know.
  void wait_idle();
  // Readying for a timed pass (SimDevice::ready_streams). ready() makes an idle copy
  // thread poll for work until the clock reaches poll_until_ns instead of sleeping
  // until the pass's first submission wakes it (a wake-up that a card's copy engine
  // does not have: 30 to 130 us across vCPUs on a VM), waking it if it sleeps. When
  // it is up it counts itself on its CPU in a process-wide tally of readied copy
  // threads, where `primer_cpu` (the submitting thread's CPU) counts one too, and
  // first moves to the allowed CPU with the fewest, where its own has more
  // (sched_setaffinity to that CPU, then back to the whole set): a scheduler that
  // woke it onto the submitting thread's CPU, or onto one another readied thread
  // polls on, would otherwise have two of them take turns on one CPU while another
  // idles. It leaves the tally when it next waits for work.
  void ready(int64_t poll_until_ns, int primer_cpu);
  // Moves the end of the poll ready() began (the thread re-reads it while it polls).
  void ready_until(int64_t poll_until_ns) { ready_until_.store(poll_until_ns, std::memory_order_release); }
  // Up since the last ready(): polling, or running the queue.
  bool readied() const {
    return up_.load(std::memory_order_acquire) || owner_.load(std::memory_order_acquire) == kCopier;
  }
  // 0, or the error number the first refused sched_setaffinity of a readied thread
  // returned (it then polls where the scheduler put it). Read after ready() returned
  // and readied() held, or after wait_idle().
  int move_error() const { return move_error_.load(std::memory_order_acquire); }
  // Where a readied copy thread up on `cpu` polls: `cpu`, unless an allowed CPU has
  // fewer readied threads (counts[c], one more on primer_cpu); the first of the
  // fewest then. counts has CPU_SETSIZE entries.
  static int fewest_readied(int cpu, const cpu_set_t& allowed, int primer_cpu, const uint32_t* counts);
  // Tests only: the number of readied copy threads counted on `cpu` in this process.
  static uint32_t readied_on(int cpu);
  // Tests only: wakes the copy thread thread and a producer asleep waiting for
  // completion, whatever word they sleep on, as a wake-up would; each looks again
  // and sleeps again if nothing changed. Lets a test that caught a lost wake-up
  // still end the copy thread.
  void kick();
  // Operations that can be queued behind a closed gate before the producer would
  // wait for a full ring (which the closed gate never drains): the gate's limit.
  static constexpr uint32_t capacity() { return kRing - 1; }
  // 0, or the error number pthread_setschedparam(SCHED_BATCH) returned: the thread
  // then runs at the policy it was created with.
  int batch_policy_error() const { return batch_error_; }

 private:
  // One queued operation, 32 bytes (two per cache line): the producer writes it,
  // the copy thread reads it once.
  enum class Kind : uint32_t { kCopy, kList, kEach, kStamp, kGate, kStop };
  struct Op {
    void* a;        // kCopy: dst; kStamp: the SimEventStamp; kGate: the word
    const void* b;  // kCopy: src; kEach: the caller's descriptors
    size_t n;       // kCopy: bytes; kList: descriptors (in lists_[slot]); kEach: descriptors
    Kind kind;
    uint32_t value;  // kGate: the value to reach
  };
  static constexpr uint32_t kRing = 4096;   // slots; a power of two
  static constexpr uint32_t kBatch = 64;    // ops the copy thread runs between looks at the shared words

  uint32_t reserve();                       // a free slot's index (waits while the ring is full)
  void publish();                           // the next slot written: hand it over
  void wake_copier();                       // after a seq_cst store the copy thread must see: wake it if it sleeps (once per sleep)
  void push(Kind kind, void* a, const void* b, size_t n, uint32_t value);
  void wait_done(uint32_t target);          // until done_ has reached target
  void run();
  bool execute(uint32_t index);             // runs op `index` (the queue's owner); false: the stop op
  uint32_t wait_for_work(uint32_t head, bool poll);  // the copy thread, idle: returns the new tail
  void pass_gate(const Op& op);
  bool report_done(uint32_t head);          // the queue's runner: done_ = head, wake a waiter it satisfies (true: it did)
  bool poll_readied(uint32_t head);         // the copy thread, idle: a ready() poll; true: work came
  void leave_tally();                       // the copy thread: out of the readied tally, if in it

  std::vector<Op> ring_;
  std::vector<std::vector<CopyDesc>> lists_;  // kList descriptors by slot (capacity kept)
  const Hook hook_;                           // read-only, like the two vectors' pointers
  void* const hook_context_;
  // Producer-only, copy thread-only and shared words on their own cache lines.
  alignas(64) uint32_t pushed_ = 0;             // producer: ops published
  uint32_t done_seen_ = 0;                      // producer: its last look at done_
  // The two sleepers (the copy thread waiting for work, the producer waiting for
  // completion) each sleep on a word of their own that every wake changes, read
  // before the sleeper raises its flag: a wake that lands between the flag and the
  // futex_wait, or that clears the flag of a later sleep than the one it saw the
  // need for, still changes the word, so futex_wait returns at once and the
  // sleeper looks again.
  // (Sleeping on tail_ lost wake-ups: a publish preempted between storing tail_
  // and clearing the flag could clear the flag of the copy thread's next sleep, whose
  // futex_wait then found tail_ unchanged and slept with no one left to wake it.)
  // Who runs the queue now (taken with a compare-and-swap from kFree), and the
  // next op to run: read and written only by the thread that has taken the queue.
  enum : uint32_t { kFree = 0, kCopier = 1, kWaiter = 2 };
  alignas(64) std::atomic<uint32_t> owner_{kFree};
  uint32_t head_ = 0;
  alignas(64) std::atomic<uint32_t> tail_{0};   // ops published
  std::atomic<uint32_t> copier_sleeping_{0};
  std::atomic<uint32_t> copier_wake_{0};        // futex word for the copy thread
  alignas(64) std::atomic<uint32_t> done_{0};   // ops finished, updated every kBatch ops and when idle
  alignas(64) std::atomic<uint32_t> waiter_sleeping_{0};
  std::atomic<uint32_t> waiter_target_{0};      // done_ value the sleeping producer waits for
  std::atomic<uint32_t> waiter_wake_{0};        // futex word for the producer
  // ready(): the poll's end, the submitting thread's CPU, and the copy thread's
  // answer (up_), each written by one side; tally_cpu_ is the copy thread's own.
  alignas(64) std::atomic<int64_t> ready_until_{0};
  std::atomic<int> primer_cpu_{-1};
  std::atomic<uint32_t> up_{0};
  std::atomic<int> move_error_{0};
  int tally_cpu_ = -1;
  std::thread thread_;
  int batch_error_ = 0;
};

}  // namespace ds
