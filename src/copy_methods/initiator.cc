#include "copy_methods/initiator.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "core/clock.h"
#include "core/error.h"

namespace ds {

std::string method_label(CopyMethod kind, const Backend& backend) {
  switch (kind) {
    case CopyMethod::kCe: return "CE";
    case CopyMethod::kCeBatch: return "CE-BATCH";
    case CopyMethod::kCeMultiStream: return "CE-MS";
    case CopyMethod::kDirect: return backend.direct_method();
    case CopyMethod::kKernel: return "SM";
    case CopyMethod::kKernelGather: return "SM-GATHER";
    case CopyMethod::kMemcpy: return "MEMCPY";
  }
  return "?";
}

const char* submit_mode_name(SubmitMode mode) {
  return mode == SubmitMode::kRoundRobin ? "round-robin" : "stream-major";
}

size_t stream_of_task(SubmitMode mode, size_t task, size_t tasks, size_t streams) {
  if (streams <= 1) return 0;
  if (mode == SubmitMode::kRoundRobin) return task % streams;
  // The first `extra` streams carry base + 1 tasks each, the rest base.
  const size_t base = tasks / streams, extra = tasks % streams;
  const size_t in_larger = extra * (base + 1);
  if (task < in_larger) return task / (base + 1);
  return extra + (task - in_larger) / base;
}

uint64_t queued_per_stream(CopyMethod kind, uint64_t tasks, size_t fragments_per_task, int streams) {
  const uint64_t k = std::max<size_t>(1, fragments_per_task);
  uint64_t ops = 0;
  switch (kind) {
    case CopyMethod::kCe:
    case CopyMethod::kKernel: ops = tasks * k; break;  // a copy per fragment
    case CopyMethod::kCeBatch:
    case CopyMethod::kKernelGather: ops = 1; break;    // one batched submission, one gather launch
    case CopyMethod::kDirect: ops = tasks; break;      // one direct task per IO task
    case CopyMethod::kMemcpy: return 0;
    case CopyMethod::kCeMultiStream: {
      // Either submit mode gives the busiest stream ceil(tasks / S) tasks.
      const uint64_t s = static_cast<uint64_t>(std::max(1, streams));
      ops = (tasks + s - 1) / s * k;
      break;
    }
  }
  return ops + 3;
}

uint64_t queued_per_queue(CopyMethod kind, uint64_t tasks, size_t fragments_per_task, int streams, int queues) {
  if (kind != CopyMethod::kCeMultiStream || queues <= 0 || streams <= queues)
    return queued_per_stream(kind, tasks, fragments_per_task, streams);
  // Either submit mode gives the first tasks % S streams one task more; the queue
  // of stream 0 carries streams 0, Q, 2Q, ...: the most streams, and the most of
  // the larger ones, whatever queue stream 0 lands on.
  const uint64_t k = std::max<size_t>(1, fragments_per_task);
  const uint64_t s = static_cast<uint64_t>(streams), q = static_cast<uint64_t>(queues);
  const uint64_t base = tasks / s, extra = tasks % s;
  uint64_t ops = 0;
  for (uint64_t i = 0; i < s; i += q) ops += (base + (i < extra ? 1 : 0)) * k + 3;
  return ops;
}

PreparedTasks::PreparedTasks(CopyMethod kind, Device& device, std::vector<CopyDesc> copies, size_t per_task,
                             CopyDir dir)
    : kind_(kind),
      device_(device),
      copies_(std::move(copies)),
      per_task_(std::max<size_t>(1, per_task)),
      tasks_((copies_.size() + per_task_ - 1) / per_task_),
      dir_(dir) {
  if (kind_ != CopyMethod::kCe && kind_ != CopyMethod::kCeBatch && kind_ != CopyMethod::kDirect &&
      kind_ != CopyMethod::kKernel && kind_ != CopyMethod::kKernelGather)
    throw RunError("internal: PreparedTasks issues CE, CE-BATCH, direct, kernel or gather-kernel copies");
  if (kind_ == CopyMethod::kKernel) device_.prepare_kernel_copy();
  for (size_t t = 0; t < tasks_; ++t) {
    size_t n = 0;
    const CopyDesc* d = task_copies(t, &n);
    if (kind_ == CopyMethod::kCeBatch) device_.prepare_batch(d, n, dir_);
    if (kind_ == CopyMethod::kDirect) device_.prepare_direct(d, n);
    if (kind_ == CopyMethod::kKernelGather) device_.prepare_kernel_gather(d, n);
  }
}

const CopyDesc* PreparedTasks::task_copies(size_t task, size_t* n) const {
  const size_t first = task * per_task_;
  *n = std::min(per_task_, copies_.size() - first);
  return copies_.data() + first;
}

void PreparedTasks::issue(size_t task, Stream& stream) {
  size_t n = 0;
  const CopyDesc* d = task_copies(task, &n);
  switch (kind_) {
    case CopyMethod::kCeBatch: return device_.copy_batch(d, n, dir_, stream);
    case CopyMethod::kDirect: return device_.direct_task(d, n, stream);
    case CopyMethod::kKernelGather: return device_.kernel_gather(d, n, stream);
    case CopyMethod::kKernel:
      for (size_t i = 0; i < n; ++i) device_.kernel_copy(d[i], stream);
      return;
    default:
      return device_.copy_async_each(d, n, dir_, stream);
  }
}

void Initiator::use(size_t plan) {
  if (plan >= plans_) throw RunError("internal: an initiator of " + std::to_string(plans_) + " plans has no plan " +
                                     std::to_string(plan));
  current_ = plan;
}

namespace {

// Streams with a start and an end event each; the copy time spans the earliest
// start to the latest end over all streams, as the device saw them. With the
// gate, every stream is held ahead of its start event until all copies and end
// events are queued, so the starts are stamped when the streams are let go.
// Every plan of the initiator is issued on these streams, events and gate.
class StreamInitiator : public Initiator {
 public:
  StreamInitiator(Device& device, size_t plans, bool gate, int streams) : Initiator(plans), device_(device) {
    for (int s = 0; s < streams; ++s) {
      streams_.push_back(device_.create_stream());
      starts_.push_back(device_.create_event());
      ends_.push_back(device_.create_event());
    }
    if (gate) gate_ = device_.create_gate();
  }

