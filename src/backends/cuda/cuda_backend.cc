#include "backends/cuda/cuda_backend.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "backend/prepared_lists.h"
#include "backends/cuda/copy_kernel_plan.h"
#include "backends/cuda/copy_kernel_ptx.h"
#include "backends/cuda/cuda_connections.h"
#include "backends/cuda/cuda_driver.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "topology/topology.h"

namespace ds {

namespace {

using namespace cu;

CUdeviceptr dptr(const void* p) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(p)); }
void* vptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

std::string call_text(const char* fn, size_t bytes) {
  return std::string(fn) + "(" + std::to_string(bytes) + " bytes)";
}

// Checks a call whose message names its size; the text is built only on failure.
void check_sized(CUresult r, const char* fn, size_t bytes) {
  if (r != CUDA_SUCCESS) throw RunError(cuda_error_text(call_text(fn, bytes), r));
}

// Page-locking by the driver (cuMemHostAlloc, cuMemHostRegister): our own
// memory-lock pre-flight does not cover it, so a failure says where to look.
void check_pinning(CUresult r, const char* fn, size_t bytes) {
  if (r != CUDA_SUCCESS)
    throw RunError(cuda_error_text(call_text(fn, bytes), r) +
                   "; the driver page-locks this memory itself: if a memory-lock limit refused it, "
                   "raise the limit (`ulimit -l unlimited`)");
}

class CudaStream : public Stream {
 public:
  explicit CudaStream(const CudaDriver& d) : d_(d) {
    cuda_check(d_.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }
  ~CudaStream() override { d_.cuStreamDestroy_v2(stream); }
  CUstream stream = nullptr;

 private:
  const CudaDriver& d_;
};

class CudaEvent : public Event {
 public:
  // CU_EVENT_DEFAULT: timing enabled, so cuEventElapsedTime can read it;
  // CU_EVENT_DISABLE_TIMING for events that are only polled.
  CudaEvent(const CudaDriver& d, unsigned flags) : d_(d) {
    cuda_check(d_.cuEventCreate(&event, flags),
               flags == CU_EVENT_DEFAULT ? "cuEventCreate" : "cuEventCreate(CU_EVENT_DISABLE_TIMING)");
  }
  ~CudaEvent() override { d_.cuEventDestroy_v2(event); }
  CUevent event = nullptr;

 private:
  const CudaDriver& d_;
};

CUstream stream_of(Stream& s) { return static_cast<CudaStream&>(s).stream; }
CUevent event_of(Event& e) { return static_cast<CudaEvent&>(e).event; }

// The driver calls that queue work on a stream, as the start gate's watcher
// sees them: while a gate holds this device's streams, each such call stamps
// when it began and clears the stamp when it returns.
struct SubmitWatch {
  std::atomic<bool> armed{false};
  std::atomic<int64_t> since{0};  // when the call under way began; 0: none
};

// Marks one queuing call for the watch (two clock reads, only while armed).
class WatchedCall {
 public:
  explicit WatchedCall(SubmitWatch& w) : w_(w.armed.load(std::memory_order_relaxed) ? &w : nullptr) {
    if (w_) w_->since.store(now_ns(), std::memory_order_relaxed);
  }
  ~WatchedCall() {
    if (w_) w_->since.store(0, std::memory_order_relaxed);
  }
  WatchedCall(const WatchedCall&) = delete;
  WatchedCall& operator=(const WatchedCall&) = delete;

