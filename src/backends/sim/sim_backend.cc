#include "backends/sim/sim_backend.h"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/sim/sim_copy_thread.h"
#include "core/clock.h"
#include "topology/topology.h"
#include "core/error.h"
#include "core/futex.h"
#include "core/sysinfo.h"
#include "memory/host_memory.h"

namespace ds {

namespace {

class SimStream : public Stream {
 public:
  SimCopyThread copier;
};

class SimEvent : public Event {
 public:
  SimEventStamp stamp;
};

SimCopyThread& copier_of(Stream& s) { return static_cast<SimStream&>(s).copier; }

// Each held copy thread waits for the word to reach this round's number; release()
// stores it and wakes them.
class SimGate : public StreamGate {
 public:
  ~SimGate() override {
    release();
    for (Stream* s : held_) copier_of(*s).wait_idle();  // every copy thread is past the word
  }
  void hold(Stream& s) override {
    copier_of(s).wait_gate(&word_, round_);
    if (std::find(held_.begin(), held_.end(), &s) == held_.end()) held_.push_back(&s);
  }
  void release() override {
    word_.store(round_, std::memory_order_release);
    futex_wake_all(&word_);
    ++round_;
  }

 private:
  std::atomic<uint32_t> word_{0};
  uint32_t round_ = 1;
  std::vector<Stream*> held_;
};

class SimDevice : public Device {
 public:
  explicit SimDevice(int index) : index_(index) {}
  int index() const override { return index_; }
  void bind_thread() override {}
  uint64_t free_memory() override { return mem_available_bytes(); }

  std::unique_ptr<Memory> alloc_device(size_t bytes) override {
    // The card's memory: host RAM, faulted in now, reached only through copies.
    auto m = map_anonymous(bytes, true);
    void* p = m->device_ptr();
    auto owner = std::make_shared<std::unique_ptr<Memory>>(std::move(m));
    return std::make_unique<Memory>(nullptr, p, bytes, [owner] { owner->reset(); });
  }

  std::unique_ptr<Memory> alloc_pinned(size_t bytes, bool /*mapped*/) override {
    // Faulted in (on the worker's node) before the lock rather than by it: a
    // runtime's pinned memory is resident, whether or not mlock() really locks
    // (sanitizer runtimes make it a no-op).
    auto m = map_anonymous(bytes, true);
    auto lock = lock_pages(m->host_ptr(), bytes);
    void* p = m->host_ptr();
    auto owner = std::make_shared<std::pair<std::unique_ptr<Memory>, std::unique_ptr<Memory>>>(
        std::move(m), std::move(lock));
    return std::make_unique<Memory>(p, p, bytes, [owner] {
      owner->second.reset();  // unlock before unmap
      owner->first.reset();
    });
  }

  std::unique_ptr<Memory> register_host(void* ptr, size_t bytes, bool /*mapped*/) override {
    return lock_pages(ptr, bytes);
  }

  std::unique_ptr<Stream> create_stream() override {
    auto s = std::make_unique<SimStream>();
    const int e = s->copier.batch_policy_error();
    if (e != 0 && batch_refused_.empty())
      batch_refused_ = std::string("sim: copy threads at the default scheduling policy (pthread_setschedparam "
                                   "SCHED_BATCH: ") +
                       std::strerror(e) + "): a copy thread woken by a submission may take the submitting thread's CPU";
    return s;
  }
  std::unique_ptr<Event> create_event() override { return std::make_unique<SimEvent>(); }
  std::unique_ptr<StreamGate> create_gate() override { return std::make_unique<SimGate>(); }
  void record(Event& e, Stream& s) override {
    auto& ev = static_cast<SimEvent&>(e).stamp;
    ev.ns.store(-1, std::memory_order_relaxed);
    copier_of(s).stamp(&ev);
  }
  void synchronize(Stream& s) override { copier_of(s).wait_idle(); }
  // All streams but the first, as many as the CPUs this thread may run on leave
  // beside it: the first is this thread's, which runs a queue itself when it
  // waits and finds its copy thread not yet at it (SimCopyThread::wait_done). The
  // readied threads poll from their wake-up until kReadyPollNs after the last is
  // up; this thread yields while it waits for them (at most kReadyWaitNs), so that
  // one the scheduler put on this CPU runs, and moves off it.
  void ready_streams(Stream* const* streams, size_t n) override {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (n < 2 || sched_getaffinity(0, sizeof allowed, &allowed) != 0) return;
    const size_t k = std::min(n, static_cast<size_t>(CPU_COUNT(&allowed))) - 1;
    if (k == 0) return;
    const int primer = sched_getcpu();
    const int64_t start = now_ns();
    for (size_t i = n - k; i < n; ++i) copier_of(*streams[i]).ready(start + kReadyWaitNs + kReadyPollNs, primer);
    for (;;) {
      bool up = true;
      for (size_t i = n - k; i < n && up; ++i) up = copier_of(*streams[i]).readied();
      if (up || now_ns() - start > kReadyWaitNs) break;
      sched_yield();
    }
    const int64_t until = now_ns() + kReadyPollNs;
    for (size_t i = n - k; i < n; ++i) {
      SimCopyThread& c = copier_of(*streams[i]);
      c.ready_until(until);
      if (const int e = c.move_error(); e != 0 && move_refused_.empty())
        move_refused_ = std::string("sim: readied copy threads not moved as meant (sched_setaffinity: ") +
                        std::strerror(e) + "): two may take turns on one CPU while another idles";
    }
  }
  // The copy thread stamps the event when it reaches it, after everything queued before.
  bool query(Event& e, Stream&) override {
    return static_cast<SimEvent&>(e).stamp.ns.load(std::memory_order_acquire) >= 0;
  }
  int64_t elapsed_ns(Event& from, Event& to) override {
    const int64_t a = static_cast<SimEvent&>(from).stamp.ns.load(std::memory_order_acquire);
    const int64_t b = static_cast<SimEvent&>(to).stamp.ns.load(std::memory_order_acquire);
    if (a < 0 || b < 0) throw RunError("sim elapsed_ns: event not complete");
    return b - a;
  }

