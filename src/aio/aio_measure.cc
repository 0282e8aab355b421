#include "aio/aio_measure.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <memory>
#include <vector>

#include "aio/aio_result.h"
#include "aio/block_device.h"
#include "aio/io_loop.h"
#include "aio/shard_files.h"
#include "aio/workspace_set.h"
#include "cluster/cluster.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/stats.h"
#include "core/units.h"
#include "memory/buffer.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "runner/numa_plan.h"
#include "runner/preflight.h"
#include "measurement/measurement.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

std::string shard_bytes_text(const AioParams& p, uint64_t shards) {
  return format_bytes(p.io_size * shards) + " of " + format_bytes(p.total);
}

// Shard i (of shards()) is shard i % K of file i / K, at offset (i % K) x io_size.
size_t file_of(const AioParams& p, size_t i) { return static_cast<size_t>(i / p.shards_per_file); }
uint64_t offset_of(const AioParams& p, size_t i) { return (i % p.shards_per_file) * p.io_size; }

// Where shard i lives: its file, and with several shards per file its offset there.
std::string shard_place(const ShardSet& files, const AioParams& p, size_t i) {
  std::string s = files.path(file_of(p, i));
  if (p.shards_per_file > 1) s += " at offset " + std::to_string(offset_of(p, i));
  return s;
}

// A differing byte: its offset in the shard, and in the file when that differs.
std::string differs_at(const AioParams& p, size_t i, int64_t off) {
  std::string s = "at offset " + std::to_string(off);
  if (p.shards_per_file > 1)
    s += " of the shard (file offset " + std::to_string(offset_of(p, i) + static_cast<uint64_t>(off)) + ")";
  return s;
}

// What a run needs before anything is allocated: one host buffer per I/O in
// flight, and a scratch buffer for checking the dumped files.
MemoryNeeds aio_needs(const AioParams& p, const Backend& backend) {
  MemoryNeeds n;
  const uint64_t ring = p.buffers * p.io_size;
  const auto w = static_cast<uint64_t>(p.workers);
  n.add_host("buffers", ring * w);
  if (p.validate) n.add_host("validation scratch", p.io_size * w);
  if (!p.phase_dump) n.add_host("the shard files' writer", p.io_size);  // no dump phase: written from one scratch shard
  // Only memory our own code mlock()s counts; a vendor driver pins in its kernel module.
  // (With O_DIRECT where the backend's pinned memory cannot take it, the buffers are our
  // own mapping, whose lock and registration are best effort: make_io_buffer.)
  const bool own = io_buffer_is_own(backend, !p.buffered);  // O_DIRECT as asked: the workspaces are not open yet
  if (p.alloc && !own && backend.mlocks(HostLock::kPinnedAlloc)) n.locked_per_process = ring;
  // The shard files: every worker its own set (--files shared: one set for the job).
  n.disk = p.total * (p.shared_files ? 1 : w);
  return n;
}

NeedsText aio_needs_text(const AioParams& p) {
  return {"aio", "host buffers",
          "--io-size " + format_bytes(p.io_size) + " x " + std::to_string(p.buffers) +
              " buffers, one per I/O in flight",
          "lower --io-size or --iodepth"};
}

// What one worker uses, set up in this process: the files are opened here (so
// they are removed here, whatever becomes of the worker's process).
struct AioSetup {
  const AioParams& p;
  Backend& backend;
  const ShardSet& files;
  bool direct;
  std::vector<Extent> shards;
  int device;  // --io-type alloc: whose pinned memory; --numa: whose node the worker is placed on
  int key;     // the data pattern's key (per worker: --device-id + worker)
  const NumaPlan& numa;
  // What a write sweep moves: shards [write_lo, write_lo + write_shards.size()) of
  // `shards` (all of them, except with --files shared: this rank's share).
  size_t write_lo = 0;
  std::vector<Extent> write_shards;
};

// The loop's IoFailure, told with the file, the filesystem and what to do.
// `sweep`: which sweep of a mixed epoch (empty otherwise).
RunError describe(const IoFailure& f, const char* phase, int epoch, const std::string& sweep, const AioSetup& s) {
  const AioParams& p = s.p;
  const std::string where =
      std::string(phase) + " epoch " + std::to_string(epoch) + " of " + std::to_string(p.epochs) + sweep;
  const size_t file = file_of(p, f.shard);
  const std::string in = s.files.dir(file) + " (" + s.files.fs_of(file).type + ")";
  if (f.err == ENOSPC || f.err == EDQUOT)
    return RunError(where + " ran out of space in " + in + " after " + std::to_string(f.shards_done) + " of " +
                    std::to_string(p.shards()) + " shards (" + shard_bytes_text(p, f.shards_done) + "): " +
                    f.what() + "; the shard files were removed; free space or lower --io-number or --io-size");
  std::string msg = where + ": " + f.what() + " (" + s.files.path(file) + " on " + s.files.fs_of(file).type + ")";
  if (f.err == EINVAL && s.direct)
    msg += "; the filesystem may refuse O_DIRECT here: --buffered allows page-cache I/O";
  return RunError(msg);
}

