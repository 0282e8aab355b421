// The sim copy copy thread on its own: FIFO order across ring wrap-around, copy lists,
// runs of copies handed over as one op read in place (copy_each), the producer
// running the queue itself when it waits for everything with the copy thread asleep,
// event stamps in stream order, the gate, backpressure, draining on destruction,
// the sleep/wake hand-offs under interleavings forced through its hooks (a
// publish's, the waiter's, a ready()'s), and readying for a pass (it polls, is
// counted, moves off the submitting thread's CPU).
// No test asserts a duration: order and content only (deadlines are generous
// bounds on waits for conditions, never measurements).
#include <dirent.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "backends/sim/sim_copy_thread.h"
#include "core/clock.h"
#include "core/futex.h"

namespace ds {
namespace {

// More ops than the copy thread's ring has slots (4096), so every test that uses it wraps.
constexpr size_t kMany = 3 * 4096 + 123;

std::vector<uint8_t> bytes_of(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed + i * 7);
  return v;
}

void release(std::atomic<uint32_t>& word, uint32_t value) {
  word.store(value, std::memory_order_release);
  futex_wake_all(&word);
}

// The state letter of a thread (R running, S sleeping, ...), from /proc.
char thread_state(long tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = s.rfind(')');
  return paren == std::string::npos || paren + 2 >= s.size() ? '?' : s[paren + 2];
}

std::vector<long> other_threads() {
  std::vector<long> tids;
  const long me = syscall(SYS_gettid);
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) {
      const long tid = std::atol(e->d_name);
      if (tid > 0 && tid != me) tids.push_back(tid);
    }
    closedir(d);
  }
  return tids;
}

// Steps of an interleaving forced on two threads, reached in order; each thread
// waits for the other's step with a generous deadline, so a test whose
// interleaving never happens fails instead of hanging.
class Steps {
 public:
  void reach(int step) {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (step > step_) step_ = step;
    }
    cv_.notify_all();
  }
  bool wait_for(int step, std::chrono::seconds limit = std::chrono::seconds(30)) {
    std::unique_lock<std::mutex> lock(m_);
    return cv_.wait_for(lock, limit, [&] { return step_ >= step; });
  }
  int now() {
    std::lock_guard<std::mutex> lock(m_);
    return step_;
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  int step_ = 0;
};

