// The timed loop with fake workers (inline, threads, fork; isolated or not), and
// its per-iteration aggregation on hand-made records.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <new>
#include <ostream>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "core/clock.h"
#include "core/error.h"
#include "runner/shared_mapping.h"
#include "runner/timed_loop.h"

namespace {

using ds::Fanout;
using ds::IterationRecord;
using ds::LoopResult;

constexpr int kMaxWorkers = 4;
constexpr int kMaxCalls = 16;

// What the fake workers and the host hook saw, in memory shared with forked children.
struct Trace {
  std::atomic<int> seq;  // orders events across processes
  std::atomic<int> hosts;
  int host_pid[kMaxWorkers];
  int host_begin[kMaxWorkers], host_end[kMaxWorkers];  // seq
  int worker_pid[kMaxWorkers];
  int made[kMaxWorkers], finished[kMaxWorkers];  // seq
  int calls[kMaxWorkers];
  int index[kMaxWorkers][kMaxCalls];
  int64_t start[kMaxWorkers][kMaxCalls];  // the loop's start, as iterate() got it
  int64_t end[kMaxWorkers][kMaxCalls];    // when iterate() returned (the loop's done is later)
  int hooked[kMaxWorkers];                  // before_iteration calls
  int64_t before[kMaxWorkers][kMaxCalls];   // when before_iteration(index) ran, by index
  int64_t after[kMaxWorkers][kMaxCalls];    // when after_iteration(index) ran, by index
};

struct TraceMap {
  ds::SharedMapping map{sizeof(Trace)};
  Trace* t = new (map.data()) Trace();
};

// What a fake worker does besides tracing.
struct Script {
  int sleep_worker = -1;   // this worker sleeps ...
  int sleep_every = 0;     // ... before every Nth iteration (index % N == 1)
  int fail_worker = -1;    // this worker throws at iteration fail_at
  int fail_at = 0;
  bool fail_after = false;  // ... in after_iteration rather than iterate
  static Script sleeping(int worker, int every) { return {worker, every, -1, 0}; }
  static Script failing(int worker, int at) { return {-1, 0, worker, at}; }
  static Script failing_after(int worker, int at) { return {-1, 0, worker, at, true}; }
};

constexpr int kSleepMs = 2;

class FakeWorker : public ds::LoopWorker {
 public:
  FakeWorker(int w, Trace* t, const Script& s) : w_(w), t_(t), s_(s) {
    t_->worker_pid[w] = getpid();
    t_->made[w] = ++t_->seq;
  }
  void iterate(int index, IterationRecord& r) override {
    last_index_ = index;
    const int n = t_->calls[w_]++;
    if (n < kMaxCalls) {
      t_->index[w_][n] = index;
      t_->start[w_][n] = r.start;
    }
    if (w_ == s_.fail_worker && index == s_.fail_at && !s_.fail_after)
      throw ds::RunError("worker " + std::to_string(w_) + " broke");
    if (w_ == s_.sleep_worker && s_.sleep_every > 0 && index % s_.sleep_every == 1)
      std::this_thread::sleep_for(std::chrono::milliseconds(kSleepMs));
    r.submitted = r.start + 10 * (w_ + 1);
    if (n < kMaxCalls) t_->end[w_][n] = ds::now_ns();
  }
  // Says which iteration and worker it was: 100 x index + w.
  int64_t measured_ns(const IterationRecord&) override { return 100LL * last_index_ + w_; }
  void before_iteration(int index) override {
    ++t_->hooked[w_];
    if (index < kMaxCalls) t_->before[w_][index] = ds::now_ns();
  }
  void after_iteration(int index) override {
    if (index < kMaxCalls) t_->after[w_][index] = ds::now_ns();
    if (w_ == s_.fail_worker && index == s_.fail_at && s_.fail_after)
      throw ds::RunError("worker " + std::to_string(w_) + " failed its check");
  }
  void finish() override { t_->finished[w_] = ++t_->seq; }
  // Worker 3 repeats worker 0; worker 1 has nothing to say.
  std::string note() const override {
    static const char* const kNotes[] = {"first", "", "second", "first"};
    return kNotes[w_ % 4];
  }
  uint64_t retries() const override { return static_cast<uint64_t>(w_ + 1); }

