// The doubles' stream gates and time knobs, called directly (dlopen, no
// dev-sandbox): cuStreamWaitValue32_v2 and the gate kernel of the cuda double,
// AscendCL callbacks of the acl double, the trace lines both write, and a copy
// task taking its configured cost. The gate tests of dev-sandbox rely on these.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "backends/cuda/cuda_api.h"

using namespace ds::cu;

namespace {

int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// A trace file for the test, named in the double's env var for its lifetime.
class Trace {
 public:
  explicit Trace(const char* var) : var_(var) {
    char buf[] = "/tmp/ds-double-trace-XXXXXX";
    const int fd = mkstemp(buf);
    if (fd >= 0) close(fd);
    path_ = buf;
    setenv(var_, path_.c_str(), 1);
  }
  ~Trace() {
    unsetenv(var_);
    std::remove(path_.c_str());
  }
  struct Line {
    int pid, device;
    std::string stream, what;
    long long ns;
  };
  std::vector<Line> lines() const {
    std::vector<Line> v;
    std::ifstream in(path_);
    std::string s;
    while (std::getline(in, s)) {
      std::istringstream is(s);
      Line l;
      is >> l.pid >> l.device >> l.stream >> l.what >> l.ns;
      v.push_back(l);
    }
    return v;
  }
  // The ns of the first line saying `what`, or -1.
  long long first(const std::string& what) const {
    for (const Line& l : lines())
      if (l.what == what) return l.ns;
    return -1;
  }

