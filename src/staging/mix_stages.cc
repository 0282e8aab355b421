#include "staging/mix_stages.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/result_schema.h"
#include "output/text_writer.h"

namespace ds {

double mix_cpu_share(double cpu_ns, double loop_cpu_ns, double span_ns, double cpus) {
  const double others = cpu_ns - loop_cpu_ns, left = span_ns * cpus - loop_cpu_ns;
  if (others <= 0 || span_ns <= 0 || cpus <= 0) return 0.0;
  return left > 0 ? others / left : 1.0;
}

MixOverlapCpu mix_overlap_cpu(const MixSideRun& load, const MixSideRun& offload, int64_t first_end_ns) {
  const bool load_later = load.ran && (!offload.ran || load.start_ns >= offload.start_ns);
  const MixSideRun& later = load_later ? load : offload;
  const MixSideRun& first = load.ran && load.ended_first ? load : offload;
  MixOverlapCpu o;
  o.overlap_ns = std::max<int64_t>(0, first_end_ns - later.start_ns);
  o.cpu_ns = std::max<int64_t>(0, first.at_first_end.process_ns - later.at_start.process_ns);
  // At the first end the other side's loop thread is still running on another CPU:
  // its own clock, read from here, is current, while the process clock counts a
  // running thread of another CPU only up to its last scheduler update (a tick at
  // most). The loops' CPU is part of the process's: capped at it.
  o.loop_cpu_ns = std::min(o.cpu_ns, std::max<int64_t>(0, first.at_first_end.loops_ns - later.at_start.loops_ns));
  return o;
}

std::string mix_verdict(const MixVerdictInput& in) {
  if (in.load_kept >= kMixKeptFraction && in.offload_kept >= kMixKeptFraction) return "none";
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

// Over the overlap: the busy times in it over the alone busy times of the work done in it.
double overlap_stretch(const MixDirection& l, const MixDirection& o, Stage MixDirection::*in_overlap,
                       Stage MixDirection::*alone) {
  const double same_work = (l.*alone).ns.avg * l.work_in_overlap + (o.*alone).ns.avg * o.work_in_overlap;
  return same_work > 0 ? ((l.*in_overlap).ns.avg + (o.*in_overlap).ns.avg) / same_work : 0.0;
}

// MixDirection::kept and work_in_overlap, over an overlap of `o` ns.
void set_overlap_figures(MixDirection& d, double o) {
  const double together = d.together.ns.avg, alone = d.alone.ns.avg;
  d.kept = o > 0 ? std::max(0.0, 1.0 - (together - alone) / o) : 0.0;
  d.work_in_overlap = alone > 0 ? std::min(1.0, std::max(0.0, 1.0 - (together - o) / alone)) : 0.0;
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
  // The perfect overlap: each direction at its alone speed, the pass as long as the longer alone pass.
  const double longer_ns = std::max(load.alone.ns.avg, offload.alone.ns.avg);
  perfect_overlap_gib_s = ds::bandwidth_gib_s(load.bytes + offload.bytes, 1, longer_ns * 1e-9);
  percent_of_perfect_overlap = perfect_overlap_gib_s > 0 ? 100.0 * together_gib_s / perfect_overlap_gib_s : 0.0;
  const double wall = r.stage(r.measured).avg;  // the together pass (the row's IO+Copy)
  cpu_share = mix_cpu_share(cpu.ns.avg, loop_cpu.ns.avg, wall, cpus);
  disk_stretch = stretch(load.io_busy_together, offload.io_busy_together, load.io_busy_alone, offload.io_busy_alone);
  copy_stretch =
      stretch(load.copy_busy_together, offload.copy_busy_together, load.copy_busy_alone, offload.copy_busy_alone);
  const double o = overlap.ns.avg;
  set_overlap_figures(load, o);
  set_overlap_figures(offload, o);
  overlap_cpu_share = mix_cpu_share(cpu_overlap.ns.avg, loop_cpu_overlap.ns.avg, o, cpus);
  overlap_disk_stretch = overlap_stretch(load, offload, &MixDirection::io_busy_overlap, &MixDirection::io_busy_alone);
  overlap_copy_stretch =
      overlap_stretch(load, offload, &MixDirection::copy_busy_overlap, &MixDirection::copy_busy_alone);
  set_verdict();
}

void MixStages::set_verdict() {
  short_of =
      mix_verdict({load.kept, offload.kept, overlap_cpu_share, overlap_disk_stretch, overlap_copy_stretch});
}

namespace {

Json direction_figures(const MixDirection& d, const char* io) {
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
          {"alone_copy_busy_us", stats_us(d.copy_busy_alone.ns)},
          {"overlap_" + busy, stats_us(d.io_busy_overlap.ns)},
          {"overlap_copy_busy_us", stats_us(d.copy_busy_overlap.ns)},
          {"kept_in_overlap", d.kept},
          {"work_in_overlap", d.work_in_overlap}};
}

Json direction_json(const MixDirection& d, const char* io) {
  Json j = direction_figures(d, io);
  if (!d.table.empty()) {
    j["block_table"] = d.table;
    j["pool_blocks"] = d.pool_blocks;
  }
  return j;
}

}  // namespace

void MixStages::add_json(Json& result, const CaseResult&) const {
  result["mix"] = {{"offload_ratio", ratio_asked},
                   {"ratio", ratio},
                   {"load", direction_json(load, "read")},
                   {"offload", direction_json(offload, "write")},
                   {"together_gib_s", together_gib_s},
                   {"percent_of_alone", percent_of_alone},
                   {"perfect_overlap_gib_s", perfect_overlap_gib_s},
                   {"percent_of_perfect_overlap", percent_of_perfect_overlap},
                   {"cpu_us", stats_us(cpu.ns)},
                   {"loop_cpu_us", stats_us(loop_cpu.ns)},
                   {"cpus", cpus},
                   {"cpus_bound", cpus_bound},
                   {"cpu_share", cpu_share},
                   {"disk_stretch", disk_stretch},
                   {"copy_stretch", copy_stretch},
                   {"overlap_us", stats_us(overlap.ns)},
                   {"overlap_cpu_us", stats_us(cpu_overlap.ns)},
                   {"overlap_loop_cpu_us", stats_us(loop_cpu_overlap.ns)},
                   {"overlap_cpu_share", overlap_cpu_share},
                   {"overlap_disk_stretch", overlap_disk_stretch},
                   {"overlap_copy_stretch", overlap_copy_stretch},
                   {"short", short_of}};
}

std::string format_mix_tables_line(const MixStages& s) {
  if (s.load.table.empty()) return "";
  return "  Tables: load --block-table " + printable(s.load.table) + " in a pool of " +
         std::to_string(s.load.pool_blocks) + " slots, offload its own " + printable(s.offload.table) +
         " in a pool of " + std::to_string(s.offload.pool_blocks) + " slots\n";
}

std::string format_mix_line(const MixStages& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  Mix: load alone %.3f GiB/s, offload alone %.3f, together load %.3f + offload %.3f = %.3f GiB/s "
                "(%.1f%% of perfect overlap); short: %s\n",
                s.load.alone_gib_s, s.offload.alone_gib_s, s.load.gib_s, s.offload.gib_s, s.together_gib_s,
                s.percent_of_perfect_overlap, printable(s.short_of).c_str());
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

// Over the overlap: its span, and the together pass's, in ms (averages).
std::string busy_line(const MixStages& s, double together_ns) {
  char line[320];
  std::snprintf(line, sizeof line,
                "  Busy: disk %.2fx its time alone, copy %.2fx, host CPUs %.0f%% of %g (%s) while both ran (%.3f of "
                "%.3f ms)\n",
                s.overlap_disk_stretch, s.overlap_copy_stretch, 100.0 * s.overlap_cpu_share, s.cpus,
                printable(s.cpus_bound).c_str(), s.overlap.ns.avg * 1e-6, together_ns * 1e-6);
  return line;
}

}  // namespace

