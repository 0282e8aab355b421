#include "load/load_result.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/text_writer.h"

namespace ds {

std::string stage_verdict(double disk, double copy, double pipelined) {
  const double slower = std::min(disk, copy);
  if (slower > 0 && pipelined >= kStageVerdictFraction * slower) return disk <= copy ? "disk" : "copy";
  return "neither (overlap lost)";
}

void LoadStages::set_figures(const CaseResult& r) {
  disk_gib_s = ds::bandwidth_gib_s(r.bytes, 1, disk_alone.ns.avg * 1e-9);
  copy_gib_s = ds::bandwidth_gib_s(r.bytes, 1, copy_alone.ns.avg * 1e-9);
  pipelined_gib_s = r.bandwidth_gib_s();
  const double slower = std::min(disk_gib_s, copy_gib_s);
  percent_of_slower = slower > 0 ? 100.0 * pipelined_gib_s / slower : 0.0;
  bottleneck = stage_verdict(disk_gib_s, copy_gib_s, pipelined_gib_s);
}

void LoadStages::add_json(Json& result, const CaseResult&) const {
  result["load_stages"] = {{"disk_alone_us", stats_us(disk_alone.ns)},
                           {"disk_alone_gib_s", disk_gib_s},
                           {"copy_alone_us", stats_us(copy_alone.ns)},
                           {"copy_alone_gib_s", copy_gib_s},
                           {"pipelined_gib_s", pipelined_gib_s},
                           {"percent_of_slower", percent_of_slower},
                           {"bottleneck", bottleneck},
                           {"read_busy_us", stats_us(read_busy)},
                           {"copy_busy_us", stats_us(copy_busy)}};
}

std::string format_stages_line(const LoadStages& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  Stages: disk alone %.3f GiB/s, copy alone %.3f GiB/s, pipelined %.3f GiB/s = %.1f%% of the slower "
                "stage; bottleneck: %s\n",
                s.disk_gib_s, s.copy_gib_s, s.pipelined_gib_s, s.percent_of_slower, printable(s.bottleneck).c_str());
  return line;
}

std::string LoadStages::block_lines(const CaseResult&) const { return format_stages_line(*this); }

Json LoadStages::encode() const {
  return {{"disk_alone", stage_wire(disk_alone)},     {"copy_alone", stage_wire(copy_alone)},
          {"read_busy", stats_wire(read_busy)},       {"copy_busy", stats_wire(copy_busy)},
          {"read_busy_samples", read_busy_samples},   {"copy_busy_samples", copy_busy_samples},
          {"disk_gib_s", disk_gib_s},                 {"copy_gib_s", copy_gib_s},
          {"pipelined_gib_s", pipelined_gib_s},       {"percent_of_slower", percent_of_slower},
          {"bottleneck", bottleneck}};
}

namespace {

std::shared_ptr<const ResultExtra> decode_load(const Json& j) {
  LoadStages l;
  l.disk_alone = stage_from_wire(j.at("disk_alone"));
  l.copy_alone = stage_from_wire(j.at("copy_alone"));
  l.read_busy = stats_from_wire(j.at("read_busy"));
  l.copy_busy = stats_from_wire(j.at("copy_busy"));
  l.read_busy_samples = j.at("read_busy_samples").get<std::vector<int64_t>>();
  l.copy_busy_samples = j.at("copy_busy_samples").get<std::vector<int64_t>>();
  l.disk_gib_s = j.at("disk_gib_s");
  l.copy_gib_s = j.at("copy_gib_s");
  l.pipelined_gib_s = j.at("pipelined_gib_s");
  l.percent_of_slower = j.at("percent_of_slower");
  l.bottleneck = j.at("bottleneck");
  return std::make_shared<const LoadStages>(std::move(l));
}

}  // namespace

std::shared_ptr<const ResultExtra> LoadStages::combine(const std::vector<const ResultExtra*>& parts,
                                                       const CombineScope&, const CaseResult& combined) const {
  const std::vector<const LoadStages*> mine = extra_parts<LoadStages>(parts);
  LoadStages st = *this;
  std::vector<const Stage*> disk, copy;
  for (const LoadStages* p : mine) {
    disk.push_back(&p->disk_alone);
    copy.push_back(&p->copy_alone);
  }
  st.disk_alone = slowest_per_iteration(disk, combined.name);
  st.copy_alone = slowest_per_iteration(copy, combined.name);
  st.read_busy_samples.clear();
  st.copy_busy_samples.clear();
  for (const LoadStages* p : mine) {
    st.read_busy_samples.insert(st.read_busy_samples.end(), p->read_busy_samples.begin(), p->read_busy_samples.end());
    st.copy_busy_samples.insert(st.copy_busy_samples.end(), p->copy_busy_samples.begin(), p->copy_busy_samples.end());
  }
  st.read_busy = compute_stats(st.read_busy_samples);
  st.copy_busy = compute_stats(st.copy_busy_samples);
  st.set_figures(combined);
  return std::make_shared<const LoadStages>(std::move(st));
}

void register_load_result() { register_extra_decoder(LoadStages::kKey, &decode_load); }

}  // namespace ds
