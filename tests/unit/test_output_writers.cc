// JSON, CSV and SVG writers on results made here: the formats agree with each
// other and with the text table, and stay valid when a run fails.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "aio/aio_plot.h"
#include "core/error.h"
#include "output/atomic_file.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/svg_plot.h"
#include "output/text_writer.h"
#include "load/load_plot.h"
#include "staging/staged_stages.h"
#include "output_checks.h"

using namespace ds;
using nlohmann::json;

namespace {

Stats ns_stats(int64_t mn, int64_t mx, double avg, int64_t p50, int64_t p90) {
  Stats s;
  s.min = mn;
  s.max = mx;
  s.avg = avg;
  s.p50 = p50;
  s.p90 = p90;
  s.samples = 10;
  return s;
}

// The seed's GQA row, with nanosecond detail the text table rounds away.
CaseResult sample(const std::string& name = "all_host_to_all_device_ce_multi_stream",
                  uint64_t block = 16 * 1024) {
  CaseResult r;
  r.name = name;
  r.brief = "memcpy from all host to all device, with \"quotes\", commas";
  r.from = "acl::host::all";
  r.to = "acl::device::all";
  r.method = "CE-MS-FORK";
  r.block_bytes = block;
  r.count = 4096;
  r.devices = 8;
  r.streams = 4;
  r.frags = 0;
  r.iterations = 128;
  r.warmup = 2;
  r.bytes = block * r.count;
  r.stages = {{"Submit", ns_stats(878100, 2576400, 1117250.5, 1112000, 1269000)},
              {"Copy", ns_stats(3155000, 4101000, 3736000, 3759000, 3905000)},
              {"Wall", ns_stats(3300000, 4300000, 3900000, 3950000, 4100000)},
              {"StartSkew", ns_stats(0, 577000, 12500, 1000, 1000)}};
  r.stages[1].ns.p99 = 4090000;
  r.stages[1].ns.p999 = 4100000;
  r.submit_mode = "stream-major";
  r.setup_s = 0.25;
  return r;
}

RunInfo info() {
  RunInfo i;
  i.tool_version = "9.9.9";
  i.backend = "sim";
  i.runtime_version = "cpu memcpy simulation";
  i.devices = {"sim card 0", "sim card 1"};
  i.command_line = {"dev-sandbox", "copy", "-t", "x,y"};
  return i;
}

json run_json(const std::vector<CaseResult>& results, const std::string* fail_case = nullptr) {
  std::ostringstream out;
  JsonWriter w(out);
  w.begin(info());
  for (const auto& r : results) w.add(r);
  if (fail_case) w.fail(*fail_case, "validation failed: case x device 1 block 2");
  w.finish();
  return json::parse(out.str());
}

std::vector<std::vector<std::string>> run_csv(const std::vector<CaseResult>& results,
                                              const std::string* fail_case = nullptr) {
  std::ostringstream out;
  CsvWriter w(out);
  w.begin(info());
  for (const auto& r : results) w.add(r);
  if (fail_case) w.fail(*fail_case, "cuMemcpyHtoDAsync(dst, src, 16384): \"invalid\", value");
  w.finish();
  std::string error;
  auto rows = dstest::parse_csv(out.str(), &error);
  EXPECT_EQ(error, "") << out.str();
  return rows;
}

}  // namespace

