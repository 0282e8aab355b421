// The load pipeline's scheduling against a scripted engine and device: reads
// bounded by the depth and by the free staging buffers, short reads finished,
// every block copied once from its own data, and no staging buffer read into while
// the copies out of it are still pending (the fake device moves the bytes only when
// a query finds the copy complete, as a DMA engine would, so an early reuse shows
// up as another block's bytes on the device). Also the Stages line and its verdict.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "load/load_measure.h"
#include "staging/staged_stages.h"
#include "staging/pipeline.h"
#include "staging/staged_side.h"
#include "output/text_writer.h"

namespace ds {
namespace {

// Reads complete in FIFO order, one per reap, filling the buffer with the block's
// number; the first read of each block listed in `short_once` moves half. Writes:
// the bytes are taken at commit (the earliest a disk may read them) into `file[tag]`
// and must still be the same at completion (the latest): a buffer changed while its
// write is in flight is recorded in `changed_in_flight`.
class ScriptedEngine : public IoEngine {
 public:
  explicit ScriptedEngine(unsigned depth) : depth_(depth) {}
  // > 0: each request completes io_ns after its commit (FIFO); a reap that asks for
  // one sleeps until then, one that asks for none finds nothing before.
  int64_t io_ns = 0;
  const char* method() const override { return "SCRIPTED"; }
  unsigned depth() const override { return depth_; }
  bool queue(const IoRequest& r) override {
    if (queued_.size() + flight_.size() >= depth_) return false;
    queued_.push_back(r);
    return true;
  }
  unsigned commit() override {
    if (refuse_commits) return 0;  // the kernel short of resources (EAGAIN), for ever
    const unsigned n = static_cast<unsigned>(queued_.size());
    for (const IoRequest& r : queued_) {
      flight_.push_back(r);
      due_.push_back(now_ns() + io_ns);
      if (r.op == IoOp::kWrite) taken_[r.tag].assign(static_cast<char*>(r.buf), static_cast<char*>(r.buf) + r.bytes);
    }
    queued_.clear();
    max_in_flight = std::max<unsigned>(max_in_flight, static_cast<unsigned>(flight_.size()));
    return n;
  }
  unsigned reap(unsigned min, IoCompletion* out, unsigned max) override {
    if (flight_.empty() || max == 0) return 0;
    if (io_ns > 0) {
      const int64_t due = lifo ? due_.back() : due_.front();
      if (now_ns() < due) {
        if (min == 0) return 0;
        std::this_thread::sleep_for(std::chrono::nanoseconds(due - now_ns()));
      }
    }
    if (lifo)
      due_.pop_back();
    else
      due_.pop_front();
    const IoRequest r = lifo ? flight_.back() : flight_.front();
    if (lifo)
      flight_.pop_back();
    else
      flight_.pop_front();
    buffer_of[r.tag] = static_cast<char*>(r.buf) - r.offset;  // the buffer it started in
    size_t moved = r.bytes;
    if (short_once.count(r.tag) && !shorted_[r.tag]) {
      shorted_[r.tag] = true;
      moved = r.bytes / 2;
    }
    if (r.op == IoOp::kWrite) {
      const std::vector<char>& t = taken_[r.tag];
      if (std::memcmp(t.data(), r.buf, r.bytes) != 0) changed_in_flight.push_back(r.tag);
      std::vector<char>& f = file[r.tag];
      if (f.size() < r.offset + moved) f.resize(r.offset + moved);
      std::memcpy(f.data() + r.offset, t.data(), moved);
      ++writes;
    } else {
      std::memset(r.buf, static_cast<int>(r.tag + 1), moved);
    }
    out[0] = {r.tag, static_cast<int64_t>(moved)};
    return 1;
  }
  unsigned queued() const override { return static_cast<unsigned>(queued_.size()); }
  unsigned in_flight() const override { return static_cast<unsigned>(flight_.size()); }
  void drain() noexcept override {
    queued_.clear();
    flight_.clear();
    due_.clear();
  }

  unsigned max_in_flight = 0;
  std::map<uint64_t, bool> short_once;
  bool refuse_commits = false;
  bool lifo = false;                    // the newest read completes first
  std::map<uint64_t, char*> buffer_of;  // block -> the buffer its (last) read or write used
  std::map<uint64_t, std::vector<char>> file;  // block -> what its writes put in its file
  std::vector<uint64_t> changed_in_flight;     // blocks whose buffer changed under their write
  size_t writes = 0;

