// --sweep and --plot end to end on sim.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "json_checks.h"
#include "output_checks.h"

using namespace dstest;
using nlohmann::json;

namespace {

std::string temp_path(const std::string& suffix) {
  return "/tmp/dev-sandbox-sweep-test-" + std::to_string(getpid()) + suffix;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST(SweepE2e, EveryPowerOfTwoWithScaledCountAndAPlot) {
  const std::string plot = temp_path(".svg");
  const RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-t",
                                "all_host_to_all_device_ce_multi_stream", "-d", "2", "-n", "4",
                                "-i", "3", "--warmup", "1", "--sweep", "4K:32K", "--format", "json",
                                "--plot", plot, "--backend", "sim"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: wrote the plot to " + plot + "\n"), std::string::npos) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["results"].size(), 8u);
  // Size-major: both cases at 4K, then both at 8K, ...; -n 4 at 4K keeps 16 KiB.
  const uint64_t sizes[] = {4096, 8192, 16384, 32768};
  const uint64_t n[] = {4, 2, 1, 1};
  for (size_t s = 0; s < 4; ++s) {
    const json& single = doc["results"][2 * s];
    const json& fork = doc["results"][2 * s + 1];
    EXPECT_EQ(single["name"], "host_to_device_ce");
    EXPECT_EQ(fork["name"], "all_host_to_all_device_ce_multi_stream");
    EXPECT_EQ(single["block_bytes"], sizes[s]);
    EXPECT_EQ(fork["block_bytes"], sizes[s]);
    EXPECT_EQ(single["count"], n[s]);
    EXPECT_EQ(fork["count"], 2 * n[s]);
  }
  // One note per scaled size, on stderr.
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --sweep").size(), 3u) << r.err;
  EXPECT_NE(r.err.find("--sweep at 8K: -n 4 -> 2"), std::string::npos) << r.err;

  std::vector<XmlElement> elems;
  const std::string svg = slurp(plot);
  ASSERT_EQ(parse_xml(svg, &elems), "") << svg;
  int polylines = 0, dashed = 0;
  std::string texts;
  for (const auto& e : elems) {
    if (e.name == "polyline") {
      ++polylines;
      dashed += static_cast<int>(e.attrs.count("stroke-dasharray"));
      const std::string& pts = e.attrs.at("points");
      EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 4) << pts;
    }
    if (e.name == "text") texts += e.text + "\n";
  }
  // --plot-metric both (the default): BW and, dashed, WallBW for each case.
  EXPECT_EQ(polylines, 4);
  EXPECT_EQ(dashed, 2);
  EXPECT_NE(texts.find("Bandwidth (GiB/s)"), std::string::npos);
  EXPECT_NE(texts.find("Block size (bytes, log2 scale)"), std::string::npos);
  EXPECT_NE(texts.find("sim backend, 2 devices"), std::string::npos);
  for (const char* tick : {"4K\n", "8K\n", "16K\n", "32K\n"})
    EXPECT_NE(texts.find(tick), std::string::npos) << tick;
  std::remove(plot.c_str());
}

TEST(SweepE2e, TextAndQuickModeSweep) {
  const std::vector<std::string> args = {"--model-type", "mla", "--iodirect", "false", "--sdma", "false",
                                         "-d", "2", "-n", "2", "-i", "2", "--sweep", "16K:64K",
                                         "--backend", "sim"};
  const RunResult r = run_tool(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.out, "[[ one_share_host_to_all_device_ce_multi_stream ]]").size(), 3u)
      << r.out;
  // Size and Count of the three steps: 16K/4, 32K/2, 64K/2.
  JsonRun j = run_json(args);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_EQ(j.names(), std::vector<std::string>(3, "one_share_host_to_all_device_ce_multi_stream"));
  ASSERT_EQ(j.doc["results"].size(), 3u) << j.out;
  const int kib[] = {16, 32, 64};
  const int count[] = {4, 2, 2};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(j.doc["results"][i]["block_bytes"], kib[i] * 1024) << "step " << i;
    EXPECT_EQ(j.doc["results"][i]["count"], count[i]) << "step " << i;
  }
}

TEST(SweepE2e, BadSweepAndPlotAreUsageErrors) {
  const std::vector<std::string> base = {"copy", "-t", "host_to_device_ce", "-i", "2",
                                         "--backend", "sim"};
  const std::vector<std::vector<std::string>> bad = {
      {"--sweep", "3K:64K"},   {"--sweep", "4K:48K"}, {"--sweep", "64K:4K"},
      {"--sweep", "4K"},       {"--sweep", "4K:8Q"},  {"--plot", temp_path("-x.svg")},
      {"--sweep", "4K:8K", "-s", "16K"}, {"--plot-metric", "wall", "--sweep", "4K:8K"},
      {"--plot-metric", "walls", "--sweep", "4K:8K", "--plot", temp_path("-y.svg")}};
  for (const auto& extra : bad) {
    std::vector<std::string> args = base;
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << extra[0] << " " << extra[1] << ": " << r.err;
    const std::string named = extra[0] == "--plot" || extra[0] == "--plot-metric" ? extra[0] : "--sweep";
    EXPECT_NE(r.err.find(named), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(exists(temp_path("-x.svg")));
}

TEST(SweepE2e, UnwritablePlotFailsBeforeMeasuring) {
  const std::string plot = "/nonexistent-dev-sandbox-dir/plot.svg";
  const RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-i", "2", "--sweep", "4K:8K",
                                "--plot", plot, "--backend", "sim"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(plot), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}
