#include "staging/staged_side.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "aio/short_transfer.h"
#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "memory/pattern.h"

namespace ds {

namespace {

// A descriptor closed when it goes.
struct OwnedFd {
  int fd = -1;
  ~OwnedFd() {
    if (fd >= 0) close(fd);
  }
};

}  // namespace

// `n` bytes from offset 0 of `fd` (`path`) into `buf`, for --validate; `buf` and `n`
// are kDirectAlign-aligned. A read may come back short: it goes on where
// aio/short_transfer.h says (through O_DIRECT from its last aligned boundary). One
// that makes no aligned progress (less than an aligned unit from an aligned offset)
// does not end the check: the rest is read through a buffered descriptor of the
// same file (the page cache, which O_DIRECT writes keep coherent), and `note` says so.
void read_back(int fd, const std::string& path, char* buf, size_t n, std::string& note) {
  const bool direct = fd_is_direct(fd);
  OwnedFd buffered;
  uint64_t got = 0;
  while (got < n) {
    const int from = buffered.fd >= 0 ? buffered.fd : fd;
    const ssize_t r = pread(from, buf + got, n - got, static_cast<off_t>(got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw sys_error("pread(" + path + ") for --validate", errno);
    const auto ends = [&](uint64_t at) {
      return RunError("validation failed: " + path + " ends at offset " + std::to_string(at) + " of " +
                      std::to_string(n));
    };
    // (A short O_DIRECT read at the end of the file goes on buffered, below, which
    // then finds the end.)
    if (r == 0) throw ends(got);
    const uint64_t next = resume_at(got, static_cast<uint64_t>(r), n, direct && buffered.fd < 0);
    if (next == got) {
      buffered.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (buffered.fd < 0) throw sys_error("open(" + path + ") to read it back buffered for --validate", errno);
      note = "--validate: an O_DIRECT read of " + path + " returned " + std::to_string(r) + " bytes at offset " +
             std::to_string(got) + ", less than the " + std::to_string(kDirectAlign) +
             " bytes O_DIRECT moves at a time: the rest of the file was read back buffered (from the page cache)";
    }
    got = next;
  }
}

int look_nap_threads(const StagedParams& p, int pipelines_per_card, bool copies_on_host_cpus) {
  const int per_pipeline = 1 + (copies_on_host_cpus ? std::max(1, p.streams) : 0) +
                           (p.engine == AioEngineKind::kPsync ? static_cast<int>(p.iodepth) : 0);
  return p.devices * pipelines_per_card * per_pipeline;
}

StagedSide::StagedSide(Device& dev, Backend& backend, const StagedSideConfig& config, WorkerPlacement& record)
    : dev_(dev), c_(config), p_(*config.p), files_(*config.files), kv_(p_.device_layout()) {
  for (size_t b = c_.first_block; b < files_.extents.size(); b += c_.block_step) {
    blocks_.push_back(b);
    extents_.push_back(files_.extents[b]);
  }
  const unsigned k = p_.staging_buffers();
  const size_t fb = static_cast<size_t>(p_.file_bytes());
  const char* cmd = c_.dir == StagedDir::kLoad ? "load" : "offload";
  if (!backend.device_memory_is_host()) {
    NeedsText t{cmd, "device memory", format_bytes(kv_.region_bytes()) + " KV region",
                p_.table.slots.empty() ? "lower -s or -n" : "lower -s, -n or --pool-blocks"};
    check_device_needs(kv_.region_bytes(), dev_.free_memory(), dev_.index(), t);
  }
  region_ = dev_.alloc_device(static_cast<size_t>(kv_.region_bytes()));
  // The backend's pinned memory, or where that cannot take O_DIRECT (ascend:
  // aclrtMallocHost memory answers EFAULT) our own registered mapping (make_io_buffer).
  staging_ = make_io_buffer(dev_, backend, k * fb, p_.sdma, c_.direct_io, std::string(c_.what) + " buffers");
  host_ = static_cast<char*>(staging_.host);
  notes_ = staging_.note;
  check_odirect_aligned(host_, std::string("the ") + c_.what + " buffers are");
  // First touched here, on the card's node's CPUs (untimed); where the pages are.
  std::memset(host_, 0, k * fb);
  record.add_buffer(c_.what, host_, k * fb);
  scratch_ = alloc_pageable(static_cast<size_t>(p_.layout.largest_fragment()));
  if (c_.dir == StagedDir::kOffload) fill_region(kv_);
  engine_ = make_io_engine(p_.engine, p_.iodepth);
  for (unsigned b = 0; b < k; ++b) ring_.buffers.push_back(host_ + b * fb);
  // Every block's copies prepared now, with the backend (the direct path: its proof,
  // batch arrays, graphs or FFTS+ contexts), so no timed pass builds any; the
  // contiguous pass's too.
  const bool host_copies = backend.copies_on_host_cpus();
  const LookNapRule nap = look_nap_rule(usable_cpus(), look_nap_threads(p_, c_.pipelines_per_card, host_copies),
                                        host_copies);
  // Said where it costs: a card's DMA copies seen up to a nap late, for want of CPUs.
  if (nap.nap && !host_copies) add_note(nap.line);
  pipeline_ = make_pipeline(kv_, nap.nap);
  if (p_.compare_contiguous) contiguous_ = make_pipeline(p_.contiguous_layout(), nap.nap);
  for (const std::string& n : dev_.notes()) add_note(n);  // how its copies run
  disk_alone_ = std::make_unique<TransferPass>(*engine_, c_.dir == StagedDir::kLoad ? IoOp::kRead : IoOp::kWrite,
                                               extents_, ring_);
}

StagedSide::~StagedSide() { finish(); }

std::unique_ptr<Pipeline> StagedSide::make_pipeline(const Layout& at_device, bool nap) {
  const unsigned k = p_.staging_buffers();
  const size_t fb = static_cast<size_t>(p_.file_bytes());
  PipelineConfig pc;
  pc.dir = c_.dir;
  pc.device = &dev_;
  pc.engine = engine_.get();
  pc.blocks = &extents_;
  pc.direct_path = p_.sdma;
  pc.first_end = c_.first_end;
  pc.nap = nap;
  pc.block_name = [this](size_t j) {
    const size_t b = blocks_[j];
    return "block " + std::to_string(b) + " (" + files_.files->path(b) + ")";
  };
  char* dev_base = static_cast<char*>(p_.sdma ? staging_.device : staging_.host);
  for (unsigned b = 0; b < k; ++b) {
    pc.staging_host.push_back(host_ + b * fb);
    pc.staging_dev.push_back(dev_base + b * fb);
  }
  // Each of its blocks' copies: the device side in the region, the host side an
  // offset into a staging buffer.
  const BlockPlaces at(p_);
  char* base = static_cast<char*>(region_->device_ptr());
  const uint64_t per_file = p_.fragments_per_file();
  pc.copies_per_block = static_cast<size_t>(per_file);
  pc.copies.reserve(blocks_.size() * static_cast<size_t>(per_file));
  for (size_t b : blocks_)
    for (uint64_t i = b * per_file; i < (b + 1) * per_file; ++i) {
      const Fragment f = at_device.fragment(i);
      pc.copies.push_back({base + f.offset, at.file_offset(i), static_cast<size_t>(f.bytes)});
    }
  return std::make_unique<Pipeline>(std::move(pc), p_.streams);
}

void StagedSide::finish() {
  contiguous_.reset();
  pipeline_.reset();
  disk_alone_.reset();
  // What the device found out only while the passes ran (sim: a readied copy
  // thread's refused move), once.
  for (const std::string& n : dev_.notes())
    if (notes_.find(n) == std::string::npos) add_note(n);
}

PipelineTimes StagedSide::disk_alone() {
  PipelineTimes t;
  try {
    const PassResult pr = disk_alone_->run();
    t.wall_ns = pr.wall_ns;
    t.submit_ns = pr.submit_ns;
    t.short_transfers = pr.short_transfers;
    t.io_busy_ns = pr.wall_ns;
  } catch (const IoFailure& f) {
    const size_t b = blocks_[f.shard];
    throw RunError("disk alone, block " + std::to_string(b) + " (" + files_.files->path(b) + "): " + f.what());
  }
  return t;
}

// Offload's source: every fragment of the region the pattern of (owner, fragment).
void StagedSide::fill_region(const Layout& at) {
  char* base = static_cast<char*>(region_->device_ptr());
  for (uint64_t i = 0; i < p_.layout.fragments(); ++i) {
    const Fragment f = at.fragment(i);
    const size_t n = static_cast<size_t>(f.bytes);
    pattern_fill(scratch_->host_ptr(), n, pattern_key(files_.owner, i));
    dev_.copy_sync({base + f.offset, scratch_->host_ptr(), n}, CopyDir::kH2D);
  }
}

void StagedSide::poison(bool contiguous) {
  const Layout at = contiguous ? p_.contiguous_layout() : kv_;
  if (c_.dir == StagedDir::kLoad) {
    // Every fragment of the region zeroed, so one the pass does not copy fails the check.
    std::memset(scratch_->host_ptr(), 0, scratch_->bytes());
    for (uint64_t i = 0; i < p_.layout.fragments(); ++i) {
      const Fragment f = at.fragment(i);
      dev_.copy_sync({static_cast<char*>(region_->device_ptr()) + f.offset, scratch_->host_ptr(),
                      static_cast<size_t>(f.bytes)},
                     CopyDir::kH2D);
    }
    return;
  }
  // The region's fragments at the places this pass copies from hold the pattern (the
  // other pass's places may share slots with them: filled again), and each of its
  // block files is overwritten with the poison, so one the pass does not write fails.
  if (p_.compare_contiguous) fill_region(at);
  const size_t fb = static_cast<size_t>(p_.file_bytes());
  fill_poison(host_, fb);
  for (size_t b : blocks_) {
    const int err = write_at(files_.extents[b].fd, files_.files->path(b), host_, fb, 0);
    if (err != 0) throw sys_error("pwrite(" + files_.files->path(b) + ") poisoning it for --validate", err);
  }
}

void StagedSide::check(const std::string& when, bool contiguous) {
  if (c_.dir == StagedDir::kLoad)
    check_region(when, contiguous ? p_.contiguous_layout() : kv_);
  else
    check_files(when);
}

void StagedSide::mismatch(const std::string& when, uint64_t i, uint64_t off, const char* where) {
  const BlockPlaces at(p_);
  const size_t b = static_cast<size_t>(at.block_of(i));
  const bool load = c_.dir == StagedDir::kLoad;
  throw RunError(std::string("validation failed: ") + (load ? "load " : "offload ") + when + ": block " +
                 std::to_string(b) + " (" + files_.files->path(b) + "), fragment " + std::to_string(i) + " " + where +
                 " at offset " + std::to_string(off));
}

void StagedSide::check_region(const std::string& when, const Layout& at) {
  for (uint64_t i = 0; i < p_.layout.fragments(); ++i) {
    const Fragment f = at.fragment(i);
    const size_t n = static_cast<size_t>(f.bytes);
    dev_.copy_sync({scratch_->host_ptr(), static_cast<char*>(region_->device_ptr()) + f.offset, n}, CopyDir::kD2H);
    const int64_t off = pattern_check(scratch_->host_ptr(), n, pattern_key(files_.owner, i));
    if (off >= 0) mismatch(when, i, static_cast<uint64_t>(off), "on the device differs from the file");
  }
}

// Each of its files read back (through its own descriptor: O_DIRECT, so from the
// disk; with --buffered from the page cache, which holds what the writes left there)
// into the first staging buffer.
void StagedSide::check_files(const std::string& when) {
  const BlockPlaces at(p_);
  const size_t fb = static_cast<size_t>(p_.file_bytes());
  for (size_t b : blocks_) {
    std::string said;
    read_back(files_.extents[b].fd, files_.files->path(b), host_, fb, said);
    if (!said.empty() && notes_.find("--validate: an O_DIRECT read of") == std::string::npos)
      add_note(said);  // the first file's: one line
    uint64_t i = 0, off = 0;
    if (check_block(p_, at, files_.owner, b, host_, &i, &off))
      mismatch(when, i, off - at.file_offset(i), "in the file differs from the device");
  }
}

MemoryNeeds staged_needs(const StagedParams& p, const Backend& backend) {
  const unsigned k = p.staging_buffers();
  const auto d = static_cast<uint64_t>(p.devices);
  MemoryNeeds n;
  const uint64_t staging = k * p.file_bytes();
  n.add_host("staging", d * staging);
  n.add_host("a fragment's scratch per card", d * p.layout.largest_fragment());
  n.add_host("the block files' writer", p.file_bytes());
  const uint64_t region = p.device_layout().region_bytes();  // a paged pool's, with --block-table
  if (backend.device_memory_is_host()) n.add_host("the cards' KV regions", d * region);
  // Staging of our own (O_DIRECT where the backend's pinned memory cannot take it) is
  // locked by its registration, which only the direct path requires (make_io_buffer).
  // (Before the workspaces say whether they do O_DIRECT: as asked.)
  const bool own_staging = io_buffer_is_own(backend, !p.buffered);
  if (own_staging ? p.sdma && backend.mlocks(HostLock::kRegistration) : backend.mlocks(HostLock::kPinnedAlloc))
    n.locked_per_process = staging;
  n.devices = p.devices;
  n.device_per_device = region;  // the card's KV region
  n.device_in_host = backend.device_memory_is_host();
  // The block files: one set per card, or one that every card reads (--shared).
  n.disk = p.files() * p.file_bytes() * (p.shared ? 1 : d);
  return n;
}

void check_staged_request(const StagedParams& p, const SelectedBackend& selected, bool offloads,
                          const std::string& d2h_hint) {
  const Backend& backend = *selected.backend;
  check_device_count(p.devices_option, p.devices, p.devices, selected.probe.device_count, backend.name());
  if (!p.sdma) return;
  if (!backend.has(Capability::kDirect))
    throw RunError("--sdma true: the " + backend.name() + " backend has no direct path");
  if (!selected.probe.direct_unavailable.empty()) throw RunError("--sdma true: " + selected.probe.direct_unavailable);
  if (offloads && !backend.has(Capability::kDirectD2H))
    throw RunError("--sdma true: the " + backend.name() +
                   " backend's direct path does not copy device to host (docs/hardware-status.md)" + d2h_hint);
}

}  // namespace ds
