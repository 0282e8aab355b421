#include "load/load_measure.h"

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
#include "load/load_result.h"
#include "load/pipeline.h"
#include "memory/buffer.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "runner/numa_plan.h"
#include "runner/preflight.h"
#include "runner/shared_mapping.h"
#include "measurement/measurement.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

// The three passes of a round, one loop iteration each, in this order.
enum Pass { kPipelined = 0, kDiskAlone = 1, kCopyAlone = 2, kPasses = 3 };

// What a worker's iteration says beyond the loop's record: the time with at
// least one read, resp. copy, in flight (pipelined passes only).
struct BusyRecord {
  int64_t read_busy_ns = 0;
  int64_t copy_busy_ns = 0;
};

// One card's block files: block b is file b of `files`, read whole into a staging
// buffer; its fragments are layout fragments [b*F*g, (b+1)*F*g), back to back.
struct CardFiles {
  std::unique_ptr<ShardSet> files;
  std::vector<Extent> reads;  // per block: fd, 0, file_bytes
  int owner = 0;              // whose pattern they hold
};

struct LoadSetup {
  const LoadParams& p;
  Backend& backend;
  const std::vector<CardFiles>& sets;  // one, or one per card
  BusyRecord* busy;                    // [card][iteration], shared with the children
  int loop_iterations;                 // warm-up included
  bool direct;
  const NumaPlan& numa;                // card c's worker placed on c's node

  const CardFiles& files_of(int card) const { return sets.size() == 1 ? sets[0] : sets[static_cast<size_t>(card)]; }
};

// Where fragment i (of one card's layout) is inside its block file.
uint64_t file_offset_of(const LoadParams& p, uint64_t i, const std::vector<uint64_t>& task_prefix) {
  const uint64_t f = p.layout.fragments_per_task();
  const uint64_t task = i / f;
  return (task % p.tasks_per_file) * p.layout.task_bytes() + task_prefix[static_cast<size_t>(i % f)];
}

std::vector<uint64_t> task_prefix_of(const Layout& layout) {
  std::vector<uint64_t> prefix;
  uint64_t at = 0;
  for (uint64_t b : layout.task_fragments()) {
    prefix.push_back(at);
    at += b;
  }
  return prefix;
}

// Block b's bytes as the store holds them: each fragment the pattern of (owner,
// fragment), the padding to 4096 the pattern of (owner, fragments + b).
void fill_block(const LoadParams& p, int owner, uint64_t b, char* buf, const std::vector<uint64_t>& prefix) {
  const uint64_t per_file = p.tasks_per_file * p.layout.fragments_per_task();
  pattern_fill(buf, static_cast<size_t>(p.file_bytes()), pattern_key(owner, p.layout.fragments() + b));
  for (uint64_t i = b * per_file; i < (b + 1) * per_file; ++i)
    pattern_fill(buf + file_offset_of(p, i, prefix), static_cast<size_t>(p.layout.fragment(i).bytes),
                 pattern_key(owner, i));
}

