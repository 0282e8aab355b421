#include <gtest/gtest.h>

#include "output/text_writer.h"

using namespace ds;

namespace {

Stats us_stats(int64_t mn, int64_t mx, double avg, int64_t p50, int64_t p90) {
  Stats s;
  s.min = mn * 1000;
  s.max = mx * 1000;
  s.avg = avg * 1000;
  s.p50 = p50 * 1000;
  s.p90 = p90 * 1000;
  return s;
}

CaseResult seed_gqa() {
  CaseResult r;
  r.name = "all_host_to_all_device_ce_multi_stream";
  r.brief = "memcpy from all host to all device with ce using multi stream and fork submit";
  r.from = "acl::host::all";
  r.to = "acl::device::all";
  r.method = "CE-MS-FORK";
  r.block_bytes = 16 * 1024;
  r.count = 4096;
  r.bytes = r.block_bytes * r.count;  // BW comes from the bytes moved per iteration
  r.stages = {{"Submit", us_stats(878, 2576, 1117, 1112, 1269)},
              {"Copy", us_stats(3155, 4101, 3736, 3759, 3905)},
              {"Wall", us_stats(3300, 4500, 3800, 3790, 4100)},
              {"StartSkew", us_stats(0, 577, 12, 1, 1)}};
  return r;
}

// 64 MiB over all devices per iteration / GroupWall avg 3800 us, in GiB/s.
const char* kSeedWallLine =
    "  Wall: StartSkew(us)-(Min/Max/Avg/P50/P90)=0 / 577 / 12 / 1 / 1  "
    "GroupWall(us)-(Min/Max/Avg/P50/P90)=3300 / 4500 / 3800 / 3790 / 4100  WallBW(GB/s)=16.447\n";

}  // namespace

TEST(TextTable, ReproducesTheSeedGqaRows) {
  const std::string expected =
      "[[ all_host_to_all_device_ce_multi_stream ]] memcpy from all host to all device with ce "
      "using multi stream and fork submit\n"
      // The user guide prints CE-MS-FORK16 under a 10-wide Method; a cell as wide as
      // its column widens it by one, in the header too, so Size(KB) stays above 16.
      "  From              To                Method     Size(KB)  Count   "
      "Submit(us)-(Min/Max/Avg/P50/P90)        Copy(us)-(Min/Max/Avg/P50/P90)              "
      "BW(GB/s)\n"
      "  acl::host::all    acl::device::all  CE-MS-FORK 16        4096    "
      "878 / 2576 / 1117 / 1112 / 1269         3155 / 4101 / 3736 / 3759 / 3905            "
      "16.729\n" +
      std::string(kSeedWallLine);
  EXPECT_EQ(format_text_block(seed_gqa()), expected);
}

TEST(TextTable, WallLineFollowsTheRowAndNamesNoLabel) {
  const CaseResult r = seed_gqa();
  EXPECT_EQ(format_wall_line(r), kSeedWallLine);
  // A script taking the last field of the row naming ::device::all must still get BW.
  EXPECT_EQ(format_wall_line(r).find("::"), std::string::npos);
  // WallBW comes from GroupWall, not from Copy.
  CaseResult slower = r;
  slower.stages[2].ns.avg *= 2;
  EXPECT_NE(format_wall_line(slower).find("WallBW(GB/s)=8.224"), std::string::npos) << format_wall_line(slower);
}

TEST(TextTable, GatedRunsSaySoInTheTitle) {
  CaseResult r = seed_gqa();
  EXPECT_EQ(format_text_block(r).find("(gated)"), std::string::npos);
  r.stream_start_gate = true;
  const std::string block = format_text_block(r);
  EXPECT_EQ(block.substr(0, block.find('\n')),
            "[[ all_host_to_all_device_ce_multi_stream ]] memcpy from all host to all device with ce using multi "
            "stream and fork submit (gated)");
}

