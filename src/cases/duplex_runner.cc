// The duplex copy cases: on every card at once, H2D from its host buffer to its own
// device buffer and D2H from another device buffer of its own to another host
// buffer, each direction on its own streams (its own initiator). The host side is
// the spec's source kind both ways: pinned, O_DIRECT-style, or one shared region
// (the MLA case: every card reads the region's one H2D source and writes its own
// part of the region's D2H side). One phase
// of rounds, each round three loop iterations with the same buffers, streams and
// cards: both directions together, H2D alone, D2H alone (as load's passes); with
// --compare-contiguous a fourth, both directions together with the blocks at
// sequential slots of the same pools, on the same streams (a second plan of each
// direction's initiator).
#include "cases/duplex_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <typeinfo>
#include <vector>

#include "cases/copy_buffers.h"
#include "cases/duplex_result.h"
#include "cases/table_result.h"
#include "measurement/paged_figure.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/units.h"
#include "measurement/measurement.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "runner/numa_plan.h"
#include "runner/shared_mapping.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

enum Pass { kTogether, kH2DAlone, kD2HAlone, kContiguous };

// Loop iterations per round: 3, with --compare-contiguous 4.
int passes_of(const CopyParams& p) { return p.compare_contiguous ? 4 : 3; }

// The pass of loop iteration `index` (warm-up included): together, H2D alone, D2H
// alone; with --compare-contiguous the contiguous pass takes turns with the together
// pass for the round's first place (ABBA, as copy's passes: neither always finds
// the other's data in the caches), the alone passes last, so a paged pass is the last
// to write every destination (what --validate checks).
Pass pass_of(const CopyParams& p, int index) {
  const int n = passes_of(p), slot = index % n;
  if (n == 3) return static_cast<Pass>(slot);
  if (slot >= 2) return slot == 2 ? kH2DAlone : kD2HAlone;
  const bool contiguous_first = (index / n) % 2 == 0;
  return (slot == 0) == contiguous_first ? kContiguous : kTogether;
}
// The D2H source's pattern owner: apart from every H2D source's.
constexpr int kD2HOwner = 1 << 20;

// Each worker's two Copy times of one loop iteration, written in the worker (a
// forked child) into memory shared with this process (0: the direction did not run).
struct DirTimes {
  int64_t h2d_ns;
  int64_t d2h_ns;
};

// A direction's call (its copies' submission, the wait for them, its events' time):
// a failure of the runtime's names the direction, "D2H copy: <call> failed ...";
// aclrtMemcpyAsync, for one, is the same call both ways. A worker stopped, the
// run interrupted: as they are.
template <typename F>
auto in_direction(const char* dir, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const RunError& e) {
    if (typeid(e) != typeid(RunError)) throw;
    throw RunError(std::string(dir) + " copy: " + e.what());
  }
}

