// io_uring through liburing: requests are prepared straight into the
// submission ring, committed with io_uring_submit and reaped from the
// completion ring in batches.
#include <liburing.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "aio/io_engine.h"
#include "core/error.h"

namespace ds {

namespace {

class UringEngine : public IoEngine {
 public:
  explicit UringEngine(unsigned depth) : depth_(depth), cqes_(depth) {
    std::memset(&ring_, 0, sizeof ring_);
    const int rc = io_uring_queue_init(depth, &ring_, 0);
    if (rc < 0) {
      std::string msg = sys_error("io_uring_queue_init(" + std::to_string(depth) + ")", -rc).what();
      if (rc == -EPERM || rc == -ENOSYS)
        msg += "; io_uring is disabled here (kernel.io_uring_disabled, or a seccomp profile such "
               "as a container's): use --engine libaio";
      else if (rc == -ENOMEM)
        msg += "; the ring could not be locked in memory (RLIMIT_MEMLOCK on older kernels: "
               "`ulimit -l unlimited`) or lower --iodepth";
      throw RunError(msg);
    }
  }

  ~UringEngine() override {
    drain();
    io_uring_queue_exit(&ring_);
  }

  const char* method() const override { return engine_method_label(AioEngineKind::kUring); }
  unsigned depth() const override { return depth_; }
  unsigned queued() const override { return queued_; }
  unsigned in_flight() const override { return in_flight_; }

  bool queue(const IoRequest& r) override {
    if (queued_ + in_flight_ >= depth_) return false;
    io_uring_sqe* sqe = io_uring_get_sqe(&ring_);
    if (!sqe) return false;
    if (r.op == IoOp::kWrite)
      io_uring_prep_write(sqe, r.fd, r.buf, static_cast<unsigned>(r.bytes), r.offset);
    else
      io_uring_prep_read(sqe, r.fd, r.buf, static_cast<unsigned>(r.bytes), r.offset);
    io_uring_sqe_set_data(sqe, reinterpret_cast<void*>(static_cast<uintptr_t>(r.tag)));
    ++queued_;
    return true;
  }

  unsigned commit() override {
    unsigned taken = 0;
    while (queued_ > 0) {
      const int rc = io_uring_submit(&ring_);
      if (rc == -EINTR) continue;
      if (rc == -EAGAIN || rc == -EBUSY) break;
      if (rc < 0) throw sys_error("io_uring_submit(" + std::to_string(queued_) + " sqes)", -rc);
      // Entries the kernel did not consume stay in the ring for the next call.
      queued_ -= static_cast<unsigned>(rc);
      in_flight_ += static_cast<unsigned>(rc);
      taken += static_cast<unsigned>(rc);
      if (rc == 0) break;
    }
    return taken;
  }

  unsigned reap(unsigned min_nr, IoCompletion* out, unsigned max) override {
    if (in_flight_ == 0 || max == 0) return 0;
    if (min_nr > in_flight_) min_nr = in_flight_;
    if (max > depth_) max = depth_;
    if (min_nr > 0) {
      io_uring_cqe* first = nullptr;
      const int rc = io_uring_wait_cqe_nr(&ring_, &first, min_nr);
      if (rc == -EINTR || rc == -EAGAIN || rc == -ETIME) return 0;
      if (rc < 0) throw sys_error("io_uring_wait_cqe_nr", -rc);
    }
    const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes_.data(), max);
    for (unsigned i = 0; i < n; ++i) {
      out[i].tag = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(io_uring_cqe_get_data(cqes_[i])));
      out[i].result = cqes_[i]->res;
    }
    io_uring_cq_advance(&ring_, n);
    in_flight_ -= n;
    return n;
  }

  void drain() noexcept override {
    // Prepared entries cannot be taken back out of the ring: submit them too,
    // then wait until the kernel is done with every buffer.
    int idle = 0;
    while ((queued_ > 0 || in_flight_ > 0) && idle < 1000) {
      if (queued_ > 0) {
        const int rc = io_uring_submit(&ring_);
        if (rc > 0) {
          queued_ -= static_cast<unsigned>(rc);
          in_flight_ += static_cast<unsigned>(rc);
        } else if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY && in_flight_ == 0) {
          break;
        }
      }
      if (in_flight_ == 0) {
        ++idle;
        continue;
      }
      io_uring_cqe* cqe = nullptr;
      const int rc = io_uring_wait_cqe(&ring_, &cqe);
      if (rc < 0) {
        if (rc != -EINTR && rc != -EAGAIN) break;
        ++idle;
        continue;
      }
      const unsigned n = io_uring_peek_batch_cqe(&ring_, cqes_.data(), depth_);
      io_uring_cq_advance(&ring_, n);
      in_flight_ -= n;
    }
  }

 private:
  unsigned depth_;
  io_uring ring_;
  std::vector<io_uring_cqe*> cqes_;
  unsigned queued_ = 0;
  unsigned in_flight_ = 0;
};

}  // namespace

std::unique_ptr<IoEngine> make_uring_engine(unsigned depth) {
  return std::make_unique<UringEngine>(depth);
}

}  // namespace ds