  void copy_async(const CopyDesc& d, CopyDir, Stream& s) override { copier_of(s).copy(d); }
  void copy_async_each(const CopyDesc* d, size_t n, CopyDir, Stream& s) override { copier_of(s).copy_each(d, n); }
  void copy_batch(const CopyDesc* d, size_t n, CopyDir, Stream& s) override {
    copier_of(s).copy_list(d, n);
  }
  void direct_task(const CopyDesc* d, size_t n, Stream& s) override {
    copier_of(s).copy_list(d, n);
  }
  void copy_sync(const CopyDesc& d, CopyDir) override { std::memcpy(d.dst, d.src, d.bytes); }
  std::vector<std::string> notes() const override {
    std::vector<std::string> lines;
    for (const std::string* line : {&batch_refused_, &move_refused_})
      if (!line->empty()) lines.push_back(*line);
    return lines;
  }

 private:
  // ready_streams(): the longest the submitting thread waits for the readied copy
  // threads to be up (untimed; a loaded machine may not run them sooner), and how
  // long they poll for the pass's first submissions once they are.
  static constexpr int64_t kReadyWaitNs = 1000000;
  static constexpr int64_t kReadyPollNs = 100000;
  int index_;
  std::string batch_refused_;  // the first stream's refusal, said once
  std::string move_refused_;   // the first readied thread's refused move, said once
};

class SimBackend : public Backend {
 public:
  std::string name() const override { return "sim"; }
  std::string label_prefix() const override { return "sim"; }
  std::string direct_method() const override { return "SDMA"; }
  bool has(Capability cap) const override { return cap != Capability::kKernelCopy; }
  bool device_memory_is_host() const override { return true; }
  bool copies_on_host_cpus() const override { return true; }  // memcpy on copy threads
  // Pinned and registered memory is mmap + mlock here: RLIMIT_MEMLOCK applies.
  bool mlocks(HostLock) const override { return true; }
  // The copy thread's ring: a producer blocked on a full ring behind a held copy thread would wait forever.
  uint64_t gate_queue_limit() const override { return SimCopyThread::capacity(); }
  void init_process() override {}
  BackendProbe probe() override {
    BackendProbe p;
    p.loaded = true;
    p.runtime_version = "cpu memcpy simulation";
    p.device_count = sim_device_count();
    // No PCI device behind a sim card: card i is on node i mod (nodes), so a
    // multi-node machine spreads the cards as a real server's would be.
    const std::vector<int> nodes = read_host_topology().node_ids();
    for (int i = 0; i < p.device_count; ++i) {
      DeviceInfo d;
      d.index = i;
      d.numa_node = nodes[static_cast<size_t>(i) % nodes.size()];
      d.kind = "sim card";
      d.name = "host RAM as device memory, one memcpy thread per stream";
      p.devices.push_back(d);
    }
    return p;
  }
  std::unique_ptr<Device> open_device(int index) override {
    return std::make_unique<SimDevice>(index);
  }
};

}  // namespace

int sim_device_count() {
  const char* env = std::getenv("DEV_SANDBOX_SIM_DEVICES");
  if (!env || !*env) return 8;
  char* end = nullptr;
  const long v = std::strtol(env, &end, 10);
  if (*end != '\0' || v < 1 || v > 1024)
    throw RunError(std::string("DEV_SANDBOX_SIM_DEVICES is '") + env + "': expects a whole number from 1 to 1024");
  return static_cast<int>(v);
}

std::unique_ptr<Backend> make_sim_backend() { return std::make_unique<SimBackend>(); }

}  // namespace ds
