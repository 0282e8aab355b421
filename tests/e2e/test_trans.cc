// trans end to end on sim: the matrix, its filters, its bad inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "cli_harness.h"
#include "json_checks.h"

using namespace dstest;

namespace {

std::vector<std::string> base(std::vector<std::string> extra) {
  std::vector<std::string> v = {"trans", "--backend", "sim", "-s", "4096", "-n", "16", "-i", "4", "-d", "2"};
  v.insert(v.end(), extra.begin(), extra.end());
  return v;
}

// Titles of the result blocks, in order.
std::vector<std::string> titles(const std::string& out) {
  std::vector<std::string> v;
  for (const auto& line : lines_starting(out, "[[ ")) v.push_back(line.substr(3, line.find(" ]]") - 3));
  return v;
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::set<std::string> product(std::vector<std::string> dirs, std::vector<std::string> hosts,
                              std::vector<std::string> methods) {
  std::set<std::string> s;
  for (const auto& d : dirs)
    for (const auto& h : hosts)
      for (const auto& m : methods) s.insert(d + "_" + h + "_normal_" + m);
  return s;
}

const std::vector<std::string> kDirs = {"h2d", "d2h"};
const std::vector<std::string> kHosts = {"normal", "anonymous", "registered", "pinned"};
const std::vector<std::string> kMethods = {"ce", "batch_ce", "ms_4", "memcpy"};

}  // namespace

TEST(Trans, FullDefaultMatrixValidates) {
  JsonRun r = run_json(base({"--validate"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto names = r.names();
  EXPECT_EQ(names.size(), 32u);
  EXPECT_EQ(as_set(names), product(kDirs, kHosts, kMethods));
  // Count = d x n, and each result names its buffers.
  bool registered_ce = false, pageable_ms = false;
  for (const json& res : r.doc["results"]) {
    EXPECT_EQ(res["validated"], true) << res["name"];
    EXPECT_EQ(res["block_bytes"], 4096) << res["name"];
    EXPECT_EQ(res["count"], 32) << res["name"];
    const std::string method = res["method"];
    EXPECT_NE(method.find("-FORK"), std::string::npos) << res["name"];
    registered_ce |= res["from"] == "sim::registered::all" && res["to"] == "sim::device::all" && method == "CE-FORK";
    pageable_ms |= res["from"] == "sim::device::all" && res["to"] == "sim::pageable::all" && method == "CE-MS-FORK";
  }
  EXPECT_TRUE(registered_ce) << "sim::registered::all -> sim::device::all, CE-FORK";
  EXPECT_TRUE(pageable_ms) << "sim::device::all -> sim::pageable::all, CE-MS-FORK";
}

TEST(Trans, EachFilterAloneAndCombined) {
  struct F {
    std::vector<std::string> args;
    std::set<std::string> expect;
  } cases[] = {
      {{"-t", "H2D"}, product({"h2d"}, kHosts, kMethods)},
      {{"-t", "D2H"}, product({"d2h"}, kHosts, kMethods)},
      {{"-H", "pinned"}, product(kDirs, {"pinned"}, kMethods)},
      {{"-H", "registered", "-H", "anonymous"}, product(kDirs, {"registered", "anonymous"}, kMethods)},
      {{"-D", "normal"}, product(kDirs, kHosts, kMethods)},
      {{"-M", "ce"}, product(kDirs, kHosts, {"ce"})},
      {{"-M", "ms_3", "-M", "batch_ce"}, product(kDirs, kHosts, {"ms_3", "batch_ce"})},
      {{"-t", "D2H", "-H", "normal", "-M", "ms_2"}, product({"d2h"}, {"normal"}, {"ms_2"})},
      {{"-t", "H2D", "-H", "pinned", "-D", "normal", "-M", "memcpy", "-M", "ce"},
       product({"h2d"}, {"pinned"}, {"memcpy", "ce"})},
  };
  for (const F& f : cases) {
    RunResult r = run_tool(base(f.args));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(as_set(titles(r.out)), f.expect) << f.args[0] << " " << f.args[1];
    EXPECT_EQ(titles(r.out).size(), f.expect.size());
  }
}

TEST(Trans, MultiStreamMethodUsesItsStreamCount) {
  RunResult r = run_tool(base({"-t", "H2D", "-H", "pinned", "-M", "ms_8", "--validate"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(titles(r.out), std::vector<std::string>{"h2d_pinned_normal_ms_8"});
  EXPECT_NE(r.out.find("PASS"), std::string::npos);
}

TEST(Trans, BadInput) {
  struct B {
    std::vector<std::string> args;
    int code;
    const char* mentions;
  } cases[] = {
      {{"-t", "X2Y"}, 2, "X2Y"},
      {{"-H", "huge"}, 2, "huge"},
      {{"-D", "hbm"}, 2, "hbm"},
      {{"-M", "dma"}, 2, "dma"},
      {{"-M", "ms_0"}, 2, "ms_0"},
      {{"-M", "ms_x"}, 2, "ms_x"},
      {{"-M", "ms_"}, 2, "ms_"},
      {{"-s", "0"}, 2, "-s"},
      {{"-n", "0"}, 2, "-n"},
      {{"--bogus"}, 2, "--bogus"},
      // sm is a cuda method: on sim the filters match nothing, said in one line that
      // points at the list.
      {{"-M", "sm"}, 2, "method sm is not one the sim backend offers; `dev-sandbox trans --list` shows the"},
  };
  for (const B& b : cases) {
    RunResult r = run_tool(base(b.args));
    EXPECT_EQ(r.exit_code, b.code) << b.args[0] << " " << r.err;
    EXPECT_NE(r.err.find(b.mentions), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
  for (const B& b : cases) {  // every refusal is one line
    const std::string err = run_tool(base(b.args)).err;
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
  }
  RunResult listed = run_tool({"trans", "--backend", "sim", "--list"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("\n  h2d_pinned_normal_ce\n"), std::string::npos) << listed.out;
  EXPECT_EQ(listed.out.find("_sm\n"), std::string::npos) << "no cuda method on sim: " << listed.out;
  RunResult d = run_tool({"trans", "--backend", "sim", "-s", "4096", "-n", "4", "-i", "1", "-d", "99"});
  EXPECT_EQ(d.exit_code, 2);
  EXPECT_NE(d.err.find("-d got 99"), std::string::npos) << d.err;
  // Accepted values are named.
  RunResult r = run_tool(base({"-H", "huge"}));
  EXPECT_NE(r.err.find("normal|anonymous|registered|pinned"), std::string::npos) << r.err;
}

TEST(Trans, HelpWithDashH) {
  RunResult r = run_tool({"trans", "-h"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("-M"), std::string::npos);
}
