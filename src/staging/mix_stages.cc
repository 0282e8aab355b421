#include "staging/mix_stages.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/result_schema.h"
#include "output/text_writer.h"

namespace ds {

std::string mix_verdict(const MixVerdictInput& in) {
  const bool load_kept = in.load_gib_s >= kMixKeptFraction * in.load_alone_gib_s;
  const bool offload_kept = in.offload_gib_s >= kMixKeptFraction * in.offload_alone_gib_s;
  if (load_kept && offload_kept) return "none";
  if (in.cpu_share >= kMixCpuFraction) return "host CPUs";
  return in.disk_stretch >= in.copy_stretch ? "disk" : "copy";
}

namespace {

double gib_s(uint64_t bytes, const Stage& s) { return ds::bandwidth_gib_s(bytes, 1, s.ns.avg * 1e-9); }

double stretch(const Stage& load_together, const Stage& offload_together, const Stage& load_alone,
               const Stage& offload_alone) {
  const double alone = load_alone.ns.avg + offload_alone.ns.avg;
  return alone > 0 ? (load_together.ns.avg + offload_together.ns.avg) / alone : 0.0;
}

}  // namespace

void MixStages::set_figures(const CaseResult& r) {
  for (MixDirection* d : {&load, &offload}) {
    d->gib_s = gib_s(d->bytes, d->together);
    d->alone_gib_s = gib_s(d->bytes, d->alone);
  }
  together_gib_s = r.bandwidth_gib_s();
  const double alone = load.alone_gib_s + offload.alone_gib_s;
  percent_of_alone = alone > 0 ? 100.0 * together_gib_s / alone : 0.0;
  const double wall = r.stage(r.measured).avg;  // the together pass (the row's IO+Copy)
  cpu_share = wall > 0 && cpus > 0 ? cpu.ns.avg / (wall * cpus) : 0.0;
  disk_stretch = stretch(load.io_busy_together, offload.io_busy_together, load.io_busy_alone, offload.io_busy_alone);
  copy_stretch =
      stretch(load.copy_busy_together, offload.copy_busy_together, load.copy_busy_alone, offload.copy_busy_alone);
  set_verdict();
}

void MixStages::set_verdict() {
  short_of = mix_verdict(
      {load.alone_gib_s, offload.alone_gib_s, load.gib_s, offload.gib_s, cpu_share, disk_stretch, copy_stretch});
}

namespace {

Json direction_json(const MixDirection& d, const char* io) {
  const std::string busy = std::string(io) + "_busy_us";
  return {{"bytes", d.bytes},
          {"block_bytes", d.block_bytes},
          {"count", d.count},
          {"io_copy_us", stats_us(d.together.ns)},
          {"gib_s", d.gib_s},
          {busy, stats_us(d.io_busy_together.ns)},
          {"copy_busy_us", stats_us(d.copy_busy_together.ns)},
          {"alone_io_copy_us", stats_us(d.alone.ns)},
          {"alone_gib_s", d.alone_gib_s},
          {"alone_" + busy, stats_us(d.io_busy_alone.ns)},
          {"alone_copy_busy_us", stats_us(d.copy_busy_alone.ns)}};
}

}  // namespace

void MixStages::add_json(Json& result, const CaseResult&) const {
  result["mix"] = {{"offload_ratio", ratio_asked},
                   {"ratio", ratio},
                   {"load", direction_json(load, "read")},
                   {"offload", direction_json(offload, "write")},
                   {"together_gib_s", together_gib_s},
                   {"percent_of_alone", percent_of_alone},
                   {"cpu_us", stats_us(cpu.ns)},
                   {"cpus", cpus},
                   {"cpu_share", cpu_share},
                   {"disk_stretch", disk_stretch},
                   {"copy_stretch", copy_stretch},
                   {"short", short_of}};
}

std::string format_mix_line(const MixStages& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  Mix: load alone %.3f GiB/s, offload alone %.3f, together load %.3f + offload %.3f = %.3f GiB/s "
                "(%.1f%% of a + b); short: %s\n",
                s.load.alone_gib_s, s.offload.alone_gib_s, s.load.gib_s, s.offload.gib_s, s.together_gib_s,
                s.percent_of_alone, printable(s.short_of).c_str());
  return line;
}

namespace {

// `measured` as offload's and load's own rows name it: the offload copies first.
std::string direction_line(const char* dir, const char* measured, const MixDirection& d) {
  char bw[64];
  std::snprintf(bw, sizeof bw, "%.3f", d.gib_s);
  return std::string("  ") + dir + ": Size(KB)=" + format_kib(d.block_bytes) + " Count=" + std::to_string(d.count) +
         "  " + measured + "(us)-(Min/Max/Avg/P50/P90)=" + format_stats_us(d.together.ns) + "  BW(GB/s)=" + bw + "\n";
}

std::string busy_line(const MixStages& s) {
  char line[256];
  std::snprintf(line, sizeof line,
                "  Busy: disk %.2fx its time alone, copy %.2fx, host CPUs %.0f%% of %d over the together pass\n",
                s.disk_stretch, s.copy_stretch, 100.0 * s.cpu_share, s.cpus);
  return line;
}

}  // namespace

std::string MixStages::block_lines(const CaseResult&) const {
  return direction_line("Load", "IO+Copy", load) + direction_line("Offload", "Copy+IO", offload) + busy_line(*this) +
         format_mix_line(*this);
}