 private:
  SubmitWatch* w_;
};

// A queuing call that has not returned after this long, while the streams are
// held, is taken to wait for room in a queue that only the held work would free.
constexpr int64_t kGateStallNs = 1000000000;
constexpr int64_t kGateWatchPollNs = 20000000;

// The stream start gate: a page-locked word mapped into the device. hold() queues
// a wait for the word to reach this round: cuStreamWaitValue32_v2 where the driver
// has it (CUDA 11.7+), else the one-thread spin kernel ds_gate_kernel on the
// word; release() stores the round from the host.
// Streams share the context's hardware queues (CUDA_DEVICE_MAX_CONNECTIONS), and a
// queue full of held work blocks the host inside its next queuing call, before it
// ever releases: the run is refused up front when the queues would overfill, and,
// where the driver gave fewer queues or less room than that assumes, a watcher
// thread that sees a queuing call stuck for kGateStallNs while the streams are
// held lets them go itself; from then on the gate holds nothing and let_go()
// says why, so the run finishes, marked ungated.
class CudaGate : public StreamGate {
 public:
  CudaGate(const CudaDriver& d, CUfunction spin, SubmitWatch& w) : d_(d), spin_(spin), watch_(w) {
    void* p = nullptr;
    check_pinning(d_.cuMemHostAlloc(&p, sizeof(uint32_t), kMemHostAllocPortable | kMemHostAllocDeviceMap),
                  "cuMemHostAlloc (start gate word)", sizeof(uint32_t));
    word_ = new (p) std::atomic<uint32_t>(0);
    const CUresult r = d_.cuMemHostGetDevicePointer_v2(&device_word_, p, 0);
    if (r != CUDA_SUCCESS) {
      d_.cuMemFreeHost(p);
      throw RunError(cuda_error_text("cuMemHostGetDevicePointer_v2 (start gate word)", r));
    }
    watcher_ = std::thread([this] { watch_loop(); });
  }
  ~CudaGate() override {
    release();
    {
      std::lock_guard<std::mutex> lock(m_);
      stop_ = true;
    }
    cv_.notify_all();
    watcher_.join();
    for (CUstream s : held_) d_.cuStreamSynchronize(s);  // every hold has read the word
    d_.cuMemFreeHost(word_);
  }
  void hold(Stream& s) override {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!let_go_.empty()) return;  // a stall let the streams go: ungated from then on
      if (!watch_.armed.load(std::memory_order_relaxed)) {
        watch_.armed.store(true, std::memory_order_relaxed);
        cv_.notify_all();
      }
    }
    const CUstream st = stream_of(s);
    {
      WatchedCall call(watch_);
      if (d_.cuStreamWaitValue32_v2) {
        cuda_check(d_.cuStreamWaitValue32_v2(st, device_word_, round_, kStreamWaitValueGeq),
                   "cuStreamWaitValue32_v2 (start gate)");
      } else {
        // ds_gate_kernel(flag, value): a .u64 and a .u32 parameter.
        CUdeviceptr flag = device_word_;
        unsigned int value = round_;
        void* params[] = {&flag, &value};
        cuda_check(d_.cuLaunchKernel(spin_, 1, 1, 1, 1, 1, 1, 0, st, params, nullptr),
                   "cuLaunchKernel(ds_gate_kernel)");
      }
    }
    if (std::find(held_.begin(), held_.end(), st) == held_.end()) held_.push_back(st);
  }
  void release() override {
    std::lock_guard<std::mutex> lock(m_);
    word_->store(round_, std::memory_order_release);
    ++round_;
    watch_.armed.store(false, std::memory_order_relaxed);
  }
  std::string let_go() const override {
    std::lock_guard<std::mutex> lock(m_);
    return let_go_;
  }

 private:
  // The watcher: idle until a round's first hold, then a look at the queuing
  // call under way every kGateWatchPollNs until release().
  void watch_loop() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stop_) {
      if (!watch_.armed.load(std::memory_order_relaxed)) {
        cv_.wait(lock);
        continue;
      }
      cv_.wait_for(lock, std::chrono::nanoseconds(kGateWatchPollNs));
      if (stop_ || !watch_.armed.load(std::memory_order_relaxed)) continue;
      const int64_t since = watch_.since.load(std::memory_order_relaxed);
      if (since == 0 || now_ns() - since < kGateStallNs) continue;
      // Under the lock: the round stored is the one being held, never an older one.
      word_->store(round_, std::memory_order_release);
      watch_.armed.store(false, std::memory_order_relaxed);
      let_go_ = "a driver call queuing work did not return within " + std::to_string(kGateStallNs / 1000000000) +
                " s while the streams were held (their hardware queue was full), and the gate let them go";
    }
  }

  const CudaDriver& d_;
  CUfunction spin_;
  SubmitWatch& watch_;
  std::atomic<uint32_t>* word_ = nullptr;
  CUdeviceptr device_word_ = 0;
  uint32_t round_ = 1;  // written under m_; read unlocked only by hold(), on the thread that writes it
  std::vector<CUstream> held_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::string let_go_;
  std::thread watcher_;
};

