// `dev-sandbox offload` end to end: on sim with --validate (both engines, fragments,
// block layouts, the direct path, --model GQA and MLA), the files it wrote read back
// byte for byte against the pattern (--keep), one file set shared by the cards (each
// writing its share), through the cuda and ascend doubles (CE and the direct path; on
// ascend the direct path's refusal), a corrupted and a failing write (the shim), a
// full filesystem up front and ENOSPC while laying out, a killed worker and Ctrl-C.
// Every run is a few MiB and a few rounds.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_harness.h"
#include "disk_fixtures.h"
#include "json_checks.h"
#include "memory/pattern.h"
#include "staged_checks.h"

namespace {

using namespace dstest::disk;
using dstest::json;
using dstest::JsonRun;
using dstest::lines_starting;
using dstest::run_json;
using dstest::run_tool;

class OffloadEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!disk_base().empty()) remove_tree(disk_base());
  }
};
[[maybe_unused]] const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new OffloadEnv);

std::vector<std::string> offload_args(const std::string& ws, std::vector<std::string> extra,
                                      const char* backend = "sim") {
  std::vector<std::string> v = {"offload", "--backend", backend, "--create-workspace", "--workspace", ws,
                                "-i",      "2",         "--warmup", "1"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

bool uring_unavailable(const dstest::RunResult& r) {
  return r.exit_code == 1 && contains(r.err, "io_uring_queue_init");
}

// What every successful offload result holds: its row (device to disk) and what
// every staged result holds (staged_checks.h).
void expect_offload_result(const json& x, int devices, uint64_t bytes, const std::string& to_prefix = "sim") {
  EXPECT_EQ(x["from"], to_prefix + "::device::all");
  EXPECT_EQ(x.value("to", "").rfind("file::", 0), 0u) << x["to"];
  EXPECT_FALSE(x.contains("load_stages"));
  // The bytes the bandwidth is of: every card's request (one latent: once).
  const double b = static_cast<double>(bytes);
  EXPECT_NEAR(x["bandwidth_gib_s"].get<double>() * 1073741824.0 * x["copy_us"]["avg"].get<double>() * 1e-6, b, b * 1e-6);
  dstest::staged::expect_staged_result(x, "offload", "write", devices, b);
}

struct EngineCase {
  const char* engine;
  const char* method;
};

class OffloadEngines : public ::testing::TestWithParam<EngineCase> {};

TEST_P(OffloadEngines, ValidatesTwoCardsAndCleansUp) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("ws");  // the tool creates it
  const auto before = dstest::our_shm_entries();
  JsonRun r = run_json(offload_args(ws, {"-s", "64K", "-n", "12", "-d", "2", "--iodepth", "3", "--engine",
                                         GetParam().engine, "--validate"}));
  if (std::string(GetParam().engine) == "io_uring" && uring_unavailable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("offload");
  EXPECT_EQ(x["method"], std::string("CE-MS+") + GetParam().method + "-FORK");
  EXPECT_EQ(x["block_bytes"], 65536);
  EXPECT_EQ(x["count"], 24);
  const std::string brief = x["brief"];
  EXPECT_EQ(brief.rfind("copies on 4 streams from 2 cards into 3 pinned staging buffers per card, then write 12 "
                        "block files of 64.00 KiB per card to " + ws + " (", 0), 0u) << brief;
  EXPECT_TRUE(contains(brief, std::string(") with ") + GetParam().engine + ", O_DIRECT, iodepth 3")) << brief;
  expect_offload_result(x, 2, 2 * 12 * 65536);
  EXPECT_TRUE(contains(r.err, "-- its copies are CPU memcpy, not an accelerator's; the disk writes are real\n"))
      << r.err;
  EXPECT_FALSE(exists(ws)) << "the workspace it created was left behind";
  EXPECT_EQ(dstest::our_shm_entries(), before);
}

INSTANTIATE_TEST_SUITE_P(Offload, OffloadEngines,
                         ::testing::Values(EngineCase{"libaio", "LIBAIO"}, EngineCase{"io_uring", "IO_URING"}),
                         [](const ::testing::TestParamInfo<EngineCase>& i) { return std::string(i.param.engine); });

// Odd sizes (padded to 4096 in the file), fragments, two staging buffers (each
// reused many times), the direct path, a block layout, three cards and one shared
// file set: every file read back and checked after every pipelined pass.
TEST(OffloadShapes, FragmentsLayoutsSharedAndDirectPathValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::vector<std::vector<std::string>> shapes = {
      {"-s", "5000", "-f", "3", "-n", "10", "--staging", "2"},
      {"--block-layout", "128K,16K,32K", "-n", "6", "-d", "2", "--sdma", "true"},
      {"-s", "32K", "-n", "9", "-d", "3", "--shared", "--iodepth", "2", "--streams", "2"},
      {"-s", "16K", "-n", "7", "-d", "3", "--streams", "1"},
  };
  for (const auto& shape : shapes) {
    std::string what;
    for (const auto& s : shape) what += s + " ";
    const std::string ws = disk_base() + "/" + unique_name("shape");
    std::vector<std::string> extra = shape;
    extra.push_back("--validate");
    JsonRun r = run_json(offload_args(ws, extra));
    ASSERT_EQ(r.exit_code, 0) << what << r.err;
    const json x = r.result("offload");
    EXPECT_EQ(x["validated"], true) << what;
    ASSERT_TRUE(x.contains("offload_stages")) << what;
    EXPECT_FALSE(exists(ws)) << what;
    if (contains(what, "--sdma")) EXPECT_EQ(x["method"], "SDMA+LIBAIO-FORK") << what;
    if (contains(what, "--block-layout")) EXPECT_EQ(x["layout"], "128K,16K,32K") << what;
    // One set for the three cards: 9 blocks written once each, not once per card.
    if (contains(what, "--shared")) {
      EXPECT_TRUE(contains(x.value("brief", ""), "one set, each card its share")) << x["brief"];
      EXPECT_NEAR(x["bandwidth_gib_s"].get<double>() * 1073741824.0 * x["copy_us"]["avg"].get<double>() * 1e-6,
                  9.0 * 32768, 9.0 * 32768 * 1e-6) << what;
      EXPECT_EQ(x["count"], 9) << what;
    }
    if (contains(what, "-d 3")) EXPECT_EQ(x["devices"], 3) << what;
  }
}

// The files a run left (--keep) hold, fragment by fragment, byte for byte, the
// pattern of (card, fragment) the cards were filled with: block b's fragments back
// to back at the start of dev-sandbox-aio.<pid>.offload-c<card>.<b>, padded to 4096.
TEST(OffloadFiles, KeptFilesHoldThePatternByteForByte) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("keep");
  const dstest::ScopedPath guard(ws);
  const auto r = run_tool(offload_args(ws, {"-s", "5000", "-f", "3", "-n", "5", "-d", "2", "--staging", "2", "--keep"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: kept 10 block files in " + ws + " (")) << r.err;
  EXPECT_TRUE(contains(r.err, ") (--keep)\n")) << r.err;
  std::vector<std::string> names = entries(ws);
  ASSERT_EQ(names.size(), 10u);
  std::sort(names.begin(), names.end());
  const std::regex re("dev-sandbox-aio\\.([0-9]+)\\.offload-c([01])\\.([0-4])");
  std::vector<char> want(5000);
  for (const std::string& n : names) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(n, m, re)) << n;
    const int card = std::stoi(m[2]);
    const uint64_t block = std::stoull(m[3]);
    std::ifstream in(ws + "/" + n, std::ios::binary);
    const std::string got((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(got.size(), 16384u) << n << ": 3 x 5000 bytes padded to 4096";
    for (uint64_t f = 0; f < 3; ++f) {
      ds::pattern_fill(want.data(), want.size(), ds::pattern_key(card, block * 3 + f));
      EXPECT_EQ(got.compare(f * 5000, 5000, want.data(), want.size()), 0) << n << " fragment " << f;
    }
  }
}

// One latent on every card (--model DeepSeek-V3, MLA): one file set, card c writing
// blocks c, c+3, ...: all 8 files there, each the latent's blocks (the pattern of
// card 0), and the bytes those of one request, not three.
TEST(OffloadFiles, MlaWritesOneSetEachCardItsShare) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mla");
  const dstest::ScopedPath guard(ws);
  JsonRun r = run_json(offload_args(ws, {"--model", "DeepSeek-V3", "--input-len", "1K", "-d", "3", "--validate", "--keep"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("offload");
  // 8 blocks of 128 tokens x 61 layers, 128K,16K each: 488 tasks, once.
  expect_offload_result(x, 3, 488ULL * (131072 + 16384));
  EXPECT_EQ(x["count"], 488);
  EXPECT_TRUE(contains(x.value("brief", ""), "write 8 block files of 8.58 MiB, one set, each card its share")) << x["brief"];
  ASSERT_TRUE(x.contains("kv_load_ms")) << x.dump();
  std::vector<std::string> names = entries(ws);
  ASSERT_EQ(names.size(), 8u);
  const std::regex re("dev-sandbox-aio\\.([0-9]+)\\.offload\\.([0-7])");
  std::vector<char> want(131072);
  for (const std::string& n : names) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(n, m, re)) << n;
    const uint64_t block = std::stoull(m[2]);
    std::ifstream in(ws + "/" + n, std::ios::binary);
    std::vector<char> got(131072);
    ASSERT_TRUE(in.read(got.data(), static_cast<std::streamsize>(got.size()))) << n;
    // The first layer's first fragment (fragment index block x 61 x 2).
    ds::pattern_fill(want.data(), want.size(), ds::pattern_key(0, block * 61 * 2));
    EXPECT_TRUE(got == want) << n;
  }
}

// Which card writes which block of the one set: every card's 2nd write fails (the
// shim counts per process; --iodepth 1 keeps each card's writes in order), and the
// card that reports it names its own 2nd block, c + 3.
TEST(OffloadFiles, EachCardWritesBlocksCPlusMultiplesOfD) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("share");
  const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n",
                           "7", "-d", "3", "--shared", "--iodepth", "1", "-i", "1", "--warmup", "0"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_WRITE_NTH", "2"}, {"DS_SHIM_WRITE_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("card ([0-2]): write of block ([0-9]+) \\("))) << r.err;
  EXPECT_EQ(std::stoi(m[2]), std::stoi(m[1]) + 3) << r.err;
  EXPECT_FALSE(exists(ws));
}

// --compare-contiguous --validate checks the files the contiguous pass wrote: a copy
// of it that delivers a wrong byte (the shim: the 22nd memcpy of 16 KiB in the card's
// process; 4 fill the region at setup, per round 4 fill it again at the paged places,
// 4 are the paged pass's, 4 copy alone's, 4 fill the sequential slots, then the
// contiguous pass's: its block 1) is caught in that block's file.
TEST(OffloadFiles, ValidateCatchesACorruptCopyInTheContiguousPass) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("corruptc");
  const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n",
                           "4", "-i", "1", "--warmup", "0", "--validate", "--iodepth", "1", "--streams", "1",
                           "--block-table", "random", "--compare-contiguous"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_MEMCPY_SIZE", "16384"},
                           {"DS_SHIM_MEMCPY_NTH", "22"}, {"DS_SHIM_OFFSET", "100"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: offload round 0 (contiguous): block 1 (")) << r.err;
  EXPECT_TRUE(contains(r.err, "), fragment 1 in the file differs from the device at offset 100\n")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// --dry-run: the sizing and what offload would write, no disk and no device touched.
TEST(OffloadModel, DryRunTouchesNothing) {
  const std::string ws = "/tmp/" + unique_name("ds-offload-dry");
  const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "--model",
                           "Qwen3-32B", "--tp", "8", "--input-len", "32K", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "equivalent: dev-sandbox --backend sim offload --workspace " + ws +
                                  " --block-layout 32K,32K -n 16384 -d 8 (the same copies; it writes them to one file "
                                  "per layer and block, --model to 256 files of 64 layers each)\n"))
      << r.out;
  EXPECT_FALSE(exists(ws));
  // -d given is -d kept: --tp sets it only when it is not.
  const auto one = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "--model",
                             "Qwen3-32B", "--tp", "8", "--input-len", "32K", "-d", "1", "--dry-run"});
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_TRUE(contains(one.out, " --block-layout 32K,32K -n 16384 -d 1 (the same copies;")) << one.out;
  // More cards than the backend sees: the refusal says --tp set them.
  const auto many = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "--model",
                              "Qwen3-32B", "--tp", "8", "--input-len", "2K", "-i", "1"},
                             {{"DEV_SANDBOX_SIM_DEVICES", "2"}});
  EXPECT_EQ(many.exit_code, 2) << many.err;
  EXPECT_TRUE(contains(many.err, "dev-sandbox: error: option -d (from --tp) got 8 but the sim backend sees 2 devices\n"))
      << many.err;
  EXPECT_FALSE(exists(ws));
}

