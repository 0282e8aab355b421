// The one harness every measurement runs on (copy, aio, load; later offload,
// duplex, tune). A measurement is a small type that says what it needs and what it
// moved; run_measurement() owns everything around the timed loop, in this order:
//   pre-flight  the measurement's own checks (devices), the placement plan, then its
//               memory needs against the machine (refused up front, never OOM-killed);
//   prepare     its shared, untimed setup (shard files, a shared region), timed
//               into the first result's setup time;
//   begin       the writer gets the run's header;
//   phases      each phase through the timed loop (runner/timed_loop): its shape,
//               the watchdog, the fan-out to workers (inline, threads, forked,
//               across ranks), one worker per device (or per rank); then its
//               result: the header fields the harness fills (name, iterations,
//               setup time, notes, placement, validation), the bytes, stages and
//               extras the measurement declares;
//   finish      the measurement's last untimed work, the writer finished, what is
//               left to say (short transfers redone).
// Notes go through a Notes sink, never straight to stderr.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/notes.h"
#include "output/result.h"
#include "backends/select.h"
#include "runner/preflight.h"
#include "runner/timed_loop.h"

namespace ds {

class Cluster;

// A crude estimate of how long a run takes, said up front (plan_line): its memory
// filled at a nominal rate, then the bytes its timed loops move (warm-up included)
// at a nominal rate for what it measures. Only an order of magnitude: the run
// measures the real rates.
struct TimeEstimate {
  uint64_t moved = 0;      // bytes over every phase, warm-up included
  uint64_t rounds = 0;     // iterations (epochs, rounds) over every phase, warm-up included
  std::string unit;        // "iteration", "epoch"
  double nominal_gib_s = 1;  // the assumed rate of what is measured
  // Of the memory allocated, the bytes setup does not fill (a paged pool's slots that
  // hold none of the request's blocks): left out of the "filling" figure.
  uint64_t unfilled = 0;
};
// The bytes a plan line counts as allocated: host, and device memory that is not host memory.
uint64_t allocated_bytes(const MemoryNeeds& needs);
// The nominal rate setup fills memory at (page faults and the data pattern), GiB/s.
constexpr double kNominalFillGibS = 2.0;

// The line said before a measurement sets anything up: "<what> will allocate host X,
// device D x Y, /dev/shm Z, disk W; about T (filling F at a nominal 2 GiB/s, then
// R iterations moving M at a nominal N GiB/s)". The figures are `needs`' own.
std::string plan_line(const std::string& what, const MemoryNeeds& needs, const TimeEstimate& time);

class Measurement {
 public:
  virtual ~Measurement() = default;

  // Checks that need the backend or the cluster before anything is made (UsageError,
  // RunError), and what the run will hold: refused up front by the harness.
  virtual void check() {}
  virtual MemoryNeeds needs() const = 0;
  virtual NeedsText needs_text() const = 0;
  // What the run is estimated to move, for the line said before setup.
  virtual TimeEstimate estimate() const = 0;
  // Placement (--numa): what was asked and the device whose node worker w goes to,
  // in worker order. The harness makes the plan after check() (a node or device
  // that is not there: UsageError; an explicit request the environment refuses:
  // RunError; what it degrades, said once) and hands it over with placed().
  // Null: the measurement places nothing.
  virtual const NumaRequest* numa_request() const { return nullptr; }
  virtual std::vector<int> placed_devices() const { return {}; }
  virtual void placed(const NumaPlan& /*plan*/) {}
  // Shared setup, untimed: counted into the first phase's setup time.
  virtual void prepare() {}

  virtual size_t phases() const { return 1; }
  // The phase's timed loop: workers, fan-out, warm-up and iterations, how the
  // watchdog names things; `progress_name` is also the result's name. The harness
  // sets the watchdog's timeout and the cluster (timeout_ns, cluster).
  virtual LoopShape shape(size_t phase) const = 0;
  // In each process that hosts the phase's workers, around them (default: run them).
  virtual void host(size_t /*phase*/, const std::function<void()>& run_workers) { run_workers(); }
  virtual std::unique_ptr<LoopWorker> make_worker(size_t phase, int w) = 0;
  // In this process, right before and after the phase's loop (disk counters, rank
  // barriers).
  virtual void before_loop(size_t /*phase*/) {}
  virtual void after_loop(size_t /*phase*/) {}
  // What the phase moved: from/to/method, bytes and count, stages, extras, notes
  // (said through `notes` as well where they are to be said), and with validation
  // when its checks run (r.validate: "end", "each"). The harness has set the name
  // and the setup time; it marks the result validated once check_result() passed.
  virtual void describe(size_t phase, const LoopResult& loop, CaseResult& r, Notes& notes) = 0;
  // After describe(), before the result is written: untimed checks of what the
  // phase left (aio: the dumped files read back).
  virtual void check_result(size_t /*phase*/) {}
  // After the last phase, before the writer finishes (rank barriers at the end).
  virtual void finish() {}
  // After the writer finished, on success: what is kept, what to say last.
  virtual void done(Notes& /*notes*/) {}
  // What the loop's retries are, for the closing line ("short transfers"); empty:
  // none are counted.
  virtual std::string retried() const { return {}; }
};

struct HarnessContext {
  HarnessContext(ResultWriter& writer, Notes& notes, const SelectedBackend* selected, Cluster* cluster,
                 int timeout_s, std::function<void()> begin = {}, std::string* current = nullptr)
      : writer(writer), notes(notes), selected(selected), begin(std::move(begin)), current(current),
        cluster(cluster), timeout_s(timeout_s) {}
  ResultWriter& writer;
  Notes& notes;
  const SelectedBackend* selected = nullptr;  // what placement is planned for
  std::function<void()> begin;      // the writer's header; empty: already written
  std::string* current = nullptr;   // the phase measured, for a failure record
  Cluster* cluster = nullptr;       // across ranks: every iteration starts together
  int timeout_s = 60;               // --timeout (0: never)
  bool finish_writer = true;        // copy runs several cases into one writer
  // A run of several cases: what the case before planned (its plan line without
  // its name). A case that plans the same is not announced again.
  std::string* previous_plan = nullptr;
};

// Runs `m` as above. Throws what a worker or the measurement threw, after the
// workers were stopped; what the measurement holds is released by its destructor.
void run_measurement(Measurement& m, const HarnessContext& ctx);

// The setup time of a result: `prepared_s` (the shared setup, first phase only)
// plus from the loop's start to its last worker's setup.
double setup_seconds(double prepared_s, int64_t loop_start_ns, const LoopResult& loop);

// A worker's notes for the harness, typed: `kind` is the measurement's own word
// for what the note means ("" for one said as it is). They travel from a worker's
// process as one text (LoopWorker::note(), LoopResult::notes); these two are the
// only places that know how.
struct WorkerNote {
  std::string kind;
  std::string text;
};
std::string encode_worker_notes(const std::vector<WorkerNote>& notes);
// Every worker's notes, in worker order, each (kind, text) once.
std::vector<WorkerNote> decode_worker_notes(const std::vector<std::string>& texts);
// The workers' notes as they are: each kept in the result and said as "<name>: <note>".
void keep_worker_notes(const LoopResult& loop, CaseResult& r, Notes& notes);

}  // namespace ds
