#include "staging/staged_measure.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>

#include "aio/io_loop.h"
#include "aio/workspace_set.h"
#include "cluster/cluster.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "core/units.h"
#include "copy_methods/initiator.h"
#include "memory/buffer.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "runner/numa_plan.h"
#include "runner/preflight.h"
#include "runner/shared_mapping.h"
#include "measurement/measurement.h"
#include "measurement/paged_figure.h"
#include "runner/timed_loop.h"
#include "staging/block_files.h"
#include "staging/staged_side.h"
#include "staging/staged_stages.h"

namespace ds {

namespace {

// The passes of a round, one loop iteration each, in this order: three, and with
// --compare-contiguous a fourth (the pipelined pass with the blocks contiguous).
enum Pass { kPipelined = 0, kDiskAlone = 1, kCopyAlone = 2, kContiguous = 3 };
int passes_of(const StagedParams& p) { return p.compare_contiguous ? 4 : 3; }

// What a worker's iteration says beyond the loop's record: the time with at
// least one read, resp. copy, in flight (pipelined passes only).
struct BusyRecord {
  int64_t io_busy_ns = 0;
  int64_t copy_busy_ns = 0;
};

struct StagedSetup {
  StagedDir dir;
  const StagedParams& p;
  Backend& backend;
  const std::vector<CardFiles>& sets;  // one, or one per card
  BusyRecord* busy;                    // [card][iteration], shared with the children
  int loop_iterations;                 // warm-up included
  bool direct;
  const NumaPlan& numa;                // card c's worker placed on c's node

  const CardFiles& files_of(int card) const { return sets.size() == 1 ? sets[0] : sets[static_cast<size_t>(card)]; }
  // offload of one file set (--shared, MLA/DSA): every card holds the same latent and
  // writes its share of the blocks, each block once (docs/offload.md "MLA/DSA").
  bool splits() const { return dir == StagedDir::kOffload && p.shared; }
};

// One card: its device and its staged side (KV region, staging buffers, streams,
// events, aio engine); every iteration one pass of the round (pipelined, disk alone,
// copy alone).
class StagedWorker : public LoopWorker {
 public:
  StagedWorker(const StagedSetup& s, int card) : placed_(s.numa, card), s_(s), card_(card) {
    dev_ = s.backend.open_device(card);
    StagedSideConfig c;
    c.dir = s.dir;
    c.p = &s.p;
    c.files = &s.files_of(card);
    c.direct_io = s.direct;
    if (s.splits()) {  // one latent on every card: card c writes blocks c, c+d, ...
      c.first_block = static_cast<size_t>(card);
      c.block_step = static_cast<size_t>(s.p.devices);
    }
    side_ = std::make_unique<StagedSide>(*dev_, s.backend, c, placed_.record());
  }

  // --validate: before every pipelined pass and every contiguous one (warm-up included).
  void before_iteration(int index) override {
    const int pass = index % passes_of(s_.p);
    if (s_.p.validate && (pass == kPipelined || pass == kContiguous)) side_->poison(pass == kContiguous);
  }

  void iterate(int index, IterationRecord& r) override {
    const int pass = index % passes_of(s_.p);
    PipelineTimes t;
    if (pass == kPipelined) {
      t = side_->pipelined();
      BusyRecord& b = s_.busy[static_cast<size_t>(card_) * static_cast<size_t>(s_.loop_iterations) +
                              static_cast<size_t>(index)];
      b.io_busy_ns = t.io_busy_ns;
      b.copy_busy_ns = t.copy_busy_ns;
    } else if (pass == kDiskAlone) {
      t = side_->disk_alone();
    } else if (pass == kContiguous) {
      t = side_->contiguous();
    } else {
      t = side_->copy_alone();
    }
    r.submitted = r.start + t.submit_ns;
    wall_ns_ = t.wall_ns;
    short_transfers_ += t.short_transfers;
  }
  int64_t measured_ns(const IterationRecord&) override { return wall_ns_; }

  // --validate: after every pipelined pass and every contiguous one (warm-up
  // included), outside the timing.
  void after_iteration(int index) override {
    const int pass = index % passes_of(s_.p);
    if (!s_.p.validate || (pass != kPipelined && pass != kContiguous)) return;
    const int round = index / passes_of(s_.p);
    side_->check((round < s_.p.warmup ? "warm-up round " + std::to_string(round)
                                      : "round " + std::to_string(round - s_.p.warmup)) +
                     (pass == kContiguous ? " (contiguous)" : ""),
                 pass == kContiguous);
  }

