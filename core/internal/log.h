// SPDX-License-Identifier: Apache-2.0
// Structured logging: one spdlog logger named "encore"; every line is an event
// with key=value fields, or one JSON object per line (carrying "ts" and
// "level") when ENCORE_LOG_FORMAT=json or ManagerOptions::log_format says so.
// ENCORE_LOG_LEVEL (trace, debug, info, warn, error, critical, off) sets the
// default logger's level; any other value is a warning, and the level stays
// info.
//
// Owners (CUDA handles, the graph arena, a stream capture) log from
// destructors, where no EventLog is at hand: they write to ScopedEventLog(),
// the log of the innermost LogScope on this thread. Method and MethodInstance
// open one wherever their owners can be destroyed, so those lines reach the
// application's logger too.
#ifndef ENCORE_CORE_INTERNAL_LOG_H_
#define ENCORE_CORE_INTERNAL_LOG_H_

#include <spdlog/spdlog.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <chrono>

#include "encore/core/log_format.h"
#include "encore/core/internal/text.h"

namespace encore {

// One key and its value, already rendered as text. `quoted` is false for
// numbers and booleans, so JSON carries them unquoted.
struct LogField {
  LogField(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  LogField(std::string_view k, const char* v) : key(k), value(v ? v : ""), quoted(true) {}
  LogField(std::string_view k, const std::string& v) : key(k), value(v), quoted(true) {}
  LogField(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}
  template <typename T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
  LogField(std::string_view k, T v) : key(k), value(Render(v)), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted;

 private:
  template <typename T>
  static std::string Render(T v) {
    if constexpr (std::is_floating_point_v<T>) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(v));
      return buf;
    } else {
      return std::to_string(v);
    }
  }
};

// "event=capture_failed method=forward reason=\"a b\" expected=true": values
// with spaces, quotes, '=' or control characters are double-quoted and escaped.
// JSON: {"event":"capture_failed","method":"forward",...}.
std::string FormatEvent(LogFormat format, std::string_view event, std::span<const LogField> fields);
LogFormat LogFormatFromEnv();
// "2026-12-01T10:00:00.123456Z": UTC, microseconds; the "ts" of JSON lines.
std::string FormatTimestamp(std::chrono::system_clock::time_point t);
// The level a name means (trace, debug, info, warn or warning, error or err,
// critical, off; any case), or nullopt for anything else.
std::optional<spdlog::level::level_enum> ParseLogLevel(std::string_view name);
inline constexpr std::string_view kLogLevelNames = "trace|debug|info|warn|error|critical|off";

// Sets `logger`'s level from `value` (ENCORE_LOG_LEVEL; null: info). An
// unknown name leaves it at info and logs `log_level_unknown` at warning,
// naming the allowed values.
void ApplyLogLevel(const std::shared_ptr<spdlog::logger>& logger, const char* value);

// The process-wide "encore" logger (stderr), made on first use, its pattern
// set for ENCORE_LOG_FORMAT.
std::shared_ptr<spdlog::logger> DefaultLogger();
// DefaultLogger(), or for the other format a stderr logger whose pattern
// suits it (JSON lines with nothing before them); an "encore" logger the
// application registered is returned as it is.
std::shared_ptr<spdlog::logger> DefaultLoggerFor(LogFormat format);

// Emits events to a logger in the format chosen at construction. Cheap to
// copy; the level check comes first, so disabled events cost no formatting.
// Never throws: the logger is the application's, and an exception from one
// of its sinks (or its error handler) must not escape Method::Run, least of
// all in the middle of a capture. A line the logger throws on is dropped
// and counted in dropped_lines().
class EventLog {
 public:
  // A null logger is the default "encore" one; no format is
  // ENCORE_LOG_FORMAT's.
  explicit EventLog(std::shared_ptr<spdlog::logger> logger = nullptr, std::optional<LogFormat> format = {});

  bool enabled(spdlog::level::level_enum level) const { return logger_->should_log(level); }
  void Log(spdlog::level::level_enum level, std::string_view event,
           std::initializer_list<LogField> fields) const {
    if (enabled(level)) Emit(level, event, std::span<const LogField>(fields.begin(), fields.size()));
  }
  void Info(std::string_view e, std::initializer_list<LogField> f) const { Log(spdlog::level::info, e, f); }
  void Warn(std::string_view e, std::initializer_list<LogField> f) const { Log(spdlog::level::warn, e, f); }
  void Error(std::string_view e, std::initializer_list<LogField> f) const { Log(spdlog::level::err, e, f); }
  void Debug(std::string_view e, std::initializer_list<LogField> f) const { Log(spdlog::level::debug, e, f); }

  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  LogFormat format() const { return format_; }
  // Lines dropped because formatting or the logger threw, process-wide.
  static int64_t dropped_lines();

 private:
  void Emit(spdlog::level::level_enum level, std::string_view event, std::span<const LogField> fields) const;
  std::shared_ptr<spdlog::logger> logger_;
  LogFormat format_;
};

// Routes ScopedEventLog() on this thread to `log` (with `method` named in
// the owners' lines) until destroyed; scopes nest. A null log leaves the
// route as it was.
class LogScope {
 public:
  explicit LogScope(const EventLog* log, std::string_view method = {}) noexcept;
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  const EventLog* prev_log_;
  std::string_view prev_method_;
};

// The innermost LogScope's log on this thread, or the default logger's.
// May throw (only bad_alloc, making the default): callers in destructors
// catch.
const EventLog& ScopedEventLog();
// The method the innermost LogScope names, or empty.
std::string_view ScopedMethod() noexcept;

}  // namespace encore

#endif  // ENCORE_CORE_INTERNAL_LOG_H_
