// `tune` end to end: through the cuda double with copy costs injected so that the
// crossovers are known in advance, on sim for the budget and aio, its bad input, and
// its JSON checked against docs/schemas/tune-v1.schema.json.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "cli_harness.h"
#include "html_check.h"
#include "pty_harness.h"
#include "schema_check.h"

using namespace dstest;
using nlohmann::json;

namespace {

json schema() {
  std::ifstream in(DS_TUNE_SCHEMA);
  return json::parse(in);
}

void expect_valid(const json& doc) {
  const std::vector<std::string> errors = schema_errors(schema(), doc);
  for (const std::string& e : errors) ADD_FAILURE() << e;
}

// Every copy submission costs S = 512 us of its thread's time, every copy task c = 16
// us per KiB. The submission cost is counted on the thread's timeline, not slept
// (DS_CUDA_DOUBLE_SUBMIT_COUNTED, tests/doubles/double_timing.h): on a loaded machine a
// slept stall overshoots and the overshoot adds up over 64 submissions (it once moved
// the crossover a size step under the parallel suite); counted, only the last sleep's
// overshoot is in an iteration. With 64 blocks an iteration (tune_blocks up to 512 KiB):
//   ce, sm (a submission per block, one stream)  64 x max(S, size x c)
//   batch_ce, sm_gather (one submission)          S + 64 x size x c
//   ms_8 (a submission per block, 8 streams)     max(64 x S, 64 x size x c / 8)
// so one submission wins below S / c = 32 KiB (x2 at 16 KiB, x3.8 at 8 KiB), 8 streams
// above it (x2 at 64 KiB, x4 at 128 KiB); at 32 KiB they tie, so the crossover the run
// reports is within one size step of the tie: 32 or 64 KiB (16 KiB is batch_ce's by x2).
std::map<std::string, std::string> costed_double() {
  return {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE},
          {"DS_CUDA_DOUBLE_DEVICES", "2"},
          {"DS_CUDA_DOUBLE_SUBMIT_NS", "512000"},
          {"DS_CUDA_DOUBLE_SUBMIT_COUNTED", "1"},
          {"DS_CUDA_DOUBLE_COPY_NS_PER_KIB", "16000"}};
}

const json& group(const json& doc, const std::string& key) {
  for (const json& g : doc["copy"]["groups"])
    if (g["key"] == key) return g;
  static const json none;
  ADD_FAILURE() << "no group " << key;
  return none;
}

// What the page writer makes of a text line (&, <, >, ", ').
std::string html_escape_for_test(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '&') o += "&amp;";
    else if (ch == '<') o += "&lt;";
    else if (ch == '>') o += "&gt;";
    else if (ch == '"') o += "&quot;";
    else if (ch == '\'') o += "&#39;";
    else o += ch;
  }
  return o;
}

std::string method_of(const std::string& arm) { return arm.substr(arm.rfind('.') + 1); }

}  // namespace

