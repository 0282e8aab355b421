#include "cases/case_runner.h"
#include "cases/copy_buffers.h"
#include "cases/duplex_runner.h"
#include "cases/gather_result.h"
#include "cases/table_result.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "copy_methods/initiator.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "measurement/measurement.h"
#include "measurement/paged_figure.h"
#include "core/stats.h"
#include "runner/numa_plan.h"
#include "runner/timed_loop.h"

namespace ds {

// Address a copy of `buf` uses: device memory by its device address; host memory
// by its CPU address, except on the direct path, which reads the mapped address.
char* copy_address(const Buffer& buf, CopyMethod method) {
  if (is_device_kind(buf.kind) || method == CopyMethod::kDirect) return static_cast<char*>(buf.device);
  return static_cast<char*>(buf.host);
}

const Layout& layout_of(const CopyPlacement& at, const Buffer& buf) { return at.side(is_device_kind(buf.kind)); }

uint64_t region_of(const CopyPlacement& at, BufKind kind) { return at.side(is_device_kind(kind)).region_bytes(); }

CopyPlan plan_fragments(const Buffer& src, const Buffer& dst, const CopyPlacement& at, CopyDir dir, CopyMethod method,
                        int streams, SubmitMode mode) {
  const Layout& from = layout_of(at, src);
  const Layout& to = layout_of(at, dst);
  if (from.fragments() != to.fragments() || from.fragments_per_task() != to.fragments_per_task())
    throw RunError("a copy plan needs the same fragments on both sides");
  CopyPlan plan;
  plan.dir = dir;
  plan.fragments_per_task = from.fragments_per_task();
  plan.streams = streams;
  plan.submit_mode = mode;
  char* s = copy_address(src, method);
  char* t = copy_address(dst, method);
  plan.copies.reserve(static_cast<size_t>(from.fragments()));
  for (uint64_t i = 0; i < from.fragments(); ++i) {
    const Fragment f = from.fragment(i);
    plan.copies.push_back({t + to.fragment(i).offset, s + f.offset, static_cast<size_t>(f.bytes)});
  }
  return plan;
}

// Every fragment of `layout` in `buf` gets the pattern of (owner, fragment index).
void fill_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout) {
  std::unique_ptr<Memory> staging;
  if (!buf.host) staging = alloc_pageable(static_cast<size_t>(layout.largest_fragment()));
  for (uint64_t i = 0; i < layout.fragments(); ++i) {
    const Fragment f = layout.fragment(i);
    const size_t n = static_cast<size_t>(f.bytes);
    if (buf.host) {
      pattern_fill(static_cast<char*>(buf.host) + f.offset, n, pattern_key(owner, i));
      continue;
    }
    pattern_fill(staging->host_ptr(), n, pattern_key(owner, i));
    dev.copy_sync({static_cast<char*>(buf.device) + f.offset, staging->host_ptr(), n}, CopyDir::kH2D);
  }
}

// --validate each, before an iteration: every fragment of `buf` gets the bitwise
// inverse of the pattern check_fragments expects there, so a byte the iteration
// does not copy fails the check. Device memory through `staging` (one fragment).
void clear_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout, Memory* staging) {
  for (uint64_t i = 0; i < layout.fragments(); ++i) {
    const Fragment f = layout.fragment(i);
    const size_t n = static_cast<size_t>(f.bytes);
    auto* p = static_cast<unsigned char*>(buf.host ? static_cast<char*>(buf.host) + f.offset : staging->host_ptr());
    pattern_fill(p, n, pattern_key(owner, i));
    for (size_t b = 0; b < n; ++b) p[b] = static_cast<unsigned char>(~p[b]);
    if (!buf.host)
      dev.copy_sync({static_cast<char*>(buf.device) + f.offset, staging->host_ptr(), n}, CopyDir::kH2D);
  }
}