TEST(TextTable, ReproducesTheSeedMlaRow) {
  CaseResult r = seed_gqa();
  r.name = "one_share_host_to_all_device_ce_multi_stream";
  r.brief = "memcpy from one shared host to all device with ce using multi stream and fork submit";
  r.from = "acl::shm::0";
  r.stages = {{"Submit", us_stats(1056, 1270, 1162, 1161, 1209)}, {"Copy", us_stats(3914, 5024, 4471, 4424, 4852)}};
  const std::string block = format_text_block(r);
  EXPECT_NE(block.find("  acl::shm::0       acl::device::all  CE-MS-FORK 16        4096    "
                       "1056 / 1270 / 1162 / 1161 / 1209        "
                       "3914 / 5024 / 4471 / 4424 / 4852            13.979\n"),
            std::string::npos)
      << block;
}

TEST(TextTable, WideCellsWidenTheirColumnInTheHeaderToo) {
  CaseResult r = seed_gqa();
  r.from = "sim::odirect_mmap::all";  // wider than its 18-column cell
  r.method = "FFTS-SDMA-FORK";
  r.stages[1].ns = us_stats(1234567, 12345678, 2345678, 1234567, 12345678);  // a 44-wide Copy cell overflows
  const std::string block = format_text_block(r);
  EXPECT_NE(block.find("\n  From                   To                Method         Size(KB)  Count   "
                       "Submit(us)-(Min/Max/Avg/P50/P90)        Copy(us)-(Min/Max/Avg/P50/P90)                    "
                       "BW(GB/s)\n"
                       "  sim::odirect_mmap::all acl::device::all  FFTS-SDMA-FORK 16        4096    "
                       "878 / 2576 / 1117 / 1112 / 1269         "
                       "1234567 / 12345678 / 2345678 / 1234567 / 12345678 0.027\n"),
            std::string::npos)
      << block;
}

TEST(TextTable, VerdictLinesFollowTheBlockAndNameNoLabel) {
  const CaseResult r = seed_gqa();
  EXPECT_EQ(format_verdict_lines(r),
            "  Verdict: 16.7 GiB/s per card (Copy); a request sees 16.4 GiB/s end to end (WallBW)\n");
  CaseResult eight = r;
  eight.devices = 8;
  EXPECT_EQ(format_verdict_lines(eight),
            "  Verdict: 16.7 GiB/s over 8 cards, 2.09 per card (Copy); a request sees 16.4 GiB/s end to end "
            "(WallBW)\n");
  // awk's last field of the rows naming ::device::all must stay BW.
  EXPECT_EQ(format_verdict_lines(eight).find("::"), std::string::npos);
}

TEST(TextTable, SummaryRanksBestFirstWithHowFarBehind) {
  CaseResult a = seed_gqa(), b = seed_gqa(), c = seed_gqa();
  a.name = "host_to_device_ce";
  b.name = "host_to_device_batch_ce";
  b.stages[1].ns = us_stats(2000, 2100, 2000, 2000, 2050);  // faster: 31.25 GiB/s, printed 31.2
  c.name = "slow_with_spread";
  c.stages[1].ns = us_stats(3000, 90000, 9000, 3000, 9000);  // spread: marked
  const std::vector<Ranking> g = rankings_of({rank_entry(a), rank_entry(b), rank_entry(c)});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(format_summary_line(g[0]),
            "Summary (BW from Copy, 16.00 KiB blocks): 1. host_to_device_batch_ce 31.2 GiB/s  "
            "2. host_to_device_ce 16.7 GiB/s (-46%)  3. slow_with_spread* 6.94 GiB/s (-78%)  (* see its notes)\n");
}

TEST(TextTable, StatsRoundToWholeMicroseconds) {
  Stats s;
  s.min = 1499;  // 1.499 us -> 1
  s.max = 1500;  // 1.5 us -> 2
  s.avg = 2600.0;
  s.p50 = 999;
  s.p90 = 0;
  EXPECT_EQ(format_stats_us(s), "1 / 2 / 3 / 1 / 0");
}
