// A CPU stand-in for libcuda.so.1, loaded by the cuda backend through
// DEV_SANDBOX_CUDA_LIB in the tests. It exports the driver entry points the
// backend binds (also through cuGetProcAddress/_v2), checks how they are
// called the way the driver would (initialised in this process, a current
// context, pointers of the right kind, handles alive, ABI versions asked for),
// and really moves the bytes: device memory is host memory, every stream is a
// worker thread running its work in order, events are stamped with the
// monotonic clock when the stream reaches them. cuModuleLoadData reads each
// .entry's parameter list from the PTX, and cuLaunchKernel reads exactly those
// parameters: for our copy kernel ds_copy_kernel(dst, src, bytes, head, width)
// it checks that dst + head and src + head are width-aligned with head < width
// (CUDA_ERROR_MISALIGNED_ADDRESS otherwise), logs head and width, and copies in
// the kernel's three parts: the head bytewise, whole units, the tail. The
// gather kernel ds_gather_kernel(table, count) reads its descriptors (five
// 64-bit words each, planned the same way) from device memory: the launch
// checks and logs each ("gather[i] ..."), and the stream copies what the table
// holds when it reaches the launch (launch_gather).
// Streams and events belong to the context current when they were made: a
// copy, batch, graph launch, kernel launch or event record on a stream of
// another context than the calling thread's current one is
// CUDA_ERROR_INVALID_HANDLE, as is recording an event on a stream of another
// context or timing two events of different contexts. cuStreamCreate accepts
// only CU_STREAM_NON_BLOCKING (a driver takes both; we promise non-blocking
// streams, and the double holds us to it).
//
// Environment:
//   DS_CUDA_DOUBLE_DEVICES=N          devices (default 4)
//   DS_CUDA_DOUBLE_LOG=path           append "pid call args" per call
//   DS_CUDA_DOUBLE_FAIL=call:N        the Nth call of `call` (per process) fails
//   DS_CUDA_DOUBLE_NO_PROC_ADDRESS=1  cuGetProcAddress* say CUDA_ERROR_NOT_SUPPORTED
//   DS_CUDA_DOUBLE_LACK=name[,name]   cuGetProcAddress* do not offer these base names
//                                     (CUDA_SUCCESS, *pfn = NULL, SYMBOL_NOT_FOUND)
//                                     although the symbols stay exported
//   DS_CUDA_DOUBLE_NO_PEER=1          cuDeviceCanAccessPeer says no for every pair
//   DS_CUDA_DOUBLE_BUILD_LOG=path     "pid ns call" per call that makes, allocates,
//                                     frees or instantiates something (memory,
//                                     streams, events, graphs and their nodes,
//                                     modules, contexts, peer access) or copies
//                                     blocking, and "batch-arrays-rewritten" for a
//                                     cuMemcpyBatchAsync whose arrays changed at an
//                                     address it was given before (double_timing.h)
// Time (tests/doubles/double_timing.h; unset: copies take what memcpy takes):
//   DS_CUDA_DOUBLE_COPY_NS_PER_KIB=n  every copy task takes at least n ns per KiB it
//                                     moves; a task is one async copy, one
//                                     cuMemcpyBatchAsync, one graph launch or one
//                                     copy-kernel launch
//   DS_CUDA_DOUBLE_DEVICE_FACTOR=d:f[,d:f]  device d's tasks take f times as long
//   DS_CUDA_DOUBLE_COLD=N:ns          the first N copy tasks of every stream take ns more
//   DS_CUDA_DOUBLE_JUMP_NS=ns         a copy (of an async copy, batch or graph) whose source
//                                     or destination does not begin where its stream's
//                                     previous copy ended takes ns more
//   DS_CUDA_DOUBLE_SUBMIT_NS=n        every copy submission (the calls above) stalls
//                                     its calling thread n ns before it enqueues
//   DS_CUDA_DOUBLE_SUBMIT_COLD=N:ns   the first N copy submissions of the process
//                                     stall ns more (a one-off host-side stall)
//   DS_CUDA_DOUBLE_SUBMIT_COUNTED=1   the submission stall is counted on the calling
//                                     thread's timeline instead of slept: the task
//                                     starts no earlier than its slot's end
//   DS_CUDA_DOUBLE_TRACE=path         one line per stream event: "<pid> <device>
//                                     <stream> <what> <ns>", what = copy-enqueued,
//                                     copy-start, copy-end, wait-enqueued,
//                                     wait-passed, wait-timeout (see double_timing.h)
// Stream gates: cuStreamWaitValue32_v2 (12.8 and 12.4 builds; offered by
// cuGetProcAddress as "cuStreamWaitValue32" from 11070) holds the stream until the
// 32-bit word at a device address (device memory, or mapped host memory at the
// address cuMemHostGetDevicePointer_v2 gives) satisfies GEQ/EQ/AND/NOR, polling it
// with short sleeps; the gate kernel ds_gate_kernel(.u64 flag, .u32 value), on a
// 1x1x1 grid of 1x1x1 blocks, does the same with GEQ: (int32_t)(*flag - value) >= 0.
// Hardware queues: each context has CUDA_DEVICE_MAX_CONNECTIONS connections (8
// unset, 1 to 32), its streams mapped onto them round-robin in creation order
// (logged: "cuStreamCreate -> stream=S connection=N"). A connection holds
// DS_CUDA_DOUBLE_QUEUE_DEPTH operations not yet done (default 1024; 0: no limit),
// counting every copy, batch, graph launch, kernel launch, event record and
// stream wait of its streams; a submission that finds it full blocks its calling
// thread (outside the double's lock, logged "queue-full") until one is done, as a
// driver's does: behind a stream wait that only the caller would release, for
// ever.
// Staged async copies: an async copy from or to pageable memory, or between
// devices whose contexts have no peer access, is staged through the host the way
// the driver may do it: the call first waits for everything queued on its stream
// (from pageable memory it then copies the source into a staging buffer at once
// and queues the copy from there; the others then wait for their own copy too).
// Such a call on a stream held by a stream wait is the hang a driver may show:
// logged "-> HANG: ..." with "held stream", said on stderr, and then waited out.
// Events: cuEventCreate takes CU_EVENT_DEFAULT, BLOCKING_SYNC, DISABLE_TIMING and
// INTERPROCESS (with DISABLE_TIMING); an event made with DISABLE_TIMING cannot be
// timed (cuEventElapsedTime*: CUDA_ERROR_INVALID_HANDLE); cuEventQuery logs the
// event's flags ("-> event=E flags=F").
// Built with DS_DOUBLE_NO_BATCH: a CUDA 12.4 driver (no cuMemcpyBatchAsync, no
// cuEventElapsedTime_v2); with DS_DOUBLE_NO_GRAPH as well: CUDA 11.3 (no
// cuGraphInstantiateWithFlags, and cuGetProcAddress only, answering as CUDA 11
// did). cuGetProcAddress answers as the driver documents it (see proc_lookup).
//
// The synchronous copies keep the driver's asynchrony: cuMemcpyHtoD from pageable
// memory stages the source and returns, and device-to-device cuMemcpy returns at
// once; that work waits on the context's legacy stream, which our non-blocking
// streams never wait for. It lands only when something orders after it
// (cuCtxSynchronize, a copy to host memory, cuMemFree, releasing the context), so
// a caller that skips the synchronisation reads stale device memory every time.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "../double_timing.h"
#include "backends/cuda/cuda_api.h"
#include "core/clock.h"

using namespace ds::cu;

namespace {

constexpr size_t kTotalMem = 16ULL << 30;
constexpr unsigned kEventDisableTiming = 0x2;  // CU_EVENT_DISABLE_TIMING

// The CUDA version this build of the double is a driver for.
#if defined(DS_DOUBLE_NO_GRAPH)
constexpr int kDriverVersion = 11030;
#elif defined(DS_DOUBLE_NO_BATCH)
constexpr int kDriverVersion = 12040;
#else
constexpr int kDriverVersion = 12080;
#endif

enum class Kind { kDevice, kPinned, kRegistered };

struct Region {
  size_t bytes;
  Kind kind;
  bool mapped;
  int device;  // kDevice: owning device
};

// One of a context's hardware work queues ("connections"): the operations not
// yet done on every stream mapped onto it. A submission that finds it full waits
// for one to finish, as a driver's does when a queue has no room.
struct Connection {
  std::mutex m;
  std::condition_variable room;
  size_t pending = 0;
};

struct Ctx {
  int device;
  int refs = 0;
  std::vector<std::function<void()>> legacy;  // pending legacy-stream work
  std::set<int> peers;                        // devices whose memory it may reach
  std::vector<std::unique_ptr<Connection>> connections;  // made with the context's first stream
  size_t streams_made = 0;                               // streams go onto connections round-robin
};

// Runs the context's pending legacy-stream work, in order.
void flush_legacy(Ctx* c) {
  if (!c) return;
  auto work = std::move(c->legacy);
  c->legacy.clear();
  for (auto& w : work) w();
}

struct Op {
  std::function<void()> run;
};

struct StreamImpl;

// A submission's room on its stream's connection, taken before the call enters
// the double's lock (the wait for room must not stop other threads' calls) and
// given to the operation the call pushes, which frees it when it is done; a call
// that pushes nothing gives it back.
class QueueSlot {
 public:
  explicit QueueSlot(CUstream s);
  ~QueueSlot();
  QueueSlot(const QueueSlot&) = delete;
  QueueSlot& operator=(const QueueSlot&) = delete;
  // The connection whose room the next push on this thread takes (null: none).
  static Connection* take();

 private:
  Connection* conn_ = nullptr;
  QueueSlot* outer_ = nullptr;
};
thread_local QueueSlot* t_slot = nullptr;

void free_slot(Connection* c) {
  if (!c) return;
  std::lock_guard<std::mutex> lock(c->m);
  --c->pending;
  c->room.notify_all();
}

struct StreamImpl {
  std::mutex m;
  std::condition_variable cv, idle;
  std::deque<std::function<void()>> ops;
  bool busy = false;
  bool stop = false;
  std::thread worker;
  Ctx* ctx = nullptr;        // the context it was created in
  Connection* conn = nullptr;  // the hardware queue it was mapped onto
  uint64_t copy_tasks = 0;  // copy tasks run so far (the worker's own count)
  dsdouble_timing::CopyEnds ends;  // where its last enqueued copy ended (JUMP_NS; under m)
  std::atomic<int> holds{0};  // stream waits queued and not yet passed