 private:
  const char* var_;
  std::string path_;
};

void* open_lib(const char* path) {
  void* h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(h, nullptr) << path << ": " << dlerror();
  return h;
}

// ---- cuda ----

typedef CUresult (*PFN_wait32)(CUstream, CUdeviceptr, uint32_t, unsigned int);

struct Cuda {
  explicit Cuda(const char* path) : h(open_lib(path)) {
    if (!h) return;
    EXPECT_EQ(sym<PFN_cuInit>("cuInit")(0), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&ctx, 0), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(ctx), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuStreamCreate>("cuStreamCreate")(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuEventCreate>("cuEventCreate")(&before, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuEventCreate>("cuEventCreate")(&after, CU_EVENT_DEFAULT), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuMemHostAlloc>("cuMemHostAlloc")(&host, 4096, kMemHostAllocDeviceMap), CUDA_SUCCESS);
    EXPECT_EQ(sym<PFN_cuMemHostGetDevicePointer_v2>("cuMemHostGetDevicePointer_v2")(&word, host, 0), CUDA_SUCCESS);
    std::memset(host, 0, 4096);
  }
  ~Cuda() {
    if (!h) return;
    sync();
    sym<PFN_cuEventDestroy_v2>("cuEventDestroy_v2")(before);
    sym<PFN_cuEventDestroy_v2>("cuEventDestroy_v2")(after);
    sym<PFN_cuStreamDestroy_v2>("cuStreamDestroy_v2")(stream);
    sym<PFN_cuMemFreeHost>("cuMemFreeHost")(host);
    sym<PFN_cuDevicePrimaryCtxRelease_v2>("cuDevicePrimaryCtxRelease_v2")(0);
    dlclose(h);
  }
  template <typename F>
  F sym(const char* name) const {
    return reinterpret_cast<F>(dlsym(h, name));
  }
  CUresult record(CUevent e) { return sym<PFN_cuEventRecord>("cuEventRecord")(e, stream); }
  CUresult sync() { return sym<PFN_cuStreamSynchronize>("cuStreamSynchronize")(stream); }
  // CUDA_ERROR_NOT_READY while the stream has not reached `after`.
  CUresult elapsed(float* ms) { return sym<PFN_cuEventElapsedTime>("cuEventElapsedTime")(ms, before, after); }
  void release(uint32_t v) { __atomic_store_n(static_cast<uint32_t*>(host), v, __ATOMIC_RELEASE); }

  void* h;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUevent before = nullptr, after = nullptr;
  void* host = nullptr;
  CUdeviceptr word = 0;
};

PFN_wait32 wait32_of(const Cuda& c, int version) {
  auto gpa = c.sym<PFN_cuGetProcAddress_v2>("cuGetProcAddress_v2");
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  if (!gpa || gpa("cuStreamWaitValue32", &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS)
    return nullptr;
  return reinterpret_cast<PFN_wait32>(fn);
}

// Holds the stream until released: `before` is reached, `after` is not; then
// the word is written and the stream goes on.
void expect_gate_holds(Cuda& c, const Trace& trace) {
  sleep_ms(40);
  float ms = 0;
  EXPECT_EQ(c.elapsed(&ms), CUDA_ERROR_NOT_READY) << "the stream went past the gate before it was released";
  const int64_t released = mono_ns();
  c.release(7);
  ASSERT_EQ(c.sync(), CUDA_SUCCESS);
  ASSERT_EQ(c.elapsed(&ms), CUDA_SUCCESS);
  const long long enq = trace.first("wait-enqueued"), passed = trace.first("wait-passed");
  EXPECT_GT(enq, 0);
  EXPECT_GE(passed, released) << "passed only after the word was written";
  EXPECT_GT(passed, enq);
}

TEST(CudaDoubleGate, WaitValue32IsOfferedFromCuda117InThe12xBuilds) {
  for (const char* path : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOBATCH}) {
    Cuda c(path);
    ASSERT_TRUE(c.h);
    EXPECT_NE(c.sym<PFN_wait32>("cuStreamWaitValue32_v2"), nullptr) << path;
    EXPECT_NE(wait32_of(c, 11070), nullptr) << path;
    EXPECT_EQ(wait32_of(c, 11060), nullptr) << path << ": no _v2 before 11.7";
  }
  Cuda old(DS_CUDA_DOUBLE_NOGRAPH);
  ASSERT_TRUE(old.h);
  EXPECT_EQ(old.sym<PFN_wait32>("cuStreamWaitValue32_v2"), nullptr) << "CUDA 11.3 predates the _v2 memory operations";
  void* fn = nullptr;
  EXPECT_EQ(old.sym<PFN_cuGetProcAddress>("cuGetProcAddress")("cuStreamWaitValue32", &fn, 11070,
                                                               CU_GET_PROC_ADDRESS_LEGACY_STREAM),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
}

TEST(CudaDoubleGate, WaitValue32HoldsTheStreamUntilTheWordSatisfiesIt) {
  Trace trace("DS_CUDA_DOUBLE_TRACE");
  Cuda c(DS_CUDA_DOUBLE);
  ASSERT_TRUE(c.h);
  PFN_wait32 wait = wait32_of(c, 11070);
  ASSERT_NE(wait, nullptr);
  ASSERT_EQ(c.record(c.before), CUDA_SUCCESS);
  ASSERT_EQ(wait(c.stream, c.word, 5, 0 /* GEQ */), CUDA_SUCCESS);
  ASSERT_EQ(c.record(c.after), CUDA_SUCCESS);
  expect_gate_holds(c, trace);

  // Already satisfied: GEQ across the wrap ((int32_t)(0 - 0xffffffff) = 1), EQ, AND, NOR.
  c.release(0);
  EXPECT_EQ(wait(c.stream, c.word, 0xffffffffu, 0), CUDA_SUCCESS);
  EXPECT_EQ(wait(c.stream, c.word, 0, 1 /* EQ */), CUDA_SUCCESS);
  EXPECT_EQ(wait(c.stream, c.word, 0, 3 /* NOR */), CUDA_SUCCESS);
  EXPECT_EQ(c.sync(), CUDA_SUCCESS);  // the stream evaluates them before the word changes
  c.release(6);
  EXPECT_EQ(wait(c.stream, c.word, 2, 2 /* AND */), CUDA_SUCCESS);
  EXPECT_EQ(wait(c.stream, c.word, 2, 2 | (1u << 30) /* | FLUSH */), CUDA_SUCCESS);
  EXPECT_EQ(c.sync(), CUDA_SUCCESS);

  // What it refuses: an unknown operation, pageable memory, a misaligned word.
  EXPECT_EQ(wait(c.stream, c.word, 0, 4), CUDA_ERROR_INVALID_VALUE);
  static uint32_t pageable = 0;
  EXPECT_EQ(wait(c.stream, static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(&pageable)), 0, 0),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(wait(c.stream, c.word + 2, 0, 0), CUDA_ERROR_INVALID_VALUE);
}

const char* kGatePtx =
    "// made by the test\n.version 6.3\n.target sm_75\n.address_size 64\n"
    ".visible .entry ds_gate_kernel(\n\t.param .u64 ds_gate_kernel_param_0,\n\t.param .u32 ds_gate_kernel_param_1\n)\n"
    "{\n\tret;\n}\n";

TEST(CudaDoubleGate, TheGateKernelHoldsTheStreamUntilTheFlagReachesTheValue) {
  for (const char* path : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOGRAPH}) {  // the fallback works on 11.3 too
    Trace trace("DS_CUDA_DOUBLE_TRACE");
    Cuda c(path);
    ASSERT_TRUE(c.h);
    CUmodule module = nullptr;
    ASSERT_EQ(c.sym<PFN_cuModuleLoadData>("cuModuleLoadData")(&module, kGatePtx), CUDA_SUCCESS);
    CUfunction gate = nullptr;
    ASSERT_EQ(c.sym<PFN_cuModuleGetFunction>("cuModuleGetFunction")(&gate, module, "ds_gate_kernel"), CUDA_SUCCESS);
    auto launch = c.sym<PFN_cuLaunchKernel>("cuLaunchKernel");
    CUdeviceptr flag = c.word;
    uint32_t value = 5;
    void* params[] = {&flag, &value};
    ASSERT_EQ(c.record(c.before), CUDA_SUCCESS);
    ASSERT_EQ(launch(gate, 1, 1, 1, 1, 1, 1, 0, c.stream, params, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(c.record(c.after), CUDA_SUCCESS);
    expect_gate_holds(c, trace);
    // One thread on one block only (our contract), on a word the GPU can read.
    EXPECT_EQ(launch(gate, 2, 1, 1, 1, 1, 1, 0, c.stream, params, nullptr), CUDA_ERROR_NOT_SUPPORTED);
    EXPECT_EQ(launch(gate, 1, 1, 1, 32, 1, 1, 0, c.stream, params, nullptr), CUDA_ERROR_NOT_SUPPORTED);
    static uint32_t pageable = 0;
    flag = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(&pageable));
    EXPECT_EQ(launch(gate, 1, 1, 1, 1, 1, 1, 0, c.stream, params, nullptr), CUDA_ERROR_INVALID_VALUE);
    EXPECT_EQ(c.sym<PFN_cuModuleUnload>("cuModuleUnload")(module), CUDA_SUCCESS);
  }
}

TEST(CudaDoubleTime, ACopyTaskTakesItsCostAndSubmissionsStall) {
  Trace trace("DS_CUDA_DOUBLE_TRACE");
  setenv("DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "10000000", 1);  // 4 KiB: 40 ms
  setenv("DS_CUDA_DOUBLE_SUBMIT_NS", "20000000", 1);        // 20 ms
  Cuda c(DS_CUDA_DOUBLE);
  ASSERT_TRUE(c.h);
  CUdeviceptr dev = 0;
  ASSERT_EQ(c.sym<PFN_cuMemAlloc_v2>("cuMemAlloc_v2")(&dev, 4096), CUDA_SUCCESS);
  ASSERT_EQ(c.record(c.before), CUDA_SUCCESS);
  const int64_t t0 = mono_ns();
  ASSERT_EQ(c.sym<PFN_cuMemcpyHtoDAsync_v2>("cuMemcpyHtoDAsync_v2")(dev, c.host, 4096, c.stream), CUDA_SUCCESS);
  const int64_t submitted = mono_ns();
  ASSERT_EQ(c.record(c.after), CUDA_SUCCESS);
  ASSERT_EQ(c.sync(), CUDA_SUCCESS);
  unsetenv("DS_CUDA_DOUBLE_COPY_NS_PER_KIB");
  unsetenv("DS_CUDA_DOUBLE_SUBMIT_NS");
  EXPECT_GE(submitted - t0, 20000000) << "the call stalls";
  float ms = 0;
  ASSERT_EQ(c.elapsed(&ms), CUDA_SUCCESS);
  EXPECT_GE(ms, 40.0f * 0.999f) << "the copy's 40 ms lie between the events";
  const long long enq = trace.first("copy-enqueued"), start = trace.first("copy-start"), end = trace.first("copy-end");
  EXPECT_GE(enq, t0 + 20000000);
  EXPECT_GE(start, enq);
  EXPECT_GE(end - start, 40000000);
  EXPECT_EQ(c.sym<PFN_cuMemFree_v2>("cuMemFree_v2")(dev), CUDA_SUCCESS);
}

// ---- ascend ----

typedef int (*AclInit)(const char*);
typedef int (*AclFinalize)();
typedef int (*AclSetDevice)(int32_t);
typedef int (*AclStream)(void*);
typedef int (*AclCreateStream)(void**);
typedef int (*AclSubscribe)(uint64_t, void*);
typedef int (*AclLaunchCallback)(void (*)(void*), void*, int, void*);
typedef int (*AclProcessReport)(int32_t);
typedef int (*AclMallocHost)(void**, size_t);
typedef int (*AclFreeHost)(void*);
typedef int (*AclMalloc)(void**, size_t, int);
typedef int (*AclFree)(void*);
typedef int (*AclMemcpyAsync)(void*, size_t, const void*, size_t, int, void*);

struct Acl {
  Acl() : h(open_lib(DS_ACL_DOUBLE)) {
    if (!h) return;
    EXPECT_EQ(sym<AclInit>("aclInit")(nullptr), 0);
    EXPECT_EQ(sym<AclSetDevice>("aclrtSetDevice")(0), 0);
    EXPECT_EQ(sym<AclCreateStream>("aclrtCreateStream")(&stream), 0);
    subscribe = sym<AclSubscribe>("aclrtSubscribeReport");
    unsubscribe = sym<AclSubscribe>("aclrtUnSubscribeReport");
    launch = sym<AclLaunchCallback>("aclrtLaunchCallback");
    process = sym<AclProcessReport>("aclrtProcessReport");
  }
  ~Acl() {
    if (!h) return;
    sym<AclStream>("aclrtSynchronizeStream")(stream);
    sym<AclStream>("aclrtDestroyStream")(stream);
    sym<AclSetDevice>("aclrtResetDevice")(0);
    sym<AclFinalize>("aclFinalize")();
    dlclose(h);
  }
  template <typename F>
  F sym(const char* name) const {
    return reinterpret_cast<F>(dlsym(h, name));
  }
  int sync() { return sym<AclStream>("aclrtSynchronizeStream")(stream); }

  void* h;
  void* stream = nullptr;
  AclSubscribe subscribe = nullptr, unsubscribe = nullptr;
  AclLaunchCallback launch = nullptr;
  AclProcessReport process = nullptr;
};

// A thread that runs aclrtProcessReport(100) until stopped, counting timeouts.
// (the atomics are read by the test thread)
struct Reporter {
  explicit Reporter(Acl& a) : acl(a) {
    thread = std::thread([this] {
      while (!stop.load()) {
        const int rc = acl.process(100);
        if (rc == 507012)
          ++timeouts;
        else if (rc == 107012)  // not subscribed (yet, or any more)
          sleep_ms(1);
        else if (rc != 0)
          last_error = rc;
      }
    });
  }
  ~Reporter() {
    stop = true;
    thread.join();
  }
  uint64_t id() { return static_cast<uint64_t>(thread.native_handle()); }
  Acl& acl;
  std::atomic<bool> stop{false};
  std::atomic<int> timeouts{0}, last_error{0};
  std::thread thread;
};

struct Callback {
  std::atomic<int> runs{0};
  std::atomic<long long> ran_at{0};
  pthread_t on{};
  int hold_ms = 0;
  static void fn(void* p) {
    auto* c = static_cast<Callback*>(p);
    c->on = pthread_self();
    if (c->hold_ms) sleep_ms(c->hold_ms);
    c->ran_at = mono_ns();
    ++c->runs;
  }
};

TEST(AclDoubleCallbacks, EveryVariantExportsThem) {
  for (const char* path : {DS_ACL_DOUBLE, DS_ACL_DOUBLE_OLD}) {
    void* h = open_lib(path);
    ASSERT_TRUE(h);
    for (const char* name : {"aclrtSubscribeReport", "aclrtUnSubscribeReport", "aclrtLaunchCallback",
                             "aclrtProcessReport"})
      EXPECT_NE(dlsym(h, name), nullptr) << path << " " << name;
    dlclose(h);
  }
}

TEST(AclDoubleCallbacks, ABlockingCallbackRunsOnTheSubscribedThreadAndHoldsTheStream) {
  Trace trace("DS_ACL_DOUBLE_TRACE");
  Acl a;
  ASSERT_TRUE(a.h);
  Reporter r(a);
  ASSERT_EQ(a.subscribe(r.id(), a.stream), 0);
  Callback cb;
  cb.hold_ms = 40;
  void* host = nullptr;
  void* dev = nullptr;
  ASSERT_EQ(a.sym<AclMallocHost>("aclrtMallocHost")(&host, 4096), 0);
  ASSERT_EQ(a.sym<AclMalloc>("aclrtMalloc")(&dev, 4096, 0), 0);
  ASSERT_EQ(a.launch(Callback::fn, &cb, 1 /* ACL_CALLBACK_BLOCK */, a.stream), 0);
  ASSERT_EQ(a.sym<AclMemcpyAsync>("aclrtMemcpyAsync")(dev, 4096, host, 4096, 1, a.stream), 0);
  ASSERT_EQ(a.sync(), 0);
  EXPECT_EQ(cb.runs.load(), 1);
  EXPECT_TRUE(pthread_equal(cb.on, r.thread.native_handle())) << "on the subscribed thread";
  const long long cb_end = trace.first("callback-end"), copy_start = trace.first("copy-start");
  EXPECT_GT(trace.first("callback-enqueued"), 0);
  EXPECT_GE(trace.first("callback-start"), trace.first("callback-enqueued"));
  EXPECT_GE(cb_end - trace.first("callback-start"), 40000000);
  EXPECT_GE(copy_start, cb_end) << "the copy waited for the blocking callback";
  EXPECT_EQ(a.unsubscribe(r.id(), a.stream), 0);
  EXPECT_EQ(r.last_error.load(), 0);
  a.sym<AclFree>("aclrtFree")(dev);
  a.sym<AclFreeHost>("aclrtFreeHost")(host);
}

TEST(AclDoubleCallbacks, ANonBlockingCallbackLetsTheStreamGoOn) {
  Acl a;
  ASSERT_TRUE(a.h);
  // Subscribed to this thread, which does not process reports yet.
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  ASSERT_EQ(a.subscribe(me, a.stream), 0);
  Callback cb;
  ASSERT_EQ(a.launch(Callback::fn, &cb, 0 /* ACL_CALLBACK_NO_BLOCK */, a.stream), 0);
  ASSERT_EQ(a.sync(), 0) << "the stream is not held by a non-blocking callback";
  EXPECT_EQ(cb.runs.load(), 0) << "only aclrtProcessReport runs callbacks";
  EXPECT_EQ(a.process(1000), 0);
  EXPECT_EQ(cb.runs.load(), 1);
  EXPECT_TRUE(pthread_equal(cb.on, pthread_self()));
  EXPECT_EQ(a.unsubscribe(me, a.stream), 0);
}

TEST(AclDoubleCallbacks, RefusalsAndTimeoutAsTheRuntimeAnswers) {
  Acl a;
  ASSERT_TRUE(a.h);
  Callback cb;
  const uint64_t me = static_cast<uint64_t>(pthread_self());
  EXPECT_EQ(a.launch(Callback::fn, &cb, 1, a.stream), 107015) << "ACL_ERROR_RT_STREAM_NO_CB_REG: nobody subscribed";
  EXPECT_EQ(a.process(10), 107012) << "ACL_ERROR_RT_THREAD_SUBSCRIBE: this thread is not subscribed";
  ASSERT_EQ(a.subscribe(me, a.stream), 0);
  EXPECT_EQ(a.subscribe(me + 1, a.stream), 107011) << "ACL_ERROR_RT_STREAM_SUBSCRIBE: one thread per stream";
  EXPECT_EQ(a.process(0), 100000) << "timeout 0 is not a timeout";
  EXPECT_EQ(a.process(-2), 100000);
  EXPECT_EQ(a.launch(Callback::fn, &cb, 2, a.stream), 100000) << "blockType";
  const int64_t t0 = mono_ns();
  EXPECT_EQ(a.process(30), 507012) << "ACL_ERROR_RT_REPORT_TIMEOUT: nothing to run within 30 ms";
  EXPECT_GE(mono_ns() - t0, 30000000);
  // A stream of another device for the same thread.
  ASSERT_EQ(a.sym<AclSetDevice>("aclrtSetDevice")(1), 0);
  void* other = nullptr;
  ASSERT_EQ(a.sym<AclCreateStream>("aclrtCreateStream")(&other), 0);
  EXPECT_EQ(a.subscribe(me, other), 107012) << "a thread handles streams of one device";
  EXPECT_EQ(a.unsubscribe(me, other), 107011) << "not subscribed";
  EXPECT_EQ(a.sym<AclStream>("aclrtDestroyStream")(other), 0);
  ASSERT_EQ(a.sym<AclSetDevice>("aclrtResetDevice")(1), 0);
  ASSERT_EQ(a.sym<AclSetDevice>("aclrtSetDevice")(0), 0);
  EXPECT_EQ(a.unsubscribe(me, a.stream), 0);
  ASSERT_EQ(a.sym<AclSetDevice>("aclrtResetDevice")(0), 0);
}

// DS_ACL_DOUBLE_SUBMIT_COUNTED: a submission's stall is a slot on its thread's timeline,
// not a sleep: three back-to-back aclrtMemcpyAsync of 100 ms stalls return at once
// (well under the 300 ms they would sleep) and their copies start no earlier than
// 100, 200 and 300 ms after the first call; an aclrtMemcpyBatchAsync's one stall holds
// its first copy (the next slot, 400 ms). Unset, each call sleeps its stall.
TEST(AclDoubleTime, CountedSubmissionsHoldTheirTasksInsteadOfSleeping) {
  typedef int (*AclBatch)(void**, size_t*, void**, size_t*, size_t, void*, size_t*, size_t, size_t*, void*);
  struct Loc {
    uint32_t id;
    int type;
  };
  struct Attr {
    Loc dst, src;
    uint8_t rsv[16];
  };
  Trace trace("DS_ACL_DOUBLE_TRACE");
  constexpr int64_t kStall = 100000000;  // 100 ms
  setenv("DS_ACL_DOUBLE_SUBMIT_NS", std::to_string(kStall).c_str(), 1);
  setenv("DS_ACL_DOUBLE_SUBMIT_COUNTED", "1", 1);
  Acl a;
  ASSERT_TRUE(a.h);
  void* host = nullptr;
  void* dev = nullptr;
  ASSERT_EQ(a.sym<AclMallocHost>("aclrtMallocHost")(&host, 8192), 0);
  ASSERT_EQ(a.sym<AclMalloc>("aclrtMalloc")(&dev, 8192, 0), 0);
  const auto copy = a.sym<AclMemcpyAsync>("aclrtMemcpyAsync");
  const int64_t t0 = mono_ns();
  for (int k = 0; k < 3; ++k) ASSERT_EQ(copy(dev, 4096, host, 4096, 1, a.stream), 0);
  void* dsts[2] = {dev, static_cast<char*>(dev) + 4096};
  void* srcs[2] = {host, static_cast<char*>(host) + 4096};
  size_t maxs[2] = {4096, 4096}, sizes[2] = {4096, 4096}, index = 0, failed = 0;
  Attr attr{{0, 1}, {0, 0}, {}};
  ASSERT_EQ(a.sym<AclBatch>("aclrtMemcpyBatchAsync")(dsts, maxs, srcs, sizes, 2, &attr, &index, 1, &failed, a.stream), 0);
  const int64_t submitted = mono_ns();
  ASSERT_EQ(a.sync(), 0);
  unsetenv("DS_ACL_DOUBLE_SUBMIT_COUNTED");
  EXPECT_LT(submitted - t0, 3 * kStall) << "counted, the calls did not sleep their stalls";
  std::vector<long long> starts;
  for (const Trace::Line& l : trace.lines())
    if (l.what == "copy-start") starts.push_back(l.ns);
  ASSERT_EQ(starts.size(), 5u);
  for (int k = 0; k < 4; ++k) EXPECT_GE(starts[k], t0 + (k + 1) * kStall) << "copy " << k << " before its slot";
  EXPECT_GE(starts[4], starts[3]) << "the batch's second copy follows its first";
  // Unset: the call sleeps its stall.
  const int64_t t1 = mono_ns();
  ASSERT_EQ(copy(dev, 4096, host, 4096, 1, a.stream), 0);
  EXPECT_GE(mono_ns() - t1, kStall) << "slept";
  ASSERT_EQ(a.sync(), 0);
  unsetenv("DS_ACL_DOUBLE_SUBMIT_NS");
  a.sym<AclFree>("aclrtFree")(dev);
  a.sym<AclFreeHost>("aclrtFreeHost")(host);
}

}  // namespace