// A CUDA graph of independent memcpy nodes, instantiated once and launched for
// every submission of the same descriptor list (the batch path of drivers
// without cuMemcpyBatchAsync).
struct CopyGraph {
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
};

// One descriptor list as submitted every iteration, made ready at setup: the
// arrays cuMemcpyBatchAsync takes, or the instantiated graph.
struct PreparedList {
  std::vector<CUdeviceptr> dsts, srcs;
  std::vector<size_t> sizes;
  CopyGraph graph;
};

// A gather list made ready at setup: its descriptor table in device memory
// (uploaded once) and the grid that launches it.
struct PreparedGather {
  std::unique_ptr<Memory> table;
  unsigned long long count = 0;
  GatherGrid grid{1, 1};
};

// Threads per block of the SM kernels; blocks per SM at most.
constexpr unsigned kKernelThreads = 256;
constexpr unsigned kKernelBlocksPerSm = 8;

std::string no_batch_reason() {
  return "this driver has neither cuMemcpyBatchAsync (CUDA 12.8+) nor CUDA graphs with "
         "cuGraphInstantiateWithFlags (CUDA 11.4+), so there are no batched copies";
}

class CudaDevice : public Device {
 public:
  CudaDevice(const CudaDriver& d, int index) : d_(d), index_(index) {
    const std::string at = " for device " + std::to_string(index);
    cuda_check(d_.cuDeviceGet(&dev_, index), "cuDeviceGet(" + std::to_string(index) + ")");
    cuda_check(d_.cuDevicePrimaryCtxRetain(&ctx_, dev_), "cuDevicePrimaryCtxRetain" + at);
    const CUresult r = d_.cuCtxSetCurrent(ctx_);
    if (r != CUDA_SUCCESS) {
      d_.cuDevicePrimaryCtxRelease_v2(dev_);
      throw RunError(cuda_error_text("cuCtxSetCurrent" + at, r));
    }
    if (d_.cuDeviceGetAttribute(&sm_count_, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_) != CUDA_SUCCESS ||
        sm_count_ < 1)
      sm_count_ = 1;
  }

  ~CudaDevice() override {
    // Everything made in the context goes before the context is released.
    d_.cuCtxSetCurrent(ctx_);
    prepared_.release_all();
    gathers_.release_all();
    if (module_) d_.cuModuleUnload(module_);
    d_.cuDevicePrimaryCtxRelease_v2(dev_);
    for (CUdevice peer : peers_) d_.cuDevicePrimaryCtxRelease_v2(peer);
  }