// `when`: "" after the run, " iteration 3" with --validate each. `staging`: one
// fragment of pageable memory for device memory, or null to allocate one here.
void check_fragments(Device& dev, const Buffer& buf, int owner, const Layout& layout, const std::string& case_name,
                     int device, const std::string& when, Memory* staging_in) {
  std::unique_ptr<Memory> own;
  Memory* staging = staging_in;
  if (!buf.host && !staging) {
    own = alloc_pageable(static_cast<size_t>(layout.largest_fragment()));
    staging = own.get();
  }
  for (uint64_t i = 0; i < layout.fragments(); ++i) {
    const Fragment f = layout.fragment(i);
    const size_t n = static_cast<size_t>(f.bytes);
    const char* p;
    if (buf.host) {
      p = static_cast<const char*>(buf.host) + f.offset;
    } else {
      dev.copy_sync({staging->host_ptr(), static_cast<char*>(buf.device) + f.offset, n}, CopyDir::kD2H);
      p = static_cast<const char*>(staging->host_ptr());
    }
    const int64_t off = pattern_check(p, n, pattern_key(owner, i));
    if (off >= 0)
      throw RunError("validation failed: case " + case_name + " device " + std::to_string(device) + when +
                     " block " + std::to_string(i) + " first differing offset " + std::to_string(off));
  }
}

namespace {

// The layouts a source of `kind` is filled at, in order: with --compare-contiguous
// and a table on its side first that side's contiguous placement (so the contiguous
// pass reads memory that was written, as the paged one does), then its own; the
// own last, so where the two overlap it holds what the paged pass and the checks expect.
std::vector<Layout> source_fills(const CopyParams& p, BufKind kind) {
  const bool device = is_device_kind(kind);
  std::vector<Layout> fills;
  if (p.compare_contiguous && !(device ? p.device_table : p.host_table).slots.empty())
    fills.push_back(p.contiguous_placement().side(device));
  fills.push_back(p.placement().side(device));
  return fills;
}

// The path a case's copies take (CaseResult::path), by their direction.
const char* path_of(const CaseSpec& spec) {
  switch (direction(spec)) {
    case CopyDir::kH2D: return "host memory -> device";
    case CopyDir::kD2H: return "device -> host memory";
    case CopyDir::kD2D: return "device -> device";
    case CopyDir::kH2H: break;
  }
  return "host memory -> host memory";
}

// --compare-contiguous: the values of `v` (one per measured loop iteration) of the
// contiguous pass, or of the paged one.
std::vector<int64_t> pass_values(const std::vector<int64_t>& v, const CopyParams& p, bool contiguous) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < v.size(); ++i)
    if (p.contiguous_pass(p.warmup * 2 + static_cast<int>(i)) == contiguous) out.push_back(v[i]);
  return out;
}

// --compare-contiguous: the loop's per-iteration values of the paged pass alone.
LoopResult paged_pass(LoopResult loop, const CopyParams& p) {
  if (!p.compare_contiguous) return loop;
  for (std::vector<int64_t>* v : {&loop.submit, &loop.measured, &loop.wall, &loop.start_skew})
    *v = pass_values(*v, p, false);
  return loop;
}

Fanout fanout_of(Topology t) {
  switch (t) {
    case Topology::kSingle: return Fanout::kInline;
    case Topology::kThreads: return Fanout::kThreads;
    case Topology::kFork: return Fanout::kFork;
  }
  return Fanout::kInline;
}

// A worker's notes, by kind: "single" (batches issued as single copies: Method CE),
// "loop" (batches the runtime looped itself: Method CE-BATCH-LOOP), "ungated" (why
// its streams were not, or not always, held by the gate) or "" (said and kept as it is).
std::string worker_notes(const Device& dev, const std::vector<WorkerNote>& own, const std::string& ungated) {
  std::vector<WorkerNote> notes{{"single", dev.batch_fallback()}, {"loop", dev.batch_runtime_loop()}};
  for (const std::string& n : dev.notes()) notes.push_back({"", n});
  notes.insert(notes.end(), own.begin(), own.end());
  notes.push_back({"ungated", ungated});
  return encode_worker_notes(notes);
}

CaseSpec with_method(CaseSpec spec, CopyMethod method) {
  spec.method = method;
  return spec;
}

NeedsText needs_text(const CaseSpec& spec, const CopyParams& p) {
  NeedsText t;
  t.what = spec.name;
  t.host_what = "host memory";
  t.host_detail = format_bytes(p.layout.unit_bytes()) + " x " + std::to_string(p.layout.units()) +
                  " blocks per buffer";
  t.lower = "lower -s, -n" + std::string(spec.topology == Topology::kSingle ? "" : " or -d");
  return t;
}

