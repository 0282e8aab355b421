// The one timed loop every measurement runs through (copy, trans, aio), as named
// phases (docs/measurement.md says what each number means):
//   host     each process that hosts workers sets up what they share (a runtime,
//            a coordinating device) around them;
//   setup    each worker makes its buffers, streams, files (untimed);
//   iterate  warm-up, then measured iterations: every worker starts each one at a
//            barrier, the loop stamps `start` before and `done` after, the worker
//            stamps when its last submission returned and says what its engine
//            measured; a worker's untimed hooks run before that barrier and
//            after `done` (--validate each);
//   finish   each worker checks its data (untimed);
//   gather   the records of every worker come back to this process (they live in
//            memory shared with forked children) and are aggregated per iteration.
// Workers run inline, in threads, or in forked children; `isolate` runs inline and
// thread workers in one child process, so this process never initialises a runtime
// that a later case would fork from.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "output/result.h"
#include "runner/fanout.h"
#include "topology/placement.h"

namespace ds {

class Cluster;

// A time the worker writes while the watchdog reads it, perhaps from another
// process through shared memory: every write and every read of it is the same
// atomic (an __atomic store with release, a load with acquire, on a plain
// int64_t), so `r.submitted = now_ns()` in a worker is a publication, never a
// plain write racing the watchdog's read.
class PublishedNs {
 public:
  PublishedNs() = default;
  PublishedNs(int64_t ns) { store(ns); }  // implicit, as the int64_t it stands for
  PublishedNs(const PublishedNs& other) { store(other.load()); }
  PublishedNs& operator=(const PublishedNs& other) {
    store(other.load());
    return *this;
  }
  PublishedNs& operator=(int64_t ns) {
    store(ns);
    return *this;
  }
  operator int64_t() const { return load(); }
  int64_t load() const { return __atomic_load_n(&ns_, __ATOMIC_ACQUIRE); }
  void store(int64_t ns) { __atomic_store_n(&ns_, ns, __ATOMIC_RELEASE); }

