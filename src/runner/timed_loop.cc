#include "runner/timed_loop.h"

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>
#include <new>
#include <thread>

#include "cluster/cluster.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "output/progress.h"
#include "runner/barrier.h"
#include "runner/phase_trace.h"
#include "runner/shared_mapping.h"

namespace ds {

namespace {

// Without a watchdog, a worker that has not reached the next iteration's barrier
// by then is stuck; with one, the watchdog speaks first.
constexpr int64_t kBarrierTimeoutNs = 300LL * 1000000000LL;

// A worker's notes, one line each (several may come from one worker).
constexpr size_t kNoteBytes = 2048;

// Where a worker is, for the watchdog.
enum Phase : int32_t {
  kStarting = 0,  // not at its setup yet: the process hosting it initialises the runtime
  kSetup,
  kBefore,   // the untimed hook before an iteration
  kBarrier,  // waiting for the others: not its own lack of progress
  kIterate,
  kAfter,  // the untimed hook after an iteration
  kFinish,
  kDone,
};

// What each worker leaves for this process, next to its iteration records. The
// worker writes, the watchdog in another process reads (forked children, or the
// isolated child): plain words read and written with __atomic builtins.
struct WorkerShared {
  int64_t setup_done;
  uint64_t retries;
  char note[kNoteBytes];  // NUL-terminated
  int64_t beat_ns;        // when it last made progress
  int32_t phase;          // Phase
  int32_t index;          // the iteration, warm-up included
  int32_t barriers;       // barriers entered so far
  IterationRecord current;  // the iteration under way (its `submitted` is progress too)
  int32_t placed;           // `placement` holds the worker's placement()
  WorkerPlacement placement;
};

template <typename T>
void publish(T& word, T value) {
  __atomic_store_n(&word, value, __ATOMIC_RELEASE);
}
template <typename T>
T observe(const T& word) {
  return __atomic_load_n(&word, __ATOMIC_ACQUIRE);
}

// The worker this thread runs, for loop_progress().
thread_local WorkerShared* t_worker = nullptr;

void beat(WorkerShared& w, Phase phase, int index = 0) {
  publish(w.index, static_cast<int32_t>(index));
  publish(w.phase, static_cast<int32_t>(phase));
  publish(w.beat_ns, now_ns());
}

// The barrier, one WorkerShared per worker and records[worker][iteration], in one
// mapping that forked children share with this process.
class SharedRecords {
 public:
  SharedRecords(int workers, int iterations)
      : workers_(workers),
        iterations_(iterations),
        map_(sizeof(BarrierState) + sizeof(WorkerShared) * static_cast<size_t>(workers) +
             sizeof(IterationRecord) * static_cast<size_t>(workers) * static_cast<size_t>(iterations)) {
    auto* base = static_cast<char*>(map_.data());
    barrier_state_ = new (base) BarrierState();
    shared_ = reinterpret_cast<WorkerShared*>(base + sizeof(BarrierState));
    records_ = reinterpret_cast<IterationRecord*>(shared_ + workers);
    const int64_t now = now_ns();  // the watch starts now, before any worker process exists
    for (int w = 0; w < workers; ++w) shared_[w].beat_ns = now;
  }
  BarrierState* barrier_state() { return barrier_state_; }
  WorkerShared& worker(int w) { return shared_[w]; }
  IterationRecord& record(int w, int it) { return records_[static_cast<size_t>(w) * iterations_ + it]; }
  int workers() const { return workers_; }
  int iterations() const { return iterations_; }

