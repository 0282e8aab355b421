// The ascend backend end to end, through the AscendCL and runtime test doubles
// (tests/doubles/ascend): every case with --validate, the seed's commands, the call
// order and cleanup the doubles log, injected failures, and machines without FFTS+.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "backends/ascend/acl_api.h"
#include "backends/ascend/acl_library.h"
#include "backends/ascend/ascend_backend.h"
#include "cli_harness.h"
#include "disk_fixtures.h"
#include "duplex_checks.h"
#include "json_checks.h"
#include "table_checks.h"
#include "memory/buffer.h"

using namespace dstest;

namespace {

// Host context buffers the runtime sends through its PCIe BAR pool (pool.hpp).
#if defined(__aarch64__)
constexpr int kBarCopyBytes = 4096;
#else
constexpr int kBarCopyBytes = 1024;
#endif

// On an x86 host every direct-path device first proves SDMA from host memory with one
// FFTS+ task of one 4 KiB context (prove_sdma_from_host): its first launch.
#if defined(__x86_64__) || defined(__i386__)
constexpr size_t kProofLaunches = 1;
#else
constexpr size_t kProofLaunches = 0;
#endif

struct Call {
  std::string name, args;
};

// Where the contexts of a task beyond the runtime's PCIe BAR copy go is timed at setup:
// this many launches with them in host memory and as many in device memory, after the
// proof (ascend_backend.cc kDescTrials).
constexpr size_t kDescTimingLaunches = 2 * 3;

// One process's FFTS+ launches of the measured tasks: without the `setup` ones first
// (the x86 proof's, and those that timed where the contexts go).
std::vector<Call> task_launches(const std::vector<Call>& calls, size_t setup = kProofLaunches) {
  std::vector<Call> v;
  for (const auto& c : calls)
    if (c.name == "rtFftsPlusTaskLaunchWithFlag") v.push_back(c);
  v.erase(v.begin(), v.begin() + static_cast<long>(std::min(v.size(), setup)));
  return v;
}
using CallLog = std::map<long, std::vector<Call>>;  // pid -> calls in order

// A fresh log file for one run; removed with the object.
class LogFile : public dstest::TempFile {
 public:
  LogFile() : TempFile("ds-acl-double-log") {}
  CallLog read() const {
    CallLog log;
    std::ifstream in(path());
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      long pid = 0;
      Call c;
      ls >> pid >> c.name;
      std::getline(ls, c.args);
      if (!c.args.empty() && c.args[0] == ' ') c.args.erase(0, 1);
      log[pid].push_back(c);
    }
    return log;
  }
};

std::string arg_of(const std::string& args, const std::string& key) {
  const size_t at = (" " + args).find(" " + key + "=");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 1;
  const size_t end = args.find(' ', start);
  return args.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

size_t count_calls(const std::vector<Call>& calls, const std::string& name) {
  size_t n = 0;
  for (const auto& c : calls) n += c.name == name;
  return n;
}

size_t count_text(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

bool creates_streams(const std::vector<Call>& calls) { return count_calls(calls, "aclrtCreateStream") > 0; }

// One process's calls: aclInit first and once, every resource released, registration
// before the first copy, and aclFinalize last reporting nothing alive.
void expect_clean_process(const std::vector<Call>& calls, long pid) {
  SCOPED_TRACE("pid " + std::to_string(pid));
  ASSERT_FALSE(calls.empty());
  EXPECT_EQ(calls.front().name, "aclInit");
  EXPECT_EQ(count_calls(calls, "aclInit"), 1u);
  std::set<std::string> dev, host, reg, streams, events;
  long device_refs = 0;
  size_t first_copy = calls.size(), first_register = calls.size();
  for (size_t i = 0; i < calls.size(); ++i) {
    const Call& c = calls[i];
    const std::string ptr = arg_of(c.args, "ptr");
    if (c.name == "aclrtMalloc" && !ptr.empty()) EXPECT_TRUE(dev.insert(ptr).second);
    if (c.name == "aclrtFree") EXPECT_EQ(dev.erase(ptr), 1u) << "aclrtFree of " << ptr;
    if (c.name == "aclrtMallocHost" && !ptr.empty()) EXPECT_TRUE(host.insert(ptr).second);
    if (c.name == "aclrtFreeHost") EXPECT_EQ(host.erase(ptr), 1u) << "aclrtFreeHost of " << ptr;
    if ((c.name == "aclrtHostRegister" && !arg_of(c.args, "dev").empty()) ||
        (c.name == "aclrtHostRegisterV2" && arg_of(c.args, "error").empty())) {
      EXPECT_TRUE(reg.insert(ptr).second);
      first_register = std::min(first_register, i);
    }
    if (c.name == "aclrtHostUnregister") EXPECT_EQ(reg.erase(ptr), 1u) << "unregister of " << ptr;
    if (c.name == "aclrtCreateStream") streams.insert(arg_of(c.args, "stream"));
    if (c.name == "aclrtDestroyStream") EXPECT_EQ(streams.erase(arg_of(c.args, "stream")), 1u);
    if (c.name == "aclrtCreateEvent" || c.name == "aclrtCreateEventWithFlag" ||
        c.name == "aclrtCreateEventExWithFlag")
      events.insert(arg_of(c.args, "event"));
    if (c.name == "aclrtDestroyEvent") EXPECT_EQ(events.erase(arg_of(c.args, "event")), 1u);
    if (c.name == "aclrtSetDevice") ++device_refs;
    if (c.name == "aclrtResetDevice") --device_refs;
    if (c.name == "aclrtMemcpyAsync" || c.name == "aclrtMemcpyBatchAsync" ||
        c.name == "rtFftsPlusTaskLaunchWithFlag")
      first_copy = std::min(first_copy, i);
  }
  EXPECT_TRUE(dev.empty()) << dev.size() << " device allocations never freed";
  EXPECT_TRUE(host.empty()) << host.size() << " pinned allocations never freed";
  EXPECT_TRUE(reg.empty()) << reg.size() << " registrations never undone";
  EXPECT_TRUE(streams.empty()) << streams.size() << " streams never destroyed";
  EXPECT_TRUE(events.empty()) << events.size() << " events never destroyed";
  EXPECT_EQ(device_refs, 0) << "aclrtSetDevice and aclrtResetDevice do not pair up";
  if (first_register < calls.size()) EXPECT_LT(first_register, first_copy) << "a copy came before registration";
  EXPECT_EQ(calls.back().name, "aclFinalize");
  EXPECT_EQ(calls.back().args,
            "live_device_allocs=0 live_pinned=0 live_registrations=0 live_streams=0 live_events=0 device_refs=0");
}

std::map<std::string, std::string> double_env(const LogFile& log) {
  return {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
          {"DS_ACL_DOUBLE_LOG", log.path()},
          {"DS_ACL_DOUBLE_DEVICES", "8"}};  // -d defaults to 8 and is checked against it
}

// The row under the header of the block titled `name`.
std::string row_line(const std::string& out, const std::string& name) {
  const size_t t = out.find("[[ " + name + " ]]");
  if (t == std::string::npos) return "";
  const size_t header = out.find('\n', t) + 1;
  const size_t row = out.find('\n', header) + 1;
  return out.substr(row, out.find('\n', row) - row);
}

struct AscendCase {
  const char* name;
  bool fork;     // one process per device
  bool multi;    // uses -d
  const char* from;
  const char* to;
  const char* method;
};

const AscendCase kCases[] = {
    {"host_to_device_ce", false, false, "acl::host::0", "acl::device::0", "CE"},
    // The runtime loops single copies inside aclrtMemcpyBatchAsync where the driver has
    // no batch copy (the double's default): the Method says so.
    {"host_to_device_batch_ce", false, false, "acl::host::0", "acl::device::0", "CE-BATCH-LOOP"},
    {"host_to_device_ce_multi_stream", false, false, "acl::host::0", "acl::device::0", "CE-MS"},
    {"device_to_host_ce", false, false, "acl::device::0", "acl::host::0", "CE"},
    {"device_to_device_ce", false, false, "acl::device::0", "acl::device::0", "CE"},
    {"anonymous_to_device_ce", false, false, "acl::anonymous::0", "acl::device::0", "CE"},
    {"one_host_to_all_device_ce", false, true, "acl::host::0", "acl::device::all", "CE"},
    {"all_host_to_all_device_ce", false, true, "acl::host::all", "acl::device::all", "CE"},
    {"one_device_to_all_device_ce", false, true, "acl::device::0", "acl::device::all", "CE"},
    {"all_host_to_all_device_ce_multi_stream", true, true, "acl::host::all", "acl::device::all", "CE-MS-FORK"},
    {"all_odirect_host_to_all_device_ce_multi_stream", true, true, "acl::odirect_mmap::all", "acl::device::all",
     "CE-MS-FORK"},
    {"one_share_host_to_all_device_ce_multi_stream", true, true, "acl::shm::0", "acl::device::all", "CE-MS-FORK"},
    {"all_host_to_all_device_ffts_direct_h2d", true, true, "acl::host_mapped::all", "acl::device::all",
     "FFTS-SDMA-FORK"},
    {"all_odirect_host_to_all_device_ffts_direct_h2d", true, true, "acl::odirect_mmap::all", "acl::device::all",
     "FFTS-SDMA-FORK"},
    {"one_share_host_to_all_device_ffts_direct_h2d", true, true, "acl::shm::0", "acl::device::all",
     "FFTS-SDMA-FORK"},
    // The D2H mirrors of the multi-card CE cases (the FFTS+ path is H2D only: refused below).
    {"device_to_host_batch_ce", false, false, "acl::device::0", "acl::host::0", "CE-BATCH-LOOP"},
    {"all_device_to_all_host_ce", false, true, "acl::device::all", "acl::host::all", "CE"},
    {"all_device_to_all_host_ce_multi_stream", true, true, "acl::device::all", "acl::host::all", "CE-MS-FORK"},
    {"all_device_to_all_odirect_host_ce_multi_stream", true, true, "acl::device::all", "acl::odirect_mmap::all",
     "CE-MS-FORK"},
    {"all_device_to_one_share_host_ce_multi_stream", true, true, "acl::device::all", "acl::shm::0", "CE-MS-FORK"},
    // The batched call on every card at once, a process per card.
    {"all_host_to_all_device_batch_ce", true, true, "acl::host::all", "acl::device::all", "CE-BATCH-LOOP-FORK"},
    {"all_device_to_all_host_batch_ce", true, true, "acl::device::all", "acl::host::all", "CE-BATCH-LOOP-FORK"},
};

class AscendCaseTest : public ::testing::TestWithParam<AscendCase> {};

void PrintTo(const AscendCase& c, std::ostream* os) { *os << c.name; }

}  // namespace

// --model quick mode through the doubles: DeepSeek-V3.2 (DSA), 128 tokens = 1 block,
// 61 tasks of 128K,16K,32K per card on -d 2, each fragment its own copy, checked.
TEST(AscendQuickMode, ModelSizedRequestRunsAndValidates) {
  for (const char* sdma : {"false", "true"}) {
    SCOPED_TRACE(sdma);
    LogFile log;
    JsonRun r = run_json({"--backend", "ascend", "--model", "DeepSeek-V3.2", "--tp", "2", "--input-len", "128",
                          "--iodirect", "false", "--sdma", sdma, "-i", "2", "--validate"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.doc["results"].size(), 1u) << r.doc.dump();
    const json& res = r.doc["results"][0];
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["devices"], 2);
    EXPECT_EQ(res["block_bytes"], 180224);
    EXPECT_EQ(res["count"], 2 * 61);
    EXPECT_EQ(res["layout"], "128K,16K,32K");
    EXPECT_EQ(res["copies_per_iteration"], 2 * 61 * 3);
    EXPECT_EQ(r.doc["workload"]["architecture"], "DSA");
  }
}

TEST_P(AscendCaseTest, ValidatesThroughTheDoubles) {
  const AscendCase& c = GetParam();
  LogFile log;
  JsonRun r = run_json(
      {"--backend", "ascend", "copy", "-t", c.name, "-s", "4K", "-n", "8", "-i", "3", "-d", "3", "--validate"},
      double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_validated_result(r, c.name, c.from, c.to, c.method, 4096, c.multi ? 3 * 8 : 8);

  const CallLog calls = log.read();
  const int workers = c.multi ? 3 : 1;
  // A probe process, then either the fork workers (the parent never touches AscendCL)
  // or this process itself.
  EXPECT_EQ(calls.size(), c.fork ? static_cast<size_t>(workers) + 1 : 2u);
  size_t with_streams = 0;
  for (const auto& kv : calls) {
    expect_clean_process(kv.second, kv.first);
    with_streams += creates_streams(kv.second);
  }
  EXPECT_EQ(with_streams, c.fork ? static_cast<size_t>(workers) : 1u);
}

INSTANTIATE_TEST_SUITE_P(AllCases, AscendCaseTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<AscendCase>& i) { return std::string(i.param.name); });

// The direct path with -f 0 (every block its own FFTS+ task) and -f 4 (4 SDMA
// contexts per task): Count = d x n x max(1, f).
struct FragCase {
  const char* name;
  int frags;
};

void PrintTo(const FragCase& c, std::ostream* os) { *os << c.name << " -f " << c.frags; }

class AscendFragTest : public ::testing::TestWithParam<FragCase> {};

TEST_P(AscendFragTest, OneFftsTaskPerIoTask) {
  const FragCase& f = GetParam();
  LogFile log;
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", f.name, "-s", "4K", "-n", "8", "-i", "3", "-d", "3",
                        "-f", std::to_string(f.frags), "--validate"},
                       double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = r.result(f.name);
  EXPECT_EQ(res["validated"], true);
  const int per_task = f.frags > 0 ? f.frags : 1;
  EXPECT_EQ(res["method"], "FFTS-SDMA-FORK");
  EXPECT_EQ(res["block_bytes"], 4096);
  EXPECT_EQ(res["count"], 3 * 8 * per_task) << "Count = d x n x max(1, f)";
  // Context descriptors: sent from host memory through the runtime's PCIe BAR copy
  // when they fit it, else where a launch timed faster at setup: in device memory here
  // (the double's host contexts cost a device allocation and blocking copy per launch).
  const bool device_desc = per_task * 128 > kBarCopyBytes;
  size_t workers = 0;
  for (const auto& kv : log.read()) {
    if (!creates_streams(kv.second)) continue;
    ++workers;
    size_t desc_copies = 0;
    for (const auto& c : kv.second)
      if (c.name == "aclrtMemcpy" && arg_of(c.args, "count") == std::to_string(per_task * 128)) ++desc_copies;
    const std::vector<Call> launched =
        task_launches(kv.second, kProofLaunches + (device_desc ? kDescTimingLaunches : 0));
    const size_t launches = launched.size();
    for (const auto& c : launched) {
      EXPECT_EQ(arg_of(c.args, "contexts"), std::to_string(per_task));
      EXPECT_EQ(arg_of(c.args, "ready"), std::to_string(std::min(per_task, 8))) << "8 SDMA lanes";
      EXPECT_EQ(arg_of(c.args, "subtype"), "0x5a");
      EXPECT_EQ(arg_of(c.args, "desc"), device_desc ? "device" : "host");
      if (!device_desc) EXPECT_EQ(arg_of(c.args, "copy"), "bar");
    }
    EXPECT_EQ(launches, (2u + 3u) * 8u) << "warmup 2 + 3 iterations, n = 8 IO tasks each";
    EXPECT_EQ(desc_copies, device_desc ? 8u + 1u : 0u)
        << "device descriptors: one copy per IO task at setup, and the timed launch's";
  }
  EXPECT_EQ(workers, 3u);
}

