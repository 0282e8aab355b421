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
  // One note for the sweep, saying where -n went down and to what.
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --sweep"),
            std::vector<std::string>{"dev-sandbox: note: --sweep keeps the first size's 16.00 KiB per device per "
                                     "iteration: -n 4 becomes 2 at 8K, 1 at 16K to 32K (from 32K, -n 1 is more "
                                     "than that)"})
      << r.err;

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

namespace {

// The polylines of a plot file and its text, once it parsed as XML.
struct Plot {
  std::vector<XmlElement> lines;
  std::string texts;
};

Plot read_plot(const std::string& path) {
  Plot p;
  std::vector<XmlElement> elems;
  const std::string svg = slurp(path);
  EXPECT_EQ(parse_xml(svg, &elems), "") << svg;
  for (const auto& e : elems) {
    if (e.name == "polyline") p.lines.push_back(e);
    if (e.name == "text") p.texts += e.text + "\n";
  }
  return p;
}

size_t vertices(const XmlElement& polyline) {
  const std::string& pts = polyline.attrs.at("points");
  return static_cast<size_t>(std::count(pts.begin(), pts.end(), ','));
}

// A fresh directory on a disk filesystem for aio and load, removed at the end.
struct Workspace {
  std::string dir;
  Workspace() {
    for (const std::string base : {std::string(DS_AIO_TEST_BASE), std::string("/var/tmp")}) {
      std::string tmpl = base + "/sweep-e2e-XXXXXX";
      if (mkdtemp(&tmpl[0]) && direct_io_works(tmpl)) {
        dir = tmpl;
        return;
      }
      rmdir(tmpl.c_str());
    }
  }
  ~Workspace() {
    if (!dir.empty()) rmdir(dir.c_str());  // the runs removed their files: rmdir fails otherwise
  }
};

}  // namespace

// trans: one matrix per transfer size, -n lowered with one note, one line per
// combination (BW and WallBW) on the plot.
TEST(SweepE2e, TransSweepsTheTransferSize) {
  const std::string plot = temp_path("-trans.svg");
  JsonRun r = run_json({"trans", "--backend", "sim", "-t", "H2D", "-H", "pinned", "-M", "ce", "-M", "memcpy", "-d",
                        "1", "-n", "8", "-i", "2", "--warmup", "0", "--sweep", "4K:16K", "--plot", plot});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), (std::vector<std::string>{"h2d_pinned_normal_ce", "h2d_pinned_normal_memcpy",
                                                 "h2d_pinned_normal_ce", "h2d_pinned_normal_memcpy",
                                                 "h2d_pinned_normal_ce", "h2d_pinned_normal_memcpy"}));
  const uint64_t count[] = {8, 4, 2};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.doc["results"][i]["block_bytes"], 4096u << (i / 2)) << i;
    EXPECT_EQ(r.doc["results"][i]["count"], count[i / 2]) << i;
  }
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --sweep"),
            std::vector<std::string>{"dev-sandbox: note: --sweep keeps the first size's 32.00 KiB per device per "
                                     "iteration: -n 8 becomes 4 at 8K, 2 at 16K"})
      << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: wrote the plot to " + plot + "\n"), std::string::npos) << r.err;
  const Plot p = read_plot(plot);
  ASSERT_EQ(p.lines.size(), 4u);
  for (const auto& l : p.lines) EXPECT_EQ(vertices(l), 3u);
  EXPECT_NE(p.texts.find("h2d_pinned_normal_memcpy WallBW (1 device)"), std::string::npos) << p.texts;
  EXPECT_NE(p.texts.find("Bandwidth by block size: sim backend, 1 device"), std::string::npos) << p.texts;
  std::remove(plot.c_str());
}

// aio: each shard size and each engine its own run, size-major, engines in the
// order given; --io-number lowered with one note; the plot a line per phase and
// engine, BW only by default.
TEST(SweepE2e, AioSweepsTheShardSizeForEveryEngine) {
  Workspace ws;
  if (ws.dir.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string plot = temp_path("-aio.svg");
  JsonRun r = run_json({"aio", "--backend", "sim", "--workspace", ws.dir, "--engine", "psync", "--engine", "psync2",
                        "--io-number", "4", "--epoch-number", "1", "--iodepth", "2", "--sweep", "4K:16K"});
  EXPECT_EQ(r.exit_code, 2) << r.err;  // not an engine
  EXPECT_EQ(r.err, "dev-sandbox: error: option --engine got 'psync2': accepts libaio|io_uring|psync\n");
  r = run_json({"aio", "--backend", "sim", "--workspace", ws.dir, "--engine", "psync", "--io-number", "4",
                "--shards-per-file", "2", "--epoch-number", "1", "--iodepth", "2", "--sweep", "4K:16K", "--plot",
                plot});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), (std::vector<std::string>{"aio_dump", "aio_load", "aio_dump", "aio_load", "aio_dump",
                                                 "aio_load"}));
  const uint64_t files[] = {4, 2, 1};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(r.doc["results"][i]["block_bytes"], 4096u << (i / 2)) << i;
    EXPECT_EQ(r.doc["results"][i]["count"], 2 * files[i / 2]) << i;  // shards: files x 2
  }
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --sweep"),
            std::vector<std::string>{"dev-sandbox: note: --sweep keeps the first size's 32.00 KiB per worker per "
                                     "epoch: --io-number 4 becomes 2 at 8K, 1 at 16K"})
      << r.err;
  const Plot p = read_plot(plot);
  ASSERT_EQ(p.lines.size(), 2u);
  for (const auto& l : p.lines) EXPECT_EQ(l.attrs.count("stroke-dasharray"), 0u);
  EXPECT_NE(p.texts.find("Disk bandwidth by shard size, files in " + ws.dir + "\n"), std::string::npos) << p.texts;
  EXPECT_NE(p.texts.find("Shard size (bytes per I/O, log2 scale)"), std::string::npos) << p.texts;
  EXPECT_NE(p.texts.find("aio_dump PSYNC\n"), std::string::npos) << p.texts;
  EXPECT_NE(p.texts.find("aio_load PSYNC\n"), std::string::npos) << p.texts;
  EXPECT_NE(p.texts.find("over 1 epochs"), std::string::npos) << p.texts;
  std::remove(plot.c_str());
}

