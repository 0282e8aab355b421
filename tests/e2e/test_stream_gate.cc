// --stream-start-gate, -S and --submit-mode end to end (docs/measurement.md,
// "The stream start gate"): on sim, and through the cuda double (both holds:
// cuStreamWaitValue32_v2, and the spin kernel on a driver without it) and the
// AscendCL double (a blocking host callback), whose traces show when each stream
// passed its hold and when each copy was queued and started.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <limits>
#include <vector>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

// A stage's statistic; NaN (which fails every comparison) and a failure when the
// result lacks it, e.g. the empty object of a run that failed: a const json's
// operator[] on a missing key is undefined.
double us(const json& r, const char* stage, const char* stat) {
  if (!r.contains(stage) || !r[stage].contains(stat) || !r[stage][stat].is_number()) {
    ADD_FAILURE() << "no " << stage << "." << stat << " in " << r.dump();
    return std::numeric_limits<double>::quiet_NaN();
  }
  return r[stage][stat].get<double>();
}

// Copy <= GroupWall in every iteration when the engines start only after the
// release (which follows the loop's start stamp) and end before `done`.
void expect_copy_within_wall(const json& r) {
  for (const char* s : {"min", "max", "avg", "p50", "p90"})
    EXPECT_LE(us(r, "copy_us", s), us(r, "wall_us", s) + 1e-3) << s << ": " << r.dump();
}

struct TraceLine {
  long long pid;
  int device;
  std::string stream, what;
  long long ns;
};

// The trace in time order. Lines of different threads can carry the same
// nanosecond; such ties are put in the only order the code allows within one
// iteration: a hold queued, copies queued, the hold passed, copies started.
std::vector<TraceLine> read_trace(const std::string& path, const std::string& held, const std::string& passed) {
  std::vector<TraceLine> lines;
  std::ifstream in(path);
  TraceLine t;
  while (in >> t.pid >> t.device >> t.stream >> t.what >> t.ns) lines.push_back(t);
  auto rank = [&](const std::string& w) {
    return w == held ? 0 : w == "copy-enqueued" ? 1 : w == passed ? 2 : w == "copy-start" ? 3 : 4;
  };
  std::stable_sort(lines.begin(), lines.end(), [&](const TraceLine& a, const TraceLine& b) {
    return a.ns != b.ns ? a.ns < b.ns : rank(a.what) < rank(b.what);
  });
  return lines;
}

// What the gate promises, read off a double's trace: on every stream no copy
// starts between a hold being queued and that hold passing; and on every device,
// once a hold has passed, no copy of that iteration is queued any more (the
// release came after the last submission). `passed` is the trace's word for a
// hold letting go: wait-passed (cuda) or callback-end (ascend).
void expect_trace_gated(const std::string& path, const std::string& held, const std::string& passed,
                        size_t expected_holds) {
  const auto lines = read_trace(path, held, passed);
  ASSERT_FALSE(lines.empty()) << "no trace in " << path;
  std::map<std::tuple<long long, int, std::string>, bool> holding;  // stream -> a hold is queued, not passed
  std::map<std::pair<long long, int>, bool> released;               // device -> a hold passed this iteration
  size_t holds = 0, copies = 0;
  for (const TraceLine& t : lines) {
    const auto stream = std::make_tuple(t.pid, t.device, t.stream);
    const auto device = std::make_pair(t.pid, t.device);
    if (t.what == held) {
      holding[stream] = true;
      released[device] = false;  // a new iteration's holds
      ++holds;
    } else if (t.what == passed) {
      holding[stream] = false;
      released[device] = true;
    } else if (t.what == "copy-start") {
      ++copies;
      EXPECT_FALSE(holding[stream]) << "a copy started on a held stream at " << t.ns << " (pid " << t.pid << ")";
    } else if (t.what == "copy-enqueued") {
      EXPECT_FALSE(released[device]) << "a copy was queued after the gate let device " << t.device << " go, at "
                                     << t.ns;
    }
  }
  EXPECT_EQ(holds, expected_holds);
  EXPECT_GT(copies, 0u);
}

std::string trace_path(const std::string& stem) {
  return "/tmp/dev-sandbox-gate-trace-" + stem + "-" + std::to_string(getpid());
}

}  // namespace

