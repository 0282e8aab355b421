#include "aio/aio_result.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"

namespace ds {

void AioResult::add_json(Json& result, const CaseResult&) const {
  if (!device_io.empty()) {  // the block device's own counters over the phase
    Json devs = Json::array();
    for (const DeviceIo& d : device_io) {
      const bool found = !d.device.empty();
      const double pct = found && d.expected ? 100.0 * static_cast<double>(d.bytes) / static_cast<double>(d.expected) : 0;
      devs.push_back({{"device", found ? Json(d.device) : Json(nullptr)},
                      {"not_found", found ? Json(nullptr) : Json(d.why)},
                      {"bytes", d.bytes},
                      {"expected_bytes", d.expected},
                      {"percent", found ? Json(pct) : Json(nullptr)},
                      {"below_95", found ? Json(pct < 95.0) : Json(nullptr)}});
      if (both_ways) devs.back()["direction"] = d.direction;  // written, read
    }
    result["device_io"] = devs;
  }
  if (!worker_gib_s.empty()) result["worker_bandwidth_gib_s"] = worker_gib_s;
}

std::string format_workers_line(const AioResult& a) {
  if (a.worker_gib_s.empty()) return "";
  const auto mm = std::minmax_element(a.worker_gib_s.begin(), a.worker_gib_s.end());
  char line[128];
  std::snprintf(line, sizeof line, "  Workers: min %.3f / max %.3f GiB/s per worker\n", *mm.first, *mm.second);
  return line;
}

std::string format_device_lines(const AioResult& a) {
  std::string out;
  for (const DeviceIo& d : a.device_io) {
    if (d.device.empty()) {
      out += std::string("  Device: not found (") + d.why + "): cannot show that the disk was " + d.direction + "\n";
      continue;
    }
    char pct[32];
    std::snprintf(pct, sizeof pct, "%.1f",
                  d.expected ? 100.0 * static_cast<double>(d.bytes) / static_cast<double>(d.expected) : 0.0);
    out += "  Device " + d.device + ": " + d.direction + " " + format_bytes(d.bytes) + " of " +
           format_bytes(d.expected) + " (" + pct + "%)\n";
  }
  return out;
}

std::string AioResult::block_lines(const CaseResult&) const { return format_workers_line(*this); }

std::string AioResult::trailing_lines(const CaseResult&) const { return format_device_lines(*this); }

Json AioResult::encode() const {
  Json devs = Json::array();
  for (const DeviceIo& d : device_io)
    devs.push_back({{"device", d.device}, {"why", d.why}, {"bytes", d.bytes}, {"expected", d.expected},
                    {"direction", d.direction}});
  return {{"device_io", devs}, {"both_ways", both_ways}, {"worker_gib_s", worker_gib_s}};
}

namespace {

std::shared_ptr<const ResultExtra> decode_aio(const Json& j) {
  AioResult a;
  for (const Json& d : j.at("device_io")) {
    DeviceIo io;
    io.device = d.at("device");
    io.why = d.at("why");
    io.bytes = d.at("bytes");
    io.expected = d.at("expected");
    io.direction = d.at("direction");
    a.device_io.push_back(io);
  }
  a.both_ways = j.at("both_ways");
  a.worker_gib_s = j.at("worker_gib_s").get<std::vector<double>>();
  return std::make_shared<const AioResult>(std::move(a));
}

}  // namespace

std::shared_ptr<const ResultExtra> AioResult::combine(const std::vector<const ResultExtra*>& parts,
                                                      const CombineScope& scope, const CaseResult&) const {
  AioResult out;
  out.both_ways = both_ways;
  const std::vector<const AioResult*> mine = extra_parts<AioResult>(parts);
  for (size_t i = 0; i < mine.size(); ++i) {
    for (DeviceIo d : mine[i]->device_io) {
      // Ranks on one node see the same disk's counters: one line per direction, its
      // expected bytes summed (the counters were read between barriers, aio_measure).
      auto same = std::find_if(out.device_io.begin(), out.device_io.end(), [&](const DeviceIo& x) {
        return scope.one_node && !d.device.empty() && x.device == d.device && x.direction == d.direction;
      });
      if (same != out.device_io.end()) {
        same->expected += d.expected;
        same->bytes = std::max(same->bytes, d.bytes);
        continue;
      }
      if (i < scope.nodes.size() && !d.device.empty()) d.device = scope.nodes[i] + ":" + d.device;
      out.device_io.push_back(d);
    }
    out.worker_gib_s.insert(out.worker_gib_s.end(), mine[i]->worker_gib_s.begin(), mine[i]->worker_gib_s.end());
  }
  return std::make_shared<const AioResult>(std::move(out));
}

void register_aio_result() { register_extra_decoder(AioResult::kKey, &decode_aio); }

}  // namespace ds
