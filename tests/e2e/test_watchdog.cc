// --timeout: a worker that stops making progress (here: its process stopped with
// SIGSTOP, as a hung driver call would hold it) ends the run with exit 1 within
// the timeout and a few seconds, naming the device, the phase and the iteration;
// every child is gone and nothing is left in /dev/shm or the aio workspace.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"

using namespace dstest;

namespace {

struct Stalled {
  int code;
  double seconds;  // from SIGSTOP to exit
  std::string err;
  std::vector<int> children;
};

// Starts `args`, waits for `children` child processes and a moment of work, stops
// the child `which` with SIGSTOP and waits for the tool to end.
Stalled stop_a_child(const std::string& tag, const std::vector<std::string>& args, size_t children, size_t which) {
  const std::string out = ::testing::TempDir() + tag + ".out", err = ::testing::TempDir() + tag + ".err";
  const int pid = start_tool(args, out, err);
  Stalled s{};
  s.children = wait_children_busy(pid, children);
  if (s.children.size() != children) {
    kill(pid, SIGKILL);
    wait_tool(pid);
    ADD_FAILURE() << "expected " << children << " children, found " << s.children.size();
    return s;
  }
  const auto t0 = std::chrono::steady_clock::now();
  kill(s.children[which], SIGSTOP);
  s.code = wait_tool(pid);
  s.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  s.err = slurp(err);
  return s;
}

void expect_all_gone(const std::vector<int>& children) {
  for (int k : children)
    EXPECT_TRUE(wait_until([k] { return kill(k, 0) != 0; })) << "child " << k << " still alive";
}

}  // namespace

TEST(Watchdog, StoppedForkWorkerEndsTheRunNamingDeviceAndIteration) {
  const auto before = our_shm_entries();
  const Stalled s = stop_a_child("wd-fork",
                                 {"copy", "--backend", "sim", "-t", "one_share_host_to_all_device_ce_multi_stream",
                                  "-s", "64K", "-n", "16", "-i", "100000000", "-d", "3", "--timeout", "1"},
                                 3, 1);
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_LT(s.seconds, 1 + 5.0) << s.err;
  // Stopped while copying, or at the barrier that starts an iteration (the others
  // then go through it and wait at the next one): either way its iteration is named.
  EXPECT_TRUE(s.err.find("device 1: no progress for 1 s in iteration ") != std::string::npos ||
              s.err.find("device 1: no progress for 1 s in the barrier at iteration ") != std::string::npos)
      << s.err;
  const std::string said = without_run_lines(s.err);
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << s.err;
  expect_all_gone(s.children);
  EXPECT_EQ(our_shm_entries(), before);
}

TEST(Watchdog, StoppedSingleCardCaseEndsTheRun) {
  // The single-card case runs in one child process (the runtime never lives in
  // the parent), with no barrier to notice anything: only the watchdog does.
  const Stalled s = stop_a_child("wd-single",
                                 {"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "64K", "-n", "16", "-i",
                                  "100000000", "--timeout", "1"},
                                 1, 0);
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_LT(s.seconds, 1 + 5.0);
  // Stopped while copying ("in iteration ..."), or in the instant at its own barrier.
  EXPECT_NE(s.err.find("device 0: no progress for 1 s "), std::string::npos) << s.err;
  expect_all_gone(s.children);
}

TEST(Watchdog, StoppedThreadCaseEndsTheRun) {
  const Stalled s = stop_a_child("wd-threads",
                                 {"copy", "--backend", "sim", "-t", "all_host_to_all_device_ce", "-s", "64K", "-n",
                                  "16", "-i", "100000000", "-d", "2", "--timeout", "1"},
                                 1, 0);
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_LT(s.seconds, 1 + 5.0);
  // The whole process stops, so every thread stops wherever it is: copying (named),
  // or all of them at a barrier (then no single device can be named).
  EXPECT_NE(s.err.find("no progress for 1 s"), std::string::npos) << s.err;
  expect_all_gone(s.children);
}

// `command(ws)` in a fresh /dev/shm workspace `ws` it creates (--timeout 1), its child
// `which` of `children` stopped: exit 1 within the timeout and a few seconds naming
// `named` (and saying `also`, when given); every child gone, the workspace and its
// files removed and nothing else left in /dev/shm.
static void expect_stopped_worker_named(const std::string& tag,
                                        const std::function<std::vector<std::string>(const std::string&)>& command,
                                        size_t children, size_t which, const std::string& named,
                                        const std::string& also = "") {
  const std::string ws = "/dev/shm/ds-" + tag + "-" + std::to_string(getpid());
  const dstest::ScopedPath ws_guard(ws);  // removed also when an assertion ends the test
  const auto before = our_shm_entries();
  const Stalled s = stop_a_child(tag, command(ws), children, which);
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_LT(s.seconds, 1 + 5.0);
  EXPECT_NE(s.err.find(named + ": no progress for 1 s "), std::string::npos) << s.err;
  if (!also.empty()) EXPECT_NE(s.err.find(also), std::string::npos) << s.err;
  expect_all_gone(s.children);
  struct stat st;
  EXPECT_NE(stat(ws.c_str(), &st), 0) << "the workspace the run created was left behind";
  EXPECT_EQ(our_shm_entries(), before);
}