// What the workers of one case share: the source when there is one for all, or the
// one destination region each writes its own part of, made by the process that
// hosts them.
struct SharedSource {
  std::unique_ptr<ShmRegion> shm;       // fork cases: made here, inherited by the children (source or destination)
  std::unique_ptr<Device> coordinator;  // thread cases: device 0 holds the one source
  Buffer buffer;
};

// One device's part of a case: its buffers, plan and initiator (setup), the
// iterations, then validation.
class CopyWorker : public LoopWorker {
 public:
  CopyWorker(int w, const CaseSpec& spec, const CopyParams& p, Backend& backend, const MemoryNeeds& needs,
             SharedSource& shared, Notes& say)
      : placed_(p.numa, w), w_(w), spec_(spec), p_(p), at_(p.placement()), contiguous_at_(p.contiguous_placement()),
        say_(say) {
    dev_ = backend.open_device(w);
    if (!backend.device_memory_is_host() && needs.device_per_device > 0) {
      NeedsText t = needs_text(spec, p);
      t.lower = p.device_table.slots.empty() ? "lower -s or -n" : "lower -s, -n or --pool-blocks";
      check_device_needs(needs.device_per_device, dev_->free_memory(), w, t);
    }
    const Buffer* src = make_buffers(shared);
    CopyPlan plan = plan_copies(*src, at_);
    plan.gate = gate_streams(backend);
    // --compare-contiguous: the same copies between the same buffers with the blocks
    // at sequential slots, a second plan of the one initiator: both passes on the
    // same streams, events and gate, so that they differ only in the placement.
    std::vector<CopyPlan> plans;
    plans.push_back(std::move(plan));
    if (p.compare_contiguous) {
      plans.push_back(plan_copies(*src, contiguous_at_));
      plans.back().gate = plans.front().gate;
    }
    init_ = make_initiator(spec.method, *dev_, std::move(plans));
    if (p.validate_each && !dst_.host) staging_ = alloc_pageable(static_cast<size_t>(p.layout.largest_fragment()));
    // Where this worker's own host buffers are, now that they are filled (a shared
    // source is the run's, not the worker's: reported once with the result).
    if (src == &own_src_ && spec.src != BufKind::kShm && own_src_.host && !is_device_kind(spec.src))
      placed_.record().add_buffer("source", own_src_.host, own_src_.bytes);
    if (dst_.host && !is_device_kind(spec.dst) && spec.dst != BufKind::kShm)
      placed_.record().add_buffer("destination", dst_.host, dst_.bytes);
  }

  // --validate each: outside the timing (the loop calls these before the barrier
  // and after `done`), every iteration, warm-up included, so that warm-up runs
  // under the same conditions as the measured iterations.
  // With --compare-contiguous the checks are the paged pass's (the source holds the
  // pattern at the paged slots); the contiguous pass is timed only.
  void before_iteration(int index) override {
    if (p_.validate_each && !contiguous_pass(index))
      clear_fragments(*dev_, dst_, owner(), layout_of(at_, dst_), staging_.get());
  }
  void after_iteration(int index) override {
    if (!p_.validate_each || contiguous_pass(index)) return;
    const int i = index / p_.passes();
    const std::string when = i < p_.warmup ? " warm-up iteration " + std::to_string(i)
                                           : " iteration " + std::to_string(i - p_.warmup);
    check_fragments(*dev_, dst_, owner(), layout_of(at_, dst_), spec_.name, w_, when, staging_.get());
  }

  void iterate(int index, IterationRecord& r) override {
    init_->use(contiguous_pass(index) ? kContiguousPlan : kPagedPlan);
    init_->submit();
    r.submitted = now_ns();
    init_->wait();
  }
  int64_t measured_ns(const IterationRecord&) override { return init_->copy_ns(); }

  void finish() override {
    if (ungated_.empty()) ungated_ = init_->ungated();
    init_.reset();
    note_ = worker_notes(*dev_, notes_, ungated_);
    if (p_.validate && !p_.validate_each) check_fragments(*dev_, dst_, owner(), layout_of(at_, dst_), spec_.name, w_);
  }
  std::string note() const override { return note_; }
  const WorkerPlacement* placement() const override {
    return p_.numa.topology.nodes.empty() ? nullptr : &placed_.record();
  }