// Reads shard `i` back with plain pread (outside any timing) into `buf` and
// compares it with the pattern the dump wrote; `what` names the check in a failure.
void verify_shard(const ShardSet& files, size_t i, const AioParams& p, int key, char* buf, const std::string& what) {
  std::memset(buf, 0, static_cast<size_t>(p.io_size));
  const size_t f = file_of(p, i);
  const uint64_t got = read_at(files.fd(f), files.path(f), buf, static_cast<size_t>(p.io_size), offset_of(p, i));
  if (got < p.io_size)
    throw RunError("validation failed for " + what + ": shard " + std::to_string(i) + " (" + shard_place(files, p, i) +
                   ") ends at offset " + std::to_string(got) + " of " + std::to_string(p.io_size));
  const int64_t off = pattern_check(buf, static_cast<size_t>(p.io_size), pattern_key(key, i));
  if (off >= 0)
    throw RunError("validation failed for " + what + ": shard " + std::to_string(i) + " (" +
                   shard_place(files, p, i) + ") differs from what was dumped " + differs_at(p, i, off));
}

// Writes shard `i` with plain pwrite, outside any timing: the pattern the dump
// writes (the files' data when no dump phase runs before the loads), or with
// `inverse` its bitwise inverse (--validate each, before a dump epoch: a write the
// epoch skips then fails verify_shard or the loads). `why` names it in a failure.
void write_shard(const ShardSet& files, size_t i, const AioParams& p, int key, char* buf, bool inverse,
                 const char* why) {
  const auto n = static_cast<size_t>(p.io_size);
  auto* b = reinterpret_cast<unsigned char*>(buf);
  pattern_fill(b, n, pattern_key(key, i));
  if (inverse)
    for (size_t k = 0; k < n; ++k) b[k] = static_cast<unsigned char>(~b[k]);
  const int err = write_at(files.fd(file_of(p, i)), files.path(file_of(p, i)), buf, n, offset_of(p, i));
  if (err != 0) throw sys_error("pwrite(" + files.path(file_of(p, i)) + ") " + why, err);
}

// What one timed phase does per epoch: aio_dump one write sweep of every shard,
// aio_load one read sweep, aio_mixed one write sweep then --mix read sweeps.
struct AioPhase {
  const char* name;   // "aio_dump", "aio_load", "aio_mixed"
  const char* label;  // "dump", "load", "mixed": how a failure names the epoch
  std::vector<IoOp> sweeps;
  bool writes() const { return std::find(sweeps.begin(), sweeps.end(), IoOp::kWrite) != sweeps.end(); }
  uint64_t count(IoOp op) const { return static_cast<uint64_t>(std::count(sweeps.begin(), sweeps.end(), op)); }
  bool mixed() const { return sweeps.size() > 1; }
};

// One phase's epochs: its host buffers (mmap, or the backend's pinned memory on
// --device-id) and I/O engine, made where it runs; the phase's sweeps of every
// shard per epoch, timed together.
class AioWorker : public LoopWorker {
 public:
  AioWorker(const AioSetup& s, const AioPhase& phase) : placed_(s.numa, s.device), s_(s), phase_(phase) {
    const AioParams& p = s.p;
    const size_t bytes = static_cast<size_t>(p.buffers * p.io_size);
    char* base = nullptr;
    if (p.alloc) {
      // The backend's pinned memory, or for O_DIRECT where that memory cannot take it
      // (ascend: aclrtMallocHost memory answers EFAULT) our own registered mapping.
      device_ = s.backend.open_device(s.device);
      alloc_ = make_io_buffer(*device_, s.backend, bytes, false, s.direct, "--io-type alloc buffers");
      base = static_cast<char*>(alloc_.host);
    } else {
      memory_ = map_anonymous(bytes, true);
      base = static_cast<char*>(memory_->host_ptr());
    }
    check_odirect_aligned(base, "the " + std::string(p.alloc ? "pinned" : "mmap") + " host buffer is");
    engine_ = make_io_engine(p.engine, p.iodepth);
    for (uint64_t b = 0; b < p.buffers; ++b) {
      // Real data, never zeros: a compressing or deduplicating store must not
      // flatter the numbers. (--validate refills per shard.)
      char* buf = base + b * p.io_size;
      pattern_fill(buf, static_cast<size_t>(p.io_size), pattern_key(s.key, p.shards() + b));
      ring_.buffers.push_back(buf);
    }
    placed_.record().add_buffer("buffers", base, bytes);
    if (p.validate) set_validation_hooks();
    // The passes an epoch runs, made now: a timed epoch allocates nothing.
    if (phase.writes())
      write_pass_ = std::make_unique<TransferPass>(*engine_, IoOp::kWrite, s.write_shards, ring_, write_hooks_);
    if (phase.count(IoOp::kRead) > 0)
      read_pass_ = std::make_unique<TransferPass>(*engine_, IoOp::kRead, s.shards, ring_, read_hooks_);
  }

