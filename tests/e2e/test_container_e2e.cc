// Where users run the tool: inside a container under Docker's default seccomp
// profile without CAP_SYS_NICE (the launcher tests/tools/docker_seccomp.c refuses,
// with EPERM, the placement calls that profile refuses, and io_uring with
// --no-io-uring), and with a CPU set that does not hold the card's node's CPUs.
// Every measurement completes with one note; the page census reads "unknown";
// only what was asked for explicitly (--numa-map, --shm-numa-nodes, --engine
// io_uring) is refused, with the call, the errno and the fix.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "disk_fixtures.h"
#include "json_checks.h"

using namespace dstest;
using namespace dstest::disk;

namespace {

class ContainerEnv : public ::testing::Environment {
 public:
  void TearDown() override {
    if (!disk_base().empty()) remove_tree(disk_base());
  }
};
[[maybe_unused]] const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ContainerEnv);

const char* const kPolicyNote = "dev-sandbox: note: NUMA: placement calls refused here (set_mempolicy, mbind, "
                                "get_mempolicy, move_pages: Operation not permitted)";

RunResult in_container(const std::vector<std::string>& args, bool no_io_uring = false,
                       const std::map<std::string, std::string>& env = {}) {
  RunOptions o;
  o.wrap = docker_profile(no_io_uring);
  o.env = env;
  o.env.emplace("DEV_SANDBOX_SIM_DEVICES", "2");
  return run_tool_opts(args, o);
}

JsonRun in_container_json(std::vector<std::string> args, bool no_io_uring = false,
                          const std::map<std::string, std::string>& env = {}) {
  args.insert(args.end(), {"--format", "json"});
  JsonRun r;
  static_cast<RunResult&>(r) = in_container(args, no_io_uring, env);
  r.doc = json::parse(r.out, nullptr, false);
  if (r.doc.is_discarded()) r.doc = nullptr;
  return r;
}

// Its notes and errors: what the run says about itself (the backend, the plan, each
// finished case) left out, by their exact forms.
std::vector<std::string> stderr_lines(const std::string& err) { return lines_starting(without_run_lines(err), ""); }

// Each worker placed (node 0), pinned, its memory policy refused and its buffers'
// pages unknown: what JSON must say when the placement calls are refused.
void expect_unbound(const json& numa, size_t workers) {
  ASSERT_TRUE(numa.is_object()) << numa.dump();
  EXPECT_EQ(numa["mode"], "auto");
  EXPECT_TRUE(numa["placed"].is_null()) << numa.dump();
  ASSERT_EQ(numa["workers"].size(), workers) << numa.dump();
  for (const json& w : numa["workers"]) {
    EXPECT_EQ(w["node"], 0);
    EXPECT_EQ(w["cpus_pinned"], true);
    EXPECT_EQ(w["memory_policy"], "refused: set_mempolicy: Operation not permitted");
    EXPECT_TRUE(w["placed"].is_null());
    for (const json& b : w["buffers"]) {
      EXPECT_EQ(b["census"], "refused: move_pages: Operation not permitted");
      EXPECT_TRUE(b["pages_by_node"].is_null());
      EXPECT_TRUE(b["bound_to"].is_null()) << "nothing is bound where mbind is refused";
      EXPECT_GT(b["pages"].get<uint64_t>(), 0u);
    }
  }
}

TEST(Container, TheLauncherRefusesWhatDockersProfileRefuses) {
  // The tool's own doctor line says which calls this process may make: probed.
  const RunResult r = in_container({"--backend", "sim", "doctor"}, true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("environment: placement calls refused: set_mempolicy, mbind, get_mempolicy, move_pages: "
                       "Operation not permitted; io_uring no (io_uring_queue_init(1): Operation not permitted)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("environment: note: --numa auto runs unbound"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--cap-add SYS_NICE"), std::string::npos) << r.out;
  const RunResult open = run_tool({"--backend", "sim", "doctor"});
  ASSERT_EQ(open.exit_code, 0) << open.err;
  EXPECT_NE(open.out.find("environment: placement calls all allowed"), std::string::npos) << open.out;
  EXPECT_EQ(open.out.find("environment: note:"), std::string::npos) << open.out;
}

