#include <gtest/gtest.h>

#include "backends/sim/sim_backend.h"
#include "cases/catalog.h"
#include "core/error.h"
#include "copy_methods/initiator.h"
#include "cases/case_runner.h"
#include "core/units.h"
#include "measurement/measurement.h"

#include <algorithm>
#include <vector>

using namespace ds;

TEST(QuickMode, AllEightRows) {
  EXPECT_EQ(quick_mode_case("gqa", "false", "false"), "all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(quick_mode_case("gqa", "true", "false"), "all_odirect_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(quick_mode_case("gqa", "false", "true"), "all_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(quick_mode_case("gqa", "true", "true"), "all_odirect_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(quick_mode_case("mla", "false", "false"), "one_share_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(quick_mode_case("mla", "true", "false"), "one_share_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(quick_mode_case("mla", "false", "true"), "one_share_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(quick_mode_case("mla", "true", "true"), "one_share_host_to_all_device_ffts_direct_h2d");
}

TEST(QuickMode, RejectsOtherValues) {
  EXPECT_THROW(quick_mode_case("mha", "false", "false"), UsageError);
  EXPECT_THROW(quick_mode_case("gqa", "yes", "false"), UsageError);
  EXPECT_THROW(quick_mode_case("gqa", "false", "1"), UsageError);
  EXPECT_THROW(quick_mode_case("GQA", "false", "false"), UsageError);
}

TEST(Catalog, EveryQuickModeCaseExists) {
  for (const char* m : {"gqa", "mla"})
    for (const char* i : {"true", "false"})
      for (const char* s : {"true", "false"}) EXPECT_NE(find_case(quick_mode_case(m, i, s)), nullptr);
}

TEST(Catalog, SpecCasesAndSimSupport) {
  auto sim = make_sim_backend();
  const char* const sim_cases[] = {
      "host_to_device_ce", "host_to_device_batch_ce", "host_to_device_ce_multi_stream",
      "device_to_host_ce", "device_to_device_ce", "anonymous_to_device_ce",
      "one_host_to_all_device_ce", "all_host_to_all_device_ce", "one_device_to_all_device_ce",
      "all_host_to_all_device_ce_multi_stream", "all_odirect_host_to_all_device_ce_multi_stream",
      "one_share_host_to_all_device_ce_multi_stream", "all_host_to_all_device_ffts_direct_h2d",
      "all_odirect_host_to_all_device_ffts_direct_h2d", "one_share_host_to_all_device_ffts_direct_h2d",
      "host_to_anonymous_memcpy", "shm_to_all_host_memcpy", "device_to_host_batch_ce",
      "all_device_to_all_host_ce", "all_device_to_all_host_ce_multi_stream",
      "all_device_to_all_odirect_host_ce_multi_stream", "all_device_to_one_share_host_ce_multi_stream",
      "all_device_to_all_host_ffts_direct_d2h", "all_device_to_all_odirect_host_ffts_direct_d2h",
      "all_device_to_one_share_host_ffts_direct_d2h", "all_host_to_all_device_duplex_ce_multi_stream",
      "all_odirect_host_to_all_device_duplex_ce_multi_stream", "one_share_host_to_all_device_duplex_ce_multi_stream",
      "all_host_to_all_device_batch_ce", "all_device_to_all_host_batch_ce"};
  for (const char* n : sim_cases) {
    const CaseSpec* c = find_case(n);
    ASSERT_NE(c, nullptr) << n;
    EXPECT_EQ(unsupported_reason(*c, *sim), "") << n;
  }
  for (const char* n : {"host_to_device_sm", "device_to_host_sm", "host_to_device_sm_gather", "device_to_host_sm_gather",
                        "all_host_to_all_device_sm_gather", "all_device_to_all_host_sm_gather"}) {
    const CaseSpec* c = find_case(n);
    ASSERT_NE(c, nullptr) << n;
    EXPECT_EQ(unsupported_reason(*c, *sim), "SM copy kernels need the cuda backend") << n;
  }
  // The gather cases: one card, the gather kernel, one per direction.
  EXPECT_EQ(find_case("host_to_device_sm_gather")->method, CopyMethod::kKernelGather);
  EXPECT_EQ(direction(*find_case("host_to_device_sm_gather")), CopyDir::kH2D);
  EXPECT_EQ(direction(*find_case("device_to_host_sm_gather")), CopyDir::kD2H);
  EXPECT_EQ(find_case("device_to_host_sm_gather")->topology, Topology::kSingle);
  // Every card at once, each in its own process: the batched call and the gather kernel.
  for (const char* n : {"all_host_to_all_device_batch_ce", "all_device_to_all_host_batch_ce",
                        "all_host_to_all_device_sm_gather", "all_device_to_all_host_sm_gather"})
    EXPECT_EQ(find_case(n)->topology, Topology::kFork) << n;
  EXPECT_EQ(direction(*find_case("all_device_to_all_host_sm_gather")), CopyDir::kD2H);
  EXPECT_EQ(copy_cases().size(), 36u);
  // The duplex cases: their H2D direction is the spec's; the only ones marked duplex,
  // each named ..._duplex_...
  size_t duplex = 0;
  for (const CaseSpec& c : copy_cases()) {
    EXPECT_EQ(c.duplex, c.name.find("_duplex_") != std::string::npos) << c.name;
    if (!c.duplex) continue;
    ++duplex;
    EXPECT_EQ(direction(c), CopyDir::kH2D) << c.name;
    EXPECT_EQ(c.method, CopyMethod::kCeMultiStream) << c.name;
    EXPECT_FALSE(c.shared_dst) << c.name;  // the device side is every card's own
  }
  EXPECT_EQ(duplex, 3u);
  EXPECT_EQ(find_case("one_share_host_to_all_device_duplex_ce_multi_stream")->src, BufKind::kShm);
  EXPECT_EQ(find_case("all_odirect_host_to_all_device_duplex_ce_multi_stream")->src, BufKind::kOdirect);
}

TEST(Catalog, LabelsAndMethods) {
  auto sim = make_sim_backend();
  const CaseSpec* gqa = find_case("all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(from_label(*gqa, *sim), "sim::host::all");
  EXPECT_EQ(to_label(*gqa, *sim), "sim::device::all");
  EXPECT_EQ(method_name(*gqa, *sim), "CE-MS-FORK");
  const CaseSpec* mla = find_case("one_share_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(from_label(*mla, *sim), "sim::shm::0");
  EXPECT_EQ(method_name(*mla, *sim), "SDMA-FORK");
  const CaseSpec* od = find_case("all_odirect_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(from_label(*od, *sim), "sim::odirect_mmap::all");
  const CaseSpec* mapped = find_case("all_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(from_label(*mapped, *sim), "sim::host_mapped::all");
  const CaseSpec* single = find_case("host_to_device_ce");
  EXPECT_EQ(from_label(*single, *sim), "sim::host::0");
  EXPECT_EQ(to_label(*single, *sim), "sim::device::0");
  EXPECT_EQ(method_name(*single, *sim), "CE");
  EXPECT_EQ(method_name(*find_case("host_to_device_batch_ce"), *sim), "CE-BATCH");
  EXPECT_EQ(method_name(*find_case("shm_to_all_host_memcpy"), *sim), "MEMCPY-FORK");
  EXPECT_EQ(direction(*find_case("device_to_host_ce")), CopyDir::kD2H);
  // The D2H mirrors: from every device; into one shared region (its parts) or each its own.
  const CaseSpec* share = find_case("all_device_to_one_share_host_ce_multi_stream");
  EXPECT_EQ(from_label(*share, *sim), "sim::device::all");
  EXPECT_EQ(to_label(*share, *sim), "sim::shm::0");
  EXPECT_TRUE(share->shared_dst);
  EXPECT_EQ(direction(*share), CopyDir::kD2H);
  EXPECT_EQ(to_label(*find_case("all_device_to_all_odirect_host_ce_multi_stream"), *sim), "sim::odirect_mmap::all");
  EXPECT_EQ(method_name(*find_case("all_device_to_all_host_ffts_direct_d2h"), *sim), "SDMA-FORK");
  EXPECT_EQ(shared_part_stride(1000), 4096u);
  EXPECT_EQ(shared_part_stride(8192), 8192u);
  EXPECT_EQ(direction(*find_case("device_to_device_ce")), CopyDir::kD2D);
  EXPECT_EQ(direction(*single), CopyDir::kH2D);
}

// --submit-mode: which stream carries each IO task (UCM's two rules).
TEST(SubmitMode, StreamMajorGivesContiguousRangesLargerFirst) {
  // 7 tasks over 3 streams: 3, 2, 2.
  std::vector<size_t> got;
  for (size_t t = 0; t < 7; ++t) got.push_back(stream_of_task(SubmitMode::kStreamMajor, t, 7, 3));
  EXPECT_EQ(got, (std::vector<size_t>{0, 0, 0, 1, 1, 2, 2}));
  // Even split, and more streams than tasks (each task its own stream).
  got.clear();
  for (size_t t = 0; t < 8; ++t) got.push_back(stream_of_task(SubmitMode::kStreamMajor, t, 8, 4));
  EXPECT_EQ(got, (std::vector<size_t>{0, 0, 1, 1, 2, 2, 3, 3}));
  got.clear();
  for (size_t t = 0; t < 2; ++t) got.push_back(stream_of_task(SubmitMode::kStreamMajor, t, 2, 4));
  EXPECT_EQ(got, (std::vector<size_t>{0, 1}));
}

TEST(SubmitMode, RoundRobinWraps) {
  std::vector<size_t> got;
  for (size_t t = 0; t < 7; ++t) got.push_back(stream_of_task(SubmitMode::kRoundRobin, t, 7, 3));
  EXPECT_EQ(got, (std::vector<size_t>{0, 1, 2, 0, 1, 2, 0}));
  EXPECT_EQ(stream_of_task(SubmitMode::kRoundRobin, 5, 7, 1), 0u);
  EXPECT_STREQ(submit_mode_name(SubmitMode::kRoundRobin), "round-robin");
  EXPECT_STREQ(submit_mode_name(SubmitMode::kStreamMajor), "stream-major");
}

// Every task lands on exactly one stream, every stream gets within one task of
// the others, for both modes and many shapes.
TEST(SubmitMode, BalancedForEveryShape) {
  for (SubmitMode m : {SubmitMode::kStreamMajor, SubmitMode::kRoundRobin})
    for (size_t tasks = 1; tasks <= 40; ++tasks)
      for (size_t streams = 1; streams <= 9; ++streams) {
        std::vector<size_t> load(streams, 0);
        for (size_t t = 0; t < tasks; ++t) {
          const size_t s = stream_of_task(m, t, tasks, streams);
          ASSERT_LT(s, streams);
          ++load[s];
        }
        const auto mm = std::minmax_element(load.begin(), load.end());
        EXPECT_LE(*mm.second - *mm.first, 1u) << tasks << " tasks, " << streams << " streams";
      }
}

// The line said before a copy case's setup carries its MemoryNeeds' own figures:
// the host figure is the sum of the parts a refusal lists, the devices are the case's.
TEST(Catalog, ThePlanLineShowsTheCasesMemoryNeeds) {
  auto sim = make_sim_backend();
  CopyParams p;
  p.layout = Layout::uniform(16ULL << 20, 4, 0);
  p.devices = 2;
  p.iterations = 4;
  const MemoryNeeds n = memory_needs(*find_case("one_share_host_to_all_device_ce_multi_stream"), p, *sim);
  uint64_t sum = 0;
  for (const auto& part : n.host_parts) sum += part.second;
  EXPECT_EQ(sum, n.host);
  EXPECT_EQ(n.devices, 2);
  EXPECT_TRUE(n.device_in_host);
  EXPECT_EQ(n.shm, 64ULL << 20);
  const std::string line = plan_line("one_share_host_to_all_device_ce_multi_stream", n, {0, 0, "iteration", 4.0});
  EXPECT_NE(line.find(" will allocate host " + format_bytes(sum) + " (/dev/shm: 64.00 MiB of it), device 2 x " +
                      format_bytes(n.device_per_device) + " (host memory here, counted in host), disk none; "),
            std::string::npos)
      << line;
}