  // --validate: every shard written with its own pattern, every load checked as it
  // completes; the fill and the check run inside the epochs (as fio's verify does),
  // so a validated run checks correctness rather than peak speed.
  void set_validation_hooks() {
    const AioSetup& s = s_;
    const AioParams& p = s.p;
    const AioPhase& phase = phase_;
    const size_t n = static_cast<size_t>(p.io_size);
    const int dev = s.key;
    const size_t lo = s.write_lo;  // a write sweep's shard k is shard lo + k of the set
    write_hooks_.prepare = [n, dev, lo](size_t shard, void* buf) {
      pattern_fill(buf, n, pattern_key(dev, lo + shard));
    };
    if (p.validate_each && phase.writes()) scratch_ = map_anonymous(n, true);  // 4 KiB aligned, as O_DIRECT needs
    read_hooks_.prepare = [n](size_t, void* buf) { std::memset(buf, 0, n); };
    read_hooks_.complete = [this, n, dev](size_t shard, void* buf) {
      const int64_t off = pattern_check(buf, n, pattern_key(dev, shard));
      if (off >= 0)
        throw RunError("validation failed for " + std::string(phase_.name) + " epoch " + std::to_string(epoch_) +
                       " of " + std::to_string(s_.p.epochs) + sweep_text() + ": shard " + std::to_string(shard) +
                       " (" + shard_place(s_.files, s_.p, shard) + ") loaded bytes differ from what was dumped " +
                       differs_at(s_.p, shard, off));
    };
  }

  void iterate(int index, IterationRecord& r) override {
    epoch_ = index + 1;
    int64_t submit_ns = 0;
    for (sweep_ = 0; sweep_ < phase_.sweeps.size(); ++sweep_) {
      const IoOp op = phase_.sweeps[sweep_];
      PassResult pass;
      const bool write = op == IoOp::kWrite;
      try {
        pass = (write ? write_pass_ : read_pass_)->run();
      } catch (const IoFailure& f) {
        IoFailure at = f;  // the shard's index in the whole set
        if (write) at.shard += s_.write_lo;
        throw describe(at, phase_.label, epoch_, sweep_text(), s_);
      }
      if (sweep_ == 0) first_ns_ = pass.start_ns;
      last_ns_ = pass.end_ns;
      submit_ns += pass.submit_ns;
      short_transfers_ += pass.short_transfers;
    }
    r.submitted = r.start + submit_ns;  // Submit: the time inside the submission calls
  }
  // IO: from the first submission of the epoch's first sweep to the last completion
  // of its last one.
  int64_t measured_ns(const IterationRecord&) override { return last_ns_ - first_ns_; }
  // --validate each on a phase that writes: every epoch's files cleared before it
  // (outside the timing); a dump is read back after it, a mixed epoch's loads check
  // what its dump wrote as they land.
  void before_iteration(int) override {
    if (!scratch_) return;
    for (size_t i = s_.write_lo; i < s_.write_lo + s_.write_shards.size(); ++i) {
      check_interrupted();
      write_shard(s_.files, i, s_.p, s_.key, static_cast<char*>(scratch_->host_ptr()), true,
                  "clearing it for --validate each");
    }
  }
  void after_iteration(int index) override {
    if (!scratch_ || phase_.mixed()) return;
    const std::string what = std::string(phase_.name) + " epoch " + std::to_string(index + 1) + " of " +
                             std::to_string(s_.p.epochs);
    for (size_t i = s_.write_lo; i < s_.write_lo + s_.write_shards.size(); ++i) {
      check_interrupted();
      verify_shard(s_.files, i, s_.p, s_.key, static_cast<char*>(scratch_->host_ptr()), what);
    }
  }
  uint64_t retries() const override { return short_transfers_; }
  std::string note() const override { return alloc_.note; }
  const WorkerPlacement* placement() const override { return &placed_.record(); }

 private:
  // A mixed epoch's sweep, for a failure: " (dump sweep)", " (load sweep 2 of 3)".
  std::string sweep_text() const {
    if (!phase_.mixed()) return "";
    if (phase_.sweeps[sweep_] == IoOp::kWrite) return " (dump sweep)";
    return " (load sweep " + std::to_string(sweep_ - phase_.count(IoOp::kWrite) + 1) + " of " +
           std::to_string(phase_.count(IoOp::kRead)) + ")";
  }

