#include "core/stats.h"

#include <algorithm>
#include <cmath>

namespace ds {

int64_t nearest_rank(const std::vector<int64_t>& sorted, double q) {
  if (sorted.empty()) return 0;
  // Guard against q*N landing a hair above an integer through rounding.
  size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size()) - 1e-9));
  rank = std::max<size_t>(1, std::min(rank, sorted.size()));
  return sorted[rank - 1];
}

Stats compute_stats(std::vector<int64_t> samples) {
  Stats s;
  s.samples = samples.size();
  if (samples.empty()) return s;
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  long double sum = 0;
  for (int64_t v : samples) sum += v;
  s.avg = static_cast<double>(sum / samples.size());
  s.p50 = nearest_rank(samples, 0.5);
  s.p90 = nearest_rank(samples, 0.9);
  s.p99 = nearest_rank(samples, 0.99);
  s.p999 = nearest_rank(samples, 0.999);
  return s;
}

}  // namespace ds