// On sim, every kind of engine runs gated and validates; Copy never exceeds Wall.
TEST(StreamGateSim, EveryStreamedCaseRunsGatedAndValidates) {
  const std::vector<std::string> cases = {"host_to_device_ce", "host_to_device_batch_ce",
                                          "all_host_to_all_device_ce_multi_stream",
                                          "one_share_host_to_all_device_ffts_direct_h2d",
                                          "one_device_to_all_device_ce", "device_to_host_ce"};
  std::vector<std::string> args = {"--backend", "sim", "copy", "-d", "2", "-s", "16K", "-n", "16", "-i", "5",
                                   "--warmup", "1", "--validate", "each", "--stream-start-gate", "on"};
  for (const auto& c : cases) {
    args.push_back("-t");
    args.push_back(c);
  }
  JsonRun r = run_json(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& c : cases) {
    const json res = r.result(c);
    EXPECT_EQ(res["stream_start_gate"], true) << c;
    EXPECT_EQ(res["validated"], true) << c;
    expect_copy_within_wall(res);
  }
}

// The gate takes host submission out of Copy. Small blocks on 4 streams of one
// device (more engine threads than this machine's cores): ungated, the engines
// wait on the submitting thread and Copy carries that; gated, they start after
// every copy was queued. A timing relation on a noisy machine: any of eight
// paired runs showing it is enough. (On sim a worker that waits for a stream whose
// copy thread has not yet taken its queue runs that queue itself, after its
// submission: such a stream's ungated Copy carries no submission stall, so the
// two figures are closer than they were and one pair shows less often.)
TEST(StreamGateSim, GatedCopyIsBelowUngatedForSmallBlocks) {
  auto copy_avg = [](const char* gate) {
    JsonRun r = run_json({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-d", "1",
                          "-S", "4", "-s", "64", "-n", "4000", "-i", "60", "--stream-start-gate", gate});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const json res = r.result("all_host_to_all_device_ce_multi_stream");
    if (std::string(gate) == "on") expect_copy_within_wall(res);
    return us(res, "copy_us", "avg");
  };
  std::string seen;
  for (int attempt = 0; attempt < 8; ++attempt) {
    const double off = copy_avg("off"), on = copy_avg("on");
    seen += " (off " + std::to_string(off) + " us, on " + std::to_string(on) + " us)";
    if (on < off) return;
  }
  ADD_FAILURE() << "gated Copy avg was never below ungated:" << seen;
}

