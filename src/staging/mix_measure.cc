#include "staging/mix_measure.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <typeinfo>

#include "aio/io_loop.h"
#include "aio/workspace_set.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/stats.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "copy_methods/initiator.h"
#include "measurement/measurement.h"
#include "memory/buffer.h"
#include "runner/numa_plan.h"
#include "runner/preflight.h"
#include "runner/shared_mapping.h"
#include "runner/timed_loop.h"
#include "staging/block_files.h"
#include "staging/mix_stages.h"
#include "staging/staged_side.h"

namespace ds {

namespace {

Layout with_tasks(const Layout& l, uint64_t tasks) {
  if (l.per_fragment_regions()) return Layout::block(l.task_fragments(), tasks);
  return Layout::uniform(l.task_fragments().front(), tasks, l.frags_option());
}

std::string number(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", v);
  return s;
}

}  // namespace

uint64_t mix_offload_pool(uint64_t load_pool, uint64_t load_blocks, uint64_t offload_blocks) {
  // ceil(pool x n / blocks) without the product: the whole blocks' part, then the rest's.
  const uint64_t whole = checked_mul(load_pool / load_blocks, offload_blocks, "option --pool-blocks: the offload side's pool");
  const uint64_t rest = static_cast<uint64_t>(
      std::ceil(static_cast<long double>(load_pool % load_blocks) * offload_blocks / load_blocks));
  return std::max(offload_blocks, whole + rest);
}

BlockTable mix_offload_table(const BlockTable& load, uint64_t load_blocks, uint64_t offload_blocks) {
  if (load.kind == TableKind::kFile)
    throw UsageError("option --block-table " + load.label + " with --offload-ratio: a FILE table places the load's " +
                     std::to_string(load_blocks) + " block" + (load_blocks == 1 ? "" : "s") + ", and the offload side's " +
                     std::to_string(offload_blocks) + " need a table that can be sized: give sequential or random[:SEED]");
  const uint64_t pool = mix_offload_pool(load.pool, load_blocks, offload_blocks);
  if (pool > kMaxPoolBlocks)
    throw UsageError("option --pool-blocks " + std::to_string(load.pool) + " with --offload-ratio: the offload side's pool of " +
                     std::to_string(pool) + " slots is more than " + std::to_string(kMaxPoolBlocks) + " (2^40)");
  return sibling_table(load, offload_blocks, pool);
}

StagedParams mix_offload_params(const StagedParams& load, double ratio, std::string* note) {
  if (!(ratio > 0) || ratio > kMaxOffloadRatio)
    throw UsageError("option --offload-ratio got '" + number(ratio) + "': accepts a number above 0 and at most " +
                     number(kMaxOffloadRatio) + " (offloaded blocks per loaded block)");
  const uint64_t blocks = load.files();
  const double want = ratio * static_cast<double>(blocks);
  const auto n = static_cast<uint64_t>(std::max(1.0, std::round(want)));
  StagedParams o = load;
  o.shared = false;  // every card offloads what it computed, to files of its own
  o.layout = with_tasks(load.layout, n * load.tasks_per_file);
  if (!load.table.slots.empty()) {
    o.table = mix_offload_table(load.table, blocks, n);
    const std::string slots = "option --pool-blocks with --offload-ratio: the offload side's pool's ";
    checked_mul(checked_mul(o.table.pool, o.tasks_per_file, slots + "tasks"), o.layout.task_bytes(), slots + "bytes");
  }
  if (note && static_cast<double>(n) != want)
    *note = "--offload-ratio " + number(ratio) + ": " + number(ratio) + " x " + std::to_string(blocks) +
            " blocks = " + number(want) + ", offloading " + std::to_string(n) + " block" + (n == 1 ? "" : "s") +
            " (ratio " + number(static_cast<double>(n) / static_cast<double>(blocks)) + ")";
  return o;
}

std::string mix_tables_note(const StagedParams& load, const StagedParams& offload) {
  return "--offload-ratio with --block-table " + load.table.label + ": the load's " + std::to_string(load.files()) +
         " blocks at their slots of " + table_text(load.table) + ", the offload's " + std::to_string(offload.files()) +
         " at their slots of a table of their own, " + table_text(offload.table);
}

uint64_t mix_device_bytes(const StagedParams& load, const StagedParams& offload) {
  return load.device_layout().region_bytes() + offload.device_layout().region_bytes();
}

namespace {

// The three passes of a round, one loop iteration each, in this order.
enum Pass { kTogether = 0, kLoadAlone = 1, kOffloadAlone = 2, kPasses = 3 };
// The offload side's pattern owner: apart from every load side's.
constexpr int kOffloadOwner = 1 << 20;

// A side's pass: its wall and busy times, and its busy times up to the instant the
// first of the pass's directions ended (all of them when it ended first, or alone).
struct SideTimes {
  int64_t wall_ns, io_busy_ns, copy_busy_ns, io_busy_overlap_ns, copy_busy_overlap_ns;
};
// One card's loop iteration, written in its worker (a forked child) into memory
// shared with this process; a direction that did not run is zero.
struct MixRecord {
  SideTimes load, offload;
  // The worker process's CPU time over the pass, and its two transfer loops' threads'
  // (the load's, the offload's: CLOCK_THREAD_CPUTIME_ID), which on a card spin
  // looking for copy completions.
  int64_t cpu_ns, loop_cpu_ns;
  // Together: from the later of the two directions' first submissions to the first
  // direction's end (both running), and the worker's and its loops' CPU time over it,
  // read at the later side's loop start and at that end. Alone: the pass and its CPU times.
  int64_t overlap_ns, cpu_overlap_ns, loop_cpu_overlap_ns;
};
// One card's CPUs (its worker's affinity, as placed), written once at setup.
struct CpuRecord {
  cpu_set_t cpus;
};

int64_t cpu_clock_ns(clockid_t clock) {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;  // a thread not started yet: none
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

clockid_t this_thread_cpu_clock() {
  clockid_t c = CLOCK_THREAD_CPUTIME_ID;
  if (pthread_getcpuclockid(pthread_self(), &c) != 0) throw RunError("pthread_getcpuclockid failed");
  return c;
}

// The threads whose pipelines run the transfer loops: the worker's (load) and the
// offload thread's, each set by that thread before its first pass.
struct LoopClocks {
  clockid_t load = CLOCK_THREAD_CPUTIME_ID, offload = CLOCK_THREAD_CPUTIME_ID;
  bool have_load = false, have_offload = false;
  MixCpuMark mark() const {
    MixCpuMark m;
    m.process_ns = cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID);
    m.loops_ns = (have_load ? cpu_clock_ns(load) : 0) + (have_offload ? cpu_clock_ns(offload) : 0);
    return m;
  }
};

// One side's marks in a pass: at its loop's start, and at its end when it ended first.
struct SideMarks {
  MixCpuMark start, first_end;
};

struct MixSetup {
  const StagedParams& load;
  const StagedParams& offload;
  Backend& backend;
  const std::vector<CardFiles>& load_sets;     // one, or one per card
  const std::vector<CardFiles>& offload_sets;  // one per card
  MixRecord* records;                          // [card][loop iteration]
  CpuRecord* cpus;                             // [card]
  int loop_iterations;
  bool direct;
  const NumaPlan& numa;
};

// What a side threw, rethrown: a failure of the runtime's or the disk's names the
// side, "offload: write of block 3 (/ws/...): ..."; Interrupted, a stopped worker,
// a closed output: as they are.
[[noreturn]] void rethrow_side(const char* side, const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const RunError& r) {
    if (typeid(r) != typeid(RunError) && !dynamic_cast<const IoFailure*>(&r)) throw;
    throw RunError(std::string(side) + ": " + r.what());
  }
}

// The offload side's thread: made at setup (never while timed), bound to the
// offload side's device handle, it runs one pipelined pass each time it is told to.
class OffloadThread {
 public:
  // `marks`: the CPU times at each pass's start and, when its side ends first, at its
  // end (read by the worker after wait()); `clocks`: its thread's clock set in it.
  OffloadThread(Device& dev, StagedSide& side, LoopClocks& clocks, SideMarks& marks)
      : dev_(dev), side_(side), clocks_(clocks), marks_(marks), token_(loop_progress_token()) {
    thread_ = std::thread([this] { main(); });
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] { return ready_; });
    if (error_) {
      lk.unlock();
      stop();
      rethrow_side("offload", error_);
    }
  }
  ~OffloadThread() { stop(); }
  OffloadThread(const OffloadThread&) = delete;
  OffloadThread& operator=(const OffloadThread&) = delete;

  void start() {
    std::lock_guard<std::mutex> lk(m_);
    ++asked_;
    cv_.notify_all();
  }
  // Waits for the pass started last; its times, or what it threw.
  PipelineTimes wait(std::exception_ptr& error) {
    std::unique_lock<std::mutex> lk(m_);
    cv_.wait(lk, [&] { return ran_ == asked_; });
    error = error_;
    error_ = nullptr;
    return times_;
  }
  void stop() {
    {
      std::lock_guard<std::mutex> lk(m_);
      stop_ = true;
      cv_.notify_all();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void main() {
    adopt_loop_progress(token_);  // its completions are the worker's progress
    std::unique_lock<std::mutex> lk(m_);
    try {
      clocks_.offload = this_thread_cpu_clock();
      clocks_.have_offload = true;
      dev_.bind_thread();
    } catch (...) {
      error_ = std::current_exception();
    }
    ready_ = true;
    cv_.notify_all();
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || asked_ != ran_; });
      if (stop_) return;
      lk.unlock();
      PipelineTimes t;
      std::exception_ptr e;
      try {
        marks_.start = clocks_.mark();
        t = side_.pipelined();
        if (t.ended_first) marks_.first_end = clocks_.mark();
      } catch (...) {
        e = std::current_exception();
      }
      lk.lock();
      times_ = t;
      error_ = e;
      ran_ = asked_;
      cv_.notify_all();
    }
  }

  Device& dev_;
  StagedSide& side_;
  LoopClocks& clocks_;
  SideMarks& marks_;
  const void* token_;
  std::mutex m_;
  std::condition_variable cv_;
  uint64_t asked_ = 0, ran_ = 0;
  bool ready_ = false, stop_ = false;
  PipelineTimes times_;
  std::exception_ptr error_;
  std::thread thread_;  // last: started once the rest is made
};

