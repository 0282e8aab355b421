// `dev-sandbox load` end to end on sim (and one run through the libcuda double):
// --validate with -s, --block-layout and --model; --shared; -d 3; both engines; the
// Stages line against the JSON; tmpfs refused and --buffered; a full filesystem
// while laying out; a failed read, a corrupted read, a failed copy; a killed worker
// and Ctrl-C. Every run is a few MiB and a few rounds.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli_harness.h"
#include "disk_fixtures.h"
#include "json_checks.h"
#include "layout/block_table.h"
#include "staged_checks.h"

namespace {

using namespace dstest::disk;
using dstest::json;
using dstest::JsonRun;
using dstest::lines_starting;
using dstest::run_json;
using dstest::run_tool;

class LoadEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!disk_base().empty()) remove_tree(disk_base());
  }
};
[[maybe_unused]] const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new LoadEnv);

std::vector<std::string> load_args(const std::string& ws, std::vector<std::string> extra) {
  std::vector<std::string> v = {"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-i", "2", "--warmup", "1"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

bool uring_unavailable(const dstest::RunResult& r) {
  return r.exit_code == 1 && contains(r.err, "io_uring_queue_init");
}

// What every successful load result holds: its row (disk to device) and what every
// staged result holds (staged_checks.h).
void expect_load_result(const json& x, int devices, uint64_t bytes_per_card) {
  EXPECT_EQ(x.value("from", "").rfind("file::", 0), 0u) << x["from"];
  EXPECT_EQ(x["to"], "sim::device::all");
  dstest::staged::expect_staged_result(x, "load", "read", devices, static_cast<double>(bytes_per_card) * devices);
}

struct EngineCase {
  const char* engine;
  const char* method;
};

class LoadEngines : public ::testing::TestWithParam<EngineCase> {};

TEST_P(LoadEngines, ValidatesTwoCardsAndCleansUp) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("ws");  // the tool creates it
  const auto before = dstest::our_shm_entries();
  JsonRun r = run_json(load_args(ws, {"-s", "64K", "-n", "12", "-d", "2", "--iodepth", "3", "--engine",
                                      GetParam().engine, "--validate"}));
  if (std::string(GetParam().engine) == "io_uring" && uring_unavailable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("load");
  EXPECT_EQ(x["method"], std::string(GetParam().method) + "+CE-MS-FORK");
  EXPECT_EQ(x["block_bytes"], 65536);
  EXPECT_EQ(x["count"], 24);
  EXPECT_TRUE(contains(x.value("brief", ""), "O_DIRECT")) << x["brief"];
  expect_load_result(x, 2, 12 * 65536);
  EXPECT_FALSE(exists(ws)) << "the workspace it created was left behind";
  EXPECT_EQ(dstest::our_shm_entries(), before);
}

INSTANTIATE_TEST_SUITE_P(Load, LoadEngines,
                         ::testing::Values(EngineCase{"libaio", "LIBAIO"}, EngineCase{"io_uring", "IO_URING"}),
                         [](const ::testing::TestParamInfo<EngineCase>& i) { return std::string(i.param.engine); });

// Odd sizes (padded to 4096 in the file), fragments, two staging buffers (so each
// is reused many times), the direct path, a block layout, three cards sharing one
// file set: every card's region checked after every pipelined pass.
TEST(LoadShapes, BlockLayoutFragmentsSharedAndDirectPathValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::vector<std::vector<std::string>> shapes = {
      {"-s", "5000", "-f", "3", "-n", "10", "--staging", "2"},
      {"--block-layout", "128K,16K,32K", "-n", "6", "-d", "2", "--sdma", "true"},
      {"-s", "32K", "-n", "9", "-d", "3", "--shared", "--iodepth", "2", "--streams", "2"},
      {"-s", "16K", "-n", "7", "-d", "3"},
  };
  for (const auto& shape : shapes) {
    std::string what;
    for (const auto& s : shape) what += s + " ";
    const std::string ws = disk_base() + "/" + unique_name("shape");
    std::vector<std::string> extra = shape;
    extra.push_back("--validate");
    JsonRun r = run_json(load_args(ws, extra));
    ASSERT_EQ(r.exit_code, 0) << what << r.err;
    const json x = r.result("load");
    EXPECT_EQ(x["validated"], true) << what;
    ASSERT_TRUE(x.contains("load_stages")) << what;
    EXPECT_FALSE(exists(ws)) << what;
    if (contains(what, "--sdma")) EXPECT_EQ(x["method"], "LIBAIO+SDMA-FORK") << what;
    if (contains(what, "--block-layout")) EXPECT_EQ(x["layout"], "128K,16K,32K") << what;
    if (contains(what, "--shared")) EXPECT_TRUE(contains(x.value("brief", ""), "every card reads")) << x["brief"];
    if (contains(what, "-d 3")) EXPECT_EQ(x["devices"], 3) << what;
  }
}

// --model: one file per block holding all its layers; GQA per card, MLA one shared set.
TEST(LoadModel, PresetsValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("model");
  JsonRun r = run_json(load_args(ws, {"--model", "Qwen3-32B", "--tp", "8", "--input-len", "512", "-d", "2",
                                      "--validate"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("load");
  // 4 blocks of 128 tokens x 64 layers: 256 tasks of 32K,32K per card.
  EXPECT_EQ(x["count"], 2 * 256);
  EXPECT_EQ(x["layout"], "32K,32K");
  EXPECT_TRUE(contains(x.value("brief", ""), "4 block files of 4.00 MiB")) << x["brief"];
  expect_load_result(x, 2, 256ULL * 65536);
  ASSERT_TRUE(x.contains("kv_load_ms")) << x.dump();
  EXPECT_FALSE(exists(ws));

  const std::string ws2 = disk_base() + "/" + unique_name("mla");
  JsonRun m = run_json(load_args(ws2, {"--model", "DeepSeek-V3", "--input-len", "256", "-d", "2", "--validate"}));
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_TRUE(contains(m.result("load").value("brief", ""), "every card reads")) << m.out;
  EXPECT_EQ(m.result("load")["validated"], true);
  EXPECT_FALSE(exists(ws2));
}

// --kv-layout changes what load copies to the card: ucm an IO task per layer of a block,
// the engines' an IO task per block of every layer's chunks (vllm-flashinfer: K and V of
// a layer as one chunk, half the copies); the same bytes per card, validated.
TEST(LoadModel, KvLayoutsChangeTheCopies) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  struct L {
    const char* layout;
    uint64_t count;   // per card: 2 blocks (256 tokens), x 64 layers for ucm
    uint64_t copies;  // per card per iteration
    const char* label;
  } layouts[] = {{"ucm", 2 * 64, 2 * 64 * 2, "32K,32K"},
                 {"vllm-flash", 2, 2 * 64 * 2, "128x[32K]"},
                 {"vllm-flashinfer", 2, 2 * 64, "64x[64K]"},
                 {"sglang", 2, 2 * 64 * 2, "128x[32K]"}};
  for (const L& l : layouts) {
    SCOPED_TRACE(l.layout);
    const std::string ws = disk_base() + "/" + unique_name(std::string("layout-") + l.layout);
    JsonRun r = run_json(load_args(ws, {"--model", "Qwen3-32B", "--tp", "8", "--input-len", "256", "-d", "1",
                                        "--kv-layout", l.layout, "--validate"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json x = r.result("load");
    EXPECT_EQ(x["count"], l.count);
    EXPECT_EQ(x["copies_per_iteration"], l.copies);
    EXPECT_EQ(x["layout"], l.label);
    EXPECT_EQ(r.doc["workload"]["kv_layout"], l.layout);
    expect_load_result(x, 1, 2ULL * 64 * 65536);
    EXPECT_FALSE(exists(ws));
  }
}

// The text's per-request line names the whole path, disk to device (a copy's names host memory).
TEST(LoadModel, TextLineNamesTheWholePath) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("model-text");
  const auto r = run_tool(load_args(ws, {"--model", "Qwen3-32B", "--tp", "8", "--input-len", "256", "-d", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto kv = lines_starting(r.out, "  KV load per request");
  ASSERT_EQ(kv.size(), 1u) << r.out;
  EXPECT_EQ(kv[0].rfind("  KV load per request (disk -> host -> device): ", 0), 0u) << kv[0];
  EXPECT_TRUE(std::regex_match(kv[0], std::regex("  KV load per request \\(disk -> host -> device\\): [0-9]+\\.[0-9]{3} ms "
                                                 "per card, 2 cards at once \\(IO\\+Copy avg; P50 [0-9]+\\.[0-9]{3} ms\\); "
                                                 "[0-9]+\\.[0-9]{3} ms end to end \\(GroupWall avg; P50 [0-9]+\\.[0-9]{3} ms\\)")))
      << kv[0];
  EXPECT_FALSE(exists(ws));
}

// --dry-run: the sizing and what load would read, no disk and no device touched.
TEST(LoadModel, DryRunTouchesNothing) {
  const std::string ws = "/tmp/" + unique_name("ds-load-dry");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "--model", "Qwen3-32B", "--tp", "8",
                           "--input-len", "32K", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "--block-layout 32K,32K -n 16384")) << r.out;
  EXPECT_TRUE(contains(r.out, "256 files of 64 layers each")) << r.out;
  EXPECT_FALSE(exists(ws));
}

// The text output: the row, the Wall line, then the Stages line, whose figures
// agree with each other (the percent is pipelined / the slower, the verdict by rule).
TEST(LoadOutput, StagesLineFollowsTheRowAndAgrees) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("text");
  const auto r = run_tool(load_args(ws, {"-s", "64K", "-n", "8"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stages = lines_starting(r.out, "  Stages: ");
  ASSERT_EQ(stages.size(), 1u) << r.out;
  const auto walls = lines_starting(r.out, "  Wall: ");
  ASSERT_EQ(walls.size(), 1u) << r.out;
  EXPECT_LT(r.out.find("  Wall: "), r.out.find("  Stages: "));
  const std::regex re(
      "  Stages: disk alone ([0-9.]+) GiB/s, copy alone ([0-9.]+) GiB/s, pipelined ([0-9.]+) GiB/s = ([0-9.]+)% of "
      "the slower stage; bottleneck: (disk|copy|neither \\(overlap lost\\))");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(stages[0], m, re)) << stages[0];
  const double disk = std::stod(m[1]), copy = std::stod(m[2]), piped = std::stod(m[3]), pct = std::stod(m[4]);
  // The row's BW (the last field) is the pipelined figure.
  const auto rows = lines_starting(r.out, "  file::");
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0].substr(rows[0].rfind(' ') + 1), m[3].str());
  // Each printed to 0.001, the percent to 0.1: they agree to that rounding.
  const double slower = std::min(disk, copy);
  const double ratio = 100.0 * piped / slower;
  EXPECT_NEAR(pct, ratio, ratio * (0.0005 / piped + 0.0005 / slower) + 0.05) << stages[0];
  if (pct < 89.9) EXPECT_EQ(m[5].str(), "neither (overlap lost)");
  if (pct > 90.1) EXPECT_EQ(m[5].str(), disk <= copy ? "disk" : "copy");
  EXPECT_FALSE(exists(ws));
}

TEST(LoadWorkspace, TmpfsIsRefusedAndBufferedRuns) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string ws = "/dev/shm/" + unique_name("ds-load-e2e");
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  const auto r = run_tool(load_args(ws, {"-s", "64K", "-n", "4"}));
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "tmpfs")) << r.err;
  EXPECT_TRUE(contains(r.err, "--buffered")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(ws));

  JsonRun b = run_json(load_args(ws, {"-s", "64K", "-n", "6", "-d", "2", "--buffered", "--validate"}));
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const json x = b.result("load");
  EXPECT_EQ(x["method"], "LIBAIO+BUF+CE-MS-FORK");
  EXPECT_EQ(x["from"], "file::tmpfs");
  EXPECT_EQ(x["validated"], true);
  EXPECT_TRUE(contains(b.err, "buffered")) << b.err;
  EXPECT_FALSE(exists(ws));
}

// A 4 MiB tmpfs: 2 cards x 3 files of 1 MiB cannot fit; found before anything is
// written (staged_checks.h).
TEST(LoadWorkspace, FullFilesystemIsACleanExit1) { dstest::staged::expect_full_filesystem_refused("load"); }

// The disk fails the 2nd read of card 0 (pipelined, block 1: --iodepth 1, no warm-up).
TEST(LoadFailures, AFailingReadNamesCardBlockAndCall) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("eio");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4", "--iodepth", "1",
                           "-i", "1", "--warmup", "0"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "2"}, {"DS_SHIM_READ_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: read of block 1 (" + ws + "/dev-sandbox-aio.")) << r.err;
  EXPECT_TRUE(contains(r.err, "LIBAIO): Input/output error")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// One read returns a flipped byte (card 0's 3rd read: block 2 of the pipelined
// pass): --validate names the block and the offset.
TEST(LoadFailures, ValidateCatchesACorruptedRead) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("corrupt");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4", "--iodepth", "1",
                           "-i", "1", "--warmup", "0", "--validate"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "3"}, {"DS_SHIM_OFFSET", "123"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: load round 0: block 2 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, "differs from the file at offset 123")) << r.err;
  EXPECT_FALSE(contains(r.out, "load PASS")) << r.out;
  EXPECT_FALSE(exists(ws));
}

