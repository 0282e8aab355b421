// `dev-sandbox aio` end to end: both engines and both host buffer types on a
// disk filesystem with --validate; tmpfs refused and --buffered; a full
// filesystem; Ctrl-C; bad options. Every run is a few MiB and a few epochs.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cli_harness.h"
#include "disk_fixtures.h"
#include "json_checks.h"
#include "memory/pattern.h"

namespace {

using namespace dstest::disk;
using dstest::expect_full_row;
using dstest::json;
using dstest::JsonRun;
using dstest::lines_starting;
using dstest::run_json;
using dstest::run_tool;

class AioEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!disk_base().empty()) remove_tree(disk_base());
  }
};
[[maybe_unused]] const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new AioEnv);

bool uring_unavailable(const dstest::RunResult& r) {
  return r.exit_code == 1 && contains(r.err, "io_uring_queue_init");
}

struct Combo {
  const char* engine;
  const char* io_type;
};

void PrintTo(const Combo& c, std::ostream* os) { *os << c.engine << "/" << c.io_type; }

class AioEndToEnd : public ::testing::TestWithParam<Combo> {};

TEST_P(AioEndToEnd, DumpsLoadsValidatesAndCleansUp) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const Combo c = GetParam();
  const std::string ws = disk_base() + "/" + unique_name("ws");  // the tool creates it
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", c.engine,
                        "--io-type", c.io_type, "--io-size", "16K", "--io-number", "24",
                        "--iodepth", "3", "--epoch-number", "3", "--validate"});
  if (std::string(c.engine) == "io_uring" && uring_unavailable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string method = std::string(c.engine) == "libaio" ? "LIBAIO"
                             : std::string(c.engine) == "psync" ? "PSYNC"
                                                                 : "IO_URING";
  // mmap buffers are the host's own memory (no backend's); alloc: the backend's pinned memory.
  const std::string host = std::string(c.io_type) == "mmap" ? "host::mmap::0" : "sim::host::0";
  json dump = r.result("aio_dump"), load = r.result("aio_load");
  EXPECT_EQ(dump["from"], host);
  EXPECT_EQ(dump.value("to", "").rfind("file::", 0), 0u) << dump["to"];
  EXPECT_EQ(load["from"], dump["to"]);
  EXPECT_EQ(load["to"], host);
  for (json* res : {&dump, &load}) {
    json& x = *res;
    EXPECT_EQ(x["method"], method);
    EXPECT_EQ(x["block_bytes"], 16384);
    EXPECT_EQ(x["count"], 24);
    EXPECT_EQ(x["time_label"], "IO") << "the measured stage is the I/O pass";
    expect_full_row(x);
    EXPECT_TRUE(contains(x.value("brief", ""), "O_DIRECT")) << x["brief"];
    EXPECT_EQ(x["validated"], true) << x["name"];
  }
  EXPECT_FALSE(exists(ws)) << "the workspace it created was left behind";
}

INSTANTIATE_TEST_SUITE_P(Aio, AioEndToEnd,
                         ::testing::Values(Combo{"libaio", "mmap"}, Combo{"libaio", "alloc"},
                                           Combo{"io_uring", "mmap"}, Combo{"io_uring", "alloc"},
                                           Combo{"psync", "mmap"}, Combo{"psync", "alloc"}),
                         [](const ::testing::TestParamInfo<Combo>& i) {
                           return std::string(i.param.engine) + "_" + i.param.io_type;
                         });

// Runs aio on a fresh disk workspace with `args` (after --workspace) and the corrupt
// shim flipping byte `offset` of the `nth` read (`env`: more shim settings); expects
// exit 1 with `said` on stderr right after the workspace's path, `landed` after it,
// `passed` validated before the failure, `failed` not, and the workspace gone.
void expect_corrupted_read_fails(const std::string& stem, const std::vector<std::string>& args, int nth, int offset,
                                 const std::string& said, const std::string& landed, const std::string& passed,
                                 const std::string& failed, std::map<std::string, std::string> env = {}) {
  const std::string ws = disk_base() + "/" + unique_name(stem);
  std::vector<std::string> cmd = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws};
  cmd.insert(cmd.end(), args.begin(), args.end());
  env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
  env["DS_SHIM_READ_NTH"] = std::to_string(nth);
  env["DS_SHIM_OFFSET"] = std::to_string(offset);
  const auto r = run_tool(cmd, env);
  EXPECT_TRUE(contains(r.err, "corrupt_shim: ") && contains(r.err, "corrupted read " + std::to_string(nth))) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed for " + said + " (" + ws + "/dev-sandbox-aio.")) << r.err;
  EXPECT_TRUE(contains(r.err, landed + " loaded bytes differ from what was dumped at offset " + std::to_string(offset)))
      << r.err;
  if (!passed.empty()) EXPECT_TRUE(contains(r.out, "[validation] " + passed + " PASS")) << r.out;
  EXPECT_FALSE(contains(r.out, failed + " PASS")) << r.out;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// One load that returns wrong bytes in a later epoch (the corrupt shim flips byte
// 123 of the 7th read io_getevents completes: with --iodepth 1 and 4 shards, epoch
// 2's shard 2) is caught as it lands, named by epoch, shard, file and offset.
TEST(AioEndToEnd, ValidateCatchesOneCorruptedReadInALaterEpoch) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  for (const char* validate : {"--validate", "--validate=each"}) {
    SCOPED_TRACE(validate);
    expect_corrupted_read_fails("corrupt", {"--io-size", "16K", "--io-number", "4", "--iodepth", "1",
                                            "--epoch-number", "3", validate},
                                7, 123, "aio_load epoch 2 of 3: shard 2", ".2)", "aio_dump", "aio_load");
  }
}

// A read the disk fails (EIO on the 6th completed read: epoch 2's second shard)
// ends the run with exit 1 naming the file and the offset; the workspace the run
// created is removed. (A read that never completes is the watchdog's: test_watchdog.cc.)
TEST(AioEndToEnd, AFailingReadNamesFileAndOffsetAndCleansUp) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("eio");
  const auto r = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "4",
                           "--iodepth", "1", "--epoch-number", "3"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "6"}, {"DS_SHIM_READ_ERROR", "5"}});
  EXPECT_TRUE(contains(r.err, "corrupt_shim: ") && contains(r.err, "failed read 6")) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, ws + "/dev-sandbox-aio.")) << "names the file: " << r.err;
  EXPECT_TRUE(contains(r.err, "at offset ")) << r.err;
  EXPECT_TRUE(contains(r.err, "Input/output error")) << r.err;
  const std::string said = dstest::without_run_lines(r.err);
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n') - 1, 1) << "one line besides the shim's: " << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// Writes and reads that come back short (the corrupt shim): a write of more than 4
// KiB writes its whole block with every byte from 6000 on flipped and answers 6000,
// a pread answers 6000 of what it read. Through O_DIRECT the rest cannot go on at
// 6000 (EINVAL): it goes on from 4096, writing or reading the tail again, so the
// files hold exactly what was dumped (every load and the read-backs check them, byte
// for byte). Each path its own: the dump's timed libaio writes (its 2nd write only),
// psync's timed pwrites (every one), the untimed writes of the shard files without a
// dump phase and of --validate each's clearing, and --validate each's read-back.
TEST(AioEndToEnd, ShortUnalignedTransfersGoOnAlignedAndTheFilesAreRight) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  struct Case {
    std::vector<std::string> args;
    std::map<std::string, std::string> env;
    std::string said, passed;
  } cases[] = {
      {{"--validate"}, {{"DS_SHIM_WRITE_SHORT", "6000"}, {"DS_SHIM_WRITE_SHORT_NTH", "2"}}, "short write 2", "aio_load"},
      {{"--engine", "psync", "--validate"}, {{"DS_SHIM_WRITE_SHORT", "6000"}}, "short write 1", "aio_load"},
      {{"--phases", "load", "--validate"}, {{"DS_SHIM_WRITE_SHORT", "6000"}}, "short write 1", "aio_load"},
      {{"--phases", "dump", "--validate", "each"}, {{"DS_SHIM_WRITE_SHORT", "6000"}}, "short write 1", "aio_dump"},
      {{"--phases", "dump", "--validate", "each"}, {{"DS_SHIM_PREAD_SHORT", "6000"}}, "short pread 1", "aio_dump"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args.front() + " " + c.args.back() + " " + c.env.begin()->first);
    const std::string ws = disk_base() + "/" + unique_name("short");
    std::vector<std::string> cmd = {"aio",        "--backend", "sim", "--create-workspace", "--workspace", ws,
                                    "--io-size",  "64K",       "--io-number", "4", "--iodepth", "1",
                                    "--epoch-number", "2"};
    cmd.insert(cmd.end(), c.args.begin(), c.args.end());
    std::map<std::string, std::string> env = c.env;
    env["LD_PRELOAD"] = DS_CORRUPT_SHIM;
    const auto r = run_tool(cmd, env);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "corrupt_shim: pid ") && contains(r.err, ": " + c.said + "\n")) << r.err;
    EXPECT_TRUE(contains(r.out, "[validation] " + c.passed + " PASS")) << r.out;
    EXPECT_FALSE(exists(ws));
  }
}

