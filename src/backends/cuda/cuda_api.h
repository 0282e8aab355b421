// Our own declarations of the CUDA driver API entry points the cuda backend
// calls, so building needs no CUDA toolkit. Types, values and signatures are
// facts from the public cuda.h; tests/unit/test_cuda_api_types.cc checks each
// of them against the real header wherever one is installed.
// Everything lives in ds::cu so that this header and cuda.h can share a
// translation unit; no name here is one of cuda.h's macros.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds {
namespace cu {

enum cudaError_enum {
  CUDA_SUCCESS = 0,
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NOT_INITIALIZED = 3,
  CUDA_ERROR_DEINITIALIZED = 4,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_DEVICE = 101,
  CUDA_ERROR_INVALID_IMAGE = 200,
  CUDA_ERROR_INVALID_CONTEXT = 201,
  CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
  CUDA_ERROR_INVALID_HANDLE = 400,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_NOT_READY = 600,
  CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
  CUDA_ERROR_TOO_MANY_PEERS = 711,
  CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712,
  CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713,
  CUDA_ERROR_MISALIGNED_ADDRESS = 716,
  CUDA_ERROR_NOT_SUPPORTED = 801,
  CUDA_ERROR_UNKNOWN = 999,
};
typedef cudaError_enum CUresult;

typedef unsigned long long CUdeviceptr;  // CUdeviceptr_v2 on 64-bit hosts
static_assert(sizeof(void*) == 8, "the cuda backend binds the 64-bit driver ABI");
typedef uint64_t cuuint64_t;
typedef uint32_t cuuint32_t;
typedef int CUdevice;
typedef struct CUctx_st* CUcontext;
typedef struct CUmod_st* CUmodule;
typedef struct CUfunc_st* CUfunction;
typedef struct CUarray_st* CUarray;
typedef struct CUevent_st* CUevent;
typedef struct CUstream_st* CUstream;
typedef struct CUgraph_st* CUgraph;
typedef struct CUgraphNode_st* CUgraphNode;
typedef struct CUgraphExec_st* CUgraphExec;

enum CUdevice_attribute_enum {
  CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
  CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19,
  CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41,
};
typedef CUdevice_attribute_enum CUdevice_attribute;

enum CUstream_flags_enum { CU_STREAM_DEFAULT = 0x0, CU_STREAM_NON_BLOCKING = 0x1 };
enum CUevent_flags_enum { CU_EVENT_DEFAULT = 0x0, CU_EVENT_DISABLE_TIMING = 0x2 };

enum CUmemorytype_enum {
  CU_MEMORYTYPE_HOST = 0x01,
  CU_MEMORYTYPE_DEVICE = 0x02,
  CU_MEMORYTYPE_ARRAY = 0x03,
  CU_MEMORYTYPE_UNIFIED = 0x04,
};
typedef CUmemorytype_enum CUmemorytype;

enum CUdriverProcAddress_flags_enum {
  CU_GET_PROC_ADDRESS_DEFAULT = 0,
  CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
  CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1,
};

enum CUdriverProcAddressQueryResult_enum {
  CU_GET_PROC_ADDRESS_SUCCESS = 0,
  CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
  CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2,
};
typedef CUdriverProcAddressQueryResult_enum CUdriverProcAddressQueryResult;

// cuda.h spells these as macros (CU_MEMHOSTALLOC_PORTABLE, ...).
constexpr unsigned int kMemHostAllocPortable = 0x01;
constexpr unsigned int kMemHostAllocDeviceMap = 0x02;
constexpr unsigned int kMemHostRegisterPortable = 0x01;
constexpr unsigned int kMemHostRegisterDeviceMap = 0x02;
// CU_STREAM_WAIT_VALUE_GEQ: wait until (int32_t)(*addr - value) >= 0.
constexpr unsigned int kStreamWaitValueGeq = 0x0;

enum CUmemLocationType_enum {
  CU_MEM_LOCATION_TYPE_INVALID = 0x0,
  CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
};
typedef CUmemLocationType_enum CUmemLocationType;

struct CUmemLocation_st {
  CUmemLocationType type;
  int id;
};
typedef CUmemLocation_st CUmemLocation;

enum CUmemcpySrcAccessOrder_enum {
  CU_MEMCPY_SRC_ACCESS_ORDER_INVALID = 0x0,
  CU_MEMCPY_SRC_ACCESS_ORDER_STREAM = 0x1,
  CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL = 0x2,
  CU_MEMCPY_SRC_ACCESS_ORDER_ANY = 0x3,
  CU_MEMCPY_SRC_ACCESS_ORDER_MAX = 0x7FFFFFFF,
};
typedef CUmemcpySrcAccessOrder_enum CUmemcpySrcAccessOrder;

struct CUmemcpyAttributes_st {
  CUmemcpySrcAccessOrder srcAccessOrder;
  CUmemLocation srcLocHint;
  CUmemLocation dstLocHint;
  unsigned int flags;
};
typedef CUmemcpyAttributes_st CUmemcpyAttributes;

struct CUDA_MEMCPY3D_st {
  size_t srcXInBytes;
  size_t srcY;
  size_t srcZ;
  size_t srcLOD;
  CUmemorytype srcMemoryType;
  const void* srcHost;
  CUdeviceptr srcDevice;
  CUarray srcArray;
  void* reserved0;
  size_t srcPitch;
  size_t srcHeight;

