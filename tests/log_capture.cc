// SPDX-License-Identifier: Apache-2.0
#include "encore/tests/log_capture.h"

#include <algorithm>

namespace encore {

class LogCapture::Sink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  std::vector<CapturedEvent> events() {
    std::lock_guard<std::mutex> l(mu_);
    return events_;
  }
  void Clear() {
    std::lock_guard<std::mutex> l(mu_);
    events_.clear();
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::string_view text(msg.payload.data(), msg.payload.size());
    std::optional<CapturedEvent> e = ParseKeyValueEvent(text);
    CapturedEvent ev = e ? *e : CapturedEvent{};
    ev.level = msg.level;
    ev.line = std::string(text);
    std::lock_guard<std::mutex> l(mu_);
    events_.push_back(std::move(ev));
  }
  void flush_() override {}

 private:
  std::mutex mu_;
  std::vector<CapturedEvent> events_;
};

std::optional<CapturedEvent> ParseKeyValueEvent(std::string_view line) {
  CapturedEvent ev{};
  size_t i = 0;
  bool first = true;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    size_t eq = line.find('=', i);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key(line.substr(i, eq - i));
    i = eq + 1;
    std::string value;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        char c = line[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\' && i < line.size()) {
          char n = line[i++];
          switch (n) {
            case 'n': value += '\n'; break;
            case 't': value += '\t'; break;
            case 'r': value += '\r'; break;
            case 'b': value += '\b'; break;
            case 'f': value += '\f'; break;
            case 'u':
              if (i + 4 <= line.size()) {
                value += static_cast<char>(std::stoi(std::string(line.substr(i, 4)), nullptr, 16));
                i += 4;
              }
              break;
            default: value += n;
          }
        } else {
          value += c;
        }
      }
      if (!closed) return std::nullopt;
    } else {
      size_t end = line.find(' ', i);
      if (end == std::string_view::npos) end = line.size();
      value = std::string(line.substr(i, end - i));
      i = end;
    }
    if (first) {
      if (key != "event") return std::nullopt;
      ev.name = value;
      first = false;
    } else {
      ev.fields[key] = value;
    }
  }
  if (first) return std::nullopt;
  return ev;
}

LogCapture::LogCapture(std::shared_ptr<spdlog::logger> logger) : sink_(std::make_shared<Sink>()) {
  if (logger) {
    logger_ = std::move(logger);
  } else {
    logger_ = std::make_shared<spdlog::logger>("encore");
    logger_->set_level(spdlog::level::trace);
  }
  logger_->sinks().push_back(sink_);
}

LogCapture::~LogCapture() {
  auto& sinks = logger_->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
}

std::vector<CapturedEvent> LogCapture::events() const { return sink_->events(); }

std::vector<CapturedEvent> LogCapture::Named(std::string_view name) const {
  std::vector<CapturedEvent> out;
  for (auto& e : sink_->events()) {
    if (e.name == name) out.push_back(e);
  }
  return out;
}

std::optional<CapturedEvent> LogCapture::Find(std::string_view name, std::string_view key,
                                              std::string_view value) const {
  for (auto& e : sink_->events()) {
    if (e.name != name) continue;
    if (!key.empty() && e.field(std::string(key)) != value) continue;
    return e;
  }
  return std::nullopt;
}

void LogCapture::Clear() { sink_->Clear(); }

}  // namespace encore
