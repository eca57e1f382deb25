// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "encore/tests/log_capture.h"

namespace encore {
namespace {

TEST(LogFormatTest, KeyValueQuotesOnlyWhatNeedsIt) {
  LogField f[] = {{"method", "forward"}, {"reason", "a b"}, {"expected", true}, {"n", 3},
                  {"us", 1.5}, {"empty", ""}, {"q", "say \"hi\"\n"}};
  EXPECT_EQ(FormatEvent(LogFormat::kKeyValue, "capture_failed", f),
            "event=capture_failed method=forward reason=\"a b\" expected=true n=3 us=1.500 "
            "empty=\"\" q=\"say \\\"hi\\\"\\n\"");
}

TEST(LogFormatTest, JsonEscapesAndKeepsNumbersBare) {
  LogField f[] = {{"method", "for\"ward"}, {"n", 3}, {"ok", false}, {"ctl", std::string("\x01")}};
  EXPECT_EQ(FormatEvent(LogFormat::kJson, "x", f),
            "{\"event\":\"x\",\"method\":\"for\\\"ward\",\"n\":3,\"ok\":false,\"ctl\":\"\\u0001\"}");
}

TEST(LogFormatTest, JsonEscapeControlCharacters) {
  EXPECT_EQ(JsonEscape("a\\b\tc\r\x7f"), "a\\\\b\\tc\\r\\u007f");
}

TEST(LogCaptureTest, ParsesWhatFormatEventWrites) {
  LogField f[] = {{"method", "fwd"}, {"reason", "it said \"no\" = bad\n"}, {"n", 12}};
  auto ev = ParseKeyValueEvent(FormatEvent(LogFormat::kKeyValue, "capture_failed", f));
  ASSERT_TRUE(ev.has_value());
  EXPECT_EQ(ev->name, "capture_failed");
  EXPECT_EQ(ev->field("method"), "fwd");
  EXPECT_EQ(ev->field("reason"), "it said \"no\" = bad\n");
  EXPECT_EQ(ev->field("n"), "12");
  EXPECT_FALSE(ParseKeyValueEvent("not an event").has_value());
  EXPECT_FALSE(ParseKeyValueEvent("method=x event=y").has_value());
}

TEST(LogCaptureTest, CapturesEventsWithLevel) {
  LogCapture cap;
  EventLog log(cap.logger());
  log.Info("phase", {{"method", "fwd"}, {"to", "replay"}});
  log.Error("eager_failed", {{"method", "fwd"}});
  ASSERT_EQ(cap.events().size(), 2u);
  EXPECT_EQ(cap.Count("phase"), 1);
  auto e = cap.Find("eager_failed", "method", "fwd");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->level, spdlog::level::err);
  EXPECT_FALSE(cap.Find("phase", "to", "eager").has_value());
}

TEST(LogCaptureTest, DisabledLevelsAreNotFormatted) {
  LogCapture cap;
  cap.logger()->set_level(spdlog::level::info);
  EventLog log(cap.logger());
  log.Debug("replay", {{"method", "f"}});
  EXPECT_EQ(cap.events().size(), 0u);
  EXPECT_FALSE(log.enabled(spdlog::level::debug));
}

// A sink that throws on every line: what an application's logger may do
// when its disk is full or its socket closed.
template <class E>
class ThrowingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  int calls = 0;

 protected:
  void sink_it_(const spdlog::details::log_msg&) override {
    ++calls;
    throw E("sink is broken");
  }
  void flush_() override {}
};

struct NotAStdException {
  explicit NotAStdException(const char*) {}
};