  PlacementScope placed_;  // first: the CPUs and memory policy its buffers are made under
  const AioSetup& s_;
  const AioPhase& phase_;
  std::unique_ptr<Device> device_;  // before the memory it allocates
  std::unique_ptr<Memory> memory_;
  IoBuffer alloc_;  // --io-type alloc
  std::unique_ptr<IoEngine> engine_;  // after the memory: drained and closed before the buffers go
  BufferRing ring_;
  PassHooks write_hooks_, read_hooks_;
  std::unique_ptr<TransferPass> write_pass_, read_pass_;  // after the engine they use
  std::unique_ptr<Memory> scratch_;  // --validate each on a phase that writes: one shard
  int epoch_ = 0;
  size_t sweep_ = 0;
  int64_t first_ns_ = 0, last_ns_ = 0;
  uint64_t short_transfers_ = 0;
};

// Reads every shard back with plain pread (outside any timing) and compares it
// with the pattern the dump wrote.
void verify_files(const ShardSet& files, const AioParams& p, int key) {
  auto scratch = map_anonymous(static_cast<size_t>(p.io_size), true);
  char* buf = static_cast<char*>(scratch->host_ptr());
  for (size_t i = 0; i < p.shards(); ++i) {
    check_interrupted();
    verify_shard(files, i, p, key, buf, "aio_dump");
  }
}

}  // namespace

namespace {

// The block device under a workspace (one per disk, with its share of the bytes),
// whose counters before and after each phase show the disk was used.
struct DeviceShare {
  BlockDevice dev;
  std::string why;                 // none found: why
  uint64_t bytes_per_epoch = 0;    // a read sweep's bytes (every shard in its workspaces)
  uint64_t written_per_epoch = 0;  // a write sweep's (--files shared: this rank's share there)
  DiskBytes before;
};

// aio as a measurement: the shard files made once (prepare), then the phases
// --phases names, in this order: dump, load, mixed; each its epochs through the
// timed loop, one worker in a child process (--workers W > 1: W forked workers,
// started together at every epoch).
class AioMeasurement : public Measurement {
 public:
  AioMeasurement(const AioParams& p, const SelectedBackend& selected, Notes& notes)
      : p_(p), selected_(selected), backend_(*selected.backend), notes_(notes), nworkers_(p.workers) {
    across_ = p.cluster && p.cluster->multi();
    rank_ = across_ ? p.cluster->rank() : 0;
    nranks_ = across_ ? p.cluster->size() : 1;
    attach_ = p.shared_files && rank_ != 0;
    // This rank's share of a write sweep (every shard unless --files shared).
    const auto r = static_cast<uint64_t>(rank_), n = static_cast<uint64_t>(nranks_);
    share_lo_ = p.shared_files ? p.shards() * r / n : 0;
    share_hi_ = p.shared_files ? p.shards() * (r + 1) / n : p.shards();
    if (p.phase_dump) phases_.push_back({"aio_dump", "dump", {IoOp::kWrite}});
    if (p.phase_load) phases_.push_back({"aio_load", "load", {IoOp::kRead}});
    if (p.phase_mix) {
      phases_.push_back({"aio_mixed", "mixed", {IoOp::kWrite}});
      phases_.back().sweeps.insert(phases_.back().sweeps.end(), static_cast<size_t>(p.mix), IoOp::kRead);
    }
  }

  void check() override;
  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override {  // worker w is placed with device --device-id + w
    std::vector<int> v;
    for (int w = 0; w < nworkers_; ++w) v.push_back(p_.device_id + w);
    return v;
  }
  void placed(const NumaPlan& plan) override { numa_ = plan; }
  MemoryNeeds needs() const override { return aio_needs(p_, backend_); }
  NeedsText needs_text() const override { return aio_needs_text(p_); }
  // Each phase's epochs move every worker's epoch bytes, a mixed one (1 + R) times;
  // nominally a disk moves 1 GiB/s.
  TimeEstimate estimate() const override {
    TimeEstimate t;
    t.unit = "epoch";
    t.nominal_gib_s = 1.0;
    for (const AioPhase& phase : phases_) {
      t.rounds += static_cast<uint64_t>(p_.epochs);
      t.moved += (phase.count(IoOp::kWrite) + phase.count(IoOp::kRead)) * p_.total *
                 static_cast<uint64_t>(nworkers_) * static_cast<uint64_t>(p_.epochs);
    }
    return t;
  }
  void prepare() override;

