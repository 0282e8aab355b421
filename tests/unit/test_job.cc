// Job files (src/job, docs/run.md): the reader's shapes and messages, the matrix
// expansion, the results file and --resume, the runner's order and records, the
// summary. In process: no point runs a real command here (tests/e2e/test_run_e2e.cc does).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "app/command.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "job/child_run.h"
#include "job/job.h"
#include "job/job_runner.h"
#include "job/results_log.h"
#include "job/summary.h"

namespace ds {
namespace {

// The message a bad job text is refused with ("" when it is accepted).
std::string refusal(const std::string& text) {
  try {
    const JobSpec job = parse_job_text("j.yaml", text);
    expand_job(job, *cli_job_commands());
  } catch (const UsageError& e) {
    return e.what();
  }
  return "";
}

#define NEED_YAML() \
  if (!job_files_supported()) GTEST_SKIP() << "built without yaml-cpp"

TEST(Job, MatrixIsTheProductLastAxisFastestWithLabelsAndArgs) {
  NEED_YAML();
  const JobSpec job = parse_job_text("j.yaml",
                                     "ce:\n  command: copy\n  t: host_to_device_ce\n  n: 4\n"
                                     "  matrix:\n    s: [4K, 64K]\n    streams: [1, 2, 4]\n"
                                     "one:\n  command: aio\n  workspace: [/a, /b]\n  keep: true\n  buffered: false\n");
  const std::vector<JobPoint> p = expand_job(job, *cli_job_commands());
  ASSERT_EQ(p.size(), 7u);
  const std::vector<std::string> labels = {"ce[s=4K,streams=1]",  "ce[s=4K,streams=2]",  "ce[s=4K,streams=4]",
                                           "ce[s=64K,streams=1]", "ce[s=64K,streams=2]", "ce[s=64K,streams=4]",
                                           "one"};
  for (size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].label, labels[i]) << i;
  EXPECT_EQ(p[4].args, (std::vector<std::string>{"copy", "-t", "host_to_device_ce", "-n", "4", "-s", "64K",
                                                  "--streams", "2"}));
  EXPECT_EQ(p[4].axes, (std::vector<std::pair<std::string, std::string>>{{"s", "64K"}, {"streams", "2"}}));
  // A list outside the matrix gives the option once per item; a flag true is the flag, false nothing.
  EXPECT_EQ(p[6].args, (std::vector<std::string>{"aio", "--workspace", "/a", "--workspace", "/b", "--keep"}));
  EXPECT_TRUE(p[6].axes.empty());
  EXPECT_EQ(p[0].place.line, 1u);
  EXPECT_EQ(p[6].place.line, 8u);
}

TEST(Job, WordsPeopleTypeNameTheOptionsAndOptionalValuesTakeTrue) {
  NEED_YAML();
  const JobSpec job = parse_job_text("j.yaml",
                                     "q:\n  command: copy\n  size: 1M\n  blocks: 2\n  validate: true\n"
                                     "  model-type: gqa\n  iodirect: false\n  sdma: true\n"
                                     "a:\n  command: aio\n  size: 64K\n  workspace: /w\n  validate: each\n");
  const std::vector<JobPoint> p = expand_job(job, *cli_job_commands());
  ASSERT_EQ(p.size(), 2u);
  // iodirect takes true|false as its value (not a flag): kept as typed.
  EXPECT_EQ(p[0].args, (std::vector<std::string>{"copy", "-s", "1M", "-n", "2", "--validate", "--model-type", "gqa",
                                                  "--iodirect", "false", "--sdma", "true"}));
  EXPECT_EQ(p[1].args,
            (std::vector<std::string>{"aio", "--io-size", "64K", "--workspace", "/w", "--validate", "each"}));
  EXPECT_EQ(check_cli(p[0].args), "");
}

TEST(Job, BadJobsAreOneLineNamingFileLineEntryAndKey) {
  NEED_YAML();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"e:\n  command: cpy\n",
       "j.yaml:1: entry 'e': key 'command': unknown sub-command 'cpy' (did you mean copy?); a job runs copy, trans, "
       "aio, load or offload"},
      {"e:\n  command: doctor\n",
       "j.yaml:1: entry 'e': key 'command': 'doctor' is no sub-command a job runs: copy, trans, aio, load or offload"},
      {"e:\n  command: copy\n  t: x\n  sise: 4K\n",
       "j.yaml:4: entry 'e': key 'sise': unknown option for copy (did you mean s?); `dev-sandbox copy --help` lists "
       "them"},
      {"e:\n  command: copy\n  matrix:\n    s: 4K\n",
       "j.yaml:4: entry 'e': key 'matrix.s': an axis is a list of values ([a, b]), not a scalar"},
      {"e:\n  command: copy\n  matrix: {}\n",
       "j.yaml:3: entry 'e': key 'matrix': an empty matrix: give it an axis or leave it out"},
      {"e:\n  command: copy\n  matrix:\n    s: []\n",
       "j.yaml:4: entry 'e': key 'matrix.s': an axis needs at least one value"},
      {"e:\n  command: copy\n  matrix: [s]\n", "j.yaml:3: entry 'e': key 'matrix': the matrix is a mapping of axes, not a list"},
      {"e:\n  s: 4K\n", "j.yaml:1: entry 'e': no 'command' (the sub-command to run: copy, trans, aio, load, offload)"},
      {"e:\n  command: copy\n  s: {a: 1}\n",
       "j.yaml:3: entry 'e': key 's': a value is a plain value or a list of them, not a mapping"},
      {"e:\n  command: copy\n  s: 4K\n  s: 8K\n", "j.yaml:4: entry 'e': key 's': given twice"},
      {"e:\n  command: copy\ne:\n  command: aio\n", "j.yaml:3: entry 'e' is given twice"},
      {"e:\n  command: aio\n  workspace: /w\n  keep: maybe\n",
       "j.yaml:4: entry 'e': key 'keep': a flag: true or false, not 'maybe'"},
      {"e:\n  command: copy\n  format: json\n",
       "j.yaml:3: entry 'e': key 'format': run gives every point --format json and keeps its document in the "
       "results file: leave format out"},
      // Refused by the option a key names, whichever of its spellings: what would take
      // the point's JSON document away from stdout, or print something else there.
      {"e:\n  command: load\n  output: r.json\n",
       "j.yaml:3: entry 'e': key 'output': run gives every point --format json and keeps its document in the "
       "results file: leave output out"},
      {"e:\n  command: load\n  model: Qwen3-32B\n  dry-run: true\n",
       "j.yaml:4: entry 'e': key 'dry-run': --dry-run prints the sizing instead of the point's JSON document, which "
       "run keeps: leave dry-run out"},
      {"e:\n  command: copy\n  h: true\n",
       "j.yaml:3: entry 'e': key 'h': 'h' is --help: --help prints the usage instead of the point's JSON document, "
       "which run keeps: leave h out"},
      {"e:\n  command: aio\n  help: true\n",
       "j.yaml:3: entry 'e': key 'help': --help prints the usage instead of the point's JSON document, which run "
       "keeps: leave help out"},
      {"e:\n  command: copy\n  matrix:\n    list: [true, false]\n",
       "j.yaml:4: entry 'e': key 'matrix.list': --list prints the cases instead of the point's JSON document, which "
       "run keeps: leave list out"},
      {"e:\n  command: copy\n  o: r.json\n",
       "j.yaml:3: entry 'e': key 'o': unknown option for copy (did you mean t?); `dev-sandbox copy --help` lists them"},
      {"e:\n  command: copy\n  s: 4K\n  matrix:\n    s: [8K]\n",
       "j.yaml:5: entry 'e': key 'matrix.s': also given as an option of the entry (line 3): give it in one place"},
      {"e: copy\n", "j.yaml:1: entry 'e': an entry is a mapping of its options, not a scalar"},
      {"- a\n", "j.yaml:1: the file is a mapping of entry names to entries, not a list"},
      {"", "j.yaml: no entries: the file is a mapping of entry names to entries"},
      {"e: [1\n", "j.yaml:2: not valid YAML: end of sequence flow not found"},
  };
  for (const auto& c : cases) EXPECT_EQ(refusal(c.first), c.second) << c.first;
}