TEST(EventLogFaultTest, ASinkThatThrowsIsDroppedAndCounted) {
  // spdlog rethrows what is not a std::exception.
  auto sink = std::make_shared<ThrowingSink<NotAStdException>>();
  auto logger = std::make_shared<spdlog::logger>("throwing", sink);
  logger->set_error_handler([](const std::string&) {});  // quiet
  EventLog log(logger);
  const int64_t before = EventLog::dropped_lines();
  EXPECT_NO_THROW(log.Info("phase", {{"method", "fwd"}}));
  EXPECT_NO_THROW(log.Error("eager_failed", {{"method", "fwd"}, {"error", "x"}}));
  EXPECT_EQ(sink->calls, 2);
  EXPECT_EQ(EventLog::dropped_lines() - before, 2);
}

TEST(EventLogFaultTest, AnErrorHandlerThatThrowsIsDroppedAndCounted) {
  // spdlog hands a sink's std::exception to the error handler; one that
  // rethrows is the application's choice and must not reach encore's caller.
  auto sink = std::make_shared<ThrowingSink<std::runtime_error>>();
  auto logger = std::make_shared<spdlog::logger>("throwing", sink);
  logger->set_error_handler([](const std::string& m) { throw std::runtime_error(m); });
  EventLog log(logger);
  const int64_t before = EventLog::dropped_lines();
  EXPECT_NO_THROW(log.Warn("vote_failed", {{"method", "fwd"}}));
  EXPECT_EQ(sink->calls, 1);
  EXPECT_EQ(EventLog::dropped_lines() - before, 1);
  // A logger that works again logs again.
  logger->sinks().clear();
  LogCapture cap(logger);
  log.Info("phase", {{"method", "fwd"}});
  EXPECT_EQ(cap.Count("phase"), 1);
  EXPECT_EQ(EventLog::dropped_lines() - before, 1);
}

}  // namespace
}  // namespace encore

