// SPDX-License-Identifier: Apache-2.0
#include "encore/policy/method_flags.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "encore/policy/internal/flag_table.h"
#include "encore/policy/internal/flags_text.h"

namespace encore {
namespace {

TEST(FlagsTextTest, ParsesTheSpecExample) {
  auto t = FlagsText::Parse("forward:graphs=on,warmup=3,on_new_shape=refuse;decode:graphs=off,checks=trap");
  ASSERT_TRUE(t.ok()) << t.status();
  MethodFlags base;
  base.warmup_calls = 7;
  MethodFlags fwd = t->Resolve("forward", base);
  EXPECT_TRUE(fwd.graphs);
  EXPECT_EQ(fwd.warmup_calls, 3);
  EXPECT_EQ(fwd.on_new_shape, ShapePolicy::kRefuse);
  MethodFlags dec = t->Resolve("decode", base);
  EXPECT_FALSE(dec.graphs);
  EXPECT_EQ(dec.checks, CheckMode::kTrap);
  EXPECT_EQ(dec.warmup_calls, 7);  // untouched keys keep the base
  EXPECT_EQ(t->Resolve("other", base), base);
}

TEST(FlagsTextTest, StarAppliesFirstThenNamedEntries) {
  auto t = FlagsText::Parse("decode:warmup=1; *:warmup=5,max_graphs=2,copy_outputs=off");
  ASSERT_TRUE(t.ok()) << t.status();
  MethodFlags d = t->Resolve("decode", {});
  EXPECT_EQ(d.warmup_calls, 1);
  EXPECT_EQ(d.max_graphs, 2);
  EXPECT_FALSE(d.copy_outputs);
  MethodFlags f = t->Resolve("forward", {});
  EXPECT_EQ(f.warmup_calls, 5);
}

TEST(FlagsTextTest, TableOfGoodTexts) {
  const char* good[] = {
      "",
      "  ",
      ";;",
      "f:graphs=true",
      "f:graphs=0,warmup=0",
      "f:on_new_shape=eager;g:on_new_shape=recapture",
      "f:checks=off,checks=record",
      "my.method/v2-x_1:warmup_calls=10",
      " f : graphs = off , warmup = 2 ;",
  };
  for (const char* text : good) {
    EXPECT_TRUE(FlagsText::Parse(text).ok()) << "'" << text << "': " << FlagsText::Parse(text).status();
  }
  EXPECT_TRUE(FlagsText::Parse("").value().empty());
}

TEST(FlagsTextTest, TableOfBadTextsQuoteTheToken) {
  struct Case {
    const char* text;
    const char* message;
  } bad[] = {
      {"forward", "method flags: bad token 'forward': expected 'method:key=value,...'"},
      {"f:graphs=maybe", "method flags: bad token 'graphs=maybe': graphs takes on or off"},
      {"f:warmup=x", "method flags: bad token 'warmup=x': warmup takes an integer >= 0"},
      {"f:warmup=-1", "method flags: bad token 'warmup=-1': warmup takes an integer >= 0"},
      {"f:warmup=3x", "method flags: bad token 'warmup=3x': warmup takes an integer >= 0"},
      {"f:max_graphs=0", "method flags: bad token 'max_graphs=0': max_graphs takes an integer >= 1"},
      {"f:on_new_shape=retry", "method flags: bad token 'on_new_shape=retry': on_new_shape takes refuse, eager, recapture or pad"},
      {"f:checks=loud", "method flags: bad token 'checks=loud': checks takes record, trap or off"},
      {"f:colour=red", "method flags: bad token 'colour=red': unknown flag 'colour' (graphs, warmup, on_new_shape, max_graphs, checks, copy_outputs, binding, verify, verify_every, verify_tolerance, buckets, max_padding, capture)"},
      {"f:buckets=4|2", "method flags: bad token 'buckets=4|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=0|2", "method flags: bad token 'buckets=0|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=2|2", "method flags: bad token 'buckets=2|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=1||4", "method flags: bad token 'buckets=1||4': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=1|x", "method flags: bad token 'buckets=1|x': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:graphs", "method flags: bad token 'graphs': expected key=value"},
      {"f:", "method flags: bad token 'f:': no flags after ':'"},
      {"f:graphs=on,,warmup=1", "method flags: bad token 'f:graphs=on,,warmup=1': empty flag"},
      {"a b:graphs=on", "method flags: bad token 'a b': not a method name (letters, digits, _ - . / or *)"},
      {":graphs=on", "method flags: bad token ':graphs=on': no method name before ':'"},
  };
  for (const Case& c : bad) {
    auto t = FlagsText::Parse(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(), c.message) << c.text;
  }
}

// Padding to buckets (docs/design.md): on_new_shape=pad, buckets=1|2|4|8|16; an
// empty list means learned buckets.
TEST(FlagsTextTest, PadAndBuckets) {
  auto t = FlagsText::Parse("serve:on_new_shape=pad,buckets=1|2|4|8|16;learn:on_new_shape=pad,buckets=,max_graphs=6");
  ASSERT_TRUE(t.ok()) << t.status();
  MethodFlags base;
  base.buckets = {3};
  MethodFlags s = t->Resolve("serve", base);
  EXPECT_EQ(s.on_new_shape, ShapePolicy::kPad);
  EXPECT_EQ(s.buckets, (std::vector<int64_t>{1, 2, 4, 8, 16}));
  MethodFlags l = t->Resolve("learn", base);
  EXPECT_EQ(l.on_new_shape, ShapePolicy::kPad);
  EXPECT_TRUE(l.buckets.empty());
  EXPECT_EQ(l.max_graphs, 6);
  EXPECT_EQ(t->Resolve("other", base).buckets, std::vector<int64_t>{3});
  EXPECT_EQ(ShapePolicyName(ShapePolicy::kPad), "pad");
  EXPECT_EQ(BucketsText({1, 2, 4}), "1|2|4");
  EXPECT_EQ(BucketsText({}), "");
}

TEST(MethodFlagsTest, BucketsMustBePositiveAndAscending) {
  MethodFlags f;
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {1, 4, 16};
  EXPECT_TRUE(ValidateMethodFlags(f, "m").ok());
  f.buckets = {4, 4};
  EXPECT_EQ(ValidateMethodFlags(f, "method 'm'").message(),
            "method 'm': buckets are 4|4, must be positive and strictly ascending");
  f.buckets = {0, 4};
  EXPECT_EQ(ValidateMethodFlags(f, "m").code(), StatusCode::kInvalidArgument);
  f.buckets = {8, 4};
  EXPECT_EQ(ValidateMethodFlags(f, "m").code(), StatusCode::kInvalidArgument);
  f.buckets = {};
  f.verify = 1;
  EXPECT_TRUE(ValidateMethodFlags(f, "m").ok());
  f.copy_outputs = false;
  EXPECT_EQ(ValidateMethodFlags(f, "method 'm'").message(),
            "method 'm': verify with on_new_shape=pad needs copy_outputs=on (the static outputs hold the bucket's "
            "rows, an eager run only the call's)");
}

TEST(FlagsTextTest, UnknownMethodsAreListedNotRejected) {
  auto t = FlagsText::Parse("forward:graphs=on;decod:graphs=off;*:warmup=1;decod:warmup=2");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->UnknownMethods({"forward", "decode"}), std::vector<std::string>{"decod"});
  EXPECT_TRUE(t->UnknownMethods({"forward", "decod"}).empty());
}

TEST(MethodFlagsTest, ValidationNamesTheFlagAndValue) {
  MethodFlags f;
  EXPECT_TRUE(ValidateMethodFlags(f, "m").ok());
  f.warmup_calls = -2;
  EXPECT_EQ(ValidateMethodFlags(f, "method 'm'").message(), "method 'm': warmup_calls is -2, must be >= 0");
  f.warmup_calls = 0;
  f.max_graphs = 0;
  EXPECT_EQ(ValidateMethodFlags(f, "method 'm'").message(), "method 'm': max_graphs is 0, must be >= 1");
}

// Never slower than eager: max_padding=2 (0, the default, means measured).
TEST(FlagsTextTest, MaxPadding) {
  auto t = FlagsText::Parse("serve:on_new_shape=pad,buckets=1|8,max_padding=2;half:max_padding=1.5");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_DOUBLE_EQ(t->Resolve("serve", {}).max_padding, 2.0);
  EXPECT_DOUBLE_EQ(t->Resolve("half", {}).max_padding, 1.5);
  EXPECT_DOUBLE_EQ(t->Resolve("other", {}).max_padding, 0.0);
  EXPECT_TRUE(ValidateMethodFlags(t->Resolve("serve", {}), "m").ok());
  auto bad = FlagsText::Parse("f:max_padding=two");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "method flags: bad token 'max_padding=two': max_padding takes a finite number >= 0");
  bad = FlagsText::Parse("f:max_padding=-2");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "method flags: bad token 'max_padding=-2': max_padding takes a finite number >= 0");
}

