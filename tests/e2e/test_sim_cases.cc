// Every sim case end to end with --validate, as a user runs it.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

struct SimCase {
  const char* name;
  bool multi;  // uses -d
  const char* from;
  const char* to;
  const char* method;
};

const SimCase kCases[] = {
    {"host_to_device_ce", false, "sim::host::0", "sim::device::0", "CE"},
    {"host_to_device_batch_ce", false, "sim::host::0", "sim::device::0", "CE-BATCH"},
    {"host_to_device_ce_multi_stream", false, "sim::host::0", "sim::device::0", "CE-MS"},
    {"device_to_host_ce", false, "sim::device::0", "sim::host::0", "CE"},
    {"device_to_device_ce", false, "sim::device::0", "sim::device::0", "CE"},
    {"anonymous_to_device_ce", false, "sim::anonymous::0", "sim::device::0", "CE"},
    {"one_host_to_all_device_ce", true, "sim::host::0", "sim::device::all", "CE"},
    {"all_host_to_all_device_ce", true, "sim::host::all", "sim::device::all", "CE"},
    {"one_device_to_all_device_ce", true, "sim::device::0", "sim::device::all", "CE"},
    {"all_host_to_all_device_ce_multi_stream", true, "sim::host::all", "sim::device::all", "CE-MS-FORK"},
    {"all_odirect_host_to_all_device_ce_multi_stream", true, "sim::odirect_mmap::all", "sim::device::all", "CE-MS-FORK"},
    {"one_share_host_to_all_device_ce_multi_stream", true, "sim::shm::0", "sim::device::all", "CE-MS-FORK"},
    {"all_host_to_all_device_ffts_direct_h2d", true, "sim::host_mapped::all", "sim::device::all", "SDMA-FORK"},
    {"all_odirect_host_to_all_device_ffts_direct_h2d", true, "sim::odirect_mmap::all", "sim::device::all", "SDMA-FORK"},
    {"one_share_host_to_all_device_ffts_direct_h2d", true, "sim::shm::0", "sim::device::all", "SDMA-FORK"},
    {"host_to_anonymous_memcpy", false, "sim::host::0", "sim::anonymous::0", "MEMCPY"},
    {"shm_to_all_host_memcpy", true, "sim::shm::0", "sim::host::all", "MEMCPY-FORK"},
    // The D2H mirrors: every card to its own host buffer, or to its own part of one region.
    {"device_to_host_batch_ce", false, "sim::device::0", "sim::host::0", "CE-BATCH"},
    {"all_device_to_all_host_ce", true, "sim::device::all", "sim::host::all", "CE"},
    {"all_device_to_all_host_ce_multi_stream", true, "sim::device::all", "sim::host::all", "CE-MS-FORK"},
    {"all_device_to_all_odirect_host_ce_multi_stream", true, "sim::device::all", "sim::odirect_mmap::all", "CE-MS-FORK"},
    {"all_device_to_one_share_host_ce_multi_stream", true, "sim::device::all", "sim::shm::0", "CE-MS-FORK"},
    {"all_device_to_all_host_ffts_direct_d2h", true, "sim::device::all", "sim::host_mapped::all", "SDMA-FORK"},
    {"all_device_to_all_odirect_host_ffts_direct_d2h", true, "sim::device::all", "sim::odirect_mmap::all", "SDMA-FORK"},
    {"all_device_to_one_share_host_ffts_direct_d2h", true, "sim::device::all", "sim::shm::0", "SDMA-FORK"},
    // The batched call on every card at once, each card in its own process.
    {"all_host_to_all_device_batch_ce", true, "sim::host::all", "sim::device::all", "CE-BATCH-FORK"},
    {"all_device_to_all_host_batch_ce", true, "sim::device::all", "sim::host::all", "CE-BATCH-FORK"},
};


class SimCaseTest : public ::testing::TestWithParam<SimCase> {};

}  // namespace

void PrintTo(const SimCase& c, std::ostream* os) { *os << c.name; }

namespace {

}  // namespace