// The together passes' values of the measured rounds (every loop iteration is one pass).
Stage together_stage(const std::string& name, const std::vector<int64_t>& all) {
  Stage s;
  s.name = name;
  for (size_t i = kTogether; i < all.size(); i += kPasses) s.samples.push_back(all[i]);
  s.ns = compute_stats(s.samples);
  return s;
}

SideTimes side_times(const PipelineTimes& t) {
  return {t.wall_ns, t.io_busy_ns, t.copy_busy_ns, t.io_busy_first_ns, t.copy_busy_first_ns};
}

// One card: a device handle per side, both sides, the offload side's thread.
class MixWorker : public LoopWorker {
 public:
  MixWorker(const MixSetup& s, int card) : placed_(s.numa, card), s_(s), card_(card) {
    dev_ = s.backend.open_device(card);
    off_dev_ = s.backend.open_device(card);
    if (!s.backend.device_memory_is_host()) {
      const uint64_t both = mix_device_bytes(s.load, s.offload);
      NeedsText t{"load", "device memory", format_bytes(both) + " of KV regions (load and offload)",
                  "lower -s, -n or --offload-ratio"};
      check_device_needs(both, dev_->free_memory(), card, t);
    }
    load_ = make_side(*dev_, StagedDir::kLoad, s.load,
                      s.load_sets.size() == 1 ? s.load_sets[0] : s.load_sets[static_cast<size_t>(card)], "staging");
    off_ = make_side(*off_dev_, StagedDir::kOffload, s.offload, s.offload_sets[static_cast<size_t>(card)],
                     "offload staging");
    CpuRecord& mine = s.cpus[card];
    CPU_ZERO(&mine.cpus);
    if (sched_getaffinity(0, sizeof mine.cpus, &mine.cpus) != 0) throw sys_error("sched_getaffinity", errno);
    thread_ = std::make_unique<OffloadThread>(*off_dev_, *off_, clocks_, off_marks_);
  }
  ~MixWorker() override { thread_.reset(); }