 private:
  int workers_, iterations_;
  SharedMapping map_;
  BarrierState* barrier_state_;
  WorkerShared* shared_;
  IterationRecord* records_;
};

// A last barrier after the last iteration, before any worker's finish and teardown.
bool final_barrier(const LoopShape& shape) { return shape.workers > 1 && shape.fanout == Fanout::kThreads; }

// setup, iterate, finish: one worker's part, wherever it runs.
void run_worker(int w, const LoopShape& shape, const LoopHooks& hooks, SharedRecords& shared, Barrier& barrier) {
  WorkerShared& mine = shared.worker(w);
  t_worker = &mine;
  struct Clear {
    ~Clear() { t_worker = nullptr; }
  } clear;
  // With the watchdog on, it reports a stuck worker long before the barrier would.
  const int64_t barrier_timeout = shape.timeout_ns > 0 ? shape.timeout_ns + kBarrierTimeoutNs : INT64_MAX;
  // Across ranks every start is two rounds of the barrier: all here (the
  // coordinator then waits for the other ranks), then released together.
  const bool across = shape.cluster && shape.cluster->multi();
  const auto sync = [&] {
    barrier.wait(barrier_timeout);
    if (across) barrier.wait(barrier_timeout);
  };
  beat(mine, kSetup);
  std::unique_ptr<LoopWorker> worker = hooks.make_worker(w);
  if (const WorkerPlacement* where = worker->placement()) {
    mine.placement = *where;
    mine.placed = 1;
  }
  mine.setup_done = now_ns();
  const int total = shape.warmup + shape.iterations;
  PhaseTrace trace(w, total);  // DEV_SANDBOX_PHASE_TRACE: the timed windows, written after the loop
  for (int it = 0; it < total; ++it) {
    beat(mine, kBefore, it);
    worker->before_iteration(it);  // untimed: before the barrier that starts the iteration
    publish(mine.barriers, mine.barriers + 1);
    beat(mine, kBarrier, it);
    sync();
    IterationRecord& r = mine.current;  // the watchdog reads its `submitted` (a PublishedNs)
    r.submitted = 0;
    beat(mine, kIterate, it);
    r.start = now_ns();
    worker->iterate(it, r);
    r.done = now_ns();
    trace.mark(r.start, r.done);
    r.measured = worker->measured_ns(r);
    if (it >= shape.warmup) shared.record(w, it - shape.warmup) = r;
    if (w == 0) progress_iteration(it + 1);  // after `done`: outside the timing
    if (shape.hooks_apart) {
      publish(mine.barriers, mine.barriers + 1);
      beat(mine, kBarrier, it);
      sync();  // every worker is past its `done`
    }
    beat(mine, kAfter, it);
    worker->after_iteration(it);  // untimed: after `done`
  }
  if (final_barrier(shape)) {
    // Workers in one process (threads) tear down in it: none before every one is
    // past its last `done`, so no free or destroy lands in another's last window.
    // Local only: across ranks the coordinator is a party here too, without agreeing.
    publish(mine.barriers, mine.barriers + 1);
    beat(mine, kBarrier, total - 1);
    barrier.wait(barrier_timeout);
  }
  beat(mine, kFinish);
  worker->finish();
  std::snprintf(mine.note, sizeof mine.note, "%s", worker->note().c_str());
  mine.retries = worker->retries();
  beat(mine, kDone);
}

// The watchdog's look at every worker: the message for the one that has made no
// progress for longer than the timeout (the longest-stuck first), else "". A
// worker at a barrier waits for the others and is not itself stuck, unless the
// others have already gone through that barrier without it (it was let go and
// never left: stopped there).
std::string stalled_worker(SharedRecords& shared, const LoopShape& shape) {
  const int64_t now = now_ns();
  int32_t latest_barrier = 0;
  for (int w = 0; w < shared.workers(); ++w) latest_barrier = std::max(latest_barrier, observe(shared.worker(w).barriers));
  int stuck = -1, waiting = -1;
  int64_t since = 0, oldest = INT64_MAX, oldest_wait = INT64_MAX;
  for (int w = 0; w < shared.workers(); ++w) {
    const WorkerShared& s = shared.worker(w);
    const int32_t phase = observe(s.phase);
    if (phase == kDone) continue;
    int64_t last = observe(s.beat_ns);
    if (phase == kIterate) last = std::max(last, s.current.submitted.load());
    if (phase == kBarrier && observe(s.barriers) == latest_barrier) {
      if (last < oldest_wait) {
        oldest_wait = last;
        waiting = w;
      }
      continue;
    }
    if (now - last > shape.timeout_ns && last < oldest) {
      oldest = last;
      stuck = w;
      since = now - last;
    }
  }
  // Everyone still running waits at the same barrier, for longer than the
  // timeout: one of them never arrived there.
  if (stuck < 0 && waiting >= 0 && now - oldest_wait > shape.timeout_ns) {
    bool all_waiting = true;
    for (int w = 0; w < shared.workers(); ++w) {
      const int32_t phase = observe(shared.worker(w).phase);
      all_waiting = all_waiting && (phase == kDone || phase == kBarrier);
    }
    int running = 0;
    for (int w = 0; w < shared.workers(); ++w) running += observe(shared.worker(w).phase) != kDone ? 1 : 0;
    const std::string at = shape.unit + " " + std::to_string(observe(shared.worker(waiting).index));
    const std::string secs = std::to_string((now - oldest_wait) / 1000000000);
    if (all_waiting && running == 1)  // alone at a barrier that lets it through at once: it stopped there
      return shape.worker_name + " " + std::to_string(waiting) + ": no progress for " + secs +
             " s at the barrier before " + at;
    if (all_waiting)
      return "no progress for " + secs + " s: every " + shape.worker_name + " waits at the barrier before " + at +
             " for one that never arrived";
  }
  if (stuck < 0) return "";
  const WorkerShared& s = shared.worker(stuck);
  const int32_t phase = observe(s.phase), it = observe(s.index);
  const std::string unit = it < shape.warmup ? "warm-up " + shape.unit + " " + std::to_string(it)
                                             : shape.unit + " " + std::to_string(it - shape.warmup);
  std::string where;
  switch (phase) {
    case kStarting: where = "start-up (runtime initialisation, before its setup)"; break;
    case kSetup: where = "setup (devices, buffers, registration)"; break;
    case kBefore: where = unit + " (preparing it, untimed)"; break;
    case kIterate:
      where = unit + " (" + (s.current.submitted.load() != 0 ? shape.waiting : shape.running) + ")";
      break;
    case kAfter: where = unit + " (checking it, untimed)"; break;
    case kBarrier: where = "the barrier at " + unit + " (the others went on without it)"; break;
    case kFinish: where = "validation and teardown"; break;
    default: where = "phase " + std::to_string(phase); break;
  }
  return shape.worker_name + " " + std::to_string(stuck) + ": no progress for " +
         std::to_string(since / 1000000000) + " s in " + where;
}

// The coordinator across ranks (LoopShape::cluster): the barrier's extra party.
// Each of the workers' sync points: wait until every local worker is there, agree
// with the other ranks, release. What ended it early is kept for the caller.
class Coordinator {
 public:
  Coordinator(const LoopShape& shape, Barrier& barrier) : shape_(shape), barrier_(barrier) {}
  void run() {
    Cluster& c = *shape_.cluster;
    const int64_t timeout = shape_.timeout_ns > 0 ? shape_.timeout_ns + kBarrierTimeoutNs : INT64_MAX;
    const int total = shape_.warmup + shape_.iterations;
    const int per = shape_.hooks_apart ? 2 : 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      started_ = true;
    }
    started_cv_.notify_all();
    try {
      for (int point = 0; point < total * per; ++point) {
        barrier_.wait(timeout);  // every local worker has arrived
        const std::string what = "the start of " + shape_.unit + " " + std::to_string(point / per);
        if (!c.agree(true, timeout, what)) {
          remote_failed_ = true;
          barrier_.abort();
          return;
        }
        barrier_.wait(timeout);  // the release
      }
      if (final_barrier(shape_)) barrier_.wait(timeout);  // the workers' last, local one (no agreement)
    } catch (const Interrupted&) {
      barrier_.abort();
    } catch (const ClusterTimeout& e) {
      error_ = e.what();
      barrier_.abort();
    } catch (const std::exception&) {
      // The local barrier failed: a worker here failed (the fan-out reports it).
      // This rank's "no" releases the others at their next agreement.
      barrier_.abort();
      try {
        if (!c.failed() && !c.broken()) c.agree(false, timeout, "a failure on rank " + std::to_string(c.rank()));
      } catch (const ClusterTimeout& e) {
        error_ = e.what();
      } catch (const std::exception&) {
      }
    }
  }
  bool remote_failed() const { return remote_failed_; }
  const std::string& error() const { return error_; }

