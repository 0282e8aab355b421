// The reference bench/gpu-check measures dev-sandbox against: a bare loop of
// cuMemcpyHtoDAsync_v2 from one pinned buffer to device memory on one stream,
// timed with events, nothing else. Links nothing; opens libcuda with dlopen
// (DEV_SANDBOX_CUDA_LIB or libcuda.so.1) and binds the exported symbols.
//
// Usage: cuda_bare_htod BLOCK_BYTES BLOCKS ITERATIONS WARMUP
// Prints: bw_gib_s=<copy bandwidth> copy_avg_us=<per iteration>
//         submit_ns_per_call=<host time of one cuMemcpyHtoDAsync_v2 call>
#include <dlfcn.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backends/cuda/cuda_api.h"

using namespace ds::cu;

namespace {

void* lib = nullptr;

template <typename F>
F sym(const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    std::fprintf(stderr, "cuda_bare_htod: %s not found in libcuda\n", name);
    std::exit(1);
  }
  return reinterpret_cast<F>(p);
}

void check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "cuda_bare_htod: %s failed: CUresult %d\n", call, static_cast<int>(r));
    std::exit(1);
  }
}

long long now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: cuda_bare_htod BLOCK_BYTES BLOCKS ITERATIONS WARMUP\n");
    return 2;
  }
  const size_t block = std::strtoull(argv[1], nullptr, 10);
  const size_t blocks = std::strtoull(argv[2], nullptr, 10);
  const int iters = std::atoi(argv[3]);
  const int warmup = std::atoi(argv[4]);
  if (block == 0 || blocks == 0 || iters < 1 || warmup < 0) return 2;
  const char* path = std::getenv("DEV_SANDBOX_CUDA_LIB");
  lib = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "cuda_bare_htod: %s\n", dlerror());
    return 1;
  }
  check(sym<PFN_cuInit>("cuInit")(0), "cuInit");
  CUdevice dev;
  check(sym<PFN_cuDeviceGet>("cuDeviceGet")(&dev, 0), "cuDeviceGet");
  CUcontext ctx;
  check(sym<PFN_cuDevicePrimaryCtxRetain>("cuDevicePrimaryCtxRetain")(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(sym<PFN_cuCtxSetCurrent>("cuCtxSetCurrent")(ctx), "cuCtxSetCurrent");
  const auto htod = sym<PFN_cuMemcpyHtoDAsync_v2>("cuMemcpyHtoDAsync_v2");
  const auto record = sym<PFN_cuEventRecord>("cuEventRecord");
  const auto sync = sym<PFN_cuStreamSynchronize>("cuStreamSynchronize");
  const auto elapsed = sym<PFN_cuEventElapsedTime>("cuEventElapsedTime");

  const size_t bytes = block * blocks;
  void* host = nullptr;
  check(sym<PFN_cuMemHostAlloc>("cuMemHostAlloc")(&host, bytes, kMemHostAllocPortable), "cuMemHostAlloc");
  std::memset(host, 0x5a, bytes);
  CUdeviceptr d = 0;
  check(sym<PFN_cuMemAlloc_v2>("cuMemAlloc_v2")(&d, bytes), "cuMemAlloc_v2");
  CUstream s;
  check(sym<PFN_cuStreamCreate>("cuStreamCreate")(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUevent e0, e1;
  check(sym<PFN_cuEventCreate>("cuEventCreate")(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
  check(sym<PFN_cuEventCreate>("cuEventCreate")(&e1, CU_EVENT_DEFAULT), "cuEventCreate");

  double copy_ms = 0;
  long long submit_ns = 0;
  for (int it = 0; it < warmup + iters; ++it) {
    check(record(e0, s), "cuEventRecord");
    const long long t0 = now_ns();
    for (size_t b = 0; b < blocks; ++b)
      check(htod(d + b * block, static_cast<char*>(host) + b * block, block, s), "cuMemcpyHtoDAsync_v2");
    const long long t1 = now_ns();
    check(record(e1, s), "cuEventRecord");
    check(sync(s), "cuStreamSynchronize");
    float ms = 0;
    check(elapsed(&ms, e0, e1), "cuEventElapsedTime");
    if (it >= warmup) {
      copy_ms += ms;
      submit_ns += t1 - t0;
    }
  }
  const double avg_s = copy_ms / iters / 1e3;
  std::printf("bw_gib_s=%.3f copy_avg_us=%.1f submit_ns_per_call=%.1f\n",
              static_cast<double>(bytes) / avg_s / (1024.0 * 1024.0 * 1024.0), avg_s * 1e6,
              static_cast<double>(submit_ns) / iters / static_cast<double>(blocks));

  sym<PFN_cuEventDestroy_v2>("cuEventDestroy_v2")(e0);
  sym<PFN_cuEventDestroy_v2>("cuEventDestroy_v2")(e1);
  sym<PFN_cuStreamDestroy_v2>("cuStreamDestroy_v2")(s);
  sym<PFN_cuMemFree_v2>("cuMemFree_v2")(d);
  sym<PFN_cuMemFreeHost>("cuMemFreeHost")(host);
  sym<PFN_cuDevicePrimaryCtxRelease_v2>("cuDevicePrimaryCtxRelease_v2")(dev);
  return 0;
}