// A write or read that always comes back short below 4 KiB (100 bytes) makes no
// aligned progress: after 3 calls in a row the run ends, exit 1, one line naming the
// call, the file and the shard, nothing left behind; it does not loop.
TEST(AioEndToEnd, ATransferThatStaysShortBelowFourKiBEnds) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string tail = ": moved 100 bytes 3 times in a row, less than the 4096 bytes O_DIRECT moves at a time: no "
                           "progress";
  struct Case {
    std::vector<std::string> args;
    const char* knob;
    std::string line;  // after "dev-sandbox: error: ", the file's path cut at "<ws>/dev-sandbox-aio."
    std::string rest;  // after the pid
  } cases[] = {
      {{"--engine", "psync"}, "DS_SHIM_WRITE_SHORT", "dump epoch 1 of 2: write of shard 0 at offset 0 (65536 bytes)" +
       tail + " (WS/dev-sandbox-aio.", ".0 on "},
      {{"--phases", "load"}, "DS_SHIM_WRITE_SHORT", "pwrite(WS/dev-sandbox-aio.", ".0) at offset 0" + tail},
      {{"--validate"}, "DS_SHIM_PREAD_SHORT", "pread(WS/dev-sandbox-aio.", ".0) at offset 0" + tail},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.knob + std::string(" ") + c.args.front());
    const std::string ws = disk_base() + "/" + unique_name("stuck");
    std::vector<std::string> cmd = {"aio",        "--backend", "sim", "--create-workspace", "--workspace", ws,
                                    "--io-size",  "64K",       "--io-number", "4", "--iodepth", "1",
                                    "--epoch-number", "2"};
    cmd.insert(cmd.end(), c.args.begin(), c.args.end());
    const auto r = run_tool(cmd, {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {c.knob, "100"}});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    const std::vector<std::string> errors = lines_starting(r.err, "dev-sandbox: error: ");
    ASSERT_EQ(errors.size(), 1u) << r.err;
    std::string head = "dev-sandbox: error: " + c.line;
    head.replace(head.find("WS"), 2, ws);
    EXPECT_EQ(errors[0].rfind(head, 0), 0u) << errors[0] << "\nwanted: " << head;
    EXPECT_TRUE(contains(errors[0], c.rest)) << errors[0];
    EXPECT_FALSE(exists(ws)) << "left behind after the failure";
  }
}

// A shard file cut short at an unaligned size (the corrupt shim truncates it to 5000
// bytes just before its first read): through O_DIRECT the read comes back with the
// 5000 bytes there are, which it cannot go on from (an unaligned offset), so the end of
// the file is said as such, not retried from 4096 until it makes no progress: the
// timed read (libaio, psync), and --validate's read-back of the dump. Exit 1, one
// line with the file and the offset, nothing left behind.
TEST(AioEndToEnd, AReadAtAnUnalignedEndOfFileSaysTheFileEnds) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string read = "load epoch 1 of 1: read of shard 0 at offset 0 moved 5000 of 65536 bytes (the file ends at "
                           "offset 5000) (WS/dev-sandbox-aio.";
  struct Case {
    std::vector<std::string> args;
    std::string line;  // after "dev-sandbox: error: ", the file's path cut at "<ws>/dev-sandbox-aio."
    std::string rest;  // after the pid
  } cases[] = {
      {{"--phases", "load"}, read, ".0 on "},
      {{"--phases", "load", "--engine", "psync"}, read, ".0 on "},
      {{"--phases", "dump", "--validate"}, "validation failed for aio_dump: shard 0 (WS/dev-sandbox-aio.",
       ".0) ends at offset 5000 of 65536"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args.back());
    const std::string ws = disk_base() + "/" + unique_name("eof");
    std::vector<std::string> cmd = {"aio",       "--backend", "sim",         "--create-workspace", "--workspace", ws,
                                    "--io-size", "64K",       "--io-number", "1",    "--iodepth",  "1",
                                    "--epoch-number", "1"};
    cmd.insert(cmd.end(), c.args.begin(), c.args.end());
    const auto r = run_tool(cmd, {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_TRUNCATE", "5000"}});
    EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "corrupt_shim: pid ") && contains(r.err, " to 5000 bytes\n")) << r.err;
    const std::vector<std::string> errors = lines_starting(r.err, "dev-sandbox: error: ");
    ASSERT_EQ(errors.size(), 1u) << r.err;
    std::string head = "dev-sandbox: error: " + c.line;
    head.replace(head.find("WS"), 2, ws);
    EXPECT_EQ(errors[0].rfind(head, 0), 0u) << errors[0] << "\nwanted: " << head;
    EXPECT_TRUE(contains(errors[0], c.rest)) << errors[0];
    EXPECT_FALSE(exists(ws)) << "left behind after the failure";
  }
}

// --validate each on aio: the dump too is cleared before and read back after
// every epoch; both results say each.
TEST(AioEndToEnd, ValidateEachChecksEveryDumpEpoch) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("each");
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "6",
                        "--iodepth", "2", "--epoch-number", "3", "--validate", "each"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"aio_dump", "aio_load"}) {
    const json res = r.result(name);
    EXPECT_EQ(res["validated"], true) << name;
    EXPECT_EQ(res["validate"], "each") << name;
    expect_full_row(res);
  }
  JsonRun plain = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "2",
                            "--epoch-number", "1", "--validate"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_EQ(plain.result("aio_dump")["validate"], "end") << "the dump is read back once, after its epochs";
  EXPECT_EQ(plain.result("aio_load")["validate"], "each") << "every load is checked as it lands";
  EXPECT_FALSE(exists(ws));
}

// Sizes of the files a --keep run left in `ws` (then removed).
std::vector<long> kept_sizes(const std::string& ws) {
  std::vector<long> v;
  for (const auto& f : entries(ws)) {
    struct stat st;
    if (stat((ws + "/" + f).c_str(), &st) == 0) v.push_back(static_cast<long>(st.st_size));
  }
  remove_tree(ws);
  return v;
}

// --shards-per-file K without --model: --io-number files of K shards each, every
// shard its own I/O at offset shard x --io-size; Count is the I/Os (files x K),
// and both --validate and --validate each check every shard where it lies.
TEST(AioShards, SeveralShardsPerFileValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* validate : {"--validate", "--validate=each"}) {
    SCOPED_TRACE(validate);
    const std::string ws = disk_base() + "/" + unique_name("spf");
    JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "3",
                          "--shards-per-file", "4", "--iodepth", "5", "--epoch-number", "2", validate});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* name : {"aio_dump", "aio_load"}) {
      const json res = r.result(name);
      EXPECT_EQ(res["validated"], true) << name;
      EXPECT_EQ(res["block_bytes"], 16384) << name;
      EXPECT_EQ(res["count"], 12) << name;
      EXPECT_TRUE(contains(res.value("brief", ""), "3 files of 4 shards of 16.00 KiB (12 I/Os)")) << res["brief"];
      expect_full_row(res);
    }
    EXPECT_FALSE(exists(ws)) << "left behind";
  }
  // The store on disk: 3 files of 4 x 16 KiB.
  const std::string ws = disk_base() + "/" + unique_name("spf-keep");
  const auto r = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "3",
                           "--shards-per-file", "4", "--epoch-number", "1", "--keep"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(kept_sizes(ws), std::vector<long>(3, 4 * 16384));
}

