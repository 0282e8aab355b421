// The cuda backend end to end without a GPU: dev-sandbox drives the CPU test
// double of libcuda.so.1 (tests/doubles/cuda) through DEV_SANDBOX_CUDA_LIB, and
// the double's call log shows how the driver API was used.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "cli_harness.h"
#include "duplex_checks.h"
#include "json_checks.h"
#include "table_checks.h"

using namespace dstest;

namespace {

struct Call {
  int pid;
  std::string name;
  std::string args;
};

// A fresh call-log file per test, removed afterwards.
class CallLog : public dstest::TempFile {
 public:
  CallLog() : TempFile("ds-cuda-double") {}
  std::vector<Call> calls() const {
    std::vector<Call> v;
    std::ifstream in(path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream s(line);
      Call c;
      s >> c.pid >> c.name;
      std::getline(s, c.args);
      if (!c.args.empty() && c.args[0] == ' ') c.args.erase(0, 1);
      v.push_back(c);
    }
    return v;
  }
};

std::map<std::string, std::string> double_env(const CallLog& log, bool batch = true) {
  return {{"DEV_SANDBOX_CUDA_LIB", batch ? DS_CUDA_DOUBLE : DS_CUDA_DOUBLE_NOBATCH},
          {"DS_CUDA_DOUBLE_LOG", log.path()},
          {"DS_CUDA_DOUBLE_DEVICES", "4"}};
}

// A CUDA 11.3 driver: no cuMemcpyBatchAsync and no cuGraphInstantiateWithFlags.
std::map<std::string, std::string> old_driver_env(const CallLog& log) {
  return {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE_NOGRAPH},
          {"DS_CUDA_DOUBLE_LOG", log.path()},
          {"DS_CUDA_DOUBLE_DEVICES", "4"}};
}

// The value of `key=` in a log line's arguments ("" if absent).
std::string arg(const Call& c, const std::string& key) {
  const size_t at = c.args.find(key + "=");
  if (at == std::string::npos) return "";
  const size_t b = at + key.size() + 1;
  return c.args.substr(b, c.args.find(' ', b) - b);
}

// Every allocation, registration and handle made in a process is released in it.
void expect_all_released(const std::vector<Call>& calls) {
  struct Pair {
    const char* make;
    const char* key_out;  // the handle in the "-> key=" line of `make`
    const char* release;
    const char* key_in;
  };
  const Pair pairs[] = {
      {"cuMemAlloc_v2", "ptr", "cuMemFree_v2", "ptr"},
      {"cuMemHostAlloc", "ptr", "cuMemFreeHost", "ptr"},
      {"cuMemHostRegister_v2", "ptr", "cuMemHostUnregister", "ptr"},
      {"cuStreamCreate", "stream", "cuStreamDestroy_v2", "stream"},
      {"cuEventCreate", "event", "cuEventDestroy_v2", "event"},
      {"cuGraphCreate", "graph", "cuGraphDestroy", "graph"},
      {"cuGraphInstantiateWithFlags", "exec", "cuGraphExecDestroy", "exec"},
      {"cuModuleLoadData", "module", "cuModuleUnload", "module"},
  };
  for (const Pair& p : pairs) {
    std::map<int, std::multiset<std::string>> live;
    for (const Call& c : calls) {
      if (c.name == p.make) {
        // What a call made is on its "-> key=" line, logged when it succeeded.
        if (c.args.rfind("->", 0) == 0 && !arg(c, p.key_out).empty()) live[c.pid].insert(arg(c, p.key_out));
      } else if (c.name == p.release) {
        auto& set = live[c.pid];
        auto it = set.find(arg(c, p.key_in));
        EXPECT_NE(it, set.end()) << p.release << " of something not made: " << c.args;
        if (it != set.end()) set.erase(it);
      }
    }
    for (const auto& kv : live)
      EXPECT_TRUE(kv.second.empty()) << "pid " << kv.first << ": " << kv.second.size() << " x " << p.make
                                     << " never released";
  }
  std::map<int, int> retained;
  for (const Call& c : calls) {
    if (c.name == "cuDevicePrimaryCtxRetain") ++retained[c.pid];
    if (c.name == "cuDevicePrimaryCtxRelease_v2") --retained[c.pid];
  }
  for (const auto& kv : retained) EXPECT_EQ(kv.second, 0) << "pid " << kv.first << " primary contexts";
}

// Each process that used the driver initialised it itself, first.
std::set<int> init_pids(const std::vector<Call>& calls) {
  std::set<int> seen, inited;
  for (const Call& c : calls) {
    if (!seen.count(c.pid)) {
      EXPECT_EQ(c.name, "cuInit") << "pid " << c.pid << " called " << c.name << " before cuInit";
      seen.insert(c.pid);
    }
    if (c.name == "cuInit") inited.insert(c.pid);
  }
  return inited;
}

int count_calls(const std::vector<Call>& calls, const std::string& name, int pid = -1) {
  int n = 0;
  for (const Call& c : calls) n += c.name == name && (pid < 0 || c.pid == pid) && c.args.rfind("->", 0) != 0;
  return n;
}

struct CudaCase {
  const char* name;
  bool fork;
  bool multi;
  const char* from;
  const char* to;
  const char* method;
};

const CudaCase kCases[] = {
    {"host_to_device_ce", false, false, "cuda::host::0", "cuda::device::0", "CE"},
    {"host_to_device_batch_ce", false, false, "cuda::host::0", "cuda::device::0", "CE-BATCH"},
    {"host_to_device_ce_multi_stream", false, false, "cuda::host::0", "cuda::device::0", "CE-MS"},
    {"device_to_host_ce", false, false, "cuda::device::0", "cuda::host::0", "CE"},
    {"device_to_device_ce", false, false, "cuda::device::0", "cuda::device::0", "CE"},
    {"anonymous_to_device_ce", false, false, "cuda::anonymous::0", "cuda::device::0", "CE"},
    {"one_host_to_all_device_ce", false, true, "cuda::host::0", "cuda::device::all", "CE"},
    {"all_host_to_all_device_ce", false, true, "cuda::host::all", "cuda::device::all", "CE"},
    {"one_device_to_all_device_ce", false, true, "cuda::device::0", "cuda::device::all", "CE"},
    {"all_host_to_all_device_ce_multi_stream", true, true, "cuda::host::all", "cuda::device::all",
     "CE-MS-FORK"},
    {"all_odirect_host_to_all_device_ce_multi_stream", true, true, "cuda::odirect_mmap::all",
     "cuda::device::all", "CE-MS-FORK"},
    {"one_share_host_to_all_device_ce_multi_stream", true, true, "cuda::shm::0", "cuda::device::all",
     "CE-MS-FORK"},
    {"all_host_to_all_device_ffts_direct_h2d", true, true, "cuda::host_mapped::all", "cuda::device::all",
     "BATCH-FORK"},
    {"all_odirect_host_to_all_device_ffts_direct_h2d", true, true, "cuda::odirect_mmap::all",
     "cuda::device::all", "BATCH-FORK"},
    {"one_share_host_to_all_device_ffts_direct_h2d", true, true, "cuda::shm::0", "cuda::device::all",
     "BATCH-FORK"},
    {"host_to_device_sm", false, false, "cuda::host::0", "cuda::device::0", "SM"},
    {"device_to_host_sm", false, false, "cuda::device::0", "cuda::host::0", "SM"},
    // The D2H mirrors of the multi-card cases (cuMemcpyBatchAsync copies either way).
    {"device_to_host_batch_ce", false, false, "cuda::device::0", "cuda::host::0", "CE-BATCH"},
    {"all_device_to_all_host_ce", false, true, "cuda::device::all", "cuda::host::all", "CE"},
    {"all_device_to_all_host_ce_multi_stream", true, true, "cuda::device::all", "cuda::host::all", "CE-MS-FORK"},
    {"all_device_to_all_odirect_host_ce_multi_stream", true, true, "cuda::device::all", "cuda::odirect_mmap::all",
     "CE-MS-FORK"},
    {"all_device_to_one_share_host_ce_multi_stream", true, true, "cuda::device::all", "cuda::shm::0",
     "CE-MS-FORK"},
    {"all_device_to_all_host_ffts_direct_d2h", true, true, "cuda::device::all", "cuda::host_mapped::all",
     "BATCH-FORK"},
    {"all_device_to_all_odirect_host_ffts_direct_d2h", true, true, "cuda::device::all", "cuda::odirect_mmap::all",
     "BATCH-FORK"},
    {"all_device_to_one_share_host_ffts_direct_d2h", true, true, "cuda::device::all", "cuda::shm::0",
     "BATCH-FORK"},
    // The batched call and the gather kernel on every card at once, a process per card.
    {"all_host_to_all_device_batch_ce", true, true, "cuda::host::all", "cuda::device::all", "CE-BATCH-FORK"},
    {"all_device_to_all_host_batch_ce", true, true, "cuda::device::all", "cuda::host::all", "CE-BATCH-FORK"},
    {"all_host_to_all_device_sm_gather", true, true, "cuda::host::all", "cuda::device::all", "SM-GATHER-FORK"},
    {"all_device_to_all_host_sm_gather", true, true, "cuda::device::all", "cuda::host::all", "SM-GATHER-FORK"},
};