  void finish() override {
    // --keep: the last pass that wrote the files was disk alone's (whatever its
    // buffers held); one more pipelined pass, untimed, leaves them the device's KV.
    if (s_.dir == StagedDir::kOffload && s_.p.keep) {
      if (s_.p.validate) side_->poison();
      side_->pipelined();
      if (s_.p.validate) side_->check("the files kept");
    }
    side_->finish();
  }
  uint64_t retries() const override { return short_transfers_; }
  std::string note() const override { return side_->note(); }
  const WorkerPlacement* placement() const override { return &placed_.record(); }

 private:
  PlacementScope placed_;  // first: the CPUs and memory policy its buffers are made under
  const StagedSetup& s_;
  int card_;
  std::unique_ptr<Device> dev_;  // first made, last gone
  std::unique_ptr<StagedSide> side_;
  int64_t wall_ns_ = 0;
  uint64_t short_transfers_ = 0;
};

// The passes of one kind out of the loop's per-iteration values, measured rounds only.
std::vector<int64_t> pass_samples(const std::vector<int64_t>& all, int pass, int passes) {
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(pass); i < all.size(); i += static_cast<size_t>(passes)) out.push_back(all[i]);
  return out;
}

}  // namespace

namespace {

// load or offload as a measurement: the block files laid out once (prepare), then
// one phase of rounds, each round three loop iterations (pipelined, disk alone, copy
// alone), a forked worker per card.
class StagedMeasurement : public Measurement {
 public:
  StagedMeasurement(StagedDir dir, const StagedParams& p, const SelectedBackend& selected, Notes& notes)
      : dir_(dir), load_(dir == StagedDir::kLoad), p_(p), selected_(selected), backend_(*selected.backend),
        notes_(notes) {}

  void check() override {
    check_staged_request(p_, selected_, !load_, "; offload with CE copies (--sdma false)");
  }
  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override { return first_devices(p_.devices); }  // card c on c's node
  void placed(const NumaPlan& plan) override { numa_ = plan; }
  // Beside the sides' buffers, the records every card writes per loop iteration
  // (the loop's and its busy times), in memory shared with this process.
  MemoryNeeds needs() const override {
    MemoryNeeds n = staged_needs(p_, backend_);
    n.add_records(static_cast<uint64_t>(p_.devices) * static_cast<uint64_t>(passes_of(p_)) *
                              (static_cast<uint64_t>(p_.warmup) + static_cast<uint64_t>(p_.iterations)) *
                              (sizeof(IterationRecord) + sizeof(BusyRecord)));
    return n;
  }
  // Each round is three passes (pipelined, disk alone, copy alone) of every card's
  // request; nominally the disk's 1 GiB/s bounds them.
  TimeEstimate estimate() const override {
    TimeEstimate t;
    t.unit = "round";
    t.rounds = static_cast<uint64_t>(p_.warmup + p_.iterations);
    t.moved = t.rounds * static_cast<uint64_t>(passes_of(p_)) * p_.layout.bytes() * static_cast<uint64_t>(load_ || !p_.shared ? p_.devices : 1);
    t.nominal_gib_s = 1.0;
    // --block-table: the pool is allocated whole, the request's blocks of it are what is filled.
    if (!p_.table.slots.empty())
      t.unfilled = static_cast<uint64_t>(p_.devices) * (p_.device_layout().region_bytes() - p_.layout.region_bytes());
    return t;
  }
  NeedsText needs_text() const override {
    return {command(), "host memory",
            format_bytes(p_.file_bytes()) + " x " + std::to_string(p_.staging_buffers()) + " staging buffers per card" +
                (backend_.device_memory_is_host() ? " and the cards' KV regions" : ""),
            p_.table.slots.empty() || !backend_.device_memory_is_host() ? "lower --staging, -s, -n or -d"
                                                                         : "lower --pool-blocks, --staging, -s, -n or -d"};
  }
  void prepare() override;

  LoopShape shape(size_t) const override {
    LoopShape s;
    s.progress_name = command();
    s.workers = p_.devices;
    s.fanout = Fanout::kFork;
    s.hooks_apart = p_.validate;
    s.warmup = p_.warmup * passes_of(p_);
    s.iterations = p_.iterations * passes_of(p_);
    s.progress_bytes = p_.layout.unit_bytes();
    s.worker_name = "card";
    s.running = s.waiting = load_ ? "reads and copies in flight" : "copies and writes in flight";
    return s;
  }
  void host(size_t, const std::function<void()>& run_workers) override {
    backend_.init_process();  // in each child
    run_workers();
  }
  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override { return std::make_unique<StagedWorker>(*setup_, w); }
  void describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) override;
  std::string retried() const override { return load_ ? "short reads" : "short writes"; }
  void done(Notes& notes) override;

