// Several runs in one document (src/measurement/sweep): the sweep's steps, the one
// note that says where the count went down, and the writer kept open across runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/error.h"
#include "measurement/sweep.h"

using namespace ds;

namespace {

// What reached the command's writer, in order.
class Recorder : public ResultWriter {
 public:
  std::vector<std::string> calls;
  void begin(const RunInfo&) override { calls.push_back("begin"); }
  void add(const CaseResult& r) override { calls.push_back("add " + r.name); }
  void validation(const std::string& c, bool pass) override {
    calls.push_back("validation " + c + (pass ? " pass" : " fail"));
  }
  void fail(const std::string& c, const std::string& e) override { calls.push_back("fail " + c + ": " + e); }
  void finish() override { calls.push_back("finish"); }
};

// A run as a measurement does it: begin, its results, finish.
void one_run(ResultWriter& w, const std::string& name) {
  w.begin(RunInfo{});
  CaseResult r;
  r.name = name;
  w.add(r);
  w.validation(name, true);
  w.finish();
}

}  // namespace

TEST(Sweep, StepsArePowersOfTwoWithScaledCounts) {
  const auto steps = sweep_steps("4K:64K", 8);
  ASSERT_EQ(steps.size(), 5u);
  const uint64_t sizes[] = {4096, 8192, 16384, 32768, 65536};
  const uint64_t blocks[] = {8, 4, 2, 1, 1};
  for (size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].block_bytes, sizes[i]);
    EXPECT_EQ(steps[i].blocks, blocks[i]);
    EXPECT_LE(steps[i].blocks * steps[i].block_bytes, std::max<uint64_t>(4096 * 8, sizes[i]));
  }
  EXPECT_EQ(sweep_steps("1m:1M", 3).size(), 1u);
  EXPECT_EQ(sweep_steps("512:2K", 1).back().blocks, 1u);
}

TEST(Sweep, RejectsBadRanges) {
  for (const char* bad : {"4K", "4K:", ":4K", "3K:64K", "4K:48K", "64K:4K", "4K:64Q", "4K:8K:16K"})
    EXPECT_THROW(sweep_steps(bad, 8), UsageError) << bad;
  try {
    sweep_steps("64K:4K", 8);
    FAIL() << "no UsageError";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()),
              "option --sweep got '64K:4K': accepts FROM:TO, powers of two with FROM <= TO (e.g. 4K:64M)");
  }
}

// One note per sweep: the sizes where the count changed, runs of one count as a
// range, and where one block alone is more than the first size's bytes.
TEST(Sweep, OneNoteSaysWhereTheCountWentDown) {
  const SweepCount copy{"-n", "per device per iteration", 1};
  EXPECT_EQ(lowered_count_note(sweep_steps("4K:64K", 8), 8, copy),
            "--sweep keeps the first size's 32.00 KiB per device per iteration: -n 8 becomes 4 at 8K, 2 at 16K, "
            "1 at 32K to 64K (from 64K, -n 1 is more than that)");
  // The case: -n 64 from 1M, 1 from 64M on.
  EXPECT_EQ(lowered_count_note(sweep_steps("1M:128M", 64), 64, copy),
            "--sweep keeps the first size's 64.00 MiB per device per iteration: -n 64 becomes 32 at 2M, 16 at 4M, "
            "8 at 8M, 4 at 16M, 2 at 32M, 1 at 64M to 128M (from 128M, -n 1 is more than that)");
  // -f and shards per file multiply the bytes; the count stays what it is called.
  EXPECT_EQ(lowered_count_note(sweep_steps("4K:8K", 4), 4, {"--io-number", "per worker per epoch", 3}),
            "--sweep keeps the first size's 48.00 KiB per worker per epoch: --io-number 4 becomes 2 at 8K");
  // Nothing lowered: no note.
  EXPECT_EQ(lowered_count_note(sweep_steps("4K:4K", 4), 4, copy), "");
  EXPECT_EQ(lowered_count_note(sweep_steps("4K:64K", 1), 1, copy), "");
  EXPECT_EQ(lowered_count_note({}, 4, copy), "");
}

// Every run's results reach the writer in order, the header is the caller's (no
// run's), and the document is finished once, after the last run.
TEST(Sweep, RunsInTurnIntoOneDocument) {
  Recorder out;
  out.begin(RunInfo{});
  const std::vector<CaseResult> results = run_in_turn(3, out, [](size_t i, ResultWriter& w) {
    one_run(w, "run" + std::to_string(i));
  });
  EXPECT_EQ(out.calls, (std::vector<std::string>{"begin", "add run0", "validation run0 pass", "add run1",
                                                 "validation run1 pass", "add run2", "validation run2 pass",
                                                 "finish"}));
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[2].name, "run2");
}

// A run that fails records it and finishes its writer (as run_cases does): the
// document is finished at once, and the runs after it never start.
TEST(Sweep, AFailedRunFinishesTheDocumentAtOnce) {
  Recorder out;
  int started = 0;
  EXPECT_THROW(run_in_turn(3, out,
                           [&](size_t i, ResultWriter& w) {
                             ++started;
                             if (i == 1) {
                               w.fail("run1", "boom");
                               w.finish();
                               throw RunError("boom");
                             }
                             one_run(w, "run" + std::to_string(i));
                           }),
               RunError);
  EXPECT_EQ(started, 2);
  EXPECT_EQ(out.calls, (std::vector<std::string>{"add run0", "validation run0 pass", "fail run1: boom", "finish"}));
}
