// `tune --what aio`'s search over the engine x iodepth x workers x shards product and
// `tune --what load`'s over the staged load's knobs, on a workspace on this machine's
// disk (the build tree), on sim: the coarse grid's coverage, a dominated engine
// dropped (psync made slow by the shim), the budget, the JSON against the schema,
// the text and the page.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "cli_harness.h"
#include "html_check.h"
#include "schema_check.h"

using namespace dstest;
using nlohmann::json;

namespace {

json schema() {
  std::ifstream in(DS_TUNE_SCHEMA);
  return json::parse(in);
}

void expect_valid(const json& doc) {
  for (const std::string& e : schema_errors(schema(), doc)) ADD_FAILURE() << e;
}

struct Workspace {
  Workspace() {
    char tmpl[] = DS_AIO_TEST_BASE "/tune-search-XXXXXX";
    if (mkdtemp(tmpl)) path = tmpl;
  }
  ~Workspace() {
    if (!path.empty()) rmdir(path.c_str());
  }
  std::string path;
};

// Every I/O of every point made D = 5 ms slower in the points' children, whatever
// the engine (pread/pwrite for psync; after io_submit / io_uring_submit, D per I/O
// submitted: tests/shims/slow_shim.c, DS_SHIM_SLOW_AIO): a point costs at least its
// I/Os x D however fast the disk, and more only on a loaded machine.
constexpr double kSlowIoS = 0.005;
std::map<std::string, std::string> slow_every_io() {
  return {{"LD_PRELOAD", DS_SLOW_SHIM},
          {"DS_SHIM_SLOW_ALL", "1"},
          {"DS_SHIM_SLOW_AIO", "1"},
          {"DS_SHIM_SLOW_NS", std::to_string(static_cast<long long>(kSlowIoS * 1e9))}};
}

// The lines of `err` that contain `what`.
std::vector<std::string> lines_with(const std::string& err, const std::string& what) {
  std::vector<std::string> out;
  std::istringstream in(err);
  for (std::string line; std::getline(in, line);)
    if (line.find(what) != std::string::npos) out.push_back(line);
  return out;
}

// `s` matched literally in a regex (a path).
std::string literal(const std::string& s) {
  static const std::regex special(R"([.^$|()\[\]{}*+?\\])");
  return std::regex_replace(s, special, R"(\$&)");
}

const std::string kNote = "dev-sandbox: note: ";  // how a note reaches stderr

// "about N s, M s left": N, M as note_seconds writes them (one decimal below 10 s).
const char* const kAboutLeft = R"(about ([0-9]+(?:\.[0-9])?) s, ([0-9]+(?:\.[0-9])?) s left; a larger --budget measures it)";

double seconds_of(const std::chrono::steady_clock::time_point& t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Before any refining point, the aio points cover at least two values of each knob
// (engine, iodepth, workers, shards per file); psync, every read and write made 100 ms
// slower in the points' children, is below half the others at two neighbouring cells
// and dropped; the budget holds (a generous bound: the machine is shared). psync's
// threads sleep those 100 ms side by side, so at iodepth 4 and 4 workers it moves
// 16 reads of 1 MiB a delay, 0.16 GiB/s: below half of what the other engines reach
// on a loaded 2-CPU machine (0.5 GiB/s or more). At 40 ms it read 0.30 there against
// 0.52, and was not dropped. Its two cells take about 12 s of the 45 s budget, which
// leaves the other engines' coarse cells and the 16-shard cells their time (at 30 s
// the shard cells were left out on a loaded machine).
TEST(TuneSearchE2E, AioCoversTheProductAndDropsADominatedEngine) {
  Workspace ws;
  ASSERT_FALSE(ws.path.empty());
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "45s", "--what", "aio", "--workspace", ws.path,
                                "--format", "json"},
                               {{"LD_PRELOAD", DS_SLOW_SHIM}, {"DS_SHIM_SLOW_ALL", "1"}, {"DS_SHIM_SLOW_NS", "100000000"}});
  const double took = seconds_of(t0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  const json& aio = doc["aio"];
  std::map<std::string, std::set<std::string>> seen;
  bool refined = false, coarse_after_refining = false;
  for (const json& p : aio["points"]) {
    if (p["phase"] != "coarse") {
      refined = true;
      continue;
    }
    coarse_after_refining = coarse_after_refining || refined;
    for (const char* k : {"engine", "iodepth", "workers", "shards_per_file"}) seen[k].insert(p["config"][k].dump());
  }
  EXPECT_FALSE(coarse_after_refining) << "the coarse grid comes first";
  for (const char* k : {"engine", "iodepth", "workers", "shards_per_file"})
    EXPECT_GE(seen[k].size(), 2u) << k << ": " << aio["points"].dump();
  ASSERT_EQ(aio["searches"].size(), 1u);
  const json& dropped = aio["searches"][0]["dropped"];
  bool psync = false;
  for (const json& d : dropped) psync = psync || d["engine"] == "psync";
  EXPECT_TRUE(psync) << dropped.dump();
  // Once dropped, psync is measured no more: at most the coarse cells up to the drop.
  int psync_points = 0;
  for (const json& p : aio["points"]) psync_points += p["config"]["engine"] == "psync";
  EXPECT_LE(psync_points, 4) << aio["points"].dump();
  ASSERT_EQ(aio["recommendations"].size(), 1u) << aio.dump();  // (a const json's [] past the end is undefined)
  EXPECT_NE(aio["recommendations"][0]["load"]["config"]["engine"], "psync");
  EXPECT_LT(doc["elapsed_s"].get<double>(), 45.0 * 1.1 + 2.0);
  EXPECT_LT(took, 90.0);
}

// `tune --what load`: a recommendation per block shape with the next best and load's
// verdict in words, every point load's own measurement (its command, its Stages),
// the JSON valid, the budget holding; the text says the same.
TEST(TuneSearchE2E, LoadRecommendsTheKnobsOnSim) {
  Workspace ws;
  ASSERT_FALSE(ws.path.empty());
  const std::vector<std::string> args = {"--backend", "sim", "tune", "--budget", "12s", "--what", "load",
                                         "--workspace", ws.path, "--sizes", "256K:256K", "-i", "2"};
  std::vector<std::string> js = args;
  js.insert(js.end(), {"--format", "json"});
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_tool(js);
  const double took = seconds_of(t0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  EXPECT_TRUE(doc["copy"].is_null());
  EXPECT_TRUE(doc["aio"].is_null());
  EXPECT_EQ(doc["what"], json::array({"load"}));
  const json& load = doc["load"];
  ASSERT_EQ(load["recommendations"].size(), 1u);
  const json& best = load["recommendations"][0]["best"];
  ASSERT_TRUE(best.is_object()) << load.dump();
  const std::string bound = best["bound"];
  EXPECT_TRUE(bound == "disk-bound" || bound == "copy-bound" || bound == "overlap lost") << bound;
  // The best is the fastest point measured, the next the second.
  std::vector<double> bw, quiet;
  std::set<std::string> staging;
  for (const json& p : load["points"]) {
    ASSERT_FALSE(p.contains("error")) << p.dump();
    bw.push_back(p["gib_s"]);
    if (!p["noisy"].get<bool>()) quiet.push_back(p["gib_s"]);
    staging.insert(p["config"]["staging"].dump());
    EXPECT_EQ(p["command"].get<std::string>().rfind("dev-sandbox load --workspace " + ws.path + " -s 256K -n 64 ", 0), 0u)
        << p["command"];
    EXPECT_TRUE(p["bottleneck"].is_string()) << p.dump();
  }
  std::sort(bw.rbegin(), bw.rend());
  std::sort(quiet.rbegin(), quiet.rend());
  ASSERT_GE(bw.size(), 2u);
  // The fastest quiet point (the fastest of all when every one is noisy), or, in a
  // tie within 5% of it, a cheaper one; the next is another point.
  const double top = quiet.empty() ? bw[0] : quiet[0];
  if (best["tie"].get<bool>())
    EXPECT_GE(best["gib_s"].get<double>(), 0.95 * top);
  else
    EXPECT_DOUBLE_EQ(best["gib_s"].get<double>(), top);
  EXPECT_TRUE(best["next"].is_object()) << best.dump();
  EXPECT_GE(staging.size(), 2u) << "staging buffers 2, 4, 8 in the coarse grid";
  EXPECT_LT(doc["elapsed_s"].get<double>(), 12.0 * 1.1 + 2.0);
  EXPECT_LT(took, 40.0);
  json bad = doc;
  bad["load"]["points"][0]["config"]["copy"] = "fast";
  EXPECT_FALSE(schema_errors(schema(), bad).empty()) << "the load points' config is checked";

  const RunResult t = run_tool(args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("\n[[ load ]] "), std::string::npos) << t.out;
  EXPECT_NE(t.out.find("Engine    Copy    Staging  Iodepth  BW(GiB/s)"), std::string::npos) << t.out;
  const size_t use = t.out.find("\n" + ws.path + ", 256 KiB blocks: use ");
  ASSERT_NE(use, std::string::npos) << t.out;
  EXPECT_NE(t.out.find("; next ", use), std::string::npos) << "the next best and by how much: " << t.out;
  EXPECT_NE(t.out.find("\n  as: dev-sandbox load --workspace " + ws.path, use), std::string::npos) << t.out;
}

// --report with --what load: the page parses and holds every row of the load table.
TEST(TuneSearchE2E, LoadTableIsInTheReport) {
  Workspace ws;
  ASSERT_FALSE(ws.path.empty());
  const std::string page_path = ws.path + "-tune.html";
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "4s", "--what", "load", "--workspace", ws.path,
                                "--sizes", "64K:64K", "-i", "1", "--report", page_path});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string page = slurp(page_path);
  std::remove(page_path.c_str());
  const HtmlCheck c = check_html(page);
  for (const std::string& e : c.errors) ADD_FAILURE() << e;
  std::vector<std::string> rows;
  for (const auto& row : c.rows) rows.push_back(collapse_spaces(joined(row)));
  const size_t head = r.out.find("Engine ");
  ASSERT_NE(head, std::string::npos) << r.out;
  std::istringstream text(r.out.substr(head));
  size_t n = 0;
  for (std::string line; std::getline(text, line) && !line.empty() && line.find(": use ") == std::string::npos;) {
    if (line[0] == '~' || line.rfind("dropped: ", 0) == 0) continue;
    ++n;
    EXPECT_NE(std::find(rows.begin(), rows.end(), collapse_spaces(line)), rows.end()) << line;
  }
  EXPECT_GE(n, 2u) << r.out;
}