  void before_iteration(int index) override {
    if (!s_.load.validate) return;
    const int pass = index % kPasses;
    if (pass != kOffloadAlone) load_->poison();
    if (pass != kLoadAlone) off_->poison();
  }
  void iterate(int index, IterationRecord& r) override;
  int64_t measured_ns(const IterationRecord&) override { return wall_ns_; }
  // --validate: what each pass moved, after every pass (warm-up included), untimed.
  void after_iteration(int index) override {
    if (!s_.load.validate) return;
    const int pass = index % kPasses, round = index / kPasses;
    const std::string when = (round < s_.load.warmup ? "warm-up round " + std::to_string(round)
                                                     : "round " + std::to_string(round - s_.load.warmup)) +
                             (pass == kTogether ? " (together)" : " (alone)");
    if (pass != kOffloadAlone) load_->check(when);
    if (pass != kLoadAlone) off_->check(when);
  }
  void finish() override {
    thread_.reset();
    load_->finish();
    off_->finish();
  }
  uint64_t retries() const override { return short_transfers_; }
  std::string note() const override { return encode_worker_notes({{"", load_->note()}, {"", off_->note()}}); }
  const WorkerPlacement* placement() const override { return &placed_.record(); }

 private:
  std::unique_ptr<StagedSide> make_side(Device& dev, StagedDir dir, const StagedParams& p, const CardFiles& files,
                                        const char* what) {
    StagedSideConfig c;
    c.dir = dir;
    c.p = &p;
    c.files = &files;
    c.direct_io = s_.direct;
    c.what = what;
    c.first_end = &first_end_;
    c.pipelines_per_card = 2;  // the load and the offload at once
    return std::make_unique<StagedSide>(dev, s_.backend, c, placed_.record());
  }

