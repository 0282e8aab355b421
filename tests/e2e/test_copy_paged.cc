// copy --compare-contiguous and the Paged line: each case with a block table also
// times its copies with the blocks at slots 0, 1, ... of the same pools, as its own
// pass in the same run (the cuda double's call log shows which slots each pass
// used); its result says the paged pass's share of it (text, JSON "paged", a CSV
// row). A run of several cases over one paged layout ends with the fastest method
// for it. What does not combine is one line, exit 2; the plan line fills only the
// request's blocks of a pool.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "cli_harness.h"
#include "json_checks.h"
#include "staged_checks.h"

using namespace dstest;

namespace {

bool contains(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

std::map<std::string, std::string> cuda_env(const std::string& log = "") {
  std::map<std::string, std::string> env = {{"DEV_SANDBOX_CUDA_LIB", DS_CUDA_DOUBLE}, {"DS_CUDA_DOUBLE_DEVICES", "2"}};
  if (!log.empty()) env["DS_CUDA_DOUBLE_LOG"] = log;
  return env;
}

// The issue's command, sized down: DeepSeek-V3.2 at TP 8 in vLLM's MLA cache, 256
// tokens = 2 blocks of 61 layers' [144K latent, 16896 B indexer] chunks.
std::vector<std::string> done_when(const std::string& backend, const std::vector<std::string>& cases) {
  std::vector<std::string> v = {"copy", "--backend", backend};
  for (const std::string& c : cases) v.insert(v.end(), {"-t", c});
  v.insert(v.end(), {"--model", "DeepSeek-V3.2", "--tp", "8", "--input-len", "256", "--kv-layout", "vllm-flash",
                     "--block-table", "random", "--compare-contiguous", "-i", "2", "--warmup", "1"});
  return v;
}

// The "filling X" of the plan line copy says on stderr for `args`.
std::string filling(const std::vector<std::string>& args) {
  const RunResult r = run_tool(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::smatch m;
  if (!std::regex_search(r.err, m, std::regex(R"(\(filling ([0-9.]+ [KMGT]?i?B) at a nominal)"))) {
    ADD_FAILURE() << "no plan line in:\n" << r.err;
    return "";
  }
  return m[1];
}

}  // namespace

// Per iteration (1 warm-up + 1) both passes, the contiguous one at slots 0, 1, 2 and
// the paged one at the table's 6, 2, 0, in turns (the last iteration ends with the
// paged pass); the result's figures are the paged pass's, the contiguous pass's in
// "paged", and the paged pass validated at its slots.
TEST(CopyCompareContiguous, TheContiguousPassCopiesTheSequentialSlots) {
  TempFile table("ds-copy-table"), log("ds-copy-log");
  { std::ofstream(table.path()) << "6\n2\n0\n"; }
  JsonRun r = run_json({"copy", "--backend", "cuda", "-t", "host_to_device_ce", "-s", "64K", "-n", "3", "-d", "1",
                        "-i", "1", "--warmup", "1", "--validate", "each", "--block-table", table.path(),
                        "--pool-blocks", "7", "--compare-contiguous"},
                       cuda_env(log.path()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(staged::copy_slots(log.text(), "cuMemcpyHtoDAsync_v2", "dst", 65536, 12),
            (std::vector<uint64_t>{6, 2, 0, 0, 1, 2, 0, 1, 2, 6, 2, 0}));
  const json x = r.result("host_to_device_ce");
  EXPECT_EQ(x["validated"], true);
  const json& p = x["paged"];
  EXPECT_EQ(p["block_table"], table.path());
  EXPECT_EQ(p["pool_blocks"], 7);
  EXPECT_EQ(p["chunks_per_iteration"], 3);
  EXPECT_EQ(p["mean_chunk_bytes"], 65536.0);
  const double contig = p["contiguous"]["bandwidth_gib_s"].get<double>();
  ASSERT_GT(contig, 0);
  EXPECT_NEAR(p["contiguous"]["copy_us"]["avg"].get<double>(), 3.0 * 65536 / (contig * (1 << 30)) * 1e6, 0.01);
  EXPECT_NEAR(p["percent_of_contiguous"].get<double>(), 100.0 * x["bandwidth_gib_s"].get<double>() / contig, 1e-9);
  EXPECT_EQ(x["iterations"], 1);
}

// A paged source (D2H, the device side paged) is filled at setup at the contiguous
// pass's slots first, then at the table's, so that pass reads memory that was written
// and the table's slots hold what the paged pass and its checks expect.
TEST(CopyCompareContiguous, APagedSourceIsFilledAtBothPassesSlots) {
  TempFile table("ds-copy-table"), log("ds-copy-log");
  { std::ofstream(table.path()) << "6\n2\n0\n"; }
  for (bool compare : {false, true}) {
    std::vector<std::string> args = {"copy", "--backend", "cuda", "-t", "device_to_host_ce", "-s", "64K", "-n", "3",
                                     "-d", "1", "-i", "1", "--warmup", "0", "--validate", "--block-table",
                                     table.path(), "--pool-blocks", "7"};
    if (compare) args.push_back("--compare-contiguous");
    { std::ofstream truncate(log.path()); }
    JsonRun r = run_json(args, cuda_env(log.path()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.result("device_to_host_ce")["validated"], true);
    const std::vector<uint64_t> want =
        compare ? std::vector<uint64_t>{0, 1, 2, 6, 2, 0} : std::vector<uint64_t>{6, 2, 0};
    EXPECT_EQ(staged::copy_slots(log.text(), "cuMemcpyHtoD_v2", "dst", 65536, 12), want);
  }
}

// The issue's command on sim: every H2D method validated at its slots, each its
// Paged line with its share of contiguous, then the summary and the fastest method
// for this layout, labelled as sim's memcpy.
TEST(CopyCompareContiguous, TheIssuesCommandOnSimNamesTheFastestMethod) {
  std::vector<std::string> args =
      done_when("sim", {"host_to_device_ce", "host_to_device_batch_ce", "host_to_device_ce_multi_stream"});
  args.insert(args.end(), {"--validate", "each"});
  const RunResult r = run_tool(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto paged = lines_starting(r.out, "  Paged: ");
  ASSERT_EQ(paged.size(), 3u) << r.out;
  for (const std::string& line : paged)
    EXPECT_TRUE(std::regex_match(line, std::regex(R"(  Paged: 244 chunks of 82176 B, [0-9.]+ GiB/s = [0-9.]+% of contiguous)")))
        << line;
  EXPECT_EQ(lines_starting(r.out, "[validation] ").size(), 3u) << r.out;
  const auto fastest = lines_starting(r.out, "  Fastest for this layout: ");
  ASSERT_EQ(fastest.size(), 1u) << r.out;
  EXPECT_TRUE(std::regex_match(
      fastest[0],
      std::regex(R"(  Fastest for this layout: host_to_device_[a-z_]+ [0-9.]+ GiB/s, [0-9]+\.[0-9]{2}x host_to_device_[a-z_]+ \(on sim every method is sim's memcpy on its copy threads, not a device's copy engines or SMs\))")))
      << fastest[0];
  // Right after the summary line it explains, and the last line.
  const size_t at = r.out.find("\n" + fastest[0] + "\n");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(at + fastest[0].size() + 2, r.out.size()) << r.out;
  const size_t summary = r.out.rfind("\nSummary (BW from Copy, ", at);
  ASSERT_NE(summary, std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\n', summary + 1), at) << r.out;
}

// Through the cuda double, the gather kernel among them: JSON's summary names the
// best and how many times the next it moves, from the results' own figures; CSV
// has each case's contiguous row.
TEST(CopyCompareContiguous, TheCudaDoubleRanksTheGatherMethods) {
  const std::vector<std::string> cases = {"host_to_device_ce", "host_to_device_batch_ce",
                                          "host_to_device_ce_multi_stream", "host_to_device_sm_gather"};
  JsonRun r = run_json(done_when("cuda", cases), cuda_env());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  double best = 0, second = 0;
  std::string best_name;
  for (const std::string& c : cases) {
    const json x = r.result(c);
    EXPECT_GT(x["paged"]["percent_of_contiguous"].get<double>(), 0) << c;
    EXPECT_EQ(x["paged"]["chunks_per_iteration"], 244) << c;
    const double bw = x["bandwidth_gib_s"].get<double>();
    if (bw > best) {
      second = best;
      best = bw;
      best_name = c;
    } else if (bw > second) {
      second = bw;
    }
  }
  EXPECT_DOUBLE_EQ(r.result("host_to_device_sm_gather")["gather"]["mean_chunk_bytes"].get<double>(), 82176.0);
  ASSERT_TRUE(r.doc.contains("summary")) << r.out;
  ASSERT_EQ(r.doc["summary"].size(), 1u) << r.doc["summary"].dump();
  const json& f = r.doc["summary"][0]["fastest"];
  EXPECT_EQ(f["name"], best_name);
  EXPECT_DOUBLE_EQ(f["bandwidth_gib_s"].get<double>(), best);
  EXPECT_DOUBLE_EQ(f["next_bandwidth_gib_s"].get<double>(), second);
  EXPECT_DOUBLE_EQ(f["times_next"].get<double>(), best / second);
  EXPECT_TRUE(f["note"].is_null()) << f.dump();
  std::vector<std::string> csv = done_when("cuda", {"host_to_device_ce", "host_to_device_sm_gather"});
  csv.insert(csv.end(), {"--format", "csv"});
  const RunResult c = run_tool(csv, cuda_env());
  ASSERT_EQ(c.exit_code, 0) << c.err;
  std::vector<std::string> names;
  std::istringstream in(c.out);
  std::string row;
  std::getline(in, row);
  while (std::getline(in, row)) names.push_back(row.substr(0, row.find(',')));
  EXPECT_EQ(names, (std::vector<std::string>{"host_to_device_ce", "host_to_device_ce:contiguous",
                                             "host_to_device_sm_gather", "host_to_device_sm_gather:contiguous"}))
      << c.out;
}

// The issue's command with copy and no case named: the gather methods this backend
// offers for the layout, on one card unless -d says more, each with its Paged line
// against the contiguous figure, ranked, the fastest named; those the backend lacks
// left out in the one note that lists what ran. With -d 2 their cases that run on
// every card at once, ranked as two cards at once.
TEST(CopyCompareContiguous, WithoutACaseTheGatherMethodsAreCompared) {
  std::vector<std::string> args = done_when("cuda", {});
  args.erase(std::find(args.begin(), args.end(), "--compare-contiguous"));
  {
    const RunResult r = run_tool(args, cuda_env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> ran;
    for (const std::string& l : lines_starting(r.out, "[[ ")) ran.push_back(l.substr(3, l.find(" ]]") - 3));
    EXPECT_EQ(ran, (std::vector<std::string>{"workload", "host_to_device_ce", "host_to_device_ce_multi_stream",
                                             "host_to_device_batch_ce", "host_to_device_sm_gather",
                                             "all_host_to_all_device_ffts_direct_h2d"}))
        << r.out;
    EXPECT_EQ(lines_starting(r.out, "  Paged: 244 chunks of 82176 B, ").size(), 5u) << r.out;
    for (const std::string& l : lines_starting(r.out, "  Paged: "))
      EXPECT_NE(l.find("% of contiguous"), std::string::npos) << l;
    EXPECT_EQ(lines_starting(r.out, "Summary (BW from Copy, ").size(), 1u) << r.out;
    EXPECT_EQ(lines_starting(r.out, "  Fastest for this layout: ").size(), 1u) << r.out;
    EXPECT_NE(r.err.find("dev-sandbox: note: copy --model with a block table and no -t: the gather methods for this "
                         "layout on one card, each against the same blocks contiguous: host_to_device_ce, "
                         "host_to_device_ce_multi_stream, host_to_device_batch_ce, host_to_device_sm_gather, "
                         "all_host_to_all_device_ffts_direct_h2d; -d N compares them on N cards at once\n"),
              std::string::npos)
        << r.err;
  }
  {
    const RunResult r = run_tool(done_when("sim", {}));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_starting(r.out, "  Paged: ").size(), 4u) << r.out;
    EXPECT_NE(r.err.find("all_host_to_all_device_ffts_direct_h2d (left out: host_to_device_sm_gather: "), std::string::npos)
        << r.err;
    // The dry run says the same first, and its equivalent command runs here: no case
    // the backend lacks.
    std::vector<std::string> dry = done_when("sim", {});
    dry.push_back("--dry-run");
    const RunResult d = run_tool(dry);
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(d.out.rfind("copy --model with a block table and no -t: the gather methods for this layout on one card", 0),
              0u)
        << d.out;
    const auto equivalent = lines_starting(d.out, "equivalent: ");
    ASSERT_EQ(equivalent.size(), 1u) << d.out;
    EXPECT_NE(equivalent[0].find(" -t host_to_device_batch_ce "), std::string::npos) << equivalent[0];
    EXPECT_EQ(equivalent[0].find("sm_gather"), std::string::npos) << equivalent[0];
  }
  {
    std::vector<std::string> two = args;
    two.insert(two.end(), {"-d", "2"});
    const RunResult r = run_tool(two, cuda_env());
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(lines_starting(r.out, "  Paged: 488 chunks of 82176 B, ").size(), 5u) << r.out;
    const auto summary = lines_starting(r.out, "Summary (BW from Copy, ");
    ASSERT_EQ(summary.size(), 1u) << r.out;
    EXPECT_NE(summary[0].find(", host memory -> device, 2 cards at once): 1. all_host_to_all_device_"),
              std::string::npos)
        << summary[0];
    EXPECT_NE(r.err.find("on 2 cards at once, each against the same blocks contiguous: all_host_to_all_device_ce, "
                         "all_host_to_all_device_ce_multi_stream, all_host_to_all_device_batch_ce, "
                         "all_host_to_all_device_sm_gather, all_host_to_all_device_ffts_direct_h2d\n"),
              std::string::npos)
        << r.err;
  }
}

// The contiguous figure is the contiguous pass's, the result's the paged pass's:
// through the cuda double with every copy that does not begin where its stream's
// last one ended paying 1 ms more (DS_CUDA_DOUBLE_JUMP_NS), 8 blocks at random slots
// jump at nearly every copy and at slots 0..7 once, so the paged pass is known to be
// the slower: a figure from the wrong pass reads 100% or more. The duplex case's
// each direction too (one stream each, so that its blocks are in order on it).
TEST(CopyCompareContiguous, TheContiguousFigureIsTheContiguousPasss) {
  std::map<std::string, std::string> env = cuda_env();
  env["DS_CUDA_DOUBLE_JUMP_NS"] = "1000000";
  const std::vector<std::string> base = {"copy", "--backend", "cuda", "-s", "64K", "-n", "8", "-i", "2",
                                         "--warmup", "1", "-S", "1", "--block-table", "random:3",
                                         "--compare-contiguous", "-d", "2"};
  const auto slower = [](const json& p, const std::string& what) {
    EXPECT_GT(p["percent_of_contiguous"].get<double>(), 0) << what << p.dump();
    EXPECT_LT(p["percent_of_contiguous"].get<double>(), 70) << what << p.dump();
    EXPECT_GT(p["contiguous"]["bandwidth_gib_s"].get<double>(), p["bandwidth_gib_s"].get<double>()) << what;
  };
  for (const char* c : {"host_to_device_ce", "host_to_device_batch_ce", "device_to_host_ce"}) {
    std::vector<std::string> args = base;
    args.insert(args.end(), {"-t", c});
    JsonRun r = run_json(args, env);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    slower(r.result(c)["paged"], c);
  }
  const std::string duplex = "all_host_to_all_device_duplex_ce_multi_stream";
  std::vector<std::string> args = base;
  args.insert(args.end(), {"-t", duplex});
  JsonRun r = run_json(args, env);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result(duplex);
  const json& p = x["paged"];
  slower(p, "both directions");
  slower(p["h2d"], "H2D");
  slower(p["d2h"], "D2H");
}

// Both passes of a case on the same streams: the cuda double's trace of what each
// stream did has every copy on the paged pass's one stream (CE), on its S streams
// (multi-stream), and a duplex card's on its own direction's.
TEST(CopyCompareContiguous, BothPassesRunOnTheSameStreams) {
  const auto streams = [](const std::vector<std::string>& extra) {
    dstest::TempFile trace("ds-copy-trace");
    std::map<std::string, std::string> env = cuda_env();
    env["DS_CUDA_DOUBLE_TRACE"] = trace.path();
    std::vector<std::string> args = {"copy", "--backend", "cuda", "-s", "16K", "-n", "8", "-i", "2", "--warmup",
                                     "1", "--block-table", "random:3", "--compare-contiguous"};
    args.insert(args.end(), extra.begin(), extra.end());
    const RunResult r = run_tool(args, env);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> seen;
    size_t copies = 0;
    std::istringstream in(trace.text());
    std::string pid, device, stream, what, ns;
    while (in >> pid >> device >> stream >> what >> ns)
      if (what == "copy-enqueued") {
        seen.insert(pid + " " + device + " " + stream);
        ++copies;
      }
    return std::make_pair(seen.size(), copies);
  };
  // 3 iterations (1 warm-up + 2), each both passes of 8 copies.
  EXPECT_EQ(streams({"-t", "host_to_device_ce", "-d", "1"}), std::make_pair(size_t{1}, size_t{48}));
  EXPECT_EQ(streams({"-t", "host_to_device_ce_multi_stream", "-d", "1", "-S", "2"}),
            std::make_pair(size_t{2}, size_t{48}));
  // 2 cards, each H2D and D2H on 2 streams: 8 streams; 3 rounds of 4 passes, each
  // direction in 3 of them (together, alone, contiguous), 8 copies each.
  EXPECT_EQ(streams({"-t", "all_host_to_all_device_duplex_ce_multi_stream", "-d", "2", "-S", "2"}),
            std::make_pair(size_t{8}, size_t{3 * 2 * 2 * 3 * 8}));
}

// The duplex case's Paged lines: both directions', then each direction's, in the
// text; JSON paged.h2d / paged.d2h; CSV a contiguous row each; --validate each
// checks the paged passes at their slots.
TEST(CopyCompareContiguous, TheDuplexCaseSaysEachDirection) {
  const std::string duplex = "all_host_to_all_device_duplex_ce_multi_stream";
  const std::vector<std::string> base = {"copy", "-t", duplex, "-s", "4K", "-n", "6", "-d", "2", "-i", "3",
                                         "--block-table", "random:5", "--host-block-table", "random:2",
                                         "--compare-contiguous", "--validate", "each"};
  const RunResult t = run_tool(base);
  ASSERT_EQ(t.exit_code, 0) << t.err;
  const std::vector<std::string> lines = lines_starting(t.out, "  Paged");
  ASSERT_EQ(lines.size(), 3u) << t.out;
  EXPECT_TRUE(std::regex_match(lines[0], std::regex(R"(  Paged: 24 chunks of 4096 B, [0-9.]+ GiB/s = [0-9.]+% of contiguous)")))
      << lines[0];
  EXPECT_TRUE(std::regex_match(lines[1], std::regex(R"(  Paged H2D: 12 chunks of 4096 B, [0-9.]+ GiB/s = [0-9.]+% of contiguous)")))
      << lines[1];
  EXPECT_TRUE(std::regex_match(lines[2], std::regex(R"(  Paged D2H: 12 chunks of 4096 B, [0-9.]+ GiB/s = [0-9.]+% of contiguous)")))
      << lines[2];
  EXPECT_TRUE(contains(t.out, "  Duplex: H2D alone ")) << t.out;
  EXPECT_TRUE(contains(t.out, "PASS")) << t.out;
  std::vector<std::string> json_args = base;
  JsonRun r = run_json(json_args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json x = r.result(duplex);
  const json& p = x["paged"];
  EXPECT_NEAR(p["bandwidth_gib_s"].get<double>(), x["bandwidth_gib_s"].get<double>(), 1e-9);
  EXPECT_NEAR(p["h2d"]["bandwidth_gib_s"].get<double>(), x["duplex"]["h2d"]["gib_s"].get<double>(), 1e-9) << x.dump();
  EXPECT_NEAR(p["d2h"]["bandwidth_gib_s"].get<double>(), x["duplex"]["d2h"]["gib_s"].get<double>(), 1e-9) << x.dump();
  for (const char* d : {"h2d", "d2h"}) {
    EXPECT_EQ(p[d]["chunks_per_iteration"], 12) << d;
    const double c = p[d]["contiguous"]["bandwidth_gib_s"].get<double>();
    ASSERT_GT(c, 0) << d;
    EXPECT_NEAR(p[d]["percent_of_contiguous"].get<double>(), 100.0 * p[d]["bandwidth_gib_s"].get<double>() / c, 1e-9);
  }
  std::vector<std::string> csv = base;
  csv.insert(csv.end(), {"--format", "csv"});
  const RunResult c = run_tool(csv);
  ASSERT_EQ(c.exit_code, 0) << c.err;
  for (const char* row : {":contiguous,", ":h2d_contiguous,", ":d2h_contiguous,"})
    EXPECT_TRUE(contains(c.out, "\n" + duplex + row)) << row << "\n" << c.out;
}

// Without --compare-contiguous: the Paged line names the table and pool (the host
// side's option when only it is paged); no table, or one case: no fastest line.
TEST(CopyCompareContiguous, WithoutTheFlagThePagedLineNamesTheTable) {
  const RunResult d = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t", "host_to_device_batch_ce",
                                "-s", "5000", "-f", "3", "-n", "10", "-d", "1", "-i", "2", "--block-table", "random:7"});
  ASSERT_EQ(d.exit_code, 0) << d.err;
  const auto paged = lines_starting(d.out, "  Paged: ");
  ASSERT_EQ(paged.size(), 2u) << d.out;
  EXPECT_TRUE(std::regex_match(paged[0], std::regex(R"(  Paged: 30 chunks of 5000 B, [0-9.]+ GiB/s \(--block-table random:7, a 40-block pool\))")))
      << paged[0];
  EXPECT_EQ(lines_starting(d.out, "  Fastest for this layout: ").size(), 1u) << d.out;
  const RunResult h = run_tool({"copy", "--backend", "sim", "-t", "device_to_host_ce", "-s", "4K", "-n", "3", "-d",
                                "1", "-i", "2", "--host-block-table", "random:2", "--host-pool-blocks", "5"});
  ASSERT_EQ(h.exit_code, 0) << h.err;
  const auto host = lines_starting(h.out, "  Paged: ");
  ASSERT_EQ(host.size(), 1u) << h.out;
  EXPECT_TRUE(std::regex_match(host[0], std::regex(R"(  Paged: 3 chunks of 4096 B, [0-9.]+ GiB/s \(--host-block-table random:2, a 5-block pool\))")))
      << host[0];
  EXPECT_TRUE(lines_starting(h.out, "  Fastest for this layout: ").empty()) << h.out;
  const RunResult plain = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "-t",
                                    "host_to_device_batch_ce", "-s", "4K", "-n", "3", "-d", "1", "-i", "2"});
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_TRUE(contains(plain.out, "\nSummary (")) << plain.out;
  EXPECT_FALSE(contains(plain.out, "Paged:") || contains(plain.out, "Fastest")) << plain.out;
}

TEST(CopyCompareContiguous, WhatDoesNotCombineIsOneLineExit2) {
  const struct {
    std::vector<std::string> args;
    std::string line;
  } cases[] = {
      {{"-t", "host_to_device_ce", "--compare-contiguous"},
       "option --compare-contiguous measures a --block-table's blocks against contiguous ones; give --block-table or "
       "--host-block-table too"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = {"copy", "--backend", "sim", "-s", "4K", "-n", "2", "-d", "1"};
    args.insert(args.end(), c.args.begin(), c.args.end());
    const RunResult r = run_tool(args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.err, "dev-sandbox: error: " + c.line + "\n");
  }
}

// The dry run says the contiguous pass and gives it to the equivalent command.
TEST(CopyCompareContiguous, TheDryRunSaysTheContiguousPass) {
  const RunResult r = run_tool({"copy", "--backend", "sim", "-t", "host_to_device_ce", "--model", "Qwen3-32B", "--tp",
                                "8", "--input-len", "512", "--kv-layout", "vllm-flash", "--block-table", "random",
                                "--compare-contiguous", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, " --block-table random:1 --pool-blocks 16 --compare-contiguous\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "\n--compare-contiguous: every iteration also copies the same blocks at slots 0, 1, ... "
                              "of the same pool, timed apart, and each case's Paged line says its share of that\n"))
      << r.out;
}

// The plan line fills what setup fills: a pool of 1000 slots for 4 blocks is
// allocated whole, but filling counts the request's blocks, as without a table.
TEST(CopyCompareContiguous, ThePlanLineFillsTheRequestNotThePool) {
  const std::vector<std::string> base = {"copy", "--backend", "sim", "-t", "host_to_device_ce", "-s", "1M", "-n", "4",
                                         "-d", "1", "-i", "1"};
  std::vector<std::string> paged = base;
  paged.insert(paged.end(), {"--block-table", "random", "--pool-blocks", "1000"});
  const std::string plain = filling(base);
  EXPECT_EQ(plain, "9.00 MiB");  // source and destination, 4 MiB each, one block of staging, the plan
  EXPECT_EQ(filling(paged), plain);
  // load's card region is the pool too (sim: in host memory): filled, its request's blocks.
  if (disk::disk_base().empty()) return;
  const std::string ws = disk::disk_base() + "/" + disk::unique_name("fill");
  const std::vector<std::string> load = {"load", "--backend", "sim", "--create-workspace", "--workspace", ws,
                                         "-s", "1M", "-n", "4", "-d", "1", "-i", "1"};
  std::vector<std::string> load_paged = load;
  load_paged.insert(load_paged.end(), {"--block-table", "random", "--pool-blocks", "1000"});
  EXPECT_EQ(filling(load_paged), filling(load));
}
