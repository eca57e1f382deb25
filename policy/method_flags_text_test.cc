// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/method_flags_text.h"

#include <gtest/gtest.h>

#include <string>

namespace encore {
namespace {

TEST(MethodFlagsTextTest, AppliesKeysOverTheBase) {
  MethodFlags base;
  base.max_graphs = 9;
  auto f = ApplyMethodFlagsText("warmup=2,on_new_shape=recapture", base);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->warmup_calls, 2);
  EXPECT_EQ(f->on_new_shape, ShapePolicy::kRecapture);
  EXPECT_EQ(f->max_graphs, 9);  // not in the text: the base's
}

TEST(MethodFlagsTextTest, EmptyTextIsTheBase) {
  MethodFlags base;
  base.warmup_calls = 5;
  auto f = ApplyMethodFlagsText("  ", base);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(*f, base);
}

TEST(MethodFlagsTextTest, QuotesTheBadToken) {
  auto f = ApplyMethodFlagsText("warmup=2,colour=red", MethodFlags{});
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(f.status().message()).find("'colour=red'"), std::string::npos) << f.status();
}

TEST(MethodFlagsTextTest, RefusesAMethodName) {
  auto f = ApplyMethodFlagsText("forward:warmup=2", MethodFlags{});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(std::string(f.status().message()).find("without the method's name"), std::string::npos) << f.status();
  EXPECT_FALSE(ApplyMethodFlagsText("warmup=2;graphs=off", MethodFlags{}).ok());
}

TEST(MethodFlagsTextTest, RefusesValuesOutOfRange) {
  auto f = ApplyMethodFlagsText("max_graphs=0", MethodFlags{});
  ASSERT_FALSE(f.ok());
  EXPECT_NE(std::string(f.status().message()).find("max_graphs"), std::string::npos) << f.status();
}

}  // namespace
}  // namespace encore