// One card: its device, KV region, staging buffers, streams, events and aio engine;
// every iteration one pass of the round (pipelined, disk alone, copy alone).
class LoadWorker : public LoopWorker {
 public:
  LoadWorker(const LoadSetup& s, int card) : placed_(s.numa, card), s_(s), card_(card), files_(s.files_of(card)) {
    const LoadParams& p = s.p;
    const unsigned k = p.staging_buffers();
    dev_ = s.backend.open_device(card);
    if (!s.backend.device_memory_is_host()) {
      NeedsText t{"load", "device memory", format_bytes(p.layout.bytes()) + " KV region", "lower -s or -n"};
      check_device_needs(p.layout.bytes(), dev_->free_memory(), card, t);
    }
    region_ = dev_->alloc_device(static_cast<size_t>(p.layout.bytes()));
    // The backend's pinned memory, or where that cannot take O_DIRECT reads (ascend:
    // aclrtMallocHost memory answers EFAULT) our own registered mapping (make_io_buffer).
    staging_ = make_io_buffer(*dev_, s.backend, static_cast<size_t>(k * p.file_bytes()), p.sdma, s.direct,
                              "staging buffers");
    char* host = static_cast<char*>(staging_.host);
    check_odirect_aligned(host, "the staging buffers are");
    // First touched here, on the card's node's CPUs (untimed); where the pages are.
    std::memset(host, 0, static_cast<size_t>(k * p.file_bytes()));
    placed_.record().add_buffer("staging", host, static_cast<size_t>(k * p.file_bytes()));
    engine_ = make_io_engine(p.engine, p.iodepth);
    PipelineConfig c;
    c.device = dev_.get();
    c.engine = engine_.get();
    c.reads = &files_.reads;
    c.direct_path = p.sdma;
    c.block_name = [this](size_t b) { return "block " + std::to_string(b) + " (" + files_.files->path(b) + ")"; };
    char* src_base = static_cast<char*>(p.sdma ? staging_.device : staging_.host);
    for (unsigned b = 0; b < k; ++b) {
      c.staging_host.push_back(host + b * p.file_bytes());
      c.staging_src.push_back(src_base + b * p.file_bytes());
      ring_.buffers.push_back(host + b * p.file_bytes());
    }
    // Block b's copies: destination in the region, source as an offset into a staging buffer.
    const std::vector<uint64_t> prefix = task_prefix_of(p.layout);
    char* dst = static_cast<char*>(region_->device_ptr());
    const uint64_t per_file = p.tasks_per_file * p.layout.fragments_per_task();
    c.copies_per_block = static_cast<size_t>(per_file);
    c.copies.reserve(static_cast<size_t>(p.layout.fragments()));
    for (uint64_t i = 0; i < p.layout.fragments(); ++i) {
      const Fragment f = p.layout.fragment(i);
      c.copies.push_back({dst + f.offset, reinterpret_cast<const void*>(static_cast<uintptr_t>(file_offset_of(p, i, prefix))),
                          static_cast<size_t>(f.bytes)});
    }
    // Every block's copies prepared now, with the backend (the direct path: its proof,
    // batch arrays, graphs or FFTS+ contexts), so no timed pass builds any.
    pipeline_ = std::make_unique<Pipeline>(std::move(c), p.streams);
    disk_alone_ = std::make_unique<TransferPass>(*engine_, IoOp::kRead, files_.reads, ring_);
    if (p.validate) scratch_ = alloc_pageable(static_cast<size_t>(p.layout.largest_fragment()));
  }

  void before_iteration(int index) override {
    if (s_.p.validate && index % kPasses == kPipelined) poison();
  }

  void iterate(int index, IterationRecord& r) override {
    const int pass = index % kPasses;
    PipelineTimes t;
    if (pass == kPipelined) {
      t = pipeline_->run();
      BusyRecord& b = s_.busy[static_cast<size_t>(card_) * static_cast<size_t>(s_.loop_iterations) +
                              static_cast<size_t>(index)];
      b.read_busy_ns = t.read_busy_ns;
      b.copy_busy_ns = t.copy_busy_ns;
    } else if (pass == kDiskAlone) {
      try {
        const PassResult pr = disk_alone_->run();
        t.wall_ns = pr.wall_ns;
        t.submit_ns = pr.submit_ns;
        t.short_reads = pr.short_transfers;
      } catch (const IoFailure& f) {
        throw RunError("disk alone, block " + std::to_string(f.shard) + " (" + files_.files->path(f.shard) +
                       "): " + f.what());
      }
    } else {
      t = pipeline_->copy_alone();
    }
    r.submitted = r.start + t.submit_ns;
    wall_ns_ = t.wall_ns;
    short_reads_ += t.short_reads;
  }
  int64_t measured_ns(const IterationRecord&) override { return wall_ns_; }

