// docs/measurement.md ("Nothing built while timed") promises that no timed
// iteration builds anything: what a submission needs (graphs, batch arrays,
// FFTS+ contexts, kernels, streams, events, memory) is made at setup. This is
// that promise checked for every measurement through the doubles: the tool
// writes its timed windows (DEV_SANDBOX_PHASE_TRACE: pid, worker, iteration,
// begin and end on CLOCK_MONOTONIC), the doubles log every call that makes, allocates,
// frees or instantiates something or copies blocking, and descriptor lists rebuilt in
// place of prepared ones (DS_*_DOUBLE_BUILD_LOG: pid, CLOCK_MONOTONIC ns, call;
// tests/doubles/double_timing.h). Each run must show such calls at setup (the counter
// sees them) and none inside a window of its own process. A measurement added later
// gets the same guard by adding its runs to the lists below.
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "disk_fixtures.h"

namespace {

using dstest::RunResult;
using dstest::run_tool;
using namespace dstest::disk;

struct Window {
  int64_t begin, end;
};

// pid -> its timed windows.
std::map<int, std::vector<Window>> read_windows(const std::string& path) {
  std::map<int, std::vector<Window>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    int pid = 0, worker = 0, iteration = 0;
    Window w{};
    if (f >> pid >> worker >> iteration >> w.begin >> w.end) out[pid].push_back(w);
  }
  return out;
}

struct BuildCalls {
  size_t setup = 0;                  // outside every window
  std::map<std::string, size_t> timed;  // call -> how many inside a window of its process
  std::string timed_text() const {
    std::string s;
    for (const auto& kv : timed) s += kv.first + " x" + std::to_string(kv.second) + "; ";
    return s;
  }
};

BuildCalls count_builds(const std::string& log, const std::map<int, std::vector<Window>>& windows) {
  BuildCalls c;
  std::ifstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    int pid = 0;
    int64_t ns = 0;
    std::string call;
    if (!(f >> pid >> ns >> call)) continue;
    bool inside = false;
    auto it = windows.find(pid);
    if (it != windows.end())
      for (const Window& w : it->second) inside = inside || (ns >= w.begin && ns <= w.end);
    if (inside)
      ++c.timed[call];
    else
      ++c.setup;
  }
  return c;
}

struct Files {
  dstest::TempFile trace{"ds-phase-trace"};
  dstest::TempFile builds{"ds-build-log"};
};

// Runs the tool with the trace and the build log on; the run must succeed, have
// windows and setup builds, and no build inside a window. `ran`: what the run
// printed and how many windows it traced, for a caller that checks more.
struct Ran {
  RunResult result;
  size_t windows = 0;
};
void expect_nothing_built_while_timed(const std::vector<std::string>& args, std::map<std::string, std::string> env,
                                      const char* log_variable, Ran* ran = nullptr) {
  std::string what;
  for (const auto& a : args) what += a + " ";
  SCOPED_TRACE(what);
  Files f;
  env["DEV_SANDBOX_PHASE_TRACE"] = f.trace.path();
  env[log_variable] = f.builds.path();
  const RunResult r = run_tool(args, env);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto windows = read_windows(f.trace.path());
  if (ran) {
    ran->result = r;
    for (const auto& kv : windows) ran->windows += kv.second.size();
  }
  ASSERT_FALSE(windows.empty()) << "no timed window traced";
  const BuildCalls c = count_builds(f.builds.path(), windows);
  EXPECT_GT(c.setup, 0u) << "the double logged no setup call: the counter sees nothing";
  EXPECT_TRUE(c.timed.empty()) << "built inside a timed window: " << c.timed_text();
}

std::map<std::string, std::string> cuda_env(const char* lib) {
  return {{"DEV_SANDBOX_CUDA_LIB", lib}, {"DS_CUDA_DOUBLE_DEVICES", "2"}};
}