// Capture in the background: capture=foreground|background, under the key
// `capture` or the member's name.
TEST(FlagsTextTest, CaptureMode) {
  EXPECT_EQ(MethodFlags{}.capture_mode, CaptureMode::kForeground);
  auto t = FlagsText::Parse("serve:capture=background;fg:capture_mode=foreground");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Resolve("serve", {}).capture_mode, CaptureMode::kBackground);
  EXPECT_EQ(t->Resolve("fg", {}).capture_mode, CaptureMode::kForeground);
  EXPECT_EQ(CaptureModeName(CaptureMode::kBackground), "background");
  auto bad = FlagsText::Parse("f:capture=later");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "method flags: bad token 'capture=later': capture takes foreground or background");
  // Not a deciding flag: ranks capture in the foreground whatever it says.
  MethodFlags f;
  f.capture_mode = CaptureMode::kBackground;
  EXPECT_EQ(DecisionFlagsText(f), DecisionFlagsText(MethodFlags{}));
}

TEST(MethodFlagsTest, MaxPaddingIsUnsetOrAtLeastOne) {
  MethodFlags f;
  EXPECT_TRUE(ValidateMethodFlags(f, "m").ok());
  f.max_padding = 1;
  EXPECT_TRUE(ValidateMethodFlags(f, "m").ok());
  f.max_padding = 0.5;
  EXPECT_EQ(ValidateMethodFlags(f, "method 'm'").message(),
            "method 'm': max_padding is 0.5, must be 0 (unset: measured) or a finite number >= 1");
  f.max_padding = -1;
  EXPECT_EQ(ValidateMethodFlags(f, "m").code(), StatusCode::kInvalidArgument);
  f.max_padding = std::numeric_limits<double>::infinity();
  EXPECT_EQ(ValidateMethodFlags(f, "m").code(), StatusCode::kInvalidArgument);
  // It decides which buckets calls capture, so ranks must agree on it.
  MethodFlags pad;
  pad.on_new_shape = ShapePolicy::kPad;
  pad.max_padding = 2;
  EXPECT_EQ(DecisionFlagsText(pad), "graphs=on,warmup=3,on_new_shape=pad,max_graphs=4,max_padding=2");
}

