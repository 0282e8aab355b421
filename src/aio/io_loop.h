// The one transfer pass: moves every shard once through an IoEngine, keeping up to
// depth() requests in flight, and times it (one aio sample: one epoch). Its retry
// core (TransferLoop) is also what load's pipeline drives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "aio/io_engine.h"
#include "core/error.h"

namespace ds {

// One shard's place on disk: `bytes` at `offset` in the file `fd`, moved in one
// request (one file may hold several shards).
struct Extent {
  int fd;
  uint64_t offset;
  size_t bytes;
};

// Host buffers, as fio has them: one per request in flight (at least depth(),
// or one per shard when there are fewer shards), each as large as a shard and
// reused. A shard is given a free buffer when it is queued and keeps it until
// it is completely moved.
struct BufferRing {
  std::vector<void*> buffers;
};

// Optional hooks, run inside the timed pass (--validate only): `prepare` before
// a shard's request is queued (fill what a write will send, or poison what a
// read will fill), `complete` once the shard is completely moved.
struct PassHooks {
  std::function<void(size_t shard, void* buf)> prepare;
  std::function<void(size_t shard, void* buf)> complete;
};

struct PassResult {
  int64_t wall_ns = 0;    // first submission to last completion
  int64_t start_ns = 0, end_ns = 0;  // those two instants (monotonic), for passes timed together
  int64_t submit_ns = 0;  // time inside commit() (the submission system calls)
  uint64_t short_transfers = 0;  // completions that moved less than asked; resubmitted
};

// A transfer the kernel failed, or a short one that could not be finished.
// `err` is the errno (0 when a transfer made no progress: end of file on a read).
class IoFailure : public RunError {
 public:
  IoFailure(const std::string& what, size_t shard, uint64_t offset, int err, size_t shards_done)
      : RunError(what), shard(shard), offset(offset), err(err), shards_done(shards_done) {}
  size_t shard;        // index into the shard list
  uint64_t offset;     // where in the shard's file the failing request started
  int err;
  size_t shards_done;  // shards completely moved in this pass before the failure
};

// What a pass over an IoEngine does around its requests, for TransferLoop below:
// which unit goes next and into which buffer, what follows once a unit is completely
// moved, and any work of its own in flight beside the engine's (load: the copies out
// of its staging buffers, which hold a buffer until they are complete).
class TransferClient {
 public:
  virtual ~TransferClient() = default;
  // The next new unit that may be queued now and the buffer it goes into; false:
  // none may go now (no free buffer, or every unit is started). Nothing is taken
  // yet: taken() says the request was queued (a full queue offers it again later).
  virtual bool next(size_t& unit, char*& buf) = 0;
  virtual void taken(size_t unit) = 0;
  // The unit is completely moved (read into its buffer, or written from it).
  virtual void moved(size_t unit, char* buf) = 0;
  // Whether the pass is over: every unit moved and whatever the client does after.
  virtual bool finished() const = 0;
  // Once a turn, before the queue is filled: the client's own work looked at (true:
  // some of it completed, e.g. a buffer is free again). Default: none.
  virtual bool poll() { return false; }
  // Whether the client's own work is in flight: the engine idle is then no stall.
  virtual bool busy() const { return false; }
  // Whether a completion of the client's own work would let another request go
  // out (the loop then only looks for completions instead of sleeping in reap).
  virtual bool unblocked_by_own_work() const { return false; }
  // Whether the client times its own work in flight by when a look finds it done
  // (load's and offload's copy busy clocks): the loop then only looks (napping
  // between looks) instead of sleeping in reap, also with the queue full.
  virtual bool watches_own_work() const { return false; }
  // After every commit and every batch of completions (for busy clocks).
  virtual void engine_changed(bool /*in_flight*/, int64_t /*now_ns*/) {}
};

// Whether a TransferLoop, looking for its client's own work (load, offload: a copy's
// completion) while nothing completes, naps 20 us per look after 100 us of looks
// (io_loop.cc). It naps where spinning would take a CPU from a thread that must run:
// where the copies are work of host CPUs (sim's copy threads, the test doubles'
// streams), or where the threads that must run at once (`busy_threads`: each card's
// transfer loop, the host threads that do its copies, psync's I/O threads) outnumber
// the CPUs this process may use (`cpus`, usable_cpus(); 0: not known, nap). On a card
// with a CPU for each it spins, and sees a completion as soon as it lands.
struct LookNapRule {
  bool nap = true;
  std::string line;  // the decision in words, for a note and doctor
};
LookNapRule look_nap_rule(int cpus, int busy_threads, bool copies_on_host_cpus);

// How a TransferLoop names a unit in its failures: "shard 3" by default; load names
// its block and file, and the engine's method.
struct TransferNames {
  std::function<std::string(size_t unit)> unit;  // empty: "shard N"
  bool name_method = false;                      // "(4096 bytes, LIBAIO)", "at offset 0 (LIBAIO) moved ..."
};

// The queue/commit/reap core, the one retry loop of the code base (aio's run_pass,
// load's pipeline): keeps the queue full with the remainders of short transfers
// first, then the units the client offers; commits; retries a commit the kernel
// refuses for now (EAGAIN) while nothing is in flight a bounded number of times;
// reaps, resubmits the rest of a short transfer (counted; through O_DIRECT from its
// last aligned boundary, aio/short_transfer.h) and throws IoFailure for a failed one,
// one that moved nothing, or kStuckCalls in a row without aligned progress. Polls the
// interrupt flag; on any exception it drains the engine first, so no request still
// uses a buffer when the caller releases it. Made once (its bookkeeping is sized here), run any number of times.
class TransferLoop {
 public:
  TransferLoop(IoEngine& engine, IoOp op, const std::vector<Extent>& units, TransferNames names = {});
  PassResult run(TransferClient& client);
  // Nap after fruitless looks (look_nap_rule; the default) or spin.
  void set_nap(bool nap) { nap_ = nap; }

