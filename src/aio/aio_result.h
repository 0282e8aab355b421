// What an aio result carries beyond the common columns (an extra, output/result_extra.h):
// what the block device under each workspace counted over the phase
// (/sys/block/<dev>/stat) against what the phase should have moved to it, and with
// --workers > 1 each worker's own bandwidth.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "output/result.h"

namespace ds {

struct DeviceIo {
  std::string device;  // empty: none found (then `why`)
  std::string why;
  uint64_t bytes = 0, expected = 0;
  // "written" or "read": what the phase did to the disk. JSON and the codec carry
  // it as "direction" where a result moves both ways (aio_mixed: one entry each).
  std::string direction;
};

class AioResult : public ResultExtra {
 public:
  static constexpr const char* kKey = "aio";
  std::vector<DeviceIo> device_io;  // per device, per direction the phase moved
  bool both_ways = false;           // the phase wrote and read (a mixed epoch)
  // --workers > 1: each worker's own bandwidth (its bytes / its own measured avg),
  // GiB/s, in worker order; empty otherwise.
  std::vector<double> worker_gib_s;

  const char* key() const override { return kKey; }
  // JSON "device_io" [{"device", "not_found", "bytes", "expected_bytes", "percent",
  // "below_95"[, "direction"]}], "worker_bandwidth_gib_s": after "notes".
  JsonPlace json_place() const override { return JsonPlace::kAfterNotes; }
  void add_json(Json& result, const CaseResult& r) const override;
  // The Workers line in the block; the Device lines after it.
  std::string block_lines(const CaseResult& r) const override;
  std::string trailing_lines(const CaseResult& r) const override;
  Json encode() const override;
  // On one node a disk the parts name alike (in one direction) is one disk: one line,
  // its bytes the most any part's counters saw (they read the same counters between
  // barriers), its expected bytes summed. Across nodes every line is kept, its
  // device named "<node>:<device>". Workers: every part's, in part order.
  std::shared_ptr<const ResultExtra> combine(const std::vector<const ResultExtra*>& parts, const CombineScope& scope,
                                             const CaseResult& combined) const override;
};

// `  Workers: min X / max Y GiB/s per worker`; "" without per-worker figures.
std::string format_workers_line(const AioResult& a);
// `  Device vda: written 4.00 GiB of 4.00 GiB (100.0%)`, one per entry; a device not
// found: `  Device: not found (<why>): cannot show that the disk was <direction>`.
std::string format_device_lines(const AioResult& a);

// Registers AioResult's decoder (output/result_extra.h); called at the start of the
// program and by tests, as often as wanted.
void register_aio_result();

}  // namespace ds
