// The asynchronous I/O engine boundary, after fio's ioengine contract:
// queue (prepare one request), commit (hand the prepared ones to the kernel),
// reap (collect completions), cleanup (the destructor, after a drain). libaio and
// io_uring are two small implementations; the one transfer loop (io_loop.h)
// drives either and owns the policy (depth, short transfers, errors).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ds {

// What the kernel asks of the I/O every engine submits: O_DIRECT buffers, offsets
// and lengths aligned to kDirectAlign; less than 2 GiB per request (kMaxIoSize);
// and the deepest queue an engine is asked for (--iodepth, --staging).
constexpr uint64_t kDirectAlign = 4096;
constexpr uint64_t kMaxIoSize = 1ULL << 30;
constexpr uint64_t kMaxIoDepth = 4096;

enum class IoOp { kRead, kWrite };

struct IoRequest {
  IoOp op;
  int fd;
  void* buf;
  size_t bytes;
  uint64_t offset;  // in the file
  uint64_t tag;     // the caller's id, returned with the completion
};

struct IoCompletion {
  uint64_t tag;
  int64_t result;  // bytes moved (may be short), or -errno
};

class IoEngine {
 public:
  virtual ~IoEngine() = default;
  IoEngine() = default;
  IoEngine(const IoEngine&) = delete;
  IoEngine& operator=(const IoEngine&) = delete;

  // "LIBAIO", "IO_URING", "PSYNC": the Method column.
  virtual const char* method() const = 0;
  // Requests that may be queued or in flight at once (--iodepth).
  virtual unsigned depth() const = 0;

  // Prepares one request for the next commit(). false: `depth` requests are
  // already queued or in flight (reap first); nothing was taken.
  virtual bool queue(const IoRequest& req) = 0;
  // Hands the queued requests to the kernel; returns how many it took (EINTR is
  // retried). 0 while some are still queued means the kernel is short of
  // resources for now (EAGAIN, EBUSY): reap, then commit again. Other failures
  // throw RunError naming the call.
  virtual unsigned commit() = 0;
  // Waits until at least min(min_nr, in_flight()) completions are ready, stores
  // up to `max` in `out` and returns how many. A signal ends the wait early
  // (EINTR): the result may then be 0, so the caller can look at interrupted().
  virtual unsigned reap(unsigned min_nr, IoCompletion* out, unsigned max) = 0;

  virtual unsigned queued() const = 0;     // prepared, not yet committed
  virtual unsigned in_flight() const = 0;  // committed, not yet reaped

  // Finishes everything queued or in flight, discarding results, so the buffers
  // can be released. Never throws; engines call it from their destructors.
  virtual void drain() noexcept = 0;
};

enum class AioEngineKind { kLibaio, kUring, kPsync };

// "libaio" / "io_uring" / "psync".
const char* engine_option_name(AioEngineKind kind);
// "LIBAIO" / "IO_URING" / "PSYNC": what that engine's method() says, for the Method column.
const char* engine_method_label(AioEngineKind kind);

// Throws RunError naming the setup call and, where it helps, the system limit
// or setting that refused it.
std::unique_ptr<IoEngine> make_libaio_engine(unsigned depth);
std::unique_ptr<IoEngine> make_uring_engine(unsigned depth);
// --iodepth threads doing pread/pwrite, one request each at a time (always built).
std::unique_ptr<IoEngine> make_psync_engine(unsigned depth);
std::unique_ptr<IoEngine> make_io_engine(AioEngineKind kind, unsigned depth);
// Whether this engine can be set up here (built in, and its setup call allowed:
// io_uring is refused by kernel.io_uring_disabled and newer container profiles),
// probed by setting one up with depth 1: "" or why not.
std::string engine_unavailable(AioEngineKind kind);

}  // namespace ds
