// Every writer on made-up results with every figure set (the golden files mask the
// figures of a real run; this pins them): the text, JSON and CSV bytes of copy-,
// aio- and load-like results (their extras included), with and without --model,
// and of their aggregates across ranks (on one node and across nodes), equal
// tests/data/writers/made_up_results.txt. That file was first written by the
// writers before the results schema (output/result_schema.h) replaced them, and
// the schema's writers print it byte for byte. To rewrite it after a deliberate
// change of the output: DS_WRITE_REFERENCE=1 ./ds_output_unit_tests
// --gtest_filter='WritersReference.*', and say why in the commit.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "aio/aio_result.h"
#include "cluster/across_ranks.h"
#include "staging/staged_stages.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/text_writer.h"

namespace ds {
namespace {

Stats stats(int64_t mn, int64_t mx, double avg, int64_t p50, int64_t p90, int64_t p99, int64_t p999, size_t n) {
  Stats s;
  s.min = mn;
  s.max = mx;
  s.avg = avg;
  s.p50 = p50;
  s.p90 = p90;
  s.p99 = p99;
  s.p999 = p999;
  s.samples = n;
  return s;
}

CaseResult base(const std::string& name) {
  CaseResult r;
  r.name = name;
  r.brief = "a brief, \"quoted\"\nwith a newline";
  r.from = "sim::host::all";
  r.to = "sim::device::all";
  r.method = "CE-MS-FORK";
  r.block_bytes = 65536;
  r.count = 48;
  r.bytes = 65536 * 48;
  r.devices = 2;
  r.streams = 4;
  r.submit_mode = "round_robin";
  r.frags = 3;
  r.layout = "32K,16K,16K";
  r.copies = 144;
  r.iterations = 3;
  r.warmup = 1;
  r.stages = {{"Submit", stats(1234, 5678, 3456.75, 3000, 5000, 5600, 5678, 3), {1234, 3000, 5678}},
              {"Copy", stats(123456, 987654, 456789.125, 400000, 900000, 980000, 987654, 3), {123456, 400000, 987654}},
              {"Wall", stats(223456, 1987654, 956789.5, 800000, 1900000, 1980000, 1987654, 3), {223456, 800000, 1987654}},
              {"StartSkew", stats(0, 1500, 500.25, 0, 1500, 1500, 1500, 3), {0, 0, 1500}}};
  r.setup_s = 0.123456789;
  r.notes = {"one note", "two, notes"};
  return r;
}

CaseResult aio_like(const std::string& name) {
  CaseResult a = base(name);
  a.measured = "IO";
  a.stages[1].name = "IO";
  a.from = "sim::mmap::0";
  a.to = "file::ext4";
  a.method = "LIBAIO";
  a.devices = 1;
  a.validated = false;
  a.validate = "each";
  AioResult x;
  const char* verb = name == "aio_dump" ? "written" : "read";
  if (name == "aio_mixed") {
    x.both_ways = true;
    x.device_io = {{"vda", "", 3 << 20, 4 << 20, "written"}, {"vda", "", 8 << 20, 8 << 20, "read"}};
  } else {
    x.device_io = {{"vdb", "", 1 << 20, 2 << 20, verb}, {"", "no block device under tmpfs", 0, 4 << 20, verb}};
  }
  if (name == "aio_load") x.worker_gib_s = {1.25, 2.5, 0.75};
  a.extras.put(x);
  a.kv_on_cards = false;
  a.kv_request = name == "aio_dump" ? "dump" : name == "aio_mixed" ? "mixed epoch" : "load";
  a.path = name == "aio_dump" ? "host memory -> disk" : name == "aio_mixed" ? "host memory <-> disk" : "disk -> host memory";
  a.numa.mode = "auto";
  WorkerPlacement w;
  w.device = 0;
  w.node = 0;
  w.pinned = 1;
  w.cpu_choice = CpuChoice::kNode;
  std::strcpy(w.cpus, "0-3");
  w.buffers = 1;
  std::strcpy(w.buffer[0].what, "buffers");
  w.buffer[0].node = 0;
  w.buffer[0].bound = 0;
  w.buffer[0].pages.pages = 16;
  w.buffer[0].pages.nodes = 1;
  w.buffer[0].pages.node[0] = 0;
  w.buffer[0].pages.count[0] = 16;
  a.numa.workers = {w};
  return a;
}

CaseResult load_like() {
  CaseResult l = base("load");
  l.measured = "IO+Copy";
  l.stages[1].name = "IO+Copy";
  l.method = "LIBAIO+CE-MS-FORK";
  l.path = "disk -> host -> device";
  LoadStages s;
  s.disk_alone = {"DiskAlone", stats(100000, 300000, 200000, 200000, 300000, 300000, 300000, 3), {100000, 200000, 300000}};
  s.copy_alone = {"CopyAlone", stats(50000, 70000, 60000, 60000, 70000, 70000, 70000, 3), {50000, 60000, 70000}};
  s.io_busy = stats(10, 30, 20, 20, 30, 30, 30, 3);
  s.copy_busy = stats(1, 3, 2, 2, 3, 3, 3, 3);
  s.io_busy_samples = {10, 20, 30};
  s.copy_busy_samples = {1, 2, 3};
  s.set_figures(l);
  l.extras.put(s);
  l.numa.mode = "off";
  return l;
}

std::vector<CaseResult> results() {
  CaseResult c = base("all_host_to_all_device_ce_multi_stream");
  c.stream_start_gate = true;
  c.validated = true;
  c.validate = "end";
  c.path = "host memory -> device";
  CaseResult c2 = base("host_to_device_ce");
  c2.layout = "";
  c2.submit_mode = "";
  c2.devices = 1;
  c2.notes = {};
  return {c, c2, aio_like("aio_dump"), aio_like("aio_load"), aio_like("aio_mixed"), load_like()};
}

// Three ranks' parts of `r`: bytes, samples, disk counters and stages alone apart.
std::vector<CaseResult> rank_parts(const CaseResult& r) {
  std::vector<CaseResult> parts(3, r);
  if (r.name != "aio_load")  // one placement record is enough to see them combined
    for (CaseResult& p : parts) p.numa = NumaReport{};
  for (int k = 0; k < 3; ++k) {
    CaseResult& p = parts[static_cast<size_t>(k)];
    p.bytes += static_cast<uint64_t>(k) * 4096;
    p.count += static_cast<uint64_t>(k);
    p.setup_s += 0.5 * k;
    for (Stage& s : p.stages) {
      for (auto& v : s.samples) v += 100 * k * (v % 3);
      s.ns = compute_stats(s.samples);
    }
    if (const AioResult* a0 = p.extras.get<AioResult>()) {
      AioResult a = *a0;
      for (auto& d : a.device_io) {
        d.bytes += static_cast<uint64_t>(k) * 1000;
        d.expected += 7;
      }
      for (auto& w : a.worker_gib_s) w += k;
      p.extras.put(a);
    }
    if (const LoadStages* l0 = p.extras.get<LoadStages>()) {
      LoadStages l = *l0;
      for (auto& v : l.disk_alone.samples) v += 1000 * k;
      l.disk_alone.ns = compute_stats(l.disk_alone.samples);
      l.io_busy_samples.push_back(k);
      l.set_figures(p);
      p.extras.put(l);
    }
    if (k == 2 && p.validated) p.validated = !*p.validated;
    if (k == 1) p.notes.push_back("rank one's");
  }
  return parts;
}

std::string everything() {
  std::ostringstream all;
  for (int workload = 0; workload < 2; ++workload) {
    RunInfo i;
    i.tool_version = "9.9";
    i.backend = "sim";
    i.runtime_version = "cpu";
    i.devices = {"a", "b"};
    i.command_line = {"dev-sandbox", "x"};
    if (workload) {
      i.workload_text = "Workload: a made-up model";
      i.workload_json = "{\"model\":\"m\"}";
    }
    std::ostringstream t, j, c;
    TextWriter tw(t);
    JsonWriter jw(j);
    CsvWriter cw(c);
    std::vector<ResultWriter*> writers = {&tw, &cw};
    if (workload) writers.push_back(&jw);  // JSON once: it differs only by the --model keys
    for (ResultWriter* w : writers) {
      w->begin(i);
      for (const CaseResult& r : results()) {
        w->add(r);
        if (r.validated) w->validation(r.name, *r.validated);
      }
      if (workload) w->nodes({{"n1", {0, 1}, {results()[3], results()[5]}}, {"n2", {2}, {results()[3], results()[5]}}},
                             {"load", "pipelined"});
      w->finish();
    }
    all << "=== text " << workload << "\n" << t.str() << "=== csv " << workload << "\n" << c.str();
    if (workload) all << "=== json\n" << j.str();
  }
  // Across ranks: each result's three parts on one node, apart, and over two nodes.
  std::ostringstream j;
  JsonWriter jw(j);
  RunInfo i;
  i.tool_version = "9.9";
  i.backend = "sim";
  jw.begin(i);
  all << "=== across ranks\n";
  for (const CaseResult& r : results()) {
    const std::vector<CaseResult> parts = rank_parts(r);
    const std::vector<const CaseResult*> p = {&parts[0], &parts[1], &parts[2]};
    CombineScope nodes;
    nodes.nodes = {"n1", "n2"};
    const std::vector<const CaseResult*> two = {&parts[0], &parts[2]};
    for (const CaseResult& agg : {combine_results(p, true), combine_results(p, false), combine_results(two, nodes)}) {
      jw.add(agg);
      all << format_text_block(agg);
      for (const auto& e : agg.extras.all()) all << e->trailing_lines(agg);
    }
  }
  jw.finish();
  all << j.str();
  return all.str();
}

TEST(WritersReference, EveryWriterPrintsTheReferenceBytes) {
  const std::string path = std::string(DS_WRITERS_DATA) + "/made_up_results.txt";
  const std::string now = everything();
  if (std::getenv("DS_WRITE_REFERENCE")) {
    std::ofstream(path) << now;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  std::stringstream want;
  want << in.rdbuf();
  if (now == want.str()) return;
  // The first line that differs, to see what changed.
  std::istringstream a(now), b(want.str());
  std::string la, lb;
  int line = 0;
  while (true) {
    ++line;
    const bool ga = static_cast<bool>(std::getline(a, la)), gb = static_cast<bool>(std::getline(b, lb));
    if (!ga && !gb) break;
    if (la != lb || ga != gb) {
      ADD_FAILURE() << path << ":" << line << "\n  now:  " << la << "\n  want: " << lb;
      return;
    }
  }
  ADD_FAILURE() << "the output differs from " << path;
}

}  // namespace
}  // namespace ds
