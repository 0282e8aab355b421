#include "output/result.h"

#include <algorithm>

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

void CaseResult::set_load_figures() {
  if (!load) return;
  LoadStages& st = *load;
  st.disk_gib_s = ds::bandwidth_gib_s(bytes, 1, st.disk_alone.ns.avg * 1e-9);
  st.copy_gib_s = ds::bandwidth_gib_s(bytes, 1, st.copy_alone.ns.avg * 1e-9);
  st.pipelined_gib_s = bandwidth_gib_s();
  const double slower = std::min(st.disk_gib_s, st.copy_gib_s);
  st.percent_of_slower = slower > 0 ? 100.0 * st.pipelined_gib_s / slower : 0.0;
  st.bottleneck = stage_verdict(st.disk_gib_s, st.copy_gib_s, st.pipelined_gib_s);
}

std::string stage_verdict(double disk, double copy, double pipelined) {
  const double slower = std::min(disk, copy);
  if (slower > 0 && pipelined >= kStageVerdictFraction * slower) return disk <= copy ? "disk" : "copy";
  return "neither (overlap lost)";
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