// A copy skipped by the engine (the shim: the 6th memcpy of 16 KiB in the card's
// process, after the 4 that clear its region, copies nothing: block 1, as one read
// and one stream keep the order) is caught by --validate.
TEST(LoadFailures, ValidateCatchesASkippedCopy) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("skip");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4", "-i", "1",
                           "--warmup", "0", "--validate", "--iodepth", "1", "--streams", "1"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_MEMCPY_SIZE", "16384"},
                           {"DS_SHIM_MEMCPY_NTH", "6"}, {"DS_SHIM_MEMCPY_SKIP", "1"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: load round 0: block 1 (")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// --compare-contiguous --validate checks the contiguous pass too: a copy it skips (the
// shim: the 22nd memcpy of 16 KiB in the card's process; per round 4 clear the
// region, 4 are the paged pass's, 4 its check's, 4 copy alone's, 4 clear the
// sequential slots, then the contiguous pass's: its block 1) is caught, named so.
TEST(LoadFailures, ValidateCatchesASkippedCopyInTheContiguousPass) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("skipc");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4", "-i", "1",
                           "--warmup", "0", "--validate", "--iodepth", "1", "--streams", "1", "--block-table", "random",
                           "--compare-contiguous"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_MEMCPY_SIZE", "16384"},
                           {"DS_SHIM_MEMCPY_NTH", "22"}, {"DS_SHIM_MEMCPY_SKIP", "1"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: load round 0 (contiguous): block 1 (")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// A copy the runtime refuses (the libcuda double: the 3rd cuMemcpyHtoDAsync):
// exit 1 naming the card, the block and the call.
TEST(LoadFailures, AFailingCopyNamesCardBlockAndCall) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("cuda");
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                                                  {"DS_CUDA_DOUBLE_DEVICES", "2"}};
  // First the same run without a fault: load works through the cuda backend (cuEventQuery).
  JsonRun ok = run_json({"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "6", "-d", "2", "-i",
                         "1", "--warmup", "0", "--validate", "--staging", "2"},
                        env);
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(ok.result("load")["to"], "cuda::device::all");
  EXPECT_EQ(ok.result("load")["validated"], true);
  auto failing = env;
  failing["DS_CUDA_DOUBLE_FAIL"] = "cuMemcpyHtoDAsync_v2:3";
  const auto r = run_tool({"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "6", "-i", "1",
                           "--warmup", "0", "--iodepth", "1"},  // one read at a time: the blocks in order
                          failing);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: copy of block 2 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, "cuMemcpyHtoDAsync")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// The staging buffers are freed on cuEventQuery of events made for polling
// (CU_EVENT_DISABLE_TIMING: no timestamp to write, the cheapest to record and
// query); the double logs each queried event's flags. Timing events stay for
// the copy cases.
TEST(LoadBackends, CudaPollsStagingEventsMadeWithoutTiming) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("cuda-events");
  char logbuf[] = "/tmp/ds-load-cuda-log-XXXXXX";
  const int fd = mkstemp(logbuf);
  ASSERT_GE(fd, 0);
  close(fd);
  struct Remove {
    const char* path;
    ~Remove() { std::remove(path); }
  } remove_log{logbuf};
  const std::map<std::string, std::string> env = {
      {"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "2"}, {"DS_CUDA_DOUBLE_LOG", logbuf}};
  JsonRun r = run_json({"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "8", "-d", "2", "-i", "2",
                        "--warmup", "1", "--validate", "--staging", "2"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("load")["validated"], true);
  std::ifstream in(logbuf);
  std::string line;
  int queries = 0, timed = 0;
  while (std::getline(in, line)) {
    if (line.find(" cuEventQuery -> event=") == std::string::npos) continue;
    ++queries;
    if (line.find(" flags=2") == std::string::npos) ++timed;
  }
  EXPECT_GT(queries, 0) << "load never polled an event";
  EXPECT_EQ(timed, 0) << timed << " of " << queries << " polls were of events made with timing";
  EXPECT_FALSE(exists(ws));
}

// The ascend backend through the AscendCL and runtime doubles: CE copies and the
// FFTS+ direct path, validated. With the LD_PRELOAD shim an O_DIRECT read into the
// double's aclrtMallocHost memory fails with EFAULT, as on the real card, so the staging
// buffers must be our own registered mapping (make_io_buffer), which a note says.
TEST(LoadBackends, AscendDoublesValidateCeAndDirectPath) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
                                                  {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
                                                  {"DS_ACL_DOUBLE_DEVICES", "2"},
                                                  {"LD_PRELOAD", DS_CORRUPT_SHIM}};
  for (const char* sdma : {"false", "true"}) {
    const std::string ws = disk_base() + "/" + unique_name("acl");
    JsonRun r = run_json({"load", "--backend", "ascend", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "6", "-d", "2", "-i",
                          "1", "--warmup", "1", "--staging", "2", "--validate", "--sdma", sdma},
                         env);
    ASSERT_EQ(r.exit_code, 0) << sdma << r.err;
    const json x = r.result("load");
    EXPECT_EQ(x["to"], "acl::device::all");
    EXPECT_EQ(x["method"], std::string(sdma) == "true" ? "LIBAIO+FFTS-SDMA-FORK" : "LIBAIO+CE-MS-FORK");
    EXPECT_EQ(x["validated"], true);
    ASSERT_EQ(x["notes"].size(), 1u) << r.out;
    const std::string note = x["notes"][0];
    EXPECT_TRUE(contains(note, "staging buffers: mmap memory on ")) << note;
    EXPECT_TRUE(contains(note, ", registered with the device, not the backend's pinned memory: "
                               "aclrtMallocHost memory fails O_DIRECT I/O with EFAULT"))
        << note;
    const std::string brief = x["brief"];
    EXPECT_TRUE(contains(brief, "registered mmap staging buffers")) << brief;
    EXPECT_FALSE(contains(r.err, "corrupt_shim")) << r.err;
    EXPECT_FALSE(exists(ws));
  }
}

// On ascend a staging buffer is free again when aclrtQueryEventStatus says its copies
// completed. The double's copies take 50 us per KiB (3.2 ms a block) and run on the
// stream thread from the staging buffer, so a query that said "complete" too early
// would let the next read overwrite a buffer still being copied: validation fails.
TEST(LoadBackends, AscendStagingWaitsForQueryEventStatus) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string log = ::testing::TempDir() + unique_name("acl-log");
  const dstest::ScopedPath log_guard(log);
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
                                                  {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
                                                  {"DS_ACL_DOUBLE_DEVICES", "2"},
                                                  {"DS_ACL_DOUBLE_COPY_NS_PER_KIB", "50000"},
                                                  {"DS_ACL_DOUBLE_LOG", log},
                                                  {"LD_PRELOAD", DS_CORRUPT_SHIM}};
  const std::string ws = disk_base() + "/" + unique_name("aclq");
  JsonRun r = run_json({"load", "--backend", "ascend", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "8", "-d", "1", "-i",
                        "1", "--warmup", "0", "--staging", "2", "--streams", "2", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("load")["validated"], true);
  std::ifstream in(log);
  const std::string calls((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(contains(calls, "aclrtQueryEventStatus")) << "the pipeline never polled an event";
  std::remove(log.c_str());
  EXPECT_FALSE(exists(ws));
}

TEST(LoadCleanup, KilledWorkerIsNamedAndNothingIsLeft) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  dstest::staged::expect_killed_worker_leaves_nothing("load", disk_base() + "/" + unique_name("killed"));
}

TEST(LoadCleanup, CtrlCLeavesNothing) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  dstest::staged::expect_ctrl_c_leaves_nothing("load", disk_base() + "/" + unique_name("sigint"));
}


// --- load --offload-ratio: both directions at once ---------------------------

// The Mix figures from the JSON: each direction's bytes over its own pass, the
// aggregate over the together pass, the percentage, the CPU share, the stretches
// and the verdict by the documented rule (docs/load.md "Load and offload together").
void expect_mix_arithmetic(const json& x) {
  ASSERT_TRUE(x.contains("mix")) << x.dump();
  const json& m = x["mix"];
  const json &l = m["load"], &o = m["offload"];
  auto gib = [](const json& bytes, const json& us) {
    return bytes.get<double>() / (us["avg"].get<double>() * 1e-6) / 1073741824.0;
  };
  const double a = gib(l["bytes"], l["alone_io_copy_us"]), b = gib(o["bytes"], o["alone_io_copy_us"]);
  const double c = gib(l["bytes"], l["io_copy_us"]), d = gib(o["bytes"], o["io_copy_us"]);
  const double e = (l["bytes"].get<double>() + o["bytes"].get<double>()) / (x["copy_us"]["avg"].get<double>() * 1e-6) /
                   1073741824.0;
  EXPECT_NEAR(l["alone_gib_s"].get<double>(), a, a * 1e-9);
  EXPECT_NEAR(o["alone_gib_s"].get<double>(), b, b * 1e-9);
  EXPECT_NEAR(l["gib_s"].get<double>(), c, c * 1e-9);
  EXPECT_NEAR(o["gib_s"].get<double>(), d, d * 1e-9);
  EXPECT_NEAR(m["together_gib_s"].get<double>(), e, e * 1e-9);
  EXPECT_DOUBLE_EQ(m["together_gib_s"].get<double>(), x["bandwidth_gib_s"].get<double>());
  EXPECT_NEAR(m["percent_of_alone"].get<double>(), 100.0 * e / (a + b), 1e-6);
  const double disk = (l["read_busy_us"]["avg"].get<double>() + o["write_busy_us"]["avg"].get<double>()) /
                      (l["alone_read_busy_us"]["avg"].get<double>() + o["alone_write_busy_us"]["avg"].get<double>());
  const double copy = (l["copy_busy_us"]["avg"].get<double>() + o["copy_busy_us"]["avg"].get<double>()) /
                      (l["alone_copy_busy_us"]["avg"].get<double>() + o["alone_copy_busy_us"]["avg"].get<double>());
  EXPECT_NEAR(m["disk_stretch"].get<double>(), disk, disk * 1e-9);
  EXPECT_NEAR(m["copy_stretch"].get<double>(), copy, copy * 1e-9);
  // The CPU share: what the threads other than the transfer loops used of what the loops left.
  auto share = [](double cpu, double loops, double span, double cpus) {
    return cpu - loops <= 0 ? 0.0 : (cpu - loops) / (span * cpus - loops);
  };
  const double cpus = m["cpus"].get<double>();
  EXPECT_GT(cpus, 0);
  EXPECT_TRUE(m["cpus_bound"] == "affinity" || m["cpus_bound"] == "cgroup quota") << m["cpus_bound"];
  const double cpu = share(m["cpu_us"]["avg"].get<double>(), m["loop_cpu_us"]["avg"].get<double>(),
                           x["copy_us"]["avg"].get<double>(), cpus);
  EXPECT_NEAR(m["cpu_share"].get<double>(), cpu, cpu * 1e-9 + 1e-12);
  EXPECT_GT(m["cpu_us"]["avg"].get<double>(), 0);
  EXPECT_GT(m["loop_cpu_us"]["avg"].get<double>(), 0);  // the loops' threads ran
  EXPECT_LE(m["loop_cpu_us"]["avg"].get<double>(), m["cpu_us"]["avg"].get<double>());
  EXPECT_LE(m["overlap_loop_cpu_us"]["avg"].get<double>(), m["overlap_cpu_us"]["avg"].get<double>());
  // Read over the overlap, not from the pass's start: within the pass's.
  EXPECT_LE(m["overlap_cpu_us"]["avg"].get<double>(), m["cpu_us"]["avg"].get<double>());
  // The perfect overlap: both directions' bytes over the longer alone pass.
  const double longer_s =
      std::max(l["alone_io_copy_us"]["avg"].get<double>(), o["alone_io_copy_us"]["avg"].get<double>()) * 1e-6;
  const double perfect = (l["bytes"].get<double>() + o["bytes"].get<double>()) / longer_s / 1073741824.0;
  EXPECT_NEAR(m["perfect_overlap_gib_s"].get<double>(), perfect, perfect * 1e-9);
  EXPECT_NEAR(m["percent_of_perfect_overlap"].get<double>(), 100.0 * e / perfect, 1e-6);
  // The overlap (both directions running): within the together pass; each
  // direction's busy times in it within its busy times in the pass.
  const double ov = m["overlap_us"]["avg"].get<double>();
  EXPECT_GT(ov, 0);
  EXPECT_LE(m["overlap_us"]["max"].get<double>(), x["copy_us"]["max"].get<double>());
  for (const char* busy : {"read_busy_us", "copy_busy_us"})
    EXPECT_LE(l["overlap_" + std::string(busy)]["avg"].get<double>(), l[busy]["avg"].get<double>()) << busy;
  for (const char* busy : {"write_busy_us", "copy_busy_us"})
    EXPECT_LE(o["overlap_" + std::string(busy)]["avg"].get<double>(), o[busy]["avg"].get<double>()) << busy;
  // Over the overlap: each direction's speed kept and work done (its tail at its alone speed), the
  // stretches for the same work, the CPU share; the verdict by the documented rule.
  auto kept = [&](const json& dir) {
    return std::max(0.0, 1.0 - (dir["io_copy_us"]["avg"].get<double>() - dir["alone_io_copy_us"]["avg"].get<double>()) / ov);
  };
  auto work = [&](const json& dir) {
    const double alone = dir["alone_io_copy_us"]["avg"].get<double>();
    return std::min(1.0, std::max(0.0, 1.0 - (dir["io_copy_us"]["avg"].get<double>() - ov) / alone));
  };
  const double kl = kept(l), ko = kept(o), wl = work(l), wo = work(o);
  EXPECT_NEAR(l["kept_in_overlap"].get<double>(), kl, 1e-9);
  EXPECT_NEAR(o["kept_in_overlap"].get<double>(), ko, 1e-9);
  EXPECT_NEAR(l["work_in_overlap"].get<double>(), wl, 1e-9);
  EXPECT_NEAR(o["work_in_overlap"].get<double>(), wo, 1e-9);
  const double odisk = (l["overlap_read_busy_us"]["avg"].get<double>() + o["overlap_write_busy_us"]["avg"].get<double>()) /
                       (l["alone_read_busy_us"]["avg"].get<double>() * wl + o["alone_write_busy_us"]["avg"].get<double>() * wo);
  const double ocopy = (l["overlap_copy_busy_us"]["avg"].get<double>() + o["overlap_copy_busy_us"]["avg"].get<double>()) /
                       (l["alone_copy_busy_us"]["avg"].get<double>() * wl + o["alone_copy_busy_us"]["avg"].get<double>() * wo);
  EXPECT_NEAR(m["overlap_disk_stretch"].get<double>(), odisk, odisk * 1e-9);
  EXPECT_NEAR(m["overlap_copy_stretch"].get<double>(), ocopy, ocopy * 1e-9);
  const double ocpu =
      share(m["overlap_cpu_us"]["avg"].get<double>(), m["overlap_loop_cpu_us"]["avg"].get<double>(), ov, cpus);
  EXPECT_NEAR(m["overlap_cpu_share"].get<double>(), ocpu, ocpu * 1e-9 + 1e-12);
  const std::string verdict = kl >= 0.9 && ko >= 0.9 ? "none"
                              : ocpu >= 0.9         ? "host CPUs"
                              : odisk >= ocopy      ? "disk"
                                                    : "copy";
  EXPECT_EQ(m["short"], verdict);
}

std::string fixed3(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3f", v);
  return s;
}

// Two cards, --validate (every pass: the load side's region on the card, the
// offload side's files read back from the disk), the text's Mix line against the
// JSON of the same run, and nothing left.
TEST(LoadMix, BothDirectionsValidateAndTheMixLineAgrees) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mix");
  const auto r = run_tool(load_args(ws, {"-s", "16K", "-n", "8", "-d", "2", "--staging", "3", "--offload-ratio", "0.5",
                                         "--validate", "--format", "text,json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t brace = r.out.find("\n{");
  ASSERT_NE(brace, std::string::npos) << r.out;
  const json doc = json::parse(r.out.substr(brace + 1));
  const json x = doc["results"][0];
  EXPECT_EQ(x["name"], "load+offload");
  EXPECT_EQ(x["validated"], true);
  EXPECT_EQ(x["devices"], 2);
  EXPECT_EQ(x["time_label"], "IO+Copy");
  EXPECT_EQ(x["mix"]["load"]["bytes"], 2u * 8u * 16384u);
  EXPECT_EQ(x["mix"]["offload"]["bytes"], 2u * 4u * 16384u);
  EXPECT_EQ(x["mix"]["offload"]["count"], 8u);
  EXPECT_EQ(x["mix"]["ratio"], 0.5);
  expect_mix_arithmetic(x);
  const json& m = x["mix"];
  const std::string line = "  Mix: load alone " + fixed3(m["load"]["alone_gib_s"]) + " GiB/s, offload alone " +
                           fixed3(m["offload"]["alone_gib_s"]) + ", together load " + fixed3(m["load"]["gib_s"]) +
                           " + offload " + fixed3(m["offload"]["gib_s"]) + " = " + fixed3(m["together_gib_s"]) +
                           " GiB/s (";
  EXPECT_TRUE(contains(r.out, line)) << line << "\n" << r.out;
  char pct[32];
  std::snprintf(pct, sizeof pct, "%.1f", m["percent_of_perfect_overlap"].get<double>());
  EXPECT_TRUE(contains(r.out, line + pct + "% of perfect overlap); short: " + m["short"].get<std::string>() + "\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\n  Busy: disk ")) << r.out;
  EXPECT_TRUE(contains(r.out, " while both ran (")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  Load: Size(KB)=16 Count=16  IO+Copy(us)-(Min/Max/Avg/P50/P90)=")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n  Offload: Size(KB)=16 Count=8  Copy+IO(us)-(Min/Max/Avg/P50/P90)=")) << r.out;
  EXPECT_TRUE(contains(r.out, "[validation] load+offload PASS")) << r.out;
  EXPECT_FALSE(exists(ws)) << "left behind";
}

// Under a cgroup CPU quota (DEV_SANDBOX_CPU_MAX stands for a container's --cpus=1.5):
// the CPU share is over the 1.5 CPUs the quota allows, exactly, whatever the
// affinity, and the Busy line and JSON say that the quota bound them.
TEST(LoadMix, ACgroupQuotaBoundsTheCpuShare) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixquota");
  const auto r = run_tool(load_args(ws, {"-s", "16K", "-n", "4", "--offload-ratio", "1", "--format", "text,json"}),
                          {{"DEV_SANDBOX_CPU_MAX", "150000 100000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = json::parse(r.out.substr(r.out.find("\n{") + 1))["results"][0];
  EXPECT_EQ(x["mix"]["cpus"], 1.5);
  EXPECT_EQ(x["mix"]["cpus_bound"], "cgroup quota");
  expect_mix_arithmetic(x);
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\n  Busy: disk [0-9.]+x its time alone, copy [0-9.]+x, host CPUs "
                                                  "[0-9]+% of 1\\.5 \\(cgroup quota\\) while both ran \\(")))
      << r.out;
  // Without a quota: the affinity's whole CPUs.
  const JsonRun a = run_json(load_args(ws, {"-s", "16K", "-n", "4", "--offload-ratio", "1"}), {{"DEV_SANDBOX_CPU_MAX", "max 100000"}});
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.result("load+offload")["mix"]["cpus_bound"], "affinity");
  const double cpus = a.result("load+offload")["mix"]["cpus"].get<double>();
  EXPECT_GE(cpus, 1);
  EXPECT_EQ(cpus, std::floor(cpus)) << "a count of CPUs";
  EXPECT_FALSE(exists(ws)) << "left behind";
}

// Block layouts (each fragment kind its own region) and --shared (one load set for
// every card; each card still offloads to files of its own): both directions
// validated, and the row counts what both lines count.
TEST(LoadMix, BlockLayoutAndSharedLoadValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixshape");
  JsonRun r = run_json(load_args(ws, {"--block-layout", "16K,4K", "-n", "4", "-d", "2", "--shared", "--offload-ratio",
                                      "1.5", "--validate"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("load+offload");
  EXPECT_EQ(x["validated"], true);
  EXPECT_EQ(x["mix"]["load"]["count"], 8u);
  EXPECT_EQ(x["mix"]["offload"]["count"], 12u);
  EXPECT_EQ(x["count"], 20u);
  EXPECT_EQ(x["mix"]["offload"]["bytes"], 2u * 6u * 20480u);
  expect_mix_arithmetic(x);
  EXPECT_FALSE(exists(ws));
}

// --keep after a successful run: both directions' files stay, and one line says so.
TEST(LoadMix, KeepLeavesBothDirectionsFiles) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixkeep");
  const auto r = run_tool(load_args(ws, {"-s", "16K", "-n", "4", "--offload-ratio", "0.5", "--keep"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: kept 6 block files in " + ws)) << r.err;
  const auto kept = entries(ws);
  EXPECT_EQ(kept.size(), 6u);
  EXPECT_EQ(std::count_if(kept.begin(), kept.end(), [](const std::string& f) { return contains(f, ".offload-c0."); }), 2)
      << "the offload side's two files";
  remove_tree(ws);
}

// CSV: the result's row, then a row per direction together and alone.
TEST(LoadMix, CsvHasARowPerDirection) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixcsv");
  const auto r = run_tool(load_args(ws, {"-s", "16K", "-n", "4", "--offload-ratio", "2", "--format", "csv"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string row;
  std::getline(in, row);  // the header
  while (std::getline(in, row)) names.push_back(row.substr(0, row.find(',')));
  EXPECT_EQ(names, (std::vector<std::string>{"load+offload", "load+offload:load", "load+offload:offload",
                                             "load+offload:load_alone", "load+offload:offload_alone"}))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\nload+offload:offload,")) << r.out;
  EXPECT_TRUE(contains(r.out, ",sim::device::all,file::")) << "the offload rows go device -> disk\n" << r.out;
  EXPECT_FALSE(exists(ws));
}

TEST(LoadMix, BadRatiosAreOneLineExit2) {
  const std::string why = "': accepts a number above 0 and at most 64 (offloaded blocks per loaded block)";
  for (const char* bad : {"0", "-1", "65", "abc", "1x", "nan", ""}) {
    const auto r = run_tool({"load", "--backend", "sim", "--workspace", "/nonexistent-ds-mix", "--offload-ratio", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << r.err;
    EXPECT_EQ(r.err, "dev-sandbox: error: option --offload-ratio got '" + std::string(bad) + why + "\n") << bad;
  }
  const auto s = run_tool({"load", "--backend", "sim", "--workspace", "/nonexistent-ds-mix", "--offload-ratio", "1", "--sweep", "4K:8K"});
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_EQ(s.err, "dev-sandbox: error: option --offload-ratio measures one block size; it cannot go with --sweep\n");
}

// ascend's direct path copies host -> device only: offloads on it are refused up
// front (exit 1, what to use instead), before any file is laid out.
TEST(LoadMix, AscendDirectPathIsRefusedForTheOffloads) {
  const std::string ws = ::testing::TempDir() + unique_name("mixsdma");
  const auto r = run_tool({"load", "--backend", "ascend", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "4",
                           "--sdma", "true", "--offload-ratio", "1"},
                          {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
                           {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
                           {"DS_ACL_DOUBLE_DEVICES", "2"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error: ").size(), 1u) << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: error: --sdma true: the ascend backend's direct path does not copy device to "
                              "host (docs/hardware-status.md), which --offload-ratio's offloads need; use CE copies "
                              "(--sdma false)\n"))
      << r.err;
  EXPECT_FALSE(exists(ws));
}

// R x blocks not whole: whole blocks, and one note says how many.
TEST(LoadMix, AFractionOfABlockIsRoundedAndSaid) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixround");
  JsonRun r = run_json(load_args(ws, {"-s", "16K", "-n", "10", "--offload-ratio", "0.33"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --offload-ratio 0.33: 0.33 x 10 blocks = 3.3, offloading 3 "
                                  "blocks (ratio 0.3)")
                .size(),
            1u)
      << r.err;
  EXPECT_EQ(r.result("load+offload")["mix"]["offload"]["count"], 3u);
  EXPECT_EQ(r.result("load+offload")["mix"]["ratio"], 0.3);
}

// A failure in one direction names the card, the side, the block and the call.
TEST(LoadMix, AFailureNamesItsDirectionBlockAndCall) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixfail");
  const std::vector<std::string> args = {"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K",
                                         "-n", "6", "-i", "1", "--warmup", "0", "--iodepth", "1", "--streams", "1",
                                         "--offload-ratio", "1"};
  std::map<std::string, std::string> env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "2"}};
  env["DS_CUDA_DOUBLE_FAIL"] = "cuMemcpyDtoHAsync_v2:2";  // the offload side's 2nd copy: its block 1
  auto r = run_tool(args, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: error: card 0: offload: copy of block 1 (" + ws + "/dev-sandbox-aio."))
      << r.err;
  EXPECT_TRUE(contains(r.err, ".offload-c0.1): cuMemcpyDtoHAsync_v2(16384 bytes) failed")) << r.err;
  EXPECT_FALSE(exists(ws));
  env["DS_CUDA_DOUBLE_FAIL"] = "cuMemcpyHtoDAsync_v2:3";  // the load side's 3rd: its block 2
  r = run_tool(args, env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: error: card 0: load: copy of block 2 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, ".load-c0.2): cuMemcpyHtoDAsync_v2(16384 bytes) failed")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(ws));
  if (!DS_SHIM_HAVE_LIBAIO) return;
  // The disk fails the load's 2nd read (block 1; one read at a time).
  r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4", "--iodepth",
                "1", "-i", "1", "--warmup", "0", "--offload-ratio", "1"},
               {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "2"}, {"DS_SHIM_READ_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: load: read of block 1 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, "LIBAIO): Input/output error")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// --validate reads every offload file back from the disk after the pass: one that
// differs from what the card held is named (the shim flips byte 123 of the 5th read:
// after the load's 4 reads of the together pass, the first offload file's read-back).
TEST(LoadMix, ValidateCatchesAnOffloadFileThatDiffers) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("mixcorrupt");
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4",
                           "-i", "1", "--warmup", "0", "--validate", "--offload-ratio", "0.5"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_PREAD", "1"}, {"DS_SHIM_READ_NTH", "5"},
                           {"DS_SHIM_OFFSET", "123"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "card 0: validation failed: offload round 0 (together): block 0 (" + ws)) << r.err;
  EXPECT_TRUE(contains(r.err, ".offload-c0.0), fragment 0 in the file differs from the device at offset 123")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// Through the cuda and ascend doubles, every copy made slow (400 us per KiB: 25.6 ms
// a 64 KiB block, far above the disk's and the CPU's part, so that a loaded machine's
// scheduling delays stay small beside it; one card, so two polling threads): the two
// directions run at once, so the together pass takes well under load alone and
// offload alone summed (about half with R 1; one after the other it would be all of
// it); both validated.
TEST(LoadMix, DoublesOverlapTheTwoDirections) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::map<std::string, std::string> cuda = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                                                   {"DS_CUDA_DOUBLE_DEVICES", "2"},
                                                   {"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "400000"}};
  const std::map<std::string, std::string> ascend = {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
                                                     {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
                                                     {"DS_ACL_DOUBLE_DEVICES", "2"},
                                                     {"DS_ACL_DOUBLE_COPY_NS_PER_KIB", "400000"},
                                                     {"LD_PRELOAD", DS_CORRUPT_SHIM}};
  for (const auto* env : {&cuda, &ascend}) {
    const std::string backend = env == &cuda ? "cuda" : "ascend";
    const std::string ws = disk_base() + "/" + unique_name("mixdbl");
    JsonRun r = run_json({"load", "--backend", backend, "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "4",
                          "-d", "1", "-i", "2", "--warmup", "1", "--staging", "2", "--streams", "2", "--offload-ratio",
                          "1", "--validate"},
                         *env);
    ASSERT_EQ(r.exit_code, 0) << backend << r.err;
    const json x = r.result("load+offload");
    EXPECT_EQ(x["validated"], true) << backend;
    expect_mix_arithmetic(x);
    const double together = x["copy_us"]["avg"];
    const double load_alone = x["mix"]["load"]["alone_io_copy_us"]["avg"];
    const double offload_alone = x["mix"]["offload"]["alone_io_copy_us"]["avg"];
    // Each alone at least its two rounds of 25.6 ms copies (4 blocks, 2 buffers).
    EXPECT_GE(load_alone, 2 * 25600) << backend;
    EXPECT_GE(offload_alone, 2 * 25600) << backend;
    EXPECT_LT(together, 0.8 * (load_alone + offload_alone))
        << backend << ": the directions did not overlap: together " << together << " us, load alone " << load_alone
        << " us, offload alone " << offload_alone << " us";
    EXPECT_FALSE(exists(ws));
  }
}

// The watchdog hears the offload thread: an offload pass longer than --timeout (256
// blocks of copies slowed to 4.8 ms each, one at a time: at least 1.2 s) whose writes
// keep completing is progress, not a stuck card.
TEST(LoadMix, ALongOffloadPassWithProgressIsNotStuck) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixwd");
  const auto r = run_tool({"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "16K", "-n", "4",
                           "-i", "1", "--warmup", "0", "--staging", "1", "--streams", "1", "--offload-ratio", "64",
                           "--timeout", "1", "--format", "json"},
                          {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                           {"DS_CUDA_DOUBLE_DEVICES", "2"},
                           {"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "300000"}});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(contains(r.err, "no progress")) << r.err;
  const json doc = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  EXPECT_GT(doc["results"][0]["mix"]["offload"]["alone_io_copy_us"]["avg"].get<double>(), 1e6)
      << "the pass was not longer than the timeout: the test proves nothing";
  EXPECT_FALSE(exists(ws));
}

TEST(LoadMix, CtrlCLeavesNothing) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const auto before = dstest::our_shm_entries();
  const std::string ws = disk_base() + "/" + unique_name("mixsigint");
  const int pid = dstest::start_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n",
                                      "8", "-d", "2", "-i", "1000000", "--timeout", "0", "--offload-ratio", "2"},
                                     ::testing::TempDir() + "mix-sigint.out", ::testing::TempDir() + "mix-sigint.err");
  dstest::wait_children_busy(pid, 2);
  auto kids = dstest::child_pids(pid);
  ASSERT_EQ(kids.size(), 2u);
  kill(pid, SIGINT);
  EXPECT_EQ(dstest::wait_tool(pid), 130);
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_FALSE(exists(ws)) << entries(ws).size() << " entries left";
  EXPECT_EQ(dstest::our_shm_entries(), before);
}

TEST(LoadMix, KilledWorkerIsNamedAndNothingIsLeft) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const auto before = dstest::our_shm_entries();
  const std::string ws = disk_base() + "/" + unique_name("mixkilled");
  const int pid = dstest::start_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n",
                                      "8", "-d", "2", "-i", "1000000", "--timeout", "0", "--offload-ratio", "0.5"},
                                     ::testing::TempDir() + "mix-killed.out", ::testing::TempDir() + "mix-killed.err");
  dstest::wait_children_busy(pid, 2);
  auto kids = dstest::child_pids(pid);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(entries(ws).size(), 24u) << "two cards' 8 load and 4 offload block files each, while running";
  kill(kids[0], SIGKILL);
  EXPECT_EQ(dstest::wait_tool(pid), 1);
  const std::string err = dstest::slurp(::testing::TempDir() + "mix-killed.err");
  EXPECT_TRUE(contains(err, "card 0: killed by signal 9")) << err;
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_FALSE(exists(ws)) << entries(ws).size() << " entries left";
  EXPECT_EQ(dstest::our_shm_entries(), before);
}

}  // namespace

namespace dstest_block_table {

// --block-table: every block copied to the slot the table names (the copies' device
// addresses in the double's call log) and validated there, at its slot, against the
// pattern of its index; bad tables one line, exit 2.
TEST(LoadBlockTable, CopiesLandInTheTablesSlotsAndValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("table");
  dstest::TempFile table("ds-table");
  { std::ofstream(table.path()) << "6\n2\n0\n"; }
  dstest::TempFile log("ds-table-log");
  std::vector<std::string> args = load_args(ws, {"-s", "64K", "-n", "3", "--iodepth", "1", "--streams", "1",
                                                 "--validate", "--block-table", table.path(), "--pool-blocks", "7"});
  args[2] = "cuda";
  JsonRun r = run_json(args, {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("load")["validated"], true);
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyHtoDAsync_v2", "dst", 65536, 3),
            (std::vector<uint64_t>{6, 2, 0}));
  // sim: random tables with fragments and a block layout, validated at their slots.
  for (const std::vector<std::string>& extra :
       {std::vector<std::string>{"-s", "5000", "-f", "3", "-n", "10", "--block-table", "random:7"},
        std::vector<std::string>{"--block-layout", "16K,4K,8K", "-n", "9", "-d", "2", "--block-table", "random:3",
                                 "--sdma", "true"}}) {
    std::vector<std::string> a = extra;
    a.push_back("--validate");
    JsonRun s = run_json(load_args(ws, a));
    ASSERT_EQ(s.exit_code, 0) << s.err;
    EXPECT_EQ(s.result("load")["validated"], true);
  }
  EXPECT_FALSE(exists(ws));
}

TEST(LoadBlockTable, BadTablesAreOneLineExit2) {
  dstest::TempFile table("ds-table");
  const std::string t = table.path();
  struct Bad {
    std::string text;
    std::vector<std::string> args;
    std::string line;
  } cases[] = {
      {"1\n1\n", {"--block-table", t}, "--block-table " + t + " line 2: slot 1 is named twice (first on line 1): two blocks cannot share a slot"},
      {"0\n9\n", {"--block-table", t, "--pool-blocks", "9"}, "--block-table " + t + " line 2: slot 9 is outside the pool of 9 slots (raise --pool-blocks)"},
      {"0\nx1\n", {"--block-table", t}, "--block-table " + t + " line 2: 'x1' is not a slot id (one per line, from 0)"},
      {"0\n", {"--block-table", t}, "--block-table " + t + ": 1 slots for 2 blocks (one line per block of the request)"},
      {"", {"--block-table", "random:x"}, "option --block-table got 'random:x': random's seed is a number (random:7)"},
      {"", {"--block-table", "/no/such/table"}, "option --block-table got '/no/such/table': not sequential, random[:SEED] or a readable file"},
      {"", {"--block-table", "random", "--pool-blocks", "1"}, "option --pool-blocks 1: the pool holds fewer slots than the 2 blocks of the request"},
      {"", {"--pool-blocks", "8"}, "option --pool-blocks sizes a --block-table's pool; give --block-table too"},
      {"", {"--block-table", "random", "--pool-blocks", "100000000000000000"},
       "option --pool-blocks got '100000000000000000': a pool of more than 1099511627776 slots (2^40) is more than any "
       "card holds"},
      // --sweep: each size's pool (a FILE's slots at a lowered count: ASweepKeepsAFilesPool).
      {"", {"--block-table", "random", "--pool-blocks", "1099511627776", "--sweep", "4K:16M"}, "option --sweep at 16M (1 block): option --pool-blocks 1099511627776: the pool's bytes overflows 64 bits"},
      {"0\n1\n", {"--block-table", t, "--offload-ratio", "1"},
       "option --block-table " + t + " with --offload-ratio: a FILE table places the load's 2 blocks, and the offload "
       "side's 2 need a table that can be sized: give sequential or random[:SEED]"},
      {"", {"--block-table", "random", "--compare-contiguous", "--offload-ratio", "1"},
       "option --compare-contiguous cannot go with --offload-ratio: the mix times each direction together and alone, "
       "with no contiguous pass beside them; run load or offload alone with it"},
      {"", {"--compare-contiguous"}, "option --compare-contiguous measures a --block-table's blocks against contiguous ones; give --block-table too"},
  };
  for (const Bad& b : cases) {
    { std::ofstream(t) << b.text; }
    std::vector<std::string> args = {"load", "--backend", "sim", "--workspace", "/tmp", "-s", "4K", "-n", "2"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    if (std::find(b.args.begin(), b.args.end(), "--sweep") != b.args.end()) args.erase(args.begin() + 5, args.begin() + 7);
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << b.line << "\n" << r.err;
    EXPECT_EQ(r.err, "dev-sandbox: error: " + b.line + "\n") << b.line;
  }
}

// A pool whose tasks (slots x a model's layers per block) do not fit 64 bits is refused
// in one line, exit 2, not wrapped to a small pool: a model of 2^25 layers of 2-byte
// tasks keeps its block files small, and 2^40 slots of it is 2^65 tasks.
TEST(LoadBlockTable, APoolWhoseTasksOverflowIsRefused) {
  dstest::TempFile model("ds-model");
  {
    std::ofstream(model.path())
        << R"({"architectures": ["Qwen3ForCausalLM"], "head_dim": 1, "hidden_size": 5120, "model_type": "qwen3",)"
        << R"( "num_attention_heads": 64, "num_hidden_layers": 33554432, "num_key_value_heads": 1,)"
        << R"( "torch_dtype": "bfloat16", "use_sliding_window": false})";
  }
  const auto r = run_tool({"load", "--backend", "sim", "--workspace", "/tmp", "--model", model.path(), "--block-size", "1",
                           "--input-len", "2", "--block-table", "random", "--pool-blocks", "1099511627776", "--dry-run"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_EQ(r.err, "dev-sandbox: error: option --pool-blocks 1099511627776: the pool's tasks (33554432 per block) "
                   "overflows 64 bits\n");
}

// A pool of a billion slots for a 16-block request: the table is 16 draws (no shuffle
// of the pool), and the pool's memory, which no machine here has, is refused up front
// in one line that names --pool-blocks, before anything is allocated or written.
TEST(LoadBlockTable, AHugePoolIsRefusedUpFrontNotShuffled) {
  const std::string ws = ::testing::TempDir() + unique_name("hugepool");
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = run_tool({"load", "--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "16", "--block-table",
                           "random:3", "--pool-blocks", "1000000000"});
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error: not enough memory for load: it needs 59.60 TiB of host memory")
                .size(),
            1u)
      << r.err;
  EXPECT_TRUE(contains(r.err, "lower --pool-blocks, --staging, -s, -n or -d\n")) << r.err;
  EXPECT_LT(s, 20.0) << "generous: a shuffle of the pool took seconds and gigabytes";
  EXPECT_FALSE(exists(ws)) << "refused before the workspace was made";
}

// A huge -i: the per-iteration records every card writes (the loop's, the busy
// times; with offloads beside, the mix's) are counted up front with the buffers, and
// the refusal names -i; nothing is made. (They were not counted, and the mix's
// mapping failed after the workspace was made.)
TEST(LoadPreflight, AHugeIterationCountIsRefusedUpFrontNamingI) {
  for (const std::vector<std::string>& extra : {std::vector<std::string>{"load"}, {"offload"},
                                                {"load", "--offload-ratio", "0.5"}}) {
    const std::string ws = ::testing::TempDir() + unique_name("hugei");
    std::vector<std::string> args = extra;
    // The most -i takes, on 64 cards: 858 GiB of records for load alone, more than
    // any machine this suite runs on has.
    args.insert(args.end(), {"--backend", "sim", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "16",
                             "-d", "64", "-i", "100000000"});
    const auto r = run_tool(args, {{"DEV_SANDBOX_SIM_DEVICES", "64"}});
    EXPECT_EQ(r.exit_code, 1) << extra[0] << ": " << r.err;
    EXPECT_TRUE(contains(r.err, " + records ")) << r.err;
    EXPECT_TRUE(contains(r.err, "; lower -i: the per-iteration records are most of it\n")) << r.err;
    EXPECT_FALSE(exists(ws)) << "refused before the workspace was made";
  }
}

// --compare-contiguous: each round a fourth pass, the same blocks at slots 0, 1, ...
// of the same pool (the double's call log: the paged pass's and copy alone's copies
// at the table's slots, the contiguous pass's at sequential ones), its own figures in
// JSON (and the paged ones), its own CSV row, and the Paged line in the text.
TEST(LoadBlockTable, CompareContiguousMeasuresTheSequentialSlotsToo) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("contig");
  dstest::TempFile table("ds-table");
  { std::ofstream(table.path()) << "6\n2\n0\n"; }
  dstest::TempFile log("ds-table-log");
  std::vector<std::string> args = load_args(ws, {"-s", "64K", "-n", "3", "--iodepth", "1", "--streams", "1",
                                                 "--block-table", table.path(), "--pool-blocks", "7",
                                                 "--compare-contiguous", "--validate"});
  args[2] = "cuda";
  JsonRun r = run_json(args, {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Per round (1 warm-up + 2): pipelined, copy alone (the table's slots), contiguous.
  std::vector<uint64_t> want;
  for (int round = 0; round < 3; ++round) want.insert(want.end(), {6, 2, 0, 6, 2, 0, 0, 1, 2});
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyHtoDAsync_v2", "dst", 65536, 27), want);
  const json x = r.result("load");
  EXPECT_EQ(x["validated"], true) << "the paged pass validated at its slots";
  EXPECT_EQ(x["copies_per_iteration"], 3);
  EXPECT_EQ(x["mean_chunk_bytes"], 65536.0);
  const json& p = x["paged"];
  EXPECT_EQ(p["block_table"], table.path());
  EXPECT_EQ(p["pool_blocks"], 7);
  EXPECT_EQ(p["chunks_per_iteration"], 3);
  EXPECT_EQ(p["mean_chunk_bytes"], 65536.0);
  EXPECT_EQ(p["copies_per_iteration"], 3);
  const double contig = p["contiguous"]["bandwidth_gib_s"].get<double>();
  ASSERT_GT(contig, 0);
  EXPECT_NEAR(p["contiguous"]["copy_us"]["avg"].get<double>(), 3.0 * 65536 / (contig * (1 << 30)) * 1e6, 0.01);
  EXPECT_NEAR(p["percent_of_contiguous"].get<double>(), 100.0 * x["bandwidth_gib_s"].get<double>() / contig, 1e-9);
  EXPECT_DOUBLE_EQ(p["bandwidth_gib_s"].get<double>(), x["bandwidth_gib_s"].get<double>());
  // sim, fragments: the text's Paged line (30 chunks of 5000 B), its bandwidth the row's.
  const auto t = run_tool(load_args(ws, {"-s", "5000", "-f", "3", "-n", "10", "--block-table", "random:7",
                                         "--compare-contiguous"}));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const auto paged = lines_starting(t.out, "  Paged: ");
  ASSERT_EQ(paged.size(), 1u) << t.out;
  std::smatch m;
  ASSERT_TRUE(std::regex_match(paged[0], m, std::regex(R"(  Paged: 30 chunks of 5000 B, ([0-9.]+) GiB/s = ([0-9.]+)% of contiguous)")))
      << paged[0];
  const auto rows = lines_starting(t.out, "  file::");
  ASSERT_EQ(rows.size(), 1u) << t.out;
  EXPECT_EQ(rows[0].substr(rows[0].find_last_of(' ') + 1), m[1].str()) << "the paged pass is the row's";
  EXPECT_GT(std::stod(m[2]), 0);
  // Without --compare-contiguous: the table and pool, no contiguous pass.
  const auto u = run_tool(load_args(ws, {"-s", "5000", "-f", "3", "-n", "10", "--block-table", "random:7"}));
  ASSERT_EQ(u.exit_code, 0) << u.err;
  const auto alone = lines_starting(u.out, "  Paged: ");
  ASSERT_EQ(alone.size(), 1u) << u.out;
  EXPECT_TRUE(std::regex_match(alone[0], std::regex(R"(  Paged: 30 chunks of 5000 B, [0-9.]+ GiB/s \(--block-table random:7, a 40-block pool\))")))
      << alone[0];
  // CSV: the result's row, both stages alone, the contiguous pass.
  const auto c = run_tool(load_args(ws, {"-s", "16K", "-n", "4", "--block-table", "random", "--compare-contiguous",
                                         "--format", "csv"}));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::vector<std::string> names;
  std::istringstream in(c.out);
  std::string row;
  std::getline(in, row);
  EXPECT_TRUE(contains(row, ",copies_per_iteration,mean_chunk_bytes,")) << row;
  while (std::getline(in, row)) names.push_back(row.substr(0, row.find(',')));
  EXPECT_EQ(names, (std::vector<std::string>{"load", "load:disk_alone", "load:copy_alone", "load:contiguous"})) << c.out;
  EXPECT_TRUE(contains(c.out, ",Contiguous,")) << c.out;
  EXPECT_FALSE(exists(ws));
}

// The contiguous figure is the contiguous pass's, the result's the paged pass's:
// through the cuda double with every copy that does not begin where its stream's
// last one ended paying 2 ms more (DS_CUDA_DOUBLE_JUMP_NS), the 8 blocks at random
// slots jump at every copy and the 8 at slots 0..7 once, so the paged pass is known
// to be the slower one: a figure taken from the wrong pass reads 100% or more.
TEST(LoadBlockTable, TheContiguousFigureIsTheContiguousPasss) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("jump");
  std::vector<std::string> args = load_args(ws, {"-s", "64K", "-n", "8", "--streams", "1",
                                                 "--block-table", "random:3", "--compare-contiguous"});
  args[2] = "cuda";
  JsonRun r = run_json(args, {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_JUMP_NS", "2000000"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("load");
  const json& p = x["paged"];
  // Paged: 8 x 2 ms of jumps at least; contiguous: one, and the disk's time.
  EXPECT_GT(p["percent_of_contiguous"].get<double>(), 0) << p.dump();
  EXPECT_LT(p["percent_of_contiguous"].get<double>(), 70) << p.dump();
  EXPECT_GT(p["contiguous"]["bandwidth_gib_s"].get<double>(), p["bandwidth_gib_s"].get<double>()) << p.dump();
  EXPECT_FALSE(exists(ws));
}

// --sweep with --block-table: each size's blocks at the slots a run of that size
// alone puts them (the table made for its count with the same seed: the double's
// call log against that run's), validated at them; each size's table and pool.
TEST(LoadBlockTable, ASweepPlacesEachSizeAtItsTablesSlots) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("sweep");
  dstest::TempFile log("ds-sweep-log"), alone("ds-sweep-alone");
  const auto args = [&](std::vector<std::string> extra) {
    std::vector<std::string> v = load_args(ws, {"--iodepth", "1", "--streams", "1", "--validate", "--block-table",
                                                "random:7"});
    v[2] = "cuda";
    v.insert(v.end(), extra.begin(), extra.end());
    return v;
  };
  const auto env = [](const dstest::TempFile& f) {
    return std::map<std::string, std::string>{{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
                                              {"DS_CUDA_DOUBLE_LOG", f.path()}};
  };
  JsonRun r = run_json(args({"-n", "8", "--sweep", "64K:128K"}), env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.doc["results"].size(), 2u) << r.out;
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(r.doc["results"][i]["validated"], true) << i;
    EXPECT_EQ(r.doc["results"][i]["paged"]["pool_blocks"], i == 0 ? 32 : 16) << "4 x each size's blocks";
  }
  ASSERT_EQ(run_tool(args({"-n", "4", "-s", "128K"}), env(alone)).exit_code, 0);
  // Each round (1 warm-up + 2) the pipelined pass and copy alone: 48 copies at 64K,
  // then 24 at 128K; the 128K run alone's 24.
  const auto slots = [](const std::string& text, size_t from) {
    std::vector<uint64_t> a;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const size_t at = line.find(" dst=");
      if (line.find(" cuMemcpyHtoDAsync_v2 ") != std::string::npos && at != std::string::npos)
        a.push_back(std::stoull(line.substr(at + 5), nullptr, 16));
    }
    if (a.size() < from + 24) return std::vector<uint64_t>();
    a = std::vector<uint64_t>(a.begin() + static_cast<long>(from), a.begin() + static_cast<long>(from + 24));
    const uint64_t base = *std::min_element(a.begin(), a.end());
    for (uint64_t& x : a) x = (x - base) / 131072;
    return a;
  };
  const std::vector<uint64_t> swept = slots(log.text(), 48);
  ASSERT_FALSE(swept.empty()) << log.text();
  EXPECT_EQ(swept, slots(alone.text(), 0));
  EXPECT_NE(std::vector<uint64_t>(swept.begin(), swept.begin() + 4), (std::vector<uint64_t>{0, 1, 2, 3}))
      << "at the table's slots, not the blocks' index";
  EXPECT_FALSE(exists(ws));
}

// --sweep with a FILE table, load and offload: where the sweep lowers -n, its first n
// lines in the pool the first size validated them in (an engine's slot ids do not
// shrink with the count: slot 7 stays in the pool of 8 at 8K's 1 block), each size
// validated at its slots.
TEST(LoadBlockTable, ASweepKeepsAFilesPool) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  dstest::TempFile table("ds-table");
  { std::ofstream(table.path()) << "7\n0\n"; }
  for (const char* cmd : {"load", "offload"}) {
    const std::string ws = disk_base() + "/" + unique_name("filesweep");
    std::vector<std::string> args = load_args(ws, {"-n", "2", "--validate", "--block-table", table.path(), "--sweep",
                                                   "4K:8K"});
    args[0] = cmd;
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    ASSERT_EQ(r.doc["results"].size(), 2u) << r.out;
    for (size_t i = 0; i < 2; ++i) {
      const json& x = r.doc["results"][i];
      EXPECT_EQ(x["validated"], true) << cmd << " " << i;
      EXPECT_EQ(x["paged"]["pool_blocks"], 8) << cmd << ": the first size's pool at every size\n" << x.dump();
    }
    EXPECT_FALSE(exists(ws));
  }
}

// load --offload-ratio with --block-table: the load's blocks at the table's slots,
// the offloads' (R x the blocks) at the slots of a table of their own of the same kind
// (sequential; random:SEED+1) in a pool scaled by their blocks (ceil(10 x 6 / 4) =
// 15), each direction validated at its slots every pass; the note, the Tables line and
// JSON name both tables.
TEST(LoadBlockTable, WithOffloadsEachDirectionHasItsOwnTable) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixtable");
  for (const auto& t : {std::make_pair(std::string("sequential"), std::string("sequential")),
                        std::make_pair(std::string("random:7"), std::string("random:8"))}) {
    SCOPED_TRACE(t.first);
    const auto r = run_tool(load_args(ws, {"-s", "16K", "-f", "2", "-n", "4", "-d", "2", "--offload-ratio", "1.5",
                                           "--block-table", t.first, "--pool-blocks", "10", "--validate", "--format",
                                           "text,json"}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_starting(r.err, "dev-sandbox: note: --offload-ratio with --block-table " + t.first +
                                        ": the load's 4 blocks at their slots of " + t.first +
                                        " in a pool of 10 slots, the offload's 6 at their slots of a table of their "
                                        "own, " + t.second + " in a pool of 15 slots")
                  .size(),
              1u)
        << r.err;
    EXPECT_TRUE(contains(r.out, "\n  Tables: load --block-table " + t.first + " in a pool of 10 slots, offload its own " +
                                    t.second + " in a pool of 15 slots\n"))
        << r.out;
    const json x = json::parse(r.out.substr(r.out.find("\n{") + 1))["results"][0];
    EXPECT_EQ(x["validated"], true);
    EXPECT_EQ(x["mix"]["load"]["block_table"], t.first);
    EXPECT_EQ(x["mix"]["load"]["pool_blocks"], 10);
    EXPECT_EQ(x["mix"]["offload"]["block_table"], t.second);
    EXPECT_EQ(x["mix"]["offload"]["pool_blocks"], 15);
    EXPECT_EQ(x["mix"]["offload"]["count"], 2u * 6u * 2u) << "2 cards, 6 blocks of 2 fragments";
    EXPECT_TRUE(contains(x["brief"].get<std::string>(),
                         "each block at its slot of its direction's own paged pool (load --block-table " + t.first +
                             " in a pool of 10 slots, offload " + t.second + " in a pool of 15 slots)"))
        << x["brief"];
    expect_mix_arithmetic(x);
    EXPECT_FALSE(exists(ws));
  }
}

// Through the cuda double's call log (one stream, one I/O at a time): the together
// pass's H2D copies land at the load table's slots and its D2H copies leave from the
// offload table's (random:7 for the 3 loaded blocks in 12 slots; random:8 for the 6
// offloaded in 24), not the load's table and not the blocks' indexes; both validated.
TEST(LoadBlockTable, WithOffloadsTheDoubleSeesEachDirectionAtItsOwnSlots) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("mixtabledbl");
  dstest::TempFile log("ds-mix-table-log");
  std::vector<std::string> args = load_args(ws, {"-s", "64K", "-n", "3", "--iodepth", "1", "--streams", "1",
                                                 "--staging", "1", "--offload-ratio", "2", "--block-table", "random:7",
                                                 "--validate"});
  args[2] = "cuda";
  JsonRun r = run_json(args, {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_LOG", log.path()}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("load+offload")["validated"], true);
  auto relative = [](std::vector<uint64_t> v) {
    const uint64_t low = *std::min_element(v.begin(), v.end());
    for (uint64_t& s : v) s -= low;
    return v;
  };
  const std::vector<uint64_t> load_slots = ds::make_block_table("random:7", 3, 12).slots;
  const std::vector<uint64_t> offload_slots = ds::make_block_table("random:8", 6, 24).slots;
  ASSERT_NE(relative(offload_slots), relative(std::vector<uint64_t>(load_slots.begin(), load_slots.end())));
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyHtoDAsync_v2", "dst", 65536, 3), relative(load_slots));
  EXPECT_EQ(dstest::staged::copy_slots(log.text(), "cuMemcpyDtoHAsync_v2", "src", 65536, 6), relative(offload_slots));
  EXPECT_FALSE(exists(ws));
}

// --model with --block-table and --compare-contiguous, --dry-run, load and offload:
// where the blocks are one task each (vllm-flash: a block file is one block's chunks
// of every layer) the equivalent command places them as the run does and keeps the
// contiguous pass.
TEST(LoadBlockTable, TheDryRunsCommandKeepsCompareContiguous) {
  std::string layout = "256K";
  for (int i = 1; i < 128; ++i) layout += ",256K";  // 64 layers, K and V apart
  for (const char* cmd : {"load", "offload"}) {
    const auto r = run_tool({cmd, "--backend", "sim", "--workspace", "/tmp", "--model", "Qwen3-32B", "--input-len", "2K",
                             "--kv-layout", "vllm-flash", "--block-table", "random:3", "--compare-contiguous",
                             "--dry-run"});
    ASSERT_EQ(r.exit_code, 0) << cmd << "\n" << r.err;
    EXPECT_TRUE(contains(r.out, "\nequivalent: dev-sandbox --backend sim " + std::string(cmd) +
                                    " --workspace /tmp --block-layout " + layout +
                                    " -n 16 -d 1 --block-table random:3 --pool-blocks 64 --compare-contiguous (the "
                                    "same copies;"))
        << r.out;
  }
}

// --model with --block-table and --offload-ratio, --dry-run: the equivalent command
// keeps the ratio, and a line lists both tables.
TEST(LoadBlockTable, WithOffloadsTheDryRunListsBothTables) {
  const auto r = run_tool({"load", "--backend", "sim", "--workspace", "/tmp", "--model", "Qwen3-32B", "--input-len", "2K",
                           "--block-table", "random:3", "--offload-ratio", "0.5", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\nequivalent: dev-sandbox --backend sim load --workspace /tmp --block-layout 256K,256K -n "
                              "1024 -d 1 --offload-ratio 0.5 (the same copies;"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\n--offload-ratio with --block-table random:3: the load's 16 blocks at their slots of "
                              "random:3 in a pool of 64 slots, the offload's 8 at their slots of a table of their own, "
                              "random:4 in a pool of 32 slots\neach slot holds a block file's 64 tasks together, which "
                              "only --model places: the equivalent command has no table\n"))
      << r.out;
}

}  // namespace dstest_block_table
