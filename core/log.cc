// SPDX-License-Identifier: Apache-2.0
#include "encore/core/internal/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#if defined(__GLIBCXX__)
#include <cxxabi.h>
#endif

namespace encore {
namespace {

// Process-wide rather than per EventLog, which is copied by value.
std::atomic<int64_t> g_dropped_lines{0};

bool NeedsQuotes(std::string_view v) {
  if (v.empty()) return true;
  for (unsigned char c : v) {
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c == 0x7f) return true;
  }
  return false;
}

void AppendQuoted(std::string& out, std::string_view v) { out += JsonQuoted(v); }

}  // namespace


std::string FormatEvent(LogFormat format, std::string_view event, std::span<const LogField> fields) {
  std::string out;
  if (format == LogFormat::kJson) {
    out += "{\"event\":";
    AppendQuoted(out, event);
    for (const LogField& f : fields) {
      out += ',';
      AppendQuoted(out, f.key);
      out += ':';
      if (f.quoted) {
        AppendQuoted(out, f.value);
      } else {
        out += f.value;
      }
    }
    out += '}';
    return out;
  }
  out += "event=";
  out += event;
  for (const LogField& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    if (NeedsQuotes(f.value)) {
      AppendQuoted(out, f.value);
    } else {
      out += f.value;
    }
  }
  return out;
}

LogFormat LogFormatFromEnv() {
  const char* v = std::getenv("ENCORE_LOG_FORMAT");
  return v && std::string_view(v) == "json" ? LogFormat::kJson : LogFormat::kKeyValue;
}

std::string FormatTimestamp(std::chrono::system_clock::time_point t) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(us / 1000000);
  long frac = static_cast<long>(us % 1000000);
  if (frac < 0) {
    frac += 1000000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
                tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
  return buf;
}

std::optional<spdlog::level::level_enum> ParseLogLevel(std::string_view name) {
  std::string n;
  for (char c : name) n += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  using spdlog::level::level_enum;
  if (n == "trace") return level_enum::trace;
  if (n == "debug") return level_enum::debug;
  if (n == "info") return level_enum::info;
  if (n == "warn" || n == "warning") return level_enum::warn;
  if (n == "error" || n == "err") return level_enum::err;
  if (n == "critical") return level_enum::critical;
  if (n == "off") return level_enum::off;
  return std::nullopt;
}

void ApplyLogLevel(const std::shared_ptr<spdlog::logger>& logger, const char* value) {
  std::optional<spdlog::level::level_enum> parsed;
  if (value) parsed = ParseLogLevel(value);
  logger->set_level(parsed.value_or(spdlog::level::info));
  // spdlog's own parser turns an unknown name into "off": a typo would
  // silence every line, this warning included.
  if (value && !parsed) {
    EventLog(logger).Warn("log_level_unknown",
                          {{"ENCORE_LOG_LEVEL", std::string_view(value)}, {"allowed", kLogLevelNames}, {"using", "info"}});
  }
}

namespace {

// A stderr logger whose pattern suits `format`: JSON lines carry their own
// time and level, so nothing may come before them.
std::shared_ptr<spdlog::logger> MakeStderrLogger(LogFormat format) {
  auto logger = std::make_shared<spdlog::logger>("encore", std::make_shared<spdlog::sinks::stderr_sink_mt>());
  logger->set_pattern(format == LogFormat::kJson ? "%v" : "%Y-%m-%dT%H:%M:%S.%e %l encore %v");
  return logger;
}

bool g_default_is_ours = false;  // set once, under DefaultLogger's call_once

}  // namespace

std::shared_ptr<spdlog::logger> DefaultLogger() {
  static std::once_flag once;
  static std::shared_ptr<spdlog::logger> logger;
  std::call_once(once, [] {
    logger = spdlog::get("encore");
    if (!logger) {
      logger = MakeStderrLogger(LogFormatFromEnv());
      g_default_is_ours = true;
      spdlog::register_logger(logger);
      ApplyLogLevel(logger, std::getenv("ENCORE_LOG_LEVEL"));
    }
  });
  return logger;
}

std::shared_ptr<spdlog::logger> DefaultLoggerFor(LogFormat format) {
  std::shared_ptr<spdlog::logger> base = DefaultLogger();
  // An "encore" logger the application registered keeps its own pattern.
  if (!g_default_is_ours || format == LogFormatFromEnv()) return base;
  // A Manager that asked for the other format than ENCORE_LOG_FORMAT's: a
  // stderr logger with that format's pattern, at the default's level.
  static const std::shared_ptr<spdlog::logger> other = [&] {
    auto l = MakeStderrLogger(format);
    l->set_level(base->level());
    return l;
  }();
  return other;
}

EventLog::EventLog(std::shared_ptr<spdlog::logger> logger, std::optional<LogFormat> format)
    : format_(format.value_or(LogFormatFromEnv())) {
  logger_ = logger ? std::move(logger) : DefaultLoggerFor(format_);
}

void EventLog::Emit(spdlog::level::level_enum level, std::string_view event,
                    std::span<const LogField> fields) const {
  try {
    std::string line = FormatEvent(format_, event, fields);
    if (format_ == LogFormat::kJson) {
      // The JSON line carries its own time and level so each line stands
      // alone, whatever the logger's pattern.
      const spdlog::string_view_t lv = spdlog::level::to_string_view(level);
      line.insert(1, "\"ts\":\"" + FormatTimestamp(std::chrono::system_clock::now()) + "\",\"level\":\"" +
                         std::string(lv.data(), lv.size()) + "\",");
    }
    // spdlog hands a sink's std::exception to the logger's error handler,
    // which may throw, and rethrows anything else.
    logger_->log(level, "{}", line);
#if defined(__GLIBCXX__)
  } catch (abi::__forced_unwind&) {
    throw;  // thread cancellation: swallowing it would terminate the process
#endif
  } catch (...) {
    // Not reported through the logger that just threw; the count is the
    // trace.
    g_dropped_lines.fetch_add(1, std::memory_order_relaxed);
  }
}

int64_t EventLog::dropped_lines() { return g_dropped_lines.load(std::memory_order_relaxed); }

namespace {
thread_local const EventLog* t_scoped_log = nullptr;
thread_local std::string_view t_scoped_method;
}  // namespace

LogScope::LogScope(const EventLog* log, std::string_view method) noexcept
    : prev_log_(t_scoped_log), prev_method_(t_scoped_method) {
  if (log) {
    t_scoped_log = log;
    t_scoped_method = method;
  }
}

LogScope::~LogScope() {
  t_scoped_log = prev_log_;
  t_scoped_method = prev_method_;
}

const EventLog& ScopedEventLog() {
  if (t_scoped_log) return *t_scoped_log;
  // Never destroyed: owners may log from static destructors.
  static const EventLog* const fallback = new EventLog();
  return *fallback;
}

std::string_view ScopedMethod() noexcept { return t_scoped_log ? t_scoped_method : std::string_view(); }

}  // namespace encore