class CudaCaseTest : public ::testing::TestWithParam<std::tuple<CudaCase, bool>> {};

void PrintTo(const CudaCase& c, std::ostream* os) { *os << c.name; }

}  // namespace

TEST_P(CudaCaseTest, RunsAndValidatesThroughTheDouble) {
  const CudaCase& c = std::get<0>(GetParam());
  const bool batch = std::get<1>(GetParam());
  CallLog log;
  const auto before = our_shm_entries();
  const std::string d = c.fork ? "3" : "2";
  JsonRun r = run_json(
      {"copy", "--backend", "cuda", "-t", c.name, "-s", "4K", "-n", "8", "-i", "3", "-d", d, "--validate"},
      double_env(log, batch));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_validated_result(r, c.name, c.from, c.to, c.method, 4096, 8 * (c.multi ? std::stoul(d) : 1));
  EXPECT_EQ(our_shm_entries(), before);

  const auto calls = log.calls();
  ASSERT_FALSE(calls.empty());
  expect_all_released(calls);
  // The probe process, then either this process or one child per device.
  const auto pids = init_pids(calls);
  EXPECT_EQ(pids.size(), c.fork ? 1u + std::stoul(d) : 2u);
  for (const Call& x : calls) {
    // Asked for a version older than the ABI began: the driver found the
    // symbol but no variant that old (CUDA_SUCCESS, NULL, VERSION_NOT_SUFFICIENT).
    if (x.name == "cuGetProcAddress_v2" && arg(x, "rc") == "CUDA_SUCCESS")
      EXPECT_NE(arg(x, "status"), "VERSION_NOT_SUFFICIENT") << "asked for too old a version: " << x.args;
    // Copies on our own streams, never the legacy default stream.
    if (x.name.find("Async") != std::string::npos || x.name == "cuGraphLaunch")
      EXPECT_NE(arg(x, "stream"), "(nil)") << x.name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllCudaCases, CudaCaseTest,
                         ::testing::Combine(::testing::ValuesIn(kCases), ::testing::Values(true)),
                         [](const ::testing::TestParamInfo<std::tuple<CudaCase, bool>>& i) {
                           return std::string(std::get<0>(i.param).name);
                         });

// The batch-using cases again on a driver without cuMemcpyBatchAsync: CUDA graphs.
const CudaCase kBatchCases[] = {kCases[1],  kCases[12], kCases[13], kCases[14], kCases[17],
                                 kCases[22], kCases[23], kCases[24], kCases[25], kCases[26]};
INSTANTIATE_TEST_SUITE_P(GraphFallback, CudaCaseTest,
                         ::testing::Combine(::testing::ValuesIn(kBatchCases), ::testing::Values(false)),
                         [](const ::testing::TestParamInfo<std::tuple<CudaCase, bool>>& i) {
                           return std::string(std::get<0>(i.param).name);
                         });

namespace {

const char* const kDirectCases[] = {"all_host_to_all_device_ffts_direct_h2d",
                                    "all_odirect_host_to_all_device_ffts_direct_h2d",
                                    "one_share_host_to_all_device_ffts_direct_h2d"};

}  // namespace

TEST(CudaDirect, OneBatchedSubmissionPerIoTask) {
  for (const char* name : kDirectCases) {
    SCOPED_TRACE(name);
    CallLog log;
    JsonRun r = run_json({"copy", "--backend", "cuda", "-t", name, "-s", "4K", "-n", "8", "-f", "4", "-i", "3",
                          "--warmup", "1", "-d", "3", "--validate"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["method"], "BATCH-FORK");
    EXPECT_EQ(res["count"], 96);  // d x n x f = 3 x 8 x 4
    const auto calls = log.calls();
    std::map<int, int> per_child;
    for (const Call& c : calls)
      if (c.name == "cuMemcpyBatchAsync") {
        EXPECT_EQ(arg(c, "count"), "4") << c.args;
        ++per_child[c.pid];
      }
    ASSERT_EQ(per_child.size(), 3u);
    for (const auto& kv : per_child) EXPECT_EQ(kv.second, (1 + 3) * 8);  // (warmup + i) x n tasks
    EXPECT_EQ(count_calls(calls, "cuMemcpyHtoDAsync_v2"), 0);
    expect_all_released(calls);
  }
}

TEST(CudaDirect, GraphsAreBuiltOncePerTaskAndRelaunched) {
  CallLog log;
  const std::string name = kDirectCases[0];
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", name, "-s", "4K", "-n", "8", "-f", "4", "-i",
                          "3", "--warmup", "1", "-d", "3", "--validate"},
                         double_env(log, false));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] " + name + " PASS"), std::string::npos);
  const auto calls = log.calls();
  std::map<int, int> built, launched;
  for (const Call& c : calls) {
    if (c.name == "cuGraphInstantiateWithFlags" && c.args.rfind("->", 0) == 0) {
      EXPECT_EQ(arg(c, "nodes"), "4");
      ++built[c.pid];
    }
    if (c.name == "cuGraphLaunch") ++launched[c.pid];
  }
  ASSERT_EQ(built.size(), 3u);
  for (const auto& kv : built) EXPECT_EQ(kv.second, 8) << "one graph per IO task, reused";
  for (const auto& kv : launched) EXPECT_EQ(kv.second, (1 + 3) * 8);
  EXPECT_EQ(count_calls(calls, "cuMemcpyBatchAsync"), 0);
  expect_all_released(calls);
}

TEST(CudaQuickMode, AllCombinationsRunAndValidate) {
  for (const char* model : {"gqa", "mla"})
    for (const char* iodirect : {"false", "true"})
      for (const char* sdma : {"false", "true"}) {
        SCOPED_TRACE(std::string(model) + " " + iodirect + " " + sdma);
        CallLog log;
        RunResult r = run_tool({"--backend", "cuda", "--model-type", model, "--iodirect", iodirect, "--sdma",
                                sdma, "-s", "4K", "-n", "8", "-i", "3", "-d", "3", "--validate"},
                               double_env(log));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find(std::string("cuda::") + (std::string(model) == "mla"       ? "shm::0"
                                                      : std::string(iodirect) == "true" ? "odirect_mmap::all"
                                                                                        : "host")),
                  std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find(std::string(sdma) == "true" ? "BATCH-FORK" : "CE-MS-FORK"), std::string::npos);
        EXPECT_EQ(init_pids(log.calls()).size(), 4u);  // the probe and 3 children
      }
}

// --model quick mode through the double: Qwen3-32B at TP 2, 128 tokens = 1 block,
// 64 tasks of 128K,128K per card on -d 2 (the TP size), every byte checked.
TEST(CudaQuickMode, ModelSizedRequestRunsAndValidates) {
  for (const char* sdma : {"false", "true"}) {
    SCOPED_TRACE(sdma);
    CallLog log;
    JsonRun r = run_json({"--backend", "cuda", "--model", "Qwen3-32B", "--tp", "2", "--input-len", "128",
                          "--iodirect", "false", "--sdma", sdma, "-i", "2", "--validate"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.doc["results"].size(), 1u) << r.doc.dump();
    const json& res = r.doc["results"][0];
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["devices"], 2);
    EXPECT_EQ(res["block_bytes"], 262144);
    EXPECT_EQ(res["count"], 2 * 64);
    EXPECT_EQ(res["layout"], "128K,128K");
    EXPECT_EQ(res["copies_per_iteration"], 2 * 64 * 2);
    EXPECT_EQ(r.doc["workload"]["tasks_per_card"], 64);
  }
}

TEST(CudaOrdering, HostMemoryIsRegisteredMappedBeforeItIsCopied) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "all_odirect_host_to_all_device_ce_multi_stream",
                          "-s", "4K", "-n", "8", "-i", "3", "-d", "3"},
                         double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto calls = log.calls();
  std::map<int, size_t> first_register, first_copy;
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    if (c.name == "cuMemHostRegister_v2" && c.args.rfind("->", 0) != 0) {
      EXPECT_EQ(arg(c, "flags"), "3") << "PORTABLE|DEVICEMAP";
      EXPECT_EQ(arg(c, "bytes"), std::to_string(8 * 4096));
      first_register.emplace(c.pid, i);
    }
    if (c.name == "cuMemcpyHtoDAsync_v2") first_copy.emplace(c.pid, i);
    // Unregistered only after the last copy of its process completed.
    if (c.name == "cuMemHostUnregister") {
      for (size_t j = i + 1; j < calls.size(); ++j)
        EXPECT_FALSE(calls[j].pid == c.pid && calls[j].name == "cuMemcpyHtoDAsync_v2");
    }
  }
  ASSERT_EQ(first_register.size(), 3u);
  ASSERT_EQ(first_copy.size(), 3u);
  for (const auto& kv : first_copy) EXPECT_LT(first_register.at(kv.first), kv.second);
  expect_all_released(calls);
}