TEST(TuneE2E, FindsTheCrossoverTheCostsSetThroughTheCudaDouble) {
  const RunResult r = run_tool({"--backend", "cuda", "tune", "--budget", "2m", "--sizes", "4K:128K", "--direction",
                                "h2d", "--cards", "one", "-S", "8", "-i", "3", "--format", "json"},
                               costed_double());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  const json& g = group(doc, "h2d.one");
  // Below the crossover the best is one submission for every block; above it, 8 streams.
  for (const json& row : g["sizes"]) {
    const uint64_t b = row["block_bytes"];
    const std::string best = method_of(row["best"]);
    if (b <= 16384) EXPECT_TRUE(best == "batch_ce" || best == "sm_gather") << b << ": " << best;
    if (b >= 65536) EXPECT_EQ(best.rfind("ms_8", 0), 0u) << b << ": " << best;
  }
  // The best and the runner-up are the two fastest points measured at that size.
  for (const json& row : g["sizes"]) {
    std::vector<std::pair<double, std::string>> at;
    for (const json& p : doc["copy"]["points"])
      if (p["block_bytes"] == row["block_bytes"] && p["arm"].get<std::string>().rfind("h2d.one.", 0) == 0 &&
          p.contains("gib_s"))
        at.push_back({p["gib_s"], p["arm"]});
    std::sort(at.rbegin(), at.rend());
    ASSERT_GE(at.size(), 2u) << row.dump();
    EXPECT_EQ(row["best"], at[0].second) << row.dump();
    EXPECT_EQ(row["runner_up"], at[1].second) << row.dump();
    EXPECT_GE(row["best_gib_s"].get<double>(), row["runner_up_gib_s"].get<double>());
  }
  // The crossover from one submission to 8 streams, within one size step of 32 KiB (a
  // crossover between the two 8-stream arms, ms_8 and ms_8_rr, is not it).
  bool found = false;
  for (const json& c : g["crossovers"]) {
    if (c["loser"].is_null() || method_of(c["winner"]).rfind("ms_8", 0) != 0 ||
        method_of(c["loser"]).rfind("ms_8", 0) == 0)
      continue;
    const uint64_t from = c["from_bytes"];
    EXPECT_TRUE(from == 32768 || from == 65536) << c.dump();
    found = true;
  }
  EXPECT_TRUE(found) << g["crossovers"].dump();
  // The recommendation for the largest size is 8 streams.
  ASSERT_FALSE(g["recommendations"].empty());
  EXPECT_EQ(g["recommendations"].back()["method"].get<std::string>().rfind("ms_8", 0), 0u);
  EXPECT_EQ(g["recommendations"].back()["to_bytes"], 131072);
}

// Through the ascend double (AscendCL and the FFTS+ runtime), both counted on the
// thread's and the stream's timelines (SUBMIT_COUNTED, COPY_COUNTED: a loaded machine's
// late wake-ups do not add up over an iteration's 64 submissions or copies; an
// aclrtMemcpyBatchAsync is one submission but a copy task per block). An
// aclrtMemcpyAsync costs S = 1024 us of its thread, an FFTS+ launch S/4 = 256 us, a copy
// c = 16 us per KiB on card 0 and 2c on card 1 (DEVICE_FACTOR 1:2). 64 blocks of b:
//   ce (aclrtMemcpyAsync per block, one stream)   64 x max(S, b c)
//   batch_ce (one submission, a task per block)   S + 64 b c
//   ms_8_rr (per block, 8 streams round-robin)    max(64 S + b c, 8 S + 8 b c)
//   direct (an FFTS+ launch per block, all cards) 64 x max(S/4, b c)
// One card (card 0): batch_ce wins below b c = S, b = S / c = 64 KiB (x2 at 32 KiB), 8
// streams above it (x2 at 128 KiB); they tie at 64 KiB: the crossover is reported at 64
// or 128 KiB. All cards (card 1's 2c sets the pace): batch_ce (S + 64 b 2c) wins at
// 4 KiB (9 S/16 x 16 against direct's 16 S), direct and batch_ce are within 6% of
// each other from 8 to 32 KiB (where 8 streams round-robin, max(64 S + b 2c, 8 S +
// 8 b 2c), joins them), and 8 streams win above (x2 at 64 KiB); the crossover into
// them is reported at 32 or 64 KiB.
std::map<std::string, std::string> costed_ascend_double() {
  return {{"DEV_SANDBOX_ACL_LIB", DS_ACL_DOUBLE},
          {"DS_ACL_DOUBLE_DEVICES", "2"},
          {"DS_ACL_DOUBLE_SUBMIT_NS", "1024000"},
          {"DS_ACL_DOUBLE_FFTS_SUBMIT_NS", "256000"},
          {"DS_ACL_DOUBLE_SUBMIT_COUNTED", "1"},
          {"DS_ACL_DOUBLE_COPY_COUNTED", "1"},
          {"DS_ACL_DOUBLE_COPY_NS_PER_KIB", "16000"},
          {"DS_ACL_DOUBLE_DEVICE_FACTOR", "1:2"}};
}

// The crossovers into `winner` (a method prefix) from an arm that is not one, as measured.
std::vector<uint64_t> crossovers_into(const json& g, const std::string& winner) {
  std::vector<uint64_t> at;
  for (const json& c : g["crossovers"])
    if (!c["loser"].is_null() && method_of(c["winner"]).rfind(winner, 0) == 0 &&
        method_of(c["loser"]).rfind(winner, 0) != 0)
      at.push_back(c["from_bytes"]);
  return at;
}