// A corrupted load inside a multi-shard file names the shard, its file and its
// offset there: 2 files of 3 shards, --iodepth 1, the 11th read is epoch 2's
// shard 4 = file 1's second shard, at offset 16384.
TEST(AioShards, CorruptedReadNamesFileAndOffsetInsideAMultiShardFile) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("spf-corrupt");
  const std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K",
                                         "--io-number", "2", "--shards-per-file", "3", "--iodepth", "1",
                                         "--epoch-number", "2"};
  std::vector<std::string> validated = args;
  validated.push_back("--validate");
  auto r = run_tool(validated,
                    {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "11"}, {"DS_SHIM_OFFSET", "123"}});
  EXPECT_TRUE(contains(r.err, "corrupted read 11")) << r.err;
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "validation failed for aio_load epoch 2 of 2: shard 4 (" + ws + "/dev-sandbox-aio."))
      << r.err;
  EXPECT_TRUE(contains(r.err, ".1 at offset 16384) loaded bytes differ from what was dumped at offset 123 of the "
                              "shard (file offset 16507)"))
      << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
  // A failing read there: the same file and offset, exit 1.
  r = run_tool(args, {{"LD_PRELOAD", DS_CORRUPT_SHIM}, {"DS_SHIM_READ_NTH", "5"}, {"DS_SHIM_READ_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "read of shard 4 at offset 16384 (16384 bytes): Input/output error (" + ws +
                                  "/dev-sandbox-aio."))
      << r.err;
  EXPECT_TRUE(contains(r.err, ".1 on ")) << "names file 1: " << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// aio --model: UCM's store for one request. Qwen3-32B at TP 8: 1 kv head x 128 x
// 128 tokens x 2 B = 32K for K and for V, 64K per layer and block; 256 tokens = 2
// blocks = 2 files. --layerwise: 64 shards of 64K per file; else one of 64 x 64K = 4M.
TEST(AioModel, LayerwiseAndWholeBlockStoresValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  struct Store {
    bool layerwise;
    uint64_t shard_bytes, shards_per_file;
  } stores[] = {{true, 65536, 64}, {false, 4194304, 1}};
  for (const Store& st : stores) {
    SCOPED_TRACE(st.layerwise ? "layerwise" : "whole block");
    const std::string ws = disk_base() + "/" + unique_name("model");
    std::vector<std::string> args = {"aio",  "--backend", "sim",   "--create-workspace", "--workspace", ws, "--model", "Qwen3-32B",
                                     "--tp", "8",         "--input-len", "256", "--epoch-number", "2",
                                     "--validate"};
    if (st.layerwise) args.push_back("--layerwise");
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json& w = r.doc["workload"];
    EXPECT_EQ(w["blocks"], 2);
    EXPECT_EQ(w["layerwise"], st.layerwise);
    EXPECT_EQ(w["shards_per_file"], st.shards_per_file);
    EXPECT_EQ(w["shard_bytes"], st.shard_bytes);
    for (const char* name : {"aio_dump", "aio_load"}) {
      const json res = r.result(name);
      EXPECT_EQ(res["validated"], true) << name;
      EXPECT_EQ(res["block_bytes"], st.shard_bytes) << name;
      EXPECT_EQ(res["count"], 2 * st.shards_per_file) << name;
      EXPECT_TRUE(res["kv_load_ms"]["end_to_end"].is_number()) << res.dump();
    }
    EXPECT_FALSE(exists(ws)) << "left behind";
  }
  // Text: the workload line first, a KV line after each table; the files on disk.
  const std::string ws = disk_base() + "/" + unique_name("model-text");
  const auto r = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--model", "Qwen3-32B", "--tp", "8",
                           "--input-len", "256", "--layerwise", "--epoch-number", "1", "--keep"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("[[ workload ]] Qwen3-32B: GQA, 64 layers, bf16, TP 8, 256 tokens = 2 blocks of 128; ", 0), 0u)
      << r.out;
  const size_t dump = r.out.find("\n  KV dump per request (host memory -> disk): ");
  const size_t load = r.out.find("\n  KV load per request (disk -> host memory): ");
  ASSERT_NE(dump, std::string::npos) << r.out;
  ASSERT_NE(load, std::string::npos) << r.out;
  EXPECT_LT(r.out.find("[[ aio_dump ]]"), dump);
  EXPECT_LT(r.out.find("[[ aio_load ]]"), load);
  EXPECT_NE(r.out.find(" ms (IO avg; P50 ", dump), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ms end to end (GroupWall avg; P50 ", load), std::string::npos) << r.out;
  EXPECT_EQ(kept_sizes(ws), std::vector<long>(2, 64 * 65536));
}

// --dry-run: the sizing and the equivalent command, and nothing touched: the
// workspace is not created, the backend (one that cannot load) never opened.
TEST(AioModel, DryRunTouchesNoDiskAndNoDevice) {
  const std::string ws = "/tmp/" + unique_name("ds-aio-dry");
  const auto r = run_tool({"--backend", "cuda", "aio", "--create-workspace", "--workspace", ws, "--io-type", "alloc", "--model",
                           "DeepSeek-V3.2", "--input-len", "1K", "--layerwise", "--dry-run"},
                          {{"DEV_SANDBOX_CUDA_LIB", "/nonexistent/libcuda.so.1"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(dstest::without_run_lines(r.err), "");
  EXPECT_NE(r.out.find("[[ workload ]] DeepSeek-V3.2: DSA, 61 layers"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("shards per file       61 (--layerwise: one per layer) of align4096(180224) = 180224 B"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("equivalent: dev-sandbox --backend cuda aio --workspace " + ws +
                       " --io-size 180224 --io-number 8 --shards-per-file 61"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(exists(ws)) << "--dry-run created the workspace";
}

TEST(AioModel, BadInputExit2OneLine) {
  const std::string ws = "/tmp/" + unique_name("ds-aio-model-bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--model", "Qwen3-32B", "--io-size", "64K"}, "drop --io-size"},
      {{"--model", "Qwen3-32B", "--io-number", "4"}, "drop --io-number"},
      {{"--model", "Qwen3-32B", "--layerwise", "--shards-per-file", "2"}, "drop --shards-per-file"},
      {{"--model", "NoSuchModel"}, "NoSuchModel"},
      {{"--model", "Qwen3-32B", "--kv-dtype", "fp4"}, "--kv-dtype"},
      {{"--model", "Qwen3-32B", "--block-size", "64K"}, "over aio's 1G per I/O"},
      {{"--layerwise"}, "--layerwise needs --model"},
      {{"--tp", "2"}, "--tp needs --model"},
      {{"--dry-run"}, "--dry-run needs --model"},
      {{"--shards-per-file", "0"}, "--shards-per-file"},
      {{"--shards-per-file", "x"}, "--shards-per-file"},
      {{"--shards-per-file", "70000"}, "--shards-per-file"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws};
    args.insert(args.end(), c.first.begin(), c.first.end());
    const auto r = run_tool(args);
    std::string cmd;
    for (const auto& a : args) cmd += a + " ";
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.second)) << cmd << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd << "\n" << r.out;
  }
  EXPECT_FALSE(exists(ws)) << "a bad command line created the workspace";
}

TEST(AioEndToEnd, ExistingWorkspaceStaysAndKeepKeepsShards) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("existing");
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  auto r = run_tool({"aio", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "5",
                     "--epoch-number", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(exists(ws));
  EXPECT_TRUE(entries(ws).empty()) << "shard files left behind";
  r = run_tool({"aio", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "5",
                "--epoch-number", "1", "--keep"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto kept = entries(ws);
  EXPECT_EQ(kept.size(), 5u);
  for (const auto& f : kept) {
    struct stat st;
    ASSERT_EQ(stat((ws + "/" + f).c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 16384) << f;
  }
  remove_tree(ws);
}

TEST(AioEndToEnd, TmpfsIsRefusedNamingTheFilesystemAndBuffered) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string ws = "/dev/shm/" + unique_name("ds-aio-e2e");
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  const auto r = run_tool({"aio", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "4",
                           "--epoch-number", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "tmpfs")) << r.err;
  EXPECT_TRUE(contains(r.err, "O_DIRECT")) << r.err;
  EXPECT_TRUE(contains(r.err, "--buffered")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(ws));
}

TEST(AioEndToEnd, BufferedOnTmpfsRunsAndSaysSo) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string ws = "/dev/shm/" + unique_name("ds-aio-e2e");
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  JsonRun r = run_json({"aio", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "8",
                        "--epoch-number", "2", "--buffered", "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json dump = r.result("aio_dump"), load = r.result("aio_load");
  EXPECT_EQ(dump["method"], "LIBAIO+BUF");
  EXPECT_EQ(load["method"], "LIBAIO+BUF");
  EXPECT_EQ(dump["to"], "file::tmpfs");
  EXPECT_EQ(load["validated"], true);
  EXPECT_TRUE(contains(r.err, "buffered")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// A 4 MiB tmpfs mount: the 8 MiB dump cannot fit.
TEST(AioEndToEnd, FullFilesystemFailsAndRemovesWhatItWrote) {
  const SmallTmpfs fs;
  if (fs.dir.empty()) GTEST_SKIP() << fs.error;
  const std::string& mnt = fs.dir;
  const auto r = run_tool({"aio", "--create-workspace", "--workspace", mnt + "/ws", "--io-size", "1M", "--io-number",
                           "8", "--epoch-number", "2", "--buffered"});
  const auto left = entries(mnt);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(contains(r.err, "of 8 shards")) << r.err;  // how far it got
  EXPECT_TRUE(contains(r.err, "removed")) << r.err;
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left[0]);
}

// The same with several shards per file: each file reserves its K shards at once
// (4 files of 2 x 1 MiB on 4 MiB), and the error counts files of K shards.
TEST(AioShards, FullFilesystemCountsFilesOfShards) {
  const SmallTmpfs fs;
  if (fs.dir.empty()) GTEST_SKIP() << fs.error;
  const std::string& mnt = fs.dir;
  const auto r = run_tool({"aio", "--create-workspace", "--workspace", mnt + "/ws", "--io-size", "1M", "--io-number", "4",
                           "--shards-per-file", "2", "--epoch-number", "1", "--buffered"});
  const auto left = entries(mnt);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(contains(r.err, " of 4 files of 2 shards (")) << r.err;
  EXPECT_TRUE(contains(r.err, "of 8.00 MiB")) << r.err;
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left[0]);
}

// Ctrl-C in the middle of the epochs: exit 130, no shard file and no workspace left
// (with psync also: its threads stop and are joined, or the run would not end).
void ctrl_c_leaves_no_shard_files(const char* engine) {
  const std::string ws = disk_base() + "/" + unique_name("sigint");
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setpgid(0, 0);
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(DS_BINARY, DS_BINARY, "aio", "--create-workspace", "--workspace", ws.c_str(), "--engine", engine, "--io-size", "64K",
          "--io-number", "32", "--iodepth", "8", "--epoch-number", "1000000", nullptr);
    _exit(127);
  }
  dstest::track_started(pid);  // ended and reaped at the test's end if an assertion returns first
  // Wait until every shard file exists and the epochs are under way, then Ctrl-C.
  const bool running = dstest::wait_until([&] { return entries(ws).size() >= 32; });
  dstest::wait_busy(pid);
  kill(pid, SIGINT);
  int status = 0;
  const bool ended = dstest::wait_until([&] { return waitpid(pid, &status, WNOHANG) == pid; });
  if (!ended) {
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  dstest::forget_started(pid);
  if (!ended) {
    remove_tree(ws);
    FAIL() << "still running 60 s after SIGINT";
  }
  ASSERT_TRUE(running) << "the shard files never appeared";
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  EXPECT_FALSE(exists(ws)) << "left behind: " << entries(ws).size() << " entries";
  remove_tree(ws);
}

TEST(AioEndToEnd, CtrlCLeavesNoShardFiles) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  ctrl_c_leaves_no_shard_files("libaio");
}

TEST(AioPsync, CtrlCLeavesNoShardFiles) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  ctrl_c_leaves_no_shard_files("psync");
}

TEST(AioEndToEnd, UnusableWorkspaceIsARunError) {
  char tmpl[] = "/tmp/ds-aio-file-XXXXXX";
  const int fd = mkstemp(tmpl);
  ASSERT_GE(fd, 0);
  close(fd);
  auto r = run_tool({"aio", "--create-workspace", "--workspace", std::string(tmpl) + "/ws", "--io-number", "2",
                     "--epoch-number", "1"});
  unlink(tmpl);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "not a directory")) << r.err;
  r = run_tool({"aio", "--create-workspace", "--workspace", "/proc/ds-aio-no-such-dir", "--io-number", "2",
                "--epoch-number", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "cannot create workspace")) << r.err;
}

TEST(AioEndToEnd, TooMuchMemoryIsRefusedUpFront) {
  const std::string ws = "/tmp/" + unique_name("ds-aio-mem");
  // One 1 GiB buffer per I/O in flight: 1000 GiB.
  const auto r = run_tool({"aio", "--create-workspace", "--workspace", ws, "--io-size", "1G", "--io-number", "5000",
                           "--iodepth", "1000"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "MemAvailable")) << r.err;
  EXPECT_TRUE(contains(r.err, "--iodepth")) << r.err;
  EXPECT_FALSE(exists(ws));
}

// --engine psync: --iodepth threads, one pread/pwrite each at a time. With
// --validate each on a disk filesystem every dump epoch is read back, so a write a
// thread skipped or misplaced fails; the title says the depth is threads.
TEST(AioPsync, ValidateEachOnDiskSaysThreads) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("psync-each");
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", "psync", "--io-size", "16K",
                        "--io-number", "9", "--shards-per-file", "2", "--iodepth", "4", "--epoch-number", "3",
                        "--validate", "each"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"aio_dump", "aio_load"}) {
    const json res = r.result(name);
    EXPECT_EQ(res["method"], "PSYNC") << name;
    EXPECT_EQ(res["count"], 18) << name;
    EXPECT_EQ(res["validate"], "each") << name;
    EXPECT_TRUE(contains(res.value("brief", ""), "with psync, O_DIRECT, iodepth 4 (threads)")) << res["brief"];
    expect_full_row(res);
  }
  EXPECT_FALSE(exists(ws));
}

// --engine as a list (commas, or repeated): each engine its own run with its own
// files, in the order given, into one document; every file is gone at the end.
TEST(AioEngines, AListRunsEachInTurnIntoOneDocument) {
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("engines");
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", "psync,libaio", "--io-size", "16K",
                        "--io-number", "4", "--iodepth", "2", "--epoch-number", "2", "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), (std::vector<std::string>{"aio_dump", "aio_load", "aio_dump", "aio_load"}));
  const char* methods[] = {"PSYNC", "PSYNC", "LIBAIO", "LIBAIO"};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(r.doc["results"][i]["method"], methods[i]) << i;
    EXPECT_EQ(r.doc["results"][i]["validated"], true) << i;
  }
  EXPECT_FALSE(exists(ws));
  // Repeated, in text: one block per phase and engine, in order.
  const auto t = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", "libaio", "--engine",
                                "psync", "--io-size", "16K", "--io-number", "2", "--iodepth", "2", "--epoch-number",
                                "1"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  std::vector<std::string> titles;
  for (const std::string& l : lines_starting(t.out, "[[ ")) titles.push_back(l.substr(0, l.find(" ]]") + 3));
  EXPECT_EQ(titles, (std::vector<std::string>{"[[ aio_dump ]]", "[[ aio_load ]]", "[[ aio_dump ]]", "[[ aio_load ]]"}));
  EXPECT_TRUE(contains(t.out, "with libaio, O_DIRECT")) << t.out;
  EXPECT_TRUE(contains(t.out, "with psync, O_DIRECT")) << t.out;
  EXPECT_LT(t.out.find("with libaio, O_DIRECT"), t.out.find("with psync, O_DIRECT")) << t.out;
  EXPECT_FALSE(exists(ws));
}

TEST(AioEngines, ABadListIsOneLine) {
  const struct {
    std::vector<std::string> engines;
    std::string says;
  } cases[] = {
      {{"psync", "psync"}, "option --engine names psync twice: each engine once"},
      {{"libaio,io_uring,libaio"}, "option --engine names libaio twice: each engine once"},
      {{"psync,"}, "option --engine got 'psync,': an empty engine; accepts libaio, io_uring or psync, or a comma "
                   "list of them"},
      {{"psync,sync"}, "option --engine got 'sync': accepts libaio|io_uring|psync"},
  };
  for (const auto& c : cases) {
    // Small, so that a list wrongly accepted fails fast rather than measuring long.
    std::vector<std::string> args = {"aio", "--backend", "sim", "--workspace", "/tmp/ds-engines-never", "--io-size",
                                     "4K", "--io-number", "1", "--epoch-number", "1"};
    for (const std::string& e : c.engines) args.insert(args.end(), {"--engine", e});
    const auto r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << c.says;
    EXPECT_EQ(r.err, "dev-sandbox: error: " + c.says + "\n");
    EXPECT_FALSE(exists("/tmp/ds-engines-never"));
  }
}

// On tmpfs psync runs buffered with --buffered (Method PSYNC+BUF) and validates.
TEST(AioPsync, BufferedOnTmpfsValidates) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  for (const char* validate : {"--validate", "--validate=each"}) {
    const std::string ws = "/dev/shm/" + unique_name("ds-aio-psync");
    const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
    JsonRun r = run_json({"aio", "--create-workspace", "--workspace", ws, "--engine", "psync", "--io-size", "64K", "--io-number", "12",
                          "--iodepth", "5", "--epoch-number", "2", "--buffered", validate});
    ASSERT_EQ(r.exit_code, 0) << validate << "\n" << r.err;
    EXPECT_EQ(r.result("aio_dump")["method"], "PSYNC+BUF");
    EXPECT_EQ(r.result("aio_load")["method"], "PSYNC+BUF");
    EXPECT_EQ(r.result("aio_load")["validated"], true);
    EXPECT_FALSE(exists(ws));
  }
}

// A read the disk fails under psync (the shim fails the 6th pread: epoch 2's
// second shard with one thread) names the file and the offset, exit 1, cleaned up.
TEST(AioPsync, AFailingPreadNamesFileAndOffsetAndCleansUp) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("psync-eio");
  const auto r = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", "psync", "--io-size", "16K",
                           "--io-number", "4", "--iodepth", "1", "--epoch-number", "3"},
                          {{"LD_PRELOAD", DS_CORRUPT_SHIM},
                           {"DS_SHIM_PREAD", "1"},
                           {"DS_SHIM_READ_NTH", "6"},
                           {"DS_SHIM_READ_ERROR", "5"}});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "failed read 6")) << r.err;
  EXPECT_TRUE(contains(r.err, "aio_load") || contains(r.err, "load epoch 2 of 3")) << r.err;
  EXPECT_TRUE(contains(r.err, "read of shard 1 at offset 0 (16384 bytes): Input/output error")) << r.err;
  EXPECT_TRUE(contains(r.err, ws + "/dev-sandbox-aio.")) << r.err;
  EXPECT_FALSE(exists(ws)) << "left behind after the failure";
}

