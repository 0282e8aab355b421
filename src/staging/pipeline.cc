#include "staging/pipeline.h"

#include <algorithm>
#include <functional>

#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace ds {

namespace {

// Accumulates the time a count is above zero; with a cut (another pipeline's first
// end), also the time up to it: the first update at or past the cut counts the
// state held since the last one as it was (to within one look).
class BusyClock {
 public:
  void reset(const std::atomic<int64_t>* cut) {
    since_ = -1;
    total_ = 0;
    cut_ = cut;
    at_cut_ = -1;
  }
  void update(bool busy, int64_t now) {
    if (cut_ && at_cut_ < 0) {
      const int64_t c = cut_->load(std::memory_order_acquire);
      if (now >= c) at_cut_ = total_ + (since_ >= 0 ? std::max<int64_t>(0, c - since_) : 0);
    }
    if (busy && since_ < 0) since_ = now;
    if (!busy && since_ >= 0) {
      total_ += now - since_;
      since_ = -1;
    }
  }
  int64_t total() const { return total_; }
  int64_t until_cut() const { return at_cut_ >= 0 ? at_cut_ : total_; }  // all of it when not reached

 private:
  int64_t since_ = -1;
  int64_t total_ = 0;
  const std::atomic<int64_t>* cut_ = nullptr;
  int64_t at_cut_ = -1;
};

void push_min(std::vector<size_t>& heap, size_t v) {
  heap.push_back(v);
  std::push_heap(heap.begin(), heap.end(), std::greater<size_t>());
}

size_t pop_min(std::vector<size_t>& heap) {
  std::pop_heap(heap.begin(), heap.end(), std::greater<size_t>());
  const size_t v = heap.back();
  heap.pop_back();
  return v;
}

}  // namespace

// What the pipelined pass keeps in both directions: per free staging buffer the next
// block of its lane (b, b+K, b+2K, ...), the blocks whose copies are in flight, the
// busy clocks. A pass is over when every block is done (load: copied to the card;
// offload: written). Everything it keeps is sized once, at setup.
class Pipeline::Pass : public TransferClient {
 public:
  explicit Pass(Pipeline& p) : p_(p), n_(p.c_.blocks->size()), k_(p.c_.staging_host.size()) {
    free_.reserve(k_);
    copying_.reserve(k_);
  }

  virtual void reset() {
    free_.clear();
    copying_.clear();
    for (size_t b = 0; b < std::min(k_, n_); ++b) free_.push_back(b);  // ascending: a min-heap already
    done_ = 0;
    submit_ns = 0;
    io_busy.reset(p_.c_.first_end);
    copy_busy.reset(p_.c_.first_end);
  }

  bool finished() const override { return done_ == n_; }
  bool busy() const override { return !copying_.empty(); }
  // The copy busy clock ends a copy's time when a look finds it complete: while one
  // is in flight the loop looks rather than sleeps in reap, also with the queue full
  // (--staging above --iodepth), so a copy's completion is not first seen when the
  // next read or write completes.
  bool watches_own_work() const override { return !copying_.empty(); }
  void engine_changed(bool in_flight, int64_t now) override {
    io_busy.update(in_flight, now);
    copy_busy.update(!copying_.empty(), now);
  }

  int64_t submit_ns = 0;  // inside the copy submissions
  BusyClock io_busy, copy_busy;

 protected:
  void copy(size_t block) {
    const int64_t s0 = now_ns();
    copy_busy.update(true, s0);  // in flight from its submission (it may be complete by the next look)
    p_.submit_copies(block);
    submit_ns += now_ns() - s0;
    copying_.push_back(block);
  }
  // Every block whose copies are found complete now handed to `done`; true if any.
  template <class Done>
  bool reap_copies(Done done) {
    bool progressed = false;
    for (size_t i = 0; i < copying_.size();) {
      const size_t b = copying_[i];
      if (!p_.copies_complete(b)) {
        ++i;
        continue;
      }
      progressed = true;
      copying_[i] = copying_.back();
      copying_.pop_back();
      done(b);
    }
    copy_busy.update(!copying_.empty(), now_ns());
    return progressed;
  }
  // Block b's buffer is free again: it takes the next block of its lane.
  void free_lane(size_t b) {
    if (b + k_ < n_) push_min(free_, b + k_);
  }

  Pipeline& p_;
  size_t n_, k_;
  std::vector<size_t> free_;     // min-heap: per free buffer, the next block of its lane
  std::vector<size_t> copying_;  // blocks whose copies are in flight
  size_t done_ = 0;
};

// Load: block b is read into buffer b % K once that buffer's copies are complete; a
// completed read submits the block's copies.
class Pipeline::Reads : public Pipeline::Pass {
 public:
  using Pass::Pass;
  // The lowest-numbered unread block whose buffer is free.
  bool next(size_t& unit, char*& buf) override {
    if (free_.empty()) return false;
    unit = free_.front();
    buf = p_.c_.staging_host[unit % k_];
    return true;
  }
  void taken(size_t) override { pop_min(free_); }
  void moved(size_t block, char*) override { copy(block); }
  // Copies complete: their buffers take the next block of their lane.
  bool poll() override {
    return reap_copies([this](size_t b) {
      ++done_;
      free_lane(b);
    });
  }
  // No buffer free, and a copy in flight whose completion frees one with blocks left.
  bool unblocked_by_own_work() const override {
    if (!free_.empty()) return false;
    for (size_t b : copying_)
      if (b + k_ < n_) return true;
    return false;
  }
};

