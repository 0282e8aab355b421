// The verdict, the notes and the summary as a run prints them (output/verdict.h; the
// exact texts for made-up figures are in tests/unit/test_verdict.cc): a too-short
// iteration on the host clock (sim) and on CUDA events (the double), an outlier that
// dominates GroupWall and a submission-bound run (the double's injected host-side
// stalls, behind the stream start gate so that Copy does not see them), the summary of
// several cases, and JSON carrying the same notes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

using namespace dstest;

namespace {

std::vector<std::string> lines_with(const std::string& out, const std::string& prefix) {
  std::vector<std::string> found;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(prefix, 0) == 0) found.push_back(line);
  return found;
}

bool any_matches(const std::vector<std::string>& lines, const std::string& pattern) {
  const std::regex re(pattern);
  for (const std::string& l : lines)
    if (std::regex_match(l, re)) return true;
  return false;
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

const char* const kN = R"([0-9]+)";
const char* const kGib = R"([0-9]+(\.[0-9]+)?)";

std::map<std::string, std::string> cuda(std::map<std::string, std::string> knobs = {}) {
  knobs["DEV_SANDBOX_CUDA_LIB"] = DS_CUDA_DOUBLE;
  knobs["DS_CUDA_DOUBLE_DEVICES"] = "2";
  return knobs;
}

const std::string kShortHost = std::string(R"(  Note: too short to time well: an iteration's Copy takes )") + kN +
                               R"( us \(P50\), under 100 us on the host clock \(thread wake-ups and scheduling take )"
                               R"(tens of us\); move more bytes per iteration \(more or larger blocks\))";
const std::string kShortCuda = std::string(R"(  Note: too short to time well: an iteration's Copy takes )") + kN +
                               R"( us \(P50\), under 10 us = 20 x the 0.5 us resolution of CUDA events; move more )"
                               R"(bytes per iteration \(more or larger blocks\))";

}  // namespace

TEST(VerdictE2e, ShortIterationOnTheHostClockIsNoted) {
  const RunResult r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "1", "-i", "20"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto notes = lines_with(r.out, "  Note: ");
  EXPECT_TRUE(any_matches(notes, kShortHost)) << joined(notes);
  const auto verdict = lines_with(r.out, "  Verdict: ");
  ASSERT_EQ(verdict.size(), 1u) << r.out;
  EXPECT_TRUE(any_matches(verdict, std::string("  Verdict: ") + kGib + " GiB/s per card \\(Copy\\); a request sees " +
                                       kGib + " GiB/s end to end \\(WallBW\\)"))
      << verdict[0];
  EXPECT_EQ(r.out.find("Summary"), std::string::npos) << "one result ranks nothing";
}

