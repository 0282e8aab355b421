#include "runner/preflight.h"

#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"

namespace ds {

namespace {

// Left free for the rest of the machine (and this tool's own heap).
constexpr uint64_t kHostMargin = 256ULL << 20;

std::string limit_text(uint64_t bytes) { return bytes == UINT64_MAX ? "unlimited" : format_bytes(bytes); }

}  // namespace

void MemoryNeeds::add_host(const std::string& what, uint64_t bytes) {
  if (host + bytes < host) throw UsageError("the memory this run needs overflows 64 bits (" + what + ")");
  host += bytes;
  host_parts.emplace_back(what, bytes);
}

void MemoryNeeds::add_records(uint64_t bytes) {
  add_host("records", bytes);
  records += bytes;
}

namespace {

// "(1.00 GiB x 64 blocks per buffer: sources 64.00 GiB + destinations 64.00 GiB = 128.00 GiB)"
std::string host_sum_text(const MemoryNeeds& n, const NeedsText& t) {
  std::string sum;
  if (n.host_parts.size() > 1) {
    for (const auto& part : n.host_parts)
      if (part.second > 0) sum += (sum.empty() ? "" : " + ") + part.first + " " + format_bytes(part.second);
    sum += " = " + format_bytes(n.host);
  }
  if (t.host_detail.empty() && sum.empty()) return "";
  return " (" + t.host_detail + (t.host_detail.empty() || sum.empty() ? "" : ": ") + sum + ")";
}

}  // namespace

void check_host_needs(const MemoryNeeds& n, const NeedsText& t) {
  std::string lower = t.lower.empty() ? "" : "; " + t.lower;
  // A huge -i: the per-iteration records, not the buffers, are what does not fit.
  if (n.records > n.host / 2) lower = "; lower -i: the per-iteration records are most of it";
  const uint64_t avail = mem_available_bytes();
  // Compared without adding to the need, which may be near 2^64 and would wrap.
  if (avail < kHostMargin || n.host > avail - kHostMargin)
    throw RunError("not enough memory for " + t.what + ": it needs " + format_bytes(n.host) + " of " + t.host_what +
                   host_sum_text(n, t) + " but MemAvailable is " + format_bytes(avail) + ", of which " +
                   format_bytes(kHostMargin) + " stay free for the rest of the machine" + lower);
  if (n.shm > 0 && n.shm > shm_free_bytes()) {
    // Lowering -s/-n changes what is measured: first say how to give /dev/shm the room.
    const uint64_t gib = (n.shm + (shm_total_bytes() - shm_free_bytes()) + (1ULL << 30) - 1) >> 30;
    const std::string in = container_evidence();
    throw RunError("not enough shared memory for " + t.what + ": it needs " + format_bytes(n.shm) +
                   " in /dev/shm but " + format_bytes(shm_free_bytes()) + " is free (of " +
                   format_bytes(shm_total_bytes()) + "); " +
                   (in.empty() ? "in a container, start it with --shm-size=" + std::to_string(gib) +
                                     "g (Docker's default is 64 MiB); on a host, mount -o remount,size=" +
                                     std::to_string(gib) + "G /dev/shm"
                               : "this looks like a container (" + in + "): start it with --shm-size=" +
                                     std::to_string(gib) + "g (Docker's default is 64 MiB; Kubernetes: an emptyDir "
                                     "with medium Memory at /dev/shm)") +
                   (t.lower.empty() ? "" : "; otherwise, measuring something smaller, " + t.lower));
  }
  const uint64_t limit = memlock_limit_bytes();
  if (n.locked_per_process > limit)
    throw RunError("memory locking refused for " + t.what + ": it locks " + format_bytes(n.locked_per_process) +
                   " per process but RLIMIT_MEMLOCK is " + limit_text(limit) +
                   "; raise it with `ulimit -l unlimited`" + lower);
}

void check_device_needs(uint64_t needs, uint64_t free, int device, const NeedsText& t) {
  if (needs > free)
    throw RunError("not enough device memory: " + t.what + " needs " + format_bytes(needs) + " on device " +
                   std::to_string(device) + " but " + format_bytes(free) + " is free" +
                   (t.lower.empty() ? "" : "; " + t.lower));
}

void check_device_count(const std::string& option, int value, int needed, int seen, const std::string& backend) {
  if (needed > seen)
    throw UsageError("option " + option + " got " + std::to_string(value) + " but the " + backend +
                     " backend sees " + std::to_string(seen) + " device" + (seen == 1 ? "" : "s"));
}

}  // namespace ds