 private:
  const char* command() const { return load_ ? "load" : "offload"; }
  void stages_alone(const LoopResult& loop, StagedStages& st) const;
  template <class Stages>
  void put_stages(const LoopResult& loop, CaseResult& r) const {
    Stages st;
    stages_alone(loop, st);
    st.set_figures(r);
    r.extras.put(std::move(st));
  }
  std::string brief() const;
  std::string copies_text() const;
  PagedFigure paged_figure(const LoopResult& loop) const;

  StagedDir dir_;
  bool load_;
  const StagedParams& p_;
  const SelectedBackend& selected_;
  Backend& backend_;
  Notes& notes_;
  NumaPlan numa_;
  WorkspaceSet ws_;
  bool direct_ = true;
  std::vector<CardFiles> sets_;
  std::unique_ptr<SharedMapping> busy_map_;
  std::unique_ptr<StagedSetup> setup_;
};

void StagedMeasurement::prepare() {
  direct_ = open_workspaces(ws_, p_.workspaces, p_.buffered, notes_);
  // Each card's files (or one set for all with --shared), written now, untimed, and
  // on the disk before the first pass: load's hold the pattern, offload's the poison.
  sets_ = lay_out_block_files({p_, ws_, direct_, command(), load_ ? BlockContent::kPattern : BlockContent::kPoison});
  const int loop_iterations = (p_.warmup + p_.iterations) * passes_of(p_);
  busy_map_ = std::make_unique<SharedMapping>(sizeof(BusyRecord) * static_cast<size_t>(p_.devices) *
                                              static_cast<size_t>(loop_iterations));
  auto* busy = static_cast<BusyRecord*>(busy_map_->data());
  setup_.reset(new StagedSetup{dir_, p_, backend_, sets_, busy, loop_iterations, direct_, numa_});
}

// The stages alone and the busy times of the pipelined passes, from the loop's
// values per iteration split by pass.
void StagedMeasurement::stages_alone(const LoopResult& loop, StagedStages& st) const {
  st.disk_alone.name = "DiskAlone";
  st.disk_alone.samples = pass_samples(loop.measured, kDiskAlone, passes_of(p_));
  st.disk_alone.ns = compute_stats(st.disk_alone.samples);
  st.copy_alone.name = "CopyAlone";
  st.copy_alone.samples = pass_samples(loop.measured, kCopyAlone, passes_of(p_));
  st.copy_alone.ns = compute_stats(st.copy_alone.samples);
  const int loop_iterations = setup_->loop_iterations;
  for (int c = 0; c < p_.devices; ++c)
    for (int it = p_.warmup * passes_of(p_); it < loop_iterations; it += passes_of(p_)) {
      const BusyRecord& b =
          setup_->busy[static_cast<size_t>(c) * static_cast<size_t>(loop_iterations) + static_cast<size_t>(it)];
      st.io_busy_samples.push_back(b.io_busy_ns);
      st.copy_busy_samples.push_back(b.copy_busy_ns);
    }
  st.io_busy = compute_stats(st.io_busy_samples);
  st.copy_busy = compute_stats(st.copy_busy_samples);
}

// --block-table: the table and pool, and with --compare-contiguous the contiguous passes.
PagedFigure StagedMeasurement::paged_figure(const LoopResult& loop) const {
  PagedFigure f;
  f.table = p_.table.label;
  f.pool_blocks = p_.table.pool;
  f.compared = p_.compare_contiguous;
  f.contiguous.name = "Contiguous";
  if (f.compared) {
    f.contiguous.samples = pass_samples(loop.measured, kContiguous, passes_of(p_));
    f.contiguous.ns = compute_stats(f.contiguous.samples);
  }
  return f;
}

std::string StagedMeasurement::copies_text() const {
  const std::string copy_method =
      p_.sdma ? backend_.direct_method() : method_label(CopyMethod::kCeMultiStream, backend_);
  return p_.sdma ? "one " + copy_method + " task per block" : "copies on " + std::to_string(p_.streams) + " streams";
}