INSTANTIATE_TEST_SUITE_P(
    Frags, AscendFragTest,
    ::testing::Values(FragCase{"all_host_to_all_device_ffts_direct_h2d", 0},
                      FragCase{"all_host_to_all_device_ffts_direct_h2d", 4},
                      FragCase{"all_odirect_host_to_all_device_ffts_direct_h2d", 0},
                      FragCase{"all_odirect_host_to_all_device_ffts_direct_h2d", 4},
                      FragCase{"one_share_host_to_all_device_ffts_direct_h2d", 0},
                      FragCase{"one_share_host_to_all_device_ffts_direct_h2d", 4},
                      // More fragments than the 8 ready lanes: the successor chains run.
                      FragCase{"all_host_to_all_device_ffts_direct_h2d", 12},
                      FragCase{"all_odirect_host_to_all_device_ffts_direct_h2d", 12},
                      FragCase{"one_share_host_to_all_device_ffts_direct_h2d", 12},
                      // Past the BAR copy on every architecture: device descriptors.
                      FragCase{"all_host_to_all_device_ffts_direct_h2d", 40}),
    [](const ::testing::TestParamInfo<FragCase>& i) {
      return std::string(i.param.name) + "_f" + std::to_string(i.param.frags);
    });

// The seed's two commands (small -i), and the MLA + CE command whose output the seed shows.
TEST(AscendSeed, GqaCeMultiStreamPrintsTheSeedRow) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_DEVICES"] = "8";
  const RunResult r = run_tool({"--backend", "ascend", "--model-type", "gqa", "--iodirect", "false", "--sdma",
                                "false", "-s", "16K", "-n", "512", "-i", "3", "-d", "8"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[[ all_host_to_all_device_ce_multi_stream ]] memcpy from all host to all device with ce "
                       "using multi stream and fork submit\n"),
            std::string::npos)
      << r.out;
  const std::string row = row_line(r.out, "all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(row.rfind("  acl::host::all    acl::device::all  CE-MS-FORK", 0), 0u) << r.out;
  const auto cells = split_ws(row);
  // From, To, Method, Size(KB), Count, Submit and Copy as "a / b / c / d / e", BW.
  ASSERT_EQ(cells.size(), 24u) << row;
  // The user guide's header, its Method column one wider: CE-MS-FORK fills the guide's
  // ten, and a column takes its widest cell plus a space (docs/results.md). The
  // Submit and Copy columns keep the guide's 40 and 44 while their figures fit; a
  // slow machine (a sanitizer build: Submit 106092 / 143973 / ...) widens them.
  auto joined = [&](size_t from) {
    std::string t = cells[from];
    for (size_t i = from + 1; i < from + 9; ++i) t += " " + cells[i];
    return t;
  };
  auto padded = [](const std::string& head, size_t guide, size_t widest) {
    return head + std::string(std::max(guide, widest + 1) - head.size(), ' ');
  };
  EXPECT_NE(r.out.find("  From              To                Method     Size(KB)  Count   " +
                       padded("Submit(us)-(Min/Max/Avg/P50/P90)", 40, joined(5).size()) +
                       padded("Copy(us)-(Min/Max/Avg/P50/P90)", 44, joined(14).size()) + "BW(GB/s)"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(cells[2], "CE-MS-FORK");
  EXPECT_EQ(cells[3], "16");
  EXPECT_EQ(cells[4], "4096") << "8 cards x 512 blocks, as in the seed";
  EXPECT_GT(std::stod(cells[23]), 0.0);

}

TEST(AscendSeed, MlaCeMultiStreamPrintsTheSeedRow) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_DEVICES"] = "8";
  const RunResult r = run_tool({"--backend", "ascend", "--model-type", "mla", "--iodirect", "false", "--sdma",
                                "false", "-s", "16K", "-n", "512", "-i", "3", "-d", "8"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string row = row_line(r.out, "one_share_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(row.rfind("  acl::shm::0       acl::device::all  CE-MS-FORK", 0), 0u) << r.out;
  const auto cells = split_ws(row);
  ASSERT_EQ(cells.size(), 24u) << row;
  EXPECT_EQ(cells[3], "16");
  EXPECT_EQ(cells[4], "4096");
}

TEST(AscendSeed, MlaSdmaRunsTheFftsPath) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_DEVICES"] = "8";
  JsonRun r = run_json({"--backend", "ascend", "--model-type", "mla", "--iodirect", "false", "--sdma", "true", "-s",
                        "16K", "-n", "512", "-i", "3", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = r.result("one_share_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(res["from"], "acl::shm::0");
  EXPECT_EQ(res["to"], "acl::device::all");
  EXPECT_EQ(res.value("method", "").rfind("FFTS-SDMA-FORK", 0), 0u) << res["method"];
  EXPECT_EQ(res["validated"], true);
}

// Failures: exit 1 and the call that failed, with its code and AscendCL's message.
TEST(AscendFailure, InjectedCopyFailureNamesTheCall) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_FAIL"] = "aclrtMemcpyAsync:3";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                "4K", "-n", "8", "-i", "3", "-d", "3"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("aclrtMemcpyAsync"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("507899"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("injected failure"), std::string::npos) << r.err;
  // A worker whose call failed, and the ones stopped because of it, still released
  // everything on the way out. (How many reach their third copy before the others are
  // stopped varies.)
  size_t failed = 0;
  for (const auto& kv : log.read()) {
    for (const auto& c : kv.second) failed += c.args == "FAIL injected";
    expect_clean_process(kv.second, kv.first);
  }
  EXPECT_GE(failed, 1u);
}

TEST(AscendFailure, InjectedFailureInTheMainProcessCleansUp) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_FAIL"] = "aclrtMemcpyAsync:5";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce_multi_stream", "-s", "4K",
                                "-n", "8", "-i", "3"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("aclrtMemcpyAsync (device 0) failed with error 507899"), std::string::npos) << r.err;
  const CallLog calls = log.read();
  EXPECT_EQ(calls.size(), 2u);
  for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
}

TEST(AscendFailure, InjectedFftsLaunchFailureNamesTheCall) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_FAIL"] = "rtFftsPlusTaskLaunchWithFlag:2";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s",
                                "4K", "-n", "8", "-i", "3", "-d", "2", "-f", "4"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("rtFftsPlusTaskLaunchWithFlag"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("4 SDMA contexts"), std::string::npos) << r.err;
}

TEST(AscendFailure, InjectedAclInitFailureStopsSelection) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_FAIL"] = "aclInit:1";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2",
                                "-i", "1"},
                               env);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("aclInit"), std::string::npos) << r.err;
}

TEST(AscendFailure, MisreadContextsFailTheRun) {
  // The runtime double reading the address words 4 bytes off stands for a context
  // encoded at the wrong offsets: the run must fail, not pass validation.
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_SKEW"] = "4";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s",
                                "4K", "-n", "4", "-i", "1", "-d", "2", "--validate"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("FFTS+ task"), std::string::npos) << r.err;
}