  int index() const override { return index_; }
  void bind_thread() override { cuda_check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent"); }

  uint64_t free_memory() override {
    size_t free = 0, total = 0;
    cuda_check(d_.cuMemGetInfo_v2(&free, &total), "cuMemGetInfo_v2");
    return free;
  }

  std::unique_ptr<Memory> alloc_device(size_t bytes) override {
    CUdeviceptr p = 0;
    check_sized(d_.cuMemAlloc_v2(&p, bytes), "cuMemAlloc_v2", bytes);
    const CudaDriver* d = &d_;
    return std::make_unique<Memory>(nullptr, vptr(p), bytes, [d, p] { d->cuMemFree_v2(p); });
  }

  std::unique_ptr<Memory> alloc_pinned(size_t bytes, bool mapped) override {
    void* p = nullptr;
    const unsigned flags = kMemHostAllocPortable | (mapped ? kMemHostAllocDeviceMap : 0u);
    check_pinning(d_.cuMemHostAlloc(&p, bytes, flags), "cuMemHostAlloc", bytes);
    const CudaDriver* d = &d_;
    auto mem = std::make_unique<Memory>(p, p, bytes, [d, p] { d->cuMemFreeHost(p); });
    if (!mapped) return mem;  // unified addressing: the host pointer is the device address
    CUdeviceptr dev = 0;
    cuda_check(d_.cuMemHostGetDevicePointer_v2(&dev, p, 0), "cuMemHostGetDevicePointer_v2");
    auto owner = std::make_shared<std::unique_ptr<Memory>>(std::move(mem));
    return std::make_unique<Memory>(p, vptr(dev), bytes, [owner] { owner->reset(); });
  }

  std::unique_ptr<Memory> register_host(void* ptr, size_t bytes, bool /*mapped*/) override {
    // Always mapped: every registered kind is also a direct-path source.
    check_pinning(d_.cuMemHostRegister_v2(ptr, bytes, kMemHostRegisterPortable | kMemHostRegisterDeviceMap),
                  "cuMemHostRegister_v2", bytes);
    const CudaDriver* d = &d_;
    CUdeviceptr dev = 0;
    const CUresult r = d_.cuMemHostGetDevicePointer_v2(&dev, ptr, 0);
    if (r != CUDA_SUCCESS) {
      d_.cuMemHostUnregister(ptr);
      throw RunError(cuda_error_text("cuMemHostGetDevicePointer_v2", r));
    }
    return std::make_unique<Memory>(ptr, vptr(dev), bytes, [d, ptr] { d->cuMemHostUnregister(ptr); });
  }

  std::unique_ptr<Stream> create_stream() override { return std::make_unique<CudaStream>(d_); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<CudaEvent>(d_, CU_EVENT_DEFAULT); }
  std::unique_ptr<Event> create_polling_event() override {
    return std::make_unique<CudaEvent>(d_, CU_EVENT_DISABLE_TIMING);
  }
  std::unique_ptr<StreamGate> create_gate() override {
    CUfunction spin = nullptr;
    if (!d_.cuStreamWaitValue32_v2) {
      load_module();
      cuda_check(d_.cuModuleGetFunction(&spin, module_, kGateKernelName),
                 std::string("cuModuleGetFunction(") + kGateKernelName + ")");
    }
    return std::make_unique<CudaGate>(d_, spin, watch_);
  }
  void record(Event& e, Stream& s) override {
    WatchedCall call(watch_);
    cuda_check(d_.cuEventRecord(event_of(e), stream_of(s)), "cuEventRecord");
  }
  void synchronize(Stream& s) override {
    cuda_check(d_.cuStreamSynchronize(stream_of(s)), "cuStreamSynchronize");
  }
  bool query(Event& e, Stream&) override {
    const CUresult r = d_.cuEventQuery(event_of(e));
    if (r == CUDA_ERROR_NOT_READY) return false;
    cuda_check(r, "cuEventQuery");
    return true;
  }
  int64_t elapsed_ns(Event& from, Event& to) override {
    float ms = 0;
    // cuEventElapsedTime_v2 (CUDA 12.8+, what cuda.h calls cuEventElapsedTime
    // since) where the driver has it; the original otherwise. Same signature.
    if (d_.cuEventElapsedTime_v2)
      cuda_check(d_.cuEventElapsedTime_v2(&ms, event_of(from), event_of(to)), "cuEventElapsedTime_v2");
    else
      cuda_check(d_.cuEventElapsedTime(&ms, event_of(from), event_of(to)), "cuEventElapsedTime");
    return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
  }

  void copy_async(const CopyDesc& c, CopyDir dir, Stream& s) override {
    const CUstream st = stream_of(s);
    WatchedCall call(watch_);
    switch (dir) {
      case CopyDir::kH2D:
        return check_sized(d_.cuMemcpyHtoDAsync_v2(dptr(c.dst), c.src, c.bytes, st), "cuMemcpyHtoDAsync_v2",
                           c.bytes);
      case CopyDir::kD2H:
        return check_sized(d_.cuMemcpyDtoHAsync_v2(c.dst, dptr(c.src), c.bytes, st), "cuMemcpyDtoHAsync_v2",
                           c.bytes);
      case CopyDir::kD2D:
        return check_sized(d_.cuMemcpyDtoDAsync_v2(dptr(c.dst), dptr(c.src), c.bytes, st),
                           "cuMemcpyDtoDAsync_v2", c.bytes);
      case CopyDir::kH2H:
        return check_sized(d_.cuMemcpyAsync(dptr(c.dst), dptr(c.src), c.bytes, st), "cuMemcpyAsync", c.bytes);
    }
  }

  void copy_batch(const CopyDesc* descs, size_t n, CopyDir, Stream& s) override {
    batch(descs, n, stream_of(s));
  }

  // One IO task: its fragments in one batched submission (Method BATCH).
  void direct_task(const CopyDesc* descs, size_t n, Stream& s) override { batch(descs, n, stream_of(s)); }

  // At setup: whatever the list's submissions need is made now, so the timed
  // iterations only submit.
  void prepare_batch(const CopyDesc* descs, size_t n, CopyDir) override { prepare(descs, n); }
  void prepare_direct(const CopyDesc* descs, size_t n) override { prepare(descs, n); }
  void prepare_kernel_copy() override {
    if (!function_) load_kernel();
  }
  void prepare_kernel_gather(const CopyDesc* descs, size_t n) override {
    if (n > 0) gather_table(descs, n);
  }

  bool enable_peer_access(int peer, std::string* why) override {
    if (peer == index_) return true;
    const std::string pair = std::to_string(index_) + ", " + std::to_string(peer);
    CUdevice peer_dev = 0;
    cuda_check(d_.cuDeviceGet(&peer_dev, peer), "cuDeviceGet(" + std::to_string(peer) + ")");
    int can = 0;
    cuda_check(d_.cuDeviceCanAccessPeer(&can, dev_, peer_dev), "cuDeviceCanAccessPeer(" + pair + ")");
    if (!can) {
      if (why) *why = "cuDeviceCanAccessPeer(" + pair + ") says no";
      return false;
    }
    // Access is granted to the peer's context: its primary context, where its
    // memory lives; held until this device is closed.
    CUcontext peer_ctx = nullptr;
    cuda_check(d_.cuDevicePrimaryCtxRetain(&peer_ctx, peer_dev),
               "cuDevicePrimaryCtxRetain for device " + std::to_string(peer));
    peers_.push_back(peer_dev);
    cuda_check(d_.cuCtxSetCurrent(ctx_), "cuCtxSetCurrent");
    const CUresult r = d_.cuCtxEnablePeerAccess(peer_ctx, 0);
    if (r == CUDA_SUCCESS || r == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) return true;
    if (r == CUDA_ERROR_PEER_ACCESS_UNSUPPORTED || r == CUDA_ERROR_TOO_MANY_PEERS) {
      if (why) *why = cuda_error_text("cuCtxEnablePeerAccess(" + pair + ")", r);
      return false;
    }
    throw RunError(cuda_error_text("cuCtxEnablePeerAccess(" + pair + ")", r));
  }

  void kernel_copy(const CopyDesc& c, Stream& s) override {
    if (!function_) load_kernel();  // prepare_kernel_copy did it, unless not called
    CUdeviceptr dst = dptr(c.dst), src = dptr(c.src);
    unsigned long long bytes = c.bytes;
    const KernelCopyPlan plan = plan_kernel_copy(dst, src);
    unsigned long long head = plan.head, width = plan.width;
    // ds_copy_kernel(dst, src, bytes, head, width): the PTX's five .u64 parameters.
    void* params[] = {&dst, &src, &bytes, &head, &width};
    const unsigned long long units = (bytes - std::min(head, bytes)) / width;
    const unsigned long long want = (std::max<unsigned long long>(1, units) + kKernelThreads - 1) / kKernelThreads;
    const unsigned blocks = static_cast<unsigned>(
        std::max<unsigned long long>(1, std::min<unsigned long long>(want, max_blocks())));
    WatchedCall call(watch_);
    check_sized(d_.cuLaunchKernel(function_, blocks, 1, 1, kKernelThreads, 1, 1, 0, stream_of(s), params, nullptr),
                "cuLaunchKernel(ds_copy_kernel)", c.bytes);
  }

  void kernel_gather(const CopyDesc* descs, size_t n, Stream& s) override {
    if (n == 0) return;
    const PreparedGather& g = gather_table(descs, n);  // prepared at setup: found, not made
    // ds_gather_kernel(table, count): two .u64 parameters.
    CUdeviceptr table = dptr(g.table->device_ptr());
    unsigned long long count = g.count;
    void* params[] = {&table, &count};
    WatchedCall call(watch_);
    const CUresult r =
        d_.cuLaunchKernel(gather_fn_, g.grid.x, g.grid.y, 1, kKernelThreads, 1, 1, 0, stream_of(s), params, nullptr);
    if (r != CUDA_SUCCESS)
      throw RunError(cuda_error_text("cuLaunchKernel(ds_gather_kernel, " + std::to_string(n) + " copies)", r));
  }

  void copy_sync(const CopyDesc& c, CopyDir dir) override {
    switch (dir) {
      case CopyDir::kH2D:
        check_sized(d_.cuMemcpyHtoD_v2(dptr(c.dst), c.src, c.bytes), "cuMemcpyHtoD_v2", c.bytes);
        break;
      case CopyDir::kD2H:
        check_sized(d_.cuMemcpyDtoH_v2(c.dst, dptr(c.src), c.bytes), "cuMemcpyDtoH_v2", c.bytes);
        break;
      case CopyDir::kD2D:
      case CopyDir::kH2H:
        check_sized(d_.cuMemcpy(dptr(c.dst), dptr(c.src), c.bytes), "cuMemcpy", c.bytes);
        break;
    }
    // cuMemcpyHtoD from pageable memory returns once the source is staged, and
    // device-to-device cuMemcpy does not wait at all; our streams are
    // non-blocking and would not wait for that legacy-stream work. Wait here,
    // so a fill is in place before the first iteration.
    cuda_check(d_.cuCtxSynchronize(), "cuCtxSynchronize");
  }

 private:
  void batch(const CopyDesc* descs, size_t n, CUstream st) {
    if (n == 0) return;
    const PreparedList& p = prepared(descs, n);
    WatchedCall call(watch_);
    if (d_.cuMemcpyBatchAsync) return batch_native(p, st);
    const CUresult r = d_.cuGraphLaunch(p.graph.exec, st);
    if (r != CUDA_SUCCESS)
      throw RunError(cuda_error_text("cuGraphLaunch(" + std::to_string(n) + " memcpy nodes)", r));
  }

  void prepare(const CopyDesc* descs, size_t n) {
    if (n == 0) return;
    if (!d_.has_batch()) throw RunError("batched copies: " + no_batch_reason());
    prepared(descs, n);
  }

  // The prepared entry for this list, made (or remade) when missing or stale.
  const PreparedList& prepared(const CopyDesc* descs, size_t n) {
    return prepared_.get(descs, n, [this](const CopyDesc* d, size_t count) {
      if (!d_.has_batch()) throw RunError("batched copies: " + no_batch_reason());
      PreparedList p;
      if (d_.cuMemcpyBatchAsync) {
        p.dsts.resize(count);
        p.srcs.resize(count);
        p.sizes.resize(count);
        for (size_t i = 0; i < count; ++i) {
          p.dsts[i] = dptr(d[i].dst);
          p.srcs[i] = dptr(d[i].src);
          p.sizes[i] = d[i].bytes;
        }
      } else {
        p.graph = build_graph(d, count);
      }
      return p;
    });
  }

  void batch_native(const PreparedList& p, CUstream st) {
    const size_t n = p.sizes.size();
    // One attribute for every copy: sources are read in stream order.
    CUmemcpyAttributes attr{};
    attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
    size_t attr_index = 0;
    size_t fail = SIZE_MAX;
    // The driver takes non-const arrays but does not write them.
    const CUresult r = d_.cuMemcpyBatchAsync(const_cast<CUdeviceptr*>(p.dsts.data()),
                                             const_cast<CUdeviceptr*>(p.srcs.data()),
                                             const_cast<size_t*>(p.sizes.data()), n, &attr, &attr_index, 1,
                                             &fail, st);
    if (r != CUDA_SUCCESS)
      throw RunError(cuda_error_text("cuMemcpyBatchAsync(" + std::to_string(n) + " copies" +
                                         (fail < n ? ", failed at " + std::to_string(fail) : "") + ")",
                                     r));
  }

  void destroy_graph(CopyGraph& g) {
    if (g.exec) d_.cuGraphExecDestroy(g.exec);
    if (g.graph) d_.cuGraphDestroy(g.graph);
    g = CopyGraph{};
  }

  CopyGraph build_graph(const CopyDesc* descs, size_t n) {
    CopyGraph g;
    cuda_check(d_.cuGraphCreate(&g.graph, 0), "cuGraphCreate");
    try {
      for (size_t i = 0; i < n; ++i) {
        CUDA_MEMCPY3D p{};
        p.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
        p.srcDevice = dptr(descs[i].src);
        p.srcPitch = descs[i].bytes;
        p.srcHeight = 1;
        p.dstMemoryType = CU_MEMORYTYPE_UNIFIED;
        p.dstDevice = dptr(descs[i].dst);
        p.dstPitch = descs[i].bytes;
        p.dstHeight = 1;
        p.WidthInBytes = descs[i].bytes;
        p.Height = 1;
        p.Depth = 1;
        CUgraphNode node = nullptr;
        check_sized(d_.cuGraphAddMemcpyNode(&node, g.graph, nullptr, 0, &p, ctx_), "cuGraphAddMemcpyNode",
                    descs[i].bytes);
      }
      cuda_check(d_.cuGraphInstantiateWithFlags(&g.exec, g.graph, 0), "cuGraphInstantiateWithFlags");
    } catch (...) {
      d_.cuGraphDestroy(g.graph);
      throw;
    }
    return g;
  }

  unsigned max_blocks() const { return kKernelBlocksPerSm * static_cast<unsigned>(sm_count_); }

  // The list's descriptor table on the device, made and uploaded when missing or
  // stale (at setup: prepare_kernel_gather), with its grid.
  const PreparedGather& gather_table(const CopyDesc* descs, size_t n) {
    return gathers_.get(descs, n, [this](const CopyDesc* d, size_t count) {
      if (!gather_fn_) {
        load_module();
        cuda_check(d_.cuModuleGetFunction(&gather_fn_, module_, kGatherKernelName),
                   std::string("cuModuleGetFunction(") + kGatherKernelName + ")");
      }
      std::vector<GatherDescriptor> host(count);
      uint64_t largest = 0;
      for (size_t i = 0; i < count; ++i) {
        host[i] = plan_gather_descriptor(dptr(d[i].dst), dptr(d[i].src), d[i].bytes);
        largest = std::max(largest, gather_units(host[i]));
      }
      const size_t bytes = count * sizeof(GatherDescriptor);
      PreparedGather g;
      g.table = alloc_device(bytes);
      copy_sync({g.table->device_ptr(), host.data(), bytes}, CopyDir::kH2D);
      g.count = count;
      g.grid = plan_gather_grid(count, largest, kKernelThreads, max_blocks());
      return g;
    });
  }

  void load_module() {
    if (!module_) {
      cuda_check(d_.cuModuleLoadData(&module_, kCopyKernelPtx),
                 std::string("cuModuleLoadData(copy kernel PTX from ") + kCopyKernelPtxFrom + ")");
    }
  }

  void load_kernel() {
    load_module();
    cuda_check(d_.cuModuleGetFunction(&function_, module_, kCopyKernelName),
               std::string("cuModuleGetFunction(") + kCopyKernelName + ")");
  }

  const CudaDriver& d_;
  int index_;
  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
  int sm_count_ = 1;
  CUmodule module_ = nullptr;
  CUfunction function_ = nullptr;
  CUfunction gather_fn_ = nullptr;
  std::vector<CUdevice> peers_;  // primary contexts retained for peer access
  SubmitWatch watch_;             // this device's queuing calls, for its start gate
  PreparedLists<PreparedList> prepared_{[this](PreparedList& p) { destroy_graph(p.graph); }};
  PreparedLists<PreparedGather> gathers_;  // ds_gather_kernel's tables, by list
};

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

class CudaBackend : public Backend {
 public:
  std::string name() const override { return "cuda"; }
  std::string label_prefix() const override { return "cuda"; }
  std::string direct_method() const override { return "BATCH"; }
  bool copies_on_host_cpus() const override { return cuda_driver().copies_on_host_cpus; }
  // cuEventElapsedTime: "a resolution of around 0.5 microseconds" (CUDA driver API docs).
  std::string event_timer() const override { return "CUDA events"; }
  int64_t event_resolution_ns() const override { return 500; }
  bool has(Capability cap) const override { return cap != Capability::kHostMemcpy; }
  // The gate's bound is per hardware queue: a context's streams share
  // CUDA_DEVICE_MAX_CONNECTIONS of them, read as the driver reads it.
  int gate_shared_queues() const override { return connections().count; }
  std::string gate_queues_setting() const override { return connections().setting; }
  std::string gate_hazard(GateHazard hazard) const override {
    switch (hazard) {
      case GateHazard::kPageableHost:
        return "the CUDA driver may wait for the stream inside a copy of pageable host memory (it stages the "
               "bytes through pinned memory of its own), which would hang behind a held stream";
      case GateHazard::kStagedPeer:
        return "without peer access the CUDA driver stages device-to-device copies through the host and may "
               "wait for the stream inside the copy call, which would hang behind a held stream";
    }
    return {};
  }

