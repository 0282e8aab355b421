#include "backends/ascend/ascend_backend.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "backend/prepared_lists.h"
#include "backends/ascend/acl_api.h"
#include "backends/ascend/acl_library.h"
#include "backends/ascend/dcmi_library.h"
#include "backends/ascend/device_pci.h"
#include "core/clock.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/sysinfo.h"
#include "core/units.h"
#include "memory/host_memory.h"
#include "topology/topology.h"

namespace ds {

namespace {

// query(): how long an event may read NOT_READY before its stream is waited for.
constexpr int64_t kQuerySettleNs = 1000000000LL;

using namespace acl;

// AscendCL is initialised once per process (aclInit may only be called once). A
// forked child inherits this memory but not the runtime, so the pid is what counts.
struct ProcessState {
  std::mutex mu;
  pid_t initialised_pid = 0;  // the process in which aclInit succeeded
  int live_devices = 0;       // AscendDevice objects alive in this process
};

ProcessState& process_state() {
  static ProcessState s;
  return s;
}

// Fork workers end with _exit, so no destructor of the parent's backend object runs
// there: a worker finalises AscendCL when it releases its last device.
void finalize_if_initialised(const AclLibrary& lib) {
  ProcessState& s = process_state();
  if (s.initialised_pid != getpid()) return;
  (void)lib.aclFinalize();
  s.initialised_pid = 0;
}

aclrtMemcpyKind kind_of(CopyDir dir) {
  switch (dir) {
    case CopyDir::kH2D: return ACL_MEMCPY_HOST_TO_DEVICE;
    case CopyDir::kD2H: return ACL_MEMCPY_DEVICE_TO_HOST;
    case CopyDir::kD2D: return ACL_MEMCPY_DEVICE_TO_DEVICE;
    case CopyDir::kH2H: return ACL_MEMCPY_HOST_TO_HOST;
  }
  return ACL_MEMCPY_HOST_TO_DEVICE;
}

uint32_t low32(const void* p) { return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)); }
uint32_t high32(const void* p) {
  return static_cast<uint32_t>(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)) >> 32);
}

constexpr size_t kRegisterAlign = 4096;  // aclrtHostRegister(V2): 4 KiB aligned address and length

// Kernels 5.10 and older: the CANN docs allow registering only aclrtMallocHost memory,
// so our own mappings are locked with mlock() first, as UCM does.
bool lock_before_register() { return registration_needs_locked_pages(kernel_release().c_str()); }

// Appended where the runtime's own pinning failed: it pins in its driver, outside
// RLIMIT_MEMLOCK, but a limit may still be what refused it.
const char* kPinHint =
    "; the Ascend driver pins these pages itself: if a memory-lock limit refused them, raise it with "
    "`ulimit -l unlimited`";

// One IO task's FFTS+ launch, built once (at setup, by prepare_direct): the SQE and
// the SDMA contexts, and, when the contexts are larger than what the runtime sends
// through its PCIe BAR pool, a copy of them in device memory that every launch uses in
// place. With host contexts over that size the runtime would allocate device memory
// and copy them with a blocking H2D copy on every launch (ffts_task.cc).
struct FftsTask {
  rtFftsPlusSqe_t sqe{};
  std::vector<rtFftsPlusSdmaCtx_t> contexts;
  void* device_contexts = nullptr;  // in the device arena; null: the host contexts are sent
};

class AscendStream;

// The streams of one device, so an event can be destroyed safely: AscendCL requires
// the work that records an event to be complete first, and on an error path the
// events of an initiator go before its streams are synchronised.
using StreamSet = std::set<AscendStream*>;

class AscendStream : public Stream {
 public:
  AscendStream(const AclLibrary& lib, aclrtStream handle, std::shared_ptr<StreamSet> set)
      : lib_(lib), handle_(handle), set_(std::move(set)) {
    set_->insert(this);
  }
  ~AscendStream() override {
    set_->erase(this);
    (void)lib_.aclrtSynchronizeStream(handle_);  // destroying a busy stream is not allowed
    (void)lib_.aclrtDestroyStream(handle_);
  }
  aclrtStream handle() {
    dirty_ = true;  // whoever asks for the handle queues work on it
    return handle_;
  }
  bool dirty() const { return dirty_; }
  void drain() {
    if (!dirty_) return;
    (void)lib_.aclrtSynchronizeStream(handle_);
    completed();
  }
  void completed() { dirty_ = false; }

 private:
  const AclLibrary& lib_;
  aclrtStream handle_;
  std::shared_ptr<StreamSet> set_;
  bool dirty_ = false;
};

// An event, and where a device with several streams also marks it on its timing
// stream (see AscendDevice::record).
class AscendEvent : public Event {
 public:
  AscendEvent(const AclLibrary& lib, aclrtEvent handle, bool sync, bool reusable,
              std::shared_ptr<StreamSet> streams)
      : lib_(lib), handle_(handle), sync_(sync), reusable_(reusable), streams_(std::move(streams)) {}
  ~AscendEvent() override {
    for (AscendStream* s : *streams_) s->drain();
    (void)lib_.aclrtDestroyEvent(handle_);
    if (twin_) (void)lib_.aclrtDestroyEvent(twin_);
  }
  aclrtEvent handle() const { return handle_; }
  bool sync() const { return sync_; }  // created with ACL_EVENT_SYNC: other streams may wait on it
  // Made by aclrtCreateEventExWithFlag: reused as is (aclrtResetEvent is not allowed on
  // it); other events are reset after each wait.
  bool reusable() const { return reusable_; }

  AscendStream* last_stream = nullptr;  // where it was last recorded
  int64_t recorded_ns = 0;              // when (monotonic), for query()
  aclrtEvent twin_ = nullptr;           // the same moment, recorded on the timing stream
  bool twin_valid = false;              // twin_ belongs to the last record

 private:
  const AclLibrary& lib_;
  aclrtEvent handle_;
  bool sync_;
  bool reusable_;
  std::shared_ptr<StreamSet> streams_;
};

// Device memory for FFTS+ context descriptors, handed out in 512-byte aligned pieces
// from a few large allocations of the device (aclrtMalloc has a coarse granularity).
class DescArena {
 public:
  explicit DescArena(Device& device) : device_(device) {}
  void* take(size_t bytes) {
    bytes = round_up(bytes, kPiece);
    if (left_ < bytes) {
      chunks_.push_back(device_.alloc_device(std::max(kChunk, bytes)));
      next_ = static_cast<char*>(chunks_.back()->device_ptr());
      left_ = chunks_.back()->bytes();
    }
    void* at = next_;
    next_ += bytes;
    left_ -= bytes;
    return at;
  }

 private:
  static constexpr size_t kPiece = 512, kChunk = 2u << 20;
  Device& device_;
  std::vector<std::unique_ptr<Memory>> chunks_;
  char* next_ = nullptr;
  size_t left_ = 0;
};

// DEV_SANDBOX_FFTS_DESC: "host" or "device" forces where FFTS+ contexts go (to compare
// on hardware, e.g. the per-launch path); "auto" (default) lets AscendDevice decide.
// Read once per process: load builds a task per block, inside its timed pipeline.
const std::string& ffts_desc_mode() {
  static const std::string mode = [] {
    const char* v = std::getenv("DEV_SANDBOX_FFTS_DESC");
    const std::string m = v && *v ? v : "auto";
    if (m != "auto" && m != "host" && m != "device")
      throw RunError("DEV_SANDBOX_FFTS_DESC is '" + m + "': expects auto, host or device");
    return m;
  }();
  return mode;
}

// Launches timed per placement when the choice is made (the fastest of each counts).
constexpr int kDescTrials = 3;