TEST(AscendFailure, MissingLibraryIsAClearError) {
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2"},
                               {{"DEV_SANDBOX_ACL_LIB", "/nonexistent/libascendcl.so"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("ascend: AscendCL (libascendcl.so) could not be opened: tried /nonexistent/libascendcl.so ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("/nonexistent/libascendcl.so"), std::string::npos) << r.err;
}

// Machines without FFTS+: a clear refusal, exit 1, no worker started.
void expect_refusal(const std::map<std::string, std::string>& extra, const std::string& reason) {
  LogFile log;
  auto env = double_env(log);
  for (const auto& kv : extra) env[kv.first] = kv.second;
  const RunResult r = run_tool({"--backend", "ascend", "--model-type", "gqa", "--iodirect", "false", "--sdma", "true",
                                "-s", "4K", "-n", "4", "-i", "1", "-d", "2"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("all_host_to_all_device_ffts_direct_h2d: not supported on this machine: " + reason),
            std::string::npos)
      << r.err;
  EXPECT_EQ(log.read().size(), 1u) << "only the probe process touched AscendCL";
}

// The SM gather kernel is cuda's: its cases are refused on ascend in one line
// (exit 2), and --list leaves them out.
TEST(AscendGather, SmGatherCasesAreRefusedInOneLine) {
  LogFile log;
  for (const char* name : {"host_to_device_sm_gather", "device_to_host_sm_gather"}) {
    RunResult r = run_tool({"--backend", "ascend", "copy", "-t", name, "-s", "4097", "-f", "7"}, double_env(log));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    const std::string line = "dev-sandbox: error: case " + std::string(name) +
                             " cannot run on ascend: SM copy kernels need the cuda backend; `dev-sandbox copy "
                             "--list` shows the ";
    EXPECT_EQ(r.err.rfind(line, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  RunResult list = run_tool({"--backend", "ascend", "copy", "--list"}, double_env(log));
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.find("sm_gather"), std::string::npos) << list.out;
}

// The direct path copies host to device only on ascend: its D2H cases are not
// offered, each named with why in one line (exit 2), and --list leaves them out.
TEST(AscendD2H, DirectPathD2hCasesAreRefusedInOneLine) {
  LogFile log;
  for (const char* name : {"all_device_to_all_host_ffts_direct_d2h", "all_device_to_all_odirect_host_ffts_direct_d2h",
                           "all_device_to_one_share_host_ffts_direct_d2h"}) {
    RunResult r = run_tool({"--backend", "ascend", "copy", "-t", name, "-s", "4K", "-n", "8", "-d", "2"},
                           double_env(log));
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    const std::string line = "dev-sandbox: error: case " + std::string(name) +
                             " cannot run on ascend: its FFTS-SDMA direct path copies host to device only here "
                             "(D2H on it is not established: docs/hardware-status.md); the CE cases copy device to "
                             "host; `dev-sandbox copy --list` shows the ";
    EXPECT_EQ(r.err.rfind(line, 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  RunResult list = run_tool({"--backend", "ascend", "copy", "--list"}, double_env(log));
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.find("ffts_direct_d2h"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("  all_device_to_one_share_host_ce_multi_stream "), std::string::npos) << list.out;
}

TEST(AscendNoFfts, SocWithoutFftsIsRefused) {
  expect_refusal({{"DS_ACL_DOUBLE_SOC", "Ascend910A"}}, "SoC Ascend910A has no FFTS+");
  expect_refusal({{"DS_ACL_DOUBLE_SOC", "Ascend310P3"}}, "SoC Ascend310P3 has no FFTS+");
}

TEST(AscendNoFfts, RuntimeWithoutTheLaunchSymbolIsRefused) {
  expect_refusal({{"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE_NOFFTS}},
                 std::string(DS_RT_DOUBLE_NOFFTS) + " does not export rtFftsPlusTaskLaunchWithFlag");
}

TEST(AscendNoFfts, MissingRuntimeLibraryIsRefusedButCeStillRuns) {
  expect_refusal({{"DEV_SANDBOX_ACL_RT_LIB", "/nonexistent/libruntime.so"}},
                 "the Ascend runtime library /nonexistent/libruntime.so could not be opened");
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_ACL_RT_LIB"] = "/nonexistent/libruntime.so";
  env["DS_ACL_DOUBLE_SOC"] = "Ascend310P3";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                "4K", "-n", "4", "-i", "1", "-d", "2", "--validate"},
                               env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// The batch copy API where the library exports it, else the documented fallback. A
// batch the runtime takes it copies one block at a time itself (a driver without the
// batch feature, the double's default): Method CE-BATCH-LOOP and a note say so.
TEST(AscendBatch, UsesTheBatchApiOrSaysItFellBack) {
  {
    LogFile log;
    JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n", "8", "-i",
                          "2", "--validate"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t batches = 0, singles = 0, loops = 0;
    for (const auto& kv : log.read()) {
      batches += count_calls(kv.second, "aclrtMemcpyBatchAsync");
      singles += count_calls(kv.second, "aclrtMemcpyAsync");
      for (const auto& c : kv.second)
        loops += c.name == "aclrtMemcpyBatchAsync.loop" && c.args == "copies=8 attribute_lookups=16 synchronous=0";
    }
    EXPECT_EQ(batches, 4u) << "warmup 2 + 2 iterations, one batch each";
    EXPECT_EQ(loops, 4u) << "each looped by the runtime";
    EXPECT_EQ(singles, 0u);
    const json res = r.result("host_to_device_batch_ce");
    EXPECT_EQ(res["method"], "CE-BATCH-LOOP");
    const std::string note = "aclrtMemcpyBatchAsync took each batch, which the CANN runtime does only where the "
                             "driver has no batch copy (FEATURE_MEMCPY_BATCH_ASYNC): it issued one copy per block "
                             "itself, two pointer-attribute look-ups each";
    EXPECT_EQ(res["notes"], json::array({note})) << r.out;
    EXPECT_EQ(count_text(r.err, "dev-sandbox: note: host_to_device_batch_ce: " + note + " (Method CE-BATCH-LOOP)"),
              1u)
        << r.err;
  }
  {
    LogFile log;
    auto env = double_env(log);
    env["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_NOBATCH;
    env["DEV_SANDBOX_ACL_RT_LIB"] = DS_RT_DOUBLE;
    JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n", "8",
                          "-i", "2", "--validate"},
                         env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t singles = 0;
    for (const auto& kv : log.read()) singles += count_calls(kv.second, "aclrtMemcpyAsync");
    EXPECT_EQ(singles, 4u * 8u);
    // The Method names what ran: one copy per block.
    EXPECT_EQ(r.result("host_to_device_batch_ce")["method"], "CE") << r.out;
    EXPECT_NE(r.err.find("dev-sandbox: note: host_to_device_batch_ce: this CANN's libascendcl.so does not export "
                         "aclrtMemcpyBatchAsync, so every block was its own copy (Method CE)"),
              std::string::npos)
        << r.err;
    const RunResult d = run_tool({"doctor"}, env);
    EXPECT_NE(d.out.find("batch copy (CE-BATCH): fallback"), std::string::npos) << d.out;
  }
}

TEST(AscendDoctor, ReportsVersionSocMemoryAndFfts) {
  LogFile log;
  const RunResult r = run_tool({"doctor"}, double_env(log));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("backend ascend: loaded from ") + DS_ACL_DOUBLE +
                       ", version CANN 8.0.0-test-double (AscendCL API 1.15.0), 8 devices"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("npu 3: Ascend910B3, HBM 64.00 GiB free of 64.00 GiB"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SoC: Ascend910B3"), std::string::npos);
  EXPECT_NE(r.out.find("FFTS+: available (rtFftsPlusTaskLaunchWithFlag, SoC Ascend910B3)"), std::string::npos);
  EXPECT_NE(r.out.find("batch copy (CE-BATCH): aclrtMemcpyBatchAsync"), std::string::npos);
  EXPECT_NE(r.out.find("direct path: FFTS-SDMA"), std::string::npos);
  for (const auto& kv : log.read()) expect_clean_process(kv.second, kv.first);
}

TEST(AscendSelect, AutoPrefersAscendAndFallsBackWithoutIt) {
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_BACKEND"] = "";
  const RunResult a = run_tool({"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"}, env);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_NE(a.out.find("acl::host::0"), std::string::npos) << a.out;
  const RunResult b = run_tool({"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"},
                               {{"DEV_SANDBOX_ACL_LIB", "/nonexistent/libascendcl.so"}});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out.find("acl::"), std::string::npos) << b.out;
}

// ---- Findings of the review against the CANN docs ----

size_t count_args(const CallLog& log, const std::string& name, const std::string& args) {
  size_t n = 0;
  for (const auto& kv : log)
    for (const auto& c : kv.second) n += c.name == name && c.args == args;
  return n;
}

size_t count_all(const CallLog& log, const std::string& name) {
  size_t n = 0;
  for (const auto& kv : log) n += count_calls(kv.second, name);
  return n;
}


// What an earlier version said, unmeasured, about memory registered without V2.
const char* kPageableNote = "CE copies from it are pageable";

// Finding 1: odirect and shm memory is registered page-locked and mapped
// (aclrtHostRegisterV2 MAPPED | PINNED, then aclrtHostGetDevicePointer), so the CE
// copies from it are asynchronous.
TEST(AscendRegistration, OdirectAndShmArePinnedAndMappedWithV2) {
  for (const char* name : {"all_odirect_host_to_all_device_ce_multi_stream",
                           "one_share_host_to_all_device_ce_multi_stream"}) {
    SCOPED_TRACE(name);
    LogFile log;
    const RunResult r =
        run_tool({"--backend", "ascend", "copy", "-t", name, "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                 double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err.find(kPageableNote), std::string::npos) << r.err;
    const CallLog calls = log.read();
    size_t v2 = 0;
    for (const auto& kv : calls) {
      for (const auto& c : kv.second) {
        if (c.name != "aclrtHostRegisterV2") continue;
        ++v2;
        EXPECT_EQ(arg_of(c.args, "flags"), "0x10000002") << "ACL_HOST_REG_MAPPED | ACL_HOST_REG_PINNED";
      }
      expect_clean_process(kv.second, kv.first);
    }
    EXPECT_EQ(v2, 2u) << "one registration per worker";
    EXPECT_EQ(count_all(calls, "aclrtHostGetDevicePointer"), 2u);
    EXPECT_EQ(count_all(calls, "aclrtHostRegister"), 0u);
    EXPECT_GT(count_args(calls, "aclrtMemcpyAsync.mode", "pageable=0"), 0u);
    EXPECT_EQ(count_args(calls, "aclrtMemcpyAsync.mode", "pageable=1"), 0u) << "every CE copy is from locked memory";
  }
}

// The direct path reads the address aclrtHostGetDevicePointer gave.
TEST(AscendRegistration, DirectPathUsesTheV2DeviceAddress) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d",
                                "-s", "4K", "-n", "4", "-i", "1", "-d", "2", "--validate"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] all_odirect_host_to_all_device_ffts_direct_h2d PASS"), std::string::npos);
  EXPECT_EQ(count_all(log.read(), "aclrtHostGetDevicePointer"), 2u);
}

// Without aclrtHostRegisterV2: aclrtHostRegister (maps only). How the runtime's CE copies
// treat such memory was never measured, so neither stderr nor doctor claims it.
TEST(AscendRegistration, WithoutV2RegistersWithV1AndClaimsNothingAboutTheCopies) {
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_NOREGV2;
  env["DEV_SANDBOX_ACL_RT_LIB"] = DS_RT_DOUBLE;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_odirect_host_to_all_device_ce_multi_stream",
                                "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find(kPageableNote), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("pageable"), std::string::npos) << r.err;
  const CallLog calls = log.read();
  EXPECT_EQ(count_all(calls, "aclrtHostRegisterV2"), 0u);
  size_t registers = 0;
  for (const auto& kv : calls) {
    for (const auto& c : kv.second)
      if (c.name == "aclrtHostRegister") {
        ++registers;
        EXPECT_EQ(arg_of(c.args, "type"), "0");
      }
    expect_clean_process(kv.second, kv.first);
  }
  EXPECT_EQ(registers, 2u);
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find("host registration (odirect, shm): aclrtHostRegister (mapped; this CANN has no "
                       "aclrtHostRegisterV2/aclrtHostGetDevicePointer, so nothing asks the runtime to page-lock it)"),
            std::string::npos)
      << d.out;
  EXPECT_EQ(d.out.find("pageable"), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find("asynchronous"), std::string::npos) << d.out;
}

TEST(AscendRegistration, DoctorNamesTheV2Registration) {
  LogFile log;
  const RunResult d = run_tool({"doctor"}, double_env(log));
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_NE(d.out.find("host registration (odirect, shm): aclrtHostRegisterV2(MAPPED | PINNED) + "
                       "aclrtHostGetDevicePointer: mapped, and page-locked by the runtime"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("peer access (device to device): aclrtDeviceCanAccessPeer + aclrtDeviceEnablePeerAccess"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("multi-stream timing: events joined onto one timing stream (aclrtStreamWaitEvent)"),
            std::string::npos)
      << d.out;
}

// Finding 2: each device reading device 0's memory enables its access to device 0
// (the current device enables the peer it reads); the double refuses copies between
// devices without it.
TEST(AscendPeer, OneDeviceToAllDeviceEnablesPeerAccessOnEachReader) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "one_device_to_all_device_ce", "-s", "4K", "-n",
                                "4", "-i", "2", "-d", "3", "--validate"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] one_device_to_all_device_ce PASS"), std::string::npos);
  const CallLog calls = log.read();
  EXPECT_EQ(count_args(calls, "aclrtDeviceCanAccessPeer", "device=1 peer=0"), 1u);
  EXPECT_EQ(count_args(calls, "aclrtDeviceCanAccessPeer", "device=2 peer=0"), 1u);
  EXPECT_EQ(count_args(calls, "aclrtDeviceEnablePeerAccess", "device=1 peer=0 flags=0"), 1u);
  EXPECT_EQ(count_args(calls, "aclrtDeviceEnablePeerAccess", "device=2 peer=0 flags=0"), 1u);
  EXPECT_EQ(count_all(calls, "aclrtDeviceEnablePeerAccess"), 2u) << "device 0 reads its own memory";
  for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
}

TEST(AscendPeer, WithoutPeerAccessTheCopyBetweenDevicesFails) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_NO_PEER"] = "1";
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "one_device_to_all_device_ce", "-s", "4K", "-n",
                                "4", "-i", "1", "-d", "2"},
                               env);
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.err.find("device 1 has no peer access to device 0 (aclrtDeviceCanAccessPeer(1, 0) says the devices "
                       "cannot exchange data)"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("aclrtMemcpyAsync (device 1) failed"), std::string::npos) << r.err;
  EXPECT_EQ(count_all(log.read(), "aclrtDeviceEnablePeerAccess"), 0u);
}

// Finding 3: with several streams each record is joined onto one timing stream, so
// every aclrtEventElapsedTime compares two events of one stream (the double refuses
// events of different streams).
TEST(AscendTiming, MultiStreamEventsAreComparedOnOneTimingStream) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce_multi_stream", "-s", "4K",
                                "-n", "8", "-i", "3", "--streams", "3", "--validate"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CallLog calls = log.read();
  EXPECT_EQ(count_all(calls, "aclrtCreateStream"), 3u + 1u) << "3 copy streams and the timing stream";
  EXPECT_EQ(count_all(calls, "aclrtStreamWaitEvent"), (2u + 3u) * 3u * 2u)
      << "warmup 2 + 3 iterations, a start and an end event on each of 3 streams";
  size_t sync_events = 0, twins = 0;
  for (const auto& kv : calls)
    for (const auto& c : kv.second) {
      if (c.name != "aclrtCreateEventExWithFlag") continue;  // reusable events, where exported
      const std::string flag = arg_of(c.args, "flag");
      sync_events += flag == "0x9";  // ACL_EVENT_TIME_LINE | ACL_EVENT_SYNC
      twins += flag == "0x8";        // ACL_EVENT_TIME_LINE, on the timing stream
    }
  EXPECT_EQ(sync_events, 6u);
  EXPECT_EQ(twins, 6u);
  for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
}

TEST(AscendTiming, OneStreamNeedsNoTimingStream) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "4", "-i",
                                "2"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(count_all(log.read(), "aclrtStreamWaitEvent"), 0u);
  EXPECT_EQ(count_all(log.read(), "aclrtCreateStream"), 1u);
}

// Finding 4: the batch API is only for host to device or device to host; a device to
// device batch is one aclrtMemcpyAsync per block. In process, straight on the backend.
TEST(AscendBatch, DeviceToDeviceBatchFallsBackToSingleCopies) {
  LogFile log;
  setenv("DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE, 1);
  setenv("DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE, 1);
  setenv("DS_ACL_DOUBLE_LOG", log.path().c_str(), 1);
  setenv("DS_ACL_DOUBLE_DEVICES", "2", 1);
  {
    auto backend = ds::make_ascend_backend();
    backend->init_process();
    const ds::BackendProbe probe = backend->probe();
    bool fact = false;
    for (const auto& f : probe.facts)
      fact |= f.first == "batch copy (CE-BATCH)" &&
              f.second.find("host to device and device to host only") != std::string::npos;
    EXPECT_TRUE(fact);
    auto dev = backend->open_device(0);
    constexpr size_t kBlock = 4096, kBlocks = 4;
    auto a = dev->alloc_device(kBlock * kBlocks);
    auto b = dev->alloc_device(kBlock * kBlocks);
    auto host = dev->alloc_pinned(kBlock * kBlocks, false);
    auto* h = static_cast<unsigned char*>(host->host_ptr());
    for (size_t i = 0; i < kBlock * kBlocks; ++i) h[i] = static_cast<unsigned char>(i * 7 + 1);
    auto stream = dev->create_stream();
    std::vector<ds::CopyDesc> up, across, down;
    for (size_t i = 0; i < kBlocks; ++i) {
      char* ha = static_cast<char*>(host->host_ptr()) + i * kBlock;
      char* da = static_cast<char*>(a->device_ptr()) + i * kBlock;
      char* db = static_cast<char*>(b->device_ptr()) + i * kBlock;
      up.push_back({da, ha, kBlock});
      across.push_back({db, da, kBlock});
      down.push_back({ha, db, kBlock});
    }
    dev->copy_batch(up.data(), kBlocks, ds::CopyDir::kH2D, *stream);
    dev->synchronize(*stream);
    std::vector<unsigned char> want(h, h + kBlock * kBlocks);
    std::memset(h, 0, kBlock * kBlocks);
    dev->copy_batch(across.data(), kBlocks, ds::CopyDir::kD2D, *stream);
    dev->copy_batch(down.data(), kBlocks, ds::CopyDir::kD2H, *stream);
    dev->synchronize(*stream);
    EXPECT_EQ(std::memcmp(h, want.data(), want.size()), 0) << "the bytes went up, across and back down";
  }
  unsetenv("DS_ACL_DOUBLE_LOG");
  const CallLog calls = log.read();
  EXPECT_EQ(count_all(calls, "aclrtMemcpyBatchAsync"), 2u) << "H2D and D2H as batches";
  EXPECT_EQ(count_all(calls, "aclrtMemcpyAsync"), 4u) << "D2D one copy per block";
}

// ---- Hardware readiness (issue 10): what the real runtime refuses, the doubles refuse ----

namespace {

// Every registration the double accepted: 4 KiB-aligned address and length.
void expect_aligned_registrations(const CallLog& calls, size_t want) {
  size_t n = 0;
  for (const auto& kv : calls)
    for (const auto& c : kv.second) {
      if ((c.name != "aclrtHostRegister" && c.name != "aclrtHostRegisterV2") || !arg_of(c.args, "error").empty())
        continue;
      ++n;
      const unsigned long long ptr = std::stoull(arg_of(c.args, "ptr"), nullptr, 16);
      const unsigned long long size = std::stoull(arg_of(c.args, "size"));
      EXPECT_EQ(ptr % 4096, 0u) << c.args;
      EXPECT_EQ(size % 4096, 0u) << c.args;
    }
  EXPECT_EQ(n, want);
}

std::string run_dir() {
  char tmpl[] = "/tmp/ds-acl-test-XXXXXX";
  return mkdtemp(tmpl) ? tmpl : "";
}

}  // namespace

// aclrtMallocHost promises 64-byte alignment only (the double hands out such memory);
// registration needs a 4 KiB-aligned address and length, so the backend aligns within a
// slightly larger allocation and rounds the registered length.
TEST(AscendAlignment, RegisteredSpansAre4KiBAlignedWhateverTheBlockSize) {
  for (const char* name : {"all_host_to_all_device_ffts_direct_h2d", "all_odirect_host_to_all_device_ffts_direct_h2d",
                           "one_share_host_to_all_device_ce_multi_stream"}) {
    SCOPED_TRACE(name);
    LogFile log;
    const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", name, "-s", "1000", "-n", "3", "-i", "2", "-d",
                                  "2", "--validate"},
                                 double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find(std::string("[validation] ") + name + " PASS"), std::string::npos) << r.out;
    const CallLog calls = log.read();
    // Two workers; on x86 the direct path's devices also register their proof buffer.
    const bool direct = std::string(name).find("ffts_direct") != std::string::npos;
    expect_aligned_registrations(calls, 2 + (direct ? 2 * kProofLaunches : 0));
    for (const auto& kv : calls)
      for (const auto& c : kv.second)
        if (c.name == "aclrtMallocHost" && !arg_of(c.args, "ptr").empty())
          EXPECT_NE(std::stoull(arg_of(c.args, "ptr"), nullptr, 16) % 4096, 0u) << "the double's memory is 64-byte aligned";
    for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
  }
}

// aio --io-type alloc reads with O_DIRECT into aclrtMallocHost memory: it must be 4 KiB aligned.
TEST(AscendAlignment, AioReadsIntoAlignedPinnedMemory) {
  LogFile log;
  const std::string dir = run_dir();
  ASSERT_FALSE(dir.empty());
  const RunResult r = run_tool({"--backend", "ascend", "aio", "--create-workspace", "--workspace", dir + "/ws", "--io-type", "alloc",
                                "--io-size", "64K", "--io-number", "8", "--epoch-number", "1", "--buffered",
                                "--validate"},
                               double_env(log));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] aio_load PASS"), std::string::npos) << r.out;
  rmdir(dir.c_str());
}

// The runtime answers aclrtMemcpyBatchAsync with 207000, copying nothing, where the
// driver has its own batch copy (and on a SoC without batch copies): every block
// becomes its own aclrtMemcpyAsync, the Method says CE, stderr says why once, JSON too.
TEST(AscendBatch, NotSupportedAnswerFallsBackToSingleCopiesAndSaysSo) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_BATCH_FEATURE"] = "1";
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n", "8", "-i",
                        "2", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = r.result("host_to_device_batch_ce");
  EXPECT_EQ(res["validated"], true) << r.out;
  EXPECT_EQ(res["method"], "CE") << r.out;
  const std::string note = "dev-sandbox: note: host_to_device_batch_ce: aclrtMemcpyBatchAsync answered 207000 "
                           "(feature not supported), as the CANN runtime does where the driver has its own batch copy "
                           "(FEATURE_MEMCPY_BATCH_ASYNC) or the SoC has none, so every block was its own copy "
                           "(Method CE)";
  EXPECT_EQ(count_text(r.err, note), 1u) << r.err;
  const CallLog calls = log.read();
  EXPECT_EQ(count_all(calls, "aclrtMemcpyBatchAsync"), 2u) << "the refused call, and its -> 207000 line; no more";
  EXPECT_EQ(count_all(calls, "aclrtMemcpyAsync"), 4u * 8u) << "warmup 2 + 2 iterations of 8 single copies";

  LogFile jlog;
  auto jenv = double_env(jlog);
  jenv["DS_ACL_DOUBLE_BATCH_FEATURE"] = "1";
  const RunResult j = run_tool({"--backend", "ascend", "trans", "-t", "H2D", "-H", "pinned", "-M", "batch_ce", "-s",
                                "4K", "-n", "8", "-i", "2", "-d", "2", "--format", "json"},
                               jenv);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  EXPECT_NE(j.out.find("\"method\": \"CE-FORK\""), std::string::npos) << j.out;
  EXPECT_NE(j.out.find("\"notes\": [\n        \"aclrtMemcpyBatchAsync answered 207000 (feature not supported), as "
                       "the CANN runtime does where the driver has its own batch copy (FEATURE_MEMCPY_BATCH_ASYNC) or "
                       "the SoC has none\"\n      ]"),
            std::string::npos)
      << j.out;
  EXPECT_EQ(count_text(j.err, "answered 207000"), 1u) << "said once for both workers: " << j.err;
}

// §2.7: where the contexts of tasks beyond the BAR copy go is timed once at setup. Older
// runtimes use device contexts in place (the double's default), so they win against host
// contexts, which cost a device allocation and a blocking copy per launch: built once in
// device memory at setup and launched in place. Newer runtimes read device contexts
// back with a blocking copy at every launch (DS_ACL_DOUBLE_DESC_READBACK_NS): then host
// memory wins. A note in the JSON says which; DEV_SANDBOX_FFTS_DESC=host still forces
// the per-launch path (no timing).
TEST(AscendFfts, LargeTasksPutTheirContextsWhereALaunchTimedFasterAtSetup) {
  const std::string device_note =
      "FFTS+ context descriptors (40 per task) in device memory: a launch with them timed faster at setup than with "
      "host contexts, which the runtime copies with a device allocation and a blocking copy at every launch";
  const std::string host_note =
      "FFTS+ context descriptors (40 per task) in host memory: a launch with them timed faster at setup than with "
      "device contexts, which newer runtimes read back with a blocking copy at every launch";
  {
    LogFile log;
    JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d", "-s",
                          "4K", "-n", "4", "-f", "40", "-i", "2", "-d", "2", "--validate"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = r.result("all_odirect_host_to_all_device_ffts_direct_h2d");
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["notes"], json::array({device_note})) << r.out;
    EXPECT_EQ(count_text(r.err, "dev-sandbox: note: all_odirect_host_to_all_device_ffts_direct_h2d: " + device_note),
              1u)
        << r.err;
    size_t workers = 0;
    for (const auto& kv : log.read()) {
      if (!creates_streams(kv.second)) continue;
      ++workers;
      // The x86 proof's own task runs on a stream of its own (that of the first launch).
      std::string proof_stream;
      for (const Call& c : kv.second)
        if (kProofLaunches && c.name == "rtFftsPlusTaskLaunchWithFlag") {
          proof_stream = arg_of(c.args, "stream");
          break;
        }
      size_t first_record = kv.second.size(), desc_copies = 0;
      for (size_t i = 0; i < kv.second.size(); ++i) {
        const Call& c = kv.second[i];
        if (c.name == "aclrtRecordEvent" && arg_of(c.args, "stream") != proof_stream)
          first_record = std::min(first_record, i);
        if (c.name == "aclrtMemcpy" && arg_of(c.args, "count") == "5120") {
          ++desc_copies;
          EXPECT_LT(i, first_record) << "descriptors are copied at setup, not in the timed loop";
        }
      }
      // The timing: host and device launches in turn, before any measured one.
      std::vector<std::string> timing;
      size_t n = 0;
      for (const Call& c : kv.second)
        if (c.name == "rtFftsPlusTaskLaunchWithFlag" && n++ >= kProofLaunches && timing.size() < kDescTimingLaunches)
          timing.push_back(arg_of(c.args, "desc"));
      EXPECT_EQ(timing, (std::vector<std::string>{"host", "device", "host", "device", "host", "device"}));
      const std::vector<Call> measured = task_launches(kv.second, kProofLaunches + kDescTimingLaunches);
      EXPECT_EQ(measured.size(), 4u * 4u) << "warmup 2 + 2 iterations of 4 IO tasks";
      for (const Call& c : measured) {
        EXPECT_EQ(arg_of(c.args, "desc"), "device");
        EXPECT_EQ(arg_of(c.args, "ready"), "8");
      }
      EXPECT_EQ(desc_copies, 4u + 1u) << "one per IO task, and the timed launch's";
      expect_clean_process(kv.second, kv.first);
    }
    EXPECT_EQ(workers, 2u);
  }
  {
    LogFile log;
    auto env = double_env(log);
    env["DS_ACL_DOUBLE_DESC_READBACK_NS"] = "3000000";  // 3 ms per launch: a newer runtime's read-back
    JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s", "4K",
                          "-n", "4", "-f", "40", "-i", "1", "-d", "1", "--validate"},
                         env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = r.result("all_host_to_all_device_ffts_direct_h2d");
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["notes"], json::array({host_note})) << r.out;
    size_t alloc_sync = 0, readback = 0;
    for (const auto& kv : log.read())
      for (const auto& c : task_launches(kv.second, kProofLaunches + kDescTimingLaunches)) {
        alloc_sync += arg_of(c.args, "copy") == "alloc+sync";
        readback += arg_of(c.args, "readback") == "sync";
      }
    EXPECT_EQ(alloc_sync, 3u * 4u) << "host contexts: the runtime's allocation and blocking copy per launch";
    EXPECT_EQ(readback, 0u);
  }
  LogFile host;
  auto env = double_env(host);
  env["DEV_SANDBOX_FFTS_DESC"] = "host";
  JsonRun h = run_json({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s", "4K",
                        "-n", "4", "-f", "40", "-i", "1", "-d", "1", "--validate"},
                       env);
  ASSERT_EQ(h.exit_code, 0) << h.err;
  EXPECT_EQ(h.result("all_host_to_all_device_ffts_direct_h2d")["notes"],
            json::array({"FFTS+ context descriptors (40 per task) in host memory, as DEV_SANDBOX_FFTS_DESC=host asks"}));
  size_t alloc_sync = 0, device = 0;
  for (const auto& kv : host.read())
    for (const auto& c : task_launches(kv.second)) {
      alloc_sync += arg_of(c.args, "copy") == "alloc+sync";
      device += arg_of(c.args, "desc") == "device";
    }
  EXPECT_EQ(alloc_sync, 3u * 4u) << "5 KiB of host contexts: a device allocation and a blocking copy per launch";
  EXPECT_EQ(device, 0u) << "forced: nothing timed";
}

