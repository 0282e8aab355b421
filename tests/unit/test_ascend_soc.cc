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

// Host memory not from aclrtMallocHost (odirect, shm) may be registered only on
// kernels newer than 5.10 (CANN docs "aclrtHostRegister" / "aclrtHostRegisterV2").
TEST(AscendKernel, RegistrationOfForeignMemoryNeedsAKernelAbove510) {
  using ds::acl::foreign_registration_refused_reason;
  for (const char* old : {"5.10.0-136.12.0.86.h1.aarch64", "5.10", "4.19.90-2107.6.0.0100.oe1.bclinux.aarch64",
                          "3.10.0-1160.el7.x86_64", "5.4.0-42-generic"}) {
    const std::string why = foreign_registration_refused_reason(old);
    EXPECT_NE(why.find(std::string("kernel ") + old + " is 5.10 or older"), std::string::npos) << old << ": " << why;
    EXPECT_NE(why.find("aclrtMallocHost"), std::string::npos) << why;
  }
  for (const char* ok : {"5.11.0", "5.15.0-91-generic", "6.6.0-28.0.0.34.oe2403.aarch64", "6.18.44-fc-v595"})
    EXPECT_EQ(foreign_registration_refused_reason(ok), "") << ok;
  EXPECT_EQ(foreign_registration_refused_reason(""), "") << "unknown: left to the runtime";
  EXPECT_EQ(foreign_registration_refused_reason(nullptr), "");
}
