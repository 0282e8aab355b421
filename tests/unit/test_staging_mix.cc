// load --offload-ratio's pure parts: the verdict rule (which shared resource fell
// short), the offload side's sizes from the ratio, the Mix line's figures and text
// from the stages, and the extra's codec and combination across ranks.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "output/result_extra.h"
#include "output/text_writer.h"
#include "staging/mix_measure.h"
#include "staging/mix_stages.h"
#include "staging/staged_stages.h"

namespace ds {
namespace {

// a, b: alone; c, d: together; then the CPU share and the two stretches.
MixVerdictInput in(double a, double b, double c, double d, double cpu, double disk, double copy) {
  return {a, b, c, d, cpu, disk, copy};
}

TEST(MixVerdict, NothingShortWhileEachDirectionKeepsNinetyPercent) {
  EXPECT_EQ(mix_verdict(in(10, 4, 9, 3.6, 0.99, 3, 1)), "none");  // exactly 90% each: kept, whatever else
  EXPECT_EQ(mix_verdict(in(10, 4, 10, 4, 0, 0, 0)), "none");
  EXPECT_NE(mix_verdict(in(10, 4, 8.99, 4, 0, 1, 1)), "none");  // load under 90%
  EXPECT_NE(mix_verdict(in(10, 4, 10, 3.59, 0, 1, 1)), "none");  // offload under 90%
}

TEST(MixVerdict, HostCpusBeforeTheStagesWhenTheirTimeIsFull) {
  EXPECT_EQ(mix_verdict(in(10, 4, 5, 2, 0.90, 3, 1)), "host CPUs");
  EXPECT_EQ(mix_verdict(in(10, 4, 5, 2, 0.89, 3, 1)), "disk");
}

TEST(MixVerdict, ElseTheStageWhoseBusyTimeGrewMore) {
  EXPECT_EQ(mix_verdict(in(10, 4, 5, 2, 0.2, 1.8, 1.1)), "disk");
  EXPECT_EQ(mix_verdict(in(10, 4, 5, 2, 0.2, 1.1, 1.8)), "copy");
  EXPECT_EQ(mix_verdict(in(10, 4, 5, 2, 0.2, 1.5, 1.5)), "disk");  // a tie: disk
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
  EXPECT_DOUBLE_EQ(m.disk_stretch, 2.0);
  EXPECT_DOUBLE_EQ(m.copy_stretch, 1.25);
  EXPECT_DOUBLE_EQ(m.cpu_share, 0.125);
  EXPECT_EQ(m.short_of, "disk");
  EXPECT_EQ(format_mix_line(m),
            "  Mix: load alone 2.000 GiB/s, offload alone 1.000, together load 1.000 + offload 1.000 = 1.500 GiB/s "
            "(50.0% of a + b); short: disk\n");
  const std::string block = m.block_lines(r);
  EXPECT_NE(block.find("  Load: Size(KB)=1024 Count=1024  IO+Copy(us)-(Min/Max/Avg/P50/P90)="), std::string::npos)
      << block;
  EXPECT_NE(block.find("  Busy: disk 2.00x its time alone, copy 1.25x, host CPUs 12% of 4 over the together pass\n"),
            std::string::npos)
      << block;
  m.cpu = stage("Cpu", {3600000000});  // 3.6 s of CPU in 1 s on 4 CPUs: 90%
  m.set_figures(r);
  EXPECT_EQ(m.short_of, "host CPUs");
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
  EXPECT_EQ(c->short_of, "host CPUs");
  EXPECT_EQ(c->load.io_busy_together.samples.size(), 4u);
}

}  // namespace
}  // namespace ds
