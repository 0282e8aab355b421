// The harness (src/measurement) on a made-up measurement: the order of its steps,
// what it fills in a result (name, setup time, retries, validated), what it says,
// and that a run that would not fit is refused before anything is prepared.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/error.h"
#include "measurement/measurement.h"
#include "output/progress.h"

namespace {

using namespace ds;

struct Log {
  std::vector<std::string> steps;
};

class RecordingWriter : public ResultWriter {
 public:
  explicit RecordingWriter(Log& log) : log_(log) {}
  void begin(const RunInfo&) override { log_.steps.push_back("begin"); }
  void add(const CaseResult& r) override {
    log_.steps.push_back("add " + r.name);
    results.push_back(r);
  }
  void validation(const std::string& name, bool pass) override {
    log_.steps.push_back("validation " + name + (pass ? " pass" : " fail"));
  }
  void fail(const std::string& name, const std::string&) override { log_.steps.push_back("fail " + name); }
  void finish() override { log_.steps.push_back("finish"); }
  std::vector<CaseResult> results;

 private:
  Log& log_;
};

class RecordingNotes : public Notes {
 public:
  void note(const std::string& line) override { notes.push_back(line); }
  void tell(const std::string& line) override { told.push_back(line); }
  std::vector<std::string> notes, told;
};

// Each worker redoes `retries` transfers per run and says one note.
class FakeWorker : public LoopWorker {
 public:
  FakeWorker(int w, uint64_t retries) : w_(w), retries_(retries) {}
  void iterate(int, IterationRecord& r) override { r.submitted = now_ns(); }
  int64_t measured_ns(const IterationRecord&) override { return 1000 * (w_ + 1); }
  std::string note() const override { return "\tbuffers of worker kind"; }
  uint64_t retries() const override { return retries_; }

 private:
  int w_;
  uint64_t retries_;
};

class FakeMeasurement : public Measurement {
 public:
  FakeMeasurement(Log& log, uint64_t host_bytes) : log_(log), host_bytes_(host_bytes) {}
  void check() override { log_.steps.push_back("check"); }
  MemoryNeeds needs() const override {
    MemoryNeeds n;
    n.host = host_bytes_;
    return n;
  }
  NeedsText needs_text() const override { return {"fake", "host memory", "made up", "lower nothing"}; }
  TimeEstimate estimate() const override { return {6144, 6, "iteration", 1.0}; }
  // At least 2 ms of shared setup, on the clock (no sleep): the first result's setup time.
  void prepare() override {
    log_.steps.push_back("prepare");
    const int64_t until = now_ns() + 2000000;
    while (now_ns() < until) {
    }
  }
  size_t phases() const override { return 2; }
  LoopShape shape(size_t phase) const override {
    LoopShape s;
    s.progress_name = phase == 0 ? "fake_one" : "fake_two";
    s.workers = 2;
    s.fanout = Fanout::kThreads;
    s.iterations = 3;
    return s;
  }
  std::unique_ptr<LoopWorker> make_worker(size_t, int w) override {
    return std::make_unique<FakeWorker>(w, 2 + static_cast<uint64_t>(w));
  }
  void before_loop(size_t phase) override { log_.steps.push_back("before " + std::to_string(phase)); }
  void after_loop(size_t phase) override { log_.steps.push_back("after " + std::to_string(phase)); }
  void describe(size_t phase, const LoopResult& loop, CaseResult& r, Notes& notes) override {
    log_.steps.push_back("describe " + r.name);
    r.bytes = 1024;
    r.measured = "Copy";
    r.stages = loop_stages(loop, r.measured);
    if (phase == 1) r.validate = "end";
    keep_worker_notes(loop, r, notes);
  }
  void check_result(size_t phase) override { log_.steps.push_back("check_result " + std::to_string(phase)); }
  void finish() override { log_.steps.push_back("measurement finish"); }
  void done(Notes& notes) override {
    log_.steps.push_back("done");
    notes.tell("kept nothing");
  }
  std::string retried() const override { return "short transfers"; }