 private:
  // The source (its own, the shared region registered here, or the shared one) and
  // the destination; the source this worker copies from.
  const Buffer* make_buffers(SharedSource& shared) {
    // Each side its region: the request's bytes, or a block table's pool.
    const size_t per = static_cast<size_t>(region_of(at_, spec_.src));
    const size_t per_dst = static_cast<size_t>(region_of(at_, spec_.dst));
    // Only the direct path reads host memory through its registration; a CE copy from
    // memory the device could not register reads it unregistered, and says so.
    const bool direct = spec_.method == CopyMethod::kDirect;
    std::string unregistered;
    const Buffer* src = &shared.buffer;
    if (spec_.src == BufKind::kShm) {
      // The region is mapped in every child (inherited); each registers it itself.
      if (spec_.method == CopyMethod::kMemcpy) {
        own_src_.kind = BufKind::kShm;
        own_src_.host = own_src_.device = shared.shm->ptr();
        own_src_.bytes = per;
      } else if (direct) {
        own_src_ = register_region(BufKind::kShm, *dev_, shared.shm->ptr(), per);
      } else {
        own_src_ = register_region_for_ce(BufKind::kShm, *dev_, shared.shm->ptr(), per, &unregistered);
        unregistered_note("source", spec_.src, unregistered);
      }
      src = &own_src_;
    } else if (!spec_.shared_src) {
      own_src_ =
          direct ? make_buffer(spec_.src, *dev_, per) : make_buffer_for_ce(spec_.src, *dev_, per, &unregistered);
      unregistered_note("source", spec_.src, unregistered);
      for (const Layout& l : source_fills(p_, spec_.src)) fill_fragments(*dev_, own_src_, w_, l);
      src = &own_src_;
    }
    if (spec_.dst == BufKind::kShm) {
      // This device's own part of the one region (every part page aligned).
      char* part = static_cast<char*>(shared.shm->ptr()) + static_cast<size_t>(shared_part_stride(per_dst)) * w_;
      dst_ = direct ? register_region(BufKind::kShm, *dev_, part, per_dst)
                    : register_region_for_ce(BufKind::kShm, *dev_, part, per_dst, &unregistered);
    } else {
      dst_ = direct ? make_buffer(spec_.dst, *dev_, per_dst)
                    : make_buffer_for_ce(spec_.dst, *dev_, per_dst, &unregistered);
    }
    unregistered_note("destination", spec_.dst, unregistered);
    return src;
  }

  // Whether this worker's streams are held by the start gate; why not, in ungated_.
  bool gate_streams(const Backend& backend) {
    bool gate = p_.gate && ungated_reason(spec_, backend).empty();
    // Memory the device could not register is pageable to the runtime, like the
    // anonymous cases' (ungated_reason): never queued behind a hold.
    if (gate && left_unregistered_) {
      const std::string hazard = backend.gate_hazard(GateHazard::kPageableHost);
      if (!hazard.empty()) {
        gate = false;
        ungated_ = "a buffer left unregistered: " + hazard;
      }
    }
    // Device 0's memory copied to another device: let the copy go peer to peer.
    if (is_device_kind(spec_.src) && spec_.shared_src && w_ != 0) {
      std::string why;
      if (!dev_->enable_peer_access(0, &why)) {
        // Said at once, from where the worker runs: the copies may fail because of it.
        say_.note("device " + std::to_string(w_) + " has no peer access to device 0 (" + why +
                  "): the runtime stages these copies through the host or refuses them");
        // A staged copy may wait for its stream inside the call: never behind a hold.
        const std::string hazard = backend.gate_hazard(GateHazard::kStagedPeer);
        if (gate && !hazard.empty()) {
          gate = false;
          ungated_ = hazard;
        }
      }
    }
    return gate;
  }

  // A copy per fragment of the layout placed by `at`, from `src` to the destination.
  CopyPlan plan_copies(const Buffer& src, const CopyPlacement& at) const {
    return plan_fragments(src, dst_, at, direction(spec_), spec_.method, p_.streams, p_.submit_mode);
  }
  // --compare-contiguous: the loop iteration of the contiguous pass (CopyParams).
  bool contiguous_pass(int index) const { return p_.contiguous_pass(index); }

  int owner() const { return spec_.shared_src ? 0 : w_; }  // whose pattern the source holds