 private:
  int64_t ns_ = 0;
};
static_assert(sizeof(PublishedNs) == sizeof(int64_t), "a published time is one 64-bit word");

// One worker's times in one iteration, on the monotonic clock (ns).
struct IterationRecord {
  int64_t start = 0;          // just before its first submission (the loop)
  PublishedNs submitted = 0;  // its last submission returned (the worker; the watchdog reads it live)
  int64_t done = 0;       // its work confirmed complete (the loop)
  int64_t measured = 0;   // the engine's own duration: device events, copy threads, the I/O pass
};

// What one worker does; made in the process and thread that runs it.
class LoopWorker {
 public:
  virtual ~LoopWorker() = default;
  // One iteration (`index` counts from 0, warm-up included): issue everything, set
  // r.submitted when the last submission returned, return when all is complete.
  virtual void iterate(int index, IterationRecord& r) = 0;
  // After `done` was stamped: the engine-side duration of that iteration.
  virtual int64_t measured_ns(const IterationRecord& r) = 0;
  // Untimed work around every iteration (warm-up included; `index` as for
  // iterate()), e.g. --validate each: before_iteration runs before the barrier that
  // starts the iteration, after_iteration after `done` was stamped and
  // measured_ns() read, so neither is ever between `start` and `done`. A throw
  // fails the run like one from iterate(). Default: nothing.
  virtual void before_iteration(int /*index*/) {}
  virtual void after_iteration(int /*index*/) {}
  // After the last iteration, untimed: release what the iterations used, check data.
  virtual void finish() {}
  // Said back to the caller after finish(): what ran differently from what was
  // asked (empty: nothing), and how many operations had to be redone.
  virtual std::string note() const { return {}; }
  virtual uint64_t retries() const { return 0; }
  // Where it ran and where its buffers are (--numa), read once when its setup is
  // done, before the first iteration; null: nothing to record.
  virtual const WorkerPlacement* placement() const { return nullptr; }
};

struct LoopShape {
  int workers = 1;
  Fanout fanout = Fanout::kInline;
  bool isolate = false;  // inline/threads: in one child process (fork workers are children anyway)
  // The workers' iteration hooks do real work: after `done` each worker also waits
  // at the barrier before after_iteration, so no worker's hooks run while another
  // is still inside its timed part (an extra barrier per iteration).
  bool hooks_apart = false;
  // The watchdog (--timeout): a worker that makes no progress (changes phase,
  // finishes submitting, completes an iteration) for this long stops the run with
  // the worker, phase and iteration named; its process is killed. 0: never.
  int64_t timeout_ns = 60LL * 1000000000LL;
  // How the watchdog names things: "device 3: no progress for 60 s in iteration 17
  // (copy submitted, waiting for completion)".
  std::string worker_name = "device";
  std::string unit = "iteration";
  std::string running = "submitting copies";                  // before `submitted`
  std::string waiting = "copy submitted, waiting for completion";  // after it
  int warmup = 0;
  int iterations = 1;
  std::string progress_name;      // for the progress line on a terminal
  uint64_t progress_bytes = 0;
  // Across ranks (src/cluster): with a cluster of more than one rank, every
  // iteration starts on every rank together. A coordinating thread of this
  // process joins the workers' barrier as one more party: once every local
  // worker has arrived it waits for every rank (Cluster::agree) and only then
  // lets them go. A local failure is this rank's "no" at the next agreement; a
  // "no" from another rank stops the workers (RankStopped). Null or one rank:
  // nothing changes. The workers (forked children too) never call the cluster.
  Cluster* cluster = nullptr;
};

struct LoopHooks {
  // Runs in each process that hosts workers (each fork child; the isolated child;
  // else this process) around them: set up what they share, call run_workers(),
  // tear down. Default: just run them.
  std::function<void(const std::function<void()>& run_workers)> host;
  // Makes worker w (setup); runs where the worker runs.
  std::function<std::unique_ptr<LoopWorker>(int w)> make_worker;
};

// Per measured iteration, over the workers (ns): the longest submission, the
// longest engine-side time, the end-to-end time from the first start to the last
// completion, and the spread of the starts.
struct LoopResult {
  std::vector<int64_t> submit, measured, wall, start_skew;
  // Per worker (not per iteration): the mean of its own `measured` over the
  // measured iterations, for a per-worker bandwidth.
  std::vector<double> worker_measured_avg;
  int64_t setup_end = 0;           // when the last worker was set up (monotonic ns)
  std::vector<std::string> notes;  // the workers' notes, each once, in worker order
  uint64_t retries = 0;            // over all workers
  std::vector<WorkerPlacement> placements;  // the workers' placement(), in worker order (those that had one)
};

// Called by a worker during a long phase (aio: after each batch of completions):
// counts as progress for the watchdog. Does nothing outside a timed loop's worker.
void loop_progress();
// A worker's own helper thread (load --offload-ratio's offload side): made in the
// worker's setup with the worker's token, its loop_progress() counts for that
// worker. The token is null outside a worker; adopting null changes nothing.
const void* loop_progress_token();
void adopt_loop_progress(const void* token);

// Throws what a worker threw (RunError naming the device for fork/thread workers),
// Interrupted on Ctrl-C; every worker is stopped first.
LoopResult run_timed_loop(const LoopShape& shape, const LoopHooks& hooks);

// A result's stages from a loop: "Submit", `measured` (the engine's own time:
// "Copy", "IO"), "Wall" and "StartSkew", each over the measured iterations.
std::vector<Stage> loop_stages(const LoopResult& loop, const std::string& measured);

// The per-iteration aggregation above, over records[worker][iteration].
LoopResult aggregate(const std::vector<std::vector<IterationRecord>>& records);

}  // namespace ds
