// The CUDA test double's own rules, called directly (dlopen, no dev-sandbox):
// what it refuses and how its cuGetProcAddress answers. The e2e tests rely on
// these rules to catch mistakes in the backend; here each rule is shown to
// fire on the mistake it is for.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_api.h"

using namespace ds::cu;

namespace {

// One build of the double, opened in this process and initialised.
class Double {
 public:
  explicit Double(const char* path) {
    h_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h_) return;
    init = sym<PFN_cuInit>("cuInit");
    if (init(0) != CUDA_SUCCESS) return;
    ok_ = true;
  }
  ~Double() {
    if (h_) dlclose(h_);
  }
  bool ok() const { return ok_; }
  template <typename F>
  F sym(const char* name) const {
    return reinterpret_cast<F>(dlsym(h_, name));
  }

  PFN_cuInit init = nullptr;

 private:
  void* h_ = nullptr;
  bool ok_ = false;
};

// Two devices' primary contexts, each with a non-blocking stream, an event and
// some device memory; device 0's context current at the end.
struct TwoDevices {
  explicit TwoDevices(const Double& d) : d(d) {
    retain = d.sym<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain");
    release = d.sym<PFN_cuDevicePrimaryCtxRelease_v2>("cuDevicePrimaryCtxRelease_v2");
    set_current = d.sym<PFN_cuCtxSetCurrent>("cuCtxSetCurrent");
    stream_create = d.sym<PFN_cuStreamCreate>("cuStreamCreate");
    stream_destroy = d.sym<PFN_cuStreamDestroy_v2>("cuStreamDestroy_v2");
    sync = d.sym<PFN_cuStreamSynchronize>("cuStreamSynchronize");
    event_create = d.sym<PFN_cuEventCreate>("cuEventCreate");
    event_destroy = d.sym<PFN_cuEventDestroy_v2>("cuEventDestroy_v2");
    record = d.sym<PFN_cuEventRecord>("cuEventRecord");
    elapsed = d.sym<PFN_cuEventElapsedTime>("cuEventElapsedTime");
    mem_alloc = d.sym<PFN_cuMemAlloc_v2>("cuMemAlloc_v2");
    mem_free = d.sym<PFN_cuMemFree_v2>("cuMemFree_v2");
    dtod = d.sym<PFN_cuMemcpyDtoDAsync_v2>("cuMemcpyDtoDAsync_v2");
    for (int i = 0; i < 2; ++i) {
      EXPECT_EQ(retain(&ctx[i], i), CUDA_SUCCESS);
      EXPECT_EQ(set_current(ctx[i]), CUDA_SUCCESS);
      EXPECT_EQ(stream_create(&stream[i], CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
      EXPECT_EQ(event_create(&event[i], CU_EVENT_DEFAULT), CUDA_SUCCESS);
      EXPECT_EQ(event_create(&event2[i], CU_EVENT_DEFAULT), CUDA_SUCCESS);
      EXPECT_EQ(mem_alloc(&mem[i], 4096), CUDA_SUCCESS);
    }
    EXPECT_EQ(set_current(ctx[0]), CUDA_SUCCESS);
  }
  ~TwoDevices() {
    for (int i = 0; i < 2; ++i) {
      set_current(ctx[i]);
      sync(stream[i]);
      stream_destroy(stream[i]);
      event_destroy(event[i]);
      event_destroy(event2[i]);
      mem_free(mem[i]);
      release(i);
    }
    set_current(nullptr);
  }

  const Double& d;
  PFN_cuDevicePrimaryCtxRetain retain;
  PFN_cuDevicePrimaryCtxRelease_v2 release;
  PFN_cuCtxSetCurrent set_current;
  PFN_cuStreamCreate stream_create;
  PFN_cuStreamDestroy_v2 stream_destroy;
  PFN_cuStreamSynchronize sync;
  PFN_cuEventCreate event_create;
  PFN_cuEventDestroy_v2 event_destroy;
  PFN_cuEventRecord record;
  PFN_cuEventElapsedTime elapsed;
  PFN_cuMemAlloc_v2 mem_alloc;
  PFN_cuMemFree_v2 mem_free;
  PFN_cuMemcpyDtoDAsync_v2 dtod;
  CUcontext ctx[2] = {};
  CUstream stream[2] = {};
  CUevent event[2] = {}, event2[2] = {};
  CUdeviceptr mem[2] = {};
};

const Double& full() {
  static Double d(DS_CUDA_DOUBLE);
  return d;
}

}  // namespace

// docs/backends.md (The cuda backend) promises non-blocking streams; the double holds us to it.
TEST(CudaDouble, RefusesBlockingStreams) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  CUstream s = nullptr;
  EXPECT_EQ(t.stream_create(&s, CU_STREAM_DEFAULT), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(t.stream_create(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  t.stream_destroy(s);
}

TEST(CudaDouble, AStreamIsUsedOnlyInItsOwnContext) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  // Device 0 current: device 1's stream is not a handle here.
  EXPECT_EQ(t.dtod(t.mem[0], t.mem[0] + 2048, 1024, t.stream[1]), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(t.dtod(t.mem[0], t.mem[0] + 2048, 1024, t.stream[0]), CUDA_SUCCESS);
  EXPECT_EQ(t.record(t.event[1], t.stream[1]), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_EQ(t.set_current(t.ctx[1]), CUDA_SUCCESS);
  EXPECT_EQ(t.dtod(t.mem[1], t.mem[1] + 2048, 1024, t.stream[1]), CUDA_SUCCESS);
  EXPECT_EQ(t.record(t.event[1], t.stream[1]), CUDA_SUCCESS);
}

TEST(CudaDouble, AnEventRecordsOnlyOnAStreamOfItsContext) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  // Device 0 current and device 0's stream, but device 1's event.
  EXPECT_EQ(t.record(t.event[1], t.stream[0]), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(t.record(t.event[0], t.stream[0]), CUDA_SUCCESS);
}

TEST(CudaDouble, ElapsedTimeIsBetweenEventsOfOneContext) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(t.set_current(t.ctx[i]), CUDA_SUCCESS);
    ASSERT_EQ(t.record(t.event[i], t.stream[i]), CUDA_SUCCESS);
    ASSERT_EQ(t.record(t.event2[i], t.stream[i]), CUDA_SUCCESS);
    ASSERT_EQ(t.sync(t.stream[i]), CUDA_SUCCESS);
  }
  float ms = 0;
  EXPECT_EQ(t.elapsed(&ms, t.event[0], t.event2[1]), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(t.elapsed(&ms, t.event[1], t.event2[1]), CUDA_SUCCESS);
}

namespace {

// A module of the PTX `entry`, device 0 current, and a launch of its first
// function with `params`.
struct Kernel {
  Kernel(const TwoDevices& t, const std::string& ptx) {
    const Double& d = t.d;
    EXPECT_EQ(d.sym<PFN_cuModuleLoadData>("cuModuleLoadData")(&module, ptx.c_str()), CUDA_SUCCESS);
    get = d.sym<PFN_cuModuleGetFunction>("cuModuleGetFunction");
    launch = d.sym<PFN_cuLaunchKernel>("cuLaunchKernel");
    unload = d.sym<PFN_cuModuleUnload>("cuModuleUnload");
  }
  ~Kernel() { unload(module); }
  CUresult run(CUstream s, void** params) {
    CUfunction f = nullptr;
    const CUresult r = get(&f, module, "ds_copy_kernel");
    if (r != CUDA_SUCCESS) return r;
    return launch(f, 1, 1, 1, 256, 1, 1, 0, s, params, nullptr);
  }
  CUmodule module = nullptr;
  PFN_cuModuleGetFunction get;
  PFN_cuLaunchKernel launch;
  PFN_cuModuleUnload unload;
};

std::string ptx_with_params(int n) {
  std::string p = "// made by the test\n.version 6.3\n.target sm_75\n.address_size 64\n.visible .entry ds_copy_kernel(\n";
  for (int i = 0; i < n; ++i)
    p += "\t.param .u64 ds_copy_kernel_param_" + std::to_string(i) + (i + 1 < n ? ",\n" : "\n");
  return p + ")\n{\n\tret;\n}\n";
}

}  // namespace

TEST(CudaDouble, KernelLaunchChecksTheAlignmentPlanAndCopiesItsThreeParts) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  Kernel k(t, ptx_with_params(5));
  // Device 0 memory: bytes 3.. to 2048 + 3..; both 3 mod 16: a head of 13, then 16-byte units.
  auto* base = reinterpret_cast<unsigned char*>(static_cast<uintptr_t>(t.mem[0]));
  for (int i = 0; i < 4096; ++i) base[i] = static_cast<unsigned char>(i * 7 + 1);
  std::memset(base + 2048, 0, 2048);
  CUdeviceptr dst = t.mem[0] + 2048 + 3, src = t.mem[0] + 3;
  unsigned long long bytes = 1000, head = 13, width = 16;
  void* params[] = {&dst, &src, &bytes, &head, &width};
  ASSERT_EQ(k.run(t.stream[0], params), CUDA_SUCCESS);
  ASSERT_EQ(t.sync(t.stream[0]), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(base + 2048 + 3, base + 3, 1000), 0) << "head, units and tail all copied";
  EXPECT_EQ(base[2048 + 2], 0);
  EXPECT_EQ(base[2048 + 1003], 0) << "nothing past the end";

  // A head that leaves dst + head off the width, or a head as wide as the width.
  head = 12;
  EXPECT_EQ(k.run(t.stream[0], params), CUDA_ERROR_MISALIGNED_ADDRESS);
  head = 13 + 16;
  EXPECT_EQ(k.run(t.stream[0], params), CUDA_ERROR_MISALIGNED_ADDRESS);
  // Ends misaligned differently: 16 cannot work, 8 cannot (3 vs 4 mod 8), 1 can.
  src = t.mem[0] + 4;
  head = 13;
  EXPECT_EQ(k.run(t.stream[0], params), CUDA_ERROR_MISALIGNED_ADDRESS);
  head = 0;
  width = 1;
  EXPECT_EQ(k.run(t.stream[0], params), CUDA_SUCCESS);
  width = 3;
  EXPECT_EQ(k.run(t.stream[0], params), CUDA_ERROR_MISALIGNED_ADDRESS) << "not a load width";
  ASSERT_EQ(t.sync(t.stream[0]), CUDA_SUCCESS);
}

TEST(CudaDouble, KernelLaunchReadsTheParametersThePtxDeclares) {
  ASSERT_TRUE(full().ok());
  TwoDevices t(full());
  Kernel old(t, ptx_with_params(3));  // the kernel as it was: (dst, src, bytes)
  CUdeviceptr dst = t.mem[0] + 2048, src = t.mem[0];
  unsigned long long bytes = 1000, head = 0, width = 16;
  void* params[] = {&dst, &src, &bytes, &head, &width};
  EXPECT_EQ(old.run(t.stream[0], params), CUDA_ERROR_NOT_SUPPORTED) << "not the kernel we run";
  Kernel now(t, ptx_with_params(5));
  EXPECT_EQ(now.run(t.stream[0], params), CUDA_SUCCESS);
  ASSERT_EQ(t.sync(t.stream[0]), CUDA_SUCCESS);
}

namespace {

struct Answer {
  CUresult r;
  bool fn;
  CUdriverProcAddressQueryResult status;
};

Answer lookup(const Double& d, const char* symbol, int version) {
  auto gpa = d.sym<PFN_cuGetProcAddress_v2>("cuGetProcAddress_v2");
  Answer a{CUDA_ERROR_UNKNOWN, false, CU_GET_PROC_ADDRESS_SUCCESS};
  if (!gpa) return a;
  void* fn = reinterpret_cast<void*>(&lookup);
  a.r = gpa(symbol, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &a.status);
  a.fn = fn != nullptr;
  return a;
}

}  // namespace

TEST(CudaDouble, GetProcAddressAnswersAsTheDriverDocuments) {
  ASSERT_TRUE(full().ok());
  Answer a = lookup(full(), "cuMemcpyBatchAsync", 12080);
  EXPECT_EQ(a.r, CUDA_SUCCESS);
  EXPECT_TRUE(a.fn);
  EXPECT_EQ(a.status, CU_GET_PROC_ADDRESS_SUCCESS);
  // Newer than the driver (12.8): CUDA_ERROR_INVALID_VALUE.
  a = lookup(full(), "cuMemcpyBatchAsync", 13000);
  EXPECT_EQ(a.r, CUDA_ERROR_INVALID_VALUE);
  EXPECT_FALSE(a.fn);
  // Known, but no variant that old: CUDA_SUCCESS, NULL, VERSION_NOT_SUFFICIENT.
  a = lookup(full(), "cuMemcpyBatchAsync", 12000);
  EXPECT_EQ(a.r, CUDA_SUCCESS);
  EXPECT_FALSE(a.fn);
  EXPECT_EQ(a.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  // Unknown: CUDA_SUCCESS, NULL, SYMBOL_NOT_FOUND.
  a = lookup(full(), "cuNoSuchEntryPoint", 12000);
  EXPECT_EQ(a.r, CUDA_SUCCESS);
  EXPECT_FALSE(a.fn);
  EXPECT_EQ(a.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  // DS_CUDA_DOUBLE_LACK: not offered, still exported.
  setenv("DS_CUDA_DOUBLE_LACK", "cuGraphLaunch,cuMemcpyBatchAsync", 1);
  a = lookup(full(), "cuMemcpyBatchAsync", 12080);
  unsetenv("DS_CUDA_DOUBLE_LACK");
  EXPECT_EQ(a.r, CUDA_SUCCESS);
  EXPECT_FALSE(a.fn);
  EXPECT_EQ(a.status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_NE(full().sym<void*>("cuMemcpyBatchAsync"), nullptr);

  Double d124(DS_CUDA_DOUBLE_NOBATCH);
  ASSERT_TRUE(d124.ok());
  a = lookup(d124, "cuMemcpyBatchAsync", 12080);
  EXPECT_EQ(a.r, CUDA_ERROR_INVALID_VALUE) << "12.8 is newer than this 12.4 driver";
  EXPECT_FALSE(a.fn);
  a = lookup(d124, "cuEventElapsedTime", 12080);
  EXPECT_EQ(a.r, CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(a.status, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
}

TEST(CudaDouble, Cuda11LookupHasNoV2AndAnswersAsCuda11) {
  Double d113(DS_CUDA_DOUBLE_NOGRAPH);
  ASSERT_TRUE(d113.ok());
  EXPECT_EQ(d113.sym<void*>("cuGetProcAddress_v2"), nullptr) << "CUDA 12.0's export";
  auto gpa = d113.sym<PFN_cuGetProcAddress>("cuGetProcAddress");
  ASSERT_NE(gpa, nullptr);
  void* fn = nullptr;
  EXPECT_EQ(gpa("cuGraphInstantiateWithFlags", &fn, 11040, CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  // No check against its own version: its newest variant, the original ABI.
  EXPECT_EQ(gpa("cuEventElapsedTime", &fn, 12080, CU_GET_PROC_ADDRESS_LEGACY_STREAM), CUDA_SUCCESS);
  EXPECT_EQ(fn, d113.sym<void*>("cuEventElapsedTime"));
}

namespace {

// The double's call log in a file of the test's own, named in DS_CUDA_DOUBLE_LOG
// for its lifetime.
class DoubleLog {
 public:
  DoubleLog() {
    char buf[] = "/tmp/ds-cuda-double-unit-XXXXXX";
    const int fd = mkstemp(buf);
    if (fd >= 0) close(fd);
    path_ = buf;
    setenv("DS_CUDA_DOUBLE_LOG", path_.c_str(), 1);
  }
  ~DoubleLog() {
    unsetenv("DS_CUDA_DOUBLE_LOG");
    std::remove(path_.c_str());
  }
  std::string text() const {
    std::ifstream in(path_);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  // Waits (generously) until the log holds `what`.
  bool wait_for(const std::string& what) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (std::chrono::steady_clock::now() < deadline) {
      if (text().find(what) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return false;
  }

 private:
  std::string path_;
};

// A page-locked word mapped into the device that stream waits hold on, in
// rounds: hold() waits for the current round, open() lets it go and starts the
// next. A failing test still lets every wait go (the destructor opens).
struct GateWord {
  explicit GateWord(const Double& d) : d(d) {
    auto host_alloc = d.sym<PFN_cuMemHostAlloc>("cuMemHostAlloc");
    auto device_ptr = d.sym<PFN_cuMemHostGetDevicePointer_v2>("cuMemHostGetDevicePointer_v2");
    EXPECT_EQ(host_alloc(&host, sizeof(uint32_t), kMemHostAllocPortable | kMemHostAllocDeviceMap), CUDA_SUCCESS);
    word = static_cast<std::atomic<uint32_t>*>(host);
    if (word) word->store(0);
    EXPECT_EQ(device_ptr(&device, host, 0), CUDA_SUCCESS);
  }
  ~GateWord() { open(); }
  CUresult hold(CUstream s) const {
    return d.sym<PFN_cuStreamWaitValue32_v2>("cuStreamWaitValue32_v2")(s, device, round.load(), kStreamWaitValueGeq);
  }
  void open() const {
    if (word) word->store(round.fetch_add(1), std::memory_order_release);
  }
  // Once every stream that waited on it is synchronised.
  void free_word() {
    if (host) d.sym<PFN_cuMemFreeHost>("cuMemFreeHost")(host);
    host = nullptr;
    word = nullptr;
  }
  const Double& d;
  void* host = nullptr;
  std::atomic<uint32_t>* word = nullptr;
  mutable std::atomic<uint32_t> round{1};
  CUdeviceptr device = 0;
};

// Runs `call` on a thread with `ctx` current; ready() once it returned. Before
// it joins the thread it lets `gate` go, so a failed test still ends the call.
class CallThread {
 public:
  CallThread(const TwoDevices& t, CUcontext ctx, const GateWord& gate, std::function<CUresult()> call)
      : gate_(gate) {
    thread_ = std::thread([this, &t, ctx, call] {
      t.set_current(ctx);
      result_.store(call());
      done_.store(true);
    });
  }
  ~CallThread() {
    gate_.open();
    thread_.join();
  }
  bool ready() const { return done_.load(); }
  // Waits (generously) for the call to return; its result, or CUDA_ERROR_UNKNOWN.
  CUresult wait() const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!done_.load() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return done_.load() ? result_.load() : CUDA_ERROR_UNKNOWN;
  }

 private:
  const GateWord& gate_;
  std::atomic<bool> done_{false};
  std::atomic<CUresult> result_{CUDA_ERROR_UNKNOWN};
  std::thread thread_;
};

}  // namespace

// Polling events: CU_EVENT_DISABLE_TIMING is taken and recorded; such an event
// has no time, and its flags are in the log of every query.
TEST(CudaDouble, EventsWithoutTimingArePolledButNotTimed) {
  ASSERT_TRUE(full().ok());
  DoubleLog log;
  TwoDevices t(full());
  auto query = full().sym<PFN_cuEventQuery>("cuEventQuery");
  CUevent polled = nullptr, bad = nullptr;
  EXPECT_EQ(t.event_create(&bad, 0x4), CUDA_ERROR_INVALID_VALUE) << "INTERPROCESS needs DISABLE_TIMING";
  ASSERT_EQ(t.event_create(&polled, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(t.record(t.event[0], t.stream[0]), CUDA_SUCCESS);
  ASSERT_EQ(t.record(polled, t.stream[0]), CUDA_SUCCESS);
  ASSERT_EQ(t.sync(t.stream[0]), CUDA_SUCCESS);
  EXPECT_EQ(query(polled), CUDA_SUCCESS);
  float ms = 0;
  EXPECT_EQ(t.elapsed(&ms, t.event[0], polled), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(query(t.event[0]), CUDA_SUCCESS);
  const std::string text = log.text();
  EXPECT_NE(text.find("flags=2"), std::string::npos) << text;
  EXPECT_NE(text.find("cuEventQuery -> event="), std::string::npos) << text;
  t.event_destroy(polled);
}

// An async copy from pageable memory waits for its stream inside the call, as a
// driver may: on a stream held by a stream wait, the call does not return until
// the wait is let go, and the double says so ("HANG ... held stream"). From
// pinned memory the same call returns at once.
TEST(CudaDouble, APageableCopyOnAHeldStreamWaitsInsideTheCall) {
  ASSERT_TRUE(full().ok());
  DoubleLog log;
  TwoDevices t(full());
  GateWord gate(full());
  auto htod = full().sym<PFN_cuMemcpyHtoDAsync_v2>("cuMemcpyHtoDAsync_v2");
  void* pinned = nullptr;
  ASSERT_EQ(full().sym<PFN_cuMemHostAlloc>("cuMemHostAlloc")(&pinned, 1024, kMemHostAllocPortable), CUDA_SUCCESS);
  std::vector<char> pageable(1024, 0x5a);
  ASSERT_EQ(gate.hold(t.stream[0]), CUDA_SUCCESS);
  {
    CallThread from_pinned(t, t.ctx[0], gate, [&] { return htod(t.mem[0], pinned, 1024, t.stream[0]); });
    EXPECT_EQ(from_pinned.wait(), CUDA_SUCCESS) << "a pinned source is queued behind the hold";
  }
  EXPECT_EQ(log.text().find("HANG"), std::string::npos) << log.text();
  ASSERT_EQ(gate.hold(t.stream[0]), CUDA_SUCCESS);  // held again: the last round was let go
  {
    CallThread from_pageable(t, t.ctx[0], gate, [&] { return htod(t.mem[0] + 1024, pageable.data(), 1024, t.stream[0]); });
    ASSERT_TRUE(log.wait_for("HANG: a copy from pageable memory waits for a held stream")) << log.text();
    EXPECT_FALSE(from_pageable.ready()) << "returned while its stream was held";
    gate.open();
    EXPECT_EQ(from_pageable.wait(), CUDA_SUCCESS);
  }
  ASSERT_EQ(t.sync(t.stream[0]), CUDA_SUCCESS);
  EXPECT_EQ(std::memcmp(reinterpret_cast<void*>(static_cast<uintptr_t>(t.mem[0] + 1024)), pageable.data(), 1024), 0);
  full().sym<PFN_cuMemFreeHost>("cuMemFreeHost")(pinned);
  gate.free_word();
}

// Streams share their context's connections round-robin, each holding
// DS_CUDA_DOUBLE_QUEUE_DEPTH operations: with one connection, two held streams
// fill it together and the next submission on either waits for room; with two,
// the same operations leave room on each.
TEST(CudaDouble, StreamsSharingAConnectionFillItTogether) {
  ASSERT_TRUE(full().ok());
  DoubleLog log;
  TwoDevices t(full());
  setenv("DS_CUDA_DOUBLE_QUEUE_DEPTH", "4", 1);
  struct Unset {
    ~Unset() {
      unsetenv("DS_CUDA_DOUBLE_QUEUE_DEPTH");
      unsetenv("CUDA_DEVICE_MAX_CONNECTIONS");
    }
  } unset;
  // Devices 2 and 3, whose contexts make their connections with their first stream here.
  for (int dev : {2, 3}) {
    SCOPED_TRACE(dev);
    const size_t from = log.text().size();  // this device's part of the log
    setenv("CUDA_DEVICE_MAX_CONNECTIONS", dev == 2 ? "1" : "2", 1);
    CUcontext ctx = nullptr;
    ASSERT_EQ(t.retain(&ctx, dev), CUDA_SUCCESS);
    ASSERT_EQ(t.set_current(ctx), CUDA_SUCCESS);
    CUstream a = nullptr, b = nullptr;
    ASSERT_EQ(t.stream_create(&a, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(t.stream_create(&b, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    CUevent ea = nullptr, eb = nullptr;
    ASSERT_EQ(t.event_create(&ea, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    ASSERT_EQ(t.event_create(&eb, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    CUdeviceptr mem = 0;
    ASSERT_EQ(t.mem_alloc(&mem, 4096), CUDA_SUCCESS);
    {
      GateWord gate(full());
      // Two operations on each stream: 4 on the one connection, or 2 on each of two.
      ASSERT_EQ(gate.hold(a), CUDA_SUCCESS);
      ASSERT_EQ(gate.hold(b), CUDA_SUCCESS);
      ASSERT_EQ(t.record(ea, a), CUDA_SUCCESS);
      ASSERT_EQ(t.record(eb, b), CUDA_SUCCESS);
      {
        CallThread copy(t, ctx, gate, [&] { return t.dtod(mem + 2048, mem, 1024, b); });
        if (dev == 2) {
          ASSERT_TRUE(log.wait_for("queue-full")) << log.text();
          EXPECT_FALSE(copy.ready()) << "a full connection took one more operation";
          gate.open();
        }
        EXPECT_EQ(copy.wait(), CUDA_SUCCESS);
        if (dev == 3) {
          EXPECT_EQ(log.text().find("queue-full", from), std::string::npos) << "two connections, two operations each";
          gate.open();
        }
      }
      EXPECT_EQ(t.sync(a), CUDA_SUCCESS);
      EXPECT_EQ(t.sync(b), CUDA_SUCCESS);
      gate.free_word();
    }
    t.stream_destroy(a);
    t.stream_destroy(b);
    t.event_destroy(ea);
    t.event_destroy(eb);
    t.mem_free(mem);
    t.set_current(nullptr);
    t.release(dev);
  }
  const std::string text = log.text();
  EXPECT_NE(text.find("connection=1"), std::string::npos) << "two connections on device 3: " << text;
}