  ~StreamInitiator() override { settle(); }

  void submit() override {
    if (gate_)
      for (auto& s : streams_) gate_->hold(*s);
    for (size_t s = 0; s < streams_.size(); ++s) device_.record(*starts_[s], *streams_[s]);
    issue(current());
    for (size_t s = 0; s < streams_.size(); ++s) device_.record(*ends_[s], *streams_[s]);
    if (gate_) gate_->release();
  }

  void wait() override {
    for (auto& s : streams_) device_.synchronize(*s);
  }

  std::string ungated() const override { return gate_ ? gate_->let_go() : std::string(); }
  void add_streams(std::vector<Stream*>& out) override {
    for (auto& s : streams_) out.push_back(s.get());
  }

  int64_t copy_ns() override {
    int64_t first = std::numeric_limits<int64_t>::max();
    int64_t last = std::numeric_limits<int64_t>::min();
    for (size_t s = 0; s < streams_.size(); ++s) {
      first = std::min(first, device_.elapsed_ns(*starts_[0], *starts_[s]));
      last = std::max(last, device_.elapsed_ns(*starts_[0], *ends_[s]));
    }
    return last - first;
  }

 protected:
  virtual void issue(size_t plan) = 0;
  Stream& stream(size_t i) { return *streams_[i]; }
  // Nothing queued may outlive the events, buffers and descriptors it refers to,
  // also when an iteration failed between submit() and wait(): let held streams
  // go first, then wait for every stream. A subclass whose members are queued by
  // reference (prepared descriptors) settles in its own destructor, before they go.
  void settle() noexcept {
    if (settled_) return;
    settled_ = true;
    if (gate_) {
      try {
        gate_->release();
      } catch (const std::exception&) {
      }
    }
    for (auto& s : streams_) {
      try {
        device_.synchronize(*s);
      } catch (const std::exception&) {
      }
    }
  }
  Device& device_;

 private:
  // Events before streams: streams (and sim's copy threads) go first; the gate
  // goes before them, once every stream it held has passed its hold.
  std::vector<std::unique_ptr<Event>> starts_, ends_;
  std::vector<std::unique_ptr<Stream>> streams_;
  std::unique_ptr<StreamGate> gate_;
  bool settled_ = false;
};

// CE, CE-BATCH, the direct path, SM and SM-GATHER: one stream, a plan's tasks in order.
class TaskInitiator : public StreamInitiator {
 public:
  TaskInitiator(Device& d, CopyMethod kind, std::vector<CopyPlan> plans)
      : StreamInitiator(d, plans.size(), plans.front().gate, 1) {
    tasks_.reserve(plans.size());
    for (CopyPlan& p : plans) tasks_.push_back(make_tasks(kind, d, p));
  }
  // The streams may still read the tasks' descriptors (Device::copy_async_each).
  ~TaskInitiator() override { settle(); }
  void issue(size_t plan) override {
    PreparedTasks& tasks = tasks_[plan];
    for (size_t t = 0; t < tasks.tasks(); ++t) tasks.issue(t, stream(0));
  }