// The seed's eight quick-mode combinations: each completes, validated, with the one note.
TEST(Container, TheSeedsQuickModesRunWithOneNote) {
  for (const char* model : {"gqa", "mla"})
    for (const char* iodirect : {"false", "true"})
      for (const char* sdma : {"false", "true"}) {
        SCOPED_TRACE(std::string(model) + " iodirect " + iodirect + " sdma " + sdma);
        const JsonRun r = in_container_json({"--backend", "sim", "--model-type", model, "--iodirect", iodirect,
                                             "--sdma", sdma, "-s", "16K", "-n", "16", "-i", "4", "-d", "2",
                                             "--validate"});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        ASSERT_EQ(r.doc["results"].size(), 1u) << r.out;
        const json& res = r.doc["results"][0];
        EXPECT_EQ(res["validated"], true);
        expect_unbound(res["numa"], 2);
        const auto lines = stderr_lines(r.err);
        ASSERT_EQ(lines.size(), 1u) << r.err;
        EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
        EXPECT_NE(lines[0].find("--cap-add SYS_NICE"), std::string::npos) << lines[0];
      }
}

TEST(Container, TransRunsWithOneNote) {
  const RunResult r = in_container({"--backend", "sim", "trans", "-t", "H2D", "-s", "4K", "-n", "8", "-i", "4", "-d",
                                    "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[[ h2d_"), std::string::npos) << r.out;
  const auto lines = stderr_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
}

// --numa off places nothing, so nothing is refused: no note; the census is still
// a report, "unknown", never a failure (it was one: move_pages EPERM, exit 1).
TEST(Container, NumaOffRunsAndTheCensusIsUnknown) {
  const JsonRun r = in_container_json({"--backend", "sim", "--model-type", "gqa", "--iodirect", "true", "--sdma",
                                       "false", "-s", "16K", "-n", "8", "-i", "2", "-d", "2", "--numa", "off",
                                       "--validate"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_run_lines(r.err), "");
  const json& numa = r.doc["results"][0]["numa"];
  EXPECT_EQ(numa["mode"], "off");
  for (const json& w : numa["workers"])
    for (const json& b : w["buffers"]) EXPECT_EQ(b["census"], "refused: move_pages: Operation not permitted");
}

TEST(Container, AioWithLibaioAndPsyncRunsWithOneNote) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const char* engine : {"libaio", "psync"}) {
    SCOPED_TRACE(engine);
    const std::string ws = disk_base() + "/" + unique_name("aio");
    ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
    const JsonRun r = in_container_json({"--backend", "sim", "aio", "--create-workspace", "--workspace", ws, "--io-size", "64K",
                                         "--io-number", "16", "--epoch-number", "2", "--engine", engine,
                                         "--validate"},
                                        true);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_unbound(r.result("aio_load")["numa"], 1);
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
    EXPECT_TRUE(entries(ws).empty()) << "shard files left behind";
    rmdir(ws.c_str());
  }
}

TEST(Container, LoadRunsWithOneNote) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("load");
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  const JsonRun r = in_container_json({"--backend", "sim", "load", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "8", "-d",
                                       "2", "-i", "2", "--warmup", "1", "--validate"},
                                      true);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result("load");
  EXPECT_EQ(x["validated"], true);
  expect_unbound(x["numa"], 2);
  const auto lines = stderr_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
  rmdir(ws.c_str());
}

// The staged measurements that write: offload (device -> staging -> disk) and a load
// with offloads beside it (load --offload-ratio, two pipelines and a thread per card):
// validated, every card placed but unbound, the one note, the files removed.
struct StagedRun {
  const char* what;
  std::vector<std::string> args;  // after the sub-command and its workspace
  const char* result;
};

const std::vector<StagedRun>& staged_runs() {
  static const std::vector<StagedRun> runs = {
      {"offload", {"-s", "64K", "-n", "8", "-d", "2", "-i", "2", "--warmup", "1", "--validate"}, "offload"},
      {"load",
       {"-s", "64K", "-n", "8", "-d", "2", "-i", "2", "--warmup", "1", "--offload-ratio", "0.5", "--validate"},
       "load+offload"},
  };
  return runs;
}

std::vector<std::string> staged_args(const StagedRun& s, const std::string& ws) {
  std::vector<std::string> args = {"--backend", "sim", s.what, "--create-workspace", "--workspace", ws};
  args.insert(args.end(), s.args.begin(), s.args.end());
  return args;
}