std::string StagedMeasurement::brief() const {
  const std::string cards = std::to_string(p_.devices) + " card" + (p_.devices == 1 ? "" : "s");
  const std::string files = std::to_string(p_.files()) + " block files of " + format_bytes(p_.file_bytes());
  const std::string staging = std::to_string(p_.staging_buffers()) +
                              (io_buffer_is_own(backend_, direct_) ? " registered mmap" : " pinned") +
                              " staging buffers per card";
  const std::string io = std::string(engine_option_name(p_.engine)) + ", " + (direct_ ? "O_DIRECT" : "buffered") +
                         ", iodepth " + std::to_string(p_.iodepth);
  // --block-table: where the blocks lie on the card.
  const std::string pool = p_.table.slots.empty() ? std::string()
                                                  : ", each block at its slot of a " + std::to_string(p_.table.pool) +
                                                        "-block paged pool (--block-table " + p_.table.label + ")";
  if (load_)
    return "read " + files + " from " + ws_.dirs_text() + (p_.shared ? " (one set every card reads)" : " per card") +
           " into " + staging + " with " + io + ", then " + copies_text() + " to " + cards + pool;
  return copies_text() + " from " + cards + pool + " into " + staging + ", then write " + files +
         (p_.shared ? ", one set, each card its share (blocks c, c+d, ...)," : " per card") + " to " + ws_.dirs_text() +
         " with " + io;
}

void StagedMeasurement::describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) {
  // The bytes moved: every card's request, or (an offload of one latent) the one set once.
  const auto d = static_cast<uint64_t>(setup_->splits() ? 1 : p_.devices);
  const std::string copy_method =
      p_.sdma ? backend_.direct_method() : method_label(CopyMethod::kCeMultiStream, backend_);
  const std::string disk = "file::" + ws_.disks();  // the disk and filesystem: "file::vda:ext4"
  const std::string cards = backend_.label_prefix() + "::device::all";
  const std::string io = std::string(engine_method_label(p_.engine)) + (direct_ ? "" : "+BUF");
  r.from = load_ ? disk : cards;
  r.to = load_ ? cards : disk;
  r.method = (load_ ? io + "+" + copy_method : copy_method + "+" + io) + "-FORK";
  r.block_bytes = p_.layout.unit_bytes();
  r.count = d * p_.layout.units();
  r.bytes = d * p_.layout.bytes();
  r.devices = p_.devices;
  r.streams = p_.sdma ? 1 : p_.streams;
  if (!p_.sdma && p_.streams > 1) r.submit_mode = submit_mode_name(SubmitMode::kRoundRobin);
  r.frags = p_.layout.frags_option();
  if (p_.layout.per_fragment_regions()) r.layout = layout_label(p_.layout);
  r.copies = d * p_.layout.fragments();
  r.iterations = p_.iterations;
  r.warmup = p_.warmup;
  r.measured = load_ ? "IO+Copy" : "Copy+IO";
  r.path = load_ ? "disk -> host -> device" : "device -> host -> disk";
  r.kv_request = command();
  r.brief = brief();
  // The pipelined passes are the result's stages.
  const std::vector<int64_t> submit = pass_samples(loop.submit, kPipelined, passes_of(p_));
  const std::vector<int64_t> io_copy = pass_samples(loop.measured, kPipelined, passes_of(p_));
  const std::vector<int64_t> wall = pass_samples(loop.wall, kPipelined, passes_of(p_));
  const std::vector<int64_t> skew = pass_samples(loop.start_skew, kPipelined, passes_of(p_));
  r.stages = {{"Submit", compute_stats(submit), submit},
              {r.measured, compute_stats(io_copy), io_copy},
              {"Wall", compute_stats(wall), wall},
              {"StartSkew", compute_stats(skew), skew}};
  if (load_)
    put_stages<LoadStages>(loop, r);
  else
    put_stages<OffloadStages>(loop, r);
  if (!p_.table.slots.empty()) r.extras.put(paged_figure(loop));
  r.numa.mode = numa_mode_name(numa_.mode);
  r.numa.workers = loop.placements;
  if (p_.validate) r.validate = "each";
  keep_worker_notes(loop, r, notes);  // how the staging buffers were made, once
}

// --keep, after a successful run: the block files stay, and where they are is said.
void StagedMeasurement::done(Notes& notes) {
  if (p_.keep) keep_block_files({&sets_}, ws_, notes);
}

}  // namespace

void measure_staged(StagedDir dir, const StagedParams& p, const SelectedBackend& selected, ResultWriter& writer,
                    const std::function<void()>& begin, std::string& current, Notes& notes) {
  StagedMeasurement m(dir, p, selected, notes);
  run_measurement(m, HarnessContext(writer, notes, &selected, p.cluster, p.timeout_s, begin, &current));
}

}  // namespace ds