 private:
  unsigned depth_;
  std::deque<IoRequest> queued_, flight_;
  std::deque<int64_t> due_;  // flight_'s completion times (io_ns)
  std::map<uint64_t, bool> shorted_;
  std::map<uint64_t, std::vector<char>> taken_;
};

struct FakeStream : Stream {};
struct FakeEvent : Event {
  std::vector<CopyDesc> copies;  // moved when a query finds them complete
  int polls_left = 0;
  int64_t due = 0;  // not complete before (copy_ns)
};

// Copies are moved only when a query completes them, after `polls` queries.
class LateDevice : public Device {
 public:
  int polls = 3;
  int64_t copy_ns = 0;  // > 0: a block's copies are complete no sooner than this after their event's record
  bool strict = true;  // recording an event whose copies are pending is the pipeline's bug
  size_t copies_done = 0;
  int index() const override { return 0; }
  void bind_thread() override {}
  uint64_t free_memory() override { return 0; }
  std::unique_ptr<Memory> alloc_device(size_t) override { return nullptr; }
  std::unique_ptr<Memory> alloc_pinned(size_t, bool) override { return nullptr; }
  std::unique_ptr<Memory> register_host(void*, size_t, bool) override { return nullptr; }
  std::unique_ptr<Stream> create_stream() override { return std::make_unique<FakeStream>(); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<FakeEvent>(); }
  void record(Event& e, Stream&) override {
    auto& ev = static_cast<FakeEvent&>(e);
    if (strict) EXPECT_TRUE(ev.copies.empty()) << "a staging buffer reused while its copies are pending";
    ev.copies.insert(ev.copies.end(), pending_.begin(), pending_.end());
    pending_.clear();
    ev.polls_left = polls;
    ev.due = now_ns() + copy_ns;
    events_.push_back(&ev);
  }
  bool query(Event& e, Stream&) override {
    auto& ev = static_cast<FakeEvent&>(e);
    if (ev.polls_left-- > 0 || now_ns() < ev.due) return false;
    complete(ev);
    return true;
  }
  void synchronize(Stream&) override {
    for (FakeEvent* ev : events_) complete(*ev);
    events_.clear();
  }
  int64_t elapsed_ns(Event&, Event&) override { return 0; }
  void copy_async(const CopyDesc& d, CopyDir, Stream&) override { pending_.push_back(d); }
  void copy_batch(const CopyDesc* d, size_t n, CopyDir, Stream&) override { pending_.insert(pending_.end(), d, d + n); }
  void direct_task(const CopyDesc* d, size_t n, Stream&) override { pending_.insert(pending_.end(), d, d + n); }
  void copy_sync(const CopyDesc& d, CopyDir) override { std::memcpy(d.dst, d.src, d.bytes); }
  // Each call's stream count, and how many copies were queued by then.
  void ready_streams(Stream* const*, size_t n) override { readied.push_back({n, pending_.size() + copies_done}); }
  std::vector<std::pair<size_t, size_t>> readied;

 private:
  void complete(FakeEvent& ev) {
    for (const CopyDesc& c : ev.copies) std::memcpy(c.dst, c.src, c.bytes);
    copies_done += ev.copies.size();
    ev.copies.clear();
  }
  std::vector<CopyDesc> pending_;
  std::vector<FakeEvent*> events_;
};

struct Rig {
  static constexpr size_t kBlock = 4096;
  size_t blocks;
  unsigned staging;
  std::vector<Extent> reads;
  std::vector<char> host, dev;
  PipelineConfig config;

