// Linux native AIO through libaio: io_setup / io_submit / io_getevents.
#include <libaio.h>

#include <cerrno>
#include <vector>

#include "aio/io_engine.h"
#include "core/error.h"

namespace ds {

namespace {

class LibaioEngine : public IoEngine {
 public:
  explicit LibaioEngine(unsigned depth) : depth_(depth), iocbs_(depth), events_(depth) {
    const int rc = io_setup(static_cast<int>(depth), &ctx_);
    if (rc < 0) {
      RunError e = sys_error("io_setup(" + std::to_string(depth) + ")", -rc);
      if (rc == -EAGAIN)
        throw RunError(std::string(e.what()) +
                       "; the system-wide limit /proc/sys/fs/aio-max-nr is reached: raise it or "
                       "lower --iodepth");
      throw e;
    }
    free_.reserve(depth);
    for (unsigned i = depth; i > 0; --i) free_.push_back(&iocbs_[i - 1]);
    pending_.reserve(depth);
  }

  ~LibaioEngine() override {
    drain();
    io_destroy(ctx_);
  }

  const char* method() const override { return engine_method_label(AioEngineKind::kLibaio); }
  unsigned depth() const override { return depth_; }
  unsigned queued() const override { return static_cast<unsigned>(pending_.size()); }
  unsigned in_flight() const override { return in_flight_; }

  bool queue(const IoRequest& r) override {
    if (free_.empty()) return false;
    iocb* cb = free_.back();
    free_.pop_back();
    if (r.op == IoOp::kWrite)
      io_prep_pwrite(cb, r.fd, r.buf, r.bytes, static_cast<long long>(r.offset));
    else
      io_prep_pread(cb, r.fd, r.buf, r.bytes, static_cast<long long>(r.offset));
    cb->data = reinterpret_cast<void*>(static_cast<uintptr_t>(r.tag));
    pending_.push_back(cb);
    return true;
  }

  unsigned commit() override {
    unsigned taken = 0;
    while (!pending_.empty()) {
      const int rc = io_submit(ctx_, static_cast<long>(pending_.size()), pending_.data());
      if (rc == -EINTR) continue;
      if (rc == -EAGAIN) break;
      if (rc < 0) throw sys_error("io_submit(" + std::to_string(pending_.size()) + " iocbs)", -rc);
      // A partial submission leaves the rest, in order, for the next call.
      pending_.erase(pending_.begin(), pending_.begin() + rc);
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
    const int rc = io_getevents(ctx_, static_cast<long>(min_nr), static_cast<long>(max),
                                events_.data(), nullptr);
    if (rc == -EINTR) return 0;
    if (rc < 0) throw sys_error("io_getevents", -rc);
    for (int i = 0; i < rc; ++i) {
      const io_event& ev = events_[static_cast<size_t>(i)];
      out[i].tag = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(ev.data));
      // res carries bytes moved, or a negative errno, in an unsigned long.
      out[i].result = static_cast<int64_t>(static_cast<long>(ev.res));
      free_.push_back(ev.obj);
    }
    in_flight_ -= static_cast<unsigned>(rc);
    return static_cast<unsigned>(rc);
  }

  void drain() noexcept override {
    // Never submitted: give the slots back. Submitted: wait for them, since
    // the kernel still writes into (or reads from) their buffers.
    for (iocb* cb : pending_) free_.push_back(cb);
    pending_.clear();
    int idle = 0;
    while (in_flight_ > 0 && idle < 1000) {
      const int rc = io_getevents(ctx_, 1, static_cast<long>(depth_), events_.data(), nullptr);
      if (rc == -EINTR) {
        ++idle;
        continue;
      }
      if (rc < 0) break;  // io_destroy waits for the rest
      for (int i = 0; i < rc; ++i) free_.push_back(events_[static_cast<size_t>(i)].obj);
      in_flight_ -= static_cast<unsigned>(rc);
    }
  }

 private:
  unsigned depth_;
  io_context_t ctx_ = nullptr;
  std::vector<iocb> iocbs_;
  std::vector<io_event> events_;
  std::vector<iocb*> free_;
  std::vector<iocb*> pending_;
  unsigned in_flight_ = 0;
};

}  // namespace

std::unique_ptr<IoEngine> make_libaio_engine(unsigned depth) {
  return std::make_unique<LibaioEngine>(depth);
}

}  // namespace ds
