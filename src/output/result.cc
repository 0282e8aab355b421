#include "output/result.h"

#include "core/units.h"

namespace ds {

double CaseResult::bandwidth_gib_s() const {
  return ds::bandwidth_gib_s(block_bytes, count, copy.avg * 1e-9);
}

double CaseResult::bandwidth_gb_s() const {
  return ds::bandwidth_gb_s(block_bytes, count, copy.avg * 1e-9);
}

double CaseResult::wall_bandwidth_gib_s() const {
  return ds::bandwidth_gib_s(block_bytes, count, wall.avg * 1e-9);
}

}  // namespace ds