 private:
  int w_;
  Trace* t_;
  Script s_;
  int last_index_ = -1;
};

ds::LoopHooks hooks_for(Trace* t, const Script& s = {}) {
  ds::LoopHooks h;
  h.host = [t](const std::function<void()>& run) {
    const int i = t->hosts++;
    t->host_pid[i] = getpid();
    t->host_begin[i] = ++t->seq;
    run();
    t->host_end[i] = ++t->seq;
  };
  h.make_worker = [t, s](int w) -> std::unique_ptr<ds::LoopWorker> { return std::make_unique<FakeWorker>(w, t, s); };
  return h;
}

struct ShapeCase {
  Fanout fanout;
  bool isolate;
  int workers;
};

std::string name_of(const ShapeCase& c) {
  const char* f = c.fanout == Fanout::kInline ? "inline" : c.fanout == Fanout::kThreads ? "threads" : "fork";
  return std::string(f) + (c.isolate ? "_isolated" : "");
}

void PrintTo(const ShapeCase& c, std::ostream* os) { *os << name_of(c) << " x" << c.workers; }

ds::LoopShape shape_of(const ShapeCase& c, int warmup, int iterations) {
  ds::LoopShape shape;
  shape.workers = c.workers;
  shape.fanout = c.fanout;
  shape.isolate = c.isolate;
  shape.warmup = warmup;
  shape.iterations = iterations;
  return shape;
}

class TimedLoop : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TimedLoop, IteratesWarmupThenRecordsOnlyTheMeasured) {
  const ShapeCase c = GetParam();
  TraceMap m;
  const int warmup = 2, iterations = 5;
  const LoopResult r = ds::run_timed_loop(shape_of(c, warmup, iterations), hooks_for(m.t));
  for (int w = 0; w < c.workers; ++w) {
    ASSERT_EQ(m.t->calls[w], warmup + iterations) << "worker " << w;
    for (int i = 0; i < warmup + iterations; ++i) EXPECT_EQ(m.t->index[w][i], i) << "worker " << w;
  }
  // measured = max over workers of 100 x index + w: the measured iterations only.
  ASSERT_EQ(r.measured.size(), static_cast<size_t>(iterations));
  ASSERT_EQ(r.submit.size(), static_cast<size_t>(iterations));
  ASSERT_EQ(r.wall.size(), static_cast<size_t>(iterations));
  ASSERT_EQ(r.start_skew.size(), static_cast<size_t>(iterations));
  for (int i = 0; i < iterations; ++i) {
    EXPECT_EQ(r.measured[i], 100LL * (warmup + i) + c.workers - 1) << "iteration " << i;
    EXPECT_EQ(r.submit[i], 10LL * c.workers) << "iteration " << i;
    EXPECT_GT(r.wall[i], 0) << "iteration " << i;
    EXPECT_GE(r.start_skew[i], 0) << "iteration " << i;
    EXPECT_LE(r.start_skew[i], r.wall[i]) << "iteration " << i;
  }
  EXPECT_GT(r.setup_end, 0);
}

TEST_P(TimedLoop, NotesOnceEachInWorkerOrderAndRetriesSummed) {
  const ShapeCase c = GetParam();
  TraceMap m;
  const LoopResult r = ds::run_timed_loop(shape_of(c, 0, 1), hooks_for(m.t));
  const std::vector<std::string> want =
      c.workers < 3 ? std::vector<std::string>{"first"} : std::vector<std::string>{"first", "second"};
  EXPECT_EQ(r.notes, want);
  EXPECT_EQ(r.retries, static_cast<uint64_t>(c.workers * (c.workers + 1) / 2));
}

TEST_P(TimedLoop, HostHookRunsOncePerHostingProcessAroundItsWorkers) {
  const ShapeCase c = GetParam();
  TraceMap m;
  ds::run_timed_loop(shape_of(c, 1, 2), hooks_for(m.t));
  const Trace& t = *m.t;
  const bool forked = c.fanout == Fanout::kFork;
  ASSERT_EQ(t.hosts.load(), forked ? c.workers : 1);
  std::set<int> pids;
  for (int h = 0; h < t.hosts.load(); ++h) {
    pids.insert(t.host_pid[h]);
    if (forked || c.isolate)
      EXPECT_NE(t.host_pid[h], getpid()) << "host " << h << " in a child";
    else
      EXPECT_EQ(t.host_pid[h], getpid()) << "host " << h << " in this process";
  }
  EXPECT_EQ(pids.size(), static_cast<size_t>(t.hosts.load())) << "each host in its own process";
  for (int w = 0; w < c.workers; ++w) {
    int h = 0;
    while (h < t.hosts.load() && t.host_pid[h] != t.worker_pid[w]) ++h;
    ASSERT_LT(h, t.hosts.load()) << "worker " << w << " ran in no hosting process";
    EXPECT_LT(t.host_begin[h], t.made[w]) << "worker " << w << " made inside its host";
    EXPECT_LT(t.made[w], t.finished[w]) << "worker " << w;
    EXPECT_LT(t.finished[w], t.host_end[h]) << "worker " << w << " finished inside its host";
  }
}

