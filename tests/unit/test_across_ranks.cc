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

#include "cluster/across_ranks.h"
#include "cluster/cluster.h"
#include "core/clock.h"
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
  for (const Disk& d : disks) {
    ds::CaseResult::DeviceIo io;
    io.device = d.device;
    io.direction = d.direction;
    io.bytes = d.bytes;
    io.expected = d.expected;
    r.device_io.push_back(io);
  }
  return r;
}
std::vector<Disk> disks_of(const ds::CaseResult& r) {
  std::vector<Disk> out;
  for (const ds::CaseResult::DeviceIo& io : r.device_io) out.push_back({io.device, io.direction, io.bytes, io.expected});
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
  ds::CaseResult::LoadStages st;
  st.disk_alone = {"DiskAlone", ds::compute_stats(disk), disk};
  st.copy_alone = {"CopyAlone", ds::compute_stats(copy), copy};
  st.read_busy_samples = st.copy_busy_samples = busy;
  st.read_busy = st.copy_busy = ds::compute_stats(busy);
  r.load = st;
  r.set_load_figures();
  return r;
}

TEST(AcrossRanks, LoadStagesAreCombinedAsThePipelinedPass) {
  const uint64_t gib = 1ULL << 30;
  // Rank a: 1 GiB, pipelined 1 s; rank b: 2 GiB. Per round the slowest.
  const ds::CaseResult a = load_part(gib, {1000000000, 1000000000}, {900000000, 500000000}, {400000000, 400000000}, {7, 9}),
                       b = load_part(2 * gib, {500000000, 2000000000}, {300000000, 1500000000}, {800000000, 200000000}, {5});
  const ds::CaseResult agg = ds::combine_results({&a, &b}, false);
  ASSERT_TRUE(agg.load.has_value());
  const ds::CaseResult::LoadStages& s = *agg.load;
  EXPECT_EQ(s.disk_alone.samples, (std::vector<int64_t>{900000000, 1500000000}));
  EXPECT_EQ(s.copy_alone.samples, (std::vector<int64_t>{800000000, 400000000}));
  EXPECT_DOUBLE_EQ(s.disk_gib_s, 3.0 / 1.2);  // 3 GiB over the avg of 0.9 s and 1.5 s
  EXPECT_DOUBLE_EQ(s.copy_gib_s, 3.0 / 0.6);
  EXPECT_DOUBLE_EQ(s.pipelined_gib_s, 3.0 / 1.5);  // rounds of 1 s and 2 s
  EXPECT_DOUBLE_EQ(s.percent_of_slower, 100.0 * 2.0 / 2.5);
  EXPECT_EQ(s.bottleneck, "neither (overlap lost)");  // 80% of the disk alone
  EXPECT_EQ(s.read_busy_samples, (std::vector<int64_t>{7, 9, 5}));
  EXPECT_EQ(s.read_busy.samples, 3u);
  EXPECT_EQ(s.read_busy.max, 9);
  EXPECT_EQ(s.copy_busy.min, 5);
}

TEST(AcrossRanks, ReportsRoundTrip) {
  ds::RankReport r;
  r.rank = 2;
  r.node = "n2";
  r.code = 1;
  r.error = "disk full";
  r.results = {part(8192, {5, 7})};
  const ds::RankReport back = ds::decode_report(ds::encode_report(r));
  EXPECT_EQ(back.rank, 2);
  EXPECT_EQ(back.node, "n2");
  EXPECT_EQ(back.error, "disk full");
  ASSERT_EQ(back.results.size(), 1u);
  EXPECT_EQ(back.results[0].stages[0].samples, (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(back.results[0].bytes, 8192u);
}

}  // namespace
