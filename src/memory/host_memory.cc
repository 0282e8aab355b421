#include "memory/host_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "topology/placement.h"

namespace ds {

void touch_pages(void* ptr, size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto* p = static_cast<volatile char*>(ptr);
  for (size_t off = 0; off < bytes; off += page) p[off] = 0;
}

std::unique_ptr<Memory> map_anonymous(size_t bytes, bool populate) {
  // A placed worker's mapping is bound to its node before the first touch, so it
  // is populated by hand after the mbind rather than by MAP_POPULATE.
  const int node = worker_node();
  const int flags = MAP_PRIVATE | MAP_ANONYMOUS | (populate && node < 0 ? MAP_POPULATE : 0);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED)
    throw sys_error("mmap(" + format_bytes(bytes) + ", MAP_ANONYMOUS)", errno);
  auto m = std::make_unique<Memory>(p, p, bytes, [p, bytes] { munmap(p, bytes); });
  if (node >= 0) {
    bind_to_node(p, bytes, node);
    if (populate) touch_pages(p, bytes);
  }
  return m;
}

std::unique_ptr<Memory> alloc_pageable(size_t bytes) {
  void* p = std::malloc(bytes);
  if (!p) throw RunError("malloc(" + format_bytes(bytes) + "): out of memory");
  touch_pages(p, bytes);
  return std::make_unique<Memory>(p, p, bytes, [p] { std::free(p); });
}

std::unique_ptr<Memory> lock_pages(void* ptr, size_t bytes) {
  if (mlock(ptr, bytes) != 0) {
    const int err = errno;
    const uint64_t limit = memlock_limit_bytes();
    std::string msg = "mlock(" + format_bytes(bytes) + "): " + std::strerror(err);
    if (err == ENOMEM || err == EPERM)
      msg += "; RLIMIT_MEMLOCK is " +
             (limit == UINT64_MAX ? std::string("unlimited") : format_bytes(limit)) +
             ": raise it with `ulimit -l unlimited` (or lower -s/-n)";
    throw RunError(msg);
  }
  return std::make_unique<Memory>(ptr, ptr, bytes, [ptr, bytes] { munlock(ptr, bytes); });
}

std::unique_ptr<ShmRegion> ShmRegion::create(size_t bytes, bool populate) {
  static std::atomic<int> serial{0};
  const std::string name =
      "/dev-sandbox-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
  const int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) throw sys_error("shm_open(" + name + ")", errno);
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    const int err = errno;
    close(fd);
    shm_unlink(name.c_str());
    throw sys_error("ftruncate(" + name + ", " + format_bytes(bytes) + ")", err);
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | (populate ? MAP_POPULATE : 0), fd, 0);
  const int err = errno;
  close(fd);
  if (p == MAP_FAILED) {
    shm_unlink(name.c_str());
    throw sys_error("mmap(" + name + ", " + format_bytes(bytes) + ")", err);
  }
  return std::unique_ptr<ShmRegion>(new ShmRegion(name, p, bytes, true));
}

void ShmRegion::unlink() {
  if (owner_) {
    shm_unlink(name_.c_str());
    owner_ = false;
  }
}

ShmRegion::~ShmRegion() {
  munmap(ptr_, bytes_);
  unlink();
}

}  // namespace ds