TEST(Container, OffloadAndLoadWithOffloadsRunWithOneNote) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  for (const StagedRun& s : staged_runs()) {
    SCOPED_TRACE(s.result);
    const std::string ws = disk_base() + "/" + unique_name("staged");
    ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
    const JsonRun r = in_container_json(staged_args(s, ws), true);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json x = r.result(s.result);
    EXPECT_EQ(x["validated"], true);
    expect_unbound(x["numa"], 2);
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
    EXPECT_TRUE(entries(ws).empty()) << "block files left behind";
    rmdir(ws.c_str());
  }
}

// What was asked for explicitly is refused cleanly: exit 1, one line naming the
// option, the call, the errno and the fix; nothing started.
TEST(Container, ExplicitPlacementIsRefusedNamingTheCallAndTheFix) {
  struct Ask {
    std::vector<std::string> args;
    const char* call;
  };
  const std::vector<Ask> asks = {
      {{"--backend", "sim", "--model-type", "gqa", "--iodirect", "false", "--sdma", "false", "-s", "16K", "-n", "4",
        "-i", "2", "-d", "2", "--numa-map", "0:0,1:0"},
       "option --numa-map places each worker's memory with set_mempolicy, which this process may not make "
       "(set_mempolicy: Operation not permitted)"},
      {{"--backend", "sim", "--model-type", "mla", "--iodirect", "false", "--sdma", "false", "-s", "16K", "-n", "4",
        "-i", "2", "-d", "2", "--shm-numa-nodes", "0"},
       "option --shm-numa-nodes binds the shared region's parts to their nodes with mbind, which this process may "
       "not make (mbind: Operation not permitted)"},
      {{"--backend", "sim", "trans", "-s", "4K", "-n", "4", "-i", "2", "-d", "1", "--numa-map", "0:0"},
       "option --numa-map places each worker's memory with set_mempolicy"},
  };
  for (const Ask& a : asks) {
    SCOPED_TRACE(a.call);
    const auto before = our_shm_entries();
    const RunResult r = in_container(a.args);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_EQ(r.out, "");
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(std::string("dev-sandbox: error: ") + a.call, 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find("--cap-add SYS_NICE"), std::string::npos) << lines[0];
    EXPECT_EQ(our_shm_entries(), before);
  }
}

TEST(Container, IoUringAskedForWhereItIsRefusedNamesTheCall) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("uring");
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  const RunResult r = in_container({"--backend", "sim", "aio", "--create-workspace", "--workspace", ws, "--io-number", "4",
                                    "--epoch-number", "1", "--engine", "io_uring"},
                                   true);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("io_uring_queue_init(64): Operation not permitted"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("use --engine libaio"), std::string::npos) << r.err;
  EXPECT_TRUE(entries(ws).empty()) << "shard files left behind";
  rmdir(ws.c_str());
}

// A recorded two-socket tree: card 1 sits on node 1, whose CPUs (16-31,48-63) this
// machine's process may not use. Its worker runs on the CPUs it may use, said once
// and recorded; under the profile, so that node 1 (not on this machine) is never
// handed to the kernel.
TEST(Container, ACardWhoseNodesCpusAreOutsideTheCpuSetRunsOnTheAllowedOnes) {
  const std::map<std::string, std::string> env = {{"DS_SYSFS_ROOT", std::string(DS_SYSFS_DATA) + "/two_sockets"}};
  const JsonRun r = in_container_json({"--backend", "sim", "--model-type", "gqa", "--iodirect", "false", "--sdma",
                                       "false", "-s", "16K", "-n", "8", "-i", "2", "-d", "2", "--validate"},
                                      false, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json& workers = r.doc["results"][0]["numa"]["workers"];
  ASSERT_EQ(workers.size(), 2u);
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  int highest = -1;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) highest = c;
  if (highest >= 16) GTEST_SKIP() << "this machine has CPUs of the recorded node 1";
  EXPECT_EQ(workers[1]["device"], 1);
  EXPECT_EQ(workers[1]["node"], 1);
  EXPECT_EQ(workers[1]["cpus_from"], "outside_node");
  EXPECT_EQ(workers[1]["cpus_pinned"], false);
  EXPECT_EQ(workers[0]["cpus_from"], "node_cpus_allowed");  // node 0 is 0-15,32-47: only some are here
  const auto lines = stderr_lines(r.err);
  ASSERT_EQ(lines.size(), 2u) << r.err;
  EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
  EXPECT_EQ(lines[1].rfind("dev-sandbox: note: NUMA: this process may use CPUs ", 0), 0u) << lines[1];
  EXPECT_NE(lines[1].find("card 1 (node 1, CPUs 16-31,48-63) runs on CPUs "), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("none of them its node's"), std::string::npos) << lines[1];
}