 private:
  [[noreturn]] void fail(size_t unit, uint64_t want, uint64_t at, int64_t result) const;
  // A completion: true when its unit is all moved; a short one's rest queued again
  // (counted in `r`); IoFailure for a failed one or one that cannot go on.
  bool completed(const IoCompletion& c, PassResult& r);
  // A unit whose short transfers made no aligned progress kStuckCalls times in a row.
  [[noreturn]] void stuck(size_t unit, uint64_t want, uint64_t at, uint64_t moved) const;
  // A read of a unit that came back short at the end of its file (O_DIRECT: file_ends_by).
  [[noreturn]] void ended(size_t unit, uint64_t want, uint64_t at, uint64_t moved) const;

  IoEngine& engine_;
  IoOp op_;
  const std::vector<Extent>& units_;
  TransferNames names_;
  std::vector<IoCompletion> events_;
  std::vector<uint64_t> offset_;      // bytes of a unit moved before its request in flight
  std::vector<char*> buffer_;         // the buffer a unit holds
  std::vector<size_t> retries_;       // FIFO ring of units whose remainder is to be queued
  std::vector<uint8_t> direct_;       // per unit: its descriptor is O_DIRECT (short transfers resume aligned)
  std::vector<uint8_t> stuck_;        // per unit: short transfers in a row without aligned progress
  size_t retry_head_ = 0, retry_count_ = 0;
  size_t moved_ = 0;                  // units completely moved in this pass
  bool nap_ = true;
};

class RingClient;

// One pass over shards and a ring of buffers, made once (at setup: its bookkeeping
// is allocated here) and run any number of times (each epoch), so a timed pass
// allocates nothing. Each run() is run_pass() below. `ring`'s buffers must outlive it (the hooks are copied).
class TransferPass {
 public:
  TransferPass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards, const BufferRing& ring,
               const PassHooks& hooks = {});
  ~TransferPass();
  TransferPass(const TransferPass&) = delete;
  TransferPass& operator=(const TransferPass&) = delete;
  PassResult run();

 private:
  TransferLoop loop_;
  std::unique_ptr<RingClient> client_;
};

// Moves every shard once: writes (dump) or reads (load), in shard order. A short
// transfer is resubmitted for the remainder and counted; a failed one throws
// IoFailure. Polls the interrupt flag; on any exception it drains the engine
// first, so no request still uses a buffer when the caller releases it.
// Requests in flight are bounded by depth() and by the ring's size.
PassResult run_pass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards,
                    const BufferRing& ring, const PassHooks& hooks = {});

}  // namespace ds