TEST(TuneE2E, FindsTheCrossoversTheCostsSetThroughTheAscendDouble) {
  const RunResult r = run_tool({"--backend", "ascend", "tune", "--budget", "2m", "--sizes", "4K:256K", "--direction",
                                "h2d", "-S", "8", "-i", "3", "--format", "json"},
                               costed_ascend_double());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  // One card: one submission per iteration below 64 KiB, 8 streams above.
  const json& one = group(doc, "h2d.one");
  for (const json& row : one["sizes"]) {
    const uint64_t b = row["block_bytes"];
    const std::string best = method_of(row["best"]);
    if (b <= 32768) EXPECT_EQ(best, "batch_ce") << b;
    if (b >= 131072) EXPECT_EQ(best.rfind("ms_8", 0), 0u) << b << ": " << best;
  }
  const std::vector<uint64_t> one_at = crossovers_into(one, "ms_8");
  ASSERT_EQ(one_at.size(), 1u) << one["crossovers"].dump();
  EXPECT_TRUE(one_at[0] == 65536 || one_at[0] == 131072) << one["crossovers"].dump();
  ASSERT_FALSE(one["recommendations"].empty());
  EXPECT_EQ(one["recommendations"].front()["method"], "batch_ce");
  EXPECT_EQ(one["recommendations"].front()["from_bytes"], 4096);
  EXPECT_EQ(one["recommendations"].back()["method"].get<std::string>().rfind("ms_8", 0), 0u);
  EXPECT_EQ(one["recommendations"].back()["to_bytes"], 262144);
  // All cards: one batched submission per card at 4 KiB, it or the direct FFTS+ path
  // up to 16 KiB, 8 streams round-robin from 64 KiB.
  const json& all = group(doc, "h2d.all");
  for (const json& row : all["sizes"]) {
    const uint64_t b = row["block_bytes"];
    const std::string best = method_of(row["best"]);
    if (b == 4096) EXPECT_EQ(best, "batch_ce") << b;
    if (b > 4096 && b <= 16384) EXPECT_TRUE(best == "direct" || best == "batch_ce") << b << ": " << best;
    if (b >= 65536) EXPECT_EQ(best, "ms_8_rr") << b;
  }
  const std::vector<uint64_t> all_at = crossovers_into(all, "ms_8");
  ASSERT_EQ(all_at.size(), 1u) << all["crossovers"].dump();
  EXPECT_TRUE(all_at[0] == 32768 || all_at[0] == 65536) << all["crossovers"].dump();
  ASSERT_FALSE(all["recommendations"].empty());
  EXPECT_EQ(all["recommendations"].front()["method"], "batch_ce");
  EXPECT_EQ(all["recommendations"].front()["case"], "all_host_to_all_device_batch_ce");
  EXPECT_EQ(all["recommendations"].back()["method"], "ms_8_rr");
  EXPECT_EQ(all["recommendations"].back()["to_bytes"], 262144);
}

TEST(TuneE2E, TextSaysTheCrossoverInWords) {
  const RunResult r = run_tool({"--backend", "cuda", "tune", "--budget", "2m", "--sizes", "4K:128K", "--direction",
                                "h2d", "--cards", "one", "-S", "8", "-i", "3"},
                               costed_double());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[[ H2D, one card ]]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Size(KB)  Best"), std::string::npos) << r.out;
  const bool at32 = r.out.find("beats batch_ce from 32 KiB") != std::string::npos ||
                    r.out.find("beats sm_gather from 32 KiB") != std::string::npos;
  const bool at64 = r.out.find("beats batch_ce from 64 KiB") != std::string::npos ||
                    r.out.find("beats sm_gather from 64 KiB") != std::string::npos;
  EXPECT_TRUE(at32 || at64) << r.out;
  EXPECT_NE(r.out.find("use: "), std::string::npos) << r.out;
}

