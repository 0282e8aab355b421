#include "cases/duplex_result.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/result_schema.h"
#include "output/text_writer.h"

namespace ds {

void DuplexStages::set_figures(const CaseResult& r) {
  h2d_alone_gib_s = ds::bandwidth_gib_s(h2d_bytes, 1, h2d_alone.ns.avg * 1e-9);
  d2h_alone_gib_s = ds::bandwidth_gib_s(d2h_bytes, 1, d2h_alone.ns.avg * 1e-9);
  h2d_gib_s = ds::bandwidth_gib_s(h2d_bytes, 1, h2d_together.ns.avg * 1e-9);
  d2h_gib_s = ds::bandwidth_gib_s(d2h_bytes, 1, d2h_together.ns.avg * 1e-9);
  together_gib_s = r.bandwidth_gib_s();
  const double alone = h2d_alone_gib_s + d2h_alone_gib_s;
  percent_of_alone = alone > 0 ? 100.0 * together_gib_s / alone : 0.0;
  const double longer_alone_ns = std::max(h2d_alone.ns.avg, d2h_alone.ns.avg);
  perfect_overlap_gib_s = ds::bandwidth_gib_s(h2d_bytes + d2h_bytes, 1, longer_alone_ns * 1e-9);
  percent_of_perfect_overlap = perfect_overlap_gib_s > 0 ? 100.0 * together_gib_s / perfect_overlap_gib_s : 0.0;
}

namespace {

Json direction_json(uint64_t bytes, uint64_t block, uint64_t count, const Stage& together, double gib_s,
                    const Stage& alone, double alone_gib_s) {
  return {{"bytes", bytes},
          {"block_bytes", block},
          {"count", count},
          {"copy_us", stats_us(together.ns)},
          {"gib_s", gib_s},
          {"alone_copy_us", stats_us(alone.ns)},
          {"alone_gib_s", alone_gib_s}};
}

}  // namespace

void DuplexStages::add_json(Json& result, const CaseResult&) const {
  result["duplex"] = {{"ratio", ratio},
                      {"h2d", direction_json(h2d_bytes, h2d_block, h2d_count, h2d_together, h2d_gib_s, h2d_alone, h2d_alone_gib_s)},
                      {"d2h", direction_json(d2h_bytes, d2h_block, d2h_count, d2h_together, d2h_gib_s, d2h_alone, d2h_alone_gib_s)},
                      {"together_gib_s", together_gib_s},
                      {"percent_of_alone", percent_of_alone},
                      {"perfect_overlap_gib_s", perfect_overlap_gib_s},
                      {"percent_of_perfect_overlap", percent_of_perfect_overlap}};
}

std::string format_direction_line(const std::string& dir, uint64_t block, uint64_t count, const Stage& copy,
                                  double gib_s) {
  char bw[64];
  std::snprintf(bw, sizeof bw, "%.3f", gib_s);
  return "  " + dir + ": Size(KB)=" + format_kib(block) + " Count=" + std::to_string(count) +
         "  Copy(us)-(Min/Max/Avg/P50/P90)=" + format_stats_us(copy.ns) + "  BW(GB/s)=" + bw + "\n";
}

std::string format_duplex_line(const DuplexStages& s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "  Duplex: H2D alone %.3f GiB/s, D2H alone %.3f, together H2D %.3f + D2H %.3f = %.3f GiB/s "
                "(%.1f%% of alone H2D + D2H; %.1f%% of perfect overlap)\n",
                s.h2d_alone_gib_s, s.d2h_alone_gib_s, s.h2d_gib_s, s.d2h_gib_s, s.together_gib_s, s.percent_of_alone,
                s.percent_of_perfect_overlap);
  return line;
}

std::string DuplexStages::block_lines(const CaseResult&) const {
  return format_direction_line("H2D", h2d_block, h2d_count, h2d_together, h2d_gib_s) +
         format_direction_line("D2H", d2h_block, d2h_count, d2h_together, d2h_gib_s) + format_duplex_line(*this);
}

namespace {

// One CSV row of a direction: the result's own cells where they hold for it (the
// case, method, cards, streams, iterations, ...), its own name, from/to, block,
// count, Copy and BW; no Submit, Wall or StartSkew of its own (empty cells).
Json direction_row(const CaseResult& r, const std::string& suffix, bool h2d, uint64_t block, uint64_t count,
                   uint64_t bytes, const Stage& copy) {
  Json row = csv_stage_row(r, suffix, copy, bytes);
  row["from"] = h2d ? r.from : r.to;
  row["to"] = h2d ? r.to : r.from;
  row["block_bytes"] = block;
  row["count"] = count;
  return row;
}

}  // namespace

