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

// The same for a copy engine (CE) copy, which reads host memory by its CPU address and
// so does not need the registration: where registering fails (the runtime has no
// registration, refuses it, or its pages cannot be locked) the memory stays
// unregistered and *why says why (empty when it was registered). Only the direct path,
// which reads the mapped address, needs the registration.
Buffer make_buffer_for_ce(BufKind kind, Device& device, size_t bytes, std::string* why);
Buffer register_region_for_ce(BufKind kind, Device& device, void* ptr, size_t bytes, std::string* why);

}  // namespace ds
