#include <gtest/gtest.h>

#include "core/stats.h"

using namespace ds;

TEST(NearestRank, DefinitionOnSmallSets) {
  // Pq = the ceil(q*N)-th smallest.
  std::vector<int64_t> v = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(v, 0.5), 50);   // ceil(5) = 5th
  EXPECT_EQ(nearest_rank(v, 0.9), 90);   // ceil(9) = 9th
  std::vector<int64_t> w = {1, 2, 3};
  EXPECT_EQ(nearest_rank(w, 0.5), 2);    // ceil(1.5) = 2nd
  EXPECT_EQ(nearest_rank(w, 0.9), 3);    // ceil(2.7) = 3rd
  std::vector<int64_t> one = {7};
  EXPECT_EQ(nearest_rank(one, 0.5), 7);
  EXPECT_EQ(nearest_rank(one, 0.9), 7);
}

TEST(ComputeStats, UnsortedInput) {
  Stats s = compute_stats({5, 1, 4, 2, 3});
  EXPECT_EQ(s.min, 1);
  EXPECT_EQ(s.max, 5);
  EXPECT_DOUBLE_EQ(s.avg, 3.0);
  EXPECT_EQ(s.p50, 3);  // ceil(2.5) = 3rd
  EXPECT_EQ(s.p90, 5);  // ceil(4.5) = 5th
  EXPECT_EQ(s.samples, 5u);
}

TEST(ComputeStats, HundredSamples) {
  std::vector<int64_t> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  Stats s = compute_stats(v);
  EXPECT_EQ(s.p50, 50);
  EXPECT_EQ(s.p90, 90);
  EXPECT_DOUBLE_EQ(s.avg, 50.5);
}

TEST(ComputeStats, TailsByNearestRank) {
  // 2000 samples 1..2000: P99 = the 1980th, P999 = the 1998th smallest.
  std::vector<int64_t> v;
  for (int i = 2000; i >= 1; --i) v.push_back(i);
  Stats s = compute_stats(v);
  EXPECT_EQ(s.p99, 1980);
  EXPECT_EQ(s.p999, 1998);
  // Fewer samples than the tail needs: the largest one.
  Stats few = compute_stats({3, 1, 2});
  EXPECT_EQ(few.p99, 3);
  EXPECT_EQ(few.p999, 3);
}
