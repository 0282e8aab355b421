#include "backends/ascend/acl_library.h"

#include <dlfcn.h>
#include <link.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <utility>
#include <vector>

#include "core/error.h"

namespace ds {
namespace acl {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// dlerror() repeats the path; keep the reason only. Call right after a failed dlopen.
std::string dlerror_text_of(const char* err, const std::string& path) {
  std::string e = err ? err : "not found";
  if (e.compare(0, path.size() + 2, path + ": ") == 0) e.erase(0, path.size() + 2);
  return e;
}

std::string loaded_path(void* handle, const std::string& fallback) {
  link_map* map = nullptr;
  if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name && *map->l_name) return map->l_name;
  return fallback;
}

void* open_first(const std::vector<std::string>& candidates, std::string* opened, std::string* tried) {
  for (const auto& candidate : candidates) {
    void* handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle) {
      // The path of the object actually mapped (a bare name resolves through the loader).
      *opened = candidate.find('/') == std::string::npos ? loaded_path(handle, candidate) : candidate;
      return handle;
    }
    const std::string why = dlerror_text_of(dlerror(), candidate);
    *tried += (tried->empty() ? "" : ", ") + candidate + " (" + why + ")";
  }
  return nullptr;
}

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// Where libascendcl.so is looked for, in order.
std::vector<std::string> acl_candidates() {
  const std::string explicit_path = env_or_empty("DEV_SANDBOX_ACL_LIB");
  if (!explicit_path.empty()) return {explicit_path};
  std::vector<std::string> c;
  for (const char* var : {"ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"}) {
    const std::string home = env_or_empty(var);
    if (!home.empty()) c.push_back(home + "/lib64/libascendcl.so");
  }
  c.push_back("/usr/local/Ascend/ascend-toolkit/latest/lib64/libascendcl.so");
  c.push_back("libascendcl.so");  // LD_LIBRARY_PATH, as CANN's set_env.sh sets it
  return c;
}

template <typename F>
void bind(void* handle, const char* name, F& fn) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
}

AclLibrary open_libraries() {
  AclLibrary lib;
  std::string tried;
  void* handle = open_first(acl_candidates(), &lib.path, &tried);
  if (!handle)
    throw RunError("ascend: AscendCL (libascendcl.so) could not be opened: tried " + tried +
                   "; source CANN's set_env.sh or set DEV_SANDBOX_ACL_LIB=/path/to/libascendcl.so");

  std::string missing;
  auto need = [&](const char* name, auto& fn) {
    bind(handle, name, fn);
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
  };
  need("aclInit", lib.aclInit);
  need("aclFinalize", lib.aclFinalize);
  need("aclGetRecentErrMsg", lib.aclGetRecentErrMsg);
  need("aclrtGetDeviceCount", lib.aclrtGetDeviceCount);
  need("aclrtSetDevice", lib.aclrtSetDevice);
  need("aclrtResetDevice", lib.aclrtResetDevice);
  need("aclrtGetMemInfo", lib.aclrtGetMemInfo);
  need("aclrtMalloc", lib.aclrtMalloc);
  need("aclrtFree", lib.aclrtFree);
  need("aclrtMallocHost", lib.aclrtMallocHost);
  need("aclrtFreeHost", lib.aclrtFreeHost);
  need("aclrtCreateStream", lib.aclrtCreateStream);
  need("aclrtDestroyStream", lib.aclrtDestroyStream);
  need("aclrtSynchronizeStream", lib.aclrtSynchronizeStream);
  need("aclrtCreateEvent", lib.aclrtCreateEvent);
  need("aclrtRecordEvent", lib.aclrtRecordEvent);
  need("aclrtEventElapsedTime", lib.aclrtEventElapsedTime);
  need("aclrtDestroyEvent", lib.aclrtDestroyEvent);
  need("aclrtMemcpy", lib.aclrtMemcpy);
  need("aclrtMemcpyAsync", lib.aclrtMemcpyAsync);
  if (!missing.empty())
    throw RunError(lib.path + " lacks AscendCL entry points this tool needs: " + missing +
                   " (an older CANN than the one this binding was written against)");
  bind(handle, "aclrtHostRegister", lib.aclrtHostRegister);
  bind(handle, "aclrtHostUnregister", lib.aclrtHostUnregister);
  bind(handle, "aclrtCreateEventWithFlag", lib.aclrtCreateEventWithFlag);
  bind(handle, "aclrtCreateEventExWithFlag", lib.aclrtCreateEventExWithFlag);
  bind(handle, "aclrtResetEvent", lib.aclrtResetEvent);
  bind(handle, "aclrtGetVersion", lib.aclrtGetVersion);
  bind(handle, "aclsysGetCANNVersion", lib.aclsysGetCANNVersion);
  bind(handle, "aclrtGetSocName", lib.aclrtGetSocName);
  bind(handle, "aclrtMemcpyBatchAsync", lib.aclrtMemcpyBatchAsync);
  bind(handle, "aclrtHostRegisterV2", lib.aclrtHostRegisterV2);
  bind(handle, "aclrtHostGetDevicePointer", lib.aclrtHostGetDevicePointer);
  bind(handle, "aclrtDeviceCanAccessPeer", lib.aclrtDeviceCanAccessPeer);
  bind(handle, "aclrtDeviceEnablePeerAccess", lib.aclrtDeviceEnablePeerAccess);
  bind(handle, "aclrtStreamWaitEvent", lib.aclrtStreamWaitEvent);
  bind(handle, "aclrtQueryEventStatus", lib.aclrtQueryEventStatus);
  bind(handle, "aclrtGetLogicDevIdByUserDevId", lib.aclrtGetLogicDevIdByUserDevId);
  bind(handle, "aclrtGetPhyDevIdByLogicDevId", lib.aclrtGetPhyDevIdByLogicDevId);
  bind(handle, "aclrtSubscribeReport", lib.aclrtSubscribeReport);
  bind(handle, "aclrtUnSubscribeReport", lib.aclrtUnSubscribeReport);
  bind(handle, "aclrtProcessReport", lib.aclrtProcessReport);
  bind(handle, "aclrtLaunchCallback", lib.aclrtLaunchCallback);
  lib.copies_on_host_cpus = dlsym(handle, "dev_sandbox_double_copies_on_host_cpus") != nullptr;

  // The runtime library with the FFTS+ launch. Its stream handles are only valid in
  // the instance AscendCL itself uses, so: the one named explicitly, else the one
  // AscendCL already loaded (RTLD_NOLOAD finds it by name), else the file next to
  // libascendcl.so.
  std::string rt = env_or_empty("DEV_SANDBOX_ACL_RT_LIB");
  void* rt_handle = nullptr;
  if (rt.empty()) {
    rt_handle = dlopen("libruntime.so", RTLD_NOW | RTLD_NOLOAD);
    if (rt_handle) {
      rt = loaded_path(rt_handle, "libruntime.so");
    } else {
      const std::string dir = dir_of(lib.path);
      rt = dir.empty() ? "libruntime.so" : dir + "/libruntime.so";
    }
  }
  if (!rt_handle) rt_handle = dlopen(rt.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!rt_handle) {
    lib.rt_why = "the Ascend runtime library " + rt + " could not be opened (" +
                 dlerror_text_of(dlerror(), rt) + ")";
  } else {
    lib.rt_path = rt;
    bind(rt_handle, "rtFftsPlusTaskLaunchWithFlag", lib.rtFftsPlusTaskLaunchWithFlag);
    if (!lib.has_ffts_launch()) lib.rt_why = rt + " does not export rtFftsPlusTaskLaunchWithFlag";
  }
  return lib;
}

}  // namespace