  void init_process() override { cuda_driver(); }

  BackendProbe probe() override {
    const CudaDriver& d = cuda_driver();
    BackendProbe p;
    p.library_path = d.library_path;
    int v = 0;
    cuda_check(d.cuDriverGetVersion(&v), "cuDriverGetVersion");
    p.runtime_version = "CUDA driver " + version_text(v) + " (" + std::to_string(v) + ")";
    cuda_check(d.cuDeviceGetCount(&p.device_count), "cuDeviceGetCount");
    // Free memory needs each device's context; creating them one after another
    // would cost a second or more on an 8-GPU server, so in parallel.
    p.devices.resize(static_cast<size_t>(p.device_count));
    std::vector<std::string> errors(p.devices.size());
    std::vector<std::thread> threads;
    for (int i = 0; i < p.device_count; ++i)
      threads.emplace_back([&, i] {
        try {
          p.devices[static_cast<size_t>(i)] = describe(d, i);
        } catch (const std::exception& e) {
          errors[static_cast<size_t>(i)] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (const auto& e : errors)
      if (!e.empty()) throw RunError(e);
    std::string batched = "none: " + no_batch_reason();
    if (d.cuMemcpyBatchAsync)
      batched = "native cuMemcpyBatchAsync";
    else if (d.has_graphs())
      batched = "CUDA graph of memcpy nodes (the driver has no cuMemcpyBatchAsync)";
    p.facts.emplace_back("batched copies", batched);
    if (!d.has_batch()) p.direct_unavailable = no_batch_reason();
    p.facts.emplace_back("event timing",
                         d.cuEventElapsedTime_v2 ? "cuEventElapsedTime_v2" : "cuEventElapsedTime");
    p.facts.emplace_back("entry points", "bound through " + d.resolved_by);
    std::string absent;
    for (const auto& a : d.absent) absent += (absent.empty() ? "" : "; ") + a;
    p.facts.emplace_back("not in this driver", absent.empty() ? "none" : absent);
    p.facts.emplace_back("SM copy kernel", std::string("PTX from ") + kCopyKernelPtxFrom);
    p.facts.emplace_back("stream start gate",
                         std::string(d.cuStreamWaitValue32_v2
                                         ? "cuStreamWaitValue32_v2 on a mapped host word"
                                         : "spin kernel ds_gate_kernel on a mapped host word (the driver has no "
                                           "cuStreamWaitValue32_v2, CUDA 11.7+)") +
                             "; at most " + std::to_string(gate_queue_limit()) + " operations held per hardware " +
                             "queue, a device's streams sharing " + std::to_string(connections().count) + " (" +
                             connections().setting + ")");
    p.loaded = true;
    return p;
  }

  std::unique_ptr<Device> open_device(int index) override {
    return std::make_unique<CudaDevice>(cuda_driver(), index);
  }

 private:
  static CudaConnections connections() { return cuda_connections(std::getenv("CUDA_DEVICE_MAX_CONNECTIONS")); }

  static DeviceInfo describe(const CudaDriver& d, int i) {
    CUdevice dev = 0;
    cuda_check(d.cuDeviceGet(&dev, i), "cuDeviceGet(" + std::to_string(i) + ")");
    char name[256] = {};
    cuda_check(d.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
    DeviceInfo info;
    info.index = i;
    info.kind = "GPU";
    info.name = name;
    char bus[64] = {};
    if (d.cuDeviceGetPCIBusId(bus, sizeof bus, dev) == CUDA_SUCCESS) {
      info.pci_bus_id = sysfs_pci_address(bus);
      info.numa_node = pci_numa_node(info.pci_bus_id);
    }
    CudaDevice probe_dev(d, i);  // makes its context current on this thread
    size_t free = 0, total = 0;
    cuda_check(d.cuMemGetInfo_v2(&free, &total), "cuMemGetInfo_v2");
    info.free_bytes = free;
    info.total_bytes = total;
    return info;
  }
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend() { return std::make_unique<CudaBackend>(); }

}  // namespace ds
