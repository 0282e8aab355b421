// The copy-method axis: how one device's copies are issued in one iteration. The
// timed loop (runner/timed_loop) drives every initiator the same way:
//   submit()  — issue every copy, return when the last submission returned
//   wait()    — until every copy is complete
//   copy_ns() — the device-side copy duration of that iteration: from when its
//               first copy began to when its last ended, as the device saw it
//               (device events on accelerators, the copy threads' clock on sim)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"

namespace ds {

// The Method column.
enum class CopyMethod {
  kCe,             // one stream, one submission per block          CE
  kCeBatch,        // one stream, all blocks in one batched call     CE-BATCH
  kCeMultiStream,  // blocks spread over S streams (SubmitMode)     CE-MS
  kDirect,         // one direct task per IO task of F fragments     SDMA / BATCH / FFTS-SDMA
  kKernel,         // a copy kernel per block                        SM
  kKernelGather,   // one gather kernel launch moving every block    SM-GATHER
  kMemcpy,         // CPU memcpy on the worker thread                MEMCPY
};

// How a multi-stream initiator spreads a device's IO tasks over its S streams (UCM's
// --submit-mode): stream-major gives each stream one contiguous range of tasks
// (the first tasks % S streams one task more) and submits stream by stream;
// round-robin puts task t on stream t mod S and submits in task order.
enum class SubmitMode { kStreamMajor, kRoundRobin };
const char* submit_mode_name(SubmitMode mode);  // "stream-major", "round-robin"
// The stream that carries task `task` of `tasks` over `streams` streams.
size_t stream_of_task(SubmitMode mode, size_t task, size_t tasks, size_t streams);

// Operations the busiest stream of an initiator queues in one iteration for `tasks`
// IO tasks of `fragments_per_task` copies over `streams` streams (multi-stream
// only): its copies (or batched / direct submissions), its two events and a
// start-gate hold; 0 for CPU memcpy, which has no stream. The stream start gate
// holds all of them at once, so this must fit the backend's queue.
uint64_t queued_per_stream(CopyMethod kind, uint64_t tasks, size_t fragments_per_task, int streams);
// The same for the busiest of `queues` hardware queues the initiator's streams share,
// stream s on queue (s + any offset) mod queues: the sum over the streams of the
// busiest queue. queues <= 0: every stream its own queue (queued_per_stream).
uint64_t queued_per_queue(CopyMethod kind, uint64_t tasks, size_t fragments_per_task, int streams, int queues);

// Base Method name of a copy method (the fork suffix and the direct-path name are
// added by the case, which knows topology and backend).
std::string method_label(CopyMethod kind, const Backend& backend);

// One device's copies of one iteration: a copy per fragment of the layout, in
// order, and where its IO tasks begin (the direct path submits a task at a time).
struct CopyPlan {
  std::vector<CopyDesc> copies;
  CopyDir dir = CopyDir::kH2D;
  size_t fragments_per_task = 1;  // copies [t*k, (t+1)*k) are task t
  int streams = 1;                // for kCeMultiStream
  SubmitMode submit_mode = SubmitMode::kStreamMajor;  // for kCeMultiStream
  // Hold every stream at its start until the iteration's copies are all queued
  // (--stream-start-gate on): Copy is then the copy engines alone.
  bool gate = false;
};

// A device's copies prepared once and issued a task at a time, on a stream the
// caller picks: how every initiator below issues, and how load's pipeline issues a
// block (its task) as soon as its read lands. Whatever the backend makes for a
// task's submissions (batch arrays, graphs, FFTS+ contexts, gather tables:
// prepare_batch, prepare_direct, prepare_kernel_copy, prepare_kernel_gather) is made here, once per task, at
// construction; issue() only submits. The descriptors are kept here and never
// change or move afterwards, so the backend finds what it made for them (it keeps
// that by the list's address: backend/prepared_lists.h) and no timed iteration
// builds, instantiates or allocates anything.
class PreparedTasks {
 public:
  // kind: kCe (a copy_async per fragment), kCeBatch (one copy_batch per task),
  // kDirect (one direct_task per task), kKernel (a kernel_copy per fragment) or
  // kKernelGather (one kernel_gather per task, its table made here);
  // copies [t*per_task, (t+1)*per_task) are task t (the last may be shorter).
  PreparedTasks(CopyMethod kind, Device& device, std::vector<CopyDesc> copies, size_t per_task, CopyDir dir);
  size_t tasks() const { return tasks_; }
  const std::vector<CopyDesc>& copies() const { return copies_; }
  void issue(size_t task, Stream& stream);

 private:
  const CopyDesc* task_copies(size_t task, size_t* n) const;

  CopyMethod kind_;
  Device& device_;
  std::vector<CopyDesc> copies_;
  size_t per_task_;
  size_t tasks_;
  CopyDir dir_;
};

// One device's copies under one or more plans (the same copies placed two ways:
// --compare-contiguous's paged and contiguous passes), all issued on the same
// streams with the same events and gate, so that two passes differ only in where
// their copies go. use(i) picks the plan the next submit() issues (plan 0 first).
class Initiator {
 public:
  virtual ~Initiator() = default;
  // An index past the plans is an internal RunError.
  void use(size_t plan);
  size_t plans() const { return plans_; }
  virtual void submit() = 0;
  virtual void wait() = 0;
  virtual int64_t copy_ns() = 0;
  // With the gate: why it let the streams go early and held no more (empty: it
  // held every iteration, or there is no gate). Read after the last iteration.
  virtual std::string ungated() const { return {}; }
  // Its streams, appended to `out` (Device::ready_streams before a timed pass); none
  // for an initiator that copies on the CPU.
  virtual void add_streams(std::vector<Stream*>& /*out*/) {}

 protected:
  explicit Initiator(size_t plans) : plans_(plans) {}
  size_t current() const { return current_; }

 private:
  size_t plans_;
  size_t current_ = 0;
};

std::unique_ptr<Initiator> make_initiator(CopyMethod kind, Device& device, CopyPlan plan);
// Several plans on one set of streams (and events, and gate): every plan the same
// direction, stream count, submit mode and gate (a RunError otherwise); plan 0's
// gate and streams are the initiator's.
std::unique_ptr<Initiator> make_initiator(CopyMethod kind, Device& device, std::vector<CopyPlan> plans);

}  // namespace ds