// One card's part: two buffer pairs, two initiators (each its own streams), each
// direction's on a device handle of its own: a runtime that times several streams
// on one timing stream per handle (ascend: AscendDevice::record), which waits for
// the events in submission order, would otherwise stamp D2H's start after H2D's
// end, and time a direction by the other's.
class DuplexWorker : public LoopWorker {
 public:
  // up, down: each direction's sides (a block table's pool on the device side, each
  // direction its own pool of the same table).
  // up_seq, down_seq: the same at sequential slots (--compare-contiguous).
  DuplexWorker(int w, const CaseSpec& spec, const CopyParams& p, const CopyPlacement& up, const CopyPlacement& down,
               const CopyPlacement& up_seq, const CopyPlacement& down_seq, Backend& backend, const MemoryNeeds& needs,
               DirTimes* times, const ShmRegion* shm)
      : placed_(p.numa, w), w_(w), up_owner_(shm ? 0 : w), spec_(spec), p_(p), up_at_(up), down_at_(down),
        down_(down.host), times_(times) {
    dev_ = backend.open_device(w);
    down_dev_ = backend.open_device(w);
    if (!backend.device_memory_is_host() && needs.device_per_device > 0) {
      NeedsText t{spec.name, "device memory", "", "lower -s, -n or --duplex-ratio"};
      check_device_needs(needs.device_per_device, dev_->free_memory(), w, t);
    }
    up_dst_ = own(BufKind::kDevice, up.device.region_bytes());
    down_src_ = own(BufKind::kDevice, down.device.region_bytes());
    const uint64_t up_host = up.host.region_bytes(), down_host = down.host.region_bytes();
    if (shm) {
      // The region: the H2D source (filled by the parent), then a part per card.
      char* base = static_cast<char*>(shm->ptr());
      const uint64_t head = shared_part_stride(up_host);
      up_src_ = region(base, up_host);
      down_dst_ = region(base + head + shared_part_stride(down_host) * static_cast<uint64_t>(w), down_host);
    } else {
      up_src_ = own(spec.src, up_host);
      down_dst_ = own(spec.src, down_host);
      // The contiguous pass's source slots first, the paged pass's last (where they
      // overlap, what the paged pass and the checks expect).
      if (p.compare_contiguous) fill_fragments(*dev_, up_src_, w, up_seq.host);
      fill_fragments(*dev_, up_src_, w, up.host);
    }
    if (p.compare_contiguous) fill_fragments(*dev_, down_src_, kD2HOwner + w, down_seq.device);
    fill_fragments(*dev_, down_src_, kD2HOwner + w, down.device);
    // Each direction one initiator: the paged plan, and with --compare-contiguous the
    // contiguous one on the same streams and events.
    std::vector<CopyPlan> ups, downs;
    ups.push_back(plan(up_src_, up_dst_, up, CopyDir::kH2D));
    downs.push_back(plan(down_src_, down_dst_, down, CopyDir::kD2H));
    if (p.compare_contiguous) {
      ups.push_back(plan(up_src_, up_dst_, up_seq, CopyDir::kH2D));
      downs.push_back(plan(down_src_, down_dst_, down_seq, CopyDir::kD2H));
    }
    up_ = make_initiator(spec.method, *dev_, std::move(ups));
    down_init_ = make_initiator(spec.method, *down_dev_, std::move(downs));
    if (p.validate_each)
      staging_ = alloc_pageable(static_cast<size_t>(std::max(p.layout.largest_fragment(), down.host.largest_fragment())));
    if (!shm) {  // a shared region is the run's, not the card's
      placed_.record().add_buffer("h2d source", up_src_.host, up_src_.bytes);
      placed_.record().add_buffer("d2h destination", down_dst_.host, down_dst_.bytes);
    }
  }

  // --validate each: the paged passes' (the contiguous pass is timed only). Then,
  // untimed, the pass's streams readied (Device::ready_streams; sim: copy threads up
  // and apart before the first submission), H2D's first: the one this thread runs
  // itself when it waits.
  void before_iteration(int index) override {
    const Pass pass = pass_of(p_, index);
    clear_before(pass);
    ready_.clear();
    if (pass != kD2HAlone) up_->add_streams(ready_);
    if (pass != kH2DAlone) down_init_->add_streams(ready_);
    dev_->ready_streams(ready_.data(), ready_.size());
  }
  void clear_before(Pass pass) {
    if (!p_.validate_each || pass == kContiguous) return;
    if (pass != kD2HAlone) clear_fragments(*dev_, up_dst_, up_owner_, up_at_.device, staging_.get());
    if (pass != kH2DAlone) clear_fragments(*dev_, down_dst_, kD2HOwner + w_, down_, staging_.get());
  }
  // --validate each: what the pass copied, after every pass (warm-up included).
  void after_iteration(int index) override {
    const Pass pass = pass_of(p_, index);
    if (!p_.validate_each || pass == kContiguous) return;
    const int round = index / passes_of(p_);
    const std::string when = std::string(round < p_.warmup ? " warm-up" : "") + " iteration " +
                             std::to_string(round < p_.warmup ? round : round - p_.warmup) +
                             (pass == kTogether ? " (together)" : " (alone)");
    if (pass != kD2HAlone)
      check_fragments(*dev_, up_dst_, up_owner_, up_at_.device, spec_.name, w_, " H2D" + when, staging_.get());
    if (pass != kH2DAlone)
      check_fragments(*dev_, down_dst_, kD2HOwner + w_, down_, spec_.name, w_, " D2H" + when, staging_.get());
  }