// The budget holds (a generous bound: the machine is shared), and a small one still
// measures and says what it left out.
// --report: the page parses (tests/e2e/html_check.h, strict), holds every row of
// every table the text prints, the crossover and use lines, the plot inline and the
// machine's facts.
TEST(TuneE2E, ReportHoldsEveryTableRowOfTheText) {
  char tmpl[] = "/tmp/ds-tune-report-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  dstest::ScopedPath dir(tmpl);
  const std::string page_path = std::string(tmpl) + "/tune.html";
  const RunResult r = run_tool({"--backend", "cuda", "tune", "--budget", "2m", "--sizes", "4K:128K", "--direction",
                                "h2d", "--cards", "one", "-S", "8", "-i", "3", "--report", page_path},
                               costed_double());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: wrote the report to " + page_path), std::string::npos) << r.err;
  const std::string page = slurp(page_path);
  const HtmlCheck c = check_html(page);
  for (const std::string& e : c.errors) ADD_FAILURE() << e;
  EXPECT_EQ(c.svgs, 1);
  std::vector<std::string> rows;
  for (const auto& row : c.rows) rows.push_back(collapse_spaces(joined(row)));
  // The text's table: from its header to the first line that is not a row.
  const size_t head = r.out.find("Size(KB)");
  ASSERT_NE(head, std::string::npos) << r.out;
  std::istringstream text(r.out.substr(head));
  size_t n = 0;
  for (std::string line; std::getline(text, line);) {
    if (line.rfind("crossovers: ", 0) == 0 || line.rfind("use: ", 0) == 0) {
      EXPECT_NE(page.find(html_escape_for_test(line)), std::string::npos) << line;
      continue;
    }
    if (line.empty() || line[0] == '~' || line.rfind("dropped: ", 0) == 0) continue;
    ++n;
    EXPECT_NE(std::find(rows.begin(), rows.end(), collapse_spaces(line)), rows.end()) << line;
  }
  EXPECT_EQ(n, 7u) << r.out;  // the header and 4K..128K
  bool kernel = false;
  for (const auto& row : c.rows) kernel = kernel || (row.size() == 2 && row[0] == "host.kernel");
  EXPECT_TRUE(kernel) << "the machine's facts";
}

// The checker fails what breaks the page: a script, a tag closed out of order, a raw
// '<', an unknown reference, an outside reference, an element never closed.
TEST(TuneE2E, HtmlCheckerRejectsWhatBreaksThePage) {
  const std::string ok = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>t</title></head><body>"
                         "<table><tr><td>a &amp; b</td></tr></table><svg><line x1=\"1\"/></svg></body></html>\n";
  EXPECT_TRUE(check_html(ok).errors.empty());
  ASSERT_EQ(check_html(ok).rows.size(), 1u);
  EXPECT_EQ(check_html(ok).rows[0][0], "a & b");
  const std::vector<std::string> bad = {
      "<!DOCTYPE html>\n<html><body><script>x()</script></body></html>",
      "<!DOCTYPE html>\n<html><body><p><b>x</p></b></body></html>",
      "<!DOCTYPE html>\n<html><body><p>a < b</p></body></html>",
      "<!DOCTYPE html>\n<html><body><p>&nbsp;</p></body></html>",
      "<!DOCTYPE html>\n<html><body><p style=\"background:url(https://x.org/a.png)\">x</p></body></html>",
      "<!DOCTYPE html>\n<html><body><p>x</body></html>",
      "<html><body></body></html>",
  };
  for (const std::string& b : bad) EXPECT_FALSE(check_html(b).errors.empty()) << b;
}

TEST(TuneE2E, SmallBudgetIsRespectedOnSim) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "5s", "-d", "2", "--format", "json"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  EXPECT_EQ(doc["budget_s"], 5.0);
  EXPECT_LT(doc["elapsed_s"].get<double>(), 5.0 * 1.1 + 2.0);
  EXPECT_LT(took, 30.0);
  EXPECT_FALSE(doc["copy"]["points"].empty());
  EXPECT_GT(doc["copy"]["coarse_skipped"].get<int>(), 0) << "5 s cannot hold every coarse point of 4K..64M";
}

