#include "runner/timed_loop.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <new>

#include "core/clock.h"
#include "core/error.h"
#include "core/stats.h"
#include "output/progress.h"
#include "runner/barrier.h"
#include "runner/shared_mapping.h"

namespace ds {

namespace {

// A worker that has not reached the next iteration's barrier by then is stuck.
constexpr int64_t kBarrierTimeoutNs = 300LL * 1000000000LL;

constexpr size_t kNoteBytes = 512;

// What each worker leaves for this process, next to its iteration records.
struct WorkerShared {
  int64_t setup_done;
  uint64_t retries;
  char note[kNoteBytes];  // NUL-terminated
};

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

// setup, iterate, finish: one worker's part, wherever it runs.
void run_worker(int w, const LoopShape& shape, const LoopHooks& hooks, SharedRecords& shared, Barrier& barrier) {
  std::unique_ptr<LoopWorker> worker = hooks.make_worker(w);
  WorkerShared& mine = shared.worker(w);
  mine.setup_done = now_ns();
  const int total = shape.warmup + shape.iterations;
  for (int it = 0; it < total; ++it) {
    worker->before_iteration(it);  // untimed: before the barrier that starts the iteration
    barrier.wait(kBarrierTimeoutNs);
    IterationRecord r;
    r.start = now_ns();
    worker->iterate(it, r);
    r.done = now_ns();
    r.measured = worker->measured_ns(r);
    if (it >= shape.warmup) shared.record(w, it - shape.warmup) = r;
    if (w == 0) progress_iteration(it + 1);  // after `done`: outside the timing
    if (shape.hooks_apart) barrier.wait(kBarrierTimeoutNs);  // every worker is past its `done`
    worker->after_iteration(it);  // untimed: after `done`
  }
  worker->finish();
  std::snprintf(mine.note, sizeof mine.note, "%s", worker->note().c_str());
  mine.retries = worker->retries();
}

}  // namespace

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
  return out;
}

std::vector<Stage> loop_stages(const LoopResult& loop, const std::string& measured) {
  return {{"Submit", compute_stats(loop.submit)},
          {measured, compute_stats(loop.measured)},
          {"Wall", compute_stats(loop.wall)},
          {"StartSkew", compute_stats(loop.start_skew)}};
}

LoopResult run_timed_loop(const LoopShape& shape, const LoopHooks& hooks) {
  // Inline workers run one after another: a second one would wait at the first
  // iteration's barrier for a first that has already gone on.
  if (shape.fanout == Fanout::kInline && shape.workers != 1)
    throw RunError("internal: an inline timed loop runs exactly one worker, not " + std::to_string(shape.workers));
  SharedRecords shared(shape.workers, shape.iterations);
  Barrier barrier(shared.barrier_state());
  barrier.init(static_cast<uint32_t>(shape.workers));
  const auto host = [&](const std::function<void()>& run) {
    if (hooks.host)
      hooks.host(run);
    else
      run();
  };
  {
    ProgressScope progress(shape.progress_name, shape.progress_bytes, shape.warmup, shape.iterations);
    if (shape.fanout == Fanout::kFork) {
      // Each child hosts its one worker.
      run_workers(Fanout::kFork, shape.workers,
                  [&](int w) { host([&] { run_worker(w, shape, hooks, shared, barrier); }); }, barrier);
    } else {
      const auto in_process = [&] {
        host([&] {
          run_workers(shape.fanout, shape.workers, [&](int w) { run_worker(w, shape, hooks, shared, barrier); },
                      barrier);
        });
      };
      if (shape.isolate)
        run_isolated(in_process, barrier);
      else
        in_process();
    }
  }

  std::vector<std::vector<IterationRecord>> records(static_cast<size_t>(shape.workers));
  for (int w = 0; w < shape.workers; ++w)
    for (int it = 0; it < shape.iterations; ++it) records[static_cast<size_t>(w)].push_back(shared.record(w, it));
  LoopResult out = aggregate(records);
  for (int w = 0; w < shape.workers; ++w) {
    const WorkerShared& s = shared.worker(w);
    out.setup_end = std::max(out.setup_end, s.setup_done);
    out.retries += s.retries;
    const std::string note(s.note, strnlen(s.note, sizeof s.note));
    if (!note.empty() && std::find(out.notes.begin(), out.notes.end(), note) == out.notes.end())
      out.notes.push_back(note);
  }
  return out;
}

}  // namespace ds