  PlacementScope placed_;  // first: the CPUs and memory policy its buffers are made under
  const MixSetup& s_;
  int card_;
  // Per pass: the first direction's end (both sides' pipelines set it, the first
  // wins); each side's CPU marks (the offload's written on its thread before wait()).
  std::atomic<int64_t> first_end_{INT64_MAX};
  LoopClocks clocks_;
  SideMarks load_marks_, off_marks_;
  std::unique_ptr<Device> dev_, off_dev_;  // first made, last gone
  std::unique_ptr<StagedSide> load_, off_;
  std::unique_ptr<OffloadThread> thread_;  // after the side it runs
  int64_t wall_ns_ = 0;
  uint64_t short_transfers_ = 0;
};

// Together: the offload thread told to go, then the load on this thread, then the
// wait for the offload; the pass is from the start of both to the end of both.
void MixWorker::iterate(int index, IterationRecord& r) {
  const int pass = index % kPasses;
  const bool load = pass != kOffloadAlone, offload = pass != kLoadAlone;
  first_end_.store(INT64_MAX);
  if (!clocks_.have_load) {  // the thread that runs iterate(), the load's pipeline (before the offload's first start)
    clocks_.load = this_thread_cpu_clock();
    clocks_.have_load = true;
  }
  const MixCpuMark cpu0 = clocks_.mark();
  const int64_t t0 = now_ns();
  if (offload) thread_->start();
  PipelineTimes lt, ot;
  std::exception_ptr load_error, offload_error;
  if (load) {
    try {
      load_marks_.start = clocks_.mark();
      lt = load_->pipelined();
      if (lt.ended_first) load_marks_.first_end = clocks_.mark();
    } catch (...) {
      load_error = std::current_exception();
    }
  }
  if (offload) ot = thread_->wait(offload_error);
  if (load_error) rethrow_side("load", load_error);
  if (offload_error) rethrow_side("offload", offload_error);
  wall_ns_ = now_ns() - t0;
  MixRecord& rec = s_.records[static_cast<size_t>(card_) * static_cast<size_t>(s_.loop_iterations) +
                              static_cast<size_t>(index)];
  const MixCpuMark cpu1 = clocks_.mark();
  rec.cpu_ns = cpu1.process_ns - cpu0.process_ns;
  rec.loop_cpu_ns = cpu1.loops_ns - cpu0.loops_ns;
  rec.load = side_times(lt);
  rec.offload = side_times(ot);
  const MixOverlapCpu o = mix_overlap_cpu({load, lt.start_ns, lt.ended_first, load_marks_.start, load_marks_.first_end},
                                          {offload, ot.start_ns, ot.ended_first, off_marks_.start, off_marks_.first_end},
                                          first_end_.load());
  rec.overlap_ns = o.overlap_ns;
  rec.cpu_overlap_ns = o.cpu_ns;
  rec.loop_cpu_overlap_ns = o.loop_cpu_ns;
  r.submitted = r.start + std::max(lt.submit_ns, ot.submit_ns);
  short_transfers_ += lt.short_transfers + ot.short_transfers;
}

}  // namespace