  size_t phases() const override { return phases_.size(); }
  LoopShape shape(size_t phase) const override {
    LoopShape s;
    s.progress_name = phases_[phase].name;
    s.workers = nworkers_;
    s.fanout = nworkers_ == 1 ? Fanout::kInline : Fanout::kFork;
    s.isolate = nworkers_ == 1;
    s.hooks_apart = p_.validate_each;
    s.warmup = 0;
    s.iterations = p_.epochs;
    s.progress_bytes = p_.io_size;
    s.worker_name = s.progress_name + " worker";
    s.unit = "epoch";
    s.running = s.waiting = "I/O in flight";
    return s;
  }
  void host(size_t, const std::function<void()>& run_workers) override {
    if (p_.alloc) backend_.init_process();  // the pinned buffers' runtime, in the child only
    run_workers();
  }
  std::unique_ptr<LoopWorker> make_worker(size_t phase, int w) override {
    return std::make_unique<AioWorker>(setups_[static_cast<size_t>(w)], phases_[phase]);
  }
  // Across ranks every rank's counters are read between two barriers: no rank's
  // untimed work (setup, --validate's read-back) lands in another's window.
  void before_loop(size_t phase) override {
    if (across_)
      cluster_barrier(*p_.cluster, cluster_final_timeout_ns(), phases_[phase].name + std::string(": before its disk counters"));
    for (DeviceShare& d : devices_)
      if (d.why.empty() && !read_disk_bytes(d.dev, d.before)) d.why = "cannot read " + d.dev.source();
  }
  void after_loop(size_t phase) override {
    if (across_)
      cluster_barrier(*p_.cluster, cluster_final_timeout_ns(), phases_[phase].name + std::string(": after its last epoch"));
  }
  void describe(size_t phase, const LoopResult& loop, CaseResult& r, Notes& notes) override;
  // The dump's files read back once after its epochs (with each: every epoch was).
  void check_result(size_t phase) override {
    if (p_.validate && !p_.validate_each && phases_[phase].label == std::string("dump"))
      for (const AioSetup& s : setups_) verify_files(s.files, p_, s.key);
  }
  void finish() override;
  void done(Notes& notes) override;
  std::string retried() const override { return "short transfers"; }

 private:
  void make_shard_files();
  void find_devices();
  std::vector<DeviceIo> device_io(const AioPhase& phase, const std::string& name, Notes& notes) const;
  std::string brief(const AioPhase& phase) const;
  // Files in workspace w: every nws-th from the w-th.
  uint64_t files_in(size_t w) const {
    const size_t nws = p_.workspaces.size();
    return p_.io_number > w ? (p_.io_number - w + nws - 1) / nws : 0;
  }

