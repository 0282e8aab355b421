// The cluster layer without MPI: the timed loop's alignment across ranks through
// a fake Cluster, and the aggregate of results over ranks.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include "aio/aio_result.h"
#include "cluster/across_ranks.h"
#include "cluster/cluster.h"
#include "core/clock.h"
#include "staging/staged_stages.h"
#include "runner/timed_loop.h"

namespace {

// Two "ranks" as far as the loop knows: every agreement takes 20 ms (the other
// rank arriving late) and is stamped, so no iteration may start before it ends.
class SlowCluster : public ds::Cluster {
 public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const std::string& node() const override { return node_; }
  bool agree(bool ok, int64_t, const std::string&) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ends.push_back(ds::now_ns());
    if (!ok || fail_at == static_cast<int>(ends.size())) failed_ = true;
    return !failed_;
  }
  std::vector<std::string> gather(const std::string& b, int64_t) override { return {b}; }
  int64_t from_rank0(int64_t v, int64_t, const std::string&) override { return v; }
  bool failed() const override { return failed_; }
  bool broken() const override { return false; }
  std::vector<int64_t> ends;
  int fail_at = -1;  // the agreement (from 1) where "the other rank" says no

 private:
  std::string node_ = "here";
  bool failed_ = false;
};

// When each iteration (warm-up included) first started on any worker.
std::vector<std::atomic<int64_t>> g_first_start(16);

class StampWorker : public ds::LoopWorker {
 public:
  void iterate(int index, ds::IterationRecord& r) override {
    int64_t none = 0;
    g_first_start[static_cast<size_t>(index)].compare_exchange_strong(none, r.start);
    r.submitted = ds::now_ns();
  }
  int64_t measured_ns(const ds::IterationRecord& r) override { return r.done - r.start; }
};

ds::LoopShape shape(ds::Cluster* c, int workers) {
  ds::LoopShape s;
  s.workers = workers;
  s.fanout = ds::Fanout::kThreads;
  s.iterations = 4;
  s.warmup = 1;
  s.cluster = c;
  return s;
}

TEST(AcrossRanks, EveryIterationStartsAfterTheAgreement) {
  SlowCluster c;
  for (auto& s : g_first_start) s = 0;
  ds::LoopHooks hooks;
  hooks.make_worker = [](int) { return std::make_unique<StampWorker>(); };
  const ds::LoopResult r = ds::run_timed_loop(shape(&c, 2), hooks);
  ASSERT_EQ(c.ends.size(), 5u);  // warm-up + 4: one agreement before each start
  ASSERT_EQ(r.wall.size(), 4u);
  for (size_t it = 0; it < c.ends.size(); ++it) EXPECT_GE(g_first_start[it].load(), c.ends[it]) << "iteration " << it;
}

TEST(AcrossRanks, ANoFromAnotherRankStopsTheLoop) {
  SlowCluster c;
  c.fail_at = 2;
  ds::LoopHooks hooks;
  hooks.make_worker = [](int) { return std::make_unique<StampWorker>(); };
  EXPECT_THROW(ds::run_timed_loop(shape(&c, 2), hooks), ds::RankStopped);
  EXPECT_EQ(c.ends.size(), 2u);
}

ds::CaseResult part(uint64_t bytes, std::vector<int64_t> io) {
  ds::CaseResult r;
  r.name = "aio_dump";
  r.count = bytes / 4096;
  r.bytes = bytes;
  r.iterations = static_cast<int>(io.size());
  r.measured = "IO";
  r.stages = {{"IO", ds::compute_stats(io), io}};
  r.validated = true;
  return r;
}

TEST(AcrossRanks, AggregateIsAllBytesOverEachIterationsSlowest) {
  const ds::CaseResult a = part(4096 * 10, {100, 300}), b = part(4096 * 20, {200, 100});
  const ds::CaseResult agg = ds::combine_results({&a, &b}, false);
  EXPECT_EQ(agg.bytes, 4096u * 30);
  EXPECT_EQ(agg.count, 30u);
  EXPECT_EQ(agg.stages[0].samples, (std::vector<int64_t>{200, 300}));
  EXPECT_DOUBLE_EQ(agg.stage("IO").avg, 250.0);
  EXPECT_TRUE(agg.validated && *agg.validated);
}

// aio's disk counters on a result: the only two places here that know how a result
// holds them (a device, a direction, the bytes its counters moved and the bytes
// the phase should have moved there).
struct Disk {
  std::string device, direction;
  uint64_t bytes, expected;
  bool operator==(const Disk& o) const {
    return device == o.device && direction == o.direction && bytes == o.bytes && expected == o.expected;
  }
};
std::ostream& operator<<(std::ostream& os, const Disk& d) {
  return os << d.device << "/" << d.direction << ": " << d.bytes << " of " << d.expected;
}
ds::CaseResult with_disks(ds::CaseResult r, const std::vector<Disk>& disks) {
  ds::AioResult aio = r.extras.get<ds::AioResult>() ? *r.extras.get<ds::AioResult>() : ds::AioResult{};
  for (const Disk& d : disks) {
    ds::DeviceIo io;
    io.device = d.device;
    io.direction = d.direction;
    io.bytes = d.bytes;
    io.expected = d.expected;
    aio.device_io.push_back(io);
  }
  r.extras.put(aio);
  return r;
}
std::vector<Disk> disks_of(const ds::CaseResult& r) {
  std::vector<Disk> out;
  if (const ds::AioResult* aio = r.extras.get<ds::AioResult>())
    for (const ds::DeviceIo& io : aio->device_io) out.push_back({io.device, io.direction, io.bytes, io.expected});
  return out;
}

