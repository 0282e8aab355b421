// The one CaseResult <-> JSON codec (src/output/result_codec): a result with
// every field set away from its default survives encode -> decode -> encode
// unchanged, and every encoded field differs from a default result's, so the
// filled result below covers what the codec writes. The layout guards make a
// field added to CaseResult (or its parts) fail here until the codec carries it
// and this test fills it.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "output/result_codec.h"

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
  std::optional<bool> validated;
  std::string validate;
  double setup_s;
  std::vector<std::string> notes;
  std::vector<CaseResult::DeviceIo> device_io;
  std::vector<double> worker_gib_s;
  NumaReport numa;
  std::optional<CaseResult::LoadStages> load;
};
struct LoadStagesMirror {
  Stage disk_alone, copy_alone;
  Stats read_busy, copy_busy;
  std::vector<int64_t> read_busy_samples, copy_busy_samples;
  double disk_gib_s, copy_gib_s, pipelined_gib_s, percent_of_slower;
  std::string bottleneck;
};
static_assert(sizeof(CaseResult::LoadStages) == sizeof(LoadStagesMirror),
              "LoadStages changed: carry it in result_codec and fill it here");
static_assert(sizeof(Stats) == sizeof(StatsMirror), "Stats changed: carry it in result_codec and fill it here");
static_assert(sizeof(Stage) == sizeof(StageMirror), "Stage changed: carry it in result_codec and fill it here");
static_assert(sizeof(CaseResult::DeviceIo) == sizeof(DeviceIoMirror),
              "DeviceIo changed: carry it in result_codec and fill it here");
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

CaseResult filled() {
  CaseResult r;
  r.name = "aio_mixed";
  r.brief = "a brief";
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
  r.stages = {s, Stage{"Wall", compute_stats({4000, 5000, 6000}), {4000, 5000, 6000}}};
  r.measured = "IO";
  r.validated = false;
  r.validate = "each";
  r.setup_s = 1.5;
  r.notes = {"a note", "another"};
  r.device_io = {CaseResult::DeviceIo{"vda", "", 1 << 20, 2 << 20, "written"},
                 CaseResult::DeviceIo{"", "no block device under tmpfs", 0, 4 << 20, "read"}};
  r.device_io[0].why = "kept with the device";
  r.worker_gib_s = {1.25, 2.5};
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
  CaseResult::LoadStages l;
  l.disk_alone = Stage{"DiskAlone", compute_stats({700, 900}), {700, 900}};
  l.copy_alone = Stage{"CopyAlone", compute_stats({70, 90}), {70, 90}};
  l.read_busy = compute_stats({600, 650});
  l.copy_busy = compute_stats({60, 65});
  l.read_busy_samples = {600, 650};
  l.copy_busy_samples = {60, 65};
  l.disk_gib_s = 1.5;
  l.copy_gib_s = 15.25;
  l.pipelined_gib_s = 1.375;
  l.percent_of_slower = 91.6;
  l.bottleneck = "disk";
  r.load = l;
  return r;
}

TEST(ResultCodec, RoundTripKeepsEveryField) {
  const CaseResult r = filled();
  const std::string text = encode_result(r);
  const CaseResult back = decode_result(text);
  EXPECT_EQ(encode_result(back), text);
  // Spot checks of what the issue named: direction, the numa record, samples.
  ASSERT_EQ(back.device_io.size(), 2u);
  EXPECT_EQ(back.device_io[0].direction, "written");
  EXPECT_EQ(back.device_io[1].direction, "read");
  ASSERT_EQ(back.numa.workers.size(), 1u);
  EXPECT_STREQ(back.numa.workers[0].cpus, "0-15,32-47");
  EXPECT_EQ(back.numa.workers[0].buffer[1].pages.count[1], 7u);
  EXPECT_EQ(back.numa.shared.at(0).pages.other, 5u);
  EXPECT_EQ(back.stages.at(0).samples, (std::vector<int64_t>{3000, 1000, 2000}));
  EXPECT_EQ(back.stages.at(0).ns.avg, r.stages.at(0).ns.avg);
  EXPECT_EQ(back.validated, std::optional<bool>(false));
  ASSERT_TRUE(back.load.has_value());
  EXPECT_EQ(back.load->copy_alone.samples, (std::vector<int64_t>{70, 90}));
  EXPECT_EQ(back.load->bottleneck, "disk");
  EXPECT_EQ(back.load->read_busy_samples, (std::vector<int64_t>{600, 650}));
  EXPECT_EQ(back.load->copy_busy_samples, (std::vector<int64_t>{60, 65}));
}

// Every field the codec writes is set in filled(): none equals a default result's.
TEST(ResultCodec, FilledResultCoversEveryEncodedField) {
  const nlohmann::json a = nlohmann::json::parse(encode_result(filled()));
  const nlohmann::json d = nlohmann::json::parse(encode_result(CaseResult{}));
  ASSERT_EQ(a.size(), d.size());
  for (auto it = a.begin(); it != a.end(); ++it) EXPECT_NE(it.value(), d.at(it.key())) << it.key();
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