TEST(CudaOrdering, PinnedMemoryFlags) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-t", "device_to_host_ce",
                          "-s", "4K", "-n", "2", "-i", "1", "-d", "1"},
                         double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const Call& c : log.calls())
    if (c.name == "cuMemHostAlloc" && c.args.rfind("->", 0) != 0)
      EXPECT_EQ(arg(c, "flags"), "1");  // PORTABLE
  CallLog mapped;
  r = run_tool({"copy", "--backend", "cuda", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s", "4K", "-n",
                "2", "-i", "1", "-d", "2"},
               double_env(mapped));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int n = 0;
  for (const Call& c : mapped.calls())
    if (c.name == "cuMemHostAlloc" && c.args.rfind("->", 0) != 0) {
      EXPECT_EQ(arg(c, "flags"), "3");  // PORTABLE|DEVICEMAP
      ++n;
    }
  EXPECT_EQ(n, 2);
  EXPECT_EQ(count_calls(mapped.calls(), "cuMemHostGetDevicePointer_v2"), 2);
}

TEST(CudaBinding, EntryPointsComeFromCuGetProcAddressAtTheirAbiVersion) {
  CallLog log;
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, double_env(log));
  EXPECT_NE(r.out.find("backend cuda: loaded from " + std::string(DS_CUDA_DOUBLE)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("CUDA driver 12.8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 0: Test Double GPU 0, PCI 0000:18:00.0, NUMA node"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("GPU 3: Test Double GPU 3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batched copies: native cuMemcpyBatchAsync"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry points: bound through cuGetProcAddress_v2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("direct path: BATCH"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("event timing: cuEventElapsedTime_v2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not in this driver: none\n"), std::string::npos) << r.out;
  std::map<std::string, std::string> asked;
  for (const Call& c : log.calls())
    if (c.name == "cuGetProcAddress_v2" && c.args.rfind("->", 0) != 0) {
      asked[arg(c, "symbol")] = arg(c, "version");
      EXPECT_EQ(arg(c, "flags"), "1") << "legacy-stream variants";
    }
  EXPECT_EQ(asked["cuMemAlloc"], "3020");
  EXPECT_EQ(asked["cuMemHostRegister"], "6050");
  EXPECT_EQ(asked["cuDevicePrimaryCtxRelease"], "11000");
  EXPECT_EQ(asked["cuMemcpyBatchAsync"], "12080");  // the ABI with failIdx
  EXPECT_EQ(asked["cuCtxSynchronize"], "2000");     // not 13.0's cuCtxSynchronize_v2(ctx)
  EXPECT_EQ(asked["cuCtxEnablePeerAccess"], "4000");
  EXPECT_EQ(asked["cuDeviceCanAccessPeer"], "4000");
  EXPECT_EQ(asked["cuGraphInstantiateWithFlags"], "11040");

  CallLog old;
  r = run_tool({"--backend", "cuda", "doctor"}, double_env(old, false));
  EXPECT_NE(r.out.find("batched copies: CUDA graph of memcpy nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("event timing: cuEventElapsedTime\n"), std::string::npos) << r.out;
}

TEST(CudaBinding, FallsBackToExportedNamesWithoutCuGetProcAddress) {
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_NO_PROC_ADDRESS"] = "1";
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, env);
  EXPECT_NE(r.out.find("(some by dlsym)"), std::string::npos) << r.out;
  r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_batch_ce", "-t", "host_to_device_sm", "-s",
                "4K", "-n", "4", "-i", "2", "-d", "1", "--validate"},
               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] host_to_device_batch_ce PASS"), std::string::npos);
  EXPECT_NE(r.out.find("[validation] host_to_device_sm PASS"), std::string::npos);
}

namespace {

// The lookup's answer for `symbol` in the log: "rc=... pfn=... status=...".
std::string lookup_answer(const std::vector<Call>& calls, const std::string& symbol) {
  for (const Call& c : calls)
    if ((c.name == "cuGetProcAddress_v2" || c.name == "cuGetProcAddress") && c.args.rfind("->", 0) == 0 &&
        arg(c, "symbol") == symbol)
      return "rc=" + arg(c, "rc") + " pfn=" + arg(c, "pfn") + " status=" + arg(c, "status");
  return "";
}

// Runs the batch cases with --validate and checks they went through CUDA graphs.
void expect_graph_path(const std::map<std::string, std::string>& env, const CallLog& log) {
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_batch_ce", "-t",
                          "all_host_to_all_device_ffts_direct_h2d", "-s", "4K", "-n", "4", "-f", "2", "-i", "2",
                          "-d", "2", "--validate"},
                         env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] host_to_device_batch_ce PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[validation] all_host_to_all_device_ffts_direct_h2d PASS"), std::string::npos) << r.out;
  EXPECT_GT(count_calls(log.calls(), "cuGraphLaunch"), 0);
  EXPECT_EQ(count_calls(log.calls(), "cuMemcpyBatchAsync"), 0);
}

}  // namespace

// A 12.4 driver asked for cuMemcpyBatchAsync at 12.8 (newer than itself):
// CUDA_ERROR_INVALID_VALUE, so the driver has no such ABI: the graph path.
TEST(CudaBinding, NewerVersionThanTheDriverIsInvalidValueAndMeansAbsent) {
  CallLog log;
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, double_env(log, false));
  EXPECT_EQ(lookup_answer(log.calls(), "cuMemcpyBatchAsync"),
            "rc=CUDA_ERROR_INVALID_VALUE pfn=NULL status=SYMBOL_NOT_FOUND");
  EXPECT_EQ(lookup_answer(log.calls(), "cuGraphInstantiateWithFlags"), "rc=CUDA_SUCCESS pfn=set status=SUCCESS");
  EXPECT_NE(r.out.find("batched copies: CUDA graph of memcpy nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry points: bound through cuGetProcAddress_v2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuMemcpyBatchAsync (cuGetProcAddress_v2 says CUDA_ERROR_INVALID_VALUE: CUDA 12.8 is "
                       "newer than the driver)"),
            std::string::npos)
      << "absent, and not looked up by name: " << r.out;
  CallLog run;
  expect_graph_path(double_env(run, false), run);
}

// A 12.8 driver whose lookup does not offer cuMemcpyBatchAsync (CUDA_SUCCESS,
// NULL) although its library exports the symbol: the driver says it lacks that
// ABI, so the exported name is not taken either.
TEST(CudaBinding, SymbolTheLookupDoesNotOfferIsNotTakenByName) {
  void* h = dlopen(DS_CUDA_DOUBLE, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(h, nullptr);
  EXPECT_NE(dlsym(h, "cuMemcpyBatchAsync"), nullptr) << "dlsym would have found it";
  dlclose(h);
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_LACK"] = "cuMemcpyBatchAsync";
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, env);
  EXPECT_EQ(lookup_answer(log.calls(), "cuMemcpyBatchAsync"), "rc=CUDA_SUCCESS pfn=NULL status=SYMBOL_NOT_FOUND");
  EXPECT_NE(r.out.find("CUDA driver 12.8"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batched copies: CUDA graph of memcpy nodes"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("entry points: bound through cuGetProcAddress_v2\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not in this driver: cuMemcpyBatchAsync (cuGetProcAddress_v2 says CUDA_SUCCESS with no "
                       "function, SYMBOL_NOT_FOUND)\n"),
            std::string::npos)
      << r.out;
  CallLog run;
  env["DS_CUDA_DOUBLE_LOG"] = run.path();
  expect_graph_path(env, run);
}

// A driver whose lookup predates the CUDA_ERROR_INVALID_VALUE rule (CUDA 11.3
// here) answers a request newer than itself with its newest variant, an older
// ABI: not the cuEventElapsedTime_v2 we asked for.
TEST(CudaBinding, AnOlderDriversAnswerForANewerAbiIsNotTaken) {
  CallLog log;
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, old_driver_env(log));
  bool asked = false;
  for (const Call& c : log.calls())
    if (c.name == "cuGetProcAddress" && c.args.rfind("->", 0) == 0 && arg(c, "symbol") == "cuEventElapsedTime" &&
        arg(c, "version") == "12080") {
      asked = true;
      EXPECT_EQ(arg(c, "rc"), "CUDA_SUCCESS") << c.args;
      EXPECT_EQ(arg(c, "pfn"), "set") << c.args;
    }
  EXPECT_TRUE(asked);
  EXPECT_NE(r.out.find("entry points: bound through cuGetProcAddress\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("event timing: cuEventElapsedTime\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cuEventElapsedTime_v2 (cuGetProcAddress gave an older variant: the driver is CUDA 11.3)"),
            std::string::npos)
      << r.out;
}

TEST(CudaErrors, InjectedFailureNamesTheCall) {
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_FAIL"] = "cuMemcpyHtoDAsync_v2:3";
  RunResult r = run_tool(
      {"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "4K", "-n", "8", "-i", "3", "-d", "1"}, env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cuMemcpyHtoDAsync_v2(4096 bytes) failed: CUDA_ERROR_UNKNOWN"), std::string::npos)
      << r.err;
  expect_all_released(log.calls());
}

TEST(CudaErrors, InjectedFailureInAForkChild) {
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_FAIL"] = "cuMemHostRegister_v2:1";
  const auto before = our_shm_entries();
  // The direct path needs the registration (a CE case copies from unregistered memory
  // instead, with a note: case_runner.cc).
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "one_share_host_to_all_device_ffts_direct_h2d",
                          "-s", "4K", "-n", "8", "-i", "3", "-d", "3"},
                         env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("device "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cuMemHostRegister_v2(32768 bytes) failed: CUDA_ERROR_UNKNOWN"), std::string::npos)
      << r.err;
  EXPECT_EQ(our_shm_entries(), before);
  expect_all_released(log.calls());
}

// The driver pins cuMemHostAlloc'd and registered memory itself: a refusal
// names the call and its error, and where a memory-lock limit is raised.
TEST(CudaErrors, PinningFailuresNameTheCallAndTheMemoryLockLimit) {
  struct Want {
    const char* fail;
    const char* name;
    const char* call;
  };
  const Want cases[] = {
      {"cuMemHostAlloc:1", "host_to_device_ce", "cuMemHostAlloc(32768 bytes) failed: CUDA_ERROR_UNKNOWN"},
      {"cuMemHostRegister_v2:1", "all_odirect_host_to_all_device_ffts_direct_h2d",  // needs the registration
       "cuMemHostRegister_v2(32768 bytes) failed: CUDA_ERROR_UNKNOWN"},
  };
  for (const Want& w : cases) {
    SCOPED_TRACE(w.fail);
    CallLog log;
    auto env = double_env(log);
    env["DS_CUDA_DOUBLE_FAIL"] = w.fail;
    RunResult r = run_tool({"copy", "--backend", "cuda", "-t", w.name, "-s", "4K", "-n", "8", "-i", "2", "-d", "2"},
                           env);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(w.call), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the driver page-locks this memory itself"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("`ulimit -l unlimited`"), std::string::npos) << r.err;
    expect_all_released(log.calls());
  }
}

TEST(CudaErrors, MoreDevicesThanTheDriverSeesIsAUsageError) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "all_host_to_all_device_ce", "-s", "4K", "-n",
                          "2", "-i", "1", "-d", "5"},
                         double_env(log));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-d got 5"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sees 4 devices"), std::string::npos) << r.err;
}

