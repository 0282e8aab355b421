// Our own declarations of the AscendCL and Ascend runtime (FFTS+) entry points,
// enum values and structures the ascend backend uses. No CANN header is needed to
// build; the libraries are opened at run time (acl_library.h).
//
// Where each fact comes from (public sources, read through the stored-code index):
// - aclrtMemcpyKind, aclrtMemMallocPolicy, aclrtMemAttr, aclrtHostRegisterType,
//   aclrtMemLocationType, aclrtMemLocation, aclrtMemcpyBatchAttr, ACL_EVENT_TIME_LINE
//   and the signatures of aclrtSetDevice/ResetDevice/GetDeviceCount/CreateStream/
//   DestroyStream/SynchronizeStream/CreateEvent/CreateEventWithFlag/RecordEvent/
//   EventElapsedTime/DestroyEvent/Malloc/Free/MallocHost/FreeHost/Memcpy/MemcpyAsync/
//   GetMemInfo: hicann/runtime include/external/acl/acl_rt.h (ACL API 1.15.0), the same
//   values in Ascend/tensorflow inc/external/acl/acl_rt.h (older, without HostRegister).
// - aclrtHostRegister(void*, uint64_t, aclrtHostRegisterType, void**) and
//   aclrtHostUnregister(void*): hicann/runtime acl_rt.h; CANN docs "aclrtHostRegister"
//   (the mapped address is for device-side access, not for aclrtMemcpy*; the pointer
//   must be 4 KiB aligned; on kernels <= 5.10 it must be pinned memory).
// - aclrtMemcpyBatchAsync(void**, size_t*, void**, size_t*, size_t,
//   aclrtMemcpyBatchAttr*, size_t*, size_t, size_t*, aclrtStream): CANN docs
//   "aclrtMemcpyBatchAsync" (hicann/runtime docs/api_docs) and torch_npu's
//   AclInterface (dlsym of the same name). The same page: attrs[k] applies to copies
//   attrsIndexes[k] .. attrsIndexes[k+1]-1 (the first entry must be 0); the interface
//   is experimental and one batch may only copy host to device or device to host.
// - aclrtHostRegisterV2(void*, uint64_t, uint32_t flag), ACL_HOST_REG_MAPPED 0x2,
//   ACL_HOST_REG_PINNED 0x10000000 (may be or-ed): CANN docs "aclrtHostRegisterV2"
//   (hicann/runtime docs/03_api_ref); aclrtHostGetDevicePointer(void* pHost,
//   void** pDevice, uint32_t flag) as declared in hicann/runtime's AscendCL sources
//   (note: host first, unlike cudaHostGetDevicePointer). Docs "aclrtHostRegister": it
//   maps (whether the runtime then treats the memory as page-locked for
//   aclrtMemcpyAsync is not documented, and not measured here); both register pages:
//   on kernels 5.10 and older only aclrtMallocHost memory may be registered.
// - aclrtDeviceCanAccessPeer(int32_t* canAccessPeer, int32_t deviceId, int32_t
//   peerDeviceId), aclrtDeviceEnablePeerAccess(int32_t peerDeviceId, uint32_t flags = 0):
//   CANN docs of the same names; enabling is per device and one way (the current device
//   gets access to the peer); docs "aclrtMemcpy": on Atlas A2 a copy between two devices
//   needs it first. Dev guide "跨Device的数据交互": device 1 enables peer 0, then copies
//   device 0's memory to device 1.
// - aclrtCreateEventExWithFlag(aclrtEvent*, uint32_t) (events meant to be reused: no
//   aclrtResetEvent allowed on them; without ACL_EVENT_SYNC no aclrtStreamWaitEvent),
//   aclrtResetEvent(aclrtEvent, aclrtStream): hicann/runtime include/external/acl/acl_rt.h
//   and docs/zh/api_ref/07_event_management.md; torch_npu prefers the Ex call for reuse.
// - ACL_ERROR_RT_FEATURE_NOT_SUPPORT 207000: hicann/runtime
//   include/external/acl/error_codes/rt_error_codes.h; api_impl.cc MemcpyBatchAsync
//   answers it where the driver has no batched copies.
// - descAddrType RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_DEVICE 1 and what a launch does with
//   each kind (host: BAR pool up to PCIE_BAR_COPY_SIZE, else device malloc + blocking
//   H2D copy per launch; device: used in place): hicann/runtime
//   src/runtime/feature/ffts/ffts_task.cc FftsPlusTaskInit, core/src/pool/pool.hpp.
// - ACL_EVENT_SYNC 0x1 (an event other streams may wait on with aclrtStreamWaitEvent;
//   without it that is not allowed), ACL_EVENT_TIME_LINE 0x8: CANN docs
//   "aclrtCreateEventWithFlag"; aclrtStreamWaitEvent(aclrtStream, aclrtEvent): docs of
//   that name. Docs "aclrtEventElapsedTime": start and end event recorded on one stream.
// - aclInit(const char*), aclFinalize(), aclGetRecentErrMsg(), aclCANNPackageName,
//   aclCANNPackageVersion (128 + 4x64 + 128 bytes), aclsysGetCANNVersion: CANN's
//   include/external/acl/acl.h, a stored copy carrying the open-runtime licence header
//   (repository not shown by the index; hicann/runtime's copy at d8beaaf only includes
//   the sub-headers), ACL_PKG_VERSION_MAX_SIZE 128, ACL_PKG_VERSION_PARTS_MAX_SIZE 64.
// - aclrtGetVersion(int32_t*, int32_t*, int32_t*), const char* aclrtGetSocName():
//   acl_base.h / CANN docs "aclrtGetSocName".
// - aclError values ACL_SUCCESS 0, ACL_ERROR_REPEAT_INITIALIZE 100002: acl_base.h as
//   quoted verbatim by several public projects (repository of the header itself not
//   pinned).
// - rtFftsPlusComCtx_t / rtFftsPlusSdmaCtx_t (128 bytes, pack(1)), RT_CTX_TYPE_SDMA 8,
//   RT_CTX_SUCCESSOR_NUM 26: mirror-cann/runtime pkg_inc/runtime/rt_external_ffts_define.h
//   (included by pkg_inc/runtime/runtime/rt_ffts_plus_define.h).
// - rtFftsPlusSqe_t (64 bytes), RT_FFTS_PLUS_TYPE 4: mirror-cann/runtime
//   pkg_inc/runtime/rt_external_stars_define.h (hicann/runtime has the same file).
// - rtFftsPlusTaskInfo_t (pack(1); sqe, descBuf, descBufLen, dump info, descAddrType,
//   argsHandleInfoNum, argsHandleInfoPtr), RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_HOST 0,
//   rtFftsPlusTaskLaunchWithFlag(rtFftsPlusTaskInfo_t*, rtStream_t, uint32_t) (the
//   exported launch: libruntime is built with hidden visibility and the plain
//   rtFftsPlusTaskLaunch carries no default-visibility marker, api_c_standard_soc.cc):
//   mirror-cann/runtime pkg_inc/runtime/rt_external_ffts.h (older CANN: the first three
//   fields only; the extra fields we send are zero, so either reading is the same).
// - How an SDMA copy context is filled (contextType SDMA, threadDim 1, sdmaSqeHeader
//   0x1E70 "SDMA_FP32_ATOMIC_MOVE_SQE", 64-bit addresses split into L/H words, both
//   data lengths = bytes; SQE subType 0x5A, timeout 0, ready contexts = lanes of at most
//   8 with the rest chained through successorList/predCnt; the source is the MAPPED
//   device address of registered host memory): ModelEngine-Group/unified-cache-management
//   ucm/shared/trans/ascend/sdma_direct/ (ascend_sdma_direct_copier.cc and its FFTS SDMA
//   dispatcher) and HCCL's DispatcherFFTS::ConstructFftsSdmaCtx / ConstructFftsSqe (found
//   by content search; repository not pinned). NOT CONFIRMED on
//   hardware here: the meaning of each sdmaSqeHeader bit.
// - Which SoCs have FFTS+: HCCL enables its FFTS+ dispatcher only for DEV_TYPE_910B and
//   DEV_TYPE_910_93 (HcclCommunicator::InitDispatcher in hccl_communicator.cc; found by
//   content search, repository not pinned); SoC names from torch_npu's
//   torch_npu/csrc/core/npu/NpuVariables.h (Ascend910B1..B4 = A2, Ascend910_93xx = A3;
//   the bare "Ascend910B", "Ascend910A", "Ascend910ProB", "Ascend310P*" are older chips).
//   NOT CONFIRMED: that no other SoC has FFTS+. See ffts_unsupported_reason().
// - aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t* const logicDevId),
//   aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t* const phyDevId):
//   hicann/runtime include/external/acl/acl_rt.h (in RT0 d8beaaf and HEAD); what they
//   return: src/runtime/api/impl/api_impl.cc GetLogicDevIdByUserDevId (the driver's
//   device id for a user id, undoing ASCEND_RT_VISIBLE_DEVICES) and api_c_device.cc
//   rtsGetPhyDevIdByLogicDevId (rtGetDevicePhyIdByIndex). Bound as optional. The
//   driver's management library (DCMI) takes these ids: device_pci.h, dcmi_library.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ds {
// - aclrtSubscribeReport(uint64_t threadId, aclrtStream), aclrtUnSubscribeReport(same),
//   aclrtProcessReport(int32_t timeoutMs), aclrtLaunchCallback(aclrtCallback fn, void*
//   userData, aclrtCallbackBlockType, aclrtStream), typedef void (*aclrtCallback)(void*),
//   ACL_CALLBACK_NO_BLOCK 0 / ACL_CALLBACK_BLOCK 1: CANN docs of the same names (e.g.
//   hiascend canncommercial 900 runtimeapi aclcppdevg_03_0125/0127): a thread, by its id,
//   serves the callbacks of the streams subscribed to it (one device per thread) while it
//   calls aclrtProcessReport; a blocking callback holds its stream until it returns.
//   ACL_ERROR_RT_REPORT_TIMEOUT 507012 (hicann/runtime docs/api_docs/aclError.md):
//   aclrtProcessReport found nothing to run before its timeout.
namespace acl {

using aclError = int;
using rtError_t = int32_t;
using aclrtStream = void*;
using aclrtEvent = void*;

constexpr aclError ACL_SUCCESS = 0;
constexpr aclError ACL_ERROR_REPEAT_INITIALIZE = 100002;
// "feature not support" (rt_error_codes.h): e.g. aclrtMemcpyBatchAsync where the
// driver lacks batched copies.
constexpr aclError ACL_ERROR_RT_FEATURE_NOT_SUPPORT = 207000;
constexpr aclError ACL_ERROR_RT_REPORT_TIMEOUT = 507012;

using aclrtCallback = void (*)(void*);
enum aclrtCallbackBlockType : int {
  ACL_CALLBACK_NO_BLOCK = 0,
  ACL_CALLBACK_BLOCK = 1,
};

enum aclrtMemcpyKind : int {
  ACL_MEMCPY_HOST_TO_HOST = 0,
  ACL_MEMCPY_HOST_TO_DEVICE = 1,
  ACL_MEMCPY_DEVICE_TO_HOST = 2,
  ACL_MEMCPY_DEVICE_TO_DEVICE = 3,
};

enum aclrtMemMallocPolicy : int {
  ACL_MEM_MALLOC_HUGE_FIRST = 0,
};

enum aclrtMemAttr : int {
  ACL_DDR_MEM = 0,
  ACL_HBM_MEM = 1,
};

enum aclrtHostRegisterType : int {
  ACL_HOST_REGISTER_MAPPED = 0,
};

constexpr uint32_t ACL_HOST_REG_MAPPED = 0x2u;
constexpr uint32_t ACL_HOST_REG_PINNED = 0x10000000u;

enum aclrtMemLocationType : int {
  ACL_MEM_LOCATION_TYPE_HOST = 0,
  ACL_MEM_LOCATION_TYPE_DEVICE = 1,
};

constexpr uint32_t ACL_EVENT_TIME_LINE = 0x00000008u;
constexpr uint32_t ACL_EVENT_SYNC = 0x00000001u;
// An event only polled (aclrtQueryEventStatus) for a stream's progress: no timestamps,
// no cross-stream waits, not one of the device's limited SYNC events. hicann/runtime
// acl_rt.h (1.15.0 and 1.17.0), docs 07_event_management.md and the dev guide's memory
// pool reuse example (aclrtCreateEventExWithFlag with it, then aclrtQueryEventStatus);
// the runtime's own name for the bit is RT_EVENT_STREAM_MARK 0x2 (runtime/event.h, also
// in the older fwkacllib runtime headers), which aclrtCreateEventWithFlag passes on.
constexpr uint32_t ACL_EVENT_CAPTURE_STREAM_PROGRESS = 0x00000002u;

// aclrtEventRecordedStatus (CANN docs, aclrtQueryEventStatus): NOT_READY also covers an
// event whose record was not executed because an earlier task failed.
enum aclrtEventRecordedStatus : int {
  ACL_EVENT_RECORDED_STATUS_NOT_READY = 0,
  ACL_EVENT_RECORDED_STATUS_COMPLETE = 1,
};

struct aclrtMemLocation {
  uint32_t id;
  aclrtMemLocationType type;
};

struct aclrtMemcpyBatchAttr {
  aclrtMemLocation dstLoc;
  aclrtMemLocation srcLoc;
  uint8_t rsv[16];
};
static_assert(sizeof(aclrtMemLocation) == 8, "aclrtMemLocation is 8 bytes");
static_assert(sizeof(aclrtMemcpyBatchAttr) == 32, "aclrtMemcpyBatchAttr is 32 bytes");

enum aclCANNPackageName : int { ACL_PKG_NAME_CANN = 0, ACL_PKG_NAME_RUNTIME = 1 };

struct aclCANNPackageVersion {
  char version[128];
  char majorVersion[64];
  char minorVersion[64];
  char releaseVersion[64];
  char patchVersion[64];
  char reserved[128];
};
static_assert(sizeof(aclCANNPackageVersion) == 512, "aclCANNPackageVersion is 512 bytes");

// ---- FFTS+ (Ascend runtime, libruntime.so) ----

constexpr uint16_t RT_CTX_TYPE_SDMA = 0x0008;
constexpr int RT_CTX_SUCCESSOR_NUM = 26;
constexpr uint16_t RT_FFTS_PLUS_TYPE = 4;
constexpr uint32_t RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_HOST = 0;
constexpr uint32_t RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_DEVICE = 1;
// Host context buffers up to this size go to the device through the PCIe BAR pool
// at launch; larger ones cost a device allocation and a blocking copy per launch
// (PCIE_BAR_COPY_SIZE in the runtime's pool.hpp: 1 KiB on x86, 4 KiB on ARM).
#if defined(__aarch64__)
constexpr size_t kFftsHostDescBarBytes = 4096;
#else
constexpr size_t kFftsHostDescBarBytes = 1024;
#endif
constexpr uint32_t kSdmaFp32AtomicMoveSqe = 0x1E70;  // plain move, as UCM and HCCL use it
constexpr uint8_t kFftsSubTypeCommunication = 0x5A;
constexpr uint16_t kFftsMaxReadyLanes = 8;
// The largest host-to-device copy the runtime ever puts in one SQE: it splits every
// aclrtMemcpyAsync into pieces of MEMCPY_ASYNC_UNIT_SIZE = 64 MiB
// (hicann/runtime src/runtime/core/inc/spec/base_info.hpp, used by
// CalculateMemcpyAsyncSingleMaxSize in src/runtime/api/api.hpp for H2D over PCIe), so an
// SDMA context of ours copies at most that much too; larger fragments are split.
constexpr uint64_t kSdmaMaxContextBytes = 64ull << 20;
// One FFTS+ task's contexts: totalContextNum is a uint16_t (rt_external_stars_define.h),
// and HCCL caps a task at HCCL_FFTS_CAPACITY = 65535 contexts.
constexpr size_t kFftsMaxContexts = 65535;

#pragma pack(push, 1)

// One 128-byte FFTS+ context, as an SDMA copy. Bitfields of the public header are
// folded into whole bytes/words we keep zero (we set none of those bits).
struct rtFftsPlusSdmaCtx_t {
  uint16_t contextType;                         // 0
  uint8_t successorNum;                         // 2
  uint8_t flags3;                               // 3  res1:6 dumpSwitch:1 aten:1
  uint8_t res2;                                 // 4
  uint8_t res3;                                 // 5
  uint8_t predCntInit;                          // 6
  uint8_t predCnt;                              // 7
  uint32_t res4;                                // 8
  uint16_t successorList[RT_CTX_SUCCESSOR_NUM];  // 12..63
  uint8_t res5;                                 // 64
  uint8_t flags65;                              // 65 res6:7 atm:1
  uint16_t res7;                                // 66
  uint16_t flags68;                             // 68 pmg:2 ns:1 partId:8 res8:1 qos:4
  uint16_t res9;                                // 70
  uint16_t threadId;                            // 72
  uint16_t threadDim;                           // 74
  uint32_t sdmaSqeHeader;                       // 76
  uint16_t sourceStreamId;                      // 80
  uint16_t sourceSubstreamId;                   // 82
  uint16_t destinationStreamId;                 // 84
  uint16_t destinationSubstreamId;              // 86
  uint32_t sourceAddressBaseL;                  // 88
  uint32_t sourceAddressBaseH;                  // 92
  uint32_t sourceAddressOffset;                 // 96
  uint32_t destinationAddressBaseL;             // 100
  uint32_t destinationAddressBaseH;             // 104
  uint32_t destinationAddressOffset;            // 108
  uint32_t nonTailDataLength;                   // 112
  uint32_t tailDataLength;                      // 116
  uint32_t res10[2];                            // 120..127
};

// The 64-byte FFTS+ submission queue entry.
struct rtFftsPlusSqe_t {
  uint8_t sqeHeader[8];        // 0  rtStarsSqeHeader_t, filled by the runtime
  uint16_t typeBits;           // 8  fftsType:3 cmo:1 scheduleDfxFlag:1 reserved1:7 wrrRatio:4
  uint16_t dsaBits;            // 10 dsaSqId:11 reserved2:5
  uint16_t sqeIndex;           // 12
  uint8_t kernelCredit;        // 14
  uint8_t subType;             // 15
  uint32_t stackPhyBaseL;      // 16
  uint32_t stackPhyBaseH;      // 20
  uint16_t totalContextNum;    // 24
  uint16_t readyContextNum;    // 26
  uint16_t preloadContextNum;  // 28
  uint16_t timeout;            // 30
  uint16_t reserved6;          // 32
  uint16_t ostBits;            // 34
  uint32_t prefetchBits;       // 36
  uint32_t contextAddressBaseL;  // 40 filled by the runtime
  uint32_t contextAddressBaseH;  // 44
  uint32_t reserved16[4];      // 48..63
};

struct rtFftsPlusDumpInfo_t {
  const void* loadDumpInfo;
  const void* unloadDumpInfo;
  uint32_t loadDumpInfolen;
  uint32_t unloadDumpInfolen;
};

struct rtFftsPlusTaskInfo_t {
  const rtFftsPlusSqe_t* fftsPlusSqe;  // 0
  const void* descBuf;                 // 8
  size_t descBufLen;                   // 16
  rtFftsPlusDumpInfo_t fftsPlusDumpInfo;  // 24
  uint32_t descAddrType;               // 48
  uint32_t argsHandleInfoNum;          // 52
  void** argsHandleInfoPtr;            // 56
};

#pragma pack(pop)

static_assert(sizeof(rtFftsPlusSdmaCtx_t) == 128, "an FFTS+ context is 128 bytes");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, successorNum) == 2, "successorNum at 2");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, predCntInit) == 6, "predCntInit at 6");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, predCnt) == 7, "predCnt at 7");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, successorList) == 12, "successorList at 12");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, threadDim) == 74, "threadDim at 74");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, sdmaSqeHeader) == 76, "sdmaSqeHeader at 76");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, sourceAddressBaseL) == 88, "source address at 88");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, sourceAddressBaseH) == 92, "source address high at 92");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, destinationAddressBaseL) == 100, "destination at 100");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, destinationAddressBaseH) == 104, "destination high at 104");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, nonTailDataLength) == 112, "length at 112");
static_assert(offsetof(rtFftsPlusSdmaCtx_t, tailDataLength) == 116, "tail length at 116");
static_assert(sizeof(rtFftsPlusSqe_t) == 64, "an FFTS+ SQE is 64 bytes");
static_assert(offsetof(rtFftsPlusSqe_t, subType) == 15, "subType at 15");
static_assert(offsetof(rtFftsPlusSqe_t, totalContextNum) == 24, "totalContextNum at 24");
static_assert(offsetof(rtFftsPlusSqe_t, readyContextNum) == 26, "readyContextNum at 26");
static_assert(offsetof(rtFftsPlusSqe_t, preloadContextNum) == 28, "preloadContextNum at 28");
static_assert(offsetof(rtFftsPlusSqe_t, contextAddressBaseL) == 40, "context address at 40");
static_assert(sizeof(void*) != 8 || sizeof(rtFftsPlusTaskInfo_t) == 64, "task info is 64 bytes");
static_assert(sizeof(void*) != 8 || offsetof(rtFftsPlusTaskInfo_t, descAddrType) == 48,
              "descAddrType at 48");

