// What a result answers and the notes that say when not to trust it
// (output/verdict.h): the exact texts, each threshold on both sides, and which
// results one summary ranks.
#include <gtest/gtest.h>

#include <sstream>

#include "output/text_writer.h"
#include "output/verdict.h"

using namespace ds;

namespace {

Stats us(double mn, double mx, double avg, double p50, double p90) {
  Stats s;
  s.min = static_cast<int64_t>(mn * 1000);
  s.max = static_cast<int64_t>(mx * 1000);
  s.avg = avg * 1000;
  s.p50 = static_cast<int64_t>(p50 * 1000);
  s.p90 = static_cast<int64_t>(p90 * 1000);
  s.samples = 16;
  return s;
}

// One card, 1 MiB per iteration (16K x 64), steady stages unless a test says otherwise.
CaseResult one_card(double copy_us = 400, double wall_us = 450) {
  CaseResult r;
  r.name = "host_to_device_batch_ce";
  r.from = "cuda::host::0";
  r.to = "cuda::device::0";
  r.method = "CE-BATCH";
  r.block_bytes = 16 * 1024;
  r.count = 64;
  r.bytes = r.block_bytes * r.count;
  r.stages = {{"Submit", us(10, 12, 11, 11, 12)},
              {"Copy", us(copy_us, copy_us, copy_us, copy_us, copy_us)},
              {"Wall", us(wall_us, wall_us, wall_us, wall_us, wall_us)},
              {"StartSkew", us(0, 0, 0, 0, 0)}};
  return r;
}

Stats& stage(CaseResult& r, const char* name) {
  for (Stage& s : r.stages)
    if (s.name == name) return s.ns;
  throw std::runtime_error(name);
}

std::vector<std::string> note_texts(const CaseResult& r) {
  std::vector<std::string> out;
  for (const VerdictNote& n : verdict_of(r).notes) out.push_back(n.kind + ": " + n.text);
  return out;
}

}  // namespace

TEST(Verdict, SteadyLongIterationsGetTheVerdictAlone) {
  const CaseResult r = one_card();
  EXPECT_TRUE(verdict_of(r).notes.empty());
  EXPECT_EQ(format_verdict_lines(r), "  Verdict: 2.44 GiB/s per card (Copy); a request sees 2.17 GiB/s end to end (WallBW)\n");
}

TEST(Verdict, HostClockIterationUnder100usIsTooShort) {
  CaseResult r = one_card(42, 94);  // sim: the copy threads' own host-clock stamps
  stage(r, "Wall") = us(94, 94, 94, 94, 94);
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "short_iteration: too short to time well: an iteration's Copy takes 42 us (P50), "
                               "under 100 us on the host clock (thread wake-ups and scheduling take tens of us); "
                               "move more bytes per iteration (more or larger blocks)",
                               "bw_vs_wallbw: BW 23.3 GiB/s is 2.2x WallBW 10.4 GiB/s: of the 94 us GroupWall avg, "
                               "52 us lie outside the 42 us of Copy (its avg): issuing the work, confirming it done, "
                               "synchronising"}));
  stage(r, "Copy") = us(100, 100, 100, 100, 100);  // at the floor: times well
  stage(r, "Wall") = us(110, 110, 110, 110, 110);
  EXPECT_TRUE(verdict_of(r).notes.empty()) << note_texts(r).at(0);
}

TEST(Verdict, DeviceEventsAreTooShortUnder20Resolutions) {
  CaseResult r = one_card(3, 5);
  r.timer = "CUDA events";
  r.timer_resolution_ns = 500;
  EXPECT_EQ(format_verdict_lines(r),
            "  Note: too short to time well: an iteration's Copy takes 3 us (P50), under 10 us = 20 x the 0.5 us "
            "resolution of CUDA events; move more bytes per iteration (more or larger blocks)\n"
            "  Verdict: 326 GiB/s per card (Copy); a request sees 195 GiB/s end to end (WallBW)\n");
  r.timer = "AscendCL events";
  r.timer_resolution_ns = 1000;
  stage(r, "Copy") = us(19, 19, 19, 19, 19);
  stage(r, "Wall") = us(21, 21, 21, 21, 21);
  EXPECT_EQ(note_texts(r).at(0),
            "short_iteration: too short to time well: an iteration's Copy takes 19 us (P50), under 20 us = 20 x the "
            "1 us resolution of AscendCL events; move more bytes per iteration (more or larger blocks)");
  stage(r, "Copy") = us(20, 20, 20, 20, 20);  // 20 x 1 us: times well, where the host clock would not
  EXPECT_TRUE(verdict_of(r).notes.empty());
}