TEST(CudaErrors, MemcpyCasesAreNotOffered) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_anonymous_memcpy"}, double_env(log));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("cannot run on cuda"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("`dev-sandbox copy --list` shows the"), std::string::npos) << r.err;
  // The list is what cuda can run, one case a line.
  r = run_tool({"copy", "--backend", "cuda", "--list"}, double_env(log));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  host_to_device_sm "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("memcpy "), r.out.find("memcpy from")) << "no CPU memcpy case on cuda: " << r.out;
}

TEST(CudaErrors, NoDriverSaysHowToPointAtOne) {
  void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (h) {
    dlclose(h);
    GTEST_SKIP() << "this machine has libcuda.so.1";
  }
  RunResult r =
      run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"},
               {{"DEV_SANDBOX_CUDA_LIB", ""}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("libcuda.so.1 could not be loaded"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("DEV_SANDBOX_CUDA_LIB=/path/to/libcuda.so.1"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
}

TEST(CudaAuto, AutoPicksCudaWhenTheDriverLoads) {
  CallLog log;
  auto env = double_env(log);
  env["DEV_SANDBOX_BACKEND"] = "";
  env["DEV_SANDBOX_ACL_LIB"] = "/nonexistent/libascendcl.so";
  RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1", "-d", "1"}, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cuda::host::0"), std::string::npos) << r.out;
  // Said, with what auto passed over; no sim caveat.
  EXPECT_EQ(r.err.substr(0, r.err.find('\n')), "dev-sandbox: backend cuda (auto: no ascend runtime found)");
}

namespace {

// A scratch directory of stand-in tools (ldconfig, nvidia-smi), removed afterwards.
class FakeTools {
 public:
  FakeTools() {
    char buf[] = "/tmp/ds-gpu-check-XXXXXX";
    dir_ = mkdtemp(buf) ? buf : "";
  }
  ~FakeTools() {
    if (!dir_.empty()) {
      const std::string cmd = "rm -rf '" + dir_ + "'";
      if (std::system(cmd.c_str()) != 0) {
      }
    }
  }
  const std::string& dir() const { return dir_; }
  void add(const std::string& name, const std::string& script) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "#!/bin/sh\n" << script;
    chmod(path.c_str(), 0755);
  }

 private:
  std::string dir_;
};

struct CheckResult {
  int exit_code = -1;
  std::string out;
};

// bench/gpu-check ARGS under `env` (a prefix for env(1): "-u X Y=Z ..."), stdout
// and stderr together.
CheckResult gpu_check(const std::string& env, const std::string& args) {
  const std::string cmd = "env " + env + " bash " + DS_GPU_CHECK + " " + args + " 2>&1";
  CheckResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (fgets(buf, sizeof buf, p)) r.out += buf;
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

// gpu-check on this test build's binaries: never builds or reconfigures anything.
const std::string kTestBuild = std::string("--no-build --detect-only --build-dir ") + DS_BINARY_DIR;

}  // namespace

TEST(CudaGpuCheck, NoDriverLibrarySkipsWithoutBuilding) {
  FakeTools tools;
  tools.add("ldconfig", "printf '3 libs found in cache\\n\\tlibc.so.6 (libc6,x86-64) => /lib/libc.so.6\\n'\n");
  const std::string never = tools.dir() + "/never-built";
  CheckResult r = gpu_check("-u DEV_SANDBOX_CUDA_LIB -u LD_LIBRARY_PATH PATH=" + tools.dir() +
                                ":$PATH GPU_CHECK_LIB_PATHS=/nonexistent/libcuda.so.1",
                            "--build-dir " + never);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: no NVIDIA GPU (no libcuda.so.1: not in DEV_SANDBOX_CUDA_LIB, LD_LIBRARY_PATH, "
                       "ldconfig -p or the usual paths)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("== build"), std::string::npos) << "nothing built: " << r.out;
  EXPECT_NE(access(never.c_str(), F_OK), 0) << "no build directory made";
}

// `ldconfig -p | grep -q` under pipefail: grep exits at the first line, ldconfig
// dies of SIGPIPE writing the rest, and the pipeline "fails" although it found
// the library. A stand-in nvidia-smi lists a GPU, so a script that asks it first
// gets as far as the ldconfig check.
TEST(CudaGpuCheck, FindsTheLibraryAtTheTopOfALongLdconfigListing) {
  FakeTools tools;
  tools.add("ldconfig",
            "printf '\\tlibcuda.so.1 (libc6,x86-64) => /fake/lib/libcuda.so.1\\n'\n"
            "seq 200000 | sed 's|.*|\\tlibother&.so (libc6,x86-64) => /usr/lib/libother&.so|'\n");
  tools.add("nvidia-smi", "echo 'GPU 0: Stand-in GPU (UUID: GPU-0)'\n");
  CheckResult r = gpu_check("-u DEV_SANDBOX_CUDA_LIB -u LD_LIBRARY_PATH PATH=" + tools.dir() +
                                ":$PATH GPU_CHECK_LIB_PATHS=/nonexistent/libcuda.so.1",
                            kTestBuild);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("driver library: /fake/lib/libcuda.so.1 (ldconfig -p)"), std::string::npos) << r.out;
  // What follows is our probe of the real loader path: a GPU or a reason.
  EXPECT_NE(r.out.find("== detect: dev-sandbox --backend cuda doctor"), std::string::npos) << r.out;
}

// Containers without the driver's utility capability have no working
// nvidia-smi: the GPU is found by dev-sandbox's own cuda probe (here: the test
// double, and an nvidia-smi on PATH that fails as it does there).
TEST(CudaGpuCheck, DetectsTheGpuThroughOurProbeWithoutNvidiaSmi) {
  FakeTools tools;
  tools.add("nvidia-smi", "echo 'nvidia-smi: not usable here' >&2\nexit 127\n");
  CheckResult r = gpu_check(std::string("PATH=") + tools.dir() + ":$PATH DEV_SANDBOX_CUDA_LIB=" + DS_CUDA_DOUBLE +
                                " DS_CUDA_DOUBLE_DEVICES=2",
                            kTestBuild);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("skipped"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::string("driver library: ") + DS_CUDA_DOUBLE + " (DEV_SANDBOX_CUDA_LIB)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("NVIDIA GPU found: 2 device(s), through dev-sandbox's cuda probe"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("gpu-check: detected (--detect-only)"), std::string::npos) << r.out;
}

TEST(CudaGpuCheck, ZeroDevicesSkipsNamingTheReason) {
  CheckResult r =
      gpu_check(std::string("DEV_SANDBOX_CUDA_LIB=") + DS_CUDA_DOUBLE + " DS_CUDA_DOUBLE_DEVICES=0", kTestBuild);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: no NVIDIA GPU (dev-sandbox's cuda probe sees 0 devices: loaded from " +
                       std::string(DS_CUDA_DOUBLE)),
            std::string::npos)
      << r.out;
  // A driver that does not load is named by the probe too.
  r = gpu_check(std::string("DEV_SANDBOX_CUDA_LIB=") + DS_CUDA_DOUBLE + " DS_CUDA_DOUBLE_FAIL=cuInit:1", kTestBuild);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("skipped: no NVIDIA GPU (dev-sandbox's cuda probe: cuInit(0) failed: "
                       "CUDA_ERROR_UNKNOWN"),
            std::string::npos)
      << r.out;
}