namespace {

// What both sides hold: each side's needs (staging/staged_side.h) added.
MemoryNeeds mix_needs(const StagedParams& load, const StagedParams& offload, const Backend& backend) {
  const MemoryNeeds l = staged_needs(load, backend), o = staged_needs(offload, backend);
  MemoryNeeds n;
  for (const auto& part : l.host_parts) n.add_host("load " + part.first, part.second);
  for (const auto& part : o.host_parts) n.add_host("offload " + part.first, part.second);
  n.locked_per_process = l.locked_per_process + o.locked_per_process;
  n.devices = l.devices;
  n.device_per_device = l.device_per_device + o.device_per_device;
  n.device_in_host = l.device_in_host;
  n.disk = l.disk + o.disk;
  // The records every card writes per loop iteration (the loop's and the mix's), in
  // memory shared with this process.
  n.add_records(static_cast<uint64_t>(load.devices) * kPasses *
                            (static_cast<uint64_t>(load.warmup) + static_cast<uint64_t>(load.iterations)) *
                            (sizeof(IterationRecord) + sizeof(MixRecord)));
  return n;
}

class MixMeasurement : public Measurement {
 public:
  MixMeasurement(const StagedParams& p, double ratio, const SelectedBackend& selected, Notes& notes)
      : p_(p), ratio_(ratio), off_(mix_offload_params(p, ratio, nullptr)), selected_(selected),
        backend_(*selected.backend), notes_(notes) {}

  void check() override;
  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override { return first_devices(p_.devices); }
  void placed(const NumaPlan& plan) override { numa_ = plan; }
  MemoryNeeds needs() const override { return mix_needs(p_, off_, backend_); }
  // Each round is three passes; each direction runs in two of them.
  TimeEstimate estimate() const override {
    TimeEstimate t;
    t.unit = "round";
    t.rounds = static_cast<uint64_t>(p_.warmup + p_.iterations);
    t.moved = t.rounds * 2 * (p_.layout.bytes() + off_.layout.bytes()) * static_cast<uint64_t>(p_.devices);
    t.nominal_gib_s = 1.0;
    // --block-table: each side's pool is allocated whole, its request's blocks of it are what is filled.
    if (!p_.table.slots.empty())
      t.unfilled = static_cast<uint64_t>(p_.devices) *
                   (mix_device_bytes(p_, off_) - p_.layout.region_bytes() - off_.layout.region_bytes());
    return t;
  }
  NeedsText needs_text() const override {
    return {"load", "host memory",
            format_bytes(p_.file_bytes()) + " x (" + std::to_string(p_.staging_buffers()) + " load + " +
                std::to_string(off_.staging_buffers()) + " offload) staging buffers per card" +
                (backend_.device_memory_is_host() ? " and the cards' KV regions" : ""),
            "lower --staging, -s, -n, -d or --offload-ratio"};
  }
  void prepare() override;
  LoopShape shape(size_t) const override {
    LoopShape s;
    s.progress_name = "load+offload";
    s.workers = p_.devices;
    s.fanout = Fanout::kFork;
    s.hooks_apart = p_.validate;
    s.warmup = p_.warmup * kPasses;
    s.iterations = p_.iterations * kPasses;
    s.progress_bytes = p_.layout.unit_bytes();
    s.worker_name = "card";
    s.running = s.waiting = "reads, copies and writes in flight";
    return s;
  }
  void host(size_t, const std::function<void()>& run_workers) override {
    backend_.init_process();  // in each child
    run_workers();
  }
  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override { return std::make_unique<MixWorker>(*setup_, w); }
  void describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) override;
  std::string retried() const override { return "short reads and writes"; }
  void done(Notes& notes) override;

