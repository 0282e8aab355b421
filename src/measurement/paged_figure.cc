#include "measurement/paged_figure.h"

#include <cctype>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/units.h"
#include "output/json_forms.h"
#include "output/result_schema.h"
#include "output/text_writer.h"

namespace ds {

double PagedFigure::contiguous_gib_s(const CaseResult& r) const {
  return compared ? ds::bandwidth_gib_s(r.bytes, 1, contiguous.ns.avg * 1e-9) : 0.0;
}

double PagedFigure::percent_of_contiguous(const CaseResult& r) const {
  const double c = contiguous_gib_s(r);
  return c > 0 ? 100.0 * r.bandwidth_gib_s() / c : 0.0;
}

double PagedDirection::gib_s() const { return ds::bandwidth_gib_s(bytes, 1, paged.ns.avg * 1e-9); }

double PagedDirection::contiguous_gib_s() const { return ds::bandwidth_gib_s(bytes, 1, contiguous.ns.avg * 1e-9); }

double PagedDirection::percent_of_contiguous() const {
  const double c = contiguous.ns.avg > 0 ? contiguous_gib_s() : 0.0;
  return c > 0 ? 100.0 * gib_s() / c : 0.0;
}

namespace {

double mean_of(uint64_t bytes, uint64_t copies) {
  return copies ? static_cast<double>(bytes) / static_cast<double>(copies) : 0.0;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Json direction_json(const PagedDirection& d) {
  return {{"chunks_per_iteration", d.copies},
          {"mean_chunk_bytes", mean_of(d.bytes, d.copies)},
          {"copy_us", stats_us(d.paged.ns)},
          {"bandwidth_gib_s", d.gib_s()},
          {"contiguous", {{"copy_us", stats_us(d.contiguous.ns)}, {"bandwidth_gib_s", d.contiguous_gib_s()}}},
          {"percent_of_contiguous", d.percent_of_contiguous()}};
}

Json direction_wire(const PagedDirection& d) {
  return {{"name", d.name},
          {"copies", d.copies},
          {"bytes", d.bytes},
          {"paged", stage_wire(d.paged)},
          {"contiguous", stage_wire(d.contiguous)}};
}

PagedDirection direction_from_wire(const Json& j) {
  PagedDirection d;
  d.name = j.at("name").get<std::string>();
  d.copies = j.at("copies");
  d.bytes = j.at("bytes");
  d.paged = stage_from_wire(j.at("paged"));
  d.contiguous = stage_from_wire(j.at("contiguous"));
  return d;
}

}  // namespace

void PagedFigure::add_json(Json& result, const CaseResult& r) const {
  Json j = {{"block_table", table},
            {"pool_blocks", pool_blocks},
            {"chunks_per_iteration", r.copies},
            {"mean_chunk_bytes", r.mean_chunk_bytes()},
            {"copies_per_iteration", r.copies},
            {"bandwidth_gib_s", r.bandwidth_gib_s()}};
  if (compared) {
    j["contiguous"] = {{"copy_us", stats_us(contiguous.ns)}, {"bandwidth_gib_s", contiguous_gib_s(r)}};
    j["percent_of_contiguous"] = percent_of_contiguous(r);
  }
  for (const PagedDirection& d : directions) j[lower(d.name)] = direction_json(d);
  result["paged"] = j;
}

std::string format_chunk_bytes(double bytes) {
  char size[48];
  std::snprintf(size, sizeof size, "%.1f", bytes);
  const size_t len = std::strlen(size);
  if (len > 2 && std::strcmp(size + len - 2, ".0") == 0) size[len - 2] = '\0';
  return size;
}

std::string format_paged_line(const PagedFigure& f, const CaseResult& r) {
  char line[512];
  const std::string mean = format_chunk_bytes(r.mean_chunk_bytes());
  const auto n = static_cast<unsigned long long>(r.copies);
  if (f.compared)
    std::snprintf(line, sizeof line, "  Paged: %llu chunks of %s B, %.3f GiB/s = %.1f%% of contiguous\n", n,
                  mean.c_str(), r.bandwidth_gib_s(), f.percent_of_contiguous(r));
  else
    std::snprintf(line, sizeof line, "  Paged: %llu chunks of %s B, %.3f GiB/s (%s %s, a %llu-block pool)\n",
                  n, mean.c_str(), r.bandwidth_gib_s(), f.option.c_str(), printable(f.table).c_str(),
                  static_cast<unsigned long long>(f.pool_blocks));
  return line;
}

std::string format_paged_direction_line(const PagedDirection& d) {
  char line[512];
  std::snprintf(line, sizeof line, "  Paged %s: %llu chunks of %s B, %.3f GiB/s = %.1f%% of contiguous\n",
                d.name.c_str(), static_cast<unsigned long long>(d.copies),
                format_chunk_bytes(mean_of(d.bytes, d.copies)).c_str(), d.gib_s(), d.percent_of_contiguous());
  return line;
}

std::string PagedFigure::block_lines(const CaseResult& r) const {
  std::string s = format_paged_line(*this, r);
  for (const PagedDirection& d : directions) s += format_paged_direction_line(d);
  return s;
}

std::vector<Json> PagedFigure::csv_rows(const CaseResult& r) const {
  if (!compared) return {};
  Json j = csv_stage_row(r, "contiguous", contiguous, r.bytes);
  j["time_label"] = contiguous.name;
  std::vector<Json> rows = {j};
  for (const PagedDirection& d : directions) {
    Json row = csv_stage_row(r, lower(d.name) + "_contiguous", d.contiguous, d.bytes);
    row["time_label"] = contiguous.name;
    row["copies_per_iteration"] = d.copies;
    rows.push_back(row);
  }
  return rows;
}

namespace {

Json directions_wire(const std::vector<PagedDirection>& v) {
  Json a = Json::array();
  for (const PagedDirection& d : v) a.push_back(direction_wire(d));
  return a;
}

}  // namespace

Json PagedFigure::encode() const {
  return {{"table", table},
          {"option", option},
          {"pool_blocks", pool_blocks},
          {"compared", compared},
          {"contiguous", stage_wire(contiguous)},
          {"directions", directions_wire(directions)}};
}

namespace {

std::shared_ptr<const ResultExtra> decode_paged(const Json& j) {
  auto f = std::make_shared<PagedFigure>();
  f->table = j.at("table").get<std::string>();
  f->option = j.value("option", std::string("--block-table"));
  f->pool_blocks = j.at("pool_blocks");
  f->compared = j.at("compared");
  f->contiguous = stage_from_wire(j.at("contiguous"));
  if (j.contains("directions"))
    for (const Json& d : j.at("directions")) f->directions.push_back(direction_from_wire(d));
  return f;
}

}  // namespace

std::shared_ptr<const ResultExtra> PagedFigure::combine(const std::vector<const ResultExtra*>& parts,
                                                        const CombineScope&, const CaseResult& combined) const {
  auto f = std::make_shared<PagedFigure>(*this);
  if (!compared) return f;
  std::vector<const Stage*> stages;
  for (const PagedFigure* p : extra_parts<PagedFigure>(parts)) stages.push_back(&p->contiguous);
  f->contiguous = slowest_per_iteration(stages, combined.name);
  // Each direction: every part's chunks and bytes, its passes the slowest part's.
  for (size_t i = 0; i < f->directions.size(); ++i) {
    PagedDirection& d = f->directions[i];
    std::vector<const Stage*> paged, contiguous;
    d.copies = d.bytes = 0;
    for (const PagedFigure* p : extra_parts<PagedFigure>(parts)) {
      if (i >= p->directions.size()) continue;
      d.copies += p->directions[i].copies;
      d.bytes += p->directions[i].bytes;
      paged.push_back(&p->directions[i].paged);
      contiguous.push_back(&p->directions[i].contiguous);
    }
    d.paged = slowest_per_iteration(paged, combined.name);
    d.contiguous = slowest_per_iteration(contiguous, combined.name);
  }
  return f;
}

void register_paged_result() { register_extra_decoder(PagedFigure::kKey, &decode_paged); }

}  // namespace ds
