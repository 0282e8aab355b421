// Test double of the Ascend runtime's FFTS+ launch (libruntime.so). It reads the task,
// the SQE and every 128-byte SDMA context at the byte offsets the public CANN headers
// give (rt_external_ffts.h, rt_external_stars_define.h, rt_external_ffts_define.h),
// written here independently of the backend's structs, and executes the contexts on
// the stream in dependency order: the first readyContextNum contexts start, each
// finished context releases its successors. A context encoded at the wrong place
// moves the wrong bytes or addresses nothing valid, and the run fails.
// Built twice: with rtFftsPlusTaskLaunch(WithFlag), and (DS_DOUBLE_HIDE_FFTS) without,
// to stand for a runtime that has no FFTS+.
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

template <typename T>
T get(const unsigned char* base, size_t off) {
  T v;
  std::memcpy(&v, base + off, sizeof v);
  return v;
}

struct Task {
  const unsigned char* contexts;  // the caller's buffer, read when the task runs
  uint16_t total, ready;
  dsdouble::StreamApi* api;
  void* stream;
};

std::string run_task(void* arg) {
  Task* t = static_cast<Task*>(arg);
  const size_t skew = static_cast<size_t>(dsdouble::env_long("DS_ACL_DOUBLE_SKEW", 0));
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
    const uint64_t src = (static_cast<uint64_t>(get<uint32_t>(c, kCtxSrcH + skew)) << 32 |
                          get<uint32_t>(c, kCtxSrcL + skew)) + get<uint32_t>(c, kCtxSrcOff);
    const uint64_t dst = (static_cast<uint64_t>(get<uint32_t>(c, kCtxDstH + skew)) << 32 |
                          get<uint32_t>(c, kCtxDstL + skew)) + get<uint32_t>(c, kCtxDstOff);
    const uint32_t len = get<uint32_t>(c, kCtxLen);
    if (len == 0 || get<uint32_t>(c, kCtxTailLen) != len) {
      err = fmt("context %u: data length %u, tail length %u", i, len, get<uint32_t>(c, kCtxTailLen));
      break;
    }
    std::string why;
    void* from = t->api->resolve_sdma(src, len, false, &why);
    void* to = from ? t->api->resolve_sdma(dst, len, true, &why) : nullptr;
    if (!from || !to) {
      err = fmt("context %u: ", i) + why;
      break;
    }
    std::memcpy(to, from, len);
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

[[maybe_unused]] int launch(const char* call, void* info_ptr, void* stream, uint32_t flag) {
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
  if (!api->initialised()) return refuse("no aclInit in this process or no device set on this thread");
  if (!info) return refuse("null task info");
  const unsigned char* sqe = get<const unsigned char*>(info, kTaskSqe);
  const unsigned char* desc = get<const unsigned char*>(info, kTaskDescBuf);
  const size_t desc_len = get<size_t>(info, kTaskDescLen);
  const uint32_t addr_type = get<uint32_t>(info, kTaskDescAddrType);
  if (!sqe || !desc) return refuse("null SQE or context buffer");
  if (addr_type != 0) return refuse(fmt("descAddrType %u is not host", addr_type));
  const uint16_t type = get<uint16_t>(sqe, kSqeTypeWord) & 0x7;
  const uint16_t total = get<uint16_t>(sqe, kSqeTotal);
  const uint16_t ready = get<uint16_t>(sqe, kSqeReady);
  const uint16_t preload = get<uint16_t>(sqe, kSqePreload);
  if (type != kFftsPlusType) return refuse(fmt("fftsType %u is not FFTS+ (4)", type));
  if (total == 0 || ready == 0 || ready > total || preload > total)
    return refuse(fmt("context counts total %u ready %u preload %u", total, ready, preload));
  if (desc_len != static_cast<size_t>(total) * kCtxBytes)
    return refuse(fmt("descBufLen %zu for %u contexts", desc_len, total));
  log_call(call, fmt("contexts=%u ready=%u subtype=0x%x flag=%u stream=%p", total, ready,
                     get<uint8_t>(sqe, kSqeSubType), flag, stream));
  api->enqueue(stream, run_task, new Task{desc, total, ready, api, stream});
  return dsdouble::kSuccess;
}

}  // namespace

extern "C" {

#ifndef DS_DOUBLE_HIDE_FFTS
int rtFftsPlusTaskLaunchWithFlag(void* info, void* stream, uint32_t flag) {
  return launch("rtFftsPlusTaskLaunchWithFlag", info, stream, flag);
}

int rtFftsPlusTaskLaunch(void* info, void* stream) { return launch("rtFftsPlusTaskLaunch", info, stream, 0); }
#endif

// Something else the real library exports, so the hidden variant is still a runtime library.
int rtGetDeviceCount(int32_t* count) {
  *count = static_cast<int32_t>(dsdouble::env_long("DS_ACL_DOUBLE_DEVICES", 8));
  return dsdouble::kSuccess;
}

}  // extern "C"