  // --validate: after every pipelined pass (warm-up included), outside the timing.
  void after_iteration(int index) override {
    if (!s_.p.validate || index % kPasses != kPipelined) return;
    const Layout& layout = s_.p.layout;
    const int round = index / kPasses;
    const std::string when = round < s_.p.warmup ? "warm-up round " + std::to_string(round)
                                                 : "round " + std::to_string(round - s_.p.warmup);
    const uint64_t per_file = s_.p.tasks_per_file * layout.fragments_per_task();
    for (uint64_t i = 0; i < layout.fragments(); ++i) {
      const Fragment f = layout.fragment(i);
      const size_t n = static_cast<size_t>(f.bytes);
      dev_->copy_sync({scratch_->host_ptr(), static_cast<char*>(region_->device_ptr()) + f.offset, n}, CopyDir::kD2H);
      const int64_t off = pattern_check(scratch_->host_ptr(), n, pattern_key(files_.owner, i));
      if (off >= 0)
        throw RunError("validation failed: load " + when + ": block " + std::to_string(i / per_file) + " (" +
                       files_.files->path(static_cast<size_t>(i / per_file)) + "), fragment " + std::to_string(i) +
                       " on the device differs from the file at offset " + std::to_string(off));
    }
  }

  void finish() override {
    pipeline_.reset();
    disk_alone_.reset();
  }
  uint64_t retries() const override { return short_reads_; }
  std::string note() const override { return staging_.note; }
  const WorkerPlacement* placement() const override { return &placed_.record(); }

 private:
  // Every fragment of the region zeroed, so one the pass does not copy fails the check.
  void poison() {
    std::memset(scratch_->host_ptr(), 0, scratch_->bytes());
    for (uint64_t i = 0; i < s_.p.layout.fragments(); ++i) {
      const Fragment f = s_.p.layout.fragment(i);
      dev_->copy_sync({static_cast<char*>(region_->device_ptr()) + f.offset, scratch_->host_ptr(), static_cast<size_t>(f.bytes)},
                      CopyDir::kH2D);
    }
  }

  PlacementScope placed_;  // first: the CPUs and memory policy its buffers are made under
  const LoadSetup& s_;
  int card_;
  const CardFiles& files_;
  std::unique_ptr<Device> dev_;  // first made, last gone
  std::unique_ptr<Memory> region_;
  IoBuffer staging_;
  std::unique_ptr<Memory> scratch_;
  std::unique_ptr<IoEngine> engine_;
  BufferRing ring_;
  std::unique_ptr<TransferPass> disk_alone_;  // after the engine it uses
  std::unique_ptr<Pipeline> pipeline_;
  int64_t wall_ns_ = 0;
  uint64_t short_reads_ = 0;
};

// The passes of one kind out of the loop's per-iteration values, measured rounds only.
std::vector<int64_t> pass_samples(const std::vector<int64_t>& all, int pass) {
  std::vector<int64_t> out;
  for (size_t i = static_cast<size_t>(pass); i < all.size(); i += kPasses) out.push_back(all[i]);
  return out;
}

}  // namespace

unsigned LoadParams::staging_buffers() const {
  const uint64_t k = staging ? staging : iodepth;
  return static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(k, files())));
}

namespace {

// load as a measurement: the block files written once (prepare), then one phase of
// rounds, each round three loop iterations (pipelined, disk alone, copy alone), a
// forked worker per card.
class LoadMeasurement : public Measurement {
 public:
  LoadMeasurement(const LoadParams& p, const SelectedBackend& selected, Notes& notes)
      : p_(p), selected_(selected), backend_(*selected.backend), notes_(notes) {}