  void unregistered_note(const char* side, BufKind kind, const std::string& why) {
    if (why.empty()) return;
    left_unregistered_ = true;
    notes_.push_back({"", std::string(side) + " memory (" + label_kind(kind) + ") not registered with the device: " +
                              why + "; the CE copies use it unregistered"});
  }

  PlacementScope placed_;  // first: the CPUs and memory policy everything after is made under
  int w_;
  const CaseSpec& spec_;
  const CopyParams& p_;
  const CopyPlacement at_;  // each side's fragments: contiguous, or at a block table's slots
  const CopyPlacement contiguous_at_;  // --compare-contiguous: the same at sequential slots
  Notes& say_;
  std::unique_ptr<Device> dev_;  // first made, last gone
  Buffer own_src_, dst_;
  // The initiator's plans: the placement at the tables' slots, and with
  // --compare-contiguous the same at sequential slots.
  static constexpr size_t kPagedPlan = 0, kContiguousPlan = 1;
  std::unique_ptr<Initiator> init_;
  std::unique_ptr<Memory> staging_;  // --validate each on device memory: one fragment
  std::string ungated_;              // why this worker's streams were not always held
  bool left_unregistered_ = false;   // a host buffer the device could not register (CE reads it anyway)
  std::string note_;
  std::vector<WorkerNote> notes_;  // this worker's own (e.g. a source left unregistered)
};

}  // namespace

int participating_devices(const CaseSpec& spec, const CopyParams& p) {
  return spec.topology == Topology::kSingle ? 1 : p.devices;
}

MemoryNeeds memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  const Layout& layout = p.layout;
  const auto dd = static_cast<uint64_t>(participating_devices(spec, p));
  // Each buffer its side's region: the request's bytes, or a block table's pool.
  const CopyPlacement at = p.placement();
  const uint64_t per = region_of(at, spec.src), per_dst = region_of(at, spec.dst);
  MemoryNeeds n;
  auto add = [&](uint64_t bytes, const char* what) { n.add_host(what, bytes); };
  auto host_of = [&](BufKind k) { return !is_device_kind(k) || backend.device_memory_is_host(); };
  const uint64_t src_copies = spec.shared_src ? 1 : dd;
  if (spec.src == BufKind::kShm) n.shm = per;
  if (spec.dst == BufKind::kShm) n.shm = checked_mul(shared_part_stride(per_dst), dd, "shared destination bytes");
  if (host_of(spec.src)) add(checked_mul(per, src_copies, "source bytes"), "sources");
  if (host_of(spec.dst))
    add(spec.dst == BufKind::kShm ? n.shm : checked_mul(per_dst, dd, "destination bytes"), "destinations");
  if (is_device_kind(spec.src)) n.device_per_device += per;  // own source, or device 0's shared one
  if (is_device_kind(spec.dst)) n.device_per_device += per_dst;
  // The gather kernel's descriptor table: 40 bytes a fragment in device memory, and
  // its host image while it is built (copy_kernel.cu's GatherDesc).
  // --compare-contiguous: a second plan (and table) for the contiguous pass.
  const auto plans = static_cast<uint64_t>(p.passes());
  if (spec.method == CopyMethod::kKernelGather) {
    const uint64_t table = checked_mul(layout.fragments() * plans, kGatherDescriptorBytes, "gather table bytes");
    n.device_per_device += table;
    add(checked_mul(table, dd, "gather table bytes"), "gather tables");
  }
  // Validation and device fills stage one fragment in pageable memory per worker.
  add(checked_mul(layout.largest_fragment(), dd, "staging bytes"), "staging");
  // Bookkeeping: the copy plan (a descriptor per fragment, kept twice at most) and
  // the per-iteration records every worker writes.
  add(checked_mul(checked_mul(layout.fragments() * plans, 2 * sizeof(CopyDesc), "plan bytes"), dd, "plan bytes"),
      "plans");
  n.add_records(checked_mul(
      checked_mul(static_cast<uint64_t>(p.iterations) * plans, sizeof(IterationRecord), "record bytes"), dd,
      "record bytes"));
  // Locked per process, counting only what our own code mlock()s (the backend says
  // which): fork children each lock their own; threads share one process.
  const uint64_t procs_share = spec.topology == Topology::kFork ? 1 : dd;
  // A registration a CE case does without when it fails (make_buffer_for_ce) is not
  // required up front; the direct path's is.
  auto mlocked = [&](BufKind k) {
    HostLock how;
    return host_lock_of(k, &how) && backend.mlocks(how) &&
           (how != HostLock::kRegistration || spec.method == CopyMethod::kDirect);
  };
  const bool src_locked = mlocked(spec.src) && !(spec.src == BufKind::kShm && spec.method == CopyMethod::kMemcpy);
  uint64_t locked = 0;
  if (src_locked) locked += spec.shared_src ? per : checked_mul(per, procs_share, "locked bytes");
  if (mlocked(spec.dst)) locked += checked_mul(per_dst, procs_share, "locked bytes");
  n.locked_per_process = locked;
  n.devices = static_cast<int>(dd);
  n.device_in_host = backend.device_memory_is_host();
  return n;
}