  const AioParams& p_;
  const SelectedBackend& selected_;
  Backend& backend_;
  Notes& notes_;
  const int nworkers_;
  bool across_ = false, attach_ = false;
  int rank_ = 0, nranks_ = 1;
  uint64_t share_lo_ = 0, share_hi_ = 0;
  long shared_pid_ = 0;  // --files shared: rank 0's pid, which names the one set
  std::vector<AioPhase> phases_;
  NumaPlan numa_;
  WorkspaceSet files_;
  bool direct_ = true;
  std::vector<std::unique_ptr<ShardSet>> sets_;
  std::vector<AioSetup> setups_;
  std::vector<DeviceShare> devices_;
};

const char kMade[] = "rank 0 making the shared shard files";

void AioMeasurement::check() {
  const int n = nworkers_;
  // --io-type alloc: worker w pins on device w, or every one on --device-id.
  if (p_.alloc && !p_.device_given && n > 1)
    check_device_count("--workers", n, n, selected_.probe.device_count, backend_.name());
  else if (p_.alloc)
    check_device_count("--device-id", p_.device_id, p_.device_id + 1, selected_.probe.device_count, backend_.name());
  if (p_.shared_files && p_.shards() < static_cast<uint64_t>(nranks_))
    throw UsageError("option --files shared: " + std::to_string(p_.shards()) + " shards cannot be shared by " +
                     std::to_string(nranks_) + " ranks (each dumps its share); raise --io-number");
}

// Every directory is made and checked (filesystem, O_DIRECT, free space for its
// share) before any shard file is written; then each worker's files.
// --files shared across ranks: rank 0 makes the workspaces and the one file set
// first; the others wait for it (a failure on either side ends this wait on every
// rank), then attach to rank 0's files.
void AioMeasurement::prepare() {
  if (attach_) {
    cluster_barrier(*p_.cluster, cluster_final_timeout_ns(), kMade);
    shared_pid_ = static_cast<long>(p_.cluster->from_rank0(0, cluster_final_timeout_ns(), kMade));
  }
  direct_ = open_workspaces(files_, p_.workspaces, p_.buffered, notes_);
  const uint64_t k = p_.shards_per_file;
  if (p_.workspaces.size() > 1 && !attach_) {
    // Several workspaces: each one's share must fit before any is written, so a
    // full one is found before the others were filled. (One workspace: the
    // reservation finds it, counting how far it got.)
    check_workspace_space(
        files_, [&](size_t w) { return files_in(w) * k * p_.io_size * static_cast<uint64_t>(nworkers_); },
        [&](size_t w) {
          return std::to_string(files_in(w)) + (k == 1 ? " shards" : " files of " + std::to_string(k) + " shards") +
                 " of " + std::to_string(p_.io_number) +
                 (nworkers_ > 1 ? ", for each of " + std::to_string(nworkers_) + " workers" : "");
        },
        "free space there, or lower --io-number or --io-size");
  }
  make_shard_files();
  // No dump phase (--phases load, mix): the loads would read what the reservation
  // left (unwritten extents, which no disk reads), so every shard gets the data a
  // dump writes now, untimed (its time is the first phase's setup).
  if (!p_.phase_dump && !attach_) {  // --files shared: rank 0 writes the one set
    auto scratch = map_anonymous(static_cast<size_t>(p_.io_size), true);  // 4 KiB aligned, as O_DIRECT needs
    for (const AioSetup& s : setups_)
      for (size_t i = 0; i < s.shards.size(); ++i) {
        check_interrupted();
        write_shard(s.files, i, p_, s.key, static_cast<char*>(scratch->host_ptr()), false,
                    "writing the shard files before the loads (no dump phase)");
      }
  }
  if (p_.shared_files && across_ && !attach_) {
    cluster_barrier(*p_.cluster, cluster_final_timeout_ns(), kMade);
    p_.cluster->from_rank0(static_cast<long>(getpid()), cluster_final_timeout_ns(), kMade);
  }
  find_devices();
}

// Each worker its own files (tagged with its number when there are several),
// spread over the workspaces the same way; each file's k shards reserved at once.
void AioMeasurement::make_shard_files() {
  const size_t nws = p_.workspaces.size();
  const uint64_t k = p_.shards_per_file;
  setups_.reserve(static_cast<size_t>(nworkers_));
  for (int wk = 0; wk < nworkers_; ++wk) {
    sets_.push_back(std::make_unique<ShardSet>(files_));
    ShardSet& set = *sets_.back();
    // Per rank, files carry the rank; --files shared: one set named by rank 0's pid.
    const std::string tag = p_.shared_files ? std::string("shared")
                                            : (across_ ? "r" + std::to_string(rank_) : std::string()) +
                                                  (nworkers_ > 1 ? "w" + std::to_string(wk) : std::string());
    for (size_t w = 0; w < nws; ++w)
      set.files.push_back(std::make_unique<ShardFiles>(files_.workspaces[w]->path(), tag, shared_pid_));
    const int device = p_.device_given || nworkers_ == 1 ? p_.device_id : wk;
    setups_.push_back(AioSetup{p_, backend_, set, direct_, {}, device, p_.device_id + wk, numa_});
    AioSetup& setup = setups_.back();
    for (uint64_t i = 0; i < p_.io_number; ++i) {
      check_interrupted();
      const size_t w = set.where(static_cast<size_t>(i));
      if (attach_) set.files[w]->attach(direct_);
      const int err = attach_ ? 0 : set.files[w]->add(p_.io_size * k, direct_);
      if (err != 0)
        throw out_of_space("dump", files_, w, "reserving the shard files",
                           nworkers_ > 1 ? " of worker " + std::to_string(wk) + " of " + std::to_string(nworkers_) : "",
                           std::to_string(i) + " of " + std::to_string(p_.io_number) +
                               (k == 1 ? " shards" : " files of " + std::to_string(k) + " shards") + " (" +
                               shard_bytes_text(p_, i * k) + ")",
                           err, "the shard files were removed; free space or lower --io-number or --io-size");
      for (uint64_t sh = 0; sh < k; ++sh)
        setup.shards.push_back(Extent{set.fd(static_cast<size_t>(i)), sh * p_.io_size, static_cast<size_t>(p_.io_size)});
    }
    setup.write_lo = static_cast<size_t>(share_lo_);
    setup.write_shards.assign(setup.shards.begin() + static_cast<std::ptrdiff_t>(share_lo_),
                              setup.shards.begin() + static_cast<std::ptrdiff_t>(share_hi_));
  }
}

// One line per device: directories on one filesystem (its st_dev) or on one disk.
void AioMeasurement::find_devices() {
  const size_t nws = p_.workspaces.size();
  for (size_t w = 0; w < nws; ++w) {
    DeviceShare d;
    d.bytes_per_epoch = files_in(w) * p_.shards_per_file * p_.io_size * static_cast<uint64_t>(nworkers_);
    d.written_per_epoch = d.bytes_per_epoch;
    if (p_.shared_files) {  // the share's shards that live in workspace w
      d.written_per_epoch = 0;
      for (uint64_t i = share_lo_; i < share_hi_; ++i)
        if (file_of(p_, static_cast<size_t>(i)) % nws == w) d.written_per_epoch += p_.io_size;
    }
    const bool found = block_device_of(files_.workspaces[w]->path(), files_.fs[w].type, d.dev, d.why);
    if (!found) d.why += " at " + files_.workspaces[w]->path();
    auto same = std::find_if(devices_.begin(), devices_.end(), [&](const DeviceShare& x) {
      return (x.dev.id == d.dev.id && x.why.empty() == found) || (found && x.why.empty() && x.dev.name == d.dev.name);
    });
    if (same != devices_.end()) {
      same->bytes_per_epoch += d.bytes_per_epoch;
      same->written_per_epoch += d.written_per_epoch;
    } else {
      devices_.push_back(d);
    }
  }
}

// Per device, what each direction the phase moved should have reached it: a mixed
// epoch's dump sweep written, its load sweeps read (one entry each).
std::vector<DeviceIo> AioMeasurement::device_io(const AioPhase& phase, const std::string& name, Notes& notes) const {
  std::vector<DeviceIo> out;
  for (const DeviceShare& d : devices_) {
    DiskBytes after;
    const bool found = d.why.empty() && read_disk_bytes(d.dev, after);
    for (IoOp op : {IoOp::kWrite, IoOp::kRead}) {
      const uint64_t sweeps = phase.count(op);
      if (sweeps == 0) continue;
      DeviceIo io;
      io.direction = op == IoOp::kWrite ? "written" : "read";
      io.expected = (op == IoOp::kWrite ? d.written_per_epoch : d.bytes_per_epoch) *
                    static_cast<uint64_t>(p_.epochs) * sweeps;
      if (found) {
        io.device = d.dev.name;
        io.bytes = op == IoOp::kWrite ? after.written - d.before.written : after.read - d.before.read;
        if (static_cast<double>(io.bytes) < 0.95 * static_cast<double>(io.expected)) {
          char pct[32];
          std::snprintf(pct, sizeof pct, "%.1f", 100.0 * static_cast<double>(io.bytes) / static_cast<double>(io.expected));
          notes.note(name + ": device " + io.device + " " + (op == IoOp::kWrite ? "wrote " : "read ") +
                     format_bytes(io.bytes) + " of " + format_bytes(io.expected) + " (" + pct +
                     "%), below 95%: part of the I/O did not reach that disk (page cache, or another device)");
        }
      } else {
        io.why = d.why.empty() ? "cannot read " + d.dev.source() : d.why;
      }
      out.push_back(io);
    }
  }
  return out;
}

void AioMeasurement::describe(size_t index, const LoopResult& loop, CaseResult& r, Notes& notes) {
  const AioPhase& phase = phases_[index];
  AioResult aio;
  aio.device_io = device_io(phase, r.name, notes);
  aio.both_ways = phase.mixed();
  keep_worker_notes(loop, r, notes);  // how --io-type alloc's buffers were made
  // A mixed epoch goes both ways: From the host buffers To the files, then back.
  // --io-type alloc with O_DIRECT where the backend's pinned memory cannot take it: our
  // own registered mapping (make_io_buffer), named as such.
  const bool own_alloc = p_.alloc && io_buffer_is_own(backend_, direct_);
  // mmap buffers are the host's own memory whatever the backend: "host::mmap::0".
  const std::string host = (p_.alloc ? backend_.label_prefix() : std::string("host")) + "::" +
                           (own_alloc ? "odirect_mmap" : p_.alloc ? "host" : "mmap") + "::" +
                           (nworkers_ > 1 || across_ ? std::string("all") : std::to_string(p_.device_id));
  const std::string file = "file::" + files_.disks();  // the disk and filesystem: "file::vda:ext4"
  r.brief = brief(phase);
  r.from = phase.writes() ? host : file;
  r.to = phase.writes() ? file : host;
  r.method = std::string(engine_method_label(p_.engine)) + (direct_ ? "" : "+BUF");
  r.block_bytes = p_.io_size;
  // I/Os of block_bytes and bytes per epoch (every sweep of it), over all workers;
  // IO is the slowest worker's, so BW = every worker's bytes / IO avg.
  // --files shared: a write sweep moves this rank's share, a read sweep every shard.
  const uint64_t ios = phase.count(IoOp::kWrite) * (share_hi_ - share_lo_) + phase.count(IoOp::kRead) * p_.shards();
  r.count = ios * static_cast<uint64_t>(nworkers_);
  r.bytes = ios * p_.io_size * static_cast<uint64_t>(nworkers_);
  const double worker_bytes = static_cast<double>(ios * p_.io_size);
  if (nworkers_ > 1)
    for (double avg_ns : loop.worker_measured_avg)
      aio.worker_gib_s.push_back(avg_ns > 0 ? worker_bytes / (avg_ns * 1e-9) / 1073741824.0 : 0.0);
  r.devices = 1;
  r.iterations = p_.epochs;
  r.extras.put(aio);
  r.kv_request = phase.mixed() ? "mixed epoch" : phase.label;  // one store: no cards
  r.kv_on_cards = false;
  r.path = phase.mixed() ? "host memory <-> disk" : phase.count(IoOp::kRead) > 0 ? "disk -> host memory" : "host memory -> disk";
  r.measured = "IO";
  r.stages = loop_stages(loop, r.measured);
  // Loads are checked as each lands (a mixed epoch's too); the dump once after its
  // epochs, or per epoch with each.
  if (p_.validate) r.validate = phase.count(IoOp::kRead) > 0 || p_.validate_each ? "each" : "end";
  r.numa.mode = numa_mode_name(numa_.mode);
  r.numa.workers = loop.placements;
}

// The title of a phase's result: what it moved, where, how.
std::string AioMeasurement::brief(const AioPhase& phase) const {
  const uint64_t k = p_.shards_per_file;
  const std::string how = " with " + std::string(engine_option_name(p_.engine)) + ", " +
                          (direct_ ? "O_DIRECT" : "buffered") + ", iodepth " + std::to_string(p_.iodepth) +
                          (p_.engine == AioEngineKind::kPsync ? " (threads)" : "") +
                          (p_.buffers < static_cast<uint64_t>(p_.iodepth)
                               ? " (" + std::to_string(p_.buffers) + " in flight at most: one per shard)"
                               : "");
  const std::string shards_text =
      k == 1 ? std::to_string(p_.io_number) + " shards of " + format_bytes(p_.io_size)
             : std::to_string(p_.io_number) + " files of " + std::to_string(k) + " shards of " +
                   format_bytes(p_.io_size) + " (" + std::to_string(p_.shards()) + " I/Os)";
  const bool own_alloc = p_.alloc && io_buffer_is_own(backend_, direct_);
  const std::string memory_text =
      std::to_string(p_.buffers) + " reused " +
      (!p_.alloc ? std::string("mmap buffers")
                 : std::string(own_alloc ? "registered mmap" : "pinned") +
                       (nworkers_ > 1 && !p_.device_given ? std::string(" buffers of its own device (worker w: device w)")
                                                          : " buffers of device " + std::to_string(p_.device_id)));
  // --workers W > 1: every worker process its own files and buffers.
  const std::string workers_text =
      (nworkers_ == 1 ? ""
                      : ", in each of " + std::to_string(nworkers_) + " worker processes with its own files and buffers") +
      (p_.shared_files ? std::string("; one shared file set: each of ") + std::to_string(nranks_) + " rank" +
                             (nranks_ == 1 ? "" : "s") + " dumps its contiguous share of the shards, every rank loads all"
                       : std::string());
  const std::string files_text = "files in " + files_.dirs_text();
  const std::string label = phase.label;
  if (label == "dump")
    return "write " + shards_text + " from " + memory_text + " to " + files_text + how + workers_text;
  if (label == "load")
    return "read " + shards_text + " from " + files_text + " into " + memory_text + how + workers_text;
  return "1 dump + " + std::to_string(p_.mix) + " load" + (p_.mix == 1 ? "" : "s") + " of " + shards_text +
         " per epoch, timed together: written from and read back into " + memory_text + ", " + files_text + how +
         workers_text;
}

// --files shared: rank 0 removes the one set only after every rank is done with
// it; the others leave it to rank 0 (on a failure every rank removes what it can).
void AioMeasurement::finish() {
  if (!(p_.shared_files && across_)) return;
  cluster_barrier(*p_.cluster, cluster_final_timeout_ns(), "the end of the shared shard files");
  if (attach_)
    for (const auto& set : sets_)
      for (const auto& f : set->files) f->keep();
}

void AioMeasurement::done(Notes& notes) {
  if (!p_.keep || attach_) return;
  std::string dirs;
  size_t kept = 0;
  for (const auto& set : sets_) {
    for (const auto& f : set->files) f->keep();
    kept += set->size();
  }
  for (size_t w = 0; w < p_.workspaces.size(); ++w) {
    files_.workspaces[w]->keep();
    dirs += (w ? ", " : "") + files_.workspaces[w]->path();
  }
  notes.tell("kept " + std::to_string(kept) + " shard files in " + dirs + " (--keep)");
}

}  // namespace

void measure_aio(const AioParams& p, const SelectedBackend& selected, ResultWriter& writer,
                 const std::function<void()>& begin, std::string& current, Notes& notes) {
  AioMeasurement m(p, selected, notes);
  run_measurement(m, HarnessContext(writer, notes, &selected, p.cluster, p.timeout_s, begin, &current));
}

}  // namespace ds
