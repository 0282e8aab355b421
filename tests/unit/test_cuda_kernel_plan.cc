// How kernel_copy splits a copy for ds_copy_kernel (copy_kernel_plan.h): the
// widest unit at which dst + head and src + head are both aligned, with
// head < width; ds_gather_kernel's descriptors (the same plan per copy) and its
// grid. And how many hardware queues the start gate's bound counts
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

// A gather descriptor is a copy's own plan, five words as the kernel reads them.
TEST(CudaGatherPlan, DescriptorCarriesTheCopyAndItsPlan) {
  const auto d = ds::plan_gather_descriptor(0x10003, 0x7f0003, 4097);
  EXPECT_EQ(d.dst, 0x10003u);
  EXPECT_EQ(d.src, 0x7f0003u);
  EXPECT_EQ(d.bytes, 4097u);
  EXPECT_EQ(d.width, 16u);
  EXPECT_EQ(d.head, 13u);
  EXPECT_EQ(ds::gather_units(d), (4097u - 13u) / 16u);
  const auto odd = ds::plan_gather_descriptor(0x1001, 0x2000, 5);
  EXPECT_EQ(odd.width, 1u);
  EXPECT_EQ(ds::gather_units(odd), 5u);
  // A head longer than the copy: no units.
  EXPECT_EQ(ds::gather_units(ds::plan_gather_descriptor(0x1001, 0x2001, 3)), 0u);
}

// Columns over the descriptors (at most the block budget), blocks per column for
// the largest descriptor's units within what the budget leaves; one each at least.
TEST(CudaGatherPlan, GridCoversTheTableWithinTheBlockBudget) {
  struct Want {
    uint64_t count, units;
    unsigned max_blocks, x, y;
  };
  const Want cases[] = {
      {21, 256, 32, 21, 1},       // a column each, one block enough for 256 units
      {1, 1 << 20, 32, 1, 32},    // one big chunk: every block on it
      {4, 4096, 32, 4, 8},        // 16 blocks wanted, 8 left per column
      {100000, 64, 32, 32, 1},    // more descriptors than blocks: columns stride
      {3, 0, 32, 3, 1},           // empty chunks still get a block
      {0, 0, 32, 1, 1},
      {5, 1000, 0, 1, 1},         // no budget reported: one block
  };
  for (const Want& w : cases) {
    const auto g = ds::plan_gather_grid(w.count, w.units, 256, w.max_blocks);
    EXPECT_EQ(g.x, w.x) << w.count << " " << w.units;
    EXPECT_EQ(g.y, w.y) << w.count << " " << w.units;
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
