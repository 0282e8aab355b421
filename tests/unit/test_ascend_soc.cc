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

// Host memory not from aclrtMallocHost (odirect, shm) may be registered as it is only
// on kernels newer than 5.10 (CANN docs "aclrtHostRegister" / "aclrtHostRegisterV2");
// on older ones its pages are locked first, as UCM does.
TEST(AscendKernel, KernelsUpTo510NeedLockedPagesForRegistration) {
  using ds::acl::registration_needs_locked_pages;
  for (const char* old : {"5.10.0-136.12.0.86.h1.aarch64", "5.10", "4.19.90-2107.6.0.0100.oe1.bclinux.aarch64",
                          "3.10.0-1160.el7.x86_64", "5.4.0-42-generic"})
    EXPECT_TRUE(registration_needs_locked_pages(old)) << old;
  for (const char* ok : {"5.11.0", "5.15.0-91-generic", "6.6.0-28.0.0.34.oe2403.aarch64", "6.18.44-fc-v595"})
    EXPECT_FALSE(registration_needs_locked_pages(ok)) << ok;
  EXPECT_FALSE(registration_needs_locked_pages("")) << "unknown: left to the runtime";
  EXPECT_FALSE(registration_needs_locked_pages(nullptr));
  EXPECT_FALSE(registration_needs_locked_pages("linux")) << "no version number: left to the runtime";
}
