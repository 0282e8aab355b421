// copy --block-table / --host-block-table on sim: every case places each block at
// the slot its side's table names and validates it there; the result says the
// tables (seed and pool); bad tables and what does not combine are one line, exit 2.
// Which slots the copies used, per method, is checked through the doubles' call logs
// (test_cuda_backend.cc, test_ascend_backend.cc: CudaBlockTable, AscendBlockTable).
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::vector<std::string> sim_cases() {
  const RunResult r = run_tool({"copy", "--backend", "sim", "--list"});
  std::vector<std::string> names;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);  // the title
  while (std::getline(in, line)) {
    const std::vector<std::string> w = split_ws(line);
    if (!w.empty()) names.push_back(w[0]);
  }
  return names;
}


// The device addresses (`key`=) of every call of `call` in a cuda double's call log,
// in order, as slots of `block` bytes from the lowest of calls [from, from + n).
std::vector<uint64_t> relative_slots(const std::string& log, const std::string& call, const std::string& key,
                                     size_t from, size_t n, uint64_t block) {
  std::vector<uint64_t> addr;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(" " + call + " ") == std::string::npos) continue;
    const size_t at = line.find(" " + key + "=");
    if (at != std::string::npos) addr.push_back(std::stoull(line.substr(at + key.size() + 2), nullptr, 16));
  }
  if (addr.size() < from + n) return {};
  const std::vector<uint64_t> part(addr.begin() + static_cast<long>(from), addr.begin() + static_cast<long>(from + n));
  const uint64_t base = *std::min_element(part.begin(), part.end());
  std::vector<uint64_t> slots;
  for (uint64_t a : part) slots.push_back((a - base) / block);
  return slots;
}

}  // namespace

// Every case, odd fragments over two cards, the device side paged and the host side
// contiguous or paged too: each iteration's every chunk validated at its slot.
TEST(CopyBlockTable, EveryCaseValidatesAtTheTablesSlots) {
  const std::vector<std::string> names = sim_cases();
  ASSERT_GT(names.size(), 20u);
  for (const std::string& n : names)
    for (bool host : {false, true}) {
      SCOPED_TRACE(n + (host ? " --host-block-table" : ""));
      std::vector<std::string> args = {"copy", "--backend", "sim", "-t", n, "-s", "5000", "-f", "3", "-n", "10",
                                       "-d", "2", "-i", "2", "--warmup", "1", "--validate", "each",
                                       "--block-table", "random:5"};
      if (host) args.insert(args.end(), {"--host-block-table", "random:2", "--host-pool-blocks", "11"});
      JsonRun r = run_json(args);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const json res = r.result(n);
      EXPECT_EQ(res["validated"], true);
      EXPECT_EQ(res["validate"], "each");
      const json& t = res["block_table"];
      EXPECT_EQ(t["device"]["kind"], "random");
      EXPECT_EQ(t["device"]["seed"], 5);
      EXPECT_EQ(t["device"]["pool_blocks"], 40);  // 4 x the 10 blocks
      EXPECT_EQ(t["device"]["blocks"], 10);
      if (host) {
        EXPECT_EQ(t["host"]["seed"], 2);
        EXPECT_EQ(t["host"]["pool_blocks"], 11);
      } else {
        EXPECT_TRUE(t["host"].is_null()) << t.dump();
      }
    }
}