// A psync load that returns wrong bytes (the 7th pread, byte 123 flipped: epoch 2's
// shard 2 with one thread) is caught as it lands, named by epoch, shard and file.
TEST(AioPsync, ValidateCatchesOneCorruptedPread) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  // The shim counts the dump's read-back too (4 preads, inherited by the load's process).
  expect_corrupted_read_fails("psync-corrupt", {"--engine", "psync", "--io-size", "16K", "--io-number", "4",
                                                "--iodepth", "1", "--epoch-number", "3", "--validate"},
                              11, 123, "aio_load epoch 2 of 3: shard 2", ".2)", "", "aio_load",
                              {{"DS_SHIM_PREAD", "1"}});
}

// --workspace twice: files go round-robin by file (file i to directory i % 2), the
// title names both directories with their filesystem, and every kept file holds
// the shard the dump wrote for its global index (so a file in the wrong directory,
// or the directories swapped, fails). Both directories are created and removed.
TEST(AioWorkspaces, TwoDirectoriesRoundRobinValidateAndKeep) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* validate : {"--validate", "--validate=each"}) {
    SCOPED_TRACE(validate);
    const std::string a = disk_base() + "/" + unique_name("ws-a"), b = disk_base() + "/" + unique_name("ws-b");
    JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", a, "--create-workspace", "--workspace", b, "--io-size", "16K",
                          "--io-number", "5", "--iodepth", "2", "--epoch-number", "2", validate, "--keep"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* name : {"aio_dump", "aio_load"}) {
      const json res = r.result(name);
      EXPECT_EQ(res["validated"], true) << name;
      EXPECT_EQ(res["count"], 5) << name;
      const std::string brief = res.value("brief", "");
      EXPECT_TRUE(contains(brief, "files in " + a + " (") && contains(brief, "), " + b + " (")) << brief;
    }
    EXPECT_TRUE(contains(r.err, "kept 5 shard files in " + a + ", " + b)) << r.err;
    // Both on one filesystem, so one disk: one counter line with all the bytes.
    for (const char* name : {"aio_dump", "aio_load"}) {
      const json dev = r.result(name)["device_io"];
      ASSERT_EQ(dev.size(), 1u) << name << " " << dev;
      EXPECT_EQ(dev[0]["expected_bytes"], 5 * 16384 * 2) << name;
    }
    const std::vector<std::string> dirs = {a, b};
    const std::vector<size_t> want = {3, 2};
    std::vector<char> buf(16384);
    for (size_t w = 0; w < 2; ++w) {
      const auto names = entries(dirs[w]);
      EXPECT_EQ(names.size(), want[w]) << dirs[w];
      for (const std::string& n : names) {
        const size_t local = std::stoul(n.substr(n.rfind('.') + 1));
        const uint64_t shard = local * 2 + w;  // the global file (= shard) index
        const int fd = open((dirs[w] + "/" + n).c_str(), O_RDONLY);
        ASSERT_GE(fd, 0) << n;
        ASSERT_EQ(pread(fd, buf.data(), buf.size(), 0), 16384) << n;
        close(fd);
        EXPECT_EQ(ds::pattern_check(buf.data(), buf.size(), ds::pattern_key(0, shard)), -1)
            << dirs[w] << "/" << n << " should hold shard " << shard;
      }
      remove_tree(dirs[w]);
    }
  }
}