TEST(CudaGpuCheck, OptionsAreChecked) {
  CheckResult r = gpu_check("", "--rounds 6");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("--rounds takes 1 to 5 (got '6')"), std::string::npos) << r.out;
  r = gpu_check("", "--frobnicate");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("unknown option '--frobnicate'"), std::string::npos) << r.out;
  FakeTools empty;
  r = gpu_check(std::string("DEV_SANDBOX_CUDA_LIB=") + DS_CUDA_DOUBLE, "--no-build --build-dir " + empty.dir());
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("gpu-check: FAILED: --no-build: there is no " + empty.dir() + "/dev-sandbox"),
            std::string::npos)
      << r.out;
}

// The whole plan without a GPU: --dry-run detects through the double (device 0
// on node 0 of a recorded two-socket sysfs tree), then every part says what it
// would run and nothing runs. Both sides of the bench sit on GPU 0's node under
// the same placement (a numactl that refuses, so taskset with the node's CPUs
// this process may use); the gate runs, load, ulimit -l 64 and the seccomp
// launcher (or why not) are in the plan; the budgets add up to 5 minutes.
TEST(CudaGpuCheck, DryRunPlansEveryPartWithBothBenchSidesOnGpu0sNode) {
  ASSERT_EQ(std::system((std::string("bash -n ") + DS_GPU_CHECK).c_str()), 0) << "bash -n " << DS_GPU_CHECK;
  FakeTools tools;
  tools.add("numactl", "exit 1\n");
  tools.add("taskset", "exit 0\n");
  CheckResult r = gpu_check(std::string("PATH=") + tools.dir() + ":$PATH DEV_SANDBOX_CUDA_LIB=" + DS_CUDA_DOUBLE +
                                " DS_CUDA_DOUBLE_DEVICES=2 DS_SYSFS_ROOT=" + DS_SYSFS_DATA + "/two_sockets",
                            std::string("--dry-run --no-build --build-dir ") + DS_BINARY_DIR);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("gpu-check: dry run: nothing measured (budgets add up to 300 s)"), std::string::npos) << r.out;
  for (const char* part : {"== detect: the NVIDIA driver library", "== detect: dev-sandbox --backend cuda doctor",
                           "== place:", "== types:", "== cases:", "== gate:", "== load:", "== memlock:",
                           "== seccomp:", "== bench: host_to_device_ce at 512 MiB", "== bench: per-block submit"})
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  EXPECT_NE(r.out.find("GPU 0 (0000:18:00.0) on NUMA node 0 (sysfs numa_node of 0000:18:00.0)"), std::string::npos)
      << r.out;
  // Both sides of each comparison under one placement: "would run: taskset -c <cpus> <binary> ...".
  std::istringstream lines(r.out);
  std::string line, ours_prefix, bare_prefix;
  int bench_lines = 0;
  while (std::getline(lines, line)) {
    const size_t ds = line.find(std::string(DS_BINARY_DIR) + "/dev-sandbox --backend cuda copy -t host_to_device_ce -s ");
    const size_t bare = line.find(std::string(DS_BINARY_DIR) + "/cuda_bare_htod ");
    if (line.find("would run: taskset -c ") == std::string::npos) continue;
    if (ds != std::string::npos) ours_prefix = line.substr(0, ds), ++bench_lines;
    if (bare != std::string::npos) bare_prefix = line.substr(0, bare), ++bench_lines;
  }
  EXPECT_EQ(bench_lines, 4) << r.out;
  EXPECT_FALSE(ours_prefix.empty()) << r.out;
  EXPECT_EQ(ours_prefix, bare_prefix) << "ours and the bare loop placed differently";
  EXPECT_NE(r.out.find("--stream-start-gate on --format json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("env CUDA_DEVICE_MAX_CONNECTIONS=8 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("-t anonymous_to_device_ce -s 64K -n 16 -i 5 --validate --stream-start-gate on"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(r.out.find("--backend cuda load --create-workspace --workspace ") != std::string::npos ||
              r.out.find("skipped: no directory that does O_DIRECT") != std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("after ulimit -l 64"), std::string::npos) << r.out;
  const std::string seccomp = std::string(DS_BINARY_DIR) + "/tests/ds-docker-seccomp";
  if (access(seccomp.c_str(), X_OK) == 0)
    EXPECT_NE(r.out.find("would run: " + seccomp + " -- "), std::string::npos) << r.out;
  else
    EXPECT_NE(r.out.find("skipped: ds-docker-seccomp not built"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("   PASS"), std::string::npos) << "a dry run measured something: " << r.out;
  // The O_DIRECT probe's directory is gone again.
  const std::string leftovers = "ls -d " + std::string(DS_BINARY_DIR) + "/gpu-check-load.* 2>/dev/null";
  EXPECT_NE(std::system(leftovers.c_str()), 0) << "left a gpu-check-load.* directory in " << DS_BINARY_DIR;
}

TEST(CudaFork, InProcessAndForkCasesInOneInvocation) {
  // The tool's own process never initialises CUDA, so a fork case after an
  // in-process one still starts clean (the double refuses cuInit in a child of
  // an initialised process).
  CallLog log;
  RunResult r = run_tool(
      {"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-t", "all_host_to_all_device_ce_multi_stream",
       "-t", "one_host_to_all_device_ce", "-s", "4K", "-n", "4", "-i", "2", "-d", "2", "--validate"},
      double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] all_host_to_all_device_ce_multi_stream PASS"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[validation] one_host_to_all_device_ce PASS"), std::string::npos) << r.out;
  // probe + one isolated child per in-process case + one child per device of the fork case
  EXPECT_EQ(init_pids(log.calls()).size(), 1u + 1u + 2u + 1u);
  expect_all_released(log.calls());
}

TEST(CudaKernel, CommittedPtxDeclaresTheKernelWeLaunch) {
  // What builds without nvcc embed: it must still be the kernel cuLaunchKernel is given.
  std::ifstream in(DS_COPY_KERNEL_PTX);
  std::stringstream text;
  text << in.rdbuf();
  const std::string ptx = text.str();
  EXPECT_NE(ptx.find("\n.version 6.3\n"), std::string::npos) << "an ISA older drivers load";
  EXPECT_NE(ptx.find("\n.target sm_75\n"), std::string::npos);
  // ds_copy_kernel(dst, src, bytes, head, width): kernel_copy passes these five
  // 64-bit values, and the driver reads as many as the PTX declares.
  EXPECT_NE(ptx.find(".visible .entry ds_copy_kernel(\n\t.param .u64 ds_copy_kernel_param_0,\n"
                     "\t.param .u64 ds_copy_kernel_param_1,\n\t.param .u64 ds_copy_kernel_param_2,\n"
                     "\t.param .u64 ds_copy_kernel_param_3,\n\t.param .u64 ds_copy_kernel_param_4\n)"),
            std::string::npos)
      << ptx;
  // ds_gate_kernel(flag, value): the start gate's hold passes a 64-bit address and a 32-bit round.
  EXPECT_NE(ptx.find(".visible .entry ds_gate_kernel(\n\t.param .u64 ds_gate_kernel_param_0,\n"
                     "\t.param .u32 ds_gate_kernel_param_1\n)"),
            std::string::npos)
      << ptx;
  // ds_gather_kernel(table, count): a 64-bit device address and a 64-bit descriptor count.
  EXPECT_NE(ptx.find(".visible .entry ds_gather_kernel(\n\t.param .u64 ds_gather_kernel_param_0,\n"
                     "\t.param .u64 ds_gather_kernel_param_1\n)"),
            std::string::npos)
      << ptx;
  size_t entries = 0;
  for (size_t at = ptx.find(".entry"); at != std::string::npos; at = ptx.find(".entry", at + 1)) ++entries;
  EXPECT_EQ(entries, 3u) << "the copy kernel, the gather kernel and the gate kernel";
}

// Block sizes that leave most blocks off 16-byte alignment (-s 1000: every other
// block starts at 8 mod 16; -s 4097: block i at i mod 16), with an odd block
// count: the kernel still copies them 16 bytes at a time after a short head.
TEST(CudaKernel, OddBlockSizesUse16ByteUnitsAfterAHead) {
  for (const char* name : {"host_to_device_sm", "device_to_host_sm"})
    for (const char* size : {"1000", "4097"}) {
      SCOPED_TRACE(std::string(name) + " -s " + size);
      CallLog log;
      RunResult r = run_tool({"copy", "--backend", "cuda", "-t", name, "-s", size, "-n", "7", "-i", "2",
                              "--warmup", "1", "-d", "1", "--validate"},
                             double_env(log));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find(std::string("[validation] ") + name + " PASS"), std::string::npos) << r.out;
      int launches = 0;
      std::set<std::string> heads;
      for (const Call& c : log.calls())
        if (c.name == "cuLaunchKernel" && !arg(c, "width").empty()) {
          ++launches;
          EXPECT_EQ(arg(c, "width"), "16") << c.args;
          EXPECT_EQ(arg(c, "bytes"), size) << c.args;
          // The head brings dst and src to 16-byte alignment together.
          const unsigned long long dst = std::stoull(arg(c, "dst"), nullptr, 16);
          const unsigned long long head = std::stoull(arg(c, "head"));
          EXPECT_EQ((dst + head) % 16, 0u) << c.args;
          EXPECT_LT(head, 16u);
          heads.insert(arg(c, "head"));
        }
      EXPECT_EQ(launches, 7 * (1 + 2)) << "n x (warmup + iterations)";
      EXPECT_GT(heads.size(), 1u) << "some blocks did start off alignment";
    }
}