void check_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  check_host_needs(memory_needs(spec, p, backend), needs_text(spec, p));
}

namespace {

// One copy case on the harness: one phase, a worker per participating device.
class CopyMeasurement : public Measurement {
 public:
  CopyMeasurement(const CaseSpec& spec, const CopyParams& p, Backend& backend, Notes& notes)
      : spec_(spec), p_(p), backend_(backend), notes_(notes), needs_(memory_needs(spec, p, backend)) {}

  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override { return first_devices(participating_devices(spec_, p_)); }
  void placed(const NumaPlan& plan) override { p_.numa = plan; }

  void check() override {
    const std::string why = unsupported_reason(spec_, backend_);
    if (!why.empty()) throw RunError(spec_.name + ": " + why);
  }
  MemoryNeeds needs() const override { return needs_; }
  NeedsText needs_text() const override { return ds::needs_text(spec_, p_); }
  // Every participating device moves its -s x -n x -f per iteration; nominally a CPU
  // memcpy (sim) moves 4 GiB/s over all workers, a host-device link 20 GiB/s a device.
  TimeEstimate estimate() const override {
    const int d = participating_devices(spec_, p_);
    const auto rounds = static_cast<uint64_t>(p_.warmup + p_.iterations);
    TimeEstimate t;
    t.rounds = rounds;
    t.unit = "iteration";
    t.moved = p_.layout.bytes() * static_cast<uint64_t>(d) * rounds * static_cast<uint64_t>(p_.passes());
    t.nominal_gib_s = backend_.device_memory_is_host() ? 4.0 : 20.0 * d;
    t.unfilled = unfilled_bytes();
    return t;
  }

  // A block table's pools are allocated whole, but setup fills only the request's
  // blocks in them (and with --compare-contiguous a paged source's sequential slots
  // too): what the same case allocates without the tables, plus those, is filled.
  uint64_t unfilled_bytes() const {
    if (!p_.paged()) return 0;
    CopyParams flat = p_;
    flat.device_table = flat.host_table = BlockTable();
    uint64_t filled = allocated_bytes(memory_needs(spec_, flat, backend_));
    if (source_fills(p_, spec_.src).size() > 1) {  // counted as memory_needs counts the source
      const bool once = spec_.shared_src && (!is_device_kind(spec_.src) || backend_.device_memory_is_host());
      filled += p_.layout.bytes() * static_cast<uint64_t>(once ? 1 : participating_devices(spec_, p_));
    }
    const uint64_t allocated = allocated_bytes(needs_);
    return allocated > filled ? allocated - filled : 0;
  }

