// How kernel_copy splits a copy for ds_copy_kernel (copy_kernel_plan.h): the
// widest unit at which dst + head and src + head are both aligned, with
// head < width.
#include <gtest/gtest.h>

#include "backends/cuda/copy_kernel_plan.h"

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