// fftsType is the low 3 bits of the little-endian word at byte 8.
constexpr uint16_t sqe_type_bits(uint16_t ffts_type) { return static_cast<uint16_t>(ffts_type & 0x7); }

// Entry points, as function pointer types.
using aclInit_t = aclError (*)(const char*);
using aclFinalize_t = aclError (*)();
using aclGetRecentErrMsg_t = const char* (*)();
using aclrtGetVersion_t = aclError (*)(int32_t*, int32_t*, int32_t*);
using aclsysGetCANNVersion_t = aclError (*)(aclCANNPackageName, aclCANNPackageVersion*);
using aclrtGetSocName_t = const char* (*)();
using aclrtGetDeviceCount_t = aclError (*)(uint32_t*);
using aclrtGetLogicDevIdByUserDevId_t = aclError (*)(int32_t, int32_t*);
using aclrtGetPhyDevIdByLogicDevId_t = aclError (*)(int32_t, int32_t*);
using aclrtSetDevice_t = aclError (*)(int32_t);
using aclrtResetDevice_t = aclError (*)(int32_t);
using aclrtGetMemInfo_t = aclError (*)(aclrtMemAttr, size_t*, size_t*);
using aclrtMalloc_t = aclError (*)(void**, size_t, aclrtMemMallocPolicy);
using aclrtFree_t = aclError (*)(void*);
using aclrtMallocHost_t = aclError (*)(void**, size_t);
using aclrtFreeHost_t = aclError (*)(void*);
using aclrtHostRegister_t = aclError (*)(void*, uint64_t, aclrtHostRegisterType, void**);
using aclrtHostUnregister_t = aclError (*)(void*);
using aclrtHostRegisterV2_t = aclError (*)(void*, uint64_t, uint32_t);
using aclrtHostGetDevicePointer_t = aclError (*)(void*, void**, uint32_t);
using aclrtDeviceCanAccessPeer_t = aclError (*)(int32_t*, int32_t, int32_t);
using aclrtDeviceEnablePeerAccess_t = aclError (*)(int32_t, uint32_t);
using aclrtStreamWaitEvent_t = aclError (*)(aclrtStream, aclrtEvent);
using aclrtCreateStream_t = aclError (*)(aclrtStream*);
using aclrtDestroyStream_t = aclError (*)(aclrtStream);
using aclrtSynchronizeStream_t = aclError (*)(aclrtStream);
using aclrtCreateEvent_t = aclError (*)(aclrtEvent*);
using aclrtCreateEventWithFlag_t = aclError (*)(aclrtEvent*, uint32_t);
using aclrtCreateEventExWithFlag_t = aclError (*)(aclrtEvent*, uint32_t);
using aclrtResetEvent_t = aclError (*)(aclrtEvent, aclrtStream);
using aclrtRecordEvent_t = aclError (*)(aclrtEvent, aclrtStream);
using aclrtEventElapsedTime_t = aclError (*)(float*, aclrtEvent, aclrtEvent);
// aclrtQueryEventStatus(event, aclrtEventRecordedStatus* status): the enum below.
using aclrtQueryEventStatus_t = aclError (*)(aclrtEvent, int*);
using aclrtDestroyEvent_t = aclError (*)(aclrtEvent);
using aclrtMemcpy_t = aclError (*)(void*, size_t, const void*, size_t, aclrtMemcpyKind);
using aclrtMemcpyAsync_t = aclError (*)(void*, size_t, const void*, size_t, aclrtMemcpyKind,
                                        aclrtStream);
using aclrtMemcpyBatchAsync_t = aclError (*)(void**, size_t*, void**, size_t*, size_t,
                                             aclrtMemcpyBatchAttr*, size_t*, size_t, size_t*,
                                             aclrtStream);
using aclrtSubscribeReport_t = aclError (*)(uint64_t, aclrtStream);
using aclrtUnSubscribeReport_t = aclError (*)(uint64_t, aclrtStream);
using aclrtProcessReport_t = aclError (*)(int32_t);
using aclrtLaunchCallback_t = aclError (*)(aclrtCallback, void*, aclrtCallbackBlockType, aclrtStream);
using rtFftsPlusTaskLaunchWithFlag_t = rtError_t (*)(rtFftsPlusTaskInfo_t*, void*, uint32_t);

}  // namespace acl
}  // namespace ds