  // Returns once run() is under way, past the thread's start-up: the workers are
  // forked only then, so that no fork copies a lock this thread holds while it
  // starts (the allocator's, in runtimes whose malloc is not fork-safe).
  void wait_started() {
    std::unique_lock<std::mutex> lock(mu_);
    started_cv_.wait(lock, [&] { return started_; });
  }

 private:
  const LoopShape& shape_;
  Barrier& barrier_;
  std::mutex mu_;
  std::condition_variable started_cv_;
  bool started_ = false;
  bool remote_failed_ = false;
  std::string error_;
};

}  // namespace

void loop_progress() {
  if (t_worker) publish(t_worker->beat_ns, now_ns());
}

const void* loop_progress_token() { return t_worker; }

void adopt_loop_progress(const void* token) {
  if (token) t_worker = static_cast<WorkerShared*>(const_cast<void*>(token));
}

LoopResult aggregate(const std::vector<std::vector<IterationRecord>>& records) {
  LoopResult out;
  const size_t iterations = records.empty() ? 0 : records.front().size();
  for (size_t it = 0; it < iterations; ++it) {
    int64_t sub = 0, measured = 0, first = std::numeric_limits<int64_t>::max(), last_start = 0, last = 0;
    for (const auto& worker : records) {
      const IterationRecord& rec = worker[it];
      sub = std::max(sub, rec.submitted - rec.start);
      measured = std::max(measured, rec.measured);
      first = std::min(first, rec.start);
      last_start = std::max(last_start, rec.start);
      last = std::max(last, rec.done);
    }
    out.submit.push_back(sub);
    out.measured.push_back(measured);
    out.wall.push_back(last - first);
    out.start_skew.push_back(last_start - first);
  }
  for (const auto& worker : records) {
    double sum = 0;
    for (const IterationRecord& rec : worker) sum += static_cast<double>(rec.measured);
    out.worker_measured_avg.push_back(worker.empty() ? 0.0 : sum / static_cast<double>(worker.size()));
  }
  return out;
}

