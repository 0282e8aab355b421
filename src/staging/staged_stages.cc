#include "staging/staged_stages.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/result_schema.h"
#include "measurement/paged_figure.h"
#include "output/text_writer.h"
#include "staging/mix_stages.h"

namespace ds {

std::string stage_verdict(double disk, double copy, double pipelined) {
  const double slower = std::min(disk, copy);
  if (slower > 0 && pipelined >= kStageVerdictFraction * slower) return disk <= copy ? "disk" : "copy";
  return "neither (overlap lost)";
}

void StagedStages::set_figures(const CaseResult& r) {
  disk_gib_s = ds::bandwidth_gib_s(r.bytes, 1, disk_alone.ns.avg * 1e-9);
  copy_gib_s = ds::bandwidth_gib_s(r.bytes, 1, copy_alone.ns.avg * 1e-9);
  pipelined_gib_s = r.bandwidth_gib_s();
  const double slower = std::min(disk_gib_s, copy_gib_s);
  percent_of_slower = slower > 0 ? 100.0 * pipelined_gib_s / slower : 0.0;
  bottleneck = stage_verdict(disk_gib_s, copy_gib_s, pipelined_gib_s);
}

void StagedStages::add_json(Json& result, const CaseResult&) const {
  result[json_name()] = {{"disk_alone_us", stats_us(disk_alone.ns)},
                         {"disk_alone_gib_s", disk_gib_s},
                         {"copy_alone_us", stats_us(copy_alone.ns)},
                         {"copy_alone_gib_s", copy_gib_s},
                         {"pipelined_gib_s", pipelined_gib_s},
                         {"percent_of_slower", percent_of_slower},
                         {"bottleneck", bottleneck},
                         {std::string(io_name()) + "_busy_us", stats_us(io_busy)},
                         {"copy_busy_us", stats_us(copy_busy)}};
}

std::string format_stages_line(const StagedStages& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  Stages: disk alone %.3f GiB/s, copy alone %.3f GiB/s, pipelined %.3f GiB/s = %.1f%% of the slower "
                "stage; bottleneck: %s\n",
                s.disk_gib_s, s.copy_gib_s, s.pipelined_gib_s, s.percent_of_slower, printable(s.bottleneck).c_str());
  return line;
}

std::string StagedStages::block_lines(const CaseResult&) const { return format_stages_line(*this); }

std::vector<Json> StagedStages::csv_rows(const CaseResult& r) const {
  auto row = [&r](const char* suffix, const Stage& stage) {
    Json j = csv_stage_row(r, suffix, stage, r.bytes);
    j["time_label"] = stage.name;
    return j;
  };
  return {row("disk_alone", disk_alone), row("copy_alone", copy_alone)};
}

Json StagedStages::encode() const {
  return {{"disk_alone", stage_wire(disk_alone)},   {"copy_alone", stage_wire(copy_alone)},
          {"io_busy", stats_wire(io_busy)},         {"copy_busy", stats_wire(copy_busy)},
          {"io_busy_samples", io_busy_samples},     {"copy_busy_samples", copy_busy_samples},
          {"disk_gib_s", disk_gib_s},               {"copy_gib_s", copy_gib_s},
          {"pipelined_gib_s", pipelined_gib_s},     {"percent_of_slower", percent_of_slower},
          {"bottleneck", bottleneck}};
}

void StagedStages::decode(const Json& j) {
  disk_alone = stage_from_wire(j.at("disk_alone"));
  copy_alone = stage_from_wire(j.at("copy_alone"));
  io_busy = stats_from_wire(j.at("io_busy"));
  copy_busy = stats_from_wire(j.at("copy_busy"));
  io_busy_samples = j.at("io_busy_samples").get<std::vector<int64_t>>();
  copy_busy_samples = j.at("copy_busy_samples").get<std::vector<int64_t>>();
  disk_gib_s = j.at("disk_gib_s");
  copy_gib_s = j.at("copy_gib_s");
  pipelined_gib_s = j.at("pipelined_gib_s");
  percent_of_slower = j.at("percent_of_slower");
  bottleneck = j.at("bottleneck");
}

std::shared_ptr<const ResultExtra> LoadStages::decoded(const Json& j) {
  auto l = std::make_shared<LoadStages>();
  l->decode(j);
  return l;
}

std::shared_ptr<const ResultExtra> OffloadStages::decoded(const Json& j) {
  auto o = std::make_shared<OffloadStages>();
  o->decode(j);
  return o;
}

std::shared_ptr<const ResultExtra> StagedStages::combine(const std::vector<const ResultExtra*>& parts,
                                                         const CombineScope&, const CaseResult& combined) const {
  std::vector<const StagedStages*> mine;
  for (const ResultExtra* p : parts) {
    const auto* s = dynamic_cast<const StagedStages*>(p);
    if (!s || std::string(s->key()) != key()) throw_mismatched_extra(p ? p->key() : "(none)");
    mine.push_back(s);
  }
  std::shared_ptr<StagedStages> st = blank();
  std::vector<const Stage*> disk, copy;
  for (const StagedStages* p : mine) {
    disk.push_back(&p->disk_alone);
    copy.push_back(&p->copy_alone);
    st->io_busy_samples.insert(st->io_busy_samples.end(), p->io_busy_samples.begin(), p->io_busy_samples.end());
    st->copy_busy_samples.insert(st->copy_busy_samples.end(), p->copy_busy_samples.begin(),
                                 p->copy_busy_samples.end());
  }
  st->disk_alone = slowest_per_iteration(disk, combined.name);
  st->copy_alone = slowest_per_iteration(copy, combined.name);
  st->io_busy = compute_stats(st->io_busy_samples);
  st->copy_busy = compute_stats(st->copy_busy_samples);
  st->set_figures(combined);
  return st;
}

void register_staged_results() {
  register_extra_decoder(LoadStages::kKey, &LoadStages::decoded);
  register_extra_decoder(OffloadStages::kKey, &OffloadStages::decoded);
  register_mix_result();    // load --offload-ratio's
  register_paged_result();  // --block-table's
}

}  // namespace ds
