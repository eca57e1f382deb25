// SPDX-License-Identifier: Apache-2.0
// VariantCache's rules with a fake executable (an int naming its
// instantiation): no GPU, every branch.
#include "encore/graph/binding/internal/variant_cache.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <variant>
#include <vector>

namespace encore {
namespace {

using Cache = VariantCache<int, std::monostate>;

class FakeForm : public VariantForm<int, std::monostate> {
 public:
  bool Accepts(Args, Args, uint64_t) override { return accept; }
  StatusOr<int> Instantiate(const Addresses&) override {
    if (fail_instantiate) return InternalError("no");
    return ++made;
  }
  Status Rewrite(Variant& v, const Addresses& to, uint64_t) override {
    ++rewrites;
    if (fail_rewrite) return InternalError("refused");
    v.rewritten = v.rewritten || to != v.bound;
    return OkStatus();
  }
  bool accept = true;
  bool fail_instantiate = false;
  bool fail_rewrite = false;
  int made = 0;
  int rewrites = 0;
};

TensorRef At(uintptr_t a) { return TensorRef{reinterpret_cast<void*>(a), DType::kFloat32, {4}, {}}; }

struct Set {
  std::vector<TensorRef> in, out;
  explicit Set(uintptr_t base) : in{At(base)}, out{At(base + 0x1000)} {}
};

class VariantCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Set s0(0x10000);
    cache_.Add(0, AddressesOf(s0.in, s0.out));
  }
  int Bind(const Set& s) {
    StatusOr<Cache::Variant*> v = cache_.Bind(s.in, s.out, form_, &made_);
    EXPECT_TRUE(v.ok()) << v.status();
    return v.ok() && *v != nullptr ? (*v)->exec : -1;
  }
  Cache cache_{4};
  FakeForm form_;
  int64_t made_ = 0;
};

TEST_F(VariantCacheTest, TheSameAddressesRewriteNothing) {
  Set s0(0x10000);
  EXPECT_EQ(Bind(s0), 0);
  EXPECT_EQ(Bind(s0), 0);
  EXPECT_EQ(form_.rewrites, 0);
  EXPECT_EQ(cache_.rewrite_calls(), 0);
  EXPECT_EQ(cache_.binds(), 2);
}

TEST_F(VariantCacheTest, ASetSeenOnceRewritesASetSeenTwiceGetsItsOwnExecutable) {
  Set s0(0x10000), s1(0x20000);
  EXPECT_EQ(Bind(s1), 0);  // seen once: executable 0 rewritten
  EXPECT_EQ(form_.rewrites, 1);
  EXPECT_EQ(Bind(s0), 0);  // s0 never missed before: seen once too, rewritten back
  EXPECT_EQ(form_.rewrites, 2);
  EXPECT_EQ(Bind(s1), 1);  // s1 missed before: an executable of its own
  EXPECT_EQ(Bind(s0), 2);  // executable 0 holds s0 but was rewritten: a clean one
  EXPECT_EQ(form_.made, 2);
  EXPECT_EQ(made_, 2);
  EXPECT_EQ(Bind(s1), 1);  // from now on no rewrite and no new executable
  EXPECT_EQ(Bind(s0), 2);
  EXPECT_EQ(Bind(s1), 1);
  EXPECT_EQ(form_.rewrites, 2);
  EXPECT_EQ(form_.made, 2);
  EXPECT_EQ(cache_.rewrite_calls(), 2);
}

TEST_F(VariantCacheTest, TheCapStopsNewExecutablesAndRewritesTheRewrittenFirst) {
  form_.fail_instantiate = false;
  for (int round = 0; round < 3; ++round) {
    for (uintptr_t b = 1; b <= 6; ++b) Bind(Set(0x100000 * b));
  }
  EXPECT_LE(cache_.size(), 4u);
  EXPECT_GT(cache_.rewrite_calls(), 0);
}

TEST_F(VariantCacheTest, AFailedInstantiationLowersTheCapInsteadOfRetrying) {
  form_.fail_instantiate = true;
  Set s1(0x20000);
  Bind(s1);
  Bind(Set(0x30000));
  Bind(s1);  // recurs: would make one, fails, cap is now 1
  EXPECT_EQ(cache_.max_variants(), 1u);
  EXPECT_EQ(cache_.size(), 1u);
}

TEST_F(VariantCacheTest, AFormThatDeclinesGetsNull) {
  form_.accept = false;
  Set s1(0x20000);
  StatusOr<Cache::Variant*> v = cache_.Bind(s1.in, s1.out, form_, &made_);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, nullptr);
  Set s0(0x10000);
  EXPECT_EQ(Bind(s0), 0);  // the known set still binds
}

TEST_F(VariantCacheTest, AFailedRewriteForgetsWhatTheExecutableHolds) {
  form_.fail_rewrite = true;
  Set s1(0x20000);
  EXPECT_FALSE(cache_.Bind(s1.in, s1.out, form_, &made_).ok());
  form_.fail_rewrite = false;
  Set s0(0x10000);
  EXPECT_EQ(Bind(s0), 0);  // executable 0 is bound to nothing now: rewritten again
  EXPECT_EQ(form_.rewrites, 2);
}

TEST_F(VariantCacheTest, AnUncountedBindLeavesTheStatisticsAlone) {
  Set s1(0x20000);
  StatusOr<Cache::Variant*> v = cache_.Bind(s1.in, s1.out, form_, nullptr, /*counted=*/false);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(cache_.binds(), 0);
  EXPECT_EQ(cache_.rewrite_calls(), 0);
  // Executable 0 now holds s1 but was rewritten: the first counted call
  // with s1 gets a clean executable, and counts one bind.
  EXPECT_EQ(Bind(s1), 1);
  EXPECT_EQ(form_.made, 1);
  EXPECT_EQ(cache_.binds(), 1);
}

}  // namespace
}  // namespace encore
