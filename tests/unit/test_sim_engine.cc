// The sim copy engine on its own: FIFO order across ring wrap-around, copy lists,
// event stamps in stream order, the gate, backpressure, draining on destruction.
// No test asserts a duration: order and content only.
#include <dirent.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "backends/sim/sim_engine.h"
#include "core/clock.h"
#include "core/futex.h"

namespace ds {
namespace {

// More ops than the engine's ring has slots (4096), so every test that uses it wraps.
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

TEST(SimEngine, CopiesEveryBlockAcrossRingWrapAround) {
  constexpr size_t kBlock = 64;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock, 3);
  std::vector<uint8_t> dst(src.size(), 0);
  SimEngine engine;
  for (size_t i = 0; i < kMany; ++i) engine.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  engine.wait_idle();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimEngine, RunsOpsInSubmissionOrder) {
  // Every copy writes the same destination: only FIFO order leaves the last one there,
  // lap after lap of the ring.
  std::vector<std::vector<uint8_t>> srcs;
  for (int k = 0; k < 5; ++k) srcs.push_back(bytes_of(256, static_cast<uint8_t>(k * 40 + 1)));
  std::vector<uint8_t> dst(256, 0);
  SimEngine engine;
  for (size_t round = 0; round < 4; ++round) {
    for (size_t i = 0; i < kMany + round; ++i) {
      const auto& s = srcs[i % srcs.size()];
      engine.copy({dst.data(), s.data(), s.size()});
    }
    engine.wait_idle();
    EXPECT_EQ(dst, srcs[(kMany + round - 1) % srcs.size()]) << "round " << round;
  }
}

TEST(SimEngine, CopyListCopiesEveryDescriptorAndKeepsItsOwnCopy) {
  constexpr size_t kBlock = 128;
  constexpr size_t kBlocks = 37;
  const std::vector<uint8_t> src = bytes_of(kBlock * kBlocks, 9);
  SimEngine engine;
  for (size_t lap = 0; lap < 3 * 4096 / 16; lap += 1) {
    // Lists of changing lengths through the same slots; the caller's array is
    // overwritten right after each submission.
    std::vector<uint8_t> dst(src.size(), 0);
    const size_t n = 1 + lap % kBlocks;
    std::vector<CopyDesc> descs;
    for (size_t i = 0; i < n; ++i) descs.push_back({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
    engine.copy_list(descs.data(), descs.size());
    for (auto& d : descs) d = CopyDesc{nullptr, nullptr, 0};
    engine.copy_list(nullptr, 0);  // an empty list is a no-op
    engine.wait_idle();
    ASSERT_EQ(0, std::memcmp(dst.data(), src.data(), n * kBlock)) << "lap " << lap << ", " << n << " blocks";
    ASSERT_TRUE(std::all_of(dst.begin() + static_cast<long>(n * kBlock), dst.end(), [](uint8_t b) { return b == 0; }));
  }
}

TEST(SimEngine, StampsEventsInStreamOrder) {
  constexpr size_t kBlock = 4096;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock / 8, 5);
  std::vector<uint8_t> dst(src.size(), 0);
  std::vector<SimEventStamp> events(kMany / 8 + 1);
  SimEngine engine;
  const int64_t before = now_ns();
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    engine.stamp(&events[i]);
    engine.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  }
  engine.stamp(&events.back());
  engine.wait_idle();
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

TEST(SimEngine, GateHoldsLaterWorkUntilReleased) {
  const std::vector<uint8_t> src = bytes_of(4096, 11);
  std::vector<uint8_t> before_gate(4096, 0), after_gate(4096, 0);
  std::atomic<uint32_t> word{0};
  SimEventStamp stamp_before, stamp_after;
  SimEngine engine;
  engine.copy({before_gate.data(), src.data(), src.size()});
  engine.stamp(&stamp_before);
  engine.wait_gate(&word, 1);
  engine.copy({after_gate.data(), src.data(), src.size()});
  engine.stamp(&stamp_after);

  // The work before the gate runs; the engine then waits at the gate, asleep.
  while (stamp_before.ns.load() < 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(before_gate, src);
  bool asleep = false;
  for (int i = 0; i < 10000 && !asleep; ++i) {
    for (long tid : other_threads()) asleep = asleep || thread_state(tid) == 'S';
    if (!asleep) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(asleep) << "the engine thread never slept at the closed gate";
  EXPECT_EQ(-1, stamp_after.ns.load());
  EXPECT_TRUE(std::all_of(after_gate.begin(), after_gate.end(), [](uint8_t b) { return b == 0; }))
      << "a copy queued after the gate ran before the gate opened";

  const int64_t opened = now_ns();
  release(word, 1);
  engine.wait_idle();
  EXPECT_EQ(after_gate, src);
  EXPECT_GE(stamp_after.ns.load(), opened);
}

TEST(SimEngine, GateComparesAcrossWrapAround) {
  std::vector<uint8_t> src = bytes_of(64, 1), dst(64, 0);
  // 0xfffffff0 is "before" 5 (serial-number order): closed until the word passes 5.
  std::atomic<uint32_t> word{0xfffffff0u};
  SimEventStamp reached;
  SimEngine engine;
  engine.wait_gate(&word, 5);
  engine.copy({dst.data(), src.data(), src.size()});
  engine.stamp(&reached);
  std::thread opener([&] {
    release(word, 3);  // still before 5: stays closed
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_EQ(-1, reached.ns.load());
    release(word, 7);  // past 5: open
  });
  engine.wait_idle();
  opener.join();
  EXPECT_EQ(dst, src);

  // A gate whose value the word has already reached does not wait.
  std::vector<uint8_t> dst2(64, 0);
  engine.wait_gate(&word, 7);
  engine.wait_gate(&word, 0xfffffff0u);
  engine.copy({dst2.data(), src.data(), src.size()});
  engine.wait_idle();
  EXPECT_EQ(dst2, src);
}

TEST(SimEngine, FullRingWaitsForTheEngineToCatchUp) {
  // A closed gate holds the engine while this thread queues more than the ring
  // holds: submission waits for room (another thread opens the gate).
  constexpr size_t kBlock = 32;
  const std::vector<uint8_t> src = bytes_of(kMany * kBlock, 21);
  std::vector<uint8_t> dst(src.size(), 0);
  std::atomic<uint32_t> word{0};
  std::atomic<bool> queued_all{false};
  SimEngine engine;
  engine.wait_gate(&word, 1);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(queued_all.load()) << "the ring took more ops than it holds";
    release(word, 1);
  });
  for (size_t i = 0; i < kMany; ++i) engine.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
  queued_all = true;
  engine.wait_idle();
  opener.join();
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimEngine, DestructionRunsWhatWasQueued) {
  constexpr size_t kBlock = 512;
  constexpr size_t kBlocks = kMany / 4;
  const std::vector<uint8_t> src = bytes_of(kBlocks * kBlock, 13);
  std::vector<uint8_t> dst(src.size(), 0);
  SimEventStamp last;
  {
    SimEngine engine;
    for (size_t i = 0; i < kBlocks; ++i) engine.copy({dst.data() + i * kBlock, src.data() + i * kBlock, kBlock});
    engine.stamp(&last);
  }
  EXPECT_GE(last.ns.load(), 0);
  EXPECT_EQ(0, std::memcmp(dst.data(), src.data(), src.size()));
}

TEST(SimEngine, WaitIdleSeesEveryRepeatedSubmission) {
  // Many short iterations: each wait_idle must return only after its own copies,
  // whether the engine was spinning or asleep when they were queued.
  const std::vector<uint8_t> a = bytes_of(8192, 1), b = bytes_of(8192, 2);
  std::vector<uint8_t> dst(8192, 0);
  SimEngine engine;
  for (int it = 0; it < 2000; ++it) {
    const auto& s = (it & 1) ? b : a;
    engine.copy({dst.data(), s.data(), s.size()});
    engine.wait_idle();
    ASSERT_EQ(dst, s) << "iteration " << it;
    if (it % 500 == 499) std::this_thread::sleep_for(std::chrono::milliseconds(5));  // let it sleep
  }
}

}  // namespace
}  // namespace ds