std::map<std::string, std::string> ascend_env() {
  return {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
          {"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE},
          {"DS_ACL_DOUBLE_DEVICES", "2"},
          {"LD_PRELOAD", DS_CORRUPT_SHIM}};  // O_DIRECT into aclrtMallocHost memory fails, as on the card
}

std::vector<std::string> copy_args(const char* backend, const char* tcase, std::vector<std::string> extra = {}) {
  std::vector<std::string> v = {"copy", "--backend", backend, "-t", tcase, "-s", "8K", "-n", "8", "-f", "2",
                                "-i", "3", "--warmup", "2"};
  // The doubles' two devices, for the cases on every device.
  if (std::string(tcase).find("all_device") != std::string::npos) v.insert(v.end(), {"-d", "2"});
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

std::vector<std::string> load_args(const char* backend, const std::string& ws, bool sdma, const char* command = "load") {
  return {command,     "--backend", backend, "--create-workspace", "--workspace", ws,  "-s",     "16K",         "-f", "2", "-n", "9",
          "--staging", "2",         "-i",    "2",           "--warmup", "1", "--streams", "2",  "--sdma",
          sdma ? "true" : "false"};
}

// load --offload-ratio: both sides on every card, the offload side's thread made at setup.
std::vector<std::string> mix_args(const char* backend, const std::string& ws) {
  std::vector<std::string> v = load_args(backend, ws, false);
  v.insert(v.end(), {"--offload-ratio", "0.5", "-d", "2"});
  return v;
}

// all_*_ce: a thread per card in one process; one that finished first must not tear
// down inside another's last window (the timed loop's last barrier).
const char* const kCopyCases[] = {"host_to_device_ce", "host_to_device_batch_ce", "host_to_device_ce_multi_stream",
                                  "all_host_to_all_device_ce", "all_device_to_all_host_ce",
                                  "all_host_to_all_device_ffts_direct_h2d",
                                  "all_host_to_all_device_duplex_ce_multi_stream",
                                  "one_share_host_to_all_device_duplex_ce_multi_stream"};

TEST(NothingBuiltWhileTimed, CudaCopy) {
  for (const char* c : kCopyCases)
    expect_nothing_built_while_timed(copy_args("cuda", c), cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
  expect_nothing_built_while_timed(copy_args("cuda", "host_to_device_sm"), cuda_env(DS_CUDA_DOUBLE),
                                   "DS_CUDA_DOUBLE_BUILD_LOG");
  // The gather kernel's descriptor table: allocated and uploaded at setup, read by every launch.
  for (const char* c : {"host_to_device_sm_gather", "device_to_host_sm_gather"})
    expect_nothing_built_while_timed(copy_args("cuda", c, {"--validate", "each"}), cuda_env(DS_CUDA_DOUBLE),
                                     "DS_CUDA_DOUBLE_BUILD_LOG");
}

// --kv-layout: an engine layout's IO task is every layer's chunks of a block (here 128
// per task, one batch or one direct task), planned at setup like any block layout.
TEST(NothingBuiltWhileTimed, CudaCopyEngineLayout) {
  for (const char* c : {"host_to_device_batch_ce", "all_host_to_all_device_ffts_direct_h2d"})
    expect_nothing_built_while_timed({"copy", "--backend", "cuda", "-t", c, "--model", "Qwen3-32B", "--tp", "8",
                                      "--input-len", "256", "--kv-layout", "vllm-flash", "-d", "2", "-i", "3",
                                      "--warmup", "2"},
                                     cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
}

// copy --block-table / --host-block-table: both sides paged, the tables and the plan
// at their slots made at setup, for every method (the gather's table too, and duplex).
TEST(NothingBuiltWhileTimed, CudaCopyBlockTable) {
  const std::vector<std::string> tables = {"--block-table", "random:7", "--host-block-table", "random:3"};
  for (const char* c : {"host_to_device_ce", "host_to_device_batch_ce", "all_host_to_all_device_ffts_direct_h2d",
                        "host_to_device_sm_gather", "all_host_to_all_device_duplex_ce_multi_stream"})
    expect_nothing_built_while_timed(copy_args("cuda", c, tables), cuda_env(DS_CUDA_DOUBLE),
                                     "DS_CUDA_DOUBLE_BUILD_LOG");
}

// copy --compare-contiguous: the contiguous pass's plan (and the gather's second
// descriptor table) made at setup as a second plan of the paged pass's initiator, on
// its streams; the duplex cases' contiguous pass, each direction's, too.
TEST(NothingBuiltWhileTimed, CudaCopyCompareContiguous) {
  const std::vector<std::string> extra = {"--block-table", "random:7", "--compare-contiguous", "--validate", "each"};
  for (const char* c : {"host_to_device_ce", "host_to_device_batch_ce", "host_to_device_sm_gather",
                        "all_host_to_all_device_ffts_direct_h2d", "host_to_device_ce_multi_stream",
                        "all_host_to_all_device_duplex_ce_multi_stream"})
    expect_nothing_built_while_timed(copy_args("cuda", c, extra), cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
}

TEST(NothingBuiltWhileTimed, AscendCopyBlockTable) {
  for (const char* c : {"host_to_device_batch_ce", "all_host_to_all_device_ffts_direct_h2d"})
    expect_nothing_built_while_timed(copy_args("ascend", c, {"--block-table", "random:7"}), ascend_env(),
                                     "DS_ACL_DOUBLE_BUILD_LOG");
}

// A driver without cuMemcpyBatchAsync (12.4): batches and direct tasks are graphs,
// each instantiated once at setup.
TEST(NothingBuiltWhileTimed, CudaGraphFallbackCopy) {
  for (const char* c : {"host_to_device_batch_ce", "all_host_to_all_device_ffts_direct_h2d"})
    expect_nothing_built_while_timed(copy_args("cuda", c), cuda_env(DS_CUDA_DOUBLE_NOBATCH),
                                     "DS_CUDA_DOUBLE_BUILD_LOG");
}

TEST(NothingBuiltWhileTimed, CudaLoad) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* lib : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOBATCH})
    for (bool sdma : {false, true}) {
      const std::string ws = disk_base() + "/" + unique_name("nobuild-cuda");
      expect_nothing_built_while_timed(load_args("cuda", ws, sdma), cuda_env(lib), "DS_CUDA_DOUBLE_BUILD_LOG");
      EXPECT_FALSE(exists(ws));
    }
}

// offload: the D2H copies into the staging buffers prepared with the backend at setup
// as load's H2D ones are (CE, the direct path's batch or graph per block).
TEST(NothingBuiltWhileTimed, CudaOffload) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* lib : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOBATCH})
    for (bool sdma : {false, true}) {
      const std::string ws = disk_base() + "/" + unique_name("nobuild-cuda-off");
      expect_nothing_built_while_timed(load_args("cuda", ws, sdma, "offload"), cuda_env(lib), "DS_CUDA_DOUBLE_BUILD_LOG");
      EXPECT_FALSE(exists(ws));
    }
}