  size_t dstXInBytes;
  size_t dstY;
  size_t dstZ;
  size_t dstLOD;
  CUmemorytype dstMemoryType;
  void* dstHost;
  CUdeviceptr dstDevice;
  CUarray dstArray;
  void* reserved1;
  size_t dstPitch;
  size_t dstHeight;

  size_t WidthInBytes;
  size_t Height;
  size_t Depth;
};
typedef CUDA_MEMCPY3D_st CUDA_MEMCPY3D;

// The function pointer type of each exported symbol we bind, named after the
// exported (versioned) symbol.
typedef CUresult (*PFN_cuInit)(unsigned int Flags);
typedef CUresult (*PFN_cuDriverGetVersion)(int* driverVersion);
typedef CUresult (*PFN_cuGetErrorString)(CUresult error, const char** pStr);
typedef CUresult (*PFN_cuGetErrorName)(CUresult error, const char** pStr);
// CUDA 11.3-11.x export; still exported by later drivers.
typedef CUresult (*PFN_cuGetProcAddress)(const char* symbol, void** pfn, int cudaVersion,
                                         cuuint64_t flags);
// CUDA 12.0+.
typedef CUresult (*PFN_cuGetProcAddress_v2)(const char* symbol, void** pfn, int cudaVersion,
                                            cuuint64_t flags,
                                            CUdriverProcAddressQueryResult* symbolStatus);
typedef CUresult (*PFN_cuDeviceGetCount)(int* count);
typedef CUresult (*PFN_cuDeviceGet)(CUdevice* device, int ordinal);
typedef CUresult (*PFN_cuDeviceGetName)(char* name, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetPCIBusId)(char* pciBusId, int len, CUdevice dev);
typedef CUresult (*PFN_cuDeviceTotalMem_v2)(size_t* bytes, CUdevice dev);
typedef CUresult (*PFN_cuDeviceGetAttribute)(int* pi, CUdevice_attribute attrib, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRetain)(CUcontext* pctx, CUdevice dev);
typedef CUresult (*PFN_cuDevicePrimaryCtxRelease_v2)(CUdevice dev);
typedef CUresult (*PFN_cuCtxSetCurrent)(CUcontext ctx);
// The original (CUDA 2.0) form: the current context. CUDA 13's cuCtxSynchronize_v2
// takes a context and is not what we bind.
typedef CUresult (*PFN_cuCtxSynchronize)(void);
typedef CUresult (*PFN_cuDeviceCanAccessPeer)(int* canAccessPeer, CUdevice dev, CUdevice peerDev);
typedef CUresult (*PFN_cuCtxEnablePeerAccess)(CUcontext peerContext, unsigned int Flags);
typedef CUresult (*PFN_cuMemGetInfo_v2)(size_t* free, size_t* total);
typedef CUresult (*PFN_cuMemAlloc_v2)(CUdeviceptr* dptr, size_t bytesize);
typedef CUresult (*PFN_cuMemFree_v2)(CUdeviceptr dptr);
typedef CUresult (*PFN_cuMemHostAlloc)(void** pp, size_t bytesize, unsigned int Flags);
typedef CUresult (*PFN_cuMemFreeHost)(void* p);
typedef CUresult (*PFN_cuMemHostGetDevicePointer_v2)(CUdeviceptr* pdptr, void* p,
                                                     unsigned int Flags);
typedef CUresult (*PFN_cuMemHostRegister_v2)(void* p, size_t bytesize, unsigned int Flags);
typedef CUresult (*PFN_cuMemHostUnregister)(void* p);
typedef CUresult (*PFN_cuStreamCreate)(CUstream* phStream, unsigned int Flags);
typedef CUresult (*PFN_cuStreamDestroy_v2)(CUstream hStream);
typedef CUresult (*PFN_cuStreamSynchronize)(CUstream hStream);
typedef CUresult (*PFN_cuEventCreate)(CUevent* phEvent, unsigned int Flags);
typedef CUresult (*PFN_cuEventDestroy_v2)(CUevent hEvent);
typedef CUresult (*PFN_cuEventRecord)(CUevent hEvent, CUstream hStream);
typedef CUresult (*PFN_cuEventElapsedTime)(float* pMilliseconds, CUevent hStart, CUevent hEnd);
typedef CUresult (*PFN_cuEventQuery)(CUevent hEvent);
// CUDA 12.8+: same signature; cuda.h maps cuEventElapsedTime to it since 12.8.
typedef CUresult (*PFN_cuEventElapsedTime_v2)(float* pMilliseconds, CUevent hStart, CUevent hEnd);
typedef CUresult (*PFN_cuMemcpyAsync)(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                      CUstream hStream);
typedef CUresult (*PFN_cuMemcpyHtoDAsync_v2)(CUdeviceptr dstDevice, const void* srcHost,
                                             size_t ByteCount, CUstream hStream);
typedef CUresult (*PFN_cuMemcpyDtoHAsync_v2)(void* dstHost, CUdeviceptr srcDevice,
                                             size_t ByteCount, CUstream hStream);
typedef CUresult (*PFN_cuMemcpyDtoDAsync_v2)(CUdeviceptr dstDevice, CUdeviceptr srcDevice,
                                             size_t ByteCount, CUstream hStream);
typedef CUresult (*PFN_cuMemcpy)(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount);
typedef CUresult (*PFN_cuMemcpyHtoD_v2)(CUdeviceptr dstDevice, const void* srcHost,
                                        size_t ByteCount);
typedef CUresult (*PFN_cuMemcpyDtoH_v2)(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount);
// CUDA 12.8's cuMemcpyBatchAsync (with failIdx); CUDA 13 headers call it by its
// exported name only and map the macro to cuMemcpyBatchAsync_v2, which we do not use.
typedef CUresult (*PFN_cuMemcpyBatchAsync)(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes,
                                           size_t count, CUmemcpyAttributes* attrs,
                                           size_t* attrsIdxs, size_t numAttrs, size_t* failIdx,
                                           CUstream hStream);
// CUDA 11.7's stream memory operation, supported on every device since (the _v1
// API before it needed the driver's opt-in); we bind only this one.
typedef CUresult (*PFN_cuStreamWaitValue32_v2)(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                               unsigned int flags);
typedef CUresult (*PFN_cuGraphCreate)(CUgraph* phGraph, unsigned int flags);
typedef CUresult (*PFN_cuGraphAddMemcpyNode)(CUgraphNode* phGraphNode, CUgraph hGraph,
                                             const CUgraphNode* dependencies,
                                             size_t numDependencies,
                                             const CUDA_MEMCPY3D* copyParams, CUcontext ctx);
typedef CUresult (*PFN_cuGraphInstantiateWithFlags)(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                    unsigned long long flags);
typedef CUresult (*PFN_cuGraphLaunch)(CUgraphExec hGraphExec, CUstream hStream);
typedef CUresult (*PFN_cuGraphExecDestroy)(CUgraphExec hGraphExec);
typedef CUresult (*PFN_cuGraphDestroy)(CUgraph hGraph);
typedef CUresult (*PFN_cuModuleLoadData)(CUmodule* module, const void* image);
typedef CUresult (*PFN_cuModuleUnload)(CUmodule hmod);
typedef CUresult (*PFN_cuModuleGetFunction)(CUfunction* hfunc, CUmodule hmod, const char* name);
typedef CUresult (*PFN_cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                       unsigned int gridDimZ, unsigned int blockDimX,
                                       unsigned int blockDimY, unsigned int blockDimZ,
                                       unsigned int sharedMemBytes, CUstream hStream,
                                       void** kernelParams, void** extra);

// Every entry point resolved after cuInit's bootstrap, as
//   X(name cuGetProcAddress knows, exported symbol, CUDA version whose ABI we bind)
// The exported symbol is what dlsym finds when cuGetProcAddress is missing.
#define DS_CUDA_ENTRY_POINTS(X)                                      \
  X(cuDriverGetVersion, cuDriverGetVersion, 2020)                    \
  X(cuGetErrorString, cuGetErrorString, 6000)                        \
  X(cuGetErrorName, cuGetErrorName, 6000)                            \
  X(cuDeviceGetCount, cuDeviceGetCount, 2000)                        \
  X(cuDeviceGet, cuDeviceGet, 2000)                                  \
  X(cuDeviceGetName, cuDeviceGetName, 2000)                          \
  X(cuDeviceGetPCIBusId, cuDeviceGetPCIBusId, 4010)                  \
  X(cuDeviceTotalMem, cuDeviceTotalMem_v2, 3020)                     \
  X(cuDeviceGetAttribute, cuDeviceGetAttribute, 2000)                \
  X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, 7000)        \
  X(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, 11000)  \
  X(cuCtxSetCurrent, cuCtxSetCurrent, 4000)                          \
  X(cuCtxSynchronize, cuCtxSynchronize, 2000)                        \
  X(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, 4000)              \
  X(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, 4000)              \
  X(cuMemGetInfo, cuMemGetInfo_v2, 3020)                             \
  X(cuMemAlloc, cuMemAlloc_v2, 3020)                                 \
  X(cuMemFree, cuMemFree_v2, 3020)                                   \
  X(cuMemHostAlloc, cuMemHostAlloc, 2020)                            \
  X(cuMemFreeHost, cuMemFreeHost, 2000)                              \
  X(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, 3020)   \
  X(cuMemHostRegister, cuMemHostRegister_v2, 6050)                   \
  X(cuMemHostUnregister, cuMemHostUnregister, 4000)                  \
  X(cuStreamCreate, cuStreamCreate, 2000)                            \
  X(cuStreamDestroy, cuStreamDestroy_v2, 4000)                       \
  X(cuStreamSynchronize, cuStreamSynchronize, 2000)                  \
  X(cuEventCreate, cuEventCreate, 2000)                              \
  X(cuEventDestroy, cuEventDestroy_v2, 4000)                         \
  X(cuEventRecord, cuEventRecord, 2000)                              \
  X(cuEventElapsedTime, cuEventElapsedTime, 2000)                    \
  X(cuEventQuery, cuEventQuery, 2000)                                \
  X(cuMemcpyAsync, cuMemcpyAsync, 4000)                              \
  X(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, 3020)                   \
  X(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, 3020)                   \
  X(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, 3020)                   \
  X(cuMemcpy, cuMemcpy, 4000)                                        \
  X(cuMemcpyHtoD, cuMemcpyHtoD_v2, 3020)                             \
  X(cuMemcpyDtoH, cuMemcpyDtoH_v2, 3020)                             \
  X(cuModuleLoadData, cuModuleLoadData, 2000)                        \
  X(cuModuleUnload, cuModuleUnload, 2000)                            \
  X(cuModuleGetFunction, cuModuleGetFunction, 2000)                  \
  X(cuLaunchKernel, cuLaunchKernel, 4000)