// Ranks on one node read one disk's counters over the same window (between two
// barriers): each saw every rank's I/O, so the node's bytes are the largest
// reading, not their sum; what should have reached the disk is every rank's share.
TEST(AcrossRanks, OneNodesDiskCountersAreOneDiskNotASumOverItsRanks) {
  const ds::CaseResult a = with_disks(part(4096 * 10, {100, 300}), {{"vda", "written", 1000, 600}, {"vda", "read", 70, 40}}),
                       b = with_disks(part(4096 * 20, {200, 100}), {{"vda", "written", 900, 500}, {"vda", "read", 80, 30}});
  const ds::CaseResult node = ds::combine_results({&a, &b}, true);
  EXPECT_EQ(disks_of(node), (std::vector<Disk>{{"vda", "written", 1000, 1100}, {"vda", "read", 80, 70}}));
  // On different nodes the same name is two disks: each kept as it is.
  const ds::CaseResult c = with_disks(part(4096, {100, 100}), {{"vda", "", 500, 400}}),
                       d = with_disks(part(4096, {100, 100}), {{"vda", "", 300, 400}});
  EXPECT_EQ(disks_of(ds::combine_results({&c, &d}, false)),
            (std::vector<Disk>{{"vda", "", 500, 400}, {"vda", "", 300, 400}}));
}

// load: its stages alone combined as the pipelined pass, the busy times pooled,
// the Stages line's figures recomputed from the combined bytes and times.
ds::CaseResult load_part(uint64_t bytes, std::vector<int64_t> piped, std::vector<int64_t> disk,
                         std::vector<int64_t> copy, std::vector<int64_t> busy) {
  ds::CaseResult r = part(bytes, piped);
  r.name = "load";
  ds::LoadStages st;
  st.disk_alone = {"DiskAlone", ds::compute_stats(disk), disk};
  st.copy_alone = {"CopyAlone", ds::compute_stats(copy), copy};
  st.io_busy_samples = st.copy_busy_samples = busy;
  st.io_busy = st.copy_busy = ds::compute_stats(busy);
  st.set_figures(r);
  r.extras.put(st);
  return r;
}

TEST(AcrossRanks, LoadStagesAreCombinedAsThePipelinedPass) {
  const uint64_t gib = 1ULL << 30;
  // Rank a: 1 GiB, pipelined 1 s; rank b: 2 GiB. Per round the slowest.
  const ds::CaseResult a = load_part(gib, {1000000000, 1000000000}, {900000000, 500000000}, {400000000, 400000000}, {7, 9}),
                       b = load_part(2 * gib, {500000000, 2000000000}, {300000000, 1500000000}, {800000000, 200000000}, {5});
  const ds::CaseResult agg = ds::combine_results({&a, &b}, false);
  ASSERT_NE(agg.extras.get<ds::LoadStages>(), nullptr);
  const ds::LoadStages& s = *agg.extras.get<ds::LoadStages>();
  EXPECT_EQ(s.disk_alone.samples, (std::vector<int64_t>{900000000, 1500000000}));
  EXPECT_EQ(s.copy_alone.samples, (std::vector<int64_t>{800000000, 400000000}));
  EXPECT_DOUBLE_EQ(s.disk_gib_s, 3.0 / 1.2);  // 3 GiB over the avg of 0.9 s and 1.5 s
  EXPECT_DOUBLE_EQ(s.copy_gib_s, 3.0 / 0.6);
  EXPECT_DOUBLE_EQ(s.pipelined_gib_s, 3.0 / 1.5);  // rounds of 1 s and 2 s
  EXPECT_DOUBLE_EQ(s.percent_of_slower, 100.0 * 2.0 / 2.5);
  EXPECT_EQ(s.bottleneck, "neither (overlap lost)");  // 80% of the disk alone
  EXPECT_EQ(s.io_busy_samples, (std::vector<int64_t>{7, 9, 5}));
  EXPECT_EQ(s.io_busy.samples, 3u);
  EXPECT_EQ(s.io_busy.max, 9);
  EXPECT_EQ(s.copy_busy.min, 5);
}

// A part of the result only some ranks have is a mismatch, not a silent drop.
TEST(AcrossRanks, AnExtraOnlySomeRanksHaveIsAMismatch) {
  const ds::CaseResult a = load_part(4096, {1, 2}, {1, 2}, {1, 2}, {1});
  ds::CaseResult b = a;
  b.extras.clear();
  EXPECT_THROW(ds::combine_results({&a, &b}, false), ds::RunError);
  EXPECT_THROW(ds::combine_results({&b, &a}, false), ds::RunError);
}

