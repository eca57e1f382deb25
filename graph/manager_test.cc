// Manager logic that makes no CUDA call: registration, flags, the report
// before any call. Runs on every CPU machine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "encore/graph/manager.h"

namespace encore {
namespace {

MethodSpec Affine(std::string name, std::nullptr_t, std::optional<MethodFlags> flags = {}) {
  MethodSpec spec;
  spec.name = std::move(name);
  spec.constants = std::vector<Constant>{};
  spec.flags = flags;
  spec.fn = [](Call&) { return OkStatus(); };
  return spec;
}

TEST(ManagerTest, RegisterRejectsBadSpecs) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  MethodSpec empty;
  EXPECT_EQ((*mgr)->Register(empty).status().message(), "Register: the method name is empty");
  MethodSpec nofn;
  nofn.name = "x";
  EXPECT_EQ((*mgr)->Register(nofn).status().message(), "Register: method 'x' has no fn");
  MethodSpec nullc = Affine("y", nullptr);
  nullc.constants = std::vector<Constant>{{"w", nullptr, 4}};
  EXPECT_EQ((*mgr)->Register(nullc).status().message(),
            "Register: method 'y': constant 0 ('w') has a null address");
  ASSERT_TRUE((*mgr)->Register(Affine("z", nullptr)).ok());
  auto dup = (*mgr)->Register(Affine("z", nullptr));
  EXPECT_EQ(dup.status().code(), StatusCode::kAlreadyExists);
  MethodFlags bad;
  bad.max_graphs = 0;
  auto b = (*mgr)->Register(Affine("w", nullptr, bad));
  EXPECT_EQ(b.status().message(), "Register: method 'w': max_graphs is 0, must be >= 1");
  EXPECT_NE((*mgr)->Find("z"), nullptr);
  EXPECT_EQ((*mgr)->Find("nope"), nullptr);
}

TEST(ManagerTest, EnvironmentVariableIsReadWhenTextIsEmpty) {
  setenv("ENCORE_METHOD_FLAGS", "*:checks=off,graphs=nope", 1);
  auto bad = Manager::Create();
  unsetenv("ENCORE_METHOD_FLAGS");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "ENCORE_METHOD_FLAGS: method flags: bad token 'graphs=nope': graphs takes on or off");
}

TEST(ManagerTest, ReportBeforeAnyCallNamesPhaseAndFlags) {
  ManagerOptions o;
  o.flags_text = "b:graphs=off;a:warmup=0,on_new_shape=recapture,max_graphs=2";
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  ASSERT_TRUE((*mgr)->Register(Affine("b", nullptr)).ok());
  ASSERT_TRUE((*mgr)->Register(Affine("a", nullptr)).ok());
  MethodReport a = (*mgr)->Find("a")->Report();
  EXPECT_EQ(a.phase, MethodPhase::kCapture);
  EXPECT_EQ(a.flags.on_new_shape, ShapePolicy::kRecapture);
  EXPECT_EQ(a.calls, 0);
  MethodReport b = (*mgr)->Find("b")->Report();
  EXPECT_EQ(b.phase, MethodPhase::kEager);
  EXPECT_EQ(b.graphs_off_reason, "graphs=off in the method's flags");
  std::string j = (*mgr)->ReportJson();
  // Methods in name order, each with its flags and counters.
  EXPECT_EQ(j.find("{\"methods\":[{\"name\":\"a\",\"phase\":\"capture\""), 0u) << j;
  EXPECT_NE(j.find("\"on_new_shape\":\"recapture\",\"max_graphs\":2"), std::string::npos) << j;
  EXPECT_NE(j.find("\"name\":\"b\",\"phase\":\"eager\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"graphs_off_reason\":\"graphs=off in the method's flags\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"memory\":{\"reserved_bytes\":0,\"live_bytes\":0,\"peak_bytes\":0}"), std::string::npos) << j;
}

TEST(ManagerTest, ReleaseWithANullConstantChangesNothing) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  auto m = (*mgr)->Register(Affine("m", nullptr));
  ASSERT_TRUE(m.ok());
  Status s = (*m)->Release(std::vector<Constant>{{"kv", nullptr, 8}});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method 'm': constant 0 ('kv') has a null address");
}

}  // namespace
}  // namespace encore
