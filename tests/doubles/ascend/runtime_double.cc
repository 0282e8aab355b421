// Test double of the Ascend runtime's FFTS+ launch (libruntime.so). It reads the task,
// the SQE and every 128-byte SDMA context at the byte offsets the public CANN headers
// give (rt_external_ffts.h, rt_external_stars_define.h, rt_external_ffts_define.h),
// written here independently of the backend's structs, and executes the contexts on
// the stream in dependency order: the first readyContextNum contexts start, each
// finished context releases its successors. A context encoded at the wrong place
// moves the wrong bytes or addresses nothing valid, and the run fails.
// What it refuses, as the runtime and the hardware would: more ready contexts than the
// 8 SDMA lanes, an SDMA context above 64 MiB (the runtime's own ceiling per H2D SQE),
// an SQE that is not FFTS+ or whose subType is not 0x5A, a context that is not a
// plain SDMA move (sdmaSqeHeader opcode 0 with its address-space bits set), a
// context buffer whose length is not 128 x contexts, device context memory that is not
// device memory, and a stream this instance of the library did not see created (a second
// copy of libruntime.so). Host contexts are copied at the launch, as the runtime does
// (through its PCIe BAR pool up to 1 KiB on x86 / 4 KiB on ARM, else a device allocation
// and a blocking copy, DS_ACL_DOUBLE_DESC_ALLOC_NS long: the log says which); device
// contexts are read where they are (DS_ACL_DOUBLE_DESC_READBACK_NS: read back first at
// every launch, as newer runtimes do).
// One launch is one copy task on the stream (DS_ACL_DOUBLE_COPY_NS_PER_KIB and the other
// time knobs of double_common.h: it takes the cost of all its contexts' bytes), and
// the launch call stalls first by DS_ACL_DOUBLE_FFTS_SUBMIT_NS, else _SUBMIT_NS (with _SUBMIT_COUNTED, counted on
// the calling thread's timeline of this library: the task starts no earlier than the
// launch's slot end).
// DS_ACL_DOUBLE_SDMA_H2D=silent|fail stands for an x86 host, where SDMA cannot read host
// memory (hicann/runtime b7bb740, cann/runtime issue #594): contexts from registered host
// memory copy nothing, or fail their task.
// Only rtFftsPlusTaskLaunchWithFlag is exported (libruntime.so is built with hidden
// visibility and the plain rtFftsPlusTaskLaunch is not marked for export).
// Built twice: with the launch, and (DS_DOUBLE_HIDE_FFTS) without, to stand for a
// runtime that has no FFTS+.
#include <mutex>
#include <set>
#include <vector>

#include "double_common.h"

using dsdouble::fmt;
using dsdouble::log_call;