  StreamImpl() {
    worker = std::thread([this] {
      std::unique_lock<std::mutex> lock(m);
      for (;;) {
        cv.wait(lock, [&] { return stop || !ops.empty(); });
        if (ops.empty()) return;
        auto op = std::move(ops.front());
        ops.pop_front();
        busy = true;
        lock.unlock();
        op();
        lock.lock();
        busy = false;
        if (ops.empty()) idle.notify_all();
      }
    });
  }
  // Takes the room the calling submission reserved on the connection (QueueSlot).
  void push(std::function<void()> op) {
    Connection* c = QueueSlot::take();
    std::lock_guard<std::mutex> lock(m);
    ops.push_back([op = std::move(op), c] {
      op();
      free_slot(c);
    });
    cv.notify_one();
  }
  void drain() {
    std::unique_lock<std::mutex> lock(m);
    idle.wait(lock, [&] { return ops.empty() && !busy; });
  }
  ~StreamImpl() {
    {
      std::lock_guard<std::mutex> lock(m);
      stop = true;
    }
    cv.notify_one();
    worker.join();
  }
};

struct EventImpl {
  std::atomic<int64_t> ns{-1};
  bool recorded = false;
  Ctx* ctx = nullptr;  // the context it was created in
  unsigned flags = 0;  // as created: CU_EVENT_DISABLE_TIMING (0x2) events cannot be timed
};

struct Copy {
  void* dst;
  const void* src;
  size_t bytes;
};

struct GraphImpl {
  std::vector<Copy> nodes;
  int device;
};
struct ExecImpl {
  std::vector<Copy> nodes;
};

struct FuncImpl {
  std::string name;
  std::vector<size_t> params;  // bytes of each .param, as the PTX declares them
};
struct ModuleImpl {
  std::map<std::string, FuncImpl> entries;  // .entry name -> its function handle
};

std::recursive_mutex g_mutex;
pid_t g_init_pid = 0;
std::map<uintptr_t, Region> g_regions;  // base -> region
std::map<int, Ctx> g_ctx;               // device -> primary context
std::set<StreamImpl*> g_streams;
std::set<EventImpl*> g_events;
std::set<GraphImpl*> g_graphs;
std::set<ExecImpl*> g_execs;
std::set<ModuleImpl*> g_modules;
std::map<std::string, int> g_calls;
thread_local Ctx* t_current = nullptr;

int device_count() {
  const char* e = std::getenv("DS_CUDA_DOUBLE_DEVICES");
  if (e && *e) return std::max(0, std::atoi(e));
  return 4;
}

void log_line(const char* call, const char* fmt, ...) {
  const char* path = std::getenv("DS_CUDA_DOUBLE_LOG");
  if (!path || !*path) return;
  char args[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  char line[640];
  const int n = std::snprintf(line, sizeof line, "%d %s %s\n", static_cast<int>(getpid()), call, args);
  const int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (write(fd, line, static_cast<size_t>(std::min<int>(n, sizeof line - 1))) < 0) {
  }
  close(fd);
}

// The Nth call of the entry point named in DS_CUDA_DOUBLE_FAIL fails.
bool injected(const char* call) {
  const char* e = std::getenv("DS_CUDA_DOUBLE_FAIL");
  if (!e || !*e) return false;
  const std::string spec = e;
  const size_t colon = spec.rfind(':');
  const std::string name = spec.substr(0, colon);
  const int nth = colon == std::string::npos ? 1 : std::atoi(spec.c_str() + colon + 1);
  if (name != call) return false;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return ++g_calls[name] == nth;
}

void mark_build(const char* call);

#define ENTER(call, ...)                                 \
  std::lock_guard<std::recursive_mutex> guard_(g_mutex); \
  log_line(#call, __VA_ARGS__);                          \
  mark_build(#call);                                     \
  if (injected(#call)) {                                 \
    log_line(#call, "-> injected CUDA_ERROR_UNKNOWN");   \
    return CUDA_ERROR_UNKNOWN;                           \
  }

#define NEED_INIT \
  if (g_init_pid != getpid()) return CUDA_ERROR_NOT_INITIALIZED;
#define NEED_CTX \
  NEED_INIT      \
  if (!t_current || t_current->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;

const Region* find_region(const void* p, size_t bytes, uintptr_t* base_out = nullptr) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  auto it = g_regions.upper_bound(a);
  if (it == g_regions.begin()) return nullptr;
  --it;
  if (a < it->first || a + bytes > it->first + it->second.bytes) return nullptr;
  if (base_out) *base_out = it->first;
  return &it->second;
}

bool is_device(CUdeviceptr p, size_t bytes) {
  const Region* r = find_region(reinterpret_cast<void*>(p), bytes);
  return r && r->kind == Kind::kDevice;
}
bool is_host(const void* p, size_t bytes) {
  const Region* r = find_region(p, bytes);
  return p && (!r || r->kind != Kind::kDevice);
}
// Reachable by the GPU: device memory, pinned (unified addressing) or registered memory.
bool gpu_reachable(const void* p, size_t bytes) { return find_region(p, bytes) != nullptr; }

StreamImpl* stream_of(CUstream s) {
  auto* impl = reinterpret_cast<StreamImpl*>(s);
  return g_streams.count(impl) ? impl : nullptr;
}

void* vp(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

// CUDA_DEVICE_MAX_CONNECTIONS as a driver takes it: 8 unset, 1 to 32.
size_t connections_per_context() {
  const char* e = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!e || !*e) return 8;
  return static_cast<size_t>(std::min(32, std::max(1, std::atoi(e))));
}

// DS_CUDA_DOUBLE_QUEUE_DEPTH: operations one connection holds (default 1024; 0: no limit).
size_t queue_depth() {
  const char* e = std::getenv("DS_CUDA_DOUBLE_QUEUE_DEPTH");
  if (!e || !*e) return 1024;
  return static_cast<size_t>(std::max(0, std::atoi(e)));
}

QueueSlot::QueueSlot(CUstream s) : outer_(t_slot) {
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    StreamImpl* st = stream_of(s);
    conn_ = st ? st->conn : nullptr;
  }
  if (conn_) {
    const size_t depth = queue_depth();
    std::unique_lock<std::mutex> lock(conn_->m);
    if (depth > 0 && conn_->pending >= depth) {
      log_line("queue-full", "stream=%p waits for room: %zu operations pending on its connection",
               static_cast<void*>(s), conn_->pending);
      conn_->room.wait(lock, [&] { return conn_->pending < depth; });
    }
    ++conn_->pending;
  }
  t_slot = this;
}

QueueSlot::~QueueSlot() {
  t_slot = outer_;
  free_slot(conn_);  // the call pushed nothing
}

Connection* QueueSlot::take() {
  QueueSlot* slot = t_slot;
  if (!slot) return nullptr;
  Connection* c = slot->conn_;
  slot->conn_ = nullptr;
  return c;
}

int device_of(const Ctx* c) { return c ? c->device : -1; }

// A stream handed to a call must belong to the calling thread's current
// context, as the driver requires: one made in another context is an invalid
// handle there. Logged, so a test sees which call and which contexts.
StreamImpl* current_stream(const char* call, CUstream s, CUresult* r) {
  StreamImpl* st = stream_of(s);
  *r = CUDA_SUCCESS;
  if (!st) {
    *r = CUDA_ERROR_INVALID_HANDLE;
  } else if (st->ctx != t_current) {
    log_line(call, "-> CUDA_ERROR_INVALID_HANDLE: stream of device %d, device %d current", device_of(st->ctx),
             device_of(t_current));
    *r = CUDA_ERROR_INVALID_HANDLE;
    st = nullptr;
  }
  return st;
}

// The timing knobs and the trace (tests/doubles/double_timing.h) under this prefix.
constexpr const char* kKnobs = "DS_CUDA_DOUBLE_";

// The entry points that make, allocate, free or instantiate something, or copy
// blocking: each call is a line of DS_CUDA_DOUBLE_BUILD_LOG (double_timing.h).
void mark_build(const char* call) {
  static const char* const kBuilds[] = {
      "cuMemAlloc_v2",  "cuMemFree_v2",         "cuMemHostAlloc",        "cuMemFreeHost",
      "cuMemHostRegister_v2", "cuMemHostUnregister", "cuStreamCreate",  "cuStreamDestroy_v2",
      "cuEventCreate",  "cuEventDestroy_v2",    "cuGraphCreate",         "cuGraphAddMemcpyNode",
      "cuGraphInstantiateWithFlags", "cuGraphExecDestroy", "cuGraphDestroy", "cuModuleLoadData",
      "cuModuleUnload", "cuModuleGetFunction",  "cuMemcpyHtoD_v2",       "cuMemcpyDtoH_v2",
      "cuMemcpy",       "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease_v2", "cuCtxEnablePeerAccess"};
  if (!dsdouble_timing::knob(kKnobs, "BUILD_LOG")) return;
  for (const char* b : kBuilds)
    if (std::strcmp(b, call) == 0) return dsdouble_timing::build_mark(kKnobs, call);
}

// Batch submissions' arrays by address, as last submitted: arrays at a known address
// with a different content are a list rebuilt (where it should have been prepared).
[[maybe_unused]] void check_batch_arrays(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes, size_t count) {
  if (!dsdouble_timing::knob(kKnobs, "BUILD_LOG")) return;
  static std::map<const void*, std::vector<uint64_t>> seen;
  std::vector<uint64_t> now;
  now.reserve(3 * count + 2);
  now.push_back(reinterpret_cast<uintptr_t>(srcs));
  now.push_back(reinterpret_cast<uintptr_t>(sizes));
  for (size_t i = 0; i < count; ++i) {
    now.push_back(dsts[i]);
    now.push_back(srcs[i]);
    now.push_back(sizes[i]);
  }
  auto it = seen.find(dsts);
  if (it != seen.end() && it->second != now) dsdouble_timing::build_mark(kKnobs, "batch-arrays-rewritten");
  seen[dsts] = std::move(now);
}

// One copy task on the stream: `move` moves its `bytes` when the stream reaches
// it, then the task takes whatever is left of its cost
// (DS_CUDA_DOUBLE_COPY_NS_PER_KIB, _DEVICE_FACTOR, _COLD).
// `copies`: the task's copies in order, for DS_CUDA_DOUBLE_JUMP_NS (null: none counted).
CUresult enqueue_task(const char* call, CUstream s, uint64_t bytes, std::function<void()> move,
                      const std::vector<Copy>* copies = nullptr) {
  CUresult r;
  StreamImpl* st = current_stream(call, s, &r);
  if (!st) return r;
  const int device = device_of(st->ctx);
  const int64_t enqueued = dsdouble_timing::mono_ns();
  const int64_t slot = dsdouble_timing::take_submit_slot();  // DS_CUDA_DOUBLE_SUBMIT_COUNTED
  int64_t jumps = 0;  // in submission order, which is the stream's
  if (copies) {
    std::lock_guard<std::mutex> lock(st->m);
    for (const Copy& c : *copies) jumps += dsdouble_timing::jump_cost_ns(kKnobs, st->ends, c.dst, c.src, c.bytes);
  }
  st->push([move = std::move(move), st, device, bytes, slot, jumps] {
    dsdouble_timing::wait_for_slot(slot);
    const int64_t t0 = dsdouble_timing::mono_ns();
    dsdouble_timing::trace(kKnobs, device, st, "copy-start", t0);
    move();
    dsdouble_timing::finish_task(t0,
                                 dsdouble_timing::task_cost_ns(kKnobs, bytes, device, st->copy_tasks++) + jumps);
    dsdouble_timing::trace_now(kKnobs, device, st, "copy-end");
  });
  dsdouble_timing::trace(kKnobs, device, st, "copy-enqueued", enqueued);
  return CUDA_SUCCESS;
}

CUresult enqueue_copies(const char* call, CUstream s, std::vector<Copy> copies,
                        std::shared_ptr<void> keep = nullptr) {
  uint64_t bytes = 0;
  for (const Copy& c : copies) bytes += c.bytes;
  auto shared = std::make_shared<const std::vector<Copy>>(std::move(copies));
  return enqueue_task(
      call, s, bytes,
      [shared, keep] {
        for (const Copy& c : *shared) std::memcpy(c.dst, c.src, c.bytes);
      },
      shared.get());
}

// A copy planned as ds_copy_kernel and each descriptor of ds_gather_kernel take
// it (copy_kernel.cu): width 1, 2, 4, 8 or 16, head < width, and dst + head and
// src + head both width-aligned, where the kernel's width-byte loads and stores
// begin (on the GPU a misaligned one faults).
bool planned_aligned(uint64_t dst, uint64_t src, uint64_t head, uint64_t width) {
  return (width == 1 || width == 2 || width == 4 || width == 8 || width == 16) && head < width &&
         (dst + head) % width == 0 && (src + head) % width == 0;
}

// The kernel's three parts of one planned copy: [0, head) bytewise, whole units, the tail.
void copy_planned(uint64_t dst, uint64_t src, uint64_t bytes, uint64_t head, uint64_t width) {
  const uint64_t h = std::min(head, bytes);
  const uint64_t units = (bytes - h) / width * width;
  std::memcpy(vp(dst), vp(src), static_cast<size_t>(h));
  std::memcpy(vp(dst + h), vp(src + h), static_cast<size_t>(units));
  std::memcpy(vp(dst + h + units), vp(src + h + units), static_cast<size_t>(bytes - h - units));
}

// ds_gather_kernel(table, count) (copy_kernel.cu): `count` descriptors of five
// 64-bit words {dst, src, bytes, head, width}, 8-byte aligned in device memory,
// on a grid of X x Y blocks of one dimension (our contract). The launch checks
// every descriptor as the kernel would meet it (each copy GPU-reachable and
// planned as ds_copy_kernel's) and logs it ("gather[i] dst=... width=..."); when
// the stream reaches the launch the table is read again from device memory, as
// the kernel reads it, and every descriptor it holds then is copied.
constexpr size_t kGatherWords = 5;
CUresult launch_gather(const FuncImpl& fn, unsigned gz, unsigned by, unsigned bz, CUstream s, void** params) {
  if (fn.params != std::vector<size_t>{8, 8}) {
    log_line("cuLaunchKernel", "-> ds_gather_kernel must take (.u64 table, .u64 count), the PTX declares %zu parameters",
             fn.params.size());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (gz != 1 || by != 1 || bz != 1) {
    log_line("cuLaunchKernel", "-> ds_gather_kernel runs on an X x Y grid of one-dimensional blocks (our contract)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  uint64_t table = 0, count = 0;
  std::memcpy(&table, params[0], sizeof table);
  std::memcpy(&count, params[1], sizeof count);
  log_line("cuLaunchKernel", "gather table=%p count=%llu", vp(table), static_cast<unsigned long long>(count));
  const size_t table_bytes = static_cast<size_t>(count) * kGatherWords * sizeof(uint64_t);
  if (count == 0 || table % 8 != 0 || !is_device(table, table_bytes)) {
    log_line("cuLaunchKernel", "-> CUDA_ERROR_INVALID_VALUE: the gather table is not %zu bytes of device memory, 8-byte aligned",
             table_bytes);
    return CUDA_ERROR_INVALID_VALUE;
  }
  const auto* words = static_cast<const uint64_t*>(vp(table));
  uint64_t bytes = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t* d = words + i * kGatherWords;
    log_line("cuLaunchKernel", "gather[%llu] dst=%p src=%p bytes=%llu head=%llu width=%llu",
             static_cast<unsigned long long>(i), vp(d[0]), vp(d[1]), static_cast<unsigned long long>(d[2]),
             static_cast<unsigned long long>(d[3]), static_cast<unsigned long long>(d[4]));
    // A kernel cannot dereference pageable host memory.
    if (!gpu_reachable(vp(d[0]), d[2]) || !gpu_reachable(vp(d[1]), d[2])) {
      log_line("cuLaunchKernel", "-> CUDA_ERROR_INVALID_VALUE: gather[%llu] is not device, pinned or registered memory",
               static_cast<unsigned long long>(i));
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (!planned_aligned(d[0], d[1], d[3], d[4])) {
      log_line("cuLaunchKernel", "-> CUDA_ERROR_MISALIGNED_ADDRESS: gather[%llu]", static_cast<unsigned long long>(i));
      return CUDA_ERROR_MISALIGNED_ADDRESS;
    }
    bytes += d[2];
  }
  return enqueue_task("cuLaunchKernel", s, bytes, [words, count] {
    for (uint64_t i = 0; i < count; ++i) {
      const uint64_t* d = words + i * kGatherWords;
      copy_planned(d[0], d[1], d[2], d[3], d[4]);
    }
  });
}

// DS_CUDA_DOUBLE_SUBMIT_NS: the submitting call stalls the calling thread first,
// outside the double's lock (another thread's calls go on meanwhile).
void submission_stall() { dsdouble_timing::submit_stall(kKnobs); }

// Whether the 32-bit word `w` satisfies a stream wait on `value` (the
// CU_STREAM_WAIT_VALUE_* operation in the low bits of the flags).
constexpr unsigned kWaitGeq = 0x0, kWaitEq = 0x1, kWaitAnd = 0x2, kWaitNor = 0x3, kWaitFlush = 1u << 30;
bool wait_satisfied(uint32_t w, uint32_t value, unsigned op) {
  switch (op) {
    case kWaitGeq:
      return static_cast<int32_t>(w - value) >= 0;
    case kWaitEq:
      return w == value;
    case kWaitAnd:
      return (w & value) != 0;
    case kWaitNor:
      return ~(w | value) != 0;
  }
  return false;
}

// A word a stream may wait on: 4-byte aligned, in device memory or in mapped
// host memory (cuMemHostAlloc with DEVICEMAP, cuMemHostRegister with DEVICEMAP)
// at its device address (the same address here: unified addressing).
bool waitable_word(CUdeviceptr addr) {
  if (addr == 0 || addr % 4 != 0) return false;
  const Region* r = find_region(vp(addr), 4);
  return r && (r->kind == Kind::kDevice || r->mapped);
}

// Holds the stream until the word at `addr` satisfies the wait, polled with short
// sleeps (an atomic load, as the host stores it).
void enqueue_wait(StreamImpl* st, CUdeviceptr addr, uint32_t value, unsigned op, const char* call) {
  const int device = device_of(st->ctx);
  auto* word = static_cast<uint32_t*>(vp(addr));
  const int64_t enqueued = dsdouble_timing::mono_ns();
  ++st->holds;
  st->push([st, device, word, value, op, call] {
    const bool ok = dsdouble_timing::poll_until(
        [&] { return wait_satisfied(__atomic_load_n(word, __ATOMIC_ACQUIRE), value, op); });
    --st->holds;
    dsdouble_timing::trace_now(kKnobs, device, st, ok ? "wait-passed" : "wait-timeout");
    if (!ok) {
      log_line(call, "-> wait on %p for %u (op %u) never satisfied: gave up after 120 s", static_cast<void*>(word),
               value, op);
      std::fprintf(stderr, "cuda double: %s on stream %p never released after 120 s\n", call,
                   static_cast<void*>(st));
    }
  });
  dsdouble_timing::trace(kKnobs, device, st, "wait-enqueued", enqueued);
}

#ifndef DS_DOUBLE_NO_BATCH
CUresult batch_common(const char* call, CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                      CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                      CUstream hStream) {
  NEED_CTX
  if (!dsts || !srcs || !sizes || count == 0 || !attrs || !attrsIdxs || numAttrs == 0 || numAttrs > count ||
      attrsIdxs[0] != 0)
    return CUDA_ERROR_INVALID_VALUE;
  if (!hStream) return CUDA_ERROR_INVALID_VALUE;  // not on the legacy default stream
  for (size_t a = 0; a < numAttrs; ++a)
    if (attrs[a].srcAccessOrder < CU_MEMCPY_SRC_ACCESS_ORDER_STREAM ||
        attrs[a].srcAccessOrder > CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
      return CUDA_ERROR_INVALID_VALUE;
  std::vector<Copy> copies;
  for (size_t i = 0; i < count; ++i) {
    if (!gpu_reachable(vp(dsts[i]), sizes[i]) || !gpu_reachable(vp(srcs[i]), sizes[i])) {
      if (failIdx) *failIdx = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
    copies.push_back({vp(dsts[i]), vp(srcs[i]), sizes[i]});
    // Each copy of the batch, under a name of its own (not a call): where it went.
    log_line("cuMemcpyBatchAsync[]", "i=%zu dst=%p src=%p bytes=%zu", i, vp(dsts[i]), vp(srcs[i]), sizes[i]);
  }
  check_batch_arrays(dsts, srcs, sizes, count);
  return enqueue_copies(call, hStream, std::move(copies));
}
#endif

}  // namespace

// The copies of this double are memcpy calls on its stream threads, host CPU work:
// the backend reads this symbol (no vendor library has it) and the staging pipelines'
// transfer loop naps instead of spinning (src/aio/io_loop.h look_nap_rule).
extern "C" __attribute__((visibility("default"))) const int dev_sandbox_double_copies_on_host_cpus = 1;

extern "C" {

CUresult cuInit(unsigned int Flags) {
  ENTER(cuInit, "flags=%u", Flags)
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  // The driver's state does not survive fork: a child of an initialised process fails.
  if (g_init_pid != 0 && g_init_pid != getpid()) return CUDA_ERROR_NOT_INITIALIZED;
  g_init_pid = getpid();
  return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int* v) {
  ENTER(cuDriverGetVersion, "-")
  if (!v) return CUDA_ERROR_INVALID_VALUE;
  *v = kDriverVersion;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult e, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
    case CUDA_SUCCESS:
      *s = "CUDA_SUCCESS";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *s = "CUDA_ERROR_INVALID_VALUE";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *s = "CUDA_ERROR_OUT_OF_MEMORY";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *s = "CUDA_ERROR_NOT_INITIALIZED";
      break;
    case CUDA_ERROR_INVALID_DEVICE:
      *s = "CUDA_ERROR_INVALID_DEVICE";
      break;
    case CUDA_ERROR_INVALID_IMAGE:
      *s = "CUDA_ERROR_INVALID_IMAGE";
      break;
    case CUDA_ERROR_INVALID_CONTEXT:
      *s = "CUDA_ERROR_INVALID_CONTEXT";
      break;
    case CUDA_ERROR_INVALID_HANDLE:
      *s = "CUDA_ERROR_INVALID_HANDLE";
      break;
    case CUDA_ERROR_NOT_FOUND:
      *s = "CUDA_ERROR_NOT_FOUND";
      break;
    case CUDA_ERROR_NOT_READY:
      *s = "CUDA_ERROR_NOT_READY";
      break;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
      *s = "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
      break;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
      *s = "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
      break;
    case CUDA_ERROR_MISALIGNED_ADDRESS:
      *s = "CUDA_ERROR_MISALIGNED_ADDRESS";
      break;
    case CUDA_ERROR_NOT_SUPPORTED:
      *s = "CUDA_ERROR_NOT_SUPPORTED";
      break;
    case CUDA_ERROR_UNKNOWN:
      *s = "CUDA_ERROR_UNKNOWN";
      break;
    default:
      *s = nullptr;
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult e, const char** s) {
  if (!s) return CUDA_ERROR_INVALID_VALUE;
  switch (e) {
    case CUDA_ERROR_UNKNOWN:
      *s = "unknown error (injected by the test double)";
      break;
    case CUDA_ERROR_INVALID_VALUE:
      *s = "invalid argument";
      break;
    case CUDA_ERROR_OUT_OF_MEMORY:
      *s = "out of memory";
      break;
    case CUDA_ERROR_NOT_INITIALIZED:
      *s = "initialization error";
      break;
    case CUDA_ERROR_INVALID_CONTEXT:
      *s = "invalid device context";
      break;
    default:
      *s = "test double error";
      break;
  }
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  ENTER(cuDeviceGetCount, "-")
  NEED_INIT
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* d, int ordinal) {
  ENTER(cuDeviceGet, "ordinal=%d", ordinal)
  NEED_INIT
  if (!d) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
  *d = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  ENTER(cuDeviceGetName, "dev=%d", dev)
  NEED_INIT
  if (!name || len <= 0 || dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(name, static_cast<size_t>(len), "Test Double GPU %d", dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  ENTER(cuDeviceGetPCIBusId, "dev=%d", dev)
  NEED_INIT
  if (!id || len < 13 || dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  std::snprintf(id, static_cast<size_t>(len), "00000000:%02X:00.0", 0x18 + dev);
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  ENTER(cuDeviceTotalMem_v2, "dev=%d", dev)
  NEED_INIT
  if (!bytes || dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  *bytes = kTotalMem;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* pi, CUdevice_attribute attrib, CUdevice dev) {
  ENTER(cuDeviceGetAttribute, "attr=%d dev=%d", static_cast<int>(attrib), dev)
  NEED_INIT
  if (!pi || dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  *pi = attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 4 : 1;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRetain, "dev=%d", dev)
  NEED_INIT
  if (!pctx || dev < 0 || dev >= device_count()) return CUDA_ERROR_INVALID_VALUE;
  Ctx& c = g_ctx[dev];
  c.device = dev;
  ++c.refs;
  *pctx = reinterpret_cast<CUcontext>(&c);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  ENTER(cuDevicePrimaryCtxRelease_v2, "dev=%d", dev)
  NEED_INIT
  auto it = g_ctx.find(dev);
  if (it == g_ctx.end() || it->second.refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--it->second.refs == 0) {
    flush_legacy(&it->second);
    it->second.peers.clear();  // the context is gone, and its peer mappings with it
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  ENTER(cuCtxSetCurrent, "ctx=%p", static_cast<void*>(ctx))
  NEED_INIT
  Ctx* c = reinterpret_cast<Ctx*>(ctx);
  if (c) {
    bool known = false;
    for (auto& kv : g_ctx) known = known || &kv.second == c;
    if (!known || c->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  }
  t_current = c;
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  ENTER(cuMemGetInfo_v2, "dev=%d", t_current ? t_current->device : -1)
  NEED_CTX
  if (!free || !total) return CUDA_ERROR_INVALID_VALUE;
  size_t used = 0;
  for (const auto& kv : g_regions)
    if (kv.second.kind == Kind::kDevice && kv.second.device == t_current->device) used += kv.second.bytes;
  *total = kTotalMem;
  *free = kTotalMem - std::min(used, kTotalMem);
  return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytes) {
  ENTER(cuMemAlloc_v2, "bytes=%zu dev=%d", bytes, t_current ? t_current->device : -1)
  NEED_CTX
  if (!dptr || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  if (posix_memalign(&p, 256, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  g_regions[reinterpret_cast<uintptr_t>(p)] = Region{bytes, Kind::kDevice, true, t_current->device};
  *dptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));
  log_line("cuMemAlloc_v2", "-> ptr=%p", p);
  return CUDA_SUCCESS;
}

CUresult cuMemFree_v2(CUdeviceptr dptr) {
  ENTER(cuMemFree_v2, "ptr=%p", vp(dptr))
  NEED_INIT
  auto it = g_regions.find(static_cast<uintptr_t>(dptr));
  if (it == g_regions.end() || it->second.kind != Kind::kDevice) return CUDA_ERROR_INVALID_VALUE;
  for (auto& kv : g_ctx) flush_legacy(&kv.second);  // cuMemFree synchronises
  g_regions.erase(it);
  std::free(vp(dptr));
  return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void** pp, size_t bytes, unsigned int flags) {
  ENTER(cuMemHostAlloc, "bytes=%zu flags=%u", bytes, flags)
  NEED_CTX
  if (!pp || bytes == 0 || (flags & ~0x7u)) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  if (posix_memalign(&p, 4096, bytes) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
  g_regions[reinterpret_cast<uintptr_t>(p)] =
      Region{bytes, Kind::kPinned, (flags & kMemHostAllocDeviceMap) != 0, -1};
  *pp = p;
  log_line("cuMemHostAlloc", "-> ptr=%p", p);
  return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void* p) {
  ENTER(cuMemFreeHost, "ptr=%p", p)
  NEED_INIT
  auto it = g_regions.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_regions.end() || it->second.kind != Kind::kPinned) return CUDA_ERROR_INVALID_VALUE;
  g_regions.erase(it);
  std::free(p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int flags) {
  ENTER(cuMemHostGetDevicePointer_v2, "ptr=%p flags=%u", p, flags)
  NEED_CTX
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const Region* r = find_region(p, 1);
  if (!r || r->kind == Kind::kDevice || !r->mapped) return CUDA_ERROR_INVALID_VALUE;
  *pdptr = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p));  // unified addressing
  return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void* p, size_t bytes, unsigned int flags) {
  ENTER(cuMemHostRegister_v2, "ptr=%p bytes=%zu flags=%u", p, bytes, flags)
  NEED_CTX
  if (!p || bytes == 0 || (flags & ~0xFu)) return CUDA_ERROR_INVALID_VALUE;
  const auto a = reinterpret_cast<uintptr_t>(p);
  for (const auto& kv : g_regions)
    if (a < kv.first + kv.second.bytes && kv.first < a + bytes) {
      return kv.second.kind == Kind::kRegistered ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
                                                 : CUDA_ERROR_INVALID_VALUE;
    }
  // Touch every page as the driver's pinning would: the memory must exist.
  volatile const char* c = static_cast<const char*>(p);
  for (size_t off = 0; off < bytes; off += 4096) (void)c[off];
  (void)c[bytes - 1];
  g_regions[a] = Region{bytes, Kind::kRegistered, (flags & kMemHostRegisterDeviceMap) != 0, -1};
  log_line("cuMemHostRegister_v2", "-> ptr=%p", p);
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  ENTER(cuMemHostUnregister, "ptr=%p", p)
  NEED_INIT
  auto it = g_regions.find(reinterpret_cast<uintptr_t>(p));
  if (it == g_regions.end() || it->second.kind != Kind::kRegistered)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  g_regions.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuStreamCreate(CUstream* s, unsigned int flags) {
  ENTER(cuStreamCreate, "flags=%u", flags)
  NEED_CTX
  if (!s || flags > CU_STREAM_NON_BLOCKING) return CUDA_ERROR_INVALID_VALUE;
  // The driver accepts CU_STREAM_DEFAULT too; the double refuses it because the
  // docs/backends.md promises non-blocking streams (streams that never wait for the
  // legacy default stream): this checks our promise, not a driver rule.
  if (flags != CU_STREAM_NON_BLOCKING) {
    log_line("cuStreamCreate", "-> CUDA_ERROR_INVALID_VALUE: a blocking stream (we promise non-blocking ones)");
    return CUDA_ERROR_INVALID_VALUE;
  }
  auto* impl = new StreamImpl();
  impl->ctx = t_current;
  if (t_current->connections.empty())
    for (size_t i = connections_per_context(); i-- > 0;) t_current->connections.push_back(std::make_unique<Connection>());
  impl->conn = t_current->connections[t_current->streams_made++ % t_current->connections.size()].get();
  g_streams.insert(impl);
  *s = reinterpret_cast<CUstream>(impl);
  log_line("cuStreamCreate", "-> stream=%p connection=%zu", static_cast<void*>(impl),
           (t_current->streams_made - 1) % t_current->connections.size());
  return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream s) {
  StreamImpl* impl = nullptr;
  {
    ENTER(cuStreamDestroy_v2, "stream=%p", static_cast<void*>(s))
    NEED_INIT
    impl = stream_of(s);
    if (!impl) return CUDA_ERROR_INVALID_HANDLE;
    g_streams.erase(impl);
  }
  impl->drain();  // outside the lock: the worker may need it
  delete impl;
  return CUDA_SUCCESS;
}

CUresult cuStreamSynchronize(CUstream s) {
  StreamImpl* impl = nullptr;
  {
    ENTER(cuStreamSynchronize, "stream=%p", static_cast<void*>(s))
    NEED_INIT
    impl = stream_of(s);
    if (!impl) return CUDA_ERROR_INVALID_HANDLE;
  }
  impl->drain();
  return CUDA_SUCCESS;
}

CUresult cuEventCreate(CUevent* e, unsigned int flags) {
  ENTER(cuEventCreate, "flags=%u", flags)
  NEED_CTX
  if (!e) return CUDA_ERROR_INVALID_VALUE;
  // CU_EVENT_BLOCKING_SYNC (0x1), CU_EVENT_DISABLE_TIMING (0x2), CU_EVENT_INTERPROCESS
  // (0x4, only with DISABLE_TIMING).
  if ((flags & ~0x7u) || ((flags & 0x4u) && !(flags & kEventDisableTiming))) return CUDA_ERROR_INVALID_VALUE;
  auto* impl = new EventImpl();
  impl->ctx = t_current;
  impl->flags = flags;
  g_events.insert(impl);
  *e = reinterpret_cast<CUevent>(impl);
  log_line("cuEventCreate", "-> event=%p flags=%u", static_cast<void*>(impl), flags);
  return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent e) {
  ENTER(cuEventDestroy_v2, "event=%p", static_cast<void*>(e))
  NEED_INIT
  auto* impl = reinterpret_cast<EventImpl*>(e);
  if (!g_events.erase(impl)) return CUDA_ERROR_INVALID_HANDLE;
  // A pending record may still stamp it: leak rather than race in a test double.
  if (impl->ns.load() >= 0 || !impl->recorded) delete impl;
  return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
  QueueSlot slot(s);
  ENTER(cuEventRecord, "event=%p stream=%p", static_cast<void*>(e), static_cast<void*>(s))
  NEED_CTX
  auto* impl = reinterpret_cast<EventImpl*>(e);
  if (!g_events.count(impl)) return CUDA_ERROR_INVALID_HANDLE;
  CUresult r;
  StreamImpl* st = current_stream("cuEventRecord", s, &r);
  if (!st) return r;
  // An event records only on a stream of its own context.
  if (impl->ctx != st->ctx) {
    log_line("cuEventRecord", "-> CUDA_ERROR_INVALID_HANDLE: event of device %d, stream of device %d",
             device_of(impl->ctx), device_of(st->ctx));
    return CUDA_ERROR_INVALID_HANDLE;
  }
  impl->recorded = true;
  impl->ns.store(-1);
  st->push([impl] { impl->ns.store(ds::now_ns()); });
  return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent e) {
  ENTER(cuEventQuery, "event=%p", static_cast<void*>(e))
  NEED_INIT
  auto* impl = reinterpret_cast<EventImpl*>(e);
  if (!g_events.count(impl)) return CUDA_ERROR_INVALID_HANDLE;
  log_line("cuEventQuery", "-> event=%p flags=%u", static_cast<void*>(impl), impl->flags);
  // Never recorded: complete, as the driver says.
  return !impl->recorded || impl->ns.load() >= 0 ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

CUresult elapsed_common(const char* call, float* ms, CUevent a, CUevent b) {
  NEED_INIT
  auto* x = reinterpret_cast<EventImpl*>(a);
  auto* y = reinterpret_cast<EventImpl*>(b);
  if (!ms || !g_events.count(x) || !g_events.count(y)) return CUDA_ERROR_INVALID_HANDLE;
  // Both events of one context.
  if (x->ctx != y->ctx) {
    log_line(call, "-> CUDA_ERROR_INVALID_HANDLE: events of devices %d and %d", device_of(x->ctx),
             device_of(y->ctx));
    return CUDA_ERROR_INVALID_HANDLE;
  }
  if (!x->recorded || !y->recorded) return CUDA_ERROR_INVALID_HANDLE;
  if ((x->flags | y->flags) & kEventDisableTiming) {
    log_line(call, "-> CUDA_ERROR_INVALID_HANDLE: an event made with CU_EVENT_DISABLE_TIMING has no time");
    return CUDA_ERROR_INVALID_HANDLE;
  }
  const int64_t t0 = x->ns.load(), t1 = y->ns.load();
  if (t0 < 0 || t1 < 0) return CUDA_ERROR_NOT_READY;
  *ms = static_cast<float>(static_cast<double>(t1 - t0) / 1e6);
  return CUDA_SUCCESS;
}

CUresult cuEventElapsedTime(float* ms, CUevent a, CUevent b) {
  ENTER(cuEventElapsedTime, "start=%p end=%p", static_cast<void*>(a), static_cast<void*>(b))
  return elapsed_common("cuEventElapsedTime", ms, a, b);
}

#ifndef DS_DOUBLE_NO_BATCH
CUresult cuEventElapsedTime_v2(float* ms, CUevent a, CUevent b) {
  ENTER(cuEventElapsedTime_v2, "start=%p end=%p", static_cast<void*>(a), static_cast<void*>(b))
  return elapsed_common("cuEventElapsedTime_v2", ms, a, b);
}
#endif

bool pageable(const void* p, size_t bytes) { return p && !find_region(p, bytes); }

// How an async copy reaches the copy engine: directly, or staged by the driver
// through the host (from or to pageable memory; between devices whose contexts
// have no peer access).
enum class Staging { kNone, kFromPageable, kToPageable, kPeer };

// Under the lock, for the current context.
Staging staging_of(const void* dst, const void* src, size_t bytes) {
  const Region* d = find_region(dst, bytes);
  const Region* r = find_region(src, bytes);
  const bool dst_dev = d && d->kind == Kind::kDevice, src_dev = r && r->kind == Kind::kDevice;
  if (dst_dev && pageable(src, bytes)) return Staging::kFromPageable;
  if (src_dev && pageable(dst, bytes)) return Staging::kToPageable;
  auto unreachable = [](const Region* x) {
    return x && x->kind == Kind::kDevice && x->device != t_current->device && !t_current->peers.count(x->device);
  };
  if (dst_dev && src_dev && (unreachable(d) || unreachable(r))) return Staging::kPeer;
  return Staging::kNone;
}

// An async copy the driver stages through the host: "the driver may synchronize
// with the stream" inside the call (the driver API's "API synchronization
// behavior"). Modelled as the worst case: the call first waits for everything
// queued on the stream before it; from pageable memory it then stages the
// source at once and queues the copy from the staging buffer; to pageable memory
// or between devices without peer access it queues the copy and waits for it
// too. A stream held by a stream wait that only the caller would release never
// gets there: the double logs "-> HANG: ... held stream" and says so on stderr,
// then waits like the driver (the wait gives up after 120 s).
CUresult staged_async(const char* call, void* dst, const void* src, size_t bytes, CUstream s, Staging how) {
  const char* what = how == Staging::kFromPageable ? "from pageable memory"
                     : how == Staging::kToPageable ? "to pageable memory"
                                                   : "between devices without peer access";
  StreamImpl* st = nullptr;
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    CUresult r;
    st = current_stream(call, s, &r);
    if (!st) return r;
    log_line(call, "-> staged %s: waits for stream %p", what, static_cast<void*>(st));
    if (st->holds.load() > 0) {
      log_line(call, "-> HANG: a copy %s waits for a held stream %p (a stream wait only the caller releases)", what,
               static_cast<void*>(st));
      std::fprintf(stderr,
                   "cuda double: %s: a copy %s waits inside the call for stream %p, held by a stream wait: "
                   "a driver may never return here\n",
                   call, what, static_cast<void*>(st));
    }
  }
  st->drain();
  if (how == Staging::kFromPageable) {
    auto staged = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                      static_cast<const char*>(src) + bytes);
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    return enqueue_copies(call, s, {{dst, staged->data(), bytes}}, staged);
  }
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    const CUresult r = enqueue_copies(call, s, {{dst, src, bytes}});
    if (r != CUDA_SUCCESS) return r;
  }
  st->drain();
  return CUDA_SUCCESS;
}

// The async copies: validated under the lock; queued there, or staged after it.
#define DS_ASYNC_COPY(call, check, dstp, srcp)                                                  \
  Staging how = Staging::kNone;                                                                 \
  {                                                                                             \
    ENTER(call, "dst=%p src=%p bytes=%zu stream=%p", dstp, srcp, bytes, static_cast<void*>(s))  \
    NEED_CTX                                                                                    \
    if (!(check)) return CUDA_ERROR_INVALID_VALUE;                                              \
    how = staging_of(dstp, srcp, bytes);                                                        \
    if (how == Staging::kNone) return enqueue_copies(#call, s, {{dstp, srcp, bytes}});          \
  }                                                                                             \
  return staged_async(#call, dstp, srcp, bytes, s, how);

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  DS_ASYNC_COPY(cuMemcpyAsync, dst && src, vp(dst), vp(src))
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  DS_ASYNC_COPY(cuMemcpyHtoDAsync_v2, is_device(dst, bytes) && is_host(src, bytes), vp(dst), src)
}

CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  DS_ASYNC_COPY(cuMemcpyDtoHAsync_v2, is_host(dst, bytes) && is_device(src, bytes), dst, vp(src))
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  DS_ASYNC_COPY(cuMemcpyDtoDAsync_v2, is_device(dst, bytes) && is_device(src, bytes), vp(dst), vp(src))
}
#undef DS_ASYNC_COPY

// A synchronous copy into device memory that returns before the bytes land:
// staged (pageable source) or by address (device source), on the legacy stream.
void defer_to_device(void* dst, const void* src, size_t bytes, bool stage) {
  if (stage) {
    auto data = std::make_shared<std::vector<char>>(static_cast<const char*>(src),
                                                    static_cast<const char*>(src) + bytes);
    t_current->legacy.push_back([dst, data] { std::memcpy(dst, data->data(), data->size()); });
  } else {
    t_current->legacy.push_back([dst, src, bytes] { std::memcpy(dst, src, bytes); });
  }
  log_line("legacy-stream", "deferred dst=%p bytes=%zu", dst, bytes);
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  ENTER(cuMemcpy, "dst=%p src=%p bytes=%zu", vp(dst), vp(src), bytes)
  NEED_CTX
  if (!dst || !src) return CUDA_ERROR_INVALID_VALUE;
  if (is_device(dst, bytes) && (is_device(src, bytes) || pageable(vp(src), bytes))) {
    defer_to_device(vp(dst), vp(src), bytes, pageable(vp(src), bytes));
    return CUDA_SUCCESS;
  }
  flush_legacy(t_current);
  std::memcpy(vp(dst), vp(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  ENTER(cuMemcpyHtoD_v2, "dst=%p src=%p bytes=%zu", vp(dst), src, bytes)
  NEED_CTX
  if (!is_device(dst, bytes) || !is_host(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  if (pageable(src, bytes)) {
    defer_to_device(vp(dst), src, bytes, true);
    return CUDA_SUCCESS;
  }
  flush_legacy(t_current);  // from pinned memory: synchronous
  std::memcpy(vp(dst), src, bytes);
  return CUDA_SUCCESS;
}

CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  ENTER(cuMemcpyDtoH_v2, "dst=%p src=%p bytes=%zu", dst, vp(src), bytes)
  NEED_CTX
  if (!is_host(dst, bytes) || !is_device(src, bytes)) return CUDA_ERROR_INVALID_VALUE;
  flush_legacy(t_current);  // ordered after the legacy stream; returns when done
  std::memcpy(dst, vp(src), bytes);
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize() {
  std::vector<StreamImpl*> streams;
  {
    ENTER(cuCtxSynchronize, "dev=%d", t_current ? t_current->device : -1)
    NEED_CTX
    flush_legacy(t_current);
    for (StreamImpl* st : g_streams)
      if (st->ctx == t_current) streams.push_back(st);
  }
  for (StreamImpl* st : streams) st->drain();
  return CUDA_SUCCESS;
}

int can_access_peer(int dev, int peer) {
  const char* off = std::getenv("DS_CUDA_DOUBLE_NO_PEER");
  if (off && *off == '1') return 0;
  return dev != peer ? 1 : 0;
}

CUresult cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  ENTER(cuDeviceCanAccessPeer, "dev=%d peer=%d", dev, peer)
  NEED_INIT
  if (!can || dev < 0 || dev >= device_count() || peer < 0 || peer >= device_count())
    return CUDA_ERROR_INVALID_DEVICE;
  *can = can_access_peer(dev, peer);
  log_line("cuDeviceCanAccessPeer", "-> can=%d", *can);
  return CUDA_SUCCESS;
}

CUresult cuCtxEnablePeerAccess(CUcontext peer_ctx, unsigned int flags) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);  // g_ctx is read before ENTER logs
  Ctx* peer = reinterpret_cast<Ctx*>(peer_ctx);
  bool known = false;
  for (auto& kv : g_ctx) known = known || &kv.second == peer;
  ENTER(cuCtxEnablePeerAccess, "dev=%d peer_dev=%d flags=%u", t_current ? t_current->device : -1,
        known ? peer->device : -1, flags)
  NEED_CTX
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!known || peer->refs <= 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (peer == t_current) return CUDA_ERROR_INVALID_DEVICE;
  if (!can_access_peer(t_current->device, peer->device)) return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  if (!t_current->peers.insert(peer->device).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  log_line("cuCtxEnablePeerAccess", "-> enabled dev=%d peer_dev=%d", t_current->device, peer->device);
  return CUDA_SUCCESS;
}

#ifndef DS_DOUBLE_NO_BATCH
// CUDA 12.8's ABI (with failIdx).
CUresult cuMemcpyBatchAsync(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                            CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                            CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  ENTER(cuMemcpyBatchAsync, "count=%zu numAttrs=%zu stream=%p", count, numAttrs, static_cast<void*>(s))
  return batch_common("cuMemcpyBatchAsync", dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, s);
}

// CUDA 13.0's ABI (no failIdx).
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count,
                               CUmemcpyAttributes* attrs, size_t* attrsIdxs, size_t numAttrs, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  ENTER(cuMemcpyBatchAsync_v2, "count=%zu numAttrs=%zu stream=%p", count, numAttrs, static_cast<void*>(s))
  return batch_common("cuMemcpyBatchAsync_v2", dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, nullptr, s);
}
#endif

CUresult cuGraphCreate(CUgraph* g, unsigned int flags) {
  ENTER(cuGraphCreate, "flags=%u", flags)
  NEED_CTX
  if (!g || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  auto* impl = new GraphImpl();
  impl->device = t_current->device;
  g_graphs.insert(impl);
  *g = reinterpret_cast<CUgraph>(impl);
  log_line("cuGraphCreate", "-> graph=%p", static_cast<void*>(impl));
  return CUDA_SUCCESS;
}

CUresult cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph g, const CUgraphNode* deps, size_t ndeps,
                              const CUDA_MEMCPY3D* p, CUcontext ctx) {
  ENTER(cuGraphAddMemcpyNode, "graph=%p bytes=%zu", static_cast<void*>(g), p ? p->WidthInBytes : 0)
  NEED_CTX
  auto* impl = reinterpret_cast<GraphImpl*>(g);
  if (!node || !g_graphs.count(impl) || !p || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
  if (reinterpret_cast<Ctx*>(ctx) != t_current) return CUDA_ERROR_INVALID_CONTEXT;
  if (p->Height != 1 || p->Depth != 1 || p->WidthInBytes == 0 || p->reserved0 || p->reserved1 ||
      p->srcXInBytes || p->srcY || p->srcZ || p->srcLOD || p->dstXInBytes || p->dstY || p->dstZ ||
      p->dstLOD || p->srcArray || p->dstArray)
    return CUDA_ERROR_INVALID_VALUE;
  auto address = [](CUmemorytype t, const void* host, CUdeviceptr dev) -> const void* {
    switch (t) {
      case CU_MEMORYTYPE_HOST:
        return host;
      case CU_MEMORYTYPE_DEVICE:
      case CU_MEMORYTYPE_UNIFIED:
        return vp(dev);
      default:
        return nullptr;
    }
  };
  const void* src = address(p->srcMemoryType, p->srcHost, p->srcDevice);
  void* dst = const_cast<void*>(address(p->dstMemoryType, p->dstHost, p->dstDevice));
  // Graph memcpy nodes cannot touch pageable host memory.
  if (!gpu_reachable(src, p->WidthInBytes) || !gpu_reachable(dst, p->WidthInBytes))
    return CUDA_ERROR_INVALID_VALUE;
  impl->nodes.push_back({dst, src, p->WidthInBytes});
  *node = reinterpret_cast<CUgraphNode>(impl->nodes.size());
  return CUDA_SUCCESS;
}

#ifndef DS_DOUBLE_NO_GRAPH
CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph g, unsigned long long flags) {
  ENTER(cuGraphInstantiateWithFlags, "graph=%p flags=%llu", static_cast<void*>(g), flags)
  NEED_CTX
  auto* impl = reinterpret_cast<GraphImpl*>(g);
  if (!exec || !g_graphs.count(impl) || impl->nodes.empty()) return CUDA_ERROR_INVALID_VALUE;
  auto* e = new ExecImpl{impl->nodes};
  g_execs.insert(e);
  *exec = reinterpret_cast<CUgraphExec>(e);
  log_line("cuGraphInstantiateWithFlags", "-> exec=%p nodes=%zu", static_cast<void*>(e), e->nodes.size());
  return CUDA_SUCCESS;
}
#endif

CUresult cuGraphLaunch(CUgraphExec exec, CUstream s) {
  submission_stall();
  QueueSlot slot(s);
  ENTER(cuGraphLaunch, "exec=%p stream=%p", static_cast<void*>(exec), static_cast<void*>(s))
  NEED_CTX
  auto* e = reinterpret_cast<ExecImpl*>(exec);
  if (!g_execs.count(e)) return CUDA_ERROR_INVALID_HANDLE;
  return enqueue_copies("cuGraphLaunch", s, e->nodes);
}

CUresult cuGraphExecDestroy(CUgraphExec exec) {
  ENTER(cuGraphExecDestroy, "exec=%p", static_cast<void*>(exec))
  NEED_INIT
  auto* e = reinterpret_cast<ExecImpl*>(exec);
  if (!g_execs.erase(e)) return CUDA_ERROR_INVALID_HANDLE;
  delete e;
  return CUDA_SUCCESS;
}

CUresult cuGraphDestroy(CUgraph g) {
  ENTER(cuGraphDestroy, "graph=%p", static_cast<void*>(g))
  NEED_INIT
  auto* impl = reinterpret_cast<GraphImpl*>(g);
  if (!g_graphs.erase(impl)) return CUDA_ERROR_INVALID_HANDLE;
  delete impl;
  return CUDA_SUCCESS;
}

// Bytes of a PTX parameter type (.u64, .b32, ...); 0 for what we do not read.
size_t ptx_param_bytes(const std::string& type) {
  if (type.size() < 3 || type[0] != '.') return 0;
  const int bits = std::atoi(type.c_str() + 2);
  return (bits == 8 || bits == 16 || bits == 32 || bits == 64) ? static_cast<size_t>(bits / 8) : 0;
}

CUresult cuModuleLoadData(CUmodule* mod, const void* image) {
  ENTER(cuModuleLoadData, "image=%p", image)
  NEED_CTX
  if (!mod || !image) return CUDA_ERROR_INVALID_VALUE;
  // A PTX image: text with a .version, a .target and its .entry functions.
  const std::string text = static_cast<const char*>(image);
  if (text.find("\n.version ") == std::string::npos || text.find("\n.target ") == std::string::npos)
    return CUDA_ERROR_INVALID_PTX;
  auto* m = new ModuleImpl();
  for (size_t at = text.find(".entry "); at != std::string::npos; at = text.find(".entry ", at + 1)) {
    const size_t b = at + 7, e = text.find_first_of("( \t\n", b);
    FuncImpl f;
    f.name = text.substr(b, e - b);
    // The parameter list: ".param .u64 name" entries up to the closing ')'.
    const size_t open = text.find('(', e), close = text.find(')', e);
    if (open != std::string::npos && close != std::string::npos && open < close) {
      const std::string list = text.substr(open + 1, close - open - 1);
      for (size_t p = list.find(".param"); p != std::string::npos; p = list.find(".param", p + 6)) {
        const size_t tb = list.find('.', p + 6), te = list.find_first_of(" \t\n", tb);
        f.params.push_back(ptx_param_bytes(list.substr(tb, te - tb)));
      }
    }
    m->entries[f.name] = f;
  }
  g_modules.insert(m);
  *mod = reinterpret_cast<CUmodule>(m);
  std::string shape;
  for (const auto& kv : m->entries) shape += " " + kv.first + "/" + std::to_string(kv.second.params.size());
  log_line("cuModuleLoadData", "-> module=%p entries=%zu params=%s", static_cast<void*>(m), m->entries.size(),
           shape.empty() ? "-" : shape.c_str() + 1);
  return CUDA_SUCCESS;
}

CUresult cuModuleUnload(CUmodule mod) {
  ENTER(cuModuleUnload, "module=%p", static_cast<void*>(mod))
  NEED_INIT
  auto* m = reinterpret_cast<ModuleImpl*>(mod);
  if (!g_modules.erase(m)) return CUDA_ERROR_INVALID_HANDLE;
  delete m;
  return CUDA_SUCCESS;
}

CUresult cuModuleGetFunction(CUfunction* f, CUmodule mod, const char* name) {
  ENTER(cuModuleGetFunction, "module=%p name=%s", static_cast<void*>(mod), name ? name : "(null)")
  NEED_CTX
  auto* m = reinterpret_cast<ModuleImpl*>(mod);
  if (!f || !name || !g_modules.count(m)) return CUDA_ERROR_INVALID_VALUE;
  auto it = m->entries.find(name);
  if (it == m->entries.end()) return CUDA_ERROR_NOT_FOUND;
  *f = reinterpret_cast<CUfunction>(&it->second);
  return CUDA_SUCCESS;
}

// A function of a module still loaded.
const FuncImpl* function_of(CUfunction f) {
  for (ModuleImpl* m : g_modules)
    for (const auto& kv : m->entries)
      if (reinterpret_cast<const FuncImpl*>(f) == &kv.second) return &kv.second;
  return nullptr;
}

CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                        unsigned int by, unsigned int bz, unsigned int shmem, CUstream s, void** params,
                        void** extra) {
  {
    // A copy-kernel launch is a copy submission: its host-side stall comes first,
    // outside the lock, as for the async copies.
    bool copy_kernel = false;
    {
      std::lock_guard<std::recursive_mutex> lock(g_mutex);
      const FuncImpl* fn = function_of(f);
      copy_kernel = fn && (fn->name == "ds_copy_kernel" || fn->name == "ds_gather_kernel");
    }
    if (copy_kernel) submission_stall();
  }
  QueueSlot slot(s);
  ENTER(cuLaunchKernel, "grid=%ux%ux%u block=%ux%ux%u stream=%p", gx, gy, gz, bx, by, bz,
        static_cast<void*>(s))
  NEED_CTX
  const FuncImpl* fn = function_of(f);
  if (!fn) return CUDA_ERROR_INVALID_HANDLE;
  if (!params || extra || gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      bx * by * bz > 1024 || shmem != 0)
    return CUDA_ERROR_INVALID_VALUE;
  // The gate kernel, ds_gate_kernel(.u64 flag, .u32 value): one thread spinning
  // until (int32_t)(*flag - value) >= 0 on a word of device or mapped host
  // memory, i.e. the stream goes on only then (emulated like
  // cuStreamWaitValue32_v2 with CU_STREAM_WAIT_VALUE_GEQ).
  if (fn->name == "ds_gate_kernel") {
    if (fn->params != std::vector<size_t>{8, 4}) {
      log_line("cuLaunchKernel", "-> ds_gate_kernel must take (.u64 flag, .u32 value), the PTX declares %zu parameters",
               fn->params.size());
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (gx * gy * gz != 1 || bx * by * bz != 1) {
      log_line("cuLaunchKernel", "-> ds_gate_kernel runs on a 1x1x1 grid of 1x1x1 blocks (our contract)");
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    uint64_t flag = 0;
    uint32_t value = 0;
    std::memcpy(&flag, params[0], sizeof flag);
    std::memcpy(&value, params[1], sizeof value);
    log_line("cuLaunchKernel", "gate flag=%p value=%u", vp(flag), value);
    // A kernel cannot dereference pageable host memory; a 32-bit load is 4-byte aligned.
    if (!waitable_word(flag)) {
      log_line("cuLaunchKernel", "-> CUDA_ERROR_INVALID_VALUE: the gate word is not 4-byte aligned device or mapped memory");
      return CUDA_ERROR_INVALID_VALUE;
    }
    CUresult r;
    StreamImpl* st = current_stream("cuLaunchKernel", s, &r);
    if (!st) return r;
    enqueue_wait(st, flag, value, kWaitGeq, "cuLaunchKernel");
    return CUDA_SUCCESS;
  }
  if (fn->name == "ds_gather_kernel") return launch_gather(*fn, gz, by, bz, s, params);
  // The driver reads as many parameters as the PTX declares, each of its
  // declared size. Besides the gate and gather kernels the double runs only our
  // copy kernel, as copy_kernel.cu declares it: ds_copy_kernel(dst, src, bytes,
  // head, width), five 64-bit values.
  if (fn->name != "ds_copy_kernel" || fn->params != std::vector<size_t>(5, 8)) {
    log_line("cuLaunchKernel",
             "-> the double runs only ds_copy_kernel with five .u64 parameters (and ds_gate_kernel, ds_gather_kernel)");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  uint64_t v[5];
  for (size_t i = 0; i < 5; ++i) std::memcpy(&v[i], params[i], sizeof v[i]);
  const uint64_t dst = v[0], src = v[1], bytes = v[2], head = v[3], width = v[4];
  // A kernel cannot dereference pageable host memory.
  if (!gpu_reachable(vp(dst), bytes) || !gpu_reachable(vp(src), bytes)) return CUDA_ERROR_INVALID_VALUE;
  log_line("cuLaunchKernel", "dst=%p src=%p bytes=%llu head=%llu width=%llu", vp(dst), vp(src),
           static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(head),
           static_cast<unsigned long long>(width));
  // The kernel's width-byte loads and stores start at dst + head and src + head:
  // on the GPU a misaligned one faults (reported later, at a synchronisation);
  // here the launch says so at once.
  if (!planned_aligned(dst, src, head, width)) {
    log_line("cuLaunchKernel", "-> CUDA_ERROR_MISALIGNED_ADDRESS");
    return CUDA_ERROR_MISALIGNED_ADDRESS;
  }
  // The kernel's three parts: [0, head) bytewise, whole units, the tail bytewise.
  const uint64_t h = std::min(head, bytes);
  const uint64_t units = (bytes - h) / width * width;
  return enqueue_copies("cuLaunchKernel", s, {{vp(dst), vp(src), static_cast<size_t>(h)},
                            {vp(dst + h), vp(src + h), static_cast<size_t>(units)},
                            {vp(dst + h + units), vp(src + h + units), static_cast<size_t>(bytes - h - units)}});
}

#ifndef DS_DOUBLE_NO_GRAPH
// CUDA 11.7's stream wait (the _v2 memory operations, enabled on every device; a
// CUDA 11.3 driver has no _v2). Holds the stream until the 32-bit word at addr
// satisfies the wait: flags CU_STREAM_WAIT_VALUE_GEQ (0) (int32_t)(*addr - value)
// >= 0, EQ (1), AND (2), NOR (3), optionally | CU_STREAM_WAIT_VALUE_FLUSH.
CUresult cuStreamWaitValue32_v2(CUstream s, CUdeviceptr addr, uint32_t value, unsigned int flags) {
  QueueSlot slot(s);
  ENTER(cuStreamWaitValue32_v2, "stream=%p addr=%p value=%u flags=0x%x", static_cast<void*>(s), vp(addr), value,
        flags)
  NEED_CTX
  const unsigned op = flags & ~kWaitFlush;
  if (op > kWaitNor) return CUDA_ERROR_INVALID_VALUE;
  if (!waitable_word(addr)) {
    log_line("cuStreamWaitValue32_v2", "-> CUDA_ERROR_INVALID_VALUE: not a 4-byte aligned word of device or mapped memory");
    return CUDA_ERROR_INVALID_VALUE;
  }
  CUresult r;
  StreamImpl* st = current_stream("cuStreamWaitValue32_v2", s, &r);
  if (!st) return r;
  enqueue_wait(st, addr, value, op, "cuStreamWaitValue32_v2");
  return CUDA_SUCCESS;
}

CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status);
#endif
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags);

}  // extern "C"

namespace {

struct ProcEntry {
  const char* name;
  int since;  // first CUDA version with this ABI
  void* fn;
};

#define E(name, since, fn) \
  { #name, since, reinterpret_cast<void*>(&fn) }
const ProcEntry kProcTable[] = {
    E(cuInit, 2000, cuInit),
    E(cuDriverGetVersion, 2020, cuDriverGetVersion),
    E(cuGetErrorString, 6000, cuGetErrorString),
    E(cuGetErrorName, 6000, cuGetErrorName),
    E(cuGetProcAddress, 11030, cuGetProcAddress),
#ifndef DS_DOUBLE_NO_GRAPH
    E(cuGetProcAddress, 12000, cuGetProcAddress_v2),
#endif
    E(cuDeviceGetCount, 2000, cuDeviceGetCount),
    E(cuDeviceGet, 2000, cuDeviceGet),
    E(cuDeviceGetName, 2000, cuDeviceGetName),
    E(cuDeviceGetPCIBusId, 4010, cuDeviceGetPCIBusId),
    E(cuDeviceTotalMem, 3020, cuDeviceTotalMem_v2),
    E(cuDeviceGetAttribute, 2000, cuDeviceGetAttribute),
    E(cuDevicePrimaryCtxRetain, 7000, cuDevicePrimaryCtxRetain),
    E(cuDevicePrimaryCtxRelease, 11000, cuDevicePrimaryCtxRelease_v2),
    E(cuCtxSetCurrent, 4000, cuCtxSetCurrent),
    E(cuCtxSynchronize, 2000, cuCtxSynchronize),
    E(cuDeviceCanAccessPeer, 4000, cuDeviceCanAccessPeer),
    E(cuCtxEnablePeerAccess, 4000, cuCtxEnablePeerAccess),
    E(cuMemGetInfo, 3020, cuMemGetInfo_v2),
    E(cuMemAlloc, 3020, cuMemAlloc_v2),
    E(cuMemFree, 3020, cuMemFree_v2),
    E(cuMemHostAlloc, 2020, cuMemHostAlloc),
    E(cuMemFreeHost, 2000, cuMemFreeHost),
    E(cuMemHostGetDevicePointer, 3020, cuMemHostGetDevicePointer_v2),
    E(cuMemHostRegister, 6050, cuMemHostRegister_v2),
    E(cuMemHostUnregister, 4000, cuMemHostUnregister),
    E(cuStreamCreate, 2000, cuStreamCreate),
    E(cuStreamDestroy, 4000, cuStreamDestroy_v2),
    E(cuStreamSynchronize, 2000, cuStreamSynchronize),
    E(cuEventCreate, 2000, cuEventCreate),
    E(cuEventDestroy, 4000, cuEventDestroy_v2),
    E(cuEventRecord, 2000, cuEventRecord),
    E(cuEventElapsedTime, 2000, cuEventElapsedTime),
    E(cuEventQuery, 2000, cuEventQuery),
#ifndef DS_DOUBLE_NO_BATCH
    E(cuEventElapsedTime, 12080, cuEventElapsedTime_v2),
#endif
    E(cuMemcpy, 4000, cuMemcpy),
    E(cuMemcpyAsync, 4000, cuMemcpyAsync),
    E(cuMemcpyHtoDAsync, 3020, cuMemcpyHtoDAsync_v2),
    E(cuMemcpyDtoHAsync, 3020, cuMemcpyDtoHAsync_v2),
    E(cuMemcpyDtoDAsync, 3020, cuMemcpyDtoDAsync_v2),
    E(cuMemcpyHtoD, 3020, cuMemcpyHtoD_v2),
    E(cuMemcpyDtoH, 3020, cuMemcpyDtoH_v2),
#ifndef DS_DOUBLE_NO_BATCH
    // cuMemcpyBatchAsync_v2 (13.0) is exported but never returned: a 12.8
    // driver answers a request at 13000 with CUDA_ERROR_INVALID_VALUE.
    E(cuMemcpyBatchAsync, 12080, cuMemcpyBatchAsync),
#endif
    E(cuGraphCreate, 10000, cuGraphCreate),
    E(cuGraphAddMemcpyNode, 10000, cuGraphAddMemcpyNode),
#ifndef DS_DOUBLE_NO_GRAPH
    E(cuGraphInstantiateWithFlags, 11040, cuGraphInstantiateWithFlags),
#endif
    E(cuGraphLaunch, 10000, cuGraphLaunch),
    E(cuGraphExecDestroy, 10000, cuGraphExecDestroy),
    E(cuGraphDestroy, 10000, cuGraphDestroy),
    E(cuModuleLoadData, 2000, cuModuleLoadData),
    E(cuModuleUnload, 2000, cuModuleUnload),
    E(cuModuleGetFunction, 2000, cuModuleGetFunction),
    E(cuLaunchKernel, 4000, cuLaunchKernel),
#ifndef DS_DOUBLE_NO_GRAPH
    E(cuStreamWaitValue32, 11070, cuStreamWaitValue32_v2),
#endif
};
#undef E

// DS_CUDA_DOUBLE_LACK=name[,name...]: base names the driver's lookup does not
// offer although the library still exports the symbol.
bool lacked(const char* symbol) {
  const char* e = std::getenv("DS_CUDA_DOUBLE_LACK");
  if (!e || !*e) return false;
  const std::string list = std::string(",") + e + ",";
  return list.find("," + std::string(symbol) + ",") != std::string::npos;
}

const char* status_name(CUdriverProcAddressQueryResult s) {
  switch (s) {
    case CU_GET_PROC_ADDRESS_SUCCESS:
      return "SUCCESS";
    case CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND:
      return "SYMBOL_NOT_FOUND";
    case CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT:
      return "VERSION_NOT_SUFFICIENT";
  }
  return "?";
}

// The driver's own lookup: base name -> the variant that was current at
// `cudaVersion`, answered the way the driver of this build answers (logged as
// "-> symbol=S version=V rc=R pfn=P status=S").
//   CUDA 12 (cuGetProcAddress_v2's documented contract):
//     cudaVersion above the driver's own version  -> CUDA_ERROR_INVALID_VALUE
//     a symbol the driver lacks, or no variant as old as cudaVersion
//                                                 -> CUDA_SUCCESS, *pfn = NULL, and
//        symbolStatus SYMBOL_NOT_FOUND or VERSION_NOT_SUFFICIENT
//   CUDA 11 (DS_DOUBLE_NO_GRAPH; cuGetProcAddress only): CUDA_ERROR_NOT_FOUND for
//     either, and no check against its own version: asked for a version newer
//     than itself, it answers with its newest variant (an older ABI).
CUresult proc_lookup(const char* via, const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                     CUdriverProcAddressQueryResult* status_out) {
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = CUDA_SUCCESS;
  const ProcEntry* best = nullptr;
  {
    std::lock_guard<std::recursive_mutex> guard(g_mutex);
    log_line(via, "symbol=%s version=%d flags=%llu", symbol ? symbol : "(null)", cudaVersion,
             static_cast<unsigned long long>(flags));
    if (injected(via)) {
      log_line(via, "-> injected CUDA_ERROR_UNKNOWN");
      return CUDA_ERROR_UNKNOWN;
    }
    if (status_out) *status_out = status;
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
    *pfn = nullptr;
    const char* off = std::getenv("DS_CUDA_DOUBLE_NO_PROC_ADDRESS");
    if (off && *off == '1') {
      log_line(via, "-> symbol=%s version=%d rc=CUDA_ERROR_NOT_SUPPORTED", symbol, cudaVersion);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    // We implement the legacy-stream variants only.
    if (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) {
      log_line(via, "-> symbol=%s version=%d rc=CUDA_ERROR_NOT_FOUND (no per-thread variants)",
               symbol, cudaVersion);
      return CUDA_ERROR_NOT_FOUND;
    }
    bool known = false;
    if (!lacked(symbol))
      for (const ProcEntry& e : kProcTable) {
        if (std::strcmp(e.name, symbol) != 0) continue;
        known = true;
        if (e.since <= cudaVersion && (!best || e.since > best->since)) best = &e;
      }
#ifdef DS_DOUBLE_NO_GRAPH
    (void)known;
    if (!best) r = CUDA_ERROR_NOT_FOUND;
#else
    if (cudaVersion > kDriverVersion) {
      r = CUDA_ERROR_INVALID_VALUE;
      status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      best = nullptr;
    } else if (!best) {
      status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    }
#endif
    if (best) {
      *pfn = best->fn;
      status = CU_GET_PROC_ADDRESS_SUCCESS;
    }
    if (status_out) *status_out = status;
    const char* rc = nullptr;
    cuGetErrorName(r, &rc);
    log_line(via, "-> symbol=%s version=%d rc=%s pfn=%s status=%s", symbol, cudaVersion, rc,
             best ? "set" : "NULL", status_out ? status_name(status) : "-");
  }
  return r;
}

}  // namespace

extern "C" {

#ifndef DS_DOUBLE_NO_GRAPH
// CUDA 12.0+.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult* status) {
  return proc_lookup("cuGetProcAddress_v2", symbol, pfn, cudaVersion, flags, status);
}
#endif

// CUDA 11.3's export (still exported by later drivers).
CUresult cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  return proc_lookup("cuGetProcAddress", symbol, pfn, cudaVersion, flags, nullptr);
}

}  // extern "C"