// The text: the title line, the row, the Wall line, the Stages line, the per-request
// line naming the whole path, device to disk.
TEST(OffloadOutput, TextLinesNameTheDirection) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("text");
  const auto r = run_tool(offload_args(ws, {"--model", "Qwen3-32B", "--tp", "8", "--input-len", "256", "-d", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(lines_starting(r.out, "[[ offload ]] ").size(), 1u) << r.out;
  ASSERT_EQ(lines_starting(r.out, "  sim::device::all  file::").size(), 1u) << r.out;
  ASSERT_EQ(lines_starting(r.out, "  Wall: ").size(), 1u) << r.out;
  const auto stages = lines_starting(r.out, "  Stages: disk alone ");
  ASSERT_EQ(stages.size(), 1u) << r.out;
  EXPECT_LT(r.out.find("  Wall: "), r.out.find("  Stages: "));
  const auto kv = lines_starting(r.out, "  KV offload per request");
  ASSERT_EQ(kv.size(), 1u) << r.out;
  EXPECT_TRUE(std::regex_match(kv[0], std::regex("  KV offload per request \\(device -> host -> disk\\): [0-9]+\\.[0-9]{3} "
                                                 "ms per card, 2 cards at once \\(Copy\\+IO avg; P50 [0-9]+\\.[0-9]{3} "
                                                 "ms\\); [0-9]+\\.[0-9]{3} ms end to end \\(GroupWall avg; P50 "
                                                 "[0-9]+\\.[0-9]{3} ms\\)")))
      << kv[0];
  EXPECT_FALSE(exists(ws));
}

// One CSV line's cells (a quoted cell may hold commas and doubled quotes).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted && c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
      cells.back() += '"';
      ++i;
    } else if (c == '"') {
      quoted = !quoted;
    } else if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// CSV: the result's row, then a row per stage alone, each with its own Copy
// statistics and BW (the bytes over its avg: what JSON's offload_stages says).
TEST(OffloadOutput, CsvHasARowPerStageAlone) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("csv");
  const auto r = run_tool(offload_args(ws, {"-s", "64K", "-n", "8", "-d", "2", "--format", "csv"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = r.out.find('\n', at)) != std::string::npos; at = nl + 1) lines.push_back(r.out.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 4u) << r.out;
  const std::vector<std::string> head = csv_cells(lines[0]);
  auto col = [&](const std::string& key) {
    const auto it = std::find(head.begin(), head.end(), key);
    EXPECT_NE(it, head.end()) << key;
    return static_cast<size_t>(it - head.begin());
  };
  const char* names[] = {"offload", "offload:disk_alone", "offload:copy_alone"};
  const char* labels[] = {"Copy+IO", "DiskAlone", "CopyAlone"};
  for (size_t i = 0; i < 3; ++i) {
    const std::vector<std::string> row = csv_cells(lines[i + 1]);
    ASSERT_EQ(row.size(), head.size()) << lines[i + 1];
    EXPECT_EQ(row[col("name")], names[i]);
    EXPECT_EQ(row[col("time_label")], labels[i]);
    const double avg_us = std::stod(row[col("copy_us_avg")]), bw = std::stod(row[col("bandwidth_gib_s")]);
    const double want = 2.0 * 8 * 65536 / (avg_us * 1e-6) / 1073741824.0;
    EXPECT_NEAR(bw, want, want * 1e-3) << names[i];
    if (i > 0) EXPECT_EQ(row[col("submit_us_avg")], "") << "a stage alone has no Submit of its own";
  }
  EXPECT_FALSE(exists(ws));
}

// A 4 MiB tmpfs: 2 cards x 3 files of 1 MiB cannot fit; found before anything is
// written (staged_checks.h).
TEST(OffloadWorkspace, FullFilesystemIsRefusedBeforeWriting) { dstest::staged::expect_full_filesystem_refused("offload"); }

// The disk fills while the files are laid out (the shim: the 6th pwrite answers
// ENOSPC, after the workspace's O_DIRECT probe and card 0's 3 files: card 1's 2nd):
// the line says how far it got, exit 1, nothing left.
TEST(OffloadWorkspace, EnospcWhileLayingOutRemovesWhatItWrote) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("enospc");
  const auto r = run_tool(offload_args(ws, {"-s", "64K", "-n", "3", "-d", "2"}),
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_PWRITE_ENOSPC", "6"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: error: offload ran out of space in " + ws + " (")) << r.err;
  EXPECT_TRUE(contains(r.err, ") while laying out the block files of card 1 of 2: 1 of 3 files of 64.00 KiB fit: No "
                              "space left on device; the block files were removed; free space or lower -n, -s or -d\n"))
      << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(ws)) << entries(ws).size() << " entries left";
}

