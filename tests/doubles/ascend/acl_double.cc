// Test double of AscendCL (libascendcl.so) for the ascend backend's tests: the entry
// points dev-sandbox calls, done on the CPU. Device memory is host memory behind a
// different address; registered host memory gets a mapped address that only SDMA
// contexts may use; each stream is a thread that runs its work in order; events carry
// the monotonic clock. It checks what the real runtime would refuse (no aclInit in
// this process, no device set on this thread, wrong address kinds, leaks, a copy
// between two devices without peer access, elapsed time between events of two
// streams, waiting on an event created without ACL_EVENT_SYNC) and logs every call
// (see double_common.h for the environment it reads). As the CANN docs say,
// aclrtMemcpyAsync from host memory that is not page-locked (neither aclrtMallocHost
// nor registered with ACL_HOST_REG_PINNED) returns only after the copy: the log says
// pageable=1 for those.
// Like the real runtime it hands out aclrtMallocHost memory that is 64-byte but not
// 4 KiB aligned and that O_DIRECT I/O cannot use (EFAULT; with the LD_PRELOAD shim of
// tests/shims, which the ascend tests load), refuses to register an address or length that is not 4 KiB aligned
// (107000), refuses on kernels 5.10 and older (DEV_SANDBOX_KERNEL_RELEASE, else uname)
// to register memory that is neither from aclrtMallocHost nor locked (mlock), refuses
// ACL_HOST_REG_PINNED for aclrtMallocHost memory, refuses to record an event again that
// a stream waited on unless aclrtResetEvent came in between (events of
// aclrtCreateEventExWithFlag are reused instead and refuse aclrtResetEvent), and does
// with aclrtMemcpyBatchAsync what the CANN runtime does: 207000 on a SoC without batch
// copies or, with DS_ACL_DOUBLE_BATCH_FEATURE=1, for a driver that has its own batch
// copy; otherwise one copy per block, looped inside the call. Each stream is announced to the runtime double it
// is linked against (libruntime.so, as the real libascendcl.so depends on it), which
// launches only on streams of its own instance.
// Callbacks (aclrtSubscribeReport, aclrtUnSubscribeReport, aclrtLaunchCallback,
// aclrtProcessReport) behave and fail as the CANN docs and the open runtime say (see
// the comment above them), in every variant. Copies take a configurable time and the
// streams can be traced (DS_ACL_DOUBLE_COPY_NS_PER_KIB, _DEVICE_FACTOR, _COLD,
// _COPY_COUNTED, _SUBMIT_NS, _SUBMIT_COLD, _SUBMIT_COUNTED, _TRACE: double_common.h).
// Built without aclrtHostRegisterV2/aclrtHostGetDevicePointer when
// DS_DOUBLE_NO_REGISTER_V2 is defined (an older CANN), and without those,
// aclrtHostRegister/aclrtHostUnregister, aclrtCreateEventExWithFlag and
// aclrtMemcpyBatchAsync when DS_DOUBLE_OLD_CANN is defined (CANN before 8.1).
#include <dlfcn.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/utsname.h>
#include <time.h>

#include <cctype>
#include <fstream>
#include <sstream>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <set>
#include <thread>
#include <vector>

#include "double_common.h"

using dsdouble::fmt;
using dsdouble::log_call;

namespace {

using aclError = int;

constexpr int kParamInvalid = 107000;     // ACL_ERROR_RT_PARAM_INVALID ("driver error:invalid value")
constexpr int kFeatureNotSupport = 207000;  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT

// Device memory and mapped host memory live at addresses the CPU must not use.
constexpr uint64_t kDeviceAlias = 1ull << 45;
constexpr uint64_t kMappedAlias = 1ull << 46;

struct Region {
  uint64_t size;
  int device;
  void* cpu;  // where the bytes are
  bool pinned = false;  // registrations: page-locked (ACL_HOST_REG_PINNED)
  bool mapped = true;   // registrations: has a device address
};

struct CallbackTask;

struct Reporter {
  int device = -1;                    // the device of its streams (one per thread)
  std::set<void*> streams;            // streams that report to it
  std::deque<CallbackTask*> pending;  // reached by their stream, waiting for aclrtProcessReport
};

struct State {
  std::mutex mu;
  pid_t init_pid = 0;
  std::map<uint64_t, Region> device_allocs;  // by device address
  std::map<uint64_t, uint64_t> pinned;        // aclrtMallocHost: cpu address -> size
  std::map<uint64_t, uint64_t> pinned_base;   // aclrtMallocHost: cpu address -> its mapping
  std::map<uint64_t, Region> registrations;   // by cpu address
  std::map<uint64_t, uint64_t> mapped;        // mapped address -> cpu address
  std::map<int, long> device_refs;
  std::map<int, uint64_t> device_used;
  std::set<void*> streams, events;
  std::set<std::pair<int, int>> peer_access;  // (device, peer): device may reach peer's memory
  std::string recent_error;
  // Callbacks: which thread each stream reports to, and per thread its device, its
  // streams and the callbacks its aclrtProcessReport has to run.
  std::map<void*, uint64_t> subscriber;             // stream -> thread id
  std::map<uint64_t, Reporter> reporters;           // thread id -> ...
  std::condition_variable callbacks;                // (with mu) a callback queued or done
};

State& st() {
  static State s;
  return s;
}

thread_local int t_device = -1;
thread_local pid_t t_device_pid = 0;

int device_count() { return static_cast<int>(dsdouble::env_long("DS_ACL_DOUBLE_DEVICES", 8)); }
uint64_t hbm_bytes() {
  return static_cast<uint64_t>(dsdouble::env_long("DS_ACL_DOUBLE_HBM", 64L << 30));
}

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

aclError fail(int code, const std::string& msg) {
  std::lock_guard<std::mutex> lock(st().mu);
  st().recent_error = msg;
  return code;
}

// Common entry checks: injected failure, aclInit in this process, a device on this thread.
aclError enter(const char* call, bool need_device) {
  if (dsdouble::inject_failure(call)) {
    log_call(call, "FAIL injected");
    return fail(dsdouble::kInjected, fmt("%s: injected failure (test double)", call));
  }
  if (st().init_pid != getpid())
    return fail(dsdouble::kUninitialized, fmt("%s: aclInit was not called in process %d", call, getpid()));
  if (need_device && (t_device < 0 || t_device_pid != getpid()))
    return fail(dsdouble::kInvalidParam, fmt("%s: no device set on this thread (aclrtSetDevice)", call));
  return dsdouble::kSuccess;
}

// Device address -> CPU pointer, if [addr, addr+len) lies in one allocation.
void* device_cpu(uint64_t addr, uint64_t len) {
  auto& m = st().device_allocs;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return nullptr;
  --it;
  if (addr + len > it->first + it->second.size) return nullptr;
  return static_cast<char*>(it->second.cpu) + (addr - it->first);
}

void* mapped_cpu(uint64_t addr, uint64_t len) {
  auto& m = st().mapped;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return nullptr;
  --it;
  const Region& r = st().registrations.at(it->second);
  if (addr + len > it->first + r.size) return nullptr;
  return reinterpret_cast<char*>(it->second) + (addr - it->first);
}

// The device whose memory holds addr, or -1. Caller holds st().mu.
int device_of(uint64_t addr) {
  auto& m = st().device_allocs;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return -1;
  --it;
  return addr < it->first + it->second.size ? it->second.device : -1;
}

// Whether [addr, addr+len) of host memory is page-locked: from aclrtMallocHost or
// registered with ACL_HOST_REG_PINNED. Caller holds st().mu.
bool host_locked(uint64_t addr, uint64_t len) {
  {
    auto& m = st().pinned;
    auto it = m.upper_bound(addr);
    if (it != m.begin()) {
      --it;
      if (addr + len <= it->first + it->second) return true;
    }
  }
  auto& m = st().registrations;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return false;
  --it;
  return it->second.pinned && addr + len <= it->first + it->second.size;
}

// Whether [addr, addr+len) lies inside one aclrtMallocHost allocation. Caller holds st().mu.
bool in_malloc_host(uint64_t addr, uint64_t len) {
  auto& m = st().pinned;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return false;
  --it;
  return addr + len <= it->first + it->second;
}

// Whether [addr, addr+len) lies inside one registration (any flags). Caller holds st().mu.
[[maybe_unused]] bool in_registration(uint64_t addr, uint64_t len) {
  auto& m = st().registrations;
  auto it = m.upper_bound(addr);
  if (it == m.begin()) return false;
  --it;
  return addr + len <= it->first + it->second.size;
}

// An entry point of the LD_PRELOAD shim (tests/shims/corrupt_shim.c), null without it.
template <typename F>
F no_dma_hook(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
}

// The kernel release as the runtime sees it (the tests set DEV_SANDBOX_KERNEL_RELEASE).
std::string kernel_release() {
  const char* forced = std::getenv("DEV_SANDBOX_KERNEL_RELEASE");
  if (forced && *forced) return forced;
  utsname u;
  return uname(&u) == 0 ? std::string(u.release) : std::string();
}

bool kernel_up_to_510(const std::string& release) {
  int major = 0, minor = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &major, &minor) < 1) return false;
  return major < 5 || (major == 5 && minor <= 10);
}