  Rig(size_t n, unsigned k, size_t frags, Device* d, IoEngine* e, bool direct, StagedDir dir = StagedDir::kLoad)
      : blocks(n), staging(k), host(k * kBlock), dev(n * kBlock, 0) {
    config.dir = dir;
    for (size_t b = 0; b < n; ++b) reads.push_back(Extent{-1, 0, kBlock});
    config.device = d;
    config.engine = e;
    config.blocks = &reads;
    config.direct_path = direct;
    config.block_name = [](size_t b) { return "block " + std::to_string(b); };
    for (unsigned s = 0; s < k; ++s) {
      config.staging_host.push_back(host.data() + s * kBlock);
      config.staging_dev.push_back(host.data() + s * kBlock);
    }
    // Fragment f of block b lands at the device's f-th region, as a block layout does.
    const size_t frag = kBlock / frags;
    config.copies_per_block = frags;
    for (size_t b = 0; b < n; ++b)
      for (size_t f = 0; f < frags; ++f)
        config.copies.push_back({dev.data() + f * n * frag + b * frag, f * frag, frag});
  }
  // Offload's source: fragment f of block b all (b + 1) + 16 f, at its device region.
  void fill_device(size_t frags) {
    const size_t frag = kBlock / frags;
    for (size_t b = 0; b < blocks; ++b)
      for (size_t f = 0; f < frags; ++f)
        std::memset(dev.data() + f * blocks * frag + b * frag, static_cast<int>(b + 1 + 16 * f), frag);
  }
  // Every block's file holds its fragments back to back, each from its own region.
  void expect_every_block_written(const ScriptedEngine& e, size_t frags) const {
    const size_t frag = kBlock / frags;
    ASSERT_EQ(e.file.size(), blocks);
    for (size_t b = 0; b < blocks; ++b) {
      const std::vector<char>& f = e.file.at(b);
      ASSERT_EQ(f.size(), kBlock) << "block " << b;
      for (size_t g = 0; g < frags; ++g)
        for (size_t i = 0; i < frag; ++i)
          ASSERT_EQ(static_cast<unsigned char>(f[g * frag + i]), (b + 1 + 16 * g) & 0xff)
              << "block " << b << " fragment " << g << " byte " << i;
    }
    EXPECT_TRUE(e.changed_in_flight.empty()) << "a staging buffer copied into while its write was in flight";
  }
  // Block b's bytes (all b + 1) at each of its fragments' places.
  void expect_every_block_copied(size_t frags) const {
    const size_t frag = kBlock / frags;
    for (size_t b = 0; b < blocks; ++b)
      for (size_t f = 0; f < frags; ++f)
        for (size_t i = 0; i < frag; ++i)
          ASSERT_EQ(static_cast<unsigned char>(dev[f * blocks * frag + b * frag + i]), b + 1)
              << "block " << b << " fragment " << f << " byte " << i;
  }
};

TEST(LoadPipeline, BoundedReadsNoEarlyReuseEveryBlockOnce) {
  for (unsigned k : {1u, 2u, 5u})
    for (bool direct : {false, true}) {
      ScriptedEngine engine(4);
      LateDevice dev;
      Rig rig(13, k, 4, &dev, &engine, direct);
      Pipeline pipe(rig.config, 3);
      const PipelineTimes t = pipe.run();
      EXPECT_LE(engine.max_in_flight, std::min(4u, k)) << "reads beyond the depth or the free buffers";
      EXPECT_EQ(dev.copies_done, 13u * 4u);
      rig.expect_every_block_copied(4);
      EXPECT_GT(t.wall_ns, 0);
      EXPECT_GE(t.wall_ns, t.io_busy_ns);
      EXPECT_GE(t.wall_ns, t.copy_busy_ns);
    }
}

TEST(LoadPipeline, ShortReadsAreFinishedAndCounted) {
  ScriptedEngine engine(2);
  engine.short_once = {{0, false}, {5, false}};
  LateDevice dev;
  Rig rig(6, 2, 1, &dev, &engine, false);
  Pipeline pipe(rig.config, 1);
  const PipelineTimes t = pipe.run();
  EXPECT_EQ(t.short_transfers, 2u);
  rig.expect_every_block_copied(1);
}

// Block b is always read into staging buffer b % K (its copies are prepared for that
// buffer), and reads completing out of order still keep min(depth, K) in flight: the
// next read is the lowest unread block whose buffer is free.
TEST(LoadPipeline, BlockBInBufferBModKAndReadsGoOutAsBuffersFree) {
  for (bool direct : {false, true}) {
    ScriptedEngine engine(4);
    engine.lifo = true;
    LateDevice dev;
    Rig rig(11, 3, 2, &dev, &engine, direct);
    Pipeline pipe(rig.config, 2);
    pipe.run();
    rig.expect_every_block_copied(2);
    EXPECT_EQ(engine.max_in_flight, 3u);
    ASSERT_EQ(engine.buffer_of.size(), 11u);
    for (const auto& kv : engine.buffer_of)
      EXPECT_EQ(kv.second, rig.host.data() + (kv.first % 3) * Rig::kBlock) << "block " << kv.first;
  }
}

// The pipeline's reads go through aio's retry core: the same bounded EAGAIN retry
// and the same words (tests/unit/test_aio_loop.cc has them for run_pass).
TEST(LoadPipeline, CommitsThatNeverTakeGiveUpAsAioDoes) {
  ScriptedEngine engine(2);
  engine.refuse_commits = true;
  LateDevice dev;
  Rig rig(3, 2, 1, &dev, &engine, false);
  Pipeline pipe(rig.config, 1);
  try {
    pipe.run();
    ADD_FAILURE() << "a pass whose commits never take anything ended";
  } catch (const RunError& e) {
    EXPECT_STREQ(e.what(), "SCRIPTED submission kept failing with EAGAIN and nothing in flight");
  }
}

TEST(LoadPipeline, CopyAloneCopiesEveryBlockFromItsBuffer) {
  ScriptedEngine engine(2);
  LateDevice dev;
  dev.strict = false;  // every block queued at once: buffer b % K's event recorded again
  Rig rig(7, 3, 2, &dev, &engine, false);
  for (unsigned s = 0; s < 3; ++s) std::memset(rig.host.data() + s * Rig::kBlock, static_cast<int>(100 + s), Rig::kBlock);
  Pipeline pipe(rig.config, 2);
  pipe.copy_alone();
  // Its streams readied once, both, before any copy was queued (sim: its copy threads
  // up and apart before the timed pass).
  EXPECT_EQ(dev.readied, (std::vector<std::pair<size_t, size_t>>{{2, 0}}));
  EXPECT_EQ(dev.copies_done, 7u * 2u);
  const size_t frag = Rig::kBlock / 2;
  for (size_t b = 0; b < 7; ++b)
    EXPECT_EQ(static_cast<unsigned char>(rig.dev[b * frag]), 100 + b % 3) << "block " << b;
}

// Offload: every block copied into buffer b % K, written once its copies are
// complete (the engine takes the bytes at commit), the buffer copied into again only
// once its write is complete, writes bounded by the depth and the buffers.
TEST(OffloadPipeline, BoundedWritesNoEarlyReuseEveryBlockOnce) {
  for (unsigned k : {1u, 2u, 5u})
    for (bool direct : {false, true}) {
      ScriptedEngine engine(4);
      LateDevice dev;
      Rig rig(13, k, 4, &dev, &engine, direct, StagedDir::kOffload);
      rig.fill_device(4);
      Pipeline pipe(rig.config, 3);
      const PipelineTimes t = pipe.run();
      EXPECT_LE(engine.max_in_flight, std::min(4u, k)) << "writes beyond the depth or the free buffers";
      EXPECT_EQ(dev.copies_done, 13u * 4u);
      EXPECT_EQ(engine.writes, 13u);
      rig.expect_every_block_written(engine, 4);
      EXPECT_GE(t.wall_ns, t.io_busy_ns);
      EXPECT_GE(t.wall_ns, t.copy_busy_ns);
      EXPECT_GT(t.io_busy_ns, 0);
      EXPECT_GT(t.copy_busy_ns, 0);
    }
}

// Copies found complete at the first look (a fast card): they were in flight from
// their submission, so the copy busy time is not 0, in either direction.
TEST(OffloadPipeline, CopyBusyCountsCopiesCompleteAtTheFirstLook) {
  for (StagedDir dir : {StagedDir::kOffload, StagedDir::kLoad}) {
    ScriptedEngine engine(4);
    LateDevice dev;
    dev.polls = 0;
    Rig rig(8, 2, 4, &dev, &engine, false, dir);
    rig.fill_device(4);
    Pipeline pipe(rig.config, 2);
    const PipelineTimes t = pipe.run();
    EXPECT_EQ(dev.copies_done, 8u * 4u);
    EXPECT_GT(t.copy_busy_ns, 0) << (dir == StagedDir::kLoad ? "load" : "offload");
    EXPECT_GE(t.wall_ns, t.copy_busy_ns);
  }
}

// --staging above --iodepth: with the one slot taken by a 10 ms read (or write), a
// copy's completion must not first be seen when that transfer completes (the loop
// asleep in reap): the copy busy time is the copies' (1 ms each), well under the
// transfers' (generous: under half), in either direction.
TEST(StagedPipeline, CopyBusyIsTheCopiesTimeWhileTransfersHoldTheQueue) {
  constexpr int64_t kMs = 1000 * 1000;
  for (StagedDir dir : {StagedDir::kLoad, StagedDir::kOffload}) {
    SCOPED_TRACE(dir == StagedDir::kLoad ? "load" : "offload");
    ScriptedEngine engine(1);
    engine.io_ns = 10 * kMs;
    LateDevice dev;
    dev.polls = 0;
    dev.copy_ns = kMs;
    Rig rig(12, 4, 1, &dev, &engine, false, dir);
    rig.fill_device(1);
    Pipeline pipe(rig.config, 1);
    const PipelineTimes t = pipe.run();
    EXPECT_EQ(dev.copies_done, 12u);
    EXPECT_GE(t.io_busy_ns, 12 * 10 * kMs);
    EXPECT_GE(t.copy_busy_ns, kMs);
    EXPECT_LT(t.copy_busy_ns, t.io_busy_ns / 2) << "copy busy " << t.copy_busy_ns << " ns, io busy " << t.io_busy_ns;
  }
}

// Two pipelines timed together with one first_end: the shorter ends first and sets
// it; the longer's busy times up to it are its busy times while both ran: some, less
// than its whole pass's, and no more than the span from its start to the cut.
TEST(StagedPipeline, BusyTimesUpToTheFirstEnd) {
  constexpr int64_t kMs = 1000 * 1000;
  std::atomic<int64_t> first_end{INT64_MAX};
  ScriptedEngine short_engine(1), long_engine(1);
  short_engine.io_ns = long_engine.io_ns = 5 * kMs;
  LateDevice short_dev, long_dev;
  short_dev.polls = long_dev.polls = 0;
  Rig short_rig(3, 2, 1, &short_dev, &short_engine, false), long_rig(12, 2, 1, &long_dev, &long_engine, false);
  short_rig.config.first_end = long_rig.config.first_end = &first_end;
  Pipeline short_pipe(short_rig.config, 1), long_pipe(long_rig.config, 1);
  PipelineTimes st;
  std::thread other([&] { st = short_pipe.run(); });
  const PipelineTimes lt = long_pipe.run();
  other.join();
  ASSERT_TRUE(st.ended_first);
  EXPECT_FALSE(lt.ended_first);
  EXPECT_EQ(first_end.load(), st.end_ns);
  EXPECT_EQ(st.io_busy_first_ns, st.io_busy_ns);
  EXPECT_EQ(st.copy_busy_first_ns, st.copy_busy_ns);
  EXPECT_GT(lt.io_busy_first_ns, 0);
  EXPECT_LT(lt.io_busy_first_ns, lt.io_busy_ns);
  EXPECT_LE(lt.io_busy_first_ns, st.end_ns - lt.start_ns);
  EXPECT_LE(lt.copy_busy_first_ns, lt.copy_busy_ns);
}

// Writes completing out of order: block b still goes through buffer b % K, and a
// write is never queued before its copies are complete (the device moves the bytes
// only when a query finds the copy done; the engine takes them at commit).
// (Copies that complete at once with the oldest write lingering: a buffer copied into
// before its write completed would change under it.)
TEST(OffloadPipeline, BlockBThroughBufferBModKAndWritesWaitForTheirCopies) {
  for (int polls : {0, 5})
  for (bool direct : {false, true}) {
    ScriptedEngine engine(4);
    engine.lifo = true;
    LateDevice dev;
    dev.polls = polls;
    Rig rig(11, 3, 2, &dev, &engine, direct, StagedDir::kOffload);
    rig.fill_device(2);
    Pipeline pipe(rig.config, 2);
    pipe.run();
    rig.expect_every_block_written(engine, 2);
    ASSERT_EQ(engine.buffer_of.size(), 11u);
    for (const auto& kv : engine.buffer_of)
      EXPECT_EQ(kv.second, rig.host.data() + (kv.first % 3) * Rig::kBlock) << "block " << kv.first;
  }
}

TEST(OffloadPipeline, ShortWritesAreFinishedAndCounted) {
  ScriptedEngine engine(2);
  engine.short_once = {{0, false}, {5, false}};
  LateDevice dev;
  Rig rig(6, 2, 1, &dev, &engine, false, StagedDir::kOffload);
  rig.fill_device(1);
  Pipeline pipe(rig.config, 1);
  const PipelineTimes t = pipe.run();
  EXPECT_EQ(t.short_transfers, 2u);
  rig.expect_every_block_written(engine, 1);
}

// A pass run again (each round) starts from every buffer free and moves every block.
TEST(OffloadPipeline, RunsAgainFromAFreshState) {
  ScriptedEngine engine(3);
  LateDevice dev;
  Rig rig(9, 2, 3, &dev, &engine, false, StagedDir::kOffload);
  rig.fill_device(3);
  Pipeline pipe(rig.config, 2);
  pipe.run();
  engine.file.clear();
  pipe.run();
  EXPECT_EQ(engine.writes, 18u);
  rig.expect_every_block_written(engine, 3);
}

TEST(OffloadPipeline, CopyAloneCopiesEveryBlockIntoItsBuffer) {
  ScriptedEngine engine(2);
  LateDevice dev;
  dev.strict = false;  // every block queued at once: buffer b % K's event recorded again
  Rig rig(7, 3, 1, &dev, &engine, false, StagedDir::kOffload);
  rig.fill_device(1);
  Pipeline pipe(rig.config, 2);
  pipe.copy_alone();
  EXPECT_EQ(dev.copies_done, 7u);
  EXPECT_EQ(engine.writes, 0u);
  // Buffer s last took block 6 - ((6 - s) % 3)... the last block of its lane.
  for (size_t s = 0; s < 3; ++s) {
    size_t last = s;
    while (last + 3 < 7) last += 3;
    EXPECT_EQ(static_cast<unsigned char>(rig.host[s * Rig::kBlock]), last + 1) << "buffer " << s;
  }
}

TEST(LoadStages, VerdictRule) {
  EXPECT_EQ(stage_verdict(1.0, 10.0, 0.95), "disk");
  EXPECT_EQ(stage_verdict(1.0, 10.0, 0.90), "disk");
  EXPECT_EQ(stage_verdict(10.0, 2.0, 1.9), "copy");
  EXPECT_EQ(stage_verdict(1.0, 10.0, 0.89), "neither (overlap lost)");
  EXPECT_EQ(stage_verdict(0.0, 0.0, 0.0), "neither (overlap lost)");
}

TEST(LoadStages, LineCarriesTheFiguresAsJsonHasThem) {
  CaseResult r;
  LoadStages s;
  s.disk_gib_s = 1.23449;
  s.copy_gib_s = 9.8765;
  s.pipelined_gib_s = 1.1;
  s.percent_of_slower = 100.0 * 1.1 / 1.23449;
  s.bottleneck = "copy";
  const std::string line =
      "  Stages: disk alone 1.234 GiB/s, copy alone 9.877 GiB/s, pipelined 1.100 GiB/s = 89.1% of the slower "
      "stage; bottleneck: copy\n";
  EXPECT_EQ(format_stages_line(s), line);
  // The result's block carries the line after its Wall line, and only with the extra.
  EXPECT_EQ(format_text_block(r).find("Stages:"), std::string::npos);
  r.extras.put(s);
  const std::string block = format_text_block(r);
  ASSERT_GE(block.size(), line.size());
  EXPECT_EQ(block.substr(block.size() - line.size()), line);
  EXPECT_NE(block.find("  Wall: "), std::string::npos);
  EXPECT_LT(block.find("  Wall: "), block.find(line));
}

}  // namespace
}  // namespace ds

// The threads the nap rule counts: per pipeline (each card, twice with --offload-ratio)
// its loop, a host thread per stream where the copies are host work, psync's threads.
TEST(LookNapThreads, CountsEveryThreadThatMustRun) {
  ds::StagedParams p;
  p.devices = 8;
  p.streams = 4;
  p.iodepth = 16;
  p.engine = ds::AioEngineKind::kLibaio;
  EXPECT_EQ(ds::look_nap_threads(p, 1, false), 8);  // a card's DMA: only the loops
  EXPECT_EQ(ds::look_nap_threads(p, 1, true), 8 * (1 + 4));
  EXPECT_EQ(ds::look_nap_threads(p, 2, false), 16);
  p.engine = ds::AioEngineKind::kPsync;
  EXPECT_EQ(ds::look_nap_threads(p, 1, false), 8 * (1 + 16));
  // 8 cards of DMA with libaio on a 16-CPU host spin; on 4 CPUs they nap.
  p.engine = ds::AioEngineKind::kLibaio;
  EXPECT_FALSE(ds::look_nap_rule(16, ds::look_nap_threads(p, 1, false), false).nap);
  EXPECT_TRUE(ds::look_nap_rule(4, ds::look_nap_threads(p, 1, false), false).nap);
}
