// The one pre-flight every sub-command runs before it allocates anything: the
// memory a run needs against what this machine has, and the devices it names
// against what the backend sees. Too much is refused up front with the numbers
// and what to lower; nothing is OOM-killed half way.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ds {

struct MemoryNeeds {
  uint64_t host = 0;                // host RAM over all processes (sim: its device memory too)
  // What `host` is the sum of, named, as a refusal shows it ("sources 64.00 GiB +
  // destinations 64.00 GiB + ..."); empty: one amount (host_detail says it).
  std::vector<std::pair<std::string, uint64_t>> host_parts;
  // Adds `bytes` named `what` to host and host_parts; UsageError when the sum
  // overflows 64 bits.
  void add_host(const std::string& what, uint64_t bytes);
  // The per-iteration records the workers write (a host part named "records"):
  // written as the iterations run, not filled at setup, and what a huge -i grows.
  void add_records(uint64_t bytes);
  uint64_t records = 0;
  uint64_t shm = 0;                 // /dev/shm
  uint64_t locked_per_process = 0;  // what our own code mlock()s in one process (RLIMIT_MEMLOCK)
  uint64_t device_per_device = 0;   // device memory on each device
  // What the run's announcement (measurement's plan_line) shows besides: how many
  // devices hold device_per_device, whether that is host memory already counted in
  // `host` (sim), and the bytes the run's files take on disk.
  int devices = 0;
  bool device_in_host = false;
  uint64_t disk = 0;
};

// How a refusal reads: "not enough memory for <what>: it needs <X> of <host_what>
// (<host_detail>) but MemAvailable is <Y>; <lower>".
struct NeedsText {
  std::string what;         // the case name, or "aio"
  std::string host_what;    // "host memory", "host buffers"
  std::string host_detail;  // how the host bytes come about
  std::string lower;        // the options to lower, e.g. "lower -s, -n or -d"
};

// RunError when host memory, /dev/shm or RLIMIT_MEMLOCK would not hold the run.
void check_host_needs(const MemoryNeeds& needs, const NeedsText& text);

// RunError when `needs` bytes of device memory are more than `free` on `device`
// (checked by each worker on its device).
void check_device_needs(uint64_t needs, uint64_t free, int device, const NeedsText& text);

// UsageError when `requested` devices (or device index + 1, for `option`) are more
// than the backend sees: "option <option> got <value> but the <backend> backend
// sees <n> devices".
void check_device_count(const std::string& option, int value, int needed, int seen, const std::string& backend);

}  // namespace ds