// Whether every page of [addr, addr+len) is locked (mlock), from /proc/self/smaps.
bool pages_locked(uint64_t addr, uint64_t len) {
  std::ifstream in("/proc/self/smaps");
  std::string line;
  uint64_t lo = 0, hi = 0;
  uint64_t covered_to = addr;
  bool in_range = false;
  while (std::getline(in, line)) {
    unsigned long long a = 0, b = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &a, &b) == 2 && line.find(':') != std::string::npos &&
        line.find('-') < line.find(' ')) {
      lo = a;
      hi = b;
      in_range = hi > addr && lo < addr + len;
      continue;
    }
    if (!in_range || line.rfind("VmFlags:", 0) != 0) continue;
    std::istringstream flags(line.substr(8));
    std::string f;
    bool locked = false;
    while (flags >> f) locked = locked || f == "lo";
    if (!locked || lo > covered_to) return false;
    covered_to = std::max<uint64_t>(covered_to, hi);
  }
  return covered_to >= addr + len;
}

// What aclrtHostRegister(V2) checks before mapping `ptr` (flag: the V2 flags, or 0 for V1).
[[maybe_unused]] aclError register_checks(const char* call, uint64_t cpu, uint64_t size, uint32_t flag) {
  // The driver wants 4 KiB pages: address and length (ACL_ERROR_RT_PARAM_INVALID).
  if (cpu % 4096 != 0 || size % 4096 != 0)
    return fail(kParamInvalid, fmt("%s: driver error:invalid value (address 0x%llx or length %llu is not 4 KiB "
                                   "aligned)",
                                   call, (unsigned long long)cpu, (unsigned long long)size));
  bool from_malloc_host;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    from_malloc_host = in_malloc_host(cpu, size);
  }
  if (from_malloc_host && (flag & 0x10000000u))
    return fail(kParamInvalid,
                fmt("%s: ACL_HOST_REG_PINNED is for memory that is not page-locked yet; this is aclrtMallocHost "
                    "memory",
                    call));
  const std::string kernel = kernel_release();
  if (!from_malloc_host && kernel_up_to_510(kernel) && !pages_locked(cpu, size))
    return fail(kParamInvalid, fmt("%s: kernel %s: only aclrtMallocHost memory (or locked pages) can be "
                                   "registered on kernels 5.10 and older",
                                   call, kernel.c_str()));
  return dsdouble::kSuccess;
}

bool is_alias(uint64_t addr) { return device_cpu(addr, 1) != nullptr || mapped_cpu(addr, 1) != nullptr; }

// A memcpy operand: device memory for a device side, a plain CPU pointer for a host
// side (a mapped address is for device-side access only, as the CANN docs say).
void* operand(uint64_t addr, uint64_t len, bool device_side, std::string* err, const char* what) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (device_side) {
    void* p = device_cpu(addr, len);
    if (!p) *err = fmt("%s 0x%llx (+%llu) is not device memory", what, (unsigned long long)addr,
                       (unsigned long long)len);
    return p;
  }
  if (is_alias(addr)) {
    *err = fmt("%s 0x%llx is a device or mapped address, not host memory", what, (unsigned long long)addr);
    return nullptr;
  }
  return reinterpret_cast<void*>(addr);
}

// ---- streams ----

struct Op {
  std::string (*fn)(void*) = nullptr;
  void* arg = nullptr;
  bool copy = false;   // a copy task: traced, and takes its cost (double_timing.h)
  uint64_t bytes = 0;  // what it moves, as known when it was enqueued
  int64_t not_before = 0;  // a copy task: its counted submission's slot end (SUBMIT_COUNTED)
  int64_t enqueued = 0;    // a copy task: when it was put on the stream
};

struct DStream {
  dsdouble::StreamApi api;  // first member: the handle points here
  int device = -1;
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Op> queue;
  bool busy = false, stop = false;
  std::string error;  // sticky: the first failed task
  std::thread worker;
  uint64_t copy_tasks = 0;  // copy tasks run so far (the worker's own)
  uint64_t charged = 0;     // bytes the running copy task moved (the worker's own)
  int64_t timeline = 0;     // where the last operation left the stream (the worker's own; COPY_COUNTED)

  void run() {
    std::unique_lock<std::mutex> lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stop || !queue.empty(); });
      if (queue.empty()) return;
      Op op = queue.front();
      queue.pop_front();
      busy = true;
      lock.unlock();
      std::string e;
      if (op.copy) {
        // The bytes move, then the task takes what is left of its cost.
        dsdouble_timing::wait_for_slot(op.not_before);
        const int64_t t0 = dsdouble_timing::mono_ns();
        dsdouble_timing::trace(dsdouble::kKnobs, device, this, "copy-start", t0);
        charged = op.bytes;
        e = op.fn(op.arg);
        const int64_t cost = dsdouble_timing::task_cost_ns(dsdouble::kKnobs, charged, device, copy_tasks++);
        const int64_t end =
            dsdouble_timing::task_end_ns(dsdouble::kKnobs, timeline, t0, std::max(op.enqueued, op.not_before), cost);
        if (cost > 0) dsdouble_timing::sleep_until_ns(end);  // no system call when it costs nothing
        dsdouble_timing::trace_now(dsdouble::kKnobs, device, this, "copy-end");
      } else {
        e = op.fn(op.arg);
        dsdouble_timing::stream_moved_on(timeline);
      }
      lock.lock();
      if (!e.empty() && error.empty()) error = e;
      busy = false;
      cv.notify_all();
    }
  }
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return queue.empty() && !busy; });
  }
};

void api_enqueue(void* stream, std::string (*fn)(void*), void* arg) {
  DStream* s = static_cast<DStream*>(stream);
  std::lock_guard<std::mutex> lock(s->mu);
  s->queue.push_back({fn, arg});
  s->cv.notify_all();
}

void api_enqueue_copy(void* stream, std::string (*fn)(void*), void* arg, uint64_t bytes, int64_t not_before) {
  DStream* s = static_cast<DStream*>(stream);
  const int64_t enqueued = dsdouble_timing::mono_ns();
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->queue.push_back({fn, arg, true, bytes, not_before, enqueued});
    s->cv.notify_all();
  }
  dsdouble_timing::trace(dsdouble::kKnobs, s->device, s, "copy-enqueued", enqueued);
}

void api_charge(void* stream, uint64_t bytes) { static_cast<DStream*>(stream)->charged += bytes; }

void* api_resolve_sdma(uint64_t addr, uint64_t len, bool want_device, std::string* err) {
  std::lock_guard<std::mutex> lock(st().mu);
  if (void* p = device_cpu(addr, len)) return p;
  if (!want_device) {
    if (void* p = mapped_cpu(addr, len)) return p;
    *err = fmt("SDMA source 0x%llx (+%llu) is neither device memory nor the mapped address of "
               "registered host memory",
               (unsigned long long)addr, (unsigned long long)len);
  } else {
    *err = fmt("SDMA destination 0x%llx (+%llu) is not device memory", (unsigned long long)addr,
               (unsigned long long)len);
  }
  return nullptr;
}

bool api_host_mapped(uint64_t addr) {
  std::lock_guard<std::mutex> lock(st().mu);
  return mapped_cpu(addr, 1) != nullptr;
}

void api_set_recent(const char* msg) {
  std::lock_guard<std::mutex> lock(st().mu);
  st().recent_error = msg ? msg : "";
}

bool api_initialised() { return st().init_pid == getpid() && t_device >= 0 && t_device_pid == getpid(); }

bool known_stream(void* s) {
  std::lock_guard<std::mutex> lock(st().mu);
  return s && st().streams.count(s);
}

