// --validate each against a copy that really delivers wrong bytes: the corrupt
// shim (tests/shims/corrupt_shim.c, LD_PRELOAD) flips one byte of, or skips, the
// N-th sim memcpy of the block size in a process. Plain --validate reads the
// destinations once after the run, so a later iteration hides a bad one; each
// checks every iteration (docs/measurement.md, "Validation").
//
// Counting the block-size memcpys of one single-device run (one process; -n 4,
// --warmup 2, loop iteration k from 0 with the warm-up, block b from 0):
//   device_to_host_ce: 4 to fill the device source, then 4 per iteration (the
//     destination is host memory: clearing and checking it copy nothing), so the
//     copy of (k, b) is the (4 + 4k + b + 1)-th, with plain --validate or each;
//   host_to_device_ce with each: the device destination is cleared and read back
//     through copy_sync, 4 + 4 + 4 per iteration, so (k, b) is the (12k + 4 + b + 1)-th;
//     with plain --validate: the (4k + b + 1)-th.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

constexpr int kBlock = 12288;  // -s 12K: no other memcpy of the tool has this size

std::map<std::string, std::string> shim(int nth, bool skip = false, int offset = 0) {
  return {{"LD_PRELOAD", DS_CORRUPT_SHIM},
          {"DS_SHIM_MEMCPY_SIZE", std::to_string(kBlock)},
          {"DS_SHIM_MEMCPY_NTH", std::to_string(nth)},
          {"DS_SHIM_MEMCPY_SKIP", skip ? "1" : "0"},
          {"DS_SHIM_OFFSET", std::to_string(offset)}};
}

std::vector<std::string> copy_args(const std::string& name, const std::string& validate) {
  std::vector<std::string> v = {"copy", "--backend", "sim", "-t", name, "-s", "12K", "-n", "4", "-i", "4"};
  if (validate == "end") v.push_back("--validate");
  if (validate == "each") v.insert(v.end(), {"--validate", "each"});
  return v;
}

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// The shim did what it was asked (else a green run proves nothing).
void expect_shim_fired(const RunResult& r, const std::string& what) {
  EXPECT_TRUE(contains(r.err, "corrupt_shim: ")) << "the shim never fired:\n" << r.err;
  EXPECT_TRUE(contains(r.err, what)) << r.err;
}

}  // namespace

// One corrupted copy in measured iteration 1 (loop iteration 3), block 2, byte 100.
TEST(ValidateEach, CatchesOneCorruptedCopyNamingIterationAndBlock) {
  const auto r = run_tool(copy_args("device_to_host_ce", "each"), shim(4 + 4 * 3 + 2 + 1, false, 100));
  expect_shim_fired(r, "corrupted memcpy 19");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed: case device_to_host_ce device 0 iteration 1 block 2 "
                              "first differing offset 100"))
      << r.err;
  EXPECT_FALSE(contains(r.out, "PASS")) << r.out;
}

// The same corruption under plain --validate: iterations 2 and 3 copy the block
// again, so the one check after the run passes. This is why `each` exists.
TEST(ValidateEach, PlainValidateMissesACopyALaterIterationRewrote) {
  JsonRun r = run_json(copy_args("device_to_host_ce", "end"), shim(4 + 4 * 3 + 2 + 1, false, 100));
  expect_shim_fired(r, "corrupted memcpy 19");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = r.result("device_to_host_ce");
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(res["validate"], "end");
}

// The mutation issue 12 found: a copy that does not happen. The destination in
// device memory is cleared through the backend before every iteration, so the
// skipped block still holds the inverse pattern: offset 0 differs.
TEST(ValidateEach, CatchesASkippedCopyIntoDeviceMemory) {
  const auto r = run_tool(copy_args("host_to_device_ce", "each"), shim(12 * 3 + 4 + 1 + 1, true));
  expect_shim_fired(r, "skipped memcpy 42");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed: case host_to_device_ce device 0 iteration 1 block 1 "
                              "first differing offset 0"))
      << r.err;

  const auto plain = run_tool(copy_args("host_to_device_ce", "end"), shim(4 * 3 + 1 + 1, true));
  expect_shim_fired(plain, "skipped memcpy 14");
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "[validation] host_to_device_ce PASS")) << plain.out;
}

// A corrupted warm-up copy is caught too, and said to be in the warm-up.
TEST(ValidateEach, NamesAWarmupIteration) {
  const auto r = run_tool(copy_args("device_to_host_ce", "each"), shim(4 + 4 * 1 + 3 + 1, false, 5));
  expect_shim_fired(r, "corrupted memcpy 12");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "device 0 warm-up iteration 1 block 3 first differing offset 5")) << r.err;
}

