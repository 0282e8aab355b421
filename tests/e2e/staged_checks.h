// What the end-to-end tests of the staged commands (load, offload) share: the checks
// every successful result passes (its three measurements consistent with each other,
// the verdict by the documented rule, the busy times within the pipelined pass), the
// cleanup after a killed worker and after Ctrl-C, a full filesystem refused.
#pragma once

#include <signal.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli_harness.h"
#include "disk_fixtures.h"
#include "json_checks.h"

namespace dstest {
namespace staged {

// `x` is a validated result of `command` ("load", "offload") over `devices` cards
// that moved `bytes` per pass; `io` names its busy time ("read", "write").
inline void expect_staged_result(const json& x, const std::string& command, const std::string& io, int devices,
                                 double bytes) {
  EXPECT_EQ(x["name"], command);
  EXPECT_EQ(x["time_label"], command == "load" ? "IO+Copy" : "Copy+IO");
  EXPECT_EQ(x["devices"], devices);
  EXPECT_EQ(x["validated"], true);
  const std::string key = command + "_stages";
  ASSERT_TRUE(x.contains(key)) << x.dump();
  const json& s = x[key];
  const double disk = s["disk_alone_gib_s"], copy = s["copy_alone_gib_s"], piped = s["pipelined_gib_s"];
  EXPECT_GT(disk, 0);
  EXPECT_GT(copy, 0);
  EXPECT_DOUBLE_EQ(piped, x["bandwidth_gib_s"].get<double>());
  EXPECT_NEAR(disk, bytes / (s["disk_alone_us"]["avg"].get<double>() * 1e-6) / 1073741824.0, disk * 1e-9);
  EXPECT_NEAR(copy, bytes / (s["copy_alone_us"]["avg"].get<double>() * 1e-6) / 1073741824.0, copy * 1e-9);
  EXPECT_NEAR(s["percent_of_slower"].get<double>(), 100.0 * piped / std::min(disk, copy), 1e-9);
  const std::string verdict = piped >= 0.9 * std::min(disk, copy) ? (disk <= copy ? "disk" : "copy")
                                                                   : "neither (overlap lost)";
  EXPECT_EQ(s["bottleneck"], verdict);
  // Busy times: within the pipelined pass, never more than it took (+ rounding).
  const std::string busy = io + "_busy_us";
  EXPECT_GT(s[busy]["avg"].get<double>(), 0);
  EXPECT_GT(s["copy_busy_us"]["avg"].get<double>(), 0);
  EXPECT_LE(s[busy]["max"].get<double>(), x["copy_us"]["max"].get<double>() + 1);
  EXPECT_LE(s["copy_busy_us"]["max"].get<double>(), x["copy_us"]["max"].get<double>() + 1);
}

// A long run of `command` on 2 sim cards (16 block files each): its files laid out
// and its workers running. Output to TempDir()/<tag>.out and .err.
inline int start_long_staged(const std::string& command, const std::string& ws, const std::string& tag,
                             const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {command, "--backend", "sim", "--create-workspace", "--workspace", ws, "-s",
                                   "64K",   "-n",        "16",  "-d", "2", "-i", "1000000", "--timeout", "0"};
  args.insert(args.end(), extra.begin(), extra.end());
  const int pid = start_tool(args, ::testing::TempDir() + tag + ".out", ::testing::TempDir() + tag + ".err");
  wait_children_busy(pid, 2);
  return pid;
}

// Card 1's worker killed: exit 1 naming it, no child, file or shared memory left.
inline void expect_killed_worker_leaves_nothing(const std::string& command, const std::string& ws) {
  const auto before = our_shm_entries();
  const std::string tag = command + "-killed";
  const int pid = start_long_staged(command, ws, tag);
  auto kids = child_pids(pid);
  ASSERT_EQ(kids.size(), 2u);
  EXPECT_EQ(disk::entries(ws).size(), 32u) << "two cards' 16 block files each, while running";
  kill(kids[1], SIGKILL);
  EXPECT_EQ(wait_tool(pid), 1);
  const std::string err = slurp(::testing::TempDir() + tag + ".err");
  EXPECT_TRUE(disk::contains(err, "card 1: killed by signal 9")) << err;
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_FALSE(disk::exists(ws)) << disk::entries(ws).size() << " entries left";
  EXPECT_EQ(our_shm_entries(), before);
}

// Ctrl-C: exit 130, no child, file or shared memory left (`extra`: e.g. --keep).
inline void expect_ctrl_c_leaves_nothing(const std::string& command, const std::string& ws,
                                         const std::vector<std::string>& extra = {}) {
  const auto before = our_shm_entries();
  const int pid = start_long_staged(command, ws, command + "-sigint", extra);
  auto kids = child_pids(pid);
  ASSERT_EQ(kids.size(), 2u);
  kill(pid, SIGINT);
  EXPECT_EQ(wait_tool(pid), 130);
  for (int k : kids) EXPECT_NE(kill(k, 0), 0) << "child " << k << " still alive";
  EXPECT_FALSE(disk::exists(ws)) << disk::entries(ws).size() << " entries left";
  EXPECT_EQ(our_shm_entries(), before);
}

// A 4 MiB tmpfs: 2 cards x 3 files of 1 MiB cannot fit; found before anything is
// written, a clean exit 1 with nothing left (root only: the mount).
inline void expect_full_filesystem_refused(const std::string& command) {
  const disk::SmallTmpfs fs;
  if (fs.dir.empty()) GTEST_SKIP() << fs.error;
  const auto r = run_tool({command, "--backend", "sim", "--create-workspace", "--workspace", fs.dir + "/ws", "-s", "1M",
                           "-n", "3", "-d", "2", "--buffered"});
  const auto left = disk::entries(fs.dir);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(disk::contains(r.err, "No space left on device")) << r.err;
  EXPECT_TRUE(disk::contains(r.err, "(3 block files of 3, for each of 2 cards)")) << r.err;
  EXPECT_TRUE(disk::contains(r.err, "nothing was written")) << r.err;
  EXPECT_EQ(lines_starting(r.err, "dev-sandbox: error:").size(), 1u) << r.err;
  EXPECT_TRUE(left.empty()) << "left behind: " << (left.empty() ? "" : left[0]);
}

// --block-table through the cuda double's call log: the device addresses (`key`: "dst"
// of cuMemcpyHtoDAsync_v2, "src" of cuMemcpyDtoHAsync_v2) of the first `n` calls of
// `call`, as slots: (address - the lowest of them) / block_bytes. With slot 0 among
// them, the lowest is the pool's start, so these are the slots the copies used.
inline std::vector<uint64_t> copy_slots(const std::string& log, const std::string& call, const std::string& key,
                                        uint64_t block_bytes, size_t n) {
  std::vector<uint64_t> addr;
  std::istringstream in(log);
  std::string line;
  while (addr.size() < n && std::getline(in, line)) {
    if (line.find(" " + call + " ") == std::string::npos) continue;
    const size_t at = line.find(" " + key + "=");
    if (at == std::string::npos) continue;
    addr.push_back(std::stoull(line.substr(at + key.size() + 2), nullptr, 16));
  }
  if (addr.empty()) return {};
  const uint64_t base = *std::min_element(addr.begin(), addr.end());
  std::vector<uint64_t> slots;
  for (uint64_t a : addr) slots.push_back((a - base) / block_bytes);
  return slots;
}

}  // namespace staged
}  // namespace dstest
