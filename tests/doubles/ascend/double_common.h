// Shared by the two Ascend test doubles (libascendcl.so and libruntime.so, built for
// the tests only): the call log, failure injection, and the small C interface through
// which the runtime double puts FFTS+ work on the AscendCL double's streams.
//
// Environment:
//   DS_ACL_DOUBLE_LOG=path       append one line per call: "<pid> <call> <args>"
//   DS_ACL_DOUBLE_FAIL=name:N    the Nth call (per process) of entry point `name` fails;
//                                several as name:N,name:M
//   DS_ACL_DOUBLE_DEVICES=n      device count (default 8)
//   DS_ACL_DOUBLE_SOC=name       aclrtGetSocName (default Ascend910B3)
//   DS_ACL_DOUBLE_HBM=bytes      HBM per device (default 64 GiB)
//   DS_ACL_DOUBLE_NO_PEER=1      aclrtDeviceCanAccessPeer says no, aclrtDeviceEnablePeerAccess fails
//   DS_ACL_DOUBLE_SKEW=bytes     the runtime double reads the SDMA source and destination
//                                address words this many bytes off (proves a wrong layout fails)
//   DS_ACL_DOUBLE_BATCH_FEATURE=1  the driver has its own batch copy (FEATURE_MEMCPY_BATCH_ASYNC):
//                                aclrtMemcpyBatchAsync answers 207000, as the CANN runtime does;
//                                without it the call loops single copies (as the runtime does)
//   DS_ACL_DOUBLE_LOGIC_IDS=4,5  aclrtGetLogicDevIdByUserDevId of ACL device i: the i-th id
//                                (default: i); "unsupported": it answers 207000
//   DS_ACL_DOUBLE_CHIP_IDS=2,2   aclrtGetDeviceInfo(PHY_CHIP_ID) of ACL device i (default: its
//                                physical id, / 2 on an Ascend910_93* SoC: two dies per chip)
//   DS_ACL_DOUBLE_SDMA_H2D=silent|fail  an x86 host whose SDMA cannot read host memory
//                                (hicann/runtime b7bb740, cann/runtime issue #594): an SDMA
//                                context from registered host memory completes without
//                                copying (silent) or fails its task (fail)
//   DS_ACL_DOUBLE_DESC_ALLOC_NS=n  a launch with host contexts beyond the PCIe BAR copy
//                                stalls n ns (default 200000), as the runtime's device
//                                allocation and blocking copy per launch do
//   DS_ACL_DOUBLE_DESC_READBACK_NS=n  a launch with device contexts first reads them back,
//                                stalling n ns, as newer runtimes do (unset: used in place)
// The DCMI double (dcmi_double.cc, libdcmi.so) logs to DS_ACL_DOUBLE_LOG too, and reads:
//   DS_DCMI_DOUBLE_PCI=4:0000:18:00.0,...  the PCI address of each physical id it knows
//   DS_DCMI_DOUBLE_LOGICAL=4,5   the physical id of the driver's logical id i (default: i); the
//                                AscendCL double's aclrtGetPhyDevIdByLogicDevId reads it too
//   DS_DCMI_DOUBLE_FAIL=name:N   the Nth call of DCMI entry point `name` fails (-8005)
//   DEV_SANDBOX_KERNEL_RELEASE   the kernel release both the backend and the doubles go by
// Time (tests/doubles/double_timing.h; unset: copies take what memcpy takes):
//   DS_ACL_DOUBLE_COPY_NS_PER_KIB=n  every copy task takes at least n ns per KiB it moves;
//                                a task is one aclrtMemcpyAsync, each copy of an
//                                aclrtMemcpyBatchAsync, or one FFTS+ task (all its
//                                SDMA contexts, one after another)
//   DS_ACL_DOUBLE_DEVICE_FACTOR=d:f[,d:f]  device d's tasks take f times as long
//   DS_ACL_DOUBLE_COLD=N:ns      the first N copy tasks of every stream take ns more
//   DS_ACL_DOUBLE_COPY_COUNTED=1 a copy task's cost is counted on its stream's timeline, not
//                                slept from its start: it ends at max(the end of what the
//                                stream did before, when it could first run) + its cost, so a
//                                late wake-up is not added to the next (double_timing.h
//                                task_end_ns; an aclrtMemcpyBatchAsync is a task per copy)
//   DS_ACL_DOUBLE_SUBMIT_NS=n    every copy submission (aclrtMemcpyAsync, one
//                                aclrtMemcpyBatchAsync, rtFftsPlusTaskLaunchWithFlag)
//                                stalls its calling thread n ns before it enqueues
//   DS_ACL_DOUBLE_FFTS_SUBMIT_NS=n rtFftsPlusTaskLaunchWithFlag's stall instead of SUBMIT_NS
//                                (a launch may cost its caller another time than a copy call)
//   DS_ACL_DOUBLE_SUBMIT_COLD=N:ns the first N copy submissions of the process (per
//                                library: AscendCL's, the runtime's) stall ns more
//   DS_ACL_DOUBLE_SUBMIT_COUNTED=1 the submission stall is counted on the calling thread's
//                                timeline instead of slept (per library, as the stall is):
//                                the task the submission enqueues (an aclrtMemcpyBatchAsync's
//                                first copy) starts no earlier than its slot's end
//   DS_ACL_DOUBLE_BUILD_LOG=path "<pid> <ns> <call>" per call that makes, allocates, frees or
//                                registers something (memory, streams, events, peer access)
//                                or copies blocking (aclrtMemcpy: the FFTS+ contexts put on
//                                the device), and "ffts-contexts-rewritten" for a launch
//                                whose host contexts changed at an address it was given
//                                before (see double_timing.h)
//   DS_ACL_DOUBLE_TRACE=path     one line per stream event: "<pid> <device> <stream>
//                                <what> <ns>", what = copy-enqueued, copy-start,
//                                copy-end, callback-enqueued, callback-start,
//                                callback-end (see double_timing.h)
#pragma once

