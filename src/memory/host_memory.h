// Host memory we allocate ourselves, whatever the backend: anonymous mmap,
// pageable malloc, locked pages, and POSIX shared memory.
#pragma once

#include <memory>
#include <string>

#include "backend/backend.h"

namespace ds {

// Private anonymous mapping, page aligned (so also 4 KiB aligned for O_DIRECT);
// `populate` faults every page in now so the measurement never does.
std::unique_ptr<Memory> map_anonymous(size_t bytes, bool populate);

// Page-aligned private anonymous memory for O_DIRECT buffers, faulted in, on huge
// pages where the system has them: hugetlb pages (1 GiB ones for 1 GiB and more, else
// 2 MiB) where enough are free (on the worker's node when it is placed), else
// transparent huge pages asked for with madvise where the kernel allows them, else
// 4 KiB pages. *pages says which, and why not bigger ones ("2 MiB hugetlb pages",
// "4 KiB pages (no free hugetlb pages; transparent huge pages: never)"), as UCM's
// HostHugePages tries them (ModelEngine-Group/unified-cache-management 734318ce).
std::unique_ptr<Memory> map_huge_first(size_t bytes, std::string* pages);

// malloc'd pageable memory, touched.
std::unique_ptr<Memory> alloc_pageable(size_t bytes);

// mlock() the range; released with munlock(). A refusal names RLIMIT_MEMLOCK.
std::unique_ptr<Memory> lock_pages(void* ptr, size_t bytes);

// One POSIX shared-memory object (shm_open + mmap). The creator removes the
// name when it is destroyed, or earlier with unlink(), so nothing outlives the run.
class ShmRegion {
 public:
  // Creates a fresh object named /dev-sandbox-<pid>-<n> and maps it; `populate`
  // faults every page in now (false: the caller binds parts to nodes first).
  static std::unique_ptr<ShmRegion> create(size_t bytes, bool populate = true);
  ~ShmRegion();
  ShmRegion(const ShmRegion&) = delete;
  ShmRegion& operator=(const ShmRegion&) = delete;

  void* ptr() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  const std::string& name() const { return name_; }
  void unlink();  // remove the name; existing mappings stay valid

 private:
  ShmRegion(std::string name, void* ptr, size_t bytes, bool owner)
      : name_(std::move(name)), ptr_(ptr), bytes_(bytes), owner_(owner) {}
  std::string name_;
  void* ptr_;
  size_t bytes_;
  bool owner_;
};

// Fault in every page of [ptr, ptr+bytes) by writing to it.
void touch_pages(void* ptr, size_t bytes);

}  // namespace ds
