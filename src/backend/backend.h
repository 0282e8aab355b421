// The backend boundary. A backend supplies primitives only: devices, memory of each
// kind, streams, events, async/batched/direct copies and completion. Cases, copy methods,
// timing and output are written once above this line and never know which runtime
// they drive.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ds {

enum class CopyDir { kH2D, kD2H, kD2D, kH2H };
const char* to_string(CopyDir dir);

struct CopyDesc {
  void* dst;
  const void* src;
  size_t bytes;
};

// One allocation or registration; released exactly once by the destructor.
class Memory {
 public:
  using Release = std::function<void()>;
  // host_ptr: where the CPU reads/writes it (null for device memory);
  // device_ptr: the address a device copy uses (device memory, or the mapped
  // address of registered/mapped host memory; equals host_ptr where host memory
  // is addressed directly).
  Memory(void* host_ptr, void* device_ptr, size_t bytes, Release release)
      : host_(host_ptr), device_(device_ptr), bytes_(bytes), release_(std::move(release)) {}
  ~Memory() {
    if (release_) release_();
  }
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;

  void* host_ptr() const { return host_; }
  void* device_ptr() const { return device_; }
  size_t bytes() const { return bytes_; }
  bool host_accessible() const { return host_ != nullptr; }

 private:
  void* host_;
  void* device_;
  size_t bytes_;
  Release release_;
};

class Stream {
 public:
  virtual ~Stream() = default;
};

class Event {
 public:
  virtual ~Event() = default;
};

// The stream start gate (--stream-start-gate on): streams held at their head
// until the host lets them all go at once, so that the copies queued behind the
// hold start together, after every submission (docs/measurement.md).
class StreamGate {
 public:
  // Releases what is still held and returns once every held stream has passed
  // its hold, so nothing queued outlives what the hold refers to.
  virtual ~StreamGate() = default;
  // Queue on `stream` a hold that lasts until the next release().
  virtual void hold(Stream& stream) = 0;
  // Let every stream held since the last release() go.
  virtual void release() = 0;
  // Why the gate let its streams go before release() and holds no more (empty:
  // it never did), e.g. a submission that stalled while they were held: what ran
  // from then on ran ungated.
  virtual std::string let_go() const { return {}; }
};

// One device as used by one worker. Created on the thread that uses it; the
// backend binds its context to that thread in open_device().
class Device {
 public:
  virtual ~Device() = default;
  virtual int index() const = 0;
  // Bind this device to the calling thread (after open_device, for other threads).
  virtual void bind_thread() = 0;
  // Device memory free now, in bytes.
  virtual uint64_t free_memory() = 0;

  virtual std::unique_ptr<Memory> alloc_device(size_t bytes) = 0;
  // Page-locked host memory from the runtime; `mapped`: also mapped into the
  // device address space (device_ptr() is that address) for the direct path.
  virtual std::unique_ptr<Memory> alloc_pinned(size_t bytes, bool mapped) = 0;
  // Page-lock and register existing host memory with this device. The result
  // does not own `ptr`; its device_ptr() is the mapped address when `mapped`.
  virtual std::unique_ptr<Memory> register_host(void* ptr, size_t bytes, bool mapped) = 0;

  virtual std::unique_ptr<Stream> create_stream() = 0;
  virtual std::unique_ptr<Event> create_event() = 0;
  // An event only ever query()'d or waited for, never timed (the load pipeline's
  // staging reuse): cheaper to record and poll where the runtime has such events
  // (CU_EVENT_DISABLE_TIMING). The default is create_event().
  virtual std::unique_ptr<Event> create_polling_event();
  virtual void record(Event& event, Stream& stream) = 0;
  virtual void synchronize(Stream& stream) = 0;
  // Untimed, just before a timed pass that submits on these streams at once (load's
  // and offload's copy-alone pass): a backend whose copy engines sleep between
  // passes has them up when the pass begins, so that the pass does not time a
  // wake-up that a card's copy engine does not have. sim readies its copy threads
  // (SimDevice); a card's runtime has nothing to do (the default).
  virtual void ready_streams(Stream* const* /*streams*/, size_t /*n*/) {}
  // Whether everything queued on `stream` before `event` was last recorded there
  // has completed, without waiting (the load pipeline polls one per staging
  // buffer). The default waits for the stream (synchronize) and says true: correct
  // on a backend without a query, only without the overlap.
  virtual bool query(Event& event, Stream& stream);
  // Device-side time from `from` to `to` (both recorded and complete); may be negative.
  virtual int64_t elapsed_ns(Event& from, Event& to) = 0;

