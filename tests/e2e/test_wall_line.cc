// The Wall line after every result row (docs/measurement.md: StartSkew, GroupWall,
// WallBW), read the way UCM's sweep scripts read it: a sed pattern per figure and
// awk's last field of the row naming ::device::all.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"

using namespace dstest;

namespace {

std::string temp_path(const std::string& stem) {
  return "/tmp/dev-sandbox-wall-" + stem + "-" + std::to_string(getpid());
}

// Runs `command` in sh and returns its stdout.
std::string shell(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  if (!p) return "";
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// The extraction a UCM sweep script does (sed -nE 's/.../\N/p' | tail -n 1),
// over a file; one figure per pattern.
std::vector<double> sed_values(const std::string& file, const std::string& pattern) {
  std::vector<double> out;
  for (const std::string& v : lines_of(shell("sed -nE '" + pattern + "' " + file))) out.push_back(std::stod(v));
  return out;
}

// The five stats of a figure ("StartSkew" or "GroupWall") by the scripts' patterns:
// field k of "Min / Max / Avg / P50 / P90".
std::vector<std::vector<double>> stats_by_sed(const std::string& file, const std::string& figure) {
  std::vector<std::vector<double>> per_field;
  for (int k = 0; k < 5; ++k) {
    std::string skip;
    for (int i = 0; i < k; ++i) skip += "[^ ]+ \\/ ";
    per_field.push_back(sed_values(file, "s/.*" + figure + "\\(us\\)-\\(Min\\/Max\\/Avg\\/P50\\/P90\\)=" + skip +
                                             "([^ ]+).*/\\1/p"));
  }
  return per_field;
}

struct Block {
  std::string row, wall;
};

// Every result row and the line after it.
std::vector<Block> blocks_of(const std::string& out) {
  std::vector<Block> blocks;
  const auto ls = lines_of(out);
  for (size_t i = 0; i + 1 < ls.size(); ++i)
    if (ls[i].rfind("  From ", 0) == 0 && i + 2 < ls.size()) blocks.push_back({ls[i + 1], ls[i + 2]});
  return blocks;
}

// Checks one run's text: a Wall line after every row, the sed figures consistent
// with each other and with the row (WallBW = Size x Count / GroupWall avg).
void check_run(const std::vector<std::string>& args, size_t expected_rows, bool one_worker = false) {
  const RunResult r = run_tool(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto blocks = blocks_of(r.out);
  ASSERT_EQ(blocks.size(), expected_rows) << r.out;
  const std::string file = temp_path("out");
  std::ofstream(file) << r.out;
  const auto skew = stats_by_sed(file, "StartSkew");
  const auto wall = stats_by_sed(file, "GroupWall");
  const auto wall_bw = sed_values(file, "s/.*WallBW\\(GB\\/s\\)=([0-9.]+).*/\\1/p");
  unlink(file.c_str());
  for (int k = 0; k < 5; ++k) {
    ASSERT_EQ(skew[k].size(), expected_rows) << r.out;
    ASSERT_EQ(wall[k].size(), expected_rows) << r.out;
  }
  ASSERT_EQ(wall_bw.size(), expected_rows);
  for (size_t i = 0; i < expected_rows; ++i) {
    const Block& b = blocks[i];
    EXPECT_EQ(b.wall.rfind("  Wall: StartSkew(us)-(Min/Max/Avg/P50/P90)=", 0), 0u) << b.wall;
    EXPECT_EQ(b.wall.find("::"), std::string::npos) << "the Wall line must not name a From/To label";
    // Per iteration StartSkew <= GroupWall, so every order statistic is too.
    for (int k = 0; k < 5; ++k) {
      EXPECT_GE(skew[k][i], 0) << b.wall;
      EXPECT_LE(skew[k][i], wall[k][i]) << b.wall;
    }
    if (one_worker) {
      for (int k = 0; k < 5; ++k) EXPECT_EQ(skew[k][i], 0) << "one worker has no start skew: " << b.wall;
    }
    // WallBW x GroupWall avg and BW x Copy avg are both the bytes per iteration;
    // the table rounds averages to the microsecond and bandwidths to 3 decimals.
    std::vector<double> nums;
    static const std::regex stats(R"((\d+) / (\d+) / (\d+) / (\d+) / (\d+))");
    for (auto m = std::sregex_iterator(b.row.begin(), b.row.end(), stats); m != std::sregex_iterator(); ++m)
      nums.push_back(std::stod((*m)[3]));
    ASSERT_EQ(nums.size(), 2u) << b.row;  // Submit, then Copy
    const double copy_avg = nums[1], wall_avg = wall[2][i];
    const double bw = std::stod(b.row.substr(b.row.find_last_of(' ') + 1));
    ASSERT_GT(copy_avg, 0);
    ASSERT_GT(wall_avg, 0);
    const double by_copy = bw * copy_avg, by_wall = wall_bw[i] * wall_avg;
    const double tolerance = 1.5 * (0.5 / copy_avg + 0.5 / wall_avg + 0.0005 / bw + 0.0005 / wall_bw[i]);
    EXPECT_NEAR(by_wall / by_copy, 1.0, tolerance) << b.row << "\n" << b.wall;
  }
  // awk's last field of the ::device::all rows is still BW.
  if (r.out.find("::device::all") != std::string::npos) {
    std::ofstream(file) << r.out;
    const auto last = lines_of(shell("awk '/::device::all/ {print $NF}' " + file));
    unlink(file.c_str());
    size_t all_rows = 0;
    for (const Block& b : blocks)
      if (b.row.find("::device::all") != std::string::npos) {
        ASSERT_LT(all_rows, last.size());
        EXPECT_EQ(last[all_rows++], b.row.substr(b.row.find_last_of(' ') + 1));
      }
    EXPECT_EQ(last.size(), all_rows) << "only the rows name ::device::all";
  }
}

}  // namespace

TEST(WallLine, CopyRowsCarryItAndUcmPatternsReadIt) {
  check_run({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t", "all_host_to_all_device_ce_multi_stream",
             "-t", "one_device_to_all_device_ce", "-d", "2", "-s", "16K", "-n", "8", "-i", "6", "--warmup", "1"},
            3);
}

TEST(WallLine, SingleCardCasesHaveNoStartSkew) {
  check_run({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t", "host_to_device_batch_ce", "-s", "16K",
             "-n", "8", "-i", "6"},
            2, true);
}

TEST(WallLine, QuickModeAndTransRowsCarryIt) {
  check_run({"--backend", "sim", "--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "-s", "16K", "-n",
             "8", "-i", "4", "-d", "2"},
            1);
  check_run({"trans", "--backend", "sim", "-s", "16K", "-n", "8", "-i", "4", "-d", "2", "-t", "H2D", "-H", "pinned",
             "-H", "normal", "-M", "ce", "-M", "ms_2"},
            4);
}

TEST(WallLine, AioRowsCarryItWithNoSkewForOneWorker) {
  const std::string ws = "/dev/shm/" + std::string("ds-wall-aio-") + std::to_string(getpid());
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  check_run({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--buffered", "--io-size", "64K", "--io-number", "8",
             "--epoch-number", "3", "--iodepth", "4"},
            2, true);
}