  void check() override {
    check_device_count("-d", p_.devices, p_.devices, selected_.probe.device_count, backend_.name());
    if (p_.sdma && !backend_.has(Capability::kDirect))
      throw RunError("--sdma true: the " + backend_.name() + " backend has no direct path");
    if (p_.sdma && !selected_.probe.direct_unavailable.empty())
      throw RunError("--sdma true: " + selected_.probe.direct_unavailable);
  }
  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override { return first_devices(p_.devices); }  // card c on c's node
  void placed(const NumaPlan& plan) override { numa_ = plan; }
  MemoryNeeds needs() const override {
    const unsigned k = p_.staging_buffers();
    const auto d = static_cast<uint64_t>(p_.devices);
    MemoryNeeds n;
    const uint64_t staging = k * p_.file_bytes();
    n.add_host("staging", d * staging);
    n.add_host("a fragment's scratch per card", d * p_.layout.largest_fragment());
    n.add_host("the block files' writer", p_.file_bytes());
    if (backend_.device_memory_is_host()) n.add_host("the cards' KV regions", d * p_.layout.bytes());
    // Staging of our own (O_DIRECT where the backend's pinned memory cannot take it) is
    // locked by its registration, which only the direct path requires (make_io_buffer).
    // (Before the workspaces say whether they do O_DIRECT: as asked.)
    const bool own_staging = io_buffer_is_own(backend_, !p_.buffered);
    if (own_staging ? p_.sdma && backend_.mlocks(HostLock::kRegistration) : backend_.mlocks(HostLock::kPinnedAlloc))
      n.locked_per_process = staging;
    n.devices = p_.devices;
    n.device_per_device = p_.layout.bytes();  // the card's KV region
    n.device_in_host = backend_.device_memory_is_host();
    // The block files: one set per card, or one that every card reads (--shared).
    n.disk = p_.files() * p_.file_bytes() * (p_.shared ? 1 : d);
    return n;
  }
  // Each round is three passes (pipelined, disk alone, copy alone) of every card's
  // request; nominally the disk's 1 GiB/s bounds them.
  TimeEstimate estimate() const override {
    TimeEstimate t;
    t.unit = "round";
    t.rounds = static_cast<uint64_t>(p_.warmup + p_.iterations);
    t.moved = t.rounds * kPasses * p_.layout.bytes() * static_cast<uint64_t>(p_.devices);
    t.nominal_gib_s = 1.0;
    return t;
  }
  NeedsText needs_text() const override {
    return {"load", "host memory",
            format_bytes(p_.file_bytes()) + " x " + std::to_string(p_.staging_buffers()) + " staging buffers per card" +
                (backend_.device_memory_is_host() ? " and the cards' KV regions" : ""),
            "lower --staging, -s, -n or -d"};
  }
  void prepare() override;

  LoopShape shape(size_t) const override {
    LoopShape s;
    s.progress_name = "load";
    s.workers = p_.devices;
    s.fanout = Fanout::kFork;
    s.hooks_apart = p_.validate;
    s.warmup = p_.warmup * kPasses;
    s.iterations = p_.iterations * kPasses;
    s.progress_bytes = p_.layout.unit_bytes();
    s.worker_name = "card";
    s.running = s.waiting = "reads and copies in flight";
    return s;
  }
  void host(size_t, const std::function<void()>& run_workers) override {
    backend_.init_process();  // in each child
    run_workers();
  }
  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override { return std::make_unique<LoadWorker>(*setup_, w); }
  void describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) override;
  std::string retried() const override { return "short reads"; }

 private:
  void write_block_files();
  LoadStages stages_alone(const LoopResult& loop) const;
  std::string brief() const;

  const LoadParams& p_;
  const SelectedBackend& selected_;
  Backend& backend_;
  Notes& notes_;
  NumaPlan numa_;
  WorkspaceSet ws_;
  bool direct_ = true;
  std::vector<CardFiles> sets_;
  std::unique_ptr<SharedMapping> busy_map_;
  std::unique_ptr<LoadSetup> setup_;
};

