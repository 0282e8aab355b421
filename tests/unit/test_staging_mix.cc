// load --offload-ratio's pure parts: the verdict rule (which shared resource fell
// short), the offload side's sizes from the ratio, the Mix line's figures and text
// from the stages, and the extra's codec and combination across ranks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "layout/block_table.h"
#include "output/result_extra.h"
#include "output/text_writer.h"
#include "staging/mix_measure.h"
#include "staging/mix_stages.h"
#include "staging/staged_stages.h"

namespace ds {
namespace {

// Each direction's speed over the overlap as a fraction of its alone speed; then the
// CPU share and the two stretches, all over the overlap.
MixVerdictInput in(double load_kept, double offload_kept, double cpu, double disk, double copy) {
  return {load_kept, offload_kept, cpu, disk, copy};
}

TEST(MixVerdict, NothingShortWhileEachDirectionKeepsNinetyPercent) {
  EXPECT_EQ(mix_verdict(in(0.9, 0.9, 0.99, 3, 1)), "none");  // exactly 90% each: kept, whatever else
  EXPECT_EQ(mix_verdict(in(1, 1, 0, 0, 0)), "none");
  EXPECT_NE(mix_verdict(in(0.899, 1, 0, 1, 1)), "none");  // load under 90%
  EXPECT_NE(mix_verdict(in(1, 0.8975, 0, 1, 1)), "none");  // offload under 90%
}

TEST(MixVerdict, HostCpusBeforeTheStagesWhenTheirTimeIsFull) {
  EXPECT_EQ(mix_verdict(in(0.5, 0.5, 0.90, 3, 1)), "host CPUs");
  EXPECT_EQ(mix_verdict(in(0.5, 0.5, 0.89, 3, 1)), "disk");
}

TEST(MixVerdict, ElseTheStageWhoseBusyTimeGrewMore) {
  EXPECT_EQ(mix_verdict(in(0.5, 0.5, 0.2, 1.8, 1.1)), "disk");
  EXPECT_EQ(mix_verdict(in(0.5, 0.5, 0.2, 1.1, 1.8)), "copy");
  EXPECT_EQ(mix_verdict(in(0.5, 0.5, 0.2, 1.5, 1.5)), "disk");  // a tie: disk
}

StagedParams load_params(uint64_t blocks, uint64_t tasks_per_file = 1) {
  StagedParams p;
  p.layout = Layout::block({64 * 1024, 16 * 1024}, blocks * tasks_per_file);
  p.tasks_per_file = tasks_per_file;
  p.shared = true;
  return p;
}

TEST(MixOffloadParams, RTimesTheBlocksOfTheSameShapeEachCardItsOwn) {
  std::string note;
  const StagedParams o = mix_offload_params(load_params(16, 4), 0.5, &note);
  EXPECT_EQ(o.files(), 8u);
  EXPECT_EQ(o.tasks_per_file, 4u);
  EXPECT_EQ(o.file_bytes(), load_params(16, 4).file_bytes());
  EXPECT_TRUE(o.layout.per_fragment_regions());
  EXPECT_EQ(o.layout.task_fragments(), (std::vector<uint64_t>{64 * 1024, 16 * 1024}));
  EXPECT_FALSE(o.shared);
  EXPECT_EQ(note, "");  // a whole number of blocks: nothing to say
  StagedParams u;
  u.layout = Layout::uniform(16384, 10, 2);
  const StagedParams ou = mix_offload_params(u, 3, nullptr);
  EXPECT_EQ(ou.layout.tasks(), 30u);
  EXPECT_EQ(ou.layout.frags_option(), 2);
  EXPECT_EQ(ou.layout.bytes(), 3 * u.layout.bytes());
}

TEST(MixOffloadParams, RoundsToWholeBlocksAndSaysSo) {
  std::string note;
  EXPECT_EQ(mix_offload_params(load_params(10), 0.33, &note).files(), 3u);
  EXPECT_EQ(note, "--offload-ratio 0.33: 0.33 x 10 blocks = 3.3, offloading 3 blocks (ratio 0.3)");
  EXPECT_EQ(mix_offload_params(load_params(10), 0.01, &note).files(), 1u);  // at least one
  EXPECT_EQ(note, "--offload-ratio 0.01: 0.01 x 10 blocks = 0.1, offloading 1 block (ratio 0.1)");
}

// With a table: the offload side's of the same kind for its own blocks, in a pool
// scaled by them (ceil), at least its blocks; random's seed one past the load's.
TEST(MixOffloadParams, TheOffloadSideGetsATableOfItsOwn) {
  EXPECT_EQ(mix_offload_pool(40, 10, 10), 40u);
  EXPECT_EQ(mix_offload_pool(10, 4, 6), 15u);   // 10 x 6 / 4 = 15
  EXPECT_EQ(mix_offload_pool(5, 4, 1), 2u);     // 1.25 up
  EXPECT_EQ(mix_offload_pool(4, 4, 1), 1u);
  EXPECT_EQ(mix_offload_pool(7, 3, 192), 448u);  // 7 x 64
  EXPECT_EQ(mix_offload_pool(uint64_t{1} << 40, 3, 192), uint64_t{1} << 46) << "no 64-bit product on the way";
  StagedParams p = load_params(4);
  p.table = make_block_table("random:7", 4, 10);
  const StagedParams o = mix_offload_params(p, 1.5, nullptr);
  EXPECT_EQ(o.table.label, "random:8");
  EXPECT_EQ(o.table.pool, 15u);
  EXPECT_EQ(o.table.slots, make_block_table("random:8", 6, 15).slots);
  EXPECT_EQ(o.device_layout().region_bytes(), 15u * (64 + 16) * 1024) << "its whole pool";
  p.table = make_block_table("sequential", 4, 0);
  const StagedParams s = mix_offload_params(p, 0.5, nullptr);
  EXPECT_EQ(s.table.label, "sequential");
  EXPECT_EQ(s.table.pool, 8u);
  EXPECT_EQ(s.table.slots, (std::vector<uint64_t>{0, 1}));
}

TEST(MixOffloadParams, OutOfRangeIsAUsageError) {
  for (double r : {0.0, -1.0, 64.5}) {
    try {
      mix_offload_params(load_params(4), r, nullptr);
      ADD_FAILURE() << r;
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("accepts a number above 0 and at most 64"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(mix_offload_params(load_params(4), 64, nullptr).files(), 256u);
}

// What a card holds for both sides: each side's KV region on the card, with a block
// table the whole paged pool (Layout::region_bytes()), not the request's bytes.
TEST(MixDeviceBytes, EachSidesRegionOnTheCard) {
  StagedParams load = load_params(4);
  StagedParams off = mix_offload_params(load, 0.5, nullptr);
  EXPECT_EQ(mix_device_bytes(load, off), load.layout.bytes() + off.layout.bytes());
  load.table = make_block_table("sequential", 4, 32);  // a pool of 32 blocks' slots
  off.table = make_block_table("sequential", 2, 16);
  ASSERT_TRUE(load.device_layout().is_paged());
  EXPECT_EQ(load.device_layout().region_bytes(), 32 * load.layout.task_bytes());
  EXPECT_EQ(mix_device_bytes(load, off), 32 * load.layout.task_bytes() + 16 * off.layout.task_bytes());
}

Stage stage(const std::string& name, std::vector<int64_t> ns) {
  Stage s;
  s.name = name;
  s.samples = ns;
  s.ns = compute_stats(std::move(ns));
  return s;
}

// 1 GiB per direction-second figures: load 1 GiB, offload 0.5 GiB per round.
MixStages sample_mix() {
  MixStages m;
  m.load.bytes = 1ULL << 30;
  m.load.block_bytes = 1 << 20;
  m.load.count = 1024;
  m.offload.bytes = 1ULL << 29;
  m.offload.block_bytes = 1 << 20;
  m.offload.count = 512;
  m.load.alone = stage("Alone", {500000000});         // 2 GiB/s
  m.load.together = stage("Together", {1000000000});  // 1 GiB/s
  m.offload.alone = stage("Alone", {500000000});      // 1 GiB/s
  m.offload.together = stage("Together", {500000000});
  m.load.io_busy_alone = stage("IoBusyAlone", {400, 400});
  m.load.io_busy_together = stage("IoBusy", {900, 900});
  m.offload.io_busy_alone = stage("IoBusyAlone", {100, 100});
  m.offload.io_busy_together = stage("IoBusy", {100, 100});  // disk: 1000 / 500 = 2x
  m.load.copy_busy_alone = stage("CopyBusyAlone", {300, 300});
  m.load.copy_busy_together = stage("CopyBusy", {300, 300});
  m.offload.copy_busy_alone = stage("CopyBusyAlone", {100, 100});
  m.offload.copy_busy_together = stage("CopyBusy", {200, 200});  // copy: 500 / 400 = 1.25x
  m.cpu = stage("Cpu", {500000000});  // 0.5 s of CPU in a 1 s pass on 4 CPUs: 12.5%
  m.cpus = 4;
  // Both ran for the offload's 0.5 s: 0.4 s of CPU in it on 4 CPUs, 20%.
  m.overlap = stage("Overlap", {500000000});
  m.cpu_overlap = stage("CpuOverlap", {400000000});
  // In the overlap the load's work is none (1 - (1 - 0.5) / 0.5), the offload's all.
  m.load.io_busy_overlap = stage("IoBusyOverlap", {500, 500});
  m.offload.io_busy_overlap = stage("IoBusyOverlap", {100, 100});  // disk: 600 / (400 x 0 + 100 x 1) = 6x
  m.load.copy_busy_overlap = stage("CopyBusyOverlap", {50, 50});
  m.offload.copy_busy_overlap = stage("CopyBusyOverlap", {200, 200});  // copy: 250 / 100 = 2.5x
  m.ratio_asked = m.ratio = 0.5;
  return m;
}

CaseResult together_result() {
  CaseResult r;
  r.name = "load+offload";
  r.measured = "IO+Copy";
  r.bytes = (1ULL << 30) + (1ULL << 29);
  r.stages = {stage("Submit", {1000}), stage("IO+Copy", {1000000000}), stage("Wall", {1000000000}),
              stage("StartSkew", {0})};
  return r;
}

TEST(MixStagesFigures, LineAndVerdictFromTheStages) {
  const CaseResult r = together_result();
  MixStages m = sample_mix();
  m.set_figures(r);
  EXPECT_DOUBLE_EQ(m.load.alone_gib_s, 2.0);
  EXPECT_DOUBLE_EQ(m.load.gib_s, 1.0);
  EXPECT_DOUBLE_EQ(m.offload.alone_gib_s, 1.0);
  EXPECT_DOUBLE_EQ(m.offload.gib_s, 1.0);
  EXPECT_DOUBLE_EQ(m.together_gib_s, 1.5);
  EXPECT_DOUBLE_EQ(m.percent_of_alone, 50.0);
  // Both alone passes 0.5 s: the perfect overlap 1.5 GiB in 0.5 s.
  EXPECT_DOUBLE_EQ(m.perfect_overlap_gib_s, 3.0);
  EXPECT_DOUBLE_EQ(m.percent_of_perfect_overlap, 50.0);
  // Over the whole together pass, as before.
  EXPECT_DOUBLE_EQ(m.disk_stretch, 2.0);
  EXPECT_DOUBLE_EQ(m.copy_stretch, 1.25);
  EXPECT_DOUBLE_EQ(m.cpu_share, 0.125);
  // Over the overlap: the verdict's.
  EXPECT_DOUBLE_EQ(m.load.kept, 0.0);
  EXPECT_DOUBLE_EQ(m.offload.kept, 1.0);
  EXPECT_DOUBLE_EQ(m.load.work_in_overlap, 0.0);
  EXPECT_DOUBLE_EQ(m.offload.work_in_overlap, 1.0);
  EXPECT_DOUBLE_EQ(m.overlap_disk_stretch, 6.0);
  EXPECT_DOUBLE_EQ(m.overlap_copy_stretch, 2.5);
  EXPECT_DOUBLE_EQ(m.overlap_cpu_share, 0.2);
  EXPECT_EQ(m.short_of, "disk");
  EXPECT_EQ(format_mix_line(m),
            "  Mix: load alone 2.000 GiB/s, offload alone 1.000, together load 1.000 + offload 1.000 = 1.500 GiB/s "
            "(50.0% of perfect overlap); short: disk\n");
  const std::string block = m.block_lines(r);
  EXPECT_NE(block.find("  Load: Size(KB)=1024 Count=1024  IO+Copy(us)-(Min/Max/Avg/P50/P90)="), std::string::npos)
      << block;
  EXPECT_NE(block.find("  Busy: disk 6.00x its time alone, copy 2.50x, host CPUs 20% of 4 (affinity) while both ran (500.000 of "
                       "1000.000 ms)\n"),
            std::string::npos)
      << block;
  m.cpu_overlap = stage("CpuOverlap", {1800000000});  // 1.8 s of CPU in 0.5 s on 4 CPUs: 90%
  m.set_figures(r);
  EXPECT_EQ(m.short_of, "host CPUs");
  m.cpu = stage("Cpu", {3600000000});  // over the whole pass alone: 90%, the verdict's share is the overlap's
  m.cpu_overlap = stage("CpuOverlap", {1000000000});
  m.set_figures(r);
  EXPECT_EQ(m.short_of, "disk");
}

// The transfer loops' own CPU time is not the host's CPUs falling short: on a card
// each pipeline's loop spins looking for its copies' completions (a CPU each). Two
// loops spinning through the 0.5 s overlap (1 s of CPU) and 0.85 s of other work on
// 4 CPUs: 0.85 of the 1 s the loops left, 85%, not 92.5% of all of it.
TEST(MixStagesFigures, TheLoopsOwnCpuTimeIsLeftOutOfTheShare) {
  const CaseResult r = together_result();
  MixStages m = sample_mix();
  m.cpu_overlap = stage("CpuOverlap", {1850000000});
  m.loop_cpu_overlap = stage("LoopCpuOverlap", {1000000000});
  m.cpu = stage("Cpu", {2000000000});
  m.loop_cpu = stage("LoopCpu", {1500000000});  // over the 1 s pass: 0.5 of the 2.5 s left, 20%
  m.set_figures(r);
  EXPECT_DOUBLE_EQ(m.overlap_cpu_share, 0.85);
  EXPECT_DOUBLE_EQ(m.cpu_share, 0.2);
  EXPECT_EQ(m.short_of, "disk");
  // The others filling what the loops left: the host's CPUs.
  m.cpu_overlap = stage("CpuOverlap", {1950000000});
  m.set_figures(r);
  EXPECT_DOUBLE_EQ(m.overlap_cpu_share, 0.95);
  EXPECT_EQ(m.short_of, "host CPUs");
}

TEST(MixStagesFigures, CpuShareEdges) {
  EXPECT_DOUBLE_EQ(mix_cpu_share(2e9, 0, 1e9, 4), 0.5);
  EXPECT_DOUBLE_EQ(mix_cpu_share(3e9, 1e9, 1e9, 4), 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(mix_cpu_share(1e9, 1e9, 1e9, 4), 0.0);  // only the loops ran
  EXPECT_DOUBLE_EQ(mix_cpu_share(5e9, 4e9, 1e9, 4), 1.0);  // the loops left nothing, others ran
  EXPECT_DOUBLE_EQ(mix_cpu_share(1e9, 0, 0, 4), 0.0);
  EXPECT_DOUBLE_EQ(mix_cpu_share(0.75e9, 0, 0.5e9, 1.5), 1.0);  // a quota of 1.5 CPUs, used whole
}

// A container's quota of 1.5 CPUs on a larger host: the share over 1.5 (not the 2
// it rounds up to, nor the host's CPUs), and the Busy line says which bound applied.
TEST(MixStagesFigures, AFractionalQuotaIsTheShareBound) {
  const CaseResult r = together_result();
  MixStages m = sample_mix();
  m.cpus = 1.5;
  m.cpus_bound = "cgroup quota";
  m.cpu_overlap = stage("CpuOverlap", {700000000});  // 0.7 s in 0.5 s on 1.5: 93%; on 2: 70%
  m.set_figures(r);
  EXPECT_NEAR(m.overlap_cpu_share, 0.7 / 0.75, 1e-12);
  EXPECT_EQ(m.short_of, "host CPUs");
  EXPECT_NE(m.block_lines(r).find("host CPUs 93% of 1.5 (cgroup quota) while both ran"), std::string::npos)
      << m.block_lines(r);
  // And through the wire (ranks), the bound and the exact count stay.
  register_staged_results();
  const auto back = decode_extra(MixStages::kKey, m.encode());
  const auto* b = dynamic_cast<const MixStages*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_DOUBLE_EQ(b->cpus, 1.5);
  EXPECT_EQ(b->cpus_bound, "cgroup quota");
  EXPECT_DOUBLE_EQ(b->loop_cpu_overlap.ns.avg, m.loop_cpu_overlap.ns.avg);
}

// The CPU time over the overlap is read from the later side's loop start (the
// overlap's start), not the pass's: the load starts at 100 (process CPU 10 then),
// the offload at 300 (CPU 50), the load ends first at 1000 (CPU 200): 150 of CPU in
// an overlap of 700.
// The load from 100 (process CPU 10, loops 1), the offload from 300 (50, 5), the
// load ending first with the CPU marks `at_end`.
void load_ends_first(MixSideRun& l, MixSideRun& o, MixCpuMark at_end) {
  l.ran = o.ran = true;
  l.start_ns = 100;
  l.at_start = {10, 1};
  o.start_ns = 300;
  o.at_start = {50, 5};
  l.ended_first = true;
  l.at_first_end = at_end;
}

TEST(MixStagesFigures, OverlapCpuIsReadFromTheOverlapsStart) {
  MixSideRun l, o;
  load_ends_first(l, o, {200, 20});
  MixOverlapCpu c = mix_overlap_cpu(l, o, 1000);
  EXPECT_EQ(c.overlap_ns, 700);
  EXPECT_EQ(c.cpu_ns, 150);
  EXPECT_EQ(c.loop_cpu_ns, 15);
  // The other way round: the offload ends first, the load started later.
  std::swap(l.start_ns, o.start_ns);
  l.at_start = {50, 5};
  o.at_start = {10, 1};
  l.ended_first = false;
  o.ended_first = true;
  o.at_first_end = {260, 30};
  c = mix_overlap_cpu(l, o, 900);
  EXPECT_EQ(c.overlap_ns, 600);
  EXPECT_EQ(c.cpu_ns, 210);
  EXPECT_EQ(c.loop_cpu_ns, 25);
  // Alone: its own pass.
  MixSideRun none;
  c = mix_overlap_cpu(none, o, 900);
  EXPECT_EQ(c.overlap_ns, 800);
  EXPECT_EQ(c.cpu_ns, 250);
}

// The other side's loop thread, still running at the first end, is read current by
// its own clock while the process clock has counted it only to its last update: the
// loops' CPU over the overlap is never more than the process's (CI once read 65 us of
// loops against 60 us of process).
TEST(MixStagesFigures, OverlapLoopCpuIsCappedAtTheProcess) {
  MixSideRun l, o;
  load_ends_first(l, o, {110, 70});  // 60 of process CPU, 65 of the loops'
  const MixOverlapCpu c = mix_overlap_cpu(l, o, 1000);
  EXPECT_EQ(c.cpu_ns, 60);
  EXPECT_EQ(c.loop_cpu_ns, 60);
}

// --offload-ratio 0.25: the load alone 1 s (1 GiB), the offload alone 0.25 s (0.25
// GiB); together the offload takes 0.26 s and the load 1.05 s. Summing the alone
// speeds (2 GiB/s) no overlap could reach: even a perfect one gives 1.25 GiB in 1 s.
// Over the whole pass each direction kept >= 95% of its alone speed ("none" by the
// whole pass); over the 0.26 s overlap the load kept 1 - 0.05 / 0.26 = 81%: it fell
// short while the offload ran.
TEST(MixStagesFigures, UnequalDirectionsAgainstThePerfectOverlapAndJudgedOverTheOverlap) {
  MixStages m;
  m.load.bytes = 1ULL << 30;
  m.offload.bytes = 1ULL << 28;
  m.load.alone = stage("Alone", {1000000000});
  m.load.together = stage("Together", {1050000000});
  m.offload.alone = stage("Alone", {250000000});
  m.offload.together = stage("Together", {260000000});
  m.overlap = stage("Overlap", {260000000});
  m.cpu = stage("Cpu", {0});
  m.cpu_overlap = stage("CpuOverlap", {0});
  for (MixDirection* d : {&m.load, &m.offload}) {
    d->io_busy_alone = d->io_busy_together = d->io_busy_overlap = stage("Io", {100});
    d->copy_busy_alone = d->copy_busy_together = d->copy_busy_overlap = stage("Copy", {100});
  }
  m.load.io_busy_overlap = stage("IoBusyOverlap", {200});  // the disk grew, the copy did not
  CaseResult r = together_result();
  r.bytes = m.load.bytes + m.offload.bytes;
  r.stages[1] = stage("IO+Copy", {1050000000});
  m.set_figures(r);
  EXPECT_NEAR(m.perfect_overlap_gib_s, 1.25, 1e-12);
  EXPECT_NEAR(m.percent_of_perfect_overlap, 100.0 / 1.05, 1e-9);  // together 1.05 s, perfect 1 s
  EXPECT_NEAR(m.percent_of_alone, 100.0 * (1.25 / 1.05) / 2.0, 1e-9);
  EXPECT_GE(m.load.gib_s, 0.95 * m.load.alone_gib_s);  // the whole pass: kept
  EXPECT_NEAR(m.load.kept, 1.0 - 0.05 / 0.26, 1e-12);
  EXPECT_NEAR(m.offload.kept, 0.25 / 0.26, 1e-12);
  EXPECT_NEAR(m.load.work_in_overlap, 0.21, 1e-12);  // 1 - (1.05 - 0.26) / 1
  EXPECT_NEAR(m.offload.work_in_overlap, 1.0, 1e-12);
  EXPECT_NEAR(m.overlap_disk_stretch, 300.0 / 121.0, 1e-12);
  EXPECT_NEAR(m.overlap_copy_stretch, 200.0 / 121.0, 1e-12);
  EXPECT_EQ(m.short_of, "disk");
  EXPECT_EQ(format_mix_line(m),
            "  Mix: load alone 1.000 GiB/s, offload alone 1.000, together load 0.952 + offload 0.962 = 1.190 GiB/s "
            "(95.2% of perfect overlap); short: disk\n");
}

TEST(MixStagesCodec, RoundTripsAndCombinesAcrossRanks) {
  register_staged_results();
  const CaseResult r = together_result();
  MixStages m = sample_mix();
  m.set_figures(r);
  const auto back = decode_extra(MixStages::kKey, m.encode());
  ASSERT_NE(dynamic_cast<const MixStages*>(back.get()), nullptr);
  EXPECT_EQ(back->encode().dump(), m.encode().dump());
  Json a, b;
  m.add_json(a, r);
  back->add_json(b, r);
  EXPECT_EQ(a.dump(), b.dump());
  // Two ranks: bytes summed, the CPU share the busier rank's.
  MixStages other = sample_mix();
  other.cpu = stage("Cpu", {3800000000});
  other.cpu_overlap = stage("CpuOverlap", {1900000000});  // 95% of 4 CPUs over the 0.5 s overlap
  other.set_figures(r);
  CaseResult both = r;
  both.bytes *= 2;
  const auto combined = m.combine({&m, &other}, CombineScope{}, both);
  const auto* c = dynamic_cast<const MixStages*>(combined.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->load.bytes, 2ULL << 30);
  EXPECT_EQ(c->offload.count, 1024u);
  EXPECT_DOUBLE_EQ(c->load.alone_gib_s, 4.0);
  EXPECT_DOUBLE_EQ(c->cpu_share, other.cpu_share);
  EXPECT_DOUBLE_EQ(c->overlap_cpu_share, other.overlap_cpu_share);
  EXPECT_EQ(c->short_of, "host CPUs");
  EXPECT_EQ(c->load.io_busy_together.samples.size(), 4u);
  EXPECT_EQ(c->load.io_busy_overlap.samples.size(), 4u);
  EXPECT_EQ(c->overlap.samples.size(), 1u);  // per round, the slowest rank's
  EXPECT_DOUBLE_EQ(c->percent_of_perfect_overlap, 50.0);  // both ranks' bytes over the same passes
}

}  // namespace
}  // namespace ds
