// What a run says about itself on stderr, exactly (issue 25 items 3 and 6): the
// backend line and why, doctor's auto pick and first command, the line before setup
// with what it allocates and about how long, the workspace refusal, the rows naming
// the disk, and `copy --model --dry-run` without the quick-mode selectors.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "disk_fixtures.h"
#include "json_checks.h"

using namespace dstest;
using namespace dstest::disk;
using nlohmann::json;

namespace {

// auto with neither vendor runtime to be found: DEV_SANDBOX_BACKEND unset, the
// libraries pointing at nothing.
std::map<std::string, std::string> no_runtimes() {
  return {{"DEV_SANDBOX_BACKEND", ""},
          {"DEV_SANDBOX_CUDA_LIB", "/nonexistent/libcuda.so.1"},
          {"DEV_SANDBOX_ACL_LIB", "/nonexistent/libascendcl.so"},
          {"DEV_SANDBOX_SIM_DEVICES", "2"}};
}

const std::vector<std::string> kSmallCopy = {"copy", "-t", "host_to_device_ce", "-s", "4K", "-n", "2", "-i", "1"};

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& more) {
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }

}  // namespace

TEST(RunLines, AutoFallingToSimSaysSoAndWhyOnTheFirstLine) {
  const RunResult r = run_tool(kSmallCopy, no_runtimes());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(first_line(r.err),
            "dev-sandbox: backend sim (auto: no ascend or cuda runtime found; see `dev-sandbox doctor`) -- CPU memcpy "
            "numbers, not an accelerator's");
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: backend ").size(), 1u) << r.err;
}