TEST(VerdictE2e, ShortIterationOnCudaEventsIsNotedAndALongOneIsNot) {
  const std::vector<std::string> args = {"--backend", "cuda", "copy", "-t", "host_to_device_ce", "-s", "4K",
                                         "-n", "1", "-i", "30"};
  // A 4 KiB copy takes a few us on the double; under a sanitizer or on a loaded
  // machine it can take longer than the 10 us floor, so the note must follow
  // the P50 the run measured: there iff it is under 20 x 0.5 us.
  std::vector<std::string> with_json = args;
  with_json.insert(with_json.end(), {"--format", "text,json"});
  const RunResult quick = run_tool(with_json, cuda());
  ASSERT_EQ(quick.exit_code, 0) << quick.err;
  const size_t json_at = quick.out.find("\n{\n");
  ASSERT_NE(json_at, std::string::npos) << quick.out;
  const double p50 =
      nlohmann::json::parse(quick.out.substr(json_at + 1))["results"][0]["copy_us"]["p50"].get<double>();
  const std::string text = quick.out.substr(0, json_at + 1);
  EXPECT_EQ(any_matches(lines_with(text, "  Note: "), kShortCuda), p50 < 10.0) << "Copy P50 " << p50 << "\n" << text;
  // 40 us per copy (10 us per KiB): four times the floor, on the same clock.
  const RunResult slow = run_tool(args, cuda({{"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "10000"}}));
  ASSERT_EQ(slow.exit_code, 0) << slow.err;
  EXPECT_EQ(slow.out.find("too short"), std::string::npos) << slow.out;
}

// One 50 ms stall of the first submission (iteration 0, no warm-up) behind the start
// gate: GroupWall has one outlier, Copy (the engines alone) has none.
TEST(VerdictE2e, AnOutlierDominatedGroupWallIsNotedWithWhy) {
  const RunResult r = run_tool({"--backend", "cuda", "copy", "-t", "host_to_device_ce", "-s", "64K", "-n", "2",
                                "-i", "10", "--warmup", "0", "--stream-start-gate", "on", "--format", "text,json"},
                               cuda({{"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "1000"},
                                     {"DS_CUDA_DOUBLE_SUBMIT_COLD", "1:50000000"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = r.out.substr(0, r.out.find("\n{\n") + 1);
  const auto notes = lines_with(text, "  Note: ");
  EXPECT_TRUE(any_matches(notes, std::string(R"(  Note: GroupWall spread: P90 is [0-9.]+x and max [0-9.]+x its P50 of )") +
                                     kN + " us, so its avg " + kN + " us is " + kN +
                                     R"(% above the P50 and WallBW is no typical iteration's: compare P50s, or run )"
                                     R"(more iterations)"))
      << joined(notes);
  EXPECT_TRUE(any_matches(notes, std::string("  Note: BW ") + kGib + " GiB/s is [0-9.]+x WallBW " + kGib +
                                     R"( GiB/s: the slowest GroupWall \()" + kN + R"( us\) against its )" + kN +
                                     " us median lifts its avg to " + kN + " us; at the P50, WallBW would be " + kGib +
                                     " GiB/s"))
      << joined(notes);
  // JSON says the same notes, with their kinds; its Copy never saw the stall (the gate).
  const auto doc = nlohmann::json::parse(r.out.substr(r.out.find("\n{\n") + 1));
  EXPECT_LT(doc["results"][0]["copy_us"]["max"].get<double>(), 25000) << "the stall is 50 ms, in GroupWall only";
  EXPECT_GT(doc["results"][0]["wall_us"]["max"].get<double>(), 50000);
  const auto& v = doc["results"][0]["verdict"];
  ASSERT_EQ(v["notes"].size(), notes.size()) << v.dump();
  for (size_t i = 0; i < notes.size(); ++i) EXPECT_EQ("  Note: " + v["notes"][i]["text"].get<std::string>(), notes[i]);
  EXPECT_EQ(v["notes"].back()["kind"], "bw_vs_wallbw");
  EXPECT_EQ("  Verdict: " + v["text"].get<std::string>(), lines_with(text, "  Verdict: ").at(0));
}

// Every submission stalls 2 ms behind the gate (8 ms per iteration against ~0.1 ms of
// copies): GroupWall is the host queuing, whatever a busy machine adds to a few
// iterations.
TEST(VerdictE2e, ASubmissionBoundRunIsNotedWithWhy) {
  const RunResult r = run_tool({"--backend", "cuda", "copy", "-t", "host_to_device_ce", "-s", "64K", "-n", "4",
                                "-i", "10", "--stream-start-gate", "on"},
                               cuda({{"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "400"}, {"DS_CUDA_DOUBLE_SUBMIT_NS", "2000000"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto notes = lines_with(r.out, "  Note: ");
  EXPECT_TRUE(any_matches(notes, std::string("  Note: BW ") + kGib + " GiB/s is [0-9.]+x WallBW " + kGib +
                                     " GiB/s: submission-bound: queuing the work takes " + kN +
                                     R"( us \(Submit avg\) of the )" + kN + " us GroupWall, while it runs in " + kN +
                                     R"( us \(Copy avg\))"))
      << joined(notes);
}

TEST(VerdictE2e, SeveralCasesEndWithASummaryBestFirst) {
  const RunResult r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "host_to_device_batch_ce",
                                "-t", "device_to_host_ce", "-s", "64K", "-n", "4", "-i", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = lines_with(r.out, "Summary");
  ASSERT_EQ(summary.size(), 1u) << r.out;
  // The two H2D cases; the one D2H case is no ranking of its own and not in theirs.
  const std::string entry = R"((host_to_device_ce|host_to_device_batch_ce)\*? )";
  EXPECT_TRUE(any_matches(summary, std::string(R"(Summary \(BW from Copy, 64.00 KiB blocks, host memory -> device\): 1\. )") +
                                       entry + kGib + " GiB/s  2\\. " + entry + kGib + " GiB/s \\(-?" + kN +
                                       "%\\)(  \\(\\* see its notes\\))?"))
      << summary[0];
  // The last line of the output, after a blank one.
  EXPECT_EQ(r.out.substr(r.out.size() - summary[0].size() - 2), "\n" + summary[0] + "\n");
  EXPECT_EQ(r.out.substr(r.out.size() - summary[0].size() - 3, 1), "\n");
}

// trans runs both directions in one run: one Summary line per direction, each ranking
// only its own direction's results (an H2D result never against a D2H one).
TEST(VerdictE2e, TransSummarisesEachDirectionApart) {
  const RunResult r = run_tool({"--backend", "sim", "trans", "-H", "pinned", "-M", "ce", "-M", "memcpy", "-s", "64K",
                                "-n", "4", "-i", "4", "-d", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto summary = lines_with(r.out, "Summary");
  ASSERT_EQ(summary.size(), 2u) << r.out;
  const std::string tail = " GiB/s \\(-?" + std::string(kN) + "%\\)(  \\(\\* see its notes\\))?";
  const std::string h2d = R"((h2d_pinned_normal_ce|h2d_pinned_normal_memcpy)\*? )";
  const std::string d2h = R"((d2h_pinned_normal_ce|d2h_pinned_normal_memcpy)\*? )";
  EXPECT_TRUE(std::regex_match(summary[0], std::regex(std::string(R"(Summary \(BW from Copy, 64.00 KiB blocks, host memory -> device\): 1\. )") +
                                                      h2d + kGib + " GiB/s  2\\. " + h2d + kGib + tail)))
      << summary[0];
  EXPECT_TRUE(std::regex_match(summary[1], std::regex(std::string(R"(Summary \(BW from Copy, 64.00 KiB blocks, device -> host memory\): 1\. )") +
                                                      d2h + kGib + " GiB/s  2\\. " + d2h + kGib + tail)))
      << summary[1];
}