namespace {

// rtFftsPlusTaskInfo_t (pack 1, 64-bit): sqe pointer, context buffer, its length,
// dump info (2 pointers + 2 u32), descAddrType.
constexpr size_t kTaskSqe = 0, kTaskDescBuf = 8, kTaskDescLen = 16, kTaskDescAddrType = 48;
// rtFftsPlusSqe_t: fftsType in the low 3 bits of byte 8; context counts at 24/26/28.
constexpr size_t kSqeTypeWord = 8, kSqeSubType = 15, kSqeTotal = 24, kSqeReady = 26, kSqePreload = 28;
constexpr uint16_t kFftsPlusType = 4;
// rtFftsPlusSdmaCtx_t, 128 bytes.
constexpr size_t kCtxBytes = 128;
constexpr size_t kCtxType = 0, kCtxSuccNum = 2, kCtxPredInit = 6, kCtxPred = 7, kCtxSuccList = 12;
constexpr size_t kCtxThreadDim = 74, kCtxSrcL = 88, kCtxSrcH = 92, kCtxSrcOff = 96;
constexpr size_t kCtxDstL = 100, kCtxDstH = 104, kCtxDstOff = 108, kCtxLen = 112, kCtxTailLen = 116;
constexpr uint16_t kCtxTypeSdma = 8;
constexpr int kMaxSuccessors = 26;
constexpr size_t kCtxSqeHeader = 76;
constexpr uint32_t kSqeOpcodeMask = 0xF;         // sdmaSqeHeader bits 0-3: opcode, 0 = plain move
constexpr uint32_t kSqeAddressValid = 0x1E00;    // sssv | dssv | sns | dns
constexpr uint8_t kSubTypeCommunication = 0x5A;
constexpr uint16_t kReadyLanes = 8;              // SDMA contexts that can start at once
constexpr uint16_t kMaxPreload = 128;
constexpr uint32_t kMaxSdmaBytes = 64u << 20;     // MEMCPY_ASYNC_UNIT_SIZE
#if defined(__aarch64__)
constexpr size_t kBarCopyBytes = 4096;
#else
constexpr size_t kBarCopyBytes = 1024;
#endif

std::mutex g_mu;
std::set<void*> g_streams;  // streams the AscendCL double announced to this instance

template <typename T>
T get(const unsigned char* base, size_t off) {
  T v;
  std::memcpy(&v, base + off, sizeof v);
  return v;
}

struct Task {
  std::vector<unsigned char> copied;  // host contexts, copied at the launch
  uint64_t device_contexts = 0;       // or contexts in device memory, read when the task runs
  const unsigned char* contexts = nullptr;
  uint16_t total, ready;
  dsdouble::StreamApi* api;
  void* stream;
};

std::string run_task(void* arg) {
  Task* t = static_cast<Task*>(arg);
  if (t->device_contexts) {
    std::string why;
    t->contexts = static_cast<const unsigned char*>(
        t->api->resolve_sdma(t->device_contexts, static_cast<uint64_t>(t->total) * kCtxBytes, true, &why));
    if (!t->contexts) {
      delete t;
      return "FFTS+ task: context descriptors: " + why;
    }
  }
  const size_t skew = static_cast<size_t>(dsdouble::env_long("DS_ACL_DOUBLE_SKEW", 0));
  const char* h2d = std::getenv("DS_ACL_DOUBLE_SDMA_H2D");
  const std::string sdma_h2d = h2d ? h2d : "";
  std::vector<int> pending(t->total);
  std::vector<bool> done(t->total, false);
  std::vector<uint16_t> queue;
  std::string err;
  for (uint16_t i = 0; i < t->total && err.empty(); ++i) {
    const unsigned char* c = t->contexts + i * kCtxBytes;
    pending[i] = get<uint8_t>(c, kCtxPred);
    if (get<uint8_t>(c, kCtxPredInit) != pending[i])
      err = fmt("context %u: predCntInit %u != predCnt %u", i, get<uint8_t>(c, kCtxPredInit), pending[i]);
    if (i < t->ready) {
      if (pending[i] != 0) err = fmt("ready context %u has %d predecessors", i, pending[i]);
      queue.push_back(i);
    }
  }
  size_t head = 0;
  while (err.empty() && head < queue.size()) {
    const uint16_t i = queue[head++];
    const unsigned char* c = t->contexts + i * kCtxBytes;
    if (done[i]) {
      err = fmt("context %u ran twice", i);
      break;
    }
    done[i] = true;
    if (get<uint16_t>(c, kCtxType) != kCtxTypeSdma) {
      err = fmt("context %u: type 0x%x is not SDMA", i, get<uint16_t>(c, kCtxType));
      break;
    }
    if (get<uint16_t>(c, kCtxThreadDim) != 1) {
      err = fmt("context %u: threadDim %u", i, get<uint16_t>(c, kCtxThreadDim));
      break;
    }
    const uint32_t hdr = get<uint32_t>(c, kCtxSqeHeader);
    if ((hdr & kSqeOpcodeMask) != 0 || (hdr & kSqeAddressValid) != kSqeAddressValid) {
      err = fmt("context %u: sdmaSqeHeader 0x%x is not a plain move with valid source and destination", i, hdr);
      break;
    }
    const uint64_t src = (static_cast<uint64_t>(get<uint32_t>(c, kCtxSrcH + skew)) << 32 |
                          get<uint32_t>(c, kCtxSrcL + skew)) + get<uint32_t>(c, kCtxSrcOff);
    const uint64_t dst = (static_cast<uint64_t>(get<uint32_t>(c, kCtxDstH + skew)) << 32 |
                          get<uint32_t>(c, kCtxDstL + skew)) + get<uint32_t>(c, kCtxDstOff);
    const uint32_t len = get<uint32_t>(c, kCtxLen);
    if (len == 0 || get<uint32_t>(c, kCtxTailLen) != len) {
      err = fmt("context %u: data length %u, tail length %u", i, len, get<uint32_t>(c, kCtxTailLen));
      break;
    }
    // The runtime never puts more than MEMCPY_ASYNC_UNIT_SIZE (64 MiB) of a host-to-device
    // copy in one SQE (base_info.hpp, api.hpp CalculateMemcpyAsyncSingleMaxSize): a
    // larger SDMA context is not something the hardware is known to take.
    if (len > kMaxSdmaBytes) {
      err = fmt("context %u: %u bytes in one SDMA context; the runtime never issues a host-to-device SQE above "
                "64 MiB (MEMCPY_ASYNC_UNIT_SIZE)", i, len);
      break;
    }
    // Each context as it runs, under a name of its own (not a call): where it went.
    log_call("rtFftsPlusTaskLaunchWithFlag[]", fmt("i=%u dst=%p src=%p len=%u", i, reinterpret_cast<void*>(dst),
                                                   reinterpret_cast<void*>(src), len));
    std::string why;
    void* from = t->api->resolve_sdma(src, len, false, &why);
    void* to = from ? t->api->resolve_sdma(dst, len, true, &why) : nullptr;
    if (!from || !to) {
      err = fmt("context %u: ", i) + why;
      break;
    }
    if (t->api->host_mapped(src) && !sdma_h2d.empty()) {
      // An x86 host whose SDMA cannot read host memory (DS_ACL_DOUBLE_SDMA_H2D).
      if (sdma_h2d == "fail") {
        err = fmt("context %u: SDMA from host memory is not supported on this host (test double: "
                  "DS_ACL_DOUBLE_SDMA_H2D=fail)", i);
        break;
      }
    } else {
      std::memcpy(to, from, len);
    }
    t->api->charge(t->stream, len);  // the task takes its cost for every byte (double_timing.h)
    const int succ = get<uint8_t>(c, kCtxSuccNum);
    if (succ > kMaxSuccessors) {
      err = fmt("context %u: %d successors", i, succ);
      break;
    }
    for (int k = 0; k < succ; ++k) {
      const uint16_t s = get<uint16_t>(c, kCtxSuccList + 2 * static_cast<size_t>(k));
      if (s >= t->total) {
        err = fmt("context %u: successor %u out of range", i, s);
        break;
      }
      if (--pending[s] == 0) queue.push_back(s);
    }
  }
  for (uint16_t i = 0; i < t->total && err.empty(); ++i)
    if (!done[i]) err = fmt("context %u never became ready", i);
  delete t;
  return err.empty() ? "" : "FFTS+ task: " + err;
}

// Host contexts by address, as last launched: contexts at a known address with a
// different content are a task rebuilt (where it should have been prepared), a line
// of DS_ACL_DOUBLE_BUILD_LOG.
void check_host_contexts(const unsigned char* desc, const std::vector<unsigned char>& now) {
  if (!dsdouble_timing::knob(dsdouble::kKnobs, "BUILD_LOG")) return;
  static std::mutex mu;
  static std::map<const void*, std::vector<unsigned char>> seen;
  std::lock_guard<std::mutex> lock(mu);
  auto it = seen.find(desc);
  if (it != seen.end() && it->second != now) dsdouble_timing::build_mark(dsdouble::kKnobs, "ffts-contexts-rewritten");
  seen[desc] = now;
}

[[maybe_unused]] int launch(const char* call, void* info_ptr, void* stream, uint32_t flag) {
  dsdouble_timing::submit_stall(dsdouble::kKnobs, "FFTS_SUBMIT_NS");  // else DS_ACL_DOUBLE_SUBMIT_NS
  const unsigned char* info = static_cast<const unsigned char*>(info_ptr);
  auto* api = static_cast<dsdouble::StreamApi*>(stream);
  auto refuse = [&](const std::string& msg) {
    if (api && api->magic == dsdouble::kStreamMagic) api->set_recent_error((std::string(call) + ": " + msg).c_str());
    log_call(call, "refused: " + msg);
    return dsdouble::kInvalidParam;
  };
  if (dsdouble::inject_failure(call)) {
    log_call(call, "FAIL injected");
    if (api && api->magic == dsdouble::kStreamMagic)
      api->set_recent_error((std::string(call) + ": injected failure (test double)").c_str());
    return dsdouble::kInjected;
  }
  if (!api || api->magic != dsdouble::kStreamMagic) return refuse("not a stream of the AscendCL double");
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_streams.count(stream))
      return refuse("the stream was not created through this instance of libruntime.so (is a second copy "
                    "of the runtime loaded?)");
  }
  if (!api->initialised()) return refuse("no aclInit in this process or no device set on this thread");
  if (!info) return refuse("null task info");
  const unsigned char* sqe = get<const unsigned char*>(info, kTaskSqe);
  const unsigned char* desc = get<const unsigned char*>(info, kTaskDescBuf);
  const size_t desc_len = get<size_t>(info, kTaskDescLen);
  const uint32_t addr_type = get<uint32_t>(info, kTaskDescAddrType);
  if (!sqe || !desc) return refuse("null SQE or context buffer");
  if (addr_type > 1) return refuse(fmt("descAddrType %u is neither host (0) nor device (1)", addr_type));
  const uint16_t type = get<uint16_t>(sqe, kSqeTypeWord) & 0x7;
  const uint16_t total = get<uint16_t>(sqe, kSqeTotal);
  const uint16_t ready = get<uint16_t>(sqe, kSqeReady);
  const uint16_t preload = get<uint16_t>(sqe, kSqePreload);
  const uint8_t subtype = get<uint8_t>(sqe, kSqeSubType);
  if (type != kFftsPlusType) return refuse(fmt("fftsType %u is not FFTS+ (4)", type));
  if (subtype != kSubTypeCommunication) return refuse(fmt("SQE subType 0x%x is not 0x5A (communication task)", subtype));
  if (total == 0 || ready == 0 || ready > total || preload > total || preload > kMaxPreload)
    return refuse(fmt("context counts total %u ready %u preload %u", total, ready, preload));
  if (ready > kReadyLanes)
    return refuse(fmt("readyContextNum %u: the SDMA engine has %u ready lanes; the others must follow through "
                      "successor lists",
                      ready, kReadyLanes));
  if (desc_len != static_cast<size_t>(total) * kCtxBytes)
    return refuse(fmt("descBufLen %zu for %u contexts", desc_len, total));
  auto* task = new Task();
  task->total = total;
  task->ready = ready;
  task->api = api;
  task->stream = stream;
  std::string how;
  if (addr_type == 1) {
    // Device memory: used in place; it must be device memory, 128-byte aligned.
    const uint64_t at = reinterpret_cast<uint64_t>(desc);
    std::string why;
    if (at % 128 != 0 || !api->resolve_sdma(at, desc_len, true, &why)) {
      delete task;
      return refuse(fmt("descBuf 0x%llx (device) is not 128-byte aligned device memory %s",
                        (unsigned long long)at, why.c_str()));
    }
    task->device_contexts = at;
    how = "desc=device";
    // Newer runtimes read device contexts back with a blocking copy at every launch
    // (ffts_task.cc CheckFftsPlusDsaContextFromDevice, hicann/runtime a145dcdb2):
    // DS_ACL_DOUBLE_DESC_READBACK_NS=n stands for one, taking n ns; unset, they are used
    // in place, as by older runtimes.
    const long readback = dsdouble::env_long("DS_ACL_DOUBLE_DESC_READBACK_NS", -1);
    if (readback >= 0) {
      dsdouble_timing::sleep_for_ns(readback);
      how += " readback=sync";
    }
  } else {
    // Host memory: copied now; the caller may reuse its buffer once the call returns.
    // Beyond the PCIe BAR copy the runtime allocates device memory and copies them with
    // a blocking copy at every launch (FftsPlusTmpAllocH2D), which takes
    // DS_ACL_DOUBLE_DESC_ALLOC_NS (default 200 us).
    task->copied.assign(desc, desc + desc_len);
    task->contexts = task->copied.data();
    check_host_contexts(desc, task->copied);
    how = desc_len <= kBarCopyBytes ? "desc=host copy=bar" : "desc=host copy=alloc+sync";
    if (desc_len > kBarCopyBytes)
      dsdouble_timing::sleep_for_ns(dsdouble::env_long("DS_ACL_DOUBLE_DESC_ALLOC_NS", 200000));
  }
  log_call(call, fmt("contexts=%u ready=%u subtype=0x%x %s flag=%u stream=%p", total, ready, subtype, how.c_str(),
                     flag, stream));
  // One copy task (its contexts' bytes), held until this launch's counted slot ends.
  api->enqueue_copy(stream, run_task, task, 0, dsdouble_timing::take_submit_slot());
  return dsdouble::kSuccess;
}

}  // namespace

extern "C" {

#ifndef DS_DOUBLE_HIDE_FFTS
int rtFftsPlusTaskLaunchWithFlag(void* info, void* stream, uint32_t flag) {
  return launch("rtFftsPlusTaskLaunchWithFlag", info, stream, flag);
}
#endif

void dsdouble_rt_adopt_stream(void* stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_streams.insert(stream);
}

void dsdouble_rt_forget_stream(void* stream) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_streams.erase(stream);
}

// Something else the real library exports, so the hidden variant is still a runtime library.
int rtGetDeviceCount(int32_t* count) {
  *count = static_cast<int32_t>(dsdouble::env_long("DS_ACL_DOUBLE_DEVICES", 8));
  return dsdouble::kSuccess;
}

}  // extern "C"