TEST(Job, AMatrixPastTheLimitIsRefusedBeforeItIsExpanded) {
  NEED_YAML();
  std::string axis = "[";
  for (int i = 0; i < 100; ++i) axis += (i ? "," : "") + std::to_string(i + 1);
  axis += "]";
  const std::string text = "e:\n  command: copy\n  matrix:\n    n: " + axis + "\n    i: " + axis + "\n    d: " + axis + "\n";
  EXPECT_EQ(refusal(text),
            "j.yaml:1: entry 'e': key 'matrix': the job has more than 100000 points (the product of every entry's "
            "axes): split it");
}

// ---- The results file ----

struct TempPath {
  std::string path;
  TempPath() {
    char buf[] = "/tmp/ds-job-unit-XXXXXX";
    const int fd = mkstemp(buf);
    if (fd >= 0) close(fd);
    path = buf;
  }
  ~TempPath() { std::remove(path.c_str()); }
  std::string text() const {
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void write(const std::string& t) const { std::ofstream(path, std::ios::trunc) << t; }
};

PointRecord record(const std::string& entry, std::vector<std::pair<std::string, std::string>> axes, bool ok,
                   double gib_s = 1.5) {
  PointRecord r;
  r.entry = entry;
  r.axes = std::move(axes);
  r.label = point_label(entry, r.axes);
  r.ok = ok;
  r.exit_code = ok ? 0 : 2;
  r.error = ok ? "" : "workspace /nope does not exist";
  r.command_line = {"dev-sandbox", "copy"};
  if (ok)
    r.result = Json::parse(R"({"status":"ok","backend":{"name":"sim"},"results":[{"name":"h2d","bandwidth_gib_s":)" +
                           std::to_string(gib_s) +
                           R"(,"devices":1,"iterations":4,"time_label":"Copy","copy_us":{"p50":2.0,"p90":3.0}}]})");
  return r;
}

TEST(Job, RecordsRoundTripAsOneLine) {
  const PointRecord r = record("ce", {{"s", "4K"}, {"iodirect", "true"}}, false);
  const std::string line = encode_record(r);
  EXPECT_EQ(line.find('\n'), std::string::npos);
  const std::string head = R"({"entry":"ce","label":"ce[s=4K,iodirect=true]","axes":[["s","4K"],["iodirect","true"]],)"
                           R"("status":"failed","exit_code":2,"error":"workspace /nope does not exist",)";
  EXPECT_EQ(line.rfind(head, 0), 0u) << line;
  const PointRecord back = decode_record(line);
  EXPECT_EQ(back.axes, r.axes);
  EXPECT_FALSE(back.ok);
  EXPECT_EQ(back.exit_code, 2);
  EXPECT_EQ(back.error, r.error);
  EXPECT_TRUE(same_point(back, "ce", {{"s", "4K"}, {"iodirect", "true"}}));
  EXPECT_FALSE(same_point(back, "ce", {{"s", "4K"}, {"iodirect", "false"}}));
}

// Axes in an order that is not alphabetical survive a JSON library that sorts an
// object's keys (nlohmann_json before 3.9, which has no ordered_json): the line read
// back through a sorting json and written again still matches the point in order,
// so --resume skips it.
TEST(Job, RecordsKeepTheAxesOrderThroughASortingJson) {
  const std::vector<std::pair<std::string, std::string>> axes = {{"streams", "2"}, {"s", "4K"}, {"iodirect", "true"}};
  const std::string line = encode_record(record("ce", axes, true));
  const std::string resorted = nlohmann::json::parse(line).dump();
  const PointRecord back = decode_record(resorted);
  EXPECT_EQ(back.axes, axes) << resorted;
  EXPECT_TRUE(same_point(back, "ce", axes));
}

TEST(Job, ResumeDropsALastLineCutShortAndRewritesIt) {
  TempPath f;
  const std::string one = encode_record(record("a", {{"s", "4K"}}, true)) + "\n";
  const std::string two = encode_record(record("a", {{"s", "8K"}}, true)) + "\n";
  f.write(one + two.substr(0, two.size() / 2));
  {
    ResultsLog log(f.path, true);
    EXPECT_TRUE(log.dropped_partial_line());
    ASSERT_EQ(log.previous().size(), 1u);
    EXPECT_EQ(f.text(), one);  // cut back before anything runs
    log.append(record("a", {{"s", "8K"}}, true));
  }
  EXPECT_EQ(f.text(), one + two.substr(0, two.find("\"seconds\"")) + two.substr(two.find("\"seconds\"")));
  ResultsLog again(f.path, true);
  EXPECT_FALSE(again.dropped_partial_line());
  EXPECT_EQ(again.previous().size(), 2u);
}

TEST(Job, AWholeLineThatIsNoRecordIsRefusedAndSoIsAFullFileWithoutResume) {
  TempPath f;
  f.write(encode_record(record("a", {}, true)) + "\nhello\n" + encode_record(record("b", {}, true)) + "\n");
  try {
    ResultsLog log(f.path, true);
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), f.path + ":2: not a line dev-sandbox run wrote (not JSON): give --out another file");
  }
  try {
    ResultsLog log(f.path, false);
    FAIL() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "run: the results file " + f.path +
                                         " already holds results: --resume continues that job, or give --out "
                                         "another file");
  }
}

