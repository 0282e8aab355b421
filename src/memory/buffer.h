// The buffer axis: every kind of memory a copy reads from or writes to, how it is
// made on a given device, and what it is called in the output.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ds {

enum class BufKind {
  kPinned,        // runtime page-locked host memory             label: host
  kPinnedMapped,  // the same, mapped for the direct path         label: host_mapped
  kOdirect,       // 4 KiB aligned mmap, populated, registered    label: odirect_mmap
  kShm,           // POSIX shared memory, registered per device   label: shm
  kRegistered,    // mmap + registered with the device            label: registered
  kAnonymous,     // mmap, not registered                         label: anonymous
  kPageable,      // malloc                                       label: pageable
  kDevice,        // device memory                                label: device
};

const char* label_kind(BufKind kind);
bool is_device_kind(BufKind kind);
// Host kinds a direct (SDMA) copy can read from: mapped into the device.
bool is_mapped_kind(BufKind kind);
// Host memory locked by this buffer (pinned or registered): true, and how it is
// locked in *how; false for memory nobody locks.
bool host_lock_of(BufKind kind, HostLock* how);

// A buffer: its memory and, for registered kinds, the registration (released first).
struct Buffer {
  BufKind kind = BufKind::kPageable;
  std::unique_ptr<Memory> memory;        // what owns the bytes (null for a borrowed region)
  std::unique_ptr<Memory> registration;  // page-lock / device mapping, if any
  void* host = nullptr;                  // CPU address, null for device memory
  void* device = nullptr;                // address device copies use
  size_t bytes = 0;

  Buffer() = default;
  Buffer(Buffer&&) = default;
  Buffer& operator=(Buffer&&) = default;
  ~Buffer() { registration.reset(); }  // unregister before the memory goes
};

// Allocates `bytes` of `kind` for `device`. kShm is made with register_region().
Buffer make_buffer(BufKind kind, Device& device, size_t bytes);
// Registers memory someone else owns (the shared region) with `device`.
Buffer register_region(BufKind kind, Device& device, void* ptr, size_t bytes);

// Host memory that disk I/O lands in (or leaves from) and device copies read: load's
// staging buffers, aio --io-type alloc's buffers.
struct IoBuffer {
  std::unique_ptr<Memory> memory;        // what owns the bytes
  std::unique_ptr<Memory> lock;          // our own mlock of them, where it took
  std::unique_ptr<Memory> registration;  // the device registration, where it took
  void* host = nullptr;
  void* device = nullptr;  // the address the direct path reads (mapped), else `host`
  BufKind kind = BufKind::kPinned;  // kPinned, or kOdirect for our own registered mapping
  std::string note;                 // how it was made, when not as the backend's pinned memory

  IoBuffer() = default;
  IoBuffer(IoBuffer&&) = default;
  IoBuffer& operator=(IoBuffer&&) = default;
  ~IoBuffer() {
    registration.reset();  // unregister, unlock, then unmap
    lock.reset();
  }
};

// Whether disk buffers for I/O that is `direct` (O_DIRECT) are our own mapping
// (make_io_buffer) rather than the backend's pinned memory, which cannot take it
// (Backend::pinned_direct_io_unsupported: ascend).
bool io_buffer_is_own(const Backend& backend, bool direct);

// `bytes` of the backend's pinned memory (mapped for the direct path when `mapped`),
// unless io_buffer_is_own(backend, direct). Then, as UCM does for O_DIRECT
// (734318ce): page-aligned memory we map ourselves, on huge pages first
// (map_huge_first), locked with mlock where the limit allows (best effort) and
// registered with the device. A registration that fails is fatal only when `mapped`
// (the direct path reads that address); otherwise the memory stays unregistered. The
// note says what was made and why (`what` names the buffers: "staging buffers").
IoBuffer make_io_buffer(Device& device, const Backend& backend, size_t bytes, bool mapped, bool direct,
                        const std::string& what);

// The same for a copy engine (CE) copy, which reads host memory by its CPU address and
// so does not need the registration: where registering fails (the runtime has no
// registration, refuses it, or its pages cannot be locked) the memory stays
// unregistered and *why says why (empty when it was registered). Only the direct path,
// which reads the mapped address, needs the registration.
Buffer make_buffer_for_ce(BufKind kind, Device& device, size_t bytes, std::string* why);
Buffer register_region_for_ce(BufKind kind, Device& device, void* ptr, size_t bytes, std::string* why);

}  // namespace ds
