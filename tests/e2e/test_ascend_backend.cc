// The ascend backend end to end, through the AscendCL and runtime test doubles
// (tests/doubles/ascend): every case with --validate, the seed's commands, the call
// order and cleanup the doubles log, injected failures, and machines without FFTS+.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "cli_harness.h"

using namespace dstest;

namespace {

struct Call {
  std::string name, args;
};
using CallLog = std::map<long, std::vector<Call>>;  // pid -> calls in order

// A fresh log file for one run; removed with the object.
class LogFile {
 public:
  LogFile() {
    char tmpl[] = "/tmp/ds-acl-double-log-XXXXXX";
    const int fd = mkstemp(tmpl);
    if (fd >= 0) close(fd);
    path_ = tmpl;
  }
  ~LogFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }
  CallLog read() const {
    CallLog log;
    std::ifstream in(path_);
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

 private:
  std::string path_;
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
    if (c.name == "aclrtHostRegister" && !arg_of(c.args, "dev").empty()) {
      EXPECT_TRUE(reg.insert(ptr).second);
      first_register = std::min(first_register, i);
    }
    if (c.name == "aclrtHostUnregister") EXPECT_EQ(reg.erase(ptr), 1u) << "unregister of " << ptr;
    if (c.name == "aclrtCreateStream") streams.insert(arg_of(c.args, "stream"));
    if (c.name == "aclrtDestroyStream") EXPECT_EQ(streams.erase(arg_of(c.args, "stream")), 1u);
    if (c.name == "aclrtCreateEvent" || c.name == "aclrtCreateEventWithFlag") events.insert(arg_of(c.args, "event"));
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
          {"DS_ACL_DOUBLE_DEVICES", "4"}};
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
    {"host_to_device_batch_ce", false, false, "acl::host::0", "acl::device::0", "CE-BATCH"},
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
};

class AscendCaseTest : public ::testing::TestWithParam<AscendCase> {};

void PrintTo(const AscendCase& c, std::ostream* os) { *os << c.name; }

}  // namespace