// Until ready() or the deadline (a bound on a wait, not a measurement).
template <typename Ready>
bool eventually(Ready ready, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!ready()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

bool stamped(const SimEventStamp& e) { return e.ns.load(std::memory_order_acquire) >= 0; }

// publish() stores tail_ and is preempted before it looks at the copy thread's sleep
// flag; meanwhile the copy thread runs the op, goes idle and raises the flag for a new
// sleep, finding tail_ unchanged; publish() resumes, clears that new flag and
// wakes a thread that is not yet asleep; the copy thread then sleeps. Sleeping on
// tail_ (unchanged), it never woke again: the next publish, once it slept, found
// the flag clear.
struct PublishRace {
  Steps steps;
  std::atomic<uint32_t>* gate = nullptr;
  std::atomic<bool> armed{false};
  std::atomic<long> copier_tid{0};

  static void hook(void* context, SimCopyThread::HookPoint point) {
    auto& r = *static_cast<PublishRace*>(context);
    if (point == SimCopyThread::HookPoint::kPublished) {
      if (!r.armed.exchange(false)) return;
      r.steps.reach(1);     // 1: tail_ stored; the producer stops before it reads the flag
      release(*r.gate, 1);  // the copy thread goes on: through the gate and the new op, then idle
      r.steps.wait_for(2);  // until it has raised the flag of its next sleep
    } else if (point == SimCopyThread::HookPoint::kCopierSleeping) {
      if (r.steps.now() != 1) return;
      r.copier_tid = syscall(SYS_gettid);
      r.steps.reach(2);     // 2: flag raised, tail_ as it was: the copy thread is about to sleep
      r.steps.wait_for(3);  // until publish() has cleared the flag and woken no one
      r.steps.reach(4);     // 4: the copy thread goes to futex_wait; nothing else blocks it now
    }
  }
};

TEST(SimCopyThread, PublishThatClearsTheFlagOfTheCopyThreadsNextSleepStillWakesIt) {
  std::atomic<uint32_t> gate{0};
  PublishRace race;
  race.gate = &gate;
  SimEventStamp at_gate, first, second;
  SimCopyThread copier(&PublishRace::hook, &race);
  // A closed gate keeps the copy thread awake and busy while the next op is published.
  copier.stamp(&at_gate);
  copier.wait_gate(&gate, 1);
  ASSERT_TRUE(eventually([&] { return stamped(at_gate); })) << "the copier never reached the gate";
  race.armed = true;
  copier.stamp(&first);  // stops at kPublished: steps 1 and 2 happen inside
  race.steps.reach(3);   // 3: publish() has returned
  EXPECT_TRUE(race.steps.wait_for(4)) << "the interleaving was not forced (a hook not reached)";
  EXPECT_TRUE(stamped(first));
  // The next op only once the copy thread sleeps (past step 4 nothing but its futex_wait
  // puts it to sleep), as in a run where the next submission comes a little later.
  const long copier_tid = race.copier_tid.load();
  EXPECT_TRUE(eventually([&] { return copier_tid != 0 && thread_state(copier_tid) == 'S'; }))
      << "the copier never slept";
  copier.stamp(&second);
  const bool woke = eventually([&] { return stamped(second); });
  EXPECT_TRUE(woke) << "lost wake-up: the copier sleeps with an op queued after a publish "
                       "cleared the flag of its next sleep";
  if (!woke) copier.kick();  // let it see the queue, so that the destructor can end it
  copier.wait_idle();
  EXPECT_TRUE(stamped(second));
}

// The producer's side: the copy thread reports the producer's target done and wakes it
// after the producer has raised its flag and seen done_ short of the target, but
// before it is asleep in futex_wait. The wake must not be lost.
struct WaiterRace {
  Steps steps;
  std::atomic<uint32_t>* gate = nullptr;
  std::atomic<bool> armed{false};

  static void hook(void* context, SimCopyThread::HookPoint point) {
    auto& r = *static_cast<WaiterRace*>(context);
    if (point == SimCopyThread::HookPoint::kWaiterSleeping) {
      if (!r.armed.exchange(false)) return;
      r.steps.reach(1);     // 1: the producer is about to sleep, its target not done
      release(*r.gate, 1);  // the copy thread finishes everything
      r.steps.wait_for(2);  // and has woken the producer, who is not yet asleep
    } else if (point == SimCopyThread::HookPoint::kWokeWaiter) {
      if (r.steps.now() == 1) r.steps.reach(2);
    }
  }
};

TEST(SimCopyThread, WakeBetweenTheWaitersLastLookAndItsSleepIsNotLost) {
  std::atomic<uint32_t> gate{0};
  WaiterRace race;
  race.gate = &gate;
  SimEventStamp at_gate, after_gate;
  SimCopyThread copier(&WaiterRace::hook, &race);
  copier.stamp(&at_gate);
  copier.wait_gate(&gate, 1);
  copier.stamp(&after_gate);
  ASSERT_TRUE(eventually([&] { return stamped(at_gate); })) << "the copier never reached the gate";
  race.armed = true;
  std::atomic<bool> returned{false};
  std::thread waiter([&] {  // the producer's wait, on a thread this test can wait for
    copier.wait_idle();
    returned = true;
  });
  const bool woke = eventually([&] { return returned.load(); });
  EXPECT_TRUE(woke) << "lost wake-up: wait_idle() sleeps with everything done";
  if (!woke) copier.kick();
  waiter.join();
  EXPECT_EQ(2, race.steps.now()) << "the interleaving was not forced (a hook not reached)";
  EXPECT_TRUE(stamped(after_gate));
}

// The producer runs the queue itself: it waits for everything it queued while the
// copy thread, woken by the submissions, has not yet taken the queue (held here just
// before its sleep). Forced: the copy thread, let go while the producer holds the
// queue, must go back to sleep without running anything (the first op is not yet
// stamped then); the producer runs every op; later work queued without a wait is run
// by the copy thread, from where the producer stopped (an op it ran is not run again).
struct WaiterRuns {
  Steps steps;
  std::atomic<bool> hold_copier{true};
  std::atomic<long> runner_tid{0};
  std::atomic<int> copier_sleeps{0};
  SimEventStamp* first = nullptr;
  std::atomic<bool> first_stamped_when_copier_slept{false};

  static void hook(void* context, SimCopyThread::HookPoint point) {
    auto& r = *static_cast<WaiterRuns*>(context);
    if (point == SimCopyThread::HookPoint::kCopierSleeping) {
      const int n = ++r.copier_sleeps;
      if (n == 1 && r.hold_copier) {
        r.steps.reach(1);     // 1: the copy thread is about to sleep, with nothing queued
        r.steps.wait_for(2);  // held until the producer has taken the queue
      } else if (r.steps.now() == 2) {
        r.first_stamped_when_copier_slept = stamped(*r.first);
        r.steps.reach(3);     // 3: it woke, found the queue taken, and goes back to sleep
      }
    } else if (point == SimCopyThread::HookPoint::kWaiterRuns) {
      r.runner_tid = syscall(SYS_gettid);
      r.steps.reach(2);     // 2: the producer holds the queue; the copy thread goes on
      r.steps.wait_for(3);  // until it has gone back to sleep
    }
  }
};

TEST(SimCopyThread, AProducerWaitingForEverythingRunsTheQueueTheCopyThreadHasNotTaken) {
  const std::vector<uint8_t> x = bytes_of(4096, 31), y = bytes_of(4096, 47);
  std::vector<uint8_t> d(x.size(), 0), e(y.size(), 0);
  SimEventStamp first, last, later;
  WaiterRuns race;
  race.first = &first;
  SimCopyThread copier(&WaiterRuns::hook, &race);
  ASSERT_TRUE(race.steps.wait_for(1)) << "the copy thread never went to sleep";
  copier.stamp(&first);
  copier.copy({d.data(), x.data(), x.size()});
  copier.stamp(&last);
  copier.wait_idle();
  EXPECT_EQ(syscall(SYS_gettid), race.runner_tid.load()) << "the producer did not run the queue";
  EXPECT_EQ(3, race.steps.now()) << "the interleaving was not forced (a hook not reached)";
  EXPECT_FALSE(race.first_stamped_when_copier_slept.load()) << "the copy thread ran ops the producer held";
  EXPECT_TRUE(stamped(first) && stamped(last));
  EXPECT_EQ(d, x);
  // Later work, not waited for: the copy thread runs it, and only it.
  std::fill(d.begin(), d.end(), 0);
  copier.copy({e.data(), y.data(), y.size()});
  copier.stamp(&later);
  ASSERT_TRUE(eventually([&] { return stamped(later); })) << "the copy thread never ran work queued after";
  EXPECT_EQ(e, y);
  EXPECT_TRUE(std::all_of(d.begin(), d.end(), [](uint8_t b) { return b == 0; }))
      << "an op the producer ran was run again by the copy thread";
  copier.wait_idle();
}

// Many short rounds, the copy thread asleep or awake when each is queued and the
// producer waiting at once or later: every round's bytes, in order, whoever runs it;
// both ran some (the producer ran at least part of the rounds it counts).
struct CountRuns {
  std::atomic<int> producer_runs{0};
  static void hook(void* context, SimCopyThread::HookPoint point) {
    if (point == SimCopyThread::HookPoint::kWaiterRuns) ++static_cast<CountRuns*>(context)->producer_runs;
  }
};

TEST(SimCopyThread, EveryRoundIsRunOnceInOrderWhoeverRunsIt) {
  const std::vector<uint8_t> a = bytes_of(16384, 3), b = bytes_of(16384, 4);
  std::vector<uint8_t> dst(a.size(), 0), tail(a.size(), 0);
  CountRuns runs;
  SimCopyThread copier(&CountRuns::hook, &runs);
  constexpr int kRounds = 3000;
  for (int it = 0; it < kRounds; ++it) {
    const auto& s1 = (it & 1) ? a : b;
    const auto& s2 = (it & 1) ? b : a;
    const CopyDesc run[2] = {{dst.data(), s2.data(), s2.size()}, {dst.data(), s1.data(), s1.size()}};
    SimEventStamp done;
    copier.copy({tail.data(), s2.data(), s2.size()});
    copier.copy_each(run, 2);
    copier.stamp(&done);
    if (it % 3 == 1) std::this_thread::sleep_for(std::chrono::microseconds(50));  // the copy thread gets there first
    copier.wait_idle();
    ASSERT_TRUE(stamped(done)) << "round " << it;
    ASSERT_EQ(dst, s1) << "round " << it << ": out of order";
    ASSERT_EQ(tail, s2) << "round " << it;
    if (it % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it sleep
  }
  EXPECT_GT(runs.producer_runs.load(), 0) << "the producer never ran the queue";
  EXPECT_LT(runs.producer_runs.load(), kRounds) << "the copy thread never ran a whole round";
}

TEST(SimCopyThread, CopiesEveryBlockAcrossRingWrapAround) {
  constexpr size_t kBlock = 64;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock, 3);
  std::vector<uint8_t> dst(src.size(), 0);
  SimCopyThread copier;
  for (size_t i = 0; i < kMany; ++i) copier.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  copier.wait_idle();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimCopyThread, RunsOpsInSubmissionOrder) {
  // Every copy writes the same destination: only FIFO order leaves the last one there,
  // lap after lap of the ring.
  std::vector<std::vector<uint8_t>> srcs;
  for (int k = 0; k < 5; ++k) srcs.push_back(bytes_of(256, static_cast<uint8_t>(k * 40 + 1)));
  std::vector<uint8_t> dst(256, 0);
  SimCopyThread copier;
  for (size_t round = 0; round < 4; ++round) {
    for (size_t i = 0; i < kMany + round; ++i) {
      const auto& s = srcs[i % srcs.size()];
      copier.copy({dst.data(), s.data(), s.size()});
    }
    copier.wait_idle();
    EXPECT_EQ(dst, srcs[(kMany + round - 1) % srcs.size()]) << "round " << round;
  }
}

TEST(SimCopyThread, CopyListCopiesEveryDescriptorAndKeepsItsOwnCopy) {
  constexpr size_t kBlock = 128;
  constexpr size_t kBlocks = 37;
  const std::vector<uint8_t> src = bytes_of(kBlock * kBlocks, 9);
  SimCopyThread copier;
  for (size_t lap = 0; lap < 3 * 4096 / 16; lap += 1) {
    // Lists of changing lengths through the same slots; the caller's array is
    // overwritten right after each submission.
    std::vector<uint8_t> dst(src.size(), 0);
    const size_t n = 1 + lap % kBlocks;
    std::vector<CopyDesc> descs;
    for (size_t i = 0; i < n; ++i) descs.push_back({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
    copier.copy_list(descs.data(), descs.size());
    for (auto& d : descs) d = CopyDesc{nullptr, nullptr, 0};
    copier.copy_list(nullptr, 0);  // an empty list is a no-op
    copier.wait_idle();
    ASSERT_EQ(0, std::memcmp(dst.data(), src.data(), n * kBlock)) << "lap " << lap << ", " << n << " blocks";
    ASSERT_TRUE(std::all_of(dst.begin() + static_cast<long>(n * kBlock), dst.end(), [](uint8_t b) { return b == 0; }));
  }
}

TEST(SimCopyThread, StampsEventsInStreamOrder) {
  constexpr size_t kBlock = 4096;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock / 8, 5);
  std::vector<uint8_t> dst(src.size(), 0);
  std::vector<SimEventStamp> events(kMany / 8 + 1);
  SimCopyThread copier;
  const int64_t before = now_ns();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    copier.stamp(&events[i]);
    copier.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  }
  copier.stamp(&events.back());
  copier.wait_idle();
  const int64_t after = now_ns();
  int64_t last = before;
  for (size_t i = 0; i < events.size(); ++i) {
    const int64_t t = events[i].ns.load();
    ASSERT_GE(t, last) << "event " << i;
    last = t;
  }
  EXPECT_LE(last, after);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), (events.size() - 1) * kBlock));
}

