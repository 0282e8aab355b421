// What the times mean (docs/measurement.md, "Timing"), end to end through the
// cuda and ascend test doubles, whose copies take a known time here
// (DS_*_DOUBLE_COPY_NS_PER_KIB, _DEVICE_FACTOR, _COLD, _SUBMIT_NS: see
// tests/doubles/double_timing.h). Every check is a relation with a wide margin:
// a lower bound that a sleep makes certain (a copy task never takes less than its
// cost), or an upper bound far from what the right code gives and far below what
// the bug it is there for gives. Each test names that bug:
//   Copy is the slowest device, not the fastest      CopyIsTheSlowestDevice
//   engine time spans every stream, not stream 0     CopySpansEveryStream
//   blocks are spread over the streams               StreamsShareTheBlocks
//   warm-up iterations are not recorded              WarmupIsNotCounted
//   Submit ends when the last submission returned    SubmitExcludesTheWait
//   every iteration starts at the barrier            EveryIterationStartsAtTheBarrier
// Blocks are 4 KiB, so a block's cost is 4 x COPY_NS_PER_KIB.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

// A block of 4 KiB costs `ms`: the per-KiB knob.
std::string block_ms(double ms) { return std::to_string(static_cast<long long>(ms * 1e6 / 4)); }
std::string ms_ns(double ms) { return std::to_string(static_cast<long long>(ms * 1e6)); }

// A stage's statistic in ms (JSON has µs).
double ms(const json& result, const char* stage, const char* stat) {
  if (!result.contains(stage) || !result[stage].contains(stat) || !result[stage][stat].is_number()) {
    ADD_FAILURE() << "no " << stage << "." << stat << " in " << result.dump();
    return -1;
  }
  return result[stage][stat].get<double>() / 1000.0;
}

// Just under `x`: a bound that sleeps make certain, less the last bits of rounding.
double certain(double x) { return x * 0.999; }

// The same for an engine time over several streams. Ascend compares those on its
// timing stream, whose twin of the start event is stamped when that stream's own
// thread in the double wakes after the start event was reached: on a loaded 2-core
// machine under ASan that thread has woken 0.6 ms after a copy stream had already
// begun (39.4 ms read for 40 ms of copies). A tenth off still fails every bug these
// bounds are there for (a copy skipped, a stream's blocks not counted, a time from
// the submissions only).
double certain_joined(double x) { return x * 0.9; }

class Timing : public ::testing::TestWithParam<std::string> {
 protected:
  const std::string& backend() const { return GetParam(); }
  std::string prefix() const { return backend() == "cuda" ? "DS_CUDA_DOUBLE_" : "DS_ACL_DOUBLE_"; }

  // Runs one copy case through the double with these knobs (names without the
  // prefix); the result, or an empty object and a failure.
  json run(const std::string& name, const std::vector<std::string>& args,
           const std::map<std::string, std::string>& knobs) {
    std::map<std::string, std::string> env;
    if (backend() == "cuda")
      env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "4"}};
    else
      env = {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE}, {"DS_ACL_DOUBLE_DEVICES", "8"}};
    for (const auto& kv : knobs) env[prefix() + kv.first] = kv.second;
    std::vector<std::string> full = {"--backend", backend(), "copy", "-t", name};
    full.insert(full.end(), args.begin(), args.end());
    JsonRun r = run_json(full, env);
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.err;
    if (r.exit_code != 0) return json::object();
    return r.result(name);
  }
};

// The same case in a thread per device and in a process per device.
struct Topology {
  const char* name;
  std::vector<std::string> args;
};

}  // namespace

// Copy = max over the devices of their engine time. Device 1 is 6 times slower:
// its blocks take 30 ms, device 0's 5 ms, so Copy is at least device 1's time in
// every iteration; a minimum over the devices would read device 0's 5-10 ms.
TEST_P(Timing, CopyIsTheSlowestDevice) {
  const std::map<std::string, std::string> knobs = {{"COPY_NS_PER_KIB", block_ms(5)}, {"DEVICE_FACTOR", "1:6"}};
  // Threads: one stream, 2 blocks one after the other (60 ms on device 1).
  json threads = run("all_host_to_all_device_ce", {"-s", "4K", "-n", "2", "-d", "2", "-i", "3", "--warmup", "1"},
                     knobs);
  EXPECT_GE(ms(threads, "copy_us", "min"), certain(2 * 30)) << threads["copy_us"].dump();
  // Processes: two streams, a block on each (30 ms on device 1).
  json fork = run("all_host_to_all_device_ce_multi_stream",
                  {"-s", "4K", "-n", "2", "--streams", "2", "-d", "2", "-i", "3", "--warmup", "1"}, knobs);
  EXPECT_GE(ms(fork, "copy_us", "min"), certain_joined(30)) << fork["copy_us"].dump();
}

// Engine time spans the first start to the last end over all streams. Each
// submission stalls the host 40 ms and a block takes 120 ms, a block per stream on
// 4 streams: block k is on its stream 40(k+1) ms after the start events, so the
// last stream ends at least 4 x 40 + 120 = 280 ms after them. Stream 0 alone ends
// when its end event is recorded, after the 4 submissions (about 160 ms). The
// bound sits between the two, leaving 60 ms for a late start stamp.
TEST_P(Timing, CopySpansEveryStream) {
  json r = run("host_to_device_ce_multi_stream",
               {"-s", "4K", "-n", "4", "--streams", "4", "-i", "3", "--warmup", "1"},
               {{"COPY_NS_PER_KIB", block_ms(120)}, {"SUBMIT_NS", ms_ns(40)}});
  EXPECT_GE(ms(r, "copy_us", "p50"), (280.0 + 160.0) / 2) << r["copy_us"].dump();
}

