#include "backends/cuda/cuda_driver.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include "core/error.h"

namespace ds {

namespace {

using namespace cu;

std::mutex g_mutex;
CudaDriver g_driver;
pid_t g_ready_pid = 0;  // the process whose cuInit succeeded
void* g_handle = nullptr;

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

std::string opened_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) {
    char* real = realpath(map->l_name, nullptr);
    const std::string path = real ? real : map->l_name;
    std::free(real);
    return path;
  }
  return fallback;
}

void* open_library() {
  const char* env = std::getenv("DEV_SANDBOX_CUDA_LIB");
  const bool named = env && *env;
  const std::string name = named ? env : "libcuda.so.1";
  dlerror();
  void* h = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    if (named)
      throw RunError("cuda: DEV_SANDBOX_CUDA_LIB=" + name + " could not be loaded (" +
                     (why ? why : "dlopen failed") + "); point it at the NVIDIA driver's libcuda.so.1");
    throw RunError(std::string("cuda: libcuda.so.1 could not be loaded (") + (why ? why : "dlopen failed") +
                   "); set DEV_SANDBOX_CUDA_LIB=/path/to/libcuda.so.1 to point at the NVIDIA driver library");
  }
  return h;
}

void bind(void* h) {
  CudaDriver d;
  d.library_path = opened_path(h, "libcuda.so.1");
  const auto init = reinterpret_cast<PFN_cuInit>(dlsym(h, "cuInit"));
  if (!init) throw RunError("cuda: " + d.library_path + " exports no cuInit; it is not a CUDA driver");
  const CUresult r = init(0);
  if (r != CUDA_SUCCESS) {
    d.cuGetErrorName = reinterpret_cast<PFN_cuGetErrorName>(dlsym(h, "cuGetErrorName"));
    d.cuGetErrorString = reinterpret_cast<PFN_cuGetErrorString>(dlsym(h, "cuGetErrorString"));
    g_driver.cuGetErrorName = d.cuGetErrorName;
    g_driver.cuGetErrorString = d.cuGetErrorString;
    throw RunError(cuda_error_text("cuInit(0)", r));
  }

  // Versioned entry points through the driver's own lookup, asking for the CUDA
  // version whose ABI our declarations bind; the exported names otherwise.
  const auto gpa2 = reinterpret_cast<PFN_cuGetProcAddress_v2>(dlsym(h, "cuGetProcAddress_v2"));
  const auto gpa1 = gpa2 ? nullptr : reinterpret_cast<PFN_cuGetProcAddress>(dlsym(h, "cuGetProcAddress"));
  d.resolved_by = gpa2 ? "cuGetProcAddress_v2" : gpa1 ? "cuGetProcAddress" : "dlsym";
  bool fell_back = false;
  auto resolve = [&](const char* name, const char* symbol, int version) -> void* {
    void* fn = nullptr;
    if (gpa2) {
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
      if (gpa2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status) != CUDA_SUCCESS ||
          status != CU_GET_PROC_ADDRESS_SUCCESS)
        fn = nullptr;
    } else if (gpa1) {
      if (gpa1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM) != CUDA_SUCCESS) fn = nullptr;
    }
    if (!fn) {
      fn = dlsym(h, symbol);
      if (fn && (gpa1 || gpa2)) fell_back = true;
    }
    return fn;
  };
#define DS_CUDA_REQUIRED(name, symbol, version)                                                  \
  d.symbol = reinterpret_cast<PFN_##symbol>(resolve(#name, #symbol, version));                   \
  if (!d.symbol)                                                                                 \
    throw RunError("cuda: " + d.library_path + " has no " #symbol " (needs a driver for CUDA " + \
                   version_text(version) + " or newer)");
  DS_CUDA_ENTRY_POINTS(DS_CUDA_REQUIRED)
#undef DS_CUDA_REQUIRED
#define DS_CUDA_OPTIONAL(name, symbol, version) \
  d.symbol = reinterpret_cast<PFN_##symbol>(resolve(#name, #symbol, version));
  DS_CUDA_OPTIONAL_ENTRY_POINTS(DS_CUDA_OPTIONAL)
#undef DS_CUDA_OPTIONAL
  // Asked for at 12.8, a driver before 12.8 answers with the original entry point.
  if (d.cuEventElapsedTime_v2 == d.cuEventElapsedTime) d.cuEventElapsedTime_v2 = nullptr;
  if (fell_back) d.resolved_by += " (some by dlsym)";
  g_driver = d;
}

}  // namespace

const CudaDriver& cuda_driver() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const pid_t self = getpid();
  if (g_ready_pid == self) return g_driver;
  if (g_ready_pid != 0)
    // CUDA state does not survive fork (SPEC §4.4); the runner initialises only
    // in children, so this is a parent that ran a CUDA case and then forked.
    throw RunError("cuda: the driver was initialised in parent process " + std::to_string(g_ready_pid) +
                   " before fork and cannot be used in its child; run fork cases in their own invocation");
  if (!g_handle) g_handle = open_library();
  bind(g_handle);
  g_ready_pid = self;
  return g_driver;
}

std::string cuda_error_text(const std::string& call, CUresult r) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (g_driver.cuGetErrorName) g_driver.cuGetErrorName(r, &name);
  if (g_driver.cuGetErrorString) g_driver.cuGetErrorString(r, &text);
  std::string s = call + " failed: " + (name ? name : "CUresult " + std::to_string(static_cast<int>(r)));
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void cuda_check(CUresult r, const char* call) {
  if (r != CUDA_SUCCESS) throw RunError(cuda_error_text(call, r));
}

void cuda_check(CUresult r, const std::string& call) {
  if (r != CUDA_SUCCESS) throw RunError(cuda_error_text(call, r));
}

}  // namespace ds
