#include "aio/io_loop.h"

#include <sched.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "aio/short_transfer.h"
#include "core/clock.h"
#include "core/interrupt.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

const char* verb(IoOp op) { return op == IoOp::kWrite ? "write" : "read"; }

// Kernel resources refused for now (EAGAIN) with nothing of ours to wait for: after
// this many commits in a row that take nothing, the pass gives up.
constexpr unsigned kIdleCommits = 100000;

// aio's units: shards in order, each into a free buffer of the ring, the buffer free
// again as soon as the shard is moved.

// Looking for the client's own work (load, offload: a copy's completion) while the
// queue has room spins the pass's thread. On a card the copies are DMA and spinning
// finds a completion soonest; where copies and completions need CPUs too (sim's copy
// threads, the test doubles', a small VM's I/O completions) a spinning thread takes
// them away: offload through the libcuda double with 2 ms copies fell to half of its
// slower stage on 2 vCPUs. So once kSpinNs have passed with nothing completed, each
// look that finds nothing is followed by a nap of kNapNs: a completion is seen at
// most kNapNs late, and only after kSpinNs of waiting for it. (The kernel lets a
// sleep run late by the thread's timer slack, 50 us by default: the napping thread's
// is set to 1 ns before its first nap, where prctl allows it.) Where a CPU is there for
// every thread that must run and the copies are DMA, the loop spins instead
// (look_nap_rule): a nap would let a completion wait up to kNapNs, bandwidth lost at
// small blocks.
constexpr int64_t kSpinNs = 100 * 1000;
constexpr int64_t kNapNs = 20 * 1000;

class LookBackoff {
 public:
  explicit LookBackoff(bool nap) : nap_(nap) {}
  void after(bool looked, bool progressed) {
    if (!nap_ || !looked || progressed) {
      quiet_since_ = -1;
      return;
    }
    const int64_t now = now_ns();
    if (quiet_since_ < 0) {
      quiet_since_ = now;
    } else if (now - quiet_since_ >= kSpinNs) {
      static thread_local bool slack_set = false;
      if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);  // refused: the default slack, a later wake-up
        slack_set = true;
      }
      const timespec nap{0, kNapNs};
      nanosleep(&nap, nullptr);
    }
  }

 private:
  bool nap_;
  int64_t quiet_since_ = -1;  // since when looks found nothing (-1: the last one found something)
};

}  // namespace

LookNapRule look_nap_rule(int cpus, int busy_threads, bool copies_on_host_cpus) {
  const std::string napping = "transfer loop: napping " + std::to_string(kNapNs / 1000) + " us after " +
                              std::to_string(kSpinNs / 1000) + " us idle (";
  const std::string counts = std::to_string(cpus) + " CPUs for " + std::to_string(busy_threads) + " busy threads";
  if (copies_on_host_cpus) return {true, napping + "the copies run on host CPUs)"};
  if (cpus <= 0) return {true, napping + "the CPUs this process may use are not known)"};
  if (busy_threads > cpus) return {true, napping + counts + ")"};
  return {false, "transfer loop: spinning while copies are in flight (" + counts + ")"};
}

TransferLoop::TransferLoop(IoEngine& engine, IoOp op, const std::vector<Extent>& units, TransferNames names)
    : engine_(engine),
      op_(op),
      units_(units),
      names_(std::move(names)),
      events_(std::max(1u, engine.depth())),
      offset_(units.size(), 0),
      buffer_(units.size(), nullptr),
      retries_(std::max<size_t>(1, units.size())),
      stuck_(units.size(), 0) {
  for (const Extent& e : units) direct_.push_back(fd_is_direct(e.fd) ? 1 : 0);
}