// ---- The runner, with a stand-in for the child process ----

std::vector<JobPoint> three_points() {
  std::vector<JobPoint> p(3);
  const char* sizes[] = {"4K", "8K", "16K"};
  for (int i = 0; i < 3; ++i) {
    p[i].entry = "ce";
    p[i].command = "copy";
    p[i].axes = {{"s", sizes[i]}};
    p[i].label = point_label("ce", p[i].axes);
    p[i].args = {"copy", "-s", sizes[i]};
  }
  return p;
}

struct QuietNotes : Notes {
  std::vector<std::string> lines;
  void note(const std::string& l) override { lines.push_back(l); }
  void tell(const std::string& l) override { lines.push_back(l); }
};

ChildOutcome ok_outcome(const std::string& size) {
  ChildOutcome o;
  o.out = R"({"status":"ok","results":[{"name":"h2d","bandwidth_gib_s":2.0}]})";
  (void)size;
  return o;
}

TEST(Job, ResumeRunsOnlyThePointsNotRecordedOkAndRecordsEach) {
  TempPath f;
  f.write(encode_record(record("ce", {{"s", "4K"}}, true)) + "\n" + encode_record(record("ce", {{"s", "8K"}}, false)) +
          "\n");
  ResultsLog log(f.path, true);
  std::vector<std::vector<std::string>> ran;
  QuietNotes notes;
  JobRunOptions o;
  o.prefix = {"--backend", "sim"};
  const JobRunOutcome out = run_job(three_points(), log, o, notes, [&](const std::string&, const std::vector<std::string>& argv) {
    ran.push_back(argv);
    return ok_outcome(argv[4]);
  });
  ASSERT_EQ(ran.size(), 2u);  // 8K (recorded failed) again, and 16K
  EXPECT_EQ(ran[0], (std::vector<std::string>{"dev-sandbox", "--backend", "sim", "copy", "-s", "8K", "--format", "json"}));
  EXPECT_EQ(ran[1][5], "16K");
  EXPECT_EQ(out.ran, 2u);
  EXPECT_EQ(out.skipped, 1u);
  EXPECT_EQ(out.failed, 0u);
  ASSERT_EQ(out.records.size(), 3u);
  EXPECT_TRUE(out.records[1].ok);  // the latest record of 8K
  EXPECT_EQ(notes.lines[0], "run: [2/3] ce[s=8K]: dev-sandbox --backend sim copy -s 8K --format json");
  EXPECT_EQ(ResultsLog(f.path, true).previous().size(), 4u);
}