TEST_P(TimedLoop, AWorkersExceptionFailsTheLoopWithItsMessage) {
  const ShapeCase c = GetParam();
  TraceMap m;
  const Script s = Script::failing(c.workers - 1, 2);
  try {
    ds::run_timed_loop(shape_of(c, 1, 3), hooks_for(m.t, s));
    FAIL() << "the loop went on";
  } catch (const ds::Stopped& e) {
    FAIL() << "reported as stopped: " << e.what();
  } catch (const ds::RunError& e) {
    const std::string want = "worker " + std::to_string(s.fail_worker) + " broke";
    const std::string got = e.what();
    EXPECT_NE(got.find(want), std::string::npos) << got;
    if (c.fanout != Fanout::kInline)
      EXPECT_NE(got.find("device " + std::to_string(s.fail_worker) + ": "), std::string::npos) << got;
  }
  for (int w = 0; w < c.workers; ++w) EXPECT_LE(m.t->calls[w], 3) << "worker " << w << " stopped";
}

INSTANTIATE_TEST_SUITE_P(Shapes, TimedLoop,
                         ::testing::Values(ShapeCase{Fanout::kInline, false, 1}, ShapeCase{Fanout::kInline, true, 1},
                                           ShapeCase{Fanout::kThreads, false, 4},
                                           ShapeCase{Fanout::kThreads, true, 4}, ShapeCase{Fanout::kFork, false, 4},
                                           ShapeCase{Fanout::kFork, true, 2}),
                         [](const ::testing::TestParamInfo<ShapeCase>& i) { return name_of(i.param); });

// Threads and fork: a worker that is late to finish an iteration holds every
// other worker's next start back.
class TimedLoopAligned : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TimedLoopAligned, EveryStartComesAfterThePreviousIterationOfAll) {
  const ShapeCase c = GetParam();
  TraceMap m;
  const int total = 6;
  const LoopResult r = ds::run_timed_loop(shape_of(c, 0, total), hooks_for(m.t, Script::sleeping(c.workers - 1, 2)));
  const Trace& t = *m.t;
  for (int i = 1; i < total; ++i) {
    int64_t first_start = INT64_MAX, last_end = 0;
    for (int w = 0; w < c.workers; ++w) {
      first_start = std::min(first_start, t.start[w][i]);
      last_end = std::max(last_end, t.end[w][i - 1]);
    }
    EXPECT_GE(first_start, last_end) << "iteration " << i << " started before iteration " << i - 1 << " ended";
  }
  for (int i = 1; i < total; i += 2) EXPECT_GE(r.wall[i], kSleepMs * 1000000LL) << "iteration " << i;
}

INSTANTIATE_TEST_SUITE_P(Shapes, TimedLoopAligned,
                         ::testing::Values(ShapeCase{Fanout::kThreads, false, 3}, ShapeCase{Fanout::kFork, false, 3}),
                         [](const ::testing::TestParamInfo<ShapeCase>& i) { return name_of(i.param); });

// The untimed per-iteration hooks (--validate each): around every iteration,
// warm-up included, never between a worker's `start` and its `done`; with
// hooks_apart, no worker's after_iteration before every worker's iteration ended.
class TimedLoopHooks : public ::testing::TestWithParam<ShapeCase> {};

TEST_P(TimedLoopHooks, RunAroundEveryIterationOutsideTheTiming) {
  const ShapeCase c = GetParam();
  TraceMap m;
  const int warmup = 1, iterations = 4, total = warmup + iterations;
  ds::LoopShape shape = shape_of(c, warmup, iterations);
  shape.hooks_apart = true;
  ds::run_timed_loop(shape, hooks_for(m.t, Script::sleeping(c.workers - 1, 2)));
  const Trace& t = *m.t;
  for (int w = 0; w < c.workers; ++w) {
    ASSERT_EQ(t.hooked[w], total) << "worker " << w;
    for (int i = 0; i < total; ++i) {
      EXPECT_LT(t.before[w][i], t.start[w][i]) << "worker " << w << " iteration " << i << ": before after start";
      EXPECT_GT(t.after[w][i], t.end[w][i]) << "worker " << w << " iteration " << i << ": after before done";
      for (int v = 0; v < c.workers; ++v) {
        EXPECT_GE(t.after[w][i], t.end[v][i]) << "worker " << w << " checked while worker " << v << " was timed";
        if (i + 1 < total)
          EXPECT_GE(t.start[v][i + 1], t.before[w][i + 1])
              << "worker " << v << " started iteration " << i + 1 << " before worker " << w << " was ready";
      }
      if (i + 1 < total) EXPECT_GE(t.before[w][i + 1], t.after[w][i]) << "worker " << w << " iteration " << i;
    }
  }
}