// The second of two workspaces cannot be made: exit 1 naming it, the first one
// (created by the run) removed again.
TEST(AioWorkspaces, AnUnusableSecondWorkspaceRemovesTheFirst) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string a = disk_base() + "/" + unique_name("ws-first");
  const auto r = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", a, "--create-workspace", "--workspace", "/proc/ds-aio-no-such-dir",
                           "--io-number", "2", "--epoch-number", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(contains(r.err, "/proc/ds-aio-no-such-dir")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_FALSE(exists(a)) << "the first workspace was left behind";
}

// Two workspaces, the second a 4 MiB tmpfs mount that cannot hold its share
// (8 of 16 files of 1 MiB): refused before anything is written, naming that
// directory, exit 1; nothing is left in either. Root only (mount).
TEST(AioWorkspaces, NoSpaceInOneOfTwoIsFoundBeforeWriting) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const SmallTmpfs fs;
  if (fs.dir.empty()) GTEST_SKIP() << fs.error;
  const std::string& mnt = fs.dir;
  const std::string a = "/dev/shm/" + unique_name("ds-aio-ws-a"), b = mnt + "/ws";
  const dstest::ScopedPath a_guard(a);  // removed also when an assertion ends the test
  const auto r = run_tool({"aio", "--create-workspace", "--workspace", a, "--create-workspace", "--workspace", b, "--io-size", "1M", "--io-number", "16",
                           "--epoch-number", "1", "--buffered"});
  const auto left = entries(mnt);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "the workspace " + b + " (tmpfs) has ")) << r.err;
  EXPECT_TRUE(contains(r.err, "(8 shards of 16)")) << r.err;
  EXPECT_TRUE(contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(contains(r.err, "nothing was written")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left[0]);
  EXPECT_FALSE(exists(a)) << "the first workspace was left behind";
}

// Proof that the disk was used: the block device under an O_DIRECT workspace
// counted at least 95% of each phase's bytes (sectors x 512 in /sys/block/<dev>/stat;
// other I/O on that disk only adds), said after the Wall line of each table and
// in JSON. Skipped where the workspace has no block device of its own.
TEST(AioDevice, ADiskRunShowsTheDeviceMovedTheBytes) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("dev");
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "8",
                        "--iodepth", "4", "--epoch-number", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string device;
  for (const char* name : {"aio_dump", "aio_load"}) {
    const json dev = r.result(name)["device_io"];
    ASSERT_EQ(dev.size(), 1u) << name;
    if (dev[0]["device"].is_null()) GTEST_SKIP() << "no block device: " << dev[0]["not_found"];
    device = dev[0]["device"];
    EXPECT_EQ(dev[0]["expected_bytes"], 65536 * 8 * 2) << name;
    EXPECT_GE(dev[0]["bytes"].get<uint64_t>(), 65536u * 8 * 2 * 95 / 100) << name << " " << dev;
    EXPECT_EQ(dev[0]["below_95"], false) << name;
  }
  const auto t = run_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "8",
                           "--iodepth", "4", "--epoch-number", "2", "--validate"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* verb : {"written", "read"}) {
    const std::string line = "\n  Device " + device + ": " + verb + " ";
    const size_t at = t.out.find(line);
    ASSERT_NE(at, std::string::npos) << verb << "\n" << t.out;
    EXPECT_TRUE(contains(t.out.substr(at, 80), " of 1.00 MiB (")) << t.out.substr(at, 80);
    const size_t wall = t.out.rfind("  Wall: ", at), pass = t.out.find("[validation]", at);
    EXPECT_NE(wall, std::string::npos);
    EXPECT_EQ(t.out.find('\n', wall), at) << "right after the Wall line";
    EXPECT_NE(pass, std::string::npos) << "before the validation verdict";
  }
  EXPECT_FALSE(contains(t.err, "below 95%")) << t.err;
  EXPECT_FALSE(exists(ws));
}