// A CANN before 8.1: no aclrtHostRegister (nor V2), no aclrtCreateEventExWithFlag, no
// batch API. The CE cases run; the cases that register memory say which symbols are
// missing; events are reset after each wait.
TEST(AscendOldCann, CeCasesRunAndRegisteringCasesNameTheMissingSymbols) {
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_OLD;
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "host_to_device_ce", "-t",
                        "host_to_device_ce_multi_stream", "-t", "host_to_device_batch_ce", "-t",
                        "all_host_to_all_device_ce_multi_stream", "-s", "4K", "-n", "8", "-i", "2", "-d", "2",
                        "--streams", "3", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* c : {"host_to_device_ce", "host_to_device_ce_multi_stream", "host_to_device_batch_ce",
                        "all_host_to_all_device_ce_multi_stream"})
    EXPECT_EQ(r.result(c)["validated"], true) << c << "\n" << r.out;
  EXPECT_EQ(r.result("host_to_device_batch_ce")["method"], "CE");
  const CallLog calls = log.read();
  // Events of aclrtCreateEventWithFlag are reset after every wait on the timing stream.
  EXPECT_GT(count_all(calls, "aclrtStreamWaitEvent"), 0u);
  EXPECT_EQ(count_all(calls, "aclrtResetEvent"), count_all(calls, "aclrtStreamWaitEvent"));
  EXPECT_EQ(count_all(calls, "aclrtCreateEventExWithFlag"), 0u);
  for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);

  const std::string missing = std::string(DS_ACL_DOUBLE_OLD) +
                              " does not export aclrtHostRegister, aclrtHostRegisterV2, aclrtHostGetDevicePointer, "
                              "aclrtHostUnregister, so host memory cannot be registered with the device";
  // §2.5: the CE cases of odirect and shared memory need no registration: they copy
  // from the unregistered memory and say so. Only the direct path is refused.
  for (const char* c : {"all_odirect_host_to_all_device_ce_multi_stream", "one_share_host_to_all_device_ce_multi_stream"}) {
    SCOPED_TRACE(c);
    LogFile l;
    auto e = double_env(l);
    e["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_OLD;
    JsonRun x = run_json({"--backend", "ascend", "copy", "-t", c, "-s", "4K", "-n", "2", "-i", "1", "-d", "2",
                          "--validate"},
                         e);
    ASSERT_EQ(x.exit_code, 0) << x.err;
    const json res = x.result(c);
    EXPECT_EQ(res["validated"], true);
    const std::string kind = std::string(c).find("odirect") != std::string::npos ? "odirect_mmap" : "shm";
    const std::string note = "source memory (" + kind + ") not registered with the device: ascend: " + missing +
                             " (aclrtHostRegister arrived in CANN 8.1); the CE copies use it unregistered";
    EXPECT_EQ(res["notes"], json::array({note})) << x.out;
    EXPECT_EQ(count_text(x.err, "dev-sandbox: note: " + std::string(c) + ": " + note), 1u)
        << "once for both workers: " << x.err;
    for (const auto& kv : l.read()) expect_clean_process(kv.second, kv.first);
  }
  for (const char* c : {"all_host_to_all_device_ffts_direct_h2d", "all_odirect_host_to_all_device_ffts_direct_h2d",
                        "one_share_host_to_all_device_ffts_direct_h2d"}) {
    LogFile l;
    auto e = double_env(l);
    e["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_OLD;
    const RunResult x = run_tool({"--backend", "ascend", "copy", "-t", c, "-s", "4K", "-n", "2", "-i", "1", "-d", "2"}, e);
    EXPECT_EQ(x.exit_code, 1) << c << ": " << x.out;
    EXPECT_NE(x.err.find(std::string(c) + ": not supported on this machine: " + missing), std::string::npos) << x.err;
    EXPECT_EQ(l.read().size(), 1u) << "only the probe ran";
  }
  // The seed's --iodirect true --sdma false and mla --sdma false commands run.
  for (const char* model : {"gqa", "mla"}) {
    const RunResult q = run_tool({"--backend", "ascend", "--model-type", model, "--iodirect", "true", "--sdma",
                                  "false", "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                                 env);
    EXPECT_EQ(q.exit_code, 0) << model << ": " << q.err;
    EXPECT_NE(q.out.find(" PASS"), std::string::npos) << q.out;
  }
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find("host registration (odirect, shm): not available: " + missing), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("CE cases copy from that memory unregistered, the direct path is refused"), std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("direct path: not available: " + missing), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("events: aclrtCreateEventWithFlag, reset with aclrtResetEvent after each wait"),
            std::string::npos)
      << d.out;
  // trans runs its registered combinations from unregistered memory, with a note.
  const RunResult t = run_tool({"--backend", "ascend", "trans", "-t", "H2D", "-s", "4K", "-n", "4", "-i", "1", "-d",
                                "2", "--validate"},
                               env);
  EXPECT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.err.find("h2d_registered_normal_ce: source memory (registered) not registered with the device"),
            std::string::npos)
      << t.err;
  EXPECT_NE(t.out.find("[validation] h2d_pinned_normal_ce PASS"), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("[validation] h2d_registered_normal_ce PASS"), std::string::npos) << t.out;
}

// Events of aclrtCreateEventExWithFlag are reused as they are: never reset.
TEST(AscendEvents, ReusableEventsWhereTheLibraryHasThem) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_ce_multi_stream", "-s", "4K",
                                "-n", "8", "-i", "3", "--streams", "2"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CallLog calls = log.read();
  EXPECT_EQ(count_all(calls, "aclrtCreateEventWithFlag"), 0u);
  EXPECT_EQ(count_all(calls, "aclrtCreateEventExWithFlag"), 2u * 2u + 2u * 2u) << "start/end per stream and twins";
  EXPECT_EQ(count_all(calls, "aclrtResetEvent"), 0u);
  const RunResult d = run_tool({"doctor"}, double_env(log));
  EXPECT_NE(d.out.find("events: aclrtCreateEventExWithFlag (made for reuse, never reset)"), std::string::npos) << d.out;
}