struct DEvent {
  int64_t stamp = -1;  // set by the stream thread when reached
  int pending = 0;     // records queued and not yet reached
  uint32_t flags = 0;
  bool with_flag = false;      // from aclrtCreateEventWithFlag or aclrtCreateEventExWithFlag
  bool ex = false;             // from aclrtCreateEventExWithFlag: reusable, no aclrtResetEvent
  bool needs_reset = false;    // a stream waited on it: reset before it is recorded again
  void* stream = nullptr;      // where it was last recorded
  uint64_t recorded = 0;       // records issued
  uint64_t reached = 0;        // the latest record reached
  std::mutex mu;
  std::condition_variable cv;
};

struct StampOp {
  DEvent* e;
  uint64_t gen;
};

struct WaitOp {
  DEvent* e;
  uint64_t gen;
};

// aclrtStreamWaitEvent's task: hold the stream until the record it saw is reached.
std::string run_wait(void* arg) {
  WaitOp* w = static_cast<WaitOp*>(arg);
  {
    std::unique_lock<std::mutex> lock(w->e->mu);
    w->e->cv.wait(lock, [&] { return w->e->reached >= w->gen; });
  }
  delete w;
  return "";
}

struct CopyOp {
  void* dst;
  const void* src;
  size_t n;
};

std::string run_copy(void* arg) {
  CopyOp* c = static_cast<CopyOp*>(arg);
  std::memcpy(c->dst, c->src, c->n);
  delete c;
  return "";
}

std::string run_stamp(void* arg) {
  StampOp* op = static_cast<StampOp*>(arg);
  DEvent* e = op->e;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    e->stamp = now_ns();
    --e->pending;
    if (op->gen > e->reached) e->reached = op->gen;
    e->cv.notify_all();
  }
  delete op;
  return "";
}

aclError copy_checked(const char* call, void* dst, size_t dest_max, const void* src, size_t count, int kind,
                      CopyOp* out) {
  if (dest_max < count) return fail(dsdouble::kInvalidParam, fmt("%s: destMax %zu < count %zu", call, dest_max, count));
  if (kind < 0 || kind > 3) return fail(dsdouble::kInvalidParam, fmt("%s: memcpy kind %d", call, kind));
  const bool dst_dev = kind == 1 || kind == 3, src_dev = kind == 2 || kind == 3;
  std::string err;
  void* d = operand(reinterpret_cast<uint64_t>(dst), count, dst_dev, &err, "destination");
  const void* s = d ? operand(reinterpret_cast<uint64_t>(src), count, src_dev, &err, "source") : nullptr;
  if (!d || !s) return fail(dsdouble::kInvalidParam, std::string(call) + ": " + err);
  {
    // Another device's memory: only with peer access enabled from this device (the
    // CANN docs make it a precondition of copies between devices on Atlas A2).
    std::lock_guard<std::mutex> lock(st().mu);
    for (const void* p : {static_cast<const void*>(dst), src}) {
      const bool dev_side = p == dst ? dst_dev : src_dev;
      if (!dev_side) continue;
      const int owner = device_of(reinterpret_cast<uint64_t>(p));
      if (owner >= 0 && owner != t_device && !st().peer_access.count({t_device, owner})) {
        st().recent_error = fmt("%s: device %d's memory used on device %d without aclrtDeviceEnablePeerAccess(%d)",
                                call, owner, t_device, owner);
        return dsdouble::kInvalidParam;
      }
    }
  }
  *out = {d, s, count};
  return dsdouble::kSuccess;
}

// A host operand of an async copy that is not page-locked makes the copy synchronous.
bool pageable_host_side(const void* dst, const void* src, size_t count, int kind) {
  std::lock_guard<std::mutex> lock(st().mu);
  if ((kind == 0 || kind == 2) && !host_locked(reinterpret_cast<uint64_t>(dst), count)) return true;
  if ((kind == 0 || kind == 1) && !host_locked(reinterpret_cast<uint64_t>(src), count)) return true;
  return false;
}

}  // namespace

// The copies of this double are memcpy calls on its stream threads, host CPU work:
// the backend reads this symbol (no vendor library has it) and the staging pipelines'
// transfer loop naps instead of spinning (src/aio/io_loop.h look_nap_rule).
extern "C" __attribute__((visibility("default"))) const int dev_sandbox_double_copies_on_host_cpus = 1;

extern "C" {

// ---- process ----

aclError aclInit(const char* config) {
  log_call("aclInit", config ? config : "");
  if (dsdouble::inject_failure("aclInit")) return fail(dsdouble::kInjected, "aclInit: injected failure (test double)");
  std::lock_guard<std::mutex> lock(st().mu);
  if (st().init_pid == getpid()) return dsdouble::kRepeatInitialize;
  st().init_pid = getpid();
  // A forked child starts with none of its parent's runtime state.
  st().device_allocs.clear();
  st().pinned.clear();
  st().registrations.clear();
  st().mapped.clear();
  st().device_refs.clear();
  st().device_used.clear();
  st().streams.clear();
  st().events.clear();
  st().peer_access.clear();
  st().subscriber.clear();
  st().reporters.clear();
  return dsdouble::kSuccess;
}

aclError aclFinalize() {
  if (aclError rc = enter("aclFinalize", false)) return rc;
  std::lock_guard<std::mutex> lock(st().mu);
  long refs = 0;
  for (auto& kv : st().device_refs) refs += kv.second;
  if (!st().subscriber.empty())
    log_call("aclFinalize.subscriptions", fmt("live=%zu (aclrtUnSubscribeReport missing)", st().subscriber.size()));
  log_call("aclFinalize", fmt("live_device_allocs=%zu live_pinned=%zu live_registrations=%zu live_streams=%zu "
                              "live_events=%zu device_refs=%ld",
                              st().device_allocs.size(), st().pinned.size(), st().registrations.size(),
                              st().streams.size(), st().events.size(), refs));
  st().init_pid = 0;
  return dsdouble::kSuccess;
}

const char* aclGetRecentErrMsg() {
  static thread_local std::string copy;
  std::lock_guard<std::mutex> lock(st().mu);
  copy = st().recent_error;
  st().recent_error.clear();
  return copy.c_str();
}

aclError aclrtGetVersion(int32_t* major, int32_t* minor, int32_t* patch) {
  log_call("aclrtGetVersion", "");
  *major = 1;
  *minor = 15;
  *patch = 0;
  return dsdouble::kSuccess;
}

struct aclCANNPackageVersion {
  char version[128];
  char parts[4][64];
  char reserved[128];
};

aclError aclsysGetCANNVersion(int name, aclCANNPackageVersion* v) {
  log_call("aclsysGetCANNVersion", fmt("name=%d", name));
  std::memset(v, 0, sizeof *v);
  std::snprintf(v->version, sizeof v->version, "8.0.0-test-double");
  return dsdouble::kSuccess;
}

const char* aclrtGetSocName() {
  log_call("aclrtGetSocName", "");
  if (st().init_pid != getpid()) return nullptr;
  static std::string soc;
  const char* env = std::getenv("DS_ACL_DOUBLE_SOC");
  soc = env ? env : "Ascend910B3";
  return soc.c_str();
}

// ---- devices ----

aclError aclrtGetDeviceCount(uint32_t* count) {
  log_call("aclrtGetDeviceCount", "");
  if (aclError rc = enter("aclrtGetDeviceCount", false)) return rc;
  *count = static_cast<uint32_t>(device_count());
  return dsdouble::kSuccess;
}

// The driver's ids of each device, as the real runtime gives them (hicann/runtime
// api_impl.cc GetLogicDevIdByUserDevId, api_c_device.cc rtsGetPhyDevIdByLogicDevId,
// npu_driver.cc GetChipIdDieId):
//   DS_ACL_DOUBLE_LOGIC_IDS=4,5  the driver's logical id of ACL (user) device i: the i-th
//                                entry (as ASCEND_RT_VISIBLE_DEVICES=4,5 renumbers them);
//                                default i; "unsupported": the call answers 207000
//   DS_DCMI_DOUBLE_LOGICAL=4,5   the physical id of logical id i (one driver table, read by
//                                the DCMI double too); default i
//   aclrtGetDeviceInfo(ACL_DEV_ATTR_PHY_CHIP_ID 402) answers the device's chip index,
//   not a DCMI id: on an Atlas A3 SoC (Ascend910_93*) two dies share one chip
//   (physical id / 2), elsewhere one die per chip (the physical id);
//   DS_ACL_DOUBLE_CHIP_IDS=2,2 sets it per ACL device.
// The old-CANN variant exports neither id call (to stand for a library without them).
}  // extern "C"

