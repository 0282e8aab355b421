// The PTX of copy_kernel.cu, embedded at build time (see ptx.cmake).
#pragma once

namespace ds {

extern const char kCopyKernelPtx[];     // NUL-terminated PTX text
extern const char kCopyKernelPtxFrom[];  // "nvcc <version>" or "committed copy_kernel.ptx"
constexpr const char* kCopyKernelName = "ds_copy_kernel";
constexpr const char* kGatherKernelName = "ds_gather_kernel";  // every copy of a descriptor table in one launch
constexpr const char* kGateKernelName = "ds_gate_kernel";  // the start gate's hold without cuStreamWaitValue32

}  // namespace ds