TEST(OutputJson, DocumentCarriesRunInfoAndEveryField) {
  const json doc = run_json({sample()});
  EXPECT_EQ(doc["tool"]["version"], "9.9.9");
  EXPECT_EQ(doc["backend"]["name"], "sim");
  EXPECT_TRUE(doc["backend"]["library"].is_null());
  EXPECT_EQ(doc["backend"]["devices"].size(), 2u);
  EXPECT_EQ(doc["command_line"][3], "x,y");
  EXPECT_EQ(doc["status"], "ok");
  EXPECT_TRUE(doc["error"].is_null());
  ASSERT_EQ(doc["results"].size(), 1u);
  const json& r = doc["results"][0];
  for (const char* key : {"name", "brief", "from", "to", "method", "block_bytes", "count",
                          "devices", "streams", "frags", "iterations", "warmup", "time_label",
                          "submit_us", "copy_us", "wall_us", "bandwidth_gib_s", "bandwidth_gb_s",
                          "wall_bandwidth_gib_s", "validated", "setup_s", "notes", "start_skew_us",
                          "submit_mode", "stream_start_gate"})
    EXPECT_TRUE(r.contains(key)) << key;
  EXPECT_EQ(r["submit_mode"], "stream-major");
  EXPECT_EQ(r["stream_start_gate"], false);
  // The tails beside P50/P90 for every statistic; StartSkew from its own stage.
  EXPECT_DOUBLE_EQ(r["copy_us"]["p99"].get<double>(), 4090.0);
  EXPECT_DOUBLE_EQ(r["copy_us"]["p999"].get<double>(), 4100.0);
  EXPECT_DOUBLE_EQ(r["start_skew_us"]["max"].get<double>(), 577.0);
  EXPECT_DOUBLE_EQ(r["start_skew_us"]["avg"].get<double>(), 12.5);
  EXPECT_TRUE(r["notes"].is_array());
  EXPECT_TRUE(r["notes"].empty());
  EXPECT_EQ(r["block_bytes"], 16384);
  EXPECT_EQ(r["count"], 4096);
  EXPECT_EQ(r["time_label"], "Copy");
  EXPECT_TRUE(r["validated"].is_null());
  EXPECT_DOUBLE_EQ(r["setup_s"].get<double>(), 0.25);
  // Microseconds as numbers, not rounded like the table.
  EXPECT_DOUBLE_EQ(r["submit_us"]["min"].get<double>(), 878.1);
  EXPECT_DOUBLE_EQ(r["submit_us"]["avg"].get<double>(), 1117.2505);
  EXPECT_DOUBLE_EQ(r["copy_us"]["avg"].get<double>(), 3736.0);
  EXPECT_DOUBLE_EQ(r["wall_us"]["p90"].get<double>(), 4100.0);
}

TEST(OutputJson, BandwidthMatchesTheTableAndTheFormula) {
  const CaseResult s = sample();
  const json r = run_json({s})["results"][0];
  const double gib = r["bandwidth_gib_s"].get<double>();
  // docs/measurement.md: bytes / copy avg; the user guide's 16.729 GiB/s.
  const double expect = 16384.0 * 4096 / (r["copy_us"]["avg"].get<double>() * 1e-6) / (1 << 30);
  EXPECT_NEAR(gib, expect, expect * 1e-12);
  char cell[32];
  std::snprintf(cell, sizeof cell, "%.3f", gib);
  EXPECT_EQ(std::string(cell), "16.729");
  EXPECT_NE(format_text_block(s).find(" 16.729\n"), std::string::npos);
  EXPECT_NEAR(r["bandwidth_gb_s"].get<double>(), gib * (1 << 30) / 1e9, 1e-9);
  EXPECT_NEAR(r["wall_bandwidth_gib_s"].get<double>(), 16384.0 * 4096 / 3.9e-3 / (1 << 30), 1e-9);
  // The table's whole microseconds are the JSON values rounded.
  EXPECT_NE(format_text_block(s).find("878 / 2576 / 1117 / 1112 / 1269"), std::string::npos);
  EXPECT_EQ(std::llround(r["submit_us"]["max"].get<double>()), 2576);
}

TEST(OutputJson, ValidationAndFailureAreRecorded) {
  CaseResult ok = sample("host_to_device_ce");
  ok.validated = true;
  const std::string failing = "all_host_to_all_device_ce";
  const json doc = run_json({ok}, &failing);
  EXPECT_EQ(doc["status"], "failed");
  EXPECT_EQ(doc["error"]["case"], failing);
  EXPECT_NE(doc["error"]["message"].get<std::string>().find("validation failed"), std::string::npos);
  ASSERT_EQ(doc["results"].size(), 1u);  // what finished before the failure is kept
  EXPECT_EQ(doc["results"][0]["validated"], true);
}

TEST(OutputJson, FailureBeforeAnyBackendIsStillADocument) {
  std::ostringstream out;
  JsonWriter w(out);
  w.fail("", "no backend: cuda runtime not found");
  w.finish();
  const json doc = json::parse(out.str());
  EXPECT_TRUE(doc["backend"].is_null());
  EXPECT_TRUE(doc["error"]["case"].is_null());
  EXPECT_TRUE(doc["results"].empty());
}