AscendStream& stream_of(Stream& s) { return static_cast<AscendStream&>(s); }
AscendEvent& event_of(Event& e) { return static_cast<AscendEvent&>(e); }

// The stream start gate: a blocking host callback at the head of each held stream
// (aclrtLaunchCallback, ACL_CALLBACK_BLOCK) that returns only once the host has
// stored this round in the gate's word, run by a report thread of our own that
// serves the streams subscribed to it (aclrtProcessReport in a loop).
class AscendGate : public StreamGate {
 public:
  AscendGate(const AclLibrary& lib, int device, std::string where)
      : lib_(lib), device_(device), where_(std::move(where)) {
    std::promise<aclError> started;
    auto ready = started.get_future();
    thread_ = std::thread([this, &started] { serve(started); });
    const aclError rc = ready.get();
    if (rc != ACL_SUCCESS) {
      thread_.join();
      lib_.fail("aclrtSetDevice", rc, where_ + ", start gate report thread");
    }
    thread_id_ = static_cast<uint64_t>(thread_.native_handle());
  }

  ~AscendGate() override {
    word_.store(round_, std::memory_order_release);  // let everything go, without throwing
    futex_wake_all(&word_);
    for (auto& h : held_) (void)lib_.aclrtSynchronizeStream(h.first);  // its callback has returned
    closing_.store(true);
    for (auto& h : held_) (void)lib_.aclrtUnSubscribeReport(thread_id_, h.first);
    stop_.store(true);
    subscribed_.fetch_add(1);  // wake a thread still waiting for its first stream
    futex_wake_all(&subscribed_);
    thread_.join();
  }

  void hold(Stream& s) override {
    const aclrtStream st = stream_of(s).handle();
    auto it = std::find_if(held_.begin(), held_.end(), [&](const auto& h) { return h.first == st; });
    if (it == held_.end()) {
      lib_.check(lib_.aclrtSubscribeReport(thread_id_, st), "aclrtSubscribeReport", where_ + ", start gate");
      held_.emplace_back(st, std::make_unique<Ticket>());
      if (subscribed_.fetch_add(1) == 0) futex_wake_all(&subscribed_);
      it = held_.end() - 1;
    }
    Ticket& t = *it->second;
    t.word = &word_;
    t.round = round_;
    lib_.check(lib_.aclrtLaunchCallback(&AscendGate::wait_for_release, &t, ACL_CALLBACK_BLOCK, st),
               "aclrtLaunchCallback", where_ + ", start gate");
  }

  void release() override {
    word_.store(round_, std::memory_order_release);
    futex_wake_all(&word_);
    ++round_;
    const aclError rc = failed_.load();
    if (rc != ACL_SUCCESS) lib_.fail("aclrtProcessReport", rc, where_ + ", start gate report thread");
  }

 private:
  struct Ticket {
    std::atomic<uint32_t>* word = nullptr;
    uint32_t round = 0;
  };

  // On the report thread: hold the stream until the host stores the round.
  static void wait_for_release(void* user) {
    const Ticket& t = *static_cast<const Ticket*>(user);
    for (;;) {
      const uint32_t seen = t.word->load(std::memory_order_acquire);
      if (static_cast<int32_t>(seen - t.round) >= 0) return;
      futex_wait(t.word, seen, 1000000);
    }
  }

  void serve(std::promise<aclError>& started) {
    const aclError rc = lib_.aclrtSetDevice(device_);
    started.set_value(rc);
    if (rc != ACL_SUCCESS) return;
    // aclrtProcessReport fails on a thread no stream is subscribed to yet.
    while (subscribed_.load() == 0) futex_wait(&subscribed_, 0, 100000000);
    while (!stop_.load()) {
      const aclError r = lib_.aclrtProcessReport(100);
      if (r != ACL_SUCCESS && r != ACL_ERROR_RT_REPORT_TIMEOUT && !closing_.load() &&
          failed_.load() == ACL_SUCCESS)
        failed_.store(r);
    }
    (void)lib_.aclrtResetDevice(device_);
  }

  const AclLibrary& lib_;
  int device_;
  std::string where_;
  std::atomic<uint32_t> word_{0};
  uint32_t round_ = 1;
  std::atomic<bool> stop_{false}, closing_{false};
  std::atomic<uint32_t> subscribed_{0};  // streams subscribed so far (futex word)
  std::atomic<aclError> failed_{ACL_SUCCESS};
  std::thread thread_;
  uint64_t thread_id_ = 0;
  std::vector<std::pair<aclrtStream, std::unique_ptr<Ticket>>> held_;
};

// Host-to-device SDMA is not supported on x86 hosts: the CANN runtime stopped turning
// H2D copies of mapped host memory into SDMA copies there ("On x86, hardware does not
// support using sdma for h2d copy", ConvertMappedAddrToDevice in api_impl.cc;
// hicann/runtime b7bb740, cann/runtime issue #594). Our direct path is exactly such a
// copy, so on an x86 host every device proves it first with one small validated copy
// (AscendDevice::prove_sdma_from_host) before its first direct task.
#if defined(__x86_64__) || defined(__i386__)
constexpr bool kProveSdmaFromHost = true;
#else
constexpr bool kProveSdmaFromHost = false;
#endif

constexpr int64_t kProofWaitNs = 2000000000LL;  // how long the proof copy may take

class AscendDevice : public Device {
 public:
  AscendDevice(const AclLibrary& lib, int index, pid_t owner_pid)
      : lib_(lib), index_(index), owner_pid_(owner_pid), where_("device " + std::to_string(index)) {
    lib_.check(lib_.aclrtSetDevice(index_), "aclrtSetDevice", where_);
    set_count_ = 1;
    std::lock_guard<std::mutex> lock(process_state().mu);
    ++process_state().live_devices;
  }

  ~AscendDevice() override {
    timeline_.reset();  // a stream goes before its device is reset
    prepared_.release_all();
    arena_.reset();     // device memory, before the device is reset
    // Every aclrtSetDevice of this object (one per bound thread) gets its reset.
    for (int i = 0; i < set_count_; ++i) (void)lib_.aclrtResetDevice(index_);
    ProcessState& s = process_state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (--s.live_devices == 0 && getpid() != owner_pid_) finalize_if_initialised(lib_);
  }

  int index() const override { return index_; }

  void bind_thread() override {
    lib_.check(lib_.aclrtSetDevice(index_), "aclrtSetDevice", where_);
    ++set_count_;
  }

  uint64_t free_memory() override {
    size_t free = 0, total = 0;
    lib_.check(lib_.aclrtGetMemInfo(ACL_HBM_MEM, &free, &total), "aclrtGetMemInfo", where_);
    return free;
  }

  std::unique_ptr<Memory> alloc_device(size_t bytes) override {
    void* p = nullptr;
    lib_.check(lib_.aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc",
               where_ + ", " + format_bytes(bytes));
    const AclLibrary* lib = &lib_;
    return std::make_unique<Memory>(nullptr, p, bytes, [lib, p] { (void)lib->aclrtFree(p); });
  }

