// `dev-sandbox run JOB` end to end on sim (docs/run.md): a small job of two
// entries (a 2 x 2 matrix of tiny sizes and one point) runs its 5 points into 5
// JSON lines, one summary and a plot per swept axis; --resume after a results
// file cut mid-line and after a Ctrl-C runs only the rest; a failing point is
// recorded and sets the exit code; a bad job is one line, exit 2, nothing run.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "html_check.h"

namespace {

using dstest::lines_starting;
using dstest::run_tool;
using dstest::RunResult;
using nlohmann::json;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A fresh directory for one test's job, results and plots, removed after it.
struct JobDir {
  std::string path;
  std::unique_ptr<dstest::ScopedPath> scoped;
  JobDir() {
    char buf[] = "/tmp/ds-run-e2e-XXXXXX";
    path = mkdtemp(buf);
    scoped = std::make_unique<dstest::ScopedPath>(path);
  }
  std::string file(const std::string& name) const { return path + "/" + name; }
  void write(const std::string& name, const std::string& text) const { std::ofstream(file(name)) << text; }
  bool exists(const std::string& name) const {
    struct stat st;
    return ::stat(file(name).c_str(), &st) == 0;
  }
};

std::vector<json> records(const std::string& path) {
  std::vector<json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(json::parse(line));
  return out;
}

size_t line_count(const std::string& path) {
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

// Two entries: ce, a 2 x 2 matrix (s x n), and tr, one point.
const char kSmallJob[] =
    "# two entries, 5 points\n"
    "ce:\n"
    "  command: copy\n"
    "  t: host_to_device_ce\n"
    "  d: 1\n"
    "  i: 2\n"
    "  matrix:\n"
    "    s: [4K, 16K]\n"
    "    n: [2, 4]\n"
    "tr:\n"
    "  command: trans\n"
    "  t: H2D\n"
    "  H: normal\n"
    "  M: ce\n"
    "  size: 4K\n"
    "  n: 2\n"
    "  d: 1\n"
    "  i: 2\n";

RunResult run_job(const JobDir& d, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--backend", "sim", "run", d.file("job.yaml")};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_tool(args);
}

TEST(Run, ASmallJobRunsEveryPointIntoJsonLinesASummaryAndAPlotPerSweptAxis) {
  JobDir d;
  d.write("job.yaml", kSmallJob);
  const RunResult r = run_job(d);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<json> recs = records(d.file("job.jsonl"));  // default: beside the job, its name .jsonl
  ASSERT_EQ(recs.size(), 5u);
  const std::vector<std::string> labels = {"ce[s=4K,n=2]", "ce[s=4K,n=4]", "ce[s=16K,n=2]", "ce[s=16K,n=4]", "tr"};
  const uint64_t sizes[] = {4096, 4096, 16384, 16384, 4096};
  const uint64_t counts[] = {2, 4, 2, 4, 2};
  for (size_t i = 0; i < recs.size(); ++i) {
    SCOPED_TRACE(labels[i]);
    EXPECT_EQ(recs[i]["label"], labels[i]);
    EXPECT_EQ(recs[i]["status"], "ok");
    EXPECT_EQ(recs[i]["exit_code"], 0);
    EXPECT_TRUE(recs[i]["error"].is_null());
    // The point's axis values reached the command: its own JSON document says so.
    const json& res = recs[i]["result"]["results"];
    ASSERT_EQ(res.size(), 1u);
    EXPECT_EQ(res[0]["block_bytes"], sizes[i]);
    EXPECT_EQ(res[0]["count"], counts[i]);
    EXPECT_GT(res[0]["bandwidth_gib_s"].get<double>(), 0);
  }
  EXPECT_EQ(recs[2]["axes"], json::parse(R"([["s","16K"],["n","2"]])"));
  EXPECT_EQ(recs[4]["result"]["results"][0]["name"], "h2d_normal_normal_ce");
  // The summary: a header, then a row per point, in the job's order.
  const std::vector<std::string> rows = lines_starting(r.out, "ce ");
  ASSERT_EQ(rows.size(), 4u) << r.out;
  EXPECT_EQ(dstest::split_ws(rows[1])[1], "s=4K,n=4");
  EXPECT_EQ(lines_starting(r.out, "tr ").size(), 1u) << r.out;
  ASSERT_EQ(lines_starting(r.out, "Entry ").size(), 1u) << r.out;
  EXPECT_EQ(dstest::split_ws(lines_starting(r.out, "Entry ")[0]), (std::vector<std::string>{"Entry", "Point", "Case", "BW(GiB/s)", "P50(us)", "P90/P50"}));
  EXPECT_TRUE(contains(r.out, "5 points, 5 run, 0 already recorded, 0 failed")) << r.out;
  for (const char* axis : {"s", "n"}) {
    const std::string svg = dstest::slurp(d.file(std::string("job.") + axis + ".svg"));
    EXPECT_EQ(svg.rfind("<?xml", 0), 0u) << axis;
    EXPECT_TRUE(contains(svg, "</svg>")) << axis;
    EXPECT_TRUE(contains(r.err, "dev-sandbox: wrote the plot to " + d.file(std::string("job.") + axis + ".svg")));
  }
  EXPECT_TRUE(contains(dstest::slurp(d.file("job.s.svg")), "ce[n=4] host_to_device_ce"));
}

// --report: one page that parses (tests/e2e/html_check.h, strict), holds every row
// of the summary the text prints, the plots inline, and escapes the job's names: an
// entry named <script>... stays text.
TEST(Run, ReportIsOnePageWithEverySummaryRowAndEscapesTheJobsNames) {
  JobDir d;
  std::string job = kSmallJob;
  job.replace(job.find("tr:\n"), 4, "\"tr<script>alert(1)</script>\":\n");
  d.write("job.yaml", job);
  const RunResult r = run_job(d, {"--report", d.file("job.html")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: wrote the report to " + d.file("job.html"))) << r.err;
  const std::string page = dstest::slurp(d.file("job.html"));
  const dstest::HtmlCheck c = dstest::check_html(page);
  for (const std::string& e : c.errors) ADD_FAILURE() << e;
  EXPECT_FALSE(contains(page, "<script>"));
  EXPECT_TRUE(contains(page, "tr&lt;script&gt;alert(1)&lt;/script&gt;"));
  EXPECT_EQ(c.svgs, 2);  // the s and n axes
  std::vector<std::string> html_rows;
  for (const auto& row : c.rows) html_rows.push_back(dstest::collapse_spaces(dstest::joined(row)));
  // Every line of the summary (the header, 4 ce rows, the tr row) is a row of the page.
  const size_t head = r.out.find("Entry ");
  ASSERT_NE(head, std::string::npos) << r.out;
  std::istringstream text(r.out.substr(head));
  size_t n = 0;
  for (std::string line; std::getline(text, line) && !line.empty(); ++n)
    EXPECT_NE(std::find(html_rows.begin(), html_rows.end(), dstest::collapse_spaces(line)), html_rows.end()) << line;
  EXPECT_EQ(n, 6u) << r.out;
  EXPECT_NE(std::find(html_rows.begin(), html_rows.end(), "host.cpus_online " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN))),
            html_rows.end());
}

TEST(Run, ResumeAfterAResultsFileCutMidLineRunsOnlyTheRest) {
  JobDir d;
  d.write("job.yaml", kSmallJob);
  ASSERT_EQ(run_job(d).exit_code, 0);
  const std::string whole = dstest::slurp(d.file("job.jsonl"));
  size_t cut = 0;
  for (int i = 0; i < 2; ++i) cut = whole.find('\n', cut) + 1;
  cut += 40;  // two whole lines and the start of the third
  std::ofstream(d.file("job.jsonl"), std::ios::trunc) << whole.substr(0, cut);
  const RunResult again = run_job(d);
  EXPECT_EQ(again.exit_code, 2);  // without --resume a file with results is not overwritten
  EXPECT_TRUE(contains(again.err, "already holds results: --resume continues that job")) << again.err;
  const RunResult r = run_job(d, {"--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "dev-sandbox: note: run: " + d.file("job.jsonl") +
                                  "'s last line was cut short (an interrupted write): dropped, that point runs again"))
      << r.err;
  const std::vector<std::string> ran = lines_starting(r.err, "dev-sandbox: run: [");
  ASSERT_EQ(ran.size(), 3u) << r.err;
  EXPECT_EQ(ran[0].rfind("dev-sandbox: run: [3/5] ce[s=16K,n=2]: dev-sandbox --backend sim copy", 0), 0u) << ran[0];
  EXPECT_EQ(ran[2].rfind("dev-sandbox: run: [5/5] tr: ", 0), 0u) << ran[2];
  const std::vector<json> recs = records(d.file("job.jsonl"));
  ASSERT_EQ(recs.size(), 5u);
  EXPECT_EQ(recs[2]["label"], "ce[s=16K,n=2]");
  EXPECT_TRUE(contains(r.out, "5 points, 3 run, 2 already recorded, 0 failed")) << r.out;
  EXPECT_EQ(lines_starting(r.out, "ce ").size(), 4u) << r.out;  // the summary covers the whole job
}

TEST(Run, CtrlCStopsThePointCleanlyAndResumeRunsOnlyTheRest) {
  JobDir d;
  const std::string head = "quick:\n  command: copy\n  t: host_to_device_ce\n  s: 4K\n  n: 2\n  d: 1\n  i: 2\n"
                           "slow:\n  command: copy\n  t: host_to_device_ce\n  s: 1M\n  n: 16\n  d: 1\n";
  d.write("job.yaml", head + "  i: 100000000\n");
  const std::string out = d.file("out.txt"), err = d.file("err.txt");
  const int pid = dstest::start_tool({"--backend", "sim", "run", d.file("job.yaml")}, out, err);
  ASSERT_TRUE(dstest::wait_until([&] { return line_count(d.file("job.jsonl")) == 1; })) << dstest::slurp(err);
  std::vector<int> children;
  ASSERT_TRUE(dstest::wait_until([&] { return !(children = dstest::child_pids(pid)).empty(); }));
  // The point under way (its own line before setup: it handles a stop from there on).
  ASSERT_TRUE(dstest::wait_until([&] { return lines_starting(dstest::slurp(err), "dev-sandbox: host_to_device_ce will allocate").size() == 2; }))
      << dstest::slurp(err);
  ASSERT_TRUE(dstest::wait_busy(children[0]));
  ::kill(pid, SIGINT);  // the job alone: it passes the stop on to the point running
  EXPECT_EQ(dstest::wait_tool(pid), 130);
  const std::string said = dstest::slurp(err);
  EXPECT_TRUE(contains(said, "dev-sandbox: error: interrupted; everything it made was removed")) << said;
  EXPECT_TRUE(contains(said, "dev-sandbox: error: run: interrupted; 1 of 2 points are recorded in " +
                                 d.file("job.jsonl") + "; `dev-sandbox run " + d.file("job.yaml") +
                                 " --resume` runs the rest"))
      << said;
  EXPECT_NE(::kill(children[0], 0), 0);  // the point's process is gone
  EXPECT_EQ(line_count(d.file("job.jsonl")), 1u);
  // Points are matched by entry and axis values: the slow one made quick runs again, alone.
  d.write("job.yaml", head + "  i: 2\n");
  const RunResult r = run_job(d, {"--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> ran = lines_starting(r.err, "dev-sandbox: run: [");
  ASSERT_EQ(ran.size(), 1u) << r.err;
  EXPECT_EQ(ran[0].rfind("dev-sandbox: run: [2/2] slow: ", 0), 0u) << ran[0];
  EXPECT_EQ(line_count(d.file("job.jsonl")), 2u);
}

TEST(Run, AFailingPointIsRecordedTheJobGoesOnAndItsExitCodeSaysSo) {
  JobDir d;
  d.write("job.yaml",
          "first:\n  command: copy\n  t: host_to_device_ce\n  s: 4K\n  n: 2\n  d: 1\n  i: 2\n"
          "broken:\n  command: aio\n  workspace: " + d.file("missing") + "\n  io-size: 4K\n  io-number: 2\n"
          "last:\n  command: copy\n  t: host_to_device_ce\n  s: 8K\n  n: 2\n  d: 1\n  i: 2\n");
  const std::string why = "option --workspace got '" + d.file("missing") + "': no such directory";
  const RunResult r = run_job(d, {"--out", d.file("r.jsonl")});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::vector<json> recs = records(d.file("r.jsonl"));
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[1]["status"], "failed");
  EXPECT_EQ(recs[1]["exit_code"], 2);
  EXPECT_EQ(recs[1]["error"].get<std::string>().rfind(why, 0), 0u) << recs[1]["error"];
  EXPECT_EQ(recs[2]["status"], "ok");
  EXPECT_TRUE(contains(r.err, "dev-sandbox: run: broken failed (exit 2): " + why)) << r.err;
  const std::vector<std::string> row = lines_starting(r.out, "broken ");
  ASSERT_EQ(row.size(), 1u) << r.out;
  EXPECT_TRUE(contains(row[0], "FAILED (exit 2: " + why)) << row[0];
  EXPECT_TRUE(contains(r.out, "3 points, 3 run, 0 already recorded, 1 failed")) << r.out;
  // --stop-on-error: the points after it do not run.
  const RunResult s = run_job(d, {"--out", d.file("s.jsonl"), "--stop-on-error"});
  EXPECT_EQ(s.exit_code, 1) << s.err;
  EXPECT_EQ(line_count(d.file("s.jsonl")), 2u);
  EXPECT_TRUE(contains(s.err, "dev-sandbox: run: stopped after the first failure (--stop-on-error)")) << s.err;
}

TEST(Run, ABadJobIsOneLineExitTwoAndRunsNothing) {
  JobDir d;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"e:\n  command: copy\n  t: host_to_device_ce\n  sise: 4K\n",
       "job.yaml:4: entry 'e': key 'sise': unknown option for copy (did you mean s?); `dev-sandbox copy --help` "
       "lists them"},
      {"e:\n  command: copy\n  t: host_to_device_ce\n  matrix:\n    s: 4K\n",
       "job.yaml:5: entry 'e': key 'matrix.s': an axis is a list of values ([a, b]), not a scalar"},
      {"e:\n  command: cpy\n",
       "job.yaml:1: entry 'e': key 'command': unknown sub-command 'cpy' (did you mean copy?); a job runs copy, "
       "trans, aio, load or offload"},
      // A value the command itself refuses, found before any point runs (the first is fine).
      {"ok:\n  command: copy\n  t: host_to_device_ce\n  d: 1\n"
       "e:\n  command: copy\n  t: host_to_device_ce\n  matrix:\n    s: [4K, 4Q]\n",
       "job.yaml:5: entry 'e': at s=4Q: option -s got '4Q': "},
  };
  for (const auto& c : cases) {
    d.write("job.yaml", c.first);
    const RunResult r = run_job(d);
    EXPECT_EQ(r.exit_code, 2) << c.first;
    const std::vector<std::string> errors = lines_starting(r.err, "dev-sandbox: error: ");
    ASSERT_EQ(errors.size(), 1u) << r.err;
    EXPECT_EQ(errors[0].rfind("dev-sandbox: error: " + d.file(c.second), 0), 0u) << errors[0];
    EXPECT_EQ(r.err.find("dev-sandbox: run: ["), std::string::npos) << r.err;
    EXPECT_FALSE(d.exists("job.jsonl"));
  }
  const RunResult none = run_tool({"run"});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_TRUE(contains(none.err, "dev-sandbox: error: JOB is required")) << none.err;
}

TEST(Run, DryRunPrintsEveryPointsCommandLine) {
  JobDir d;
  d.write("job.yaml", kSmallJob);
  const RunResult r = run_job(d, {"--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "ce[s=16K,n=4]: dev-sandbox --backend sim copy -t host_to_device_ce -d 1 -i 2 -s 16K -n 4\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "tr: dev-sandbox --backend sim trans -t H2D -H normal -M ce -s 4K -n 2 -d 1 -i 2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "5 points in 2 entries\n")) << r.out;
  EXPECT_FALSE(d.exists("job.jsonl"));
  // An entry's own backend wins over run's --backend (never given twice).
  d.write("job.yaml", "e:\n  command: copy\n  backend: cuda\n  t: host_to_device_ce\n");
  const RunResult own = run_job(d, {"--dry-run"});
  ASSERT_EQ(own.exit_code, 0) << own.err;
  EXPECT_EQ(own.out, "e: dev-sandbox copy --backend cuda -t host_to_device_ce\n1 point in 1 entry\n");
}

}  // namespace