TEST(OutputCsv, QuotesFieldsThatNeedIt) {
  EXPECT_EQ(csv_field("plain"), "plain");
  EXPECT_EQ(csv_field("a,b"), "\"a,b\"");
  EXPECT_EQ(csv_field("say \"hi\""), "\"say \"\"hi\"\"\"");
  EXPECT_EQ(csv_field("two\nlines"), "\"two\nlines\"");
  EXPECT_EQ(csv_field(""), "");
}

TEST(OutputCsv, EveryLineHasEveryColumnAndAgreesWithJson) {
  CaseResult a = sample("host_to_device_ce", 4096), b = sample("device_to_host_ce", 1 << 20);
  b.validated = false;
  b.layout = "128K,16K,32K";
  b.copies = 3 * b.count;
  const std::string failing = "one_host_to_all_device_ce";
  const auto rows = run_csv({a, b}, &failing);
  const json doc = run_json({a, b});
  const auto& cols = csv_columns();
  ASSERT_EQ(rows.size(), 4u);  // header, two cases, the failure
  for (const auto& row : rows) EXPECT_EQ(row.size(), cols.size());
  EXPECT_EQ(rows[0], cols);
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < cols.size(); ++i)
      if (cols[i] == name) return i;
    ADD_FAILURE() << "no column " << name;
    return size_t{0};
  };
  for (size_t k = 0; k < 2; ++k) {
    const auto& row = rows[k + 1];
    const json& r = doc["results"][k];
    EXPECT_EQ(row[col("name")], r["name"]);
    EXPECT_EQ(row[col("brief")], r["brief"]);  // quotes and commas survive
    EXPECT_EQ(std::stoull(row[col("block_bytes")]), r["block_bytes"].get<uint64_t>());
    EXPECT_EQ(std::stoull(row[col("count")]), r["count"].get<uint64_t>());
    for (const char* t : {"submit_us", "copy_us", "wall_us", "start_skew_us"})
      for (const char* s : {"min", "max", "avg", "p50", "p90", "p99", "p999"})
        EXPECT_NEAR(std::stod(row[col(std::string(t) + "_" + s)]), r[t][s].get<double>(), 5e-4)
            << t << "_" << s;
    for (const char* f : {"bandwidth_gib_s", "bandwidth_gb_s", "wall_bandwidth_gib_s", "setup_s"})
      EXPECT_NEAR(std::stod(row[col(f)]), r[f].get<double>(), 1e-6) << f;
    EXPECT_EQ(row[col("submit_mode")], r["submit_mode"]);
    EXPECT_EQ(row[col("layout")], r["layout"].is_null() ? "" : r["layout"].get<std::string>());
    EXPECT_EQ(std::stoull(row[col("copies_per_iteration")]), r["copies_per_iteration"].get<uint64_t>());
    EXPECT_EQ(row[col("stream_start_gate")], "false");
    EXPECT_EQ(row[col("error")], "");
  }
  EXPECT_EQ(rows[2][col("layout")], "128K,16K,32K");
  EXPECT_EQ(rows[2][col("copies_per_iteration")], "12288");
  EXPECT_EQ(rows[1][col("validated")], "");
  EXPECT_EQ(rows[2][col("validated")], "false");
  EXPECT_EQ(rows[3][col("name")], failing);
  EXPECT_EQ(rows[3][col("error")], "cuMemcpyHtoDAsync(dst, src, 16384): \"invalid\", value");
}

TEST(OutputCsv, NoResultsStillGivesTheHeader) {
  const auto rows = run_csv({});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0], csv_columns());
}