void TransferLoop::fail(size_t unit, uint64_t want, uint64_t at, int64_t result) const {
  const std::string name = names_.unit ? names_.unit(unit) : "shard " + std::to_string(unit);
  const std::string method = engine_.method();
  const std::string head = std::string(verb(op_)) + " of " + name + " at offset " + std::to_string(at);
  if (result < 0) {
    const int err = static_cast<int>(-result);
    throw IoFailure(head + " (" + std::to_string(want) + " bytes" + (names_.name_method ? ", " + method : "") +
                        "): " + std::strerror(err),
                    unit, at, err, moved_);
  }
  const uint64_t moved = static_cast<uint64_t>(result);
  throw IoFailure(head + (names_.name_method ? " (" + method + ")" : "") + " moved " + std::to_string(moved) +
                      " of " + std::to_string(want) + " bytes" +
                      (moved == 0 && op_ == IoOp::kRead ? " (the file ends there)" : ""),
                  unit, at, 0, moved_);
}

void TransferLoop::ended(size_t unit, uint64_t want, uint64_t at, uint64_t moved) const {
  const std::string name = names_.unit ? names_.unit(unit) : "shard " + std::to_string(unit);
  throw IoFailure(std::string(verb(op_)) + " of " + name + " at offset " + std::to_string(at) +
                      (names_.name_method ? " (" + std::string(engine_.method()) + ")" : "") + " moved " +
                      std::to_string(moved) + " of " + std::to_string(want) + " bytes (the file ends at offset " +
                      std::to_string(at + moved) + ")",
                  unit, at, 0, moved_);
}

void TransferLoop::stuck(size_t unit, uint64_t want, uint64_t at, uint64_t moved) const {
  const std::string name = names_.unit ? names_.unit(unit) : "shard " + std::to_string(unit);
  throw IoFailure(std::string(verb(op_)) + " of " + name + " at offset " + std::to_string(at) + " (" +
                      std::to_string(want) + " bytes" + (names_.name_method ? ", " + std::string(engine_.method()) : "") +
                      "): " + stuck_text(moved, stuck_[unit]),
                  unit, at, 0, moved_);
}

bool TransferLoop::completed(const IoCompletion& c, PassResult& r) {
  const size_t u = static_cast<size_t>(c.tag);
  const Extent& e = units_[u];
  const uint64_t want = e.bytes - offset_[u];
  const uint64_t at = e.offset + offset_[u];  // in the file
  if (c.result < 0) fail(u, want, at, c.result);
  const uint64_t moved = static_cast<uint64_t>(c.result);
  if (moved == 0 || moved > want) fail(u, want, at, c.result);
  if (moved == want) {
    stuck_[u] = 0;
    return true;
  }
  // A short read through O_DIRECT that reached the end of the file: the file is
  // short (a truncated shard), said so; any other resumes.
  if (op_ == IoOp::kRead && direct_[u] != 0 && file_ends_by(e.fd, at + moved)) ended(u, want, at, moved);
  ++r.short_transfers;
  // Through O_DIRECT from the last aligned boundary (aio/short_transfer.h).
  const uint64_t next = resume_at(offset_[u], moved, e.bytes, direct_[u] != 0);
  stuck_[u] = next == offset_[u] ? static_cast<uint8_t>(stuck_[u] + 1) : 0;
  if (stuck_[u] >= kStuckCalls) stuck(u, want, at, moved);
  offset_[u] = next;
  retries_[(retry_head_ + retry_count_++) % retries_.size()] = u;
  return false;
}