namespace {

std::vector<std::string> id_list(const char* variable) {
  std::vector<std::string> out;
  const char* v = std::getenv(variable);
  std::istringstream in(v ? v : "");
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

// The i-th entry of `variable`'s list; `fallback` when the list is empty; -1 when it has
// no entry i.
long long listed_id(const char* variable, long long i, long long fallback) {
  const std::vector<std::string> ids = id_list(variable);
  if (ids.empty()) return fallback;
  if (i < 0 || static_cast<size_t>(i) >= ids.size()) return -1;
  return std::atoll(ids[static_cast<size_t>(i)].c_str());
}

long long logic_of_user(int32_t user) { return listed_id("DS_ACL_DOUBLE_LOGIC_IDS", user, user); }
long long phy_of_logic(long long logic) { return listed_id("DS_DCMI_DOUBLE_LOGICAL", logic, logic); }

}  // namespace

extern "C" {

aclError aclrtGetDeviceInfo(uint32_t device, int attr, int64_t* value) {
  log_call("aclrtGetDeviceInfo", fmt("device=%u attr=%d", device, attr));
  if (aclError rc = enter("aclrtGetDeviceInfo", false)) return rc;
  if (!value || static_cast<int>(device) >= device_count())
    return fail(dsdouble::kInvalidParam, fmt("aclrtGetDeviceInfo: no device %u", device));
  if (attr != 402) return fail(kFeatureNotSupport, fmt("aclrtGetDeviceInfo: attribute %d (test double)", attr));
  const long long phy = phy_of_logic(logic_of_user(static_cast<int32_t>(device)));
  const char* soc = std::getenv("DS_ACL_DOUBLE_SOC");
  const bool a3 = soc && std::strncmp(soc, "Ascend910_93", 12) == 0;
  *value = listed_id("DS_ACL_DOUBLE_CHIP_IDS", device, a3 ? phy / 2 : phy);
  return dsdouble::kSuccess;
}

#ifndef DS_DOUBLE_OLD_CANN
aclError aclrtGetLogicDevIdByUserDevId(const int32_t user, int32_t* const logic) {
  log_call("aclrtGetLogicDevIdByUserDevId", fmt("user=%d", user));
  if (aclError rc = enter("aclrtGetLogicDevIdByUserDevId", false)) return rc;
  if (!logic || user < 0 || user >= device_count())
    return fail(dsdouble::kInvalidParam, fmt("aclrtGetLogicDevIdByUserDevId: no device %d", user));
  const char* ids = std::getenv("DS_ACL_DOUBLE_LOGIC_IDS");
  if (ids && std::string(ids) == "unsupported")
    return fail(kFeatureNotSupport, "aclrtGetLogicDevIdByUserDevId: not supported (test double)");
  const long long v = logic_of_user(user);
  if (v < 0) return fail(dsdouble::kInvalidParam, fmt("DS_ACL_DOUBLE_LOGIC_IDS has no id for device %d", user));
  *logic = static_cast<int32_t>(v);
  return dsdouble::kSuccess;
}

aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logic, int32_t* const phy) {
  log_call("aclrtGetPhyDevIdByLogicDevId", fmt("logic=%d", logic));
  if (aclError rc = enter("aclrtGetPhyDevIdByLogicDevId", false)) return rc;
  const long long v = phy_of_logic(logic);
  if (!phy || logic < 0 || v < 0)
    return fail(dsdouble::kInvalidParam, fmt("aclrtGetPhyDevIdByLogicDevId: no logical device %d", logic));
  *phy = static_cast<int32_t>(v);
  return dsdouble::kSuccess;
}
#endif

aclError aclrtSetDevice(int32_t device) {
  log_call("aclrtSetDevice", fmt("device=%d", device));
  if (aclError rc = enter("aclrtSetDevice", false)) return rc;
  if (device < 0 || device >= device_count())
    return fail(dsdouble::kInvalidParam, fmt("aclrtSetDevice: no device %d", device));
  std::lock_guard<std::mutex> lock(st().mu);
  ++st().device_refs[device];
  t_device = device;
  t_device_pid = getpid();
  return dsdouble::kSuccess;
}

aclError aclrtResetDevice(int32_t device) {
  log_call("aclrtResetDevice", fmt("device=%d", device));
  if (aclError rc = enter("aclrtResetDevice", false)) return rc;
  std::lock_guard<std::mutex> lock(st().mu);
  if (st().device_refs[device] <= 0) {
    st().recent_error = fmt("aclrtResetDevice: device %d was not set", device);
    return dsdouble::kInvalidParam;
  }
  --st().device_refs[device];
  return dsdouble::kSuccess;
}

// Peer access. DS_ACL_DOUBLE_NO_PEER=1: no two devices can exchange data.
aclError aclrtDeviceCanAccessPeer(int32_t* can, int32_t device, int32_t peer) {
  log_call("aclrtDeviceCanAccessPeer", fmt("device=%d peer=%d", device, peer));
  if (aclError rc = enter("aclrtDeviceCanAccessPeer", false)) return rc;
  if (device == peer || device < 0 || peer < 0 || device >= device_count() || peer >= device_count())
    return fail(dsdouble::kInvalidParam, fmt("aclrtDeviceCanAccessPeer: devices %d and %d", device, peer));
  *can = dsdouble::env_long("DS_ACL_DOUBLE_NO_PEER", 0) ? 0 : 1;
  return dsdouble::kSuccess;
}

aclError aclrtDeviceEnablePeerAccess(int32_t peer, uint32_t flags) {
  log_call("aclrtDeviceEnablePeerAccess", fmt("device=%d peer=%d flags=%u", t_device, peer, flags));
  if (aclError rc = enter("aclrtDeviceEnablePeerAccess", true)) return rc;
  if (flags != 0) return fail(dsdouble::kInvalidParam, "aclrtDeviceEnablePeerAccess: flags must be 0");
  if (peer == t_device || peer < 0 || peer >= device_count())
    return fail(dsdouble::kInvalidParam, fmt("aclrtDeviceEnablePeerAccess: peer %d from device %d", peer, t_device));
  if (dsdouble::env_long("DS_ACL_DOUBLE_NO_PEER", 0))
    return fail(dsdouble::kInvalidParam, "aclrtDeviceEnablePeerAccess: the devices cannot exchange data");
  std::lock_guard<std::mutex> lock(st().mu);
  st().peer_access.insert({t_device, peer});
  return dsdouble::kSuccess;
}

aclError aclrtGetMemInfo(int attr, size_t* free, size_t* total) {
  log_call("aclrtGetMemInfo", fmt("attr=%d", attr));
  if (aclError rc = enter("aclrtGetMemInfo", true)) return rc;
  if (attr != 1) return fail(dsdouble::kInvalidParam, fmt("aclrtGetMemInfo: attr %d is not ACL_HBM_MEM", attr));
  std::lock_guard<std::mutex> lock(st().mu);
  *total = hbm_bytes();
  *free = hbm_bytes() - st().device_used[t_device];
  return dsdouble::kSuccess;
}

// ---- memory ----

aclError aclrtMalloc(void** ptr, size_t size, int policy) {
  if (aclError rc = enter("aclrtMalloc", true)) {
    log_call("aclrtMalloc", fmt("size=%zu policy=%d error=%d", size, policy, rc));
    return rc;
  }
  if (size == 0) return fail(dsdouble::kInvalidParam, "aclrtMalloc: size 0");
  void* cpu = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (cpu == MAP_FAILED) return fail(200000, "aclrtMalloc: out of memory");
  const uint64_t addr = reinterpret_cast<uint64_t>(cpu) ^ kDeviceAlias;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    if (st().device_used[t_device] + size > hbm_bytes()) {
      munmap(cpu, size);
      st().recent_error = "aclrtMalloc: HBM exhausted";
      return 200000;
    }
    st().device_allocs[addr] = {size, t_device, cpu};
    st().device_used[t_device] += size;
  }
  *ptr = reinterpret_cast<void*>(addr);
  log_call("aclrtMalloc", fmt("size=%zu policy=%d device=%d ptr=0x%llx", size, policy, t_device,
                              (unsigned long long)addr));
  return dsdouble::kSuccess;
}