namespace {

// One CSV row of a direction (output/result_schema.h csv_stage_row): its own name,
// from/to, block, count, IO+Copy (the Copy column) and BW.
Json direction_row(const CaseResult& r, const std::string& suffix, bool load, const MixDirection& d,
                   const Stage& pass) {
  Json row = csv_stage_row(r, suffix, pass, d.bytes);
  row["from"] = load ? r.from : r.to;
  row["to"] = load ? r.to : r.from;
  row["block_bytes"] = d.block_bytes;
  row["count"] = d.count;
  return row;
}

}  // namespace

std::vector<Json> MixStages::csv_rows(const CaseResult& r) const {
  return {direction_row(r, "load", true, load, load.together), direction_row(r, "offload", false, offload, offload.together),
          direction_row(r, "load_alone", true, load, load.alone),
          direction_row(r, "offload_alone", false, offload, offload.alone)};
}

namespace {

Json direction_wire(const MixDirection& d) {
  return {{"sizes", {d.bytes, d.block_bytes, d.count}},
          {"together", stage_wire(d.together)},
          {"alone", stage_wire(d.alone)},
          {"io_busy_together", stage_wire(d.io_busy_together)},
          {"io_busy_alone", stage_wire(d.io_busy_alone)},
          {"copy_busy_together", stage_wire(d.copy_busy_together)},
          {"copy_busy_alone", stage_wire(d.copy_busy_alone)},
          {"gib_s", {d.gib_s, d.alone_gib_s}}};
}

MixDirection direction_from_wire(const Json& j) {
  MixDirection d;
  d.bytes = j.at("sizes").at(0);
  d.block_bytes = j.at("sizes").at(1);
  d.count = j.at("sizes").at(2);
  d.together = stage_from_wire(j.at("together"));
  d.alone = stage_from_wire(j.at("alone"));
  d.io_busy_together = stage_from_wire(j.at("io_busy_together"));
  d.io_busy_alone = stage_from_wire(j.at("io_busy_alone"));
  d.copy_busy_together = stage_from_wire(j.at("copy_busy_together"));
  d.copy_busy_alone = stage_from_wire(j.at("copy_busy_alone"));
  d.gib_s = j.at("gib_s").at(0);
  d.alone_gib_s = j.at("gib_s").at(1);
  return d;
}

std::shared_ptr<const ResultExtra> decode_mix(const Json& j) {
  MixStages s;
  s.load = direction_from_wire(j.at("load"));
  s.offload = direction_from_wire(j.at("offload"));
  s.ratio_asked = j.at("ratio").at(0);
  s.ratio = j.at("ratio").at(1);
  s.cpu = stage_from_wire(j.at("cpu"));
  s.cpus = j.at("cpus");
  const Json& f = j.at("figures");
  s.together_gib_s = f.at(0);
  s.percent_of_alone = f.at(1);
  s.cpu_share = f.at(2);
  s.disk_stretch = f.at(3);
  s.copy_stretch = f.at(4);
  s.short_of = j.at("short");
  return std::make_shared<const MixStages>(std::move(s));
}

// Busy samples: every part's, in part order.
Stage joined(const std::vector<const Stage*>& parts, const std::string& name) {
  Stage s;
  s.name = name;
  for (const Stage* p : parts) s.samples.insert(s.samples.end(), p->samples.begin(), p->samples.end());
  s.ns = compute_stats(s.samples);
  return s;
}

void combine_direction(MixDirection& into, const std::vector<const MixDirection*>& parts, const std::string& what) {
  std::vector<const Stage*> t, a, it, ia, ct, ca;
  into.bytes = into.count = 0;
  for (const MixDirection* p : parts) {
    t.push_back(&p->together);
    a.push_back(&p->alone);
    it.push_back(&p->io_busy_together);
    ia.push_back(&p->io_busy_alone);
    ct.push_back(&p->copy_busy_together);
    ca.push_back(&p->copy_busy_alone);
    into.bytes += p->bytes;
    into.count += p->count;
  }
  into.together = slowest_per_iteration(t, what);
  into.alone = slowest_per_iteration(a, what);
  into.io_busy_together = joined(it, into.io_busy_together.name);
  into.io_busy_alone = joined(ia, into.io_busy_alone.name);
  into.copy_busy_together = joined(ct, into.copy_busy_together.name);
  into.copy_busy_alone = joined(ca, into.copy_busy_alone.name);
}

}  // namespace

Json MixStages::encode() const {
  return {{"load", direction_wire(load)},
          {"offload", direction_wire(offload)},
          {"ratio", {ratio_asked, ratio}},
          {"cpu", stage_wire(cpu)},
          {"cpus", cpus},
          {"figures", {together_gib_s, percent_of_alone, cpu_share, disk_stretch, copy_stretch}},
          {"short", short_of}};
}

std::shared_ptr<const ResultExtra> MixStages::combine(const std::vector<const ResultExtra*>& parts,
                                                      const CombineScope&, const CaseResult& combined) const {
  const std::vector<const MixStages*> mine = extra_parts<MixStages>(parts);
  MixStages st = *this;
  std::vector<const MixDirection*> loads, offloads;
  const MixStages* busiest = mine.front();
  for (const MixStages* p : mine) {
    loads.push_back(&p->load);
    offloads.push_back(&p->offload);
    if (p->cpu_share > busiest->cpu_share) busiest = p;
  }
  combine_direction(st.load, loads, combined.name);
  combine_direction(st.offload, offloads, combined.name);
  st.set_figures(combined);
  // Each rank its own host: the CPU figures of the one whose CPUs were fullest.
  st.cpu = busiest->cpu;
  st.cpus = busiest->cpus;
  st.cpu_share = busiest->cpu_share;
  st.set_verdict();
  return std::make_shared<const MixStages>(std::move(st));
}

void register_mix_result() { register_extra_decoder(MixStages::kKey, &decode_mix); }

}  // namespace ds
