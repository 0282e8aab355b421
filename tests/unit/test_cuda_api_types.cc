// Compile-time check of src/backends/cuda/cuda_api.h against the real cuda.h:
// every function pointer type we bind is exactly the type of the exported entry
// point it is bound to, every enum value and struct layout matches. Built only
// where cuda.h is installed; if it compiles, it passed.
#include "backends/cuda/cuda_api.h"

// Declare every exported symbol under its own name (cuMemcpyBatchAsync with
// failIdx, cuGetProcAddress without symbolStatus, ...) instead of mapping the
// base names to the newest versions.
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
// PFN_<name>_v<version>: the ABI of each entry point as of a CUDA version.
#include <cudaTypedefs.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

namespace {

namespace our = ds::cu;

// Our type -> the real type it stands for; other types map to themselves.
template <typename T> struct Real { using type = T; };
template <typename T> struct Real<T*> { using type = typename Real<T>::type*; };
template <typename T> struct Real<const T> { using type = const typename Real<T>::type; };
template <typename R, typename... A> struct Real<R (*)(A...)> {
  using type = typename Real<R>::type (*)(typename Real<A>::type...);
};
#define DS_MAP(ours, real) \
  template <> struct Real<ours> { using type = real; };
DS_MAP(our::CUresult, ::CUresult)
DS_MAP(our::CUctx_st, ::CUctx_st)
DS_MAP(our::CUmod_st, ::CUmod_st)
DS_MAP(our::CUfunc_st, ::CUfunc_st)
DS_MAP(our::CUarray_st, ::CUarray_st)
DS_MAP(our::CUevent_st, ::CUevent_st)
DS_MAP(our::CUstream_st, ::CUstream_st)
DS_MAP(our::CUgraph_st, ::CUgraph_st)
DS_MAP(our::CUgraphNode_st, ::CUgraphNode_st)
DS_MAP(our::CUgraphExec_st, ::CUgraphExec_st)
DS_MAP(our::CUdevice_attribute, ::CUdevice_attribute)
DS_MAP(our::CUdriverProcAddressQueryResult, ::CUdriverProcAddressQueryResult)
DS_MAP(our::CUmemcpyAttributes, ::CUmemcpyAttributes)
DS_MAP(our::CUDA_MEMCPY3D, ::CUDA_MEMCPY3D)
#undef DS_MAP

template <typename Ours, typename Real_>
constexpr bool same_type() {
  return std::is_same<typename Real<Ours>::type, Real_>::value;
}

// Scalars.
static_assert(std::is_same<our::CUdeviceptr, ::CUdeviceptr>::value, "CUdeviceptr");
static_assert(std::is_same<our::CUdevice, ::CUdevice>::value, "CUdevice");
static_assert(std::is_same<our::cuuint64_t, ::cuuint64_t>::value, "cuuint64_t");
static_assert(sizeof(our::CUresult) == sizeof(::CUresult), "CUresult size");

// Every entry point: our PFN_<symbol> is the type of ::<symbol>.
#define DS_CHECK_PFN(name, symbol, version)                                       \
  static_assert(same_type<our::PFN_##symbol, decltype(&::symbol)>(), #symbol);
DS_CUDA_ENTRY_POINTS(DS_CHECK_PFN)
DS_CUDA_OPTIONAL_ENTRY_POINTS(DS_CHECK_PFN)
DS_CHECK_PFN(cuInit, cuInit, 2000)
DS_CHECK_PFN(cuGetProcAddress, cuGetProcAddress, 11030)
DS_CHECK_PFN(cuGetProcAddress, cuGetProcAddress_v2, 12000)
#undef DS_CHECK_PFN

// The version we ask cuGetProcAddress for is one where that ABI begins:
// cudaTypedefs.h names a PFN_<name>_v<version> for it, of our type.
#define DS_CHECK_VERSION(name, symbol, version)                                         \
  static_assert(same_type<our::PFN_##symbol, ::PFN_##name##_v##version>(),               \
                #name " at " #version " is not the ABI of " #symbol);
DS_CUDA_ENTRY_POINTS(DS_CHECK_VERSION)
DS_CUDA_OPTIONAL_ENTRY_POINTS(DS_CHECK_VERSION)
#undef DS_CHECK_VERSION

// Enum values and flags.
#define DS_SAME_VALUE(name) \
  static_assert(static_cast<long long>(our::name) == static_cast<long long>(::name), #name);
DS_SAME_VALUE(CUDA_SUCCESS)
DS_SAME_VALUE(CUDA_ERROR_INVALID_VALUE)
DS_SAME_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
DS_SAME_VALUE(CUDA_ERROR_NOT_INITIALIZED)
DS_SAME_VALUE(CUDA_ERROR_DEINITIALIZED)
DS_SAME_VALUE(CUDA_ERROR_NO_DEVICE)
DS_SAME_VALUE(CUDA_ERROR_INVALID_DEVICE)
DS_SAME_VALUE(CUDA_ERROR_INVALID_IMAGE)
DS_SAME_VALUE(CUDA_ERROR_INVALID_CONTEXT)
DS_SAME_VALUE(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED)
DS_SAME_VALUE(CUDA_ERROR_INVALID_PTX)
DS_SAME_VALUE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
DS_SAME_VALUE(CUDA_ERROR_INVALID_HANDLE)
DS_SAME_VALUE(CUDA_ERROR_NOT_FOUND)
DS_SAME_VALUE(CUDA_ERROR_NOT_READY)
DS_SAME_VALUE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
DS_SAME_VALUE(CUDA_ERROR_TOO_MANY_PEERS)
DS_SAME_VALUE(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
DS_SAME_VALUE(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
DS_SAME_VALUE(CUDA_ERROR_MISALIGNED_ADDRESS)
DS_SAME_VALUE(CUDA_ERROR_NOT_SUPPORTED)
DS_SAME_VALUE(CUDA_ERROR_UNKNOWN)
DS_SAME_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
DS_SAME_VALUE(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
DS_SAME_VALUE(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
DS_SAME_VALUE(CU_STREAM_DEFAULT)
DS_SAME_VALUE(CU_STREAM_NON_BLOCKING)
DS_SAME_VALUE(CU_EVENT_DEFAULT)
DS_SAME_VALUE(CU_EVENT_DISABLE_TIMING)
DS_SAME_VALUE(CU_MEMORYTYPE_HOST)
DS_SAME_VALUE(CU_MEMORYTYPE_DEVICE)
DS_SAME_VALUE(CU_MEMORYTYPE_ARRAY)
DS_SAME_VALUE(CU_MEMORYTYPE_UNIFIED)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_DEFAULT)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_LEGACY_STREAM)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_SUCCESS)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)
DS_SAME_VALUE(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
DS_SAME_VALUE(CU_MEM_LOCATION_TYPE_INVALID)
DS_SAME_VALUE(CU_MEM_LOCATION_TYPE_DEVICE)
DS_SAME_VALUE(CU_MEMCPY_SRC_ACCESS_ORDER_INVALID)
DS_SAME_VALUE(CU_MEMCPY_SRC_ACCESS_ORDER_STREAM)
DS_SAME_VALUE(CU_MEMCPY_SRC_ACCESS_ORDER_DURING_API_CALL)
DS_SAME_VALUE(CU_MEMCPY_SRC_ACCESS_ORDER_ANY)
DS_SAME_VALUE(CU_MEMCPY_SRC_ACCESS_ORDER_MAX)
#undef DS_SAME_VALUE
static_assert(our::kMemHostAllocPortable == CU_MEMHOSTALLOC_PORTABLE, "CU_MEMHOSTALLOC_PORTABLE");
static_assert(our::kMemHostAllocDeviceMap == CU_MEMHOSTALLOC_DEVICEMAP, "CU_MEMHOSTALLOC_DEVICEMAP");
static_assert(our::kMemHostRegisterPortable == CU_MEMHOSTREGISTER_PORTABLE, "CU_MEMHOSTREGISTER_PORTABLE");
static_assert(our::kMemHostRegisterDeviceMap == CU_MEMHOSTREGISTER_DEVICEMAP, "CU_MEMHOSTREGISTER_DEVICEMAP");
static_assert(our::kStreamWaitValueGeq == CU_STREAM_WAIT_VALUE_GEQ, "CU_STREAM_WAIT_VALUE_GEQ");
static_assert(std::is_same<our::cuuint32_t, ::cuuint32_t>::value, "cuuint32_t");

// Struct layouts, field by field.
#define DS_SAME_FIELD(ours, real, field)                                              \
  static_assert(offsetof(our::ours, field) == offsetof(::real, field), #real "." #field); \
  static_assert(sizeof(our::ours::field) == sizeof(::real::field), #real "." #field " size");
static_assert(sizeof(our::CUmemLocation) == sizeof(::CUmemLocation), "CUmemLocation");
DS_SAME_FIELD(CUmemLocation, CUmemLocation, type)
DS_SAME_FIELD(CUmemLocation, CUmemLocation, id)
static_assert(sizeof(our::CUmemcpyAttributes) == sizeof(::CUmemcpyAttributes), "CUmemcpyAttributes");
DS_SAME_FIELD(CUmemcpyAttributes, CUmemcpyAttributes, srcAccessOrder)
DS_SAME_FIELD(CUmemcpyAttributes, CUmemcpyAttributes, srcLocHint)
DS_SAME_FIELD(CUmemcpyAttributes, CUmemcpyAttributes, dstLocHint)
DS_SAME_FIELD(CUmemcpyAttributes, CUmemcpyAttributes, flags)
static_assert(sizeof(our::CUDA_MEMCPY3D) == sizeof(::CUDA_MEMCPY3D), "CUDA_MEMCPY3D");
#define DS_MEMCPY3D_FIELD(f) DS_SAME_FIELD(CUDA_MEMCPY3D, CUDA_MEMCPY3D, f)
DS_MEMCPY3D_FIELD(srcXInBytes)
DS_MEMCPY3D_FIELD(srcY)
DS_MEMCPY3D_FIELD(srcZ)
DS_MEMCPY3D_FIELD(srcLOD)
DS_MEMCPY3D_FIELD(srcMemoryType)
DS_MEMCPY3D_FIELD(srcHost)
DS_MEMCPY3D_FIELD(srcDevice)
DS_MEMCPY3D_FIELD(srcArray)
DS_MEMCPY3D_FIELD(reserved0)
DS_MEMCPY3D_FIELD(srcPitch)
DS_MEMCPY3D_FIELD(srcHeight)
DS_MEMCPY3D_FIELD(dstXInBytes)
DS_MEMCPY3D_FIELD(dstY)
DS_MEMCPY3D_FIELD(dstZ)
DS_MEMCPY3D_FIELD(dstLOD)
DS_MEMCPY3D_FIELD(dstMemoryType)
DS_MEMCPY3D_FIELD(dstHost)
DS_MEMCPY3D_FIELD(dstDevice)
DS_MEMCPY3D_FIELD(dstArray)
DS_MEMCPY3D_FIELD(reserved1)
DS_MEMCPY3D_FIELD(dstPitch)
DS_MEMCPY3D_FIELD(dstHeight)
DS_MEMCPY3D_FIELD(WidthInBytes)
DS_MEMCPY3D_FIELD(Height)
DS_MEMCPY3D_FIELD(Depth)
#undef DS_MEMCPY3D_FIELD
#undef DS_SAME_FIELD

}  // namespace

int main() {
  std::printf("cuda_api.h matches cuda.h %d.%d\n", CUDA_VERSION / 1000, (CUDA_VERSION % 1000) / 10);
  return 0;
}