 private:
  MixRecord& record(int card, size_t it) const {
    return setup_->records[static_cast<size_t>(card) * static_cast<size_t>(setup_->loop_iterations) + it];
  }
  Stage slowest(const std::string& name, int pass, SideTimes MixRecord::*side) const;
  Stage every(const std::string& name, int pass, SideTimes MixRecord::*side, int64_t SideTimes::*what) const;
  MixDirection direction(SideTimes MixRecord::*side, const StagedParams& p, int alone) const;
  void put_mix(CaseResult& r) const;
  std::string brief() const;
  // --block-table: ", each block at its slot of its own paged pool (load: ..., offload: ...)".
  std::string tables_brief() const {
    if (p_.table.slots.empty()) return "";
    return ", each block at its slot of its direction's own paged pool (load --block-table " + table_text(p_.table) +
           ", offload " + table_text(off_.table) + ")";
  }

  const StagedParams& p_;
  double ratio_;
  StagedParams off_;
  const SelectedBackend& selected_;
  Backend& backend_;
  Notes& notes_;
  NumaPlan numa_;
  WorkspaceSet ws_;
  bool direct_ = true;
  std::vector<CardFiles> load_sets_, off_sets_;
  std::unique_ptr<SharedMapping> records_, cpus_;
  std::unique_ptr<MixSetup> setup_;
};

void MixMeasurement::check() {
  check_staged_request(p_, selected_, true, ", which --offload-ratio's offloads need; use CE copies (--sdma false)");
  std::string note;
  mix_offload_params(p_, ratio_, &note);
  if (!note.empty()) notes_.note(note);
  if (!p_.table.slots.empty()) notes_.note(mix_tables_note(p_, off_));
}

void MixMeasurement::prepare() {
  direct_ = open_workspaces(ws_, p_.workspaces, p_.buffered, notes_);
  // Each card's load files hold the pattern; its offload files the poison, to be
  // overwritten with what its offload region holds (a pattern of its own owner).
  load_sets_ = lay_out_block_files({p_, ws_, direct_, "load", BlockContent::kPattern});
  off_sets_ = lay_out_block_files({off_, ws_, direct_, "offload", BlockContent::kPoison});
  for (size_t c = 0; c < off_sets_.size(); ++c) off_sets_[c].owner = kOffloadOwner + static_cast<int>(c);
  const int loop_iterations = (p_.warmup + p_.iterations) * kPasses;
  const auto d = static_cast<size_t>(p_.devices);
  records_ = std::make_unique<SharedMapping>(sizeof(MixRecord) * d * static_cast<size_t>(loop_iterations));
  cpus_ = std::make_unique<SharedMapping>(sizeof(CpuRecord) * d);
  setup_.reset(new MixSetup{p_, off_, backend_, load_sets_, off_sets_, static_cast<MixRecord*>(records_->data()),
                            static_cast<CpuRecord*>(cpus_->data()), loop_iterations, direct_, numa_});
}

// A direction's own pass in `pass`, per measured round: the slowest card's.
Stage MixMeasurement::slowest(const std::string& name, int pass, SideTimes MixRecord::*side) const {
  Stage s;
  s.name = name;
  for (size_t it = static_cast<size_t>(p_.warmup * kPasses + pass); it < static_cast<size_t>(setup_->loop_iterations);
       it += kPasses) {
    int64_t v = 0;
    for (int c = 0; c < p_.devices; ++c) v = std::max(v, (record(c, it).*side).wall_ns);
    s.samples.push_back(v);
  }
  s.ns = compute_stats(s.samples);
  return s;
}

