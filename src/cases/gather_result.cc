#include "cases/gather_result.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "measurement/paged_figure.h"

namespace ds {

void GatherShape::add_json(Json& result, const CaseResult& r) const {
  result["gather"] = {{"kernel", "ds_gather_kernel"},
                      {"chunks_per_iteration", r.copies},
                      {"mean_chunk_bytes", r.mean_chunk_bytes()},
                      {"launches_per_iteration", launches},
                      {"descriptor_table_bytes", table_bytes}};
}

std::string format_gather_line(const GatherShape& g, const CaseResult& r) {
  const std::string size = format_chunk_bytes(r.mean_chunk_bytes());
  char line[256];
  std::snprintf(line, sizeof line,
                "  Gather: %llu chunks of %s B (mean) per iteration in %llu launch%s of ds_gather_kernel, from a "
                "%llu B descriptor table built at setup\n",
                static_cast<unsigned long long>(r.copies), size.c_str(), static_cast<unsigned long long>(g.launches),
                g.launches == 1 ? "" : "es", static_cast<unsigned long long>(g.table_bytes));
  return line;
}

std::string GatherShape::block_lines(const CaseResult& r) const { return format_gather_line(*this, r); }

Json GatherShape::encode() const { return {{"launches", launches}, {"table_bytes", table_bytes}}; }

namespace {

std::shared_ptr<const ResultExtra> decode_gather(const Json& j) {
  GatherShape g;
  g.launches = j.at("launches");
  g.table_bytes = j.at("table_bytes");
  return std::make_shared<const GatherShape>(g);
}

}  // namespace

// Across ranks: every part's launches and tables; the chunks and their mean from
// the combined result's copies and bytes.
std::shared_ptr<const ResultExtra> GatherShape::combine(const std::vector<const ResultExtra*>& parts,
                                                        const CombineScope&, const CaseResult&) const {
  GatherShape g;
  for (const GatherShape* p : extra_parts<GatherShape>(parts)) {
    g.launches += p->launches;
    g.table_bytes += p->table_bytes;
  }
  return std::make_shared<const GatherShape>(g);
}

void register_gather_result() { register_extra_decoder(GatherShape::kKey, &decode_gather); }

}  // namespace ds