// ---- The SM gather kernel (ds_gather_kernel): every chunk from one table in one launch ----

namespace {

struct GatherDescriptor {
  unsigned long long dst, src, bytes, head, width;
};
// One ds_gather_kernel launch as the double logged it: its table and the
// descriptors it read there, in order.
struct GatherLaunch {
  std::string table;
  unsigned long long count = 0;
  std::vector<GatherDescriptor> descs;
};

std::vector<GatherLaunch> gather_launches(const std::vector<Call>& calls) {
  std::vector<GatherLaunch> out;
  for (const Call& c : calls) {
    if (c.name != "cuLaunchKernel") continue;
    if (c.args.rfind("gather table=", 0) == 0) {
      out.push_back({arg(c, "table"), std::stoull(arg(c, "count")), {}});
    } else if (c.args.rfind("gather[", 0) == 0 && !out.empty()) {
      out.back().descs.push_back({std::stoull(arg(c, "dst"), nullptr, 16), std::stoull(arg(c, "src"), nullptr, 16),
                                  std::stoull(arg(c, "bytes")), std::stoull(arg(c, "head")),
                                  std::stoull(arg(c, "width"))});
    }
  }
  return out;
}

// A gather case through the double with --validate each (every iteration's
// chunks checked where they landed): one launch per iteration, warm-up included,
// each from the one table uploaded at setup, holding every chunk: `sizes` (in
// any order), each at the same offset from the first chunk in the destination as
// in the source, none overlapping another, planned to 16-byte units after a
// head where both ends allow it.
void expect_gather_moves_every_chunk(const std::string& name, const std::vector<std::string>& shape,
                                     std::multiset<unsigned long long> sizes, const std::string& gather_line) {
  SCOPED_TRACE(name);
  CallLog log;
  std::vector<std::string> args = {"copy", "--backend", "cuda", "-t", name, "-i", "3", "--warmup", "2",
                                   "--validate", "each"};
  args.insert(args.end(), shape.begin(), shape.end());
  RunResult r = run_tool(args, double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] " + name + " PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" SM-GATHER "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(gather_line), std::string::npos) << r.out;
  const auto calls = log.calls();
  const auto launches = gather_launches(calls);
  ASSERT_EQ(launches.size(), 5u) << "one launch per iteration: 2 warm-up + 3";
  int launched = 0;
  for (const Call& c : calls) launched += c.name == "cuLaunchKernel" && c.args.rfind("grid=", 0) == 0;
  EXPECT_EQ(launched, 5) << "no other kernel launch";
  const size_t n = sizes.size();
  for (const GatherLaunch& l : launches) {
    EXPECT_EQ(l.table, launches[0].table) << "every launch reads the table made at setup";
    EXPECT_EQ(l.count, n);
    ASSERT_EQ(l.descs.size(), n);
    std::multiset<unsigned long long> got;
    std::vector<std::pair<unsigned long long, unsigned long long>> spans;
    for (const GatherDescriptor& d : l.descs) {
      got.insert(d.bytes);
      EXPECT_EQ(d.dst - l.descs[0].dst, d.src - l.descs[0].src) << "a chunk lands at its own offset";
      spans.push_back({d.dst, d.dst + d.bytes});
      EXPECT_LT(d.head, d.width);
      EXPECT_EQ((d.dst + d.head) % d.width, 0u);
      EXPECT_EQ((d.src + d.head) % d.width, 0u);
      if ((d.dst - d.src) % 16 == 0) EXPECT_EQ(d.width, 16u) << "equal misalignment: 16-byte units";
    }
    EXPECT_EQ(got, sizes) << "every chunk, each of its size";
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i) EXPECT_LE(spans[i - 1].second, spans[i].first) << "chunks overlap";
  }
  // The table: one allocation of 40 bytes a chunk, uploaded once, before the first launch.
  size_t uploads = 0, first_launch = calls.size(), upload_at = calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    if (c.name == "cuLaunchKernel" && c.args.rfind("gather table=", 0) == 0 && first_launch == calls.size())
      first_launch = i;
    if (c.name == "cuMemcpyHtoD_v2" && arg(c, "dst") == launches[0].table) {
      ++uploads;
      upload_at = i;
      EXPECT_EQ(arg(c, "bytes"), std::to_string(40 * n)) << c.args;
    }
  }
  EXPECT_EQ(uploads, 1u) << "the table is uploaded once, at setup";
  EXPECT_LT(upload_at, first_launch);
  expect_all_released(calls);  // the table's device memory too
}

}  // namespace

// Odd chunk sizes (-s 4097: chunk i at i mod 16) and many fragments per block.
TEST(CudaGather, OneLaunchMovesEveryChunkOfOddSize) {
  for (const char* name : {"host_to_device_sm_gather", "device_to_host_sm_gather"})
    expect_gather_moves_every_chunk(name, {"-s", "4097", "-n", "3", "-f", "7"},
                                    std::multiset<unsigned long long>(
                                        {4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097,
                                         4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097, 4097}),
                                    "  Gather: 21 chunks of 4097 B (mean) per iteration in 1 launch of "
                                    "ds_gather_kernel, from a 840 B descriptor table built at setup\n");
}

// A block layout of unequal fragments (64 KiB, 4097, 1000 and 3 bytes): each
// block's four chunks, every one of its own size.
TEST(CudaGather, OneLaunchMovesEveryChunkOfABlockLayout) {
  std::multiset<unsigned long long> sizes;
  for (int b = 0; b < 5; ++b)
    for (unsigned long long s : {65536ULL, 4097ULL, 1000ULL, 3ULL}) sizes.insert(s);
  for (const char* name : {"host_to_device_sm_gather", "device_to_host_sm_gather"})
    expect_gather_moves_every_chunk(name, {"--block-layout", "64K,4097,1000,3", "-n", "5"}, sizes,
                                    "  Gather: 20 chunks of 17659 B (mean) per iteration in 1 launch of "
                                    "ds_gather_kernel, from a 800 B descriptor table built at setup\n");
}

// JSON: the copies per iteration and their mean size, beside the launches.
TEST(CudaGather, JsonSaysCopiesPerIterationAndMeanChunkSize) {
  CallLog log;
  const JsonRun r = run_json({"copy", "--backend", "cuda", "-t", "host_to_device_sm_gather", "--block-layout",
                              "64K,4097,1000,3", "-n", "5", "-i", "2", "--validate"},
                             double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = r.result("host_to_device_sm_gather");
  EXPECT_EQ(res.value("method", ""), "SM-GATHER");
  EXPECT_EQ(res.value("copies_per_iteration", 0), 20);
  EXPECT_EQ(res.value("validated", false), true);
  ASSERT_TRUE(res.contains("gather")) << res.dump(2);
  const json g = res["gather"];
  EXPECT_EQ(g.value("kernel", ""), "ds_gather_kernel");
  EXPECT_EQ(g.value("chunks_per_iteration", 0), 20);
  EXPECT_DOUBLE_EQ(g.value("mean_chunk_bytes", 0.0), (65536.0 + 4097 + 1000 + 3) / 4);
  EXPECT_EQ(g.value("launches_per_iteration", 0), 1);
  EXPECT_EQ(g.value("descriptor_table_bytes", 0), 800);
}

namespace {

// Index of the first call named `name` in process `pid` (calls.size() if none);
// `result`: its "-> ..." line instead of the call.
size_t first_call(const std::vector<Call>& calls, int pid, const std::string& name, bool result = false) {
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].pid == pid && calls[i].name == name && (calls[i].args.rfind("->", 0) == 0) == result)
      return i;
  return calls.size();
}
size_t last_call(const std::vector<Call>& calls, int pid, const std::string& name) {
  size_t at = calls.size();
  for (size_t i = 0; i < calls.size(); ++i)
    if (calls[i].pid == pid && calls[i].name == name) at = i;
  return at;
}
std::set<int> pids_calling(const std::vector<Call>& calls, const std::string& name) {
  std::set<int> s;
  for (const Call& c : calls)
    if (c.name == name) s.insert(c.pid);
  return s;
}

}  // namespace

TEST(CudaPeer, EachOtherWorkerEnablesPeerAccessToDevice0) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "one_device_to_all_device_ce", "-s", "4K", "-n",
                          "4", "-i", "2", "-d", "3", "--validate"},
                         double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] one_device_to_all_device_ce PASS"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("note"), std::string::npos) << r.err;
  const auto calls = log.calls();
  std::multiset<std::string> enabled;
  for (const Call& c : calls)
    if (c.name == "cuCtxEnablePeerAccess" && c.args.rfind("-> enabled", 0) == 0)
      enabled.insert(arg(c, "dev") + "->" + arg(c, "peer_dev"));
  EXPECT_EQ(enabled, (std::multiset<std::string>{"1->0", "2->0"})) << "workers 1 and 2, not worker 0";
  // Before any copy of that worker: every enable precedes the first timed copy.
  const auto pids = pids_calling(calls, "cuCtxEnablePeerAccess");
  ASSERT_EQ(pids.size(), 1u);
  const int pid = *pids.begin();
  EXPECT_LT(last_call(calls, pid, "cuCtxEnablePeerAccess"), first_call(calls, pid, "cuMemcpyDtoDAsync_v2"));
  expect_all_released(calls);  // the peers' primary contexts retained for it are released
}