// Without the profile: a CPU set of one CPU, and a tree whose node 0 (this
// machine's) holds only the other one. The worker keeps the CPU it may use and
// its memory policy still applies.
TEST(Container, ACpuSetWithoutTheNodesCpusKeepsItsOwnAndStillBinds) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  std::vector<int> cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  if (cpus.size() < 2) GTEST_SKIP() << "needs two CPUs";
  const std::string root = disk_base().empty() ? std::string() : disk_base() + "/" + unique_name("sysfs");
  if (root.empty()) GTEST_SKIP() << "no scratch directory";
  const std::string node = root + "/sys/devices/system/node/node0";
  ASSERT_EQ(system(("mkdir -p " + node).c_str()), 0);
  std::ofstream(node + "/cpulist") << cpus[0] << "\n";
  RunOptions o;
  o.env = {{"DS_SYSFS_ROOT", root}, {"DEV_SANDBOX_SIM_DEVICES", "1"}};
  o.cpus = {cpus[1]};
  RunResult rr = run_tool_opts({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-s",
                                "16K", "-n", "8", "-i", "2", "-d", "1", "--validate", "--format", "json"},
                               o);
  ASSERT_EQ(system(("rm -rf " + root).c_str()), 0);
  ASSERT_EQ(rr.exit_code, 0) << rr.err;
  const json doc = json::parse(rr.out);
  const json& w = doc["results"][0]["numa"]["workers"][0];
  EXPECT_EQ(w["cpus_from"], "outside_node");
  EXPECT_EQ(w["cpus"], std::to_string(cpus[1]));
  EXPECT_EQ(w["memory_policy"], "preferred");
  EXPECT_EQ(w["placed"], true);
  EXPECT_NE(rr.err.find("card 0 (node 0, CPUs " + std::to_string(cpus[0]) + ") runs on CPUs " +
                        std::to_string(cpus[1]) + ", none of them its node's"),
            std::string::npos)
      << rr.err;
}

}  // namespace

namespace {

// As an unprivileged user inside the profile (uid 65534 where it can reach the
// binary, else without CAP_IPC_LOCK), with a container's 8 MiB memlock limit:
// the odirect buffers sim locks fit, the run completes with the one note.
TEST(Container, UnprivilegedInsideTheProfile) {
  RunOptions o;
  o.wrap = docker_profile(true);
  o.env = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};
  o.unprivileged = true;
  o.memlock_limit = 8L << 20;
  const RunResult r = run_tool_opts({"--backend", "sim", "--model-type", "gqa", "--iodirect", "true", "--sdma", "false",
                                     "-s", "16K", "-n", "16", "-i", "4", "-d", "2", "--validate"},
                                    o);
  ASSERT_EQ(r.exit_code, 0) << unprivileged_mode(o.env) << ": " << r.err;
  EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
  const auto lines = stderr_lines(r.err);
  ASSERT_EQ(lines.size(), 1u) << r.err;
  EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
}

// The same for offload and load --offload-ratio, their workspace one the
// unprivileged user may write (the scratch directory opened to it for the run).
TEST(Container, UnprivilegedOffloadAndLoadWithOffloadsInsideTheProfile) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  ASSERT_EQ(chmod(disk_base().c_str(), 0711), 0);
  for (const StagedRun& s : staged_runs()) {
    SCOPED_TRACE(s.result);
    const std::string ws = disk_base() + "/" + unique_name("nobody");
    ASSERT_EQ(mkdir(ws.c_str(), 0777), 0);
    ASSERT_EQ(chmod(ws.c_str(), 0777), 0);  // past the umask
    RunOptions o;
    o.wrap = docker_profile(true);
    o.env = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};
    o.unprivileged = true;
    o.memlock_limit = 8L << 20;
    const RunResult r = run_tool_opts(staged_args(s, ws), o);
    ASSERT_EQ(r.exit_code, 0) << unprivileged_mode(o.env) << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("[validation] ") + s.result + " PASS"), std::string::npos) << r.out;
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
    EXPECT_TRUE(entries(ws).empty()) << "block files left behind";
    rmdir(ws.c_str());
  }
  chmod(disk_base().c_str(), 0700);
}