// aio (--buffered) with `args` added: the stopped worker named with its epoch.
static void expect_stopped_aio_worker_named(const std::string& tag, const std::vector<std::string>& args,
                                            size_t children, size_t which, const std::string& named) {
  expect_stopped_worker_named(
      tag,
      [&](const std::string& ws) {
        std::vector<std::string> cmd = {"aio", "--backend", "sim", "--create-workspace", "--workspace", ws,
                                        "--buffered", "--io-size", "64K", "--epoch-number", "1000000", "--iodepth",
                                        "4", "--timeout", "1"};
        cmd.insert(cmd.end(), args.begin(), args.end());
        return cmd;
      },
      children, which, named, " epoch ");
}

TEST(Watchdog, StoppedAioWorkerEndsTheRunAndTheWorkspaceIsRemoved) {
  expect_stopped_aio_worker_named("wd-aio", {"--io-number", "64"}, 1, 0, "aio_dump worker 0");
}

// With --workers 2 (forked workers, each its own files) in a mixed phase: the
// stopped worker is named (stopped during its I/O or at the barrier that starts an
// epoch), every process ends and both workers' files and the workspace are removed.
TEST(Watchdog, StoppedAioWorkerOfTwoIsNamedAndNothingIsLeft) {
  expect_stopped_aio_worker_named("wd-aio2", {"--io-number", "32", "--workers", "2", "--phases", "mix", "--mix", "2"},
                                  2, 1, "aio_mixed worker 1");
}

TEST(Watchdog, TimeoutValues) {
  for (const char* bad : {"-1", "x", "1e3", ""}) {
    const RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "--timeout", bad});
    EXPECT_EQ(r.exit_code, 2) << bad << ": " << r.err;
    EXPECT_NE(r.err.find("--timeout"), std::string::npos) << r.err;
  }
  // 0 switches the watchdog off; a normal run is unaffected either way.
  for (const char* ok : {"0", "1"}) {
    const RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "4K", "-n", "4", "-i",
                                  "3", "--timeout", ok});
    EXPECT_EQ(r.exit_code, 0) << ok << ": " << r.err;
  }
}

// load/offload's workers (--buffered), `args` first, card 1 of two stopped: named,
// its block files and the workspace removed.
static void expect_stopped_staged_card_named(const std::string& tag, const std::vector<std::string>& args) {
  expect_stopped_worker_named(
      tag,
      [&](const std::string& ws) {
        std::vector<std::string> cmd = args;
        cmd.insert(cmd.end(), {"--backend", "sim", "--create-workspace", "--workspace", ws, "--buffered", "-s", "64K",
                               "-n", "16", "-i", "100000", "-d", "2", "--timeout", "1"});
        return cmd;
      },
      2, 1, "card 1");
}

TEST(Watchdog, StoppedOffloadCardEndsTheRunAndItsFilesAreRemoved) {
  expect_stopped_staged_card_named("wd-offload", {"offload"});
}

TEST(Watchdog, StoppedCardOfALoadWithOffloadsEndsTheRun) {
  expect_stopped_staged_card_named("wd-mix", {"load", "--offload-ratio", "0.5"});
}

// A duplex case's worker: each direction on its own streams, in one process per card.
TEST(Watchdog, StoppedDuplexWorkerEndsTheRun) {
  const auto before = our_shm_entries();
  const Stalled s = stop_a_child("wd-duplex",
                                 {"copy", "--backend", "sim", "-t", "all_host_to_all_device_duplex_ce_multi_stream",
                                  "-s", "64K", "-n", "16", "-i", "100000", "-d", "2", "--timeout", "1"},
                                 2, 1);
  EXPECT_EQ(s.code, 1) << s.err;
  EXPECT_LT(s.seconds, 1 + 5.0);
  EXPECT_TRUE(s.err.find("device 1: no progress for 1 s in iteration ") != std::string::npos ||
              s.err.find("device 1: no progress for 1 s in the barrier at iteration ") != std::string::npos)
      << s.err;
  expect_all_gone(s.children);
  EXPECT_EQ(our_shm_entries(), before);
}