// tmpfs has no block device: the line says so instead of counting anything.
TEST(AioDevice, TmpfsSaysNoDeviceWasFound) {
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  const std::string ws = "/dev/shm/" + unique_name("ds-aio-dev");
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  const auto t = run_tool({"aio", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "4", "--epoch-number", "1",
                           "--buffered"});
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* verb : {"written", "read"})
    EXPECT_TRUE(contains(t.out, "  Device: not found (tmpfs has no block device of its own at " + ws +
                                    "): cannot show that the disk was " + verb + "\n"))
        << t.out;
  JsonRun r = run_json({"aio", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number", "4", "--epoch-number", "1",
                        "--buffered"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json dev = r.result("aio_load")["device_io"];
  ASSERT_EQ(dev.size(), 1u);
  EXPECT_TRUE(dev[0]["device"].is_null());
  EXPECT_TRUE(contains(dev[0].value("not_found", ""), "tmpfs")) << dev;
  EXPECT_FALSE(exists(ws));
}

// Each command line (on a 2-card sim) exits 2 naming its option (the second of the
// pair), prints nothing on stdout and creates no workspace.
static void expect_usage_errors(const std::vector<std::pair<std::vector<std::string>, std::string>>& cases,
                         const std::string& ws) {
  for (const auto& c : cases) {
    const auto r = run_tool(c.first, {{"DEV_SANDBOX_SIM_DEVICES", "2"}});
    std::string cmd;
    for (const auto& a : c.first) cmd += a + " ";
    EXPECT_EQ(r.exit_code, 2) << cmd << "\n" << r.err;
    EXPECT_TRUE(contains(r.err, c.second)) << cmd << "\n" << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << cmd << "\n" << r.err;
    EXPECT_TRUE(r.out.empty()) << cmd << "\n" << r.out;
  }
  EXPECT_FALSE(exists(ws)) << "a bad command line created the workspace";
}

TEST(AioEndToEnd, BadOptionsExit2NamingTheOption) {
  const std::string ws = "/tmp/" + unique_name("ds-aio-bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"aio"}, "--workspace"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-size", "1000"}, "--io-size"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-size", "16Q"}, "--io-size"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-size", "0"}, "--io-size"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-size", "2G"}, "--io-size"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-number", "0"}, "--io-number"},
      {{"aio", "--create-workspace", "--workspace", ws, "--epoch-number", "-1"}, "--epoch-number"},
      {{"aio", "--create-workspace", "--workspace", ws, "--iodepth", "0"}, "--iodepth"},
      {{"aio", "--create-workspace", "--workspace", ws, "--iodepth", "many"}, "--iodepth"},
      {{"aio", "--create-workspace", "--workspace", ws, "--engine", "spdk"}, "--engine"},
      {{"aio", "--create-workspace", "--workspace", ws, "--create-workspace", "--workspace", ws + "/"}, "--workspace"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-type", "gpu"}, "--io-type"},
      {{"aio", "--create-workspace", "--workspace", ws, "--device-id", "x"}, "--device-id"},
      {{"aio", "--create-workspace", "--workspace", ws, "--io-type", "alloc", "--device-id", "99"}, "--device-id"},
      {{"aio", "--create-workspace", "--workspace", ws, "--bogus"}, "--bogus"},
      {{"aio", "--workspace"}, "--workspace"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "0"}, "--mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "-2"}, "--mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "three"}, "--mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "1001"}, "--mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "2", "--phases", "dump,load"}, "--phases has no mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "mix"}, "mix needs --mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "dump,mix"}, "mix needs --mix"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", ""}, "an empty phase"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "dump,"}, "an empty phase"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "load,,dump"}, "an empty phase"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "dump,write"}, "unknown phase 'write'"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "Load"}, "unknown phase 'Load'"},
      {{"aio", "--create-workspace", "--workspace", ws, "--phases", "load,dump,load"}, "names load twice"},
      {{"aio", "--create-workspace", "--workspace", ws, "--mix", "1", "--phases", "mix,mix"}, "names mix twice"},
  };
  expect_usage_errors(cases, ws);
}

// --workers 3: three forked workers, each with its own files and buffers; the
// result counts every worker's shards and bytes, BW is those bytes over IO avg
// (the slowest worker's), and a Workers line gives each worker's own BW.
class AioWorkers : public ::testing::TestWithParam<const char*> {};

TEST_P(AioWorkers, ThreeWorkersValidateAndCountEveryWorker) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string engine = GetParam();
  const std::string ws1 = disk_base() + "/" + unique_name("workers"), ws2 = disk_base() + "/" + unique_name("workers");
  const std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws1, "--create-workspace", "--workspace", ws2,
                                         "--engine", engine, "--io-size", "16K", "--io-number", "5",
                                         "--iodepth", "2", "--epoch-number", "3", "--workers", "3", "--validate"};
  JsonRun r = run_json(args);
  if (engine == "io_uring" && uring_unavailable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* name : {"aio_dump", "aio_load"}) {
    json x = r.result(name);
    EXPECT_EQ(x["count"], 15) << name;  // 3 workers x 5 shards
    EXPECT_EQ(x["validated"], true) << name;
    const double bytes = 3.0 * 5 * 16384;
    const double io_avg_s = x["copy_us"]["avg"].get<double>() * 1e-6;
    ASSERT_GT(io_avg_s, 0) << name;
    EXPECT_NEAR(x["bandwidth_gib_s"].get<double>(), bytes / io_avg_s / 1073741824.0,
                1e-3 * x["bandwidth_gib_s"].get<double>() + 1e-9)
        << name << ": BW is every worker's bytes over IO avg";
    ASSERT_TRUE(x.contains("worker_bandwidth_gib_s")) << name;
    EXPECT_EQ(x["worker_bandwidth_gib_s"].size(), 3u) << name;
    for (const json& w : x["worker_bandwidth_gib_s"]) EXPECT_GT(w.get<double>(), 0) << name;
    const std::string host = std::string("host::mmap::all");
    EXPECT_EQ(std::string(name) == "aio_dump" ? x["from"] : x["to"], host) << name;
  }
  EXPECT_FALSE(exists(ws1)) << "left behind";
  EXPECT_FALSE(exists(ws2)) << "left behind";

  // The text: a Workers line after each Wall line, min <= max.
  std::vector<std::string> text_args = args;
  const auto t = run_tool(text_args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::vector<std::string> workers = lines_starting(t.out, "  Workers: min ");
  ASSERT_EQ(workers.size(), 2u) << t.out;
  for (const std::string& line : workers) {
    double lo = -1, hi = -1;
    ASSERT_EQ(std::sscanf(line.c_str(), "  Workers: min %lf / max %lf GiB/s per worker", &lo, &hi), 2) << line;
    EXPECT_GT(lo, 0) << line;
    EXPECT_LE(lo, hi) << line;
  }
  EXPECT_FALSE(exists(ws1)) << "left behind";
}