TEST_P(SimCaseTest, RunsAndValidates) {
  const SimCase& c = GetParam();
  const auto before = our_shm_entries();
  JsonRun r = run_json({"copy", "--backend", "sim", "-t", c.name, "-s", "4K", "-n", "8", "-i", "3",
                        "-d", "3", "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_full_row(expect_validated_result(r, c.name, c.from, c.to, c.method, 4096, c.multi ? 24 : 8));
  EXPECT_EQ(without_run_lines(r.err), "");
  EXPECT_EQ(our_shm_entries(), before);
}

// --block-layout: every task one block of three fragments of different sizes, each
// its own copy in its own region; Size is the block, Count the tasks, and every
// fragment's bytes arrive (a dropped or misplaced fragment fails --validate).
TEST_P(SimCaseTest, BlockLayoutRunsAndValidates) {
  const SimCase& c = GetParam();
  JsonRun r = run_json({"copy", "--backend", "sim", "-t", c.name, "--block-layout", "128K,16K,32K", "-n", "4",
                        "-i", "2", "-d", "2", "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const uint64_t d = c.multi ? 2 : 1;
  json res = expect_validated_result(r, c.name, c.from, c.to, c.method, 176 * 1024, d * 4);
  expect_full_row(res);
  EXPECT_EQ(res["layout"], "128K,16K,32K");
  EXPECT_EQ(res["copies_per_iteration"], d * 12);
  // BW = Size x Count / Copy.avg still holds.
  const double bw = 176.0 * 1024 * static_cast<double>(d * 4) / (res["copy_us"]["avg"].get<double>() * 1e-6) /
                    (1024.0 * 1024 * 1024);
  EXPECT_NEAR(res["bandwidth_gib_s"].get<double>(), bw, bw * 1e-6);
}

INSTANTIATE_TEST_SUITE_P(AllSimCases, SimCaseTest, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<SimCase>& i) { return std::string(i.param.name); });

TEST(SimDirect, FragmentsMultiplyTheCount) {
  for (const char* name : {"all_host_to_all_device_ffts_direct_h2d",
                           "all_odirect_host_to_all_device_ffts_direct_h2d",
                           "one_share_host_to_all_device_ffts_direct_h2d"}) {
    JsonRun r = run_json({"copy", "--backend", "sim", "-t", name, "-s", "4K", "-n", "8", "-i", "3",
                          "-d", "3", "-f", "4", "--validate"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["count"], 96) << name;  // d x n x f = 3 x 8 x 4
    EXPECT_EQ(res["validated"], true) << name;
  }
}

// The D2H multi-card cases: the bytes each card moved are counted, every host byte
// checked against its card's pattern (cleared before every iteration with
// --validate each, so a part nobody wrote fails), the title and Summary name the
// direction, and a part size that is not whole pages still gets a part per card.
TEST(SimD2H, EveryCardWritesItsOwnHostBytes) {
  for (const char* name : {"all_device_to_all_host_ce_multi_stream", "all_device_to_all_odirect_host_ce_multi_stream",
                           "all_device_to_one_share_host_ce_multi_stream"}) {
    SCOPED_TRACE(name);
    const auto before = our_shm_entries();
    JsonRun r = run_json({"copy", "--backend", "sim", "-t", name, "-s", "1000", "-n", "5", "-i", "2", "-d", "3",
                          "--validate", "each"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["devices"], 3);
    EXPECT_EQ(res["count"], 15);
    EXPECT_EQ(our_shm_entries(), before);
  }
  RunResult t = run_tool({"copy", "--backend", "sim", "-t", "all_device_to_one_share_host_ce_multi_stream", "-t",
                          "all_device_to_all_host_ce", "-s", "4K", "-n", "4", "-i", "2", "-d", "2", "--validate"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_EQ(t.out.rfind("[[ all_device_to_one_share_host_ce_multi_stream ]] memcpy from all device to one shared "
                        "host, each its own part, with ce using multi stream and fork submit\n",
                        0),
            0u)
      << t.out;
  EXPECT_NE(t.out.find("\n  sim::device::all  sim::shm::0 "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("[validation] all_device_to_one_share_host_ce_multi_stream PASS"), std::string::npos);
  EXPECT_NE(t.out.find("Summary (BW from Copy, 4.00 KiB blocks, device -> host memory, 2 cards at once): "),
            std::string::npos)
      << t.out;
}

TEST(SimCopy, BlockLayoutTitleAndRefusals) {
  RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "--block-layout", "8K,4K",
                          "-n", "2", "-i", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("[[ host_to_device_ce ]] memcpy from host to device with ce, blocks of 8K,4K\n", 0), 0u)
      << r.out;
  EXPECT_NE(r.out.find(" 12 "), std::string::npos) << "Size(KB) is the block's total: " << r.out;
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"--block-layout", "8K,4K", "-s", "4K"},
        std::vector<std::string>{"--block-layout", "8K,4K", "-f", "2"},
        std::vector<std::string>{"--block-layout", "8K,,4K"},
        std::vector<std::string>{"--block-layout", "8K,0"},
        std::vector<std::string>{"--block-layout", "8K", "--sweep", "4K:8K"}}) {
    std::vector<std::string> args = {"copy", "--backend", "sim", "-t", "host_to_device_ce", "-i", "1"};
    args.insert(args.end(), bad.begin(), bad.end());
    RunResult e = run_tool(args);
    EXPECT_EQ(e.exit_code, 2) << bad[1] << ": " << e.err;
    EXPECT_NE(e.err.find("--block-layout"), std::string::npos) << e.err;
  }
}

TEST(SimCopy, SeveralCasesInOrderWithBlankLineBetween) {
  RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t",
                          "device_to_host_ce", "-s", "4K", "-n", "4", "-i", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const size_t a = r.out.find("[[ host_to_device_ce ]]");
  const size_t b = r.out.find("\n\n[[ device_to_host_ce ]]");
  EXPECT_NE(a, std::string::npos);
  EXPECT_NE(b, std::string::npos);
  EXPECT_LT(a, b);
}

TEST(QuickModeE2E, EveryCombinationPrintsItsCase) {
  struct Row {
    const char *model, *iodirect, *sdma, *title;
  } rows[] = {
      {"gqa", "false", "false", "all_host_to_all_device_ce_multi_stream"},
      {"gqa", "true", "false", "all_odirect_host_to_all_device_ce_multi_stream"},
      {"gqa", "false", "true", "all_host_to_all_device_ffts_direct_h2d"},
      {"gqa", "true", "true", "all_odirect_host_to_all_device_ffts_direct_h2d"},
      {"mla", "false", "false", "one_share_host_to_all_device_ce_multi_stream"},
      {"mla", "true", "false", "one_share_host_to_all_device_ce_multi_stream"},
      {"mla", "false", "true", "one_share_host_to_all_device_ffts_direct_h2d"},
      {"mla", "true", "true", "one_share_host_to_all_device_ffts_direct_h2d"},
  };
  for (const Row& q : rows) {
    RunResult r = run_tool({"--backend", "sim", "--model-type", q.model, "--iodirect", q.iodirect,
                            "--sdma", q.sdma, "-s", "16K", "-n", "16", "-i", "3", "-d", "2",
                            "--validate"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("[[ " + std::string(q.title) + " ]] ", 0), 0u) << r.out;
    EXPECT_NE(r.out.find("[validation] " + std::string(q.title) + " PASS"), std::string::npos);
  }
}

TEST(QuickModeE2E, SameAsTheCopyCommand) {
  JsonRun quick = run_json({"--model-type", "gqa", "--iodirect", "false", "--sdma", "false",
                            "--backend", "sim", "-s", "16K", "-n", "32", "-i", "2", "-d", "2"});
  JsonRun copy = run_json({"copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s", "16K",
                           "-n", "32", "-i", "2", "-d", "2", "--backend", "sim"});
  ASSERT_EQ(quick.exit_code, 0) << quick.err;
  ASSERT_EQ(copy.exit_code, 0) << copy.err;
  json q = quick.result("all_host_to_all_device_ce_multi_stream");
  json c = copy.result("all_host_to_all_device_ce_multi_stream");
  for (const char* key : {"from", "to", "method", "block_bytes", "count"}) EXPECT_EQ(q[key], c[key]) << key;
  EXPECT_EQ(q["count"], 64);
}

TEST(SimBackend, EnvironmentVariableChoosesTheBackend) {
  RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"},
                         {{"DEV_SANDBOX_BACKEND", "sim"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("sim::host::0"), std::string::npos);
}

namespace {

// Starts a long fork run and waits until its d children are up and copying.
int start_long_fork_run(const std::string& tag, int devices) {
  const std::string out = ::testing::TempDir() + tag + ".out", err = ::testing::TempDir() + tag + ".err";
  const int pid = start_tool({"copy", "--backend", "sim", "-t", "one_share_host_to_all_device_ce_multi_stream",
                              "-s", "64K", "-n", "16", "-i", "1000000", "-d", std::to_string(devices)},
                             out, err);
  wait_children_busy(pid, static_cast<size_t>(devices));
  return pid;
}

}  // namespace

TEST(ForkCleanup, KilledChildIsReportedAndNothingIsLeft) {
  const auto before = our_shm_entries();
  const int pid = start_long_fork_run("killed", 3);
  auto kids = child_pids(pid);
  ASSERT_EQ(kids.size(), 3u);
  kill(kids[1], SIGKILL);
  const int code = wait_tool(pid);
  EXPECT_EQ(code, 1);
  const std::string err = slurp(::testing::TempDir() + "killed.err");
  EXPECT_NE(err.find("killed by signal 9"), std::string::npos) << err;
  EXPECT_NE(err.find("device "), std::string::npos) << err;
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_EQ(our_shm_entries(), before);
}

TEST(ForkCleanup, CtrlCStopsEverythingAndNothingIsLeft) {
  const auto before = our_shm_entries();
  const int pid = start_long_fork_run("sigint", 2);
  auto kids = child_pids(pid);
  ASSERT_EQ(kids.size(), 2u);
  kill(pid, SIGINT);
  const int code = wait_tool(pid);
  EXPECT_EQ(code, 130);
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_EQ(our_shm_entries(), before);
  EXPECT_NE(slurp(::testing::TempDir() + "sigint.err").find("interrupted"), std::string::npos);
}

TEST(ForkCleanup, CtrlCDuringAThreadCase) {
  const std::string out = ::testing::TempDir() + "threads.out", err = ::testing::TempDir() + "threads.err";
  const int pid = start_tool({"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce", "-s", "64K",
                              "-n", "16", "-i", "1000000", "-d", "3"},
                             out, err);
  auto kids = wait_children_busy(pid, 1);
  ASSERT_EQ(kids.size(), 1u);  // the runtime lives in one child, threads inside it
  kill(pid, SIGINT);
  EXPECT_EQ(wait_tool(pid), 130);
  EXPECT_NE(kill(kids[0], 0), 0);
}

TEST(Cli, BackendBeforeOrAfterTheSubCommand) {
  for (auto args : {std::vector<std::string>{"--backend", "sim", "copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"},
                    std::vector<std::string>{"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1", "--backend", "sim"}}) {
    RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("sim::host::0"), std::string::npos);
  }
}

TEST(Cli, DoctorReportsBackendsAndHost) {
  RunResult r = run_tool({"doctor"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* s : {"dev-sandbox ", "backend sim: loaded", "libaio", "io_uring", "CPUs", "NUMA",
                        "MemAvailable", "/dev/shm", "RLIMIT_MEMLOCK", "transparent hugepages"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << "\n" << r.out;
}

// The duplex case: every card's H2D and D2H bytes checked after every pass
// (--validate each: each direction's destination cleared before the passes it
// runs in, so a direction skipped in the together pass fails), --duplex-ratio
// moving the D2H bytes only, nothing left behind.
TEST(SimDuplex, RatioMovesTheD2HBytesAndBothDirectionsValidate) {
  const char* name = "all_host_to_all_device_duplex_ce_multi_stream";
  for (const char* ratio : {"1", "0.25", "2"}) {
    SCOPED_TRACE(ratio);
    const auto before = our_shm_entries();
    JsonRun r = run_json({"copy", "--backend", "sim", "-t", name, "-s", "64K", "-n", "4", "-i", "2", "-d", "2",
                          "--duplex-ratio", ratio, "--validate", "each"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["validate"], "each");
    const json& dx = res["duplex"];
    EXPECT_EQ(dx["ratio"].get<double>(), std::stod(ratio));
    EXPECT_EQ(dx["h2d"]["bytes"], 2u * 65536u * 4u);
    EXPECT_EQ(dx["d2h"]["bytes"].get<double>(), 2.0 * 65536 * 4 * std::stod(ratio));
    EXPECT_EQ(res["copies_per_iteration"], 2 * 4 * 2);
    EXPECT_EQ(without_run_lines(r.err), "");
    EXPECT_EQ(our_shm_entries(), before);
  }
  JsonRun end = run_json({"copy", "--backend", "sim", "-t", name, "-s", "1000", "-n", "3", "-f", "2", "-i", "2",
                          "-d", "3", "--duplex-ratio", "0.5", "--validate"});
  ASSERT_EQ(end.exit_code, 0) << end.err;
  EXPECT_EQ(end.result(name)["validated"], true);
  EXPECT_EQ(end.result(name)["duplex"]["d2h"]["bytes"], 3u * 500u * 3u * 2u);
}

// The family: O_DIRECT-style host buffers, and one shared region (every card reads
// its one H2D source and writes its own part of its D2H side: a card writing
// another's part, or all the same one, fails the check of that part). Every pass
// checked, nothing left behind.
TEST(SimDuplex, TheFamilyValidatesEveryPassAndLeavesNothing) {
  struct Want {
    const char* name;
    const char* from;
  };
  const Want cases[] = {{"all_host_to_all_device_duplex_ce_multi_stream", "sim::host::all"},
                        {"all_odirect_host_to_all_device_duplex_ce_multi_stream", "sim::odirect_mmap::all"},
                        {"one_share_host_to_all_device_duplex_ce_multi_stream", "sim::shm::0"}};
  for (const Want& w : cases) {
    SCOPED_TRACE(w.name);
    const auto before = our_shm_entries();
    // 6000-byte blocks: the shared region's parts are not whole pages.
    JsonRun r = run_json({"copy", "--backend", "sim", "-t", w.name, "-s", "6000", "-n", "4", "-i", "2", "-d", "3",
                          "--duplex-ratio", "0.5", "--validate", "each"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json res = r.result(w.name);
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["from"], w.from);
    EXPECT_EQ(res["to"], "sim::device::all");
    EXPECT_EQ(res["method"], "CE-MS-FORK");
    EXPECT_EQ(res["duplex"]["h2d"]["bytes"], 3u * 6000u * 4u);
    EXPECT_EQ(res["duplex"]["d2h"]["bytes"], 3u * 3000u * 4u);
    EXPECT_EQ(without_run_lines(r.err), "");
    EXPECT_EQ(our_shm_entries(), before);
  }
}

// --block-layout: every fragment of the D2H block is floor(size x R), each still
// its own copy; a fragment scaled under a byte is refused.
TEST(SimDuplex, BlockLayoutScalesEveryFragment) {
  const char* name = "all_host_to_all_device_duplex_ce_multi_stream";
  JsonRun r = run_json({"copy", "--backend", "sim", "-t", name, "--block-layout", "128K,16K,32K", "-n", "4", "-i",
                        "2", "-d", "2", "--duplex-ratio", "0.5", "--validate", "each"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = r.result(name);
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(res["duplex"]["h2d"]["block_bytes"], 176u * 1024u);
  EXPECT_EQ(res["duplex"]["d2h"]["block_bytes"], 88u * 1024u);
  EXPECT_EQ(res["duplex"]["d2h"]["bytes"], 2u * 4u * 88u * 1024u);
  EXPECT_EQ(res["copies_per_iteration"], 2 * 4 * 3 * 2);  // each fragment its own copy, both ways
  RunResult tiny = run_tool({"copy", "--backend", "sim", "-t", name, "--block-layout", "4K,1", "-n", "2", "-d", "2",
                             "--duplex-ratio", "0.5"});
  EXPECT_EQ(tiny.exit_code, 2);
  EXPECT_EQ(without_run_lines(tiny.err),
            "dev-sandbox: error: option --duplex-ratio 0.5: the D2H fragment of a --block-layout size x ratio is under "
            "1 byte\n");
  RunResult spread = run_tool({"copy", "--backend", "sim", "-t", "one_share_host_to_all_device_duplex_ce_multi_stream",
                               "-s", "4K", "-n", "2", "-d", "2", "--shm-numa-nodes", "0"});
  EXPECT_EQ(spread.exit_code, 2);
  EXPECT_NE(spread.err.find("dev-sandbox: error: option --shm-numa-nodes: the duplex cases do not spread their "
                            "shared region\n"),
            std::string::npos)
      << spread.err;
  EXPECT_EQ(spread.out, "");
}

TEST(SimDuplex, BadRatioIsRefusedInOneLine) {
  const char* name = "all_host_to_all_device_duplex_ce_multi_stream";
  for (const char* bad : {"0", "-1", "abc", "nan", "inf", "65", "1x", "", " 1", "1e400"}) {
    SCOPED_TRACE(bad);
    RunResult r = run_tool({"copy", "--backend", "sim", "-t", name, "-s", "4K", "-n", "2", "-d", "2",
                            "--duplex-ratio", bad});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(without_run_lines(r.err), "dev-sandbox: error: option --duplex-ratio got '" + std::string(bad) +
                                            "': accepts a number above 0 and at most 64 (D2H bytes per H2D byte)\n");
    EXPECT_EQ(r.out, "");
  }
  RunResult tiny = run_tool({"copy", "--backend", "sim", "-t", name, "-s", "4K", "-n", "2", "-d", "2",
                             "--duplex-ratio", "0.0001"});
  EXPECT_EQ(tiny.exit_code, 2);
  EXPECT_EQ(without_run_lines(tiny.err),
            "dev-sandbox: error: option --duplex-ratio 0.0001: the D2H block of -s x ratio is under 1 byte\n");
  RunResult gate = run_tool({"copy", "--backend", "sim", "-t", name, "-s", "4K", "-n", "2", "-d", "2",
                             "--stream-start-gate", "on"});
  EXPECT_EQ(gate.exit_code, 2);
  EXPECT_EQ(without_run_lines(gate.err),
            "dev-sandbox: error: option --stream-start-gate on: the duplex cases do not hold their streams\n");
}