// A direction's busy time in `pass`: every card's of every measured round.
Stage MixMeasurement::every(const std::string& name, int pass, SideTimes MixRecord::*side,
                            int64_t SideTimes::*what) const {
  Stage s;
  s.name = name;
  for (int c = 0; c < p_.devices; ++c)
    for (size_t it = static_cast<size_t>(p_.warmup * kPasses + pass);
         it < static_cast<size_t>(setup_->loop_iterations); it += kPasses)
      s.samples.push_back((record(c, it).*side).*what);
  s.ns = compute_stats(s.samples);
  return s;
}

MixDirection MixMeasurement::direction(SideTimes MixRecord::*side, const StagedParams& p, int alone) const {
  const auto d = static_cast<uint64_t>(p_.devices);
  MixDirection m;
  m.bytes = d * p.layout.bytes();
  m.block_bytes = p.layout.unit_bytes();  // as the row counts: Count = the two directions' counts summed
  m.count = d * p.layout.units();
  m.together = slowest("Together", kTogether, side);
  m.alone = slowest("Alone", alone, side);
  m.io_busy_together = every("IoBusy", kTogether, side, &SideTimes::io_busy_ns);
  m.io_busy_alone = every("IoBusyAlone", alone, side, &SideTimes::io_busy_ns);
  m.copy_busy_together = every("CopyBusy", kTogether, side, &SideTimes::copy_busy_ns);
  m.copy_busy_alone = every("CopyBusyAlone", alone, side, &SideTimes::copy_busy_ns);
  m.io_busy_overlap = every("IoBusyOverlap", kTogether, side, &SideTimes::io_busy_overlap_ns);
  m.copy_busy_overlap = every("CopyBusyOverlap", kTogether, side, &SideTimes::copy_busy_overlap_ns);
  m.table = p.table.label;  // each direction's own (with --block-table)
  m.pool_blocks = p.table.pool;
  return m;
}

void MixMeasurement::put_mix(CaseResult& r) const {
  MixStages st;
  st.load = direction(&MixRecord::load, p_, kLoadAlone);
  st.offload = direction(&MixRecord::offload, off_, kOffloadAlone);
  st.ratio_asked = ratio_;
  st.ratio = static_cast<double>(off_.layout.bytes()) / static_cast<double>(p_.layout.bytes());
  // CPU: per measured round every card's together pass (and its overlap) summed,
  // over the CPUs any may use; the overlap per round the slowest card's.
  st.cpu.name = "Cpu";
  st.loop_cpu.name = "LoopCpu";
  st.cpu_overlap.name = "CpuOverlap";
  st.loop_cpu_overlap.name = "LoopCpuOverlap";
  st.overlap.name = "Overlap";
  for (size_t it = static_cast<size_t>(p_.warmup * kPasses); it < static_cast<size_t>(setup_->loop_iterations);
       it += kPasses) {
    int64_t sum = 0, loops = 0, sum_overlap = 0, loops_overlap = 0, overlap = 0;
    for (int c = 0; c < p_.devices; ++c) {
      const MixRecord& rec = record(c, it);
      sum += rec.cpu_ns;
      loops += rec.loop_cpu_ns;
      sum_overlap += rec.cpu_overlap_ns;
      loops_overlap += rec.loop_cpu_overlap_ns;
      overlap = std::max(overlap, rec.overlap_ns);
    }
    st.cpu.samples.push_back(sum);
    st.loop_cpu.samples.push_back(loops);
    st.cpu_overlap.samples.push_back(sum_overlap);
    st.loop_cpu_overlap.samples.push_back(loops_overlap);
    st.overlap.samples.push_back(overlap);
  }
  for (Stage* s : {&st.cpu, &st.loop_cpu, &st.cpu_overlap, &st.loop_cpu_overlap, &st.overlap})
    s->ns = compute_stats(s->samples);
  // The CPUs the workers may run on (their affinities' union), capped by the cgroup's quota.
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c = 0; c < p_.devices; ++c) CPU_OR(&all, &all, &setup_->cpus[c].cpus);
  const CpuBound bound = cpu_bound(CPU_COUNT(&all), cgroup_cpu_quota());
  st.cpus = bound.cpus > 0 ? bound.cpus : 1;
  st.cpus_bound = bound.bound;
  st.set_figures(r);
  r.extras.put(std::move(st));
}