  virtual void copy_async(const CopyDesc& desc, CopyDir dir, Stream& stream) = 0;
  // n copies in order on `stream`, each its own copy_async() call (one CE call per
  // copy, as the runtime sees it). The default makes the n calls; sim queues the n
  // copies for its copy thread as one op (the same n memcpys) that reads `descs` in
  // place, so that its submitting thread does not share the CPUs with the copies
  // longer than it must. `descs` must stay valid and unchanged until the stream
  // has run them (prepared tasks: for the life of their plan).
  virtual void copy_async_each(const CopyDesc* descs, size_t n, CopyDir dir, Stream& stream);
  // All descriptors in one submission.
  virtual void copy_batch(const CopyDesc* descs, size_t n, CopyDir dir, Stream& stream) = 0;
  // One direct-path (SDMA) IO task: n fragments, mapped host address -> device.
  virtual void direct_task(const CopyDesc* descs, size_t n, Stream& stream) = 0;
  // A gate for this device's streams; RunError naming the call when it cannot
  // be made. Backends that cannot hold a stream say so in BackendProbe::
  // gate_unavailable, and the run is refused before anything starts.
  virtual std::unique_ptr<StreamGate> create_gate();
  // A copy done by a kernel on the device's cores (cuda only).
  virtual void kernel_copy(const CopyDesc& desc, Stream& stream);
  // Every copy of the list in one kernel launch (cuda only): the kernel reads them
  // from a descriptor table in device memory that prepare_kernel_gather made and
  // uploaded at setup for this list (kept by its address, as prepare_batch's are).
  virtual void kernel_gather(const CopyDesc* descs, size_t n, Stream& stream);
  // Blocking copy, for filling and reading back outside the measurement: the
  // bytes are in place when it returns.
  virtual void copy_sync(const CopyDesc& desc, CopyDir dir) = 0;

  // Let this device's copies reach memory of device `peer` directly (device to
  // device cases). Returns false, with the reason in *why, when the hardware
  // cannot, so the copy would be staged through the host.
  virtual bool enable_peer_access(int peer, std::string* why);

  // One-time work for what will be submitted every iteration (loading a kernel,
  // building and instantiating a graph), done at setup so it stays out of the
  // timed region. The defaults do nothing.
  virtual void prepare_batch(const CopyDesc* descs, size_t n, CopyDir dir);
  virtual void prepare_direct(const CopyDesc* descs, size_t n);
  virtual void prepare_kernel_copy();
  virtual void prepare_kernel_gather(const CopyDesc* descs, size_t n);

  // Why copy_batch() issued its descriptors one copy at a time instead of as one
  // batched submission (the runtime has no batch call, or refused it); empty while
  // every batch went out as a batch. The case then names the method that really
  // ran (CE, not CE-BATCH) and reports this text once.
  virtual std::string batch_fallback() const { return {}; }
  // Why batches the runtime accepted were copied one block at a time all the same, by
  // the runtime itself (ascend: aclrtMemcpyBatchAsync loops single copies where the
  // driver has no batch copy); empty otherwise. The Method is then CE-BATCH-LOOP, and
  // this text is reported once.
  virtual std::string batch_runtime_loop() const { return {}; }
  // Anything else about how this device's copies ran that a result should say (e.g.
  // where the direct path keeps its descriptors), each reported once.
  virtual std::vector<std::string> notes() const { return {}; }
};

// Host memory a case locks, by how it is made: the runtime's own page-locked
// allocation (pinned kinds) or registering memory we mapped ourselves (odirect,
// shm, registered).
enum class HostLock { kPinnedAlloc, kRegistration };

// Copies the stream start gate may not hold (Backend::gate_hazard).
enum class GateHazard {
  kPageableHost,  // to or from host memory nobody page-locked (pageable, anonymous)
  kStagedPeer,    // device to device without peer access: staged through the host
};

enum class Capability {
  kDirect,      // the direct (SDMA-like) H2D path
  kDirectD2H,   // the same path copying device to host (not ascend: docs/hardware-status.md)
  kKernelCopy,  // SM copy kernels (one copy a launch, and the gather kernel)
  kHostMemcpy,  // CPU memcpy cases (sim only)
};

