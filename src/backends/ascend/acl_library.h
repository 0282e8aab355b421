// Opening AscendCL (libascendcl.so) and the Ascend runtime (libruntime.so, for
// FFTS+) at run time, and turning their error codes into RunErrors.
#pragma once

#include <string>

#include "backends/ascend/acl_api.h"

namespace ds {
namespace acl {

struct AclLibrary {
  std::string path;     // libascendcl.so actually opened
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
  aclrtHostRegister_t aclrtHostRegister = nullptr;
  aclrtHostUnregister_t aclrtHostUnregister = nullptr;
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
  aclrtCreateEventWithFlag_t aclrtCreateEventWithFlag = nullptr;
  aclrtGetVersion_t aclrtGetVersion = nullptr;
  aclsysGetCANNVersion_t aclsysGetCANNVersion = nullptr;
  aclrtGetSocName_t aclrtGetSocName = nullptr;
  aclrtMemcpyBatchAsync_t aclrtMemcpyBatchAsync = nullptr;
  aclrtHostRegisterV2_t aclrtHostRegisterV2 = nullptr;          // with the next: page-locking registration
  aclrtHostGetDevicePointer_t aclrtHostGetDevicePointer = nullptr;
  aclrtDeviceCanAccessPeer_t aclrtDeviceCanAccessPeer = nullptr;
  aclrtDeviceEnablePeerAccess_t aclrtDeviceEnablePeerAccess = nullptr;
  aclrtStreamWaitEvent_t aclrtStreamWaitEvent = nullptr;

  bool has_register_v2() const { return aclrtHostRegisterV2 && aclrtHostGetDevicePointer; }
  // FFTS+ launch, from the runtime library: WithFlag preferred.
  rtFftsPlusTaskLaunchWithFlag_t rtFftsPlusTaskLaunchWithFlag = nullptr;
  rtFftsPlusTaskLaunch_t rtFftsPlusTaskLaunch = nullptr;

  bool has_ffts_launch() const { return rtFftsPlusTaskLaunchWithFlag || rtFftsPlusTaskLaunch; }

  // "call returned CODE: recent error text" as a RunError; `where` adds context.
  [[noreturn]] void fail(const char* call, aclError code, const std::string& where = "") const;
  void check(aclError code, const char* call, const std::string& where = "") const {
    if (code != ACL_SUCCESS) fail(call, code, where);
  }
};

// Opens the libraries once per process; the backend calls it from init_process only,
// so a parent that just forks workers never loads them. Throws RunError naming every
// path tried.
const AclLibrary& load_acl_library();

// Empty when the SoC has FFTS+, else why not.
std::string ffts_unsupported_reason(const char* soc_name);

// Empty when host memory not from aclrtMallocHost may be registered on a kernel of
// this release (uname -r), else why not: the CANN docs allow it only above 5.10.
std::string foreign_registration_refused_reason(const char* kernel_release);

}  // namespace acl
}  // namespace ds