// The staging pipelines' per-buffer events (load, offload, and both at once), in the
// order the double logged them: every event that was polled (aclrtQueryEventStatus) was
// created by `create_call` with ACL_EVENT_CAPTURE_STREAM_PROGRESS (0x2) alone (no
// timestamps, not SYNC) and never waited on or reset: with two streams a timing event
// would be joined onto the timing stream (aclrtStreamWaitEvent) at every record.
struct PolledEvents {
  size_t polled = 0, wrong_flag = 0, wrong_call = 0, waited = 0;
};
PolledEvents polled_events(const CallLog& log, const std::string& create_call) {
  struct Gen {
    std::string call, flag;
    bool queried = false, waited = false;
  };
  PolledEvents r;
  for (const auto& kv : log) {
    std::map<std::string, std::vector<Gen>> gens;  // event pointer -> its lives, in order
    for (const Call& c : kv.second) {
      const std::string ev = arg_of(c.args, "event");
      if (c.name.rfind("aclrtCreateEvent", 0) == 0 && arg_of(c.args, "error").empty())
        gens[ev].push_back({c.name, arg_of(c.args, "flag")});
      else if (gens.count(ev) && c.name == "aclrtQueryEventStatus")
        gens[ev].back().queried = true;
      else if (gens.count(ev) && (c.name == "aclrtStreamWaitEvent" || c.name == "aclrtResetEvent"))
        gens[ev].back().waited = true;
    }
    for (const auto& g : gens)
      for (const Gen& life : g.second) {
        if (!life.queried) continue;
        ++r.polled;
        r.wrong_flag += life.flag != "0x2";
        r.wrong_call += life.call != create_call;
        r.waited += life.waited;
      }
  }
  return r;
}

TEST(AscendEvents, StagingPipelinesPollEventsMadeForPolling) {
  const std::string base = dstest::disk::disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::vector<std::vector<std::string>> runs = {
      {"load"}, {"offload"}, {"load", "--offload-ratio", "0.5"}};
  for (const char* lib : {DS_ACL_DOUBLE, DS_ACL_DOUBLE_OLD}) {
    const bool old = std::string(lib) == DS_ACL_DOUBLE_OLD;
    for (const auto& head : runs) {
      SCOPED_TRACE(head[0] + (head.size() > 1 ? " --offload-ratio" : "") + (old ? ", CANN before 8.1" : ""));
      LogFile log;
      auto env = double_env(log);
      env["DEV_SANDBOX_ACL_LIB"] = lib;
      env["DEV_SANDBOX_ACL_RT_LIB"] = DS_RT_DOUBLE;
      env["DS_ACL_DOUBLE_DEVICES"] = "2";
      env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
      const std::string ws = base + "/" + dstest::disk::unique_name("aclpoll");
      std::vector<std::string> args = {head[0], "--backend", "ascend", "--create-workspace", "--workspace", ws};
      args.insert(args.end(), head.begin() + 1, head.end());
      for (const char* a : {"-s", "64K", "-n", "6", "-d", "2", "-i", "2", "--warmup", "0", "--staging", "2",
                            "--streams", "2", "--validate"})
        args.push_back(a);
      const RunResult r = run_tool(args, env);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
      const CallLog calls = log.read();
      const PolledEvents p = polled_events(calls, old ? "aclrtCreateEventWithFlag" : "aclrtCreateEventExWithFlag");
      EXPECT_GE(p.polled, 2u * 2u) << "a polled event per staging buffer on each card";
      EXPECT_EQ(p.wrong_flag, 0u) << "polling events are ACL_EVENT_CAPTURE_STREAM_PROGRESS alone";
      EXPECT_EQ(p.wrong_call, 0u);
      EXPECT_EQ(p.waited, 0u) << "a polling event is never joined onto the timing stream";
      for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
      EXPECT_FALSE(dstest::disk::exists(ws));
    }
  }
  LogFile log;
  auto env = double_env(log);
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find("polling events (staging reuse): aclrtCreateEventExWithFlag(ACL_EVENT_CAPTURE_STREAM_PROGRESS): "
                       "no timestamps, never waited on, polled with aclrtQueryEventStatus"),
            std::string::npos)
      << d.out;
  env["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_OLD;
  const RunResult o = run_tool({"doctor"}, env);
  EXPECT_NE(o.out.find("polling events (staging reuse): aclrtCreateEventWithFlag(ACL_EVENT_CAPTURE_STREAM_PROGRESS)"),
            std::string::npos)
      << o.out;
}

