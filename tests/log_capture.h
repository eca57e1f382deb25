// SPDX-License-Identifier: Apache-2.0
// Test helper: captures the events an EventLog writes so a test can assert on
// them by name, level and field.
#ifndef ENCORE_TESTS_LOG_CAPTURE_H_
#define ENCORE_TESTS_LOG_CAPTURE_H_

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace encore {

struct CapturedEvent {
  spdlog::level::level_enum level;
  std::string name;                           // the value of event=
  std::map<std::string, std::string> fields;  // every other key, unquoted
  std::string line;                           // as written

  std::string field(const std::string& key) const {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  }
};

// Parses one key=value line as FormatEvent writes it. nullopt if malformed.
std::optional<CapturedEvent> ParseKeyValueEvent(std::string_view line);

class LogCapture {
 public:
  // Attaches to `logger`, or to a fresh logger named "encore" when null; hand
  // `logger()` to ManagerOptions. Detaches in the destructor.
  explicit LogCapture(std::shared_ptr<spdlog::logger> logger = nullptr);
  ~LogCapture();

  const std::shared_ptr<spdlog::logger>& logger() const { return logger_; }
  std::vector<CapturedEvent> events() const;
  std::vector<CapturedEvent> Named(std::string_view name) const;
  int Count(std::string_view name) const { return static_cast<int>(Named(name).size()); }
  // The first event with this name and field value, if any.
  std::optional<CapturedEvent> Find(std::string_view name, std::string_view key = {},
                                    std::string_view value = {}) const;
  void Clear();

 private:
  class Sink;
  std::shared_ptr<Sink> sink_;
  std::shared_ptr<spdlog::logger> logger_;
};

}  // namespace encore

#endif  // ENCORE_TESTS_LOG_CAPTURE_H_
