#include <gtest/gtest.h>

#include "core/sysinfo.h"

#include "core/error.h"
#include "core/units.h"

using namespace ds;

TEST(ParseSize, SuffixesAreBinaryEitherCase) {
  EXPECT_EQ(parse_size("-s", "16K"), 16384u);
  EXPECT_EQ(parse_size("-s", "16k"), 16384u);
  EXPECT_EQ(parse_size("-s", "512M"), 512ull << 20);
  EXPECT_EQ(parse_size("-s", "1m"), 1ull << 20);
  EXPECT_EQ(parse_size("-s", "2G"), 2ull << 30);
  EXPECT_EQ(parse_size("-s", "2g"), 2ull << 30);
}

TEST(ParseSize, PlainBytes) {
  EXPECT_EQ(parse_size("-s", "32768"), 32768u);
  EXPECT_EQ(parse_size("-s", "1"), 1u);
}

TEST(ParseSize, RejectsBadInput) {
  EXPECT_THROW(parse_size("-s", "16Q"), UsageError);
  EXPECT_THROW(parse_size("-s", ""), UsageError);
  EXPECT_THROW(parse_size("-s", "K"), UsageError);
  EXPECT_THROW(parse_size("-s", "0"), UsageError);
  EXPECT_THROW(parse_size("-s", "-4K"), UsageError);
  EXPECT_THROW(parse_size("-s", "1.5M"), UsageError);
  EXPECT_THROW(parse_size("-s", "16KB"), UsageError);
}

TEST(ParseSize, RejectsOverflow) {
  EXPECT_THROW(parse_size("-s", "18446744073709551616"), UsageError);  // 2^64
  EXPECT_THROW(parse_size("-s", "17179869184G"), UsageError);          // 2^34 * 2^30
  EXPECT_EQ(parse_size("-s", "8589934591G"), 8589934591ull << 30);     // just fits
}

TEST(ParseSize, ErrorNamesTheOption) {
  try {
    parse_size("-s", "16Q");
    FAIL();
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("-s"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("16Q"), std::string::npos);
  }
}

TEST(ParseCount, Bounds) {
  EXPECT_EQ(parse_count("-n", "512", 1), 512u);
  EXPECT_EQ(parse_count("-f", "0", 0), 0u);
  EXPECT_THROW(parse_count("-n", "0", 1), UsageError);
  EXPECT_THROW(parse_count("-n", "-1", 1), UsageError);
  EXPECT_THROW(parse_count("-n", "abc", 1), UsageError);
  EXPECT_THROW(parse_count("-n", "", 1), UsageError);
  EXPECT_THROW(parse_count("-n", "99999999999999999999999", 1), UsageError);
}

TEST(CheckedMul, Overflow) {
  EXPECT_EQ(checked_mul(1ull << 31, 1ull << 32, "x"), 1ull << 63);
  EXPECT_THROW(checked_mul(1ull << 32, 1ull << 32, "x"), UsageError);
}

TEST(Bandwidth, ReproducesTheSeedSamples) {
  // GQA: 16 KiB x 4096 blocks, Copy.avg 3736 us -> 16.729 "GB/s" (binary).
  EXPECT_NEAR(bandwidth_gib_s(16 * 1024, 4096, 3736e-6), 16.729, 0.0005);
  // MLA: 16 KiB x 4096 blocks, Copy.avg 4471 us -> 13.979.
  EXPECT_NEAR(bandwidth_gib_s(16 * 1024, 4096, 4471e-6), 13.979, 0.0005);
  // The decimal figure is 2^30/10^9 times larger.
  EXPECT_NEAR(bandwidth_gb_s(16 * 1024, 4096, 3736e-6), 16.729 * 1.073741824, 0.001);
}

TEST(FormatKib, WholeAndFractional) {
  EXPECT_EQ(format_kib(16384), "16");
  EXPECT_EQ(format_kib(512ull << 20), "524288");
  EXPECT_EQ(format_kib(1000), "0.977");
}

// A cgroup v2 cpu.max: "QUOTA PERIOD" allows QUOTA/PERIOD CPUs' worth of time,
// exactly (1.5 is 1.5, not 2); "max" or anything unreadable sets no limit (0).
TEST(Sysinfo, CpuMaxQuota) {
  EXPECT_EQ(ds::cpu_max_quota("max 100000"), 0);
  EXPECT_DOUBLE_EQ(ds::cpu_max_quota("200000 100000"), 2);
  EXPECT_DOUBLE_EQ(ds::cpu_max_quota("150000 100000"), 1.5);
  EXPECT_DOUBLE_EQ(ds::cpu_max_quota("50000 100000"), 0.5);
  EXPECT_EQ(ds::cpu_max_quota("-1 100000"), 0);  // cgroup v1's "no quota", as cfs_quota_us says it
  EXPECT_EQ(ds::cpu_max_quota(""), 0);
  EXPECT_EQ(ds::cpu_max_quota("abc 100000"), 0);
  EXPECT_GE(ds::usable_cpus(), 1);
  EXPECT_GT(ds::usable_cpu_bound().cpus, 0);
}

// The affinity capped by the quota, and which bound applied: a container with
// --cpus=4 on a 64-core host has 4, by its quota; --cpus=1.5 has 1.5.
TEST(Sysinfo, CpuBoundIsTheAffinityCappedByTheQuota) {
  ds::CpuBound b = ds::cpu_bound(64, 4);
  EXPECT_DOUBLE_EQ(b.cpus, 4);
  EXPECT_EQ(b.bound, "cgroup quota");
  b = ds::cpu_bound(64, 1.5);
  EXPECT_DOUBLE_EQ(b.cpus, 1.5);
  b = ds::cpu_bound(8, 16);
  EXPECT_DOUBLE_EQ(b.cpus, 8);
  EXPECT_EQ(b.bound, "affinity");
  b = ds::cpu_bound(8, 0);
  EXPECT_DOUBLE_EQ(b.cpus, 8);
  EXPECT_EQ(b.bound, "affinity");
}
