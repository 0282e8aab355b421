// --numa, --numa-map and --shm-numa-nodes end to end on this machine's node 0:
// placement recorded in JSON and true (pages found on the node by move_pages),
// the one-node note said once, every bad input exit 2 with one line.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"

using namespace dstest;
using json = nlohmann::json;

namespace {

const std::map<std::string, std::string> kSim = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};

std::vector<std::string> copy_args(const std::string& c, std::vector<std::string> extra) {
  std::vector<std::string> a = {"--backend", "sim", "copy", "-t", c, "-s", "64K", "-n", "4", "-i", "2", "-d", "2",
                                "--warmup", "1", "--validate", "--format", "json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Every worker on node 0 with its buffers' pages there, as move_pages found them.
void expect_placed_on_node0(const json& numa, int workers, bool buffers) {
  EXPECT_EQ(numa["mode"], "auto");
  EXPECT_EQ(numa["placed"], true);
  ASSERT_EQ(numa["workers"].size(), static_cast<size_t>(workers));
  for (const json& w : numa["workers"]) {
    EXPECT_EQ(w["node"], 0);
    EXPECT_EQ(w["cpus_pinned"], true);
    EXPECT_FALSE(w["cpus"].get<std::string>().empty());
    EXPECT_EQ(w["placed"], true);
    if (buffers) EXPECT_FALSE(w["buffers"].empty());
    for (const json& b : w["buffers"]) {
      EXPECT_EQ(b["node"], 0);
      EXPECT_GT(b["pages"].get<uint64_t>(), 0u);
      EXPECT_EQ(b["pages_by_node"]["0"], b["pages"]);
      EXPECT_EQ(b["pages_misplaced"], 0);
      EXPECT_EQ(b["placed"], true);
    }
  }
}

TEST(NumaE2e, AutoPlacesEveryWorkerAndItsBuffersOnTheNode) {
  for (const char* c : {"all_host_to_all_device_ce_multi_stream", "all_odirect_host_to_all_device_ce_multi_stream",
                        "all_host_to_all_device_ce", "host_to_device_ce"}) {
    SCOPED_TRACE(c);
    const RunResult r = run_tool(copy_args(c, {"--numa", "auto"}), kSim);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json doc = json::parse(r.out);
    const json& res = doc["results"][0];
    EXPECT_EQ(res["validated"], true);
    expect_placed_on_node0(res["numa"], res["devices"].get<int>(), true);
    // The odirect source is our own mmap: bound with mbind before its first touch.
    if (std::string(c).find("odirect") != std::string::npos)
      EXPECT_EQ(res["numa"]["workers"][0]["buffers"][0]["bound_to"], 0);
    if (access("/sys/devices/system/node/node1", F_OK) != 0)  // one node: said once, not per worker
      EXPECT_EQ(count_of(r.err, "NUMA: this machine has one node"), 1u) << r.err;
  }
}

TEST(NumaE2e, TheDefaultIsAutoAndStaysQuiet) {
  std::vector<std::string> a = copy_args("all_host_to_all_device_ce_multi_stream", {});
  const RunResult r = run_tool(a, kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_run_lines(r.err), "");
  expect_placed_on_node0(json::parse(r.out)["results"][0]["numa"], 2, true);
}

TEST(NumaE2e, OffPlacesNothingAndStillSaysWhereThePagesAre) {
  const RunResult r = run_tool(copy_args("all_host_to_all_device_ce_multi_stream", {"--numa", "off"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json numa = json::parse(r.out)["results"][0]["numa"];
  EXPECT_EQ(numa["mode"], "off");
  EXPECT_TRUE(numa["placed"].is_null());
  for (const json& w : numa["workers"]) {
    EXPECT_TRUE(w["node"].is_null());
    EXPECT_EQ(w["cpus_pinned"], false);
    for (const json& b : w["buffers"]) EXPECT_GT(b["pages_by_node"]["0"].get<uint64_t>(), 0u);
  }
  EXPECT_EQ(count_of(r.err, "one node"), 0u) << r.err;
}

TEST(NumaE2e, NumaMapAndTransAreAccepted) {
  RunResult r = run_tool(copy_args("all_host_to_all_device_ce_multi_stream", {"--numa-map", "0:0,1:0"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_placed_on_node0(json::parse(r.out)["results"][0]["numa"], 2, true);
  r = run_tool({"--backend", "sim", "trans", "-t", "H2D", "-H", "pinned", "-M", "ce", "-s", "4K", "-n", "8", "-i", "2",
                "-d", "2", "--validate", "--numa", "auto", "--format", "json"},
               kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json trans = json::parse(r.out);  // kept alive: the loop reads into it
  for (const json& res : trans["results"]) expect_placed_on_node0(res["numa"], 2, true);
}

TEST(NumaE2e, SharedRegionOnTheListedNodesProvenBeforeTiming) {
  for (const char* c : {"one_share_host_to_all_device_ce_multi_stream", "shm_to_all_host_memcpy"}) {
    SCOPED_TRACE(c);
    const RunResult r = run_tool(copy_args(c, {"--shm-numa-nodes", "0"}), kSim);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = json::parse(r.out)["results"][0];
    EXPECT_EQ(res["validated"], true);
    const json& shared = res["numa"]["shared_region"];
    ASSERT_EQ(shared.size(), 1u);
    EXPECT_EQ(shared[0]["node"], 0);
    EXPECT_EQ(shared[0]["bound_to"], 0);
    const uint64_t pages = (4 * 65536) / static_cast<uint64_t>(sysconf(_SC_PAGESIZE));  // 4 x 64 KiB
    EXPECT_EQ(shared[0]["pages"], pages);
    EXPECT_EQ(shared[0]["pages_by_node"]["0"], pages);
    EXPECT_EQ(shared[0]["placed"], true);
    EXPECT_EQ(res["numa"]["placed"], true);
  }
  // The same node twice: two parts, both there.
  const RunResult r = run_tool(copy_args("one_share_host_to_all_device_ce_multi_stream", {"--shm-numa-nodes", "0,0"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(json::parse(r.out)["results"][0]["numa"]["shared_region"].size(), 1u);  // a list, deduplicated
  EXPECT_TRUE(our_shm_entries().empty());
}

TEST(NumaE2e, AioWorkersArePlacedToo) {
  char dir[] = "/tmp/ds-numa-aio-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const RunResult r = run_tool({"--backend", "sim", "aio", "--create-workspace", "--workspace", dir, "--io-size", "64K", "--io-number", "8",
                                "--epoch-number", "1", "--workers", "2", "--buffered", "--validate", "--numa", "auto",
                                "--format", "json"},
                               kSim);
  rmdir(dir);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);  // kept alive: the loop reads into it
  for (const json& res : doc["results"]) expect_placed_on_node0(res["numa"], 2, true);
}

// load: each card's worker on its node, its pinned staging buffers' pages there.
std::vector<std::string> load_args(const std::string& ws, std::vector<std::string> extra) {
  std::vector<std::string> a = {"--backend", "sim", "load", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "8", "-i", "2",
                                "--warmup", "1", "-d", "2", "--buffered", "--validate", "--format", "json"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

TEST(NumaE2e, LoadCardsAndTheirStagingArePlaced) {
  char dir[] = "/tmp/ds-numa-load-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string ws = std::string(dir) + "/ws";
  RunResult r = run_tool(load_args(ws, {"--numa", "auto"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json res = json::parse(r.out)["results"][0];
  EXPECT_EQ(res["validated"], true);
  expect_placed_on_node0(res["numa"], 2, true);
  for (const json& w : res["numa"]["workers"]) {
    ASSERT_EQ(w["buffers"].size(), 1u);
    EXPECT_EQ(w["buffers"][0]["what"], "staging");
    // 8 staging buffers of 64 KiB, every page faulted in before timing.
    EXPECT_EQ(w["buffers"][0]["pages"], (8 * 65536) / static_cast<uint64_t>(sysconf(_SC_PAGESIZE)));
  }
  EXPECT_EQ(res["numa"]["workers"][1]["device"], 1);

  r = run_tool(load_args(ws, {"--numa", "off"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  res = json::parse(r.out)["results"][0];
  EXPECT_EQ(res["numa"]["mode"], "off");
  ASSERT_EQ(res["numa"]["workers"].size(), 2u);
  for (const json& w : res["numa"]["workers"]) {
    EXPECT_TRUE(w["node"].is_null());
    EXPECT_EQ(w["cpus_pinned"], false);
  }

  r = run_tool(load_args(ws, {"--numa-map", "0:0,1:0"}), kSim);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_placed_on_node0(json::parse(r.out)["results"][0]["numa"], 2, true);

  for (const std::vector<std::string>& extra : std::vector<std::vector<std::string>>{
           {"--numa", "maybe"}, {"--numa-map", "0:7"}, {"--numa-map", "5:0"}, {"--numa-map", "zero"},
           {"--numa", "off", "--numa-map", "0:0"}, {"--shm-numa-nodes", "0"}}) {
    SCOPED_TRACE(extra[0] + " " + extra[1]);
    r = run_tool(load_args(ws, extra), kSim);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  }
  EXPECT_NE(access(ws.c_str(), F_OK), 0) << "the workspace the tool made is left";
  rmdir(ws.c_str());
  rmdir(dir);
}

TEST(NumaE2e, BadInputIsExit2WithOneLine) {
  const std::vector<std::vector<std::string>> bad = {
      {"--numa", "maybe"},
      {"--numa-map", "0:7"},          // no node 7 here
      {"--numa-map", "5:0"},          // no device 5 (the sim sees 2)
      {"--numa-map", "0:0,0:0"},      // a device twice
      {"--numa-map", "zero"},
      {"--numa", "off", "--numa-map", "0:0"},
      {"--shm-numa-nodes", "9"},      // no node 9
      {"--shm-numa-nodes", "1-"},
      {"--shm-numa-nodes", "a,b"},
  };
  for (const auto& extra : bad) {
    const std::string c = extra[0] == "--shm-numa-nodes" ? "one_share_host_to_all_device_ce_multi_stream"
                                                         : "all_host_to_all_device_ce_multi_stream";
    const RunResult r = run_tool(copy_args(c, extra), kSim);
    SCOPED_TRACE(extra[0] + " " + extra[1]);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
    EXPECT_NE(r.err.find(extra[0] == "--numa" && extra.size() == 2 ? "--numa" : extra[extra.size() - 2]),
              std::string::npos)
        << r.err;
  }
  // A case without a shared region.
  const RunResult r = run_tool(copy_args("all_host_to_all_device_ce_multi_stream", {"--shm-numa-nodes", "0"}), kSim);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  EXPECT_NE(r.err.find("no shared memory region"), std::string::npos) << r.err;
  // trans and aio have no shared region: no such option there.
  EXPECT_EQ(run_tool({"--backend", "sim", "trans", "--shm-numa-nodes", "0"}, kSim).exit_code, 2);
  EXPECT_EQ(run_tool({"--backend", "sim", "aio", "--create-workspace", "--workspace", "/tmp", "--numa", "sometimes"}, kSim).exit_code, 2);
}

TEST(NumaE2e, DoctorPrintsTheCardNodeCpuMap) {
  const RunResult r = run_tool({"doctor"}, kSim);
  EXPECT_NE(r.out.find("NUMA: card 0 -> node 0 -> CPUs "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("NUMA: card 1 -> node "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("host: NUMA node 0: CPUs "), std::string::npos) << r.out;
}

}  // namespace