// Two workspaces share a 1 s aio budget (0.5 s each). The first workspace's first
// point has nothing to be estimated from and is measured: 3 epochs of a 64 MiB dump
// and a 64 MiB load in 1 MiB shards, 384 I/Os of at least 5 ms each, so at least
// 1.9 s. Nothing else fits; the second workspace's first point, estimated from that
// one, cannot fit in what is left of the budget (1 s - 1.9 s): it is skipped with one
// note, its estimate at least what the measured point cost, and no point of it is
// measured. The exit status is 0: a skipped point is not a failure.
TEST(TuneSearchE2E, AioWorkspaceThatWillNotFitIsSkippedWithOneNote) {
  Workspace first, second;
  ASSERT_FALSE(first.path.empty());
  ASSERT_FALSE(second.path.empty());
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "1s", "--what", "aio", "--workspace",
                                first.path, "--workspace", second.path, "--format", "json"},
                               slow_every_io());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> notes = lines_with(r.err, " skipped: ");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  std::smatch m;
  const std::regex note("dev-sandbox: note: tune: aio on " + literal(second.path) + " skipped: " + kAboutLeft);
  ASSERT_TRUE(std::regex_match(notes[0], m, note)) << notes[0];
  const double about = std::stod(m[1]), left = std::stod(m[2]);
  EXPECT_GE(about, 1.9) << "the estimate is the measured point's cost, at least 384 x 5 ms";
  EXPECT_GT(about * 1.1, left) << "skipped only when it does not fit";
  const json doc = json::parse(r.out);
  expect_valid(doc);
  const json& aio = doc["aio"];
  size_t on_first = 0, coarse_first = 0;
  for (const json& p : aio["points"]) {
    EXPECT_NE(p["workspace"], second.path) << "the skipped workspace has no points: " << p.dump();
    on_first += p["workspace"] == first.path;
    coarse_first += p["workspace"] == first.path && p["phase"] == "coarse";
    EXPECT_GE(p["seconds"].get<double>(), 384 * kSlowIoS) << p.dump();
  }
  EXPECT_GE(on_first, 1u);
  ASSERT_EQ(aio["searches"].size(), 2u);
  EXPECT_EQ(aio["searches"][1]["workspace"], second.path);
  EXPECT_EQ(aio["searches"][1]["coarse_skipped"], aio["searches"][1]["coarse_planned"]);
  EXPECT_EQ(aio["searches"][0]["coarse_planned"].get<size_t>() - aio["searches"][0]["coarse_skipped"].get<size_t>(),
            coarse_first) << "N of M coarse points in the budget counts what was measured";
  for (const json& k : aio["recommendations"]) EXPECT_NE(k["workspace"], second.path) << k.dump();
  const json& kept = aio["notes"];
  EXPECT_EQ(std::count(kept.begin(), kept.end(), json(notes[0].substr(kNote.size()))), 1) << "the JSON keeps the note: "
                                                                                        << kept.dump();
}