 private:
  // One batched submission (one gather launch) of every copy; one direct task per
  // IO task; else the copies one by one (the grouping does not change what is issued).
  static size_t per_task(CopyMethod kind, const CopyPlan& p) {
    if (kind == CopyMethod::kCeBatch || kind == CopyMethod::kKernelGather) return std::max<size_t>(1, p.copies.size());
    if (kind == CopyMethod::kDirect) return std::max<size_t>(1, p.fragments_per_task);
    return std::max<size_t>(1, p.copies.size());
  }
  // The plan's copies move into the tasks (a plan may hold millions).
  static PreparedTasks make_tasks(CopyMethod kind, Device& d, CopyPlan& p) {
    const size_t k = per_task(kind, p);
    return PreparedTasks(kind, d, std::move(p.copies), k, p.dir);
  }
  std::vector<PreparedTasks> tasks_;  // per plan; reserved, so none moves once made
};

// A multi-stream plan's submission order as runs: consecutive copies of the plan
// on one stream, each run one copy_async_each (the same copy calls, in the same
// order). Each IO task (its fragments) stays on one stream; the order of
// submission is the mode's: stream by stream, or task by task.
struct CopyRun {
  size_t first, count, stream;
};
std::vector<CopyRun> submission_runs(const CopyPlan& plan) {
  std::vector<CopyRun> runs;
  const size_t k = std::max<size_t>(1, plan.fragments_per_task);
  const size_t tasks = (plan.copies.size() + k - 1) / k;
  const size_t streams = static_cast<size_t>(plan.streams);
  std::vector<std::vector<size_t>> of_stream(streams);
  for (size_t t = 0; t < tasks; ++t) of_stream[stream_of_task(plan.submit_mode, t, tasks, streams)].push_back(t);
  auto add = [&](size_t t, size_t s) {
    const size_t first = t * k, count = std::min(plan.copies.size(), first + k) - first;
    if (!runs.empty() && runs.back().stream == s && runs.back().first + runs.back().count == first)
      runs.back().count += count;
    else
      runs.push_back({first, count, s});
  };
  if (plan.submit_mode == SubmitMode::kRoundRobin) {
    for (size_t t = 0; t < tasks; ++t) add(t, t % streams);
  } else {
    for (size_t s = 0; s < streams; ++s)
      for (size_t t : of_stream[s]) add(t, s);
  }
  return runs;
}

class MultiStreamInitiator : public StreamInitiator {
 public:
  MultiStreamInitiator(Device& d, std::vector<CopyPlan> plans)
      : StreamInitiator(d, plans.size(), plans.front().gate, plans.front().streams), plans_(std::move(plans)) {
    for (const CopyPlan& p : plans_) runs_.push_back(submission_runs(p));
  }
  // The streams may still read the plans' descriptors (Device::copy_async_each).
  ~MultiStreamInitiator() override { settle(); }
  void issue(size_t plan) override {
    const CopyPlan& p = plans_[plan];
    for (const CopyRun& r : runs_[plan])
      device_.copy_async_each(p.copies.data() + r.first, r.count, p.dir, stream(r.stream));
  }

 private:
  std::vector<CopyPlan> plans_;
  std::vector<std::vector<CopyRun>> runs_;  // per plan, in submission order
};

// The CPU does the copy: the copy is done when submit() returns.
class MemcpyInitiator : public Initiator {
 public:
  explicit MemcpyInitiator(std::vector<CopyPlan> p) : Initiator(p.size()), plans_(std::move(p)) {}
  void submit() override {
    const int64_t t0 = now_ns();
    for (const CopyDesc& b : plans_[current()].copies) std::memcpy(b.dst, b.src, b.bytes);
    copy_ns_ = now_ns() - t0;
  }
  void wait() override {}
  int64_t copy_ns() override { return copy_ns_; }

 private:
  std::vector<CopyPlan> plans_;
  int64_t copy_ns_ = 0;
};

}  // namespace

std::unique_ptr<Initiator> make_initiator(CopyMethod kind, Device& device, std::vector<CopyPlan> plans) {
  if (plans.empty()) throw RunError("internal: an initiator needs a plan");
  for (const CopyPlan& p : plans)
    if (p.dir != plans.front().dir || p.streams != plans.front().streams ||
        p.submit_mode != plans.front().submit_mode || p.gate != plans.front().gate)
      throw RunError("internal: an initiator's plans share its streams: the same direction, streams, mode and gate");
  switch (kind) {
    case CopyMethod::kCe:
    case CopyMethod::kCeBatch:
    case CopyMethod::kDirect:
    case CopyMethod::kKernel:
    case CopyMethod::kKernelGather: return std::make_unique<TaskInitiator>(device, kind, std::move(plans));
    case CopyMethod::kCeMultiStream:
      return std::make_unique<MultiStreamInitiator>(device, std::move(plans));
    case CopyMethod::kMemcpy: return std::make_unique<MemcpyInitiator>(std::move(plans));
  }
  throw RunError("internal: unknown copy method");
}

std::unique_ptr<Initiator> make_initiator(CopyMethod kind, Device& device, CopyPlan plan) {
  std::vector<CopyPlan> plans;
  plans.push_back(std::move(plan));
  return make_initiator(kind, device, std::move(plans));
}

}  // namespace ds