  // Shared sources: for fork cases a POSIX shm region made here, its name removed
  // at once so nothing outlives the run even if this process is killed (children
  // inherit the mapping and each registers it); for thread cases one pinned or
  // device-0 buffer made next to the workers (host()).
  // --shm-numa-nodes: the region's parts are bound to their nodes before the fill
  // faults them in, and where every page landed is checked before any child
  // registers it.
  void prepare() override {
    const bool src = spec_.shared_src && spec_.src == BufKind::kShm;
    if (!src && !(spec_.shared_dst && spec_.dst == BufKind::kShm)) return;
    const Layout layout = p_.placement().host;  // shared memory is host memory: the host side's
    const std::vector<int>& nodes = p_.numa.shm_nodes;
    // A shared destination: one page-aligned part per device, each written by its own.
    const size_t bytes = static_cast<size_t>(
        src ? layout.region_bytes()
            : shared_part_stride(layout.region_bytes()) * static_cast<uint64_t>(participating_devices(spec_, p_)));
    shared_.shm = ShmRegion::create(bytes, nodes.empty());
    shared_.shm->unlink();
    if (!nodes.empty()) {
      bind_shared_region(shared_.shm->ptr(), bytes, nodes);
      touch_pages(shared_.shm->ptr(), bytes);
    }
    for (const Layout& l : src ? source_fills(p_, spec_.src) : std::vector<Layout>())
      for (uint64_t i = 0; i < l.fragments(); ++i) {
        const Fragment f = l.fragment(i);
        pattern_fill(static_cast<char*>(shared_.shm->ptr()) + f.offset, static_cast<size_t>(f.bytes),
                     pattern_key(0, i));
      }
    if (!nodes.empty()) shared_parts_ = check_shared_region(shared_.shm->ptr(), bytes, nodes);
  }

  LoopShape shape(size_t) const override {
    LoopShape s;
    s.progress_name = spec_.name;
    s.workers = participating_devices(spec_, p_);
    s.fanout = fanout_of(spec_.topology);
    // In-process topologies still run in a child of this process: the runtime is
    // never initialised here, so a later fork case starts from a clean process.
    s.isolate = spec_.topology != Topology::kFork;
    s.hooks_apart = p_.validate && p_.validate_each;  // no worker checks during another's timed part
    // --compare-contiguous: each iteration two loop iterations, the two passes (in turns).
    s.warmup = p_.warmup * p_.passes();
    s.iterations = p_.iterations * p_.passes();
    s.progress_bytes = p_.layout.unit_bytes();
    return s;
  }

  void host(size_t, const std::function<void()>& run_workers) override {
    backend_.init_process();  // in each child after fork, or in the isolated child
    if (spec_.topology != Topology::kFork && spec_.shared_src) {
      PlacementScope on_device0(p_.numa, 0);  // the one source sits with device 0
      shared_.coordinator = backend_.open_device(0);
      const CopyPlacement at = p_.placement();
      shared_.buffer = make_buffer(spec_.src, *shared_.coordinator, static_cast<size_t>(region_of(at, spec_.src)));
      for (const Layout& l : source_fills(p_, spec_.src)) fill_fragments(*shared_.coordinator, shared_.buffer, 0, l);
    }
    run_workers();
    shared_.buffer = Buffer();
    shared_.coordinator.reset();
  }

  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override {
    return std::make_unique<CopyWorker>(w, spec_, p_, backend_, needs_, shared_, notes_);
  }

  void describe(size_t, const LoopResult& both, CaseResult& r, Notes& notes) override {
    const LoopResult loop = paged_pass(both, p_);  // the result's own figures: the paged pass's
    const Layout& layout = p_.layout;
    const int d = participating_devices(spec_, p_);
    r.brief = spec_.brief;
    r.from = from_label(spec_, backend_);
    r.to = to_label(spec_, backend_);
    r.method = method_name(spec_, backend_);
    say_notes(loop, r, notes);
    r.block_bytes = layout.unit_bytes();
    r.count = static_cast<uint64_t>(d) * layout.units();
    r.bytes = static_cast<uint64_t>(d) * layout.bytes();
    r.devices = d;
    r.streams = spec_.method == CopyMethod::kCeMultiStream ? p_.streams : 1;
    if (spec_.method == CopyMethod::kCeMultiStream) r.submit_mode = submit_mode_name(p_.submit_mode);
    r.frags = layout.frags_option();
    r.copies = static_cast<uint64_t>(d) * layout.fragments();
    if (layout.per_fragment_regions()) r.layout = layout_label(layout);
    if (spec_.method == CopyMethod::kKernelGather) {
      // One launch per card and iteration, from a table of a descriptor per copy.
      GatherShape g;
      g.launches = static_cast<uint64_t>(d);
      g.table_bytes = r.copies * kGatherDescriptorBytes;
      r.extras.put(g);
    }
    put_tables(r, p_.device_table, p_.host_table);  // their seed and pool: every card the same tables
    if (p_.paged()) r.extras.put(paged_figure(both));
    r.iterations = p_.iterations;
    r.warmup = p_.warmup;
    r.measured = "Copy";
    r.path = path_of(spec_);
    r.stages = loop_stages(loop, r.measured);
    r.timer = backend_.event_timer();  // what timed Copy (the too-short note)
    r.timer_resolution_ns = backend_.event_resolution_ns();
    if (p_.validate) r.validate = p_.validate_each ? "each" : "end";
    if (!p_.numa.topology.nodes.empty()) {
      r.numa.mode = numa_mode_name(p_.numa.mode);
      r.numa.workers = loop.placements;
      r.numa.shared = shared_parts_;
    }
  }