// aio: the disk counters. Ranks on one node read the same disk's counters between
// the same barriers: one line per disk and direction, its bytes the most any rank
// saw (never the sum: the disk counted every rank's I/O once), its expected bytes
// every rank's. Across nodes each node's lines stay, named by node.
ds::CaseResult aio_part(uint64_t seen_written, uint64_t seen_read, std::vector<double> workers) {
  ds::CaseResult r = part(4096 * 4, {100, 200});
  r.name = "aio_mixed";
  ds::AioResult a;
  a.both_ways = true;
  a.device_io = {{"vda", "", seen_written, 1000, "written"},
                 {"vda", "", seen_read, 3000, "read"},
                 {"", "no block device under tmpfs", 0, 500, "read"}};
  a.worker_gib_s = std::move(workers);
  r.extras.put(a);
  return r;
}

TEST(AcrossRanks, OneNodesDiskHasTheMostBytesAndEveryRanksExpected) {
  const ds::CaseResult a = aio_part(1900, 5000, {1.0, 2.0}), b = aio_part(2000, 6000, {3.0});
  const ds::CaseResult node = ds::combine_results({&a, &b}, true);
  const ds::AioResult* io = node.extras.get<ds::AioResult>();
  ASSERT_NE(io, nullptr);
  ASSERT_EQ(io->device_io.size(), 4u);  // vda written, vda read, each rank's not-found line
  EXPECT_EQ(io->device_io[0].device, "vda");
  EXPECT_EQ(io->device_io[0].direction, "written");
  EXPECT_EQ(io->device_io[0].bytes, 2000u);
  EXPECT_EQ(io->device_io[0].expected, 2000u);
  EXPECT_EQ(io->device_io[1].direction, "read");
  EXPECT_EQ(io->device_io[1].bytes, 6000u);
  EXPECT_EQ(io->device_io[1].expected, 6000u);
  EXPECT_EQ(io->device_io[2].why, "no block device under tmpfs");
  EXPECT_EQ(io->device_io[3].expected, 500u);
  EXPECT_TRUE(io->both_ways);
  EXPECT_EQ(io->worker_gib_s, (std::vector<double>{1.0, 2.0, 3.0}));  // every rank's workers, in rank order
  // Not one node: each rank's disk is its own, every line kept.
  const ds::CaseResult apart = ds::combine_results({&a, &b}, false);
  ASSERT_EQ(apart.extras.get<ds::AioResult>()->device_io.size(), 6u);
  EXPECT_EQ(apart.extras.get<ds::AioResult>()->device_io[3].bytes, 2000u);
}

TEST(AcrossRanks, AcrossNodesEachDiskIsNamedByItsNode) {
  const ds::CaseResult a = aio_part(1000, 3000, {}), b = aio_part(900, 2900, {});
  ds::CombineScope nodes;
  nodes.nodes = {"n1", "n2"};
  const ds::CaseResult agg = ds::combine_results({&a, &b}, nodes);
  const ds::AioResult* io = agg.extras.get<ds::AioResult>();
  ASSERT_NE(io, nullptr);
  ASSERT_EQ(io->device_io.size(), 6u);
  EXPECT_EQ(io->device_io[0].device, "n1:vda");
  EXPECT_EQ(io->device_io[1].device, "n1:vda");
  EXPECT_EQ(io->device_io[2].device, "");  // a disk not found stays unnamed
  EXPECT_EQ(io->device_io[3].device, "n2:vda");
  EXPECT_EQ(io->device_io[3].bytes, 900u);
  // The parts themselves keep their names (each node's own line shows them).
  EXPECT_EQ(a.extras.get<ds::AioResult>()->device_io[0].device, "vda");
  // The common fields: bytes summed, each iteration the slowest.
  EXPECT_EQ(agg.bytes, 2u * 4096 * 4);
  EXPECT_EQ(agg.stages[0].samples, (std::vector<int64_t>{100, 200}));
}

TEST(AcrossRanks, ReportsRoundTrip) {
  ds::RankReport r;
  r.rank = 2;
  r.node = "n2";
  r.code = 1;
  r.error = "disk full";
  r.results = {part(8192, {5, 7}), aio_part(1, 2, {4.5})};
  ds::register_aio_result();
  const ds::RankReport back = ds::decode_report(ds::encode_report(r));
  EXPECT_EQ(back.rank, 2);
  EXPECT_EQ(back.node, "n2");
  EXPECT_EQ(back.error, "disk full");
  ASSERT_EQ(back.results.size(), 2u);
  EXPECT_EQ(back.results[0].stages[0].samples, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(back.results[0].bytes, 8192u);
  ASSERT_NE(back.results[1].extras.get<ds::AioResult>(), nullptr);
  EXPECT_EQ(back.results[1].extras.get<ds::AioResult>()->worker_gib_s, (std::vector<double>{4.5}));
}

}  // namespace