// load: one load per block size; the plot's lines are the end-to-end load and
// each stage alone.
TEST(SweepE2e, LoadSweepsTheBlockSize) {
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  Workspace ws;
  if (ws.dir.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string plot = temp_path("-load.svg");
  JsonRun r = run_json({"load", "--backend", "sim", "--workspace", ws.dir, "-n", "4", "-f", "2", "-i", "2",
                        "--warmup", "0", "--sweep", "4K:16K", "--plot", plot, "--plot-metric", "both"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), std::vector<std::string>(3, "load"));
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r.doc["results"][i]["block_bytes"], 4096u << i) << i;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --sweep"),
            std::vector<std::string>{"dev-sandbox: note: --sweep keeps the first size's 32.00 KiB per card per "
                                     "iteration: -n 4 becomes 2 at 8K, 1 at 16K"})
      << r.err;
  const Plot p = read_plot(plot);
  ASSERT_EQ(p.lines.size(), 4u);  // load, load WallBW (dashed), disk alone, copy alone
  EXPECT_EQ(p.lines[1].attrs.count("stroke-dasharray"), 1u);
  for (const auto& l : p.lines) EXPECT_EQ(vertices(l), 3u);
  for (const char* label : {"load (1 card)", "load WallBW (1 card)", "disk alone (1 card)", "copy alone (1 card)",
                            "Load bandwidth by block size: sim backend, 1 card"})
    EXPECT_NE(p.texts.find(label), std::string::npos) << label << "\n" << p.texts;
  std::remove(plot.c_str());
}

// What the sweeps of trans, aio and load refuse: one line each, exit 2, nothing run.
TEST(SweepE2e, SweepRefusalsOfTransAioAndLoad) {
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"trans", "--sweep", "4K:8K", "-s", "4K"}, "option --sweep sets the transfer size; drop -s"},
      {{"trans", "--plot", "/tmp/x.svg"}, "option --plot needs --sweep FROM:TO: it draws bandwidth against block size"},
      {{"aio", "--workspace", "/tmp/x", "--sweep", "4K:8K", "--io-size", "4K"},
       "option --sweep sets the shard size; drop --io-size"},
      {{"aio", "--workspace", "/tmp/x", "--sweep", "2K:8K"},
       "option --sweep got '2K:8K': aio's shard sizes run from 4K (O_DIRECT alignment) to 1G"},
      {{"aio", "--workspace", "/tmp/x", "--sweep", "4K:2G"},
       "option --sweep got '4K:2G': aio's shard sizes run from 4K (O_DIRECT alignment) to 1G"},
      {{"aio", "--workspace", "/tmp/x", "--sweep", "4K:8K", "--model", "Qwen3-32B"},
       "option --model sets the store layout; it cannot go with --sweep"},
      {{"aio", "--workspace", "/tmp/x", "--plot-metric", "wall"}, "option --plot-metric needs --plot FILE.svg"},
      {{"load", "--workspace", "/tmp/x", "--sweep", "4K:8K", "-s", "4K"}, "option --sweep sets the block size; drop -s"},
      {{"load", "--workspace", "/tmp/x", "--sweep", "4K:8K", "--block-layout", "4K,4K"},
       "option --sweep sweeps one block size; it cannot go with --block-layout"},
      {{"load", "--workspace", "/tmp/x", "--sweep", "4K:8K", "--model", "Qwen3-32B"},
       "option --model sets the blocks; it cannot go with --sweep"},
      {{"load", "--workspace", "/tmp/x", "--sweep", "512M:1G", "-f", "2"},
       "option --sweep got '512M:1G': at 1G one block file would hold 2147483648 bytes, over the 1G of one read"},
      {{"load", "--workspace", "/tmp/x", "--sweep", "4K:8K", "--plot-metric", "walls", "--plot", "/tmp/x.svg"},
       "option --plot-metric expects copy, wall or both, not 'walls'"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = c.args;
    args.insert(args.end(), {"--backend", "sim"});
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << c.says;
    EXPECT_EQ(r.err, "dev-sandbox: error: " + c.says + "\n");
    EXPECT_EQ(r.out, "");
  }
}