TEST(CudaPeer, WithoutPeerAccessTheRunSaysSoAndStillValidates) {
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_NO_PEER"] = "1";
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "one_device_to_all_device_ce", "-s", "4K", "-n",
                          "4", "-i", "2", "-d", "2", "--validate"},
                         env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] one_device_to_all_device_ce PASS"), std::string::npos) << r.out;
  // The runner's note names the worker and carries our reason.
  EXPECT_NE(r.err.find("note: device 1 "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("(cuDeviceCanAccessPeer(1, 0) says no)"), std::string::npos) << r.err;
  EXPECT_EQ(count_calls(log.calls(), "cuCtxEnablePeerAccess"), 0);
  expect_all_released(log.calls());
}

TEST(CudaSetup, KernelModuleIsLoadedBeforeTheFirstTimedIteration) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_sm", "-s", "4K", "-n", "4", "-i",
                          "2", "--warmup", "0", "-d", "1", "--validate"},
                         double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto calls = log.calls();
  const auto pids = pids_calling(calls, "cuLaunchKernel");
  ASSERT_EQ(pids.size(), 1u);
  const int pid = *pids.begin();
  const size_t first_record = first_call(calls, pid, "cuEventRecord");
  ASSERT_LT(first_record, calls.size());
  EXPECT_LT(first_call(calls, pid, "cuModuleLoadData"), first_record);
  EXPECT_LT(first_call(calls, pid, "cuModuleGetFunction"), first_record);
  EXPECT_EQ(count_calls(calls, "cuModuleLoadData", pid), 1);
}

TEST(CudaSetup, GraphsAreInstantiatedBeforeTheFirstTimedIteration) {
  for (const char* name : {"host_to_device_batch_ce", "all_host_to_all_device_ffts_direct_h2d"}) {
    SCOPED_TRACE(name);
    CallLog log;
    RunResult r = run_tool({"copy", "--backend", "cuda", "-t", name, "-s", "4K", "-n", "4", "-f", "2", "-i",
                            "2", "--warmup", "0", "-d", "2", "--validate"},
                           double_env(log, false));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
    const auto calls = log.calls();
    const auto pids = pids_calling(calls, "cuGraphLaunch");
    ASSERT_FALSE(pids.empty());
    for (int pid : pids) {
      const size_t first_record = first_call(calls, pid, "cuEventRecord");
      ASSERT_LT(first_record, calls.size());
      EXPECT_LT(last_call(calls, pid, "cuGraphInstantiateWithFlags"), first_record) << "pid " << pid;
      EXPECT_LT(last_call(calls, pid, "cuGraphAddMemcpyNode"), first_record) << "pid " << pid;
    }
    expect_all_released(calls);
  }
}

TEST(CudaSync, FillsOfDeviceMemoryAreSynchronisedBeforeTheFirstIteration) {
  // The double leaves cuMemcpyHtoD from pageable memory on the legacy stream until
  // something synchronises; without cuCtxSynchronize these cases read stale
  // device memory and fail validation.
  for (const char* name : {"device_to_host_ce", "device_to_device_ce", "device_to_host_sm"}) {
    SCOPED_TRACE(name);
    CallLog log;
    RunResult r = run_tool({"copy", "--backend", "cuda", "-t", name, "-s", "4K", "-n", "4", "-i", "2",
                            "--warmup", "0", "-d", "1", "--validate"},
                           double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("[validation] ") + name + " PASS"), std::string::npos) << r.out;
    const auto calls = log.calls();
    const auto pids = pids_calling(calls, "cuMemcpyHtoD_v2");
    ASSERT_EQ(pids.size(), 1u);
    const int pid = *pids.begin();
    EXPECT_GT(count_calls(calls, "legacy-stream", pid), 0) << "the double deferred the fill";
    const size_t last_fill = last_call(calls, pid, "cuMemcpyHtoD_v2");
    const size_t first_record = first_call(calls, pid, "cuEventRecord");
    size_t sync = calls.size();
    for (size_t i = last_fill; i < calls.size() && sync == calls.size(); ++i)
      if (calls[i].pid == pid && calls[i].name == "cuCtxSynchronize") sync = i;
    EXPECT_LT(sync, first_record) << "cuCtxSynchronize after the last fill, before timing";
  }
}

TEST(CudaTiming, ElapsedTimeIsTheV2EntryPointWhereTheDriverHasIt) {
  CallLog log;
  RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i",
                          "2", "-d", "1"},
                         double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(count_calls(log.calls(), "cuEventElapsedTime_v2"), 0);
  EXPECT_EQ(count_calls(log.calls(), "cuEventElapsedTime"), 0);
  CallLog old;
  r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "2", "-d",
                "1"},
               double_env(old, false));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(count_calls(old.calls(), "cuEventElapsedTime"), 0) << "a 12.4 driver: the original";
  EXPECT_EQ(count_calls(old.calls(), "cuEventElapsedTime_v2"), 0);
  // By exported name too (no cuGetProcAddress): the _v2 symbol where exported.
  CallLog by_name;
  auto env = double_env(by_name);
  env["DS_CUDA_DOUBLE_NO_PROC_ADDRESS"] = "1";
  r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "2", "-d",
                "1"},
               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(count_calls(by_name.calls(), "cuEventElapsedTime_v2"), 0);
}

TEST(CudaOldDriver, WithoutGraphsOnlyTheBatchPathIsMissing) {
  CallLog log;
  RunResult r = run_tool({"--backend", "cuda", "doctor"}, old_driver_env(log));
  EXPECT_NE(r.out.find("CUDA driver 11.3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batched copies: none: this driver has neither cuMemcpyBatchAsync"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("direct path: not available: this driver has neither"), std::string::npos) << r.out;

  CallLog ce;
  r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-t", "host_to_device_sm", "-s", "4K",
                "-n", "4", "-i", "2", "-d", "1", "--validate"},
               old_driver_env(ce));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] host_to_device_ce PASS"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[validation] host_to_device_sm PASS"), std::string::npos) << r.out;
  expect_all_released(ce.calls());

  CallLog batch;
  r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_batch_ce", "-s", "4K", "-n", "4", "-i", "2",
                "-d", "1"},
               old_driver_env(batch));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("batched copies: this driver has neither cuMemcpyBatchAsync (CUDA 12.8+) nor CUDA "
                       "graphs with cuGraphInstantiateWithFlags (CUDA 11.4+)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count_calls(batch.calls(), "cuEventRecord"), 0) << "refused at setup, before any iteration";
  expect_all_released(batch.calls());

  CallLog direct;
  r = run_tool({"copy", "--backend", "cuda", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s", "4K", "-n",
                "4", "-i", "2", "-d", "2"},
               old_driver_env(direct));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("all_host_to_all_device_ffts_direct_h2d: not supported on this machine: this driver "
                       "has neither"),
            std::string::npos)
      << r.err;
}

