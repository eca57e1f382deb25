// Structured logging: one spdlog logger named "encore"; every line is an event
// with key=value fields, or one JSON object per line when
// ENCORE_LOG_FORMAT=json. ENCORE_LOG_LEVEL (trace, debug, info, warn, error,
// critical, off) sets the default logger's level.
#ifndef ENCORE_CORE_LOG_H_
#define ENCORE_CORE_LOG_H_

#include <spdlog/spdlog.h>

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace encore {

enum class LogFormat { kKeyValue, kJson };

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
std::string JsonEscape(std::string_view s);
LogFormat LogFormatFromEnv();

// The process-wide "encore" logger (stderr), made on first use.
std::shared_ptr<spdlog::logger> DefaultLogger();

// Emits events to a logger in the format chosen at construction. Cheap to
// copy; the level check comes first, so disabled events cost no formatting.
// Never throws: the logger is the application's, and an exception from one
// of its sinks (or its error handler) must not escape Method::Run, least of
// all in the middle of a capture. A line the logger throws on is dropped
// and counted in dropped_lines().
class EventLog {
 public:
  explicit EventLog(std::shared_ptr<spdlog::logger> logger = nullptr);

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
  // Lines dropped because formatting or the logger threw, process-wide.
  static int64_t dropped_lines();

 private:
  void Emit(spdlog::level::level_enum level, std::string_view event, std::span<const LogField> fields) const;
  std::shared_ptr<spdlog::logger> logger_;
  LogFormat format_;
};

}  // namespace encore

#endif  // ENCORE_CORE_LOG_H_