// A block file cut short at an unaligned size (the corrupt shim truncates it to 5000
// bytes just before its first read): load's timed O_DIRECT read gets the 5000 bytes
// there are, which O_DIRECT cannot go on from, and says where the file ends, not "no
// progress"; offload's --validate read-back goes on buffered and says the same, with
// the file's expected size. Exit 1, one line, nothing left.
TEST(OffloadFailures, AReadAtAnUnalignedEndOfFileSaysTheFileEnds) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  struct Case {
    const char* cmd;
    std::vector<std::string> args;
    std::string line, rest;  // the error line before the file's pid, and after it
  } cases[] = {
      {"load", {}, "card 0: read of block 0 (WS/dev-sandbox-aio.",
       ".load-c0.0) at offset 0 (LIBAIO) moved 5000 of 65536 bytes (the file ends at offset 5000)"},
      {"offload", {"--validate"}, "card 0: validation failed: WS/dev-sandbox-aio.",
       ".offload-c0.0 ends at offset 5000 of 65536"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.cmd);
    const std::string ws = disk_base() + "/" + unique_name("eof");
    std::vector<std::string> args = offload_args(ws, {"-s", "64K", "-n", "2", "--iodepth", "1"});
    args[0] = c.cmd;
    args.insert(args.end(), c.args.begin(), c.args.end());
    const auto r = run_tool(args, {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_TRUNCATE", "5000"}});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, " to 5000 bytes\n")) << r.err;
    const std::vector<std::string> errors = lines_starting(r.err, "dev-sandbox: error: ");
    ASSERT_EQ(errors.size(), 1u) << r.err;
    std::string head = "dev-sandbox: error: " + c.line;
    head.replace(head.find("WS"), 2, ws);
    EXPECT_EQ(errors[0].rfind(head, 0), 0u) << errors[0] << "\nwanted: " << head;
    EXPECT_EQ(errors[0].substr(errors[0].size() - std::min(errors[0].size(), c.rest.size())), c.rest) << errors[0];
    EXPECT_FALSE(exists(ws)) << entries(ws).size() << " entries left";
  }
}

// The disk fails card 0's 2nd write of the pipelined pass (block 1: --iodepth 1,
// no warm-up): exit 1 naming the card, the block, its file and the call; with
// --keep too nothing is left (the files stay only after a successful run).
TEST(OffloadFailures, AFailingWriteNamesCardBlockFileAndCall) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("eio");
  const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n",
                           "4", "--iodepth", "1", "-i", "1", "--warmup", "0", "--keep"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_WRITE_NTH", "2"}, {"DS_SHIM_WRITE_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  std::smatch m;
  EXPECT_TRUE(std::regex_search(
      r.err, m,
      std::regex("dev-sandbox: error: card 0: write of block 1 \\(" + ws +
                 "/dev-sandbox-aio\\.[0-9]+\\.offload-c0\\.1\\)[^\n]*LIBAIO\\): Input/output error")))
      << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(contains(r.err, "kept ")) << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// One write sends a flipped byte (card 0's 3rd write: block 2 of the pipelined
// pass): --validate reads the file back and names the block, file and offset.
TEST(OffloadFailures, ValidateCatchesACorruptedWrite) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("corrupt");
  const std::vector<std::string> args = {"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s",
                                         "16K", "-n", "4", "--iodepth", "1", "-i", "1", "--warmup", "0", "--validate"};
  const std::map<std::string, std::string> env = {
      {"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_WRITE_NTH", "3"}, {"DS_SHIM_OFFSET", "123"}};
  const auto r = run_tool(args, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "corrupt_shim: pid ")) << "the shim did nothing: " << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: error: card 0: validation failed: offload round 0: block 2 (" + ws +
                              "/dev-sandbox-aio."))
      << r.err;
  EXPECT_TRUE(contains(r.err, ".offload-c0.2), fragment 2 in the file differs from the device at offset 123\n")) << r.err;
  EXPECT_FALSE(contains(r.out, "offload PASS")) << r.out;
  EXPECT_FALSE(exists(ws));
  // Without --validate the same run passes: only the read-back sees it.
  std::vector<std::string> plain(args.begin(), args.end() - 1);
  EXPECT_EQ(run_tool(plain, env).exit_code, 0);
}