// Offload: block b is copied into buffer b % K once that buffer's write is
// complete; copies complete, the buffer is written to the block's file.
class Pipeline::Writes : public Pipeline::Pass {
 public:
  explicit Writes(Pipeline& p) : Pass(p) { ready_.reserve(k_); }
  void reset() override {
    Pass::reset();
    ready_.clear();
  }
  // The lowest-numbered block whose copies are complete.
  bool next(size_t& unit, char*& buf) override {
    if (ready_.empty()) return false;
    unit = ready_.front();
    buf = p_.c_.staging_host[unit % k_];
    return true;
  }
  void taken(size_t) override { pop_min(ready_); }
  void moved(size_t block, char*) override {
    ++done_;
    free_lane(block);
  }
  // Every free buffer copied into; copies complete: their blocks ready to write.
  bool poll() override {
    while (!free_.empty()) copy(pop_min(free_));
    return reap_copies([this](size_t b) { push_min(ready_, b); });
  }
  bool busy() const override { return Pass::busy() || !free_.empty(); }
  // Nothing ready to write, and copies in flight that would make a block ready.
  bool unblocked_by_own_work() const override { return ready_.empty() && !copying_.empty(); }

 private:
  std::vector<size_t> ready_;  // min-heap: blocks copied into their buffers, not yet written
};

Pipeline::Pipeline(PipelineConfig config, int streams) : c_(std::move(config)) {
  for (int s = 0; s < streams; ++s) {
    streams_.push_back(c_.device->create_stream());
    stream_list_.push_back(streams_.back().get());
  }
  // Polled for staging reuse, never timed.
  const size_t k = c_.staging_host.size();
  for (size_t b = 0; b < k; ++b) events_.push_back(c_.device->create_polling_event());
  // Block b's copies with their addresses in buffer b % K, prepared once.
  const bool load = c_.dir == StagedDir::kLoad;
  const size_t n = c_.blocks->size();
  std::vector<CopyDesc> copies;
  copies.reserve(c_.copies.size());
  for (size_t b = 0; b < n; ++b) {
    char* base = c_.staging_dev[b % k];
    const StagedCopy* plan = c_.copies.data() + b * c_.copies_per_block;
    for (size_t i = 0; i < c_.copies_per_block; ++i) {
      char* staged = base + plan[i].offset;
      copies.push_back(load ? CopyDesc{plan[i].device, staged, plan[i].bytes}
                            : CopyDesc{staged, plan[i].device, plan[i].bytes});
    }
  }
  std::vector<StagedCopy>().swap(c_.copies);  // the offsets are not needed again
  tasks_ = std::make_unique<PreparedTasks>(c_.direct_path ? CopyMethod::kDirect : CopyMethod::kCe, *c_.device,
                                           std::move(copies), c_.copies_per_block,
                                           load ? CopyDir::kH2D : CopyDir::kD2H);
  TransferNames names;
  names.unit = c_.block_name;
  names.name_method = true;
  loop_ = std::make_unique<TransferLoop>(*c_.engine, load ? IoOp::kRead : IoOp::kWrite, *c_.blocks,
                                         std::move(names));
  loop_->set_nap(c_.nap);
  if (load)
    pass_ = std::make_unique<Reads>(*this);
  else
    pass_ = std::make_unique<Writes>(*this);
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

bool Pipeline::copies_complete(size_t block) {
  try {
    return c_.device->query(*events_[block % events_.size()], *streams_[block % streams_.size()]);
  } catch (const Interrupted&) {
    throw;
  } catch (const RunError& e) {
    throw RunError("copy of " + c_.block_name(block) + ": " + e.what());
  }
}

PipelineTimes Pipeline::run() {
  PipelineTimes t;
  pass_->reset();
  try {
    const PassResult r = loop_->run(*pass_);
    pass_->io_busy.update(false, r.end_ns);
    pass_->copy_busy.update(false, r.end_ns);
    if (c_.first_end) {
      int64_t none = INT64_MAX;
      t.ended_first = c_.first_end->compare_exchange_strong(none, r.end_ns, std::memory_order_acq_rel);
    }
    t.start_ns = r.start_ns;
    t.end_ns = r.end_ns;
    t.wall_ns = r.wall_ns;
    t.submit_ns = r.submit_ns + pass_->submit_ns;
    t.short_transfers = r.short_transfers;
  } catch (...) {
    quiesce();
    throw;
  }
  t.io_busy_ns = pass_->io_busy.total();
  t.copy_busy_ns = pass_->copy_busy.total();
  t.io_busy_first_ns = t.ended_first ? t.io_busy_ns : pass_->io_busy.until_cut();
  t.copy_busy_first_ns = t.ended_first ? t.copy_busy_ns : pass_->copy_busy.until_cut();
  return t;
}

PipelineTimes Pipeline::copy_alone() {
  PipelineTimes t;
  const size_t n = c_.blocks->size();
  try {
    // Every copy is submitted at once: the streams' engines up first (untimed).
    c_.device->ready_streams(stream_list_.data(), stream_list_.size());
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