TEST(SimCopyThread, GateHoldsLaterWorkUntilReleased) {
  const std::vector<uint8_t> src = bytes_of(4096, 11);
  std::vector<uint8_t> before_gate(4096, 0), after_gate(4096, 0);
  std::atomic<uint32_t> word{0};
  SimEventStamp stamp_before, stamp_after;
  SimCopyThread copier;
  copier.copy({before_gate.data(), src.data(), src.size()});
  copier.stamp(&stamp_before);
  copier.wait_gate(&word, 1);
  copier.copy({after_gate.data(), src.data(), src.size()});
  copier.stamp(&stamp_after);

  // The work before the gate runs; the copy thread then waits at the gate, asleep.
  while (stamp_before.ns.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(before_gate, src);
  bool asleep = false;
  for (int i = 0; i < 10000 && !asleep; ++i) {
    for (long tid : other_threads()) asleep = asleep || thread_state(tid) == 'S';
    if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(asleep) << "the copier thread never slept at the closed gate";
  EXPECT_EQ(-1, stamp_after.ns.load());
  EXPECT_TRUE(std::all_of(after_gate.begin(), after_gate.end(), [](uint8_t b) { return b == 0; }))
      << "a copy queued after the gate ran before the gate opened";

  const int64_t opened = now_ns();
  release(word, 1);
  copier.wait_idle();
  EXPECT_EQ(after_gate, src);
  EXPECT_GE(stamp_after.ns.load(), opened);
}

TEST(SimCopyThread, GateComparesAcrossWrapAround) {
  std::vector<uint8_t> src = bytes_of(64, 1), dst(64, 0);
  // 0xfffffff0 is "before" 5 (serial-number order): closed until the word passes 5.
  std::atomic<uint32_t> word{0xfffffff0u};
  SimEventStamp reached;
  SimCopyThread copier;
  copier.wait_gate(&word, 5);
  copier.copy({dst.data(), src.data(), src.size()});
  copier.stamp(&reached);
  std::thread opener([&] {
    release(word, 3);  // still before 5: stays closed
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(-1, reached.ns.load());
    release(word, 7);  // past 5: open
  });
  copier.wait_idle();
  opener.join();
  EXPECT_EQ(dst, src);

  // A gate whose value the word has already reached does not wait.
  std::vector<uint8_t> dst2(64, 0);
  copier.wait_gate(&word, 7);
  copier.wait_gate(&word, 0xfffffff0u);
  copier.copy({dst2.data(), src.data(), src.size()});
  copier.wait_idle();
  EXPECT_EQ(dst2, src);
}

TEST(SimCopyThread, FullRingWaitsForTheCopyThreadToCatchUp) {
  // A closed gate holds the copy thread while this thread queues more than the ring
  // holds: submission waits for room (another thread opens the gate).
  constexpr size_t kBlock = 32;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock, 21);
  std::vector<uint8_t> dst(src.size(), 0);
  std::atomic<uint32_t> word{0};
  std::atomic<bool> queued_all{false};
  SimCopyThread copier;
  copier.wait_gate(&word, 1);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(queued_all.load()) << "the ring took more ops than it holds";
    release(word, 1);
  });
  for (size_t i = 0; i < kMany; ++i) copier.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  queued_all = true;
  copier.wait_idle();
  opener.join();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