// A stricter profile that also refuses sched_setscheduler: sim's copy threads keep
// the default scheduling policy (not SCHED_BATCH), the runs complete, validated,
// and each says so once, beside the NUMA note: copy, and a load with offloads (two
// pipelines a card, each with its streams).
TEST(Container, ARefusedSchedulingPolicyIsOneNote) {
  std::vector<std::string> wrap = docker_profile(true);
  if (wrap.empty()) GTEST_SKIP() << "no seccomp launcher in this build";
  wrap.insert(wrap.end(), {"--refuse", "sched_setscheduler"});
  const std::string note = "sim: copy threads at the default scheduling policy (pthread_setschedparam SCHED_BATCH: "
                           "Operation not permitted)";
  std::vector<std::vector<std::string>> runs = {{"--backend", "sim", "copy", "-t",
                                                 "all_host_to_all_device_ce_multi_stream", "--streams", "2", "-s",
                                                 "64K", "-n", "8", "-i", "2", "-d", "2", "--validate"}};
  std::string ws;
  if (!disk_base().empty()) {
    ws = disk_base() + "/" + unique_name("sched");
    ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
    runs.push_back(staged_args(staged_runs()[1], ws));
  }
  for (const auto& args : runs) {
    SCOPED_TRACE(args[2]);
    RunOptions o;
    o.wrap = wrap;
    o.env = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};
    const RunResult r = run_tool_opts(args, o);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 2u) << r.err;
    EXPECT_EQ(lines[0].rfind(kPolicyNote, 0), 0u) << lines[0];
    EXPECT_NE(lines[1].find(note), std::string::npos) << lines[1];
  }
  if (!ws.empty()) {
    EXPECT_TRUE(entries(ws).empty()) << "block files left behind";
    rmdir(ws.c_str());
  }
}

// A profile that refuses sched_setaffinity, under `o`: copy on two cards, two streams
// each, validated, as JSON: exit 0, both workers unpinned on the CPUs they were given
// (cpus_from unchanged), exactly one line said; their JSON and that line to the caller.
void copy_on_unpinned_workers(const RunOptions& o, json* workers, std::vector<std::string>* lines) {
  const RunResult r = run_tool_opts({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream",
                                     "--streams", "2", "-s", "64K", "-n", "8", "-i", "2", "-d", "2", "--validate",
                                     "--format", "json"},
                                    o);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out, nullptr, false);
  ASSERT_FALSE(doc.is_discarded()) << r.out;
  *workers = doc["results"][0]["numa"]["workers"];
  ASSERT_EQ(workers->size(), 2u) << doc.dump();
  for (const json& w : *workers) {
    EXPECT_EQ(w["cpus_pinned"], false) << w.dump();
    EXPECT_EQ(w["cpus_from"], "unchanged") << w.dump();
  }
  *lines = stderr_lines(r.err);
  ASSERT_EQ(lines->size(), 1u) << r.err;
}