  // aclrtMallocHost promises 64-byte alignment only, while registration (the direct
  // path) and O_DIRECT (aio --io-type alloc) need 4 KiB: one 4 KiB more is allocated
  // and the buffer starts at the first 4 KiB boundary in it, as UCM does.
  std::unique_ptr<Memory> alloc_pinned(size_t bytes, bool mapped) override {
    const size_t span = round_up(bytes, kRegisterAlign);
    void* raw = nullptr;
    const aclError rc = lib_.aclrtMallocHost(&raw, span + kRegisterAlign);
    if (rc != ACL_SUCCESS) lib_.fail("aclrtMallocHost", rc, where_ + ", " + format_bytes(span + kRegisterAlign), kPinHint);
    const AclLibrary* lib = &lib_;
    void* p = reinterpret_cast<void*>(round_up(reinterpret_cast<uintptr_t>(raw), kRegisterAlign));
    if (!mapped) return std::make_unique<Memory>(p, p, bytes, [lib, raw] { (void)lib->aclrtFreeHost(raw); });
    // Mapped into the device for the direct path. Not ACL_HOST_REG_PINNED: this memory
    // is page-locked already, and the runtime refuses PINNED for it.
    const std::string where = where_ + ", pinned host memory, " + format_bytes(span);
    void* dev = nullptr;
    try {
      if (lib_.has_register_v1()) {
        const aclError r = lib_.aclrtHostRegister(p, span, ACL_HOST_REGISTER_MAPPED, &dev);
        if (r != ACL_SUCCESS) lib_.fail("aclrtHostRegister", r, where, kPinHint);
      } else {
        dev = register_v2(p, span, ACL_HOST_REG_MAPPED, where);
      }
    } catch (...) {
      (void)lib_.aclrtFreeHost(raw);
      throw;
    }
    return std::make_unique<Memory>(p, dev, bytes, [lib, p, raw] {
      (void)lib->aclrtHostUnregister(p);
      (void)lib->aclrtFreeHost(raw);
    });
  }

  std::unique_ptr<Memory> register_host(void* ptr, size_t bytes, bool /*mapped*/) override {
    // Memory not from aclrtMallocHost (odirect mmap, shared memory). Registration is
    // always mapped (the direct path reads the mapped address); CE copies use the CPU
    // address. aclrtHostRegisterV2's PINNED flag also asks the runtime to page-lock it;
    // aclrtHostRegister (V1) maps only, and how the runtime's CE copies treat memory
    // registered that way has not been measured here.
    const std::string missing = lib_.register_missing();
    if (!missing.empty()) throw RunError("ascend: " + missing);
    if (reinterpret_cast<uintptr_t>(ptr) % kRegisterAlign != 0)
      throw RunError("internal: host memory to register is not 4 KiB aligned");
    // Our mappings are page granular, so the rounded length stays inside them.
    const size_t span = round_up(bytes, kRegisterAlign);
    std::string where = where_ + ", " + format_bytes(span);
    // Kernels 5.10 and older: lock the pages first (our mlock, charged to RLIMIT_MEMLOCK),
    // then register, as UCM does; only the runtime's own answer refuses it.
    std::unique_ptr<Memory> locked;
    if (lock_before_register()) {
      locked = lock_pages(ptr, span);
      where += ", pages locked first: kernel " + kernel_release() + " is 5.10 or older";
    }
    const AclLibrary* lib = &lib_;
    void* dev = nullptr;
    if (lib_.has_register_v2()) {
      dev = register_v2(ptr, span, ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED, where + ", MAPPED | PINNED");
    } else {
      const aclError r = lib_.aclrtHostRegister(ptr, span, ACL_HOST_REGISTER_MAPPED, &dev);
      if (r != ACL_SUCCESS) lib_.fail("aclrtHostRegister", r, where, kPinHint);
    }
    auto lock = std::make_shared<std::unique_ptr<Memory>>(std::move(locked));
    return std::make_unique<Memory>(ptr, dev, bytes, [lib, ptr, lock] {
      (void)lib->aclrtHostUnregister(ptr);
      lock->reset();  // munlock after the runtime let go
    });
  }

  std::unique_ptr<Stream> create_stream() override {
    aclrtStream s = nullptr;
    lib_.check(lib_.aclrtCreateStream(&s), "aclrtCreateStream", where_);
    auto stream = std::make_unique<AscendStream>(lib_, s, streams_);
    // A second copy stream: the timing stream (see record()) is made now, at setup,
    // not by the first record of a timed iteration.
    if (!timeline_ && streams_->size() >= 2) {
      aclrtStream h = nullptr;
      lib_.check(lib_.aclrtCreateStream(&h), "aclrtCreateStream", where_ + ", timing stream");
      timeline_ = std::make_unique<AscendStream>(lib_, h, streams_);
    }
    return stream;
  }

  std::unique_ptr<StreamGate> create_gate() override {
    const std::string missing = lib_.gate_missing();
    if (!missing.empty()) throw RunError(missing);
    return std::make_unique<AscendGate>(lib_, index_, where_);
  }

  std::unique_ptr<Event> create_event() override {
    // SYNC as well where streams can wait on events: the timing stream waits on it.
    const bool sync = (lib_.aclrtCreateEventExWithFlag || lib_.aclrtCreateEventWithFlag) && lib_.aclrtStreamWaitEvent;
    bool reusable = false;
    const aclrtEvent e = new_event(sync ? ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC : ACL_EVENT_TIME_LINE, &reusable);
    auto event = std::make_unique<AscendEvent>(lib_, e, sync, reusable, streams_);
    // Its twin on the timing stream (record()), made now, at setup, as streams that
    // come later may need it (unused on a device with one stream).
    if (sync) {
      bool twin_reusable = false;
      event->twin_ = new_event(ACL_EVENT_TIME_LINE, &twin_reusable);
    }
    return event;
  }

  // The staging pipelines' events (one per staging buffer, recorded after its copies,
  // polled with aclrtQueryEventStatus until they completed): ACL_EVENT_CAPTURE_STREAM_
  // PROGRESS alone, as the CANN docs' memory-pool reuse example has it. No TIME_LINE
  // (the docs: timestamps slow the event calls), no SYNC: never joined onto the timing
  // stream (record() waits and resets only SYNC events), so a record is one call and a
  // poll one query. aclrtCreateEventExWithFlag where exported (reused as is; it refuses
  // flag 0), else aclrtCreateEventWithFlag (a CANN before 8.1: the runtime takes the bit
  // as RT_EVENT_STREAM_MARK; an event nothing waits on needs no reset), else the default
  // event of aclrtCreateEvent (timestamps on: doctor's "polling events" says so).
  std::unique_ptr<Event> create_polling_event() override {
    aclrtEvent e = nullptr;
    bool reusable = false;
    if (lib_.aclrtCreateEventExWithFlag) {
      lib_.check(lib_.aclrtCreateEventExWithFlag(&e, ACL_EVENT_CAPTURE_STREAM_PROGRESS), "aclrtCreateEventExWithFlag",
                 where_);
      reusable = true;
    } else if (lib_.aclrtCreateEventWithFlag) {
      lib_.check(lib_.aclrtCreateEventWithFlag(&e, ACL_EVENT_CAPTURE_STREAM_PROGRESS), "aclrtCreateEventWithFlag",
                 where_);
    } else {
      lib_.check(lib_.aclrtCreateEvent(&e), "aclrtCreateEvent", where_);
    }
    return std::make_unique<AscendEvent>(lib_, e, /*sync=*/false, reusable, streams_);
  }