TEST_P(AscendCaseTest, ValidatesThroughTheDoubles) {
  const AscendCase& c = GetParam();
  LogFile log;
  const RunResult r = run_tool(
      {"--backend", "ascend", "copy", "-t", c.name, "-s", "4K", "-n", "8", "-i", "3", "-d", "3", "--validate"},
      double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("[validation] ") + c.name + " PASS"), std::string::npos) << r.out;
  const auto cells = split_ws(row_line(r.out, c.name));
  ASSERT_GE(cells.size(), 4u) << r.out;
  EXPECT_EQ(cells[0], c.from);
  EXPECT_EQ(cells[1], c.to);
  EXPECT_EQ(cells[2], c.method);
  EXPECT_EQ(cells[3], "4");
  EXPECT_EQ(cells[4], std::to_string(c.multi ? 3 * 8 : 8));

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
  const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", f.name, "-s", "4K", "-n", "8", "-i", "3", "-d",
                                "3", "-f", std::to_string(f.frags), "--validate"},
                               double_env(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("[validation] ") + f.name + " PASS"), std::string::npos);
  const auto cells = split_ws(row_line(r.out, f.name));
  ASSERT_GE(cells.size(), 4u);
  const int per_task = f.frags > 0 ? f.frags : 1;
  EXPECT_EQ(cells[2], "FFTS-SDMA-FORK");
  EXPECT_EQ(cells[3], "4");
  EXPECT_EQ(cells[4], std::to_string(3 * 8 * per_task)) << "Count = d x n x max(1, f)";
  size_t workers = 0;
  for (const auto& kv : log.read()) {
    if (!creates_streams(kv.second)) continue;
    ++workers;
    size_t launches = 0;
    for (const auto& c : kv.second) {
      if (c.name != "rtFftsPlusTaskLaunchWithFlag") continue;
      ++launches;
      EXPECT_EQ(arg_of(c.args, "contexts"), std::to_string(per_task));
      EXPECT_EQ(arg_of(c.args, "ready"), std::to_string(std::min(per_task, 8)));
    }
    EXPECT_EQ(launches, (2u + 3u) * 8u) << "warmup 2 + 3 iterations, n = 8 IO tasks each";
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
                      FragCase{"one_share_host_to_all_device_ffts_direct_h2d", 4}),
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
  EXPECT_NE(r.out.find("  From              To                Method    Size(KB)  Count   "
                       "Submit(us)-(Min/Max/Avg/P50/P90)        Copy(us)-(Min/Max/Avg/P50/P90)              BW(GB/s)"),
            std::string::npos)
      << r.out;
  const std::string row = row_line(r.out, "all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(row.rfind("  acl::host::all    acl::device::all  CE-MS-FORK", 0), 0u) << r.out;
  const auto cells = split_ws(row);
  // From, To, Method, Size(KB), Count, Submit and Copy as "a / b / c / d / e", BW.
  ASSERT_EQ(cells.size(), 24u) << row;
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
  const RunResult r = run_tool({"--backend", "ascend", "--model-type", "mla", "--iodirect", "false", "--sdma",
                                "true", "-s", "16K", "-n", "512", "-i", "3", "--validate"},
                               env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cells = split_ws(row_line(r.out, "one_share_host_to_all_device_ffts_direct_h2d"));
  ASSERT_GE(cells.size(), 4u) << r.out;
  EXPECT_EQ(cells[0], "acl::shm::0");
  EXPECT_EQ(cells[1], "acl::device::all");
  EXPECT_EQ(cells[2].rfind("FFTS-SDMA-FORK", 0), 0u);
  EXPECT_NE(r.out.find("[validation] one_share_host_to_all_device_ffts_direct_h2d PASS"), std::string::npos);
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

TEST(AscendNoFfts, SocWithoutFftsIsRefused) {
  expect_refusal({{"DS_ACL_DOUBLE_SOC", "Ascend910A"}}, "SoC Ascend910A has no FFTS+");
  expect_refusal({{"DS_ACL_DOUBLE_SOC", "Ascend310P3"}}, "SoC Ascend310P3 has no FFTS+");
}

TEST(AscendNoFfts, RuntimeWithoutTheLaunchSymbolIsRefused) {
  expect_refusal({{"DEV_SANDBOX_ACL_RT_LIB", DS_RT_DOUBLE_NOFFTS}},
                 std::string(DS_RT_DOUBLE_NOFFTS) +
                     " does not export rtFftsPlusTaskLaunchWithFlag or rtFftsPlusTaskLaunch");
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

// The batch copy API where the library exports it, else the documented fallback.
TEST(AscendBatch, UsesTheBatchApiOrSaysItFellBack) {
  {
    LogFile log;
    const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n",
                                  "8", "-i", "2", "--validate"},
                                 double_env(log));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t batches = 0, singles = 0;
    for (const auto& kv : log.read()) {
      batches += count_calls(kv.second, "aclrtMemcpyBatchAsync");
      singles += count_calls(kv.second, "aclrtMemcpyAsync");
    }
    EXPECT_EQ(batches, 4u) << "warmup 2 + 2 iterations, one batch each";
    EXPECT_EQ(singles, 0u);
  }
  {
    LogFile log;
    auto env = double_env(log);
    env["DEV_SANDBOX_ACL_LIB"] = DS_ACL_DOUBLE_NOBATCH;
    env["DEV_SANDBOX_ACL_RT_LIB"] = DS_RT_DOUBLE;
    const RunResult r = run_tool({"--backend", "ascend", "copy", "-t", "host_to_device_batch_ce", "-s", "4K", "-n",
                                  "8", "-i", "2", "--validate"},
                                 env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    size_t singles = 0;
    for (const auto& kv : log.read()) singles += count_calls(kv.second, "aclrtMemcpyAsync");
    EXPECT_EQ(singles, 4u * 8u);
    const RunResult d = run_tool({"doctor"}, env);
    EXPECT_NE(d.out.find("batch copy (CE-BATCH): fallback"), std::string::npos) << d.out;
  }
}

TEST(AscendDoctor, ReportsVersionSocMemoryAndFfts) {
  LogFile log;
  const RunResult r = run_tool({"doctor"}, double_env(log));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("backend ascend: loaded from ") + DS_ACL_DOUBLE +
                       ", version CANN 8.0.0-test-double (AscendCL API 1.15.0), 4 devices"),
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