void LoadMeasurement::prepare() {
  direct_ = open_workspaces(ws_, p_.workspaces, p_.buffered, notes_);
  const size_t nws = ws_.count();
  const uint64_t nfiles = p_.files();
  const size_t nsets = p_.shared ? 1 : static_cast<size_t>(p_.devices);
  auto files_in = [&](size_t w) -> uint64_t { return nfiles > w ? (nfiles - w + nws - 1) / nws : 0; };
  check_workspace_space(
      ws_, [&](size_t w) { return files_in(w) * p_.file_bytes() * nsets; },
      [&](size_t w) {
        return std::to_string(files_in(w)) + " block files of " + std::to_string(nfiles) +
               (nsets > 1 ? ", for each of " + std::to_string(nsets) + " cards" : "");
      },
      "free space there, or lower -n, -s or -d (or use --shared)");
  write_block_files();
  const int loop_iterations = (p_.warmup + p_.iterations) * kPasses;
  busy_map_ = std::make_unique<SharedMapping>(sizeof(BusyRecord) * static_cast<size_t>(p_.devices) *
                                              static_cast<size_t>(loop_iterations));
  auto* busy = static_cast<BusyRecord*>(busy_map_->data());
  setup_.reset(new LoadSetup{p_, backend_, sets_, busy, loop_iterations, direct_, numa_});
}

// Each card's files (or one set for all with --shared), written now, untimed, and
// on the disk before the first read.
void LoadMeasurement::write_block_files() {
  const bool across = p_.cluster && p_.cluster->multi();
  const size_t nsets = p_.shared ? 1 : static_cast<size_t>(p_.devices);
  const uint64_t nfiles = p_.files();
  const std::vector<uint64_t> prefix = task_prefix_of(p_.layout);
  auto block = map_anonymous(static_cast<size_t>(p_.file_bytes()), true);  // 4 KiB aligned, as O_DIRECT needs
  char* buf = static_cast<char*>(block->host_ptr());
  sets_.resize(nsets);
  for (size_t c = 0; c < nsets; ++c) {
    CardFiles& set = sets_[c];
    set.owner = p_.shared ? 0 : static_cast<int>(c);
    set.files = std::make_unique<ShardSet>(ws_);
    // Across ranks every rank its own files, named with its rank.
    const std::string tag = (across ? "load-r" + std::to_string(p_.cluster->rank()) : std::string("load")) +
                            (p_.shared ? "" : "-c" + std::to_string(c));
    for (size_t w = 0; w < ws_.count(); ++w)
      set.files->files.push_back(std::make_unique<ShardFiles>(ws_.workspaces[w]->path(), tag));
    for (uint64_t b = 0; b < nfiles; ++b) {
      check_interrupted();
      const size_t f = static_cast<size_t>(b);
      const size_t w = set.files->where(f);
      int err = set.files->files[w]->add(p_.file_bytes(), direct_);
      if (err == 0) {
        fill_block(p_, set.owner, b, buf, prefix);
        err = write_at(set.files->fd(f), set.files->path(f), buf, static_cast<size_t>(p_.file_bytes()), 0);
      }
      if (err != 0)
        throw out_of_space("load", ws_, w, "laying out the block files",
                           nsets > 1 ? " of card " + std::to_string(c) + " of " + std::to_string(nsets) : "",
                           std::to_string(b) + " of " + std::to_string(nfiles) + " files of " +
                               format_bytes(p_.file_bytes()),
                           err, "the block files were removed; free space or lower -n, -s or -d");
      set.reads.push_back(Extent{set.files->fd(f), 0, static_cast<size_t>(p_.file_bytes())});
    }
    // What was written goes to the disk now, not during the first reads.
    for (uint64_t b = 0; b < nfiles; ++b)
      if (fdatasync(set.files->fd(static_cast<size_t>(b))) != 0)
        throw sys_error("fdatasync(" + set.files->path(static_cast<size_t>(b)) + ")", errno);
  }
}