// A paged table of over 100k chunks: 200 blocks at random slots of the pool, each
// 512 chunks of 256 B (vllm-flash's K and V of 256 layers, as many chunks as 800
// blocks of Qwen3-32B's 128 at TP 8, in fewer files: 102400 chunks, 25 MiB), and with
// --compare-contiguous the contiguous pass's plan beside it: both prepared at setup,
// CE (a copy per chunk) and batched (one cuMemcpyBatchAsync per block). Offload's
// copies are planned by the same StagedSide and Pipeline (CudaOffload above).
TEST(NothingBuiltWhileTimed, CudaPagedTableOf100kChunks) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (bool sdma : {false, true}) {
    const std::string ws = disk_base() + "/" + unique_name("nobuild-paged");
    expect_nothing_built_while_timed({"load", "--backend", "cuda", "--create-workspace", "--workspace", ws, "-s", "256",
                                      "-f", "512", "-n", "200", "--block-table", "random:5", "--compare-contiguous",
                                      "-i", "1", "--warmup", "0", "--sdma", sdma ? "true" : "false"},
                                     cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
    EXPECT_FALSE(exists(ws));
  }
}

TEST(NothingBuiltWhileTimed, CudaLoadWithOffloads) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("nobuild-cuda-mix");
  expect_nothing_built_while_timed(mix_args("cuda", ws), cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
  EXPECT_FALSE(exists(ws));
  // With --block-table: each direction's copies at its own table's slots, planned at setup too.
  std::vector<std::string> paged = mix_args("cuda", ws);
  paged.insert(paged.end(), {"--block-table", "random:7"});
  expect_nothing_built_while_timed(paged, cuda_env(DS_CUDA_DOUBLE), "DS_CUDA_DOUBLE_BUILD_LOG");
  EXPECT_FALSE(exists(ws));
}

TEST(NothingBuiltWhileTimed, AscendLoadWithOffloads) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("nobuild-acl-mix");
  expect_nothing_built_while_timed(mix_args("ascend", ws), ascend_env(), "DS_ACL_DOUBLE_BUILD_LOG");
  EXPECT_FALSE(exists(ws));
}

TEST(NothingBuiltWhileTimed, AscendCopy) {
  for (const char* c : kCopyCases)
    expect_nothing_built_while_timed(copy_args("ascend", c), ascend_env(), "DS_ACL_DOUBLE_BUILD_LOG");
}

// The direct path with its FFTS+ contexts in device memory: a task built is an arena
// piece and a blocking aclrtMemcpy, so one built per block shows at once.
TEST(NothingBuiltWhileTimed, AscendLoad) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* desc : {"auto", "device"})
    for (bool sdma : {false, true}) {
      if (!sdma && std::string(desc) == "device") continue;
      auto env = ascend_env();
      env["DEV_SANDBOX_FFTS_DESC"] = desc;
      const std::string ws = disk_base() + "/" + unique_name("nobuild-acl");
      expect_nothing_built_while_timed(load_args("ascend", ws, sdma), env, "DS_ACL_DOUBLE_BUILD_LOG");
      EXPECT_FALSE(exists(ws));
    }
}

