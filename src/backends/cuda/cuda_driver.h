// The CUDA driver as this process sees it: libcuda opened with dlopen, its entry
// points bound through cuGetProcAddress (or dlsym of the exported names), and
// cuInit done. One per process; a forked child binds again in its own.
#pragma once

#include <string>
#include <vector>

#include "backends/cuda/cuda_api.h"

namespace ds {

struct CudaDriver {
#define DS_CUDA_FIELD(name, symbol, version) cu::PFN_##symbol symbol = nullptr;
  DS_CUDA_ENTRY_POINTS(DS_CUDA_FIELD)
  DS_CUDA_OPTIONAL_ENTRY_POINTS(DS_CUDA_FIELD)
#undef DS_CUDA_FIELD

  // CUDA graphs of memcpy nodes can be built and launched (CUDA 11.4+).
  bool has_graphs() const {
    return cuGraphCreate && cuGraphAddMemcpyNode && cuGraphInstantiateWithFlags && cuGraphLaunch &&
           cuGraphExecDestroy && cuGraphDestroy;
  }
  // The batch path (CE-BATCH, the direct path) exists: natively or as graphs.
  bool has_batch() const { return cuMemcpyBatchAsync || has_graphs(); }

  std::string library_path;  // the file dlopen actually opened
  bool copies_on_host_cpus = false;  // exports dev_sandbox_double_copies_on_host_cpus (the test double)
  std::string resolved_by;   // cuGetProcAddress_v2, cuGetProcAddress or dlsym
  // Optional entry points this driver does not have: "symbol (why)".
  std::vector<std::string> absent;
};

// Loads and initialises the driver in this process once (again after fork).
// RunError naming DEV_SANDBOX_CUDA_LIB when libcuda cannot be loaded.
const CudaDriver& cuda_driver();

// "call: CUDA_ERROR_X (text)" for a failed call.
std::string cuda_error_text(const std::string& call, cu::CUresult r);

// Throws RunError(call, r) unless r is CUDA_SUCCESS.
void cuda_check(cu::CUresult r, const char* call);
void cuda_check(cu::CUresult r, const std::string& call);

}  // namespace ds