TEST(MethodFlagsTest, DefaultsAreTheSpecs) {
  MethodFlags f;
  EXPECT_TRUE(f.graphs);
  EXPECT_EQ(f.warmup_calls, 3);
  EXPECT_EQ(f.on_new_shape, ShapePolicy::kRefuse);
  EXPECT_EQ(f.checks, CheckMode::kRecord);
  EXPECT_TRUE(f.copy_outputs);
}

TEST(MethodFlagsTest, DecisionFlagsTextNamesTheDecidingFlags) {
  MethodFlags f;
  EXPECT_EQ(DecisionFlagsText(f), "graphs=on,warmup=3,on_new_shape=refuse,max_graphs=4");
  f.graphs = false;
  f.warmup_calls = 0;
  f.on_new_shape = ShapePolicy::kRecapture;
  f.max_graphs = 9;
  EXPECT_EQ(DecisionFlagsText(f), "graphs=off,warmup=0,on_new_shape=recapture,max_graphs=9");
  f.on_new_shape = ShapePolicy::kPad;
  f.buckets = {2, 8};
  EXPECT_EQ(DecisionFlagsText(f), "graphs=off,warmup=0,on_new_shape=pad,max_graphs=9,buckets=2|8");
}

TEST(MethodFlagsTest, FingerprintChangesWithEachDecidingFlagOnly) {
  const MethodFlags base;
  const uint64_t h = DecisionFlagsFingerprint(base);
  // Pinned: ranks built apart must compute the same number.
  EXPECT_EQ(h, DecisionFlagsFingerprint(MethodFlags{}));
  std::vector<MethodFlags> changed(4, base);
  changed[0].graphs = false;
  changed[1].warmup_calls = 2;
  changed[2].on_new_shape = ShapePolicy::kEager;
  changed[3].max_graphs = 5;
  for (size_t i = 0; i < changed.size(); ++i) {
    EXPECT_NE(DecisionFlagsFingerprint(changed[i]), h) << i;
    for (size_t j = 0; j < i; ++j) EXPECT_NE(DecisionFlagsFingerprint(changed[i]), DecisionFlagsFingerprint(changed[j]));
  }
  MethodFlags same = base;
  same.checks = CheckMode::kTrap;
  same.copy_outputs = false;
  EXPECT_EQ(DecisionFlagsFingerprint(same), h);
}

