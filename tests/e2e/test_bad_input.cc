// Every bad input is one clear line and exit 2; run failures exit 1 (docs/measurement.md).
#include <algorithm>
#include <gtest/gtest.h>

#include <cstdio>

#include "cli_harness.h"

using namespace dstest;

namespace {

struct Bad {
  std::vector<std::string> args;
  const char* mentions;  // the stderr line names this
};

std::vector<std::string> base(std::vector<std::string> extra) {
  std::vector<std::string> v = {"copy", "--backend", "sim", "-t", "host_to_device_ce", "-i", "1"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

void expect_usage_error(const Bad& b) {
  RunResult r = run_tool(b.args);
  std::string cmd;
  for (const auto& a : b.args) cmd += a + " ";
  EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
  EXPECT_NE(r.err.find(b.mentions), std::string::npos) << cmd << "\n" << r.err;
  EXPECT_EQ(r.out, "") << cmd;
  // One line (usage listings may follow the first line only for case lists).
  EXPECT_EQ(r.err.rfind("dev-sandbox: error: ", 0), 0u) << cmd << "\n" << r.err;
}

}  // namespace

// The SM cases, one copy a launch or the gather kernel, are cuda's: on sim each is
// one line naming why (exit 2), and --list leaves them out.
TEST(BadInput, SmCasesOnSimSaySoInOneLine) {
  for (const char* name : {"host_to_device_sm", "host_to_device_sm_gather", "device_to_host_sm_gather"}) {
    RunResult r = run_tool({"copy", "--backend", "sim", "-t", name, "-s", "4097", "-f", "7"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("dev-sandbox: error: case " + std::string(name) +
                              " cannot run on sim: SM copy kernels need the cuda backend; `dev-sandbox copy --list` "
                              "shows the ",
                          0),
              0u)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  RunResult list = run_tool({"copy", "--backend", "sim", "--list"});
  ASSERT_EQ(list.exit_code, 0) << list.err;
  EXPECT_EQ(list.out.find("_sm"), std::string::npos) << list.out;
}

TEST(BadInput, OptionsAndValues) {
  const Bad cases[] = {
      {base({"--bogus"}), "--bogus"},
      {base({"-s"}), "-s"},
      {base({"-n", "abc"}), "-n"},
      {base({"-n", "-1"}), "-n"},
      {base({"-n", "0"}), "-n"},
      {{"copy", "--backend", "sim", "-t", "host_to_device_ce", "-i", "0"}, "-i"},
      {base({"-d", "0"}), "-d"},
      {base({"-s", "0"}), "-s"},
      {base({"-s", "16Q"}), "16Q"},
      {base({"-s", "1.5M"}), "-s"},
      {base({"--streams", "0"}), "--streams"},
      {base({"--warmup", "x"}), "--warmup"},
      {base({"-f", "-2"}), "-f"},
      {base({"-s", "8589934591G", "-n", "8"}), "overflows"},
      {{"copy", "--backend", "bogus", "-t", "host_to_device_ce"}, "--backend"},
      // Counts beyond what an int holds are refused, never wrapped.
      {{"copy", "--backend", "sim", "-t", "host_to_device_ce", "-i", "4294967296"}, "-i"},
      {base({"--streams", "4294967296"}), "--streams"},
      {base({"--warmup", "4294967295"}), "--warmup"},
      {base({"-d", "4294967298"}), "-d"},
      {base({"-f", "99999999999"}), "-f"},
      // The sum of the buffers overflows although each product fits.
      {base({"-s", "8G", "-n", "1073741824", "-d", "1"}), "overflows"},
  };
  for (const Bad& b : cases) expect_usage_error(b);
}

// load: its own options, and the block options as load takes them.
TEST(BadInput, Load) {
  const Bad cases[] = {
      {{"load", "--backend", "sim", "-s", "4K"}, "--workspace"},
      {{"load", "--workspace", "/tmp/x", "--engine", "psync"}, "--engine"},
      {{"load", "--workspace", "/tmp/x", "--sdma", "yes"}, "--sdma"},
      {{"load", "--workspace", "/tmp/x", "--iodepth", "0"}, "--iodepth"},
      {{"load", "--workspace", "/tmp/x", "--staging", "99999"}, "--staging"},
      {{"load", "--workspace", "/tmp/x", "-s", "2G"}, "1G"},
      {{"load", "--workspace", "/tmp/x", "-d", "0"}, "-d"},
      {{"load", "--workspace", "/tmp/x", "--block-layout", "16K", "-s", "4K"}, "-s"},
      {{"load", "--workspace", "/tmp/x", "--model", "Qwen3-32B", "-n", "4"}, "-n"},
      {{"load", "--workspace", "/tmp/x", "--model", "Qwen3-32B", "--layerwise"}, "unknown option --layerwise for load"},
      {{"load", "--workspace", "/tmp/x", "--tp", "2"}, "--model"},
      {{"load", "--workspace", "/tmp/x", "--workspace", "/tmp/x/"}, "twice"},
      {{"load", "--workspace", "/tmp/x", "--format", "xml"}, "--format"},
      {{"load", "--backend", "sim", "--create-workspace", "--workspace", "/tmp/x", "-d", "9999"}, "-d"},
      {{"load", "--backend", "sim", "--create-workspace", "--workspace", "/tmp/ds-load-bad", "-d", "9", "-s", "4K", "-n", "1"}, "sees 8 devices"},
  };
  for (const Bad& b : cases) expect_usage_error(b);
}

// offload: load's options and refusals in its own words, and the share rule of one
// file set (each card at least one block), word for word.
TEST(BadInput, Offload) {
  const Bad cases[] = {
      {{"offload", "--backend", "sim", "-s", "4K"}, "--workspace"},
      {{"offload", "--workspace", "/tmp/x", "--engine", "psync"}, "--engine"},
      {{"offload", "--workspace", "/tmp/x", "--sdma", "yes"}, "option --sdma got 'yes': accepts true|false"},
      {{"offload", "--workspace", "/tmp/x", "--iodepth", "0"}, "--iodepth"},
      {{"offload", "--workspace", "/tmp/x", "--staging", "99999"}, "--staging"},
      {{"offload", "--workspace", "/tmp/x", "-s", "2G"},
       "one block file would hold 2147483648 bytes, over the 1G of one write: lower -s (or --input-len/--block-size "
       "with --model)"},
      {{"offload", "--workspace", "/tmp/x", "-d", "0"}, "-d"},
      {{"offload", "--workspace", "/tmp/x", "--model", "Qwen3-32B", "-n", "4"}, "option --model sets the blocks; drop -n"},
      {{"offload", "--workspace", "/tmp/x", "--model", "Qwen3-32B", "--layerwise"},
       "unknown option --layerwise for offload"},
      {{"offload", "--workspace", "/tmp/x", "--tp", "2"}, "option --tp needs --model NAME|PATH"},
      {{"offload", "--workspace", "/tmp/x", "--dry-run"}, "--model"},
      {{"offload", "--workspace", "/tmp/x", "--format", "xml"}, "--format"},
      {{"offload", "--workspace", "/tmp/x", "--keep", "yes"}, "yes"},
      {{"offload", "--workspace", "/tmp/x", "--sweep", "4K:2G"}, "over the 1G of one write"},
      {{"offload", "--workspace", "/tmp/x", "-s", "64K", "-n", "2", "-d", "3", "--shared"},
       "dev-sandbox: error: offload --shared: 2 block files cannot give each of the 3 cards its share (card c "
       "writes blocks c, c+d, ...); raise -n or lower -d\n"},
      {{"offload", "--workspace", "/tmp/x", "--model", "DeepSeek-V3", "--input-len", "128", "-d", "2"},
       "dev-sandbox: error: offload --model DeepSeek-V3 (one latent on every card): 1 block file cannot give each "
       "of the 2 cards its share (card c writes blocks c, c+d, ...); raise --input-len or lower -d\n"},
      // -d from --tp: the refusal says so.
      {{"offload", "--workspace", "/tmp/x", "--model", "DeepSeek-V3", "--tp", "8", "--input-len", "512"},
       "dev-sandbox: error: offload --model DeepSeek-V3 (one latent on every card): 4 block files cannot give each "
       "of the 8 cards its share (card c writes blocks c, c+d, ...); raise --input-len or lower -d (--tp set it to "
       "8)\n"},
      {{"offload", "--backend", "sim", "--create-workspace", "--workspace", "/tmp/ds-offload-bad", "-d", "9", "-s",
        "4K", "-n", "1"},
       "sees 8 devices"},
  };
  for (const Bad& b : cases) expect_usage_error(b);
  // load reads the one file set on every card: no share to refuse.
  const RunResult r = run_tool({"load", "--workspace", "/tmp/x", "--model", "DeepSeek-V3", "--input-len", "128", "-d", "2",
                                "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(BadInput, CasesAndDevices) {
  const Bad cases[] = {
      {{"copy", "--backend", "sim", "-t", "no_such_case"}, "no_such_case"},
      {{"copy", "--backend", "sim", "-t", "host_to_device_sm"}, "host_to_device_sm"},
      {{"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce", "-d", "9"}, "9"},
  };
  for (const Bad& b : cases) expect_usage_error(b);
  // The unknown case: one line, the closest name, where the list is; the list is
  // what the backend offers, a case a line; -d names both numbers.
  RunResult r = run_tool({"copy", "--backend", "sim", "-t", "no_such_case"});
  EXPECT_NE(r.err.find("unknown case 'no_such_case'; `dev-sandbox copy --list` shows the"), std::string::npos) << r.err;
  r = run_tool({"copy", "--backend", "sim", "-t", "host_to_devce_ce"});
  EXPECT_NE(r.err.find("unknown case 'host_to_devce_ce' (did you mean host_to_device_ce?)"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find("\\n"), std::string::npos) << r.err;
  r = run_tool({"copy", "--backend", "sim", "--list"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\n  host_to_device_ce "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("host_to_device_sm"), std::string::npos);  // not offered on sim
  r = run_tool({"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce", "-d", "9"},
               {{"DEV_SANDBOX_SIM_DEVICES", "8"}});
  EXPECT_NE(r.err.find("-d got 9"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("sees 8 devices"), std::string::npos) << r.err;
}

// A typo in an option, a sub-command or a repeated option: one line in our words,
// with the closest name; --version.
TEST(BadInput, TyposGetTheClosestNameAndRepeatsAreNamed) {
  const struct {
    std::vector<std::string> args;
    const char* says;
  } cases[] = {
      {{"copy", "-t", "host_to_device_ce", "--valdate"},
       "unknown option --valdate for copy (did you mean --validate?); `dev-sandbox copy --help` lists them"},
      {{"cpy", "-t", "host_to_device_ce"}, "unknown sub-command 'cpy' (did you mean copy?)"},
      {{"lod"}, "unknown sub-command 'lod' (did you mean load?)"},
      {{"ofload"}, "unknown sub-command 'ofload' (did you mean offload?); the sub-commands are copy, trans, aio, load, "
                   "offload, tune, run and doctor"},
      {{"aio", "--workspace", "/nonexistent/ws", "--iodepth", "4", "--iodepth", "8"},
       "option --iodepth was given 2 times; it takes one value, give it once"},
      {{"copy", "-t", "host_to_device_ce", "-i", "2", "extra"},
       "unexpected argument 'extra' for copy: every option takes at most one value"},
  };
  for (const auto& c : cases) {
    const RunResult r = run_tool(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(std::string("dev-sandbox: error: ") + c.says), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // The long words people type for the short options that have none (and aio's names):
  // the option meant, before an unrelated one a few edits away (--sise is 2 from --list).
  const struct {
    std::vector<std::string> args;
    const char* word;
    const char* sub;
    const char* meant;
  } words[] = {
      {{"copy", "-t", "host_to_device_ce", "--sise", "1M"}, "--sise", "copy", "-s"},
      {{"copy", "-t", "host_to_device_ce", "--size=1M"}, "--size", "copy", "-s"},
      {{"copy", "-t", "host_to_device_ce", "--iterations", "4"}, "--iterations", "copy", "-i"},
      {{"copy", "-t", "host_to_device_ce", "--iteratons", "4"}, "--iteratons", "copy", "-i"},
      {{"copy", "-t", "host_to_device_ce", "--iters", "4"}, "--iters", "copy", "-i"},
      {{"copy", "-t", "host_to_device_ce", "--devices", "2"}, "--devices", "copy", "-d"},
      {{"copy", "-t", "host_to_device_ce", "--blocks", "4"}, "--blocks", "copy", "-n"},
      {{"copy", "--case", "host_to_device_ce"}, "--case", "copy", "-t"},
      {{"--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "--iters", "4"}, "--iters", "copy", "-i"},
      {{"trans", "--direction", "H2D"}, "--direction", "trans", "-t"},
      {{"load", "--workspace", "/tmp", "--iterations", "2"}, "--iterations", "load", "-i"},
      {{"offload", "--workspace", "/tmp", "--blocks", "2"}, "--blocks", "offload", "-n"},
      {{"aio", "--workspace", "/tmp", "--size", "1M"}, "--size", "aio", "--io-size"},
      {{"copy", "-t", "host_to_device_ce", "--num", "4"}, "--num", "copy", "--numa"},  // a real option is closer
  };
  for (const auto& w : words) {
    const RunResult r = run_tool(w.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, std::string("dev-sandbox: error: unknown option ") + w.word + " for " + w.sub + " (did you mean " +
                         w.meant + "?); `dev-sandbox " + w.sub + " --help` lists them\n");
  }
  // trans's -t is a direction: --case there is no word of it.
  const RunResult trans_case = run_tool({"trans", "--case", "H2D"});
  EXPECT_EQ(trans_case.err,
            "dev-sandbox: error: unknown option --case for trans; `dev-sandbox trans --help` lists them\n");
  const RunResult v = run_tool({"--version"});
  EXPECT_EQ(v.exit_code, 0);
  EXPECT_EQ(v.out, std::string("dev-sandbox ") + DS_VERSION_TEXT + "\n");
}

TEST(BadInput, QuickMode) {
  const Bad cases[] = {
      {{"--model-type", "gqa", "--iodirect", "false"}, "--sdma"},
      {{"--model-type", "mha", "--iodirect", "false", "--sdma", "false"}, "--model-type"},
      {{"--model-type", "gqa", "--iodirect", "maybe", "--sdma", "false"}, "--iodirect"},
      {{"--model-type", "gqa", "--iodirect", "false", "--sdma", "1"}, "--sdma"},
      {{"--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "-t", "host_to_device_ce"}, "-t"},
  };
  for (const Bad& b : cases) expect_usage_error(b);
}

TEST(BadInput, BareCopyPrintsUsage) {
  RunResult r = run_tool({"copy"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("-t"), std::string::npos);
  r = run_tool({});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--model-type"), std::string::npos);
}

TEST(BadInput, HelpIsSuccess) {
  RunResult r = run_tool({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("copy"), std::string::npos);
  EXPECT_NE(r.out.find("--model-type"), std::string::npos);
}

TEST(RunFailure, TooMuchMemoryIsRefusedUpFront) {
  RunResult r = run_tool({"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce_multi_stream",
                          "-s", "1G", "-n", "64", "-d", "8", "-i", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("not enough memory"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("MemAvailable"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lower -s, -n or -d"), std::string::npos) << r.err;
  EXPECT_EQ(r.out, "");
}

TEST(RunFailure, MemoryLockingRefusedNamesTheLimit) {
  RunOptions o;
  o.memlock_limit = 64 * 1024;
  o.drop_ipc_lock = true;
  RunResult r = run_tool_opts({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "1M", "-n", "16",
                          "-i", "1"},
                         o);
  if (r.exit_code == 126) GTEST_SKIP() << "cannot drop CAP_IPC_LOCK here";
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("RLIMIT_MEMLOCK"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ulimit -l"), std::string::npos) << r.err;
}

TEST(Cli, QuickModeWhenAnOptionValueIsACommandName) {
  const std::string path = "trans";  // relative: an --output value that reads like a sub-command
  RunResult r = run_tool({"--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "--backend", "sim",
                          "-s", "4K", "-n", "2", "-i", "1", "-d", "1", "--output", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(slurp(path).find("all_host_to_all_device_ce_multi_stream"), std::string::npos);
  std::remove(path.c_str());
}

TEST(BadInput, EnvironmentVariablesAreNamed) {
  RunResult r = run_tool({"copy", "-t", "host_to_device_ce", "-i", "1"}, {{"DEV_SANDBOX_BACKEND", "bogus"}});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("DEV_SANDBOX_BACKEND is 'bogus'"), std::string::npos) << r.err;
  r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-i", "1"}, {{"DEV_SANDBOX_SIM_DEVICES", "0"}});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("DEV_SANDBOX_SIM_DEVICES is '0'"), std::string::npos) << r.err;
}