// offload on ascend: CE copies only (its direct path does not copy device to host).
TEST(NothingBuiltWhileTimed, AscendOffload) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("nobuild-acl-off");
  expect_nothing_built_while_timed(load_args("ascend", ws, false, "offload"), ascend_env(), "DS_ACL_DOUBLE_BUILD_LOG");
  EXPECT_FALSE(exists(ws));
}

void expect_tune_copy_points_built_nothing(const char* lib) {
  Ran ran;
  expect_nothing_built_while_timed({"--backend", "cuda", "tune", "--budget", "3s", "--sizes", "8K:16K", "-d", "2",
                                    "-i", "2", "--warmup", "1", "--format", "json"},
                                   cuda_env(lib), "DS_CUDA_DOUBLE_BUILD_LOG", &ran);
  if (::testing::Test::HasFatalFailure()) return;
  const nlohmann::json doc = nlohmann::json::parse(ran.result.out);
  std::set<std::string> methods;
  size_t points = 0;
  for (const auto& p : doc["copy"]["points"]) {
    ASSERT_FALSE(p.contains("error")) << p.dump();
    const std::string arm = p["arm"];
    methods.insert(arm.substr(arm.rfind('.') + 1));
    ++points;
  }
  for (const char* m : {"ce", "batch_ce", "ms_4", "ms_4_rr", "sm", "sm_gather", "direct"})
    EXPECT_EQ(methods.count(m), 1u) << m << " measured: " << doc["copy"]["points"].dump();
  EXPECT_GE(ran.windows, points) << "every point traced its timed windows";
}

void expect_tune_load_points_built_nothing(const char* lib) {
  const std::string ws = disk_base() + "/" + unique_name("nobuild-tune");
  ASSERT_EQ(mkdir(ws.c_str(), 0700), 0) << ws;
  Ran ran;
  expect_nothing_built_while_timed({"--backend", "cuda", "tune", "--budget", "3s", "--what", "load", "--workspace", ws,
                                    "--sizes", "16K:16K", "-i", "2", "--warmup", "1", "--format", "json"},
                                   cuda_env(lib), "DS_CUDA_DOUBLE_BUILD_LOG", &ran);
  EXPECT_TRUE(entries(ws).empty()) << "tune left files in its workspace";
  remove_tree(ws);
  if (::testing::Test::HasFatalFailure()) return;
  const nlohmann::json doc = nlohmann::json::parse(ran.result.out);
  std::set<std::string> copies;
  size_t points = 0;
  for (const auto& p : doc["load"]["points"]) {
    ASSERT_FALSE(p.contains("error")) << p.dump();
    copies.insert(p["config"]["copy"].get<std::string>());
    ++points;
  }
  EXPECT_EQ(copies, (std::set<std::string>{"ce", "direct"})) << doc["load"]["points"].dump();
  EXPECT_GE(ran.windows, points) << "every point traced its timed windows";
}

// tune's copy points are copy's measurements run in tune's process (one card) or its
// forked workers (all cards): every arm the cuda double offers (CE, batched, S
// streams stream-major and round-robin, the SM kernel and its gather, the direct
// path) over two sizes, both directions, with and without cuMemcpyBatchAsync (its
// batches and direct tasks graphs instantiated at setup). Each point is traced (a
// window or more per point), and none built anything inside its windows.
TEST(NothingBuiltWhileTimed, CudaTuneCopy) {
  for (const char* lib : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOBATCH}) {
    SCOPED_TRACE(lib);
    expect_tune_copy_points_built_nothing(lib);
    if (HasFatalFailure()) return;
  }
}

// tune --what load's points are load's measurement (a forked worker on one card): each
// arm the cuda double offers (libaio and io_uring, CE copies and the direct path) at
// the coarse staging counts, with and without cuMemcpyBatchAsync, nothing built inside
// a window, the workspace left empty.
TEST(NothingBuiltWhileTimed, CudaTuneLoad) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* lib : {DS_CUDA_DOUBLE, DS_CUDA_DOUBLE_NOBATCH}) {
    SCOPED_TRACE(lib);
    expect_tune_load_points_built_nothing(lib);
    if (HasFatalFailure()) return;
  }
}

}  // namespace