// One device as a backend's probe found it; doctor and the JSON header format it
// (device_line).
struct DeviceInfo {
  static constexpr int kNumaUnknown = -2;
  int index = 0;
  std::string kind;            // "GPU", "npu", "sim card"
  std::string name;            // the model or SoC (sim: what the card is)
  std::string pci_bus_id;      // "0000:18:00.0"; empty when not known
  int numa_node = kNumaUnknown;  // its PCI device's node; -1: none (no affinity)
  std::string memory_name;     // what its memory is called in the line ("HBM"), may be empty
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;    // 0: memory not reported
};

// "GPU 0: <name>, PCI 0000:18:00.0, NUMA node 0, 79.10 GiB free of 79.19 GiB".
std::string device_line(const DeviceInfo& d);

// What a backend reports about itself and the machine; gathered in a probe
// process so the caller never initialises a runtime it will fork from.
struct BackendProbe {
  bool loaded = false;
  std::string error;         // why it did not load
  std::string library_path;  // runtime library actually opened
  std::string runtime_version;
  int device_count = 0;
  std::vector<DeviceInfo> devices;
  std::vector<std::pair<std::string, std::string>> facts;  // extra doctor lines
  std::string direct_unavailable;             // empty: the direct path works here
  std::string register_unavailable;           // empty: host memory can be registered here
  std::string gate_unavailable;               // empty: streams can be held (--stream-start-gate)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;          // sim, cuda, ascend
  virtual std::string label_prefix() const = 0;  // sim, cuda, acl
  // Method name of the direct path: SDMA (sim), BATCH (cuda), FFTS-SDMA (ascend).
  virtual std::string direct_method() const = 0;
  virtual bool has(Capability cap) const = 0;
  // What Device::elapsed_ns reads: the runtime's events, by name, and their resolution
  // as the runtime documents it. Empty and 0 (sim): copies are timed on the host clock.
  virtual std::string event_timer() const { return {}; }
  virtual int64_t event_resolution_ns() const { return 0; }
  // Device memory lives in host RAM (sim): the host memory check counts it.
  virtual bool device_memory_is_host() const { return false; }
  // The copies are work of host CPUs: sim's copy threads, or a runtime library that
  // says so (the test doubles export dev_sandbox_double_copies_on_host_cpus; no vendor
  // library does). The staging pipelines' transfer loop then naps between fruitless
  // looks instead of spinning (aio/io_loop.h look_nap_rule). Asked after init_process.
  virtual bool copies_on_host_cpus() const { return false; }
  // Empty when memory from Device::alloc_pinned can be the buffer of an O_DIRECT read or
  // write; else why not. The disk buffers copies also use (load's staging, aio
  // --io-type alloc) are then memory we map and register (memory/buffer.h make_io_buffer).
  virtual std::string pinned_direct_io_unsupported() const { return {}; }
  // Whether our own code mlock()s memory of this kind, so that it counts against
  // RLIMIT_MEMLOCK. Memory the vendor's driver pins in its kernel module does not.
  virtual bool mlocks(HostLock /*kind*/) const { return false; }
  // How many operations one queue can have queued behind a stream start gate:
  // the host queues every copy before it releases the gate, so a queue that
  // fills first would block the host forever. Runs that would need more are
  // refused up front. A queue is a stream, or, where the streams of a device
  // share hardware queues (gate_shared_queues()), one of those.
  virtual uint64_t gate_queue_limit() const { return 1024; }
  // How many hardware queues the streams of one device share, streams taken
  // round-robin in the order they are made; 0: every stream has its own queue.
  virtual int gate_shared_queues() const { return 0; }
  // Where gate_shared_queues() comes from and how to change it, for messages
  // ("CUDA_DEVICE_MAX_CONNECTIONS=4; it takes 1 to 32").
  virtual std::string gate_queues_setting() const { return {}; }
  // Why copies of `hazard`'s kind cannot be queued behind a held stream here:
  // the runtime may wait for the stream inside the copy call, and the stream
  // waits for the host (a hang). Empty: they can. Such cases run ungated and
  // say why.
  virtual std::string gate_hazard(GateHazard /*hazard*/) const { return {}; }

  // Initialise the runtime in this process. Called once per process that uses
  // devices: in each child after fork, or in the only process. Throws RunError.
  virtual void init_process() = 0;
  // After init_process().
  virtual BackendProbe probe() = 0;
  virtual std::unique_ptr<Device> open_device(int index) = 0;
};

}  // namespace ds