  void iterate(int index, IterationRecord& r) override {
    index_ = index;
    const Pass pass = pass_of(p_, index);
    const bool up = pass != kD2HAlone, down = pass != kH2DAlone;
    const size_t plan = pass == kContiguous ? 1 : 0;
    up_->use(plan);
    down_init_->use(plan);
    if (up) in_direction("H2D", [&] { up_->submit(); });
    if (down) in_direction("D2H", [&] { down_init_->submit(); });
    r.submitted = now_ns();
    if (up) in_direction("H2D", [&] { up_->wait(); });
    if (down) in_direction("D2H", [&] { down_init_->wait(); });
  }
  // The pass's Copy: the longer direction's (both started together), each
  // direction's own kept for the result.
  int64_t measured_ns(const IterationRecord&) override {
    const Pass pass = pass_of(p_, index_);
    DirTimes t{pass != kD2HAlone ? in_direction("H2D", [&] { return up_->copy_ns(); }) : 0,
               pass != kH2DAlone ? in_direction("D2H", [&] { return down_init_->copy_ns(); }) : 0};
    times_[index_] = t;
    return std::max(t.h2d_ns, t.d2h_ns);
  }

  void finish() override {
    up_.reset();
    down_init_.reset();
    std::vector<WorkerNote> notes;
    for (const std::string& n : dev_->notes()) notes.push_back({"", n});
    for (const std::string& n : down_dev_->notes())
      if (std::find_if(notes.begin(), notes.end(), [&](const WorkerNote& x) { return x.text == n; }) == notes.end())
        notes.push_back({"", n});
    notes.insert(notes.end(), notes_.begin(), notes_.end());
    note_ = encode_worker_notes(notes);
    if (p_.validate && !p_.validate_each) {
      check_fragments(*dev_, up_dst_, up_owner_, up_at_.device, spec_.name, w_, " H2D");
      check_fragments(*dev_, down_dst_, kD2HOwner + w_, down_, spec_.name, w_, " D2H");
    }
  }
  std::string note() const override { return note_; }
  const WorkerPlacement* placement() const override {
    return p_.numa.topology.nodes.empty() ? nullptr : &placed_.record();
  }

 private:
  Buffer own(BufKind kind, uint64_t bytes) {
    std::string why;
    Buffer b = make_buffer_for_ce(kind, *dev_, static_cast<size_t>(bytes), &why);
    unregistered(kind, why);
    return b;
  }
  // A range of the shared region, registered by this card (in its own process).
  Buffer region(char* at, uint64_t bytes) {
    std::string why;
    Buffer b = register_region_for_ce(BufKind::kShm, *dev_, at, static_cast<size_t>(bytes), &why);
    unregistered(BufKind::kShm, why);
    return b;
  }
  void unregistered(BufKind kind, const std::string& why) {
    if (why.empty()) return;
    const std::string n = std::string(label_kind(kind)) + " memory not registered with the device: " + why +
                          "; the CE copies use it unregistered";
    if (std::find_if(notes_.begin(), notes_.end(), [&](const WorkerNote& x) { return x.text == n; }) == notes_.end())
      notes_.push_back({"", n});
  }
  CopyPlan plan(const Buffer& src, const Buffer& dst, const CopyPlacement& at, CopyDir dir) const {
    return plan_fragments(src, dst, at, dir, spec_.method, p_.streams, p_.submit_mode);
  }

  PlacementScope placed_;
  int w_;
  int up_owner_;  // whose pattern the H2D source holds: the card's, or 0 for the one shared source
  const CaseSpec& spec_;
  const CopyParams& p_;
  const CopyPlacement& up_at_;
  const CopyPlacement& down_at_;
  const Layout& down_;  // where the D2H destination's fragments lie (the host side)
  DirTimes* times_;  // this worker's, one per loop iteration
  std::unique_ptr<Device> dev_, down_dev_;  // H2D's (and the buffers'), D2H's
  Buffer up_src_, up_dst_, down_src_, down_dst_;
  std::unique_ptr<Initiator> up_, down_init_;
  std::unique_ptr<Memory> staging_;
  int index_ = 0;
  std::string note_;
  std::vector<WorkerNote> notes_;
  std::vector<Stream*> ready_;  // before_iteration's, kept to allocate once
};

// The pass's values of the measured rounds (`v`: one per measured loop iteration).
std::vector<int64_t> pass_samples(const std::vector<int64_t>& v, const CopyParams& p, Pass pass) {
  std::vector<int64_t> out;
  const int first = p.warmup * passes_of(p);
  for (size_t i = 0; i < v.size(); ++i)
    if (pass_of(p, first + static_cast<int>(i)) == pass) out.push_back(v[i]);
  return out;
}

Stage stage_of(const std::string& name, std::vector<int64_t> samples) {
  Stage s;
  s.name = name;
  s.ns = compute_stats(samples);
  s.samples = std::move(samples);
  return s;
}

