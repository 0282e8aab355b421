#include <gtest/gtest.h>

#include <vector>

#include "memory/pattern.h"

using namespace ds;

TEST(Pattern, FillThenCheckPasses) {
  for (size_t bytes : {1u, 7u, 8u, 13u, 4096u, 4099u}) {
    std::vector<unsigned char> buf(bytes);
    pattern_fill(buf.data(), bytes, pattern_key(2, 5));
    EXPECT_EQ(pattern_check(buf.data(), bytes, pattern_key(2, 5)), -1) << bytes;
  }
}

TEST(Pattern, ReportsFirstDifferingOffset) {
  std::vector<unsigned char> buf(4096);
  pattern_fill(buf.data(), buf.size(), pattern_key(0, 1));
  buf[1234] ^= 0x40;
  buf[3000] ^= 0x01;
  EXPECT_EQ(pattern_check(buf.data(), buf.size(), pattern_key(0, 1)), 1234);
}

TEST(Pattern, BlocksAndDevicesDiffer) {
  std::vector<unsigned char> buf(256);
  pattern_fill(buf.data(), buf.size(), pattern_key(0, 1));
  EXPECT_GE(pattern_check(buf.data(), buf.size(), pattern_key(0, 2)), 0);  // other block
  EXPECT_GE(pattern_check(buf.data(), buf.size(), pattern_key(1, 1)), 0);  // other device
  std::vector<unsigned char> zero(256, 0);
  EXPECT_EQ(pattern_check(zero.data(), zero.size(), pattern_key(0, 1)), 0);
}