// --validate reads each file back through its O_DIRECT descriptor; a read that comes
// back short (the shim: every pread of more than B bytes answers B) is continued at an
// aligned offset (an unaligned one is EINVAL through O_DIRECT), and where a read brings
// less than 4 KiB the rest is read buffered, with a note.
TEST(OffloadFailures, ShortReadBackIsContinuedAlignedOrBuffered) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  for (const char* bytes : {"6000", "100"}) {
    SCOPED_TRACE(bytes);
    const std::string ws = disk_base() + "/" + unique_name("shortread");
    const std::vector<std::string> args = {"offload", "--backend", "sim", "--create-workspace", "--workspace", ws,
                                           "-s", "64K", "-n", "3", "-i", "1", "--warmup", "0", "--validate"};
    JsonRun r = run_json(args, {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_PREAD_SHORT", bytes}});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "corrupt_shim: pid ")) << "the shim did nothing: " << r.err;
    const json x = r.result("offload");
    EXPECT_EQ(x["validated"], true);
    std::string readback;
    for (const auto& n : x["notes"])
      if (contains(n.get<std::string>(), "--validate: an O_DIRECT read of ")) readback = n.get<std::string>();
    if (std::string(bytes) == "6000") {
      EXPECT_EQ(readback, "") << "6000 bytes reach an aligned 4096: no fallback";
    } else {
      EXPECT_EQ(readback.rfind("--validate: an O_DIRECT read of " + ws + "/", 0), 0u) << readback;
      EXPECT_TRUE(contains(readback, " returned 100 bytes at offset 0, less than the 4096 bytes O_DIRECT moves at a "
                                     "time: the rest of the file was read back buffered (from the page cache)"))
          << readback;
      EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: offload: --validate: an O_DIRECT read of ").size(), 1u)
          << r.err;
    }
    EXPECT_FALSE(exists(ws));
  }
}

// A write that comes back short and unaligned (the shim: the whole block written with
// every byte from 6000 on flipped, 6000 answered) goes on from 4096 (at 6000 it would be
// EINVAL through O_DIRECT), writing the flipped tail again: the 1st write of more than
// 4 KiB is the block files' layout (plain pwrite), the 7th the pipelined pass's first
// (libaio, after the layout's 3 and --validate's 3 poisonings); --validate reads every
// file back byte for byte.
TEST(OffloadFailures, AShortUnalignedWriteGoesOnAlignedAndTheFilesAreRight) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  for (const char* nth : {"1", "7"}) {
    SCOPED_TRACE(nth);
    const std::string ws = disk_base() + "/" + unique_name("shortwrite");
    JsonRun r = run_json({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n",
                          "3", "-i", "1", "--warmup", "0", "--validate"},
                         {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_WRITE_SHORT", "6000"},
                          {"DS_SHIM_WRITE_SHORT_NTH", nth}});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, ": short write " + std::string(nth) + "\n")) << "the shim did nothing: " << r.err;
    EXPECT_EQ(r.result("offload")["validated"], true);
    if (std::string(nth) == "7")
      EXPECT_TRUE(contains(r.err, "dev-sandbox: note: 1 short writes were completed by resubmitting the remainder"))
          << r.err;
    EXPECT_FALSE(exists(ws));
  }
}