// Resolved when the driver has them (null otherwise). The graph entry points
// are the batch path of drivers without cuMemcpyBatchAsync; drivers before CUDA
// 11.4 have no cuGraphInstantiateWithFlags and so no batch path at all.
// cuEventElapsedTime_v2 is preferred where it exists (cuEventElapsedTime otherwise).
// cuStreamWaitValue32 (11.7+) holds a stream for the start gate; without it a
// spin kernel does (copy_kernel.cu's ds_gate_kernel).
#define DS_CUDA_OPTIONAL_ENTRY_POINTS(X)                             \
  X(cuEventElapsedTime, cuEventElapsedTime_v2, 12080)                \
  X(cuMemcpyBatchAsync, cuMemcpyBatchAsync, 12080)                   \
  X(cuStreamWaitValue32, cuStreamWaitValue32_v2, 11070)              \
  X(cuGraphCreate, cuGraphCreate, 10000)                             \
  X(cuGraphAddMemcpyNode, cuGraphAddMemcpyNode, 10000)               \
  X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 11040) \
  X(cuGraphLaunch, cuGraphLaunch, 10000)                             \
  X(cuGraphExecDestroy, cuGraphExecDestroy, 10000)                   \
  X(cuGraphDestroy, cuGraphDestroy, 10000)

}  // namespace cu
}  // namespace ds
