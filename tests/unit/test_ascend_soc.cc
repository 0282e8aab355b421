// Which SoC names the ascend backend treats as having FFTS+ (the direct path).
#include <gtest/gtest.h>

#include "backends/ascend/acl_library.h"

using ds::acl::ffts_unsupported_reason;

TEST(AscendSoc, AtlasA2AndA3HaveFfts) {
  for (const char* soc : {"Ascend910B1", "Ascend910B2", "Ascend910B2C", "Ascend910B3", "Ascend910B4",
                          "Ascend910B4_1", "Ascend910_9391", "Ascend910_9382", "Ascend910_9362"})
    EXPECT_EQ(ffts_unsupported_reason(soc), "") << soc;
}

TEST(AscendSoc, OlderChipsAndUnknownNamesDoNot) {
  for (const char* soc : {"Ascend910A", "Ascend910B", "Ascend910ProB", "Ascend910PremiumA", "Ascend310P3",
                          "Ascend310B1", "Ascend910_95"}) {
    const std::string why = ffts_unsupported_reason(soc);
    EXPECT_NE(why.find(std::string("SoC ") + soc + " has no FFTS+"), std::string::npos) << soc << ": " << why;
  }
  EXPECT_NE(ffts_unsupported_reason(nullptr), "");
  EXPECT_NE(ffts_unsupported_reason(""), "");
}
