#include "encore/core/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/base_sink.h>

#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>

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