TEST(Job, AFailingPointIsRecordedWithItsExitCodeAndFirstErrorAndTheJobGoesOn) {
  for (const bool stop : {false, true}) {
    TempPath f;
    ResultsLog log(f.path, true);
    QuietNotes notes;
    JobRunOptions o;
    o.stop_on_error = stop;
    int calls = 0;
    const JobRunOutcome out = run_job(three_points(), log, o, notes, [&](const std::string&, const std::vector<std::string>& argv) {
      ++calls;
      if (argv[3] != "8K") return ok_outcome(argv[3]);
      ChildOutcome bad;
      bad.exit_code = 1;
      bad.first_error = "cuMemcpyHtoD failed";
      bad.out = R"({"status":"failed","results":[]})";
      return bad;
    });
    EXPECT_EQ(calls, stop ? 2 : 3);
    EXPECT_EQ(out.failed, 1u);
    EXPECT_EQ(out.stopped, stop);
    const std::vector<PointRecord> recs = ResultsLog(f.path, true).previous();
    ASSERT_EQ(recs.size(), stop ? 2u : 3u);
    EXPECT_FALSE(recs[1].ok);
    EXPECT_EQ(recs[1].exit_code, 1);
    EXPECT_EQ(recs[1].error, "cuMemcpyHtoD failed");
    EXPECT_EQ(recs[1].result.value("status", ""), "failed");  // its document kept
  }
}