namespace encore {
namespace {

TEST(LogFormatTest, TimestampIsUtcWithMicroseconds) {
  // 2026-12-01T10:00:00Z plus 123456 µs.
  std::chrono::system_clock::time_point t{std::chrono::seconds(1796119200) + std::chrono::microseconds(123456)};
  EXPECT_EQ(FormatTimestamp(t), "2026-12-01T10:00:00.123456Z");
  EXPECT_EQ(FormatTimestamp(std::chrono::system_clock::time_point{}), "1970-01-01T00:00:00.000000Z");
}

TEST(LogFormatTest, JsonLinesCarryTsAndLevel) {
  LogCapture cap;
  EventLog log(cap.logger(), LogFormat::kJson);
  EXPECT_EQ(log.format(), LogFormat::kJson);
  log.Info("captured", {{"method", "fwd"}, {"us", 12.5}});
  auto lines = cap.events();
  ASSERT_EQ(lines.size(), 1u);
  const std::string& line = lines[0].line;
  // {"ts":"YYYY-MM-DDTHH:MM:SS.uuuuuuZ","level":"info","event":"captured",...}
  ASSERT_EQ(line.rfind("{\"ts\":\"", 0), 0u) << line;
  EXPECT_EQ(line.substr(34), "\",\"level\":\"info\",\"event\":\"captured\",\"method\":\"fwd\",\"us\":12.500}") << line;
  EXPECT_EQ(line[11], '-');
  EXPECT_EQ(line[17], 'T');
  EXPECT_EQ(line[33], 'Z');
}

TEST(LogFormatTest, TheFormatIsChosenByTheCallerNotOnlyTheEnvironment) {
  LogCapture cap;
  EventLog text(cap.logger(), LogFormat::kKeyValue);
  text.Info("captured", {{"method", "fwd"}});
  ASSERT_EQ(cap.Count("captured"), 1);
  EXPECT_EQ(cap.Find("captured")->line, "event=captured method=fwd");
}

TEST(LogLevelTest, ParsesTheNamesAndRefusesOthers) {
  EXPECT_EQ(ParseLogLevel("trace"), spdlog::level::trace);
  EXPECT_EQ(ParseLogLevel("DEBUG"), spdlog::level::debug);
  EXPECT_EQ(ParseLogLevel("info"), spdlog::level::info);
  EXPECT_EQ(ParseLogLevel("warn"), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel("warning"), spdlog::level::warn);
  EXPECT_EQ(ParseLogLevel("error"), spdlog::level::err);
  EXPECT_EQ(ParseLogLevel("critical"), spdlog::level::critical);
  EXPECT_EQ(ParseLogLevel("off"), spdlog::level::off);
  EXPECT_FALSE(ParseLogLevel("loud").has_value());
  EXPECT_FALSE(ParseLogLevel("").has_value());
}

TEST(LogLevelTest, AnUnknownLevelIsAWarningNamingTheAllowedValuesNotSilence) {
  LogCapture cap;
  ApplyLogLevel(cap.logger(), "verbose");
  EXPECT_EQ(cap.logger()->level(), spdlog::level::info);
  auto w = cap.Find("log_level_unknown");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->level, spdlog::level::warn);
  EXPECT_EQ(w->field("ENCORE_LOG_LEVEL"), "verbose");
  EXPECT_EQ(w->field("allowed"), "trace|debug|info|warn|error|critical|off");
  cap.Clear();
  ApplyLogLevel(cap.logger(), "error");
  EXPECT_EQ(cap.logger()->level(), spdlog::level::err);
  ApplyLogLevel(cap.logger(), nullptr);
  EXPECT_EQ(cap.logger()->level(), spdlog::level::info);
  EXPECT_EQ(cap.Count("log_level_unknown"), 0);
}

TEST(LogScopeTest, RoutesScopedLinesToTheScopesLogAndNests) {
  LogCapture outer_cap, inner_cap;
  EventLog outer(outer_cap.logger(), LogFormat::kKeyValue), inner(inner_cap.logger(), LogFormat::kKeyValue);
  EXPECT_EQ(ScopedMethod(), "");
  {
    LogScope a(&outer, "forward");
    EXPECT_EQ(&ScopedEventLog(), &outer);
    EXPECT_EQ(ScopedMethod(), "forward");
    {
      LogScope b(&inner, "decode");
      ScopedEventLog().Error("destroy_failed", {{"method", ScopedMethod()}});
      LogScope keep(nullptr);  // a null log keeps the route
      EXPECT_EQ(&ScopedEventLog(), &inner);
    }
    EXPECT_EQ(ScopedMethod(), "forward");
  }
  EXPECT_EQ(ScopedMethod(), "");
  EXPECT_NE(&ScopedEventLog(), &outer);
  EXPECT_EQ(inner_cap.Count("destroy_failed"), 1);
  EXPECT_EQ(inner_cap.Find("destroy_failed")->field("method"), "decode");
  EXPECT_EQ(outer_cap.events().size(), 0u);
}

}  // namespace
}  // namespace encore

namespace encore {
namespace {

// A Manager asking for JSON while ENCORE_LOG_FORMAT says text (or the
// reverse) gets a default logger whose pattern puts nothing before the
// JSON object.
TEST(DefaultLoggerTest, TheOtherFormatGetsItsOwnStderrLogger) {
  if (std::getenv("ENCORE_LOG_FORMAT") != nullptr) GTEST_SKIP() << "ENCORE_LOG_FORMAT is set";
  EXPECT_EQ(DefaultLoggerFor(LogFormat::kKeyValue), DefaultLogger());
  auto json = DefaultLoggerFor(LogFormat::kJson);
  EXPECT_NE(json, DefaultLogger());
  EXPECT_EQ(json, DefaultLoggerFor(LogFormat::kJson));
  EXPECT_EQ(json->level(), DefaultLogger()->level());
  EXPECT_EQ(EventLog(nullptr, LogFormat::kJson).logger(), json);
  EXPECT_EQ(EventLog(nullptr, LogFormat::kKeyValue).logger(), DefaultLogger());
}

}  // namespace
}  // namespace encore