#include <fcntl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../double_timing.h"

// Exported by the runtime double (libruntime.so), called by the AscendCL double, which is
// linked against it as the real libascendcl.so is: the runtime launches only on streams
// announced to its own instance, so a second copy of libruntime.so sees invalid handles.
extern "C" void dsdouble_rt_adopt_stream(void* stream);
extern "C" void dsdouble_rt_forget_stream(void* stream);

namespace dsdouble {

constexpr int kSuccess = 0;
constexpr int kInvalidParam = 100000;     // ACL_ERROR_INVALID_PARAM
constexpr int kUninitialized = 100001;    // ACL_ERROR_UNINITIALIZE
constexpr int kRepeatInitialize = 100002;  // ACL_ERROR_REPEAT_INITIALIZE
constexpr int kInjected = 507899;         // what an injected failure returns
constexpr int kTaskFailed = 507011;       // an asynchronous task failed (reported at sync)

constexpr uint64_t kStreamMagic = 0x6473616373747265ull;  // "dsacstre"

// The first member of every AscendCL-double stream; the runtime double uses it to
// reach the stream without linking against the AscendCL double.
struct StreamApi {
  uint64_t magic;
  // Runs fn(arg) on the stream's engine thread after everything queued before it.
  // fn returns an empty string on success, else the error that poisons the stream.
  void (*enqueue)(void* stream, std::string (*fn)(void* arg), void* arg);
  // An SDMA address: device memory or the mapped address of registered host memory,
  // never a plain host pointer. Returns the CPU pointer, or null with `err` set.
  void* (*resolve_sdma)(uint64_t addr, uint64_t len, bool want_device, std::string* err);
  // The text aclGetRecentErrMsg returns next.
  void (*set_recent_error)(const char* msg);
  // Whether this process called aclInit and which device the calling thread has set.
  bool (*initialised)();
  // Like enqueue, for a copy task (traced, and taking its cost: see double_timing.h):
  // `bytes` known now, and more that fn may add with charge() while it runs. The task
  // starts no earlier than `not_before` (CLOCK_MONOTONIC ns, 0: none): the slot end of
  // the counted submission that enqueued it (SUBMIT_COUNTED; the submitting library's
  // own timeline, double_timing.h take_submit_slot).
  void (*enqueue_copy)(void* stream, std::string (*fn)(void* arg), void* arg, uint64_t bytes, int64_t not_before);
  // Called by a copy task's fn on the stream's thread: it moved `bytes` more.
  void (*charge)(void* stream, uint64_t bytes);
  // Whether an SDMA address is the mapped address of registered host memory.
  bool (*host_mapped)(uint64_t addr);
};

// The timing knobs and the trace under this prefix.
constexpr const char* kKnobs = "DS_ACL_DOUBLE_";

inline std::string fmt(const char* f, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// The entry points that make, allocate, free or register something, or copy
// blocking: each call is a line of DS_ACL_DOUBLE_BUILD_LOG (double_timing.h).
inline void mark_build(const char* call) {
  static const char* const kBuilds[] = {
      "aclrtMalloc",          "aclrtFree",          "aclrtMallocHost",          "aclrtFreeHost",
      "aclrtHostRegister",    "aclrtHostRegisterV2", "aclrtHostUnregister",     "aclrtCreateStream",
      "aclrtDestroyStream",   "aclrtCreateEvent",   "aclrtCreateEventWithFlag", "aclrtCreateEventExWithFlag",
      "aclrtDestroyEvent",    "aclrtMemcpy",        "aclrtDeviceEnablePeerAccess"};
  if (!dsdouble_timing::knob(kKnobs, "BUILD_LOG")) return;
  for (const char* b : kBuilds)
    if (std::strcmp(b, call) == 0) return dsdouble_timing::build_mark(kKnobs, call);
}

// One line per call, appended with a single write so processes do not interleave.
inline void log_call(const char* call, const std::string& args) {
  mark_build(call);
  const char* path = std::getenv("DS_ACL_DOUBLE_LOG");
  if (!path || !*path) return;
  const std::string line = std::to_string(getpid()) + " " + call + (args.empty() ? "" : " " + args) + "\n";
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  ssize_t w = write(fd, line.data(), line.size());
  (void)w;
  close(fd);
}

// True when this call of `call` is the one DS_ACL_DOUBLE_FAIL (or `variable`) names
// (counts per process).
inline bool inject_failure(const char* call, const char* variable = "DS_ACL_DOUBLE_FAIL") {
  const char* spec = std::getenv(variable);
  if (!spec || !*spec) return false;
  static std::mutex mu;
  static std::map<std::string, long> counts;
  static pid_t counted_pid = 0;
  std::lock_guard<std::mutex> lock(mu);
  if (counted_pid != getpid()) {  // a forked child counts its own calls
    counts.clear();
    counted_pid = getpid();
  }
  const long n = ++counts[call];
  std::string s(spec);
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t end = s.find(',', pos) == std::string::npos ? s.size() : s.find(',', pos);
    const std::string item = s.substr(pos, end - pos);
    const size_t colon = item.find(':');
    if (colon != std::string::npos && item.substr(0, colon) == call &&
        std::atol(item.c_str() + colon + 1) == n)
      return true;
    pos = end + 1;
  }
  return false;
}

inline long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (end && *end == '\0') ? x : fallback;
}

}  // namespace dsdouble
