// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/body/internal/method_body.h"

#include <gtest/gtest.h>

namespace encore {
namespace {

Stage S(const char* name, bool eager = false) {
  return Stage{name, [](Call&) { return OkStatus(); }, eager};
}

TEST(MethodBodyTest, AFnIsOnePieceOfOneUnnamedStage) {
  MethodSpec spec;
  spec.fn = [](Call&) { return OkStatus(); };
  MethodBody b = MethodBody::Of(spec);
  ASSERT_EQ(b.stages().size(), 1u);
  EXPECT_EQ(b.stages()[0].name, "");
  ASSERT_EQ(b.segments().size(), 1u);
  EXPECT_TRUE(b.segments()[0].piece);
  EXPECT_EQ(b.pieces(), 1u);
}

TEST(MethodBodyTest, EagerStagesSplitPieces) {
  MethodBody b({S("a"), S("b"), S("attn", true), S("c"), S("log", true), S("post", true)});
  ASSERT_EQ(b.segments().size(), 5u);
  EXPECT_EQ(b.pieces(), 2u);
  EXPECT_TRUE(b.segments()[0].piece);
  EXPECT_EQ(b.segments()[0].first, 0u);
  EXPECT_EQ(b.segments()[0].last, 2u);
  EXPECT_FALSE(b.segments()[1].piece);
  EXPECT_TRUE(b.segments()[2].piece);
  EXPECT_EQ(b.segments()[2].index, 1u);
  EXPECT_EQ(b.StageNames(b.segments()[0]), (std::vector<std::string>{"a", "b"}));
  EXPECT_FALSE(b.segments()[3].piece);
  EXPECT_FALSE(b.segments()[4].piece);
}

TEST(MethodBodyTest, OnlyEagerStagesMakeNoPiece) {
  MethodBody b({S("x", true)});
  EXPECT_EQ(b.pieces(), 0u);
  EXPECT_EQ(b.segments().size(), 1u);
}

TEST(MethodBodyTest, ValidationNamesTheMethodAndTheStage) {
  MethodSpec spec;
  spec.name = "fwd";
  EXPECT_EQ(ValidateMethodBody(spec).message(), "Register: method 'fwd' has no fn");
  spec.fn = [](Call&) { return OkStatus(); };
  spec.stages = {S("a")};
  EXPECT_EQ(ValidateMethodBody(spec).code(), StatusCode::kInvalidArgument);
  EXPECT_NE(ValidateMethodBody(spec).message().find("both fn and stages"), std::string_view::npos);
  spec.fn = nullptr;
  spec.stages = {S("a"), S("a")};
  EXPECT_NE(ValidateMethodBody(spec).message().find("stage name 'a' is used twice"), std::string_view::npos);
  spec.stages = {S("")};
  EXPECT_NE(ValidateMethodBody(spec).message().find("stage 0 has no name"), std::string_view::npos);
  spec.stages = {Stage{"z", nullptr, false}};
  EXPECT_NE(ValidateMethodBody(spec).message().find("stage 'z' has no fn"), std::string_view::npos);
  spec.stages = {S("a"), S("b", true)};
  EXPECT_TRUE(ValidateMethodBody(spec).ok());
}

}  // namespace
}  // namespace encore