TEST(OutputSvg, WellFormedWithOneLinePerCaseAndLabelledAxes) {
  std::vector<CaseResult> results;
  for (uint64_t s = 4096; s <= (1u << 20); s *= 4)
    for (const char* name : {"host_to_device_ce", "all_host_to_all_device_ce_multi_stream"}) {
      CaseResult r = sample(name, s);
      r.brief = "a <brief> & more";
      r.devices = std::string(name).rfind("all_", 0) == 0 ? 2 : 1;
      results.push_back(r);
    }
  const std::string svg = bandwidth_plot_svg(results, "sim", PlotMetric::kCopy);
  std::vector<dstest::XmlElement> elems;
  ASSERT_EQ(dstest::parse_xml(svg, &elems), "") << svg;
  ASSERT_FALSE(elems.empty());
  EXPECT_EQ(elems[0].name, "svg");
  int polylines = 0;
  std::string texts;
  for (const auto& e : elems) {
    if (e.name == "polyline") {
      ++polylines;
      // One vertex per swept size.
      const std::string& pts = e.attrs.at("points");
      EXPECT_EQ(std::count(pts.begin(), pts.end(), ','), 5) << pts;
    }
    if (e.name == "text") texts += e.text + "\n";
  }
  EXPECT_EQ(polylines, 2);
  EXPECT_NE(texts.find("Bandwidth (GiB/s)"), std::string::npos);
  EXPECT_NE(texts.find("Block size"), std::string::npos);
  EXPECT_NE(texts.find("sim backend, 2 devices"), std::string::npos);
  for (const char* tick : {"4K\n", "16K\n", "64K\n", "256K\n", "1M\n"})
    EXPECT_NE(texts.find(tick), std::string::npos) << tick;
  EXPECT_NE(texts.find("host_to_device_ce (1 device)"), std::string::npos);
}

// --plot-metric: WallBW is a dashed line in its case's colour; both draws two per case.
TEST(OutputSvg, WallBandwidthIsADashedSecondLinePerCase) {
  std::vector<CaseResult> results;
  for (uint64_t s = 4096; s <= 16384; s *= 2) results.push_back(sample("host_to_device_ce", s));
  auto lines = [&](PlotMetric m) {
    std::vector<dstest::XmlElement> elems;
    EXPECT_EQ(dstest::parse_xml(bandwidth_plot_svg(results, "sim", m), &elems), "");
    std::vector<dstest::XmlElement> out;
    for (const auto& e : elems)
      if (e.name == "polyline") out.push_back(e);
    return out;
  };
  const auto copy = lines(PlotMetric::kCopy), wall = lines(PlotMetric::kWall), both = lines(PlotMetric::kBoth);
  ASSERT_EQ(copy.size(), 1u);
  ASSERT_EQ(wall.size(), 1u);
  ASSERT_EQ(both.size(), 2u);
  EXPECT_EQ(copy[0].attrs.count("stroke-dasharray"), 0u);
  EXPECT_EQ(wall[0].attrs.count("stroke-dasharray"), 1u);
  EXPECT_EQ(both[0].attrs.at("stroke"), both[1].attrs.at("stroke"));
  // The sample's Wall avg (3.9 ms) is longer than its Copy avg (3.736 ms): the
  // dashed line lies lower (a larger y in SVG) at every size.
  EXPECT_EQ(both[0].attrs.at("points"), copy[0].attrs.at("points"));
  EXPECT_EQ(both[1].attrs.at("points"), wall[0].attrs.at("points"));
  EXPECT_NE(copy[0].attrs.at("points"), wall[0].attrs.at("points"));
  EXPECT_EQ(parse_plot_metric("wall"), PlotMetric::kWall);
  EXPECT_THROW(parse_plot_metric("walls"), ds::UsageError);
}

namespace {

// The polylines of a plot, and the text of its legend entries and titles.
struct Drawn {
  std::vector<dstest::XmlElement> lines;
  std::string texts;
};

Drawn drawn(const std::string& svg) {
  std::vector<dstest::XmlElement> elems;
  EXPECT_EQ(dstest::parse_xml(svg, &elems), "") << svg;
  Drawn d;
  for (const auto& e : elems) {
    if (e.name == "polyline") d.lines.push_back(e);
    if (e.name == "text") d.texts += e.text + "\n";
  }
  return d;
}

// An aio phase result as aio_measure fills it: BW over IO.
CaseResult aio_sample(const std::string& name, const std::string& method, uint64_t shard) {
  CaseResult r = sample(name, shard);
  r.method = method;
  r.measured = "IO";
  r.devices = 1;
  r.stages = {{"Submit", ns_stats(1000, 2000, 1500, 1500, 1900)},
              {"IO", ns_stats(3155000, 4101000, 3736000, 3759000, 3905000)},
              {"Wall", ns_stats(3300000, 4300000, 3900000, 3950000, 4100000)}};
  return r;
}

}  // namespace

