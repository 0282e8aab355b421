#include "aio/io_loop.h"

#include <sched.h>

#include <cstring>
#include <deque>

#include "core/clock.h"
#include "core/interrupt.h"
#include "runner/timed_loop.h"

namespace ds {

namespace {

const char* verb(IoOp op) { return op == IoOp::kWrite ? "write" : "read"; }

struct Pending {
  uint64_t shard;
  uint64_t offset;  // bytes of this shard already moved
};

}  // namespace

PassResult run_pass(IoEngine& engine, IoOp op, const std::vector<Extent>& shards,
                    const BufferRing& ring, const PassHooks& hooks) {
  PassResult r;
  const size_t n = shards.size();
  const unsigned depth = engine.depth();
  if (ring.buffers.empty()) throw RunError("run_pass: no host buffers");
  std::vector<IoCompletion> events(depth);
  std::vector<uint64_t> inflight_offset(n, 0);  // offset of a shard's request in flight
  std::vector<char*> buffer_of(n, nullptr);      // the ring buffer a shard holds
  std::vector<char*> free_buffers;
  for (auto it = ring.buffers.rbegin(); it != ring.buffers.rend(); ++it)
    free_buffers.push_back(static_cast<char*>(*it));
  std::deque<Pending> retries;  // remainders of short transfers, first
  size_t next = 0, done = 0;
  unsigned idle_commits = 0;

  try {
    const int64_t start = now_ns();
    r.start_ns = start;
    while (done < n) {
      check_interrupted();
      // Fill the queue: remainders first, then shards in order while a buffer is free.
      for (;;) {
        Pending p;
        const bool retry = !retries.empty();
        if (retry)
          p = retries.front();
        else if (next < n && !free_buffers.empty())
          p = Pending{next, 0};
        else
          break;
        const Extent& s = shards[p.shard];
        char* buf = retry ? buffer_of[p.shard] : free_buffers.back();
        if (!retry && hooks.prepare) hooks.prepare(p.shard, buf);
        const IoRequest req{op, s.fd, buf + p.offset, s.bytes - p.offset, s.offset + p.offset, p.shard};
        if (!engine.queue(req)) break;
        inflight_offset[p.shard] = p.offset;
        if (retry) {
          retries.pop_front();
        } else {
          buffer_of[p.shard] = buf;
          free_buffers.pop_back();
          ++next;
        }
      }
      if (engine.queued() > 0) {
        const int64_t t0 = now_ns();
        const unsigned taken = engine.commit();
        r.submit_ns += now_ns() - t0;
        if (taken == 0 && engine.in_flight() == 0) {
          // Out of kernel resources with nothing of ours to wait for: yield a
          // while, then give up rather than spin forever.
          if (++idle_commits > 100000)
            throw RunError(std::string(engine.method()) +
                           " submission kept failing with EAGAIN and nothing in flight");
          sched_yield();
          continue;
        }
        idle_commits = 0;
      }
      if (engine.in_flight() == 0) {
        if (engine.queued() == 0)  // a broken engine: refuses work with none pending
          throw RunError(std::string(engine.method()) + " accepted no request with none in flight");
        continue;
      }
      const unsigned got = engine.reap(1, events.data(), depth);
      loop_progress();  // completions are progress for the watchdog
      for (unsigned i = 0; i < got; ++i) {
        const IoCompletion& c = events[i];
        const Extent& s = shards[c.tag];
        const uint64_t off = inflight_offset[c.tag];
        const uint64_t want = s.bytes - off;
        const uint64_t at = s.offset + off;  // in the file
        if (c.result < 0) {
          const int err = static_cast<int>(-c.result);
          throw IoFailure(std::string(verb(op)) + " of shard " + std::to_string(c.tag) +
                              " at offset " + std::to_string(at) + " (" + std::to_string(want) +
                              " bytes): " + std::strerror(err),
                          c.tag, at, err, done);
        }
        const uint64_t moved = static_cast<uint64_t>(c.result);
        if (moved == 0 || moved > want)
          throw IoFailure(std::string(verb(op)) + " of shard " + std::to_string(c.tag) +
                              " at offset " + std::to_string(at) + " moved " +
                              std::to_string(moved) + " of " + std::to_string(want) + " bytes" +
                              (moved == 0 && op == IoOp::kRead ? " (the file ends there)" : ""),
                          c.tag, at, 0, done);
        if (moved < want) {
          ++r.short_transfers;
          retries.push_back(Pending{c.tag, off + moved});
          continue;
        }
        if (hooks.complete) hooks.complete(c.tag, buffer_of[c.tag]);
        free_buffers.push_back(buffer_of[c.tag]);
        ++done;
      }
    }
    r.end_ns = now_ns();
    r.wall_ns = r.end_ns - start;
  } catch (...) {
    engine.drain();
    throw;
  }
  return r;
}

}  // namespace ds