// trans: one combination on one device (a forked child; its count starts at 0).
TEST(ValidateEach, TransNamesTheCombination) {
  const auto r = run_tool({"trans", "--backend", "sim", "-t", "D2H", "-H", "pinned", "-M", "ce", "-s", "12K", "-n",
                           "4", "-i", "4", "-d", "1", "--validate", "each"},
                          shim(4 + 4 * 3 + 0 + 1, false, 7));
  expect_shim_fired(r, "corrupted memcpy 17");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed: case d2h_pinned_normal_ce device 0 iteration 1 block 0 "
                              "first differing offset 7"))
      << r.err;
}

// Clean runs: a fork case on 3 devices, a thread case, quick mode and trans pass
// with each, say so in JSON, and still report their stages (times not asserted).
TEST(ValidateEach, CleanRunsPassAndSaySo) {
  const std::vector<std::vector<std::string>> runs = {
      {"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce_multi_stream", "-s", "4K", "-n", "8", "-i", "3",
       "-d", "3", "--validate", "each"},
      {"copy", "--backend", "sim", "-t", "one_device_to_all_device_ce", "-s", "4K", "-n", "8", "-i", "3", "-d", "3",
       "--validate=each"},
      {"--backend", "sim", "--model-type", "gqa", "--iodirect", "true", "--sdma", "true", "-s", "4K", "-n", "4", "-f",
       "3", "-i", "3", "-d", "2", "--validate", "each"},
      {"trans", "--backend", "sim", "-t", "H2D", "-M", "memcpy", "-M", "ms_2", "-s", "4096", "-n", "8", "-i", "3", "-d",
       "2", "--validate", "each"},
  };
  for (const auto& args : runs) {
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << args[4] << "\n" << r.err;
    ASSERT_FALSE(r.names().empty()) << r.out;
    for (const json& res : r.doc["results"]) {
      EXPECT_EQ(res["validated"], true) << res["name"];
      EXPECT_EQ(res["validate"], "each") << res["name"];
      expect_full_row(res);
      EXPECT_TRUE(res["wall_us"].contains("avg")) << res.dump();
    }
  }
}

// Which was done is in the result; without --validate both are null.
TEST(ValidateEach, JsonSaysEndOrEach) {
  JsonRun off = run_json(copy_args("host_to_device_ce", ""));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  EXPECT_TRUE(off.result("host_to_device_ce")["validated"].is_null());
  EXPECT_TRUE(off.result("host_to_device_ce")["validate"].is_null());
  for (const char* end : {"--validate", "--validate=end"}) {
    auto args = copy_args("host_to_device_ce", "");
    args.push_back(end);
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.result("host_to_device_ce")["validate"], "end") << end;
  }
}

// A bare --validate before another option still takes no value; anything but
// end or each after it is exit 2 naming the option and what it accepts.
TEST(ValidateEach, OptionValues) {
  const auto plain_first = run_tool({"copy", "--validate", "--backend", "sim", "-t", "host_to_device_ce", "-s", "4K",
                                     "-n", "2", "-i", "2"});
  EXPECT_EQ(plain_first.exit_code, 0) << plain_first.err;
  EXPECT_TRUE(contains(plain_first.out, "[validation] host_to_device_ce PASS")) << plain_first.out;
  const auto quick = run_tool({"--validate", "each", "--backend", "sim", "--model-type", "mla", "--iodirect",
                               "false", "--sdma", "false", "-s", "4K", "-n", "2", "-i", "2", "-d", "2"});
  EXPECT_EQ(quick.exit_code, 0) << quick.err;
  EXPECT_TRUE(contains(quick.out, "[validation] one_share_host_to_all_device_ce_multi_stream PASS")) << quick.out;

  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"copy", "--backend", "sim", "-t", "host_to_device_ce", "--validate=every"},
        std::vector<std::string>{"copy", "--backend", "sim", "-t", "host_to_device_ce", "--validate", "once"},
        std::vector<std::string>{"copy", "--backend", "sim", "-t", "host_to_device_ce", "--validate="},
        std::vector<std::string>{"trans", "--backend", "sim", "--validate=true"},
        std::vector<std::string>{"aio", "--create-workspace", "--workspace", "/tmp/ds-validate-never-made", "--validate=all"}}) {
    const auto r = run_tool(bad);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << "\n" << r.err;
    EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error: option --validate got '").size(), 1u) << r.err;
    EXPECT_TRUE(contains(r.err, "each")) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}