// Every write of more than 4 KiB answering 100 bytes (from the 1st: the layout's
// plain pwrite; from the 7th: the pipelined pass's libaio writes) makes no aligned
// progress: 3 calls in a row end the run, exit 1, one line naming the call, the
// block and its file (one write in flight: block 0's); nothing left behind.
TEST(OffloadFailures, AWriteThatStaysShortBelowFourKiBEnds) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string tail = ": moved 100 bytes 3 times in a row, less than the 4096 bytes O_DIRECT moves at a time: no "
                           "progress\n";
  for (const char* from : {"1", "7"}) {
    SCOPED_TRACE(from);
    const std::string ws = disk_base() + "/" + unique_name("stuckwrite");
    const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n",
                             "3", "-i", "1", "--warmup", "0", "--iodepth", "1", "--validate"},
                            {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_WRITE_SHORT", "100"},
                             {"DS_SHIM_WRITE_SHORT_FROM", from}});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
    const std::regex line(std::string(from) == "1"
                              ? "dev-sandbox: error: pwrite\\(" + ws + "/dev-sandbox-aio\\.[0-9]+\\.offload-c0\\.0\\) at offset 0"
                              : "dev-sandbox: error: card 0: write of block 0 \\(" + ws +
                                    "/dev-sandbox-aio\\.[0-9]+\\.offload-c0\\.0\\) at offset 0 \\(65536 bytes, LIBAIO\\)");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.err, m, line)) << r.err;
    EXPECT_TRUE(contains(r.err, m.str(0) + tail)) << r.err;
    EXPECT_FALSE(exists(ws)) << "left behind after the failure";
  }
}