TEST(Verdict, BroadSpreadByP90) {
  CaseResult r = one_card();
  stage(r, "Copy") = us(390, 700, 480, 400, 640);  // P90 1.6x
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "spread: Copy spread: P90 is 1.6x and max 1.8x its P50 of 400 us, so its avg 480 us is "
                               "20% above the P50 and BW is no typical iteration's: compare P50s, or run more "
                               "iterations"}));
  stage(r, "Copy") = us(390, 700, 440, 400, 600);  // P90 1.5x: not above the threshold
  EXPECT_TRUE(verdict_of(r).notes.empty()) << note_texts(r).at(0);
}

// The run: iterations of ~20 us on CUDA events, one 4 ms GroupWall against a
// 44 us median (16 iterations), BW 54.8 against WallBW 3.4.
TEST(Verdict, OneOutlierGroupWallDominatesTheMeanAndWallBW) {
  CaseResult r = one_card();
  r.timer = "CUDA events";
  r.timer_resolution_ns = 500;
  stage(r, "Copy") = us(17, 19, 17.8, 18, 18.5);
  stage(r, "Wall") = us(40, 4000, 291.25, 44, 46);
  stage(r, "Submit") = us(10, 14, 11, 11, 12);
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "spread: GroupWall spread: P90 is 1.0x and max 90.9x its P50 of 44 us, so its avg 291 us "
                               "is 562% above the P50 and WallBW is no typical iteration's: compare P50s, or run more "
                               "iterations",
                               "bw_vs_wallbw: BW 54.9 GiB/s is 16.4x WallBW 3.35 GiB/s: the slowest GroupWall (4000 us) "
                               "against its 44 us median lifts its avg to 291 us; at the P50, WallBW would be 22.2 GiB/s"}));
  // The same outlier among 1000 iterations moves the mean 9%: no spread note, and the
  // gap left is what each iteration spends outside the copies.
  stage(r, "Wall") = us(40, 4000, 48, 44, 46);
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "bw_vs_wallbw: BW 54.9 GiB/s is 2.7x WallBW 20.3 GiB/s: of the 48 us GroupWall avg, "
                               "30 us lie outside the 18 us of Copy (its avg): issuing the work, confirming it done, "
                               "synchronising"}));
}

TEST(Verdict, SubmissionBoundWallSaysSo) {
  CaseResult r = one_card();
  stage(r, "Copy") = us(150, 150, 150, 150, 150);
  stage(r, "Wall") = us(400, 400, 400, 400, 400);
  stage(r, "Submit") = us(300, 300, 300, 300, 300);
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "bw_vs_wallbw: BW 6.51 GiB/s is 2.7x WallBW 2.44 GiB/s: submission-bound: queuing the "
                               "work takes 300 us (Submit avg) of the 400 us GroupWall, while it runs in 150 us (Copy "
                               "avg)"}));
}

TEST(Verdict, StartSkewWallSaysSo) {
  CaseResult r = one_card(150, 400);
  r.devices = 2;
  stage(r, "StartSkew") = us(200, 200, 200, 200, 200);
  EXPECT_EQ(note_texts(r), (std::vector<std::string>{
                               "bw_vs_wallbw: BW 6.51 GiB/s is 2.7x WallBW 2.44 GiB/s: the workers start 200 us apart "
                               "(StartSkew avg) within the 400 us GroupWall"}));
  EXPECT_EQ(verdict_of(r).text, "6.51 GiB/s over 2 cards, 3.26 per card (Copy); a request sees 2.44 GiB/s end to end (WallBW)");
}

TEST(Verdict, OneStoreHasNoCards) {
  CaseResult r = one_card();
  r.measured = "IO";
  r.stages[1].name = "IO";
  r.kv_on_cards = false;
  EXPECT_EQ(verdict_of(r).text, "2.44 GiB/s (IO); a request sees 2.17 GiB/s end to end (WallBW)");
}

