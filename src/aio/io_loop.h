// The one transfer loop: moves every shard once through an IoEngine, keeping
// up to depth() requests in flight, and times it (one sample of SPEC §2.5).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "aio/io_engine.h"
#include "core/error.h"

namespace ds {

// One shard: a whole file of `bytes`, moved to or from `buf` in one request.
struct ShardIo {
  int fd;
  void* buf;
  size_t bytes;
};

struct PassResult {
  int64_t wall_ns = 0;    // first submission to last completion
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
  uint64_t offset;     // where in that shard's file the failing request started
  int err;
  size_t shards_done;  // shards completely moved in this pass before the failure
};

// Moves every shard once: writes (dump) or reads (load). A short transfer is
// resubmitted for the remainder and counted; a failed one throws IoFailure.
// Polls the interrupt flag; on any exception it drains the engine first, so
// no request still uses a buffer when the caller releases it.
PassResult run_pass(IoEngine& engine, IoOp op, const std::vector<ShardIo>& shards);

}  // namespace ds