std::string MixMeasurement::brief() const {
  const std::string copies =
      p_.sdma ? "one " + backend_.direct_method() + " task per block" : "copies on " + std::to_string(p_.streams) + " streams";
  const std::string io = std::string(engine_option_name(p_.engine)) + ", " + (direct_ ? "O_DIRECT" : "buffered") +
                         ", iodepth " + std::to_string(p_.iodepth);
  return "load " + std::to_string(p_.files()) + " block files of " + format_bytes(p_.file_bytes()) + " from " +
         ws_.dirs_text() + " to " + std::to_string(p_.devices) + " card" + (p_.devices == 1 ? "" : "s") +
         " while offloading " + std::to_string(off_.files()) + " blocks per card to files of their own (ratio " +
         number(static_cast<double>(off_.files()) / static_cast<double>(p_.files())) + ")" + tables_brief() +
         ", each direction its own " + std::to_string(p_.staging_buffers()) + "/" +
         std::to_string(off_.staging_buffers()) + " staging buffers, " + copies + " and engine (" + io +
         "), both at once";
}

void MixMeasurement::describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) {
  const auto d = static_cast<uint64_t>(p_.devices);
  const std::string copy_method =
      p_.sdma ? backend_.direct_method() : method_label(CopyMethod::kCeMultiStream, backend_);
  const std::string io = std::string(engine_method_label(p_.engine)) + (direct_ ? "" : "+BUF");
  r.from = "file::" + ws_.disks();
  r.to = backend_.label_prefix() + "::device::all";
  r.method = io + "+" + copy_method + "-FORK";
  r.block_bytes = p_.layout.unit_bytes();
  r.count = d * (p_.layout.units() + off_.layout.units());
  r.bytes = d * (p_.layout.bytes() + off_.layout.bytes());
  r.devices = p_.devices;
  r.streams = p_.sdma ? 1 : p_.streams;
  if (!p_.sdma && p_.streams > 1) r.submit_mode = submit_mode_name(SubmitMode::kRoundRobin);
  r.frags = p_.layout.frags_option();
  if (p_.layout.per_fragment_regions()) r.layout = layout_label(p_.layout);
  r.copies = d * (p_.layout.fragments() + off_.layout.fragments());
  r.iterations = p_.iterations;
  r.warmup = p_.warmup;
  r.measured = "IO+Copy";
  r.path = "disk <-> host <-> device";
  r.brief = brief();
  // The together passes are the result's stages: from the start of both directions to the end of both.
  r.stages = {together_stage("Submit", loop.submit), together_stage(r.measured, loop.measured),
              together_stage("Wall", loop.wall), together_stage("StartSkew", loop.start_skew)};
  put_mix(r);
  r.numa.mode = numa_mode_name(numa_.mode);
  r.numa.workers = loop.placements;
  if (p_.validate) r.validate = "each";
  keep_worker_notes(loop, r, notes);
}

// --keep, after a successful run: both directions' files stay, and where is said.
void MixMeasurement::done(Notes& notes) {
  if (p_.keep) keep_block_files({&load_sets_, &off_sets_}, ws_, notes);
}

}  // namespace

void measure_mix(const StagedParams& p, double ratio, const SelectedBackend& selected, ResultWriter& writer,
                 const std::function<void()>& begin, std::string& current, Notes& notes) {
  MixMeasurement m(p, ratio, selected, notes);
  run_measurement(m, HarnessContext(writer, notes, &selected, p.cluster, p.timeout_s, begin, &current));
}

}  // namespace ds
