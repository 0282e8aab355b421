#include "cases/table_result.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace ds {

namespace {

// A side in JSON: null when contiguous; else the table, its kind, seed (random) or
// file, its pool and blocks.
Json side_json(const TableSide& s) {
  if (s.label.empty()) return nullptr;
  Json j;
  j["table"] = s.label;
  if (s.label == "sequential") {
    j["kind"] = "sequential";
  } else if (s.label.rfind("random:", 0) == 0) {
    j["kind"] = "random";
    j["seed"] = std::stoull(s.label.substr(7));
  } else {
    j["kind"] = "file";
    j["file"] = s.label;
  }
  j["pool_blocks"] = s.pool;
  j["blocks"] = s.blocks;
  return j;
}

std::string side_text(const TableSide& s) {
  if (s.label.empty()) return "contiguous per block";
  return s.label + ", " + std::to_string(s.blocks) + " blocks in a pool of " + std::to_string(s.pool) + " slots";
}

Json encode_side(const TableSide& s) { return {{"label", s.label}, {"pool", s.pool}, {"blocks", s.blocks}}; }

TableSide decode_side(const Json& j) { return {j.at("label"), j.at("pool"), j.at("blocks")}; }

std::shared_ptr<const ResultExtra> decode_table(const Json& j) {
  TableShape t;
  t.device = decode_side(j.at("device"));
  t.host = decode_side(j.at("host"));
  return std::make_shared<const TableShape>(t);
}

bool same(const TableSide& a, const TableSide& b) { return a.label == b.label && a.pool == b.pool && a.blocks == b.blocks; }

}  // namespace

void TableShape::add_json(Json& result, const CaseResult&) const {
  result["block_table"] = {{"device", side_json(device)}, {"host", side_json(host)}};
}

std::string format_table_line(const TableShape& t) {
  return "  Block table: device " + side_text(t.device) + "; host " + side_text(t.host) + "\n";
}

std::string TableShape::block_lines(const CaseResult&) const { return format_table_line(*this); }

Json TableShape::encode() const { return {{"device", encode_side(device)}, {"host", encode_side(host)}}; }

// Across ranks: every rank places its cards by the same tables (the options are the
// run's); parts that differ did not measure the same thing.
std::shared_ptr<const ResultExtra> TableShape::combine(const std::vector<const ResultExtra*>& parts,
                                                       const CombineScope&, const CaseResult&) const {
  for (const TableShape* p : extra_parts<TableShape>(parts))
    if (!same(p->device, device) || !same(p->host, host))
      throw RunError("the ranks' results placed their blocks by different block tables");
  return std::make_shared<const TableShape>(*this);
}

void put_tables(CaseResult& r, const BlockTable& device, const BlockTable& host) {
  if (device.slots.empty() && host.slots.empty()) return;
  TableShape t;
  t.device = TableSide::of(device);
  t.host = TableSide::of(host);
  r.extras.put(t);
}

void register_table_result() { register_extra_decoder(TableShape::kKey, &decode_table); }

PagedFigure paged_figure_head(const BlockTable& device, const BlockTable& host, bool compared) {
  PagedFigure f;
  const bool on_device = !device.slots.empty();
  const BlockTable& t = on_device ? device : host;
  f.option = on_device ? "--block-table" : "--host-block-table";
  f.table = t.label;
  f.pool_blocks = t.pool;
  f.compared = compared;
  f.contiguous.name = "Contiguous";
  return f;
}

}  // namespace ds