TEST(TuneE2E, AioRecommendsAnEngineOnSim) {
  char tmpl[] = DS_AIO_TEST_BASE "/tune-ws-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string ws = tmpl;
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "8s", "--what", "aio", "--workspace", ws,
                                "--format", "json"});
  rmdir(ws.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  EXPECT_TRUE(doc["copy"].is_null());
  ASSERT_EQ(doc["aio"]["recommendations"].size(), 1u);
  EXPECT_FALSE(doc["aio"]["recommendations"][0]["load"].is_null());
}

// The checker can fail: a document of another version, a missing key, a wrong type.
TEST(TuneE2E, SchemaCheckerRejectsWhatBreaksTheSchema) {
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "2s", "--sizes", "4K:8K", "--cards", "one",
                                "--direction", "h2d", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json doc = json::parse(r.out);
  EXPECT_TRUE(schema_errors(schema(), doc).empty());
  json v2 = doc;
  v2["schema"] = "tune/v2";
  EXPECT_FALSE(schema_errors(schema(), v2).empty());
  json missing = doc;
  missing["copy"].erase("groups");
  EXPECT_FALSE(schema_errors(schema(), missing).empty());
  json wrong = doc;
  wrong["copy"]["points"][0]["gib_s"] = "fast";
  EXPECT_FALSE(schema_errors(schema(), wrong).empty());
}

// --validate each checks every iteration of every point, as copy --validate each
// does: one copy skipped in the warm-up (the shim; a later iteration rewrites the
// block, so a check at the end alone would pass) fails every point, each named.
TEST(TuneE2E, ValidateEachChecksEveryIterationOfAPoint) {
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "20s", "--sizes", "4K:4K", "--direction", "h2d",
                                "--cards", "one", "-S", "2", "-i", "4", "--validate", "each"},
                               {{"LD_PRELOAD", DS_CORRUPT_SHIM},
                                {"DS_SHIM_MEMCPY_SIZE", "4096"},
                                {"DS_SHIM_MEMCPY_NTH", "100"},
                                {"DS_SHIM_MEMCPY_SKIP", "1"},
                                {"DS_SHIM_OFFSET", "0"}});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: note: tune: host_to_device_ce (ce) at 4K: validation failed: case "
                       "host_to_device_ce device 0 warm-up iteration 0 block 35"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("dev-sandbox: error: tune: some points failed"), std::string::npos) << r.err;
}

