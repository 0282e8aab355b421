// Statistics over measured iterations: nearest-rank percentiles (Pq = the
// ceil(q*N)-th smallest sample).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ds {

struct Stats {
  int64_t min = 0, max = 0, p50 = 0, p90 = 0;  // nanoseconds
  int64_t p99 = 0, p999 = 0;                   // the tails (JSON and CSV only)
  double avg = 0;                              // nanoseconds
  size_t samples = 0;
};

// Pq = the ceil(q*N)-th smallest sample (1-based); q in (0, 1].
int64_t nearest_rank(const std::vector<int64_t>& sorted, double q);

Stats compute_stats(std::vector<int64_t> samples_ns);

}  // namespace ds