TEST_P(TimedLoopHooks, AThrowAfterAnIterationFailsTheLoopWithItsMessage) {
  const ShapeCase c = GetParam();
  TraceMap m;
  ds::LoopShape shape = shape_of(c, 1, 3);
  shape.hooks_apart = true;
  try {
    ds::run_timed_loop(shape, hooks_for(m.t, Script::failing_after(c.workers - 1, 2)));
    FAIL() << "the loop went on";
  } catch (const ds::Stopped& e) {
    FAIL() << "reported as stopped: " << e.what();
  } catch (const ds::RunError& e) {
    EXPECT_NE(std::string(e.what()).find("worker " + std::to_string(c.workers - 1) + " failed its check"),
              std::string::npos)
        << e.what();
  }
  for (int w = 0; w < c.workers; ++w) EXPECT_LE(m.t->calls[w], 3) << "worker " << w << " stopped";
}

INSTANTIATE_TEST_SUITE_P(Shapes, TimedLoopHooks,
                         ::testing::Values(ShapeCase{Fanout::kInline, true, 1}, ShapeCase{Fanout::kThreads, false, 3},
                                           ShapeCase{Fanout::kFork, false, 3}),
                         [](const ::testing::TestParamInfo<ShapeCase>& i) { return name_of(i.param); });

IterationRecord rec(int64_t start, int64_t submitted, int64_t done, int64_t measured) {
  IterationRecord r;
  r.start = start;
  r.submitted = submitted;
  r.done = done;
  r.measured = measured;
  return r;
}

TEST(Aggregate, PerIterationOverWorkers) {
  // Iteration 0: worker 0 starts first; iteration 1: worker 1 does. Each maximum
  // comes from the other worker than the minimum next to it.
  const std::vector<std::vector<IterationRecord>> records = {
      {rec(100, 130, 200, 50), rec(1000, 1090, 1500, 300)},
      {rec(110, 170, 260, 40), rec(990, 1000, 1400, 350)},
  };
  const LoopResult r = ds::aggregate(records);
  EXPECT_EQ(r.submit, (std::vector<int64_t>{60, 90}));        // max(submitted - start)
  EXPECT_EQ(r.measured, (std::vector<int64_t>{50, 350}));     // max(measured)
  EXPECT_EQ(r.wall, (std::vector<int64_t>{160, 510}));        // max(done) - min(start)
  EXPECT_EQ(r.start_skew, (std::vector<int64_t>{10, 10}));    // max(start) - min(start)
  EXPECT_TRUE(r.notes.empty());
  EXPECT_EQ(r.retries, 0u);
}

TEST(Aggregate, OneWorkerAndNone) {
  const LoopResult one = ds::aggregate({{rec(5, 7, 20, 11)}});
  EXPECT_EQ(one.submit, (std::vector<int64_t>{2}));
  EXPECT_EQ(one.measured, (std::vector<int64_t>{11}));
  EXPECT_EQ(one.wall, (std::vector<int64_t>{15}));
  EXPECT_EQ(one.start_skew, (std::vector<int64_t>{0}));
  EXPECT_TRUE(ds::aggregate({}).wall.empty());
}

TEST(LoopStages, NamesSubmitMeasuredWallAndStartSkew) {
  LoopResult loop;
  loop.submit = {1, 3};
  loop.measured = {10, 30};
  loop.wall = {100, 300};
  loop.start_skew = {0, 2};
  const std::vector<ds::Stage> stages = ds::loop_stages(loop, "IO");
  ASSERT_EQ(stages.size(), 4u);
  EXPECT_EQ(stages[0].name, "Submit");
  EXPECT_EQ(stages[1].name, "IO");
  EXPECT_EQ(stages[2].name, "Wall");
  EXPECT_EQ(stages[3].name, "StartSkew");
  EXPECT_DOUBLE_EQ(stages[0].ns.avg, 2.0);
  EXPECT_DOUBLE_EQ(stages[1].ns.avg, 20.0);
  EXPECT_DOUBLE_EQ(stages[2].ns.avg, 200.0);
  EXPECT_EQ(stages[3].ns.max, 2);
  for (const ds::Stage& s : stages) EXPECT_EQ(s.ns.samples, 2u) << s.name;
}

}  // namespace