  // aclrtEventElapsedTime is documented for two events of one stream only, while the
  // engine time of several streams spans events of different streams. So on a device
  // with more than one stream each record is also joined onto one timing stream: it
  // waits for the event (aclrtStreamWaitEvent) and records a twin event there. Twins
  // all lie on that one stream, and because it waits in submission order, the twin of
  // the last end event is reached when every stream has reached its end event.
  void record(Event& e, Stream& s) override {
    AscendEvent& ev = event_of(e);
    AscendStream& st = stream_of(s);
    lib_.check(lib_.aclrtRecordEvent(ev.handle(), st.handle()), "aclrtRecordEvent", where_);
    ev.last_stream = &st;
    ev.recorded_ns = now_ns();
    ev.twin_valid = false;
    const size_t copy_streams = streams_->size() - (timeline_ ? 1 : 0);
    if (copy_streams < 2 || !ev.sync()) return;
    if (!timeline_) {
      aclrtStream h = nullptr;
      lib_.check(lib_.aclrtCreateStream(&h), "aclrtCreateStream", where_ + ", timing stream");
      timeline_ = std::make_unique<AscendStream>(lib_, h, streams_);
    }
    if (!ev.twin_) {
      bool reusable = false;
      ev.twin_ = new_event(ACL_EVENT_TIME_LINE, &reusable);
    }
    lib_.check(lib_.aclrtStreamWaitEvent(timeline_->handle(), ev.handle()), "aclrtStreamWaitEvent",
               where_ + ", timing stream");
    // An event that is waited on is reset after the wait before its next record (the
    // CANN docs); events of aclrtCreateEventExWithFlag are made for reuse instead.
    if (!ev.reusable() && lib_.aclrtResetEvent)
      lib_.check(lib_.aclrtResetEvent(ev.handle(), timeline_->handle()), "aclrtResetEvent",
                 where_ + ", timing stream");
    lib_.check(lib_.aclrtRecordEvent(ev.twin_, timeline_->handle()), "aclrtRecordEvent", where_ + ", timing stream");
    ev.twin_valid = true;
  }

  void synchronize(Stream& s) override {
    AscendStream& st = stream_of(s);
    lib_.check(lib_.aclrtSynchronizeStream(st.handle()), "aclrtSynchronizeStream", where_);
    st.completed();  // after handle(): the stream is clean now
  }

  // aclrtQueryEventStatus where the runtime has it (not one of the calls that events of
  // aclrtCreateEventExWithFlag exclude); else the default (wait for the stream). Its
  // NOT_READY cannot tell a copy still running from one that failed before the record,
  // so an event not complete a second after its record is settled by waiting for its
  // stream, which returns the failure if there was one.
  bool query(Event& e, Stream& s) override {
    AscendEvent& ev = event_of(e);
    if (!lib_.aclrtQueryEventStatus) return Device::query(e, s);
    int status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
    lib_.check(lib_.aclrtQueryEventStatus(ev.handle(), &status), "aclrtQueryEventStatus", where_);
    if (status == ACL_EVENT_RECORDED_STATUS_COMPLETE) return true;
    if (now_ns() - ev.recorded_ns < kQuerySettleNs) return false;
    synchronize(s);
    return true;
  }

  int64_t elapsed_ns(Event& from, Event& to) override {
    AscendEvent& a = event_of(from);
    AscendEvent& b = event_of(to);
    aclrtEvent x = a.handle(), y = b.handle();
    if (a.twin_valid && b.twin_valid) {
      // Compare the twins on the timing stream (see record()); for every pair, so that
      // all engine times of a multi-stream device use the one timeline.
      if (timeline_->dirty()) {
        lib_.check(lib_.aclrtSynchronizeStream(timeline_->handle()), "aclrtSynchronizeStream",
                   where_ + ", timing stream");
        timeline_->completed();
      }
      x = a.twin_;
      y = b.twin_;
    }
    // Without aclrtStreamWaitEvent two streams' events are compared directly, which the
    // CANN docs do not cover (doctor says so).
    float ms = 0;
    lib_.check(lib_.aclrtEventElapsedTime(&ms, x, y), "aclrtEventElapsedTime", where_);
    return static_cast<int64_t>(std::llround(static_cast<double>(ms) * 1e6));
  }

  void copy_async(const CopyDesc& d, CopyDir dir, Stream& s) override {
    lib_.check(lib_.aclrtMemcpyAsync(d.dst, d.bytes, d.src, d.bytes, kind_of(dir), stream_of(s).handle()),
               "aclrtMemcpyAsync", where_);
  }

  // What the CANN runtime does with aclrtMemcpyBatchAsync (hicann/runtime, RT0 d8beaaf
  // through HEAD): rtsMemcpyBatchAsync (api_c_memory.cc) answers "feature not supported"
  // (207000) on a SoC without RT_FEATURE_TASK_MEMORY_BATCH_COPY (Atlas A2/A3 have it);
  // ApiImpl::MemcpyBatchAsync (api_impl.cc) then asks the driver for
  // FEATURE_MEMCPY_BATCH_ASYNC: without it, LoopMemcpyAsync issues one async copy per
  // block itself (two pointer-attribute look-ups each, and a stream synchronisation plus
  // a synchronous copy for an unregistered host side) and the call succeeds; with it,
  // the runtime returns RT_ERROR_DRV_NOT_SUPPORT, i.e. 207000 again, having copied
  // nothing. So an accepted batch was never one batched submission, and a 207000 means
  // the driver (or SoC) has a batch copy the runtime does not drive.
  void copy_batch(const CopyDesc* d, size_t n, CopyDir dir, Stream& s) override {
    // The batch API copies host to device or device to host only (CANN docs); where the
    // library lacks it or the runtime refused it (207000), one aclrtMemcpyAsync per block,
    // and batch_fallback() says so: the Method then names CE, not CE-BATCH.
    std::string single;
    if (!lib_.aclrtMemcpyBatchAsync)
      single = "this CANN's libascendcl.so does not export aclrtMemcpyBatchAsync";
    else if (batch_refused_)
      single = batch_refused_text;
    else if (dir != CopyDir::kH2D && dir != CopyDir::kD2H)
      single = "aclrtMemcpyBatchAsync copies host to device or device to host only, not " + std::string(to_string(dir));
    if (!single.empty()) {
      batch_fallback_ = single;
      for (size_t i = 0; i < n; ++i) copy_async(d[i], dir, s);
      return;
    }
    dsts_.resize(n);
    srcs_.resize(n);
    sizes_.resize(n);
    for (size_t i = 0; i < n; ++i) {
      dsts_[i] = d[i].dst;
      srcs_[i] = const_cast<void*>(d[i].src);
      sizes_[i] = d[i].bytes;
    }
    const bool dst_dev = dir == CopyDir::kH2D;
    const bool src_dev = dir == CopyDir::kD2H;
    aclrtMemcpyBatchAttr attr{};
    attr.dstLoc = {dst_dev ? static_cast<uint32_t>(index_) : 0u,
                   dst_dev ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST};
    attr.srcLoc = {src_dev ? static_cast<uint32_t>(index_) : 0u,
                   src_dev ? ACL_MEM_LOCATION_TYPE_DEVICE : ACL_MEM_LOCATION_TYPE_HOST};
    size_t attr_index = 0;  // attrs[0] applies from copy 0 on
    size_t fail_index = SIZE_MAX;
    // destMax of each copy is its size: the batch API takes the same array twice.
    const aclError rc = lib_.aclrtMemcpyBatchAsync(dsts_.data(), sizes_.data(), srcs_.data(), sizes_.data(),
                                                   n, &attr, &attr_index, 1, &fail_index,
                                                   stream_of(s).handle());
    if (rc == ACL_ERROR_RT_FEATURE_NOT_SUPPORT) {
      // Nothing was copied (see above): from now on every block is its own copy.
      batch_refused_ = true;
      batch_fallback_ = batch_refused_text;
      for (size_t i = 0; i < n; ++i) copy_async(d[i], dir, s);
      return;
    }
    if (rc != ACL_SUCCESS)
      lib_.fail("aclrtMemcpyBatchAsync", rc,
                where_ + ", " + std::to_string(n) + " copies" +
                    (fail_index < n ? ", failIndex " + std::to_string(fail_index) : ""));
    batch_looped_ = true;  // accepted: the runtime looped single copies (see above)
  }

