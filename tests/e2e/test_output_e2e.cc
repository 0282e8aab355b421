// --format json|csv and --output end to end on sim: documents that parse, values
// consistent within one run and with the text table, failures still reported.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "output_checks.h"

using namespace dstest;
using nlohmann::json;

namespace {

const std::vector<std::string> kRun = {"copy", "-t", "host_to_device_ce", "-t",
                                       "all_host_to_all_device_ce_multi_stream",
                                       "-d", "2", "-s", "64K", "-n", "4", "-i", "5",
                                       "--warmup", "1", "--validate", "--backend", "sim"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string temp_path(const std::string& suffix) {
  return "/tmp/dev-sandbox-output-test-" + std::to_string(getpid()) + suffix;
}

bool exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// BW = bytes / copy avg (docs/measurement.md), from the document's own numbers.
void expect_bandwidth_consistent(const json& r) {
  const double bytes = r["block_bytes"].get<double>() * r["count"].get<double>();
  const double gib = bytes / (r["copy_us"]["avg"].get<double>() * 1e-6) / (1 << 30);
  EXPECT_NEAR(r["bandwidth_gib_s"].get<double>(), gib, gib * 1e-9);
  EXPECT_NEAR(r["bandwidth_gb_s"].get<double>(), gib * (1 << 30) / 1e9, gib * 1e-9);
  const double wall = bytes / (r["wall_us"]["avg"].get<double>() * 1e-6) / (1 << 30);
  EXPECT_NEAR(r["wall_bandwidth_gib_s"].get<double>(), wall, wall * 1e-9);
  for (const char* t : {"submit_us", "copy_us", "wall_us"}) {
    EXPECT_LE(r[t]["min"].get<double>(), r[t]["p50"].get<double>()) << t;
    EXPECT_LE(r[t]["p50"].get<double>(), r[t]["p90"].get<double>()) << t;
    EXPECT_LE(r[t]["p90"].get<double>(), r[t]["max"].get<double>()) << t;
  }
}

}  // namespace

TEST(OutputE2e, JsonIsOneValidDocumentWithConsistentNumbers) {
  const RunResult r = run_tool(with(kRun, {"--format", "json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_run_lines(r.err), "");
  const json doc = json::parse(r.out);  // throws (fails the test) on invalid JSON
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_EQ(doc["backend"]["name"], "sim");
  EXPECT_FALSE(doc["tool"]["version"].get<std::string>().empty());
  EXPECT_EQ(doc["command_line"][1], "copy");
  EXPECT_EQ(doc["command_line"].back(), "json");  // argv as typed
  ASSERT_EQ(doc["results"].size(), 2u);
  const json& single = doc["results"][0];
  const json& fork = doc["results"][1];
  EXPECT_EQ(single["name"], "host_to_device_ce");
  EXPECT_EQ(fork["name"], "all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(single["count"], 4);
  EXPECT_EQ(fork["count"], 8);  // d x n
  EXPECT_EQ(fork["devices"], 2);
  EXPECT_EQ(fork["streams"], 4);
  EXPECT_EQ(fork["method"], "CE-MS-FORK");
  for (const json& c : doc["results"]) {
    EXPECT_EQ(c["block_bytes"], 65536);
    EXPECT_EQ(c["iterations"], 5);
    EXPECT_EQ(c["warmup"], 1);
    EXPECT_EQ(c["validated"], true);
    EXPECT_EQ(c["time_label"], "Copy");
    EXPECT_GE(c["setup_s"].get<double>(), 0.0);
    expect_bandwidth_consistent(c);
  }
}

TEST(OutputE2e, JsonCarriesWhatTheTableShows) {
  const RunResult text = run_tool(kRun);
  const RunResult js = run_tool(with(kRun, {"--format", "json"}));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  ASSERT_EQ(js.exit_code, 0) << js.err;
  const json doc = json::parse(js.out);
  for (const json& c : doc["results"]) {
    const std::string name = c["name"];
    const size_t t = text.out.find("[[ " + name + " ]] " + c["brief"].get<std::string>() + "\n");
    ASSERT_NE(t, std::string::npos) << name;
    const size_t header = text.out.find('\n', t) + 1;
    const size_t row = text.out.find('\n', header) + 1;
    const auto cells = split_ws(text.out.substr(row, text.out.find('\n', row) - row));
    ASSERT_GE(cells.size(), 5u);
    EXPECT_EQ(cells[0], c["from"]);
    EXPECT_EQ(cells[1], c["to"]);
    EXPECT_EQ(cells[2], c["method"]);
    EXPECT_EQ(cells[3], std::to_string(c["block_bytes"].get<uint64_t>() / 1024));
    EXPECT_EQ(cells[4], std::to_string(c["count"].get<uint64_t>()));
  }
  EXPECT_NE(text.out.find("[validation] host_to_device_ce PASS"), std::string::npos);
}

TEST(OutputE2e, CsvHasEveryColumnOnEveryLine) {
  const RunResult r = run_tool(with(kRun, {"--format", "csv"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_run_lines(r.err), "");
  std::string error;
  const auto rows = parse_csv(r.out, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(rows.size(), 3u) << r.out;
  const auto& head = rows[0];
  EXPECT_EQ(head.front(), "name");
  EXPECT_EQ(head.back(), "error");
  auto col = [&](const std::string& n) {
    return static_cast<size_t>(std::find(head.begin(), head.end(), n) - head.begin());
  };
  for (const char* n : {"block_bytes", "count", "copy_us_avg", "wall_us_p90", "bandwidth_gib_s",
                        "bandwidth_gb_s", "wall_bandwidth_gib_s", "validated", "setup_s"})
    ASSERT_LT(col(n), head.size()) << n;
  for (size_t i = 1; i < rows.size(); ++i) {
    const auto& row = rows[i];
    ASSERT_EQ(row.size(), head.size()) << "line " << i;
    const double gib = std::stod(row[col("block_bytes")]) * std::stod(row[col("count")]) /
                       (std::stod(row[col("copy_us_avg")]) * 1e-6) / (1 << 30);
    EXPECT_NEAR(std::stod(row[col("bandwidth_gib_s")]), gib, gib * 1e-3);
    EXPECT_EQ(row[col("validated")], "true");
    EXPECT_EQ(row[col("error")], "");
  }
}

TEST(OutputE2e, OutputFileTakesTheResultsAndStdoutStaysEmpty) {
  const std::string path = temp_path(".json");
  const RunResult r = run_tool(with(kRun, {"--format", "json", "--output", path}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(without_run_lines(r.err), "dev-sandbox: wrote the results to " + path + " (json)\n");  // says where, once
  const json doc = json::parse(slurp(path));
  EXPECT_EQ(doc["results"].size(), 2u);
  std::remove(path.c_str());
}

TEST(OutputE2e, QuickModeTakesTheFormatToo) {
  const RunResult r = run_tool({"--model-type", "gqa", "--iodirect", "false", "--sdma", "false",
                                "-d", "2", "-s", "16K", "-n", "2", "-i", "3", "--format", "json",
                                "--backend", "sim"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  ASSERT_EQ(doc["results"].size(), 1u);
  EXPECT_EQ(doc["results"][0]["name"], "all_host_to_all_device_ce_multi_stream");
}

TEST(OutputE2e, UnknownFormatIsAUsageError) {
  const RunResult r = run_tool(with(kRun, {"--format", "xml"}));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("text, json or csv"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(OutputE2e, UnwritableOutputFailsNamingThePath) {
  const std::string path = "/nonexistent-dev-sandbox-dir/result.json";
  const RunResult r = run_tool(with(kRun, {"--format", "json", "--output", path}));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(path), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(OutputE2e, UsageErrorLeavesNoNewOutputFile) {
  const std::string path = temp_path("-usage.json");
  const RunResult r = run_tool({"copy", "-t", "no_such_case", "--format", "json", "--output", path,
                                "--backend", "sim"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(exists(path));
}

// Too much memory asked for: the case fails when it starts (exit 1), and the
// document still says which case failed and why.
TEST(OutputE2e, FailingRunStillWritesAValidJsonDocument) {
  const RunResult r = run_tool({"copy", "-t", "device_to_host_ce", "-t", "host_to_device_ce",
                                "-s", "1G", "-n", "100000", "-i", "2", "--format", "json",
                                "--backend", "sim"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("dev-sandbox: error: ", 0), 0u) << r.err;
  const json doc = json::parse(r.out);
  EXPECT_EQ(doc["status"], "failed");
  EXPECT_EQ(doc["error"]["case"], "device_to_host_ce");
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("not enough memory"), std::string::npos);
  EXPECT_TRUE(doc["results"].empty());
}

TEST(OutputE2e, FailingRunStillWritesCsvNamingTheError) {
  const RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-s", "1G", "-n", "100000",
                                "-i", "2", "--format", "csv", "--backend", "sim"});
  ASSERT_EQ(r.exit_code, 1) << r.err;
  std::string error;
  const auto rows = parse_csv(r.out, &error);
  ASSERT_EQ(error, "");
  ASSERT_EQ(rows.size(), 2u) << r.out;
  EXPECT_EQ(rows[1].size(), rows[0].size());
  EXPECT_EQ(rows[1].front(), "host_to_device_ce");
  EXPECT_NE(rows[1].back().find("not enough memory"), std::string::npos);
}

// A run killed mid-way never leaves a half-written --output: the previous file is
// as it was (the document is written next to it and renamed when complete).
TEST(OutputE2e, KilledRunLeavesThePreviousOutputUntouched) {
  const std::string path = temp_path("-killed.json");
  { std::ofstream(path) << "previous\n"; }
  const std::string out = temp_path("-killed.out"), err = temp_path("-killed.err");
  const int pid = start_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t",
                              "all_host_to_all_device_ce_multi_stream", "-d", "2", "-s", "64K", "-n", "16",
                              "-i", "100000000", "--format", "json", "--output", path},
                             out, err);
  wait_children_busy(pid, 1);
  kill(pid, SIGKILL);
  wait_tool(pid);
  EXPECT_EQ(slurp(path), "previous\n");
  // At most the temporary is left, named so no run reads it; the test removes it.
  const std::string dir = path.substr(0, path.find_last_of('/') + 1);
  const std::string leftover = dir + "." + path.substr(path.find_last_of('/') + 1) + ".dev-sandbox-" +
                               std::to_string(pid) + ".tmp";
  std::remove(leftover.c_str());
  std::remove(path.c_str());
  std::remove(out.c_str());
  std::remove(err.c_str());
}

// `| head`: the reader goes away after a few bytes; the run ends quietly (exit 141)
// once it next writes, its children stopped and its files removed.
TEST(OutputE2e, ClosedStdoutEndsTheRunQuietlyWithNothingLeft) {
  const std::string ws = "/dev/shm/ds-head-aio-" + std::to_string(getpid());
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  const std::vector<std::string> commands = {
      std::string(DS_BINARY) + " copy --backend sim -t host_to_device_ce -t host_to_device_batch_ce -t "
                               "all_host_to_all_device_ce_multi_stream -d 2 -s 64K -n 8 -i 20",
      std::string(DS_BINARY) + " aio --backend sim --create-workspace --workspace " + ws +
          " --buffered --io-size 64K --io-number 16 --epoch-number 3 --iodepth 4",
  };
  const auto before = our_shm_entries();
  for (const std::string& c : commands) {
    const std::string script = "set -o pipefail; timeout 60 " + c + " 2>" + temp_path("-head.err") +
                               " | head -c 10 >/dev/null; echo ${PIPESTATUS[0]}";
    FILE* p = popen(("bash -c '" + script + "'").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char buf[64] = {0};
    const size_t n = fread(buf, 1, sizeof buf - 1, p);
    pclose(p);
    const std::string status(buf, n);
    EXPECT_EQ(status, "141\n") << c << "\nstderr: " << slurp(temp_path("-head.err"));
    EXPECT_EQ(slurp(temp_path("-head.err")).find("error"), std::string::npos) << "quietly";
  }
  struct stat st;
  EXPECT_NE(stat(ws.c_str(), &st), 0) << "the aio workspace was left behind";
  EXPECT_EQ(our_shm_entries(), before);
  std::remove(temp_path("-head.err").c_str());
}
