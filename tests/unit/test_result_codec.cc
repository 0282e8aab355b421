// The one CaseResult <-> JSON codec (src/output/result_codec): a result with
// every field set away from its default survives encode -> decode -> encode
// unchanged, and every encoded field differs from a default result's, so the
// filled result below covers what the codec writes. The layout guards make a
// field added to CaseResult (or its parts, or an extra) fail here until the codec
// carries it and this test fills it. The schema (output/result_schema.h) drives
// the codec and the writers alike: after a round trip the JSON, CSV and text
// writers print the same bytes, and JSON and the codec agree on every column
// both carry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "aio/aio_result.h"
#include "cases/duplex_result.h"
#include "cases/gather_result.h"
#include "core/error.h"
#include "measurement/paged_figure.h"
#include "staging/staged_stages.h"
#include "output/csv_writer.h"
#include "output/json_writer.h"
#include "output/result_codec.h"
#include "output/result_schema.h"
#include "output/text_writer.h"

namespace ds {
namespace {

// Mirrors of the structs' members, in order: a new member changes the size.
struct StatsMirror {
  int64_t min, max, p50, p90, p99, p999;
  double avg;
  size_t samples;
};
struct StageMirror {
  std::string name;
  Stats ns;
  std::vector<int64_t> samples;
};
struct DeviceIoMirror {
  std::string device, why;
  uint64_t bytes, expected;
  std::string direction;
};
struct AioMirror {
  void* vtable;
  std::vector<DeviceIo> device_io;
  bool both_ways;
  std::vector<double> worker_gib_s;
};
struct CensusMirror {
  int32_t refused;
  uint64_t pages, absent;
  int32_t nodes;
  int32_t node[kCensusNodes];
  uint64_t count[kCensusNodes];
  uint64_t other;
};
struct BufferMirror {
  char what[24];
  int32_t node, bound;
  PageCensus pages;
};
struct WorkerMirror {
  int32_t device, node, pinned;
  CpuChoice cpu_choice;
  int32_t policy_refused;
  char cpus[256];
  int32_t buffers;
  BufferPlacement buffer[kPlacedBuffers];
};
struct NumaMirror {
  std::string mode;
  std::vector<WorkerPlacement> workers;
  std::vector<BufferPlacement> shared;
};
struct ResultMirror {
  std::string name, brief, from, to, method;
  uint64_t block_bytes, count, bytes;
  int devices, streams;
  std::string submit_mode;
  bool stream_start_gate;
  int frags;
  std::string layout;
  uint64_t copies;
  int iterations, warmup;
  std::vector<Stage> stages;
  std::string measured;
  std::string timer;
  int64_t timer_resolution_ns;
  std::optional<bool> validated;
  std::string validate;
  double setup_s;
  uint64_t retries;
  std::vector<std::string> notes;
  NumaReport numa;
  std::string kv_request;
  bool kv_on_cards;
  std::string path;
  ResultExtras extras;
};
struct LoadStagesMirror {
  void* vtable;
  Stage disk_alone, copy_alone;
  Stats io_busy, copy_busy;
  std::vector<int64_t> io_busy_samples, copy_busy_samples;
  double disk_gib_s, copy_gib_s, pipelined_gib_s, percent_of_slower;
  std::string bottleneck;
};
static_assert(sizeof(LoadStages) == sizeof(LoadStagesMirror),
              "LoadStages changed: carry it in staging/staged_stages and fill it here");
struct DuplexStagesMirror {
  void* vtable;
  Stage h2d_together, d2h_together, h2d_alone, d2h_alone;
  uint64_t h2d_bytes, d2h_bytes, h2d_block, d2h_block, h2d_count, d2h_count;
  double ratio;
  double h2d_alone_gib_s, d2h_alone_gib_s, h2d_gib_s, d2h_gib_s, together_gib_s, percent_of_alone;
  double perfect_overlap_gib_s, percent_of_perfect_overlap;
};
static_assert(sizeof(DuplexStages) == sizeof(DuplexStagesMirror),
              "DuplexStages changed: carry it in duplex_result and fill it here");
static_assert(sizeof(Stats) == sizeof(StatsMirror), "Stats changed: carry it in result_codec and fill it here");
static_assert(sizeof(Stage) == sizeof(StageMirror), "Stage changed: carry it in result_codec and fill it here");
static_assert(sizeof(DeviceIo) == sizeof(DeviceIoMirror), "DeviceIo changed: carry it in aio_result and fill it here");
static_assert(sizeof(AioResult) == sizeof(AioMirror), "AioResult changed: carry it in aio_result and fill it here");
static_assert(sizeof(PageCensus) == sizeof(CensusMirror), "PageCensus changed: carry it in result_codec and fill it here");
static_assert(sizeof(BufferPlacement) == sizeof(BufferMirror),
              "BufferPlacement changed: carry it in result_codec and fill it here");
static_assert(sizeof(WorkerPlacement) == sizeof(WorkerMirror),
              "WorkerPlacement changed: carry it in result_codec and fill it here");
static_assert(sizeof(NumaReport) == sizeof(NumaMirror), "NumaReport changed: carry it in result_codec and fill it here");
static_assert(sizeof(CaseResult) == sizeof(ResultMirror), "CaseResult changed: carry it in result_codec and fill it here");

BufferPlacement filled_buffer(const char* what, int base) {
  BufferPlacement b;
  std::strncpy(b.what, what, sizeof b.what - 1);
  b.node = base;
  b.bound = base + 1;
  b.pages.refused = 13 + base;
  b.pages.pages = 100 + static_cast<uint64_t>(base);
  b.pages.absent = 3;
  b.pages.nodes = 2;
  b.pages.node[0] = base;
  b.pages.node[1] = base + 2;
  b.pages.count[0] = 90;
  b.pages.count[1] = 7;
  b.pages.other = 5;
  return b;
}

AioResult filled_aio() {
  AioResult a;
  a.device_io = {DeviceIo{"vda", "kept with the device", 1 << 20, 2 << 20, "written"},
                 DeviceIo{"", "no block device under tmpfs", 0, 4 << 20, "read"}};
  a.both_ways = true;
  a.worker_gib_s = {1.25, 2.5};
  return a;
}

LoadStages filled_load() {
  LoadStages l;
  l.disk_alone = Stage{"DiskAlone", compute_stats({700, 900}), {700, 900}};
  l.copy_alone = Stage{"CopyAlone", compute_stats({70, 90}), {70, 90}};
  l.io_busy = compute_stats({600, 650});
  l.copy_busy = compute_stats({60, 65});
  l.io_busy_samples = {600, 650};
  l.copy_busy_samples = {60, 65};
  l.disk_gib_s = 1.5;
  l.copy_gib_s = 15.25;
  l.pipelined_gib_s = 1.375;
  l.percent_of_slower = 91.6;
  l.bottleneck = "disk";
  return l;
}

DuplexStages filled_duplex() {
  DuplexStages d;
  d.h2d_together = Stage{"H2D", compute_stats({100, 120}), {100, 120}};
  d.d2h_together = Stage{"D2H", compute_stats({50, 60}), {50, 60}};
  d.h2d_alone = Stage{"H2DAlone", compute_stats({80, 90}), {80, 90}};
  d.d2h_alone = Stage{"D2HAlone", compute_stats({40, 45}), {40, 45}};
  d.h2d_bytes = 1 << 20;
  d.d2h_bytes = 1 << 19;
  d.h2d_block = 65536;
  d.d2h_block = 32768;
  d.h2d_count = 16;
  d.d2h_count = 15;
  d.ratio = 0.5;
  d.h2d_alone_gib_s = 11.5;
  d.d2h_alone_gib_s = 10.25;
  d.h2d_gib_s = 8.5;
  d.d2h_gib_s = 9.5;
  d.together_gib_s = 12.75;
  d.percent_of_alone = 58.6;
  d.perfect_overlap_gib_s = 17.25;
  d.percent_of_perfect_overlap = 73.9;
  return d;
}

CaseResult filled() {
  CaseResult r;
  r.name = "aio_mixed";
  r.brief = "a brief, \"quoted\"";
  r.from = "sim::mmap::all";
  r.to = "file::ext4";
  r.method = "LIBAIO";
  r.block_bytes = 65536;
  r.count = 48;
  r.bytes = 3 << 20;
  r.devices = 3;
  r.streams = 4;
  r.submit_mode = "round_robin";
  r.stream_start_gate = true;
  r.frags = 5;
  r.layout = "128K,16K";
  r.copies = 77;
  r.iterations = 3;
  r.warmup = 2;
  Stage s;
  s.name = "IO";
  s.samples = {3000, 1000, 2000};
  s.ns = compute_stats(s.samples);
  s.ns.avg += 0.25;  // carried as it is, not recomputed from the samples
  r.stages = {s, Stage{"Wall", compute_stats({4000, 5000, 6000}), {4000, 5000, 6000}},
              Stage{"Submit", compute_stats({400, 500, 600}), {400, 500, 600}},
              Stage{"StartSkew", compute_stats({4, 5, 6}), {4, 5, 6}}};
  r.measured = "IO";
  r.timer = "CUDA events";
  r.timer_resolution_ns = 500;
  r.validated = false;
  r.validate = "each";
  r.setup_s = 1.5;
  r.retries = 7;
  r.notes = {"a note", "another"};
  r.numa.mode = "auto";
  WorkerPlacement w;
  w.device = 1;
  w.node = 0;
  w.pinned = 1;
  w.cpu_choice = CpuChoice::kNodeAllowed;
  w.policy_refused = 1;
  std::strncpy(w.cpus, "0-15,32-47", sizeof w.cpus - 1);
  w.buffers = 2;
  w.buffer[0] = filled_buffer("source", 0);
  w.buffer[1] = filled_buffer("destination", 1);
  r.numa.workers = {w};
  r.numa.shared = {filled_buffer("shared part 1", 1)};
  r.kv_request = "mixed epoch";
  r.kv_on_cards = false;
  r.path = "host memory <-> disk";
  r.extras.put(filled_aio());
  r.extras.put(filled_load());
  return r;
}

// Every measurement's decoder, as the program registers them at its start.
void registered() {
  register_aio_result();
  register_staged_results();
}

TEST(ResultCodec, RoundTripKeepsEveryField) {
  registered();
  const CaseResult r = filled();
  const std::string text = encode_result(r);
  const CaseResult back = decode_result(text);
  EXPECT_EQ(encode_result(back), text);
  // Spot checks of what the issue named: direction, the numa record, samples.
  const AioResult* aio = back.extras.get<AioResult>();
  ASSERT_NE(aio, nullptr);
  ASSERT_EQ(aio->device_io.size(), 2u);
  EXPECT_EQ(aio->device_io[0].direction, "written");
  EXPECT_EQ(aio->device_io[1].direction, "read");
  EXPECT_EQ(aio->device_io[0].why, "kept with the device");
  EXPECT_TRUE(aio->both_ways);
  EXPECT_EQ(aio->worker_gib_s, (std::vector<double>{1.25, 2.5}));
  ASSERT_EQ(back.numa.workers.size(), 1u);
  EXPECT_STREQ(back.numa.workers[0].cpus, "0-15,32-47");
  EXPECT_EQ(back.numa.workers[0].buffer[1].pages.count[1], 7u);
  EXPECT_EQ(back.numa.shared.at(0).pages.other, 5u);
  EXPECT_EQ(back.stages.at(0).samples, (std::vector<int64_t>{3000, 1000, 2000}));
  EXPECT_EQ(back.stages.at(0).ns.avg, r.stages.at(0).ns.avg);
  EXPECT_EQ(back.validated, std::optional<bool>(false));
  EXPECT_EQ(back.kv_request, "mixed epoch");
  EXPECT_FALSE(back.kv_on_cards);
  EXPECT_EQ(back.path, "host memory <-> disk");
  EXPECT_EQ(back.timer, "CUDA events");  // what the too-short note on rank 0 reads
  EXPECT_EQ(back.timer_resolution_ns, 500);
  const LoadStages* load = back.extras.get<LoadStages>();
  ASSERT_NE(load, nullptr);
  EXPECT_EQ(load->copy_alone.samples, (std::vector<int64_t>{70, 90}));
  EXPECT_EQ(load->bottleneck, "disk");
  EXPECT_EQ(load->io_busy_samples, (std::vector<int64_t>{600, 650}));
  EXPECT_EQ(load->copy_busy_samples, (std::vector<int64_t>{60, 65}));
  // The extras in the order they were put.
  ASSERT_EQ(back.extras.all().size(), 2u);
  EXPECT_STREQ(back.extras.all()[0]->key(), "aio");
  EXPECT_STREQ(back.extras.all()[1]->key(), "load");
}

// Every field the codec writes is set in filled(): none equals a default result's
// (nor, inside each extra, a default extra's).
TEST(ResultCodec, FilledResultCoversEveryEncodedField) {
  const nlohmann::json a = nlohmann::json::parse(encode_result(filled()));
  const nlohmann::json d = nlohmann::json::parse(encode_result(CaseResult{}));
  ASSERT_EQ(a.size(), d.size());
  for (auto it = a.begin(); it != a.end(); ++it) EXPECT_NE(it.value(), d.at(it.key())) << it.key();
  auto every_member_set = [](const ResultExtra& filled_one, const ResultExtra& default_one) {
    const nlohmann::json f = nlohmann::json::parse(filled_one.encode().dump());
    const nlohmann::json e = nlohmann::json::parse(default_one.encode().dump());
    ASSERT_EQ(f.size(), e.size()) << filled_one.key();
    for (auto it = f.begin(); it != f.end(); ++it) EXPECT_NE(it.value(), e.at(it.key())) << filled_one.key() << "." << it.key();
  };
  every_member_set(filled_aio(), AioResult{});
  every_member_set(filled_load(), LoadStages{});
  // The duplex figures travel as one array, the blocks as another: each entry set.
  const nlohmann::json f = nlohmann::json::parse(filled_duplex().encode().dump());
  ASSERT_EQ(f.at("figures").size(), 8u);
  ASSERT_EQ(f.at("blocks").size(), 4u);
  for (const char* k : {"figures", "blocks"})
    for (const auto& v : f.at(k)) EXPECT_NE(v.get<double>(), 0) << k;
  every_member_set(filled_duplex(), DuplexStages{});
}

// The table itself: a column the codec carries is read back, and only those are
// (a derived one is computed on the far side); keys are unique and leave the
// extras' key free; the text row ends in its one unpadded cell.
TEST(ResultSchema, CodecColumnsAreReadBackAndKeysAreUnique) {
  std::set<std::string> keys;
  size_t last_cells = 0;
  for (const Column& c : result_columns()) {
    if (c.extras_here) continue;
    EXPECT_TRUE(keys.insert(c.key).second) << "two columns named " << c.key;
    EXPECT_NE(std::string(c.key), kExtrasKey);
    EXPECT_EQ(c.in(kInCodec), c.read_back != nullptr) << c.key;
    EXPECT_TRUE(c.value != nullptr || (c.wire != nullptr && !c.in(kInJson) && !c.in(kInCsv) && !c.in(kInText)))
        << c.key << ": shown but no value";
    if (c.in(kInCodec)) EXPECT_TRUE(c.wire != nullptr || c.value != nullptr) << c.key;
    if (c.in(kInText)) {
      EXPECT_NE(c.text_header, nullptr) << c.key;
      if (c.text_width == 0) ++last_cells;
    }
  }
  EXPECT_EQ(last_cells, 1u);
  // Both places for the extras' JSON are in the table.
  int places = 0;
  for (const Column& c : result_columns()) places += c.extras_here ? 1 : 0;
  EXPECT_EQ(places, 2);
}

std::string json_doc(const CaseResult& r, bool workload) {
  std::ostringstream out;
  JsonWriter w(out);
  RunInfo i;
  i.tool_version = "1";
  i.backend = "sim";
  if (workload) i.workload_json = "{}", i.workload_text = "Workload";
  w.begin(i);
  w.add(r);
  w.finish();
  return out.str();
}
std::string csv_doc(const CaseResult& r) {
  std::ostringstream out;
  CsvWriter w(out);
  w.begin(RunInfo{});
  w.add(r);
  w.finish();
  return out.str();
}
std::string text_doc(const CaseResult& r, bool workload) {
  std::ostringstream out;
  TextWriter w(out);
  RunInfo i;
  if (workload) i.workload_text = "Workload";
  w.begin(i);
  w.add(r);
  w.finish();
  return out.str();
}

// What a rank sends is what rank 0 writes: after encode -> decode every writer
// prints the same bytes as for the original, every common column and extra included.
TEST(ResultSchema, WritersAgreeAfterTheRoundTrip) {
  registered();
  for (const CaseResult& r : {filled(), CaseResult{}}) {
    const CaseResult back = decode_result(encode_result(r));
    for (bool workload : {false, true}) {
      EXPECT_EQ(json_doc(back, workload), json_doc(r, workload));
      EXPECT_EQ(text_doc(back, workload), text_doc(r, workload));
    }
    EXPECT_EQ(csv_doc(back), csv_doc(r));
  }
  // The filled result's lines are all there: its extras' and the --model line.
  const std::string text = text_doc(filled(), true);
  for (const char* line : {"  Workers: ", "  Stages: ", "  KV mixed epoch per request (host memory <-> disk): ", "  Device vda: written 1.00 MiB",
                           "  Device: not found (no block device under tmpfs): cannot show that the disk was read"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
}

// One key, one value: where JSON and the codec both carry a column (and the codec
// has no form of its own), they write the same value under the same key; CSV's
// cell is JSON's value; the text row's cells are JSON's values as the table writes them.
TEST(ResultSchema, JsonCsvAndCodecAgreeOnEveryColumn) {
  const CaseResult r = filled();
  const Json doc = Json::parse(json_doc(r, true))["results"][0];  // in the order written
  const nlohmann::json wire = nlohmann::json::parse(encode_result(r));
  std::istringstream csv(csv_doc(r));
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  size_t csv_columns_seen = 0;
  for (const Column& c : result_columns()) {
    if (c.extras_here) continue;
    if (c.in(kInJson) && c.in(kInCodec) && !c.wire) EXPECT_EQ(doc.at(c.key).dump(), wire.at(c.key).dump()) << c.key;
    if (c.in(kInJson)) EXPECT_TRUE(doc.contains(c.key)) << c.key;
    if (!c.in(kInJson)) EXPECT_FALSE(doc.contains(c.key)) << c.key;
    if (c.in(kInCsv)) csv_columns_seen += c.stats ? 7 : 1;
  }
  EXPECT_EQ(csv_columns_seen + 1, csv_columns().size());  // and "error"
  // The keys JSON, CSV and the codec share for the fields the issue named.
  EXPECT_EQ(wire.at("copies_per_iteration"), 77);
  EXPECT_EQ(wire.at("stream_start_gate"), true);
  EXPECT_EQ(wire.at("time_label"), "IO");
  EXPECT_EQ(doc.at("copies_per_iteration"), 77);
  EXPECT_NE(header.find(",copies_per_iteration,"), std::string::npos);
  EXPECT_NE(header.find(",stream_start_gate,time_label,"), std::string::npos);
  // Beside the copies, their mean size (derived: the bytes over them, never carried).
  EXPECT_DOUBLE_EQ(doc.at("mean_chunk_bytes").get<double>(), (3 << 20) / 77.0);
  EXPECT_FALSE(wire.contains("mean_chunk_bytes"));
  EXPECT_NE(header.find(",copies_per_iteration,mean_chunk_bytes,iterations,"), std::string::npos) << header;
  EXPECT_NE(row.find(",77,40853.610390,3,2,round_robin,true,IO,"), std::string::npos) << row;
  // The extras' JSON sits where their place is: aio's after notes, load's after numa.
  std::vector<std::string> order;
  for (auto it = doc.begin(); it != doc.end(); ++it) order.push_back(it.key());
  auto at = [&](const char* k) { return std::find(order.begin(), order.end(), k) - order.begin(); };
#if DS_JSON_HAS_ORDERED
  EXPECT_EQ(at("device_io"), at("notes") + 1);
  EXPECT_EQ(at("worker_bandwidth_gib_s"), at("device_io") + 1);
  EXPECT_EQ(at("numa"), at("worker_bandwidth_gib_s") + 1);
  EXPECT_EQ(at("load_stages"), at("numa") + 1);
  EXPECT_EQ(at("kv_load_ms"), at("load_stages") + 1);
#endif
}

// Each extra alone: its codec form read back by its registered decoder is itself.
TEST(ResultExtraCodec, AioRoundTrip) {
  registered();
  const AioResult a = filled_aio();
  const auto back = decode_extra("aio", a.encode());
  const AioResult* b = dynamic_cast<const AioResult*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->encode(), a.encode());
  ASSERT_EQ(b->device_io.size(), 2u);
  EXPECT_EQ(b->device_io[0].device, "vda");
  EXPECT_EQ(b->device_io[0].bytes, 1u << 20);
  EXPECT_EQ(b->device_io[0].expected, 2u << 20);
  EXPECT_EQ(b->device_io[1].why, "no block device under tmpfs");
  EXPECT_EQ(b->device_io[1].direction, "read");
  EXPECT_TRUE(b->both_ways);
  EXPECT_EQ(b->worker_gib_s, a.worker_gib_s);
}

TEST(ResultExtraCodec, LoadRoundTrip) {
  registered();
  const LoadStages l = filled_load();
  const auto back = decode_extra("load", l.encode());
  const LoadStages* b = dynamic_cast<const LoadStages*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->encode(), l.encode());
  EXPECT_EQ(b->disk_alone.name, "DiskAlone");
  EXPECT_EQ(b->disk_alone.samples, (std::vector<int64_t>{700, 900}));
  EXPECT_EQ(b->copy_alone.ns.max, 90);
  EXPECT_EQ(b->io_busy.p50, l.io_busy.p50);
  EXPECT_EQ(b->copy_busy_samples, (std::vector<int64_t>{60, 65}));
  EXPECT_DOUBLE_EQ(b->copy_gib_s, 15.25);
  EXPECT_DOUBLE_EQ(b->percent_of_slower, 91.6);
  EXPECT_EQ(b->bottleneck, "disk");
}

TEST(ResultExtraCodec, DuplexRoundTrip) {
  register_duplex_result();
  const DuplexStages d = filled_duplex();
  const auto back = decode_extra("duplex", d.encode());
  const DuplexStages* b = dynamic_cast<const DuplexStages*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->encode(), d.encode());
  EXPECT_EQ(b->d2h_alone.samples, (std::vector<int64_t>{40, 45}));
  EXPECT_EQ(b->h2d_block, 65536u);
  EXPECT_EQ(b->d2h_count, 15u);
  EXPECT_DOUBLE_EQ(b->percent_of_alone, 58.6);
  EXPECT_DOUBLE_EQ(b->perfect_overlap_gib_s, 17.25);
  EXPECT_DOUBLE_EQ(b->percent_of_perfect_overlap, 73.9);
  CaseResult r;
  EXPECT_EQ(b->block_lines(r), d.block_lines(r));
}

// The Duplex line at --duplex-ratio 0.5: 1 GiB of H2D alone in 1 s, 0.5 GiB of D2H
// alone in 0.5 s, both together in 1 s: 75% of alone H2D + D2H (which no overlap can
// reach when the directions' alone times differ), 100% of the perfect overlap (both
// directions' bytes over the longer alone time).
TEST(DuplexFigures, PerfectOverlapIsBothBytesOverTheLongerAloneTime) {
  DuplexStages d;
  d.h2d_bytes = 1ULL << 30;
  d.d2h_bytes = 1ULL << 29;
  d.ratio = 0.5;
  auto stage = [](int64_t ns) {
    Stage s;
    s.samples = {ns};
    s.ns = compute_stats({ns});
    return s;
  };
  d.h2d_alone = stage(1000000000);
  d.d2h_alone = stage(500000000);
  d.h2d_together = stage(1000000000);
  d.d2h_together = stage(500000000);
  CaseResult r;
  r.measured = "Copy";
  r.bytes = d.h2d_bytes + d.d2h_bytes;
  r.stages = {stage(0), stage(1000000000)};
  r.stages[0].name = "Submit";
  r.stages[1].name = "Copy";
  d.set_figures(r);
  EXPECT_DOUBLE_EQ(d.together_gib_s, 1.5);
  EXPECT_DOUBLE_EQ(d.percent_of_alone, 75.0);
  EXPECT_DOUBLE_EQ(d.perfect_overlap_gib_s, 1.5);
  EXPECT_DOUBLE_EQ(d.percent_of_perfect_overlap, 100.0);
  EXPECT_EQ(format_duplex_line(d),
            "  Duplex: H2D alone 1.000 GiB/s, D2H alone 1.000, together H2D 1.000 + D2H 1.000 = 1.500 GiB/s "
            "(75.0% of alone H2D + D2H; 100.0% of perfect overlap)\n");
  Json j;
  d.add_json(j, r);
  EXPECT_DOUBLE_EQ(j["duplex"]["percent_of_perfect_overlap"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(j["duplex"]["perfect_overlap_gib_s"].get<double>(), 1.5);
}

// The gather shape travels as its launches and table; the chunks and their mean
// come from the result's copies and bytes, on either side; across ranks the
// launches and tables add up.
TEST(ResultExtraCodec, GatherRoundTripAndCombine) {
  register_gather_result();
  GatherShape g;
  g.launches = 1;
  g.table_bytes = 800;
  const auto back = decode_extra("gather", g.encode());
  const GatherShape* b = dynamic_cast<const GatherShape*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->encode(), g.encode());
  CaseResult r;
  r.copies = 20;
  r.bytes = 65536 + 4097 + 1000 + 3;
  r.bytes *= 5;
  EXPECT_EQ(b->block_lines(r),
            "  Gather: 20 chunks of 17659 B (mean) per iteration in 1 launch of ds_gather_kernel, from a 800 B "
            "descriptor table built at setup\n");
  r.bytes += 10;
  EXPECT_EQ(b->block_lines(r).find("20 chunks of 17659.5 B (mean)"), 10u) << b->block_lines(r);
  const auto both = g.combine({&g, b}, CombineScope{}, r);
  const GatherShape* c = dynamic_cast<const GatherShape*>(both.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->launches, 2u);
  EXPECT_EQ(c->table_bytes, 1600u);
}

// The paged figure travels as its table, pool and contiguous pass; the chunks, their
// mean and the percentage come from the result on either side; across ranks the
// contiguous pass per iteration is the slowest part's, as the result's own stages.
TEST(ResultExtraCodec, PagedRoundTripLineAndCombine) {
  register_paged_result();
  PagedFigure f;
  f.table = "random:7";
  f.pool_blocks = 40;
  f.compared = true;
  f.contiguous = {"Contiguous", compute_stats({1000, 3000}), {1000, 3000}};
  const auto back = decode_extra("paged", f.encode());
  const PagedFigure* b = dynamic_cast<const PagedFigure*>(back.get());
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->encode(), f.encode());
  CaseResult r;
  r.copies = 3;
  r.bytes = 8192;  // 2730.7 B a chunk; contiguous: 8192 B in 2000 ns on average
  r.measured = "IO+Copy";
  r.stages = {{"IO+Copy", compute_stats({4000}), {4000}}};
  EXPECT_EQ(b->block_lines(r), "  Paged: 3 chunks of 2730.7 B, " + std::string("1.907 GiB/s = 50.0% of contiguous\n"));
  EXPECT_DOUBLE_EQ(b->percent_of_contiguous(r), 50.0);
  Json j = Json::object();
  b->add_json(j, r);
  EXPECT_EQ(j["paged"]["chunks_per_iteration"], 3u);
  EXPECT_DOUBLE_EQ(j["paged"]["mean_chunk_bytes"].get<double>(), 8192.0 / 3);
  EXPECT_DOUBLE_EQ(j["paged"]["percent_of_contiguous"].get<double>(), 50.0);
  ASSERT_EQ(b->csv_rows(r).size(), 1u);
  EXPECT_EQ(b->csv_rows(r)[0]["name"], ":contiguous");
  PagedFigure slower = f;
  slower.contiguous = {"Contiguous", compute_stats({2000, 2000}), {2000, 2000}};
  const auto both = f.combine({&f, &slower}, CombineScope{}, r);
  const PagedFigure* c = dynamic_cast<const PagedFigure*>(both.get());
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->contiguous.samples, (std::vector<int64_t>{2000, 3000}));
  // Not compared: the table and pool, no percentage, no CSV row.
  PagedFigure alone;
  alone.table = "sequential";
  alone.pool_blocks = 12;
  EXPECT_EQ(alone.block_lines(r), "  Paged: 3 chunks of 2730.7 B, 1.907 GiB/s (--block-table sequential, a 12-block pool)\n");
  EXPECT_TRUE(alone.csv_rows(r).empty());
}

// A part no measurement registered a decoder for is a clear failure, not a silent drop.
TEST(ResultExtraCodec, UnregisteredPartIsARunError) {
  registered();
  nlohmann::json j = nlohmann::json::parse(encode_result(filled()));
  j["extras"][0]["key"] = "no-such-measurement";
  try {
    decode_result(j.dump());
    ADD_FAILURE() << "an unknown part was accepted";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-measurement'"), std::string::npos) << e.what();
  }
}

TEST(ResultCodec, RunInfoRoundTrip) {
  RunInfo i{"1.2", "cuda", "/lib/libcudart.so", "12.4", {"GPU0"}, {"dev-sandbox", "copy"}, "workload", "{}"};
  EXPECT_EQ(encode_run_info(decode_run_info(encode_run_info(i))), encode_run_info(i));
  EXPECT_EQ(decode_run_info(encode_run_info(i)).backend_library, "/lib/libcudart.so");
}

TEST(ResultCodec, MalformedTextIsARunError) {
  EXPECT_THROW(decode_result("{\"name\": 1}"), RunError);
  EXPECT_THROW(decode_result("not json"), RunError);
}

}  // namespace
}  // namespace ds