// copy_each: runs of many lengths, and many runs (the ring wraps), between single
// copies and stamps: every descriptor copied where it says, in submission order (a
// single copy queued before each run writes other bytes into the run's last block,
// which the run must overwrite), and a stamp after a run reached once it is done.
TEST(SimCopyThread, CopyEachCopiesEveryDescriptorInOrder) {
  constexpr size_t kBlock = 48;
  std::vector<size_t> runs = {1, 2, 63, 64, 65, 4095, 4096, 4097, 5000};
  const size_t long_runs = runs.size();
  for (size_t i = 0; i < kMany / 2; ++i) runs.push_back(1 + i % 3);
  size_t total = 0;
  for (size_t n : runs) total += n + 1;
  const std::vector<uint8_t> src = bytes_of(total * kBlock, 5), junk = bytes_of(kBlock, 77);
  std::vector<uint8_t> dst(src.size(), 0);
  std::vector<std::vector<CopyDesc>> held;  // valid until the copy thread has run them
  held.reserve(runs.size());
  std::vector<std::unique_ptr<SimEventStamp>> stamps;
  SimCopyThread copier;
  size_t at = 0;
  for (size_t n : runs) {
    held.emplace_back();
    std::vector<CopyDesc>& descs = held.back();
    for (size_t i = 0; i < n; ++i) descs.push_back({dst.data() + (at + i) * kBlock, src.data() + (at + i) * kBlock, kBlock});
    copier.copy({dst.data() + (at + n - 1) * kBlock, junk.data(), kBlock});
    copier.copy_each(descs.data(), descs.size());
    stamps.push_back(std::make_unique<SimEventStamp>());
    copier.stamp(stamps.back().get());
    copier.copy({dst.data() + (at + n) * kBlock, src.data() + (at + n) * kBlock, kBlock});
    at += n + 1;
    if (held.size() <= long_runs) {  // the long runs one by one
      copier.wait_idle();
      ASSERT_EQ(0, std::memcmp(dst.data(), src.data(), at * kBlock)) << "after the run of " << n;
    }
  }
  copier.copy_each(nullptr, 0);  // nothing queued, nothing waited for
  copier.wait_idle();
  for (const auto& st : stamps) ASSERT_GE(st->ns.load(), 0);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

// A run is one op, whatever its length: more descriptors than the ring holds are
// queued behind a closed gate without waiting for room, and none is copied before
// the gate opens; the descriptors are read when the copy thread reaches them.
TEST(SimCopyThread, CopyEachIsOneOpReadWhenReached) {
  constexpr size_t kBlock = 32;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock, 23), other = bytes_of(kMany * kBlock, 91);
  std::vector<uint8_t> dst(src.size(), 0);
  std::vector<CopyDesc> descs;
  for (size_t i = 0; i < kMany; ++i) descs.push_back({dst.data() + i * kBlock, other.data() + i * kBlock, kBlock});
  std::atomic<uint32_t> word{0};
  SimCopyThread copier;
  copier.wait_gate(&word, 1);
  copier.copy_each(descs.data(), descs.size());  // would wait for room behind the gate, one slot a copy
  EXPECT_TRUE(std::all_of(dst.begin(), dst.end(), [](uint8_t b) { return b == 0; })) << "copied behind a closed gate";
  for (size_t i = 0; i < kMany; ++i) descs[i].src = src.data() + i * kBlock;  // allowed: not reached yet
  release(word, 1);
  copier.wait_idle();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimCopyThread, DestructionRunsWhatWasQueued) {
  constexpr size_t kBlock = 512;
  constexpr size_t kBlocks = kMany / 4;
  const std::vector<uint8_t> src = bytes_of(kBlocks * kBlock, 13);
  std::vector<uint8_t> dst(src.size(), 0);
  SimEventStamp last;
  {
    SimCopyThread copier;
    for (size_t i = 0; i < kBlocks; ++i) copier.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
    copier.stamp(&last);
  }
  EXPECT_GE(last.ns.load(), 0);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimCopyThread, WaitIdleSeesEveryRepeatedSubmission) {
  // Many short iterations: each wait_idle must return only after its own copies,
  // whether the copy thread was spinning or asleep when they were queued.
  const std::vector<uint8_t> a = bytes_of(8192, 1), b = bytes_of(8192, 2);
  std::vector<uint8_t> dst(8192, 0);
  SimCopyThread copier;
  for (int it = 0; it < 2000; ++it) {
    const auto& s = (it & 1) ? b : a;
    copier.copy({dst.data(), s.data(), s.size()});
    copier.wait_idle();
    ASSERT_EQ(dst, s) << "iteration " << it;
    if (it % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it sleep
  }
}

// The copy thread runs as SCHED_BATCH, so a submission that wakes it onto the
// submitter's CPU does not preempt the submitter (which would hand the CPU back and
// forth one op at a time while another CPU idles); every other thread keeps its own.
TEST(SimCopyThread, RunsAsABatchThreadAndLeavesItsProducerAlone) {
  auto batch_threads = [] {
    std::vector<long> tids;
    for (long tid : other_threads())
      if (sched_getscheduler(static_cast<pid_t>(tid)) == SCHED_BATCH) tids.push_back(tid);
    return tids;
  };
  const size_t before = batch_threads().size();
  const int mine = sched_getscheduler(0);
  {
    SimCopyThread first, second;
    EXPECT_EQ(first.batch_policy_error(), 0) << std::strerror(first.batch_policy_error());
    EXPECT_EQ(second.batch_policy_error(), 0);
    EXPECT_EQ(batch_threads().size(), before + 2) << "each copy thread is SCHED_BATCH";
    EXPECT_EQ(sched_getscheduler(0), mine) << "the producer's policy is its own";
    // And it still copies.
    const std::vector<uint8_t> src = bytes_of(4096, 3);
    std::vector<uint8_t> dst(4096, 0);
    first.copy({dst.data(), src.data(), src.size()});
    first.wait_idle();
    EXPECT_EQ(dst, src);
  }
  EXPECT_EQ(batch_threads().size(), before);
}

TEST(SimCopyThread, FewestReadiedIsTheLeastCountedAllowedCpuWithTheSubmittersCountingOne) {
  std::vector<uint32_t> counts(CPU_SETSIZE, 0);
  cpu_set_t two;
  CPU_ZERO(&two);
  CPU_SET(0, &two);
  CPU_SET(1, &two);
  // Up on the submitting thread's CPU with the other free: moves; on the other: stays.
  EXPECT_EQ(SimCopyThread::fewest_readied(0, two, 0, counts.data()), 1);
  EXPECT_EQ(SimCopyThread::fewest_readied(1, two, 0, counts.data()), 1);
  // As many on each (the submitter on 0, another readied thread on 1): stays.
  counts[1] = 1;
  EXPECT_EQ(SimCopyThread::fewest_readied(0, two, 0, counts.data()), 0);
  EXPECT_EQ(SimCopyThread::fewest_readied(1, two, 0, counts.data()), 1);
  // Two readied on 1, none on 0 where the submitter is: the one up on 1 moves to 0.
  counts[1] = 2;
  EXPECT_EQ(SimCopyThread::fewest_readied(1, two, 0, counts.data()), 0);
  // Only allowed CPUs: 3 is free but not in the set; 2 is, and the first of the fewest.
  cpu_set_t four;
  CPU_ZERO(&four);
  for (int c : {0, 1, 2}) CPU_SET(c, &four);
  counts[0] = 1;
  EXPECT_EQ(SimCopyThread::fewest_readied(1, four, 0, counts.data()), 2);
  // A CPU not in the set (the thread cannot tell where it is allowed): where it is.
  EXPECT_EQ(SimCopyThread::fewest_readied(5, four, 0, counts.data()), 5);
}

// The copy thread's TID: the thread that appeared while `make` ran.
template <typename Make>
long new_thread(Make make) {
  const std::vector<long> before = other_threads();
  make();
  for (long tid : other_threads())
    if (std::find(before.begin(), before.end(), tid) == before.end()) return tid;
  return 0;
}

uint32_t readied_total() {
  uint32_t n = 0;
  for (int c = 0; c < CPU_SETSIZE; ++c) n += SimCopyThread::readied_on(c);
  return n;
}

struct CountSleeps {
  std::atomic<int> sleeps{0};
  static void hook(void* context, SimCopyThread::HookPoint point) {
    if (point == SimCopyThread::HookPoint::kCopierSleeping) static_cast<CountSleeps*>(context)->sleeps++;
  }
};

// ready(): the sleeping copy thread wakes with nothing queued, polls (it runs what
// is then queued without sleeping in between) and is counted in the tally until
// the deadline has passed and it sleeps again.
TEST(SimCopyThread, AReadiedThreadPollsUntilItsDeadlineAndThenSleepsOutOfTheTally) {
  CountSleeps count;
  std::unique_ptr<SimCopyThread> copier;
  const long tid = new_thread([&] { copier = std::make_unique<SimCopyThread>(&CountSleeps::hook, &count); });
  ASSERT_NE(tid, 0);
  ASSERT_TRUE(eventually([&] { return count.sleeps.load() > 0 && thread_state(tid) == 'S'; }));
  const uint32_t tally = readied_total();
  const int slept = count.sleeps.load();
  EXPECT_FALSE(copier->readied());

  copier->ready(now_ns() + 60 * 1000000000LL, -1);
  ASSERT_TRUE(eventually([&] { return copier->readied(); })) << "ready() did not wake the copy thread";
  EXPECT_EQ(readied_total(), tally + 1);
  SimEventStamp first, second;
  copier->stamp(&first);
  ASSERT_TRUE(eventually([&] { return stamped(first); }));
  copier->stamp(&second);  // queued after it went idle again: still polling
  ASSERT_TRUE(eventually([&] { return stamped(second); }));
  EXPECT_EQ(count.sleeps.load(), slept) << "a readied copy thread slept before its deadline";
  EXPECT_EQ(copier->move_error(), 0) << std::strerror(copier->move_error());

  copier->ready_until(now_ns());
  ASSERT_TRUE(eventually([&] { return count.sleeps.load() > slept; })) << "it polls past its deadline";
  EXPECT_EQ(readied_total(), tally) << "asleep, it is no longer counted";

  // Stopped while it polls: out of the tally too.
  copier->ready(now_ns() + 60 * 1000000000LL, -1);
  ASSERT_TRUE(eventually([&] { return readied_total() == tally + 1; }));
  copier.reset();
  EXPECT_EQ(readied_total(), tally) << "a copy thread stopped while readied is still counted";
}

// ready() lands after the copy thread raised its sleep flag and looked at tail_ and
// the deadline (neither changed yet) but before it is asleep in futex_wait: it must
// still come up, as publish() must (PublishThatClears... above).
struct ReadyRace {
  Steps steps;
  std::atomic<bool> armed{false};
  static void hook(void* context, SimCopyThread::HookPoint point) {
    auto& r = *static_cast<ReadyRace*>(context);
    if (point != SimCopyThread::HookPoint::kCopierSleeping || !r.armed.exchange(false)) return;
    r.steps.reach(1);     // 1: about to futex_wait, nothing new seen
    r.steps.wait_for(2);  // until ready() has returned
  }
};

TEST(SimCopyThread, ReadyBetweenTheCopyThreadsLastLookAndItsSleepStillBringsItUp) {
  ReadyRace race;
  race.armed = true;  // the copy thread's first sleep, with nothing ever queued
  SimCopyThread copier(&ReadyRace::hook, &race);
  ASSERT_TRUE(race.steps.wait_for(1)) << "the copy thread never went to sleep";
  copier.ready(now_ns() + 60 * 1000000000LL, -1);
  race.steps.reach(2);
  const bool up = eventually([&] { return copier.readied(); });
  EXPECT_TRUE(up) << "lost wake-up: ready() cleared the flag of a sleep about to begin and it slept on";
  copier.ready_until(now_ns());
  if (!up) copier.kick();
}

// The CPU a thread last ran on (field 39 of its stat).
int last_cpu(long tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const size_t paren = s.rfind(')');
  if (paren == std::string::npos) return -1;
  size_t at = paren + 2;  // field 3
  for (int field = 3; field < 39; ++field) {
    at = s.find(' ', at);
    if (at == std::string::npos) return -1;
    ++at;
  }
  return std::atoi(s.c_str() + at);
}

// A copy thread readied by a thread on CPU a, last run on a, polls on the other
// allowed CPU b: the submitting thread's CPU counts one, b none.
TEST(SimCopyThread, AReadiedThreadUpOnTheSubmittersCpuMovesToAFreeOne) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof saved, &saved), 0);
  int a = -1, b = -1;
  for (int c = 0; c < CPU_SETSIZE && b < 0; ++c)
    if (CPU_ISSET(c, &saved)) (a < 0 ? a : b) = c;
  if (b < 0) GTEST_SKIP() << "one CPU allowed here";
  cpu_set_t both, only_a;
  CPU_ZERO(&both);
  CPU_SET(a, &both);
  CPU_SET(b, &both);
  CPU_ZERO(&only_a);
  CPU_SET(a, &only_a);
  if (sched_setaffinity(0, sizeof both, &both) != 0) GTEST_SKIP() << "sched_setaffinity refused here";
  struct Restore {
    cpu_set_t set;
    ~Restore() { (void)sched_setaffinity(0, sizeof set, &set); }
  } restore{saved};
  CountSleeps count;
  std::unique_ptr<SimCopyThread> copier;
  const long tid = new_thread([&] { copier = std::make_unique<SimCopyThread>(&CountSleeps::hook, &count); });
  ASSERT_NE(tid, 0);
  ASSERT_TRUE(eventually([&] { return count.sleeps.load() > 0 && thread_state(tid) == 'S'; }));
  // Run once on a only (woken with its mask a, it looks and sleeps again there),
  // then allowed both: asleep on a, where a wake-up puts it first.
  ASSERT_EQ(sched_setaffinity(static_cast<pid_t>(tid), sizeof only_a, &only_a), 0);
  const int slept = count.sleeps.load();
  copier->kick();
  ASSERT_TRUE(eventually([&] { return count.sleeps.load() > slept && thread_state(tid) == 'S'; }));
  ASSERT_EQ(last_cpu(tid), a);
  ASSERT_EQ(sched_setaffinity(static_cast<pid_t>(tid), sizeof both, &both), 0);
  ASSERT_EQ(sched_setaffinity(0, sizeof only_a, &only_a), 0);
  const uint32_t on_a = SimCopyThread::readied_on(a), on_b = SimCopyThread::readied_on(b);

  copier->ready(now_ns() + 60 * 1000000000LL, a);
  const bool up = eventually([&] { return copier->readied(); });
  const bool moved = up && eventually([&] { return last_cpu(tid) == b; }, std::chrono::seconds(5));
  const int where = last_cpu(tid);
  const uint32_t now_a = SimCopyThread::readied_on(a), now_b = SimCopyThread::readied_on(b);
  copier->ready_until(now_ns());
  copier.reset();
  ASSERT_TRUE(up);
  EXPECT_TRUE(moved) << "polls on CPU " << where << ", the submitter is on " << a << ", " << b << " is free";
  EXPECT_EQ(now_a, on_a);
  EXPECT_EQ(now_b, on_b + 1);
}

}  // namespace
}  // namespace ds