// The same for --what load: two workspaces, one block shape (256 KiB, 64 blocks),
// a 1 s budget (0.5 s each); a point (-i 1 --warmup 0) reads the blocks twice (the
// pipelined pass and the disk alone), 128 reads of at least 5 ms, so at least 0.64 s:
// the second workspace's first point (1 s - 0.64 s left, estimated at 0.64 s x 1.1)
// does not fit and is skipped with one note.
TEST(TuneSearchE2E, LoadWorkspaceThatWillNotFitIsSkippedWithOneNote) {
  Workspace first, second;
  ASSERT_FALSE(first.path.empty());
  ASSERT_FALSE(second.path.empty());
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "1s", "--what", "load", "--workspace",
                                first.path, "--workspace", second.path, "--sizes", "256K:256K", "-i", "1",
                                "--warmup", "0", "--format", "json"},
                               slow_every_io());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  const json& load = doc["load"];
  if (load["searches"].empty()) GTEST_SKIP() << "no I/O engine for load here: " << load["unavailable"].dump();
  const std::vector<std::string> notes = lines_with(r.err, " skipped: ");
  ASSERT_EQ(notes.size(), 1u) << r.err;
  std::smatch m;
  const std::regex note("dev-sandbox: note: tune: load of 256 KiB blocks on " + literal(second.path) + " skipped: " + kAboutLeft);
  ASSERT_TRUE(std::regex_match(notes[0], m, note)) << notes[0];
  const double about = std::stod(m[1]), left = std::stod(m[2]);
  EXPECT_GE(about, 0.6) << "the estimate is the measured point's cost, at least 128 x 5 ms";
  EXPECT_GT(about * 1.1, left) << "skipped only when it does not fit";
  size_t on_first = 0, coarse_first = 0;
  for (const json& p : load["points"]) {
    EXPECT_NE(p["workspace"], second.path) << "the skipped workspace has no points: " << p.dump();
    on_first += p["workspace"] == first.path;
    coarse_first += p["workspace"] == first.path && p["phase"] == "coarse";
    EXPECT_GE(p["seconds"].get<double>(), 128 * kSlowIoS) << p.dump();
  }
  EXPECT_GE(on_first, 1u);
  ASSERT_EQ(load["searches"].size(), 2u);
  EXPECT_EQ(load["searches"][1]["workspace"], second.path);
  EXPECT_EQ(load["searches"][1]["coarse_skipped"], load["searches"][1]["coarse_planned"]);
  EXPECT_EQ(load["searches"][0]["coarse_planned"].get<size_t>() - load["searches"][0]["coarse_skipped"].get<size_t>(),
            coarse_first) << "N of M coarse points in the budget counts what was measured";
  ASSERT_EQ(load["recommendations"].size(), 2u);
  EXPECT_TRUE(load["recommendations"][1]["best"].is_null()) << load["recommendations"].dump();
  const json& kept = load["notes"];
  EXPECT_EQ(std::count(kept.begin(), kept.end(), json(notes[0].substr(kNote.size()))), 1) << "the JSON keeps the note: "
                                                                                        << kept.dump();
}