// A copy skipped by the engine (the shim: the 5th memcpy of 16 KiB in the card's
// process, after the 4 that fill its region: block 0's D2H copy) is caught.
TEST(OffloadFailures, ValidateCatchesASkippedCopy) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("skip");
  const auto r = run_tool({"offload", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n",
                           "4", "-i", "1", "--warmup", "0", "--validate", "--iodepth", "1", "--streams", "1"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_MEMCPY_SIZE", "16384"},
                           {"DS_SHIM_MEMCPY_NTH", "5"}, {"DS_SHIM_MEMCPY_SKIP", "1"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: offload round 0: block 0 (")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// Through the libcuda double: CE and the direct path validated, then a D2H copy the
// runtime refuses (the 3rd cuMemcpyDtoHAsync) named with its card, block and call.
TEST(OffloadBackends, CudaValidatesCeAndDirectPathAndNamesAFailingCopy) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("cuda");
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                                                  {"DS_CUDA_DOUBLE_DEVICES", "2"}};
  for (const char* sdma : {"false", "true"}) {
    JsonRun ok = run_json(offload_args(ws, {"-s", "16K", "-n", "6", "-d", "2", "--validate", "--staging", "2", "--sdma",
                                            sdma},
                                       "cuda"),
                          env);
    ASSERT_EQ(ok.exit_code, 0) << sdma << ok.err;
    const json x = ok.result("offload");
    expect_offload_result(x, 2, 2 * 6 * 16384, "cuda");
    // The direct path on cuda: one cuMemcpyBatchAsync per block.
    EXPECT_EQ(x["method"], std::string(sdma) == "true" ? "BATCH+LIBAIO-FORK" : "CE-MS+LIBAIO-FORK") << sdma;
    EXPECT_FALSE(exists(ws));
  }
  auto failing = env;
  failing["DS_CUDA_DOUBLE_FAIL"] = "cuMemcpyDtoHAsync_v2:3";
  const auto r = run_tool({"offload", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K", "-n",
                           "6", "-i", "1", "--warmup", "0", "--streams", "1"},
                          failing);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: copy of block 2 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, "cuMemcpyDtoHAsync")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// The two stages overlap: with the double's copies taking 2 ms a MiB on one stream
// (a stream's thread sleeps, it does not spin; 128 ms a pass, about what the disk
// takes here, so that overlap can gain the most and a noisy disk still leaves a
// margin: with 4 streams the copies took 35 ms against 80-210 ms of disk, and the
// most overlap could gain was about 1.2) the pipelined pass beats the two stages run
// one after the other, by a margin. A pass thread that spun on the copies' events
// took the CPUs the copy threads and the disk's completions needed and fell below it.
// Up to three runs: a disk slowed by another test's I/O during the pipelined pass
// only (the suite runs two at a time) once halved the writes there (131 ms busy,
// against 67 ms alone); a pipeline that does not overlap falls short in every run.
TEST(OffloadBackends, CudaCopiesAndWritesOverlap) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  std::string tries;
  bool overlapped = false;
  for (int t = 0; t < 3 && !overlapped; ++t) {
    const std::string ws = disk_base() + "/" + unique_name("cuda-overlap");
    JsonRun r = run_json(offload_args(ws, {"-s", "4M", "-n", "16", "--streams", "1"}, "cuda"),
                         {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                          {"DS_CUDA_DOUBLE_DEVICES", "2"},
                          {"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "2000"}});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(exists(ws));
    const json x = r.result("offload");
    const json& s = x["offload_stages"];
    const double disk = s["disk_alone_gib_s"], copy = s["copy_alone_gib_s"], piped = s["pipelined_gib_s"];
    const double one_after_the_other = 1.0 / (1.0 / disk + 1.0 / copy);
    overlapped = piped > 1.2 * one_after_the_other;
    tries += "\n" + std::to_string(piped) + " vs " + std::to_string(one_after_the_other) + ": " + s.dump();
  }
  EXPECT_TRUE(overlapped) << "pipelined never 1.2x the stages one after the other:" << tries;
}

// Through the AscendCL and runtime doubles: CE copies validated (the staging our own
// registered mapping, as O_DIRECT into aclrtMallocHost memory fails: the shim), and
// the direct path, which has no device-to-host direction there, refused in one line.
TEST(OffloadBackends, AscendValidatesCeAndRefusesTheDirectPath) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
                                                  {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
                                                  {"DS_ACL_DOUBLE_DEVICES", "2"},
                                                  {"DS_ACL_DOUBLE_COPY_NS_PER_KIB", "2000"},
                                                  {"LD_PRELOAD", DS_CORRUPT_SHIM}};
  const std::string ws = disk_base() + "/" + unique_name("acl");
  JsonRun r = run_json(offload_args(ws, {"-s", "64K", "-n", "6", "-d", "2", "--staging", "2", "--streams", "2",
                                         "--validate"},
                                    "ascend"),
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("offload");
  expect_offload_result(x, 2, 2 * 6 * 65536, "acl");
  EXPECT_EQ(x["method"], "CE-MS+LIBAIO-FORK");
  EXPECT_TRUE(contains(x.value("brief", ""), "registered mmap staging buffers")) << x["brief"];
  EXPECT_FALSE(exists(ws));
  const auto refused = run_tool(offload_args(ws, {"-s", "64K", "-n", "6", "--sdma", "true"}, "ascend"), env);
  EXPECT_EQ(refused.exit_code, 1) << refused.err;
  EXPECT_TRUE(contains(refused.err,
                       "dev-sandbox: error: --sdma true: the ascend backend's direct path does not copy device to host "
                       "(docs/hardware-status.md); offload with CE copies (--sdma false)\n"))
      << refused.err;
  EXPECT_EQ(lines_starting(refused.err, "dev-sandbox: error:").size(), 1u) << refused.err;
  EXPECT_FALSE(exists(ws));
}

TEST(OffloadCleanup, KilledWorkerIsNamedAndNothingIsLeft) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  dstest::staged::expect_killed_worker_leaves_nothing("offload", disk_base() + "/" + unique_name("killed"));
}

TEST(OffloadCleanup, CtrlCLeavesNothingEvenWithKeep) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  dstest::staged::expect_ctrl_c_leaves_nothing("offload", disk_base() + "/" + unique_name("sigint"), {"--keep"});
}

}  // namespace

namespace dstest_block_table {

// --block-table: every block copied from the slot the table names (the copies' device
// addresses in the double's call log), the files validated against the pattern of
// their block's index, not its slot; a random table with a seed the same every run.
TEST(OffloadBlockTable, CopiesComeFromTheTablesSlotsAndValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("table");
  dstest::TempFile table("ds-table");
  { std::ofstream(table.path()) << "5\n# a comment line\n0\n3\n"; }
  dstest::TempFile log("ds-table-log");
  JsonRun r = run_json(offload_args(ws, {"-s", "64K", "-n", "3", "--streams", "1", "--validate", "--block-table",
                                         table.path(), "--pool-blocks", "8"},
                                    "cuda"),
                       {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("offload");
  expect_offload_result(x, 1, 3 * 65536, "cuda");
  EXPECT_TRUE(contains(x.value("brief", ""), "each block at its slot of a 8-block paged pool (--block-table " +
                                                 table.path() + ")"))
      << x["brief"];
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyDtoHAsync_v2", "src", 65536, 3),
            (std::vector<uint64_t>{5, 0, 3}));
  EXPECT_FALSE(exists(ws));
}

TEST(OffloadBlockTable, RandomTablesValidateOnSim) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"-s", "5000", "-f", "3", "-n", "10", "--block-table", "random:7"},
        std::vector<std::string>{"--block-layout", "16K,4K,8K", "-n", "9", "-d", "2", "--block-table", "random",
                                 "--pool-blocks", "9"},
        std::vector<std::string>{"-s", "16K", "-n", "6", "-d", "2", "--sdma", "true", "--block-table", "sequential"}}) {
    const std::string ws = disk_base() + "/" + unique_name("random");
    std::vector<std::string> args = extra;
    args.push_back("--validate");
    JsonRun r = run_json(offload_args(ws, args));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.result("offload")["validated"], true);
    EXPECT_FALSE(exists(ws));
  }
}