  std::string batch_fallback() const override { return batch_fallback_; }
  std::string batch_runtime_loop() const override { return batch_looped_ ? batch_loop_text : ""; }
  std::vector<std::string> notes() const override { return notes_; }

  // Setup of the direct path (n = 0: nothing to prepare yet, as load asks): on an x86
  // host first the proof that SDMA reads host memory there at all.
  void prepare_direct(const CopyDesc* d, size_t n) override {
    prove_sdma_from_host();
    if (n > 0) task(d, n);
  }

  void direct_task(const CopyDesc* d, size_t n, Stream& s) override {
    if (!lib_.has_ffts_launch()) throw RunError("FFTS+ is not available: " + lib_.rt_why);
    prove_sdma_from_host();
    if (n == 0) return;
    launch(task(d, n), stream_of(s));
  }

  // One launch of a built task. The runtime copies the SQE (and host contexts) during
  // the launch, so nothing here has to outlive the call.
  void launch(const FftsTask& t, AscendStream& st) {
    rtFftsPlusTaskInfo_t info{};
    info.fftsPlusSqe = &t.sqe;
    info.descBuf = t.device_contexts ? t.device_contexts : static_cast<const void*>(t.contexts.data());
    const size_t contexts = t.contexts.size();
    info.descBufLen = sizeof(rtFftsPlusSdmaCtx_t) * contexts;
    info.descAddrType = t.device_contexts ? RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_DEVICE : RT_FFTS_PLUS_CTX_DESC_ADDR_TYPE_HOST;
    const rtError_t rc = lib_.rtFftsPlusTaskLaunchWithFlag(&info, st.handle(), 0);
    if (rc != 0)
      lib_.fail("rtFftsPlusTaskLaunchWithFlag", rc,
                where_ + ", " + std::to_string(contexts) + " SDMA context" + (contexts == 1 ? "" : "s") +
                    (t.device_contexts ? " in device memory" : ""));
  }

  void copy_sync(const CopyDesc& d, CopyDir dir) override {
    lib_.check(lib_.aclrtMemcpy(d.dst, d.bytes, d.src, d.bytes, kind_of(dir)), "aclrtMemcpy", where_);
  }

  // Device `peer`'s memory read by copies issued on this device: the current device
  // (this one) enables access to the peer; the CANN docs make enabling one way and, on
  // Atlas A2, a precondition of copies between two devices.
  bool enable_peer_access(int peer, std::string* why) override {
    if (peer == index_) return true;
    if (!lib_.aclrtDeviceCanAccessPeer || !lib_.aclrtDeviceEnablePeerAccess) {
      *why = "this CANN exports no aclrtDeviceCanAccessPeer/aclrtDeviceEnablePeerAccess";
      return false;
    }
    const std::string where = where_ + ", peer device " + std::to_string(peer);
    int32_t can = 0;
    lib_.check(lib_.aclrtDeviceCanAccessPeer(&can, index_, peer), "aclrtDeviceCanAccessPeer", where);
    if (can != 1) {
      *why = "aclrtDeviceCanAccessPeer(" + std::to_string(index_) + ", " + std::to_string(peer) +
             ") says the devices cannot exchange data";
      return false;
    }
    lib_.check(lib_.aclrtDeviceEnablePeerAccess(peer, 0), "aclrtDeviceEnablePeerAccess", where);
    return true;
  }