TEST(StreamGateSim, MemcpyCasesRunUngatedAndSaySo) {
  JsonRun r = run_json({"--backend", "sim", "copy", "-t", "host_to_anonymous_memcpy", "-s", "16K", "-n", "4", "-i", "3",
                        "--stream-start-gate", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = r.result("host_to_anonymous_memcpy");
  EXPECT_EQ(res["stream_start_gate"], false);
  ASSERT_EQ(res["notes"].size(), 1u);
  EXPECT_NE(res["notes"][0].get<std::string>().find("no stream to hold"), std::string::npos);
}

TEST(StreamGateSim, RunsThatWouldOverfillAHeldStreamAreRefused) {
  const RunResult r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "-s", "64", "-n", "5000",
                                "-i", "2", "--stream-start-gate", "on"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--stream-start-gate on: host_to_device_ce would queue 5003 operations"), std::string::npos)
      << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  // More streams spread the same blocks thinner.
  const RunResult ms = run_tool({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-d",
                                 "1", "-S", "2", "-s", "64", "-n", "5000", "-i", "2", "--stream-start-gate", "on"});
  EXPECT_EQ(ms.exit_code, 0) << ms.err;
}

TEST(StreamOptions, DashSIsStreams) {
  const std::vector<std::string> base = {"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream",
                                         "-d", "1", "-s", "4K", "-n", "8", "-i", "2"};
  auto streams_of = [&](const std::vector<std::string>& more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    JsonRun r = run_json(a);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.result("all_host_to_all_device_ce_multi_stream")["streams"];
  };
  EXPECT_EQ(streams_of({"-S", "2"}), streams_of({"--streams", "2"}));
  EXPECT_EQ(streams_of({"-S", "3"}), 3);
}

TEST(StreamOptions, BothSubmitModesValidateAndAreRecorded) {
  for (const char* mode : {"stream-major", "round-robin"}) {
    // 7 blocks over 3 streams: uneven ranges for stream-major, a wrap for round-robin.
    JsonRun r = run_json({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-d", "2",
                          "-S", "3", "-s", "4K", "-n", "7", "-i", "3", "--submit-mode", mode, "--validate", "each"});
    ASSERT_EQ(r.exit_code, 0) << mode << ": " << r.err;
    const json res = r.result("all_host_to_all_device_ce_multi_stream");
    EXPECT_EQ(res["submit_mode"], mode);
    EXPECT_EQ(res["validated"], true);
  }
  // UCM's default, and no mode where there is one stream.
  JsonRun d = run_json({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-t",
                        "host_to_device_ce", "-d", "1", "-s", "4K", "-n", "4", "-i", "2"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  EXPECT_EQ(d.result("all_host_to_all_device_ce_multi_stream")["submit_mode"], "stream-major");
  EXPECT_TRUE(d.result("host_to_device_ce")["submit_mode"].is_null());
}

TEST(StreamOptions, BadValuesAreOneLineAndExitTwo) {
  const std::vector<std::vector<std::string>> bad = {
      {"copy", "-t", "host_to_device_ce", "--submit-mode", "zigzag"},
      {"copy", "-t", "host_to_device_ce", "--stream-start-gate", "yes"},
      {"copy", "-t", "host_to_device_ce", "-S", "0"},
      {"trans", "--stream-start-gate", "maybe"},
      {"trans", "--submit-mode", "stream_major"},
  };
  for (auto args : bad) {
    args.insert(args.begin(), {"--backend", "sim"});
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

// Through the doubles: copies of 2 ms per 16 KiB block, 4 ms of host stall per
// submission, so an ungated stream would start copying long before the last
// submission; the trace shows every stream held until all were queued.
struct GateDouble {
  const char* name;
  const char* backend;
  std::map<std::string, std::string> env;
  const char* held;
  const char* passed;
};

void PrintTo(const GateDouble& g, std::ostream* os) { *os << g.name; }

class StreamGateDoubles : public ::testing::TestWithParam<GateDouble> {};

TEST_P(StreamGateDoubles, StreamsAreHeldUntilEveryCopyIsQueued) {
  const GateDouble& g = GetParam();
  const std::string prefix = std::string(g.backend) == "cuda" ? "DS_CUDA_DOUBLE_" : "DS_ACL_DOUBLE_";
  for (const char* c : {"all_host_to_all_device_ce_multi_stream", "all_host_to_all_device_ce"}) {
    SCOPED_TRACE(c);
    const std::string trace = trace_path(g.name);
    unlink(trace.c_str());
    std::map<std::string, std::string> env = g.env;
    env[prefix + "TRACE"] = trace;
    env[prefix + "COPY_NS_PER_KIB"] = "125000";
    env[prefix + "SUBMIT_NS"] = "4000000";
    JsonRun r = run_json({"--backend", g.backend, "copy", "-t", c, "-d", "2", "-S", "2", "-s", "16K", "-n", "3",
                          "-i", "2", "--warmup", "1", "--validate", "--stream-start-gate", "on"},
                         env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json res = r.result(c);
    EXPECT_EQ(res["stream_start_gate"], true);
    EXPECT_EQ(res["validated"], true);
    expect_copy_within_wall(res);
    // 2 devices x streams x 3 iterations (warm-up included).
    const size_t streams = std::string(c) == "all_host_to_all_device_ce" ? 1 : 2;
    expect_trace_gated(trace, g.held, g.passed, 2 * streams * 3);
    // Copy is the engines alone: 3 blocks of 2 ms on 2 streams (2 + 1 blocks) or
    // on one; with the start stamped before the hold it would also carry the 12 ms
    // of submission (Copy >= 14 ms either way).
    // Over two streams ascend's engine time is read on its timing stream, whose start
    // twin the double stamps when that stream's thread wakes, up to a ms late on a
    // loaded machine: that bound keeps a margin a block's worth short of a skipped one.
    const double blocks_per_stream = streams == 2 ? 2 : 3;
    EXPECT_GE(us(res, "copy_us", "min"), blocks_per_stream * 2000 * (streams == 2 ? 0.6 : 0.999));
    // Stamped before the hold, Copy would be at least 14 ms (above): 13 ms leaves the
    // right reading (4 or 6 ms) room on a loaded machine and still fails that bug.
    EXPECT_LT(us(res, "copy_us", "min"), 13000) << "Copy carries submission time";
    unlink(trace.c_str());
  }
}

INSTANTIATE_TEST_SUITE_P(
    Doubles, StreamGateDoubles,
    ::testing::Values(
        GateDouble{"cuda_wait_value", "cuda",
                   {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "4"}},
                   "wait-enqueued", "wait-passed"},
        GateDouble{"cuda_spin_kernel", "cuda",
                   {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE_NOGRAPH}, {"DS_CUDA_DOUBLE_DEVICES", "4"}},
                   "wait-enqueued", "wait-passed"},
        GateDouble{"ascend_callback", "ascend",
                   {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE}, {"DS_ACL_DOUBLE_DEVICES", "8"}},
                   "callback-enqueued", "callback-end"}),
    [](const ::testing::TestParamInfo<GateDouble>& i) { return std::string(i.param.name); });

// ---- The cuda backend's gate hazards, through the libcuda double: copies the
// driver may wait for inside the call (pageable memory, peers without peer
// access), streams that share hardware queues, and a queue that fills anyway.

namespace {

// The double's call log, in a file of the test's own.
struct DoubleLog : dstest::TempFile {
  DoubleLog() : TempFile("ds-gate-cuda-log") {}
};

std::map<std::string, std::string> cuda_env(const DoubleLog& log, std::map<std::string, std::string> more = {}) {
  more["DEV_SANDBOX_CUDA_LIB"] = DS_CUDA_DOUBLE;
  more["DS_CUDA_DOUBLE_DEVICES"] = "4";
  more["DS_CUDA_DOUBLE_LOG"] = log.path();
  return more;
}

bool has_note(const json& res, const std::string& what) {
  if (!res.contains("notes") || !res["notes"].is_array()) return false;
  for (const auto& n : res["notes"])
    if (n.is_string() && n.get<std::string>().find(what) != std::string::npos) return true;
  return false;
}

// What a copy the driver may stage says in the double's log when it was queued
// behind a hold (tests/doubles/cuda/cuda_double.cc, "Staged async copies").
constexpr const char* kHang = "HANG:";

}  // namespace

// Copies of pageable memory (anonymous_*, trans's normal and anonymous host
// types, both directions) are never queued behind a hold: the driver may wait
// for the stream inside the call. They run ungated and say so; pinned ones in the
// same invocation stay gated.
TEST(StreamGateCuda, PageableCopiesRunUngatedAndNeverWaitBehindAHold) {
  DoubleLog log;
  JsonRun c = run_json({"--backend", "cuda", "copy", "-t", "anonymous_to_device_ce", "-t", "host_to_device_ce",
                        "-s", "16K", "-n", "8", "-i", "2", "--validate", "--stream-start-gate", "on", "--timeout",
                        "20"},
                       cuda_env(log));
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(c.result("anonymous_to_device_ce")["stream_start_gate"], false);
  EXPECT_TRUE(has_note(c.result("anonymous_to_device_ce"), "pageable host memory")) << c.out;
  EXPECT_TRUE(has_note(c.result("anonymous_to_device_ce"), ": ran ungated")) << c.out;
  EXPECT_EQ(c.result("anonymous_to_device_ce")["validated"], true);
  EXPECT_EQ(c.result("host_to_device_ce")["stream_start_gate"], true);
  EXPECT_NE(c.err.find("dev-sandbox: note: anonymous_to_device_ce: the CUDA driver may wait for the stream inside a "
                       "copy of pageable host memory"),
            std::string::npos)
      << c.err;

  JsonRun t = run_json({"--backend", "cuda", "trans", "-d", "1", "-H", "normal", "-H", "anonymous", "-H", "pinned",
                        "-M", "ce", "-M", "ms_2", "-s", "16K", "-n", "8", "-i", "2", "--validate",
                        "--stream-start-gate", "on", "--timeout", "20"},
                       cuda_env(log));
  ASSERT_EQ(t.exit_code, 0) << t.err;
  for (const char* dir : {"h2d", "d2h"})
    for (const char* host : {"normal", "anonymous", "pinned"})
      for (const char* m : {"ce", "ms_2"}) {
        const std::string name = std::string(dir) + "_" + host + "_normal_" + m;
        const json res = t.result(name);
        const bool pinned = std::string(host) == "pinned";
        EXPECT_EQ(res["stream_start_gate"], pinned) << name;
        EXPECT_EQ(has_note(res, "pageable host memory"), !pinned) << name << ": " << res.dump();
        EXPECT_EQ(res["validated"], true) << name;
      }
  const std::string text = log.text();
  EXPECT_EQ(text.find(kHang), std::string::npos) << "a staged copy was queued behind a hold";
  EXPECT_NE(text.find("staged from pageable memory"), std::string::npos) << "the double staged the pageable copies";
  EXPECT_NE(text.find("staged to pageable memory"), std::string::npos);
}

// Device 0's memory copied to a device without peer access is staged through the
// host: that worker's streams are not held, and the row says it ran ungated.
// With peer access the same case is gated.
TEST(StreamGateCuda, CopiesStagedBetweenDevicesWithoutPeerAccessRunUngated) {
  DoubleLog log;
  const std::vector<std::string> args = {"--backend", "cuda", "copy", "-t", "one_device_to_all_device_ce", "-d", "2",
                                         "-s", "16K", "-n", "8", "-i", "2", "--validate", "--stream-start-gate", "on",
                                         "--timeout", "20"};
  JsonRun off = run_json(args, cuda_env(log, {{"DS_CUDA_DOUBLE_NO_PEER", "1"}}));
  ASSERT_EQ(off.exit_code, 0) << off.err;
  const json res = off.result("one_device_to_all_device_ce");
  EXPECT_EQ(res["stream_start_gate"], false);
  EXPECT_TRUE(has_note(res, "without peer access")) << res.dump();
  EXPECT_EQ(res["validated"], true);
  const std::string text = log.text();
  EXPECT_NE(text.find("staged between devices without peer access"), std::string::npos) << "no staged copies";
  EXPECT_EQ(text.find(kHang), std::string::npos) << "a staged copy was queued behind a hold";

  JsonRun on = run_json(args, cuda_env(log));
  ASSERT_EQ(on.exit_code, 0) << on.err;
  EXPECT_EQ(on.result("one_device_to_all_device_ce")["stream_start_gate"], true);
  EXPECT_TRUE(on.result("one_device_to_all_device_ce")["notes"].empty());
}

// Streams share the context's CUDA_DEVICE_MAX_CONNECTIONS hardware queues: 4
// streams of 515 operations each fit one stream's bound, but on 2 queues two of
// them fill one together (the double's queues hold 1024): refused up front, one
// line. With 4 queues (one each) the same run is gated and validates.
TEST(StreamGateCuda, StreamsSharingAHardwareQueueAreBoundTogether) {
  DoubleLog log;
  const std::vector<std::string> args = {"--backend", "cuda", "copy", "-t", "all_host_to_all_device_ce_multi_stream",
                                         "-d", "1", "-S", "4", "-s", "64", "-n", "2048", "-i", "2", "--validate",
                                         "--stream-start-gate", "on", "--timeout", "20"};
  const RunResult shared = run_tool(args, cuda_env(log, {{"CUDA_DEVICE_MAX_CONNECTIONS", "2"}}));
  EXPECT_EQ(shared.exit_code, 2) << shared.out << shared.err;
  EXPECT_NE(shared.err.find("--stream-start-gate on: all_host_to_all_device_ce_multi_stream would queue 1030 "
                            "operations on one of the 2 hardware queues its 4 streams share "
                            "(CUDA_DEVICE_MAX_CONNECTIONS=2; it takes 1 to 32)"),
            std::string::npos)
      << shared.err;
  EXPECT_EQ(std::count(shared.err.begin(), shared.err.end(), '\n'), 1) << shared.err;

  const size_t from = log.text().size();  // the second run's part of the log
  JsonRun own = run_json(args, cuda_env(log, {{"CUDA_DEVICE_MAX_CONNECTIONS", "4"}}));
  ASSERT_EQ(own.exit_code, 0) << own.err;
  const json res = own.result("all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(res["stream_start_gate"], true);
  EXPECT_EQ(res["validated"], true);
  EXPECT_EQ(log.text().find("queue-full", from), std::string::npos) << "a queue filled behind the gate";
}

// A queue that fills behind the hold although the bound let the run go (the
// driver gave less room than assumed; here the double's queues hold 256): the
// submission stalls, the gate lets the streams go after its 1 s bound instead of
// waiting for the watchdog, and the run completes, validated, marked ungated.
TEST(StreamGateCuda, ASubmissionStalledBehindTheHoldLetsTheStreamsGo) {
  DoubleLog log;
  JsonRun r = run_json({"--backend", "cuda", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-d", "2", "-S",
                        "2", "-s", "64", "-n", "1200", "-i", "3", "--validate", "--stream-start-gate", "on",
                        "--timeout", "20"},
                       cuda_env(log, {{"DS_CUDA_DOUBLE_QUEUE_DEPTH", "256"}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json res = r.result("all_host_to_all_device_ce_multi_stream");
  EXPECT_EQ(res["stream_start_gate"], false);
  EXPECT_TRUE(has_note(res, "did not return within 1 s while the streams were held")) << res.dump();
  EXPECT_EQ(res["validated"], true);
  EXPECT_NE(log.text().find("queue-full"), std::string::npos) << "the queue never filled: the test shows nothing";
  EXPECT_NE(r.err.find("so it ran ungated"), std::string::npos) << r.err;
}