 private:
  // The workers' notes, each said once: a batch the runtime could not take went out
  // one copy per fragment, and one it took may have been looped by the runtime (the
  // Method then names what ran: CE, or CE-BATCH-LOOP, not what was asked); streams
  // the gate did not hold make the result ungated. Every other note as it is.
  void say_notes(const LoopResult& loop, CaseResult& r, Notes& notes) const {
    const std::string& name = spec_.name;
    const std::string ce = method_name(with_method(spec_, CopyMethod::kCe), backend_);
    const std::string batch = method_label(CopyMethod::kCeBatch, backend_);
    std::string looped = r.method;
    if (looped.compare(0, batch.size(), batch) == 0) looped.insert(batch.size(), "-LOOP");
    bool single = false, runtime_loop = false;
    std::vector<std::string> ungated;  // why some worker's streams were not (always) held
    const std::string static_ungated = p_.gate ? ungated_reason(spec_, backend_) : "";
    if (!static_ungated.empty()) ungated.push_back(static_ungated);
    for (const WorkerNote& n : decode_worker_notes(loop.notes)) {
      if (n.kind == "ungated") {
        if (std::find(ungated.begin(), ungated.end(), n.text) == ungated.end()) ungated.push_back(n.text);
        continue;
      }
      if (std::find(r.notes.begin(), r.notes.end(), n.text) != r.notes.end()) continue;
      r.notes.push_back(n.text);
      if (n.kind == "single") {
        single = true;
        notes.note(name + ": " + n.text + ", so every block was its own copy (Method " + ce + ")");
      } else if (n.kind == "loop") {
        runtime_loop = true;
        notes.note(name + ": " + n.text + " (Method " + (spec_.method == CopyMethod::kCeBatch ? looped : r.method) +
                   ")");
      } else {
        notes.note(name + ": " + n.text);
      }
    }
    if (spec_.method == CopyMethod::kCeBatch) r.method = single ? ce : runtime_loop ? looped : r.method;
    // Gated only if every worker's streams were held in every iteration.
    r.stream_start_gate = p_.gate && ungated.empty();
    for (const std::string& why : ungated) {
      r.notes.push_back(why + ": ran ungated");
      notes.note(name + ": " + why + ", so it ran ungated");
    }
  }

  // A block table: the Paged line, and with --compare-contiguous the contiguous
  // pass's times (one of each iteration's two loop iterations: CopyParams::contiguous_pass).
  PagedFigure paged_figure(const LoopResult& both) const {
    PagedFigure f = paged_figure_head(p_.device_table, p_.host_table, p_.compare_contiguous);
    if (f.compared) {
      f.contiguous.samples = pass_values(both.measured, p_, true);
      f.contiguous.ns = compute_stats(f.contiguous.samples);
    }
    return f;
  }

  const CaseSpec& spec_;
  CopyParams p_;  // its placement plan made by the harness (placed())
  Backend& backend_;
  Notes& notes_;
  const MemoryNeeds needs_;
  SharedSource shared_;
  std::vector<BufferPlacement> shared_parts_;
};

}  // namespace

void run_case(const CaseSpec& spec, const CopyParams& p, const SelectedBackend& selected, ResultWriter& writer,
              Notes& notes, std::string* previous_plan) {
  if (spec.duplex) return run_duplex_case(spec, p, selected, writer, notes, previous_plan);
  CopyMeasurement m(spec, p, *selected.backend, notes);
  HarnessContext ctx(writer, notes, &selected, p.cluster, p.timeout_s);
  ctx.finish_writer = false;
  ctx.previous_plan = previous_plan;
  run_measurement(m, ctx);
}

}  // namespace ds
