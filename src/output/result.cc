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

}  // namespace ds