// 8 blocks of 20 ms: one stream takes at least 160 ms; four streams, two blocks
// each, at least 40 ms and about that. Every block on stream 0 would take 160 ms
// with four streams too.
TEST_P(Timing, StreamsShareTheBlocks) {
  const std::map<std::string, std::string> knobs = {{"COPY_NS_PER_KIB", block_ms(20)}};
  json one = run("host_to_device_ce_multi_stream", {"-s", "4K", "-n", "8", "--streams", "1", "-i", "3", "--warmup", "1"},
                 knobs);
  json four = run("host_to_device_ce_multi_stream",
                  {"-s", "4K", "-n", "8", "--streams", "4", "-i", "3", "--warmup", "1"}, knobs);
  EXPECT_GE(ms(one, "copy_us", "min"), certain(8 * 20)) << one["copy_us"].dump();
  EXPECT_GE(ms(four, "copy_us", "min"), certain_joined(2 * 20)) << four["copy_us"].dump();
  EXPECT_LT(ms(four, "copy_us", "p50"), 0.5 * ms(one, "copy_us", "p50"))
      << "4 streams: " << four["copy_us"].dump() << "\n1 stream: " << one["copy_us"].dump();
}

// The first 2 copy tasks of every stream take 150 ms more (a cold first
// iteration); blocks take 5 ms. With one warm-up iteration those land in it, and
// no measured iteration comes near 150 ms; recorded, the warm-up would read at
// least 300 ms. First, without warm-up, that the cold copies are seen at all.
TEST_P(Timing, WarmupIsNotCounted) {
  const std::map<std::string, std::string> knobs = {{"COPY_NS_PER_KIB", block_ms(5)}, {"COLD", "2:" + ms_ns(150)}};
  json cold = run("host_to_device_ce", {"-s", "4K", "-n", "2", "-i", "2", "--warmup", "0"}, knobs);
  EXPECT_GE(ms(cold, "copy_us", "max"), certain(2 * 155)) << cold["copy_us"].dump();

  const std::vector<Topology> topologies = {
      {"all_host_to_all_device_ce", {"-s", "4K", "-n", "2", "-d", "2", "-i", "3", "--warmup", "1"}},
      {"all_host_to_all_device_ce_multi_stream",
       {"-s", "4K", "-n", "4", "--streams", "2", "-d", "2", "-i", "3", "--warmup", "1"}},
  };
  for (const Topology& t : topologies) {
    json r = run(t.name, t.args, knobs);
    EXPECT_LT(ms(r, "copy_us", "max"), 150.0 / 2) << t.name << ": " << r["copy_us"].dump();
  }
}

// Submit ends when the last submission returned, before the wait: 2 blocks of 60
// ms take at least 120 ms to copy, and submitting them takes far less than half
// of that. Stamped after the wait, Submit would be at least 120 ms.
TEST_P(Timing, SubmitExcludesTheWait) {
  json r = run("host_to_device_ce", {"-s", "4K", "-n", "2", "-i", "3", "--warmup", "1"},
               {{"COPY_NS_PER_KIB", block_ms(60)}});
  EXPECT_GE(ms(r, "copy_us", "min"), certain(2 * 60)) << r["copy_us"].dump();
  EXPECT_LT(ms(r, "submit_us", "p50"), 60.0) << r["submit_us"].dump();
}

// Every worker waits at the barrier before every iteration. Device 1 takes 150 ms
// an iteration, device 0 10 ms: aligned, the starts are close and an iteration's
// Wall is about 150 ms. Aligned only before the first iteration, device 0 runs
// ahead by 140 ms an iteration: at the k-th iteration (warm-up counted) the starts
// are 140k ms apart and Wall is 150 + 140k ms (k = 1, 2, 3 here).
TEST_P(Timing, EveryIterationStartsAtTheBarrier) {
  const std::map<std::string, std::string> knobs = {{"COPY_NS_PER_KIB", block_ms(10)}, {"DEVICE_FACTOR", "1:15"}};
  const std::vector<Topology> topologies = {
      {"all_host_to_all_device_ce", {"-s", "4K", "-n", "1", "-d", "2", "-i", "3", "--warmup", "1"}},
      {"all_host_to_all_device_ce_multi_stream",
       {"-s", "4K", "-n", "1", "--streams", "1", "-d", "2", "-i", "3", "--warmup", "1"}},
  };
  bool skew_in_json = true;
  for (const Topology& t : topologies) {
    json r = run(t.name, t.args, knobs);
    EXPECT_GE(ms(r, "copy_us", "min"), certain(150)) << t.name << ": " << r["copy_us"].dump();
    EXPECT_LT(ms(r, "wall_us", "p50"), 150.0 + 140.0 / 2) << t.name << ": " << r["wall_us"].dump();
    // StartSkew itself, where the JSON carries it (start_skew_us).
    if (!r.contains("start_skew_us")) {
      skew_in_json = false;
      continue;
    }
    EXPECT_LT(ms(r, "start_skew_us", "p50"), 140.0 / 2) << t.name << ": " << r["start_skew_us"].dump();
  }
  if (!skew_in_json)
    RecordProperty("note", "JSON has no start_skew_us yet: the Wall-based consequence was checked instead");
}

INSTANTIATE_TEST_SUITE_P(Doubles, Timing, ::testing::Values(std::string("cuda"), std::string("ascend")),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