TEST(MethodFlagsTest, FingerprintIsFnv1aOfTheText) {
  // FNV-1a 64 of "graphs=off,warmup=0,on_new_shape=refuse,max_graphs=1",
  // computed independently (Python) so a change of hash is seen.
  MethodFlags f;
  f.graphs = false;
  f.warmup_calls = 0;
  f.max_graphs = 1;
  EXPECT_EQ(DecisionFlagsFingerprint(f), 0xcd8f32c3a1805958ull);
}

TEST(FlagsTextWhitespaceTest, WindowsLineEndsAndOtherSpacesAroundTokensAreAccepted) {
  const char* texts[] = {
      "forward:graphs=off,warmup=2\r\n",
      "forward:graphs=off,warmup=2\r",
      "forward:graphs=off\r\n,\r\nwarmup=2\r\n;\r\ndecode:max_graphs=3\r\n",
      "\tforward\v:\fgraphs = off\t,warmup=\r2 ;\r\n",
  };
  for (const char* text : texts) {
    auto t = FlagsText::Parse(text);
    ASSERT_TRUE(t.ok()) << t.status();
    MethodFlags f = t->Resolve("forward", {});
    EXPECT_FALSE(f.graphs) << t.status();
    EXPECT_EQ(f.warmup_calls, 2);
  }
  auto t = FlagsText::Parse("forward:graphs=off\r\n;\r\ndecode:max_graphs=3\r\n");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->Resolve("decode", {}).max_graphs, 3);
  EXPECT_EQ(t->UnknownMethods({"forward", "decode"}), std::vector<std::string>{});
}

TEST(FlagsTextWhitespaceTest, AnEmptyMethodNameQuotesTheWholeEntry) {
  struct Case {
    const char* text;
    const char* message;
  } bad[] = {
      {":graphs=off", "method flags: bad token ':graphs=off': no method name before ':'"},
      {"f:warmup=1; :graphs=off", "method flags: bad token ':graphs=off': no method name before ':'"},
      {"f:warmup=1;\r\n\t:graphs=off,warmup=2\r\n", "method flags: bad token ':graphs=off,warmup=2': no method name before ':'"},
  };
  for (const Case& c : bad) {
    auto t = FlagsText::Parse(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(), c.message);
  }
}

TEST(FlagsTextWhitespaceTest, InvisibleCharactersInAQuotedTokenAreShown) {
  struct Case {
    const char* text;
    const char* message;
  } bad[] = {
      {"f:graphs=o\rn", "method flags: bad token 'graphs=o\\rn': graphs takes on or off"},
      {"f:gra\x01phs=on",
       "method flags: bad token 'gra\\x01phs=on': unknown flag 'gra\\x01phs' (graphs, warmup, on_new_shape, "
       "max_graphs, checks, copy_outputs, binding, verify, verify_every, verify_tolerance, buckets, max_padding, capture)"},
      {"f:buckets=4|2", "method flags: bad token 'buckets=4|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=0|2", "method flags: bad token 'buckets=0|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=2|2", "method flags: bad token 'buckets=2|2': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=1||4", "method flags: bad token 'buckets=1||4': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f:buckets=1|x", "method flags: bad token 'buckets=1|x': buckets takes batch sizes >= 1 in ascending order, as 1|2|4|8 (none: learned)"},
      {"f\x7f:graphs=on", "method flags: bad token 'f\\x7f': not a method name (letters, digits, _ - . / or *)"},
      // A no-break space (U+00A0) is not ASCII whitespace.
      {"f:graphs=on\xc2\xa0", "method flags: bad token 'graphs=on\\xc2\\xa0': graphs takes on or off"},
      {"f:warmup=1\\", "method flags: bad token 'warmup=1\\\\': warmup takes an integer >= 0"},
  };
  for (const Case& c : bad) {
    auto t = FlagsText::Parse(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().message(), c.message);
  }
}

TEST(VerifyFlagsTest, DefaultsAreOff) {
  MethodFlags f;
  EXPECT_EQ(f.verify, 0);
  EXPECT_EQ(f.verify_every, 0);
  EXPECT_EQ(f.verify_tolerance, 0.0);
  EXPECT_FALSE(VerifiesLaunch(f, 1, 0));
  EXPECT_FALSE(VerifiesLaunch(f, 2, 1));
}