INSTANTIATE_TEST_SUITE_P(Aio, AioWorkers, ::testing::Values("libaio", "io_uring", "psync"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// Two workers, one of them slow (the shim: each of its preads waits 20 ms first;
// --iodepth 1, so its 8 reads an epoch take at least 160 ms): an epoch's IO is the
// slowest worker's, so IO avg is at least that; each worker's own GiB/s is its own
// bytes over its own avg, so the slow one's times the workers is the run's BW
// (whose IO is the slow worker's own time, the fast one far below it).
TEST(AioWorkers, AnEpochIsTheSlowestWorkersAndAWorkersGibsItsOwnBytesOverItsOwnTime) {
  const std::string ws = "/dev/shm/ds-slow-worker-" + std::to_string(getpid());
  const dstest::ScopedPath ws_guard(ws);
  const dstest::TempFile claim("ds-slow-claim");
  std::remove(claim.path().c_str());  // the shim creates it: whoever does first is the slow worker
  const int64_t delay_ns = 20000000, reads = 8;
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--buffered", "--engine", "psync", "--iodepth",
                        "1", "--io-size", "64K", "--io-number", std::to_string(reads), "--epoch-number", "3",
                        "--workers", "2", "--phases", "load"},
                       {{"LD_PRELOAD", DS_SLOW_SHIM},
                        {"DS_SHIM_SLOW_CLAIM", claim.path()},
                        {"DS_SHIM_SLOW_NS", std::to_string(delay_ns)}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(lines_starting(r.err, "slow_shim: pid ").size(), 1u) << "not one slow worker: " << r.err;
  const json x = r.result("aio_load");
  const double io_avg_us = x["copy_us"]["avg"].get<double>();
  EXPECT_GE(io_avg_us, static_cast<double>(reads * delay_ns) / 1000.0) << "IO is not the slowest worker's time";
  const double bw = x["bandwidth_gib_s"].get<double>();
  EXPECT_NEAR(bw, 2.0 * reads * 65536 / (io_avg_us * 1e-6) / 1073741824.0, bw * 1e-6);
  ASSERT_EQ(x["worker_bandwidth_gib_s"].size(), 2u) << x.dump();
  const double w0 = x["worker_bandwidth_gib_s"][0], w1 = x["worker_bandwidth_gib_s"][1];
  // No worker's own time is above IO (the slowest per epoch): each at least BW / 2.
  EXPECT_GE(std::min(w0, w1), bw / 2 * (1 - 1e-9));
  // The slow one's own time is IO's (up to the rare epoch where the fast one was
  // held up longer): its GiB/s is BW / 2, not BW or more.
  EXPECT_LE(std::min(w0, w1), bw / 2 * 1.25) << "a worker's GiB/s is not its own bytes over its own time";
  EXPECT_GT(std::max(w0, w1), 2 * std::min(w0, w1)) << "the fast worker is not faster";
}

// The processes whose parent is `parent`.
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const std::string& e : entries("/proc")) {
    if (e.find_first_not_of("0123456789") != std::string::npos) continue;
    FILE* f = std::fopen(("/proc/" + e + "/stat").c_str(), "r");
    if (!f) continue;
    char buf[512] = {};
    const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    const char* close = std::strrchr(buf, ')');  // the name may hold spaces
    if (n == 0 || !close) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(close + 1, " %c %d", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(std::stol(e)));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(AioWorkers, AKilledWorkerFailsTheRunNamingItAndLeavesNothing) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  const std::string ws = disk_base() + "/" + unique_name("workers-kill");
  const std::string out = disk_base() + "/" + unique_name("kill-out"), err = disk_base() + "/" + unique_name("kill-err");
  const int pid = dstest::start_tool({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "64K", "--io-number",
                                      "8", "--iodepth", "4", "--epoch-number", "1000000", "--workers", "3"},
                                     out, err);
  ASSERT_GT(pid, 0);
  std::vector<pid_t> kids;
  dstest::wait_until([&] { return (kids = children_of(pid)).size() >= 3; });  // the three workers are running
  dstest::wait_children_busy(pid, 3);
  if (kids.size() >= 3) kill(kids[1], SIGKILL);
  else kill(pid, SIGKILL);
  const int code = dstest::wait_tool(pid);
  std::string text;
  if (FILE* f = std::fopen(err.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  unlink(out.c_str());
  unlink(err.c_str());
  ASSERT_GE(kids.size(), 3u) << "the three workers never appeared";
  EXPECT_EQ(code, 1) << text;
  EXPECT_TRUE(contains(text, "aio_dump worker ")) << text;
  EXPECT_TRUE(contains(text, "killed by signal 9")) << text;
  EXPECT_FALSE(exists(ws)) << "left behind: " << entries(ws).size() << " entries";
  remove_tree(ws);
}

TEST(AioWorkers, BadWorkersAndMoreWorkersThanDevicesExit2) {
  const std::string ws = "/tmp/" + unique_name("ds-aio-workers-bad");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"aio", "--create-workspace", "--workspace", ws, "--workers", "0"}, "--workers"},
      {{"aio", "--create-workspace", "--workspace", ws, "--workers", "-1"}, "--workers"},
      {{"aio", "--create-workspace", "--workspace", ws, "--workers", "two"}, "--workers"},
      {{"aio", "--create-workspace", "--workspace", ws, "--workers", "100000"}, "--workers"},
      {{"aio", "--create-workspace", "--workspace", ws, "--workers", "3", "--io-type", "alloc"}, "--workers got 3 but the sim backend sees 2"},
  };
  expect_usage_errors(cases, ws);
}

// Every worker's bytes per epoch, from what the result says: BW x IO avg.
double bytes_per_epoch(const json& x) {
  return x["bandwidth_gib_s"].get<double>() * 1073741824.0 * x["copy_us"]["avg"].get<double>() * 1e-6;
}

// --mix 3 --validate: after the dump and load epochs, mixed epochs of one dump
// sweep then three load sweeps timed together: Count and bytes are 4 x a sweep's,
// every load is checked as it lands, and where the workspace has a block device it
// counted the dump's bytes written and three times them read.
class AioMixed : public ::testing::TestWithParam<const char*> {};

TEST_P(AioMixed, MixThreeValidatesAndCountsFourSweeps) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string engine = GetParam();
  const std::string ws = disk_base() + "/" + unique_name("mix");
  const std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--engine", engine,
                                         "--io-size", "16K", "--io-number", "5", "--iodepth", "2",
                                         "--epoch-number", "2", "--mix", "3", "--validate"};
  JsonRun r = run_json(args);
  if (engine == "io_uring" && uring_unavailable(r)) GTEST_SKIP() << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), (std::vector<std::string>{"aio_dump", "aio_load", "aio_mixed"}));
  const double sweep = 5 * 16384;
  for (const char* name : {"aio_dump", "aio_load"}) {
    const json x = r.result(name);
    EXPECT_EQ(x["count"], 5) << name;
    EXPECT_NEAR(bytes_per_epoch(x), sweep, 1e-3 * sweep) << name;
  }
  const json m = r.result("aio_mixed");
  EXPECT_EQ(m["count"], 20) << "1 dump + 3 loads of 5 shards";
  EXPECT_EQ(m["block_bytes"], 16384);
  EXPECT_EQ(m["iterations"], 2);
  EXPECT_NEAR(bytes_per_epoch(m), 4 * sweep, 1e-3 * 4 * sweep) << "BW is (1 + R) sweeps over IO avg";
  EXPECT_EQ(m["validated"], true);
  EXPECT_EQ(m["validate"], "each") << "every load of every mixed epoch is checked as it lands";
  EXPECT_EQ(m["from"], "host::mmap::0");
  EXPECT_EQ(m["to"], "file::" + r.result("aio_dump")["to"].get<std::string>().substr(6));
  EXPECT_TRUE(contains(m.value("brief", ""), "1 dump + 3 loads of 5 shards of 16.00 KiB per epoch")) << m["brief"];
  expect_full_row(m);
  const json dev = m["device_io"];
  ASSERT_EQ(dev.size(), 2u) << dev;
  EXPECT_EQ(dev[0]["direction"], "written");
  EXPECT_EQ(dev[1]["direction"], "read");
  EXPECT_EQ(dev[0]["expected_bytes"], 5 * 16384 * 2) << "one dump sweep per epoch";
  EXPECT_EQ(dev[1]["expected_bytes"], 3 * 5 * 16384 * 2) << "three load sweeps per epoch";
  if (!dev[0]["device"].is_null())  // O_DIRECT: every sweep reached the disk (other I/O there only adds)
    for (const json& d : dev)
      EXPECT_GE(d["bytes"].get<uint64_t>(), d["expected_bytes"].get<uint64_t>() * 95 / 100) << d;
  EXPECT_FALSE(r.result("aio_load")["device_io"][0].contains("direction")) << "single-direction entries unchanged";
  EXPECT_FALSE(exists(ws)) << "left behind";

  const auto t = run_tool(args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_TRUE(contains(t.out, "\n[[ aio_mixed ]] 1 dump + 3 loads of ")) << t.out;
  EXPECT_TRUE(contains(t.out, "\n[validation] aio_mixed PASS\n")) << t.out;
  if (!dev[0]["device"].is_null()) {
    const std::string d = dev[0]["device"];
    const size_t at = t.out.find("[[ aio_mixed ]]");
    EXPECT_NE(t.out.find("\n  Device " + d + ": written ", at), std::string::npos) << t.out;
    EXPECT_NE(t.out.find(" of 160.00 KiB (", at), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("\n  Device " + d + ": read ", at), std::string::npos) << t.out;
    EXPECT_NE(t.out.find(" of 480.00 KiB (", at), std::string::npos) << t.out;
  }
  EXPECT_FALSE(exists(ws)) << "left behind";
}

INSTANTIATE_TEST_SUITE_P(Aio, AioMixed, ::testing::Values("libaio", "io_uring", "psync"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// --phases without dump: the shard files are written (untimed) while setting up,
// so the loads read the data and --validate checks it; only the named phases run.
TEST(AioMixed, PhasesWithoutDumpStillValidate) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  struct Case {
    std::vector<std::string> phases;
    std::string result;
    int count;
  } cases[] = {{{"--phases", "load"}, "aio_load", 6}, {{"--phases", "mix", "--mix", "2"}, "aio_mixed", 18}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.result);
    const std::string ws = disk_base() + "/" + unique_name("phases");
    std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K",
                                     "--io-number", "3", "--shards-per-file", "2", "--iodepth", "2",
                                     "--epoch-number", "2", "--validate"};
    args.insert(args.end(), c.phases.begin(), c.phases.end());
    JsonRun r = run_json(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.names(), std::vector<std::string>{c.result});
    const json x = r.result(c.result);
    EXPECT_EQ(x["count"], c.count);
    EXPECT_EQ(x["validated"], true);
    EXPECT_GT(x["setup_s"].get<double>(), 0);
    EXPECT_FALSE(exists(ws)) << "left behind";
  }
}

