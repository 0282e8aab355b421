// The one transfer pass: moves every shard once through an IoEngine, keeping up to
// depth() requests in flight, and times it (one aio sample: one epoch).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
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

// Moves every shard once: writes (dump) or reads (load), in shard order. A short
// transfer is resubmitted for the remainder and counted; a failed one throws
// IoFailure. Polls the interrupt flag; on any exception it drains the engine
// first, so no request still uses a buffer when the caller releases it.
// Requests in flight are bounded by depth() and by the ring's size.
PassResult run_pass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards,
                    const BufferRing& ring, const PassHooks& hooks = {});

}  // namespace ds
