#include "cases/case_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"
#include "output/progress.h"
#include "runner/barrier.h"
#include "runner/fanout.h"
#include "runner/shared_mapping.h"

namespace ds {

namespace {

constexpr int64_t kBarrierTimeoutNs = 300LL * 1000000000LL;

struct IterRecord {
  int64_t start, submitted, done, engine;
};

struct WorkerShared {
  int64_t setup_done;
  char batch_fallback[512];  // Device::batch_fallback() of this worker, NUL-terminated
};

// Layout of the memory shared by the workers of one case.
struct SharedLayout {
  explicit SharedLayout(int devices, int iterations)
      : devices(devices),
        iterations(iterations),
        map(sizeof(BarrierState) + sizeof(WorkerShared) * static_cast<size_t>(devices) +
            sizeof(IterRecord) * static_cast<size_t>(devices) * static_cast<size_t>(iterations)) {
    auto* base = static_cast<char*>(map.data());
    barrier_state = new (base) BarrierState();
    workers = reinterpret_cast<WorkerShared*>(base + sizeof(BarrierState));
    records = reinterpret_cast<IterRecord*>(workers + devices);
  }
  IterRecord& record(int w, int it) { return records[static_cast<size_t>(w) * iterations + it]; }

  int devices, iterations;
  SharedMapping map;
  BarrierState* barrier_state;
  WorkerShared* workers;
  IterRecord* records;
};

int participating_devices(const CaseSpec& spec, const CopyParams& p) {
  return spec.topology == Topology::kSingle ? 1 : p.devices;
}

uint64_t blocks_per_device(const CopyParams& p) {
  return p.blocks * static_cast<uint64_t>(std::max(1, p.frags));
}

// Address a copy of `buf` uses: device memory by its device address; host memory
// by its CPU address, except on the direct path, which reads the mapped address.
char* copy_address(const Buffer& buf, EngineKind engine) {
  if (is_device_kind(buf.kind) || engine == EngineKind::kDirect)
    return static_cast<char*>(buf.device);
  return static_cast<char*>(buf.host);
}

void fill_blocks(Device& dev, const Buffer& buf, int owner, uint64_t nblocks, size_t block) {
  if (buf.host) {
    for (uint64_t b = 0; b < nblocks; ++b)
      pattern_fill(static_cast<char*>(buf.host) + b * block, block, pattern_key(owner, b));
    return;
  }
  auto staging = alloc_pageable(block);
  for (uint64_t b = 0; b < nblocks; ++b) {
    pattern_fill(staging->host_ptr(), block, pattern_key(owner, b));
    dev.copy_sync({static_cast<char*>(buf.device) + b * block, staging->host_ptr(), block},
                  CopyDir::kH2D);
  }
}

void check_blocks(Device& dev, const Buffer& buf, int owner, uint64_t nblocks, size_t block,
                  const std::string& case_name, int device) {
  std::unique_ptr<Memory> staging;
  if (!buf.host) staging = alloc_pageable(block);
  for (uint64_t b = 0; b < nblocks; ++b) {
    const char* p;
    if (buf.host) {
      p = static_cast<const char*>(buf.host) + b * block;
    } else {
      dev.copy_sync({staging->host_ptr(), static_cast<char*>(buf.device) + b * block, block},
                    CopyDir::kD2H);
      p = static_cast<const char*>(staging->host_ptr());
    }
    const int64_t off = pattern_check(p, block, pattern_key(owner, b));
    if (off >= 0)
      throw RunError("validation failed: case " + case_name + " device " + std::to_string(device) +
                     " block " + std::to_string(b) + " first differing offset " +
                     std::to_string(off));
  }
}

CaseSpec with_engine(CaseSpec spec, EngineKind engine) {
  spec.engine = engine;
  return spec;
}

Fanout fanout_of(Topology t) {
  switch (t) {
    case Topology::kSingle: return Fanout::kInline;
    case Topology::kThreads: return Fanout::kThreads;
    case Topology::kFork: return Fanout::kFork;
  }
  return Fanout::kInline;
}

}  // namespace

MemoryNeeds memory_needs(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  const int d = participating_devices(spec, p);
  const uint64_t nblocks = blocks_per_device(p);
  const uint64_t per = checked_mul(nblocks, p.block_bytes, "-s x -n x -f");
  const auto dd = static_cast<uint64_t>(d);
  MemoryNeeds n;
  uint64_t host = 0;
  auto add = [&](uint64_t bytes, const char* what) {
    if (host + bytes < host) throw UsageError(std::string("the memory this run needs overflows 64 bits (") + what + ")");
    host += bytes;
  };
  auto host_of = [&](BufKind k) { return !is_device_kind(k) || backend.device_memory_is_host(); };
  const uint64_t src_copies = spec.shared_src ? 1 : dd;
  if (spec.src == BufKind::kShm) n.shm = per;
  if (host_of(spec.src)) add(checked_mul(per, src_copies, "source bytes"), "sources");
  if (host_of(spec.dst)) add(checked_mul(per, dd, "destination bytes"), "destinations");
  if (is_device_kind(spec.src)) n.device_per_device += per;  // own source, or device 0's shared one
  if (is_device_kind(spec.dst)) n.device_per_device += per;
  // Validation and device fills stage one block in pageable memory per worker.
  add(checked_mul(p.block_bytes, dd, "staging bytes"), "staging");
  // Bookkeeping: the copy plan (a descriptor per block, kept twice at most) and
  // the per-iteration records every worker writes.
  add(checked_mul(checked_mul(nblocks, 2 * sizeof(CopyDesc), "plan bytes"), dd, "plan bytes"), "plans");
  add(checked_mul(checked_mul(static_cast<uint64_t>(p.iterations), sizeof(IterRecord), "record bytes"), dd,
                  "record bytes"),
      "records");
  n.host = host;
  // Locked per process, counting only what our own code mlock()s (the backend says
  // which): fork children each lock their own; threads share one process.
  const uint64_t procs_share = spec.topology == Topology::kFork ? 1 : dd;
  auto mlocked = [&](BufKind k) {
    HostLock how;
    return host_lock_of(k, &how) && backend.mlocks(how);
  };
  const bool src_locked = mlocked(spec.src) && !(spec.src == BufKind::kShm && spec.engine == EngineKind::kMemcpy);
  uint64_t locked = 0;
  if (src_locked) locked += spec.shared_src ? per : checked_mul(per, procs_share, "locked bytes");
  if (mlocked(spec.dst)) locked += checked_mul(per, procs_share, "locked bytes");
  n.locked_per_process = locked;
  return n;
}

void check_host_memory(const CaseSpec& spec, const CopyParams& p, const Backend& backend) {
  const MemoryNeeds n = memory_needs(spec, p, backend);
  const std::string lower = "; lower -s, -n" + std::string(spec.topology == Topology::kSingle ? "" : " or -d");
  const uint64_t avail = mem_available_bytes();
  const uint64_t margin = 256ULL << 20;
  if (n.host + margin > avail)
    throw RunError("not enough memory for " + spec.name + ": it needs " + format_bytes(n.host) +
                   " of host memory (" + format_bytes(p.block_bytes) + " x " +
                   std::to_string(blocks_per_device(p)) + " blocks per buffer) but MemAvailable is " +
                   format_bytes(avail) + lower);
  if (n.shm > 0 && n.shm > shm_free_bytes())
    throw RunError("not enough shared memory for " + spec.name + ": it needs " + format_bytes(n.shm) +
                   " in /dev/shm but " + format_bytes(shm_free_bytes()) + " is free" + lower);
  const uint64_t limit = memlock_limit_bytes();
  if (n.locked_per_process > limit)
    throw RunError("memory locking refused for " + spec.name + ": it locks " +
                   format_bytes(n.locked_per_process) + " per process but RLIMIT_MEMLOCK is " +
                   format_bytes(limit) + "; raise it with `ulimit -l unlimited`" + lower);
}

CaseResult run_case(const CaseSpec& spec, const CopyParams& p, Backend& backend) {
  const std::string why = unsupported_reason(spec, backend);
  if (!why.empty()) throw RunError(spec.name + ": " + why);
  check_host_memory(spec, p, backend);

  const int d = participating_devices(spec, p);
  const uint64_t nblocks = blocks_per_device(p);
  const size_t block = static_cast<size_t>(p.block_bytes);
  const size_t per = static_cast<size_t>(nblocks * p.block_bytes);
  const int total_iters = p.warmup + p.iterations;
  const CopyDir dir = direction(spec);
  const MemoryNeeds needs = memory_needs(spec, p, backend);

  const int64_t t0 = now_ns();
  SharedLayout shared(d, p.iterations);
  Barrier barrier(shared.barrier_state);
  barrier.init(static_cast<uint32_t>(d));

  // Shared sources: for fork cases a POSIX shm region made here, its name removed
  // at once so nothing outlives the run even if this process is killed (children
  // inherit the mapping and each registers it); for thread cases one pinned or
  // device-0 buffer made next to the workers.
  std::unique_ptr<ShmRegion> shm;
  std::unique_ptr<Device> coordinator;
  Buffer shared_src;
  if (spec.shared_src && spec.src == BufKind::kShm) {
    shm = ShmRegion::create(per);
    shm->unlink();
    for (uint64_t b = 0; b < nblocks; ++b)
      pattern_fill(static_cast<char*>(shm->ptr()) + b * block, block, pattern_key(0, b));
  }

  auto body = [&](int w) {
    auto dev = backend.open_device(w);
    if (!backend.device_memory_is_host() && needs.device_per_device > 0) {
      const uint64_t free = dev->free_memory();
      if (needs.device_per_device > free)
        throw RunError("not enough device memory: " + spec.name + " needs " +
                       format_bytes(needs.device_per_device) + " on device " + std::to_string(w) +
                       " but " + format_bytes(free) + " is free; lower -s or -n");
    }
    Buffer own_src;
    const Buffer* src = &shared_src;
    if (spec.src == BufKind::kShm) {
      // The region is mapped in every child (inherited); each registers it itself.
      if (spec.engine == EngineKind::kMemcpy) {
        own_src.kind = BufKind::kShm;
        own_src.host = own_src.device = shm->ptr();
        own_src.bytes = per;
      } else {
        own_src = register_region(BufKind::kShm, *dev, shm->ptr(), per);
      }
      src = &own_src;
    } else if (!spec.shared_src) {
      own_src = make_buffer(spec.src, *dev, per);
      fill_blocks(*dev, own_src, w, nblocks, block);
      src = &own_src;
    }
    Buffer dst = make_buffer(spec.dst, *dev, per);
    // Device 0's memory copied to another device: let the copy go peer to peer.
    if (is_device_kind(spec.src) && spec.shared_src && w != 0) {
      std::string why;
      if (!dev->enable_peer_access(0, &why))
        std::fprintf(stderr,
                     "dev-sandbox: note: device %d has no peer access to device 0 (%s): the "
                     "runtime stages these copies through the host or refuses them\n",
                     w, why.c_str());
    }

    CopyPlan plan;
    plan.dir = dir;
    plan.frags = static_cast<size_t>(std::max(1, p.frags));
    plan.streams = p.streams;
    char* s = copy_address(*src, spec.engine);
    char* t = copy_address(dst, spec.engine);
    for (uint64_t b = 0; b < nblocks; ++b) plan.blocks.push_back({t + b * block, s + b * block, block});
    auto init = make_initiator(spec.engine, *dev, std::move(plan));
    shared.workers[w].setup_done = now_ns();

    for (int it = 0; it < total_iters; ++it) {
      barrier.wait(kBarrierTimeoutNs);
      IterRecord r{};
      r.start = now_ns();
      init->submit();
      r.submitted = now_ns();
      init->wait();
      r.done = now_ns();
      r.engine = init->engine_ns();
      if (it >= p.warmup) shared.record(w, it - p.warmup) = r;
      if (w == 0) progress_iteration(it + 1);  // after `done`: outside the timing
    }
    init.reset();
    const std::string fallback = dev->batch_fallback();
    std::snprintf(shared.workers[w].batch_fallback, sizeof shared.workers[w].batch_fallback, "%s",
                  fallback.c_str());
    if (p.validate) check_blocks(*dev, dst, spec.shared_src ? 0 : w, nblocks, block, spec.name, w);
  };

  {
    ProgressScope progress(spec.name, p.block_bytes, p.warmup, p.iterations);
    if (spec.topology == Topology::kFork) {
      run_workers(Fanout::kFork, d,
                  [&](int w) {
                    backend.init_process();  // in the child, after fork
                    body(w);
                  },
                  barrier);
    } else {
      // In-process topologies still run in a child of this process: the runtime is
      // never initialised here, so a later fork case starts from a clean process.
      run_isolated(
          [&] {
            backend.init_process();
            if (spec.shared_src) {
              coordinator = backend.open_device(0);
              shared_src = make_buffer(spec.src, *coordinator, per);
              fill_blocks(*coordinator, shared_src, 0, nblocks, block);
            }
            run_workers(fanout_of(spec.topology), d, body, barrier);
            shared_src = Buffer();
            coordinator.reset();
          },
          barrier);
    }
  }

  CaseResult r;
  r.name = spec.name;
  r.brief = spec.brief;
  r.from = from_label(spec, backend);
  r.to = to_label(spec, backend);
  r.method = method_name(spec, backend);
  // A batch the runtime could not take went out one copy per block: say so, and
  // name the engine that ran (CE), not the one asked for.
  for (int w = 0; w < d; ++w) {
    const std::string why = shared.workers[w].batch_fallback;
    if (why.empty() || std::find(r.notes.begin(), r.notes.end(), why) != r.notes.end()) continue;
    r.notes.push_back(why);
    std::fprintf(stderr, "dev-sandbox: note: %s: %s, so every block was its own copy (Method %s)\n",
                 spec.name.c_str(), why.c_str(), method_name(with_engine(spec, EngineKind::kCe), backend).c_str());
  }
  if (!r.notes.empty() && spec.engine == EngineKind::kCeBatch)
    r.method = method_name(with_engine(spec, EngineKind::kCe), backend);
  r.block_bytes = p.block_bytes;
  r.count = static_cast<uint64_t>(d) * nblocks;
  r.devices = d;
  r.streams = spec.engine == EngineKind::kCeMultiStream ? p.streams : 1;
  r.frags = p.frags;
  r.iterations = p.iterations;
  r.warmup = p.warmup;
  int64_t setup_end = t0;
  for (int w = 0; w < d; ++w) setup_end = std::max(setup_end, shared.workers[w].setup_done);
  r.setup_s = static_cast<double>(setup_end - t0) * 1e-9;
  std::vector<int64_t> submit, copy, wall;
  for (int it = 0; it < p.iterations; ++it) {
    int64_t sub = 0, eng = 0, first = std::numeric_limits<int64_t>::max(), last = 0;
    for (int w = 0; w < d; ++w) {
      const IterRecord& rec = shared.record(w, it);
      sub = std::max(sub, rec.submitted - rec.start);
      eng = std::max(eng, rec.engine);
      first = std::min(first, rec.start);
      last = std::max(last, rec.done);
    }
    submit.push_back(sub);
    copy.push_back(eng);
    wall.push_back(last - first);
  }
  r.submit = compute_stats(submit);
  r.copy = compute_stats(copy);
  r.wall = compute_stats(wall);
  if (p.validate) r.validated = true;
  return r;
}

}  // namespace ds