// --what aio,load on one workspace in 1 s: aio's first point (at least 1.9 s, as
// above) takes all of it, and load, next, has no time left and no load point yet to
// estimate one from: its note says so rather than "about 0.0 s".
TEST(TuneSearchE2E, LoadAfterAioTookTheBudgetSaysNoTimeLeft) {
  Workspace ws;
  ASSERT_FALSE(ws.path.empty());
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "1s", "--what", "aio,load", "--workspace",
                                ws.path, "--sizes", "256K:256K", "-i", "1", "--warmup", "0", "--format", "json"},
                               slow_every_io());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  if (doc["load"]["searches"].empty()) GTEST_SKIP() << "no I/O engine for load here";
  EXPECT_EQ(lines_with(r.err, " skipped: "),
            std::vector<std::string>{"dev-sandbox: note: tune: load of 256 KiB blocks on " + ws.path +
                                     " skipped: no time left; a larger --budget measures it"})
      << r.err;
  EXPECT_FALSE(doc["aio"]["points"].empty());
  EXPECT_TRUE(doc["load"]["points"].empty()) << doc["load"]["points"].dump();
}

TEST(TuneSearchE2E, LoadBadCombinationsAreOneLineExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--what", "load"}, "dev-sandbox: error: option --what load needs --workspace DIR\n"},
      {{"--what", "copy,load"}, "dev-sandbox: error: option --what load needs --workspace DIR\n"},
      {{"--what", "copy", "--workspace", "/tmp"},
       "dev-sandbox: error: option --workspace is for --what aio and load; add aio or load to --what\n"},
      {{"--what", "aio", "--model", "Qwen3-32B", "--workspace", "/tmp"},
       "dev-sandbox: error: option --model measures copies and the load; add copy or load to --what\n"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"--backend", "sim", "tune"};
    args.insert(args.end(), c.first.begin(), c.first.end());
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << c.first[1];
    EXPECT_EQ(r.err, c.second);
    EXPECT_TRUE(r.out.empty());
  }
}