std::vector<Json> DuplexStages::csv_rows(const CaseResult& r) const {
  return {direction_row(r, "h2d", true, h2d_block, h2d_count, h2d_bytes, h2d_together),
          direction_row(r, "d2h", false, d2h_block, d2h_count, d2h_bytes, d2h_together),
          direction_row(r, "h2d_alone", true, h2d_block, h2d_count, h2d_bytes, h2d_alone),
          direction_row(r, "d2h_alone", false, d2h_block, d2h_count, d2h_bytes, d2h_alone)};
}

Json DuplexStages::encode() const {
  return {{"h2d_together", stage_wire(h2d_together)},
          {"d2h_together", stage_wire(d2h_together)},
          {"h2d_alone", stage_wire(h2d_alone)},
          {"d2h_alone", stage_wire(d2h_alone)},
          {"h2d_bytes", h2d_bytes},
          {"d2h_bytes", d2h_bytes},
          {"ratio", ratio},
          {"blocks", {h2d_block, d2h_block, h2d_count, d2h_count}},
          {"figures",
           {h2d_alone_gib_s, d2h_alone_gib_s, h2d_gib_s, d2h_gib_s, together_gib_s, percent_of_alone,
            perfect_overlap_gib_s, percent_of_perfect_overlap}}};
}

namespace {

std::shared_ptr<const ResultExtra> decode_duplex(const Json& j) {
  DuplexStages s;
  s.h2d_together = stage_from_wire(j.at("h2d_together"));
  s.d2h_together = stage_from_wire(j.at("d2h_together"));
  s.h2d_alone = stage_from_wire(j.at("h2d_alone"));
  s.d2h_alone = stage_from_wire(j.at("d2h_alone"));
  s.h2d_bytes = j.at("h2d_bytes");
  s.d2h_bytes = j.at("d2h_bytes");
  s.ratio = j.at("ratio");
  const Json& b = j.at("blocks");
  s.h2d_block = b.at(0);
  s.d2h_block = b.at(1);
  s.h2d_count = b.at(2);
  s.d2h_count = b.at(3);
  const Json& f = j.at("figures");
  s.h2d_alone_gib_s = f.at(0);
  s.d2h_alone_gib_s = f.at(1);
  s.h2d_gib_s = f.at(2);
  s.d2h_gib_s = f.at(3);
  s.together_gib_s = f.at(4);
  s.percent_of_alone = f.at(5);
  s.perfect_overlap_gib_s = f.at(6);
  s.percent_of_perfect_overlap = f.at(7);
  return std::make_shared<const DuplexStages>(std::move(s));
}

}  // namespace

// Across ranks: each stage per iteration the slowest part's, the bytes summed, the
// figures again from the combined result.
std::shared_ptr<const ResultExtra> DuplexStages::combine(const std::vector<const ResultExtra*>& parts,
                                                         const CombineScope&, const CaseResult& combined) const {
  const std::vector<const DuplexStages*> mine = extra_parts<DuplexStages>(parts);
  DuplexStages st = *this;
  std::vector<const Stage*> ht, dt, ha, da;
  st.h2d_bytes = st.d2h_bytes = st.h2d_count = st.d2h_count = 0;
  for (const DuplexStages* p : mine) {
    ht.push_back(&p->h2d_together);
    dt.push_back(&p->d2h_together);
    ha.push_back(&p->h2d_alone);
    da.push_back(&p->d2h_alone);
    st.h2d_bytes += p->h2d_bytes;
    st.d2h_bytes += p->d2h_bytes;
    st.h2d_count += p->h2d_count;
    st.d2h_count += p->d2h_count;
  }
  st.h2d_together = slowest_per_iteration(ht, combined.name);
  st.d2h_together = slowest_per_iteration(dt, combined.name);
  st.h2d_alone = slowest_per_iteration(ha, combined.name);
  st.d2h_alone = slowest_per_iteration(da, combined.name);
  st.set_figures(combined);
  return std::make_shared<const DuplexStages>(std::move(st));
}

void register_duplex_result() { register_extra_decoder(DuplexStages::kKey, &decode_duplex); }

}  // namespace ds
