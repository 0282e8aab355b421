// What the cuda and ascend test doubles share about time: copies that take a
// known, configurable time on the stream's worker thread, a host-side stall in
// the submitting call, and a trace of what each stream did when. Each double
// reads the knobs under its own prefix (DS_CUDA_DOUBLE_ / DS_ACL_DOUBLE_); its
// header comment lists them. Unset, nothing here sleeps or writes anything.
//
// The cost of one copy task (one stream operation that moves bytes; each double
// says what one task is) with B bytes on device d, the k-th copy task (0-based)
// of its stream:
//   B * COPY_NS_PER_KIB / 1024 * factor(d)  +  (k < COLD's N ? COLD's ns : 0)
// The stream's worker stamps the task's start, moves the bytes, then sleeps
// until start + cost: a task takes at least its cost (a sleep never ends
// early), and about that when the memcpy is quicker. Events are stamped when the
// stream reaches them, as before, so device-event timing sees exactly this.
//
// Trace (<prefix>TRACE=path): one line per event, appended with one write(2) so
// that processes and threads do not interleave:
//   <pid> <device> <stream> <what> <monotonic ns>
// stream is the handle as %p prints it (the one the call logs show); ns is
// CLOCK_MONOTONIC, the clock dev-sandbox uses. `what` is one of
//   copy-enqueued    the submitting call put a copy task on the stream (after any
//                    SUBMIT_NS stall; stamped in the calling thread)
//   copy-start       the stream's worker began the task
//   copy-end         the task is complete (after its cost)
//   wait-enqueued    a stream wait (cuda: cuStreamWaitValue32_v2, the gate kernel)
//                    was put on the stream
//   wait-passed      the stream's worker saw the wait satisfied and went on
//   wait-timeout     the double gave up on a wait after 120 s and went on (a bug:
//                    nobody released it)
//   callback-enqueued  (ascend) aclrtLaunchCallback put a callback task on the stream
//   callback-start   (ascend) the subscribed thread began running the callback
//   callback-end     (ascend) the callback returned
//
// Build log (<prefix>BUILD_LOG=path): one line per call that makes, allocates, frees
// or instantiates something, or copies blocking (what a timed iteration must never
// do: docs/measurement.md "Nothing built while timed"), appended with one write(2):
//   <pid> <monotonic ns> <call>
// Each double says which calls those are. `call` may also be a pseudo-call the double
// detects itself, e.g. "batch-arrays-rewritten": descriptor arrays handed to a
// submission at an address it saw before, with a different content (a list the
// backend rebuilt in place of one it had prepared). tests/e2e/test_no_build_timed.cc
// matches the lines with the timed windows of DEV_SANDBOX_PHASE_TRACE.
#pragma once

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace dsdouble_timing {
namespace {  // internal linkage: each double has its own copy

inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Sleeps until CLOCK_MONOTONIC reaches `deadline` (never returns before it).
inline void sleep_until_ns(int64_t deadline) {
  timespec ts;
  ts.tv_sec = static_cast<time_t>(deadline / 1000000000);
  ts.tv_nsec = static_cast<long>(deadline % 1000000000);
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

// A copy task that started at t0 takes `cost`: no system call when it costs nothing.
inline void finish_task(int64_t t0, int64_t cost) {
  if (cost > 0) sleep_until_ns(t0 + cost);
}

inline void sleep_for_ns(int64_t ns) {
  if (ns > 0) sleep_until_ns(mono_ns() + ns);
}

inline const char* knob(const char* prefix, const char* name) {
  const std::string key = std::string(prefix) + name;
  const char* v = std::getenv(key.c_str());
  return v && *v ? v : nullptr;
}

inline int64_t knob_ns(const char* prefix, const char* name) {
  const char* v = knob(prefix, name);
  if (!v) return 0;
  char* end = nullptr;
  const long long x = std::strtoll(v, &end, 10);
  return end && *end == '\0' && x > 0 ? static_cast<int64_t>(x) : 0;
}

// DEVICE_FACTOR=d:f[,d:f...]: device d's copy tasks take f times as long (default 1).
inline double device_factor(const char* prefix, int device) {
  const char* v = knob(prefix, "DEVICE_FACTOR");
  if (!v) return 1.0;
  const std::string s(v);
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t end = s.find(',', pos) == std::string::npos ? s.size() : s.find(',', pos);
    const std::string item = s.substr(pos, end - pos);
    const size_t colon = item.find(':');
    if (colon != std::string::npos && std::atoi(item.c_str()) == device) {
      const double f = std::atof(item.c_str() + colon + 1);
      if (f > 0) return f;
    }
    pos = end + 1;
  }
  return 1.0;
}

// The cost of the k-th copy task (0-based) of a stream on `device`, moving `bytes`.
inline int64_t task_cost_ns(const char* prefix, uint64_t bytes, int device, uint64_t k) {
  int64_t ns = 0;
  if (const int64_t per_kib = knob_ns(prefix, "COPY_NS_PER_KIB"))
    ns = static_cast<int64_t>(static_cast<double>(bytes) * static_cast<double>(per_kib) / 1024.0 *
                              device_factor(prefix, device));
  // COLD=N:ns: the first N copy tasks of every stream take ns longer.
  if (const char* cold = knob(prefix, "COLD")) {
    const long n = std::atol(cold);
    const char* colon = std::strchr(cold, ':');
    if (colon && k < static_cast<uint64_t>(n > 0 ? n : 0)) ns += std::max<long long>(0, std::atoll(colon + 1));
  }
  return ns;
}

// When a copy task that started at t0 (its stream's worker stamped it) and costs `cost`
// ends: t0 + cost. COPY_COUNTED=1: on its stream's timeline instead, max(timeline, ready)
// + cost, `ready` being when the task could first run (enqueued, or its counted
// submission's slot end) and `timeline` where the stream's previous operation left it
// (stream_moved_on: every operation that is not a copy task moves it to the present). A
// worker that wakes late for one task then does not add that to the next: k back-to-back
// tasks end at the first one's start + their costs whatever the machine's load does to
// sleeps, as SUBMIT_COUNTED does for submissions (a task still never ends before its bytes
// moved). Unset, the timeline only follows the tasks.
inline int64_t task_end_ns(const char* prefix, int64_t& timeline, int64_t t0, int64_t ready, int64_t cost) {
  const int64_t end = knob(prefix, "COPY_COUNTED") ? std::max(timeline, ready) + cost : t0 + cost;
  timeline = end;
  return end;
}

// A stream operation that is not a copy task (an event, a wait, a callback) finished now.
inline void stream_moved_on(int64_t& timeline) { timeline = std::max(timeline, mono_ns()); }

// JUMP_NS=ns: a copy whose source or destination does not begin where the same
// stream's previous copy's ended costs ns more (on top of its task's cost): a
// scattered chunk's descriptor and page walk, which one run of adjacent chunks
// (blocks at sequential slots) pays once. A test comparing a paged placement with
// the contiguous one sets it, so the two are known to differ. `ends` is the
// stream's own (the previous copy's source and destination ends; 0 at first).
struct CopyEnds {
  uintptr_t src = 0, dst = 0;
};
inline int64_t jump_cost_ns(const char* prefix, CopyEnds& ends, const void* dst, const void* src, size_t bytes) {
  const int64_t ns = knob_ns(prefix, "JUMP_NS");
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const bool jumped = d != ends.dst || s != ends.src;
  ends.dst = d + bytes;
  ends.src = s + bytes;
  return jumped ? ns : 0;
}

// The not-before time a counted submission left for the task it enqueues (0: none).
inline int64_t& pending_slot() {
  static thread_local int64_t slot = 0;
  return slot;
}

// SUBMIT_NS: the calling thread of every copy submission stalls this long before
// the task is on the stream (a host-side cost: the call itself takes that long).
// SUBMIT_COLD=N:ns: the first N copy submissions of the process (of this library)
// stall ns more: a one-off host-side stall, as a preempted or page-faulting submitting
// thread has, that device-event timing behind a stream start gate does not see.
// SUBMIT_COUNTED=1: the stall is counted, not slept: each calling thread has a
// submission timeline, a submission takes the next SUBMIT_NS of it (from now when
// the timeline is behind), and the task it enqueues starts no earlier than that
// slot's end (take_submit_slot). The k-th back-to-back submission of a thread then
// starts its task at the first one's time + k x SUBMIT_NS whatever the machine's
// load does to sleeps: a late wake-up is never added to the next submission, as it is
// to a slept stall (a test comparing rates on a loaded machine sets this).
// `ns_knob` names the stall's knob where a call has its own (SUBMIT_NS unless it is set).
inline void submit_stall(const char* prefix, const char* ns_knob = "SUBMIT_NS") {
  int64_t ns = knob(prefix, ns_knob) ? knob_ns(prefix, ns_knob) : knob_ns(prefix, "SUBMIT_NS");
  if (const char* cold = knob(prefix, "SUBMIT_COLD")) {
    static std::atomic<long> submitted{0};
    const char* colon = std::strchr(cold, ':');
    if (colon && submitted.fetch_add(1) < std::atol(cold)) ns += std::max<long long>(0, std::atoll(colon + 1));
  }
  if (ns > 0 && knob(prefix, "SUBMIT_COUNTED")) {
    static thread_local int64_t timeline = 0;
    timeline = std::max(timeline, mono_ns()) + ns;
    pending_slot() = timeline;
    return;
  }
  sleep_for_ns(ns);
}

// The slot end the calling thread's last counted submission left (0: none), once:
// the enqueued task waits for it before it starts (wait_for_slot).
inline int64_t take_submit_slot() {
  const int64_t slot = pending_slot();
  pending_slot() = 0;
  return slot;
}

inline void wait_for_slot(int64_t slot) {
  if (slot > 0) sleep_until_ns(slot);
}

// Appends one line (up to 159 bytes) to the file at `path`, as O_APPEND writes
// do: whole, whichever process writes.
inline void append_line(const char* path, const char* line, int n) {
  if (n <= 0) return;
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line, static_cast<size_t>(n < 160 ? n : 159));
  (void)w;
  close(fd);
}

inline void trace(const char* prefix, int device, const void* stream, const char* what, int64_t ns) {
  const char* path = knob(prefix, "TRACE");
  if (!path) return;
  char line[160];
  append_line(path, line,
              std::snprintf(line, sizeof line, "%d %d %p %s %lld\n", static_cast<int>(getpid()), device, stream, what,
                            static_cast<long long>(ns)));
}

inline void build_mark(const char* prefix, const char* call) {
  const char* path = knob(prefix, "BUILD_LOG");
  if (!path) return;
  char line[160];
  append_line(path, line,
              std::snprintf(line, sizeof line, "%d %lld %s\n", static_cast<int>(getpid()),
                            static_cast<long long>(mono_ns()), call));
}

inline void trace_now(const char* prefix, int device, const void* stream, const char* what) {
  if (knob(prefix, "TRACE")) trace(prefix, device, stream, what, mono_ns());
}

// Polls `ready` (a short sleep between polls, no busy core) until it says yes or
// 120 s have passed; true when it said yes.
template <typename Ready>
bool poll_until(Ready ready) {
  const int64_t give_up = mono_ns() + 120LL * 1000000000LL;
  while (!ready()) {
    if (mono_ns() > give_up) return false;
    sleep_for_ns(50 * 1000);
  }
  return true;
}

}  // namespace
}  // namespace dsdouble_timing
