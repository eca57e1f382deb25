#include "encore/core/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
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

void AppendQuoted(std::string& out, std::string_view v) {
  out += '"';
  out += JsonEscape(v);
  out += '"';
}

}  // namespace

std::string JsonEscape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

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

std::shared_ptr<spdlog::logger> DefaultLogger() {
  static std::once_flag once;
  static std::shared_ptr<spdlog::logger> logger;
  std::call_once(once, [] {
    logger = spdlog::get("encore");
    if (!logger) {
      logger = std::make_shared<spdlog::logger>("encore", std::make_shared<spdlog::sinks::stderr_sink_mt>());
      if (LogFormatFromEnv() == LogFormat::kJson) {
        logger->set_pattern("%v");
      } else {
        logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %l encore %v");
      }
      logger->set_level(spdlog::level::info);
      if (const char* lvl = std::getenv("ENCORE_LOG_LEVEL")) {
        logger->set_level(spdlog::level::from_str(lvl));
      }
      spdlog::register_logger(logger);
    }
  });
  return logger;
}

EventLog::EventLog(std::shared_ptr<spdlog::logger> logger)
    : logger_(logger ? std::move(logger) : DefaultLogger()), format_(LogFormatFromEnv()) {}

void EventLog::Emit(spdlog::level::level_enum level, std::string_view event,
                    std::span<const LogField> fields) const {
  try {
    std::string line = FormatEvent(format_, event, fields);
    if (format_ == LogFormat::kJson) {
      // The JSON line carries its own level so each line stands alone.
      line.insert(1, "\"level\":\"" + std::string(spdlog::level::to_string_view(level).data()) + "\",");
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

}  // namespace encore
