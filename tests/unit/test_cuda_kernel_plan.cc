// How kernel_copy splits a copy for ds_copy_kernel (copy_kernel_plan.h): the
// widest unit at which dst + head and src + head are both aligned, with
// head < width. And how many hardware queues the start gate's bound counts
// (cuda_connections.h).
#include <gtest/gtest.h>

#include "backends/cuda/copy_kernel_plan.h"
#include "backends/cuda/cuda_connections.h"

using ds::plan_kernel_copy;

TEST(CudaKernelPlan, EqualMisalignmentGets16ByteUnitsAfterAHead) {
  for (uint64_t mis = 0; mis < 16; ++mis) {
    const uint64_t dst = 0x10000 + mis, src = 0x7f0000 + mis;
    const auto p = plan_kernel_copy(dst, src);
    EXPECT_EQ(p.width, 16u) << mis;
    EXPECT_EQ(p.head, (16 - mis) % 16) << mis;
    EXPECT_EQ((dst + p.head) % 16, 0u);
    EXPECT_EQ((src + p.head) % 16, 0u);
  }
}

TEST(CudaKernelPlan, DifferentMisalignmentFallsBackToTheWidestThatWorks) {
  struct Want {
    uint64_t dst, src, width, head;
  };
  const Want cases[] = {
      {0x1000, 0x2008, 8, 0},  // equal mod 8, not mod 16
      {0x1003, 0x200b, 8, 5},  // 3 and 11: equal mod 8, a head of 5 to reach 8
      {0x1004, 0x2000, 4, 0},  // equal mod 4
      {0x1006, 0x2002, 4, 2},
      {0x1002, 0x2000, 2, 0},  // equal mod 2
      {0x1001, 0x2003, 2, 1},
      {0x1001, 0x2000, 1, 0},  // odd against even: bytes
      {0x1000, 0x200f, 1, 0},
  };
  for (const Want& w : cases) {
    const auto p = plan_kernel_copy(w.dst, w.src);
    EXPECT_EQ(p.width, w.width) << std::hex << w.dst << " " << w.src;
    EXPECT_EQ(p.head, w.head) << std::hex << w.dst << " " << w.src;
    EXPECT_LT(p.head, p.width);
    EXPECT_EQ((w.dst + p.head) % p.width, 0u);
    EXPECT_EQ((w.src + p.head) % p.width, 0u);
  }
}

// CUDA_DEVICE_MAX_CONNECTIONS as the gate's bound reads it: the driver's 8 when
// unset, 1 to 32; what the driver would not take counts as the tightest bound
// (1) or its most (32), and the message says so.
TEST(CudaConnections, ReadAsTheDriverTakesIt) {
  EXPECT_EQ(ds::cuda_connections(nullptr).count, 8);
  EXPECT_EQ(ds::cuda_connections("").count, 8);
  EXPECT_EQ(ds::cuda_connections(nullptr).setting,
            "CUDA_DEVICE_MAX_CONNECTIONS unset: the driver's default of 8; it takes 1 to 32");
  EXPECT_EQ(ds::cuda_connections("1").count, 1);
  EXPECT_EQ(ds::cuda_connections("32").count, 32);
  EXPECT_EQ(ds::cuda_connections("4").setting, "CUDA_DEVICE_MAX_CONNECTIONS=4; it takes 1 to 32");
  EXPECT_EQ(ds::cuda_connections("64").count, 32);
  EXPECT_EQ(ds::cuda_connections("64").setting, "CUDA_DEVICE_MAX_CONNECTIONS=64, taken as 32; it takes 1 to 32");
  for (const char* bad : {"0", "-3", "eight", "8x", "99999999999999999999"}) {
    EXPECT_EQ(ds::cuda_connections(bad).count, bad[0] == '9' ? 32 : 1) << bad;
    EXPECT_NE(ds::cuda_connections(bad).setting.find(", taken as "), std::string::npos) << bad;
  }
}