// A profile stricter than Docker's default that also refuses sched_setaffinity:
// the workers keep the CPUs they were given (JSON says unpinned, cpus_from
// unchanged), one NUMA note names the call and the run passes; sim's readied copy
// threads (load's copy-alone pass with two streams) stay where they woke, with at
// most their own note. --numa-map, which asks for the pinning, is still refused (here
// for set_mempolicy, which the profile refuses first).
TEST(Container, ARefusedPinningLeavesTheWorkersOnTheirCpusWithOneNote) {
  std::vector<std::string> wrap = docker_profile(true);
  if (wrap.empty()) GTEST_SKIP() << "no seccomp launcher in this build";
  wrap.insert(wrap.end(), {"--refuse", "sched_setaffinity"});
  const std::string note =
      "dev-sandbox: note: NUMA: placement calls refused here (set_mempolicy, mbind, get_mempolicy, move_pages, "
      "sched_setaffinity: Operation not permitted): workers run on the CPUs they were given, not pinned to their "
      "cards' nodes'";
  RunOptions o;
  o.wrap = wrap;
  o.env = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};
  {
    json workers;
    std::vector<std::string> lines;
    copy_on_unpinned_workers(o, &workers, &lines);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    EXPECT_EQ(lines[0].rfind(note, 0), 0u) << lines[0];
    EXPECT_NE(lines[0].find("a seccomp profile that allows sched_setaffinity pins them"), std::string::npos)
        << lines[0];
  }
  if (!disk_base().empty()) {
    const std::string ws = disk_base() + "/" + unique_name("pin");
    ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
    const RunResult r = run_tool_opts({"--backend", "sim", "load", "--create-workspace", "--workspace", ws, "-s",
                                       "64K", "-n", "16", "-d", "2", "--streams", "2", "-i", "3", "--warmup", "1",
                                       "--validate"},
                                      o);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
    const auto lines = stderr_lines(r.err);
    ASSERT_GE(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0].rfind(note, 0), 0u) << lines[0];
    for (size_t i = 1; i < lines.size(); ++i)
      EXPECT_NE(lines[i].find("sim: readied copy threads not moved as meant (sched_setaffinity: Operation not "
                              "permitted)"),
                std::string::npos)
          << lines[i];
    EXPECT_TRUE(entries(ws).empty()) << "block files left behind";
    rmdir(ws.c_str());
  }
  {
    const RunResult r = run_tool_opts({"--backend", "sim", "trans", "-s", "4K", "-n", "4", "-i", "2", "-d", "1",
                                       "--numa-map", "0:0"},
                                      o);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("option --numa-map"), std::string::npos) << r.err;
    // Both fixes in the one line: following the first does not meet a second refusal.
    EXPECT_NE(r.err.find("; sched_setaffinity, which pins the workers, is refused too: a seccomp profile that "
                         "allows it\n"),
              std::string::npos)
        << r.err;
  }
  {
    const RunResult r = run_tool_opts({"doctor"}, o);
    EXPECT_NE(r.out.find("environment: placement calls refused: set_mempolicy, mbind, get_mempolicy, move_pages, "
                         "sched_setaffinity: Operation not permitted;"),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("--numa auto leaves workers on the CPUs they were given; a seccomp profile that allows "
                         "sched_setaffinity pins them"),
              std::string::npos)
        << r.out;
  }
}

// A profile that differs from Docker's in refusing sched_setaffinity alone (the
// launcher's --only): the memory calls still bind, the workers stay on the CPUs
// they were given, one note says so, and --numa-map's refusal names the call and
// its own fix (a capability does not get past a seccomp filter).
TEST(Container, PinningRefusedAloneKeepsTheMemoryBoundWithOneNote) {
  std::vector<std::string> wrap = docker_profile();
  if (wrap.empty()) GTEST_SKIP() << "no seccomp launcher in this build";
  wrap = {wrap[0], "--only", "--refuse", "sched_setaffinity"};
  RunOptions o;
  o.wrap = wrap;
  o.env = {{"DEV_SANDBOX_SIM_DEVICES", "2"}};
  {
    json workers;
    std::vector<std::string> lines;
    copy_on_unpinned_workers(o, &workers, &lines);
    ASSERT_FALSE(::testing::Test::HasFatalFailure());
    for (const json& w : workers) {
      EXPECT_EQ(w["memory_policy"], "preferred") << w.dump();
      for (const json& b : w["buffers"]) EXPECT_EQ(b["census"], "made") << b.dump();
    }
    EXPECT_EQ(lines[0],
              "dev-sandbox: note: NUMA: placement calls refused here (sched_setaffinity: Operation not permitted): "
              "workers run on the CPUs they were given, not pinned to their cards' nodes' (JSON numa cpus_from "
              "unchanged); their memory still bound to the nodes; a seccomp profile that allows sched_setaffinity "
              "pins them");
  }
  {
    const RunResult r = run_tool_opts({"--backend", "sim", "trans", "-s", "4K", "-n", "4", "-i", "2", "-d", "1",
                                       "--numa-map", "0:0"},
                                      o);
    EXPECT_EQ(r.exit_code, 1) << r.err;
    const auto lines = stderr_lines(r.err);
    ASSERT_EQ(lines.size(), 1u) << r.err;
    EXPECT_EQ(lines[0],
              "dev-sandbox: error: option --numa-map pins each worker to its node's CPUs with sched_setaffinity, which "
              "this process may not make (sched_setaffinity: Operation not permitted); a seccomp profile that allows "
              "sched_setaffinity lets it");
  }
  {
    const RunResult r = run_tool_opts({"doctor"}, o);
    EXPECT_NE(r.out.find("environment: placement calls refused: sched_setaffinity: Operation not permitted;"),
              std::string::npos)
        << r.out;
  }
}

}  // namespace