// `tune --what load` checks each block shape against the machine before it starts: a
// shape whose staging RLIMIT_MEMLOCK cannot lock is skipped with one note, not failed
// (the run exits 0); the other shapes are measured; the equivalent command quotes a
// workspace path with a space in it.
TEST(TuneSearchE2E, LoadSkipsAShapeThatDoesNotFitAndQuotesTheWorkspace) {
  Workspace base;
  ASSERT_FALSE(base.path.empty());
  const std::string ws = base.path + "/my kv";
  ASSERT_EQ(mkdir(ws.c_str(), 0755), 0);
  RunOptions o;
  // The 1 MiB shape's 8 staging buffers (8 MiB) do not fit; 64 KiB's and 256 KiB's (2 MiB) do.
  o.memlock_limit = 4 << 20;
  o.drop_ipc_lock = true;
  const RunResult r = run_tool_opts({"--backend", "sim", "tune", "--budget", "8s", "--what", "load", "--workspace", ws,
                                     "--sizes", "64K:1M", "-i", "1", "--format", "json"},
                                    o);
  rmdir(ws.c_str());
  if (r.exit_code == 126) GTEST_SKIP() << "cannot drop CAP_IPC_LOCK here";
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string note = "dev-sandbox: note: tune: load of 1 MiB blocks on " + ws +
                           " skipped: memory locking refused for its staging: it locks 8.00 MiB per process but RLIMIT_MEMLOCK "
                           "is 4.00 MiB; raise it with `ulimit -l unlimited`\n";
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  const json& load = doc["load"];
  bool big = false, small = false;
  for (const json& s : load["searches"]) {
    if (s["shape"] == "1 MiB") big = !s["unfit"].is_null() && s["coarse_measured"] == 0;
    if (s["shape"] == "64 KiB") small = s["unfit"].is_null();
  }
  EXPECT_TRUE(big && small) << load["searches"].dump();
  ASSERT_FALSE(load["points"].empty());
  for (const json& p : load["points"]) {
    EXPECT_NE(p["shape"], "1 MiB");
    EXPECT_EQ(p["command"].get<std::string>().rfind("dev-sandbox load --workspace '" + ws + "' -s ", 0), 0u)
        << p["command"];
  }
}
