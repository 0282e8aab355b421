#include "load/pipeline.h"

#include <algorithm>
#include <functional>

#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace ds {

namespace {

// Accumulates the time a count is above zero.
class BusyClock {
 public:
  void reset() {
    since_ = -1;
    total_ = 0;
  }
  void update(bool busy, int64_t now) {
    if (busy && since_ < 0) since_ = now;
    if (!busy && since_ >= 0) {
      total_ += now - since_;
      since_ = -1;
    }
  }
  int64_t total() const { return total_; }

 private:
  int64_t since_ = -1;
  int64_t total_ = 0;
};

}  // namespace

// The pipelined pass as the transfer core sees it: block b is read into buffer
// b % K once that buffer's copies are complete; a completed read submits the
// block's copies; the pass is over when every block's copies are complete.
// Everything it keeps is sized once, at setup.
class Pipeline::Reads : public TransferClient {
 public:
  explicit Reads(Pipeline& p)
      : p_(p), n_(p.c_.reads->size()), k_(p.c_.staging_host.size()) {
    free_.reserve(k_);
    copying_.reserve(k_);
  }

  void reset() {
    free_.clear();
    copying_.clear();
    for (size_t b = 0; b < std::min(k_, n_); ++b) free_.push_back(b);  // ascending: a min-heap already
    done_ = 0;
    submit_ns = 0;
    read_busy.reset();
    copy_busy.reset();
  }

  // The lowest-numbered unread block whose buffer is free.
  bool next(size_t& unit, char*& buf) override {
    if (free_.empty()) return false;
    unit = free_.front();
    buf = p_.c_.staging_host[unit % k_];
    return true;
  }
  void taken(size_t) override {
    std::pop_heap(free_.begin(), free_.end(), std::greater<size_t>());
    free_.pop_back();
  }
  void moved(size_t block, char*) override {
    const int64_t s0 = now_ns();
    p_.submit_copies(block);
    submit_ns += now_ns() - s0;
    copying_.push_back(block);
  }
  bool finished() const override { return done_ == n_; }

  // Copies complete: their buffers take the next block of their lane.
  bool poll() override {
    bool progressed = false;
    for (size_t i = 0; i < copying_.size();) {
      const size_t b = copying_[i];
      bool complete;
      try {
        complete = p_.c_.device->query(*p_.events_[b % k_], *p_.streams_[b % p_.streams_.size()]);
      } catch (const Interrupted&) {
        throw;
      } catch (const RunError& e) {
        throw RunError("copy of " + p_.c_.block_name(b) + ": " + e.what());
      }
      if (!complete) {
        ++i;
        continue;
      }
      ++done_;
      progressed = true;
      if (b + k_ < n_) {
        free_.push_back(b + k_);
        std::push_heap(free_.begin(), free_.end(), std::greater<size_t>());
      }
      copying_[i] = copying_.back();
      copying_.pop_back();
    }
    copy_busy.update(!copying_.empty(), now_ns());
    return progressed;
  }
  bool busy() const override { return !copying_.empty(); }
  // No buffer free, and a copy in flight whose completion frees one with blocks left.
  bool unblocked_by_own_work() const override {
    if (!free_.empty()) return false;
    for (size_t b : copying_)
      if (b + k_ < n_) return true;
    return false;
  }
  void engine_changed(bool in_flight, int64_t now) override {
    read_busy.update(in_flight, now);
    copy_busy.update(!copying_.empty(), now);
  }

  int64_t submit_ns = 0;  // inside the copy submissions
  BusyClock read_busy, copy_busy;

 private:
  Pipeline& p_;
  size_t n_, k_;
  std::vector<size_t> free_;     // min-heap: per free buffer, the next block of its lane
  std::vector<size_t> copying_;  // blocks whose copies are in flight
  size_t done_ = 0;
};

Pipeline::Pipeline(PipelineConfig config, int streams) : c_(std::move(config)) {
  for (int s = 0; s < streams; ++s) streams_.push_back(c_.device->create_stream());
  // Polled for staging reuse, never timed.
  const size_t k = c_.staging_host.size();
  for (size_t b = 0; b < k; ++b) events_.push_back(c_.device->create_polling_event());
  // Block b's copies with their addresses in buffer b % K, prepared once.
  const size_t n = c_.reads->size();
  std::vector<CopyDesc> copies;
  copies.reserve(c_.copies.size());
  for (size_t b = 0; b < n; ++b) {
    char* base = c_.staging_src[b % k];
    const CopyDesc* plan = c_.copies.data() + b * c_.copies_per_block;
    for (size_t i = 0; i < c_.copies_per_block; ++i)
      copies.push_back({plan[i].dst, base + reinterpret_cast<uintptr_t>(plan[i].src), plan[i].bytes});
  }
  std::vector<CopyDesc>().swap(c_.copies);  // the offsets are not needed again
  tasks_ = std::make_unique<PreparedTasks>(c_.direct_path ? CopyMethod::kDirect : CopyMethod::kCe, *c_.device,
                                           std::move(copies), c_.copies_per_block, CopyDir::kH2D);
  TransferNames names;
  names.unit = c_.block_name;
  names.name_method = true;
  loop_ = std::make_unique<TransferLoop>(*c_.engine, IoOp::kRead, *c_.reads, std::move(names));
  reads_ = std::make_unique<Reads>(*this);
}

Pipeline::~Pipeline() { quiesce(); }

void Pipeline::quiesce() noexcept {
  c_.engine->drain();
  for (auto& s : streams_) {
    try {
      c_.device->synchronize(*s);
    } catch (...) {
    }
  }
}

void Pipeline::submit_copies(size_t block) {
  Stream& stream = *streams_[block % streams_.size()];
  try {
    tasks_->issue(block, stream);
    c_.device->record(*events_[block % events_.size()], stream);
  } catch (const Interrupted&) {
    throw;
  } catch (const RunError& e) {
    throw RunError("copy of " + c_.block_name(block) + ": " + e.what());
  }
}

PipelineTimes Pipeline::run() {
  PipelineTimes t;
  reads_->reset();
  try {
    const PassResult r = loop_->run(*reads_);
    reads_->read_busy.update(false, r.end_ns);
    reads_->copy_busy.update(false, r.end_ns);
    t.wall_ns = r.wall_ns;
    t.submit_ns = r.submit_ns + reads_->submit_ns;
    t.short_reads = r.short_transfers;
  } catch (...) {
    quiesce();
    throw;
  }
  t.read_busy_ns = reads_->read_busy.total();
  t.copy_busy_ns = reads_->copy_busy.total();
  return t;
}

PipelineTimes Pipeline::copy_alone() {
  PipelineTimes t;
  const size_t n = c_.reads->size();
  try {
    const int64_t start = now_ns();
    for (size_t b = 0; b < n; ++b) {
      check_interrupted();
      submit_copies(b);
    }
    t.submit_ns = now_ns() - start;
    for (auto& s : streams_) c_.device->synchronize(*s);
    t.wall_ns = now_ns() - start;
  } catch (...) {
    quiesce();
    throw;
  }
  t.copy_busy_ns = t.wall_ns;
  return t;
}

}  // namespace ds