// aio: one line per phase and engine, named as the block and its Method column;
// BW only unless asked; the workspaces in the title, no device count.
TEST(OutputSvg, AioPlotHasALinePerPhaseAndEngine) {
  std::vector<CaseResult> results;
  for (uint64_t s = 4096; s <= 16384; s *= 2)
    for (const char* engine : {"LIBAIO", "PSYNC"})
      for (const char* phase : {"aio_dump", "aio_load"}) results.push_back(aio_sample(phase, engine, s));
  Drawn d = drawn(aio_plot_svg(results, {"/data/a", "/data/b"}, PlotMetric::kCopy));
  ASSERT_EQ(d.lines.size(), 4u);
  for (const auto& l : d.lines) EXPECT_EQ(l.attrs.count("stroke-dasharray"), 0u);
  for (const char* label : {"aio_dump LIBAIO\n", "aio_load LIBAIO\n", "aio_dump PSYNC\n", "aio_load PSYNC\n",
                            "Disk bandwidth by shard size, files in /data/a, /data/b\n",
                            "Shard size (bytes per I/O, log2 scale)\n", "BW = shard size x shards / IO avg over 128 epochs"})
    EXPECT_NE(d.texts.find(label), std::string::npos) << label << "\n" << d.texts;
  EXPECT_EQ(d.texts.find("device"), std::string::npos) << d.texts;
  // Four colours: one per line.
  std::set<std::string> colours;
  for (const auto& l : d.lines) colours.insert(l.attrs.at("stroke"));
  EXPECT_EQ(colours.size(), 4u);
  // both: each line and its WallBW, dashed, in its colour.
  d = drawn(aio_plot_svg(results, {"/data/a"}, PlotMetric::kBoth));
  ASSERT_EQ(d.lines.size(), 8u);
  EXPECT_EQ(d.lines[1].attrs.count("stroke-dasharray"), 1u);
  EXPECT_EQ(d.lines[0].attrs.at("stroke"), d.lines[1].attrs.at("stroke"));
  EXPECT_NE(d.texts.find("aio_load PSYNC WallBW\n"), std::string::npos) << d.texts;
}

// load: the end-to-end line (BW over IO+Copy, WallBW as asked) and each stage
// alone, at the Stages line's figures.
TEST(OutputSvg, LoadPlotHasEndToEndAndEachStageAlone) {
  std::vector<CaseResult> results;
  for (uint64_t s = 4096; s <= 16384; s *= 2) {
    CaseResult r = aio_sample("load", "LIBAIO+CE-MS-FORK", s);
    r.measured = "IO+Copy";
    r.stages[1].name = "IO+Copy";
    r.devices = 2;
    LoadStages st;
    st.disk_gib_s = 2.0 * static_cast<double>(s / 4096);
    st.copy_gib_s = 40.0;
    r.extras.put(st);
    results.push_back(r);
  }
  const Drawn d = drawn(load_plot_svg(results, "sim", PlotMetric::kCopy));
  ASSERT_EQ(d.lines.size(), 3u);
  for (const char* label : {"load (2 cards)\n", "disk alone (2 cards)\n", "copy alone (2 cards)\n",
                            "Load bandwidth by block size: sim backend, 2 cards\n"})
    EXPECT_NE(d.texts.find(label), std::string::npos) << label << "\n" << d.texts;
  // The stage lines are at the stages' figures: copy alone (40 GiB/s) flat and the
  // highest, so its y is the smallest and the same at every size.
  const std::string copy_alone = d.lines[2].attrs.at("points");
  std::vector<std::string> ys;
  for (size_t at = 0; (at = copy_alone.find(',', at)) != std::string::npos; ++at)
    ys.push_back(copy_alone.substr(at + 1, copy_alone.find(' ', at) - at - 1));
  ASSERT_EQ(ys.size(), 3u);
  EXPECT_EQ(ys[0], ys[1]);
  EXPECT_EQ(ys[1], ys[2]);
  EXPECT_EQ(drawn(load_plot_svg(results, "sim", PlotMetric::kBoth)).lines.size(), 4u);
}