// The shared region (one_share): the H2D source, then each card's D2H part, each
// page aligned.
uint64_t shared_region_bytes(const CopyPlacement& up_at, const CopyPlacement& down_at, int devices) {
  return shared_part_stride(up_at.host.region_bytes()) +
         checked_mul(shared_part_stride(down_at.host.region_bytes()), static_cast<uint64_t>(devices),
                     "shared region bytes");
}

// What a duplex case needs, its directions at `up_at` and `down_at` (the D2H layout
// `down`): each side its regions (the request's bytes, or a block table's pools).
MemoryNeeds duplex_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend, const Layout& down,
                         const CopyPlacement& up_at, const CopyPlacement& down_at) {
  const auto d = static_cast<uint64_t>(p.devices);
  const bool shared = spec.src == BufKind::kShm;
  const uint64_t both = up_at.host.region_bytes() + down_at.host.region_bytes();
  const uint64_t both_device = up_at.device.region_bytes() + down_at.device.region_bytes();
  MemoryNeeds n;
  if (shared) {
    n.shm = shared_region_bytes(up_at, down_at, p.devices);
    n.add_host("shared region (the H2D source, a D2H part per card)", n.shm);
  } else {
    n.add_host(std::string(label_kind(spec.src)) + " buffers (H2D sources, D2H destinations)",
               checked_mul(both, d, "duplex bytes"));
  }
  if (backend.device_memory_is_host()) n.add_host("device buffers", checked_mul(both_device, d, "duplex bytes"));
  n.add_host("staging", checked_mul(std::max(p.layout.largest_fragment(), down.largest_fragment()), d, "staging"));
  n.add_records(d * static_cast<uint64_t>(passes_of(p)) * static_cast<uint64_t>(p.warmup + p.iterations) *
                            (sizeof(IterationRecord) + sizeof(DirTimes)));
  HostLock how;
  if (!shared && host_lock_of(spec.src, &how) && backend.mlocks(how) && how != HostLock::kRegistration)
    n.locked_per_process = both;
  n.devices = p.devices;
  n.device_per_device = both_device;
  n.device_in_host = backend.device_memory_is_host();
  return n;
}

NeedsText duplex_needs_text(const CaseSpec& spec, const CopyParams& p, const Layout& down) {
  return {spec.name, "host memory",
          format_bytes(p.layout.bytes()) + " H2D and " + format_bytes(down.bytes()) + " D2H per card",
          "lower -s, -n, -d or --duplex-ratio"};
}

class DuplexMeasurement : public Measurement {
 public:
  DuplexMeasurement(const CaseSpec& spec, const CopyParams& p, Backend& backend)
      : spec_(spec), p_(p), backend_(backend), down_(duplex_d2h_layout(p)), up_at_(p.placement()),
        down_at_(p.placement(down_)), up_seq_(p.contiguous_placement()), down_seq_(p.contiguous_placement(down_)) {}

