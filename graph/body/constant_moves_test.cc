// SPDX-License-Identifier: Apache-2.0
#include "encore/graph/body/internal/constant_moves.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace encore {
namespace {

const void* At(uintptr_t a) { return reinterpret_cast<const void*>(a); }

std::vector<Constant> Listed() {
  return {{"w", At(0x10000), 256, true}, {"kv", At(0x20000), 1024, false}, {"pos", At(0x30000), 8, false}};
}

TEST(ConstantMovesTest, OnlyTheConstantsWhoseAddressChangedMove) {
  const std::vector<Constant> changes = {{"kv", At(0x90000), 1024, false}, {"w", At(0x10000), 256, false}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("decode", Listed(), changes);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->moves.size(), 1u);
  EXPECT_EQ(r->moves[0].name, "kv");
  EXPECT_EQ(r->moves[0].from, At(0x20000));
  EXPECT_EQ(r->moves[0].to, At(0x90000));
  EXPECT_EQ(r->moves[0].bytes, 1024u);
  // The list keeps its order; a rebound entry is replaced whole (read_only too).
  ASSERT_EQ(r->list.size(), 3u);
  EXPECT_EQ(r->list[0].name, "w");
  EXPECT_FALSE(r->list[0].read_only);
  EXPECT_EQ(r->list[1].data, At(0x90000));
  EXPECT_EQ(r->list[2].data, At(0x30000));
  EXPECT_EQ(MovesAmbiguity(*r), "");
}

TEST(ConstantMovesTest, AnUnknownNameIsInvalidArgumentNamingIt) {
  const std::vector<Constant> changes = {{"bias", At(0x90000), 4, false}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("decode", Listed(), changes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "method 'decode': RebindConstants: constant 'bias' is not among the method's listed constants");
  r = PlanConstantRebind("decode", std::nullopt, changes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("cannot list its constants"), std::string_view::npos) << r.status();
}

TEST(ConstantMovesTest, AnotherSizeIsInvalidArgumentNamingBothSizes) {
  const std::vector<Constant> changes = {{"w", At(0x90000), 512, true}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("decode", Listed(), changes);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "method 'decode': RebindConstants: constant 'w' has 512 bytes, listed with 256; a constant of another "
            "size needs Release");
}

TEST(ConstantMovesTest, ANullAddressOrANameGivenTwiceIsInvalidArgument) {
  std::vector<Constant> changes = {{"w", nullptr, 256, true}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("m", Listed(), changes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("constant 'w' has a null address"), std::string_view::npos) << r.status();
  changes = {{"w", At(0x90000), 256, true}, {"w", At(0xa0000), 256, true}};
  r = PlanConstantRebind("m", Listed(), changes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("constant 'w' is given twice"), std::string_view::npos) << r.status();
}

TEST(ConstantMovesTest, OverlapsThatMakeAReferenceAmbiguousAreNamed) {
  // A view listed beside its base: moving the base alone leaves words in
  // the view's bytes meaning either.
  std::vector<Constant> listed = {{"base", At(0x10000), 4096, false}, {"view", At(0x10800), 256, false}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("m", listed, std::vector<Constant>{{"base", At(0x50000), 4096}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(MovesAmbiguity(*r),
            "constant 'base' moved and its old bytes overlap constant 'view', which did not: a reference into the "
            "overlap could mean either");
  // Both moved together: the same distance, no ambiguity.
  r = PlanConstantRebind("m", listed,
                         std::vector<Constant>{{"base", At(0x50000), 4096}, {"view", At(0x50800), 256}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(MovesAmbiguity(*r), "");
  // Both moved, by different distances.
  r = PlanConstantRebind("m", listed,
                         std::vector<Constant>{{"base", At(0x50000), 4096}, {"view", At(0x70000), 256}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_NE(MovesAmbiguity(*r).find("moved by different distances"), std::string::npos);
  // Adjacent storage shares no byte.
  listed = {{"a", At(0x10000), 256, false}, {"b", At(0x10100), 256, false}};
  r = PlanConstantRebind("m", listed, std::vector<Constant>{{"a", At(0x50000), 256}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(MovesAmbiguity(*r), "");
}

TEST(ConstantMovesTest, TheScanSeesTheOldBytesAndTheRewriteTheNewAddresses) {
  const std::vector<ConstantMove> moves = {{"w", At(0x10000), At(0x90000), 256}, {"kv", At(0x20000), At(0xa0000), 12}};
  const std::vector<TensorRef> old = OldStorage(moves);
  ASSERT_EQ(old.size(), 2u);
  EXPECT_EQ(old[0].data, At(0x10000));
  EXPECT_EQ(old[0].span_bytes(), 256u);
  EXPECT_EQ(old[1].span_bytes(), 12u);
  EXPECT_EQ(NewAddresses(moves), (std::vector<const void*>{At(0x90000), At(0xa0000)}));
  EXPECT_EQ(MovedNames(moves), (std::vector<std::string>{"w", "kv"}));
}

TEST(ConstantMovesTest, TheConstantsThatStayAreWhatAnOldEndMayName) {
  // Linear's weight replaced: its bias, allocated right after it, stays.
  const std::vector<Constant> listed = {{"weight", At(0x10000), 0x4000, true}, {"bias", At(0x14000), 256, true},
                                        {"shift", At(0x14200), 256, false}};
  const std::vector<Constant> changes = {{"weight", At(0x90000), 0x4000, true}};
  StatusOr<ConstantRebind> r = PlanConstantRebind("decode", listed, changes);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<TensorRef> staying = StayingStorage(*r);
  ASSERT_EQ(staying.size(), 2u);
  EXPECT_EQ(staying[0].data, At(0x14000));
  EXPECT_EQ(staying[0].span_bytes(), 256u);
  EXPECT_EQ(staying[1].data, At(0x14200));
  // Every constant moved: none stays.
  r = PlanConstantRebind("decode", listed,
                         std::vector<Constant>{{"weight", At(0x90000), 0x4000, true}, {"bias", At(0x94000), 256, true},
                                               {"shift", At(0x94200), 256, false}});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(StayingStorage(*r).empty());
}

}  // namespace
}  // namespace encore
