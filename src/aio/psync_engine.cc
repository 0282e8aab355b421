// psync: `depth` threads, each moving one request at a time with pread/pwrite
// (fio's psync with numjobs, UCM's psync engine), for storage where kernel aio is
// not the fastest path. The threads are started with the engine (untimed) and
// fed through the same queue/commit/reap contract as the kernel engines:
// commit() hands the queued requests to the threads, reap() collects what they
// finished. A thread makes one call per request, so a short transfer comes back
// short, as from the kernel engines, and the loop resubmits the remainder.
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "aio/io_engine.h"
#include "core/error.h"
#include "core/interrupt.h"

namespace ds {

namespace {

class PsyncEngine : public IoEngine {
 public:
  explicit PsyncEngine(unsigned depth) : depth_(depth) {
    pending_.reserve(depth);
    // The threads take no signals: Ctrl-C and the watchdog's signals reach the
    // thread that runs the loop, and a pread is never cut short by them.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    try {
      threads_.reserve(depth);
      for (unsigned i = 0; i < depth; ++i) threads_.emplace_back([this] { serve(); });
    } catch (const std::system_error& e) {
      pthread_sigmask(SIG_SETMASK, &old, nullptr);
      const size_t started = threads_.size();
      stop();
      throw RunError("psync: starting thread " + std::to_string(started + 1) + " of " + std::to_string(depth) +
                     " (pthread_create): " + e.code().message() + "; lower --iodepth");
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }

  ~PsyncEngine() override {
    drain();
    stop();
  }

  const char* method() const override { return engine_method_label(AioEngineKind::kPsync); }
  unsigned depth() const override { return depth_; }
  unsigned queued() const override { return static_cast<unsigned>(pending_.size()); }
  unsigned in_flight() const override { return in_flight_; }

  bool queue(const IoRequest& r) override {
    if (pending_.size() + in_flight_ >= depth_) return false;
    pending_.push_back(r);
    return true;
  }

  unsigned commit() override {
    const auto n = static_cast<unsigned>(pending_.size());
    if (n == 0) return 0;
    {
      std::lock_guard<std::mutex> lock(m_);
      work_.insert(work_.end(), pending_.begin(), pending_.end());
    }
    pending_.clear();
    in_flight_ += n;
    for (unsigned i = 0; i < n; ++i) work_cv_.notify_one();  // one thread per request, no herd
    return n;
  }

  unsigned reap(unsigned min_nr, IoCompletion* out, unsigned max) override {
    if (in_flight_ == 0 || max == 0) return 0;
    if (min_nr > in_flight_) min_nr = in_flight_;
    std::unique_lock<std::mutex> lock(m_);
    // A signal ends the wait early, as EINTR does io_getevents: the flag is
    // looked at between short waits.
    ++waiters_;
    while (done_.size() < min_nr && !interrupted())
      done_cv_.wait_for(lock, std::chrono::milliseconds(50));
    --waiters_;
    unsigned n = 0;
    while (n < max && !done_.empty()) {
      out[n++] = done_.front();
      done_.pop_front();
    }
    in_flight_ -= n;
    return n;
  }

  void drain() noexcept override {
    pending_.clear();
    try {
      std::unique_lock<std::mutex> lock(m_);
      // Not yet taken by a thread: never started, so no buffer is in use.
      in_flight_ -= static_cast<unsigned>(work_.size());
      work_.clear();
      // Taken: wait for the call to return, since it still uses its buffer.
      ++waiters_;
      while (done_.size() < in_flight_) done_cv_.wait(lock);
      --waiters_;
      done_.clear();
      in_flight_ = 0;
    } catch (...) {
      // A mutex that cannot be locked: nothing better to do than leave it.
    }
  }

 private:
  void serve() {
    std::unique_lock<std::mutex> lock(m_);
    for (;;) {
      work_cv_.wait(lock, [this] { return stopping_ || !work_.empty(); });
      if (work_.empty()) return;  // stopping
      const IoRequest r = work_.front();
      work_.pop_front();
      lock.unlock();
      ssize_t got;
      do {
        got = r.op == IoOp::kWrite ? pwrite(r.fd, r.buf, r.bytes, static_cast<off_t>(r.offset))
                                   : pread(r.fd, r.buf, r.bytes, static_cast<off_t>(r.offset));
      } while (got < 0 && errno == EINTR);
      const IoCompletion c{r.tag, got < 0 ? -static_cast<int64_t>(errno) : static_cast<int64_t>(got)};
      // Hand the completion back and look for the next request in one hold of the lock.
      lock.lock();
      done_.push_back(c);
      if (waiters_ > 0) done_cv_.notify_one();
    }
  }

  void stop() noexcept {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    work_cv_.notify_all();
    for (std::thread& t : threads_)
      if (t.joinable()) t.join();
    threads_.clear();
  }

  unsigned depth_;
  std::vector<IoRequest> pending_;  // queued, not yet committed (this thread only)
  unsigned in_flight_ = 0;          // committed, not yet reaped (this thread only)
  std::mutex m_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<IoRequest> work_;     // committed, not yet taken by a thread
  std::deque<IoCompletion> done_;  // finished, not yet reaped
  bool stopping_ = false;
  unsigned waiters_ = 0;  // reap() or drain() waiting for done_
  std::vector<std::thread> threads_;
};

}  // namespace

std::unique_ptr<IoEngine> make_psync_engine(unsigned depth) { return std::make_unique<PsyncEngine>(depth); }

}  // namespace ds