aclError aclrtFree(void* ptr) {
  log_call("aclrtFree", fmt("ptr=0x%llx", (unsigned long long)reinterpret_cast<uint64_t>(ptr)));
  if (aclError rc = enter("aclrtFree", false)) return rc;
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().device_allocs.find(reinterpret_cast<uint64_t>(ptr));
  if (it == st().device_allocs.end()) {
    st().recent_error = "aclrtFree: not an aclrtMalloc pointer";
    return dsdouble::kInvalidParam;
  }
  munmap(it->second.cpu, it->second.size);
  st().device_used[it->second.device] -= it->second.size;
  st().device_allocs.erase(it);
  return dsdouble::kSuccess;
}

aclError aclrtMallocHost(void** ptr, size_t size) {
  if (aclError rc = enter("aclrtMallocHost", true)) {
    log_call("aclrtMallocHost", fmt("size=%zu error=%d", size, rc));
    return rc;
  }
  // The docs promise 64-byte alignment only: hand out memory 64 bytes past a page
  // boundary, so a caller that needs 4 KiB must align it itself.
  void* base = mmap(nullptr, size + 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (base == MAP_FAILED) return fail(200000, "aclrtMallocHost: out of memory");
  void* p = static_cast<char*>(base) + 64;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    st().pinned[reinterpret_cast<uint64_t>(p)] = size;
    st().pinned_base[reinterpret_cast<uint64_t>(p)] = reinterpret_cast<uint64_t>(base);
  }
  // The driver maps this memory so that the block layer cannot pin it: O_DIRECT I/O into
  // it fails with EFAULT (UCM commit 734318ce, PR #850). The LD_PRELOAD shim
  // (tests/shims/corrupt_shim.c) makes the kernel answer so, where it is loaded.
  if (auto add = no_dma_hook<void (*)(void*, size_t)>("ds_shim_no_dma_add")) add(base, size + 4096);
  *ptr = p;
  log_call("aclrtMallocHost", fmt("size=%zu ptr=0x%llx", size, (unsigned long long)reinterpret_cast<uint64_t>(p)));
  return dsdouble::kSuccess;
}

aclError aclrtFreeHost(void* ptr) {
  log_call("aclrtFreeHost", fmt("ptr=0x%llx", (unsigned long long)reinterpret_cast<uint64_t>(ptr)));
  if (aclError rc = enter("aclrtFreeHost", false)) return rc;
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().pinned.find(reinterpret_cast<uint64_t>(ptr));
  if (it == st().pinned.end()) {
    st().recent_error = "aclrtFreeHost: not an aclrtMallocHost pointer";
    return dsdouble::kInvalidParam;
  }
  {
    auto reg = st().registrations.lower_bound(it->first);
    if (reg != st().registrations.end() && reg->first < it->first + it->second) {
      st().recent_error = "aclrtFreeHost: the memory is still registered (aclrtHostUnregister first)";
      return dsdouble::kInvalidParam;
    }
  }
  if (auto remove = no_dma_hook<void (*)(void*)>("ds_shim_no_dma_remove"))
    remove(reinterpret_cast<void*>(st().pinned_base.at(it->first)));
  munmap(reinterpret_cast<void*>(st().pinned_base.at(it->first)), it->second + 4096);
  st().pinned_base.erase(it->first);
  st().pinned.erase(it);
  return dsdouble::kSuccess;
}

#ifndef DS_DOUBLE_OLD_CANN
aclError aclrtHostRegister(void* ptr, uint64_t size, int type, void** dev) {
  const uint64_t cpu = reinterpret_cast<uint64_t>(ptr);
  if (aclError rc = enter("aclrtHostRegister", true)) {
    log_call("aclrtHostRegister", fmt("ptr=0x%llx size=%llu error=%d", (unsigned long long)cpu,
                                      (unsigned long long)size, rc));
    return rc;
  }
  if (type != 0) return fail(dsdouble::kInvalidParam, fmt("aclrtHostRegister: type %d is not MAPPED", type));
  if (aclError rc = register_checks("aclrtHostRegister", cpu, size, 0)) {
    log_call("aclrtHostRegister", fmt("ptr=0x%llx size=%llu error=%d", (unsigned long long)cpu,
                                      (unsigned long long)size, rc));
    return rc;
  }
  const uint64_t alias = cpu ^ kMappedAlias;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    if (st().registrations.count(cpu)) {
      st().recent_error = "aclrtHostRegister: already registered";
      return dsdouble::kInvalidParam;
    }
    st().registrations[cpu] = {size, t_device, ptr};
    st().mapped[alias] = cpu;
  }
  *dev = reinterpret_cast<void*>(alias);
  log_call("aclrtHostRegister", fmt("ptr=0x%llx size=%llu type=%d dev=0x%llx", (unsigned long long)cpu,
                                    (unsigned long long)size, type, (unsigned long long)alias));
  return dsdouble::kSuccess;
}

#endif

#if !defined(DS_DOUBLE_NO_REGISTER_V2) && !defined(DS_DOUBLE_OLD_CANN)
constexpr uint32_t kRegMapped = 0x2, kRegPinned = 0x10000000;

aclError aclrtHostRegisterV2(void* ptr, uint64_t size, uint32_t flag) {
  const uint64_t cpu = reinterpret_cast<uint64_t>(ptr);
  if (aclError rc = enter("aclrtHostRegisterV2", true)) {
    log_call("aclrtHostRegisterV2", fmt("ptr=0x%llx size=%llu flags=0x%x error=%d", (unsigned long long)cpu,
                                        (unsigned long long)size, flag, rc));
    return rc;
  }
  if (flag == 0 || (flag & ~(kRegMapped | kRegPinned)) != 0)
    return fail(dsdouble::kInvalidParam, fmt("aclrtHostRegisterV2: flag 0x%x (this double: MAPPED 0x2 | PINNED 0x10000000)", flag));
  if (aclError rc = register_checks("aclrtHostRegisterV2", cpu, size, flag)) {
    log_call("aclrtHostRegisterV2", fmt("ptr=0x%llx size=%llu flags=0x%x error=%d", (unsigned long long)cpu,
                                        (unsigned long long)size, flag, rc));
    return rc;
  }
  {
    std::lock_guard<std::mutex> lock(st().mu);
    if (st().registrations.count(cpu)) {
      st().recent_error = "aclrtHostRegisterV2: already registered";
      return dsdouble::kInvalidParam;
    }
    Region r{size, t_device, ptr};
    r.pinned = (flag & kRegPinned) != 0;
    r.mapped = (flag & kRegMapped) != 0;
    st().registrations[cpu] = r;
    if (r.mapped) st().mapped[cpu ^ kMappedAlias] = cpu;
  }
  log_call("aclrtHostRegisterV2", fmt("ptr=0x%llx size=%llu flags=0x%x", (unsigned long long)cpu,
                                      (unsigned long long)size, flag));
  return dsdouble::kSuccess;
}

aclError aclrtHostGetDevicePointer(void* host, void** dev, uint32_t flag) {
  const uint64_t cpu = reinterpret_cast<uint64_t>(host);
  if (aclError rc = enter("aclrtHostGetDevicePointer", false)) return rc;
  if (flag != 0) return fail(dsdouble::kInvalidParam, "aclrtHostGetDevicePointer: flag must be 0");
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().registrations.find(cpu);
  if (it == st().registrations.end() || !it->second.mapped) {
    st().recent_error = "aclrtHostGetDevicePointer: not registered with ACL_HOST_REG_MAPPED";
    return dsdouble::kInvalidParam;
  }
  *dev = reinterpret_cast<void*>(cpu ^ kMappedAlias);
  log_call("aclrtHostGetDevicePointer", fmt("ptr=0x%llx dev=0x%llx", (unsigned long long)cpu,
                                            (unsigned long long)(cpu ^ kMappedAlias)));
  return dsdouble::kSuccess;
}
#endif

#ifndef DS_DOUBLE_OLD_CANN
aclError aclrtHostUnregister(void* ptr) {
  const uint64_t cpu = reinterpret_cast<uint64_t>(ptr);
  log_call("aclrtHostUnregister", fmt("ptr=0x%llx", (unsigned long long)cpu));
  if (aclError rc = enter("aclrtHostUnregister", false)) return rc;
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().registrations.find(cpu);
  if (it == st().registrations.end()) {
    st().recent_error = "aclrtHostUnregister: not registered";
    return dsdouble::kInvalidParam;
  }
  st().mapped.erase(cpu ^ kMappedAlias);
  st().registrations.erase(it);
  return dsdouble::kSuccess;
}

