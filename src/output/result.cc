#include "output/result.h"

#include "core/units.h"

namespace ds {

const Stats& CaseResult::stage(const std::string& name) const {
  static const Stats none;
  for (const Stage& s : stages)
    if (s.name == name) return s.ns;
  return none;
}

double CaseResult::bandwidth_gib_s() const { return ds::bandwidth_gib_s(bytes, 1, stage(measured).avg * 1e-9); }

double CaseResult::bandwidth_gb_s() const { return ds::bandwidth_gb_s(bytes, 1, stage(measured).avg * 1e-9); }

double CaseResult::wall_bandwidth_gib_s() const { return ds::bandwidth_gib_s(bytes, 1, stage("Wall").avg * 1e-9); }

double CaseResult::mean_chunk_bytes() const {
  return copies ? static_cast<double>(bytes) / static_cast<double>(copies) : 0.0;
}

std::string ranks_text(const std::vector<int>& ranks) {
  if (ranks.size() == 1) return "rank " + std::to_string(ranks[0]);
  bool contiguous = !ranks.empty();
  for (size_t i = 1; i < ranks.size(); ++i) contiguous = contiguous && ranks[i] == ranks[i - 1] + 1;
  if (contiguous) return "ranks " + std::to_string(ranks.front()) + "-" + std::to_string(ranks.back());
  std::string t = "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) t += (i ? "," : "") + std::to_string(ranks[i]);
  return t;
}

}  // namespace ds