// Inline workers run one after another, so more than one would deadlock at the
// first barrier: refused at once instead.
TEST(TimedLoopShape, InlineTakesExactlyOneWorker) {
  TraceMap m;
  const ds::LoopShape shape = shape_of(ShapeCase{Fanout::kInline, false, 2}, 0, 1);
  try {
    ds::run_timed_loop(shape, hooks_for(m.t));
    ADD_FAILURE() << "two inline workers were accepted";
  } catch (const ds::RunError& e) {
    EXPECT_NE(std::string(e.what()).find("an inline timed loop runs exactly one worker, not 2"), std::string::npos)
        << e.what();
  }
}

// The watchdog: a worker that hangs (here: sleeps far past the timeout) in a
// phase is named with that phase; its process is killed, not waited for.
namespace {

enum class HangAt { kSetup, kSubmitting, kWaiting, kAfter };

class HangingWorker : public ds::LoopWorker {
 public:
  HangingWorker(int w, HangAt at) : w_(w), at_(at) {
    if (w_ == 1 && at_ == HangAt::kSetup) hang();
  }
  void iterate(int index, IterationRecord& r) override {
    if (w_ == 1 && index == 3 && at_ == HangAt::kSubmitting) hang();
    r.submitted = ds::now_ns();
    if (w_ == 1 && index == 3 && at_ == HangAt::kWaiting) hang();
  }
  int64_t measured_ns(const IterationRecord&) override { return 1; }
  void after_iteration(int index) override {
    if (w_ == 1 && index == 2 && at_ == HangAt::kAfter) hang();
  }

 private:
  static void hang() { std::this_thread::sleep_for(std::chrono::seconds(600)); }
  int w_;
  HangAt at_;
};

std::string hang_message(Fanout fanout, bool isolate, HangAt at) {
  ds::LoopShape shape;
  shape.workers = 2;
  shape.fanout = fanout;
  shape.isolate = isolate;
  shape.warmup = 1;
  shape.iterations = 100;
  shape.timeout_ns = 1000000000LL;
  ds::LoopHooks hooks;
  hooks.make_worker = [at](int w) { return std::unique_ptr<ds::LoopWorker>(new HangingWorker(w, at)); };
  const auto t0 = std::chrono::steady_clock::now();
  try {
    ds::run_timed_loop(shape, hooks);
  } catch (const ds::RunError& e) {
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 6.0) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "the hanging worker was not noticed";
  return "";
}

}  // namespace

// One test per fan-out and phase (each waits out the 1 s timeout, the shortest
// the message can name in whole seconds), so that they run side by side.
class WatchdogHangs : public ::testing::TestWithParam<std::tuple<Fanout, HangAt>> {};

TEST_P(WatchdogHangs, NamesTheWorkerAndWhereItHangs) {
  const Fanout f = std::get<0>(GetParam());
  const bool isolate = f != Fanout::kFork;  // threads: isolated in one child process
  // Index 3 with one warm-up iteration: measured iteration 2.
  const char* const where[] = {"setup (devices, buffers, registration)", "iteration 2 (submitting copies)",
                               "iteration 2 (copy submitted, waiting for completion)",
                               "iteration 1 (checking it, untimed)"};
  const HangAt at = std::get<1>(GetParam());
  EXPECT_EQ(hang_message(f, isolate, at), std::string("device 1: no progress for 1 s in ") + where[static_cast<int>(at)]);
}

namespace {
std::string hang_name(const ::testing::TestParamInfo<std::tuple<Fanout, HangAt>>& i) {
  const char* const at[] = {"Setup", "Submitting", "Waiting", "After"};
  return std::string(std::get<0>(i.param) == Fanout::kFork ? "Fork" : "Threads") +
         at[static_cast<int>(std::get<1>(i.param))];
}
}  // namespace

INSTANTIATE_TEST_SUITE_P(Hangs, WatchdogHangs,
                         ::testing::Combine(::testing::Values(Fanout::kFork, Fanout::kThreads),
                                            ::testing::Values(HangAt::kSetup, HangAt::kSubmitting, HangAt::kWaiting,
                                                              HangAt::kAfter)),
                         hang_name);

TEST(Watchdog, ZeroMeansNoWatchdog) {
  ds::LoopShape shape;
  shape.timeout_ns = 0;
  shape.fanout = Fanout::kFork;
  shape.iterations = 3;
  ds::LoopHooks hooks;
  hooks.make_worker = [](int w) { return std::unique_ptr<ds::LoopWorker>(new HangingWorker(w, HangAt::kSetup)); };
  EXPECT_EQ(ds::run_timed_loop(shape, hooks).measured.size(), 3u);  // worker 0 only: never hangs
}