 private:
  // On an x86 host (kProveSdmaFromHost), once per device: one 4 KiB FFTS+ SDMA copy from
  // registered pinned host memory into this device, read back and compared. A RunError
  // "not supported on this machine: ..." when its bytes do not arrive, it fails, or it
  // does not complete within kProofWaitNs (its memory and stream are then left alone:
  // releasing what a copy may still use would wait for it).
  void prove_sdma_from_host() {
    if (!kProveSdmaFromHost || proof_done_) return;
    proof_done_ = true;  // before the proof's own direct_task
    constexpr size_t kBytes = 4096;
    std::string why;
    std::unique_ptr<Memory> src, dst;
    std::unique_ptr<Stream> stream;
    std::unique_ptr<Event> done;
    try {
      src = alloc_pinned(kBytes, true);
      dst = alloc_device(kBytes);
      auto* bytes = static_cast<unsigned char*>(src->host_ptr());
      std::vector<unsigned char> back(kBytes);
      for (size_t i = 0; i < kBytes; ++i) {
        bytes[i] = static_cast<unsigned char>(i * 31 + 17);
        back[i] = static_cast<unsigned char>(~bytes[i]);  // what the device holds first
      }
      copy_sync({dst->device_ptr(), back.data(), kBytes}, CopyDir::kH2D);
      stream = create_stream();
      done = create_polling_event();
      const CopyDesc d{dst->device_ptr(), src->device_ptr(), kBytes};
      direct_task(&d, 1, *stream);
      // Recorded on its stream only (record() would join a timing stream of the device's
      // other streams).
      lib_.check(lib_.aclrtRecordEvent(event_of(*done).handle(), stream_of(*stream).handle()), "aclrtRecordEvent",
                 where_ + ", the proof copy");
      const int64_t until = now_ns() + kProofWaitNs;
      while (lib_.aclrtQueryEventStatus) {
        int status = ACL_EVENT_RECORDED_STATUS_NOT_READY;
        lib_.check(lib_.aclrtQueryEventStatus(event_of(*done).handle(), &status), "aclrtQueryEventStatus",
                   where_ + ", the proof copy");
        if (status == ACL_EVENT_RECORDED_STATUS_COMPLETE) break;
        if (now_ns() > until) {
          (void)done.release();
          (void)stream.release();
          (void)src.release();
          (void)dst.release();
          why = "did not complete within " + std::to_string(kProofWaitNs / 1000000000LL) + " s";
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (why.empty()) {
        synchronize(*stream);  // reports a copy that failed
        copy_sync({back.data(), dst->device_ptr(), kBytes}, CopyDir::kD2H);
        for (size_t i = 0; i < kBytes && why.empty(); ++i)
          if (back[i] != bytes[i])
            why = "completed without delivering its bytes (first difference at offset " + std::to_string(i) + ")";
      }
    } catch (const RunError& e) {
      why = std::string("failed: ") + e.what();
    }
    if (!why.empty())
      throw RunError("not supported on this machine: host-to-device SDMA does not work on this x86 host (the CANN "
                     "runtime itself does not use it on x86: hicann/runtime b7bb740, cann/runtime issue #594): a "
                     "validated 4 KiB FFTS+ SDMA copy from registered host memory to " + where_ + " " + why);
  }

  // aclrtHostRegisterV2 with `flags`, then the mapped device address.
  void* register_v2(void* ptr, size_t span, uint32_t flags, const std::string& where) {
    const aclError rc = lib_.aclrtHostRegisterV2(ptr, span, flags);
    if (rc != ACL_SUCCESS) lib_.fail("aclrtHostRegisterV2", rc, where, kPinHint);
    void* dev = nullptr;
    const aclError g = lib_.aclrtHostGetDevicePointer(ptr, &dev, 0);
    if (g != ACL_SUCCESS || !dev) {
      (void)lib_.aclrtHostUnregister(ptr);
      if (g != ACL_SUCCESS) lib_.fail("aclrtHostGetDevicePointer", g, where);
      throw RunError("aclrtHostGetDevicePointer (" + where + ") gave no device address for registered memory");
    }
    return dev;
  }

  // The prepared task for this fragment list, built (or rebuilt) when missing or stale;
  // a rebuilt task's old device contexts stay in the arena unused.
  const FftsTask& task(const CopyDesc* d, size_t n) {
    return prepared_.get(d, n, [this](const CopyDesc* descs, size_t count) { return build_task(descs, count); });
  }

  // One fragment is one SDMA context, or several of at most kSdmaMaxContextBytes (the
  // runtime's own ceiling for one host-to-device SQE), back to back, in the same task.
  FftsTask build_task(const CopyDesc* d, size_t n) {
    FftsTask t = build_contexts(d, n);
    if (device_descriptors(t.contexts.size())) place_on_device(t);
    return t;
  }

  // A copy of the task's contexts in device memory (the arena), which launches then use.
  void place_on_device(FftsTask& t) {
    const size_t bytes = sizeof(rtFftsPlusSdmaCtx_t) * t.contexts.size();
    if (!arena_) arena_ = std::make_unique<DescArena>(*this);
    t.device_contexts = arena_->take(bytes);
    lib_.check(lib_.aclrtMemcpy(t.device_contexts, bytes, t.contexts.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE),
               "aclrtMemcpy", where_ + ", FFTS+ context descriptors to the device");
  }

  // Where the contexts of an n-context task go (true: device memory). Up to the
  // runtime's PCIe BAR copy, host memory: the runtime sends them through its pool at
  // launch. Above it both placements cost the launch something (ffts_task.cc
  // FftsPlusTaskInit): host contexts a device allocation and a blocking H2D copy at every
  // launch (FftsPlusTmpAllocH2D); device contexts are used in place by older runtimes,
  // while newer ones read them back with a blocking D2H copy at every launch
  // (CheckFftsPlusDsaContextFromDevice, hicann/runtime a145dcdb2). So the choice is
  // timed, once per context count, at setup; DEV_SANDBOX_FFTS_DESC forces one.
  bool device_descriptors(size_t n) {
    const std::string& mode = ffts_desc_mode();
    const bool beyond_bar = n * sizeof(rtFftsPlusSdmaCtx_t) > kFftsHostDescBarBytes;
    if (!beyond_bar && mode == "auto") return false;
    auto it = desc_choice_.find(n);
    if (it != desc_choice_.end()) return it->second;
    const std::string what = "FFTS+ context descriptors (" + std::to_string(n) + " per task) in ";
    if (mode != "auto") {
      if (beyond_bar) add_note(what + mode + " memory, as DEV_SANDBOX_FFTS_DESC=" + mode + " asks");
      return desc_choice_[n] = mode == "device";
    }
    const bool device = device_descriptors_timed_faster(n);
    desc_choice_[n] = device;
    add_note(what + (device ? "device memory: a launch with them timed faster at setup than with host contexts, "
                              "which the runtime copies with a device allocation and a blocking copy at every launch"
                            : "host memory: a launch with them timed faster at setup than with device contexts, "
                              "which newer runtimes read back with a blocking copy at every launch"));
    return device;
  }

  // One n-context task (each context 512 bytes between scratch buffers) launched
  // kDescTrials times with its contexts in host memory and as often in device memory,
  // alternating, each launch call timed on the host (where both placements do their
  // per-launch work) and waited for untimed. True (device memory) unless the fastest host
  // launch was clearly faster (by a quarter) than the fastest device one.
  bool device_descriptors_timed_faster(size_t n) {
    constexpr size_t kSlots = 8, kEach = 512;
    auto src = alloc_pinned(kSlots * kEach, true);
    auto dst = alloc_device(kSlots * kEach);
    std::memset(src->host_ptr(), 0x5a, kSlots * kEach);
    std::vector<CopyDesc> d(n);
    for (size_t i = 0; i < n; ++i)
      d[i] = {static_cast<char*>(dst->device_ptr()) + (i % kSlots) * kEach,
              static_cast<const char*>(src->device_ptr()) + (i % kSlots) * kEach, kEach};
    FftsTask host = build_contexts(d.data(), n);
    FftsTask device = host;
    place_on_device(device);
    auto stream = create_stream();
    int64_t best[2] = {INT64_MAX, INT64_MAX};
    for (int k = 0; k < kDescTrials; ++k)
      for (int v = 0; v < 2; ++v) {
        const int64_t t0 = now_ns();
        launch(v == 0 ? host : device, stream_of(*stream));
        best[v] = std::min(best[v], now_ns() - t0);
        synchronize(*stream);
      }
    return !(best[0] * 5 < best[1] * 4);
  }

  void add_note(const std::string& note) {
    if (std::find(notes_.begin(), notes_.end(), note) == notes_.end()) notes_.push_back(note);
  }

  FftsTask build_contexts(const CopyDesc* d, size_t n) {
    size_t total = 0;
    for (size_t i = 0; i < n; ++i)
      total += static_cast<size_t>(
          std::max<uint64_t>(1, (d[i].bytes + kSdmaMaxContextBytes - 1) / kSdmaMaxContextBytes));
    if (total > kFftsMaxContexts)
      throw RunError("one FFTS+ task holds at most " + std::to_string(kFftsMaxContexts) + " SDMA contexts, and this "
                     "one needs " + std::to_string(total) + " (" + std::to_string(n) + " fragment" +
                     (n == 1 ? "" : "s") + " in contexts of at most " + format_bytes(kSdmaMaxContextBytes) +
                     "); lower -f or -s");
    FftsTask t;
    t.contexts.assign(total, rtFftsPlusSdmaCtx_t{});
    // The first `lanes` contexts start ready; context k then follows k - lanes.
    const size_t lanes = std::min<size_t>(total, kFftsMaxReadyLanes);
    size_t k = 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t done = 0;
      do {
        const uint64_t len = std::min<uint64_t>(d[i].bytes - done, kSdmaMaxContextBytes);
        const char* src = static_cast<const char*>(d[i].src) + done;
        const char* dst = static_cast<const char*>(d[i].dst) + done;
        rtFftsPlusSdmaCtx_t& c = t.contexts[k];
        c.contextType = RT_CTX_TYPE_SDMA;
        c.threadDim = 1;
        c.sdmaSqeHeader = kSdmaFp32AtomicMoveSqe;
        c.sourceAddressBaseL = low32(src);
        c.sourceAddressBaseH = high32(src);
        c.destinationAddressBaseL = low32(dst);
        c.destinationAddressBaseH = high32(dst);
        c.nonTailDataLength = static_cast<uint32_t>(len);
        c.tailDataLength = static_cast<uint32_t>(len);
        if (k >= lanes) {
          rtFftsPlusSdmaCtx_t& pred = t.contexts[k - lanes];
          pred.successorList[pred.successorNum++] = static_cast<uint16_t>(k);
          c.predCntInit = 1;
          c.predCnt = 1;
        }
        done += len;
        ++k;
      } while (done < d[i].bytes);
    }
    const size_t n_ctx = total;
    t.sqe.typeBits = sqe_type_bits(RT_FFTS_PLUS_TYPE);
    t.sqe.subType = kFftsSubTypeCommunication;
    t.sqe.totalContextNum = static_cast<uint16_t>(n_ctx);
    t.sqe.readyContextNum = static_cast<uint16_t>(lanes);
    t.sqe.preloadContextNum = static_cast<uint16_t>(lanes);
    t.sqe.timeout = 0;
    return t;
  }

  aclrtEvent new_event(uint32_t flags, bool* reusable) {
    aclrtEvent e = nullptr;
    *reusable = false;
    if (lib_.aclrtCreateEventExWithFlag) {
      lib_.check(lib_.aclrtCreateEventExWithFlag(&e, flags), "aclrtCreateEventExWithFlag", where_);
      *reusable = true;
    } else if (lib_.aclrtCreateEventWithFlag) {
      lib_.check(lib_.aclrtCreateEventWithFlag(&e, flags), "aclrtCreateEventWithFlag", where_);
    } else {
      lib_.check(lib_.aclrtCreateEvent(&e), "aclrtCreateEvent", where_);
    }
    return e;
  }

  const AclLibrary& lib_;
  int index_;
  pid_t owner_pid_;
  std::string where_;
  int set_count_ = 0;
  std::shared_ptr<StreamSet> streams_ = std::make_shared<StreamSet>();
  std::unique_ptr<AscendStream> timeline_;  // the timing stream, made on the first multi-stream record
  std::vector<void*> dsts_, srcs_;
  std::vector<size_t> sizes_;
  std::string batch_fallback_;  // why batches went out as single copies; empty: they did not
  bool batch_refused_ = false;  // the runtime answered 207000: no more batch calls
  bool batch_looped_ = false;   // the runtime took a batch (and looped single copies)
  static constexpr const char* batch_refused_text =
      "aclrtMemcpyBatchAsync answered 207000 (feature not supported), as the CANN runtime does where the driver has "
      "its own batch copy (FEATURE_MEMCPY_BATCH_ASYNC) or the SoC has none";
  static constexpr const char* batch_loop_text =
      "aclrtMemcpyBatchAsync took each batch, which the CANN runtime does only where the driver has no batch copy "
      "(FEATURE_MEMCPY_BATCH_ASYNC): it issued one copy per block itself, two pointer-attribute look-ups each";
  std::unique_ptr<DescArena> arena_;
  PreparedLists<FftsTask> prepared_;
  bool proof_done_ = false;  // prove_sdma_from_host ran (x86 hosts)
  std::map<size_t, bool> desc_choice_;  // context count -> device descriptors (timed)
  std::vector<std::string> notes_;      // said once with the result (notes())
};

// A device's driver ids as AscendCL gives them, for DCMI (device_pci.h): its logical id,
// and the physical id of that logical id (of the ACL id where there is none).
DeviceIds driver_ids(const AclLibrary& lib, int dev) {
  DeviceIds ids;
  if (lib.aclrtGetLogicDevIdByUserDevId) {
    int32_t v = -1;
    ids.logic.exported = true;
    ids.logic.rc = lib.aclrtGetLogicDevIdByUserDevId(dev, &v);
    ids.logic.id = v;
  }
  if (lib.aclrtGetPhyDevIdByLogicDevId) {
    int32_t v = -1;
    ids.phy.exported = true;
    ids.phy.rc = lib.aclrtGetPhyDevIdByLogicDevId(ids.logic.ok() ? static_cast<int32_t>(ids.logic.id) : dev, &v);
    ids.phy.id = v;
  }
  return ids;
}

class AscendBackend : public Backend {
 public:
  AscendBackend() : owner_pid_(getpid()) {}
  ~AscendBackend() override {
    // The process that owns this object finalises here, if it initialised at all.
    if (lib_ && getpid() == owner_pid_) {
      std::lock_guard<std::mutex> lock(process_state().mu);
      finalize_if_initialised(*lib_);
    }
  }