 private:
  Log& log_;
  uint64_t host_bytes_;
};

TEST(Harness, RunsTheStepsInOrderAndFillsWhatItOwns) {
  Log log;
  RecordingWriter writer(log);
  RecordingNotes notes;
  FakeMeasurement m(log, 1024);
  std::string current;
  HarnessContext ctx(writer, notes, nullptr, nullptr, 0, [&] { writer.begin(RunInfo{}); }, &current);
  run_measurement(m, ctx);
  const std::vector<std::string> want = {
      "check", "prepare", "begin",
      "before 0", "after 0", "describe fake_one", "check_result 0", "add fake_one",
      "before 1", "after 1", "describe fake_two", "check_result 1", "add fake_two", "validation fake_two pass",
      "measurement finish", "finish", "done"};
  EXPECT_EQ(log.steps, want);
  EXPECT_EQ(current, "fake_two");
  ASSERT_EQ(writer.results.size(), 2u);
  const CaseResult& one = writer.results[0];
  const CaseResult& two = writer.results[1];
  // The shared setup counts once, in the first result.
  EXPECT_GE(one.setup_s, 0.002);
  // Retries: every worker's of the phase (2 + 3), in its own result.
  EXPECT_EQ(one.retries, 5u);
  EXPECT_EQ(two.retries, 5u);
  EXPECT_FALSE(one.validated.has_value());
  EXPECT_EQ(two.validated, std::optional<bool>(true));
  // The workers' note once per result, kept and said; the retries said once at the end.
  EXPECT_EQ(one.notes, std::vector<std::string>{"buffers of worker kind"});
  const std::vector<std::string> said = {"fake_one: buffers of worker kind", "fake_two: buffers of worker kind",
                                         "10 short transfers were completed by resubmitting the remainder"};
  EXPECT_EQ(notes.notes, said);
  // Told: the plan before setup, a line per finished phase where stderr is not a
  // terminal (no progress line to watch), what was kept.
  ASSERT_FALSE(notes.told.empty());
  EXPECT_EQ(notes.told.front(), plan_line("fake", m.needs(), m.estimate()));
  EXPECT_EQ(notes.told.back(), "kept nothing");
  std::vector<std::string> finished;
  for (const std::string& t : notes.told)
    if (t.rfind("finished ", 0) == 0) finished.push_back(t.substr(0, t.find(" in ")));
  if (progress_on_terminal())
    EXPECT_TRUE(finished.empty());
  else
    EXPECT_EQ(finished, (std::vector<std::string>{"finished fake_one", "finished fake_two"}));
  EXPECT_EQ(notes.told.size(), 2u + finished.size());
}

// The line said before setup: every figure is the needs' own, the time made as it says.
TEST(Harness, ThePlanLineShowsTheNeedsAndHowTheTimeIsMade) {
  MemoryNeeds n;
  n.add_host("sources", 3ULL << 30);
  n.add_host("destinations", 1ULL << 30);
  n.shm = 1ULL << 30;
  n.devices = 8;
  n.device_per_device = 512ULL << 20;
  n.disk = 64ULL << 20;
  // 4 GiB of host and 4 GiB of devices filled at 2 GiB/s (4 s), then 16 GiB at 4 GiB/s (4 s).
  EXPECT_EQ(plan_line("host_to_device_ce", n, {16ULL << 30, 130, "iteration", 4.0}),
            "host_to_device_ce will allocate host 4.00 GiB (/dev/shm: 1.00 GiB of it), device 8 x 512.00 MiB, "
            "disk 64.00 MiB; about 8 s (filling 8.00 GiB at a nominal 2 GiB/s, then 130 iterations moving "
            "16.00 GiB at a nominal 4 GiB/s)");
  n.device_in_host = true;  // sim: the devices' memory is in the host figure, filled once
  EXPECT_EQ(plan_line("aio", n, {1ULL << 30, 1, "epoch", 1.0}),
            "aio will allocate host 4.00 GiB (/dev/shm: 1.00 GiB of it), device 8 x 512.00 MiB (host memory here, "
            "counted in host), disk 64.00 MiB; about 3 s (filling 4.00 GiB at a nominal 2 GiB/s, then 1 epoch "
            "moving 1.00 GiB at a nominal 1 GiB/s)");
}

TEST(Harness, ARunThatWouldNotFitIsRefusedBeforeAnythingIsPrepared) {
  Log log;
  RecordingWriter writer(log);
  RecordingNotes notes;
  FakeMeasurement m(log, UINT64_MAX / 2);
  HarnessContext ctx(writer, notes, nullptr, nullptr, 0);
  EXPECT_THROW(run_measurement(m, ctx), RunError);
  EXPECT_EQ(log.steps, std::vector<std::string>{"check"});
}

TEST(Harness, WorkerNotesRoundTripByKindEachOnce) {
  const std::string a = encode_worker_notes({{"single", "no batch"}, {"", "plain"}, {"ungated", ""}});
  const std::string b = encode_worker_notes({{"single", "no batch"}, {"loop", "looped"}});
  const std::vector<WorkerNote> got = decode_worker_notes({a, b});
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].kind, "single");
  EXPECT_EQ(got[0].text, "no batch");
  EXPECT_EQ(got[1].kind, "");
  EXPECT_EQ(got[1].text, "plain");
  EXPECT_EQ(got[2].kind, "loop");
  EXPECT_EQ(got[2].text, "looped");
}

}  // namespace
