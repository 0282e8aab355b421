#include "memory/buffer.h"

#include "core/error.h"
#include "memory/host_memory.h"

namespace ds {

const char* label_kind(BufKind kind) {
  switch (kind) {
    case BufKind::kPinned: return "host";
    case BufKind::kPinnedMapped: return "host_mapped";
    case BufKind::kOdirect: return "odirect_mmap";
    case BufKind::kShm: return "shm";
    case BufKind::kRegistered: return "registered";
    case BufKind::kAnonymous: return "anonymous";
    case BufKind::kPageable: return "pageable";
    case BufKind::kDevice: return "device";
  }
  return "?";
}

bool is_device_kind(BufKind kind) { return kind == BufKind::kDevice; }

bool is_mapped_kind(BufKind kind) {
  return kind == BufKind::kPinnedMapped || kind == BufKind::kOdirect || kind == BufKind::kShm ||
         kind == BufKind::kRegistered;
}

bool host_lock_of(BufKind kind, HostLock* how) {
  if (kind == BufKind::kPinned || kind == BufKind::kPinnedMapped) {
    *how = HostLock::kPinnedAlloc;
    return true;
  }
  if (kind == BufKind::kOdirect || kind == BufKind::kShm || kind == BufKind::kRegistered) {
    *how = HostLock::kRegistration;
    return true;
  }
  return false;
}

Buffer register_region(BufKind kind, Device& device, void* ptr, size_t bytes) {
  Buffer b;
  b.kind = kind;
  b.bytes = bytes;
  b.registration = device.register_host(ptr, bytes, true);
  b.host = ptr;
  b.device = b.registration->device_ptr();
  return b;
}

Buffer register_region_for_ce(BufKind kind, Device& device, void* ptr, size_t bytes, std::string* why) {
  why->clear();
  try {
    return register_region(kind, device, ptr, bytes);
  } catch (const RunError& e) {
    *why = e.what();
  }
  Buffer b;
  b.kind = kind;
  b.bytes = bytes;
  b.host = b.device = ptr;
  return b;
}

Buffer make_buffer_for_ce(BufKind kind, Device& device, size_t bytes, std::string* why) {
  why->clear();
  if (kind != BufKind::kOdirect && kind != BufKind::kRegistered) return make_buffer(kind, device, bytes);
  auto m = map_anonymous(bytes, true);
  Buffer b = register_region_for_ce(kind, device, m->host_ptr(), bytes, why);
  b.memory = std::move(m);
  return b;
}

bool io_buffer_is_own(const Backend& backend, bool direct) {
  return direct && !backend.pinned_direct_io_unsupported().empty();
}

IoBuffer make_io_buffer(Device& device, const Backend& backend, size_t bytes, bool mapped, bool direct,
                        const std::string& what) {
  IoBuffer b;
  if (!io_buffer_is_own(backend, direct)) {
    b.memory = device.alloc_pinned(bytes, mapped);
    b.host = b.memory->host_ptr();
    b.device = b.memory->device_ptr();
    return b;
  }
  std::string pages;
  b.memory = map_huge_first(bytes, &pages);
  b.kind = BufKind::kOdirect;
  b.host = b.device = b.memory->host_ptr();
  std::string locked = ", locked";
  try {
    b.lock = lock_pages(b.host, bytes);
  } catch (const RunError& e) {
    locked = ", not locked by us (" + std::string(e.what()) + ")";
  }
  std::string registered = ", registered with the device";
  try {
    b.registration = device.register_host(b.host, bytes, true);
    b.device = b.registration->device_ptr();
  } catch (const RunError& e) {
    if (mapped) throw;
    registered = ", not registered with the device (" + std::string(e.what()) + ")";
  }
  b.note = what + ": mmap memory on " + pages + locked + registered + ", not the backend's pinned memory: " +
           backend.pinned_direct_io_unsupported();
  return b;
}

Buffer make_buffer(BufKind kind, Device& device, size_t bytes) {
  Buffer b;
  switch (kind) {
    case BufKind::kPinned:
    case BufKind::kPinnedMapped:
      b.memory = device.alloc_pinned(bytes, kind == BufKind::kPinnedMapped);
      break;
    case BufKind::kOdirect:
    case BufKind::kRegistered: {
      auto m = map_anonymous(bytes, true);
      b = register_region(kind, device, m->host_ptr(), bytes);
      b.memory = std::move(m);
      return b;
    }
    case BufKind::kAnonymous:
      b.memory = map_anonymous(bytes, true);
      break;
    case BufKind::kPageable:
      b.memory = alloc_pageable(bytes);
      break;
    case BufKind::kDevice:
      b.memory = device.alloc_device(bytes);
      break;
    case BufKind::kShm:
      throw RunError("internal: shared memory buffers come from the shared region");
  }
  b.kind = kind;
  b.bytes = bytes;
  b.host = b.memory->host_ptr();
  b.device = b.memory->device_ptr();
  return b;
}

}  // namespace ds