TEST(Job, AnExitZeroWithoutAnOkDocumentIsAFailure) {
  TempPath f;
  ResultsLog log(f.path, true);
  QuietNotes notes;
  const JobRunOutcome out = run_job(three_points(), log, JobRunOptions{}, notes, [](const std::string&, const std::vector<std::string>&) {
    ChildOutcome o;
    o.out = "not json";
    return o;
  });
  EXPECT_EQ(out.failed, 3u);
  EXPECT_EQ(out.records[0].error, "it wrote no JSON document that says ok");
}

TEST(Job, APointCutByAStopIsNotRecorded) {
  TempPath f;
  ResultsLog log(f.path, true);
  QuietNotes notes;
  int calls = 0;
  const JobRunOutcome out = run_job(three_points(), log, JobRunOptions{}, notes, [&](const std::string&, const std::vector<std::string>& argv) {
    ChildOutcome o = ok_outcome(argv[2]);
    o.interrupted = ++calls == 2;
    o.exit_code = o.interrupted ? 130 : 0;
    return o;
  });
  EXPECT_TRUE(out.interrupted);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(out.records.size(), 1u);
  EXPECT_EQ(ResultsLog(f.path, true).previous().size(), 1u);
}

// ---- The summary ----

TEST(Job, SummaryTableHasARowPerResultAndMarksFailures) {
  const std::vector<PointRecord> recs = {record("ce", {{"s", "4K"}}, true, 1.25), record("ce", {{"s", "8K"}}, false)};
  EXPECT_EQ(summary_table(summary_rows(recs)),
            "Entry  Point  Case  BW(GiB/s)  P50(us)  P90/P50\n"
            "ce     s=4K   h2d       1.250      2.0     1.50\n"
            "ce     s=8K   FAILED (exit 2: workspace /nope does not exist)\n");
}

TEST(Job, APlotPerNumericAxisWithMoreThanOneValue) {
  std::vector<PointRecord> recs;
  for (const char* s : {"4K", "64K"})
    for (const char* d : {"true", "false"}) recs.push_back(record("ce", {{"s", s}, {"iodirect", d}, {"n", "8"}}, true));
  const std::vector<AxisPlot> plots = axis_plots(recs, "sim");
  ASSERT_EQ(plots.size(), 1u);  // iodirect is no number; n has one value
  EXPECT_EQ(plots[0].axis, "s");
  EXPECT_NE(plots[0].svg.find("Bandwidth by s: sim backend"), std::string::npos);
  EXPECT_NE(plots[0].svg.find("ce[iodirect=true,n=8] h2d"), std::string::npos);
  EXPECT_NE(plots[0].svg.find("ce[iodirect=false,n=8] h2d"), std::string::npos);
}

// ---- run_child's unwind ----

// A child that ignores SIGINT (as a point stuck in a call might), and the runner
// throwing mid-run once it has started: run_child stops it (SIGINT, then SIGKILL
// after the grace) and reaps it before the exception leaves; no child remains.
TEST(Job, AChildIsStoppedAndReapedWhenTheRunnerThrowsMidRun) {
  ChildRunOptions o;
  o.stop_grace_s = 0.2;
  pid_t seen = 0;
  o.each_turn = [&](pid_t pid, const std::string& out) {
    seen = pid;
    if (out.find("started") != std::string::npos) throw std::runtime_error("append failed");
  };
  EXPECT_THROW(run_child("/bin/sh", {"sh", "-c", "trap '' INT; echo started; exec sleep 30"}, o), std::runtime_error);
  ASSERT_GT(seen, 0);
  int status = 0;
  errno = 0;
  EXPECT_EQ(::waitpid(-1, &status, WNOHANG), -1);  // none left, running or unreaped
  EXPECT_EQ(errno, ECHILD);
}

// The guard alone: a child that stops on SIGINT is reaped within the grace.
TEST(Job, AChildGuardLetGoUnreapedStopsItsChildWithSigint) {
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  { ChildGuard guard(pid, 30); }
  int status = 0;
  errno = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), -1);  // reaped by the guard
  EXPECT_EQ(errno, ECHILD);
}

}  // namespace
}  // namespace ds
