#include "load/pipeline.h"

#include <sched.h>

#include <cstring>
#include <deque>

#include "core/clock.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

// Accumulates the time a count is above zero.
class BusyClock {
 public:
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

struct InCopy {
  size_t block;
  unsigned slot;
};

}  // namespace

Pipeline::Pipeline(PipelineConfig config, int streams) : c_(std::move(config)) {
  for (int s = 0; s < streams; ++s) streams_.push_back(c_.device->create_stream());
  // Polled for staging reuse, never timed.
  for (size_t b = 0; b < c_.staging_host.size(); ++b) events_.push_back(c_.device->create_polling_event());
  scratch_.resize(c_.copies_per_block);
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

void Pipeline::submit_copies(size_t block, unsigned slot) {
  const CopyDesc* plan = c_.copies.data() + block * c_.copies_per_block;
  char* base = c_.staging_src[slot];
  for (size_t i = 0; i < c_.copies_per_block; ++i)
    scratch_[i] = {plan[i].dst, base + reinterpret_cast<uintptr_t>(plan[i].src), plan[i].bytes};
  Stream& stream = *streams_[block % streams_.size()];
  try {
    if (c_.direct_path) {
      c_.device->direct_task(scratch_.data(), scratch_.size(), stream);
    } else {
      for (const CopyDesc& d : scratch_) c_.device->copy_async(d, CopyDir::kH2D, stream);
    }
    c_.device->record(*events_[slot], stream);
  } catch (const Interrupted&) {
    throw;
  } catch (const RunError& e) {
    throw RunError("copy of " + c_.block_name(block) + ": " + e.what());
  }
}

PipelineTimes Pipeline::run() {
  PipelineTimes t;
  IoEngine& engine = *c_.engine;
  Device& dev = *c_.device;
  const std::vector<Extent>& reads = *c_.reads;
  const size_t n = reads.size();
  const unsigned depth = engine.depth();
  std::vector<IoCompletion> done_reads(depth);
  std::vector<unsigned> free_slots;
  for (size_t s = c_.staging_host.size(); s-- > 0;) free_slots.push_back(static_cast<unsigned>(s));
  std::vector<unsigned> slot_of(n, 0);
  std::vector<uint64_t> read_at(n, 0);  // bytes of a block read before its request in flight
  std::deque<size_t> retries;           // blocks whose short read is resubmitted for the rest
  std::vector<InCopy> copying;          // blocks whose copies are in flight
  BusyClock read_busy, copy_busy;
  size_t next = 0, done = 0;
  unsigned idle_commits = 0;
  try {
    const int64_t start = now_ns();
    while (done < n) {
      check_interrupted();
      // Copies complete: their staging buffers are free again.
      bool progressed = false;
      for (size_t i = 0; i < copying.size();) {
        const InCopy& x = copying[i];
        bool complete;
        try {
          complete = dev.query(*events_[x.slot], *streams_[x.block % streams_.size()]);
        } catch (const Interrupted&) {
          throw;
        } catch (const RunError& e) {
          throw RunError("copy of " + c_.block_name(x.block) + ": " + e.what());
        }
        if (!complete) {
          ++i;
          continue;
        }
        free_slots.push_back(x.slot);
        ++done;
        progressed = true;
        copying[i] = copying.back();
        copying.pop_back();
      }
      const int64_t polled = now_ns();
      copy_busy.update(!copying.empty(), polled);
      // Reads: remainders of short ones first, then blocks in order while a buffer is free.
      for (;;) {
        size_t b;
        const bool retry = !retries.empty();
        if (retry)
          b = retries.front();
        else if (next < n && !free_slots.empty())
          b = next;
        else
          break;
        const unsigned slot = retry ? slot_of[b] : free_slots.back();
        const Extent& e = reads[b];
        const uint64_t off = retry ? read_at[b] : 0;
        const IoRequest req{IoOp::kRead, e.fd, c_.staging_host[slot] + off, e.bytes - off, e.offset + off, b};
        if (!engine.queue(req)) break;
        if (retry) {
          retries.pop_front();
        } else {
          slot_of[b] = slot;
          read_at[b] = 0;
          free_slots.pop_back();
          ++next;
        }
      }
      if (engine.queued() > 0) {
        const int64_t t0 = now_ns();
        const unsigned taken = engine.commit();
        const int64_t t1 = now_ns();
        t.submit_ns += t1 - t0;
        if (taken == 0 && engine.in_flight() == 0 && copying.empty()) {
          if (++idle_commits > 100000)
            throw RunError(std::string(engine.method()) + " submission kept failing with EAGAIN and nothing in flight");
          sched_yield();
          continue;
        }
        idle_commits = 0;
      }
      read_busy.update(engine.in_flight() > 0, now_ns());
      if (engine.in_flight() == 0) {
        if (!copying.empty() && !progressed) sched_yield();  // only copies to wait for: poll again
        continue;
      }
      // Wait for a read (sleeping, which leaves the CPUs to the copies) unless a
      // copy's completion would let another read go out: no buffer is free, blocks
      // are left to read and the queue has room. Then poll both.
      const bool copy_unblocks = !copying.empty() && free_slots.empty() && next < n && engine.in_flight() < depth;
      const unsigned got = engine.reap(copy_unblocks ? 0 : 1, done_reads.data(), depth);
      if (got > 0) loop_progress();
      for (unsigned i = 0; i < got; ++i) {
        const IoCompletion& c = done_reads[i];
        const size_t b = static_cast<size_t>(c.tag);
        const Extent& e = reads[b];
        const uint64_t want = e.bytes - read_at[b];
        const uint64_t at = e.offset + read_at[b];
        if (c.result < 0)
          throw RunError("read of " + c_.block_name(b) + " at offset " + std::to_string(at) + " (" +
                         std::to_string(want) + " bytes, " + engine.method() + "): " +
                         std::strerror(static_cast<int>(-c.result)));
        const uint64_t moved = static_cast<uint64_t>(c.result);
        if (moved == 0 || moved > want)
          throw RunError("read of " + c_.block_name(b) + " at offset " + std::to_string(at) + " (" +
                         engine.method() + ") moved " + std::to_string(moved) + " of " + std::to_string(want) +
                         " bytes" + (moved == 0 ? " (the file ends there)" : ""));
        if (moved < want) {
          ++t.short_reads;
          read_at[b] += moved;
          retries.push_back(b);
          continue;
        }
        const int64_t s0 = now_ns();
        submit_copies(b, slot_of[b]);
        t.submit_ns += now_ns() - s0;
        copying.push_back(InCopy{b, slot_of[b]});
      }
      const int64_t reaped = now_ns();
      read_busy.update(engine.in_flight() > 0, reaped);
      copy_busy.update(!copying.empty(), reaped);
    }
    const int64_t end = now_ns();
    read_busy.update(false, end);
    copy_busy.update(false, end);
    t.wall_ns = end - start;
  } catch (...) {
    quiesce();
    throw;
  }
  t.read_busy_ns = read_busy.total();
  t.copy_busy_ns = copy_busy.total();
  return t;
}

PipelineTimes Pipeline::copy_alone() {
  PipelineTimes t;
  const size_t n = c_.reads->size();
  const unsigned k = static_cast<unsigned>(c_.staging_host.size());
  try {
    const int64_t start = now_ns();
    for (size_t b = 0; b < n; ++b) {
      check_interrupted();
      submit_copies(b, static_cast<unsigned>(b % k));
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