// A load inside a mixed epoch that returns wrong bytes fails the run naming
// aio_mixed, its epoch and load sweep: --phases dump,mix (no aio_load process
// whose reads the shim would count too), 4 shards, --iodepth 1, --mix 3: the
// mixed process's 18th read is epoch 2's load sweep 2, shard 1.
TEST(AioMixed, ACorruptedLoadInAMixedEpochFailsValidation) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!DS_SHIM_HAVE_LIBAIO) GTEST_SKIP() << "built without libaio";
  expect_corrupted_read_fails("mix-corrupt", {"--io-size", "16K", "--io-number", "4", "--iodepth", "1",
                                              "--epoch-number", "2", "--phases", "dump,mix", "--mix", "3",
                                              "--validate"},
                              18, 77, "aio_mixed epoch 2 of 2 (load sweep 2 of 3): shard 1", ".1)", "aio_dump",
                              "aio_mixed");
}

// The below-95% note for real: a tmpfs workspace (no O_DIRECT) makes the whole
// run buffered, so the disk workspace's loads come from the page cache that writing
// the files (--phases load: while setting up) just filled, and its device reads far
// less than the load moved: stderr says so, and JSON marks it below_95. (64 MiB
// expected, so the small reads of other tests running meanwhile cannot reach 95%.)
// Skipped where the disk workspace has no block device.
// The bytes block device `name` has read so far (/proc/diskstats: sectors x 512).
uint64_t disk_read_bytes(const std::string& name) {
  std::ifstream in("/proc/diskstats");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    unsigned maj = 0, min = 0;
    std::string dev;
    uint64_t reads = 0, merged = 0, sectors = 0;
    if (l >> maj >> min >> dev >> reads >> merged >> sectors && dev == name) return sectors * 512;
  }
  return 0;
}

TEST(AioDevice, PageCacheLoadsAreBelow95Percent) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  if (!is_tmpfs("/dev/shm")) GTEST_SKIP() << "/dev/shm is not tmpfs here";
  // The counters are the whole disk's: another tenant reading it meanwhile adds to
  // them. A run that reads 95% or more is tried again; three such runs are a
  // failure only if the disk was quiet otherwise (the same time without our run
  // read less than a tenth of what a load expects): else the test says the disk
  // was disturbed and is skipped.
  std::string disturbed;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string a = "/dev/shm/" + unique_name("ds-aio-cache"), b = disk_base() + "/" + unique_name("cache");
    const dstest::ScopedPath a_guard(a), b_guard(b);  // removed also when an assertion ends the test
    // 64 files of 1 MiB: 32 on the disk, 32 MiB per load epoch, 64 MiB over two.
    const auto t0 = std::chrono::steady_clock::now();
    JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", a, "--create-workspace", "--workspace", b, "--buffered", "--io-size",
                          "1M", "--io-number", "64", "--iodepth", "4", "--epoch-number", "2", "--phases", "load"});
    const auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json dev = r.result("aio_load")["device_io"];
    ASSERT_EQ(dev.size(), 2u) << dev;
    EXPECT_TRUE(dev[0]["device"].is_null()) << "tmpfs: " << dev;
    if (dev[1]["device"].is_null()) GTEST_SKIP() << "no block device: " << dev[1]["not_found"];
    const std::string d = dev[1]["device"];
    EXPECT_EQ(dev[1]["expected_bytes"], 2 * 32 * 1048576);
    EXPECT_FALSE(exists(a)) << "left behind";
    EXPECT_FALSE(exists(b)) << "left behind";
    if (dev[1]["below_95"] == true) {
      EXPECT_LT(dev[1]["percent"].get<double>(), 95.0) << dev;
      EXPECT_TRUE(contains(r.err, "dev-sandbox: note: aio_load: device " + d + " read ")) << r.err;
      EXPECT_TRUE(contains(r.err, " of 64.00 MiB (")) << r.err;
      EXPECT_TRUE(contains(r.err, "%), below 95%: part of the I/O did not reach that disk")) << r.err;
      return;
    }
    // Was it someone else? The disk's reads over the same time, without our run.
    const uint64_t before = disk_read_bytes(d);
    std::this_thread::sleep_for(took);
    const uint64_t others = disk_read_bytes(d) - before;
    if (others * 10 >= 64ULL << 20)
      disturbed = "the disk " + d + " read " + std::to_string(others >> 20) + " MiB in the same time without our run";
  }
  if (!disturbed.empty()) GTEST_SKIP() << "disturbed by other I/O on the disk: " << disturbed;
  FAIL() << "three page-cache loads each read 95% or more of their bytes from a disk that was quiet otherwise";
}

// --validate each with --workers 3 (and a mixed phase): every worker's files are
// cleared before each epoch that writes and checked with that worker's own data.
TEST(AioWorkers, ValidateEachWithThreeWorkers) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("workers-each");
  JsonRun r = run_json({"aio", "--backend", "sim", "--create-workspace", "--workspace", ws, "--io-size", "16K", "--io-number", "4",
                        "--shards-per-file", "2", "--iodepth", "3", "--epoch-number", "2", "--workers", "3",
                        "--mix", "1", "--validate", "each"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.names(), (std::vector<std::string>{"aio_dump", "aio_load", "aio_mixed"}));
  for (const char* name : {"aio_dump", "aio_load", "aio_mixed"}) {
    const json x = r.result(name);
    EXPECT_EQ(x["validated"], true) << name;
    EXPECT_EQ(x["validate"], "each") << name;
    EXPECT_EQ(x["count"], (std::string(name) == "aio_mixed" ? 2 : 1) * 3 * 8) << name;
    EXPECT_EQ(x["worker_bandwidth_gib_s"].size(), 3u) << name;
  }
  EXPECT_FALSE(exists(ws)) << "left behind";
}

// The "done when" at a small scale: 8 workers over two workspaces with
// --mix 3 --validate: three blocks, each with a Workers line; while kept, every
// worker's file f lies in workspace f % 2 and holds that worker's shard f; without
// --keep nothing is left.
TEST(AioWorkers, EightWorkersTwoWorkspacesMixed) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string a = disk_base() + "/" + unique_name("node-a"), b = disk_base() + "/" + unique_name("node-b");
  std::vector<std::string> args = {"aio", "--backend", "sim", "--create-workspace", "--workspace", a, "--create-workspace", "--workspace", b, "--workers", "8",
                                   "--mix", "3", "--validate", "--io-size", "16K", "--io-number", "3",
                                   "--iodepth", "2", "--epoch-number", "2"};
  const auto t = run_tool(args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* block : {"[[ aio_dump ]]", "[[ aio_load ]]", "[[ aio_mixed ]]"})
    EXPECT_TRUE(contains(t.out, block)) << block << "\n" << t.out;
  EXPECT_EQ(lines_starting(t.out, "  Workers: min ").size(), 3u) << t.out;
  EXPECT_EQ(lines_starting(t.out, "[validation] ").size(), 3u) << t.out;
  EXPECT_EQ(lines_starting(t.out, "  host::mmap::all ").size(), 2u) << "the dump's and the mixed rows: " << t.out;
  EXPECT_FALSE(exists(a)) << "left behind";
  EXPECT_FALSE(exists(b)) << "left behind";

  args.push_back("--keep");
  const auto k = run_tool(args);
  ASSERT_EQ(k.exit_code, 0) << k.err;
  EXPECT_TRUE(contains(k.err, "kept 24 shard files in " + a + ", " + b)) << k.err;
  const std::vector<std::string> dirs = {a, b};
  std::vector<int> per_worker(8, 0);
  std::vector<char> buf(16384);
  for (size_t w = 0; w < 2; ++w) {
    const auto names = entries(dirs[w]);
    EXPECT_EQ(names.size(), w == 0 ? 16u : 8u) << dirs[w] << ": files 0 and 2 of each worker, or file 1";
    for (const std::string& n : names) {
      // dev-sandbox-aio.<pid>.w<k>.<i>
      const size_t dot = n.rfind('.'), wk = n.rfind(".w", dot - 1);
      ASSERT_NE(wk, std::string::npos) << n;
      const int worker = std::stoi(n.substr(wk + 2, dot - wk - 2));
      const uint64_t file = std::stoul(n.substr(dot + 1)) * 2 + w;
      ASSERT_TRUE(worker >= 0 && worker < 8) << n;
      ++per_worker[static_cast<size_t>(worker)];
      const int fd = open((dirs[w] + "/" + n).c_str(), O_RDONLY);
      ASSERT_GE(fd, 0) << n;
      ASSERT_EQ(pread(fd, buf.data(), buf.size(), 0), 16384) << n;
      close(fd);
      EXPECT_EQ(ds::pattern_check(buf.data(), buf.size(), ds::pattern_key(worker, file)), -1)
          << dirs[w] << "/" << n << " should hold worker " << worker << "'s shard " << file;
    }
    remove_tree(dirs[w]);
  }
  EXPECT_EQ(per_worker, std::vector<int>(8, 3));
}

}  // namespace
