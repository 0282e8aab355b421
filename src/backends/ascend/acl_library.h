// Opening AscendCL (libascendcl.so) and the Ascend runtime (libruntime.so, for
// FFTS+) at run time, and turning their error codes into RunErrors.
#pragma once

#include <string>
#include <vector>

#include "backends/ascend/acl_api.h"

namespace ds {
namespace acl {

struct AclLibrary {
  std::string path;     // libascendcl.so actually opened
  bool copies_on_host_cpus = false;  // exports dev_sandbox_double_copies_on_host_cpus (the test double)
  std::string rt_path;  // libruntime.so actually opened, empty if none
  std::string rt_why;   // why the runtime library or its FFTS+ entry point is missing

  // Required.
  aclInit_t aclInit = nullptr;
  aclFinalize_t aclFinalize = nullptr;
  aclGetRecentErrMsg_t aclGetRecentErrMsg = nullptr;
  aclrtGetDeviceCount_t aclrtGetDeviceCount = nullptr;
  aclrtSetDevice_t aclrtSetDevice = nullptr;
  aclrtResetDevice_t aclrtResetDevice = nullptr;
  aclrtGetMemInfo_t aclrtGetMemInfo = nullptr;
  aclrtMalloc_t aclrtMalloc = nullptr;
  aclrtFree_t aclrtFree = nullptr;
  aclrtMallocHost_t aclrtMallocHost = nullptr;
  aclrtFreeHost_t aclrtFreeHost = nullptr;
  aclrtCreateStream_t aclrtCreateStream = nullptr;
  aclrtDestroyStream_t aclrtDestroyStream = nullptr;
  aclrtSynchronizeStream_t aclrtSynchronizeStream = nullptr;
  aclrtCreateEvent_t aclrtCreateEvent = nullptr;
  aclrtRecordEvent_t aclrtRecordEvent = nullptr;
  aclrtEventElapsedTime_t aclrtEventElapsedTime = nullptr;
  aclrtDestroyEvent_t aclrtDestroyEvent = nullptr;
  aclrtMemcpy_t aclrtMemcpy = nullptr;
  aclrtMemcpyAsync_t aclrtMemcpyAsync = nullptr;
  // Optional: absent in some CANN versions.
  aclrtHostRegister_t aclrtHostRegister = nullptr;      // CANN 8.1 and newer
  aclrtHostUnregister_t aclrtHostUnregister = nullptr;  // CANN 8.1 and newer
  aclrtCreateEventWithFlag_t aclrtCreateEventWithFlag = nullptr;
  aclrtCreateEventExWithFlag_t aclrtCreateEventExWithFlag = nullptr;  // reusable events
  aclrtResetEvent_t aclrtResetEvent = nullptr;
  aclrtGetVersion_t aclrtGetVersion = nullptr;
  aclsysGetCANNVersion_t aclsysGetCANNVersion = nullptr;
  aclrtGetSocName_t aclrtGetSocName = nullptr;
  aclrtMemcpyBatchAsync_t aclrtMemcpyBatchAsync = nullptr;
  aclrtHostRegisterV2_t aclrtHostRegisterV2 = nullptr;          // with the next: page-locking registration
  aclrtHostGetDevicePointer_t aclrtHostGetDevicePointer = nullptr;
  aclrtDeviceCanAccessPeer_t aclrtDeviceCanAccessPeer = nullptr;
  aclrtDeviceEnablePeerAccess_t aclrtDeviceEnablePeerAccess = nullptr;
  aclrtStreamWaitEvent_t aclrtStreamWaitEvent = nullptr;
  aclrtQueryEventStatus_t aclrtQueryEventStatus = nullptr;  // load: a staging buffer's copies done?
  // A device's driver ids, for DCMI (its PCI address and so its NUMA node).
  aclrtGetLogicDevIdByUserDevId_t aclrtGetLogicDevIdByUserDevId = nullptr;
  aclrtGetPhyDevIdByLogicDevId_t aclrtGetPhyDevIdByLogicDevId = nullptr;
  // Host callbacks on a stream: the stream start gate's hold.
  aclrtSubscribeReport_t aclrtSubscribeReport = nullptr;
  aclrtUnSubscribeReport_t aclrtUnSubscribeReport = nullptr;
  aclrtProcessReport_t aclrtProcessReport = nullptr;
  aclrtLaunchCallback_t aclrtLaunchCallback = nullptr;
  // Empty when streams can be held (all four callback entry points), else which are missing.
  std::string gate_missing() const;

  bool has_register_v2() const { return aclrtHostRegisterV2 && aclrtHostGetDevicePointer && aclrtHostUnregister; }
  bool has_register_v1() const { return aclrtHostRegister && aclrtHostUnregister; }
  // Empty when host memory can be registered (V2, or V1), else which entry points
  // this CANN lacks: the cases that register memory say so and do not run.
  std::string register_missing() const;
  // FFTS+ launch, from the runtime library (the exported entry point).
  rtFftsPlusTaskLaunchWithFlag_t rtFftsPlusTaskLaunchWithFlag = nullptr;

  bool has_ffts_launch() const { return rtFftsPlusTaskLaunchWithFlag != nullptr; }

  // "call (where) failed with error CODE: recent error text<hint>" as a RunError.
  [[noreturn]] void fail(const char* call, aclError code, const std::string& where = "",
                         const char* hint = "") const;
  void check(aclError code, const char* call, const std::string& where = "") const {
    if (code != ACL_SUCCESS) fail(call, code, where);
  }
};

// Shared with the DCMI loader (dcmi_library.cc):
// The variable's value, "" when unset.
std::string env_or_empty(const char* name);
// dlerror()'s text without the path it repeats. Call right after a failed dlopen.
std::string dlerror_text_of(const char* err, const std::string& path);
// The file a handle's object was loaded from, else `fallback`.
std::string loaded_path(void* handle, const std::string& fallback);
// dlopen (RTLD_NOW | RTLD_LOCAL) of each candidate in turn: the first that opens, with
// `opened` its file (a bare name resolved through the loader). Null when none did,
// `tried` then listing "path (why)" for each.
void* open_first(const std::vector<std::string>& candidates, std::string* opened, std::string* tried);

// Opens the libraries once per process; the backend calls it from init_process only,
// so a parent that just forks workers never loads them. Throws RunError naming every
// path tried.
const AclLibrary& load_acl_library();

// Empty when the SoC has FFTS+, else why not.
std::string ffts_unsupported_reason(const char* soc_name);

// True on kernels 5.10 and older (release as uname -r gives it), where the CANN docs
// allow registering only aclrtMallocHost memory: there the backend locks the pages of
// its own mappings with mlock() before registering them, as UCM does. False when the
// release cannot be read (the runtime decides).
bool registration_needs_locked_pages(const char* kernel_release);

}  // namespace acl
}  // namespace ds
