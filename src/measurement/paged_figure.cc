#include "measurement/paged_figure.h"

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

std::string PagedFigure::block_lines(const CaseResult& r) const { return format_paged_line(*this, r); }

std::vector<Json> PagedFigure::csv_rows(const CaseResult& r) const {
  if (!compared) return {};
  Json j = csv_stage_row(r, "contiguous", contiguous, r.bytes);
  j["time_label"] = contiguous.name;
  return {j};
}

Json PagedFigure::encode() const {
  return {{"table", table},
          {"option", option},
          {"pool_blocks", pool_blocks},
          {"compared", compared},
          {"contiguous", stage_wire(contiguous)}};
}

namespace {

std::shared_ptr<const ResultExtra> decode_paged(const Json& j) {
  auto f = std::make_shared<PagedFigure>();
  f->table = j.at("table").get<std::string>();
  f->option = j.value("option", std::string("--block-table"));
  f->pool_blocks = j.at("pool_blocks");
  f->compared = j.at("compared");
  f->contiguous = stage_from_wire(j.at("contiguous"));
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
  return f;
}

void register_paged_result() { register_extra_decoder(PagedFigure::kKey, &decode_paged); }

}  // namespace ds