std::string MixStages::block_lines(const CaseResult& r) const {
  const double together_ns = r.stages.empty() ? 0.0 : r.stage(r.measured).avg;
  return direction_line("Load", "IO+Copy", load) + direction_line("Offload", "Copy+IO", offload) +
         format_mix_tables_line(*this) + busy_line(*this, together_ns) + format_mix_line(*this);
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
          {"io_busy_overlap", stage_wire(d.io_busy_overlap)},
          {"copy_busy_overlap", stage_wire(d.copy_busy_overlap)},
          {"gib_s", {d.gib_s, d.alone_gib_s, d.kept, d.work_in_overlap}},
          {"table", {d.table, d.pool_blocks}}};
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
  d.io_busy_overlap = stage_from_wire(j.at("io_busy_overlap"));
  d.copy_busy_overlap = stage_from_wire(j.at("copy_busy_overlap"));
  d.gib_s = j.at("gib_s").at(0);
  d.alone_gib_s = j.at("gib_s").at(1);
  d.kept = j.at("gib_s").at(2);
  d.work_in_overlap = j.at("gib_s").at(3);
  d.table = j.at("table").at(0);
  d.pool_blocks = j.at("table").at(1);
  return d;
}

std::shared_ptr<const ResultExtra> decode_mix(const Json& j) {
  MixStages s;
  s.load = direction_from_wire(j.at("load"));
  s.offload = direction_from_wire(j.at("offload"));
  s.ratio_asked = j.at("ratio").at(0);
  s.ratio = j.at("ratio").at(1);
  s.cpu = stage_from_wire(j.at("cpu"));
  s.loop_cpu = stage_from_wire(j.at("loop_cpu"));
  s.cpus = j.at("cpus");
  s.cpus_bound = j.at("cpus_bound");
  s.overlap = stage_from_wire(j.at("overlap"));
  s.cpu_overlap = stage_from_wire(j.at("cpu_overlap"));
  s.loop_cpu_overlap = stage_from_wire(j.at("loop_cpu_overlap"));
  const Json& f = j.at("figures");
  s.together_gib_s = f.at(0);
  s.percent_of_alone = f.at(1);
  s.cpu_share = f.at(2);
  s.disk_stretch = f.at(3);
  s.copy_stretch = f.at(4);
  s.perfect_overlap_gib_s = f.at(5);
  s.percent_of_perfect_overlap = f.at(6);
  s.overlap_cpu_share = f.at(7);
  s.overlap_disk_stretch = f.at(8);
  s.overlap_copy_stretch = f.at(9);
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
  std::vector<const Stage*> t, a, it, ia, ct, ca, io, co;
  into.bytes = into.count = 0;
  for (const MixDirection* p : parts) {
    t.push_back(&p->together);
    a.push_back(&p->alone);
    it.push_back(&p->io_busy_together);
    ia.push_back(&p->io_busy_alone);
    ct.push_back(&p->copy_busy_together);
    ca.push_back(&p->copy_busy_alone);
    io.push_back(&p->io_busy_overlap);
    co.push_back(&p->copy_busy_overlap);
    into.bytes += p->bytes;
    into.count += p->count;
  }
  into.together = slowest_per_iteration(t, what);
  into.alone = slowest_per_iteration(a, what);
  into.io_busy_together = joined(it, into.io_busy_together.name);
  into.io_busy_alone = joined(ia, into.io_busy_alone.name);
  into.copy_busy_together = joined(ct, into.copy_busy_together.name);
  into.copy_busy_alone = joined(ca, into.copy_busy_alone.name);
  into.io_busy_overlap = joined(io, into.io_busy_overlap.name);
  into.copy_busy_overlap = joined(co, into.copy_busy_overlap.name);
}

}  // namespace