void AclLibrary::fail(const char* call, aclError code, const std::string& where, const char* hint) const {
  std::string msg = std::string(call) + (where.empty() ? "" : " (" + where + ")") + " failed with error " +
                    std::to_string(code);
  const char* recent = aclGetRecentErrMsg ? aclGetRecentErrMsg() : nullptr;
  if (recent && *recent) {
    std::string text(recent);
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    msg += ": " + text;
  }
  throw RunError(msg + (hint ? hint : ""));
}

const AclLibrary& load_acl_library() {
  // Loaded once; a failure is remembered so every caller gets the same reason.
  static std::once_flag once;
  static AclLibrary lib;
  static std::string error;
  std::call_once(once, [] {
    try {
      lib = open_libraries();
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  if (!error.empty()) throw RunError(error);
  return lib;
}

std::string ffts_unsupported_reason(const char* soc_name) {
  if (!soc_name || !*soc_name) return "aclrtGetSocName gave no SoC name, so FFTS+ support is unknown";
  const std::string soc(soc_name);
  // Atlas A2 (Ascend910B1..B4, B2C, B4_1) and Atlas A3 (Ascend910_93xx) have FFTS+;
  // the bare "Ascend910B" of the first 910 generation does not.
  const std::string a2 = "Ascend910B";
  if (soc.compare(0, a2.size(), a2) == 0 && soc.size() > a2.size() &&
      std::isdigit(static_cast<unsigned char>(soc[a2.size()])))
    return "";
  if (soc.compare(0, 12, "Ascend910_93") == 0) return "";
  return "SoC " + soc + " has no FFTS+ (FFTS+ is on Ascend910B1-B4 / Atlas A2 and Ascend910_93xx / Atlas A3)";
}

bool registration_needs_locked_pages(const char* kernel_release) {
  if (!kernel_release || !*kernel_release) return false;  // unknown: let the runtime decide
  const char* p = kernel_release;
  char* end = nullptr;
  const long major = std::strtol(p, &end, 10);
  if (end == p) return false;
  long minor = 0;
  if (*end == '.') {
    const char* q = end + 1;
    minor = std::strtol(q, &end, 10);
    if (end == q) minor = 0;
  }
  return !(major > 5 || (major == 5 && minor > 10));
}

namespace {

// The names of the entry points not found (false), comma separated.
std::string unbound(std::initializer_list<std::pair<const char*, bool>> entries) {
  std::string missing;
  for (const auto& e : entries)
    if (!e.second) missing += std::string(missing.empty() ? "" : ", ") + e.first;
  return missing;
}

}  // namespace

std::string AclLibrary::register_missing() const {
  if (has_register_v2() || has_register_v1()) return "";
  const std::string missing = unbound({{"aclrtHostRegister", aclrtHostRegister != nullptr},
                                       {"aclrtHostRegisterV2", aclrtHostRegisterV2 != nullptr},
                                       {"aclrtHostGetDevicePointer",
                                        aclrtHostGetDevicePointer != nullptr},
                                       {"aclrtHostUnregister", aclrtHostUnregister != nullptr}});
  return path + " does not export " + missing +
         ", so host memory cannot be registered with the device (aclrtHostRegister arrived in CANN 8.1)";
}

std::string AclLibrary::gate_missing() const {
  const std::string missing =
      unbound({{"aclrtSubscribeReport", aclrtSubscribeReport != nullptr},
               {"aclrtUnSubscribeReport", aclrtUnSubscribeReport != nullptr},
               {"aclrtProcessReport", aclrtProcessReport != nullptr},
               {"aclrtLaunchCallback", aclrtLaunchCallback != nullptr}});
  if (missing.empty()) return "";
  return path + " does not export " + missing + ", so no host callback can hold a stream";
}

}  // namespace acl
}  // namespace ds