TEST(RunLines, AnExplicitChoiceIsNamedAsTyped) {
  RunResult r = run_tool(with(kSmallCopy, {"--backend", "sim"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(first_line(r.err), "dev-sandbox: backend sim (--backend sim) -- CPU memcpy numbers, not an accelerator's");
  r = run_tool(kSmallCopy, {{"DEV_SANDBOX_BACKEND", "sim"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(first_line(r.err),
            "dev-sandbox: backend sim (DEV_SANDBOX_BACKEND=sim) -- CPU memcpy numbers, not an accelerator's");
}

// Each command says what sim's numbers are in it; a request the backend refuses
// after the selection is still one line, with no backend line before it.
TEST(RunLines, EachCommandSaysWhatSimsNumbersAreAndARefusalStaysOneLine) {
  const std::string base = disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  RunResult r = run_tool({"aio", "--backend", "sim", "--workspace", base, "--io-size", "16K", "--io-number", "2",
                          "--epoch-number", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(first_line(r.err),
            "dev-sandbox: backend sim (--backend sim) -- the disk I/O is real; the host buffers are plain memory");
  r = run_tool({"load", "--backend", "sim", "--workspace", base, "-s", "16K", "-n", "2", "-i", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(first_line(r.err),
            "dev-sandbox: backend sim (--backend sim) -- its copies are CPU memcpy, not an accelerator's; the disk "
            "reads are real");
  r = run_tool({"--backend", "sim", "trans", "-t", "X2Y"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "dev-sandbox: error: option -t got 'X2Y': accepts H2D|D2H\n");
}

// Before setup: the MemoryNeeds' own figures. aio --io-size 64K --iodepth 4 over 8
// shards: 4 buffers of 64 KiB (256 KiB), 8 shards on disk (512 KiB); dump and load of
// 2 epochs each: 4 epochs moving 2 MiB.
TEST(RunLines, ThePlanBeforeSetupIsTheNeedsOwnFigures) {
  const std::string base = disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  RunResult r = run_tool({"aio", "--backend", "sim", "--workspace", base, "--io-size", "64K", "--io-number", "8",
                          "--iodepth", "4", "--epoch-number", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: aio will"),
            std::vector<std::string>{
                "dev-sandbox: aio will allocate host 256.00 KiB (/dev/shm: none), device none, disk 512.00 KiB; "
                "under a second (filling 256.00 KiB at a nominal 2 GiB/s, then 4 epochs moving 2.00 MiB at a "
                "nominal 1 GiB/s)"})
      << r.err;
  // copy: sources and destinations of 2 x 16 MiB (sim: the device's memory is host
  // memory), one 16 MiB staging fragment, the plan and records (bytes): 96 MiB and a
  // little; 2 warm-up and 4 measured iterations of 32 MiB each.
  r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "16M", "-n", "2", "-i", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: host_to_device_ce will"),
            std::vector<std::string>{
                "dev-sandbox: host_to_device_ce will allocate host 80.00 MiB (/dev/shm: none), device 1 x 32.00 MiB "
                "(host memory here, counted in host), disk none; under a second (filling 80.00 MiB at a nominal "
                "2 GiB/s, then 6 iterations moving 192.00 MiB at a nominal 4 GiB/s)"})
      << r.err;
  // Said before the setup it announces: ahead of the finished line.
  EXPECT_LT(r.err.find(" will allocate "), r.err.find("dev-sandbox: finished host_to_device_ce in ")) << r.err;
}

// A --workspace that does not exist is refused, naming the nearest existing parent
// and its disk, and nothing is made; --create-workspace makes it and removes it again.
// Several cases that plan the same (trans's combinations at one size, copy's -t
// list of one shape) are announced once; a case that plans otherwise gets its own.
TEST(RunLines, CasesThatPlanTheSameAreAnnouncedOnce) {
  RunResult r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "host_to_device_batch_ce", "-s",
                          "4K", "-n", "2", "-i", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto plans = lines_starting(r.err, "dev-sandbox: host_to_device_");
  ASSERT_EQ(plans.size(), 1u) << r.err;
  EXPECT_EQ(plans[0].rfind("dev-sandbox: host_to_device_ce will allocate host ", 0), 0u) << plans[0];
  r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "-t", "all_host_to_all_device_ce", "-s", "4K",
                "-n", "2", "-i", "1", "-d", "2"},
               {{"DEV_SANDBOX_SIM_DEVICES", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: host_to_device_ce will allocate ").size(), 1u) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: all_host_to_all_device_ce will allocate ").size(), 1u) << r.err;
  r = run_tool({"--backend", "sim", "trans", "-t", "H2D", "-s", "4K", "-n", "2", "-d", "2", "-i", "1"},
               {{"DEV_SANDBOX_SIM_DEVICES", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t announced = 0;
  for (const auto& line : lines_starting(r.err, "dev-sandbox: "))
    if (line.find(" will allocate ") != std::string::npos) ++announced;
  EXPECT_EQ(announced, 1u) << r.err;
}

TEST(RunLines, AMissingWorkspaceIsRefusedNamingItsNearestParent) {
  const std::string base = disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  // What the base is on, as the rows name it ("file::vda:ext4").
  const JsonRun probe = run_json({"aio", "--backend", "sim", "--workspace", base, "--io-size", "16K", "--io-number",
                                  "2", "--epoch-number", "1"});
  ASSERT_EQ(probe.exit_code, 0) << probe.err;
  const std::string on = probe.result("aio_dump")["to"].get<std::string>().substr(6);
  const std::string typo = base + "/" + unique_name("dat") + "/kv";
  const dstest::ScopedPath guard(typo.substr(0, typo.rfind('/')));
  for (const char* command : {"aio", "load"}) {
    SCOPED_TRACE(command);
    const RunResult r = run_tool({command, "--backend", "sim", "--workspace", typo});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, "dev-sandbox: error: option --workspace got '" + typo +
                         "': no such directory (the nearest existing parent is " + base + ", on " + on +
                         "); create it, or pass --create-workspace (made for this run and removed after it)\n");
    EXPECT_FALSE(exists(typo.substr(0, typo.rfind('/')))) << "nothing made";
  }
  const RunResult made = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", typo, "--io-size",
                                   "16K", "--io-number", "2", "--epoch-number", "1", "--validate"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  EXPECT_NE(made.out.find("[validation] aio_load PASS"), std::string::npos) << made.out;
  EXPECT_FALSE(exists(typo.substr(0, typo.rfind('/')))) << "what --create-workspace made is removed again";
}

// The rows name the disk and filesystem the files were on: the device whose counters
// the run read, and the filesystem the title names; mmap buffers are the host's own.
TEST(RunLines, AioAndLoadRowsNameTheDiskAndFilesystem) {
  const std::string base = disk_base();
  if (base.empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const JsonRun aio = run_json({"aio", "--backend", "sim", "--workspace", base, "--io-size", "16K", "--io-number",
                                "2", "--epoch-number", "1"});
  ASSERT_EQ(aio.exit_code, 0) << aio.err;
  const json dump = aio.result("aio_dump");
  const std::string brief = dump["brief"];
  const size_t open = brief.find(base + " (") + base.size() + 2;
  const std::string fs = brief.substr(open, brief.find(')', open) - open);
  const json& dev = dump["device_io"][0];
  const std::string disk = dev["device"].is_string() ? dev["device"].get<std::string>() + ":" : "";
  EXPECT_EQ(dump["to"], "file::" + disk + fs) << dump.dump();
  EXPECT_EQ(dump["from"], "host::mmap::0");
  const JsonRun load =
      run_json({"load", "--backend", "sim", "--workspace", base, "-s", "16K", "-n", "2", "-i", "1", "-d", "1"});
  ASSERT_EQ(load.exit_code, 0) << load.err;
  EXPECT_EQ(load.result("load")["from"], dump["to"]);
}

TEST(RunLines, DoctorSaysWhatAutoPicksAndAFirstCommandThatRuns) {
  const RunResult r = run_tool({"doctor"}, no_runtimes());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.out, "auto: "),
            std::vector<std::string>{"auto: picks sim (no ascend or cuda runtime found, 2 devices) -- CPU memcpy "
                                     "numbers, not an accelerator's; --backend or DEV_SANDBOX_BACKEND chooses another"})
      << r.out;
  const std::vector<std::string> first = lines_starting(r.out, "first command: ");
  ASSERT_EQ(first, std::vector<std::string>{
                       "first command: dev-sandbox copy -t host_to_device_ce -s 64M -n 4 -i 16 (one card, 256 MiB; "
                       "`dev-sandbox copy --list` shows every case)"})
      << r.out;
  // The suggestion runs as it is.
  const RunResult run = run_tool({"copy", "-t", "host_to_device_ce", "-s", "64M", "-n", "4", "-i", "16"}, no_runtimes());
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("[[ host_to_device_ce ]]"), std::string::npos) << run.out;
  // With DEV_SANDBOX_BACKEND set, doctor says that it overrides auto.
  auto env = no_runtimes();
  env["DEV_SANDBOX_BACKEND"] = "sim";
  const RunResult set = run_tool({"doctor"}, env);
  EXPECT_EQ(lines_starting(set.out, "auto: ").size(), 1u) << set.out;
  EXPECT_NE(set.out.find("; DEV_SANDBOX_BACKEND=sim overrides it for runs without --backend\n"), std::string::npos)
      << set.out;
}

// copy --model --dry-run sizes the blocks, which neither --iodirect nor --sdma
// changes: without them, one equivalent command per combination they leave open.
TEST(RunLines, ModelDryRunNeedsNoQuickModeSelectors) {
  const std::string tail = " --block-layout 256K,256K -n 2048 -d 1 -i 128";
  RunResult r = run_tool({"copy", "--model", "Qwen3-32B", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(lines_starting(r.out, "equivalent: "),
            (std::vector<std::string>{
                "equivalent: dev-sandbox copy -t all_host_to_all_device_ce_multi_stream" + tail,
                "equivalent: dev-sandbox copy -t all_host_to_all_device_ffts_direct_h2d" + tail,
                "equivalent: dev-sandbox copy -t all_odirect_host_to_all_device_ce_multi_stream" + tail,
                "equivalent: dev-sandbox copy -t all_odirect_host_to_all_device_ffts_direct_h2d" + tail}))
      << r.out;
  r = run_tool({"copy", "--model", "Qwen3-32B", "--sdma", "true", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.out, "equivalent: "),
            (std::vector<std::string>{
                "equivalent: dev-sandbox copy -t all_host_to_all_device_ffts_direct_h2d" + tail,
                "equivalent: dev-sandbox copy -t all_odirect_host_to_all_device_ffts_direct_h2d" + tail}))
      << r.out;
  // MLA: --iodirect makes no difference, so one command per --sdma.
  r = run_tool({"copy", "--model", "DeepSeek-V3", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto mla = lines_starting(r.out, "equivalent: ");
  ASSERT_EQ(mla.size(), 2u) << r.out;
  EXPECT_EQ(mla[0].rfind("equivalent: dev-sandbox copy -t one_share_host_to_all_device_ce_multi_stream ", 0), 0u);
  EXPECT_EQ(mla[1].rfind("equivalent: dev-sandbox copy -t one_share_host_to_all_device_ffts_direct_h2d ", 0), 0u);
  // Both given: the one case, as before.
  r = run_tool({"copy", "--model", "Qwen3-32B", "--iodirect", "false", "--sdma", "false", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(lines_starting(r.out, "equivalent: "),
            std::vector<std::string>{"equivalent: dev-sandbox copy -t all_host_to_all_device_ce_multi_stream" + tail});
  // A real run still needs both.
  r = run_tool({"copy", "--model", "Qwen3-32B", "--sdma", "true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "dev-sandbox: error: quick mode needs all of --model, --iodirect and --sdma; missing --iodirect\n");
}