// The stages alone and the busy times of the pipelined passes, from the loop's
// values per iteration split by pass.
LoadStages LoadMeasurement::stages_alone(const LoopResult& loop) const {
  LoadStages st;
  st.disk_alone.name = "DiskAlone";
  st.disk_alone.samples = pass_samples(loop.measured, kDiskAlone);
  st.disk_alone.ns = compute_stats(st.disk_alone.samples);
  st.copy_alone.name = "CopyAlone";
  st.copy_alone.samples = pass_samples(loop.measured, kCopyAlone);
  st.copy_alone.ns = compute_stats(st.copy_alone.samples);
  const int loop_iterations = setup_->loop_iterations;
  for (int c = 0; c < p_.devices; ++c)
    for (int it = p_.warmup * kPasses; it < loop_iterations; it += kPasses) {
      const BusyRecord& b =
          setup_->busy[static_cast<size_t>(c) * static_cast<size_t>(loop_iterations) + static_cast<size_t>(it)];
      st.read_busy_samples.push_back(b.read_busy_ns);
      st.copy_busy_samples.push_back(b.copy_busy_ns);
    }
  st.read_busy = compute_stats(st.read_busy_samples);
  st.copy_busy = compute_stats(st.copy_busy_samples);
  return st;
}

std::string LoadMeasurement::brief() const {
  const std::string copy_method =
      p_.sdma ? backend_.direct_method() : method_label(CopyMethod::kCeMultiStream, backend_);
  return "read " + std::to_string(p_.files()) + " block files of " + format_bytes(p_.file_bytes()) + " from " +
         ws_.dirs_text() + (p_.shared ? " (one set every card reads)" : " per card") + " into " +
         std::to_string(p_.staging_buffers()) + (io_buffer_is_own(backend_, direct_) ? " registered mmap" : " pinned") +
         " staging buffers per card with " + engine_option_name(p_.engine) + ", " + (direct_ ? "O_DIRECT" : "buffered") +
         ", iodepth " + std::to_string(p_.iodepth) + ", then " +
         (p_.sdma ? "one " + copy_method + " task per block" : "copies on " + std::to_string(p_.streams) + " streams") +
         " to " + std::to_string(p_.devices) + " card" + (p_.devices == 1 ? "" : "s");
}

void LoadMeasurement::describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) {
  const auto d = static_cast<uint64_t>(p_.devices);
  const std::string copy_method =
      p_.sdma ? backend_.direct_method() : method_label(CopyMethod::kCeMultiStream, backend_);
  r.from = "file::" + ws_.disks();  // the disk and filesystem: "file::vda:ext4"
  r.to = backend_.label_prefix() + "::device::all";
  r.method = std::string(engine_method_label(p_.engine)) + (direct_ ? "" : "+BUF") + "+" + copy_method + "-FORK";
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
  r.measured = "IO+Copy";
  r.path = "disk -> host -> device";
  r.brief = brief();
  // The pipelined passes are the result's stages.
  const std::vector<int64_t> submit = pass_samples(loop.submit, kPipelined);
  const std::vector<int64_t> io_copy = pass_samples(loop.measured, kPipelined);
  const std::vector<int64_t> wall = pass_samples(loop.wall, kPipelined);
  const std::vector<int64_t> skew = pass_samples(loop.start_skew, kPipelined);
  r.stages = {{"Submit", compute_stats(submit), submit},
              {r.measured, compute_stats(io_copy), io_copy},
              {"Wall", compute_stats(wall), wall},
              {"StartSkew", compute_stats(skew), skew}};
  LoadStages st = stages_alone(loop);
  st.set_figures(r);
  r.extras.put(st);
  r.numa.mode = numa_mode_name(numa_.mode);
  r.numa.workers = loop.placements;
  if (p_.validate) r.validate = "each";
  keep_worker_notes(loop, r, notes);  // how the staging buffers were made, once
}

}  // namespace

void measure_load(const LoadParams& p, const SelectedBackend& selected, ResultWriter& writer,
                  const std::function<void()>& begin, std::string& current, Notes& notes) {
  LoadMeasurement m(p, selected, notes);
  run_measurement(m, HarnessContext(writer, notes, &selected, p.cluster, p.timeout_s, begin, &current));
}

}  // namespace ds