PassResult TransferLoop::run(TransferClient& client) {
  PassResult r;
  const unsigned depth = engine_.depth();
  retry_head_ = retry_count_ = 0;
  moved_ = 0;
  unsigned idle_commits = 0;
  LookBackoff backoff(nap_);
  try {
    const int64_t start = now_ns();
    r.start_ns = start;
    for (;;) {
      check_interrupted();
      const bool progressed = client.poll();
      if (client.finished()) break;
      // Fill the queue: remainders of short transfers first, then the units offered.
      for (;;) {
        size_t u = 0;
        char* buf = nullptr;
        const bool retry = retry_count_ > 0;
        if (retry) {
          u = retries_[retry_head_];
          buf = buffer_[u];
        } else if (!client.next(u, buf)) {
          break;
        }
        const uint64_t off = retry ? offset_[u] : 0;
        const Extent& e = units_[u];
        const IoRequest req{op_, e.fd, buf + off, e.bytes - off, e.offset + off, u};
        if (!engine_.queue(req)) break;
        if (retry) {
          retry_head_ = (retry_head_ + 1) % retries_.size();
          --retry_count_;
        } else {
          offset_[u] = 0;
          buffer_[u] = buf;
          client.taken(u);
        }
      }
      if (engine_.queued() > 0) {
        const int64_t t0 = now_ns();
        const unsigned taken = engine_.commit();
        const int64_t t1 = now_ns();
        r.submit_ns += t1 - t0;
        if (taken == 0 && engine_.in_flight() == 0 && !client.busy()) {
          // Out of kernel resources with nothing of ours to wait for: yield a
          // while, then give up rather than spin forever.
          if (++idle_commits > kIdleCommits)
            throw RunError(std::string(engine_.method()) +
                           " submission kept failing with EAGAIN and nothing in flight");
          sched_yield();
          continue;
        }
        idle_commits = 0;
        client.engine_changed(engine_.in_flight() > 0, t1);
      }
      if (engine_.in_flight() == 0) {
        if (client.busy()) {
          if (!progressed) sched_yield();  // only the client's work to wait for: poll again
        } else if (engine_.queued() == 0) {  // a broken engine: refuses work with none pending
          throw RunError(std::string(engine_.method()) + " accepted no request with none in flight");
        }
        continue;
      }
      // Sleep for a completion unless the client's own work could let another
      // request go out while the queue has room, or the client times its own work
      // by when it is seen done: then only look, and poll again.
      const bool look = (engine_.in_flight() < depth && client.unblocked_by_own_work()) || client.watches_own_work();
      const unsigned got = engine_.reap(look ? 0 : 1, events_.data(), depth);
      backoff.after(look, progressed || got > 0);
      if (got > 0) loop_progress();  // completions are progress for the watchdog
      for (unsigned i = 0; i < got; ++i) {
        const size_t u = static_cast<size_t>(events_[i].tag);
        if (!completed(events_[i], r)) continue;  // its rest queued again
        ++moved_;
        client.moved(u, buffer_[u]);
      }
      client.engine_changed(engine_.in_flight() > 0, now_ns());
    }
    r.end_ns = now_ns();
    r.wall_ns = r.end_ns - start;
  } catch (...) {
    engine_.drain();
    throw;
  }
  return r;
}

class RingClient : public TransferClient {
 public:
  RingClient(size_t shards, const BufferRing& ring, const PassHooks& hooks)
      : n_(shards), hooks_(hooks), ring_(ring.buffers) {
    free_.reserve(ring_.size());
    reset();
  }
  // Every buffer free and no shard started (a pass again; nothing allocated).
  void reset() {
    free_.clear();
    for (auto it = ring_.rbegin(); it != ring_.rend(); ++it) free_.push_back(static_cast<char*>(*it));
    next_ = done_ = 0;
  }
  bool next(size_t& unit, char*& buf) override {
    if (next_ >= n_ || free_.empty()) return false;
    unit = next_;
    buf = free_.back();
    if (hooks_.prepare) hooks_.prepare(unit, buf);
    return true;
  }
  void taken(size_t) override {
    free_.pop_back();
    ++next_;
  }
  void moved(size_t unit, char* buf) override {
    if (hooks_.complete) hooks_.complete(unit, buf);
    free_.push_back(buf);
    ++done_;
  }
  bool finished() const override { return done_ == n_; }

 private:
  size_t n_;
  PassHooks hooks_;  // a copy: the caller's may be a temporary
  std::vector<void*> ring_;
  std::vector<char*> free_;
  size_t next_ = 0, done_ = 0;
};

TransferPass::TransferPass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards, const BufferRing& ring,
                           const PassHooks& hooks)
    : loop_(engine, op, shards) {
  if (ring.buffers.empty()) throw RunError("run_pass: no host buffers");
  client_ = std::make_unique<RingClient>(shards.size(), ring, hooks);
}

TransferPass::~TransferPass() = default;

PassResult TransferPass::run() {
  client_->reset();
  return loop_.run(*client_);
}

PassResult run_pass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards, const BufferRing& ring,
                    const PassHooks& hooks) {
  return TransferPass(engine, op, shards, ring, hooks).run();
}

}  // namespace ds
