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

// The lookup's own error codes, named before cuGetErrorName is bound.
std::string result_name(CUresult r) {
  switch (r) {
    case CUDA_ERROR_NOT_SUPPORTED:
      return "CUDA_ERROR_NOT_SUPPORTED";
    case CUDA_ERROR_NOT_FOUND:
      return "CUDA_ERROR_NOT_FOUND";
    default:
      return "CUresult " + std::to_string(static_cast<int>(r));
  }
}

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
  d.copies_on_host_cpus = dlsym(h, "dev_sandbox_double_copies_on_host_cpus") != nullptr;
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
  int driver_version = 0;  // known once cuDriverGetVersion is bound
  std::string answer;      // why the last entry point asked for is absent
  // The lookup's answer, taken as the driver means it (cuGetProcAddress, CUDA 12):
  // - CUDA_SUCCESS with a function: bound;
  // - CUDA_SUCCESS with NULL (no such symbol, or no variant of that ABI), or
  //   CUDA_ERROR_INVALID_VALUE (a CUDA version newer than the driver): the driver
  //   does not have this ABI; its exported name is not asked for, since a driver
  //   may export a symbol it does not offer;
  // - any other error (CUDA_ERROR_NOT_SUPPORTED; CUDA 11's CUDA_ERROR_NOT_FOUND),
  //   or no cuGetProcAddress at all: dlsym of the exported versioned name.
  // Drivers whose lookup predates the CUDA_ERROR_INVALID_VALUE rule answer a
  // request newer than themselves with their newest variant, an older ABI (a 12.4
  // driver asked for cuEventElapsedTime at 12.8 gives the original): an ABI newer
  // than the driver's own version is absent, whatever the lookup returned.
  auto resolve = [&](const char* name, const char* symbol, int version) -> void* {
    answer.clear();
    if (gpa1 || gpa2) {
      void* fn = nullptr;
      CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
      const CUresult r = gpa2 ? gpa2(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &status)
                              : gpa1(name, &fn, version, CU_GET_PROC_ADDRESS_LEGACY_STREAM);
      const std::string says = d.resolved_by + " says ";
      if (r == CUDA_SUCCESS && fn) {
        if (driver_version == 0 || version <= driver_version) return fn;
        answer = d.resolved_by + " gave an older variant: the driver is CUDA " + version_text(driver_version);
        return nullptr;
      }
      if (r == CUDA_SUCCESS) {
        answer = says + "CUDA_SUCCESS with no function" +
                 (!gpa2 ? ""
                  : status == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? ", VERSION_NOT_SUFFICIENT"
                                                                         : ", SYMBOL_NOT_FOUND");
        return nullptr;
      }
      if (r == CUDA_ERROR_INVALID_VALUE) {
        answer = says + "CUDA_ERROR_INVALID_VALUE: CUDA " + version_text(version) + " is newer than the driver";
        return nullptr;
      }
      answer = says + result_name(r) + ", and ";
    }
    void* fn = dlsym(h, symbol);
    if (fn && (gpa1 || gpa2)) fell_back = true;
    if (!fn) answer += "it exports no " + std::string(symbol);
    return fn;
  };
  d.cuDriverGetVersion =
      reinterpret_cast<PFN_cuDriverGetVersion>(resolve("cuDriverGetVersion", "cuDriverGetVersion", 2020));
  if (d.cuDriverGetVersion && d.cuDriverGetVersion(&driver_version) != CUDA_SUCCESS) driver_version = 0;
#define DS_CUDA_REQUIRED(name, symbol, version)                                                  \
  d.symbol = reinterpret_cast<PFN_##symbol>(resolve(#name, #symbol, version));                   \
  if (!d.symbol)                                                                                 \
    throw RunError("cuda: " + d.library_path + " has no " #symbol " (needs a driver for CUDA " + \
                   version_text(version) + " or newer; " + answer + ")");
  DS_CUDA_ENTRY_POINTS(DS_CUDA_REQUIRED)
#undef DS_CUDA_REQUIRED
#define DS_CUDA_OPTIONAL(name, symbol, version)                                \
  d.symbol = reinterpret_cast<PFN_##symbol>(resolve(#name, #symbol, version)); \
  if (!d.symbol) d.absent.push_back(#symbol " (" + answer + ")");
  DS_CUDA_OPTIONAL_ENTRY_POINTS(DS_CUDA_OPTIONAL)
#undef DS_CUDA_OPTIONAL
  if (fell_back) d.resolved_by += " (some by dlsym)";
  g_driver = d;
}

}  // namespace

const CudaDriver& cuda_driver() {
  std::lock_guard<std::mutex> lock(g_mutex);
  const pid_t self = getpid();
  if (g_ready_pid == self) return g_driver;
  if (g_ready_pid != 0)
    // CUDA state does not survive fork (docs/measurement.md); the runner initialises only
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