TEST(VerifyFlagsTest, ParsesTheSpecText) {
  auto t = FlagsText::Parse("f:verify=3,verify_every=100,verify_tolerance=1e-5");
  ASSERT_TRUE(t.ok()) << t.status();
  MethodFlags f = t->Resolve("f", {});
  EXPECT_EQ(f.verify, 3);
  EXPECT_EQ(f.verify_every, 100);
  EXPECT_DOUBLE_EQ(f.verify_tolerance, 1e-5);
  EXPECT_TRUE(ValidateMethodFlags(f, "f").ok());
  EXPECT_EQ(t->Resolve("g", {}).verify, 0);
}

TEST(VerifyFlagsTest, BadValuesQuoteTheToken) {
  struct Case {
    const char* text;
    const char* message;
  } bad[] = {
      {"f:verify=-1", "method flags: bad token 'verify=-1': verify takes an integer >= 0"},
      {"f:verify_every=x", "method flags: bad token 'verify_every=x': verify_every takes an integer >= 0"},
      {"f:verify_tolerance=-1e-5",
       "method flags: bad token 'verify_tolerance=-1e-5': verify_tolerance takes a finite number >= 0"},
      {"f:verify_tolerance=nan",
       "method flags: bad token 'verify_tolerance=nan': verify_tolerance takes a finite number >= 0"},
      {"f:verify_tolerance=1e999",
       "method flags: bad token 'verify_tolerance=1e999': verify_tolerance takes a finite number >= 0"},
      {"f:verify_tolerance=", "method flags: bad token 'verify_tolerance=': verify_tolerance takes a finite number >= 0"},
  };
  for (const Case& c : bad) {
    auto t = FlagsText::Parse(c.text);
    ASSERT_FALSE(t.ok()) << c.text;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().message(), c.message);
  }
  MethodFlags f;
  f.verify_tolerance = -1;
  EXPECT_FALSE(ValidateMethodFlags(f, "f").ok());
  f.verify_tolerance = 0;
  f.verify_every = -2;
  Status s = ValidateMethodFlags(f, "method 'f'");
  EXPECT_EQ(s.message(), "method 'f': verify is 0 and verify_every -2, both must be >= 0");
}

TEST(VerifyFlagsTest, WhichLaunchesAreChecked) {
  MethodFlags f;
  f.verify = 2;
  // The capture launch (launch 1, replay 0) and the graph's first two replays.
  EXPECT_TRUE(VerifiesLaunch(f, 1, 0));
  EXPECT_TRUE(VerifiesLaunch(f, 2, 7));
  EXPECT_TRUE(VerifiesLaunch(f, 3, 8));
  EXPECT_FALSE(VerifiesLaunch(f, 4, 9));
  // A new graph is checked again from its capture launch.
  EXPECT_TRUE(VerifiesLaunch(f, 1, 0));
  f.verify = 0;
  f.verify_every = 3;
  EXPECT_FALSE(VerifiesLaunch(f, 1, 0));
  EXPECT_FALSE(VerifiesLaunch(f, 2, 1));
  EXPECT_TRUE(VerifiesLaunch(f, 4, 3));
  EXPECT_TRUE(VerifiesLaunch(f, 7, 6));
  EXPECT_FALSE(VerifiesLaunch(f, 8, 7));
}

TEST(VerifyFlagsTest, VerifyCountsJoinTheDecisionTextOnlyWhenSet) {
  MethodFlags f;
  const std::string plain = DecisionFlagsText(f);
  f.verify_tolerance = 0.5;
  EXPECT_EQ(DecisionFlagsText(f), plain);
  f.verify = 2;
  f.verify_every = 10;
  EXPECT_EQ(DecisionFlagsText(f), plain + ",verify=2,verify_every=10");
}

TEST(BindingFlagsTest, DefaultIsAutoAndTheTextNamesEach) {
  EXPECT_EQ(MethodFlags{}.binding, Binding::kAuto);
  for (Binding b : {Binding::kStaged, Binding::kDirect, Binding::kAuto}) {
    auto t = FlagsText::Parse("f:binding=" + std::string(BindingName(b)));
    ASSERT_TRUE(t.ok()) << t.status();
    EXPECT_EQ(t->Resolve("f", {}).binding, b);
  }
  EXPECT_EQ(BindingName(Binding::kStaged), "staged");
  EXPECT_EQ(BindingName(Binding::kDirect), "direct");
  EXPECT_EQ(BindingName(Binding::kAuto), "auto");
  auto bad = FlagsText::Parse("f:binding=bound");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "method flags: bad token 'binding=bound': binding takes staged, direct or auto");
}

}  // namespace
}  // namespace encore
