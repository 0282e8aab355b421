// The fan-out: every worker runs once (inline, threads, fork), a failure is reported
// naming the device and stops the others, a Stopped never hides the real failure,
// a child killed by a signal is reported, run_isolated runs in another process.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <new>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "core/error.h"
#include "runner/barrier.h"
#include "runner/fanout.h"
#include "runner/shared_mapping.h"

namespace {

using ds::Fanout;

constexpr int64_t kLongNs = 10LL * 1000000000LL;  // never reached by a passing test
constexpr int kMaxWorkers = 8;

// What workers leave for the test, in memory shared with forked children.
struct Seen {
  ds::BarrierState barrier;
  std::atomic<int> runs[kMaxWorkers];
  std::atomic<int> stopped[kMaxWorkers];  // saw Stopped at the barrier
  std::atomic<int> pid[kMaxWorkers];
};

// A Seen in a shared mapping, with the barrier the workers meet at.
struct Shared {
  explicit Shared(uint32_t parties) { barrier.init(parties); }
  ds::SharedMapping map{sizeof(Seen)};
  Seen* seen = new (map.data()) Seen();
  ds::Barrier barrier{&seen->barrier};
};

// run_workers' error message, or "" when it threw nothing; `stopped` says whether
// what it threw was a Stopped.
std::string error_of(Fanout f, int count, const std::function<void(int)>& body, ds::Barrier& b,
                     bool* stopped = nullptr) {
  try {
    ds::run_workers(f, count, body, b);
  } catch (const ds::Stopped& e) {
    if (stopped) *stopped = true;
    return e.what();
  } catch (const ds::RunError& e) {
    if (stopped) *stopped = false;
    return e.what();
  }
  return "";
}

std::string name_of(Fanout f) {
  switch (f) {
    case Fanout::kInline: return "inline";
    case Fanout::kThreads: return "threads";
    case Fanout::kFork: return "fork";
  }
  return "?";
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

class FanoutAll : public ::testing::TestWithParam<Fanout> {};

TEST_P(FanoutAll, RunsEveryWorkerOnce) {
  Shared s(1);
  constexpr int kCount = 5;
  ds::run_workers(GetParam(), kCount, [&](int w) {
    s.seen->runs[w]++;
    s.seen->pid[w] = getpid();
  }, s.barrier);
  for (int w = 0; w < kCount; ++w) {
    EXPECT_EQ(s.seen->runs[w].load(), 1) << "worker " << w;
    if (GetParam() == Fanout::kFork)
      EXPECT_NE(s.seen->pid[w].load(), getpid()) << "worker " << w << " in a child";
    else
      EXPECT_EQ(s.seen->pid[w].load(), getpid()) << "worker " << w << " in this process";
  }
  for (int w = kCount; w < kMaxWorkers; ++w) EXPECT_EQ(s.seen->runs[w].load(), 0);
}

INSTANTIATE_TEST_SUITE_P(Fanouts, FanoutAll, ::testing::Values(Fanout::kInline, Fanout::kThreads, Fanout::kFork),
                         [](const ::testing::TestParamInfo<Fanout>& i) { return name_of(i.param); });

// threads and fork: workers run at once and meet at the barrier.
class FanoutParallel : public ::testing::TestWithParam<Fanout> {};

// Waits at the barrier, noting a Stopped before passing it on.
void wait_noting_stop(Shared& s, int w) {
  try {
    s.barrier.wait(kLongNs);
  } catch (const ds::Stopped&) {
    s.seen->stopped[w] = 1;
    throw;
  }
}

TEST_P(FanoutParallel, AFailureNamesTheDeviceAndStopsTheOthers) {
  Shared s(3);
  bool stopped = true;
  const std::string error = error_of(GetParam(), 3, [&](int w) {
    if (w == 1) throw ds::RunError("no such device");
    wait_noting_stop(s, w);
  }, s.barrier, &stopped);
  EXPECT_EQ(error, "device 1: no such device");
  EXPECT_FALSE(stopped) << "the failure is a RunError, not a Stopped";
  EXPECT_EQ(s.seen->stopped[0].load(), 1) << "worker 0 was released from the barrier";
  EXPECT_EQ(s.seen->stopped[2].load(), 1) << "worker 2 was released from the barrier";
}

TEST_P(FanoutParallel, AStoppedWorkerNeverHidesTheFirstRealFailure) {
  // Workers 0 and 1 report Stopped first (0 on its own, 1 from the barrier);
  // worker 2, the one that really failed, reports last and highest.
  Shared s(3);
  const std::string error = error_of(GetParam(), 3, [&](int w) {
    if (w == 0) throw ds::Stopped("stopped: another worker failed");
    if (w == 1) wait_noting_stop(s, w);
    sleep_ms(30);
    throw ds::RunError("copy failed");
  }, s.barrier);
  EXPECT_EQ(error, "device 2: copy failed");
  EXPECT_EQ(s.seen->stopped[1].load(), 1);
}

TEST_P(FanoutParallel, OnlyStoppedWorkersStillFail) {
  Shared s(2);
  const std::string error = error_of(GetParam(), 2, [&](int w) {
    if (w == 1) throw ds::Stopped("stopped by the caller");
  }, s.barrier);
  EXPECT_EQ(error, "device 1: stopped by the caller");
}

INSTANTIATE_TEST_SUITE_P(Fanouts, FanoutParallel, ::testing::Values(Fanout::kThreads, Fanout::kFork),
                         [](const ::testing::TestParamInfo<Fanout>& i) { return name_of(i.param); });

TEST(FanoutFork, AChildKilledByASignalIsReported) {
  Shared s(2);
  const std::string error = error_of(Fanout::kFork, 2, [&](int w) {
    if (w == 1) raise(SIGTERM);
    wait_noting_stop(s, w);
  }, s.barrier);
  EXPECT_EQ(error.rfind("device 1: killed by signal " + std::to_string(SIGTERM), 0), 0u) << error;
  EXPECT_EQ(s.seen->stopped[0].load(), 1);
}

TEST(FanoutFork, AChildThatExitsIsReportedWithItsStatus) {
  Shared s(1);
  const std::string error = error_of(Fanout::kFork, 1, [](int) { _exit(7); }, s.barrier);
  EXPECT_EQ(error, "device 0: exited with status 7");
}

TEST(RunIsolated, RunsInAnotherProcess) {
  Shared s(1);
  ds::run_isolated([&] {
    s.seen->pid[0] = getpid();
    s.seen->runs[0]++;
  }, s.barrier);
  EXPECT_EQ(s.seen->runs[0].load(), 1);
  EXPECT_NE(s.seen->pid[0].load(), 0);
  EXPECT_NE(s.seen->pid[0].load(), getpid());
}

TEST(RunIsolated, PassesTheErrorBackUnchanged) {
  Shared s(1);
  try {
    ds::run_isolated([] { throw ds::RunError("device 3: the runtime said no (code 107)"); }, s.barrier);
    FAIL() << "the child's error was lost";
  } catch (const ds::RunError& e) {
    EXPECT_STREQ(e.what(), "device 3: the runtime said no (code 107)");
  }
}

}  // namespace