TEST(Summary, RanksOnlyResultsThatAnswerOneQuestion) {
  // Sweep points (block sizes) are no ranking.
  CaseResult a = one_card(), b = one_card(300);
  b.block_bytes *= 2;
  EXPECT_TRUE(rankings_of({rank_entry(a), rank_entry(b)}).empty());
  // aio's dump and load (directions) are no ranking; two engines' loads are, named
  // with their Method where the names are the same.
  CaseResult dump = one_card(), load = one_card(), psync = one_card(800);
  for (CaseResult* r : {&dump, &load, &psync}) {
    r->measured = "IO";
    r->stages[1].name = "IO";
    r->kv_on_cards = false;
  }
  dump.name = "aio_dump";
  dump.from = "sim::mmap::0";
  dump.to = "file::ext4";
  load.name = psync.name = "aio_load";
  load.from = psync.from = "file::ext4";
  load.to = psync.to = "sim::mmap::0";
  load.method = "LIBAIO";
  psync.method = "PSYNC";
  const std::vector<Ranking> g = rankings_of({rank_entry(dump), rank_entry(psync), rank_entry(load)});
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(format_summary_line(g[0]),
            "Summary (BW from IO, 16.00 KiB blocks): 1. aio_load (LIBAIO) 2.44 GiB/s  2. aio_load (PSYNC) 1.22 GiB/s "
            "(-50%)\n");
  // Copy cases rank across methods, but never across directions: H2D with H2D, D2H
  // with D2H (trans gives both in one run), each ranking naming its path.
  CaseResult h2d = one_card(800), d2h = one_card(500), d2h_batch = one_card(1000);
  h2d.name = "host_to_device_ce";
  d2h.name = "device_to_host_ce";
  d2h_batch.name = "device_to_host_batch_ce";
  for (CaseResult* r : {&d2h, &d2h_batch}) {
    r->from = "cuda::device::0";
    r->to = "cuda::host::0";
    r->path = "device -> host memory";
  }
  a.path = h2d.path = "host memory -> device";
  const std::vector<Ranking> two =
      rankings_of({rank_entry(d2h_batch), rank_entry(a), rank_entry(d2h), rank_entry(h2d)});
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(format_summary_line(two[0]),
            "Summary (BW from Copy, 16.00 KiB blocks, device -> host memory): 1. device_to_host_ce 1.95 GiB/s  "
            "2. device_to_host_batch_ce 0.977 GiB/s (-50%)\n");
  EXPECT_EQ(format_summary_line(two[1]),
            "Summary (BW from Copy, 16.00 KiB blocks, host memory -> device): 1. host_to_device_batch_ce 2.44 GiB/s  "
            "2. host_to_device_ce 1.22 GiB/s (-50%)\n");
  // One of each direction ranks nothing.
  EXPECT_TRUE(rankings_of({rank_entry(a), rank_entry(d2h)}).empty());
  // Nor one card against two cards at once (their sum): the two-card results rank
  // with each other, the heading counting their cards.
  CaseResult all_ce = one_card(1600), all_batch = one_card(900);
  all_ce.name = "all_host_to_all_device_ce";
  all_batch.name = "all_host_to_all_device_batch_ce";
  for (CaseResult* r : {&all_ce, &all_batch}) {
    r->devices = 2;
    r->path = a.path;
  }
  EXPECT_TRUE(rankings_of({rank_entry(a), rank_entry(all_ce)}).empty());
  const std::vector<Ranking> by_cards = rankings_of({rank_entry(all_batch), rank_entry(a), rank_entry(all_ce)});
  ASSERT_EQ(by_cards.size(), 1u);
  EXPECT_EQ(format_summary_line(by_cards[0]),
            "Summary (BW from Copy, 16.00 KiB blocks, host memory -> device, 2 cards at once): "
            "1. all_host_to_all_device_batch_ce 1.09 GiB/s  2. all_host_to_all_device_ce 0.610 GiB/s (-44%)\n");
}

TEST(Summary, TextWriterPrintsItLastAndNotAfterAFailure) {
  CaseResult a = one_card(), b = one_card(800);
  b.name = "host_to_device_ce";
  std::ostringstream out;
  TextWriter w(out);
  w.begin(RunInfo{});
  w.add(a);
  w.add(b);
  w.finish();
  const std::string text = out.str();
  EXPECT_EQ(text.substr(text.rfind("\n\n") + 2),
            "Summary (BW from Copy, 16.00 KiB blocks): 1. host_to_device_batch_ce 2.44 GiB/s  2. host_to_device_ce "
            "1.22 GiB/s (-50%)\n");
  std::ostringstream failed_out;
  TextWriter failed(failed_out);
  failed.begin(RunInfo{});
  failed.add(a);
  failed.add(b);
  failed.fail("x", "boom");
  failed.finish();
  EXPECT_EQ(failed_out.str().find("Summary"), std::string::npos) << failed_out.str();
}