// A block layout and an engine layout (ucm: a block's layers are its tasks, one slot
// each block), and a FILE table: validated at their slots; the copies per iteration
// stay the request's.
TEST(CopyBlockTable, LayoutsAndFileTablesValidate) {
  TempFile table("ds-copy-table");
  { std::ofstream(table.path()) << "# dumped\n5\n0\n\n3\n"; }
  JsonRun r = run_json({"copy", "--backend", "sim", "-t", "host_to_device_ce_multi_stream", "--block-layout",
                        "16K,4K,8K", "-n", "3", "-d", "1", "-i", "2", "--validate", "each", "--block-table",
                        table.path(), "--pool-blocks", "6"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.result("host_to_device_ce_multi_stream")["copies_per_iteration"], 9);
  EXPECT_EQ(r.result("host_to_device_ce_multi_stream")["block_table"]["device"]["file"], table.path());
  for (const char* layout : {"ucm", "vllm-flash"}) {
    SCOPED_TRACE(layout);
    JsonRun m = run_json({"copy", "--backend", "sim", "-t", "device_to_host_batch_ce", "--model", "Qwen3-32B", "--tp",
                          "8", "--input-len", "512", "--kv-layout", layout, "-d", "1", "-i", "1", "--validate",
                          "each", "--block-table", "random:9", "--host-block-table", "random"});
    ASSERT_EQ(m.exit_code, 0) << m.err;
    const json res = m.result("device_to_host_batch_ce");
    EXPECT_EQ(res["validated"], true);
    EXPECT_EQ(res["block_table"]["device"]["blocks"], 4);  // 512 tokens in blocks of 128
    EXPECT_EQ(res["block_table"]["host"]["table"], "random:1");
  }
}

// The text result's line, with the seed and the pool that make it repeatable.
TEST(CopyBlockTable, TheResultSaysTheTables) {
  const RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "4K", "-n", "10", "-d",
                                "1", "-i", "2", "--block-table", "random:7", "--pool-blocks", "12"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "\n  Block table: device random:7, 10 blocks in a pool of 12 slots; host contiguous "
                              "per block\n"))
      << r.out;
  const RunResult plain = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "4K", "-n", "10",
                                    "-d", "1", "-i", "2"});
  EXPECT_FALSE(contains(plain.out, "Block table")) << plain.out;
}

// The dry run: the tables, and an equivalent command that places every block the same.
TEST(CopyBlockTable, TheDryRunSaysTheTables) {
  const RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "--model", "Qwen3-32B", "--tp",
                                "8", "--input-len", "512", "--kv-layout", "vllm-flash", "--block-table", "random",
                                "--host-block-table", "sequential", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, " -n 4 -d 8 -i 128 --block-table random:1 --pool-blocks 16 --host-block-table "
                              "sequential --host-pool-blocks 16\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "\nBlock table: device random:1, 4 blocks in a pool of 16 slots; host sequential, 4 "
                              "blocks in a pool of 16 slots\n"))
      << r.out;
}

// A copy skipped in a paged pool is caught at its slot (the corrupt shim skips the
// 43rd 12 KiB memcpy: iteration 1's block 2; test_validate_each.cc counts them).
TEST(CopyBlockTable, ASkippedCopyIsCaughtAtItsSlot) {
  const auto r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "12K", "-n", "4", "-i", "4",
                           "--validate", "each", "--block-table", "random:7"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM},
                           {"DS_SHIM_MEMCPY_SIZE", "12288"},
                           {"DS_SHIM_MEMCPY_NTH", "43"},
                           {"DS_SHIM_MEMCPY_SKIP", "1"},
                           {"DS_SHIM_OFFSET", "0"}});
  EXPECT_TRUE(contains(r.err, "skipped memcpy 43")) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed: case host_to_device_ce device 0 iteration 1 block 2 "
                              "first differing offset 0"))
      << r.err;
}