  std::string name() const override { return "ascend"; }
  std::string label_prefix() const override { return "acl"; }
  std::string direct_method() const override { return "FFTS-SDMA"; }
  bool copies_on_host_cpus() const override { return lib_ && lib_->copies_on_host_cpus; }
  // aclrtEventElapsedTime documents none; event timestamps (aclrtEventGetTimestamp) are whole microseconds.
  std::string event_timer() const override { return "AscendCL events"; }
  int64_t event_resolution_ns() const override { return 1000; }
  // aclrtMemcpyAsync from host memory that is not page-locked returns only after the
  // copy completes (CANN RT docs, memory copy: "pageable host memory"), so queued
  // behind a held stream it would wait for ever.
  std::string gate_hazard(GateHazard hazard) const override {
    if (hazard == GateHazard::kPageableHost)
      return "aclrtMemcpyAsync from host memory that is not page-locked returns only after the copy completes, "
             "which would hang behind a held stream";
    return {};
  }
  bool has(Capability cap) const override { return cap == Capability::kDirect; }
  // The driver pins pinned and registered memory itself; only on kernels 5.10 and
  // older do we lock our own mappings with mlock before registering them.
  bool mlocks(HostLock kind) const override { return kind == HostLock::kRegistration && lock_before_register(); }
  // The driver maps aclrtMallocHost memory so that O_DIRECT I/O into it fails with EFAULT
  // (ModelEngine-Group/unified-cache-management commit 734318ce, PR #850, which moved
  // UCM's O_DIRECT buffers to mmap memory registered with aclrtHostRegister for it).
  std::string pinned_direct_io_unsupported() const override {
    return "aclrtMallocHost memory fails O_DIRECT I/O with EFAULT (UCM 734318ce)";
  }

  void init_process() override {
    lib_ = &load_acl_library();
    ProcessState& s = process_state();
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.initialised_pid == getpid()) return;
    s.live_devices = 0;  // a forked child starts with none of its parent's devices
    const aclError rc = lib_->aclInit(nullptr);
    if (rc != ACL_SUCCESS && rc != ACL_ERROR_REPEAT_INITIALIZE) lib_->fail("aclInit", rc);
    s.initialised_pid = getpid();
  }

  BackendProbe probe() override {
    const AclLibrary& lib = *lib_;
    BackendProbe p;
    p.loaded = true;
    p.library_path = lib.path;
    p.runtime_version = version_text(lib);
    const char* soc = lib.aclrtGetSocName ? lib.aclrtGetSocName() : nullptr;
    p.facts.push_back({"SoC", soc && *soc ? soc : "unknown"});
    p.facts.push_back({"device -> PCI", probe_devices(lib, soc && *soc ? soc : "unknown", p)});
    probe_facts(lib, soc, p);
    if (getpid() != owner_pid_) {  // the probe runs in a child that ends right after
      std::lock_guard<std::mutex> lock(process_state().mu);
      finalize_if_initialised(lib);
    }
    return p;
  }

  // Every device with its memory, PCI address and NUMA node; how the PCI addresses
  // were found.
  static std::string probe_devices(const AclLibrary& lib, const std::string& soc_text, BackendProbe& p) {
    uint32_t count = 0;
    lib.check(lib.aclrtGetDeviceCount(&count), "aclrtGetDeviceCount");
    p.device_count = static_cast<int>(count);
    std::vector<DeviceIds> ids(count);
    for (uint32_t i = 0; i < count; ++i) {
      const int dev = static_cast<int>(i);
      const std::string where = "device " + std::to_string(i);
      lib.check(lib.aclrtSetDevice(dev), "aclrtSetDevice", where);
      size_t free = 0, total = 0;
      const aclError rc = lib.aclrtGetMemInfo(ACL_HBM_MEM, &free, &total);
      ids[i] = driver_ids(lib, dev);
      (void)lib.aclrtResetDevice(dev);
      if (rc != ACL_SUCCESS) lib.fail("aclrtGetMemInfo", rc, where);
      DeviceInfo d;
      d.index = dev;
      d.kind = "npu";
      d.name = soc_text;
      d.memory_name = "HBM";
      d.free_bytes = free;
      d.total_bytes = total;
      p.devices.push_back(d);
    }
    // Each device's PCI address through DCMI, and so its NUMA node (best effort: the
    // reason goes to doctor when it is unknown).
    const char* visible = std::getenv("ASCEND_RT_VISIBLE_DEVICES");
    const DevicePciMap pci = map_devices_to_pci(ids, dcmi::load_dcmi_library(), visible && *visible);
    for (size_t i = 0; i < p.devices.size(); ++i) {
      if (pci.address[i].empty()) continue;
      p.devices[i].pci_bus_id = sysfs_pci_address(pci.address[i]);
      p.devices[i].numa_node = pci_numa_node(p.devices[i].pci_bus_id);
    }
    return pci.how;
  }

