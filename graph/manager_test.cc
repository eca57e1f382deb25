// SPDX-License-Identifier: Apache-2.0
// Manager logic that makes no CUDA call: registration, flags, the report
// before any call. Runs on every CPU machine.
#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "encore/tests/log_capture.h"
#include "encore/core/internal/log.h"
#include "encore/graph/manager.h"
#include "encore/version.h"

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

TEST(ManagerTest, CallsTheCallerRanEagerlyAreInTheReportAndItsJson) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  auto m = (*mgr)->Register(Affine("adapted", nullptr));
  ASSERT_TRUE(m.ok());
  (*m)->CountEagerCall("host_input");
  (*m)->CountEagerCall("autograd");
  (*m)->CountEagerCall("host_input");
  MethodReport r = (*m)->Report();
  EXPECT_EQ(r.calls, 3);
  EXPECT_EQ(r.eager_calls, 3);
  EXPECT_EQ(r.eager_by_reason, (std::map<std::string, int64_t, std::less<>>{{"autograd", 1}, {"host_input", 2}}));
  std::string j = (*mgr)->ReportJson();
  EXPECT_NE(j.find("\"eager_by_reason\":{\"autograd\":1,\"host_input\":2}"), std::string::npos) << j;
  // Release drops graphs, not what calls did.
  ASSERT_TRUE((*m)->Release().ok());
  EXPECT_EQ((*m)->Report().eager_calls, 3);
}

// Unknown names in the flags text are judged when registration is over,
// the Manager's end: a method registered after others ran is not one.
TEST(ManagerFlagNamesTest, OnlyNamesNeverRegisteredAreWarnedAbout) {
  LogCapture logs;
  ManagerOptions o;
  o.flags_text = "early:warmup=1;late:graphs=off;ghost:warmup=2;*:checks=off";
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  auto early = (*mgr)->Register(Affine("early", nullptr));
  ASSERT_TRUE(early.ok());
  // The first Run of any method calls the Manager's hook before anything
  // else; on a machine without a GPU the Run then fails, which does not
  // matter here.
  (void)(*early)->Run({}, {}, nullptr);
  EXPECT_EQ(logs.Count("unknown_method_in_flags"), 0) << "warned while methods may still be registered";
  auto late_hint = logs.Find("flags_method_not_registered", "method", "late");
  ASSERT_TRUE(late_hint.has_value());
  EXPECT_EQ(late_hint->level, spdlog::level::info);
  EXPECT_TRUE(logs.Find("flags_method_not_registered", "method", "ghost").has_value());
  EXPECT_FALSE(logs.Find("flags_method_not_registered", "method", "early").has_value());

  auto late = (*mgr)->Register(Affine("late", nullptr));
  ASSERT_TRUE(late.ok());
  EXPECT_FALSE((*late)->flags().graphs);
  (void)(*late)->Run({}, {}, nullptr);
  EXPECT_EQ(logs.Count("flags_method_not_registered"), 2) << "the hint is given once";
  mgr->reset();
  std::vector<CapturedEvent> warned = logs.Named("unknown_method_in_flags");
  ASSERT_EQ(warned.size(), 1u);
  EXPECT_EQ(warned[0].field("method"), "ghost");
  EXPECT_EQ(warned[0].level, spdlog::level::warn);
  EXPECT_EQ(warned[0].field("detail"), "no method with this name was registered");
}

TEST(ManagerFlagNamesTest, AManagerWhoseMethodsNeverRanStillWarns) {
  LogCapture logs;
  ManagerOptions o;
  o.flags_text = "decod:graphs=off";
  o.logger = logs.logger();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  ASSERT_TRUE((*mgr)->Register(Affine("decode", nullptr)).ok());
  EXPECT_EQ(logs.Count("unknown_method_in_flags"), 0);
  mgr->reset();
  ASSERT_TRUE(logs.Find("unknown_method_in_flags", "method", "decod").has_value());
}

// A sink that throws on every line, with an error handler that rethrows:
// the application's logger failing must not make a public call throw.
class ThrowingSink : public spdlog::sinks::base_sink<std::mutex> {
 protected:
  void sink_it_(const spdlog::details::log_msg&) override { throw std::runtime_error("disk full"); }
  void flush_() override {}
};

TEST(ManagerLoggerTest, ALoggerThatThrowsDoesNotEscapeRegisterOrTheDestructor) {
  auto logger = std::make_shared<spdlog::logger>("throwing", std::make_shared<ThrowingSink>());
  logger->set_error_handler([](const std::string& m) { throw std::runtime_error(m); });
  ManagerOptions o;
  o.flags_text = "ghost:graphs=off";
  o.logger = logger;
  const int64_t before = EventLog::dropped_lines();
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  // A throw would fail the test; one from the destructor would end it.
  auto m = (*mgr)->Register(Affine("m", nullptr));
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_NE((*mgr)->Find("m"), nullptr);
  mgr->reset();  // warns about 'ghost'
  EXPECT_EQ(EventLog::dropped_lines() - before, 2);
}

}  // namespace
}  // namespace encore

namespace encore {
namespace {

TEST(ManagerReportJsonTest, CarriesTheLibraryVersionAndTheSchemaVersion) {
  auto mgr = Manager::Create();
  ASSERT_TRUE(mgr.ok());
  ASSERT_TRUE((*mgr)->Register(Affine("a", nullptr)).ok());
  const std::string j = (*mgr)->ReportJson();
  const std::string tail = "],\"encore_version\":\"" + std::string(Version()) + "\",\"schema_version\":" +
                           std::to_string(Manager::kReportSchemaVersion) + "}";
  ASSERT_GE(j.size(), tail.size());
  EXPECT_EQ(j.substr(j.size() - tail.size()), tail) << j;
  EXPECT_EQ(Version(), "0.2.0");
  EXPECT_NE(j.find("\"capture_us\":0"), std::string::npos) << j;
  EXPECT_NE(j.find("\"last_capture_us\":0"), std::string::npos) << j;
}

// ManagerOptions chooses the format; the environment is only the default.
TEST(ManagerLogFormatTest, OptionsChooseJsonLinesWithTs) {
  LogCapture logs;
  ManagerOptions o;
  o.logger = logs.logger();
  o.log_format = LogFormat::kJson;
  auto mgr = Manager::Create(o);
  ASSERT_TRUE(mgr.ok());
  ASSERT_TRUE((*mgr)->Register(Affine("a", nullptr)).ok());
  auto lines = logs.events();
  ASSERT_FALSE(lines.empty());
  const std::string& line = lines.back().line;
  EXPECT_EQ(line.rfind("{\"ts\":\"", 0), 0u) << line;
  EXPECT_NE(line.find("\"level\":\"info\",\"event\":\"registered\",\"method\":\"a\""), std::string::npos) << line;
}

TEST(ManagerLogFormatTest, OptionsChooseTextWhateverTheEnvironmentSays) {
  LogCapture logs;
  setenv("ENCORE_LOG_FORMAT", "json", 1);
  ManagerOptions o;
  o.logger = logs.logger();
  o.log_format = LogFormat::kKeyValue;
  auto mgr = Manager::Create(o);
  unsetenv("ENCORE_LOG_FORMAT");
  ASSERT_TRUE(mgr.ok());
  ASSERT_TRUE((*mgr)->Register(Affine("a", nullptr)).ok());
  EXPECT_EQ(logs.Count("registered"), 1);
}

}  // namespace
}  // namespace encore