// offload: the same three lines in its words (Copy+IO), from its OffloadStages.
TEST(OutputSvg, OffloadPlotHasEndToEndAndEachStageAlone) {
  std::vector<CaseResult> results;
  for (uint64_t s = 4096; s <= 16384; s *= 2) {
    CaseResult r = aio_sample("offload", "CE-MS+LIBAIO-FORK", s);
    r.measured = "Copy+IO";
    r.stages[1].name = "Copy+IO";
    r.devices = 2;
    OffloadStages st;
    st.disk_gib_s = 2.0;
    st.copy_gib_s = 40.0;
    r.extras.put(st);
    results.push_back(r);
  }
  const Drawn d = drawn(staged_plot_svg(StagedDir::kOffload, results, "sim", PlotMetric::kCopy));
  ASSERT_EQ(d.lines.size(), 3u);
  for (const char* label : {"offload (2 cards)\n", "disk alone (2 cards)\n", "copy alone (2 cards)\n",
                            "Offload bandwidth by block size: sim backend, 2 cards\n", "Copy+IO avg"})
    EXPECT_NE(d.texts.find(label), std::string::npos) << label << "\n" << d.texts;
}

TEST(OutputSvg, XmlCheckerRejectsBrokenDocuments) {
  std::vector<dstest::XmlElement> e;
  EXPECT_NE(dstest::parse_xml("<svg><g></svg>", &e), "");
  e.clear();
  EXPECT_NE(dstest::parse_xml("<svg a=1/>", &e), "");
  e.clear();
  EXPECT_NE(dstest::parse_xml("<svg><text>a & b</text></svg>", &e), "");
  e.clear();
  EXPECT_NE(dstest::parse_xml("<a/><b/>", &e), "");
  e.clear();
  EXPECT_EQ(dstest::parse_xml("<?xml version=\"1.0\"?>\n<a x='1'><b>&lt;</b></a>\n", &e), "");
}

TEST(OutputSizeLabel, ShortPowerOfTwoNames) {
  EXPECT_EQ(size_label(512), "512");
  EXPECT_EQ(size_label(4096), "4K");
  EXPECT_EQ(size_label(1 << 20), "1M");
  EXPECT_EQ(size_label(2ULL << 30), "2G");
  EXPECT_EQ(size_label(1536), "1536");
}

// --output and --plot files appear whole or not at all (output/atomic_file.h).
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string scratch(const std::string& name) {
  return ::testing::TempDir() + "atomic-" + std::to_string(getpid()) + "-" + name;
}

}  // namespace

TEST(AtomicFile, AppearsOnlyWhenCommitted) {
  const std::string path = scratch("new.json");
  ::unlink(path.c_str());
  {
    ds::AtomicFile f(path, "--output");
    f.stream() << "half";
    EXPECT_NE(::access(path.c_str(), F_OK), 0) << "visible before commit";
    EXPECT_EQ(::access(f.temporary().c_str(), F_OK), 0);
    f.stream() << " and whole";
    f.commit();
    EXPECT_NE(::access(f.temporary().c_str(), F_OK), 0);
  }
  EXPECT_EQ(read_all(path), "half and whole");
  ::unlink(path.c_str());
}

TEST(AtomicFile, DroppedWithoutCommitLeavesThePreviousFileAndNoTemporary) {
  const std::string path = scratch("old.json");
  std::ofstream(path) << "previous";
  std::string temp;
  {
    ds::AtomicFile f(path, "--output");
    temp = f.temporary();
    f.stream() << "new but unfinished";
  }
  EXPECT_EQ(read_all(path), "previous");
  EXPECT_NE(::access(temp.c_str(), F_OK), 0);
  ::unlink(path.c_str());
}

TEST(AtomicFile, DevicesAndLinksAreWrittenInPlaceAndDirectoriesRefused) {
  {
    ds::AtomicFile f("/dev/null", "--output");
    EXPECT_EQ(f.temporary(), "");  // never a rename over a device
    f.stream() << "x";
    f.commit();
  }
  struct stat st;
  ASSERT_EQ(::stat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  const std::string target = scratch("target"), link = scratch("link");
  std::ofstream(target) << "";
  ::unlink(link.c_str());
  ASSERT_EQ(::symlink(target.c_str(), link.c_str()), 0);
  {
    ds::AtomicFile f(link, "--output");
    f.stream() << "through the link";
    f.commit();
  }
  EXPECT_EQ(read_all(target), "through the link");
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode)) << "the link was replaced";
  ::unlink(link.c_str());
  ::unlink(target.c_str());
  try {
    ds::AtomicFile f("/tmp", "--plot");
    ADD_FAILURE() << "a directory was accepted";
  } catch (const ds::RunError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write --plot /tmp: it is a directory");
  }
  EXPECT_THROW(ds::AtomicFile("/nonexistent-dir-ds/x.json", "--output"), ds::RunError);
}