TEST(CopyBlockTable, BadTablesAndCombinationsAreOneLineExit2) {
  TempFile table("ds-copy-table");
  const std::string t = table.path();
  struct Bad {
    std::string text;
    std::vector<std::string> args;
    std::string line;
  } cases[] = {
      {"1\n1\n", {"--block-table", t}, "--block-table " + t + " line 2: slot 1 is named twice (first on line 1): two blocks cannot share a slot"},
      {"0\n9\n", {"--block-table", t, "--pool-blocks", "9"}, "--block-table " + t + " line 2: slot 9 is outside the pool of 9 slots (raise --pool-blocks)"},
      {"0\n", {"--block-table", t}, "--block-table " + t + ": 1 slots for 2 blocks (one line per block of the request)"},
      {"3\n3\n", {"--host-block-table", t}, "--host-block-table " + t + " line 2: slot 3 is named twice (first on line 1): two blocks cannot share a slot"},
      {"0\n8\n", {"--host-block-table", t}, "--host-block-table " + t + " line 2: slot 8 is outside the pool of 8 slots (raise --host-pool-blocks)"},
      {"", {"--block-table", "random:x"}, "option --block-table got 'random:x': random's seed is a number (random:7)"},
      {"", {"--host-block-table", "/no/such/table"}, "option --host-block-table got '/no/such/table': not sequential, random[:SEED] or a readable file"},
      {"", {"--block-table", "random", "--pool-blocks", "1"}, "option --pool-blocks 1: the pool holds fewer slots than the 2 blocks of the request"},
      {"", {"--host-block-table", "random", "--host-pool-blocks", "1"}, "option --host-pool-blocks 1: the pool holds fewer slots than the 2 blocks of the request"},
      {"", {"--pool-blocks", "8"}, "option --pool-blocks sizes a --block-table's pool; give --block-table too"},
      {"", {"--host-pool-blocks", "8"}, "option --host-pool-blocks sizes a --host-block-table's pool; give --host-block-table too"},
      // --sweep: each size's pool (a FILE's slots at a lowered count: ASweepKeepsAFilesPool).
      {"", {"--block-table", "random", "--pool-blocks", "1099511627776", "--sweep", "4K:16M"}, "option --sweep at 16M (1 block): the pool's bytes overflows 64 bits"},
  };
  for (const Bad& b : cases) {
    { std::ofstream(t) << b.text; }
    std::vector<std::string> args = {"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "4K", "-n", "2"};
    args.insert(args.end(), b.args.begin(), b.args.end());
    if (std::find(b.args.begin(), b.args.end(), "--sweep") != b.args.end()) args.erase(args.begin() + 5, args.begin() + 7);
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << b.line << "\n" << r.err;
    EXPECT_EQ(r.err, "dev-sandbox: error: " + b.line + "\n") << b.line;
  }
  // load and offload: the host side is the staging buffers.
  for (const char* cmd : {"load", "offload"}) {
    const auto r = run_tool({cmd, "--backend", "sim", "--workspace", "/tmp", "-s", "4K", "-n", "2",
                             "--host-block-table", "random"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "dev-sandbox: error: option --host-block-table: " + std::string(cmd) +
                         "'s host side is its staging buffers, each one block as the store moves it, not a pool to "
                         "page; copy takes it\n");
  }
}

// --sweep with a FILE table: where the sweep lowers -n, its first n lines in the pool
// the first size validated them in (an engine's slot ids do not shrink with the
// count: slot 7 stays in the pool of 8 at 8K's 1 block), on either side; each size
// validated at its slots.
TEST(CopyBlockTable, ASweepKeepsAFilesPool) {
  TempFile table("ds-copy-table");
  { std::ofstream(table.path()) << "7\n0\n"; }
  for (const std::string side : {"device", "host"}) {
    const std::string option = side == "device" ? "--block-table" : "--host-block-table";
    JsonRun r = run_json({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-n", "2", "-i", "1", "--validate",
                          "each", option, table.path(), "--sweep", "4K:8K"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.doc["results"].size(), 2u) << r.out;
    for (size_t i = 0; i < 2; ++i) {
      const json& x = r.doc["results"][i];
      EXPECT_EQ(x["validated"], true) << i;
      const json& t = x["block_table"][side];
      EXPECT_EQ(t["kind"], "file") << x.dump();
      EXPECT_EQ(t["blocks"], i == 0 ? 2 : 1) << x.dump();
      EXPECT_EQ(t["pool_blocks"], 8) << side << ": the first size's pool at every size";
    }
  }
}

// --sweep with a duplex case: every size's host memory (both directions' regions, or a
// table's pools) is checked before the first size runs, and a size that does not fit
// is refused naming it, exit 1, with nothing measured. The limit here is RLIMIT_MEMLOCK
// (1 MiB, without CAP_IPC_LOCK): the sizes up to 512K (8K with a 64-slot host pool)
// lock 1 MiB at most, the last one 2 MiB.
TEST(CopyBlockTable, ADuplexSweepIsCheckedAtEverySizeFirst) {
  const std::string refusal = "memory locking refused for all_host_to_all_device_duplex_ce_multi_stream: it locks "
                              "2.00 MiB per process but RLIMIT_MEMLOCK is 1.00 MiB; raise it with `ulimit -l "
                              "unlimited`; lower -s, -n, -d or --duplex-ratio\n";
  struct Case {
    std::vector<std::string> args;
    std::string at;
  } cases[] = {
      {{"--sweep", "4K:1M"}, "1M"},
      {{"--host-block-table", "random", "--host-pool-blocks", "64", "--sweep", "4K:16K"}, "16K"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = {"copy", "--backend", "sim", "-t", "all_host_to_all_device_duplex_ce_multi_stream",
                                     "-d", "1", "-i", "1", "--warmup", "0", "-n", "2"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    RunOptions o;
    o.memlock_limit = 1 << 20;
    o.drop_ipc_lock = true;
    const RunResult r = run_tool_opts(args, o);
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "\ndev-sandbox: error: option --sweep at " + c.at + " (1 block): " + refusal)) << r.err;
    EXPECT_FALSE(contains(r.err, "will allocate")) << "a size ran before the refusal: " << r.err;
    EXPECT_EQ(r.out, "") << "nothing measured";
  }
}

// --sweep with a block table: each size's blocks at the slots a run of that size
// alone puts them (the table made for its count, the same seed: the double's call
// log, against a run of that size alone), each validated at its slots, the result
// saying each size's table and pool.
TEST(CopyBlockTable, ASweepPlacesEachSizeAtItsTablesSlots) {
  TempFile log("ds-sweep-log"), alone("ds-sweep-alone");
  const std::map<std::string, std::string> env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}};
  auto with_log = [&](const TempFile& f) {
    std::map<std::string, std::string> e = env;
    e["DS_CUDA_DOUBLE_LOG"] = f.path();
    return e;
  };
  const std::vector<std::string> base = {"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-d", "1", "-i", "1",
                                         "--warmup", "1", "--validate", "each", "--block-table", "random:7"};
  std::vector<std::string> sweep = base;
  sweep.insert(sweep.end(), {"-n", "8", "--sweep", "4K:8K"});
  JsonRun r = run_json(sweep, with_log(log));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(r.doc["results"].size(), 2u) << r.out;
  for (size_t i = 0; i < 2; ++i) {
    const json& x = r.doc["results"][i];
    EXPECT_EQ(x["validated"], true) << i;
    const json& t = x["block_table"]["device"];
    EXPECT_EQ(t["seed"], 7) << x.dump();
    EXPECT_EQ(t["blocks"], i == 0 ? 8 : 4) << x.dump();
    EXPECT_EQ(t["pool_blocks"], i == 0 ? 32 : 16) << "4 x each size's blocks";
  }
  std::vector<std::string> at8k = base;
  at8k.insert(at8k.end(), {"-n", "4", "-s", "8K"});
  ASSERT_EQ(run_tool(at8k, with_log(alone)).exit_code, 0);
  // 2 iterations of 8 copies at 4K, then 2 of 4 at 8K; the 8K run alone: 2 of 4.
  const std::vector<uint64_t> swept = relative_slots(log.text(), "cuMemcpyHtoDAsync_v2", "dst", 16, 8, 8192);
  EXPECT_EQ(swept, relative_slots(alone.text(), "cuMemcpyHtoDAsync_v2", "dst", 0, 8, 8192));
  EXPECT_NE(swept, (std::vector<uint64_t>{0, 1, 2, 3, 0, 1, 2, 3})) << "at the table's slots, not the blocks' index";
}