Json MixStages::encode() const {
  return {{"load", direction_wire(load)},
          {"offload", direction_wire(offload)},
          {"ratio", {ratio_asked, ratio}},
          {"cpu", stage_wire(cpu)},
          {"loop_cpu", stage_wire(loop_cpu)},
          {"cpus", cpus},
          {"cpus_bound", cpus_bound},
          {"overlap", stage_wire(overlap)},
          {"cpu_overlap", stage_wire(cpu_overlap)},
          {"loop_cpu_overlap", stage_wire(loop_cpu_overlap)},
          {"figures",
           {together_gib_s, percent_of_alone, cpu_share, disk_stretch, copy_stretch, perfect_overlap_gib_s,
            percent_of_perfect_overlap, overlap_cpu_share, overlap_disk_stretch, overlap_copy_stretch}},
          {"short", short_of}};
}

std::shared_ptr<const ResultExtra> MixStages::combine(const std::vector<const ResultExtra*>& parts,
                                                      const CombineScope&, const CaseResult& combined) const {
  const std::vector<const MixStages*> mine = extra_parts<MixStages>(parts);
  MixStages st = *this;
  std::vector<const MixDirection*> loads, offloads;
  std::vector<const Stage*> overlaps;
  const MixStages* busiest = mine.front();
  const MixStages* busiest_in_overlap = mine.front();
  for (const MixStages* p : mine) {
    loads.push_back(&p->load);
    offloads.push_back(&p->offload);
    overlaps.push_back(&p->overlap);
    if (p->cpu_share > busiest->cpu_share) busiest = p;
    if (p->overlap_cpu_share > busiest_in_overlap->overlap_cpu_share) busiest_in_overlap = p;
  }
  combine_direction(st.load, loads, combined.name);
  combine_direction(st.offload, offloads, combined.name);
  st.overlap = slowest_per_iteration(overlaps, combined.name);
  st.set_figures(combined);
  // Each rank its own host: the CPU figures of the one whose CPUs were fullest.
  st.cpu = busiest->cpu;
  st.loop_cpu = busiest->loop_cpu;
  st.cpus = busiest->cpus;
  st.cpus_bound = busiest->cpus_bound;
  st.cpu_share = busiest->cpu_share;
  st.cpu_overlap = busiest_in_overlap->cpu_overlap;
  st.loop_cpu_overlap = busiest_in_overlap->loop_cpu_overlap;
  st.overlap_cpu_share = busiest_in_overlap->overlap_cpu_share;
  st.set_verdict();
  return std::make_shared<const MixStages>(std::move(st));
}

void register_mix_result() { register_extra_decoder(MixStages::kKey, &decode_mix); }

}  // namespace ds