  const NumaRequest* numa_request() const override { return &p_.numa_request; }
  std::vector<int> placed_devices() const override { return first_devices(p_.devices); }
  void placed(const NumaPlan& plan) override { p_.numa = plan; }
  void check() override {
    if (p_.gate) throw UsageError("option --stream-start-gate on: the duplex cases do not hold their streams");
    if (!p_.numa_request.shm_nodes.empty())
      throw UsageError("option --shm-numa-nodes: the duplex cases do not spread their shared region");
    const std::string why = unsupported_reason(spec_, backend_);
    if (!why.empty()) throw RunError(spec_.name + ": " + why);
  }
  MemoryNeeds needs() const override { return duplex_needs(spec_, p_, backend_, down_, up_at_, down_at_); }
  NeedsText needs_text() const override { return duplex_needs_text(spec_, p_, down_); }
  TimeEstimate estimate() const override {
    TimeEstimate t;
    t.unit = "round";
    t.rounds = static_cast<uint64_t>(p_.warmup + p_.iterations);
    // Together and each alone: twice both directions' bytes; the contiguous pass once more.
    t.moved = t.rounds * static_cast<uint64_t>(passes_of(p_) - 1) * (p_.layout.bytes() + down_.bytes()) *
              static_cast<uint64_t>(p_.devices);
    t.nominal_gib_s = backend_.device_memory_is_host() ? 4.0 : 20.0 * p_.devices;
    return t;
  }
  // The shared region (one_share): made here, its name removed at once, inherited by
  // the children, each registering its ranges; the H2D source filled here.
  void prepare() override {
    loop_iterations_ = static_cast<size_t>((p_.warmup + p_.iterations) * passes_of(p_));
    times_ = std::make_unique<SharedMapping>(sizeof(DirTimes) * loop_iterations_ * static_cast<size_t>(p_.devices));
    if (!shared()) return;
    shm_ = ShmRegion::create(static_cast<size_t>(region_bytes()));
    shm_->unlink();
    std::vector<const Layout*> fills;  // the contiguous pass's slots first, as DuplexWorker fills its own
    if (p_.compare_contiguous) fills.push_back(&up_seq_.host);
    fills.push_back(&up_at_.host);
    for (const Layout* l : fills)
      for (uint64_t i = 0; i < l->fragments(); ++i) {
        const Fragment f = l->fragment(i);
        pattern_fill(static_cast<char*>(shm_->ptr()) + f.offset, static_cast<size_t>(f.bytes), pattern_key(0, i));
      }
  }
  LoopShape shape(size_t) const override {
    LoopShape s;
    s.progress_name = spec_.name;
    s.workers = p_.devices;
    s.fanout = Fanout::kFork;
    s.hooks_apart = p_.validate && p_.validate_each;
    s.warmup = p_.warmup * passes_of(p_);
    s.iterations = p_.iterations * passes_of(p_);
    s.progress_bytes = p_.layout.unit_bytes();
    return s;
  }
  void host(size_t, const std::function<void()>& run_workers) override {
    backend_.init_process();
    run_workers();
  }
  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override {
    return std::make_unique<DuplexWorker>(w, spec_, p_, up_at_, down_at_, up_seq_, down_seq_, backend_, needs(),
                                          times() + static_cast<size_t>(w) * loop_iterations_, shm_.get());
  }
  void describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) override;

 private:
  DirTimes* times() const { return static_cast<DirTimes*>(times_->data()); }
  bool shared() const { return spec_.src == BufKind::kShm; }
  // The shared region: the H2D source, then each card's D2H part, each page aligned.
  uint64_t region_bytes() const { return shared_region_bytes(up_at_, down_at_, p_.devices); }
  // A direction's Copy in a pass, per measured round: the slowest card's.
  Stage direction_stage(const std::string& name, Pass pass, bool h2d) const {
    std::vector<int64_t> v;
    for (size_t it = static_cast<size_t>(p_.warmup * passes_of(p_)); it < loop_iterations_; ++it) {
      if (pass_of(p_, static_cast<int>(it)) != pass) continue;
      int64_t slowest = 0;
      for (int w = 0; w < p_.devices; ++w) {
        const DirTimes& t = times()[static_cast<size_t>(w) * loop_iterations_ + it];
        slowest = std::max(slowest, h2d ? t.h2d_ns : t.d2h_ns);
      }
      v.push_back(slowest);
    }
    return stage_of(name, std::move(v));
  }

  const CaseSpec& spec_;
  CopyParams p_;
  Backend& backend_;
  const Layout down_;
  const CopyPlacement up_at_, down_at_;  // each direction's sides (device side paged by --block-table)
  const CopyPlacement up_seq_, down_seq_;  // the same at sequential slots: --compare-contiguous's pass
  PagedFigure paged_figure(const LoopResult& loop) const;
  size_t loop_iterations_ = 0;
  std::unique_ptr<SharedMapping> times_;
  std::unique_ptr<ShmRegion> shm_;
};