#endif

// ---- streams and events ----

aclError aclrtCreateStream(void** stream) {
  if (aclError rc = enter("aclrtCreateStream", true)) {
    log_call("aclrtCreateStream", fmt("error=%d", rc));
    return rc;
  }
  DStream* s = new DStream();
  s->api = {dsdouble::kStreamMagic, api_enqueue, api_resolve_sdma, api_set_recent, api_initialised,
            api_enqueue_copy, api_charge, api_host_mapped};
  s->device = t_device;
  s->worker = std::thread([s] { s->run(); });
  {
    std::lock_guard<std::mutex> lock(st().mu);
    st().streams.insert(s);
  }
  dsdouble_rt_adopt_stream(s);  // the runtime instance this library is linked against
  *stream = s;
  log_call("aclrtCreateStream", fmt("device=%d stream=%p", t_device, static_cast<void*>(s)));
  return dsdouble::kSuccess;
}

aclError aclrtSynchronizeStream(void* stream) {
  log_call("aclrtSynchronizeStream", fmt("stream=%p", stream));
  if (aclError rc = enter("aclrtSynchronizeStream", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtSynchronizeStream: unknown stream");
  DStream* s = static_cast<DStream*>(stream);
  s->wait_idle();
  std::lock_guard<std::mutex> lock(s->mu);
  if (!s->error.empty()) return fail(dsdouble::kTaskFailed, "stream task failed: " + s->error);
  return dsdouble::kSuccess;
}

aclError aclrtDestroyStream(void* stream) {
  log_call("aclrtDestroyStream", fmt("stream=%p", stream));
  if (aclError rc = enter("aclrtDestroyStream", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtDestroyStream: unknown stream");
  DStream* s = static_cast<DStream*>(stream);
  s->wait_idle();
  {
    std::lock_guard<std::mutex> lock(s->mu);
    s->stop = true;
    s->cv.notify_all();
  }
  s->worker.join();
  {
    std::lock_guard<std::mutex> lock(st().mu);
    st().streams.erase(stream);
    // A subscription dies with its stream (the log says so: aclrtUnSubscribeReport was missing).
    auto sub = st().subscriber.find(stream);
    if (sub != st().subscriber.end()) {
      log_call("aclrtDestroyStream.subscribed", fmt("stream=%p thread=0x%llx", stream, (unsigned long long)sub->second));
      st().reporters[sub->second].streams.erase(stream);
      st().subscriber.erase(sub);
    }
  }
  dsdouble_rt_forget_stream(s);
  delete s;
  return dsdouble::kSuccess;
}

// The flags the runtime takes (hicann/runtime api_c_event.cc, api_error.cc): for
// aclrtCreateEventWithFlag some of 0x1|0x2|0x4|0x8 or 0x10/0x20 alone; for the Ex call
// also 0x40 (IPC, alone); never 0 (the Ex call: "cannot be 0").
bool event_flag_valid(const char* call, uint32_t flag) {
  if (std::strcmp(call, "aclrtCreateEvent") == 0) return true;
  const bool ex = std::strcmp(call, "aclrtCreateEventExWithFlag") == 0;
  for (uint32_t alone : {0x10u, 0x20u, 0x40u})
    if (flag & alone) return flag == alone && (ex || alone != 0x40u);
  return (flag & 0xFu) != 0 && (flag & ~0xFu) == 0;
}

aclError create_event(const char* call, void** event, uint32_t flag) {
  if (aclError rc = enter(call, true)) return rc;
  if (!event_flag_valid(call, flag)) {
    log_call(call, fmt("flag=0x%x error=invalid", flag));
    return fail(dsdouble::kInvalidParam, fmt("%s: flag 0x%x is not a valid event flag", call, flag));
  }
  DEvent* e = new DEvent();
  e->flags = flag;
  e->ex = std::strcmp(call, "aclrtCreateEventExWithFlag") == 0;
  e->with_flag = e->ex || std::strcmp(call, "aclrtCreateEventWithFlag") == 0;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    st().events.insert(e);
  }
  *event = e;
  log_call(call, fmt("flag=0x%x event=%p", flag, static_cast<void*>(e)));
  return dsdouble::kSuccess;
}

aclError aclrtCreateEvent(void** event) { return create_event("aclrtCreateEvent", event, 0); }

aclError aclrtCreateEventWithFlag(void** event, uint32_t flag) {
  return create_event("aclrtCreateEventWithFlag", event, flag);
}

#ifndef DS_DOUBLE_OLD_CANN
aclError aclrtCreateEventExWithFlag(void** event, uint32_t flag) {
  return create_event("aclrtCreateEventExWithFlag", event, flag);
}
#endif

// Resets the event after the work queued on `stream` so far (a wait on it, typically).
aclError aclrtResetEvent(void* event, void* stream) {
  log_call("aclrtResetEvent", fmt("event=%p stream=%p", event, stream));
  if (aclError rc = enter("aclrtResetEvent", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtResetEvent: unknown stream");
  {
    std::lock_guard<std::mutex> lock(st().mu);
    if (!st().events.count(event)) {
      st().recent_error = "aclrtResetEvent: unknown event";
      return dsdouble::kInvalidParam;
    }
  }
  DEvent* e = static_cast<DEvent*>(event);
  std::lock_guard<std::mutex> lock(e->mu);
  // The CANN docs: events of aclrtCreateEventExWithFlag cannot be used with aclrtResetEvent.
  if (e->ex) return fail(dsdouble::kInvalidParam, "aclrtResetEvent: the event was made by aclrtCreateEventExWithFlag");
  e->needs_reset = false;
  return dsdouble::kSuccess;
}

aclError aclrtDestroyEvent(void* event) {
  log_call("aclrtDestroyEvent", fmt("event=%p", event));
  if (aclError rc = enter("aclrtDestroyEvent", false)) return rc;
  DEvent* e = static_cast<DEvent*>(event);
  std::lock_guard<std::mutex> lock(st().mu);
  if (!st().events.count(event)) {
    st().recent_error = "aclrtDestroyEvent: unknown event";
    return dsdouble::kInvalidParam;
  }
  {
    // The CANN docs: tasks that use the event must be complete before it is destroyed.
    std::lock_guard<std::mutex> le(e->mu);
    if (e->pending > 0) {
      st().recent_error = "aclrtDestroyEvent: the event is still recorded on a stream that has not reached it";
      return dsdouble::kInvalidParam;
    }
  }
  st().events.erase(event);
  delete e;
  return dsdouble::kSuccess;
}

aclError aclrtRecordEvent(void* event, void* stream) {
  log_call("aclrtRecordEvent", fmt("event=%p stream=%p", event, stream));
  if (aclError rc = enter("aclrtRecordEvent", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtRecordEvent: unknown stream");
  DEvent* e = static_cast<DEvent*>(event);
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->needs_reset)
      return fail(dsdouble::kInvalidParam,
                  "aclrtRecordEvent: a stream waited on this event and it was not reset (aclrtResetEvent) before "
                  "this record");
    e->stamp = -1;
    ++e->pending;
    e->stream = stream;
    gen = ++e->recorded;
  }
  api_enqueue(stream, run_stamp, new StampOp{e, gen});
  return dsdouble::kSuccess;
}

aclError aclrtStreamWaitEvent(void* stream, void* event) {
  log_call("aclrtStreamWaitEvent", fmt("stream=%p event=%p", stream, event));
  if (aclError rc = enter("aclrtStreamWaitEvent", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtStreamWaitEvent: unknown stream");
  DEvent* e = static_cast<DEvent*>(event);
  uint64_t gen;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    if (!st().events.count(event)) {
      st().recent_error = "aclrtStreamWaitEvent: unknown event";
      return dsdouble::kInvalidParam;
    }
  }
  {
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->with_flag && !(e->flags & 0x1u))
      return fail(dsdouble::kInvalidParam, "aclrtStreamWaitEvent: the event was created without ACL_EVENT_SYNC");
    gen = e->recorded;
    if (!e->ex) e->needs_reset = true;
  }
  if (gen > 0) api_enqueue(stream, run_wait, new WaitOp{e, gen});
  return dsdouble::kSuccess;
}

// Complete when the stream has reached the event's latest record (never recorded:
// not ready, as the CANN docs say).
aclError aclrtQueryEventStatus(void* event, int* status) {
  log_call("aclrtQueryEventStatus", fmt("event=%p", event));
  if (aclError rc = enter("aclrtQueryEventStatus", false)) return rc;
  if (!status) return fail(dsdouble::kInvalidParam, "aclrtQueryEventStatus: status is null");
  DEvent* e = static_cast<DEvent*>(event);
  std::lock_guard<std::mutex> lock(e->mu);
  *status = e->recorded > 0 && e->reached >= e->recorded ? 1 : 0;
  return dsdouble::kSuccess;
}

aclError aclrtEventElapsedTime(float* ms, void* start, void* end) {
  log_call("aclrtEventElapsedTime", fmt("start=%p end=%p", start, end));
  if (aclError rc = enter("aclrtEventElapsedTime", false)) return rc;
  DEvent* a = static_cast<DEvent*>(start);
  DEvent* b = static_cast<DEvent*>(end);
  int64_t ta, tb;
  void *sa, *sb;
  {
    std::lock_guard<std::mutex> la(a->mu);
    ta = a->stamp;
    sa = a->stream;
  }
  {
    std::lock_guard<std::mutex> lb(b->mu);
    tb = b->stamp;
    sb = b->stream;
  }
  // The CANN docs describe start and end events recorded on one stream only.
  if (sa != sb)
    return fail(dsdouble::kInvalidParam, "aclrtEventElapsedTime: the events were recorded on different streams");
  if (ta < 0 || tb < 0)
    return fail(dsdouble::kInvalidParam, "aclrtEventElapsedTime: an event has not completed (synchronize first)");
  *ms = static_cast<float>(static_cast<double>(tb - ta) / 1e6);
  return dsdouble::kSuccess;
}

}  // extern "C"

namespace {

constexpr int kStreamSubscribe = 107011;  // ACL_ERROR_RT_STREAM_SUBSCRIBE: stream not subscribed, or twice
constexpr int kThreadSubscribe = 107012;  // ACL_ERROR_RT_THREAD_SUBSCRIBE: thread not subscribed, or on two devices
constexpr int kStreamNoCbReg = 107015;    // ACL_ERROR_RT_STREAM_NO_CB_REG: no thread registered for the stream
constexpr int kReportTimeout = 507012;    // ACL_ERROR_RT_REPORT_TIMEOUT: aclrtProcessReport ran out of time

struct CallbackTask {
  void (*fn)(void*);
  void* data;
  bool block;
  DStream* stream;
  uint64_t thread;  // the thread subscribed to the stream when it was launched
  bool done = false;
};

// The callback task, when its stream reaches it: handed to the subscribed thread's
// aclrtProcessReport; with ACL_CALLBACK_BLOCK the stream waits until it returned.
std::string run_callback(void* arg) {
  CallbackTask* t = static_cast<CallbackTask*>(arg);
  std::unique_lock<std::mutex> lock(st().mu);
  st().reporters[t->thread].pending.push_back(t);
  st().callbacks.notify_all();
  if (!t->block) return "";  // the reporter deletes it
  st().callbacks.wait(lock, [&] { return t->done; });
  lock.unlock();
  delete t;
  return "";
}

uint64_t this_thread_id() { return static_cast<uint64_t>(pthread_self()); }

}  // namespace

extern "C" {

// ---- callbacks (aclrtSubscribeReport, aclrtLaunchCallback, aclrtProcessReport) ----
// As the CANN docs describe them: a thread (its pthread_t as uint64_t) is subscribed
// to streams of one device; a stream reports to one thread; aclrtLaunchCallback puts a
// callback task on a subscribed stream (107015 ACL_ERROR_RT_STREAM_NO_CB_REG otherwise);
// when the stream reaches it, the subscribed thread runs it inside its next
// aclrtProcessReport (one callback per call; 507012 ACL_ERROR_RT_REPORT_TIMEOUT when
// the timeout passes with none; 107012 on a thread that is not subscribed; timeout -1
// waits for ever, 0 and below -1 are 100000); ACL_CALLBACK_BLOCK (1) holds the stream
// until the callback returned, ACL_CALLBACK_NO_BLOCK (0) does not. In every variant.

aclError aclrtSubscribeReport(uint64_t thread, void* stream) {
  log_call("aclrtSubscribeReport", fmt("thread=0x%llx stream=%p", (unsigned long long)thread, stream));
  if (aclError rc = enter("aclrtSubscribeReport", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtSubscribeReport: unknown stream");
  const int device = static_cast<DStream*>(stream)->device;
  std::lock_guard<std::mutex> lock(st().mu);
  if (st().subscriber.count(stream)) {
    st().recent_error = "aclrtSubscribeReport: the stream already has a subscribed thread (one thread per stream)";
    return kStreamSubscribe;
  }
  Reporter& r = st().reporters[thread];
  if (!r.streams.empty() && r.device != device) {
    st().recent_error = fmt("aclrtSubscribeReport: the thread already handles streams of device %d, not %d",
                            r.device, device);
    return kThreadSubscribe;
  }
  r.device = device;
  r.streams.insert(stream);
  st().subscriber[stream] = thread;
  return dsdouble::kSuccess;
}

aclError aclrtUnSubscribeReport(uint64_t thread, void* stream) {
  log_call("aclrtUnSubscribeReport", fmt("thread=0x%llx stream=%p", (unsigned long long)thread, stream));
  if (aclError rc = enter("aclrtUnSubscribeReport", false)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtUnSubscribeReport: unknown stream");
  std::lock_guard<std::mutex> lock(st().mu);
  auto it = st().subscriber.find(stream);
  if (it == st().subscriber.end() || it->second != thread) {
    st().recent_error = "aclrtUnSubscribeReport: the thread is not subscribed to this stream";
    return kStreamSubscribe;
  }
  st().subscriber.erase(it);
  st().reporters[thread].streams.erase(stream);
  return dsdouble::kSuccess;
}

aclError aclrtLaunchCallback(void (*fn)(void*), void* data, int block_type, void* stream) {
  log_call("aclrtLaunchCallback", fmt("fn=%p data=%p block=%d stream=%p", reinterpret_cast<void*>(fn), data,
                                      block_type, stream));
  if (aclError rc = enter("aclrtLaunchCallback", true)) return rc;
  if (block_type != 0 && block_type != 1)
    return fail(dsdouble::kInvalidParam, fmt("aclrtLaunchCallback: blockType %d", block_type));
  if (!fn) return fail(dsdouble::kInvalidParam, "aclrtLaunchCallback: null callback");
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtLaunchCallback: unknown stream");
  DStream* s = static_cast<DStream*>(stream);
  uint64_t thread;
  {
    std::lock_guard<std::mutex> lock(st().mu);
    auto it = st().subscriber.find(stream);
    if (it == st().subscriber.end()) {
      st().recent_error = "aclrtLaunchCallback: no thread is subscribed to the stream (aclrtSubscribeReport)";
      return kStreamNoCbReg;
    }
    thread = it->second;
  }
  const int64_t enqueued = dsdouble_timing::mono_ns();
  api_enqueue(stream, run_callback, new CallbackTask{fn, data, block_type == 1, s, thread});
  dsdouble_timing::trace(dsdouble::kKnobs, s->device, s, "callback-enqueued", enqueued);
  return dsdouble::kSuccess;
}

aclError aclrtProcessReport(int32_t timeout) {
  log_call("aclrtProcessReport", fmt("timeout=%d", timeout));
  if (aclError rc = enter("aclrtProcessReport", false)) return rc;
  if (timeout == 0 || timeout < -1)
    return fail(dsdouble::kInvalidParam, fmt("aclrtProcessReport: timeout %d (-1, or more than 0 ms)", timeout));
  const uint64_t me = this_thread_id();
  CallbackTask* t = nullptr;
  {
    std::unique_lock<std::mutex> lock(st().mu);
    auto r = st().reporters.find(me);
    if (r == st().reporters.end() || (r->second.streams.empty() && r->second.pending.empty())) {
      st().recent_error = "aclrtProcessReport: this thread is not subscribed to any stream";
      return kThreadSubscribe;
    }
    auto ready = [&] { return !st().reporters[me].pending.empty(); };
    if (timeout == -1) {
      st().callbacks.wait(lock, ready);
    } else if (!st().callbacks.wait_for(lock, std::chrono::milliseconds(timeout), ready)) {
      st().recent_error = fmt("aclrtProcessReport: no callback within %d ms", timeout);
      return kReportTimeout;
    }
    t = st().reporters[me].pending.front();
    st().reporters[me].pending.pop_front();
  }
  dsdouble_timing::trace_now(dsdouble::kKnobs, t->stream->device, t->stream, "callback-start");
  t->fn(t->data);
  dsdouble_timing::trace_now(dsdouble::kKnobs, t->stream->device, t->stream, "callback-end");
  {
    std::lock_guard<std::mutex> lock(st().mu);
    t->done = true;
    st().callbacks.notify_all();
    if (!t->block) delete t;
  }
  return dsdouble::kSuccess;
}

// ---- copies ----

aclError aclrtMemcpy(void* dst, size_t dest_max, const void* src, size_t count, int kind) {
  log_call("aclrtMemcpy", fmt("dst=%p src=%p count=%zu kind=%d", dst, src, count, kind));
  if (aclError rc = enter("aclrtMemcpy", true)) return rc;
  CopyOp c;
  if (aclError rc = copy_checked("aclrtMemcpy", dst, dest_max, src, count, kind, &c)) return rc;
  std::memcpy(c.dst, c.src, c.n);
  return dsdouble::kSuccess;
}

aclError aclrtMemcpyAsync(void* dst, size_t dest_max, const void* src, size_t count, int kind, void* stream) {
  dsdouble_timing::submit_stall(dsdouble::kKnobs);  // DS_ACL_DOUBLE_SUBMIT_NS
  log_call("aclrtMemcpyAsync", fmt("dst=%p src=%p count=%zu kind=%d stream=%p", dst, src, count, kind, stream));
  if (aclError rc = enter("aclrtMemcpyAsync", true)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtMemcpyAsync: unknown stream");
  CopyOp c;
  if (aclError rc = copy_checked("aclrtMemcpyAsync", dst, dest_max, src, count, kind, &c)) return rc;
  const bool pageable = pageable_host_side(dst, src, count, kind);
  log_call("aclrtMemcpyAsync.mode", fmt("pageable=%d", pageable ? 1 : 0));
  // DS_ACL_DOUBLE_SUBMIT_COUNTED: the copy starts no earlier than this call's slot.
  api_enqueue_copy(stream, run_copy, new CopyOp(c), c.n, dsdouble_timing::take_submit_slot());
  // From memory that is not page-locked the call returns after the copy (CANN docs).
  if (pageable) static_cast<DStream*>(stream)->wait_idle();
  return dsdouble::kSuccess;
}

#if !defined(DS_DOUBLE_NO_BATCH) && !defined(DS_DOUBLE_OLD_CANN)
struct MemLocation {
  uint32_t id;
  int type;  // 0 host, 1 device
};
struct MemcpyBatchAttr {
  MemLocation dstLoc;
  MemLocation srcLoc;
  uint8_t rsv[16];
};

aclError aclrtMemcpyBatchAsync(void** dsts, size_t* dest_maxs, void** srcs, size_t* sizes, size_t n,
                               MemcpyBatchAttr* attrs, size_t* attr_indexes, size_t num_attrs, size_t* fail_index,
                               void* stream) {
  dsdouble_timing::submit_stall(dsdouble::kKnobs);  // DS_ACL_DOUBLE_SUBMIT_NS, once for the batch
  log_call("aclrtMemcpyBatchAsync", fmt("count=%zu num_attrs=%zu stream=%p", n, num_attrs, stream));
  if (aclError rc = enter("aclrtMemcpyBatchAsync", true)) return rc;
  if (!known_stream(stream)) return fail(dsdouble::kInvalidParam, "aclrtMemcpyBatchAsync: unknown stream");
  // As the CANN runtime decides (api_c_memory.cc rtsMemcpyBatchAsync, api_impl.cc
  // MemcpyBatchAsync): a SoC without batch copies, and a driver that has its own
  // (FEATURE_MEMCPY_BATCH_ASYNC, DS_ACL_DOUBLE_BATCH_FEATURE=1), both get 207000 and
  // nothing is copied; otherwise the runtime loops single copies (below).
  const char* soc = std::getenv("DS_ACL_DOUBLE_SOC");
  // CHIP_910_B_93 (Atlas A2: Ascend910B1..B4, A3: Ascend910_93xx; config/910_B_93/dev_info_reg.cc).
  const bool batch_soc =
      !soc || (std::strncmp(soc, "Ascend910B", 10) == 0 && std::isdigit(static_cast<unsigned char>(soc[10]))) ||
      std::strncmp(soc, "Ascend910_93", 12) == 0;
  const bool driver_batch = dsdouble::env_long("DS_ACL_DOUBLE_BATCH_FEATURE", 0) != 0;
  if (!batch_soc || driver_batch) {
    log_call("aclrtMemcpyBatchAsync", !batch_soc ? "-> 207000 chip type does not support MemcpyBatchAsync"
                                                 : "-> 207000 driver has FEATURE_MEMCPY_BATCH_ASYNC");
    return fail(kFeatureNotSupport, "aclrtMemcpyBatchAsync: feature not support (test double)");
  }
  if (n == 0 || num_attrs == 0 || !attrs || !attr_indexes || attr_indexes[0] != 0)
    return fail(dsdouble::kInvalidParam, "aclrtMemcpyBatchAsync: attrs must cover the copies from index 0");
  std::vector<CopyOp> ops(n);
  size_t a = 0;
  for (size_t i = 0; i < n; ++i) {
    while (a + 1 < num_attrs && attr_indexes[a + 1] <= i) ++a;
    const MemcpyBatchAttr& at = attrs[a];
    const int kind = (at.srcLoc.type == 1 ? 2 : 0) + (at.dstLoc.type == 1 ? 1 : 0);
    // kind: 0 H2H, 1 H2D, 2 D2H, 3 D2D
    const int acl_kind = kind == 0 ? 0 : kind == 1 ? 1 : kind == 2 ? 2 : 3;
    // The CANN docs: one direction per batch, host to device or device to host.
    if (acl_kind != 1 && acl_kind != 2) {
      if (fail_index) *fail_index = i;
      return fail(dsdouble::kInvalidParam,
                  fmt("aclrtMemcpyBatchAsync: copy %zu is neither host to device nor device to host", i));
    }
    if (i > 0 && (at.dstLoc.type != attrs[0].dstLoc.type || at.srcLoc.type != attrs[0].srcLoc.type)) {
      if (fail_index) *fail_index = i;
      return fail(dsdouble::kInvalidParam, "aclrtMemcpyBatchAsync: a batch mixes directions");
    }
    if ((at.dstLoc.type == 1 && static_cast<int>(at.dstLoc.id) != t_device) ||
        (at.srcLoc.type == 1 && static_cast<int>(at.srcLoc.id) != t_device)) {
      if (fail_index) *fail_index = i;
      return fail(dsdouble::kInvalidParam, "aclrtMemcpyBatchAsync: location id is not the current device");
    }
    if (aclError rc = copy_checked("aclrtMemcpyBatchAsync", dsts[i], dest_maxs[i], srcs[i], sizes[i], acl_kind, &ops[i])) {
      if (fail_index) *fail_index = i;
      return rc;
    }
  }
  // LoopMemcpyAsync: per copy, the attributes of both pointers (already checked above),
  // then one async copy; an unregistered host side waits for the stream and copies
  // synchronously.
  size_t synchronous = 0;
  // DS_ACL_DOUBLE_SUBMIT_COUNTED: the one stall of the batch holds its first copy; the
  // others follow it on the stream.
  int64_t slot = dsdouble_timing::take_submit_slot();
  for (size_t i = 0; i < n; ++i) {
    const int kind = attrs[0].dstLoc.type == 1 ? 1 : 2;
    const void* host = kind == 1 ? srcs[i] : dsts[i];
    bool known;
    {
      std::lock_guard<std::mutex> lock(st().mu);
      known = in_malloc_host(reinterpret_cast<uint64_t>(host), sizes[i]) ||
              in_registration(reinterpret_cast<uint64_t>(host), sizes[i]);
    }
    if (known) {
      api_enqueue_copy(stream, run_copy, new CopyOp(ops[i]), ops[i].n, slot);
    } else {
      static_cast<DStream*>(stream)->wait_idle();
      dsdouble_timing::wait_for_slot(slot);
      std::memcpy(ops[i].dst, ops[i].src, ops[i].n);
      ++synchronous;
    }
    slot = 0;
  }
  log_call("aclrtMemcpyBatchAsync.loop",
           fmt("copies=%zu attribute_lookups=%zu synchronous=%zu", n, 2 * n, synchronous));
  return dsdouble::kSuccess;
}
#endif

}  // extern "C"