// --numa auto through the double: device 0's cuDeviceGetPCIBusId (0000:18:00.0)
// found on node 0 in a recorded two-socket sysfs tree; the double's other devices
// are not in that tree: unplaced, said once. Node 0's recorded CPUs include this
// machine's CPU 0, so the pinning succeeds here.
TEST(CudaNuma, DeviceNodeComesFromItsPciAddressInSysfs) {
  CallLog log;
  auto env = double_env(log);
  env["DS_SYSFS_ROOT"] = std::string(DS_SYSFS_DATA) + "/two_sockets";
  const RunResult r = run_tool({"--backend", "cuda", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                "64K", "-n", "4", "-i", "2", "-d", "2", "--validate", "--format", "json"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto workers = nlohmann::json::parse(r.out)["results"][0]["numa"]["workers"];
  ASSERT_EQ(workers.size(), 2u);
  EXPECT_EQ(workers[0]["node"], 0);
  EXPECT_EQ(workers[0]["cpus_pinned"], true);
  EXPECT_EQ(workers[0]["placed"], true);  // the double's pinned pages, allocated from the placed thread
  EXPECT_TRUE(workers[1]["node"].is_null());
  EXPECT_NE(r.err.find("reports no node for devices 1-3"), std::string::npos) << r.err;
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find("NUMA: card 0 -> node 0 -> CPUs 0-15,32-47"), std::string::npos) << d.out;
}

// The duplex case through the double: both directions on every card, each on its
// own streams, every destination byte of both checked after every pass.
TEST(CudaDuplex, BothDirectionsRunAndValidate) {
  const std::pair<const char*, const char*> cases[] = {
      {"all_host_to_all_device_duplex_ce_multi_stream", "cuda::host::all"},
      {"all_odirect_host_to_all_device_duplex_ce_multi_stream", "cuda::odirect_mmap::all"},
      {"one_share_host_to_all_device_duplex_ce_multi_stream", "cuda::shm::0"}};
  for (const auto& c : cases) {
    const char* name = c.first;
    SCOPED_TRACE(name);
    const auto before = our_shm_entries();
    CallLog log;
    JsonRun r = run_json({"--backend", "cuda", "copy", "-t", name, "-s", "64K", "-n", "4", "-i", "2", "-d", "2",
                          "--duplex-ratio", "0.5", "--validate", "each"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["from"], c.second);
    EXPECT_EQ(res["to"], "cuda::device::all");
    EXPECT_EQ(res["method"], "CE-MS-FORK");
    EXPECT_EQ(res["duplex"]["h2d"]["bytes"], 2u * 65536u * 4u);
    EXPECT_EQ(res["duplex"]["d2h"]["bytes"], 2u * 32768u * 4u);
    EXPECT_GT(res["duplex"]["d2h"]["alone_gib_s"].get<double>(), 0);
    EXPECT_GT(res["duplex"]["h2d"]["gib_s"].get<double>(), 0);
    EXPECT_EQ(our_shm_entries(), before);
    // Both host sides are the case's kind: pinned allocations (an H2D source and a
    // D2H destination per card), else registered O_DIRECT-style or shared memory.
    size_t allocated = 0, registered = 0;
    for (const Call& k : log.calls()) {
      if (k.args.rfind("->", 0) == 0) continue;  // the call's result line
      allocated += k.name == "cuMemHostAlloc";
      registered += k.name == "cuMemHostRegister_v2";
    }
    const bool pinned = std::string(name).rfind("all_host", 0) == 0;
    EXPECT_EQ(allocated, pinned ? 4u : 0u);
    EXPECT_EQ(registered, pinned ? 0u : 4u);
    expect_all_released(log.calls());
  }
}

// Which direction each stream of each process copies, from the call log.
std::map<StreamKey, std::string> duplex_stream_directions(const std::vector<Call>& calls) {
  std::map<StreamKey, std::string> dir;
  for (const Call& c : calls) {
    if (c.name == "cuMemcpyHtoDAsync_v2") dir[{c.pid, arg(c, "stream")}] = "H2D";
    if (c.name == "cuMemcpyDtoHAsync_v2") dir[{c.pid, arg(c, "stream")}] = "D2H";
  }
  return dir;
}

const char* const kDuplexCase = "all_host_to_all_device_duplex_ce_multi_stream";

// Copies that take 100 ms per 64 KiB (D2H's 128 KiB blocks at --duplex-ratio 2: 200
// ms): each direction's rows are its own streams' events (the trace's spans of
// them), the directions overlap, the Duplex line's arithmetic (duplex_checks.h).
TEST(CudaDuplex, EachDirectionIsItsOwnStreamsAndTheyOverlap) {
  CallLog log;
  TempFile trace("ds-cuda-trace");
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_COPY_NS_PER_KIB"] = "1562500";
  env["DS_CUDA_DOUBLE_TRACE"] = trace.path();
  JsonRun r = run_json({"--backend", "cuda", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2", "--streams", "2",
                        "-d", "2", "--warmup", "1", "-i", "2", "--duplex-ratio", "2"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto dir = duplex_stream_directions(log.calls());
  ASSERT_EQ(dir.size(), 8u);  // 2 cards x 2 directions x 2 streams
  expect_own_streams_and_overlap(r.result(kDuplexCase), trace.path(), dir, 1, 2);
  expect_all_released(log.calls());
}

// Every stream's first three copy tasks 300 ms slower (the warm-up round and the
// measured together pass): the alone figures are the alone passes'.
TEST(CudaDuplex, AloneFiguresAreTheAlonePasses) {
  CallLog log;
  auto env = double_env(log);
  env["DS_CUDA_DOUBLE_COLD"] = "3:300000000";
  JsonRun r = run_json({"--backend", "cuda", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2", "--streams", "2",
                        "-d", "2", "--warmup", "1", "-i", "1"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_alone_is_the_alone_pass(r.result(kDuplexCase));
}

// A failing call names its direction, also a call both directions make (the
// events' time): exit 1, everything released.
TEST(CudaDuplex, AFailingDirectionIsNamed) {
  struct Want {
    const char* fail;
    const char* text;
  };
  const Want cases[] = {
      {"cuMemcpyDtoHAsync_v2:1",
       ": D2H copy: cuMemcpyDtoHAsync_v2(65536 bytes) failed: CUDA_ERROR_UNKNOWN (unknown error (injected by the test "
       "double))\n"},
      {"cuMemcpyHtoDAsync_v2:2",
       ": H2D copy: cuMemcpyHtoDAsync_v2(65536 bytes) failed: CUDA_ERROR_UNKNOWN (unknown error (injected by the test "
       "double))\n"},
      {"cuEventElapsedTime_v2:1",
       "dev-sandbox: error: device 0: H2D copy: cuEventElapsedTime_v2 failed: CUDA_ERROR_UNKNOWN (unknown error "
       "(injected by the test double))\n"},
  };
  for (const Want& w : cases) {
    SCOPED_TRACE(w.fail);
    CallLog log;
    auto env = double_env(log);
    env["DS_CUDA_DOUBLE_FAIL"] = w.fail;
    const bool one = std::string(w.fail).rfind("cuEvent", 0) == 0;
    const RunResult r = run_tool({"--backend", "cuda", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2", "--streams",
                                  "2", "-d", one ? "1" : "2", "-i", "2"},
                                 env);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(w.text), std::string::npos) << r.err;
    expect_all_released(log.calls());
  }
}

// ---- copy --block-table: every method at the table's slots ----

// Each method's copies leave the host slot and land at the device slot the tables
// name (the reverse for D2H): the per-chunk copies, the batched call's copies and
// the gather kernel's descriptor table, as the double's call log shows them, with
// the host side contiguous and paged; every chunk validated at its slot.
TEST(CudaBlockTable, EveryMethodCopiesAtTheTablesSlots) {
  TempFile dev("ds-dev-table"), host("ds-host-table");
  { std::ofstream(dev.path()) << "6\n2\n0\n"; }
  { std::ofstream(host.path()) << "3\n0\n1\n"; }
  struct Way {
    const char* name;
    const char* call;  // the log line of one copy: its dst= and src=
    bool h2d;
  };
  const Way ways[] = {
      {"host_to_device_ce", "cuMemcpyHtoDAsync_v2", true},
      {"host_to_device_ce_multi_stream", "cuMemcpyHtoDAsync_v2", true},
      {"host_to_device_batch_ce", "cuMemcpyBatchAsync[]", true},
      {"host_to_device_sm_gather", "cuLaunchKernel", true},
      {"device_to_host_ce", "cuMemcpyDtoHAsync_v2", false},
      {"device_to_host_batch_ce", "cuMemcpyBatchAsync[]", false},
      {"device_to_host_sm_gather", "cuLaunchKernel", false},
  };
  for (const Way& w : ways)
    for (bool paged_host : {false, true}) {
      SCOPED_TRACE(std::string(w.name) + (paged_host ? " with --host-block-table" : ""));
      CallLog log;
      std::vector<std::string> args = {"copy", "--backend", "cuda", "-t", w.name, "-s", "64K", "-n", "3", "-d", "1",
                                       "-i", "1", "--warmup", "0", "--validate", "each", "--block-table", dev.path(),
                                       "--pool-blocks", "7"};
      if (paged_host) args.insert(args.end(), {"--host-block-table", host.path(), "--host-pool-blocks", "4"});
      JsonRun r = run_json(args, double_env(log));
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const json res = r.result(w.name);
      EXPECT_EQ(res["validated"], true);
      EXPECT_EQ(res["copies_per_iteration"], 3);
      EXPECT_EQ(res["block_table"]["device"]["pool_blocks"], 7);
      EXPECT_EQ(res["block_table"]["device"]["kind"], "file");
      const std::vector<uint64_t> d = {6, 2, 0};
      const std::vector<uint64_t> h = paged_host ? std::vector<uint64_t>{3, 0, 1} : std::vector<uint64_t>{0, 1, 2};
      std::map<uint64_t, uint64_t> want;  // source slot -> destination slot
      for (size_t i = 0; i < 3; ++i) want[w.h2d ? h[i] : d[i]] = w.h2d ? d[i] : h[i];
      EXPECT_EQ(dstest::table::slot_pairs(log.text(), w.call, 65536, 3), want);
      expect_all_released(log.calls());
    }
}

// The device side is the pool: a pool that does not fit the card is refused up front,
// before anything is allocated, naming --pool-blocks.
TEST(CudaBlockTable, APoolThatDoesNotFitIsRefusedUpFront) {
  CallLog log;
  const RunResult r = run_tool({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "64M", "-n", "16", "-d",
                                "1", "-i", "1", "--block-table", "random", "--pool-blocks", "400"},
                               double_env(log));
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: error: not enough device memory: host_to_device_ce needs 25.00 GiB on device 0 "
                       "but 16.00 GiB is free; lower -s, -n or --pool-blocks\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(count_calls(log.calls(), "cuMemAlloc_v2"), 0);
}