// The double refuses the event flags the runtime refuses (flag 0 above all), so the
// backend's flags are checked against the runtime's rules.
TEST(AscendRuntimeDouble, RefusesEventFlagsTheRuntimeRefuses) {
  LogFile log;
  setenv("DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE, 1);
  setenv("DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE, 1);
  setenv("DS_ACL_DOUBLE_LOG", log.path().c_str(), 1);
  setenv("DS_ACL_DOUBLE_DEVICES", "1", 1);
  using namespace ds::acl;
  auto backend = ds::make_ascend_backend();
  backend->init_process();
  auto dev = backend->open_device(0);
  const AclLibrary& lib = load_acl_library();
  aclrtEvent e = nullptr;
  EXPECT_NE(lib.aclrtCreateEventExWithFlag(&e, 0), 0) << "the Ex call refuses flag 0";
  EXPECT_NE(lib.aclrtCreateEventWithFlag(&e, 0), 0);
  EXPECT_NE(lib.aclrtCreateEventExWithFlag(&e, 0x40u | ACL_EVENT_SYNC), 0) << "IPC goes alone";
  ASSERT_EQ(lib.aclrtCreateEventExWithFlag(&e, ACL_EVENT_CAPTURE_STREAM_PROGRESS), 0);
  EXPECT_EQ(lib.aclrtDestroyEvent(e), 0);
  auto polling = dev->create_polling_event();  // the backend's own: accepted
  EXPECT_NE(polling, nullptr);
  // The double's copies are memcpy on its stream threads, and it says so: the staging
  // pipelines' transfer loop naps rather than spin on them (look_nap_rule).
  EXPECT_TRUE(backend->copies_on_host_cpus());
}

// Kernels 5.10 and older: the odirect and shm cases run (pages locked first, as UCM
// does), and doctor says so; a refusal by the runtime names the call, error and kernel.
TEST(AscendKernel510, OdirectAndShmCasesRunWithTheirPagesLockedFirst) {
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_KERNEL_RELEASE"] = "5.10.0-136.12.0.86.h1.aarch64";
  const RunResult r = run_tool({"--backend", "ascend", "--model-type", "mla", "--iodirect", "true", "--sdma", "true",
                                "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[validation] one_share_host_to_all_device_ffts_direct_h2d PASS"), std::string::npos);
  const RunResult g = run_tool({"--backend", "ascend", "--model-type", "gqa", "--iodirect", "true", "--sdma", "false",
                                "-s", "4K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                               env);
  ASSERT_EQ(g.exit_code, 0) << g.err;
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find("kernel 5.10.0-136.12.0.86.h1.aarch64 is 5.10 or older, where the CANN docs allow registering "
                       "only aclrtMallocHost memory: the pages are locked with mlock first"),
            std::string::npos)
      << d.out;
  EXPECT_NE(d.out.find("memory locking: registered buffers (odirect, shm) are locked with mlock before registration"),
            std::string::npos)
      << d.out;
  // A registration the runtime refuses: the direct path stops naming the call, error and
  // kernel; a CE case (§2.5) copies from the unregistered memory and says the same.
  env["DS_ACL_DOUBLE_FAIL"] = "aclrtHostRegisterV2:1";
  const std::string refused = "aclrtHostRegisterV2 (device 0, 8.00 KiB, pages locked first: kernel "
                              "5.10.0-136.12.0.86.h1.aarch64 is 5.10 or older, MAPPED | PINNED) failed with error 507899";
  const RunResult f = run_tool({"--backend", "ascend", "copy", "-t", "all_odirect_host_to_all_device_ffts_direct_h2d",
                                "-s", "4K", "-n", "2", "-i", "1", "-d", "1"},
                               env);
  EXPECT_EQ(f.exit_code, 1);
  EXPECT_NE(f.err.find(refused), std::string::npos) << f.err;
  const RunResult c = run_tool({"--backend", "ascend", "copy", "-t", "all_odirect_host_to_all_device_ce_multi_stream",
                                "-s", "4K", "-n", "2", "-i", "1", "-d", "1", "--validate"},
                               env);
  EXPECT_EQ(c.exit_code, 0) << c.err;
  EXPECT_NE(c.err.find("dev-sandbox: note: all_odirect_host_to_all_device_ce_multi_stream: source memory "
                       "(odirect_mmap) not registered with the device: " + refused),
            std::string::npos)
      << c.err;
  EXPECT_NE(c.out.find("[validation] all_odirect_host_to_all_device_ce_multi_stream PASS"), std::string::npos);
}

// The FFTS+ launch must come from the runtime instance AscendCL itself loaded: a second
// copy of libruntime.so next to libascendcl.so would see invalid stream handles.
TEST(AscendRuntime, LaunchesThroughTheRuntimeAscendClAlreadyLoaded) {
  const std::string dir = run_dir();
  ASSERT_FALSE(dir.empty());
  const std::string acl = dir + "/libascendcl.so", decoy = dir + "/libruntime.so";
  for (const auto& copy : {std::make_pair(std::string(DS_ACL_DOUBLE), acl), std::make_pair(std::string(DS_RT_DOUBLE), decoy)}) {
    std::ifstream in(copy.first, std::ios::binary);
    std::ofstream out(copy.second, std::ios::binary);
    out << in.rdbuf();
  }
  LogFile log;
  auto env = double_env(log);
  env["DEV_SANDBOX_ACL_LIB"] = acl;
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s",
                                "4K", "-n", "4", "-f", "2", "-i", "1", "-d", "2", "--validate"},
                               env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const RunResult d = run_tool({"doctor"}, env);
  EXPECT_NE(d.out.find(std::string("runtime library (FFTS+): ") + DS_RT_DOUBLE), std::string::npos) << d.out;
  EXPECT_EQ(d.out.find(decoy), std::string::npos) << d.out;
  std::remove(acl.c_str());
  std::remove(decoy.c_str());
  rmdir(dir.c_str());
}

// The runtime double refuses what the runtime and the SDMA engine would: called
// directly here, with a task the backend would never build.
TEST(AscendRuntimeDouble, RefusesMoreReadyContextsThanLanesAndForeignSqeValues) {
  LogFile log;
  setenv("DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE, 1);
  setenv("DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE, 1);
  setenv("DS_ACL_DOUBLE_LOG", log.path().c_str(), 1);
  setenv("DS_ACL_DOUBLE_DEVICES", "1", 1);
  using namespace ds::acl;
  {
    auto backend = ds::make_ascend_backend();
    backend->init_process();
    auto dev = backend->open_device(0);
    const AclLibrary& lib = load_acl_library();
    constexpr size_t kN = 12, kBytes = 4096;
    auto src = dev->alloc_pinned(kN * kBytes, true);
    auto dst = dev->alloc_device(kN * kBytes);
    aclrtStream stream = nullptr;
    ASSERT_EQ(lib.aclrtCreateStream(&stream), 0);
    auto launch = [&](uint16_t ready, uint8_t subtype, uint32_t header) {
      std::vector<rtFftsPlusSdmaCtx_t> ctx(kN, rtFftsPlusSdmaCtx_t{});
      for (size_t i = 0; i < kN; ++i) {
        const auto s = reinterpret_cast<uintptr_t>(src->device_ptr()) + i * kBytes;
        const auto t = reinterpret_cast<uintptr_t>(dst->device_ptr()) + i * kBytes;
        ctx[i].contextType = RT_CTX_TYPE_SDMA;
        ctx[i].threadDim = 1;
        ctx[i].sdmaSqeHeader = header;
        ctx[i].sourceAddressBaseL = static_cast<uint32_t>(s);
        ctx[i].sourceAddressBaseH = static_cast<uint32_t>(static_cast<uint64_t>(s) >> 32);
        ctx[i].destinationAddressBaseL = static_cast<uint32_t>(t);
        ctx[i].destinationAddressBaseH = static_cast<uint32_t>(static_cast<uint64_t>(t) >> 32);
        ctx[i].nonTailDataLength = ctx[i].tailDataLength = kBytes;
        if (i >= ready) {
          ctx[i - ready].successorList[ctx[i - ready].successorNum++] = static_cast<uint16_t>(i);
          ctx[i].predCntInit = ctx[i].predCnt = 1;
        }
      }
      rtFftsPlusSqe_t sqe{};
      sqe.typeBits = sqe_type_bits(RT_FFTS_PLUS_TYPE);
      sqe.subType = subtype;
      sqe.totalContextNum = kN;
      sqe.readyContextNum = sqe.preloadContextNum = ready;
      rtFftsPlusTaskInfo_t info{};
      info.fftsPlusSqe = &sqe;
      info.descBuf = ctx.data();
      info.descBufLen = sizeof(rtFftsPlusSdmaCtx_t) * kN;
      const int rc = lib.rtFftsPlusTaskLaunchWithFlag(&info, stream, 0);
      const std::string msg = rc == 0 ? "" : lib.aclGetRecentErrMsg();
      const int sync = lib.aclrtSynchronizeStream(stream);
      return std::make_pair(rc != 0 ? rc : sync, rc != 0 ? msg : std::string(lib.aclGetRecentErrMsg()));
    };
    EXPECT_EQ(launch(8, 0x5A, kSdmaFp32AtomicMoveSqe).first, 0) << "8 lanes and a chain: accepted";
    auto r = launch(12, 0x5A, kSdmaFp32AtomicMoveSqe);
    EXPECT_NE(r.first, 0);
    EXPECT_NE(r.second.find("readyContextNum 12: the SDMA engine has 8 ready lanes"), std::string::npos) << r.second;
    r = launch(8, 0x00, kSdmaFp32AtomicMoveSqe);
    EXPECT_NE(r.second.find("SQE subType 0x0 is not 0x5A"), std::string::npos) << r.second;
    r = launch(8, 0x5A, 0x1E75);  // opcode 5: memset
    EXPECT_NE(r.first, 0);
    EXPECT_NE(r.second.find("is not a plain move"), std::string::npos) << r.second;
    (void)lib.aclrtDestroyStream(stream);
  }
  unsetenv("DS_ACL_DOUBLE_LOG");
}

// ---- Each NPU's PCI address through DCMI, and so its NUMA node (device_pci.h) ----

namespace {

// Two devices whose driver (logical and physical) ids are 4 and 5 (as
// ASCEND_RT_VISIBLE_DEVICES=4,5 would give), the DCMI double knowing their PCI
// addresses, sysfs the recorded two-socket tree. Ids 0 and 1 sit on node 1: taking
// ACL's ids for the driver's lands there; so does chip 2, the chip index
// aclrtGetDeviceInfo(ACL_DEV_ATTR_PHY_CHIP_ID) gives both dies on the A3 SoC.
std::map<std::string, std::string> numa_env(const LogFile& log, const std::string& pci) {
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_DEVICES"] = "2";
  env["DS_ACL_DOUBLE_LOGIC_IDS"] = "4,5";
  env["DS_ACL_DOUBLE_SOC"] = "Ascend910_9392";
  env["DEV_SANDBOX_DCMI_LIB"] = DS_DCMI_DOUBLE;
  env["DS_DCMI_DOUBLE_PCI"] = "0:0000:af:00.0,1:0000:af:00.0,2:0000:af:00.0," + pci;
  env["DS_SYSFS_ROOT"] = std::string(DS_SYSFS_DATA) + "/two_sockets";
  env["ASCEND_RT_VISIBLE_DEVICES"] = "";  // empty: not set
  return env;
}

std::string fact_line(const std::string& out, const std::string& name) {
  const size_t at = out.find("  " + name + ": ");
  return at == std::string::npos ? "" : out.substr(at + 2, out.find('\n', at) - at - 2);
}

// run_json adds --format json.
std::vector<std::string> run_args(std::vector<std::string> extra) {
  std::vector<std::string> a = {"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                "64K", "-n", "4", "-i", "2", "-d", "2", "--validate"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

TEST(AscendNuma, DoctorPrintsEachCardsPciAddressAndNodeByItsLogicalId) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "doctor"}, numa_env(log, "4:0000:18:00.0,5:0000:AF:00.0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("npu 0: Ascend910_9392, PCI 0000:18:00.0, NUMA node 0, HBM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("npu 1: Ascend910_9392, PCI 0000:af:00.0, NUMA node 1, HBM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NUMA: card 0 -> node 0 -> CPUs 0-15,32-47"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NUMA: card 1 -> node 1 -> CPUs 16-31,48-63"), std::string::npos) << r.out;
  EXPECT_EQ(fact_line(r.out, "device -> PCI"),
            std::string("device -> PCI: DCMI ") + DS_DCMI_DOUBLE + " (logical id from aclrtGetLogicDevIdByUserDevId)");
  // Per probing process: DCMI initialised once, asked by logical id, then for the
  // card/device pair it answered (card 100 + phy / 2, device phy % 2 in the double).
  size_t probing = 0;
  for (const auto& kv : log.read()) {
    const auto& calls = kv.second;
    if (count_calls(calls, "dcmi_init") == 0) continue;
    ++probing;
    EXPECT_EQ(count_calls(calls, "dcmi_init"), 1u);
    std::vector<std::string> asked;
    for (const Call& c : calls)
      if (c.name.rfind("dcmi_get", 0) == 0) asked.push_back(c.name + " " + c.args);
    EXPECT_EQ(asked, (std::vector<std::string>{"dcmi_get_card_id_device_id_from_logicid logic=4",
                                               "dcmi_get_device_pcie_info_v2 card=102 device=0",
                                               "dcmi_get_card_id_device_id_from_logicid logic=5",
                                               "dcmi_get_device_pcie_info_v2 card=102 device=1"}));
    EXPECT_EQ(count_calls(calls, "aclrtGetDeviceInfo"), 0u) << "the chip index is not a DCMI id";
    expect_clean_process(calls, kv.first);
  }
  EXPECT_EQ(probing, 1u) << "one probe process asks DCMI";
}

// --numa auto: both cards' PCI addresses (driver ids 4 and 5) are on node 0 here,
// so both workers run there with their pages; were ACL's ids or the chip index taken
// for the driver's, the workers would go to node 1, which this machine does not have.
TEST(AscendNuma, AutoPutsEachWorkerOnItsCardsNode) {
  LogFile log;
  const JsonRun r = run_json(run_args({"--numa", "auto"}), numa_env(log, "4:0000:18:00.0,5:0000:3d:00.0"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.doc["backend"]["devices"][0], "npu 0: Ascend910_9392, PCI 0000:18:00.0, NUMA node 0, HBM 64.00 GiB free of 64.00 GiB");
  EXPECT_EQ(r.doc["backend"]["devices"][1], "npu 1: Ascend910_9392, PCI 0000:3d:00.0, NUMA node 0, HBM 64.00 GiB free of 64.00 GiB");
  const json& res = r.doc["results"][0];
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(res["numa"]["placed"], true);
  ASSERT_EQ(res["numa"]["workers"].size(), 2u);
  for (const json& w : res["numa"]["workers"]) {
    EXPECT_EQ(w["node"], 0);
    EXPECT_EQ(w["cpus_pinned"], true);
    EXPECT_EQ(w["placed"], true);  // the pinned source allocated from the placed thread
  }
  EXPECT_EQ(r.err.find("reports no node"), std::string::npos) << r.err;
}

// Without a logical id from AscendCL, ACL's id is the driver's logical id only while
// ASCEND_RT_VISIBLE_DEVICES does not renumber the devices.
TEST(AscendNuma, AclIdsAreTakenForLogicalIdsOnlyWithoutVisibleDevices) {
  LogFile log;
  auto env = numa_env(log, "4:0000:18:00.0,5:0000:3d:00.0");
  env["DS_ACL_DOUBLE_LOGIC_IDS"] = "unsupported";
  env["DS_DCMI_DOUBLE_LOGICAL"] = "4,5";  // the driver's logical ids 0 and 1 are chips 4 and 5
  RunResult r = run_tool({"--backend", "ascend", "doctor"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("npu 1: Ascend910_9392, PCI 0000:3d:00.0, NUMA node 0"), std::string::npos) << r.out;
  EXPECT_NE(fact_line(r.out, "device -> PCI")
                .find("(ACL device id as the driver's logical id: aclrtGetLogicDevIdByUserDevId answered 207000 "
                      "and ASCEND_RT_VISIBLE_DEVICES is unset)"),
            std::string::npos)
      << r.out;

  env["ASCEND_RT_VISIBLE_DEVICES"] = "4,5";
  r = run_tool({"--backend", "ascend", "doctor"}, env);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("npu 0: Ascend910_9392, HBM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NUMA: card 0 -> node unknown (the backend found no PCI address for it)"), std::string::npos)
      << r.out;
  EXPECT_EQ(fact_line(r.out, "device -> PCI"),
            "device -> PCI: unknown: aclrtGetLogicDevIdByUserDevId answered 207000, and "
            "ASCEND_RT_VISIBLE_DEVICES is set: ACL's device ids are renumbered, not the driver's");
  // Logical ids asked of DCMI by the first doctor only (devices 0 and 1), none with the devices renumbered.
  size_t logical = 0;
  for (const auto& kv : log.read()) logical += count_calls(kv.second, "dcmi_get_card_id_device_id_from_logicid");
  EXPECT_EQ(logical, 2u);
}

// No libdcmi.so, or DCMI failing: the nodes are unknown, doctor says why, and a run
// with --numa auto still works, its workers unplaced.
TEST(AscendNuma, WithoutDcmiTheNodeIsUnknownAndTheRunStillWorks) {
  LogFile log;
  auto missing = numa_env(log, "4:0000:18:00.0,5:0000:3d:00.0");
  missing["DEV_SANDBOX_DCMI_LIB"] = "/nonexistent/libdcmi.so";
  auto init_fails = numa_env(log, "4:0000:18:00.0,5:0000:3d:00.0");
  init_fails["DS_DCMI_DOUBLE_FAIL"] = "dcmi_init:1";
  auto second_fails = numa_env(log, "4:0000:18:00.0,5:0000:3d:00.0");
  second_fails["DS_DCMI_DOUBLE_FAIL"] = "dcmi_get_device_pcie_info_v2:2";
  const struct {
    std::map<std::string, std::string> env;
    std::string fact;
    const char* unplaced;
  } kCases[] = {
      {missing,
       "device -> PCI: unknown: libdcmi.so (the Ascend driver's DCMI) could not be opened: tried "
       "/nonexistent/libdcmi.so (",
       "devices 0-1"},
      {init_fails, std::string("device -> PCI: unknown: dcmi_init (") + DS_DCMI_DOUBLE + ") failed with error -8005",
       "devices 0-1"},
      {second_fails,
       std::string("device -> PCI: DCMI ") + DS_DCMI_DOUBLE +
           " (device 0: logical id from aclrtGetLogicDevIdByUserDevId); device 1 unknown: "
           "dcmi_get_device_pcie_info_v2(card "
           "102, device 1) failed with error -8005",
       "device 1"},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.fact);
    const RunResult d = run_tool({"--backend", "ascend", "doctor"}, c.env);
    EXPECT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(fact_line(d.out, "device -> PCI").rfind(c.fact, 0), 0u) << d.out;
    EXPECT_NE(d.out.find("NUMA: card 1 -> node unknown (the backend found no PCI address for it): not placed"),
              std::string::npos)
        << d.out;
    const JsonRun r = run_json(run_args({"--numa", "auto"}), c.env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.doc["results"][0]["validated"], true);
    EXPECT_TRUE(r.doc["results"][0]["numa"]["workers"][1]["node"].is_null());
    EXPECT_NE(r.err.find(std::string("the ascend backend reports no node for ") + c.unplaced), std::string::npos)
        << r.err;
  }
}

// ---- Issue 23 §2: the runtime's real behaviour ----

// §2.3: the runtime never puts more than 64 MiB of a host-to-device copy in one SQE
// (MEMCPY_ASYNC_UNIT_SIZE), and the runtime double refuses a larger SDMA context: a
// 65 MiB fragment goes out as two contexts (64 MiB + 1 MiB) of one task.
TEST(AscendFfts, FragmentsAbove64MiBAreSplitIntoContextsOfAtMost64MiB) {
  LogFile log;
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ffts_direct_h2d", "-s", "65M",
                        "-n", "1", "-i", "1", "--warmup", "0", "-d", "1", "--validate"},
                       double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = r.result("all_host_to_all_device_ffts_direct_h2d");
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(res["count"], 1) << "Count is fragments, not contexts";
  size_t launches = 0;
  for (const auto& kv : log.read())
    for (const auto& c : task_launches(kv.second)) {
      ++launches;
      EXPECT_EQ(arg_of(c.args, "contexts"), "2") << c.args;
      EXPECT_EQ(arg_of(c.args, "ready"), "2") << c.args;
    }
  EXPECT_EQ(launches, 1u);
}

// §2.2: two devices DCMI puts at one PCI address: neither node is guessed.
TEST(AscendNuma, TwoDevicesAtOnePciAddressAreLeftUnknown) {
  LogFile log;
  const RunResult r = run_tool({"--backend", "ascend", "doctor"}, numa_env(log, "4:0000:18:00.0,5:0000:18:00.0"));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("npu 0: Ascend910_9392, HBM"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("npu 1: Ascend910_9392, HBM"), std::string::npos) << r.out;
  EXPECT_EQ(fact_line(r.out, "device -> PCI"),
            "device -> PCI: unknown: DCMI gave devices 0-1 one PCI address (0000:18:00.0)");
  EXPECT_NE(r.out.find("NUMA: card 0 -> node unknown"), std::string::npos) << r.out;
}

// §2.4: a SoC without batch copies (not Atlas A2/A3) gets 207000 from the runtime too.
TEST(AscendBatch, SocWithoutBatchCopiesGets207000AndSingleCopies) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_SOC"] = "Ascend310P3";
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n", "4", "-i",
                        "1", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = r.result("host_to_device_batch_ce");
  EXPECT_EQ(res["method"], "CE");
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(count_all(log.read(), "aclrtMemcpyBatchAsync.loop"), 0u);
}

// ---- §2.1: O_DIRECT I/O into aclrtMallocHost memory fails with EFAULT ----

namespace {

extern "C" char** environ;

// This test binary again, running only `test` with `env` added; its exit code.
int rerun_self(const std::string& test, const std::map<std::string, std::string>& env, std::string* out) {
  const std::string log = ::testing::TempDir() + "ds-acl-rerun-" + std::to_string(getpid());
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    const std::string v(*e);
    if (!env.count(v.substr(0, v.find('=')))) vars.push_back(v);
  }
  for (const auto& kv : env) vars.push_back(kv.first + "=" + kv.second);
  std::vector<char*> envp;
  for (auto& v : vars) envp.push_back(&v[0]);
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=" + test;
  char self[] = "/proc/self/exe";
  char* argv[] = {self, &filter[0], nullptr};
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, self, &fa, nullptr, argv, envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return -1;
  int status = 0;
  waitpid(pid, &status, 0);
  *out = slurp(log);
  std::remove(log.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A 64 KiB file of a known pattern in `dir`, its path.
std::string pattern_file(const std::string& dir) {
  const std::string path = dir + "/" + dstest::disk::unique_name("acl-odirect");
  std::string bytes(64 << 10, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 13 + 7);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

}  // namespace

// With the LD_PRELOAD shim (as on the real card, UCM 734318ce): an O_DIRECT read into the
// double's aclrtMallocHost memory fails with EFAULT, a buffered one works, and the memory
// make_io_buffer gives where the backend says so (our own registered mapping) takes
// O_DIRECT. Run in a child of this binary, which the shim is preloaded into.
TEST(AscendDirectIo, PinnedMemoryFailsODirectReadsAndOurMappingTakesThem) {
  const std::string base = dstest::disk::disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!std::getenv("DS_ASCEND_DIRECT_IO_CHILD")) {
    LogFile log;
    auto env = double_env(log);
    env["DEV_SANDBOX_ACL_RT_LIB"] = DS_RT_DOUBLE;
    env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
    env["DS_ASCEND_DIRECT_IO_CHILD"] = "1";
    std::string out;
    const int rc = rerun_self("AscendDirectIo.PinnedMemoryFailsODirectReadsAndOurMappingTakesThem", env, &out);
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("[  PASSED  ] 1 test"), std::string::npos) << out;
    EXPECT_NE(out.find("corrupt_shim: pid"), std::string::npos) << "the shim stood for the driver: " << out;
    return;
  }
  const std::string path = pattern_file(base);
  const std::string want = slurp(path);
  {
    auto backend = ds::make_ascend_backend();
    backend->init_process();
    auto dev = backend->open_device(0);
    const int direct = open(path.c_str(), O_RDONLY | O_DIRECT);
    const int buffered = open(path.c_str(), O_RDONLY);
    ASSERT_GE(direct, 0);
    ASSERT_GE(buffered, 0);
    auto pinned = dev->alloc_pinned(want.size(), false);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(pinned->host_ptr()) % 4096, 0u);
    errno = 0;
    EXPECT_EQ(pread(direct, pinned->host_ptr(), want.size(), 0), -1) << "O_DIRECT into aclrtMallocHost memory";
    EXPECT_EQ(errno, EFAULT) << std::strerror(errno);
    EXPECT_EQ(pread(buffered, pinned->host_ptr(), want.size(), 0), static_cast<ssize_t>(want.size()));
    EXPECT_EQ(std::memcmp(pinned->host_ptr(), want.data(), want.size()), 0);
    const std::string why = backend->pinned_direct_io_unsupported();
    EXPECT_EQ(why, "aclrtMallocHost memory fails O_DIRECT I/O with EFAULT (UCM 734318ce)");
    ds::IoBuffer own = ds::make_io_buffer(*dev, *backend, want.size(), true, /*direct=*/true, "test buffers");
    EXPECT_EQ(own.kind, ds::BufKind::kOdirect);
    EXPECT_NE(own.device, own.host) << "registered: the mapped address";
    EXPECT_EQ(pread(direct, own.host, want.size(), 0), static_cast<ssize_t>(want.size())) << std::strerror(errno);
    EXPECT_EQ(std::memcmp(own.host, want.data(), want.size()), 0);
    EXPECT_NE(own.note.find("test buffers: mmap memory on "), std::string::npos) << own.note;
    EXPECT_NE(own.note.find(", registered with the device, not the backend's pinned memory: " + why), std::string::npos)
        << own.note;
    ds::IoBuffer pinned_io = ds::make_io_buffer(*dev, *backend, want.size(), false, /*direct=*/false, "test buffers");
    EXPECT_EQ(pinned_io.kind, ds::BufKind::kPinned) << "buffered I/O: aclrtMallocHost";
    EXPECT_TRUE(pinned_io.note.empty());
    close(direct);
    close(buffered);
  }
  std::remove(path.c_str());
}

// aio --io-type alloc with O_DIRECT (libaio and psync) through the doubles and the shim:
// its buffers are our registered mapping (old code read into aclrtMallocHost memory and
// failed with EFAULT); with --buffered they are aclrtMallocHost memory.
TEST(AscendDirectIo, AioAllocReadsWithODirectIntoRegisteredMmapMemory) {
  const std::string base = dstest::disk::disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* engine : {"libaio", "psync"}) {
    SCOPED_TRACE(engine);
    LogFile log;
    auto env = double_env(log);
    env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
    const std::string ws = base + "/" + dstest::disk::unique_name("acl-aio");
    JsonRun r = run_json({"--backend", "ascend", "aio", "--create-workspace", "--workspace", ws, "--io-type", "alloc", "--engine", engine,
                          "--io-size", "64K", "--io-number", "8", "--epoch-number", "1", "--validate"},
                         env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json load = r.result("aio_load");
    EXPECT_EQ(load["to"], "acl::odirect_mmap::0");
    EXPECT_EQ(load["validated"], true);
    ASSERT_EQ(load["notes"].size(), 1u) << r.out;
    const std::string note = load["notes"][0];
    EXPECT_EQ(note.rfind("--io-type alloc buffers: mmap memory on ", 0), 0u) << note;
    EXPECT_NE(note.find(", registered with the device, not the backend's pinned memory: aclrtMallocHost memory "
                        "fails O_DIRECT I/O with EFAULT (UCM 734318ce)"),
              std::string::npos)
        << note;
    const CallLog calls = log.read();
    EXPECT_EQ(count_all(calls, "aclrtMallocHost"), 0u);
    EXPECT_EQ(count_all(calls, "aclrtHostRegisterV2"), 2u) << "dump and load workers, one registration each";
    EXPECT_EQ(r.err.find("corrupt_shim"), std::string::npos) << "no O_DIRECT I/O reached memory DMA cannot: " << r.err;
    for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
  }
  // Buffered I/O (tmpfs has no O_DIRECT): aclrtMallocHost memory, as before.
  LogFile log;
  auto env = double_env(log);
  env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
  const std::string ws = "/dev/shm/" + dstest::disk::unique_name("acl-aio-buf");
  JsonRun r = run_json({"--backend", "ascend", "aio", "--create-workspace", "--workspace", ws, "--io-type", "alloc", "--io-size", "64K",
                        "--io-number", "8", "--epoch-number", "1", "--buffered", "--validate"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("aio_load")["to"], "acl::host::0");
  EXPECT_TRUE(r.result("aio_load")["notes"].is_null() || r.result("aio_load")["notes"].empty());
  EXPECT_EQ(count_all(log.read(), "aclrtMallocHost"), 2u) << "buffered I/O: aclrtMallocHost memory";
  EXPECT_FALSE(dstest::disk::exists(ws));
}

// ---- §2.6: host-to-device SDMA is not supported on x86 hosts (runtime b7bb740, #594) ----

// On an x86 host every direct-path device first proves that SDMA reads host memory with
// one validated 4 KiB copy; where it does not (the double as such a host: contexts from
// host memory copy nothing, or fail), the run stops with "not supported on this
// machine" and exit 1, instead of measuring copies that never happened. CE runs on.
TEST(AscendX86, DirectPathIsProvenFirstAndRefusedWhereSdmaCannotReadHostMemory) {
  if (kProofLaunches == 0) GTEST_SKIP() << "not an x86 host: no proof";
  const std::vector<std::string> sdma = {"--backend", "ascend", "--model-type", "gqa", "--iodirect", "false", "--sdma",
                                         "true", "-s", "4K", "-n", "4", "-i", "1", "-d", "2"};
  {
    LogFile log;
    const RunResult r = run_tool(sdma, double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t proofs = 0;
    for (const auto& kv : log.read())
      for (const Call& c : kv.second)
        if (c.name == "rtFftsPlusTaskLaunchWithFlag") {
          proofs += arg_of(c.args, "contexts") == "1";
          break;  // the first launch of each worker
        }
    EXPECT_EQ(proofs, 2u) << "one proof per worker";
    const RunResult d = run_tool({"doctor"}, double_env(log));
    EXPECT_NE(fact_line(d.out, "host-to-device SDMA (x86 host)")
                  .find("every direct-path worker first proves it with one validated 4 KiB FFTS+ SDMA copy"),
              std::string::npos)
        << d.out;
  }
  const std::string refused =
      "not supported on this machine: host-to-device SDMA does not work on this x86 host (the CANN runtime itself does "
      "not use it on x86: hicann/runtime b7bb740, cann/runtime issue #594): a validated 4 KiB FFTS+ SDMA copy from "
      "registered host memory to device ";
  for (const char* mode : {"silent", "fail"}) {
    SCOPED_TRACE(mode);
    LogFile log;
    auto env = double_env(log);
    env["DS_ACL_DOUBLE_SDMA_H2D"] = mode;
    const RunResult r = run_tool(sdma, env);
    EXPECT_EQ(r.exit_code, 1) << r.out;
    EXPECT_NE(r.err.find(refused), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(std::string(mode) == "silent" ? "completed without delivering its bytes (first difference at "
                                                         "offset 0)"
                                                       : "failed: aclrtSynchronizeStream"),
              std::string::npos)
        << r.err;
    for (const auto& kv : log.read()) expect_clean_process(kv.second, kv.first);
    // The CE path does not depend on it.
    const RunResult ce = run_tool({"--backend", "ascend", "--model-type", "gqa", "--iodirect", "false", "--sdma",
                                   "false", "-s", "4K", "-n", "4", "-i", "1", "-d", "2", "--validate"},
                                  env);
    EXPECT_EQ(ce.exit_code, 0) << ce.err;
  }
}

// ---- The stream start gate and pageable memory ----

// aclrtMemcpyAsync from memory that is not page-locked returns only after the copy
// (the double does what the CANN docs say): queued behind a held stream it would wait
// for ever. The anonymous case, and a CE case whose source could not be registered
// (CANN 8.0: no aclrtHostRegister), run ungated and say why; validated, no watchdog.
TEST(AscendGate, PageableCopiesRunUngatedNeverBehindAHold) {
  struct Run {
    const char* acl;
    const char* name;
    const char* why;
  };
  const Run runs[] = {
      {DS_ACL_DOUBLE, "anonymous_to_device_ce", "aclrtMemcpyAsync from host memory that is not page-locked"},
      {DS_ACL_DOUBLE_OLD, "all_odirect_host_to_all_device_ce_multi_stream",
       "a buffer left unregistered: aclrtMemcpyAsync from host memory that is not page-locked"},
  };
  for (const Run& run : runs) {
    SCOPED_TRACE(run.name);
    LogFile log;
    auto env = double_env(log);
    env["DEV_SANDBOX_ACL_LIB"] = run.acl;
    const JsonRun r = run_json({"--backend", "ascend", "copy", "-t", run.name, "-s", "64K", "-n", "4", "-i", "2", "-d",
                                "2", "--stream-start-gate", "on", "--validate", "--timeout", "20"},
                               env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = r.result(run.name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["stream_start_gate"], false);
    bool said = false;
    for (const json& n : res["notes"])
      said = said || (n.get<std::string>().rfind(run.why, 0) == 0 &&
                      n.get<std::string>().find(": ran ungated") != std::string::npos);
    EXPECT_TRUE(said) << res["notes"];
    EXPECT_EQ(r.err.find("no progress"), std::string::npos) << r.err;
  }
  // Pinned memory stays gated.
  LogFile log;
  const JsonRun pinned = run_json({"--backend", "ascend", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                   "64K", "-n", "4", "-i", "2", "-d", "2", "--stream-start-gate", "on", "--validate"},
                                  double_env(log));
  ASSERT_EQ(pinned.exit_code, 0) << pinned.err;
  EXPECT_EQ(pinned.result("all_host_to_all_device_ce_multi_stream")["stream_start_gate"], true);
}

// The duplex case through the double: both directions on every card, each on its
// own streams, every destination byte of both checked after every pass.
TEST(AscendDuplex, BothDirectionsRunAndValidate) {
  const std::pair<const char*, const char*> cases[] = {
      {"all_host_to_all_device_duplex_ce_multi_stream", "acl::host::all"},
      {"all_odirect_host_to_all_device_duplex_ce_multi_stream", "acl::odirect_mmap::all"},
      {"one_share_host_to_all_device_duplex_ce_multi_stream", "acl::shm::0"}};
  for (const auto& c : cases) {
    const char* name = c.first;
    SCOPED_TRACE(name);
    const auto before = our_shm_entries();
    LogFile log;
    JsonRun r = run_json({"--backend", "ascend", "copy", "-t", name, "-s", "64K", "-n", "4", "-i", "2", "-d", "2",
                          "--duplex-ratio", "0.5", "--validate", "each"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["from"], c.second);
    EXPECT_EQ(res["to"], "acl::device::all");
    EXPECT_EQ(res["method"], "CE-MS-FORK");
    EXPECT_EQ(res["duplex"]["h2d"]["bytes"], 2u * 65536u * 4u);
    EXPECT_EQ(res["duplex"]["d2h"]["bytes"], 2u * 32768u * 4u);
    EXPECT_GT(res["duplex"]["d2h"]["alone_gib_s"].get<double>(), 0);
    EXPECT_GT(res["duplex"]["h2d"]["gib_s"].get<double>(), 0);
    EXPECT_EQ(our_shm_entries(), before);
    for (const auto& kv : log.read()) expect_clean_process(kv.second, kv.first);
  }
}

// Which direction each stream of each process copies, from the call log (the
// aclrtMemcpyAsync kind: 1 host to device, 2 device to host).
std::map<StreamKey, std::string> duplex_stream_directions(const CallLog& log) {
  std::map<StreamKey, std::string> dir;
  for (const auto& kv : log)
    for (const Call& c : kv.second) {
      if (c.name != "aclrtMemcpyAsync") continue;
      const std::string kind = arg_of(c.args, "kind");
      if (kind == "1" || kind == "2") dir[{kv.first, arg_of(c.args, "stream")}] = kind == "1" ? "H2D" : "D2H";
    }
  return dir;
}

const char* const kDuplexCase = "all_host_to_all_device_duplex_ce_multi_stream";

// Copies that take 100 ms per 64 KiB (D2H's 128 KiB blocks at --duplex-ratio 2: 200
// ms): each direction's rows are its own streams' events (the trace's spans of
// them), the directions overlap, the Duplex line's arithmetic (duplex_checks.h).
TEST(AscendDuplex, EachDirectionIsItsOwnStreamsAndTheyOverlap) {
  LogFile log;
  TempFile trace("ds-acl-trace");
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_COPY_NS_PER_KIB"] = "1562500";
  env["DS_ACL_DOUBLE_TRACE"] = trace.path();
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2", "--streams", "2",
                        "-d", "2", "--warmup", "1", "-i", "2", "--duplex-ratio", "2"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const CallLog calls = log.read();
  const auto dir = duplex_stream_directions(calls);
  ASSERT_EQ(dir.size(), 8u);  // 2 cards x 2 directions x 2 streams
  expect_own_streams_and_overlap(r.result(kDuplexCase), trace.path(), dir, 1, 2);
  for (const auto& kv : calls) expect_clean_process(kv.second, kv.first);
}

// Every stream's first three copy tasks 300 ms slower (the warm-up round and the
// measured together pass): the alone figures are the alone passes'.
TEST(AscendDuplex, AloneFiguresAreTheAlonePasses) {
  LogFile log;
  auto env = double_env(log);
  env["DS_ACL_DOUBLE_COLD"] = "3:300000000";
  JsonRun r = run_json({"--backend", "ascend", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2", "--streams", "2",
                        "-d", "2", "--warmup", "1", "-i", "1"},
                       env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_alone_is_the_alone_pass(r.result(kDuplexCase));
}

// aclrtMemcpyAsync is the call of both directions: its failure says which. One
// card, -n 2 on 2 streams: the together pass's first two calls are H2D's, the next
// two D2H's. Exit 1, everything released.
TEST(AscendDuplex, AFailingDirectionIsNamed) {
  for (const char* nth : {"1", "3"}) {
    SCOPED_TRACE(nth);
    LogFile log;
    auto env = double_env(log);
    env["DS_ACL_DOUBLE_FAIL"] = std::string("aclrtMemcpyAsync:") + nth;
    const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", kDuplexCase, "-s", "64K", "-n", "2",
                                  "--streams", "2", "-d", "1", "-i", "2"},
                                 env);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(std::string("dev-sandbox: error: device 0: ") + (nth[0] == '1' ? "H2D" : "D2H") +
                         " copy: aclrtMemcpyAsync (device 0) failed with error 507899: aclrtMemcpyAsync: injected "
                         "failure (test double)\n"),
              std::string::npos)
        << r.err;
    for (const auto& kv : log.read()) expect_clean_process(kv.second, kv.first);
  }
}

// copy --block-table on the direct path: every SDMA context of a task moves a chunk
// from its host slot to the device slot the table names (and back for D2H), as the
// double runs them (the direct path is H2D only on ascend); per-chunk CE copies
// both ways the same; each validated at its slot.
TEST(AscendBlockTable, DirectContextsAndCeCopiesUseTheTablesSlots) {
  dstest::TempFile dev("ds-dev-table"), host("ds-host-table");
  { std::ofstream(dev.path()) << "6\n2\n0\n"; }
  { std::ofstream(host.path()) << "3\n0\n1\n"; }
  struct Way {
    const char* name;
    const char* call;
    bool h2d;
  };
  const Way ways[] = {
      {"all_host_to_all_device_ffts_direct_h2d", "rtFftsPlusTaskLaunchWithFlag[]", true},
      {"device_to_host_ce", "aclrtMemcpyAsync", false},
      {"host_to_device_ce", "aclrtMemcpyAsync", true},
  };
  for (const Way& w : ways) {
    SCOPED_TRACE(w.name);
    LogFile log;
    JsonRun r = run_json({"copy", "--backend", "ascend", "-t", w.name, "-s", "64K", "-n", "3", "-d", "1", "-i", "1",
                          "--warmup", "0", "--validate", "each", "--block-table", dev.path(), "--pool-blocks", "7",
                          "--host-block-table", host.path(), "--host-pool-blocks", "4"},
                         double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.result(w.name)["validated"], true);
    const std::vector<uint64_t> d = {6, 2, 0}, h = {3, 0, 1};
    std::map<uint64_t, uint64_t> want;  // source slot -> destination slot
    for (size_t i = 0; i < 3; ++i) want[w.h2d ? h[i] : d[i]] = w.h2d ? d[i] : h[i];
    EXPECT_EQ(dstest::table::slot_pairs(log.text(), w.call, 65536, 3), want);
  }
}
