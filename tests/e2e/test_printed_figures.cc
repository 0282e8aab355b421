// The figures a user reads are the figures JSON holds and the formula gives, for
// every measurement (the golden files mask every figure, so they cannot see a row
// that prints the wrong stage or a bandwidth from the wrong bytes). One run each
// with --format text,json: the text blocks, then the JSON document of the same
// results; every printed statistic is the JSON one rounded as the table rounds it,
// every printed bandwidth the JSON one, and the JSON one is bytes per iteration
// over the stage's average, 2^30 bytes per second.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_harness.h"
#include "disk_fixtures.h"

namespace {

using dstest::run_tool;
using dstest::RunResult;
using dstest::disk::disk_base;
using dstest::disk::unique_name;
using nlohmann::json;

// One [[ name ]] block of the text output.
struct Block {
  std::string name;
  std::vector<std::string> lines;  // the lines after the title
};

struct Printed {
  std::vector<Block> blocks;
  json doc;
};

// Splits --format text,json output: text blocks up to the line "{" that opens the
// JSON document.
Printed split(const std::string& out) {
  Printed p;
  std::istringstream in(out);
  std::string line, json_text;
  bool in_json = false;
  while (std::getline(in, line)) {
    if (!in_json && line == "{") in_json = true;
    if (in_json) {
      json_text += line + "\n";
    } else if (line.rfind("[[ ", 0) == 0) {
      const size_t end = line.find(" ]]");
      p.blocks.push_back({line.substr(3, end - 3), {}});
    } else if (!p.blocks.empty()) {
      p.blocks.back().lines.push_back(line);
    }
  }
  p.doc = json::parse(json_text, nullptr, false);
  return p;
}

// The numbers of a line, in order ("1 / 2 / 3" and "BW(GB/s)=4.5" included).
std::vector<double> numbers(const std::string& line) {
  std::vector<double> v;
  const char* s = line.c_str();
  while (*s) {
    const bool starts = (*s >= '0' && *s <= '9') && (s == line.c_str() || s[-1] == ' ' || s[-1] == '=');
    if (!starts) {
      ++s;
      continue;
    }
    char* end = nullptr;
    v.push_back(std::strtod(s, &end));
    s = end;
  }
  return v;
}

std::string fixed(double v, int decimals) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

const json& result_named(const json& doc, const std::string& name) {
  static const json none = json::object();
  for (const json& r : doc.at("results"))
    if (r.value("name", "") == name) return r;
  ADD_FAILURE() << "no JSON result " << name;
  return none;
}

// Five printed statistics (Min/Max/Avg/P50/P90, whole microseconds) against JSON's.
void expect_stats(const std::vector<double>& printed, size_t at, const json& us, const std::string& what) {
  const char* keys[] = {"min", "max", "avg", "p50", "p90"};
  ASSERT_GE(printed.size(), at + 5) << what;
  for (size_t i = 0; i < 5; ++i)
    EXPECT_EQ(printed[at + i], static_cast<double>(std::llround(us.at(keys[i]).get<double>())))
        << what << " " << keys[i];
}

// bytes / avg (us), GiB/s, as JSON says it, and as the formula gives it.
void expect_formula(double gib_s, double bytes, const json& us, const std::string& what) {
  const double avg_s = us.at("avg").get<double>() * 1e-6;
  ASSERT_GT(avg_s, 0) << what;
  EXPECT_NEAR(gib_s, bytes / avg_s / 1073741824.0, 1e-9 * gib_s + 1e-12) << what;
}

// Every block's row and Wall line against its JSON result: Count, Submit, the
// measured stage, BW, StartSkew, GroupWall, WallBW; and the bandwidths' formula.
void expect_block_matches(const Block& b, const json& r) {
  ASSERT_GE(b.lines.size(), 3u) << b.name;
  const std::vector<double> row = numbers(b.lines[1]);  // Size, Count, Submit x5, measured x5, BW
  ASSERT_EQ(row.size(), 13u) << b.lines[1];
  EXPECT_EQ(row[0], r.at("block_bytes").get<double>() / 1024) << b.name << " Size(KB)";
  EXPECT_EQ(row[1], r.at("count").get<double>()) << b.name << " Count";
  expect_stats(row, 2, r.at("submit_us"), b.name + " Submit");
  expect_stats(row, 7, r.at("copy_us"), b.name + " " + r.at("time_label").get<std::string>());
  EXPECT_EQ(fixed(row[12], 3), fixed(r.at("bandwidth_gib_s").get<double>(), 3)) << b.name << " BW";
  const double bytes = r.at("block_bytes").get<double>() * r.at("count").get<double>();
  expect_formula(r.at("bandwidth_gib_s"), bytes, r.at("copy_us"), b.name + " BW");
  EXPECT_NEAR(r.at("bandwidth_gb_s").get<double>(), r.at("bandwidth_gib_s").get<double>() * 1.073741824, 1e-9)
      << b.name;

  const std::vector<double> wall = numbers(b.lines[2]);  // StartSkew x5, GroupWall x5, WallBW
  ASSERT_EQ(wall.size(), 11u) << b.lines[2];
  expect_stats(wall, 0, r.at("start_skew_us"), b.name + " StartSkew");
  expect_stats(wall, 5, r.at("wall_us"), b.name + " GroupWall");
  EXPECT_EQ(fixed(wall[10], 3), fixed(r.at("wall_bandwidth_gib_s").get<double>(), 3)) << b.name << " WallBW";
  expect_formula(r.at("wall_bandwidth_gib_s"), bytes, r.at("wall_us"), b.name + " WallBW");
}

// The line of a block that starts with `prefix` ("  Stages:"), or "".
std::string line_of(const Block& b, const std::string& prefix) {
  for (const std::string& l : b.lines)
    if (l.rfind(prefix, 0) == 0) return l;
  return "";
}

Printed run_both(std::vector<std::string> args) {
  args.insert(args.end(), {"--format", "text,json"});
  const RunResult r = run_tool(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  Printed p = split(r.out);
  EXPECT_TRUE(p.doc.is_object()) << r.out;
  return p;
}

TEST(PrintedFigures, CopyRowsAreTheJsonFiguresAndTheFormula) {
  const Printed p = run_both({"--backend", "sim", "copy", "-t", "all_host_to_all_device_ce_multi_stream", "-t",
                              "host_to_device_ce", "-s", "64K", "-n", "16", "-d", "2", "-i", "6"});
  ASSERT_TRUE(p.doc.is_object());
  ASSERT_EQ(p.blocks.size(), 2u);
  for (const Block& b : p.blocks) expect_block_matches(b, result_named(p.doc, b.name));
}

TEST(PrintedFigures, AioRowsAndWorkersLineAreTheJsonFiguresAndTheFormula) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("ws");
  const Printed p = run_both({"--backend", "sim", "aio", "--create-workspace", "--workspace", ws, "--engine", "psync", "--io-size", "16K",
                              "--io-number", "16", "--iodepth", "4", "--epoch-number", "3", "--workers", "2"});
  ASSERT_TRUE(p.doc.is_object());
  ASSERT_EQ(p.blocks.size(), 2u);  // aio_dump, aio_load
  for (const Block& b : p.blocks) {
    const json& r = result_named(p.doc, b.name);
    expect_block_matches(b, r);
    // Workers: min / max of each worker's own GiB/s, which is its share of the bytes
    // (half, with two) over its own time, so never above the result's over the slowest.
    const std::vector<double> w = numbers(line_of(b, "  Workers:"));
    const std::vector<double> each = r.at("worker_bandwidth_gib_s").get<std::vector<double>>();
    ASSERT_EQ(w.size(), 2u) << b.name;
    ASSERT_EQ(each.size(), 2u) << b.name;
    EXPECT_EQ(fixed(w[0], 3), fixed(std::min(each[0], each[1]), 3)) << b.name;
    EXPECT_EQ(fixed(w[1], 3), fixed(std::max(each[0], each[1]), 3)) << b.name;
    for (double g : each) EXPECT_GE(g, r.at("bandwidth_gib_s").get<double>() / 2 * (1 - 1e-9)) << b.name;
  }
}

TEST(PrintedFigures, LoadRowAndStagesLineAreTheJsonFiguresAndTheFormula) {
  if (disk_base().empty()) GTEST_SKIP() << "no disk filesystem with O_DIRECT here";
  const std::string ws = disk_base() + "/" + unique_name("ws");
  const Printed p = run_both({"--backend", "sim", "load", "--create-workspace", "--workspace", ws, "-s", "64K", "-n", "12", "-d", "2",
                              "-i", "3", "--iodepth", "3"});
  ASSERT_TRUE(p.doc.is_object());
  ASSERT_EQ(p.blocks.size(), 1u);
  const Block& b = p.blocks[0];
  const json& r = result_named(p.doc, "load");
  expect_block_matches(b, r);
  const json& st = r.at("load_stages");
  const std::vector<double> s = numbers(line_of(b, "  Stages:"));  // disk, copy, pipelined, percent
  ASSERT_EQ(s.size(), 4u) << line_of(b, "  Stages:");
  EXPECT_EQ(fixed(s[0], 3), fixed(st.at("disk_alone_gib_s").get<double>(), 3));
  EXPECT_EQ(fixed(s[1], 3), fixed(st.at("copy_alone_gib_s").get<double>(), 3));
  EXPECT_EQ(fixed(s[2], 3), fixed(st.at("pipelined_gib_s").get<double>(), 3));
  EXPECT_EQ(fixed(s[3], 1), fixed(st.at("percent_of_slower").get<double>(), 1));
  const double bytes = r.at("block_bytes").get<double>() * r.at("count").get<double>();
  expect_formula(st.at("disk_alone_gib_s"), bytes, st.at("disk_alone_us"), "disk alone");
  expect_formula(st.at("copy_alone_gib_s"), bytes, st.at("copy_alone_us"), "copy alone");
  EXPECT_DOUBLE_EQ(st.at("pipelined_gib_s").get<double>(), r.at("bandwidth_gib_s").get<double>());
  const double slower = std::min(st.at("disk_alone_gib_s").get<double>(), st.at("copy_alone_gib_s").get<double>());
  EXPECT_NEAR(st.at("percent_of_slower").get<double>(), 100 * st.at("pipelined_gib_s").get<double>() / slower, 1e-9);
}

// The duplex block: the aggregate row (both directions' bytes), a row per
// direction from the together pass and the Duplex line, each figure JSON's and the
// formula's: a and b each direction alone over its own Copy, c and d together, e the
// result's BW, p = e / (a + b).
TEST(PrintedFigures, DuplexRowsAndLineAreTheJsonFiguresAndTheFormula) {
  const char* name = "all_host_to_all_device_duplex_ce_multi_stream";
  const Printed p =
      run_both({"--backend", "sim", "copy", "-t", name, "-s", "64K", "-n", "16", "-d", "2", "-i", "6"});
  ASSERT_TRUE(p.doc.is_object());
  ASSERT_EQ(p.blocks.size(), 1u);
  const Block& b = p.blocks[0];
  const json& r = result_named(p.doc, name);
  expect_block_matches(b, r);
  const json& dx = r.at("duplex");
  const double h2d_bytes = dx.at("h2d").at("bytes").get<double>(), d2h_bytes = dx.at("d2h").at("bytes").get<double>();
  EXPECT_EQ(h2d_bytes, 2.0 * 64 * 1024 * 16);
  EXPECT_EQ(d2h_bytes, h2d_bytes);  // --duplex-ratio 1
  EXPECT_EQ(h2d_bytes + d2h_bytes, r.at("block_bytes").get<double>() * r.at("count").get<double>());
  for (const char* dir : {"H2D", "D2H"}) {
    SCOPED_TRACE(dir);
    const json& d = dx.at(std::string(dir) == "H2D" ? "h2d" : "d2h");
    const std::string line = line_of(b, std::string("  ") + dir + ": ");
    const std::vector<double> v = numbers(line);  // Size(KB), Count, Copy x5, BW
    ASSERT_EQ(v.size(), 8u) << line;
    // The direction's own block and count: their product its bytes.
    EXPECT_EQ(v[0] * 1024, d.at("block_bytes").get<double>());
    EXPECT_EQ(v[1], d.at("count").get<double>());
    EXPECT_EQ(d.at("block_bytes").get<double>() * d.at("count").get<double>(), d.at("bytes").get<double>());
    expect_stats(v, 2, d.at("copy_us"), dir);
    EXPECT_EQ(fixed(v[7], 3), fixed(d.at("gib_s").get<double>(), 3));
    expect_formula(d.at("gib_s"), d.at("bytes"), d.at("copy_us"), std::string(dir) + " together");
    expect_formula(d.at("alone_gib_s"), d.at("bytes"), d.at("alone_copy_us"), std::string(dir) + " alone");
    // Together, a direction's Copy is within the pass's (the longer direction's).
    EXPECT_LE(d.at("copy_us").at("max").get<double>(), r.at("copy_us").at("max").get<double>());
  }
  const std::string line = line_of(b, "  Duplex: ");
  char tail[64] = {0};
  double a, bb, c, d, e, pc, pq;
  ASSERT_EQ(std::sscanf(line.c_str(),
                        "  Duplex: H2D alone %lf GiB/s, D2H alone %lf, together H2D %lf + D2H %lf = %lf GiB/s "
                        "(%lf%% of alone H2D + D2H; %lf%% of perfect overlap%63s",
                        &a, &bb, &c, &d, &e, &pc, &pq, tail),
            8)
      << line;
  EXPECT_STREQ(tail, ")") << line;
  char again[512];
  std::snprintf(again, sizeof again,
                "  Duplex: H2D alone %.3f GiB/s, D2H alone %.3f, together H2D %.3f + D2H %.3f = %.3f GiB/s (%.1f%% of "
                "alone H2D + D2H; %.1f%% of perfect overlap)",
                dx.at("h2d").at("alone_gib_s").get<double>(), dx.at("d2h").at("alone_gib_s").get<double>(),
                dx.at("h2d").at("gib_s").get<double>(), dx.at("d2h").at("gib_s").get<double>(),
                dx.at("together_gib_s").get<double>(), dx.at("percent_of_alone").get<double>(),
                dx.at("percent_of_perfect_overlap").get<double>());
  EXPECT_EQ(line, again);
  EXPECT_DOUBLE_EQ(dx.at("together_gib_s").get<double>(), r.at("bandwidth_gib_s").get<double>());
  const double alone = dx.at("h2d").at("alone_gib_s").get<double>() + dx.at("d2h").at("alone_gib_s").get<double>();
  EXPECT_NEAR(dx.at("percent_of_alone").get<double>(), 100 * dx.at("together_gib_s").get<double>() / alone, 1e-9);
  // The perfect overlap: both directions' bytes over the longer alone Copy.
  const double longer_s = std::max(dx.at("h2d").at("alone_copy_us").at("avg").get<double>(),
                                   dx.at("d2h").at("alone_copy_us").at("avg").get<double>()) * 1e-6;
  const double perfect = (h2d_bytes + d2h_bytes) / longer_s / (1 << 30);
  EXPECT_NEAR(dx.at("perfect_overlap_gib_s").get<double>(), perfect, perfect * 1e-9);
  EXPECT_NEAR(dx.at("percent_of_perfect_overlap").get<double>(), 100 * dx.at("together_gib_s").get<double>() / perfect,
              1e-9);
  // The aggregate: both directions' bytes over the pass's Copy and over its GroupWall.
  expect_formula(dx.at("together_gib_s"), h2d_bytes + d2h_bytes, r.at("copy_us"), "together");
  expect_formula(r.at("wall_bandwidth_gib_s"), h2d_bytes + d2h_bytes, r.at("wall_us"), "together WallBW");
}

TEST(PrintedFigures, TwoFormatsAreTextThenJsonOnly) {
  for (const char* bad : {"json,text", "text,csv", "text,text,json", "text,", "xml,json"}) {
    const RunResult r = run_tool({"--backend", "sim", "copy", "-t", "host_to_device_ce", "--format", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("option --format got '" + std::string(bad) + "'"), std::string::npos) << r.err;
  }
}

}  // namespace