  // What doctor shows of this runtime, and what it cannot do here.
  static void probe_facts(const AclLibrary& lib, const char* soc, BackendProbe& p) {
    const std::string soc_text = soc && *soc ? soc : "unknown";
    p.facts.push_back({"runtime library (FFTS+)", lib.rt_path.empty() ? lib.rt_why : lib.rt_path});
    if (!lib.has_ffts_launch()) {
      p.direct_unavailable = lib.rt_why;
    } else {
      p.direct_unavailable = ffts_unsupported_reason(soc);
    }
    p.facts.push_back(
        {"FFTS+", p.direct_unavailable.empty()
                      ? std::string("available (") +
                            "rtFftsPlusTaskLaunchWithFlag, SoC " + soc_text + ")"
                      : "not available: " + p.direct_unavailable});
    p.facts.push_back({"batch copy (CE-BATCH)",
                       lib.aclrtMemcpyBatchAsync
                           ? "aclrtMemcpyBatchAsync, one call per batch, host to device and device to host "
                             "only (an experimental CANN interface; other directions: one aclrtMemcpyAsync per "
                             "block). The CANN runtime loops single copies inside it where the driver has no batch "
                             "copy (Method CE-BATCH-LOOP) and answers 207000 where it has one or the SoC has none "
                             "(then one aclrtMemcpyAsync per block, Method CE)"
                           : "fallback: aclrtMemcpyBatchAsync is not exported by this CANN, so one "
                             "aclrtMemcpyAsync per block in one submission loop"});
    p.register_unavailable = lib.register_missing();
    p.gate_unavailable = lib.gate_missing();
    // The direct path reads host memory through its registered (mapped) address.
    if (p.direct_unavailable.empty()) p.direct_unavailable = p.register_unavailable;
    if (kProveSdmaFromHost)
      p.facts.push_back({"host-to-device SDMA (x86 host)",
                         "the CANN runtime does not use SDMA for host-to-device copies on x86 (hicann/runtime "
                         "b7bb740, cann/runtime issue #594), so every direct-path worker first proves it with one "
                         "validated 4 KiB FFTS+ SDMA copy, and stops with \"not supported on this machine\" if that "
                         "fails"});
    const std::string kernel = kernel_release();
    const std::string lock_first =
        lock_before_register() ? "; kernel " + kernel + " is 5.10 or older, where the CANN docs allow registering only "
                                 "aclrtMallocHost memory: the pages are locked with mlock first (RLIMIT_MEMLOCK "
                                 "applies), as UCM does"
                               : "";
    std::string reg;
    if (!p.register_unavailable.empty())
      reg = "not available: " + p.register_unavailable +
            "; CE cases copy from that memory unregistered, the direct path is refused";
    else if (lib.has_register_v2())
      reg = "aclrtHostRegisterV2(MAPPED | PINNED) + aclrtHostGetDevicePointer: mapped, and page-locked by the "
            "runtime" + lock_first;
    else
      reg = "aclrtHostRegister (mapped; this CANN has no aclrtHostRegisterV2/aclrtHostGetDevicePointer, so nothing "
            "asks the runtime to page-lock it)" + lock_first;
    p.facts.push_back({"host registration (odirect, shm)", reg});
    p.facts.push_back({"stream start gate", p.gate_unavailable.empty()
                                                ? "a blocking host callback (aclrtLaunchCallback) at the head of "
                                                  "each stream, served by a report thread"
                                                : "not available: " + p.gate_unavailable});
    p.facts.push_back({"events", lib.aclrtCreateEventExWithFlag
                                     ? "aclrtCreateEventExWithFlag (made for reuse, never reset)"
                                     : "aclrtCreateEventWithFlag, reset with aclrtResetEvent after each wait"});
    p.facts.push_back(
        {"polling events (staging reuse)",
         lib.aclrtCreateEventExWithFlag
             ? "aclrtCreateEventExWithFlag(ACL_EVENT_CAPTURE_STREAM_PROGRESS): no timestamps, never waited on, "
               "polled with aclrtQueryEventStatus"
         : lib.aclrtCreateEventWithFlag
             ? "aclrtCreateEventWithFlag(ACL_EVENT_CAPTURE_STREAM_PROGRESS): no timestamps, never waited on, "
               "polled with aclrtQueryEventStatus"
             : "aclrtCreateEventWithFlag not exported: aclrtCreateEvent's default events (timestamps on)"});
    const std::string forced = ffts_desc_mode();
    p.facts.push_back(
        {"FFTS+ context descriptors",
         "built once at setup; up to the runtime's PCIe BAR copy (" +
             std::to_string(kFftsHostDescBarBytes / sizeof(rtFftsPlusSdmaCtx_t)) +
             " contexts) sent from host memory at each launch; " +
             (forced != "auto"
                  ? "larger tasks' contexts in " + forced + " memory, as DEV_SANDBOX_FFTS_DESC=" + forced + " asks"
                  : "larger tasks' contexts in host or device memory, whichever made one launch faster when timed at "
                    "setup (host: a device allocation and a blocking copy at every launch; device: used in place by "
                    "older runtimes, read back with a blocking copy at every launch by newer ones); a note says "
                    "which")});
    p.facts.push_back({"peer access (device to device)",
                       lib.aclrtDeviceCanAccessPeer && lib.aclrtDeviceEnablePeerAccess
                           ? "aclrtDeviceCanAccessPeer + aclrtDeviceEnablePeerAccess on each reading device"
                           : "not exported by this CANN (aclrtDeviceCanAccessPeer/aclrtDeviceEnablePeerAccess)"});
    p.facts.push_back({"multi-stream timing",
                       lib.aclrtStreamWaitEvent && lib.aclrtCreateEventWithFlag
                           ? "events joined onto one timing stream (aclrtStreamWaitEvent), so elapsed times "
                             "compare events of one stream"
                           : "aclrtStreamWaitEvent/aclrtCreateEventWithFlag not exported: events of different "
                             "streams are compared directly, which aclrtEventElapsedTime does not document"});
  }

  std::unique_ptr<Device> open_device(int index) override {
    if (!lib_) throw RunError("internal: ascend open_device before init_process");
    return std::make_unique<AscendDevice>(*lib_, index, owner_pid_);
  }

 private:
  static std::string version_text(const AclLibrary& lib) {
    std::string cann, api;
    if (lib.aclsysGetCANNVersion) {
      aclCANNPackageVersion v;
      std::memset(&v, 0, sizeof v);
      if (lib.aclsysGetCANNVersion(ACL_PKG_NAME_CANN, &v) == ACL_SUCCESS) {
        v.version[sizeof v.version - 1] = '\0';
        cann = v.version;
      }
    }
    if (lib.aclrtGetVersion) {
      int32_t major = 0, minor = 0, patch = 0;
      if (lib.aclrtGetVersion(&major, &minor, &patch) == ACL_SUCCESS)
        api = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
    }
    if (!cann.empty()) return "CANN " + cann + (api.empty() ? "" : " (AscendCL API " + api + ")");
    if (!api.empty()) return "AscendCL API " + api;
    return "unknown";
  }

  pid_t owner_pid_;
  const AclLibrary* lib_ = nullptr;
};

}  // namespace

std::unique_ptr<Backend> make_ascend_backend() { return std::make_unique<AscendBackend>(); }

}  // namespace ds