// --model: every arm on the model's blocks contiguous and paged (a random:7 table in a
// pool of 4x the request), the method to use for each and what the scatter costs it.
TEST(TuneE2E, ModelIsMeasuredContiguousAndPagedOnSim) {
  const std::vector<std::string> args = {"--backend", "sim", "tune", "--budget", "20s", "--model", "Qwen3-32B",
                                         "--tp", "8", "--input-len", "512", "--sizes", "256K:1M", "--direction",
                                         "h2d", "--cards", "one", "-i", "2"};
  std::vector<std::string> js = args;
  js.insert(js.end(), {"--format", "json"});
  const RunResult j = run_tool(js);
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const json doc = json::parse(j.out);
  expect_valid(doc);
  const json& m = doc["copy"]["model"];
  EXPECT_EQ(m["block_table"], true);
  int contiguous = 0, paged = 0;
  for (const json& p : m["points"]) {
    if (p["layout"] == "paged") {
      ++paged;
      EXPECT_EQ(p["block_table"]["table"], "random:7") << p.dump();
      EXPECT_EQ(p["block_table"]["pool_blocks"], 16) << "4 blocks of 128 tokens, 4x: " << p.dump();
    } else {
      EXPECT_EQ(p["layout"], "contiguous") << p.dump();
      EXPECT_FALSE(p.contains("block_table"));
      ++contiguous;
    }
  }
  EXPECT_GT(contiguous, 0);
  EXPECT_GT(paged, 0);
  // Each point's command is the copy line that measures it again: the model's options as
  // given lay the blocks out (no -s/-n, which they override), and the paged point's table
  // with the contiguous pass it timed beside it.
  std::map<std::string, std::string> commands;
  for (const json& p : m["points"]) commands[p["arm"].get<std::string>() + " " + p["layout"].get<std::string>()] = p["command"];
  EXPECT_EQ(commands["h2d.one.ce contiguous"],
            "dev-sandbox copy -t host_to_device_ce --model Qwen3-32B --tp 8 --input-len 512 -i 2 --warmup 1");
  EXPECT_EQ(commands["h2d.one.ce paged"],
            "dev-sandbox copy -t host_to_device_ce --model Qwen3-32B --tp 8 --input-len 512 -i 2 --warmup 1 "
            "--block-table random:7 --pool-blocks 16 --compare-contiguous");
  EXPECT_EQ(commands["h2d.one.ms_4_rr paged"],
            "dev-sandbox copy -t host_to_device_ce_multi_stream --model Qwen3-32B --tp 8 --input-len 512 -i 2 "
            "--warmup 1 --streams 4 --submit-mode round-robin --block-table random:7 --pool-blocks 16 "
            "--compare-contiguous");
  // ... which copy runs as it stands.
  std::vector<std::string> again = {"--backend", "sim"};
  std::istringstream words(commands["h2d.one.ce paged"].substr(std::string("dev-sandbox ").size()));
  for (std::string w; words >> w;) again.push_back(w);
  const RunResult rerun = run_tool(again);
  EXPECT_EQ(rerun.exit_code, 0) << rerun.err;
  const json& pb = m["paged_best"]["h2d.one"];
  ASSERT_TRUE(pb.is_object()) << m.dump();
  EXPECT_GT(pb["gib_s"].get<double>(), 0);
  EXPECT_GT(pb["of_contiguous"].get<double>(), 0);
  json bad = doc;
  bad["copy"]["model"]["paged_best"]["h2d.one"]["gib_s"] = "fast";
  EXPECT_FALSE(schema_errors(schema(), bad).empty()) << "paged_best's members are checked";
  const RunResult t = run_tool(args);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("(its blocks contiguous, and paged: a random:7 block table in a pool of 4x the request)"),
            std::string::npos)
      << t.out;
  EXPECT_NE(t.out.find("\nH2D, one card: use "), std::string::npos) << t.out;
  const size_t line = t.out.find("\nH2D, one card, paged: use ");
  ASSERT_NE(line, std::string::npos) << t.out;
  EXPECT_NE(t.out.find("% of its contiguous", line), std::string::npos) << t.out;
  EXPECT_EQ(t.out.find("no block table yet"), std::string::npos) << t.out;
}

// Through the cuda double: every arm (the SM kernels included) runs the model's paged
// layout as copy --block-table does, none fails, and the paged pick is named.
TEST(TuneE2E, ModelPagedThroughTheCudaDouble) {
  const RunResult r = run_tool({"--backend", "cuda", "tune", "--budget", "30s", "--model", "Qwen3-32B", "--tp", "8",
                                "--input-len", "512", "--sizes", "256K:1M", "--direction", "h2d", "--cards", "one",
                                "-i", "2", "--format", "json"},
                               {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "2"}});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  std::map<std::string, int> paged;
  for (const json& p : doc["copy"]["model"]["points"]) {
    EXPECT_FALSE(p.contains("error")) << p.dump();
    if (p["layout"] == "paged") ++paged[p["arm"].get<std::string>()];
  }
  EXPECT_EQ(paged.count("h2d.one.sm_gather"), 1u) << doc["copy"]["model"].dump();
  EXPECT_EQ(paged.size(), doc["copy"]["arms"].size()) << "every arm's paged point ran";
  EXPECT_TRUE(doc["copy"]["model"]["paged_best"]["h2d.one"].is_object());
}

// A model point moves the whole per-card request (here 2 GiB against sweep points of
// 32 MiB): estimated from the sweep's cost per byte, it does not fit a 2 s budget and
// is skipped with one note per point rather than run over the budget.
TEST(TuneE2E, ModelPointThatWillNotFitIsSkipped) {
  const auto t0 = std::chrono::steady_clock::now();
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "2s", "--model", "Qwen3-32B", "--tp", "8",
                                "--input-len", "65536", "--sizes", "256K:1M", "--direction", "h2d", "--cards", "one",
                                "-i", "2", "--format", "json"});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json doc = json::parse(r.out);
  expect_valid(doc);
  EXPECT_TRUE(doc["copy"]["model"]["points"].empty()) << doc["copy"]["model"].dump();
  EXPECT_NE(r.err.find("tune: --model's "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" point skipped: about "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(" s left; a larger --budget measures it"), std::string::npos) << r.err;
  EXPECT_LT(doc["elapsed_s"].get<double>(), 2.0 * 1.1 + 2.0);
  EXPECT_LT(took, 30.0);
}