// --compare-contiguous: each round a fourth pass copying the same blocks from slots
// 0, 1, ... of the same pool (the double's call log), its figures in JSON, the Paged
// line in the text; the paged pass still validates.
TEST(OffloadBlockTable, CompareContiguousCopiesFromTheSequentialSlotsToo) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("contig");
  dstest::TempFile table("ds-table");
  { std::ofstream(table.path()) << "5\n0\n3\n"; }
  dstest::TempFile log("ds-table-log");
  JsonRun r = run_json(offload_args(ws, {"-s", "64K", "-n", "3", "--streams", "1", "--validate", "--block-table",
                                         table.path(), "--pool-blocks", "8", "--compare-contiguous"},
                                    "cuda"),
                       {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<uint64_t> want;
  for (int round = 0; round < 3; ++round) want.insert(want.end(), {5, 0, 3, 5, 0, 3, 0, 1, 2});
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyDtoHAsync_v2", "src", 65536, 27), want);
  const json x = r.result("offload");
  EXPECT_EQ(x["validated"], true);
  EXPECT_EQ(x["mean_chunk_bytes"], 65536.0);
  EXPECT_EQ(x["paged"]["chunks_per_iteration"], 3);
  const double contig = x["paged"]["contiguous"]["bandwidth_gib_s"].get<double>();
  ASSERT_GT(contig, 0);
  EXPECT_NEAR(x["paged"]["percent_of_contiguous"].get<double>(), 100.0 * x["bandwidth_gib_s"].get<double>() / contig,
              1e-9);
  const auto t = run_tool(offload_args(ws, {"--block-layout", "16K,4K,8K", "-n", "9", "-d", "2", "--block-table",
                                            "random:3", "--compare-contiguous"}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto paged = dstest::lines_starting(t.out, "  Paged: ");
  ASSERT_EQ(paged.size(), 1u) << t.out;
  // 2 cards x 9 blocks x 3 chunks of 28K / 3 bytes.
  EXPECT_TRUE(std::regex_match(paged[0], std::regex(R"(  Paged: 54 chunks of 9557.3 B, [0-9.]+ GiB/s = [0-9.]+% of contiguous)")))
      << paged[0];
  EXPECT_FALSE(exists(ws));
}

}  // namespace dstest_block_table