void DuplexMeasurement::describe(size_t, const LoopResult& loop, CaseResult& r, Notes& notes) {
  const auto d = static_cast<uint64_t>(p_.devices);
  r.brief = spec_.brief;
  r.from = from_label(spec_, backend_);
  r.to = to_label(spec_, backend_);
  r.method = method_name(spec_, backend_);
  r.block_bytes = p_.layout.unit_bytes();
  r.count = d * (p_.layout.units() + down_.units());
  r.bytes = d * (p_.layout.bytes() + down_.bytes());
  r.devices = p_.devices;
  r.streams = p_.streams;
  r.submit_mode = submit_mode_name(p_.submit_mode);
  r.frags = p_.layout.frags_option();
  r.copies = d * (p_.layout.fragments() + down_.fragments());
  put_tables(r, p_.device_table, p_.host_table);  // both directions by the same tables, each its own pools
  r.iterations = p_.iterations;
  r.warmup = p_.warmup;
  r.measured = "Copy";
  r.path = "host memory <-> device";
  r.timer = backend_.event_timer();
  r.timer_resolution_ns = backend_.event_resolution_ns();
  r.stages = {stage_of("Submit", pass_samples(loop.submit, p_, kTogether)),
              stage_of(r.measured, pass_samples(loop.measured, p_, kTogether)),
              stage_of("Wall", pass_samples(loop.wall, p_, kTogether)),
              stage_of("StartSkew", pass_samples(loop.start_skew, p_, kTogether))};
  DuplexStages st;
  st.h2d_together = direction_stage("H2D", kTogether, true);
  st.d2h_together = direction_stage("D2H", kTogether, false);
  st.h2d_alone = direction_stage("H2DAlone", kH2DAlone, true);
  st.d2h_alone = direction_stage("D2HAlone", kD2HAlone, false);
  st.h2d_bytes = d * p_.layout.bytes();
  st.d2h_bytes = d * down_.bytes();
  st.h2d_block = p_.layout.unit_bytes();
  st.d2h_block = down_.unit_bytes();
  st.h2d_count = d * p_.layout.units();
  st.d2h_count = d * down_.units();
  st.ratio = p_.duplex_ratio;
  st.set_figures(r);
  r.extras.put(st);
  if (p_.paged()) r.extras.put(paged_figure(loop));
  if (p_.validate) r.validate = p_.validate_each ? "each" : "end";
  if (!p_.numa.topology.nodes.empty()) {
    r.numa.mode = numa_mode_name(p_.numa.mode);
    r.numa.workers = loop.placements;
  }
  keep_worker_notes(loop, r, notes);
}

// A block table: the Paged line (the result's: both directions), and with
// --compare-contiguous the contiguous pass's Copy, and a line per direction with its
// own chunks, its paged Copy (the together pass's) and its contiguous one.
PagedFigure DuplexMeasurement::paged_figure(const LoopResult& loop) const {
  PagedFigure f = paged_figure_head(p_.device_table, p_.host_table, p_.compare_contiguous);
  if (!f.compared) return f;
  f.contiguous = stage_of("Contiguous", pass_samples(loop.measured, p_, kContiguous));
  const auto d = static_cast<uint64_t>(p_.devices);
  PagedDirection up, down;
  up.name = "H2D";
  up.copies = d * p_.layout.fragments();
  up.bytes = d * p_.layout.bytes();
  up.paged = direction_stage("H2D", kTogether, true);
  up.contiguous = direction_stage("H2DContiguous", kContiguous, true);
  down.name = "D2H";
  down.copies = d * down_.fragments();
  down.bytes = d * down_.bytes();
  down.paged = direction_stage("D2H", kTogether, false);
  down.contiguous = direction_stage("D2HContiguous", kContiguous, false);
  f.directions = {up, down};
  return f;
}

}  // namespace

MemoryNeeds duplex_memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  const Layout down = duplex_d2h_layout(p);
  return duplex_needs(spec, p, backend, down, p.placement(), p.placement(down));
}

void check_duplex_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  check_host_needs(duplex_memory_needs(spec, p, backend), duplex_needs_text(spec, p, duplex_d2h_layout(p)));
}

Layout duplex_d2h_layout(const CopyParams& p) {
  std::vector<uint64_t> sizes;
  for (uint64_t f : p.layout.task_fragments()) {
    const double scaled = std::floor(static_cast<double>(f) * p.duplex_ratio);
    if (scaled < 1)
      throw UsageError("option --duplex-ratio " + format_ratio(p.duplex_ratio) + ": the D2H " +
                       (p.layout.per_fragment_regions() ? "fragment of a --block-layout size" : "block of -s") +
                       " x ratio is under 1 byte");
    sizes.push_back(static_cast<uint64_t>(scaled));
  }
  if (sizes.empty()) throw UsageError("option --duplex-ratio: the layout has no fragment to scale");
  if (p.layout.per_fragment_regions()) return Layout::block(sizes, p.layout.tasks());
  return Layout::uniform(sizes.front(), p.layout.tasks(), p.layout.frags_option());
}

std::string format_ratio(double r) {
  char s[32];
  std::snprintf(s, sizeof s, "%g", r);
  return s;
}

void run_duplex_case(const CaseSpec& spec, const CopyParams& p, const SelectedBackend& selected, ResultWriter& writer,
                     Notes& notes, std::string* previous_plan) {
  DuplexMeasurement m(spec, p, *selected.backend);
  HarnessContext ctx(writer, notes, &selected, p.cluster, p.timeout_s);
  ctx.finish_writer = false;
  ctx.previous_plan = previous_plan;
  run_measurement(m, ctx);
}

}  // namespace ds