// On a terminal, stderr shows what is being measured (the group, the arm, the size) and
// the time left of the budget, counting down, on one line rewritten; cleared at the end.
TEST(TuneE2E, ProgressOnATerminalShowsThePointAndTheTimeLeft) {
  const std::string why = no_pty_reason();
  if (!why.empty()) GTEST_SKIP() << "no pseudo-terminal here (" << why << ")";
  int code = -1;
  const std::string tty = run_in_pty({"--backend", "sim", "tune", "--budget", "4s", "--direction", "h2d", "--cards",
                                      "one", "-S", "2"},
                                     &code);
  ASSERT_EQ(code, 0) << tty;
  const std::regex update(R"re(\r\x1b\[Ktune: H2D, one card: (ce|batch_ce|ms_2|ms_2_rr) at ([0-9]+[KM]) \(([0-9]+) s left\))re");
  std::vector<int> left;
  std::set<std::string> points;
  for (std::sregex_iterator it(tty.begin(), tty.end(), update), end; it != end; ++it) {
    left.push_back(std::stoi((*it)[3]));
    points.insert((*it)[1].str() + " at " + (*it)[2].str());
  }
  ASSERT_GE(left.size(), 3u) << tty;
  EXPECT_TRUE(points.count("ce at 4K")) << tty;
  EXPECT_TRUE(points.count("ms_2_rr at 64M") || points.count("ms_2 at 1M")) << "the coarse points on: " << tty;
  EXPECT_EQ(left.front(), 4) << "the budget at the first point: " << tty;
  for (size_t i = 1; i < left.size(); ++i) EXPECT_LE(left[i], left[i - 1]) << "the time left never goes up: " << tty;
  EXPECT_LT(left.back(), left.front()) << "it counts down: " << tty;
  const std::string clear = "\r\x1b[K";
  const size_t first = tty.find("\r\x1b[Ktune: H2D"), last = tty.rfind(" s left)");
  EXPECT_EQ(tty.substr(first, last - first).find('\n'), std::string::npos) << "one line, rewritten: " << tty;
  EXPECT_GT(tty.rfind(clear), tty.rfind("s left)")) << "cleared after the last update: " << tty;
}

// Piped, no progress line.
TEST(TuneE2E, NoProgressLineWhenStderrIsNotATerminal) {
  const RunResult r = run_tool({"--backend", "sim", "tune", "--budget", "2s", "--sizes", "4K:8K", "--direction", "h2d",
                                "--cards", "one", "-S", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find(" s left)"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
}

TEST(TuneE2E, BadInputIsOneLineExitTwo) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--budget", "0"},
       "dev-sandbox: error: option --budget got '0': expects a duration above 0 such as 30s, 5m or 1h (at most 24h)\n"},
      {{"--budget", "5x"},
       "dev-sandbox: error: option --budget got '5x': expects a duration above 0 such as 30s, 5m or 1h (at most 24h)\n"},
      {{"--sizes", "64M:4K"}, "dev-sandbox: error: option --sizes got '64M:4K': FROM is larger than TO\n"},
      {{"--sizes", "3K:4M"},
       "dev-sandbox: error: option --sizes got '3K:4M': FROM and TO are powers of two up to 1G (e.g. 4K:64M)\n"},
      {{"--what", "disk"}, "dev-sandbox: error: option --what got 'disk': accepts copy, aio, load (comma-separated)\n"},
      {{"--what", "aio"}, "dev-sandbox: error: option --what aio needs --workspace DIR\n"},
      {{"--what", "load"}, "dev-sandbox: error: option --what load needs --workspace DIR\n"},
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