std::vector<Stage> loop_stages(const LoopResult& loop, const std::string& measured) {
  return {{"Submit", compute_stats(loop.submit), loop.submit},
          {measured, compute_stats(loop.measured), loop.measured},
          {"Wall", compute_stats(loop.wall), loop.wall},
          {"StartSkew", compute_stats(loop.start_skew), loop.start_skew}};
}

LoopResult run_timed_loop(const LoopShape& shape, const LoopHooks& hooks) {
  // Inline workers run one after another: a second one would wait at the first
  // iteration's barrier for a first that has already gone on.
  if (shape.fanout == Fanout::kInline && shape.workers != 1)
    throw RunError("internal: an inline timed loop runs exactly one worker, not " + std::to_string(shape.workers));
  SharedRecords shared(shape.workers, shape.iterations);
  Barrier barrier(shared.barrier_state());
  const bool across = shape.cluster && shape.cluster->multi();
  barrier.init(static_cast<uint32_t>(shape.workers + (across ? 1 : 0)));
  Coordinator coordinator(shape, barrier);
  std::thread coordinating;
  if (across) {
    coordinating = std::thread([&] { coordinator.run(); });
    coordinator.wait_started();
  }
  struct Join {
    std::thread& t;
    Barrier& b;
    ~Join() {
      if (!t.joinable()) return;
      b.abort();  // only reached early on a failure: the coordinator must not wait on
      t.join();
    }
  } join{coordinating, barrier};
  // A failure across ranks says so, rather than the local echo it caused.
  const auto across_ranks_error = [&]() {
    join.t.join();
    if (!coordinator.error().empty()) throw ClusterTimeout(coordinator.error());
    if (coordinator.remote_failed()) throw RankStopped("stopped: another rank failed");
  };
  const auto host = [&](const std::function<void()>& run) {
    if (hooks.host)
      hooks.host(run);
    else
      run();
  };
  try {
    ProgressScope progress(shape.progress_name, shape.progress_bytes, shape.warmup, shape.iterations);
    // Polled by this process while the workers run: the setup's progress on a
    // terminal, and the watchdog.
    const std::string unit = shape.worker_name.substr(shape.worker_name.find_last_of(' ') + 1);
    Watch watch = [&] {
      int ready = 0;
      for (int w = 0; w < shared.workers(); ++w) ready += observe(shared.worker(w).phase) > kSetup ? 1 : 0;
      progress_setup(ready, shared.workers(), unit);
      return shape.timeout_ns > 0 ? stalled_worker(shared, shape) : std::string();
    };
    if (shape.fanout == Fanout::kFork) {
      // Each child hosts its one worker.
      run_workers(Fanout::kFork, shape.workers,
                  [&](int w) { host([&] { run_worker(w, shape, hooks, shared, barrier); }); }, barrier, watch,
                  shape.worker_name);
    } else {
      const auto in_process = [&] {
        host([&] {
          run_workers(shape.fanout, shape.workers, [&](int w) { run_worker(w, shape, hooks, shared, barrier); },
                      barrier);
        });
      };
      if (shape.isolate)
        run_isolated(in_process, barrier, watch);
      else
        in_process();
    }
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception&) {
    if (across) across_ranks_error();
    throw;
  }
  if (across) across_ranks_error();

  std::vector<std::vector<IterationRecord>> records(static_cast<size_t>(shape.workers));
  for (int w = 0; w < shape.workers; ++w)
    for (int it = 0; it < shape.iterations; ++it) records[static_cast<size_t>(w)].push_back(shared.record(w, it));
  LoopResult out = aggregate(records);
  for (int w = 0; w < shape.workers; ++w) {
    const WorkerShared& s = shared.worker(w);
    out.setup_end = std::max(out.setup_end, s.setup_done);
    out.retries += s.retries;
    if (s.placed) out.placements.push_back(s.placement);
    const std::string note(s.note, strnlen(s.note, sizeof s.note));
    if (!note.empty() && std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
      out.notes.push_back(note);
  }
  return out;
}

}  // namespace ds
