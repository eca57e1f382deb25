// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/internal/binding_policy.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

TEST(BindingPolicyTest, StagedWhenAsked) {
  BindingFacts f;
  f.scan_available = true;
  BindingChoice c = ChooseBinding(Binding::kStaged, f);
  EXPECT_EQ(c.binding, Binding::kStaged);
  EXPECT_EQ(c.reason, "binding=staged in the method's flags");
}

TEST(BindingPolicyTest, WithoutTheScanEveryGraphIsStagedAndSaysWhy) {
  for (Binding b : {Binding::kAuto, Binding::kDirect}) {
    BindingChoice c = ChooseBinding(b, BindingFacts{});
    EXPECT_EQ(c.binding, Binding::kStaged);
    EXPECT_EQ(c.reason.rfind("binding=" + std::string(BindingName(b)) + ": staged, because this build has no "
                                                                        "reference scan",
                             0),
              0u)
        << c.reason;
  }
}

TEST(BindingPolicyTest, UnsafeGraphsAreStagedWithTheScansReason) {
  BindingFacts f;
  f.scan_available = true;
  f.unsafe_reason = "input 0 and input 1 overlap";
  BindingChoice c = ChooseBinding(Binding::kDirect, f);
  EXPECT_EQ(c.binding, Binding::kStaged);
  EXPECT_EQ(c.reason, "binding=direct: staged, because input 0 and input 1 overlap");
}

TEST(BindingPolicyTest, AutoStagesManyRewritesWithoutRecurringAddresses) {
  BindingFacts f;
  f.scan_available = true;
  f.rewrite_nodes = kAutoMaxRewriteNodes + 1;
  EXPECT_EQ(ChooseBinding(Binding::kAuto, f).binding, Binding::kStaged);
  EXPECT_EQ(ChooseBinding(Binding::kDirect, f).binding, Binding::kDirect);
  f.addresses_recur = true;
  EXPECT_EQ(ChooseBinding(Binding::kAuto, f).binding, Binding::kDirect);
  f.addresses_recur = false;
  f.rewrite_nodes = kAutoMaxRewriteNodes;
  EXPECT_EQ(ChooseBinding(Binding::kAuto, f).binding, Binding::kDirect);
}

TEST(BindingPolicyTest, AutoStagesAMethodThatKeepsRecapturing) {
  BindingFacts f;
  f.scan_available = true;
  f.recaptures = kAutoMaxRecapturesForDirect;
  EXPECT_EQ(ChooseBinding(Binding::kAuto, f).binding, Binding::kDirect);
  f.recaptures = kAutoMaxRecapturesForDirect + 1;
  BindingChoice c = ChooseBinding(Binding::kAuto, f);
  EXPECT_EQ(c.binding, Binding::kStaged);
  EXPECT_EQ(c.reason, "binding=auto: staged, because the method has recaptured 9 times (more than 8), and a direct "
                      "capture costs more than its replays save");
  EXPECT_EQ(ChooseBinding(Binding::kDirect, f).binding, Binding::kDirect);
}

TEST(BindingPolicyTest, BigGraphsKeepOneExecutable) {
  EXPECT_EQ(MaxExecVariants(0), kMaxExecVariants);
  EXPECT_EQ(MaxExecVariants(2), kMaxExecVariants);
  EXPECT_EQ(MaxExecVariants(256), 64u);
  EXPECT_EQ(MaxExecVariants(257), 63u);
  EXPECT_EQ(MaxExecVariants(4096), 4u);
  EXPECT_EQ(MaxExecVariants(16385), 1u);
  EXPECT_EQ(MaxExecVariants(100000), 1u);
}

TEST(BindingPolicyTest, AddressesRecurWhenFewReplaysRewrite) {
  EXPECT_TRUE(AddressesRecur(kAutoRejudgeAfter, 4));   // four buffer sets, rotated
  EXPECT_TRUE(AddressesRecur(kAutoRejudgeAfter, 65));  // 64 sets four times, and the probe's
  EXPECT_TRUE(AddressesRecur(300, 100));
  EXPECT_FALSE(AddressesRecur(300, 101));
  EXPECT_FALSE(AddressesRecur(256, 256));  // fresh buffers every call
}

}  // namespace
}  // namespace encore
