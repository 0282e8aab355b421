// The barrier between workers: lockstep over many generations, abort, timeout, init;
// its poll before it sleeps (spin_until, core/futex.h).
#include <atomic>
#include <chrono>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/error.h"
#include "core/futex.h"
#include "runner/barrier.h"

namespace {

using ds::Barrier;
using ds::BarrierState;

constexpr int64_t kLongNs = 10LL * 1000000000LL;  // never reached by a passing test
constexpr int64_t kShortNs = 20LL * 1000000LL;

// Waits (a bounded while) until `n` parties have arrived at the barrier.
bool arrived(const BarrierState& s, uint32_t n) {
  const int64_t deadline = ds::now_ns() + kLongNs;
  while (s.arrived.load() < n) {
    if (ds::now_ns() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  return true;
}

TEST(Barrier, ThreadsPassManyGenerationsInLockstep) {
  constexpr int kThreads = 4;
  constexpr int kGenerations = 400;
  BarrierState state;
  Barrier barrier(&state);
  barrier.init(kThreads);
  // After passing barrier g, a thread says so (gen = g + 1). Any other thread has
  // arrived at barrier g (gen >= g) and cannot pass barrier g + 1 before this one
  // arrives there (gen <= g + 1).
  std::vector<std::atomic<int>> gen(kThreads);
  std::atomic<int> out_of_step{0};
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        for (int g = 0; g < kGenerations; ++g) {
          barrier.wait(kLongNs);
          gen[t].store(g + 1);
          for (int o = 0; o < kThreads; ++o) {
            const int theirs = gen[o].load();
            if (theirs < g || theirs > g + 1) ++out_of_step;
          }
        }
      } catch (const std::exception&) {
        ++errors;
        barrier.abort();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(out_of_step.load(), 0) << "a thread got more than one generation ahead";
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(gen[t].load(), kGenerations);
}

TEST(Barrier, AbortReleasesWaitersWithStopped) {
  BarrierState state;
  Barrier barrier(&state);
  barrier.init(3);
  std::atomic<int> stopped{0}, other{0};
  std::vector<std::thread> waiters;
  for (int t = 0; t < 2; ++t) {
    waiters.emplace_back([&] {
      try {
        barrier.wait(kLongNs);
      } catch (const ds::Stopped&) {
        ++stopped;
      } catch (...) {
        ++other;
      }
    });
  }
  ASSERT_TRUE(arrived(state, 2));
  const int64_t t0 = ds::now_ns();
  barrier.abort();
  for (auto& t : waiters) t.join();
  EXPECT_LT(ds::now_ns() - t0, kLongNs / 2) << "the waiters were released at once, not by their timeout";
  EXPECT_EQ(stopped.load(), 2);
  EXPECT_EQ(other.load(), 0);
  EXPECT_TRUE(barrier.is_aborted());
  EXPECT_THROW(barrier.wait(kLongNs), ds::Stopped) << "a later wait fails at once";
}

// Another worker aborts just after wait() has looked for an abort on entry, before
// it reads the generation it sleeps on (forced: the hook aborts right there). The
// abort has moved the generation already and nothing moves it again: the wait must
// still stop (Stopped, at once), not sleep until its timeout.
TEST(Barrier, AnAbortRightAfterTheEntryCheckStillStopsTheWait) {
  BarrierState state;
  Barrier other_worker(&state);
  int hooked = 0;
  struct Context {
    Barrier* aborter;
    int* hooked;
  } context{&other_worker, &hooked};
  Barrier barrier(&state, [](void* c) {
    auto& ctx = *static_cast<Context*>(c);
    if ((*ctx.hooked)++ == 0) ctx.aborter->abort();
  }, &context);
  barrier.init(2);  // this thread is not the last to arrive: it would sleep
  try {
    barrier.wait(kLongNs);
    FAIL() << "passed a barrier of 2 alone";
  } catch (const ds::Stopped&) {
  } catch (const ds::RunError& e) {
    FAIL() << "the abort was missed: the wait ended only by its timeout: " << e.what();
  }
  EXPECT_EQ(1, hooked) << "the hook was not reached";
}

TEST(Barrier, APartyThatNeverArrivesIsATimeoutNotAStop) {
  BarrierState state;
  Barrier barrier(&state);
  barrier.init(2);
  const int64_t t0 = ds::now_ns();
  try {
    barrier.wait(kShortNs);
    FAIL() << "passed a barrier of 2 alone";
  } catch (const ds::Stopped& e) {
    FAIL() << "a timeout reported as Stopped: " << e.what();
  } catch (const ds::RunError& e) {
    EXPECT_NE(std::string(e.what()).find("timed out"), std::string::npos) << e.what();
  }
  EXPECT_GE(ds::now_ns() - t0, kShortNs);
  EXPECT_FALSE(barrier.is_aborted());
}

TEST(Barrier, InitResets) {
  BarrierState state;
  Barrier barrier(&state);
  barrier.init(2);
  EXPECT_THROW(barrier.wait(kShortNs), ds::RunError);  // leaves one party arrived
  barrier.abort();
  barrier.init(2);
  EXPECT_FALSE(barrier.is_aborted());
  EXPECT_EQ(state.arrived.load(), 0u);
  EXPECT_EQ(state.generation.load(), 0u);
  // Alone again: the stale arrival must not count.
  EXPECT_THROW(barrier.wait(kShortNs), ds::RunError);
  barrier.init(2);
  std::thread other([&] { barrier.wait(kLongNs); });
  EXPECT_NO_THROW(barrier.wait(kLongNs));
  other.join();
  EXPECT_EQ(state.generation.load(), 1u);
}

// The poll every waiter makes before it sleeps (the barrier, the sim engine's
// threads) ends as soon as what it waits for holds...
TEST(SpinUntil, ReturnsAsSoonAsReady) {
  int polls = 0;
  EXPECT_TRUE(ds::spin_until([&] { return ++polls == 5; }, kLongNs));
  EXPECT_EQ(5, polls);
}

// ... and otherwise lasts its time on the clock, not a count of pauses (whose
// length differs tenfold between CPUs), then gives up.
TEST(SpinUntil, PollsForItsTimeThenGivesUp) {
  int64_t polls = 0;
  const int64_t t0 = ds::now_ns();
  EXPECT_FALSE(ds::spin_until([&] { return ++polls < 0; }, kShortNs));
  const int64_t took = ds::now_ns() - t0;
  EXPECT_GE(took, kShortNs) << "after " << polls << " polls";
  EXPECT_LT(took, kLongNs);
}

// A party kept waiting sleeps after its short poll: over a second at the barrier
// it uses a small part of a second of CPU (a waiter that polled on would use what
// the scheduler gives it, and take it from the threads it waits for).
TEST(Barrier, AWaiterKeptWaitingSleepsRatherThanPolls) {
  BarrierState state;
  Barrier barrier(&state);
  barrier.init(2);
  std::atomic<int64_t> cpu_ns{-1};
  std::thread waiter([&] {
    barrier.wait(kLongNs);
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    cpu_ns = static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  });
  ASSERT_TRUE(arrived(state, 1));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  barrier.wait(kLongNs);
  waiter.join();
  EXPECT_GE(cpu_ns.load(), 0);
  EXPECT_LT(cpu_ns.load(), 150LL * 1000000LL) << "CPU used by a waiter kept waiting 1 s (ns)";
}

}  // namespace
