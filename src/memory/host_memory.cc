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

#ifndef MAP_HUGE_SHIFT
#define MAP_HUGE_SHIFT 26  // linux/mman.h, for older C libraries
#endif

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

namespace {

// Free hugetlb pages of `kib` KiB: on `node` (>= 0), else in the whole pool; 0 when
// unknown.
uint64_t free_huge_pages(uint64_t kib, int node) {
  const std::string dir = node >= 0 ? "/sys/devices/system/node/node" + std::to_string(node) + "/hugepages/"
                                    : std::string("/sys/kernel/mm/hugepages/");
  const std::string text = read_first_line(dir + "hugepages-" + std::to_string(kib) + "kB/free_hugepages");
  return text.empty() ? 0 : std::strtoull(text.c_str(), nullptr, 10);
}

// The transparent huge page mode in force ("always", "madvise", "never"), "" when unknown.
std::string thp_mode() {
  const std::string text = read_first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  const size_t open = text.find('['), close = text.find(']');
  return open == std::string::npos || close == std::string::npos || close < open
             ? std::string()
             : text.substr(open + 1, close - open - 1);
}

// One mapping of `bytes` rounded up to `page`, bound to the worker's node where it is
// placed and faulted in; null when mmap refuses (hugetlb pages not there).
std::unique_ptr<Memory> map_pages(size_t bytes, size_t page, int extra_flags, bool advise_huge) {
  const size_t span = (bytes + page - 1) / page * page;
  void* p = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  auto m = std::make_unique<Memory>(p, p, bytes, [p, span] { munmap(p, span); });
  if (advise_huge) (void)madvise(p, span, MADV_HUGEPAGE);
  const int node = worker_node();
  if (node >= 0) bind_to_node(p, span, node);
  touch_pages(p, span);
  return m;
}

}  // namespace

std::unique_ptr<Memory> map_huge_first(size_t bytes, std::string* pages) {
  const int node = worker_node();
  std::string why;
  // Where the worker is bound to its node, a hugetlb fault there must find a free page
  // on that node (the pool's reservation is not per node): only then are they used.
  for (const uint64_t kib : {uint64_t{1} << 20, uint64_t{2} << 10}) {
    const uint64_t page = kib << 10;
    if (kib == (uint64_t{1} << 20) && bytes < page) continue;  // 1 GiB pages for 1 GiB and more
    const uint64_t need = (bytes + page - 1) / page;
    if (free_huge_pages(kib, node) < need) continue;
    const int shift = kib == (uint64_t{1} << 20) ? 30 : 21;
    if (auto m = map_pages(bytes, static_cast<size_t>(page), MAP_HUGETLB | (shift << MAP_HUGE_SHIFT), false)) {
      *pages = kib == (uint64_t{1} << 20) ? "1 GiB hugetlb pages" : "2 MiB hugetlb pages";
      return m;
    }
  }
  why = "no free hugetlb pages" + std::string(node >= 0 ? " on NUMA node " + std::to_string(node) : "");
  const std::string thp = thp_mode();
  auto m = map_pages(bytes, static_cast<size_t>(sysconf(_SC_PAGESIZE)), 0, thp == "madvise" || thp == "always");
  if (!m) throw sys_error("mmap(" + format_bytes(bytes) + ", MAP_ANONYMOUS)", errno);
  if (thp == "madvise" || thp == "always")
    *pages = "transparent huge pages (" + thp + ", " + why + ")";
  else
    *pages = "4 KiB pages (" + why + "; transparent huge pages: " + (thp.empty() ? "unknown" : thp) + ")";
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
