// SPDX-License-Identifier: Apache-2.0
// The table of policy/internal/flag_table.h covers MethodFlags, and what it
// parses, prints and validates agrees with itself.
#include "encore/policy/internal/flag_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <variant>

#include "encore/policy/internal/flags_text.h"

namespace encore {
namespace {

// A value of every field that is not its default and that the text takes.
MethodFlags NonDefaultFlags() {
  MethodFlags f;
  f.graphs = false;
  f.warmup_calls = 7;
  f.on_new_shape = ShapePolicy::kPad;
  f.max_graphs = 9;
  f.checks = CheckMode::kTrap;
  f.copy_outputs = false;
  f.binding = Binding::kDirect;
  f.verify = 2;
  f.verify_every = 100;
  f.verify_tolerance = 0.25;
  f.buckets = {1, 4, 16};
  f.max_padding = 2.5;
  f.capture_mode = CaptureMode::kBackground;
  return f;
}

const void* FieldAddress(const FlagField& field, const MethodFlags& flags) {
  return std::visit([&](auto member) -> const void* { return &(flags.*member); }, field.member);
}

// kMethodFlagsMembers counts MethodFlags' members from the language, not
// from the table: equal counts and distinct members mean every member has
// exactly one row.
TEST(FlagTableTest, EveryMemberOfMethodFlagsHasOneRow) {
  const MethodFlags flags;
  std::set<const void*> members;
  std::set<std::string_view> keys;
  for (const FlagField& f : MethodFlagFields()) {
    EXPECT_TRUE(members.insert(FieldAddress(f, flags)).second) << f.name << " shares a member";
    EXPECT_TRUE(keys.insert(f.name).second) << f.name;
    if (f.text_key != f.name) {
      EXPECT_TRUE(keys.insert(f.text_key).second) << f.text_key;
    }
  }
  EXPECT_EQ(MethodFlagFields().size(), kMethodFlagsMembers);
  EXPECT_EQ(members.size(), kMethodFlagsMembers);
}

TEST(FlagTableTest, TheMemberCountSeesEveryKindOfMember) {
  struct Four {
    bool a = false;
    double b = 0;
    Binding c = Binding::kAuto;
    std::vector<int64_t> d;
  };
  EXPECT_EQ(flag_table_detail::AggregateMemberCount<Four>(), 4u);
}

// Each field's text form parses back to its value, under its key and its
// member name, and each shows in the JSON.
TEST(FlagTableTest, TextParsesBackAndJsonNamesEveryField) {
  const MethodFlags want = NonDefaultFlags();
  const std::string json = MethodFlagsJson(want);
  for (const FlagField& f : MethodFlagFields()) {
    for (std::string_view key : {f.text_key, f.name}) {
      auto t = FlagsText::Parse("m:" + std::string(key) + "=" + FlagText(f, want));
      ASSERT_TRUE(t.ok()) << t.status();
      MethodFlags got;
      CopyFlag(f, t->Resolve("m", {}), got);
      EXPECT_TRUE(!FlagIsDefault(f, got)) << key;
      EXPECT_EQ(FlagText(f, got), FlagText(f, want)) << key;
    }
    EXPECT_NE(json.find("\"" + std::string(f.name) + "\":" + FlagJson(f, want)), std::string::npos) << f.name;
  }
  EXPECT_EQ(json,
            "{\"graphs\":false,\"warmup_calls\":7,\"on_new_shape\":\"pad\",\"max_graphs\":9,\"checks\":\"trap\","
            "\"copy_outputs\":false,\"binding\":\"direct\",\"verify\":2,\"verify_every\":100,"
            "\"verify_tolerance\":0.25,\"buckets\":[1,4,16],\"max_padding\":2.5,\"capture_mode\":\"background\"}");
  EXPECT_EQ(MethodFlagsJson(MethodFlags{}),
            "{\"graphs\":true,\"warmup_calls\":3,\"on_new_shape\":\"refuse\",\"max_graphs\":4,\"checks\":\"record\","
            "\"copy_outputs\":true,\"binding\":\"auto\",\"verify\":0,\"verify_every\":0,\"verify_tolerance\":0,"
            "\"buckets\":[],\"max_padding\":0,\"capture_mode\":\"foreground\"}");
}

TEST(FlagTableTest, OneEntrySetsOnlyTheFieldsItNames) {
  auto t = FlagsText::Parse("m:warmup=0,binding=staged");
  ASSERT_TRUE(t.ok()) << t.status();
  MethodFlags base = NonDefaultFlags();
  MethodFlags want = base;
  want.warmup_calls = 0;
  want.binding = Binding::kStaged;
  EXPECT_EQ(t->Resolve("m", base), want);
}

}  // namespace
}  // namespace encore
